//! The full problem's modes one at a time: M q'' + C q' + (K + E) q = 0 (C = 2 omega [S] the
//! gyroscopic term, E = eps [S] the skew stiffness), q = x e^(mu t), is the quadratic
//! eigenproblem T(mu) x = (mu^2 M + mu C + K + E) x = 0. At the bench's rates C and E move each
//! eigenvalue from its symmetric value i sqrt(lambda) by a relative 1e-7 or so (their first-order
//! effect vanishes: both are skew), so Newton's method on T(mu) x = 0 with the normalisation
//! v^T x = 1 (v = M phi), started from the symmetric pair, converges in two or three steps:
//! u = T(mu)^-1 T'(mu) x, mu <- mu - 1 / (v^T u), x <- u / (v^T u) (Ruhe, SIAM J. Numer. Anal.
//! 10 (1973), nonlinear inverse iteration), T'(mu) = 2 mu M + C. Each step is one banded complex
//! factorisation of the 51 degrees of freedom, against the Schur decomposition of a whole state
//! matrix; the answer is that of the whole problem, not of a modal basis.

use nalgebra::{Complex, DMatrix};

use crate::band::{half_band, ComplexBandLu};

/// Newton steps tried before the mode is given up (the caller then solves the whole problem).
pub const MAX_STEPS: usize = 8;

/// Largest relative residual |T(mu) x| / (|mu|^2 |M x| + |mu| |C x| + |(K + E) x|) (largest
/// entries, Jacobi-scaled coordinates) accepted for a mode.
pub const RESIDUAL: f64 = 1e-11;

/// Share of a mode's kinetic measure x^H M x that the starting symmetric mode must hold for the
/// full mode to be called "made mostly of it" (the symmetric modes being [M]-orthonormal, more
/// than half leaves no other mode a larger share).
pub const DOMINANT_SHARE: f64 = 0.5;

/// One instant's matrices of the full problem on the free degrees of freedom, Jacobi-scaled
/// (D = diag(M)^-1/2, x = D^-1 phi), with their common half-bandwidth.
#[derive(Debug, Clone)]
pub struct FullProblem {
    m: DMatrix<f64>,
    c: DMatrix<f64>,
    k: DMatrix<f64>,
    d: Vec<f64>,
    b: usize,
}

impl FullProblem {
    /// The problem of mass `m` (kg), gyroscopic damping `c` (kg/s), symmetric stiffness `k` and
    /// skew stiffness `e` (N/m).
    pub fn new(m: &DMatrix<f64>, c: &DMatrix<f64>, k: &DMatrix<f64>, e: &DMatrix<f64>) -> Self {
        let n = m.nrows();
        let d: Vec<f64> = m.diagonal().iter().map(|v| 1.0 / v.sqrt()).collect();
        let scale = |a: &DMatrix<f64>| DMatrix::from_fn(n, n, |i, j| a[(i, j)] * d[i] * d[j]);
        let (m, c, k) = (scale(m), scale(c), scale(&(k + e)));
        let b = half_band(&m).max(half_band(&c)).max(half_band(&k));
        FullProblem { m, c, k, d, b }
    }

    /// The full mode grown from the symmetric mode of eigenvalue `lambda` (rad^2/s^2, positive)
    /// and [M]-normalised shape `phi` (unscaled): (natural frequency |mu| / 2 pi in Hz, damping
    /// ratio -Re mu / |mu|), or None when Newton's method does not converge to a mode within
    /// [`RESIDUAL`] of which `phi` holds more than [`DOMINANT_SHARE`].
    pub fn mode_from(&self, lambda: f64, phi: &[f64]) -> Option<(f64, f64)> {
        if lambda.is_nan() || lambda <= 0.0 {
            return None;
        }
        let n = self.m.nrows();
        let xs: Vec<f64> = (0..n).map(|i| phi[i] / self.d[i]).collect();
        let v = mul(&self.m, self.b, &xs);
        let norm = dot(&v, &xs);
        let mut x: Vec<Complex<f64>> = xs.iter().map(|p| Complex::new(p / norm, 0.0)).collect();
        let mut mu = Complex::new(0.0, lambda.sqrt());
        for _ in 0..MAX_STEPS {
            let lu = ComplexBandLu::new(self.t(mu), self.b)?;
            let rhs = self.apply(&x, mu * 2.0, Complex::new(1.0, 0.0), Complex::new(0.0, 0.0));
            let u = lu.solve(&rhs);
            let s: Complex<f64> = v.iter().zip(&u).map(|(a, b)| b * *a).sum();
            if s.norm() == 0.0 || !s.re.is_finite() || !s.im.is_finite() {
                return None;
            }
            let step = Complex::new(1.0, 0.0) / s;
            mu -= step;
            x = u.iter().map(|ui| ui * step).collect();
            // a step this small leaves an error of about its square: rounding
            if step.norm() <= 1e-10 * mu.norm() && self.accepted(&x, mu, &v) {
                return Some((mu.norm() / std::f64::consts::TAU, -mu.re / mu.norm()));
            }
        }
        None
    }

