//! The lever as a plane-stress plate (seed 002) along the motion cycle: at each instant the
//! symmetric problem ([K] + [K_g(sigma_0)] - omega^2 [M]) phi = lambda [M] phi, the plate's
//! counterpart of the beam's ([`crate::cycle`]), pinned at the mid-height points of its ends.
//!
//! The beam's geometric stiffness comes from its axial force N(X) by statics
//! ([`LeverInstant::axial_polynomial`]). The plate's comes from its whole in-plane prestress
//! sigma_0 (axial, bending and shear stresses), by a static solve of the plate under the
//! instant's loads: the liaison force at C' and the rigid motion's inertia and gravity,
//! with the plate held at B (u, v) and C' (v) -- statically determinate, so the supports carry
//! nothing when the liaison forces balance the rigid motion (the stage contract), and a load on
//! a held degree of freedom (F_B, the y part of F_C') stresses nothing. The prestress's
//! second-order strain energy 1/2 int t sigma_0:(grad u^T grad u) dA gives
//!
//! ```text
//! [k_g] = int t G^T S_0 G dA  on u and on v alike,  G = [dN/dx; dN/dy],  S_0 = [[s_xx, s_xy], [s_xy, s_yy]]
//! ```
//!
//! (Cook, Malkus, Plesha and Witt, Concepts and Applications of Finite Element Analysis, 4th
//! ed., sec. 18.3). The prestress is linear in five load coefficients of the instant (lever
//! frame): F_C'x, (g - a_O)_x, (g - a_O)_y, epsilon and omega^2, so [K_g] is formed once per
//! coefficient and each instant's is their sum.

use nalgebra::{DMatrix, DVector, Vector2};

use crate::loads::LeverInstant;
use crate::modal::Modes;
use crate::plane::{restrict, PlaneMaterial, PlateMatrices, PlateMesh, QuadPoint};
use crate::subspace::ModeFollower;
use crate::FemError;

/// The largest relative residual the plate's subspace iteration accepts: the plate's stiffest
/// mode (through its depth) lies near 1e8 times its lowest in lambda, so rounding alone leaves
/// residuals near 2e-8 (64 x 2 Q8 elements), above the beam's [`crate::subspace::RESIDUAL`];
/// at 1e-7 the followed eigenvalues stay within 1e-8 of the dense solver's (test
/// `plate_cycle`, fem crate).
pub const PLATE_RESIDUAL: f64 = 1e-7;

/// The load coefficients the plate's prestress is linear in, in [`PlateLever::coefficients`]'
/// order.
pub const LOAD_CASES: [&str; 5] = ["F_C'x", "(g - a_O)_x", "(g - a_O)_y", "epsilon", "omega^2"];

/// The lever as a plate, pinned at B = (0, 0) and C' = (length, 0) (lever frame, m): its mass,
/// stiffness and the geometric stiffness of each load case on the free degrees of freedom, in
/// an order that keeps the matrices banded (nodes by X, then Y).
#[derive(Debug, Clone)]
pub struct PlateLever {
    /// The mesh, lever frame.
    pub mesh: PlateMesh,
    /// Material and thickness.
    pub material: PlaneMaterial,
    /// The plate's global matrices (all degrees of freedom).
    pub matrices: PlateMatrices,
    /// The nodes at B and C'.
    pub pins: [usize; 2],
    /// The free degrees of freedom (u = v = 0 at both pins), banded order.
    pub free: Vec<usize>,
    m: DMatrix<f64>,
    k: DMatrix<f64>,
    kg: Vec<DMatrix<f64>>,
}

