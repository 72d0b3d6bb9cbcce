//! The coupled system: every body of a mechanism file in its floating frame ([`crate::body`]),
//! the file's joints on the bodies' points (an elastic body's joints act on its nodes' deformed
//! positions), the prescribed drivers as rheonomic constraints, and the force elements.
//!
//! ```text
//! [ M(p)   Phi_p^T ] [ p''    ]   [ Q(p, p') ]
//! [ Phi_p    0     ] [ lambda ] = [ gamma    ]
//! ```
//!
//! (index-1 form, as the rigid simulation's; Nikravesh ch. 13). Rows: two per joint (a revolute
//! pin: r_a - r_b = 0; a slide: n . (r_P - o) = 0 and theta - theta_0 = 0), then one per
//! prescribed driver (theta - (value + rate t) = 0, or a point's x or y). The power of the
//! constraint forces -Phi_p^T lambda is lambda . Phi_t: zero for the joints, -lambda rate for a
//! prescribed driver, which is the work the energy balance counts for it.

use nalgebra::{DMatrix, DVector, Vector2};

use flexbench_mechanism::elastic::Elastic;
use flexbench_mechanism::model::{BodyRef, Coordinate, JointKind, Mechanism, PointRef};
use flexbench_numeric::lu::Lu;

use crate::beam::beam_body;
use crate::body::{BodyState, FloatingBody, Invariants, PointShape};
use crate::FlexError;

/// A point a constraint holds: on a body, or fixed on the ground (its `at` in the bench frame).
#[derive(Debug, Clone, PartialEq)]
pub struct Attach {
    /// The body, None for the ground.
    pub body: Option<usize>,
    /// The point's shape on that body.
    pub point: PointShape,
}

/// One constraint of the coupled system.
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    /// r_a - r_b = 0 (2 rows).
    Revolute {
        /// Joint name.
        name: String,
        /// First point.
        a: Attach,
        /// Second point.
        b: Attach,
    },
    /// n . (r_P - origin) = 0 and theta - angle0 = 0 (2 rows), on a rigid body.
    Slide {
        /// Joint name.
        name: String,
        /// The sliding point.
        p: Attach,
        /// A point of the line, bench frame, m.
        origin: Vector2<f64>,
        /// The line's left normal.
        normal: Vector2<f64>,
        /// The body's locked angle, rad.
        angle: f64,
    },
    /// A prescribed coordinate: value + rate t (1 row).
    Driver {
        /// Driver name.
        name: String,
        /// The body.
        body: usize,
        /// What is prescribed.
        what: Prescribed,
        /// Value at t = 0, rad or m.
        value: f64,
        /// Rate, rad/s or m/s.
        rate: f64,
    },
}

/// The coordinate a prescribed driver sets.
#[derive(Debug, Clone, PartialEq)]
pub enum Prescribed {
    /// The body's angle in the file's terms (its frame's angle minus the frame's offset), rad.
    Angle(f64),
    /// The bench-frame x of a point, m.
    X(PointShape),
    /// The bench-frame y of a point, m.
    Y(PointShape),
}

impl Constraint {
    /// Rows it adds.
    pub fn rows(&self) -> usize {
        match self {
            Constraint::Driver { .. } => 1,
            _ => 2,
        }
    }
}

/// The coupled rigid and elastic system of a mechanism file.
#[derive(Debug, Clone)]
pub struct System {
    /// The mechanism file's model (force elements, markers, names).
    pub mechanism: Mechanism,
    /// Every body in its floating frame, in the file's order.
    pub bodies: Vec<FloatingBody>,
    /// Offset of each body's frame angle from the file's local frame, rad.
    pub frame_angle: Vec<f64>,
    /// First coordinate of each body in p.
    pub offsets: Vec<usize>,
    /// Constraints in row order.
    pub constraints: Vec<Constraint>,
    /// Gravity, bench frame, m/s^2.
    pub gravity: Vector2<f64>,
}

/// Bench-frame (sine, cosine) of a body's angle at p.
fn trig(p: &DVector<f64>, off: usize) -> (f64, f64) {
    p[off + 2].sin_cos()
}

