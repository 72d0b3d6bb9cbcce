//! The bench frame's uncertainty when a board lying in the lever's plane gives the plane and two
//! clicks its origin and horizontal ([`crate::calibrate::bench_plane`]): the frame solved again
//! for [`DRAWS`] draws (a fixed sequence) of its inputs' errors, and the
//! spread of the frame measured as the similarity of the bench plane that takes the frame found
//! to the frame drawn over the pixels the bench is seen in (the board's corners and the
//! clicks; `flexbench_contracts::frame`). The errors drawn, independent:
//! - each click's coordinates, by the clicks' standard deviation (0.3 px for clicks at the
//!   review page's zoom; the renderer's clicks, rounded to 0.1 px, 0.029 px);
//! - each corner's pixel, by the calibration's reprojection RMS over the two coordinates;
//! - the intrinsics, each by its standard deviation from the calibration (their correlations
//!   are not in the calibration file; the board's pose, solved again with them, takes up most
//!   of their effect in the plane).
//!
//! The horizontal's angle is the clicks' above all: two clicks d px apart with sigma px each
//! give sqrt(2) sigma / d rad (0.2 mrad for 0.029 px at 210 px; 2 mrad for 0.3 px).

use flexbench_contracts::frame::{BeyondSimilarity, FrameCovariance};
use flexbench_contracts::gauss::Gauss;
use opencv::core::{Point2f, Vector};

use crate::calibrate::plane_from_view;
use crate::camera::{BenchPlane, FrameUncertainty, Intrinsics};
use crate::charuco::ViewPoints;
use crate::VisionError;

/// Draws of the inputs' errors: the standard deviations' own sampling error is about
/// 1 / sqrt(2 DRAWS), 2.2 % (200 draws gave the angle's 12 % above its analytic value on the
/// test's plane view, a 2.5-sigma draw of that error).
pub const DRAWS: usize = 1000;

/// What the board's frame was made from, with the standard deviations of its errors.
#[derive(Debug, Clone, Copy)]
pub struct PlaneInputs<'a> {
    /// The camera's intrinsics.
    pub intrinsics: &'a Intrinsics,
    /// Standard deviations of fx, fy, cx, cy, k1, k2, p1, p2, k3 (OpenCV's order; empty or
    /// shorter: those missing taken as known).
    pub std_intrinsics: &'a [f64],
    /// The board's corners found in the plane view.
    pub found: &'a ViewPoints,
    /// The clicked pixels of the origin and of a point on the horizontal, px.
    pub clicks: [(f64, f64); 2],
    /// The clicks' standard deviation, px per coordinate.
    pub click_sigma_px: f64,
    /// The corners' reprojection RMS over both coordinates, px.
    pub corner_rms_px: f64,
}

/// The frame's uncertainty ([`FrameUncertainty`], with its covariance) of the plane `plane`
/// found from `inputs` (the module's description). Errors when a draw's frame cannot be solved.
pub fn board_frame_uncertainty(
    inputs: &PlaneInputs<'_>,
    plane: &BenchPlane,
) -> Result<FrameUncertainty, VisionError> {
    let intr = inputs.intrinsics;
    let pixels: Vec<(f64, f64)> = inputs
        .found
        .image
        .iter()
        .map(|p| (f64::from(p.x), f64::from(p.y)))
        .chain(inputs.clicks)
        .collect();
    let at = |intr: &Intrinsics, plane: &BenchPlane| -> Vec<(f64, f64)> {
        pixels
            .iter()
            .map(|&(u, v)| {
                let (x, y) = intr.undistort_pixel(u, v);
                plane.to_bench(x, y)
            })
            .collect()
    };
    let found = at(intr, plane);
    let mut normal = Gauss::new(0x5DEECE66D);
    let corner_sigma = inputs.corner_rms_px / std::f64::consts::SQRT_2;
    let mut draws = Vec::with_capacity(DRAWS);
    let mut beyond = BeyondSimilarity::default();
    for _ in 0..DRAWS {
        let drawn_intr = drawn_intrinsics(intr, inputs.std_intrinsics, &mut normal);
        let mut view = inputs.found.clone();
        view.image = inputs
            .found
            .image
            .iter()
            .map(|p| {
                let (du, dv) = (normal.next(), normal.next());
                Point2f::new(
                    p.x + (corner_sigma * du) as f32,
                    p.y + (corner_sigma * dv) as f32,
                )
            })
            .collect::<Vector<Point2f>>();
        let [o, h] = inputs.clicks.map(|(u, v)| {
            let (du, dv) = (normal.next(), normal.next());
            (
                u + inputs.click_sigma_px * du,
                v + inputs.click_sigma_px * dv,
            )
        });
        let drawn = at(&drawn_intr, &plane_from_view(&drawn_intr, &view, o, h)?);
        let e = FrameCovariance::fit(&found, &drawn).ok_or_else(|| {
            VisionError::Calibration(
                "the plane view's corners do not span the plane (the frame's spread cannot be measured)"
                    .into(),
            )
        })?;
        beyond.add(&e, &found, &drawn);
        draws.push(e);
    }
    let covariance = FrameCovariance::of_draws(&draws).ok_or_else(|| {
        VisionError::Calibration("the frame's draws are not finite numbers".into())
    })?;
    let [sx, sy, sa, ss] = covariance.sigmas();
    Ok(FrameUncertainty {
        origin_mm: sx.hypot(sy) * 1e3,
        angle_mrad: sa * 1e3,
        scale: ss,
        click_sigma_px: inputs.click_sigma_px,
        covariance: Some(covariance),
        beyond_similarity_mm: beyond.rms_mm(),
    })
}

/// The intrinsics with each number moved by its standard deviation times a draw.
fn drawn_intrinsics(intr: &Intrinsics, std: &[f64], normal: &mut Gauss) -> Intrinsics {
    let mut d = *intr;
    let mut next =
        |i: usize| std.get(i).copied().filter(|s| s.is_finite()).unwrap_or(0.0) * normal.next();
    d.fx += next(0);
    d.fy += next(1);
    d.cx += next(2);
    d.cy += next(3);
    for k in 0..5 {
        d.dist[k] += next(4 + k);
    }
    d
}
