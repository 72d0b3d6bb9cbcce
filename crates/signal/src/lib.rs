//! Smoothing and differentiation of sampled marker coordinates: the signal stage.
//!
//! - [`SavGol`]: Savitzky-Golay in its proper form (the derivative scaled by the sample
//!   interval, scipy's five edge modes, weights computed once and exact to 1e-12).
//! - [`RtsSmoother`]: the automatic default, a periodic part (Bayesian harmonic regression on
//!   the motion's fundamental) plus a white-snap Kalman/RTS smoother, every parameter from the
//!   data, with per-sample standard deviations ([`rts`]).
//! - [`kalman`]: the Kalman/RTS building blocks shared with the mechanism's smoother.
//! - [`rigid`]: the markers' velocities and accelerations fitted as one rigid body's, the
//!   residual being the lever's elastic part.
//!
//! Gaps split the series (no smoothing across a gap, no invented sample); every output sample
//! carries its [`Provenance`]. The [`Differentiator`] trait is the interface the pipeline uses.

#![warn(missing_docs)]

pub mod kalman;
pub mod rigid;
pub mod rts;
pub mod savgol;

pub use rts::RtsSmoother;
pub use savgol::{EdgeMode, SavGol, SavGolCoefficients};

/// Where an output sample came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Centred window inside a segment of measured samples.
    Measured,
    /// Near a segment's edge, where the method sees the motion from one side only (within half
    /// a window for Savitzky-Golay; where the smoother's acceleration uncertainty exceeds twice
    /// the segment's median for the Kalman smoother).
    Edge,
    /// In a gap, or in a segment too short for the window: no value (NaN).
    Rejected,
}

impl Provenance {
    /// The name written in tables.
    pub fn as_str(&self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Edge => "edge",
            Provenance::Rejected => "rejected",
        }
    }
}

/// Position, velocity and acceleration of one coordinate at every sample (units of the input
/// per s^0, s^-1, s^-2), NaN where [`Provenance::Rejected`].
#[derive(Debug, Clone, PartialEq)]
pub struct Derivatives {
    /// Smoothed value.
    pub value: Vec<f64>,
    /// First time derivative.
    pub rate: Vec<f64>,
    /// Second time derivative.
    pub accel: Vec<f64>,
    /// Origin of each sample.
    pub provenance: Vec<Provenance>,
    /// Standard deviations of value, rate and acceleration per sample, where the method gives
    /// them (empty otherwise).
    pub sigma: Vec<[f64; 3]>,
}

/// Errors of the signal stage.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum SignalError {
    /// Window or order out of range.
    #[error("Savitzky-Golay window {window} with polynomial order {order}: {reason}")]
    BadParameters {
        window: usize,
        order: usize,
        reason: String,
    },
    /// Time and values of different lengths, or time not strictly increasing.
    #[error("signal '{name}': {reason}")]
    BadInput { name: String, reason: String },
}

/// Refuse mismatched lengths, time that does not increase strictly, and a non-finite value
/// marked present, naming the signal and the sample.
pub fn check_input(
    name: &str,
    t: &[f64],
    values: &[f64],
    present: &[bool],
) -> Result<(), SignalError> {
    let n = t.len();
    if values.len() != n || present.len() != n {
        return Err(SignalError::BadInput {
            name: name.into(),
            reason: format!(
                "{} times, {} values and {} presence flags; they must match",
                n,
                values.len(),
                present.len()
            ),
        });
    }
    if let Some(k) = (1..n).find(|&k| t[k] <= t[k - 1] || !t[k].is_finite()) {
        return Err(SignalError::BadInput {
            name: name.into(),
            reason: format!(
                "time must increase strictly: sample {} is at {} s after {} s",
                k,
                t[k],
                t[k - 1]
            ),
        });
    }
    if let Some(k) = (0..n).find(|&k| present[k] && !values[k].is_finite()) {
        return Err(SignalError::BadInput {
            name: name.into(),
            reason: format!("sample {k} is {} but marked present", values[k]),
        });
    }
    Ok(())
}

/// A method that turns sampled positions into smoothed positions, velocities and accelerations.
pub trait Differentiator {
    /// Smooth and differentiate one coordinate sampled at times `t` (s, strictly increasing);
    /// `present[k] == false` marks a gap. `name` is used in messages.
    fn differentiate(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<Derivatives, SignalError>;

    /// A short description with the parameters, for summaries.
    fn describe(&self) -> String;
}
