//! The mechanism file (TOML): the bench's flat form (docs/bench.md section 6) and a general
//! form for any planar linkage. Unknown keys, missing keys, non-physical values and joints that
//! name points that do not exist are refused with the key and the reason.
//!
//! The general form:
//!
//! ```toml
//! name = "slider-crank"
//! gravity = [0.0, -9.81]            # m/s^2, bench frame; [0, 0] for a linkage lying flat
//! ground = { A = [0.0, 0.0] }       # named ground points, m
//!
//! [[bodies]]
//! name = "crank"
//! mass = 2.0                        # kg
//! inertia = 0.01                    # kg m^2 about the centroid
//! centroid = [0.0, 0.0]             # m, local frame
//! points = { A = [0.0, 0.0], B = [0.1, 0.0] }
//! pose = [0.0, 0.0, 0.0]            # local origin x, y (m) and angle (rad): the assembly guess
//!
//! [[joints]]                        # revolute: the force reported is that of `first` on `second`
//! name = "A"
//! type = "revolute"
//! first = "ground:A"
//! second = "crank:A"
//!
//! # friction = { viscous = 0.047, coulomb = 0.18, sharpness = 100.0 }  # N m s, N m, s/rad:
//! #   the couple -(Fv w + Fc atan(k w)) on the relative rotation w (law = "tanh": Fc tanh(k w))
//! # actuator = { km = 0.1, omega_ref_rpm = 0.0, constant = 0.0 }  # a motor at the joint, the
//! #   column `A_torque` (N m, first on second); on a slide { km, speed_ref, constant }: a jack,
//! #   the column `<slide>_force` (N along the line); see crate::actuator
//!
//! [[joints]]                        # slide of a body point along a ground line, rotation locked
//! name = "slide"
//! type = "slide"
//! point = "piston:P"
//! origin = [0.0, 0.0]
//! angle = 0.0                       # rad, the line's direction
//!
//! [[forces]]
//! name = "motor_torque"
//! type = "motor"                    # motor | pump | spring | torque (spring: actuator = true is
//!                                   # a cylinder between two points, its tension solved for)
//! body = "crank"
//! km = 20.0                         # N m s
//! omega_ref_rpm = 120.0
//! actuator = true                   # an unknown of the inverse dynamics
//!
//! [[markers]]
//! name = "M1"
//! body = "rod"
//! at = [0.1, 0.0]                   # m, local frame
//! kind = "bright"                   # bright (default): a light disc on a darker part; dark: a
//!                                   # dark disc on a lighter part or wall; colour: a coloured
//!                                   # sticker, with hue = 120.0 (deg) and hue_tolerance = 20.0
//! depth = 0.0                       # m in front of the bench plane, towards the camera
//!
//! [[drivers]]                       # one per degree of freedom
//! name = "crank angle"
//! body = "crank"
//! coordinate = "angle"              # angle | x | y (of `point`)
//! value = 0.0
//! rate = 12.566
//! ```

use std::collections::BTreeMap;

use nalgebra::Vector2;
use serde::Deserialize;

use crate::keys::{key_err, need, non_negative, positive, vec2};
use crate::model::{
    Body, BodyRef, Coordinate, Driver, ForceElement, ForceKind, Joint, JointKind, Marker,
    Mechanism, PointRef,
};
use crate::{rot, MechanismError};

pub use crate::general::{
    BodyEntry, DriverEntry, ForceEntry, GeneralFile, JointEntry, MarkerEntry,
};

