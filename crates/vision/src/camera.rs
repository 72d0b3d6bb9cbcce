//! The camera model: pinhole intrinsics with OpenCV's lens distortion (k1, k2, p1, p2, k3), and
//! the bench plane as a homography from undistorted normalized image coordinates to bench-frame
//! metres. Stored as OpenCV FileStorage YAML.
//!
//! Distortion (OpenCV, Brown-Conrady): with r^2 = x^2 + y^2 for normalized coordinates (x, y),
//! x_d = x (1 + k1 r^2 + k2 r^4 + k3 r^6) + 2 p1 x y + p2 (r^2 + 2 x^2),
//! y_d = y (1 + k1 r^2 + k2 r^4 + k3 r^6) + p1 (r^2 + 2 y^2) + 2 p2 x y,
//! then u = fx x_d + cx, v = fy y_d + cy.

use std::path::Path;

use nalgebra::{Matrix3, Vector3};
use opencv::core::{
    FileNodeTraitConst, FileStorage, FileStorageTrait, FileStorageTraitConst, Mat, MatTraitConst,
};
use opencv::prelude::*;

use crate::{cv, VisionError};

/// Camera intrinsics and lens distortion (OpenCV's model and order), pixels.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intrinsics {
    /// Image width, px.
    pub width: i32,
    /// Image height, px.
    pub height: i32,
    /// Focal length along u, px.
    pub fx: f64,
    /// Focal length along v, px.
    pub fy: f64,
    /// Principal point u, px.
    pub cx: f64,
    /// Principal point v, px.
    pub cy: f64,
    /// Distortion coefficients k1, k2, p1, p2, k3.
    pub dist: [f64; 5],
}

impl Intrinsics {
    /// Distorted pixel of a normalized undistorted point.
    pub fn project_normalized(&self, x: f64, y: f64) -> (f64, f64) {
        let [k1, k2, p1, p2, k3] = self.dist;
        let r2 = x * x + y * y;
        let radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3));
        let xd = x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x);
        let yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y;
        (self.fx * xd + self.cx, self.fy * yd + self.cy)
    }

    /// Normalized undistorted coordinates of a pixel: Newton's method on the distortion model
    /// (converged to 1e-12 in normalized units, about 1e-9 px), from the undistorted guess.
    pub fn undistort_pixel(&self, u: f64, v: f64) -> (f64, f64) {
        let xd = (u - self.cx) / self.fx;
        let yd = (v - self.cy) / self.fy;
        let [k1, k2, p1, p2, k3] = self.dist;
        let (mut x, mut y) = (xd, yd);
        for _ in 0..30 {
            let r2 = x * x + y * y;
            let radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3));
            let fxv = x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x) - xd;
            let fyv = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y - yd;
            // d radial / d x = (k1 + 2 k2 r2 + 3 k3 r2^2) 2x
            let dr = k1 + r2 * (2.0 * k2 + 3.0 * k3 * r2);
            let j11 = radial + x * dr * 2.0 * x + 2.0 * p1 * y + 6.0 * p2 * x;
            let j12 = x * dr * 2.0 * y + 2.0 * p1 * x + 2.0 * p2 * y;
            let j21 = y * dr * 2.0 * x + 2.0 * p1 * x + 2.0 * p2 * y;
            let j22 = radial + y * dr * 2.0 * y + 6.0 * p1 * y + 2.0 * p2 * x;
            let det = j11 * j22 - j12 * j21;
            if det.abs() < 1e-300 {
                break;
            }
            let dx = (j22 * fxv - j12 * fyv) / det;
            let dy = (-j21 * fxv + j11 * fyv) / det;
            x -= dx;
            y -= dy;
            if dx.abs() + dy.abs() < 1e-14 {
                break;
            }
        }
        (x, y)
    }

    /// The camera matrix as an OpenCV Mat (3 x 3, f64).
    pub fn camera_matrix(&self) -> Result<Mat, VisionError> {
        cv(
            "camera matrix",
            Mat::from_slice_2d(&[
                [self.fx, 0.0, self.cx],
                [0.0, self.fy, self.cy],
                [0.0, 0.0, 1.0],
            ]),
        )
    }

    /// The distortion coefficients as an OpenCV Mat (1 x 5, f64).
    pub fn dist_coeffs(&self) -> Result<Mat, VisionError> {
        cv("distortion", Mat::from_slice_2d(&[self.dist]))
    }
}

