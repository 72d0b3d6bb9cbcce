//! The Kalman/Rauch-Tung-Striebel smoother of one sampled coordinate, its parameters from the
//! data: the automatic method of the signal stage.
//!
//! Model: x(t) = h(t) + r(t) + noise.
//! - h(t) = c_0 + c_1 t + sum_{k=1..K} (a_k cos 2 pi k f0 t + b_k sin 2 pi k f0 t), the periodic
//!   part of a motion driven at a steady speed (the crank's turn): Bayesian harmonic regression
//!   over every present sample ([`PeriodicFit`]: a prior whose variance decays as a power of
//!   the harmonic number, its scale, decay and the noise by marginal likelihood), every harmonic
//!   up to 0.45 of the sample rate kept and shrunk as the data say; none when the motion is not
//!   periodic.
//! - r(t): the rest, the coordinate and its first three derivatives as the state of a white-snap
//!   model of density s ([`crate::kalman`]), smoothed by Kalman/RTS.
//! - noise: white, standard deviation sigma.
//!
//! Everything is chosen from the data: sigma and s by maximum likelihood of the innovations
//! (coordinate ascent on logarithmic grids, from sigma_0, the noise the third differences show,
//! and the density that balances it at one sample step); f0 by [`fundamental`] (over all the
//! markers' coordinates at once in `flexbench smooth`); the periodic part kept only if the
//! whole model's penalised likelihood (log-likelihood of the rest - (edf + 3)/2 ln N, edf the
//! periodic part's effective number of parameters) beats the plain smoother's. The periodic
//! part has no edge: at the ends of a recording it carries the acceleration where a one-sided
//! smoother cannot (the study in docs/signal-study.md: end zones within 1.2 times the interior).
//!
//! Gaps split the smoother's series: no smoothing across a gap, no sample invented in it,
//! segments shorter than [`MIN_SEGMENT`] rejected; a dropped frame (a step up to
//! [`MAX_STEP_RATIO`] median steps) does not split, since the model is in continuous time.
//! Each output sample carries the standard deviations of value, rate and acceleration: the
//! periodic part's posterior variance plus the smoother's (the two taken independent).

use nalgebra::{DMatrix, DVector, Matrix4, Vector4};

use crate::{Derivatives, Differentiator, Provenance, SignalError};

/// Fewest samples of a segment the smoother estimates (shorter ones are rejected).
pub const MIN_SEGMENT: usize = 8;

/// Longest time step, in median steps, bridged within a segment (a dropped frame); a longer one
/// splits the series.
pub const MAX_STEP_RATIO: f64 = 2.5;

/// Relative change of the predicted covariance below which a likelihood pass takes the filter
/// as steady (its effect on the log-likelihood is far below the search's resolution).
const STEADY_TOLERANCE: f64 = 1e-10;

/// Relative difference under which two time steps count as equal (timestamps k / rate differ in
/// their last bits; the transition is reused rather than rebuilt).
const STEP_TOLERANCE: f64 = 1e-9;

/// Most harmonics of the periodic part.
pub const MAX_HARMONICS: usize = 40;

/// The smoother's settings: each None is chosen from the data.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RtsSmoother {
    /// Measurement noise, standard deviation in the input's unit.
    pub noise: Option<f64>,
    /// Density of the white snap, input unit per s^3.5.
    pub density: Option<f64>,
    /// Fundamental frequency of the periodic part, Hz (None: [`fundamental`] of the coordinate).
    pub frequency: Option<f64>,
    /// Most harmonics of the periodic part (None: up to 0.45 of the sample rate, at most
    /// [`MAX_HARMONICS`]; Some(0): no periodic part).
    pub harmonics: Option<usize>,
}

