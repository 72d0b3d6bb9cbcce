//! One body of the coupled system in a floating frame of reference: a rigid body (no elastic
//! coordinate) or an elastic one.
//!
//! Coordinates p = (R_x, R_y, theta, q_1..q_n): the frame's origin R (bench frame, m), its angle
//! theta (rad) and the elastic coordinates q. A material point at x (body frame, from the frame's
//! origin) is at
//!
//! ```text
//! r = R + A(theta) (x + Phi(x) q)
//! ```
//!
//! Its acceleration is r'' = J p'' + a_v with J = [I, A~I u, A Phi], u = x + Phi q, ~I the
//! rotation by +90 degrees, and a_v = -theta'^2 A u + 2 theta' A ~I Phi q'. The generalized
//! inertia forces int rho J^T r'' dV (Kane's form, seed 000 eqs 10-20 in a floating frame; Shabana,
//! Dynamics of Multibody Systems, ch. 5) give M(p) p'' = Q_v + Q_g + Q_e with the invariants
//! below (docs/flexible.md derives each block):
//!
//! ```text
//! M_RR = m I          M_Rtheta = A ~I s(q)      M_Rq = A S        s(q) = s0 + S q
//! M_thetatheta = J_O + 2 c_a.q + q^T M_qq q     M_thetaq = (c_c + B^T q)^T   M_qq
//! Q_v = ( theta'^2 A s(q) - 2 theta' A ~I S q',  -2 theta' (c_a + M_qq q).q',
//!         theta'^2 (c_a + M_qq q) + 2 theta' B q' )
//! Q_g = ( m g,  g . A ~I s(q),  S^T A^T g )      Q_e = (0, 0, -K q - D q')
//! ```
//!
//! A rigid body is the case n = 0 with its frame at the centroid (s0 = 0, J_O the centroidal
//! inertia).

use std::collections::BTreeMap;

use nalgebra::{DMatrix, DVector, Vector2};

/// The rotation of a body-frame vector by +90 degrees (~I v).
fn perp(v: Vector2<f64>) -> Vector2<f64> {
    Vector2::new(-v.y, v.x)
}

/// A planar rotation by the angle whose (sine, cosine) is `sc`.
fn rotate((s, c): (f64, f64), v: Vector2<f64>) -> Vector2<f64> {
    Vector2::new(c * v.x - s * v.y, s * v.x + c * v.y)
}

/// The inertia and stiffness invariants of a body in its floating frame (body frame, SI).
#[derive(Debug, Clone, PartialEq)]
pub struct Invariants {
    /// Mass m, kg.
    pub mass: f64,
    /// First moment s0 = int rho x dV of the undeformed body about the frame's origin, kg m.
    pub first_moment: Vector2<f64>,
    /// J_O = int rho |x|^2 dV, the undeformed inertia about the frame's origin, kg m^2.
    pub inertia_origin: f64,
    /// S = int rho Phi dV (2 x n), kg.
    pub static_moment: DMatrix<f64>,
    /// c_a = int rho x . Phi dV (n), kg m.
    pub axial_moment: DVector<f64>,
    /// c_c = int rho x cross Phi dV (n), kg m.
    pub cross_moment: DVector<f64>,
    /// M_qq = int rho Phi^T Phi dV (n x n), kg.
    pub mass_qq: DMatrix<f64>,
    /// B_ij = int rho Phi_i cross Phi_j dV (n x n, skew), kg.
    pub gyroscopic: DMatrix<f64>,
    /// Stiffness K (n x n), N/m.
    pub stiffness: DMatrix<f64>,
    /// Damping D (n x n), N s/m.
    pub damping: DMatrix<f64>,
}

impl Invariants {
    /// A rigid body's: mass `mass` (kg) and centroidal inertia `inertia` (kg m^2), frame at the
    /// centroid.
    pub fn rigid(mass: f64, inertia: f64) -> Self {
        Invariants {
            mass,
            first_moment: Vector2::zeros(),
            inertia_origin: inertia,
            static_moment: DMatrix::zeros(2, 0),
            axial_moment: DVector::zeros(0),
            cross_moment: DVector::zeros(0),
            mass_qq: DMatrix::zeros(0, 0),
            gyroscopic: DMatrix::zeros(0, 0),
            stiffness: DMatrix::zeros(0, 0),
            damping: DMatrix::zeros(0, 0),
        }
    }

    /// Number of elastic coordinates n.
    pub fn elastic(&self) -> usize {
        self.mass_qq.nrows()
    }

