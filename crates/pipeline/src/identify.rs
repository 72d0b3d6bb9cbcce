//! The identify job: the mechanism file's uncertain numbers identified from a processed
//! recording (its bodies table), each actuator's solved force held against its law and each
//! measured torque or force against the solved one ([`flexbench_identify`]); and the forces'
//! sensitivities to every parameter of the file ([`flexbench_mechanism::sensitivity`]), as the
//! RMS change of each force per 10 % of each parameter. Writes `identify.json`, the
//! sensitivities' table and the mechanism file with the identified values (a new file beside
//! them; the given one is never touched). Everything is read, checked and computed before
//! anything is written.

use std::path::{Path, PathBuf};

use flexbench_contracts::{Column, Table};
pub use flexbench_identify::Estimate;
use flexbench_identify::{Identification, MeasuredColumn, Settings};
use flexbench_mechanism::parameters::file_parameters;
use flexbench_mechanism::sensitivity::OriginMotion;
use flexbench_mechanism::Mechanism;
use serde::{Deserialize, Serialize};

use crate::compare_measured::MeasuredSpec;
use crate::{ensure_dir, PipelineError, StageRecord};

/// What to identify: the command line's flags and the Python function's keywords, by the
/// same names (a measured table read by the `[compare]` section's keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdentifySpec {
    /// The file's numbers set free, by key (`k`, `mw`, `joints.axle.friction.viscous`).
    pub free: Vec<String>,
    /// Whether each measured column's offset is identified with them.
    pub free_offset: bool,
    /// Measured column -> the forces table's column it measures (`{ torque = "motor_torque" }`).
    pub measured_columns: std::collections::BTreeMap<String, String>,
    /// The measured table's time column, s (default `t`, else `time`).
    pub measured_time: Option<String>,
    /// Added to the measured times to put them on the recording's clock, s.
    pub measured_offset_s: f64,
    /// The measured series low-passed at this frequency (zero-lag Butterworth), Hz.
    pub measured_cutoff_hz: Option<f64>,
    /// Both sides of the equations low-passed at this frequency, Hz (None: [`DEFAULT_CUTOFF_HZ`]
    /// or a quarter of the sampling rate, whichever is lower).
    pub cutoff_hz: Option<f64>,
    /// The equations fitted as they are, not low-passed.
    pub unfiltered: bool,
    /// Replicates of the parametric bootstrap (0: none; None: [`DEFAULT_REPLICATES`] where the
    /// mechanism has a motor-driven crank and no measured table is given, none otherwise): the
    /// estimates corrected by the processing's bias and their standard deviations its spread as
    /// well ([`crate::identify_bootstrap`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<usize>,
    /// The bootstrap's first noise seed.
    #[serde(skip_serializing_if = "is_default_seed")]
    pub seed: u64,
}

fn is_default_seed(s: &u64) -> bool {
    *s == DEFAULT_SEED
}

/// The bootstrap's replicates by default, where it applies: their standard deviation is then
/// known to about a quarter of itself.
pub const DEFAULT_REPLICATES: usize = 10;

/// The bootstrap's first noise seed by default.
pub const DEFAULT_SEED: u64 = 1;

/// The equations' low-pass by default, Hz: the bench's forces need the crank's harmonics up to
/// the eighth (2.3 Hz at 140 rpm); the smoothed accelerations lack what lies above (measured on
/// the bench at 1 kHz, docs/identification.md).
pub const DEFAULT_CUTOFF_HZ: f64 = 20.0;

impl IdentifySpec {
    /// Refuse what cannot be identified as asked: nothing set free, a low-pass both given and
    /// switched off, a cutoff that is not a positive frequency (the command line's, the Python
    /// package's and the pipeline file's words: the key, then the option).
    pub fn check(&self) -> Result<(), PipelineError> {
        let bad = |m: String| Err(PipelineError::Input(m));
        if self.free.is_empty() {
            return bad("[identify] free is empty (--free): give the mechanism file's keys to identify, e.g. free = [\"k\", \"mw\"]".into());
        }
        match self.cutoff_hz {
            Some(_) if self.unfiltered => bad("[identify] gives both cutoff_hz (--cutoff) and unfiltered = true (--unfiltered): keep one".into()),
            Some(f) if !(f.is_finite() && f > 0.0) => bad(format!("[identify] cutoff_hz = {f} (--cutoff): give the equations' low-pass in Hz, a positive number (default 20)")),
            _ => Ok(()),
        }
    }

