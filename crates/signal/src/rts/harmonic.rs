//! The periodic part: the trend and harmonic basis, its Bayesian regression and evidence, and the
//! fundamental found in the data.

use super::*;

/// The harmonic regression's posterior: mean, covariance and the noise variance.
pub(super) type HarmonicPosterior = (DVector<f64>, DMatrix<f64>, f64);

/// A trend plus harmonics at time u (from the series' origin, s): value, first and second
/// time derivative of the basis 1, u, cos(k w u), sin(k w u) for k = 1..harmonics, w the
/// fundamental's angular speed (rad/s). The periodic part here and the crank's ripple in the
/// mechanism's crank-angle mode share it.
pub fn trend_harmonic_basis(u: f64, w: f64, harmonics: usize) -> [DVector<f64>; 3] {
    let p = 2 + 2 * harmonics;
    let (mut b, mut b1, mut b2) = (DVector::zeros(p), DVector::zeros(p), DVector::zeros(p));
    b[0] = 1.0;
    b[1] = u;
    b1[1] = 1.0;
    for k in 1..=harmonics {
        let wk = w * k as f64;
        let (sn, cs) = (wk * u).sin_cos();
        b[2 * k] = cs;
        b[2 * k + 1] = sn;
        b1[2 * k] = -wk * sn;
        b1[2 * k + 1] = wk * cs;
        b2[2 * k] = -wk * wk * cs;
        b2[2 * k + 1] = -wk * wk * sn;
    }
    [b, b1, b2]
}

/// The periodic part's basis at time t (relative to `t0`), fundamental `f0` in Hz.
pub(super) fn basis(t: f64, t0: f64, f0: f64, harmonics: usize) -> [DVector<f64>; 3] {
    trend_harmonic_basis(t - t0, std::f64::consts::TAU * f0, harmonics)
}

/// The periodic part's basis values at time t (relative to `t0`) into `out` (length
/// 2 + 2 harmonics): 1, t, cos/sin of k 2 pi f0 t, by the angle-addition recurrence (one sine
/// and cosine per call).
pub(super) fn basis_value_into(t: f64, t0: f64, f0: f64, harmonics: usize, out: &mut [f64]) {
    let u = t - t0;
    out[0] = 1.0;
    out[1] = u;
    let (s1, c1) = (std::f64::consts::TAU * f0 * u).sin_cos();
    let (mut sk, mut ck) = (s1, c1);
    for k in 1..=harmonics {
        out[2 * k] = ck;
        out[2 * k + 1] = sk;
        let next_c = ck * c1 - sk * s1;
        sk = sk * c1 + ck * s1;
        ck = next_c;
    }
}

/// The normal equations of the periodic part's basis over the present samples `idx`: B^T B,
/// B^T x and x^T x (the basis from the first present sample's time).
pub(super) fn harmonic_normals(
    t: &[f64],
    values: &[f64],
    idx: &[usize],
    f0: f64,
    harmonics: usize,
) -> (DMatrix<f64>, DVector<f64>, f64) {
    let p = 2 + 2 * harmonics;
    let t0 = idx.first().map_or(0.0, |&k| t[k]);
    let mut btb = DMatrix::zeros(p, p);
    let mut btx = DVector::zeros(p);
    let mut xtx = 0.0;
    let mut b = DVector::zeros(p);
    for &k in idx {
        basis_value_into(t[k], t0, f0, harmonics, b.as_mut_slice());
        btb.syger(1.0, &b, &b, 1.0);
        btx.axpy(values[k], &b, 1.0);
        xtx += values[k] * values[k];
    }
    // syger fills the lower triangle
    btb.fill_upper_triangle_with_lower_triangle();
    (btb, btx, xtx)
}

