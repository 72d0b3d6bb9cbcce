//! Explicit Runge-Kutta integration with error control: the Dormand-Prince 5(4) pair (Hairer,
//! Norsett & Wanner, Solving Ordinary Differential Equations I, 2nd ed., section II.5, table
//! 5.2) and its step-size rule, shared by the rigid simulation (`flexbench-mechanism`) and the
//! coupled elastic one (`flexbench-flexible`), each with its own derivative and error type.

use nalgebra::DVector;

/// The error tolerances of a step: absolute (in the state's units) and relative.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute tolerance, the state's units.
    pub atol: f64,
    /// Relative tolerance, dimensionless.
    pub rtol: f64,
}

/// The next step length after a step of `hh` (s) with error ratio `err`, the step before that
/// `h`: the usual 0.9 err^(-1/5) (between 0.2 and 5 times), keeping the length h when the
/// step was only shortened to land on a sample (up to 5 times the shortened step); at most 10 ms.
pub fn next_step(h: f64, hh: f64, err: f64) -> f64 {
    let factor = if err == 0.0 {
        5.0
    } else {
        (0.9 * err.powf(-0.2)).clamp(0.2, 5.0)
    };
    (hh * factor)
        .max(if err <= 1.0 { h.min(hh * 5.0) } else { 0.0 })
        .min(0.01)
}

