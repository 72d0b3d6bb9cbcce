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
    let mut args = vec![
        "process",
        "--tracks",
        tracks.to_str().unwrap(),
        "--mechanism",
        mech.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = common::flexbench(&args);
    let said = common::said(&o);
    assert!(o.status.success(), "process {args:?} failed: {said}");
    said
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
    common::ok(&[
        "simulate",
        "--mechanism",
        mech.to_str().unwrap(),
        "--duration",
        "1.1",
        "--rate",
        "60",
        "--settle",
        "0",
        "--out",
        sim.to_str().unwrap(),
    ]);
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

/// The four-bar of pipelines/four-bar.toml and the same with its motor written as a plain
/// torque actuator (no crank): the same simulated tracks processed by default; the one without
/// a motor says nothing of a crank, its forces are those of the file with the motor processed
/// without the refit in the crank angle (the checks do not change the numbers).
#[test]
fn the_four_bar_without_its_motor() {
    let dir = tempfile::tempdir().unwrap();
    let with_motor = common::root().join("pipelines/four-bar.toml");
    let text = std::fs::read_to_string(&with_motor).unwrap();
    let plain = text.replace(
        "type = \"motor\"\nbody = \"crank\"\nkm = 3.0\nomega_ref_rpm = 200.0",
        "type = \"torque\"\nbody = \"crank\"\ntorque = 0.0",
    );
    assert_ne!(plain, text, "the motor is replaced");
    let without = dir.path().join("four-bar-no-motor.toml");
    std::fs::write(&without, plain).unwrap();
    let sim = dir.path().join("sim");
    common::ok(&[
        "simulate",
        "--mechanism",
        with_motor.to_str().unwrap(),
        "--duration",
        "1",
        "--rate",
        "500",
        "--out",
        sim.to_str().unwrap(),
    ]);
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
