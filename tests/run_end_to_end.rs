//! `flexbench run`: the whole chain from a video to the report, its stage keys (a rerun with
//! nothing changed does no work; a changed parameter reruns only the stages after it), byte-
//! identical outputs, the report in headless Chromium, a batch with a broken recording, and a
//! foreign wide tracks CSV.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{flexbench, read_csv, root};

/// A pipeline file for the shipped recording (or `recording`), with the horizontal not refined
/// (the refinement's scan is 85 % of a run's time; `make demo` runs it).
fn pipeline(dir: &Path, recording: Option<&Path>, extra: &str) -> PathBuf {
    let p = dir.join("pipeline.toml");
    let rec = recording
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root().join("recordings/default"));
    let text = format!(
        "[run]\nmechanism = \"{}\"\nrecording = \"{}\"\n\n[calibrate]\nboard = \"9x6\"\nsquare = 0.03\n\n[process]\nrefine_horizontal = false\n{extra}",
        root().join("mechanisms/wind-pump.toml").display(),
        rec.display()
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// Run and return the stages that ran, in order (from the printed lines "[k/n] stage ... ran").
fn run(pipeline: &Path, out: &Path) -> Vec<String> {
    run_on(pipeline, out, None)
}

/// [`run`] on `threads` threads (RAYON_NUM_THREADS, FLEXBENCH_THREADS unset), or the default.
fn run_on(pipeline: &Path, out: &Path, threads: Option<&str>) -> Vec<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flexbench"));
    cmd.args([
        "run",
        pipeline.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .current_dir(root())
    .env_remove("FLEXBENCH_THREADS")
    .env_remove("POLARS_MAX_THREADS");
    if let Some(n) = threads {
        cmd.env("RAYON_NUM_THREADS", n);
    }
    let o = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "run failed:\n{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // In the stages' order (their index): the overlay, run beside the fem and compare, ends
    // after them.
    let mut ran: Vec<(usize, String)> = text
        .lines()
        .filter(|l| l.trim_end().ends_with(" ran"))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let index = words.next()?.trim_start_matches('[').split('/').next()?;
            Some((index.parse().ok()?, words.next()?.to_string()))
        })
        .collect();
    ran.sort();
    ran.into_iter().map(|(_, name)| name).collect()
}

/// Every file under `dir` (relative path) with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(d: &Path, base: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push((
                    p.strip_prefix(base).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The shipped video to the report: every stage runs, the report names its inputs and holds
