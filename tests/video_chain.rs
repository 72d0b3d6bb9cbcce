//! The whole chain on the shipped 240 frames/s recording, through the real binary: calibrate
//! (from the recording's chessboard views, the board in the lever's plane and the clicked
//! pixels) -> track -> process. Checked against the rendering's truth: the calibration (0.25 %),
//! the tracks (0.2 px RMS in the image; the error in bench metres printed), the kinematic fit
//! (closing the loop adds at most 0.1 mm to the free rigid fit's residual, so no sample is
//! fitted to a wrong configuration), the forces at B and C' (Kalman smoother, periodic refit,
//! horizontal refined from the motion) within the 3 % RMS of their peaks (2.4 % and
//! 2.5 % measured; 5.0 % and 5.1 % with the clicked horizontal, which is 0.2 mrad off: a 0.05 px
//! rounding of the clicked point); and the lever's modes along the motion (`fem`) within 0.25 Hz
//! of those along the truth.

use crate::common;

use std::collections::HashMap;

use common::{num, ok, read_csv, root};

#[test]
fn calibrate_track_process_on_the_shipped_recording() {
    let dir = tempfile::tempdir().unwrap();
    let rec = root().join("recordings/default");
    let cal = dir.path().join("camera.yaml");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    common::calibrate_recording(&rec, &cal);
    let est = flexbench_vision::Calibration::read(&cal).unwrap();
    let truth_cam = flexbench_vision::Calibration::read(&rec.join("truth/camera.yaml")).unwrap();
    let (e, t) = (est.intrinsics, truth_cam.intrinsics);
    for (name, a, b) in [
        ("fx", e.fx, t.fx),
        ("fy", e.fy, t.fy),
        ("cx", e.cx, t.cx),
        ("cy", e.cy, t.cy),
    ] {
        // The recording's 15 views pin the principal point to about 1 px (0.45 %, OpenCV's
        // standard deviation); the 0.2 % is shown with 27 views in rendered_calibration.
        assert!((a - b).abs() / b < 2.5e-3, "{name}: {a} vs {b}");
    }
    let tracks = dir.path().join("tracks.csv");
    ok(&[
        "track",
        "--video",
        &s(&rec.join("video.mp4")),
        "--calibration",
        &s(&cal),
        "--out",
        &s(&tracks),
    ]);
    let truth: HashMap<(String, String), (f64, f64, f64, f64)> = {
        let t = read_csv(&rec.join("truth/tracks.csv"));
        let (f, m, u, v, x, y) = (
            &t["frame"],
            &t["marker"],
            num(&t, "u"),
            num(&t, "v"),
            num(&t, "x"),
            num(&t, "y"),
        );
        (0..f.len())
            .map(|i| ((f[i].clone(), m[i].clone()), (u[i], v[i], x[i], y[i])))
            .collect()
    };
    let got = read_csv(&tracks);
    let (gu, gv, gx, gy) = (
        num(&got, "u"),
        num(&got, "v"),
        num(&got, "x"),
        num(&got, "y"),
    );
    let (mut e_px, mut e_m) = (0.0, 0.0);
    for i in 0..gu.len() {
        let (u, v, x, y) = truth[&(got["frame"][i].clone(), got["marker"][i].clone())];
        e_px += (gu[i] - u).powi(2) + (gv[i] - v).powi(2);
        e_m += (gx[i] - x).powi(2) + (gy[i] - y).powi(2);
    }
    let n = gu.len() as f64;
    let (rms_px, rms_mm) = ((e_px / n).sqrt(), (e_m / n).sqrt() * 1e3);
    eprintln!("tracks: {} detections, RMS {rms_px:.3} px in the image, {rms_mm:.3} mm in the bench plane (calibration included)", gu.len());
    assert!(rms_px < 0.2);
    assert_eq!(
        gu.len(),
        480 * 5 - 12,
        "every marker in every frame but M3's 12 occluded frames"
    );
    let out = dir.path().join("processed");
    ok(&[
        "process",
        "--tracks",
        &s(&tracks),
        "--mechanism",
        "mechanisms/wind-pump.toml",
        "--out",
        &s(&out),
        "--smoother",
        "--periodic",
        "--refine-horizontal",
    ]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let excess = summary["fit"]["loop_excess_rms"].as_f64().unwrap();
    eprintln!(
        "fit: RMS {:.4} mm, free {:.4} mm, loop adds {:.4} mm",
        summary["fit"]["rms"].as_f64().unwrap() * 1e3,
        summary["fit"]["rms_free"].as_f64().unwrap() * 1e3,
        excess * 1e3
    );
    assert!(excess < 1e-4, "closing the loop adds {excess} m");
    let tf = read_csv(&rec.join("truth/forces.csv"));
    let pf = read_csv(&out.join("forces.csv"));
    for j in ["B", "C"] {
        let (rel, peak) = common::force_error(&tf, &pf, j);
        let rms = rel * peak;
        eprintln!(
            "force at {j}: RMS error {:.1} % of its peak {peak:.0} N (issue's aim: 3 %)",
            100.0 * rms / peak
        );
        assert!(
            rms / peak < 0.03,
            "force at {j}: {:.1} % of its peak",
            100.0 * rms / peak
        );
    }
    // The lever's modes along the recorded motion against those along the truth's: within
    // 0.25 Hz at worst and 0.07 Hz RMS (measured) of a 4.7 Hz swing along the cycle; asserted
    // 0.5 Hz and 0.2 Hz for every one of modes 1-6.
    let fem_of = |bodies: &std::path::Path, forces: &std::path::Path, name: &str| -> Vec<f64> {
        let o = dir.path().join(name);
        ok(&[
            "fem",
            "--kinematics",
            &s(bodies),
            "--forces",
            &s(forces),
            "--mechanism",
            "mechanisms/wind-pump.toml",
            "--no-response",
            "--out",
            &s(&o),
        ]);
        num(&read_csv(&o.join("modal.csv")), "freq_hz")
    };
    let measured = fem_of(
        &out.join("bodies.csv"),
        &out.join("forces.csv"),
        "fem-video",
    );
    let truth = fem_of(
        &rec.join("truth/bodies.csv"),
        &rec.join("truth/forces.csv"),
        "fem-truth",
    );
    assert_eq!(measured.len(), truth.len());
    for mode in 0..6 {
        let d: Vec<f64> = (mode..truth.len())
            .step_by(6)
            .map(|i| measured[i] - truth[i])
            .collect();
        let worst = d.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let rms = (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt();
        eprintln!("mode {}: frequency along the cycle within {worst:.3} Hz ({rms:.3} Hz RMS) of the truth's", mode + 1);
        assert!(
            worst < 0.5 && rms < 0.2,
            "mode {}: {worst} Hz, {rms} Hz RMS",
            mode + 1
        );
    }
    // With the periodic refit the bands are the smoother's per-sample ones carried at the
    // periodic fit's states: conservative (the refit pools every turn). Measured: 100 % of the
    // true components inside 2 sigma, the RMS error about half of the median sigma.
    for col in ["B_x", "B_y", "C_x", "C_y"] {
        let (truth, got, sigma) = (
            num(&tf, col),
            num(&pf, col),
            num(&pf, &format!("{col}_sigma")),
        );
        let z: Vec<f64> = (0..truth.len())
            .filter(|&i| got[i].is_finite() && sigma[i] > 0.0)
            .map(|i| (got[i] - truth[i]) / sigma[i])
            .collect();
        let inside = z.iter().filter(|v| v.abs() <= 2.0).count() as f64 / z.len() as f64;
        eprintln!(
            "periodic refit, {col}: {:.1} % of the samples within 2 sigma of the truth",
            inside * 100.0
        );
        assert!(
            z.len() + 2 >= truth.len() && inside >= 0.99,
            "{col}: {inside}"
        );
    }
    // The smoother alone gives each force a standard deviation (the drivers' posterior covariance
    // carried through the loop's analysis and the inverse dynamics). The bands hold the tracking's
    // noise, not the bench frame's: with the clicked horizontal (0.2 mrad off) 81 % of the true B
    // and C' components lie within 2 sigma; with the horizontal refined from the motion 98.8 % to
    // 99.6 % (the aim of a calibrated band: 95 %; a little conservative). Asserted, refined:
    // 93 % to 99.9 % (a band three times too wide would hold them all).
    let out2 = dir.path().join("processed-bands");
    ok(&[
        "process",
        "--tracks",
        &s(&tracks),
        "--mechanism",
        "mechanisms/wind-pump.toml",
        "--out",
        &s(&out2),
        "--smoother",
        "--refine-horizontal",
        "--periodic",
        "off",
    ]);
    let pf2 = read_csv(&out2.join("forces.csv"));
    for col in ["B_x", "B_y", "C_x", "C_y"] {
        let (truth, got, sigma) = (
            num(&tf, col),
            num(&pf2, col),
            num(&pf2, &format!("{col}_sigma")),
        );
        let z: Vec<f64> = (0..truth.len())
            .filter(|&i| got[i].is_finite() && sigma[i] > 0.0)
            .map(|i| (got[i] - truth[i]) / sigma[i])
            .collect();
        let inside = z.iter().filter(|v| v.abs() <= 2.0).count() as f64 / z.len() as f64;
        eprintln!(
            "{col}: {:.1} % of the samples within 2 sigma of the truth",
            inside * 100.0
        );
        assert!(
            z.len() + 2 >= truth.len() && (0.93..=0.999).contains(&inside),
            "{col}: {inside}"
        );
    }
}
