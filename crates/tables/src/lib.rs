//! Reading and writing the contract tables as CSV and Parquet through polars.
//!
//! Writers produce both formats side by side (`forces.csv`, `forces.parquet`), each atomically
//! (temporary file, then rename), so a failed run never leaves a half-written table in place of
//! an earlier one. Readers accept either format, chosen by the extension, and check the
//! contract's columns and invariants with messages that name the file, the column and the row.

#![warn(missing_docs)]

use std::fs::File;
use std::path::{Path, PathBuf};

use flexbench_contracts::atomic::{write_with, AtomicError};
use flexbench_contracts::motion::{BodyRow, MarkerRowRead, BODY_COLUMNS, MARKER_COLUMNS};
use flexbench_contracts::{
    Bodies, Column as FbColumn, ContractError, Forces, Late, MarkerResiduals, MarkerStates,
    ModeKind, ModeRow, Modes, Table, TrackRow, Tracks,
};
use polars::prelude::*;

mod read;
pub use read::*;

pub mod excel;
pub mod interchange;
pub mod matlab;
mod parquet_footer;

pub use flexbench_contracts::Cause;

/// Errors of table input and output.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum TableError {
    /// The file cannot be opened, read or written: what was tried; the system's (or the
    /// writer's) own error is the cause.
    #[error(transparent)]
    Io(#[from] flexbench_contracts::IoFailure),
    /// There is no file at the path.
    #[error("{path}: no such file; check the path")]
    NotFound { path: String },
    /// The file is not a readable CSV or Parquet table; the reader's own error is the cause.
    #[error("{path}: not a readable {format} table; check that the file is complete and in the contract format (docs/bench.md section 6)")]
    Format {
        path: String,
        format: String,
        #[source]
        source: Cause,
    },
    /// The extension names no known format.
    #[error("{path}: unknown table format '{ext}'; use .csv or .parquet")]
    Extension { path: String, ext: String },
    /// A column has the wrong type.
    #[error("{path}: column '{column}' {reason}")]
    Column {
        path: String,
        column: String,
        reason: String,
    },
    /// A column that cannot be read as the kind asked (numbers, text); polars' own error is
    /// the cause.
    #[error("{path}: column '{column}' cannot be read as {kind}")]
    Cast {
        path: String,
        column: String,
        kind: &'static str,
        #[source]
        source: Cause,
    },
    /// A wide tracks table (one row per frame) that cannot be read as one.
    #[error("{path}: {reason}")]
    Wide { path: String, reason: String },
    /// A coordinate unit that is not one of the known ones.
    #[error("tracks unit \"{unit}\": use m, mm, cm, in (bench frame) or px (image pixels, with a calibration)")]
    Unit { unit: String },
    /// Nothing to export (too few samples).
    #[error("{0}")]
    Export(String),
    /// Tracks that break the contract, met while exporting them.
    #[error(transparent)]
    Tracks(Box<ContractError>),
    /// The table breaks the contract: which file; the contract's own error is the cause.
    #[error("{path}: the table breaks its contract")]
    Contract {
        path: String,
        #[source]
        source: Box<ContractError>,
    },
}

fn to_polars(table: &Table) -> PolarsResult<DataFrame> {
    let cols: Vec<Column> = table
        .columns()
        .map(|(name, c)| polars_column(name, c))
        .collect();
    DataFrame::new(table.height(), cols)
}

/// `table` as polars holds it, each column let go once converted (one column held twice at a
/// time, not the whole table).
fn into_polars(table: Table) -> PolarsResult<DataFrame> {
    let height = table.height();
    let cols: Vec<Column> = table
        .into_columns()
        .into_iter()
        .map(|(name, c)| polars_column(&name, &c))
        .collect();
    DataFrame::new(height, cols)
}

