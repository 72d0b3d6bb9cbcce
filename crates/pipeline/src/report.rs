//! The report stage of `flexbench run`: the figures the stages before it did not draw (the
//! markers' trajectories, seed 001 Fig. 5; their acceleration field, Fig. 6; the liaison forces
//! over the crank turn; the tracking quality; the calibration residuals over the image), each
//! with its numbers as a table, and one self-contained HTML file holding every figure of the run
//! (inline SVG), its tables, inputs, parameters and quality figures.

use std::f64::consts::TAU;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use flexbench_mechanism::Mechanism;
use flexbench_report::{Curve, Figure, Panel, PlaneFigure};
use flexbench_tables::{has_column, opt_f64, read_frame, strings};
use serde_json::Value;

use crate::compare::CompareRecord;
use crate::fem::{FemRecord, MeasuredDeflection};
use crate::process::ProcessRecord;
use crate::smooth::SmoothRecord;
use crate::track::TrackRecord;
use crate::PipelineError;

/// The folders of the stages a report draws from.
#[derive(Debug, Clone, PartialEq)]
pub struct StageDirs {
    /// The calibrate stage's (None when a calibration was reused or the tracks imported).
    pub calibrate: Option<PathBuf>,
    /// The track stage's (tracks table and summary).
    pub track: PathBuf,
    /// The smooth stage's (the markers' model-free kinematics).
    pub smooth: PathBuf,
    /// The process stage's (bodies, markers, forces).
    pub process: PathBuf,
    /// The fem stage's (modes, deflection).
    pub fem: PathBuf,
    /// The compare stage's (measured against simulated).
    pub compare: PathBuf,
}

/// One figure of the report: the stage folder it is in (its name in the run), where its SVG
/// is, its caption.
struct Fig {
    stage: &'static str,
    stem: PathBuf,
    caption: String,
}

/// Per marker (in first-seen order): times and the rows' values of the named columns.
struct ByMarker {
    names: Vec<String>,
    rows: Vec<Vec<usize>>,
}

fn by_marker(names: &[Option<String>]) -> ByMarker {
    let mut out = ByMarker {
        names: Vec::new(),
        rows: Vec::new(),
    };
    for (i, n) in names.iter().enumerate() {
        let Some(n) = n else { continue };
        let k = match out.names.iter().position(|m| m == n) {
            Some(k) => k,
            None => {
                out.names.push(n.clone());
                out.rows.push(Vec::new());
                out.names.len() - 1
            }
        };
        out.rows[k].push(i);
    }
    out
}

/// The largest acceleration of the markers: (|a| in m/s^2, marker, t in s).
fn largest_acceleration(
    names: &ByMarker,
    t: &[Option<f64>],
    ax: &[Option<f64>],
    ay: &[Option<f64>],
) -> Option<(f64, String, f64)> {
    let mut best: Option<(f64, String, f64)> = None;
    for (k, rows) in names.rows.iter().enumerate() {
        for &i in rows {
            if let (Some(a), Some(b), Some(ti)) = (ax[i], ay[i], t[i]) {
                let m = a.hypot(b);
                if best.as_ref().is_none_or(|b| m > b.0) {
                    best = Some((m, names.names[k].clone(), ti));
                }
            }
        }
    }
    best
}

