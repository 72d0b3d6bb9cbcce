//! Helpers shared by the end-to-end tests: run the real `flexbench` binary, read CSV tables.

#![allow(dead_code)]

pub mod cdp;
pub mod gauss;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test")).join("../..")
}

/// Run the flexbench binary with `args`.
pub fn flexbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flexbench"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the flexbench binary runs")
}

/// Run and require success, returning stdout.
pub fn ok(args: &[&str]) -> String {
    let out = flexbench(args);
    assert!(
        out.status.success(),
        "flexbench {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A CSV table as columns of text, by header name.
pub fn read_csv(path: &Path) -> HashMap<String, Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(|s| s.to_string())
        .collect();
    let mut cols: HashMap<String, Vec<String>> =
        header.iter().map(|h| (h.clone(), Vec::new())).collect();
    for line in lines {
        for (h, v) in header.iter().zip(line.split(',')) {
            if let Some(c) = cols.get_mut(h) {
                c.push(v.to_string())
            }
        }
    }
    cols
}

/// A numeric column (empty cells as NaN).
pub fn num(cols: &HashMap<String, Vec<String>>, name: &str) -> Vec<f64> {
    cols.get(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .iter()
        .map(|s| s.parse().unwrap_or(f64::NAN))
        .collect()
}

/// Simulate the default bench once per test binary into a directory kept for the run.
pub fn simulated_default_bench(dir: &Path) -> PathBuf {
    simulate_bench(dir, "sim", "2", "1000", "3")
}

/// `flexbench simulate` of the default bench into `dir/name`: `duration` s recorded at `rate` Hz
/// after `settle` s; the output directory.
pub fn simulate_bench(dir: &Path, name: &str, duration: &str, rate: &str, settle: &str) -> PathBuf {
    let out = dir.join(name);
    simulate_mechanism(
        Path::new("mechanisms/wind-pump.toml"),
        duration,
        rate,
        settle,
        &out,
    );
    out
}

/// `flexbench simulate` of the mechanism file `mechanism` into `out`: `duration` s recorded at
/// `rate` Hz after `settle` s.
pub fn simulate_mechanism(mechanism: &Path, duration: &str, rate: &str, settle: &str, out: &Path) {
    ok(&[
        "simulate",
        "--mechanism",
        mechanism.to_str().expect("a UTF-8 path"),
        "--duration",
        duration,
        "--rate",
        rate,
        "--settle",
        settle,
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ]);
}

/// The tracks table at `path` (contract CSV) with Gaussian noise of `sigma` metres added to x
/// and y (Box-Muller on the fixed xorshift sequence of `seed`, so the same every run), the
/// positions then multiplied by `scale` (1e3 writes millimetres), the rows for which
/// `drop(marker, frame)` holds left out (a gap).
pub fn noisy_tracks(
    path: &Path,
    sigma: f64,
    seed: u64,
    scale: f64,
    drop: &dyn Fn(&str, usize) -> bool,
) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let cols: Vec<&str> = header.split(',').collect();
    let pos = |n: &str| {
        cols.iter()
            .position(|c| *c == n)
            .unwrap_or_else(|| panic!("no column {n}"))
    };
    let (ifr, im, ix, iy) = (pos("frame"), pos("marker"), pos("x"), pos("y"));
    let mut g = gauss::Gauss::new(seed);
    let mut out = vec![header.to_string()];
    for l in lines {
        let mut f: Vec<String> = l.split(',').map(|s| s.to_string()).collect();
        let frame: usize = f[ifr].parse().expect("a frame number");
        if drop(&f[im], frame) {
            continue;
        }
        for i in [ix, iy] {
            f[i] = format!(
                "{}",
                (f[i].parse::<f64>().expect("a position") + sigma * g.next()) * scale
            );
        }
        out.push(f.join(","));
    }
    out.join("\n")
}

/// Calibrate from a recording folder's views, its board in the lever's plane and its clicks (the
/// 9 x 6 board of 30 mm squares) into `out`, through the binary.
pub fn calibrate_recording(rec: &Path, out: &Path) {
    let s = |p: &Path| p.to_str().unwrap().to_string();
    ok(&[
        "calibrate",
        "--views",
        &s(&rec.join("views")),
        "--board",
        "9x6",
        "--square",
        "0.03",
        "--plane-view",
        &s(&rec.join("plane-view.png")),
        "--clicks",
        &s(&rec.join("clicks.toml")),
        "--out",
        &s(out),
    ]);
}

/// The flags of a headless Chromium on a closed machine (no background networking, no
/// sandbox as root, a fresh profile given by the caller).
pub const CHROMIUM_FLAGS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// The shipped recording's camera file (recordings/default/camera.toml) written to `path` with
/// the keys of `set` given new values (`("fps", "120.0")`: the whole `fps = ...` line
/// replaced), its `[[occlusion]]` tables left out when `drop_occlusion`, and `append` (more
/// tables) at its end.
pub fn camera_file(path: &Path, set: &[(&str, &str)], drop_occlusion: bool, append: &str) {
    let text = std::fs::read_to_string(root().join("recordings/default/camera.toml"))
        .expect("the shipped camera file");
    let mut out = String::new();
    let mut skip = false;
    for line in text.lines() {
        skip = match line.trim() {
            l if l.starts_with("[[occlusion]]") => drop_occlusion,
            l if l.starts_with('[') => false,
            _ => skip,
        };
        let key = line.split('=').next().unwrap_or("").trim();
        if !skip {
            match set.iter().find(|(k, _)| *k == key) {
                Some((k, v)) => out.push_str(&format!("{k} = {v}")),
                None => out.push_str(line),
            }
            out.push('\n');
        }
    }
    out.push_str(append);
    std::fs::write(path, out).expect("a writable camera file");
}

/// `flexbench render` of the `mechanism` filmed as the camera file `camera` says, into `out`.
pub fn render(mechanism: &Path, camera: &Path, out: &Path) {
    ok(&[
        "render",
        "--mechanism",
        mechanism.to_str().expect("a UTF-8 path"),
        "--camera",
        camera.to_str().expect("a UTF-8 path"),
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ]);
}

/// A command's output as a user reads it: standard output, then standard error (warnings).
pub fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The wind-pump bench's mechanism file, from the repository's root.
const BENCH: &str = "mechanisms/wind-pump.toml";

/// `flexbench process` of `tracks` for the wind-pump bench into `out`, with `extra` arguments;
/// its standard output (it must succeed).
pub fn process(tracks: &Path, out: &Path, extra: &[&str]) -> String {
    ok(&process_args(tracks, Path::new(BENCH), out, extra))
}

/// [`process`], its standard output and then its standard error (its warnings).
pub fn process_said(tracks: &Path, out: &Path, extra: &[&str]) -> String {
    process_mechanism_said(tracks, Path::new(BENCH), out, extra)
}

/// `flexbench process` of `tracks` for the mechanism file `mechanism` into `out`, with `extra`
/// arguments: what it said (standard output, then its warnings); it must succeed.
pub fn process_mechanism_said(
    tracks: &Path,
    mechanism: &Path,
    out: &Path,
    extra: &[&str],
) -> String {
    let args = process_args(tracks, mechanism, out, extra);
    let o = flexbench(&args);
    let text = said(&o);
    assert!(o.status.success(), "process {args:?} failed: {text}");
    text
}

/// The arguments of `flexbench process`.
fn process_args<'a>(
    tracks: &'a Path,
    mechanism: &'a Path,
    out: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "process",
        "--tracks",
        tracks.to_str().expect("a UTF-8 path"),
        "--mechanism",
        mechanism.to_str().expect("a UTF-8 path"),
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ];
    args.extend(extra);
    args
}

