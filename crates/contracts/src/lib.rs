//! The data contracts of flexbench (docs/bench.md section 6): the long tables that flow
//! between stages, their exact column names, and the invariants a table checks when it is built
//! (finite values, strictly increasing time per marker), in the manner of OpenSim's
//! `TimeSeriesTable`. This crate has no dependencies on the heavy stacks (polars, OpenCV) so that
//! every numerical crate can use it.

#![warn(missing_docs)]

pub mod atomic;
pub mod flags;
pub mod frame;
pub mod gauss;
pub mod json;
pub mod lever;
pub mod manifest;
pub mod modes;
pub mod motion;
pub mod names;
pub mod parallel;
pub mod series;
pub mod table;
pub mod tracks;
pub mod units;

pub use modes::{ModeKind, ModeRow, Modes};

/// A foreign error (the system's, a parser's, a library's) kept as the cause of one of
/// flexbench's errors: the error says what flexbench was doing, the cause why it failed, and
/// the chain of causes prints each once (the command line's "caused by:" lines, Python's
/// message).
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A file or folder that could not be read, written, made or listed: which, what was tried,
/// and why (the system's or the library's own error, kept as the cause). Every stage's error
/// holds it as its `Io` variant, printed as `<path>: cannot <doing>`.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot {doing}")]
pub struct IoFailure {
    /// The file or folder, as the message names it.
    pub path: String,
    /// What could not be done: "be read", "be written", "create the output directory; choose
    /// a writable --out"...
    pub doing: String,
    /// Why: the system's or the library's error.
    #[source]
    pub source: Cause,
}

impl IoFailure {
    /// `path` could not `doing`: `e` is why.
    pub fn new(path: &std::path::Path, doing: impl Into<String>, e: impl Into<Cause>) -> Self {
        IoFailure {
            path: path.display().to_string(),
            doing: doing.into(),
            source: e.into(),
        }
    }
}

/// The messages of `e` and of each of its causes, `e`'s first: what the command line prints
/// after "error:" and on each "caused by:" line, and Python's message.
pub fn causes(e: &dyn std::error::Error) -> Vec<String> {
    let mut out = Vec::new();
    let mut at: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = at {
        out.push(c.to_string());
        at = c.source();
    }
    out
}

/// A [`Cause`] in an error that is cloned and compared (a stage's error kept in its results):
/// shared, and equal to another when both say the same words.
#[derive(Debug, Clone)]
pub struct SharedCause(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl SharedCause {
    /// `e`, shared.
    pub fn new(e: impl Into<Cause>) -> SharedCause {
        SharedCause(std::sync::Arc::from(e.into()))
    }
}

impl std::fmt::Display for SharedCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for SharedCause {
    fn eq(&self, other: &SharedCause) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}
pub use motion::{Bodies, BodyMotion, Forces, MarkerResiduals, MarkerRow, MarkerStates};
pub use table::{Column, Table};
pub use tracks::{Late, MarkerKind, MarkerSeries, TrackRow, Tracks, FIDUCIAL_DICTIONARIES};

/// Column names of the `tracks` table (long format, one row per marker and frame).
pub const TRACKS_COLUMNS: [&str; 7] = ["frame", "t", "marker", "u", "v", "x", "y"];
/// The key columns of the markers' kinematics table: time t (s) and the marker's name; its
/// value columns are [`motion::MARKER_COLUMNS`] (bench frame, SI), each with its `_sigma`.
pub const MARKER_KEYS: [&str; 2] = ["t", "marker"];
/// The key columns of the bodies' kinematics table: time t (s) and the body's name; its value
/// columns are [`motion::BODY_COLUMNS`] (bench frame, SI, rad).
pub const BODY_KEYS: [&str; 2] = ["t", "body"];
pub use motion::{BODY_COLUMNS, MARKER_COLUMNS};

/// A violated contract: which table, which row or marker, which value, and what to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum ContractError {
    /// A required column is absent.
    #[error("table '{table}' has no column '{column}' (its columns: {found}); rename the column or export the table in the contract format")]
    MissingColumn {
        table: String,
        column: String,
        found: String,
    },
    /// A value that must be finite is NaN or infinite.
    #[error("table '{table}', row {row} (marker {marker}): column '{column}' is {value}, not a finite number; remove the row or leave the position empty to mark a gap")]
    NotFinite {
        table: String,
        row: usize,
        marker: String,
        column: String,
        value: f64,
    },
    /// A coordinate so large that no unit makes it a bench position (beyond [`MAX_COORDINATE`]).
    #[error("table '{table}', row {row} (marker {marker}): column '{column}' is {value:e}, beyond any bench position in any unit; check the column and the unit")]
    Absurd {
        table: String,
        row: usize,
        marker: String,
        column: String,
        value: f64,
    },
    /// Time does not increase strictly for one marker.
    #[error("table '{table}', row {row}: time of marker {marker} goes from {previous} s to {current} s; times must increase strictly per marker (sort the table by time and remove duplicated frames)")]
    UnsortedTime {
        table: String,
        row: usize,
        marker: String,
        previous: f64,
        current: f64,
    },
    /// Two rows of the same marker share a frame number.
    #[error("table '{table}', row {row}: frame {frame} of marker {marker} appears twice; remove the duplicate")]
    DuplicateFrame {
        table: String,
        row: usize,
        marker: String,
        frame: i64,
    },
    /// A row has only one of a coordinate pair.
    #[error("table '{table}', row {row} (marker {marker}): '{present}' is given but '{missing}' is empty; a marker position needs both coordinates, or neither for a gap")]
    HalfPosition {
        table: String,
        row: usize,
        marker: String,
        present: String,
        missing: String,
    },
    /// A table with no usable rows.
    #[error("table '{table}' has no rows with a position; it needs at least one marker seen in some frame")]
    Empty { table: String },
    /// Columns of different lengths in one table.
    #[error("table '{table}': column '{column}' has {len} rows, expected {expected}")]
    RaggedColumn {
        table: String,
        column: String,
        len: usize,
        expected: usize,
    },
    /// Two columns of one table with the same name.
    #[error("table '{table}': column '{column}' is there twice; a table names each column once")]
    DuplicateColumn { table: String, column: String },
    /// Marker names differ from what the mechanism expects.
    #[error("{0}")]
    Markers(String),
    /// A value that must be there is absent.
    #[error("table '{table}', row {row}: column '{column}' is empty; every row needs it")]
    Missing {
        table: String,
        row: usize,
        column: String,
    },
    /// A value that must be finite or absent is NaN or infinite.
    #[error("table '{table}', row {row}: column '{column}' is {value}, not a finite number; leave it empty where there is no value")]
    NotFiniteValue {
        table: String,
        row: usize,
        column: String,
        value: f64,
    },
    /// Time does not increase strictly.
    #[error("table '{table}', row {row}: time goes from {previous} s to {current} s; times must increase strictly (sort the table by time and remove duplicated samples)")]
    TimeNotIncreasing {
        table: String,
        row: usize,
        previous: f64,
        current: f64,
    },
    /// The rows do not share one time grid.
    #[error("table '{table}': {reason}")]
    TimeGrid { table: String, reason: String },
    /// A value outside what its column allows.
    #[error("table '{table}', row {row}: column '{column}' {reason}")]
    Invalid {
        table: String,
        row: usize,
        column: String,
        reason: String,
    },
}
