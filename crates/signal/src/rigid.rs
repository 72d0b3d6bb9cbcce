//! The lever's rigid-motion field: the markers' velocities and accelerations fitted as those of
//! one rigid body, and what is left, which is the lever's elastic part.
//!
//! At each sample, with r_i = p_i - p_P the marker's position from the reference point P (B on
//! the bench's lever) and k x r the vector r turned by +90 degrees:
//!   v_i = v_P + omega k x r_i                      (fitted for v_P, omega)
//!   a_i = a_P + epsilon k x r_i - omega^2 r_i      (fitted for a_P, epsilon, omega from above)
//! by weighted least squares (weights 1/sigma^2 of each measured component; unit weights and the
//! residual's variance when the markers carry no sigma). The pose (angle phi of the body's x
//! axis, P) is the Procrustes fit of the markers' layout in the body frame to the measured
//! positions (Umeyama without scale), and r_i are taken on that rigid pose. The residual
//! e_i = a_i - (a_P + epsilon k x r_i - omega^2 r_i) is the elastic part of the markers'
//! accelerations (minus its own rigid best fit); its component along the body's normal
//! (transverse to the lever) is reported apart, with chi^2 per degree of freedom telling whether
//! it stands above the noise.

use nalgebra::{Matrix3, Vector2, Vector3};

/// One marker at one sample: position (m), velocity (m/s), acceleration (m/s^2), bench frame,
/// and the standard deviations of velocity and acceleration per component when known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarkerKinematics {
    /// Position, m.
    pub p: Vector2<f64>,
    /// Velocity, m/s.
    pub v: Vector2<f64>,
    /// Acceleration, m/s^2.
    pub a: Vector2<f64>,
    /// Standard deviations of vx, vy (m/s) and ax, ay (m/s^2), when the smoother gives them.
    pub sigma: Option<[f64; 4]>,
}

/// One marker's residual acceleration against the rigid field: the vector (m/s^2, bench
/// frame), its component along the body's normal, and that component's standard deviation.
pub type ResidualAcceleration = (Vector2<f64>, f64, Option<f64>);

/// The rigid field at one sample: the reference point's motion and the body's rotation, with
/// standard deviations, and the markers' residual accelerations.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidField {
    /// Reference point's position, m, bench frame.
    pub p: Vector2<f64>,
    /// Angle of the body's x axis from the bench's X, rad.
    pub phi: f64,
    /// Reference point's velocity, m/s.
    pub v: Vector2<f64>,
    /// Angular velocity, rad/s (counter-clockwise).
    pub omega: f64,
    /// Reference point's acceleration, m/s^2.
    pub a: Vector2<f64>,
    /// Angular acceleration, rad/s^2.
    pub epsilon: f64,
    /// Standard deviations of vx, vy, omega.
    pub v_sigma: [f64; 3],
    /// Standard deviations of ax, ay, epsilon.
    pub a_sigma: [f64; 3],
    /// Per marker (None where not measured): residual acceleration (m/s^2, bench frame), its
    /// component along the body's normal, and that component's standard deviation (the
    /// marker's own, when known).
    pub residual: Vec<Option<ResidualAcceleration>>,
    /// Weighted residual sum of squares of the acceleration fit per degree of freedom (2 m - 3
    /// for m markers; about 1 when the body moves rigidly within the noise).
    pub chi2_dof: f64,
}

/// The markers' layout in the body frame (m) and the reference point there, with enough
/// markers to fit (at least two, not all at one point).
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Each marker's coordinates in the body frame, m.
    pub markers: Vec<Vector2<f64>>,
    /// The reference point in the body frame, m.
    pub reference: Vector2<f64>,
}

fn perp(r: Vector2<f64>) -> Vector2<f64> {
    Vector2::new(-r.y, r.x)
}

fn rot(phi: f64, v: Vector2<f64>) -> Vector2<f64> {
    let (s, c) = phi.sin_cos();
    Vector2::new(c * v.x - s * v.y, s * v.x + c * v.y)
}