impl PlateLever {
    /// The plate lever of `mesh` (a rectangle [0, L] x [-h/2, h/2] with nodes at (0, 0) and
    /// (L, 0)) and `material`; errors when a pin has no node or the static problem is singular.
    pub fn new(mesh: PlateMesh, material: PlaneMaterial) -> Result<Self, FemError> {
        let length = mesh.nodes.iter().map(|p| p.x).fold(0.0, f64::max);
        let pin = |p: Vector2<f64>| -> Result<usize, FemError> {
            let i = mesh.nearest(p);
            if (mesh.nodes[i] - p).norm() > 1e-9 * length.max(1.0) {
                return Err(FemError::Model(format!(
                    "the plate has no node at the pin ({}, {}) m: give an even number of elements across",
                    p.x, p.y
                )));
            }
            Ok(i)
        };
        let pins = [pin(Vector2::zeros())?, pin(Vector2::new(length, 0.0))?];
        let matrices = mesh.assemble(&material);
        let held = [2 * pins[0], 2 * pins[0] + 1, 2 * pins[1], 2 * pins[1] + 1];
        let mut nodes: Vec<usize> = (0..mesh.nodes.len()).collect();
        nodes.sort_by(|&a, &b| {
            let (p, q) = (mesh.nodes[a], mesh.nodes[b]);
            p.x.total_cmp(&q.x).then(p.y.total_cmp(&q.y))
        });
        let free: Vec<usize> = nodes
            .iter()
            .flat_map(|&n| [2 * n, 2 * n + 1])
            .filter(|d| !held.contains(d))
            .collect();
        // Every element's quadrature points, formed once for the five cases' stresses and
        // geometric stiffnesses.
        let points: Vec<Vec<QuadPoint>> = mesh
            .elements
            .iter()
            .map(|el| mesh.quad_points(el))
            .collect();
        let stresses = prestress_cases(&mesh, &points, &material, &matrices, pins)?;
        let kg = stresses
            .iter()
            .map(|s| {
                let kg = geometric_stiffness(&mesh, &points, material.thickness, s);
                restrict(&kg, &free)
            })
            .collect();
        Ok(PlateLever {
            m: restrict(&matrices.m, &free),
            k: restrict(&matrices.k, &free),
            kg,
            mesh,
            material,
            matrices,
            pins,
            free,
        })
    }

    /// The instant's load coefficients, [`LOAD_CASES`]' order (N, m/s^2, m/s^2, rad/s^2,
    /// rad^2/s^2; lever frame).
    pub fn coefficients(inst: &LeverInstant) -> [f64; 5] {
        let rel = inst.to_lever(&inst.gravity) - inst.to_lever(&inst.a_b);
        let f_c = inst.to_lever(&inst.force_c);
        [f_c.x, rel.x, rel.y, inst.epsilon, inst.omega * inst.omega]
    }

    /// The instant's symmetric stiffness [K] + [K_g] - omega^2 [M] on the free degrees of
    /// freedom, N/m; without the prestress's [K_g] when `prestress` is false.
    pub fn instant_stiffness(&self, inst: &LeverInstant, prestress: bool) -> DMatrix<f64> {
        let mut k = &self.k - &self.m * (inst.omega * inst.omega);
        if prestress {
            for (c, kg) in Self::coefficients(inst).iter().zip(&self.kg) {
                k += kg * *c;
            }
        }
        k
    }

    /// The mass matrix on the free degrees of freedom, kg.
    pub fn mass(&self) -> &DMatrix<f64> {
        &self.m
    }

