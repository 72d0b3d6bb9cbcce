//! The mechanism file's parameters of the inverse dynamics: every number of the file whose
//! change moves a body's mass, centroid or inertia, gravity or a force element's law, and no
//! point, joint, marker or driver (a length changes the motion the markers measure, which is
//! another question: the kinematic fit's).
//!
//! Each body's inertial parameters are taken about its local origin, a point of the file's
//! geometry that no inertial parameter moves: phi = (m, m c_x, m c_y, I_O), c the centroid in
//! the body's frame and I_O = J + m |c|^2 its inertia about the origin. The equations of motion
//! are linear in phi ([`crate::sensitivity`]); a file's number reaches phi through the file's
//! own formulas (the bench's rocker and weight combined, the lever's mass rho A l2), which are
//! polynomials of degree two at most in it, so that the central difference of phi over a step
//! of the number is its derivative to rounding.

use nalgebra::Vector2;

use crate::flat::build_text;
use crate::model::{BodyRef, Coordinate, ForceKind, JointKind, Mechanism, PointRef};
use crate::MechanismError;

/// Why a number of the file is no parameter of the inverse dynamics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAParameter {
    /// It moves a point, a joint, a marker or a driver: a length of the geometry.
    Geometry,
    /// Neither the bodies' inertia, gravity nor any force law moves with it (an elastic
    /// section's modulus).
    NoEffect,
    /// It is in the law of a force the inverse dynamics solves for (the bench's pump spring,
    /// damping and friction in `pump_force`, the motor's constant in `motor_torque`): the
    /// forces do not move with it; the solved force against its law identifies it.
    SolvedFor(String),
    /// The file refuses it changed by a small step either way (a value on its limit).
    NotPerturbable,
}

pub use crate::model::FileParameter;

/// The mechanism file's table of its numbers' standard uncertainties ([`crate::tolerances`]):
/// no number of the model.
pub const TOLERANCES_TABLE: &str = "tolerances";

/// The file's numbers split: the parameters of the inverse dynamics, and the others with why.
#[derive(Debug, Clone)]
pub struct FileParameters {
    /// The model the file builds.
    pub nominal: Mechanism,
    /// Its parameters, by key (a table's keys sorted, an array's items in order).
    pub parameters: Vec<FileParameter>,
    /// The numbers of the laws of the forces the inverse dynamics solves for (also in `others`
    /// as [`NotAParameter::SolvedFor`]), with their two sides: what identification holds the
    /// solved forces against.
    pub laws: Vec<FileParameter>,
    /// The other numbers of the file, by key.
    pub others: Vec<(String, NotAParameter)>,
}

/// A body's inertial parameters about its local origin: (m, m c_x, m c_y, J + m |c|^2).
pub fn body_phi(m: &Mechanism) -> Vec<[f64; 4]> {
    m.bodies
        .iter()
        .map(|b| {
            let c = b.centroid;
            [
                b.mass,
                b.mass * c.x,
                b.mass * c.y,
                b.inertia + b.mass * c.norm_squared(),
            ]
        })
        .collect()
}

/// Every length of the model about the bodies' local origins: the bodies' points, the joints'
/// points and lines, the markers, the drivers' coordinates and the force elements' points and
/// lines. Two models with the same geometry give the same list.
fn geometry(m: &Mechanism) -> Vec<f64> {
    let origin = |b: usize, p: Vector2<f64>| p + m.bodies[b].centroid;
    let pref = |p: &PointRef| match p.body {
        BodyRef::Ground => p.local,
        BodyRef::Body(i) => origin(i, p.local),
    };
    let mut out: Vec<f64> = Vec::new();
    for b in &m.bodies {
        out.extend(b.points.values().flat_map(|p| [p.x, p.y]));
    }
    for j in &m.joints {
        match &j.kind {
            JointKind::Revolute { a, b } => {
                out.extend([pref(a), pref(b)].iter().flat_map(|p| [p.x, p.y]))
            }
            JointKind::Slide {
                body,
                point,
                origin: o,
                angle,
                body_angle,
            } => {
                let p = origin(*body, *point);
                out.extend([p.x, p.y, o.x, o.y, *angle, *body_angle]);
            }
        }
    }
    out.extend(
        m.markers
            .iter()
            .flat_map(|k| [k.local_frame.x, k.local_frame.y]),
    );
    for d in &m.drivers {
        if let Coordinate::PointX { body, point } | Coordinate::PointY { body, point } =
            &d.coordinate
        {
            let p = origin(*body, *point);
            out.extend([p.x, p.y]);
        }
    }
    for f in &m.forces {
        match &f.kind {
            ForceKind::Pump {
                body, point, angle, ..
            }
            | ForceKind::SlideFriction {
                body, point, angle, ..
            }
            | ForceKind::SlideForce {
                body, point, angle, ..
            } => {
                let p = origin(*body, *point);
                out.extend([p.x, p.y, *angle]);
            }
            ForceKind::Spring { a, b, .. } => {
                out.extend([pref(a), pref(b)].iter().flat_map(|p| [p.x, p.y]))
            }
            _ => {}
        }
    }
    out
}

