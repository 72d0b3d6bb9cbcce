//! `flexbench compare`: a processed recording against the bench simulated by its crank, and
//! against the rig's measured torques and forces
//! ([`flexbench_pipeline::job::CompareJob`]).

use std::path::PathBuf;

use anyhow::{Context, Result};

use flexbench_pipeline::job::{CompareInputs, CompareJob, Job};
use flexbench_pipeline::pipeline_file::CompareSection;
use flexbench_pipeline::StageEvent;

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
    #[arg(long, default_value_t = CompareSection::default().harmonics)]
    pub(crate) harmonics: usize,
    /// The rig's measured torques or forces: computed against measured in time.
    #[command(flatten)]
    pub(crate) measured: crate::measured::MeasuredArgs,
    /// Largest lag of the measurement behind the computed series searched, s.
    #[arg(long, default_value_t = CompareSection::default().max_lag_s)]
    pub(crate) max_lag: f64,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

/// `flexbench compare`: what `Command::Compare` describes ([`CompareJob`]).
pub fn compare_command(args: CompareArgs) -> Result<()> {
    let section = args.section()?;
    let measured = args.measured.measured.as_deref();
    // The keys that read a measured table, refused without one (given by hand here).
    section.measured(measured)?;
    let inputs = CompareInputs {
        processed: &args.processed,
        mechanism: &args.mechanism,
        measured,
    };
    let mut warn = |e: StageEvent| {
        if let StageEvent::Warning(w) = e {
            eprintln!("warning: {w}");
        }
    };
    let made = CompareJob::run(&section, &inputs, &args.out, &mut warn)
        .with_context(|| format!("comparing {}", args.processed.display()))?;
    let outcome = made.record;
    match &outcome.simulated {
        Some(summary) => {
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

impl CompareArgs {
    /// The pipeline file's `[compare]` section these flags write; an error for a malformed
    /// `--measured-column`.
    pub fn section(&self) -> Result<CompareSection> {
        let m = &self.measured;
        Ok(CompareSection {
            harmonics: self.harmonics,
            measured_columns: m.columns()?,
            measured_time: m.measured_time.clone(),
            measured_offset_s: m.measured_offset,
            measured_cutoff_hz: m.measured_cutoff,
            max_lag_s: self.max_lag,
        })
    }
}
