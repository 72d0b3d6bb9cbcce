//! Elastic bodies in the mechanism file: the `[bodies.elastic]` table, read and checked.
//!
//! A body with this table is simulated in a floating frame of reference: its rigid coordinates
//! (the frame's origin and angle) plus elastic coordinates q, the body's points displaced by
//! Phi_P q in its frame (docs/flexible.md). The table only describes the discretization; the
//! coupled simulation that uses it is the `flexbench-flexible` crate's. Two kinds:
//!
//! - `beam`: a straight uniform beam between two of the body's points, meshed with the FEM
//!   stage's beam elements (material and section required);
//! - `reduced`: the floating frame's matrices given outright (a published discretization such as
//!   the IVP test set's flexible slider-crank, or one imported from another FE code).

use std::collections::BTreeMap;

use nalgebra::{DMatrix, DVector};
use serde::Deserialize;

use crate::MechanismError;

/// How an elastic body is discretized.
#[derive(Debug, Clone, PartialEq)]
pub enum Elastic {
    /// A straight uniform beam meshed with beam elements.
    Beam(BeamSpec),
    /// The floating frame's reduced matrices, given.
    Reduced(ReducedSpec),
    /// A rectangular plate in plane stress meshed with quadrilaterals (seed 002).
    Plate(PlateSpec),
}

/// The quadrilateral used over an elastic plate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlateElement {
    /// 4-node bilinear.
    Q4,
    /// 8-node serendipity.
    Q8,
}

/// A rectangular elastic plate in plane stress from one of the body's points to another (its
/// axis, mid-height), SI units. Joints and markers sit on its nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlateSpec {
    /// The element.
    pub element: PlateElement,
    /// Elements along the axis.
    pub along: usize,
    /// Elements across the height.
    pub across: usize,
    /// Young's modulus, Pa.
    pub young: f64,
    /// Poisson's ratio.
    pub poisson: f64,
    /// Density, kg/m^3.
    pub density: f64,
    /// Thickness (out of the plane), m.
    pub thickness: f64,
    /// Height (in the plane, across the axis), m.
    pub height: f64,
    /// The point at the plate's first end (frame origin, mid-height).
    pub from: String,
    /// The point at the other end.
    pub to: String,
    /// Modes kept, or all nodal coordinates.
    pub modes: Option<usize>,
    /// Stiffness-proportional damping beta, s.
    pub damping_beta: f64,
}

/// The beam element used along an elastic beam (the FEM stage's kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeamElement {
    /// Axial linear, transverse cubic Hermite (3 degrees of freedom a node).
    Frame,
    /// Axial cubic, transverse quintic Hermite (5 degrees of freedom a node).
    Quintic,
}

/// Where an elastic beam's floating frame sits on its deformed axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeamFrame {
    /// Origin at the `from` node, x axis through the `to` node (the chord): u = v = 0 at
    /// `from`, v = 0 at `to`. The frame of a link pinned at both ends (the test set's rod).
    Chord,
    /// Origin at the `from` node, x axis tangent there: u = v = v' = 0 at `from` (a clamped
    /// root).
    Tangent,
}

/// A straight uniform elastic beam between two points of the body (SI units).
#[derive(Debug, Clone, PartialEq)]
pub struct BeamSpec {
    /// The element used throughout.
    pub element: BeamElement,
    /// Number of equal elements.
    pub elements: usize,
    /// Young's modulus E, Pa.
    pub young: f64,
    /// Density rho, kg/m^3.
    pub density: f64,
    /// Cross-section area A, m^2.
    pub area: f64,
    /// Second moment of area I about the axis normal to the plane of motion, m^4.
    pub second_moment: f64,
    /// The body point at the beam's first end (frame origin).
    pub from: String,
    /// The body point at the beam's other end.
    pub to: String,
    /// The floating frame's reference conditions.
    pub frame: BeamFrame,
    /// Keep only this many lowest modes of the beam in its frame (modal reduction); None keeps
    /// every nodal coordinate.
    pub modes: Option<usize>,
    /// How `modes` reduces the beam.
    pub reduction: Reduction,
    /// Stiffness-proportional damping factor beta (D = beta K), s.
    pub damping_beta: f64,
}

