//! The `compare` job: a processed recording (its bodies, markers and forces tables) against the
//! bench simulated from the mechanism file at the recording's mean crank speed (the motor's
//! reference speed set so), aligned by the crank angle: the rigid bench, or the coupled elastic
//! one for a file with an elastic body, whose effect against the rigid bench is then stated
//! ([`flexbench_flexible::at_speed`]). Per marker
//! acceleration component and per liaison-force component at B and C': NRMSE, peaks and their
//! crank angles, phase lag, harmonic content (flexbench-compare).

use std::f64::consts::TAU;
use std::path::{Path, PathBuf};

use flexbench_compare::{compare_series, PeriodicBasis, PeriodicSeries};
use flexbench_contracts::series::slope;
use flexbench_contracts::{Column, Table};
use flexbench_report::{Curve, Figure, Panel};
use serde::{Deserialize, Serialize};

use crate::StageRecord;
use crate::{ensure_dir, PipelineError};
use flexbench_flexible::at_speed::{simulate_at_speed, SimSeries, SimulatedBench};

/// One compared quantity: its name, its unit, the simulated values per simulated sample, and
/// the measured (crank angle, value, sigma) samples.
type Quantity<'a> = (String, &'a str, Vec<f64>, Vec<(f64, f64, Option<f64>)>);

/// Harmonics of the crank angle kept for every quantity: the bench's accelerations and forces
/// hold less than 1e-4 of their power beyond the 20th (the simulated series' residual is
/// written in the summary).
pub const DEFAULT_HARMONICS: usize = 20;

/// Mean crank speeds (measured and simulated) further apart than this, relative, get a warning:
/// the simulation then does not run the bench the recording ran.
pub const SPEED_WARNING: f64 = 0.01;

/// The times and the crank angle per sample (rad, unwrapped), from a bodies table (rows of body
/// `crank`); at least two samples.
pub(crate) fn crank_angle(bodies: &Path) -> Result<(Vec<f64>, Vec<f64>), PipelineError> {
    let table = flexbench_tables::read_bodies(bodies)?;
    let phi = table.body("crank").and_then(|c| c.column("phi"));
    let mut out_t = Vec::new();
    let mut out_phi: Vec<f64> = Vec::new();
    for (ti, p) in table.t().iter().zip(phi.unwrap_or_default()) {
        let Some(p) = p else { continue };
        out_t.push(*ti);
        out_phi.push(*p);
    }
    crate::unwrap_angles(&mut out_phi);
    if out_t.len() < 2 {
        return Err(PipelineError::Input(format!("{}: no crank angles (rows of body 'crank' with t and phi): give the bodies table of `process`", bodies.display())));
    }
    Ok((out_t, out_phi))
}

/// Whether the simulated comparison applies to `mech`: it aligns by the crank angle, so it needs
/// a motor-driven crank ([`flexbench_mechanism::Mechanism::crank`]) on a body named `crank`.
pub fn simulated_applies(mech: &flexbench_mechanism::Mechanism) -> bool {
    mech.crank()
        .is_some_and(|c| mech.bodies[c.body].name == "crank")
}

/// The crank angle at time `ti` (s) from the samples (`t`, `phi`): the sample at that time
/// (within 1e-9 relative), or None when there is none.
pub(crate) fn angle_at(t: &[f64], phi: &[f64], ti: f64) -> Option<f64> {
    let k = t.partition_point(|x| *x < ti - 1e-9);
    (k < t.len() && (t[k] - ti).abs() <= 1e-9 * ti.abs().max(1.0)).then(|| phi[k])
}