    /// How the measured table is read (as the compare job reads it).
    pub fn measured_spec(&self) -> MeasuredSpec {
        MeasuredSpec {
            time: self.measured_time.clone(),
            columns: self.measured_columns.clone(),
            time_offset_s: self.measured_offset_s,
            cutoff_hz: self.measured_cutoff_hz,
            ..Default::default()
        }
    }

    /// The equations' low-pass for samples at the times `t` (s): none when unfiltered, the
    /// given cutoff, or the default's rule.
    pub fn cutoff_for(&self, t: &[f64]) -> Option<f64> {
        if self.unfiltered {
            return None;
        }
        let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        steps.sort_by(f64::total_cmp);
        let fs = 1.0 / steps.get(steps.len() / 2).copied().unwrap_or(f64::NAN);
        Some(self.cutoff_hz.unwrap_or(DEFAULT_CUTOFF_HZ.min(0.25 * fs)))
    }
}

impl Default for IdentifySpec {
    fn default() -> Self {
        IdentifySpec {
            free: Vec::new(),
            free_offset: true,
            measured_columns: Default::default(),
            measured_time: None,
            measured_offset_s: 0.0,
            measured_cutoff_hz: None,
            cutoff_hz: None,
            unfiltered: false,
            bootstrap: None,
            seed: DEFAULT_SEED,
        }
    }
}

/// One parameter's weight in one force: the RMS over the samples of the force's change for a
/// change of 10 % of the parameter's value (N or N m), and as a share of the force's peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensitivityRow {
    /// The parameter's key in the file.
    pub parameter: String,
    /// Its value in the file.
    pub value: f64,
    /// The forces column.
    pub force: String,
    /// RMS change per 10 % of the value, N or N m.
    pub rms_per_10_percent: f64,
    /// The same, % of the force's largest magnitude.
    pub percent_of_peak: f64,
}

/// The identify job's record (`identify.json`), written and read back by this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentifyRecord {
    /// Always "identify".
    pub job: String,
    /// The processed folder read.
    pub processed: String,
    /// The mechanism file read.
    pub mechanism: String,
    /// The measured table read, if any.
    pub measured: Option<String>,
    /// What was asked.
    pub spec: IdentifySpec,
    /// Samples of the bodies table used (every body fitted).
    pub samples: usize,
    /// The equations' low-pass used, Hz (None: unfiltered).
    pub cutoff_hz: Option<f64>,
    /// The identification.
    pub identification: Identification,
    /// The mechanism file written with the identified values: its name in the output folder.
    pub identified_file: String,
    /// The recording processed again with the identified file, when its values asked the
    /// periodic refit for other harmonics than the processing used
    /// ([`crate::identify_refine`]): the estimates are then the last pass's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refined: Option<crate::identify_refine::RefineRecord>,
    /// The parametric bootstrap, when asked: the estimates and the identified file are then
    /// its bias-corrected values with its standard deviations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<crate::identify_bootstrap::BootstrapRecord>,
    /// The bench frame's share of the standard deviations, when the recording was processed
    /// with the calibration's covariance ([`crate::identify_frame`]): the estimates' standard
    /// deviations include it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<crate::identify_frame::FrameShare>,
    /// The share of the file's tolerances on the numbers held ([`crate::identify_held`]): the
    /// estimates' standard deviations include it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<crate::identify_held::HeldShare>,
    /// The forces' sensitivities to the file's parameters.
    pub sensitivities: Vec<SensitivityRow>,
    /// The file's numbers that are not parameters of the forces, and why.
    pub not_parameters: Vec<(String, String)>,
}

