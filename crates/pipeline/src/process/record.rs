//! The process stage's record (`summary.json`): what was read, how the motion was estimated and
//! differentiated, the residual test, the inverse dynamics.

use super::*;

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
    pub(super) fn of(cfg: &ProcessConfig, fitted: &Fitted) -> ResidualTestRecord {
        ResidualTestRecord {
            false_alarm: cfg.false_alarm,
            flagged: fitted.flags.rows().len(),
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

impl Differentiation {
    /// The markers' differentiation `filter`, with what it chose.
    pub(super) fn of(filter: &MarkerFilter, choices: &[CoordinateChoice]) -> Differentiation {
        match filter {
            MarkerFilter::SavGol(sg, window, settings) => Differentiation {
                method: sg.describe(),
                window: Some(*window),
                order: settings.order,
                edges: Some(settings.edges.name().into()),
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

impl ProcessRecord {
    /// The record of one run of `process`.
    pub(super) fn new(
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