/// The compare stage's record (`summary.json`): the crank speeds and, per quantity, how the
/// measured series meets the simulated one. Written and read back by this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRecord {
    /// Always "compare".
    pub job: String,
    /// The processed folder read.
    pub processed: String,
    /// The mechanism file read.
    pub mechanism: String,
    /// Harmonics of the crank angle kept.
    pub harmonics: usize,
    /// The recording's mean crank speed, rpm.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub measured_crank_speed_rpm: f64,
    /// The simulation's mean crank speed, rpm.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub simulated_crank_speed_rpm: f64,
    /// The motor's reference speed in the mechanism file, rpm.
    pub motor_reference_rpm_in_file: Option<f64>,
    /// The motor's reference speed the simulation ran at, rpm.
    pub motor_reference_rpm_simulated: Option<f64>,
    /// Each compared quantity.
    pub quantities: Vec<QuantityRecord>,
    /// The simulated model: "rigid", or "elastic (coupled)" for a file with an elastic body.
    #[serde(default = "rigid_model")]
    pub model: String,
    /// With the elastic model: how much the elastic bodies change each simulated quantity
    /// against the same bench rigid, over a turn at the same motor reference (empty otherwise).
    #[serde(default)]
    pub elastic_effect: Vec<EffectRecord>,
    /// What the comparison made doubtful, in words.
    pub warnings: Vec<String>,
}

/// The model of a record written before the elastic model existed.
fn rigid_model() -> String {
    "rigid".into()
}

/// The elastic bodies' effect on one simulated quantity over a turn: the coupled simulation
/// against the rigid one, sample by sample at the same crank angle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRecord {
    /// Its name (a forces column, or `<marker> ax` / `<marker> ay`).
    pub quantity: String,
    /// Its unit (N, N m, m/s^2).
    pub unit: String,
    /// The rigid simulation's largest |value| over the turn, in the unit.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rigid_peak: f64,
    /// The largest |elastic - rigid| over the turn, in the unit.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub peak_difference: f64,
    /// The RMS of elastic - rigid over the turn, in the unit.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_difference: f64,
}

/// One quantity measured against simulated, aligned by crank angle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantityRecord {
    /// Its name (e.g. M3 ax, B_x).
    pub quantity: String,
    /// Its unit (m/s^2, N).
    pub unit: String,
    /// RMS error over the simulated range.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub nrmse: f64,
    /// RMS error, in the unit.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_error: f64,
    /// Simulated peak, in the unit.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub simulated_peak: f64,
    /// Crank angle of the simulated peak, deg.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub simulated_peak_angle_deg: f64,
    /// Measured peak, in the unit.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub measured_peak: f64,
    /// Crank angle of the measured peak, deg.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub measured_peak_angle_deg: f64,
    /// Phase lag of the measured behind the simulated, deg of crank angle.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub phase_lag_deg: f64,
    /// RMS error after removing the lag.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_error_after_lag: f64,
    /// RMS residual of the simulated series' Fourier fit.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub simulated_series_residual_rms: f64,
    /// Amplitudes of the measured series' first harmonics (0 to 10).
    #[serde(deserialize_with = "flexbench_contracts::json::vec_f64_or_nan")]
    pub measured_harmonic_amplitudes: Vec<f64>,
    /// Amplitudes of the simulated series' first harmonics (0 to 10).
    #[serde(deserialize_with = "flexbench_contracts::json::vec_f64_or_nan")]
    pub simulated_harmonic_amplitudes: Vec<f64>,
}

impl crate::StageRecord for CompareRecord {
    const STAGE: &'static str = "compare";
}

