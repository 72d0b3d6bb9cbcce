//! `flexbench overlay`: what flexbench made of a recording, drawn on it.

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_mechanism::file::load;
use flexbench_pipeline::job::{Job, OverlayJob};

use crate::{bar, on_bar, print_written};

/// Arguments of `flexbench overlay`.
#[derive(clap::Args)]
pub(crate) struct OverlayArgs {
    /// Video file.
    #[arg(long)]
    video: PathBuf,
    /// Calibration file (YAML, with the bench plane).
    #[arg(long)]
    calibration: PathBuf,
    /// Tracks table of the video.
    #[arg(long)]
    tracks: PathBuf,
    /// Flags table of the tracks (flags.csv beside them).
    #[arg(long)]
    flags: Option<PathBuf>,
    /// Folder of the process stage: the fitted mechanism (its bodies table) is drawn, and the
    /// samples that failed its residual test (fit_flags) marked.
    #[arg(long)]
    processed: Option<PathBuf>,
    /// Mechanism file (TOML).
    #[arg(long)]
    mechanism: PathBuf,
    /// Output folder: overlay.mp4 (or .avi), overlay-flagged.png, review.html, summary.json.
    #[arg(long)]
    out: PathBuf,
    /// Copy the frames without drawing: decoding plus encoding alone, the overlay's benchmark
    /// baseline.
    #[arg(long)]
    plain: bool,
}

impl OverlayArgs {
    /// The pipeline file's `[overlay]` section these options write (the stage is run, so
    /// `enabled` is the file's default).
    pub fn section(&self) -> flexbench_pipeline::pipeline_file::OverlaySection {
        flexbench_pipeline::pipeline_file::OverlaySection {
            plain: self.plain,
            ..Default::default()
        }
    }
}

/// `flexbench overlay`: what `Command::Overlay` describes.
pub(crate) fn overlay_command(args: OverlayArgs) -> Result<()> {
    let file = load(&args.mechanism)
        .with_context(|| format!("loading the mechanism {}", args.mechanism.display()))?;
    let bodies = args.processed.as_ref().map(|p| {
        flexbench_pipeline::folders::ProcessedFolder::new(p)
            .table(flexbench_pipeline::folders::ProcessedTable::Bodies)
    });
    let fit_flags = args.processed.as_ref().map(|p| {
        flexbench_pipeline::folders::ProcessedFolder::new(p)
            .table(flexbench_pipeline::folders::ProcessedTable::FitFlags)
    });
    let flags: Vec<&std::path::Path> = args
        .flags
        .iter()
        .chain(fit_flags.iter().filter(|f| f.exists()))
        .map(PathBuf::as_path)
        .collect();
    let inputs = flexbench_pipeline::overlay::OverlayInputs {
        video: &args.video,
        calibration: &args.calibration,
        tracks: &args.tracks,
        flags: &flags,
        bodies: bodies.as_deref(),
        mechanism: &file.mechanism,
    };
    let pb = bar();
    let made = OverlayJob::run(&args.section(), &inputs, &args.out, &mut on_bar(&pb))
        .with_context(|| format!("drawing the overlay of {}", args.video.display()))?;
    pb.finish_and_clear();
    let (record, files) = (made.record, made.files);
    println!(
        "overlay of {} frames ({}), {} flagged sample(s) marked{}",
        record.frames,
        record.codec,
        record.flagged,
        if record.mechanism_drawn {
            ", the fitted mechanism drawn"
        } else {
            ""
        }
    );
    print_written(&files);
    Ok(())
}
