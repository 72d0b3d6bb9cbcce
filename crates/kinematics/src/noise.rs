//! The smoother's measurement noise as real tracks have it: measured from the free rigid fits
//! where a body carries two markers or more, chosen by maximum likelihood with the jerk
//! densities where none does (a pendulum's one marker, an encoder's angle given as a track),
//! never below the quantization the data show (an encoder's counts, tracks written in whole
//! millimetres, centroids locked to pixels: step^2 / 12, [`flexbench_signal::noise`]); and the
//! smoother's innovations tested for whiteness. Each estimate left at a bound of its search,
//! and correlated innovations, are stated with their cause.

use nalgebra::DVector;
use serde::{Deserialize, Serialize};

use flexbench_mechanism::constraints::body_point;
use flexbench_mechanism::Mechanism;
use flexbench_signal::kalman::{kalman_rts, ml_jerk_densities, Estimate};
use flexbench_signal::noise::{lattice, ljung_box, Whiteness};

use crate::iterated::{linearised, smoother_prior};
use crate::observe::{driver_weights, marker_noise, refine, MarkerState};

/// Where the smoother's measurement noise came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    /// The free rigid fits' residuals (a body carries two markers or more).
    #[default]
    RigidResiduals,
    /// Maximum likelihood with the jerk densities (no body carries two markers).
    MaximumLikelihood,
}

/// A quantization found in the tracks or in the fitted drivers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quantization {
    /// The series: "marker M1 x", "driver crank angle".
    pub series: String,
    /// The lattice's step, in the series' unit (m, or rad for an angle).
    pub step: f64,
    /// The quantization error's standard deviation on the markers, m (step / sqrt(12), a
    /// driver's step carried to the marker it moves most).
    pub marker_sigma_m: f64,
}

/// Lags of the innovations' Ljung-Box test.
pub const WHITENESS_LAGS: usize = 20;
/// The innovations are reported as correlated when the Ljung-Box test's p-value is below this
/// and their lag-1 autocorrelation above [`WHITENESS_LAG1`].
pub const WHITENESS_P: f64 = 1e-3;
/// See [`WHITENESS_P`]: a correlation this small does not change the estimates materially.
pub const WHITENESS_LAG1: f64 = 0.2;

/// Below this RMS residual of the smoothed fit (m) the whiteness test is recorded but not
/// warned of: errors under a micrometre are no camera's or encoder's (a simulation's exact
/// positions), and what correlation is left is the jerk model's own, not the markers'.
pub const WHITENESS_FLOOR_M: f64 = 1e-6;
/// Largest marker noise the maximum-likelihood search tries, m.
pub const SIGMA_MAX: f64 = 0.1;
/// Least marker noise the maximum-likelihood search tries without a quantization floor, m.
pub const SIGMA_MIN: f64 = 1e-6;
/// The jerk densities' search spans 1 to 10^7 (then a decade either way): a density at or
/// beyond these is at a bound.
const DENSITY_BOUNDS: (f64, f64) = (1.0, 1e7);

/// Samples whose drivers are refitted to the raw markers for the drivers' quantization test
/// (the recording's first ones): a lattice shows in a few thousand changes.
pub const QUANTIZATION_SAMPLES: usize = 4000;

/// The quantizations of the markers' coordinates and, with `drivers`, of the drivers (each
/// sample's configuration refitted to the raw markers from `init`, the fit's configurations: an
/// encoder's angle given as a track is a lattice in the driver, not in x or y), each with its
/// standard deviation on the markers. The drivers' test is asked for where no body carries two
/// markers: elsewhere the rigid residual measures the markers' errors, whatever their kind, and
/// the refit would cost a tenth of the smoother's time for nothing (measured on the shipped
/// recording's truth: 1.05 s against 0.94 s).
pub fn quantizations(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    init: &[Option<DVector<f64>>],
    drivers: bool,
) -> Vec<Quantization> {
    let mut found = Vec::new();
    for (i, mk) in mech.markers.iter().enumerate() {
        for (axis, name) in [(0, "x"), (1, "y")] {
            let v: Vec<f64> = obs.iter().filter_map(|o| o[i].map(|m| m.p[axis])).collect();
            if let Some(l) = lattice(&v) {
                found.push(Quantization {
                    series: format!("marker {} {name}", mk.name),
                    step: l.step,
                    marker_sigma_m: l.sigma(),
                });
            }
        }
    }
    if !drivers {
        return found;
    }
    let raw = raw_configurations(mech, obs, init);
    let Some(q0) = raw.first() else {
        return found;
    };
    for (j, d) in mech.drivers.iter().enumerate() {
        let v: Vec<f64> = raw.iter().map(|q| d.coordinate.value(q)).collect();
        let Some(l) = lattice(&v) else { continue };
        // The markers moved by one step of the driver, the others held.
        let mut values: Vec<f64> = mech
            .drivers
            .iter()
            .map(|d| d.coordinate.value(q0))
            .collect();
        values[j] += l.step;
        let Ok(q1) = mech.assemble_from(q0, &values) else {
            continue;
        };
        let moved = mech
            .markers
            .iter()
            .map(|mk| {
                (body_point(&q1, mk.body, mk.local) - body_point(q0, mk.body, mk.local)).norm()
            })
            .fold(0.0, f64::max);
        found.push(Quantization {
            series: format!("driver {}", d.name),
            step: l.step,
            marker_sigma_m: moved / 12f64.sqrt(),
        });
    }
    found
}

