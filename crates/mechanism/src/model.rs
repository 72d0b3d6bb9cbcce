//! The validated multibody model: rigid bodies with named points, joints, force elements,
//! markers and the initial state.

use std::collections::BTreeMap;

use nalgebra::Vector2;

use crate::MechanismError;

/// A body reference: the ground (bench frame) or a moving body by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyRef {
    /// The fixed bench frame.
    Ground,
    /// Moving body number i (index into [`Mechanism::bodies`]).
    Body(usize),
}

/// A rigid body: mass properties and named points.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// Name (crank, lever, rocker, slide on the bench).
    pub name: String,
    /// Mass, kg.
    pub mass: f64,
    /// Moment of inertia about the centroid, kg m^2.
    pub inertia: f64,
    /// Centroid in the body's local frame, m.
    pub centroid: Vector2<f64>,
    /// Named points in the local frame, m (local origin included as given by the file).
    pub points: BTreeMap<String, Vector2<f64>>,
    /// The body's elastic discretization when the file declares it elastic (simulated by the
    /// coupled elastic simulation); None for a rigid body.
    pub elastic: Option<crate::elastic::ElasticBody>,
}

impl Body {
    /// A named point relative to the centroid (local axes), m.
    pub fn point_rel(&self, name: &str) -> Option<Vector2<f64>> {
        self.points.get(name).map(|p| p - self.centroid)
    }
}

/// A point of a body (or of the ground), with its position relative to the body's centroid in
/// local axes (for the ground: bench-frame position).
#[derive(Debug, Clone, PartialEq)]
pub struct PointRef {
    /// The body that carries the point.
    pub body: BodyRef,
    /// The point's name, for messages.
    pub name: String,
    /// Local position relative to the centroid (ground: absolute), m.
    pub local: Vector2<f64>,
}

/// A joint between two bodies.
#[derive(Debug, Clone, PartialEq)]
pub enum JointKind {
    /// Revolute pin: point `a` of one body coincides with point `b` of the other. The reported
    /// force is that of body `a` on body `b` (bench frame, N).
    Revolute {
        /// Point on the first body (the one that exerts the reported force).
        a: PointRef,
        /// Point on the second body (the one the reported force acts on).
        b: PointRef,
    },
    /// Prismatic slide of a body along a ground line, its rotation locked. Reported: the normal
    /// force of the ground on the body (N, along the line's left normal) and the reaction couple
    /// (N m).
    Slide {
        /// The sliding body.
        body: usize,
        /// The body point that stays on the line (relative to the centroid, local axes).
        point: Vector2<f64>,
        /// A point of the line, bench frame, m.
        origin: Vector2<f64>,
        /// Direction of the line, rad from +X.
        angle: f64,
        /// The body's locked angle, rad.
        body_angle: f64,
    },
}

/// A named joint.
#[derive(Debug, Clone, PartialEq)]
pub struct Joint {
    /// Name (A, B, C, D, slide on the bench): prefix of its columns in the forces table.
    pub name: String,
    /// What it constrains.
    pub kind: JointKind,
}

impl Joint {
    /// Number of scalar constraints (and of unknown reactions).
    pub fn dof_removed(&self) -> usize {
        2
    }
}

