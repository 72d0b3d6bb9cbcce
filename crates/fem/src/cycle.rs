//! The lever's modes along the motion cycle: at each instant the symmetric problem
//! ([K] + [K_g] - omega^2 [M]) phi = lambda [M] phi and the full problem with the gyroscopic
//! 2 omega [S] and the skew eps [S] terms (complex eigenvalues: frequency and damping ratio),
//! the modes followed from instant to instant by their shape (MAC), not by their index.

use nalgebra::{Complex, DMatrix, DVector};

use crate::assembly::{GlobalMatrices, Mesh, Supports};
use crate::gyroscopic::FullProblem;
use crate::loads::LeverInstant;
use crate::modal::{symmetric_modes, Modes};
use crate::response::Reduced;
use crate::subspace::ModeFollower;
use crate::FemError;

/// Modes of the symmetric problem kept in the full problem's modal basis, at least, where the
/// instant's full modes are solved in it ([`full_in_modal_basis`]; the gyroscopic and skew
/// couplings to modes far above are second order in their small size).
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

/// The lever's modes at one instant of the cycle, every mode of the symmetric problem, the
/// lowest `full` also in the full problem (none: `full` = 0), as [`instant_modes_following`]
/// solves them.
pub fn instant_modes(
    mesh: &Mesh,
    g: &GlobalMatrices,
    inst: &LeverInstant,
    supports: Supports,
    full: usize,
) -> Result<InstantModes, FemError> {
    let free = mesh.free_dofs(supports);
    let mut every = ModeFollower::new(free.len());
    instant_modes_following(mesh, &Reduced::new(mesh, g, &free), inst, full, &mut every)
}

/// One instant's modes with the lever's matrices already reduced to the free degrees of
/// freedom (formed once for a whole cycle): the symmetric problem's lowest modes by `follower`
/// (warm-started from the instant before), and for each of the lowest `full` of them the full
/// problem's mode grown from it by Newton's method on the whole quadratic problem
/// ([`FullProblem::mode_from`]). Where a mode is not accepted there (not converged, or not
/// made mostly of its symmetric mode: a near crossing), the instant's full modes are solved
/// instead in the modal basis of the lowest max(3 full, [`FULL_BASIS`]) symmetric modes
/// ([`full_in_modal_basis`]).
pub(crate) fn instant_modes_following(
    mesh: &Mesh,
    red: &Reduced,
    inst: &LeverInstant,
    full: usize,
    follower: &mut ModeFollower,
) -> Result<InstantModes, FemError> {
    let (k, c, _) = red.instant(mesh, inst);
    let m = red.mass();
    let modes = follower.modes(&k, m)?;
    if full == 0 {
        return Ok(InstantModes {
            t: inst.t,
            modes,
            full: Vec::new(),
        });
    }
    let e = red.skew() * inst.epsilon;
    let problem = FullProblem::new(m, &c, &k, &e);
    let wanted = full.min(modes.eigenvalues.len());
    let grown: Option<Vec<Option<(f64, f64)>>> = (0..wanted)
        .map(|i| {
            let phi: Vec<f64> = modes.shapes.column(i).iter().copied().collect();
            problem.mode_from(modes.eigenvalues[i], &phi).map(Some)
        })
        .collect();
    let full = match grown {
        Some(found) => found,
        None => full_in_modal_basis(&symmetric_modes(&k, m)?, &c, &e, full),
    };
    Ok(InstantModes {
        t: inst.t,
        modes,
        full,
    })
}

