//! Forward dynamics of the rigid mechanism in absolute coordinates with Lagrange multipliers:
//!
//! ```text
//! [ M    Phi_q^T ] [ q''    ]   [ Q(q, q') ]
//! [ Phi_q   0    ] [ lambda ] = [ gamma    ]
//! ```
//!
//! (index-1 form; Nikravesh ch. 13, Haug ch. 11), integrated by the Dormand-Prince 5(4) pair
//! with error control, each accepted step followed by a projection of q onto Phi(q) = 0 and of
//! q' onto Phi_q q' = 0 (minimum-norm Newton corrections), which holds the drift at round-off.
//! The state carries the work of every force element, so that the energy balance
//! Delta T + Delta V_gravity = sum of the elements' work is checked. The joint forces come from
//! the multipliers (see [`crate::constraints`]), a different route from the Newton-Euler solve
//! of [`crate::inverse`].

use nalgebra::{DMatrix, DVector};

use crate::model::{JointKind, Mechanism};
use crate::MechanismError;
use flexbench_numeric::lu::Lu;
use flexbench_numeric::ode::{dopri5_step, next_step, Tolerance};

/// Integration settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimConfig {
    /// Recorded duration, s.
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

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            duration: 2.0,
            rate: 1000.0,
            settle: 3.0,
            rtol: 1e-10,
            atol: 1e-11,
        }
    }
}

impl SimConfig {
    /// Output samples recorded: the duration at the rate, both ends included.
    fn samples(&self) -> usize {
        (self.duration * self.rate).round() as usize + 1
    }

    /// The step control's tolerances.
    fn tolerance(&self) -> Tolerance {
        Tolerance {
            atol: self.atol,
            rtol: self.rtol,
        }
    }

    /// Integration time of output sample `k` (from the start of settling), s.
    fn sample_time(&self, k: usize) -> f64 {
        self.settle + k as f64 / self.rate
    }
}

/// The mechanism's state and its dynamics at one output sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Time since the recording started, s.
    pub t: f64,
    /// Coordinates (centroid x, y in m, angle in rad, per body).
    pub q: DVector<f64>,
    /// Velocities.
    pub qd: DVector<f64>,
    /// Accelerations.
    pub qdd: DVector<f64>,
    /// Lagrange multipliers, one per constraint row.
    pub lambda: DVector<f64>,
    /// Work done by each force element since the recording started, J.
    pub work: Vec<f64>,
}

/// What the integration reports about itself.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SimReport {
    /// Accepted steps.
    pub steps: usize,
    /// Rejected steps.
    pub rejected: usize,
    /// Largest constraint violation met before a projection, m or rad.
    pub max_drift_before_projection: f64,
    /// Largest constraint violation at an output sample, m or rad.
    pub max_drift_at_samples: f64,
    /// Largest |Delta T + Delta V_g - sum W| over the recording, J.
    pub energy_error_j: f64,
    /// Sum over the elements of the absolute work they did over the recording, J (the scale of
    /// the energy error).
    pub gross_work_j: f64,
    /// energy_error_j / gross_work_j.
    pub energy_error_relative: f64,
}

/// The integrator where a simulation's recording starts: the state y = (q, q', work of each
/// force element) at time `t` s after the start of settling, the next step's size (s), and the
/// diagnostics so far. Made by [`Mechanism::settle`], recorded from by
/// [`Mechanism::simulate_from`].
#[derive(Debug, Clone)]
pub struct Settled {
    y: DVector<f64>,
    t: f64,
    h: f64,
    report: SimReport,
}

/// When a simulation last told its progress, and its whole integration time, s.
struct Progress {
    last: f64,
    total: f64,
}

impl Progress {
    fn new(cfg: &SimConfig) -> Self {
        Progress {
            last: 0.0,
            total: cfg.sample_time(cfg.samples() - 1),
        }
    }
}

/// A simulation's settings checked: a positive, finite duration and rate, and a finite,
/// non-negative settling time.
fn check_config(cfg: &SimConfig) -> Result<(), MechanismError> {
    if !(cfg.duration > 0.0
        && cfg.rate > 0.0
        && cfg.settle >= 0.0
        && cfg.duration.is_finite()
        && cfg.settle.is_finite())
    {
        return Err(MechanismError::Model(format!(
            "simulation needs a positive duration and rate and a non-negative settling time (got duration {} s, rate {} Hz, settle {} s)",
            cfg.duration, cfg.rate, cfg.settle
        )));
    }
    Ok(())
}

