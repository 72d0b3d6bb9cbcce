//! Elastic multibody: rigid bodies and elastic bodies in floating frames of reference, coupled
//! by the mechanism file's joints and integrated together.
//!
//! - [`body`]: one body's floating-frame invariants, mass matrix, velocity and elastic forces.
//! - [`beam`]: an elastic beam's invariants from the FEM stage's beam elements (Kane's element
//!   matrices assembled by Maggi's projection), with an optional modal reduction.
//! - [`system`]: the coupled system built from a mechanism file: coordinates, joints, prescribed
//!   drivers, the augmented equations M p'' + Phi_p^T lambda = Q, Phi_p p'' = gamma.
//! - [`simulate`]: their integration, with the energy balance (kinetic, strain and gravity
//!   energy against the work of the drivers and force elements).
//! - [`stability`]: the steps an elastic body's fastest mode forces on the explicit stepper,
//!   checked before integrating.
//!
//! The rigid simulation (`flexbench-mechanism`) stays the one for rigid mechanisms; this crate
//! takes a file with an elastic body or a prescribed driver (docs/flexible.md).

#![warn(missing_docs)]

pub mod at_speed;
pub mod beam;
pub mod body;
pub mod output;
pub mod plate;
pub mod simulate;
pub mod stability;
pub mod system;

use flexbench_mechanism::MechanismError;

/// What can go wrong in the coupled elastic simulation.
#[derive(Debug, thiserror::Error)]
pub enum FlexError {
    /// The mechanism file's model is not one the coupled simulation can build.
    #[error("elastic model: {0}")]
    Model(String),
    /// The beam's finite elements could not be built.
    #[error("elastic beam of body '{body}'")]
    Fem {
        /// The body.
        body: String,
        /// The FEM stage's error.
        #[source]
        source: flexbench_fem::FemError,
    },
    /// The mechanism stage failed (assembly of the initial state).
    #[error("mechanism")]
    Mechanism(#[source] MechanismError),
    /// An elastic body vibrates too fast for the explicit stepper to cross the span in a
    /// reasonable number of steps (its stability bound alone exceeds
    /// [`stability::MAX_STEPS`]).
    #[error("elastic body '{body}' has a free motion as fast as {frequency_hz:.3e} Hz (its stiffest mode, or its damping of it): the explicit stepper stays stable only with steps below {step:.1e} s, at least {steps:.1e} steps for the {span:.3} s simulated (more than the 1e7 allowed); reduce the body to its lowest modes (modes = 4 in its elastic table), use fewer elements, or check the material's units (young in Pa, density in kg/m^3) and damping_beta (s)")]
    TooStiff {
        /// The body.
        body: String,
        /// Its fastest free motion's rate / 2 pi (a lower bound), Hz.
        frequency_hz: f64,
        /// The largest stable step, s.
        step: f64,
        /// The fewest steps the span needs.
        steps: f64,
        /// The span simulated (settling and recording), s.
        span: f64,
    },
    /// A step's state rate could not be found (the mechanism's solve of the step's state).
    #[error("coupled simulation failed at t = {t} s")]
    Step {
        /// Time, s.
        t: f64,
        /// The mechanism's refusal.
        #[source]
        source: MechanismError,
    },
    /// The simulated bench passes a configuration where the inverse dynamics cannot give the
    /// liaison forces (the constraints' Jacobian too ill-conditioned).
    #[error("the simulated bench passes a toggle at t = {t} s (condition {condition:.1e})")]
    Toggle {
        /// Time, s.
        t: f64,
        /// The Jacobian's condition number there.
        condition: f64,
    },
    /// The integration failed.
    #[error("coupled simulation failed at t = {t} s: {reason}")]
    Simulation {
        /// Time, s.
        t: f64,
        /// What happened and what to do.
        reason: String,
    },
}

impl From<MechanismError> for FlexError {
    fn from(e: MechanismError) -> Self {
        FlexError::Mechanism(e)
    }
}