    /// The invariants in reduced coordinates q = V eta (a modal reduction or any basis change):
    /// each block transformed by V (n x k). The rigid invariants are unchanged.
    pub fn transformed(&self, v: &DMatrix<f64>) -> Invariants {
        let vt = v.transpose();
        Invariants {
            mass: self.mass,
            first_moment: self.first_moment,
            inertia_origin: self.inertia_origin,
            static_moment: &self.static_moment * v,
            axial_moment: &vt * &self.axial_moment,
            cross_moment: &vt * &self.cross_moment,
            mass_qq: &vt * &self.mass_qq * v,
            gyroscopic: &vt * &self.gyroscopic * v,
            stiffness: &vt * &self.stiffness * v,
            damping: &vt * &self.damping * v,
        }
    }
}

/// A named point of a body: its undeformed position and its displacement's shape functions.
#[derive(Debug, Clone, PartialEq)]
pub struct PointShape {
    /// Undeformed position from the frame's origin, body frame, m.
    pub at: Vector2<f64>,
    /// Phi at the point (2 x n): its displacement is Phi q (body frame, m).
    pub phi: DMatrix<f64>,
}

/// A body's state: (sine, cosine) of its angle, its q and its rates.
#[derive(Debug, Clone, Copy)]
pub struct BodyState<'a> {
    /// (sin theta, cos theta).
    pub sc: (f64, f64),
    /// Angular rate theta', rad/s.
    pub w: f64,
    /// Elastic coordinates q.
    pub q: &'a [f64],
    /// Elastic rates q'.
    pub qd: &'a [f64],
}

/// A body of the coupled system.
#[derive(Debug, Clone, PartialEq)]
pub struct FloatingBody {
    /// Its name in the mechanism file.
    pub name: String,
    /// Inertia and stiffness invariants.
    pub inv: Invariants,
    /// Named points.
    pub points: BTreeMap<String, PointShape>,
    /// Offset of the frame's origin from the file's local origin, local frame, m (the centroid
    /// for a rigid body, the beam's `from` point for an elastic beam).
    pub origin: Vector2<f64>,
}

impl FloatingBody {
    /// Number of coordinates (3 + n).
    pub fn ncoords(&self) -> usize {
        3 + self.inv.elastic()
    }

    /// s(q) = s0 + S q, kg m.
    fn moment(&self, q: &[f64]) -> Vector2<f64> {
        let mut s = self.inv.first_moment;
        for (j, qj) in q.iter().enumerate() {
            s.x += self.inv.static_moment[(0, j)] * qj;
            s.y += self.inv.static_moment[(1, j)] * qj;
        }
        s
    }

    /// The mass matrix M(p) ((3 + n) square).
    pub fn mass_matrix(&self, st: &BodyState) -> DMatrix<f64> {
        let n = self.inv.elastic();
        let inv = &self.inv;
        let q = DVector::from_column_slice(st.q);
        let mut m = DMatrix::zeros(3 + n, 3 + n);
        m[(0, 0)] = inv.mass;
        m[(1, 1)] = inv.mass;
        let a_perp_s = rotate(st.sc, perp(self.moment(st.q)));
        let mqq_q = &inv.mass_qq * &q;
        m[(2, 2)] = inv.inertia_origin + 2.0 * inv.axial_moment.dot(&q) + q.dot(&mqq_q);
        for k in 0..2 {
            m[(k, 2)] = a_perp_s[k];
            m[(2, k)] = a_perp_s[k];
        }
        let coupling = &inv.cross_moment + inv.gyroscopic.transpose() * &q;
        for j in 0..n {
            let a_s = rotate(
                st.sc,
                Vector2::new(inv.static_moment[(0, j)], inv.static_moment[(1, j)]),
            );
            for k in 0..2 {
                m[(k, 3 + j)] = a_s[k];
                m[(3 + j, k)] = a_s[k];
            }
            m[(2, 3 + j)] = coupling[j];
            m[(3 + j, 2)] = coupling[j];
        }
        m.view_mut((3, 3), (n, n)).copy_from(&inv.mass_qq);
        m
    }

    /// The forces Q_v + Q_g + Q_e of the module's documentation at the state, gravity `g`
    /// (bench frame, m/s^2).
    pub fn forces(&self, st: &BodyState, g: Vector2<f64>) -> DVector<f64> {
        let n = self.inv.elastic();
        let inv = &self.inv;
        let q = DVector::from_column_slice(st.q);
        let qd = DVector::from_column_slice(st.qd);
        let w = st.w;
        let s = self.moment(st.q);
        let sqd = Vector2::new(
            (inv.static_moment.row(0) * &qd)[0],
            (inv.static_moment.row(1) * &qd)[0],
        );
        let mut f = DVector::zeros(3 + n);
        let fr = rotate(st.sc, s * (w * w) - perp(sqd) * (2.0 * w)) + g * inv.mass;
        f[0] = fr.x;
        f[1] = fr.y;
        let ca_mq = &inv.axial_moment + &inv.mass_qq * &q;
        f[2] = -2.0 * w * ca_mq.dot(&qd) + g.dot(&rotate(st.sc, perp(s)));
        if n > 0 {
            let at_g = rotate((-st.sc.0, st.sc.1), g);
            let fq = ca_mq * (w * w)
                + &inv.gyroscopic * &qd * (2.0 * w)
                + inv.static_moment.transpose() * DVector::from_column_slice(&[at_g.x, at_g.y])
                - &inv.stiffness * &q
                - &inv.damping * &qd;
            f.rows_mut(3, n).copy_from(&fq);
        }
        f
    }

