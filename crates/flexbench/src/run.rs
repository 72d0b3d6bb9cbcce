//! `flexbench run`: the whole chain from a pipeline file, one recording or a batch.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `flexbench run`.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// Pipeline file (TOML): [run] mechanism and recording, and one table per stage.
    pipeline: PathBuf,
    /// Output directory (instead of [run] out).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Recording folders, or folders of recording folders: a batch (instead of [run]
    /// recording and recordings).
    #[arg(long, num_args = 1..)]
    recordings: Vec<PathBuf>,
    /// Recordings processed at once in a batch (default: [run] jobs, else the cores).
    #[arg(long)]
    jobs: Option<usize>,
}

/// `flexbench run`: what `Command::Run` describes.
pub(crate) fn run_command(args: RunArgs) -> Result<()> {
    let RunArgs {
        pipeline,
        out,
        recordings,
        jobs,
    } = args;
    run_pipeline(&pipeline, out, recordings, jobs)
}

/// `flexbench run`: one recording, or a batch.
fn run_pipeline(
    pipeline: &std::path::Path,
    out: Option<PathBuf>,
    recordings: Vec<PathBuf>,
    jobs: Option<usize>,
) -> Result<()> {
    let clock = std::time::Instant::now();
    let plan = flexbench_pipeline::run::RunPlan::resolve(pipeline, out, recordings)?;
    if plan.batch.is_empty() {
        run_one(&plan, clock)
    } else {
        run_many(&plan, jobs, clock)
    }
}

/// The progress bars' style.
fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg:40} [{bar:30}] {percent:>3}% {elapsed_precise}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// `flexbench run` on one recording (the pipeline file's [run] recording): a bar per stage.
fn run_one(plan: &flexbench_pipeline::run::RunPlan, clock: std::time::Instant) -> Result<()> {
    use flexbench_pipeline::run::{run_recording, RunEvent};
    let style = bar_style();
    let (name, rec) = plan.recording()?;
    let mut pb: Option<ProgressBar> = None;
    let mut label = String::new();
    // Each stage's label by name: a stage run beside later ones (the overlay) ends after them.
    let mut labels: HashMap<String, String> = HashMap::new();
    let summary = run_recording(
        &plan.file,
        &plan.pipeline,
        &rec,
        &plan.out,
        &mut |e| match e {
            RunEvent::Stage { name, index, of } => {
                label = format!("[{index}/{of}] {name}");
                labels.insert(name, label.clone());
                if let Some(b) = pb.take() {
                    b.finish_and_clear();
                }
                let b = ProgressBar::new(1000).with_style(style.clone());
                b.set_message(label.clone());
                pb = Some(b);
            }
            RunEvent::Progress(what, f) => {
                if let Some(b) = &pb {
                    b.set_message(format!("{label}: {what}"));
                    b.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64);
                }
            }
            RunEvent::Warning(w) => match &pb {
                Some(b) => b.suspend(|| eprintln!("warning: {w}")),
                None => eprintln!("warning: {w}"),
            },
            RunEvent::Done(o) => {
                if let Some(b) = pb.take() {
                    b.finish_and_clear();
                }
                let label = labels.get(&o.name).unwrap_or(&label);
                println!(
                    "{label:<22} {:>8.2} s  {}",
                    o.seconds,
                    if o.ran { "ran" } else { "unchanged: kept" }
                );
            }
        },
    )
    .with_context(|| format!("running {} on recording {name}", plan.pipeline.display()))?;
    let ran = summary.outcomes.iter().filter(|o| o.ran).count();
    println!(
        "{} of {} stages ran in {:.2} s; report {}; manifest {}",
        ran,
        summary.outcomes.len(),
        clock.elapsed().as_secs_f64(),
        summary.report.display(),
        summary.manifest.display()
    );
    Ok(())
}

/// `flexbench run` on a batch of recordings, `jobs` at once: a bar per recording, then a
/// line per recording and the summary tables.
fn run_many(
    plan: &flexbench_pipeline::run::RunPlan,
    jobs: Option<usize>,
    clock: std::time::Instant,
) -> Result<()> {
    use flexbench_pipeline::run::{discover_recordings, run_batch, RunEvent};
    let flexbench_pipeline::run::RunPlan {
        file,
        pipeline,
        mechanism,
        out,
        batch,
        ..
    } = plan;
    let style = bar_style();
    let folders = discover_recordings(batch)?;
    let jobs = jobs
        .or(file.run.jobs)
        .unwrap_or_else(flexbench_pipeline::threads);
    let multi = indicatif::MultiProgress::new();
    let bars: std::collections::BTreeMap<String, ProgressBar> = folders
        .iter()
        .map(|f| {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let b = multi.add(ProgressBar::new(1000).with_style(style.clone()));
            b.set_message(format!("{name}: waiting"));
            (name, b)
        })
        .collect();
    let stage_of: std::sync::Mutex<std::collections::BTreeMap<String, String>> = Default::default();
    let events = |name: &str, e: RunEvent| {
        let Some(b) = bars.get(name) else { return };
        match e {
            RunEvent::Stage {
                name: stage,
                index,
                of,
            } => {
                let l = format!("{name}: [{index}/{of}] {stage}");
                b.set_message(l.clone());
                b.set_position(0);
                if let Ok(mut m) = stage_of.lock() {
                    m.insert(name.to_string(), l);
                }
            }
            RunEvent::Progress(_, f) => b.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64),
            RunEvent::Warning(w) => multi.suspend(|| eprintln!("warning: {name}: {w}")),
            RunEvent::Done(_) => b.set_position(1000),
        }
    };
    let (items, files) = run_batch(file, pipeline, mechanism, &folders, out, jobs, &events)?;
    for b in bars.values() {
        b.finish_and_clear();
    }
    print_batch(&items, &files, clock.elapsed().as_secs_f64())
}

/// The batch's outcome: a line per recording (its report, or its error), the summary tables'
/// paths; an error when a recording failed.
fn print_batch(
    items: &[flexbench_pipeline::run::BatchItem],
    files: &[PathBuf],
    seconds: f64,
) -> Result<()> {
    let failed: Vec<&flexbench_pipeline::run::BatchItem> =
        items.iter().filter(|i| i.result.is_err()).collect();
    for it in items {
        match &it.result {
            Ok(r) => println!(
                "{:<20} ok      {} stage(s) ran; report {}",
                it.folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                r.outcomes.iter().filter(|o| o.ran).count(),
                r.report.display()
            ),
            Err(e) => eprintln!(
                "{:<20} FAILED  {e}",
                it.folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ),
        }
    }
    println!(
        "{} recording(s), {} failed, in {:.2} s; summary {}",
        items.len(),
        failed.len(),
        seconds,
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !failed.is_empty() {
        anyhow::bail!("{} of {} recordings failed (each error above and in the summary); the others' reports are written", failed.len(), items.len());
    }
    Ok(())
}
