//! The four-bar of `mechanisms/four-bar.toml` from video to forces, through the real binary: the
//! shipped recording `recordings/four-bar` films its markers on two bodies (the coupler's
//! triangle K1-K3, the rocker's R1 and R2) beside two bright bolt heads, with a glint over K2.
//! calibrate (its views, its board in the plane, its clicks) -> track --mechanism (each body's
//! markers found as the mechanism places them) -> process (Kalman smoother, flagged samples left
//! out). Checked against the rendering's truth: every sample more than 1 px from its truth is
//! flagged, and the forces at every joint are within 3 % RMS of their peak (0.3 % to 0.8 %
//! measured; the motor torque 1.3 %).

use crate::common;

use std::path::Path;

use common::{ok, root};

#[test]
fn four_bar_from_video_to_forces() {
    let dir = tempfile::tempdir().unwrap();
    let rec = root().join("recordings/four-bar");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (cal, tracks, out) = (
        dir.path().join("camera.yaml"),
        dir.path().join("tracks.csv"),
        dir.path().join("process"),
    );
    let mech = s(&root().join("mechanisms/four-bar.toml"));
    common::calibrate_recording(&rec, &cal);
    #[rustfmt::skip]
    ok(&["track", "--video", &s(&rec.join("video.mp4")), "--calibration", &s(&cal), "--mechanism", &mech, "--out", &s(&tracks)]);

    // Every sample more than 1 px from its truth is flagged; the forces at every joint.
    let got = common::read_csv(&tracks);
    assert!(got["marker"].iter().any(|m| m == "R1") && got["marker"].iter().any(|m| m == "K1"));
    common::four_bar_checked(
        &rec,
        &tracks,
        Path::new(&mech),
        &out,
        f64::INFINITY,
        "four-bar",
    );
}
