//! `flexbench run PIPELINE.toml`: the whole chain for one recording, from its video (or a tracks
//! table from any tool) to the report: calibrate (or reuse a calibration) -> track (or import)
//! -> smooth -> process (kinematics, inverse dynamics) -> fem -> compare -> report.
//!
//! Every stage writes into its own folder of the run's output directory, first into a temporary
//! folder that replaces the old one only when the stage succeeded, so a failure loses nothing.
//! Each stage's folder holds `stage.json`: the key of the stage (SHA-256 over the flexbench
//! build, the stage's parameters and the bytes of every input, earlier stages' outputs
//! included) and the SHA-256 of each file it wrote. A stage whose key is unchanged and whose
//! files are intact is not run again; a changed parameter reruns its stage, and the stages after
//! it only where its outputs changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use flexbench_contracts::manifest::{InputFile, Manifest, StageEntry};
use flexbench_contracts::names::Switch;
use flexbench_mechanism::Mechanism;

use crate::report::ReportRecord;
use crate::smooth::SmoothSettings;
use crate::StageRecord;
use crate::{io_error, PipelineError};
use crate::{StageEvent, StageWarning};

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
}

impl CalibrateSection {
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
    /// Playback frame rate, frames/s: frames evenly spaced at it instead of the file's
    /// timestamps (needed for a file without timestamps).
    pub frame_rate: Option<f64>,
    /// Capture frame rate of a slow-motion recording, frames/s (default: the file's metadata,
    /// else the playback rate).
    pub capture_rate: Option<f64>,
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

/// One recording's files, resolved to paths that exist.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingInputs {
    /// Name of the recording (its folder's name).
    pub name: String,
    /// Where the tracks come from.
    pub source: TracksSource,
    /// The mechanism file.
    pub mechanism: PathBuf,
    /// The rig's measured table, when there is one.
    pub measured: Option<PathBuf>,
    /// Seed of a rendered recording (its `camera.toml`), recorded in the manifest.
    pub seed: Option<u64>,
}

/// Where a run's tracks come from.
#[derive(Debug, Clone, PartialEq)]
pub enum TracksSource {
    /// A video tracked here, with a calibration made here or reused.
    Video {
        /// The video.
        video: PathBuf,
        /// The calibration.
        calibration: CalibrationSource,
        /// The user's corrections of the tracking, when there are any.
        corrections: Option<PathBuf>,
    },
    /// A tracks table made elsewhere (long contract format or wide CSV).
    Table {
        /// The table.
        tracks: PathBuf,
        /// A calibration, for a wide CSV in pixels.
        calibration: Option<CalibrationSource>,
    },
}

/// Where a run's calibration comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum CalibrationSource {
    /// A calibration file reused as it is.
    File(PathBuf),
    /// Chessboard views calibrated here, with the bench plane's files.
    Views {
        /// Folder of views.
        views: PathBuf,
        /// Where the bench plane comes from.
        plane: PlaneFiles,
    },
}

/// The files the bench plane comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PlaneFiles {
    /// The board in the lever's plane (`plane-view.png`) and the clicked pixels of A and the
    /// horizontal (`clicks.toml`).
    Board {
        /// The plane view.
        plane_view: PathBuf,
        /// The clicks.
        clicks: PathBuf,
    },
    /// Clicked points of known bench position (`points.toml`).
    Points(PathBuf),
}

impl PlaneFiles {
    /// The stage's inputs: (name, file).
    fn inputs(&self) -> Vec<(&'static str, &Path)> {
        match self {
            PlaneFiles::Board { plane_view, clicks } => {
                vec![
                    ("plane_view", plane_view.as_path()),
                    ("clicks", clicks.as_path()),
                ]
            }
            PlaneFiles::Points(points) => vec![("points", points.as_path())],
        }
    }
}

fn find_video(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            let ext = p
                .extension()
                .map(|s| s.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            stem == "video" && ["mp4", "avi", "mkv", "mov", "m4v", "webm"].contains(&ext.as_str())
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

impl RecordingInputs {
    /// Resolve a recording's inputs: `inputs` (relative to `base`) first, then the recording
    /// folder's usual files. Says which file is missing and how to give it.
    pub fn resolve(
        name: &str,
        folder: Option<&Path>,
        inputs: &Inputs,
        base: &Path,
        mechanism: &Path,
    ) -> Result<RecordingInputs, PipelineError> {
        if let Some(d) = folder.filter(|d| !d.is_dir()) {
            return Err(PipelineError::Input(format!("recording {name}: the recording folder {} does not exist; check [run] recording (paths are relative to the pipeline file)", d.display())));
        }
        let look = Lookup { name, folder, base };
        let tracks = match look.given(&inputs.tracks) {
            Some(t) => Some(look.exists(t, "tracks")?),
            None => None,
        };
        let video = match look.given(&inputs.video) {
            Some(v) => Some(look.exists(v, "video")?),
            None if tracks.is_none() => folder.and_then(find_video),
            None => None,
        };
        let tracks = tracks.or_else(|| {
            if video.is_none() {
                look.usual("tracks.parquet")
                    .or_else(|| look.usual("tracks.csv"))
            } else {
                None
            }
        });
        let source = match (video, tracks) {
            (Some(video), _) => TracksSource::Video {
                video,
                calibration: look.calibration(inputs)?,
                corrections: match look.given(&inputs.corrections) {
                    Some(c) => Some(look.exists(c, "corrections")?),
                    None => look.usual("corrections.toml"),
                },
            },
            (None, Some(tracks)) => {
                let px = inputs.tracks_unit.as_deref() == Some("px");
                TracksSource::Table {
                    tracks,
                    calibration: if px {
                        Some(look.calibration(inputs)?)
                    } else {
                        None
                    },
                }
            }
            (None, None) => {
                return Err(look.missing(
                    "video or tracks table",
                    "video or tracks",
                    "video.mp4 (or .avi, .mkv, .mov)",
                ))
            }
        };
        let seed = folder
            .and_then(|d| std::fs::read_to_string(d.join("camera.toml")).ok())
            .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
            .and_then(|t| t.get("seed").and_then(|s| s.as_integer()))
            .map(|s| s as u64);
        let measured = match look.given(&inputs.measured) {
            Some(m) => Some(look.exists(m, "measured")?),
            None => look.usual("measured.csv"),
        };
        Ok(RecordingInputs {
            name: name.to_string(),
            source,
            mechanism: mechanism.to_path_buf(),
            measured,
            seed,
        })
    }
}

/// Where a recording's inputs are looked up: the `[inputs]` paths (relative to `base`) and
/// the recording folder's usual files; its errors name the recording and how to give a file.
struct Lookup<'a> {
    name: &'a str,
    folder: Option<&'a Path>,
    base: &'a Path,
}

impl Lookup<'_> {
    /// A path given in `[inputs]`, from the pipeline file's folder.
    fn given(&self, p: &Option<PathBuf>) -> Option<PathBuf> {
        p.as_ref().map(|p| clean_path(&self.base.join(p)))
    }

    /// The recording folder's file `f`, when it is there.
    fn usual(&self, f: &str) -> Option<PathBuf> {
        self.folder.map(|d| d.join(f)).filter(|p| p.exists())
    }

    /// The error of an input found nowhere: `what` it is, the `[inputs]` key and the usual file.
    fn missing(&self, what: &str, key: &str, usual: &str) -> PipelineError {
        let name = self.name;
        PipelineError::Input(match self.folder {
            Some(d) => format!("recording {name}: no {what}; put {usual} in the recording folder ({}) or give [inputs] {key} in the pipeline file", d.display()),
            None => format!("recording {name}: no {what}; give [run] recording (a folder with {usual}) or [inputs] {key} in the pipeline file"),
        })
    }

    /// A given path, or the error that it does not exist.
    fn exists(&self, p: PathBuf, key: &str) -> Result<PathBuf, PipelineError> {
        if p.exists() {
            Ok(p)
        } else {
            Err(PipelineError::Input(format!(
                "recording {}: [inputs] {key} = {}: no such file or folder",
                self.name,
                p.display()
            )))
        }
    }

    /// The calibration: a file given, or views with the plane view and the clicks (given or
    /// the folder's), or the folder's calibration file.
    fn calibration(&self, inputs: &Inputs) -> Result<CalibrationSource, PipelineError> {
        if let Some(c) = self.given(&inputs.calibration) {
            return Ok(CalibrationSource::File(self.exists(c, "calibration")?));
        }
        let views = match self.given(&inputs.views) {
            Some(v) => self.exists(v, "views")?,
            None => match self.usual("views") {
                Some(v) => v,
                None => match self.usual("calibration.yaml") {
                    Some(c) => return Ok(CalibrationSource::File(c)),
                    None => {
                        return Err(self.missing(
                            "calibration",
                            "calibration (a file) or views",
                            "views/ (chessboard views) or calibration.yaml",
                        ))
                    }
                },
            },
        };
        let points = match self.given(&inputs.points) {
            Some(p) => Some(self.exists(p, "points")?),
            None => self.usual("points.toml"),
        };
        let plane = match points {
            Some(points) => PlaneFiles::Points(points),
            None => PlaneFiles::Board {
                plane_view: self.given_or_usual(
                    &inputs.plane_view,
                    "plane_view",
                    "plane-view.png",
                    "view of the board in the lever's plane (or points.toml)",
                )?,
                clicks: self.given_or_usual(
                    &inputs.clicks,
                    "clicks",
                    "clicks.toml",
                    "clicked pixels of A and the horizontal (or points.toml)",
                )?,
            },
        };
        Ok(CalibrationSource::Views { views, plane })
    }

    /// The file given as `[inputs] key`, else the folder's `usual` one; else the error that
    /// the `what` is missing.
    fn given_or_usual(
        &self,
        p: &Option<PathBuf>,
        key: &str,
        usual: &str,
        what: &str,
    ) -> Result<PathBuf, PipelineError> {
        match self.given(p) {
            Some(p) => self.exists(p, key),
            None => self
                .usual(usual)
                .ok_or_else(|| self.missing(what, key, usual)),
        }
    }
}

