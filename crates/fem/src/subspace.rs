//! The lowest modes of the lever along the cycle without solving for all of them: subspace
//! iteration (Bathe, Finite Element Procedures, 11.6) started from the previous instant's Ritz
//! vectors, which the next instant's modes are close to (the matrices change with the crank's
//! rate and the axial force, a little per sample). Each instant's modes are accepted only when
//! the residual of every one of them is below [`RESIDUAL`] and the Sturm sequence count confirms
//! that no mode below the highest one kept was missed; otherwise (and at the first instant) the
//! dense solver ([`symmetric_modes`]) gives them.

use nalgebra::DMatrix;

use crate::band::{band_mul_rows, eigenvalues_below, half_band, product, BandCholesky};
use crate::modal::{symmetric_modes, Modes};
use crate::FemError;

/// Largest relative residual |K phi - lambda M phi| / |lambda M phi| accepted for a mode
/// (largest entry, in the Jacobi-scaled coordinates of [`symmetric_modes`]). Along a turn
/// sampled 200 times this leaves the eigenvalues within 2.1e-11 of the dense solver's
/// (frequencies within 1.1e-11) and the shapes within 1.7e-9 (`make test`); 1e-10 would
/// give 1.3e-12 and 5e-10 for 1.3 iterations per instant on the bench's turn sampled 1000
/// times instead of 1.0 (`make bench`).
pub const RESIDUAL: f64 = 3e-10;

/// Subspace iterations tried at one instant before the dense solver is called instead.
pub const MAX_ITERATIONS: usize = 12;

/// Follows the lowest `count` modes of K phi = lambda M phi from one instant to the next.
#[derive(Debug, Clone)]
pub struct ModeFollower {
    count: usize,
    /// The previous instant's Ritz vectors (the lowest `size`, scaled coordinates, one per
    /// row).
    basis: Option<DMatrix<f64>>,
    /// The mass matrix of the last instant, scaled (the lever's mass does not change along
    /// the cycle: formed once).
    mass: Option<Mass>,
    /// Instants solved by subspace iteration, by the dense solver, and the iterations taken.
    stats: FollowerStats,
    /// The largest relative residual accepted ([`RESIDUAL`] unless set).
    residual: f64,
}

/// How a [`ModeFollower`]'s instants were solved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FollowerStats {
    /// Instants whose modes subspace iteration gave.
    pub iterated: usize,
    /// Instants solved densely (the first one, or where iteration was not accepted).
    pub dense: usize,
    /// Subspace iterations over all iterated instants.
    pub iterations: usize,
}

impl ModeFollower {
    /// A follower of the lowest `count` modes, with no instant seen yet.
    pub fn new(count: usize) -> Self {
        Self::with_residual(count, RESIDUAL)
    }

    /// A follower of the lowest `count` modes accepting relative residuals up to `residual`:
    /// for a model whose stiffest mode lies so far above the lowest (a plate across its depth:
    /// 1e8 in lambda) that rounding alone leaves residuals above [`RESIDUAL`].
    pub fn with_residual(count: usize, residual: f64) -> Self {
        ModeFollower {
            count,
            basis: None,
            mass: None,
            stats: FollowerStats::default(),
            residual,
        }
    }

    /// How the instants so far were solved.
    pub fn stats(&self) -> FollowerStats {
        self.stats
    }

