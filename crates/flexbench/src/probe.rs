//! `flexbench probe`: a video's frames, rate, timestamps and decoding speed, or a pixel's hue.

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_vision::timebase::TimeBaseConfig;

/// Arguments of `flexbench probe`.
#[derive(clap::Args)]
pub(crate) struct ProbeArgs {
    /// Video file.
    #[arg(long)]
    video: PathBuf,
    /// Playback frame rate, frames/s: the frames taken as evenly spaced at this rate instead of
    /// the file's timestamps (needed for a file without timestamps, such as a raw H.264 stream).
    #[arg(long)]
    frame_rate: Option<f64>,
    /// Capture frame rate of a slow-motion recording, frames/s (e.g. 240 for a file played back
    /// at 30); default: the file's metadata, else the playback rate.
    #[arg(long)]
    capture_rate: Option<f64>,
    /// A coloured sticker's hue learnt from one click: the pixel "U,V" (px) at the sticker's
    /// middle, in frame --frame; prints the mechanism file's keys for it.
    #[arg(long)]
    hue_at: Option<String>,
    /// The frame of --hue-at (0-based).
    #[arg(long, default_value_t = 0)]
    frame: usize,
}

/// `flexbench probe`: what `Command::Probe` describes.
pub(crate) fn probe_command(args: ProbeArgs) -> Result<()> {
    let ProbeArgs {
        video,
        frame_rate,
        capture_rate,
        hue_at,
        frame,
    } = args;
    if let Some(at) = hue_at {
        return hue_command(&video, &at, frame);
    }
    let timing = TimeBaseConfig {
        frame_rate,
        capture_rate,
    };
    let p = flexbench_vision::track::probe_video(&video, &timing)?;
    println!(
        "{}: {} frames of {}x{} at {:.3} fps (header), decoded at {:.0} frames/s",
        video.display(),
        p.frames,
        p.width,
        p.height,
        p.fps,
        p.frames_per_second
    );
    match (&p.timing, &p.timing_problem) {
        (Some(t), _) => {
            println!("{}", t.sentence());
            for w in &t.warnings {
                println!("warning: {w}");
            }
        }
        (None, Some(why)) => println!("no time base: {why}"),
        (None, None) => {}
    }
    Ok(())
}

/// `flexbench probe --hue-at`: the hue of the sticker clicked at "U,V" in frame `frame`.
pub(crate) fn hue_command(video: &std::path::Path, at: &str, frame: usize) -> Result<()> {
    let (u, v) = at
        .split_once(',')
        .and_then(|(u, v)| Some((u.trim().parse::<f64>().ok()?, v.trim().parse::<f64>().ok()?)))
        .ok_or_else(|| {
            anyhow::anyhow!("--hue-at {at}: give the pixel as U,V (px, e.g. 412.5,208)")
        })?;
    let img = flexbench_vision::track::frame_of(video, frame)
        .with_context(|| format!("reading frame {frame} of {}", video.display()))?;
    let h = flexbench_vision::response::hue_at(&img, u, v, 6.0).with_context(|| {
        format!(
            "the hue at ({u}, {v}) in frame {frame} of {}",
            video.display()
        )
    })?;
    println!(
        "hue at ({u}, {v}) in frame {frame}: {:.1} deg, spread {:.1} deg over {} coloured pixels within 6 px",
        h.hue_deg, h.spread_deg, h.pixels
    );
    println!(
        "in the mechanism file: kind = \"colour\", hue = {:.1}, hue_tolerance = {:.0}",
        h.hue_deg, h.tolerance_deg
    );
    Ok(())
}