/// The first [`QUANTIZATION_SAMPLES`] fitted samples' configurations refitted to the raw
/// markers (Levenberg-Marquardt from the fit's, the drivers held by a weight of 1e-6 only).
fn raw_configurations(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    init: &[Option<DVector<f64>>],
) -> Vec<DVector<f64>> {
    let w = driver_weights(mech, 1e-6);
    let items: Vec<(&Vec<Option<MarkerState>>, &DVector<f64>)> = obs
        .iter()
        .zip(init)
        .filter_map(|(o, q)| Some((o, q.as_ref()?)))
        .take(QUANTIZATION_SAMPLES)
        .collect();
    let refitted = flexbench_contracts::parallel::map_samples(&items, |&(o, q)| {
        let targets: Vec<f64> = mech.drivers.iter().map(|d| d.coordinate.value(q)).collect();
        refine(mech, q, o, &targets, &w, 20).map(|(q, _)| q)
    });
    refitted.into_iter().flatten().collect()
}

/// The smoother's noise model as chosen: the markers' noise, the jerk densities, and what was
/// found on the way.
pub(crate) struct ChosenNoise {
    pub sigma: f64,
    pub s: Vec<f64>,
    pub source: NoiseSource,
    pub floor: f64,
    pub quantization: Vec<Quantization>,
    pub warnings: Vec<String>,
}

/// The markers' noise and the jerk densities for the smoother linearised about `lin`: the
/// free rigid fits' noise, else maximum likelihood over half-decades of sigma from the floor
/// to [`SIGMA_MAX`] (then quarter-decades about the best), each sigma with its densities by
/// [`ml_jerk_densities`]; never below the quantization's floor.
pub(crate) fn choose_noise(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    init: &[Option<DVector<f64>>],
    lin: &[DVector<f64>],
) -> Option<ChosenNoise> {
    let nd = mech.drivers.len();
    let rest = vec![None; nd];
    let measured = marker_noise(mech, obs);
    let quantization = quantizations(mech, obs, init, measured.is_none());
    let floor = quantization
        .iter()
        .map(|q| q.marker_sigma_m)
        .fold(0.0, f64::max);
    let prior = smoother_prior(mech, &lin[0]);
    // The likelihood of the rows that inform the drivers (`Estimate::loglik_informing`): with
    // one marker on a pinned body, the marker's distance from the pin says nothing of the
    // motion, and on tracks made from an encoder's angle it is exact, which the whole
    // likelihood would reward by a noise without bound below.
    let densities = |sigma: f64| {
        let lobs = linearised(mech, obs, lin, sigma, &rest);
        ml_jerk_densities(nd, |s| {
            Some(kalman_rts(t, &lobs, nd, s, prior.clone(), false)?.loglik_informing)
        })
    };
    let mut warnings = Vec::new();
    let (sigma, s, source) = match measured {
        Some(measured) => {
            let sigma = measured.max(floor).max(1e-7);
            (sigma, densities(sigma)?.0, NoiseSource::RigidResiduals)
        }
        None => {
            let lo = floor.max(SIGMA_MIN);
            let steps = ((SIGMA_MAX / lo).log10() / 0.5).ceil().max(0.0) as i32;
            let mut best: Option<(f64, f64, Vec<f64>)> = None;
            let consider = |sigma: f64, best: &mut Option<(f64, f64, Vec<f64>)>| {
                if let Some((s, ll)) = densities(sigma) {
                    if best.as_ref().is_none_or(|b| ll > b.0) {
                        *best = Some((ll, sigma, s));
                    }
                }
            };
            for k in 0..=steps {
                consider((lo * 10f64.powf(0.5 * k as f64)).min(SIGMA_MAX), &mut best);
            }
            let centre = best.as_ref()?.1;
            for e in [-0.25, 0.25] {
                let sigma = centre * 10f64.powf(e);
                if (lo..=SIGMA_MAX).contains(&sigma) {
                    consider(sigma, &mut best);
                }
            }
            let (_, sigma, s) = best?;
            warnings.extend(sigma_bound_warning(mech, sigma, lo, floor, &quantization));
            (sigma, s, NoiseSource::MaximumLikelihood)
        }
    };
    warnings.extend(density_bound_warnings(mech, &s));
    Some(ChosenNoise {
        sigma,
        s,
        source,
        floor,
        quantization,
        warnings,
    })
}

