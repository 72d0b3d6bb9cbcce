//! The `compare` job: a processed recording (its bodies, markers and forces tables) against the
//! rigid bench simulated from the mechanism file at the recording's mean crank speed (the
//! motor's reference speed set so), aligned by the crank angle. Per marker
//! acceleration component and per liaison-force component at B and C': NRMSE, peaks and their
//! crank angles, phase lag, harmonic content (flexbench-compare).

use std::f64::consts::TAU;
use std::path::{Path, PathBuf};

use flexbench_compare::{compare, PeriodicSeries};
use flexbench_contracts::{Column, Table};
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_mechanism::simulate::SimConfig;
use flexbench_report::{Curve, Figure, Panel};
use flexbench_tables::{opt_f64, read_frame, strings};
use serde::{Deserialize, Serialize};

use crate::{ensure_dir, PipelineError};

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
    let df = read_frame(bodies)?;
    let names = strings(&df, bodies, "body")?;
    let (t, phi) = (opt_f64(&df, bodies, "t")?, opt_f64(&df, bodies, "phi")?);
    let rows: Vec<usize> = (0..names.len())
        .filter(|&i| names[i].as_deref() == Some("crank"))
        .collect();
    let mut out_t = Vec::new();
    let mut out_phi: Vec<f64> = Vec::new();
    for &i in &rows {
        let (Some(ti), Some(p)) = (t[i], phi[i]) else {
            continue;
        };
        out_t.push(ti);
        out_phi.push(p);
    }
    crate::unwrap_angles(&mut out_phi);
    if out_t.len() < 2 {
        return Err(PipelineError::Input(format!("{}: no crank angles (rows of body 'crank' with t and phi): give the bodies table of `process`", bodies.display())));
    }
    Ok((out_t, out_phi))
}

/// The crank angle at time `ti` (s) from the samples (`t`, `phi`): the sample at that time
/// (within 1e-9 relative), or None when there is none.
pub(crate) fn angle_at(t: &[f64], phi: &[f64], ti: f64) -> Option<f64> {
    let k = t.partition_point(|x| *x < ti - 1e-9);
    (k < t.len() && (t[k] - ti).abs() <= 1e-9 * ti.abs().max(1.0)).then(|| phi[k])
}

/// Least-squares slope of y against x.
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - mx) * (b - my))
        .sum::<f64>()
        / x.iter().map(|a| (a - mx).powi(2)).sum::<f64>()
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
    /// What the comparison made doubtful, in words.
    pub warnings: Vec<String>,
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

impl CompareRecord {
    /// Write the record as JSON (keys sorted), atomically.
    pub fn write(&self, path: &Path) -> Result<PathBuf, PipelineError> {
        crate::write_record(path, self)
    }

