//! Batches: the recordings found under the folders given, run on threads, and their summary table.

use super::*;

/// Whether a folder is a recording (a video or a tracks table in it).
pub(super) fn is_recording(dir: &Path) -> bool {
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
            .map_err(|e| PipelineError::io(p, "be listed", e))?
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
pub(super) fn recording_inputs(folder: &Path) -> Result<Inputs, PipelineError> {
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
        .map_err(|e| PipelineError::read(&f, "a recording's inputs ([inputs] table)", e))?;
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
    let nominal = file.calibrate.nominal_camera.is_some();
    let rec = RecordingInputs::resolve(&name, Some(folder), &inputs, folder, mechanism, nominal)?;
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
pub(super) type BatchColumnOf = (
    flexbench_report::batch::BatchColumn,
    f64,
    fn(&ReportRecord) -> Option<f64>,
);

/// The batch summary's number columns: each recording's key numbers from its report's record.
pub(super) fn batch_columns() -> [BatchColumnOf; 9] {
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
pub(super) fn batch_row(
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
/// JSON in `out`; written by [`run_batch`], and by a caller that ran the recordings itself
/// ([`run_folder`] on each, e.g. Python's `run_batch` on a cluster).
pub fn batch_summary(items: &[BatchItem], out: &Path) -> Result<Vec<PathBuf>, PipelineError> {
    use flexbench_report::batch::{batch_csv, batch_html, BatchColumn, BatchRow};
    let cols = batch_columns();
    let (rows, json_rows): (Vec<BatchRow>, Vec<Value>) =
        items.iter().map(|it| batch_row(it, out, &cols)).unzip();
    let columns: Vec<BatchColumn> = cols.iter().map(|c| c.0).collect();
    let w = |p: PathBuf, b: &str| -> Result<PathBuf, PipelineError> {
        flexbench_contracts::atomic::write_bytes(&p, b.as_bytes())
            .map_err(|e| PipelineError::io(&p, "be written", e))?;
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