/// A simulated recording.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// Samples at the output rate.
    pub samples: Vec<Sample>,
    /// Integration diagnostics.
    pub report: SimReport,
}

impl Mechanism {
    /// Accelerations and multipliers at (q, q'): the augmented system's solution.
    pub fn forward(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
    ) -> Result<(DVector<f64>, DVector<f64>), MechanismError> {
        let n = self.ncoords();
        let nc = self.nconstraints();
        let mut a = DMatrix::zeros(n + nc, n + nc);
        let md = self.mass_diagonal();
        for i in 0..n {
            a[(i, i)] = md[i];
        }
        let jac = self.phi_q(q);
        a.view_mut((n, 0), (nc, n)).copy_from(&jac);
        a.view_mut((0, n), (n, nc)).copy_from(&jac.transpose());
        let mut rhs = DVector::zeros(n + nc);
        rhs.rows_mut(0, n).copy_from(&self.applied(q, qd));
        rhs.rows_mut(n, nc).copy_from(&self.gamma(q, qd));
        let sol = Lu::new(a).solve(&rhs).ok_or_else(|| MechanismError::Simulation {
            t: f64::NAN,
            reason: "singular augmented matrix (a toggle position, or a body with no mass in a free direction)".into(),
        })?;
        Ok((sol.rows(0, n).into_owned(), sol.rows(n, nc).into_owned()))
    }

    /// Project q onto Phi(q) = 0 and q' onto Phi_q q' = 0 (minimum-norm corrections); returns
    /// the violation before the projection.
    pub fn project(
        &self,
        q: &mut DVector<f64>,
        qd: &mut DVector<f64>,
    ) -> Result<f64, MechanismError> {
        let before = self.phi(q).amax();
        for _ in 0..10 {
            let r = self.phi(q);
            if r.amax() < 1e-14 {
                break;
            }
            let jac = self.phi_q(q);
            let jjt = &jac * jac.transpose();
            let y = Lu::new(jjt)
                .solve(&r)
                .ok_or_else(|| MechanismError::Simulation {
                    t: f64::NAN,
                    reason: "singular constraint Jacobian during projection (toggle position)"
                        .into(),
                })?;
            *q -= jac.transpose() * y;
        }
        let jac = self.phi_q(q);
        let jjt = &jac * jac.transpose();
        let v = &jac * &*qd;
        if let Some(y) = Lu::new(jjt).solve(&v) {
            *qd -= jac.transpose() * y;
        }
        Ok(before)
    }

    /// Simulate: settle, then record `duration` s at `rate` Hz. `progress` is told the fraction
    /// done (0..1) now and then.
    pub fn simulate(
        &self,
        cfg: &SimConfig,
        progress: &mut dyn FnMut(f64),
    ) -> Result<Simulation, MechanismError> {
        let settled = self.settle_with(cfg, progress)?;
        self.record(settled, cfg, progress)
    }

    /// The bench settled for `cfg.settle` s from its assembled initial state: the state a
    /// simulation records from. It does not depend on `cfg`'s duration or rate (no output time
    /// falls inside the settling), so that [`Mechanism::simulate_from`] with any of them records
    /// the same bits as [`Mechanism::simulate`].
    pub fn settle(&self, cfg: &SimConfig) -> Result<Settled, MechanismError> {
        self.settle_with(cfg, &mut |_| {})
    }

    /// Record `cfg.duration` s at `cfg.rate` Hz from a settled state (a [`Mechanism::settle`] of
    /// this mechanism with `cfg`'s settling time and tolerances): [`Mechanism::simulate`]'s
    /// result without its settling. The state is taken from `settled` (cloned), which stays
    /// usable for another record.
    pub fn simulate_from(
        &self,
        settled: &Settled,
        cfg: &SimConfig,
    ) -> Result<Simulation, MechanismError> {
        check_config(cfg)?;
        self.record(settled.clone(), cfg, &mut |_| {})
    }

    /// An error when the mechanism needs the coupled elastic simulation (an elastic body or a
    /// prescribed driver), which this rigid integrator does not do.
    pub fn check_rigid(&self) -> Result<(), MechanismError> {
        if let Some(b) = self.bodies.iter().find(|b| b.elastic.is_some()) {
            return Err(MechanismError::Model(format!(
                "body '{}' is elastic: the rigid simulation cannot integrate it; use the coupled elastic simulation (flexbench simulate does so for such a file)",
                b.name
            )));
        }
        if let Some(d) = self.drivers.iter().find(|d| d.prescribed) {
            return Err(MechanismError::Model(format!(
                "driver '{}' is prescribed: the rigid simulation drives by forces only; use the coupled elastic simulation (flexbench simulate does so for such a file)",
                d.name
            )));
        }
        Ok(())
    }

