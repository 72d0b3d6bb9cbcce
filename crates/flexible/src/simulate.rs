//! Integration of the coupled system: the initial state assembled from the file (drivers' values
//! and rates, the elastic bodies' initial q and q'), then Dormand-Prince 5(4) steps with error
//! control (the rigid simulation's, [`flexbench_numeric::ode::dopri5_step`]), each accepted
//! step projected back onto the constraints, output samples at a fixed rate, and the energy
//! balance
//!
//! ```text
//! Delta (T + V_strain + V_gravity) = W_force elements + W_prescribed drivers - W_damping
//! ```
//!
//! whose error is reported against the gross work (the sum of |dW| of every channel).

use nalgebra::{DMatrix, DVector};

use flexbench_mechanism::model::Coordinate;
use flexbench_mechanism::MechanismError;
use flexbench_numeric::lu::Lu;
use flexbench_numeric::ode::{dopri5_step, next_step, Tolerance};

use crate::body::PointShape;
use crate::system::{Constraint, Prescribed, System};
use crate::FlexError;

/// Integration settings of the coupled simulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlexConfig {
    /// Simulated duration, s.
    pub duration: f64,
    /// Output sample rate, Hz.
    pub rate: f64,
    /// Time simulated before recording starts (the motion settles), s.
    pub settle: f64,
    /// Relative tolerance of the step control.
    pub rtol: f64,
    /// Absolute tolerance of the step control (m, rad, m/s, rad/s, J alike).
    pub atol: f64,
}

impl Default for FlexConfig {
    fn default() -> Self {
        FlexConfig {
            duration: 0.1,
            rate: 1000.0,
            settle: 0.0,
            rtol: 1e-9,
            atol: 1e-12,
        }
    }
}

/// The coupled system's state at one output sample.
#[derive(Debug, Clone, PartialEq)]
pub struct FlexSample {
    /// Time since the recording started (after the settling), s.
    pub t: f64,
    /// Coordinates p (per body: frame origin x, y in m, angle in rad, elastic coordinates).
    pub p: DVector<f64>,
    /// Rates p'.
    pub pd: DVector<f64>,
    /// Accelerations p''.
    pub pdd: DVector<f64>,
    /// Multipliers, one per constraint row.
    pub lambda: DVector<f64>,
    /// Work of each power channel since the first sample ([`System::power_names`]), J.
    pub work: Vec<f64>,
    /// Kinetic energy, J.
    pub kinetic: f64,
    /// Strain energy, J.
    pub strain: f64,
    /// Gravity's potential energy, J.
    pub gravity: f64,
}

/// What the integration reports about itself.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FlexReport {
    /// Accepted steps.
    pub steps: usize,
    /// Rejected steps.
    pub rejected: usize,
    /// Evaluations of the equations of motion.
    pub evaluations: usize,
    /// Largest constraint violation met before a projection, m or rad.
    pub max_drift_before_projection: f64,
    /// Largest |Delta E - sum W| over the samples, J.
    pub energy_error_j: f64,
    /// Sum of |dW| over the samples and channels, J.
    pub gross_work_j: f64,
    /// energy_error_j / gross_work_j.
    pub energy_error_relative: f64,
}

/// A coupled simulation.
#[derive(Debug, Clone)]
pub struct FlexSimulation {
    /// Samples at the output rate, the first at t = 0.
    pub samples: Vec<FlexSample>,
    /// Names of the work channels.
    pub channels: Vec<String>,
    /// Diagnostics.
    pub report: FlexReport,
}

fn sim_err(t: f64, reason: impl Into<String>) -> FlexError {
    FlexError::Simulation {
        t,
        reason: reason.into(),
    }
}

