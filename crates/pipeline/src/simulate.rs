//! `flexbench simulate`: the ground truth of a mechanism in the contract formats.

use std::path::{Path, PathBuf};
use std::time::Instant;

use flexbench_flexible::simulate::FlexConfig;
use flexbench_flexible::system::System;
use flexbench_mechanism::simulate::{SimConfig, SimReport};
use flexbench_mechanism::Mechanism;
use flexbench_tables::write_table;
use serde_json::json;

use crate::{ensure_dir, write_json, PipelineError};
use flexbench_report::forces_figure;

/// What `simulate` did.
#[derive(Debug, Clone)]
pub struct SimulateSummary {
    /// The integrator's report (drift, energy balance).
    pub report: SimReport,
    /// Number of samples written.
    pub samples: usize,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Wall time, s.
    pub seconds: f64,
}

/// Simulate `mech` and write `tracks`, `markers`, `bodies`, `forces` (CSV and Parquet), the
/// forces figure and `summary.json` into `out`. Forces are those of the multipliers.
pub fn simulate(
    mech: &Mechanism,
    cfg: &SimConfig,
    out: &Path,
    mut events: impl FnMut(crate::StageEvent),
) -> Result<SimulateSummary, PipelineError> {
    let mut progress = |f: f64| events(crate::StageEvent::Progress("simulating", f));
    if System::needed_for(mech) {
        return simulate_coupled(mech, cfg, out, progress);
    }
    let start = Instant::now();
    let sim = mech.simulate(cfg, &mut progress)?;
    let states: Vec<_> = sim
        .samples
        .iter()
        .map(|s| (s.t, &s.q, &s.qd, &s.qdd))
        .collect();
    let tracks = mech.tracks(&sim.samples.iter().map(|s| (s.t, &s.q)).collect::<Vec<_>>())?;
    let markers = mech.markers_table(&states)?;
    let bodies = mech.bodies_table(&states)?;
    let t: Vec<f64> = sim.samples.iter().map(|s| s.t).collect();
    let rows: Vec<Option<Vec<f64>>> = sim
        .samples
        .iter()
        .map(|s| Some(mech.forces_from_multipliers(s)))
        .collect();
    let forces = mech.forces_table(&t, &rows)?;
    // Everything is computed: now write.
    let tracks = tracks.to_table()?;
    let tables = [
        (&tracks, "tracks"),
        (&markers, "markers"),
        (&bodies, "bodies"),
        (&forces, "forces"),
    ];
    let title = format!("{}: simulated liaison forces (multipliers)", mech.name);
    let mut files = write_outputs(mech, out, &tables, &t, &rows, &title)?;
    let seconds = start.elapsed().as_secs_f64();
    files.push(write_json(
        &out.join(crate::folders::SUMMARY),
        &json!({
            "job": "simulate",
            "mechanism": mech.name,
            "duration_s": cfg.duration,
            "rate_hz": cfg.rate,
            "settle_s": cfg.settle,
            "rtol": cfg.rtol,
            "atol": cfg.atol,
            "samples": sim.samples.len(),
            "integrator": sim.report,
            "seconds": seconds,
        }),
    )?);
    Ok(SimulateSummary {
        report: sim.report,
        samples: sim.samples.len(),
        files,
        seconds,
    })
}