/// The RMS of the vector error of joint `joint`'s force (columns `<joint>_x`, `<joint>_y`) of
/// `got` against `truth`, over the samples `got` has, as a share of the true force's peak; and
/// that peak (N).
pub fn force_error(
    truth: &HashMap<String, Vec<String>>,
    got: &HashMap<String, Vec<String>>,
    joint: &str,
) -> (f64, f64) {
    let (x, y) = (format!("{joint}_x"), format!("{joint}_y"));
    let (tx, ty, gx, gy) = (num(truth, &x), num(truth, &y), num(got, &x), num(got, &y));
    let peak = tx
        .iter()
        .zip(&ty)
        .map(|(a, b)| a.hypot(*b))
        .fold(0.0, f64::max);
    let e2: Vec<f64> = (0..tx.len())
        .filter(|&i| gx[i].is_finite())
        .map(|i| (tx[i] - gx[i]).powi(2) + (ty[i] - gy[i]).powi(2))
        .collect();
    (
        (e2.iter().sum::<f64>() / e2.len() as f64).sqrt() / peak,
        peak,
    )
}

/// Tracked samples against a rendering's truth (`truth/tracks.csv`): how many, their RMS
/// distance from the truth's pixel (px), and those more than 1 px off with whether `flags`
/// holds them.
pub struct AgainstTruth {
    /// Samples tracked.
    pub samples: usize,
    /// Samples in the truth.
    pub truth: usize,
    /// RMS distance from the truth, px.
    pub rms_px: f64,
    /// RMS distance from the truth of the samples not flagged (those `process` keeps), px.
    pub kept_rms_px: f64,
    /// (frame, marker), distance (px) and whether flagged, for every sample more than 1 px off.
    pub bad: Vec<((String, String), f64, bool)>,
    /// Each marker's samples not flagged: their sum of squared distances (px^2) and count.
    pub kept_by_marker: std::collections::BTreeMap<String, (f64, usize)>,
}

