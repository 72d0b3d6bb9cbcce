//! LU factorisation with partial pivoting of the small square systems solved at every sample:
//! the assembly's Newton-Raphson and the loop's velocity and acceleration analysis ([Phi_q;
//! c_q], 12 x 12 on the bench), the inverse dynamics' Newton-Euler system, the simulation's
//! augmented mass matrix, the lever's element and reduced matrices.
//!
//! The U factor, solutions and inverses are bit for bit nalgebra's `LU` (the same pivots,
//! chosen as the first largest magnitude; the same multipliers, times the pivot's reciprocal;
//! the same updates `-m * u + a`, in the same order: checked by the tests), so results do not
//! change with it. L's multipliers stay where each column's elimination made them (LAPACK's
//! layout) and the solve swaps the right-hand side step by step, which is the same arithmetic
//! on the same values. It runs on contiguous column-major storage instead of nalgebra's
//! generic strided views, which at these sizes spend more time in their bookkeeping than in
//! arithmetic, with AVX2 where the processor has it, and inside the band of a banded matrix.
//! No crate offers this: faer's and nalgebra's LUs are built for large or fixed sizes, and
//! neither is bit-compatible with the other.

use nalgebra::{DMatrix, DVector};

/// The least order of a system whose band is looked for.
pub const BANDED_FROM: usize = 24;

/// The LU factors of a square matrix A (column-major, n x n): P A = L U, L unit lower
/// triangular, U upper, P the row swaps in order.
#[derive(Debug, Clone)]
pub struct Lu {
    n: usize,
    lu: Vec<f64>,
    /// Row swapped with row i at step i (i itself: none).
    swaps: Vec<usize>,
    /// Lower and upper bandwidths of the factors (n - 1 each when dense).
    band: (usize, usize),
}

/// The lower and upper bandwidths of the n x n column-major matrix `a`: the largest i - j and
/// j - i of its non-zero entries.
fn bandwidths(a: &[f64], n: usize) -> (usize, usize) {
    let (mut lower, mut upper) = (0, 0);
    for (j, col) in a.chunks_exact(n.max(1)).enumerate() {
        if let Some(first) = col.iter().position(|v| *v != 0.0) {
            upper = upper.max(j.saturating_sub(first));
        }
        if let Some(last) = col.iter().rposition(|v| *v != 0.0) {
            lower = lower.max(last.saturating_sub(j));
        }
    }
    (lower, upper)
}

/// Partial pivoting's elimination of the n x n column-major `a` with bandwidths (lower,
/// upper), in place, recording the swaps: the same pivots and operations as the dense
/// elimination but those on entries that are zero and stay zero (below the lower band, and
/// right of the upper band widened by the swaps to lower + upper), so the same U up to the
/// sign of zeros. As in LAPACK's `dgbtrf`, a swap moves only the rows' parts right of the
/// pivot: each column's multipliers stay where they were made (L's band kept), and the solve
/// swaps the right-hand side step by step instead of beforehand (the same operations on the
/// same values). The lever's matrices are banded (a node's degrees of freedom meet the next
/// node's only): about n lower (lower + upper) operations instead of n^3 / 3. Returns the
/// factors' bandwidths.
fn eliminate(a: &mut [f64], n: usize, swaps: &mut [usize], band: (usize, usize)) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above).
            return unsafe { eliminate_avx2(a, n, swaps, band) };
        }
    }
    eliminate_portable(a, n, swaps, band)
}

/// [`eliminate`] compiled for AVX2: the same multiplications and subtractions four at a time
/// (no fused multiply-add), so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn eliminate_avx2(
    a: &mut [f64],
    n: usize,
    swaps: &mut [usize],
    band: (usize, usize),
) -> (usize, usize) {
    eliminate_portable(a, n, swaps, band)
}

