//! The general form of the mechanism file: any planar linkage by its bodies, joints (with
//! their friction and actuators), force elements, markers and driving coordinates (the format
//! is shown in [`crate::file`]'s documentation).

use std::collections::BTreeMap;

use nalgebra::Vector2;
use serde::Deserialize;

use crate::actuator::ActuatedJoint;
use crate::keys::{key_err, need, non_negative, positive, vec2};
use crate::model::{
    Body, BodyRef, Coordinate, Driver, ForceElement, ForceKind, Joint, JointKind, Marker,
    Mechanism, PointRef,
};
use crate::{rot, MechanismError};

mod build;
use build::*;

/// The general form of the mechanism file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneralFile {
    /// A name for reports.
    pub name: Option<String>,
    /// The numbers' standard uncertainties, read by [`crate::tolerances`].
    #[serde(default)]
    pub tolerances: Option<toml::Table>,
    /// Gravity, bench frame, m/s^2.
    pub gravity: Option<[f64; 2]>,
    /// Named ground points, bench frame, m.
    #[serde(default)]
    pub ground: BTreeMap<String, [f64; 2]>,
    /// Moving bodies.
    pub bodies: Vec<BodyEntry>,
    /// Joints.
    #[serde(default)]
    pub joints: Vec<JointEntry>,
    /// Force elements.
    #[serde(default)]
    pub forces: Vec<ForceEntry>,
    /// Markers.
    #[serde(default)]
    pub markers: Vec<MarkerEntry>,
    /// Driving coordinates, one per degree of freedom.
    #[serde(default)]
    pub drivers: Vec<DriverEntry>,
}

/// A `[[bodies]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyEntry {
    /// Body name.
    pub name: String,
    /// Mass, kg.
    pub mass: f64,
    /// Inertia about the centroid, kg m^2.
    pub inertia: f64,
    /// Centroid, local frame, m.
    #[serde(default)]
    pub centroid: [f64; 2],
    /// Named points, local frame, m.
    #[serde(default)]
    pub points: BTreeMap<String, [f64; 2]>,
    /// Initial guess of the local origin's position (m) and the angle (rad).
    pub pose: [f64; 3],
    /// The body's elastic discretization (`[bodies.elastic]`), when it is elastic.
    pub elastic: Option<crate::elastic::ElasticEntry>,
}

/// A `[[joints]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum JointEntry {
    /// Revolute pin between two points "body:point".
    Revolute {
        /// Joint name.
        name: String,
        /// The point of the body exerting the reported force.
        first: String,
        /// The point of the body the reported force acts on.
        second: String,
        /// Friction resisting the relative rotation (N m s, N m, s/rad).
        friction: Option<crate::friction::FrictionEntry>,
        /// A motor at the joint, reported as its torque `<name>_torque` (N m, first on second).
        actuator: Option<crate::actuator::ActuatorEntry>,
    },
    /// A body point sliding along a ground line, its rotation locked.
    Slide {
        /// Joint name.
        name: String,
        /// "body:point".
        point: String,
        /// A point of the line, m.
        origin: [f64; 2],
        /// The line's direction, rad.
        angle: f64,
        /// Friction resisting the sliding (N s/m, N, s/m).
        friction: Option<crate::friction::FrictionEntry>,
        /// A jack along the line, reported as its force `<name>_force` (N, along the line).
        actuator: Option<crate::actuator::ActuatorEntry>,
    },
}

/// A `[[forces]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum ForceEntry {
    /// Motor torque law M = km (omega_ref - omega_rel).
    Motor {
        /// Column name.
        name: String,
        /// Driven body.
        body: String,
        /// Body taking the reaction (default ground).
        reaction: Option<String>,
        /// N m s.
        km: f64,
        /// rpm.
        omega_ref_rpm: f64,
        /// Unknown of the inverse dynamics.
        #[serde(default)]
        actuator: bool,
    },
    /// Pump law along a ground direction on a body point.
    Pump {
        /// Column name.
        name: String,
        /// "body:point".
        point: String,
        /// Direction, rad.
        #[serde(default)]
        angle: f64,
        /// N/m.
        k: f64,
        /// m.
        s0: f64,
        /// N s/m.
        c: f64,
        /// N.
        #[serde(default)]
        fr: f64,
        /// m/s.
        #[serde(default = "default_vr")]
        vr: f64,
        /// Unknown of the inverse dynamics.
        #[serde(default)]
        actuator: bool,
    },
    /// Point-to-point spring-damper.
    Spring {
        /// Column name.
        name: String,
        /// "body:point".
        first: String,
        /// "body:point".
        second: String,
        /// N/m.
        k: f64,
        /// N s/m.
        #[serde(default)]
        c: f64,
        /// Rest length, m.
        rest: f64,
        /// Unknown of the inverse dynamics (a linear actuator between the two points, its
        /// tension reported): the law is then the simulation's only.
        #[serde(default)]
        actuator: bool,
    },
    /// Constant torque.
    Torque {
        /// Column name.
        name: String,
        /// Body.
        body: String,
        /// Reaction body (default ground).
        reaction: Option<String>,
        /// N m.
        torque: f64,
        /// Unknown of the inverse dynamics.
        #[serde(default)]
        actuator: bool,
    },
}

fn default_vr() -> f64 {
    0.01
}

/// How a marker looks, as the file names it (`kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkerLook {
    /// A bright disc on a darker part.
    #[default]
    Bright,
    /// A dark disc on a lighter part.
    Dark,
    /// A coloured sticker (`hue`, `hue_tolerance`).
    #[serde(alias = "color")]
    Colour,
    /// A printed ArUco or AprilTag fiducial (`dictionary`, `id`).
    Fiducial,
    /// A feature clicked once in the video (`track --templates`).
    Template,
}

