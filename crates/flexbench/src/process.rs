//! `flexbench process`: a tracks table into the mechanism's kinematics and liaison forces
//! ([`flexbench_pipeline::process`]). Its options are the pipeline file's `[process]` keys by
//! the same names: they fill a [`ProcessSection`] over its defaults, and the section's own
//! check and conversion make the configuration, as for `run` and the Python package.

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_contracts::names::Switch;
use flexbench_mechanism::file::load;
use flexbench_pipeline::job::{Job, ProcessInputs, ProcessJob};
use flexbench_pipeline::pipeline_file::ProcessSection;
use flexbench_pipeline::process::KinematicsMethod;

use crate::bar;

/// Arguments of `flexbench process`: the inputs, then the `[process]` keys (each left out
/// takes the pipeline file's default, `ProcessSection::default()`).
#[derive(clap::Args, Debug)]
pub struct ProcessArgs {
    /// Tracks table (CSV or Parquet, contract format).
    #[arg(long)]
    pub(crate) tracks: PathBuf,
    /// Mechanism file (TOML).
    #[arg(long)]
    pub(crate) mechanism: PathBuf,
    /// Output directory.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// The track stage's flags table (flags.csv beside tracks.csv): its samples are left out of
    /// the fit as gaps.
    #[arg(long)]
    pub(crate) flags: Option<PathBuf>,
    /// The calibration the tracks were made with (calibration.yaml): its bench frame's
    /// covariance (the clicks', the board's corners', the intrinsics') is carried to the forces'
    /// bands, by finite differences through the estimate; without it the frame is taken as known.
    #[arg(long)]
    pub(crate) calibration: Option<PathBuf>,
    /// How the motion is estimated: smoother (the Kalman smoother on the driving coordinates,
    /// its noise and densities from the data; the default), savgol, butterworth or spline (each
    /// marker filtered and differentiated, through the loop's analysis).
    #[arg(long, conflicts_with_all = ["smoother", "savgol", "butterworth", "spline"])]
    pub(crate) method: Option<KinematicsMethod>,
    /// --method smoother.
    #[arg(long, conflicts_with_all = ["savgol", "butterworth", "spline"])]
    pub(crate) smoother: bool,
    /// --method savgol: Savitzky-Golay derivatives of each marker (--window, --order, --edges).
    #[arg(long, conflicts_with_all = ["butterworth", "spline"])]
    pub(crate) savgol: bool,
    /// --method butterworth: each marker filtered by the zero-lag Butterworth filter and
    /// differentiated (--filter-order, --cutoff-hz, --cutoff-by, --noise-band-hz): the labs'
    /// pipeline.
    #[arg(long, conflicts_with = "spline")]
    pub(crate) butterworth: bool,
    /// --method spline: each marker smoothed by Woltring's GCV spline (--spline-degree,
    /// --noise-m) and differentiated.
    #[arg(long)]
    pub(crate) spline: bool,
    /// Savitzky-Golay (the savgol method's filter, and the markers' derivatives the smoother's
    /// first fit starts from): the window, samples (odd) [default: about 21 ms of samples].
    #[arg(long)]
    pub(crate) window: Option<usize>,
    /// Savitzky-Golay: the polynomial order.
    #[arg(long, default_value_t = ProcessSection::default().order)]
    pub(crate) order: usize,
    /// Savitzky-Golay: the edges, interp, mirror, nearest, constant (zero) or wrap.
    #[arg(long, default_value_t = ProcessSection::default().edges)]
    pub(crate) edges: flexbench_signal::EdgeMode,
    /// Butterworth: order of each of the two passes [default: 2, the fourth-order zero-lag
    /// filter].
    #[arg(long)]
    pub(crate) filter_order: Option<usize>,
    /// Butterworth: the cutoff, Hz (-3 dB after both passes) [default: chosen per coordinate
    /// by --cutoff-by].
    #[arg(long)]
    pub(crate) cutoff_hz: Option<f64>,
    /// Butterworth: how the cutoff is chosen, residual (Winter's residual analysis) or
    /// durbin-watson [default: residual].
    #[arg(long)]
    pub(crate) cutoff_by: Option<flexbench_pipeline::smooth::CutoffCriterion>,
    /// Butterworth with the residual analysis: the noise line's band, "LO,HI" in Hz.
    #[arg(long, value_parser = crate::parse_band)]
    pub(crate) noise_band_hz: Option<[f64; 2]>,
    /// Spline: its odd degree [default: 5, the quintic].
    #[arg(long)]
    pub(crate) spline_degree: Option<usize>,
    /// Spline: the markers' noise, m, for its known-noise choice [default: GCV].
    #[arg(long)]
    pub(crate) noise_m: Option<f64>,
    /// The smoother: refit the drivers other than the crank angle as Fourier series of the
    /// crank angle over every turn (steady periodic motion): auto (where the mechanism has a
    /// motor-driven crank that turns twice or more), on (alone: --periodic) or off.
    #[arg(long, value_name = "auto|on|off", default_value_t = ProcessSection::default().periodic, default_missing_value = "on", num_args = 0..=1)]
    pub(crate) periodic: Switch,
    /// The smoother: refine the bench's horizontal from the motion (maximum likelihood over a
    /// rotation about the origin, within 2 mrad, on the recording's first 10 s; the rocker's
    /// passages through C'D vertical make the forces sensitive to a tenth of a milliradian of
    /// it): auto (where the mechanism holds to the ground at two points or along a slide), on
    /// (alone: --refine-horizontal) or off.
    #[arg(long, value_name = "auto|on|off", default_value_t = ProcessSection::default().refine_horizontal, default_missing_value = "on", num_args = 0..=1)]
    pub(crate) refine_horizontal: Switch,
    /// The smoother: take the tracker's peak locking (its bias tied to the pixel grid,
    /// measured from the first fit's residuals) out of the markers and fit the motion again:
    /// auto (where it is significant), on (alone: --peak-locking) or off (measured, reported in
    /// summary.json, warned of where significant).
    #[arg(long, value_name = "auto|on|off", default_value_t = ProcessSection::default().peak_locking, default_missing_value = "on", num_args = 0..=1)]
    pub(crate) peak_locking: Switch,
    /// Condition number above which a sample is reported as a toggle position.
    #[arg(long, default_value_t = ProcessSection::default().max_condition)]
    pub(crate) max_condition: f64,
    /// Keep the flagged samples in the fit: those of --flags, and those that fail the fitted
    /// mechanism's residual test (fit_flags.csv; by default left out and the motion refitted).
    #[arg(long)]
    pub(crate) keep_flagged: bool,
    /// False-alarm level of the fitted mechanism's residual test of each tracked sample.
    #[arg(long, default_value_t = ProcessSection::default().false_alarm)]
    pub(crate) false_alarm: f64,
    /// Measure every marker against the markers the mechanism holds at ground pins (an axle's
    /// hub): each frame's drift of those from their pins removed, for a camera that moved.
    #[arg(long)]
    pub(crate) stabilise: bool,
    /// The smoother: replicates of the recording (the mechanism simulated at its crank speed,
    /// the fit's residuals as the markers' errors) processed to calibrate the tracks' share of
    /// the forces' bands (0: the smoother's bands, conservative).
    #[arg(long, default_value_t = ProcessSection::default().calibrate_bands)]
    pub(crate) calibrate_bands: usize,
}