/// One column as polars holds it.
fn polars_column(name: &str, c: &FbColumn) -> Column {
    let n = PlSmallStr::from(name);
    match c {
        FbColumn::F64(v) => Column::new(n, v.as_slice()),
        FbColumn::OptF64(v) => Column::new(n, v.as_slice()),
        FbColumn::I64(v) => Column::new(n, v.as_slice()),
        FbColumn::Str(v) => Column::new(n, v.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
    }
}

/// The file at `path` could not be written: `e` is why.
fn io_err(path: &Path, e: impl Into<Cause>) -> TableError {
    TableError::io(path, "be written", e)
}

impl TableError {
    /// The file at `path` could not `doing` ("be read", "be written"...): `e` is why.
    pub fn io(path: &Path, doing: &'static str, e: impl Into<Cause>) -> TableError {
        TableError::Io(flexbench_contracts::IoFailure::new(path, doing, e))
    }
}

fn atomic<F>(path: &Path, fill: F) -> Result<(), TableError>
where
    F: FnOnce(&Path) -> Result<(), TableError>,
{
    write_with(path, fill).map_err(|e| match e {
        AtomicError::Fill(e) => e,
        AtomicError::Io(p, e) => io_err(&p, e),
    })
}

/// Write `table` as `<dir>/<stem>.csv` and `<dir>/<stem>.parquet`, each atomically. Returns the
/// two paths.
pub fn write_table(table: &Table, dir: &Path, stem: &str) -> Result<[PathBuf; 2], TableError> {
    let df = to_polars(table).map_err(|e| io_err(dir, e))?;
    write_frame(df, dir, stem)
}

/// [`write_table`] of a table no longer needed: its columns are let go as they are converted,
/// so a long recording's table is not held twice while it is written.
pub fn write_owned_table(table: Table, dir: &Path, stem: &str) -> Result<[PathBuf; 2], TableError> {
    let df = into_polars(table).map_err(|e| io_err(dir, e))?;
    write_frame(df, dir, stem)
}

/// `df` written as `<dir>/<stem>.csv` and `<dir>/<stem>.parquet`, each atomically.
fn write_frame(mut df: DataFrame, dir: &Path, stem: &str) -> Result<[PathBuf; 2], TableError> {
    let csv = dir.join(format!("{stem}.csv"));
    let pq = dir.join(format!("{stem}.parquet"));
    atomic(&csv, |tmp| {
        let mut f = File::create(tmp).map_err(|e| io_err(&csv, e))?;
        CsvWriter::new(&mut f)
            .include_header(true)
            .finish(&mut df)
            .map_err(|e| io_err(&csv, e))?;
        f.sync_all().map_err(|e| io_err(&csv, e))
    })?;
    atomic(&pq, |tmp| {
        let f = File::create(tmp).map_err(|e| io_err(&pq, e))?;
        ParquetWriter::new(f)
            .finish(&mut df)
            .map_err(|e| io_err(&pq, e))?;
        Ok(())
    })?;
    Ok([csv, pq])
}

/// A table as polars holds it (what [`read_frame`] returns).
pub use polars::prelude::DataFrame;

/// Whether the table has a column called `name`.
pub fn has_column(df: &DataFrame, name: &str) -> bool {
    df.get_column_names().iter().any(|c| c.as_str() == name)
}

/// Guarded reads under way (see [`guarded`]).
static GUARDED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// The last panic message seen while a guarded read was under way.
static LAST_PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
static HOOK: std::sync::Once = std::sync::Once::new();

/// Run a polars reader so that a panic inside it (polars panics on some damaged Parquet files,
/// in its worker threads; found by fuzzing) becomes an error naming the damage instead of a
/// crash. While a guarded read is under way the panic hook keeps quiet (it records the message);
/// otherwise it is the hook that was there before.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    use std::sync::atomic::Ordering;
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.load(Ordering::SeqCst) > 0 {
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                if let Ok(mut last) = LAST_PANIC.lock() {
                    *last = Some(msg);
                }
            } else {
                previous(info)
            }
        }));
    });
    GUARDED.fetch_add(1, Ordering::SeqCst);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.fetch_sub(1, Ordering::SeqCst);
    r.map_err(|_| {
        LAST_PANIC
            .lock()
            .ok()
            .and_then(|mut l| l.take())
            .unwrap_or_else(|| "the reader failed".into())
    })
}

