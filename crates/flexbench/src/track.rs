//! `flexbench track`: the markers tracked in a video.

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_pipeline::pipeline_file::TrackSection;

use crate::{bar, load_optional, on_bar, print_written};

/// Arguments of `flexbench track`.
#[derive(clap::Args)]
pub(crate) struct TrackArgs {
    /// Video file.
    #[arg(long)]
    video: PathBuf,
    /// Calibration file (YAML, with the bench plane).
    #[arg(long)]
    calibration: PathBuf,
    /// Tracks table to write (.csv or .parquet; the other format is written beside it).
    #[arg(long)]
    out: PathBuf,
    /// Marker names along the lever from B, comma-separated (default: the mechanism's markers,
    /// else M1,M2,M3,M4,M5).
    #[arg(long)]
    markers: Option<String>,
    /// Mechanism file: its markers are found where it places them (each body's markers a rigid
    /// pattern, among any other bright blobs); without it, the markers must be the only bright
    /// discs on one line.
    #[arg(long)]
    mechanism: Option<PathBuf>,
    /// Segmentation threshold, grey level; default: halfway between median and maximum.
    #[arg(long)]
    threshold: Option<f64>,
    /// Smallest marker blob kept, px of area [default: 6].
    #[arg(long)]
    min_area: Option<f64>,
    /// Largest marker blob kept, px of area (a disc d px across covers 0.785 d^2) [default:
    /// 5000].
    #[arg(long)]
    max_area: Option<f64>,
    /// Estimate the markers' depth in front of the bench plane from their rigid patterns'
    /// spacings and use it (by default the mechanism file's depths are used and the estimate
    /// only reported).
    #[arg(long)]
    estimate_depth: bool,
    /// A rolling shutter's readout, s (the time from the first row's exposure to the last's):
    /// each sample timed by its row and carried back to its frame's time.
    #[arg(long)]
    readout: Option<f64>,
    /// Estimate a rolling shutter's readout from the rigid patterns' deformation with the
    /// motion and use it (by default the readout given is used and the estimate only reported).
    #[arg(long)]
    estimate_readout: bool,
    /// False-alarm level of each test of the tracked samples (flags.csv beside the tracks)
    /// [default: 1e-6].
    #[arg(long)]
    false_alarm: Option<f64>,
    /// The user's corrections (TOML: [[drop]], [[move]], [[swap]], [[seek]] per marker and
    /// frames), applied as the video is tracked.
    #[arg(long)]
    corrections: Option<PathBuf>,
    /// The features clicked once for markers of the template kind (TOML: [[template]] tables of
    /// marker, frame, pixel = [u, v] and half_size in px), each followed by its template.
    #[arg(long)]
    templates: Option<PathBuf>,
    /// Playback frame rate, frames/s: the frames taken as evenly spaced at this rate instead of
    /// the file's timestamps (needed for a file without timestamps, such as a raw H.264 stream).
    #[arg(long)]
    frame_rate: Option<f64>,
    /// Capture frame rate of a slow-motion recording, frames/s (e.g. 240 for a file played back
    /// at 30); default: the file's metadata, else the playback rate.
    #[arg(long)]
    capture_rate: Option<f64>,
}

impl TrackArgs {
    /// The pipeline file's `[track]` section these flags write (each left out unset, as in the
    /// file).
    pub(crate) fn section(&self) -> TrackSection {
        TrackSection {
            markers: self.markers.as_ref().map(|list| {
                list.split(',')
                    .map(|m| m.trim().to_string())
                    .filter(|m| !m.is_empty())
                    .collect()
            }),
            threshold: self.threshold,
            false_alarm: self.false_alarm,
            min_area: self.min_area,
            max_area: self.max_area,
            estimate_depth: self.estimate_depth,
            readout_s: self.readout,
            estimate_readout: self.estimate_readout,
            frame_rate: self.frame_rate,
            capture_rate: self.capture_rate,
        }
    }
}

/// `flexbench track`: what `Command::Track` describes.
pub(crate) fn track_command(args: TrackArgs) -> Result<()> {
    use flexbench_pipeline::job::{Job, TrackInputs, TrackJob};
    let mech = load_optional(args.mechanism.as_deref())?;
    let section = args.section();
    let inputs = TrackInputs {
        video: &args.video,
        calibration: &args.calibration,
        mechanism: mech.as_ref(),
        corrections: args.corrections.as_deref(),
        templates: args.templates.as_deref(),
    };
    let pb = bar();
    let made = TrackJob::run(&section, &inputs, &args.out, &mut on_bar(&pb))
        .with_context(|| format!("tracking {}", args.video.display()))?;
    pb.finish_and_clear();
    print_summary(&made.record);
    print_written(&made.files);
    Ok(())
}

/// The tracker's findings on the terminal: the counts, the outlines, the stickers, the time
/// base, the markers' depth and the rolling shutter (its warnings are told as the job goes).
fn print_summary(s: &flexbench_vision::track::TrackSummary) {
    println!(
        "tracked {} frames at {:.0} frames/s: {} detections, {} gaps, {} rejected blobs, {} samples flagged, locked at frame {}, median sigma {:.3} px",
        s.frames, s.frames_per_second, s.detections, s.gaps, s.rejected_blobs, s.flagged, s.lock_frame, s.median_sigma_px,
    );
    if s.outlined > 0 {
        println!(
            "{} samples of discs that touched something of their shade or the frame's edge: each fitted to its visible outline about its prediction{}",
            s.outlined,
            match s.outlined_by_spacing {
                0 => String::new(),
                n => format!(" ({n} beyond the motion's gate, at their body's spacing from a marker seen in the same frame)"),
            }
        );
    }
    if s.luma_refined > 0 {
        println!(
            "{} samples of coloured stickers: the hue's centre refined on the frame's luma, where the sticker stands out from its ring",
            s.luma_refined
        );
    }
    println!("{}", s.timing.sentence());
    if let Some(d) = &s.depth {
        println!(
            "the markers' spacings: {:+.3} % against the mechanism file's, a depth of {:.2} +- {:.2} mm in front of the bench plane ({} frames); {:.2} mm used{}",
            (d.scale - 1.0) * 100.0,
            d.depth_m * 1e3,
            d.sigma_m * 1e3,
            d.frames,
            d.used_m * 1e3,
            if d.applied { " (estimated)" } else { "" }
        );
    }
    if let Some(r) = &s.shutter {
        println!(
            "rolling shutter: a readout of {:.2} ms; the markers seen {:.2} ms after their frame's time on average ({:.2} ms at most), carried back up to {:.3} mm with an error of {:.4} mm RMS ({:.4} mm at most) against a noise of {:.4} mm",
            r.readout_s * 1e3,
            r.mean_delay_ms,
            r.max_delay_ms,
            r.max_shift_mm,
            r.carry_error_rms_mm,
            r.carry_error_max_mm,
            r.noise_mm
        );
    }
    if let Some(r) = &s.readout {
        println!(
            "the rigid patterns' deformation with the motion: a rolling shutter's readout of {:.2} +- {:.2} ms ({} body-frames, {:.3} mm RMS misfit); {:.2} ms used{}",
            r.readout_s * 1e3,
            r.sigma_s * 1e3,
            r.fits,
            r.misfit_mm,
            r.used_s * 1e3,
            if r.applied { " (estimated)" } else { "" }
        );
    }
}
