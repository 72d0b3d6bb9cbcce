//! Bad input gets a clear error: for each case, the real binary exits non-zero, names the
//! problem (and the key, column, row or marker) in its message, and does not panic.

use crate::common;

use std::path::{Path, PathBuf};

use common::{flexbench, ok, root};

fn expect_error(args: &[&str], needles: &[&str]) -> String {
    let out = flexbench(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "flexbench {args:?} should fail; stdout:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "panic for {args:?}:\n{err}");
    for n in needles {
        assert!(err.contains(n), "message for {args:?} lacks '{n}':\n{err}");
    }
    err
}

fn bench_text() -> String {
    std::fs::read_to_string(common::root().join("mechanisms/wind-pump.toml")).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn check_mechanism(text: &str, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "m.toml", text);
    expect_error(&["check", "--mechanism", p.to_str().unwrap()], needles);
}

#[test]
fn mechanism_missing_key() {
    let t = bench_text().replace("l2 = 0.45 ", "");
    check_mechanism(&t, &["key 'l2'", "missing", "lever length"]);
}

#[test]
fn mechanism_unknown_key() {
    check_mechanism(
        &format!("{}\nl9 = 1.0\n", bench_text()),
        &["unknown field `l9`"],
    );
}

#[test]
fn mechanism_negative_mass() {
    check_mechanism(
        &bench_text().replace("m1 = 4.0 ", "m1 = -4.0 "),
        &["key 'm1'", "-4", "positive"],
    );
}

#[test]
fn mechanism_zero_length() {
    check_mechanism(
        &bench_text().replace("l3 = 0.15 ", "l3 = 0.0 "),
        &["key 'l3'", "positive"],
    );
}

#[test]
fn mechanism_wrong_type() {
    check_mechanism(
        &bench_text().replace("l1 = 0.0667", "l1 = \"long\""),
        &["l1", "invalid type"],
    );
}

#[test]
fn mechanism_not_toml() {
    check_mechanism("l1 = = 3\n[[[", &["mechanism file"]);
}

#[test]
fn mechanism_file_missing() {
    expect_error(
        &["check", "--mechanism", "no/such/file.toml"],
        &["no/such/file.toml", "cannot be read"],
    );
}

#[test]
fn mechanism_cannot_assemble_at_all() {
    // A lever far too short to reach the rocker.
    check_mechanism(
        &bench_text().replace("l2 = 0.45 ", "l2 = 0.10 "),
        &["cannot be assembled", "B and D"],
    );
}

#[test]
fn mechanism_cannot_follow_a_whole_turn() {
    // A crank so long that the lever and rocker cannot follow it all the way round.
    // At phi1 = 0 it assembles (B and D 0.300 m apart, the lever and rocker bridge 0.297 m at
    // least) but near 20 deg B comes within 0.286 m of D.
    check_mechanism(
        &bench_text().replace("l1 = 0.0667", "l1 = 0.16"),
        &["whole turn of the crank angle"],
    );
}

#[test]
fn joint_naming_a_missing_point() {
    let t = std::fs::read_to_string(common::root().join("mechanisms/slider-crank.toml"))
        .unwrap()
        .replace("second = \"rod:P\"", "second = \"rod:Q\"");
    check_mechanism(
        &t,
        &[
            "joints[2] (P).second",
            "no point 'Q'",
            "its points: A, M, P",
        ],
    );
}

#[test]
fn joint_naming_a_missing_body() {
    let t = std::fs::read_to_string(common::root().join("mechanisms/slider-crank.toml"))
        .unwrap()
        .replace("first = \"crank:A\"", "first = \"crnk:A\"");
    check_mechanism(&t, &["no body called 'crnk'"]);
}

#[test]
fn general_form_without_actuators() {
    let t = std::fs::read_to_string(common::root().join("mechanisms/four-bar.toml"))
        .unwrap()
        .replace("actuator = true", "actuator = false");
    check_mechanism(&t, &["as many actuators", "degrees of freedom"]);
}

#[test]
fn simulate_with_impossible_settings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    expect_error(
        &[
            "simulate",
            "--mechanism",
            "mechanisms/wind-pump.toml",
            "--duration=-1",
            "--out",
            out.to_str().unwrap(),
        ],
        &["positive duration"],
    );
    assert!(!out.exists(), "nothing written");
}

