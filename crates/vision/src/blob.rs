//! A marker's blob as the tracker measures it in a frame.

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
