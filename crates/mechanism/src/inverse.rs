//! Inverse dynamics by Newton-Euler, one square linear system per sample (seed 000, Appendix B;
//! docs/bench.md section 4, stage 5).
//!
//! For every body, with its centroid acceleration a_G and angular acceleration eps,
//!
//! ```text
//! m a_G = sum F,    J eps = sum (r_P - r_G) x F + sum couples
//! ```
//!
//! The unknowns are the joint reactions (revolute: the force (Fx, Fy) of the joint's first body
//! on its second, the second receiving +F and the first -F; slide: the ground's normal force N
//! along the line's normal and its couple) and the actuators' magnitudes (motor torque, pump
//! force). Gravity and the other force elements are known from their laws. For the bench:
//! 4 bodies x 3 equations = 12 unknowns (A, B, C', D: 8; motor torque, pump force, slide normal
//! force; and the slide's reaction couple, which is zero because every force on the slide acts
//! at its centroid D: the 11 x 11 system of docs/bench.md plus one trivially decoupled row).
//!
//! A sample whose system is near-singular (a toggle position) is detected by the 1-norm
//! condition number of the system scaled to consistent units (moment rows divided by a reference
//! length, couple unknowns multiplied by it) and reported, never returned as numbers.

use nalgebra::{DMatrix, DVector, Vector2};

use crate::constraints::slide_axes;
use crate::loads::add_generalized;
use crate::model::{BodyRef, JointKind, Mechanism};
use crate::{cross, rot, MechanismError};
use flexbench_numeric::lu_lanes::{LuLanes, LANES};

