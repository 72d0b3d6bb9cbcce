//! Modes of the lever as it is at one instant: the symmetric problem
//! ([K] + [K_g] + [K(omega)]) phi = lambda [M] phi on the free degrees of freedom.

use nalgebra::{DMatrix, DVector};

use crate::assembly::{Lever, Mesh, Supports};
use crate::element::Field;
use crate::FemError;

/// The lever's modes at one instant, lowest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Modes {
    /// Eigenvalues lambda = (2 pi f)^2, rad^2/s^2, ascending; negative when the axial
    /// compression or the centrifugal softening exceeds the stiffness in that mode (buckled).
    pub eigenvalues: Vec<f64>,
    /// Mode shapes on the free degrees of freedom, [M]-orthonormal (phi^T M phi = 1), one per
    /// column.
    pub shapes: DMatrix<f64>,
}

impl Modes {
    /// Natural frequency of mode i (from 0), Hz: sqrt(lambda) / (2 pi); NaN where lambda < 0.
    pub fn frequency_hz(&self, i: usize) -> f64 {
        self.eigenvalues.get(i).map_or(f64::NAN, |l| {
            if *l >= 0.0 {
                l.sqrt() / std::f64::consts::TAU
            } else {
                f64::NAN
            }
        })
    }
}

/// The generalized symmetric eigenproblem K phi = lambda M phi (K symmetric, M symmetric
/// positive definite), Jacobi-scaled first (D = diag(M)^-1/2: the degrees of freedom are in m,
/// rad and 1/m, which leaves the entries many decades apart). When D K D is positive definite
/// the problem is reduced through its Cholesky factor, D K D = L L^T, B = L^-1 D M D L^-T,
/// whose largest eigenvalues 1/lambda are the lowest modes' (accurate to rounding of the lowest
/// frequencies, which the reduction through M loses to the stiffest mode: 2e-10 at 16 quintic
/// elements); otherwise (compressed or spun past a buckling load) through M's factor,
/// D M D = L L^T, C = L^-1 D K D L^-T. phi = D L^-T Q in both, Q the eigenvectors.
pub fn symmetric_modes(k: &DMatrix<f64>, m: &DMatrix<f64>) -> Result<Modes, FemError> {
    let n = m.nrows();
    if n == 0 || k.nrows() != n {
        return Err(FemError::Mass(format!("{n} free degrees of freedom")));
    }
    if m.diagonal().iter().any(|v| v.is_nan() || *v <= 0.0) {
        return Err(FemError::Mass("a diagonal entry is not positive".into()));
    }
    let d = m.diagonal().map(|v| 1.0 / v.sqrt());
    let ms = DMatrix::from_fn(n, n, |i, j| m[(i, j)] * d[i] * d[j]);
    let ks = DMatrix::from_fn(n, n, |i, j| k[(i, j)] * d[i] * d[j]);
    let reduce = |a: &DMatrix<f64>, b: &DMatrix<f64>| -> Option<(Vec<f64>, DMatrix<f64>)> {
        // eigenpairs of a x = mu b x, b = L L^T: mu and x = L^-T q, with C = L^-1 a L^-T by two
        // triangular solves (W = L^-1 a, C = L^-1 W^T, a symmetric) and x by a third (L^T x = q):
        // no inverse formed (forming L^-1 and multiplying took a third of the time; `make bench`).
        let l = b.clone().cholesky()?.unpack();
        let w = l.solve_lower_triangular(a)?;
        let c = l.solve_lower_triangular(&w.transpose())?;
        let eig = ((&c + c.transpose()) * 0.5).symmetric_eigen();
        let x = l.transpose().solve_upper_triangular(&eig.eigenvectors)?;
        Some((eig.eigenvalues.iter().copied().collect(), x))
    };
    let (lambda, x): (Vec<f64>, DMatrix<f64>) = match reduce(&ms, &ks) {
        // mu = 1 / lambda; x normalised to x^T K x = 1, so phi = x sqrt(lambda) has phi^T M phi = 1
        Some((mu, x)) if mu.iter().all(|v| *v > 0.0) => {
            let lambda: Vec<f64> = mu.iter().map(|v| 1.0 / v).collect();
            let x = DMatrix::from_fn(n, n, |i, j| x[(i, j)] * lambda[j].sqrt());
            (lambda, x)
        }
        _ => reduce(&ks, &ms).ok_or_else(|| FemError::Mass("Cholesky failed".into()))?,
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| lambda[a].total_cmp(&lambda[b]));
    let eigenvalues: Vec<f64> = order.iter().map(|&i| lambda[i]).collect();
    let mut shapes = DMatrix::zeros(n, n);
    for (j, &i) in order.iter().enumerate() {
        shapes.set_column(j, &x.column(i).component_mul(&d));
    }
    Ok(Modes {
        eigenvalues,
        shapes,
    })
}