/// How an elastic beam is reduced to `modes` coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reduction {
    /// The lowest `modes` modes of the beam in its frame.
    #[default]
    Modal,
    /// Craig-Bampton: the static constraint modes of the joints' nodes (each free translation
    /// of a node carrying a joint, the rest of the beam following statically) and the lowest
    /// `modes` modes with those nodes held.
    CraigBampton,
}

/// An elastic body's floating-frame matrices, given (SI; n elastic coordinates q). With Phi(x)
/// the displacement field's shape functions (2 x n, body frame) and x the undeformed position
/// (body frame, origin at the frame's origin):
#[derive(Debug, Clone, PartialEq)]
pub struct ReducedSpec {
    /// M_qq = int rho Phi^T Phi dV, kg (n x n).
    pub mass: DMatrix<f64>,
    /// K, N/m (n x n).
    pub stiffness: DMatrix<f64>,
    /// D, N s/m (n x n), or zero.
    pub damping: DMatrix<f64>,
    /// S = int rho Phi dV, kg (2 x n).
    pub static_moment: DMatrix<f64>,
    /// c_a = int rho x . Phi dV, kg m (n).
    pub axial_moment: DVector<f64>,
    /// c_c = int rho x cross Phi dV, kg m (n).
    pub cross_moment: DVector<f64>,
    /// B_ij = int rho Phi_i cross Phi_j dV, kg (n x n, skew).
    pub gyroscopic: DMatrix<f64>,
    /// Phi at each named point the joints use (2 x n each).
    pub shapes: BTreeMap<String, DMatrix<f64>>,
}

/// An elastic body's discretization and its initial elastic state.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticBody {
    /// The discretization.
    pub model: Elastic,
    /// Initial elastic coordinates q(0) (empty: all zero).
    pub initial: Vec<f64>,
    /// Initial elastic rates q'(0) (empty: all zero).
    pub initial_rate: Vec<f64>,
}

/// The `[bodies.elastic]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElasticEntry {
    /// "beam" or "reduced".
    pub kind: String,
    /// Beam: "frame" (default) or "quintic".
    pub element: Option<String>,
    /// Beam: number of elements.
    pub elements: Option<usize>,
    /// Beam: the first end's point.
    pub from: Option<String>,
    /// Beam: the other end's point.
    pub to: Option<String>,
    /// Beam: "chord" (default) or "tangent".
    pub frame: Option<String>,
    /// Beam: { young = Pa, density = kg/m^3 }.
    pub material: Option<MaterialEntry>,
    /// Beam: { area = m^2, second_moment = m^4 } or { width = m, height = m }.
    pub section: Option<SectionEntry>,
    /// Plate: elements across the height.
    pub across: Option<usize>,
    /// Beam: modes kept (modal reduction).
    pub modes: Option<usize>,
    /// Beam: "modal" (default) or "craig-bampton".
    pub reduction: Option<String>,
    /// Beam: stiffness-proportional damping beta, s.
    pub damping_beta: Option<f64>,
    /// Reduced: M_qq.
    pub mass: Option<Vec<Vec<f64>>>,
    /// Reduced: K.
    pub stiffness: Option<Vec<Vec<f64>>>,
    /// Reduced: D.
    pub damping: Option<Vec<Vec<f64>>>,
    /// Reduced: S (2 rows).
    pub static_moment: Option<Vec<Vec<f64>>>,
    /// Reduced: c_a.
    pub axial_moment: Option<Vec<f64>>,
    /// Reduced: c_c.
    pub cross_moment: Option<Vec<f64>>,
    /// Reduced: B.
    pub gyroscopic: Option<Vec<Vec<f64>>>,
    /// Reduced: Phi at named points (2 rows each).
    #[serde(default)]
    pub shapes: BTreeMap<String, Vec<Vec<f64>>>,
    /// Initial elastic coordinates.
    #[serde(default)]
    pub initial: Vec<f64>,
    /// Initial elastic rates.
    #[serde(default)]
    pub initial_rate: Vec<f64>,
}

