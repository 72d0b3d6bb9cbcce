//! `flexbench run` from Python: one recording (`run`), a batch on the command line's threads
//! (`run_batch`), or a batch whose recordings Python hands to an executor of its own
//! (`batch_plan`, then `run_folder` on each recording wherever the executor runs it, then
//! `batch_summary`): a lab's archive on a cluster. Each path runs the command line's code
//! (`flexbench_pipeline::run::{run_recording, run_folder, batch_summary}`), so the tables and
//! the batch summary are the command line's, byte for byte.

use std::path::{Path, PathBuf};

use flexbench_pipeline::run::{
    batch_summary as write_summary, discover_recordings, BatchItem, PipelineFile, RunEvent,
    RunPlan, RunSummary, StageOutcome,
};
use flexbench_pipeline::PipelineError;
use pyo3::prelude::*;

use crate::errors::Failed;

/// One stage of a run: name, whether it ran (false: unchanged, kept), wall time (s), folder.
type Outcome = (String, bool, f64, PathBuf);

/// One recording's run: name, output folder, report, manifest, stages, warnings.
type RunOutcome = (String, PathBuf, PathBuf, PathBuf, Vec<Outcome>, Vec<String>);

/// A recording's folder, and its run or its error's message (as the batch summary shows it).
type Ran = (PathBuf, Option<RunOutcome>, Option<String>);

/// A run's summary and warnings as Python receives them.
fn run_outcome(s: RunSummary, warnings: Vec<String>) -> RunOutcome {
    let stages = s
        .outcomes
        .into_iter()
        .map(|o| (o.name, o.ran, o.seconds, o.dir))
        .collect();
    (s.name, s.out, s.report, s.manifest, stages, warnings)
}

/// A run as Python gave it back ([`run_outcome`] read the other way), for the batch summary.
fn run_summary(r: RunOutcome) -> RunSummary {
    let (name, out, report, manifest, stages, _) = r;
    let outcomes = stages
        .into_iter()
        .map(|(name, ran, seconds, dir)| StageOutcome {
            name,
            ran,
            seconds,
            dir,
        })
        .collect();
    RunSummary {
        name,
        out,
        outcomes,
        report,
        manifest,
    }
}

/// `flexbench run` on one recording: the pipeline file's chain, `out` overriding `[run] out`.
/// Returns the recording's folder (empty: none) and its run. A pipeline file that names a
/// batch is refused: that is `run_batch`'s.
#[pyfunction]
#[pyo3(signature = (pipeline, out=None))]
fn run(py: Python<'_>, pipeline: PathBuf, out: Option<PathBuf>) -> PyResult<(PathBuf, RunOutcome)> {
    py.detach(|| {
        let plan = RunPlan::resolve(&pipeline, out, Vec::new()).map_err(Failed::bare)?;
        if !plan.batch.is_empty() {
            return Err(Failed::bare(PipelineError::Input(format!(
                "{}: [run] recordings names a batch; run it with flexbench.run_batch (one run \
                 per recording folder), or remove [run] recordings to run [run] recording",
                pipeline.display()
            ))));
        }
        run_one(&plan)
    })
    .map_err(Failed::into_py)
}

/// A run's events, its warnings kept in `warnings`.
fn gather(warnings: &mut Vec<String>) -> impl FnMut(RunEvent) + '_ {
    |e| {
        if let RunEvent::Warning(w) = e {
            warnings.push(w.to_string());
        }
    }
}

/// One recording's run, its warnings gathered.
fn run_one(plan: &RunPlan) -> Result<(PathBuf, RunOutcome), Failed> {
    let (name, rec) = plan.recording().map_err(Failed::bare)?;
    let mut warnings = Vec::new();
    let summary = flexbench_pipeline::run::run_recording(
        &plan.file,
        &plan.pipeline,
        &rec,
        &plan.out,
        &mut gather(&mut warnings),
    )
    .map_err(|e| {
        let context = format!("running {} on recording {name}", plan.pipeline.display());
        Failed::new(context, e)
    })?;
    let folder = plan.file.run.recording.clone().unwrap_or_default();
    Ok((folder, run_outcome(summary, warnings)))
}

/// The batch's plan: the pipeline file read, its recording folders found (`recordings`, else
/// `[run] recordings`), its output folder made. Refuses a file that names no batch.
fn plan_batch(
    pipeline: &Path,
    out: Option<PathBuf>,
    recordings: Vec<PathBuf>,
) -> Result<(RunPlan, Vec<PathBuf>), Failed> {
    let plan = RunPlan::resolve(pipeline, out, recordings).map_err(Failed::bare)?;
    if plan.batch.is_empty() {
        return Err(Failed::bare(PipelineError::Input(format!(
            "{}: no batch to run: give recordings=[folders] or [run] recordings (a recording \
             folder, or a folder of them); one recording is flexbench.run's",
            pipeline.display()
        ))));
    }
    let folders = discover_recordings(&plan.batch).map_err(Failed::bare)?;
    flexbench_pipeline::ensure_dir(&plan.out).map_err(Failed::bare)?;
    Ok((plan, folders))
}