/// Run the `compare` job on the processed directory `processed` (bodies, markers, forces
/// tables as `process` writes them) against a simulation of `mechanism`; write the comparison
/// table, the figures and summary.json into `out`.
pub fn compare_run(
    processed: &Path,
    mechanism: &Path,
    harmonics: usize,
    out: &Path,
) -> Result<(CompareRecord, Vec<PathBuf>), PipelineError> {
    let file = flexbench_mechanism::file::load(mechanism)?;
    let mut mech = file.mechanism;
    let pick = |stem: &str| crate::folders::ProcessedFolder::new(processed).stem(stem);
    let (bodies, markers, forces) = (pick("bodies"), pick("markers"), pick("forces"));
    let (t, crank) = crank_angle(&bodies)?;
    let speed = slope(&t, &crank);
    let ci = mech.body_index("crank").ok_or_else(|| {
        PipelineError::Input(format!("{}: no body named 'crank'", mechanism.display()))
    })?;
    let bench = simulate_at_speed(&mut mech, ci, speed)?;
    let measured = Measured {
        t: &t,
        crank: &crank,
        markers: &markers,
        forces: &forces,
    };
    let quantities = quantities(&mech, &bench, &measured)?;
    // Compare every quantity.
    let mut rows = Vec::new();
    let (mut panels, mut spectra) = (Vec::new(), Vec::new());
    let mut bases = Bases::new(&bench.series.phi, harmonics)?;
    for q in &quantities {
        let (row, panel, spectrum) = compare_quantity(q, &mut bases, crank[0])?;
        rows.push(row);
        panels.push(panel);
        spectra.push(spectrum);
    }
    ensure_dir(out)?;
    let mut files: Vec<PathBuf> =
        flexbench_tables::write_table(&comparison_table(&rows)?, out, "comparison")?.to_vec();
    files.extend(write_figures(panels, spectra, out)?);
    let elastic_effect = match &bench.rigid {
        Some(rigid) => {
            let (effect, figures) = elastic_effect(&mech, &bench.series, rigid)?;
            files.extend(write_effect_figures(figures, out)?);
            effect
        }
        None => Vec::new(),
    };
    let mut warnings: Vec<String> = if (speed / bench.speed - 1.0).abs() > SPEED_WARNING {
        vec![format!("the recording's mean crank speed {:.2} rpm differs from the simulation's {:.2} rpm by more than {} %: the simulated bench does not run as the recorded one (the mechanism has no motor whose reference speed could be set)", speed * 60.0 / TAU, bench.speed * 60.0 / TAU, 100.0 * SPEED_WARNING)]
    } else {
        Vec::new()
    };
    if let Some(rigid) = &bench.rigid {
        warnings.extend(lost_vibration(
            &mech,
            &rows,
            rigid,
            &elastic_effect,
            harmonics,
        )?);
    }
    let record = CompareRecord {
        job: "compare".into(),
        processed: processed.display().to_string(),
        mechanism: mechanism.display().to_string(),
        harmonics,
        measured_crank_speed_rpm: speed * 60.0 / TAU,
        simulated_crank_speed_rpm: bench.speed * 60.0 / TAU,
        motor_reference_rpm_in_file: bench.file_ref.map(|w| w * 60.0 / TAU),
        motor_reference_rpm_simulated: bench.adjusted.map(|w| w * 60.0 / TAU),
        quantities: rows.iter().map(|r| r.record(harmonics)).collect(),
        model: bench.model.name().into(),
        elastic_effect,
        warnings,
    };
    files.push(record.write(&out.join(crate::folders::SUMMARY))?);
    Ok((record, files))
}

/// The processed run's tables and its crank angle (times, s; unwrapped angle, rad).
struct Measured<'a> {
    t: &'a [f64],
    crank: &'a [f64],
    markers: &'a Path,
    forces: &'a Path,
}

/// Every compared quantity: each marker's acceleration components, then the liaison forces at
/// B and C', simulated per simulated sample and measured by crank angle.
fn quantities<'a>(
    mech: &flexbench_mechanism::Mechanism,
    bench: &SimulatedBench,
    measured: &Measured,
) -> Result<Vec<Quantity<'a>>, PipelineError> {
    let rows = flexbench_tables::read_markers(measured.markers)?.into_rows();
    let forces = crate::tables::forces_of(measured.forces, mech)?;
    let angle_at = |ti: f64| angle_at(measured.t, measured.crank, ti);
    let mut quantities: Vec<Quantity<'_>> = Vec::new();
    for m in &mech.markers {
        for col in ["ax", "ay"] {
            let meas: Vec<(f64, f64, Option<f64>)> = rows
                .iter()
                .filter(|r| r.marker == m.name)
                .filter_map(|r| Some((angle_at(r.t)?, r.value(col)?, r.sigma(col))))
                .collect();
            let name = format!("{} {col}", m.name);
            let Some(simv) = bench.series.quantity(mech, &name) else {
                continue;
            };
            quantities.push((name, "m/s^2", simv, meas));
        }
    }
    for name in ["B_x", "B_y", "C_x", "C_y"] {
        let Some(simv) = bench.series.quantity(mech, name) else {
            continue;
        };
        // Present: forces_of checked every column the mechanism gives.
        let Some(col) = forces.column(name) else {
            continue;
        };
        let sig = forces.column(&format!("{name}_sigma"));
        let meas: Vec<(f64, f64, Option<f64>)> = (0..forces.t().len())
            .filter_map(|i| Some((angle_at(forces.t()[i])?, col[i]?, sig.and_then(|s| s[i]))))
            .collect();
        quantities.push((name.to_string(), "N", simv, meas));
    }
    Ok(quantities)
}

