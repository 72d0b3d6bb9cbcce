//! Kalman filtering and Rauch-Tung-Striebel smoothing of sampled coordinates under a white-noise
//! model of a high derivative: the building blocks of the smoothers of markers (here) and of
//! the mechanism's driving coordinates (`flexbench-mechanism`).
//!
//! State per coordinate: the value and its derivatives up to order ORDER - 1; the ORDER-th
//! derivative is white noise of spectral density s^2 (ORDER = 4: white snap, the constant-jerk
//! model). Discretised exactly: F_ij = h^(j-i)/(j-i)!, Q_ij = s^2 h^(2m-1-i-j) / ((m-1-i)!
//! (m-1-j)! (2m-1-i-j)) (Bar-Shalom, Li & Kirubarajan, Estimation with Applications to Tracking
//! and Navigation, 6.2-6.3, generalised to order m).

use nalgebra::{DMatrix, DVector};

/// Transition and process-noise matrices over a step h for nd coordinates with densities s
/// (module documentation).
pub fn transition(nd: usize, h: f64, s: &[f64]) -> (DMatrix<f64>, DMatrix<f64>) {
    // Derivatives 0..m-1 of each driver, white noise on the m-th: F_ij = h^(j-i)/(j-i)! and
    // Q_ij = s^2 h^(2m-1-i-j) / ((m-1-i)! (m-1-j)! (2m-1-i-j)) (m = 3: the table above).
    let m = ORDER;
    let fact = |n: usize| (1..=n).map(|v| v as f64).product::<f64>();
    let mut f = DMatrix::zeros(m * nd, m * nd);
    let mut q = DMatrix::zeros(m * nd, m * nd);
    for k in 0..nd {
        for i in 0..m {
            for j in 0..m {
                if j >= i {
                    f[(m * k + i, m * k + j)] = h.powi((j - i) as i32) / fact(j - i);
                }
                let e = 2 * m - 1 - i - j;
                q[(m * k + i, m * k + j)] =
                    s[k] * s[k] * h.powi(e as i32) / (fact(m - 1 - i) * fact(m - 1 - j) * e as f64);
            }
        }
    }
    (f, q)
}

/// A linear observation z = H x + v, v ~ N(0, R), of the state at one sample.
pub struct LinearObs {
    /// Observation matrix.
    pub h: DMatrix<f64>,
    /// Observed values.
    pub z: DVector<f64>,
    /// Observation noise covariance.
    pub r: DMatrix<f64>,
}

/// The filter's (or, when smoothed, the Rauch-Tung-Striebel smoother's) state means and
/// covariances, and the innovations' log-likelihood.
pub struct Estimate {
    /// Log-likelihood of the innovations.
    pub loglik: f64,
    /// Mean and covariance of the state at every sample.
    pub states: Vec<(DVector<f64>, DMatrix<f64>)>,
}

/// The jerk densities, one per driving coordinate, that maximise `loglik`: one density common to
/// all over a logarithmic grid from 1 to 10^7 (half-decade steps), then each driver's in turn
/// over quarter-decade steps within a decade of it (two sweeps). Returns them with the
/// log-likelihood reached.
pub fn ml_jerk_densities(
    nd: usize,
    loglik: impl Fn(&[f64]) -> Option<f64>,
) -> Option<(Vec<f64>, f64)> {
    let mut best = (0..15)
        .map(|e| vec![10f64.powf(0.5 * e as f64); nd])
        .filter_map(|s| Some((loglik(&s)?, s)))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    for _ in 0..2 {
        for j in 0..nd {
            let centre = best.1[j];
            for e in -4..=4 {
                let mut s = best.1.clone();
                s[j] = centre * 10f64.powf(0.25 * e as f64);
                if let Some(l) = loglik(&s) {
                    if l > best.0 {
                        best = (l, s);
                    }
                }
            }
        }
    }
    Some((best.1, best.0))
}

