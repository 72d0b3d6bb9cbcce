//! Any mechanism, not only the wind pump's bench: the checks that belong to a motor-driven
//! crank (its speed against the motor's reference, the rate its harmonics need, the refit in its
//! angle) run only where the mechanism has one (`Mechanism::crank`), and the bench frame's turn
//! is refined only where the markers can see it. A pendulum (its actuator written as a torque or
//! as a motor with no reference), a free-running wheel and the four-bar without its motor are
//! processed by default without a word of a crank, a motor's reference or a slow-motion clock;
//! the four-bar's forces are those of the same tracks with its motor.

use std::path::Path;

use crate::common;

use common::{num, read_csv};

/// The bench's words that must not be said of a mechanism without a crank.
const BENCH_WORDS: [&str; 5] = [
    "crank",
    "motor's reference",
    "slow-motion",
    "rpm",
    "--periodic",
];

fn process(tracks: &Path, mech: &Path, out: &Path, extra: &[&str]) -> String {
    common::process_mechanism_said(tracks, mech, out, extra)
}

fn assert_no_bench_words(what: &str, said: &str) {
    for w in BENCH_WORDS {
        assert!(!said.contains(w), "{what}: '{w}' in\n{said}");
    }
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// The real pendulum's file with its actuator written as a motor of no reference speed (as a
/// user may write a motor), on the real DDP swing-up: no crank check fires, no periodic refit.
#[test]
fn a_pendulum_whose_actuator_is_a_motor_has_no_crank() {
    let dir = tempfile::tempdir().unwrap();
    let rig = common::root().join("recordings/dfki-pendulum");
    let text = std::fs::read_to_string(rig.join("pendulum.toml")).unwrap();
    let motor = text.replace(
        "type = \"torque\"\nbody = \"pendulum\"\ntorque = 0.0",
        "type = \"motor\"\nbody = \"pendulum\"\nkm = 0.0\nomega_ref_rpm = 0.0",
    );
    assert_ne!(motor, text, "the torque element is replaced");
    let mech = dir.path().join("pendulum-motor.toml");
    std::fs::write(&mech, motor).unwrap();
    let out = dir.path().join("out");
    let said = process(&rig.join("tracks/ddp_swingup.csv"), &mech, &out, &[]);
    assert_no_bench_words("pendulum with a motor", &said);
    let s = summary(&out);
    assert!(s["periodic"].is_null() && s["clock"].is_null(), "{s}");
    assert!(
        s["horizontal_correction_rad"].is_null(),
        "one pin: the frame's turn is unseen"
    );
    assert_eq!(s["rate"]["harmonics_needed"], 0, "{}", s["rate"]);
}

/// A wheel spinning freely at 22.7 rad/s, 67 samples at 60 per second, one marker on its rim
/// clicked by hand (3 mm of noise): the default gives a steady speed and a small angular
/// acceleration (its truth is zero), and no crank's word.
#[test]
fn a_free_wheel_is_steady_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let mech = common::root().join("tests/mechanisms/free-wheel.toml");
    let sim = dir.path().join("sim");
    common::simulate_mechanism(&mech, "1.1", "60", "0", &sim);
    let clicked = dir.path().join("clicked.csv");
    let noisy = common::noisy_tracks(&sim.join("tracks.csv"), 3e-3, 38, 1.0, &|_, _| false);
    std::fs::write(&clicked, noisy).unwrap();
    let out = dir.path().join("out");
    let said = process(&clicked, &mech, &out, &[]);
    assert_no_bench_words("free wheel", &said);
    let bodies = read_csv(&out.join("bodies.csv"));
    let omega = num(&bodies, "omega");
    let eps = num(&bodies, "epsilon");
    assert_eq!(omega.len(), 67);
    let (lo, hi) = omega
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), w| {
            (a.min(*w), b.max(*w))
        });
    let eps_rms = (eps.iter().map(|e| e * e).sum::<f64>() / eps.len() as f64).sqrt();
    eprintln!("free wheel: omega {lo:.2} to {hi:.2} rad/s, epsilon {eps_rms:.2} rad/s^2 RMS");
    assert!(lo > 22.2 && hi < 23.2, "omega {lo} to {hi}");
    assert!(eps_rms < 5.0, "epsilon RMS {eps_rms}");
}

/// The four-bar of mechanisms/four-bar.toml and the same with its motor written as a plain
/// torque actuator (no crank): the same simulated tracks processed by default; the one without
/// a motor says nothing of a crank, its forces are those of the file with the motor processed
/// without the refit in the crank angle (the checks do not change the numbers).
#[test]
fn the_four_bar_without_its_motor() {
    let dir = tempfile::tempdir().unwrap();
    let with_motor = common::root().join("mechanisms/four-bar.toml");
    let text = std::fs::read_to_string(&with_motor).unwrap();
    let plain = text.replace(
        "type = \"motor\"\nbody = \"crank\"\nkm = 3.0\nomega_ref_rpm = 200.0",
        "type = \"torque\"\nbody = \"crank\"\ntorque = 0.0",
    );
    assert_ne!(plain, text, "the motor is replaced");
    let without = dir.path().join("four-bar-no-motor.toml");
    std::fs::write(&without, plain).unwrap();
    let sim = dir.path().join("sim");
    common::simulate_mechanism(&with_motor, "1", "500", "3", &sim);
    let tracks = dir.path().join("tracks.csv");
    std::fs::write(
        &tracks,
        common::noisy_tracks(&sim.join("tracks.csv"), 1e-4, 5, 1.0, &|_, _| false),
    )
    .unwrap();
    let (a, b) = (dir.path().join("no-motor"), dir.path().join("motor"));
    let said = process(&tracks, &without, &a, &[]);
    assert_no_bench_words("four-bar without its motor", &said);
    process(&tracks, &with_motor, &b, &["--periodic", "off"]);
    let (fa, fb) = (
        std::fs::read_to_string(a.join("forces.csv")).unwrap(),
        std::fs::read_to_string(b.join("forces.csv")).unwrap(),
    );
    assert_eq!(
        fa, fb,
        "the same forces with and without the motor's checks"
    );
    let s = summary(&a);
    assert!(s["periodic"].is_null() && s["clock"].is_null(), "{s}");
    assert!(
        s["horizontal_correction_rad"].is_number(),
        "two ground pins: the horizontal is refined by default"
    );
}

