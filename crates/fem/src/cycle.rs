//! The lever's modes along the motion cycle: at each instant the symmetric problem
//! ([K] + [K_g] - omega^2 [M]) phi = lambda [M] phi and the full problem with the gyroscopic
//! 2 omega [S] and the skew eps [S] terms (complex eigenvalues: frequency and damping ratio),
//! the modes followed from instant to instant by their shape (MAC), not by their index.

use nalgebra::{Complex, DMatrix, DVector};

use crate::assembly::{GlobalMatrices, Mesh, Supports};
use crate::loads::LeverInstant;
use crate::modal::{symmetric_modes, Modes};
use crate::response::Reduced;
use crate::FemError;

/// Modes of the symmetric problem kept in the full problem's modal basis, at least (the
/// gyroscopic and skew couplings to modes far above are second order in their small size).
pub const FULL_BASIS: usize = 24;

/// The lever's modes at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct InstantModes {
    /// Time, s.
    pub t: f64,
    /// The symmetric problem's modes (free degrees of freedom, [M]-orthonormal, ascending).
    pub modes: Modes,
    /// For each of the lowest symmetric modes (same order), the full problem's mode made
    /// mostly of it: (natural frequency |mu| / 2 pi in Hz, damping ratio -Re mu / |mu|); None
    /// where no complex mode is dominated by it.
    pub full: Vec<Option<(f64, f64)>>,
}

/// The lever's modes at one instant of the cycle, `full` of them (the lowest) also in the
/// full problem (none: `full` = 0). The full problem is solved in the symmetric modes' basis (the lowest
/// max(3 full, [`FULL_BASIS`]) of them): with q = Phi eta, eta'' + G eta' + (Lambda + E) eta
/// = 0, G = Phi^T 2 omega S Phi and E = Phi^T eps S Phi skew; its state matrix's eigenvalues
/// mu by the Schur decomposition; each mu with Im mu > 0 assigned to the symmetric mode that
/// dominates its eigenvector (one step of inverse iteration), weighed by the energy of each
/// modal coordinate.
pub fn instant_modes(
    mesh: &Mesh,
    g: &GlobalMatrices,
    inst: &LeverInstant,
    supports: Supports,
    full: usize,
) -> Result<InstantModes, FemError> {
    let free = mesh.free_dofs(supports);
    instant_modes_reduced(mesh, &Reduced::new(mesh, g, &free), inst, full)
}

/// [`instant_modes`] with the lever's matrices already reduced to the free degrees of freedom
/// (formed once for a whole cycle).
pub(crate) fn instant_modes_reduced(
    mesh: &Mesh,
    red: &Reduced,
    inst: &LeverInstant,
    full: usize,
) -> Result<InstantModes, FemError> {
    let (k, c, _) = red.instant(mesh, inst);
    let e = red.skew() * inst.epsilon;
    let m = red.mass().clone();
    let modes = symmetric_modes(&k, &m)?;
    if full == 0 {
        return Ok(InstantModes {
            t: inst.t,
            modes,
            full: Vec::new(),
        });
    }
    let n = modes.eigenvalues.len();
    let nb = n.min((3 * full).max(FULL_BASIS));
    let a = modal_state_matrix(&modes, &c, &e, nb);
    let mus = a.clone().complex_eigenvalues();
    let ac: DMatrix<Complex<f64>> = a.map(|v| Complex::new(v, 0.0));
    let mut best: Vec<Option<(f64, f64, f64)>> = vec![None; full.min(nb)];
    let top = modes
        .eigenvalues
        .get(full.min(nb).saturating_sub(1))
        .copied()
        .unwrap_or(0.0)
        .max(0.0)
        .sqrt();
    for mu in mus
        .iter()
        .filter(|mu| mu.im > 0.0 && mu.norm() <= 1.5 * top + 1.0)
    {
        let Some((j, share)) = dominant_mode(&ac, *mu, nb) else {
            continue;
        };
        if j < best.len() && best[j].as_ref().is_none_or(|b| share > b.2) {
            best[j] = Some((mu.norm() / std::f64::consts::TAU, -mu.re / mu.norm(), share));
        }
    }
    Ok(InstantModes {
        t: inst.t,
        modes,
        full: best
            .into_iter()
            .map(|b| b.map(|(f, z, _)| (f, z)))
            .collect(),
    })
}

