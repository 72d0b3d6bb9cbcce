//! `flexbench compare --measured`: the computed joint torques and forces against a table the
//! rig measured on its own clock, for any mechanism (no crank needed).
//!
//! - The real pendulum (recordings/dfki-pendulum): its motor's measured torque against the
//!   actuator torque processed from its encoder with the lab's identified friction in the file.
//!   Low-passed at 10 Hz as the by-hand reference filters it, the RMS difference is the by-hand
//!   model's (0.760 N m, scripts/make_pendulum_reference.py) within 1.2x; the mean difference is
//!   the lab's identified offset (-0.0759 N m) within 0.03 N m, which the comparison names; the
//!   friction law explains a share of the frictionless model's error (it is in the by-hand model).
//! - A known truth: the jack-and-cylinder simulated, its forces table given back as the
//!   measurement on a logger's clock (800 Hz, started 40 ms after the recording, 12.5 ms late):
//!   the lag within 0.2 ms, the RMS difference after the offset within 1 % of each peak, and
//!   the friction share near 1 (the measurement holds exactly the file's friction).
//! - Bad measured tables (columns naming no joint, no times, a NaN, a mapping onto no column):
//!   refused by name with the fix, a non-zero exit, and an earlier result left as it was.
//! - The pipeline: `flexbench run` on the pendulum (its tracks and its measured table as the
//!   recording's inputs) runs the stages that apply to it (no FEM of a lever it does not have,
//!   no simulation by a crank it does not have) and its report holds the measured comparison's
//!   table and figure, with the same numbers as the command.

use std::path::{Path, PathBuf};

use crate::common;

use common::{num, read_csv};

