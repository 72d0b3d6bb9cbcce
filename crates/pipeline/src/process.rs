//! `flexbench process`: a tracks table -> the mechanism's kinematics fitted to the markers (loop
//! closed exactly; by default the Kalman smoother on the driving coordinates, optionally refitted
//! in the crank angle, or from each marker's Savitzky-Golay derivatives with `--savgol`) ->
//! Newton-Euler inverse dynamics per sample -> `markers` (the fitted motion's, with bands from
//! the smoother; each marker's Savitzky-Golay derivatives with `--savgol`), `bodies`, `forces`,
//! `fit_residuals` tables, `fit_flags` (the samples that failed the fitted mechanism's residual
//! test, left out and refitted: `flexbench_kinematics::outliers`), `summary.json` and the forces
//! figure.

use std::path::{Path, PathBuf};
use std::time::Instant;

use std::collections::BTreeSet;

use flexbench_contracts::flags::{Flag, FlagReason, Flags};
use flexbench_contracts::names::Switch;
use flexbench_contracts::{Column, MarkerSeries, Table, MARKER_COLUMNS};
use flexbench_kinematics::anchored::{held_markers, stabilise, Stabilised};
use flexbench_kinematics::late::{carry_along, CarriedAgain};
use flexbench_kinematics::periodic::PeriodicReport;
use flexbench_kinematics::rate::RateCheck;
use flexbench_kinematics::smoother::SmootherReport;
use flexbench_kinematics::{estimate, FitReport, ForceSeries, MarkerState, Motion};
use flexbench_mechanism::inverse::DEFAULT_MAX_CONDITION;
use flexbench_mechanism::Mechanism;
use flexbench_signal::{Butterworth, Derivatives, Differentiator, GcvSpline, Provenance, SavGol};
use flexbench_tables::{read_tracks, write_table};
use nalgebra::Vector2;
use serde::{Deserialize, Serialize};

use crate::{ensure_dir, forces_figure, PipelineError};
use crate::{StageEvent, StageRecord};

use crate::process_bands::{band_shares, bands_in_words, combined_sigmas, scale_tracks_share};
pub use crate::process_bands::{frame_covariance, BandShare};

/// How the mechanism's motion is estimated from the markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KinematicsMethod {
    /// The Kalman smoother on the driving coordinates (the default).
    Smoother,
    /// Each marker's Savitzky-Golay derivatives through the loop's analysis.
    Savgol,
    /// Each marker filtered by the zero-lag Butterworth filter, differentiated, through the
    /// loop's analysis (the labs' pipeline).
    Butterworth,
    /// Each marker smoothed by Woltring's GCV spline, differentiated, through the loop's
    /// analysis.
    Spline,
}

impl std::str::FromStr for KinematicsMethod {
    type Err = flexbench_contracts::names::UnknownName;

    fn from_str(name: &str) -> Result<KinematicsMethod, Self::Err> {
        flexbench_contracts::names::by_name(
            name,
            "a kinematics method",
            &[
                ("smoother", KinematicsMethod::Smoother),
                ("savgol", KinematicsMethod::Savgol),
                ("butterworth", KinematicsMethod::Butterworth),
                ("spline", KinematicsMethod::Spline),
            ],
        )
    }
}

impl std::fmt::Display for KinematicsMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KinematicsMethod::Smoother => "smoother",
            KinematicsMethod::Savgol => "savgol",
            KinematicsMethod::Butterworth => "butterworth",
            KinematicsMethod::Spline => "spline",
        })
    }
}

/// The process stage's record (`summary.json`): what was read, how the motion was estimated,
/// what the fit and the inverse dynamics found. Written and read back by this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// Always "process".
    pub job: String,
    /// The tracks table read.
    pub tracks: String,
    /// The mechanism's name.
    pub mechanism: String,
    /// Samples in the recording.
    pub samples: usize,
    /// The markers' differentiation (Savitzky-Golay, Butterworth or the spline) that feeds the fit.
    pub differentiation: Differentiation,
    /// The kinematic fit's report (of the smoother when it ran).
    pub fit: FitReport,
    /// What the Kalman smoother chose, when it ran.
    pub smoother: Option<SmootherReport>,
    /// What the periodic refit found, when it ran.
    pub periodic: Option<PeriodicReport>,
    /// Where the forces' bands come from, in words ("none" without).
    pub bands: String,
    /// Each force's band shares, when the mechanism file's tolerances add to the tracks'
    /// noise (the bands are then the two combined, taken independent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub band_shares: Vec<BandShare>,
    /// The bootstrap that calibrated the tracks' share of the bands, when asked
    /// (`calibrate_bands`): each force's scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracks_scale: Option<crate::band_calibration::TracksScale>,
    /// The bench's horizontal refined from the motion, rad, when refined.
    pub horizontal_correction_rad: Option<f64>,
    /// Samples the markers did not determine.
    pub unfitted_samples: usize,
    /// The flags table read with the tracks, if any.
    #[serde(default)]
    pub flags: Option<String>,
    /// Tracked samples left out of the fit because they were flagged.
    #[serde(default)]
    pub flagged_left_out: usize,
    /// The fitted mechanism's residual test: its level, the samples that failed it, the fits run.
    #[serde(default)]
    pub residual_test: ResidualTestRecord,
    /// The inverse dynamics' conditioning and toggles.
    pub inverse_dynamics: InverseDynamicsRecord,
    /// Whether the recording's rate suits the motion (`flexbench_kinematics::rate`).
    #[serde(default)]
    pub rate: RateCheck,
    /// Why the recording's clock is doubted (the crank against the motor's reference speed).
    #[serde(default)]
    pub clock: Option<String>,
    /// What measuring the markers against those held at ground pins removed, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stabilised: Option<flexbench_kinematics::anchored::Stabilised>,
    /// A rolling shutter's late samples carried again along the fitted motion, and the motion
    /// fitted again (`flexbench_kinematics::late`), when the tracks have such samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutter: Option<CarriedAgain>,
    /// The tracker's peak locking the first fit's residuals show, and whether it was taken out
    /// (tracks with pixel coordinates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_locking: Option<crate::process_peak_locking::PeakLockingRecord>,
}

impl ProcessRecord {
    /// Every warning of the stage: the fit's, the rate's, the clock's.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self.fit.warnings.clone();
        w.extend(self.rate.warnings.iter().cloned());
        w.extend(self.clock.iter().cloned());
        w.extend(self.peak_locking.as_ref().and_then(|p| p.warning()));
        w
    }
}