/// [`eliminate`]'s loops, inlined into each caller so that each is compiled for its target.
#[inline(always)]
fn eliminate_portable(
    a: &mut [f64],
    n: usize,
    swaps: &mut [usize],
    (lower, upper): (usize, usize),
) -> (usize, usize) {
    let lower = lower.min(n.saturating_sub(1));
    let upper = (lower + upper).min(n.saturating_sub(1));
    for i in 0..n {
        let below = (i + lower).min(n - 1);
        let right = (i + upper).min(n - 1);
        let col = &a[i * n..(i + 1) * n];
        let (mut piv, mut best) = (i, col[i].abs());
        for (r, v) in col.iter().enumerate().take(below + 1).skip(i + 1) {
            if v.abs() > best {
                (piv, best) = (r, v.abs());
            }
        }
        let diag = col[piv];
        if diag == 0.0 {
            continue;
        }
        if piv != i {
            swaps[i] = piv;
            for j in i..=right {
                a.swap(i + j * n, piv + j * n);
            }
        }
        let inv = 1.0 / diag;
        for v in &mut a[i + 1 + i * n..=below + i * n] {
            *v *= inv;
        }
        let (left, rest) = a.split_at_mut((i + 1) * n);
        let coeffs = &left[i + 1 + i * n..=below + i * n];
        for col in rest.chunks_exact_mut(n).take(right - i) {
            let pk = col[i];
            // A zero in the pivot's row leaves the column as it is (t - 0 c = t for every
            // finite c, up to the sign of a zero t; a coefficient that is not finite makes
            // every solution so either way): the band's fill that no swap made, and the
            // systems' own zeros.
            if pk == 0.0 {
                continue;
            }
            for (t, c) in col[i + 1..=below].iter_mut().zip(coeffs) {
                *t += -pk * c;
            }
        }
    }
    (lower, upper)
}

/// The forward and back substitutions of [`Lu::solve_mut`], the swaps applied step by step
/// (AVX2 gains nothing on rows this short: measured).
fn substitute(f: &Lu, b: &mut [f64]) -> bool {
    let n = f.n;
    let (lower, upper) = f.band;
    for i in 0..n.saturating_sub(1) {
        b.swap(i, f.swaps[i]);
        let coeff = b[i];
        let below = (i + lower).min(n - 1);
        let col = &f.lu[i * n + i + 1..=i * n + below];
        for (t, l) in b[i + 1..=below].iter_mut().zip(col) {
            *t += -coeff * l;
        }
    }
    for i in (0..n).rev() {
        let diag = f.lu[i + i * n];
        if diag == 0.0 {
            return false;
        }
        let coeff = b[i] / diag;
        b[i] = coeff;
        let above = i.saturating_sub(upper);
        let col = &f.lu[i * n + above..i * n + i];
        for (t, u) in b[above..i].iter_mut().zip(col) {
            *t += -coeff * u;
        }
    }
    true
}

impl Lu {
    /// The factors of the square matrix `a` (consumed: its storage holds them). A column with
    /// no non-zero pivot candidate is skipped (the matrix is singular; [`Lu::solve`] then
    /// returns None), as nalgebra does.
    pub fn new(a: DMatrix<f64>) -> Lu {
        let n = a.nrows();
        // Below 24 unknowns (the mechanism's systems) the band is not looked for: the scan
        // would cost a good part of a factorisation that little banding could shorten.
        let band = match n >= BANDED_FROM {
            true => bandwidths(a.as_slice(), n),
            false => (n, n),
        };
        Lu::factor(a, band)
    }

    /// The factors of the square matrix `a` whose entries are zero below its lower and right
    /// of its upper bandwidth `band` (the caller knows them, as the lever's forced response
    /// does: its matrices are formed inside their band), without looking for the band.
    pub fn with_band(a: DMatrix<f64>, band: (usize, usize)) -> Lu {
        debug_assert!({
            let (lower, upper) = bandwidths(a.as_slice(), a.nrows());
            lower <= band.0 && upper <= band.1
        });
        Lu::factor(a, band)
    }

    /// The factors of `a` within the bandwidths `(lower, upper)`: banded when that saves at
    /// least two thirds of the dense elimination's work.
    fn factor(a: DMatrix<f64>, (lower, upper): (usize, usize)) -> Lu {
        let n = a.nrows();
        assert_eq!(n, a.ncols(), "LU of a non-square matrix");
        let mut lu: Vec<f64> = a.data.into();
        let mut swaps: Vec<usize> = (0..n).collect();
        let band = match 3 * lower * (lower + upper) < n * n {
            true => (lower, upper),
            false => (n, n),
        };
        let band = eliminate(&mut lu, n, &mut swaps, band);
        Lu { n, lu, swaps, band }
    }

    /// A factorisation of no system yet, for [`Lu::refactor`] to fill.
    pub fn empty() -> Lu {
        Lu {
            n: 0,
            lu: Vec::new(),
            swaps: Vec::new(),
            band: (0, 0),
        }
    }