/// The tracks cases share one simulation.
#[test]
fn bad_tracks() {
    let dir = tempfile::tempdir().unwrap();
    let sim = dir.path().join("sim");
    ok(&[
        "simulate",
        "--mechanism",
        "mechanisms/wind-pump.toml",
        "--duration",
        "0.5",
        "--rate",
        "500",
        "--settle",
        "1",
        "--out",
        sim.to_str().unwrap(),
    ]);
    let good = std::fs::read_to_string(sim.join("tracks.csv")).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let out = dir.path().join("out");
    let run = |name: &str, text: &str, needles: &[&str]| {
        let p = write(dir.path(), name, text);
        expect_error(
            &[
                "process",
                "--tracks",
                p.to_str().unwrap(),
                "--mechanism",
                "mechanisms/wind-pump.toml",
                "--out",
                out.to_str().unwrap(),
            ],
            needles,
        );
    };
    // NaN in a position.
    let mut nan = lines.clone();
    let iy = lines[0].split(',').position(|c| c == "y").unwrap();
    let row7 = lines[7]
        .split(',')
        .enumerate()
        .map(|(i, f)| if i == iy { "NaN" } else { f })
        .collect::<Vec<_>>()
        .join(",");
    nan[7] = &row7;
    run("nan.csv", &nan.join("\n"), &["row 7", "NaN", "'y'"]);
    // Unsorted time: two frames exchanged.
    let mut unsorted = lines.clone();
    unsorted.swap(1, 6);
    run("unsorted.csv", &unsorted.join("\n"), &["time", "sort"]);
    // Wrong marker count: M5 dropped.
    let four: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.contains(",M5,"))
        .collect();
    run(
        "four.csv",
        &four.join("\n"),
        &["wrong markers", "never seen in the tracks: M5"],
    );
    // A marker the mechanism does not have.
    run(
        "six.csv",
        &good.replace(",M5,", ",M6,"),
        &["not in the mechanism: M6"],
    );
    // Swapped labels.
    let swapped = good
        .replace(",M2,", ",TMP,")
        .replace(",M4,", ",M2,")
        .replace(",TMP,", ",M4,");
    run("swapped.csv", &swapped, &["M2 and M4 appear swapped"]);
    // Not a number.
    let mut words = lines.clone();
    let bad_row = lines[3].replacen("0.", "zero.", 1);
    words[3] = &bad_row;
    run("words.csv", &words.join("\n"), &["is not a number"]);
    // Missing column.
    run(
        "nocol.csv",
        "frame,t,marker,x\n0,0.0,M1,0.1\n",
        &["no column 'y'"],
    );
    // Empty file and header only.
    run("empty.csv", "", &["empty"]);
    run("header.csv", "frame,t,marker,u,v,x,y\n", &["no rows"]);
    // Truncated Parquet.
    let pq = std::fs::read(sim.join("tracks.parquet")).unwrap();
    let p = dir.path().join("cut.parquet");
    std::fs::write(&p, &pq[..pq.len() / 2]).unwrap();
    expect_error(
        &[
            "process",
            "--tracks",
            p.to_str().unwrap(),
            "--mechanism",
            "mechanisms/wind-pump.toml",
            "--out",
            out.to_str().unwrap(),
        ],
        &["not a readable Parquet"],
    );
    // Unknown extension, missing file.
    run("tracks.xlsx", &good, &["unknown table format"]);
    expect_error(
        &[
            "process",
            "--tracks",
            "nope.csv",
            "--mechanism",
            "mechanisms/wind-pump.toml",
            "--out",
            out.to_str().unwrap(),
        ],
        &["no such file"],
    );
    // An output directory that cannot be created (under a regular file).
    let blocker = write(dir.path(), "file", "x");
    let under = blocker.join("out");
    expect_error(
        &[
            "process",
            "--tracks",
            sim.join("tracks.csv").to_str().unwrap(),
            "--mechanism",
            "mechanisms/wind-pump.toml",
            "--out",
            under.to_str().unwrap(),
        ],
        &["cannot create the output directory"],
    );
    // A window longer than the recording keeps the samples out, and says so.
    expect_error(
        &[
            "process",
            "--tracks",
            sim.join("tracks.csv").to_str().unwrap(),
            "--mechanism",
            "mechanisms/wind-pump.toml",
            "--out",
            out.to_str().unwrap(),
            "--window",
            "4",
        ],
        &["window must be odd"],
    );
    assert!(!out.exists(), "no failed run wrote anything");
}