/// The fitted mechanism's residual test as `process` ran it (`fit_flags.csv`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResidualTestRecord {
    /// False-alarm level of the test.
    pub false_alarm: f64,
    /// Samples that failed it (fit_flags.csv).
    pub flagged: usize,
    /// Whether they were left out of the final fit (false with keep_flagged).
    pub left_out: bool,
    /// Kinematic fits run (1 when no sample failed; one more per round that found some).
    pub fits: usize,
    /// Why the test did not judge, when it did not (the Savitzky-Golay method; too many failed).
    #[serde(default)]
    pub skipped: Option<String>,
}

impl ResidualTestRecord {
    /// The test as `fit_testing_residuals` ran it with `cfg`.
    fn of(cfg: &ProcessConfig, fitted: &Fitted) -> ResidualTestRecord {
        ResidualTestRecord {
            false_alarm: cfg.false_alarm,
            flagged: fitted.flags.rows.len(),
            left_out: !cfg.keep_flagged && fitted.skipped.is_none(),
            fits: fitted.fits,
            skipped: fitted.skipped.clone(),
        }
    }
}

/// The differentiation of the markers, as `process` ran it: Savitzky-Golay (its window, order
/// and edges), the Butterworth filter (its cutoff per coordinate) or the smoothing spline (its
/// smoothing per coordinate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Differentiation {
    /// The method in words.
    pub method: String,
    /// Savitzky-Golay window, samples.
    pub window: Option<usize>,
    /// Savitzky-Golay polynomial order, the Butterworth filter's order per pass, or the
    /// smoothing spline's degree.
    pub order: usize,
    /// Savitzky-Golay edge mode (scipy's names).
    pub edges: Option<String>,
    /// What the Butterworth filter or the smoothing spline chose per coordinate (`M1.x`, ...).
    #[serde(default)]
    pub choices: Vec<CoordinateChoice>,
}

/// What the Butterworth filter or the smoothing spline chose for one marker coordinate (None
/// where it does not apply, or no run was long enough).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CoordinateChoice {
    /// The coordinate, `<marker>.<axis>`.
    pub coordinate: String,
    /// Butterworth: the zero-lag cutoff, Hz.
    pub cutoff_hz: Option<f64>,
    /// The noise estimate, m: the residual analysis's, or the spline's RSS / (n - tr A).
    pub noise_m: Option<f64>,
    /// Butterworth: the residuals' Durbin-Watson statistic at the cutoff.
    pub durbin_watson: Option<f64>,
    /// Spline: the smoothing parameter p, m^2 s^(2m - 1).
    #[serde(default)]
    pub spline_p: Option<f64>,
    /// Spline: its effective degrees of freedom (tr A).
    #[serde(default)]
    pub spline_dof: Option<f64>,
    /// Butterworth on an uneven clock: the largest departure of a sample's time from the even
    /// grid it was filtered on, as a share of the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resampled_departure: Option<f64>,
    /// Butterworth on an uneven clock: the interpolation's error on the filtered positions
    /// (the grid to the samples' times), RMS, m.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resampled_interpolation_m: Option<f64>,
}

impl CoordinateChoice {
    /// What the Butterworth filter chose for `coordinate` (the residual analysis's noise as
    /// `noise_m`).
    pub(crate) fn butterworth(
        coordinate: String,
        c: Option<flexbench_signal::butterworth::ButterworthChoice>,
    ) -> CoordinateChoice {
        CoordinateChoice {
            coordinate,
            cutoff_hz: c.map(|c| c.cutoff_hz),
            noise_m: c.and_then(|c| c.noise_rms),
            durbin_watson: c.map(|c| c.durbin_watson),
            resampled_departure: c.and_then(|c| c.resampled.map(|r| r.largest_departure)),
            resampled_interpolation_m: c.and_then(|c| c.resampled.map(|r| r.interpolation_rms)),
            ..Default::default()
        }
    }

    /// What the smoothing spline chose for `coordinate` (its noise estimate as `noise_m`).
    pub(crate) fn spline(
        coordinate: String,
        c: Option<flexbench_signal::spline::SplineChoice>,
    ) -> CoordinateChoice {
        CoordinateChoice {
            coordinate,
            noise_m: c.map(|c| c.noise),
            spline_p: c.map(|c| c.p),
            spline_dof: c.map(|c| c.dof),
            ..Default::default()
        }
    }
}

/// The inverse dynamics' conditioning over the recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InverseDynamicsRecord {
    /// Condition number (1-norm, scaled) from which a sample is a toggle.
    pub max_condition_allowed: f64,
    /// Largest condition number of the solved systems.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub max_condition: f64,
    /// Samples reported as toggles.
    pub toggle_samples: usize,
    /// Times of the first 100 toggle samples, s.
    pub toggle_times_s: Vec<f64>,
}

impl crate::StageRecord for ProcessRecord {
    const STAGE: &'static str = "process";
}

/// Parameters of `process`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessConfig {
    /// Savitzky-Golay window, samples (odd); None: about 21 ms of samples (at least order + 2),
    /// which keeps the forces from noise-free positions at 1 kHz within 0.3 % RMS of their peak.
    pub window: Option<usize>,
    /// Savitzky-Golay polynomial order.
    pub order: usize,
    /// Savitzky-Golay edge mode (scipy's modes).
    pub edges: flexbench_signal::EdgeMode,
    /// Condition number above which an inverse-dynamics sample is reported as a toggle.
    pub max_condition: f64,
    /// Kinematics by the Kalman smoother on the driving coordinates (the default) rather than
    /// from the markers' Savitzky-Golay derivatives through the loop's analysis.
    pub smoother: bool,
    /// The markers filtered and differentiated by this zero-lag Butterworth filter instead of
    /// Savitzky-Golay, through the loop's analysis (with `smoother` false).
    pub butterworth: Option<Butterworth>,
    /// The markers smoothed and differentiated by this smoothing spline instead of
    /// Savitzky-Golay, through the loop's analysis (with `smoother` false and no Butterworth).
    pub spline: Option<GcvSpline>,
    /// With the smoother: the bench's horizontal refined from the motion, by maximum
    /// likelihood of the smoother over a rotation of the tracks about the bench origin (auto:
    /// where the markers see the frame turn, `flexbench_kinematics::estimate::horizontal_observable`).
    pub refine_horizontal: Switch,
    /// After the smoother, the drivers other than the first refitted as Fourier series of the
    /// first (the crank angle) over every turn (steady periodic motion; auto: where the
    /// mechanism has a motor-driven crank that turns twice or more).
    pub periodic: Switch,
    /// The samples of the flags table, and those that fail the fitted mechanism's residual test,
    /// kept in the fit (by default they are left out, as gaps, and the motion refitted).
    pub keep_flagged: bool,
    /// False-alarm level of the fitted mechanism's residual test.
    pub false_alarm: f64,
    /// Every marker measured against the markers held at ground pins, for a camera that moved
    /// (`flexbench_kinematics::anchored::stabilise`).
    pub stabilise: bool,
    /// The bench frame's covariance from the calibration the tracks were made with
    /// ([`frame_covariance`]), carried to the forces' bands (`flexbench_kinematics::frame_share`);
    /// None: the frame taken as known.
    pub frame: Option<flexbench_contracts::frame::FrameCovariance>,
    /// With the smoother: replicates of the recording simulated and processed to calibrate the
    /// tracks' share of the forces' bands (`crate::band_calibration`); 0: not calibrated (the
    /// smoother's, conservative where the periodic fit pools the turns).
    pub calibrate_bands: usize,
    /// The tracker's peak locking (its bias tied to the pixel grid) measured from the first
    /// fit's residuals and reported; taken out of the markers and the motion fitted again: auto
    /// (the default: where it is significant), on (whenever measured) or off (reported, and a
    /// warning where it is significant).
    pub peak_locking: Switch,
}

