//! The pipeline file (`flexbench run PIPELINE.toml`): its tables, one per stage, each key
//! checked by name and type; the defaults every stage runs with (pipelines/default.toml
//! documents every key).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use flexbench_contracts::names::Switch;

use crate::smooth::SmoothSettings;
use crate::PipelineError;

/// The pipeline file: one table per stage, every key optional but `[run] mechanism`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineFile {
    /// What to run on and where to write.
    pub run: RunSection,
    /// Where the recording's files are, when not in a recording folder's usual places.
    pub inputs: Inputs,
    /// Camera calibration from chessboard views.
    pub calibrate: CalibrateSection,
    /// Marker tracking in the video.
    pub track: TrackSection,
    /// The signal stage on the markers alone (model-free velocities and accelerations).
    pub smooth: SmoothSettings,
    /// Kinematics of the mechanism and inverse dynamics.
    pub process: ProcessSection,
    /// The overlay video.
    pub overlay: OverlaySection,
    /// The elastic lever: modes along the cycle, forced response.
    pub fem: FemSection,
    /// Measured against simulated.
    pub compare: CompareSection,
    /// The mechanism file's uncertain numbers identified from the recording (off by default).
    #[serde(skip_serializing_if = "IdentifySection::is_off")]
    pub identify: IdentifySection,
    /// The report.
    pub report: ReportSection,
}

/// `[run]`: the mechanism, the recording(s) and the output directory. Paths are relative to the
/// pipeline file's folder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSection {
    /// Mechanism file (TOML): the bench's bodies, joints, forces and markers.
    pub mechanism: Option<PathBuf>,
    /// A recording folder: `video.*`, `views/`, `plane-view.png`, `clicks.toml` (or a
    /// `tracks.csv` / `tracks.parquet`), each replaceable by `[inputs]`.
    pub recording: Option<PathBuf>,
    /// A batch: recording folders, or folders holding recording folders.
    pub recordings: Vec<PathBuf>,
    /// Output directory (one sub-folder per recording in a batch); default `out/<file stem>`
    /// beside the working directory.
    pub out: Option<PathBuf>,
    /// Recordings run at once in a batch; default: the machine's cores.
    pub jobs: Option<usize>,
}

/// `[inputs]`: the recording's files where they are not in the recording folder's usual places
/// (relative to the pipeline file's folder; in a batch, a `recording.toml` in each recording
/// folder may hold an `[inputs]` table relative to that folder).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Inputs {
    /// The video.
    pub video: Option<PathBuf>,
    /// A calibration file to reuse (OpenCV YAML with the bench plane): no calibrate stage.
    pub calibration: Option<PathBuf>,
    /// Folder of chessboard views.
    pub views: Option<PathBuf>,
    /// A view of the board lying in the lever's plane.
    pub plane_view: Option<PathBuf>,
    /// TOML with the pixels `origin = [u, v]` (A) and `horizontal = [u, v]`.
    pub clicks: Option<PathBuf>,
    /// Clicked points of known bench position (`points.toml`) for the bench frame instead of
    /// the plane view and its clicks (default: the folder's `points.toml`, if there).
    pub points: Option<PathBuf>,
    /// A tracks table instead of the video: flexbench's long format (frame, t, marker, u, v, x,
    /// y) or a wide CSV (one row per frame, `<marker>_x`, `<marker>_y` columns, NaN for gaps).
    pub tracks: Option<PathBuf>,
    /// Unit of a wide CSV's coordinates: m, mm, cm, in (bench frame) or px (image pixels,
    /// mapped to the bench plane by the calibration).
    pub tracks_unit: Option<String>,
    /// Frame rate of a wide CSV without a time column, frames/s.
    pub tracks_fps: Option<f64>,
    /// The wide CSV's markers renamed to the mechanism's, in the file's column order.
    pub tracks_markers: Option<Vec<String>>,
    /// The user's corrections of the tracking (default: `corrections.toml` in the recording
    /// folder, when it is there).
    pub corrections: Option<PathBuf>,
    /// The features clicked once for markers of the template kind (`[[template]]` tables of
    /// `marker`, `frame`, `pixel = [u, v]`, `half_size`; default: `templates.toml` in the
    /// recording folder, when it is there).
    pub templates: Option<PathBuf>,
    /// A table the rig measured on its own clock (joint torques or forces: a motor's current, a
    /// load cell), compared with the computed ones by the compare stage (default:
    /// `measured.csv` in the recording folder, when it is there); read as `[compare]` says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<PathBuf>,
}

