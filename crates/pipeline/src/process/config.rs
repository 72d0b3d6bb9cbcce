//! The process stage's configuration (`ProcessConfig`), as the pipeline file's `[process]` section
//! converts into it.

use super::*;

/// Parameters of `process`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessConfig {
    /// How the motion's velocities and accelerations are found, with that method's settings
    /// (`[process] method` and its keys).
    pub method: ProcessMethod,
    /// Condition number above which an inverse-dynamics sample is reported as a toggle.
    pub max_condition: f64,
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
}

/// How `process` finds the motion's velocities and accelerations: the Kalman smoother on the
/// driving coordinates, or each marker smoothed and differentiated and carried through the
/// loop's analysis by one of three filters. Each carries its own settings, and only those.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProcessMethod {
    /// The Kalman smoother on the driving coordinates (the default).
    Smoother(SmootherSettings),
    /// Each marker's Savitzky-Golay derivatives through the loop's analysis.
    SavGol(SavGolSettings),
    /// Each marker filtered by this zero-lag Butterworth filter and differentiated, through the
    /// loop's analysis (the labs' pipeline).
    Butterworth(Butterworth),
    /// Each marker smoothed by this smoothing spline (Woltring's GCV) and differentiated,
    /// through the loop's analysis.
    Spline(GcvSpline),
}

/// The Savitzky-Golay differentiation of the markers (and of the fit's drivers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SavGolSettings {
    /// Window, samples (odd); None: about 21 ms of samples (at least order + 2), which keeps
    /// the forces from noise-free positions at 1 kHz within 0.3 % RMS of their peak.
    pub window: Option<usize>,
    /// Polynomial order.
    pub order: usize,
    /// Edge mode (scipy's modes).
    pub edges: flexbench_signal::EdgeMode,
}

/// The smoother's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmootherSettings {
    /// The Savitzky-Golay derivatives that start the smoother's fit (the drivers' rates of
    /// the first fit).
    pub start: SavGolSettings,
    /// The bench's horizontal refined from the motion, by maximum likelihood of the smoother
    /// over a rotation of the tracks about the bench origin (auto: where the markers see the
    /// frame turn, `flexbench_kinematics::estimate::horizontal_observable`).
    pub refine_horizontal: Switch,
    /// After the smoother, the drivers other than the first refitted as Fourier series of the
    /// first (the crank angle) over every turn (steady periodic motion; auto: where the
    /// mechanism has a motor-driven crank that turns twice or more).
    pub periodic: Switch,
    /// Replicates of the recording simulated and processed to calibrate the tracks' share of
    /// the forces' bands (`crate::band_calibration`); 0: not calibrated (the smoother's,
    /// conservative where the periodic fit pools the turns).
    pub calibrate_bands: usize,
    /// The tracker's peak locking (its bias tied to the pixel grid) measured from the first
    /// fit's residuals and reported; taken out of the markers and the motion fitted again: auto
    /// (the default: where it is significant), on (whenever measured) or off (reported, and a
    /// warning where it is significant).
    pub peak_locking: Switch,
}

impl Default for SavGolSettings {
    fn default() -> Self {
        SavGolSettings {
            window: None,
            order: 5,
            edges: flexbench_signal::EdgeMode::Interp,
        }
    }
}

impl Default for SmootherSettings {
    fn default() -> Self {
        SmootherSettings {
            start: SavGolSettings::default(),
            refine_horizontal: Switch::Auto,
            periodic: Switch::Auto,
            calibrate_bands: 0,
            peak_locking: Switch::Auto,
        }
    }
}

impl Default for ProcessConfig {
    fn default() -> Self {
        ProcessConfig {
            method: ProcessMethod::Smoother(SmootherSettings::default()),
            max_condition: DEFAULT_MAX_CONDITION,
            keep_flagged: false,
            false_alarm: flexbench_contracts::flags::FALSE_ALARM,
            stabilise: false,
            frame: None,
        }
    }
}

impl ProcessConfig {
    /// The smoother's settings, None for a method through the loop's analysis.
    pub fn smoother(&self) -> Option<&SmootherSettings> {
        match &self.method {
            ProcessMethod::Smoother(s) => Some(s),
            _ => None,
        }
    }

    /// The Savitzky-Golay settings the method uses (the smoother's start, or the markers'
    /// filter), None for the Butterworth filter or the spline.
    pub fn savgol(&self) -> Option<SavGolSettings> {
        match self.method {
            ProcessMethod::Smoother(s) => Some(s.start),
            ProcessMethod::SavGol(s) => Some(s),
            ProcessMethod::Butterworth(_) | ProcessMethod::Spline(_) => None,
        }
    }

    /// The same processing without the bands' two costly shares: the bench frame's covariance
    /// and the bands' calibration (for a replicate of the recording, whose bands are not read).
    pub fn without_bands(&self) -> ProcessConfig {
        let mut cfg = ProcessConfig {
            frame: None,
            ..*self
        };
        if let Some(s) = cfg.smoother_mut() {
            s.calibrate_bands = 0;
        }
        cfg
    }

    /// The smoother's settings to change (None for another method).
    pub fn smoother_mut(&mut self) -> Option<&mut SmootherSettings> {
        match &mut self.method {
            ProcessMethod::Smoother(s) => Some(s),
            _ => None,
        }
    }

    /// The kinematics' configuration (the smoother, the horizontal's refinement, the periodic
    /// refit, the threads).
    pub fn kinematics(&self) -> flexbench_kinematics::Config {
        let s = self.smoother();
        flexbench_kinematics::Config {
            smoother: s.is_some(),
            refine_horizontal: s.map_or(Switch::Off, |s| s.refine_horizontal),
            periodic: s.map_or(Switch::Off, |s| s.periodic),
            threads: crate::threads(),
            horizontal_window_s: flexbench_kinematics::estimate::HORIZONTAL_WINDOW_S,
            horizontal_found: None,
            keep_model: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline_file::ProcessSection;

    /// One set of defaults: an empty `[process]` section converts into the stage's default
    /// configuration; each method carries its own settings, and only those.
    #[test]
    fn the_sections_method_is_the_configs() {
        assert_eq!(
            ProcessSection::default().config().unwrap(),
            ProcessConfig::default()
        );
        let read = |text: &str| -> ProcessConfig {
            let s: ProcessSection = toml::from_str(text).unwrap();
            s.config().unwrap()
        };
        let sg = read("method = \"savgol\"\nwindow = 31\norder = 3");
        let want = SavGolSettings {
            window: Some(31),
            order: 3,
            edges: flexbench_signal::EdgeMode::Interp,
        };
        assert_eq!(sg.method, ProcessMethod::SavGol(want));
        assert!(sg.smoother().is_none());
        assert_eq!(sg.kinematics().periodic, Switch::Off);
        let smoother = read("periodic = \"off\"\ncalibrate_bands = 4\nwindow = 31\norder = 3");
        let s = smoother.smoother().copied().unwrap();
        assert_eq!(
            (s.periodic, s.calibrate_bands, s.start),
            (Switch::Off, 4, want)
        );
        let bw = read("method = \"butterworth\"\ncutoff_hz = 6.0");
        assert!(matches!(bw.method, ProcessMethod::Butterworth(_)));
        assert_eq!(bw.savgol(), None);
        let e = toml::from_str::<ProcessSection>("method = \"spline\"\ncalibrate_bands = 4")
            .unwrap()
            .config()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("calibrate_bands is a setting of method = \"smoother\""),
            "{e}"
        );
    }
}