/// The tracks' share of the forces' bands calibrated by `replicates` replicates of the
/// recording (`crate::band_calibration`), each processed by this stage with the recording's
/// settings; refused without the smoother's bands or a motor-driven crank.
fn tracks_scale(
    mech: &Mechanism,
    t: &[f64],
    motion: &Motion,
    cfg: &ProcessConfig,
    replicates: usize,
    events: &mut dyn FnMut(StageEvent),
) -> Result<crate::band_calibration::TracksScale, PipelineError> {
    let (Some(crank), true) = (mech.crank(), motion.covariances.is_some()) else {
        return Err(PipelineError::Input(
            "calibrate_bands: the bands' calibration needs the smoother's bands (method \"smoother\") and a mechanism with a motor-driven crank to simulate: leave calibrate_bands at 0".into(),
        ));
    };
    // The recording's mean crank speed: the crank's angle over its first and last fitted
    // samples.
    let fitted: Vec<(f64, f64)> = motion
        .samples
        .iter()
        .zip(t)
        .filter_map(|(f, &tk)| f.state.as_ref().map(|s| (tk, s.0[3 * crank.body + 2])))
        .collect();
    let (Some(first), Some(last)) = (fitted.first(), fitted.last()) else {
        return Err(PipelineError::Input(
            "calibrate_bands: no sample of the recording was fitted".into(),
        ));
    };
    let names: Vec<String> = mech.markers.iter().map(|m| m.name.clone()).collect();
    let residuals = motion.samples.iter().map(|f| {
        f.residual
            .iter()
            .map(|r| r.map(|v| [v.x, v.y]))
            .collect::<Vec<_>>()
    });
    let sigma = motion.smoother.as_ref().map_or(1e-4, |s| s.sigma_m);
    let rec = crate::band_calibration::Copied {
        t,
        speed: (last.1 - first.1) / (last.0 - first.0),
        noise: crate::bootstrap_noise::MarkerNoise::of_samples(&names, residuals, sigma),
        max_condition: cfg.max_condition,
    };
    let replicate_cfg = ProcessConfig {
        frame: None,
        calibrate_bands: 0,
        ..*cfg
    };
    // One instance of the stage for the replicates (its events a trait object: the stage
    // calling itself through a closure of its own type would not end).
    let run = |tracks: &Path, out: &Path| {
        let quiet: &mut dyn FnMut(StageEvent) = &mut |_| {};
        process(tracks, None, mech, &replicate_cfg, out, quiet).map(|_| ())
    };
    crate::band_calibration::tracks_scale(mech, &rec, (replicates, &run), events)
}

impl Default for ProcessConfig {
    fn default() -> Self {
        ProcessConfig {
            window: None,
            order: 5,
            edges: flexbench_signal::EdgeMode::Interp,
            max_condition: DEFAULT_MAX_CONDITION,
            smoother: true,
            butterworth: None,
            spline: None,
            periodic: Switch::Auto,
            refine_horizontal: Switch::Auto,
            keep_flagged: false,
            false_alarm: flexbench_contracts::flags::FALSE_ALARM,
            stabilise: false,
            frame: None,
            calibrate_bands: 0,
            peak_locking: Switch::Auto,
        }
    }
}

/// What `process` found and wrote.
#[derive(Debug, Clone)]
pub struct ProcessSummary {
    /// Samples in the recording.
    pub samples: usize,
    /// The kinematic fit's report (residuals, disagreements).
    pub fit: FitReport,
    /// Times of the samples reported as toggles (no forces).
    pub toggles: Vec<f64>,
    /// Largest condition number of the solved inverse-dynamics systems.
    pub max_condition: f64,
    /// The fitted mechanism's residual test: the samples that failed it and their fate.
    pub residual_test: ResidualTestRecord,
    /// What carrying a rolling shutter's late samples along the fitted motion did, when the
    /// tracks have such samples.
    pub shutter: Option<CarriedAgain>,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Wall time per stage, s.
    pub timing: Vec<(String, f64)>,
}

impl ProcessConfig {
    /// The kinematics' configuration (the smoother, the horizontal's refinement, the periodic
    /// refit, the threads).
    pub fn kinematics(&self) -> flexbench_kinematics::Config {
        flexbench_kinematics::Config {
            smoother: self.smoother,
            refine_horizontal: self.refine_horizontal,
            periodic: self.periodic,
            threads: crate::threads(),
            horizontal_window_s: flexbench_kinematics::estimate::HORIZONTAL_WINDOW_S,
            horizontal_found: None,
            keep_model: false,
        }
    }
}

impl Differentiation {
    /// The markers' differentiation `filter` as `cfg` set it, with what it chose.
    fn of(
        filter: &MarkerFilter,
        cfg: &ProcessConfig,
        choices: &[CoordinateChoice],
    ) -> Differentiation {
        match filter {
            MarkerFilter::SavGol(sg, window) => Differentiation {
                method: sg.describe(),
                window: Some(*window),
                order: cfg.order,
                edges: Some(cfg.edges.name().into()),
                choices: Vec::new(),
            },
            MarkerFilter::Butterworth(b) => Differentiation {
                method: b.describe(),
                window: None,
                order: b.order,
                edges: None,
                choices: choices.to_vec(),
            },
            MarkerFilter::Spline(g) => Differentiation {
                method: g.describe(),
                window: None,
                order: 2 * g.half_order - 1,
                edges: None,
                choices: choices.to_vec(),
            },
        }
    }
}

