//! Printed fiducials beside bright discs, from video to forces: the four-bar of
//! `mechanisms/four-bar.toml` with its coupler's three markers as ArUco codes (`kind =
//! "fiducial"`, dictionary 4x4_50, ids 3, 7, 11; the coupler's third marker moved so that 25 mm
//! codes do not overlap) and its rocker's two as bright discs (the mechanism file's default
//! kind), rendered by `flexbench render` 0.7 m away with the four-bar's nuisances (bright bolt
//! heads beside the paths, a glint crossing K2), 2 ms of motion blur and H.264 at a phone's bit
//! rate (18 Mbit/s), tracked with the rendering's own camera. The markers of each look are
//! followed by their own tracker on the same frames (`flexbench_vision::kinds`): each code by
//! its identity (no lock, no assignment by motion), its centre where its corners' diagonals
//! cross; the discs by their pattern on the rocker. Every sample passes the same tests
//! (`flags`), the coupler's and the rocker's patterns across kinds. Measured (docs/tracking.md):
//! each kind's centres within 0.1 px RMS of the truth, every sample more than 1 px off flagged,
//! and the forces at every joint within 3 % RMS of their peak. Bad input: a dictionary that
//! matches nothing in the video is refused, naming the dictionary the video's codes are of; a
//! disc alone of its kind is refused, naming it.

use crate::common;

use std::path::{Path, PathBuf};

/// The four-bar with its coupler's markers printed codes of `dictionary` (the third moved so
/// that 25 mm codes do not overlap) and its rocker's `rocker` (the mechanism file's keys).
fn mechanism(dir: &Path, name: &str, dictionary: &str, rocker: &str) -> PathBuf {
    let ids = [("K1", 3), ("K2", 7), ("K3", 11)];
    common::four_bar_with(
        dir,
        name,
        &[("at = [0.185, 0.03]", "at = [0.125, 0.035]")],
        &|marker| match ids.iter().find(|(m, _)| *m == marker) {
            Some((_, id)) => {
                format!("kind = \"fiducial\"\ndictionary = \"{dictionary}\"\nid = {id}")
            }
            None => rocker.to_string(),
        },
    )
}

#[test]
fn printed_fiducials_beside_bright_discs_from_video_to_forces() {
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
    let mech = mechanism(dir.path(), "mixed", "4x4_50", "");
    let rec = dir.path().join("rec");
    common::render(&mech, &cam, &rec);

    let tracks = dir.path().join("tracks.csv");
    let o = common::track_rendering(&rec, &mech, &tracks, &[]);
    assert!(o.status.success(), "{}", common::said(&o));
    eprintln!("{}", common::said(&o));

    // Against the truth, every sample more than 1 px off flagged; the forces at every joint.
    let out = dir.path().join("process");
    common::four_bar_checked(&rec, &tracks, &mech, &out, 0.1, "fiducials and discs");
    let a = common::against_truth(
        &rec.join("truth/tracks.csv"),
        &tracks,
        &tracks.with_file_name("flags.csv"),
    );
    let (codes, discs) = (
        a.kept_rms_of(&["K1", "K2", "K3"]),
        a.kept_rms_of(&["R1", "R2"]),
    );
    eprintln!("not flagged: the codes {codes:.3} px RMS, the discs {discs:.3} px RMS");
    assert!(codes < 0.1 && discs < 0.1, "{codes} {discs}");

    // A dictionary that matches nothing in the video: refused, naming the video's, nothing
    // written.
    let wrong = mechanism(dir.path(), "wrong", "6x6_250", "");
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

    // One dark disc beside a bright one: a disc alone of its kind, refused, naming it.
    let alone = common::four_bar_with(dir.path(), "alone", &[], &|m| match m {
        "R1" => "kind = \"dark\"".into(),
        _ => String::new(),
    });
    let o = common::track_rendering(&rec, &alone, &none, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("the marker 'R1' is the only one of its kind (dark)"),
        "{err}"
    );
    assert!(!none.exists());
}
