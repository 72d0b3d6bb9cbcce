//! The whole estimation of the mechanism's motion from its markers, as `process` runs it: the
//! closed-loop fit of the markers' differentiated states, then (by default) the Kalman smoother
//! on the driving coordinates from the fit's configurations, with the bench's horizontal refined
//! from the motion and the drivers refitted in the crank angle when asked; and the liaison forces
//! of the estimated motion by Newton-Euler, with their bands from the smoother's covariance.

use nalgebra::{DMatrix, Rotation2, Vector2};
use serde::Serialize;

use flexbench_contracts::names::Switch;
use flexbench_mechanism::inverse::InverseSample;
use flexbench_mechanism::model::{BodyRef, JointKind};
use flexbench_mechanism::output::StateRef;
use flexbench_mechanism::Mechanism;
use flexbench_signal::Differentiator;

use crate::fit::{fit_markers, refit_report, FitReport};
use crate::fold::Configurations;
use crate::observe::{FitSample, MarkerState};
use crate::periodic::{periodic_refit, PeriodicReport};
use crate::smoother::{profile_log_likelihood, smooth_with_noise, SmootherReport};
use crate::KinematicsError;

/// Range of the horizontal's refinement, rad either side of the calibration's.
pub const HORIZONTAL_RANGE: f64 = 2e-3;
/// Coarse step of the horizontal's refinement, rad.
pub const HORIZONTAL_COARSE_STEP: f64 = 4e-4;
/// Fine step of the horizontal's refinement, rad.
pub const HORIZONTAL_FINE_STEP: f64 = 1e-4;
/// Half the 95 % quantile of chi-square with one degree of freedom: the least gain of
/// log-likelihood for which the refined horizontal replaces the calibration's.
pub const HORIZONTAL_LR_THRESHOLD: f64 = 1.92;
/// The horizontal is refined on the recording's first this many seconds (the whole of a
/// shorter one), then the whole recording is fitted once at the angle found. The horizontal is
/// the camera set-up's, not the motion's: 10 s hold 23 turns of the bench at 140 rpm, and the
/// grid of candidates then costs what 10 s cost whatever the length (the 100 s render finds
/// the same angle, 0, from its first 10 s as from the whole: docs/benchmarks.md).
pub const HORIZONTAL_WINDOW_S: f64 = 10.0;
/// A refined horizontal this far (rad) from the calibration's is reported.
pub const HORIZONTAL_WARN: f64 = 1.5e-3;
/// The periodic refit's marker residual above this multiple of the smoother's is reported as
/// a motion that is not periodic.
pub const PERIODIC_WARN_RATIO: f64 = 1.2;

/// The periodic refit's least whole turns of the crank, where it runs by default.
pub const PERIODIC_MIN_TURNS: f64 = 2.0;

/// Whether the mechanism has what the periodic refit assumes: a motor-driven crank
/// ([`Mechanism::crank`]) and another driver to refit in its angle (the bench's slide).
pub fn periodic_applies(mech: &Mechanism) -> bool {
    mech.crank().is_some() && mech.drivers.len() >= 2
}

/// Whether the markers can tell a turn of the bench frame about its origin: the mechanism holds
/// to the ground at two points or more, or along a slide (a pendulum or a wheel on one pin turns
/// with the frame unseen; its horizontal is gravity's, which the markers do not measure).
pub fn horizontal_observable(mech: &Mechanism) -> bool {
    let mut ground: Vec<Vector2<f64>> = Vec::new();
    for j in &mech.joints {
        match &j.kind {
            JointKind::Slide { .. } => return true,
            JointKind::Revolute { a, b } => {
                for p in [a, b] {
                    if p.body == BodyRef::Ground
                        && !ground.iter().any(|g| (g - p.local).norm() < 1e-9)
                    {
                        ground.push(p.local);
                    }
                }
            }
        }
    }
    ground.len() >= 2
}

/// Markers' states at every sample, in the mechanism's marker order (None: not measured).
pub type Observations = Vec<MarkerStates>;

/// Markers' states at one sample, in the mechanism's marker order (None: not measured).
pub type MarkerStates = Vec<Option<MarkerState>>;

