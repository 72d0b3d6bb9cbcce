//! Kinematics from markers by a Kalman smoother on the driving coordinates: an estimator over
//! time, for noisy video at modest frame rates.
//!
//! State: each driving coordinate d (the crank angle scaled by the reference length, the slide's
//! x, ...) with its first and second time derivatives, driven by white jerk of spectral density
//! s^2 (the constant-acceleration model: F = [[1, h, h^2/2], [0, 1, h], [0, 0, 1]],
//! Q = s^2 [[h^5/20, h^4/8, h^3/6], [h^4/8, h^3/3, h^2/2], [h^3/6, h^2/2, h]]; Bar-Shalom, Li &
//! Kirubarajan, Estimation with Applications to Tracking and Navigation, 6.3.3). Measurement: the
//! markers' positions, h(d) = r_m(q(d)) with q(d) assembled (loop closed exactly, assembly branch
//! kept by continuation), Jacobian J_m dq/dd; noise sigma per coordinate.
//!
//! The trajectory is the maximum a posteriori one, by Gauss-Newton: each iteration linearises
//! the markers about the previous trajectory and runs one Kalman filter and Rauch-Tung-Striebel
//! pass (the iterated Kalman smoother), from the fit's configurations, which are on the motion's
//! own branch through every fold ([`crate::fold`]). Near a fold, where the markers lose sight of
//! a driver (the rocker near C'D vertical on the bench), the model carries the motion through
//! from both sides, which a sample-by-sample fit cannot do.
//!
//! The jerk densities (one per driver) are chosen by maximum likelihood of the innovations;
//! sigma is the free rigid fits' ([`Mechanism::marker_noise`]). The smoothed d, d', d'' give q,
//! q', q'' through the loop's position, velocity and acceleration analysis.

use nalgebra::{DMatrix, DVector, Vector2};

use crate::fit::{driver_weights, marker_system, FitReport, FitSample, MarkerState};
use crate::model::Mechanism;
use crate::MechanismError;
use flexbench_signal::kalman::{
    diffuse_prior, kalman_rts, ml_jerk_densities, Estimate, LinearObs, ORDER,
};

/// What the smoother chose and found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SmootherReport {
    /// Measurement noise used, m (per coordinate).
    pub sigma_m: f64,
    /// Jerk spectral density chosen per driving coordinate, m/s^3 per sqrt(Hz) (angles scaled
    /// by the reference length).
    pub jerk_density: Vec<f64>,
    /// Log-likelihood of the innovations at the chosen density (last linearisation).
    pub log_likelihood: f64,
    /// Gauss-Newton iterations run.
    pub iterations: usize,
    /// Largest change of a driver in the last iteration, m (angles scaled by the reference
    /// length).
    pub last_step: f64,
}

/// Most Gauss-Newton iterations of the smoother.
pub const SMOOTHER_ITERATIONS: usize = 12;

/// The smoother's model of the drivers and the markers: the markers' noise (m), the drivers'
/// white-snap densities (scaled), and each driver's rest prior (mean, variance; scaled) if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoiseModel<'a> {
    pub sigma: f64,
    pub s: &'a [f64],
    pub rest: &'a [Option<(f64, f64)>],
}

impl Mechanism {
    /// The markers' residuals at q and their Jacobian with respect to the state (the scaled
    /// drivers' values; zero for their rates).
    fn measurement(
        &self,
        q: &DVector<f64>,
        o: &[Option<MarkerState>],
        scale: &[f64],
    ) -> Option<(DMatrix<f64>, DVector<f64>)> {
        let nd = self.drivers.len();
        let (jm, r) = marker_system(self, q, o);
        let sens = crate::assembly::driver_sensitivity(self, q, scale)?;
        let mut hmat = DMatrix::zeros(jm.nrows(), ORDER * nd);
        for j in 0..nd {
            hmat.set_column(ORDER * j, &(&jm * sens.column(j)));
        }
        Some((hmat, r))
    }

    fn drivers_scaled(&self, q: &DVector<f64>, scale: &[f64]) -> Vec<f64> {
        self.drivers
            .iter()
            .zip(scale)
            .map(|(d, s)| d.coordinate.value(q) * s)
            .collect()
    }

