//! The loads on the lever at one instant, from the measurement (stage 5's motion and liaison
//! forces) or from a prescribed rigid motion.
//!
//! In the lever frame (origin B, x along B -> C'), a point of the undeformed axis at X has the
//! rigid acceleration a(X) = a_O + eps J (X, 0) - omega^2 (X, 0) = (a_Ox - omega^2 X,
//! a_Oy + eps X). The equation's right-hand side (docs/fem.md) is
//!
//! ```text
//! {q_liaison} + [M_O] (g_L - a_O) - eps {Q_y} + omega^2 {Q_x}
//! ```
//!
//! and the axial force follows by statics of the part [X, L] (d'Alembert, tension positive):
//!
//! ```text
//! N(X) = F_Cx + rho A ((g_x - a_Ox) (L - X) + omega^2 (L^2 - X^2) / 2)
//! ```
//!
//! which equals -F_Bx at X = 0 exactly when the liaison forces balance the lever's rigid
//! motion: the stage-5/stage-6 contract ([`LeverInstant::rigid_balance`]).

use nalgebra::{DVector, Matrix2, Vector2};

use crate::assembly::{GlobalMatrices, Mesh};
use crate::element::Field;

/// The lever's rigid motion and end loads at one instant (bench frame, SI), as the inverse
/// dynamics gives them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeverInstant {
    /// Time, s.
    pub t: f64,
    /// Angle phi2 of B -> C' from the bench's X axis, rad.
    pub phi: f64,
    /// Angular velocity omega2, rad/s.
    pub omega: f64,
    /// Angular acceleration epsilon2, rad/s^2.
    pub epsilon: f64,
    /// Acceleration of B, m/s^2, bench frame.
    pub a_b: Vector2<f64>,
    /// Force of the crank on the lever at B, N, bench frame.
    pub force_b: Vector2<f64>,
    /// Force of the rocker on the lever at C', N, bench frame.
    pub force_c: Vector2<f64>,
    /// Gravity, m/s^2, bench frame.
    pub gravity: Vector2<f64>,
}

/// Rotation by angle a (rad), local to bench.
fn rotation(a: f64) -> Matrix2<f64> {
    Matrix2::new(a.cos(), -a.sin(), a.sin(), a.cos())
}

impl LeverInstant {
    /// A prescribed rigid motion in the lever frame (no liaison forces, no gravity): constant
    /// omega and eps and the origin's acceleration a_O (lever frame), for checks against
    /// published rotating-beam results.
    pub fn prescribed(omega: f64, epsilon: f64, a_o: Vector2<f64>) -> Self {
        LeverInstant {
            t: 0.0,
            phi: 0.0,
            omega,
            epsilon,
            a_b: a_o,
            force_b: Vector2::zeros(),
            force_c: Vector2::zeros(),
            gravity: Vector2::zeros(),
        }
    }

    /// The acceleration of B (m/s^2, bench frame) from the lever centroid's `a_g` and the
    /// lever's angle, omega and eps: B = G - R c, c the centroid in the lever frame (m), so
    /// a_B = a_G - (eps J - omega^2)(R c).
    pub fn origin_acceleration(
        a_g: Vector2<f64>,
        phi: f64,
        omega: f64,
        epsilon: f64,
        centroid: Vector2<f64>,
    ) -> Vector2<f64> {
        let rc = rotation(phi) * centroid;
        a_g - Vector2::new(-rc.y, rc.x) * epsilon + rc * (omega * omega)
    }

    /// A bench-frame vector in the lever frame.
    pub fn to_lever(&self, v: &Vector2<f64>) -> Vector2<f64> {
        rotation(self.phi).transpose() * v
    }

    /// The axial force N(X) in the lever, N (tension positive), X the lever coordinate (m), by
    /// statics of the part [X, L] with its distributed inertia and gravity (module docs).
    pub fn axial_force(&self, mesh: &Mesh, x: f64) -> f64 {
        let [a0, a1, a2] = self.axial_polynomial(mesh);
        a0 + x * (a1 + x * a2)
    }

    /// The axial force as the polynomial N(X) = n0 + n1 X + n2 X^2 (N, N/m, N/m^2): with
    /// c = g_x - a_Ox, N = F_Cx + rho A (c (L - X) + omega^2 (L^2 - X^2) / 2).
    pub fn axial_polynomial(&self, mesh: &Mesh) -> [f64; 3] {
        let l = mesh.lever.length;
        let ra = mesh.lever.line_density();
        let (a_o, g, f_c) = (
            self.to_lever(&self.a_b),
            self.to_lever(&self.gravity),
            self.to_lever(&self.force_c),
        );
        let (c, w2) = (g.x - a_o.x, self.omega * self.omega);
        [
            f_c.x + ra * (c * l + w2 * l * l / 2.0),
            -ra * c,
            -ra * w2 / 2.0,
        ]
    }

    /// The rigid motion's load on the free lever, N (generalized): [M_O] (g_L - a_O) -
    /// eps {Q_y} + omega^2 {Q_x}.
    pub fn rigid_load(&self, g: &GlobalMatrices) -> DVector<f64> {
        let (a_o, grav) = (self.to_lever(&self.a_b), self.to_lever(&self.gravity));
        let rel = grav - a_o;
        &g.m_o * DVector::from_column_slice(rel.as_slice()) - &g.q_y * self.epsilon
            + &g.q_x * (self.omega * self.omega)
    }