/// What a run reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// A stage begins (its index from 1, of how many).
    Stage {
        /// Stage name.
        name: String,
        /// Index, from 1.
        index: usize,
        /// Stages in the run.
        of: usize,
    },
    /// The current stage's progress, 0..1, with what it is doing.
    Progress(String, f64),
    /// A stage ended: run, or skipped because its inputs had not changed.
    Done(StageOutcome),
    /// Something the user should know (the run goes on).
    Warning(StageWarning),
}

/// How a stage ended.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOutcome {
    /// Stage name.
    pub name: String,
    /// False when skipped (its key and files unchanged).
    pub ran: bool,
    /// Wall time, s.
    pub seconds: f64,
    /// Its folder.
    pub dir: PathBuf,
}

/// A path with its `.` and `name/..` components removed, lexically (`pipelines/../out` ->
/// `out`), so that the manifest and the messages show the paths one would type.
pub fn clean_path(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.is_empty() {
        PathBuf::from(".")
    } else {
        out.iter().collect()
    }
}

/// SHA-256 of a byte string, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a file's bytes, or of a folder's files (names and bytes, sorted by name), hex.
pub fn hash_path(path: &Path) -> Result<String, PipelineError> {
    let io = |e: std::io::Error| PipelineError::Io {
        path: path.display().to_string(),
        reason: format!("cannot be read to hash it ({e})"),
    };
    if path.is_dir() {
        let mut names: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        names.sort();
        let mut h = Sha256::new();
        for p in names {
            h.update(
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
                    .as_bytes(),
            );
            h.update([0]);
            h.update(hash_path(&p)?.as_bytes());
        }
        Ok(hex(&h.finalize()))
    } else {
        let bytes = std::fs::read(path).map_err(io)?;
        Ok(sha256_hex(&bytes))
    }
}

/// The identity of the running flexbench build: its version and the SHA-256 of its executable
/// (a rebuilt flexbench reruns every stage).
pub fn build_identity() -> String {
    // Hashed once per process: a debug executable is hundreds of megabytes, and a batch asks
    // once per recording.
    static IDENTITY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let exe = std::env::current_exe()
                .ok()
                .and_then(|p| std::fs::read(p).ok())
                .map(|b| sha256_hex(&b))
                .unwrap_or_else(|| "unknown".into());
            format!("flexbench {} {}", env!("CARGO_PKG_VERSION"), exe)
        })
        .clone()
}

/// A stage's record in its folder (`stage.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStamp {
    /// Stage name.
    pub stage: String,
    /// SHA-256 over the build, the parameters and the inputs' bytes.
    pub key: String,
    /// The parameters, as resolved.
    pub parameters: Value,
    /// Inputs: a name and the SHA-256 of its bytes.
    pub inputs: BTreeMap<String, String>,
    /// Files written (relative to the stage folder) and their SHA-256.
    pub outputs: BTreeMap<String, String>,
}

/// Every file a stage wrote into `tmp` (relative, with / separators, sorted) and its SHA-256.
fn outputs_of(tmp: &Path) -> Result<BTreeMap<String, String>, PipelineError> {
    let mut files: Vec<PathBuf> = Vec::new();
    list_files(tmp, &mut files).map_err(|e| PipelineError::Io {
        path: tmp.display().to_string(),
        reason: format!("cannot list the stage's files ({e})"),
    })?;
    files.sort();
    let mut outputs = BTreeMap::new();
    for f in files {
        let rel = f
            .strip_prefix(tmp)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        outputs.insert(rel, hash_path(&f)?);
    }
    Ok(outputs)
}

const STAMP: &str = "stage.json";

/// A stage's work: it writes its files into the given temporary folder and reports progress
/// (step name, fraction done) to the callback.
pub type StageBody<'a> =
    dyn FnMut(&Path, &mut dyn FnMut(StageEvent)) -> Result<(), PipelineError> + 'a;

/// Runs stages with their keys, into one output directory.
pub struct Runner<'a> {
    out: PathBuf,
    build: String,
    hashes: BTreeMap<PathBuf, String>,
    events: &'a mut dyn FnMut(RunEvent),
    /// Stages in the run (for the progress).
    pub stages: usize,
    /// The stamps of the stages run or kept, in order.
    pub stamps: Vec<StageStamp>,
    /// Stages begun so far (the next one's index less one).
    started: usize,
    /// How each stage ended.
    pub outcomes: Vec<StageOutcome>,
}

