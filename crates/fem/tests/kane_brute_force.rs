//! Kane's element matrices against brute force: a prescribed motion r_B(t), phi2(t) and nodal
//! displacements d(t) as polynomials in t; the generalized inertia force of the element
//! evaluated from its definition (Kane: int rho A (partial velocity) . r'' dX, the acceleration
//! differentiated numerically, the integral by quadrature) and from Lagrange's equations
//! (d/dt dT/dd' - dT/dd, numerical derivatives of the kinetic energy), both against
//! [m] d'' + 2 omega [S] d' + (eps [S] - omega^2 [m]) d + [m_O] a_O + eps {q_y} - omega^2 {q_x}.

use flexbench_fem::element::{Field, Section};
use flexbench_fem::quadrature::gauss_legendre;
use flexbench_fem::{ElementKind, ElementMatrices};
use nalgebra::{DVector, Matrix2, Vector2};

const STEEL: Section = Section {
    young: 210e9,
    density: 7850.0,
    area: 1.5e-4,
    inertia: 4.5e-10,
};
const LEN: f64 = 0.09;
const X0: f64 = 0.18;

/// The prescribed motion at time t: origin (m), angle (rad), nodal displacements.
struct Motion {
    n: usize,
}

impl Motion {
    fn origin(&self, t: f64) -> Vector2<f64> {
        Vector2::new(
            0.03 + 0.4 * t - 3.0 * t * t + 5.0 * t.powi(3),
            -0.02 + 0.7 * t + 2.0 * t * t - 4.0 * t.powi(3),
        )
    }
    fn angle(&self, t: f64) -> f64 {
        0.3 + 14.0 * t + 40.0 * t * t - 90.0 * t.powi(3)
    }
    /// Nodal displacements: every degree of freedom its own polynomial (values of about 1e-3
    /// in its unit: m, rad or 1/m).
    fn nodal(&self, t: f64) -> DVector<f64> {
        DVector::from_fn(self.n, |i, _| {
            let a = (i as f64 + 1.0) * 1e-3;
            a * (1.0 + (0.5 + 0.1 * i as f64) * 30.0 * t
                - 400.0 * t * t * (1.0 - 0.2 * (i % 3) as f64)
                + 2000.0 * t.powi(3))
        })
    }
}

fn rot(a: f64) -> Matrix2<f64> {
    Matrix2::new(a.cos(), -a.sin(), a.sin(), a.cos())
}

/// Value of polynomial c (coefficients of xi^0, xi^1, ...) at xi.
fn poly(c: &[f64], xi: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, v| acc * xi + v)
}

/// The shape rows (Nu, Nv) at local xi.
fn shape_rows(kind: ElementKind, xi: f64) -> (DVector<f64>, DVector<f64>) {
    let shapes = kind.shape_functions(LEN);
    let n = shapes.len();
    let nu = DVector::from_iterator(
        n,
        shapes
            .iter()
            .map(|(f, c)| if *f == Field::Axial { poly(c, xi) } else { 0.0 }),
    );
    let nv = DVector::from_iterator(
        n,
        shapes.iter().map(|(f, c)| {
            if *f == Field::Transverse {
                poly(c, xi)
            } else {
                0.0
            }
        }),
    );
    (nu, nv)
}

/// Position of the material point at local xi at time t, bench frame, for nodal vector d.
fn position(kind: ElementKind, m: &Motion, xi: f64, t: f64, d: &DVector<f64>) -> Vector2<f64> {
    let (nu, nv) = shape_rows(kind, xi);
    m.origin(t) + rot(m.angle(t)) * Vector2::new(X0 + xi * LEN + nu.dot(d), nv.dot(d))
}

/// Fourth-order central differences of f at t, first and second derivatives.
fn d1<
    T: std::ops::Sub<Output = T> + std::ops::Add<Output = T> + std::ops::Mul<f64, Output = T> + Clone,
>(
    f: &dyn Fn(f64) -> T,
    t: f64,
    h: f64,
) -> T {
    (f(t - 2.0 * h) * (1.0 / 12.0) - f(t - h) * (8.0 / 12.0) + f(t + h) * (8.0 / 12.0)
        - f(t + 2.0 * h) * (1.0 / 12.0))
        * (1.0 / h)
}
fn d2<
    T: std::ops::Sub<Output = T> + std::ops::Add<Output = T> + std::ops::Mul<f64, Output = T> + Clone,
>(
    f: &dyn Fn(f64) -> T,
    t: f64,
    h: f64,
) -> T {
    (f(t - 2.0 * h) * (-1.0 / 12.0) + f(t - h) * (16.0 / 12.0) - f(t) * (30.0 / 12.0)
        + f(t + h) * (16.0 / 12.0)
        - f(t + 2.0 * h) * (1.0 / 12.0))
        * (1.0 / (h * h))
}

