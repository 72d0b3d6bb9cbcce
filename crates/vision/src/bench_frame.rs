//! The bench frame without a whole board in the lever's plane: from four or more clicked pixels
//! of points whose bench coordinates are known (bolt holes, the joints' pins, marks on the
//! frame), with the camera's intrinsics. The plane's pose is OpenCV's `solvePnP` (IPPE, the
//! planar solution of Collins and Bartoli, "Infinitesimal plane-based pose estimation", IJCV
//! 2014, then Levenberg-Marquardt) on the clicked pixels undistorted by the calibration, and
//! the bench plane is its homography: normalized image -> bench, H = [r1 r2 t]^-1.
//!
//! When the camera faces the plane (its optical axis perpendicular to the lever's plane, as on a
//! bench where the camera stands square to it), two points of known bench position suffice
//! ([`FrameModel::Facing`]): the undistorted image is then a similarity of the plane (origin,
//! angle, scale; the image's v axis down, the bench's y up), fitted by least squares to two
//! points or more (complex linear regression b = a conj(z) + c). A camera tilted from facing
//! the plane sees it in perspective, which a similarity cannot follow: measured on the shipped
//! camera 1 m away, two clicks 0.35 m apart give the scale at 0.37 m from the origin within
//! 0.02 % facing the plane, 0.7 % off with a 3 deg tilt (the origin and the horizontal stay
//! within 0.04 mm and 0.04 mrad). A camera not square to the plane needs four points.
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
use flexbench_contracts::frame::FrameCovariance;

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

/// How clicked points give the bench frame (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrameModel {
    /// The plane's pose by PnP: four points or more, spread over the plane.
    #[default]
    Pose,
    /// The camera faces the plane: a similarity of the undistorted image, from two points or
    /// more (the module's description).
    Facing,
    /// The plane's homography itself, fitted to four points or more (normalized DLT, Hartley
    /// and Zisserman, "Multiple View Geometry", 2nd ed., algorithm 4.2): no focal length needed,
    /// so it serves a nominal camera whose focal length is unknown (the perspective of any
    /// pinhole camera without distortion is a homography of the plane).
    Homography,
}

/// The bench plane through the clicked `points` for a camera with intrinsics `intr`: by
/// `model` (its pose from 4 points or more not on one line, or a similarity from 2 or more).
pub fn bench_plane_from_points(
    intr: &Intrinsics,
    points: &[ClickedPoint],
    model: FrameModel,
) -> Result<BenchPlane, VisionError> {
    check_points(points, model)?;
    let pixels: Vec<(f64, f64)> = points.iter().map(|p| p.pixel).collect();
    solve_model(intr, points, &pixels, model)
}

/// The plane from the `pixels` clicked for `points` by `model`.
fn solve_model(
    intr: &Intrinsics,
    points: &[ClickedPoint],
    pixels: &[(f64, f64)],
    model: FrameModel,
) -> Result<BenchPlane, VisionError> {
    match model {
        FrameModel::Pose => solve(intr, points, pixels),
        FrameModel::Facing => similarity(intr, points, pixels),
        FrameModel::Homography => homography(intr, points, pixels),
    }
}

/// The homography normalized image -> bench fitted to the clicked `pixels` of `points` by the
/// normalized direct linear transform (each side's points moved to their centroid and scaled
/// to a mean distance of sqrt 2; the null vector of the 2n x 9 system by SVD).
fn homography(
    intr: &Intrinsics,
    points: &[ClickedPoint],
    pixels: &[(f64, f64)],
) -> Result<BenchPlane, VisionError> {
    use nalgebra::{DMatrix, Matrix3};
    let from: Vec<Vector2<f64>> = pixels
        .iter()
        .map(|&(u, v)| vec2(intr.undistort_pixel(u, v)))
        .collect();
    let to: Vec<Vector2<f64>> = points.iter().map(|p| vec2(p.bench)).collect();
    let conditioner = |pts: &[Vector2<f64>]| -> Matrix3<f64> {
        let n = pts.len() as f64;
        let c = pts.iter().sum::<Vector2<f64>>() / n;
        let d = pts.iter().map(|p| (p - c).norm()).sum::<f64>() / n;
        let s = std::f64::consts::SQRT_2 / d.max(1e-300);
        Matrix3::new(s, 0.0, -s * c.x, 0.0, s, -s * c.y, 0.0, 0.0, 1.0)
    };
    let (tf, tt) = (conditioner(&from), conditioner(&to));
    let mut a = DMatrix::<f64>::zeros(2 * from.len().max(5), 9);
    for (k, (p, q)) in from.iter().zip(&to).enumerate() {
        let x = tf * nalgebra::Vector3::new(p.x, p.y, 1.0);
        let y = tt * nalgebra::Vector3::new(q.x, q.y, 1.0);
        let (x, y) = (x / x.z, y / y.z);
        for (r, row) in [
            [0.0, 0.0, 0.0, -x.x, -x.y, -1.0, y.y * x.x, y.y * x.y, y.y],
            [x.x, x.y, 1.0, 0.0, 0.0, 0.0, -y.x * x.x, -y.x * x.y, -y.x],
        ]
        .iter()
        .enumerate()
        {
            for (j, v) in row.iter().enumerate() {
                a[(2 * k + r, j)] = *v;
            }
        }
    }
    let svd = a.svd(false, true);
    let vt = svd.v_t.ok_or_else(|| {
        VisionError::Calibration("the clicked points' homography did not converge".into())
    })?;
    let (k, _) = svd.singular_values.argmin();
    let h = Matrix3::from_row_slice(vt.row(k).transpose().as_slice());
    let h = tt.try_inverse().unwrap_or_else(Matrix3::identity) * h * tf;
    if !(h[(2, 2)].abs() > 1e-300 && h.determinant().is_normal()) {
        return Err(VisionError::Calibration(
            "the clicked points give no homography of the plane (three of them on a line?): click points spread over the lever's plane".into(),
        ));
    }
    Ok(BenchPlane { h: h / h[(2, 2)] })
}