/// Read a CSV or Parquet table (by extension) into a data frame.
pub fn read_frame(path: &Path) -> Result<DataFrame, TableError> {
    let p = path.display().to_string();
    if !path.exists() {
        return Err(TableError::NotFound { path: p });
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let fmt = |format: &str, e: PolarsError| TableError::Format {
        path: p.clone(),
        format: format.into(),
        source: Box::new(e),
    };
    let damaged = |format: &str, reason: String| TableError::Format {
        path: p.clone(),
        format: format.into(),
        source: format!("the file is damaged: {reason}").into(),
    };
    match ext.as_str() {
        "csv" => guarded(|| {
            CsvReadOptions::default()
                .with_has_header(true)
                .with_infer_schema_length(None)
                .try_into_reader_with_file_path(Some(path.to_path_buf()))
                .and_then(|r| r.finish())
        })
        .map_err(|r| damaged("CSV", r))?
        .map_err(|e| fmt("CSV", e)),
        "parquet" | "pq" => {
            let mut f = File::open(path).map_err(|e| TableError::io(path, "be opened", e))?;
            parquet_footer::check(&mut f).map_err(|reason| TableError::Format {
                path: p.clone(),
                format: "Parquet".into(),
                source: reason.into(),
            })?;
            guarded(|| ParquetReader::new(f).finish())
                .map_err(|r| damaged("Parquet", r))?
                .map_err(|e| fmt("Parquet", e))
        }
        other => Err(TableError::Extension {
            path: p,
            ext: other.into(),
        }),
    }
}

/// The column called `name`, or an error listing the columns the file has.
fn column<'a>(df: &'a DataFrame, path: &Path, name: &str) -> Result<&'a Column, TableError> {
    df.column(name).map_err(|_| {
        broken(path)(ContractError::MissingColumn {
            table: path
                .file_stem()
                .map_or("table".into(), |s| s.to_string_lossy().into_owned()),
            column: name.into(),
            found: df
                .get_column_names()
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    })
}

/// A float column with gaps (null, empty cell or NaN-free), cast from integers if need be.
pub fn opt_f64(df: &DataFrame, path: &Path, name: &str) -> Result<Vec<Option<f64>>, TableError> {
    let col = column(df, path, name)?;
    let bad = |reason: String| TableError::Column {
        path: path.display().to_string(),
        column: name.into(),
        reason,
    };
    if matches!(col.dtype(), DataType::String) {
        // Report the first cell that is not a number.
        if let Ok(ca) = col.str() {
            if let Some((row, s)) = ca.iter().enumerate().find_map(|(i, s)| {
                s.filter(|s| s.trim().parse::<f64>().is_err())
                    .map(|s| (i, s))
            }) {
                return Err(bad(format!("row {}: '{s}' is not a number", row + 1)));
            }
        }
    }
    let cast_err = cast_error(path, name, "numbers");
    let cast = col.cast(&DataType::Float64).map_err(cast_err)?;
    let ca = cast.f64().map_err(cast_err)?;
    Ok(ca.iter().collect())
}

/// The error of column `name` of the table at `path` that polars cannot read as `kind`.
fn cast_error<'a>(
    path: &'a Path,
    name: &'a str,
    kind: &'static str,
) -> impl Fn(PolarsError) -> TableError + Copy + 'a {
    move |e| TableError::Cast {
        path: path.display().to_string(),
        column: name.into(),
        kind,
        source: Box::new(e),
    }
}

/// A text column (numbers are turned into text, e.g. marker names 1..5).
pub fn strings(df: &DataFrame, path: &Path, name: &str) -> Result<Vec<Option<String>>, TableError> {
    let col = column(df, path, name)?;
    let cast_err = cast_error(path, name, "text");
    let cast = col.cast(&DataType::String).map_err(cast_err)?;
    let ca = cast.str().map_err(cast_err)?;
    Ok(ca.iter().map(|s| s.map(|s| s.to_string())).collect())
}