/// Least-squares fit of the periodic part to the present samples: coefficients and the residual
/// sum of squares. None when singular.
pub(super) fn harmonic_fit(
    t: &[f64],
    values: &[f64],
    idx: &[usize],
    f0: f64,
    harmonics: usize,
) -> Option<(DVector<f64>, f64)> {
    let p = 2 + 2 * harmonics;
    if idx.len() <= p {
        return None;
    }
    let t0 = t[idx[0]];
    let (ata, atb, _) = harmonic_normals(t, values, idx, f0, harmonics);
    let mut b = DVector::zeros(p);
    let c = ata.cholesky()?.solve(&atb);
    let rss = idx
        .iter()
        .map(|&k| {
            basis_value_into(t[k], t0, f0, harmonics, b.as_mut_slice());
            (values[k] - b.dot(&c)).powi(2)
        })
        .sum::<f64>();
    Some((c, rss))
}

/// The residual sums of squares of [`harmonic_fit`] for several coordinates at one frequency,
/// bit for bit: `values[c]` fitted over its present samples `sets[c].0`. The coordinates whose
/// present samples are the same (a marker's x and y, markers seen together) share the basis,
/// evaluated once per sample, and the normal matrix and its factor; each has its own right-hand
/// side and residual, summed in the samples' order as [`harmonic_fit`] does. None when a fit is
/// singular.
pub(super) fn harmonic_rss_shared(
    t: &[f64],
    values: &[&[f64]],
    sets: &[(Vec<usize>, f64)],
    f0: f64,
    harmonics: usize,
) -> Option<Vec<f64>> {
    let p = 2 + 2 * harmonics;
    let mut rss = vec![0.0; values.len()];
    let mut done = vec![false; values.len()];
    let mut basis: Vec<f64> = Vec::new();
    for c in 0..values.len() {
        if done[c] {
            continue;
        }
        let idx = &sets[c].0;
        if idx.len() <= p {
            return None;
        }
        // The basis rows of these samples and their normal matrix, as harmonic_normals.
        let t0 = t[idx[0]];
        basis.clear();
        basis.resize(idx.len() * p, 0.0);
        let mut btb = DMatrix::zeros(p, p);
        for (row, &k) in basis.chunks_exact_mut(p).zip(idx) {
            basis_value_into(t[k], t0, f0, harmonics, row);
            let b = nalgebra::DVectorView::from_slice(row, p);
            btb.syger(1.0, &b, &b, 1.0);
        }
        btb.fill_upper_triangle_with_lower_triangle();
        let chol = btb.cholesky()?;
        for d in c..values.len() {
            if done[d] || (d != c && sets[d].0 != *idx) {
                continue;
            }
            let x = values[d];
            let mut btx = DVector::zeros(p);
            for (row, &k) in basis.chunks_exact(p).zip(idx) {
                btx.axpy(x[k], &nalgebra::DVectorView::from_slice(row, p), 1.0);
            }
            let coef = chol.solve(&btx);
            rss[d] = basis
                .chunks_exact(p)
                .zip(idx)
                .map(|(row, &k)| {
                    (x[k] - nalgebra::DVectorView::from_slice(row, p).dot(&coef)).powi(2)
                })
                .sum::<f64>();
            done[d] = true;
        }
    }
    Some(rss)
}

