//! The camera's parameters that the mechanism's own motion fits (`flexbench_kinematics::selfcal`,
//! issue "Cameras and benches as they are", item 2b): the bench plane's homography and the lens's
//! radial distortion k1, k2, about a base camera whose focal lengths, principal point and other
//! coefficients are kept (a nominal camera's, or a board's).
//!
//! theta = (g11, g12, g13, g21, g22, g23, g31, g32, k1, k2): G, the homography from the bench
//! frame (m) to normalized undistorted image coordinates (the inverse of [`BenchPlane::h`]),
//! scaled so that g33 = 1; its eight entries span every plane-to-image homography, so a wrong
//! nominal focal length or an aspect ratio that is not one is absorbed by G (the plane's
//! metric does not need them), and only the distortion's radius is measured with the base's
//! focal lengths.

use nalgebra::{DMatrix, Matrix3, Vector2, Vector3};

use crate::camera::{BenchPlane, Intrinsics};

/// The bench positions (m) of `pixels` (px) through a camera and its bench plane.
pub fn benched(intr: &Intrinsics, plane: &BenchPlane, pixels: &[(f64, f64)]) -> Vec<Vector2<f64>> {
    pixels
        .iter()
        .map(|&(u, v)| {
            let (x, y) = plane.pixel_to_bench(intr, u, v);
            Vector2::new(x, y)
        })
        .collect()
}

/// The parameters' names, in theta's order.
pub const NAMES: [&str; 10] = [
    "plane g11",
    "plane g12",
    "plane g13",
    "plane g21",
    "plane g22",
    "plane g23",
    "plane g31",
    "plane g32",
    "k1",
    "k2",
];

/// Finite-difference steps of theta's entries (G's entries are about 1 per metre of distance
/// for its first two columns, normalized coordinates for its third; k1, k2 are of order 0.1).
pub const STEPS: [f64; 10] = [1e-7, 1e-7, 1e-7, 1e-7, 1e-7, 1e-7, 1e-7, 1e-7, 1e-6, 1e-6];

/// The camera whose plane and radial distortion the motion fits: the base's other intrinsics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MotionCamera {
    /// The base camera (its k1, k2 are theta's start).
    pub base: Intrinsics,
}

impl MotionCamera {
    /// theta of the base camera with the plane `plane`; None when the plane's homography is
    /// singular or maps the bench origin to infinity.
    pub fn start(&self, plane: &BenchPlane) -> Option<Vec<f64>> {
        let g = plane.h.try_inverse()?;
        let s = g[(2, 2)];
        if !(s.is_finite() && s.abs() > 1e-12) {
            return None;
        }
        let g = g / s;
        let mut theta: Vec<f64> = (0..8).map(|i| g[(i / 3, i % 3)]).collect();
        theta.extend([self.base.dist[0], self.base.dist[1]]);
        Some(theta)
    }

    /// G of theta: bench metres -> normalized undistorted image coordinates.
    fn g(theta: &[f64]) -> Matrix3<f64> {
        Matrix3::new(
            theta[0], theta[1], theta[2], theta[3], theta[4], theta[5], theta[6], theta[7], 1.0,
        )
    }

    /// The base's intrinsics with theta's k1, k2.
    pub fn intrinsics(&self, theta: &[f64]) -> Intrinsics {
        let mut i = self.base;
        (i.dist[0], i.dist[1]) = (theta[8], theta[9]);
        i
    }

    /// The pixel (px) of a bench point (m) under theta; None behind the camera (the bench
    /// origin is in front: G's third row keeps the sign g33 = 1 gives it).
    pub fn project(&self, theta: &[f64], p: Vector2<f64>) -> Option<Vector2<f64>> {
        let n = Self::g(theta) * Vector3::new(p.x, p.y, 1.0);
        if n.z <= 1e-9 {
            return None;
        }
        let (u, v) = self
            .intrinsics(theta)
            .project_normalized(n.x / n.z, n.y / n.z);
        Some(Vector2::new(u, v))
    }