/// The rigid pose (phi, translation) that best maps `local` onto `world` (equal weights).
fn procrustes(local: &[Vector2<f64>], world: &[Vector2<f64>]) -> Option<(f64, Vector2<f64>)> {
    let m = local.len() as f64;
    if local.len() < 2 {
        return None;
    }
    let cl = local.iter().sum::<Vector2<f64>>() / m;
    let cw = world.iter().sum::<Vector2<f64>>() / m;
    let (mut sdot, mut scross) = (0.0, 0.0);
    for (l, w) in local.iter().zip(world) {
        let (a, b) = (l - cl, w - cw);
        sdot += a.dot(&b);
        scross += a.x * b.y - a.y * b.x;
    }
    if sdot == 0.0 && scross == 0.0 {
        return None;
    }
    let phi = scross.atan2(sdot);
    Some((phi, cw - rot(phi, cl)))
}

/// Weighted least squares of 3 unknowns from rows (x_row, y, weight): solution, covariance
/// (scaled by the residual variance when `scale`), weighted RSS.
fn wls3(
    rows: &[(Vector3<f64>, f64, f64)],
    scale: bool,
) -> Option<(Vector3<f64>, Matrix3<f64>, f64)> {
    let mut n = Matrix3::zeros();
    let mut b = Vector3::zeros();
    for (x, y, w) in rows {
        n += x * x.transpose() * *w;
        b += x * (*y * *w);
    }
    let inv = n.try_inverse()?;
    let sol = inv * b;
    let rss: f64 = rows
        .iter()
        .map(|(x, y, w)| w * (y - x.dot(&sol)).powi(2))
        .sum();
    let dof = rows.len().saturating_sub(3);
    let cov = if scale {
        inv * if dof > 0 { rss / dof as f64 } else { f64::NAN }
    } else {
        inv
    };
    Some((sol, cov, rss))
}

impl Layout {
    /// The layout from the data: the mean shape (Procrustes, two passes) over the samples where
    /// every marker is measured, centred on its centroid, which is the reference point. None when
    /// no sample has every marker.
    pub fn from_samples(samples: &[Vec<Option<MarkerKinematics>>]) -> Option<Layout> {
        let complete: Vec<Vec<Vector2<f64>>> = samples
            .iter()
            .filter_map(|s| s.iter().map(|m| m.map(|m| m.p)).collect::<Option<Vec<_>>>())
            .filter(|s| s.len() >= 2)
            .collect();
        let first = complete.first()?;
        let centre = |v: &[Vector2<f64>]| {
            let c = v.iter().sum::<Vector2<f64>>() / v.len() as f64;
            v.iter().map(|p| p - c).collect::<Vec<_>>()
        };
        let mut shape = centre(first);
        for _ in 0..2 {
            let mut acc = vec![Vector2::zeros(); shape.len()];
            for s in &complete {
                // Map each sample back into the shape's frame and average.
                let (phi, tr) = procrustes(s, &shape)?;
                for (a, p) in acc.iter_mut().zip(s) {
                    *a += rot(phi, *p) + tr;
                }
            }
            shape = centre(
                &acc.iter()
                    .map(|a| a / complete.len() as f64)
                    .collect::<Vec<_>>(),
            );
        }
        Some(Layout {
            markers: shape,
            reference: Vector2::zeros(),
        })
    }

