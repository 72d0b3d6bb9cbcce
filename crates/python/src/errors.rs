//! The exceptions the Python package raises: one class per stage that can refuse, all under
//! `flexbench.FlexbenchError`, each message the command line's (the context, then each cause on
//! a line of its own, "  caused by: ..."). The classes of bad input also derive from Python's
//! own: `except ValueError` catches a setting, a table or a mechanism file refused, `except
//! OSError` an output that could not be written.

use flexbench_pipeline::PipelineError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

create_exception!(
    flexbench,
    FlexbenchError,
    PyException,
    "An error of flexbench: its message names the problem and the fix."
);
create_exception!(
    flexbench,
    IdentifyError,
    FlexbenchError,
    "The identification refused: a number that cannot be set free, a recording too short, nothing the equations determine."
);
create_exception!(
    flexbench,
    KinematicsError,
    FlexbenchError,
    "The mechanism's motion could not be estimated from the markers."
);
create_exception!(
    flexbench,
    SignalError,
    FlexbenchError,
    "The smoothing or differentiation of the markers refused its input or settings."
);
create_exception!(
    flexbench,
    VisionError,
    FlexbenchError,
    "The camera, the video or a view could not be read, calibrated or tracked."
);
create_exception!(
    flexbench,
    FemError,
    FlexbenchError,
    "The elastic lever's finite-element model or one of its steps failed."
);
create_exception!(
    flexbench,
    CompareError,
    FlexbenchError,
    "The comparison of measured with simulated series refused."
);
create_exception!(
    flexbench,
    ReportError,
    FlexbenchError,
    "A figure or the report could not be drawn."
);

/// The exception classes that are both flexbench's and one of Python's (made at the module's
/// import by `type(name, (FlexbenchError, base), ...)`: `create_exception!` takes one base).
#[derive(Clone, Copy)]
enum Dual {
    Input,
    Table,
    Contract,
    Mechanism,
    Output,
}

impl Dual {
    const ALL: [Dual; 5] = [
        Dual::Input,
        Dual::Table,
        Dual::Contract,
        Dual::Mechanism,
        Dual::Output,
    ];

    /// The class's name, its Python base and its docstring.
    fn spec(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Dual::Input => ("InputError", "ValueError", "A setting, a pipeline file or an input file that cannot be used (in words that name it and the fix)."),
            Dual::Table => ("TableError", "ValueError", "A table (tracks, bodies, forces...) that cannot be read or written: the file, column and row."),
            Dual::Contract => ("ContractError", "ValueError", "A table that breaks the data contract (NaN, unsorted time, a half position...)."),
            Dual::Mechanism => ("MechanismError", "ValueError", "A mechanism file with a missing or impossible value, or a configuration that does not assemble."),
            Dual::Output => ("OutputError", "OSError", "An output could not be written (a folder that cannot be created, a full disk)."),
        }
    }

    /// The class, made once.
    fn class(self, py: Python<'_>) -> PyResult<&Py<PyType>> {
        static CLASSES: [PyOnceLock<Py<PyType>>; 5] = [const { PyOnceLock::new() }; 5];
        CLASSES[self as usize].get_or_try_init(py, || {
            let (name, base, doc) = self.spec();
            let builtins = py.import("builtins")?;
            let bases = PyTuple::new(
                py,
                [
                    py.get_type::<FlexbenchError>().into_any(),
                    builtins.getattr(base)?,
                ],
            )?;
            let body = PyDict::new(py);
            body.set_item("__doc__", doc)?;
            body.set_item("__module__", "flexbench")?;
            let class = builtins.getattr("type")?.call1((name, bases, body))?;
            Ok(class.cast_into::<PyType>()?.unbind())
        })
    }

    /// The exception of this class with `text`; flexbench's base class should the class not
    /// be made (it always is, at import).
    fn err(self, text: String) -> PyErr {
        Python::attach(|py| match self.class(py) {
            Ok(class) => PyErr::from_type(class.bind(py).clone(), text),
            Err(_) => FlexbenchError::new_err(text),
        })
    }
}