    /// The markers linearised about the configurations `lin`: z~ = H x_bar - r = H x + v with
    /// x_bar the scaled drivers of lin (Gauss-Newton's linear model of the measurement).
    /// `rest[j]`, when given, adds to every sample the weak observation that scaled driver j is
    /// near a value (mean, variance).
    fn linearised(
        &self,
        obs: &[Vec<Option<MarkerState>>],
        lin: &[DVector<f64>],
        sigma: f64,
        rest: &[Option<(f64, f64)>],
    ) -> Vec<Option<LinearObs>> {
        let nd = self.drivers.len();
        let scale = driver_weights(self, 1.0);
        obs.iter()
            .zip(lin)
            .map(|(o, q)| {
                let (h, r) = self.measurement(q, o, &scale)?;
                let mut xbar = DVector::zeros(ORDER * nd);
                for (j, v) in self.drivers_scaled(q, &scale).into_iter().enumerate() {
                    xbar[ORDER * j] = v;
                }
                let z = &h * xbar - r;
                let m = h.nrows();
                let mut cov = DMatrix::identity(m, m) * (sigma * sigma);
                let (mut h, mut z) = (h, z);
                for (j, r) in rest.iter().enumerate() {
                    if let Some((mean, var)) = r {
                        let k = h.nrows();
                        h = h.insert_row(k, 0.0);
                        h[(k, ORDER * j)] = 1.0;
                        z = z.push(*mean);
                        cov = cov.insert_row(k, 0.0).insert_column(k, 0.0);
                        cov[(k, k)] = *var;
                    }
                }
                Some(LinearObs { h, z, r: cov })
            })
            .collect()
    }

    fn smoother_prior(&self, q: &DVector<f64>) -> (DVector<f64>, DMatrix<f64>) {
        let nd = self.drivers.len();
        let scale = driver_weights(self, 1.0);
        diffuse_prior(
            &DVector::from_vec(self.drivers_scaled(q, &scale)),
            &(DMatrix::identity(nd, nd) * 1e-2),
        )
    }

    /// Gauss-Newton on the trajectory `lin` (updated in place): up to `iters` linear filter and
    /// RTS passes, each with the markers linearised about the previous trajectory. Returns the
    /// last pass's estimate (its log-likelihood that of the last linearisation), the iterations
    /// run and the largest change of a scaled driver in the last one.
    pub(crate) fn gauss_newton(
        &self,
        t: &[f64],
        obs: &[Vec<Option<MarkerState>>],
        lin: &mut [DVector<f64>],
        noise: &NoiseModel,
        iters: usize,
    ) -> Option<(Estimate, usize, f64)> {
        let NoiseModel { sigma, s, rest } = *noise;
        let nd = self.drivers.len();
        let scale = driver_weights(self, 1.0);
        let mut out = None;
        for it in 0..iters {
            let lobs = self.linearised(obs, lin, sigma, rest);
            let e = kalman_rts(t, &lobs, nd, s, self.smoother_prior(&lin[0]), true)?;
            let mut step: f64 = 0.0;
            for (k, q) in lin.iter_mut().enumerate() {
                let d: Vec<f64> = (0..nd)
                    .map(|j| e.states[k].0[ORDER * j] / scale[j])
                    .collect();
                if let Ok(qn) = self.assemble_from(q, &d) {
                    let old = self.drivers_scaled(q, &scale);
                    let new = self.drivers_scaled(&qn, &scale);
                    step = old
                        .iter()
                        .zip(&new)
                        .map(|(a, b)| (a - b).abs())
                        .fold(step, f64::max);
                    *q = qn;
                }
            }
            out = Some((e, it + 1, step));
            if step < 1e-10 {
                break;
            }
        }
        out
    }

    /// Smooth the markers' positions into the mechanism's q, q', q'' at every sample: the
    /// maximum a posteriori trajectory of the driving coordinates under the white-jerk model,
    /// by Gauss-Newton (the iterated Kalman smoother: each iteration one linear filter and RTS
    /// pass with the markers linearised about the previous trajectory; Bell, "The iterated
    /// Kalman smoother as a Gauss-Newton method", SIAM J. Optim. 4, 1994), started from `init`
    /// (the fit's configurations on the motion's branch, [`Mechanism::fit_positions`]; None
    /// where not fitted). `obs` holds positions only. The measurement noise is the free rigid
    /// fits' ([`Mechanism::marker_noise`]); the jerk density is chosen by maximum likelihood of
    /// the innovations over a logarithmic grid, at the starting trajectory.
    pub fn smooth_markers(
        &self,
        t: &[f64],
        obs: &[Vec<Option<MarkerState>>],
        init: &[Option<DVector<f64>>],
    ) -> Result<(Vec<FitSample>, FitReport, SmootherReport), MechanismError> {
        self.smooth_markers_with_covariance(t, obs, init)
            .map(|(f, r, s, _)| (f, r, s))
    }