/// [`simulate`] of a mechanism with an elastic body or a prescribed driver: the coupled
/// simulation (`flexbench-flexible`). Writes the same tables (the markers move with the elastic
/// bodies' deformation; a body's row is its frame's rigid pose; no tracks or markers table when
/// the file has no marker), the forces from the multipliers, and `elastic` (every elastic
/// coordinate and the energies per sample).
fn simulate_coupled(
    mech: &Mechanism,
    cfg: &SimConfig,
    out: &Path,
    mut progress: impl FnMut(f64),
) -> Result<SimulateSummary, PipelineError> {
    let start = Instant::now();
    let sys = System::new(mech)?;
    let fc = FlexConfig {
        duration: cfg.duration,
        rate: cfg.rate,
        settle: cfg.settle,
        rtol: cfg.rtol,
        atol: cfg.atol,
    };
    let sim = sys.simulate(&fc, &mut progress)?;
    let CoupledTables {
        tracks,
        bodies,
        forces,
        elastic,
        t,
        rows,
    } = coupled_tables(mech, &sys, &sim)?;
    let mut tables: Vec<(&flexbench_contracts::Table, &str)> = Vec::new();
    if let Some((tracks, markers)) = &tracks {
        tables.extend([(tracks, "tracks"), (markers, "markers")]);
    }
    tables.extend([
        (&bodies, "bodies"),
        (&forces, "forces"),
        (&elastic, "elastic"),
    ]);
    let title = format!(
        "{}: simulated liaison forces, elastic bodies coupled (multipliers)",
        mech.name
    );
    let mut files = write_outputs(mech, out, &tables, &t, &rows, &title)?;
    let seconds = start.elapsed().as_secs_f64();
    let r = &sim.report;
    files.push(write_json(
        &out.join(crate::folders::SUMMARY),
        &json!({
            "job": "simulate",
            "mechanism": mech.name,
            "coupled_elastic": true,
            "duration_s": cfg.duration,
            "rate_hz": cfg.rate,
            "settle_s": cfg.settle,
            "rtol": cfg.rtol,
            "atol": cfg.atol,
            "samples": sim.samples.len(),
            "elastic_coordinates": sys.elastic_columns().len(),
            "integrator": r,
            "work_channels": sim.channels,
            "seconds": seconds,
        }),
    )?);
    Ok(SimulateSummary {
        report: SimReport {
            steps: r.steps,
            rejected: r.rejected,
            max_drift_before_projection: r.max_drift_before_projection,
            max_drift_at_samples: 0.0,
            energy_error_j: r.energy_error_j,
            gross_work_j: r.gross_work_j,
            energy_error_relative: r.energy_error_relative,
        },
        samples: sim.samples.len(),
        files,
        seconds,
    })
}

/// The coupled simulation's tables: tracks and markers (None without markers), bodies, forces,
/// elastic; the forces' times and rows for the figure.
struct CoupledTables {
    tracks: Option<(flexbench_contracts::Table, flexbench_contracts::Table)>,
    bodies: flexbench_contracts::Table,
    forces: flexbench_contracts::Table,
    elastic: flexbench_contracts::Table,
    t: Vec<f64>,
    rows: Vec<Option<Vec<f64>>>,
}

fn coupled_tables(
    mech: &Mechanism,
    sys: &System,
    sim: &flexbench_flexible::simulate::FlexSimulation,
) -> Result<CoupledTables, PipelineError> {
    let shadows: Vec<_> = sim
        .samples
        .iter()
        .map(|s| (s.t, sys.shadow_state(s)))
        .collect();
    let states: Vec<_> = shadows
        .iter()
        .map(|(t, (q, qd, qdd))| (*t, q, qd, qdd))
        .collect();
    // A mechanism without markers (the test set's crank) has no tracks to write.
    let tracks = match mech.markers.is_empty() {
        true => None,
        false => Some((
            sys.tracks(&sim.samples)?.to_table()?,
            sys.markers_table(&sim.samples)?,
        )),
    };
    let t: Vec<f64> = sim.samples.iter().map(|s| s.t).collect();
    let rows: Vec<Option<Vec<f64>>> = sim
        .samples
        .iter()
        .map(|s| Some(sys.forces_row(s)))
        .collect();
    Ok(CoupledTables {
        tracks,
        bodies: mech.bodies_table(&states)?,
        forces: mech.forces_table(&t, &rows)?,
        elastic: sys.elastic_table(&sim.samples)?,
        t,
        rows,
    })
}

/// Write a simulation's tables (CSV and Parquet each) and its forces figure (`rows` at times
/// `t`, the mechanism's force columns) into `out`: the files written.
fn write_outputs(
    mech: &Mechanism,
    out: &Path,
    tables: &[(&flexbench_contracts::Table, &str)],
    t: &[f64],
    rows: &[Option<Vec<f64>>],
    title: &str,
) -> Result<Vec<PathBuf>, PipelineError> {
    ensure_dir(out)?;
    let mut files = Vec::new();
    for (table, stem) in tables {
        files.extend(write_table(table, out, stem)?);
    }
    files.extend(forces_figure(
        t,
        &mech.force_columns(),
        rows,
        None,
        title,
        &out.join("forces"),
    )?);
    Ok(files)
}