    /// Read a record written by [`CompareRecord::write`].
    pub fn read(path: &Path) -> Result<CompareRecord, PipelineError> {
        crate::read_record(path, "compare")
    }
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
    let mech = file.mechanism;
    let pick = |stem: &str| -> PathBuf {
        let pq = processed.join(format!("{stem}.parquet"));
        if pq.exists() {
            pq
        } else {
            processed.join(format!("{stem}.csv"))
        }
    };
    let (bodies, markers, forces) = (pick("bodies"), pick("markers"), pick("forces"));
    let (t, crank) = crank_angle(&bodies)?;
    let speed = slope(&t, &crank);
    let ci = mech.body_index("crank").ok_or_else(|| {
        PipelineError::Input(format!("{}: no body named 'crank'", mechanism.display()))
    })?;
    let turn = TAU / speed.abs().max(1e-9);
    // A settled turn and a half of the bench at `per_turn` samples a turn: the samples, the
    // crank angle unwrapped, the mean crank speed.
    let run = |mech: &flexbench_mechanism::Mechanism,
               per_turn: f64|
     -> Result<
        (flexbench_mechanism::simulate::Simulation, Vec<f64>, f64),
        PipelineError,
    > {
        let cfg = SimConfig {
            duration: 1.5 * turn,
            rate: per_turn / turn,
            settle: 3.0,
            ..SimConfig::default()
        };
        let sim = mech.simulate(&cfg, &mut |_| {})?;
        let mut phi: Vec<f64> = sim.samples.iter().map(|s| s.q[3 * ci + 2]).collect();
        crate::unwrap_angles(&mut phi);
        let w = slope(&sim.samples.iter().map(|s| s.t).collect::<Vec<_>>(), &phi);
        Ok((sim, phi, w))
    };
    // The motor's reference speed set so that the simulated bench turns at the recording's mean
    // crank speed (secant iterations, to 1e-5 of it); the file's as it is when it has no motor.
    let mut mech = mech;
    let motor = mech
        .forces
        .iter()
        .position(|f| matches!(f.kind, flexbench_mechanism::model::ForceKind::Motor { .. }));
    let set_ref = |mech: &mut flexbench_mechanism::Mechanism, w: f64| {
        if let Some(flexbench_mechanism::model::ForceKind::Motor { omega_ref, .. }) =
            motor.map(|i| &mut mech.forces[i].kind)
        {
            *omega_ref = w;
        }
    };
    let file_ref = motor.and_then(|i| match mech.forces[i].kind {
        flexbench_mechanism::model::ForceKind::Motor { omega_ref, .. } => Some(omega_ref),
        _ => None,
    });
    let mut adjusted = file_ref;
    if let Some(w0) = file_ref {
        let (_, _, s0) = run(&mech, 200.0)?;
        let (mut a, mut fa) = (w0, s0 - speed);
        let mut b = w0 - fa;
        for _ in 0..8 {
            set_ref(&mut mech, b);
            let (_, _, sb) = run(&mech, 200.0)?;
            let fb = sb - speed;
            if fb.abs() <= 1e-5 * speed.abs() || (fb - fa).abs() < 1e-15 {
                break;
            }
            let next = b - fb * (b - a) / (fb - fa);
            (a, fa, b) = (b, fb, next);
        }
        adjusted = Some(b);
    }
    let (sim, sim_phi, sim_speed) = run(&mech, 2000.0)?;
    let cols = mech.force_columns();
    let sim_forces: Vec<Vec<f64>> = sim
        .samples
        .iter()
        .map(
            |s| match mech.inverse_dynamics(&s.q, &s.qd, &s.qdd, DEFAULT_MAX_CONDITION) {
                Ok(InverseSample::Solved { forces, .. }) => Ok(forces),
                Ok(InverseSample::Toggle { condition }) => Err(PipelineError::Input(format!(
                    "the simulated bench passes a toggle at t = {} s (condition {condition:.1e})",
                    s.t
                ))),
                Err(e) => Err(e.into()),
            },
        )
        .collect::<Result<_, _>>()?;
    let sim_marks: Vec<Vec<f64>> = sim
        .samples
        .iter()
        .map(|s| mech.marker_kinematics(&s.q, &s.qd, &s.qdd))
        .collect();
    // The measured quantities.
    let mdf = read_frame(&markers)?;
    let (mt, mname, max_, may) = (
        opt_f64(&mdf, &markers, "t")?,
        strings(&mdf, &markers, "marker")?,
        opt_f64(&mdf, &markers, "ax")?,
        opt_f64(&mdf, &markers, "ay")?,
    );
    let fdf = read_frame(&forces)?;
    let ft = opt_f64(&fdf, &forces, "t")?;
    let angle_at = |ti: f64| angle_at(&t, &crank, ti);
    // The measured standard deviations, where the processed tables have them (`<name>_sigma`).
    let sigma_of = |df: &flexbench_tables::DataFrame,
                    path: &Path,
                    name: &str|
     -> Result<Vec<Option<f64>>, PipelineError> {
        if flexbench_tables::has_column(df, &format!("{name}_sigma")) {
            Ok(opt_f64(df, path, &format!("{name}_sigma"))?)
        } else {
            Ok(vec![None; df.height()])
        }
    };
    let (sax, say) = (
        sigma_of(&mdf, &markers, "ax")?,
        sigma_of(&mdf, &markers, "ay")?,
    );
    // (name, unit, simulated values per simulated sample, measured (angle, value, sigma) samples)
    let mut quantities: Vec<Quantity<'_>> = Vec::new();
    for (mi, m) in mech.markers.iter().enumerate() {
        for (c, col, sig) in [(4usize, &max_, &sax), (5, &may, &say)] {
            let meas: Vec<(f64, f64, Option<f64>)> = (0..mname.len())
                .filter(|&i| mname[i].as_deref() == Some(m.name.as_str()))
                .filter_map(|i| Some((angle_at(mt[i]?)?, col[i]?, sig[i])))
                .collect();
            let simv: Vec<f64> = sim_marks.iter().map(|r| r[6 * mi + c]).collect();
            quantities.push((
                format!("{} {}", m.name, if c == 4 { "ax" } else { "ay" }),
                "m/s^2",
                simv,
                meas,
            ));
        }
    }
    for name in ["B_x", "B_y", "C_x", "C_y"] {
        let Some(j) = cols.iter().position(|c| c == name) else {
            continue;
        };
        let col = opt_f64(&fdf, &forces, name)?;
        let sig = sigma_of(&fdf, &forces, name)?;
        let meas: Vec<(f64, f64, Option<f64>)> = (0..ft.len())
            .filter_map(|i| Some((angle_at(ft[i]?)?, col[i]?, sig[i])))
            .collect();
        quantities.push((
            name.to_string(),
            "N",
            sim_forces.iter().map(|r| r[j]).collect(),
            meas,
        ));
    }
    // Compare every quantity.
    let mut table_rows = Vec::new();
    let mut panels = Vec::new();
    let deg0 = crank[0];
    let mut spectra: Vec<Panel> = Vec::new();
    for (name, unit, simv, meas) in &quantities {
        let simulated =
            PeriodicSeries::fit(&format!("simulated {name}"), &sim_phi, simv, harmonics)
                .map_err(|e| PipelineError::Input(e.to_string()))?;
        let phi: Vec<f64> = meas.iter().map(|m| m.0).collect();
        let val: Vec<f64> = meas.iter().map(|m| m.1).collect();
        let c = compare(&format!("measured {name}"), &phi, &val, &simulated)
            .map_err(|e| PipelineError::Input(e.to_string()))?;
        let x: Vec<f64> = phi.iter().map(|p| (p - deg0).to_degrees()).collect();
        let band: Vec<Option<f64>> = if meas.iter().any(|m| m.2.is_some()) {
            meas.iter().map(|m| m.2.map(|s| 2.0 * s)).collect()
        } else {
            Vec::new()
        };
        panels.push(Panel {
            title: format!(
                "{name}: NRMSE {:.1} %, lag {:.1} deg",
                100.0 * c.nrmse,
                c.phase_lag.to_degrees()
            ),
            y_label: format!("{name} ({unit})"),
            curves: vec![
                Curve {
                    label: if band.is_empty() {
                        "measured".into()
                    } else {
                        "measured (band: 2 sigma)".into()
                    },
                    x: x.clone(),
                    y: val.iter().map(|v| Some(*v)).collect(),
                    band,
                },
                Curve {
                    label: "simulated".into(),
                    x,
                    y: phi.iter().map(|p| Some(simulated.at(*p))).collect(),
                    band: Vec::new(),
                },
            ],
        });
        let k: Vec<f64> = (0..=harmonics).map(|k| k as f64).collect();
        spectra.push(Panel {
            title: format!("{name}: harmonic amplitudes"),
            y_label: format!("amplitude ({unit})"),
            curves: vec![
                Curve {
                    label: "measured".into(),
                    x: k.clone(),
                    y: (0..=harmonics)
                        .map(|h| Some(c.measured.amplitude(h)))
                        .collect(),
                    band: Vec::new(),
                },
                Curve {
                    label: "simulated".into(),
                    x: k,
                    y: (0..=harmonics)
                        .map(|h| Some(simulated.amplitude(h)))
                        .collect(),
                    band: Vec::new(),
                },
            ],
        });
        table_rows.push((name.clone(), unit.to_string(), c, simulated));
    }
    let mut table = Table::new("comparison");
    table.push(
        "quantity",
        Column::Str(table_rows.iter().map(|r| r.0.clone()).collect()),
    )?;
    table.push(
        "unit",
        Column::Str(table_rows.iter().map(|r| r.1.clone()).collect()),
    )?;
    table.push(
        "nrmse",
        Column::F64(table_rows.iter().map(|r| r.2.nrmse).collect()),
    )?;
    table.push(
        "rms_error",
        Column::F64(table_rows.iter().map(|r| r.2.rms_error).collect()),
    )?;
    table.push(
        "simulated_peak",
        Column::F64(table_rows.iter().map(|r| r.2.simulated_peak.0).collect()),
    )?;
    table.push(
        "simulated_peak_angle_deg",
        Column::F64(
            table_rows
                .iter()
                .map(|r| r.2.simulated_peak.1.to_degrees())
                .collect(),
        ),
    )?;
    table.push(
        "measured_peak",
        Column::F64(table_rows.iter().map(|r| r.2.measured_peak.0).collect()),
    )?;
    table.push(
        "measured_peak_angle_deg",
        Column::F64(
            table_rows
                .iter()
                .map(|r| r.2.measured_peak.1.to_degrees())
                .collect(),
        ),
    )?;
    table.push(
        "phase_lag_deg",
        Column::F64(
            table_rows
                .iter()
                .map(|r| r.2.phase_lag.to_degrees())
                .collect(),
        ),
    )?;
    table.push(
        "rms_error_after_lag",
        Column::F64(table_rows.iter().map(|r| r.2.rms_error_after_lag).collect()),
    )?;
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
            Figure {
                caption: "Markers' accelerations, measured against simulated (bench frame)".into(),
                x_label: x_label.into(),
                panels: accel,
            },
            "accelerations",
        ),
        (
            Figure {
                caption: "Liaison forces at B and C', measured against simulated (bench frame)"
                    .into(),
                x_label: x_label.into(),
                panels: force,
            },
            "forces",
        ),
        (
            Figure {
                caption: "Harmonic content of the markers' accelerations, measured and simulated"
                    .into(),
                x_label: k_label.into(),
                panels: accel_spectra,
            },
            "spectra-accelerations",
        ),
        (
            Figure {
                caption:
                    "Harmonic content of the liaison forces at B and C', measured and simulated"
                        .into(),
                x_label: k_label.into(),
                panels: force_spectra,
            },
            "spectra-forces",
        ),
    ];
    ensure_dir(out)?;
    let mut files: Vec<PathBuf> =
        flexbench_tables::write_table(&table, out, "comparison")?.to_vec();
    for (fig, stem) in &figures {
        if !fig.panels.is_empty() {
            files.extend(flexbench_report::write_figure(fig, &out.join(stem))?);
        }
    }
    let warnings: Vec<String> = if (speed / sim_speed - 1.0).abs() > SPEED_WARNING {
        vec![format!("the recording's mean crank speed {:.2} rpm differs from the simulation's {:.2} rpm by more than {} %: the simulated bench does not run as the recorded one (the mechanism has no motor whose reference speed could be set)", speed * 60.0 / TAU, sim_speed * 60.0 / TAU, 100.0 * SPEED_WARNING)]
    } else {
        Vec::new()
    };
    let record = CompareRecord {
        job: "compare".into(),
        processed: processed.display().to_string(),
        mechanism: mechanism.display().to_string(),
        harmonics,
        measured_crank_speed_rpm: speed * 60.0 / TAU,
        simulated_crank_speed_rpm: sim_speed * 60.0 / TAU,
        motor_reference_rpm_in_file: file_ref.map(|w| w * 60.0 / TAU),
        motor_reference_rpm_simulated: adjusted.map(|w| w * 60.0 / TAU),
        quantities: table_rows
            .iter()
            .map(|r| QuantityRecord {
                quantity: r.0.clone(),
                unit: r.1.to_string(),
                nrmse: r.2.nrmse,
                rms_error: r.2.rms_error,
                simulated_peak: r.2.simulated_peak.0,
                simulated_peak_angle_deg: r.2.simulated_peak.1.to_degrees(),
                measured_peak: r.2.measured_peak.0,
                measured_peak_angle_deg: r.2.measured_peak.1.to_degrees(),
                phase_lag_deg: r.2.phase_lag.to_degrees(),
                rms_error_after_lag: r.2.rms_error_after_lag,
                simulated_series_residual_rms: r.3.residual_rms,
                measured_harmonic_amplitudes: (0..=harmonics.min(10))
                    .map(|k| r.2.measured.amplitude(k))
                    .collect(),
                simulated_harmonic_amplitudes: (0..=harmonics.min(10))
                    .map(|k| r.3.amplitude(k))
                    .collect(),
            })
            .collect(),
        warnings,
    };
    files.push(record.write(&out.join("summary.json"))?);
    Ok((record, files))
}