/// One Dormand-Prince 5(4) step (Hairer, Norsett & Wanner, Solving ODE I, table 5.2): the
/// 5th-order solution and the error norm scaled by `tol` (the root mean square of the
/// components' errors over atol + rtol max(|y|, |y_new|); a step is accepted at 1 or less).
/// The derivative's error `E` is the caller's, returned as it is.
pub fn dopri5_step<E>(
    f: &impl Fn(&DVector<f64>) -> Result<DVector<f64>, E>,
    y: &DVector<f64>,
    h: f64,
    tol: Tolerance,
) -> Result<(DVector<f64>, f64), E> {
    const A: [[f64; 6]; 6] = [
        [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
        [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
        [
            19372.0 / 6561.0,
            -25360.0 / 2187.0,
            64448.0 / 6561.0,
            -212.0 / 729.0,
            0.0,
            0.0,
        ],
        [
            9017.0 / 3168.0,
            -355.0 / 33.0,
            46732.0 / 5247.0,
            49.0 / 176.0,
            -5103.0 / 18656.0,
            0.0,
        ],
        [
            35.0 / 384.0,
            0.0,
            500.0 / 1113.0,
            125.0 / 192.0,
            -2187.0 / 6784.0,
            11.0 / 84.0,
        ],
    ];
    const E: [f64; 7] = [
        71.0 / 57600.0,
        0.0,
        -71.0 / 16695.0,
        71.0 / 1920.0,
        -17253.0 / 339200.0,
        22.0 / 525.0,
        -1.0 / 40.0,
    ];
    let mut k: Vec<DVector<f64>> = Vec::with_capacity(7);
    k.push(f(y)?);
    for row in A.iter() {
        let mut yi = y.clone();
        for (j, a) in row.iter().enumerate().take(k.len()) {
            if *a != 0.0 {
                yi.axpy(h * a, &k[j], 1.0);
            }
        }
        k.push(f(&yi)?);
    }
    // The 7th stage was evaluated at the 5th-order solution (FSAL).
    let mut ynew = y.clone();
    for (j, a) in A[5].iter().enumerate() {
        if *a != 0.0 {
            ynew.axpy(h * a, &k[j], 1.0);
        }
    }
    let mut err = 0.0;
    for i in 0..y.len() {
        let e: f64 = (0..7).map(|j| E[j] * k[j][i]).sum::<f64>() * h;
        let sc = tol.atol + tol.rtol * y[i].abs().max(ynew[i].abs());
        err += (e / sc).powi(2);
    }
    let err = (err / y.len() as f64).sqrt();
    if !err.is_finite() {
        return Ok((ynew, f64::INFINITY));
    }
    Ok((ynew, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOSE: Tolerance = Tolerance {
        atol: 1.0,
        rtol: 0.0,
    };

    /// The harmonic oscillator y'' = -y from (1, 0): exactly (cos t, -sin t).
    fn oscillator(y: &DVector<f64>) -> Result<DVector<f64>, String> {
        Ok(DVector::from_vec(vec![y[1], -y[0]]))
    }

    /// Fixed steps of h over [0, 1]: the largest error against the exact solution.
    fn error_at(h: f64) -> f64 {
        let steps = (1.0 / h).round() as usize;
        let mut y = DVector::from_vec(vec![1.0, 0.0]);
        for _ in 0..steps {
            y = dopri5_step(&oscillator, &y, h, LOOSE).unwrap().0;
        }
        let t = steps as f64 * h;
        (y[0] - t.cos()).abs().max((y[1] + t.sin()).abs())
    }

    /// The 5th-order solution converges at order 5: halving the step divides the error at t = 1
    /// by 2^5 = 32 (measured 31.4 to 32.2 between h = 0.1 and 0.025), and the error is
    /// 2.6e-9 at h = 0.1.
    #[test]
    fn converges_at_order_five_on_the_harmonic_oscillator() {
        let (e1, e2, e3) = (error_at(0.1), error_at(0.05), error_at(0.025));
        assert!(e1 < 5e-9, "error at h = 0.1: {e1:e}");
        for ratio in [e1 / e2, e2 / e3] {
            assert!(
                (28.0..36.0).contains(&ratio),
                "halving the step: ratio {ratio}"
            );
        }
    }

    /// The error estimate is the embedded 4th-order pair's: on y' = y from 1 over h = 0.1 the
    /// scaled norm (atol 1, rtol 0) is the difference of the two solutions, of order h^5, and
    /// tighter tolerances scale it up in proportion.
    #[test]
    fn the_error_norm_scales_with_the_tolerance() {
        let growth = |y: &DVector<f64>| Ok::<_, String>(y.clone());
        let y0 = DVector::from_vec(vec![1.0]);
        let (y, err) = dopri5_step(&growth, &y0, 0.1, LOOSE).unwrap();
        assert!((y[0] - 0.1f64.exp()).abs() < 1e-9, "y(0.1) = {}", y[0]);
        assert!(err > 0.0 && err < 1e-6, "scaled error {err:e}");
        let tight = Tolerance {
            atol: 1e-3,
            rtol: 0.0,
        };
        let (_, err_tight) = dopri5_step(&growth, &y0, 0.1, tight).unwrap();
        assert!(
            (err_tight / err - 1e3).abs() < 1e-6,
            "{err_tight:e} / {err:e}"
        );
    }

    /// The derivative's error is returned as the caller's own, unchanged.
    #[test]
    fn the_derivatives_error_is_returned() {
        let fails = |_: &DVector<f64>| Err::<DVector<f64>, _>("singular at t".to_string());
        let y0 = DVector::from_vec(vec![1.0]);
        let e = dopri5_step(&fails, &y0, 0.1, LOOSE).unwrap_err();
        assert_eq!(e, "singular at t");
    }

    /// The step grows at most 5 times and shrinks at most 5 times, never past 10 ms, and keeps
    /// its full length after a step shortened to land on a sample.
    #[test]
    fn the_next_step_is_bounded() {
        assert_eq!(next_step(1e-3, 1e-3, 0.0), 5e-3);
        assert_eq!(next_step(1e-2, 1e-2, 0.0), 1e-2);
        assert!((next_step(1e-3, 1e-3, 1e9) - 2e-4).abs() < 1e-18);
        // A step of 1e-3 clipped to 4e-4 to land on a sample, accepted: the next is 1e-3 again;
        // clipped to 1e-5, the next is at most 5 times the clipped one.
        assert_eq!(next_step(1e-3, 4e-4, 0.5), 1e-3);
        assert!((next_step(1e-3, 1e-5, 0.5) - 5e-5).abs() < 1e-18);
    }
}