type Csv = std::collections::HashMap<String, Vec<String>>;

/// Column `col` of `got` against `truth`: its RMS error over the solved samples as a share of
/// the truth's peak, and that peak (the column's unit).
fn rms_of_peak(truth: &Csv, got: &Csv, col: &str) -> (f64, f64) {
    let (t, g) = (num(truth, col), num(got, col));
    let peak = t.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let (mut s, mut n) = (0.0, 0usize);
    for (a, b) in t.iter().zip(&g) {
        if b.is_finite() {
            s += (a - b).powi(2);
            n += 1;
        }
    }
    assert!(n + 2 >= t.len(), "{col}: {n} of {} solved", t.len());
    ((s / n as f64).sqrt() / peak, peak)
}

/// Actuators between two bodies and on a slide: a cylinder between the arm's tip and a
/// carriage (its tension the unknown) and a jack along the carriage's rail (`rail_force`, the
/// slide's actuator), with friction at the arm's pin and on the rail. Simulated, then processed
/// by default from 1 kHz positions: each actuator's effort and each joint's force back within
/// 0.5 % RMS of its peak, and no warning at all (the positions are exact).
#[test]
fn a_jack_and_a_cylinder_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let mech = common::root().join("tests/mechanisms/jack-and-cylinder.toml");
    let sim = dir.path().join("sim");
    common::simulate_mechanism(&mech, "1.2", "1000", "0", &sim);
    let out = dir.path().join("out");
    let said = process(&sim.join("tracks.csv"), &mech, &out, &[]);
    assert!(!said.contains("warning"), "{said}");
    let (truth, got) = (
        read_csv(&sim.join("forces.csv")),
        read_csv(&out.join("forces.csv")),
    );
    for col in ["cylinder", "rail_force", "rail_normal"] {
        let (e, peak) = rms_of_peak(&truth, &got, col);
        eprintln!("{col}: {:.3} % RMS of its peak {peak:.3}", 100.0 * e);
        assert!(e < 0.005, "{col}: {e}");
    }
    let (e, peak) = common::force_error(&truth, &got, "O");
    eprintln!("O: force {:.3} % RMS of its peak {peak:.2} N", 100.0 * e);
    assert!(e < 0.005, "O: {e}");
}

/// What real rigs have: joint friction (viscous and smoothed Coulomb, in both joints) and a
/// motor between two bodies (the elbow's, its reaction on the upper arm). The double pendulum
/// simulated with both, then processed by default from its markers' positions at 1 kHz: each
/// motor's torque and each joint's force back within 0.5 % RMS of its peak (as the bench's
/// forces are), and the same motion processed with the friction left out of the file misses
/// each motor's torque by the friction it spends.
#[test]
fn joint_friction_and_a_joint_motor_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let mech = common::root().join("tests/mechanisms/double-pendulum-friction.toml");
    let sim = dir.path().join("sim");
    common::simulate_mechanism(&mech, "2", "1000", "0", &sim);
    let out = dir.path().join("out");
    let said = process(&sim.join("tracks.csv"), &mech, &out, &[]);
    assert_no_bench_words("double pendulum", &said);
    let truth = read_csv(&sim.join("forces.csv"));
    let got = read_csv(&out.join("forces.csv"));
    let rms_of_peak = |col: &str, got: &Csv| rms_of_peak(&truth, got, col);
    for col in ["shoulder_motor", "elbow_torque"] {
        let (e, peak) = rms_of_peak(col, &got);
        eprintln!("{col}: {:.3} % RMS of its peak {peak:.3} N m", 100.0 * e);
        assert!(e < 0.005, "{col}: {e}");
    }
    for joint in ["shoulder", "elbow"] {
        let (e, peak) = common::force_error(&truth, &got, joint);
        eprintln!(
            "{joint}: force {:.3} % RMS of its peak {peak:.2} N",
            100.0 * e
        );
        assert!(e < 0.005, "{joint}: {e}");
    }
    // Without the friction in the file, the motors' torques miss what friction takes.
    let text = std::fs::read_to_string(&mech).unwrap();
    let bare: String = text
        .lines()
        .filter(|l| !l.starts_with("friction"))
        .collect::<Vec<_>>()
        .join("\n");
    let bare_mech = dir.path().join("no-friction.toml");
    std::fs::write(&bare_mech, bare).unwrap();
    let bare_out = dir.path().join("bare");
    process(&sim.join("tracks.csv"), &bare_mech, &bare_out, &[]);
    let e = rms_of_peak("shoulder_motor", &read_csv(&bare_out.join("forces.csv"))).0;
    eprintln!(
        "shoulder_motor without the friction in the file: {:.2} % RMS of its peak",
        100.0 * e
    );
    assert!(
        e > 0.05,
        "friction is a visible share of the motor's torque: {e}"
    );
}