/// its figures; a rerun does no work; changing the FEM's modes reruns fem and report only (the
/// comparison does not read the FEM); two runs from nothing, on one thread and on two, write
/// the same bytes in every file; and the report loads in headless Chromium with every figure rendered.
#[test]
fn video_to_report_with_stage_keys_and_identical_reruns() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(dir.path(), None, "");
    let out = dir.path().join("out");
    let ran = run(&p, &out);
    assert_eq!(
        ran,
        [
            "calibrate",
            "track",
            "smooth",
            "process",
            "overlay",
            "fem",
            "compare",
            "report"
        ]
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    for input in [
        "video",
        "views",
        "plane_view",
        "clicks",
        "mechanism",
        "pipeline_file",
    ] {
        assert_eq!(
            manifest["inputs"][input]["sha256"].as_str().map(str::len),
            Some(64),
            "{input}"
        );
    }
    assert_eq!(manifest["seed"], 1, "the rendered recording's seed");
    assert_eq!(manifest["stages"].as_array().unwrap().len(), 8);
    let html = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    assert!(
        html.contains("data:image/svg+xml;base64,")
            && !html.contains("src=\"http")
            && !html.contains("src=\"file"),
        "figures inline, nothing fetched"
    );
    for fig in [
        "trajectories",
        "acceleration-field",
        "forces-cycle",
        "tracking-quality",
        "calibration-residuals",
    ] {
        assert!(
            out.join(format!("report/{fig}.svg")).exists()
                && out.join(format!("report/{fig}.figure.csv")).exists(),
            "{fig}"
        );
    }
    // The tracking table counts the occlusion of M3 (12 frames) as one gap of 12 frames.
    assert!(
        html.contains("<tr><td>M3</td><td>468</td><td>12</td><td>12</td>"),
        "M3's gap in the tracking table"
    );
    for f in ["tracks.trc", "tracks.c3d", "markers.trc", "markers.c3d"] {
        assert!(out.join("report").join(f).exists(), "{f}");
    }
    // The fitted mechanism's residual test ran, its table written and its result in words; with
    // the track stage's flags at most 0.5 % of the clean recording's samples are flagged
    // (measured: 5 by the track stage and 1 by the residual, 0.25 % of 2388).
    let rows = |f: &str| {
        std::fs::read_to_string(out.join(f))
            .unwrap()
            .lines()
            .count()
            - 1
    };
    let flagged = rows("track/flags.csv") + rows("process/fit_flags.csv");
    assert!(flagged * 200 <= 2388, "{flagged} samples flagged");
    assert!(
        html.contains("the fitted mechanism's residual test (at a false-alarm level of 1e-6"),
        "the residual test in the report"
    );
    // The overlay video decodes in OpenCV with every frame, and the report links it.
    let overlay = out.join("overlay/overlay.mp4");
    let probe = flexbench_vision::track::probe_video(&overlay, &Default::default()).unwrap();
    let source = flexbench_vision::track::probe_video(
        &root().join("recordings/default/video.mp4"),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(probe.frames, source.frames, "every frame in the overlay");
    let link = Path::new("..").join("overlay").join("overlay.mp4");
    assert!(
        html.contains(&format!("href=\"{}\"", link.display())),
        "the report links the overlay"
    );

    // Nothing changed: nothing runs.
    assert!(run(&p, &out).is_empty());
    // One FEM parameter changed: fem and the report only.
    let p2 = pipeline(dir.path(), None, "\n[fem]\nmodes = 4\n");
    assert_eq!(run(&p2, &out), ["fem", "report"]);
    let modal = read_csv(&out.join("fem/modal.csv"));
    assert_eq!(
        modal["mode"]
            .iter()
            .max_by_key(|m| m.parse::<i32>().unwrap())
            .unwrap(),
        "4"
    );

    // From nothing again, with the first file, on one thread and then on two
    // (RAYON_NUM_THREADS): the same bytes in every table, figure and page.
    let first = dir.path().join("first");
    let p = pipeline(dir.path(), None, "");
    run_on(&p, &out, Some("1"));
    std::fs::rename(&out, &first).unwrap();
    run_on(&p, &out, Some("2"));
    let (a, b) = (tree(&first), tree(&out));
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (fa, fb) in a.iter().zip(&b) {
        assert!(
            fa.1 == fb.1,
            "{} differs between two runs (one thread, then two)",
            fa.0
        );
    }
    for kind in [".csv", ".parquet", ".png", ".svg", ".html"] {
        assert!(
            a.iter().any(|f| f.0.ends_with(kind)),
            "the runs wrote {kind} files"
        );
    }

    // The report in headless Chromium: it loads, every figure decodes and renders, and a
    // screenshot is taken.
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let chromium = chromium.expect("headless Chromium is needed for the report test: run scripts/install-deps.sh (it installs Debian's chromium)");
    let page = format!("file://{}", out.join("report/report.html").display());
    let mut flags = common::CHROMIUM_FLAGS.to_vec();
    flags.push("--virtual-time-budget=20000");
    let profile = |n: &str| format!("--user-data-dir={}", dir.path().join(n).display());
    let dom = Command::new(chromium)
        .args(&flags)
        .arg(profile("p1"))
        .arg("--dump-dom")
        .arg(&page)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    let attr = |name: &str| -> usize {
        let k = dom
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("the page's load script did not run ({name} missing)"));
        dom[k + name.len() + 2..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (figures, rendered) = (attr("data-figures"), attr("data-rendered"));
    assert!(figures >= 12, "{figures} figures in the report");
    assert_eq!(rendered, figures, "every figure renders");
    // The overlay plays in the browser: a page with the video, its first frame's size and
    // duration read once it has loaded.
    let player = out.join("overlay/play.html");
    std::fs::write(&player, "<html><body><video id=\"v\" src=\"overlay.mp4\" muted preload=\"auto\"></video><script>var v=document.getElementById('v');v.addEventListener('loadeddata',function(){document.body.setAttribute('data-width',v.videoWidth);document.body.setAttribute('data-duration',v.duration);});</script></body></html>").unwrap();
    let dom = Command::new(chromium)
        .args(&flags)
        .arg(profile("p3"))
        .arg("--dump-dom")
        .arg(format!("file://{}", player.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("data-width=\"640\""),
        "the overlay plays in Chromium: {dom}"
    );
    let shot = dir.path().join("report.png");
    let o = Command::new(chromium)
        .args(&flags)
        .arg(profile("p2"))
        .args([
            "--hide-scrollbars",
            "--window-size=1200,3000",
            &format!("--screenshot={}", shot.display()),
            &page,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert!(
        png.len() > 50_000,
        "a screenshot with content: {} bytes",
        png.len()
    );
}

/// A foreign tracks table (the shipped recording's truth written as a wide CSV in mm, one row
/// per frame, NaN for gaps, DLTdv's column names, no time column) runs through the chain with
/// its unit, frame rate and marker names from the pipeline file, and the comparison finds the
/// simulated bench: every acceleration within 1 % NRMSE.
#[test]
#[allow(clippy::needless_range_loop)] // i is a row index into several columns of the CSV
fn wide_csv_from_another_tool_runs_to_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let truth = read_csv(&root().join("recordings/default/truth/tracks.csv"));
    let names = ["M1", "M2", "M3", "M4", "M5"];
    let frames: usize = truth["frame"]
        .iter()
        .map(|f| f.parse::<usize>().unwrap())
        .max()
        .unwrap()
        + 1;
    let mut grid = vec![vec![(f64::NAN, f64::NAN); names.len()]; frames];
    for i in 0..truth["frame"].len() {
        let (f, m) = (
            truth["frame"][i].parse::<usize>().unwrap(),
            names.iter().position(|n| *n == truth["marker"][i]).unwrap(),
        );
        if let (Ok(x), Ok(y)) = (truth["x"][i].parse::<f64>(), truth["y"][i].parse::<f64>()) {
            // A gap in M3 over frames 100-104.
            if !(m == 2 && (100..105).contains(&f)) {
                grid[f][m] = (x * 1e3, y * 1e3);
            }
        }
    }
    let mut text = (1..=5)
        .map(|k| format!("pt{k}_cam1_X,pt{k}_cam1_Y"))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    for row in &grid {
        text += &row
            .iter()
            .map(|(x, y)| format!("{x},{y}"))
            .collect::<Vec<_>>()
            .join(",");
        text += "\n";
    }
    let wide = dir.path().join("dlt.csv");
    std::fs::write(&wide, text).unwrap();
    let p = dir.path().join("pipeline.toml");
    std::fs::write(
        &p,
        format!(
            "[run]\nmechanism = \"{}\"\n\n[inputs]\ntracks = \"{}\"\ntracks_unit = \"mm\"\ntracks_fps = 240.0\ntracks_markers = [\"M1\", \"M2\", \"M3\", \"M4\", \"M5\"]\n\n[process]\nrefine_horizontal = false\n",
            root().join("mechanisms/wind-pump.toml").display(),
            wide.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    assert_eq!(
        run(&p, &out),
        ["track", "smooth", "process", "fem", "compare", "report"]
    );
    let tracks = read_csv(&out.join("track/tracks.csv"));
    let gaps = (0..tracks["marker"].len())
        .filter(|&i| tracks["marker"][i] == "M3" && tracks["x"][i].is_empty())
        .count();
    assert_eq!(gaps, 5, "the gap kept as a gap");
    let cmp = read_csv(&out.join("compare/comparison.csv"));
    for (i, q) in cmp["quantity"].iter().enumerate() {
        let nrmse: f64 = cmp["nrmse"][i].parse().unwrap();
        if q.ends_with("ax") || q.ends_with("ay") {
            assert!(nrmse < 0.01, "{q}: NRMSE {nrmse}");
        }
    }
    // A stage that fails leaves the earlier results as they were: a frame rate of -1 fails the
    // track stage; every file of the run is unchanged and no partial folder is left.
    let before = tree(&out);
    let broken = dir.path().join("negative-fps.toml");
    std::fs::write(
        &broken,
        std::fs::read_to_string(&p)
            .unwrap()
            .replace("tracks_fps = 240.0", "tracks_fps = -1.0"),
    )
    .unwrap();
    let o = flexbench(&[
        "run",
        broken.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("tracks_fps = -1"),
        "{err}"
    );
    assert!(
        tree(&out) == before,
        "a failed stage changed the earlier results"
    );
    // The wide table without its unit is refused by name.
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&p)
            .unwrap()
            .replace("tracks_unit = \"mm\"\n", ""),
    )
    .unwrap();
    let o = flexbench(&[
        "run",
        bad.to_str().unwrap(),
        "--out",
        dir.path().join("bad-out").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("tracks_unit"), "{err}");
}

/// Render a recording of the bench at `rpm` filmed at `fps` for `duration` s into `dir`.
fn render(dir: &Path, name: &str, fps: f64, rpm: f64, duration: f64) -> PathBuf {
    let mech = std::fs::read_to_string(root().join("mechanisms/wind-pump.toml"))
        .unwrap()
        .replace(
            "omega_ref_rpm = 140.0",
            &format!("omega_ref_rpm = {rpm:.1}"),
        );
    let mp = dir.join(format!("{name}.mechanism.toml"));
    std::fs::write(&mp, mech).unwrap();
    let cam = std::fs::read_to_string(root().join("recordings/default/camera.toml"))
        .unwrap()
        .replace("fps = 240.0", &format!("fps = {fps:.1}"))
        .replace("duration = 2.0", &format!("duration = {duration}"))
        .replace("frames = [200, 211]", "frames = [100, 105]");
    let cp = dir.join(format!("{name}.camera.toml"));
    std::fs::write(&cp, cam).unwrap();
    let out = dir.join("recordings").join(name);
    common::render(&mp, &cp, &out);
    out
}

/// A batch of four recordings (240 and 120 frames/s; 140 and 120 rpm) of which one is broken
/// (its video is not a video): three reports, one clear error naming the video, every
/// recording in the summary table, and a non-zero exit. The recordings run two at a time.
#[test]
fn batch_of_four_with_one_broken() {
    let dir = tempfile::tempdir().unwrap();
    let a = render(dir.path(), "a-240fps-140rpm", 240.0, 140.0, 1.5);
    render(dir.path(), "b-120fps-140rpm", 120.0, 140.0, 2.0);
    render(dir.path(), "c-240fps-120rpm", 240.0, 120.0, 1.5);
    let broken = dir.path().join("recordings/d-broken");
    std::fs::create_dir_all(broken.join("views")).unwrap();
    for f in ["clicks.toml", "plane-view.png"] {
        std::fs::copy(a.join(f), broken.join(f)).unwrap();
    }
    for e in std::fs::read_dir(a.join("views")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, broken.join("views").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(broken.join("video.mp4"), b"this is not a video file").unwrap();
    let p = pipeline(dir.path(), None, "");
    let out = dir.path().join("batch");
    let o = flexbench(&[
        "run",
        p.to_str().unwrap(),
        "--recordings",
        dir.path().join("recordings").to_str().unwrap(),
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        !o.status.success(),
        "a failed recording makes the batch exit non-zero"
    );
    assert!(
        stderr.contains("1 of 4 recordings failed")
            && stderr.contains("d-broken")
            && stderr.contains("video.mp4"),
        "{stderr}"
    );
    let summary = read_csv(&out.join("batch-summary.csv"));
    assert_eq!(
        summary["recording"],
        [
            "a-240fps-140rpm",
            "b-120fps-140rpm",
            "c-240fps-120rpm",
            "d-broken"
        ]
    );
    assert_eq!(summary["status"], ["ok", "ok", "ok", "failed"]);
    assert!(
        summary["error"][3].contains("video.mp4"),
        "{}",
        summary["error"][3]
    );
    for (i, rpm, fps) in [(0, 140.0, 240.0), (1, 140.0, 120.0), (2, 120.0, 240.0)] {
        let name = &summary["recording"][i];
        assert!(
            out.join(name).join("report/report.html").exists(),
            "{name}: {stdout}"
        );
        let speed: f64 = summary["crank_speed_rpm"][i].parse().unwrap();
        let rate: f64 = summary["frame_rate_hz"][i].parse().unwrap();
        assert!(
            (speed - rpm).abs() < 0.02 * rpm,
            "{name}: crank speed {speed} rpm"
        );
        assert!((rate - fps).abs() < 1e-6 * fps, "{name}: frame rate {rate}");
        let worst: f64 = summary["acceleration_nrmse_max"][i].parse().unwrap();
        assert!(
            worst < 5.0,
            "{name}: accelerations within 5 % NRMSE of the simulated bench ({worst} %)"
        );
    }
    assert!(!out.join("d-broken/report").exists());
    let html = std::fs::read_to_string(out.join("batch-summary.html")).unwrap();
    assert!(html.contains("d-broken") && html.contains("failed"));
}

/// Determinism across thread counts: `process` with the horizontal's refinement (its candidate
/// angles computed in parallel) on one thread and on two (RAYON_NUM_THREADS) writes the same
/// bytes in every file.
#[test]
fn same_bytes_on_one_thread_and_two() {
    let dir = tempfile::tempdir().unwrap();
    let tracks = root().join("recordings/default/truth/tracks.parquet");
    let mut trees = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.path().join(format!("threads-{threads}"));
        let o = Command::new(env!("CARGO_BIN_EXE_flexbench"))
            .env_remove("FLEXBENCH_THREADS")
            .env_remove("POLARS_MAX_THREADS")
            .env("RAYON_NUM_THREADS", threads)
            .args([
                "process",
                "--tracks",
                tracks.to_str().unwrap(),
                "--mechanism",
                root().join("mechanisms/wind-pump.toml").to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--smoother",
                "--periodic",
                "--refine-horizontal",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        trees.push(tree(&out));
    }
    assert_eq!(
        trees[0].iter().map(|f| &f.0).collect::<Vec<_>>(),
        trees[1].iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (a, b) in trees[0].iter().zip(&trees[1]) {
        assert!(a.1 == b.1, "{} differs between one thread and two", a.0);
    }
}

/// An overlay failing beside the fem and compare stages loses nothing. Its ffmpeg lists
/// libx264 but refuses every frame (a broken encoder, as an odd build may be): the run exits
/// non-zero with a message naming the overlay stage and ffmpeg's own words; the stages beside
/// it keep their results (whole folders with their records), no overlay or temporary folder is
/// left and no report is written; a rerun with a working ffmpeg makes the overlay and the
/// report only, everything before kept.
#[test]
fn overlay_failing_beside_fem_and_compare_loses_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("broken-ffmpeg");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("ffmpeg");
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = \"-encoders\" ]; then echo ' V....D libx264 H.264 (this build)'; exit 0; fi\ndone\necho 'this build cannot encode: broken libx264' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = pipeline(dir.path(), None, "");
    let out = dir.path().join("out");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_flexbench"))
        .args(["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .current_dir(root())
        .env("PATH", path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "a failed overlay fails the run");
    assert!(
        stderr.contains("overlay")
            && stderr.contains("ffmpeg")
            && stderr.contains("broken libx264"),
        "the message names the stage and what ffmpeg said: {stderr}"
    );
    for stage in ["calibrate", "track", "smooth", "process", "fem", "compare"] {
        assert!(
            out.join(stage).join("stage.json").exists(),
            "{stage} kept its results: {stderr}"
        );
    }
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') || n == "overlay" || n == "report")
        .collect();
    assert!(
        left.is_empty(),
        "nothing partial or unfinished left: {left:?}"
    );
    let fem = tree(&out.join("fem"));
    assert_eq!(
        run(&p, &out),
        ["overlay", "report"],
        "the rerun makes the overlay and the report only"
    );
    assert_eq!(
        tree(&out.join("fem")),
        fem,
        "the fem stage's files untouched"
    );
    assert!(out.join("overlay/overlay.mp4").exists() && out.join("report/report.html").exists());
}

/// The labs' pipeline through the whole chain: the recording's truth tracks with 100 um of
/// noise, both the smooth stage and the process stage by the zero-lag Butterworth filter
/// ([smooth] method, [process] method = "butterworth", the cutoff by the Durbin-Watson
/// criterion in the process stage): the process record (read back by its type) names the
/// filter and a cutoff for each of the ten coordinates, the smooth record too; the report
/// states the method and the cutoffs' range; the comparison still finds the simulated bench
/// (every acceleration within 6 % NRMSE; 2.2-3.6 % measured). The same with Woltring's
/// quintic spline in both stages ([smooth] and [process] method = "spline"): its smoothing
/// per coordinate in the records, its degrees of freedom in the report, the accelerations
/// within 3.5 % NRMSE (0.8-2.1 % measured). A cutoff given with a
/// criterion is refused before any stage runs.
#[test]
fn labs_methods_through_the_chain() {
    use flexbench_pipeline::process::ProcessRecord;
    use flexbench_pipeline::smooth::SmoothRecord;
    use flexbench_pipeline::StageRecord;
    let dir = tempfile::tempdir().unwrap();
    let text = common::noisy_tracks(
        &root().join("recordings/default/truth/tracks.csv"),
        1e-4,
        0x9E3779B97F4A7C15,
        1.0,
        &|_, _| false,
    );
    let tracks = dir.path().join("noisy.csv");
    std::fs::write(&tracks, text).unwrap();
    let p = dir.path().join("pipeline.toml");
    let file = format!(
        "[run]\nmechanism = \"{}\"\n\n[inputs]\ntracks = \"{}\"\n\n[smooth]\nmethod = \"butterworth\"\n\n[process]\nmethod = \"butterworth\"\ncutoff_by = \"durbin-watson\"\n",
        root().join("mechanisms/wind-pump.toml").display(),
        tracks.display()
    );
    std::fs::write(&p, &file).unwrap();
    let out = dir.path().join("out");
    assert_eq!(
        run(&p, &out),
        ["track", "smooth", "process", "fem", "compare", "report"]
    );
    let record = ProcessRecord::read(&out.join("process/summary.json")).unwrap();
    let d = &record.differentiation;
    assert!(
        d.method.contains("Durbin-Watson") && d.window.is_none(),
        "{}",
        d.method
    );
    assert_eq!(d.choices.len(), 10);
    let cutoffs: Vec<f64> = d.choices.iter().map(|c| c.cutoff_hz.unwrap()).collect();
    eprintln!("process cutoffs {cutoffs:.2?} Hz");
    assert!(
        cutoffs.iter().all(|f| *f > 2.0 && *f < 108.0),
        "{cutoffs:?}"
    );
    assert!(record.smoother.is_none());
    let smooth = SmoothRecord::read(&out.join("smooth/markers.summary.json")).unwrap();
    assert!(
        smooth.method.contains("residual analysis"),
        "{}",
        smooth.method
    );
    assert!(smooth.parameters.iter().all(|p| p.cutoff_hz.is_some()));
    let html = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    assert!(
        html.contains("zero-lag Butterworth") && html.contains("over the markers' coordinates")
    );
    let cmp = read_csv(&out.join("compare/comparison.csv"));
    for (i, q) in cmp["quantity"].iter().enumerate() {
        let nrmse: f64 = cmp["nrmse"][i].parse().unwrap();
        if q.ends_with("ax") || q.ends_with("ay") {
            eprintln!("{q}: NRMSE {:.2} %", nrmse * 100.0);
            assert!(nrmse < 0.06, "{q}: NRMSE {nrmse}");
        }
    }
    // The same chain with Woltring's spline in both stages.
    let spline = dir.path().join("spline.toml");
    std::fs::write(
        &spline,
        file.replace(
            "method = \"butterworth\"\ncutoff_by = \"durbin-watson\"",
            "method = \"spline\"",
        )
        .replace("method = \"butterworth\"", "method = \"spline\""),
    )
    .unwrap();
    let out_s = dir.path().join("out-spline");
    run(&spline, &out_s);
    let record = ProcessRecord::read(&out_s.join("process/summary.json")).unwrap();
    let d = &record.differentiation;
    assert!(
        d.method.contains("smoothing spline of degree 5") && d.order == 5,
        "{}",
        d.method
    );
    assert!(
        d.choices.len() == 10
            && d.choices
                .iter()
                .all(|c| c.spline_p.is_some() && c.cutoff_hz.is_none())
    );
    let smooth = SmoothRecord::read(&out_s.join("smooth/markers.summary.json")).unwrap();
    assert!(smooth.method.contains("GCVSPL"), "{}", smooth.method);
    let html = std::fs::read_to_string(out_s.join("report/report.html")).unwrap();
    assert!(html.contains("effective degrees of freedom"));
    let cmp = read_csv(&out_s.join("compare/comparison.csv"));
    for (i, q) in cmp["quantity"].iter().enumerate() {
        let nrmse: f64 = cmp["nrmse"][i].parse().unwrap();
        if q.ends_with("ax") || q.ends_with("ay") {
            eprintln!("spline: {q}: NRMSE {:.2} %", nrmse * 100.0);
            assert!(nrmse < 0.035, "{q}: NRMSE {nrmse}");
        }
    }
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        file.replace("cutoff_by", "cutoff_hz = 8.0\ncutoff_by"),
    )
    .unwrap();
    let bad_out = dir.path().join("bad-out");
    let o = flexbench(&[
        "run",
        bad.to_str().unwrap(),
        "--out",
        bad_out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("both given") && !err.contains("panicked"),
        "{err}"
    );
    assert!(!bad_out.join("track").exists(), "no stage ran");
}

/// A run whose mechanism file has the lever elastic (mechanisms/wind-pump-elastic.toml), on the
/// shipped recording's true tracks: process and fem see the bench's rigid view, compare runs the
/// coupled elastic simulation, and the report says so: the comparison names the model, the
/// elastic lever's effect against the rigid bench is a table and two figures.
#[test]
fn a_run_against_the_elastic_bench_reports_the_lever_effect() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("pipeline.toml");
    std::fs::write(
        &p,
        format!(
            "[run]\nmechanism = \"{}\"\n\n[inputs]\ntracks = \"{}\"\n\n[process]\nrefine_horizontal = false\n",
            root().join("mechanisms/wind-pump-elastic.toml").display(),
            root().join("recordings/default/truth/tracks.parquet").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    assert_eq!(
        run(&p, &out),
        ["track", "smooth", "process", "fem", "compare", "report"]
    );
    let html = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    for words in [
        "the elastic (coupled) bench simulated at",
        "The elastic lever against the rigid bench",
        "The elastic lever's effect on the simulated liaison forces",
        "The elastic lever's effect on the simulated markers' accelerations",
    ] {
        assert!(html.contains(words), "the report lacks: {words}");
    }
    for stem in ["elastic-effect-forces", "elastic-effect-accelerations"] {
        assert!(out.join(format!("compare/{stem}.png")).exists(), "{stem}");
    }
}
