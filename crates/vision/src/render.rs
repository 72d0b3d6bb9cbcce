//! Rendered truth: what a camera of known intrinsics, distortion and pose films of a planar
//! scene (the bench's bodies and markers, or a chessboard), with motion blur over the exposure,
//! uneven lighting and sensor noise, written through OpenCV's video writer.
//!
//! Bench frames are rendered by inverse mapping: every pixel's centre is undistorted, its ray
//! met with the bench plane (a homography), and the shapes' coverage of the pixel taken from
//! their signed distance d (m) and the pixel's footprint s (m): coverage = clamp(1/2 - d/s, 0,
//! 1), a box filter along the edge's normal, unbiased for the centroid of a symmetric blob.
//! Motion blur averages several instants across the exposure. Chessboards are supersampled
//! (4 x 4 per pixel) so that their X-junctions are exact to a few hundredths of a pixel.

use std::path::Path;

use nalgebra::{Matrix3, Rotation3, Vector3};
use opencv::core::{Mat, Scalar, Size, CV_8UC1};
use opencv::prelude::*;

use crate::calibrate::Board;
use crate::camera::{BenchPlane, Intrinsics};
use crate::{cv, VisionError};

mod video;
pub use video::*;
mod poses;
pub use poses::*;

/// A camera of known intrinsics and pose: bench point P (m) maps to camera coordinates R P + t.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CameraTruth {
    /// Intrinsics and distortion.
    pub intrinsics: Intrinsics,
    /// Rotation bench -> camera.
    pub r: Matrix3<f64>,
    /// Translation (bench origin in camera coordinates), m.
    pub t: Vector3<f64>,
}

impl CameraTruth {
    /// A camera in front of the bench looking at bench point `look_at` (m) from `distance` (m),
    /// turned by small tilts about the bench's X and Y axes and rolled about its optical axis
    /// (degrees). Camera axes: x right, y down, z forward.
    pub fn looking_at(
        intrinsics: Intrinsics,
        look_at: [f64; 2],
        distance: f64,
        tilt_x_deg: f64,
        tilt_y_deg: f64,
        roll_deg: f64,
    ) -> Self {
        let r0 = Matrix3::new(1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0);
        let tilt = Rotation3::from_euler_angles(
            tilt_x_deg.to_radians(),
            tilt_y_deg.to_radians(),
            roll_deg.to_radians(),
        );
        let r = tilt.matrix() * r0;
        // The look-at point sits on the optical axis at `distance`.
        let target = Vector3::new(look_at[0], look_at[1], 0.0);
        let t = Vector3::new(0.0, 0.0, distance) - r * target;
        CameraTruth { intrinsics, r, t }
    }

    /// The calibration this camera is: its intrinsics and its plane, exact (no views).
    pub fn calibration(&self) -> crate::Calibration {
        crate::Calibration {
            intrinsics: self.intrinsics,
            rms: 0.0,
            std_intrinsics: Vec::new(),
            per_view: Vec::new(),
            rejected: Vec::new(),
            plane: self.plane(),
            plane_uncertainty: None,
            distortion_model: None,
            corners: Vec::new(),
        }
    }

    /// Homography bench plane (X, Y, 1) -> normalized image.
    pub fn bench_to_normalized(&self) -> Matrix3<f64> {
        Matrix3::from_columns(&[
            self.r.column(0).into_owned(),
            self.r.column(1).into_owned(),
            self.t,
        ])
    }

    /// The true bench plane (normalized image -> bench metres).
    pub fn plane(&self) -> Option<BenchPlane> {
        self.bench_to_normalized()
            .try_inverse()
            .map(|h| BenchPlane { h })
    }

    /// Distorted pixel of a bench point (m).
    pub fn project(&self, x: f64, y: f64) -> (f64, f64) {
        let p = self.bench_to_normalized() * Vector3::new(x, y, 1.0);
        self.intrinsics.project_normalized(p.x / p.z, p.y / p.z)
    }
}