    /// The liaison forces at B and C' as nodal loads (lever frame, on u and v of the end nodes).
    pub fn liaison_load(&self, mesh: &Mesh) -> DVector<f64> {
        let mut f = DVector::zeros(mesh.dofs());
        for (node, force) in [(0, self.force_b), (mesh.elements, self.force_c)] {
            let fl = self.to_lever(&force);
            if let (Some(u), Some(v)) = (
                mesh.dof_of(node, Field::Axial, 0),
                mesh.dof_of(node, Field::Transverse, 0),
            ) {
                f[u] += fl.x;
                f[v] += fl.y;
            }
        }
        f
    }

    /// The lever's rigid-body balance: the whole right-hand side (liaison plus rigid-motion
    /// loads) projected on the three rigid-body modes (u = 1: force along the lever, N; v = 1:
    /// across it, N; v = X: moment about B, N m), and the scale to judge them by (the largest
    /// of the terms that enter, N and N m). Zero when the liaison forces are those of the
    /// inverse dynamics with the same lever mass: the stage-5/stage-6 contract.
    pub fn rigid_balance(&self, mesh: &Mesh, g: &GlobalMatrices) -> ([f64; 3], f64) {
        let rigid = self.rigid_load(g);
        let liaison = self.liaison_load(mesh);
        let l = mesh.lever.length;
        let modes: Vec<DVector<f64>> = vec![
            mode_of(mesh, &|f, o, _| {
                if f == Field::Axial && o == 0 {
                    1.0
                } else {
                    0.0
                }
            }),
            mode_of(mesh, &|f, o, _| {
                if f == Field::Transverse && o == 0 {
                    1.0
                } else {
                    0.0
                }
            }),
            mode_of(mesh, &|f, o, x| {
                if f == Field::Transverse {
                    [x, 1.0, 0.0].get(o).copied().unwrap_or(0.0)
                } else {
                    0.0
                }
            }),
        ];
        let mut out = [0.0; 3];
        let mut scale: f64 = 0.0;
        for (i, m) in modes.iter().enumerate() {
            let (a, b) = (m.dot(&rigid), m.dot(&liaison));
            out[i] = a + b;
            let lever_arm = if i == 2 { 1.0 / l } else { 1.0 };
            scale = scale.max(a.abs() * lever_arm).max(b.abs() * lever_arm);
        }
        (out, scale)
    }
}

/// The nodal vector of a displacement field given by its value and derivatives at each node:
/// `f(field, derivative order, X)`.
pub fn mode_of(mesh: &Mesh, f: &dyn Fn(Field, usize, f64) -> f64) -> DVector<f64> {
    let xs = mesh.node_positions();
    let nd = mesh.kind.node_dofs();
    DVector::from_iterator(
        mesh.dofs(),
        xs.iter()
            .flat_map(|&x| nd.iter().map(move |&(fi, o)| f(fi, o, x))),
    )
}

/// The largest relative residual of the lever's rigid-body balance (the rigid modes' share of
/// the loads, which the liaison forces should cancel) over the instants.
pub fn worst_rigid_balance(
    instants: &[LeverInstant],
    mesh: &Mesh,
    g: &crate::assembly::GlobalMatrices,
) -> f64 {
    instants
        .iter()
        .map(|inst| {
            let (r, scale) = inst.rigid_balance(mesh, g);
            r.iter().fold(0.0, |a: f64, v| a.max(v.abs())) / scale.max(1e-300)
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::ElementKind;

    fn mesh(kind: ElementKind) -> Mesh {
        crate::bench_mesh(kind, 10)
    }

    /// A lever spinning about B at constant omega, free at C': N(X) = rho A omega^2 (L^2 - X^2) / 2,
    /// the textbook centrifugal tension, and N(0) = -F_Bx when F_B is the hub's pull
    /// (-rho A omega^2 L^2 / 2 along x); the rigid balance then closes to rounding.
    #[test]
    fn spinning_lever_tension() {
        let m = mesh(ElementKind::Quintic);
        let omega = 15.0;
        let ra = m.lever.line_density();
        let l = m.lever.length;
        let mut inst = LeverInstant::prescribed(omega, 0.0, Vector2::zeros());
        inst.force_b = Vector2::new(-ra * omega * omega * l * l / 2.0, 0.0);
        for x in [0.0, 0.1, 0.3, 0.45] {
            let want = ra * omega * omega * (l * l - x * x) / 2.0;
            assert!((inst.axial_force(&m, x) - want).abs() < 1e-12 * want.abs().max(1.0));
        }
        let g = m.assemble();
        let (r, scale) = inst.rigid_balance(&m, &g);
        assert!(
            r.iter().all(|v| v.abs() < 1e-12 * scale),
            "{r:?} of {scale}"
        );
    }

    /// The load of a uniform origin acceleration a_O = (0, a) equals the distributed load
    /// -rho A a on every element, and that of eps the distributed load -rho A eps X.
    #[test]
    fn rigid_load_is_the_distributed_inertia() {
        for kind in [ElementKind::Frame, ElementKind::Quintic] {
            let m = mesh(kind);
            let g = m.assemble();
            let ra = m.lever.line_density();
            let inst = LeverInstant::prescribed(0.0, 120.0, Vector2::new(3.0, -7.0));
            let want = m.distributed_load(&|x| (-ra * 3.0, -ra * (-7.0 + 120.0 * x)));
            assert!((inst.rigid_load(&g) - &want).amax() < 1e-13 * want.amax());
        }
    }
}
