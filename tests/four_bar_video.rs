//! The four-bar of `pipelines/four-bar.toml` from video to forces, through the real binary: the
//! shipped recording `recordings/four-bar` films its markers on two bodies (the coupler's
//! triangle K1-K3, the rocker's R1 and R2) beside two bright bolt heads, with a glint over K2.
//! calibrate (its views, its board in the plane, its clicks) -> track --mechanism (each body's
//! markers found as the mechanism places them) -> process (Kalman smoother, flagged samples left
//! out). Checked against the rendering's truth: every sample more than 1 px from its truth is
//! flagged, and the forces at every joint are within 3 % RMS of their peak (0.3 % to 0.8 %
//! measured; the motor torque 1.3 %).

use crate::common;

use std::collections::{BTreeSet, HashMap};

use common::{num, ok, read_csv, root};

#[test]
fn four_bar_from_video_to_forces() {
    let dir = tempfile::tempdir().unwrap();
    let rec = root().join("recordings/four-bar");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let (cal, tracks, out) = (
        dir.path().join("camera.yaml"),
        dir.path().join("tracks.csv"),
        dir.path().join("process"),
    );
    let mech = s(&root().join("pipelines/four-bar.toml"));
    common::calibrate_recording(&rec, &cal);
    #[rustfmt::skip]
    ok(&["track", "--video", &s(&rec.join("video.mp4")), "--calibration", &s(&cal), "--mechanism", &mech, "--out", &s(&tracks)]);
    let flags = dir.path().join("flags.csv");
    #[rustfmt::skip]
    ok(&["process", "--tracks", &s(&tracks), "--flags", &s(&flags), "--mechanism", &mech, "--out", &s(&out), "--refine-horizontal"]);

    // Every sample more than 1 px from its truth is flagged.
    let truth = read_csv(&rec.join("truth/tracks.csv"));
    let at: HashMap<(String, String), usize> = (0..truth["frame"].len())
        .map(|i| ((truth["frame"][i].clone(), truth["marker"][i].clone()), i))
        .collect();
    let f = read_csv(&flags);
    let flagged: BTreeSet<(String, String)> = (0..f["frame"].len())
        .map(|i| (f["frame"][i].clone(), f["marker"][i].clone()))
        .collect();
    let got = read_csv(&tracks);
    let (gu, gv, tu, tv) = (
        num(&got, "u"),
        num(&got, "v"),
        num(&truth, "u"),
        num(&truth, "v"),
    );
    let mut bad = Vec::new();
    for i in 0..got["frame"].len() {
        let key = (got["frame"][i].clone(), got["marker"][i].clone());
        let j = at[&key];
        let d = (gu[i] - tu[j]).hypot(gv[i] - tv[j]);
        if d > 1.0 {
            bad.push((key.clone(), d, flagged.contains(&key)));
        }
    }
    eprintln!(
        "four-bar: {} samples, {} flagged, more than 1 px: {bad:?}",
        got["frame"].len(),
        flagged.len()
    );
    assert!(bad.iter().all(|b| b.2), "unflagged bad samples: {bad:?}");
    assert!(got["marker"].iter().any(|m| m == "R1") && got["marker"].iter().any(|m| m == "K1"));

    // The forces at every joint and the motor torque against the simulation's.
    let (tf, pf) = (
        read_csv(&rec.join("truth/forces.csv")),
        read_csv(&out.join("forces.csv")),
    );
    assert_eq!(tf["t"].len(), pf["t"].len());
    for joint in ["O2", "A", "B", "O4"] {
        let (rel, peak) = common::force_error(&tf, &pf, joint);
        eprintln!(
            "four-bar: {joint} {:.2} % RMS of its peak {peak:.1} N",
            100.0 * rel
        );
        assert!(rel < 0.03, "{joint}: {:.2} %", 100.0 * rel);
    }
}