    /// The lowest `count` modes at every instant, each instant's followed from the one before
    /// by subspace iteration ([`ModeFollower`], residuals to [`PLATE_RESIDUAL`]);
    /// `progress(done, total)` after each.
    pub fn cycle_modes(
        &self,
        instants: &[LeverInstant],
        count: usize,
        prestress: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<Modes>, FemError> {
        let mut follower = ModeFollower::with_residual(count, PLATE_RESIDUAL);
        let mut out = Vec::with_capacity(instants.len());
        for (i, inst) in instants.iter().enumerate() {
            out.push(follower.modes(&self.instant_stiffness(inst, prestress), &self.m)?);
            progress(i + 1, instants.len());
        }
        Ok(out)
    }
}

/// The in-plane stress (s_xx, s_yy, s_xy; Pa) at every quadrature point of every element, in
/// [`PlateMesh::quad_points`]' order, of each unit load case of [`LOAD_CASES`]: the plate held
/// at B (u, v) and C' (v).
fn prestress_cases(
    mesh: &PlateMesh,
    points: &[Vec<QuadPoint>],
    material: &PlaneMaterial,
    g: &PlateMatrices,
    pins: [usize; 2],
) -> Result<Vec<Vec<[f64; 3]>>, FemError> {
    let n = mesh.dofs();
    let held = [2 * pins[0], 2 * pins[0] + 1, 2 * pins[1] + 1];
    let free: Vec<usize> = (0..n).filter(|d| !held.contains(d)).collect();
    let chol = restrict(&g.k, &free).cholesky().ok_or_else(|| {
        FemError::Singular("held at B (u, v) and C' (v) for the prestress".into())
    })?;
    let mut f_c = DVector::zeros(n);
    f_c[2 * pins[1]] = 1.0;
    let loads = [
        f_c,
        g.m_o.column(0).into_owned(),
        g.m_o.column(1).into_owned(),
        -&g.q_y,
        g.q_x.clone(),
    ];
    let d = material.elasticity();
    Ok(loads
        .iter()
        .map(|f| {
            let u_free = chol.solve(&f.select_rows(&free));
            let mut u = DVector::zeros(n);
            free.iter().zip(u_free.iter()).for_each(|(&i, v)| u[i] = *v);
            stresses(mesh, points, &d, &u)
        })
        .collect())
}

/// The stress (s_xx, s_yy, s_xy; Pa) of the nodal displacements `u` (m) at every quadrature
/// point (`points`, element by element).
fn stresses(
    mesh: &PlateMesh,
    points: &[Vec<QuadPoint>],
    d: &DMatrix<f64>,
    u: &DVector<f64>,
) -> Vec<[f64; 3]> {
    let mut out = Vec::new();
    for (el, pts) in mesh.elements.iter().zip(points) {
        let ue = DVector::from_iterator(
            2 * el.len(),
            el.iter().flat_map(|&i| [u[2 * i], u[2 * i + 1]]),
        );
        for p in pts {
            let s = d * (p.strain_matrix() * &ue);
            out.push([s[0], s[1], s[2]]);
        }
    }
    out
}

/// The geometric stiffness (N/m, all degrees of freedom) of the prestress `sigma` given at
/// every quadrature point as [`stresses`] orders them (module docs).
fn geometric_stiffness(
    mesh: &PlateMesh,
    points: &[Vec<QuadPoint>],
    thickness: f64,
    sigma: &[[f64; 3]],
) -> DMatrix<f64> {
    let n = mesh.dofs();
    let mut kg = DMatrix::zeros(n, n);
    let mut next = sigma.iter();
    for (el, pts) in mesh.elements.iter().zip(points) {
        for p in pts {
            let Some(&[sxx, syy, sxy]) = next.next() else {
                return kg;
            };
            let w = thickness * p.da;
            for (a, &na) in el.iter().enumerate() {
                let (ga_x, ga_y) = (p.dx[a], p.dy[a]);
                for (c, &nc) in el.iter().enumerate() {
                    let (gc_x, gc_y) = (p.dx[c], p.dy[c]);
                    let v =
                        w * (ga_x * (sxx * gc_x + sxy * gc_y) + ga_y * (sxy * gc_x + syy * gc_y));
                    kg[(2 * na, 2 * nc)] += v;
                    kg[(2 * na + 1, 2 * nc + 1)] += v;
                }
            }
        }
    }
    kg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plane::QuadKind;

    fn lever(along: usize) -> PlateLever {
        let mat = PlaneMaterial {
            young: 210e9,
            poisson: 0.3,
            density: 7850.0,
            thickness: 0.025,
        };
        let mesh = PlateMesh::rectangle(QuadKind::Q8, 0.45, 0.006, along, 2, &[]).unwrap();
        PlateLever::new(mesh, mat).unwrap()
    }

    fn frequencies(pl: &PlateLever, inst: &LeverInstant, count: usize) -> Vec<f64> {
        let modes =
            crate::modal::symmetric_modes(&pl.instant_stiffness(inst, true), pl.mass()).unwrap();
        (0..count).map(|i| modes.frequency_hz(i)).collect()
    }

    /// The plate in pure end tension N (F_C' = (N, 0), nothing else): a tensioned pinned
    /// beam's squared frequencies rise by f_n(N)^2 - f_n(0)^2 = (n pi / L)^2 N / (4 pi^2 rho A)
    /// whatever its bending stiffness (the Rayleigh quotient of the sine mode), so the depth's
    /// shear flexibility drops out. The prestress also acts on the axial displacement -y v'
    /// and the depth's rotary inertia weighs it: both add (n pi h / L)^2 / 12 (1.5e-4 n^2) to
    /// the quotient, one above and one below, and cancel. Found for N = +-400 N (a tenth of
    /// the Euler load): 3e-9, 6e-7 and 3e-6 of the rise in the first three modes; held to 1e-5.
    #[test]
    fn end_tension_stiffens_as_a_tensioned_beam() {
        let pl = lever(48);
        let (l, ra): (f64, f64) = (0.45, 7850.0 * 0.025 * 0.006);
        let rest = frequencies(
            &pl,
            &LeverInstant::prescribed(0.0, 0.0, Vector2::zeros()),
            3,
        );
        for n_axial in [400.0, -400.0] {
            let mut inst = LeverInstant::prescribed(0.0, 0.0, Vector2::zeros());
            inst.force_c = Vector2::new(n_axial, 0.0);
            inst.force_b = Vector2::new(-n_axial, 0.0);
            let f = frequencies(&pl, &inst, 3);
            for (i, (fi, f0)) in f.iter().zip(&rest).enumerate() {
                let k = (i + 1) as f64 * std::f64::consts::PI / l;
                let want = k * k * n_axial / (ra * std::f64::consts::TAU.powi(2));
                let err = (fi * fi - f0 * f0) / want - 1.0;
                eprintln!("N {n_axial}: mode {}: {err:.2e} of the rise", i + 1);
                assert!(err.abs() < 1e-5, "mode {}: {err:e}", i + 1);
            }
        }
    }

    /// Each rigid-motion load case alone stiffens the plate as the axial force by statics
    /// stiffens the beam (`LeverInstant::axial_polynomial`; 10 quintic elements, pinned). The
    /// squared frequencies' shifts (the tension's share, independent of the bending stiffness)
    /// of the first three modes agree within 1e-5 for the origin's acceleration along the
    /// lever (found 0.6e-6 to 4e-6) and within 3e-4 for the spin, centrifugal softening
    /// included (found 6e-5 to 1e-4: the spin also loads the depth and its rotary inertia, which
    /// the beam's axial force leaves out). The transverse cases (the origin's acceleration
    /// across the lever, epsilon), whose beam axial force is zero, move the plate's frequencies
    /// by less than 1e-6 (found 2e-9 to 1.2e-8): their bending and shear stresses are odd across
    /// the depth, and so is their energy in a bending mode.
    #[test]
    fn rigid_motion_prestress_matches_the_beams_axial_force() {
        use crate::assembly::Supports;
        use crate::element::ElementKind;
        let pl = lever(48);
        let mesh = crate::bench_mesh(ElementKind::Quintic, 10);
        let g = mesh.assemble();
        let beam = |inst: &LeverInstant| -> Vec<f64> {
            let m = crate::cycle::instant_modes(&mesh, &g, inst, Supports::Pinned, 0).unwrap();
            (0..3).map(|i| m.modes.frequency_hz(i)).collect()
        };
        let rest = LeverInstant::prescribed(0.0, 0.0, Vector2::zeros());
        let (b0, p0) = (beam(&rest), frequencies(&pl, &rest, 3));
        let axial = [
            (
                LeverInstant::prescribed(0.0, 0.0, Vector2::new(-200.0, 0.0)),
                1e-5,
            ),
            (
                LeverInstant::prescribed(0.0, 0.0, Vector2::new(200.0, 0.0)),
                1e-5,
            ),
            (LeverInstant::prescribed(60.0, 0.0, Vector2::zeros()), 3e-4),
        ];
        for (inst, tol) in &axial {
            let (b, p) = (beam(inst), frequencies(&pl, inst, 3));
            for i in 0..3 {
                let (sb, sp) = (b[i] * b[i] - b0[i] * b0[i], p[i] * p[i] - p0[i] * p0[i]);
                eprintln!(
                    "{inst:?} mode {}: f^2 shift beam {sb:.6e}, plate {sp:.6e}: {:.1e}",
                    i + 1,
                    sp / sb - 1.0
                );
                assert!(
                    (sp / sb - 1.0).abs() < *tol,
                    "mode {}: {sp:e} vs {sb:e}",
                    i + 1
                );
            }
        }
        let transverse = [
            LeverInstant::prescribed(0.0, 0.0, Vector2::new(0.0, 200.0)),
            LeverInstant::prescribed(0.0, 500.0, Vector2::zeros()),
        ];
        for inst in &transverse {
            let p = frequencies(&pl, inst, 3);
            for i in 0..3 {
                let sp = p[i] / p0[i] - 1.0;
                eprintln!("{inst:?} mode {}: plate shift {sp:.2e}", i + 1);
                assert!(sp.abs() < 1e-6, "mode {}: {sp:e}", i + 1);
            }
        }
    }
}