/// A table as CSV with a second header row of units (each column's, from the table's schema:
/// `flexbench_contracts::units`, "?" when unknown), for spreadsheet and plotting programs that
/// read one: numbers in their shortest exact form, gaps empty, text quoted where it must be.
/// Written through a temporary file renamed into place.
pub fn write_csv_with_units(table: &Table, path: &Path) -> Result<(), TableError> {
    use std::fmt::Write;
    let quote = |s: &str| match s.contains([',', '"', '\n']) {
        true => format!("\"{}\"", s.replace('"', "\"\"")),
        false => s.to_string(),
    };
    let names: Vec<String> = table.fields().iter().map(|f| quote(f.name())).collect();
    let units: Vec<String> = table.fields().iter().map(|f| quote(f.unit())).collect();
    let mut text = format!("{}\n{}\n", names.join(","), units.join(","));
    for k in 0..table.height() {
        for (c, (_, col)) in table.columns().enumerate() {
            if c > 0 {
                text.push(',');
            }
            let _ = match col {
                FbColumn::F64(v) if v[k].is_finite() => write!(text, "{:?}", v[k]),
                FbColumn::OptF64(v) => match v[k].filter(|x| x.is_finite()) {
                    Some(x) => write!(text, "{x:?}"),
                    None => Ok(()),
                },
                FbColumn::I64(v) => write!(text, "{}", v[k]),
                FbColumn::Str(v) => write!(text, "{}", quote(&v[k])),
                FbColumn::F64(_) => Ok(()),
            };
        }
        text.push('\n');
    }
    flexbench_contracts::atomic::write_bytes(path, text.as_bytes()).map_err(|e| io_err(path, e))
}

#[cfg(test)]
mod tests {
    /// An error's message with its causes, as the command line prints them.
    trait Chain {
        fn chain(&self) -> String;
    }

    impl<E: std::error::Error> Chain for E {
        fn chain(&self) -> String {
            flexbench_contracts::causes(self).join("\n  caused by: ")
        }
    }

    use super::*;

    /// A flags table, empty or not, reads back as written from CSV and Parquet.
    #[test]
    fn flags_round_trip() {
        use flexbench_contracts::flags::{Flag, FlagReason, Flags};
        let dir = tempfile::tempdir().unwrap();
        let some = Flags::from_rows(vec![
            Flag {
                frame: 7,
                marker: "M2".into(),
                reason: FlagReason::SecondBlob,
                score: 3.5,
            },
            Flag {
                frame: 2,
                marker: "M4".into(),
                reason: FlagReason::PartlyHidden,
                score: 1.25,
            },
        ]);
        for (stem, flags) in [("none", Flags::default()), ("some", some)] {
            let files = write_table(&flags.to_table().unwrap(), dir.path(), stem).unwrap();
            for f in files {
                assert_eq!(read_flags(&f).unwrap(), flags, "{}", f.display());
            }
        }
    }

    /// Regression (fuzzing): a damaged Parquet file read at a path where a good one was read
    /// before, in the same process, made polars panic in its worker threads; it is an error
    /// naming the file now, whatever the reader does inside.
    #[test]
    fn damaged_parquet_at_a_reused_path_is_an_error() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let good = std::fs::read(root.join("recordings/default/truth/tracks.parquet")).unwrap();
        let bad =
            std::fs::read(root.join("tests/bad-input/fuzz/tracks-parquet-1.parquet")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tracks.parquet");
        for _ in 0..20 {
            std::fs::write(&p, &good).unwrap();
            assert!(read_tracks(&p).is_ok());
            std::fs::write(&p, &bad).unwrap();
            let e = read_tracks(&p).unwrap_err().chain();
            assert!(e.contains("tracks.parquet") && e.contains("Parquet"), "{e}");
        }
    }

