//! The report stage of `flexbench run`: the figures the stages before it did not draw (the
//! markers' trajectories, seed 001 Fig. 5; their acceleration field, Fig. 6; the liaison forces
//! over the crank turn; the tracking quality; the calibration residuals over the image), each
//! with its numbers as a table, and one self-contained HTML file holding every figure of the run
//! (inline SVG), its tables, inputs, parameters and quality figures.

use std::f64::consts::TAU;
use std::path::{Path, PathBuf};

use flexbench_contracts::manifest::Manifest;
use flexbench_mechanism::Mechanism;
use flexbench_report::page::{MechanismLine, Note, RunPage, Span};
use flexbench_report::{Curve, Figure, Panel, PlaneFigure};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use crate::compare::CompareRecord;
use crate::compare_measured::MeasuredRecord;
use crate::fem::{FemRecord, MeasuredDeflection};
use crate::process::ProcessRecord;
use crate::smooth::SmoothRecord;
use crate::track::TrackRecord;
use crate::PipelineError;
use crate::StageRecord;
use crate::{StageEvent, StageWarning};
use flexbench_vision::track::TrackSummary;

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
    /// The overlay stage's (the overlay video, the flagged samples' contact sheet), when it ran.
    pub overlay: Option<PathBuf>,
    /// The fem stage's (modes, deflection), when the mechanism has the bench's elastic lever.
    pub fem: Option<PathBuf>,
    /// The compare stage's (measured against simulated, and against the rig's measured table),
    /// when there was something to compare.
    pub compare: Option<PathBuf>,
    /// The identify stage's, and the process and compare stages' again with the identified
    /// file, when `[identify]` switched it on.
    pub identified: Option<crate::report_identify::IdentifiedDirs>,
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

/// The crank angle along the process stage's motion: times (s) and unwrapped angles (rad).
struct Crank {
    t: Vec<f64>,
    phi: Vec<f64>,
    /// The angle one turn after the first sample's, in the motion's sense.
    turn_end: Option<f64>,
}

impl Crank {
    fn new(t: Vec<f64>, phi: Vec<f64>) -> Crank {
        let turn_end = phi
            .first()
            .map(|p| p + TAU * phi.last().map(|l| (l - p).signum()).unwrap_or(1.0));
        Crank { t, phi, turn_end }
    }

    /// The crank angle at a sample's time, from the recording's first sample, in [0, 360) deg.
    fn degrees_at(&self, ti: Option<f64>) -> f64 {
        ti.and_then(|ti| crate::compare::angle_at(&self.t, &self.phi, ti))
            .map(|p| (p - self.phi[0]).to_degrees().rem_euclid(360.0))
            .unwrap_or(f64::NAN)
    }

    /// Whether the mechanism has no crank: the figures then run over the whole recording.
    fn is_none(&self) -> bool {
        self.t.is_empty()
    }

    /// Whether the sample at `ti` lies in the recording's first crank turn (every sample
    /// without a crank).
    fn in_first_turn(&self, ti: f64) -> bool {
        if self.is_none() {
            return true;
        }
        match (
            crate::compare::angle_at(&self.t, &self.phi, ti),
            self.phi.first(),
            self.turn_end,
        ) {
            (Some(p), Some(p0), Some(pe)) => (p - p0).abs() <= (pe - p0).abs(),
            _ => false,
        }
    }
}

/// The markers' fitted kinematics from the process stage's markers table.
struct MarkerColumns {
    t: Vec<Option<f64>>,
    x: Vec<Option<f64>>,
    y: Vec<Option<f64>>,
    ax: Vec<Option<f64>>,
    ay: Vec<Option<f64>>,
    by_marker: ByMarker,
}

impl MarkerColumns {
    /// The columns of the markers table at `path`, read and checked as `MarkerStates`.
    fn read(path: &Path) -> Result<MarkerColumns, PipelineError> {
        let rows = flexbench_tables::read_markers(path)?.rows;
        let col = |c: &str| rows.iter().map(|r| r.value(c)).collect();
        let names: Vec<Option<String>> = rows.iter().map(|r| Some(r.marker.clone())).collect();
        Ok(MarkerColumns {
            t: rows.iter().map(|r| Some(r.t)).collect(),
            x: col("x"),
            y: col("y"),
            ax: col("ax"),
            ay: col("ay"),
            by_marker: by_marker(&names),
        })
    }
}

/// The largest acceleration of the markers: |a| (m/s^2), the marker, the time (s).
type Largest = (f64, String, f64);

