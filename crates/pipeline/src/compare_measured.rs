//! The computed joint torques and forces (the process stage's forces table) against a table the
//! rig measured on its own clock (a motor's current times its torque constant, a load cell):
//! per measured column, RMS and mean of the difference, peaks, correlation, the lag, and the
//! share of the frictionless model's error the mechanism file's friction explains
//! ([`flexbench_compare::measured`]). Any mechanism: nothing here needs a crank.
//!
//! The measured table (CSV or Parquet) has a time column (`t` or `time`, s, or the one named)
//! and columns named after the forces table's (`motor_torque`, `elbow_torque`, `A_x`), or mapped
//! onto them (`torque = "motor_torque"`). Everything is read and checked before anything is
//! written: a table whose columns name no joint or actuator, that has no times, or that holds a
//! NaN or an empty cell is refused naming it, and an earlier result is left as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flexbench_compare::measured::{
    compare_measured as compare_series, MeasuredComparison, MeasuredOptions, TimeSeries,
};
use flexbench_contracts::{Column, Table};
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_mechanism::model::ForceKind;
use flexbench_mechanism::Mechanism;
use flexbench_report::{Curve, Figure, Panel};
use serde::{Deserialize, Serialize};

use crate::{ensure_dir, PipelineError, StageRecord};

/// The largest lag searched by default, s: a data logger's and a camera's clocks started by
/// hand are within a few tenths of a second.
pub const DEFAULT_MAX_LAG_S: f64 = 0.25;

/// Order of each pass of the Butterworth filter of the measured series when a cutoff is given:
/// forward and back, a fourth-order zero-lag filter, -3 dB at the cutoff (the by-hand
/// reference's butter(2) by filtfilt, whose cutoff is its single pass's).
pub const MEASURED_FILTER_ORDER: usize = 2;

/// How to read a measured table and what to compare (the command line's `--measured*` options,
/// a pipeline file's `[compare] measured*` keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeasuredSpec {
    /// The table's time column (default `t`, else `time`), s.
    pub time: Option<String>,
    /// Measured column -> the forces table's column it measures; empty: the columns named after
    /// the forces table's are compared.
    pub columns: BTreeMap<String, String>,
    /// Added to the measured times to put them on the recording's clock, s.
    pub time_offset_s: f64,
    /// The measured series low-passed (zero-lag Butterworth, fourth order) at this frequency, Hz.
    pub cutoff_hz: Option<f64>,
    /// The largest lag searched, s.
    pub max_lag_s: f64,
}

impl Default for MeasuredSpec {
    fn default() -> Self {
        MeasuredSpec {
            time: None,
            columns: BTreeMap::new(),
            time_offset_s: 0.0,
            cutoff_hz: None,
            max_lag_s: DEFAULT_MAX_LAG_S,
        }
    }
}

/// One measured quantity against the computed one (s and the quantity's unit): which columns,
/// and the comparison's numbers, flattened into the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredQuantity {
    /// The forces table's column compared.
    pub quantity: String,
    /// The measured table's column.
    pub measured_column: String,
    /// N m or N.
    pub unit: String,
    /// The comparison.
    #[serde(flatten)]
    pub c: MeasuredComparison,
}

/// The measured comparison's record (`measured.json`), written and read back by this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredRecord {
    /// Always "compare_measured".
    pub job: String,
    /// The measured table read.
    pub measured: String,
    /// The processed folder read.
    pub processed: String,
    /// How the table was read.
    pub spec: MeasuredSpec,
    /// The time column used.
    pub time_column: String,
    /// Columns of the measured table that name nothing the forces table has (not compared).
    pub ignored_columns: Vec<String>,
    /// The mechanism file's friction elements (the friction share's model), by name.
    pub friction: Vec<String>,
    /// Each compared quantity.
    pub quantities: Vec<MeasuredQuantity>,
    /// What made the comparison doubtful, in words.
    pub warnings: Vec<String>,
}

impl StageRecord for MeasuredRecord {
    const STAGE: &'static str = "compare";
}

/// A measured table read and checked: its time column's name, times (s, on the recording's
/// clock), and per compared quantity (forces column, measured column, values).
pub(crate) struct MeasuredTable {
    pub(crate) time_column: String,
    pub(crate) t: Vec<f64>,
    pub(crate) series: Vec<(String, String, Vec<f64>)>,
    pub(crate) ignored: Vec<String>,
}

