//! The stage driver: the jobs the `flexbench` command runs, each computing everything first and
//! writing its outputs only at the end (each file atomically), so that a failed run leaves every
//! earlier output as it was.
//!
//! - [`simulate`]: the ground truth of a mechanism file (tracks, markers, bodies, forces).
//! - [`process`]: a tracks table -> differentiation -> kinematics -> inverse dynamics.

#![warn(missing_docs)]

pub mod band_calibration;
mod bootstrap_noise;
pub mod calibrate;
pub mod compare;
pub mod compare_measured;
#[cfg(test)]
mod error_walk;
pub mod fem;
pub mod folders;
pub mod identify;
pub mod identify_bootstrap;
pub mod identify_frame;
pub mod identify_held;
pub mod identify_refine;
pub mod job;
pub mod motion_calibration;
pub mod overlay;
pub mod pipeline_file;
pub mod process;
mod process_bands;
pub mod process_peak_locking;
pub mod recording;
pub mod render;
mod replicas;
pub mod report;
pub mod report_identify;
pub mod run;
pub mod run_identify;
pub mod runner;
pub mod simulate;
pub mod smooth;
pub mod tables;
pub mod track;

use std::path::{Path, PathBuf};

pub use process::{process, ProcessConfig, ProcessSummary};
pub use simulate::{simulate, SimulateSummary};

