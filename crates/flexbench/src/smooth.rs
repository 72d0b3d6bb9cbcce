//! `flexbench smooth`: the signal stage alone; its options are the pipeline file's `[smooth]` keys.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::{load_optional, parse_band, print_written};

/// Arguments of `flexbench smooth`.
#[derive(clap::Args)]
pub(crate) struct SmoothArgs {
    /// Tracks table (CSV or Parquet: frame, t, marker, u, v, x, y).
    #[arg(long)]
    tracks: PathBuf,
    /// Output folder (markers.parquet, markers.csv and markers.summary.json in it), or the
    /// markers table's path (.csv or .parquet; the other format and a summary beside it).
    #[arg(long)]
    out: PathBuf,
    /// Method: rts (Kalman/RTS smoother with a periodic part, parameters from the data;
    /// the default), savgol, butterworth (zero-lag, the labs' filter) or spline (Woltring's
    /// GCV smoothing spline).
    #[arg(long)]
    method: Option<flexbench_pipeline::smooth::SmoothKind>,
    /// Unit of x and y in the tracks: m (the default), mm, cm or in.
    #[arg(long)]
    unit: Option<flexbench_pipeline::smooth::LengthUnit>,
    /// Savitzky-Golay window, samples (odd), with --method savgol (default 21).
    #[arg(long)]
    window: Option<usize>,
    /// Savitzky-Golay polynomial order, with --method savgol (default 5).
    #[arg(long)]
    order: Option<usize>,
    /// Butterworth: order of each of the two passes, with --method butterworth (default 2:
    /// the fourth-order zero-lag filter).
    #[arg(long)]
    filter_order: Option<usize>,
    /// Butterworth: the cutoff, Hz (-3 dB after both passes); without it the cutoff is
    /// chosen per coordinate by --cutoff-by.
    #[arg(long)]
    cutoff_hz: Option<f64>,
    /// Butterworth: how the cutoff is chosen: residual (Winter's residual analysis, the
    /// default) or durbin-watson (the residuals' Durbin-Watson statistic at 2).
    #[arg(long)]
    cutoff_by: Option<flexbench_pipeline::smooth::CutoffCriterion>,
    /// Smoothing spline: its odd degree, with --method spline (default 5, the quintic).
    #[arg(long)]
    spline_degree: Option<usize>,
    /// The markers' measurement noise, m (in the tracks' unit scaled to metres): the RTS
    /// smoother's instead of its maximum-likelihood estimate, the spline's known noise instead
    /// of GCV.
    #[arg(long)]
    noise_m: Option<f64>,
    /// RTS: the white-snap density, m/s^3.5 [default: its maximum-likelihood estimate].
    #[arg(long)]
    snap_density: Option<f64>,
    /// RTS: the fundamental frequency of the periodic part, Hz [default: found from the data].
    #[arg(long)]
    frequency_hz: Option<f64>,
    /// RTS: the most harmonics of the periodic part (0: none) [default: chosen from the data].
    #[arg(long)]
    harmonics: Option<usize>,
    /// Butterworth with the residual analysis: the noise line's band, "LO,HI" in Hz.
    #[arg(long, value_parser = parse_band)]
    noise_band_hz: Option<[f64; 2]>,
    /// Pipeline file whose [smooth] table sets any of the settings (the command line wins).
    #[arg(long)]
    pipeline: Option<PathBuf>,
    /// Also fit the markers' velocities and accelerations as one rigid body (the lever):
    /// writes <stem>.rigid (reference point, omega, epsilon) and <stem>.rigid_residual
    /// (the elastic part) beside the markers table.
    #[arg(long)]
    rigid_field: bool,
    /// Mechanism file giving the markers' places on their body and its reference point (B on
    /// the lever), for --rigid-field; without it the layout is learnt from the data and the
    /// reference is the markers' centroid.
    #[arg(long)]
    mechanism: Option<PathBuf>,
}

/// `flexbench smooth`: what `Command::Smooth` describes.
impl SmoothArgs {
    /// The pipeline file's `[smooth]` table these flags write (each key left out unset).
    pub(crate) fn settings(&self) -> flexbench_pipeline::smooth::SmoothSettings {
        flexbench_pipeline::smooth::SmoothSettings {
            method: self.method,
            unit: self.unit,
            window: self.window,
            order: self.order,
            noise_m: self.noise_m,
            snap_density: self.snap_density,
            frequency_hz: self.frequency_hz,
            harmonics: self.harmonics,
            filter_order: self.filter_order,
            cutoff_hz: self.cutoff_hz,
            cutoff_by: self.cutoff_by,
            noise_band_hz: self.noise_band_hz,
            spline_degree: self.spline_degree,
            rigid_field: self.rigid_field.then_some(true),
        }
    }
}

pub(crate) fn smooth_command(args: SmoothArgs) -> Result<()> {
    use flexbench_pipeline::job::{Job, SmoothInputs, SmoothJob};
    use flexbench_pipeline::smooth::SmoothSettings;
    let cli_settings = args.settings();
    let SmoothArgs {
        tracks,
        out,
        pipeline,
        mechanism,
        ..
    } = args;
    let file = match &pipeline {
        Some(p) => SmoothSettings::from_pipeline_file(p)
            .with_context(|| format!("reading the pipeline file {}", p.display()))?,
        None => SmoothSettings::default(),
    };
    let settings = file.overridden_by(&cli_settings);
    let mech = load_optional(mechanism.as_deref())?;
    let inputs = SmoothInputs {
        tracks: &tracks,
        mechanism: mech.as_ref(),
    };
    let made = SmoothJob::run(&settings, &inputs, &out, &mut |_| {})
        .with_context(|| format!("smoothing {}", tracks.display()))?;
    print_written(&made.files);
    Ok(())
}