fn input(path: &Path, reason: String) -> PipelineError {
    PipelineError::Input(format!("{}: {reason}", path.display()))
}

/// Read the measured table at `path` with `spec`, its columns checked against `columns` (the
/// forces table's, after t).
pub(crate) fn read_measured(
    path: &Path,
    spec: &MeasuredSpec,
    columns: &[String],
) -> Result<MeasuredTable, PipelineError> {
    let table = flexbench_tables::read_any(path, "measured")?;
    let names: Vec<String> = table.names().into_iter().map(String::from).collect();
    let time_column = match &spec.time {
        Some(t) => t.clone(),
        None => ["t", "time"]
            .into_iter()
            .find(|c| names.iter().any(|n| n == c))
            .map(str::to_string)
            .ok_or_else(|| input(path, format!("no time column ('t' or 'time'; the table has {}): a table on the rig's own clock needs its times in s; name the column with --measured-time (a pipeline file's [compare] measured_time)", names.join(", "))))?,
    };
    let numbers = |name: &str| -> Result<Vec<f64>, PipelineError> {
        let Some(Column::F64(v)) = table.column(name) else {
            return Err(input(
                path,
                format!(
                    "column '{name}' is missing or not numeric (the table has {})",
                    names.join(", ")
                ),
            ));
        };
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(input(path, format!("column '{name}', row {}: empty or NaN; every measured sample needs a finite value: drop the row or fill the gap", i + 1)));
        }
        Ok(v.clone())
    };
    let t: Vec<f64> = numbers(&time_column)?
        .into_iter()
        .map(|t| t + spec.time_offset_s)
        .collect();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut ignored = Vec::new();
    if spec.columns.is_empty() {
        for n in names.iter().filter(|n| **n != time_column) {
            match columns.contains(n) {
                true => pairs.push((n.clone(), n.clone())),
                false => ignored.push(n.clone()),
            }
        }
    } else {
        for (from, to) in &spec.columns {
            if !columns.contains(to) {
                return Err(input(path, format!("'{from}' is mapped onto '{to}', which the forces table does not have (its columns: {})", columns.join(", "))));
            }
            pairs.push((to.clone(), from.clone()));
        }
        ignored = names
            .iter()
            .filter(|n| **n != time_column && !spec.columns.contains_key(*n))
            .cloned()
            .collect();
    }
    if pairs.is_empty() {
        return Err(input(path, format!("no column names a joint's force or an actuator of the forces table (its columns: {}; the measured table has {}): name a column after one, or map it (--measured-column torque=motor_torque; a pipeline file's [compare.measured_columns])", columns.join(", "), names.join(", "))));
    }
    let series = pairs
        .into_iter()
        .map(|(quantity, column)| Ok((quantity, column.clone(), numbers(&column)?)))
        .collect::<Result<Vec<_>, PipelineError>>()?;
    Ok(MeasuredTable {
        time_column,
        t,
        series,
        ignored,
    })
}

/// The series low-passed at `cutoff_hz` (zero-lag Butterworth) on the even grid of its times,
/// carried back to them.
pub(crate) fn low_pass(t: &[f64], v: &[f64], cutoff_hz: f64) -> Result<Vec<f64>, PipelineError> {
    use flexbench_signal::resample::{carry, even_grid};
    let grid = even_grid(t);
    let fs = (grid.len() - 1) as f64 / (grid[grid.len() - 1] - grid[0]);
    let design = flexbench_signal::butterworth::Design::new(MEASURED_FILTER_ORDER, cutoff_hz, fs)?;
    let on_grid = carry(t, v, &grid);
    Ok(carry(&grid, &design.filtfilt(&on_grid), t))
}

/// The forces rows of the inverse dynamics at every sample of the bodies table, with the
/// mechanism as given (None at a toggle or an unfitted sample).
fn inverse_rows(
    mech: &Mechanism,
    bodies: &flexbench_contracts::Bodies,
) -> Result<Vec<Option<Vec<f64>>>, PipelineError> {
    let (index, states): (Vec<usize>, Vec<_>) = crate::tables::whole_states(mech, bodies)
        .into_iter()
        .unzip();
    let refs: Vec<_> = states.iter().map(|[q, qd, qdd]| (q, qd, qdd)).collect();
    let solved = mech.inverse_dynamics_batch(&refs, DEFAULT_MAX_CONDITION)?;
    let mut rows = vec![None; bodies.t().len()];
    for (k, s) in index.into_iter().zip(solved) {
        if let InverseSample::Solved { forces, .. } = s {
            rows[k] = Some(forces);
        }
    }
    Ok(rows)
}