/// The similarity bench = a conj(z) + c (complex; z = x + i y the undistorted normalized
/// pixel, conjugated since the image's v axis points down and the bench's y up) fitted by
/// least squares to the clicked `pixels` of `points`, as the bench plane's homography
/// [[Re a, Im a, Re c], [Im a, -Re a, Im c], [0, 0, 1]].
fn similarity(
    intr: &Intrinsics,
    points: &[ClickedPoint],
    pixels: &[(f64, f64)],
) -> Result<BenchPlane, VisionError> {
    type C = nalgebra::Complex<f64>;
    let z: Vec<C> = pixels
        .iter()
        .map(|&(u, v)| {
            let (x, y) = intr.undistort_pixel(u, v);
            C::new(x, -y)
        })
        .collect();
    let b: Vec<C> = points
        .iter()
        .map(|p| C::new(p.bench.0, p.bench.1))
        .collect();
    let n = z.len() as f64;
    let zm = z.iter().sum::<C>() / n;
    let bm = b.iter().sum::<C>() / n;
    let szz: f64 = z.iter().map(|zk| (zk - zm).norm_sqr()).sum();
    if szz <= 0.0 {
        return Err(VisionError::Calibration(
            "the clicked points share one pixel: click each point where it is".into(),
        ));
    }
    let a = z
        .iter()
        .zip(&b)
        .map(|(zk, bk)| (bk - bm) * (zk - zm).conj())
        .sum::<C>()
        / szz;
    let c = bm - a * zm;
    Ok(BenchPlane {
        h: nalgebra::Matrix3::new(a.re, a.im, c.re, a.im, -a.re, c.im, 0.0, 0.0, 1.0),
    })
}

/// The bench frame's uncertainty when each clicked coordinate of `points` has a standard
/// deviation `click_sigma_px`; `plane` the frame solved from them.
pub fn frame_uncertainty(
    intr: &Intrinsics,
    points: &[ClickedPoint],
    plane: &BenchPlane,
    click_sigma_px: f64,
    model: FrameModel,
) -> Result<FrameUncertainty, VisionError> {
    check_points(points, model)?;
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
    // The similarity between the frames over the clicked points (the covariance's draws): each
    // frame at the clicked pixels (the tracks are the same pixels mapped by either frame).
    let at_clicks = |frame: &BenchPlane| -> Vec<(f64, f64)> {
        points
            .iter()
            .map(|p| {
                let (x, y) = intr.undistort_pixel(p.pixel.0, p.pixel.1);
                frame.to_bench(x, y)
            })
            .collect()
    };
    let seen = at_clicks(plane);
    let mut draws = Vec::with_capacity(DRAWS);
    let mut beyond = flexbench_contracts::frame::BeyondSimilarity::default();
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
        let drawn = solve_model(intr, points, &pixels, model)?;
        let a = vec2(drawn.to_bench(o.0, o.1));
        let b = vec2(drawn.to_bench(x.0, x.1));
        let axis = b - a;
        s_origin += a.norm_squared();
        s_angle += axis.y.atan2(axis.x).powi(2);
        s_scale += (axis.norm() / reach - 1.0).powi(2);
        let at = at_clicks(&drawn);
        if let Some(e) = FrameCovariance::fit(&seen, &at) {
            beyond.add(&e, &seen, &at);
            draws.push(e);
        }
    }
    let n = DRAWS as f64;
    Ok(FrameUncertainty {
        origin_mm: (s_origin / n).sqrt() * 1e3,
        angle_mrad: (s_angle / n).sqrt() * 1e3,
        scale: (s_scale / n).sqrt(),
        click_sigma_px,
        covariance: FrameCovariance::of_draws(&draws),
        // Two points facing the plane make a similarity: nothing is left by construction.
        beyond_similarity_mm: beyond.rms_mm().filter(|_| model != FrameModel::Facing),
    })
}

/// Enough points for `model` (4 spread over the plane, not on one line, for a pose; 2 for a
/// camera facing the plane), none twice.
fn check_points(points: &[ClickedPoint], model: FrameModel) -> Result<(), VisionError> {
    let bad = |why: String| Err(VisionError::Calibration(why));
    if model == FrameModel::Facing {
        if points.len() < 2 {
            return bad(format!(
                "{} clicked point(s) of known bench position: a camera facing the plane needs 2 at least (the origin and a point at a known distance along the horizontal, say)",
                points.len()
            ));
        }
        return distinct(points);
    }
    if points.len() < 4 {
        return bad(format!(
            "{} clicked point(s) of known bench position: the bench frame needs at least 4, spread over the lever's plane (2 suffice when the camera faces the plane: camera_faces_plane = true in points.toml)",
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
    distinct(points)
}

/// No bench position given twice.
fn distinct(points: &[ClickedPoint]) -> Result<(), VisionError> {
    for (i, p) in points.iter().enumerate() {
        if let Some(q) = points[..i].iter().find(|q| q.bench == p.bench) {
            return Err(VisionError::Calibration(format!(
                "two clicked points share the bench position ({}, {}) m (pixels {:?} and {:?}): give each point once",
                p.bench.0, p.bench.1, q.pixel, p.pixel
            )));
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
            source: e,
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