    /// The settling of [`Mechanism::simulate`], progress told on the whole run's scale.
    fn settle_with(
        &self,
        cfg: &SimConfig,
        progress: &mut dyn FnMut(f64),
    ) -> Result<Settled, MechanismError> {
        check_config(cfg)?;
        self.check_rigid()?;
        let mut state = Settled {
            y: self.initial_state()?,
            t: 0.0,
            h: 1e-4,
            report: SimReport::default(),
        };
        let mut clock = Progress::new(cfg);
        self.advance(&mut state, cfg, cfg.settle, &mut clock, progress)?;
        Ok(state)
    }

    /// The output samples from the end of settling: each recorded when the integration stands
    /// on its time, the steps between clipped to land on the next.
    fn record(
        &self,
        mut state: Settled,
        cfg: &SimConfig,
        progress: &mut dyn FnMut(f64),
    ) -> Result<Simulation, MechanismError> {
        let nsamples = cfg.samples();
        let mut samples = Vec::with_capacity(nsamples);
        let mut work0: Option<Vec<f64>> = None;
        let mut clock = Progress::new(cfg);
        clock.last = state.t;
        for k in 0..nsamples {
            if k > 0 {
                self.advance(&mut state, cfg, cfg.sample_time(k), &mut clock, progress)?;
            }
            let ts = k as f64 / cfg.rate;
            let sample = self.sample(&state.y, state.t, ts, &mut work0, &mut state.report)?;
            samples.push(sample);
        }
        progress(1.0);
        let mut report = state.report;
        self.energy_balance(&samples, &mut report);
        Ok(Simulation { samples, report })
    }

    /// Integrate `state` until it stands on time `target` (within 1e-12 s, then set to it
    /// exactly): Dormand-Prince steps with error control, each clipped not to pass the target,
    /// each accepted one projected onto the constraints.
    fn advance(
        &self,
        state: &mut Settled,
        cfg: &SimConfig,
        target: f64,
        clock: &mut Progress,
        progress: &mut dyn FnMut(f64),
    ) -> Result<(), MechanismError> {
        let deriv = |y: &DVector<f64>| self.state_rate(y);
        let Settled { y, t, h, report } = state;
        while (*t - target).abs() >= 1e-12 {
            let hh = h.min(target - *t);
            let (ynew, err) =
                dopri5_step(&deriv, y, hh, cfg.tolerance()).map_err(|e| with_time(e, *t))?;
            if err <= 1.0 {
                *t = if (target - (*t + hh)).abs() < 1e-12 {
                    target
                } else {
                    *t + hh
                };
                *y = ynew;
                self.project_state(y, *t, report)?;
                if *t - clock.last > 0.01 * clock.total {
                    clock.last = *t;
                    progress(*t / clock.total);
                }
            } else {
                report.rejected += 1;
            }
            *h = next_step(*h, hh, err);
            if *h < 1e-12 {
                return Err(MechanismError::Simulation {
                    t: *t,
                    reason: "step size underflow: the motion is too stiff or singular here".into(),
                });
            }
            if report.steps > 50_000_000 {
                return Err(MechanismError::Simulation {
                    t: *t,
                    reason: "too many steps".into(),
                });
            }
        }
        Ok(())
    }

    /// The rate of the integrator's state y = (q, q', work of each force element): (q', q'',
    /// each element's power).
    fn state_rate(&self, y: &DVector<f64>) -> Result<DVector<f64>, MechanismError> {
        let n = self.ncoords();
        let q = y.rows(0, n).into_owned();
        let qd = y.rows(n, n).into_owned();
        let (qdd, _) = self.forward(&q, &qd)?;
        let mut d = DVector::zeros(2 * n + self.forces.len());
        d.rows_mut(0, n).copy_from(&qd);
        d.rows_mut(n, n).copy_from(&qdd);
        for (k, p) in self.element_powers(&q, &qd).into_iter().enumerate() {
            d[2 * n + k] = p;
        }
        Ok(d)
    }

