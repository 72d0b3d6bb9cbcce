//! Position, velocity and acceleration analysis of the closed loops from the driving
//! coordinates (the crank angle and the slide's x on the bench).
//!
//! Position: Newton-Raphson on [Phi(q); c(q) - c0] = 0, whose Jacobian is [Phi_q; c_q]. The
//! assembly branch (C' below the line B-D on the bench) is the one of the initial guess, kept by
//! continuation when the driving coordinates move. Velocity: [Phi_q; c_q] q' = [0; c0']. Acceleration:
//! [Phi_q; c_q] q'' = [gamma; c0'' - c_quadratic].

use nalgebra::{DMatrix, DVector};

use crate::model::Mechanism;
use crate::MechanismError;
use flexbench_numeric::lu::Lu;

/// Newton tolerance on the constraint residual, m or rad.
pub const ASSEMBLY_TOL: f64 = 1e-13;

/// The square kinematic Jacobian [Phi_q; c_q] at q.
pub fn driven_jacobian(m: &Mechanism, q: &DVector<f64>) -> DMatrix<f64> {
    let n = m.ncoords();
    let nc = m.nconstraints();
    let mut jac = DMatrix::zeros(n, n);
    jac.rows_mut(0, nc).copy_from(&m.phi_q(q));
    for (k, d) in m.drivers.iter().enumerate() {
        jac.row_mut(nc + k)
            .copy_from(&d.coordinate.gradient(q, n).transpose());
    }
    jac
}

/// The sensitivity dq/dd of the configuration to the driving coordinates at q (ncoords x
/// ndrivers), each driver taken in units of 1/scale[k]: [Phi_q; c_q] dq/dd = [0; diag(1/scale)].
/// None at a toggle position.
pub fn driver_sensitivity(m: &Mechanism, q: &DVector<f64>, scale: &[f64]) -> Option<DMatrix<f64>> {
    driver_sensitivity_factored(m, &Lu::new(driven_jacobian(m, q)), scale)
}

/// [`driver_sensitivity`] from the factors `lu` of the driven Jacobian at q.
pub fn driver_sensitivity_factored(m: &Mechanism, lu: &Lu, scale: &[f64]) -> Option<DMatrix<f64>> {
    let (n, nc, nd) = (m.ncoords(), m.nconstraints(), m.drivers.len());
    let mut sens = DMatrix::zeros(n, nd);
    for k in 0..nd {
        let mut e = DVector::zeros(n);
        e[nc + k] = 1.0 / scale[k];
        sens.set_column(k, &lu.solve(&e)?);
    }
    Some(sens)
}

/// The 2-norm condition number of a matrix (ratio of extreme singular values).
pub fn condition(a: &DMatrix<f64>) -> f64 {
    let s = a.clone().singular_values();
    let max = s.max();
    let min = s.min();
    if min == 0.0 {
        f64::INFINITY
    } else {
        max / min
    }
}

impl Mechanism {
    fn driven_residual(&self, q: &DVector<f64>, values: &[f64]) -> DVector<f64> {
        let nc = self.nconstraints();
        let mut r = DVector::zeros(self.ncoords());
        r.rows_mut(0, nc).copy_from(&self.phi(q));
        for (k, d) in self.drivers.iter().enumerate() {
            r[nc + k] = d.coordinate.value(q) - values[k];
        }
        r
    }

    /// Newton-Raphson assembly from `q0` with the driving coordinates at `values`.
    pub fn assemble_from(
        &self,
        q0: &DVector<f64>,
        values: &[f64],
    ) -> Result<DVector<f64>, MechanismError> {
        self.assemble_from_factored(q0, values, None)
    }