    /// The body point `p` (undeformed at `p.at`, shape `p.phi`): its position from R in bench
    /// axes, A (x + Phi q), m.
    pub fn arm(&self, p: &PointShape, st: &BodyState) -> Vector2<f64> {
        rotate(st.sc, self.local(p, st.q))
    }

    /// x + Phi q of point `p`, body frame, m.
    fn local(&self, p: &PointShape, q: &[f64]) -> Vector2<f64> {
        let mut u = p.at;
        for (j, qj) in q.iter().enumerate() {
            u.x += p.phi[(0, j)] * qj;
            u.y += p.phi[(1, j)] * qj;
        }
        u
    }

    /// The point's Jacobian dr/dp (2 x (3 + n)).
    pub fn point_jacobian(&self, p: &PointShape, st: &BodyState) -> DMatrix<f64> {
        let n = self.inv.elastic();
        let mut j = DMatrix::zeros(2, 3 + n);
        j[(0, 0)] = 1.0;
        j[(1, 1)] = 1.0;
        let d = rotate(st.sc, perp(self.local(p, st.q)));
        j[(0, 2)] = d.x;
        j[(1, 2)] = d.y;
        for c in 0..n {
            let a = rotate(st.sc, Vector2::new(p.phi[(0, c)], p.phi[(1, c)]));
            j[(0, 3 + c)] = a.x;
            j[(1, 3 + c)] = a.y;
        }
        j
    }

    /// The point's acceleration part a_v that does not multiply p'' (bench frame, m/s^2).
    pub fn point_quadratic(&self, p: &PointShape, st: &BodyState) -> Vector2<f64> {
        let w = st.w;
        let u = self.local(p, st.q);
        let mut phi_qd = Vector2::zeros();
        for (c, qd) in st.qd.iter().enumerate() {
            phi_qd.x += p.phi[(0, c)] * qd;
            phi_qd.y += p.phi[(1, c)] * qd;
        }
        rotate(st.sc, -u * (w * w) + perp(phi_qd) * (2.0 * w))
    }

    /// Kinetic energy 1/2 p'^T M p', J (`pd` the body's rates).
    pub fn kinetic_energy(&self, st: &BodyState, pd: &[f64]) -> f64 {
        let v = DVector::from_column_slice(pd);
        0.5 * v.dot(&(self.mass_matrix(st) * &v))
    }

    /// Strain energy 1/2 q^T K q, J.
    pub fn strain_energy(&self, q: &[f64]) -> f64 {
        let q = DVector::from_column_slice(q);
        0.5 * q.dot(&(&self.inv.stiffness * &q))
    }

    /// Gravity's potential -g . (m R + A s(q)), J.
    pub fn gravity_potential(&self, r: Vector2<f64>, st: &BodyState, g: Vector2<f64>) -> f64 {
        -g.dot(&(r * self.inv.mass + rotate(st.sc, self.moment(st.q))))
    }

    /// Power dissipated by the damping, q'^T D q', W.
    pub fn damping_power(&self, qd: &[f64]) -> f64 {
        let v = DVector::from_column_slice(qd);
        v.dot(&(&self.inv.damping * &v))
    }
}