/// What the smoother chose for one coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chosen {
    /// Measurement noise, input unit.
    pub noise: f64,
    /// Density of the white snap, input unit per s^3.5.
    pub density: f64,
    /// Log-likelihood of the innovations at the choice.
    pub log_likelihood: f64,
    /// Fundamental frequency of the periodic part, Hz (None when there is none).
    pub frequency: Option<f64>,
    /// Harmonics of the periodic part (0: none).
    pub harmonics: usize,
    /// The periodic part's prior (lambda, beta) and effective number of parameters.
    pub prior: Option<(f64, f64, f64)>,
}

/// A smoothed state of one coordinate (x, x', x'', x''') and its covariance.
type ScaledState = (Vector4<f64>, Matrix4<f64>);

/// The harmonic regression's posterior: mean, covariance and the noise variance.
type HarmonicPosterior = (DVector<f64>, DMatrix<f64>, f64);

/// The Kalman/RTS recursion of one coordinate (white snap, state x, x', x'', x''') on the state
/// scaled to the sample step tau (derivative o times tau^o, as in [`crate::kalman::kalman_rts`],
/// with fixed-size matrices): log-likelihood, and the smoothed means and covariances (SI) when
/// `smooth`. None when a covariance loses positive definiteness.
fn scalar_rts(
    t: &[f64],
    z: &[f64],
    sigma: f64,
    s: f64,
    tau: f64,
    smooth: bool,
) -> Option<(f64, Vec<ScaledState>)> {
    let model = SnapModel::new(s, tau);
    let (loglik, pred, mut states) = scalar_forward(t, z, sigma, &model, smooth)?;
    if smooth {
        scalar_backward(t, &model, &pred, &mut states)?;
    }
    Some((loglik, states))
}

/// The white-snap model on the state scaled to the sample step tau: its snap density `s` and
/// the scales d = (1, tau, tau^2, tau^3).
struct SnapModel {
    s: f64,
    tau: f64,
    d: Vector4<f64>,
}

impl SnapModel {
    fn new(s: f64, tau: f64) -> SnapModel {
        SnapModel {
            s,
            tau,
            d: Vector4::new(1.0, tau, tau * tau, tau * tau * tau),
        }
    }

    /// The transition F and (when `with_q`) the process noise Q over a step `h` (s).
    fn step(&self, h: f64, with_q: bool) -> (Matrix4<f64>, Matrix4<f64>) {
        let fact = [1.0, 1.0, 2.0, 6.0, 24.0, 120.0, 720.0];
        let (s, d) = (self.s, &self.d);
        let u = h / self.tau;
        let f = Matrix4::from_fn(|i, j| {
            if j >= i {
                u.powi((j - i) as i32) / fact[j - i]
            } else {
                0.0
            }
        });
        let q = if with_q {
            Matrix4::from_fn(|i, j| {
                let e = 7 - i - j;
                s * s * h.powi(e as i32) / (fact[3 - i] * fact[3 - j] * e as f64) * d[i] * d[j]
            })
        } else {
            Matrix4::zeros()
        };
        (f, q)
    }
}

/// The filter's prior: the first value with twice the noise, each derivative diffuse on the
/// scale of the series' range per step (in scaled units: generous, yet within a few orders of
/// the value's).
fn scalar_prior(z: &[f64], sigma: f64) -> ScaledState {
    let r = sigma * sigma;
    let (lo, hi) = z
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let range = (hi - lo).max(10.0 * sigma);
    let x = Vector4::new(z[0], 0.0, 0.0, 0.0);
    let p = Matrix4::from_diagonal(&Vector4::new(
        4.0 * r + range * range,
        1e2 * range * range,
        1e2 * range * range,
        1e2 * range * range,
    ));
    (x, p)
}

