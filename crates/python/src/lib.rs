//! `flexbench._native`: the stages of the wind-pump lever bench pipeline called from Python.
//!
//! Each function here is a stage of `flexbench-pipeline` as the command line calls it: the same
//! readers, checks, computations and files, the stage's settings given as the pipeline file's
//! keys (a JSON object made by the Python side from keyword arguments and read by the same
//! serde types, so an unknown key or name is refused in the same words). The GIL is released
//! while a stage computes. An error becomes a Python exception of the class of its stage
//! ([`errors`]) whose message is the command line's: the context, then each cause.
//! The Python package (`python/flexbench`) turns the files written into polars DataFrames.

mod batch;
mod errors;

use std::path::PathBuf;

use flexbench_contracts::table::{Column, Table};
use flexbench_pipeline::job::{
    CompareInputs, CompareJob, FemInputs, FemJob, IdentifyInputs, IdentifyJob, Job, ProcessInputs,
    ProcessJob, SmoothInputs, SmoothJob,
};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde::Serialize;

use errors::{fail, settings, Failed};

// The command line's allocator and its purge delay (crates/flexbench/src/main.rs,
// ARCHITECTURE.md): the stages allocate millions of small per-sample vectors; under the
// system's allocator the process stage ran a fifth slower.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option `purge_delay` by its number (as the command line sets it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A table's columns for Python: name, kind (`f64`, `opt_f64`, `i64`, `str`) and values.
type PyColumns = Vec<(String, &'static str, Py<PyAny>)>;

/// A table's columns as Python lists, in the table's order (gaps as None).
fn columns(py: Python<'_>, table: Table) -> PyResult<PyColumns> {
    let mut out = Vec::with_capacity(table.width());
    for (name, column) in table.into_columns() {
        let (kind, list) = match column {
            Column::F64(v) => ("f64", PyList::new(py, v)?),
            Column::OptF64(v) => ("opt_f64", PyList::new(py, v)?),
            Column::I64(v) => ("i64", PyList::new(py, v)?),
            Column::Str(v) => ("str", PyList::new(py, v)?),
        };
        out.push((name, kind, list.into_any().unbind()));
    }
    Ok(out)
}

/// A tracks table from any tool, checked as every stage checks it: flexbench's long format,
/// or a wide table (`<marker>_x`, `<marker>_y`) in `unit` at `fps`, its markers renamed
/// `markers`, pixels mapped through `calibration`. Returns its columns (frame, t, marker, u,
/// v, x, y in m, bench frame, sigma_px).
#[pyfunction]
#[pyo3(signature = (path, unit=None, fps=None, markers=None, calibration=None))]
fn read_tracks(
    py: Python<'_>,
    path: PathBuf,
    unit: Option<String>,
    fps: Option<f64>,
    markers: Option<Vec<String>>,
    calibration: Option<PathBuf>,
) -> PyResult<PyColumns> {
    let table = py
        .detach(|| {
            flexbench_pipeline::track::load_tracks(
                &path,
                unit.as_deref(),
                fps,
                markers.as_deref(),
                calibration.as_deref(),
            )
            .and_then(|t| Ok(t.into_table()?))
        })
        .map_err(|e| fail(Some(format!("reading the tracks {}", path.display())), e))?;
    columns(py, table)
}

/// The table `table` (markers, bodies, forces, fit_residuals, fit_flags) of the folder
/// `folder` that `process` wrote: its Parquet file, else its CSV (the pipeline's own rule,
/// `flexbench_pipeline::folders::ProcessedFolder`).
#[pyfunction]
fn processed_table(folder: PathBuf, table: &str) -> PyResult<PathBuf> {
    use flexbench_pipeline::folders::{ProcessedFolder, ProcessedTable};
    let t = ProcessedTable::of_stem(table).ok_or_else(|| {
        let known: Vec<&str> = ProcessedTable::ALL.iter().map(|t| t.stem()).collect();
        pyo3::exceptions::PyValueError::new_err(format!(
            "'{table}' is no table of a processed folder: one of {}",
            known.join(", ")
        ))
    })?;
    Ok(ProcessedFolder::new(folder).table(t))
}

/// A mechanism file, loaded and checked (as `flexbench check`), or the error naming its key.
fn load_mechanism(path: &std::path::Path) -> Result<flexbench_mechanism::Mechanism, Failed> {
    flexbench_mechanism::file::load(path)
        .map(|f| f.mechanism)
        .map_err(|e| {
            Failed::new(
                format!("loading the mechanism {}", path.display()),
                e.into(),
            )
        })
}

/// `flexbench smooth`: every marker of the tracks at `tracks` smoothed and differentiated into
/// the markers table at `out` (with its summary, and the rigid field's tables when asked),
/// `settings` the `[smooth]` table's keys as JSON. Returns the files written.
#[pyfunction]
#[pyo3(signature = (tracks, out, settings_json, mechanism=None))]
fn smooth(
    py: Python<'_>,
    tracks: PathBuf,
    out: PathBuf,
    settings_json: &str,
    mechanism: Option<PathBuf>,
) -> PyResult<Vec<PathBuf>> {
    let chosen: flexbench_pipeline::smooth::SmoothSettings = settings("smooth", settings_json)?;
    py.detach(|| -> Result<Vec<PathBuf>, Failed> {
        let mech = mechanism.as_deref().map(load_mechanism).transpose()?;
        let inputs = SmoothInputs {
            tracks: &tracks,
            mechanism: mech.as_ref(),
        };
        let made = SmoothJob::run(&chosen, &inputs, &out, &mut |_| {})
            .map_err(|e| Failed::new(format!("smoothing {}", tracks.display()), e))?;
        Ok(made.files)
    })
    .map_err(Failed::into_py)
}

/// `flexbench process` with the `[process]` table's keys (`settings_json`): the tracks at
/// `tracks` (the samples of the `flags` table left out) into the markers', bodies' and liaison
/// forces' tables with their bands, written into `out`. Returns the files written and the
/// stage's warnings.
#[pyfunction]
#[pyo3(signature = (tracks, mechanism, out, settings_json, flags=None, calibration=None))]
fn process(
    py: Python<'_>,
    tracks: PathBuf,
    mechanism: PathBuf,
    out: PathBuf,
    settings_json: &str,
    flags: Option<PathBuf>,
    calibration: Option<PathBuf>,
) -> PyResult<(Vec<PathBuf>, Vec<String>)> {
    let section: flexbench_pipeline::run::ProcessSection = settings("process", settings_json)?;
    py.detach(|| -> Result<(Vec<PathBuf>, Vec<String>), Failed> {
        let mech = load_mechanism(&mechanism)?;
        let inputs = ProcessInputs {
            tracks: &tracks,
            flags: flags.as_deref(),
            calibration: calibration.as_deref(),
            mechanism: &mech,
        };
        let made = ProcessJob::run(&section, &inputs, &out, &mut |_| {})
            .map_err(|e| Failed::new(format!("processing {}", tracks.display()), e))?;
        Ok((made.files, made.warnings))
    })
    .map_err(Failed::into_py)
}

/// `flexbench fem` with the `[fem]` table's keys (`settings_json`): the elastic lever's modes
/// along the motion of the bodies table `bodies` under the liaison forces of `forces`, and
/// its forced response (compared with the `measured` fit residuals when given), written into
/// `out`. Returns the files written and the stage's warnings.
#[pyfunction]
#[pyo3(signature = (bodies, forces, mechanism, out, settings_json, measured=None))]
fn fem(
    py: Python<'_>,
    bodies: PathBuf,
    forces: PathBuf,
    mechanism: PathBuf,
    out: PathBuf,
    settings_json: &str,
    measured: Option<PathBuf>,
) -> PyResult<(Vec<PathBuf>, Vec<String>)> {
    let section: flexbench_pipeline::run::FemSection = settings("fem", settings_json)?;
    py.detach(|| -> Result<(Vec<PathBuf>, Vec<String>), Failed> {
        let inputs = FemInputs {
            bodies: &bodies,
            forces: &forces,
            measured: measured.as_deref(),
            mechanism: &mechanism,
        };
        let context = format!("the lever's modes along {}", bodies.display());
        let made = FemJob::run(&section, &inputs, &out, &mut |_| {})
            .map_err(|e| Failed::new(context, e))?;
        Ok((made.files, made.warnings))
    })
    .map_err(Failed::into_py)
}

/// `flexbench compare`: the processed folder `processed` against the bench simulated by its
/// crank (where the mechanism has one) and against the rig's `measured` table (when given, read
/// as the `[compare]` settings say), written into `out`. Returns the files written and the
/// warnings.
#[pyfunction]
#[pyo3(signature = (processed, mechanism, out, settings_json, measured=None))]
fn compare(
    py: Python<'_>,
    processed: PathBuf,
    mechanism: PathBuf,
    out: PathBuf,
    settings_json: &str,
    measured: Option<PathBuf>,
) -> PyResult<(Vec<PathBuf>, Vec<String>)> {
    let section: flexbench_pipeline::run::CompareSection = settings("compare", settings_json)?;
    py.detach(|| -> Result<(Vec<PathBuf>, Vec<String>), Failed> {
        let context = || format!("comparing {}", processed.display());
        // The keys that read a measured table, refused without one (given by hand here).
        section
            .measured(measured.as_deref())
            .map_err(|e| Failed::new(context(), e))?;
        let inputs = CompareInputs {
            processed: &processed,
            mechanism: &mechanism,
            measured: measured.as_deref(),
        };
        let made = CompareJob::run(&section, &inputs, &out, &mut |_| {})
            .map_err(|e| Failed::new(context(), e))?;
        Ok((made.files, made.warnings))
    })
    .map_err(Failed::into_py)
}

/// `flexbench identify`: the mechanism file's free numbers identified from the processed folder
/// `processed` (and the rig's `measured` table, when given), written into `out`, the settings
/// read by the command line's own type ([`flexbench_pipeline::identify::IdentifySpec`]).
/// Returns the files written and the warnings.
#[pyfunction]
#[pyo3(signature = (processed, mechanism, out, settings_json, measured=None))]
fn identify(
    py: Python<'_>,
    processed: PathBuf,
    mechanism: PathBuf,
    out: PathBuf,
    settings_json: &str,
    measured: Option<PathBuf>,
) -> PyResult<(Vec<PathBuf>, Vec<String>)> {
    let spec: flexbench_pipeline::identify::IdentifySpec = settings("identify", settings_json)?;
    py.detach(|| -> Result<(Vec<PathBuf>, Vec<String>), Failed> {
        // The recording processed again, and the bootstrap's replicates, with the pipeline
        // file's [process] defaults, as the command line's.
        let process = flexbench_pipeline::pipeline_file::ProcessSection::default();
        let inputs = IdentifyInputs {
            processed: &processed,
            mechanism: &mechanism,
            measured: measured.as_deref(),
            process: &process,
        };
        let made = IdentifyJob::run(&spec, &inputs, &out, &mut |_| {}).map_err(|e| {
            Failed::new(
                format!(
                    "identifying {} from {}",
                    mechanism.display(),
                    processed.display()
                ),
                e,
            )
        })?;
        Ok((made.files, made.warnings))
    })
    .map_err(Failed::into_py)
}

/// `flexbench simulate`: the mechanism's forward dynamics recorded for `duration` s at `rate`
/// Hz after `settle` s, its ground truth (tracks, markers, bodies, forces) written into `out`.
/// Returns the files written.
#[pyfunction]
#[pyo3(signature = (mechanism, out, duration=2.0, rate=1000.0, settle=3.0, rtol=1e-10))]
fn simulate(
    py: Python<'_>,
    mechanism: PathBuf,
    out: PathBuf,
    duration: f64,
    rate: f64,
    settle: f64,
    rtol: f64,
) -> PyResult<Vec<PathBuf>> {
    py.detach(|| -> Result<Vec<PathBuf>, Failed> {
        let mech = load_mechanism(&mechanism)?;
        let cfg = flexbench_mechanism::simulate::SimConfig {
            duration,
            rate,
            settle,
            rtol,
            ..Default::default()
        };
        flexbench_pipeline::simulate(&mech, &cfg, &out, |_| {})
            .map(|s| s.files)
            .map_err(|e| Failed::new(format!("simulating {}", mechanism.display()), e))
    })
    .map_err(Failed::into_py)
}

/// What `flexbench check` says of a mechanism file.
#[derive(Serialize)]
struct MechanismDescription {
    /// The mechanism's name.
    name: String,
    /// Its bodies: name, mass (kg), inertia about the centroid (kg m^2), centroid (m, body frame).
    bodies: Vec<(String, f64, f64, [f64; 2])>,
    /// Its joints' names.
    joints: Vec<String>,
    /// Degrees of freedom.
    dof: isize,
    /// Its markers' names.
    markers: Vec<String>,
    /// The force elements, each as `flexbench check` states it (name, kind, role and law).
    forces: Vec<String>,
    /// The forces table's columns after t.
    force_columns: Vec<String>,
    /// The worst condition number of the assembly over a whole turn of the first driver.
    worst_condition: f64,
}

/// `flexbench check`: a mechanism file parsed, validated and assembled over a whole crank turn;
/// its description as JSON.
#[pyfunction]
fn check(py: Python<'_>, mechanism: PathBuf) -> PyResult<String> {
    py.detach(|| -> Result<String, Failed> {
        let m = load_mechanism(&mechanism)?;
        let worst = m
            .check_full_turn()
            .map_err(|e| Failed::new("turning the first driver a whole turn".into(), e.into()))?;
        let d = MechanismDescription {
            name: m.name.clone(),
            bodies: m
                .bodies
                .iter()
                .map(|b| {
                    (
                        b.name.clone(),
                        b.mass,
                        b.inertia,
                        [b.centroid.x, b.centroid.y],
                    )
                })
                .collect(),
            joints: m.joints.iter().map(|j| j.name.clone()).collect(),
            dof: m.dof(),
            markers: m.markers.iter().map(|k| k.name.clone()).collect(),
            forces: m.forces.iter().map(|f| f.describe()).collect(),
            force_columns: m.force_columns(),
            worst_condition: worst,
        };
        Ok(serde_json::to_string(&d).unwrap_or_default())
    })
    .map_err(Failed::into_py)
}

/// The threads flexbench computes on.
/// The stage `table`'s settings (the pipeline file's `[table]` keys) with their defaults, as a
/// JSON object: the Python functions' signatures (`help(flexbench.process)`).
#[pyfunction]
fn settings_defaults(table: &str) -> PyResult<String> {
    let map = flexbench_pipeline::pipeline_file::stage_defaults(table)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("[{table}] {e}")))?;
    Ok(serde_json::Value::Object(map).to_string())
}