    /// Fit the rigid field to one sample's markers (None where a marker is not measured).
    /// None when fewer than two markers are measured or the fit is singular (all at one point).
    pub fn fit(&self, sample: &[Option<MarkerKinematics>]) -> Option<RigidField> {
        let seen: Vec<usize> = (0..sample.len().min(self.markers.len()))
            .filter(|&i| sample[i].is_some())
            .collect();
        if seen.len() < 2 {
            return None;
        }
        let ms: Vec<MarkerKinematics> = seen.iter().filter_map(|&i| sample[i]).collect();
        let local: Vec<Vector2<f64>> = seen.iter().map(|&i| self.markers[i]).collect();
        let world: Vec<Vector2<f64>> = ms.iter().map(|m| m.p).collect();
        let (phi, tr) = procrustes(&local, &world)?;
        let p_ref = rot(phi, self.reference) + tr;
        let r: Vec<Vector2<f64>> = local.iter().map(|c| rot(phi, c - self.reference)).collect();
        let weighted = ms.iter().all(|m| {
            m.sigma
                .is_some_and(|s| s.iter().all(|v| v.is_finite() && *v > 0.0))
        });
        let w = |m: &MarkerKinematics, k: usize| {
            if weighted {
                m.sigma.map_or(1.0, |s| 1.0 / (s[k] * s[k]))
            } else {
                1.0
            }
        };
        // Velocities: v_i = v_P + omega k x r_i.
        let mut rows = Vec::with_capacity(2 * ms.len());
        for (m, ri) in ms.iter().zip(&r) {
            let kr = perp(*ri);
            rows.push((Vector3::new(1.0, 0.0, kr.x), m.v.x, w(m, 0)));
            rows.push((Vector3::new(0.0, 1.0, kr.y), m.v.y, w(m, 1)));
        }
        let (vs, vcov, _) = wls3(&rows, !weighted)?;
        let omega = vs.z;
        // Accelerations: a_i + omega^2 r_i = a_P + epsilon k x r_i.
        rows.clear();
        for (m, ri) in ms.iter().zip(&r) {
            let kr = perp(*ri);
            let lhs = m.a + ri * (omega * omega);
            rows.push((Vector3::new(1.0, 0.0, kr.x), lhs.x, w(m, 2)));
            rows.push((Vector3::new(0.0, 1.0, kr.y), lhs.y, w(m, 3)));
        }
        let (acs, acov, rss) = wls3(&rows, !weighted)?;
        let a_ref = Vector2::new(acs.x, acs.y);
        let normal = rot(phi, Vector2::new(0.0, 1.0));
        let mut residual = vec![None; sample.len()];
        for ((&i, m), ri) in seen.iter().zip(&ms).zip(&r) {
            let e = m.a - (a_ref + perp(*ri) * acs.z - ri * (omega * omega));
            let sd = m
                .sigma
                .filter(|_| weighted)
                .map(|s| ((normal.x * s[2]).powi(2) + (normal.y * s[3]).powi(2)).sqrt());
            residual[i] = Some((e, e.dot(&normal), sd));
        }
        let dof = (2 * ms.len()).saturating_sub(3).max(1) as f64;
        let sd = |c: &Matrix3<f64>| {
            [
                c[(0, 0)].max(0.0).sqrt(),
                c[(1, 1)].max(0.0).sqrt(),
                c[(2, 2)].max(0.0).sqrt(),
            ]
        };
        Some(RigidField {
            p: p_ref,
            phi,
            v: Vector2::new(vs.x, vs.y),
            omega,
            a: a_ref,
            epsilon: acs.z,
            v_sigma: sd(&vcov),
            a_sigma: sd(&acov),
            residual,
            chi2_dof: if weighted { rss / dof } else { f64::NAN },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lever() -> Layout {
        Layout {
            markers: [0.1, 0.3, 0.5, 0.7, 0.9]
                .iter()
                .map(|s| Vector2::new(s * 0.45, 0.0))
                .collect(),
            reference: Vector2::zeros(),
        }
    }

    /// The exact field of a rigid motion: markers' kinematics from (P, phi, v, omega, a, eps).
    fn rigid(
        layout: &Layout,
        p: Vector2<f64>,
        phi: f64,
        v: Vector2<f64>,
        omega: f64,
        a: Vector2<f64>,
        eps: f64,
    ) -> Vec<Option<MarkerKinematics>> {
        layout
            .markers
            .iter()
            .map(|c| {
                let r = rot(phi, c - layout.reference);
                Some(MarkerKinematics {
                    p: p + r,
                    v: v + perp(r) * omega,
                    a: a + perp(r) * eps - r * (omega * omega),
                    sigma: Some([0.01, 0.01, 0.5, 0.5]),
                })
            })
            .collect()
    }

    /// A rigid motion is recovered exactly, with no residual.
    #[test]
    fn rigid_motion_is_recovered() {
        let l = lever();
        let (p, phi, v, om, a, eps) = (
            Vector2::new(0.05, -0.02),
            0.3,
            Vector2::new(0.4, -0.9),
            -1.7,
            Vector2::new(-14.0, 3.0),
            22.0,
        );
        let f = l.fit(&rigid(&l, p, phi, v, om, a, eps)).unwrap();
        assert!((f.p - p).norm() < 1e-12 && (f.phi - phi).abs() < 1e-12);
        assert!((f.v - v).norm() < 1e-12 && (f.omega - om).abs() < 1e-12);
        assert!(
            (f.a - a).norm() < 1e-10 && (f.epsilon - eps).abs() < 1e-10,
            "{:?} {}",
            f.a,
            f.epsilon
        );
        assert!(f.residual.iter().all(|r| r.unwrap().0.norm() < 1e-10));
        assert!(f.chi2_dof < 1e-20);
    }

    /// A transverse elastic acceleration on the markers comes out as the residual, less its
    /// best-fit line along the lever (which the rigid field absorbs): exactly.
    #[test]
    fn elastic_part_is_the_residual() {
        let l = lever();
        let phi = 0.2;
        let mut sample = rigid(
            &l,
            Vector2::zeros(),
            phi,
            Vector2::zeros(),
            1.3,
            Vector2::new(2.0, 1.0),
            -5.0,
        );
        let s: Vec<f64> = [0.1, 0.3, 0.5, 0.7, 0.9].to_vec();
        let bump: Vec<f64> = s
            .iter()
            .map(|x| 0.8 * (std::f64::consts::PI * x).sin())
            .collect();
        let normal = rot(phi, Vector2::new(0.0, 1.0));
        for (m, b) in sample.iter_mut().zip(&bump) {
            let mk = m.as_mut().unwrap();
            mk.a += normal * *b;
        }
        // The bump less its least-squares line in s.
        let n = s.len() as f64;
        let (ms, mb) = (s.iter().sum::<f64>() / n, bump.iter().sum::<f64>() / n);
        let slope = s
            .iter()
            .zip(&bump)
            .map(|(x, y)| (x - ms) * (y - mb))
            .sum::<f64>()
            / s.iter().map(|x| (x - ms).powi(2)).sum::<f64>();
        let f = l.fit(&sample).unwrap();
        for (i, r) in f.residual.iter().enumerate() {
            let (e, en, _) = r.unwrap();
            let want = bump[i] - (mb + slope * (s[i] - ms));
            assert!((en - want).abs() < 1e-10, "marker {i}: {en} vs {want}");
            assert!((e - normal * want).norm() < 1e-10);
        }
        // chi^2 per degree of freedom: the residual over the markers' sigma (0.5 m/s^2 along
        // the normal, whatever the angle), over 2 x 5 - 3.
        let chi2 = bump
            .iter()
            .enumerate()
            .map(|(i, b)| ((b - (mb + slope * (s[i] - ms))) / 0.5).powi(2))
            .sum::<f64>()
            / 7.0;
        assert!(
            (f.chi2_dof - chi2).abs() < 1e-9 * chi2,
            "{} {chi2}",
            f.chi2_dof
        );
    }

    /// The layout found from the data equals the true one up to a rigid motion, and a hidden
    /// marker is simply left out of the fit.
    #[test]
    fn layout_from_the_data_and_a_hidden_marker() {
        let l = lever();
        let samples: Vec<Vec<Option<MarkerKinematics>>> = (0..20)
            .map(|k| {
                rigid(
                    &l,
                    Vector2::new(0.01 * k as f64, 0.0),
                    0.05 * k as f64,
                    Vector2::zeros(),
                    0.0,
                    Vector2::zeros(),
                    0.0,
                )
            })
            .collect();
        let found = Layout::from_samples(&samples).unwrap();
        let d = |a: &[Vector2<f64>], i: usize, j: usize| (a[i] - a[j]).norm();
        for i in 0..5 {
            for j in 0..5 {
                assert!((d(&found.markers, i, j) - d(&l.markers, i, j)).abs() < 1e-12);
            }
        }
        let mut s = rigid(
            &l,
            Vector2::new(0.1, 0.2),
            1.0,
            Vector2::new(1.0, 0.0),
            2.0,
            Vector2::new(0.0, -9.0),
            3.0,
        );
        s[2] = None;
        let f = l.fit(&s).unwrap();
        assert!(
            f.residual[2].is_none()
                && (f.epsilon - 3.0).abs() < 1e-10
                && (f.omega - 2.0).abs() < 1e-12
        );
    }
}
