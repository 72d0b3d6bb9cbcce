//! Whether a recording's frame rate and clock suit the motion it films.
//!
//! **Rate.** The markers' accelerations are periodic in the crank angle; the periodic refit
//! resolves at most a third of the samples per turn as harmonics (`periodic`), and a harmonic
//! the rate cannot resolve is neither seen nor covered by the bands: the forces' sigma stays
//! a few percent of their peak while their error grows (measured on the wind-pump bench, 4 s
//! recordings: 13.8 % of the peak at 30 frames/s, 3.9 % at 60, 3.5 % at 90 and 120, bands
//! about 5 % throughout). So the rate the motion needs comes from the mechanism: the harmonics
//! its liaison forces need ([`crate::spectrum`]), [`SAMPLES_PER_HARMONIC`] samples per turn
//! each. A recording below it, or whose forces' bands exceed [`SIGMA_SHARE`] of
//! their peak, is warned about, naming its rate and the rate needed.
//!
//! **Clock.** A crank turning at a small fraction (or a multiple) of the motor's reference
//! speed in the mechanism file ([`SPEED_RATIO`](crate::spectrum::SPEED_RATIO)) is the mark of a slow-motion video whose
//! capture rate is unknown (its times 8 times too long at 240 frames/s played back at 30).

use std::f64::consts::TAU;

use flexbench_contracts::series::{slope, unwrap_angles};
use flexbench_mechanism::model::Coordinate;
use flexbench_mechanism::Mechanism;

use crate::spectrum::{harmonics_needed, HARMONIC_SHARE, SPEED_RATIO};
use crate::{ForceSeries, Motion};

/// Samples per crank turn per harmonic the periodic refit needs (its resolvable harmonics are a
/// third of the samples per turn).
pub const SAMPLES_PER_HARMONIC: f64 = 3.0;

/// Median standard deviation of a liaison force, as a share of its peak, above which the forces
/// are warned about.
pub const SIGMA_SHARE: f64 = 0.1;

/// What the rate check found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RateCheck {
    /// The recording's median sample rate, samples/s.
    pub sample_rate_hz: f64,
    /// The crank's mean speed, turns/s.
    pub crank_hz: f64,
    /// Samples per crank turn.
    pub samples_per_turn: f64,
    /// Harmonics of the crank angle the liaison forces need ([`HARMONIC_SHARE`](crate::spectrum::HARMONIC_SHARE)); 0 when the
    /// bench cannot be simulated.
    pub harmonics_needed: usize,
    /// The sample rate the motion needs, samples/s.
    pub rate_needed_hz: f64,
    /// Largest median standard deviation of a joint's liaison force as a share of its peak.
    pub sigma_share: Option<f64>,
    /// The warnings (empty when the rate suits the motion).
    pub warnings: Vec<String>,
}

/// The crank's mean speed over the fitted samples, rad/s (least-squares slope of the first
/// driver's angle, unwrapped); None when it is not an angle or fewer than two samples fit.
pub fn crank_speed(mech: &Mechanism, t: &[f64], motion: &Motion) -> Option<f64> {
    let Coordinate::Angle { body } = mech.drivers.first()?.coordinate else {
        return None;
    };
    let (ts, mut phi): (Vec<f64>, Vec<f64>) = t
        .iter()
        .zip(&motion.samples)
        .filter_map(|(tk, s)| s.state.as_ref().map(|(q, _, _)| (*tk, q[3 * body + 2])))
        .unzip();
    unwrap_angles(&mut phi);
    (ts.len() >= 2).then(|| slope(&ts, &phi))
}