/// The filter's forward pass: the log-likelihood, and when `smooth` the predicted and the
/// filtered states (scaled). None when a covariance loses positive definiteness.
fn scalar_forward(
    t: &[f64],
    z: &[f64],
    sigma: f64,
    model: &SnapModel,
    smooth: bool,
) -> Option<(f64, Vec<ScaledState>, Vec<ScaledState>)> {
    let n = t.len();
    let r = sigma * sigma;
    let (mut x, mut p) = scalar_prior(z, sigma);
    let mut loglik = 0.0;
    let mut pred: Vec<ScaledState> = Vec::with_capacity(if smooth { n } else { 0 });
    let mut states: Vec<ScaledState> = Vec::with_capacity(if smooth { n } else { 0 });
    let mut last_h = f64::NAN;
    let (mut f, mut q) = (Matrix4::identity(), Matrix4::zeros());
    // Likelihood passes only: once the covariance stops changing at a constant step (the
    // filter's steady state, reached after a few dozen samples), the gain is constant and the
    // covariance updates are skipped until the step changes.
    let mut steady: Option<(f64, Vector4<f64>, f64)> = None;
    for k in 0..n {
        if k > 0 {
            let h = t[k] - t[k - 1];
            if (h - last_h).abs() > STEP_TOLERANCE * h || last_h.is_nan() {
                (f, q) = model.step(h, true);
                last_h = h;
                steady = None;
            }
            x = f * x;
            if steady.is_none() {
                p = f * p * f.transpose() + q;
            }
        }
        if smooth {
            pred.push((x, p));
        }
        let y = z[k] - x[0];
        let (sv, gain, ln_sv) = match steady {
            Some(sg) => sg,
            None => {
                let sv = p[(0, 0)] + r;
                if sv.is_nan() || sv <= 0.0 {
                    return None;
                }
                (sv, p.column(0) / sv, sv.ln())
            }
        };
        loglik += -0.5 * (y * y / sv + ln_sv);
        x += gain * y;
        if steady.is_none() {
            let ikh = Matrix4::identity() - gain * Vector4::x().transpose();
            let post = ikh * p * ikh.transpose() + gain * gain.transpose() * r;
            if !smooth && k > 0 {
                // steady when the predicted covariance repeats: compare with the next
                // prediction from this posterior
                let next = f * post * f.transpose() + q;
                if (next - p).amax() <= STEADY_TOLERANCE * p.amax() {
                    steady = Some((sv, gain, ln_sv));
                }
            }
            p = post;
        }
        if smooth {
            states.push((x, p));
        }
    }
    Some((loglik, pred, states))
}

/// The RTS backward pass over the filtered `states` (with the predicted ones `pred`), then the
/// states taken from scaled units to SI. None when a predicted covariance is not positive
/// definite.
fn scalar_backward(
    t: &[f64],
    model: &SnapModel,
    pred: &[ScaledState],
    states: &mut [ScaledState],
) -> Option<()> {
    let mut last_h = f64::NAN;
    let mut f = Matrix4::identity();
    for k in (0..t.len().saturating_sub(1)).rev() {
        let h = t[k + 1] - t[k];
        if (h - last_h).abs() > STEP_TOLERANCE * h || last_h.is_nan() {
            (f, _) = model.step(h, false);
            last_h = h;
        }
        let fp = f * states[k].1;
        let g = pred[k + 1].1.cholesky()?.solve(&fp).transpose();
        let xk = states[k].0 + g * (states[k + 1].0 - pred[k + 1].0);
        let pk = states[k].1 + g * (states[k + 1].1 - pred[k + 1].1) * g.transpose();
        states[k] = (xk, (pk + pk.transpose()) * 0.5);
    }
    let dinv = Matrix4::from_diagonal(&model.d.map(|v| 1.0 / v));
    for (x, p) in states.iter_mut() {
        *x = dinv * *x;
        *p = dinv * *p * dinv;
    }
    Some(())
}

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
fn basis(t: f64, t0: f64, f0: f64, harmonics: usize) -> [DVector<f64>; 3] {
    trend_harmonic_basis(t - t0, std::f64::consts::TAU * f0, harmonics)
}