/// How `process` smooths and differentiates the markers (and the fit's drivers): Savitzky-Golay
/// with its window, the zero-lag Butterworth filter, or the smoothing spline.
enum MarkerFilter {
    SavGol(SavGol, usize),
    Butterworth(Butterworth),
    Spline(GcvSpline),
}

impl MarkerFilter {
    /// The filter `cfg` asks for on the times `t`; an error for the Butterworth filter or the
    /// spline with the smoother, or both.
    fn of(cfg: &ProcessConfig, t: &[f64]) -> Result<MarkerFilter, PipelineError> {
        let refuse = |why: &str| Err(PipelineError::Input(why.into()));
        match (cfg.butterworth, cfg.spline) {
            (Some(_), Some(_)) => refuse("the Butterworth filter and the smoothing spline both asked: give one ([process] method)"),
            (Some(_), None) | (None, Some(_)) if cfg.smoother => refuse(
                "the Butterworth filter and the smoothing spline feed the loop's analysis, not the smoother: turn the smoother off ([process] method = \"butterworth\" or \"spline\" does)",
            ),
            (Some(b), None) => Ok(MarkerFilter::Butterworth(b)),
            (None, Some(g)) => Ok(MarkerFilter::Spline(g)),
            (None, None) => {
                let window = cfg.window.unwrap_or_else(|| default_window(t, cfg.order));
                let sg = SavGol::new(window, cfg.order)?.with_mode(cfg.edges);
                Ok(MarkerFilter::SavGol(sg, window))
            }
        }
    }

    /// The filter as the fit's differentiator.
    fn as_diff(&self) -> &(dyn Differentiator + Sync) {
        match self {
            MarkerFilter::SavGol(sg, _) => sg,
            MarkerFilter::Butterworth(b) => b,
            MarkerFilter::Spline(g) => g,
        }
    }

    /// Each marker's x and y differentiated, and the Butterworth filter's or the spline's
    /// choice per coordinate (none for Savitzky-Golay).
    fn differentiate(&self, series: &[MarkerSeries]) -> Result<Differentiated, PipelineError> {
        let mut diffs = Vec::with_capacity(series.len());
        let mut choices = Vec::new();
        for s in series {
            let mut one = |axis: &str, v: &[f64]| -> Result<Derivatives, PipelineError> {
                let name = format!("{}.{axis}", s.name);
                Ok(match self {
                    MarkerFilter::SavGol(sg, _) => sg.differentiate(&name, &s.t, v, &s.present)?,
                    MarkerFilter::Butterworth(b) => {
                        let (d, c) = b.filter(&name, &s.t, v, &s.present)?;
                        choices.push(CoordinateChoice::butterworth(name, c));
                        d
                    }
                    MarkerFilter::Spline(g) => {
                        let (d, c) = g.filter(&name, &s.t, v, &s.present)?;
                        choices.push(CoordinateChoice::spline(name, c));
                        d
                    }
                })
            };
            let dx = one("x", &s.x)?;
            let dy = one("y", &s.y)?;
            diffs.push((dx, dy));
        }
        Ok((diffs, choices))
    }
}

/// The markers' derivatives (x, y per marker) and the Butterworth filter's or the spline's
/// choices.
type Differentiated = (Vec<(Derivatives, Derivatives)>, Vec<CoordinateChoice>);

/// The tracks at `tracks_path` with the samples of the flags table at `flags` made gaps (unless
/// `keep`), and how many were.
fn read_trusted(
    tracks_path: &Path,
    flags: Option<&Path>,
    keep: bool,
) -> Result<(flexbench_contracts::Tracks, usize), PipelineError> {
    let tracks = read_tracks(tracks_path)?;
    match (flags, keep) {
        (Some(path), false) => Ok(tracks.without(&flexbench_tables::read_flags(path)?.samples())),
        _ => Ok((tracks, 0)),
    }
}