/// The bench plane: homography from undistorted normalized image coordinates (x, y, 1) to the
/// bench frame (X, Y, 1) in metres (origin at A, X horizontal towards the pendulum, Y up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchPlane {
    /// The 3 x 3 homography, normalized image -> bench metres.
    pub h: Matrix3<f64>,
}

impl BenchPlane {
    /// Bench-frame metres of a normalized undistorted image point.
    pub fn to_bench(&self, x: f64, y: f64) -> (f64, f64) {
        let p = self.h * Vector3::new(x, y, 1.0);
        (p.x / p.z, p.y / p.z)
    }
    /// Normalized undistorted image point of a bench-frame point (m).
    pub fn to_image(&self, bx: f64, by: f64) -> Option<(f64, f64)> {
        let inv = self.h.try_inverse()?;
        let p = inv * Vector3::new(bx, by, 1.0);
        Some((p.x / p.z, p.y / p.z))
    }
    /// Bench-frame metres of a pixel (u, v) of a camera with intrinsics `intr` (undistorted,
    /// then through the plane).
    pub fn pixel_to_bench(&self, intr: &Intrinsics, u: f64, v: f64) -> (f64, f64) {
        let (xn, yn) = intr.undistort_pixel(u, v);
        self.to_bench(xn, yn)
    }
    /// The pixel of a bench-frame point (m) for a camera with intrinsics `intr` (through the
    /// plane, then distorted).
    pub fn bench_to_pixel(&self, intr: &Intrinsics, bx: f64, by: f64) -> Option<(f64, f64)> {
        let (xn, yn) = self.to_image(bx, by)?;
        Some(intr.project_normalized(xn, yn))
    }

    /// The camera's centre in the bench frame, m (Z along the plane's normal X x Y), from the
    /// homography: its inverse is lambda [r1 r2 t] (the plane's pose, Zhang 2000, section 3.1),
    /// lambda fixed by |r1| |r2| = 1 and the plane in front of the camera (t_z > 0); C = -R^T t.
    /// For a nominal camera its distance scales with the focal length assumed.
    pub fn camera_centre(&self) -> Option<Vector3<f64>> {
        let m = self.h.try_inverse()?;
        let (m1, m2, m3) = (m.column(0), m.column(1), m.column(2));
        let norm = (m1.norm() * m2.norm()).sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            return None;
        }
        let lambda = if m3.z >= 0.0 { 1.0 } else { -1.0 } / norm;
        let (r1, r2, t) = (m1 * lambda, m2 * lambda, m3 * lambda);
        let r3 = r1.cross(&r2);
        Some(-Vector3::new(r1.dot(&t), r2.dot(&t), r3.dot(&t)))
    }
}

/// The bench position (m) of a point `depth` m in front of the bench plane (towards the camera
/// whose centre is `centre`, `BenchPlane::camera_centre`) seen where its ray meets the plane,
/// at `p0`: along the ray, P = C + (p0 - C)(1 - depth / |C_z|). None when the depth puts the
/// point at or behind the camera.
pub fn toward_camera(centre: &Vector3<f64>, p0: (f64, f64), depth: f64) -> Option<(f64, f64)> {
    let k = 1.0 - depth / centre.z.abs();
    (k > 0.0).then(|| {
        (
            centre.x + (p0.0 - centre.x) * k,
            centre.y + (p0.1 - centre.y) * k,
        )
    })
}

/// Where the ray from the camera at `centre` through a point `depth` m in front of the bench
/// plane, at bench position `p` (m), meets the plane (the inverse of [`toward_camera`]).
pub fn onto_plane(centre: &Vector3<f64>, p: (f64, f64), depth: f64) -> Option<(f64, f64)> {
    let k = 1.0 - depth / centre.z.abs();
    (k > 0.0).then(|| {
        (
            centre.x + (p.0 - centre.x) / k,
            centre.y + (p.1 - centre.y) / k,
        )
    })
}