/// Bending frequency n of the pinned-pinned lever at rest, n^2 pi / (2 L^2) sqrt(EI / rho A),
/// Hz (Euler-Bernoulli).
pub fn pinned_bending_exact(lever: &Lever, n: usize) -> f64 {
    let s = &lever.section;
    (n * n) as f64 * std::f64::consts::PI / (2.0 * lever.length.powi(2))
        * (s.young * s.inertia / (s.density * s.area)).sqrt()
}

/// Axial frequency n of the lever held axially at both ends, n / (2 L) sqrt(E / rho), Hz.
pub fn pinned_axial_exact(lever: &Lever, n: usize) -> f64 {
    n as f64 / (2.0 * lever.length) * (lever.section.young / lever.section.density).sqrt()
}

/// The fraction of a mode's kinetic energy phi^T M phi in the transverse degrees of freedom
/// (`free`: the global indices of the reduced problem's degrees of freedom): near 1 for a
/// bending mode, near 0 for an axial one.
pub fn transverse_share(mesh: &Mesh, m: &DMatrix<f64>, free: &[usize], phi: &DVector<f64>) -> f64 {
    let mask = DVector::from_iterator(
        free.len(),
        free.iter().map(|&g| {
            if mesh.kind.node_dofs()[g % mesh.node_dofs()].0 == Field::Transverse {
                1.0
            } else {
                0.0
            }
        }),
    );
    let pt = phi.component_mul(&mask);
    pt.dot(&(m * &pt)) / phi.dot(&(m * phi))
}