    /// The integrator's initial state: the assembled configuration, its velocities at the
    /// drivers' rates, and zero work of every force element.
    fn initial_state(&self) -> Result<DVector<f64>, MechanismError> {
        let n = self.ncoords();
        let q0 = self.initial_configuration()?;
        let rates: Vec<f64> = self.drivers.iter().map(|d| d.rate).collect();
        let qd0 = self.velocities_at(&q0, &rates)?;
        let mut y = DVector::zeros(2 * n + self.forces.len());
        y.rows_mut(0, n).copy_from(&q0);
        y.rows_mut(n, n).copy_from(&qd0);
        Ok(y)
    }

    /// The output sample at integration time `t` (its time `ts` from the end of settling): the
    /// state, accelerations and multipliers, and each force element's work since the first
    /// sample (`work0`, set at the first); the constraints' drift noted in `report`.
    fn sample(
        &self,
        y: &DVector<f64>,
        t: f64,
        ts: f64,
        work0: &mut Option<Vec<f64>>,
        report: &mut SimReport,
    ) -> Result<Sample, MechanismError> {
        let n = self.ncoords();
        let q = y.rows(0, n).into_owned();
        let qd = y.rows(n, n).into_owned();
        let (qdd, lambda) = self.forward(&q, &qd).map_err(|e| with_time(e, t))?;
        let w: Vec<f64> = (0..self.forces.len()).map(|k| y[2 * n + k]).collect();
        let w0 = work0.get_or_insert_with(|| w.clone());
        report.max_drift_at_samples = report.max_drift_at_samples.max(self.phi(&q).amax());
        Ok(Sample {
            t: ts,
            q,
            qd,
            qdd,
            lambda,
            work: w.iter().zip(w0.iter()).map(|(a, b)| a - b).collect(),
        })
    }

    /// An accepted step's state projected back onto the constraints (positions and
    /// velocities), the drift before projection and the step counted in `report`.
    fn project_state(
        &self,
        y: &mut DVector<f64>,
        t: f64,
        report: &mut SimReport,
    ) -> Result<(), MechanismError> {
        let n = self.ncoords();
        let mut q = y.rows(0, n).into_owned();
        let mut qd = y.rows(n, n).into_owned();
        let before = self.project(&mut q, &mut qd).map_err(|e| with_time(e, t))?;
        report.max_drift_before_projection = report.max_drift_before_projection.max(before);
        y.rows_mut(0, n).copy_from(&q);
        y.rows_mut(n, n).copy_from(&qd);
        report.steps += 1;
        Ok(())
    }

    /// Fill the energy-balance figures of `report` from the samples.
    fn energy_balance(&self, samples: &[Sample], report: &mut SimReport) {
        let Some(first) = samples.first() else { return };
        let e0 = self.kinetic_energy(&first.qd) + self.gravity_potential(&first.q);
        let mut worst: f64 = 0.0;
        let mut gross = vec![0.0; self.forces.len()];
        for (k, s) in samples.iter().enumerate() {
            let e = self.kinetic_energy(&s.qd) + self.gravity_potential(&s.q);
            let w: f64 = s.work.iter().sum();
            worst = worst.max((e - e0 - w).abs());
            if k > 0 {
                for (g, (a, b)) in gross
                    .iter_mut()
                    .zip(s.work.iter().zip(&samples[k - 1].work))
                {
                    *g += (a - b).abs();
                }
            }
        }
        report.energy_error_j = worst;
        report.gross_work_j = gross.iter().sum();
        report.energy_error_relative = if report.gross_work_j > 0.0 {
            worst / report.gross_work_j
        } else {
            worst
        };
    }

    /// Column names of the forces table: for each revolute joint `<name>_x, <name>_y` (force of
    /// its first body on its second, N, bench frame), each actuator's name (its magnitude), then
    /// for each slide `<name>_normal` (N) and `<name>_moment` (N m). For the bench this gives the
    /// contract's A_x ... D_y, motor_torque, pump_force, slide_normal, then slide_moment.
    pub fn force_columns(&self) -> Vec<String> {
        let mut out = Vec::new();
        for j in &self.joints {
            if matches!(j.kind, JointKind::Revolute { .. }) {
                out.push(format!("{}_x", j.name));
                out.push(format!("{}_y", j.name));
            }
        }
        out.extend(
            self.forces
                .iter()
                .filter(|f| f.actuator)
                .map(|f| f.name.clone()),
        );
        for j in &self.joints {
            if matches!(j.kind, JointKind::Slide { .. }) {
                out.push(format!("{}_normal", j.name));
                out.push(format!("{}_moment", j.name));
            }
        }
        out
    }

