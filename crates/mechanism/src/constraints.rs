//! Constraint equations in absolute coordinates (Nikravesh, "Computer-Aided Analysis of
//! Mechanical Systems", ch. 3-4; Haug, "Computer Aided Kinematics and Dynamics", ch. 3).
//!
//! With q_i = (x_i, y_i, phi_i) and a body point r_P = r_i + R(phi_i) s:
//! - revolute a-b: Phi = r_a + R_a s_a - r_b - R_b s_b = 0 (2 rows). Differentiating twice,
//!   Phi_q q'' = gamma with gamma = R_a s_a phi_a'^2 - R_b s_b phi_b'^2.
//! - slide of body i along a ground line (origin p0, direction u, normal n = R(pi/2) u):
//!   n . (r_i + R_i s - p0) = 0 and phi_i - phi_0 = 0; gamma = (n . R_i s phi_i'^2, 0).
//!
//! The reactions follow from the multipliers of M q'' + Phi_q^T lambda = Q: the generalized
//! constraint force is -Phi_q^T lambda. For a revolute joint the force of body a on body b is
//! therefore +lambda (bench frame, N); for a slide the normal force of the ground on the body
//! is -lambda_1 (along n) and the reaction couple is -lambda_2 (N m).

use nalgebra::{DMatrix, DVector, Vector2};

use crate::model::{BodyRef, Coordinate, JointKind, Mechanism, PointRef};
use crate::{rot, rot_d, BodyTrig};

/// Position of a point in the bench frame, m.
pub fn point_pos(q: &DVector<f64>, p: &PointRef) -> Vector2<f64> {
    match p.body {
        BodyRef::Ground => p.local,
        BodyRef::Body(i) => body_point(q, i, p.local),
    }
}

/// Bench-frame position of a point `s` (relative to the centroid, local axes) of body `i`, m.
pub fn body_point(q: &DVector<f64>, i: usize, s: Vector2<f64>) -> Vector2<f64> {
    Vector2::new(q[3 * i], q[3 * i + 1]) + rot(q[3 * i + 2], s)
}

/// Bench-frame velocity of point `s` of body `i`, m/s.
pub fn body_point_vel(
    q: &DVector<f64>,
    qd: &DVector<f64>,
    i: usize,
    s: Vector2<f64>,
) -> Vector2<f64> {
    Vector2::new(qd[3 * i], qd[3 * i + 1]) + rot_d(q[3 * i + 2], s) * qd[3 * i + 2]
}

/// Bench-frame acceleration of point `s` of body `i`, m/s^2.
pub fn body_point_acc(
    q: &DVector<f64>,
    qd: &DVector<f64>,
    qdd: &DVector<f64>,
    i: usize,
    s: Vector2<f64>,
) -> Vector2<f64> {
    let phi = q[3 * i + 2];
    let w = qd[3 * i + 2];
    Vector2::new(qdd[3 * i], qdd[3 * i + 1]) + rot_d(phi, s) * qdd[3 * i + 2]
        - rot(phi, s) * (w * w)
}

fn add_point_jac(jac: &mut DMatrix<f64>, row: usize, trig: &BodyTrig, p: &PointRef, sign: f64) {
    if let BodyRef::Body(i) = p.body {
        let d = trig.rot_d(i, p.local);
        jac[(row, 3 * i)] += sign;
        jac[(row + 1, 3 * i + 1)] += sign;
        jac[(row, 3 * i + 2)] += sign * d.x;
        jac[(row + 1, 3 * i + 2)] += sign * d.y;
    }
}

fn point_gamma(q: &DVector<f64>, qd: &DVector<f64>, p: &PointRef) -> Vector2<f64> {
    match p.body {
        BodyRef::Ground => Vector2::zeros(),
        BodyRef::Body(i) => {
            let w = qd[3 * i + 2];
            rot(q[3 * i + 2], p.local) * (w * w)
        }
    }
}

/// The slide's unit direction u and left normal n.
pub fn slide_axes(angle: f64) -> (Vector2<f64>, Vector2<f64>) {
    let u = Vector2::new(angle.cos(), angle.sin());
    (u, Vector2::new(-u.y, u.x))
}

impl Mechanism {
    /// Constraint residuals Phi(q) (m and rad).
    pub fn phi(&self, q: &DVector<f64>) -> DVector<f64> {
        let mut out = DVector::zeros(self.nconstraints());
        let trig = BodyTrig::of(q);
        let pos = |p: &PointRef| match p.body {
            BodyRef::Ground => p.local,
            BodyRef::Body(i) => trig.point(q, i, p.local),
        };
        let mut r = 0;
        for j in &self.joints {
            match &j.kind {
                JointKind::Revolute { a, b } => {
                    let d = pos(a) - pos(b);
                    out[r] = d.x;
                    out[r + 1] = d.y;
                }
                JointKind::Slide {
                    body,
                    point,
                    origin,
                    angle,
                    body_angle,
                } => {
                    let (_, n) = slide_axes(*angle);
                    out[r] = n.dot(&(trig.point(q, *body, *point) - origin));
                    out[r + 1] = q[3 * body + 2] - body_angle;
                }
            }
            r += 2;
        }
        out
    }