/// A shape of the planar scene, bench metres, with its grey level (0..255 before lighting).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A disc.
    Disc {
        /// Centre, m.
        c: [f64; 2],
        /// Radius, m.
        r: f64,
        /// Grey level.
        grey: f64,
    },
    /// A bar with rounded ends from a to b.
    Bar {
        /// One end, m.
        a: [f64; 2],
        /// The other end, m.
        b: [f64; 2],
        /// Half its width, m.
        half_width: f64,
        /// Grey level.
        grey: f64,
    },
    /// A coloured disc (a sticker): drawn in colour in a colour frame, as its luminance in a
    /// grey one.
    Sticker {
        /// Centre, m.
        c: [f64; 2],
        /// Radius, m.
        r: f64,
        /// Its colour: red, green, blue levels.
        rgb: [f64; 3],
    },
    /// A rectangle turned by `turn` about its centre (a printed fiducial's square and cells).
    Rect {
        /// Centre, m.
        c: [f64; 2],
        /// Its turn from the bench's axes, rad.
        turn: f64,
        /// Half its sides along its own axes, m.
        half: [f64; 2],
        /// Grey level.
        grey: f64,
    },
}

impl Shape {
    fn distance(&self, p: [f64; 2]) -> f64 {
        match *self {
            Shape::Disc { c, r, .. } | Shape::Sticker { c, r, .. } => {
                (p[0] - c[0]).hypot(p[1] - c[1]) - r
            }
            Shape::Bar {
                a, b, half_width, ..
            } => {
                let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
                let l2 = dx * dx + dy * dy;
                let s = if l2 > 0.0 {
                    (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                (p[0] - a[0] - s * dx).hypot(p[1] - a[1] - s * dy) - half_width
            }
            Shape::Rect { c, turn, half, .. } => {
                // The box's signed distance in its own axes.
                let (dx, dy) = (p[0] - c[0], p[1] - c[1]);
                let (co, si) = (turn.cos(), turn.sin());
                let q = [
                    (co * dx + si * dy).abs() - half[0],
                    (-si * dx + co * dy).abs() - half[1],
                ];
                q[0].max(0.0).hypot(q[1].max(0.0)) + q[0].max(q[1]).min(0.0)
            }
        }
    }
    fn grey(&self) -> f64 {
        match *self {
            Shape::Disc { grey, .. } | Shape::Bar { grey, .. } | Shape::Rect { grey, .. } => grey,
            Shape::Sticker { rgb, .. } => luminance(rgb),
        }
    }
    /// Its level in channel `channel` of a BGR frame (None: its grey level).
    fn level(&self, channel: Option<usize>) -> f64 {
        match (*self, channel) {
            (Shape::Sticker { rgb, .. }, Some(c)) => rgb[2 - c],
            _ => self.grey(),
        }
    }
    fn bounds(&self) -> [f64; 4] {
        match *self {
            Shape::Disc { c, r, .. } | Shape::Sticker { c, r, .. } => {
                [c[0] - r, c[1] - r, c[0] + r, c[1] + r]
            }
            Shape::Bar {
                a,
                b,
                half_width: h,
                ..
            } => [
                a[0].min(b[0]) - h,
                a[1].min(b[1]) - h,
                a[0].max(b[0]) + h,
                a[1].max(b[1]) + h,
            ],
            Shape::Rect { c, half, .. } => {
                let r = half[0].hypot(half[1]);
                [c[0] - r, c[1] - r, c[0] + r, c[1] + r]
            }
        }
    }
}

/// The luminance of a colour (ITU-R BT.601, as OpenCV's BGR to grey).
pub fn luminance(rgb: [f64; 3]) -> f64 {
    0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
}

/// Image settings: background grey, lighting, noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    /// Background grey level.
    pub background: f64,
    /// The background's colour (red, green, blue levels) for a colour frame; None: grey.
    pub background_rgb: Option<[f64; 3]>,
    /// Relative amplitude of the uneven lighting (vignetting and a left-right gradient).
    pub lighting: f64,
    /// Standard deviation of the sensor noise, grey levels.
    pub noise: f64,
    /// The lamp's brightness in this frame relative to its mean (1: steady light; a lamp on
    /// the mains flickers at twice its frequency).
    pub gain: f64,
}

/// The bench plane seen by each pixel: its centre's bench coordinates (m) and footprint (m).
pub struct PlaneMap {
    width: usize,
    height: usize,
    xy: Vec<[f64; 2]>,
    scale: Vec<f64>,
    light: Vec<f64>,
}

impl PlaneMap {
    /// Map every pixel of `camera` onto the bench plane.
    pub fn new(camera: &CameraTruth, look: &Look) -> Result<Self, VisionError> {
        let i = camera.intrinsics;
        let (w, h) = (i.width as usize, i.height as usize);
        let plane = camera.plane().ok_or_else(|| {
            VisionError::Calibration("the camera sees the bench plane edge-on".into())
        })?;
        let to_bench = |u: f64, v: f64| plane.pixel_to_bench(&i, u, v);
        let mut xy = Vec::with_capacity(w * h);
        let mut scale = Vec::with_capacity(w * h);
        let mut light = Vec::with_capacity(w * h);
        for v in 0..h {
            for u in 0..w {
                let (uf, vf) = (u as f64, v as f64);
                let p = to_bench(uf, vf);
                let px = to_bench(uf + 0.5, vf);
                let mx = to_bench(uf - 0.5, vf);
                let py = to_bench(uf, vf + 0.5);
                let my = to_bench(uf, vf - 0.5);
                let sx = (px.0 - mx.0).hypot(px.1 - mx.1);
                let sy = (py.0 - my.0).hypot(py.1 - my.1);
                xy.push([p.0, p.1]);
                scale.push((sx * sy).sqrt());
                light.push(lighting(uf, vf, w, h, look.lighting));
            }
        }
        Ok(PlaneMap {
            width: w,
            height: h,
            xy,
            scale,
            light,
        })
    }

