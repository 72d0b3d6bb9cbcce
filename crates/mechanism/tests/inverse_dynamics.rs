//! Inverse dynamics (Newton-Euler, one square system per sample) fed the simulator's exact
//! kinematics reproduces the simulator's joint forces, which come from the Lagrange multipliers
//! by another route, and its actuators' efforts: on the default bench, two benches of other
//! geometry and masses, the slider-crank, the four-bar, and mechanisms with joint friction, a
//! motor between two bodies, a slide's jack and a cylinder (nothing may depend on the defaults).
//!
//! Tolerance: 1e-6 of each column's peak (the criterion); columns that are zero by
//! construction (the slide's reaction couple) are held to 1e-6 of the table's largest peak.

use std::path::{Path, PathBuf};

use flexbench_mechanism::file::load;
use flexbench_mechanism::inverse::InverseSample;
use flexbench_mechanism::simulate::{SimConfig, Simulation};
use flexbench_mechanism::Mechanism;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test")).join("../..")
}

/// `m` simulated: `duration` s recorded at `rate` Hz after `settle` s.
fn simulated(m: &Mechanism, duration: f64, rate: f64, settle: f64) -> Simulation {
    let cfg = SimConfig {
        duration,
        rate,
        settle,
        ..Default::default()
    };
    m.simulate(&cfg, &mut |_| {}).unwrap()
}

fn check(file: &str) {
    let m = load(&root().join(file)).unwrap().mechanism;
    let sim = simulated(&m, 0.6, 500.0, 1.0);
    let cols = m.force_columns();
    let truth: Vec<Vec<f64>> = sim
        .samples
        .iter()
        .map(|s| m.forces_from_multipliers(s))
        .collect();
    let solved: Vec<Vec<f64>> = sim
        .samples
        .iter()
        .map(
            |s| match m.inverse_dynamics(&s.q, &s.qd, &s.qdd, 1e8).unwrap() {
                InverseSample::Solved { forces, .. } => forces,
                InverseSample::Toggle { condition } => {
                    panic!("{file}: toggle at t = {} (condition {condition})", s.t)
                }
            },
        )
        .collect();
    let peaks: Vec<f64> = (0..cols.len())
        .map(|c| truth.iter().map(|r| r[c].abs()).fold(0.0, f64::max))
        .collect();
    let largest = peaks.iter().cloned().fold(0.0, f64::max);
    for (c, name) in cols.iter().enumerate() {
        let err = truth
            .iter()
            .zip(&solved)
            .map(|(a, b)| (a[c] - b[c]).abs())
            .fold(0.0, f64::max);
        let scale = peaks[c].max(1e-3 * largest);
        eprintln!(
            "{file}: {name:14} peak {:10.4} max error {err:.2e} ({:.1e} of scale)",
            peaks[c],
            err / scale
        );
        assert!(
            err <= 1e-6 * scale,
            "{file}: {name} differs by {err} (peak {})",
            peaks[c]
        );
    }
}

#[test]
fn default_bench() {
    check("mechanisms/wind-pump.toml");
}

#[test]
fn bench_with_other_geometry_and_masses_a() {
    check("tests/mechanisms/bench-variant-a.toml");
}

#[test]
fn bench_with_other_geometry_and_masses_b() {
    check("tests/mechanisms/bench-variant-b.toml");
}

#[test]
fn slider_crank() {
    check("mechanisms/slider-crank.toml");
}

/// Joint friction and a motor declared on the joint between two bodies (`elbow_torque`).
#[test]
fn double_pendulum_with_friction_and_a_joint_motor() {
    check("tests/mechanisms/double-pendulum-friction.toml");
}

/// A slide's jack (`rail_force`) and a cylinder between two bodies (a spring-damper whose
/// tension is the unknown), with friction at the pin and on the rail.
#[test]
fn jack_and_cylinder() {
    check("tests/mechanisms/jack-and-cylinder.toml");
}

#[test]
fn four_bar() {
    check("mechanisms/four-bar.toml");
}

/// A toggle is reported, not solved: the slider-crank driven by its piston force (the gas load
/// as the actuator) cannot turn the crank at dead centre, where the crank and the rod align.
#[test]
fn dead_centre_is_reported_as_a_toggle() {
    let text = std::fs::read_to_string(root().join("mechanisms/slider-crank.toml")).unwrap();
    let text = text
        .replace(
            "omega_ref_rpm = 300.0\nactuator = true",
            "omega_ref_rpm = 300.0\nactuator = false",
        )
        .replace(
            "fr = 2.0\nvr = 0.01",
            "fr = 2.0\nvr = 0.01\nactuator = true",
        );
    let m = flexbench_mechanism::file::parse(&text, "piston-driven slider-crank")
        .unwrap()
        .mechanism;
    let at = |phi: f64| {
        let q = m.assemble_at(&[phi]).unwrap();
        let qd = m.velocities_at(&q, &[20.0]).unwrap();
        let qdd = m.accelerations_at(&q, &qd, &[0.0]).unwrap();
        m.inverse_dynamics(&q, &qd, &qdd, 1e8).unwrap()
    };
    assert!(
        matches!(at(0.0), InverseSample::Toggle { .. }),
        "dead centre must be a toggle"
    );
    assert!(
        matches!(at(std::f64::consts::PI), InverseSample::Toggle { .. }),
        "inner dead centre too"
    );
    match at(1.0) {
        InverseSample::Solved { condition, .. } => {
            assert!(condition < 1e3, "condition {condition}")
        }
        other => panic!("expected a solution away from dead centre, got {other:?}"),
    }
}

/// Samples solved together (four systems side by side) give each sample's result on its own to
/// the bit, a toggle among solved samples included: the batch changes no number.
#[test]
fn batch_equals_each_sample_alone() {
    let m = load(&root().join("mechanisms/wind-pump.toml"))
        .unwrap()
        .mechanism;
    let sim = simulated(&m, 0.1, 250.0, 0.5);
    let mut states: Vec<_> = sim.samples.iter().map(|s| (&s.q, &s.qd, &s.qdd)).collect();
    if states.len() % 4 == 0 {
        states.pop(); // a batch left part-filled
    }
    // A condition limit inside the run's range makes some samples toggles.
    let conditions: Vec<f64> = states
        .iter()
        .map(
            |(q, qd, qdd)| match m.inverse_dynamics(q, qd, qdd, 1e8).unwrap() {
                InverseSample::Solved { condition, .. } => condition,
                InverseSample::Toggle { condition } => panic!("toggle at condition {condition}"),
            },
        )
        .collect();
    let mut sorted = conditions.clone();
    sorted.sort_by(f64::total_cmp);
    let limit = sorted[sorted.len() / 2];
    let bits = |s: &InverseSample| -> (bool, Vec<u64>) {
        match s {
            InverseSample::Solved { forces, condition } => (
                true,
                std::iter::once(condition)
                    .chain(forces)
                    .map(|v| v.to_bits())
                    .collect(),
            ),
            InverseSample::Toggle { condition } => (false, vec![condition.to_bits()]),
        }
    };
    let batch = m.inverse_dynamics_batch(&states, limit).unwrap();
    assert_eq!(batch.len(), states.len());
    let toggles = batch.iter().filter(|s| !bits(s).0).count();
    assert!(toggles > 0 && toggles < states.len(), "{toggles} toggles");
    for (k, ((q, qd, qdd), together)) in states.iter().zip(&batch).enumerate() {
        let alone = m.inverse_dynamics(q, qd, qdd, limit).unwrap();
        assert_eq!(bits(together), bits(&alone), "sample {k}");
    }
}