/// `material = { young, density }`, SI.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialEntry {
    /// Young's modulus, Pa.
    pub young: f64,
    /// Density, kg/m^3.
    pub density: f64,
    /// Poisson's ratio (plates; default 0.3).
    pub poisson: Option<f64>,
}

/// `section = { area, second_moment }` or a rectangle `{ width, height }` (height in the plane of
/// motion), SI.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SectionEntry {
    /// Area, m^2.
    pub area: Option<f64>,
    /// Second moment of area, m^4.
    pub second_moment: Option<f64>,
    /// Rectangle's width (out of the plane), m.
    pub width: Option<f64>,
    /// Rectangle's height (in the plane), m.
    pub height: Option<f64>,
}

fn key(k: &str, reason: impl Into<String>) -> MechanismError {
    MechanismError::Key {
        key: k.into(),
        reason: reason.into(),
    }
}

fn positive(v: Option<f64>, k: &str, what: &str) -> Result<f64, MechanismError> {
    match v {
        None => Err(key(k, format!("missing: give {what}"))),
        Some(x) if x.is_finite() && x > 0.0 => Ok(x),
        Some(x) => Err(key(k, format!("{x} is not a positive number ({what})"))),
    }
}

impl SectionEntry {
    /// (area m^2, second moment m^4) from either form.
    fn resolve(&self, k: &str) -> Result<(f64, f64), MechanismError> {
        match (self.width, self.height) {
            (Some(_), _) | (_, Some(_)) => {
                if self.area.is_some() || self.second_moment.is_some() {
                    return Err(key(
                        k,
                        "give either { area, second_moment } or { width, height }, not both",
                    ));
                }
                let b = positive(self.width, &format!("{k}.width"), "the width in m")?;
                let h = positive(self.height, &format!("{k}.height"), "the height in m")?;
                Ok((b * h, b * h.powi(3) / 12.0))
            }
            _ => Ok((
                positive(self.area, &format!("{k}.area"), "the area in m^2")?,
                positive(
                    self.second_moment,
                    &format!("{k}.second_moment"),
                    "the second moment of area in m^4",
                )?,
            )),
        }
    }
}

fn matrix(
    rows: &Option<Vec<Vec<f64>>>,
    k: &str,
    shape: (Option<usize>, usize),
) -> Result<DMatrix<f64>, MechanismError> {
    let Some(rows) = rows else {
        return Err(key(
            k,
            "missing: the reduced elastic body needs this matrix",
        ));
    };
    let nr = shape.0.unwrap_or(shape.1);
    if rows.len() != nr || rows.iter().any(|r| r.len() != shape.1) {
        return Err(key(
            k,
            format!(
                "must be {nr} rows of {} numbers (one column per elastic coordinate)",
                shape.1
            ),
        ));
    }
    if rows.iter().flatten().any(|x| !x.is_finite()) {
        return Err(key(k, "has a value that is not a finite number"));
    }
    Ok(DMatrix::from_fn(nr, shape.1, |i, j| rows[i][j]))
}

fn vector(v: &Option<Vec<f64>>, k: &str, n: usize) -> Result<DVector<f64>, MechanismError> {
    matrix(&v.as_ref().map(|x| vec![x.clone()]), k, (Some(1), n)).map(|m| m.row(0).transpose())
}