    /// Render one frame: `instants` are the scene at instants spread over the exposure (each a
    /// list of shapes, back to front); the result is 8-bit grey with noise from `rng`.
    pub fn render(
        &self,
        instants: &[Vec<Shape>],
        look: &Look,
        rng: &mut opencv::core::RNG,
    ) -> Result<Mat, VisionError> {
        self.render_bands(&[(0, self.height, instants.to_vec())], look, rng)
    }

    /// Render one frame of a rolling shutter: each band of rows (first row, end row) with its
    /// own instants over its exposure.
    pub fn render_bands(
        &self,
        bands: &[(usize, usize, Vec<Vec<Shape>>)],
        look: &Look,
        rng: &mut opencv::core::RNG,
    ) -> Result<Mat, VisionError> {
        let coloured = look.background_rgb.is_some()
            || bands.iter().any(|(_, _, i)| {
                i.iter()
                    .flatten()
                    .any(|s| matches!(s, Shape::Sticker { .. }))
            });
        // A grey frame, or (with colour in the scene) its blue, green and red planes, painted
        // in one pass (each shape's coverage computed once).
        if !coloured {
            let mut img = vec![[0f64; 1]; self.xy.len()];
            for (r0, r1, instants) in bands {
                self.paint(instants, look, *r0..(*r1).min(self.height), &mut img);
            }
            let grey: Vec<f64> = img.iter().map(|p| p[0]).collect();
            return self.finish(&grey, look, rng);
        }
        let mut img = vec![[0f64; 3]; self.xy.len()];
        for (r0, r1, instants) in bands {
            self.paint(instants, look, *r0..(*r1).min(self.height), &mut img);
        }
        let planes = (0..3)
            .map(|c| {
                let plane: Vec<f64> = img.iter().map(|p| p[c]).collect();
                self.finish(&plane, look, rng)
            })
            .collect::<Result<opencv::core::Vector<Mat>, _>>()?;
        let mut bgr = Mat::default();
        cv("merge", opencv::core::merge(&planes, &mut bgr))?;
        Ok(bgr)
    }