/// A stage's error with what was being done when it failed (the command line's context).
pub struct Failed {
    /// What was being done (None: the error says it all, as the command line prints it).
    context: Option<String>,
    /// The stage's error (boxed: a result's error stays a few words).
    error: Box<PipelineError>,
}

impl Failed {
    /// `error`, met while doing `context`.
    pub fn new(context: String, error: PipelineError) -> Failed {
        Failed {
            context: Some(context),
            error: Box::new(error),
        }
    }

    /// `error` alone.
    pub fn bare(error: PipelineError) -> Failed {
        Failed {
            context: None,
            error: Box::new(error),
        }
    }

    /// The Python exception.
    pub fn into_py(self) -> PyErr {
        fail(self.context, *self.error)
    }
}

/// The message as the command line prints it after "error: ": the context, then the error and
/// each of its sources, one "  caused by: " line each.
fn message(context: Option<String>, e: &PipelineError) -> String {
    let mut lines: Vec<String> = context.into_iter().collect();
    lines.extend(flexbench_contracts::causes(e));
    lines.join("\n  caused by: ")
}

/// The Python exception of `e`, of its stage's class, with the command line's message.
pub fn fail(context: Option<String>, e: PipelineError) -> PyErr {
    let text = message(context, &e);
    use PipelineError as P;
    match e {
        P::Mechanism(_) | P::Flexible(_) => Dual::Mechanism.err(text),
        P::Kinematics(_) => KinematicsError::new_err(text),
        P::Table(_) => Dual::Table.err(text),
        P::Contract(_) => Dual::Contract.err(text),
        P::Signal(_) => SignalError::new_err(text),
        P::Report(_) => ReportError::new_err(text),
        P::Vision(_) => VisionError::new_err(text),
        P::Fem(_) | P::FemStep { .. } => FemError::new_err(text),
        P::Compare(_) => CompareError::new_err(text),
        P::Identify(flexbench_identify_error) => match flexbench_identify_error {
            flexbench_identify::IdentifyError::Mechanism(_) => Dual::Mechanism.err(text),
            _ => IdentifyError::new_err(text),
        },
        P::Render(e) => render_class(&e, text),
        P::Toml { .. } | P::Read { .. } | P::Input(_) => Dual::Input.err(text),
        P::Io(_) => Dual::Output.err(text),
    }
}

/// The Python exception of the render's error `e`: the camera file's refusals are input
/// errors, a file not written an output error, the imaging's failures the camera's.
fn render_class(e: &flexbench_render::RenderError, text: String) -> PyErr {
    use flexbench_render::RenderError as R;
    match e {
        R::Spec(_) | R::Toml { .. } => Dual::Input.err(text),
        R::Io(_) => Dual::Output.err(text),
        R::Random(_) | R::Vision(_) => VisionError::new_err(text),
        R::Mechanism(_) => Dual::Mechanism.err(text),
        R::Contract(_) => Dual::Contract.err(text),
        R::Table(_) => Dual::Table.err(text),
    }
}

/// A stage's settings (`[table]` of the pipeline file) from the JSON object the Python side
/// made of its keyword arguments, read by the pipeline file's own type: an unknown key, a
/// wrong type or a name outside its set is refused by name.
pub fn settings<T: serde::de::DeserializeOwned>(table: &str, json: &str) -> PyResult<T> {
    serde_json::from_str(json)
        .map_err(|e| Dual::Input.err(format!("[{table}] settings: {e}; the keys are the pipeline file's [{table}] keys (README, pipelines/default.toml)")))
}

/// Add the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FlexbenchError", py.get_type::<FlexbenchError>())?;
    for dual in Dual::ALL {
        m.add(dual.spec().0, dual.class(py)?.bind(py))?;
    }
    m.add("KinematicsError", py.get_type::<KinematicsError>())?;
    m.add("SignalError", py.get_type::<SignalError>())?;
    m.add("VisionError", py.get_type::<VisionError>())?;
    m.add("FemError", py.get_type::<FemError>())?;
    m.add("CompareError", py.get_type::<CompareError>())?;
    m.add("IdentifyError", py.get_type::<IdentifyError>())?;
    m.add("ReportError", py.get_type::<ReportError>())?;
    Ok(())
}