/// The pinned lever at rest: its lowest six bending frequencies and lowest two axial ones, Hz,
/// told apart by their shapes ([`transverse_share`]), since axial and bending modes interleave
/// differently with each mesh.
pub fn pinned_frequencies(mesh: &Mesh) -> Result<(Vec<f64>, Vec<f64>), FemError> {
    let g = mesh.assemble();
    let free = mesh.free_dofs(Supports::Pinned);
    let (k, m) = (
        g.k.select_rows(&free).select_columns(&free),
        g.m.select_rows(&free).select_columns(&free),
    );
    let modes = symmetric_modes(&k, &m)?;
    let (mut bending, mut axial) = (Vec::new(), Vec::new());
    for i in 0..modes.eigenvalues.len() {
        let share = transverse_share(mesh, &m, &free, &modes.shapes.column(i).into_owned());
        if share > 0.5 && bending.len() < 6 {
            bending.push(modes.frequency_hz(i));
        } else if share <= 0.5 && axial.len() < 2 {
            axial.push(modes.frequency_hz(i));
        }
    }
    Ok((bending, axial))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::ElementKind;

    use crate::bench_lever;

    /// The reduced matrices of a mesh under `supports`.
    fn reduced(
        mesh: &Mesh,
        k: &DMatrix<f64>,
        m: &DMatrix<f64>,
        supports: Supports,
    ) -> (DMatrix<f64>, DMatrix<f64>) {
        let free = mesh.free_dofs(supports);
        (
            k.select_rows(&free).select_columns(&free),
            m.select_rows(&free).select_columns(&free),
        )
    }

    /// Modes are [M]-orthonormal (all of them, to 1e-10) and the lowest twelve (to about
    /// 25 kHz, beyond any the bench excites) satisfy K phi = lambda M phi to 1e-9 of lambda M phi;
    /// the reduction through K keeps the low end exact and leaves the stiffest modes, which no
    /// result uses, at rounding of the spectrum's bottom.
    #[test]
    fn modes_are_m_orthonormal() {
        let mesh = Mesh::new(bench_lever(), ElementKind::Quintic, 6).unwrap();
        let g = mesh.assemble();
        let (k, m) = reduced(&mesh, &g.k, &g.m, Supports::Pinned);
        let modes = symmetric_modes(&k, &m).unwrap();
        let p = &modes.shapes;
        let gram = p.transpose() * &m * p;
        assert!((gram - DMatrix::identity(m.nrows(), m.nrows())).amax() < 1e-10);
        for i in 0..12 {
            let phi = p.column(i);
            let r = &k * phi - &m * phi * modes.eigenvalues[i];
            assert!(
                r.amax() < 1e-9 * modes.eigenvalues[i] * (&m * phi).amax(),
                "mode {i}"
            );
        }
        assert!(modes.frequency_hz(11) < 3e4, "{}", modes.frequency_hz(11));
    }

    /// 10 quintic elements give the pinned lever's first six bending frequencies within 1e-5
    /// relative and the first two axial ones within 1e-5 (the criterion); 10 frame
    /// elements within 2 % (bending 6; axial 2: linear elements, (n pi / 10)^2 / 24 = 1.6 %).
    #[test]
    fn pinned_lever_frequencies() {
        let lever = bench_lever();
        let (b, a) =
            pinned_frequencies(&Mesh::new(lever, ElementKind::Quintic, 10).unwrap()).unwrap();
        for (n, f) in b.iter().enumerate() {
            let want = pinned_bending_exact(&lever, n + 1);
            assert!(
                (f / want - 1.0).abs() < 1e-5,
                "quintic bending {}: {f} vs {want}",
                n + 1
            );
        }
        for (n, f) in a.iter().enumerate() {
            let want = pinned_axial_exact(&lever, n + 1);
            assert!(
                (f / want - 1.0).abs() < 1e-5,
                "quintic axial {}: {f} vs {want}",
                n + 1
            );
        }
        let (b, a) =
            pinned_frequencies(&Mesh::new(lever, ElementKind::Frame, 10).unwrap()).unwrap();
        assert_eq!((b.len(), a.len()), (6, 2));
        for (n, f) in b.iter().enumerate() {
            assert!((f / pinned_bending_exact(&lever, n + 1) - 1.0).abs() < 0.02);
        }
        for (n, f) in a.iter().enumerate() {
            assert!((f / pinned_axial_exact(&lever, n + 1) - 1.0).abs() < 0.02);
        }
    }

    /// The observed convergence orders of the frequencies between two meshes in the asymptotic
    /// range (frame 8 -> 16 elements, quintic 4 -> 8; the quintic's mode 1 reaches rounding,
    /// 1e-12, at 16): bending modes 1 and 3 h^4 for the frame element (cubic Hermite) and h^8
    /// for the quintic, within 0.3 of the theory; axial mode 1 h^2 (linear) and h^6 (cubic
    /// Hermite). The whole ladder is in docs/fem.md (examples/convergence.rs).
    #[test]
    fn convergence_orders() {
        let lever = bench_lever();
        let order = |kind: ElementKind, coarse: usize, mode: usize, bending: bool| -> f64 {
            let err = |ne: usize| {
                let (b, a) = pinned_frequencies(&Mesh::new(lever, kind, ne).unwrap()).unwrap();
                if bending {
                    b[mode] / pinned_bending_exact(&lever, mode + 1) - 1.0
                } else {
                    a[mode] / pinned_axial_exact(&lever, mode + 1) - 1.0
                }
            };
            (err(coarse) / err(2 * coarse)).abs().log2()
        };
        for (kind, coarse, bend_order, axial_order) in [
            (ElementKind::Frame, 8, 4.0, 2.0),
            (ElementKind::Quintic, 4, 8.0, 6.0),
        ] {
            for mode in [0, 2] {
                let p = order(kind, coarse, mode, true);
                assert!(
                    (p - bend_order).abs() < 0.3,
                    "{kind:?} bending mode {}: order {p}",
                    mode + 1
                );
            }
            let p = order(kind, coarse, 0, false);
            assert!(
                (p - axial_order).abs() < 0.3,
                "{kind:?} axial mode 1: order {p}"
            );
        }
    }

    /// A constant axial force P on the pinned lever: f_n(P) / f_n(0) = sqrt(1 + P / (n^2 P_cr)),
    /// P_cr = pi^2 EI / L^2 (Euler), for modes 1-3 at P = +-0.5 P_cr and +2 P_cr, within 1e-6
    /// with 10 quintic elements (the ratio's own discretisation error); and the lowest frequency
    /// goes to zero as P -> -P_cr: at -0.999 P_cr it is sqrt(0.001) = 3.2 % of f_1(0) within 1e-3
    /// relative, and past -P_cr the lowest eigenvalue is negative (buckled: no frequency).
    #[test]
    fn axial_force_stiffens_and_buckles() {
        let lever = bench_lever();
        let mesh = Mesh::new(lever, ElementKind::Quintic, 10).unwrap();
        let g = mesh.assemble();
        let free = mesh.free_dofs(Supports::Pinned);
        let ei = lever.section.young * lever.section.inertia;
        let p_cr = std::f64::consts::PI.powi(2) * ei / lever.length.powi(2);
        let bending_at = |p: f64| -> Vec<f64> {
            let k = &g.k + mesh.geometric_stiffness(&|_| p);
            let (kr, mr) = (
                k.select_rows(&free).select_columns(&free),
                g.m.select_rows(&free).select_columns(&free),
            );
            let modes = symmetric_modes(&kr, &mr).unwrap();
            (0..modes.eigenvalues.len())
                .filter(|&i| {
                    transverse_share(&mesh, &mr, &free, &modes.shapes.column(i).into_owned()) > 0.5
                })
                .map(|i| modes.eigenvalues[i])
                .take(3)
                .collect()
        };
        let rest = bending_at(0.0);
        for factor in [-0.5, 0.5, 2.0] {
            let loaded = bending_at(factor * p_cr);
            for n in 1..=3usize {
                let want = (1.0 + factor / (n * n) as f64).sqrt();
                let got = (loaded[n - 1] / rest[n - 1]).sqrt();
                assert!(
                    (got - want).abs() < 1e-6,
                    "P = {factor} P_cr, mode {n}: {got} vs {want}"
                );
            }
        }
        let near = bending_at(-0.999 * p_cr);
        assert!(
            ((near[0] / rest[0]).sqrt() / 0.001f64.sqrt() - 1.0).abs() < 1e-3,
            "{}",
            (near[0] / rest[0]).sqrt()
        );
        assert!(bending_at(-1.01 * p_cr)[0] < 0.0);
    }
}
