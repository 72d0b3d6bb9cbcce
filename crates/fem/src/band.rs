//! Banded kernels for the lever's matrices: every element couples only its own two nodes, so
//! [K], [M] and [S] on the free degrees of freedom are zero beyond a half-bandwidth of one
//! node's degrees of freedom and a half (9 of 51 for 10 quintic elements). The matrices stay in
//! nalgebra's dense storage; these loops touch the band only (n b^2 instead of n^3 for a
//! factorisation). Written here because nalgebra has no banded factorisation and the real LU of
//! `flexbench_numeric::lu` neither counts inertia nor takes complex entries.

use nalgebra::{Complex, DMatrix};

/// The half-bandwidth of `a`: the largest |i - j| with a nonzero entry a_ij.
pub fn half_band<T: PartialEq + Default + nalgebra::Scalar>(a: &DMatrix<T>) -> usize {
    let zero = T::default();
    let n = a.nrows();
    let mut b = 0;
    for (j, col) in a.as_slice().chunks_exact(n.max(1)).enumerate() {
        // the first nonzero from the top and the last from the bottom bound column j's band
        if let Some(first) = col.iter().position(|v| *v != zero) {
            let last = col.iter().rposition(|v| *v != zero).unwrap_or(first);
            b = b.max(j.saturating_sub(first)).max(last.saturating_sub(j));
        }
    }
    b
}

/// (A X)^T for a real matrix `a` of half-bandwidth `b` and X given transposed, `xt` = X^T
/// (q x n: each degree of freedom's q values contiguous, so every update is one contiguous
/// row of q, which the compiler vectorises; a product by columns was 3 times slower).
pub fn band_mul_rows(a: &DMatrix<f64>, b: usize, xt: &DMatrix<f64>) -> DMatrix<f64> {
    let (n, q) = (a.nrows(), xt.nrows());
    let mut yt = DMatrix::zeros(q, n);
    let xs = xt.as_slice();
    let ys = yt.as_mut_slice();
    for j in 0..n {
        let (lo, hi) = (j.saturating_sub(b), (j + b + 1).min(n));
        let xj = &xs[j * q..(j + 1) * q];
        for (i, aij) in (lo..hi).zip(&a.as_slice()[j * n + lo..j * n + hi]) {
            if *aij == 0.0 {
                continue;
            }
            for (y, x) in ys[i * q..(i + 1) * q].iter_mut().zip(xj) {
                *y += aij * x;
            }
        }
    }
    yt
}

/// op(A) op(B), op the transpose where asked: the small dense products of subspace iteration
/// (20 x 51 by 51 x 20) through matrixmultiply's kernels (chosen for the processor at run
/// time: AVX2 or AVX-512), where nalgebra's own loops for matrices this small run on SSE2.
pub fn product(a: &DMatrix<f64>, ta: bool, b: &DMatrix<f64>, tb: bool) -> DMatrix<f64> {
    // a column-major r x c matrix: entry (i, j) at i + j r; its transpose swaps the strides
    let view = |x: &DMatrix<f64>, t: bool| {
        let (r, c) = (x.nrows(), x.ncols());
        if t {
            (c, r, r as isize, 1isize)
        } else {
            (r, c, 1isize, r as isize)
        }
    };
    let (m, k, rsa, csa) = view(a, ta);
    let (k2, n, rsb, csb) = view(b, tb);
    assert_eq!(k, k2, "inner dimensions of a product");
    let mut c = DMatrix::zeros(m, n);
    // SAFETY: the pointers and strides describe the whole of `a`, `b` and `c` (m x k, k x n,
    // m x n as checked above), c is written only, and none overlaps another.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            0.0,
            c.as_mut_ptr(),
            1,
            m as isize,
        );
    }
    c
}

/// The Cholesky factor L (A = L L^T) of a symmetric positive definite matrix of half-bandwidth
/// `b`, kept by columns of the band: `l[j (b + 1) + (i - j)]` = L_ij for j <= i <= j + b.
#[derive(Debug, Clone)]
pub struct BandCholesky {
    n: usize,
    b: usize,
    l: Vec<f64>,
}

impl BandCholesky {
    /// Factor `a` (its lower band read); None when a pivot is not positive (not positive
    /// definite) or not finite.
    pub fn new(a: &DMatrix<f64>, b: usize) -> Option<Self> {
        let n = a.nrows();
        let w = b + 1;
        let mut l = vec![0.0; n * w];
        for j in 0..n {
            for i in j..(j + w).min(n) {
                l[j * w + (i - j)] = a[(i, j)];
            }
        }
        for j in 0..n {
            // column j: l_jj = sqrt(a_jj - sum_k l_jk^2), l_ij = (a_ij - sum_k l_ik l_jk) / l_jj,
            // k over the columns left of j that reach both rows
            let k0 = j.saturating_sub(b);
            for k in k0..j {
                let ljk = l[k * w + (j - k)];
                if ljk == 0.0 {
                    continue;
                }
                for i in j..(k + w).min(n) {
                    l[j * w + (i - j)] -= l[k * w + (i - k)] * ljk;
                }
            }
            let d = l[j * w];
            if !(d > 0.0 && d.is_finite()) {
                return None;
            }
            let s = d.sqrt();
            for v in &mut l[j * w..j * w + ((n - j).min(w))] {
                *v /= s;
            }
        }
        Some(BandCholesky { n, b, l })
    }

