//! The forces' sensitivities to the mechanism file's parameters: per sample, the change of each
//! force of the inverse dynamics per unit change of each parameter ([`crate::parameters`]),
//! the motion held (the bodies' poses, as the markers measured them).
//!
//! The inverse dynamics solves A f = b (crate::inverse). Taken about each body's local origin O
//! instead of its centroid G (the moment row plus Rc x the force rows, Rc = R(theta) c the
//! centroid from the origin), the matrix A_O holds the geometry alone, and the right-hand side
//! is linear in the body's phi = (m, u = m c, I_O):
//!
//! ```text
//! force:  m (a_O - g) + alpha k x (R u) - omega^2 R u            - F_known
//! moment: I_O alpha + (R u) x (a_O - g)                          - M_known,O
//! ```
//!
//! (Newton-Euler about a moving body point: the moment of m a_G about O is
//! (R u) x a_O + m |c|^2 alpha; derivation in docs/identification.md). So
//! d f / d p = A_O^-1 (Y d phi/dp - (m, R u x) d g/dp - d b_known,O / dp), with Y the regressor
//! above, exact in phi; the force laws' part (stiffness, preload, damping, friction) is their
//! central difference between the parameter's two sides, exact where the law is linear in it.

use nalgebra::{DMatrix, DVector, Vector2};

use crate::inverse::InverseSample;
use crate::loads::add_generalized;
use crate::model::Mechanism;
use crate::parameters::{body_phi, FileParameter};
use crate::{cross, rot, MechanismError};

/// One body's motion about its local origin at a sample: position, velocity and acceleration
/// of the origin (m, m/s, m/s^2, bench frame), angle, angular velocity and acceleration (rad,
/// rad/s, rad/s^2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OriginMotion {
    /// The origin's position, m.
    pub r: Vector2<f64>,
    /// The origin's velocity, m/s.
    pub v: Vector2<f64>,
    /// The origin's acceleration, m/s^2.
    pub a: Vector2<f64>,
    /// The body's angle, rad.
    pub theta: f64,
    /// Its angular velocity, rad/s.
    pub omega: f64,
    /// Its angular acceleration, rad/s^2.
    pub alpha: f64,
}

/// k x v in the plane: v turned by a quarter turn.
fn perp(v: Vector2<f64>) -> Vector2<f64> {
    Vector2::new(-v.y, v.x)
}