/// Run `process` on the tracks at `tracks_path` for the mechanism `mech`, writing into `out`;
/// the samples of the flags table at `flags` (the track stage's) left out of the fit as gaps
/// unless `cfg.keep_flagged`.
pub fn process(
    tracks_path: &Path,
    flags: Option<&Path>,
    mech: &Mechanism,
    cfg: &ProcessConfig,
    out: &Path,
    mut events: impl FnMut(StageEvent),
) -> Result<ProcessSummary, PipelineError> {
    let mut timing = Vec::new();
    let mut clock = Instant::now();
    let mut lap = |name: &str, timing: &mut Vec<(String, f64)>| {
        timing.push((name.to_string(), clock.elapsed().as_secs_f64()));
        clock = Instant::now();
    };
    check_false_alarm(cfg.false_alarm)?;
    check_band_calibration(mech, cfg)?;
    events(StageEvent::Progress("read", 0.0));
    let (tracks, left_out) = read_trusted(tracks_path, flags, cfg.keep_flagged)?;
    let mut series = tracks.series()?;
    let pixels = crate::process_peak_locking::pixels(&tracks);
    drop(tracks);
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    check_markers(mech, &names)?;
    let t = series[0].t.clone();
    let filter = MarkerFilter::of(cfg, &t)?;
    // Markers on a ground pin that did not stay: a camera that moved (named first), unless
    // the markers are measured against them.
    let (moved, stabilised) = held_check(mech, &mut series, cfg)?;
    let late = series.iter().any(|s| s.late.iter().any(Option::is_some));
    let again = late.then(|| series.clone());
    // The series the last fit was made from, for the peak-locking pass.
    let measure = !pixels.is_empty() && cfg.smoother;
    let mut last = (measure && !late).then(|| series.clone());
    lap("read", &mut timing);

    events(StageEvent::Progress("kinematics", 0.0));
    let mut fitted = fit_testing_residuals(mech, series, &filter, cfg, None)?;
    // A rolling shutter's samples: carried again to their frame's time along the fitted motion
    // (observed at their own times), and the motion fitted again to them.
    let shutter = match again {
        Some(mut again) => {
            events(StageEvent::Progress(
                "kinematics at the samples' own times",
                0.0,
            ));
            let done = carry_along(mech, &t, &fitted.motion.samples, &mut again);
            last = measure.then(|| again.clone());
            // The samples moved by hundredths of a millimetre: the refit starts where the first
            // fit's smoother started, with its horizontal.
            fitted = fit_testing_residuals(mech, again, &filter, cfg, Some(&fitted.motion))?;
            Some(done)
        }
        None => None,
    };
    let peak_locking = match last {
        Some(last) => Some(peak_locking_pass(
            mech,
            &mut fitted,
            last,
            &pixels,
            &filter,
            cfg,
            &mut events,
        )?),
        None => None,
    };
    let (motion, seen) = (&fitted.motion, &fitted.seen);
    let bodies = bodies_table(mech, &t, motion);
    let residuals = residual_table(mech, &t, &motion.samples);
    lap("kinematics", &mut timing);

    events(StageEvent::Progress("inverse dynamics", 0.0));
    let mut forces = flexbench_kinematics::forces(mech, &t, motion, cfg.max_condition, &mut |f| {
        events(StageEvent::Progress("inverse dynamics", f))
    })?;
    let tracks_scale = match cfg.calibrate_bands {
        0 => None,
        n => {
            let scale = tracks_scale(mech, &t, motion, cfg, n, &mut events)?;
            scale_tracks_share(&mut forces, &scale);
            Some(scale)
        }
    };
    let mut frame_motions = Vec::new();
    if let Some(cov) = &cfg.frame {
        events(StageEvent::Progress(
            "the bench frame's share of the bands",
            0.0,
        ));
        let from = flexbench_kinematics::frame_share::Estimated {
            t: &t,
            differentiated: &seen.differentiated,
            positions: &seen.positions,
            diff: filter.as_diff(),
            cfg: &cfg.kinematics(),
        };
        frame_motions = flexbench_kinematics::frame_share::frame_motions(mech, &from, motion, cov)?;
        forces.frame_sigmas = flexbench_kinematics::frame_share::frame_sigmas(
            mech,
            &t,
            &frame_motions,
            &forces.rows,
            cfg.max_condition,
        )?;
    }
    let markers = match cfg.smoother {
        // The markers' kinematics as the fitted motion gives them (consistent with the bodies
        // and the forces), with their bands when the fit has a covariance.
        true => {
            let states = flexbench_kinematics::estimate::states(motion);
            let sigmas = flexbench_kinematics::estimate::marker_sigmas(mech, motion);
            mech.fitted_markers_table(&t, &states, sigmas.as_deref(), &seen.seen)
        }
        false => markers_table(&names, &t, &fitted.diffs),
    };
    lap("inverse dynamics", &mut timing);

    // All computed: write.
    events(StageEvent::Progress("write", 0.0));
    let tables = [
        (markers, "markers"),
        (bodies, "bodies"),
        (residuals, "fit_residuals"),
    ];
    let mut files = write_outputs(mech, &t, tables, &forces, motion, tracks_path, out)?;
    let fit_flags = fitted.flags.to_named_table("fit_flags");
    files.extend(write_table(&fit_flags, out, "fit_flags")?);
    // The bodies' motion moved by each of the frame's principal directions, for the
    // identification's share of the calibration (`crate::identify_frame`).
    for (k, m) in frame_motions.iter().enumerate() {
        let stem = crate::identify_frame::table_stem(k);
        files.extend(write_table(&bodies_table(mech, &t, m), out, &stem)?);
    }
    crate::identify_frame::remove_stale(out, frame_motions.len())?;
    lap("write", &mut timing);
    let differentiation = Differentiation::of(&filter, cfg, &fitted.choices);
    let mut record = ProcessRecord::new(tracks_path, mech, cfg, differentiation, motion, &forces);
    record.flags = flags.map(|f| f.display().to_string());
    record.rate = flexbench_kinematics::rate::check_rate(mech, &t, motion, &forces);
    record.clock = flexbench_kinematics::rate::check_clock(mech, &t, motion);
    record.flagged_left_out = left_out;
    record.residual_test = ResidualTestRecord::of(cfg, &fitted);
    record.fit.warnings.splice(0..0, moved);
    record.stabilised = stabilised;
    record.shutter = shutter.clone();
    record.peak_locking = peak_locking;
    record.bands = bands_in_words(&forces, motion.bands_before_periodic, tracks_scale.as_ref());
    record.tracks_scale = tracks_scale;
    warn(&record, &fitted, cfg, &mut events);
    files.push(record.write(&out.join("summary.json"))?);
    Ok(ProcessSummary {
        samples: t.len(),
        fit: motion.report.clone(),
        toggles: forces.toggles.clone(),
        max_condition: forces.max_condition,
        residual_test: record.residual_test.clone(),
        shutter,
        files,
        timing,
    })
}

/// The tracker's peak locking measured from `fitted`'s residuals and, where `cfg` asks, taken
/// out of its markers `series` (those `fitted` was fitted to) and the motion fitted again from
/// where the first fit's smoother started (`crate::process_peak_locking`).
fn peak_locking_pass(
    mech: &Mechanism,
    fitted: &mut Fitted,
    mut series: Vec<MarkerSeries>,
    pixels: &std::collections::BTreeMap<(String, i64), [f64; 2]>,
    filter: &MarkerFilter,
    cfg: &ProcessConfig,
    events: &mut impl FnMut(StageEvent),
) -> Result<crate::process_peak_locking::PeakLockingRecord, PipelineError> {
    let found = crate::process_peak_locking::measure_and_correct(
        mech,
        &mut series,
        &fitted.motion,
        pixels,
        cfg.peak_locking,
    );
    if found.corrected {
        events(StageEvent::Progress(
            "kinematics without the peak locking",
            0.0,
        ));
        *fitted = fit_testing_residuals(mech, series, filter, cfg, Some(&fitted.motion))?;
    }
    Ok(found)
}

/// The warnings of the markers held at ground pins whose tracks wandered, and, when `cfg`
/// asks for it, every marker of `series` measured against the held ones (what it removed).
fn held_check(
    mech: &Mechanism,
    series: &mut [MarkerSeries],
    cfg: &ProcessConfig,
) -> Result<(Vec<String>, Option<Stabilised>), PipelineError> {
    let moved: Vec<String> = held_markers(mech, series)
        .iter()
        .filter(|h| h.moved())
        .map(|h| h.warning())
        .collect();
    if !cfg.stabilise {
        return Ok((moved, None));
    }
    let done = stabilise(mech, series).map_err(PipelineError::Input)?;
    let note = format!(
        "the markers are measured against {} (held at ground pins): a camera's drift of up to {:.1} mm (RMS {:.1} mm) removed, {} of {} frames interpolated; the held markers' noise is in every marker's",
        done.markers.join(", "),
        done.max_shift_m * 1e3,
        done.rms_shift_m * 1e3,
        done.frames_interpolated,
        done.frames
    );
    Ok((vec![note], Some(done)))
}

/// The motion fitted to the tracks, with what fed it: the markers' differentiation, the
/// observations, the samples that failed the fitted mechanism's residual test, the fits run, and
/// why the test did not judge, when it did not.
struct Fitted {
    diffs: Vec<(Derivatives, Derivatives)>,
    choices: Vec<CoordinateChoice>,
    seen: Observed,
    motion: Motion,
    flags: Flags,
    fits: usize,
    skipped: Option<String>,
}