    /// The lowest `count` modes (all of them when there are fewer degrees of freedom) of one
    /// instant's stiffness `k` (N/m) and mass `m` (kg) on the free degrees of freedom: values
    /// and [M]-orthonormal shapes, as [`symmetric_modes`] gives them.
    pub fn modes(&mut self, k: &DMatrix<f64>, m: &DMatrix<f64>) -> Result<Modes, FemError> {
        let n = m.nrows();
        let count = self.count.min(n);
        let size = self.size(n);
        if size < n {
            if self
                .mass
                .as_ref()
                .is_none_or(|c| c.m.as_slice() != m.as_slice())
            {
                self.mass = Mass::new(m);
            }
            if let (Some(start), Some(mass)) = (self.basis.take(), self.mass.as_ref()) {
                if let Some((modes, basis, its)) = iterate(k, mass, count, start, self.residual) {
                    self.basis = Some(basis);
                    self.stats.iterated += 1;
                    self.stats.iterations += its;
                    return Ok(modes);
                }
            }
        }
        let mut modes = symmetric_modes(k, m)?;
        self.stats.dense += 1;
        let d = scaling(m);
        let keep = size.min(n);
        self.basis = Some(DMatrix::from_fn(keep, n, |j, i| {
            modes.shapes[(i, j)] / d[i]
        }));
        modes.eigenvalues.truncate(count);
        if count < modes.shapes.ncols() {
            modes.shapes = modes.shapes.columns(0, count).into_owned();
        }
        Ok(modes)
    }

    /// The subspace's size for `count` modes: count + 8 guard vectors, at most twice count
    /// (Bathe's min(2 p, p + 8)), the convergence of mode i going as (lambda_i /
    /// lambda_size+1)^2 per iteration.
    fn size(&self, n: usize) -> usize {
        let c = self.count.min(n);
        (2 * c).min(c + 8).max(c + 1).min(n)
    }
}

/// The lever's mass matrix as the iteration uses it.
#[derive(Debug, Clone)]
struct Mass {
    /// [M], kg, as given (to tell whether the next instant's is the same).
    m: DMatrix<f64>,
    /// D = diag(M)^-1/2.
    d: Vec<f64>,
    /// D M D.
    ms: DMatrix<f64>,
    /// Its half-bandwidth.
    band: usize,
}

impl Mass {
    /// The scaled mass; None when a diagonal entry is not positive (the dense solver then
    /// says so).
    fn new(m: &DMatrix<f64>) -> Option<Self> {
        if m.diagonal().iter().any(|v| v.is_nan() || *v <= 0.0) {
            return None;
        }
        let d = scaling(m);
        let ms = scaled(m, &d);
        let band = half_band(&ms);
        Some(Mass {
            m: m.clone(),
            d,
            ms,
            band,
        })
    }
}

/// D = diag(M)^-1/2, the Jacobi scaling of [`symmetric_modes`] (x = D^-1 phi).
fn scaling(m: &DMatrix<f64>) -> Vec<f64> {
    m.diagonal().iter().map(|v| 1.0 / v.sqrt()).collect()
}

/// Subspace iteration for the lowest `count` modes from the Ritz vectors `start` (scaled
/// coordinates, transposed: q x n): the modes, the new Ritz vectors, the iterations taken; None
/// when [K] is not positive definite (buckled or spun past it: the dense solver orders
/// negative eigenvalues), the iteration does not reach [`RESIDUAL`], or the Sturm count
/// disagrees. X^T is kept transposed so that every banded update is a contiguous row.
fn iterate(
    k: &DMatrix<f64>,
    mass: &Mass,
    count: usize,
    start: DMatrix<f64>,
    residual: f64,
) -> Option<(Modes, DMatrix<f64>, usize)> {
    let (n, d, ms) = (mass.ms.nrows(), &mass.d, &mass.ms);
    let ks = scaled(k, d);
    let b = half_band(&ks).max(mass.band);
    let chol = BandCholesky::new(&ks, b)?;
    let mut xt = start;
    for it in 1..=MAX_ITERATIONS {
        // X <- K^-1 M X, then the Rayleigh-Ritz step on its span: K_r z = theta M_r z with
        // K_r = Xb^T K Xb = Xb^T (M X) and M_r = Xb^T M Xb
        let yt = band_mul_rows(ms, b, &xt);
        let mut xbt = yt.clone();
        chol.solve_rows_mut(&mut xbt);
        let kr = product(&xbt, false, &yt, true);
        let mr = product(&xbt, false, &band_mul_rows(ms, b, &xbt), true);
        let (theta, z) = ritz(&kr, &mr)?;
        xt = product(&z, true, &xbt, false);
        if converged(&ks, ms, b, &xt, &theta, count, residual) {
            let sigma = 0.5 * (theta[count - 1] + theta[count]);
            if eigenvalues_below(&ks, ms, b, sigma)? != count {
                return None;
            }
            let shapes = DMatrix::from_fn(n, count, |i, j| xt[(j, i)] * d[i]);
            let modes = Modes {
                eigenvalues: theta[..count].to_vec(),
                shapes,
            };
            return Some((modes, xt, it));
        }
    }
    None
}