/// One quantity compared: its name, unit, the comparison and the simulated series.
struct ComparedRow {
    name: String,
    unit: String,
    c: flexbench_compare::Comparison,
    simulated: PeriodicSeries,
}

impl ComparedRow {
    fn record(&self, harmonics: usize) -> QuantityRecord {
        let c = &self.c;
        QuantityRecord {
            quantity: self.name.clone(),
            unit: self.unit.clone(),
            nrmse: c.nrmse,
            rms_error: c.rms_error,
            simulated_peak: c.simulated_peak.0,
            simulated_peak_angle_deg: c.simulated_peak.1.to_degrees(),
            measured_peak: c.measured_peak.0,
            measured_peak_angle_deg: c.measured_peak.1.to_degrees(),
            phase_lag_deg: c.phase_lag.to_degrees(),
            rms_error_after_lag: c.rms_error_after_lag,
            simulated_series_residual_rms: self.simulated.residual_rms,
            measured_harmonic_amplitudes: (0..=harmonics.min(10))
                .map(|k| c.measured.amplitude(k))
                .collect(),
            simulated_harmonic_amplitudes: (0..=harmonics.min(10))
                .map(|k| self.simulated.amplitude(k))
                .collect(),
        }
    }
}

/// The least-squares bases of the quantities' series in the crank angle: the simulated turn's,
/// made once, and the last set of measured crank angles' (the quantities of one set come one
/// after the other: a marker's components, the forces), made again only when the set changes.
/// Each fit is the one `PeriodicSeries::fit` makes on its own, the same numbers; a basis of a
/// long recording's samples is the size of its samples times the coefficients, so only one is
/// held.
struct Bases {
    harmonics: usize,
    simulated: PeriodicBasis,
    measured: Option<(Vec<u64>, PeriodicBasis)>,
}

impl Bases {
    fn new(sim_phi: &[f64], harmonics: usize) -> Result<Self, PipelineError> {
        Ok(Bases {
            harmonics,
            simulated: PeriodicBasis::new("the simulated turn", sim_phi, harmonics)?,
            measured: None,
        })
    }

    /// The simulated series through `value` (one per sample of the simulated turn).
    fn simulated(&self, what: &str, value: &[f64]) -> Result<PeriodicSeries, PipelineError> {
        Ok(self.simulated.fit(what, value)?)
    }

    /// The basis at the measured crank angles `phi`: the one held when they are the same,
    /// else made anew (the one held let go first).
    fn measured(&mut self, what: &str, phi: &[f64]) -> Result<&PeriodicBasis, PipelineError> {
        let key: Vec<u64> = phi.iter().map(|p| p.to_bits()).collect();
        let held = match self.measured.take() {
            Some((k, basis)) if k == key => (k, basis),
            old => {
                drop(old);
                (key, PeriodicBasis::new(what, phi, self.harmonics)?)
            }
        };
        Ok(&self.measured.insert(held).1)
    }
}