/// A force element acting on the bodies.
#[derive(Debug, Clone, PartialEq)]
pub enum ForceKind {
    /// Motor torque on `body` about its centroid, N m, reaction on `reaction`:
    /// M = km (omega_ref - (omega_body - omega_reaction)).
    Motor {
        /// Driven body.
        body: usize,
        /// Body taking the reaction torque (the ground on the bench).
        reaction: BodyRef,
        /// Torque constant, N m s.
        km: f64,
        /// Reference speed, rad/s.
        omega_ref: f64,
    },
    /// Force along a ground direction u on a body point (the bench's pump on the slide):
    /// P = -k (s - s0) - c s' - fr tanh(s'/vr), s = u . r_P (m), P in N along u.
    Pump {
        /// Loaded body.
        body: usize,
        /// Point of application relative to the centroid, local axes, m.
        point: Vector2<f64>,
        /// Direction u of the force, rad from +X.
        angle: f64,
        /// Spring stiffness, N/m.
        k: f64,
        /// Spring's free position s0 = u . r_P, m.
        s0: f64,
        /// Viscous damping, N s/m.
        c: f64,
        /// Friction force, N.
        fr: f64,
        /// Friction's regularising speed, m/s.
        vr: f64,
    },
    /// Point-to-point spring-damper between `a` and `b`: tension T = k (L - rest) + c L', N,
    /// pulling the points together when positive.
    Spring {
        /// First end.
        a: PointRef,
        /// Second end.
        b: PointRef,
        /// Stiffness, N/m.
        k: f64,
        /// Damping, N s/m.
        c: f64,
        /// Rest length, m.
        rest: f64,
    },
    /// A revolute joint's friction: a couple on the second body's side (minus it on the
    /// first's) of -law(w), w the second's angular velocity less the first's (rad/s), N m.
    JointFriction {
        /// The joint's first side (the ground or a body).
        first: BodyRef,
        /// The joint's second side.
        second: BodyRef,
        /// The law.
        law: crate::friction::Friction,
    },
    /// A slide's friction: a force along the line on the sliding body's point of -law(s'),
    /// s' the point's speed along the line (m/s), N.
    SlideFriction {
        /// The sliding body.
        body: usize,
        /// The sliding point relative to the centroid, local axes, m.
        point: Vector2<f64>,
        /// The line's direction, rad from +X.
        angle: f64,
        /// The law.
        law: crate::friction::Friction,
    },
    /// A revolute joint's actuator (a motor between two bodies, or a body and the ground): a
    /// couple of the first side on the second (minus it on the first), N m; in the simulation
    /// law.at(w), w the second's angular velocity less the first's (rad/s).
    JointTorque {
        /// The joint's first side (the ground or a body).
        first: BodyRef,
        /// The joint's second side.
        second: BodyRef,
        /// The simulation's law.
        law: crate::actuator::ActuatorLaw,
    },
    /// A slide's actuator (a jack): a force along the line on the sliding body's point, N; in
    /// the simulation law.at(s'), s' the point's speed along the line (m/s).
    SlideForce {
        /// The sliding body.
        body: usize,
        /// The sliding point relative to the centroid, local axes, m.
        point: Vector2<f64>,
        /// The line's direction, rad from +X.
        angle: f64,
        /// The simulation's law.
        law: crate::actuator::ActuatorLaw,
    },
    /// Constant torque on a body, N m (reaction on `reaction`).
    Torque {
        /// Body the torque acts on.
        body: usize,
        /// Body taking the reaction.
        reaction: BodyRef,
        /// Torque, N m (counter-clockwise positive).
        torque: f64,
    },
}

impl ForceElement {
    /// One line on the element as `flexbench check` states it: its kind, whether the inverse
    /// dynamics solves for it, and its law in the simulation (SI units).
    pub fn describe(&self) -> String {
        let role = if self.actuator {
            "actuator: solved for by the inverse dynamics; in the simulation"
        } else {
            "law"
        };
        let what = match &self.kind {
            ForceKind::Motor { km, omega_ref, .. } => format!(
                "motor (N m), {role} {km} ({:.4} rpm - relative rpm) x pi/30",
                omega_ref * 30.0 / std::f64::consts::PI
            ),
            ForceKind::Pump { k, s0, c, fr, vr, .. } => format!(
                "pump (N along its line), {role} -{k} (s - {s0}) - {c} s' - {fr} tanh(s'/{vr})"
            ),
            ForceKind::Spring { k, c, rest, .. } => format!(
                "spring-damper (N, tension between its points), {role} {k} (L - {rest}) + {c} L'"
            ),
            ForceKind::Torque { torque, .. } => format!("torque (N m), {role} {torque}"),
            ForceKind::JointFriction { law, .. } | ForceKind::SlideFriction { law, .. } => format!(
                "friction (N m or N against the joint's motion w): viscous {}, Coulomb {} x {}({} w)",
                law.viscous,
                law.coulomb,
                law.law.name(),
                law.sharpness
            ),
            ForceKind::JointTorque { law, .. } => format!(
                "joint actuator (N m, the first side on the second), {role} {} + {} ({:.6} - w), w in rad/s",
                law.constant, law.km, law.reference
            ),
            ForceKind::SlideForce { law, .. } => format!(
                "slide actuator (N along its line), {role} {} + {} ({:.6} - v), v in m/s",
                law.constant, law.km, law.reference
            ),
        };
        format!("{}: {what}", self.name)
    }
}

/// A named force element; `actuator` ones are unknowns of the inverse dynamics.
#[derive(Debug, Clone, PartialEq)]
pub struct ForceElement {
    /// Name (motor_torque, pump_force on the bench): its column in the forces table.
    pub name: String,
    /// The law.
    pub kind: ForceKind,
    /// True when the inverse dynamics solves for its magnitude instead of using the law.
    pub actuator: bool,
}