/// The flat form of the wind-pump bench (docs/bench.md section 3 and 6), every value a key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct WindPumpFile {
    /// A name for reports.
    pub name: Option<String>,
    /// The numbers' standard uncertainties, read by [`crate::tolerances`].
    #[serde(default)]
    pub tolerances: Option<toml::Table>,
    /// Crank length A -> B, m.
    pub l1: Option<f64>,
    /// Crank centroid along A -> B, m.
    pub c1: Option<f64>,
    /// Crank mass, kg.
    pub m1: Option<f64>,
    /// Crank inertia about its centroid, kg m^2.
    pub J1: Option<f64>,
    /// Lever length B -> C', m.
    pub l2: Option<f64>,
    /// Lever centroid at a2 * l2 from B.
    pub a2: Option<f64>,
    /// Lever mass, kg (default rho * area * l2).
    pub m2: Option<f64>,
    /// Lever inertia about its centroid, kg m^2 (default m2 l2^2 / 12).
    pub J2: Option<f64>,
    /// Young's modulus of the lever, Pa.
    pub E: Option<f64>,
    /// Density of the lever, kg/m^3.
    pub rho: Option<f64>,
    /// Cross-section area of the lever, m^2.
    pub area: Option<f64>,
    /// In-plane second moment of area of the lever, m^4.
    pub inertia: Option<f64>,
    /// Marker positions along the lever as fractions of l2 from B.
    pub markers: Option<Vec<f64>>,
    /// The lever elastic and coupled with the mechanism (`elastic = { elements = 8, modes = 4 }`:
    /// a beam of E, rho, area, inertia from B to C'; docs/flexible.md).
    pub elastic: Option<crate::elastic::FlatElastic>,
    /// Marker names (default M1, M2, ...).
    pub marker_names: Option<Vec<String>>,
    /// The markers' distance in front of the bench plane (the board's or the clicked points'),
    /// towards the camera, m (default 0: in the plane).
    pub marker_depth: Option<f64>,
    /// Rocker C' -> C, m.
    pub l3: Option<f64>,
    /// Rocker C -> D (perpendicular), m.
    pub l4: Option<f64>,
    /// Rocker arm mass, kg.
    pub m3: Option<f64>,
    /// Rocker arm centroid, local frame, m.
    pub g3: Option<[f64; 2]>,
    /// Rocker arm inertia about its own centroid, kg m^2.
    pub J3: Option<f64>,
    /// Adjustable weight, kg.
    pub mw: Option<f64>,
    /// Adjustable weight position, rocker frame, m.
    pub w3: Option<[f64; 2]>,
    /// Height of the slide line y = e, m.
    pub e: Option<f64>,
    /// Slide mass, kg.
    pub mD: Option<f64>,
    /// Pump spring stiffness, N/m.
    pub k: Option<f64>,
    /// Pump spring's free position of D, m.
    pub xD0: Option<f64>,
    /// Pump viscous damping, N s/m.
    pub cD: Option<f64>,
    /// Pump friction force, N.
    pub Fr: Option<f64>,
    /// Pump friction's regularising speed, m/s.
    pub vr: Option<f64>,
    /// Motor torque constant, N m s.
    pub Km: Option<f64>,
    /// Motor reference speed, rpm.
    pub omega_ref_rpm: Option<f64>,
    /// Gravity's magnitude, m/s^2 (default 9.81, pointing to -Y).
    pub gravity: Option<f64>,
    /// Initial crank angle, rad (default 0).
    pub phi1_start: Option<f64>,
    /// Initial slide position, m (default xD0).
    pub xD_start: Option<f64>,
}

pub use flexbench_contracts::lever::LeverSection;

/// The flat file's values, each checked (present, finite, within its range), SI units.
struct WindPump {
    l1: f64,
    c1: f64,
    m1: f64,
    j1: f64,
    l2: f64,
    a2: f64,
    m2: f64,
    j2: f64,
    section: LeverSection,
    /// The markers' names and positions along the lever (fractions of l2).
    markers: Vec<(String, f64)>,
    l3: f64,
    l4: f64,
    /// The rocker with its weight as one rigid body: mass kg, centroid m (rocker frame),
    /// inertia about it kg m^2 (parallel-axis theorem).
    rocker: RigidBody,
    e: f64,
    m_slide: f64,
    k: f64,
    xd0: f64,
    cd: f64,
    fr: f64,
    vr: f64,
    km: f64,
    /// The motor's reference speed, rad/s.
    omega: f64,
    g: f64,
    phi1: f64,
    xd: f64,
}