    /// The rows `rows` of `img` painted with the scenes `instants` averaged: grey levels (one
    /// channel), or a BGR frame's blue, green and red (three).
    fn paint<const N: usize>(
        &self,
        instants: &[Vec<Shape>],
        look: &Look,
        rows: std::ops::Range<usize>,
        img: &mut [[f64; N]],
    ) {
        let channel = |c: usize| (N == 3).then_some(c);
        let background: [f64; N] =
            std::array::from_fn(|c| match (look.background_rgb, channel(c)) {
                (Some(rgb), Some(c)) => rgb[2 - c],
                _ => look.background,
            });
        let (r0, r1) = (rows.start, rows.end);
        let k = instants.len().max(1) as f64;
        for shapes in instants {
            // Pixels far from every shape see the background only.
            let mut lo = [f64::INFINITY; 2];
            let mut hi = [f64::NEG_INFINITY; 2];
            for s in shapes {
                let b = s.bounds();
                lo = [lo[0].min(b[0]), lo[1].min(b[1])];
                hi = [hi[0].max(b[2]), hi[1].max(b[3])];
            }
            let boxes: Vec<[f64; 4]> = shapes.iter().map(|s| s.bounds()).collect();
            let levels: Vec<[f64; N]> = shapes
                .iter()
                .map(|sh| std::array::from_fn(|c| sh.level(channel(c))))
                .collect();
            let span = r0 * self.width..r1 * self.width;
            for (p, pixel) in img.iter_mut().enumerate().take(span.end).skip(span.start) {
                let [x, y] = self.xy[p];
                let s = self.scale[p];
                let mut val = background;
                if x >= lo[0] - s && x <= hi[0] + s && y >= lo[1] - s && y <= hi[1] + s {
                    for ((sh, b), level) in shapes.iter().zip(&boxes).zip(&levels) {
                        if x < b[0] - s || x > b[2] + s || y < b[1] - s || y > b[3] + s {
                            continue;
                        }
                        let d = sh.distance([x, y]);
                        let cov = (0.5 - d / s).clamp(0.0, 1.0);
                        if cov > 0.0 {
                            for c in 0..N {
                                val[c] = val[c] * (1.0 - cov) + level[c] * cov;
                            }
                        }
                    }
                }
                for c in 0..N {
                    pixel[c] += val[c] / k;
                }
            }
        }
    }