    /// Overwrite X with A^-1 X, X given transposed (`xt` = X^T, q x n, as in
    /// [`band_mul_rows`]): the forward and back substitutions one degree of freedom at a time,
    /// each update a contiguous row of q.
    pub fn solve_rows_mut(&self, xt: &mut DMatrix<f64>) {
        let (n, w, q) = (self.n, self.b + 1, xt.nrows());
        let xs = xt.as_mut_slice();
        for j in 0..n {
            let (head, tail) = xs.split_at_mut((j + 1) * q);
            let xj = &mut head[j * q..];
            let inv = 1.0 / self.l[j * w];
            xj.iter_mut().for_each(|v| *v *= inv);
            for i in j + 1..(j + w).min(n) {
                let lij = self.l[j * w + (i - j)];
                let xi = &mut tail[(i - j - 1) * q..(i - j) * q];
                for (y, x) in xi.iter_mut().zip(xj.iter()) {
                    *y -= lij * x;
                }
            }
        }
        for j in (0..n).rev() {
            let (head, tail) = xs.split_at_mut((j + 1) * q);
            let xj = &mut head[j * q..];
            for i in j + 1..(j + w).min(n) {
                let lij = self.l[j * w + (i - j)];
                let xi = &tail[(i - j - 1) * q..(i - j) * q];
                for (y, x) in xj.iter_mut().zip(xi) {
                    *y -= lij * x;
                }
            }
            let inv = 1.0 / self.l[j * w];
            xj.iter_mut().for_each(|v| *v *= inv);
        }
    }
}

/// The number of negative pivots of the LDL^T factorisation (no pivoting) of the symmetric
/// matrix A = `k` - `sigma` `m`, both of half-bandwidth `b`: by Sylvester's law of inertia the
/// number of eigenvalues of K phi = lambda M phi below `sigma` (M positive definite), the
/// Sturm sequence check of subspace iteration (Bathe, Finite Element Procedures, 11.6.4). None
/// when a pivot is zero or not finite (`sigma` on an eigenvalue: move it).
pub fn eigenvalues_below(
    k: &DMatrix<f64>,
    m: &DMatrix<f64>,
    b: usize,
    sigma: f64,
) -> Option<usize> {
    let n = k.nrows();
    let w = b + 1;
    // L by columns of the band, unit diagonal; the pivots d in the diagonal's place
    let mut l = vec![0.0; n * w];
    for j in 0..n {
        for i in j..(j + w).min(n) {
            l[j * w + (i - j)] = k[(i, j)] - sigma * m[(i, j)];
        }
    }
    let mut negative = 0;
    for j in 0..n {
        for kk in j.saturating_sub(b)..j {
            let (dk, ljk) = (l[kk * w], l[kk * w + (j - kk)]);
            if ljk == 0.0 {
                continue;
            }
            // a_ij -= l_ik d_k l_jk with l_ik d_k kept unscaled until column kk is divided below
            for i in j..(kk + w).min(n) {
                l[j * w + (i - j)] -= l[kk * w + (i - kk)] * ljk / dk;
            }
        }
        let d = l[j * w];
        if d == 0.0 || !d.is_finite() {
            return None;
        }
        if d < 0.0 {
            negative += 1;
        }
    }
    Some(negative)
}

/// A complex square matrix of half-bandwidth `b` factored by Gaussian elimination with partial
/// pivoting (LAPACK's zgbtrf scheme: the upper factor's band widens to 2 b), for the full
/// problem's inverse iteration on T(mu) = mu^2 M + mu C + K.
#[derive(Debug, Clone)]
pub struct ComplexBandLu {
    a: DMatrix<Complex<f64>>,
    b: usize,
    pivots: Vec<usize>,
}

impl ComplexBandLu {
    /// Factor `a` (zero outside its half-bandwidth `b`); None when a pivot column is zero.
    pub fn new(mut a: DMatrix<Complex<f64>>, b: usize) -> Option<Self> {
        let n = a.nrows();
        let mut pivots = Vec::with_capacity(n);
        for j in 0..n {
            let last = (j + b + 1).min(n);
            let right = (j + 2 * b + 1).min(n);
            let p =
                (j..last).max_by(|&x, &y| a[(x, j)].l1_norm().total_cmp(&a[(y, j)].l1_norm()))?;
            let piv = a[(p, j)];
            if piv.l1_norm() == 0.0 || !piv.re.is_finite() || !piv.im.is_finite() {
                return None;
            }
            if p != j {
                for c in j..right {
                    a.swap((p, c), (j, c));
                }
            }
            pivots.push(p);
            let inv = Complex::new(1.0, 0.0) / piv;
            for i in j + 1..last {
                let f = a[(i, j)] * inv;
                a[(i, j)] = f;
                if f == Complex::new(0.0, 0.0) {
                    continue;
                }
                for c in j + 1..right {
                    let u = a[(j, c)];
                    a[(i, c)] -= f * u;
                }
            }
        }
        Some(ComplexBandLu { a, b, pivots })
    }

