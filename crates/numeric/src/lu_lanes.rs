//! LU factorisation with partial pivoting of [`LANES`] systems of one order at once, side by
//! side: entry (i, j) of every system held in one short array, so that each step of the
//! elimination and of the substitutions is one vector operation over the systems instead of
//! one scalar operation per system. The inverse dynamics solves one such system per sample
//! (12 x 12 on the bench), hundreds of thousands along a recording.
//!
//! Each lane is bit for bit [`crate::lu::Lu`] on its own system (and so nalgebra's `LU`): the
//! same pivot, chosen per lane as the first largest magnitude; the same row swaps, made per
//! lane; the same multipliers (times the pivot's reciprocal) and updates `t + (-m * u)`,
//! computed for every lane and kept only where the scalar elimination makes them (a lane whose
//! pivot is zero, or whose pivot row holds a zero in a column, keeps its entries), so results do
//! not change with it (checked by the tests). No crate batches small LUs this way: faer and
//! nalgebra factor one matrix at a time.

/// Systems factored side by side: four double-precision lanes, one AVX2 vector.
pub const LANES: usize = 4;

/// One entry of the systems of a batch, lane by lane.
type Lanes = [f64; LANES];

/// The LU factors of up to [`LANES`] square systems of order n (P A = L U per lane), entry
/// (i, j) at `lu[i + j n]`; lanes past the systems given hold the identity.
#[derive(Debug, Clone)]
pub struct LuLanes {
    n: usize,
    used: usize,
    lu: Vec<Lanes>,
    /// Row swapped with row i at step i, per lane (i itself: none).
    swaps: Vec<[usize; LANES]>,
}

/// The elimination of [`LuLanes::refactor`], with AVX2 where the processor has it (the same
/// multiplications and subtractions four at a time, no fused multiply-add: the same bits).
fn eliminate(a: &mut [Lanes], n: usize, swaps: &mut [[usize; LANES]]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above).
            return unsafe { eliminate_avx2(a, n, swaps) };
        }
    }
    eliminate_portable(a, n, swaps)
}

/// [`eliminate_portable`] in AVX2 vectors, one vector per entry of the systems: the pivot
/// search by compare-and-blend, each lane's row swap in place, the multipliers and updates
/// computed for every lane and blended in where the scalar elimination makes them. Explicit
/// multiplications and additions (no fused multiply-add): the same bits as the scalar path.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn eliminate_avx2(a: &mut [Lanes], n: usize, swaps: &mut [[usize; LANES]]) {
    use std::arch::x86_64::*;
    assert!(a.len() >= n * n && swaps.len() >= n);
    // SAFETY (every load and store below): indices below n * n, checked just above; Lanes is
    // four f64, one unaligned 256-bit vector.
    let at = |a: &[Lanes], k: usize| _mm256_loadu_pd(a.as_ptr().add(k).cast());
    let put =
        |a: &mut [Lanes], k: usize, v: __m256d| _mm256_storeu_pd(a.as_mut_ptr().add(k).cast(), v);
    let sign = _mm256_set1_pd(-0.0);
    let zero = _mm256_setzero_pd();
    for i in 0..n {
        let mut best = _mm256_andnot_pd(sign, at(a, i * n + i));
        let mut piv = _mm256_set1_epi64x(i as i64);
        for r in i + 1..n {
            let v = _mm256_andnot_pd(sign, at(a, i * n + r));
            // v > best, false when either is NaN: Rust's `>`.
            let gt = _mm256_cmp_pd::<_CMP_GT_OQ>(v, best);
            best = _mm256_blendv_pd(best, v, gt);
            piv = _mm256_blendv_epi8(piv, _mm256_set1_epi64x(r as i64), _mm256_castpd_si256(gt));
        }
        let mut rows = [0i64; LANES];
        _mm256_storeu_si256(rows.as_mut_ptr().cast(), piv);
        let diag: Lanes = std::array::from_fn(|l| a[i * n + rows[l] as usize][l]);
        let diag = _mm256_loadu_pd(diag.as_ptr());
        // d != 0, true for NaN: Rust's `!=`.
        let active = _mm256_cmp_pd::<_CMP_NEQ_UQ>(diag, zero);
        let live = _mm256_movemask_pd(active);
        for (l, &p) in rows.iter().enumerate() {
            if live & (1 << l) != 0 {
                swap_rows(a, n, swaps, (i, p as usize), l);
            }
        }
        let inv = _mm256_div_pd(_mm256_set1_pd(1.0), diag);
        for r in i + 1..n {
            let v = at(a, i * n + r);
            put(
                a,
                i * n + r,
                _mm256_blendv_pd(v, _mm256_mul_pd(v, inv), active),
            );
        }
        for j in i + 1..n {
            let pk = at(a, i + j * n);
            let update = _mm256_and_pd(active, _mm256_cmp_pd::<_CMP_NEQ_UQ>(pk, zero));
            if _mm256_movemask_pd(update) == 0 {
                continue;
            }
            let neg = _mm256_xor_pd(pk, sign);
            for r in i + 1..n {
                let t = at(a, r + j * n);
                let u = _mm256_add_pd(t, _mm256_mul_pd(neg, at(a, r + i * n)));
                put(a, r + j * n, _mm256_blendv_pd(t, u, update));
            }
        }
    }
}