impl ElasticEntry {
    /// The checked discretization of body `body` (`k` the key prefix for messages), whose named
    /// points are `points`.
    pub fn build(&self, k: &str, points: &[&String]) -> Result<ElasticBody, MechanismError> {
        let model = match self.kind.as_str() {
            "beam" => Elastic::Beam(self.beam(k, points)?),
            "reduced" => Elastic::Reduced(self.reduced(k, points)?),
            "plate" => Elastic::Plate(self.plate(k, points)?),
            other => {
                return Err(key(
                    &format!("{k}.kind"),
                    format!(
                    "'{other}' is not an elastic body kind; use \"beam\", \"plate\" or \"reduced\""
                ),
                ))
            }
        };
        let n = match &model {
            Elastic::Reduced(r) => Some(r.mass.nrows()),
            Elastic::Beam(_) | Elastic::Plate(_) => None,
        };
        for (name, v) in [
            ("initial", &self.initial),
            ("initial_rate", &self.initial_rate),
        ] {
            if v.iter().any(|x| !x.is_finite()) {
                return Err(key(
                    &format!("{k}.{name}"),
                    "has a value that is not finite",
                ));
            }
            if let (Some(n), false) = (n, v.is_empty()) {
                if v.len() != n {
                    return Err(key(
                        &format!("{k}.{name}"),
                        format!("has {} values for {n} elastic coordinates", v.len()),
                    ));
                }
            }
        }
        Ok(ElasticBody {
            model,
            initial: self.initial.clone(),
            initial_rate: self.initial_rate.clone(),
        })
    }

    /// The beam table checked key by key, each with its own message.
    fn beam(&self, k: &str, points: &[&String]) -> Result<BeamSpec, MechanismError> {
        let (young, density, area, second_moment) = self.material_section(k)?;
        let (element, frame) = self.choices(k)?;
        let elements = match self.elements {
            Some(e) if e >= 1 => e,
            _ => {
                return Err(key(
                    &format!("{k}.elements"),
                    "missing or zero: give the number of beam elements (1 or more)",
                ))
            }
        };
        let (from, to) = self.ends(k, points)?;
        let damping_beta = self.beam_rest(k)?;
        Ok(BeamSpec {
            element,
            elements,
            young,
            density,
            area,
            second_moment,
            from,
            to,
            frame,
            modes: self.modes,
            reduction: self.reduction(k)?,
            damping_beta,
        })
    }

    /// (E Pa, rho kg/m^3, A m^2, I m^4) of a beam, each required.
    fn material_section(&self, k: &str) -> Result<(f64, f64, f64, f64), MechanismError> {
        let material = self.material.ok_or_else(|| {
            key(
                &format!("{k}.material"),
                "missing: an elastic beam needs its material, material = { young = <Pa>, density = <kg/m^3> }",
            )
        })?;
        let section = self.section.ok_or_else(|| {
            key(
                &format!("{k}.section"),
                "missing: an elastic beam needs its cross-section, section = { area = <m^2>, second_moment = <m^4> } or { width = <m>, height = <m> }",
            )
        })?;
        let (area, second_moment) = section.resolve(&format!("{k}.section"))?;
        let young = positive(
            Some(material.young),
            &format!("{k}.material.young"),
            "Young's modulus in Pa",
        )?;
        let density = positive(
            Some(material.density),
            &format!("{k}.material.density"),
            "the density in kg/m^3",
        )?;
        Ok((young, density, area, second_moment))
    }

    /// The plate table: a plane-stress rectangle of the section's width (thickness) and height.
    fn plate(&self, k: &str, points: &[&String]) -> Result<PlateSpec, MechanismError> {
        if self.reduction(k)? != Reduction::Modal {
            return Err(key(
                &format!("{k}.reduction"),
                "a plate is reduced to its lowest modes only: leave the key out or give \"modal\"",
            ));
        }
        let (young, density, _, _) = self.material_section(k)?;
        let section = self.section.unwrap_or(SectionEntry {
            area: None,
            second_moment: None,
            width: None,
            height: None,
        });
        let thickness = positive(
            section.width,
            &format!("{k}.section.width"),
            "the plate's thickness (out of the plane) in m",
        )?;
        let height = positive(
            section.height,
            &format!("{k}.section.height"),
            "the plate's height (in the plane) in m",
        )?;
        let poisson = self.material.and_then(|m| m.poisson).unwrap_or(0.3);
        if !(poisson > -1.0 && poisson < 0.5) {
            return Err(key(
                &format!("{k}.material.poisson"),
                format!("{poisson} is not a Poisson's ratio between -1 and 0.5"),
            ));
        }
        let element = match self.element.as_deref().unwrap_or("q8") {
            "q8" => PlateElement::Q8,
            "q4" => PlateElement::Q4,
            o => {
                return Err(key(
                    &format!("{k}.element"),
                    format!("'{o}' is not a plate element; use \"q8\" or \"q4\""),
                ))
            }
        };
        let count = |v: Option<usize>, name: &str| match v {
            Some(e) if e >= 1 => Ok(e),
            _ => Err(key(
                &format!("{k}.{name}"),
                "missing or zero: give the number of plate elements this way (1 or more)",
            )),
        };
        let (along, across) = (
            count(self.elements, "elements")?,
            count(self.across, "across")?,
        );
        let (from, to) = self.ends(k, points)?;
        let beam = self.beam_rest(k)?;
        Ok(PlateSpec {
            element,
            along,
            across,
            young,
            poisson,
            density,
            thickness,
            height,
            from,
            to,
            modes: self.modes,
            damping_beta: beam,
        })
    }

