//! The planar multibody model of the bench and of other linkages, and what is computed on it.
//!
//! - [`model`]: bodies, joints, forces, markers and the initial state, validated.
//! - [`file`]: the mechanism file (TOML), in the bench's flat form (docs/bench.md section 6) or
//!   the general form for any planar linkage.
//! - [`constraints`]: the joints' constraint equations Phi(q) = 0 in absolute coordinates, their
//!   Jacobian and the acceleration right-hand side.
//! - [`assembly`]: position, velocity and acceleration analysis from the driving coordinates.
//! - [`simulate`]: forward dynamics M q'' + Phi_q^T lambda = Q, with the joint forces from the
//!   multipliers.
//! - [`inverse`]: the Newton-Euler inverse dynamics, one square linear system per sample.
//!
//! The motion estimated from measured markers (the fit, folds, smoothers) is the kinematics
//! crate's (`flexbench-kinematics`), built on this one.
//!
//! Coordinates: every body has q_i = (x_G, y_G, phi), its centroid in the bench frame (m) and its
//! angle (rad, counter-clockwise from +X). Points given in a body's local frame are stored
//! relative to the centroid.

#![warn(missing_docs)]

pub mod assembly;
pub mod constraints;
pub mod file;
pub mod inverse;
pub mod loads;
pub mod lu;
pub mod model;
pub mod output;
pub mod simulate;

pub use model::{BodyRef, Mechanism};

use nalgebra::Vector2;

/// Errors of the mechanism stage: bad files, impossible geometry, singular systems.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum MechanismError {
    /// The file could not be read or parsed.
    #[error("mechanism file {path}: {reason}")]
    File { path: String, reason: String },
    /// A key is missing, unknown, or has an impossible value.
    #[error("mechanism file: key '{key}': {reason}")]
    Key { key: String, reason: String },
    /// The geometry cannot be assembled.
    #[error("the mechanism cannot be assembled: {0}")]
    Assembly(String),
    /// The model is not fit for an analysis (e.g. inverse dynamics not square).
    #[error("{0}")]
    Model(String),
    /// The integrator failed.
    #[error("simulation failed at t = {t} s: {reason}")]
    Simulation { t: f64, reason: String },
}

/// Rotation of a local vector by the angle `phi` (rad): R(phi) s.
#[inline]
pub fn rot(phi: f64, s: Vector2<f64>) -> Vector2<f64> {
    let (sn, cs) = phi.sin_cos();
    Vector2::new(cs * s.x - sn * s.y, sn * s.x + cs * s.y)
}

/// d/dphi of R(phi) s, that is R(phi + pi/2) s.
#[inline]
pub fn rot_d(phi: f64, s: Vector2<f64>) -> Vector2<f64> {
    let (sn, cs) = phi.sin_cos();
    Vector2::new(-sn * s.x - cs * s.y, cs * s.x - sn * s.y)
}

/// The planar cross product a x b (z component).
#[inline]
pub fn cross(a: Vector2<f64>, b: Vector2<f64>) -> f64 {
    a.x * b.y - a.y * b.x
}