    /// [`Mechanism::smooth_markers`], with each sample's covariance of the driving coordinates,
    /// their rates and accelerations (3 nd x 3 nd, ordered d_j, d_j', d_j'' driver by driver, in
    /// the drivers' own units: rad or m, per s, per s^2): the smoother's posterior covariance at
    /// the last linearisation.
    #[allow(clippy::type_complexity)]
    pub fn smooth_markers_with_covariance(
        &self,
        t: &[f64],
        obs: &[Vec<Option<MarkerState>>],
        init: &[Option<DVector<f64>>],
    ) -> Result<(Vec<FitSample>, FitReport, SmootherReport, Vec<DMatrix<f64>>), MechanismError>
    {
        let nd = self.drivers.len();
        let nm = self.markers.len();
        let n = t.len();
        let scale = driver_weights(self, 1.0);
        let sigma = self.marker_noise(obs).map_or(1e-4, |s| s.max(1e-7));
        // Linearisation points: the fit, gaps filled from the nearest fitted sample.
        let first = init.iter().find_map(|q| q.clone()).ok_or_else(|| {
            MechanismError::Fit("the smoother has no fitted sample to start from".into())
        })?;
        let mut lin: Vec<DVector<f64>> = Vec::with_capacity(n);
        for q in init {
            let next = q
                .clone()
                .or_else(|| lin.last().cloned())
                .unwrap_or_else(|| first.clone());
            lin.push(next);
        }
        let prior = |lin: &[DVector<f64>]| self.smoother_prior(&lin[0]);
        let lobs = self.linearised(obs, &lin, sigma, &vec![None; nd]);
        let (s, _) = ml_jerk_densities(nd, |s| {
            Some(kalman_rts(t, &lobs, nd, s, prior(&lin), false)?.loglik)
        })
        .ok_or_else(|| MechanismError::Fit("the smoother failed for every jerk density".into()))?;
        let (est, iterations, step) = self
            .gauss_newton(
                t,
                obs,
                &mut lin,
                &NoiseModel {
                    sigma,
                    s: &s,
                    rest: &vec![None; nd],
                },
                SMOOTHER_ITERATIONS,
            )
            .ok_or_else(|| {
                MechanismError::Fit(
                    "the smoother's innovation covariance lost positive definiteness".into(),
                )
            })?;
        let mut out = Vec::with_capacity(n);
        let mut report = FitReport::default();
        let (mut sum2, mut cnt) = (vec![0.0; nm], vec![0usize; nm]);
        for k in 0..n {
            let x = &est.states[k].0;
            let rates: Vec<f64> = (0..nd).map(|j| x[ORDER * j + 1] / scale[j]).collect();
            let accs: Vec<f64> = (0..nd).map(|j| x[ORDER * j + 2] / scale[j]).collect();
            let state = (|| {
                let q = lin[k].clone();
                let qd = self.velocities_at(&q, &rates).ok()?;
                let qdd = self.accelerations_at(&q, &qd, &accs).ok()?;
                Some((q, qd, qdd))
            })();
            let Some((q, qd, qdd)) = state else {
                report.unfitted_samples += 1;
                out.push(FitSample {
                    state: None,
                    residual: vec![None; nm],
                });
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
            out.push(FitSample {
                state: Some((q, qd, qdd)),
                residual,
            });
        }
        let rms = |s: f64, c: usize| {
            if c > 0 {
                (s / c as f64).sqrt()
            } else {
                f64::NAN
            }
        };
        report.rms_per_marker = self
            .markers
            .iter()
            .enumerate()
            .map(|(i, mk)| (mk.name.clone(), rms(sum2[i], cnt[i])))
            .collect();
        report.rms = rms(sum2.iter().sum(), cnt.iter().sum());
        report.rms_free = self.free_fit_rms(obs).unwrap_or(f64::NAN);
        let covariances = est
            .states
            .iter()
            .map(|(_, p)| {
                DMatrix::from_fn(3 * nd, 3 * nd, |a, b| {
                    let (ja, oa, jb, ob) = (a / 3, a % 3, b / 3, b % 3);
                    p[(ORDER * ja + oa, ORDER * jb + ob)] / (scale[ja] * scale[jb])
                })
            })
            .collect();
        Ok((
            out,
            report,
            SmootherReport {
                sigma_m: sigma,
                jerk_density: s,
                log_likelihood: est.loglik,
                iterations,
                last_step: step,
            },
            covariances,
        ))
    }
}