/// `[calibrate]`: the chessboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CalibrateSection {
    /// Inner corners, "COLSxROWS".
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_name",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub board: flexbench_vision::calibrate::BoardCorners,
    /// Side of a square, m.
    pub square: Option<f64>,
    /// The corners' detector: "sb" (findChessboardCornersSB, default) or "classic"
    /// (findChessboardCorners and cornerSubPix).
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_name",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub detector: flexbench_vision::calibrate::DetectorKind,
    /// cornerSubPix half-window, px (default: from the board's size in the image).
    pub subpix_window: Option<i32>,
    /// A ChArUco board instead of a chessboard: its squares, "SQUARES_XxSQUARES_Y" (`board`,
    /// `detector` and `subpix_window` then unused; `square` its squares' side), with `marker`
    /// and `dictionary`.
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_opt_name",
        serialize_with = "flexbench_contracts::names::ser_opt_name",
        skip_serializing_if = "Option::is_none"
    )]
    pub charuco: Option<flexbench_vision::calibrate::BoardCorners>,
    /// The ChArUco markers' side, m.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker: Option<f64>,
    /// The ChArUco markers' dictionary, OpenCV's name without DICT_ ("4x4_50", "6x6_250", ...).
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_opt_name",
        serialize_with = "flexbench_contracts::names::ser_opt_name",
        skip_serializing_if = "Option::is_none"
    )]
    pub dictionary: Option<flexbench_vision::charuco::Dictionary>,
    /// No board: a nominal camera for frames of "WIDTHxHEIGHT" px, its plane from the clicked
    /// points (`[inputs] points`, or the folder's `points.toml`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominal_camera: Option<String>,
    /// The nominal camera's focal length, px (default: the frame's larger side, assumed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focal_px: Option<f64>,
    /// The nominal camera's distortion [k1, k2, p1, p2, k3] (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distortion: Option<[f64; 5]>,
    /// The bench plane and the lens's radial distortion from the recording itself: the video
    /// tracked with the calibration above (the start, its stages `calibrate-start` and
    /// `track-start`), the camera fitted to the motion through the mechanism
    /// (`calibrate --from-motion`), and the video tracked again with it (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_motion: bool,
}

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
                    "[calibrate] nominal_camera = \"{size}\": give the video's frame size as \"WIDTHxHEIGHT\" (e.g. \"1280x720\")"
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
        let square = self.square.ok_or_else(|| bad("[calibrate] square is missing: give the side of the board's squares in m (e.g. square = 0.03)".into()))?;
        if !(square.is_finite() && square > 0.0) {
            return Err(bad(format!("[calibrate] square = {square}: give the side of a square in m, a positive number (e.g. 0.03)")));
        }
        let Some(squares) = self.charuco else {
            let (kind, window) = (self.detector, self.subpix_window);
            return Ok(Target::chessboard(self.board, square, kind, window));
        };
        let marker = self.marker.ok_or_else(|| bad("[calibrate] marker is missing: a ChArUco board needs its markers' side in m (e.g. marker = 0.03)".into()))?;
        let dictionary = self.dictionary.ok_or_else(|| bad("[calibrate] dictionary is missing: a ChArUco board needs its markers' dictionary, OpenCV's name without DICT_ (e.g. dictionary = \"4x4_50\")".into()))?;
        Target::charuco(squares, square, marker, dictionary)
            .map_err(|e| bad(format!("[calibrate]: {e}")))
    }
}

impl Default for CalibrateSection {
    fn default() -> Self {
        CalibrateSection {
            board: flexbench_vision::calibrate::BoardCorners { cols: 9, rows: 6 },
            square: None,
            detector: Default::default(),
            subpix_window: None,
            charuco: None,
            marker: None,
            dictionary: None,
            nominal_camera: None,
            focal_px: None,
            distortion: None,
            from_motion: false,
        }
    }
}

