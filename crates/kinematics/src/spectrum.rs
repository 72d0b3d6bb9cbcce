//! The harmonics of the crank angle the bench's liaison forces need, from the mechanism file.
//!
//! The bench is simulated as its file gives it, its motor's reference set to the recording's
//! crank speed, and each revolute joint's force expanded in the crank angle; the harmonics up
//! to the last above [`HARMONIC_SHARE`] of the joint's peak are needed. On the wind-pump bench
//! at 140 rpm: 7 (B_x: 180, 75, 85, 90, 38, 15, 7.3, 1.5 N ... for a 343 N peak). The
//! linkage's geometry alone (the slide held) needs far fewer: the markers' accelerations fall
//! below 1 % of their RMS after 4; the slide's spring and the motor's ripple make the rest.
//! The periodic refit takes this as its least number of harmonics ([`crate::periodic`]) and the
//! rate check the samples a turn it needs ([`crate::rate`]).

use std::f64::consts::TAU;

use flexbench_mechanism::model::{Coordinate, ForceKind};
use flexbench_mechanism::simulate::SimConfig;
use flexbench_mechanism::Mechanism;

/// Share of a liaison force's peak above which a harmonic of the crank angle is needed.
pub const HARMONIC_SHARE: f64 = 0.01;

/// Ratio of the crank's mean speed to the motor's reference speed (either way) within which the
/// simulated bench is driven at the recording's speed, and beyond which the clock is warned
/// about (`rate::check_clock`).
pub const SPEED_RATIO: f64 = 2.0;

/// Time the simulated bench settles before its forces' spectrum is taken, s.
pub const SETTLE_S: f64 = 3.0;
/// Turns of the simulated bench in its forces' spectrum.
pub const SIMULATED_TURNS: f64 = 2.2;
/// Samples a turn of the simulated bench (harmonics up to half of it).
pub const SAMPLES_PER_SIMULATED_TURN: f64 = 256.0;

/// Harmonics of the crank angle the liaison forces need: the bench simulated as the mechanism
/// file gives it, its motor's reference set to the recording's crank speed `speed` (rad/s)
/// within [`SPEED_RATIO`] of it (settled for [`SETTLE_S`], then [`SIMULATED_TURNS`] turns at
/// [`SAMPLES_PER_SIMULATED_TURN`] samples a turn), each revolute joint's force components expanded in the crank angle over whole turns; the
/// harmonics up to the last whose amplitude exceeds [`HARMONIC_SHARE`] of the joint's peak, over
/// every joint. None when the bench cannot be simulated or the crank does not turn.
pub fn harmonics_needed(mech: &Mechanism, speed: f64) -> Option<usize> {
    let Coordinate::Angle { body } = mech.drivers.first()?.coordinate else {
        return None;
    };
    // The motor driven at the recording's speed when it is near the file's reference (a bench
    // run at another speed); at the file's own beyond (a clock in doubt: `check_clock`).
    let mut bench = mech.clone();
    let mut turn = TAU / speed.abs().max(1e-9);
    for f in &mut bench.forces {
        if let ForceKind::Motor { omega_ref, .. } = &mut f.kind {
            let r = speed.abs() / omega_ref.abs();
            if (1.0 / SPEED_RATIO..=SPEED_RATIO).contains(&r) {
                *omega_ref = speed.abs() * omega_ref.signum();
            } else {
                turn = TAU / omega_ref.abs();
            }
        }
    }
    let cfg = SimConfig {
        duration: SIMULATED_TURNS * turn,
        rate: SAMPLES_PER_SIMULATED_TURN / turn,
        settle: SETTLE_S,
        ..SimConfig::default()
    };
    let sim = bench.simulate(&cfg, &mut |_| {}).ok()?;
    let mut phi: Vec<f64> = sim.samples.iter().map(|s| s.q[3 * body + 2]).collect();
    flexbench_contracts::series::unwrap_angles(&mut phi);
    let span = (phi.last()? - phi[0]).abs();
    let turns = (span / TAU).floor();
    if turns < 1.0 {
        return None;
    }
    let end = phi.iter().position(|p| (p - phi[0]).abs() >= turns * TAU)?;
    let forces: Vec<Vec<f64>> = sim.samples[..=end]
        .iter()
        .map(|s| mech.forces_from_multipliers(s))
        .collect();
    let names = mech.force_columns();
    let highest = (SAMPLES_PER_SIMULATED_TURN / 2.0) as usize;
    let mut needed = 1;
    for c in (0..names.len()).filter(|&c| names[c].ends_with("_x")) {
        if !names.get(c + 1).is_some_and(|n| n.ends_with("_y")) {
            continue;
        }
        let peak = forces
            .iter()
            .map(|f| f[c].hypot(f[c + 1]))
            .fold(0.0, f64::max);
        for comp in [c, c + 1] {
            let x: Vec<f64> = forces.iter().map(|f| f[comp]).collect();
            if let Some(h) = (1..highest)
                .rev()
                .find(|&h| angle_amplitude(&phi[..=end], &x, h) > HARMONIC_SHARE * peak)
            {
                needed = needed.max(h);
            }
        }
    }
    Some(needed)
}

/// Amplitude of harmonic `h` of `x` sampled at the crank angles `phi` (unwrapped, over whole
/// turns): the Fourier integral in the angle by the trapezoid rule.
fn angle_amplitude(phi: &[f64], x: &[f64], h: usize) -> f64 {
    let (mut re, mut im) = (0.0, 0.0);
    for k in 1..phi.len() {
        let d = phi[k] - phi[k - 1];
        let (a0, a1) = (h as f64 * phi[k - 1], h as f64 * phi[k]);
        re += 0.5 * d * (x[k - 1] * a0.cos() + x[k] * a1.cos());
        im += 0.5 * d * (x[k - 1] * a0.sin() + x[k] * a1.sin());
    }
    let span = (phi[phi.len() - 1] - phi[0]).abs();
    2.0 * re.hypot(im) / span
}
