//! `flexbench fem`: the elastic lever's modes along the motion and its forced response; its options
//! are the pipeline file's `[fem]` keys.

use std::path::PathBuf;

use anyhow::{Context, Result};

use flexbench_pipeline::job::{FemInputs, FemJob, Job};

use crate::{bar, on_bar};

/// Arguments of `flexbench fem`.
#[derive(clap::Args)]
pub(crate) struct FemArgs {
    /// Bodies table of `process` or `simulate` (t, body, phi, omega, ax, ay, epsilon).
    #[arg(long)]
    kinematics: PathBuf,
    /// Forces table of the same run (t, B_x, B_y, C_x, C_y).
    #[arg(long)]
    forces: PathBuf,
    /// Mechanism file with the lever's section (E, rho, area, inertia).
    #[arg(long)]
    mechanism: PathBuf,
    /// Number of elements along the lever.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().elements)]
    elements: usize,
    /// Element: quintic (cubic axial, quintic bending) or frame (linear axial, cubic bending).
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().element)]
    element: flexbench_fem::ElementKind,
    /// Supports in the lever frame: pinned (the bench: B and C'), clamped-free, free-free.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().supports)]
    supports: flexbench_fem::Supports,
    /// Modes followed along the cycle.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().modes)]
    modes: usize,
    /// Damping ratio of the forced response (Rayleigh, exact at the first and the highest
    /// followed mode), between 0 and 1.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().damping)]
    damping: f64,
    /// Longest integration step of the forced response, s.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().step)]
    step: f64,
    /// Modes only: no forced response (the file's response = false).
    #[arg(long)]
    no_response: bool,
    /// The fit_residuals table of `process` on the same run: the measured deflection,
    /// compared with the forced response after removing each one's best-fit line.
    #[arg(long)]
    measured: Option<PathBuf>,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

impl FemArgs {
    /// The pipeline file's `[fem]` section these flags write, over its defaults.
    pub(crate) fn section(&self) -> flexbench_pipeline::pipeline_file::FemSection {
        flexbench_pipeline::pipeline_file::FemSection {
            elements: self.elements,
            element: self.element,
            supports: self.supports,
            modes: self.modes,
            damping: self.damping,
            response: !self.no_response,
            step: self.step,
        }
    }
}

/// `flexbench fem`: what `Command::Fem` describes.
pub(crate) fn fem_command(args: FemArgs) -> Result<()> {
    let section = args.section();
    let FemArgs {
        kinematics,
        forces,
        mechanism,
        measured,
        out,
        ..
    } = args;
    let inputs = FemInputs {
        bodies: &kinematics,
        forces: &forces,
        measured: measured.as_deref(),
        mechanism: &mechanism,
    };
    let pb = bar();
    let made = FemJob::run(&section, &inputs, &out, &mut on_bar(&pb))
        .with_context(|| format!("the lever's modes along {}", kinematics.display()))?;
    pb.finish_and_clear();
    let (summary, files) = (made.record, made.files);
    println!(
        "{} samples, {} modes followed (smallest MAC {:.3}); wrote {} files into {}",
        summary.samples,
        summary.modes,
        summary.smallest_mac_along_the_cycle,
        files.len(),
        out.display()
    );
    Ok(())
}