/// The full problem's modes solved in the basis of the lowest nb = max(3 full, [`FULL_BASIS`])
/// symmetric modes `modes` (every mode of the instant): with q = Phi eta, eta'' + G eta' +
/// (Lambda + E) eta = 0, G = Phi^T 2 omega S Phi and E = Phi^T eps S Phi skew; its state
/// matrix's eigenvalues mu by the Schur decomposition; each mu with Im mu > 0 assigned to the
/// symmetric mode that dominates its eigenvector (one step of inverse iteration), weighed by
/// the energy of each modal coordinate. For each of the lowest `full` symmetric modes:
/// (frequency, Hz; damping ratio) or None where no complex mode is dominated by it.
pub fn full_in_modal_basis(
    modes: &Modes,
    c: &DMatrix<f64>,
    e: &DMatrix<f64>,
    full: usize,
) -> Vec<Option<(f64, f64)>> {
    let n = modes.eigenvalues.len();
    let nb = n.min((3 * full).max(FULL_BASIS));
    let a = modal_state_matrix(modes, c, e, nb);
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
    best.into_iter()
        .map(|b| b.map(|(f, z, _)| (f, z)))
        .collect()
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

/// Instants in a run of subspace iterations, each run started by the dense solver: runs are
/// computed apart (on every core), so the results do not depend on the thread count.
pub const RUN: usize = 64;

/// The lever's modes at every instant of a cycle (the matrices reduced once): the lowest
/// `lowest` modes of the symmetric problem (values and shapes; every mode when `lowest` is at
/// least the free degrees of freedom), each followed from the instant before by subspace
/// iteration ([`ModeFollower`]), and the lowest `full` in the full problem. What [`track`]
/// needs for `count` modes is the lowest 2 count: a long recording's instants then hold 51 x 12
/// numbers each instead of 51 x 51 (100 s at 240 samples/s: 120 MB instead of 500 MB).
pub fn cycle_modes(
    mesh: &Mesh,
    g: &GlobalMatrices,
    instants: &[LeverInstant],
    supports: Supports,
    full: usize,
    lowest: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<InstantModes>, FemError> {
    let mut out = Vec::with_capacity(instants.len());
    let spec = CycleSpec {
        supports,
        full,
        lowest,
    };
    cycle_modes_each(mesh, g, instants, spec, progress, &mut |m| {
        out.push(m);
        Ok(())
    })?;
    Ok(out)
}

/// Which modes [`cycle_modes_each`] solves: the supports, the lowest `full` in the full
/// problem, the lowest `lowest` of the symmetric problem.
#[derive(Debug, Clone, Copy)]
pub struct CycleSpec {
    /// How the lever is held.
    pub supports: Supports,
    /// Modes solved in the full (gyroscopic) problem.
    pub full: usize,
    /// Modes of the symmetric problem solved.
    pub lowest: usize,
}

/// [`cycle_modes`] handed to `each` one instant at a time, in order, instead of held: the
/// instants are solved a few thousand at a time (every core), so a long recording holds one
/// batch's modes (4096 instants of 51 x 12 numbers: 20 MB) instead of all of them (100 s at
/// 240 samples/s: 120 MB). The same numbers as [`cycle_modes`]; the first error of `each` or
/// of the solver stops the cycle.
pub fn cycle_modes_each(
    mesh: &Mesh,
    g: &GlobalMatrices,
    instants: &[LeverInstant],
    spec: CycleSpec,
    progress: &mut dyn FnMut(usize, usize),
    each: &mut dyn FnMut(InstantModes) -> Result<(), FemError>,
) -> Result<(), FemError> {
    use flexbench_contracts::parallel::{map_in_order, threads};
    let red = Reduced::new(mesh, g, &mesh.free_dofs(spec.supports));
    let n = instants.len();
    let runs: Vec<&[LeverInstant]> = instants.chunks(RUN).collect();
    let batch = (4096 / RUN).max(1);
    let mut done = 0;
    for part in runs.chunks(batch) {
        // Each run on its own (on every core), in order; the first error as one after the
        // other would meet it.
        let solved = map_in_order(threads(), part, |run| {
            let mut follower = ModeFollower::new(spec.lowest);
            let solved: Vec<InstantModes> = run
                .iter()
                .map(|inst| instant_modes_following(mesh, &red, inst, spec.full, &mut follower))
                .collect::<Result<_, _>>()?;
            drop(follower);
            // Copied once the run's working matrices are freed: the copies fill the holes
            // those left, where the originals, made among them, kept the allocator from
            // reusing them.
            Ok::<_, FemError>(solved.to_vec())
        });
        for run in solved {
            let run = run?;
            done += run.len();
            run.into_iter().try_for_each(&mut *each)?;
        }
        progress(done, n);
    }
    Ok(())
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
    let mut tracker = ModeTracker::new(count);
    let out = instants.iter().map(|inst| tracker.next(inst, m)).collect();
    (out, tracker.worst_mac())
}

/// [`track`] one instant at a time: what following the modes needs of the instant before (its
/// followed modes' shapes), so that the instants need not be held.
#[derive(Debug, Clone)]
pub struct ModeTracker {
    /// Modes followed.
    count: usize,
    /// The instant before's followed shapes, one per label; None for a label left without a
    /// mode.
    previous: Option<Vec<Option<MassShape>>>,
    /// Smallest MAC accepted so far.
    worst: f64,
}

/// A mode shape phi (free degrees of freedom) with [M] phi and phi^T [M] phi: the products
/// every MAC with it reads, formed once per instant instead of once per pair (a pairing of
/// 6 labels among 12 modes formed [M] phi 216 times an instant; [`mac`]'s arithmetic, the same
/// bits).
#[derive(Debug, Clone)]
struct MassShape {
    phi: DVector<f64>,
    m_phi: DVector<f64>,
    norm: f64,
}

impl MassShape {
    fn of(phi: DVector<f64>, m: &DMatrix<f64>) -> MassShape {
        let m_phi = m * &phi;
        let norm = phi.dot(&m_phi);
        MassShape { phi, m_phi, norm }
    }

    /// [`mac`] of `self` (the instant before's) and `b`.
    fn mac(&self, b: &MassShape) -> f64 {
        let ab = self.phi.dot(&b.m_phi);
        ab * ab / (self.norm * b.norm)
    }
}

impl ModeTracker {
    /// A tracker of `count` modes, before the first instant.
    pub fn new(count: usize) -> Self {
        ModeTracker {
            count,
            previous: None,
            worst: 1.0,
        }
    }

    /// The index of each label's mode at the next instant `inst` ([`track`]'s rule).
    pub fn next(&mut self, inst: &InstantModes, m: &DMatrix<f64>) -> Vec<usize> {
        let n = inst.modes.eigenvalues.len();
        // The lowest 2 count modes: the candidates, and the first instant's labels.
        let mut pool: Vec<Option<MassShape>> = (0..(2 * self.count).min(n))
            .map(|j| Some(MassShape::of(inst.modes.shapes.column(j).into_owned(), m)))
            .collect();
        let idx: Vec<usize> = match &self.previous {
            None => (0..self.count.min(n)).collect(),
            Some(previous) => {
                let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
                for (label, a) in previous.iter().enumerate() {
                    let Some(a) = a else { continue };
                    for (j, b) in pool.iter().flatten().enumerate() {
                        pairs.push((a.mac(b), label, j));
                    }
                }
                pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
                let mut idx = vec![usize::MAX; previous.len()];
                let mut used = vec![false; pool.len()];
                for (v, label, j) in pairs {
                    if idx[label] == usize::MAX && !used[j] {
                        idx[label] = j;
                        used[j] = true;
                        self.worst = self.worst.min(v);
                    }
                }
                idx
            }
        };
        // A label left without a mode (fewer modes than labels) has none to follow after.
        self.previous = Some(
            idx.iter()
                .map(|&j| pool.get_mut(j).and_then(Option::take))
                .collect(),
        );
        idx
    }

    /// The shapes of the modes followed at the last instant given, one per label (None for a
    /// label without a mode).
    pub fn followed_shapes(&self) -> impl Iterator<Item = Option<&DVector<f64>>> {
        self.previous
            .iter()
            .flatten()
            .map(|s| s.as_ref().map(|s| &s.phi))
    }

    /// Smallest MAC accepted between successive instants' matched modes (1 before any).
    pub fn worst_mac(&self) -> f64 {
        self.worst
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::Lever;
    use crate::element::{ElementKind, Section};
    use nalgebra::Vector2;

    use crate::bench_mesh as mesh;

    /// Following the lowest 8 modes by subspace iteration changes nothing the cycle reads:
    /// against every mode solved densely at every instant, eigenvalues within 5e-11 relative
    /// (as in subspace.rs), the full modes within 1e-11 relative (frequencies) and 1e-12
    /// absolute (damping ratios), the same modes followed.
    #[test]
    fn following_the_lowest_modes_changes_nothing_followed() {
        let m = mesh(ElementKind::Quintic, 6);
        let g = m.assemble();
        let instants: Vec<LeverInstant> = (0..150)
            .map(|i| LeverInstant::prescribed(0.3 * i as f64, 15.0, Vector2::new(0.0, 11.0)))
            .collect();
        let all = cycle_modes(
            &m,
            &g,
            &instants,
            Supports::Pinned,
            4,
            usize::MAX,
            &mut |_, _| {},
        )
        .unwrap();
        let kept = cycle_modes(&m, &g, &instants, Supports::Pinned, 4, 8, &mut |_, _| {}).unwrap();
        for (a, k) in all.iter().zip(&kept) {
            assert_eq!(k.modes.eigenvalues.len(), 8);
            assert_eq!(k.modes.shapes.ncols(), 8);
            for j in 0..8 {
                let rel = k.modes.eigenvalues[j] / a.modes.eigenvalues[j] - 1.0;
                assert!(rel.abs() < 5e-11, "t {} mode {j}: {rel:e}", a.t);
            }
            for (fa, fk) in a.full.iter().zip(&k.full) {
                let ((f1, z1), (f2, z2)) = (fa.unwrap(), fk.unwrap());
                assert!((f2 / f1 - 1.0).abs() < 1e-11 && (z2 - z1).abs() < 1e-12);
            }
        }
        let mr =
            g.m.select_rows(&m.free_dofs(Supports::Pinned))
                .select_columns(&m.free_dofs(Supports::Pinned));
        let ((la, wa), (lk, wk)) = (track(&all, &mr, 4), track(&kept, &mr, 4));
        assert_eq!(la, lk);
        assert!((wa - wk).abs() < 1e-12, "{wa} {wk}");
    }

    /// The full modes grown by Newton's method from the symmetric ones equal the eigenvalues of
    /// the whole state matrix [[0, I], [-M^-1 (K + E), -M^-1 C]] (102 x 102, nalgebra's Schur):
    /// frequencies within 1e-10 relative and damping ratios within 1e-12, at a rate 10 times
    /// the bench's (omega 150 rad/s, eps 3000 rad/s^2: damping ratios of 1e-6, frequencies
    /// moved by 1e-4, so the test sees the couplings; measured 6.4e-11 and 8.5e-14, about the
    /// reference's own rounding); the modal-basis solution agrees to its truncation (measured
    /// 1.4e-6 relative at this rate; asserted 5e-6).
    #[test]
    fn newton_full_modes_match_the_state_matrix() {
        let m = mesh(ElementKind::Quintic, 10);
        let g = m.assemble();
        let inst = LeverInstant::prescribed(150.0, 3000.0, Vector2::new(50.0, -100.0));
        let x = &cycle_matrices(&m, &g, &[inst], Supports::Pinned)[0];
        // Jacobi-scaled (x = D^-1 q) and the velocities divided by w = sqrt(|K~|): every entry
        // of the state matrix of the size of the highest frequency, so the Schur decomposition
        // errs by rounding of it (unscaled, nalgebra's unbalanced Schur is off by 30 %)
        let n = x.m.nrows();
        let d = x.m.diagonal().map(|v| 1.0 / v.sqrt());
        let sc = |a: &DMatrix<f64>| DMatrix::from_fn(n, n, |i, j| a[(i, j)] * d[i] * d[j]);
        let minv = sc(&x.m).try_inverse().unwrap();
        let stiff = &minv * sc(&(&x.k + &x.skew));
        let w = stiff.amax().sqrt();
        let mut a = DMatrix::<f64>::zeros(2 * n, 2 * n);
        a.view_mut((0, n), (n, n))
            .copy_from(&(DMatrix::<f64>::identity(n, n) * w));
        a.view_mut((n, 0), (n, n)).copy_from(&(-stiff / w));
        a.view_mut((n, n), (n, n))
            .copy_from(&(-&minv * sc(&x.gyroscopic)));
        let mut mus: Vec<Complex<f64>> = a
            .complex_eigenvalues()
            .iter()
            .copied()
            .filter(|mu| mu.im > 0.0)
            .collect();
        mus.sort_by(|p, q| p.norm().total_cmp(&q.norm()));
        let im = instant_modes(&m, &g, &inst, Supports::Pinned, 6).unwrap();
        let basis = full_in_modal_basis(&im.modes, &x.gyroscopic, &x.skew, 6);
        let (mut df, mut dz, mut db): (f64, f64, f64) = (0.0, 0.0, 0.0);
        for (i, mu) in mus.iter().take(6).enumerate() {
            let (f, z) = im.full[i].expect("every mode found");
            let (fw, zw) = (mu.norm() / std::f64::consts::TAU, -mu.re / mu.norm());
            df = df.max((f / fw - 1.0).abs());
            dz = dz.max((z - zw).abs());
            db = db.max((basis[i].expect("found").0 / fw - 1.0).abs());
        }
        eprintln!("Newton against the state matrix: frequencies {df:.1e}, damping ratios {dz:.1e}; modal basis {db:.1e}");
        assert!(df < 1e-10 && dz < 1e-12 && db < 5e-6, "{df} {dz} {db}");
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
