//! Real measurements: DFKI's torque-limited simple pendulum (recordings/dfki-pendulum, BSD-3).
//! The encoder's angle of two real swing-ups, given to `flexbench process` as the track of a
//! marker 0.5 m from the axle with the rig's mechanism file (one body, a revolute joint to the
//! ground, the motor's torque an actuator), with the default settings: the actuator torque
//! against the part of the measured torque a rigid model can explain (the measured torque
//! filtered, less the lab's identified friction and offset), as a careful user computes it by
//! hand (scripts/make_pendulum_reference.py: a fourth-order zero-lag Butterworth filter at 10 Hz,
//! central differences). The criterion: within 1.2 times the by-hand RMS on both runs.
//!
//! The encoder's steps (2.9 mrad, 1.5 mm at the marker) are a staircase, not white noise, the
//! clock a data logger's (1 % jitter), and the pendulum has no crank: the default must find the
//! quantization, choose the markers' noise by maximum likelihood no lower than it, say that the
//! innovations are not white where they are not, and say nothing of a crank, a motor's
//! reference or a slow-motion clock.

use std::path::{Path, PathBuf};

use crate::common;

use common::{num, read_csv};

/// The shipped runs, with the by-hand RMS (N m) the reference file states.
const RUNS: [&str; 2] = ["ddp_swingup", "energy_shaping_swingup"];

fn rig() -> PathBuf {
    common::root().join("recordings/dfki-pendulum")
}

/// `flexbench process` of a run's tracks with the rig's file and `extra`: what it said.
fn process(run: &str, out: &Path, extra: &[&str]) -> String {
    let tracks = rig().join(format!("tracks/{run}.csv"));
    common::process_mechanism_said(&tracks, &rig().join("pendulum.toml"), out, extra)
}

/// RMS of the actuator torque of `out` against the by-hand reference's rigid part of the
/// measured torque, and the by-hand RMS, N m.
fn torque_rms(run: &str, out: &Path) -> (f64, f64) {
    let by_hand = read_csv(&rig().join(format!("by-hand/{run}.csv")));
    let rigid = num(&by_hand, "tau_rigid_measured");
    let model = num(&by_hand, "tau_model");
    let got = num(&read_csv(&out.join("forces.csv")), "motor_torque");
    assert_eq!(got.len(), rigid.len(), "a torque per sample");
    assert!(got.iter().all(|v| v.is_finite()), "every sample solved");
    let rms = |a: &[f64], b: &[f64]| {
        (a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / a.len() as f64).sqrt()
    };
    (rms(&got, &rigid), rms(&model, &rigid))
}

#[test]
fn the_real_pendulums_torque_from_its_encoder_by_default() {
    let dir = tempfile::tempdir().unwrap();
    for run in RUNS {
        let out = dir.path().join(run);
        let said = process(run, &out, &[]);
        let (rms, by_hand) = torque_rms(run, &out);
        eprintln!(
            "{run}: default {rms:.4} N m RMS against {by_hand:.4} by hand ({:.3}x)",
            rms / by_hand
        );
        assert!(
            rms < 1.2 * by_hand,
            "{run}: {rms} against {by_hand} by hand\n{said}"
        );
        // Nothing of the wind pump's bench on a pendulum.
        for bench_word in ["crank", "motor's reference", "slow-motion", "rpm"] {
            assert!(
                !said.contains(bench_word),
                "{run}: '{bench_word}' in\n{said}"
            );
        }
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let smoother = &record["smoother"];
        assert_eq!(smoother["noise_source"], "maximum_likelihood", "{smoother}");
        // The encoder's step found in the driver, its floor on the marker 0.5 m out.
        let q = &smoother["quantization"][0];
        assert_eq!(q["series"], "driver rod angle", "{smoother}");
        let step = q["step"].as_f64().unwrap();
        assert!((step - 2.914473182258348e-3).abs() < 1e-12, "{step}");
        let floor = smoother["sigma_floor_m"].as_f64().unwrap();
        assert!((floor - 0.5 * step / 12f64.sqrt()).abs() < 1e-9, "{floor}");
        assert!(smoother["sigma_m"].as_f64().unwrap() >= floor);
        // The fitted mechanism's residual test does not take the staircase for bad samples.
        assert_eq!(
            record["residual_test"]["flagged"], 0,
            "{}",
            record["residual_test"]
        );
        assert!(smoother["whiteness"]["p_value"].is_number(), "{smoother}");
    }
}

/// The rig's file with the lab's identified friction on its axle (`pendulum-friction.toml`):
/// the motor's torque solved for includes what friction takes, and is compared with the measured
/// torque (filtered as by hand) less the identified offset alone: within 1.2 times the by-hand
/// RMS of the same comparison (the identified model and friction at the by-hand rates).
#[test]
fn the_real_pendulum_with_its_friction_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let offset = -7.586e-2;
    for run in RUNS {
        let out = dir.path().join(run);
        let tracks = rig().join(format!("tracks/{run}.csv"));
        common::process_mechanism_said(&tracks, &rig().join("pendulum-friction.toml"), &out, &[]);
        let by_hand = read_csv(&rig().join(format!("by-hand/{run}.csv")));
        let (tau, model, rigid) = (
            num(&by_hand, "tau_filtered"),
            num(&by_hand, "tau_model"),
            num(&by_hand, "tau_rigid_measured"),
        );
        let measured: Vec<f64> = tau.iter().map(|t| t - offset).collect();
        // By hand: the identified model with its friction, J q'' + m cx g sin q + friction.
        let hand: Vec<f64> = (0..tau.len())
            .map(|i| model[i] + (tau[i] - offset - rigid[i]))
            .collect();
        let got = num(&read_csv(&out.join("forces.csv")), "motor_torque");
        let rms = |a: &[f64], b: &[f64]| {
            (a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / a.len() as f64).sqrt()
        };
        let (e, h) = (rms(&got, &measured), rms(&hand, &measured));
        eprintln!(
            "{run} with friction in the file: {e:.4} N m RMS against {h:.4} by hand ({:.3}x)",
            e / h
        );
        assert!(e < 1.2 * h, "{run}: {e} against {h}");
    }
}