/// The data disagree with the geometry: the bench filmed has a crank 5 mm longer than the file
/// says. The run completes but says so, with the size.
#[test]
fn crank_length_disagreement_is_reported_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let real = write(
        dir.path(),
        "real.toml",
        &bench_text().replace("l1 = 0.0667", "l1 = 0.0717"),
    );
    let sim = dir.path().join("sim");
    ok(&[
        "simulate",
        "--mechanism",
        real.to_str().unwrap(),
        "--duration",
        "0.5",
        "--rate",
        "500",
        "--settle",
        "1",
        "--out",
        sim.to_str().unwrap(),
    ]);
    let out = dir.path().join("out");
    let res = flexbench(&[
        "process",
        "--tracks",
        sim.join("tracks.csv").to_str().unwrap(),
        "--mechanism",
        "mechanisms/wind-pump.toml",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(
        err.contains("joint B") && err.contains("off its circle"),
        "{err}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let circle = &summary["fit"]["pin_circle"][0];
    let median = circle[1].as_f64().unwrap();
    assert!(
        (median - 0.005).abs() < 2e-4,
        "B is 5 mm off its circle, measured {median}"
    );
}

/// Calibration: a board that is never found, a folder that does not exist or holds no image,
/// an impossible board; each a clear error, and no calibration file written.
#[test]
fn calibration_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal.yaml");
    let views = common::root().join("calibration/opencv-left-chessboard");
    let v = views.to_str().unwrap();
    let o = out.to_str().unwrap();
    expect_error(
        &[
            "calibrate",
            "--views",
            v,
            "--board",
            "7x7",
            "--square",
            "0.025",
            "--out",
            o,
        ],
        &[
            "7x7 chessboard was found in none of the 13 views",
            "check --board",
        ],
    );
    expect_error(
        &[
            "calibrate",
            "--views",
            "no/such/dir",
            "--board",
            "9x6",
            "--square",
            "0.025",
            "--out",
            o,
        ],
        &["no/such/dir", "cannot list the views"],
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "no images here").unwrap();
    expect_error(
        &[
            "calibrate",
            "--views",
            empty.to_str().unwrap(),
            "--board",
            "9x6",
            "--square",
            "0.025",
            "--out",
            o,
        ],
        &["no image files"],
    );
    expect_error(
        &[
            "calibrate",
            "--views",
            v,
            "--board",
            "nine",
            "--square",
            "0.025",
            "--out",
            o,
        ],
        &["'nine'", "--board", "COLSxROWS"],
    );
    expect_error(
        &[
            "calibrate",
            "--views",
            v,
            "--board",
            "9x6",
            "--square=-1",
            "--out",
            o,
        ],
        &["[calibrate] square = -1 (--square)", "a positive number"],
    );
    // A folder with two good views and an unreadable one: too few views, each reason given.
    let few = dir.path().join("few");
    std::fs::create_dir_all(&few).unwrap();
    for f in ["left01.jpg", "left02.jpg"] {
        std::fs::copy(views.join(f), few.join(f)).unwrap();
    }
    std::fs::write(few.join("broken.png"), b"\x89PNG truncated").unwrap();
    expect_error(
        &[
            "calibrate",
            "--views",
            few.to_str().unwrap(),
            "--board",
            "9x6",
            "--square",
            "0.025",
            "--out",
            o,
        ],
        &[
            "only 2 usable view(s)",
            "broken.png: cannot be read as an image",
        ],
    );
    assert!(!out.exists(), "no calibration written by a failed run");
}

/// Video: a file that is not a video, a truncated one, a missing one, a marker count that does
/// not match the blobs seen, a calibration without the bench plane or without its camera
/// matrix; each a clear error, and no tracks written.
#[test]
fn video_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let rec = common::root().join("recordings/default");
    let cal = rec.join("truth/camera.yaml");
    let c = cal.to_str().unwrap();
    let out = dir.path().join("tracks.csv");
    let o = out.to_str().unwrap();
    let text = write(dir.path(), "notes.mp4", "this is not a video");
    expect_error(
        &[
            "track",
            "--video",
            text.to_str().unwrap(),
            "--calibration",
            c,
            "--out",
            o,
        ],
        &["notes.mp4", "cannot be"],
    );
    let bytes = std::fs::read(rec.join("video.mp4")).unwrap();
    let cut = dir.path().join("cut.mp4");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    expect_error(
        &[
            "track",
            "--video",
            cut.to_str().unwrap(),
            "--calibration",
            c,
            "--out",
            o,
        ],
        &["cut.mp4"],
    );
    expect_error(
        &[
            "track",
            "--video",
            "no/such.mp4",
            "--calibration",
            c,
            "--out",
            o,
        ],
        &["no such file"],
    );
    let video = rec.join("video.mp4");
    let v = video.to_str().unwrap();
    expect_error(
        &[
            "track",
            "--video",
            v,
            "--calibration",
            c,
            "--out",
            o,
            "--markers",
            "M1,M2,M3,M4",
        ],
        &["more bright discs lie on the lever's line than the 4 markers named"],
    );
    expect_error(
        &[
            "track",
            "--video",
            v,
            "--calibration",
            c,
            "--out",
            o,
            "--markers",
            "M1,M2,M3,M4,M5,M6",
        ],
        &["the 6 markers were never found"],
    );
    // A calibration of intrinsics only, and one that lost its camera matrix.
    let full = std::fs::read_to_string(&cal).unwrap();
    let no_plane: String = full.split("bench_homography").next().unwrap().to_string();
    let np = write(dir.path(), "no-plane.yaml", &no_plane);
    expect_error(
        &[
            "track",
            "--video",
            v,
            "--calibration",
            np.to_str().unwrap(),
            "--out",
            o,
        ],
        &["bench_homography", "--plane-view"],
    );
    let start = full.find("camera_matrix").unwrap();
    let end = full.find("distortion_coefficients").unwrap();
    let no_k = write(
        dir.path(),
        "no-k.yaml",
        &format!("{}{}", &full[..start], &full[end..]),
    );
    expect_error(
        &[
            "track",
            "--video",
            v,
            "--calibration",
            no_k.to_str().unwrap(),
            "--out",
            o,
        ],
        &["'camera_matrix' is missing"],
    );
    expect_error(
        &[
            "track",
            "--video",
            v,
            "--calibration",
            c,
            "--out",
            dir.path().join("t.xlsx").to_str().unwrap(),
        ],
        &[".csv or .parquet"],
    );
    assert!(!out.exists(), "no tracks written by a failed run");
}

