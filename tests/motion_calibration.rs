//! Calibration without a board, from the recording itself (issue 39, item 2b): the shipped
//! recording (`recordings/default/video.mp4`, 640 x 480, the lens k1 = -0.12, k2 = 0.06, fy / fx
//! = 1.003, the camera tilted 4 and 3 deg) tracked with a rough start (a nominal camera and two
//! clicked points, each about half a pixel off, the camera taken as facing the plane), then
//! `calibrate --from-motion` fits the plane's homography and the lens's k1, k2 to the tracked
//! pixels through the mechanism file, the video is tracked again with it, and `process` gives
//! the forces. Against the true camera (`recordings/default/truth/camera.yaml`), over the region
//! the markers swept and over the whole image, and the forces against the truth's. Measured
//! (docs/calibration.md):
//!
//! | start | scale in the swept region | positions there, RMS (max) | whole image, RMS (max) | forces B, C' |
//! |---|---|---|---|---|
//! | 640 px, A and a 0.5 m stick | -0.0001 % | 0.088 (0.144) mm | 0.41 (1.67) mm | 2.34, 2.38 % |
//! | 900 px, A and (0.4, 0.15) m | -0.0001 % | 0.076 (0.123) mm | 0.41 (1.67) mm | 2.27, 2.31 % |
//! | the start itself (640 px) | +0.96 % | 3.52 mm | | 20.15, 20.48 % |
//! | the board (the demo's calibration) | -0.02 % | 0.09 mm | 0.12 mm | 2.45, 2.50 % |

use crate::common;

use std::path::Path;

use common::{flexbench, ok, root, said};
use flexbench_pipeline::motion_calibration::MotionRecord;
use flexbench_pipeline::StageRecord;
use flexbench_vision::motion_camera::{displacement, grid, Displacement};
use flexbench_vision::Calibration;
use nalgebra::Vector2;

/// The bench positions of `pixels` through the calibration `cal` (with its bench plane).
fn benched(cal: &Calibration, pixels: &[(f64, f64)]) -> Vec<Vector2<f64>> {
    let plane = cal.plane.expect("a bench plane");
    flexbench_vision::motion_camera::benched(&cal.intrinsics, &plane, pixels)
}

/// How the calibration at `path` differs from the true camera's over `pixels`.
fn against_truth(path: &Path, pixels: &[(f64, f64)]) -> Displacement {
    let truth = Calibration::read(&root().join("recordings/default/truth/camera.yaml")).unwrap();
    let cal = Calibration::read(path).unwrap();
    displacement(&benched(&cal, pixels), &benched(&truth, pixels)).unwrap()
}

/// The rough start: a nominal camera of `focal` px and two clicked points (`points`, bench m,
/// with the pixels a user clicked), written to `dir/<name>.yaml`.
fn start_file(dir: &Path, name: &str, focal: &str, points: [([f64; 2], [f64; 2]); 2]) -> String {
    let mut text = String::from("camera_faces_plane = true\n");
    for (pixel, bench) in points {
        text.push_str(&format!(
            "[[point]]\npixel = [{}, {}]\nbench = [{}, {}]\n",
            pixel[0], pixel[1], bench[0], bench[1]
        ));
    }
    let points = dir.join(format!("{name}.toml"));
    std::fs::write(&points, text).unwrap();
    let out = dir.join(format!("{name}.yaml"));
    let (p, o) = (points.to_str().unwrap(), out.to_str().unwrap());
    ok(&[
        "calibrate",
        "--nominal-camera",
        "640x480",
        "--focal-px",
        focal,
        "--points",
        p,
        "--out",
        o,
    ]);
    o.to_string()
}

