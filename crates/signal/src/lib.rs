//! Smoothing and differentiation of sampled marker coordinates: the signal stage.
//!
//! - [`SavGol`]: Savitzky-Golay in its proper form (the derivative scaled by the sample
//!   interval, scipy's five edge modes, weights computed once and exact to 1e-12).
//! - [`RtsSmoother`]: the automatic default, a periodic part (Bayesian harmonic regression on
//!   the motion's fundamental) plus a white-snap Kalman/RTS smoother, every parameter from the
//!   data, with per-sample standard deviations ([`rts`]).
//! - [`Butterworth`]: the zero-lag Butterworth filter of the biomechanics labs, its cutoff
//!   given or chosen by Winter's residual analysis or the Durbin-Watson criterion, derivatives
//!   by central differences ([`butterworth`]).
//! - [`GcvSpline`]: Woltring's generalized cross-validated natural smoothing spline (quintic by
//!   default), its smoothing by GCV, by a known noise or given ([`spline`]).
//! - [`noise`]: what real signals' errors are, from the data: quantization (an encoder's
//!   counts, pixel-locked centroids) and whiteness (the Ljung-Box test).
//! - [`block_bootstrap`]: a recording's marker errors resampled in circular blocks of whole
//!   samples for a parametric bootstrap's replicates.
//! - [`resample`]: an unevenly timed run put on an even grid and back (natural cubic splines).
//! - [`kalman`]: the Kalman/RTS building blocks shared with the mechanism's smoother.
//! - [`rigid`]: the markers' velocities and accelerations fitted as one rigid body's, the
//!   residual being the lever's elastic part.
//!
//! Gaps split the series (no smoothing across a gap, no invented sample); every output sample
//! carries its [`Provenance`]. The [`Differentiator`] trait is the interface the pipeline uses.

#![warn(missing_docs)]

pub mod block_bootstrap;
pub mod butterworth;
pub mod kalman;
pub mod noise;
pub mod resample;
pub mod rigid;
pub mod rts;
pub mod savgol;
pub mod spline;

pub use butterworth::{Butterworth, Cutoff};
pub use rts::RtsSmoother;
pub use savgol::{EdgeMode, SavGol, SavGolCoefficients};
pub use spline::{GcvSpline, Smoothing};

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

impl Derivatives {
    /// `n` samples, every one rejected (NaN, no sigma): where a method starts before it fills
    /// the runs it can.
    pub fn rejected(n: usize) -> Derivatives {
        Derivatives {
            value: vec![f64::NAN; n],
            rate: vec![f64::NAN; n],
            accel: vec![f64::NAN; n],
            provenance: vec![Provenance::Rejected; n],
            sigma: Vec::new(),
        }
    }
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
    /// A Butterworth filter's order, cutoff or noise band out of range.
    #[error("Butterworth filter: {reason}")]
    BadFilter { reason: String },
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
    // Branch-free passes first (vectorised), the failing sample looked for only when one fails.
    let times_ok = t.iter().fold(true, |a, v| a & v.is_finite())
        && t.iter().skip(1).zip(t).fold(true, |a, (b, c)| a & (b > c));
    let values_ok = values
        .iter()
        .zip(present)
        .fold(true, |a, (v, p)| a & (v.is_finite() | !p));
    if times_ok && values_ok {
        return Ok(());
    }
    if let Some(k) = t.iter().position(|v| !v.is_finite()) {
        return Err(SignalError::BadInput {
            name: name.into(),
            reason: format!(
                "sample {k}'s time is {} s: every time must be a number",
                t[k]
            ),
        });
    }
    if let Some(k) = t.windows(2).position(|w| w[1] <= w[0]).map(|k| k + 1) {
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
    if let Some(k) = values
        .iter()
        .zip(present)
        .position(|(v, p)| *p && !v.is_finite())
    {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each bad input is refused with the sample named: lengths that differ, a time that is
    /// not a number (the first one too), time that does not increase, a value that is not a
    /// number where it is marked present (one marked absent is fine).
    #[test]
    fn bad_inputs_are_named() {
        let t = [0.0, 0.1, 0.2, 0.3];
        let v = [1.0, 2.0, 3.0, 4.0];
        let p = [true; 4];
        assert!(check_input("x", &t, &v, &p).is_ok());
        let reason = |r: Result<(), SignalError>| match r {
            Err(SignalError::BadInput { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert!(reason(check_input("x", &t, &v[..3], &p)).contains("must match"));
        assert!(reason(check_input("x", &[f64::NAN, 0.1, 0.2, 0.3], &v, &p)).contains("sample 0"));
        assert!(reason(check_input("x", &[0.0, 0.1, 0.1, 0.3], &v, &p)).contains("sample 2"));
        let nan = [1.0, f64::NAN, 3.0, 4.0];
        assert!(reason(check_input("x", &t, &nan, &p)).contains("sample 1"));
        assert!(check_input("x", &t, &nan, &[true, false, true, true]).is_ok());
    }
}
