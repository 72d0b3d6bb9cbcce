//! One element's equations of motion in its rigid motion by four formalisms of analytical
//! mechanics, each from its own starting quantity and its own code path (seed 004 sections
//! 4.1-4.5; seed 000 Table 1; seed 001 section 4):
//!
//! - **Kane**: the partial velocities dv/d(delta') (the shape functions N, lever frame) dotted
//!   with each point's acceleration, integrated: Q = int rho A N^T a dx.
//! - **Gibbs-Appell**: the acceleration energy S = 1/2 int rho A a.a dx, differentiated with
//!   respect to delta'' (forward dual numbers, one direction a coordinate).
//! - **Lagrange**: the kinetic energy T(delta, delta', t) in the lever frame (the frame's velocity
//!   and angular velocity explicit functions of time), d/dt(dT/d(delta')) - dT/d(delta) by
//!   hyper-dual numbers: one second derivative a coordinate along the motion's direction, one
//!   first derivative a coordinate.
//! - **Maggi**: the kinetic energy in redundant inertial coordinates q = (r_O, phi, delta) with
//!   no explicit time, Lagrange's expression for every q, then projected on the independent
//!   speeds u = delta' (q' = C u + c(t), C = [0; 0; I]): C^T (d/dt dT/dq' - dT/dq).
//!
//! The point's acceleration, lever frame: a = a_O + eps z x rho - omega^2 rho +
//! 2 omega z x rho' + rho'', with rho = (X + u, v), (u, v) = N delta. Every path returns the generalized inertia force
//! Q (the element's equations read Q + [k] delta = {q_ext}); they agree to rounding
//! (`tests::the_four_formalisms_agree`).

use nalgebra::{DVector, Vector2};

use crate::element::{values, ElementKind, Section, QUADRATURE_POINTS};
use crate::quadrature::gauss_legendre;

/// The four formalisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formalism {
    /// Lagrange's equations from the kinetic energy.
    Lagrange,
    /// Gibbs-Appell's equations from the acceleration energy.
    GibbsAppell,
    /// Maggi's equations: Lagrange in redundant coordinates projected on independent speeds.
    Maggi,
    /// Kane's equations: partial velocities dotted with accelerations.
    Kane,
}

impl Formalism {
    /// All four, in the order of the cost table.
    pub const ALL: [Formalism; 4] = [
        Formalism::Lagrange,
        Formalism::GibbsAppell,
        Formalism::Maggi,
        Formalism::Kane,
    ];

    /// Name for tables.
    pub fn name(&self) -> &'static str {
        match self {
            Formalism::Lagrange => "Lagrange",
            Formalism::GibbsAppell => "Gibbs-Appell",
            Formalism::Maggi => "Maggi",
            Formalism::Kane => "Kane",
        }
    }

    /// Differentiations one element's equations take by this path (n the element's degrees of
    /// freedom): Lagrange n second derivatives along the motion and n first ones; Gibbs-Appell n
    /// first derivatives of S; Maggi the Lagrange count over the n + 3 redundant coordinates;
    /// Kane none (the partial velocities are the shape functions).
    pub fn differentiations(&self, n: usize) -> usize {
        match self {
            Formalism::Lagrange => 2 * n,
            Formalism::GibbsAppell => n,
            Formalism::Maggi => 2 * (n + 3),
            Formalism::Kane => 0,
        }
    }
}

/// The lever frame's rigid motion and an element's nodal state at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementState {
    /// Lever angle phi, rad.
    pub phi: f64,
    /// Angular velocity omega, rad/s.
    pub omega: f64,
    /// Angular acceleration epsilon, rad/s^2.
    pub epsilon: f64,
    /// Velocity of the frame's origin, bench frame, m/s.
    pub v_o: Vector2<f64>,
    /// Acceleration of the frame's origin, bench frame, m/s^2.
    pub a_o: Vector2<f64>,
    /// Nodal coordinates delta (lever frame, the element's units).
    pub delta: DVector<f64>,
    /// Their rates.
    pub delta_d: DVector<f64>,
    /// Their second derivatives.
    pub delta_dd: DVector<f64>,
}