/// The residual test's false-alarm level `alpha` checked: a probability between 0 and 0.5.
fn check_false_alarm(alpha: f64) -> Result<(), PipelineError> {
    match alpha > 0.0 && alpha < 0.5 {
        true => Ok(()),
        false => Err(PipelineError::Input(format!(
            "the residual test's false-alarm level {alpha} is not a probability between 0 and 0.5: give one such as 1e-6 (the default)"
        ))),
    }
}

/// The bands' calibration asked (`calibrate_bands`) checked before any work: 0, or 2
/// replicates or more with the smoother and a motor-driven crank to simulate.
pub fn check_band_calibration(mech: &Mechanism, cfg: &ProcessConfig) -> Result<(), PipelineError> {
    let bad = |why: String| Err(PipelineError::Input(why));
    match cfg.calibrate_bands {
        0 => Ok(()),
        1 => bad("calibrate_bands = 1: give 0 (not calibrated) or 2 replicates or more (8 or more for a scale within about 10 %)".into()),
        _ if !cfg.smoother => bad("calibrate_bands scales the smoother's bands: it needs method \"smoother\" (or leave calibrate_bands at 0)".into()),
        _ if mech.crank().is_none() => bad("calibrate_bands: the bands' calibration simulates the mechanism at the recording's crank speed, and this mechanism has no motor-driven crank: leave calibrate_bands at 0 (the bands are then the smoother's, conservative)".into()),
        _ => Ok(()),
    }
}

/// The record's warnings and, when the residual test did not judge, why, as the stage's events.
fn warn(
    record: &ProcessRecord,
    fitted: &Fitted,
    cfg: &ProcessConfig,
    events: &mut impl FnMut(StageEvent),
) {
    for w in record.warnings() {
        events(StageEvent::Warning(&w));
    }
    match &fitted.skipped {
        Some(why) if cfg.smoother => events(StageEvent::Warning(&format!(
            "the fitted mechanism's residual test {why}"
        ))),
        _ => {}
    }
}

/// The motion fitted to the markers' `series`, tested by the fitted mechanism's residual
/// (`flexbench_kinematics::outliers`): the samples that fail are flagged and, unless
/// `cfg.keep_flagged`, left out as gaps and the motion refitted, until a fit leaves none failing
/// or the test has run [`flexbench_kinematics::outliers::ROUNDS`] times. The test needs a fit
/// that follows the samples (the smoother): with Savitzky-Golay it does not run. When more than
/// [`flexbench_kinematics::outliers::MAX_SHARE`] of the samples fail, the test stands down: the
/// first fit, whole, with the first round's flags listed and why in `skipped`. With `prior` (a
/// fit of the same tracks before their late samples were carried again), the first fit starts
/// where that one's smoother started.
fn fit_testing_residuals(
    mech: &Mechanism,
    mut series: Vec<MarkerSeries>,
    filter: &MarkerFilter,
    cfg: &ProcessConfig,
    prior: Option<&Motion>,
) -> Result<Fitted, PipelineError> {
    use flexbench_kinematics::outliers::{MAX_SHARE, ROUNDS};
    // A refit leaves its failed samples out as gaps in the markers' series (what the tracks
    // table without them would give: `series_without`).
    let (mut flagged, mut first, mut fits) = (Vec::new(), None::<FirstFit>, 0);
    loop {
        fits += 1;
        let (diffs, choices) = filter.differentiate(&series)?;
        let seen = Observed::new(mech, &series, &diffs);
        let (obs, raw) = (&seen.differentiated, &seen.positions);
        // A refit keeps the horizontal the first fit found (a few samples left out do not
        // move it: measured in docs/tracking.md) and starts its smoother where the first
        // fit's started (the fit's configurations on the motion's branch): the search and the
        // fit are most of a fit's time.
        let (t, kinematics) = (&series[0].t, cfg.kinematics());
        let earlier = first.as_ref().map(|f| &f.motion).or(prior);
        let motion = estimate(mech, t, obs, raw, filter.as_diff(), &kinematics, earlier)?;
        let found = match cfg.smoother && fits <= ROUNDS {
            true => residual_flags(mech, &series[0].frame, &motion, raw, cfg.false_alarm),
            false => Vec::new(),
        };
        let samples: BTreeSet<(i64, String)> =
            found.iter().map(|f| (f.frame, f.marker.clone())).collect();
        flagged.extend(found);
        let fitted = Fitted {
            diffs,
            choices,
            seen,
            motion,
            flags: Flags::from_rows(flagged.clone()),
            fits,
            skipped: (!cfg.smoother).then(|| {
                "not run: a fit of the markers' filtered positions (Savitzky-Golay, Butterworth or the spline) follows them, not their samples; the test needs the smoother".to_string()
            }),
        };
        let measured = first.as_ref().map_or_else(
            || fitted.seen.seen.iter().flatten().filter(|s| **s).count(),
            |f| f.measured,
        );
        if flagged.len() as f64 > MAX_SHARE * measured as f64 {
            let why = format!(
                "stood down: {} of {measured} samples ({:.1} %) failed it, more than {:.0} %: the markers disagree with the mechanism file, the time base or the calibration, or many of the tracked samples are bad; the first round's failures are listed in fit_flags.csv and kept in the fit: look at them on the overlay",
                flagged.len(),
                100.0 * flagged.len() as f64 / measured.max(1) as f64,
                100.0 * MAX_SHARE
            );
            let whole = match first {
                Some(f) => f.into_fitted(mech, filter)?,
                None => fitted,
            };
            return Ok(Fitted {
                skipped: Some(why),
                fits,
                ..whole
            });
        }
        if samples.is_empty() || cfg.keep_flagged {
            return Ok(fitted);
        }
        if first.is_none() {
            first = Some(FirstFit {
                series: series.clone(),
                motion: fitted.motion,
                flags: fitted.flags,
                fits: fitted.fits,
                skipped: fitted.skipped,
                measured,
            });
        }
        flexbench_contracts::tracks::series_without(&mut series, &samples);
    }
}

/// What a refit keeps of the first fit: its motion (where the refit starts), flags and count of
/// measured samples, and the series it was made from; its observations and derivatives are
/// made again from those only if the residual test stands down (the same bits: the
/// differentiation is deterministic), instead of being held through every refit.
struct FirstFit {
    series: Vec<MarkerSeries>,
    motion: Motion,
    flags: Flags,
    fits: usize,
    skipped: Option<String>,
    measured: usize,
}

