//! The iterated Kalman smoother on the driving coordinates (the engine of [`crate::smoother`]
//! and of the fold test's window scores in [`crate::fold`]): the markers linearised about a
//! trajectory through the closed loop, the prior of the drivers' white-snap model, and the
//! Gauss-Newton passes (each one linear Kalman filter and Rauch-Tung-Striebel pass).

use nalgebra::{DMatrix, DVector};

use flexbench_mechanism::Mechanism;
use flexbench_signal::kalman::{
    diffuse_prior, kalman_rts, Estimate, LinearObs, Observations, ORDER,
};

use crate::observe::{driver_weights, marker_system, MarkerState};

/// The smoother's model of the drivers and the markers: the markers' noise (m), the drivers'
/// white-snap densities (scaled), and each driver's rest prior (mean, variance; scaled) if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoiseModel<'a> {
    pub sigma: f64,
    pub s: &'a [f64],
    pub rest: &'a [Option<(f64, f64)>],
}

/// The markers' residuals at q and their Jacobian with respect to the state (the scaled
/// drivers' values; zero for their rates).
pub(crate) fn measurement(
    mech: &Mechanism,
    q: &DVector<f64>,
    o: &[Option<MarkerState>],
    scale: &[f64],
) -> Option<(DMatrix<f64>, DVector<f64>)> {
    let nd = mech.drivers.len();
    let (jm, r) = marker_system(mech, q, o);
    let sens = flexbench_mechanism::assembly::driver_sensitivity(mech, q, scale)?;
    let mut hmat = DMatrix::zeros(jm.nrows(), ORDER * nd);
    for j in 0..nd {
        hmat.set_column(ORDER * j, &(&jm * sens.column(j)));
    }
    Some((hmat, r))
}

fn drivers_scaled(mech: &Mechanism, q: &DVector<f64>, scale: &[f64]) -> Vec<f64> {
    mech.drivers
        .iter()
        .zip(scale)
        .map(|(d, s)| d.coordinate.value(q) * s)
        .collect()
}

/// The markers linearised about the configurations `lin`: z~ = H x_bar - r = H x + v with
/// x_bar the scaled drivers of lin (Gauss-Newton's linear model of the measurement), each
/// sample's prepared for the filter as it is made. `rest[j]`, when given, adds to every sample
/// the weak observation that scaled driver j is near a value (mean, variance).
pub(crate) fn linearised(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    lin: &[DVector<f64>],
    sigma: f64,
    rest: &[Option<(f64, f64)>],
) -> Observations {
    let nd = mech.drivers.len();
    let scale = driver_weights(mech, 1.0);
    let items: Vec<_> = obs.iter().zip(lin).collect();
    let prepared = flexbench_contracts::parallel::map_samples(&items, |&(o, q)| {
        let (h, r) = measurement(mech, q, o, &scale)?;
        let mut xbar = DVector::zeros(ORDER * nd);
        for (j, v) in drivers_scaled(mech, q, &scale).into_iter().enumerate() {
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
        Some(LinearObs { h, z, r: cov }.prepare())
    });
    Observations::from_prepared(prepared)
}

pub(crate) fn smoother_prior(mech: &Mechanism, q: &DVector<f64>) -> (DVector<f64>, DMatrix<f64>) {
    let nd = mech.drivers.len();
    let scale = driver_weights(mech, 1.0);
    diffuse_prior(
        &DVector::from_vec(drivers_scaled(mech, q, &scale)),
        &(DMatrix::identity(nd, nd) * 1e-2),
    )
}

/// Gauss-Newton on the trajectory `lin` (updated in place): up to `iters` linear filter and
/// RTS passes, each with the markers linearised about the previous trajectory, until no scaled
/// driver moves by 1e-10 m or (when `loglik_change` is positive) the log-likelihood changes by
/// less than `loglik_change` from one pass to the next. Returns the
/// last pass's estimate (its log-likelihood that of the last linearisation), the iterations
/// run and the largest change of a scaled driver in the last one.
pub(crate) fn gauss_newton(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    lin: &mut [DVector<f64>],
    noise: &NoiseModel,
    iters: usize,
    loglik_change: f64,
) -> Option<(Estimate, usize, f64)> {
    let NoiseModel { sigma, s, rest } = *noise;
    let nd = mech.drivers.len();
    let scale = driver_weights(mech, 1.0);
    let mut out: Option<(Estimate, usize, f64)> = None;
    for it in 0..iters {
        let lobs = linearised(mech, obs, lin, sigma, rest);
        // The previous iteration's estimate is let go before the next is made (only its
        // likelihood is compared): one trajectory's means and covariances held, not two.
        let previous = out.take().map(|(p, _, _)| p.loglik);
        let e = kalman_rts(t, &lobs, nd, s, smoother_prior(mech, &lin[0]), true)?;
        let mut step: f64 = 0.0;
        // Each sample reassembled at its smoothed drivers on its own (on every core), then the
        // trajectory and the largest step updated in order.
        let items: Vec<_> = lin.iter().zip(&e.states).collect();
        let moved = flexbench_contracts::parallel::map_samples(&items, |&(q, (x, _))| {
            let d: Vec<f64> = (0..nd).map(|j| x[ORDER * j] / scale[j]).collect();
            mech.assemble_from(q, &d).ok()
        });
        for (q, qn) in lin.iter_mut().zip(moved) {
            if let Some(qn) = qn {
                let old = drivers_scaled(mech, q, &scale);
                let new = drivers_scaled(mech, &qn, &scale);
                step = old
                    .iter()
                    .zip(&new)
                    .map(|(a, b)| (a - b).abs())
                    .fold(step, f64::max);
                *q = qn;
            }
        }
        let settled = previous.is_some_and(|p| (e.loglik - p).abs() < loglik_change);
        out = Some((e, it + 1, step));
        if step < 1e-10 || settled {
            break;
        }
    }
    out
}