impl System {
    /// Every driver as a constraint row (value + rate t), prescribed or not: with the elastic
    /// coordinates held, the square system that places the mechanism at t = 0.
    fn placing_constraints(&self) -> Result<Vec<Constraint>, FlexError> {
        let mut out: Vec<Constraint> = self
            .constraints
            .iter()
            .filter(|c| !matches!(c, Constraint::Driver { .. }))
            .cloned()
            .collect();
        for d in &self.mechanism.drivers {
            let (body, what) = match &d.coordinate {
                Coordinate::Angle { body } => (*body, Prescribed::Angle(self.frame_angle[*body])),
                Coordinate::PointX { body, point } | Coordinate::PointY { body, point } => {
                    if self.bodies[*body].inv.elastic() > 0 {
                        return Err(FlexError::Model(format!(
                            "driver '{}' is a point of the elastic body '{}'; drive a rigid body",
                            d.name, self.bodies[*body].name
                        )));
                    }
                    let s = PointShape {
                        at: *point,
                        phi: DMatrix::zeros(2, 0),
                    };
                    (
                        *body,
                        if matches!(d.coordinate, Coordinate::PointX { .. }) {
                            Prescribed::X(s)
                        } else {
                            Prescribed::Y(s)
                        },
                    )
                }
            };
            out.push(Constraint::Driver {
                name: d.name.clone(),
                body,
                what,
                value: d.value,
                rate: d.rate,
            });
        }
        Ok(out)
    }

    /// The initial state (p, p'): the rigid assembly of the file, then Newton on the coupled
    /// constraints with the drivers at their values and the elastic coordinates at their
    /// initial values; the rates from the same square Jacobian.
    pub fn initial_state(&self) -> Result<(DVector<f64>, DVector<f64>), FlexError> {
        let q0 = self
            .mechanism
            .initial_configuration()
            .map_err(FlexError::Mechanism)?;
        let n = self.ncoords();
        let mut p = DVector::zeros(n);
        let mut rates_q = DVector::zeros(n);
        let mut held = Vec::new();
        for (k, b) in self.mechanism.bodies.iter().enumerate() {
            let o = self.offsets[k];
            let phi = q0[3 * k + 2];
            let r = nalgebra::Vector2::new(q0[3 * k], q0[3 * k + 1])
                + flexbench_mechanism::rot(phi, self.bodies[k].origin - b.centroid);
            p[o] = r.x;
            p[o + 1] = r.y;
            p[o + 2] = phi + self.frame_angle[k];
            if let Some(e) = &b.elastic {
                for j in 0..self.bodies[k].inv.elastic() {
                    p[o + 3 + j] = e.initial.get(j).copied().unwrap_or(0.0);
                    rates_q[o + 3 + j] = e.initial_rate.get(j).copied().unwrap_or(0.0);
                    held.push(o + 3 + j);
                }
            }
        }
        let placing = System {
            constraints: self.placing_constraints()?,
            ..self.clone()
        };
        let nc = placing.nconstraints();
        if nc + held.len() != n {
            return Err(FlexError::Model(format!(
                "the joints and drivers give {} equations for {} coordinates: give one driver per rigid degree of freedom",
                nc + held.len(),
                n
            )));
        }
        let square = |p: &DVector<f64>| {
            let (jac, _) = placing.jacobian_gamma(p, &DVector::zeros(n));
            let mut a = DMatrix::zeros(n, n);
            a.view_mut((0, 0), (nc, n)).copy_from(&jac);
            for (i, &h) in held.iter().enumerate() {
                a[(nc + i, h)] = 1.0;
            }
            Lu::new(a)
        };
        let singular = || {
            FlexError::Model("the initial configuration is singular (a toggle position, or drivers that do not fix the mechanism)".into())
        };
        for _ in 0..30 {
            let r = placing.phi(&p, 0.0);
            if r.amax() < 1e-14 {
                break;
            }
            let mut rhs = DVector::zeros(n);
            rhs.rows_mut(0, nc).copy_from(&r);
            p -= square(&p).solve(&rhs).ok_or_else(singular)?;
        }
        if placing.phi(&p, 0.0).amax() > 1e-10 {
            return Err(FlexError::Model("the elastic bodies' initial deformation cannot be assembled with the joints (Newton did not converge)".into()));
        }
        let mut rhs = DVector::zeros(n);
        rhs.rows_mut(0, nc).copy_from(&(-placing.phi_t()));
        for (i, &h) in held.iter().enumerate() {
            rhs[nc + i] = rates_q[h];
        }
        let pd = square(&p).solve(&rhs).ok_or_else(singular)?;
        Ok((p, pd))
    }

