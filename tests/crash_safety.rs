//! Crash safety: `flexbench run` killed (SIGKILL) at random moments while its stages compute and
//! write. After every kill each stage's folder is a whole stage, the old one or the new one:
//! its `stage.json` parses, every file it lists is there with the bytes it lists, and nothing
//! else is (no half-written file in the place of a result); the manifest parses. A run after the
//! kills finishes. Four runs are started, each killed at a moment drawn uniformly over a whole
//! run's span (at least three of them before they end).

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::root;

/// The check: every stage folder whole.
fn assert_whole(out: &Path, when: &str) {
    for stage in flexbench_pipeline::run::StageName::CHAIN.map(|s| s.as_str()) {
        let dir = out.join(stage);
        assert!(dir.is_dir(), "{when}: the {stage} folder is gone");
        let stamp: flexbench_pipeline::run::StageStamp = serde_json::from_str(
            &std::fs::read_to_string(dir.join("stage.json"))
                .unwrap_or_else(|e| panic!("{when}: {stage}/stage.json: {e}")),
        )
        .unwrap_or_else(|e| panic!("{when}: {stage}/stage.json does not parse: {e}"));
        let mut files = Vec::new();
        fn walk(d: &Path, base: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, base, out);
                } else {
                    out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        walk(&dir, &dir, &mut files);
        files.retain(|f| f != "stage.json");
        files.sort();
        let listed: Vec<String> = stamp.outputs.keys().cloned().collect();
        assert_eq!(
            files, listed,
            "{when}: {stage} holds files its stamp does not list (or lacks some)"
        );
        for (f, h) in &stamp.outputs {
            assert_eq!(
                &flexbench_pipeline::run::hash_path(&dir.join(f)).unwrap(),
                h,
                "{when}: {stage}/{f} is not the file its stage wrote"
            );
        }
    }
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&manifest)
        .unwrap_or_else(|e| panic!("{when}: manifest.json does not parse: {e}"));
}

fn pipeline(dir: &Path, k: usize) -> std::path::PathBuf {
    let p = dir.join(format!("pipeline-{k}.toml"));
    // Each k changes process, fem and compare settings: those stages and the report rerun.
    let text = format!(
        "[run]\nmechanism = \"{}\"\nrecording = \"{}\"\n[calibrate]\nsquare = 0.03\n[process]\nrefine_horizontal = false\nmax_condition = {}\n[fem]\ndamping = {}\n[compare]\nharmonics = {}\n",
        root().join("mechanisms/wind-pump.toml").display(),
        root().join("recordings/default").display(),
        1e8 + k as f64,
        0.01 + 0.001 * k as f64,
        20 + k % 2
    );
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn killed_runs_leave_every_stage_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let bin = env!("CARGO_BIN_EXE_flexbench");
    let first = Command::new(bin)
        .args([
            "run",
            pipeline(dir.path(), 0).to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_whole(&out, "after the first run");
    // How long the stages after track take, to spread the kills over them.
    let clock = Instant::now();
    let full = Command::new(bin)
        .args([
            "run",
            pipeline(dir.path(), 1).to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(full.status.success());
    let span = clock.elapsed().as_secs_f64();
    let mut rng = common::gauss::Gauss::new(0x5DEECE66D);
    let mut kills = 0;
    for k in 2..6 {
        // A moment uniformly within the run.
        let u = rng.uniform();
        let at = Duration::from_secs_f64(0.2 + u * (span - 0.2));
        let mut child = Command::new(bin)
            .args([
                "run",
                pipeline(dir.path(), k).to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while start.elapsed() < at {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        assert_whole(
            &out,
            &format!("killed at {:.2} s (run {k})", at.as_secs_f64()),
        );
    }
    assert!(
        kills >= 3,
        "only {kills} runs were killed before they finished"
    );
    let last = Command::new(bin)
        .args([
            "run",
            pipeline(dir.path(), 6).to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        last.status.success(),
        "a run after the kills: {}",
        String::from_utf8_lossy(&last.stderr)
    );
    assert_whole(&out, "after a run to the end");
}
