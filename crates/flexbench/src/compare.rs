//! `flexbench compare`: a processed recording against the bench simulated by its crank, and
//! against the rig's measured torques and forces
//! ([`flexbench_pipeline::compare_measured::compare_job`]).

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::print_warnings;

/// Arguments of `flexbench compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// Directory written by `process` (bodies, markers, forces tables).
    #[arg(long)]
    processed: PathBuf,
    /// Mechanism file to simulate.
    #[arg(long)]
    mechanism: PathBuf,
    /// Harmonics of the crank angle kept for every quantity.
    #[arg(long, default_value_t = flexbench_pipeline::compare::DEFAULT_HARMONICS)]
    harmonics: usize,
    /// The rig's measured torques or forces: computed against measured in time.
    #[command(flatten)]
    measured: crate::measured::MeasuredArgs,
    /// Largest lag of the measurement behind the computed series searched, s.
    #[arg(long, default_value_t = flexbench_pipeline::compare_measured::DEFAULT_MAX_LAG_S)]
    max_lag: f64,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

/// `flexbench compare`: what `Command::Compare` describes
/// ([`flexbench_pipeline::compare_measured::compare_job`]).
pub fn compare_command(args: CompareArgs) -> Result<()> {
    let spec = measured_spec(&args)?;
    let outcome = flexbench_pipeline::compare_measured::compare_job(
        &args.processed,
        &args.mechanism,
        args.harmonics,
        args.measured.measured.as_deref().map(|m| (m, &spec)),
        &args.out,
    )
    .with_context(|| format!("comparing {}", args.processed.display()))?;
    match &outcome.simulated {
        Some(summary) => {
            print_warnings(&summary.warnings);
            for q in &summary.quantities {
                println!(
                    "{:8} NRMSE {:5.2} %  lag {:6.2} deg",
                    q.quantity,
                    100.0 * q.nrmse,
                    q.phase_lag_deg
                );
            }
        }
        None => {
            println!("no simulated comparison: the mechanism has no motor-driven crank to align by")
        }
    }
    if let Some(m) = &outcome.measured {
        print_warnings(&m.warnings);
        for q in &m.quantities {
            let share =
                q.c.friction_share
                    .map(|s| format!(", friction explains {:.0} %", 100.0 * s))
                    .unwrap_or_default();
            println!(
                "{:14} against measured {}: RMS {:.4} {}, mean {:+.4}, peaks {:.3} / {:.3}, lag {:+.1} ms{share}",
                q.quantity, q.measured_column, q.c.rms_difference, q.unit, q.c.mean_difference,
                q.c.computed_peak.0, q.c.measured_peak.0, 1e3 * q.c.lag
            );
        }
    }
    println!(
        "wrote {} files into {}",
        outcome.files.len(),
        args.out.display()
    );
    Ok(())
}

/// The measured table's reading from the command line's `--measured*` options.
fn measured_spec(args: &CompareArgs) -> Result<flexbench_pipeline::compare_measured::MeasuredSpec> {
    let m = &args.measured;
    Ok(flexbench_pipeline::compare_measured::MeasuredSpec {
        time: m.measured_time.clone(),
        columns: m.columns()?,
        time_offset_s: m.measured_offset,
        cutoff_hz: m.measured_cutoff,
        max_lag_s: args.max_lag,
    })
}
