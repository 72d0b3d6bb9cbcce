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
                q[(m * k + i, m * k + j)] = s[k] * s[k] * h.powi(e as i32) / (fact(m - 1 - i) * fact(m - 1 - j) * e as f64);
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
pub fn ml_jerk_densities(nd: usize, loglik: impl Fn(&[f64]) -> Option<f64>) -> Option<(Vec<f64>, f64)> {
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

/// Kalman filter over `t` for nd driving coordinates with white jerk of density s (the
/// constant-acceleration model of [`transition`]), from the prior (x0, p0) at t[0]; the RTS
/// backward pass when `smooth`. Covariance update in Joseph form. None when an innovation's
/// covariance is not positive definite.
pub fn kalman_rts(
    t: &[f64],
    obs: &[Option<LinearObs>],
    nd: usize,
    s: &[f64],
    (x0, p0): (DVector<f64>, DMatrix<f64>),
    smooth: bool,
) -> Option<Estimate> {
    let n = t.len();
    let (mut x, mut p) = (x0, p0);
    let mut loglik = 0.0;
    let (mut xs_pred, mut ps_pred, mut states) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for k in 0..n {
        if k > 0 {
            let (f, qn) = transition(nd, t[k] - t[k - 1], s);
            x = &f * &x;
            p = &f * &p * f.transpose() + qn;
        }
        if smooth {
            xs_pred.push(x.clone());
            ps_pred.push(p.clone());
        }
        if let Some(o) = obs[k].as_ref().filter(|o| o.h.nrows() > 0) {
            let y = &o.z - &o.h * &x;
            let chol = (&o.h * &p * o.h.transpose() + &o.r).cholesky()?;
            let sol = chol.solve(&y);
            loglik += -0.5 * (y.dot(&sol) + chol.l().diagonal().iter().map(|v| 2.0 * v.ln()).sum::<f64>());
            let gain = &p * o.h.transpose() * chol.inverse();
            x = &x + &gain * y;
            let ikh = DMatrix::identity(ORDER * nd, ORDER * nd) - &gain * &o.h;
            p = &ikh * &p * ikh.transpose() + &gain * &o.r * gain.transpose();
        }
        states.push((x.clone(), p.clone()));
    }
    if smooth {
        for k in (0..n.saturating_sub(1)).rev() {
            let (f, _) = transition(nd, t[k + 1] - t[k], &vec![0.0; nd]);
            let pp_inv = ps_pred[k + 1].clone().try_inverse()?;
            let g = &states[k].1 * f.transpose() * pp_inv;
            let xk = &states[k].0 + &g * (&states[k + 1].0 - &xs_pred[k + 1]);
            let pk = &states[k].1 + &g * (&states[k + 1].1 - &ps_pred[k + 1]) * g.transpose();
            states[k] = (xk, pk);
        }
    }
    Some(Estimate { loglik, states })
}

/// The state's size per driver: the driver and its derivatives up to order ORDER - 1, the
/// ORDER-th derivative white noise.
pub const ORDER: usize = 4;


/// A prior for nd coordinates at the first sample: their values `values` with covariance
/// `value_cov` (nd x nd), every derivative diffuse (variance 1e2 for the rate, times 1e4 per
/// order above).
pub fn diffuse_prior(values: &DVector<f64>, value_cov: &DMatrix<f64>) -> (DVector<f64>, DMatrix<f64>) {
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
