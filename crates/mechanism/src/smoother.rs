//! Kinematics from markers by a Kalman filter and Rauch-Tung-Striebel smoother on the driving
//! coordinates: an estimator over time, for noisy video at modest frame rates.
//!
//! State: each driving coordinate d (the crank angle scaled by the reference length, the slide's
//! x, ...) with its first and second time derivatives, driven by white jerk of spectral density
//! s^2 (the constant-acceleration model: F = [[1, h, h^2/2], [0, 1, h], [0, 0, 1]],
//! Q = s^2 [[h^5/20, h^4/8, h^3/6], [h^4/8, h^3/3, h^2/2], [h^3/6, h^2/2, h]]; Bar-Shalom, Li &
//! Kirubarajan, Estimation with Applications to Tracking and Navigation, 6.3.3). Measurement: the
//! markers' positions, h(d) = r_m(q(d)) with q(d) assembled (loop closed exactly, assembly branch
//! kept by continuation), Jacobian J_m dq/dd; noise sigma per coordinate. Update by the iterated
//! extended Kalman filter (two iterations), then the RTS backward pass. Near a fold, where the
//! markers lose sight of a driver (the rocker near C'D vertical on the bench), the model carries
//! its velocity through, which a sample-by-sample fit cannot do.
//!
//! The jerk density s is chosen by maximum likelihood of the innovations over a logarithmic grid;
//! sigma is the free rigid fit's RMS residual. The smoothed d, d', d'' give q, q', q'' through the
//! loop's position, velocity and acceleration analysis.

use nalgebra::{DMatrix, DVector, Vector2};

use crate::fit::{driver_weights, marker_system, FitReport, FitSample, MarkerState};
use crate::model::Mechanism;
use crate::MechanismError;

/// What the smoother chose and found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SmootherReport {
    /// Measurement noise used, m (per coordinate).
    pub sigma_m: f64,
    /// Jerk spectral density chosen, m/s^3 per sqrt(Hz) (angles scaled by the reference length).
    pub jerk_density: f64,
    /// Log-likelihood of the innovations at the chosen density.
    pub log_likelihood: f64,
}

struct Pass {
    xs_pred: Vec<DVector<f64>>,
    ps_pred: Vec<DMatrix<f64>>,
    xs: Vec<DVector<f64>>,
    ps: Vec<DMatrix<f64>>,
    qs: Vec<DVector<f64>>,
    loglik: f64,
}

pub(crate) fn transition(nd: usize, h: f64, s2: f64) -> (DMatrix<f64>, DMatrix<f64>) {
    let mut f = DMatrix::zeros(3 * nd, 3 * nd);
    let mut q = DMatrix::zeros(3 * nd, 3 * nd);
    let fb = [[1.0, h, h * h / 2.0], [0.0, 1.0, h], [0.0, 0.0, 1.0]];
    let qb = [
        [h.powi(5) / 20.0, h.powi(4) / 8.0, h.powi(3) / 6.0],
        [h.powi(4) / 8.0, h.powi(3) / 3.0, h * h / 2.0],
        [h.powi(3) / 6.0, h * h / 2.0, h],
    ];
    for k in 0..nd {
        for i in 0..3 {
            for j in 0..3 {
                f[(3 * k + i, 3 * k + j)] = fb[i][j];
                q[(3 * k + i, 3 * k + j)] = s2 * qb[i][j];
            }
        }
    }
    (f, q)
}

impl Mechanism {
    /// The markers' residuals at q and their Jacobian with respect to the state (the scaled
    /// drivers' values; zero for their rates).
    fn measurement(&self, q: &DVector<f64>, o: &[Option<MarkerState>], scale: &[f64]) -> Option<(DMatrix<f64>, DVector<f64>)> {
        let nd = self.drivers.len();
        let (jm, r) = marker_system(self, q, o);
        let sens = crate::assembly::driver_sensitivity(self, q, scale)?;
        let mut hmat = DMatrix::zeros(jm.nrows(), 3 * nd);
        for j in 0..nd {
            hmat.set_column(3 * j, &(&jm * sens.column(j)));
        }
        Some((hmat, r))
    }

