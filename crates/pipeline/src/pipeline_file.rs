//! The pipeline file (`flexbench run PIPELINE.toml`): its tables, one per stage, each key
//! checked by name and type; the defaults every stage runs with (pipelines/default.toml
//! documents every key).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use flexbench_contracts::names::Switch;

use crate::smooth::SmoothSettings;
use crate::PipelineError;

mod convert;
mod defaults;
pub use defaults::{section_keys, stage_defaults};

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

impl Default for ProcessSection {
    fn default() -> Self {
        let d = crate::ProcessConfig::default();
        let s = crate::process::SmootherSettings::default();
        ProcessSection {
            method: crate::process::KinematicsMethod::Smoother,
            periodic: s.periodic,
            refine_horizontal: s.refine_horizontal,
            peak_locking: s.peak_locking,
            window: s.start.window,
            order: s.start.order,
            edges: s.start.edges,
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
            calibrate_bands: s.calibrate_bands,
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
    /// The frames copied without drawing: decoding plus encoding alone, the overlay's
    /// benchmark baseline (default false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub plain: bool,
}

impl Default for OverlaySection {
    fn default() -> Self {
        OverlaySection {
            enabled: true,
            plain: false,
        }
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
            _ => PipelineError::read(path, "a pipeline file; give the pipeline file's path", e),
        })?;
        toml::from_str(&text).map_err(|source| PipelineError::Toml {
            what: path.display().to_string(),
            source,
        })
    }
}
