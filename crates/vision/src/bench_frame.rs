//! The bench frame without a whole board in the lever's plane: from four or more clicked pixels
//! of points whose bench coordinates are known (bolt holes, the joints' pins, marks on the
//! frame), with the camera's intrinsics. The plane's pose is OpenCV's `solvePnP` (IPPE, the
//! planar solution of Collins and Bartoli, "Infinitesimal plane-based pose estimation", IJCV
//! 2014, then Levenberg-Marquardt) on the clicked pixels undistorted by the calibration, and
//! the bench plane is its homography: normalized image -> bench, H = [r1 r2 t]^-1.
//!
//! The frame's uncertainty from the clicks: each clicked coordinate taken with a standard
//! deviation (0.3 px for clicks at the review page's zoom, say), the pose solved again for
//! [`DRAWS`] draws of that noise (a fixed sequence), and the spread of the frame measured where
//! it matters: the origin (the bench position the perturbed frame gives to the origin's pixel,
//! mm), the horizontal (the angle of the bench X axis over the clicked points' span, mrad) and
//! the scale (relative). The intrinsics' own uncertainty is not in it.

use nalgebra::Vector2;
use opencv::core::{Mat, Point2d, Point3d, TermCriteria, TermCriteria_Type, Vector};

pub use crate::camera::FrameUncertainty;
use crate::camera::{plane_to_normalized, BenchPlane, Intrinsics};
use crate::{cv, VisionError};

/// A pair as a vector.
fn vec2((x, y): (f64, f64)) -> Vector2<f64> {
    Vector2::new(x, y)
}

/// Draws of the click noise behind the frame's uncertainty.
pub const DRAWS: usize = 200;

/// One clicked point: its pixel in the view (u, v, px) and its bench coordinates (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClickedPoint {
    /// The pixel clicked, px.
    pub pixel: (f64, f64),
    /// Its position in the bench frame, m.
    pub bench: (f64, f64),
}

/// The bench plane through the clicked `points` (at least 4, not on one line) for a camera
/// with intrinsics `intr`.
pub fn bench_plane_from_points(
    intr: &Intrinsics,
    points: &[ClickedPoint],
) -> Result<BenchPlane, VisionError> {
    check_points(points)?;
    let pixels: Vec<(f64, f64)> = points.iter().map(|p| p.pixel).collect();
    solve(intr, points, &pixels)
}

/// The bench frame's uncertainty when each clicked coordinate of `points` has a standard
/// deviation `click_sigma_px`; `plane` the frame solved from them.
pub fn frame_uncertainty(
    intr: &Intrinsics,
    points: &[ClickedPoint],
    plane: &BenchPlane,
    click_sigma_px: f64,
) -> Result<FrameUncertainty, VisionError> {
    check_points(points)?;
    // The nominal origin and a point on the bench X axis as far as the clicks reach, in the
    // normalized image.
    let reach = points
        .iter()
        .map(|p| p.bench.0.hypot(p.bench.1))
        .fold(0.0, f64::max)
        .max(1e-3);
    let image = |bx: f64| {
        plane
            .to_image(bx, 0.0)
            .ok_or_else(|| VisionError::Calibration("the bench plane is seen edge-on".into()))
    };
    let (o, x) = (image(0.0)?, image(reach)?);
    let mut normal = flexbench_contracts::gauss::Gauss::new(0x5DEECE66D);
    let (mut s_origin, mut s_angle, mut s_scale) = (0.0, 0.0, 0.0);
    for _ in 0..DRAWS {
        let pixels: Vec<(f64, f64)> = points
            .iter()
            .map(|p| {
                let (du, dv) = (normal.next(), normal.next());
                (
                    p.pixel.0 + click_sigma_px * du,
                    p.pixel.1 + click_sigma_px * dv,
                )
            })
            .collect();
        let drawn = solve(intr, points, &pixels)?;
        let a = vec2(drawn.to_bench(o.0, o.1));
        let b = vec2(drawn.to_bench(x.0, x.1));
        let axis = b - a;
        s_origin += a.norm_squared();
        s_angle += axis.y.atan2(axis.x).powi(2);
        s_scale += (axis.norm() / reach - 1.0).powi(2);
    }
    let n = DRAWS as f64;
    Ok(FrameUncertainty {
        origin_mm: (s_origin / n).sqrt() * 1e3,
        angle_mrad: (s_angle / n).sqrt() * 1e3,
        scale: (s_scale / n).sqrt(),
        click_sigma_px,
    })
}