/// D A D for D = diag(`d`).
fn scaled(a: &DMatrix<f64>, d: &[f64]) -> DMatrix<f64> {
    let n = a.nrows();
    let mut out = a.clone();
    for (j, col) in out.as_mut_slice().chunks_exact_mut(n).enumerate() {
        for (v, di) in col.iter_mut().zip(d) {
            *v *= di * d[j];
        }
    }
    out
}

/// The Ritz values (ascending) and [M_r]-orthonormal vectors of K_r z = theta M_r z: both
/// scaled to a unit diagonal of M_r first (S = diag(M_r)^-1/2: the vectors K^-1 M X are of
/// sizes 1 / lambda, decades apart), then reduced through M_r's Cholesky factor, C = L^-1 K_r
/// L^-T (L^-1 formed: it is q x q, and its products run on matrixmultiply's kernels), z = S
/// L^-T q for C's eigenvectors q. None when M_r is not positive definite (the subspace
/// collapsed).
fn ritz(kr: &DMatrix<f64>, mr: &DMatrix<f64>) -> Option<(Vec<f64>, DMatrix<f64>)> {
    let q = kr.nrows();
    let s: Vec<f64> = (0..q).map(|i| 1.0 / mr[(i, i)].sqrt()).collect();
    let sym = |a: &DMatrix<f64>| {
        DMatrix::from_fn(q, q, |i, j| 0.5 * (a[(i, j)] + a[(j, i)]) * s[i] * s[j])
    };
    let l = sym(mr).cholesky()?.unpack();
    let li = lower_inverse(&l)?;
    let c = product(&product(&li, false, &sym(kr), false), false, &li, true);
    let eig = ((&c + c.transpose()) * 0.5).symmetric_eigen();
    let mut z = product(&li, true, &eig.eigenvectors, false);
    for (i, row) in s.iter().enumerate() {
        z.row_mut(i).scale_mut(*row);
    }
    let mut order: Vec<usize> = (0..q).collect();
    order.sort_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]));
    let theta = order.iter().map(|&i| eig.eigenvalues[i]).collect();
    Some((theta, z.select_columns(&order)))
}