/// Lane `l`'s step `i` of the elimination swapping rows i and p (from column i on: L's
/// multipliers stay where each column made them) and recording the swap; nothing when p is i.
fn swap_rows(
    a: &mut [Lanes],
    n: usize,
    swaps: &mut [[usize; LANES]],
    (i, p): (usize, usize),
    l: usize,
) {
    if p == i {
        return;
    }
    swaps[i][l] = p;
    for j in i..n {
        let (x, y) = (a[i + j * n][l], a[p + j * n][l]);
        a[i + j * n][l] = y;
        a[p + j * n][l] = x;
    }
}

/// Partial pivoting's elimination of the column-major lanes `a` (n x n) in place, recording
/// each lane's swaps: [`crate::lu::Lu`]'s dense elimination lane by lane (see the module's
/// note), where the processor has no AVX2 (and in the tests, against the AVX2 one).
fn eliminate_portable(a: &mut [Lanes], n: usize, swaps: &mut [[usize; LANES]]) {
    for i in 0..n {
        // The pivot per lane: the first largest magnitude on or below the diagonal.
        let col = &a[i * n..(i + 1) * n];
        let mut best = col[i].map(f64::abs);
        let mut piv = [i; LANES];
        for (r, v) in col.iter().enumerate().skip(i + 1) {
            for l in 0..LANES {
                if v[l].abs() > best[l] {
                    (piv[l], best[l]) = (r, v[l].abs());
                }
            }
        }
        let diag: Lanes = std::array::from_fn(|l| col[piv[l]][l]);
        // A lane with no non-zero candidate skips the column, as the scalar elimination does.
        let active: [bool; LANES] = diag.map(|d| d != 0.0);
        for l in (0..LANES).filter(|&l| active[l]) {
            swap_rows(a, n, swaps, (i, piv[l]), l);
        }
        let inv = diag.map(|d| 1.0 / d);
        for v in &mut a[i + 1 + i * n..(i + 1) * n] {
            for l in 0..LANES {
                let m = v[l] * inv[l];
                v[l] = if active[l] { m } else { v[l] };
            }
        }
        let (left, rest) = a.split_at_mut((i + 1) * n);
        let coeffs = &left[i + 1 + i * n..(i + 1) * n];
        for col in rest.chunks_exact_mut(n) {
            let pk = col[i];
            // A zero in the pivot's row leaves that lane's column as it is (lu.rs says why).
            let keep: [bool; LANES] = std::array::from_fn(|l| !active[l] || pk[l] == 0.0);
            if keep.iter().all(|k| *k) {
                continue;
            }
            for (t, c) in col[i + 1..].iter_mut().zip(coeffs) {
                for l in 0..LANES {
                    let u = t[l] + -pk[l] * c[l];
                    t[l] = if keep[l] { t[l] } else { u };
                }
            }
        }
    }
}