impl WindPumpFile {
    /// Build the multibody model of the bench: bodies crank, lever, rocker, slide; joints A
    /// (ground on crank), B (crank on lever), C (rocker on lever at C'), D (slide on rocker)
    /// and the slide along y = e; the motor torque and the pump force as actuators.
    pub fn build(&self) -> Result<(Mechanism, LeverSection), MechanismError> {
        let p = self.checked()?;
        let bodies = p.bodies();
        let guess = p.assembly_guess(&bodies)?;
        let joints = wind_pump_joints(&bodies, p.e);
        let mech = Mechanism {
            name: self
                .name
                .clone()
                .unwrap_or_else(|| "wind-pump bench".into()),
            bodies,
            joints,
            forces: p.forces(),
            gravity: Vector2::new(0.0, -p.g),
            markers: p.lever_markers(),
            drivers: p.drivers(),
            guess,
            tolerances: Vec::new(),
        };
        let mut mech = mech;
        if let Some(d) = self.marker_depth {
            if !d.is_finite() {
                return Err(key_err(
                    "marker_depth",
                    format!("{d}: give the markers' distance in front of the bench plane in m"),
                ));
            }
            for mk in &mut mech.markers {
                mk.depth = d;
            }
        }
        if let Some(e) = &self.elastic {
            let lever = &mech.bodies[1];
            let names: Vec<&String> = lever.points.keys().collect();
            let sec = &p.section;
            let entry = e.entry(sec.e, sec.rho, sec.area, sec.inertia);
            mech.bodies[1].elastic = Some(entry.build("elastic", &names)?);
        }
        mech.validate()?;
        Ok((mech, p.section))
    }

    /// Every value checked, in the file's order of sections (crank, lever, markers, rocker,
    /// slide and pump, motor, start).
    fn checked(&self) -> Result<WindPump, MechanismError> {
        let l1 = positive(self.l1, "l1", "the crank length A-B in m")?;
        let c1 = need(
            self.c1,
            "c1",
            "the crank's centroid along A-B in m (0 for a balanced disc)",
        )?;
        let m1 = positive(self.m1, "m1", "the crank's mass in kg")?;
        let j1 = positive(
            self.J1,
            "J1",
            "the crank's inertia about its centroid in kg m^2",
        )?;
        let (l2, a2, m2, j2, section) = self.lever()?;
        let markers = self.marker_layout()?;
        let (l3, l4, rocker) = self.rocker()?;
        let e = need(self.e, "e", "the height of the slide line y = e in m")?;
        let md = positive(self.mD, "mD", "the slide's mass in kg")?;
        let k = non_negative(self.k, "k", "the pump spring's stiffness in N/m")?;
        let xd0 = need(self.xD0, "xD0", "the pump spring's free position of D in m")?;
        let cd = non_negative(self.cD, "cD", "the pump's viscous damping in N s/m")?;
        let fr = non_negative(self.Fr, "Fr", "the pump's friction force in N")?;
        let vr = positive(self.vr, "vr", "the friction's regularising speed in m/s")?;
        let km = non_negative(self.Km, "Km", "the motor's torque constant in N m s")?;
        let rpm = need(
            self.omega_ref_rpm,
            "omega_ref_rpm",
            "the motor's reference speed in rpm",
        )?;
        Ok(WindPump {
            l1,
            c1,
            m1,
            j1,
            l2,
            a2,
            m2,
            j2,
            section,
            markers,
            l3,
            l4,
            rocker,
            e,
            m_slide: md,
            k,
            xd0,
            cd,
            fr,
            vr,
            km,
            omega: rpm * std::f64::consts::PI / 30.0,
            g: non_negative(self.gravity.or(Some(9.81)), "gravity", "gravity in m/s^2")?,
            phi1: need(
                self.phi1_start.or(Some(0.0)),
                "phi1_start",
                "the initial crank angle in rad",
            )?,
            xd: need(
                self.xD_start.or(Some(xd0)),
                "xD_start",
                "the initial slide position in m",
            )?,
        })
    }

    /// The lever's length, centroid fraction, mass, inertia and elastic section (mass and
    /// inertia from the section when not given: a uniform bar).
    fn lever(&self) -> Result<LeverValues, MechanismError> {
        let l2 = positive(self.l2, "l2", "the lever length B-C' in m")?;
        let a2 = need(
            self.a2,
            "a2",
            "the lever's centroid as a fraction of l2 from B",
        )?;
        if !(0.0..=1.0).contains(&a2) {
            return Err(key_err(
                "a2",
                format!("{a2} is outside [0, 1]: the centroid must lie on the lever"),
            ));
        }
        let section = LeverSection {
            e: positive(self.E, "E", "the lever's Young's modulus in Pa")?,
            rho: positive(self.rho, "rho", "the lever's density in kg/m^3")?,
            area: positive(self.area, "area", "the lever's cross-section area in m^2")?,
            inertia: positive(
                self.inertia,
                "inertia",
                "the lever's in-plane second moment of area in m^4",
            )?,
            length: l2,
        };
        let m2 = match self.m2 {
            Some(_) => positive(self.m2, "m2", "the lever's mass in kg")?,
            None => section.rho * section.area * l2,
        };
        let j2 = match self.J2 {
            Some(_) => non_negative(
                self.J2,
                "J2",
                "the lever's inertia about its centroid in kg m^2",
            )?,
            None => m2 * l2 * l2 / 12.0,
        };
        Ok((l2, a2, m2, j2, section))
    }