    /// The modes and damping keys, checked (shared by beams and plates): the damping beta, s.
    fn beam_rest(&self, k: &str) -> Result<f64, MechanismError> {
        if self.modes == Some(0) {
            return Err(key(
                &format!("{k}.modes"),
                "keep at least one mode, or leave the key out for no reduction",
            ));
        }
        let damping_beta = self.damping_beta.unwrap_or(0.0);
        if !(damping_beta >= 0.0 && damping_beta.is_finite()) {
            return Err(key(
                &format!("{k}.damping_beta"),
                "must be a non-negative number of seconds",
            ));
        }
        Ok(damping_beta)
    }

    /// The beam's reduction by name (default modal); Craig-Bampton needs `modes`.
    fn reduction(&self, k: &str) -> Result<Reduction, MechanismError> {
        match (self.reduction.as_deref().unwrap_or("modal"), self.modes) {
            ("modal", _) => Ok(Reduction::Modal),
            ("craig-bampton", Some(_)) => Ok(Reduction::CraigBampton),
            ("craig-bampton", None) => Err(key(
                &format!("{k}.modes"),
                "missing: reduction = \"craig-bampton\" keeps the joints' nodes and this many fixed-interface modes (e.g. modes = 4)",
            )),
            (o, _) => Err(key(
                &format!("{k}.reduction"),
                format!("'{o}' is not a reduction; use \"modal\" or \"craig-bampton\""),
            )),
        }
    }

    /// The beam's element and frame by name (defaults frame and chord).
    fn choices(&self, k: &str) -> Result<(BeamElement, BeamFrame), MechanismError> {
        let element = match self.element.as_deref().unwrap_or("frame") {
            "frame" => BeamElement::Frame,
            "quintic" => BeamElement::Quintic,
            o => {
                return Err(key(
                    &format!("{k}.element"),
                    format!("'{o}' is not a beam element; use \"frame\" or \"quintic\""),
                ))
            }
        };
        let frame = match self.frame.as_deref().unwrap_or("chord") {
            "chord" => BeamFrame::Chord,
            "tangent" => BeamFrame::Tangent,
            o => {
                return Err(key(
                    &format!("{k}.frame"),
                    format!("'{o}' is not a beam frame; use \"chord\" or \"tangent\""),
                ))
            }
        };
        Ok((element, frame))
    }

    /// The beam's two end points, named points of the body and distinct.
    fn ends(&self, k: &str, points: &[&String]) -> Result<(String, String), MechanismError> {
        let end = |v: &Option<String>, which: &str| -> Result<String, MechanismError> {
            let name = v.clone().ok_or_else(|| {
                key(
                    &format!("{k}.{which}"),
                    "missing: name the body point at this end of the beam",
                )
            })?;
            if !points.contains(&&name) {
                return Err(key(
                    &format!("{k}.{which}"),
                    format!("the body has no point '{name}'"),
                ));
            }
            Ok(name)
        };
        let (from, to) = (end(&self.from, "from")?, end(&self.to, "to")?);
        if from == to {
            return Err(key(
                &format!("{k}.to"),
                "the beam's two ends are the same point",
            ));
        }
        Ok((from, to))
    }