/// The forward and back substitutions of [`LuLanes::solve_mut`] for the right-hand sides `b`
/// (one or more columns of n entries, lane by lane, one after the other), with AVX2 where the
/// processor has it.
fn substitute(f: &LuLanes, b: &mut [Lanes]) -> [bool; LANES] {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above).
            return unsafe { substitute_avx2(f, b) };
        }
    }
    substitute_portable(f, b)
}

/// [`substitute`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn substitute_avx2(f: &LuLanes, b: &mut [Lanes]) -> [bool; LANES] {
    substitute_portable(f, b)
}

/// [`crate::lu::Lu::solve_mut`]'s substitutions lane by lane, on each column of `b` (n
/// entries each): each lane's swaps applied step by step, then L's and U's columns. The
/// columns go through each step together, so that their independent operations (the back
/// substitution's divisions above all) overlap; each column's operations are those of its
/// solve alone, in the same order. A lane whose U has a zero pivot is false (its entries then
/// hold no solution; the other lanes' are unaffected).
#[inline(always)]
fn substitute_portable(f: &LuLanes, b: &mut [Lanes]) -> [bool; LANES] {
    let n = f.n;
    if n == 0 {
        return [true; LANES];
    }
    for i in 0..n.saturating_sub(1) {
        let col = &f.lu[i * n + i + 1..(i + 1) * n];
        for x in b.chunks_exact_mut(n) {
            for (l, &p) in f.swaps[i].iter().enumerate() {
                let (u, v) = (x[i][l], x[p][l]);
                x[i][l] = v;
                x[p][l] = u;
            }
            let coeff = x[i];
            for (t, m) in x[i + 1..].iter_mut().zip(col) {
                for l in 0..LANES {
                    t[l] += -coeff[l] * m[l];
                }
            }
        }
    }
    let mut regular = [true; LANES];
    for i in (0..n).rev() {
        let diag = f.lu[i + i * n];
        for l in 0..LANES {
            regular[l] &= diag[l] != 0.0;
        }
        let col = &f.lu[i * n..i * n + i];
        for x in b.chunks_exact_mut(n) {
            let coeff: Lanes = std::array::from_fn(|l| x[i][l] / diag[l]);
            x[i] = coeff;
            for (t, u) in x[..i].iter_mut().zip(col) {
                for l in 0..LANES {
                    t[l] += -coeff[l] * u[l];
                }
            }
        }
    }
    regular
}

/// `v` made the n x n identity in every lane (column-major), in its own storage.
fn identity(v: &mut Vec<Lanes>, n: usize) {
    v.clear();
    v.extend((0..n * n).map(|k| [f64::from(u8::from(k % (n + 1) == 0)); LANES]));
}

impl LuLanes {
    /// Factors of no system yet, for [`LuLanes::refactor`] to fill.
    pub fn empty() -> LuLanes {
        LuLanes {
            n: 0,
            used: 0,
            lu: Vec::new(),
            swaps: Vec::new(),
        }
    }

    /// Replace the factors by those of `systems` (1 to [`LANES`] column-major n x n matrices),
    /// lane k the k-th, in the storage these factors had: a loop over batches allocates nothing.
    pub fn refactor(&mut self, systems: &[&[f64]], n: usize) {
        assert!(
            (1..=LANES).contains(&systems.len()),
            "a batch holds 1 to {LANES} systems"
        );
        assert!(
            systems.iter().all(|a| a.len() == n * n),
            "LU of a non-square matrix"
        );
        self.n = n;
        self.used = systems.len();
        identity(&mut self.lu, n);
        for (l, a) in systems.iter().enumerate() {
            for (entry, v) in self.lu.iter_mut().zip(a.iter()) {
                entry[l] = *v;
            }
        }
        self.swaps.clear();
        self.swaps.extend((0..n).map(|i| [i; LANES]));
        eliminate(&mut self.lu, n, &mut self.swaps);
    }

    /// The order n of the systems.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// How many lanes hold a system given to [`LuLanes::refactor`].
    pub fn used(&self) -> usize {
        self.used
    }