/// `[track]`: the markers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[derive(Default)]
pub struct TrackSection {
    /// Marker names along the lever from B (default: the mechanism's markers).
    pub markers: Option<Vec<String>>,
    /// Segmentation threshold, grey level (default: halfway between median and maximum).
    pub threshold: Option<f64>,
    /// False-alarm level of each test of the tracked samples (default 1e-6).
    pub false_alarm: Option<f64>,
    /// Smallest marker blob kept, px of area (default 6).
    pub min_area: Option<f64>,
    /// Largest marker blob kept, px of area (default 5000: a disc 80 px across).
    pub max_area: Option<f64>,
    /// The markers' depth in front of the bench plane estimated from their rigid patterns'
    /// spacings and used (default false: the mechanism file's depths, the estimate reported).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimate_depth: bool,
    /// A rolling shutter's readout, s: the time from the first row's exposure to the last's (the
    /// camera's data sheet; default none: a global shutter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readout_s: Option<f64>,
    /// A rolling shutter's readout estimated from the rigid patterns' deformation with the
    /// motion and used (default false: the readout given, the estimate reported).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimate_readout: bool,
    /// Playback frame rate, frames/s: frames evenly spaced at it instead of the file's
    /// timestamps (needed for a file without timestamps).
    pub frame_rate: Option<f64>,
    /// Capture frame rate of a slow-motion recording, frames/s (default: the file's metadata,
    /// else the playback rate).
    pub capture_rate: Option<f64>,
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

/// `[process]`: kinematics and inverse dynamics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProcessSection {
    /// smoother (Kalman smoother on the driving coordinates), savgol, butterworth or spline
    /// (each marker filtered through the loop's analysis).
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_name",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub method: crate::process::KinematicsMethod,
    /// Drivers refitted as Fourier series of the crank angle (steady periodic motion): auto
    /// (where the mechanism has a motor-driven crank that turns twice or more), on or off (true
    /// and false read as on and off).
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_switch",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub periodic: Switch,
    /// The bench's horizontal refined from the motion (on the recording's first 10 s): auto
    /// (where the markers see the frame turn: two ground pins, or a slide), on or off.
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_switch",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub refine_horizontal: Switch,
    /// With the smoother: the tracker's peak locking (its bias tied to the pixel grid) taken out
    /// of the markers and the motion fitted again: auto (the default: where significant), on,
    /// or off (measured, reported and warned of where significant).
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_switch",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub peak_locking: Switch,
    /// Savitzky-Golay window (samples, odd), with method savgol.
    pub window: Option<usize>,
    /// Savitzky-Golay order, with method savgol.
    pub order: usize,
    /// Savitzky-Golay edges: interp, mirror, nearest, constant, wrap.
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_name",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub edges: flexbench_signal::EdgeMode,
    /// Butterworth: order of each pass (default 2). Written only when set, as the three
    /// below, so that the default keeps the records of runs before them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_order: Option<usize>,
    /// Butterworth: the cutoff, Hz (else chosen per coordinate by `cutoff_by`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cutoff_hz: Option<f64>,
    /// Butterworth: "residual" (Winter's residual analysis, the default) or "durbin-watson".
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flexbench_contracts::names::de_opt_name",
        serialize_with = "flexbench_contracts::names::ser_opt_name"
    )]
    pub cutoff_by: Option<crate::smooth::CutoffCriterion>,
    /// Butterworth with the residual analysis: the noise line's band, Hz.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_band_hz: Option<[f64; 2]>,
    /// Smoothing spline: its odd degree (default 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spline_degree: Option<usize>,
    /// Smoothing spline: the markers' noise, m, for its known-noise choice (else GCV).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_m: Option<f64>,
    /// Condition number above which a sample is a toggle position.
    pub max_condition: f64,
    /// The tracked samples the track stage flagged, and those that fail the fitted mechanism's
    /// residual test, kept in the fit (default: left out).
    pub keep_flagged: bool,
    /// False-alarm level of the fitted mechanism's residual test (default 1e-6).
    pub false_alarm: f64,
    /// Every marker measured against the markers held at ground pins, for a camera that moved
    /// (default false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stabilise: bool,
    /// With the smoother: replicates of the recording simulated and processed to calibrate the
    /// tracks' share of the forces' bands (default 0: not calibrated, the smoother's bands).
    #[serde(skip_serializing_if = "no_replicates")]
    pub calibrate_bands: usize,
}

/// Whether no replicate is asked (the key left out of the stage's parameters at its default,
/// so that runs before it keep their cache).
fn no_replicates(n: &usize) -> bool {
    *n == 0
}

