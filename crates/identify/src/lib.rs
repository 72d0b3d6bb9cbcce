//! The bench's uncertain parameters identified from a recording (docs/identification.md).
//!
//! The inverse dynamics solves the actuators' forces from the measured motion with the
//! mechanism file's masses, inertias and centroids. Where an actuator has a law (the bench's
//! motor torque Km (omega_ref - omega), its pump's spring, damping and friction) the solved
//! force must follow it; where a torque or a force was measured the solved one must equal it
//! (less a sensor's offset). Those equations, over every sample, determine the file's numbers
//! the user sets free: by Gauss-Newton on the numbers themselves (the inverse dynamics' exact
//! sensitivities, the laws' central differences), each equation weighed by its residual's RMS,
//! the step by a truncated singular value decomposition of the column-scaled Jacobian.
//!
//! What is determined: the numerical rank of that Jacobian (a number that only moves with
//! others, as every mass with every law when nothing fixes the scale, lies in its null space);
//! and each number's standard deviation, by the sandwich estimator with Bartlett weights
//! (Newey and West) over the samples, as the residuals of smoothed motion are correlated from
//! one sample to the next (bandwidth by Andrews' AR(1) rule). Numbers are held at the file's
//! value one at a time, the others fitted again: while the rank is short, the one most in the
//! null space (held, it fixes the others' scale); then the one the recording pins least, when
//! it does not pin it to half its value at one standard deviation.

mod derivative;
pub mod equations;
mod solve;

use flexbench_mechanism::parameters::{file_parameters, with_values, FileParameters};
use flexbench_mechanism::sensitivity::OriginMotion;
use flexbench_mechanism::MechanismError;

pub use solve::hac_bandwidth;

/// What can go wrong in identification.
#[derive(Debug, thiserror::Error)]
pub enum IdentifyError {
    /// The mechanism file (or one with the identified values) does not build.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// A number named free that cannot be identified.
    #[error("{key} cannot be identified: {why}")]
    NotFree {
        /// The key as given.
        key: String,
        /// Why, and what can be.
        why: String,
    },
    /// The inputs do not fit together (a measured column's length, no equation).
    #[error("{0}")]
    Input(String),
    /// The equations' low-pass cannot be designed at the cutoff asked (the recording's
    /// sampling rate against it: its cause says which).
    #[error("the equations' low-pass at {hz} Hz")]
    LowPass {
        /// The cutoff asked, Hz.
        hz: f64,
        /// The filter design's refusal.
        #[source]
        source: flexbench_signal::SignalError,
    },
    /// The recording determines none of the free numbers.
    #[error("the recording determines none of the free numbers: {0}")]
    NothingDetermined(String),
}

/// A measured force or torque, sample by sample with the motion (NaN where absent).
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredColumn {
    /// The forces column it measures (`motor_torque`), N or N m.
    pub column: String,
    /// Its values at the motion's samples, N or N m (NaN: not measured there).
    pub values: Vec<f64>,
    /// The sensor's offset taken off (N or N m); the start when `free_offset`.
    pub offset: f64,
    /// Whether the offset is identified with the numbers.
    pub free_offset: bool,
}

/// What to identify: the file's numbers set free, by key (`k`, `mw`,
/// `joints.axle.friction.viscous`), and the Gauss-Newton iterations at most.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The keys of the free numbers.
    pub free: Vec<String>,
    /// Iterations at most.
    pub max_iterations: usize,
    /// Both sides of every equation low-passed at this frequency (zero-lag Butterworth,
    /// fourth order) before the fit, Hz: the smoothed motion's accelerations lack what the
    /// positions and velocities the laws read still hold (docs/identification.md).
    pub cutoff_hz: Option<f64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            free: Vec::new(),
            max_iterations: 30,
            cutoff_hz: None,
        }
    }
}

