//! The time base, from the container to the liaison forces, on recordings rendered with a
//! camera clock of their own (`[timing]` of the camera file: the video written by Debian's
//! ffmpeg with each frame's capture time to the microsecond, the truth at those times):
//!
//! - a variable-frame-rate MP4 (each frame up to 0.2 of a period off the 240 frames/s grid) with
//!   three dropped frames: every frame's time read back to 1 us, the drops counted, no sample
//!   where a frame was dropped, and the forces at B and C' within 3 % RMS of their peaks (2.2 %
//!   measured); the same video taken as evenly spaced is worse (measured in the test's output);
//! - the same stream without timestamps (raw H.264): refused, naming the rate to give, and
//!   nothing written; with the rate given, tracked;
//! - 240 frames/s captured and stored at 30 frames/s playback: recognised from the container's
//!   metadata (times to 1 us); without the metadata, `process` names the capture rate to give;
//! - 30 frames/s for a crank at 140 rpm: `process` warns, naming the rate and the rate needed.
//!
//! The camera is the rendering's own (`truth/camera.yaml`), so that what is measured is the time
//! base and not the calibration (which `video_chain` measures).

use crate::common;

use std::path::{Path, PathBuf};

use common::{flexbench, num, read_csv, root};

/// The default recording's camera file with `fps` and `duration` set, three calibration views,
/// no occlusion, and `timing` (a `[timing]` table's lines) appended.
fn camera(dir: &Path, name: &str, fps: f64, duration: f64, timing: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let (fps, duration) = (format!("{fps:?}"), format!("{duration:?}"));
    let set = [
        ("fps", fps.as_str()),
        ("duration", &duration),
        ("views", "3"),
    ];
    let table = match timing.is_empty() {
        true => String::new(),
        false => format!("\n[timing]\n{timing}"),
    };
    common::camera_file(&path, &set, true, &table);
    path
}

/// `flexbench render` of the wind-pump bench into `dir/name` with the camera of [`camera`]
/// (`name.toml`: `fps`, `duration` and the `[timing]` table's lines `timing`).
fn render(dir: &Path, name: &str, fps: f64, duration: f64, timing: &str) -> PathBuf {
    let cam = camera(dir, name, fps, duration, timing);
    let out = dir.join(name);
    common::render(&root().join("mechanisms/wind-pump.toml"), &cam, &out);
    out
}

/// Track `video` with the rendering `rec`'s true camera into `out` (tracks.csv), with `extra`
/// arguments; the command's output (stdout then stderr) and whether it succeeded.
fn track(rec: &Path, video: &Path, out: &Path, extra: &[&str]) -> (String, bool) {
    let cal = rec.join("truth/camera.yaml");
    let mut args = vec![
        "track",
        "--video",
        video.to_str().unwrap(),
        "--calibration",
        cal.to_str().unwrap(),
        "--mechanism",
        "mechanisms/wind-pump.toml",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = flexbench(&args);
    (common::said(&o), o.status.success())
}

/// `flexbench process` of the tracks at `tracks` into `out`, as `run` does it (the smoother, the
/// periodic refit, the horizontal refined): its output (stdout then stderr).
fn process(tracks: &Path, out: &Path) -> String {
    common::process_said(tracks, out, &["--periodic", "--refine-horizontal"])
}

/// Debian's ffmpeg remuxing `video` into `out` with `options` (stream copy, no re-encoding).
fn remux(video: &Path, options: &[&str], out: &Path) {
    let o = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-i"])
        .arg(video)
        .args(options)
        .arg(out)
        .output()
        .expect("ffmpeg runs");
    assert!(o.status.success(), "{}", common::said(&o));
}

/// Each distinct time of a tracks table, in frame order.
fn frame_times(tracks: &Path) -> Vec<f64> {
    let t = read_csv(tracks);
    let (f, tt) = (num(&t, "frame"), num(&t, "t"));
    let mut out: Vec<(f64, f64)> = f.into_iter().zip(tt).collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out.into_iter().map(|(_, t)| t).collect()
}

/// The forces' RMS error at B and C' (share of the peak) of `processed` against `rec`'s truth,
/// the truth's samples and the processed ones at the same times (checked to 1 us).
fn forces_error(rec: &Path, processed: &Path) -> [f64; 2] {
    let truth = read_csv(&rec.join("truth/forces.csv"));
    let got = read_csv(&processed.join("forces.csv"));
    let (tt, tg) = (num(&truth, "t"), num(&got, "t"));
    assert_eq!(tt.len(), tg.len());
    for (a, b) in tt.iter().zip(&tg) {
        assert!((a - b).abs() < 1e-6, "sample times {a} and {b}");
    }
    ["B", "C"].map(|j| common::force_error(&truth, &got, j).0)
}

#[test]
fn variable_frame_rate_and_dropped_frames_to_the_forces() {
    let dir = tempfile::tempdir().unwrap();
    let timing = "jitter = 0.2\ndropped = [100, 101, 250]\n";
    let rec = render(dir.path(), "vfr", 240.0, 2.0, timing);
    let video = rec.join("video.mp4");
    let tracks = dir.path().join("tracks.csv");
    let (said, good) = track(&rec, &video, &tracks, &[]);
    assert!(good, "{said}");
    assert!(said.contains("at a variable frame rate"), "{said}");
    assert!(said.contains("3 frames dropped"), "{said}");
    // Every frame's time, to the microsecond, and none where a frame was dropped.
    let truth = frame_times(&rec.join("truth/tracks.csv"));
    let got = frame_times(&tracks);
    assert_eq!(got.len(), 477);
    assert_eq!(got.len(), truth.len());
    let worst = truth
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-6, "frame times off by {worst} s");
    let gap = got.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    assert!((gap * 240.0 - 3.0).abs() < 0.45, "longest step {gap} s");
    let processed = dir.path().join("processed");
    process(&dir.path().join("tracks.parquet"), &processed);
    let [b, c] = forces_error(&rec, &processed);
    eprintln!(
        "variable frame rate: forces at B {:.2} %, C' {:.2} % of their peaks",
        100.0 * b,
        100.0 * c
    );
    assert!(b < 0.03 && c < 0.03, "B {b}, C' {c}");

    // The same video taken as evenly spaced at its mean rate: the forces are worse.
    let even = dir.path().join("even");
    std::fs::create_dir_all(&even).unwrap();
    let rate = format!("{}", (got.len() - 1) as f64 / got[got.len() - 1]);
    let (said, good) = track(
        &rec,
        &video,
        &even.join("tracks.csv"),
        &["--frame-rate", &rate],
    );
    assert!(good && said.contains("the frame rate given"), "{said}");
    process(&even.join("tracks.parquet"), &even.join("processed"));
    let truth_f = read_csv(&rec.join("truth/forces.csv"));
    let even_f = read_csv(&even.join("processed/forces.csv"));
    let e = ["B", "C"].map(|j| common::force_error(&truth_f, &even_f, j).0);
    eprintln!(
        "the same frames taken as evenly spaced: forces at B {:.1} %, C' {:.1} % (sample by sample)",
        100.0 * e[0],
        100.0 * e[1]
    );
    assert!(e[0] > b && e[1] > c);

    // Without timestamps (the raw H.264 stream): refused, the rate named, nothing written.
    let raw = dir.path().join("video.h264");
    remux(&video, &["-c", "copy", "-f", "h264"], &raw);
    let out = dir.path().join("raw/tracks.csv");
    let (said, good) = track(&rec, &raw, &out, &[]);
    assert!(!good, "{said}");
    assert!(
        said.contains("carries no timestamps") && said.contains("--frame-rate"),
        "{said}"
    );
    assert!(!out.exists() && !dir.path().join("raw/tracks.parquet").exists());
    let (said, good) = track(&rec, &raw, &out, &["--frame-rate", "240"]);
    assert!(good && out.exists(), "{said}");
}