/// The periodic part as Bayesian harmonic regression: every harmonic up to K fitted under a
/// Gaussian prior of variance lambda k^(-2 beta) per coefficient (a smooth motion's spectrum
/// decays as a power of the harmonic number), the mean and trend diffuse; noise sigma. The
/// hyperparameters (sigma, lambda, beta) maximise the marginal likelihood
/// log p(x) = -1/2 (x^T S^-1 x + ln|S| + N ln 2 pi), S = sigma^2 I + B P B^T, evaluated in the
/// coefficients' space by Woodbury (A = P^-1 + B^T B / sigma^2):
/// x^T S^-1 x = x^T x / sigma^2 - z^T A^-1 z, z = B^T x / sigma^2, ln|S| = ln|P| + ln|A| +
/// N ln sigma^2 (Rasmussen & Williams, Gaussian Processes for Machine Learning, 2006, A.9 and
/// 5.4). The posterior (mean A^-1 z, covariance A^-1) carries the uncertainty of every harmonic,
/// the weak high ones included, so that its band covers what a truncated fit would miss.
pub struct PeriodicFit {
    /// Fundamental frequency, Hz.
    pub frequency: f64,
    /// Harmonics in the basis.
    pub harmonics: usize,
    /// Noise standard deviation, input unit.
    pub noise: f64,
    /// Prior variance of the first harmonic's coefficients, input unit squared.
    pub lambda: f64,
    /// Decay exponent of the prior's standard deviation with the harmonic number.
    pub beta: f64,
    /// Marginal log-likelihood at the choice.
    pub log_likelihood: f64,
    /// Effective number of parameters, trace of the hat matrix.
    pub effective_parameters: f64,
    pub(super) t0: f64,
    pub(super) mean: DVector<f64>,
    pub(super) cov: DMatrix<f64>,
}

impl PeriodicFit {
    /// Value of the periodic part at time t.
    pub fn value_at(&self, t: f64) -> f64 {
        let mut b = vec![0.0; self.mean.len()];
        basis_value_into(t, self.t0, self.frequency, self.harmonics, &mut b);
        b.iter().zip(self.mean.iter()).map(|(x, y)| x * y).sum()
    }

    /// Value, rate and acceleration of the periodic part at each time of `ts`, with their
    /// variances (posterior), computed in blocks (matrix products, not one sample at a time).
    pub fn evaluate(&self, ts: &[f64]) -> Vec<([f64; 3], [f64; 3])> {
        const BLOCK: usize = 512;
        let p = self.mean.len();
        let mut out = Vec::with_capacity(ts.len());
        for chunk in ts.chunks(BLOCK) {
            let m = chunk.len();
            let mut rows = [
                DMatrix::zeros(m, p),
                DMatrix::zeros(m, p),
                DMatrix::zeros(m, p),
            ];
            for (i, &t) in chunk.iter().enumerate() {
                let b = basis(t, self.t0, self.frequency, self.harmonics);
                for d in 0..3 {
                    rows[d].row_mut(i).tr_copy_from(&b[d]);
                }
            }
            let vals = rows.clone().map(|r| &r * &self.mean);
            let vars = rows.map(|r| {
                let rc = &r * &self.cov;
                DVector::from_iterator(m, (0..m).map(|i| rc.row(i).dot(&r.row(i)).max(0.0)))
            });
            for i in 0..m {
                out.push((
                    [vals[0][i], vals[1][i], vals[2][i]],
                    [vars[0][i], vars[1][i], vars[2][i]],
                ));
            }
        }
        out
    }

    /// Fit the periodic part (see the type) to the present samples `idx`, harmonics up to
    /// `harmonics`, the noise search starting from `sigma0`.
    pub fn fit(
        t: &[f64],
        values: &[f64],
        idx: &[usize],
        f0: f64,
        harmonics: usize,
        sigma0: f64,
    ) -> Option<PeriodicFit> {
        let n = idx.len();
        if n <= 4 || harmonics == 0 {
            return None;
        }
        let t0 = t[idx[0]];
        let (btb, btx, xtx) = harmonic_normals(t, values, idx, f0, harmonics);
        let (lo, hi) = idx
            .iter()
            .map(|&k| values[k])
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        let range = (hi - lo).max(sigma0).max(1e-300);
        let span = (t[idx[n - 1]] - t0).max(1e-300);
        let evidence = HarmonicEvidence {
            btb,
            btx,
            xtx,
            n,
            // Diffuse mean and trend: prior variances far above the data's scale (constant in
            // the hyperparameters, so they do not bias the choice).
            diffuse: [(1e3 * range).powi(2), (1e3 * range / span).powi(2)],
        };
        // Start: lambda from the first harmonic's least-squares power, beta 3.
        let first = harmonic_fit(t, values, idx, f0, 1)
            .map(|(c, _)| 0.5 * (c[2] * c[2] + c[3] * c[3]))
            .unwrap_or(range * range);
        let (ll, sigma, lambda, beta) = evidence.maximise(sigma0, first);
        let (_, extra) = evidence.eval(sigma, lambda, beta, true)?;
        let (mean, cov, edf) = extra?;
        Some(PeriodicFit {
            frequency: f0,
            harmonics,
            noise: sigma,
            lambda,
            beta,
            log_likelihood: ll,
            effective_parameters: edf,
            t0,
            mean,
            cov,
        })
    }
}