/// One quantity measured against simulated by crank angle: the row, its panel over the crank
/// angle (from `phi0`, the recording's first angle) and its panel of harmonic amplitudes.
fn compare_quantity(
    q: &Quantity<'_>,
    bases: &mut Bases,
    phi0: f64,
) -> Result<(ComparedRow, Panel, Panel), PipelineError> {
    let (name, unit, simv, meas) = q;
    let harmonics = bases.harmonics;
    let simulated = bases.simulated(&format!("simulated {name}"), simv)?;
    let phi: Vec<f64> = meas.iter().map(|m| m.0).collect();
    let val: Vec<f64> = meas.iter().map(|m| m.1).collect();
    let what = format!("measured {name}");
    let measured = bases.measured(&what, &phi)?.fit(&what, &val)?;
    let c = compare_series(&phi, &val, measured, &simulated);
    let x: Vec<f64> = phi.iter().map(|p| (p - phi0).to_degrees()).collect();
    let band: Vec<Option<f64>> = if meas.iter().any(|m| m.2.is_some()) {
        meas.iter().map(|m| m.2.map(|s| 2.0 * s)).collect()
    } else {
        Vec::new()
    };
    let curve = |label: &str, x: Vec<f64>, y: Vec<Option<f64>>, band: Vec<Option<f64>>| Curve {
        label: label.into(),
        x,
        y,
        band,
    };
    let measured_label = match band.is_empty() {
        true => "measured",
        false => "measured (band: 2 sigma)",
    };
    let panel = Panel {
        title: format!(
            "{name}: NRMSE {:.1} %, lag {:.1} deg",
            100.0 * c.nrmse,
            c.phase_lag.to_degrees()
        ),
        y_label: format!("{name} ({unit})"),
        curves: vec![
            curve(
                measured_label,
                x.clone(),
                val.iter().map(|v| Some(*v)).collect(),
                band,
            ),
            curve(
                "simulated",
                x,
                phi.iter().map(|p| Some(simulated.at(*p))).collect(),
                Vec::new(),
            ),
        ],
    };
    let k: Vec<f64> = (0..=harmonics).map(|k| k as f64).collect();
    let amplitudes = |s: &PeriodicSeries| (0..=harmonics).map(|h| Some(s.amplitude(h))).collect();
    let spectrum = Panel {
        title: format!("{name}: harmonic amplitudes"),
        y_label: format!("amplitude ({unit})"),
        curves: vec![
            curve("measured", k.clone(), amplitudes(&c.measured), Vec::new()),
            curve("simulated", k, amplitudes(&simulated), Vec::new()),
        ],
    };
    let row = ComparedRow {
        name: name.clone(),
        unit: unit.to_string(),
        c,
        simulated,
    };
    Ok((row, panel, spectrum))
}

/// The comparison table: a row per quantity.
fn comparison_table(rows: &[ComparedRow]) -> Result<Table, PipelineError> {
    let f = |g: fn(&ComparedRow) -> f64| Column::F64(rows.iter().map(g).collect());
    let mut table = Table::new("comparison");
    table.push(
        "quantity",
        Column::Str(rows.iter().map(|r| r.name.clone()).collect()),
    )?;
    table.push(
        "unit",
        Column::Str(rows.iter().map(|r| r.unit.clone()).collect()),
    )?;
    table.push("nrmse", f(|r| r.c.nrmse))?;
    table.push("rms_error", f(|r| r.c.rms_error))?;
    table.push("simulated_peak", f(|r| r.c.simulated_peak.0))?;
    table.push(
        "simulated_peak_angle_deg",
        f(|r| r.c.simulated_peak.1.to_degrees()),
    )?;
    table.push("measured_peak", f(|r| r.c.measured_peak.0))?;
    table.push(
        "measured_peak_angle_deg",
        f(|r| r.c.measured_peak.1.to_degrees()),
    )?;
    table.push("phase_lag_deg", f(|r| r.c.phase_lag.to_degrees()))?;
    table.push("rms_error_after_lag", f(|r| r.c.rms_error_after_lag))?;
    Ok(table)
}