impl<'a> Runner<'a> {
    /// A runner writing into `out`, for a run of `stages` stages.
    pub fn new(
        out: &Path,
        build: String,
        stages: usize,
        events: &'a mut dyn FnMut(RunEvent),
    ) -> Runner<'a> {
        Runner {
            out: out.to_path_buf(),
            build,
            hashes: BTreeMap::new(),
            events,
            stages,
            stamps: Vec::new(),
            started: 0,
            outcomes: Vec::new(),
        }
    }

    fn hash(&mut self, p: &Path) -> Result<String, PipelineError> {
        if let Some(h) = self.hashes.get(p) {
            return Ok(h.clone());
        }
        let h = hash_path(p)?;
        self.hashes.insert(p.to_path_buf(), h.clone());
        Ok(h)
    }

    /// The stage folder's stamp when its key is `key` and every file it lists is unchanged
    /// (their hashes then remembered for the stages after it); None when the stage must run.
    fn kept(&mut self, dir: &Path, key: &str) -> Option<StageStamp> {
        let stamp = read_stamp(dir).filter(|s| s.key == key)?;
        let unchanged = stamp
            .outputs
            .iter()
            .all(|(f, h)| hash_path(&dir.join(f)).ok().as_deref() == Some(h.as_str()));
        if !unchanged {
            return None;
        }
        for (f, h) in &stamp.outputs {
            self.hashes.insert(dir.join(f), h.clone());
        }
        Some(stamp)
    }

    /// Send an event.
    pub fn event(&mut self, e: RunEvent) {
        (self.events)(e)
    }

    /// Run (or keep) the stage `name` with `parameters` over the `inputs` (a name each; files or
    /// folders). `body` writes into the folder it is given and reports progress 0..1; on success
    /// that folder replaces the stage's, on failure the old folder stays as it was.
    pub fn stage(
        &mut self,
        name: &str,
        parameters: Value,
        inputs: &[(&str, &Path)],
        body: &mut StageBody<'_>,
    ) -> Result<PathBuf, PipelineError> {
        let pending = match self.begin(name, parameters, inputs)? {
            Begun::Kept(dir) => return Ok(dir),
            Begun::Run(p) => p,
        };
        let events = &mut *self.events;
        let result = body(&pending.tmp, &mut |event: StageEvent| match event {
            StageEvent::Warning(w) => events(RunEvent::Warning(StageWarning {
                stage: name.into(),
                warning: w.into(),
            })),
            StageEvent::Progress(what, f) => events(RunEvent::Progress(what.to_string(), f)),
        });
        self.finish(pending, result)
    }

    /// A stage's start: its event, its key from its parameters and inputs; the stage kept
    /// (its folder) when its key and files are unchanged, else a fresh temporary folder for it
    /// to run into ([`Runner::finish`] puts it in place).
    pub fn begin(
        &mut self,
        name: &str,
        parameters: Value,
        inputs: &[(&str, &Path)],
    ) -> Result<Begun, PipelineError> {
        self.started += 1;
        let (index, slot) = (self.started, self.outcomes.len());
        self.event(RunEvent::Stage {
            name: name.into(),
            index,
            of: self.stages,
        });
        let clock = Instant::now();
        let mut hashed = BTreeMap::new();
        for (n, p) in inputs {
            hashed.insert(n.to_string(), self.hash(p)?);
        }
        let key = sha256_hex(serde_json::to_string(&json!({ "build": self.build, "stage": name, "parameters": parameters, "inputs": hashed })).unwrap_or_default().as_bytes());
        let dir = self.out.join(name);
        if let Some(stamp) = self.kept(&dir, &key) {
            self.stamps.push(stamp);
            return Ok(Begun::Kept(self.done(name, false, clock, dir, slot)));
        }
        // Run into a fresh temporary folder beside the stage's.
        crate::ensure_dir(&self.out)?;
        let tmp = self.out.join(format!(".{name}.partial"));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)
                .map_err(|e| io_error(&tmp, "remove an earlier unfinished stage folder", e))?;
        }
        crate::ensure_dir(&tmp)?;
        let stamp = StageStamp {
            stage: name.into(),
            key,
            parameters,
            inputs: hashed,
            outputs: BTreeMap::new(),
        };
        Ok(Begun::Run(Pending {
            stamp,
            tmp,
            dir,
            clock,
            slot,
        }))
    }

    /// A stage's end after its body ran into `pending`'s folder with `result`: on success the
    /// folder, stamped, replaces the stage's (atomically); on failure it is removed and the
    /// stage's old folder stays as it was.
    pub fn finish(
        &mut self,
        pending: Pending,
        result: Result<(), PipelineError>,
    ) -> Result<PathBuf, PipelineError> {
        let Pending {
            mut stamp,
            tmp,
            dir,
            clock,
            slot,
        } = pending;
        release_freed_memory();
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        stamp.outputs = outputs_of(&tmp)?;
        crate::write_json(
            &tmp.join(STAMP),
            &serde_json::to_value(&stamp).unwrap_or_default(),
        )?;
        // The whole new folder in the place of the old one, atomically.
        flexbench_contracts::atomic::replace_dir(&tmp, &dir)
            .map_err(|e| io_error(&dir, "put the stage's results in place", e))?;
        for (f, h) in &stamp.outputs {
            self.hashes.insert(dir.join(f), h.clone());
        }
        let name = stamp.stage.clone();
        self.stamps.insert(slot.min(self.stamps.len()), stamp);
        Ok(self.done(&name, true, clock, dir, slot))
    }

    /// A stage's outcome recorded in its place among the stages (`slot`: a stage run beside
    /// later ones ends after them) and announced.
    fn done(
        &mut self,
        name: &str,
        ran: bool,
        clock: Instant,
        dir: PathBuf,
        slot: usize,
    ) -> PathBuf {
        let o = StageOutcome {
            name: name.into(),
            ran,
            seconds: clock.elapsed().as_secs_f64(),
            dir: dir.clone(),
        };
        self.outcomes
            .insert(slot.min(self.outcomes.len()), o.clone());
        self.event(RunEvent::Done(o));
        dir
    }
}

/// How a stage begins ([`Runner::begin`]).
pub enum Begun {
    /// Kept: its key and files unchanged; its folder.
    Kept(PathBuf),
    /// To run into a temporary folder, then [`Runner::finish`].
    Run(Pending),
}

/// A stage under way: its stamp (outputs listed at the end), its temporary and final folders,
/// its clock, and its place among the stages.
pub struct Pending {
    stamp: StageStamp,
    /// The folder the stage's body writes into.
    pub tmp: PathBuf,
    dir: PathBuf,
    clock: Instant,
    slot: usize,
}

/// Hand the memory a stage freed back to the system. The stages run in one process and glibc
/// keeps freed pages of its heaps resident until told, so each stage would start from the
/// last one's peak: the 100 s recording's run peaked at its stages' sum. Elsewhere, nothing.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the system; no memory in use is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn read_stamp(dir: &Path) -> Option<StageStamp> {
    serde_json::from_str(&std::fs::read_to_string(dir.join(STAMP)).ok()?).ok()
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            list_files(&p, out)?;
        } else if p.file_name().is_some_and(|n| n != STAMP) {
            out.push(p);
        }
    }
    Ok(())
}

/// Names of a run's stages, in order.
pub const STAGES: [&str; 8] = [
    "calibrate",
    "track",
    "smooth",
    "process",
    "overlay",
    "fem",
    "compare",
    "report",
];