/// Whether the recording's rate suits the motion (`motion` fitted at times `t`, `forces` its
/// liaison forces with their bands): the check and its warnings. The harmonics the forces need
/// are a motor-driven crank's ([`Mechanism::crank`]) turning at least once; without one only
/// the sample rate is stated.
pub fn check_rate(mech: &Mechanism, t: &[f64], motion: &Motion, forces: &ForceSeries) -> RateCheck {
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let Some(&median) = steps.get(steps.len() / 2) else {
        return RateCheck::default();
    };
    let sample_rate_hz = 1.0 / median;
    let Some(crank) = mech
        .crank()
        .filter(|_| crate::observe::driver_turns(mech, &motion.samples) >= 1.0)
    else {
        return RateCheck {
            sample_rate_hz,
            ..RateCheck::default()
        };
    };
    let crank_name = &mech.bodies[crank.body].name;
    let speed = crank_speed(mech, t, motion).unwrap_or(0.0);
    let crank_hz = speed.abs() / TAU;
    // The periodic refit has found them already when it ran (the bench simulated once).
    let found = motion.periodic.as_ref().map(|p| p.forces_harmonics);
    let Some(harmonics) = found
        .filter(|h| *h > 0)
        .or_else(|| harmonics_needed(mech, speed))
    else {
        return RateCheck {
            sample_rate_hz,
            crank_hz,
            ..RateCheck::default()
        };
    };
    let rate_needed_hz = SAMPLES_PER_HARMONIC * harmonics as f64 * crank_hz;
    let samples_per_turn = sample_rate_hz / crank_hz.max(1e-12);
    let sigma_share = sigma_share(mech, forces);
    let mut warnings = Vec::new();
    let short = sample_rate_hz < rate_needed_hz;
    let wide = sigma_share.is_some_and(|s| s > SIGMA_SHARE);
    if crank_hz > 0.0 && (short || wide) {
        let why = match short {
            true => "too slow for this motion".to_string(),
            false => format!(
                "the liaison forces' standard deviation is {:.0} % of their peak (more than {:.0} %)",
                100.0 * sigma_share.unwrap_or(0.0),
                100.0 * SIGMA_SHARE
            ),
        };
        warnings.push(format!(
            "the recording's {sample_rate_hz:.1} frames/s give {samples_per_turn:.1} samples a {crank_name} turn ({:.1} rpm): {why}. The liaison forces of {} have {harmonics} harmonics of its angle above {:.0} % of their peak (the mechanism file simulated), which need {:.0} samples a turn: film at {rate_needed_hz:.0} frames/s or more. A harmonic the rate cannot resolve is not in the forces' bands either",
            crank_hz * 60.0,
            mech.name,
            100.0 * HARMONIC_SHARE,
            SAMPLES_PER_HARMONIC * harmonics as f64,
        ));
    }
    RateCheck {
        sample_rate_hz,
        crank_hz,
        samples_per_turn,
        harmonics_needed: harmonics,
        rate_needed_hz,
        sigma_share,
        warnings,
    }
}

/// The largest, over the revolute joints, median standard deviation of the liaison force's
/// magnitude as a share of its peak; None without bands.
fn sigma_share(mech: &Mechanism, forces: &ForceSeries) -> Option<f64> {
    let sigmas = forces.sigmas.as_ref()?;
    let names = mech.force_columns();
    let mut worst: Option<f64> = None;
    for (c, name) in names.iter().enumerate() {
        if !name.ends_with("_x") || !names.get(c + 1).is_some_and(|n| n.ends_with("_y")) {
            continue;
        }
        let mut peak: f64 = 0.0;
        let mut s: Vec<f64> = Vec::new();
        for (row, sig) in forces.rows.iter().zip(sigmas) {
            if let (Some(f), Some(sg)) = (row, sig) {
                peak = peak.max(f[c].hypot(f[c + 1]));
                s.push(sg[c].hypot(sg[c + 1]));
            }
        }
        s.sort_by(|a, b| a.total_cmp(b));
        if let (Some(&m), true) = (s.get(s.len() / 2), peak > 0.0) {
            worst = Some(worst.map_or(m / peak, |w: f64| w.max(m / peak)));
        }
    }
    worst
}

/// A warning when the crank's mean speed on the recording's clock is beyond [`SPEED_RATIO`](crate::spectrum::SPEED_RATIO) of
/// the motor's reference speed in the mechanism file: a slow-motion video whose capture rate
/// is unknown, or a mechanism file whose motor runs elsewhere. None without a motor-driven
/// crank ([`Mechanism::crank`]) or when it does not make a whole turn.
pub fn check_clock(mech: &Mechanism, t: &[f64], motion: &Motion) -> Option<String> {
    let crank = mech.crank()?;
    if crate::observe::driver_turns(mech, &motion.samples) < 1.0 {
        return None;
    }
    let omega_ref = crank.omega_ref.abs();
    let speed = crank_speed(mech, t, motion)?.abs();
    let r = speed / omega_ref;
    if r.is_nan() || r <= 0.0 || (1.0 / SPEED_RATIO..=SPEED_RATIO).contains(&r) {
        return None;
    }
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let rate = 1.0 / steps.get(steps.len() / 2)?;
    let rpm = |w: f64| w * 60.0 / TAU;
    Some(format!(
        "the {} turns at {:.1} rpm on the recording's clock, {r:.3} times the motor's reference {:.1} rpm in the mechanism file ({}): a slow-motion video whose capture rate is not known looks like this (if it was captured at about {:.0} frames/s, give that rate: [track] capture_rate in the pipeline file, or --capture-rate); if the mechanism really ran at this speed, set the motor's omega_ref_rpm in the mechanism file",
        mech.bodies[crank.body].name,
        rpm(speed),
        rpm(omega_ref),
        mech.forces[crank.motor].name,
        rate / r
    ))
}
