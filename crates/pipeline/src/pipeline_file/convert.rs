//! Each section's check and conversion into its job's configuration: the one conversion the command
//! line, the Python package and `run` share, so that the three accept and refuse the same values in
//! the same words.

use super::*;

impl CalibrateSection {
    /// The nominal camera the table asks for (`nominal_camera`), checked; None for a board.
    pub fn nominal(&self) -> Result<Option<crate::calibrate::NominalCamera>, PipelineError> {
        let Some(size) = &self.nominal_camera else {
            return Ok(None);
        };
        let (width, height) = size
            .split_once(['x', 'X'])
            .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)))
            .ok_or_else(|| {
                PipelineError::Input(format!(
                    "[calibrate] nominal_camera = \"{size}\" (--nominal-camera): give the video's frame size as \"WIDTHxHEIGHT\" (e.g. \"1280x720\")"
                ))
            })?;
        let n = crate::calibrate::NominalCamera {
            width,
            height,
            focal_px: self.focal_px,
            focal_35mm: None,
            dist: self.distortion.unwrap_or([0.0; 5]),
        };
        n.intrinsics()
            .map_err(|e| PipelineError::Input(format!("[calibrate] {e}")))?;
        Ok(Some(n))
    }

    /// The calibration target the table describes, checked: a chessboard of `board` inner
    /// corners and its detector, or a ChArUco board of `charuco` squares.
    pub fn target(&self) -> Result<flexbench_vision::calibrate::Target, PipelineError> {
        use flexbench_vision::calibrate::Target;
        let bad = |m: String| PipelineError::Input(m);
        let square = self.square.ok_or_else(|| bad("[calibrate] square (--square) is missing: give the side of the board's squares in m (e.g. square = 0.03)".into()))?;
        if !(square.is_finite() && square > 0.0) {
            return Err(bad(format!("[calibrate] square = {square} (--square): give the side of a square in m, a positive number (e.g. 0.03)")));
        }
        let Some(squares) = self.charuco else {
            let (kind, window) = (self.detector, self.subpix_window);
            return Ok(Target::chessboard(self.board, square, kind, window));
        };
        let marker = self.marker.ok_or_else(|| bad("[calibrate] marker (--marker) is missing: a ChArUco board needs its markers' side in m (e.g. marker = 0.03)".into()))?;
        let dictionary = self.dictionary.ok_or_else(|| bad("[calibrate] dictionary (--dictionary) is missing: a ChArUco board needs its markers' dictionary, OpenCV's name without DICT_ (e.g. dictionary = \"4x4_50\")".into()))?;
        Target::charuco(squares, square, marker, dictionary)
            .map_err(|e| bad(format!("[calibrate]: {e}")))
    }
}

impl TrackSection {
    /// The tracker's settings from these keys: the markers (these, else the mechanism's, else
    /// M1 to M5 without a mechanism), their layout, kinds, codes and depths from the mechanism,
    /// the flags' level, the blobs' areas and the readout checked, the user's `corrections` and
    /// the clicked `templates` read; an error naming the key (and its option) out of range.
    pub fn config(
        &self,
        mech: Option<&flexbench_mechanism::Mechanism>,
        corrections: Option<&Path>,
        templates: Option<&Path>,
    ) -> Result<flexbench_vision::track::TrackConfig, PipelineError> {
        let markers = match (&self.markers, mech) {
            (Some(list), _) => list.clone(),
            (None, Some(m)) => m.markers.iter().map(|k| k.name.clone()).collect(),
            (None, None) => (1..=5).map(|i| format!("M{i}")).collect(),
        };
        let alpha = self
            .false_alarm
            .unwrap_or(flexbench_vision::track::FALSE_ALARM);
        if !(alpha > 0.0 && alpha < 0.5) {
            return Err(PipelineError::Input(format!(
                "[track] false_alarm = {alpha} (--false-alarm): give a probability between 0 and 0.5 (default 1e-6)"
            )));
        }
        let defaults = flexbench_vision::track::TrackConfig::default();
        let (min_area, max_area) = (
            self.min_area.unwrap_or(defaults.min_area),
            self.max_area.unwrap_or(defaults.max_area),
        );
        crate::track::check_areas(
            min_area,
            max_area,
            "[track] min_area (--min-area)",
            "max_area (--max-area)",
        )?;
        let readout = crate::track::check_readout(
            self.readout_s,
            self.estimate_readout,
            [
                "[track] readout_s (--readout)",
                "estimate_readout = true (--estimate-readout)",
            ],
        )?;
        let (layout, (kind, kinds), codes, depths) = match mech {
            Some(m) => (
                Some(crate::track::layout_of(m, &markers)?),
                crate::track::kind_of(m, &markers),
                crate::track::codes_of(m, &markers),
                crate::track::depths_of(m, &markers),
            ),
            None => (None, Default::default(), Vec::new(), Vec::new()),
        };
        Ok(flexbench_vision::track::TrackConfig {
            corrections: match corrections {
                Some(c) => crate::track::read_corrections(c, &markers)?,
                None => Vec::new(),
            },
            templates: match templates {
                Some(t) => crate::track::read_templates(t, &markers)?,
                None => Vec::new(),
            },
            layout,
            kind,
            kinds,
            codes,
            depths,
            estimate_depth: self.estimate_depth,
            readout,
            estimate_readout: self.estimate_readout,
            markers,
            threshold: self.threshold,
            min_area,
            max_area,
            alpha,
            timing: flexbench_vision::timebase::TimeBaseConfig {
                frame_rate: self.frame_rate,
                capture_rate: self.capture_rate,
            },
        })
    }
}