impl AgainstTruth {
    /// RMS distance from the truth of the samples not flagged of the markers `names`, px.
    pub fn kept_rms_of(&self, names: &[&str]) -> f64 {
        let (s, n) = names
            .iter()
            .filter_map(|m| self.kept_by_marker.get(*m))
            .fold((0.0, 0), |(s, n), (a, b)| (s + a, n + b));
        (s / n.max(1) as f64).sqrt()
    }
}

/// The tracks at `tracks` and their flags at `flags` against the truth at `truth`.
pub fn against_truth(truth: &Path, tracks: &Path, flags: &Path) -> AgainstTruth {
    let want = read_csv(truth);
    let at: HashMap<(String, String), usize> = (0..want["frame"].len())
        .map(|i| ((want["frame"][i].clone(), want["marker"][i].clone()), i))
        .collect();
    let f = read_csv(flags);
    let flagged: std::collections::BTreeSet<(String, String)> = (0..f["frame"].len())
        .map(|i| (f["frame"][i].clone(), f["marker"][i].clone()))
        .collect();
    let got = read_csv(tracks);
    let (gu, gv, tu, tv) = (
        num(&got, "u"),
        num(&got, "v"),
        num(&want, "u"),
        num(&want, "v"),
    );
    let (mut sum2, mut bad) = (0.0, Vec::new());
    let (mut kept2, mut kept) = (0.0, 0usize);
    let mut kept_by_marker = std::collections::BTreeMap::new();
    for i in 0..got["frame"].len() {
        let key = (got["frame"][i].clone(), got["marker"][i].clone());
        let j = at[&key];
        let d = (gu[i] - tu[j]).hypot(gv[i] - tv[j]);
        sum2 += d * d;
        if !flagged.contains(&key) {
            (kept2, kept) = (kept2 + d * d, kept + 1);
            let e = kept_by_marker.entry(key.1.clone()).or_insert((0.0, 0));
            *e = (e.0 + d * d, e.1 + 1);
        }
        if d > 1.0 {
            let f = flagged.contains(&key);
            bad.push((key, d, f));
        }
    }
    let samples = got["frame"].len();
    AgainstTruth {
        samples,
        truth: want["frame"].len(),
        rms_px: (sum2 / samples.max(1) as f64).sqrt(),
        kept_rms_px: (kept2 / kept.max(1) as f64).sqrt(),
        bad,
        kept_by_marker,
    }
}

/// The forces at `joints` of `forces` against the truth's, each within `share` RMS of its peak
/// (printed with `what`).
pub fn forces_within(truth: &Path, forces: &Path, joints: &[&str], share: f64, what: &str) {
    let (tf, pf) = (read_csv(truth), read_csv(forces));
    assert_eq!(tf["t"].len(), pf["t"].len());
    for joint in joints {
        let (rel, peak) = force_error(&tf, &pf, joint);
        eprintln!(
            "{what}: {joint} {:.2} % RMS of its peak {peak:.1} N",
            100.0 * rel
        );
        assert!(rel < share, "{what}: {joint}: {:.2} %", 100.0 * rel);
    }
}

/// A reproducible standard normal sequence (a 64-bit linear congruential generator through
/// Box-Muller).
pub struct Noise(pub u64);