/// A marker glued on a body.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// Name (M1..M5 on the bench).
    pub name: String,
    /// Body index.
    pub body: usize,
    /// Position relative to the body's centroid, local axes, m.
    pub local: Vector2<f64>,
    /// Position in the body's local frame (as the file gives it), m.
    pub local_frame: Vector2<f64>,
    /// How the marker looks to the camera (what the tracker seeks).
    pub kind: flexbench_contracts::MarkerKind,
    /// Its distance in front of the bench plane (the board's or the clicked points'), towards
    /// the camera, m: a marker on a lever's face stands off the plane the calibration saw.
    pub depth: f64,
}

/// An independent (driving) coordinate: the crank angle, the slide's x.
#[derive(Debug, Clone, PartialEq)]
pub enum Coordinate {
    /// The body's angle, rad.
    Angle {
        /// Body index.
        body: usize,
    },
    /// The bench-frame x of a body point, m.
    PointX {
        /// Body index.
        body: usize,
        /// The point relative to the centroid, local axes, m.
        point: Vector2<f64>,
    },
    /// The bench-frame y of a body point, m.
    PointY {
        /// Body index.
        body: usize,
        /// The point relative to the centroid, local axes, m.
        point: Vector2<f64>,
    },
}

/// A driving coordinate with its initial value and rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Driver {
    /// Name for messages ("crank angle").
    pub name: String,
    /// What it measures.
    pub coordinate: Coordinate,
    /// Initial value (rad or m).
    pub value: f64,
    /// Initial rate (rad/s or m/s).
    pub rate: f64,
    /// True when the coordinate is prescribed, value + rate t for all t (a rheonomic constraint
    /// of the coupled simulation, the test set's crank at 150 rad/s); false when it is only the
    /// initial state and the forces drive the motion.
    pub prescribed: bool,
}

/// A motor-driven crank ([`Mechanism::crank`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crank {
    /// The crank's body index.
    pub body: usize,
    /// The motor's index in [`Mechanism::forces`].
    pub motor: usize,
    /// The motor's reference speed, rad/s.
    pub omega_ref: f64,
}

/// A complete planar mechanism.
#[derive(Debug, Clone, PartialEq)]
pub struct Mechanism {
    /// A name for reports.
    pub name: String,
    /// Moving bodies.
    pub bodies: Vec<Body>,
    /// Joints.
    pub joints: Vec<Joint>,
    /// Force elements.
    pub forces: Vec<ForceElement>,
    /// Gravity, bench frame, m/s^2 ((0, -9.81) on the bench; zero for a linkage lying flat).
    pub gravity: Vector2<f64>,
    /// Markers.
    pub markers: Vec<Marker>,
    /// Independent coordinates, as many as degrees of freedom; the first is turned a full turn
    /// to check that the geometry assembles.
    pub drivers: Vec<Driver>,
    /// Initial guess of each body's pose (centroid x, y, angle) selecting the assembly branch.
    pub guess: Vec<[f64; 3]>,
    /// The file's `[tolerances]`: its uncertain numbers with their standard deviations, which
    /// the forces' bands carry (empty when the file gives none).
    pub tolerances: Vec<Tolerance>,
}

impl Mechanism {
    /// Number of absolute coordinates (3 per body).
    pub fn ncoords(&self) -> usize {
        3 * self.bodies.len()
    }
    /// Number of scalar constraints.
    pub fn nconstraints(&self) -> usize {
        self.joints.iter().map(|j| j.dof_removed()).sum()
    }
    /// Degrees of freedom.
    pub fn dof(&self) -> isize {
        self.ncoords() as isize - self.nconstraints() as isize
    }
    /// Index of the body called `name`.
    pub fn body_index(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }
    /// The mechanism's crank, when it has one: its first driver is the angle of a body pinned
    /// to the ground by a revolute joint and turned by a motor force element (the law
    /// M = km (omega_ref - omega) with km and omega_ref not zero). The wind pump's crank AB is
    /// one; a pendulum, a free wheel or a four-bar without a motor have none. The checks that
    /// belong to a motor-driven crank (its speed against the motor's reference, the harmonics
    /// of its turn, the refit in its angle) run only where there is one.
    pub fn crank(&self) -> Option<Crank> {
        let Coordinate::Angle { body } = self.drivers.first()?.coordinate else {
            return None;
        };
        let pinned = self.joints.iter().any(|j| match &j.kind {
            JointKind::Revolute { a, b } => matches!(
                (a.body, b.body),
                (BodyRef::Ground, BodyRef::Body(i)) | (BodyRef::Body(i), BodyRef::Ground) if i == body
            ),
            JointKind::Slide { .. } => false,
        });
        let motor = self.forces.iter().position(|f| match f.kind {
            ForceKind::Motor {
                body: driven,
                km,
                omega_ref,
                ..
            } => driven == body && km != 0.0 && omega_ref != 0.0,
            _ => false,
        })?;
        let ForceKind::Motor { omega_ref, .. } = self.forces[motor].kind else {
            return None;
        };
        pinned.then_some(Crank {
            body,
            motor,
            omega_ref,
        })
    }

