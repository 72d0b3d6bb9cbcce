//! `flexbench calibrate --points`: the bench frame from five clicked points of known bench
//! position, with the shipped recording's views for the intrinsics and its true camera for the
//! clicks (projected, rounded to 0.1 px). The frame agrees with the rendering camera's: the
//! origin within 0.5 mm and the horizontal within 0.5 mrad (the criterion), and its
//! stated uncertainty is written into the calibration file. Three points are refused with a
//! message that says how many are needed, and nothing is written; two are taken when the points
//! file says the camera faces the plane.

use std::path::Path;

use crate::common;
use common::{flexbench, ok};

/// Bench positions of the clicked points, m.
const BENCH: [(f64, f64); 5] = [
    (0.0, 0.0),
    (0.3, 0.0),
    (0.3, 0.2),
    (0.05, 0.22),
    (0.15, -0.1),
];

/// `points.toml` of the first `n` points, clicked at their true pixels to 0.1 px.
fn points_file(dir: &Path, n: usize) -> std::path::PathBuf {
    let truth = flexbench_vision::Calibration::read(
        &common::root().join("recordings/default/truth/camera.yaml"),
    )
    .unwrap();
    let plane = truth.plane.unwrap();
    let mut text = String::from("click_sigma_px = 0.1\n");
    for (x, y) in &BENCH[..n] {
        let (u, v) = plane.bench_to_pixel(&truth.intrinsics, *x, *y).unwrap();
        let r = |a: f64| (a * 10.0).round() / 10.0;
        text.push_str(&format!(
            "\n[[point]]\npixel = [{}, {}]\nbench = [{x}, {y}]\n",
            r(u),
            r(v)
        ));
    }
    let path = dir.join(format!("points-{n}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bench_frame_from_clicked_points() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("camera.yaml");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let args = |points: &Path, out: &Path| {
        vec![
            "calibrate".to_string(),
            "--views".into(),
            "recordings/default/views".into(),
            "--board".into(),
            "9x6".into(),
            "--square".into(),
            "0.03".into(),
            "--points".into(),
            s(points),
            "--out".into(),
            s(out),
        ]
    };
    let a = args(&points_file(dir.path(), 5), &out);
    let stdout = ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        stdout.contains("bench plane: from the clicked points"),
        "{stdout}"
    );
    let cal = flexbench_vision::Calibration::read(&out).unwrap();
    let truth = flexbench_vision::Calibration::read(
        &common::root().join("recordings/default/truth/camera.yaml"),
    )
    .unwrap();
    let (tp, p) = (truth.plane.unwrap(), cal.plane.unwrap());
    // Where the estimated frame (through the calibrated camera) puts the pixels of the true
    // origin and of the true horizontal's point at 0.3 m.
    let pixel = |x: f64| tp.bench_to_pixel(&truth.intrinsics, x, 0.0).unwrap();
    let (o, x) = (pixel(0.0), pixel(0.3));
    let (a, b) = (
        p.pixel_to_bench(&cal.intrinsics, o.0, o.1),
        p.pixel_to_bench(&cal.intrinsics, x.0, x.1),
    );
    let origin_mm = a.0.hypot(a.1) * 1e3;
    let angle_mrad = (b.1 - a.1).atan2(b.0 - a.0).abs() * 1e3;
    let u = cal.plane_uncertainty.unwrap();
    eprintln!(
        "bench frame from 5 clicked points: origin {origin_mm:.3} mm, horizontal {angle_mrad:.3} mrad from the truth; stated for {} px clicks: {:.3} mm, {:.3} mrad, scale {:.1e}",
        u.click_sigma_px, u.origin_mm, u.angle_mrad, u.scale
    );
    assert!(
        origin_mm < 0.5 && angle_mrad < 0.5,
        "{origin_mm} mm, {angle_mrad} mrad"
    );
    assert!(u.click_sigma_px == 0.1 && u.origin_mm > 0.0 && u.angle_mrad > 0.0);

    // Three points: refused, nothing written.
    let out3 = dir.path().join("three.yaml");
    let a3 = args(&points_file(dir.path(), 3), &out3);
    let o = flexbench(&a3.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("3 clicked point(s)") && err.contains("at least 4"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    assert!(!out3.exists(), "nothing written");

    // Two points with camera_faces_plane: the frame as a similarity (this recording's camera is
    // tilted 5 deg from facing the plane, so only the origin is checked: its accuracy facing
    // the plane is crates/vision/tests/bench_frame.rs's).
    let two = points_file(dir.path(), 2);
    let text = std::fs::read_to_string(&two).unwrap();
    std::fs::write(&two, format!("camera_faces_plane = true\n{text}")).unwrap();
    let out2 = dir.path().join("two.yaml");
    let a2 = args(&two, &out2);
    ok(&a2.iter().map(String::as_str).collect::<Vec<_>>());
    let cal2 = flexbench_vision::Calibration::read(&out2).unwrap();
    let o = pixel(0.0);
    let a = cal2
        .plane
        .unwrap()
        .pixel_to_bench(&cal2.intrinsics, o.0, o.1);
    assert!(a.0.hypot(a.1) < 5e-4, "origin {a:?}");
    assert!(cal2.plane_uncertainty.is_some());
}

/// A recording folder with `points.toml` and no plane view nor clicks: the run's calibrate stage
/// takes the bench frame from the points (named in the manifest), the report states the
/// frame's uncertainty, and the forces at B and C' come out within 3 % RMS of their peaks.
#[test]
fn a_run_takes_the_bench_frame_from_points_toml() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    let src = common::root().join("recordings/default");
    std::fs::create_dir_all(rec.join("views")).unwrap();
    std::fs::copy(src.join("video.mp4"), rec.join("video.mp4")).unwrap();
    for e in std::fs::read_dir(src.join("views")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, rec.join("views").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::copy(points_file(dir.path(), 5), rec.join("points.toml")).unwrap();
    let pipeline = dir.path().join("pipeline.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[run]\nmechanism = \"{}\"\nrecording = \"{}\"\n\n[calibrate]\nboard = \"9x6\"\nsquare = 0.03\n\n[overlay]\nenabled = false\n",
            common::root().join("mechanisms/wind-pump.toml").display(),
            rec.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    ok(&[
        "run",
        pipeline.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert!(
        manifest["inputs"]["points"]["sha256"].is_string(),
        "{}",
        manifest["inputs"]
    );
    assert!(manifest["inputs"]["plane_view"].is_null());
    let html = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    assert!(html.contains("The bench frame from clicked points of known bench position"));
    let truth = common::read_csv(&src.join("truth/forces.csv"));
    let got = common::read_csv(&out.join("process/forces.csv"));
    for j in ["B", "C"] {
        let (e, _) = common::force_error(&truth, &got, j);
        eprintln!(
            "bench frame from points.toml: force at {j} within {:.2} % RMS of its peak",
            e * 100.0
        );
        assert!(e < 0.03, "{j}: {e}");
    }
}

#[test]
fn a_nominal_camera_without_a_board() {
    // No board: a nominal camera and two points clicked 300 px apart for 0.3 m, the camera
    // facing the plane, make the frame a similarity of the image (a pixel maps to its bench
    // position to 1e-9 m), the file states its assumptions, and no corners table is written;
    // bad input is refused with the fix, and nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let two = dir.path().join("two.toml");
    std::fs::write(
        &two,
        "camera_faces_plane = true\n[[point]]\npixel = [400, 300]\nbench = [0, 0]\n[[point]]\npixel = [700, 300]\nbench = [0.3, 0]\n",
    )
    .unwrap();
    let out = dir.path().join("nominal.yaml");
    let said = ok(&[
        "calibrate",
        "--nominal-camera",
        "1280x720",
        "--points",
        &s(&two),
        "--out",
        &s(&out),
    ]);
    assert!(said.contains("nominal camera, no board"), "{said}");
    let cal = flexbench_vision::Calibration::read(&out).unwrap();
    let plane = cal.plane.unwrap();
    let (x, y) = plane.pixel_to_bench(&cal.intrinsics, 550.0, 200.0);
    assert!(
        (x - 0.15).abs() < 1e-9 && (y - 0.1).abs() < 1e-9,
        "({x}, {y})"
    );
    assert!(cal.distortion_model.unwrap().contains("nominal camera"));
    assert!(!dir.path().join("nominal.corners.csv").exists());
    let refused = |args: &[&str], says: &str| {
        let o = common::flexbench(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{args:?}: {err}");
    };
    let bad_out = dir.path().join("bad.yaml");
    let (p, b) = (s(&two), s(&bad_out));
    refused(
        &[
            "calibrate",
            "--nominal-camera",
            "1280",
            "--points",
            &p,
            "--out",
            &b,
        ],
        "WIDTHxHEIGHT",
    );
    refused(
        &[
            "calibrate",
            "--nominal-camera",
            "1280x720",
            "--focal-px=-3",
            "--points",
            &p,
            "--out",
            &b,
        ],
        "focal length of -3 px",
    );
    refused(
        &["calibrate", "--nominal-camera", "1280x720", "--out", &b],
        "--points",
    );
    refused(
        &[
            "calibrate",
            "--nominal-camera",
            "1280x720",
            "--distortion",
            "0.1,x",
            "--points",
            &p,
            "--out",
            &b,
        ],
        "'x' is not a number",
    );
    // Two points without camera_faces_plane: a tilted plane needs four.
    let tilted = dir.path().join("tilted.toml");
    std::fs::write(
        &tilted,
        std::fs::read_to_string(&two)
            .unwrap()
            .replace("camera_faces_plane = true\n", ""),
    )
    .unwrap();
    refused(
        &[
            "calibrate",
            "--nominal-camera",
            "1280x720",
            "--points",
            &s(&tilted),
            "--out",
            &b,
        ],
        "at least 4",
    );
    assert!(!bad_out.exists());
}

/// The nominal camera's focal length from the video's metadata: a phone writes its 35 mm
/// equivalent (Apple's `com.apple.quicktime.camera.focal_length.35mm_equivalent`); 26 mm on a
/// 320 x 240 frame is 26 x 400 / 43.27 = 240.37 px. A focal length given wins over the tag;
/// a video without one leaves the larger side, assumed.
#[test]
fn the_focal_length_from_the_videos_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let video = |name: &str, tag: Option<&str>| {
        let path = dir.path().join(name);
        let mut cmd = std::process::Command::new("ffmpeg");
        cmd.args([
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "color=c=gray:s=320x240:d=0.2",
        ])
        .args(["-c:v", "libx264", "-movflags", "use_metadata_tags"]);
        if let Some(t) = tag {
            cmd.args(["-metadata", t]);
        }
        assert!(cmd.arg(&path).status().unwrap().success());
        path
    };
    let tagged = video(
        "tagged.mp4",
        Some("com.apple.quicktime.camera.focal_length.35mm_equivalent=26"),
    );
    let plain = video("plain.mp4", None);
    let points = dir.path().join("two.toml");
    std::fs::write(
        &points,
        "camera_faces_plane = true\n[[point]]\npixel = [60, 120]\nbench = [0, 0]\n[[point]]\npixel = [260, 120]\nbench = [0.5, 0]\n",
    )
    .unwrap();
    let fx = |video: &Path, extra: &[&str]| {
        let out = dir.path().join("cal.yaml");
        let (p, v, o) = (s(&points), s(video), s(&out));
        let mut args = vec!["calibrate", "--nominal-camera", "320x240", "--points", &p];
        args.extend(["--video", &v, "--out", &o]);
        args.extend(extra);
        let said = ok(&args);
        (
            flexbench_vision::Calibration::read(&out)
                .unwrap()
                .intrinsics
                .fx,
            said,
        )
    };
    let (f, said) = fx(&tagged, &[]);
    assert!((f - 240.370).abs() < 1e-3, "{f}");
    assert!(
        said.contains("from the video's metadata: 26 mm in 35 mm equivalent"),
        "{said}"
    );
    assert_eq!(fx(&tagged, &["--focal-px", "300"]).0, 300.0);
    assert_eq!(fx(&plain, &[]).0, 320.0);

    // A run keys its calibrate stage on the video when the focal length is the video's: the
    // same points with another video are calibrated again, not reused. (The grey videos hold
    // no marker: the track stage after it fails, the calibration stays.)
    let out = dir.path().join("run");
    let by_run = |video: &Path| {
        let pipeline = dir.path().join("pipeline.toml");
        let mech = common::root().join("mechanisms/wind-pump.toml");
        let text = format!(
            "[run]\nmechanism = {:?}\n\n[inputs]\nvideo = {:?}\npoints = {:?}\n\n[calibrate]\nnominal_camera = \"320x240\"\n",
            s(&mech),
            s(video),
            s(&points)
        );
        std::fs::write(&pipeline, text).unwrap();
        let o = flexbench(&["run", &s(&pipeline), "--out", &s(&out)]);
        assert!(!o.status.success(), "{}", common::said(&o));
        let cal = out.join("calibrate/calibration.yaml");
        flexbench_vision::Calibration::read(&cal)
            .unwrap()
            .intrinsics
            .fx
    };
    assert!((by_run(&tagged) - 240.370).abs() < 1e-3);
    assert_eq!(by_run(&plain), 320.0);
}
