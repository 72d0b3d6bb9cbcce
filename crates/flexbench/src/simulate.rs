//! `flexbench simulate`: the mechanism's forward dynamics and its ground-truth tables.

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_mechanism::file::load;
use flexbench_mechanism::simulate::SimConfig;
use flexbench_pipeline::simulate;

use crate::{bar, on_bar};

/// Arguments of `flexbench simulate`.
#[derive(clap::Args)]
pub(crate) struct SimulateArgs {
    /// Mechanism file (TOML, bench flat form or general form).
    #[arg(long)]
    mechanism: PathBuf,
    /// Recorded duration, s.
    #[arg(long, default_value_t = 2.0)]
    duration: f64,
    /// Output sample rate, Hz.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Time simulated before the recording starts, s (the motion settles).
    #[arg(long, default_value_t = 3.0)]
    settle: f64,
    /// Relative tolerance of the integrator.
    #[arg(long, default_value_t = 1e-10)]
    rtol: f64,
    /// Output directory (created if needed; files in it are replaced atomically).
    #[arg(long)]
    out: PathBuf,
}

/// `flexbench simulate`: what `Command::Simulate` describes.
pub(crate) fn simulate_command(args: SimulateArgs) -> Result<()> {
    let SimulateArgs {
        mechanism,
        duration,
        rate,
        settle,
        rtol,
        out,
    } = args;
    let file = load(&mechanism)
        .with_context(|| format!("loading the mechanism {}", mechanism.display()))?;
    let cfg = SimConfig {
        duration,
        rate,
        settle,
        rtol,
        ..Default::default()
    };
    let pb = bar();
    let s = simulate(&file.mechanism, &cfg, &out, on_bar(&pb))
        .with_context(|| format!("simulating {}", mechanism.display()))?;
    pb.finish_and_clear();
    println!(
        "simulated {} samples in {:.2} s: {} steps ({} rejected), drift {:.1e} m before projection, energy balance {:.1e} relative ({:.2e} J of {:.3} J gross work)",
        s.samples, s.seconds, s.report.steps, s.report.rejected, s.report.max_drift_before_projection,
        s.report.energy_error_relative, s.report.energy_error_j, s.report.gross_work_j
    );
    println!("wrote {} files into {}", s.files.len(), out.display());
    Ok(())
}