/// The forces table's columns (after t) whose unit is N m: the couples' actuators and the
/// slides' moments; the others are N.
fn unit_of(mech: &Mechanism, column: &str) -> &'static str {
    let couple = mech.forces.iter().any(|f| {
        f.actuator
            && f.name == column
            && matches!(
                f.kind,
                ForceKind::Motor { .. } | ForceKind::Torque { .. } | ForceKind::JointTorque { .. }
            )
    });
    if couple || column.ends_with("_moment") {
        "N m"
    } else {
        "N"
    }
}

/// The computed series of every forces column at the processed samples, with the friction
/// elements' part taken out (the inverse dynamics again from the bodies table, with and without
/// them: their difference is what the friction law adds to each column).
fn without_friction(
    mech: &Mechanism,
    bodies: &Path,
) -> Result<Vec<Option<Vec<f64>>>, PipelineError> {
    let table = crate::tables::bodies_of(bodies, mech)?;
    let with = inverse_rows(mech, &table)?;
    let mut bare = mech.clone();
    bare.forces.retain(|f| {
        !matches!(
            f.kind,
            ForceKind::JointFriction { .. } | ForceKind::SlideFriction { .. }
        )
    });
    let without = inverse_rows(&bare, &table)?;
    Ok(with
        .into_iter()
        .zip(without)
        .map(|(a, b)| Some(a?.iter().zip(b?).map(|(x, y)| x - y).collect()))
        .collect())
}

/// The computed series of one quantity: its times (s) and values at the samples the process
/// stage solved, and the same without the friction law when the file has one.
struct Computed {
    t: Vec<f64>,
    v: Vec<f64>,
    bare: Option<Vec<f64>>,
    gaps: usize,
}

impl Computed {
    fn of(
        forces: &flexbench_contracts::Forces,
        quantity: &str,
        c: usize,
        friction_part: Option<&Vec<Option<Vec<f64>>>>,
    ) -> Computed {
        let computed = forces.column(quantity).unwrap_or_default();
        let keep: Vec<usize> = (0..computed.len())
            .filter(|&k| computed[k].is_some())
            .collect();
        let bare = friction_part.and_then(|part| {
            keep.iter()
                .map(|&k| Some(computed[k]? - part[k].as_ref()?[c]))
                .collect()
        });
        Computed {
            t: keep.iter().map(|&k| forces.t()[k]).collect(),
            v: keep.iter().filter_map(|&k| computed[k]).collect(),
            bare,
            gaps: computed.len() - keep.len(),
        }
    }
}

/// One quantity compared: its record, its figure's panel, its series' rows (t, quantity,
/// measured, computed, computed without friction) and its warnings.
type OneCompared = (
    MeasuredQuantity,
    Panel,
    Vec<(f64, String, f64, f64, Option<f64>)>,
    Vec<String>,
);