    /// Replace the factors by those of the n x n column-major matrix `a` (dense, as
    /// [`Lu::new`] factors a system below [`BANDED_FROM`] unknowns), in the storage these
    /// factors had: a sample-by-sample loop then allocates nothing per system.
    pub fn refactor(&mut self, a: &[f64], n: usize) {
        assert_eq!(a.len(), n * n, "LU of a non-square matrix");
        self.n = n;
        self.lu.clear();
        self.lu.extend_from_slice(a);
        self.swaps.clear();
        self.swaps.extend(0..n);
        self.band = eliminate(&mut self.lu, n, &mut self.swaps, (n, n));
    }

    /// The factors L and U as the elimination leaves them (column-major; for the tests of the
    /// batched factorisation).
    #[cfg(test)]
    pub(crate) fn factors(&self) -> &[f64] {
        &self.lu
    }

    /// The order n of the system.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// The pivots: the diagonal of U.
    pub fn pivots(&self) -> Vec<f64> {
        (0..self.n).map(|i| self.lu[i + i * self.n]).collect()
    }

    /// True when U has no zero on its diagonal.
    pub fn is_invertible(&self) -> bool {
        (0..self.n).all(|i| self.lu[i + i * self.n] != 0.0)
    }

    /// Solves A x = b in place (b: n values, x on return); false when U has a zero pivot (b
    /// then holds no solution).
    pub fn solve_mut(&self, b: &mut [f64]) -> bool {
        assert_eq!(
            b.len(),
            self.n,
            "LU solve: right-hand side of the wrong length"
        );
        substitute(self, b)
    }

    /// The solution of A x = b, None when A is singular.
    pub fn solve(&self, b: &DVector<f64>) -> Option<DVector<f64>> {
        let mut x = b.clone();
        self.solve_mut(x.as_mut_slice()).then_some(x)
    }

    /// The solution of A X = B column by column, None when A is singular.
    pub fn solve_matrix(&self, b: &DMatrix<f64>) -> Option<DMatrix<f64>> {
        let mut x = b.clone();
        if self.n == 0 {
            return Some(x);
        }
        for col in x.as_mut_slice().chunks_exact_mut(self.n) {
            if !self.solve_mut(col) {
                return None;
            }
        }
        Some(x)
    }