/// The bench frame's standard uncertainty from the clicks (`bench_frame`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FrameUncertainty {
    /// RMS displacement of the origin, mm (both axes together).
    pub origin_mm: f64,
    /// Standard deviation of the horizontal's angle, mrad.
    pub angle_mrad: f64,
    /// Standard deviation of the scale, relative.
    pub scale: f64,
    /// The clicks' standard deviation assumed, px per coordinate.
    pub click_sigma_px: f64,
    /// The covariance of the frame's error as a similarity about the origin (offset x, y, m;
    /// angle, rad; scale), what `process` carries to the forces; None when not measured.
    pub covariance: Option<flexbench_contracts::frame::FrameCovariance>,
    /// What the similarity leaves of the frame's error, mm per coordinate: its RMS over the
    /// points the frame was measured at and the draws (the plane bent by the intrinsics' and
    /// the corners' errors, which a similarity cannot follow); not carried to the forces.
    /// None when not measured.
    pub beyond_similarity_mm: Option<f64>,
}

/// A camera calibration as written under `calibration/`: intrinsics, their standard deviations,
/// the reprojection errors, and (when a board was seen lying in the lever's plane) the bench
/// plane.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Intrinsics and distortion.
    pub intrinsics: Intrinsics,
    /// RMS reprojection error over the views kept, px.
    pub rms: f64,
    /// Standard deviations of fx, fy, cx, cy, k1, k2, p1, p2, k3 (OpenCV's order), empty if unknown.
    pub std_intrinsics: Vec<f64>,
    /// Views kept and their RMS reprojection error, px.
    pub per_view: Vec<(String, f64)>,
    /// Views rejected and why.
    pub rejected: Vec<(String, String)>,
    /// The bench plane, if calibrated.
    pub plane: Option<BenchPlane>,
    /// The bench frame's uncertainty from the clicks, when the plane comes from clicked points
    /// of known bench position (`bench_frame`).
    pub plane_uncertainty: Option<FrameUncertainty>,
    /// The distortion model chosen and why, if calibrated here.
    pub distortion_model: Option<String>,
    /// Every kept corner's reprojection residual, if calibrated here (not written to the file).
    pub corners: Vec<CornerResidual>,
}

/// One chessboard corner of a calibration view: where it was found and its reprojection
/// residual (found minus reprojected by the calibrated camera), image pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct CornerResidual {
    /// The view's file name.
    pub view: String,
    /// Found corner, px (u right, v down).
    pub u: f64,
    /// Found corner, px.
    pub v: f64,
    /// Residual along u, px.
    pub du: f64,
    /// Residual along v, px.
    pub dv: f64,
}

fn mat3(m: &Matrix3<f64>) -> Result<Mat, VisionError> {
    cv(
        "matrix",
        Mat::from_slice_2d(&[
            [m[(0, 0)], m[(0, 1)], m[(0, 2)]],
            [m[(1, 0)], m[(1, 1)], m[(1, 2)]],
            [m[(2, 0)], m[(2, 1)], m[(2, 2)]],
        ]),
    )
}

fn row_vec(v: &[f64]) -> Result<Mat, VisionError> {
    cv("vector", Mat::from_slice_2d(&[v]))
}

/// The homography of a plane's pose from `solvePnP` (`rvec`, `tvec`, the plane's points at
/// z = 0): plane (X, Y, 1) -> normalized image, [r1 r2 t].
pub(crate) fn plane_to_normalized(rvec: &Mat, tvec: &Mat) -> Result<Matrix3<f64>, VisionError> {
    let mut r = Mat::default();
    cv(
        "Rodrigues",
        opencv::calib3d::rodrigues(rvec, &mut r, &mut Mat::default()),
    )?;
    let (rv, tv) = (mat_values(&r)?, mat_values(tvec)?);
    Ok(Matrix3::new(
        rv[0], rv[1], tv[0], rv[3], rv[4], tv[1], rv[6], rv[7], tv[2],
    ))
}