/// Compare one quantity (`quantity` of the forces table, `column` of the measured table).
fn compare_one(
    mech: &Mechanism,
    (quantity, column): (&str, &str),
    computed: &Computed,
    (t, vm): (&[f64], &[f64]),
    spec: &MeasuredSpec,
) -> Result<OneCompared, PipelineError> {
    // Long: one quantity's comparison in its order (the columns read, the computed series carried
    // onto the measured clock, the lag, the friction's share, the record), over the series they
    // share.
    use flexbench_signal::resample::CubicSpline;
    let result = compare_series(
        TimeSeries {
            t: &computed.t,
            v: &computed.v,
        },
        TimeSeries { t, v: vm },
        &MeasuredOptions {
            what: quantity,
            max_lag: spec.max_lag_s,
            without_friction: computed.bare.as_deref(),
        },
    )?;
    let unit = unit_of(mech, quantity);
    let warnings = quantity_warnings(quantity, unit, &result, spec, computed.gaps);
    let spline = CubicSpline::new(&computed.t, &computed.v);
    let bare = computed
        .bare
        .as_ref()
        .map(|b| CubicSpline::new(&computed.t, b));
    let (t0, t1) = (computed.t[0], computed.t[computed.t.len() - 1]);
    let inside: Vec<usize> = (0..t.len()).filter(|&i| t[i] >= t0 && t[i] <= t1).collect();
    let rows = inside
        .iter()
        .map(|&i| {
            let ti = t[i];
            (
                ti,
                quantity.to_string(),
                vm[i],
                spline.at(ti),
                bare.as_ref().map(|s| s.at(ti)),
            )
        })
        .collect::<Vec<_>>();
    let x: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let curve = |label: String, y: Vec<Option<f64>>| Curve {
        label,
        x: x.clone(),
        y,
        band: Vec::new(),
    };
    let filtered = match spec.cutoff_hz {
        Some(hz) => format!(", low-passed at {hz} Hz"),
        None => String::new(),
    };
    let mut curves = vec![
        curve(
            format!("measured ({column}{filtered})"),
            rows.iter().map(|r| Some(r.2)).collect(),
        ),
        curve(
            "computed (inverse dynamics)".into(),
            rows.iter().map(|r| Some(r.3)).collect(),
        ),
    ];
    if bare.is_some() {
        curves.push(curve(
            "computed without the file's friction".into(),
            rows.iter().map(|r| r.4).collect(),
        ));
    }
    let panel = Panel {
        title: format!(
            "{quantity}: RMS difference {:.4} {unit}, lag {:.1} ms",
            result.rms_difference,
            1e3 * result.lag
        ),
        y_label: format!(
            "{} ({unit})",
            if unit == "N m" { "torque" } else { "force" }
        ),
        curves,
    };
    let record = MeasuredQuantity {
        quantity: quantity.into(),
        measured_column: column.into(),
        unit: unit.into(),
        c: result,
    };
    Ok((record, panel, rows, warnings))
}

/// What to say of one comparison: the lag at its bound, an offset the model lacks, a friction
/// law that makes it worse, computed samples bridged.
fn quantity_warnings(
    quantity: &str,
    unit: &str,
    r: &MeasuredComparison,
    spec: &MeasuredSpec,
    gaps: usize,
) -> Vec<String> {
    let mut w = Vec::new();
    if r.lag_at_bound {
        w.push(format!("{quantity}: the measurement's lag sits at the search's bound ({:+.3} s of +-{} s): the two clocks may be further apart; give the loggers' offset (--measured-offset) or a larger --max-lag", r.lag, spec.max_lag_s));
    }
    if r.mean_difference.abs() > 0.5 * r.rms_difference
        && r.mean_difference.abs() > 0.05 * r.measured_rms
    {
        w.push(format!("{quantity}: the measurement sits {:+.4} {unit} off the computed values on average ({:.0} % of the RMS difference): a sensor's zero, or a constant load (an offset, a preload) the mechanism file does not hold", r.mean_difference, 100.0 * r.mean_difference.abs() / r.rms_difference));
    }
    if let Some(share) = r.friction_share.filter(|s| *s < 0.0) {
        w.push(format!("{quantity}: the file's friction law makes the comparison worse (share explained {:.0} %): its coefficients do not hold for this run, or the motion rests near zero speed, where the Coulomb term's sign follows the estimated speed's errors", 100.0 * share));
    }
    if r.lag.abs() > 0.0 && r.rms_after_lag > 0.98 * r.rms_difference {
        w.push(format!("{quantity}: the lag ({:+.1} ms) is poorly determined: shifting by it takes the RMS difference only from {:.4} to {:.4} {unit}; the two series differ by more than a shift (a part of the load the model does not hold)", 1e3 * r.lag, r.rms_difference, r.rms_after_lag));
    }
    if gaps > 0 {
        w.push(format!("{quantity}: {gaps} computed samples (toggles or unfitted samples) were bridged by the spline"));
    }
    w
}