/// The comparison's four figures (accelerations and forces over the crank angle, and their
/// harmonic content), each written when it has a panel.
fn write_figures(
    panels: Vec<Panel>,
    spectra: Vec<Panel>,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let (accel, force): (Vec<Panel>, Vec<Panel>) = panels
        .into_iter()
        .partition(|p| p.y_label.contains("m/s^2"));
    let (accel_spectra, force_spectra): (Vec<Panel>, Vec<Panel>) = spectra
        .into_iter()
        .partition(|p| p.y_label.contains("m/s^2"));
    let x_label = "crank angle phi1 from the recording's first sample (deg)";
    let k_label = "harmonic of the crank angle k (k = 1: once per turn)";
    let figures = [
        (
            "Markers' accelerations, measured against simulated (bench frame)",
            x_label,
            accel,
            "accelerations",
        ),
        (
            "Liaison forces at B and C', measured against simulated (bench frame)",
            x_label,
            force,
            "forces",
        ),
        (
            "Harmonic content of the markers' accelerations, measured and simulated",
            k_label,
            accel_spectra,
            "spectra-accelerations",
        ),
        (
            "Harmonic content of the liaison forces at B and C', measured and simulated",
            k_label,
            force_spectra,
            "spectra-forces",
        ),
    ];
    let mut files = Vec::new();
    for (caption, x_label, panels, stem) in figures {
        if !panels.is_empty() {
            let fig = Figure {
                caption: caption.into(),
                x_label: x_label.into(),
                panels,
            };
            files.extend(flexbench_report::write_figure(&fig, &out.join(stem))?);
        }
    }
    Ok(files)
}

/// The quantities whose elastic vibration the kept harmonics cannot hold: where the Fourier
/// residual the elastic model adds to the rigid one's, sqrt(r_elastic^2 - r_rigid^2), is more
/// than half the elastic bodies' RMS effect on the quantity, the comparison sees the elastic
/// model mostly as the rigid one (the lever's modes lie above the kept harmonics of the
/// crank). One warning naming them, or none.
fn lost_vibration(
    mech: &flexbench_mechanism::Mechanism,
    rows: &[ComparedRow],
    rigid: &SimSeries,
    effect: &[EffectRecord],
    harmonics: usize,
) -> Result<Option<String>, PipelineError> {
    let basis = PeriodicBasis::new("the rigid simulated turn", &rigid.phi, harmonics)?;
    let mut lost = Vec::new();
    for r in rows {
        let (Some(e), Some(values)) = (
            effect.iter().find(|e| e.quantity == r.name),
            rigid.quantity(mech, &r.name),
        ) else {
            continue;
        };
        let rr = basis.fit(&r.name, &values)?.residual_rms;
        let added = (r.simulated.residual_rms.powi(2) - rr * rr).max(0.0).sqrt();
        if added > 0.5 * e.rms_difference && e.rms_difference > 0.0 {
            lost.push(format!(
                "{} ({:.3} of {:.3} {})",
                r.name, added, e.rms_difference, r.unit
            ));
        }
    }
    Ok((!lost.is_empty()).then(|| format!("with {harmonics} harmonics of the crank angle the simulated series lose most of the elastic lever's vibration (the Fourier residual it adds against its RMS effect): {}; these quantities are compared as if the bench were rigid: raise the harmonics (compare --harmonics, [compare] harmonics) as far as the recording's samples allow", lost.join(", "))))
}

/// Linear interpolation of (x, y) at `xi` (x increasing); None outside x's range.
fn interpolate(x: &[f64], y: &[f64], xi: f64) -> Option<f64> {
    let j = x.partition_point(|v| *v < xi);
    if j == 0 {
        return (x.first() == Some(&xi)).then(|| y[0]);
    }
    let (x0, x1) = (*x.get(j - 1)?, *x.get(j)?);
    let s = (xi - x0) / (x1 - x0);
    Some(y[j - 1] + s * (y[j] - y[j - 1]))
}

/// Per simulated quantity (every forces column, every marker's acceleration components) over
/// the first turn of the elastic run: its name, unit, and (crank angle from the turn's start,
/// rigid value, elastic - rigid) samples, the rigid series read at the elastic one's crank
/// angles.
type EffectSeries = (String, String, Vec<(f64, f64, f64)>);

