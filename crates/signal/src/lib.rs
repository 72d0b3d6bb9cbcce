//! Smoothing and differentiation of sampled marker coordinates.
//!
//! This first version provides Savitzky-Golay filtering in its proper form (the derivative is
//! scaled by the sample interval; the edges are handled by evaluating the fit of the first and
//! last windows, scipy's `mode="interp"`; gaps split the series into segments that are smoothed
//! separately). The [`Differentiator`] trait is the interface the pipeline uses, so that the
//! later, fuller signal stage can replace this method without touching its callers.

#![warn(missing_docs)]

pub mod savgol;

pub use savgol::{EdgeMode, SavGol, SavGolCoefficients};

/// Where an output sample came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Centred window inside a segment of measured samples.
    Measured,
    /// Within half a window of a segment's edge: evaluated from the edge window's fit.
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
}

/// Errors of the signal stage.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum SignalError {
    /// Window or order out of range.
    #[error("Savitzky-Golay window {window} with polynomial order {order}: {reason}")]
    BadParameters { window: usize, order: usize, reason: String },
    /// Time and values of different lengths, or time not strictly increasing.
    #[error("signal '{name}': {reason}")]
    BadInput { name: String, reason: String },
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
