//! `flexbench smooth`, the signal stage alone, through the real binary: the recording's truth
//! tracks with 140 um of Gaussian noise (what tracking the shipped video leaves), written in
//! millimetres and read with `--unit mm`, M3 removed for 12 frames. Against the truth's marker
//! accelerations: each marker within 4 % RMS of its peak (1.1-2.0 % measured), at least 90 % of
//! the true accelerations inside the 2-sigma band of the measured samples (93-100 % measured),
//! the hidden frames rejected (no value invented), the smoother's parameters in the summary. Bad
//! units and methods are refused by name.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{flexbench, ok, read_csv, root};

#[test]
fn smooth_noisy_tracks_in_millimetres() {
    let dir = tempfile::tempdir().unwrap();
    let tracks = noisy_mm_tracks(dir.path());
    let markers = dir.path().join("out/markers.csv");
    ok(&[
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        markers.to_str().unwrap(),
        "--unit",
        "mm",
    ]);
    assert!(dir.path().join("out/markers.parquet").exists());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/markers.summary.json")).unwrap(),
    )
    .unwrap();
    let params = summary["parameters"].as_array().unwrap();
    assert_eq!(params.len(), 10, "x and y of five markers");
    for p in params {
        let noise = p["noise_m"].as_f64().unwrap();
        assert!((noise / 1.4e-4 - 1.0).abs() < 0.15, "{p}");
    }
    for (m, e) in accelerations_against_truth(&markers) {
        eprintln!(
            "{m}: acceleration within {:.2} % RMS of its peak {:.1} m/s^2; {:.1} % inside 2 sigma; {} rejected",
            e.rms * 100.0,
            e.peak,
            e.cover * 100.0,
            e.rejected
        );
        assert!(e.rms < 0.04, "{m}: {}", e.rms);
        assert!(e.cover >= 0.9, "{m}: {}", e.cover);
        assert_eq!(e.rejected, if m == "M3" { 12 } else { 0 }, "{m}");
    }
    for (args, needle) in [
        (vec!["--unit", "furlong"], "'furlong' for '--unit"),
        (vec!["--method", "magic"], "'magic' for '--method"),
    ] {
        refused_by_name(dir.path(), &tracks, &args, needle);
    }
}

/// The recording's truth tracks with 140 um of Gaussian noise (what tracking the shipped video
/// leaves), in millimetres, M3 hidden for 12 frames (a gap), written into `dir`.
fn noisy_mm_tracks(dir: &Path) -> PathBuf {
    let text = common::noisy_tracks(
        &root().join("recordings/default/truth/tracks.csv"),
        1.4e-4,
        0x5DEECE66D,
        1e3,
        &|m, frame| m == "M3" && (200..212).contains(&frame),
    );
    let tracks = dir.join("noisy-mm.csv");
    std::fs::write(&tracks, text).unwrap();
    tracks
}

/// `flexbench smooth` on `tracks` with `args` fails by name (`needle` in its message, no
/// panic), and writes nothing into `dir`/bad.
fn refused_by_name(dir: &Path, tracks: &Path, args: &[&str], needle: &str) {
    let bad = dir.join("bad/m.csv");
    let mut a = vec![
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        bad.to_str().unwrap(),
    ];
    a.extend(args);
    let res = flexbench(&a);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(
        !res.status.success() && err.contains(needle) && !err.contains("panicked"),
        "{err}"
    );
    assert!(!bad.exists());
}

/// One marker's measured accelerations against the truth's.
struct AccelerationError {
    /// RMS error of ax and ay over the samples with a value, over the truth's peak.
    rms: f64,
    /// The same over the samples away from the edges (provenance measured).
    rms_inside: f64,
    /// The truth's peak acceleration component, m/s^2.
    peak: f64,
    /// Share of the true components inside the measured 2-sigma band (of the samples away
    /// from the edges; NaN without bands).
    cover: f64,
    /// Samples rejected (no value, checked empty).
    rejected: usize,
}

