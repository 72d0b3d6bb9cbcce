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
//! sigma is the free rigid fits' ([`crate::observe::marker_noise`]) where a body carries two
//! markers, else chosen with the densities by maximum likelihood, never below the quantization
//! the data show ([`crate::noise`]); the innovations' whiteness is tested and stated. The
//! smoothed d, d', d'' give q, q', q'' through the loop's position, velocity and acceleration analysis.

use nalgebra::{DMatrix, DVector, Vector2};

use flexbench_mechanism::Mechanism;
use flexbench_signal::kalman::{kalman_rts, refine_jerk_densities, ORDER};
use flexbench_signal::noise::Whiteness;

use crate::fit::{marker_rms, FitReport};
use crate::iterated::{gauss_newton, linearised, smoother_prior, NoiseModel};
use crate::noise::{choose_noise, innovations_whiteness, ChosenNoise, NoiseSource, Quantization};
use crate::observe::{driver_weights, free_fit_rms, FitSample, MarkerState};
use crate::KinematicsError;

/// What the smoother chose and found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SmootherReport {
    /// Measurement noise used, m (per coordinate).
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub sigma_m: f64,
    /// Jerk spectral density chosen per driving coordinate, m/s^3 per sqrt(Hz) (angles scaled
    /// by the reference length).
    #[serde(deserialize_with = "flexbench_contracts::json::vec_f64_or_nan")]
    pub jerk_density: Vec<f64>,
    /// Log-likelihood of the innovations at the chosen density (last linearisation).
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub log_likelihood: f64,
    /// Gauss-Newton iterations run.
    pub iterations: usize,
    /// Largest change of a driver in the last iteration, m (angles scaled by the reference
    /// length).
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub last_step: f64,
    /// Where `sigma_m` came from.
    #[serde(default)]
    pub noise_source: NoiseSource,
    /// The least `sigma_m` the data allow: the largest quantization's step / sqrt(12) on the
    /// markers, m (0 when none was found).
    #[serde(default)]
    pub sigma_floor_m: f64,
    /// The quantizations found in the markers' coordinates and the fitted drivers.
    #[serde(default)]
    pub quantization: Vec<Quantization>,
    /// The Ljung-Box test of the innovations at the last linearisation (None: too few samples).
    #[serde(default)]
    pub whiteness: Option<Whiteness>,
    /// What the noise's choice and the whiteness test found wrong, in words with the cause.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Most Gauss-Newton iterations of the smoother.
pub const SMOOTHER_ITERATIONS: usize = 12;

/// The profiled likelihood's Gauss-Newton ([`profile_log_likelihood`]) stops when the
/// log-likelihood changes by less than this from one iteration to the next: a thousandth of
/// the least gain for which the horizontal is turned
/// ([`crate::estimate::HORIZONTAL_LR_THRESHOLD`]), where the iterations converge linearly by
/// a factor of about 0.3 (measured on the shipped recording).
pub const PROFILE_LOGLIK_CHANGE: f64 = 2e-3;

/// Smooth the markers' positions into the mechanism's q, q', q'' at every sample: the
/// maximum a posteriori trajectory of the driving coordinates under the white-jerk model,
/// by Gauss-Newton (the iterated Kalman smoother: each iteration one linear filter and RTS
/// pass with the markers linearised about the previous trajectory; Bell, "The iterated
/// Kalman smoother as a Gauss-Newton method", SIAM J. Optim. 4, 1994), started from `init`
/// (the fit's configurations on the motion's branch, [`crate::fold::fit_positions`]; None
/// where not fitted). `obs` holds positions only. The measurement noise is the free rigid
/// fits' ([`crate::observe::marker_noise`]); the jerk density is chosen by maximum likelihood of
/// the innovations over a logarithmic grid, at the starting trajectory.
pub fn smooth_markers(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    init: &[Option<DVector<f64>>],
) -> Result<(Vec<FitSample>, FitReport, SmootherReport), KinematicsError> {
    smooth_markers_with_covariance(mech, t, obs, init).map(|(f, r, s, _)| (f, r, s))
}