/// The full problem's state matrix on the lowest `nb` symmetric modes, with the gyroscopic
/// damping `c` and the skew stiffness `e` projected on them. State (S eta, eta'), S =
/// diag(sqrt|lambda_i|): every entry of the state matrix is then of the size of a frequency,
/// which keeps the Schur decomposition's error at rounding of the highest frequency rather than
/// of the highest eigenvalue.
fn modal_state_matrix(
    modes: &crate::modal::Modes,
    c: &DMatrix<f64>,
    e: &DMatrix<f64>,
    nb: usize,
) -> DMatrix<f64> {
    let phi = modes.shapes.columns(0, nb).into_owned();
    let gm = phi.transpose() * c * &phi;
    let em = phi.transpose() * e * &phi;
    let sc: Vec<f64> = (0..nb)
        .map(|i| modes.eigenvalues[i].abs().sqrt().max(1e-6))
        .collect();
    let mut a = DMatrix::<f64>::zeros(2 * nb, 2 * nb);
    for i in 0..nb {
        a[(i, nb + i)] = sc[i];
    }
    for i in 0..nb {
        for j in 0..nb {
            let stiff = if i == j { modes.eigenvalues[i] } else { 0.0 } + em[(i, j)];
            a[(nb + i, j)] = -stiff / sc[j];
            a[(nb + i, nb + j)] = -gm[(i, j)];
        }
    }
    a
}

/// The symmetric mode that dominates the eigenvector of eigenvalue `mu` of the state matrix
/// `ac`, and its share of the vector's energy: one step of inverse iteration from a fixed
/// start gives the eigenvector's modal part; the modal displacement eta_i = x_i / s_i is
/// weighed by its energy lambda_i eta_i^2 ~ x_i^2. None when the shifted matrix is singular.
fn dominant_mode(ac: &DMatrix<Complex<f64>>, mu: Complex<f64>, nb: usize) -> Option<(usize, f64)> {
    let shift = mu * Complex::new(1.0 + 1e-10, 1e-10);
    let mut b = ac.clone();
    for i in 0..2 * nb {
        b[(i, i)] -= shift;
    }
    let start =
        DVector::<Complex<f64>>::from_fn(2 * nb, |i, _| Complex::new(1.0 + 0.1 * i as f64, 0.3));
    let x = b.lu().solve(&start)?;
    let weights: Vec<f64> = (0..nb).map(|i| x[i].norm_sqr()).collect();
    let total: f64 = weights.iter().sum();
    let (j, w) = weights
        .iter()
        .copied()
        .enumerate()
        .max_by(|p, q| p.1.total_cmp(&q.1))?;
    Some((j, w / total))
}