/// One free number's estimate.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    /// Its key in the file (or `offset of <column>`).
    pub key: String,
    /// The file's value (its own unit).
    pub file_value: f64,
    /// The identified value; the file's when not determined.
    pub value: f64,
    /// Its standard deviation (same unit); None when not determined.
    pub sigma: Option<f64>,
    /// Whether the recording determines it (module documentation).
    pub determined: bool,
    /// Why it is not determined (held at the file's value).
    pub why_not: Option<String>,
}

/// One equation's fit: its residual's RMS before (the file's values) and after, N or N m.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EquationFit {
    /// `pump_force = its law`, `motor_torque = measured`.
    pub name: String,
    /// Samples it holds at.
    pub samples: usize,
    /// RMS residual with the file's values, N or N m.
    pub rms_before: f64,
    /// RMS residual with the identified values, N or N m.
    pub rms_after: f64,
}

/// A body's inertial parameters about its local origin, phi = (m kg, m c_x kg m, m c_y kg m,
/// I_O kg m^2: the inertia about the origin, J + m |c|^2), as the file gives them and as
/// identified, with their standard deviations (0 where nothing free moves them): the numbers a
/// rig's own identification reports (the pendulum's J about its axle and m c_x).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BodyInertia {
    /// The body's name.
    pub body: String,
    /// phi with the file's values.
    pub file: [f64; 4],
    /// phi with the identified values.
    pub identified: [f64; 4],
    /// Standard deviations of the identified phi.
    pub sigma: [f64; 4],
}

/// The identification: the estimates, what determines them, and the file with them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Identification {
    /// Per free number (then per free offset), its estimate.
    pub estimates: Vec<Estimate>,
    /// The numerical rank of the column-scaled Jacobian, and its columns.
    pub rank: usize,
    /// The number of free unknowns.
    pub unknowns: usize,
    /// The ratio of its largest to its smallest kept singular value.
    pub condition: f64,
    /// The correlations of the determined estimates (rows and columns in `estimates`' order,
    /// the undetermined left out).
    pub correlation: Vec<Vec<f64>>,
    /// Each equation's fit.
    pub equations: Vec<EquationFit>,
    /// Each body's inertial parameters about its origin, before and after.
    pub bodies: Vec<BodyInertia>,
    /// Gauss-Newton iterations made.
    pub iterations: usize,
    /// The covariance's bandwidth, samples.
    pub bandwidth: usize,
    /// The mechanism file with the identified values (TOML).
    pub file: String,
    /// What makes the estimates doubtful, in words.
    pub warnings: Vec<String>,
}

/// Why `key` is not a free number of `read`, in an error.
pub(crate) fn not_free(read: &FileParameters, key: &str) -> IdentifyError {
    IdentifyError::NotFree {
        key: key.into(),
        why: read.why_not_a_parameter(key),
    }
}

/// Check, before any recording is read, that the mechanism file `text` (`origin` names it) has
/// every key of `free` as a number identification can set free: the error says why not.
pub fn check_free(text: &str, origin: &str, free: &[String]) -> Result<(), IdentifyError> {
    let read = file_parameters(text, origin)?;
    equations::free(&read, free).map(|_| ())
}

/// Identify the free numbers of the mechanism file `text` (`origin` names it) from the
/// bodies' motion about their origins at the times `t` (s), sample by sample
/// (`Mechanism::origin_motion` of the file's model), and the measured columns (module
/// documentation).
pub fn identify(
    text: &str,
    origin: &str,
    t: &[f64],
    motion: &[Vec<OriginMotion>],
    measured: &[MeasuredColumn],
    settings: &Settings,
) -> Result<Identification, IdentifyError> {
    if t.len() != motion.len() {
        return Err(IdentifyError::Input(format!(
            "{} times for {} samples of motion",
            t.len(),
            motion.len()
        )));
    }
    if let Some(c) = measured.iter().find(|c| c.values.len() != motion.len()) {
        return Err(IdentifyError::Input(format!(
            "the measured {} has {} values for {} samples of motion",
            c.column,
            c.values.len(),
            motion.len()
        )));
    }
    if settings.free.is_empty() {
        return Err(IdentifyError::Input(
            "no number is set free: name the file's numbers to identify (k, mw, ...)".into(),
        ));
    }
    let read = file_parameters(text, origin)?;
    equations::free(&read, &settings.free)?;
    let eqs = equations::equations(&read.nominal, measured)?;
    if eqs.is_empty() {
        return Err(IdentifyError::Input(
            "nothing to hold the forces against: the mechanism has no actuator with a law (a motor, a pump, a joint's or a slide's actuator) and no measured torque or force is given".into(),
        ));
    }
    let rec = solve::Recording {
        t,
        motion,
        cutoff_hz: settings.cutoff_hz,
    };
    solve::identify_with(text, origin, &rec, (measured, &eqs), settings)
}