    /// The markers' names and positions along the lever (fractions of l2): at least two,
    /// inside [0, 1], distinct, as many names as positions.
    fn marker_layout(&self) -> Result<Vec<(String, f64)>, MechanismError> {
        let s = self
            .markers
            .clone()
            .ok_or_else(|| key_err("markers", "missing: give the markers' positions along the lever as fractions of l2, e.g. [0.1, 0.3, 0.5, 0.7, 0.9]"))?;
        if s.len() < 2 {
            return Err(key_err(
                "markers",
                format!(
                    "{} marker(s): the lever's motion needs at least two",
                    s.len()
                ),
            ));
        }
        for (i, &v) in s.iter().enumerate() {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(key_err(
                    "markers",
                    format!(
                        "marker {} at {v}: positions are fractions of l2 in [0, 1]",
                        i + 1
                    ),
                ));
            }
            if s[..i].iter().any(|&w| (w - v).abs() < 1e-9) {
                return Err(key_err(
                    "markers",
                    format!("marker {} at {v} duplicates another", i + 1),
                ));
            }
        }
        let names = match &self.marker_names {
            Some(n) if n.len() != s.len() => {
                return Err(key_err(
                    "marker_names",
                    format!("{} names for {} markers", n.len(), s.len()),
                ))
            }
            Some(n) => n.clone(),
            None => (1..=s.len()).map(|i| format!("M{i}")).collect(),
        };
        Ok(names.into_iter().zip(s).collect())
    }

    /// The rocker's lengths C'-C and C-D, and the rocker with its adjustable weight as one
    /// rigid body (mass, centroid in the rocker frame, inertia about it).
    fn rocker(&self) -> Result<(f64, f64, RigidBody), MechanismError> {
        let l3 = positive(self.l3, "l3", "the rocker length C'-C in m")?;
        let l4 = need(self.l4, "l4", "the rocker offset C-D in m")?;
        let m3 = positive(self.m3, "m3", "the rocker arm's mass in kg")?;
        let g3 = vec2(self.g3, "g3", "the rocker arm's centroid in its frame, m")?;
        let j3 = non_negative(
            self.J3,
            "J3",
            "the rocker arm's inertia about its centroid in kg m^2",
        )?;
        let mw = non_negative(self.mw, "mw", "the adjustable weight's mass in kg")?;
        let w3 = vec2(
            self.w3,
            "w3",
            "the adjustable weight's position in the rocker frame, m",
        )?;
        // Rocker with its weight: one rigid body (parallel-axis theorem).
        let m_r = m3 + mw;
        let g_r = (g3 * m3 + w3 * mw) / m_r;
        let j_r = j3 + m3 * (g3 - g_r).norm_squared() + mw * (w3 - g_r).norm_squared();
        Ok((l3, l4, (m_r, g_r, j_r)))
    }
}

/// A body's mass (kg), centroid (m, body frame) and inertia about the centroid (kg m^2).
type RigidBody = (f64, Vector2<f64>, f64);

/// The lever's length l2 (m), centroid as a fraction of l2, mass (kg), inertia about the
/// centroid (kg m^2) and elastic section.
type LeverValues = (f64, f64, f64, f64, LeverSection);

/// Named points of a body frame, m.
fn named_points(list: &[(&str, f64, f64)]) -> BTreeMap<String, Vector2<f64>> {
    list.iter()
        .map(|(n, x, y)| (n.to_string(), Vector2::new(*x, *y)))
        .collect()
}

