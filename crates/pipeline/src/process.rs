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
use flexbench_contracts::{Column, ContractError, MarkerSeries, Table, MARKER_COLUMNS};
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

use crate::{ensure_dir, PipelineError};
use crate::{StageEvent, StageRecord};
use flexbench_report::forces_figure;

use crate::process_bands::{band_shares, bands_in_words, combined_sigmas, scale_tracks_share};

mod record;
pub use record::*;
mod config;
pub use config::*;
mod filter;
use filter::*;
mod tables;
pub use crate::process_bands::{frame_covariance, BandShare};
pub(crate) use tables::*;

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
    let replicate_cfg = cfg.without_bands();
    // One instance of the stage for the replicates (its events a trait object: the stage
    // calling itself through a closure of its own type would not end).
    let run = |tracks: &Path, out: &Path| {
        let quiet: &mut dyn FnMut(StageEvent) = &mut |_| {};
        process(tracks, None, mech, &replicate_cfg, out, quiet).map(|_| ())
    };
    crate::band_calibration::tracks_scale(mech, &rec, (replicates, &run), events)
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
    // Long: the stage's steps in their order (read, check, differentiate, fit and test, refit,
    // inverse dynamics, bands, write), each a call: kept in one function so that the order is read
    // at once.
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
    let measure = !pixels.is_empty() && cfg.smoother().is_some();
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
    let bodies = bodies_table(mech, &t, motion)?;
    let residuals = residual_table(mech, &t, &motion.samples)?;
    lap("kinematics", &mut timing);

    events(StageEvent::Progress("inverse dynamics", 0.0));
    let mut forces = flexbench_kinematics::forces(mech, &t, motion, cfg.max_condition, &mut |f| {
        events(StageEvent::Progress("inverse dynamics", f))
    })?;
    let tracks_scale = match cfg.smoother().map_or(0, |s| s.calibrate_bands) {
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
    let markers = match cfg.smoother().is_some() {
        // The markers' kinematics as the fitted motion gives them (consistent with the bodies
        // and the forces), with their bands when the fit has a covariance.
        true => {
            let states = flexbench_kinematics::estimate::states(motion);
            let sigmas = flexbench_kinematics::estimate::marker_sigmas(mech, motion);
            mech.fitted_markers_table(&t, &states, sigmas.as_deref(), &seen.seen)?
        }
        false => markers_table(&names, &t, &fitted.diffs)?,
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
    let fit_flags = fitted.flags.to_named_table("fit_flags")?;
    files.extend(write_table(&fit_flags, out, "fit_flags")?);
    // The bodies' motion moved by each of the frame's principal directions, for the
    // identification's share of the calibration (`crate::identify_frame`).
    for (k, m) in frame_motions.iter().enumerate() {
        let stem = crate::identify_frame::table_stem(k);
        files.extend(write_table(&bodies_table(mech, &t, m)?, out, &stem)?);
    }
    crate::identify_frame::remove_stale(out, frame_motions.len())?;
    lap("write", &mut timing);
    let differentiation = Differentiation::of(&filter, &fitted.choices);
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
    files.push(record.write(&out.join(crate::folders::SUMMARY))?);
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
        cfg.smoother().map_or(Switch::Off, |s| s.peak_locking),
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
    // Another method than the smoother has no bands' calibration (`ProcessMethod`).
    match cfg.smoother().map_or(0, |s| s.calibrate_bands) {
        0 => Ok(()),
        1 => bad("calibrate_bands = 1: give 0 (not calibrated) or 2 replicates or more (8 or more for a scale within about 10 %)".into()),
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
        Some(why) if cfg.smoother().is_some() => events(StageEvent::Warning(&format!(
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
        let found = match cfg.smoother().is_some() && fits <= ROUNDS {
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
            skipped: cfg.smoother().is_none().then(|| {
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
