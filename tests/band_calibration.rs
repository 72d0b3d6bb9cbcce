//! The tracks' share of the forces' bands calibrated by a parametric bootstrap of the recording
//! (`process --calibrate-bands N`, `[process] calibrate_bands`; issue 41, item 3): each force's
//! scale in the record, the bands scaled by it and nothing else moved, and the cases it cannot
//! serve refused.

use std::path::Path;

use crate::common::{flexbench, num, ok, read_csv, root, track_rendering};

/// The shipped recording tracked with its true camera, then processed with and without three
/// replicates: every force's scale is in the record, between 0.1 and 1.5 (the smoother's band
/// is conservative: the periodic fit pools the turns), each sigma is the uncalibrated one times
/// its force's scale (1e-9), the forces themselves unchanged; the truth at B and C' against the
/// calibrated bands is printed.
#[test]
fn the_tracks_share_scaled_by_the_recordings_replicates() {
    let dir = tempfile::tempdir().unwrap();
    let rec = root().join("recordings/default");
    let mech = root().join("mechanisms/wind-pump.toml");
    let tracks = dir.path().join("track/tracks.csv");
    let t = track_rendering(&rec, &mech, &tracks, &[]);
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (bare, scaled) = (dir.path().join("bare"), dir.path().join("scaled"));
    let args = |out: &Path| {
        vec![
            "process".to_string(),
            "--tracks".into(),
            s(&tracks),
            "--flags".into(),
            s(&tracks.with_file_name("flags.csv")),
            "--mechanism".into(),
            s(&mech),
            "--out".into(),
            s(out),
        ]
    };
    let plain: Vec<String> = args(&bare);
    ok(&plain.iter().map(String::as_str).collect::<Vec<_>>());
    let mut with = args(&scaled);
    with.extend(["--calibrate-bands".into(), "3".into()]);
    ok(&with.iter().map(String::as_str).collect::<Vec<_>>());
    let text = std::fs::read_to_string(scaled.join("summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ts = &v["tracks_scale"];
    assert_eq!(ts["replicates"], 3);
    assert!(v["bands"]
        .as_str()
        .unwrap()
        .contains("bootstrap of 3 replicates"));
    let (f0, f1) = (
        read_csv(&bare.join("forces.csv")),
        read_csv(&scaled.join("forces.csv")),
    );
    let truth = read_csv(&rec.join("truth/forces.csv"));
    for sc in ts["scales"].as_array().unwrap() {
        let force = sc["force"].as_str().unwrap();
        let Some(k) = sc["scale"].as_f64() else {
            continue;
        };
        assert_eq!(num(&f0, force), num(&f1, force), "{force} moved");
        let (a, b) = (
            num(&f0, &format!("{force}_sigma")),
            num(&f1, &format!("{force}_sigma")),
        );
        for (x, y) in a.iter().zip(&b).filter(|(x, _)| x.is_finite()) {
            assert!(
                (y - k * x).abs() <= 1e-9 * x.abs().max(1e-12),
                "{force}: {y} vs {k} x {x}"
            );
        }
        if ["B_x", "B_y", "C_x", "C_y"].contains(&force) {
            assert!((0.1..1.5).contains(&k), "{force}: scale {k}");
            // The truth against the calibrated band (the samples share the recording's times).
            let (tt, tv) = (num(&truth, "t"), num(&truth, force));
            let (gt, gv) = (num(&f1, "t"), num(&f1, force));
            let inside = gt
                .iter()
                .zip(gv.iter().zip(&b))
                .filter(|(_, (g, s))| g.is_finite() && s.is_finite())
                .filter_map(|(t, (g, s))| {
                    let i = tt.iter().position(|x| (x - t).abs() < 1e-9)?;
                    Some((g - tv[i]).abs() <= 2.0 * s)
                })
                .collect::<Vec<_>>();
            let share = inside.iter().filter(|x| **x).count() as f64 / inside.len() as f64;
            eprintln!("{force}: scale {k:.3}, the truth within the calibrated 2-sigma band at {:.1} % of {} samples", 100.0 * share, inside.len());
        }
    }
}

/// Refused, with what to do and nothing written: one replicate, and a mechanism without a
/// motor-driven crank to simulate (the real pendulum).
#[test]
fn band_calibrations_that_cannot_serve_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let rig = root().join("recordings/dfki-pendulum");
    let run = |tracks: &Path, mech: &Path, n: &str, out: &Path| {
        flexbench(&[
            "process",
            "--tracks",
            &s(tracks),
            "--mechanism",
            &s(mech),
            "--calibrate-bands",
            n,
            "--out",
            &s(out),
        ])
    };
    let out = dir.path().join("pendulum");
    let o = run(
        &rig.join("tracks/ddp_swingup.csv"),
        &rig.join("pendulum.toml"),
        "4",
        &out,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("motor-driven crank") && err.contains("calibrate_bands"),
        "{err}"
    );
    assert!(!out.join("forces.csv").exists());
    let out = dir.path().join("one");
    let truth = root().join("recordings/default/truth/tracks.csv");
    let o = run(&truth, &root().join("mechanisms/wind-pump.toml"), "1", &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("2 replicates or more"), "{err}");
    assert!(!out.join("forces.csv").exists());
}
