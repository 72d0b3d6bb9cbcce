//! `flexbench`: the command line of the wind-pump lever bench pipeline. It parses, dispatches
//! to the library crates and reports; the work lives in `flexbench-pipeline` and below. One
//! module per command (`cli` holds the arguments' tree and the dispatch); this file the helpers
//! they share and `main`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use flexbench_mechanism::file::load;
use indicatif::{ProgressBar, ProgressStyle};

mod calibrate;
mod check;
mod cli;
mod compare;
mod fem;
#[cfg(test)]
mod flag_walk;
mod identify;
mod measured;
mod overlay;
mod probe;
mod process;
mod render;
mod run;
mod simulate;
mod smooth;
mod track;

/// A stage's progress bar on the terminal (standard error), the stages' one style: 1000
/// steps, fed by [`on_bar`].
pub(crate) fn bar() -> ProgressBar {
    let pb = ProgressBar::new(1000);
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg:20} [{bar:40}] {percent:>3}% {elapsed_precise}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    pb
}

/// A stage's events on the terminal: what it does and how far on the bar `pb`, its warnings
/// printed above the bar. Every stage's command passes it to its job.
pub(crate) fn on_bar(pb: &ProgressBar) -> impl FnMut(flexbench_pipeline::StageEvent) + '_ {
    use flexbench_pipeline::StageEvent;
    move |event| match event {
        StageEvent::Warning(w) => pb.suspend(|| eprintln!("warning: {w}")),
        StageEvent::Progress(what, f) => {
            pb.set_message(what.to_string());
            pb.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64);
        }
    }
}

/// The mechanism file's mechanism when one is given.
pub(crate) fn load_optional(
    mechanism: Option<&std::path::Path>,
) -> Result<Option<flexbench_mechanism::Mechanism>> {
    mechanism
        .map(|m| {
            load(m)
                .map(|f| f.mechanism)
                .with_context(|| format!("loading the mechanism {}", m.display()))
        })
        .transpose()
}

/// Print the files a command wrote.
pub(crate) fn print_written(files: &[PathBuf]) {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
}

/// Parse "a<sep>b" into two numbers.
/// A band of frequencies from "LO,HI" (Hz), as the pipeline file's two-number arrays.
pub(crate) fn parse_band(text: &str) -> Result<[f64; 2]> {
    let (lo, hi) = parse_pair::<f64>(text, ',')?;
    Ok([lo, hi])
}

pub(crate) fn parse_pair<T: std::str::FromStr>(text: &str, sep: char) -> Result<(T, T)> {
    let (a, b) = text
        .split_once(sep)
        .ok_or_else(|| anyhow::anyhow!("'{text}' has no '{sep}'"))?;
    let a = a
        .trim()
        .parse::<T>()
        .map_err(|_| anyhow::anyhow!("'{a}' is not a number"))?;
    let b = b
        .trim()
        .parse::<T>()
        .map_err(|_| anyhow::anyhow!("'{b}' is not a number"))?;
    Ok((a, b))
}

/// The allocator: mimalloc, for the chain's millions of small per-sample matrices (glibc's
/// left the process stage at twice its live memory in holes, and spent a tenth of its time).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option `purge_delay` by its number in the mimalloc 3 this build links
/// (libmimalloc-sys 0.1.49's `mi_option_e`; the crate's named constants follow mimalloc 2's
/// numbering). A test checks the number against the option's documented default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory freed by a stage goes back to the system within 10 ms (mimalloc's default: 1 s) and
/// no transparent huge page is formed (mimalloc asks for them on its arenas, and a partly used
/// 2 MB page is resident whole): on the 100 s render the chain's peak resident memory
/// 357-389 -> 295 MB at the same wall time (benches/long-run.sh; purging at once, 0 ms, cost
/// a fifth of the time). Set before the stages allocate; the few pages made before `main`
/// keep their size.
fn tune_allocator() {
    // SAFETY: mi_option_set stores an integer in mimalloc's option table (thread-safe); prctl
    // with PR_SET_THP_DISABLE only sets a flag of this process's address space.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10);
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    // A closed standard output (`flexbench probe ... | head -1`) ends the process quietly, as
    // any Unix tool, instead of a panic at the next line printed. Outputs are written to
    // temporary files and renamed, so an end at any moment loses no earlier result.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // polars' thread pool (table reading and writing) follows flexbench's thread count unless
    // POLARS_MAX_THREADS says otherwise; set before any thread exists and before polars reads it.
    tune_allocator();
    if std::env::var_os("POLARS_MAX_THREADS").is_none() {
        std::env::set_var(
            "POLARS_MAX_THREADS",
            flexbench_pipeline::threads().to_string(),
        );
    }
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use libmimalloc_sys::mi_option_get;

    /// The option numbered [`super::MI_OPTION_PURGE_DELAY`] is mimalloc's purge delay: it
    /// holds that option's documented default (1000 ms) and its neighbours theirs (use_numa_nodes
    /// 0 at 16, os_tag 100 at 18, max_errors 32 at 19), which a renumbering would not.
    #[test]
    fn purge_delay_is_the_option_numbered() {
        // SAFETY: reading mimalloc's option table.
        let at = |n| unsafe { mi_option_get(n) };
        let n = super::MI_OPTION_PURGE_DELAY;
        assert_eq!([at(n), at(n + 1), at(n + 3), at(n + 4)], [1000, 0, 100, 32]);
    }
}