/// How the motion is estimated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// The Kalman smoother on the driving coordinates after the fit (the default); without it
    /// the motion is the fit of the markers' differentiated states through the loop's analysis.
    pub smoother: bool,
    /// With the smoother: the bench's horizontal refined from the motion, by maximum likelihood
    /// of the smoother over a rotation of the tracks about the bench origin (on the first
    /// [`HORIZONTAL_WINDOW_S`] of the recording). Auto: where the mechanism sees a turn of
    /// the bench frame ([`horizontal_observable`]).
    pub refine_horizontal: Switch,
    /// With the smoother: the drivers other than the first refitted as Fourier series of the
    /// first (the crank angle) over every turn (steady periodic motion). Auto: where the
    /// mechanism has a motor-driven crank and another driver ([`periodic_applies`]) and the
    /// crank turns [`PERIODIC_MIN_TURNS`] times or more.
    pub periodic: Switch,
    /// Threads the horizontal's candidate angles are evaluated on (results do not depend on it).
    pub threads: usize,
    /// With `refine_horizontal`: the seconds at the recording's start the horizontal is refined
    /// on ([`HORIZONTAL_WINDOW_S`]; the whole recording when shorter).
    pub horizontal_window_s: f64,
    /// With `refine_horizontal`: the correction already found (rad) by an earlier fit of the same
    /// tracks, used as it is instead of searched again (a refit with a few samples left out).
    pub horizontal_found: Option<f64>,
    /// With an earlier fit of the same recording ([`estimate`]'s `earlier`): its model taken as
    /// it is instead of chosen again from these tracks: the smoother's noise and jerk densities
    /// and the periodic fit's harmonics (the estimate as a fixed model, for its derivatives:
    /// `crate::frame_share`).
    pub keep_model: bool,
}

/// The estimated motion of the mechanism.
#[derive(Debug, Clone)]
pub struct Motion {
    /// Per sample: the state q, q', q'' (None where not fitted) and the markers' residuals.
    pub samples: Vec<FitSample>,
    /// The fit's report (residuals, folds, disagreements, warnings).
    pub report: FitReport,
    /// What the smoother chose, when it ran.
    pub smoother: Option<SmootherReport>,
    /// What the periodic refit found, when it ran.
    pub periodic: Option<PeriodicReport>,
    /// Per sample, the smoother's covariance of the drivers, their rates and accelerations
    /// (3 nd x 3 nd, drivers' own units), when the smoother ran.
    pub covariances: Option<Vec<DMatrix<f64>>>,
    /// The horizontal's correction, rad (0 when the calibration's is kept), when refined.
    pub horizontal: Option<f64>,
    /// True when the bands are the smoother's carried at the periodic fit's states.
    pub bands_before_periodic: bool,
    /// Where the smoother started, when it ran: where a refit of the same tracks starts
    /// ([`estimate`]'s `earlier`).
    pub start: Option<SmootherStart>,
}

/// Where the smoother started: the fit's configurations on the motion's branch through every
/// fold, and that fit's own report (its residuals, not the smoother's).
#[derive(Debug, Clone)]
pub struct SmootherStart {
    /// Per sample, the configuration q (None where not fitted).
    pub configurations: Configurations,
    /// The fit's report.
    pub fit_report: FitReport,
}

/// The markers' states turned by `angle` (rad) about the bench origin.
pub fn rotate(obs: &[Vec<Option<MarkerState>>], angle: f64) -> Observations {
    let r = Rotation2::new(angle);
    obs.iter()
        .map(|o| {
            o.iter()
                .map(|m| {
                    m.map(|m| MarkerState {
                        p: r * m.p,
                        v: r * m.v,
                        a: r * m.a,
                    })
                })
                .collect()
        })
        .collect()
}

/// One run of the fit and the smoother with the tracks turned by an angle.
struct Turned {
    positions: Observations,
    start: Configurations,
    fit_report: FitReport,
    samples: Vec<FitSample>,
    smoothed_report: FitReport,
    smoother: SmootherReport,
    covariances: Vec<DMatrix<f64>>,
}

/// Where a run starts the smoother: the fit of the markers (None), or an earlier run's
/// starting configurations with that fit's report (a refit of the same tracks).
type Start<'a> = Option<(&'a Configurations, &'a FitReport)>;