    /// A point's position, relative to the centroid for a body or absolute for the ground.
    pub fn point(&self, body: BodyRef, name: &str) -> Option<Vector2<f64>> {
        match body {
            BodyRef::Ground => None,
            BodyRef::Body(i) => self.bodies[i].point_rel(name),
        }
    }

    /// Check the model's own consistency: counts, positive masses, drivers as many as degrees
    /// of freedom, an inverse dynamics that is square.
    pub fn validate(&self) -> Result<(), MechanismError> {
        let model = |s: String| Err(MechanismError::Model(s));
        if self.bodies.is_empty() {
            return model("the mechanism has no moving body".into());
        }
        for b in &self.bodies {
            if !(b.mass > 0.0 && b.mass.is_finite()) {
                return Err(MechanismError::Key {
                    key: format!("{}.mass", b.name),
                    reason: format!("{} kg is not a positive mass", b.mass),
                });
            }
            if !(b.inertia >= 0.0 && b.inertia.is_finite()) {
                return Err(MechanismError::Key {
                    key: format!("{}.inertia", b.name),
                    reason: format!("{} kg m^2 is not a non-negative inertia", b.inertia),
                });
            }
        }
        let dof = self.dof();
        if dof < 1 {
            return model(format!(
                "{} bodies give {} coordinates but the joints remove {}: the linkage is a structure, not a mechanism",
                self.bodies.len(),
                self.ncoords(),
                self.nconstraints()
            ));
        }
        if self.drivers.len() as isize != dof {
            return model(format!(
                "the mechanism has {dof} degrees of freedom but {} driving coordinates are given; give one per degree of freedom in [[drivers]]",
                self.drivers.len()
            ));
        }
        let actuators: Vec<&str> = self
            .forces
            .iter()
            .filter(|f| f.actuator)
            .map(|f| f.name.as_str())
            .collect();
        if actuators.len() as isize != dof {
            let fix = if (actuators.len() as isize) < dof {
                "mark another force element actuator = true or give a joint an actuator = { ... }"
            } else {
                "take `actuator` off one of them (a law the simulation keeps: a [[forces]] entry's actuator = false, or the joint's actuator table removed)"
            };
            return model(format!(
                "the inverse dynamics needs as many actuators (unknown efforts) as degrees of freedom: {dof} degree(s) of freedom, {} actuator(s) ({}); {fix}",
                actuators.len(),
                if actuators.is_empty() { "none".to_string() } else { actuators.join(", ") }
            ));
        }
        if self.guess.len() != self.bodies.len() {
            return model("every body needs an initial pose".into());
        }
        Ok(())
    }
}

/// A number of the mechanism file the forces of the inverse dynamics depend on.
#[derive(Debug, Clone, PartialEq)]
pub struct FileParameter {
    /// Its key in the file: `m3`, `g3[0]`, `bodies.pendulum.mass`,
    /// `joints.axle.friction.viscous` (an array's tables by their `name`).
    pub key: String,
    /// Its value in the file (its own unit: kg, m, kg m^2, N/m, ...).
    pub value: f64,
    /// d phi / d value for each body, (kg, kg m, kg m, kg m^2) per unit of the value.
    pub d_phi: Vec<[f64; 4]>,
    /// d gravity / d value, m/s^2 per unit of the value, bench frame.
    pub d_gravity: Vector2<f64>,
    /// The model with the value raised and lowered by `step` (or the nominal one where a side
    /// is refused), and the difference of the two values: the force laws' derivative is taken
    /// between them.
    pub(crate) sides: Box<(Mechanism, Mechanism)>,
    /// The two sides' difference of value.
    pub(crate) span: f64,
}

impl FileParameter {
    /// The model with the value raised, the one with it lowered, and the two values'
    /// difference (the value's own unit).
    pub fn sides(&self) -> (&Mechanism, &Mechanism, f64) {
        (&self.sides.0, &self.sides.1, self.span)
    }
}

/// One number of the file with its standard uncertainty.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerance {
    /// The number's key in the file.
    pub key: String,
    /// Its standard uncertainty, the number's own unit (kg, m, kg m^2, N/m, ...).
    pub sigma: f64,
    /// The number, with its derivatives ([`crate::sensitivity`]).
    pub parameter: FileParameter,
    /// The force whose law holds the number, when the inverse dynamics solves for that force
    /// (then the forces do not move with it; the simulation does).
    pub solved_for: Option<String>,
}