    /// A Parquet file another tool wrote (pyarrow: several row groups, dictionaries, zstd,
    /// version-2 pages, statistics, a page index; scripts/make_pyarrow_tracks.py) passes the
    /// footer check and reads as the same rows as the CSV it came from.
    #[test]
    fn parquet_written_by_pyarrow_reads_as_its_csv() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let pq = read_tracks(&root.join("tests/golden/tracks-pyarrow.parquet")).unwrap();
        let csv = read_tracks(&root.join("recordings/default/truth/tracks.csv")).unwrap();
        let first: Vec<_> = csv
            .rows()
            .iter()
            .filter(|r| r.frame < 60)
            .cloned()
            .collect();
        assert_eq!(first.len(), 300);
        assert_eq!(pq.rows(), &first[..]);
    }

    /// A rolling shutter's tracks (a late sample beside one at its frame's time) read back as
    /// written from CSV and Parquet, the three late columns last; a table with one of the three
    /// columns alone, or a row with one of the three, is refused, naming the columns.
    #[test]
    fn late_samples_round_trip_and_come_in_threes() {
        let dir = tempfile::tempdir().unwrap();
        let row = |marker: &str, late: Option<Late>| TrackRow {
            frame: 0,
            t: 0.0,
            marker: marker.into(),
            u: Some(10.0),
            v: Some(200.0),
            x: Some(0.1),
            y: Some(0.2),
            sigma_px: Some(0.05),
            late,
        };
        let late = Late {
            delay_s: 0.0041,
            x: 0.1012,
            y: 0.1994,
        };
        let tracks = Tracks::new(vec![row("M1", Some(late)), row("M2", None)]).unwrap();
        let table = tracks.to_table().unwrap();
        let names = table.names();
        assert_eq!(names[8..], ["delay_s", "x_seen", "y_seen"]);
        for f in write_table(&table, dir.path(), "late").unwrap() {
            assert_eq!(read_tracks(&f).unwrap(), tracks, "{}", f.display());
        }
        let csv = dir.path().join("late.csv");
        let text = std::fs::read_to_string(&csv).unwrap();
        let one = dir.path().join("one.csv");
        let cut: String = text
            .lines()
            .map(|l| l.rsplitn(3, ',').nth(2).unwrap_or(l).to_string() + "\n")
            .collect();
        std::fs::write(&one, cut).unwrap();
        let e = read_tracks(&one).unwrap_err().chain();
        assert!(e.contains("delay_s") && e.contains("all three"), "{e}");
        let half = dir.path().join("half.csv");
        std::fs::write(&half, text.replacen(",0.1994", ",", 1)).unwrap();
        let e = read_tracks(&half).unwrap_err().chain();
        assert!(e.contains("row 1") && e.contains("three together"), "{e}");
    }

    #[test]
    fn tracks_round_trip_through_both_formats_keeping_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![
            TrackRow {
                frame: 0,
                t: 0.0,
                marker: "M1".into(),
                u: None,
                v: None,
                x: Some(0.1),
                y: Some(0.2),
                sigma_px: None,
                late: None,
            },
            TrackRow {
                frame: 0,
                t: 0.0,
                marker: "M2".into(),
                u: Some(3.5),
                v: Some(4.5),
                x: Some(0.3),
                y: Some(-0.25),
                sigma_px: Some(0.04),
                late: None,
            },
            TrackRow {
                frame: 1,
                t: 0.004,
                marker: "M1".into(),
                u: None,
                v: None,
                x: None,
                y: None,
                sigma_px: None,
                late: None,
            },
            TrackRow {
                frame: 1,
                t: 0.004,
                marker: "M2".into(),
                u: None,
                v: None,
                x: Some(1.0 / 3.0),
                y: Some(0.0),
                sigma_px: None,
                late: None,
            },
        ];
        let tracks = Tracks::new(rows).unwrap();
        let [csv, pq] = write_table(&tracks.to_table().unwrap(), dir.path(), "tracks").unwrap();
        // The table written as it is let go: the same files, to the byte.
        let owned = write_owned_table(tracks.to_table().unwrap(), dir.path(), "owned").unwrap();
        for (a, b) in [&csv, &pq].into_iter().zip(&owned) {
            assert!(
                std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                "{}",
                b.display()
            );
        }
        for p in [csv, pq] {
            let back = read_tracks(&p).unwrap();
            assert_eq!(back, tracks, "{}", p.display());
        }
    }

    #[test]
    fn bodies_and_forces_read_checked_from_both_formats() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["crank", "lever", "crank", "lever"]
            .map(String::from)
            .to_vec();
        let keys = [
            ("t", FbColumn::F64(vec![0.0, 0.0, 0.01, 0.01])),
            ("body", FbColumn::Str(names)),
        ];
        let values = BODY_COLUMNS.iter().enumerate().map(|(k, c)| {
            let v = vec![Some(k as f64), None, Some(1.5), Some(-2.0)];
            (*c, FbColumn::OptF64(v))
        });
        let bodies = Table::from_columns("bodies", keys.into_iter().chain(values)).unwrap();
        let forces = Table::from_columns(
            "forces",
            [
                ("t", FbColumn::F64(vec![0.0, 0.01])),
                ("B_x", FbColumn::OptF64(vec![Some(12.5), None])),
                ("B_x_sigma", FbColumn::OptF64(vec![Some(0.5), None])),
            ],
        )
        .unwrap();
        let [bc, bp] = write_table(&bodies, dir.path(), "bodies").unwrap();
        let [fc, fp] = write_table(&forces, dir.path(), "forces").unwrap();
        for p in [bc, bp] {
            let b = read_bodies(&p).unwrap();
            assert_eq!(b.t(), [0.0, 0.01], "{}", p.display());
            let lever = b.body("lever").unwrap();
            assert_eq!(lever.column("epsilon").unwrap(), [None, Some(-2.0)]);
            assert_eq!(
                b.body("crank").unwrap().column("phi").unwrap(),
                [Some(2.0), Some(1.5)]
            );
        }
        for p in [fc, fp] {
            let f = read_forces(&p).unwrap();
            assert_eq!(f.t(), [0.0, 0.01]);
            assert_eq!(f.column("B_x").unwrap(), [Some(12.5), None]);
            assert_eq!(f.column("B_x_sigma").unwrap(), [Some(0.5), None]);
        }
        let modes = Modes::new(vec![
            ModeRow {
                t: 0.0,
                crank_angle: 0.5,
                mode: 1,
                kind: ModeKind::Bending,
                freq_hz: Some(20.5),
                full_freq_hz: Some(20.4),
                damping_ratio: Some(1e-3),
            },
            ModeRow {
                t: 0.0,
                crank_angle: 0.5,
                mode: 2,
                kind: ModeKind::Axial,
                freq_hz: None,
                full_freq_hz: None,
                damping_ratio: None,
            },
        ])
        .unwrap();
        for p in write_table(&modes.to_table().unwrap(), dir.path(), "modal").unwrap() {
            assert_eq!(read_modes(&p).unwrap(), modes, "{}", p.display());
        }
        // A NaN and an unsorted time are named with the file, row and column.
        let p = dir.path().join("bad.csv");
        std::fs::write(&p, "t,B_x\n0.0,1.0\n0.01,NaN\n").unwrap();
        let e = read_forces(&p).unwrap_err().chain();
        assert!(
            e.contains("bad.csv") && e.contains("row 2") && e.contains("'B_x'"),
            "{e}"
        );
        std::fs::write(&p, "t,B_x\n0.01,1.0\n0.0,1.0\n").unwrap();
        let e = read_forces(&p).unwrap_err().chain();
        assert!(e.contains("0.01 s to 0 s"), "{e}");
    }

    #[test]
    fn bad_tables_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "frame,t,marker,x,y\n0,0.0,M1,abc,0.1\n").unwrap();
        let e = read_tracks(&p).unwrap_err().chain();
        assert!(e.contains("column 'x'") && e.contains("abc"), "{e}");
        std::fs::write(&p, "frame,t,marker,x\n0,0.0,M1,0.1\n").unwrap();
        let e = read_tracks(&p).unwrap_err().chain();
        assert!(
            e.contains("table 't' has no column 'y' (its columns: frame, t, marker, x)"),
            "{e}"
        );
        std::fs::write(&p, "frame,t,marker,x,y\n0,0.0,M1,nan,0.1\n").unwrap();
        let e = read_tracks(&p).unwrap_err().chain();
        assert!(e.contains("NaN"), "{e}");
        let e = read_tracks(&dir.path().join("none.csv"))
            .unwrap_err()
            .chain();
        assert!(e.contains("no such file"), "{e}");
        let q = dir.path().join("t.parquet");
        std::fs::write(&q, b"PAR1 truncated").unwrap();
        let e = read_tracks(&q).unwrap_err().chain();
        assert!(e.contains("not a readable Parquet"), "{e}");
    }
}