/// The fit then the smoother on the markers turned by `angle` about the bench origin; with
/// `start`, the smoother from there instead of a new fit.
fn turned_run(
    mech: &Mechanism,
    t: &[f64],
    (differentiated, positions): (&[MarkerStates], &[MarkerStates]),
    diff: &(dyn Differentiator + Sync),
    angle: f64,
    (start, kept): (Start, Option<(f64, &[f64])>),
) -> Result<Turned, KinematicsError> {
    let (raw_a, obs_a) = (rotate(positions, angle), rotate(differentiated, angle));
    let (init, r1) = match start {
        Some((init, earlier)) => (init.clone(), refit_report(mech, &obs_a, earlier)),
        None => {
            let (f1, r1) = fit_markers(mech, t, &obs_a, diff)?;
            let init: Configurations = f1.into_iter().map(|f| f.state.map(|s| s.0)).collect();
            (init, r1)
        }
    };
    let (f2, r2, sr, cov) = smooth_with_noise(mech, t, &raw_a, &init, kept)?;
    Ok(Turned {
        positions: raw_a,
        start: init,
        fit_report: r1,
        samples: f2,
        smoothed_report: r2,
        smoother: sr,
        covariances: cov,
    })
}

/// The forces' harmonics and the crank speed they were found at
/// ([`crate::spectrum::harmonics_needed`]), when found ahead of the periodic refit.
type Harmonics = Option<(f64, usize)>;

/// The horizontal's search ([`refine_horizontal`]) on the recording's first
/// `cfg.horizontal_window_s`, then the recording's run at the angle found (the window's own when
/// it is the whole recording and the angle 0). With `cfg.periodic`, the forces' harmonics are
/// simulated meanwhile on a thread of their own, at the crank speed of the window's tracks as
/// they are: the periodic refit takes them when its own speed is within
/// [`crate::periodic::SAME_SPEED`] of it, which the horizontal's fraction of a milliradian
/// keeps (the simulation is a seventh of the demo's process stage, otherwise run alone after
/// the search). The recording's run starts at `start` ([`turned_run`]). Returns the angle, the
/// run and the harmonics found ahead.
fn search_horizontal(
    mech: &Mechanism,
    t: &[f64],
    (differentiated, positions): (&[MarkerStates], &[MarkerStates]),
    diff: &(dyn Differentiator + Sync),
    cfg: &Config,
    start: Start,
) -> Result<(f64, Turned, Harmonics), KinematicsError> {
    let m = t
        .iter()
        .take_while(|&&tk| tk - t[0] <= cfg.horizontal_window_s)
        .count();
    let (tw, pw) = (&t[..m], &positions[..m]);
    let base = turned_run(
        mech,
        tw,
        (&differentiated[..m], pw),
        diff,
        0.0,
        (None, None),
    )?;
    let ahead = cfg
        .periodic
        .resolve(periodic_applies(mech))
        .then(|| (base.positions.clone(), base.samples.clone()));
    std::thread::scope(|s| {
        let job = ahead.map(|(obs, smoothed)| {
            s.spawn(move || {
                let speed = crate::periodic::crank_speed(mech, tw, &obs, &smoothed).ok()?;
                drop((obs, smoothed));
                Some((speed, crate::spectrum::harmonics_needed(mech, speed)?))
            })
        });
        let profile = |angle: f64| {
            let smoother = &base.smoother;
            profile_log_likelihood(mech, tw, &rotate(pw, angle), &base.samples, smoother)
        };
        let angle = refine_horizontal(cfg.threads, &profile);
        // The recording's own run at the angle kept: the window's when it is the whole
        // recording and the angle 0, a new one otherwise (the window's dropped first).
        let whole = match m == t.len() && angle == 0.0 {
            true => base,
            false => {
                drop(base);
                turned_run(
                    mech,
                    t,
                    (differentiated, positions),
                    diff,
                    angle,
                    (start, None),
                )?
            }
        };
        let known = job.and_then(|j| j.join().ok().flatten());
        Ok((angle, whole, known))
    })
}