    /// Whether (mu, x) has a residual within [`RESIDUAL`] and is dominated by the starting
    /// shape, whose [M]-product with x is v^T x = 1 by the normalisation.
    fn accepted(&self, x: &[Complex<f64>], mu: Complex<f64>, v: &[f64]) -> bool {
        let z = Complex::new(0.0, 0.0);
        let one = Complex::new(1.0, 0.0);
        let r = self.apply(x, mu * mu, mu, one);
        let size = amax(&self.apply(x, mu * mu, z, z))
            + amax(&self.apply(x, z, mu, z))
            + amax(&self.apply(x, z, z, one));
        let mx = self.apply(x, one, z, z);
        let energy: f64 = x.iter().zip(&mx).map(|(a, b)| (a.conj() * b).re).sum();
        let own: Complex<f64> = v.iter().zip(x).map(|(a, b)| b * *a).sum();
        amax(&r) <= RESIDUAL * size && own.norm_sqr() > DOMINANT_SHARE * energy
    }

    /// T(mu) = mu^2 M + mu C + K, dense storage, zero outside the band.
    fn t(&self, mu: Complex<f64>) -> DMatrix<Complex<f64>> {
        let n = self.m.nrows();
        let mu2 = mu * mu;
        DMatrix::from_fn(n, n, |i, j| {
            if i.abs_diff(j) > self.b {
                Complex::new(0.0, 0.0)
            } else {
                mu2 * self.m[(i, j)] + mu * self.c[(i, j)] + self.k[(i, j)]
            }
        })
    }

    /// (a M + b C + c K) x.
    fn apply(
        &self,
        x: &[Complex<f64>],
        a: Complex<f64>,
        b: Complex<f64>,
        c: Complex<f64>,
    ) -> Vec<Complex<f64>> {
        let (re, im): (Vec<f64>, Vec<f64>) = x.iter().map(|v| (v.re, v.im)).unzip();
        let mut out = vec![Complex::new(0.0, 0.0); x.len()];
        for (w, mat) in [(a, &self.m), (b, &self.c), (c, &self.k)] {
            if w == Complex::new(0.0, 0.0) {
                continue;
            }
            let (pr, pi) = (mul(mat, self.b, &re), mul(mat, self.b, &im));
            for (o, (r, i)) in out.iter_mut().zip(pr.iter().zip(&pi)) {
                *o += w * Complex::new(*r, *i);
            }
        }
        out
    }
}

/// A x for a real matrix of half-bandwidth `b` and a real vector.
fn mul(a: &DMatrix<f64>, b: usize, x: &[f64]) -> Vec<f64> {
    let n = a.nrows();
    let mut y = vec![0.0; n];
    for (j, xj) in x.iter().enumerate() {
        let (lo, hi) = (j.saturating_sub(b), (j + b + 1).min(n));
        for (yi, aij) in y[lo..hi]
            .iter_mut()
            .zip(&a.as_slice()[j * n + lo..j * n + hi])
        {
            *yi += aij * xj;
        }
    }
    y
}

/// The dot product of two real vectors.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

/// The largest modulus of a complex vector's entries.
fn amax(x: &[Complex<f64>]) -> f64 {
    x.iter().map(|v| v.norm()).fold(0.0, f64::max)
}