/// `flexbench run` refuses a pipeline file with a wrong key, a missing mechanism, an impossible
/// setting or a recording that lacks its calibration: by name, before any stage runs (the output
/// directory gets no stage folder).
#[test]
fn run_bad_pipeline_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::root();
    let mech = root.join("mechanisms/wind-pump.toml");
    let rec = root.join("recordings/default");
    let head = format!(
        "[run]\nmechanism = \"{}\"\nrecording = \"{}\"\n[calibrate]\nsquare = 0.03\n",
        mech.display(),
        rec.display()
    );
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let p = write(
        dir.path(),
        "typo.toml",
        &format!("{head}[fem]\nelement_count = 4\n"),
    );
    expect_error(
        &["run", p.to_str().unwrap(), "--out", o],
        &["typo.toml", "element_count", "elements"],
    );
    let p = write(
        dir.path(),
        "table.toml",
        &format!("{head}[fems]\nelements = 4\n"),
    );
    expect_error(&["run", p.to_str().unwrap(), "--out", o], &["fems"]);
    let p = write(
        dir.path(),
        "nomech.toml",
        &format!("[run]\nrecording = \"{}\"\n", rec.display()),
    );
    expect_error(
        &["run", p.to_str().unwrap(), "--out", o],
        &["[run] mechanism is missing"],
    );
    let p = write(
        dir.path(),
        "element.toml",
        &format!("{head}[fem]\nelement = \"cubic\"\n"),
    );
    expect_error(
        &["run", p.to_str().unwrap(), "--out", o],
        &[
            "element = \"cubic\"",
            "not a lever element",
            "quintic or frame",
        ],
    );
    let p = write(
        dir.path(),
        "square.toml",
        &format!(
            "[run]\nmechanism = \"{}\"\nrecording = \"{}\"\n",
            mech.display(),
            rec.display()
        ),
    );
    expect_error(
        &["run", p.to_str().unwrap(), "--out", o],
        &["[calibrate] square (--square) is missing"],
    );
    let p = write(
        dir.path(),
        "damping.toml",
        &format!("{head}[fem]\ndamping = 1.5\n"),
    );
    expect_error(
        &["run", p.to_str().unwrap(), "--out", o],
        &["damping", "between 0 and 1"],
    );
    // No forced response is said as such, not by a damping of 0.
    let p = write(
        dir.path(),
        "no-damping.toml",
        &format!("{head}[fem]\ndamping = 0.0\n"),
    );
    expect_error(
        &["run", p.to_str().unwrap(), "--out", o],
        &["damping = 0", "response = false"],
    );
    // A recording folder with a video but no calibration.
    let bare = dir.path().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::copy(rec.join("video.mp4"), bare.join("video.mp4")).unwrap();
    let p = write(
        dir.path(),
        "bare.toml",
        &format!(
            "[run]\nmechanism = \"{}\"\nrecording = \"{}\"\n",
            mech.display(),
            bare.display()
        ),
    );
    expect_error(
        &["run", p.to_str().unwrap(), "--out", o],
        &["no calibration", "views/", "[inputs] calibration"],
    );
    expect_error(
        &["run", dir.path().join("absent.toml").to_str().unwrap()],
        &["absent.toml", "cannot be read"],
    );
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "no stage ran"
    );
}

/// A reader of flexbench's output that stops reading (`flexbench probe ... | head -0`): the
/// command ends quietly, no panic ("failed printing to stdout"), and the files it wrote are whole.
#[test]
fn closed_standard_output_is_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tracks.parquet");
    let video = root().join("recordings/default/video.mp4");
    let cal = root().join("recordings/default/truth/camera.yaml");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_flexbench"))
        .args([
            "track",
            "--video",
            video.to_str().unwrap(),
            "--calibration",
            cal.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is printed
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(o.status.code() != Some(101), "not a panic's exit code");
    // Whatever it managed to write is whole: the tracks table reads.
    if out.exists() {
        flexbench_tables::read_tracks(&out).unwrap();
    }
}