impl StageRecord for IdentifyRecord {
    const STAGE: &'static str = "identify";
}

/// The joints' largest gap over the bodies table's samples (m or rad), with this file's
/// centroids: a table processed with another file (another centroid, another length) does not
/// close the mechanism's loops.
fn largest_gap(mech: &Mechanism, motion: &[Vec<OriginMotion>]) -> f64 {
    motion
        .iter()
        .map(|o| mech.phi(&mech.centroid_state(o).0).amax())
        .fold(0.0, f64::max)
}

/// The largest joint gap a bodies table processed with the same file shows, m: the fit's
/// assembly is solved to far below it.
const GAP_TOLERANCE_M: f64 = 1e-6;

/// The measured table's columns carried (natural cubic spline) to the times `t`, NaN outside
/// the table's time span; low-passed first when the spec gives a cutoff.
fn measured_at(
    path: &Path,
    spec: &IdentifySpec,
    columns: &[String],
    t: &[f64],
) -> Result<Vec<MeasuredColumn>, PipelineError> {
    let measured = spec.measured_spec();
    let table = crate::compare_measured::read_measured(path, &measured, columns)?;
    let (t0, t1) = (table.t[0], table.t[table.t.len() - 1]);
    table
        .series
        .iter()
        .map(|(quantity, _, values)| {
            let v = match measured.cutoff_hz {
                Some(hz) => crate::compare_measured::low_pass(&table.t, values, hz)?,
                None => values.clone(),
            };
            let carried = flexbench_signal::resample::carry(&table.t, &v, t);
            Ok(MeasuredColumn {
                column: quantity.clone(),
                values: t
                    .iter()
                    .zip(carried)
                    .map(|(&ti, x)| if ti >= t0 && ti <= t1 { x } else { f64::NAN })
                    .collect(),
                offset: 0.0,
                free_offset: spec.free_offset,
            })
        })
        .collect()
}

/// The RMS change of each force per 10 % of each parameter of the file `text`, over the
/// motion's samples, and the numbers that are no parameters with why.
#[allow(clippy::type_complexity)]
fn sensitivities(
    text: &str,
    origin: &str,
    motion: &[Vec<OriginMotion>],
) -> Result<(Vec<SensitivityRow>, Vec<(String, String)>), PipelineError> {
    let read = file_parameters(text, origin)?;
    let m = &read.nominal;
    let owned: Vec<_> = motion.iter().map(|o| m.centroid_state(o)).collect();
    let states: Vec<_> = owned.iter().map(|(q, qd, qdd)| (q, qd, qdd)).collect();
    let max = flexbench_mechanism::inverse::DEFAULT_MAX_CONDITION;
    let solved = m.inverse_dynamics_batch(&states, max)?;
    let sens = m.force_sensitivities_solved(&read.parameters, &states, &solved)?;
    let columns = m.force_columns();
    let mut peak = vec![0.0f64; columns.len()];
    for s in &solved {
        if let flexbench_mechanism::inverse::InverseSample::Solved { forces, .. } = s {
            for (p, f) in peak.iter_mut().zip(forces) {
                *p = p.max(f.abs());
            }
        }
    }
    let mut rows = Vec::new();
    for (c, p) in read.parameters.iter().enumerate() {
        for (f, force) in columns.iter().enumerate() {
            let (mut ss, mut n) = (0.0, 0usize);
            for s in sens.iter().flatten() {
                ss += (s[(f, c)] * 0.1 * p.value).powi(2);
                n += 1;
            }
            let rms = (ss / n.max(1) as f64).sqrt();
            rows.push(SensitivityRow {
                parameter: p.key.clone(),
                value: p.value,
                force: force.clone(),
                rms_per_10_percent: rms,
                percent_of_peak: if peak[f] > 0.0 {
                    100.0 * rms / peak[f]
                } else {
                    0.0
                },
            });
        }
    }
    let others = read
        .others
        .iter()
        .map(|(k, why)| (k.clone(), format!("{why:?}")))
        .collect();
    Ok((rows, others))
}