#[pyfunction]
fn threads() -> usize {
    flexbench_pipeline::threads()
}

/// The native module: the functions above and the exception classes.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // SAFETY: mi_option_set stores an integer in mimalloc's option table (thread-safe).
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    // polars' thread pool follows flexbench's thread count, as in the command line, unless
    // POLARS_MAX_THREADS says otherwise (read when the pool first starts).
    if std::env::var_os("POLARS_MAX_THREADS").is_none() {
        let n = flexbench_pipeline::threads().to_string();
        // SAFETY: set at import, before this module has started any thread of its own.
        unsafe { std::env::set_var("POLARS_MAX_THREADS", n) };
    }
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    use flexbench_pipeline::folders;
    m.add("SUMMARY", folders::SUMMARY)?;
    m.add("IDENTIFY_RECORD", folders::IDENTIFY_RECORD)?;
    m.add("MEASURED_RECORD", folders::MEASURED_RECORD)?;
    m.add_function(wrap_pyfunction!(processed_table, m)?)?;
    m.add_function(wrap_pyfunction!(read_tracks, m)?)?;
    m.add_function(wrap_pyfunction!(smooth, m)?)?;
    m.add_function(wrap_pyfunction!(process, m)?)?;
    m.add_function(wrap_pyfunction!(fem, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(identify, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    batch::register(m)?;
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    m.add_function(wrap_pyfunction!(settings_defaults, m)?)?;
    errors::register(m)
}