    /// The angle (rad) of the bench's horizontal at the origin A in the normalized image: the
    /// direction in which the image sees the bench's x axis leave A.
    pub fn horizontal(theta: &[f64]) -> f64 {
        let g = Self::g(theta);
        let (a, b) = (
            g * Vector3::new(0.0, 0.0, 1.0),
            g * Vector3::new(0.1, 0.0, 1.0),
        );
        (b.y / b.z - a.y / a.z).atan2(b.x / b.z - a.x / a.z)
    }

    /// The calibration theta states: the intrinsics and the bench plane.
    pub fn calibration(&self, theta: &[f64]) -> Option<(Intrinsics, BenchPlane)> {
        let h = Self::g(theta).try_inverse()?;
        Some((self.intrinsics(theta), BenchPlane { h }))
    }

    /// How far the bench positions of `pixels` move from theta to `other` (another camera,
    /// the truth or the start): see [`Displacement`]. None if a plane is singular.
    pub fn displacement(
        &self,
        theta: &[f64],
        other: (&Intrinsics, &BenchPlane),
        pixels: &[(f64, f64)],
    ) -> Option<Displacement> {
        let (intr, plane) = self.calibration(theta)?;
        displacement(
            &benched(&intr, &plane, pixels),
            &benched(other.0, other.1, pixels),
        )
    }

    /// The standard deviation of the plane's scale (relative) and the RMS standard deviation of
    /// the bench positions of `pixels` (m), propagated from theta's covariance (first order,
    /// central differences).
    pub fn uncertainty(
        &self,
        theta: &[f64],
        cov: &DMatrix<f64>,
        pixels: &[(f64, f64)],
    ) -> Option<(f64, f64)> {
        let (intr, plane) = self.calibration(theta)?;
        let at = |th: &[f64]| -> Option<Vec<Vector2<f64>>> {
            let (i, p) = self.calibration(th)?;
            Some(benched(&i, &p, pixels))
        };
        let base = benched(&intr, &plane, pixels);
        let n = theta.len();
        let mut jpos = DMatrix::zeros(2 * pixels.len(), n);
        let mut jscale = DMatrix::zeros(1, n);
        let mut th = theta.to_vec();
        for j in 0..n {
            let h = STEPS[j];
            th[j] = theta[j] + h;
            let plus = at(&th)?;
            th[j] = theta[j] - h;
            let minus = at(&th)?;
            th[j] = theta[j];
            for (k, (a, b)) in plus.iter().zip(&minus).enumerate() {
                jpos[(2 * k, j)] = (a.x - b.x) / (2.0 * h);
                jpos[(2 * k + 1, j)] = (a.y - b.y) / (2.0 * h);
            }
            let sp = displacement(&plus, &base)?.scale;
            let sm = displacement(&minus, &base)?.scale;
            jscale[(0, j)] = (sp - sm) / (2.0 * h);
        }
        let pos = &jpos * cov * jpos.transpose();
        let var_scale = (&jscale * cov * jscale.transpose())[(0, 0)];
        let mean_var = pos.diagonal().sum() / pixels.len().max(1) as f64;
        Some((var_scale.max(0.0).sqrt(), mean_var.max(0.0).sqrt()))
    }
}

/// How two sets of bench positions of the same pixels differ.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Displacement {
    /// RMS distance, m.
    pub rms_m: f64,
    /// Largest distance, m.
    pub max_m: f64,
    /// The first set's scale against the second's, relative (the least-squares similarity's
    /// scale minus one): the lengths' error.
    pub scale: f64,
}