/// The horizontal's refinement: the turn of the tracks of highest likelihood of the smoother,
/// kept when significant. `profile` is the smoother's likelihood at an angle warm-started from
/// the run of the tracks as they are ([`crate::smoother::profile_log_likelihood`]): the
/// candidate angles are profiled from that run, on its assembly branch through the folds.
/// Returns the angle (0: the calibration's kept).
fn refine_horizontal(threads: usize, profile: &(dyn Fn(f64) -> Option<f64> + Sync)) -> f64 {
    let fine = HORIZONTAL_FINE_STEP;
    let mut climb = Climb {
        threads,
        known: Vec::new(),
        profile: &|k: i32| profile(k as f64 * fine),
    };
    // A climb along the coarse grid from the calibration's horizontal, then along the fine one
    // from the coarse grid's best, no further than halfway to its neighbours.
    let coarse = (HORIZONTAL_COARSE_STEP / fine).round() as i32;
    let range = (HORIZONTAL_RANGE / fine).round() as i32;
    let centre = climb.climb(0, coarse, -range..=range);
    let best = climb.climb(centre, 1, centre - coarse + 1..=centre + coarse - 1);
    // Kept only when the data disagree with the calibration's horizontal significantly
    // (likelihood-ratio test, one parameter, 95 %): within the smoother's resolution of about
    // 0.1 mrad a turn would only add noise.
    let keep = best != 0 && climb.loglik(best) - climb.loglik(0) >= HORIZONTAL_LR_THRESHOLD;
    if keep {
        best as f64 * fine
    } else {
        0.0
    }
}

/// The horizontal's candidates, in fine steps ([`HORIZONTAL_FINE_STEP`]) from the
/// calibration's, and their profiled log-likelihoods, each profiled once.
struct Climb<'a> {
    threads: usize,
    known: Vec<(i32, f64)>,
    profile: &'a (dyn Fn(i32) -> Option<f64> + Sync),
}

impl Climb<'_> {
    /// The log-likelihood of candidate `k` (minus infinity where the profile failed, NaN
    /// included); profiled when first asked.
    fn loglik(&mut self, k: i32) -> f64 {
        self.profile_all(&[k]);
        self.known
            .iter()
            .find(|e| e.0 == k)
            .map_or(f64::NEG_INFINITY, |e| e.1)
    }

    /// The candidates of `ks` not yet profiled, profiled at once on every core.
    fn profile_all(&mut self, ks: &[i32]) {
        let new: Vec<i32> = ks
            .iter()
            .copied()
            .filter(|k| self.known.iter().all(|e| e.0 != *k))
            .collect();
        let lls = flexbench_contracts::parallel::map_in_order(self.threads, &new, |&k| {
            (self.profile)(k).filter(|ll| !ll.is_nan())
        });
        for (k, ll) in new.into_iter().zip(lls) {
            self.known.push((k, ll.unwrap_or(f64::NEG_INFINITY)));
        }
    }

    /// Hill climbing from `from` by steps of `step` within `within`: both neighbours, then on
    /// along the better one (the lower angle among equals) while the likelihood rises, a
    /// step per core at once. Returns the top reached. The profile along the motion's own
    /// branch has one maximum over the horizontal's range (the shipped recording's, and the
    /// recordings turned by 1 mrad of the tests), which the climb finds with a few profiles
    /// where a whole grid took twenty.
    fn climb(&mut self, from: i32, step: i32, within: std::ops::RangeInclusive<i32>) -> i32 {
        let (mut top, mut top_ll) = (from, self.loglik(from));
        let sides: Vec<i32> = [from - step, from + step]
            .into_iter()
            .filter(|k| within.contains(k))
            .collect();
        self.profile_all(&sides);
        let mut dir = 0;
        for k in sides {
            let ll = self.loglik(k);
            if ll > top_ll {
                (top, top_ll, dir) = (k, ll, (k - from).signum());
            }
        }
        while dir != 0 {
            let ahead: Vec<i32> = (1..=self.threads.max(1) as i32)
                .map(|i| top + dir * step * i)
                .filter(|k| within.contains(k))
                .collect();
            self.profile_all(&ahead);
            // On while each step rises; the climb ends at the first that does not.
            let before = top;
            for k in ahead {
                let ll = self.loglik(k);
                if ll <= top_ll {
                    dir = 0;
                    break;
                }
                (top, top_ll) = (k, ll);
            }
            if top == before {
                dir = 0;
            }
        }
        top
    }
}