/// A `[[markers]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkerEntry {
    /// Marker name.
    pub name: String,
    /// Body.
    pub body: String,
    /// Local frame position, m.
    pub at: [f64; 2],
    /// How the marker looks: bright (default), dark or colour.
    #[serde(default)]
    pub kind: MarkerLook,
    /// A coloured marker's hue, degrees (0 red, 120 green, 240 blue).
    pub hue: Option<f64>,
    /// The half-width of the hues a coloured marker's pixels may have, degrees (default 20).
    pub hue_tolerance: Option<f64>,
    /// Its distance in front of the bench plane, towards the camera, m (default 0).
    #[serde(default)]
    pub depth: f64,
    /// A fiducial's dictionary (OpenCV's name: "4x4_50", "apriltag_36h11", ...).
    pub dictionary: Option<String>,
    /// A fiducial's identity in its dictionary.
    pub id: Option<u32>,
}

/// A `[[drivers]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverEntry {
    /// Name for messages.
    pub name: String,
    /// Body.
    pub body: String,
    /// "angle", "x" or "y".
    pub coordinate: String,
    /// For "x"/"y": the body point.
    pub point: Option<String>,
    /// Initial value, rad or m.
    pub value: f64,
    /// Initial rate, rad/s or m/s.
    #[serde(default)]
    pub rate: f64,
    /// The coordinate follows value + rate t (a rheonomic constraint of the coupled simulation).
    #[serde(default)]
    pub prescribed: bool,
}

impl GeneralFile {
    /// Build and validate the model.
    pub fn build(&self) -> Result<Mechanism, MechanismError> {
        let (bodies, guess) = self.bodies()?;
        let names = Names {
            bodies: &bodies,
            ground: &self.ground,
        };
        let mut joints = Vec::new();
        for (i, j) in self.joints.iter().enumerate() {
            let joint = joint(i, j, &names, &|b| guess[b][2])?;
            if joints.iter().any(|o: &Joint| o.name == joint.name) {
                return Err(key_err(
                    &format!("joints[{i}]"),
                    format!("two joints are called '{}'", joint.name),
                ));
            }
            joints.push(joint);
        }
        let mut forces = self
            .forces
            .iter()
            .enumerate()
            .map(|(i, f)| force(i, f, &names))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, (entry, j)) in self.joints.iter().zip(&joints).enumerate() {
            let made = [
                ("friction", joint_friction(i, entry, j)?),
                ("actuator", joint_actuator(i, entry, j)?),
            ];
            for (what, f) in made {
                let Some(f) = f else { continue };
                if forces.iter().any(|o| o.name == f.name) {
                    return Err(key_err(
                        &format!("joints[{i}] ({}).{what}", j.name),
                        format!("a force element is already called '{}'", f.name),
                    ));
                }
                forces.push(f);
            }
        }
        let mut markers = Vec::new();
        for (i, mk) in self.markers.iter().enumerate() {
            let marker = marker(i, mk, &names)?;
            if markers.iter().any(|m: &Marker| m.name == mk.name) {
                return Err(key_err(
                    &format!("markers[{i}] ({})", mk.name),
                    "two markers share this name",
                ));
            }
            markers.push(marker);
        }
        let drivers = self
            .drivers
            .iter()
            .enumerate()
            .map(|(i, d)| driver(i, d, &names))
            .collect::<Result<Vec<_>, _>>()?;
        let gravity = vec2(
            Some(self.gravity.unwrap_or([0.0, -9.81])),
            "gravity",
            "gravity in m/s^2",
        )?;
        let mech = Mechanism {
            name: self.name.clone().unwrap_or_else(|| "mechanism".into()),
            bodies,
            joints,
            forces,
            gravity,
            markers,
            drivers,
            guess,
            tolerances: Vec::new(),
        };
        mech.validate()?;
        Ok(mech)
    }

    /// The bodies, checked, and the assembly guess of each (centroid x, y and angle).
    fn bodies(&self) -> Result<(Vec<Body>, Vec<[f64; 3]>), MechanismError> {
        let mut bodies = Vec::new();
        let mut guess = Vec::new();
        for (i, b) in self.bodies.iter().enumerate() {
            let key = format!("bodies[{i}] ({})", b.name);
            if b.name == "ground" {
                return Err(key_err(&key, "'ground' is reserved for the bench frame"));
            }
            if self.bodies[..i].iter().any(|o| o.name == b.name) {
                return Err(key_err(&key, "two bodies share this name"));
            }
            positive(
                Some(b.mass),
                &format!("{key}.mass"),
                "the body's mass in kg",
            )?;
            non_negative(
                Some(b.inertia),
                &format!("{key}.inertia"),
                "the inertia about the centroid in kg m^2",
            )?;
            let centroid = vec2(Some(b.centroid), &format!("{key}.centroid"), "the centroid")?;
            let mut points = BTreeMap::new();
            for (n, p) in &b.points {
                points.insert(
                    n.clone(),
                    vec2(Some(*p), &format!("{key}.points.{n}"), "a point")?,
                );
            }
            if !b.pose.iter().all(|x| x.is_finite()) {
                return Err(key_err(&format!("{key}.pose"), "not finite"));
            }
            let o = Vector2::new(b.pose[0], b.pose[1]);
            let g = o + rot(b.pose[2], centroid);
            guess.push([g.x, g.y, b.pose[2]]);
            let names: Vec<&String> = points.keys().collect();
            let elastic = match &b.elastic {
                Some(e) => Some(e.build(&format!("{key}.elastic"), &names)?),
                None => None,
            };
            bodies.push(Body {
                name: b.name.clone(),
                mass: b.mass,
                inertia: b.inertia,
                centroid,
                points,
                elastic,
            });
        }
        Ok((bodies, guess))
    }
}
