//! Features that are no marker, clicked once and followed by their template (normalized
//! cross-correlation, then Lucas-Kanade below the grid): the four-bar of
//! `mechanisms/four-bar.toml` with its five markers declared `kind = "template"`, so that the
//! tracker knows nothing of their look, rendered by `flexbench render` as the shipped four-bar
//! recording (1 m, 2 ms of motion blur, bright bolts, a glint crossing K2) at a phone's bit rate
//! (H.264, 18 Mbit/s), tracked with the rendering's own camera from one click per feature in
//! frame 0 (the true pixel rounded to 0.1 px, as the clicks page gives it). Measured
//! (docs/tracking.md): the features within 0.1 px RMS of the truth, every sample more than 1 px
//! off flagged, the forces at every joint within 3 % RMS of their peak. Bad input: a click
//! whose template leaves the frame, a click in a frame the video does not have, and a template
//! marker without a click are refused by name, nothing written.

use crate::common;

use std::path::{Path, PathBuf};

use common::{num, read_csv, root};

/// The four-bar with its markers followed by their templates.
fn mechanism(dir: &Path) -> PathBuf {
    let mut text = std::fs::read_to_string(root().join("mechanisms/four-bar.toml")).unwrap();
    for name in ["K1", "K2", "K3", "R1", "R2"] {
        text = text.replacen(
            &format!("name = \"{name}\"\n"),
            &format!("name = \"{name}\"\nkind = \"template\"\n"),
            1,
        );
    }
    let path = dir.join("four-bar-templates.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A templates file of one click per marker at `pixel(marker)` in `frame`.
fn clicks(path: &Path, frame: usize, pixel: &dyn Fn(&str) -> (f64, f64)) {
    let mut text = String::new();
    for m in ["K1", "K2", "K3", "R1", "R2"] {
        let (u, v) = pixel(m);
        text += &format!(
            "[[template]]\nmarker = \"{m}\"\nframe = {frame}\npixel = [{u:.1}, {v:.1}]\nhalf_size = 9\n\n"
        );
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn clicked_features_followed_from_video_to_forces() {
    let dir = tempfile::tempdir().unwrap();
    let cam = dir.path().join("camera.toml");
    common::four_bar_camera(&cam, &[]);
    let mech = mechanism(dir.path());
    let rec = dir.path().join("rec");
    common::render(&mech, &cam, &rec);

    let truth = read_csv(&rec.join("truth/tracks.csv"));
    let (tu, tv) = (num(&truth, "u"), num(&truth, "v"));
    let first = |m: &str| {
        let i = (0..truth["frame"].len())
            .find(|&i| truth["frame"][i] == "0" && truth["marker"][i] == m)
            .unwrap();
        (tu[i], tv[i])
    };
    let templates = dir.path().join("templates.toml");
    clicks(&templates, 0, &first);

    let s = |p: &Path| p.to_str().unwrap().to_string();
    let track = |templates: &Path, out: &Path| {
        common::track_rendering(&rec, &mech, out, &["--templates", &s(templates)])
    };
    let tracks = dir.path().join("tracks.csv");
    let o = track(&templates, &tracks);
    assert!(o.status.success(), "{}", common::said(&o));

    // Against the truth, every sample more than 1 px off flagged; the forces at every joint.
    let out = dir.path().join("process");
    common::four_bar_checked(&rec, &tracks, &mech, &out, 0.1, "templates");

    // Bad clicks: refused by name, nothing written.
    let outside = dir.path().join("outside.toml");
    clicks(&outside, 0, &|m| {
        if m == "K2" {
            (3.0, 100.0)
        } else {
            first(m)
        }
    });
    let late = dir.path().join("late.toml");
    clicks(&late, 5000, &first);
    let missing = dir.path().join("missing.toml");
    let text = std::fs::read_to_string(&templates).unwrap();
    std::fs::write(
        &missing,
        text.split("[[template]]\nmarker = \"R2\"").next().unwrap(),
    )
    .unwrap();
    for (file, says) in [
        (&outside, "is not inside the 640 x 480 frame"),
        (&late, "clicked in frame 5000, but the video has 480 frames"),
        (
            &missing,
            "the marker 'R2' is a feature followed by its template, but no click",
        ),
    ] {
        let out = dir.path().join("refused.csv");
        let o = track(file, &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{says}: {err}");
        assert!(!out.exists());
    }
}