/// The mechanism's motion from its markers at times `t`: `differentiated` holds each marker's
/// position, velocity and acceleration from `diff` (None where rejected), `positions` the raw
/// measured positions (None where not seen), both in the mechanism's marker order.
///
/// `earlier`: an estimate of the same tracks before some samples were left out (a refit after
/// the residual test), or before a rolling shutter's samples were carried again along it
/// ([`crate::late`]). The horizontal is searched again on the samples kept (the samples left
/// out bias the earlier one's: seven bad samples of 480 on the shipped recording's tracks turned
/// it by 0.2 mrad, which took the force at B from 2.1 % to 3.6 % of its peak), and the smoother
/// starts where its own started (the fit's configurations on the motion's branch through every fold) instead of
/// from a new fit. A starting point only: the smoother's Gauss-Newton reaches the trajectory of
/// highest probability of the samples kept from there as from a new fit's, whose
/// configurations differ only about the samples left out (its jerk densities are chosen at the
/// starting trajectory: the same ones, unless a few samples tip a choice that was even). The
/// fit's report is then the earlier one's, its free rigid fits' diagnostics taken anew.
pub fn estimate(
    mech: &Mechanism,
    t: &[f64],
    differentiated: &[Vec<Option<MarkerState>>],
    positions: &[Vec<Option<MarkerState>>],
    diff: &(dyn Differentiator + Sync),
    cfg: &Config,
    earlier: Option<&Motion>,
) -> Result<Motion, KinematicsError> {
    if !cfg.smoother {
        let (samples, report) = fit_markers(mech, t, differentiated, diff)?;
        return Ok(Motion {
            samples,
            report,
            smoother: None,
            periodic: None,
            covariances: None,
            horizontal: None,
            bands_before_periodic: false,
            start: None,
        });
    }
    let start = earlier
        .and_then(|e| e.start.as_ref())
        .filter(|s| s.configurations.len() == t.len())
        .map(|s| (&s.configurations, &s.fit_report));
    // The earlier fit's model, when kept: its smoother's noise and densities, its harmonics.
    let kept = earlier.filter(|_| cfg.keep_model);
    let noise = kept
        .and_then(|e| e.smoother.as_ref())
        .map(|s| (s.sigma_m, s.jerk_density.as_slice()));
    let harmonics = kept
        .and_then(|e| e.periodic.as_ref())
        .map(|p| (p.crank_harmonics, p.harmonics));
    let run = |angle: f64| {
        turned_run(
            mech,
            t,
            (differentiated, positions),
            diff,
            angle,
            (start, noise),
        )
    };
    let refine = cfg.refine_horizontal.resolve(horizontal_observable(mech));
    let (horizontal, (best, ahead)) = match (refine, cfg.horizontal_found) {
        (false, _) => (None, (run(0.0)?, None)),
        (true, Some(angle)) => (Some(angle), (run(angle)?, None)),
        (true, None) => {
            let (angle, whole, ahead) =
                search_horizontal(mech, t, (differentiated, positions), diff, cfg, start)?;
            (Some(angle), (whole, ahead))
        }
    };
    // A refit takes the forces' harmonics the earlier fit found at (nearly) its crank speed, a
    // first fit those found beside the horizontal's search.
    let known = earlier
        .and_then(|e| e.periodic.as_ref())
        .map(|p| (p.crank_speed, p.forces_harmonics))
        .or(ahead);
    finish(mech, t, cfg, horizontal, (known, harmonics), best)
}