/// [`Displacement`] of `a` from `b` (as many points, three or more).
pub fn displacement(a: &[Vector2<f64>], b: &[Vector2<f64>]) -> Option<Displacement> {
    if a.len() != b.len() || a.len() < 3 {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(p, q)| (p - q).norm()).collect();
    let n = a.len() as f64;
    let (ca, cb) = (
        a.iter().sum::<Vector2<f64>>() / n,
        b.iter().sum::<Vector2<f64>>() / n,
    );
    // Umeyama's scale: sqrt(sum |a'|^2 / sum |b'|^2) would ignore rotation; the least-squares
    // similarity a' = s R b' has s = |sum (b' . a', b' x a')| / sum |b'|^2.
    let (mut dot, mut cross, mut bb) = (0.0, 0.0, 0.0);
    for (p, q) in a.iter().zip(b) {
        let (pa, qb) = (p - ca, q - cb);
        dot += qb.dot(&pa);
        cross += qb.x * pa.y - qb.y * pa.x;
        bb += qb.norm_squared();
    }
    (bb > 0.0).then(|| Displacement {
        rms_m: (d.iter().map(|x| x * x).sum::<f64>() / n).sqrt(),
        max_m: d.iter().copied().fold(0.0, f64::max),
        scale: (dot * dot + cross * cross).sqrt() / bb - 1.0,
    })
}

/// A grid of pixels over a box (u0, v0, u1, v1), `n` x `n`.
pub fn grid(bounds: (f64, f64, f64, f64), n: usize) -> Vec<(f64, f64)> {
    let (u0, v0, u1, v1) = bounds;
    let at = |a: f64, b: f64, k: usize| a + (b - a) * k as f64 / (n.max(2) - 1) as f64;
    (0..n.max(2))
        .flat_map(|i| (0..n.max(2)).map(move |j| (at(u0, u1, i), at(v0, v1, j))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn camera() -> (Intrinsics, BenchPlane) {
        let intr = Intrinsics {
            width: 640,
            height: 480,
            fx: 700.0,
            fy: 702.0,
            cx: 324.0,
            cy: 236.0,
            dist: [-0.12, 0.06, 0.0, 0.0, 0.0],
        };
        // bench -> normalized: about 1 m away, slightly tilted.
        let g = Matrix3::new(1.0, 0.02, -0.2, 0.01, -1.0, 0.05, 0.03, -0.02, 1.0);
        (
            intr,
            BenchPlane {
                h: g.try_inverse().unwrap(),
            },
        )
    }

    #[test]
    fn theta_reproduces_the_camera_it_starts_from() {
        let (intr, plane) = camera();
        let m = MotionCamera { base: intr };
        let theta = m.start(&plane).unwrap();
        for p in [(0.0, 0.0), (0.3, 0.1), (-0.1, 0.2)] {
            let a = m.project(&theta, Vector2::new(p.0, p.1)).unwrap();
            let b = plane.bench_to_pixel(&intr, p.0, p.1).unwrap();
            assert!((a.x - b.0).abs() < 1e-9 && (a.y - b.1).abs() < 1e-9);
        }
        let (i2, p2) = m.calibration(&theta).unwrap();
        let pix = grid((100.0, 100.0, 500.0, 400.0), 5);
        let d = m.displacement(&theta, (&i2, &p2), &pix).unwrap();
        assert!(d.max_m < 1e-12 && d.scale.abs() < 1e-12);
    }

    #[test]
    fn a_scaled_and_turned_set_has_that_scale() {
        let b: Vec<Vector2<f64>> = grid((0.0, 0.0, 1.0, 0.5), 4)
            .into_iter()
            .map(|(x, y)| Vector2::new(x, y))
            .collect();
        let (s, c) = (0.1f64.sin(), 0.1f64.cos());
        let a: Vec<Vector2<f64>> = b
            .iter()
            .map(|p| {
                1.002 * Vector2::new(c * p.x - s * p.y, s * p.x + c * p.y) + Vector2::new(0.3, 0.0)
            })
            .collect();
        let d = displacement(&a, &b).unwrap();
        assert!((d.scale - 0.002).abs() < 1e-12, "{}", d.scale);
    }
}