impl ProcessSection {
    /// The method with its settings from its keys (the Butterworth filter or the smoothing
    /// spline made here); an error naming a key out of range.
    fn method(&self) -> Result<crate::process::ProcessMethod, PipelineError> {
        use crate::process::{KinematicsMethod, ProcessMethod, SavGolSettings, SmootherSettings};
        let savgol = SavGolSettings {
            window: self.window,
            order: self.order,
            edges: self.edges,
        };
        Ok(match self.method {
            KinematicsMethod::Butterworth => {
                ProcessMethod::Butterworth(crate::smooth::butterworth_filter(
                    self.filter_order,
                    self.cutoff_hz,
                    self.cutoff_by,
                    self.noise_band_hz,
                )?)
            }
            KinematicsMethod::Spline => {
                if let Some(noise) = self.noise_m.filter(|n| !(n.is_finite() && *n > 0.0)) {
                    return Err(PipelineError::Input(format!("[process] noise_m = {noise}: give the markers' noise, a positive number of metres, or leave it out for GCV")));
                }
                ProcessMethod::Spline(crate::smooth::smoothing_spline(
                    self.spline_degree,
                    self.noise_m,
                )?)
            }
            KinematicsMethod::Savgol => ProcessMethod::SavGol(savgol),
            KinematicsMethod::Smoother => ProcessMethod::Smoother(SmootherSettings {
                start: savgol,
                refine_horizontal: self.refine_horizontal,
                periodic: self.periodic,
                calibrate_bands: self.calibrate_bands,
                peak_locking: self.peak_locking,
            }),
        })
    }

    /// Refuse a key that belongs to another method than the one asked (it would be read and
    /// ignored): the Butterworth's keys without `method = "butterworth"`, the spline's without
    /// `"spline"`, a refit switched `on` or the bands' calibration asked without the smoother
    /// (`auto` is off there). The
    /// Savitzky-Golay keys belong to every method: its derivatives start the smoother's fit.
    fn check_method_keys(&self) -> Result<(), PipelineError> {
        use crate::process::KinematicsMethod as M;
        let set = |name: &'static str, is: bool, method: M| {
            (is && self.method != method).then_some((name, method))
        };
        let stray = [
            set("filter_order", self.filter_order.is_some(), M::Butterworth),
            set("cutoff_hz", self.cutoff_hz.is_some(), M::Butterworth),
            set("cutoff_by", self.cutoff_by.is_some(), M::Butterworth),
            set(
                "noise_band_hz",
                self.noise_band_hz.is_some(),
                M::Butterworth,
            ),
            set("spline_degree", self.spline_degree.is_some(), M::Spline),
            set("noise_m", self.noise_m.is_some(), M::Spline),
            set("periodic", self.periodic == Switch::On, M::Smoother),
            set(
                "refine_horizontal",
                self.refine_horizontal == Switch::On,
                M::Smoother,
            ),
            set("peak_locking", self.peak_locking == Switch::On, M::Smoother),
            set("calibrate_bands", self.calibrate_bands > 0, M::Smoother),
        ];
        match stray.into_iter().flatten().next() {
            Some((key, method)) => Err(PipelineError::Input(format!(
                "[process] {key} is a setting of method = \"{}\", and the method is \"{}\": leave {key} out or set the method",
                method, self.method,
            ))),
            None => Ok(()),
        }
    }

    /// The process stage's configuration from these keys; an error naming a key out of range
    /// (the pipeline file's `[process]` table, or the Python package's keyword arguments).
    pub fn config(&self) -> Result<crate::ProcessConfig, PipelineError> {
        let bad = |m: String| Err(PipelineError::Input(m));
        if !(self.max_condition.is_finite() && self.max_condition > 1.0) {
            return bad(format!(
                "[process] max_condition = {}: give a condition number above 1 (default 1e8)",
                self.max_condition
            ));
        }
        if !(self.false_alarm > 0.0 && self.false_alarm < 0.5) {
            return bad(format!(
                "[process] false_alarm = {}: give a probability between 0 and 0.5 (default 1e-6)",
                self.false_alarm
            ));
        }
        self.check_method_keys()?;
        Ok(crate::ProcessConfig {
            method: self.method()?,
            max_condition: self.max_condition,
            keep_flagged: self.keep_flagged,
            false_alarm: self.false_alarm,
            stabilise: self.stabilise,
            frame: None,
        })
    }
}