/// `flexbench run` on a batch, `jobs` recordings at once on this process's threads (default:
/// `[run] jobs`, else the cores), as the command line runs it. Returns per recording its run
/// or its error's message, and the batch summary's files.
#[pyfunction]
#[pyo3(signature = (pipeline, out=None, recordings=Vec::new(), jobs=None))]
fn run_batch(
    py: Python<'_>,
    pipeline: PathBuf,
    out: Option<PathBuf>,
    recordings: Vec<PathBuf>,
    jobs: Option<usize>,
) -> PyResult<(Vec<Ran>, Vec<PathBuf>)> {
    py.detach(|| {
        let (plan, folders) = plan_batch(&pipeline, out, recordings)?;
        run_many(&plan, &folders, jobs)
    })
    .map_err(Failed::into_py)
}

/// A batch's runs, `jobs` at once (default: the pipeline file's, else the cores).
fn run_many(
    plan: &RunPlan,
    folders: &[PathBuf],
    jobs: Option<usize>,
) -> Result<(Vec<Ran>, Vec<PathBuf>), Failed> {
    let file: &PipelineFile = &plan.file;
    let jobs = jobs
        .or(file.run.jobs)
        .unwrap_or_else(flexbench_pipeline::threads);
    let warnings = std::sync::Mutex::new(std::collections::BTreeMap::<String, Vec<String>>::new());
    let events = |name: &str, e: RunEvent| {
        if let (RunEvent::Warning(w), Ok(mut m)) = (e, warnings.lock()) {
            m.entry(name.to_string()).or_default().push(w.to_string());
        }
    };
    let (items, files) = flexbench_pipeline::run::run_batch(
        file,
        &plan.pipeline,
        &plan.mechanism,
        folders,
        &plan.out,
        jobs,
        &events,
    )
    .map_err(Failed::bare)?;
    let mut warned = warnings.into_inner().unwrap_or_default();
    let runs = items
        .into_iter()
        .map(|it| match it.result {
            Ok(s) => {
                let w = warned.remove(&s.name).unwrap_or_default();
                (it.folder, Some(run_outcome(s, w)), None)
            }
            Err(e) => (it.folder, None, Some(e)),
        })
        .collect();
    Ok((runs, files))
}

/// A batch to hand out: its recording folders and its output folder (made), for
/// `run_folder` on each and `batch_summary` after.
#[pyfunction]
#[pyo3(signature = (pipeline, out=None, recordings=Vec::new()))]
fn batch_plan(
    pipeline: PathBuf,
    out: Option<PathBuf>,
    recordings: Vec<PathBuf>,
) -> PyResult<(Vec<PathBuf>, PathBuf)> {
    let (plan, folders) = plan_batch(&pipeline, out, recordings).map_err(Failed::into_py)?;
    Ok((folders, plan.out))
}

/// One recording of a batch, wherever an executor runs it: the pipeline file's chain on
/// `folder` into `out/<folder's name>`. A failed recording is returned as its message (the
/// batch goes on); an unreadable pipeline file raises.
#[pyfunction]
fn run_folder(py: Python<'_>, pipeline: PathBuf, folder: PathBuf, out: PathBuf) -> PyResult<Ran> {
    py.detach(|| {
        let plan =
            RunPlan::resolve(&pipeline, Some(out), vec![folder.clone()]).map_err(Failed::bare)?;
        let mut warnings = Vec::new();
        let ran = flexbench_pipeline::run::run_folder(
            &plan.file,
            &plan.pipeline,
            &plan.mechanism,
            &folder,
            &plan.out,
            &mut gather(&mut warnings),
        );
        Ok(match ran {
            Ok(s) => (folder, Some(run_outcome(s, warnings)), None),
            Err(e) => (folder, None, Some(e.to_string())),
        })
    })
    .map_err(Failed::into_py)
}

/// The batch summary (`batch-summary.csv`, `.html`, `.json` in `out`) of runs made by
/// `run_folder`, in the batch's order: the command line's summary of the same runs.
#[pyfunction]
fn batch_summary(out: PathBuf, runs: Vec<Ran>) -> PyResult<Vec<PathBuf>> {
    let items: Vec<BatchItem> = runs
        .into_iter()
        .map(|(folder, run, error)| BatchItem {
            folder,
            result: match run {
                Some(r) => Ok(run_summary(r)),
                None => Err(error.unwrap_or_default()),
            },
        })
        .collect();
    write_summary(&items, &out).map_err(|e| Failed::bare(e).into_py())
}

/// The functions above, added to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_batch, m)?)?;
    m.add_function(wrap_pyfunction!(batch_plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_folder, m)?)?;
    m.add_function(wrap_pyfunction!(batch_summary, m)?)?;
    Ok(())
}