/// Write the report stage's figures and `report.html` into `out`.
pub fn report(
    title: &str,
    dirs: &StageDirs,
    mech: &Mechanism,
    manifest: &Value,
    out: &Path,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<Vec<PathBuf>, PipelineError> {
    let mut files = Vec::new();
    let mut figs: Vec<Fig> = Vec::new();
    let mut notes: Vec<(String, String)> = Vec::new(); // (section, html)

    // The markers' measured kinematics (the fitted motion of the process stage, consistent with
    // the forces and the comparison): trajectories and the acceleration field.
    progress("trajectories and acceleration field", 0.0);
    let sm = dirs.process.join("markers.parquet");
    let process_summary = ProcessRecord::read(&dirs.process.join("summary.json"))?;
    let df = read_frame(&sm)?;
    let (t, names) = (opt_f64(&df, &sm, "t")?, strings(&df, &sm, "marker")?);
    let (x, y, ax, ay) = (
        opt_f64(&df, &sm, "x")?,
        opt_f64(&df, &sm, "y")?,
        opt_f64(&df, &sm, "ax")?,
        opt_f64(&df, &sm, "ay")?,
    );
    let bm = by_marker(&names);
    let (ct, cphi) = crate::compare::crank_angle(&dirs.process.join("bodies.parquet"))?;
    // One crank turn from the recording's first sample, for the field.
    let turn_end = cphi
        .first()
        .map(|p| p + TAU * cphi.last().map(|l| (l - p).signum()).unwrap_or(1.0));
    let in_first_turn = |ti: f64| -> bool {
        match (
            crate::compare::angle_at(&ct, &cphi, ti),
            cphi.first(),
            turn_end,
        ) {
            (Some(p), Some(p0), Some(pe)) => (p - p0).abs() <= (pe - p0).abs(),
            _ => false,
        }
    };
    let paths: Vec<flexbench_report::LabelledPath> = bm
        .names
        .iter()
        .zip(&bm.rows)
        .map(|(n, rows)| (n.clone(), rows.iter().map(|&i| x[i].zip(y[i])).collect()))
        .collect();
    let fig5 = PlaneFigure {
        caption: "Trajectories of the five markers on the lever (bench frame; seed 001 Fig. 5)"
            .into(),
        x_label: "x (m), bench frame".into(),
        y_label: "y (m), bench frame".into(),
        y_down: false,
        paths: paths.clone(),
        arrow_groups: Vec::new(),
        arrows: Vec::new(),
        scale: 1.0,
        vector_unit: "m/s^2".into(),
    };
    files.extend(flexbench_report::write_plane_figure(
        &fig5,
        &out.join("trajectories"),
    )?);
    figs.push(Fig { stage: "report", stem: out.join("trajectories"), caption: "Trajectories of the five markers on the lever over the whole recording, in the bench frame (origin at A, x horizontal towards the pendulum, y up), as the mechanism fitted to the tracked positions gives them (seed 001 Fig. 5).".into() });

    let best = largest_acceleration(&bm, &t, &ax, &ay);
    let (amax, amax_marker, amax_t) = best.clone().unwrap_or((f64::NAN, String::new(), f64::NAN));
    // Arrows every `step` samples over the first turn; the longest arrow is 0.06 m on the plot.
    let span = paths
        .iter()
        .flat_map(|p| p.1.iter().flatten())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    let scale = if amax > 0.0 {
        0.15 * (span.1 - span.0).max(1e-3) / amax
    } else {
        1.0
    };
    let mut arrows = Vec::new();
    for rows in &bm.rows {
        let first: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&i| t[i].is_some_and(in_first_turn))
            .collect();
        let step = (first.len() / 24).max(1);
        for &i in first.iter().step_by(step) {
            if let (Some(px), Some(py), Some(a), Some(b)) = (x[i], y[i], ax[i], ay[i]) {
                arrows.push((0usize, px, py, a, b));
            }
        }
    }
    let fig6 = PlaneFigure {
        caption: format!("Acceleration field of the markers along their trajectories, one crank turn (largest |a| = {amax:.2} m/s^2)"),
        arrow_groups: vec![format!("acceleration, {:.3} m per 10 m/s^2", 10.0 * scale)],
        arrows,
        scale,
        ..fig5.clone()
    };
    files.extend(flexbench_report::write_plane_figure(
        &fig6,
        &out.join("acceleration-field"),
    )?);
    figs.push(Fig {
        stage: "report",
        stem: out.join("acceleration-field"),
        caption: format!(
            "The markers' accelerations as vectors along their trajectories over the recording's first crank turn (bench frame; an arrow of {:.3} m is 10 m/s^2). The largest acceleration of any marker over the recording is {amax:.2} m/s^2 ({amax_marker} at t = {amax_t:.3} s); seed 001 Fig. 6 states 14.33 m/s^2 for its bench.",
            10.0 * scale
        ),
    });
    notes.push(("Largest acceleration".into(), format!("<p>Largest acceleration of the markers (the fitted motion): <b>{amax:.2} m/s²</b> at {} (t = {amax_t:.3} s). Seed 001 states 14.33 m/s² (its Fig. 6).</p>", esc(&amax_marker))));

    // The liaison forces at B and C' over the crank turn.
    progress("forces over the crank turn", 0.3);
    let fpath = dirs.process.join("forces.parquet");
    let fdf = read_frame(&fpath)?;
    let ft = opt_f64(&fdf, &fpath, "t")?;
    let deg: Vec<f64> = ft
        .iter()
        .map(|ti| {
            ti.and_then(|ti| crate::compare::angle_at(&ct, &cphi, ti))
                .map(|p| (p - cphi[0]).to_degrees().rem_euclid(360.0))
                .unwrap_or(f64::NAN)
        })
        .collect();
    let mut panels = Vec::new();
    let mut peak_rows = String::new();
    let mut peaks = serde_json::Map::new();
    for (j, label) in [
        ("B", "B: force of the crank on the lever"),
        ("C", "C': force of the rocker on the lever"),
    ] {
        let (cx, cy) = (format!("{j}_x"), format!("{j}_y"));
        if !has_column(&fdf, &cx) || !has_column(&fdf, &cy) {
            continue;
        }
        let (vx, vy) = (opt_f64(&fdf, &fpath, &cx)?, opt_f64(&fdf, &fpath, &cy)?);
        let sig = |c: &str| -> Result<Vec<Option<f64>>, PipelineError> {
            let n = format!("{c}_sigma");
            Ok(if has_column(&fdf, &n) {
                opt_f64(&fdf, &fpath, &n)?
                    .iter()
                    .map(|s| s.map(|s| 2.0 * s))
                    .collect()
            } else {
                Vec::new()
            })
        };
        // The samples in order of crank angle, with a break where the angle wraps.
        let mut order: Vec<usize> = (0..deg.len()).filter(|&i| deg[i].is_finite()).collect();
        order.sort_by(|&a, &b| deg[a].total_cmp(&deg[b]));
        let xs: Vec<f64> = order.iter().map(|&i| deg[i]).collect();
        let pick = |v: &[Option<f64>]| -> Vec<Option<f64>> {
            order.iter().map(|&i| v.get(i).copied().flatten()).collect()
        };
        let (sx, sy) = (sig(&cx)?, sig(&cy)?);
        let mag: Vec<Option<f64>> = vx
            .iter()
            .zip(&vy)
            .map(|(a, b)| a.zip(*b).map(|(a, b)| a.hypot(b)))
            .collect();
        panels.push(Panel {
            title: label.into(),
            y_label: "force (N), bench frame".into(),
            curves: vec![
                Curve {
                    label: format!("{j}_x"),
                    x: xs.clone(),
                    y: pick(&vx),
                    band: if sx.is_empty() { Vec::new() } else { pick(&sx) },
                },
                Curve {
                    label: format!("{j}_y"),
                    x: xs.clone(),
                    y: pick(&vy),
                    band: if sy.is_empty() { Vec::new() } else { pick(&sy) },
                },
                Curve {
                    label: format!("|{j}|"),
                    x: xs,
                    y: pick(&mag),
                    band: Vec::new(),
                },
            ],
        });
        if let Some(k) = (0..mag.len())
            .filter(|&i| mag[i].is_some())
            .max_by(|&a, &b| mag[a].unwrap_or(0.0).total_cmp(&mag[b].unwrap_or(0.0)))
        {
            let name = if j == "C" { "C'" } else { "B" };
            peaks.insert(format!("peak_force_{j}_n"), serde_json::json!(mag[k]));
            peaks.insert(
                format!("peak_force_{j}_crank_angle_deg"),
                serde_json::json!(deg[k]),
            );
            let _ = write!(
                peak_rows,
                "<tr><td>{name}</td><td>{:.1}</td><td>{:.1}</td><td>{:.4}</td></tr>",
                mag[k].unwrap_or(f64::NAN),
                deg[k],
                ft[k].unwrap_or(f64::NAN)
            );
        }
    }
    let banded = panels
        .iter()
        .any(|p| p.curves.iter().any(|c| !c.band.is_empty()));
    if !panels.is_empty() {
        let fig = Figure {
            caption: "Liaison forces at B and C' over the crank turn (bench frame)".into(),
            x_label: "crank angle phi1 from the recording's first sample, modulo 360 (deg)".into(),
            panels,
        };
        files.extend(flexbench_report::write_figure(
            &fig,
            &out.join("forces-cycle"),
        )?);
        figs.push(Fig {
            stage: "report",
            stem: out.join("forces-cycle"),
            caption: format!(
                "Liaison forces at B (crank on lever) and C' (rocker on lever) in the bench frame against the crank angle, every turn of the recording overlaid; {}",
                if banded {
                    format!("shaded: {} carried through the inverse dynamics.", process_summary.bands)
                } else {
                    "no bands: the process stage gave no uncertainty (Savitzky-Golay kinematics).".to_string()
                }
            ),
        });
        notes.push(("Peak forces".into(), format!("<table><tr><th>joint</th><th>peak |F| (N)</th><th>crank angle (deg)</th><th>t (s)</th></tr>{peak_rows}</table>")));
    }

    // Tracking quality: per-marker sigma over time, gaps.
    progress("tracking quality", 0.5);
    let tp = dirs.track.join("tracks.parquet");
    let tdf = read_frame(&tp)?;
    let (tt, tn, tx, tf) = (
        opt_f64(&tdf, &tp, "t")?,
        strings(&tdf, &tp, "marker")?,
        opt_f64(&tdf, &tp, "x")?,
        opt_f64(&tdf, &tp, "frame")?,
    );
    // The recording's frames (a marker's gap may be a row without x, y or no row at all).
    let all_frames: std::collections::BTreeSet<i64> =
        tf.iter().flatten().map(|f| *f as i64).collect();
    let tsig = if has_column(&tdf, "sigma_px") {
        opt_f64(&tdf, &tp, "sigma_px")?
    } else {
        vec![None; tdf.height()]
    };
    let tb = by_marker(&tn);
    let smooth_summary = SmoothRecord::read(&dirs.smooth.join("markers.summary.json"))?;
    let noise_of = |m: &str, c: &str| -> Option<f64> {
        let coordinate = format!("{m}.{c}");
        smooth_summary
            .parameters
            .iter()
            .find(|p| p.coordinate == coordinate)?
            .noise_m
    };
    let mut qrows = String::new();
    let mut curves = Vec::new();
    for (k, rows) in tb.rows.iter().enumerate() {
        let name = &tb.names[k];
        let seen_frames: std::collections::BTreeSet<i64> = rows
            .iter()
            .filter(|&&i| tx[i].is_some())
            .filter_map(|&i| tf[i].map(|f| f as i64))
            .collect();
        let seen: Vec<bool> = all_frames.iter().map(|f| seen_frames.contains(f)).collect();
        let gaps = seen.iter().filter(|s| !**s).count();
        let (mut longest, mut run) = (0usize, 0usize);
        for s in &seen {
            run = if *s { 0 } else { run + 1 };
            longest = longest.max(run);
        }
        let mut sig: Vec<f64> = rows.iter().filter_map(|&i| tsig[i]).collect();
        sig.sort_by(f64::total_cmp);
        let q = |f: f64| {
            sig.get(((sig.len() as f64 - 1.0) * f).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        let noise = noise_of(name, "x")
            .zip(noise_of(name, "y"))
            .map(|(a, b)| (0.5 * (a * a + b * b)).sqrt() * 1e3);
        let _ = write!(
            qrows,
            "<tr><td>{}</td><td>{}</td><td>{gaps}</td><td>{longest}</td><td>{:.4}</td><td>{:.4}</td><td>{}</td></tr>",
            esc(name),
            seen.len() - gaps,
            q(0.5),
            q(0.95),
            noise.map(|n| format!("{n:.3}")).unwrap_or_else(|| "-".into())
        );
        curves.push(Curve {
            label: name.clone(),
            x: rows.iter().map(|&i| tt[i].unwrap_or(f64::NAN)).collect(),
            y: rows.iter().map(|&i| tsig[i]).collect(),
            band: Vec::new(),
        });
    }
    if curves.iter().any(|c| c.y.iter().any(Option::is_some)) {
        let fig = Figure {
            caption: "Tracking quality: each marker's centre standard deviation (breaks: gaps)"
                .into(),
            x_label: "time t (s)".into(),
            panels: vec![Panel {
                title: "standard deviation of the marker's image centre".into(),
                y_label: "sigma (px)".into(),
                curves,
            }],
        };
        files.extend(flexbench_report::write_figure(
            &fig,
            &out.join("tracking-quality"),
        )?);
        figs.push(Fig { stage: "report", stem: out.join("tracking-quality"), caption: "Standard deviation of each marker's sub-pixel centre as the tracker estimates it from the blob's intensity, frame by frame; a break in a line is a gap (the marker not seen: marked, never invented).".into() });
    }
    // A run on a tracks table has no tracking record: flexbench did not track.
    let summary_path = dirs.track.join("tracks.summary.json");
    let track_summary = match summary_path.exists() {
        true => Some(TrackRecord::read(&summary_path)?.summary),
        false => None,
    };
    let tracking = match &track_summary {
        Some(ts) => format!(
            "{} frames, {} detections, {} gaps, {} rejected blobs, markers locked at frame {}; timestamps from {}.",
            ts.frames, ts.detections, ts.gaps, ts.rejected_blobs, ts.lock_frame,
            if ts.file_timestamps { "the file" } else { "the frame rate" }
        ),
        None => "The tracks were imported from a table made by another tool: flexbench did not track them.".into(),
    };
    notes.push((
        "Tracking".into(),
        format!(
            "<p>{tracking}</p><table><tr><th>marker</th><th>frames seen</th><th>gaps (frames)</th><th>longest gap (frames)</th><th>median sigma (px)</th><th>95th percentile sigma (px)</th><th>noise by the smoother (mm)</th></tr>{qrows}</table>"
        ),
    ));

    // Calibration residuals over the image.
    if let Some(cdir) = &dirs.calibrate {
        progress("calibration residuals", 0.6);
        let cp = cdir.join("calibration.corners.csv");
        let cdf = read_frame(&cp)?;
        let (u, v, du, dv) = (
            opt_f64(&cdf, &cp, "u_px")?,
            opt_f64(&cdf, &cp, "v_px")?,
            opt_f64(&cdf, &cp, "du_px")?,
            opt_f64(&cdf, &cp, "dv_px")?,
        );
        let rmax = du
            .iter()
            .zip(&dv)
            .filter_map(|(a, b)| Some(a.as_ref()?.hypot(*b.as_ref()?)))
            .fold(0.0, f64::max);
        let rms = (du
            .iter()
            .zip(&dv)
            .filter_map(|(a, b)| Some(a.as_ref()?.powi(2) + b.as_ref()?.powi(2)))
            .sum::<f64>()
            / u.len().max(1) as f64)
            .sqrt();
        let cal = flexbench_vision::Calibration::read(&cdir.join("calibration.yaml"))
            .map_err(|e| PipelineError::Input(e.to_string()))?;
        let (w, h) = (cal.intrinsics.width as f64, cal.intrinsics.height as f64);
        let scale = if rmax > 0.0 { 0.05 * w / rmax } else { 1.0 };
        let fig = PlaneFigure {
            caption: format!(
                "Calibration residuals over the image (RMS {rms:.3} px; arrows x{scale:.0})"
            ),
            x_label: "u (px), image column".into(),
            y_label: "v (px), image row, downward".into(),
            y_down: true,
            paths: vec![(
                "image border".into(),
                vec![
                    Some((0.0, 0.0)),
                    Some((w, 0.0)),
                    Some((w, h)),
                    Some((0.0, h)),
                    Some((0.0, 0.0)),
                ],
            )],
            arrow_groups: vec![format!(
                "corner residual (found - reprojected), x{scale:.0}"
            )],
            arrows: (0..u.len())
                .filter_map(|i| Some((0, u[i]?, v[i]?, du[i]?, dv[i]?)))
                .collect(),
            scale,
            vector_unit: "px".into(),
        };
        files.extend(flexbench_report::write_plane_figure(
            &fig,
            &out.join("calibration-residuals"),
        )?);
        figs.push(Fig {
            stage: "report",
            stem: out.join("calibration-residuals"),
            caption: format!("Reprojection residual of every chessboard corner kept for the calibration, drawn where the corner lies in the image, magnified {scale:.0} times; RMS {rms:.3} px, largest {rmax:.3} px. A pattern (rather than scatter) would show a distortion model too poor for the lens."),
        });
        notes.push((
            "Calibration".into(),
            format!(
                "<p>RMS reprojection error {:.4} px over {} views; fx {:.2}, fy {:.2}, cx {:.2}, cy {:.2} px; distortion k1 {:.5}, k2 {:.5}, p1 {:.6}, p2 {:.6}, k3 {:.5}.</p>",
                cal.rms,
                strings(&cdf, &cp, "view")?.into_iter().flatten().collect::<std::collections::BTreeSet<_>>().len(),
                cal.intrinsics.fx, cal.intrinsics.fy, cal.intrinsics.cx, cal.intrinsics.cy,
                cal.intrinsics.dist[0], cal.intrinsics.dist[1], cal.intrinsics.dist[2], cal.intrinsics.dist[3], cal.intrinsics.dist[4]
            ),
        ));
    }

    // The earlier stages' figures.
    for (stage, dir, stem, caption) in [
        ("compare", &dirs.compare, "accelerations", "The markers' accelerations measured (process stage, from the fitted motion) against the rigid bench simulated at the recording's mean crank speed, aligned by the crank angle; NRMSE and phase lag per component in each panel's title."),
        ("compare", &dirs.compare, "forces", "Liaison forces at B and C' from the measured motion against the simulated bench, aligned by the crank angle."),
        ("compare", &dirs.compare, "spectra-accelerations", "Harmonic content (amplitude of each harmonic of the crank angle) of the markers' accelerations, measured and simulated."),
        ("compare", &dirs.compare, "spectra-forces", "Harmonic content of the liaison forces at B and C', measured and simulated."),
        ("fem", &dirs.fem, "modes-3-6", "Eigenfrequencies of the lever's modes 3 to 6 along the cycle (seed 001 Fig. 8), symmetric problem and full problem with the gyroscopic and skew terms."),
        ("fem", &dirs.fem, "modes-1-2", "Eigenfrequencies of the lever's modes 1 and 2 along the cycle (seed 000 Fig. 6)."),
        ("fem", &dirs.fem, "mode-shapes", "Shapes of the followed modes at the recording's first sample."),
        ("fem", &dirs.fem, "deflection", "The lever's deflection at the markers: forced response of the FEM model against the measured residual of the rigid fit (each detrended by its best-fit line)."),
        ("process", &dirs.process, "forces", "Liaison forces at B and C' over time, from the inverse dynamics of the measured motion."),
    ] {
        if dir.join(format!("{stem}.svg")).exists() {
            figs.push(Fig { stage, stem: dir.join(stem), caption: caption.into() });
        }
    }

    // Tables from the stages' summaries.
    let fit = &process_summary.fit;
    let per_marker: String = fit
        .rms_per_marker
        .iter()
        .map(|(name, rms)| format!("{name} {:.3} mm", rms * 1e3))
        .collect::<Vec<_>>()
        .join(", ");
    notes.push((
        "Kinematics and inverse dynamics".into(),
        format!(
            "<p>{} samples; markers' RMS residual from the fitted mechanism {:.3} mm ({per_marker}); horizontal correction {:.2} mrad; {} toggle sample(s), largest condition number {:.1}.</p>",
            process_summary.samples,
            fit.rms * 1e3,
            process_summary.horizontal_correction_rad.unwrap_or(0.0) * 1e3,
            process_summary.inverse_dynamics.toggle_samples,
            process_summary.inverse_dynamics.max_condition
        ),
    ));
    let compare_summary = CompareRecord::read(&dirs.compare.join("summary.json"))?;
    let mut crows = String::new();
    for q in &compare_summary.quantities {
        let _ = write!(
            crows,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.3}</td><td>{:.3}</td><td>{:.1}</td><td>{:.3}</td><td>{:.1}</td><td>{:.2}</td></tr>",
            esc(&q.quantity),
            esc(&q.unit),
            100.0 * q.nrmse,
            q.rms_error,
            q.measured_peak,
            q.measured_peak_angle_deg,
            q.simulated_peak,
            q.simulated_peak_angle_deg,
            q.phase_lag_deg
        );
    }
    notes.push((
        "Measured against simulated".into(),
        format!(
            "<p>Recording's mean crank speed {:.2} rpm; the bench simulated at {:.2} rpm (motor reference {:.2} rpm, the file's {:.2} rpm); {} harmonics of the crank angle.</p><table><tr><th>quantity</th><th>unit</th><th>NRMSE (%)</th><th>RMS error</th><th>measured peak</th><th>at (deg)</th><th>simulated peak</th><th>at (deg)</th><th>phase lag (deg)</th></tr>{crows}</table>",
            compare_summary.measured_crank_speed_rpm,
            compare_summary.simulated_crank_speed_rpm,
            compare_summary.motor_reference_rpm_simulated.unwrap_or(f64::NAN),
            compare_summary.motor_reference_rpm_in_file.unwrap_or(f64::NAN),
            compare_summary.harmonics
        ),
    ));
    let fem_summary = FemRecord::read(&dirs.fem.join("summary.json"))?;
    let mut mrows = String::new();
    for (k, r) in fem_summary.frequency_range_hz.iter().enumerate() {
        let at = |i: usize| r.get(i).copied().unwrap_or(f64::NAN);
        let _ = write!(
            mrows,
            "<tr><td>{}</td><td>{:.2}</td><td>{:.2}</td></tr>",
            k + 1,
            at(0),
            at(1)
        );
    }
    let meas =
        |f: fn(&MeasuredDeflection) -> f64| fem_summary.measured.as_ref().map_or(f64::NAN, f);
    notes.push((
        "The elastic lever".into(),
        format!(
            "<p>{} {} elements, supports {}; smallest MAC between successive samples {:.4}; full against symmetric frequencies within {:.1e} (relative).</p><table><tr><th>mode</th><th>lowest (Hz)</th><th>highest (Hz)</th></tr>{mrows}</table><p>Deflection at the markers: model {:.3} mm RMS, measured residual {:.3} mm RMS, correlation {:.2}.</p>",
            fem_summary.elements, esc(&fem_summary.element), esc(&format!("{:?}", fem_summary.supports.as_str())),
            fem_summary.smallest_mac_along_the_cycle,
            fem_summary.full_vs_symmetric_max_relative,
            meas(|m| m.rms_model_detrended_m) * 1e3,
            meas(|m| m.rms_measured_detrended_m) * 1e3,
            meas(|m| m.correlation)
        ),
    ));
    let mut warnings: Vec<String> = fit
        .warnings
        .iter()
        .map(|w| format!("process: {w}"))
        .collect();
    for (stage, s) in [
        ("fem", &fem_summary.warnings),
        ("compare", &compare_summary.warnings),
    ] {
        warnings.extend(s.iter().map(|w| format!("{stage}: {w}")));
    }

    // Interchange: the tracks and the markers' kinematics as TRC and C3D.
    progress("interchange files", 0.7);
    let tracks = flexbench_tables::read_tracks(&tp)?;
    let traj = flexbench_tables::interchange::Trajectories::from_tracks(&tracks)?;
    files.push(flexbench_tables::interchange::write_trc(
        &traj,
        &out.join("tracks.trc"),
    )?);
    files.push(flexbench_tables::interchange::write_c3d(
        &traj,
        &out.join("tracks.c3d"),
    )?);
    let fitted = flexbench_tables::interchange::Trajectories::from_markers_table(
        &dirs.process.join("markers.parquet"),
    )?;
    files.push(flexbench_tables::interchange::write_trc(
        &fitted,
        &out.join("markers.trc"),
    )?);
    files.push(flexbench_tables::interchange::write_c3d(
        &fitted,
        &out.join("markers.c3d"),
    )?);

    // The run's key numbers (the batch summary reads them).
    let nrmse = |unit: &str| -> Vec<f64> {
        compare_summary
            .quantities
            .iter()
            .filter(|q| q.unit == unit)
            .map(|q| q.nrmse)
            .filter(|v| !v.is_nan())
            .collect()
    };
    let (na, nf) = (nrmse("m/s^2"), nrmse("N"));
    let mean = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let mut key = serde_json::json!({
        "title": title,
        "frames": track_summary.as_ref().map(|ts| ts.frames),
        "frame_rate_hz": traj.rate,
        "crank_speed_rpm": compare_summary.measured_crank_speed_rpm,
        "largest_acceleration_m_s2": amax,
        "largest_acceleration_marker": amax_marker,
        "fit_rms_mm": fit.rms * 1e3,
        "acceleration_nrmse_mean": mean(&na),
        "acceleration_nrmse_max": na.iter().copied().fold(f64::NAN, f64::max),
        "force_nrmse_mean": mean(&nf),
        "force_nrmse_max": nf.iter().copied().fold(f64::NAN, f64::max),
        "mode_frequency_ranges_hz": fem_summary.frequency_range_hz,
        "warnings": warnings,
        "figures": figs.len(),
    });
    if let Some(o) = key.as_object_mut() {
        o.extend(peaks);
    }
    files.push(crate::write_json(&out.join("summary.json"), &key)?);

    progress("report.html", 0.8);
    let html = html(title, mech, manifest, &figs, &notes, &warnings)?;
    let page = out.join("report.html");
    flexbench_contracts::atomic::write_bytes(&page, html.as_bytes()).map_err(|e| {
        PipelineError::Io {
            path: page.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    files.push(page);
    Ok(files)
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn html(
    title: &str,
    mech: &Mechanism,
    manifest: &Value,
    figs: &[Fig],
    notes: &[(String, String)],
    warnings: &[String],
) -> Result<String, PipelineError> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}\
h1{{font-size:1.6em}}h2{{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}}\
table{{border-collapse:collapse;margin:.6em 0;font-size:.9em}}td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:right}}\
th{{background:#f3f3f3}}td:first-child{{text-align:left}}figure{{margin:1.2em 0}}figure img{{width:100%;border:1px solid #ddd}}\
figcaption{{font-size:.9em;color:#333;margin-top:.3em}}code,pre{{font-size:.85em;background:#f7f7f7}}pre{{padding:.6em;overflow-x:auto}}\
.warn{{color:#a40}}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(title)
    );
    let _ = writeln!(h, "<p>Mechanism: {} ({} bodies, {} joints, {} markers). Repeat this run with <code>{}</code>; the manifest below fixes its inputs and build.</p>", esc(&mech.name), mech.bodies.len(), mech.joints.len(), mech.markers.len(), esc(manifest["repeat"].as_str().unwrap_or("")));
    if !warnings.is_empty() {
        h.push_str("<h2>Warnings</h2><ul>");
        for w in warnings {
            let _ = write!(h, "<li class=\"warn\">{}</li>", esc(w));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<h2>Inputs</h2><table><tr><th>input</th><th>path</th><th>SHA-256</th></tr>");
    for (k, v) in manifest["inputs"].as_object().into_iter().flatten() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(k),
            esc(v["path"].as_str().unwrap_or("")),
            esc(v["sha256"].as_str().unwrap_or(""))
        );
    }
    let _ = writeln!(
        h,
        "</table><p>flexbench {}, OpenCV {}; build <code>{}</code>; seed of the rendered recording: {}.</p>",
        esc(manifest["flexbench"].as_str().unwrap_or("")),
        esc(manifest["opencv"].as_str().unwrap_or("")),
        esc(manifest["build"].as_str().unwrap_or("")),
        manifest["seed"].as_u64().map(|s| s.to_string()).unwrap_or_else(|| "none (not rendered)".into())
    );
    let params = serde_json::to_string_pretty(&manifest["parameters"]).unwrap_or_default();
    let _ = writeln!(
        h,
        "<details><summary>Parameters of every stage</summary><pre>{}</pre></details>",
        esc(&params)
    );
    for (section, body) in notes {
        let _ = write!(h, "<h2>{}</h2>\n{body}\n", esc(section));
    }
    h.push_str("<h2>Figures</h2>\n");
    for (k, f) in figs.iter().enumerate() {
        let svg = f.stem.with_extension("svg");
        let bytes = std::fs::read(&svg).map_err(|e| PipelineError::Io {
            path: svg.display().to_string(),
            reason: format!("cannot read the figure ({e})"),
        })?;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let table = f.stem.with_extension("figure.csv");
        let table_note = match table.file_name().filter(|_| table.exists()) {
            Some(name) => format!(
                " Numbers: <code>{}/{}</code>.",
                f.stage,
                esc(&name.to_string_lossy())
            ),
            None => String::new(),
        };
        let _ = writeln!(h, "<figure id=\"fig{n}\"><img alt=\"Figure {n}\" src=\"data:image/svg+xml;base64,{b64}\"><figcaption><b>Figure {n}.</b> {}{table_note}</figcaption></figure>", esc(&f.caption), n = k + 1);
    }
    // Lets a headless browser (and the test) see that every figure decoded and rendered.
    h.push_str("<script>window.addEventListener('load',function(){var im=document.images,ok=0;for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)ok++;}document.body.setAttribute('data-figures',im.length);document.body.setAttribute('data-rendered',ok);});</script>\n");
    h.push_str("</body></html>\n");
    Ok(h)
}