impl FemSection {
    /// Check the keys' ranges: at least one element and one mode, a positive step, a damping
    /// ratio between 0 and 1; an error naming the keys and their defaults.
    pub fn check(&self) -> Result<(), PipelineError> {
        if self.elements < 1 || self.modes < 1 {
            return Err(PipelineError::Input(format!("[fem] elements = {}, modes = {}: give at least one element and one mode (defaults 10 and 6)", self.elements, self.modes)));
        }
        if !(self.step.is_finite() && self.step > 0.0 && self.damping > 0.0 && self.damping < 1.0) {
            return Err(PipelineError::Input(format!("[fem] step = {} s, damping = {}: give a positive step (default 5e-5 s) and a damping ratio between 0 and 1 (for the modes only, response = false)", self.step, self.damping)));
        }
        Ok(())
    }

    /// The fem job's configuration from these keys (checked), with the measured deflection
    /// (the process stage's fit_residuals table) to compare the forced response with.
    pub fn config(
        &self,
        measured: Option<PathBuf>,
    ) -> Result<crate::fem::FemConfig, PipelineError> {
        self.check()?;
        Ok(crate::fem::FemConfig {
            element: self.element,
            elements: self.elements,
            supports: self.supports,
            modes: self.modes,
            damping: self.response.then_some(self.damping),
            max_step: self.step,
            measured,
        })
    }
}

impl CompareSection {
    /// Check the keys: at least one harmonic, and the measured table's reading (its columns,
    /// offset, cutoff and lag as the compare job checks them).
    pub fn check(&self) -> Result<(), PipelineError> {
        if self.harmonics < 1 {
            return Err(PipelineError::Input("[compare] harmonics = 0: keep at least one harmonic of the crank angle (default 20)".into()));
        }
        crate::compare_measured::check_spec(&self.measured_spec())
    }

    /// The measured table `table` with how it is read; refused when a key that reads it is set
    /// without it (the command line and the Python package, where the table is given by hand).
    pub fn measured<'a>(
        &self,
        table: Option<&'a Path>,
    ) -> Result<Option<(&'a Path, crate::compare_measured::MeasuredSpec)>, PipelineError> {
        let reads = !self.measured_columns.is_empty()
            || self.measured_time.is_some()
            || self.measured_cutoff_hz.is_some();
        match table {
            Some(t) => Ok(Some((t, self.measured_spec()))),
            None if reads => Err(PipelineError::Input(
                "[compare] measured_columns, measured_time and measured_cutoff_hz (--measured-column, --measured-time, --measured-cutoff) read a measured table: give it (--measured, or measured = in Python)".into(),
            )),
            None => Ok(None),
        }
    }

    /// How the measured table is read: the command line's `--measured-*` options.
    pub fn measured_spec(&self) -> crate::compare_measured::MeasuredSpec {
        crate::compare_measured::MeasuredSpec {
            time: self.measured_time.clone(),
            columns: self.measured_columns.clone(),
            time_offset_s: self.measured_offset_s,
            cutoff_hz: self.measured_cutoff_hz,
            max_lag_s: self.max_lag_s,
        }
    }
}

impl IdentifySection {
    /// Whether the section is the default one (the stage off, nothing set).
    pub fn is_off(&self) -> bool {
        *self == IdentifySection::default()
    }

    /// What the identify job is asked, the measured table read as `compare` says; refused when
    /// enabled with nothing set free, or as [`crate::identify::IdentifySpec::check`] refuses.
    pub fn spec(
        &self,
        compare: &CompareSection,
    ) -> Result<crate::identify::IdentifySpec, PipelineError> {
        if self.enabled && self.free.is_empty() {
            return Err(PipelineError::Input(
                "[identify] enabled = true sets no number free: give free = [\"k\", \"mw\", ...], the mechanism file's keys to identify".into(),
            ));
        }
        let spec = crate::identify::IdentifySpec {
            free: self.free.clone(),
            free_offset: self.free_offset,
            measured_columns: compare.measured_columns.clone(),
            measured_time: compare.measured_time.clone(),
            measured_offset_s: compare.measured_offset_s,
            measured_cutoff_hz: compare.measured_cutoff_hz,
            cutoff_hz: self.cutoff_hz,
            unfiltered: self.unfiltered,
            bootstrap: self.bootstrap,
            seed: self.seed,
        };
        if self.enabled {
            spec.check()?;
        }
        Ok(spec)
    }
}
