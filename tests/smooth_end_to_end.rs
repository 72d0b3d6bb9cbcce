//! `flexbench smooth`, the signal stage alone, through the real binary: the recording's truth
//! tracks with 140 um of Gaussian noise (what tracking the shipped video leaves), written in
//! millimetres and read with `--unit mm`, M3 removed for 12 frames. Against the truth's marker
//! accelerations: each marker within 4 % RMS of its peak (2.0-3.3 % measured), at least 90 % of
//! the true accelerations inside the 2-sigma band of the measured samples (93-100 % measured),
//! the hidden frames rejected (no value invented), the smoother's parameters in the summary. Bad
//! units and methods are refused by name.

mod common;

use std::collections::HashMap;

use common::{flexbench, ok, read_csv, root};

#[test]
fn smooth_noisy_tracks_in_millimetres() {
    let dir = tempfile::tempdir().unwrap();
    let truth = root().join("recordings/default/truth");
    let text = std::fs::read_to_string(truth.join("tracks.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let cols: Vec<&str> = header.split(',').collect();
    let pos = |n: &str| cols.iter().position(|c| *c == n).unwrap();
    let (ifr, im, ix, iy) = (pos("frame"), pos("marker"), pos("x"), pos("y"));
    let mut g = common::gauss::Gauss::new(0x5DEECE66D);
    let mut out = vec![header.to_string()];
    for l in lines {
        let mut f: Vec<String> = l.split(',').map(|s| s.to_string()).collect();
        let frame: usize = f[ifr].parse().unwrap();
        if f[im] == "M3" && (200..212).contains(&frame) {
            continue;
        }
        for i in [ix, iy] {
            f[i] = format!("{}", (f[i].parse::<f64>().unwrap() + 1.4e-4 * g.next()) * 1e3);
        }
        out.push(f.join(","));
    }
    let tracks = dir.path().join("noisy-mm.csv");
    std::fs::write(&tracks, out.join("\n")).unwrap();
    let markers = dir.path().join("out/markers.csv");
    ok(&["smooth", "--tracks", tracks.to_str().unwrap(), "--out", markers.to_str().unwrap(), "--unit", "mm"]);
    assert!(dir.path().join("out/markers.parquet").exists());
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/markers.summary.json")).unwrap()).unwrap();
    let params = summary["parameters"].as_array().unwrap();
    assert_eq!(params.len(), 10, "x and y of five markers");
    for p in params {
        let noise = p["noise_m"].as_f64().unwrap();
        assert!((noise / 1.4e-4 - 1.0).abs() < 0.15, "{p}");
    }
    let got = read_csv(&markers);
    let want = read_csv(&truth.join("markers.csv"));
    let key = |t: &str, m: &str| format!("{:.6}/{m}", t.parse::<f64>().unwrap());
    let index: HashMap<String, usize> = (0..want["t"].len()).map(|i| (key(&want["t"][i], &want["marker"][i]), i)).collect();
    for m in ["M1", "M2", "M3", "M4", "M5"] {
        let (mut e2, mut peak, mut inside, mut measured, mut rejected) = (0.0, 0.0f64, 0usize, 0usize, 0usize);
        let mut n = 0usize;
        for i in (0..got["t"].len()).filter(|&i| got["marker"][i] == m) {
            if got["provenance"][i] == "rejected" {
                rejected += 1;
                assert!(got["ax"][i].is_empty(), "no value invented");
                continue;
            }
            let j = index[&key(&got["t"][i], m)];
            for c in ["ax", "ay"] {
                let (g, w): (f64, f64) = (got[c][i].parse().unwrap(), want[c][j].parse().unwrap());
                e2 += (g - w).powi(2);
                n += 1;
                peak = peak.max(w.abs());
                if got["provenance"][i] == "measured" {
                    measured += 1;
                    let s: f64 = got[&format!("{c}_sigma")][i].parse().unwrap();
                    inside += usize::from((g - w).abs() <= 2.0 * s);
                }
            }
        }
        let rms = (e2 / n as f64).sqrt() / peak;
        let cover = inside as f64 / measured as f64;
        eprintln!("{m}: acceleration within {:.2} % RMS of its peak {peak:.1} m/s^2; {:.1} % inside 2 sigma; {rejected} rejected", rms * 100.0, cover * 100.0);
        assert!(rms < 0.04, "{m}: {rms}");
        assert!(cover >= 0.9, "{m}: {cover}");
        assert_eq!(rejected, if m == "M3" { 12 } else { 0 }, "{m}");
    }
    for (args, needle) in [(vec!["--unit", "furlong"], "--unit 'furlong'"), (vec!["--method", "magic"], "--method 'magic'")] {
        let bad = dir.path().join("bad/m.csv");
        let mut a = vec!["smooth", "--tracks", tracks.to_str().unwrap(), "--out", bad.to_str().unwrap()];
        a.extend(args);
        let res = flexbench(&a);
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success() && err.contains(needle) && !err.contains("panicked"), "{err}");
        assert!(!dir.path().join("bad/m.csv").exists());
    }
}