/// An element of `kind` and length `len` (m) starting at lever coordinate `x0` (m): its
/// quadrature points (X, weight * rho A, Nu, Nv).
#[derive(Debug, Clone)]
pub struct ElementPoints {
    points: Vec<(f64, f64, DVector<f64>, DVector<f64>)>,
}

impl ElementPoints {
    /// The quadrature of one element.
    pub fn new(kind: ElementKind, section: &Section, len: f64, x0: f64) -> Self {
        let shapes = kind.shape_functions(len);
        let ra = section.density * section.area;
        let points = gauss_legendre(QUADRATURE_POINTS)
            .into_iter()
            .map(|(xi, w)| {
                let (nu, nv, _, _) = values(&shapes, xi, len);
                (x0 + xi * len, w * len * ra, nu, nv)
            })
            .collect();
        ElementPoints { points }
    }

    /// The generalized inertia force Q by `f`'s path.
    pub fn inertia_forces(&self, f: Formalism, st: &ElementState) -> DVector<f64> {
        match f {
            Formalism::Kane => self.kane(st),
            Formalism::GibbsAppell => self.gibbs_appell(st),
            Formalism::Lagrange => self.lagrange(st),
            Formalism::Maggi => self.maggi(st),
        }
    }

    fn kane(&self, st: &ElementState) -> DVector<f64> {
        let n = st.delta.len();
        let (s, c) = st.phi.sin_cos();
        let ao = Vector2::new(c * st.a_o.x + s * st.a_o.y, -s * st.a_o.x + c * st.a_o.y);
        let (w, e) = (st.omega, st.epsilon);
        let mut q = DVector::zeros(n);
        for (x, m, nu, nv) in &self.points {
            let r = Vector2::new(x + nu.dot(&st.delta), nv.dot(&st.delta));
            let rd = Vector2::new(nu.dot(&st.delta_d), nv.dot(&st.delta_d));
            let rdd = Vector2::new(nu.dot(&st.delta_dd), nv.dot(&st.delta_dd));
            let a = ao + Vector2::new(-r.y, r.x) * e - r * (w * w)
                + Vector2::new(-rd.y, rd.x) * (2.0 * w)
                + rdd;
            q += (nu * a.x + nv * a.y) * *m;
        }
        q
    }

    fn gibbs_appell(&self, st: &ElementState) -> DVector<f64> {
        let n = st.delta.len();
        let (s, c) = st.phi.sin_cos();
        let ao = [c * st.a_o.x + s * st.a_o.y, -s * st.a_o.x + c * st.a_o.y];
        let (w, e) = (st.omega, st.epsilon);
        let mut q = DVector::zeros(n);
        for j in 0..n {
            // S with delta'' seeded along coordinate j: its derivative part is dS/d(delta''_j).
            let mut energy = Dual::cst(0.0);
            for (x, m, nu, nv) in &self.points {
                let r = [x + nu.dot(&st.delta), nv.dot(&st.delta)];
                let rd = [nu.dot(&st.delta_d), nv.dot(&st.delta_d)];
                let rdd = [
                    Dual::new(nu.dot(&st.delta_dd), nu[j]),
                    Dual::new(nv.dot(&st.delta_dd), nv[j]),
                ];
                let ax = rdd[0] + Dual::cst(ao[0] - e * r[1] - w * w * r[0] - 2.0 * w * rd[1]);
                let ay = rdd[1] + Dual::cst(ao[1] + e * r[0] - w * w * r[1] + 2.0 * w * rd[0]);
                energy = energy + (ax * ax + ay * ay) * Dual::cst(0.5 * m);
            }
            q[j] = energy.d;
        }
        q
    }

    /// T in the lever frame: 1/2 int rho A |v_O + omega z x rho + rho'|^2 dx, every input a
    /// hyper-dual number.
    fn lever_energy(
        &self,
        d: &[HyperDual],
        dd: &[HyperDual],
        vo: [HyperDual; 2],
        w: HyperDual,
    ) -> HyperDual {
        let mut t = HyperDual::cst(0.0);
        for (x, m, nu, nv) in &self.points {
            let (mut rx, mut ry) = (HyperDual::cst(*x), HyperDual::cst(0.0));
            let (mut rdx, mut rdy) = (HyperDual::cst(0.0), HyperDual::cst(0.0));
            for k in 0..d.len() {
                rx = rx + d[k] * nu[k];
                ry = ry + d[k] * nv[k];
                rdx = rdx + dd[k] * nu[k];
                rdy = rdy + dd[k] * nv[k];
            }
            let vx = vo[0] - w * ry + rdx;
            let vy = vo[1] + w * rx + rdy;
            t = t + (vx * vx + vy * vy) * (0.5 * m);
        }
        t
    }