/// What one recording's run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The recording's name.
    pub name: String,
    /// The run's output directory.
    pub out: PathBuf,
    /// How each stage ended.
    pub outcomes: Vec<StageOutcome>,
    /// The report (HTML).
    pub report: PathBuf,
    /// The manifest.
    pub manifest: PathBuf,
}

fn params<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// A pipeline file's settings, checked and turned into the stages' configurations.
pub struct Settings {
    /// The calibration target: a chessboard and its detector, or a ChArUco board (when
    /// calibrating).
    pub target: Option<flexbench_vision::calibrate::Target>,
    /// Metres per unit of the tracks for the smooth stage (1: a run's tracks are in m).
    pub factor: f64,
    /// The smooth stage's method.
    pub method: crate::smooth::SmoothMethod,
    /// The marker layout of the rigid field (the lever's on the bench); None when the markers
    /// lie on several bodies (no rigid field then).
    pub rigid: Option<crate::smooth::RigidRequest>,
    /// The process stage's configuration.
    pub process: crate::ProcessConfig,
}

impl Settings {
    /// Check every table of `file` against the mechanism; `calibrating`: the run calibrates
    /// (so the board must be complete).
    pub fn resolve(
        file: &PipelineFile,
        mech: &flexbench_mechanism::Mechanism,
        calibrating: bool,
    ) -> Result<Settings, PipelineError> {
        let bad = |m: String| Err(PipelineError::Input(m));
        let target = match calibrating {
            true => Some(file.calibrate.target()?),
            false => None,
        };
        if file
            .smooth
            .unit
            .is_some_and(|u| u != flexbench_tables::interchange::LengthUnit::M)
        {
            return bad("[smooth] unit: in a run the tracks are in metres (the track stage maps them); give a foreign table's unit as [inputs] tracks_unit".into());
        }
        let (factor, method) = file.smooth.resolve()?;
        let one_body = mech.markers.windows(2).all(|w| w[0].body == w[1].body);
        let rigid = match one_body {
            true => Some(crate::smooth::RigidRequest::from_mechanism(mech)?),
            false => None,
        };
        let process = file.process.config()?;
        file.fem.check()?;
        if file.compare.harmonics < 1 {
            return bad("[compare] harmonics = 0: keep at least one harmonic of the crank angle (default 20)".into());
        }
        crate::compare_measured::check_spec(&file.compare.measured_spec())?;
        Ok(Settings {
            target,
            factor,
            method,
            rigid,
            process,
        })
    }
}