    fn finish(
        &self,
        img: &[f64],
        look: &Look,
        rng: &mut opencv::core::RNG,
    ) -> Result<Mat, VisionError> {
        let lit: Vec<f32> = img
            .iter()
            .zip(&self.light)
            .map(|(v, l)| (v * l * look.gain) as f32)
            .collect();
        finish_image(&lit, self.width, self.height, look.noise, rng)
    }
}

/// The uneven lighting at pixel (u, v): vignetting towards the corners and a left-right
/// gradient, of relative amplitude `amp`.
fn lighting(u: f64, v: f64, w: usize, h: usize, amp: f64) -> f64 {
    let (nu, nv) = (u / w as f64 - 0.5, v / h as f64 - 0.5);
    1.0 - amp * (nu * nu + nv * nv) * 1.6 + 0.5 * amp * nu
}

/// Add Gaussian noise and round to 8-bit grey.
fn finish_image(
    lit: &[f32],
    width: usize,
    height: usize,
    noise: f64,
    rng: &mut opencv::core::RNG,
) -> Result<Mat, VisionError> {
    let flat = cv("image", Mat::from_slice(lit))?;
    let mut f: Mat = cv(
        "reshape",
        cv("reshape", flat.reshape(1, height as i32))?.try_clone(),
    )?;
    if noise > 0.0 {
        let mut n = cv(
            "noise",
            Mat::new_rows_cols_with_default(
                height as i32,
                width as i32,
                opencv::core::CV_32FC1,
                Scalar::all(0.0),
            ),
        )?;
        cv(
            "noise",
            rng.fill(
                &mut n,
                opencv::core::RNG_NORMAL,
                &Scalar::all(0.0),
                &Scalar::all(noise),
                false,
            ),
        )?;
        let mut sum = Mat::default();
        cv(
            "noise",
            opencv::core::add(&f, &n, &mut sum, &opencv::core::no_array(), -1),
        )?;
        f = sum;
    }
    let mut out = Mat::default();
    cv("to 8 bit", f.convert_to(&mut out, CV_8UC1, 1.0, 0.0))?;
    Ok(out)
}

/// Renders chessboard views for one camera: each pixel's undistorted ray and its derivatives
/// are computed once, so that the 8 x 8 samples per pixel of every view cost a homography each
/// (the ray is affine in the sample's offset to within 1e-9 over a pixel).
pub struct BoardRenderer {
    intr: Intrinsics,
    n0: Vec<[f64; 2]>,
    jac: Vec<[f64; 4]>,
}

impl BoardRenderer {
    /// Precompute the rays of `intr`'s pixels.
    pub fn new(intr: &Intrinsics) -> Self {
        let (w, h) = (intr.width as usize, intr.height as usize);
        let mut n0 = Vec::with_capacity(w * h);
        let mut jac = Vec::with_capacity(w * h);
        let e = 0.25;
        for v in 0..h {
            for u in 0..w {
                let (uf, vf) = (u as f64, v as f64);
                let c = intr.undistort_pixel(uf, vf);
                let (pu, mu) = (
                    intr.undistort_pixel(uf + e, vf),
                    intr.undistort_pixel(uf - e, vf),
                );
                let (pv, mv) = (
                    intr.undistort_pixel(uf, vf + e),
                    intr.undistort_pixel(uf, vf - e),
                );
                n0.push([c.0, c.1]);
                jac.push([
                    (pu.0 - mu.0) / (2.0 * e),
                    (pv.0 - mv.0) / (2.0 * e),
                    (pu.1 - mu.1) / (2.0 * e),
                    (pv.1 - mv.1) / (2.0 * e),
                ]);
            }
        }
        BoardRenderer {
            intr: *intr,
            n0,
            jac,
        }
    }

    /// A chessboard view: the board (inner corners `board`, one square of white paper around
    /// its squares) at pose (R, t) board -> camera (board frame: x along its rows, y along its
    /// columns, z away from the camera), 8 x 8 samples per pixel.
    pub fn render(
        &self,
        board: &Board,
        r: &Matrix3<f64>,
        t: &Vector3<f64>,
        look: &Look,
        rng: &mut opencv::core::RNG,
    ) -> Result<Mat, VisionError> {
        let s = board.square;
        self.render_plane((r, t), look, rng, |bx, by| {
            // Squares: index (floor(bx/s) + 1, floor(by/s) + 1) over cols+1 x rows+1.
            let (ci, ri) = ((bx / s).floor() + 1.0, (by / s).floor() + 1.0);
            let inside_squares =
                ci >= 0.0 && ri >= 0.0 && ci <= board.cols as f64 && ri <= board.rows as f64;
            let inside_paper = bx >= -2.0 * s
                && by >= -2.0 * s
                && bx <= (board.cols as f64 + 1.0) * s
                && by <= (board.rows as f64 + 1.0) * s;
            if inside_squares {
                Some(if (ci as i64 + ri as i64) % 2 == 0 {
                    25.0
                } else {
                    225.0
                })
            } else if inside_paper {
                Some(225.0)
            } else {
                None
            }
        })
    }