/// The points of body `k` that joints act on, its local frame (m).
fn joint_points(mechanism: &Mechanism, k: usize) -> Vec<Vector2<f64>> {
    let centroid = mechanism.bodies[k].centroid;
    mechanism
        .joints
        .iter()
        .flat_map(|j| match &j.kind {
            JointKind::Revolute { a, b } => [a, b]
                .into_iter()
                .filter(|p| p.body == BodyRef::Body(k))
                .map(|p| p.local + centroid)
                .collect::<Vec<_>>(),
            JointKind::Slide { body, point, .. } if *body == k => vec![point + centroid],
            JointKind::Slide { .. } => Vec::new(),
        })
        .collect()
}

impl System {
    /// Build the coupled system of `mechanism`: its elastic bodies from their `[bodies.elastic]`
    /// tables, the others rigid.
    pub fn new(mechanism: &Mechanism) -> Result<System, FlexError> {
        let mut bodies = Vec::new();
        let mut frame_angle = Vec::new();
        let mut offsets = Vec::new();
        let mut n = 0;
        for (k, b) in mechanism.bodies.iter().enumerate() {
            let extra: Vec<(String, Vector2<f64>)> = mechanism
                .markers
                .iter()
                .filter(|m| mechanism.bodies[m.body].name == b.name)
                .map(|m| (format!("marker:{}", m.name), m.local_frame))
                .collect();
            let (body, alpha) = match &b.elastic {
                None => (rigid_body(b, &extra), 0.0),
                Some(e) => match &e.model {
                    Elastic::Beam(spec) => beam_body(b, spec, &extra, &joint_points(mechanism, k))?,
                    Elastic::Reduced(spec) => (reduced_body(b, spec, &extra), 0.0),
                    Elastic::Plate(spec) => crate::plate::plate_body(b, spec, &extra)?,
                },
            };
            if let Some(e) = &b.elastic {
                for (what, v) in [("initial", &e.initial), ("initial_rate", &e.initial_rate)] {
                    if !v.is_empty() && v.len() != body.inv.elastic() {
                        return Err(FlexError::Model(format!(
                            "body '{}': elastic.{what} has {} values but the body has {} elastic coordinates",
                            b.name,
                            v.len(),
                            body.inv.elastic()
                        )));
                    }
                }
            }
            offsets.push(n);
            n += body.ncoords();
            bodies.push(body);
            frame_angle.push(alpha);
        }
        let mut sys = System {
            mechanism: mechanism.clone(),
            bodies,
            frame_angle,
            offsets,
            constraints: Vec::new(),
            gravity: mechanism.gravity,
        };
        sys.constraints = sys.build_constraints()?;
        sys.check_force_elements()?;
        Ok(sys)
    }