    fn lagrange(&self, st: &ElementState) -> DVector<f64> {
        let n = st.delta.len();
        let (s, c) = st.phi.sin_cos();
        let vo = [c * st.v_o.x + s * st.v_o.y, -s * st.v_o.x + c * st.v_o.y];
        let ao = [c * st.a_o.x + s * st.a_o.y, -s * st.a_o.x + c * st.a_o.y];
        // d/dt of the lever-frame components of v_O: a_O - omega z x v_O.
        let vod = [ao[0] + st.omega * vo[1], ao[1] - st.omega * vo[0]];
        let mut q = DVector::zeros(n);
        for j in 0..n {
            // d/dt dT/d(delta'_j): e1 along delta'_j, e2 along the motion (delta', delta'',
            // the frame's velocity rate and epsilon).
            let d: Vec<HyperDual> = (0..n)
                .map(|k| HyperDual::new(st.delta[k], 0.0, st.delta_d[k]))
                .collect();
            let dd: Vec<HyperDual> = (0..n)
                .map(|k| {
                    HyperDual::new(
                        st.delta_d[k],
                        if k == j { 1.0 } else { 0.0 },
                        st.delta_dd[k],
                    )
                })
                .collect();
            let v = [
                HyperDual::new(vo[0], 0.0, vod[0]),
                HyperDual::new(vo[1], 0.0, vod[1]),
            ];
            let w = HyperDual::new(st.omega, 0.0, st.epsilon);
            let ddt = self.lever_energy(&d, &dd, v, w).e12;
            // dT/d(delta_j).
            let d: Vec<HyperDual> = (0..n)
                .map(|k| HyperDual::new(st.delta[k], if k == j { 1.0 } else { 0.0 }, 0.0))
                .collect();
            let dd: Vec<HyperDual> = (0..n).map(|k| HyperDual::cst(st.delta_d[k])).collect();
            let v = [HyperDual::cst(vo[0]), HyperDual::cst(vo[1])];
            let dtd = self.lever_energy(&d, &dd, v, HyperDual::cst(st.omega)).e1;
            q[j] = ddt - dtd;
        }
        q
    }

    /// T in inertial coordinates q = (x_O, y_O, phi, delta): 1/2 int rho A |r_O' + phi' A ~I rho
    /// + A rho'|^2 dx (bench frame), every input a hyper-dual number.
    fn inertial_energy(&self, q: &[HyperDual], qd: &[HyperDual]) -> HyperDual {
        let (s, c) = (q[2].sin(), q[2].cos());
        let mut t = HyperDual::cst(0.0);
        for (x, m, nu, nv) in &self.points {
            let (mut rx, mut ry) = (HyperDual::cst(*x), HyperDual::cst(0.0));
            let (mut rdx, mut rdy) = (HyperDual::cst(0.0), HyperDual::cst(0.0));
            for k in 3..q.len() {
                rx = rx + q[k] * nu[k - 3];
                ry = ry + q[k] * nv[k - 3];
                rdx = rdx + qd[k] * nu[k - 3];
                rdy = rdy + qd[k] * nv[k - 3];
            }
            // A ~I rho = A (-ry, rx); A rho'.
            let (px, py) = (-ry, rx);
            let vx = qd[0] + qd[2] * (c * px - s * py) + (c * rdx - s * rdy);
            let vy = qd[1] + qd[2] * (s * px + c * py) + (s * rdx + c * rdy);
            t = t + (vx * vx + vy * vy) * (0.5 * m);
        }
        t
    }

