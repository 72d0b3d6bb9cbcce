//! Whether the explicit stepper can cross a simulation: each elastic body's fastest free
//! motion and the steps it forces on Dormand-Prince 5(4), checked before integrating.
//!
//! An elastic body's free motion M q'' + D q' + K q = 0 has rates mu with M mu^2 + D mu + K
//! singular. An explicit Runge-Kutta method is stable only while h |mu| stays inside its
//! stability region, which for Dormand-Prince 5(4) reaches about 3.3 from the origin (Hairer
//! and Wanner, Solving ODEs II, fig. IV.2.1). With lambda_K and lambda_D the largest
//! eigenvalues of M^-1 K and M^-1 D, the fastest rate is at least max(sqrt(lambda_K),
//! lambda_D / 2) (the undamped frequency, and the faster root -lambda_D / 2 - ... of an
//! overdamped mode), so a span T needs at least T |mu| / 3.3 steps whatever the tolerances.

use nalgebra::{DMatrix, DVector};

use crate::body::Invariants;
use crate::system::System;
use crate::FlexError;

/// Radius of Dormand-Prince 5(4)'s stability region, |h mu|: about 3.3 along the negative real
/// axis (Hairer and Wanner II, fig. IV.2.1).
pub const STABILITY_RADIUS: f64 = 3.3;

/// Steps refused up front: a span whose stability bound alone needs more (ten million steps
/// take a quarter of an hour to hours on this machine: 20 to 240 us a step, from Simeon's
/// crank to the bench with its lever unreduced).
pub const MAX_STEPS: f64 = 1e7;

/// The largest eigenvalue of M^-1 A (A symmetric, M symmetric positive definite) by power
/// iteration on L^-1 A L^-T (M = L L^T): a lower bound that the iteration raises towards it;
/// None when M is not positive definite or the body has no elastic coordinate.
fn largest_eigenvalue(a: &DMatrix<f64>, m: &DMatrix<f64>) -> Option<f64> {
    let n = m.nrows();
    if n == 0 {
        return None;
    }
    let l = m.clone().cholesky()?.unpack();
    let w = l.solve_lower_triangular(a)?;
    let c = l.solve_lower_triangular(&w.transpose())?;
    let mut x = DVector::from_fn(n, |i, _| 1.0 + 0.37 * ((i * 7 + 3) % 11) as f64);
    let mut lambda = 0.0;
    for _ in 0..200 {
        let y = &c * &x;
        let norm = y.norm();
        if norm == 0.0 || !norm.is_finite() {
            return Some(0.0);
        }
        let next = x.dot(&y) / x.dot(&x);
        x = y / norm;
        if (next - lambda).abs() <= 1e-6 * next.abs() {
            return Some(next);
        }
        lambda = next;
    }
    Some(lambda)
}

/// The fastest rate of a body's free elastic motion, 1/s (a lower bound: module docs); None
/// for a rigid body.
pub fn fastest_rate(inv: &Invariants) -> Option<f64> {
    let k = largest_eigenvalue(&inv.stiffness, &inv.mass_qq)?;
    let d = largest_eigenvalue(&inv.damping, &inv.mass_qq).unwrap_or(0.0);
    Some(k.max(0.0).sqrt().max(d / 2.0))
}

impl System {
    /// Refuse a span of `span` s (settling and recording) whose stability bound needs more
    /// than [`MAX_STEPS`] steps: the message names the body, its fastest mode and the fixes.
    pub fn check_step_budget(&self, span: f64) -> Result<(), FlexError> {
        for body in &self.bodies {
            let Some(rate) = fastest_rate(&body.inv) else {
                continue;
            };
            let steps = span * rate / STABILITY_RADIUS;
            if steps > MAX_STEPS {
                return Err(FlexError::TooStiff {
                    body: body.name.clone(),
                    frequency_hz: rate / std::f64::consts::TAU,
                    step: STABILITY_RADIUS / rate,
                    steps,
                    span,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two masses and springs, M = diag(1, 2), K = [[3, -1], [-1, 1]]: the largest eigenvalue
    /// of M^-1 K is (7 + sqrt(33)) / 4 (det(K - l M) = 2 l^2 - 7 l + 2 = 0).
    #[test]
    fn power_iteration_finds_the_largest_eigenvalue() {
        let m = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, 2.0]);
        let k = DMatrix::from_row_slice(2, 2, &[3.0, -1.0, -1.0, 1.0]);
        let want = (7.0 + 33f64.sqrt()) / 4.0;
        let got = largest_eigenvalue(&k, &m).unwrap();
        assert!((got / want - 1.0).abs() < 1e-6, "{got} vs {want}");
        assert!(largest_eigenvalue(&k, &DMatrix::zeros(0, 0)).is_none());
    }
}
