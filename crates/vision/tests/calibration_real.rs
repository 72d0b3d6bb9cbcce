//! Calibration on real photos: OpenCV's own sample views (`calibration/opencv-left-chessboard`,
//! 13 photos from a real camera, 9 x 6 inner corners), with the reference's protocol
//! (cornerSubPix half-window 11 px). The reference is OpenCV's Python
//! `calibrateCamera` on all 13 views (calibration/opencv-left-chessboard/README.md): RMS 0.4087 px, fx 536.073,
//! fy 536.016, cx 342.370, cy 235.537, with k3 free. Tolerances: 0.1 % on fx, fy, cx, cy, 2 % on
//! the RMS (the criterion). flexbench chooses the distortion model by BIC, and on these
//! photos the k3 of OpenCV's default (0.25) does not pay for itself: with k3 fixed at 0 the RMS is
//! 0.4089 px and fx 536.462 (0.07 % from the reference); with k3 free it was the reference to
//! the digits printed.

use std::path::Path;

use flexbench_vision::calibrate::{
    calibrate_views, image_files, Board, Detector, DetectorKind, SubPixWindow,
};

#[test]
fn matches_opencv_python_on_real_photos() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test"))
        .join("../../calibration/opencv-left-chessboard");
    let files = image_files(&dir).expect("the sample photos are in the repository");
    assert_eq!(files.len(), 13);
    // The 9 x 6 inner corners of OpenCV's sample board (its square in its own unit).
    let calibrate = |kind: DetectorKind, window: SubPixWindow| {
        let board = Board {
            cols: 9,
            rows: 6,
            square: 1.0,
        };
        calibrate_views(&files, &board, Detector { kind, window }, 2).unwrap()
    };
    let cal = calibrate(DetectorKind::Classic, SubPixWindow::Fixed(11));
    let i = cal.intrinsics;
    eprintln!(
        "rms {:.4} fx {:.3} fy {:.3} cx {:.3} cy {:.3} dist {:?} rejected {:?}",
        cal.rms, i.fx, i.fy, i.cx, i.cy, i.dist, cal.rejected
    );
    assert!(
        cal.rejected.is_empty(),
        "all 13 views are good: {:?}",
        cal.rejected
    );
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    assert!(rel(i.fx, 536.073) < 1e-3, "fx {}", i.fx);
    assert!(rel(i.fy, 536.016) < 1e-3, "fy {}", i.fy);
    assert!(rel(i.cx, 342.370) < 1e-3, "cx {}", i.cx);
    assert!(rel(i.cy, 235.537) < 1e-3, "cy {}", i.cy);
    assert!(rel(cal.rms, 0.4087) < 0.02, "rms {}", cal.rms);
    assert_eq!(cal.std_intrinsics.len(), 9);
    assert!(cal
        .std_intrinsics
        .iter()
        .all(|s| s.is_finite() && *s >= 0.0));
    // flexbench's default window (shrunk where squares are small) fits these photos better.
    let auto = calibrate(DetectorKind::Classic, SubPixWindow::Auto);
    eprintln!(
        "default window: rms {:.4} px, fx {:.3}",
        auto.rms, auto.intrinsics.fx
    );
    assert!(auto.rms < cal.rms);
    // The default detector (findChessboardCornersSB, then the same refinement of 11 px) finds
    // every view and gives the reference's camera within the same 0.1 %.
    let sb = calibrate(DetectorKind::Sb, SubPixWindow::Fixed(11));
    let j = sb.intrinsics;
    eprintln!(
        "sb: rms {:.4} fx {:.3} fy {:.3} cx {:.3} cy {:.3} rejected {:?}",
        sb.rms, j.fx, j.fy, j.cx, j.cy, sb.rejected
    );
    assert!(sb.rejected.is_empty(), "{:?}", sb.rejected);
    for (name, a, b) in [
        ("fx", j.fx, 536.073),
        ("fy", j.fy, 536.016),
        ("cx", j.cx, 342.370),
        ("cy", j.cy, 235.537),
    ] {
        assert!(rel(a, b) < 1e-3, "sb {name} {a}");
    }
    // The file round-trips.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("camera.yaml");
    cal.write(&path).unwrap();
    let back = flexbench_vision::Calibration::read(&path).unwrap();
    assert_eq!(back.intrinsics, cal.intrinsics);
    assert!(
        back.distortion_model
            .as_deref()
            .is_some_and(|m| m.contains("BIC")),
        "{:?}",
        back.distortion_model
    );
    assert!(std::fs::read_to_string(&path).unwrap().contains("%YAML"));
}