    fn maggi(&self, st: &ElementState) -> DVector<f64> {
        let n = st.delta.len();
        let nq = n + 3;
        let q0: Vec<f64> = [0.0, 0.0, st.phi]
            .into_iter()
            .chain(st.delta.iter().copied())
            .collect();
        let qd0: Vec<f64> = [st.v_o.x, st.v_o.y, st.omega]
            .into_iter()
            .chain(st.delta_d.iter().copied())
            .collect();
        let qdd0: Vec<f64> = [st.a_o.x, st.a_o.y, st.epsilon]
            .into_iter()
            .chain(st.delta_dd.iter().copied())
            .collect();
        // Lagrange's expression for every redundant coordinate.
        let mut full = DVector::zeros(nq);
        for i in 0..nq {
            let unit = |k: usize| if k == i { 1.0 } else { 0.0 };
            let q: Vec<HyperDual> = (0..nq)
                .map(|k| HyperDual::new(q0[k], 0.0, qd0[k]))
                .collect();
            let qd: Vec<HyperDual> = (0..nq)
                .map(|k| HyperDual::new(qd0[k], unit(k), qdd0[k]))
                .collect();
            let ddt = self.inertial_energy(&q, &qd).e12;
            let q: Vec<HyperDual> = (0..nq)
                .map(|k| HyperDual::new(q0[k], unit(k), 0.0))
                .collect();
            let qd: Vec<HyperDual> = (0..nq).map(|k| HyperDual::cst(qd0[k])).collect();
            full[i] = ddt - self.inertial_energy(&q, &qd).e1;
        }
        // Maggi's projection on the independent speeds u = delta': C = [0; 0; I].
        let mut cmat = nalgebra::DMatrix::zeros(nq, n);
        for k in 0..n {
            cmat[(k + 3, k)] = 1.0;
        }
        cmat.transpose() * full
    }
}

/// A dual number a + b e (e^2 = 0): a value and one directional derivative.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Dual {
    v: f64,
    d: f64,
}

impl Dual {
    fn new(v: f64, d: f64) -> Self {
        Dual { v, d }
    }
    fn cst(v: f64) -> Self {
        Dual { v, d: 0.0 }
    }
}

impl std::ops::Add for Dual {
    type Output = Dual;
    fn add(self, o: Dual) -> Dual {
        Dual::new(self.v + o.v, self.d + o.d)
    }
}

impl std::ops::Mul for Dual {
    type Output = Dual;
    fn mul(self, o: Dual) -> Dual {
        Dual::new(self.v * o.v, self.v * o.d + self.d * o.v)
    }
}

/// A hyper-dual number a + b e1 + c e2 + d e1 e2 (e1^2 = e2^2 = 0): the value, two directional
/// derivatives and the mixed second derivative, all exact (Fike and Alonso 2011).
#[derive(Debug, Clone, Copy, PartialEq)]
struct HyperDual {
    v: f64,
    e1: f64,
    e2: f64,
    e12: f64,
}

impl HyperDual {
    fn new(v: f64, e1: f64, e2: f64) -> Self {
        HyperDual {
            v,
            e1,
            e2,
            e12: 0.0,
        }
    }
    fn cst(v: f64) -> Self {
        HyperDual::new(v, 0.0, 0.0)
    }
    /// f(self) for f with f(v) = f0, f'(v) = f1, f''(v) = f2.
    fn chain(self, f0: f64, f1: f64, f2: f64) -> Self {
        HyperDual {
            v: f0,
            e1: f1 * self.e1,
            e2: f1 * self.e2,
            e12: f1 * self.e12 + f2 * self.e1 * self.e2,
        }
    }
    fn sin(self) -> Self {
        let (s, c) = self.v.sin_cos();
        self.chain(s, c, -s)
    }
    fn cos(self) -> Self {
        let (s, c) = self.v.sin_cos();
        self.chain(c, -s, -c)
    }
}

impl std::ops::Add for HyperDual {
    type Output = HyperDual;
    fn add(self, o: HyperDual) -> HyperDual {
        HyperDual {
            v: self.v + o.v,
            e1: self.e1 + o.e1,
            e2: self.e2 + o.e2,
            e12: self.e12 + o.e12,
        }
    }
}