/// All the f64 values of a Mat, row-major.
pub fn mat_values(m: &Mat) -> Result<Vec<f64>, VisionError> {
    let cont = cv("clone", m.try_clone())?;
    let single: Mat = cv("channels", cv("reshape", cont.reshape(1, 0))?.try_clone())?;
    let mut f = Mat::default();
    cv(
        "convert",
        single.convert_to(&mut f, opencv::core::CV_64F, 1.0, 0.0),
    )?;
    Ok(cv("data", f.data_typed::<f64>())?.to_vec())
}

impl Calibration {
    /// Write as OpenCV FileStorage YAML, atomically (temporary file, then rename).
    pub fn write(&self, path: &Path) -> Result<(), VisionError> {
        // Long: one write per field of the FileStorage file, in the file's order.
        let i = &self.intrinsics;
        let write = |tmp: &Path| -> Result<(), VisionError> {
            let name = tmp.to_string_lossy().into_owned();
            let mut fs = cv(
                "opening the calibration file",
                FileStorage::new(&name, opencv::core::FileStorage_Mode::WRITE as i32, ""),
            )?;
            if !cv("opening", fs.is_opened())? {
                return Err(VisionError::io(
                    path,
                    "be written; check the directory",
                    "OpenCV's file storage did not open it",
                ));
            }
            cv("write", fs.write_i32("image_width", i.width))?;
            cv("write", fs.write_i32("image_height", i.height))?;
            cv("write", fs.write_mat("camera_matrix", &i.camera_matrix()?))?;
            cv(
                "write",
                fs.write_mat("distortion_coefficients", &i.dist_coeffs()?),
            )?;
            cv("write", fs.write_f64("rms_reprojection_error_px", self.rms))?;
            if !self.std_intrinsics.is_empty() {
                cv(
                    "write",
                    fs.write_mat("std_deviations_intrinsics", &row_vec(&self.std_intrinsics)?),
                )?;
            }
            if !self.per_view.is_empty() {
                let names: opencv::core::Vector<String> =
                    self.per_view.iter().map(|(n, _)| n.as_str()).collect();
                cv("write", fs.write_str_vec("views", &names))?;
                cv(
                    "write",
                    fs.write_mat(
                        "per_view_errors_px",
                        &row_vec(&self.per_view.iter().map(|(_, e)| *e).collect::<Vec<_>>())?,
                    ),
                )?;
            }
            if !self.rejected.is_empty() {
                let texts: Vec<String> = self
                    .rejected
                    .iter()
                    .map(|(n, why)| format!("{n}: {why}"))
                    .collect();
                let r: opencv::core::Vector<String> = texts.iter().map(|s| s.as_str()).collect();
                cv("write", fs.write_str_vec("rejected_views", &r))?;
            }
            if let Some(m) = &self.distortion_model {
                cv("write", fs.write_str("distortion_model", m))?;
            }
            if let Some(p) = &self.plane {
                cv("write", fs.write_mat("bench_homography", &mat3(&p.h)?))?;
            }
            if let Some(u) = &self.plane_uncertainty {
                // origin (mm), angle (mrad), scale (relative), the clicks' sigma (px).
                let row = [u.origin_mm, u.angle_mrad, u.scale, u.click_sigma_px];
                cv(
                    "write",
                    fs.write_mat("bench_frame_uncertainty", &row_vec(&row)?),
                )?;
                if let Some(b) = u.beyond_similarity_mm {
                    cv("write", fs.write_f64("bench_frame_beyond_similarity_mm", b))?;
                }
                if let Some(c) = &u.covariance {
                    // (offset x m, offset y m, angle rad, scale): 4 x 4, row by row.
                    let row = c.to_row_major();
                    cv(
                        "write",
                        fs.write_mat("bench_frame_covariance", &row_vec(&row)?),
                    )?;
                }
            }
            cv("closing the calibration file", fs.release())?;
            Ok(())
        };
        flexbench_contracts::atomic::write_with(path, write).map_err(|e| match e {
            flexbench_contracts::atomic::AtomicError::Fill(e) => e,
            flexbench_contracts::atomic::AtomicError::Io(p, e) => {
                VisionError::io(&p, "be written", e)
            }
        })
    }

