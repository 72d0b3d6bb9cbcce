//! The user's corrections of the tracking (`corrections.toml`), through the real binary on the
//! shipped nuisance recording: a drop, moves to clicked pixels, a swap and a seek are applied
//! frame by frame (the samples where the file says, the rest as without it), the corrected
//! samples are not flagged; and a corrections file naming a marker or a frame that does not
//! exist, with overlapping entries, or with a move outside the image is refused by name, with
//! nothing written.

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use common::{flexbench, num, read_csv, root};

/// Track the nuisance recording with the wind pump's layout and `corrections` (if any) into
/// `out`; the stderr on failure.
fn track(out: &Path, corrections: Option<&Path>) -> Result<(), String> {
    let rec = root().join("recordings/nuisances");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (video, cal) = (s(&rec.join("video.mp4")), s(&rec.join("truth/camera.yaml")));
    let mech = s(&root().join("mechanisms/wind-pump.toml"));
    let mut args = vec!["track", "--video", &video, "--calibration", &cal];
    let out = s(out);
    args.extend(["--mechanism", &mech, "--out", &out]);
    let c;
    if let Some(p) = corrections {
        c = s(p);
        args.extend(["--corrections", &c]);
    }
    let o = flexbench(&args);
    match o.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
    }
}

/// Each (frame, marker) of a tracks table: its pixel.
fn pixels(path: &Path) -> HashMap<(String, String), (f64, f64)> {
    let t = read_csv(path);
    let (u, v) = (num(&t, "u"), num(&t, "v"));
    (0..u.len())
        .map(|i| {
            (
                (t["frame"][i].clone(), t["marker"][i].clone()),
                (u[i], v[i]),
            )
        })
        .collect()
}

#[test]
fn corrections_are_applied_where_the_file_says() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("a/tracks.csv");
    track(&plain, None).unwrap();
    let a = pixels(&plain);
    // The window of the seek: 30 px about where the tracker saw M3 in frame 150.
    let (mu, mv) = a[&("150".to_string(), "M3".to_string())];
    let file = dir.path().join("corrections.toml");
    std::fs::write(
        &file,
        format!(
            "[[drop]]\nmarker = \"M2\"\nframes = [100, 106]\n\n\
             [[move]]\nmarker = \"M4\"\nframes = [305, 305]\nto = [449.1, 192.0]\n\n\
             [[swap]]\nmarkers = [\"M1\", \"M5\"]\nframes = [400, 401]\n\n\
             [[seek]]\nmarker = \"M3\"\nframes = [150, 150]\nwindow = [{:.1}, {:.1}, {:.1}, {:.1}]\n",
            mu - 15.0,
            mv - 15.0,
            mu + 15.0,
            mv + 15.0
        ),
    )
    .unwrap();
    let fixed = dir.path().join("b/tracks.csv");
    track(&fixed, Some(&file)).unwrap();
    let b = pixels(&fixed);
    let key = |f: i64, m: &str| (f.to_string(), m.to_string());
    for f in 100..=106 {
        assert!(!b.contains_key(&key(f, "M2")), "M2 dropped in frame {f}");
    }
    assert_eq!(b[&key(305, "M4")], (449.1, 192.0));
    for f in [400, 401] {
        assert_eq!(b[&key(f, "M1")], a[&key(f, "M5")], "swapped in frame {f}");
        assert_eq!(b[&key(f, "M5")], a[&key(f, "M1")], "swapped in frame {f}");
    }
    // Sought again: the one disc in the window is M3 itself (measured in the window alone,
    // against its own threshold: within a few hundredths of a pixel of the tracker's centre).
    let (su, sv) = b[&key(150, "M3")];
    let (tu, tv) = a[&key(150, "M3")];
    let d = (su - tu).hypot(sv - tv);
    eprintln!("M3 sought again in frame 150: {d:.4} px from the tracker's centre");
    assert!(d < 0.1, "{d} px");
    // Elsewhere, before the corrections and long after them, the same samples.
    for f in (0..99).chain(420..480) {
        for m in ["M1", "M2", "M3", "M4", "M5"] {
            assert_eq!(a.get(&key(f, m)), b.get(&key(f, m)), "frame {f} {m}");
        }
    }
    let flags = read_csv(&dir.path().join("b/flags.csv"));
    let corrected_flagged = flags["frame"]
        .iter()
        .zip(&flags["marker"])
        .any(|(f, m)| f == "305" && m == "M4");
    assert!(!corrected_flagged, "a corrected sample is not flagged");
    let summary = std::fs::read_to_string(dir.path().join("b/tracks.summary.json")).unwrap();
    assert!(summary.contains("[[move]] 1: M4 in frames 305 to 305 moved to (449.1, 192) px"));
}

#[test]
fn bad_corrections_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, needles) in [
        (
            "unknown-marker",
            "[[drop]]\nmarker = \"M9\"\nframes = [1, 2]\n",
            vec!["[[drop]] 1", "'M9'", "M1, M2, M3, M4, M5"],
        ),
        (
            "beyond-the-video",
            "[[drop]]\nmarker = \"M2\"\nframes = [470, 600]\n",
            vec!["[[drop]] 1", "frame 600", "480 frames"],
        ),
        (
            "overlapping",
            "[[drop]]\nmarker = \"M2\"\nframes = [10, 20]\n[[swap]]\nmarkers = [\"M1\", \"M2\"]\nframes = [15, 30]\n",
            vec!["[[drop]] 1 and [[swap]] 1", "frames 15 to 20"],
        ),
        (
            "outside-the-image",
            "[[move]]\nmarker = \"M2\"\nframes = [10, 10]\nto = [700.0, 20.0]\n",
            vec!["[[move]] 1", "outside the 640 x 480 px image"],
        ),
        (
            "unknown-kind",
            "[[nudge]]\nmarker = \"M2\"\nframes = [10, 10]\n",
            vec!["corrections file", "nudge"],
        ),
    ] {
        let file = dir.path().join(format!("{name}.toml"));
        std::fs::write(&file, text).unwrap();
        let out = dir.path().join(name).join("tracks.csv");
        let err = track(&out, Some(&file)).expect_err(name);
        assert!(!err.contains("panicked"), "{name}: {err}");
        for n in needles {
            assert!(err.contains(n), "{name}: the message lacks '{n}':\n{err}");
        }
        assert!(!out.parent().unwrap().exists() || std::fs::read_dir(out.parent().unwrap()).unwrap().next().is_none(), "{name}: nothing written");
    }
}