impl ProcessSection {
    /// The Butterworth filter or the smoothing spline its method asks for (neither for the
    /// smoother or Savitzky-Golay), from its keys; an error naming a key out of range.
    fn marker_filter(
        &self,
    ) -> Result<
        (
            Option<flexbench_signal::Butterworth>,
            Option<flexbench_signal::GcvSpline>,
        ),
        PipelineError,
    > {
        use crate::process::KinematicsMethod;
        match self.method {
            KinematicsMethod::Butterworth => Ok((
                Some(crate::smooth::butterworth_filter(
                    self.filter_order,
                    self.cutoff_hz,
                    self.cutoff_by,
                    self.noise_band_hz,
                )?),
                None,
            )),
            KinematicsMethod::Spline => {
                if let Some(noise) = self.noise_m.filter(|n| !(n.is_finite() && *n > 0.0)) {
                    return Err(PipelineError::Input(format!("[process] noise_m = {noise}: give the markers' noise, a positive number of metres, or leave it out for GCV")));
                }
                Ok((
                    None,
                    Some(crate::smooth::smoothing_spline(
                        self.spline_degree,
                        self.noise_m,
                    )?),
                ))
            }
            KinematicsMethod::Smoother | KinematicsMethod::Savgol => Ok((None, None)),
        }
    }

    /// Refuse a key that belongs to another method than the one asked (it would be read and
    /// ignored): the Butterworth's keys without `method = "butterworth"`, the spline's without
    /// `"spline"`, and a refit switched `on` without the smoother (`auto` is off there). The
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
        let (edges, smoother) = (
            self.edges,
            self.method == crate::process::KinematicsMethod::Smoother,
        );
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
        let (butterworth, spline) = self.marker_filter()?;
        Ok(crate::ProcessConfig {
            window: self.window,
            order: self.order,
            edges,
            max_condition: self.max_condition,
            smoother,
            butterworth,
            spline,
            periodic: if smoother { self.periodic } else { Switch::Off },
            refine_horizontal: if smoother {
                self.refine_horizontal
            } else {
                Switch::Off
            },
            keep_flagged: self.keep_flagged,
            false_alarm: self.false_alarm,
            stabilise: self.stabilise,
            frame: None,
            calibrate_bands: self.calibrate_bands,
            peak_locking: if smoother {
                self.peak_locking
            } else {
                Switch::Off
            },
        })
    }
}

impl Default for ProcessSection {
    fn default() -> Self {
        let d = crate::ProcessConfig::default();
        ProcessSection {
            method: crate::process::KinematicsMethod::Smoother,
            periodic: d.periodic,
            refine_horizontal: d.refine_horizontal,
            peak_locking: d.peak_locking,
            window: None,
            order: d.order,
            edges: flexbench_signal::EdgeMode::Interp,
            filter_order: None,
            cutoff_hz: None,
            cutoff_by: None,
            noise_band_hz: None,
            spline_degree: None,
            noise_m: None,
            max_condition: d.max_condition,
            keep_flagged: false,
            false_alarm: d.false_alarm,
            stabilise: d.stabilise,
            calibrate_bands: d.calibrate_bands,
        }
    }
}

/// `[fem]`: the elastic lever.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemSection {
    /// Elements along the lever.
    pub elements: usize,
    /// quintic or frame.
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_name",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub element: flexbench_fem::ElementKind,
    /// pinned, clamped-free or free-free.
    #[serde(
        deserialize_with = "flexbench_contracts::names::de_name",
        serialize_with = "flexbench_contracts::names::ser_name"
    )]
    pub supports: flexbench_fem::Supports,
    /// Modes followed along the cycle.
    pub modes: usize,
    /// Damping ratio of the forced response (between 0 and 1, exclusive).
    pub damping: f64,
    /// Compute the forced response (false: the modes only). Written only when false, so that
    /// the default keeps the records of runs before it.
    #[serde(skip_serializing_if = "is_true")]
    pub response: bool,
    /// Longest integration step of the forced response, s.
    pub step: f64,
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

impl Default for FemSection {
    fn default() -> Self {
        FemSection {
            elements: 10,
            element: flexbench_fem::ElementKind::Quintic,
            supports: flexbench_fem::Supports::Pinned,
            modes: 6,
            damping: crate::fem::DEFAULT_DAMPING,
            response: true,
            step: crate::fem::DEFAULT_STEP,
        }
    }
}

/// Whether a flag is set (serde's `skip_serializing_if` of a flag true by default).
fn is_true(b: &bool) -> bool {
    *b
}

/// `[overlay]`: the recording with the tracked markers, the flagged samples and the fitted
/// mechanism drawn on it (a run from a video only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OverlaySection {
    /// Whether the run draws it (default: yes; it costs about one decoding and one encoding).
    pub enabled: bool,
}