    /// [`Mechanism::assemble_from`], the first Newton step with `lu0`, when given, the factors
    /// of the driven Jacobian at `q0` (the same step: a caller that has them saves their
    /// factorisation, as Levenberg-Marquardt does for every trial step from one iterate).
    pub fn assemble_from_factored(
        &self,
        q0: &DVector<f64>,
        values: &[f64],
        mut lu0: Option<&Lu>,
    ) -> Result<DVector<f64>, MechanismError> {
        let mut q = q0.clone();
        for _ in 0..60 {
            let r = self.driven_residual(&q, values);
            if r.amax() < ASSEMBLY_TOL {
                return Ok(q);
            }
            let solved = match lu0.take() {
                Some(lu) => lu.solve(&r),
                None => Lu::new(driven_jacobian(self, &q)).solve(&r),
            };
            let dq = solved.ok_or_else(|| {
                MechanismError::Assembly(format!(
                    "singular Jacobian at driving coordinates {}: a toggle (dead-centre) position or a geometry that does not close",
                    self.describe_values(values)
                ))
            })?;
            q -= dq;
            if !q.iter().all(|v| v.is_finite()) {
                break;
            }
        }
        let r = self.driven_residual(&q, values);
        if r.iter().all(|v| v.is_finite()) && r.amax() < 1e-10 {
            return Ok(q);
        }
        Err(MechanismError::Assembly(format!(
            "the loop does not close at driving coordinates {} (residual {:.3e}): check the lengths, the joints' points and the initial poses",
            self.describe_values(values),
            r.amax()
        )))
    }

