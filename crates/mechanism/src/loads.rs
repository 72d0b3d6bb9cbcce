//! Applied loads: gravity and the force elements (motor, pump, spring-damper, constant torque,
//! joint friction).
//!
//! Every force element is a magnitude times a unit load pattern: the motor's torque times a
//! unit torque on its body (minus one on the reaction body), the pump's force P times the unit
//! direction u at its point, a spring's tension T times the unit vector between its points. The
//! simulation uses magnitude x pattern; the inverse dynamics takes the actuators' patterns as the
//! columns of their unknown magnitudes.

use nalgebra::{DVector, Vector2};

use crate::constraints::{body_point_vel, point_pos, slide_axes};
use crate::model::{BodyRef, ForceElement, ForceKind, Mechanism, PointRef};
use crate::{cross, rot};

/// A force and a couple on one body: force F (N, bench frame) applied at `arm` from the
/// centroid (m, bench frame), plus a couple (N m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Body index.
    pub body: usize,
    /// Force, N, bench frame.
    pub force: Vector2<f64>,
    /// Point of application relative to the centroid, m, bench frame.
    pub arm: Vector2<f64>,
    /// Couple, N m.
    pub couple: f64,
}

impl Load {
    /// Its generalized force on (x, y, phi) of its body.
    pub fn generalized(&self) -> [f64; 3] {
        [
            self.force.x,
            self.force.y,
            cross(self.arm, self.force) + self.couple,
        ]
    }
    /// Its power at the velocities qd (W).
    pub fn power(&self, qd: &DVector<f64>) -> f64 {
        let i = self.body;
        let g = self.generalized();
        g[0] * qd[3 * i] + g[1] * qd[3 * i + 1] + g[2] * qd[3 * i + 2]
    }
}

fn couple_loads(body: usize, reaction: BodyRef) -> Vec<Load> {
    let mut v = vec![Load {
        body,
        force: Vector2::zeros(),
        arm: Vector2::zeros(),
        couple: 1.0,
    }];
    if let BodyRef::Body(r) = reaction {
        v.push(Load {
            body: r,
            force: Vector2::zeros(),
            arm: Vector2::zeros(),
            couple: -1.0,
        });
    }
    v
}

fn arm_of(q: &DVector<f64>, p: &PointRef) -> Option<(usize, Vector2<f64>)> {
    match p.body {
        BodyRef::Ground => None,
        BodyRef::Body(i) => Some((i, rot(q[3 * i + 2], p.local))),
    }
}

fn point_vel(q: &DVector<f64>, qd: &DVector<f64>, p: &PointRef) -> Vector2<f64> {
    match p.body {
        BodyRef::Ground => Vector2::zeros(),
        BodyRef::Body(i) => body_point_vel(q, qd, i, p.local),
    }
}

/// A revolute joint's relative rate: the second side's angular velocity less the first's, rad/s.
fn relative_rate(qd: &DVector<f64>, first: BodyRef, second: BodyRef) -> f64 {
    let w = |b: BodyRef| match b {
        BodyRef::Ground => 0.0,
        BodyRef::Body(i) => qd[3 * i + 2],
    };
    w(second) - w(first)
}

/// A slide's speed: the sliding point's velocity along the line at `angle` (rad), m/s.
fn sliding_speed(
    q: &DVector<f64>,
    qd: &DVector<f64>,
    body: usize,
    point: Vector2<f64>,
    angle: f64,
) -> f64 {
    slide_axes(angle).0.dot(&body_point_vel(q, qd, body, point))
}

impl ForceElement {
    /// The unit load pattern at q (loads for a magnitude of 1 N or 1 N m).
    pub fn pattern(&self, q: &DVector<f64>) -> Vec<Load> {
        match &self.kind {
            ForceKind::Motor { body, reaction, .. } | ForceKind::Torque { body, reaction, .. } => {
                couple_loads(*body, *reaction)
            }
            ForceKind::JointFriction { first, second, .. }
            | ForceKind::JointTorque { first, second, .. } => {
                let mut v = Vec::new();
                for (side, sign) in [(second, 1.0), (first, -1.0)] {
                    if let BodyRef::Body(i) = side {
                        v.push(Load {
                            body: *i,
                            force: Vector2::zeros(),
                            arm: Vector2::zeros(),
                            couple: sign,
                        });
                    }
                }
                v
            }
            ForceKind::Pump {
                body, point, angle, ..
            }
            | ForceKind::SlideFriction {
                body, point, angle, ..
            }
            | ForceKind::SlideForce {
                body, point, angle, ..
            } => {
                let (u, _) = slide_axes(*angle);
                vec![Load {
                    body: *body,
                    force: u,
                    arm: rot(q[3 * body + 2], *point),
                    couple: 0.0,
                }]
            }
            ForceKind::Spring { a, b, .. } => {
                let d = point_pos(q, b) - point_pos(q, a);
                let l = d.norm();
                let u = if l > 0.0 { d / l } else { Vector2::zeros() };
                // Positive tension pulls a towards b and b towards a.
                let mut v = Vec::new();
                if let Some((i, arm)) = arm_of(q, a) {
                    v.push(Load {
                        body: i,
                        force: u,
                        arm,
                        couple: 0.0,
                    });
                }
                if let Some((i, arm)) = arm_of(q, b) {
                    v.push(Load {
                        body: i,
                        force: -u,
                        arm,
                        couple: 0.0,
                    });
                }
                v
            }
        }
    }

