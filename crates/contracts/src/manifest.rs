//! The run's manifest (`manifest.json`): everything needed to repeat a run exactly (the build,
//! the inputs' hashes, every stage's parameters, the rendered recording's seed) and nothing that
//! changes between two runs (no dates, no wall times). Written and read back by [`Manifest`];
//! the report page states it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An input of a run: its path as given and the SHA-256 of its bytes (a folder's: of its files'
/// names and bytes, in order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// The path, as the pipeline file gives it (relative to the working folder).
    pub path: String,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
}

/// One stage of a run as the manifest lists it (fields in the file's order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageEntry {
    /// Its inputs: a name and the SHA-256 of its bytes.
    pub inputs: BTreeMap<String, String>,
    /// SHA-256 over the build, the parameters and the inputs' bytes (the stage's cache key).
    pub key: String,
    /// The files it wrote (relative to its folder) and their SHA-256.
    pub outputs: BTreeMap<String, String>,
    /// The stage's name (calibrate, track, smooth, process, fem, compare, report).
    pub stage: String,
}

/// The manifest of one recording's run (fields in the file's order: alphabetical).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The build's identity: the package version and the hash of the binary.
    pub build: String,
    /// flexbench's version.
    pub flexbench: String,
    /// The run's inputs by name (pipeline_file, mechanism, video, views, plane_view, clicks,
    /// calibration or tracks).
    pub inputs: BTreeMap<String, InputFile>,
    /// OpenCV's version.
    pub opencv: String,
    /// Every stage's settings as the pipeline file resolved them (one table per stage).
    pub parameters: serde_json::Value,
    /// The recording's name (its folder's).
    pub recording: String,
    /// The command that repeats the run.
    pub repeat: String,
    /// The seed of a rendered recording (None: not rendered).
    pub seed: Option<u64>,
    /// The stages, in the order they ran or were kept (empty before they ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageEntry>,
}