/// [`crate::smoother::smooth_markers`], with each sample's covariance of the driving coordinates,
/// their rates and accelerations (3 nd x 3 nd, ordered d_j, d_j', d_j'' driver by driver, in
/// the drivers' own units: rad or m, per s, per s^2): the smoother's posterior covariance at
/// the last linearisation.
#[allow(clippy::type_complexity)]
pub fn smooth_markers_with_covariance(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    init: &[Option<DVector<f64>>],
) -> Result<(Vec<FitSample>, FitReport, SmootherReport, Vec<DMatrix<f64>>), KinematicsError> {
    smooth_with_noise(mech, t, obs, init, None)
}

/// [`smooth_markers_with_covariance`] with the noise and jerk densities `kept` (an earlier
/// run's `sigma_m` and `jerk_density`) taken as they are instead of chosen from `obs`: the
/// smoother as a fixed linear-Gaussian model, for derivatives of its estimate
/// ([`crate::frame_share`]). With None, as [`smooth_markers_with_covariance`].
#[allow(clippy::type_complexity)]
pub fn smooth_with_noise(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    init: &[Option<DVector<f64>>],
    kept: Option<(f64, &[f64])>,
) -> Result<(Vec<FitSample>, FitReport, SmootherReport, Vec<DMatrix<f64>>), KinematicsError> {
    // Long: the smoother's steps in their order (noise and densities, Gauss-Newton, the smoothed
    // samples, the innovations' whiteness, the covariances), each a call.
    let nd = mech.drivers.len();
    let scale = driver_weights(mech, 1.0);
    let mut lin = linearisation_points(init)?;
    let chosen = match kept {
        Some((sigma, s)) if s.len() == nd => Some(ChosenNoise {
            sigma,
            s: s.to_vec(),
            source: NoiseSource::default(),
            floor: 0.0,
            quantization: Vec::new(),
            warnings: Vec::new(),
        }),
        _ => choose_noise(mech, t, obs, init, &lin),
    };
    let ChosenNoise {
        sigma,
        s,
        source,
        floor,
        quantization,
        warnings: noise_warnings,
    } = chosen
        .ok_or_else(|| KinematicsError::Fit("the smoother failed for every jerk density".into()))?;
    let (est, iterations, step) = gauss_newton(
        mech,
        t,
        obs,
        &mut lin,
        &NoiseModel {
            sigma,
            s: &s,
            rest: &vec![None; nd],
        },
        SMOOTHER_ITERATIONS,
        0.0,
    )
    .ok_or_else(|| {
        KinematicsError::Fit(
            "the smoother's innovation covariance lost positive definiteness".into(),
        )
    })?;
    let (out, mut report) = smoothed_samples(mech, obs, &lin, &est, &scale);
    report.rms_free = free_fit_rms(mech, obs).unwrap_or(f64::NAN);
    let (whiteness, white_warning) = innovations_whiteness(mech, &est, &quantization, report.rms);
    let mut warnings = noise_warnings;
    warnings.extend(white_warning);
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
            noise_source: source,
            sigma_floor_m: floor,
            quantization,
            whiteness,
            warnings,
        },
        covariances,
    ))
}