    /// A forces row (in [`Mechanism::force_columns`] order) from the multipliers of the
    /// forward dynamics and the actuators' laws.
    pub fn forces_from_multipliers(&self, s: &Sample) -> Vec<f64> {
        let mut rev = Vec::new();
        let mut slide = Vec::new();
        for (k, j) in self.joints.iter().enumerate() {
            let (l1, l2) = (s.lambda[2 * k], s.lambda[2 * k + 1]);
            match j.kind {
                JointKind::Revolute { .. } => rev.extend([l1, l2]),
                JointKind::Slide { .. } => slide.extend([-l1, -l2]),
            }
        }
        let acts = self
            .forces
            .iter()
            .filter(|f| f.actuator)
            .map(|f| f.magnitude(&s.q, &s.qd));
        rev.into_iter().chain(acts).chain(slide).collect()
    }
}

fn with_time(e: MechanismError, t: f64) -> MechanismError {
    match e {
        MechanismError::Simulation { reason, .. } => MechanismError::Simulation { t, reason },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::wind_pump_default;
    use crate::inverse::InverseSample;

    /// A recording from a settled state is the whole simulation's, bit for bit, at any rate and
    /// duration: the settling is shared, not approximated.
    #[test]
    fn recording_from_a_settled_state_is_the_whole_simulation() {
        let m = wind_pump_default();
        let base = SimConfig {
            settle: 0.2,
            ..Default::default()
        };
        let settled = m.settle(&base).unwrap();
        for (duration, rate) in [(0.05, 200.0), (0.03, 2000.0), (0.01, 3.0)] {
            let cfg = SimConfig {
                duration,
                rate,
                ..base
            };
            let whole = m.simulate(&cfg, &mut |_| {}).unwrap();
            let from = m.simulate_from(&settled, &cfg).unwrap();
            assert_eq!(whole.samples, from.samples, "{duration} s at {rate} Hz");
            assert_eq!(whole.report, from.report, "{duration} s at {rate} Hz");
        }
        let none = SimConfig { rate: 0.0, ..base };
        assert!(m.simulate_from(&settled, &none).is_err());
    }

    /// The default bench: drift at round-off, energy balanced to 1e-6 of the gross work over
    /// one crank turn (0.43 s at 140 rpm), and the docs/bench.md section 3 ranges.
    #[test]
    fn default_bench_settles_into_the_documented_motion() {
        let m = wind_pump_default();
        let cfg = SimConfig {
            duration: 0.45,
            rate: 1000.0,
            settle: 3.0,
            ..Default::default()
        };
        let sim = m.simulate(&cfg, &mut |_| {}).unwrap();
        let r = &sim.report;
        eprintln!("{r:?}");
        assert!(
            r.max_drift_before_projection < 1e-9,
            "drift {}",
            r.max_drift_before_projection
        );
        assert!(
            r.energy_error_relative < 1e-6,
            "energy {}",
            r.energy_error_relative
        );
        let rpm: Vec<f64> = sim
            .samples
            .iter()
            .map(|s| s.qd[2] * 30.0 / std::f64::consts::PI)
            .collect();
        let (lo, hi) = rpm
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        eprintln!("crank speed {lo:.1} .. {hi:.1} rpm");
        let xd: Vec<f64> = sim.samples.iter().map(|s| s.q[9]).collect();
        let (xlo, xhi) = xd
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        eprintln!("slide {xlo:.4} .. {xhi:.4} m");
        let ph: Vec<f64> = sim.samples.iter().map(|s| s.q[8]).collect();
        let (plo, phi) = ph
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        eprintln!("rocker swing {:.1} deg", (phi - plo).to_degrees());
        let mut amax: f64 = 0.0;
        for s in &sim.samples {
            for mk in &m.markers {
                let a = crate::constraints::body_point_acc(&s.q, &s.qd, &s.qdd, mk.body, mk.local);
                amax = amax.max(a.norm());
            }
        }
        eprintln!("max marker acceleration {amax:.2} m/s^2");
        let mut fmax: f64 = 0.0;
        for s in &sim.samples {
            let f = m.forces_from_multipliers(s);
            fmax = fmax.max(f[2].hypot(f[3]));
            let InverseSample::Solved { forces, condition } =
                m.inverse_dynamics(&s.q, &s.qd, &s.qdd, 1e8).unwrap()
            else {
                panic!()
            };
            for (a, b) in f.iter().zip(&forces) {
                assert!((a - b).abs() < 1e-6 * 100.0, "{a} vs {b}, cond {condition}");
            }
        }
        eprintln!("max |B| {fmax:.1} N");
    }
}