/// The inverse of a lower triangular matrix with a positive diagonal, column by column
/// (forward substitution on the identity's columns, zeros above the diagonal skipped); None
/// when a diagonal entry is zero or the result not finite.
fn lower_inverse(l: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let q = l.nrows();
    let mut x = DMatrix::zeros(q, q);
    for c in 0..q {
        x[(c, c)] = 1.0 / l[(c, c)];
        for i in c + 1..q {
            let mut v = 0.0;
            for k in c..i {
                v -= l[(i, k)] * x[(k, c)];
            }
            x[(i, c)] = v / l[(i, i)];
        }
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Whether each of the lowest `count` Ritz pairs has |K x - theta M x| <= [`RESIDUAL`]
/// |theta M x| (largest entries; `xt` the Ritz vectors transposed, one per row).
fn converged(
    ks: &DMatrix<f64>,
    ms: &DMatrix<f64>,
    b: usize,
    xt: &DMatrix<f64>,
    theta: &[f64],
    count: usize,
    residual: f64,
) -> bool {
    let xp = xt.rows(0, count).into_owned();
    let kx = band_mul_rows(ks, b, &xp);
    let mx = band_mul_rows(ms, b, &xp);
    (0..count).all(|j| {
        let r = (kx.row(j) - mx.row(j) * theta[j]).amax();
        r <= residual * (mx.row(j) * theta[j]).amax()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::Supports;
    use crate::cycle::cycle_matrices;
    use crate::element::ElementKind;
    use crate::loads::LeverInstant;
    use nalgebra::Vector2;

    /// Along a prescribed crank turn (the rate, the acceleration and the load varying), the
    /// followed lowest 12 modes equal the dense solver's: eigenvalues within 5e-11 relative,
    /// shapes within 5e-9 of their largest entry (signs aligned), every residual
    /// |K phi - lambda M phi| below 5e-9 of |lambda M phi|; every instant but the first
    /// iterated, in at most 5 iterations on average.
    #[test]
    fn follower_matches_the_dense_solver_along_a_turn() {
        let mesh = crate::bench_mesh(ElementKind::Quintic, 10);
        let g = mesh.assemble();
        let instants: Vec<LeverInstant> = (0..200)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / 200.0;
                let mut inst = LeverInstant::prescribed(
                    15.0 + 3.0 * a.sin(),
                    300.0 * a.cos(),
                    Vector2::new(5.0 * a.cos(), -10.0 * a.sin()),
                );
                inst.force_c = Vector2::new(-400.0 * a.sin(), 0.0);
                inst
            })
            .collect();
        let mats = cycle_matrices(&mesh, &g, &instants, Supports::Pinned);
        let mut f = ModeFollower::new(12);
        let (mut dl, mut ds): (f64, f64) = (0.0, 0.0);
        let (mut rg, mut rw): (f64, f64) = (0.0, 0.0);
        let residual = |x: &crate::cycle::InstantMatrices, md: &Modes, j: usize| {
            let phi = md.shapes.column(j);
            let mx = &x.m * phi * md.eigenvalues[j];
            (&x.k * phi - &mx).amax() / mx.amax()
        };
        for x in &mats {
            let got = f.modes(&x.k, &x.m).unwrap();
            let want = symmetric_modes(&x.k, &x.m).unwrap();
            assert_eq!(got.eigenvalues.len(), 12);
            for j in 0..12 {
                rg = rg.max(residual(x, &got, j));
                rw = rw.max(residual(x, &want, j));
                dl = dl.max((got.eigenvalues[j] / want.eigenvalues[j] - 1.0).abs());
                let (a, w) = (got.shapes.column(j), want.shapes.column(j));
                let s = a.dot(&(&x.m * w)).signum();
                ds = ds.max((a * s - w).amax() / w.amax());
            }
        }
        let st = f.stats();
        eprintln!(
            "follower: eigenvalues within {dl:.1e}, shapes within {ds:.1e}; residuals {rg:.1e} (dense {rw:.1e}); {st:?}, {:.2} iterations per iterated instant",
            st.iterations as f64 / st.iterated as f64
        );
        // measured: 2.1e-11, 1.7e-9 and 2.7e-9 (the dense solver's own residuals 4.6e-10)
        assert!(dl < 5e-11 && ds < 5e-9 && rg < 5e-9, "{dl} {ds} {rg}");
        assert!(st.dense <= 2 && st.iterations <= 5 * st.iterated, "{st:?}");
    }

    /// A buckled lever ([K] indefinite) and a mode that jumps below the kept ones are handed
    /// to the dense solver, with the dense solver's answer.
    #[test]
    fn buckled_lever_falls_back_to_dense() {
        let mesh = crate::bench_mesh(ElementKind::Quintic, 10);
        let g = mesh.assemble();
        let p_cr = std::f64::consts::PI.powi(2) * 210e9 * 4.5e-10 / 0.45f64.powi(2);
        let mut f = ModeFollower::new(6);
        for factor in [0.0, -1.5] {
            let mut inst = LeverInstant::prescribed(0.0, 0.0, Vector2::zeros());
            inst.force_c = Vector2::new(factor * p_cr, 0.0);
            let x = &cycle_matrices(&mesh, &g, &[inst], Supports::Pinned)[0];
            let got = f.modes(&x.k, &x.m).unwrap();
            let want = symmetric_modes(&x.k, &x.m).unwrap();
            assert_eq!(got.eigenvalues[..], want.eigenvalues[..6]);
        }
        assert_eq!(f.stats().dense, 2);
    }
}