/// Check the spec's numbers (a pipeline file's `[compare]` before any stage runs).
pub(crate) fn check_spec(spec: &MeasuredSpec) -> Result<(), PipelineError> {
    if let Some(hz) = spec.cutoff_hz.filter(|hz| !(hz.is_finite() && *hz > 0.0)) {
        return Err(PipelineError::Input(format!("the measured series' cutoff {hz} Hz is not a frequency: give a positive number (10 Hz for a pendulum's motor current) or none")));
    }
    if !(spec.max_lag_s.is_finite() && spec.max_lag_s >= 0.0) {
        return Err(PipelineError::Input(format!("the largest lag {} s is not a duration: give 0 or more (default {DEFAULT_MAX_LAG_S} s)", spec.max_lag_s)));
    }
    if !spec.time_offset_s.is_finite() {
        return Err(PipelineError::Input(
            "the measured times' offset is not a finite number of seconds".into(),
        ));
    }
    Ok(())
}

/// The comparison table: a row per quantity.
fn comparison_table(q: &[MeasuredQuantity]) -> Result<Table, PipelineError> {
    let f = |get: &dyn Fn(&MeasuredQuantity) -> f64| Column::F64(q.iter().map(get).collect());
    let o = |get: &dyn Fn(&MeasuredQuantity) -> Option<f64>| {
        Column::OptF64(q.iter().map(get).collect())
    };
    let s = |get: &dyn Fn(&MeasuredQuantity) -> String| Column::Str(q.iter().map(get).collect());
    let mut t = Table::new("measured_comparison");
    for (name, col) in [
        ("quantity", s(&|r| r.quantity.clone())),
        ("measured_column", s(&|r| r.measured_column.clone())),
        ("unit", s(&|r| r.unit.clone())),
        ("samples", f(&|r| r.c.samples as f64)),
        ("rms_difference", f(&|r| r.c.rms_difference)),
        ("mean_difference", f(&|r| r.c.mean_difference)),
        ("computed_rms", f(&|r| r.c.computed_rms)),
        ("measured_rms", f(&|r| r.c.measured_rms)),
        ("computed_peak", f(&|r| r.c.computed_peak.0)),
        ("computed_peak_t", f(&|r| r.c.computed_peak.1)),
        ("measured_peak", f(&|r| r.c.measured_peak.0)),
        ("measured_peak_t", f(&|r| r.c.measured_peak.1)),
        ("correlation", f(&|r| r.c.correlation)),
        ("lag_s", f(&|r| r.c.lag)),
        ("rms_after_lag", f(&|r| r.c.rms_after_lag)),
        ("rms_without_friction", o(&|r| r.c.rms_without_friction)),
        ("friction_share", o(&|r| r.c.friction_share)),
    ] {
        t.push(name, col)?;
    }
    Ok(t)
}

/// The series table, long: t, quantity, measured, computed, computed_without_friction.
fn series_table(rows: Vec<(f64, String, f64, f64, Option<f64>)>) -> Result<Table, PipelineError> {
    let mut t = Table::new("measured_series");
    t.push("t", Column::F64(rows.iter().map(|r| r.0).collect()))?;
    t.push(
        "quantity",
        Column::Str(rows.iter().map(|r| r.1.clone()).collect()),
    )?;
    t.push("measured", Column::F64(rows.iter().map(|r| r.2).collect()))?;
    t.push("computed", Column::F64(rows.iter().map(|r| r.3).collect()))?;
    t.push(
        "computed_without_friction",
        Column::OptF64(rows.iter().map(|r| r.4).collect()),
    )?;
    Ok(t)
}

/// A measured comparison computed, not yet written: its record, tables and figure.
pub struct MeasuredOutput {
    /// The record (`measured.json`).
    pub record: MeasuredRecord,
    stats: Table,
    series: Table,
    figure: Figure,
}

impl MeasuredOutput {
    /// Write the comparison's table, the series, the figure and `measured.json` into `out`.
    pub fn write(&self, out: &Path) -> Result<Vec<PathBuf>, PipelineError> {
        ensure_dir(out)?;
        let mut files: Vec<PathBuf> =
            flexbench_tables::write_table(&self.stats, out, "measured_comparison")?.to_vec();
        files.extend(flexbench_tables::write_table(
            &self.series,
            out,
            "measured_series",
        )?);
        files.extend(flexbench_report::write_figure(
            &self.figure,
            &out.join("measured"),
        )?);
        files.push(
            self.record
                .write(&out.join(crate::folders::MEASURED_RECORD))?,
        );
        Ok(files)
    }
}