    /// Read a calibration file; a missing or malformed matrix is named.
    pub fn read(path: &Path) -> Result<Self, VisionError> {
        let p = path.display().to_string();
        let fs = open_storage(path)?;
        let file = Stored { fs: &fs, path: &p };
        let intrinsics = file.intrinsics()?;
        let rms = cv("read", file.node("rms_reprojection_error_px")?.real()).unwrap_or(f64::NAN);
        let plane = match file.has("bench_homography") {
            true => Some(BenchPlane {
                h: Matrix3::from_row_slice(&file.values("bench_homography", 9)?),
            }),
            false => None,
        };
        let plane_uncertainty = match file.has("bench_frame_uncertainty") {
            true => {
                let u = file.values("bench_frame_uncertainty", 4)?;
                Some(FrameUncertainty {
                    origin_mm: u[0],
                    angle_mrad: u[1],
                    scale: u[2],
                    click_sigma_px: u[3],
                    covariance: file.frame_covariance()?,
                    beyond_similarity_mm: match file.has("bench_frame_beyond_similarity_mm") {
                        true => Some(cv(
                            "read",
                            file.node("bench_frame_beyond_similarity_mm")?.real(),
                        )?),
                        false => None,
                    },
                })
            }
            false => None,
        };
        let std_intrinsics = match file.has("std_deviations_intrinsics") {
            true => mat_values(&cv("read", file.node("std_deviations_intrinsics")?.mat())?)?,
            false => Vec::new(),
        };
        let distortion_model = match file.has("distortion_model") {
            true => cv("read", file.node("distortion_model")?.to_string()).ok(),
            false => None,
        };
        Ok(Calibration {
            intrinsics,
            rms,
            std_intrinsics,
            per_view: Vec::new(),
            rejected: Vec::new(),
            plane,
            plane_uncertainty,
            distortion_model,
            corners: Vec::new(),
        })
    }
}

/// A calibration file opened as OpenCV FileStorage, after its text is checked (every matrix
/// size before OpenCV reads the file: a damaged `rows:` makes it try to allocate tens of
/// gigabytes, found by fuzzing); a missing or unreadable file is named.
fn open_storage(path: &Path) -> Result<FileStorage, VisionError> {
    let p = path.display().to_string();
    if !path.exists() {
        return Err(VisionError::CalibrationFile {
            path: p,
            reason: "no such file; run `flexbench calibrate` first or check the path".into(),
        });
    }
    let bad = |reason: String| VisionError::CalibrationFile {
        path: p.clone(),
        reason,
    };
    if let Ok(bytes) = std::fs::read(path) {
        check_text(bytes).map_err(&bad)?;
    }
    let fs =
        FileStorage::new(&p, opencv::core::FileStorage_Mode::READ as i32, "").map_err(|e| {
            bad(format!(
                "not a readable OpenCV FileStorage file ({})",
                e.message
            ))
        })?;
    if !cv("open", fs.is_opened())? {
        return Err(bad("cannot be opened as OpenCV FileStorage YAML".into()));
    }
    Ok(fs)
}

/// A calibration file's text checked before OpenCV parses it: UTF-8 (OpenCV's parser spun for
/// minutes on a damaged one with binary bytes in it), no control characters, and every matrix
/// size (`rows:`, `cols:`) from 1 to 64 (a damaged size makes OpenCV try to allocate tens of
/// gigabytes; a calibration's matrices are at most 3 x 3 or 1 x 14). Both found by fuzzing.
fn check_text(bytes: Vec<u8>) -> Result<(), String> {
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (a byte at {} is not); the file is damaged: calibrate again",
            e.utf8_error().valid_up_to()
        )
    })?;
    if text.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        return Err("holds control characters; the file is damaged: calibrate again".into());
    }
    for (k, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some((key, value)) = t
            .split_once(':')
            .filter(|(k, _)| *k == "rows" || *k == "cols")
        {
            if !value
                .trim()
                .parse::<u32>()
                .is_ok_and(|n| (1..=64).contains(&n))
            {
                return Err(format!("line {}: '{key}: {}' is not a matrix size (1 to 64); the file is damaged: calibrate again", k + 1, value.trim()));
            }
        }
    }
    Ok(())
}