/// Errors of the jobs, each naming the stage and what to do.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum PipelineError {
    /// The mechanism stage refused.
    #[error(transparent)]
    Mechanism(#[from] flexbench_mechanism::MechanismError),
    /// The motion could not be estimated from the markers.
    #[error(transparent)]
    Kinematics(#[from] flexbench_kinematics::KinematicsError),
    /// A table could not be read or written.
    #[error(transparent)]
    Table(#[from] flexbench_tables::TableError),
    /// A table broke the contract.
    #[error(transparent)]
    Contract(#[from] flexbench_contracts::ContractError),
    /// The signal stage refused.
    #[error(transparent)]
    Signal(#[from] flexbench_signal::SignalError),
    /// A figure could not be drawn.
    #[error(transparent)]
    Report(#[from] flexbench_report::ReportError),
    /// The camera, the video or a view could not be read, calibrated or tracked.
    #[error(transparent)]
    Vision(#[from] flexbench_vision::VisionError),
    /// The elastic lever's model refused.
    #[error(transparent)]
    Fem(#[from] flexbench_fem::FemError),
    /// The render's camera file refused, or the render failed.
    #[error(transparent)]
    Render(#[from] flexbench_render::RenderError),
    /// The coupled simulation of elastic and rigid bodies refused or failed.
    #[error(transparent)]
    Flexible(#[from] flexbench_flexible::FlexError),
    /// A step of the elastic lever's analysis failed: what was computed, and why.
    #[error("{context}")]
    FemStep {
        /// What was being computed.
        context: String,
        /// Why it failed.
        #[source]
        source: flexbench_fem::FemError,
    },
    /// The comparison of measured and simulated series refused.
    #[error(transparent)]
    Compare(#[from] flexbench_compare::CompareError),
    /// The identification of the mechanism file's numbers refused.
    #[error(transparent)]
    Identify(#[from] flexbench_identify::IdentifyError),
    /// A TOML file (pipeline file, camera file, recording's inputs) that cannot be read as one:
    /// where, and the parser's reason (line, column, key).
    #[error("{what}: cannot be read")]
    Toml {
        /// The file, as the message names it.
        what: String,
        /// The parser's error.
        #[source]
        source: toml::de::Error,
    },
    /// An input file that cannot be read as what it should be: the file, what it should be
    /// and the fix; the system's (or the parser's) own error is the cause.
    #[error("{path}: cannot be read as {what}")]
    Read {
        path: String,
        what: String,
        #[source]
        source: flexbench_contracts::Cause,
    },
    /// An input that cannot be used (a setting, a file, tables that disagree), in words that
    /// name it and the fix.
    #[error("{0}")]
    Input(String),
    /// A file or folder could not be read, written, made or listed: what was tried; the
    /// system's (or the library's) own error is the cause.
    #[error(transparent)]
    Io(#[from] flexbench_contracts::IoFailure),
}

pub use flexbench_contracts::series::unwrap_angles;

/// Threads flexbench computes on ([`flexbench_contracts::parallel::threads`]).
pub fn threads() -> usize {
    flexbench_contracts::parallel::threads()
}

/// Create the output directory (and parents) or say why not.
pub fn ensure_dir(dir: &Path) -> Result<(), PipelineError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        PipelineError::io(
            dir,
            "create the output directory; choose a writable --out",
            e,
        )
    })?;
    Ok(())
}

/// The error of an I/O step on `p` (`what`: what could not be done).
pub(crate) fn io_error(p: &Path, what: &str, e: std::io::Error) -> PipelineError {
    PipelineError::io(p, what, e)
}

impl PipelineError {
    /// The input file at `path` cannot be read as `what` (what it should be, and the fix):
    /// `e` is why.
    pub fn read(
        path: &Path,
        what: impl Into<String>,
        e: impl Into<flexbench_contracts::Cause>,
    ) -> PipelineError {
        PipelineError::Read {
            path: path.display().to_string(),
            what: what.into(),
            source: e.into(),
        }
    }

    /// `path` could not `doing` ("be read", "be written"...): `e` is why.
    pub fn io(
        path: &Path,
        doing: impl Into<String>,
        e: impl Into<flexbench_contracts::Cause>,
    ) -> PipelineError {
        PipelineError::Io(flexbench_contracts::IoFailure::new(path, doing, e))
    }
}

/// A stage's record (JSON), written and read back by its own type.
pub trait StageRecord: serde::Serialize + serde::de::DeserializeOwned {
    /// The stage that writes it, named when a record cannot be read.
    const STAGE: &'static str;

    /// Write the record with its keys sorted (as every JSON file flexbench writes), atomically.
    fn write(&self, path: &Path) -> Result<PathBuf, PipelineError> {
        let value =
            serde_json::to_value(self).map_err(|e| PipelineError::io(path, "be written", e))?;
        write_json(path, &value)
    }

    /// Read a record back; an unreadable one names the file and the stage to run again.
    fn read(path: &Path) -> Result<Self, PipelineError> {
        let stage = Self::STAGE;
        let what =
            format!("the {stage} stage's record; run the {stage} stage again (delete its folder)");
        let text =
            std::fs::read_to_string(path).map_err(|e| PipelineError::read(path, &what, e))?;
        serde_json::from_str(&text).map_err(|e| PipelineError::read(path, what, e))
    }
}

/// A stage's warning: something the user should know about a run's results (the run went on).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StageWarning {
    /// The stage that found it (process, fem, compare...).
    pub stage: String,
    /// What it found, in words.
    pub warning: String,
}

impl std::fmt::Display for StageWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.stage, self.warning)
    }
}

/// What a stage tells its caller as it goes: its progress, and what the user should know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StageEvent<'a> {
    /// What the stage is doing, and the fraction of it done (0..1).
    Progress(&'a str, f64),
    /// Something the user should know (in words); the stage goes on.
    Warning(&'a str),
}

impl<'a> StageEvent<'a> {
    /// The progress of `done` of `total` items (frames, samples) of `what`.
    pub fn counted(what: &'a str, done: usize, total: usize) -> Self {
        StageEvent::Progress(what, done as f64 / total.max(1) as f64)
    }
}

/// Write a JSON value atomically.
pub fn write_json(path: &Path, value: &serde_json::Value) -> Result<PathBuf, PipelineError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| PipelineError::io(path, "be written", e))?;
    flexbench_contracts::atomic::write_bytes(path, text.as_bytes())
        .map_err(|e| PipelineError::io(path, "be written", e))?;
    Ok(path.to_path_buf())
}