/// Compare the processed folder's forces with the measured table at `measured` (read by
/// `spec`) for the mechanism file `mechanism`: everything read, checked and computed, nothing
/// written ([`MeasuredOutput::write`]).
pub fn compare_measured(
    processed: &Path,
    mechanism: &Path,
    measured: &Path,
    spec: &MeasuredSpec,
) -> Result<MeasuredOutput, PipelineError> {
    check_spec(spec)?;
    let mech = flexbench_mechanism::file::load(mechanism)?.mechanism;
    let pick = |stem: &str| crate::folders::ProcessedFolder::new(processed).stem(stem);
    let forces = crate::tables::forces_of(&pick("forces"), &mech)?;
    let columns = mech.force_columns();
    let table = read_measured(measured, spec, &columns)?;
    let friction: Vec<String> = mech
        .forces
        .iter()
        .filter(|f| {
            matches!(
                f.kind,
                ForceKind::JointFriction { .. } | ForceKind::SlideFriction { .. }
            )
        })
        .map(|f| f.name.clone())
        .collect();
    let part = match friction.is_empty() {
        true => None,
        false => Some(without_friction(&mech, &pick("bodies"))?),
    };
    let (mut quantities, mut panels, mut rows, mut warnings) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (quantity, column, values) in &table.series {
        let c = columns.iter().position(|x| x == quantity).unwrap_or(0);
        let computed = Computed::of(&forces, quantity, c, part.as_ref());
        let vm = match spec.cutoff_hz {
            Some(hz) => low_pass(&table.t, values, hz)?,
            None => values.clone(),
        };
        let (q, p, r, w) =
            compare_one(&mech, (quantity, column), &computed, (&table.t, &vm), spec)?;
        quantities.push(q);
        panels.push(p);
        rows.extend(r);
        warnings.extend(w);
    }
    let record = MeasuredRecord {
        job: "compare_measured".into(),
        measured: measured.display().to_string(),
        processed: processed.display().to_string(),
        spec: spec.clone(),
        time_column: table.time_column,
        ignored_columns: table.ignored,
        friction,
        quantities,
        warnings,
    };
    Ok(MeasuredOutput {
        stats: comparison_table(&record.quantities)?,
        series: series_table(rows)?,
        figure: Figure {
            caption: "Computed joint torques and forces against the rig's measurement".into(),
            x_label: "time t on the recording's clock (s)".into(),
            panels,
        },
        record,
    })
}

/// What the compare job did: the simulated comparison's record (where the mechanism has a crank
/// to simulate by), the measured comparison's (with a measured table), the files written.
#[derive(Debug, Clone)]
pub struct CompareOutcome {
    /// The simulated comparison's record.
    pub simulated: Option<crate::compare::CompareRecord>,
    /// The measured comparison's record.
    pub measured: Option<MeasuredRecord>,
    /// Every file written.
    pub files: Vec<PathBuf>,
}

/// The compare job, as the command line, the Python package and a run's compare stage run it:
/// the measured table (when given) read and compared first, the bench simulated by its crank
/// (where it has one) after, and the measured comparison written last; nothing is written
/// when the measured table is refused. Without a crank and without a measured table there is
/// nothing to compare, and the error says what to give.
pub fn compare_job(
    processed: &Path,
    mechanism: &Path,
    harmonics: usize,
    measured: Option<(&Path, &MeasuredSpec)>,
    out: &Path,
) -> Result<CompareOutcome, PipelineError> {
    let mech = flexbench_mechanism::file::load(mechanism)?.mechanism;
    let simulated = crate::compare::simulated_applies(&mech);
    let against = match measured {
        Some((path, spec)) => Some(compare_measured(processed, mechanism, path, spec)?),
        None if !simulated => {
            return Err(PipelineError::Input(format!("nothing to compare for the mechanism '{}': it has no motor-driven crank named 'crank' to simulate by crank angle; give the rig's measured torques or forces (--measured, a pipeline file's [inputs] measured)", mech.name)))
        }
        None => None,
    };
    let mut files = Vec::new();
    let simulated = match simulated {
        true => {
            let (record, written) =
                crate::compare::compare_run(processed, mechanism, harmonics, out)?;
            files.extend(written);
            Some(record)
        }
        false => None,
    };
    let measured = match against {
        Some(m) => {
            files.extend(m.write(out)?);
            Some(m.record)
        }
        None => None,
    };
    Ok(CompareOutcome {
        simulated,
        measured,
        files,
    })
}