/// Every named point of a file's body followed by `extra` (the markers), local frame, m.
pub(crate) fn named_points<'a>(
    b: &'a flexbench_mechanism::model::Body,
    extra: &'a [(String, Vector2<f64>)],
) -> impl Iterator<Item = (String, Vector2<f64>)> + 'a {
    b.points
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .chain(extra.iter().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Matrix2;

    /// A two-mode elastic body with random invariants: the mass matrix is the Hessian of the
    /// kinetic energy computed point by point (a cloud of point masses), and the forces Q_v
    /// match the Lagrange form d/dt(dT/dp') - dT/dp by finite differences of T.
    /// A point mass: mass, position and its 2 x 2 shape functions.
    type Point = (f64, Vector2<f64>, Matrix2<f64>);

    fn cloud() -> (Vec<Point>, FloatingBody) {
        let pts: Vec<Point> = (0..7)
            .map(|i| {
                let f = i as f64;
                (
                    0.1 + 0.03 * f,
                    Vector2::new(0.05 * f - 0.1, 0.02 * (f * 1.3).sin()),
                    Matrix2::from_fn(|r, c| ((f + 1.0) * (r as f64 + 2.0 * c as f64 + 1.0)).sin()),
                )
            })
            .collect();
        let mut inv = Invariants::rigid(0.0, 0.0);
        inv.static_moment = DMatrix::zeros(2, 2);
        inv.axial_moment = DVector::zeros(2);
        inv.cross_moment = DVector::zeros(2);
        inv.mass_qq = DMatrix::zeros(2, 2);
        inv.gyroscopic = DMatrix::zeros(2, 2);
        inv.stiffness = DMatrix::identity(2, 2) * 3.0;
        inv.damping = DMatrix::zeros(2, 2);
        let cross = |a: Vector2<f64>, b: Vector2<f64>| a.x * b.y - a.y * b.x;
        for (m, x, phi) in &pts {
            inv.mass += m;
            inv.first_moment += x * *m;
            inv.inertia_origin += m * x.norm_squared();
            inv.static_moment += DMatrix::from_column_slice(2, 2, phi.as_slice()) * *m;
            for j in 0..2 {
                let pj = Vector2::new(phi[(0, j)], phi[(1, j)]);
                inv.axial_moment[j] += m * x.dot(&pj);
                inv.cross_moment[j] += m * cross(*x, pj);
                for i in 0..2 {
                    let pi = Vector2::new(phi[(0, i)], phi[(1, i)]);
                    inv.mass_qq[(i, j)] += m * pi.dot(&pj);
                    inv.gyroscopic[(i, j)] += m * cross(pi, pj);
                }
            }
        }
        let body = FloatingBody {
            name: "cloud".into(),
            inv,
            points: BTreeMap::new(),
            origin: Vector2::zeros(),
        };
        (pts, body)
    }

    fn energy(pts: &[Point], p: &[f64], pd: &[f64]) -> f64 {
        let sc = p[2].sin_cos();
        pts.iter()
            .map(|(m, x, phi)| {
                let u = x + phi * Vector2::new(p[3], p[4]);
                let v = Vector2::new(pd[0], pd[1])
                    + rotate(sc, perp(u)) * pd[2]
                    + rotate(sc, phi * Vector2::new(pd[3], pd[4]));
                0.5 * m * v.norm_squared()
            })
            .sum()
    }

    #[test]
    fn mass_matrix_and_velocity_forces_are_those_of_the_point_cloud() {
        let (pts, body) = cloud();
        let p: [f64; 5] = [0.3, -0.2, 0.7, 0.011, -0.02];
        let pd: [f64; 5] = [0.4, 1.1, -2.3, 0.5, 0.8];
        let st = BodyState {
            sc: p[2].sin_cos(),
            w: pd[2],
            q: &p[3..],
            qd: &pd[3..],
        };
        let m = body.mass_matrix(&st);
        // Mass matrix: T is quadratic in p', so M_ij = d2T/dp'_i dp'_j exactly by differences.
        let h = 1e-3;
        for i in 0..5 {
            for j in 0..5 {
                let t = |a: f64, b: f64| {
                    let mut v = pd;
                    v[i] += a;
                    v[j] += b;
                    energy(&pts, &p, &v)
                };
                let fd = (t(h, h) - t(h, -h) - t(-h, h) + t(-h, -h)) / (4.0 * h * h);
                assert!(
                    (fd - m[(i, j)]).abs() < 1e-9,
                    "M[{i},{j}] {fd} vs {}",
                    m[(i, j)]
                );
            }
        }
        // Q_v = dT/dp - dM/dt p' (Lagrange), dM/dt by differences along the motion.
        let f = body.forces(&st, Vector2::zeros())
            + &body
                .inv
                .stiffness
                .clone()
                .insert_rows(0, 3, 0.0)
                .insert_columns(0, 3, 0.0)
                * DVector::from_column_slice(&p);
        let e = 1e-6;
        for i in 0..5 {
            let mut a = p;
            let mut b = p;
            a[i] += e;
            b[i] -= e;
            let dtdp = (energy(&pts, &a, &pd) - energy(&pts, &b, &pd)) / (2.0 * e);
            let mut pa = p;
            let mut pb = p;
            for k in 0..5 {
                pa[k] += e * pd[k];
                pb[k] -= e * pd[k];
            }
            let mat = |pp: &[f64; 5]| {
                body.mass_matrix(&BodyState {
                    sc: pp[2].sin_cos(),
                    w: pd[2],
                    q: &pp[3..],
                    qd: &pd[3..],
                })
            };
            let mdot = (mat(&pa) - mat(&pb)) / (2.0 * e);
            let qv = dtdp - (mdot * DVector::from_column_slice(&pd))[i];
            assert!((qv - f[i]).abs() < 1e-7, "Q_v[{i}] {qv} vs {}", f[i]);
        }
    }
}