/// At least four points, spread over the plane (not on one line, none twice).
fn check_points(points: &[ClickedPoint]) -> Result<(), VisionError> {
    let bad = |why: String| Err(VisionError::Calibration(why));
    if points.len() < 4 {
        return bad(format!(
            "{} clicked point(s) of known bench position: the bench frame needs at least 4, spread over the lever's plane",
            points.len()
        ));
    }
    // The spread of the bench positions: the smaller principal axis against the larger.
    let n = points.len() as f64;
    let c = points
        .iter()
        .fold(Vector2::zeros(), |s, p| s + vec2(p.bench))
        / n;
    let cov = points.iter().fold(nalgebra::Matrix2::zeros(), |s, p| {
        let d = vec2(p.bench) - c;
        s + d * d.transpose()
    }) / n;
    let eig = cov.symmetric_eigenvalues();
    let (small, large) = (eig.min().max(0.0).sqrt(), eig.max().max(0.0).sqrt());
    if !(large > 0.0 && small > 0.05 * large) {
        return bad(format!(
            "the {} clicked points lie on a line (their bench positions spread {:.1} mm across it against {:.1} mm along it): the plane's tilt is not determined; click points spread over the lever's plane, not along one bar",
            points.len(),
            small * 1e3,
            large * 1e3
        ));
    }
    for (i, p) in points.iter().enumerate() {
        if let Some(q) = points[..i].iter().find(|q| q.bench == p.bench) {
            return bad(format!(
                "two clicked points share the bench position ({}, {}) m (pixels {:?} and {:?}): give each point once",
                p.bench.0, p.bench.1, q.pixel, p.pixel
            ));
        }
    }
    Ok(())
}

/// The plane's pose from the `pixels` clicked for `points`: IPPE then Levenberg-Marquardt, on
/// the pixels undistorted (identity camera, no distortion), as the bench plane's homography.
fn solve(
    intr: &Intrinsics,
    points: &[ClickedPoint],
    pixels: &[(f64, f64)],
) -> Result<BenchPlane, VisionError> {
    let object: Vector<Point3d> = points
        .iter()
        .map(|p| Point3d::new(p.bench.0, p.bench.1, 0.0))
        .collect();
    let image: Vector<Point2d> = pixels
        .iter()
        .map(|&(u, v)| {
            let (x, y) = intr.undistort_pixel(u, v);
            Point2d::new(x, y)
        })
        .collect();
    let k = Mat::from_slice_2d(&[[1.0f64, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]).map_err(
        |e| VisionError::OpenCv {
            context: "identity camera".into(),
            message: e.message,
        },
    )?;
    let d = Mat::default();
    let (mut rvec, mut tvec) = (Mat::default(), Mat::default());
    let ippe = opencv::calib3d::SOLVEPNP_IPPE;
    let found = cv(
        "solvePnP",
        opencv::calib3d::solve_pnp(&object, &image, &k, &d, &mut rvec, &mut tvec, false, ippe),
    )?;
    if !found {
        return Err(VisionError::Calibration(
            "solvePnP found no pose of the bench plane for the clicked points: check their bench coordinates and pixels".into(),
        ));
    }
    let crit = cv(
        "criteria",
        TermCriteria::new(
            TermCriteria_Type::COUNT as i32 + TermCriteria_Type::EPS as i32,
            50,
            1e-12,
        ),
    )?;
    cv(
        "solvePnPRefineLM",
        opencv::calib3d::solve_pnp_refine_lm(&object, &image, &k, &d, &mut rvec, &mut tvec, crit),
    )?;
    let h_bn = plane_to_normalized(&rvec, &tvec)?;
    let h = h_bn.try_inverse().ok_or_else(|| {
        VisionError::Calibration("the bench plane is seen edge-on from the clicked points".into())
    })?;
    Ok(BenchPlane { h })
}