    /// Solves A x = b lane by lane in place (b: n entries of [`LANES`] values, x on return);
    /// per lane, false when that lane's U has a zero pivot (its entries then hold no solution).
    pub fn solve_mut(&self, b: &mut [Lanes]) -> [bool; LANES] {
        assert_eq!(
            b.len(),
            self.n,
            "LU solve: right-hand side of the wrong length"
        );
        substitute(self, b)
    }

    /// The 1-norm of each lane's inverse, max_j sum_i |A^-1 (i, j)| (summed in row order, as
    /// the scalar path sums the inverse's columns), its columns solved together in `work`;
    /// per lane None when that lane's A is singular.
    pub fn inverse_norm1(&self, work: &mut Vec<Lanes>) -> [Option<f64>; LANES] {
        let n = self.n;
        if n == 0 {
            return [Some(0.0); LANES];
        }
        identity(work, n);
        let regular = substitute(self, work);
        let mut norm = [0.0f64; LANES];
        for column in work.chunks_exact(n) {
            for (l, norm) in norm.iter_mut().enumerate() {
                let sum = column.iter().map(|v| v[l].abs()).sum::<f64>();
                *norm = f64::max(*norm, sum);
            }
        }
        std::array::from_fn(|l| regular[l].then_some(norm[l]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lu::Lu;
    use flexbench_contracts::gauss::Gauss;
    use nalgebra::{DMatrix, DVector};

    fn sym(g: &mut Gauss) -> f64 {
        2.0 * g.uniform() - 1.0
    }

    /// A matrix of one of the scalar tests' cases: entries of mixed magnitudes (pivoting
    /// exercised), a zero column below the diagonal, repeated magnitudes (the first largest is
    /// the pivot), a singular one (two proportional columns), zeros in pivot rows.
    fn case(g: &mut Gauss, n: usize, case: usize) -> DMatrix<f64> {
        let mut a = DMatrix::from_fn(n, n, |_, _| {
            let v = sym(g);
            v * 10f64.powi((4.0 * sym(g)) as i32)
        });
        match case {
            1 if n > 2 => (1..n).for_each(|r| a[(r, 0)] = 0.0),
            2 if n > 2 => {
                a[(1, 0)] = -a[(0, 0)];
                a[(2, 1)] = a[(0, 1)];
            }
            3 if n > 1 => {
                let c = a.column(0) * 2.0;
                a.set_column(1, &c);
            }
            4 if n > 3 => (0..n).step_by(2).for_each(|j| a[(0, j)] = 0.0),
            5 => a.fill(0.0),
            // A dominant diagonal (no swaps) whose first row is zero in every other column,
            // the entries below those zeros negative zeros: they keep their sign only if the
            // zero in the pivot row leaves the column as it is.
            6 => {
                for j in 0..n {
                    a[(j, j)] = 1e6 * (1.0 + g.uniform());
                    if j % 2 == 1 {
                        a[(0, j)] = 0.0;
                        (1..n).filter(|r| r % 2 == 0).for_each(|r| a[(r, j)] = -0.0);
                    }
                }
            }
            _ => {}
        }
        a
    }

    /// Every lane's factors, solution, solvability and inverse 1-norm are the scalar LU's to
    /// the bit, with lanes of different cases side by side (one lane singular, the others not)
    /// and batches of 1 to LANES systems, orders 1 to 14.
    #[test]
    fn each_lane_is_the_scalar_lu() {
        let mut g = Gauss::new(23);
        let mut lanes = LuLanes::empty();
        let mut work = Vec::new();
        for n in 0..=14 {
            for round in 0..7 {
                let count = 1 + (n + round) % LANES;
                let mats: Vec<DMatrix<f64>> = (0..count)
                    .map(|k| case(&mut g, n, (round + k) % 7))
                    .collect();
                let rhs: Vec<DVector<f64>> = (0..count)
                    .map(|_| DVector::from_fn(n, |_, _| sym(&mut g)))
                    .collect();
                let slices: Vec<&[f64]> = mats.iter().map(|a| a.as_slice()).collect();
                lanes.refactor(&slices, n);
                assert_eq!((lanes.dim(), lanes.used()), (n, count));
                let mut b: Vec<Lanes> = (0..n)
                    .map(|i| std::array::from_fn(|l| rhs.get(l).map_or(0.0, |r| r[i])))
                    .collect();
                let ok = lanes.solve_mut(&mut b);
                let norms = lanes.inverse_norm1(&mut work);
                for (l, a) in mats.iter().enumerate() {
                    let scalar = Lu::new(a.clone());
                    let what = format!("n {n}, round {round}, lane {l}");
                    let mine: Vec<u64> = lanes.lu.iter().map(|v| v[l].to_bits()).collect();
                    let theirs: Vec<u64> = scalar.factors().iter().map(|v| v.to_bits()).collect();
                    assert_eq!(mine, theirs, "{what}: factors");
                    match scalar.solve(&rhs[l]) {
                        Some(x) => {
                            assert!(ok[l], "{what}: solvable");
                            let mine: Vec<u64> = b.iter().map(|v| v[l].to_bits()).collect();
                            let theirs: Vec<u64> = x.iter().map(|v| v.to_bits()).collect();
                            assert_eq!(mine, theirs, "{what}: solution");
                        }
                        None => assert!(!ok[l], "{what}: singular"),
                    }
                    let inverse_norm = scalar.try_inverse().map(|inv| {
                        inv.column_iter()
                            .map(|c| c.iter().map(|v| v.abs()).sum::<f64>())
                            .fold(0.0, f64::max)
                    });
                    assert_eq!(
                        norms[l].map(f64::to_bits),
                        inverse_norm.map(f64::to_bits),
                        "{what}: inverse's 1-norm"
                    );
                }
            }
        }
    }

    /// The portable elimination gives the bits of the one this processor runs (AVX2 here, when
    /// it has it), swaps included, on every case side by side.
    #[test]
    fn portable_equals_vector_elimination() {
        let mut g = Gauss::new(31);
        for n in [1, 2, 5, 12, 13] {
            for round in 0..7 {
                let mats: Vec<DMatrix<f64>> = (0..LANES)
                    .map(|k| case(&mut g, n, (round + k) % 7))
                    .collect();
                let mut lanes = LuLanes::empty();
                let slices: Vec<&[f64]> = mats.iter().map(|a| a.as_slice()).collect();
                lanes.refactor(&slices, n);
                let mut a: Vec<Lanes> = (0..n * n)
                    .map(|k| std::array::from_fn(|l| mats[l][k]))
                    .collect();
                let mut swaps: Vec<[usize; LANES]> = (0..n).map(|i| [i; LANES]).collect();
                eliminate_portable(&mut a, n, &mut swaps);
                let bits =
                    |v: &[Lanes]| -> Vec<u64> { v.iter().flatten().map(|x| x.to_bits()).collect() };
                assert_eq!(bits(&a), bits(&lanes.lu), "n {n}, round {round}: factors");
                assert_eq!(swaps, lanes.swaps, "n {n}, round {round}: swaps");
            }
        }
    }

    /// The solution of well-conditioned systems satisfies each to rounding, whatever lane.
    #[test]
    fn solves_each_system() {
        let mut g = Gauss::new(4);
        let n = 12;
        let mats: Vec<DMatrix<f64>> = (0..LANES)
            .map(|_| DMatrix::from_fn(n, n, |i, j| sym(&mut g) + if i == j { 4.0 } else { 0.0 }))
            .collect();
        let xs: Vec<DVector<f64>> = (0..LANES)
            .map(|_| DVector::from_fn(n, |_, _| sym(&mut g)))
            .collect();
        let mut lanes = LuLanes::empty();
        let slices: Vec<&[f64]> = mats.iter().map(|a| a.as_slice()).collect();
        lanes.refactor(&slices, n);
        let mut b: Vec<Lanes> = (0..n)
            .map(|i| std::array::from_fn(|l| (&mats[l] * &xs[l])[i]))
            .collect();
        assert_eq!(lanes.solve_mut(&mut b), [true; LANES]);
        for (l, x) in xs.iter().enumerate() {
            let err = (0..n).map(|i| (b[i][l] - x[i]).abs()).fold(0.0, f64::max);
            assert!(err < 1e-14, "lane {l}: error {err:e}");
        }
    }
}