    fn reduced(&self, k: &str, points: &[&String]) -> Result<ReducedSpec, MechanismError> {
        let n = self.mass.as_ref().map(|m| m.len()).unwrap_or(0);
        if n == 0 {
            return Err(key(&format!("{k}.mass"), "missing or empty: the reduced elastic body needs its mass matrix M_qq (n rows of n numbers)"));
        }
        let sq = (None, n);
        let mass = matrix(&self.mass, &format!("{k}.mass"), sq)?;
        let stiffness = matrix(&self.stiffness, &format!("{k}.stiffness"), sq)?;
        let damping = match &self.damping {
            None => DMatrix::zeros(n, n),
            some => matrix(some, &format!("{k}.damping"), sq)?,
        };
        let gyroscopic = matrix(&self.gyroscopic, &format!("{k}.gyroscopic"), sq)?;
        let static_moment = matrix(
            &self.static_moment,
            &format!("{k}.static_moment"),
            (Some(2), n),
        )?;
        let axial_moment = vector(&self.axial_moment, &format!("{k}.axial_moment"), n)?;
        let cross_moment = vector(&self.cross_moment, &format!("{k}.cross_moment"), n)?;
        if (&mass - mass.transpose()).amax() > 1e-12 * mass.amax() {
            return Err(key(&format!("{k}.mass"), "is not symmetric"));
        }
        if (&gyroscopic + gyroscopic.transpose()).amax() > 1e-12 * gyroscopic.amax().max(1e-300) {
            return Err(key(
                &format!("{k}.gyroscopic"),
                "is not skew-symmetric (B_ij = -B_ji)",
            ));
        }
        if mass.clone().cholesky().is_none() {
            return Err(key(&format!("{k}.mass"), "is not positive definite"));
        }
        let mut shapes = BTreeMap::new();
        for (name, rows) in &self.shapes {
            if !points.contains(&name) {
                return Err(key(
                    &format!("{k}.shapes.{name}"),
                    format!("the body has no point '{name}'"),
                ));
            }
            shapes.insert(
                name.clone(),
                matrix(
                    &Some(rows.clone()),
                    &format!("{k}.shapes.{name}"),
                    (Some(2), n),
                )?,
            );
        }
        Ok(ReducedSpec {
            mass,
            stiffness,
            damping,
            static_moment,
            axial_moment,
            cross_moment,
            gyroscopic,
            shapes,
        })
    }
}

/// The bench's flat form's `elastic = { ... }`: the lever as an elastic beam from B to C' of
/// the file's E, rho, area and inertia (chord frame).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatElastic {
    /// Number of beam elements.
    pub elements: usize,
    /// "frame" (default) or "quintic".
    pub element: Option<String>,
    /// Modes kept (modal reduction).
    pub modes: Option<usize>,
    /// "modal" (default) or "craig-bampton".
    pub reduction: Option<String>,
    /// Stiffness-proportional damping beta, s.
    pub damping_beta: Option<f64>,
}

impl FlatElastic {
    /// The general form's table for the lever of Young's modulus `young` (Pa), density
    /// `density` (kg/m^3), area (m^2) and second moment (m^4).
    pub fn entry(&self, young: f64, density: f64, area: f64, second_moment: f64) -> ElasticEntry {
        ElasticEntry {
            kind: "beam".into(),
            element: self.element.clone(),
            elements: Some(self.elements),
            across: None,
            from: Some("B".into()),
            to: Some("C'".into()),
            frame: Some("chord".into()),
            material: Some(MaterialEntry {
                young,
                density,
                poisson: None,
            }),
            section: Some(SectionEntry {
                area: Some(area),
                second_moment: Some(second_moment),
                width: None,
                height: None,
            }),
            modes: self.modes,
            reduction: self.reduction.clone(),
            damping_beta: self.damping_beta,
            mass: None,
            stiffness: None,
            damping: None,
            static_moment: None,
            axial_moment: None,
            cross_moment: None,
            gyroscopic: None,
            shapes: BTreeMap::new(),
            initial: Vec::new(),
            initial_rate: Vec::new(),
        }
    }
}
