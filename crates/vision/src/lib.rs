//! The vision stage: camera calibration (intrinsics, lens distortion, the bench plane), rendered
//! truth (what a known camera would film of the simulated bench), and sub-pixel tracking of the
//! five lever markers in a video file. OpenCV does the image work; this is the only crate that
//! needs it.

#![warn(missing_docs)]

mod assign;
pub mod bench_frame;
pub mod blob;
pub mod calibrate;
pub mod camera;
pub mod charuco;
pub mod corrections;
pub mod depth;
pub mod fiducial;
pub mod flags;
pub mod gapfill;
pub mod kinds;
mod labels;
pub mod lens;
pub mod luma;
pub mod motion_camera;
pub mod outline;
pub mod overlay;
pub mod pattern;
pub mod plane_uncertainty;
pub mod readout;
pub mod render;
pub mod response;
pub mod shutter;
pub mod smear;
pub mod template;
pub mod timebase;
pub mod track;
pub mod track_config;

pub use camera::{BenchPlane, Calibration, CornerResidual, Intrinsics};

/// Errors of the vision stage, each naming the file and what to do.
#[allow(missing_docs)] // the fields are named in each variant's message
#[derive(Debug, thiserror::Error)]
pub enum VisionError {
    /// OpenCV reported an error: what was being done; OpenCV's own error is the cause.
    #[error("{context}: OpenCV failed")]
    OpenCv {
        context: String,
        #[source]
        source: opencv::Error,
    },
    /// A file or folder cannot be read, listed or written: what was tried; the system's (or
    /// OpenCV's) own error is the cause.
    #[error(transparent)]
    Io(#[from] flexbench_contracts::IoFailure),
    /// A calibration file lacks a value or has a wrong one.
    #[error("calibration file {path}: {reason}")]
    CalibrationFile { path: String, reason: String },
    /// Calibration is impossible with the views given.
    #[error("calibration: {0}")]
    Calibration(String),
    /// A video cannot be used.
    #[error("video {path}: {reason}")]
    Video { path: String, reason: String },
    /// Tracking failed.
    #[error("tracking {path}: {reason}")]
    Tracking { path: String, reason: String },
}

/// Attach a context to an OpenCV error.
pub(crate) fn cv<T>(context: &str, r: opencv::Result<T>) -> Result<T, VisionError> {
    r.map_err(|source| VisionError::OpenCv {
        context: context.to_string(),
        source,
    })
}

impl VisionError {
    /// `path` could not `doing` ("be read", "be written"...): `e` is why.
    pub fn io(
        path: &std::path::Path,
        doing: impl Into<String>,
        e: impl Into<flexbench_contracts::Cause>,
    ) -> VisionError {
        VisionError::Io(flexbench_contracts::IoFailure::new(path, doing, e))
    }
}

/// The version of the OpenCV library flexbench is linked with (e.g. "4.6.0").
pub fn opencv_version() -> String {
    opencv::core::get_version_string().unwrap_or_else(|_| "unknown".into())
}
