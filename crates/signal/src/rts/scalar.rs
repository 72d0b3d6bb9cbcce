//! The white-snap Kalman/RTS smoother of one coordinate: its model, prior, forward filter and
//! backward pass.

use super::*;

/// A smoothed state of one coordinate (x, x', x'', x''') and its covariance.
pub(super) type ScaledState = (Vector4<f64>, Matrix4<f64>);

/// The Kalman/RTS recursion of one coordinate (white snap, state x, x', x'', x''') on the state
/// scaled to the sample step tau (derivative o times tau^o, as in [`crate::kalman::kalman_rts`],
/// with fixed-size matrices): log-likelihood, and the smoothed means and covariances (SI) when
/// `smooth`. None when a covariance loses positive definiteness.
pub(super) fn scalar_rts(
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
pub(super) struct SnapModel {
    pub(super) s: f64,
    pub(super) tau: f64,
    pub(super) d: Vector4<f64>,
}

impl SnapModel {
    pub(super) fn new(s: f64, tau: f64) -> SnapModel {
        SnapModel {
            s,
            tau,
            d: Vector4::new(1.0, tau, tau * tau, tau * tau * tau),
        }
    }

    /// The transition F and (when `with_q`) the process noise Q over a step `h` (s).
    pub(super) fn step(&self, h: f64, with_q: bool) -> (Matrix4<f64>, Matrix4<f64>) {
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
pub(super) fn scalar_prior(z: &[f64], sigma: f64) -> ScaledState {
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
pub(super) fn scalar_forward(
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
pub(super) fn scalar_backward(
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