/// The harmonic regression's evidence: the normal equations (B'B, B'x, x'x) over `n` samples
/// and the diffuse prior variances of the mean and the trend; the harmonics' prior variance is
/// lambda k^(-2 beta) for harmonic k.
pub(super) struct HarmonicEvidence {
    pub(super) btb: DMatrix<f64>,
    pub(super) btx: DVector<f64>,
    pub(super) xtx: f64,
    pub(super) n: usize,
    pub(super) diffuse: [f64; 2],
}

impl HarmonicEvidence {
    /// The log marginal likelihood at noise `sigma` and prior (`lambda`, `beta`), with the
    /// posterior (mean, covariance, effective parameters) when `keep`; None when the
    /// posterior precision is not positive definite.
    pub(super) fn eval(
        &self,
        sigma: f64,
        lambda: f64,
        beta: f64,
        keep: bool,
    ) -> Option<(f64, Option<HarmonicPosterior>)> {
        let (btb, btx, n) = (&self.btb, &self.btx, self.n);
        let p = btb.nrows();
        let s2 = sigma * sigma;
        let mut a = btb / s2;
        let mut logdet_p = 0.0;
        for j in 0..p {
            let v = if j < 2 {
                self.diffuse[j]
            } else {
                lambda * ((j / 2) as f64).powf(-2.0 * beta)
            };
            a[(j, j)] += 1.0 / v;
            logdet_p += v.ln();
        }
        let chol = a.cholesky()?;
        let z = btx / s2;
        let mean = chol.solve(&z);
        let logdet_a = 2.0 * chol.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
        let quad = self.xtx / s2 - z.dot(&mean);
        let ll = -0.5
            * (quad
                + logdet_p
                + logdet_a
                + n as f64 * s2.ln()
                + n as f64 * (std::f64::consts::TAU).ln());
        let extra = if keep {
            let cov = chol.inverse();
            let edf = (&cov * btb).trace() / s2;
            Some((mean, cov, edf))
        } else {
            None
        };
        Some((ll, extra))
    }

    /// The (log-likelihood, sigma, lambda, beta) of largest evidence: a grid over beta and
    /// lambda about `first` at `sigma0`, then coordinate ascent on logarithmic grids, each
    /// round finer.
    pub(super) fn maximise(&self, sigma0: f64, first: f64) -> (f64, f64, f64, f64) {
        let mut best = (f64::NEG_INFINITY, sigma0, first.max(1e-300), 3.0);
        let consider = |sg: f64, lm: f64, bt: f64, best: &mut (f64, f64, f64, f64)| {
            if let Some((ll, _)) = self.eval(sg, lm, bt, false) {
                if ll.is_finite() && ll > best.0 {
                    *best = (ll, sg, lm, bt);
                }
            }
        };
        for bt in [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0] {
            for e in -4..=4 {
                consider(sigma0, first * 10f64.powf(0.5 * e as f64), bt, &mut best);
            }
        }
        for round in 0..4 {
            let fine = 0.5f64.powi(round);
            let (_, sg, lm, bt) = best;
            for e in -6..=6 {
                consider(sg * 10f64.powf(0.05 * fine * e as f64), lm, bt, &mut best);
            }
            let (_, sg, lm, bt) = best;
            for e in -6..=6 {
                consider(sg, lm * 10f64.powf(0.25 * fine * e as f64), bt, &mut best);
            }
            let (_, sg, lm, bt) = best;
            for e in -6..=6 {
                consider(sg, lm, (bt + 0.25 * fine * e as f64).max(0.0), &mut best);
            }
        }
        best
    }
}