/// The sensitivities as a table: parameter, force, RMS change per 10 % (N or N m), % of peak.
fn sensitivity_table(rows: &[SensitivityRow]) -> Result<Table, PipelineError> {
    let mut t = Table::new("sensitivities");
    t.push(
        "parameter",
        Column::Str(rows.iter().map(|r| r.parameter.clone()).collect()),
    )?;
    t.push("value", Column::F64(rows.iter().map(|r| r.value).collect()))?;
    t.push(
        "force",
        Column::Str(rows.iter().map(|r| r.force.clone()).collect()),
    )?;
    t.push(
        "rms_per_10_percent",
        Column::F64(rows.iter().map(|r| r.rms_per_10_percent).collect()),
    )?;
    t.push(
        "percent_of_peak",
        Column::F64(rows.iter().map(|r| r.percent_of_peak).collect()),
    )?;
    Ok(t)
}

/// A path's file name, as text.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The identified file's name in `out`: the mechanism file's stem and `.identified.toml`.
pub fn identified_path(mechanism: &Path, out: &Path) -> PathBuf {
    let stem = mechanism
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mechanism".into());
    out.join(format!("{stem}.identified.toml"))
}

/// The identify job, as the command line and the Python package run it (module
/// documentation): the record, and every file written. `process` is the process stage's
/// settings the recording is processed again with, and the bootstrap's replicates (the
/// command line and the Python package give the pipeline file's defaults); `events` gets
/// their progress.
pub fn identify_job(
    processed: &Path,
    mechanism: &Path,
    measured: Option<&Path>,
    spec: &IdentifySpec,
    out: &Path,
    process: &crate::ProcessConfig,
    events: &mut dyn FnMut(crate::StageEvent),
) -> Result<(IdentifyRecord, Vec<PathBuf>), PipelineError> {
    // Long: the job's steps in their order (check, read, identify, process again, bootstrap,
    // record, write), each a call: kept in one function so that the order is read at once.
    spec.check()?;
    crate::compare_measured::check_spec(&spec.measured_spec())?;
    let file = identified_path(mechanism, out);
    if file == mechanism {
        return Err(PipelineError::Input(format!(
            "{}: the identified file would overwrite the mechanism file; give another output folder",
            file.display()
        )));
    }
    let text = std::fs::read_to_string(mechanism)
        .map_err(|e| PipelineError::io(mechanism, "be read", e))?;
    let origin = mechanism.display().to_string();
    let mech = flexbench_mechanism::file::parse(&text, &origin)?.mechanism;
    let (motion, t) = processed_motion(processed, mechanism, &mech)?;
    let columns = mech.force_columns();
    let measured_fn = |t: &[f64]| match measured {
        Some(path) => measured_at(path, spec, &columns, t),
        None => Ok(Vec::new()),
    };
    let measured_columns = measured_fn(&t)?;
    let (replicates, why_not) = replicates_for(spec, &mech, !measured_columns.is_empty())?;
    let settings = Settings {
        free: spec.free.clone(),
        cutoff_hz: spec.cutoff_for(&t),
        ..Default::default()
    };
    let mut identification =
        flexbench_identify::identify(&text, &origin, &t, &motion, &measured_columns, &settings)?;
    let first = identification.clone();
    let refined = crate::identify_refine::refine(
        processed,
        (&text, &origin),
        &mut identification,
        (&settings, process),
        &measured_fn,
        events,
    )?;
    let (fit_text, fit_t, fit_motion, refine_record) = match refined {
        Some(r) => {
            identification = r.identification;
            (r.text, r.t, r.motion, Some(r.record))
        }
        None => (text.clone(), t.clone(), motion.clone(), None),
    };
    let rec = crate::identify_bootstrap::Recording {
        text: &fit_text,
        t: &fit_t,
        motion: &fit_motion,
        noise: crate::bootstrap_noise::MarkerNoise::White(0.0),
        process,
    };
    let bootstrap = bootstrapped(
        processed,
        (&mech, &text, &origin),
        rec,
        &mut identification,
        (&settings, replicates, why_not, spec.seed),
        events,
    )?;
    let frame = crate::identify_frame::frame_share(
        processed,
        &mech,
        (&text, &origin),
        (&t, &motion),
        &first,
        (&settings, &measured_columns),
    )?;
    if let Some(f) = &frame {
        crate::identify_frame::apply(&mut identification, f);
    }
    let held = crate::identify_held::held_share(
        &mech,
        (&text, &origin),
        (&t, &motion),
        &first,
        (&settings, &measured_columns),
    )?;
    if let Some(h) = &held {
        crate::identify_held::apply(&mut identification, h);
    }
    identification.file = with_identified_tolerances(&identification, &origin)?;
    let (rows, others) = sensitivities(&text, &origin, &motion)?;
    let record = IdentifyRecord {
        job: "identify".into(),
        processed: processed.display().to_string(),
        mechanism: origin.clone(),
        measured: measured.map(|p| p.display().to_string()),
        spec: spec.clone(),
        samples: motion.len(),
        cutoff_hz: settings.cutoff_hz,
        identified_file: file_name(&file),
        refined: refine_record,
        bootstrap,
        frame,
        held,
        sensitivities: rows,
        not_parameters: others,
        identification,
    };
    let files = write_identified(&record, &file, out)?;
    Ok((record, files))
}