/// Per marker of the shipped recording, the accelerations of the markers table at `markers`
/// against its truth's.
fn accelerations_against_truth(
    markers: &std::path::Path,
) -> Vec<(&'static str, AccelerationError)> {
    let got = read_csv(markers);
    let want = read_csv(&root().join("recordings/default/truth/markers.csv"));
    let key = |t: &str, m: &str| format!("{:.6}/{m}", t.parse::<f64>().unwrap());
    let index: HashMap<String, usize> = (0..want["t"].len())
        .map(|i| (key(&want["t"][i], &want["marker"][i]), i))
        .collect();
    let banded = got.contains_key("ax_sigma");
    let mut out = Vec::new();
    for m in ["M1", "M2", "M3", "M4", "M5"] {
        let (mut e2, mut peak, mut inside, mut measured, mut rejected) =
            (0.0, 0.0f64, 0usize, 0usize, 0usize);
        let (mut n, mut e2_inside) = (0usize, 0.0);
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
                    e2_inside += (g - w).powi(2);
                    measured += 1;
                }
                if banded && got["provenance"][i] == "measured" {
                    let s: f64 = got[&format!("{c}_sigma")][i].parse().unwrap();
                    inside += usize::from((g - w).abs() <= 2.0 * s);
                }
            }
        }
        let cover = match banded {
            true => inside as f64 / measured as f64,
            false => f64::NAN,
        };
        let rms = (e2 / n as f64).sqrt() / peak;
        let rms_inside = (e2_inside / measured as f64).sqrt() / peak;
        out.push((
            m,
            AccelerationError {
                rms,
                rms_inside,
                peak,
                cover,
                rejected,
            },
        ));
    }
    out
}

/// The zero-lag Butterworth filter on the same noisy tracks (140 um, millimetres, M3 hidden for
/// 12 frames), its cutoff chosen per coordinate by Winter's residual analysis and by the
/// Durbin-Watson criterion: the summary (read back by its type) names the method and each
/// coordinate's cutoff (12-17 Hz here), the residual analysis's noise within 25 % of the 140 um
/// added (-7 to +4 % measured); each marker's acceleration within 4 % RMS of its peak away from
/// the edges (2.2-3.4 % measured), within 10 % with them (5.1-9.0 %: the odd reflection the
/// field pads with flips the curvature at a run's ends, which the edge flags mark), the
/// hidden frames rejected. The Kalman/RTS default above: 1.1-2.0 % with its edges. A cutoff above the Nyquist frequency, a cutoff given with a criterion, and an
/// order of 0 are refused by name, nothing written.
#[test]
fn butterworth_with_its_cutoff_from_the_data() {
    use flexbench_pipeline::smooth::SmoothRecord;
    use flexbench_pipeline::StageRecord;
    let dir = tempfile::tempdir().unwrap();
    let tracks = noisy_mm_tracks(dir.path());
    let tracks = tracks.to_str().unwrap();
    for (by, name) in [
        ("residual", "residual analysis"),
        ("durbin-watson", "Durbin-Watson"),
    ] {
        let markers = dir.path().join(format!("{by}/markers.csv"));
        let out = markers.to_str().unwrap();
        ok(&[
            "smooth",
            "--tracks",
            tracks,
            "--out",
            out,
            "--unit",
            "mm",
            "--method",
            "butterworth",
            "--cutoff-by",
            by,
        ]);
        let record = SmoothRecord::read(&markers.with_file_name("markers.summary.json")).unwrap();
        assert!(
            record.method.contains("zero-lag Butterworth") && record.method.contains(name),
            "{}",
            record.method
        );
        assert_eq!(record.parameters.len(), 10);
        for p in &record.parameters {
            let fc = p.cutoff_hz.unwrap();
            eprintln!(
                "{by}: {} cutoff {fc:.2} Hz, noise {:?}, d {:.3}",
                p.coordinate,
                p.noise_m,
                p.durbin_watson.unwrap()
            );
            if by == "residual" {
                let noise = p.noise_m.unwrap();
                assert!(
                    (noise / 1.4e-4 - 1.0).abs() < 0.25,
                    "{}: {noise}",
                    p.coordinate
                );
            }
        }
        for (m, e) in accelerations_against_truth(&markers) {
            eprintln!(
                "{by}: {m} acceleration within {:.2} % RMS of its peak ({:.2} % away from the edges); {} rejected",
                e.rms * 100.0,
                e.rms_inside * 100.0,
                e.rejected
            );
            assert!(e.rms_inside < 0.04, "{by}: {m}: {}", e.rms_inside);
            assert!(e.rms < 0.10, "{by}: {m}: {}", e.rms);
            assert_eq!(e.rejected, if m == "M3" { 12 } else { 0 }, "{m}");
        }
    }
    for (args, needle) in [
        (
            vec!["--cutoff-hz", "150"],
            "not below the Nyquist frequency 120",
        ),
        (
            vec!["--cutoff-hz", "8", "--cutoff-by", "residual"],
            "both given",
        ),
        (vec!["--filter-order", "0"], "order must be 1 to 10"),
    ] {
        let mut a = vec!["--unit", "mm", "--method", "butterworth"];
        a.extend(args);
        refused_by_name(dir.path(), Path::new(tracks), &a, needle);
    }
}

