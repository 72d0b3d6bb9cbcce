//! The stages' output folders, typed: the file names each stage writes into its folder are
//! named once, here, and the stages after it (in a run, from the command line or from Python)
//! find them through the folder's type instead of typing the names again.

use std::path::{Path, PathBuf};

/// The calibration file in the calibrate stage's folder of a run.
pub const CALIBRATION: &str = "calibration.yaml";

/// The tracks table in the track stage's folder of a run (the CSV beside it).
pub const TRACKS: &str = "tracks.parquet";

/// The smoothed markers table in the smooth stage's folder.
pub const SMOOTHED_MARKERS: &str = "markers.parquet";

/// A stage's record in its folder (`process`, `fem`, `compare`, `overlay`, `report`).
pub const SUMMARY: &str = "summary.json";

/// The identification's record in the identify stage's folder.
pub const IDENTIFY_RECORD: &str = "identify.json";

/// The comparison with the rig's measured table, in the compare stage's folder.
pub const MEASURED_RECORD: &str = "measured.json";

/// A table of the folder `process` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessedTable {
    /// Each marker's position, velocity and acceleration per sample (m, m/s, m/s^2, bench
    /// frame).
    Markers,
    /// Each body's pose, velocity and acceleration per sample (bench frame, SI).
    Bodies,
    /// The liaison forces and the actuators' efforts per sample (N, N m), with their bands.
    Forces,
    /// The fitted minus the measured marker positions (m, bench frame).
    FitResiduals,
    /// The samples the fit flagged (frame, marker, reason, score).
    FitFlags,
}

impl ProcessedTable {
    /// Every table of the folder.
    pub const ALL: [ProcessedTable; 5] = [
        ProcessedTable::Markers,
        ProcessedTable::Bodies,
        ProcessedTable::Forces,
        ProcessedTable::FitResiduals,
        ProcessedTable::FitFlags,
    ];

    /// The table of file stem `stem`, None for a stem that is none of the folder's tables.
    pub fn of_stem(stem: &str) -> Option<ProcessedTable> {
        Self::ALL.into_iter().find(|t| t.stem() == stem)
    }

    /// The table's file stem.
    pub fn stem(self) -> &'static str {
        match self {
            ProcessedTable::Markers => "markers",
            ProcessedTable::Bodies => "bodies",
            ProcessedTable::Forces => "forces",
            ProcessedTable::FitResiduals => "fit_residuals",
            ProcessedTable::FitFlags => "fit_flags",
        }
    }
}

/// The folder `process` wrote (`flexbench process --out`, a run's `process/`): its tables and
/// its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessedFolder(PathBuf);

impl ProcessedFolder {
    /// The folder at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ProcessedFolder(dir.into())
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The table `table`: its Parquet file, else its CSV (a folder holding only the CSV, as an
    /// edit by hand or another tool may leave it).
    pub fn table(&self, table: ProcessedTable) -> PathBuf {
        self.stem(table.stem())
    }

    /// The table of stem `stem` (one `process` writes beside its named ones: the bodies moved
    /// along the frame's directions, `identify_frame::table_stem`): Parquet, else CSV.
    pub fn stem(&self, stem: &str) -> PathBuf {
        let parquet = self.0.join(format!("{stem}.parquet"));
        match parquet.exists() {
            true => parquet,
            false => self.0.join(format!("{stem}.csv")),
        }
    }

    /// The process stage's record (`ProcessRecord`).
    pub fn record(&self) -> PathBuf {
        self.0.join(SUMMARY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table is the Parquet file where there is one, else the CSV; the record is the
    /// folder's summary.
    #[test]
    fn a_processed_folder_finds_its_tables() {
        let dir = tempfile::tempdir().unwrap();
        let folder = ProcessedFolder::new(dir.path());
        std::fs::write(dir.path().join("bodies.csv"), "t\n").unwrap();
        std::fs::write(dir.path().join("forces.parquet"), "").unwrap();
        std::fs::write(dir.path().join("forces.csv"), "t\n").unwrap();
        let name = |p: PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(name(folder.table(ProcessedTable::Bodies)), "bodies.csv");
        assert_eq!(name(folder.table(ProcessedTable::Forces)), "forces.parquet");
        assert_eq!(name(folder.record()), "summary.json");
        assert_eq!(folder.path(), dir.path());
    }
}