/// The smoother's log-likelihood of `obs` profiled over the trajectory and the jerk densities,
/// warm-started from an earlier run of nearby observations (`earlier`, its noise and
/// densities; `start`, its samples' configurations): Gauss-Newton at the earlier densities,
/// then each driver's density refined by one sweep of quarter-decade steps at the trajectory
/// reached ([`refine_jerk_densities`]) and, when that moves them, Gauss-Newton again. It stands
/// in for a whole run's likelihood (the fit, the fold resolution, the densities' search from
/// scratch) where the observations change by little: the horizontal's turn ([`crate::estimate`]).
/// None when the filter fails.
pub fn profile_log_likelihood(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    start: &[FitSample],
    earlier: &SmootherReport,
) -> Option<f64> {
    let nd = mech.drivers.len();
    let init: Vec<Option<DVector<f64>>> = start
        .iter()
        .map(|f| f.state.as_ref().map(|s| s.0.clone()))
        .collect();
    let mut lin = linearisation_points(&init).ok()?;
    let rest = vec![None; nd];
    let sigma = earlier.sigma_m;
    let mut noise = NoiseModel {
        sigma,
        s: &earlier.jerk_density,
        rest: &rest,
    };
    let tol = PROFILE_LOGLIK_CHANGE;
    let (est, _, _) = gauss_newton(mech, t, obs, &mut lin, &noise, SMOOTHER_ITERATIONS, tol)?;
    let lobs = linearised(mech, obs, &lin, sigma, &rest);
    let prior = smoother_prior(mech, &lin[0]);
    let (s, _) = refine_jerk_densities((f64::NEG_INFINITY, noise.s.to_vec()), 1, |s| {
        Some(kalman_rts(t, &lobs, nd, s, prior.clone(), false)?.loglik)
    });
    let loglik = match s == noise.s {
        true => est.loglik,
        false => {
            noise.s = &s;
            let iters = SMOOTHER_ITERATIONS;
            gauss_newton(mech, t, obs, &mut lin, &noise, iters, tol)?
                .0
                .loglik
        }
    };
    loglik.is_finite().then_some(loglik)
}

/// Linearisation points: the fit, gaps filled from the nearest earlier fitted sample (the
/// first fitted one before any).
fn linearisation_points(
    init: &[Option<DVector<f64>>],
) -> Result<Vec<DVector<f64>>, KinematicsError> {
    let first = init.iter().find_map(|q| q.clone()).ok_or_else(|| {
        KinematicsError::Fit("the smoother has no fitted sample to start from".into())
    })?;
    let mut lin: Vec<DVector<f64>> = Vec::with_capacity(init.len());
    for q in init {
        let next = q
            .clone()
            .or_else(|| lin.last().cloned())
            .unwrap_or_else(|| first.clone());
        lin.push(next);
    }
    Ok(lin)
}

/// The smoothed samples: each configuration of the last linearisation with the velocities and
/// accelerations of the smoothed drivers' rates (in the drivers' units: the state divided by
/// `scale`), and the markers' residuals; the fit's report of them.
fn smoothed_samples(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    lin: &[DVector<f64>],
    est: &flexbench_signal::kalman::Estimate,
    scale: &[f64],
) -> (Vec<FitSample>, FitReport) {
    let (nd, nm) = (mech.drivers.len(), mech.markers.len());
    let mut out = Vec::with_capacity(lin.len());
    let mut report = FitReport::default();
    let (mut sum2, mut cnt) = (vec![0.0; nm], vec![0usize; nm]);
    // Each sample's velocities and accelerations on its own (on every core), then the
    // residuals summed in order.
    let items: Vec<_> = lin.iter().zip(&est.states).collect();
    let states = flexbench_contracts::parallel::map_samples(&items, |&(q, (x, _))| {
        let rates: Vec<f64> = (0..nd).map(|j| x[ORDER * j + 1] / scale[j]).collect();
        let accs: Vec<f64> = (0..nd).map(|j| x[ORDER * j + 2] / scale[j]).collect();
        let (qd, qdd) = mech.motion_at(q, &rates, &accs).ok()?;
        Some((q.clone(), qd, qdd))
    });
    for (k, state) in states.into_iter().enumerate() {
        let Some((q, qd, qdd)) = state else {
            report.unfitted_samples += 1;
            out.push(FitSample {
                state: None,
                residual: vec![None; nm],
            });
            continue;
        };
        let mut residual = vec![None; nm];
        for (i, mk) in mech.markers.iter().enumerate() {
            if let Some(o) = obs[k][i] {
                let r = flexbench_mechanism::constraints::body_point(&q, mk.body, mk.local) - o.p;
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
    (report.rms_per_marker, report.rms) = marker_rms(mech, &sum2, &cnt);
    (out, report)
}