/// Run the whole chain for one recording into `out`. `file` and `pipeline_path` are the pipeline
/// file (its path for the manifest).
pub fn run_recording(
    file: &PipelineFile,
    pipeline_path: &Path,
    rec: &RecordingInputs,
    out: &Path,
    events: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary, PipelineError> {
    let mech_file = flexbench_mechanism::file::load(&rec.mechanism)?;
    let mech = &mech_file.mechanism;
    let calibrating = matches!(
        &rec.source,
        TracksSource::Video {
            calibration: CalibrationSource::Views { .. },
            ..
        } | TracksSource::Table {
            calibration: Some(CalibrationSource::Views { .. }),
            ..
        }
    );
    // Every setting checked before any stage runs: a wrong value late in the file is reported
    // at once, not after the stages before it.
    let settings = Settings::resolve(file, mech, calibrating)?;
    let overlaying = file.overlay.enabled && matches!(rec.source, TracksSource::Video { .. });
    // The lever's FEM needs the bench's elastic lever; the comparison needs a crank to simulate
    // by, or a measured table.
    let fem = mech_file.lever.is_some();
    let comparing = crate::compare::simulated_applies(mech) || rec.measured.is_some();
    let stages = STAGES.len()
        - usize::from(!calibrating)
        - usize::from(!overlaying)
        - usize::from(!fem)
        - usize::from(!comparing);
    let mut run = RecordingRun {
        file,
        rec,
        mech,
        settings,
        runner: Runner::new(out, build_identity(), stages, events),
    };
    let calibration = run.calibrate()?;
    let tracks = run.track(calibration.as_deref())?;
    // The stages on the markers alone (smooth) and on the video (overlay) beside the
    // mechanism's, which do not read them.
    let (smooth, (process, overlay, fem, compare)) = run.smooth_beside(&tracks, |run| {
        let process = run.process(&tracks)?;
        let analyses = |run: &mut RecordingRun| {
            let fem = match fem {
                true => Some(run.fem(&process)?),
                false => None,
            };
            let compare = match comparing {
                true => Some(run.compare(&process)?),
                false => None,
            };
            Ok((fem, compare))
        };
        let (overlay, (fem, compare)) = match (overlaying, &calibration) {
            (true, Some(cal)) => {
                let (dir, rest) = run.overlay_beside(cal, &tracks, &process, analyses)?;
                (Some(dir), rest)
            }
            _ => (None, analyses(run)?),
        };
        Ok((process, overlay, fem, compare))
    })?;
    let dirs = crate::report::StageDirs {
        calibrate: calibration
            .as_ref()
            .and_then(|c| c.parent().map(Path::to_path_buf))
            .filter(|_| calibrating),
        track: tracks.parent().map(Path::to_path_buf).unwrap_or_default(),
        smooth,
        process,
        overlay,
        fem,
        compare,
    };
    let manifest = manifest(file, pipeline_path, rec, &mut run.runner)?;
    let report_dir = run.report(&dirs, &manifest)?;
    let runner = run.runner;
    let manifest_path = crate::write_json(
        &out.join("manifest.json"),
        &params(&with_stages(manifest, &runner.stamps)),
    )?;
    Ok(RunSummary {
        name: rec.name.clone(),
        out: out.to_path_buf(),
        outcomes: runner.outcomes,
        report: report_dir.join("report.html"),
        manifest: manifest_path,
    })
}

/// One recording's run: its pipeline file, inputs, mechanism, checked settings, and the runner
/// that keeps or reruns each stage. One method per stage, each returning its folder (or file).
struct RecordingRun<'r, 'e> {
    file: &'r PipelineFile,
    rec: &'r RecordingInputs,
    mech: &'r Mechanism,
    settings: Settings,
    runner: Runner<'e>,
}

impl RecordingRun<'_, '_> {
    /// Calibrate, or reuse a calibration: the calibration file, None for a tracks table in m.
    fn calibrate(&mut self) -> Result<Option<PathBuf>, PipelineError> {
        use crate::calibrate::{calibrate, read_clicks, CalibrateRequest};
        let cal_source = match &self.rec.source {
            TracksSource::Video { calibration, .. } => Some(calibration),
            TracksSource::Table { calibration, .. } => calibration.as_ref(),
        };
        let (views, plane_files) = match cal_source {
            None => return Ok(None),
            Some(CalibrationSource::File(p)) => return Ok(Some(p.clone())),
            Some(CalibrationSource::Views { views, plane }) => (views, plane),
        };
        let c = &self.file.calibrate;
        let target = self
            .settings
            .target
            .ok_or_else(|| PipelineError::Input("[calibrate]: no board".into()))?;
        let plane = match plane_files {
            PlaneFiles::Board { plane_view, clicks } => {
                let (origin, horizontal) = read_clicks(clicks)?;
                crate::calibrate::PlaneSource::Board {
                    view: plane_view.clone(),
                    origin,
                    horizontal,
                }
            }
            PlaneFiles::Points(points) => crate::calibrate::read_points(points)?,
        };
        let req = CalibrateRequest {
            views: views.clone(),
            target,
            plane: Some(plane),
        };
        let mut inputs = vec![("views", views.as_path())];
        inputs.extend(plane_files.inputs());
        let dir = self
            .runner
            .stage("calibrate", params(c), &inputs, &mut |tmp, progress| {
                progress(StageEvent::Progress("calibration views", 0.0));
                calibrate(&req, &tmp.join("calibration.yaml")).map(|_| ())
            })?;
        Ok(Some(dir.join("calibration.yaml")))
    }

    /// The tracker's settings: the markers (the pipeline file's, else the mechanism's), their
    /// layout from the mechanism, the threshold, the flags' level, the corrections read.
    fn track_config(
        &self,
        corrections: Option<&Path>,
    ) -> Result<flexbench_vision::track::TrackConfig, PipelineError> {
        let t = &self.file.track;
        let markers = t
            .markers
            .clone()
            .unwrap_or_else(|| self.mech.markers.iter().map(|m| m.name.clone()).collect());
        let alpha = t
            .false_alarm
            .unwrap_or(flexbench_vision::track::FALSE_ALARM);
        if !(alpha > 0.0 && alpha < 0.5) {
            return Err(PipelineError::Input(format!(
                "[track] false_alarm = {alpha}: give a probability between 0 and 0.5 (default 1e-6)"
            )));
        }
        let corrections = match corrections {
            Some(c) => crate::track::read_corrections(c, &markers)?,
            None => Vec::new(),
        };
        Ok(flexbench_vision::track::TrackConfig {
            layout: Some(crate::track::layout_of(self.mech, &markers)?),
            markers,
            threshold: t.threshold,
            alpha,
            corrections,
            timing: flexbench_vision::timebase::TimeBaseConfig {
                frame_rate: t.frame_rate,
                capture_rate: t.capture_rate,
            },
            ..Default::default()
        })
    }

    /// Track the video, or import a table: the tracks table.
    fn track(&mut self, calibration: Option<&Path>) -> Result<PathBuf, PipelineError> {
        let file = self.file;
        let dir = match &self.rec.source {
            TracksSource::Video {
                video, corrections, ..
            } => {
                let cal = calibration.map(Path::to_path_buf).unwrap_or_default();
                let cfg = self.track_config(corrections.as_deref())?;
                let (markers, alpha) = (cfg.markers.clone(), cfg.alpha);
                let mut inputs = vec![
                    ("video", video.as_path()),
                    ("calibration", cal.as_path()),
                    ("mechanism", self.rec.mechanism.as_path()),
                ];
                if let Some(c) = corrections {
                    inputs.push(("corrections", c));
                }
                self.runner.stage(
                    "track",
                    json!({ "markers": markers, "threshold": file.track.threshold, "false_alarm": alpha,
                        "frame_rate": file.track.frame_rate, "capture_rate": file.track.capture_rate }),
                    &inputs,
                    &mut |tmp, progress| {
                        let out = tmp.join("tracks.parquet");
                        let (s, _) = crate::track::track(video, &cal, &cfg, &out, |k, n| {
                            progress(StageEvent::Progress("tracking", k as f64 / n.max(1) as f64))
                        })?;
                        for w in &s.timing.warnings {
                            progress(StageEvent::Warning(&format!("{}: {w}", video.display())));
                        }
                        Ok(())
                    },
                )?
            }
            TracksSource::Table { tracks, .. } => {
                let inputs = &file.inputs;
                let mut ins: Vec<(&str, &Path)> = vec![("tracks", tracks.as_path())];
                if let Some(c) = calibration {
                    ins.push(("calibration", c));
                }
                let p = json!({ "unit": inputs.tracks_unit, "fps": inputs.tracks_fps, "markers": inputs.tracks_markers });
                self.runner.stage("track", p, &ins, &mut |tmp, progress| {
                    progress(StageEvent::Progress("importing the tracks table", 0.0));
                    crate::track::import_tracks(
                        tracks,
                        inputs.tracks_unit.as_deref(),
                        inputs.tracks_fps,
                        inputs.tracks_markers.as_deref(),
                        calibration,
                        &tmp.join("tracks.parquet"),
                    )
                    .map(|_| ())
                })?
            }
        };
        Ok(dir.join("tracks.parquet"))
    }

    /// Process: kinematics and inverse dynamics.
    fn process(&mut self, tracks: &Path) -> Result<PathBuf, PipelineError> {
        let (mech, cfg) = (self.mech, self.settings.process);
        let flags = tracks.with_file_name("flags.parquet");
        let flags = flags.exists().then_some(flags);
        let mut inputs = vec![
            ("tracks", tracks),
            ("mechanism", self.rec.mechanism.as_path()),
        ];
        if let Some(f) = &flags {
            inputs.push(("flags", f));
        }
        self.runner.stage(
            "process",
            params(&self.file.process),
            &inputs,
            &mut |tmp, progress| {
                crate::process(tracks, flags.as_deref(), mech, &cfg, tmp, &mut *progress)
                    .map(|_| ())
            },
        )
    }

    /// FEM: the elastic lever, from the process stage's folder.
    fn fem(&mut self, process_dir: &Path) -> Result<PathBuf, PipelineError> {
        let f = &self.file.fem;
        let mechanism = self.rec.mechanism.as_path();
        let (bodies, forces, residuals) = (
            process_dir.join("bodies.parquet"),
            process_dir.join("forces.parquet"),
            process_dir.join("fit_residuals.parquet"),
        );
        let fem_cfg = f.config(Some(residuals.clone()))?;
        self.runner.stage(
            "fem",
            params(f),
            &[
                ("bodies", &bodies),
                ("forces", &forces),
                ("fit_residuals", &residuals),
                ("mechanism", mechanism),
            ],
            &mut |tmp, progress| {
                let (record, _) =
                    crate::fem::fem(&bodies, &forces, mechanism, &fem_cfg, tmp, |k, n| {
                        progress(StageEvent::Progress(
                            "modes along the cycle",
                            k as f64 / n.max(1) as f64,
                        ))
                    })?;
                for w in &record.warnings {
                    progress(StageEvent::Warning(w));
                }
                Ok(())
            },
        )
    }

    /// Compare: measured against simulated (where the mechanism has a crank to simulate by),
    /// and against the rig's measured table (when there is one), from the process stage's
    /// folder. The measured table is read and compared first; nothing is kept of a failure.
    fn compare(&mut self, process_dir: &Path) -> Result<PathBuf, PipelineError> {
        let mechanism = self.rec.mechanism.as_path();
        let harmonics = self.file.compare.harmonics;
        let spec = self.file.compare.measured_spec();
        let measured = self.rec.measured.clone();
        let (bodies, markers, forces) = (
            process_dir.join("bodies.parquet"),
            process_dir.join("markers.parquet"),
            process_dir.join("forces.parquet"),
        );
        let mut inputs: Vec<(&str, &Path)> = vec![
            ("bodies", &bodies),
            ("markers", &markers),
            ("forces", &forces),
            ("mechanism", mechanism),
        ];
        if let Some(m) = &measured {
            inputs.push(("measured", m));
        }
        self.runner.stage(
            "compare",
            params(&self.file.compare),
            &inputs,
            &mut |tmp, progress| {
                progress(StageEvent::Progress("comparing", 0.0));
                let outcome = crate::compare_measured::compare_job(
                    process_dir,
                    mechanism,
                    harmonics,
                    measured.as_deref().map(|m| (m, &spec)),
                    tmp,
                )?;
                let said = [
                    outcome.simulated.map(|r| r.warnings),
                    outcome.measured.map(|r| r.warnings),
                ];
                for w in said.iter().flatten().flatten() {
                    progress(StageEvent::Warning(w));
                }
                Ok(())
            },
        )
    }

    /// Stage `name` ([`Runner::begin`]'s parameters and inputs) made by `body` into the folder
    /// it is given on a thread of its own, while `then` runs the stages after it (which must
    /// not read its results). Its progress is not shown (the stages beside have the bar), it
    /// ends in its own place among the stages, and its error comes first; the stages beside
    /// have then still run and kept their results.
    fn beside<R>(
        &mut self,
        (name, parameters, inputs): (&str, Value, &[(&str, &Path)]),
        body: impl FnOnce(&Path) -> Result<(), PipelineError> + Send,
        then: impl FnOnce(&mut Self) -> Result<R, PipelineError>,
    ) -> Result<(PathBuf, R), PipelineError> {
        let pending = match self.runner.begin(name, parameters, inputs)? {
            Begun::Kept(dir) => return Ok((dir, then(self)?)),
            Begun::Run(p) => p,
        };
        let tmp = pending.tmp.clone();
        let ((made, took), rest) = std::thread::scope(|s| {
            let job = s.spawn(|| {
                let clock = Instant::now();
                (body(&tmp), clock.elapsed())
            });
            let rest = then(self);
            let made = job.join().unwrap_or_else(|_| {
                let why = format!(
                    "the {name} stage's thread stopped unexpectedly: run it alone to see why"
                );
                (Err(PipelineError::Input(why)), Default::default())
            });
            (made, rest)
        });
        // Its time is its own work's, not the wait for the stages beside.
        let mut pending = pending;
        pending.clock = Instant::now().checked_sub(took).unwrap_or(pending.clock);
        let dir = self.runner.finish(pending, made)?;
        Ok((dir, rest?))
    }

    /// Smooth: the markers alone through the signal stage, beside `then` (the process and the
    /// stages after it, which do not read it).
    fn smooth_beside<R>(
        &mut self,
        tracks: &Path,
        then: impl FnOnce(&mut Self) -> Result<R, PipelineError>,
    ) -> Result<(PathBuf, R), PipelineError> {
        let s = &self.settings;
        let (factor, method, rigid) = (s.factor, s.method, s.rigid.clone());
        let mechanism = self.rec.mechanism.clone();
        let inputs = [("tracks", tracks), ("mechanism", mechanism.as_path())];
        let body = |tmp: &Path| {
            let out = tmp.join("markers.parquet");
            crate::smooth::smooth(tracks, factor, method, rigid, &out).map(|_| ())
        };
        self.beside(("smooth", params(&self.file.smooth), &inputs), body, then)
    }

    /// Overlay: the video with what the run made of it drawn on every frame, beside `then`
    /// (the fem and compare: neither reads the overlay, and the video's decoding and encoding
    /// leave a core's share free beside the lever's analysis).
    fn overlay_beside<R>(
        &mut self,
        calibration: &Path,
        tracks: &Path,
        process_dir: &Path,
        then: impl FnOnce(&mut Self) -> Result<R, PipelineError>,
    ) -> Result<(PathBuf, R), PipelineError> {
        let TracksSource::Video { video, .. } = &self.rec.source else {
            return Err(PipelineError::Input(
                "the overlay needs the recording's video".into(),
            ));
        };
        let (flags, bodies) = (
            tracks.with_file_name("flags.parquet"),
            process_dir.join("bodies.parquet"),
        );
        // The process stage's residual flags (absent from a process folder of before them).
        let fit_flags = process_dir.join("fit_flags.parquet");
        let mut tables = vec![flags.as_path()];
        tables.extend(fit_flags.exists().then_some(fit_flags.as_path()));
        let mut inputs = vec![
            ("video", video.as_path()),
            ("calibration", calibration),
            ("tracks", tracks),
            ("flags", &flags),
            ("bodies", &bodies),
            ("mechanism", &self.rec.mechanism),
        ];
        inputs.extend(
            fit_flags
                .exists()
                .then_some(("fit_flags", fit_flags.as_path())),
        );
        let overlay_inputs = crate::overlay::OverlayInputs {
            video,
            calibration,
            tracks,
            flags: &tables,
            bodies: Some(&bodies),
            mechanism: self.mech,
            plain: false,
        };
        let body =
            |tmp: &Path| crate::overlay::overlay(&overlay_inputs, tmp, |_, _| {}).map(|_| ());
        self.beside(("overlay", params(&self.file.overlay), &inputs), body, then)
    }

    /// Report: every stage's figures and numbers on one page.
    fn report(
        &mut self,
        dirs: &crate::report::StageDirs,
        manifest: &Manifest,
    ) -> Result<PathBuf, PipelineError> {
        let title = self
            .file
            .report
            .title
            .clone()
            .unwrap_or_else(|| format!("flexbench: recording {}", self.rec.name));
        let mut ins: Vec<(&str, &Path)> = vec![
            ("track", &dirs.track),
            ("smooth", &dirs.smooth),
            ("process", &dirs.process),
        ];
        if let Some(f) = &dirs.fem {
            ins.push(("fem", f));
        }
        if let Some(c) = &dirs.compare {
            ins.push(("compare", c));
        }
        if let Some(c) = &dirs.calibrate {
            ins.push(("calibrate", c));
        }
        let (mech, csv_units) = (self.mech, self.file.report.csv_units);
        let mut parameters = json!({ "title": title, "manifest": manifest });
        if csv_units {
            parameters["csv_units"] = json!(true);
        }
        self.runner
            .stage("report", parameters, &ins, &mut |tmp, progress| {
                let page = crate::report::ReportPage {
                    title: &title,
                    csv_units,
                };
                crate::report::report(&page, dirs, mech, manifest, tmp, &mut *progress).map(|_| ())
            })
    }
}

/// The manifest before the stages: build, inputs' hashes, parameters, seed. Everything needed to
/// repeat the run exactly, and nothing that changes between two runs (no dates, no wall times).
fn manifest(
    file: &PipelineFile,
    pipeline_path: &Path,
    rec: &RecordingInputs,
    runner: &mut Runner,
) -> Result<Manifest, PipelineError> {
    let mut inputs = BTreeMap::new();
    // The stages' own hashes of their inputs, reused (the video and the views are read once).
    let mut add = |k: &str, p: &Path| -> Result<(), PipelineError> {
        let input = InputFile {
            path: p.display().to_string(),
            sha256: runner.hash(p)?,
        };
        inputs.insert(k.to_string(), input);
        Ok(())
    };
    add("pipeline_file", pipeline_path)?;
    add("mechanism", &rec.mechanism)?;
    match &rec.source {
        TracksSource::Video {
            video,
            calibration,
            corrections,
        } => {
            add("video", video)?;
            if let Some(c) = corrections {
                add("corrections", c)?;
            }
            match calibration {
                CalibrationSource::File(p) => add("calibration", p)?,
                CalibrationSource::Views { views, plane } => {
                    add("views", views)?;
                    for (name, file) in plane.inputs() {
                        add(name, file)?;
                    }
                }
            }
        }
        TracksSource::Table {
            tracks,
            calibration,
        } => {
            add("tracks", tracks)?;
            if let Some(CalibrationSource::File(p)) = calibration {
                add("calibration", p)?;
            }
        }
    }
    if let Some(m) = &rec.measured {
        add("measured", m)?;
    }
    Ok(Manifest {
        build: runner.build.clone(),
        flexbench: env!("CARGO_PKG_VERSION").into(),
        inputs,
        opencv: flexbench_vision::opencv_version(),
        parameters: params(file),
        recording: rec.name.clone(),
        repeat: format!("flexbench run {}", pipeline_path.display()),
        seed: rec.seed,
        stages: Vec::new(),
    })
}

/// The manifest with the stages as they ran or were kept.
fn with_stages(manifest: Manifest, stamps: &[StageStamp]) -> Manifest {
    let stages = stamps
        .iter()
        .map(|s| StageEntry {
            inputs: s.inputs.clone(),
            key: s.key.clone(),
            outputs: s.outputs.clone(),
            stage: s.stage.clone(),
        })
        .collect();
    Manifest { stages, ..manifest }
}

/// Whether a folder is a recording (a video or a tracks table in it).
fn is_recording(dir: &Path) -> bool {
    find_video(dir).is_some()
        || dir.join("tracks.parquet").exists()
        || dir.join("tracks.csv").exists()
}

/// The recording folders named by `paths`: each a recording folder, or a folder of them (its
/// sub-folders that hold a video or a tracks table, sorted by name).
pub fn discover_recordings(paths: &[PathBuf]) -> Result<Vec<PathBuf>, PipelineError> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            return Err(PipelineError::Input(format!("{}: not a folder; give recording folders (video.mp4, views/, plane-view.png, clicks.toml) or a folder of them", p.display())));
        }
        if is_recording(p) {
            out.push(p.clone());
            continue;
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| PipelineError::Io {
                path: p.display().to_string(),
                reason: e.to_string(),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|d| d.is_dir())
            .collect();
        subs.sort();
        let before = out.len();
        // A sub-folder is taken when it looks like a recording; a broken one is still taken (it
        // fails with its own message), so only folders with no file at all are passed over.
        for s in subs {
            if is_recording(&s)
                || std::fs::read_dir(&s)
                    .map(|mut r| r.next().is_some())
                    .unwrap_or(false)
            {
                out.push(s);
            }
        }
        if out.len() == before {
            return Err(PipelineError::Input(format!(
                "{}: no recording in it (a folder with video.mp4 or tracks.csv)",
                p.display()
            )));
        }
    }
    Ok(out)
}