/// The 1-norm of a matrix: its largest column sum of absolute values.
fn norm1(a: &DMatrix<f64>) -> f64 {
    a.column_iter()
        .map(|c| c.iter().map(|v| v.abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// Default condition number (1-norm, of the scaled system) above which a sample is reported as
/// a toggle.
pub const DEFAULT_MAX_CONDITION: f64 = 1e8;

/// The result of the inverse dynamics at one sample.
#[derive(Debug, Clone, PartialEq)]
pub enum InverseSample {
    /// Solved: the forces row in [`Mechanism::force_columns`] order, and the scaled condition
    /// number of the system.
    Solved {
        /// Forces row (N, N m), bench frame.
        forces: Vec<f64>,
        /// Condition number (1-norm) of the scaled system.
        condition: f64,
    },
    /// Near-singular (toggle) configuration: the condition number.
    Toggle {
        /// Condition number (1-norm) of the scaled system (infinite when exactly singular).
        condition: f64,
    },
}

/// A mechanism's state: configuration q, velocities q', accelerations q''.
type State = (DVector<f64>, DVector<f64>, DVector<f64>);

/// A quantity computed from each of a batch of states, None where it cannot be for any.
type StateFunction<'a> = dyn Fn(&[State]) -> Option<Vec<DVector<f64>>> + 'a;

impl Mechanism {
    /// A reference length, m: the largest distance of any named point from its body's centroid.
    pub fn reference_length(&self) -> f64 {
        self.bodies
            .iter()
            .flat_map(|b| b.points.values().map(move |p| (p - b.centroid).norm()))
            .fold(0.0, f64::max)
            .max(1e-3)
    }

    /// The Newton-Euler matrix at q: columns are the unknowns in force-column order, rows the
    /// bodies' (x, y, moment) equations.
    pub fn newton_euler_matrix(&self, q: &DVector<f64>) -> DMatrix<f64> {
        let ncol = self.force_columns().len();
        let mut a = DMatrix::zeros(self.ncoords(), ncol);
        let arm = |b: usize, s: Vector2<f64>| rot(q[3 * b + 2], s);
        let put = |a: &mut DMatrix<f64>,
                   col: usize,
                   body: BodyRef,
                   arm: Vector2<f64>,
                   f: Vector2<f64>| {
            if let BodyRef::Body(i) = body {
                a[(3 * i, col)] += f.x;
                a[(3 * i + 1, col)] += f.y;
                a[(3 * i + 2, col)] += cross(arm, f);
            }
        };
        let mut col = 0;
        for j in &self.joints {
            if let JointKind::Revolute { a: pa, b: pb } = &j.kind {
                let arm_a = if let BodyRef::Body(i) = pa.body {
                    arm(i, pa.local)
                } else {
                    Vector2::zeros()
                };
                let arm_b = if let BodyRef::Body(i) = pb.body {
                    arm(i, pb.local)
                } else {
                    Vector2::zeros()
                };
                for (c, e) in [Vector2::new(1.0, 0.0), Vector2::new(0.0, 1.0)]
                    .into_iter()
                    .enumerate()
                {
                    put(&mut a, col + c, pb.body, arm_b, e);
                    put(&mut a, col + c, pa.body, arm_a, -e);
                }
                col += 2;
            }
        }
        for f in self.forces.iter().filter(|f| f.actuator) {
            let mut g = DVector::zeros(self.ncoords());
            for l in f.pattern(q) {
                add_generalized(&mut g, &l, 1.0);
            }
            a.column_mut(col).copy_from(&g);
            col += 1;
        }
        for j in &self.joints {
            if let JointKind::Slide {
                body, point, angle, ..
            } = &j.kind
            {
                let (_, n) = slide_axes(*angle);
                put(&mut a, col, BodyRef::Body(*body), arm(*body, *point), n);
                a[(3 * body + 2, col + 1)] += 1.0;
                col += 2;
            }
        }
        a
    }

    /// The inverse dynamics' linear system at one sample, `A f = b`: A the Newton-Euler matrix
    /// (bodies' x, y, moment equations by force columns), b = M qdd minus the known loads
    /// (gravity and the force elements that are not actuators), N and N m, bench frame.
    pub fn inverse_dynamics_system(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        qdd: &DVector<f64>,
    ) -> Result<(DMatrix<f64>, DVector<f64>), MechanismError> {
        let a = self.newton_euler_matrix(q);
        if a.nrows() != a.ncols() {
            return Err(MechanismError::Model(format!(
                "the inverse dynamics is not square: {} equations, {} unknowns",
                a.nrows(),
                a.ncols()
            )));
        }
        // Known loads: gravity and the force elements that are not actuators.
        let mut known = DVector::zeros(self.ncoords());
        for l in self.gravity_loads() {
            add_generalized(&mut known, &l, 1.0);
        }
        for f in self.forces.iter().filter(|f| !f.actuator) {
            let mag = f.magnitude(q, qd);
            for l in f.pattern(q) {
                add_generalized(&mut known, &l, mag);
            }
        }
        let rhs = self.mass_diagonal().component_mul(qdd) - known;
        Ok((a, rhs))
    }

    /// Solve the inverse dynamics at one sample from the configuration, velocities and
    /// accelerations (bench frame, centroids): [`Mechanism::inverse_dynamics_batch`] of one.
    pub fn inverse_dynamics(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        qdd: &DVector<f64>,
        max_condition: f64,
    ) -> Result<InverseSample, MechanismError> {
        let mut out = self.inverse_dynamics_batch(&[(q, qd, qdd)], max_condition)?;
        Ok(out.remove(0))
    }

    /// Which force columns are couples (N m): the motors', torques' and joints' torques and the
    /// slides' reaction moments, scaled by the reference length in the condition number.
    fn couple_columns(&self) -> Vec<bool> {
        self.force_columns()
            .iter()
            .map(|name| {
                self.forces.iter().any(|f| {
                    f.actuator
                        && &f.name == name
                        && matches!(
                            f.kind,
                            crate::model::ForceKind::Motor { .. }
                                | crate::model::ForceKind::Torque { .. }
                                | crate::model::ForceKind::JointTorque { .. }
                        )
                }) || name.ends_with("_moment")
            })
            .collect()
    }

    /// The inverse dynamics of many samples (configuration, velocities, accelerations; bench
    /// frame, centroids), one result per sample in order; the same numbers, bit for bit, as
    /// each solved on its own, the systems factored [`LANES`] at a time ([`LuLanes`]).
    ///
    /// Each sample's system A f = b is scaled to consistent units, S = R A C (R: moment rows /
    /// lref, C: couple columns x lref). One LU factorisation of S gives both its exact 1-norm
    /// condition number ||S||_1 ||S^-1||_1 (S^-1 from the factors: a fifth of an SVD's time at
    /// 12 x 12, where the 2-norm one was 80 % of the solve; the two norms' condition numbers
    /// are within a factor n of each other) and the solution: S y = R b, f = C y. A sample
    /// whose condition number reaches `max_condition` (or is not a number) is a toggle.
    pub fn inverse_dynamics_batch(
        &self,
        states: &[(&DVector<f64>, &DVector<f64>, &DVector<f64>)],
        max_condition: f64,
    ) -> Result<Vec<InverseSample>, MechanismError> {
        let lref = self.reference_length();
        let couple = self.couple_columns();
        let mut out = Vec::with_capacity(states.len());
        let mut lu = LuLanes::empty();
        let (mut rhs, mut work) = (Vec::new(), Vec::new());
        for batch in states.chunks(LANES) {
            let mut systems = Vec::with_capacity(LANES);
            for (q, qd, qdd) in batch {
                let (mut s, mut rb) = self.inverse_dynamics_system(q, qd, qdd)?;
                for i in 0..self.bodies.len() {
                    s.row_mut(3 * i + 2).scale_mut(1.0 / lref);
                    rb[3 * i + 2] /= lref;
                }
                for (c, _) in couple.iter().enumerate().filter(|(_, is)| **is) {
                    s.column_mut(c).scale_mut(lref);
                }
                systems.push((norm1(&s), s, rb));
            }
            let n = systems[0].1.nrows();
            let mats: Vec<&[f64]> = systems.iter().map(|(_, s, _)| s.as_slice()).collect();
            lu.refactor(&mats, n);
            let inverse_norms = lu.inverse_norm1(&mut work);
            rhs.clear();
            rhs.extend(
                (0..n).map(|i| std::array::from_fn(|l| systems.get(l).map_or(0.0, |s| s.2[i]))),
            );
            let regular = lu.solve_mut(&mut rhs);
            for (l, (norm_s, _, _)) in systems.iter().enumerate() {
                let condition = match inverse_norms[l] {
                    Some(norm_inv) => norm_s * norm_inv,
                    None => f64::INFINITY,
                };
                out.push(if condition.is_nan() || condition >= max_condition {
                    InverseSample::Toggle { condition }
                } else if !regular[l] {
                    InverseSample::Toggle {
                        condition: f64::INFINITY,
                    }
                } else {
                    let forces = (0..n)
                        .map(|c| match couple[c] {
                            true => rhs[c][l] * lref,
                            false => rhs[c][l],
                        })
                        .collect();
                    InverseSample::Solved { forces, condition }
                });
            }
        }
        Ok(out)
    }

    /// Standard deviations of the forces row at one sample (N, N m, in [`Mechanism::force_columns`]
    /// order) from `cov`, the covariance of the driving coordinates, their rates and
    /// accelerations (3 nd x 3 nd, ordered d_j, d_j', d_j'' driver by driver, as the smoother
    /// gives it): first-order propagation, sigma_F^2 = diag(J C J^T), J the forces' Jacobian in
    /// those quantities by central differences (steps of 1 % of each one's standard deviation;
    /// the forces are linear in the accelerations, smooth in the rest). None at a toggle.
    pub fn forces_sigma(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        qdd: &DVector<f64>,
        cov: &DMatrix<f64>,
        max_condition: f64,
    ) -> Option<Vec<f64>> {
        self.propagate_sigma(q, qd, qdd, cov, &|states| {
            let states: Vec<_> = states.iter().map(|(q, qd, qdd)| (q, qd, qdd)).collect();
            self.inverse_dynamics_batch(&states, max_condition)
                .ok()?
                .into_iter()
                .map(|s| match s {
                    InverseSample::Solved { forces, .. } => Some(DVector::from_vec(forces)),
                    InverseSample::Toggle { .. } => None,
                })
                .collect()
        })
    }

    /// The markers' kinematics at one sample from the mechanism's state: per marker (in the
    /// mechanism's order) x, y (m), vx, vy (m/s), ax, ay (m/s^2), bench frame.
    pub fn marker_kinematics(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        qdd: &DVector<f64>,
    ) -> Vec<f64> {
        use crate::constraints::{body_point, body_point_acc, body_point_vel};
        let mut out = Vec::with_capacity(6 * self.markers.len());
        for m in &self.markers {
            let p = body_point(q, m.body, m.local);
            let v = body_point_vel(q, qd, m.body, m.local);
            let a = body_point_acc(q, qd, qdd, m.body, m.local);
            out.extend([p.x, p.y, v.x, v.y, a.x, a.y]);
        }
        out
    }

    /// Standard deviations of [`Mechanism::marker_kinematics`] at one sample from the drivers'
    /// covariance `cov` (as in [`Mechanism::forces_sigma`]).
    pub fn marker_kinematics_sigma(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        qdd: &DVector<f64>,
        cov: &DMatrix<f64>,
    ) -> Option<Vec<f64>> {
        self.propagate_sigma(q, qd, qdd, cov, &|states| {
            let kinematics = |(q, qd, qdd): &State| self.marker_kinematics(q, qd, qdd);
            Some(
                states
                    .iter()
                    .map(|s| DVector::from_vec(kinematics(s)))
                    .collect(),
            )
        })
    }

    /// First-order propagation of the drivers' covariance `cov` (3 nd x 3 nd: d_j, d_j', d_j''
    /// driver by driver) to any quantity `f` of the state: sigma^2 = diag(J C J^T), J by central
    /// differences in the drivers' values, rates and accelerations (steps of 1 % of each one's
    /// standard deviation), the state reassembled from the perturbed drivers.
    fn propagate_sigma(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        qdd: &DVector<f64>,
        cov: &DMatrix<f64>,
        f: &StateFunction<'_>,
    ) -> Option<Vec<f64>> {
        let nd = self.drivers.len();
        let n = q.len();
        if cov.nrows() != 3 * nd || cov.ncols() != 3 * nd {
            return None;
        }
        let mut x = Vec::with_capacity(3 * nd);
        for d in &self.drivers {
            let g = d.coordinate.gradient(q, n);
            x.extend([
                d.coordinate.value(q),
                g.dot(qd),
                g.dot(qdd) + d.coordinate.quadratic(q, qd),
            ]);
        }
        let state = |x: &[f64]| -> Option<State> {
            let values: Vec<f64> = (0..nd).map(|j| x[3 * j]).collect();
            let rates: Vec<f64> = (0..nd).map(|j| x[3 * j + 1]).collect();
            let accs: Vec<f64> = (0..nd).map(|j| x[3 * j + 2]).collect();
            let q1 = self.assemble_from(q, &values).ok()?;
            let (qd1, qdd1) = self.motion_at(&q1, &rates, &accs).ok()?;
            Some((q1, qd1, qdd1))
        };
        // The state at x, then at x +- h_i e_i for each quantity with a spread, the quantity
        // computed on all of them at once (the inverse dynamics solves them side by side).
        let mut states = vec![state(&x)?];
        let mut steps = Vec::with_capacity(3 * nd);
        for i in 0..3 * nd {
            let h = 0.01 * cov[(i, i)].max(0.0).sqrt();
            if h == 0.0 {
                continue;
            }
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += h;
            xm[i] -= h;
            states.push(state(&xp)?);
            states.push(state(&xm)?);
            steps.push((i, h));
        }
        let values = f(&states)?;
        let mut jac = DMatrix::zeros(values[0].len(), 3 * nd);
        for (k, (i, h)) in steps.into_iter().enumerate() {
            let col = (&values[1 + 2 * k] - &values[2 + 2 * k]) / (2.0 * h);
            jac.set_column(i, &col);
        }
        let var = &jac * cov * jac.transpose();
        Some(var.diagonal().iter().map(|v| v.max(0.0).sqrt()).collect())
    }
}