/// The periodic part's basis values at time t (relative to `t0`) into `out` (length
/// 2 + 2 harmonics): 1, t, cos/sin of k 2 pi f0 t, by the angle-addition recurrence (one sine
/// and cosine per call).
fn basis_value_into(t: f64, t0: f64, f0: f64, harmonics: usize, out: &mut [f64]) {
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
fn harmonic_normals(
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
fn harmonic_fit(
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
fn harmonic_rss_shared(
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
    t0: f64,
    mean: DVector<f64>,
    cov: DMatrix<f64>,
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
struct HarmonicEvidence {
    btb: DMatrix<f64>,
    btx: DVector<f64>,
    xtx: f64,
    n: usize,
    diffuse: [f64; 2],
}

impl HarmonicEvidence {
    /// The log marginal likelihood at noise `sigma` and prior (`lambda`, `beta`), with the
    /// posterior (mean, covariance, effective parameters) when `keep`; None when the
    /// posterior precision is not positive definite.
    fn eval(
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
    fn maximise(&self, sigma0: f64, first: f64) -> (f64, f64, f64, f64) {
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

/// Runs of present samples: a gap (absent samples) or a time step longer than
/// [`MAX_STEP_RATIO`] median steps ends a run.
fn runs(t: &[f64], present: &[bool]) -> Vec<(usize, usize)> {
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let median = steps.get(steps.len() / 2).copied().unwrap_or(0.0);
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut last_present: Option<usize> = None;
    for k in 0..t.len() {
        if !present[k] {
            if let Some(s) = start.take() {
                out.push((s, k));
            }
            continue;
        }
        if let (Some(s), Some(l)) = (start, last_present) {
            if t[k] - t[l] > MAX_STEP_RATIO * median {
                out.push((s, k));
                start = None;
            }
        }
        if start.is_none() {
            start = Some(k);
        }
        last_present = Some(k);
    }
    if let Some(s) = start {
        out.push((s, t.len()));
    }
    out
}

impl RtsSmoother {
    /// The smoother with every parameter chosen from the data.
    pub fn automatic() -> Self {
        RtsSmoother::default()
    }

    /// The same with the periodic part's fundamental frequency given (Hz), e.g. found over all
    /// the markers at once by [`fundamental`].
    pub fn with_frequency(mut self, f0: Option<f64>) -> Self {
        self.frequency = f0;
        self
    }

    /// Maximum-likelihood noise and density for the residual `z` over the segments: (sigma, s,
    /// log-likelihood).
    fn ml(
        &self,
        t: &[f64],
        z: &[f64],
        segs: &[(usize, usize)],
        tau: f64,
    ) -> Option<(f64, f64, f64)> {
        let ll = |sigma: f64, s: f64| -> Option<f64> {
            let mut total = 0.0;
            for &(a, b) in segs {
                total += scalar_rts(&t[a..b], &z[a..b], sigma, s, tau, false)?.0;
            }
            Some(total)
        };
        // Starting noise: third differences of white noise have variance 20 sigma^2.
        let mut d3: Vec<f64> = segs
            .iter()
            .flat_map(|&(a, b)| {
                (a + 3..b).map(move |k| (z[k] - 3.0 * z[k - 1] + 3.0 * z[k - 2] - z[k - 3]).abs())
            })
            .collect();
        d3.sort_by(|x, y| x.total_cmp(y));
        let mad = d3.get(d3.len() / 2).copied().unwrap_or(0.0) / 0.6745;
        let span: f64 = segs
            .iter()
            .flat_map(|&(a, b)| z[a..b].iter())
            .map(|v| v.abs())
            .fold(0.0, f64::max)
            .max(1e-12);
        let sigma0 = (mad / 20f64.sqrt()).max(1e-9 * span);
        let s0 = sigma0 / tau.powf(3.5);
        let mut best: Option<(f64, f64, f64)> = None;
        let consider = |sigma: f64, s: f64, best: &mut Option<(f64, f64, f64)>| {
            if let Some(l) = ll(sigma, s) {
                if l.is_finite() && best.is_none_or(|b| l > b.2) {
                    *best = Some((sigma, s, l));
                }
            }
        };
        let sig_start = self.noise.unwrap_or(sigma0);
        match self.density {
            Some(s) => consider(sig_start, s, &mut best),
            None => {
                for e in -8..=8 {
                    consider(sig_start, s0 * 10f64.powf(0.5 * e as f64), &mut best);
                }
            }
        }
        for _ in 0..3 {
            let (sb, db, _) = best?;
            if self.noise.is_none() {
                for e in -6..=6 {
                    consider(sb * 10f64.powf(0.05 * e as f64), db, &mut best);
                }
            }
            if self.density.is_none() {
                let (sb, db, _) = best?;
                for e in -4..=4 {
                    consider(sb, db * 10f64.powf(0.125 * e as f64), &mut best);
                }
            }
        }
        best
    }

    /// Smooth one coordinate; returns its derivatives with their standard deviations and the
    /// parameters used.
    pub fn smooth(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<(Derivatives, Option<Chosen>), SignalError> {
        crate::check_input(name, t, values, present)?;
        let n = t.len();
        let mut out = Derivatives {
            sigma: vec![[f64::NAN; 3]; n],
            ..Derivatives::rejected(n)
        };
        let segs: Vec<(usize, usize)> = runs(t, present)
            .into_iter()
            .filter(|(a, b)| b - a >= MIN_SEGMENT)
            .collect();
        if segs.is_empty() {
            return Ok((out, None));
        }
        let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        steps.sort_by(|x, y| x.total_cmp(y));
        let tau = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
        let failed = || SignalError::BadInput {
            name: name.into(),
            reason: "the smoother failed for every noise and density tried".into(),
        };
        // The plain smoother.
        let plain = self.ml(t, values, &segs, tau).ok_or_else(failed)?;
        let periodic = self.periodic_part(t, values, present, &segs, tau, plain);
        let (sigma, s, l) = periodic.as_ref().map_or(plain, |p| p.1);
        let parts: Vec<([f64; 3], [f64; 3])> = match &periodic {
            None => vec![([0.0; 3], [0.0; 3]); n],
            Some(p) => p.0.evaluate(t),
        };
        for &(a, b) in &segs {
            let z: Vec<f64> = (a..b).map(|j| values[j] - parts[j].0[0]).collect();
            let (_, st) = scalar_rts(&t[a..b], &z, sigma, s, tau, true).ok_or_else(|| {
                SignalError::BadInput {
                    name: name.into(),
                    reason: "the smoother lost positive definiteness".into(),
                }
            })?;
            add_segment(&mut out, a, &st, &parts);
        }
        let (frequency, harmonics) = periodic
            .as_ref()
            .map_or((None, 0), |p| (Some(p.0.frequency), p.0.harmonics));
        let prior = periodic
            .as_ref()
            .map(|p| (p.0.lambda, p.0.beta, p.0.effective_parameters));
        Ok((
            out,
            Some(Chosen {
                noise: sigma,
                density: s,
                log_likelihood: l,
                frequency,
                harmonics,
                prior,
            }),
        ))
    }

    /// The periodic part (Bayesian harmonic regression) with the smoother's (noise, density,
    /// log-likelihood) on the rest, kept if the whole model's penalised likelihood beats the
    /// plain smoother's (`plain`) or the harmonics were given; None without a fundamental or
    /// two of its periods.
    fn periodic_part(
        &self,
        t: &[f64],
        values: &[f64],
        present: &[bool],
        segs: &[(usize, usize)],
        tau: f64,
        plain: (f64, f64, f64),
    ) -> Option<(PeriodicFit, (f64, f64, f64))> {
        let idx: Vec<usize> = segs.iter().flat_map(|&(a, b)| a..b).collect();
        let nobs = idx.len() as f64;
        let f0 = if self.harmonics == Some(0) {
            None
        } else {
            self.frequency
                .or_else(|| fundamental(t, &[(values, present)]))
        }?;
        let t_span = t[*idx.last().unwrap_or(&0)] - t[idx[0]];
        let k_auto = MAX_HARMONICS
            .min((0.45 / (tau * f0)).floor() as usize)
            .min(((nobs / 2.0 - 2.0) / 2.0).max(0.0) as usize);
        let k = self.harmonics.map_or(k_auto, |k| k.min(k_auto));
        if t_span * f0 < 2.0 {
            return None;
        }
        let fit = PeriodicFit::fit(t, values, &idx, f0, k, plain.0)?;
        let resid: Vec<f64> = (0..t.len())
            .map(|j| {
                if present[j] {
                    values[j] - fit.value_at(t[j])
                } else {
                    0.0
                }
            })
            .collect();
        let ml = self.ml(t, &resid, segs, tau)?;
        let penalised = ml.2 - 0.5 * (fit.effective_parameters + 3.0) * nobs.ln();
        (penalised > plain.2 || self.harmonics.is_some()).then_some((fit, ml))
    }
}

/// One run's smoothed states (from sample `a`) into `out`, with the periodic part's value and
/// variance (`parts`) added back; a sample whose acceleration sigma exceeds twice the run's
/// median is marked as at an edge.
fn add_segment(
    out: &mut Derivatives,
    a: usize,
    st: &[ScaledState],
    parts: &[([f64; 3], [f64; 3])],
) {
    let mut acc_sd: Vec<f64> = st.iter().map(|(_, p)| p[(2, 2)].max(0.0).sqrt()).collect();
    acc_sd.sort_by(|x, y| x.total_cmp(y));
    let median = acc_sd[acc_sd.len() / 2];
    for (i, (x, p)) in st.iter().enumerate() {
        let j = a + i;
        let (hv, hvar) = parts[j];
        out.value[j] = x[0] + hv[0];
        out.rate[j] = x[1] + hv[1];
        out.accel[j] = x[2] + hv[2];
        let rs = [p[(0, 0)], p[(1, 1)], p[(2, 2)]];
        out.sigma[j] = [0, 1, 2].map(|i| (rs[i].max(0.0) + hvar[i]).sqrt());
        out.provenance[j] = if rs[2].max(0.0).sqrt() > 2.0 * median {
            Provenance::Edge
        } else {
            Provenance::Measured
        };
    }
}

impl Differentiator for RtsSmoother {
    fn differentiate(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<Derivatives, SignalError> {
        self.smooth(name, t, values, present).map(|r| r.0)
    }

    fn describe(&self) -> String {
        let part = |v: Option<f64>, what: &str| {
            v.map_or(format!("{what} by maximum likelihood"), |x| {
                format!("{what} {x}")
            })
        };
        let periodic = match (self.harmonics, self.frequency) {
            (Some(0), _) => "no periodic part".to_string(),
            (k, f) => format!(
                "periodic part with {} at {}",
                k.map_or("harmonics by BIC".to_string(), |k| format!("{k} harmonics")),
                f.map_or(
                    "the fundamental found in the data".to_string(),
                    |f| format!("{f} Hz")
                )
            ),
        };
        format!(
            "Kalman/RTS smoother, white snap ({}, {}), {periodic}",
            part(self.noise, "noise"),
            part(self.density, "density")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed-size recursion equals the general one (crate::kalman) to rounding.
    #[test]
    fn scalar_recursion_matches_the_general_one() {
        let t: Vec<f64> = (0..200)
            .map(|k| k as f64 / 60.0 + if k > 100 { 1.0 / 60.0 } else { 0.0 })
            .collect();
        let z: Vec<f64> = t
            .iter()
            .enumerate()
            .map(|(k, &x)| 0.1 * (7.0 * x).sin() + 1e-4 * ((k * 7919 % 13) as f64 - 6.0))
            .collect();
        let (sigma, s) = (1e-4, 300.0);
        let (ll, st) = scalar_rts(&t, &z, sigma, s, 1.0 / 60.0, true).unwrap();
        let h = DMatrix::from_fn(1, 4, |_, j| if j == 0 { 1.0 } else { 0.0 });
        let obs: Vec<Option<crate::kalman::LinearObs>> = z
            .iter()
            .map(|&v| {
                Some(crate::kalman::LinearObs {
                    h: h.clone(),
                    z: DVector::from_element(1, v),
                    r: DMatrix::from_element(1, 1, sigma * sigma),
                })
            })
            .collect();
        let (lo, hi) = z
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        let range = hi - lo;
        let tau: f64 = 1.0 / 60.0;
        let mut p0 = DMatrix::zeros(4, 4);
        p0[(0, 0)] = 4.0 * sigma * sigma + range * range;
        for o in 1..4 {
            p0[(o, o)] = 1e2 * range * range / tau.powi(2 * o as i32);
        }
        let mut x0 = DVector::zeros(4);
        x0[0] = z[0];
        let obs = crate::kalman::Observations::new(&obs);
        let est = crate::kalman::kalman_rts(&t, &obs, 1, &[s], (x0, p0), true).unwrap();
        // a sum of 200 terms of order 10: agreement to 1e-6 absolute is rounding
        assert!((ll - est.loglik).abs() < 1e-6, "{ll} {}", est.loglik);
        // Means within 1e-4 of their standard deviation, variances within 1e-4 relative (the
        // diffuse prior's cancellation costs the two orderings of the arithmetic a few digits).
        for (k, (a, b)) in st.iter().zip(&est.states).enumerate() {
            for i in 0..4 {
                let sd = b.1[(i, i)].sqrt();
                assert!(
                    (a.0[i] - b.0[i]).abs() <= 1e-4 * sd,
                    "sample {k} state {i}: {} {} (sd {sd})",
                    a.0[i],
                    b.0[i]
                );
                assert!(
                    (a.1[(i, i)] - b.1[(i, i)]).abs() <= 1e-4 * b.1[(i, i)].abs(),
                    "sample {k} variance {i}: {} {}",
                    a.1[(i, i)],
                    b.1[(i, i)]
                );
            }
        }
    }

    /// A dropped frame does not split a run; an absent sample or a long hole does.
    #[test]
    fn runs_bridge_a_dropped_frame_only() {
        let mut t: Vec<f64> = (0..40).map(|k| k as f64).collect();
        t[20..].iter_mut().for_each(|x| *x += 1.0); // one frame dropped before sample 20
        t[30..].iter_mut().for_each(|x| *x += 5.0); // a hole before sample 30
        let mut present = vec![true; 40];
        present[10] = false;
        assert_eq!(runs(&t, &present), vec![(0, 10), (11, 30), (30, 40)]);
    }

    /// The fundamental of a periodic motion is found to 1e-4 relative; a chirp (no period) gives
    /// none, and the smoother then keeps no periodic part.
    #[test]
    fn fundamental_found_or_refused() {
        let t: Vec<f64> = (0..720).map(|k| k as f64 / 240.0).collect();
        let present = vec![true; t.len()];
        let w = std::f64::consts::TAU * 2.33;
        let x: Vec<f64> = t
            .iter()
            .map(|&s| (w * s).sin() + 0.3 * (2.0 * w * s + 1.0).cos())
            .collect();
        let y: Vec<f64> = t.iter().map(|&s| 0.5 * (w * s + 0.4).cos()).collect();
        let f = fundamental(&t, &[(&x, &present), (&y, &present)]).unwrap();
        assert!((f / 2.33 - 1.0).abs() < 1e-4, "{f}");
        let chirp: Vec<f64> = t
            .iter()
            .map(|&s| (std::f64::consts::TAU * (0.5 * s + 0.8 * s * s)).sin())
            .collect();
        assert_eq!(fundamental(&t, &[(&chirp, &present)]), None);
        let (_, chosen) = RtsSmoother::automatic()
            .smooth("chirp", &t, &chirp, &present)
            .unwrap();
        assert_eq!(chosen.unwrap().harmonics, 0);
    }
}