/// Kalman filter over `t` for nd driving coordinates with white snap of density s (the model of
/// [`transition`]), from the prior (x0, p0) at t[0]; the RTS backward pass when `smooth`.
/// Covariance update in Joseph form. None when an innovation's covariance is not positive
/// definite.
///
/// Numerics: the recursion runs on the state scaled to the sample step tau (derivative o times
/// tau^o), where a diffuse prior and the collapsed covariances differ by far fewer orders of
/// magnitude than in SI units (at 60 samples/s the jerk's variance is 10^12 times the value's
/// unscaled; the plain recursion lost every digit there); the smoother's gain solves with the
/// Cholesky factor of the predicted covariance instead of inverting it. The scaling is exact
/// (F~ = D F D^-1, Q~ = D Q D, H~ = H D^-1); the results are returned in SI.
pub fn kalman_rts(
    t: &[f64],
    obs: &[Option<LinearObs>],
    nd: usize,
    s: &[f64],
    (x0, p0): (DVector<f64>, DMatrix<f64>),
    smooth: bool,
) -> Option<Estimate> {
    let n = t.len();
    let scaled = Scaled::new(t, nd);
    let d = &scaled.d;
    let mut x = DVector::from_fn(scaled.dim, |i, _| x0[i] * d[i]);
    let mut p = scaled.sandwich(&p0, false);
    let mut loglik = 0.0;
    let (mut xs_pred, mut ps_pred, mut states) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for k in 0..n {
        if k > 0 {
            let (f, qn) = scaled.step(t[k] - t[k - 1], s);
            x = &f * &x;
            p = &f * &p * f.transpose() + qn;
            p = (&p + p.transpose()) * 0.5;
        }
        if smooth {
            xs_pred.push(x.clone());
            ps_pred.push(p.clone());
        }
        if let Some(o) = obs[k].as_ref().filter(|o| o.h.nrows() > 0) {
            loglik += scaled.update(o, &mut x, &mut p)?;
        }
        states.push((x.clone(), p.clone()));
    }
    if smooth {
        scaled.backward(t, &xs_pred, &ps_pred, &mut states)?;
    }
    for (x, p) in states.iter_mut() {
        for i in 0..scaled.dim {
            x[i] /= d[i];
        }
        *p = scaled.sandwich(p, true);
    }
    Some(Estimate { loglik, states })
}

/// The state scaled to the sample step tau for `nd` drivers: D = diag(tau^o) per coordinate
/// (scaled quantities carry a tilde in the comments).
struct Scaled {
    nd: usize,
    dim: usize,
    d: Vec<f64>,
    /// The identity of the state's size (formed once: the update runs at every sample).
    eye: DMatrix<f64>,
}

impl Scaled {
    /// The scaling of the samples `t` (tau their median step).
    fn new(t: &[f64], nd: usize) -> Scaled {
        let dim = ORDER * nd;
        let tau = {
            let mut steps: Vec<f64> = t
                .windows(2)
                .map(|w| w[1] - w[0])
                .filter(|h| *h > 0.0)
                .collect();
            steps.sort_by(|a, b| a.total_cmp(b));
            steps.get(steps.len() / 2).copied().unwrap_or(1.0)
        };
        let d: Vec<f64> = (0..dim).map(|i| tau.powi((i % ORDER) as i32)).collect();
        Scaled {
            nd,
            dim,
            d,
            eye: DMatrix::identity(dim, dim),
        }
    }

    /// D M D (into scaled units) or D^-1 M D^-1 (`back` to SI) of a covariance.
    fn sandwich(&self, m: &DMatrix<f64>, back: bool) -> DMatrix<f64> {
        let d = &self.d;
        DMatrix::from_fn(m.nrows(), m.ncols(), |i, j| {
            if back {
                m[(i, j)] / (d[i] * d[j])
            } else {
                m[(i, j)] * d[i] * d[j]
            }
        })
    }