impl Noise {
    /// A uniform draw in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// A standard normal draw.
    pub fn gauss(&mut self) -> f64 {
        let (a, b) = (self.uniform(), self.uniform());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
}

/// The four-bar's tracks of the rendering `rec` (their flags in `flags.csv` beside them)
/// checked as a user's would be against the truth: at least 98 % of the truth's samples, those
/// not flagged (the samples `process` keeps) within `rms_px` RMS of it, every sample more than
/// 1 px off flagged; then processed with `mech` (the
/// flagged samples left out) into `out`, the forces at the four joints within 3 % RMS of their
/// peaks. `what` names the case in the printed figures.
pub fn four_bar_checked(
    rec: &Path,
    tracks: &Path,
    mech: &Path,
    out: &Path,
    rms_px: f64,
    what: &str,
) {
    let flags = tracks.with_file_name("flags.csv");
    let a = against_truth(&rec.join("truth/tracks.csv"), tracks, &flags);
    eprintln!(
        "{what}: {} samples of {}, {:.3} px RMS ({:.3} px those not flagged), more than 1 px: {:?}",
        a.samples, a.truth, a.rms_px, a.kept_rms_px, a.bad
    );
    let table = read_csv(&flags);
    let mut by_reason = std::collections::BTreeMap::new();
    for (i, r) in table.get("reason").into_iter().flatten().enumerate() {
        by_reason
            .entry(r.clone())
            .or_insert_with(Vec::new)
            .push(format!("{} {}", table["frame"][i], table["marker"][i]));
    }
    eprintln!("{what}: flags by reason {by_reason:?}");
    assert!(a.samples * 100 >= 98 * a.truth, "{} samples", a.samples);
    assert!(a.kept_rms_px < rms_px, "{} px RMS", a.kept_rms_px);
    assert!(
        a.bad.iter().all(|b| b.2),
        "unflagged bad samples: {:?}",
        a.bad
    );
    let s = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    #[rustfmt::skip]
    ok(&["process", "--tracks", &s(tracks), "--flags", &s(&flags), "--mechanism", &s(mech), "--out", &s(out), "--refine-horizontal"]);
    let joints = ["O2", "A", "B", "O4"];
    forces_within(
        &rec.join("truth/forces.csv"),
        &out.join("forces.csv"),
        &joints,
        0.03,
        what,
    );
}

/// `flexbench track` of the rendering `rec` (its video, its own camera `truth/camera.yaml`)
/// with the mechanism `mech` into the tracks table `out`, with `extra` arguments.
pub fn track_rendering(rec: &Path, mech: &Path, out: &Path, extra: &[&str]) -> Output {
    let s = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    let (video, cal, m, o) = (
        s(&rec.join("video.mp4")),
        s(&rec.join("truth/camera.yaml")),
        s(mech),
        s(out),
    );
    let mut args = vec!["track", "--video", &video, "--calibration", &cal];
    args.extend(["--mechanism", &m, "--out", &o]);
    args.extend_from_slice(extra);
    flexbench(&args)
}

/// The shipped four-bar recording's camera file (`recordings/four-bar/camera.toml`) with three
/// board views and H.264 at a phone's 18 Mbit/s, each of `replace` applied, written to `path`.
pub fn four_bar_camera(path: &Path, replace: &[(&str, &str)]) {
    let mut text = std::fs::read_to_string(root().join("recordings/four-bar/camera.toml"))
        .expect("the four-bar's camera file")
        .replace("views = 15", "views = 3")
        .replace("codec = \"h264\"", "codec = \"h264\"\nbitrate_mbps = 18.0");
    for (from, to) in replace {
        text = text.replace(from, to);
    }
    std::fs::write(path, text).expect("a writable camera file");
}

/// The four-bar of `mechanisms/four-bar.toml` with each of `edit` applied and `keys(marker)`
/// (lines of the mechanism file's keys) added to each marker's table, written to
/// `dir/four-bar-<name>.toml`.
pub fn four_bar_with(
    dir: &Path,
    name: &str,
    edit: &[(&str, &str)],
    keys: &dyn Fn(&str) -> String,
) -> PathBuf {
    let mut text = std::fs::read_to_string(root().join("mechanisms/four-bar.toml"))
        .expect("the four-bar's mechanism file");
    for (from, to) in edit {
        text = text.replace(from, to);
    }
    for marker in ["K1", "K2", "K3", "R1", "R2"] {
        text = text.replacen(
            &format!("name = \"{marker}\"\n"),
            &format!("name = \"{marker}\"\n{}\n", keys(marker)),
            1,
        );
    }
    let path = dir.join(format!("four-bar-{name}.toml"));
    std::fs::write(&path, text).expect("a writable mechanism file");
    path
}

/// Render the four-bar `mech` with the camera file `cam` into `dir/<name>` and track it with
/// the rendering's own camera into `dir/<name>.csv` (its flags beside it), the command's words
/// printed: the rendering's folder and the tracks table.
pub fn render_and_track(dir: &Path, name: &str, mech: &Path, cam: &Path) -> (PathBuf, PathBuf) {
    let rec = dir.join(name);
    render(mech, cam, &rec);
    let tracks = dir.join("tracks.csv");
    let o = track_rendering(&rec, mech, &tracks, &[]);
    assert!(o.status.success(), "{}", said(&o));
    eprintln!("{}", said(&o));
    (rec, tracks)
}