/// The bench's joints: revolutes A (ground on crank), B (crank on lever), C (rocker on lever
/// at C'), D (slide on rocker), and the slide along y = `e` (m).
fn wind_pump_joints(bodies: &[Body], e: f64) -> Vec<Joint> {
    let pr = |b: usize, n: &str| PointRef {
        body: BodyRef::Body(b),
        name: n.into(),
        local: bodies[b].point_rel(n).unwrap_or_else(Vector2::zeros),
    };
    let revolute = |name: &str, a: PointRef, b: PointRef| Joint {
        name: name.into(),
        kind: JointKind::Revolute { a, b },
    };
    let ground_a = PointRef {
        body: BodyRef::Ground,
        name: "A".into(),
        local: Vector2::zeros(),
    };
    vec![
        revolute("A", ground_a, pr(0, "A")),
        revolute("B", pr(0, "B"), pr(1, "B")),
        revolute("C", pr(2, "C'"), pr(1, "C'")),
        revolute("D", pr(3, "D"), pr(2, "D")),
        Joint {
            name: "slide".into(),
            kind: JointKind::Slide {
                body: 3,
                point: Vector2::zeros(),
                origin: Vector2::new(0.0, e),
                angle: 0.0,
                body_angle: 0.0,
            },
        },
    ]
}

impl WindPump {
    /// The four bodies: crank, lever (with the markers as named points), rocker, slide.
    fn bodies(&self) -> Vec<Body> {
        let mut lever_points = named_points(&[("B", 0.0, 0.0), ("C'", self.l2, 0.0)]);
        for (n, sk) in &self.markers {
            lever_points.insert(n.clone(), Vector2::new(sk * self.l2, 0.0));
        }
        let (m_r, g_r, j_r) = self.rocker;
        vec![
            Body {
                name: "crank".into(),
                mass: self.m1,
                inertia: self.j1,
                centroid: Vector2::new(self.c1, 0.0),
                points: named_points(&[("A", 0.0, 0.0), ("B", self.l1, 0.0)]),
                elastic: None,
            },
            Body {
                name: "lever".into(),
                mass: self.m2,
                inertia: self.j2,
                centroid: Vector2::new(self.a2 * self.l2, 0.0),
                points: lever_points,
                elastic: None,
            },
            Body {
                name: "rocker".into(),
                mass: m_r,
                inertia: j_r,
                centroid: g_r,
                points: named_points(&[
                    ("C'", 0.0, 0.0),
                    ("C", self.l3, 0.0),
                    ("D", self.l3, self.l4),
                ]),
                elastic: None,
            },
            Body {
                name: "slide".into(),
                mass: self.m_slide,
                inertia: 0.0,
                centroid: Vector2::zeros(),
                points: named_points(&[("D", 0.0, 0.0)]),
                elastic: None,
            },
        ]
    }

    /// The actuators: the motor's torque on the crank and the pump's force on the slide.
    fn forces(&self) -> Vec<ForceElement> {
        vec![
            ForceElement {
                name: "motor_torque".into(),
                kind: ForceKind::Motor {
                    body: 0,
                    reaction: BodyRef::Ground,
                    km: self.km,
                    omega_ref: self.omega,
                },
                actuator: true,
            },
            ForceElement {
                name: "pump_force".into(),
                kind: ForceKind::Pump {
                    body: 3,
                    point: Vector2::zeros(),
                    angle: 0.0,
                    k: self.k,
                    s0: self.xd0,
                    c: self.cd,
                    fr: self.fr,
                    vr: self.vr,
                },
                actuator: true,
            },
        ]
    }

    /// The markers on the lever (body 1), from its centroid and from its frame at B.
    fn lever_markers(&self) -> Vec<Marker> {
        let l2 = self.l2;
        self.markers
            .iter()
            .map(|(n, sk)| Marker {
                name: n.clone(),
                body: 1,
                local: Vector2::new(sk * l2 - self.a2 * l2, 0.0),
                local_frame: Vector2::new(sk * l2, 0.0),
                kind: Default::default(),
                depth: 0.0,
            })
            .collect()
    }

    /// The driving coordinates: the crank angle (at the motor's reference speed) and the
    /// slide's position.
    fn drivers(&self) -> Vec<Driver> {
        vec![
            Driver {
                name: "crank angle".into(),
                coordinate: Coordinate::Angle { body: 0 },
                value: self.phi1,
                rate: self.omega,
                prescribed: false,
            },
            Driver {
                name: "slide position x_D".into(),
                coordinate: Coordinate::PointX {
                    body: 3,
                    point: Vector2::zeros(),
                },
                value: self.xd,
                prescribed: false,
                rate: 0.0,
            },
        ]
    }