    fn drivers_scaled(&self, q: &DVector<f64>, scale: &[f64]) -> Vec<f64> {
        self.drivers.iter().zip(scale).map(|(d, s)| d.coordinate.value(q) * s).collect()
    }

    /// One forward filter pass with jerk density `s` (scaled units).
    fn filter_pass(&self, t: &[f64], obs: &[Vec<Option<MarkerState>>], q0: &DVector<f64>, sigma: f64, s: f64) -> Option<Pass> {
        let nd = self.drivers.len();
        let scale = driver_weights(self, 1.0);
        let mut x = DVector::zeros(3 * nd);
        for (k, v) in self.drivers_scaled(q0, &scale).into_iter().enumerate() {
            x[3 * k] = v;
        }
        let mut p = DMatrix::zeros(3 * nd, 3 * nd);
        for k in 0..nd {
            p[(3 * k, 3 * k)] = 1e-6;
            p[(3 * k + 1, 3 * k + 1)] = 1.0;
            p[(3 * k + 2, 3 * k + 2)] = 1e3;
        }
        let mut q = q0.clone();
        let mut out = Pass { xs_pred: Vec::new(), ps_pred: Vec::new(), xs: Vec::new(), ps: Vec::new(), qs: Vec::new(), loglik: 0.0 };
        for (k, o) in obs.iter().enumerate() {
            let (xp, pp) = if k == 0 {
                (x.clone(), p.clone())
            } else {
                let (f, qn) = transition(nd, t[k] - t[k - 1], s * s);
                (&f * &x, &f * &p * f.transpose() + qn)
            };
            out.xs_pred.push(xp.clone());
            out.ps_pred.push(pp.clone());
            // Iterated EKF update.
            let mut xi = xp.clone();
            let mut qi = q.clone();
            let mut pi = pp.clone();
            for _ in 0..2 {
                let d: Vec<f64> = (0..nd).map(|j| xi[3 * j] / scale[j]).collect();
                qi = self.assemble_from(&qi, &d).ok()?;
                let (hmat, r) = self.measurement(&qi, o, &scale)?;
                if hmat.nrows() == 0 {
                    break;
                }
                // Innovation about the linearisation point xi: y = z - h(xi) - H (xp - xi).
                let y = -&r - &hmat * (&xp - &xi);
                let s_mat = &hmat * &pp * hmat.transpose() + DMatrix::identity(hmat.nrows(), hmat.nrows()) * (sigma * sigma);
                let s_inv = s_mat.clone().try_inverse()?;
                let gain = &pp * hmat.transpose() * &s_inv;
                xi = &xp + &gain * &y;
                pi = (DMatrix::identity(3 * nd, 3 * nd) - &gain * &hmat) * &pp;
            }
            // Log-likelihood of the final innovation of this sample.
            {
                let d: Vec<f64> = (0..nd).map(|j| xp[3 * j] / scale[j]).collect();
                if let Ok(qp) = self.assemble_from(&qi, &d) {
                    let (hmat, r) = self.measurement(&qp, o, &scale)?;
                    if hmat.nrows() > 0 && k > 0 {
                        let s_mat = &hmat * &pp * hmat.transpose() + DMatrix::identity(hmat.nrows(), hmat.nrows()) * (sigma * sigma);
                        let chol = s_mat.clone().cholesky()?;
                        let y = -r;
                        let sol = chol.solve(&y);
                        let logdet: f64 = chol.l().diagonal().iter().map(|v| 2.0 * v.ln()).sum();
                        out.loglik += -0.5 * (y.dot(&sol) + logdet);
                    }
                }
            }
            x = xi;
            p = pi;
            q = qi.clone();
            out.xs.push(x.clone());
            out.ps.push(p.clone());
            out.qs.push(qi);
        }
        Some(out)
    }

