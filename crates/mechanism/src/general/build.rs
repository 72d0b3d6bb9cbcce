//! The general file's entries made into the mechanism's joints, forces, markers and drivers, each
//! checked by name.

use super::*;

/// The names a general file's entries refer to: the bodies and the ground's points.
pub(super) struct Names<'a> {
    pub(super) bodies: &'a [Body],
    pub(super) ground: &'a BTreeMap<String, [f64; 2]>,
}

impl Names<'_> {
    /// A body by name ("ground" for the bench frame); `key` names the entry for messages.
    pub(super) fn body(&self, name: &str, key: &str) -> Result<BodyRef, MechanismError> {
        if name == "ground" {
            return Ok(BodyRef::Ground);
        }
        self.bodies
            .iter()
            .position(|b| b.name == name)
            .map(BodyRef::Body)
            .ok_or_else(|| {
                key_err(
                    key,
                    format!(
                        "no body called '{name}' (bodies: ground, {})",
                        self.bodies
                            .iter()
                            .map(|b| b.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    }

    /// A moving body by name (not the ground).
    pub(super) fn moving(&self, name: &str, key: &str) -> Result<usize, MechanismError> {
        match self.body(name, key)? {
            BodyRef::Body(i) => Ok(i),
            BodyRef::Ground => Err(key_err(key, "this needs a moving body, not the ground")),
        }
    }

    /// A point "body:point" of a body or of the ground.
    pub(super) fn point(&self, spec: &str, key: &str) -> Result<PointRef, MechanismError> {
        let (b, p) = spec
            .split_once(':')
            .ok_or_else(|| key_err(key, format!("'{spec}' is not of the form \"body:point\"")))?;
        let body = self.body(b, key)?;
        let local = match body {
            BodyRef::Ground => self.ground.get(p).map(|a| Vector2::new(a[0], a[1])),
            BodyRef::Body(i) => self.bodies[i].point_rel(p),
        };
        let local = local.ok_or_else(|| {
            let known: Vec<String> = match body {
                BodyRef::Ground => self.ground.keys().cloned().collect(),
                BodyRef::Body(i) => self.bodies[i].points.keys().cloned().collect(),
            };
            key_err(
                key,
                format!(
                    "body '{b}' has no point '{p}' (its points: {})",
                    known.join(", ")
                ),
            )
        })?;
        Ok(PointRef {
            body,
            name: p.into(),
            local,
        })
    }
}

/// Joint `i` of a general file; `body_angle` gives a body's angle in the assembly guess.
pub(super) fn joint(
    i: usize,
    j: &JointEntry,
    names: &Names,
    body_angle: &dyn Fn(usize) -> f64,
) -> Result<Joint, MechanismError> {
    Ok(match j {
        JointEntry::Revolute {
            name,
            first,
            second,
            ..
        } => {
            let key = format!("joints[{i}] ({name})");
            let a = names.point(first, &format!("{key}.first"))?;
            let b = names.point(second, &format!("{key}.second"))?;
            if a.body == b.body {
                return Err(key_err(&key, "a joint must connect two different bodies"));
            }
            Joint {
                name: name.clone(),
                kind: JointKind::Revolute { a, b },
            }
        }
        JointEntry::Slide {
            name,
            point,
            origin,
            angle,
            ..
        } => {
            let key = format!("joints[{i}] ({name})");
            let p = names.point(point, &format!("{key}.point"))?;
            let BodyRef::Body(body) = p.body else {
                return Err(key_err(
                    &format!("{key}.point"),
                    "the sliding point must be on a moving body",
                ));
            };
            Joint {
                name: name.clone(),
                kind: JointKind::Slide {
                    body,
                    point: p.local,
                    origin: vec2(
                        Some(*origin),
                        &format!("{key}.origin"),
                        "a point of the line",
                    )?,
                    angle: need(
                        Some(*angle),
                        &format!("{key}.angle"),
                        "the line's direction",
                    )?,
                    body_angle: body_angle(body),
                },
            }
        }
    })
}

/// Joint `i`'s friction (`entry` as the file gives it, `joint` as built) as a force element
/// `<joint>_friction`, when it has one.
pub(super) fn joint_friction(
    i: usize,
    entry: &JointEntry,
    joint: &Joint,
) -> Result<Option<ForceElement>, MechanismError> {
    let friction = match entry {
        JointEntry::Revolute { friction, .. } | JointEntry::Slide { friction, .. } => friction,
    };
    let Some(friction) = friction else {
        return Ok(None);
    };
    let law = friction.build(&format!("joints[{i}] ({}).friction", joint.name))?;
    let kind = match &joint.kind {
        JointKind::Revolute { a, b } => ForceKind::JointFriction {
            first: a.body,
            second: b.body,
            law,
        },
        JointKind::Slide {
            body, point, angle, ..
        } => ForceKind::SlideFriction {
            body: *body,
            point: *point,
            angle: *angle,
            law,
        },
    };
    Ok(Some(ForceElement {
        name: format!("{}_friction", joint.name),
        kind,
        actuator: false,
    }))
}

/// Joint `i`'s actuator (`entry` as the file gives it, `joint` as built) as an actuator force
/// element `<joint>_torque` (revolute) or `<joint>_force` (slide), when it has one.
pub(super) fn joint_actuator(
    i: usize,
    entry: &JointEntry,
    joint: &Joint,
) -> Result<Option<ForceElement>, MechanismError> {
    let actuator = match entry {
        JointEntry::Revolute { actuator, .. } | JointEntry::Slide { actuator, .. } => actuator,
    };
    let Some(actuator) = actuator else {
        return Ok(None);
    };
    let key = format!("joints[{i}] ({}).actuator", joint.name);
    let (name, kind) = match &joint.kind {
        JointKind::Revolute { a, b } => (
            format!("{}_torque", joint.name),
            ForceKind::JointTorque {
                first: a.body,
                second: b.body,
                law: actuator.build(&key, ActuatedJoint::Revolute)?,
            },
        ),
        JointKind::Slide {
            body, point, angle, ..
        } => (
            format!("{}_force", joint.name),
            ForceKind::SlideForce {
                body: *body,
                point: *point,
                angle: *angle,
                law: actuator.build(&key, ActuatedJoint::Slide)?,
            },
        ),
    };
    Ok(Some(ForceElement {
        name,
        kind,
        actuator: true,
    }))
}

/// Force element `i` of a general file.
pub(super) fn force(
    i: usize,
    f: &ForceEntry,
    names: &Names,
) -> Result<ForceElement, MechanismError> {
    // Long: one arm per kind of force, each checking its keys one by one: read one arm at a time.
    Ok(match f {
        ForceEntry::Motor {
            name,
            body,
            reaction,
            km,
            omega_ref_rpm,
            actuator,
        } => {
            let key = format!("forces[{i}] ({name})");
            ForceElement {
                name: name.clone(),
                kind: ForceKind::Motor {
                    body: names.moving(body, &format!("{key}.body"))?,
                    reaction: names.body(
                        reaction.as_deref().unwrap_or("ground"),
                        &format!("{key}.reaction"),
                    )?,
                    km: non_negative(Some(*km), &format!("{key}.km"), "N m s")?,
                    omega_ref: need(Some(*omega_ref_rpm), &format!("{key}.omega_ref_rpm"), "rpm")?
                        * std::f64::consts::PI
                        / 30.0,
                },
                actuator: *actuator,
            }
        }
        ForceEntry::Pump {
            name,
            point,
            angle,
            k,
            s0,
            c,
            fr,
            vr,
            actuator,
        } => {
            let key = format!("forces[{i}] ({name})");
            let p = names.point(point, &format!("{key}.point"))?;
            let BodyRef::Body(body) = p.body else {
                return Err(key_err(
                    &format!("{key}.point"),
                    "the pump acts on a moving body",
                ));
            };
            ForceElement {
                name: name.clone(),
                kind: ForceKind::Pump {
                    body,
                    point: p.local,
                    angle: need(Some(*angle), &format!("{key}.angle"), "rad")?,
                    k: non_negative(Some(*k), &format!("{key}.k"), "N/m")?,
                    s0: need(Some(*s0), &format!("{key}.s0"), "m")?,
                    c: non_negative(Some(*c), &format!("{key}.c"), "N s/m")?,
                    fr: non_negative(Some(*fr), &format!("{key}.fr"), "N")?,
                    vr: positive(Some(*vr), &format!("{key}.vr"), "m/s")?,
                },
                actuator: *actuator,
            }
        }
        ForceEntry::Spring {
            name,
            first,
            second,
            k,
            c,
            rest,
            actuator,
        } => {
            let key = format!("forces[{i}] ({name})");
            ForceElement {
                name: name.clone(),
                kind: ForceKind::Spring {
                    a: names.point(first, &format!("{key}.first"))?,
                    b: names.point(second, &format!("{key}.second"))?,
                    k: non_negative(Some(*k), &format!("{key}.k"), "N/m")?,
                    c: non_negative(Some(*c), &format!("{key}.c"), "N s/m")?,
                    rest: non_negative(
                        Some(*rest),
                        &format!("{key}.rest"),
                        "the rest length in m",
                    )?,
                },
                actuator: *actuator,
            }
        }
        ForceEntry::Torque {
            name,
            body,
            reaction,
            torque,
            actuator,
        } => {
            let key = format!("forces[{i}] ({name})");
            ForceElement {
                name: name.clone(),
                kind: ForceKind::Torque {
                    body: names.moving(body, &format!("{key}.body"))?,
                    reaction: names.body(
                        reaction.as_deref().unwrap_or("ground"),
                        &format!("{key}.reaction"),
                    )?,
                    torque: need(Some(*torque), &format!("{key}.torque"), "N m")?,
                },
                actuator: *actuator,
            }
        }
    })
}

/// Marker `i` of a general file (its name's uniqueness is the caller's check).
pub(super) fn marker(i: usize, mk: &MarkerEntry, names: &Names) -> Result<Marker, MechanismError> {
    let key = format!("markers[{i}] ({})", mk.name);
    let b = names.moving(&mk.body, &format!("{key}.body"))?;
    let at = vec2(
        Some(mk.at),
        &format!("{key}.at"),
        "the marker's local position",
    )?;
    if !mk.depth.is_finite() {
        return Err(key_err(
            &format!("{key}.depth"),
            "give the marker's distance in front of the bench plane (towards the camera) in m",
        ));
    }
    Ok(Marker {
        name: mk.name.clone(),
        body: b,
        local: at - names.bodies[b].centroid,
        local_frame: at,
        kind: marker_kind(mk, &key)?,
        depth: mk.depth,
    })
}

/// The tracker's kind of marker entry `mk` (`key` names it): a colour needs its hue.
pub(super) fn marker_kind(
    mk: &MarkerEntry,
    key: &str,
) -> Result<flexbench_contracts::MarkerKind, MechanismError> {
    use flexbench_contracts::MarkerKind;
    let colour_keys = mk.hue.is_some() || mk.hue_tolerance.is_some();
    let fiducial_keys = mk.dictionary.is_some() || mk.id.is_some();
    if fiducial_keys && mk.kind != MarkerLook::Fiducial {
        return Err(key_err(
            &format!("{key}.dictionary"),
            "a dictionary and an id are for a printed fiducial: give kind = \"fiducial\" with them, or leave them out",
        ));
    }
    match mk.kind {
        MarkerLook::Bright | MarkerLook::Dark | MarkerLook::Fiducial | MarkerLook::Template
            if colour_keys =>
        {
            Err(key_err(
                &format!("{key}.hue"),
                "a hue is for a coloured marker: give kind = \"colour\" with it, or leave it out",
            ))
        }
        MarkerLook::Bright => Ok(MarkerKind::Bright),
        MarkerLook::Dark => Ok(MarkerKind::Dark),
        MarkerLook::Fiducial => fiducial_kind(mk, key),
        MarkerLook::Template => Ok(MarkerKind::Template),
        MarkerLook::Colour => {
            let hue = mk.hue.filter(|h| h.is_finite() && (0.0..360.0).contains(h));
            let tol = mk.hue_tolerance.unwrap_or(20.0);
            match hue {
                Some(hue_deg) if tol > 0.0 && tol <= 90.0 => Ok(MarkerKind::Colour {
                    hue_deg,
                    tolerance_deg: tol,
                }),
                Some(_) => Err(key_err(
                    &format!("{key}.hue_tolerance"),
                    format!("{tol}: give the hues' half-width in degrees, above 0 and at most 90 (default 20)"),
                )),
                None => Err(key_err(
                    &format!("{key}.hue"),
                    "a coloured marker needs its hue in degrees, 0 to 360 (0 red, 120 green, 240 blue)",
                )),
            }
        }
    }
}

/// A fiducial marker's dictionary (by OpenCV's name) and identity, checked against the
/// dictionary's size.
pub(super) fn fiducial_kind(
    mk: &MarkerEntry,
    key: &str,
) -> Result<flexbench_contracts::MarkerKind, MechanismError> {
    let names = || {
        flexbench_contracts::FIDUCIAL_DICTIONARIES
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let name = mk.dictionary.as_deref().ok_or_else(|| {
        key_err(
            &format!("{key}.dictionary"),
            format!("a fiducial needs its dictionary: one of {}", names()),
        )
    })?;
    let dictionary = flexbench_contracts::FIDUCIAL_DICTIONARIES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, d)| *d)
        .ok_or_else(|| {
            key_err(
                &format!("{key}.dictionary"),
                format!(
                    "'{name}' is not a dictionary OpenCV knows: one of {}",
                    names()
                ),
            )
        })?;
    let size = fiducial_dictionary_size(name);
    match mk.id {
        Some(id) if id < size => Ok(flexbench_contracts::MarkerKind::Fiducial { dictionary, id }),
        Some(id) => Err(key_err(
            &format!("{key}.id"),
            format!("{id}: dictionary {name} holds ids 0 to {}", size - 1),
        )),
        None => Err(key_err(
            &format!("{key}.id"),
            "a fiducial needs its id in its dictionary (printed beside it by the generator)",
        )),
    }
}

/// How many markers a predefined dictionary holds (the number in its name; OpenCV 4.6's
/// original ArUco 1024, AprilTag 16h5 30, 25h9 35, 36h10 2320, 36h11 587).
pub(super) fn fiducial_dictionary_size(name: &str) -> u32 {
    match name.to_ascii_lowercase().as_str() {
        "aruco_original" => 1024,
        "apriltag_16h5" => 30,
        "apriltag_25h9" => 35,
        "apriltag_36h10" => 2320,
        "apriltag_36h11" => 587,
        n => n
            .rsplit('_')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    }
}

/// Driving coordinate `i` of a general file.
pub(super) fn driver(i: usize, d: &DriverEntry, names: &Names) -> Result<Driver, MechanismError> {
    let key = format!("drivers[{i}] ({})", d.name);
    let body = names.moving(&d.body, &format!("{key}.body"))?;
    let point = || -> Result<Vector2<f64>, MechanismError> {
        let p = d.point.as_deref().ok_or_else(|| {
            key_err(
                &format!("{key}.point"),
                "missing: x and y coordinates need a point",
            )
        })?;
        names.bodies[body].point_rel(p).ok_or_else(|| {
            key_err(
                &format!("{key}.point"),
                format!("body '{}' has no point '{p}'", d.body),
            )
        })
    };
    let coordinate = match d.coordinate.as_str() {
        "angle" => Coordinate::Angle { body },
        "x" => Coordinate::PointX {
            body,
            point: point()?,
        },
        "y" => Coordinate::PointY {
            body,
            point: point()?,
        },
        other => {
            return Err(key_err(
                &format!("{key}.coordinate"),
                format!("'{other}' is not one of angle, x, y"),
            ))
        }
    };
    Ok(Driver {
        name: d.name.clone(),
        coordinate,
        value: need(Some(d.value), &format!("{key}.value"), "rad or m")?,
        rate: need(Some(d.rate), &format!("{key}.rate"), "rad/s or m/s")?,
        prescribed: d.prescribed,
    })
}