    /// The scaled transition F~ = D F D^-1 and noise Q~ = D Q D over a step `h` (s) with snap
    /// densities `s`.
    fn step(&self, h: f64, s: &[f64]) -> (DMatrix<f64>, DMatrix<f64>) {
        let (f, q) = transition(self.nd, h, s);
        let d = &self.d;
        let ft = DMatrix::from_fn(self.dim, self.dim, |i, j| f[(i, j)] * d[i] / d[j]);
        (ft, self.sandwich(&q, false))
    }

    /// The measurement update of (x~, P~) by `o` (H~ = H D^-1), covariance in Joseph form;
    /// returns the innovation's log-likelihood term, None when its covariance is not positive
    /// definite.
    fn update(&self, o: &LinearObs, x: &mut DVector<f64>, p: &mut DMatrix<f64>) -> Option<f64> {
        let d = &self.d;
        let h = DMatrix::from_fn(o.h.nrows(), self.dim, |i, j| o.h[(i, j)] / d[j]);
        let y = &o.z - &h * &*x;
        let chol = (&h * &*p * h.transpose() + &o.r).cholesky()?;
        let sol = chol.solve(&y);
        let ll = -0.5
            * (y.dot(&sol)
                + chol
                    .l()
                    .diagonal()
                    .iter()
                    .map(|v| 2.0 * v.ln())
                    .sum::<f64>());
        // K = P H^T S^-1 = (S^-1 H P)^T
        let gain = chol.solve(&(&h * &*p)).transpose();
        *x = &*x + &gain * y;
        let ikh = &self.eye - &gain * &h;
        *p = &ikh * &*p * ikh.transpose() + &gain * &o.r * gain.transpose();
        *p = (&*p + p.transpose()) * 0.5;
        Some(ll)
    }

    /// The RTS backward pass over the filtered `states` with the predicted means and
    /// covariances; the gain solves with the Cholesky factor of the predicted covariance (LU
    /// where it fails). None when neither solves.
    fn backward(
        &self,
        t: &[f64],
        xs_pred: &[DVector<f64>],
        ps_pred: &[DMatrix<f64>],
        states: &mut [(DVector<f64>, DMatrix<f64>)],
    ) -> Option<()> {
        let zero = vec![0.0; self.nd];
        for k in (0..t.len().saturating_sub(1)).rev() {
            let (f, _) = self.step(t[k + 1] - t[k], &zero);
            // G = P_k F^T Ppred^-1 = (Ppred^-1 F P_k)^T
            let fp = &f * &states[k].1;
            let g = match ps_pred[k + 1].clone().cholesky() {
                Some(c) => c.solve(&fp).transpose(),
                None => ps_pred[k + 1].clone().lu().solve(&fp)?.transpose(),
            };
            let xk = &states[k].0 + &g * (&states[k + 1].0 - &xs_pred[k + 1]);
            let pk = &states[k].1 + &g * (&states[k + 1].1 - &ps_pred[k + 1]) * g.transpose();
            states[k] = (xk, (&pk + pk.transpose()) * 0.5);
        }
        Some(())
    }
}

/// The state's size per driver: the driver and its derivatives up to order ORDER - 1, the
/// ORDER-th derivative white noise.
pub const ORDER: usize = 4;

/// A prior for nd coordinates at the first sample: their values `values` with covariance
/// `value_cov` (nd x nd), every derivative diffuse (variance 1e2 for the rate, times 1e4 per
/// order above).
pub fn diffuse_prior(
    values: &DVector<f64>,
    value_cov: &DMatrix<f64>,
) -> (DVector<f64>, DMatrix<f64>) {
    let nd = values.len();
    let mut x = DVector::zeros(ORDER * nd);
    let mut p = DMatrix::zeros(ORDER * nd, ORDER * nd);
    for i in 0..nd {
        x[ORDER * i] = values[i];
        for j in 0..nd {
            p[(ORDER * i, ORDER * j)] = value_cov[(i, j)];
        }
        for o in 1..ORDER {
            p[(ORDER * i + o, ORDER * i + o)] = 1e2 * 1e4f64.powi(o as i32 - 1);
        }
    }
    (x, p)
}