/// The warning for a maximum-likelihood noise at a bound of its search: at the quantization's
/// floor (the steps are correlated: the smoother is asked to follow them), at the search's
/// least (the markers fit the model exactly: no noise to estimate), or at its largest (the
/// tracks do not follow the mechanism).
fn sigma_bound_warning(
    mech: &Mechanism,
    sigma: f64,
    lo: f64,
    floor: f64,
    quantization: &[Quantization],
) -> Option<String> {
    let bodies =
        "no body carries two markers, so the markers' noise is chosen by maximum likelihood";
    if sigma <= lo * 1.0001 && floor > SIGMA_MIN {
        let q = quantization
            .iter()
            .max_by(|a, b| a.marker_sigma_m.total_cmp(&b.marker_sigma_m))?;
        Some(format!(
            "{bodies}, and it sits at its floor, the quantization of {} in steps of {:.4e} ({:.3} mm RMS on the markers): the data ask for less noise than their quantization allows, the mark of steps whose errors are correlated (a slow motion crossing few steps); the smoother holds the noise at the floor, and the accelerations may still follow the steps where the motion is slow: give more markers on a body or a finer encoder (the spline's GCV and the Butterworth filter's residual analysis, which take the errors as white, can be fooled by the same steps)",
            q.series,
            q.step,
            q.marker_sigma_m * 1e3
        ))
    } else if sigma <= lo * 1.0001 {
        Some(format!(
            "{bodies}, and it sits at the least the search tries ({:.0e} m): the tracks follow the mechanism {} exactly (a simulation's, or tracks made from the model): the bands assume {:.0e} m",
            SIGMA_MIN, mech.name, SIGMA_MIN
        ))
    } else if sigma >= SIGMA_MAX * 0.9999 {
        Some(format!(
            "{bodies}, and it sits at the largest the search tries ({SIGMA_MAX} m): the tracks do not follow the mechanism {} (check the tracks' unit and the markers' positions in the mechanism file)",
            mech.name
        ))
    } else {
        None
    }
}

/// A warning per driver whose jerk density sits at a bound of its search.
fn density_bound_warnings(mech: &Mechanism, s: &[f64]) -> Vec<String> {
    let (lo, hi) = DENSITY_BOUNDS;
    mech.drivers
        .iter()
        .zip(s)
        .filter_map(|(d, s)| {
            if *s >= hi {
                Some(format!(
                    "the smoother's jerk density for the {} is at the top of its search ({s:.1e}): the smoother follows the markers sample by sample, noise and all (a motion faster than the frame rate, or tracks whose errors are not white: a staircase, vibration); compare with --spline and --butterworth",
                    d.name
                ))
            } else if *s <= lo {
                Some(format!(
                    "the smoother's jerk density for the {} is at the bottom of its search ({s:.1e}): the motion is smoother than the model expects (a motion at rest, or no motion of this driver); its accelerations are the model's prior",
                    d.name
                ))
            } else {
                None
            }
        })
        .collect()
}

/// The Ljung-Box test of the smoother's standardised innovations, each component of the
/// observations' reduced rows a sequence, and its warning when they are correlated and the
/// smoothed fit's RMS residual `fit_rms_m` (m) is at least [`WHITENESS_FLOOR_M`].
pub(crate) fn innovations_whiteness(
    mech: &Mechanism,
    est: &Estimate,
    quantization: &[Quantization],
    fit_rms_m: f64,
) -> (Option<Whiteness>, Option<String>) {
    let width = est.innovations.iter().map(|e| e.len()).max().unwrap_or(0);
    let series: Vec<Vec<f64>> = (0..width)
        .map(|c| {
            est.innovations
                .iter()
                .filter(|e| e.len() == width)
                .map(|e| e[c])
                .collect()
        })
        .collect();
    let Some(w) = ljung_box(&series, WHITENESS_LAGS) else {
        return (None, None);
    };
    if !(w.p_value < WHITENESS_P && w.lag1.abs() > WHITENESS_LAG1) || fit_rms_m < WHITENESS_FLOOR_M
    {
        return (Some(w), None);
    }
    let cause = match quantization.first() {
        Some(q) => format!(
            "the data are quantized ({} in steps of {:.4e}), a staircase whose error follows the motion",
            q.series, q.step
        ),
        None => "vibration the model does not hold, a rolling shutter, a tracker's own smoothing or a marker that slips".to_string(),
    };
    let warning = format!(
        "the smoother's innovations on {} are not white (lag-1 autocorrelation {:.2}, Ljung-Box p = {:.1e} over {} lags): the markers' errors are correlated, likely because {cause}; the bands are too narrow and the accelerations may follow the errors",
        mech.name, w.lag1, w.p_value, w.lags
    );
    (Some(w), Some(warning))
}