    /// Smooth the markers' positions into the mechanism's q, q', q'' at every sample. `obs`
    /// holds positions only (velocities and accelerations are ignored); `q0` is the fitted
    /// configuration of the first sample.
    pub fn smooth_markers(
        &self,
        t: &[f64],
        obs: &[Vec<Option<MarkerState>>],
        q0: &DVector<f64>,
    ) -> Result<(Vec<FitSample>, FitReport, SmootherReport), MechanismError> {
        let nd = self.drivers.len();
        let nm = self.markers.len();
        let scale = driver_weights(self, 1.0);
        // Measurement noise: the free rigid fit's RMS residual per coordinate.
        let sigma = self.free_fit_rms(obs).map_or(1e-4, |s| s.max(1e-7));
        // Jerk density by maximum likelihood over a grid.
        let mut best: Option<(f64, Pass)> = None;
        for e in 0..13 {
            let s = 10f64.powf(0.5 * e as f64);
            if let Some(pass) = self.filter_pass(t, obs, q0, sigma, s) {
                if best.as_ref().map_or(true, |(_, b)| pass.loglik > b.loglik) {
                    best = Some((s, pass));
                }
            }
        }
        let (s, pass) = best.ok_or_else(|| MechanismError::Fit("the smoother failed for every jerk density".into()))?;
        // RTS backward pass.
        let n = t.len();
        let mut xs = pass.xs.clone();
        for k in (0..n.saturating_sub(1)).rev() {
            let (f, _) = transition(nd, t[k + 1] - t[k], 0.0);
            let pp = &pass.ps_pred[k + 1];
            let Some(pp_inv) = pp.clone().try_inverse() else { continue };
            let g = &pass.ps[k] * f.transpose() * pp_inv;
            let xk = &pass.xs[k] + &g * (&xs[k + 1] - &pass.xs_pred[k + 1]);
            xs[k] = xk;
        }
        let mut out = Vec::with_capacity(n);
        let mut report = FitReport::default();
        let (mut sum2, mut cnt) = (vec![0.0; nm], vec![0usize; nm]);
        for k in 0..n {
            let d: Vec<f64> = (0..nd).map(|j| xs[k][3 * j] / scale[j]).collect();
            let rates: Vec<f64> = (0..nd).map(|j| xs[k][3 * j + 1] / scale[j]).collect();
            let accs: Vec<f64> = (0..nd).map(|j| xs[k][3 * j + 2] / scale[j]).collect();
            let state = (|| {
                let q = self.assemble_from(&pass.qs[k], &d).ok()?;
                let qd = self.velocities_at(&q, &rates).ok()?;
                let qdd = self.accelerations_at(&q, &qd, &accs).ok()?;
                Some((q, qd, qdd))
            })();
            let Some((q, qd, qdd)) = state else {
                report.unfitted_samples += 1;
                out.push(FitSample { state: None, residual: vec![None; nm] });
                continue;
            };
            let mut residual = vec![None; nm];
            for (i, mk) in self.markers.iter().enumerate() {
                if let Some(o) = obs[k][i] {
                    let r = crate::constraints::body_point(&q, mk.body, mk.local) - o.p;
                    sum2[i] += r.norm_squared();
                    cnt[i] += 1;
                    residual[i] = Some(Vector2::new(r.x, r.y));
                }
            }
            out.push(FitSample { state: Some((q, qd, qdd)), residual });
        }
        let rms = |s: f64, c: usize| if c > 0 { (s / c as f64).sqrt() } else { f64::NAN };
        report.rms_per_marker = self.markers.iter().enumerate().map(|(i, mk)| (mk.name.clone(), rms(sum2[i], cnt[i]))).collect();
        report.rms = rms(sum2.iter().sum(), cnt.iter().sum());
        report.rms_free = sigma;
        Ok((out, report, SmootherReport { sigma_m: sigma, jerk_density: s, log_likelihood: pass.loglik }))
    }
}