/// The change of the identification `id`'s estimates (in its order, zero for those held) when
/// the motion `motion` at times `t` (s) it was identified from becomes `moved` at the same
/// samples, to first order with its weights held ([`derivative`]); the file, the measured
/// columns and the settings as identified.
pub fn change_with_motion(
    text: &str,
    origin: &str,
    t: &[f64],
    (motion, moved): (&[Vec<OriginMotion>], &[Vec<OriginMotion>]),
    measured: &[MeasuredColumn],
    settings: &Settings,
    id: &Identification,
) -> Result<Vec<f64>, IdentifyError> {
    change_between(
        (text, text),
        origin,
        t,
        (motion, moved),
        measured,
        settings,
        id,
    )
}

/// The change of the identification `id`'s estimates (in its order, zero for those held) when
/// the file `text` it was identified with becomes `moved` (a held number moved within its
/// tolerance, say: Schmidt's consider analysis), the motion `motion` at times `t` (s), the
/// measured columns and the settings as identified; to first order with its weights held
/// ([`derivative`]): exact for the weighted rows where they are linear in the held number (a
/// mass, an inertia, a law's number), first order in a centroid.
pub fn change_with_file(
    (text, moved): (&str, &str),
    origin: &str,
    t: &[f64],
    motion: &[Vec<OriginMotion>],
    measured: &[MeasuredColumn],
    settings: &Settings,
    id: &Identification,
) -> Result<Vec<f64>, IdentifyError> {
    change_between(
        (text, moved),
        origin,
        t,
        (motion, motion),
        measured,
        settings,
        id,
    )
}

/// The estimates' change from the file and motion as identified to the moved ones (each pair
/// the identified one first), both checked to give the same rows.
fn change_between(
    texts: (&str, &str),
    origin: &str,
    t: &[f64],
    (motion, moved): (&[Vec<OriginMotion>], &[Vec<OriginMotion>]),
    measured: &[MeasuredColumn],
    settings: &Settings,
    id: &Identification,
) -> Result<Vec<f64>, IdentifyError> {
    if motion.len() != t.len() || moved.len() != t.len() {
        return Err(IdentifyError::Input(format!(
            "{} times for {} and {} samples of motion",
            t.len(),
            motion.len(),
            moved.len()
        )));
    }
    let read = file_parameters(texts.0, origin)?;
    let eqs = equations::equations(&read.nominal, measured)?;
    let rec = |motion| solve::Recording {
        t,
        motion,
        cutoff_hz: settings.cutoff_hz,
    };
    derivative::change(
        texts,
        origin,
        (&rec(motion), &rec(moved)),
        (measured, &eqs),
        settings,
        id,
    )
}

/// The file `text` with the free numbers at `values`, read.
pub(crate) fn read_at(
    text: &str,
    origin: &str,
    keys: &[String],
    values: &[f64],
) -> Result<(String, FileParameters), IdentifyError> {
    let pairs: Vec<(&str, f64)> = keys
        .iter()
        .map(String::as_str)
        .zip(values.iter().copied())
        .collect();
    let changed = with_values(text, origin, &pairs)?;
    let read = file_parameters(&changed, origin)?;
    Ok((changed, read))
}