    /// Project p onto Phi(p, t) = 0 and p' onto Phi_p p' = -Phi_t (minimum-norm corrections);
    /// returns the violation before.
    fn project(
        &self,
        p: &mut DVector<f64>,
        pd: &mut DVector<f64>,
        t: f64,
    ) -> Result<f64, FlexError> {
        let before = self.phi(p, t).amax();
        let z = DVector::zeros(p.len());
        let singular = || {
            sim_err(
                t,
                "singular constraint Jacobian during projection (a toggle position)",
            )
        };
        for _ in 0..10 {
            let r = self.phi(p, t);
            if r.amax() < 1e-14 {
                break;
            }
            let (jac, _) = self.jacobian_gamma(p, &z);
            let y = Lu::new(&jac * jac.transpose())
                .solve(&r)
                .ok_or_else(singular)?;
            *p -= jac.transpose() * y;
        }
        let (jac, _) = self.jacobian_gamma(p, &z);
        let v = &jac * &*pd + self.phi_t();
        let y = Lu::new(&jac * jac.transpose())
            .solve(&v)
            .ok_or_else(singular)?;
        *pd -= jac.transpose() * y;
        Ok(before)
    }

    /// The rate of the integrator's state y = (p, p', t, work of each channel).
    fn state_rate(&self, y: &DVector<f64>) -> Result<DVector<f64>, MechanismError> {
        let n = self.ncoords();
        let p = y.rows(0, n).into_owned();
        let pd = y.rows(n, n).into_owned();
        let (pdd, lambda) = self
            .forward(&p, &pd)
            .map_err(|reason| MechanismError::Simulation {
                t: y[2 * n],
                reason,
            })?;
        let powers = self.powers(&p, &pd, &lambda);
        let mut d = DVector::zeros(y.len());
        d.rows_mut(0, n).copy_from(&pd);
        d.rows_mut(n, n).copy_from(&pdd);
        d[2 * n] = 1.0;
        for (k, w) in powers.into_iter().enumerate() {
            d[2 * n + 1 + k] = w;
        }
        Ok(d)
    }

    /// Simulate `cfg.duration` s from the initial state, samples at `cfg.rate` Hz; `progress`
    /// is told the fraction done now and then.
    pub fn simulate(
        &self,
        cfg: &FlexConfig,
        progress: &mut dyn FnMut(f64),
    ) -> Result<FlexSimulation, FlexError> {
        if !(cfg.duration > 0.0
            && cfg.duration.is_finite()
            && cfg.rate > 0.0
            && cfg.rate.is_finite()
            && cfg.settle >= 0.0
            && cfg.settle.is_finite())
        {
            return Err(FlexError::Model(format!(
                "the simulation needs a positive duration and rate and a non-negative settling time (got {} s, {} Hz, settle {} s)",
                cfg.duration, cfg.rate, cfg.settle
            )));
        }
        if !(cfg.rtol > 0.0 && cfg.atol > 0.0) {
            return Err(FlexError::Model(
                "the step control needs positive tolerances rtol and atol".into(),
            ));
        }
        self.check_step_budget(cfg.settle + cfg.duration)?;
        let (p0, pd0) = self.initial_state()?;
        let n = self.ncoords();
        let channels = self.power_names();
        let mut y = DVector::zeros(2 * n + 1 + channels.len());
        y.rows_mut(0, n).copy_from(&p0);
        y.rows_mut(n, n).copy_from(&pd0);
        let mut report = FlexReport::default();
        let nsamples = (cfg.duration * cfg.rate).round() as usize + 1;
        let mut samples = Vec::with_capacity(nsamples);
        let mut h = 1e-5;
        let mut t = 0.0;
        let total = cfg.settle + cfg.duration;
        let mut w0: Option<Vec<f64>> = None;
        for k in 0..nsamples {
            let target = cfg.settle + k as f64 / cfg.rate;
            self.advance(&mut y, &mut t, &mut h, target, cfg, &mut report)?;
            let mut s = self.sample(&y, t)?;
            s.t = k as f64 / cfg.rate;
            let w0 = w0.get_or_insert_with(|| s.work.clone());
            s.work.iter_mut().zip(w0.iter()).for_each(|(a, b)| *a -= b);
            samples.push(s);
            progress(t / total);
        }
        energy_balance(&samples, &mut report);
        Ok(FlexSimulation {
            samples,
            channels,
            report,
        })
    }