impl Default for OverlaySection {
    fn default() -> Self {
        OverlaySection { enabled: true }
    }
}

/// `[compare]`: measured against simulated (where the mechanism has a motor-driven crank), and
/// the computed forces against the rig's measured table (`[inputs] measured`), read as the
/// `measured_*` keys say (the command line's `--measured-*` options). The keys left at their
/// defaults are not written in the run's records, which stay those of runs before them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompareSection {
    /// Harmonics of the crank angle kept for every quantity.
    pub harmonics: usize,
    /// Measured column -> the forces table's column it measures (`{ torque = "motor_torque" }`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub measured_columns: BTreeMap<String, String>,
    /// The measured table's time column, s (default `t`, else `time`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_time: Option<String>,
    /// Added to the measured times to put them on the recording's clock, s.
    #[serde(skip_serializing_if = "is_zero")]
    pub measured_offset_s: f64,
    /// The measured series low-passed at this frequency (zero-lag Butterworth), Hz.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_cutoff_hz: Option<f64>,
    /// The largest lag of the measurement searched, s.
    #[serde(skip_serializing_if = "is_default_lag")]
    pub max_lag_s: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_default_lag(x: &f64) -> bool {
    *x == crate::compare_measured::DEFAULT_MAX_LAG_S
}

impl Default for CompareSection {
    fn default() -> Self {
        CompareSection {
            harmonics: crate::compare::DEFAULT_HARMONICS,
            measured_columns: BTreeMap::new(),
            measured_time: None,
            measured_offset_s: 0.0,
            measured_cutoff_hz: None,
            max_lag_s: crate::compare_measured::DEFAULT_MAX_LAG_S,
        }
    }
}

impl CompareSection {
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

/// `[identify]`: the mechanism file's numbers named in `free` identified from the processed
/// recording (and the rig's measured table, read by `[compare]`'s `measured_*` keys), then
/// `process` and `compare` run again with the identified file, before and after side by side
/// in the report (the `flexbench identify` command's options, by the same names). Off by
/// default; a run without it keeps the records of runs before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdentifySection {
    /// Whether the run identifies (default: no).
    pub enabled: bool,
    /// The file's numbers set free, by key (`k`, `mw`, `joints.axle.friction.viscous`).
    pub free: Vec<String>,
    /// Whether each measured column's offset is identified with them (default: yes).
    pub free_offset: bool,
    /// Both sides of the equations low-passed at this frequency, Hz (default: 20 Hz, or a
    /// quarter of the sampling rate if lower).
    pub cutoff_hz: Option<f64>,
    /// The equations fitted as they are, not low-passed.
    pub unfiltered: bool,
    /// Replicates of the parametric bootstrap, processed with this file's `[process]` (default:
    /// 10 where the mechanism has a motor-driven crank and no measured table is given, none
    /// otherwise; 0: none).
    pub bootstrap: Option<usize>,
    /// The bootstrap's first noise seed.
    pub seed: u64,
}

impl Default for IdentifySection {
    fn default() -> Self {
        let spec = crate::identify::IdentifySpec::default();
        IdentifySection {
            enabled: false,
            free: spec.free,
            free_offset: spec.free_offset,
            cutoff_hz: spec.cutoff_hz,
            unfiltered: spec.unfiltered,
            bootstrap: spec.bootstrap,
            seed: spec.seed,
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

/// `[report]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportSection {
    /// Title of the report (default: the recording's folder name).
    pub title: Option<String>,
    /// Also every table as CSV with a units row under the names, in `report/tables/`
    /// (`<stage>_<table>.csv`; the stages' own CSV files keep the contract's single header).
    /// Written only when set, so that the default keeps the records of runs before it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub csv_units: bool,
}

impl PipelineFile {
    /// Read and check a pipeline file: unknown tables or keys and wrong types are refused by
    /// name, with the keys that exist.
    pub fn load(path: &Path) -> Result<PipelineFile, PipelineError> {
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => PipelineError::Input(format!(
                "{}: not UTF-8 text; save the pipeline file as UTF-8",
                path.display()
            )),
            _ => PipelineError::Input(format!(
                "{}: cannot be read ({e}); give the pipeline file's path",
                path.display()
            )),
        })?;
        toml::from_str(&text).map_err(|source| PipelineError::Toml {
            what: path.display().to_string(),
            source,
        })
    }
}
