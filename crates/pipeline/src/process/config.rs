//! The process stage's configuration (`ProcessConfig`), as the pipeline file's `[process]` section
//! converts into it.

use super::*;

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