    /// Constraint Jacobian Phi_q (nconstraints x ncoords).
    pub fn phi_q(&self, q: &DVector<f64>) -> DMatrix<f64> {
        let mut jac = DMatrix::zeros(self.nconstraints(), self.ncoords());
        let trig = BodyTrig::of(q);
        let mut r = 0;
        for j in &self.joints {
            match &j.kind {
                JointKind::Revolute { a, b } => {
                    add_point_jac(&mut jac, r, &trig, a, 1.0);
                    add_point_jac(&mut jac, r, &trig, b, -1.0);
                }
                JointKind::Slide {
                    body, point, angle, ..
                } => {
                    let (_, n) = slide_axes(*angle);
                    let i = *body;
                    jac[(r, 3 * i)] = n.x;
                    jac[(r, 3 * i + 1)] = n.y;
                    jac[(r, 3 * i + 2)] = n.dot(&trig.rot_d(i, *point));
                    jac[(r + 1, 3 * i + 2)] = 1.0;
                }
            }
            r += 2;
        }
        jac
    }

    /// Right-hand side gamma of the acceleration constraints Phi_q q'' = gamma.
    pub fn gamma(&self, q: &DVector<f64>, qd: &DVector<f64>) -> DVector<f64> {
        let mut out = DVector::zeros(self.nconstraints());
        let mut r = 0;
        for j in &self.joints {
            match &j.kind {
                JointKind::Revolute { a, b } => {
                    let g = point_gamma(q, qd, a) - point_gamma(q, qd, b);
                    out[r] = g.x;
                    out[r + 1] = g.y;
                }
                JointKind::Slide {
                    body, point, angle, ..
                } => {
                    let (_, n) = slide_axes(*angle);
                    let w = qd[3 * body + 2];
                    out[r] = n.dot(&rot(q[3 * body + 2], *point)) * w * w;
                }
            }
            r += 2;
        }
        out
    }
}

impl Coordinate {
    /// The coordinate's value at q (rad or m).
    pub fn value(&self, q: &DVector<f64>) -> f64 {
        match self {
            Coordinate::Angle { body } => q[3 * body + 2],
            Coordinate::PointX { body, point } => body_point(q, *body, *point).x,
            Coordinate::PointY { body, point } => body_point(q, *body, *point).y,
        }
    }
    /// Its gradient with respect to q.
    pub fn gradient(&self, q: &DVector<f64>, n: usize) -> DVector<f64> {
        let mut g = DVector::zeros(n);
        match self {
            Coordinate::Angle { body } => g[3 * body + 2] = 1.0,
            Coordinate::PointX { body, point } => {
                g[3 * body] = 1.0;
                g[3 * body + 2] = rot_d(q[3 * body + 2], *point).x;
            }
            Coordinate::PointY { body, point } => {
                g[3 * body + 1] = 1.0;
                g[3 * body + 2] = rot_d(q[3 * body + 2], *point).y;
            }
        }
        g
    }
    /// Its second time derivative minus gradient . q'' (the velocity-squared part).
    pub fn quadratic(&self, q: &DVector<f64>, qd: &DVector<f64>) -> f64 {
        match self {
            Coordinate::Angle { .. } => 0.0,
            Coordinate::PointX { body, point } | Coordinate::PointY { body, point } => {
                let w = qd[3 * body + 2];
                let c = -rot(q[3 * body + 2], *point) * (w * w);
                if matches!(self, Coordinate::PointX { .. }) {
                    c.x
                } else {
                    c.y
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::file::wind_pump_default;

    /// A body's sine and cosine formed once rotate its points to the same bits as formed at
    /// each point: positions, their derivatives, over angles of every quadrant and large ones.
    #[test]
    fn body_trig_is_rot_to_the_bit() {
        use super::{body_point, BodyTrig};
        use crate::{rot, rot_d};
        use nalgebra::{DVector, Vector2};
        let q = DVector::from_vec(vec![
            0.1, -0.2, 0.3, 1.5, 2.5, 2.9, -0.7, 0.0, -4.1, 3.0, 1.0, 1234.567,
        ]);
        let trig = BodyTrig::of(&q);
        let s = Vector2::new(0.123_456, -0.987_654);
        for i in 0..4 {
            let phi = q[3 * i + 2];
            assert_eq!(trig.rot(i, s), rot(phi, s));
            assert_eq!(trig.rot_d(i, s), rot_d(phi, s));
            assert_eq!(trig.point(&q, i, s), body_point(&q, i, s));
        }
    }

    /// The analytic Jacobian equals central finite differences of Phi (step 1e-6, tolerance
    /// 1e-8: truncation error O(h^2) times second derivatives of order 1).
    #[test]
    fn jacobian_matches_finite_differences() {
        let m = wind_pump_default();
        let q = m.assemble_at(&[0.7, 0.425]).unwrap();
        let jac = m.phi_q(&q);
        let h = 1e-6;
        for c in 0..m.ncoords() {
            let mut qp = q.clone();
            let mut qm = q.clone();
            qp[c] += h;
            qm[c] -= h;
            let fd = (m.phi(&qp) - m.phi(&qm)) / (2.0 * h);
            for r in 0..m.nconstraints() {
                assert!(
                    (fd[r] - jac[(r, c)]).abs() < 1e-8,
                    "({r},{c}) {} vs {}",
                    fd[r],
                    jac[(r, c)]
                );
            }
        }
    }

    /// gamma equals -(d/dt Phi_q) q' computed by finite differences along the motion.
    #[test]
    fn gamma_matches_finite_differences() {
        let m = wind_pump_default();
        let q = m.assemble_at(&[1.3, 0.43]).unwrap();
        let qd = m.velocities_at(&q, &[15.0, 0.2]).unwrap();
        let h = 1e-6;
        let dj = (m.phi_q(&(&q + &qd * h)) - m.phi_q(&(&q - &qd * h))) / (2.0 * h);
        let expect = -(dj * &qd);
        let g = m.gamma(&q, &qd);
        for r in 0..m.nconstraints() {
            assert!(
                (expect[r] - g[r]).abs() < 1e-6,
                "row {r}: {} vs {}",
                expect[r],
                g[r]
            );
        }
    }
}