#[test]
fn slow_motion_recognised_or_its_capture_rate_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let timing = "playback_fps = 30.0\ncapture_metadata = true\n";
    let rec = render(dir.path(), "slow", 240.0, 2.0, timing);
    let video = rec.join("video.mp4");
    let tracks = dir.path().join("tracks.csv");
    let (said, good) = track(&rec, &video, &tracks, &[]);
    assert!(good, "{said}");
    assert!(
        said.contains("captured at 240.000 frames/s (the file's metadata)"),
        "{said}"
    );
    let (truth, got) = (
        frame_times(&rec.join("truth/tracks.csv")),
        frame_times(&tracks),
    );
    assert_eq!(truth.len(), got.len());
    for (a, b) in truth.iter().zip(&got) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }

    // The metadata stripped: played back at 30 frames/s, the crank seems to turn 8 times slower;
    // process says so and names the capture rate to give.
    let plain = dir.path().join("plain.mp4");
    remux(&video, &["-map_metadata", "-1", "-c", "copy"], &plain);
    let plain_tracks = dir.path().join("plain/tracks.csv");
    let (said, good) = track(&rec, &plain, &plain_tracks, &[]);
    assert!(good && !said.contains("slow motion"), "{said}");
    let said = process(
        &dir.path().join("plain/tracks.parquet"),
        &dir.path().join("plain/processed"),
    );
    assert!(
        said.contains("0.125 times the motor's reference")
            && said.contains("captured at about 240 frames/s")
            && said.contains("--capture-rate"),
        "{said}"
    );
    // Given, the rate makes the times right.
    let (said, good) = track(&rec, &plain, &plain_tracks, &["--capture-rate", "240"]);
    assert!(good && said.contains("as given"), "{said}");
    let got = frame_times(&plain_tracks);
    assert!((got[got.len() - 1] - truth[truth.len() - 1]).abs() < 1e-6);
}

#[test]
fn a_rate_too_low_for_the_motion_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let rec = render(dir.path(), "thirty", 30.0, 4.0, "");
    let (said, good) = track(
        &rec,
        &rec.join("video.mp4"),
        &dir.path().join("tracks.csv"),
        &[],
    );
    assert!(good, "{said}");
    let processed = dir.path().join("processed");
    let said = process(&dir.path().join("tracks.parquet"), &processed);
    eprintln!("{said}");
    assert!(
        said.contains("the recording's 30.0 frames/s give 12.9 samples a crank turn")
            && said.contains("film at 49 frames/s or more"),
        "{said}"
    );
    let truth = read_csv(&rec.join("truth/forces.csv"));
    let got = read_csv(&processed.join("forces.csv"));
    let e = common::force_error(&truth, &got, "B").0;
    eprintln!(
        "30 frames/s: forces at B off by {:.1} % of their peak",
        100.0 * e
    );
}