/// Woltring's GCV quintic spline on the same noisy tracks (140 um, millimetres, M3 hidden for
/// 12 frames): the summary (read back by its type) names the spline and each coordinate's
/// smoothing parameter, degrees of freedom (64-96 of 480) and noise estimate (within 10 % of
/// the 140 um added; -4 to +4 % measured); each marker's acceleration within 4.5 % RMS of its
/// peak (2.6-3.6 % measured; 2.1-2.9 % away from the edges, within 3.5 %), between the
/// Kalman/RTS default and the Butterworth filter. With the noise given (--noise-m 1.4e-4) the
/// spline's choice of the mean squared error gives the same to 0.1 %. An even degree is
/// refused by name.
#[test]
fn gcv_spline_on_the_noisy_tracks() {
    use flexbench_pipeline::smooth::SmoothRecord;
    use flexbench_pipeline::StageRecord;
    let dir = tempfile::tempdir().unwrap();
    let tracks = noisy_mm_tracks(dir.path());
    let tracks = tracks.to_str().unwrap();
    for (name, extra) in [("gcv", vec![]), ("known", vec!["--noise-m", "1.4e-4"])] {
        let markers = dir.path().join(format!("{name}/markers.csv"));
        let mut args = vec![
            "smooth",
            "--tracks",
            tracks,
            "--out",
            markers.to_str().unwrap(),
            "--unit",
            "mm",
            "--method",
            "spline",
        ];
        args.extend(extra);
        ok(&args);
        let record = SmoothRecord::read(&markers.with_file_name("markers.summary.json")).unwrap();
        assert!(record.method.contains("degree 5"), "{}", record.method);
        assert_eq!(record.parameters.len(), 10);
        for p in &record.parameters {
            let noise = p.noise_m.unwrap();
            eprintln!(
                "{name}: {} p {:.3e}, {:.1} degrees of freedom, noise {:.1} um",
                p.coordinate,
                p.spline_p.unwrap(),
                p.spline_dof.unwrap(),
                noise * 1e6
            );
            assert!(
                (noise / 1.4e-4 - 1.0).abs() < 0.25,
                "{}: {noise}",
                p.coordinate
            );
        }
        for (m, e) in accelerations_against_truth(&markers) {
            eprintln!("{name}: {m} acceleration within {:.2} % RMS of its peak ({:.2} % away from the edges); {} rejected", e.rms * 100.0, e.rms_inside * 100.0, e.rejected);
            assert!(
                e.rms < 0.045 && e.rms_inside < 0.035,
                "{name}: {m}: {} {}",
                e.rms,
                e.rms_inside
            );
            assert_eq!(e.rejected, if m == "M3" { 12 } else { 0 }, "{m}");
        }
    }
    let args = ["--unit", "mm", "--method", "spline", "--spline-degree", "4"];
    refused_by_name(dir.path(), Path::new(tracks), &args, "degree is odd");
}