/// The fundamental frequency (Hz) of the motion seen in several coordinates sampled at `t`
/// (each with its presence flags): the frequency whose three-harmonic least-squares fit (with
/// a mean and a trend) leaves the least residual, summed over the coordinates each normalised by
/// its residual about the mean and trend alone. A grid of steps 1/(4 T) from 1.5/T to a fifth of
/// the sample rate over the first [`FUNDAMENTAL_SEARCH`] samples (T their span), then
/// golden-section refinement over the whole recording (decimated to at most
/// [`FUNDAMENTAL_REFINE`] samples, keeping at least 8 samples per period of the third
/// harmonic). None when the span holds fewer than two periods or the fit explains less than
/// half of the variance (no periodic motion).
pub fn fundamental(t: &[f64], coords: &[(&[f64], &[bool])]) -> Option<f64> {
    let n = t.len();
    if n < 16 || coords.is_empty() {
        return None;
    }
    let span = t[n - 1] - t[0];
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let h = steps[steps.len() / 2];
    let search_end = n.min(FUNDAMENTAL_SEARCH);
    let search_span = t[search_end - 1] - t[0];
    // Present samples per coordinate, within `end`, every `stride`-th; with the residual of
    // the mean and trend alone (independent of the frequency).
    let prepare = |end: usize, stride: usize| -> Option<Vec<(Vec<usize>, f64)>> {
        coords
            .iter()
            .map(|(v, p)| {
                let idx: Vec<usize> = (0..end).step_by(stride).filter(|&k| p[k]).collect();
                let (_, rss0) = harmonic_fit(t, v, &idx, 1.0, 0)?;
                Some((idx, rss0.max(1e-300)))
            })
            .collect()
    };
    let values: Vec<&[f64]> = coords.iter().map(|(v, _)| *v).collect();
    let cost = |f0: f64, sets: &[(Vec<usize>, f64)]| -> Option<f64> {
        let rss = harmonic_rss_shared(t, &values, sets, f0, 3)?;
        let total: f64 = rss.iter().zip(sets).map(|(r, (_, rss0))| r / rss0).sum();
        Some(total / coords.len() as f64)
    };
    let (fmin, fmax) = (1.5 / search_span, 0.2 / h);
    if fmax.is_nan() || fmin.is_nan() || fmax <= fmin {
        return None;
    }
    let search = prepare(search_end, 1)?;
    let df = 1.0 / (4.0 * search_span);
    let mut best: Option<(f64, f64)> = None;
    let mut f = fmin;
    while f <= fmax {
        if let Some(c) = cost(f, &search) {
            if best.is_none_or(|b| c < b.1) {
                best = Some((f, c));
            }
        }
        f += df;
    }
    let (f_best, _) = best?;
    let stride = (n / FUNDAMENTAL_REFINE)
        .max(1)
        .min(((1.0 / (3.0 * f_best * 8.0)) / h).floor().max(1.0) as usize);
    let all = prepare(n, stride)?;
    // Golden section within a grid step either side.
    let (mut a, mut b) = (f_best - df, f_best + df);
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    let (mut fc, mut fd) = (cost(c, &all)?, cost(d, &all)?);
    for _ in 0..40 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = cost(c, &all)?;
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = cost(d, &all)?;
        }
    }
    let f0 = 0.5 * (a + b);
    let explained = 1.0 - cost(f0, &all)?;
    (explained > 0.5 && span * f0 >= 2.0).then_some(f0)
}

/// Samples over which [`fundamental`] searches its grid.
pub const FUNDAMENTAL_SEARCH: usize = 2000;

/// Most samples over which [`fundamental`] refines.
pub const FUNDAMENTAL_REFINE: usize = 20_000;
