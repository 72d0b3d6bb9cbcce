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

mod figures;
use figures::*;
mod notes;
use notes::*;
mod files;
use files::*;

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
    // Long: the report stage's steps in their order (each stage's records read, the figures, the
    // notes, the page, the files), each a call.
    let title = options.title;
    let mut page = RunPage::new(out);
    // The markers' measured kinematics (the fitted motion of the process stage, consistent with
    // the forces and the comparison): trajectories and the acceleration field.
    events(StageEvent::Progress(
        "trajectories and acceleration field",
        0.0,
    ));
    let markers = crate::folders::ProcessedFolder::new(&dirs.process)
        .table(crate::folders::ProcessedTable::Markers);
    let process_summary = ProcessRecord::read(&dirs.process.join(crate::folders::SUMMARY))?;
    let cols = MarkerColumns::read(&markers)?;
    // The crank angle where the mechanism has a crank; the whole recording otherwise.
    let crank = match mech.body_index("crank") {
        Some(_) => {
            let (t, phi) = crate::compare::crank_angle(
                &crate::folders::ProcessedFolder::new(&dirs.process)
                    .table(crate::folders::ProcessedTable::Bodies),
            )?;
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
    let summary = out.join(crate::folders::SUMMARY);
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
    flexbench_contracts::atomic::write_bytes(&path, html.as_bytes())
        .map_err(|e| PipelineError::io(&path, "be written", e))?;
    page.files.push(path);
    Ok(page.files)
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
            Some(d) => Some(FemRecord::read(&d.join(crate::folders::SUMMARY))?),
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

/// What the report is asked for: its title, and whether the tables are also written as CSV
/// with a units row (`[report] csv_units`).
#[derive(Debug, Clone, Copy)]
pub struct ReportPage<'a> {
    /// The report's title.
    pub title: &'a str,
    /// Every table also as CSV with a units row, in `tables/`.
    pub csv_units: bool,
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