/// A numeric leaf of the file: its path (keys and indices) and its display key.
pub(crate) struct Leaf {
    pub(crate) path: Vec<Step>,
    pub(crate) key: String,
    pub(crate) value: f64,
}

/// A step into a TOML value: a table's key or an array's index.
#[derive(Clone)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// The numeric leaves under `v` (integers and floats), depth first, a table's keys sorted;
/// `path` and `key` those of `v`.
pub(crate) fn leaves(v: &toml::Value, path: &mut Vec<Step>, key: &str, out: &mut Vec<Leaf>) {
    match v {
        toml::Value::Float(x) => out.push(Leaf {
            path: path.clone(),
            key: key.into(),
            value: *x,
        }),
        toml::Value::Integer(i) => out.push(Leaf {
            path: path.clone(),
            key: key.into(),
            value: *i as f64,
        }),
        toml::Value::Table(t) => {
            // The tolerances are the file's numbers' uncertainties, no numbers of the model.
            let top = path.is_empty();
            for (k, x) in t.iter().filter(|(k, _)| !(top && *k == TOLERANCES_TABLE)) {
                path.push(Step::Key(k.clone()));
                let sub = if key.is_empty() {
                    k.clone()
                } else {
                    format!("{key}.{k}")
                };
                leaves(x, path, &sub, out);
                path.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(Step::Index(i));
                // An array's tables are named by their `name` where they have one.
                let sub = match x.get("name").and_then(toml::Value::as_str) {
                    Some(n) => format!("{key}.{n}"),
                    None => format!("{key}[{i}]"),
                };
                leaves(x, path, &sub, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `root` with the leaf at `path` set to `value` (a float).
fn with_value(root: &toml::Value, path: &[Step], value: f64) -> toml::Value {
    let mut out = root.clone();
    let mut at = &mut out;
    for s in path {
        at = match s {
            Step::Key(k) => &mut at[k.as_str()],
            Step::Index(i) => &mut at[*i],
        };
    }
    *at = toml::Value::Float(value);
    out
}

/// The model `root` builds with its leaf at `path` set to `value`; None when refused.
pub(crate) fn built(
    root: &toml::Value,
    path: &[Step],
    value: f64,
    origin: &str,
) -> Option<Mechanism> {
    let text = toml::to_string(&with_value(root, path, value)).ok()?;
    build_text(&text, origin).ok().map(|f| f.mechanism)
}

/// What one number of the file is: a parameter, a number of a law solved for (and of which
/// force), or neither and why.
enum Sorted {
    Parameter(FileParameter),
    Law(FileParameter, String),
    Other(NotAParameter),
}

/// The file as read: its model, its TOML, its geometry and its bodies' phi.
struct Read<'a> {
    origin: &'a str,
    nominal: Mechanism,
    root: toml::Value,
    shape: Vec<f64>,
    phi: Vec<[f64; 4]>,
}

impl Read<'_> {
    /// Whether `m` has the nominal model's bodies and geometry (to 1e-12 relative).
    fn same_shape(&self, m: &Mechanism) -> bool {
        let g = geometry(m);
        m.bodies.len() == self.nominal.bodies.len()
            && g.len() == self.shape.len()
            && g.iter()
                .zip(&self.shape)
                .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs()))
    }

    /// The models with `leaf` raised and lowered by 1e-4 of its value (1e-6 where it is
    /// zero), or the nominal one on a side the file refuses, and their values' difference.
    fn sides(&self, leaf: &Leaf) -> Option<(Mechanism, Mechanism, f64)> {
        let step = match leaf.value {
            0.0 => 1e-6,
            v => 1e-4 * v.abs(),
        };
        let up = built(&self.root, &leaf.path, leaf.value + step, self.origin);
        let down = built(&self.root, &leaf.path, leaf.value - step, self.origin);
        match (up, down) {
            (Some(u), Some(d)) => Some((u, d, 2.0 * step)),
            (Some(u), None) => Some((u, self.nominal.clone(), step)),
            (None, Some(d)) => Some((self.nominal.clone(), d, step)),
            (None, None) => None,
        }
    }

    /// `leaf` sorted (module documentation).
    fn sort(&self, leaf: Leaf) -> Sorted {
        let Some((plus, minus, span)) = self.sides(&leaf) else {
            return Sorted::Other(NotAParameter::NotPerturbable);
        };
        if !self.same_shape(&plus) || !self.same_shape(&minus) {
            return Sorted::Other(NotAParameter::Geometry);
        }
        let (pp, pm) = (body_phi(&plus), body_phi(&minus));
        let d_phi: Vec<[f64; 4]> = pp
            .iter()
            .zip(&pm)
            .map(|(a, b)| std::array::from_fn(|k| (a[k] - b[k]) / span))
            .collect();
        let d_gravity = (plus.gravity - minus.gravity) / span;
        // The actuators' laws are the simulation's: the inverse dynamics solves for them.
        let known = |m: &Mechanism| {
            m.forces
                .iter()
                .filter(|f| !f.actuator)
                .cloned()
                .collect::<Vec<_>>()
        };
        let moved = known(&plus) != known(&minus)
            || pp
                .iter()
                .chain(&pm)
                .zip(self.phi.iter().cycle())
                .any(|(a, b)| a != b)
            || d_gravity != Vector2::zeros();
        let solved = (!moved)
            .then(|| {
                plus.forces
                    .iter()
                    .zip(&minus.forces)
                    .find(|(a, b)| a.actuator && a != b)
            })
            .flatten()
            .map(|(f, _)| f.name.clone());
        if !moved && solved.is_none() {
            return Sorted::Other(NotAParameter::NoEffect);
        }
        let p = FileParameter {
            key: leaf.key,
            value: leaf.value,
            d_phi,
            d_gravity,
            sides: Box::new((plus, minus)),
            span,
        };
        match solved {
            Some(force) => Sorted::Law(p, force),
            None => Sorted::Parameter(p),
        }
    }
}

/// The parameters of the inverse dynamics in the mechanism file's `text` (`origin` names it in
/// errors), each with its derivatives (module documentation); an error when the file itself
/// does not build.
pub fn file_parameters(text: &str, origin: &str) -> Result<FileParameters, MechanismError> {
    let nominal = build_text(text, origin)?.mechanism;
    let root: toml::Value = toml::from_str(text).map_err(|e| MechanismError::Unreadable {
        path: origin.into(),
        hint: " as a mechanism",
        source: flexbench_contracts::SharedCause::new(e),
    })?;
    let mut found = Vec::new();
    leaves(&root, &mut Vec::new(), "", &mut found);
    let read = Read {
        origin,
        shape: geometry(&nominal),
        phi: body_phi(&nominal),
        nominal,
        root,
    };
    let (mut parameters, mut laws, mut others) = (Vec::new(), Vec::new(), Vec::new());
    for leaf in found {
        let key = leaf.key.clone();
        match read.sort(leaf) {
            Sorted::Parameter(p) => parameters.push(p),
            Sorted::Law(p, force) => {
                others.push((key, NotAParameter::SolvedFor(force)));
                laws.push(p);
            }
            Sorted::Other(why) => others.push((key, why)),
        }
    }
    Ok(FileParameters {
        nominal: read.nominal,
        parameters,
        laws,
        others,
    })
}

impl FileParameters {
    /// Why `key` is no parameter of the forces and no number of a law, in words: a length of
    /// the geometry, a number without effect, one the file refuses changed, or one the file
    /// does not have (with the keys that can be named).
    pub fn why_not_a_parameter(&self, key: &str) -> String {
        match self.others.iter().find(|(k, _)| k == key) {
            Some((_, NotAParameter::Geometry)) => {
                "it is a length of the geometry (the kinematic fit's, not the forces')".into()
            }
            Some((_, NotAParameter::NoEffect)) => {
                "neither the forces nor any law moves with it".into()
            }
            Some((_, NotAParameter::NotPerturbable)) => {
                "the file refuses it changed by a small step".into()
            }
            Some((_, NotAParameter::SolvedFor(_))) | None => {
                let keys: Vec<&str> = self
                    .parameters
                    .iter()
                    .chain(&self.laws)
                    .map(|p| p.key.as_str())
                    .collect();
                format!(
                    "the file has no such number; those that can be are {}",
                    keys.join(", ")
                )
            }
        }
    }
}

/// The mechanism file's `text` with the numbers named by `values` (their keys as
/// [`file_parameters`] names them) set: in place, the comments and layout kept, where every
/// key's line is found ([`crate::file_edit`]); written anew from its TOML otherwise. An error
/// names a key the file does not have, and the keys it has.
pub fn with_values(
    text: &str,
    origin: &str,
    values: &[(&str, f64)],
) -> Result<String, MechanismError> {
    let file_err = |reason: String| MechanismError::File {
        path: origin.into(),
        reason,
    };
    let mut root: toml::Value = toml::from_str(text).map_err(|e| MechanismError::Unreadable {
        path: origin.into(),
        hint: " as a mechanism",
        source: flexbench_contracts::SharedCause::new(e),
    })?;
    let mut found = Vec::new();
    leaves(&root, &mut Vec::new(), "", &mut found);
    for (key, value) in values {
        let Some(leaf) = found.iter().find(|l| l.key == *key) else {
            let keys: Vec<&str> = found.iter().map(|l| l.key.as_str()).collect();
            return Err(file_err(format!(
                "has no number named {key}; its numbers are {}",
                keys.join(", ")
            )));
        };
        root = with_value(&root, &leaf.path, *value);
    }
    match crate::file_edit::edit_in_place(text, values, &root) {
        Some(edited) => Ok(edited),
        None => toml::to_string(&root).map_err(|e| MechanismError::Unwritable {
            path: origin.into(),
            source: flexbench_contracts::SharedCause::new(e),
        }),
    }
}