    /// Assembly guess by construction: C' is where the circles about B (radius l2) and D
    /// (radius |(l3, l4)|) meet, on the side below the line B-D; an error when they cannot.
    fn assembly_guess(&self, bodies: &[Body]) -> Result<Vec<[f64; 3]>, MechanismError> {
        let (l1, l2, l3, l4, phi1, xd) = (self.l1, self.l2, self.l3, self.l4, self.phi1, self.xd);
        let b = Vector2::new(l1 * phi1.cos(), l1 * phi1.sin());
        let d = Vector2::new(xd, self.e);
        let r3 = (l3 * l3 + l4 * l4).sqrt();
        let bd = d - b;
        let dist = bd.norm();
        if dist > l2 + r3 || dist < (l2 - r3).abs() || dist == 0.0 {
            return Err(MechanismError::Assembly(format!(
                "at the start (crank angle {:.1} deg, x_D = {xd} m) B and D are {dist:.4} m apart, but the lever (l2 = {l2} m) and the rocker (|C'D| = {r3:.4} m) can only bridge {:.4} to {:.4} m: check l1, l2, l3, l4, e and xD0",
                phi1.to_degrees(),
                (l2 - r3).abs(),
                l2 + r3
            )));
        }
        let along = (l2 * l2 - r3 * r3 + dist * dist) / (2.0 * dist);
        let h = (l2 * l2 - along * along).max(0.0).sqrt();
        let u = bd / dist;
        let nrm = Vector2::new(u.y, -u.x); // right of B->D: below the line
        let cp = b + u * along + nrm * h;
        let phi2 = (cp - b).y.atan2((cp - b).x);
        let phi3 = (d - cp).y.atan2((d - cp).x) - l4.atan2(l3);
        let origin_to_centroid = |o: Vector2<f64>, phi: f64, body: &Body| {
            let g = o + rot(phi, body.centroid);
            [g.x, g.y, phi]
        };
        Ok(vec![
            origin_to_centroid(Vector2::zeros(), phi1, &bodies[0]),
            origin_to_centroid(b, phi2, &bodies[1]),
            origin_to_centroid(cp, phi3, &bodies[2]),
            [xd, self.e, 0.0],
        ])
    }
}

/// A mechanism read from a file, with the lever's section where the file is the bench's flat form.
#[derive(Debug, Clone)]
pub struct MechanismFile {
    /// The multibody model.
    pub mechanism: Mechanism,
    /// The elastic lever's section (flat bench form only).
    pub lever: Option<LeverSection>,
}

/// Build the model from TOML text (the general form when it has `[[bodies]]`, otherwise the
/// bench's flat form) without turning its first driver: [`crate::file::parse`] less the geometry's
/// check and the tolerances.
pub(crate) fn build_text(text: &str, origin: &str) -> Result<MechanismFile, MechanismError> {
    let file_err = |e: toml::de::Error| MechanismError::Unreadable {
        path: origin.into(),
        hint: " as a mechanism",
        source: flexbench_contracts::SharedCause::new(e),
    };
    let value: toml::Table = toml::from_str(text).map_err(file_err)?;
    let (mechanism, lever) = if value.contains_key("bodies") {
        let f: GeneralFile = toml::from_str(text).map_err(file_err)?;
        (f.build()?, None)
    } else {
        let f: WindPumpFile = toml::from_str(text).map_err(file_err)?;
        let (m, l) = f.build()?;
        (m, Some(l))
    };
    Ok(MechanismFile { mechanism, lever })
}

#[cfg(test)]
mod tests {
    use crate::file::{parse, wind_pump_default};