fn rig() -> PathBuf {
    common::root().join("recordings/dfki-pendulum")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Compare `processed` with `measured` under `mechanism` into `out` with `extra`: stdout.
fn compare(
    processed: &Path,
    mechanism: &Path,
    measured: &Path,
    out: &Path,
    extra: &[&str],
) -> String {
    let mut args = vec![
        "compare",
        "--processed",
        processed.to_str().unwrap(),
        "--mechanism",
        mechanism.to_str().unwrap(),
        "--measured",
        measured.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::ok(&args)
}

#[test]
fn the_real_pendulums_measured_torque() {
    let dir = tempfile::tempdir().unwrap();
    let mech = rig().join("pendulum-friction.toml");
    let processed = dir.path().join("process");
    common::process_mechanism_said(
        &rig().join("tracks/ddp_swingup.csv"),
        &mech,
        &processed,
        &[],
    );
    let out = dir.path().join("compare");
    let measured = rig().join("runs/ddp_swingup.csv");
    let said = compare(
        &processed,
        &mech,
        &measured,
        &out,
        &[
            "--measured-column",
            "torque=motor_torque",
            "--measured-cutoff",
            "10",
        ],
    );
    assert!(said.contains("no simulated comparison"), "{said}");
    let record = json(&out.join("measured.json"));
    let q = &record["quantities"][0];
    let by_hand = json(&rig().join("by-hand/summary.json"));
    let hand = by_hand["ddp_swingup"]["rms_model_minus_rigid_measured_nm"]
        .as_f64()
        .unwrap_or_else(|| panic!("{by_hand}"));
    let rms = q["rms_difference"].as_f64().unwrap();
    let mean = q["mean_difference"].as_f64().unwrap();
    let share = q["friction_share"].as_f64().unwrap();
    eprintln!(
        "pendulum: RMS {rms:.4} N m (by hand {hand:.4}, {:.3}x), mean {mean:+.4} N m, lag {:+.1} ms, friction explains {:.1} %",
        rms / hand,
        1e3 * q["lag_s"].as_f64().unwrap(),
        100.0 * share
    );
    assert!(rms < 1.2 * hand, "{q}");
    assert!((mean - -7.586e-2).abs() < 0.03, "{q}");
    assert!(share > 0.1 && share < 1.0, "{q}");
    assert_eq!(
        record["ignored_columns"],
        serde_json::json!(["position", "velocity"])
    );
    assert_eq!(record["friction"], serde_json::json!(["axle_friction"]));
    for f in [
        "measured.png",
        "measured.svg",
        "measured_comparison.csv",
        "measured_series.parquet",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    bad_tables(dir.path(), &processed, &mech, &out);
}

/// The bad measured tables of the module's list, each against `out` holding a good result.
fn bad_tables(dir: &Path, processed: &Path, mech: &Path, out: &Path) {
    let before = std::fs::read(out.join("measured.json")).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let no_joint = write(
        "no-joint.csv",
        "t,torque,current\n0.0,0.1,1.0\n0.1,0.2,1.1\n0.2,0.3,1.2\n",
    );
    let no_time = write("no-time.csv", "motor_torque\n0.1\n0.2\n0.3\n");
    let nan = write("nan.csv", "t,motor_torque\n0.0,0.1\n0.002,NaN\n0.004,0.3\n");
    let cases: [(&Path, &[&str], &[&str]); 4] = [
        (
            &no_joint,
            &[],
            &[
                "no column names a joint",
                "motor_torque",
                "torque, current",
                "--measured-column",
            ],
        ),
        (
            &no_time,
            &[],
            &["no time column", "own clock", "--measured-time"],
        ),
        (&nan, &[], &["'motor_torque', row 2", "NaN", "drop the row"]),
        (
            &no_joint,
            &["--measured-column", "torque=elbow_torque"],
            &["'elbow_torque'", "does not have", "axle_x"],
        ),
    ];
    for (table, extra, needles) in cases {
        let mut args = vec![
            "compare",
            "--processed",
            processed.to_str().unwrap(),
            "--mechanism",
            mech.to_str().unwrap(),
            "--measured",
            table.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let got = common::flexbench(&args);
        let err = String::from_utf8_lossy(&got.stderr);
        assert!(!got.status.success() && !err.contains("panicked"), "{err}");
        for n in needles {
            assert!(err.contains(n), "{table:?}: '{n}' not in\n{err}");
        }
        assert_eq!(
            std::fs::read(out.join("measured.json")).unwrap(),
            before,
            "{table:?}"
        );
    }
}

#[test]
fn a_known_truth_on_a_loggers_clock() {
    let dir = tempfile::tempdir().unwrap();
    let mech = common::root().join("tests/mechanisms/jack-and-cylinder.toml");
    let sim = dir.path().join("sim");
    common::simulate_mechanism(&mech, "1.2", "1000", "0", &sim);
    let processed = dir.path().join("process");
    common::process_mechanism_said(&sim.join("tracks.csv"), &mech, &processed, &[]);
    // The logger: started 40 ms after the recording's clock, its samples 12.5 ms late, 800 Hz.
    let truth = read_csv(&sim.join("forces.csv"));
    let (t, cyl, jack) = (
        num(&truth, "t"),
        num(&truth, "cylinder"),
        num(&truth, "rail_force"),
    );
    let lerp = |v: &[f64], x: f64| {
        let k = ((x / 0.001).floor() as usize).min(t.len() - 2);
        let w = (x - t[k]) / 0.001;
        v[k] * (1.0 - w) + v[k + 1] * w
    };
    let mut text = String::from("time,cylinder,rail_force\n");
    for i in 0..800 {
        let logger = i as f64 / 800.0; // its own clock
        let rec = logger + 0.040 - 0.0125; // the recording's time of the value it holds
        if (0.0..=1.2).contains(&rec) {
            text += &format!("{logger},{},{}\n", lerp(&cyl, rec), lerp(&jack, rec));
        }
    }
    let measured = dir.path().join("logger.csv");
    std::fs::write(&measured, text).unwrap();
    let out = dir.path().join("compare");
    compare(
        &processed,
        &mech,
        &measured,
        &out,
        &["--measured-offset", "0.040"],
    );
    let record = json(&out.join("measured.json"));
    for q in record["quantities"].as_array().unwrap() {
        let name = q["quantity"].as_str().unwrap();
        let peak = if name == "cylinder" { &cyl } else { &jack }
            .iter()
            .fold(0.0f64, |a, v| a.max(v.abs()));
        let lag = q["lag_s"].as_f64().unwrap();
        let after = q["rms_after_lag"].as_f64().unwrap();
        let share = q["friction_share"].as_f64().unwrap();
        eprintln!(
            "{name}: lag {:.3} ms, RMS after it {:.3} % of the peak, friction share {share:.4}",
            1e3 * lag,
            100.0 * after / peak
        );
        assert!((lag - 0.0125).abs() < 2e-4, "{q}");
        assert!(after < 0.01 * peak, "{q}");
        assert!(share > 0.9, "{q}");
    }
}

#[test]
fn a_run_on_the_pendulum_reports_its_measured_torque() {
    let dir = tempfile::tempdir().unwrap();
    let rig = rig();
    let file = dir.path().join("pendulum.toml");
    std::fs::write(
        &file,
        format!(
            "[run]\nmechanism = \"{}\"\nout = \"{}\"\n[inputs]\ntracks = \"{}\"\nmeasured = \"{}\"\n[compare]\nmeasured_columns = {{ torque = \"motor_torque\" }}\nmeasured_cutoff_hz = 10.0\n",
            rig.join("pendulum-friction.toml").display(),
            dir.path().join("out").display(),
            rig.join("tracks/ddp_swingup.csv").display(),
            rig.join("runs/ddp_swingup.csv").display()
        ),
    )
    .unwrap();
    let said = common::ok(&["run", file.to_str().unwrap()]);
    let out = dir.path().join("out");
    assert!(!out.join("fem").exists(), "no lever, no FEM stage:\n{said}");
    let stage = out.join("compare");
    assert!(
        !stage.join("summary.json").exists(),
        "no crank, no simulated comparison"
    );
    let record = json(&stage.join("measured.json"));
    // The command's numbers, the same code on the same inputs.
    let processed = dir.path().join("process");
    let mech = rig.join("pendulum-friction.toml");
    common::process_mechanism_said(&rig.join("tracks/ddp_swingup.csv"), &mech, &processed, &[]);
    let cli = dir.path().join("cli");
    compare(
        &processed,
        &mech,
        &rig.join("runs/ddp_swingup.csv"),
        &cli,
        &[
            "--measured-column",
            "torque=motor_torque",
            "--measured-cutoff",
            "10",
        ],
    );
    let by_command = json(&cli.join("measured.json"));
    assert_eq!(record["quantities"], by_command["quantities"]);
    let manifest = json(&out.join("manifest.json"));
    assert!(
        manifest["inputs"]["measured"]["sha256"].is_string(),
        "the measured table among the run's inputs: {manifest}"
    );
    let html = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    for needle in [
        "Computed against the rig&#x27;s measurement",
        "friction explains (%)",
        "the rig's own measurement on its clock",
    ] {
        let plain = needle.replace("&#x27;", "'");
        assert!(
            html.contains(needle) || html.contains(&plain),
            "'{needle}' not in the report"
        );
    }
    for bench_word in ["crank", "seed 001", "lever", "B and C'"] {
        assert!(
            !html.contains(bench_word),
            "'{bench_word}' in the pendulum's report"
        );
    }
}
