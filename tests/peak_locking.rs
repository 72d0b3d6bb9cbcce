//! The tracker's peak locking (its bias tied to the pixel grid) on the shipped rendered
//! recording: the process stage measures it from its residuals as the renderer's truth shows
//! it, takes it out by default, warns of it when it is left in, and finds none in the truth.

use std::collections::HashMap;
use std::path::Path;

use nalgebra::{SMatrix, SVector};

use crate::common;

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("a record")).expect("JSON")
}

/// The truth's peak locking: the tracked centre less the rendered one (px), per image axis,
/// regressed on the two harmonics of the rendered centre's pixel fraction; [a1, b1, a2, b2].
fn truth_curves(tracked: &Path, truth: &Path) -> [[f64; 4]; 2] {
    let (got, want) = (common::read_csv(tracked), common::read_csv(truth));
    let key = |t: &HashMap<String, Vec<String>>, i: usize| {
        (t["frame"][i].clone(), t["marker"][i].clone())
    };
    let rendered: HashMap<_, (f64, f64)> = (0..want["frame"].len())
        .map(|i| (key(&want, i), (num(&want["u"][i]), num(&want["v"][i]))))
        .collect();
    let mut out = [[0.0; 4]; 2];
    for (axis, col) in ["u", "v"].iter().enumerate() {
        let mut ata = SMatrix::<f64, 5, 5>::zeros();
        let mut atb = SVector::<f64, 5>::zeros();
        for i in 0..got["frame"].len() {
            let r = rendered[&key(&got, i)];
            let at = if axis == 0 { r.0 } else { r.1 };
            let w = std::f64::consts::TAU * (at - at.floor());
            let h =
                SVector::<f64, 5>::from([1.0, w.sin(), w.cos(), (2.0 * w).sin(), (2.0 * w).cos()]);
            ata += h * h.transpose();
            atb += h * (num(&got[*col][i]) - at);
        }
        let b = ata.try_inverse().expect("spread fractions") * atb;
        out[axis] = [b[1], b[2], b[3], b[4]];
    }
    out
}

fn num(s: &str) -> f64 {
    s.parse().expect("a number")
}

fn process(tracks: &Path, out: &Path, extra: &[&str]) -> (String, serde_json::Value) {
    let mech = common::root().join("mechanisms/wind-pump.toml");
    let mut args = vec!["process", "--tracks", s(tracks), "--mechanism", s(&mech)];
    args.extend(["--out", s(out)]);
    args.extend_from_slice(extra);
    let o = common::flexbench(&args);
    let said = common::said(&o);
    assert!(o.status.success(), "{said}");
    (said, json(&out.join("summary.json")))
}

#[test]
fn the_rendered_videos_peak_locking_is_measured_as_its_truth_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rec = common::root().join("recordings/default");
    let mech = common::root().join("mechanisms/wind-pump.toml");
    let tracks = d.join("tracks.csv");
    let o = common::track_rendering(&rec, &mech, &tracks, &[]);
    assert!(o.status.success(), "{}", common::said(&o));
    let truth = truth_curves(&tracks, &rec.join("truth/tracks.csv"));
    eprintln!("truth: u {:?} v {:?}", truth[0], truth[1]);

    // Left in (off): measured, reported and warned of.
    let (said, off) = process(&tracks, &d.join("off"), &["--peak-locking", "off"]);
    let pl = &off["peak_locking"];
    eprintln!("{pl}");
    assert_eq!(pl["corrected"], false);
    assert!(pl["estimate"]["p_value"].as_f64().unwrap() < 1e-6, "{pl}");
    assert!(
        said.contains("peak locking") && said.contains("--peak-locking auto"),
        "{said}"
    );
    // Each harmonic within 0.004 px of the truth's (the regressions' standard errors are
    // 0.0022 px; the first harmonic is 0.02 px).
    for (axis, name) in ["u", "v"].iter().enumerate() {
        let got: Vec<f64> = pl["estimate"][name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        for (g, w) in got.iter().zip(&truth[axis]) {
            assert!(
                (g - w).abs() < 0.004,
                "{name}: {got:?} against {:?}",
                truth[axis]
            );
        }
    }

    // Taken out (auto, the default): the motion fitted again, closer to the markers (its
    // likelihood higher, its noise lower), and no warning.
    let (said, auto) = process(&tracks, &d.join("auto"), &[]);
    assert_eq!(auto["peak_locking"]["corrected"], true);
    assert!(!said.contains("peak locking"), "{said}");
    let (lo, la) = (
        off["smoother"]["log_likelihood"].as_f64().unwrap(),
        auto["smoother"]["log_likelihood"].as_f64().unwrap(),
    );
    let (so, sa) = (
        off["smoother"]["sigma_m"].as_f64().unwrap(),
        auto["smoother"]["sigma_m"].as_f64().unwrap(),
    );
    eprintln!("log-likelihood {lo} -> {la}, noise {so} -> {sa} m");
    assert!(la > lo + 20.0 && sa < so, "{la} {lo} {sa} {so}");

    // The renderer's truth has none: nothing found, nothing taken out, even when asked.
    let (said, clean) = process(
        &rec.join("truth/tracks.csv"),
        &d.join("truth"),
        &["--peak-locking", "auto"],
    );
    let p = clean["peak_locking"]["estimate"]["p_value"]
        .as_f64()
        .unwrap();
    assert!(p > 1e-3, "{}", clean["peak_locking"]);
    assert_eq!(clean["peak_locking"]["corrected"], false);
    assert!(!said.contains("peak locking"), "{said}");
}