/// An opened calibration file and its path (for the errors).
struct Stored<'a> {
    fs: &'a FileStorage,
    path: &'a str,
}

impl Stored<'_> {
    /// The image size, camera matrix and distortion coefficients; an error naming a missing,
    /// malformed or impossible one (a size or focal length not positive).
    fn intrinsics(&self) -> Result<Intrinsics, VisionError> {
        let width = cv("read", self.node("image_width")?.to_i32())?;
        let height = cv("read", self.node("image_height")?.to_i32())?;
        if width <= 0 || height <= 0 {
            return Err(self.bad(format!("image size {width} x {height} is not positive")));
        }
        let k = self.values("camera_matrix", 9)?;
        if !(k[0] > 0.0 && k[4] > 0.0) {
            return Err(self.bad(format!(
                "camera_matrix has non-positive focal lengths {} and {}",
                k[0], k[4]
            )));
        }
        let d = self.values("distortion_coefficients", 5)?;
        Ok(Intrinsics {
            width,
            height,
            fx: k[0],
            fy: k[4],
            cx: k[2],
            cy: k[5],
            dist: [d[0], d[1], d[2], d[3], d[4]],
        })
    }

    fn bad(&self, reason: String) -> VisionError {
        VisionError::CalibrationFile {
            path: self.path.into(),
            reason,
        }
    }

    /// The bench frame's covariance (16 numbers, row by row), None when the file has none; an
    /// error when it is not a symmetric covariance.
    fn frame_covariance(
        &self,
    ) -> Result<Option<flexbench_contracts::frame::FrameCovariance>, VisionError> {
        if !self.has("bench_frame_covariance") {
            return Ok(None);
        }
        let v = self.values("bench_frame_covariance", 16)?;
        flexbench_contracts::frame::FrameCovariance::from_row_major(&v)
            .map(Some)
            .ok_or_else(|| {
                self.bad(
                    "'bench_frame_covariance' is not a symmetric covariance (offset x, offset y, angle, scale); calibrate again"
                        .into(),
                )
            })
    }

    /// Whether the file has `key`.
    fn has(&self, key: &str) -> bool {
        self.fs
            .get(key)
            .and_then(|n| n.is_none())
            .map(|none| !none)
            .unwrap_or(false)
    }

    /// The node at `key`; an error naming it when it is missing.
    fn node(&self, key: &str) -> Result<opencv::core::FileNode, VisionError> {
        let n = cv("read", self.fs.get(key))?;
        if cv("read", n.is_none())? {
            return Err(self.bad(format!("'{key}' is missing; recalibrate or add it")));
        }
        Ok(n)
    }

    /// The `len` finite numbers of the matrix at `key`; an error naming it otherwise.
    fn values(&self, key: &str, len: usize) -> Result<Vec<f64>, VisionError> {
        let m = cv("read", self.node(key)?.mat())
            .map_err(|_| self.bad(format!("'{key}' is not a matrix")))?;
        let v = mat_values(&m)?;
        if v.len() != len {
            return Err(self.bad(format!(
                "'{key}' must hold {len} numbers, it holds {} ({v:?}); calibrate again",
                v.len()
            )));
        }
        if let Some(k) = v.iter().position(|x| !x.is_finite()) {
            return Err(self.bad(format!(
                "'{key}' holds {} at position {}, not a finite number ({v:?}); calibrate again",
                v[k],
                k + 1
            )));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The camera's centre from the plane's homography is the rendering camera's (1e-9 m), and a
    /// point 12 mm in front of the plane, seen through the plane, is lifted back to its bench
    /// position (1e-12 m) where the plane alone puts it millimetres off.
    #[test]
    fn the_camera_centre_and_points_off_the_plane() {
        let intr = Intrinsics {
            width: 1280,
            height: 720,
            fx: 1000.0,
            fy: 1000.0,
            cx: 640.0,
            cy: 360.0,
            dist: [0.0; 5],
        };
        let cam = crate::render::CameraTruth::looking_at(intr, [0.25, -0.05], 0.85, 4.0, -3.0, 1.5);
        let truth = -(cam.r.transpose() * cam.t);
        let plane = cam.plane().unwrap();
        let c = plane.camera_centre().unwrap();
        assert!((c - truth).norm() < 1e-9, "{c} against {truth}");
        assert!(c.z > 0.8, "the camera stands in front of the plane: {c}");
        let (p, d) = (Vector3::new(0.4, 0.1, 0.012), 0.012);
        let q = cam.r * p + cam.t;
        let p0 = plane.to_bench(q.x / q.z, q.y / q.z);
        let lifted = toward_camera(&c, p0, d).unwrap();
        let off = (p0.0 - p.x).hypot(p0.1 - p.y);
        assert!((lifted.0 - p.x).hypot(lifted.1 - p.y) < 1e-12, "{lifted:?}");
        assert!(off > 1e-3, "{off}");
        let back = onto_plane(&c, (p.x, p.y), d).unwrap();
        assert!((back.0 - p0.0).hypot(back.1 - p0.1) < 1e-12);
        assert!(toward_camera(&c, p0, c.z).is_none() && onto_plane(&c, p0, 2.0).is_none());
    }

    /// Undistortion inverts the distortion model to 1e-9 px over the whole image, and agrees
    /// with OpenCV's own projection.
    #[test]
    fn undistortion_inverts_distortion() {
        let i = Intrinsics {
            width: 640,
            height: 480,
            fx: 536.0,
            fy: 536.0,
            cx: 342.4,
            cy: 235.5,
            dist: [-0.265, -0.0467, 0.00183, -0.00031, 0.2523],
        };
        for u in (0..=640).step_by(40) {
            for v in (0..=480).step_by(40) {
                let (x, y) = i.undistort_pixel(u as f64, v as f64);
                let (u2, v2) = i.project_normalized(x, y);
                assert!(
                    (u2 - u as f64).abs() < 1e-9 && (v2 - v as f64).abs() < 1e-9,
                    "({u},{v}) -> ({u2},{v2})"
                );
            }
        }
        // OpenCV's projectPoints of a point at z = 1 gives the same pixel.
        let obj = Mat::from_slice_2d(&[[0.3f64, -0.2, 1.0]]).unwrap();
        let mut img = Mat::default();
        let zero = Mat::from_slice_2d(&[[0.0f64, 0.0, 0.0]]).unwrap();
        opencv::calib3d::project_points(
            &obj,
            &zero,
            &zero,
            &i.camera_matrix().unwrap(),
            &i.dist_coeffs().unwrap(),
            &mut img,
            &mut Mat::default(),
            0.0,
        )
        .unwrap();
        let p = mat_values(&img).unwrap();
        let (u, v) = i.project_normalized(0.3, -0.2);
        assert!((p[0] - u).abs() < 1e-9 && (p[1] - v).abs() < 1e-9);
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    /// A calibration file without its camera matrix is refused, naming the key.
    #[test]
    fn missing_matrix_is_named() {
        let dir = std::env::temp_dir().join(format!("flexbench-cal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("c.yaml");
        std::fs::write(&p, "%YAML:1.0\n---\nimage_width: 640\nimage_height: 480\ndistortion_coefficients: !!opencv-matrix\n   rows: 1\n   cols: 5\n   dt: d\n   data: [ 0., 0., 0., 0., 0. ]\n").unwrap();
        let e = Calibration::read(&p).unwrap_err().to_string();
        assert!(e.contains("'camera_matrix' is missing"), "{e}");
        std::fs::write(&p, "not yaml at all {{{").unwrap();
        let e = Calibration::read(&p).unwrap_err().to_string();
        assert!(e.contains("calibration file"), "{e}");
        let e = Calibration::read(&dir.join("none.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