impl std::ops::Sub for HyperDual {
    type Output = HyperDual;
    fn sub(self, o: HyperDual) -> HyperDual {
        HyperDual {
            v: self.v - o.v,
            e1: self.e1 - o.e1,
            e2: self.e2 - o.e2,
            e12: self.e12 - o.e12,
        }
    }
}

impl std::ops::Neg for HyperDual {
    type Output = HyperDual;
    fn neg(self) -> HyperDual {
        HyperDual {
            v: -self.v,
            e1: -self.e1,
            e2: -self.e2,
            e12: -self.e12,
        }
    }
}

impl std::ops::Mul for HyperDual {
    type Output = HyperDual;
    fn mul(self, o: HyperDual) -> HyperDual {
        HyperDual {
            v: self.v * o.v,
            e1: self.v * o.e1 + self.e1 * o.v,
            e2: self.v * o.e2 + self.e2 * o.v,
            e12: self.v * o.e12 + self.e1 * o.e2 + self.e2 * o.e1 + self.e12 * o.v,
        }
    }
}

impl std::ops::Mul<f64> for HyperDual {
    type Output = HyperDual;
    fn mul(self, k: f64) -> HyperDual {
        HyperDual {
            v: self.v * k,
            e1: self.e1 * k,
            e2: self.e2 * k,
            e12: self.e12 * k,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section() -> Section {
        Section {
            young: 210e9,
            density: 7850.0,
            area: 1.5e-4,
            inertia: 4.5e-10,
        }
    }

    /// A pseudo-random state (a fixed LCG: the test is reproducible).
    fn state(n: usize, seed: u64) -> ElementState {
        let mut s = seed;
        let mut r = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let mut vec = |scale: f64| DVector::from_fn(n, |_, _| r() * scale);
        let (delta, delta_d, delta_dd) = (vec(1e-3), vec(0.1), vec(50.0));
        let mut r2 = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        ElementState {
            phi: r2() * 3.0,
            omega: r2() * 20.0,
            epsilon: r2() * 300.0,
            v_o: Vector2::new(r2(), r2()),
            a_o: Vector2::new(r2() * 30.0, r2() * 30.0),
            delta,
            delta_d,
            delta_dd,
        }
    }

    /// On random element states of both kinds, the four paths give the same Q to 1e-12 of
    /// its size.
    #[test]
    fn the_four_formalisms_agree() {
        for kind in [ElementKind::Frame, ElementKind::Quintic] {
            let el = ElementPoints::new(kind, &section(), 0.045, 0.09);
            for seed in 1..=20 {
                let st = state(kind.dofs(), seed);
                let kane = el.inertia_forces(Formalism::Kane, &st);
                for f in [
                    Formalism::Lagrange,
                    Formalism::GibbsAppell,
                    Formalism::Maggi,
                ] {
                    let q = el.inertia_forces(f, &st);
                    let rel = (&q - &kane).amax() / kane.amax();
                    assert!(
                        rel < 1e-12,
                        "{kind} seed {seed}: {} differs from Kane by {rel:e}",
                        f.name()
                    );
                }
            }
        }
    }

    /// Kane's Q is the FEM stage's matrix form of seed 001 eq 14 (docs/fem.md) for a frame at
    /// rest in translation: [m] delta'' + 2 omega [S] delta' + (eps [S] - omega^2 [m]) delta +
    /// eps {q_y} - omega^2 {q_x}, with [S] this module's skew coupling.
    #[test]
    fn kane_is_the_element_matrices_form() {
        let kind = ElementKind::Quintic;
        let el = ElementPoints::new(kind, &section(), 0.045, 0.09);
        let mats = crate::element::ElementMatrices::new(kind, &section(), 0.045, 0.09);
        let mut st = state(kind.dofs(), 7);
        st.a_o = Vector2::zeros();
        let (w, e) = (st.omega, st.epsilon);
        let q = el.inertia_forces(Formalism::Kane, &st);
        let matrix = &mats.m * &st.delta_dd
            + &mats.s * &st.delta_d * (2.0 * w)
            + (&mats.s * e - &mats.m * (w * w)) * &st.delta
            + &mats.q_y * e
            - &mats.q_x * (w * w);
        let rel = (&q - &matrix).amax() / q.amax();
        assert!(rel < 1e-12, "{rel:e}");
    }
}