impl Mechanism {
    /// Each body's motion about its local origin from the centroids' state (q, q', q'').
    pub fn origin_motion(
        &self,
        q: &DVector<f64>,
        qd: &DVector<f64>,
        qdd: &DVector<f64>,
    ) -> Vec<OriginMotion> {
        self.bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (theta, omega, alpha) = (q[3 * i + 2], qd[3 * i + 2], qdd[3 * i + 2]);
                let rc = rot(theta, b.centroid);
                let at = |v: &DVector<f64>| Vector2::new(v[3 * i], v[3 * i + 1]);
                OriginMotion {
                    r: at(q) - rc,
                    v: at(qd) - omega * perp(rc),
                    a: at(qdd) - alpha * perp(rc) + omega * omega * rc,
                    theta,
                    omega,
                    alpha,
                }
            })
            .collect()
    }

    /// The centroids' state (q, q', q'') of this model's bodies moving as `motion`.
    pub fn centroid_state(
        &self,
        motion: &[OriginMotion],
    ) -> (DVector<f64>, DVector<f64>, DVector<f64>) {
        let n = self.ncoords();
        let (mut q, mut qd, mut qdd) = (DVector::zeros(n), DVector::zeros(n), DVector::zeros(n));
        for (i, (b, o)) in self.bodies.iter().zip(motion).enumerate() {
            let rc = rot(o.theta, b.centroid);
            let (r, v) = (o.r + rc, o.v + o.omega * perp(rc));
            let a = o.a + o.alpha * perp(rc) - o.omega * o.omega * rc;
            for (k, x) in [(0, r.x), (1, r.y), (2, o.theta)] {
                q[3 * i + k] = x;
            }
            for (k, x) in [(0, v.x), (1, v.y), (2, o.omega)] {
                qd[3 * i + k] = x;
            }
            for (k, x) in [(0, a.x), (1, a.y), (2, o.alpha)] {
                qdd[3 * i + k] = x;
            }
        }
        (q, qd, qdd)
    }

    /// Rows (x, y, moment) per body taken about the bodies' local origins: each moment row
    /// plus Rc x its force rows, at the angles of `q`.
    fn rows_about_origins(&self, q: &DVector<f64>, rows: &mut DMatrix<f64>) {
        for (i, b) in self.bodies.iter().enumerate() {
            let rc = rot(q[3 * i + 2], b.centroid);
            let (fx, fy) = (
                rows.row(3 * i).clone_owned(),
                rows.row(3 * i + 1).clone_owned(),
            );
            let mut m = rows.row_mut(3 * i + 2);
            m += fy * rc.x - fx * rc.y;
        }
    }

    /// The known loads of the force elements that are not actuators (gravity apart), as
    /// generalized forces with the moments about the bodies' local origins, with the bodies
    /// moving as `motion`.
    fn known_about_origins(&self, motion: &[OriginMotion]) -> DVector<f64> {
        let (q, qd, _) = self.centroid_state(motion);
        let mut known = DVector::zeros(self.ncoords());
        for f in self.forces.iter().filter(|f| !f.actuator) {
            let mag = f.magnitude(&q, &qd);
            for l in f.pattern(&q) {
                add_generalized(&mut known, &l, mag);
            }
        }
        let mut as_matrix = DMatrix::from_column_slice(known.len(), 1, known.as_slice());
        self.rows_about_origins(&q, &mut as_matrix);
        as_matrix.column(0).into_owned()
    }

    /// d b_O / d phi of each body at `motion`: per body the 3 x 4 block of the right-hand side's
    /// rows (x, y, moment about O) by (m, u_x, u_y, I_O) (module documentation).
    fn regressor(&self, motion: &[OriginMotion]) -> Vec<[[f64; 4]; 3]> {
        let g = self.gravity;
        motion
            .iter()
            .map(|o| {
                let mut y = [[0.0; 4]; 3];
                let lin = o.a - g;
                y[0][0] = lin.x;
                y[1][0] = lin.y;
                for (k, e) in [Vector2::new(1.0, 0.0), Vector2::new(0.0, 1.0)]
                    .iter()
                    .enumerate()
                {
                    let w = rot(o.theta, *e);
                    let f = o.alpha * perp(w) - o.omega * o.omega * w;
                    y[0][1 + k] = f.x;
                    y[1][1 + k] = f.y;
                    y[2][1 + k] = cross(w, lin);
                }
                y[2][3] = o.alpha;
                y
            })
            .collect()
    }

    /// The forces' sensitivities at each sample (centroids' q, q', q'' of this model): a matrix
    /// of the force columns ([`Mechanism::force_columns`]; N or N m) by `parameters` (per unit
    /// of each), None at a toggle (`max_condition`, as the inverse dynamics). This model must
    /// be the one the parameters were read with ([`crate::parameters::file_parameters`]).
    pub fn force_sensitivities(
        &self,
        parameters: &[FileParameter],
        states: &[(&DVector<f64>, &DVector<f64>, &DVector<f64>)],
        max_condition: f64,
    ) -> Result<Vec<Option<DMatrix<f64>>>, MechanismError> {
        let solved = self.inverse_dynamics_batch(states, max_condition)?;
        self.force_sensitivities_solved(parameters, states, &solved)
    }

    /// [`Mechanism::force_sensitivities`] where the inverse dynamics of the same `states` is
    /// already `solved` (its toggles are the sensitivities' None): the forces and their
    /// sensitivities without solving twice.
    pub fn force_sensitivities_solved(
        &self,
        parameters: &[FileParameter],
        states: &[(&DVector<f64>, &DVector<f64>, &DVector<f64>)],
        solved: &[InverseSample],
    ) -> Result<Vec<Option<DMatrix<f64>>>, MechanismError> {
        if let Some(p) = parameters
            .iter()
            .find(|p| p.d_phi.len() != self.bodies.len())
        {
            return Err(MechanismError::Model(format!(
                "the parameter {} was read from a file of {} bodies, this model has {}",
                p.key,
                p.d_phi.len(),
                self.bodies.len()
            )));
        }
        let phi = body_phi(self);
        let mut out = Vec::with_capacity(states.len());
        for ((q, qd, qdd), s) in states.iter().zip(solved) {
            if matches!(s, InverseSample::Toggle { .. }) {
                out.push(None);
                continue;
            }
            let motion = self.origin_motion(q, qd, qdd);
            let mut a = self.newton_euler_matrix(q);
            self.rows_about_origins(q, &mut a);
            let Some(lu) = Some(a.lu()).filter(|lu| lu.is_invertible()) else {
                out.push(None);
                continue;
            };
            let y = self.regressor(&motion);
            let mut rhs = DMatrix::zeros(self.ncoords(), parameters.len());
            for (c, p) in parameters.iter().enumerate() {
                let (plus, minus) = &*p.sides;
                let laws = (plus.known_about_origins(&motion) - minus.known_about_origins(&motion))
                    / p.span;
                for (i, o) in motion.iter().enumerate() {
                    let u = rot(o.theta, Vector2::new(phi[i][1], phi[i][2]));
                    let dg = p.d_gravity;
                    let gravity = [-phi[i][0] * dg.x, -phi[i][0] * dg.y, -cross(u, dg)];
                    for r in 0..3 {
                        let inertial: f64 = (0..4).map(|k| y[i][r][k] * p.d_phi[i][k]).sum();
                        rhs[(3 * i + r, c)] = inertial + gravity[r] - laws[3 * i + r];
                    }
                }
            }
            out.push(lu.solve(&rhs));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parameters::{built, file_parameters, leaves, NotAParameter};
    use crate::simulate::SimConfig;

    const BENCH: &str = include_str!("../../../mechanisms/wind-pump.toml");

    /// The forces of `m` with its bodies moving as `motion`: the inverse dynamics itself.
    fn forces(m: &Mechanism, motion: &[OriginMotion]) -> DVector<f64> {
        let (q, qd, qdd) = m.centroid_state(motion);
        match m.inverse_dynamics(&q, &qd, &qdd, 1e12).unwrap() {
            InverseSample::Solved { forces, .. } => DVector::from_vec(forces),
            InverseSample::Toggle { .. } => panic!("toggle"),
        }
    }

    /// Every parameter of the bench's file against the central difference of the full inverse
    /// dynamics over a relative step of 1e-6 (each side's model rebuilt from the file, the
    /// centroids' motion rederived from the same bodies' poses), at 40 samples of a simulated
    /// crank turn: within 1e-6 of the column's largest sensitivity. The numbers that are no
    /// parameters are named: the lengths as geometry, the elastic section as without effect,
    /// the pump's and the motor's laws as those of forces solved for.
    #[test]
    fn the_sensitivities_are_the_inverse_dynamics_derivatives() {
        let read = file_parameters(BENCH, "wind-pump.toml").unwrap();
        let keys: Vec<&str> = read.parameters.iter().map(|p| p.key.as_str()).collect();
        eprintln!("parameters {keys:?}\nothers {:?}", read.others);
        for k in [
            "m1", "J1", "c1", "a2", "rho", "area", "m3", "g3[0]", "J3", "mw", "w3[0]", "mD",
        ] {
            assert!(keys.contains(&k), "{k} not a parameter: {keys:?}");
        }
        let other = |k: &str| {
            read.others
                .iter()
                .find(|(o, _)| o == k)
                .map(|(_, w)| w.clone())
        };
        assert_eq!(other("l2"), Some(NotAParameter::Geometry));
        assert_eq!(other("e"), Some(NotAParameter::Geometry));
        assert_eq!(other("E"), Some(NotAParameter::NoEffect));
        for k in ["k", "xD0", "cD", "Fr", "vr"] {
            assert_eq!(
                other(k),
                Some(NotAParameter::SolvedFor("pump_force".into())),
                "{k}"
            );
        }
        for k in ["Km", "omega_ref_rpm"] {
            assert_eq!(
                other(k),
                Some(NotAParameter::SolvedFor("motor_torque".into())),
                "{k}"
            );
        }
        let m = &read.nominal;
        let cfg = SimConfig {
            duration: 0.43,
            rate: 93.0,
            settle: 1.0,
            ..Default::default()
        };
        let sim = m.simulate(&cfg, &mut |_| {}).unwrap();
        let states: Vec<_> = sim.samples.iter().map(|s| (&s.q, &s.qd, &s.qdd)).collect();
        let worst = worst_against_differences(BENCH, &read, &states);
        eprintln!("worst {worst:?}");
        assert!(worst.0 < 1e-7, "{worst:?}");
    }

    /// The largest difference, over the parameters of `text` (read as `read`) and the
    /// `states`, between the sensitivities and the central difference of the full inverse
    /// dynamics over a relative step of 1e-6 (each side's model rebuilt from the file, the
    /// centroids' motion rederived from the same bodies' poses), as a share of the parameter's
    /// largest; and that parameter's key.
    fn worst_against_differences(
        text: &str,
        read: &crate::parameters::FileParameters,
        states: &[(&DVector<f64>, &DVector<f64>, &DVector<f64>)],
    ) -> (f64, String) {
        let m = &read.nominal;
        let sens = m
            .force_sensitivities(&read.parameters, states, 1e12)
            .unwrap();
        let root: toml::Value = toml::from_str(text).unwrap();
        let mut found = Vec::new();
        leaves(&root, &mut Vec::new(), "", &mut found);
        let mut worst = (0.0f64, String::new());
        for (c, p) in read.parameters.iter().enumerate() {
            let leaf = found.iter().find(|l| l.key == p.key).unwrap();
            let h = 1e-6 * p.value.abs().max(1.0);
            let up = built(&root, &leaf.path, p.value + h, "+").unwrap();
            let down = built(&root, &leaf.path, p.value - h, "-").unwrap();
            let (mut scale, mut off) = (0.0f64, 0.0f64);
            for ((q, qd, qdd), exact) in states.iter().zip(&sens) {
                let motion = m.origin_motion(q, qd, qdd);
                let fd = (forces(&up, &motion) - forces(&down, &motion)) / (2.0 * h);
                let exact = exact.as_ref().unwrap().column(c).into_owned();
                scale = scale.max(fd.amax());
                off = off.max((exact - &fd).amax());
            }
            if off / scale > worst.0 {
                worst = (off / scale, p.key.clone());
            }
        }
        worst
    }

    const PENDULUM: &str = include_str!("../../../recordings/dfki-pendulum/pendulum-friction.toml");

    /// The real pendulum's file with the lab's axle friction (a law the inverse dynamics does
    /// not solve for), swinging 1.2 rad about hanging at 3 rad/s: its mass, inertia, centroid,
    /// gravity and the friction's three numbers are parameters, within 1e-7 of the full
    /// inverse dynamics' differences; the motor torque moves by alpha per unit of the inertia
    /// about the centroid, and by the joint's speed per unit of the viscous friction.
    #[test]
    fn the_pendulums_friction_and_inertia_move_its_torque() {
        let read = file_parameters(PENDULUM, "pendulum-friction.toml").unwrap();
        let keys: Vec<&str> = read.parameters.iter().map(|p| p.key.as_str()).collect();
        let want = [
            "bodies.pendulum.mass",
            "bodies.pendulum.inertia",
            "bodies.pendulum.centroid[0]",
            "bodies.pendulum.centroid[1]",
            "gravity[0]",
            "gravity[1]",
            "joints.axle.friction.viscous",
            "joints.axle.friction.coulomb",
            "joints.axle.friction.sharpness",
        ];
        assert_eq!(keys.len(), want.len(), "{keys:?} {:?}", read.others);
        assert!(want.iter().all(|k| keys.contains(k)), "{keys:?}");
        let m = &read.nominal;
        let motion: Vec<Vec<OriginMotion>> = (0..40)
            .map(|i| {
                let t = 0.037 * i as f64;
                let (s, c) = (3.0 * t).sin_cos();
                vec![OriginMotion {
                    r: Vector2::zeros(),
                    v: Vector2::zeros(),
                    a: Vector2::zeros(),
                    theta: -std::f64::consts::FRAC_PI_2 + 1.2 * s,
                    omega: 3.6 * c,
                    alpha: -10.8 * s,
                }]
            })
            .collect();
        let owned: Vec<_> = motion.iter().map(|o| m.centroid_state(o)).collect();
        let states: Vec<_> = owned.iter().map(|(q, qd, qdd)| (q, qd, qdd)).collect();
        let worst = worst_against_differences(PENDULUM, &read, &states);
        eprintln!("worst {worst:?}");
        assert!(worst.0 < 1e-7, "{worst:?}");
        let sens = m
            .force_sensitivities(&read.parameters, &states, 1e12)
            .unwrap();
        let col = |k: &str| keys.iter().position(|p| *p == k).unwrap();
        let tau = m
            .force_columns()
            .iter()
            .position(|c| c == "motor_torque")
            .unwrap();
        for (s, o) in sens.iter().zip(&motion) {
            let s = s.as_ref().unwrap();
            let (ds_dj, ds_dv) = (
                s[(tau, col("bodies.pendulum.inertia"))],
                s[(tau, col("joints.axle.friction.viscous"))],
            );
            assert!((ds_dj - o[0].alpha).abs() < 1e-9, "{ds_dj} {}", o[0].alpha);
            assert!((ds_dv - o[0].omega).abs() < 1e-9, "{ds_dv} {}", o[0].omega);
        }
    }
}