impl FirstFit {
    /// The first fit, whole.
    fn into_fitted(self, mech: &Mechanism, filter: &MarkerFilter) -> Result<Fitted, PipelineError> {
        let (diffs, choices) = filter.differentiate(&self.series)?;
        let seen = Observed::new(mech, &self.series, &diffs);
        Ok(Fitted {
            diffs,
            choices,
            seen,
            motion: self.motion,
            flags: self.flags,
            fits: self.fits,
            skipped: self.skipped,
        })
    }
}

/// The flags of the samples of `motion` that fail the fitted mechanism's residual test at level
/// `alpha` (`raw[k][m]` the measured positions, `frames[k]` each sample's frame).
fn residual_flags(
    mech: &Mechanism,
    frames: &[i64],
    motion: &Motion,
    raw: &[Vec<Option<MarkerState>>],
    alpha: f64,
) -> Vec<Flag> {
    use flexbench_kinematics::outliers::{raw_residuals, residual_outliers};
    // The scale's floor: the tracks' quantization; and where no body carries two markers, the
    // noise the smoother chose (the residuals are then the smoother's own deviation from
    // correlated errors, not a spread the rigid fits measured).
    use flexbench_kinematics::noise::NoiseSource;
    let floor = motion
        .smoother
        .as_ref()
        .map_or(0.0, |s| match s.noise_source {
            NoiseSource::MaximumLikelihood => s.sigma_floor_m.max(s.sigma_m),
            NoiseSource::RigidResiduals => s.sigma_floor_m,
        });
    residual_outliers(&raw_residuals(mech, &motion.samples, raw), alpha, floor)
        .into_iter()
        .map(|o| Flag {
            frame: frames[o.sample],
            marker: mech.markers[o.marker].name.clone(),
            reason: FlagReason::Residual,
            score: o.score,
        })
        .collect()
}

/// The bodies table of the fitted samples.
fn bodies_table(mech: &Mechanism, t: &[f64], motion: &Motion) -> Table {
    let states: Vec<_> = motion
        .samples
        .iter()
        .zip(t)
        .filter_map(|(f, &tk)| f.state.as_ref().map(|(q, qd, qdd)| (tk, q, qd, qdd)))
        .collect();
    mech.bodies_table(&states)
}

/// The markers as the estimators see them, in the mechanism's marker order: each sample's
/// differentiated states (None where rejected), raw positions (None where not seen), and
/// whether each marker was seen.
struct Observed {
    differentiated: Vec<Vec<Option<MarkerState>>>,
    positions: Vec<Vec<Option<MarkerState>>>,
    seen: Vec<Vec<bool>>,
}

impl Observed {
    fn new(
        mech: &Mechanism,
        series: &[MarkerSeries],
        diffs: &[(Derivatives, Derivatives)],
    ) -> Self {
        let n = series[0].t.len();
        let order: Vec<usize> = mech
            .markers
            .iter()
            .map(|m| {
                series
                    .iter()
                    .position(|s| s.name == m.name)
                    .unwrap_or(usize::MAX)
            })
            .collect();
        let state = |k: usize, j: usize| -> Option<MarkerState> {
            let (dx, dy) = diffs.get(j)?;
            if dx.provenance[k] == Provenance::Rejected || dy.provenance[k] == Provenance::Rejected
            {
                return None;
            }
            Some(MarkerState {
                p: Vector2::new(dx.value[k], dy.value[k]),
                v: Vector2::new(dx.rate[k], dy.rate[k]),
                a: Vector2::new(dx.accel[k], dy.accel[k]),
            })
        };
        // Raw positions, for the smoother (it does its own smoothing).
        let position = |k: usize, j: usize| -> Option<MarkerState> {
            let s = series.get(j)?;
            s.present[k].then(|| MarkerState {
                p: Vector2::new(s.x[k], s.y[k]),
                v: Vector2::zeros(),
                a: Vector2::zeros(),
            })
        };
        let per_sample = |f: &dyn Fn(usize, usize) -> Option<MarkerState>| {
            (0..n)
                .map(|k| order.iter().map(|&j| f(k, j)).collect())
                .collect()
        };
        Observed {
            differentiated: per_sample(&state),
            positions: per_sample(&position),
            seen: (0..n)
                .map(|k| {
                    order
                        .iter()
                        .map(|&j| series.get(j).is_some_and(|s| s.present[k]))
                        .collect()
                })
                .collect(),
        }
    }
}

/// Write the tables, the forces table and the forces figure into `out`.
fn write_outputs(
    mech: &Mechanism,
    t: &[f64],
    tables: [(Table, &str); 3],
    forces: &ForceSeries,
    motion: &Motion,
    tracks_path: &Path,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let combined = combined_sigmas(forces);
    let (rows, sigmas) = (&forces.rows, combined.as_deref());
    let forces_table = mech.forces_table_with_sigma(t, rows, sigmas);
    ensure_dir(out)?;
    let mut files = Vec::new();
    // The order of the files: markers, bodies, forces, fit_residuals; each table let go as it
    // is written.
    let [markers, bodies, residuals] = tables;
    for (table, stem) in [markers, bodies, (forces_table, "forces"), residuals] {
        files.extend(flexbench_tables::write_owned_table(table, out, stem)?);
    }
    let band_note = match (sigmas.is_some(), motion.bands_before_periodic) {
        _ if forces.parameter_sigmas.is_some() || forces.frame_sigmas.is_some() => {
            " (bands: 2 sigma of the tracks' noise, the file's tolerances and the bench frame)"
        }
        (true, true) => " (bands: 2 sigma of the smoother, before the periodic refit)",
        (true, false) => " (bands: 2 sigma)",
        _ => "",
    };
    let source = tracks_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    files.extend(forces_figure(
        t,
        &mech.force_columns(),
        rows,
        sigmas,
        &format!("{}: liaison forces from {source}{band_note}", mech.name),
        &out.join("forces"),
    )?);
    Ok(files)
}

impl ProcessRecord {
    /// The record of one run of `process`.
    fn new(
        tracks_path: &Path,
        mech: &Mechanism,
        cfg: &ProcessConfig,
        differentiation: Differentiation,
        motion: &Motion,
        forces: &ForceSeries,
    ) -> ProcessRecord {
        ProcessRecord {
            job: "process".into(),
            tracks: tracks_path.display().to_string(),
            mechanism: mech.name.clone(),
            samples: motion.samples.len(),
            differentiation,
            fit: motion.report.clone(),
            smoother: motion.smoother.clone(),
            periodic: motion.periodic.clone(),
            bands: bands_in_words(forces, motion.bands_before_periodic, None),
            band_shares: band_shares(&mech.force_columns(), forces),
            tracks_scale: None,
            horizontal_correction_rad: motion.horizontal,
            unfitted_samples: motion.samples.iter().filter(|f| f.state.is_none()).count(),
            flags: None,
            flagged_left_out: 0,
            residual_test: ResidualTestRecord::default(),
            rate: RateCheck::default(),
            clock: None,
            stabilised: None,
            shutter: None,
            peak_locking: None,
            inverse_dynamics: InverseDynamicsRecord {
                max_condition_allowed: cfg.max_condition,
                max_condition: forces.max_condition,
                toggle_samples: forces.toggles.len(),
                toggle_times_s: forces.toggles.iter().take(100).copied().collect(),
            },
        }
    }
}

