//! The report stage's files: the interchange formats, the tables gathered as MATLAB and Excel
//! files.

use super::*;

/// The tracks and the markers' fitted kinematics as TRC and C3D; returns the tracks' frame rate
/// and the files left out: a recording too long for C3D's 16-bit frame numbers (over 4.5 min
/// at 240 frames/s) gets its TRC files only, with a warning, not a failed run.
pub(super) fn interchange_files(
    page: &mut RunPage,
    dirs: &StageDirs,
) -> Result<(f64, Vec<String>), PipelineError> {
    use flexbench_tables::interchange::{fits_c3d, write_c3d, write_trc, Trajectories};
    let tracks = flexbench_tables::read_tracks(&dirs.track.join(crate::folders::TRACKS))?;
    let traj = Trajectories::from_tracks(&tracks)?;
    let fitted = Trajectories::from_markers_table(
        &crate::folders::ProcessedFolder::new(&dirs.process)
            .table(crate::folders::ProcessedTable::Markers),
    )?;
    let mut skipped = Vec::new();
    for (tr, stem) in [(&traj, "tracks"), (&fitted, "markers")] {
        page.files
            .push(write_trc(tr, &page.out().join(format!("{stem}.trc")))?);
        if fits_c3d(tr) {
            page.files
                .push(write_c3d(tr, &page.out().join(format!("{stem}.c3d")))?);
        } else {
            skipped.push(format!(
                "{stem}.c3d not written: its {} frames of {} markers from frame {} exceed the C3D header's frame numbers (at most 65535) or marker count (255); {stem}.trc holds them all",
                tr.positions.len(),
                tr.markers.len(),
                tr.first_frame
            ));
        }
    }
    Ok((traj.rate, skipped))
}

/// The run's results in the files users open, written side by side (the run's last stage has
/// both cores): `results.mat` (MATLAB level 5: a variable per table, `<stage>_<table>`, a
/// struct of column vectors with a `units` struct, and per summary, `<stage>_<summary>`, nested
/// structs) and `results.xlsx` (the process stage's markers, bodies and forces, the lever's
/// modes and the comparison, a sheet each, with a units row); with `csv_units`, every table as
/// `tables/<stage>_<table>.csv` with a units row under the names. One table is held at a time.
pub(super) fn result_files(
    page: &mut RunPage,
    dirs: &StageDirs,
    csv_units: bool,
) -> Result<(), PipelineError> {
    let out = page.out().to_path_buf();
    let stages: Vec<(&str, &Path)> = [
        Some(("track", dirs.track.as_path())),
        Some(("smooth", dirs.smooth.as_path())),
        Some(("process", dirs.process.as_path())),
        dirs.overlay.as_deref().map(|d| ("overlay", d)),
        dirs.fem.as_deref().map(|d| ("fem", d)),
        dirs.compare.as_deref().map(|d| ("compare", d)),
        Some(("report", out.as_path())),
    ]
    .into_iter()
    .flatten()
    .collect();
    let (mat, xlsx) = (
        page.out().join("results.mat"),
        page.out().join("results.xlsx"),
    );
    let none = PathBuf::new();
    let (fem, compare) = (
        dirs.fem.as_ref().unwrap_or(&none),
        dirs.compare.as_ref().unwrap_or(&none),
    );
    let sheets = [
        (&dirs.process, "markers"),
        (&dirs.process, "bodies"),
        (&dirs.process, "forces"),
        (fem, "modal"),
        (compare, "comparison"),
        (compare, "measured_comparison"),
    ]
    .map(|(dir, stem)| (dir.join(format!("{stem}.parquet")), stem));
    let (made_mat, made_xlsx) = std::thread::scope(|s| {
        let book = s.spawn(|| {
            let tables = sheets
                .iter()
                .filter(|(path, _)| path.exists())
                .map(|(path, stem)| flexbench_tables::read_any(path, stem));
            flexbench_tables::excel::write_workbook(&xlsx, tables)
        });
        let made_mat = write_mat_file(&mat, &stages);
        let made_xlsx = book.join().unwrap_or_else(|_| {
            Err(flexbench_tables::TableError::Export(
                "the workbook's thread stopped unexpectedly".into(),
            ))
        });
        (made_mat, made_xlsx)
    });
    made_mat?;
    made_xlsx?;
    page.files.extend([mat, xlsx]);
    if csv_units {
        let dir = out.join("tables");
        crate::ensure_dir(&dir)?;
        for (stage, folder) in &stages {
            for (file, stem) in files_with(folder, ".parquet")? {
                let table = flexbench_tables::read_any(&file, &stem)?;
                let path = dir.join(format!("{stage}_{stem}.csv"));
                flexbench_tables::write_csv_with_units(&table, &path)?;
                page.files.push(path);
            }
        }
    }
    Ok(())
}

/// The MATLAB file of the stages' folders ([`result_files`]).
pub(super) fn write_mat_file(path: &Path, stages: &[(&str, &Path)]) -> Result<(), PipelineError> {
    use flexbench_tables::matlab::{table_struct, write_mat, MatValue};
    use flexbench_tables::TableError;
    let mut files = Vec::new();
    for (stage, dir) in stages {
        for suffix in [".parquet", ".json"] {
            for (file, stem) in files_with(dir, suffix)? {
                files.push((format!("{stage}_{stem}"), file, stem));
            }
        }
    }
    let vars = files.into_iter().map(|(name, file, stem)| {
        let value = match file.extension().is_some_and(|e| e == "json") {
            false => table_struct(&flexbench_tables::read_any(&file, &stem)?),
            true => {
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| TableError::io(&file, "be read", e))?;
                let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                    TableError::Export(format!("{}: not JSON: {e}", file.display()))
                })?;
                MatValue::from_json(&value)
            }
        };
        Ok((name, value))
    });
    Ok(write_mat(path, vars)?)
}

/// The files of `dir` whose names end in `suffix` (sorted), with their names less the suffix;
/// none but stage records among the JSON files (`stage.json`, the run's bookkeeping, left out).
pub(super) fn files_with(
    dir: &Path,
    suffix: &str,
) -> Result<Vec<(PathBuf, String)>, PipelineError> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| crate::io_error(dir, "list the folder", e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| crate::io_error(dir, "list the folder", e))?
            .path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(stem) = name.strip_suffix(suffix) {
            if stem != "stage" && !stem.ends_with(".tmp") {
                out.push((path.clone(), stem.to_string()));
            }
        }
    }
    out.sort();
    Ok(out)
}