/// The elastic bodies' effect on every simulated quantity, and its series for the figures:
/// the forces' and the accelerations'.
fn elastic_effect(
    mech: &flexbench_mechanism::Mechanism,
    elastic: &SimSeries,
    rigid: &SimSeries,
) -> Result<(Vec<EffectRecord>, [Vec<EffectSeries>; 2]), PipelineError> {
    let phi0 = elastic.phi[0];
    let turn: Vec<usize> = (0..elastic.phi.len())
        .filter(|&i| elastic.phi[i] - phi0 <= TAU)
        .collect();
    let series = |name: &str| -> Vec<(f64, f64, f64)> {
        let (Some(ye), Some(yr)) = (elastic.quantity(mech, name), rigid.quantity(mech, name))
        else {
            return Vec::new();
        };
        turn.iter()
            .filter_map(|&i| {
                let r = interpolate(&rigid.phi, &yr, elastic.phi[i])?;
                Some(((elastic.phi[i] - phi0).to_degrees(), r, ye[i] - r))
            })
            .collect()
    };
    let forces: Vec<EffectSeries> = mech
        .force_columns()
        .into_iter()
        .map(|name| {
            let unit = flexbench_contracts::units::unit_of("forces", &name).unwrap_or("N");
            let s = series(&name);
            (name, unit.to_string(), s)
        })
        .collect();
    let accelerations: Vec<EffectSeries> = mech
        .markers
        .iter()
        .flat_map(|m| ["ax", "ay"].map(|axis| format!("{} {axis}", m.name)))
        .map(|name| {
            let s = series(&name);
            (name, "m/s^2".to_string(), s)
        })
        .collect();
    let record = |(name, unit, s): &EffectSeries| -> Result<EffectRecord, PipelineError> {
        if s.is_empty() {
            return Err(PipelineError::Input(format!("the elastic and the rigid simulations share no crank angle for {name}: they ran at different speeds")));
        }
        let n = s.len() as f64;
        Ok(EffectRecord {
            quantity: name.clone(),
            unit: unit.clone(),
            rigid_peak: s.iter().fold(0.0, |a, v| a.max(v.1.abs())),
            peak_difference: s.iter().fold(0.0, |a, v| a.max(v.2.abs())),
            rms_difference: (s.iter().map(|v| v.2 * v.2).sum::<f64>() / n).sqrt(),
        })
    };
    let records = forces
        .iter()
        .chain(&accelerations)
        .map(record)
        .collect::<Result<_, _>>()?;
    Ok((records, [forces, accelerations]))
}

/// The effect's two figures: elastic - rigid over the crank angle for the forces and for the
/// markers' accelerations, each panel titled with the rigid peak and the difference's peak.
fn write_effect_figures(
    figures: [Vec<EffectSeries>; 2],
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let [forces, accelerations] = figures;
    let mut files = Vec::new();
    for (caption, stem, series) in [
        (
            "Liaison forces and actuators: the elastic bench minus the rigid one over a turn",
            "elastic-effect-forces",
            forces,
        ),
        (
            "Markers' accelerations: the elastic bench minus the rigid one over a turn (bench frame)",
            "elastic-effect-accelerations",
            accelerations,
        ),
    ] {
        let panels: Vec<Panel> = series
            .into_iter()
            // A quantity zero in both models (a slide's couple without friction) has no panel.
            .filter(|(_, _, s)| s.iter().any(|v| v.1 != 0.0 || v.2 != 0.0))
            .map(|(name, unit, s)| Panel {
                title: format!(
                    "{name}: rigid peak {:.3} {unit}, difference peak {:.3} {unit}",
                    s.iter().fold(0.0, |a: f64, v| a.max(v.1.abs())),
                    s.iter().fold(0.0, |a: f64, v| a.max(v.2.abs()))
                ),
                y_label: format!("elastic - rigid ({unit})"),
                curves: vec![Curve {
                    label: "elastic - rigid".into(),
                    x: s.iter().map(|v| v.0).collect(),
                    y: s.iter().map(|v| Some(v.2)).collect(),
                    band: Vec::new(),
                }],
            })
            .collect();
        if panels.is_empty() {
            continue;
        }
        let fig = Figure {
            caption: caption.into(),
            x_label: "crank angle phi1 from the simulated turn's start (deg)".into(),
            panels,
        };
        files.extend(flexbench_report::write_figure(&fig, &out.join(stem))?);
    }
    Ok(files)
}