    /// A ChArUco view: the board's drawing (`drawing`: its image and the map from board
    /// coordinates to its pixels, [`crate::charuco::Charuco::drawing`]) on white paper one
    /// square wide around it, at pose (R, t) board -> camera, 8 x 8 samples per pixel, each
    /// sample of the drawing bilinear; `hidden` (board coordinates, m) covered by a dark bar
    /// (the lever lying across a board in its plane) when given.
    pub fn render_charuco(
        &self,
        (charuco, drawing): (&crate::charuco::Charuco, &(Mat, [f64; 6])),
        (r, t): (&Matrix3<f64>, &Vector3<f64>),
        look: &Look,
        hidden: Option<&dyn Fn(f64, f64) -> bool>,
        rng: &mut opencv::core::RNG,
    ) -> Result<Mat, VisionError> {
        let (img, map) = drawing;
        let (cols, rows) = (img.cols(), img.rows());
        let data = img.data_bytes().map_err(|e| VisionError::OpenCv {
            context: "ChArUco drawing".into(),
            source: e,
        })?;
        let s = charuco.square;
        let (w, h) = (charuco.squares_x as f64 * s, charuco.squares_y as f64 * s);
        let at = |c: i32, r: i32| {
            data[(r.clamp(0, rows - 1) * cols + c.clamp(0, cols - 1)) as usize] as f64
        };
        self.render_plane((r, t), look, rng, |bx, by| {
            if let Some(hide) = hidden {
                if hide(bx, by) {
                    return Some(40.0);
                }
            }
            if bx < -s || by < -s || bx > w + s || by > h + s {
                return None;
            }
            if bx < 0.0 || by < 0.0 || bx > w || by > h {
                return Some(225.0);
            }
            let (u, v) = (
                map[0] * bx + map[1] * by + map[2],
                map[3] * bx + map[4] * by + map[5],
            );
            let (u0, v0) = (u.floor(), v.floor());
            let (fu, fv) = (u - u0, v - v0);
            let (c, r) = (u0 as i32, v0 as i32);
            let grey = (1.0 - fv) * ((1.0 - fu) * at(c, r) + fu * at(c + 1, r))
                + fv * ((1.0 - fu) * at(c, r + 1) + fu * at(c + 1, r + 1));
            Some(25.0 + grey * (200.0 / 255.0))
        })
    }

