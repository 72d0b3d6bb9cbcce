//! Printed fiducials from video to forces: the four-bar of `pipelines/four-bar.toml` with its
//! five markers as ArUco codes (`kind = "fiducial"`, dictionary 4x4_50, ids 3, 7, 11, 19, 23;
//! the coupler's third marker moved so that 25 mm codes do not overlap), rendered by `flexbench
//! render` 0.7 m away with the four-bar's nuisances (bright bolt heads beside the paths, a glint
//! crossing K2), 2 ms of motion blur and H.264 at a phone's bit rate (18 Mbit/s), tracked with
//! the rendering's own camera. Each code is found by its identity (no lock, no assignment by
//! motion) and its centre where its corners' diagonals cross; the samples pass the same tests
//! (`flags`). Measured (docs/tracking.md): the centres within 0.1 px RMS of the truth, every
//! sample more than 1 px off flagged, and the forces at every joint within 3 % RMS of their
//! peak. Bad input: a dictionary that matches nothing in the video is refused, naming the
//! dictionary the video's codes are of.

use crate::common;

use std::path::{Path, PathBuf};

/// The four-bar with fiducial markers of `dictionary` (the coupler's third marker moved so
/// that 25 mm codes do not overlap).
fn mechanism(dir: &Path, dictionary: &str) -> PathBuf {
    let ids = [("K1", 3), ("K2", 7), ("K3", 11), ("R1", 19), ("R2", 23)];
    common::four_bar_with(
        dir,
        dictionary,
        &[("at = [0.185, 0.03]", "at = [0.125, 0.035]")],
        &|marker| {
            let id = ids
                .iter()
                .find(|(m, _)| *m == marker)
                .map_or(0, |(_, id)| *id);
            format!("kind = \"fiducial\"\ndictionary = \"{dictionary}\"\nid = {id}")
        },
    )
}

#[test]
fn printed_fiducials_from_video_to_forces() {
    let dir = tempfile::tempdir().unwrap();
    let cam = dir.path().join("camera.toml");
    common::four_bar_camera(
        &cam,
        &[
            ("distance = 1.0", "distance = 0.7"),
            // A second of motion: three turns of the crank (200 rpm).
            ("duration = 2.0", "duration = 1.0"),
            (
                "bitrate_mbps = 18.0",
                "bitrate_mbps = 18.0\nfiducial_side = 0.025",
            ),
        ],
    );
    let mech = mechanism(dir.path(), "4x4_50");
    let rec = dir.path().join("rec");
    common::render(&mech, &cam, &rec);

    let tracks = dir.path().join("tracks.csv");
    let o = common::track_rendering(&rec, &mech, &tracks, &[]);
    assert!(o.status.success(), "{}", common::said(&o));
    eprintln!("{}", common::said(&o));

    // Against the truth, every sample more than 1 px off flagged; the forces at every joint.
    let out = dir.path().join("process");
    common::four_bar_checked(&rec, &tracks, &mech, &out, 0.1, "fiducials");

    // A dictionary that matches nothing in the video: refused, naming the video's, nothing
    // written.
    let wrong = mechanism(dir.path(), "6x6_250");
    let none = dir.path().join("none.csv");
    let o = common::track_rendering(&rec, &wrong, &none, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("dictionary 6x6_250")
            && err.contains("the video's codes are of dictionary 4x4_"),
        "{err}"
    );
    assert!(!none.exists());
}