    /// The joints and prescribed drivers as constraints on the bodies' point shapes.
    fn build_constraints(&self) -> Result<Vec<Constraint>, FlexError> {
        let mut out = Vec::new();
        for j in &self.mechanism.joints {
            out.push(match &j.kind {
                JointKind::Revolute { a, b } => Constraint::Revolute {
                    name: j.name.clone(),
                    a: self.attach(a)?,
                    b: self.attach(b)?,
                },
                JointKind::Slide {
                    body,
                    point,
                    origin,
                    angle,
                    body_angle,
                } => {
                    self.require_rigid(*body, &format!("slide joint '{}'", j.name))?;
                    let (_, normal) = flexbench_mechanism::constraints::slide_axes(*angle);
                    Constraint::Slide {
                        name: j.name.clone(),
                        p: Attach {
                            body: Some(*body),
                            point: PointShape {
                                at: *point,
                                phi: DMatrix::zeros(2, 0),
                            },
                        },
                        origin: *origin,
                        normal,
                        angle: *body_angle,
                    }
                }
            });
        }
        for d in self.mechanism.drivers.iter().filter(|d| d.prescribed) {
            let (body, what) = match &d.coordinate {
                Coordinate::Angle { body } => (*body, Prescribed::Angle(self.frame_angle[*body])),
                Coordinate::PointX { body, point } | Coordinate::PointY { body, point } => {
                    self.require_rigid(*body, &format!("prescribed driver '{}'", d.name))?;
                    let shape = PointShape {
                        at: *point,
                        phi: DMatrix::zeros(2, 0),
                    };
                    let what = if matches!(d.coordinate, Coordinate::PointX { .. }) {
                        Prescribed::X(shape)
                    } else {
                        Prescribed::Y(shape)
                    };
                    (*body, what)
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

    fn require_rigid(&self, body: usize, what: &str) -> Result<(), FlexError> {
        if self.bodies[body].inv.elastic() > 0 {
            return Err(FlexError::Model(format!(
                "{what} acts on the elastic body '{}'; put it on a rigid body (a pin between the elastic body and a rigid block carries it)",
                self.bodies[body].name
            )));
        }
        Ok(())
    }

    /// A joint's point as an attachment to a body's point shape (by name) or to the ground.
    fn attach(&self, p: &PointRef) -> Result<Attach, FlexError> {
        match p.body {
            BodyRef::Ground => Ok(Attach {
                body: None,
                point: PointShape {
                    at: p.local,
                    phi: DMatrix::zeros(2, 0),
                },
            }),
            BodyRef::Body(i) => {
                let point = self.bodies[i].points.get(&p.name).cloned().ok_or_else(|| {
                    FlexError::Model(format!(
                        "body '{}' has no point '{}'",
                        self.bodies[i].name, p.name
                    ))
                })?;
                Ok(Attach {
                    body: Some(i),
                    point,
                })
            }
        }
    }

    /// Force elements may act on rigid bodies only (their laws are the rigid model's).
    fn check_force_elements(&self) -> Result<(), FlexError> {
        let q = self.mechanism_guess();
        for f in &self.mechanism.forces {
            for l in f.pattern(&q) {
                if self.bodies[l.body].inv.elastic() > 0 {
                    return Err(FlexError::Model(format!(
                        "force element '{}' acts on the elastic body '{}'; the coupled simulation applies force elements to rigid bodies only (attach it to a rigid body)",
                        f.name, self.bodies[l.body].name
                    )));
                }
            }
        }
        Ok(())
    }

    fn mechanism_guess(&self) -> DVector<f64> {
        DVector::from_iterator(
            self.mechanism.ncoords(),
            self.mechanism.guess.iter().flatten().copied(),
        )
    }

    /// Number of coordinates of p.
    pub fn ncoords(&self) -> usize {
        self.offsets
            .last()
            .map_or(0, |o| o + self.bodies.last().map_or(0, |b| b.ncoords()))
    }

    /// Number of constraint rows.
    pub fn nconstraints(&self) -> usize {
        self.constraints.iter().map(|c| c.rows()).sum()
    }

    /// Body `k`'s state at (p, p').
    pub fn state<'a>(&self, k: usize, p: &'a DVector<f64>, pd: &'a DVector<f64>) -> BodyState<'a> {
        let o = self.offsets[k];
        let n = self.bodies[k].inv.elastic();
        BodyState {
            sc: trig(p, o),
            w: pd[o + 2],
            q: &p.as_slice()[o + 3..o + 3 + n],
            qd: &pd.as_slice()[o + 3..o + 3 + n],
        }
    }

    /// The rigid model's coordinates (centroid x, y, angle per body) of the frames at p, and
    /// their rates: what the force elements' laws read.
    pub fn shadow(&self, p: &DVector<f64>, pd: &DVector<f64>) -> (DVector<f64>, DVector<f64>) {
        let nb = self.bodies.len();
        let mut q = DVector::zeros(3 * nb);
        let mut qd = DVector::zeros(3 * nb);
        for (k, b) in self.mechanism.bodies.iter().enumerate() {
            let o = self.offsets[k];
            let phi = p[o + 2] - self.frame_angle[k];
            let arm = flexbench_mechanism::rot(phi, b.centroid - self.bodies[k].origin);
            let w = pd[o + 2];
            q[3 * k] = p[o] + arm.x;
            q[3 * k + 1] = p[o + 1] + arm.y;
            q[3 * k + 2] = phi;
            qd[3 * k] = pd[o] - w * arm.y;
            qd[3 * k + 1] = pd[o + 1] + w * arm.x;
            qd[3 * k + 2] = w;
        }
        (q, qd)
    }

    /// Position of an attachment at p, bench frame, m.
    pub fn position(&self, a: &Attach, p: &DVector<f64>) -> Vector2<f64> {
        match a.body {
            None => a.point.at,
            Some(k) => {
                // The arm reads only the angle and q; p stands in for the unused rates.
                let o = self.offsets[k];
                Vector2::new(p[o], p[o + 1]) + self.bodies[k].arm(&a.point, &self.state(k, p, p))
            }
        }
    }
}

/// A rigid body of the file in its floating frame: the frame at the centroid.
fn rigid_body(
    b: &flexbench_mechanism::model::Body,
    extra: &[(String, Vector2<f64>)],
) -> FloatingBody {
    let points = crate::body::named_points(b, extra)
        .map(|(k, v)| {
            (
                k,
                PointShape {
                    at: v - b.centroid,
                    phi: DMatrix::zeros(2, 0),
                },
            )
        })
        .collect();
    FloatingBody {
        name: b.name.clone(),
        inv: Invariants::rigid(b.mass, b.inertia),
        points,
        origin: b.centroid,
    }
}

/// A reduced elastic body: the frame is the file's local frame; points without a given shape
/// do not move in it (Phi = 0).
fn reduced_body(
    b: &flexbench_mechanism::model::Body,
    spec: &flexbench_mechanism::elastic::ReducedSpec,
    extra: &[(String, Vector2<f64>)],
) -> FloatingBody {
    let n = spec.mass.nrows();
    let inv = Invariants {
        mass: b.mass,
        first_moment: b.centroid * b.mass,
        inertia_origin: b.inertia + b.mass * b.centroid.norm_squared(),
        static_moment: spec.static_moment.clone(),
        axial_moment: spec.axial_moment.clone(),
        cross_moment: spec.cross_moment.clone(),
        mass_qq: spec.mass.clone(),
        gyroscopic: spec.gyroscopic.clone(),
        stiffness: spec.stiffness.clone(),
        damping: spec.damping.clone(),
    };
    let points = crate::body::named_points(b, extra)
        .map(|(k, v)| {
            let phi = spec
                .shapes
                .get(&k)
                .cloned()
                .unwrap_or_else(|| DMatrix::zeros(2, n));
            (k, PointShape { at: v, phi })
        })
        .collect();
    FloatingBody {
        name: b.name.clone(),
        inv,
        points,
        origin: Vector2::zeros(),
    }
}

impl System {
    /// Constraint residuals Phi(p, t) (m and rad).
    pub fn phi(&self, p: &DVector<f64>, t: f64) -> DVector<f64> {
        let mut out = DVector::zeros(self.nconstraints());
        let mut r = 0;
        for c in &self.constraints {
            match c {
                Constraint::Revolute { a, b, .. } => {
                    let d = self.position(a, p) - self.position(b, p);
                    out[r] = d.x;
                    out[r + 1] = d.y;
                }
                Constraint::Slide {
                    p: a,
                    origin,
                    normal,
                    angle,
                    ..
                } => {
                    out[r] = normal.dot(&(self.position(a, p) - origin));
                    out[r + 1] = p[self.offsets[a.body.unwrap_or(0)] + 2] - angle;
                }
                Constraint::Driver {
                    body,
                    what,
                    value,
                    rate,
                    ..
                } => {
                    let target = value + rate * t;
                    let o = self.offsets[*body];
                    let at = |s: &PointShape| {
                        self.position(
                            &Attach {
                                body: Some(*body),
                                point: s.clone(),
                            },
                            p,
                        )
                    };
                    out[r] = match what {
                        Prescribed::Angle(alpha) => p[o + 2] - alpha,
                        Prescribed::X(s) => at(s).x,
                        Prescribed::Y(s) => at(s).y,
                    } - target;
                }
            }
            r += c.rows();
        }
        out
    }

    /// Phi_t: the constraints' explicit time rate (minus each prescribed driver's rate).
    pub fn phi_t(&self) -> DVector<f64> {
        let mut out = DVector::zeros(self.nconstraints());
        let mut r = 0;
        for c in &self.constraints {
            if let Constraint::Driver { rate, .. } = c {
                out[r] = -rate;
            }
            r += c.rows();
        }
        out
    }

    /// Add `sign` times an attachment's Jacobian into rows r, r+1 (or only the rows `pick`
    /// selects through the 1 x 2 weight `w`), and return its velocity-squared acceleration.
    fn add_point(
        &self,
        jac: &mut DMatrix<f64>,
        r: usize,
        a: &Attach,
        w: &DMatrix<f64>,
        p: &DVector<f64>,
        pd: &DVector<f64>,
    ) -> DVector<f64> {
        let Some(k) = a.body else {
            return DVector::zeros(w.nrows());
        };
        let st = self.state(k, p, pd);
        let o = self.offsets[k];
        let jp = w * self.bodies[k].point_jacobian(&a.point, &st);
        let mut block = jac.view_mut((r, o), (w.nrows(), jp.ncols()));
        block += &jp;
        let av = self.bodies[k].point_quadratic(&a.point, &st);
        w * DVector::from_column_slice(&[av.x, av.y])
    }

    /// The constraint Jacobian Phi_p and gamma (Phi_p p'' = gamma) at (p, p').
    pub fn jacobian_gamma(
        &self,
        p: &DVector<f64>,
        pd: &DVector<f64>,
    ) -> (DMatrix<f64>, DVector<f64>) {
        let (nc, n) = (self.nconstraints(), self.ncoords());
        let mut jac = DMatrix::zeros(nc, n);
        let mut gamma = DVector::zeros(nc);
        let eye = DMatrix::identity(2, 2);
        let mut r = 0;
        for c in &self.constraints {
            match c {
                Constraint::Revolute { a, b, .. } => {
                    let ga = self.add_point(&mut jac, r, a, &eye, p, pd);
                    let gb = self.add_point(&mut jac, r, b, &(-&eye), p, pd);
                    gamma.rows_mut(r, 2).copy_from(&(-(ga + gb)));
                }
                Constraint::Slide { p: a, normal, .. } => {
                    let w = DMatrix::from_row_slice(1, 2, &[normal.x, normal.y]);
                    let g = self.add_point(&mut jac, r, a, &w, p, pd);
                    gamma[r] = -g[0];
                    jac[(r + 1, self.offsets[a.body.unwrap_or(0)] + 2)] = 1.0;
                }
                Constraint::Driver { body, what, .. } => {
                    let o = self.offsets[*body];
                    let row = |s: &PointShape, w: [f64; 2], jac: &mut DMatrix<f64>| {
                        let wm = DMatrix::from_row_slice(1, 2, &w);
                        -self.add_point(
                            jac,
                            r,
                            &Attach {
                                body: Some(*body),
                                point: s.clone(),
                            },
                            &wm,
                            p,
                            pd,
                        )[0]
                    };
                    gamma[r] = match what {
                        Prescribed::Angle(_) => {
                            jac[(r, o + 2)] = 1.0;
                            0.0
                        }
                        Prescribed::X(s) => row(s, [1.0, 0.0], &mut jac),
                        Prescribed::Y(s) => row(s, [0.0, 1.0], &mut jac),
                    };
                }
            }
            r += c.rows();
        }
        (jac, gamma)
    }

    /// The block-diagonal mass matrix M(p) and the forces Q(p, p') (velocity, gravity, elastic
    /// and the force elements').
    pub fn mass_forces(&self, p: &DVector<f64>, pd: &DVector<f64>) -> (DMatrix<f64>, DVector<f64>) {
        let n = self.ncoords();
        let mut m = DMatrix::zeros(n, n);
        let mut f = DVector::zeros(n);
        for (k, b) in self.bodies.iter().enumerate() {
            let st = self.state(k, p, pd);
            let o = self.offsets[k];
            let nk = b.ncoords();
            m.view_mut((o, o), (nk, nk)).copy_from(&b.mass_matrix(&st));
            let mut fk = f.rows_mut(o, nk);
            fk += b.forces(&st, self.gravity);
        }
        if !self.mechanism.forces.is_empty() {
            let (q, qd) = self.shadow(p, pd);
            for fe in &self.mechanism.forces {
                let mag = fe.magnitude(&q, &qd);
                for l in fe.pattern(&q) {
                    let g = l.generalized();
                    let o = self.offsets[l.body];
                    for c in 0..3 {
                        f[o + c] += mag * g[c];
                    }
                }
            }
        }
        (m, f)
    }

    /// Accelerations p'' and multipliers lambda at (p, p').
    pub fn forward(
        &self,
        p: &DVector<f64>,
        pd: &DVector<f64>,
    ) -> Result<(DVector<f64>, DVector<f64>), String> {
        let (n, nc) = (self.ncoords(), self.nconstraints());
        let (m, f) = self.mass_forces(p, pd);
        let (jac, gamma) = self.jacobian_gamma(p, pd);
        let mut a = DMatrix::zeros(n + nc, n + nc);
        a.view_mut((0, 0), (n, n)).copy_from(&m);
        a.view_mut((n, 0), (nc, n)).copy_from(&jac);
        a.view_mut((0, n), (n, nc)).copy_from(&jac.transpose());
        let mut rhs = DVector::zeros(n + nc);
        rhs.rows_mut(0, n).copy_from(&f);
        rhs.rows_mut(n, nc).copy_from(&gamma);
        let sol = Lu::new(a).solve(&rhs).ok_or_else(|| {
            "singular augmented matrix: a toggle position, redundant joints, or a body with no mass in a free direction".to_string()
        })?;
        if sol.iter().any(|v| !v.is_finite()) {
            return Err("the accelerations are not finite (a singular configuration)".into());
        }
        Ok((sol.rows(0, n).into_owned(), sol.rows(n, nc).into_owned()))
    }

    /// Kinetic, strain and gravity energy at (p, p'), J.
    pub fn energies(&self, p: &DVector<f64>, pd: &DVector<f64>) -> (f64, f64, f64) {
        let (mut t, mut v, mut g) = (0.0, 0.0, 0.0);
        for (k, b) in self.bodies.iter().enumerate() {
            let st = self.state(k, p, pd);
            let o = self.offsets[k];
            t += b.kinetic_energy(&st, &pd.as_slice()[o..o + b.ncoords()]);
            v += b.strain_energy(st.q);
            g += b.gravity_potential(Vector2::new(p[o], p[o + 1]), &st, self.gravity);
        }
        (t, v, g)
    }

    /// The power of each force element, each prescribed driver and the elastic damping (minus
    /// the power it dissipates), W, in that order: what the energy balance integrates.
    pub fn powers(&self, p: &DVector<f64>, pd: &DVector<f64>, lambda: &DVector<f64>) -> Vec<f64> {
        let (q, qd) = self.shadow(p, pd);
        let mut out = self.mechanism.element_powers(&q, &qd);
        let phi_t = self.phi_t();
        let mut r = 0;
        for c in &self.constraints {
            if matches!(c, Constraint::Driver { .. }) {
                out.push(lambda[r] * phi_t[r]);
            }
            r += c.rows();
        }
        let damping: f64 = (0..self.bodies.len())
            .map(|k| self.bodies[k].damping_power(self.state(k, p, pd).qd))
            .sum();
        out.push(-damping);
        out
    }

    /// Names of [`System::powers`]' entries.
    pub fn power_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .mechanism
            .forces
            .iter()
            .map(|f| f.name.clone())
            .collect();
        out.extend(self.constraints.iter().filter_map(|c| match c {
            Constraint::Driver { name, .. } => Some(format!("driver {name}")),
            _ => None,
        }));
        out.push("elastic damping".into());
        out
    }
}
