//! A marker's blob as the tracker measures it in a frame.

use opencv::core::Mat;
use opencv::prelude::*;

/// The grey level of an 8-bit grey image at (u, v) px (pixel centres at whole numbers),
/// bilinear; None where the four pixels around it are not all inside.
pub fn bilinear(grey: &Mat, u: f64, v: f64) -> Option<f64> {
    let (c, r) = (u.floor(), v.floor());
    let (fu, fv) = (u - c, v - r);
    let (c, r) = (c as i32, r as i32);
    if c < 0 || r < 0 || c + 1 >= grey.cols() || r + 1 >= grey.rows() {
        return None;
    }
    let at = |cc: i32, rr: i32| grey.at_2d::<u8>(rr, cc).ok().map(|p| *p as f64);
    Some(
        (1.0 - fv) * ((1.0 - fu) * at(c, r)? + fu * at(c + 1, r)?)
            + fv * ((1.0 - fu) * at(c, r + 1)? + fu * at(c + 1, r + 1)?),
    )
}

/// A blob's sub-pixel centre and its standard deviation (px).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blob {
    /// Column of the centre, px.
    pub u: f64,
    /// Row of the centre, px.
    pub v: f64,
    /// Standard deviation of the centre, px.
    pub sigma: f64,
    /// Area above the threshold, px.
    pub area: f64,
    /// Pixels of the centroid's box at or above half the blob's peak over its background, px:
    /// the area the flags compare, the same whichever threshold found the blob, and under any
    /// lamp brightness.
    pub half_area: f64,
    /// Elongation: the square root of the ratio of the principal second moments of its
    /// pixels above the background (1 for a disc; motion blur and a glint lengthen it).
    pub elongation: f64,
    /// How plausible the nearest other blob among the marker's candidates was: its squared
    /// distance from the marker's prediction over the motion model's variance (chi-square, 2
    /// degrees of freedom); None when there was none.
    pub rival: Option<f64>,
}