    /// The flat bench form builds the contract's forces table and derives the lever's mass
    /// (rho * area * l2 = 7850 * 1.5e-4 * 0.45 = 0.529875 kg, J2 = m2 l2^2 / 12).
    #[test]
    fn bench_flat_form_builds_the_contract_model() {
        let m = wind_pump_default();
        assert_eq!(
            m.force_columns(),
            [
                "A_x",
                "A_y",
                "B_x",
                "B_y",
                "C_x",
                "C_y",
                "D_x",
                "D_y",
                "motor_torque",
                "pump_force",
                "slide_normal",
                "slide_moment"
            ]
        );
        let lever = &m.bodies[1];
        assert!((lever.mass - 0.529875).abs() < 1e-12);
        assert!((lever.inertia - 0.529875 * 0.45 * 0.45 / 12.0).abs() < 1e-12);
        // Rocker with its weight: m = 2.3 kg, centroid (0.8*0.075 - 1.5*0.25)/2.3 along x.
        let rocker = &m.bodies[2];
        assert!((rocker.mass - 2.3).abs() < 1e-12);
        assert!((rocker.centroid.x - (0.8 * 0.075 - 1.5 * 0.25) / 2.3).abs() < 1e-12);
        assert_eq!(m.dof(), 2);
        // Assembly branch: C' below the line B-D.
        let q = m.initial_configuration().unwrap();
        let b = crate::constraints::body_point(&q, 0, m.bodies[0].point_rel("B").unwrap());
        let c = crate::constraints::body_point(&q, 2, m.bodies[2].point_rel("C'").unwrap());
        let d = crate::constraints::body_point(&q, 3, nalgebra::Vector2::zeros());
        assert!(crate::cross(d - b, c - b) < 0.0);
        assert!((d - nalgebra::Vector2::new(0.42, 0.15)).norm() < 1e-12);
    }

    #[test]
    fn unknown_general_keys_are_named() {
        let text = "name = \"x\"\n[[bodies]]\nname = \"a\"\nmass = 1.0\ninertia = 1.0\npose = [0.0, 0.0, 0.0]\ncolour = \"red\"\n";
        let e = parse(text, "t.toml").unwrap_err();
        // The parser's words are the cause, after the file's name.
        let cause = std::error::Error::source(&e).map(|c| c.to_string());
        assert!(e.to_string().contains("t.toml"), "{e}");
        assert!(
            cause
                .as_deref()
                .is_some_and(|c| c.contains("unknown field `colour`")),
            "{e}: {cause:?}"
        );
    }

    /// A marker's look in the general form: bright by default, dark, or a colour with its hue;
    /// a colour without a hue, a hue on a bright marker and a tolerance out of range are refused
    /// by key.
    #[test]
    fn marker_kinds_and_their_keys() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../recordings/dfki-pendulum/pendulum-video.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let m = parse(&text, "test").unwrap().mechanism;
        assert_eq!(m.markers[0].kind, flexbench_contracts::MarkerKind::Dark);
        let with = |kind: &str| {
            text.replacen("\nkind = \"dark\"", &format!("\n{kind}"), 1)
                .replacen("\nkind = \"dark\"", "", 1)
        };
        let green = parse(&with("kind = \"colour\"\nhue = 111.0"), "test").unwrap();
        assert_eq!(
            green.mechanism.markers[0].kind,
            flexbench_contracts::MarkerKind::Colour {
                hue_deg: 111.0,
                tolerance_deg: 20.0
            }
        );
        assert_eq!(
            green.mechanism.markers[1].kind,
            flexbench_contracts::MarkerKind::Bright
        );
        let tag = parse(
            &with("kind = \"fiducial\"\ndictionary = \"apriltag_36h11\"\nid = 586"),
            "test",
        )
        .unwrap();
        assert_eq!(
            tag.mechanism.markers[0].kind,
            flexbench_contracts::MarkerKind::Fiducial {
                dictionary: 20,
                id: 586
            }
        );
        for (kind, says) in [
            ("kind = \"colour\"", "needs its hue"),
            ("hue = 100.0", "a hue is for a coloured marker"),
            (
                "kind = \"colour\"\nhue = 100.0\nhue_tolerance = 120.0",
                "at most 90",
            ),
            ("kind = \"colour\"\nhue = 400.0", "needs its hue"),
            ("kind = \"fiducial\"\nid = 3", "needs its dictionary"),
            (
                "kind = \"fiducial\"\ndictionary = \"4x4_50\"",
                "needs its id",
            ),
            (
                "kind = \"fiducial\"\ndictionary = \"4x4_50\"\nid = 50",
                "holds ids 0 to 49",
            ),
            (
                "kind = \"fiducial\"\ndictionary = \"4x4_51\"\nid = 3",
                "not a dictionary OpenCV knows",
            ),
            (
                "dictionary = \"4x4_50\"\nid = 3",
                "are for a printed fiducial",
            ),
        ] {
            let e = parse(&with(kind), "test").unwrap_err().to_string();
            assert!(e.contains(says), "{kind}: {e}");
        }
    }
}