/// The bootstrap of `replicates` replicates of the recording `rec` (its markers' errors those
/// of the processed folder `processed`), `id` corrected by it against the given file `text`
/// of `mech`; with none, a warning in `id` that says why its standard deviations are the
/// residuals' alone.
fn bootstrapped(
    processed: &Path,
    (mech, text, origin): (&Mechanism, &str, &str),
    mut rec: crate::identify_bootstrap::Recording,
    id: &mut Identification,
    (settings, replicates, why_not, seed): (&Settings, usize, Option<&str>, u64),
    events: &mut dyn FnMut(crate::StageEvent),
) -> Result<Option<crate::identify_bootstrap::BootstrapRecord>, PipelineError> {
    if replicates == 0 {
        id.warnings.push(format!(
            "the standard deviations are the residuals' alone: the bias and spread the processing adds (the smoothed motion's, 1-2 % on the bench at 0.1-0.3 mm of noise) are not in them ({})",
            why_not.unwrap_or("the bootstrap was switched off")
        ));
        return Ok(None);
    }
    let names: Vec<String> = mech.markers.iter().map(|m| m.name.clone()).collect();
    let sigma = markers_noise(processed)?;
    rec.noise = crate::bootstrap_noise::marker_noise(processed, &names, sigma)?;
    let mut b = crate::identify_bootstrap::bootstrap(
        id,
        origin,
        &rec,
        settings,
        (replicates, seed),
        events,
    )?;
    crate::identify_bootstrap::apply(id, &mut b, text, origin)?;
    Ok(Some(b))
}

/// The bodies' motion of the processed folder `processed` about their origins and its times,
/// refused when its joints do not close with the mechanism `mech` of the file `mechanism`.
#[allow(clippy::type_complexity)]
fn processed_motion(
    processed: &Path,
    mechanism: &Path,
    mech: &Mechanism,
) -> Result<(Vec<Vec<OriginMotion>>, Vec<f64>), PipelineError> {
    let bodies = crate::tables::bodies_of(
        &crate::folders::ProcessedFolder::new(processed)
            .table(crate::folders::ProcessedTable::Bodies),
        mech,
    )?;
    let (motion, t) = crate::tables::origin_motions(mech, &bodies);
    let gap = largest_gap(mech, &motion);
    if gap > GAP_TOLERANCE_M {
        return Err(PipelineError::Input(format!(
            "{}: the bodies table does not close the joints of {} (gaps up to {:.3} mm): it was processed with another mechanism file (another length, centroid or mass: the table holds each body's centroid, which a part's mass moves); give the file the process stage used, and set free the number you would change (the identified file is written beside the results)",
            processed.display(),
            mechanism.display(),
            1e3 * gap
        )));
    }
    Ok((motion, t))
}

