//! `flexbench check`: a mechanism file parsed, validated, assembled and described.

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_mechanism::file::load;

/// Arguments of `flexbench check`.
#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// Mechanism file (TOML).
    #[arg(long)]
    mechanism: PathBuf,
}

/// `flexbench check`: what `Command::Check` describes.
pub(crate) fn check_command(args: CheckArgs) -> Result<()> {
    let CheckArgs { mechanism } = args;
    let file = load(&mechanism)
        .with_context(|| format!("loading the mechanism {}", mechanism.display()))?;
    let m = &file.mechanism;
    println!(
        "{}: {} bodies, {} joints, {} degrees of freedom, {} markers",
        m.name,
        m.bodies.len(),
        m.joints.len(),
        m.dof(),
        m.markers.len()
    );
    for b in &m.bodies {
        println!(
            "  body {:<8} mass {:.4} kg, inertia {:.6} kg m^2 about its centroid ({:.4}, {:.4}) m",
            b.name, b.mass, b.inertia, b.centroid.x, b.centroid.y
        );
    }
    for f in &m.forces {
        println!("  force {}", f.describe());
    }
    println!(
        "  forces table columns: t, {}",
        m.force_columns().join(", ")
    );
    let worst = m
        .check_full_turn()
        .context("turning the first driver a whole turn")?;
    println!(
        "  assembles over a whole turn of the {}; worst condition number {:.1}",
        m.drivers[0].name, worst
    );
    Ok(())
}