    fn describe_values(&self, values: &[f64]) -> String {
        self.drivers
            .iter()
            .zip(values)
            .map(|(d, v)| match d.coordinate {
                crate::model::Coordinate::Angle { .. } => {
                    format!("{} = {:.2} deg", d.name, v.to_degrees())
                }
                _ => format!("{} = {:.5} m", d.name, v),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The initial configuration: the guess assembled at the drivers' initial values.
    pub fn initial_configuration(&self) -> Result<DVector<f64>, MechanismError> {
        let q0 = DVector::from_iterator(self.ncoords(), self.guess.iter().flatten().copied());
        let values: Vec<f64> = self.drivers.iter().map(|d| d.value).collect();
        self.assemble_from(&q0, &values)
    }

    /// Assemble at `values` by continuation from the initial configuration (so that the
    /// initial assembly branch is kept), in steps of at most 5 degrees or 5 mm.
    pub fn assemble_at(&self, values: &[f64]) -> Result<DVector<f64>, MechanismError> {
        let mut q = self.initial_configuration()?;
        let start: Vec<f64> = self.drivers.iter().map(|d| d.value).collect();
        let steps = start
            .iter()
            .zip(values)
            .zip(&self.drivers)
            .map(|((a, b), d)| {
                let unit = match d.coordinate {
                    crate::model::Coordinate::Angle { .. } => 5f64.to_radians(),
                    _ => 0.005,
                };
                ((b - a).abs() / unit).ceil() as usize
            })
            .max()
            .unwrap_or(0)
            .max(1);
        for s in 1..=steps {
            let f = s as f64 / steps as f64;
            let v: Vec<f64> = start
                .iter()
                .zip(values)
                .map(|(a, b)| a + f * (b - a))
                .collect();
            q = self.assemble_from(&q, &v)?;
        }
        Ok(q)
    }

    /// Velocities q' from the driving coordinates' rates.
    pub fn velocities_at(
        &self,
        q: &DVector<f64>,
        rates: &[f64],
    ) -> Result<DVector<f64>, MechanismError> {
        self.velocities_with(&Lu::new(driven_jacobian(self, q)), rates)
    }

    /// Velocities q' and accelerations q'' from the driving coordinates' rates and second
    /// derivatives: [`Mechanism::velocities_at`] then [`Mechanism::accelerations_at`] with the
    /// driven Jacobian factored once for both (the same bits).
    pub fn motion_at(
        &self,
        q: &DVector<f64>,
        rates: &[f64],
        accs: &[f64],
    ) -> Result<(DVector<f64>, DVector<f64>), MechanismError> {
        let lu = Lu::new(driven_jacobian(self, q));
        let qd = self.velocities_with(&lu, rates)?;
        let qdd = self.accelerations_with(&lu, q, &qd, accs)?;
        Ok((qd, qdd))
    }

    /// Accelerations q'' from the driving coordinates' second derivatives.
    pub fn accelerations_at(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        accs: &[f64],
    ) -> Result<DVector<f64>, MechanismError> {
        self.accelerations_with(&Lu::new(driven_jacobian(self, q)), q, qd, accs)
    }

    /// [`Mechanism::velocities_at`] with `lu` the driven Jacobian's factors at q.
    fn velocities_with(&self, lu: &Lu, rates: &[f64]) -> Result<DVector<f64>, MechanismError> {
        let nc = self.nconstraints();
        let mut rhs = DVector::zeros(self.ncoords());
        for (k, r) in rates.iter().enumerate() {
            rhs[nc + k] = *r;
        }
        lu.solve(&rhs).ok_or_else(|| {
            MechanismError::Assembly("singular velocity analysis (toggle position)".into())
        })
    }

    /// [`Mechanism::accelerations_at`] with `lu` the driven Jacobian's factors at q.
    fn accelerations_with(
        &self,
        lu: &Lu,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        accs: &[f64],
    ) -> Result<DVector<f64>, MechanismError> {
        let nc = self.nconstraints();
        let mut rhs = DVector::zeros(self.ncoords());
        rhs.rows_mut(0, nc).copy_from(&self.gamma(q, qd));
        for (k, d) in self.drivers.iter().enumerate() {
            rhs[nc + k] = accs[k] - d.coordinate.quadratic(q, qd);
        }
        lu.solve(&rhs).ok_or_else(|| {
            MechanismError::Assembly("singular acceleration analysis (toggle position)".into())
        })
    }

    /// Turn the first driving coordinate through a whole turn (2 pi) from its initial value, the
    /// others held, checking that the loop closes and stays away from toggle positions
    /// (condition number of [Phi_q; c_q] below 1e8). Returns the worst condition number met.
    pub fn check_full_turn(&self) -> Result<f64, MechanismError> {
        let mut q = self.initial_configuration()?;
        let mut values: Vec<f64> = self.drivers.iter().map(|d| d.value).collect();
        let start = values[0];
        let mut worst: f64 = 0.0;
        let steps = 144;
        for s in 1..=steps {
            values[0] = start + 2.0 * std::f64::consts::PI * s as f64 / steps as f64;
            q = self.assemble_from(&q, &values).map_err(|e| {
                MechanismError::Assembly(format!(
                    "the geometry cannot follow a whole turn of the {}: {e}",
                    self.drivers[0].name
                ))
            })?;
            let c = condition(&driven_jacobian(self, &q));
            worst = worst.max(c);
            if c > 1e8 {
                return Err(MechanismError::Assembly(format!(
                    "the {} reaches a toggle (dead-centre) position at {:.1} deg (condition number {:.2e}): change the lengths so the loop stays away from it",
                    self.drivers[0].name,
                    values[0].to_degrees(),
                    c
                )));
            }
        }
        Ok(worst)
    }
}

#[cfg(test)]
mod tests {
    use crate::file::wind_pump_default;

    /// Velocities and accelerations from one factorisation are those of the two analyses each
    /// factoring the driven Jacobian, to the bit, round a turn of the crank.
    #[test]
    fn motion_at_is_velocities_then_accelerations() {
        let m = wind_pump_default();
        let bits =
            |v: &nalgebra::DVector<f64>| -> Vec<u64> { v.iter().map(|x| x.to_bits()).collect() };
        for k in 0..24 {
            let angle = 0.3 + k as f64 * std::f64::consts::TAU / 24.0;
            let q = m.assemble_at(&[angle, 0.43]).unwrap();
            let (rates, accs) = ([15.0 - k as f64, 0.2], [3.0 * k as f64 - 30.0, -0.5]);
            let (qd, qdd) = m.motion_at(&q, &rates, &accs).unwrap();
            let qd2 = m.velocities_at(&q, &rates).unwrap();
            let qdd2 = m.accelerations_at(&q, &qd2, &accs).unwrap();
            assert_eq!(bits(&qd), bits(&qd2), "velocities at {angle}");
            assert_eq!(bits(&qdd), bits(&qdd2), "accelerations at {angle}");
        }
    }
}
