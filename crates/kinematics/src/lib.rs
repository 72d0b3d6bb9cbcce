//! The mechanism's motion estimated from measured markers (docs/bench.md section 4, stage 4):
//! the driving coordinates and every body's state q, q', q'' at each sample, the loop closed
//! exactly, with their uncertainty.
//!
//! Modules depend one way, each only on those above it:
//! - [`observe`]: the observation model they all share (markers through the mechanism, driver
//!   weights, one configuration refined to the markers, the fold ratio, the prediction of a
//!   sample, the measurement noise from the free rigid fits).
//! - [`spectrum`]: the harmonics of the crank angle the bench's liaison forces need (the
//!   mechanism file's bench simulated).
//! - [`iterated`]: the iterated Kalman smoother's engine (linearisation, Gauss-Newton passes).
//! - [`noise`]: the smoother's measurement noise (the rigid fits', or maximum likelihood, never
//!   below the quantization the data show) and the innovations' whiteness.
//! - [`fold_sight`]: where the fold zones are (a fold near, a near miss).
//! - [`fold`]: the sample-by-sample positions on the motion's own branch through the folds.
//! - [`fit`]: positions, then velocities and accelerations by the loop's analysis, from each
//!   marker's differentiated states; the fit's report.
//! - [`marker_places`]: where each marker sits on its body as the fit's residuals say.
//! - [`smoother`]: the Kalman smoother on the driving coordinates, with covariances.
//! - [`periodic`]: the drivers refitted as Fourier series of the crank angle over every turn.
//! - [`outliers`]: the fitted mechanism's reprojection test of each measured marker position.
//! - [`estimate`](mod@estimate): the whole estimation as `process` runs it (fit, the bench's
//!   horizontal refined from the motion, smoother, periodic refit), and the force bands.
//! - [`rate`]: whether the recording's frame rate and clock suit the motion (the harmonics the
//!   markers' accelerations need, the forces' bands, the crank against the motor's speed).
//! - [`selfcal`]: the camera fitted to the mechanism's own motion (a bundle adjustment).
//! - [`anchored`]: markers the assembly holds at a ground pin, and whether their tracks stayed
//!   (a camera that moved).

#![warn(missing_docs)]

pub mod anchored;
pub mod estimate;
pub mod fit;
pub mod fold;
pub mod fold_sight;
pub mod frame_share;
pub mod iterated;
pub mod late;
pub mod marker_places;
pub mod noise;
pub mod observe;
pub mod outliers;
pub mod peak_locking;
pub mod periodic;
pub mod rate;
pub mod selfcal;
pub mod smoother;
pub mod spectrum;

pub use estimate::{estimate, forces, Config, ForceSeries, Motion};
pub use fit::FitReport;
pub use observe::{FitSample, MarkerState};

/// Errors of the kinematics: markers that do not fit the mechanism, a motion the estimators
/// cannot follow, or the mechanism's own refusal.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KinematicsError {
    /// Measured markers do not fit the mechanism (the words say how, and what to check).
    #[error("the markers do not fit the mechanism: {0}")]
    Fit(String),
    /// A driving coordinate's fitted values could not be differentiated (the differentiator's
    /// settings against the recording: its cause says which).
    #[error("the markers do not fit the mechanism: differentiating the {coordinate}")]
    Differentiate {
        /// The driving coordinate's name.
        coordinate: String,
        /// The differentiator's refusal.
        #[source]
        source: flexbench_signal::SignalError,
    },
    /// The mechanism refused (assembly, an analysis it is not fit for).
    #[error(transparent)]
    Mechanism(#[from] flexbench_mechanism::MechanismError),
}
