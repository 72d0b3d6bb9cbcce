//! The bench's truth quantized as real trackers and encoders quantize: the shipped recording's
//! true marker positions rounded to whole millimetres in the bench plane, and its true image
//! positions rounded to half pixels (centroids locked to a sub-pixel grid) then mapped to the
//! bench through the shipped camera (`recordings/default/truth/camera.yaml`). Each processed with
//! every kinematics method; the default's forces at B and C' must be within 1.2 times the best
//! method's chosen in hindsight (issue 38), and the default must find the quantization.

use std::path::Path;

use flexbench_vision::Calibration;

use crate::common;

use common::{force_error, num, read_csv};

/// The methods compared: the default, then the others with their defaults.
const METHODS: [(&str, &[&str]); 4] = [
    ("default", &[]),
    ("butterworth", &["--butterworth"]),
    ("spline", &["--spline"]),
    ("savgol", &["--savgol"]),
];

/// The truth tracks with each position replaced by `moved(u, v, x, y)`, written to `path`.
fn quantized(path: &Path, moved: &dyn Fn(f64, f64, f64, f64) -> (f64, f64)) {
    let truth = read_csv(&common::root().join("recordings/default/truth/tracks.csv"));
    let (u, v, x, y) = (
        num(&truth, "u"),
        num(&truth, "v"),
        num(&truth, "x"),
        num(&truth, "y"),
    );
    let mut out = vec!["frame,t,marker,x,y".to_string()];
    for i in 0..u.len() {
        let (qx, qy) = moved(u[i], v[i], x[i], y[i]);
        out.push(format!(
            "{},{},{},{qx:?},{qy:?}",
            truth["frame"][i], truth["t"][i], truth["marker"][i]
        ));
    }
    std::fs::write(path, out.join("\n")).unwrap();
}

/// Each method's force error at B and C' (share of the peak, the larger of the two), and what
/// the default said.
fn errors(tracks: &Path, dir: &Path) -> (Vec<(&'static str, f64)>, serde_json::Value) {
    let truth = read_csv(&common::root().join("recordings/default/truth/forces.csv"));
    let mut out = Vec::new();
    let mut record = serde_json::Value::Null;
    for (name, extra) in METHODS {
        let o = dir.join(name);
        common::process(tracks, &o, extra);
        let got = read_csv(&o.join("forces.csv"));
        let e = ["B", "C"]
            .iter()
            .map(|j| force_error(&truth, &got, j).0)
            .fold(0.0, f64::max);
        if name == "default" {
            record =
                serde_json::from_str(&std::fs::read_to_string(o.join("summary.json")).unwrap())
                    .unwrap();
        }
        out.push((name, e));
    }
    (out, record)
}

fn judge(what: &str, errors: &[(&str, f64)]) {
    let best = errors.iter().map(|e| e.1).fold(f64::INFINITY, f64::min);
    for (name, e) in errors {
        eprintln!(
            "{what}: {name} {:.2} % of the peak ({:.2}x the best)",
            100.0 * e,
            e / best
        );
    }
    let default = errors[0].1;
    assert!(
        default <= 1.2 * best,
        "{what}: the default {default} against the best {best}"
    );
}

#[test]
fn the_truth_in_whole_millimetres() {
    let dir = tempfile::tempdir().unwrap();
    let tracks = dir.path().join("mm.csv");
    quantized(&tracks, &|_, _, x, y| {
        ((x * 1e3).round() / 1e3, (y * 1e3).round() / 1e3)
    });
    let (e, record) = errors(&tracks, dir.path());
    judge("1 mm", &e);
    let q = &record["smoother"]["quantization"];
    assert!(
        q.as_array().is_some_and(|a| a
            .iter()
            .any(|s| (s["step"].as_f64().unwrap() - 1e-3).abs() < 1e-9)),
        "the millimetre found: {q}"
    );
    let floor = record["smoother"]["sigma_floor_m"].as_f64().unwrap();
    assert!((floor - 1e-3 / 12f64.sqrt()).abs() < 1e-9, "{floor}");
}

#[test]
fn the_truth_in_half_pixels_through_the_camera() {
    let dir = tempfile::tempdir().unwrap();
    let cal =
        Calibration::read(&common::root().join("recordings/default/truth/camera.yaml")).unwrap();
    let plane = cal.plane.expect("the shipped camera's bench plane");
    let tracks = dir.path().join("half-px.csv");
    quantized(&tracks, &|u, v, _, _| {
        let (qu, qv) = ((2.0 * u).round() / 2.0, (2.0 * v).round() / 2.0);
        plane.pixel_to_bench(&cal.intrinsics, qu, qv)
    });
    let (e, _) = errors(&tracks, dir.path());
    judge("0.5 px", &e);
}