/// The bootstrap's replicates the spec asks of the mechanism `mech` (with a measured table
/// when `measured`), and why there is none where it cannot run: an explicit count refused
/// there, the default then none.
fn replicates_for(
    spec: &IdentifySpec,
    mech: &Mechanism,
    measured: bool,
) -> Result<(usize, Option<&'static str>), PipelineError> {
    let why_not = match (mech.crank().is_some(), measured) {
        (true, false) => None,
        (false, _) => Some("the bootstrap needs a motor-driven crank to simulate the recording by"),
        (true, true) => Some("the bootstrap simulates the bench, not the rig's measured table"),
    };
    let r = match (spec.bootstrap, why_not) {
        (Some(r), Some(why)) if r > 0 => {
            return Err(PipelineError::Input(format!(
                "bootstrap = {r}: {why}; identify without bootstrap (bootstrap = 0)"
            )))
        }
        (Some(r), _) => r,
        (None, None) => DEFAULT_REPLICATES,
        (None, Some(_)) => 0,
    };
    Ok((r, why_not))
}

/// The identify job's files into `out`: the sensitivities' table, the identified mechanism
/// file `file` with its header, the record.
fn write_identified(
    record: &IdentifyRecord,
    file: &Path,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    ensure_dir(out)?;
    let header = identified_header(record);
    let mut files = flexbench_tables::write_table(
        &sensitivity_table(&record.sensitivities)?,
        out,
        "sensitivities",
    )?
    .to_vec();
    flexbench_contracts::atomic::write_bytes(
        file,
        format!("{header}{}", record.identification.file).as_bytes(),
    )
    .map_err(|e| PipelineError::io(file, "be written", e))?;
    files.push(file.to_path_buf());
    files.push(record.write(&out.join(crate::folders::IDENTIFY_RECORD))?);
    Ok(files)
}

/// The markers' noise the process stage found in `processed` (its smoother's, else its fit's
/// RMS residual), m.
fn markers_noise(processed: &Path) -> Result<f64, PipelineError> {
    let r = crate::process::ProcessRecord::read(&processed.join(crate::folders::SUMMARY))?;
    Ok(match &r.smoother {
        Some(s) => s.sigma_m.max(s.sigma_floor_m),
        None => r.fit.rms,
    })
}

/// The identified file with each determined number's standard deviation in its
/// `[tolerances]`, so that the forces processed with it carry the identification's
/// uncertainty (each number independent: their correlations are in identify.json).
fn with_identified_tolerances(id: &Identification, origin: &str) -> Result<String, PipelineError> {
    let sigmas: Vec<(&str, f64)> = id
        .estimates
        .iter()
        .filter(|e| e.determined && !e.key.starts_with("offset of "))
        .filter_map(|e| Some((e.key.as_str(), e.sigma?)))
        .collect();
    if sigmas.is_empty() {
        return Ok(id.file.clone());
    }
    Ok(flexbench_mechanism::tolerances::with_tolerances(
        &id.file, origin, &sigmas,
    )?)
}

/// The identified file's first lines: where it comes from and what changed.
fn identified_header(r: &IdentifyRecord) -> String {
    // The numbers are changed in the file's own lines where they are found there; a file
    // written anew from its TOML has no comment left.
    let kept = r.identification.file.contains('#');
    let mut h = format!(
        "# {} with the numbers identified by flexbench identify from {} ({} samples).\n# The original file is unchanged{}.\n",
        r.mechanism,
        r.processed,
        r.samples,
        if kept { "" } else { "; its comments are not carried over" }
    );
    for e in &r.identification.estimates {
        match e.sigma {
            Some(s) => h.push_str(&format!(
                "#   {} = {} +- {} (file: {})\n",
                e.key, e.value, s, e.file_value
            )),
            None => h.push_str(&format!(
                "#   {} held at {}: {}\n",
                e.key,
                e.value,
                e.why_not.as_deref().unwrap_or("not determined")
            )),
        }
    }
    h
}