/// Write the report stage's figures and `report.html` into `out`.
pub fn report(
    options: &ReportPage,
    dirs: &StageDirs,
    mech: &Mechanism,
    manifest: &Manifest,
    out: &Path,
    events: &mut dyn FnMut(StageEvent),
) -> Result<Vec<PathBuf>, PipelineError> {
    let title = options.title;
    let mut page = RunPage::new(out);
    // The markers' measured kinematics (the fitted motion of the process stage, consistent with
    // the forces and the comparison): trajectories and the acceleration field.
    events(StageEvent::Progress(
        "trajectories and acceleration field",
        0.0,
    ));
    let markers = dirs.process.join("markers.parquet");
    let process_summary = ProcessRecord::read(&dirs.process.join("summary.json"))?;
    let cols = MarkerColumns::read(&markers)?;
    // The crank angle where the mechanism has a crank; the whole recording otherwise.
    let crank = match mech.body_index("crank") {
        Some(_) => {
            let (t, phi) = crate::compare::crank_angle(&dirs.process.join("bodies.parquet"))?;
            Crank::new(t, phi)
        }
        None => Crank::new(Vec::new(), Vec::new()),
    };
    let largest = marker_figures(&mut page, &cols, &crank)?;
    events(StageEvent::Progress("forces over the crank turn", 0.3));
    let peaks = forces_over_turn(&mut page, dirs, mech, &crank, &process_summary.bands)?;
    events(StageEvent::Progress("tracking quality", 0.5));
    let track_summary = tracking_quality(&mut page, dirs)?;
    if let Some(cdir) = &dirs.calibrate {
        events(StageEvent::Progress("calibration residuals", 0.6));
        calibration_residuals(&mut page, cdir)?;
    }
    let records = Records::read(dirs)?;
    let compare_summary = records.compare.as_ref();
    let fem_summary = records.fem.as_ref();
    stage_figures(
        &mut page,
        dirs,
        compare_summary.map(|c| c.model.as_str()),
        &crank,
    )?;
    methods_note(&mut page, dirs, &process_summary, &records);
    kinematics_note(&mut page, &process_summary);
    crate::report_identify::band_shares_note(&mut page, &process_summary);
    if let Some(c) = compare_summary {
        comparison_note(&mut page, c);
        elastic_note(&mut page, c);
    }
    if let Some(m) = &records.measured {
        measured_note(&mut page, m);
    }
    if let Some(f) = fem_summary {
        lever_note(&mut page, f);
    }
    let mut warnings = stage_warnings(&process_summary, &records);
    if let Some(i) = &dirs.identified {
        events(StageEvent::Progress("identification", 0.65));
        let compare = dirs.compare.as_deref();
        let said =
            crate::report_identify::identify_notes(&mut page, i, &dirs.process, compare, mech)?;
        warnings.extend(said);
    }
    events(StageEvent::Progress("interchange files", 0.7));
    let (rate, skipped) = interchange_files(&mut page, dirs)?;
    warnings.extend(skipped.into_iter().map(|w| StageWarning {
        stage: "report".into(),
        warning: w,
    }));
    let own = ReportNumbers {
        title: title.to_string(),
        frames: track_summary.as_ref().map(|ts| ts.frames),
        frame_rate_hz: rate,
        fit_rms_mm: process_summary.fit.rms * 1e3,
        largest,
        figures: page.figure_count(),
        peaks,
        warnings,
    };
    let key = ReportRecord::new(own, compare_summary, fem_summary);
    let summary = out.join("summary.json");
    page.files.push(key.write(&summary)?);
    events(StageEvent::Progress("MATLAB and Excel files", 0.75));
    result_files(&mut page, dirs, options.csv_units)?;
    events(StageEvent::Progress("report.html", 0.8));
    let mech_line = MechanismLine {
        name: mech.name.clone(),
        bodies: mech.bodies.len(),
        joints: mech.joints.len(),
        markers: mech.markers.len(),
    };
    let listed: Vec<String> = key.warnings.iter().map(|w| w.to_string()).collect();
    let html = page.html(title, &mech_line, manifest, &listed)?;
    let path = out.join("report.html");
    flexbench_contracts::atomic::write_bytes(&path, html.as_bytes()).map_err(|e| {
        PipelineError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    page.files.push(path);
    Ok(page.files)
}

/// The markers' trajectories (seed 001 Fig. 5) and their acceleration field over the first
/// crank turn (Fig. 6), with the note of the largest acceleration.
fn marker_figures(
    page: &mut RunPage,
    cols: &MarkerColumns,
    crank: &Crank,
) -> Result<Largest, PipelineError> {
    let bm = &cols.by_marker;
    let paths: Vec<flexbench_report::LabelledPath> = bm
        .names
        .iter()
        .zip(&bm.rows)
        .map(|(n, rows)| {
            (
                n.clone(),
                rows.iter().map(|&i| cols.x[i].zip(cols.y[i])).collect(),
            )
        })
        .collect();
    let fig5 = PlaneFigure {
        caption: match crank.is_none() {
            false => "Trajectories of the five markers on the lever (bench frame; seed 001 Fig. 5)",
            true => "Trajectories of the markers (bench frame)",
        }
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
    let text = match crank.is_none() {
        false => "Trajectories of the five markers on the lever over the whole recording, in the bench frame (origin at A, x horizontal towards the pendulum, y up), as the mechanism fitted to the tracked positions gives them (seed 001 Fig. 5).",
        true => "Trajectories of the markers over the whole recording, in the bench frame, as the mechanism fitted to the tracked positions gives them.",
    };
    page.plane(&fig5, "trajectories", text.into())?;
    let largest = largest_acceleration(bm, &cols.t, &cols.ax, &cols.ay).unwrap_or((
        f64::NAN,
        String::new(),
        f64::NAN,
    ));
    let (amax, amax_marker, amax_t) = largest.clone();
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
    let over = match crank.is_none() {
        false => "one crank turn",
        true => "the whole recording",
    };
    let fig6 = PlaneFigure {
        caption: format!("Acceleration field of the markers along their trajectories, {over} (largest |a| = {amax:.2} m/s^2)"),
        arrow_groups: vec![format!("acceleration, {:.3} m per 10 m/s^2", 10.0 * scale)],
        arrows: first_turn_arrows(cols, crank),
        scale,
        ..fig5
    };
    let seed = match crank.is_none() {
        false => "; seed 001 Fig. 6 states 14.33 m/s^2 for its bench",
        true => "",
    };
    page.plane(&fig6, "acceleration-field", format!(
        "The markers' accelerations as vectors along their trajectories over {} (bench frame; an arrow of {:.3} m is 10 m/s^2). The largest acceleration of any marker over the recording is {amax:.2} m/s^2 ({amax_marker} at t = {amax_t:.3} s){seed}.",
        if crank.is_none() { "the whole recording" } else { "the recording's first crank turn" },
        10.0 * scale
    ))?;
    page.note(Note::new("Largest acceleration").paragraph(vec![
        Span::Text("Largest acceleration of the markers (the fitted motion): ".into()),
        Span::Bold(format!("{amax:.2} m/s²")),
        Span::Text(format!(
            " at {amax_marker} (t = {amax_t:.3} s).{}",
            match crank.is_none() {
                false => " Seed 001 states 14.33 m/s² (its Fig. 6).",
                true => "",
            }
        )),
    ]));
    Ok(largest)
}

/// About 24 acceleration arrows per marker over the first crank turn: (group, x, y, ax, ay).
fn first_turn_arrows(cols: &MarkerColumns, crank: &Crank) -> Vec<(usize, f64, f64, f64, f64)> {
    let mut arrows = Vec::new();
    for rows in &cols.by_marker.rows {
        let first: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&i| cols.t[i].is_some_and(|ti| crank.in_first_turn(ti)))
            .collect();
        let step = (first.len() / 24).max(1);
        for &i in first.iter().step_by(step) {
            if let (Some(px), Some(py), Some(a), Some(b)) =
                (cols.x[i], cols.y[i], cols.ax[i], cols.ay[i])
            {
                arrows.push((0usize, px, py, a, b));
            }
        }
    }
    arrows
}

/// The liaison forces at B and C' against the crank angle, every turn overlaid, with the table
/// of their peaks; returns the peaks for the run's key numbers.
fn forces_over_turn(
    page: &mut RunPage,
    dirs: &StageDirs,
    mech: &Mechanism,
    crank: &Crank,
    bands: &str,
) -> Result<Peaks, PipelineError> {
    let forces = crate::tables::forces_of(&dirs.process.join("forces.parquet"), mech)?;
    let deg: Vec<f64> = forces
        .t
        .iter()
        .map(|ti| crank.degrees_at(Some(*ti)))
        .collect();
    let mut panels = Vec::new();
    let mut peak_rows: Vec<Vec<String>> = Vec::new();
    let mut peaks = Peaks::default();
    for (j, label) in [
        ("B", "B: force of the crank on the lever"),
        ("C", "C': force of the rocker on the lever"),
    ] {
        let Some((panel, mag)) = joint_panel(&forces, j, label, &deg) else {
            continue;
        };
        panels.push(panel);
        if let Some(k) = (0..mag.len())
            .filter(|&i| mag[i].is_some())
            .max_by(|&a, &b| mag[a].unwrap_or(0.0).total_cmp(&mag[b].unwrap_or(0.0)))
        {
            let name = if j == "C" { "C'" } else { "B" };
            peaks.set(j, mag[k], deg[k]);
            peak_rows.push(vec![
                name.into(),
                format!("{:.1}", mag[k].unwrap_or(f64::NAN)),
                format!("{:.1}", deg[k]),
                format!("{:.4}", forces.t[k]),
            ]);
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
        page.figure(&fig, "forces-cycle", format!(
            "Liaison forces at B (crank on lever) and C' (rocker on lever) in the bench frame against the crank angle, every turn of the recording overlaid; {}",
            if banded {
                format!("shaded: {bands} carried through the inverse dynamics.")
            } else {
                "no bands: the process stage gave no uncertainty (kinematics from the markers' filtered positions, without the smoother).".to_string()
            }
        ))?;
        page.note(Note::new("Peak forces").table(
            &["joint", "peak |F| (N)", "crank angle (deg)", "t (s)"],
            peak_rows,
        ));
    }
    Ok(peaks)
}

/// One joint's panel (x, y with their 2-sigma bands, and |F|) in order of crank angle, and the
/// magnitude per sample; None when the forces table has no components of the joint.
fn joint_panel(
    forces: &flexbench_contracts::Forces,
    j: &str,
    label: &str,
    deg: &[f64],
) -> Option<(Panel, Vec<Option<f64>>)> {
    let (cx, cy) = (format!("{j}_x"), format!("{j}_y"));
    let (vx, vy) = (forces.column(&cx)?, forces.column(&cy)?);
    let sig = |c: &str| -> Vec<Option<f64>> {
        match forces.column(&format!("{c}_sigma")) {
            Some(s) => s.iter().map(|s| s.map(|s| 2.0 * s)).collect(),
            None => Vec::new(),
        }
    };
    // The samples in order of crank angle, with a break where the angle wraps.
    let mut order: Vec<usize> = (0..deg.len()).filter(|&i| deg[i].is_finite()).collect();
    order.sort_by(|&a, &b| deg[a].total_cmp(&deg[b]));
    let xs: Vec<f64> = order.iter().map(|&i| deg[i]).collect();
    let pick = |v: &[Option<f64>]| -> Vec<Option<f64>> {
        order.iter().map(|&i| v.get(i).copied().flatten()).collect()
    };
    let (sx, sy) = (sig(&cx), sig(&cy));
    let mag: Vec<Option<f64>> = vx
        .iter()
        .zip(vy)
        .map(|(a, b)| a.zip(*b).map(|(a, b)| a.hypot(b)))
        .collect();
    let curve = |label: String, y: &[Option<f64>], band: &[Option<f64>]| Curve {
        label,
        x: xs.clone(),
        y: pick(y),
        band: if band.is_empty() {
            Vec::new()
        } else {
            pick(band)
        },
    };
    let panel = Panel {
        title: label.into(),
        y_label: "force (N), bench frame".into(),
        curves: vec![
            curve(format!("{j}_x"), vx, &sx),
            curve(format!("{j}_y"), vy, &sy),
            curve(format!("|{j}|"), &mag, &[]),
        ],
    };
    Some((panel, mag))
}

/// The tracks' columns the tracking-quality figure and table read, row by row as the table
/// holds them.
struct TrackColumns {
    t: Vec<Option<f64>>,
    x: Vec<Option<f64>>,
    frame: Vec<Option<f64>>,
    sigma: Vec<Option<f64>>,
    by_marker: ByMarker,
}

impl TrackColumns {
    /// The columns of the tracks table at `path`, read and checked as `Tracks`.
    fn read(path: &Path) -> Result<TrackColumns, PipelineError> {
        let tracks = flexbench_tables::read_tracks(path)?;
        let rows = tracks.rows();
        let names: Vec<Option<String>> = rows.iter().map(|r| Some(r.marker.clone())).collect();
        Ok(TrackColumns {
            t: rows.iter().map(|r| Some(r.t)).collect(),
            x: rows.iter().map(|r| r.x).collect(),
            frame: rows.iter().map(|r| Some(r.frame as f64)).collect(),
            sigma: rows.iter().map(|r| r.sigma_px).collect(),
            by_marker: by_marker(&names),
        })
    }
}

/// Tracking quality: each marker's centre sigma over time (figure) and its gaps (table), with
/// the tracking record's counts; returns that record (None for imported tracks).
fn tracking_quality(
    page: &mut RunPage,
    dirs: &StageDirs,
) -> Result<Option<TrackSummary>, PipelineError> {
    let tc = TrackColumns::read(&dirs.track.join("tracks.parquet"))?;
    // The recording's frames (a marker's gap may be a row without x, y or no row at all).
    let all_frames: BTreeSet<i64> = tc.frame.iter().flatten().map(|f| *f as i64).collect();
    let smooth_summary = SmoothRecord::read(&dirs.smooth.join("markers.summary.json"))?;
    let mut qrows: Vec<Vec<String>> = Vec::new();
    let mut curves = Vec::new();
    for (name, rows) in tc.by_marker.names.iter().zip(&tc.by_marker.rows) {
        qrows.push(marker_quality_row(
            name,
            rows,
            &tc,
            &all_frames,
            &smooth_summary,
        ));
        curves.push(Curve {
            label: name.clone(),
            x: rows.iter().map(|&i| tc.t[i].unwrap_or(f64::NAN)).collect(),
            y: rows.iter().map(|&i| tc.sigma[i]).collect(),
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
        page.figure(&fig, "tracking-quality", "Standard deviation of each marker's sub-pixel centre as the tracker estimates it from the blob's intensity, frame by frame; a break in a line is a gap (the marker not seen: marked, never invented).".into())?;
    }
    // A run on a tracks table has no tracking record: flexbench did not track.
    let summary_path = dirs.track.join("tracks.summary.json");
    let record = match summary_path.exists() {
        true => Some(TrackRecord::read(&summary_path)?),
        false => None,
    };
    let corrections = record
        .as_ref()
        .map(|r| r.corrections.clone())
        .unwrap_or_default();
    let track_summary = record.map(|r| r.summary);
    let tracking = match &track_summary {
        Some(ts) => format!(
            "{} frames, {} detections, {} gaps, {} rejected blobs, markers locked at frame {}. Time base: {}.{} {}",
            ts.frames, ts.detections, ts.gaps, ts.rejected_blobs, ts.lock_frame,
            ts.timing.sentence(),
            ts.timing.warnings.iter().map(|w| format!(" Warning: {w}.")).collect::<String>(),
            flags_sentence(ts)
        ),
        None => "The tracks were imported from a table made by another tool: flexbench did not track them.".into(),
    };
    let mut note = Note::new("Tracking").text(tracking);
    if let Some(d) = track_summary.as_ref().and_then(|ts| ts.depth.as_ref()) {
        note = note.text(format!(
            "The markers' spacings against the mechanism file's: {:+.3} %, a depth of {:.2} +- {:.2} mm in front of the bench plane (standard error over {} frames); the tracks use {:.2} mm{}.{}",
            (d.scale - 1.0) * 100.0,
            d.depth_m * 1e3,
            d.sigma_m * 1e3,
            d.frames,
            d.used_m * 1e3,
            if d.applied { ", the estimate" } else { "" },
            d.warning().map(|w| format!(" Warning: {w}.")).unwrap_or_default()
        ));
    }
    if let Some(r) = track_summary.as_ref().and_then(|ts| ts.readout.as_ref()) {
        note = note.text(format!(
            "The markers' rigid patterns against their deformation by a rolling shutter: a readout of {:.2} +- {:.2} ms ({} body-frames, {:.3} mm RMS misfit); the tracks use {:.2} ms{}.{}",
            r.readout_s * 1e3,
            r.sigma_s * 1e3,
            r.fits,
            r.misfit_mm,
            r.used_s * 1e3,
            if r.applied { ", the estimate" } else { "" },
            r.warning().map(|w| format!(" Warning: {w}.")).unwrap_or_default()
        ));
    }
    if !corrections.is_empty() {
        note = note.text(format!(
            "The user's corrections (corrections.toml), applied as the video was tracked: {}.",
            corrections.join("; ")
        ));
    }
    page.note(note.table(
        &[
            "marker",
            "frames seen",
            "gaps (frames)",
            "longest gap (frames)",
            "median sigma (px)",
            "95th percentile sigma (px)",
            "noise by the smoother (mm)",
        ],
        qrows,
    ));
    Ok(track_summary)
}

/// The flagged samples in words: how many, by which test (flags.csv of the track stage).
fn flags_sentence(ts: &TrackSummary) -> String {
    if ts.flagged == 0 {
        return "No sample failed a test of the tracked samples.".into();
    }
    let by: Vec<String> = ts
        .flags_by_reason
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    format!(
        "{} sample(s) ({:.2} %) failed a test of the tracked samples (flags.csv: {}); the kinematic fit leaves them out unless [process] keep_flagged.",
        ts.flagged,
        100.0 * ts.flagged as f64 / ts.detections.max(1) as f64,
        by.join(", ")
    )
}

/// One marker's row of the tracking table: frames seen, gaps, the longest gap, the median and
/// 95th percentile of its centre's sigma, the noise the smoother found.
fn marker_quality_row(
    name: &str,
    rows: &[usize],
    tc: &TrackColumns,
    all_frames: &BTreeSet<i64>,
    smooth: &SmoothRecord,
) -> Vec<String> {
    let seen_frames: BTreeSet<i64> = rows
        .iter()
        .filter(|&&i| tc.x[i].is_some())
        .filter_map(|&i| tc.frame[i].map(|f| f as i64))
        .collect();
    let seen: Vec<bool> = all_frames.iter().map(|f| seen_frames.contains(f)).collect();
    let gaps = seen.iter().filter(|s| !**s).count();
    let (mut longest, mut run) = (0usize, 0usize);
    for s in &seen {
        run = if *s { 0 } else { run + 1 };
        longest = longest.max(run);
    }
    let mut sig: Vec<f64> = rows.iter().filter_map(|&i| tc.sigma[i]).collect();
    sig.sort_by(f64::total_cmp);
    let q = |f: f64| {
        sig.get(((sig.len() as f64 - 1.0) * f).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let noise_of = |c: &str| -> Option<f64> {
        let coordinate = format!("{name}.{c}");
        smooth
            .parameters
            .iter()
            .find(|p| p.coordinate == coordinate)?
            .noise_m
    };
    let noise = noise_of("x")
        .zip(noise_of("y"))
        .map(|(a, b)| (0.5 * (a * a + b * b)).sqrt() * 1e3);
    vec![
        name.to_string(),
        (seen.len() - gaps).to_string(),
        gaps.to_string(),
        longest.to_string(),
        format!("{:.4}", q(0.5)),
        format!("{:.4}", q(0.95)),
        noise
            .map(|n| format!("{n:.3}"))
            .unwrap_or_else(|| "-".into()),
    ]
}

/// The calibration's corner residuals drawn over the image, and the calibration's numbers.
fn calibration_residuals(page: &mut RunPage, cdir: &Path) -> Result<(), PipelineError> {
    let corners_file = cdir.join("calibration.corners.csv");
    let motion = crate::motion_calibration::record_path(&cdir.join("calibration.yaml"));
    if motion.exists() {
        return motion_note(page, &motion);
    }
    if !corners_file.exists() {
        return nominal_note(page, cdir);
    }
    let corners = crate::calibrate::read_corners(&corners_file)?;
    let rmax = corners.iter().map(|c| c.du.hypot(c.dv)).fold(0.0, f64::max);
    let rms = (corners
        .iter()
        .map(|c| c.du.powi(2) + c.dv.powi(2))
        .sum::<f64>()
        / corners.len().max(1) as f64)
        .sqrt();
    let cal = flexbench_vision::Calibration::read(&cdir.join("calibration.yaml"))?;
    let (w, h) = (cal.intrinsics.width as f64, cal.intrinsics.height as f64);
    let scale = if rmax > 0.0 { 0.05 * w / rmax } else { 1.0 };
    let border = vec![
        Some((0.0, 0.0)),
        Some((w, 0.0)),
        Some((w, h)),
        Some((0.0, h)),
        Some((0.0, 0.0)),
    ];
    let fig = PlaneFigure {
        caption: format!(
            "Calibration residuals over the image (RMS {rms:.3} px; arrows x{scale:.0})"
        ),
        x_label: "u (px), image column".into(),
        y_label: "v (px), image row, downward".into(),
        y_down: true,
        paths: vec![("image border".into(), border)],
        arrow_groups: vec![format!(
            "corner residual (found - reprojected), x{scale:.0}"
        )],
        arrows: corners.iter().map(|c| (0, c.u, c.v, c.du, c.dv)).collect(),
        scale,
        vector_unit: "px".into(),
    };
    page.plane(&fig, "calibration-residuals", format!("Reprojection residual of every chessboard corner kept for the calibration, drawn where the corner lies in the image, magnified {scale:.0} times; RMS {rms:.3} px, largest {rmax:.3} px. A pattern (rather than scatter) would show a distortion model too poor for the lens."))?;
    let views = corners
        .iter()
        .map(|c| &c.view)
        .collect::<BTreeSet<_>>()
        .len();
    let i = &cal.intrinsics;
    let mut note = Note::new("Calibration").text(format!(
        "RMS reprojection error {:.4} px over {views} views; fx {:.2}, fy {:.2}, cx {:.2}, cy {:.2} px; distortion k1 {:.5}, k2 {:.5}, p1 {:.6}, p2 {:.6}, k3 {:.5}.",
        cal.rms, i.fx, i.fy, i.cx, i.cy, i.dist[0], i.dist[1], i.dist[2], i.dist[3], i.dist[4]
    ));
    if let Some(u) = &cal.plane_uncertainty {
        note = note.text(format!(
            "The bench frame from clicked points of known bench position (points.toml); its {} (the intrinsics' own uncertainty not included).",
            frame_uncertainty(u)
        ));
    }
    page.note(note);
    Ok(())
}

/// The bench frame's uncertainty from the clicks, as the calibration notes state it.
fn frame_uncertainty(u: &flexbench_vision::camera::FrameUncertainty) -> String {
    format!(
        "uncertainty for clicks of {:.2} px: origin {:.3} mm, horizontal {:.3} mrad, scale {:.1e}{}",
        u.click_sigma_px,
        u.origin_mm,
        u.angle_mrad,
        u.scale,
        u.beyond_similarity_mm.map_or(String::new(), |b| format!(
            "; beyond that similarity, the plane bent by {b:.3} mm RMS over its points (not carried to the forces)"
        ))
    )
}

/// The calibration's note for a nominal camera (no board, no corners): what was assumed.
fn nominal_note(page: &mut RunPage, cdir: &Path) -> Result<(), PipelineError> {
    let cal = flexbench_vision::Calibration::read(&cdir.join("calibration.yaml"))?;
    let i = &cal.intrinsics;
    let mut note = Note::new("Calibration").text(format!(
        "No board: a nominal camera ({}), fx {:.1}, fy {:.1}, cx {:.1}, cy {:.1} px, distortion k1 {:.5}, k2 {:.5}, p1 {:.6}, p2 {:.6}, k3 {:.5}; the bench plane from clicked points of known bench position. The scale holds in the plane of the clicked points only (docs/calibration.md).",
        cal.distortion_model.as_deref().unwrap_or("assumed"),
        i.fx, i.fy, i.cx, i.cy, i.dist[0], i.dist[1], i.dist[2], i.dist[3], i.dist[4]
    ));
    if let Some(u) = &cal.plane_uncertainty {
        note = note.text(format!("Its {}.", frame_uncertainty(u)));
    }
    page.note(note);
    Ok(())
}

/// The calibration's note for a camera fitted to the mechanism's motion (`[calibrate]
/// from_motion`): the fit, the lens, and the plane's uncertainty where the markers went.
fn motion_note(page: &mut RunPage, record: &Path) -> Result<(), PipelineError> {
    use crate::StageRecord;
    let r = crate::motion_calibration::MotionRecord::read(record)?;
    let [u0, v0, u1, v1] = r.region_px;
    let note = Note::new("Calibration").text(format!(
        "The camera fitted to the mechanism's motion (calibrate --from-motion): the bench plane's homography and the lens's k1 {:.5} +- {:.5}, k2 {:.5} +- {:.5}, from {} frames ({} marker samples, {} left out) tracked with the start's calibration (calibrate-start), {:.3} px RMS where the start left {:.3} px. Over the region the markers swept ({u0:.0} to {u1:.0} px across, {v0:.0} to {v1:.0} px down) the plane's scale is known to {:.1e} and a position to {:.3} mm; the horizontal to {:.3} mrad (the start's {:.3} mrad). The scale rests on the mechanism file's lengths; outside the swept region the lens is extrapolated (docs/calibration.md).",
        r.k1[0], r.k1[1], r.k2[0], r.k2[1], r.frames, r.samples, r.left_out, r.rms_px,
        r.start_rms_px, r.scale_sd, r.position_sd_mm, r.horizontal_sd_mrad[0], r.horizontal_sd_mrad[1]
    ));
    page.note(note);
    Ok(())
}

/// The overlay video's link and the contact sheet of the flagged samples, when the overlay
/// stage ran.
fn overlay_note(page: &mut RunPage, dirs: &StageDirs) -> Result<(), PipelineError> {
    let Some(dir) = &dirs.overlay else {
        return Ok(());
    };
    let record = crate::overlay::OverlayRecord::read(&dir.join("summary.json"))?;
    let mut spans = vec![
        Span::Text("The recording with the tracked markers (green), the gaps (yellow), the flagged samples (red) and the fitted mechanism (cyan) drawn on every frame: ".into()),
        Span::Link {
            text: format!("overlay/{}", record.video),
            // The report's folder and the overlay's are siblings in the run's folder.
            href: Path::new("..")
                .join("overlay")
                .join(&record.video)
                .display()
                .to_string(),
        },
        Span::Text(format!(" ({} frames, {}); ", record.frames, record.codec)),
        Span::Bold(format!("{} flagged sample(s)", record.flagged)),
        Span::Text(".".into()),
    ];
    match &record.review {
        Some(page) => spans.extend([
            Span::Text(" Review them one by one (accept, drop, or click the true centre) and download corrections.toml: ".into()),
            Span::Link {
                text: format!("overlay/{page}"),
                href: Path::new("..").join("overlay").join(page).display().to_string(),
            },
            Span::Text(".".into()),
        ]),
        None => spans.push(Span::Text(" No sample was flagged.".into())),
    }
    page.note(Note::new("Overlay").paragraph(spans));
    page.show_from("overlay", dir, "overlay-flagged", "The flagged samples (the first 48): 64 x 64 px of the recording about each marker, drawn twice as large, with its frame, its name and the tests it failed (flags.csv of the track stage, fit_flags.csv of the process stage).");
    Ok(())
}

/// The figures the earlier stages drew, shown from their own folders, and the overlay's note.
fn stage_figures(
    page: &mut RunPage,
    dirs: &StageDirs,
    model: Option<&str>,
    crank: &Crank,
) -> Result<(), PipelineError> {
    let forces = match crank.is_none() {
        false => "Liaison forces at B and C' over time, from the inverse dynamics of the measured motion.",
        true => "The joints' forces over time, from the inverse dynamics of the measured motion.",
    };
    let accelerations = format!("The markers' accelerations measured (process stage, from the fitted motion) against the {} bench simulated at the recording's mean crank speed, aligned by the crank angle; NRMSE and phase lag per component in each panel's title.", model.unwrap_or("rigid"));
    let none = PathBuf::new();
    let (compare, fem) = (
        dirs.compare.as_ref().unwrap_or(&none),
        dirs.fem.as_ref().unwrap_or(&none),
    );
    for (stage, dir, stem, caption) in [
        ("compare", compare, "accelerations", accelerations.as_str()),
        ("compare", compare, "elastic-effect-forces", "The elastic lever's effect on the simulated liaison forces and actuators: the coupled elastic bench minus the same bench rigid, over a turn at the same motor reference."),
        ("compare", compare, "elastic-effect-accelerations", "The elastic lever's effect on the simulated markers' accelerations: the coupled elastic bench minus the same bench rigid, over a turn."),
        ("compare", compare, "forces", "Liaison forces at B and C' from the measured motion against the simulated bench, aligned by the crank angle."),
        ("compare", compare, "spectra-accelerations", "Harmonic content (amplitude of each harmonic of the crank angle) of the markers' accelerations, measured and simulated."),
        ("compare", compare, "spectra-forces", "Harmonic content of the liaison forces at B and C', measured and simulated."),
        ("fem", fem, "modes-3-6", "Eigenfrequencies of the lever's modes 3 to 6 along the cycle (seed 001 Fig. 8), symmetric problem and full problem with the gyroscopic and skew terms."),
        ("fem", fem, "modes-1-2", "Eigenfrequencies of the lever's modes 1 and 2 along the cycle (seed 000 Fig. 6)."),
        ("fem", fem, "mode-shapes", "Shapes of the followed modes at the recording's first sample."),
        ("fem", fem, "deflection", "The lever's deflection at the markers: forced response of the FEM model against the measured residual of the rigid fit (each detrended by its best-fit line)."),
        ("compare", compare, "measured", "The computed joint torques and forces (inverse dynamics of the measured motion) against the rig's own measurement on its clock, and without the mechanism file's friction where it has one."),
        ("process", &dirs.process, "forces", forces),
    ] {
        if dir.as_os_str().is_empty() {
            continue;
        }
        page.show_from(stage, dir, stem, caption);
    }
    overlay_note(page, dirs)
}

/// With the elastic model: its effect against the rigid bench, a row per simulated quantity.
fn elastic_note(page: &mut RunPage, compare: &CompareRecord) {
    if compare.elastic_effect.is_empty() {
        return;
    }
    let rows = compare
        .elastic_effect
        .iter()
        .map(|e| {
            vec![
                e.quantity.clone(),
                e.unit.clone(),
                format!("{:.3}", e.rigid_peak),
                format!("{:.4}", e.peak_difference),
                format!("{:.4}", e.rms_difference),
                format!("{:.2}", 100.0 * e.peak_difference / e.rigid_peak),
            ]
        })
        .collect();
    let header = [
        "quantity",
        "unit",
        "rigid peak",
        "peak difference",
        "RMS difference",
        "peak difference (% of peak)",
    ];
    page.note(
        Note::new("The elastic lever against the rigid bench")
            .text("The comparison ran against the coupled elastic simulation of the mechanism file. The same bench with every body rigid was simulated at the same motor reference; over one turn, sample by sample at the same crank angle:")
            .table(&header, rows),
    );
}

/// The kinematic fit's and the inverse dynamics' numbers.
fn kinematics_note(page: &mut RunPage, process: &ProcessRecord) {
    let fit = &process.fit;
    let per_marker: String = fit
        .rms_per_marker
        .iter()
        .map(|(name, rms)| format!("{name} {:.3} mm", rms * 1e3))
        .collect::<Vec<_>>()
        .join(", ");
    page.note(
        Note::new("Kinematics and inverse dynamics")
            .text(format!(
                "{} samples; markers' RMS residual from the fitted mechanism {:.3} mm ({per_marker}); horizontal correction {:.2} mrad; {} toggle sample(s), largest condition number {:.1}.",
                process.samples,
                fit.rms * 1e3,
                process.horizontal_correction_rad.unwrap_or(0.0) * 1e3,
                process.inverse_dynamics.toggle_samples,
                process.inverse_dynamics.max_condition
            ))
            .text(residual_sentence(&process.residual_test)),
    );
}

/// The warnings of the process, fem and compare stages, each with its stage's name.
fn stage_warnings(process: &ProcessRecord, records: &Records) -> Vec<StageWarning> {
    let mut warnings = Vec::new();
    let none = Vec::new();
    for (stage, s) in [
        ("process", &process.warnings()),
        ("fem", records.fem.as_ref().map_or(&none, |f| &f.warnings)),
        (
            "compare",
            records.compare.as_ref().map_or(&none, |c| &c.warnings),
        ),
        (
            "compare",
            records.measured.as_ref().map_or(&none, |m| &m.warnings),
        ),
    ] {
        warnings.extend(s.iter().map(|w| StageWarning {
            stage: stage.into(),
            warning: w.clone(),
        }));
    }
    warnings
}

/// The run's methods in a paragraph fit for a paper's methods section: how the markers were
/// smoothed and differentiated (the smooth stage, with what it chose), how the mechanism's
/// motion was estimated, the inverse dynamics, the lever's model and the comparison.
fn methods_note(page: &mut RunPage, dirs: &StageDirs, process: &ProcessRecord, records: &Records) {
    let mut text = Vec::new();
    if let Ok(smooth) = SmoothRecord::read(&dirs.smooth.join("markers.summary.json")) {
        text.push(format!(
            "The markers' model-free kinematics (the smooth stage): each coordinate smoothed and differentiated ({}){}.",
            smooth.method,
            smooth_choices(&smooth)
        ));
    }
    text.push(method_sentence(process));
    if let Some(c) = &process.shutter {
        text.push(format!(
            "The rolling shutter's {} late samples were fitted at their own times: carried to their frame's time along the fitted motion (they moved {:.3} mm RMS, {:.3} mm at most, from the carry along each marker's own path) and the motion fitted again.",
            c.samples, c.rms_change_mm, c.max_change_mm
        ));
    }
    text.push(format!(
        "The liaison forces follow per sample from the Newton-Euler equations of the rigid bodies, a linear system solved by LU; a sample whose scaled 1-norm condition number exceeds {:.0e} is reported as a toggle position, not solved. Their bands: {}.",
        process.inverse_dynamics.max_condition_allowed, process.bands
    ));
    if let Some(fem) = &records.fem {
        let response = fem.response.as_ref().map_or(String::new(), |r| {
            format!(
                "; its forced response by Newmark's average acceleration (steps of at most {:.0e} s) with Rayleigh damping ({:.3e}, {:.3e})",
                r.max_step_s, r.rayleigh_alpha, r.rayleigh_beta
            )
        });
        text.push(format!(
            "The elastic lever was modelled by {} {} beam elements ({} supports) in the measured rigid motion (Kane's formalism), its lowest {} modes followed along the cycle by their modal assurance criterion{response}.",
            fem.elements, fem.element, fem.supports, fem.modes
        ));
    }
    if let Some(compare) = &records.compare {
        text.push(format!(
            "Measured and simulated quantities are compared as Fourier series of the crank angle ({} harmonics), the bench simulated at the recording's mean crank speed.",
            compare.harmonics
        ));
    }
    if let Some(m) = &records.measured {
        text.push(measured_sentence(m));
    }
    page.note(Note::new("Methods").text(text.join(" ")));
}

/// What the smooth stage chose over the coordinates, in words (empty for Savitzky-Golay).
fn smooth_choices(smooth: &SmoothRecord) -> String {
    let range = |v: Vec<f64>, what: &str, scale: f64, unit: &str| -> Option<String> {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (!v.is_empty()).then(|| format!("{what} {:.1} to {:.1}{unit}", lo * scale, hi * scale))
    };
    let p = &smooth.parameters;
    let parts: Vec<String> = [
        range(
            p.iter().filter_map(|c| c.cutoff_hz).collect(),
            "cutoffs",
            1.0,
            " Hz",
        ),
        range(
            p.iter().filter_map(|c| c.spline_dof).collect(),
            "effective degrees of freedom",
            1.0,
            "",
        ),
        range(
            p.iter().filter_map(|c| c.noise_m).collect(),
            "noise",
            1e6,
            " um",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!(", choosing per coordinate: {}", parts.join("; ")),
    }
}

/// How the process stage estimated the motion, in words: the smoother (and the periodic
/// refit), or the markers' filter through the loop's analysis with what the Butterworth filter
/// or the smoothing spline chose over the coordinates.
fn method_sentence(process: &ProcessRecord) -> String {
    let d = &process.differentiation;
    if process.smoother.is_some() {
        let periodic = match process.periodic.is_some() {
            true => ", the drivers then refitted as Fourier series of the crank angle",
            false => "",
        };
        return format!("The motion was estimated by the Kalman/RTS smoother on the mechanism's driving coordinates{periodic}.");
    }
    let range = |v: Vec<f64>, what: &str, unit: &str| match v.is_empty() {
        true => String::new(),
        false => {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!(" ({what} {lo:.1} to {hi:.1}{unit} over the markers' coordinates)")
        }
    };
    let cutoffs = range(
        d.choices.iter().filter_map(|c| c.cutoff_hz).collect(),
        "cutoffs",
        " Hz",
    );
    let dof = range(
        d.choices.iter().filter_map(|c| c.spline_dof).collect(),
        "effective degrees of freedom",
        &format!(" of {}", process.samples),
    );
    format!(
        "The markers were smoothed and differentiated ({}){cutoffs}{dof}, then fitted by the mechanism sample by sample.",
        d.method
    )
}

/// The fitted mechanism's residual test in words (fit_flags.csv of the process stage).
fn residual_sentence(test: &crate::process::ResidualTestRecord) -> String {
    let level = format!("at a false-alarm level of {:.0e}", test.false_alarm);
    if let Some(why) = &test.skipped {
        return format!("The fitted mechanism's residual test ({level}) {why}.");
    }
    match (test.flagged, test.left_out) {
        (0, _) => format!("No sample failed the fitted mechanism's residual test ({level})."),
        (n, true) => format!(
            "{n} sample(s) failed the fitted mechanism's residual test ({level}; fit_flags.csv): left out as gaps and the motion refitted ({} fits).",
            test.fits
        ),
        (n, false) => format!(
            "{n} sample(s) failed the fitted mechanism's residual test ({level}; fit_flags.csv): kept in the fit ([process] keep_flagged)."
        ),
    }
}

/// The records of the stages that ran only where the mechanism or the inputs call for them.
struct Records {
    /// The fem stage's, with the bench's elastic lever.
    fem: Option<FemRecord>,
    /// The simulated comparison's, where the mechanism has a crank to simulate by.
    compare: Option<CompareRecord>,
    /// The measured comparison's, with the rig's measured table.
    measured: Option<MeasuredRecord>,
}

impl Records {
    fn read(dirs: &StageDirs) -> Result<Records, PipelineError> {
        let fem = match &dirs.fem {
            Some(d) => Some(FemRecord::read(&d.join("summary.json"))?),
            None => None,
        };
        let read = |name: &str| {
            dirs.compare
                .as_ref()
                .map(|d| d.join(name))
                .filter(|p| p.exists())
        };
        Ok(Records {
            fem,
            compare: read("summary.json")
                .map(|p| CompareRecord::read(&p))
                .transpose()?,
            measured: read("measured.json")
                .map(|p| MeasuredRecord::read(&p))
                .transpose()?,
        })
    }
}

/// The measured comparison in the methods' words.
fn measured_sentence(m: &MeasuredRecord) -> String {
    let filter = m.spec.cutoff_hz.map_or(String::new(), |hz| {
        format!(", low-passed at {hz} Hz by a zero-lag fourth-order Butterworth filter")
    });
    let friction = if m.friction.is_empty() {
        String::new()
    } else {
        format!("; the share of the frictionless model's squared error that the file's friction ({}) explains is stated once the clocks are aligned", m.friction.join(", "))
    };
    format!(
        "The computed joint torques and forces are compared with the rig's measurement ({}{filter}) on its own clock (times shifted by {} s), the computed series carried to the measured times by a natural cubic spline; the lag is the shift (within {} s) that leaves the difference least variable{friction}.",
        m.measured, m.spec.time_offset_s, m.spec.max_lag_s
    )
}

/// The measured comparison's table: each quantity's RMS and mean difference, peaks, lag and
/// the share the friction explains.
fn measured_note(page: &mut RunPage, m: &MeasuredRecord) {
    let rows = m
        .quantities
        .iter()
        .map(|q| {
            let share =
                q.c.friction_share
                    .map_or("-".to_string(), |s| format!("{:.1}", 100.0 * s));
            vec![
                q.quantity.clone(),
                q.unit.clone(),
                q.c.samples.to_string(),
                format!("{:.4}", q.c.rms_difference),
                format!("{:+.4}", q.c.mean_difference),
                format!("{:.3} at {:.3} s", q.c.computed_peak.0, q.c.computed_peak.1),
                format!("{:.3} at {:.3} s", q.c.measured_peak.0, q.c.measured_peak.1),
                format!("{:.3}", q.c.correlation),
                format!("{:+.1}", 1e3 * q.c.lag),
                format!("{:.4}", q.c.rms_after_lag),
                share,
            ]
        })
        .collect();
    let header = [
        "quantity",
        "unit",
        "samples",
        "RMS difference",
        "mean difference",
        "computed peak",
        "measured peak",
        "correlation",
        "lag (ms)",
        "RMS after the lag",
        "friction explains (%)",
    ];
    page.note(
        Note::new("Computed against the rig's measurement")
            .text(format!(
                "The measured table {} (time column '{}'), each column against the forces table's; measured minus computed.",
                m.measured, m.time_column
            ))
            .table(&header, rows),
    );
}

/// The comparison's table: each quantity's NRMSE, peaks and phase lag.
fn comparison_note(page: &mut RunPage, compare: &CompareRecord) {
    let rows = compare
        .quantities
        .iter()
        .map(|q| {
            vec![
                q.quantity.clone(),
                q.unit.clone(),
                format!("{:.2}", 100.0 * q.nrmse),
                format!("{:.3}", q.rms_error),
                format!("{:.3}", q.measured_peak),
                format!("{:.1}", q.measured_peak_angle_deg),
                format!("{:.3}", q.simulated_peak),
                format!("{:.1}", q.simulated_peak_angle_deg),
                format!("{:.2}", q.phase_lag_deg),
            ]
        })
        .collect();
    let header = [
        "quantity",
        "unit",
        "NRMSE (%)",
        "RMS error",
        "measured peak",
        "at (deg)",
        "simulated peak",
        "at (deg)",
        "phase lag (deg)",
    ];
    page.note(
        Note::new("Measured against simulated")
            .text(format!(
                "Recording's mean crank speed {:.2} rpm; the {} bench simulated at {:.2} rpm (motor reference {:.2} rpm, the file's {:.2} rpm); {} harmonics of the crank angle.",
                compare.measured_crank_speed_rpm,
                compare.model,
                compare.simulated_crank_speed_rpm,
                compare.motor_reference_rpm_simulated.unwrap_or(f64::NAN),
                compare.motor_reference_rpm_in_file.unwrap_or(f64::NAN),
                compare.harmonics
            ))
            .table(&header, rows),
    );
}

/// The lever's model, its frequency ranges and its deflection against the measured one.
fn lever_note(page: &mut RunPage, fem: &FemRecord) {
    let rows = fem
        .frequency_range_hz
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let at = |i: usize| r.get(i).copied().unwrap_or(f64::NAN);
            vec![
                (k + 1).to_string(),
                format!("{:.2}", at(0)),
                format!("{:.2}", at(1)),
            ]
        })
        .collect();
    let meas = |f: fn(&MeasuredDeflection) -> f64| fem.measured.as_ref().map_or(f64::NAN, f);
    page.note(
        Note::new("The elastic lever")
            .text(format!(
                "{} {} elements, supports {:?}; smallest MAC between successive samples {:.4}; full against symmetric frequencies within {:.1e} (relative).",
                fem.elements,
                fem.element,
                fem.supports.as_str(),
                fem.smallest_mac_along_the_cycle,
                fem.full_vs_symmetric_max_relative,
            ))
            .table(&["mode", "lowest (Hz)", "highest (Hz)"], rows)
            .text(format!(
                "Deflection at the markers: model {:.3} mm RMS, measured residual {:.3} mm RMS, correlation {:.2}.",
                meas(|m| m.rms_model_detrended_m) * 1e3,
                meas(|m| m.rms_measured_detrended_m) * 1e3,
                meas(|m| m.correlation)
            )),
    );
}

/// The tracks and the markers' fitted kinematics as TRC and C3D; returns the tracks' frame rate
/// and the files left out: a recording too long for C3D's 16-bit frame numbers (over 4.5 min
/// at 240 frames/s) gets its TRC files only, with a warning, not a failed run.
fn interchange_files(
    page: &mut RunPage,
    dirs: &StageDirs,
) -> Result<(f64, Vec<String>), PipelineError> {
    use flexbench_tables::interchange::{fits_c3d, write_c3d, write_trc, Trajectories};
    let tracks = flexbench_tables::read_tracks(&dirs.track.join("tracks.parquet"))?;
    let traj = Trajectories::from_tracks(&tracks)?;
    let fitted = Trajectories::from_markers_table(&dirs.process.join("markers.parquet"))?;
    let mut skipped = Vec::new();
    for (tr, stem) in [(&traj, "tracks"), (&fitted, "markers")] {
        page.files
            .push(write_trc(tr, &page.out().join(format!("{stem}.trc")))?);
        if fits_c3d(tr) {
            page.files
                .push(write_c3d(tr, &page.out().join(format!("{stem}.c3d")))?);
        } else {
            skipped.push(format!(
                "{stem}.c3d not written: its {} frames of {} markers from frame {} exceed the C3D header's frame numbers (at most 65535) or marker count (255); {stem}.trc holds them all",
                tr.positions.len(),
                tr.markers.len(),
                tr.first_frame
            ));
        }
    }
    Ok((traj.rate, skipped))
}

/// What the report is asked for: its title, and whether the tables are also written as CSV
/// with a units row (`[report] csv_units`).
#[derive(Debug, Clone, Copy)]
pub struct ReportPage<'a> {
    /// The report's title.
    pub title: &'a str,
    /// Every table also as CSV with a units row, in `tables/`.
    pub csv_units: bool,
}

/// The run's results in the files users open, written side by side (the run's last stage has
/// both cores): `results.mat` (MATLAB level 5: a variable per table, `<stage>_<table>`, a
/// struct of column vectors with a `units` struct, and per summary, `<stage>_<summary>`, nested
/// structs) and `results.xlsx` (the process stage's markers, bodies and forces, the lever's
/// modes and the comparison, a sheet each, with a units row); with `csv_units`, every table as
/// `tables/<stage>_<table>.csv` with a units row under the names. One table is held at a time.
fn result_files(
    page: &mut RunPage,
    dirs: &StageDirs,
    csv_units: bool,
) -> Result<(), PipelineError> {
    let out = page.out().to_path_buf();
    let stages: Vec<(&str, &Path)> = [
        Some(("track", dirs.track.as_path())),
        Some(("smooth", dirs.smooth.as_path())),
        Some(("process", dirs.process.as_path())),
        dirs.overlay.as_deref().map(|d| ("overlay", d)),
        dirs.fem.as_deref().map(|d| ("fem", d)),
        dirs.compare.as_deref().map(|d| ("compare", d)),
        Some(("report", out.as_path())),
    ]
    .into_iter()
    .flatten()
    .collect();
    let (mat, xlsx) = (
        page.out().join("results.mat"),
        page.out().join("results.xlsx"),
    );
    let none = PathBuf::new();
    let (fem, compare) = (
        dirs.fem.as_ref().unwrap_or(&none),
        dirs.compare.as_ref().unwrap_or(&none),
    );
    let sheets = [
        (&dirs.process, "markers"),
        (&dirs.process, "bodies"),
        (&dirs.process, "forces"),
        (fem, "modal"),
        (compare, "comparison"),
        (compare, "measured_comparison"),
    ]
    .map(|(dir, stem)| (dir.join(format!("{stem}.parquet")), stem));
    let (made_mat, made_xlsx) = std::thread::scope(|s| {
        let book = s.spawn(|| {
            let tables = sheets
                .iter()
                .filter(|(path, _)| path.exists())
                .map(|(path, stem)| {
                    Ok((flexbench_tables::read_any(path, stem)?, stem.to_string()))
                });
            flexbench_tables::excel::write_workbook(&xlsx, tables)
        });
        let made_mat = write_mat_file(&mat, &stages);
        let made_xlsx = book.join().unwrap_or_else(|_| {
            Err(flexbench_tables::TableError::Export(
                "the workbook's thread stopped unexpectedly".into(),
            ))
        });
        (made_mat, made_xlsx)
    });
    made_mat?;
    made_xlsx?;
    page.files.extend([mat, xlsx]);
    if csv_units {
        let dir = out.join("tables");
        crate::ensure_dir(&dir)?;
        for (stage, folder) in &stages {
            for (file, stem) in files_with(folder, ".parquet")? {
                let table = flexbench_tables::read_any(&file, &stem)?;
                let path = dir.join(format!("{stage}_{stem}.csv"));
                flexbench_tables::write_csv_with_units(&table, &stem, &path)?;
                page.files.push(path);
            }
        }
    }
    Ok(())
}

/// The MATLAB file of the stages' folders ([`result_files`]).
fn write_mat_file(path: &Path, stages: &[(&str, &Path)]) -> Result<(), PipelineError> {
    use flexbench_tables::matlab::{table_struct, write_mat, MatValue};
    use flexbench_tables::TableError;
    let mut files = Vec::new();
    for (stage, dir) in stages {
        for suffix in [".parquet", ".json"] {
            for (file, stem) in files_with(dir, suffix)? {
                files.push((format!("{stage}_{stem}"), file, stem));
            }
        }
    }
    let vars = files.into_iter().map(|(name, file, stem)| {
        let value = match file.extension().is_some_and(|e| e == "json") {
            false => table_struct(&flexbench_tables::read_any(&file, &stem)?, &stem),
            true => {
                let text = std::fs::read_to_string(&file).map_err(|e| TableError::Io {
                    path: file.display().to_string(),
                    reason: e.to_string(),
                })?;
                let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                    TableError::Export(format!("{}: not JSON: {e}", file.display()))
                })?;
                MatValue::from_json(&value)
            }
        };
        Ok((name, value))
    });
    Ok(write_mat(path, vars)?)
}

/// The files of `dir` whose names end in `suffix` (sorted), with their names less the suffix;
/// none but stage records among the JSON files (`stage.json`, the run's bookkeeping, left out).
fn files_with(dir: &Path, suffix: &str) -> Result<Vec<(PathBuf, String)>, PipelineError> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| crate::io_error(dir, "list the folder", e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| crate::io_error(dir, "list the folder", e))?
            .path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(stem) = name.strip_suffix(suffix) {
            if stem != "stage" && !stem.ends_with(".tmp") {
                out.push((path.clone(), stem.to_string()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The peak liaison forces at B and C' over the recording and their crank angles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    /// Peak |F| at B, N.
    #[serde(
        rename = "peak_force_B_n",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub b_n: Option<f64>,
    /// Its crank angle, deg.
    #[serde(
        rename = "peak_force_B_crank_angle_deg",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub b_deg: Option<f64>,
    /// Peak |F| at C', N.
    #[serde(
        rename = "peak_force_C_n",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub c_n: Option<f64>,
    /// Its crank angle, deg.
    #[serde(
        rename = "peak_force_C_crank_angle_deg",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub c_deg: Option<f64>,
}

impl Peaks {
    fn set(&mut self, joint: &str, magnitude: Option<f64>, deg: f64) {
        let (n, d) = match joint {
            "B" => (&mut self.b_n, &mut self.b_deg),
            _ => (&mut self.c_n, &mut self.c_deg),
        };
        // A magnitude that is not there is written as null, as before (the key present).
        *n = Some(magnitude.unwrap_or(f64::NAN));
        *d = Some(deg);
    }
}

/// The report stage's record (`summary.json`): the run's key numbers, which the batch summary
/// reads. Written and read back by this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportRecord {
    /// The report's title.
    pub title: String,
    /// Frames tracked (None for imported tracks).
    pub frames: Option<usize>,
    /// The tracks' frame rate, Hz.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub frame_rate_hz: f64,
    /// The recording's mean crank speed, rpm.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub crank_speed_rpm: f64,
    /// The markers' largest acceleration, m/s^2.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub largest_acceleration_m_s2: f64,
    /// The marker that reaches it.
    pub largest_acceleration_marker: String,
    /// RMS residual of the fitted mechanism at the markers, mm.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub fit_rms_mm: f64,
    /// Mean NRMSE of the markers' accelerations against the simulated bench.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub acceleration_nrmse_mean: f64,
    /// Largest NRMSE of an acceleration component.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub acceleration_nrmse_max: f64,
    /// Mean NRMSE of the liaison forces' components.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub force_nrmse_mean: f64,
    /// Largest NRMSE of a force component.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub force_nrmse_max: f64,
    /// Per followed mode, its lowest and highest frequency along the cycle, Hz.
    #[serde(deserialize_with = "flexbench_contracts::json::nested_f64_or_nan")]
    pub mode_frequency_ranges_hz: Vec<Vec<f64>>,
    /// Every stage's warnings, with the stage that found each.
    pub warnings: Vec<StageWarning>,
    /// Figures in the report.
    pub figures: usize,
    /// The peak liaison forces.
    #[serde(flatten)]
    pub peaks: Peaks,
}

/// The report stage's own numbers, beside those it takes from the compare and fem records.
struct ReportNumbers {
    title: String,
    frames: Option<usize>,
    frame_rate_hz: f64,
    fit_rms_mm: f64,
    largest: Largest,
    figures: usize,
    peaks: Peaks,
    warnings: Vec<StageWarning>,
}

impl ReportRecord {
    /// The run's key numbers: the report's own, and the accelerations' and forces' NRMSE, the
    /// crank speed and the modes' frequency ranges from the compare and fem records.
    fn new(
        own: ReportNumbers,
        compare: Option<&CompareRecord>,
        fem: Option<&FemRecord>,
    ) -> ReportRecord {
        let nrmse = |unit: &str| -> Vec<f64> {
            compare
                .map_or(&[][..], |c| &c.quantities[..])
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
        ReportRecord {
            title: own.title,
            frames: own.frames,
            frame_rate_hz: own.frame_rate_hz,
            crank_speed_rpm: compare.map_or(f64::NAN, |c| c.measured_crank_speed_rpm),
            largest_acceleration_m_s2: own.largest.0,
            largest_acceleration_marker: own.largest.1,
            fit_rms_mm: own.fit_rms_mm,
            acceleration_nrmse_mean: mean(&na),
            acceleration_nrmse_max: na.iter().copied().fold(f64::NAN, f64::max),
            force_nrmse_mean: mean(&nf),
            force_nrmse_max: nf.iter().copied().fold(f64::NAN, f64::max),
            mode_frequency_ranges_hz: fem.map_or(Vec::new(), |f| f.frequency_range_hz.clone()),
            warnings: own.warnings,
            figures: own.figures,
            peaks: own.peaks,
        }
    }
}

impl crate::StageRecord for ReportRecord {
    const STAGE: &'static str = "report";
}