impl ProcessArgs {
    /// The method the flags ask: --method, or one of its four shorthands.
    fn method(&self) -> Option<KinematicsMethod> {
        let shorthands = [
            (self.smoother, KinematicsMethod::Smoother),
            (self.savgol, KinematicsMethod::Savgol),
            (self.butterworth, KinematicsMethod::Butterworth),
            (self.spline, KinematicsMethod::Spline),
        ];
        self.method
            .or_else(|| shorthands.iter().find(|(on, _)| *on).map(|(_, m)| *m))
    }

    /// The pipeline file's `[process]` section these flags write: each flag given replaces the
    /// section's default, as the same key in the file would.
    pub fn section(&self) -> ProcessSection {
        let d = ProcessSection::default();
        ProcessSection {
            method: self.method().unwrap_or(d.method),
            periodic: self.periodic,
            refine_horizontal: self.refine_horizontal,
            peak_locking: self.peak_locking,
            window: self.window.or(d.window),
            order: self.order,
            edges: self.edges,
            filter_order: self.filter_order.or(d.filter_order),
            cutoff_hz: self.cutoff_hz.or(d.cutoff_hz),
            cutoff_by: self.cutoff_by.or(d.cutoff_by),
            noise_band_hz: self.noise_band_hz.or(d.noise_band_hz),
            spline_degree: self.spline_degree.or(d.spline_degree),
            noise_m: self.noise_m.or(d.noise_m),
            max_condition: self.max_condition,
            keep_flagged: self.keep_flagged || d.keep_flagged,
            false_alarm: self.false_alarm,
            stabilise: self.stabilise || d.stabilise,
            calibrate_bands: self.calibrate_bands,
        }
    }
}

/// `flexbench process`: what `Command::Process` describes.
pub fn process_command(args: ProcessArgs) -> Result<()> {
    let section = args.section();
    let file = load(&args.mechanism)
        .with_context(|| format!("loading the mechanism {}", args.mechanism.display()))?;
    let inputs = ProcessInputs {
        tracks: &args.tracks,
        flags: args.flags.as_deref(),
        calibration: args.calibration.as_deref(),
        mechanism: &file.mechanism,
    };
    let pb = bar();
    let made = ProcessJob::run(&section, &inputs, &args.out, &mut crate::on_bar(&pb))
        .with_context(|| format!("processing {}", args.tracks.display()))?;
    pb.finish_and_clear();
    print_summary(&made.record);
    println!(
        "wrote {} files into {}",
        made.files.len(),
        args.out.display()
    );
    Ok(())
}

/// The stage's findings on the terminal: the fit, the residual test, the rolling shutter's
/// correction, the time per step.
fn print_summary(s: &flexbench_pipeline::ProcessSummary) {
    println!(
        "processed {} samples: fit RMS residual {:.3} mm (free rigid fit {:.3} mm), {} toggle sample(s), max condition {:.1}",
        s.samples, s.fit.rms * 1e3, s.fit.rms_free * 1e3, s.toggles.len(), s.max_condition
    );
    let test = &s.residual_test;
    if test.flagged > 0 {
        let fate = match test.left_out {
            true => "left out and the motion refitted",
            false => "kept in the fit",
        };
        println!(
            "{} sample(s) failed the fitted mechanism's residual test (fit_flags.csv): {fate}",
            test.flagged
        );
    }
    if let Some(c) = &s.shutter {
        println!(
            "rolling shutter: {} samples observed at their own times (carried again along the fitted motion, {} left as tracked): moved {:.4} mm RMS ({:.4} mm at most) from the path's carry; the motion fitted again",
            c.samples, c.kept, c.rms_change_mm, c.max_change_mm
        );
    }
    for (stage, secs) in &s.timing {
        println!("  {stage:<18} {secs:.3} s");
    }
}