/// The motion of the run kept (`best`, at the horizontal's correction `horizontal`): its
/// reports, warnings and, when asked, the periodic refit (with the forces' harmonics `known`
/// from an earlier fit, [`refit_periodic`]).
fn finish(
    mech: &Mechanism,
    t: &[f64],
    cfg: &Config,
    horizontal: Option<f64>,
    known: crate::periodic::Known,
    best: Turned,
) -> Result<Motion, KinematicsError> {
    let start = SmootherStart {
        configurations: best.start,
        fit_report: best.fit_report.clone(),
    };
    // The fit's report is that of the tracks as turned by the horizontal kept (its warnings
    // too: the pins' circles are judged in the bench frame the motion is estimated in), its
    // residuals the smoother's.
    let mut report = FitReport {
        rms: best.smoothed_report.rms,
        rms_per_marker: best.smoothed_report.rms_per_marker,
        unfitted_samples: best.smoothed_report.unfitted_samples,
        ..best.fit_report
    };
    report
        .warnings
        .extend(best.smoother.warnings.iter().cloned());
    if let Some(angle) = horizontal.filter(|a| a.abs() > HORIZONTAL_WARN) {
        report.warnings.push(format!(
            "the motion turns the bench's horizontal by {:.2} mrad from the calibration's: check the clicked horizontal",
            angle * 1e3
        ));
    }
    let mut motion = Motion {
        samples: best.samples,
        report,
        smoother: Some(best.smoother),
        periodic: None,
        covariances: Some(best.covariances),
        horizontal,
        bands_before_periodic: false,
        start: Some(start),
    };
    let turns = || crate::observe::driver_turns(mech, &motion.samples) >= PERIODIC_MIN_TURNS;
    if cfg.periodic.resolve(periodic_applies(mech) && turns()) {
        refit_periodic(mech, t, &best.positions, known, &mut motion)?;
    }
    Ok(motion)
}

/// The periodic refit of the smoothed motion, in place; its report and warning (`known`: the
/// forces' harmonics an earlier fit found, with its crank speed, and the harmonics to take as
/// they are, [`periodic_refit`]).
fn refit_periodic(
    mech: &Mechanism,
    t: &[f64],
    positions: &[Vec<Option<MarkerState>>],
    known: crate::periodic::Known,
    motion: &mut Motion,
) -> Result<(), KinematicsError> {
    let (f3, pr) = periodic_refit(mech, t, positions, &motion.samples, known)?;
    motion.samples = f3;
    // The periodic fit's own uncertainty is not calibrated (periodic_refit); the bands stay the
    // smoother's, per sample, carried at the periodic fit's states: wider than the periodic
    // fit's, which pools every turn (a conservative band).
    motion.bands_before_periodic = true;
    motion.report.rms = pr.rms;
    // Against a floor of 1 um: on noise-free tracks both residuals are rounding.
    if pr.rms > PERIODIC_WARN_RATIO * pr.rms_start.max(1e-6) {
        motion.report.warnings.push(format!(
            "the periodic fit leaves {:.3} mm RMS on the markers against the smoother's {:.3} mm: the motion is not periodic in the {} (not settled, or the speed drifts); drop --periodic",
            pr.rms * 1e3,
            pr.rms_start * 1e3,
            mech.drivers[0].name
        ));
    }
    motion.periodic = Some(pr);
    Ok(())
}

/// The liaison forces of a motion, sample by sample (Newton-Euler), with their bands.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ForceSeries {
    /// Per sample, the forces in the mechanism's force columns (N, N m; bench frame), None
    /// where the motion was not fitted or the sample is a toggle position.
    pub rows: Vec<Option<Vec<f64>>>,
    /// Per sample, each force's standard deviation from the smoother's covariance, when the
    /// motion has one (the tracks' noise).
    pub sigmas: Option<Vec<Option<Vec<f64>>>>,
    /// Per sample, each force's standard deviation from the mechanism file's tolerances, when
    /// it gives any that move the forces (`Mechanism::forces_sigma_tolerances`).
    pub parameter_sigmas: Option<Vec<Option<Vec<f64>>>>,
    /// Per sample, each force's standard deviation from the bench frame's uncertainty (the
    /// calibration's), when it was given (`crate::frame_share`).
    pub frame_sigmas: Option<Vec<Option<Vec<f64>>>>,
    /// Times of the samples reported as toggles (no forces), s.
    pub toggles: Vec<f64>,
    /// Largest condition number of the solved systems.
    pub max_condition: f64,
}