    /// Integrate y from t to `target` (landing on it exactly).
    fn advance(
        &self,
        y: &mut DVector<f64>,
        t: &mut f64,
        h: &mut f64,
        target: f64,
        cfg: &FlexConfig,
        report: &mut FlexReport,
    ) -> Result<(), FlexError> {
        let n = self.ncoords();
        let tol = Tolerance {
            rtol: cfg.rtol,
            atol: cfg.atol,
        };
        let evals = std::cell::Cell::new(0usize);
        let deriv = |y: &DVector<f64>| {
            evals.set(evals.get() + 1);
            self.state_rate(y)
        };
        while target - *t > 1e-13 {
            let hh = h.min(target - *t);
            let (mut ynew, err) = dopri5_step(&deriv, y, hh, tol)
                .map_err(|source| FlexError::Step { t: *t, source })?;
            if err <= 1.0 {
                *t = if target - (*t + hh) < 1e-13 {
                    target
                } else {
                    *t + hh
                };
                ynew[2 * n] = *t;
                let mut p = ynew.rows(0, n).into_owned();
                let mut pd = ynew.rows(n, n).into_owned();
                let before = self.project(&mut p, &mut pd, *t)?;
                report.max_drift_before_projection = report.max_drift_before_projection.max(before);
                ynew.rows_mut(0, n).copy_from(&p);
                ynew.rows_mut(n, n).copy_from(&pd);
                *y = ynew;
                report.steps += 1;
            } else {
                report.rejected += 1;
            }
            *h = next_step(*h, hh, err);
            if *h < 1e-13 || report.steps + report.rejected > 20_000_000 {
                return Err(sim_err(
                    *t,
                    "the step size collapsed: the elastic body is too stiff for this step control or the motion is singular; use fewer elements, a modal reduction (modes = ...), or looser tolerances",
                ));
            }
        }
        report.evaluations += evals.get();
        Ok(())
    }

    /// The output sample at time t.
    fn sample(&self, y: &DVector<f64>, t: f64) -> Result<FlexSample, FlexError> {
        let n = self.ncoords();
        let p = y.rows(0, n).into_owned();
        let pd = y.rows(n, n).into_owned();
        let (pdd, lambda) = self.forward(&p, &pd).map_err(|r| sim_err(t, r))?;
        let (kinetic, strain, gravity) = self.energies(&p, &pd);
        let work = y
            .rows(2 * n + 1, y.len() - 2 * n - 1)
            .iter()
            .copied()
            .collect();
        Ok(FlexSample {
            t,
            p,
            pd,
            pdd,
            lambda,
            work,
            kinetic,
            strain,
            gravity,
        })
    }
}

/// The energy balance's error and the gross work, from the samples.
fn energy_balance(samples: &[FlexSample], report: &mut FlexReport) {
    let Some(first) = samples.first() else { return };
    let e = |s: &FlexSample| s.kinetic + s.strain + s.gravity;
    let e0 = e(first);
    let mut worst: f64 = 0.0;
    let mut gross = 0.0;
    for (k, s) in samples.iter().enumerate() {
        let w: f64 = s.work.iter().sum();
        worst = worst.max((e(s) - e0 - w).abs());
        if k > 0 {
            gross += s
                .work
                .iter()
                .zip(&samples[k - 1].work)
                .map(|(a, b)| (a - b).abs())
                .sum::<f64>();
        }
    }
    report.energy_error_j = worst;
    report.gross_work_j = gross;
    report.energy_error_relative = if gross > 0.0 { worst / gross } else { worst };
}