/// The default Savitzky-Golay window: the odd number of samples nearest to 21 ms at the
/// recording's median sample interval, and at least order + 2.
pub fn default_window(t: &[f64], order: usize) -> usize {
    let mut dt: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    dt.sort_by(|a, b| a.total_cmp(b));
    let step = dt.get(dt.len() / 2).copied().unwrap_or(1e-3);
    let w = (0.021 / step).round() as usize;
    let w = w.max(order + 2);
    if w.is_multiple_of(2) {
        w + 1
    } else {
        w
    }
}

/// The tracks' marker names must be the mechanism's, one for one.
fn check_markers(mech: &Mechanism, names: &[String]) -> Result<(), PipelineError> {
    let declared: Vec<&str> = mech.markers.iter().map(|m| m.name.as_str()).collect();
    let extra: Vec<&str> = names
        .iter()
        .map(|s| s.as_str())
        .filter(|n| !declared.contains(n))
        .collect();
    let missing: Vec<&str> = declared
        .iter()
        .copied()
        .filter(|d| !names.iter().any(|n| n == d))
        .collect();
    if extra.is_empty() && missing.is_empty() {
        return Ok(());
    }
    let mut msg = format!(
        "wrong markers: the tracks have {} marker(s) ({}), the mechanism declares {} ({})",
        names.len(),
        names.join(", "),
        declared.len(),
        declared.join(", ")
    );
    if !extra.is_empty() {
        msg += &format!("; not in the mechanism: {}", extra.join(", "));
    }
    if !missing.is_empty() {
        msg += &format!("; never seen in the tracks: {}", missing.join(", "));
    }
    msg += ". Rename the markers in the tracks or declare them in the mechanism file.";
    Err(PipelineError::Input(msg))
}

/// The markers' kinematics table from the differentiation (contract columns, plus the origin
/// of each sample in `provenance`: measured, edge or rejected).
pub(crate) fn markers_table(
    names: &[String],
    t: &[f64],
    diffs: &[(Derivatives, Derivatives)],
) -> Table {
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 7];
    let mut sig: Vec<Vec<f64>> = vec![Vec::new(); 6];
    let with_sigma = diffs
        .iter()
        .all(|(dx, dy)| dx.sigma.len() == t.len() && dy.sigma.len() == t.len());
    let mut name_col = Vec::new();
    let mut prov = Vec::new();
    for (k, &tk) in t.iter().enumerate() {
        for (name, (dx, dy)) in names.iter().zip(diffs) {
            name_col.push(name.clone());
            let p = if dx.provenance[k] == Provenance::Rejected
                || dy.provenance[k] == Provenance::Rejected
            {
                Provenance::Rejected
            } else if dx.provenance[k] == Provenance::Edge || dy.provenance[k] == Provenance::Edge {
                Provenance::Edge
            } else {
                Provenance::Measured
            };
            prov.push(p.as_str().to_string());
            for (c, v) in cols.iter_mut().zip([
                tk,
                dx.value[k],
                dy.value[k],
                dx.rate[k],
                dy.rate[k],
                dx.accel[k],
                dy.accel[k],
            ]) {
                c.push(v);
            }
            if with_sigma {
                let (a, b) = (dx.sigma[k], dy.sigma[k]);
                for (c, v) in sig.iter_mut().zip([a[0], b[0], a[1], b[1], a[2], b[2]]) {
                    c.push(v);
                }
            }
        }
    }
    let mut table = Table::new("markers");
    let mut it = cols.into_iter();
    let _ = table.push(
        MARKER_COLUMNS[0],
        Column::F64(it.next().unwrap_or_default()),
    );
    let _ = table.push(MARKER_COLUMNS[1], Column::Str(name_col));
    for name in &MARKER_COLUMNS[2..] {
        let v: Vec<Option<f64>> = it
            .next()
            .unwrap_or_default()
            .into_iter()
            .map(|x| x.is_finite().then_some(x))
            .collect();
        let _ = table.push(name, Column::OptF64(v));
    }
    if with_sigma {
        for (name, c) in MARKER_COLUMNS[2..].iter().zip(sig) {
            let v: Vec<Option<f64>> = c.into_iter().map(|x| x.is_finite().then_some(x)).collect();
            let _ = table.push(&format!("{name}_sigma"), Column::OptF64(v));
        }
    }
    let _ = table.push("provenance", Column::Str(prov));
    table
}

/// Per sample and marker, the fitted minus measured position (m, bench frame).
fn residual_table(mech: &Mechanism, t: &[f64], fit: &[flexbench_kinematics::FitSample]) -> Table {
    let (mut tt, mut names, mut rx, mut ry) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (f, &tk) in fit.iter().zip(t) {
        for (mk, r) in mech.markers.iter().zip(&f.residual) {
            tt.push(tk);
            names.push(mk.name.clone());
            rx.push(r.map(|r| r.x));
            ry.push(r.map(|r| r.y));
        }
    }
    let mut table = Table::new("fit_residuals");
    let _ = table.push("t", Column::F64(tt));
    let _ = table.push("marker", Column::Str(names));
    let _ = table.push("rx", Column::OptF64(rx));
    let _ = table.push("ry", Column::OptF64(ry));
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A false-alarm level that is not a probability below 0.5 (0, 0.5, NaN, negative) is
    /// refused before anything is read or written, with what to give instead.
    #[test]
    fn false_alarm_outside_zero_to_half_refused() {
        let mech = flexbench_mechanism::file::wind_pump_default();
        let out = std::env::temp_dir().join("flexbench-false-alarm-refused");
        for level in [0.0, 0.5, f64::NAN, -1e-6] {
            let cfg = ProcessConfig {
                false_alarm: level,
                ..ProcessConfig::default()
            };
            let r = process(
                Path::new("no-such-tracks.csv"),
                None,
                &mech,
                &cfg,
                &out,
                |_| {},
            );
            let Err(PipelineError::Input(why)) = r else {
                panic!("{level}: not refused as input");
            };
            assert!(
                why.contains("false-alarm level") && why.contains("1e-6"),
                "{why}"
            );
            assert!(!out.exists());
        }
    }
}