/// The lever's rigid field from `smooth --rigid-field --mechanism`: the truth's markers with
/// 100 um of noise; B's acceleration and the lever's angular acceleration and speed against the
/// truth's lever (B's from its centroid's by the rigid-body formula); the residual along the
/// lever's normal is noise (the simulated lever is rigid): its RMS within 1.5 times the
/// markers' own sigma.
#[test]
fn rigid_field_of_the_lever() {
    let dir = tempfile::tempdir().unwrap();
    let truth = root().join("recordings/default/truth");
    let text = common::noisy_tracks(
        &truth.join("tracks.csv"),
        1e-4,
        0x2545F4914F6CDD1D,
        1.0,
        &|_, _| false,
    );
    let tracks = dir.path().join("noisy.csv");
    std::fs::write(&tracks, text).unwrap();
    let markers = dir.path().join("out/markers.csv");
    let mech = root().join("mechanisms/wind-pump.toml");
    ok(&[
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        markers.to_str().unwrap(),
        "--rigid-field",
        "--mechanism",
        mech.to_str().unwrap(),
    ]);
    let field = read_csv(&dir.path().join("out/markers.rigid.csv"));
    let bodies = read_csv(&truth.join("bodies.csv"));
    let lever: Vec<usize> = (0..bodies["t"].len())
        .filter(|&i| bodies["body"][i] == "lever")
        .collect();
    assert_eq!(lever.len(), field["t"].len());
    let f = |m: &HashMap<String, Vec<String>>, c: &str, i: usize| m[c][i].parse::<f64>().unwrap();
    let (mut ea, mut peak_a, mut ee, mut peak_e, mut ew, mut peak_w, mut inside, mut n) =
        (0.0, 0.0f64, 0.0, 0.0f64, 0.0, 0.0f64, 0usize, 0usize);
    for (k, &i) in lever.iter().enumerate() {
        let (phi, w, eps) = (
            f(&bodies, "phi", i),
            f(&bodies, "omega", i),
            f(&bodies, "epsilon", i),
        );
        // B - G in the bench frame: the centroid is at a2 l2 = 0.225 m from B along the lever.
        let (c, s) = (phi.cos(), phi.sin());
        let r = (-0.225 * c, -0.225 * s);
        let ab = (
            f(&bodies, "ax", i) - eps * r.1 - w * w * r.0,
            f(&bodies, "ay", i) + eps * r.0 - w * w * r.1,
        );
        let (gx, gy, ge, gw) = (
            f(&field, "ax", k),
            f(&field, "ay", k),
            f(&field, "epsilon", k),
            f(&field, "omega", k),
        );
        ea += (gx - ab.0).powi(2) + (gy - ab.1).powi(2);
        peak_a = peak_a.max((ab.0 * ab.0 + ab.1 * ab.1).sqrt());
        ee += (ge - eps).powi(2);
        peak_e = peak_e.max(eps.abs());
        ew += (gw - w).powi(2);
        peak_w = peak_w.max(w.abs());
        inside += usize::from((ge - eps).abs() <= 2.0 * f(&field, "epsilon_sigma", k));
        n += 1;
    }
    let (ra, re, rw) = (
        (ea / n as f64).sqrt() / peak_a,
        (ee / n as f64).sqrt() / peak_e,
        (ew / n as f64).sqrt() / peak_w,
    );
    let cover = inside as f64 / n as f64;
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/markers.summary.json")).unwrap(),
    )
    .unwrap();
    let rf = &summary["rigid_field"];
    let (res, sig) = (
        rf["rms_normal_residual_m_s2"].as_f64().unwrap(),
        rf["rms_normal_sigma_m_s2"].as_f64().unwrap(),
    );
    eprintln!(
        "rigid field: a_B within {:.2} % RMS of its peak {peak_a:.1} m/s^2, epsilon {:.2} % of {peak_e:.1} rad/s^2 ({:.1} % inside 2 sigma), omega {:.3} % of {peak_w:.2} rad/s; normal residual {res:.3} m/s^2 RMS against the markers' sigma {sig:.3}",
        100.0 * ra, 100.0 * re, 100.0 * cover, 100.0 * rw
    );
    assert!(ra < 0.02 && re < 0.03 && rw < 0.005, "{ra} {re} {rw}");
    assert!(cover > 0.9, "{cover}");
    assert!(res < 1.5 * sig, "{res} {sig}");
}