    /// The inverse of A, None when A is singular.
    pub fn try_inverse(&self) -> Option<DMatrix<f64>> {
        self.solve_matrix(&DMatrix::identity(self.n, self.n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_contracts::gauss::Gauss;

    /// The next number of a fixed sequence, uniform in (-1, 1).
    fn sym(g: &mut Gauss) -> f64 {
        2.0 * g.uniform() - 1.0
    }

    fn bits(m: &[f64]) -> Vec<u64> {
        m.iter().map(|v| v.to_bits()).collect()
    }

    /// U, solutions and inverses bit for bit nalgebra's, on matrices of sizes 1 to 60
    /// with entries of mixed magnitudes (pivoting exercised), a zero column below the
    /// diagonal, repeated magnitudes (the first largest is the pivot) and a singular one.
    #[test]
    fn bit_for_bit_nalgebra() {
        let mut seed = Gauss::new(11);
        for n in (1..=14).chain([20, 33, 60]) {
            for case in 0..4 {
                let mut a = DMatrix::from_fn(n, n, |_, _| {
                    let v = sym(&mut seed);
                    v * 10f64.powi((4.0 * sym(&mut seed)) as i32)
                });
                if case == 1 && n > 2 {
                    for r in 1..n {
                        a[(r, 0)] = 0.0;
                    }
                }
                if case == 2 && n > 2 {
                    a[(1, 0)] = -a[(0, 0)];
                    a[(2, 1)] = a[(0, 1)];
                }
                if case == 3 && n > 1 {
                    let c = a.column(0) * 2.0;
                    a.set_column(1, &c);
                }
                let b = DMatrix::from_fn(n, 3, |_, _| sym(&mut seed));
                let ours = Lu::new(a.clone());
                let theirs = a.clone().lu();
                let u = theirs.u();
                let ours_u: Vec<f64> = (0..n)
                    .flat_map(|j| (0..n).map(move |i| (i, j)))
                    .map(|(i, j)| if i <= j { ours.lu[i + j * n] } else { 0.0 })
                    .collect();
                assert_eq!(bits(&ours_u), bits(u.as_slice()), "U, n {n} case {case}");
                let same = |x: Option<DMatrix<f64>>, y: Option<DMatrix<f64>>, what: &str| {
                    assert_eq!(x.is_some(), y.is_some(), "{what}, n {n} case {case}");
                    if let (Some(x), Some(y)) = (x, y) {
                        assert_eq!(
                            bits(x.as_slice()),
                            bits(y.as_slice()),
                            "{what}, n {n} case {case}"
                        );
                    }
                };
                same(ours.solve_matrix(&b), theirs.solve(&b), "solve");
                same(ours.try_inverse(), theirs.try_inverse(), "inverse");
                assert_eq!(ours.is_invertible(), theirs.is_invertible());
            }
        }
    }

    /// Banded matrices (the lever's): the same U, solutions and inverses as nalgebra's (equal
    /// values; zeros may differ in sign), with the diagonal as every pivot (dominant diagonal)
    /// or with rows swapped (a small diagonal entry, random bands).
    #[test]
    fn banded_equals_nalgebra() {
        let mut seed = Gauss::new(5);
        for (n, lower, upper, dominant) in [
            (52, 9, 9, true),
            (52, 9, 9, false),
            (40, 2, 5, true),
            (30, 4, 1, false),
        ] {
            let mut a = DMatrix::from_fn(n, n, |i, j| {
                let inside = i <= j + lower && j <= i + upper;
                let v = sym(&mut seed);
                if !inside {
                    0.0
                } else if i == j && dominant {
                    40.0 + v
                } else {
                    v
                }
            });
            if !dominant {
                a[(n / 2, n / 2)] = 1e-3;
            }
            let ours = Lu::new(a.clone());
            assert_eq!(ours.band, (lower, lower + upper), "n {n}: banded");
            assert_eq!(
                ours.swaps.iter().enumerate().all(|(i, p)| i == *p),
                dominant
            );
            let theirs = a.clone().lu();
            let u = theirs.u();
            for j in 0..n {
                for i in 0..=j {
                    assert_eq!(ours.lu[i + j * n], u[(i, j)], "U ({i}, {j}), n {n}");
                }
            }
            let b = DVector::from_fn(n, |_, _| sym(&mut seed));
            let (x, y) = (
                ours.solve(&b).expect("regular"),
                theirs.solve(&b).expect("regular"),
            );
            assert_eq!(x, y, "solution, n {n}");
            let (x, y) = (ours.try_inverse(), theirs.try_inverse());
            assert_eq!(x.expect("regular"), y.expect("regular"), "inverse, n {n}");
        }
    }

    /// The solution of a well-conditioned system satisfies it to rounding.
    #[test]
    fn solves_the_system() {
        let mut seed = Gauss::new(3);
        let n = 12;
        let a = DMatrix::from_fn(n, n, |i, j| sym(&mut seed) + if i == j { 4.0 } else { 0.0 });
        let x = DVector::from_fn(n, |_, _| sym(&mut seed));
        let b = &a * &x;
        let got = Lu::new(a).solve(&b).expect("regular");
        assert!((got - x).amax() < 1e-14);
    }

    /// One factorisation refilled system after system (of different orders) gives the bits
    /// of a factorisation made afresh for each.
    #[test]
    fn refactor_equals_new() {
        let mut seed = Gauss::new(17);
        let mut lu = Lu::empty();
        for n in [12, 5, 12, 30, 1] {
            let a = DMatrix::from_fn(n, n, |_, _| sym(&mut seed));
            let b = DVector::from_fn(n, |_, _| sym(&mut seed));
            lu.refactor(a.as_slice(), n);
            let fresh = Lu::new(a);
            assert_eq!(lu.pivots(), fresh.pivots(), "n {n}");
            assert_eq!(lu.solve(&b), fresh.solve(&b), "n {n}");
        }
    }

    /// A singular matrix has no solution (no panic, no infinities).
    #[test]
    fn singular_gives_none() {
        let a = DMatrix::from_row_slice(3, 3, &[1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 0.0, 1.0, 1.0]);
        let lu = Lu::new(a);
        assert!(!lu.is_invertible());
        assert!(lu.solve(&DVector::from_element(3, 1.0)).is_none());
        assert!(lu.try_inverse().is_none());
        assert!(Lu::new(DMatrix::zeros(0, 0))
            .solve(&DVector::zeros(0))
            .is_some());
    }
}
