//! The elastic lever BC' in the mechanism's rigid motion: the finite-element stage.
//!
//! The lever is a straight Euler-Bernoulli beam along its own frame's x axis (B at x = 0, C' at
//! x = l2), its elastic displacement (u axial, v transverse, m, lever frame) interpolated by
//! element shape functions, riding the rigid motion of the lever frame (origin B, angular
//! velocity omega2 and acceleration epsilon2, rad/s and rad/s^2). Kane's equations for an element
//! (seed 000 eqs 1-20, seed 001 eq 14; derivation in docs/fem.md) give
//!
//! ```text
//! [m]{d''} + 2 omega [S]{d'} + ([k] + [k_g] + eps [S] - omega^2 [m]){d}
//!     = {q_ext} + {q_liaison} - [m_O]{a_O} - eps {q_y} + omega^2 {q_x}
//! ```
//!
//! - [`element`]: the matrices of one element, planar frame (linear axial, cubic Hermite
//!   bending) or quintic (cubic Hermite axial, quintic Hermite bending), by Gauss-Legendre
//!   quadrature exact for every integrand;
//! - [`assembly`]: the lever's mesh, assembly by scatter-add or by Maggi's projection
//!   [A]^T [M] [A] (seed 003 eq 31), the supports (pinned at B and C' on the bench);
//! - [`loads`]: the loads of one instant from the measured motion and liaison forces (or a
//!   prescribed rigid motion), the axial force by statics, the rigid-body balance;
//! - [`modal`]: the symmetric eigenproblem of the lever as it is at one instant;
//! - [`subspace`]: its lowest modes followed along the cycle by warm-started subspace
//!   iteration ([`band`]: the banded kernels it and the full problem's inverse iteration use).
//! - [`followed`]: the modes followed along the cycle made into the modal table, each told
//!   bending or axial; [`deflection`]: the forced response against the measured deflection.

#![warn(missing_docs)]

pub mod assembly;
pub mod band;
pub mod cycle;
pub mod deflection;
pub mod element;
pub mod followed;
// A study, not a stage: the element's formalisms compared (docs/fem.md), for its tests and the
// benchmark's example (feature `studies`).
#[cfg(feature = "studies")]
pub mod formulations;
pub mod gyroscopic;
pub mod loads;
pub mod modal;
pub mod plane;
// A study, not a stage: the plate against the beam along the cycle (docs/flexible.md section 8),
// for its test (feature `studies`).
#[cfg(feature = "studies")]
pub mod plate_cycle;
pub mod quadrature;
pub mod response;
pub mod subspace;

pub use assembly::{Lever, Mesh, Supports};
pub use element::{ElementKind, ElementMatrices};
pub use loads::LeverInstant;

/// The default bench's lever (mechanisms/wind-pump.toml: l2 0.45 m, steel, 25 x 6 mm) for the
/// unit tests; the pipeline reads it from the mechanism file.
#[cfg(test)]
pub(crate) fn bench_lever() -> Lever {
    Lever::new(
        0.45,
        element::Section {
            young: 210e9,
            density: 7850.0,
            area: 1.5e-4,
            inertia: 4.5e-10,
        },
    )
    .expect("the bench's lever is valid")
}

/// `elements` equal elements of `kind` on [`bench_lever`], for the unit tests.
#[cfg(test)]
pub(crate) fn bench_mesh(kind: ElementKind, elements: usize) -> Mesh {
    Mesh::new(bench_lever(), kind, elements).expect("a valid mesh")
}

/// What can go wrong in the finite-element stage.
#[derive(Debug, thiserror::Error)]
pub enum FemError {
    /// A lever property or mesh setting that is missing, not finite or out of range.
    #[error("lever model: {0}")]
    Model(String),
    /// The mass matrix is not positive definite on the free degrees of freedom (the supports
    /// leave no degree of freedom, or a property is zero).
    #[error("the lever's mass matrix is not positive definite on its free degrees of freedom ({0}): check the density, the area and the supports")]
    Mass(String),
    /// The stiffness matrix is singular on the free degrees of freedom for a static solve (the
    /// supports leave a rigid-body mode free).
    #[error("the lever's stiffness is singular with supports {0}: a rigid-body motion is left free; a static solve needs supports that hold it")]
    Singular(String),
    /// The measured deflection cannot be compared with the model's (which markers, which
    /// instant).
    #[error("{0}")]
    Measured(String),
    /// No instant to compute the lever's modes at.
    #[error("no sample to compute the lever's modes at: give a bodies table with rows")]
    NoInstant,
    /// The modal table breaks its contract (boxed: the contract's errors are large).
    #[error(transparent)]
    Contract(Box<flexbench_contracts::ContractError>),
}

impl From<flexbench_contracts::ContractError> for FemError {
    fn from(e: flexbench_contracts::ContractError) -> Self {
        FemError::Contract(Box::new(e))
    }
}