/// The liaison forces of `motion` at times `t`: the Newton-Euler system per sample, a sample
/// whose condition number reaches `max_condition` reported as a toggle; the bands carry the
/// smoother's covariance of the drivers to the forces (first order). `progress` gets the
/// fraction done.
pub fn forces(
    mech: &Mechanism,
    t: &[f64],
    motion: &Motion,
    max_condition: f64,
    progress: &mut dyn FnMut(f64),
) -> Result<ForceSeries, KinematicsError> {
    use flexbench_contracts::parallel::{map_in_order_chunked, map_samples, threads};
    let n = motion.samples.len();
    let mut out = ForceSeries {
        rows: Vec::with_capacity(n),
        ..ForceSeries::default()
    };
    // The samples' systems are solved in runs of 64 (on every core; within a run four side by
    // side, the same numbers as one at a time), then taken in order: the first error, the
    // toggles and the largest condition number as one after the other.
    let runs: Vec<_> = motion.samples.chunks(64).collect();
    let solved = map_in_order_chunked(
        threads(),
        &runs,
        32,
        |run| {
            let states: Vec<_> = run
                .iter()
                .filter_map(|f| f.state.as_ref().map(|(q, qd, qdd)| (q, qd, qdd)))
                .collect();
            let mut solved = mech
                .inverse_dynamics_batch(&states, max_condition)?
                .into_iter();
            Ok::<_, flexbench_mechanism::MechanismError>(
                run.iter()
                    .map(|f| f.state.as_ref().and_then(|_| solved.next()))
                    .collect::<Vec<_>>(),
            )
        },
        progress,
    );
    let solved: Vec<Option<InverseSample>> = solved
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect();
    for (k, s) in solved.iter().enumerate() {
        let row = match s {
            None => None,
            Some(InverseSample::Solved { forces, condition }) => {
                out.max_condition = out.max_condition.max(*condition);
                Some(forces.clone())
            }
            Some(InverseSample::Toggle { .. }) => {
                out.toggles.push(t[k]);
                None
            }
        };
        out.rows.push(row);
    }
    out.parameter_sigmas = parameter_sigmas(mech, motion, &solved)?;
    out.sigmas = motion.covariances.as_ref().map(|cov| {
        let items: Vec<_> = motion.samples.iter().zip(cov).zip(&out.rows).collect();
        map_samples(&items, |((f, c), r)| {
            let (q, qd, qdd) = f.state.as_ref()?;
            r.as_ref()?;
            mech.forces_sigma(q, qd, qdd, c, max_condition)
        })
    });
    Ok(out)
}

/// Per sample, each force's standard deviation from the mechanism file's tolerances (None
/// where not fitted or a toggle); None when no tolerance moves the forces.
fn parameter_sigmas(
    mech: &Mechanism,
    motion: &Motion,
    solved: &[Option<InverseSample>],
) -> Result<Option<Vec<Option<Vec<f64>>>>, KinematicsError> {
    use flexbench_contracts::parallel::map_samples;
    // The tolerances' parameters taken once (each holds two models), not at every sample.
    let (parameters, sigma) = mech.moving_tolerances();
    if parameters.is_empty() {
        return Ok(None);
    }
    let items: Vec<_> = motion.samples.iter().zip(solved).collect();
    let per = map_samples(&items, |(f, s)| {
        let ((q, qd, qdd), s) = (f.state.as_ref()?, s.as_ref()?);
        let one = mech.forces_sigma_of(
            (&parameters, &sigma),
            &[(q, qd, qdd)],
            std::slice::from_ref(s),
        );
        Some(one.map(|mut v| v.pop().flatten()))
    });
    let per = per
        .into_iter()
        .map(|p| p.transpose())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(per.into_iter().map(Option::flatten).collect()))
}

/// Per sample, the standard deviations of the markers' fitted kinematics from the smoother's
/// covariance (None where not fitted), when the motion has one.
pub fn marker_sigmas(mech: &Mechanism, motion: &Motion) -> Option<Vec<Option<Vec<f64>>>> {
    use flexbench_contracts::parallel::map_samples;
    let cov = motion.covariances.as_ref()?;
    let items: Vec<_> = motion.samples.iter().zip(cov).collect();
    Some(map_samples(&items, |(f, c)| {
        let (q, qd, qdd) = f.state.as_ref()?;
        mech.marker_kinematics_sigma(q, qd, qdd, c)
    }))
}

/// The state of every fitted sample, by reference.
pub fn states(motion: &Motion) -> Vec<Option<StateRef<'_>>> {
    motion
        .samples
        .iter()
        .map(|f| f.state.as_ref().map(|(q, qd, qdd)| (q, qd, qdd)))
        .collect()
}