/// `track` the shipped video with the calibration `cal` into `out`.
fn track(cal: &str, out: &Path) {
    let video = root().join("recordings/default/video.mp4");
    let mech = root().join("mechanisms/wind-pump.toml");
    ok(&[
        "track",
        "--video",
        video.to_str().unwrap(),
        "--calibration",
        cal,
        "--mechanism",
        mech.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
}

/// Start, track, calibrate from the motion, track again, process: the fitted calibration's
/// path and record, and the forces' errors at B and C' (RMS share of the peak).
fn from_motion(dir: &Path, name: &str, cal: &str) -> (std::path::PathBuf, MotionRecord, [f64; 2]) {
    let mech = root().join("mechanisms/wind-pump.toml");
    let rough = dir.join(format!("{name}-rough.csv"));
    track(cal, &rough);
    let fitted = dir.join(format!("{name}-motion.yaml"));
    let said = ok(&[
        "calibrate",
        "--from-motion",
        rough.to_str().unwrap(),
        "--start",
        cal,
        "--mechanism",
        mech.to_str().unwrap(),
        "--out",
        fitted.to_str().unwrap(),
    ]);
    eprintln!("{said}");
    let record = MotionRecord::read(&fitted.with_extension("motion.json")).unwrap();
    let tracks = dir.join(format!("{name}.csv"));
    track(fitted.to_str().unwrap(), &tracks);
    let out = dir.join(format!("{name}-process"));
    common::process(&tracks, &out, &[]);
    (fitted, record, force_errors(&out.join("forces.csv")))
}

/// What a calibration from the motion gave, against the truth, asserted.
fn check(name: &str, fitted: &Path, start: &Path, rec: &MotionRecord, forces: [f64; 2]) {
    let image = grid((0.0, 0.0, 639.0, 479.0), 16);
    let [u0, v0, u1, v1] = rec.region_px;
    let swept = grid((u0, v0, u1, v1), 12);
    let (there, whole) = (against_truth(fitted, &swept), against_truth(fitted, &image));
    let before = against_truth(start, &swept);
    eprintln!(
        "{name}: swept region ({u0:.0}, {v0:.0}) - ({u1:.0}, {v1:.0}) px: scale {:+.4} %, {:.3} mm RMS ({:.3} max), stated +- {:.3} mm; the whole image {:.3} mm RMS ({:.3} max); the start {:+.3} %, {:.3} mm; {:.3} px RMS (start {:.3}); k1 {:.4} +- {:.4}, k2 {:.4} +- {:.4}; horizontal +- {:.3} mrad (start +- {:.3}); forces B {:.2} %, C' {:.2} %",
        100.0 * there.scale,
        1e3 * there.rms_m,
        1e3 * there.max_m,
        rec.position_sd_mm,
        1e3 * whole.rms_m,
        1e3 * whole.max_m,
        100.0 * before.scale,
        1e3 * before.rms_m,
        rec.rms_px,
        rec.start_rms_px,
        rec.k1[0],
        rec.k1[1],
        rec.k2[0],
        rec.k2[1],
        rec.horizontal_sd_mrad[0],
        rec.horizontal_sd_mrad[1],
        100.0 * forces[0],
        100.0 * forces[1]
    );
    // The figures: the scale within 0.2 %, the forces within 3 %.
    assert!(there.scale.abs() < 0.002, "{name}: scale {}", there.scale);
    assert!(
        forces.iter().all(|f| *f < 0.03),
        "{name}: forces {forces:?}"
    );
    // Tighter, as measured: where the markers went the plane is the board's equal (0.09 mm,
    // -0.02 %), and the start's errors (3 mm, 0.7-1 %) are gone.
    assert!(
        there.scale.abs() < 2e-4 && there.rms_m < 0.15e-3,
        "{name}: {there:?}"
    );
    assert!(
        before.rms_m > 2e-3 && before.scale.abs() > 5e-3,
        "{name}: {before:?}"
    );
    // The distortion recovered over the whole image, where the markers never went.
    assert!(
        whole.rms_m < 0.6e-3 && whole.max_m < 2.5e-3,
        "{name}: {whole:?}"
    );
    // The stated uncertainty is of the size of the error (within a factor of three).
    let stated = 1e-3 * rec.position_sd_mm;
    assert!(there.rms_m < 3.0 * stated && stated < 3.0 * there.rms_m.max(0.05e-3));
    // The fit's pixels: the tracking's noise, none left out, no warning.
    assert!(rec.rms_px < 0.15 && rec.start_rms_px > 1.0, "{rec:?}");
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
}

/// The forces' errors at B and C' of the forces table at `path` (RMS share of the peak).
fn force_errors(path: &Path) -> [f64; 2] {
    let truth = common::read_csv(&root().join("recordings/default/truth/forces.csv"));
    let got = common::read_csv(path);
    ["B", "C"].map(|j| common::force_error(&truth, &got, j).0)
}

#[test]
fn the_recording_calibrates_its_own_camera_through_the_mechanism() {
    let dir = tempfile::tempdir().unwrap();
    // A (0, 0) and a stick's end (0.5, 0) clicked about half a pixel off (the truth: (184.01,
    // 197.00) and (529.90, 207.21)), the focal length assumed (640 px, true 700): through `run`
    // with `[calibrate] from_motion = true`.
    let rec_dir = dir.path().join("recording");
    std::fs::create_dir(&rec_dir).unwrap();
    std::fs::copy(
        root().join("recordings/default/video.mp4"),
        rec_dir.join("video.mp4"),
    )
    .unwrap();
    std::fs::write(
        rec_dir.join("points.toml"),
        "camera_faces_plane = true\n[[point]]\npixel = [184.5, 197.3]\nbench = [0.0, 0.0]\n[[point]]\npixel = [529.2, 206.8]\nbench = [0.5, 0.0]\n",
    )
    .unwrap();
    let pipeline = dir.path().join("run.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[run]\nmechanism = \"{}\"\nrecording = \"recording\"\nout = \"out\"\n\n[calibrate]\nnominal_camera = \"640x480\"\nfrom_motion = true\n\n[overlay]\nenabled = false\n",
            root().join("mechanisms/wind-pump.toml").display()
        ),
    )
    .unwrap();
    let said = ok(&["run", pipeline.to_str().unwrap()]);
    assert!(
        !said.contains("track-start:"),
        "the start's warnings are not the user's: {said}"
    );
    let out = dir.path().join("out");
    let fitted = out.join("calibrate/calibration.yaml");
    let rec = MotionRecord::read(&fitted.with_extension("motion.json")).unwrap();
    let start = out.join("calibrate-start/calibration.yaml");
    let forces = force_errors(&out.join("process/forces.csv"));
    check("stick (run)", &fitted, &start, &rec, forces);
    let report = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    assert!(
        report.contains("fitted to the mechanism&#x27;s motion")
            || report.contains("fitted to the mechanism's motion")
    );
    // One verb, one behaviour: the command on the run's start gives the run's calibration.
    let again = dir.path().join("again.yaml");
    ok(&[
        "calibrate",
        "--from-motion",
        out.join("track-start/tracks.parquet").to_str().unwrap(),
        "--start",
        start.to_str().unwrap(),
        "--mechanism",
        root().join("mechanisms/wind-pump.toml").to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&fitted).unwrap(),
        "the command and the run calibrate alike"
    );
    // Another pair, two pixels off (the truth: (184.01, 197.00), (467.01, 100.56)), and a
    // focal length 29 % long: through the commands.
    let pair = start_file(
        dir.path(),
        "pair",
        "900",
        [([186.0, 199.0], [0.0, 0.0]), ([465.0, 102.0], [0.4, 0.15])],
    );
    let (fitted, rec, forces) = from_motion(dir.path(), "pair", &pair);
    check("pair (commands)", &fitted, Path::new(&pair), &rec, forces);
}

#[test]
fn calibrating_from_motion_refuses_what_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let mech = root().join("mechanisms/wind-pump.toml");
    // Tracks without pixels (a simulation's): nothing to calibrate from.
    let sim = common::simulated_default_bench(dir.path());
    let cal = root().join("recordings/default/truth/camera.yaml");
    let out = dir.path().join("motion.yaml");
    let args_with = |tracks: &Path, cal: &Path, mech: &Path| {
        flexbench(&[
            "calibrate",
            "--from-motion",
            tracks.to_str().unwrap(),
            "--start",
            cal.to_str().unwrap(),
            "--mechanism",
            mech.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let args = |tracks: &Path, cal: &Path| args_with(tracks, cal, &mech);
    let o = args(&sim.join("tracks.csv"), &cal);
    assert!(!o.status.success());
    assert!(said(&o).contains("no pixel (u, v)"), "{}", said(&o));
    // A start without a bench plane (intrinsics only).
    let intrinsics = dir.path().join("intrinsics.yaml");
    let mut c = Calibration::read(&cal).unwrap();
    c.plane = None;
    c.write(&intrinsics).unwrap();
    let tracks = root().join("recordings/default/truth/tracks.csv");
    let o = args(&tracks, &intrinsics);
    assert!(!o.status.success());
    assert!(said(&o).contains("has no bench plane"), "{}", said(&o));
    // Markers in front of the plane: the plane fitted is theirs, a depth would count twice.
    let deep = dir.path().join("deep.toml");
    let text = std::fs::read_to_string(&mech).unwrap();
    std::fs::write(&deep, format!("{text}\nmarker_depth = 0.012\n")).unwrap();
    let o = args_with(&tracks, &cal, &deep);
    assert!(!o.status.success());
    assert!(said(&o).contains("would count twice"), "{}", said(&o));
    // Without --start: the command line says what is missing.
    let o = flexbench(&[
        "calibrate",
        "--from-motion",
        tracks.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(said(&o).contains("--start"), "{}", said(&o));
    assert!(!out.exists(), "nothing written");
}