    /// A^-1 x.
    pub fn solve(&self, x: &[Complex<f64>]) -> Vec<Complex<f64>> {
        let n = self.a.nrows();
        let b = self.b;
        let mut y = x.to_vec();
        for j in 0..n {
            y.swap(j, self.pivots[j]);
            let v = y[j];
            for (i, yi) in y
                .iter_mut()
                .enumerate()
                .take((j + b + 1).min(n))
                .skip(j + 1)
            {
                *yi -= self.a[(i, j)] * v;
            }
        }
        for j in (0..n).rev() {
            let mut v = y[j];
            for (c, yc) in y
                .iter()
                .enumerate()
                .take((j + 2 * b + 1).min(n))
                .skip(j + 1)
            {
                v -= self.a[(j, c)] * yc;
            }
            y[j] = v / self.a[(j, j)];
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_contracts::gauss::Gauss;

    /// A random symmetric positive definite matrix of half-bandwidth `b` and size `n`.
    fn spd_band(n: usize, b: usize, seed: u64) -> DMatrix<f64> {
        let mut g = Gauss::new(seed);
        let mut a = DMatrix::zeros(n, n);
        for j in 0..n {
            for i in j..(j + b + 1).min(n) {
                let v = if i == j {
                    4.0 * b as f64 + 1.0
                } else {
                    g.next()
                };
                a[(i, j)] = v;
                a[(j, i)] = v;
            }
        }
        a
    }

    /// The banded Cholesky solves what the dense one does, to 1e-13 relative; the band is
    /// found; the banded and dense products equal nalgebra's.
    #[test]
    fn cholesky_and_product_match_dense() {
        let a = spd_band(37, 5, 3);
        assert_eq!(half_band(&a), 5);
        let x = DMatrix::from_fn(37, 4, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
        let want = a.clone().cholesky().unwrap().solve(&x);
        let xt = x.transpose();
        assert!((product(&x, true, &x, false) - x.transpose() * &x).amax() < 1e-12);
        assert!((product(&a, false, &xt, true) - &a * &x).amax() < 1e-12);
        assert!((band_mul_rows(&a, 5, &xt) - (&a * &x).transpose()).amax() < 1e-13);
        let mut gt = xt.clone();
        BandCholesky::new(&a, 5).unwrap().solve_rows_mut(&mut gt);
        assert!((gt.transpose() - &want).amax() < 1e-13 * want.amax());
        let mut neg = a.clone();
        neg[(20, 20)] = -1.0;
        assert!(BandCholesky::new(&neg, 5).is_none());
    }

    /// The inertia count equals the number of generalized eigenvalues below the shift, at
    /// shifts between every pair of them (a dense solve for the truth).
    #[test]
    fn inertia_counts_eigenvalues_below() {
        let (k, m) = (spd_band(30, 4, 5), spd_band(30, 4, 9));
        let l = m.clone().cholesky().unwrap();
        let li = l.l().try_inverse().unwrap();
        let mut ev: Vec<f64> = (&li * &k * li.transpose())
            .symmetric_eigenvalues()
            .iter()
            .copied()
            .collect();
        ev.sort_by(f64::total_cmp);
        for (i, pair) in ev.windows(2).enumerate() {
            let sigma = 0.5 * (pair[0] + pair[1]);
            assert_eq!(
                eigenvalues_below(&k, &m, 4, sigma),
                Some(i + 1),
                "shift {sigma}"
            );
        }
        assert_eq!(eigenvalues_below(&k, &m, 4, ev[0] * 0.5), Some(0));
    }

    /// The complex banded LU (partial pivoting, a zero leading entry forcing a swap) solves to
    /// 1e-12 of what nalgebra's dense LU solves.
    #[test]
    fn complex_band_lu_matches_dense() {
        let mut g = Gauss::new(11);
        let (n, b) = (25, 3);
        let mut a = DMatrix::from_element(n, n, Complex::new(0.0, 0.0));
        for j in 0..n {
            for i in j.saturating_sub(b)..(j + b + 1).min(n) {
                a[(i, j)] = Complex::new(g.next(), g.next());
            }
        }
        a[(0, 0)] = Complex::new(0.0, 0.0);
        let x: Vec<Complex<f64>> = (0..n).map(|i| Complex::new(i as f64, 1.0)).collect();
        let want = a
            .clone()
            .lu()
            .solve(&nalgebra::DVector::from_vec(x.clone()))
            .unwrap();
        let got = ComplexBandLu::new(a, b).unwrap().solve(&x);
        let err = got
            .iter()
            .zip(want.iter())
            .map(|(p, q)| (p - q).norm())
            .fold(0.0, f64::max);
        let size = want.iter().map(|v| v.norm()).fold(1.0, f64::max);
        assert!(err < 1e-12 * size, "{err}");
    }
}
