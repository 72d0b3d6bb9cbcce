//! The planar multibody model of the bench and of other linkages, and what is computed on it.
//!
//! - [`model`]: bodies, joints, forces, markers and the initial state, validated.
//! - [`file`]: the mechanism file (TOML), in the bench's flat form (docs/bench.md section 6) or
//!   the general form for any planar linkage.
//! - [`general`]: the general form of the mechanism file, any planar linkage.
//! - [`actuator`]: a joint's actuator (a motor between two bodies, a jack on a slide).
//! - [`friction`]: joint friction as rigs identify it (viscous and a smoothed Coulomb term).
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

pub mod actuator;
pub mod assembly;
pub mod constraints;
pub mod elastic;
pub mod file;
mod file_edit;
pub mod flat;
pub mod friction;
pub mod general;
pub mod inverse;
mod keys;
pub mod loads;
pub mod model;
pub mod output;
pub mod parameters;
pub mod sensitivity;
pub mod simulate;
pub mod tolerances;

pub use model::{BodyRef, Mechanism};

use nalgebra::Vector2;

/// Errors of the mechanism stage: bad files, impossible geometry, singular systems.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum MechanismError {
    /// The file could not be read or parsed: which file and the fix; the system's or the TOML
    /// parser's own error is the cause.
    #[error("mechanism file {path}: cannot be read{hint}")]
    Unreadable {
        path: String,
        hint: &'static str,
        #[source]
        source: flexbench_contracts::SharedCause,
    },
    /// A mechanism file with new values (identified numbers, their tolerances) that the TOML
    /// writer cannot write; its own error is the cause.
    #[error("mechanism file {path}: the file with the new values cannot be written as TOML")]
    Unwritable {
        path: String,
        #[source]
        source: flexbench_contracts::SharedCause,
    },
    /// The file's content is not a mechanism: which file and why.
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
    rot_sc(phi.sin_cos(), s)
}

/// d/dphi of R(phi) s, that is R(phi + pi/2) s.
#[inline]
pub fn rot_d(phi: f64, s: Vector2<f64>) -> Vector2<f64> {
    rot_d_sc(phi.sin_cos(), s)
}

/// [`rot`] from the angle's (sine, cosine).
#[inline]
fn rot_sc((sn, cs): (f64, f64), s: Vector2<f64>) -> Vector2<f64> {
    Vector2::new(cs * s.x - sn * s.y, sn * s.x + cs * s.y)
}

/// [`rot_d`] from the angle's (sine, cosine).
#[inline]
fn rot_d_sc((sn, cs): (f64, f64), s: Vector2<f64>) -> Vector2<f64> {
    Vector2::new(-sn * s.x - cs * s.y, cs * s.x - sn * s.y)
}

/// The sine and cosine of every body's angle at a configuration q, each formed once: an
/// evaluation of the constraints or the markers rotates each body's points by the same angle
/// (the lever's five markers and two joints), and `sin_cos` was a seventh of the process
/// stage's time. The same bits as [`rot`] and [`rot_d`] at q.
#[derive(Debug, Clone)]
pub struct BodyTrig(Vec<(f64, f64)>);

impl BodyTrig {
    /// Every body's (sine, cosine) at `q` (x, y, phi per body, m and rad).
    pub fn of(q: &nalgebra::DVector<f64>) -> BodyTrig {
        BodyTrig((0..q.len() / 3).map(|i| q[3 * i + 2].sin_cos()).collect())
    }

    /// R(phi_i) s for body `i`: [`rot`] of its angle.
    #[inline]
    pub fn rot(&self, i: usize, s: Vector2<f64>) -> Vector2<f64> {
        rot_sc(self.0[i], s)
    }

    /// d/dphi R(phi_i) s for body `i`: [`rot_d`] of its angle.
    #[inline]
    pub fn rot_d(&self, i: usize, s: Vector2<f64>) -> Vector2<f64> {
        rot_d_sc(self.0[i], s)
    }

    /// Bench-frame position of point `s` of body `i` at `q` (the q these were formed at), m:
    /// [`constraints::body_point`].
    #[inline]
    pub fn point(&self, q: &nalgebra::DVector<f64>, i: usize, s: Vector2<f64>) -> Vector2<f64> {
        Vector2::new(q[3 * i], q[3 * i + 1]) + self.rot(i, s)
    }
}

/// The planar cross product a x b (z component).
#[inline]
pub fn cross(a: Vector2<f64>, b: Vector2<f64>) -> f64 {
    a.x * b.y - a.y * b.x
}