/// The lever's modes at every instant of a cycle (the matrices reduced once).
pub fn cycle_modes(
    mesh: &Mesh,
    g: &GlobalMatrices,
    instants: &[LeverInstant],
    supports: Supports,
    full: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<InstantModes>, FemError> {
    cycle_modes_keeping(mesh, g, instants, supports, full, usize::MAX, progress)
}

/// [`cycle_modes`] keeping the shapes of the lowest `keep` modes only (every eigenvalue is
/// kept): what [`track`] needs for `count` modes is the lowest 2 count. A long recording's
/// instants then hold 51 x 12 numbers each instead of 51 x 51 (100 s at 240 samples/s: 120 MB
/// instead of 500 MB).
pub fn cycle_modes_keeping(
    mesh: &Mesh,
    g: &GlobalMatrices,
    instants: &[LeverInstant],
    supports: Supports,
    full: usize,
    keep: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<InstantModes>, FemError> {
    use flexbench_contracts::parallel::{map_in_order_chunked, threads};
    let red = Reduced::new(mesh, g, &mesh.free_dofs(supports));
    let n = instants.len();
    // Each instant's modes on their own (on every core), in order; the first error as one
    // after the other would meet it.
    map_in_order_chunked(
        threads(),
        instants,
        256,
        |inst| {
            let mut im = instant_modes_reduced(mesh, &red, inst, full)?;
            if keep < im.modes.shapes.ncols() {
                im.modes.shapes = im.modes.shapes.columns(0, keep).into_owned();
            }
            Ok(im)
        },
        &mut |f| progress((f * n as f64).round() as usize, n),
    )
    .into_iter()
    .collect()
}

/// The matrices of one instant on the free degrees of freedom, as the eigenproblems see them:
/// for benchmarks and cross-checks against other solvers.
#[derive(Debug, Clone, PartialEq)]
pub struct InstantMatrices {
    /// Mass [M], kg.
    pub m: DMatrix<f64>,
    /// Symmetric stiffness [K] + [K_g] - omega^2 [M], N/m.
    pub k: DMatrix<f64>,
    /// Gyroscopic 2 omega [S], kg/s.
    pub gyroscopic: DMatrix<f64>,
    /// Skew stiffness eps [S], N/m.
    pub skew: DMatrix<f64>,
}

/// The matrices of every instant (the lever's matrices reduced once).
pub fn cycle_matrices(
    mesh: &Mesh,
    g: &GlobalMatrices,
    instants: &[LeverInstant],
    supports: Supports,
) -> Vec<InstantMatrices> {
    let red = Reduced::new(mesh, g, &mesh.free_dofs(supports));
    instants
        .iter()
        .map(|inst| {
            let (k, c, _) = red.instant(mesh, inst);
            InstantMatrices {
                m: red.mass().clone(),
                k,
                gyroscopic: c,
                skew: red.skew() * inst.epsilon,
            }
        })
        .collect()
}

/// The modal assurance criterion of two shapes with respect to [M]:
/// (a^T M b)^2 / ((a^T M a)(b^T M b)), 1 for the same shape, 0 for [M]-orthogonal ones.
pub fn mac(a: &DVector<f64>, b: &DVector<f64>, m: &DMatrix<f64>) -> f64 {
    let ab = a.dot(&(m * b));
    ab * ab / (a.dot(&(m * a)) * b.dot(&(m * b)))
}

/// Follow `count` modes along the instants by their shape: the labels are the first
/// instant's lowest `count` modes; at each next instant each label takes the mode (among the
/// lowest 2 count) whose shape has the largest MAC with the label's shape at the previous
/// instant, pairs taken greedily from the largest MAC down. Returns, per instant, the index of
/// each label's mode, and the smallest MAC accepted along the way.
pub fn track(instants: &[InstantModes], m: &DMatrix<f64>, count: usize) -> (Vec<Vec<usize>>, f64) {
    let mut out: Vec<Vec<usize>> = Vec::with_capacity(instants.len());
    let mut worst: f64 = 1.0;
    for (s, inst) in instants.iter().enumerate() {
        let n = inst.modes.eigenvalues.len();
        if s == 0 {
            out.push((0..count.min(n)).collect());
            continue;
        }
        let prev = &instants[s - 1];
        let prev_idx = out[s - 1].clone();
        let pool = (2 * count).min(n);
        let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
        for (label, &pi) in prev_idx.iter().enumerate() {
            let a = prev.modes.shapes.column(pi).into_owned();
            for j in 0..pool {
                pairs.push((
                    mac(&a, &inst.modes.shapes.column(j).into_owned(), m),
                    label,
                    j,
                ));
            }
        }
        pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
        let mut idx = vec![usize::MAX; prev_idx.len()];
        let mut used = vec![false; pool];
        for (v, label, j) in pairs {
            if idx[label] == usize::MAX && !used[j] {
                idx[label] = j;
                used[j] = true;
                worst = worst.min(v);
            }
        }
        out.push(idx);
    }
    (out, worst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::Lever;
    use crate::element::{ElementKind, Section};
    use nalgebra::Vector2;

    use crate::bench_mesh as mesh;

    /// Keeping the lowest shapes only changes nothing else: the same eigenvalues and full
    /// modes, the kept shapes the same columns, the same modes followed.
    #[test]
    fn keeping_the_lowest_shapes_changes_nothing_followed() {
        let m = mesh(ElementKind::Quintic, 6);
        let g = m.assemble();
        let instants: Vec<LeverInstant> = (0..12)
            .map(|i| LeverInstant::prescribed(0.3 * i as f64, 15.0, Vector2::new(0.0, 11.0)))
            .collect();
        let all = cycle_modes(&m, &g, &instants, Supports::Pinned, 4, &mut |_, _| {}).unwrap();
        let kept =
            cycle_modes_keeping(&m, &g, &instants, Supports::Pinned, 4, 8, &mut |_, _| {}).unwrap();
        for (a, k) in all.iter().zip(&kept) {
            assert_eq!(a.modes.eigenvalues, k.modes.eigenvalues);
            assert_eq!(a.full, k.full);
            assert_eq!(k.modes.shapes.ncols(), 8);
            assert_eq!(a.modes.shapes.columns(0, 8), k.modes.shapes.columns(0, 8));
        }
        let mr =
            g.m.select_rows(&m.free_dofs(Supports::Pinned))
                .select_columns(&m.free_dofs(Supports::Pinned));
        assert_eq!(track(&all, &mr, 4), track(&kept, &mr, 4));
    }

    /// At rest the full problem is the symmetric one: its frequencies equal the symmetric ones
    /// to 1e-9 relative and every damping ratio is below 1e-9.
    #[test]
    fn full_equals_symmetric_at_rest() {
        let m = mesh(ElementKind::Quintic, 6);
        let g = m.assemble();
        let inst = LeverInstant::prescribed(0.0, 0.0, Vector2::zeros());
        let im = instant_modes(&m, &g, &inst, Supports::Pinned, 8).unwrap();
        for (i, f) in im.full.iter().enumerate() {
            let (freq, zeta) = f.expect("every mode found");
            assert!(
                (freq / im.modes.frequency_hz(i) - 1.0).abs() < 1e-9,
                "mode {i}"
            );
            assert!(zeta.abs() < 1e-9);
        }
    }

    /// With the bench's rotation rate (omega 15 rad/s, eps 300 rad/s^2, a_B 11 m/s^2) the skew
    /// terms are small: measured, the full problem's frequencies are within 3.5e-7 of the
    /// symmetric ones and the damping ratios at most 1.6e-8 in size; asserted with a margin of
    /// 30: 1e-5 and 5e-7 (sizes only: the sign of a skew term's damping is not physical here).
    #[test]
    fn skew_terms_are_small_at_the_bench_rates() {
        let m = mesh(ElementKind::Quintic, 10);
        let g = m.assemble();
        let inst = LeverInstant::prescribed(15.0, 300.0, Vector2::new(5.0, -10.0));
        let im = instant_modes(&m, &g, &inst, Supports::Pinned, 8).unwrap();
        let (mut df, mut dz): (f64, f64) = (0.0, 0.0);
        for (i, f) in im.full.iter().enumerate() {
            let (freq, zeta) = f.expect("every mode found");
            df = df.max((freq / im.modes.frequency_hz(i) - 1.0).abs());
            dz = dz.max(zeta.abs());
        }
        eprintln!(
            "full vs symmetric: frequencies within {df:.1e}, |damping ratio| at most {dz:.1e}"
        );
        assert!(df < 1e-5 && dz < 5e-7);
    }

    /// MAC tracking follows the modes as the lever is compressed through the crossing of its
    /// third bending mode with its first axial one (a bar 60 mm deep, whose axial mode lies
    /// among the low bending ones; compression to 1.5 P_cr, the first mode buckled past P_cr):
    /// each label keeps its kind (axial or bending) with MAC above 0.9, and some label's index
    /// changes on the way.
    #[test]
    fn tracking_through_a_crossing() {
        let deep = Lever::new(
            0.45,
            Section {
                young: 210e9,
                density: 7850.0,
                area: 1.5e-3,
                inertia: 4.5e-7,
            },
        )
        .unwrap();
        let m = Mesh::new(deep, ElementKind::Frame, 8).unwrap();
        let g = m.assemble();
        let free = m.free_dofs(Supports::Pinned);
        let mr = g.m.select_rows(&free).select_columns(&free);
        let p_cr = std::f64::consts::PI.powi(2) * 210e9 * 4.5e-7 / 0.45f64.powi(2);
        let instants: Vec<InstantModes> = (0..40)
            .map(|i| {
                let mut inst = LeverInstant::prescribed(0.0, 0.0, Vector2::zeros());
                inst.force_c = Vector2::new(-1.5 * p_cr * i as f64 / 39.0, 0.0);
                inst.t = i as f64;
                instant_modes(&m, &g, &inst, Supports::Pinned, 6).unwrap()
            })
            .collect();
        let (labels, worst) = track(&instants, &mr, 6);
        assert!(worst > 0.9, "{worst}");
        let share = |s: usize, j: usize| {
            crate::modal::transverse_share(
                &m,
                &mr,
                &free,
                &instants[s].modes.shapes.column(j).into_owned(),
            )
        };
        for label in 0..6 {
            let kind0 = share(0, labels[0][label]) > 0.5;
            for (s, at) in labels.iter().enumerate().skip(1) {
                assert_eq!(
                    share(s, at[label]) > 0.5,
                    kind0,
                    "label {label} changed kind at instant {s}"
                );
            }
        }
        assert!(
            (0..6).any(|l| labels.iter().any(|ix| ix[l] != labels[0][l])),
            "no crossing happened"
        );
    }
}
