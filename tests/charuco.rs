//! ChArUco through the real binary: `flexbench render` draws a recording's calibration views and
//! its plane view as a ChArUco board (some views leaving the image, the plane view's board partly
//! hidden by a bar, as the lever lying across it would), `flexbench calibrate --charuco` recovers
//! the rendering camera within 3 of its stated standard deviations and the bench plane within
//! 0.5 mm; a dictionary that does
//! not match the board is refused, naming the board's, and nothing is written.

use crate::common;

use common::{flexbench, ok, root};

#[test]
fn charuco_recording_calibrated_and_wrong_dictionary_named() {
    let dir = tempfile::tempdir().unwrap();
    let cam_path = dir.path().join("camera.toml");
    common::camera_file(
        &cam_path,
        &[("duration", "0.1"), ("views", "14\npartial_views = 4")],
        false,
        "\n[charuco]\nsquares = [9, 7]\nsquare = 0.04\nmarker = 0.026\ndictionary = \"4x4_50\"\nhidden = [0.12, 0.17]\n",
    );
    let rec = dir.path().join("rec");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    common::render(&root().join("mechanisms/wind-pump.toml"), &cam_path, &rec);
    let out = dir.path().join("camera.yaml");
    let args = |dictionary: &str| {
        vec![
            "calibrate".to_string(),
            "--views".into(),
            s(&rec.join("views")),
            "--charuco".into(),
            "9x7".into(),
            "--square".into(),
            "0.04".into(),
            "--marker".into(),
            "0.026".into(),
            "--dictionary".into(),
            dictionary.into(),
            "--plane-view".into(),
            s(&rec.join("plane-view.png")),
            "--clicks".into(),
            s(&rec.join("clicks.toml")),
            "--out".into(),
            s(&out),
        ]
    };
    let wrong = args("6x6_250");
    let o = flexbench(&wrong.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("dictionary 4x4_50") && err.contains("--dictionary 4x4_50"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");

    let good = args("4x4_50");
    let said = ok(&good.iter().map(String::as_str).collect::<Vec<_>>());
    eprintln!("{said}");
    let est = flexbench_vision::Calibration::read(&out).unwrap();
    let truth = flexbench_vision::Calibration::read(&rec.join("truth/camera.yaml")).unwrap();
    // The render's views (0.6 to 1.2 m away, as the shipped recording's) pin the principal
    // point to about 1.5 px; each intrinsic within 3 of its stated standard deviations (the
    // 0.2 % from views without a whole board is shown in crates/vision/tests/charuco_calibration).
    let (e, t) = (est.intrinsics, truth.intrinsics);
    for (k, (name, a, b)) in [
        ("fx", e.fx, t.fx),
        ("fy", e.fy, t.fy),
        ("cx", e.cx, t.cx),
        ("cy", e.cy, t.cy),
    ]
    .into_iter()
    .enumerate()
    {
        let sd = est.std_intrinsics[k];
        eprintln!(
            "{name}: {a:.3} vs {b:.3} ({:.3} %, {:.1} sigma)",
            100.0 * (a - b) / b,
            (a - b) / sd
        );
        assert!(
            (a - b).abs() < 3.0 * sd && (a - b).abs() / b < 6e-3,
            "{name}: {a} vs {b}"
        );
    }
    // The bench plane from the partly hidden board: pixels over the lever's reach to the bench
    // within 0.5 mm of the truth's.
    let (pe, pt) = (est.plane.unwrap(), truth.plane.unwrap());
    let mut worst: f64 = 0.0;
    for u in (100..560).step_by(60) {
        for v in (100..400).step_by(60) {
            let (a, b) = (
                pe.pixel_to_bench(&e, u as f64, v as f64),
                pt.pixel_to_bench(&t, u as f64, v as f64),
            );
            worst = worst.max((a.0 - b.0).hypot(a.1 - b.1));
        }
    }
    eprintln!(
        "bench plane from the hidden ChArUco board: {:.3} mm worst",
        worst * 1e3
    );
    assert!(worst < 5e-4);
}