/// The element equation's inertia side from Kane's matrices, at time t.
fn kane_side(kind: ElementKind, m: &Motion, t: f64) -> DVector<f64> {
    let e = ElementMatrices::new(kind, &STEEL, LEN, X0);
    let h = 1e-4;
    let (d, dd, ddd) = (
        m.nodal(t),
        d1(&|s| m.nodal(s), t, h),
        d2(&|s| m.nodal(s), t, h),
    );
    let omega = d1(&|s| m.angle(s), t, h);
    let eps = d2(&|s| m.angle(s), t, h);
    let a_o = rot(m.angle(t)).transpose() * d2(&|s| m.origin(s), t, h);
    &e.m * ddd
        + &e.s * dd * (2.0 * omega)
        + (&e.s * eps - &e.m * (omega * omega)) * &d
        + &e.m_o * DVector::from_column_slice(a_o.as_slice())
        + &e.q_y * eps
        - &e.q_x * (omega * omega)
}

fn rho_a() -> f64 {
    STEEL.density * STEEL.area
}

/// Kane's definition: F_i = int rho A (R [Nu_i, Nv_i]) . r'' dX, r'' by finite differences.
fn brute_kane(kind: ElementKind, m: &Motion, t: f64) -> DVector<f64> {
    let n = kind.dofs();
    let mut f = DVector::zeros(n);
    for (xi, w) in gauss_legendre(8) {
        let acc = d2(&|s| position(kind, m, xi, s, &m.nodal(s)), t, 1e-3);
        let (nu, nv) = shape_rows(kind, xi);
        let r = rot(m.angle(t));
        for i in 0..n {
            let partial = r * Vector2::new(nu[i], nv[i]);
            f[i] += rho_a() * partial.dot(&acc) * w * LEN;
        }
    }
    f
}

/// Lagrange: T(d, d', t) = 1/2 int rho A |r'|^2 dX; F = d/dt dT/dd' - dT/dd, all by finite
/// differences (T is quadratic in d and d', so the inner differences are exact).
fn brute_lagrange(kind: ElementKind, m: &Motion, t: f64) -> DVector<f64> {
    let n = kind.dofs();
    let energy = |d: &DVector<f64>, dd: &DVector<f64>, s: f64| -> f64 {
        gauss_legendre(8)
            .iter()
            .map(|&(xi, w)| {
                let (nu, nv) = shape_rows(kind, xi);
                let om = d1(&|u| m.angle(u), s, 1e-4);
                let r = rot(m.angle(s));
                let local = Vector2::new(X0 + xi * LEN + nu.dot(d), nv.dot(d));
                let vel = d1(&|u| m.origin(u), s, 1e-4)
                    + r * (Vector2::new(-local.y, local.x) * om)
                    + r * Vector2::new(nu.dot(dd), nv.dot(dd));
                0.5 * rho_a() * vel.norm_squared() * w * LEN
            })
            .sum()
    };
    let unit = |i: usize| DVector::from_fn(n, |j, _| if i == j { 1.0 } else { 0.0 });
    let step = 1e-3;
    let p_i = |i: usize, s: f64| -> f64 {
        let (d, dd) = (m.nodal(s), d1(&|u| m.nodal(u), s, 1e-4));
        (energy(&d, &(&dd + unit(i) * step), s) - energy(&d, &(&dd - unit(i) * step), s))
            / (2.0 * step)
    };
    DVector::from_fn(n, |i, _| {
        let dt_p = d1(&|s| p_i(i, s), t, 1e-3);
        let (d, dd) = (m.nodal(t), d1(&|u| m.nodal(u), t, 1e-4));
        let dt_d = (energy(&(&d + unit(i) * step), &dd, t)
            - energy(&(&d - unit(i) * step), &dd, t))
            / (2.0 * step);
        dt_p - dt_d
    })
}

/// Kane's matrices reproduce the definition of the generalized inertia force within 1e-7 of
/// its largest component (the finite differences' error: 4th order in a 1e-3 s step) and
/// Lagrange's equations within 1e-6 (differences of differences), for both elements, at three
/// instants of a motion with omega ~ 14 rad/s, eps ~ 100 rad/s^2, a_B ~ 10 m/s^2.
#[test]
fn kane_matrices_equal_brute_force() {
    for kind in [ElementKind::Frame, ElementKind::Quintic] {
        let m = Motion { n: kind.dofs() };
        for t in [0.0, 0.05, 0.11] {
            let kane = kane_side(kind, &m, t);
            let scale = kane.amax();
            let brute = brute_kane(kind, &m, t);
            assert!(
                (&kane - &brute).amax() < 1e-7 * scale,
                "{kind:?} t {t}: Kane {kane} vs definition {brute}"
            );
            let lagrange = brute_lagrange(kind, &m, t);
            assert!(
                (&kane - &lagrange).amax() < 1e-6 * scale,
                "{kind:?} t {t}: Kane {kane} vs Lagrange {lagrange}"
            );
        }
    }
}