/// One recording of a batch: its run or its error.
#[derive(Debug)]
pub struct BatchItem {
    /// The recording folder.
    pub folder: PathBuf,
    /// The run's summary, or why it failed.
    pub result: Result<RunSummary, String>,
}

/// The per-recording `[inputs]` of a batch: a `recording.toml` in the recording folder, paths
/// relative to it; none: the folder's usual files.
fn recording_inputs(folder: &Path) -> Result<Inputs, PipelineError> {
    let f = folder.join("recording.toml");
    if !f.exists() {
        return Ok(Inputs::default());
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RecordingFile {
        #[serde(default)]
        inputs: Inputs,
    }
    let text = std::fs::read_to_string(&f)
        .map_err(|e| PipelineError::Input(format!("{}: {e}", f.display())))?;
    let r: RecordingFile = toml::from_str(&text).map_err(|source| PipelineError::Toml {
        what: f.display().to_string(),
        source,
    })?;
    Ok(r.inputs)
}

/// Run one recording folder of a batch into `out/<folder name>`.
pub fn run_folder(
    file: &PipelineFile,
    pipeline_path: &Path,
    mechanism: &Path,
    folder: &Path,
    out: &Path,
    events: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary, PipelineError> {
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "recording".into());
    let inputs = recording_inputs(folder)?;
    let rec = RecordingInputs::resolve(&name, Some(folder), &inputs, folder, mechanism)?;
    let mut file = file.clone();
    file.inputs = inputs;
    run_recording(&file, pipeline_path, &rec, &out.join(&name), events)
}

/// Run every recording folder with `jobs` at once (each recording's stages in order); a failed
/// recording is reported and the others go on. `events` gets each recording's events with its
/// name. Writes the batch summary (`batch-summary.csv`, `.json`, `.html`) into `out`.
pub fn run_batch(
    file: &PipelineFile,
    pipeline_path: &Path,
    mechanism: &Path,
    folders: &[PathBuf],
    out: &Path,
    jobs: usize,
    events: &(dyn Fn(&str, RunEvent) + Sync),
) -> Result<(Vec<BatchItem>, Vec<PathBuf>), PipelineError> {
    crate::ensure_dir(out)?;
    let results = flexbench_contracts::parallel::map_in_order(jobs, folders, |folder| {
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        run_folder(file, pipeline_path, mechanism, folder, out, &mut |e| {
            events(&name, e)
        })
        .map_err(|e| e.to_string())
    });
    let items: Vec<BatchItem> = folders
        .iter()
        .zip(results)
        .map(|(f, result)| BatchItem {
            folder: f.clone(),
            result,
        })
        .collect();
    let files = batch_summary(&items, out)?;
    Ok((items, files))
}

/// A column of the batch summary, the factor to its unit, and its value in the report's record.
type BatchColumnOf = (
    flexbench_report::batch::BatchColumn,
    f64,
    fn(&ReportRecord) -> Option<f64>,
);

/// The batch summary's number columns: each recording's key numbers from its report's record.
fn batch_columns() -> [BatchColumnOf; 9] {
    use flexbench_report::batch::BatchColumn;
    let col = |key, label, decimals| BatchColumn {
        key,
        label,
        decimals,
    };
    [
        (col("frame_rate_hz", "frame rate (Hz)", 1), 1.0, |k| {
            Some(k.frame_rate_hz)
        }),
        (col("crank_speed_rpm", "crank speed (rpm)", 2), 1.0, |k| {
            Some(k.crank_speed_rpm)
        }),
        (
            col("largest_acceleration_m_s2", "largest |a| (m/s^2)", 2),
            1.0,
            |k| Some(k.largest_acceleration_m_s2),
        ),
        (col("peak_force_B_n", "peak |B| (N)", 1), 1.0, |k| {
            k.peaks.b_n
        }),
        (col("peak_force_C_n", "peak |C'| (N)", 1), 1.0, |k| {
            k.peaks.c_n
        }),
        (
            col("acceleration_nrmse_mean", "accel. NRMSE mean (%)", 2),
            100.0,
            |k| Some(k.acceleration_nrmse_mean),
        ),
        (
            col("acceleration_nrmse_max", "accel. NRMSE max (%)", 2),
            100.0,
            |k| Some(k.acceleration_nrmse_max),
        ),
        (
            col("force_nrmse_max", "force NRMSE max (%)", 2),
            100.0,
            |k| Some(k.force_nrmse_max),
        ),
        (col("fit_rms_mm", "fit RMS (mm)", 3), 1.0, |k| {
            Some(k.fit_rms_mm)
        }),
    ]
}

/// One recording's row of the batch summary and its entry in `batch-summary.json`.
fn batch_row(
    it: &BatchItem,
    out: &Path,
    cols: &[BatchColumnOf],
) -> (flexbench_report::batch::BatchRow, Value) {
    use flexbench_report::batch::BatchRow;
    let recording = it
        .folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match &it.result {
        Ok(r) => {
            // An unreadable record leaves its cells empty (the batch goes on).
            let k = ReportRecord::read(&r.report.with_file_name("summary.json")).ok();
            let modes = |m: usize, e: usize| {
                let v = *k.as_ref()?.mode_frequency_ranges_hz.get(m)?.get(e)?;
                v.is_finite().then_some(v)
            };
            let report = r
                .report
                .strip_prefix(out)
                .unwrap_or(&r.report)
                .to_string_lossy()
                .into_owned();
            let values = cols
                .iter()
                .map(|c| {
                    k.as_ref()
                        .and_then(c.2)
                        .filter(|v| v.is_finite())
                        .map(|v| v * c.1)
                })
                .collect();
            let entry = json!({ "recording": recording, "status": "ok", "report": report, "summary": k.as_ref().map(params) });
            let row = BatchRow::Done(flexbench_report::batch::BatchDone {
                recording,
                values,
                mode1: [modes(0, 0), modes(0, 1)],
                mode3: [modes(2, 0), modes(2, 1)],
                report,
            });
            (row, entry)
        }
        Err(e) => {
            let entry = json!({ "recording": recording, "status": "failed", "error": e });
            let row = BatchRow::Failed {
                recording,
                error: e.clone(),
            };
            (row, entry)
        }
    }
}

/// The batch summary: one row per recording (its key numbers, or its error), as CSV, HTML and
/// JSON in `out`.
fn batch_summary(items: &[BatchItem], out: &Path) -> Result<Vec<PathBuf>, PipelineError> {
    use flexbench_report::batch::{batch_csv, batch_html, BatchColumn, BatchRow};
    let cols = batch_columns();
    let (rows, json_rows): (Vec<BatchRow>, Vec<Value>) =
        items.iter().map(|it| batch_row(it, out, &cols)).unzip();
    let columns: Vec<BatchColumn> = cols.iter().map(|c| c.0).collect();
    let w = |p: PathBuf, b: &str| -> Result<PathBuf, PipelineError> {
        flexbench_contracts::atomic::write_bytes(&p, b.as_bytes()).map_err(|e| {
            PipelineError::Io {
                path: p.display().to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(p)
    };
    Ok(vec![
        w(out.join("batch-summary.csv"), &batch_csv(&columns, &rows))?,
        w(out.join("batch-summary.html"), &batch_html(&columns, &rows))?,
        crate::write_json(
            &out.join("batch-summary.json"),
            &json!({ "recordings": json_rows }),
        )?,
    ])
}

/// What `flexbench run` (and the Python package's `run`) resolves from a pipeline file and its
/// arguments: the file, its folder, the mechanism, the output folder and the batch.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The pipeline file, read and checked.
    pub file: PipelineFile,
    /// Its path.
    pub pipeline: PathBuf,
    /// Its folder: paths in it are relative to it.
    pub base: PathBuf,
    /// The mechanism file (`[run] mechanism`).
    pub mechanism: PathBuf,
    /// The output folder: the argument, else `[run] out`, else `out/<pipeline file's stem>`.
    pub out: PathBuf,
    /// The pipeline file's stem: the recording's name when it has no folder.
    pub stem: String,
    /// The batch's recording folders (or folders of them): the argument, else
    /// `[run] recordings`; empty for one recording.
    pub batch: Vec<PathBuf>,
}

impl RunPlan {
    /// Read the pipeline file and resolve its paths; `out` and `recordings` override
    /// `[run] out` and `[run] recordings`.
    pub fn resolve(
        pipeline: &Path,
        out: Option<PathBuf>,
        recordings: Vec<PathBuf>,
    ) -> Result<RunPlan, PipelineError> {
        let file = PipelineFile::load(pipeline)?;
        let base = pipeline
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let mechanism = file.run.mechanism.as_ref().ok_or_else(|| {
            PipelineError::Input(format!("{}: [run] mechanism is missing: give the mechanism file (e.g. mechanism = \"wind-pump.toml\")", pipeline.display()))
        })?;
        let mechanism = clean_path(&base.join(mechanism));
        let stem = pipeline
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        let out = out
            .or_else(|| file.run.out.as_ref().map(|o| clean_path(&base.join(o))))
            .unwrap_or_else(|| PathBuf::from("out").join(&stem));
        let batch = match recordings.is_empty() {
            false => recordings,
            true => file
                .run
                .recordings
                .iter()
                .map(|r| clean_path(&base.join(r)))
                .collect(),
        };
        Ok(RunPlan {
            file,
            pipeline: pipeline.to_path_buf(),
            base,
            mechanism,
            out,
            stem,
            batch,
        })
    }

    /// The one recording's name (its folder's, else the pipeline file's stem) and inputs
    /// (`[run] recording` and `[inputs]`), checked to exist.
    pub fn recording(&self) -> Result<(String, RecordingInputs), PipelineError> {
        let folder = self
            .file
            .run
            .recording
            .as_ref()
            .map(|r| clean_path(&self.base.join(r)));
        let name = folder
            .as_ref()
            .and_then(|f| f.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.stem.clone());
        let rec = RecordingInputs::resolve(
            &name,
            folder.as_deref(),
            &self.file.inputs,
            &self.base,
            &self.mechanism,
        )?;
        Ok((name, rec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[calibrate]` describes a chessboard by default, a ChArUco board with `charuco`; a
    /// ChArUco board without its marker or dictionary, or with an unknown dictionary, is refused
    /// with the key named.
    #[test]
    fn calibrate_table_targets() {
        let section = |text: &str| toml::from_str::<CalibrateSection>(text);
        let chess = section("board = \"9x6\"\nsquare = 0.03")
            .unwrap()
            .target()
            .unwrap();
        assert!(matches!(
            chess,
            flexbench_vision::calibrate::Target::Chessboard(..)
        ));
        let charuco =
            section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.026\ndictionary = \"4x4_50\"")
                .unwrap()
                .target()
                .unwrap();
        assert_eq!(charuco.describe(), "9 x 7 ChArUco board (4x4_50)");
        let no_marker = section("charuco = \"9x7\"\nsquare = 0.04\ndictionary = \"4x4_50\"")
            .unwrap()
            .target()
            .unwrap_err()
            .to_string();
        assert!(no_marker.contains("marker is missing"), "{no_marker}");
        let no_dict = section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.026")
            .unwrap()
            .target()
            .unwrap_err()
            .to_string();
        assert!(no_dict.contains("dictionary is missing"), "{no_dict}");
        let unknown =
            section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.026\ndictionary = \"4x4_51\"")
                .unwrap_err()
                .to_string();
        assert!(unknown.contains("4x4_51"), "{unknown}");
        let big =
            section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.05\ndictionary = \"4x4_50\"")
                .unwrap()
                .target()
                .unwrap_err()
                .to_string();
        assert!(big.contains("less than the square"), "{big}");
    }
}
