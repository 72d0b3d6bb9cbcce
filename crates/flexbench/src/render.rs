//! `flexbench render`: what a known camera films of the simulated bench.

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_mechanism::file::load;

use crate::{bar, on_bar};

/// Arguments of `flexbench render`.
#[derive(clap::Args)]
pub(crate) struct RenderArgs {
    /// Mechanism file (TOML).
    #[arg(long)]
    mechanism: PathBuf,
    /// Camera and recording settings (TOML).
    #[arg(long)]
    camera: PathBuf,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

/// `flexbench render`: what `Command::Render` describes.
pub(crate) fn render_command(args: RenderArgs) -> Result<()> {
    let RenderArgs {
        mechanism,
        camera,
        out,
    } = args;
    let file = load(&mechanism)
        .with_context(|| format!("loading the mechanism {}", mechanism.display()))?;
    let spec = flexbench_pipeline::render::RenderSpec::load(&camera)?;
    let pb = bar();
    let s = flexbench_pipeline::render::render(&file.mechanism, &spec, &out, on_bar(&pb))
        .with_context(|| format!("rendering into {}", out.display()))?;
    pb.finish_and_clear();
    println!(
        "rendered {} frames into {} ({} files in {})",
        s.frames,
        s.video.display(),
        s.files.len(),
        out.display()
    );
    Ok(())
}