    /// A plane at pose (R, t) plane -> camera seen by the camera: at 8 x 8 samples per pixel,
    /// `albedo(x, y)` of the plane point (m) hit, grey level, or the background where None;
    /// then the lighting and the sensor noise.
    fn render_plane(
        &self,
        (r, t): (&Matrix3<f64>, &Vector3<f64>),
        look: &Look,
        rng: &mut opencv::core::RNG,
        albedo: impl Fn(f64, f64) -> Option<f64>,
    ) -> Result<Mat, VisionError> {
        let h_bn = Matrix3::from_columns(&[r.column(0).into_owned(), r.column(1).into_owned(), *t]);
        let h_nb = h_bn
            .try_inverse()
            .ok_or_else(|| VisionError::Calibration("board seen edge-on".into()))?;
        let intr = &self.intr;
        let (w, h) = (intr.width as usize, intr.height as usize);
        let ss = 8;
        let mut lit = vec![0f32; w * h];
        for (p, out) in lit.iter_mut().enumerate() {
            let [x0, y0] = self.n0[p];
            let [a, b, c, d] = self.jac[p];
            let mut acc = 0.0;
            for j in 0..ss {
                let dv = (j as f64 + 0.5) / ss as f64 - 0.5;
                for i in 0..ss {
                    let du = (i as f64 + 0.5) / ss as f64 - 0.5;
                    let (xn, yn) = (x0 + a * du + b * dv, y0 + c * du + d * dv);
                    let q = h_nb * Vector3::new(xn, yn, 1.0);
                    acc += match q.z.abs() < 1e-12 {
                        true => look.background,
                        false => albedo(q.x / q.z, q.y / q.z).unwrap_or(look.background),
                    };
                }
            }
            let val = acc / (ss * ss) as f64;
            *out = (val * lighting((p % w) as f64, (p / w) as f64, w, h, look.lighting)) as f32;
        }
        finish_image(&lit, w, h, look.noise, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoders' listing read by name: libx264 found in Debian's ffmpeg's form, not in a
    /// listing without it, nor where the name is only part of another's.
    #[test]
    fn encoder_listing_read_by_name() {
        let with = b"Encoders:\n V....D = Video\n ------\n V....D libx264              libx264 H.264 / AVC\n V....D libx264rgb           libx264 H.264 RGB\n";
        let without = b"Encoders:\n ------\n V....D mpeg4                MPEG-4 part 2\n V....D libx264rgb           libx264 H.264 RGB\n";
        assert!(lists_encoder(with, "libx264"));
        assert!(!lists_encoder(without, "libx264"));
    }

    /// Debian's ffmpeg, which the set-up script installs, has libx264.
    #[test]
    fn this_machines_ffmpeg_has_libx264() {
        assert!(ffmpeg_has_libx264());
    }

    /// A marker disc rendered on the bench plane has its intensity centroid at the projection of
    /// its centre within 0.02 px, still and moving (motion blur over the exposure): perspective
    /// and distortion shift an ellipse's centre by less than 0.002 px at this size, and the
    /// 8-bit rounding of the intensities adds about 0.005 px (seen: 0.006 px at most).
    #[test]
    fn a_rendered_disc_is_centred_on_its_projection() {
        let intr = Intrinsics {
            width: 320,
            height: 240,
            fx: 350.0,
            fy: 351.0,
            cx: 161.0,
            cy: 119.0,
            dist: [-0.12, 0.06, 0.0006, -0.0004, 0.0],
        };
        let cam = CameraTruth::looking_at(intr, [0.25, -0.05], 1.0, 4.0, -3.0, 1.5);
        let look = Look {
            background: 90.0,
            background_rgb: None,
            lighting: 0.0,
            noise: 0.0,
            gain: 1.0,
        };
        let map = PlaneMap::new(&cam, &look).unwrap();
        let mut rng = opencv::core::RNG::new(1).unwrap();
        for (c, vel) in [
            ([0.2, 0.0], [0.0, 0.0]),
            ([0.45, -0.2], [0.0, 0.0]),
            ([0.1, 0.1], [0.8, -0.5]),
        ] {
            let instants: Vec<Vec<Shape>> = (0..9)
                .map(|k| {
                    let dt = (k as f64 / 8.0 - 0.5) * 0.002;
                    vec![Shape::Disc {
                        c: [c[0] + vel[0] * dt, c[1] + vel[1] * dt],
                        r: 0.012,
                        grey: 230.0,
                    }]
                })
                .collect();
            let img = map.render(&instants, &look, &mut rng).unwrap();
            let (pu, pv) = cam.project(c[0], c[1]);
            let (mut s, mut su, mut sv) = (0.0, 0.0, 0.0);
            for v in (pv as i32 - 12)..=(pv as i32 + 12) {
                for u in (pu as i32 - 12)..=(pu as i32 + 12) {
                    let w = *img.at_2d::<u8>(v, u).unwrap() as f64 - 90.0;
                    s += w;
                    su += w * u as f64;
                    sv += w * v as f64;
                }
            }
            let (cu, cv_) = (su / s, sv / s);
            eprintln!("disc at {c:?}: centroid ({cu:.4}, {cv_:.4}) projection ({pu:.4}, {pv:.4})");
            assert!((cu - pu).hypot(cv_ - pv) < 0.02, "{c:?}");
        }
    }
}