    /// The magnitude given by the element's law at (q, q'): motor torque (N m), pump force
    /// along u (N), spring tension (N), constant torque (N m), a joint's friction couple or
    /// actuator torque on its second side (N m) or a slide's friction or actuator force along
    /// its line (N).
    pub fn magnitude(&self, q: &DVector<f64>, qd: &DVector<f64>) -> f64 {
        match &self.kind {
            ForceKind::Motor {
                body,
                reaction,
                km,
                omega_ref,
            } => {
                let w_r = match reaction {
                    BodyRef::Ground => 0.0,
                    BodyRef::Body(r) => qd[3 * r + 2],
                };
                km * (omega_ref - (qd[3 * body + 2] - w_r))
            }
            ForceKind::Torque { torque, .. } => *torque,
            ForceKind::JointFriction { first, second, law } => {
                -law.resisting(relative_rate(qd, *first, *second))
            }
            ForceKind::SlideFriction {
                body,
                point,
                angle,
                law,
            } => -law.resisting(sliding_speed(q, qd, *body, *point, *angle)),
            ForceKind::JointTorque { first, second, law } => {
                law.at(relative_rate(qd, *first, *second))
            }
            ForceKind::SlideForce {
                body,
                point,
                angle,
                law,
            } => law.at(sliding_speed(q, qd, *body, *point, *angle)),
            ForceKind::Pump {
                body,
                point,
                angle,
                k,
                s0,
                c,
                fr,
                vr,
            } => {
                let (u, _) = slide_axes(*angle);
                let p = crate::constraints::body_point(q, *body, *point);
                let v = body_point_vel(q, qd, *body, *point);
                let s = u.dot(&p);
                let sd = u.dot(&v);
                -k * (s - s0) - c * sd - fr * (sd / vr).tanh()
            }
            ForceKind::Spring { a, b, k, c, rest } => {
                let d = point_pos(q, b) - point_pos(q, a);
                let l = d.norm();
                let ld = if l > 0.0 {
                    d.dot(&(point_vel(q, qd, b) - point_vel(q, qd, a))) / l
                } else {
                    0.0
                };
                k * (l - rest) + c * ld
            }
        }
    }
}

impl Mechanism {
    /// Gravity's load on every body (at the centroid).
    pub fn gravity_loads(&self) -> Vec<Load> {
        self.bodies
            .iter()
            .enumerate()
            .map(|(i, b)| Load {
                body: i,
                force: self.gravity * b.mass,
                arm: Vector2::zeros(),
                couple: 0.0,
            })
            .collect()
    }

    /// Generalized applied forces Q(q, q') of gravity and every force element by its law.
    pub fn applied(&self, q: &DVector<f64>, qd: &DVector<f64>) -> DVector<f64> {
        let mut out = DVector::zeros(self.ncoords());
        for l in self.gravity_loads() {
            add_generalized(&mut out, &l, 1.0);
        }
        for f in &self.forces {
            let mag = f.magnitude(q, qd);
            for l in f.pattern(q) {
                add_generalized(&mut out, &l, mag);
            }
        }
        out
    }

    /// Power of each force element by its law (W), in the order of `forces`.
    pub fn element_powers(&self, q: &DVector<f64>, qd: &DVector<f64>) -> Vec<f64> {
        self.forces
            .iter()
            .map(|f| {
                let mag = f.magnitude(q, qd);
                f.pattern(q).iter().map(|l| mag * l.power(qd)).sum()
            })
            .collect()
    }

    /// Gravity's potential energy, J (zero at the bench origin's height).
    pub fn gravity_potential(&self, q: &DVector<f64>) -> f64 {
        self.bodies
            .iter()
            .enumerate()
            .map(|(i, b)| -b.mass * self.gravity.dot(&Vector2::new(q[3 * i], q[3 * i + 1])))
            .sum()
    }

    /// Kinetic energy, J.
    pub fn kinetic_energy(&self, qd: &DVector<f64>) -> f64 {
        self.bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                0.5 * b.mass * (qd[3 * i].powi(2) + qd[3 * i + 1].powi(2))
                    + 0.5 * b.inertia * qd[3 * i + 2].powi(2)
            })
            .sum()
    }

    /// The diagonal of the mass matrix (m, m, J per body).
    pub fn mass_diagonal(&self) -> DVector<f64> {
        DVector::from_iterator(
            self.ncoords(),
            self.bodies.iter().flat_map(|b| [b.mass, b.mass, b.inertia]),
        )
    }
}

/// Add `scale` times a load's generalized force into Q.
pub fn add_generalized(out: &mut DVector<f64>, l: &Load, scale: f64) {
    let g = l.generalized();
    for k in 0..3 {
        out[3 * l.body + k] += scale * g[k];
    }
}
