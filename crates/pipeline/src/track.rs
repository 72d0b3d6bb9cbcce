//! `flexbench track`: a video file and a calibration -> the tracks table (CSV or Parquet, by the
//! output's extension) and a summary beside it.

use std::path::{Path, PathBuf};

use flexbench_vision::track::{track_video, TrackConfig, TrackSummary};
use flexbench_vision::Calibration;

use crate::{write_json, PipelineError};

/// Track the markers of `video` with the calibration at `calibration` into `out` (.csv or
/// .parquet; the other format and `<stem>.summary.json` are written beside it).
pub fn track(
    video: &Path,
    calibration: &Path,
    cfg: &TrackConfig,
    out: &Path,
    progress: impl FnMut(usize, usize),
) -> Result<(TrackSummary, Vec<PathBuf>), PipelineError> {
    let vision = |e: flexbench_vision::VisionError| PipelineError::Input(e.to_string());
    let cal = Calibration::read(calibration).map_err(vision)?;
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if ext != "csv" && ext != "parquet" {
        return Err(PipelineError::Input(format!(
            "{}: the tracks table must end in .csv or .parquet",
            out.display()
        )));
    }
    let (rows, summary) = track_video(video, &cal, cfg, progress).map_err(vision)?;
    let table = flexbench_contracts::Tracks::new(rows)?.into_table();
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::ensure_dir(dir)?;
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tracks".into());
    let mut files: Vec<PathBuf> = flexbench_tables::write_table(&table, dir, &stem)?.to_vec();
    let mut s = serde_json::to_value(&summary).map_err(|e| PipelineError::Input(e.to_string()))?;
    s["video"] = serde_json::json!(video.display().to_string());
    s["calibration"] = serde_json::json!(calibration.display().to_string());
    files.push(write_json(&dir.join(format!("{stem}.summary.json")), &s)?);
    Ok((summary, files))
}