/// A recording's defects through `smooth`: per-frame timestamps that jitter by up to 3 % of the
/// step with one frame dropped (the RTS smoother takes each step as it is: accelerations of a
/// known motion within 3 % RMS of their peak, the dropped frame not invented, its neighbours
/// measured, not split into edges; Savitzky-Golay fits each window on the samples' own times:
/// within 3 % too, 1.9 % measured); a NaN position and a recording too short for the method,
/// each refused with a message that names the problem and the way out, a non-zero exit, no
/// panic, nothing written.
#[test]
#[allow(clippy::needless_range_loop)] // i is a row index into several columns of the CSV
fn recording_defects() {
    let dir = tempfile::tempdir().unwrap();
    let w = std::f64::consts::TAU * 2.3;
    let pos = |m: usize, t: f64| {
        (
            0.1 * m as f64 + 0.05 * (w * t + m as f64).cos(),
            0.03 * (w * t).sin() + 0.01 * (2.0 * w * t).cos(),
        )
    };
    let acc = |m: usize, t: f64| {
        (
            -0.05 * w * w * (w * t + m as f64).cos(),
            -0.03 * w * w * (w * t).sin() - 0.04 * w * w * (2.0 * w * t).cos(),
        )
    };
    let mut g = common::gauss::Gauss::new(0xDEADBEEF);
    let mut lines = vec!["frame,t,marker,u,v,x,y".to_string()];
    let mut times = Vec::new();
    for k in 0..480usize {
        if k == 250 {
            continue; // a dropped frame
        }
        let jitter = 0.03 * (((k * 7919) % 61) as f64 / 30.0 - 1.0);
        let t = (k as f64 + jitter) / 240.0;
        times.push((k, t));
        for m in 0..5 {
            let (x, y) = pos(m, t);
            lines.push(format!(
                "{k},{t},M{},,,{},{}",
                m + 1,
                x + 1e-4 * g.next(),
                y + 1e-4 * g.next()
            ));
        }
    }
    let tracks = dir.path().join("jitter.csv");
    std::fs::write(&tracks, lines.join("\n")).unwrap();
    let out = dir.path().join("out/markers.csv");
    ok(&[
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let got = read_csv(&out);
    assert_eq!(got["t"].len(), 5 * 479, "no row for the dropped frame");
    let (mut e2, mut peak, mut n) = (0.0, 0.0f64, 0usize);
    for i in 0..got["t"].len() {
        let t: f64 = got["t"][i].parse().unwrap();
        let m: usize = got["marker"][i][1..].parse::<usize>().unwrap() - 1;
        let (ax, ay) = acc(m, t);
        let (gx, gy): (f64, f64) = (got["ax"][i].parse().unwrap(), got["ay"][i].parse().unwrap());
        e2 += (gx - ax).powi(2) + (gy - ay).powi(2);
        peak = peak.max(ax.abs()).max(ay.abs());
        n += 2;
        if (t - 249.0 / 240.0).abs() < 0.5 / 240.0 || (t - 251.0 / 240.0).abs() < 0.5 / 240.0 {
            assert_eq!(
                got["provenance"][i], "measured",
                "the dropped frame's neighbours at {t} s"
            );
        }
    }
    let rms = (e2 / n as f64).sqrt() / peak;
    eprintln!("jittered timestamps and a dropped frame: accelerations within {:.2} % RMS of their peak {peak:.1} m/s^2", rms * 100.0);
    assert!(rms < 0.03, "{rms}");
    let refused = |args: &[&str], needles: &[&str]| {
        let res = flexbench(args);
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success() && !err.contains("panicked"), "{err}");
        for n in needles {
            assert!(err.contains(n), "'{n}' not in: {err}");
        }
    };
    // Savitzky-Golay fits each window on the samples' own times: the jitter and the dropped
    // frame are taken as they are.
    let sg_out = dir.path().join("sg/markers.csv");
    ok(&[
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        sg_out.to_str().unwrap(),
        "--method",
        "savgol",
    ]);
    let sg = read_csv(&sg_out);
    let (mut e2, mut n) = (0.0, 0usize);
    for i in 0..sg["t"].len() {
        let (Ok(gx), Ok(gy)) = (sg["ax"][i].parse::<f64>(), sg["ay"][i].parse::<f64>()) else {
            continue;
        };
        if !(gx.is_finite() && gy.is_finite()) || sg["provenance"][i] != "measured" {
            continue;
        }
        let t: f64 = sg["t"][i].parse().unwrap();
        let m: usize = sg["marker"][i][1..].parse::<usize>().unwrap() - 1;
        let (ax, ay) = acc(m, t);
        e2 += (gx - ax).powi(2) + (gy - ay).powi(2);
        n += 2;
    }
    let sg_rms = (e2 / n as f64).sqrt() / peak;
    eprintln!(
        "Savitzky-Golay on the same samples' own times: accelerations within {:.2} % RMS of their peak ({n} coordinates away from the edges)",
        sg_rms * 100.0
    );
    assert!(n > 5 * 400 && sg_rms < 0.03, "{sg_rms}");
    let bad_out = dir.path().join("bad/m.csv");
    let nan = dir.path().join("nan.csv");
    let mut l: Vec<String> = lines[..40].to_vec();
    let f: Vec<&str> = l[3].split(',').collect();
    l[3] = format!("{},{},{},,,NaN,{}", f[0], f[1], f[2], f[6]);
    std::fs::write(&nan, l.join("\n")).unwrap();
    refused(
        &[
            "smooth",
            "--tracks",
            nan.to_str().unwrap(),
            "--out",
            bad_out.to_str().unwrap(),
        ],
        &["NaN"],
    );
    let short = dir.path().join("short.csv");
    std::fs::write(&short, lines[..26].join("\n")).unwrap();
    refused(
        &[
            "smooth",
            "--tracks",
            short.to_str().unwrap(),
            "--out",
            bad_out.to_str().unwrap(),
        ],
        &["no run of at least 8", "too short"],
    );
    refused(
        &[
            "smooth",
            "--tracks",
            short.to_str().unwrap(),
            "--out",
            bad_out.to_str().unwrap(),
            "--method",
            "savgol",
            "--window",
            "21",
        ],
        &["no run of at least 21", "shorter --window"],
    );
    assert!(
        !bad_out.exists() && !dir.path().join("bad").join("m.parquet").exists(),
        "nothing written"
    );
}

/// The signal stage's settings from a pipeline file's [smooth] table, the command line winning:
/// the shipped pipelines/default.toml runs as is; a file asking for Savitzky-Golay with a window
/// of 15 is obeyed (the summary says so) unless --method overrides it; an unknown key and a
/// negative noise are refused by name.
#[test]
fn settings_from_a_pipeline_file() {
    let dir = tempfile::tempdir().unwrap();
    let tracks = root().join("recordings/default/truth/tracks.csv");
    let out = dir.path().join("a/markers.csv");
    let shipped = root().join("pipelines/default.toml");
    ok(&[
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--pipeline",
        shipped.to_str().unwrap(),
    ]);
    let summary = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(p.with_file_name("markers.summary.json")).unwrap(),
        )
        .unwrap()
    };
    assert!(summary(&out)["method"]
        .as_str()
        .unwrap()
        .starts_with("Kalman/RTS"));
    let file = dir.path().join("sg.toml");
    std::fs::write(
        &file,
        "[smooth]\nmethod = \"savgol\"\nwindow = 15\norder = 3\n\n[other_stage]\nanything = 1\n",
    )
    .unwrap();
    let out_b = dir.path().join("b/markers.csv");
    ok(&[
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        out_b.to_str().unwrap(),
        "--pipeline",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        summary(&out_b)["method"],
        "Savitzky-Golay, window 15, order 3"
    );
    let out_c = dir.path().join("c/markers.csv");
    ok(&[
        "smooth",
        "--tracks",
        tracks.to_str().unwrap(),
        "--out",
        out_c.to_str().unwrap(),
        "--pipeline",
        file.to_str().unwrap(),
        "--method",
        "rts",
    ]);
    assert!(summary(&out_c)["method"]
        .as_str()
        .unwrap()
        .starts_with("Kalman/RTS"));
    for (text, needle) in [
        ("[smooth]\nwindw = 15\n", "unknown field `windw`"),
        (
            "[smooth]\nnoise_m = -1.0\n",
            "noise_m -1 must be a positive number",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let bad = dir.path().join("d/markers.csv");
        let res = flexbench(&[
            "smooth",
            "--tracks",
            tracks.to_str().unwrap(),
            "--out",
            bad.to_str().unwrap(),
            "--pipeline",
            file.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(
            !res.status.success() && err.contains(needle) && !err.contains("panicked"),
            "{err}"
        );
        assert!(!bad.exists());
    }
}
