//! An elastic beam's floating-frame invariants from the FEM stage's beam elements.
//!
//! The beam runs from its `from` point (the frame's origin) to its `to` point along the frame's
//! x axis. Its element matrices are Kane's (the FEM stage's [`flexbench_fem::element`]), assembled
//! over the mesh (scatter-add, the same numbers as Maggi's projection [A]^T blockdiag [A],
//! [`flexbench_fem::assembly::Mesh::maggi_projection`]), then restricted to the degrees of freedom
//! the frame leaves free. With x = (X, 0) on the axis, the invariants of [`crate::body`] are:
//!
//! ```text
//! m = rho A L, s0 = (rho A L^2 / 2, 0), J_O = rho A L^3 / 3 + rho I L (section's rotary inertia)
//! S = [m_O]^T, c_a = {q_x}, c_c = {q_y}, M_qq = [m], B = -[S_fem], K = [k], D = beta [k]
//! ```
//!
//! ([S_fem] = int rho A (Nv Nu^T - Nu Nv^T) dX is the FEM stage's skew coupling, B_ij =
//! int rho A (Nu_i Nv_j - Nv_i Nu_j) dX.)

use std::collections::BTreeMap;

use nalgebra::{DMatrix, DVector, Vector2};

use flexbench_fem::assembly::{Lever, Mesh};
use flexbench_fem::element::{ElementKind, Field, Section};
use flexbench_fem::modal::symmetric_modes;
use flexbench_mechanism::elastic::{BeamElement, BeamFrame, BeamSpec, Reduction};
use flexbench_mechanism::model::Body;

use crate::body::{FloatingBody, Invariants, PointShape};
use crate::FlexError;

/// Points off the beam's axis by more than this fraction of its length cannot be carried.
const AXIS_TOLERANCE: f64 = 1e-9;

/// The beam of `body` (declared by `spec`) as a floating body, with the angle (rad) of its axis
/// in the file's local frame.
/// `extra` are further named points to carry (the markers), local frame; `joints` the points
/// (local frame, m) that joints act on, Craig-Bampton's interface.
pub fn beam_body(
    body: &Body,
    spec: &BeamSpec,
    extra: &[(String, Vector2<f64>)],
    joints: &[Vector2<f64>],
) -> Result<(FloatingBody, f64), FlexError> {
    let model = |s: String| FlexError::Model(s);
    let a = body.points[&spec.from];
    let b = body.points[&spec.to];
    let axis = b - a;
    let length = axis.norm();
    if length <= 0.0 || !length.is_finite() {
        return Err(model(format!(
            "body '{}': the beam's ends coincide",
            body.name
        )));
    }
    let alpha = axis.y.atan2(axis.x);
    let section = Section {
        young: spec.young,
        density: spec.density,
        area: spec.area,
        inertia: spec.second_moment,
    };
    let fem = |source| FlexError::Fem {
        body: body.name.clone(),
        source,
    };
    let lever = Lever::new(length, section).map_err(fem)?;
    let kind = match spec.element {
        BeamElement::Frame => ElementKind::Frame,
        BeamElement::Quintic => ElementKind::Quintic,
    };
    let mesh = Mesh::new(lever, kind, spec.elements).map_err(fem)?;
    let free = free_dofs(&mesh, spec.frame);
    let interface = joint_coordinates(joints, &mesh, &free, a, alpha);
    let (inv, basis) = invariants(&mesh, &free, spec, &interface)?;
    let mut points = BTreeMap::new();
    for (name, x) in axis_points(body, extra, a, alpha) {
        if x.y.abs() > AXIS_TOLERANCE * length
            || x.x < -AXIS_TOLERANCE * length
            || x.x > length * (1.0 + AXIS_TOLERANCE)
        {
            return Err(model(format!(
                "body '{}': point '{name}' is {:.6} m off the beam's axis or beyond its ends; an elastic beam carries joints and markers only on its axis from '{}' to '{}' (move the point onto it, or split the body)",
                body.name,
                x.y.abs().max((-x.x).max(x.x - length)),
                spec.from,
                spec.to
            )));
        }
        let phi = shape_at(&mesh, &free, x.x.clamp(0.0, length)) * &basis;
        points.insert(
            name,
            PointShape {
                at: Vector2::new(x.x.clamp(0.0, length), 0.0),
                phi,
            },
        );
    }
    Ok((
        FloatingBody {
            name: body.name.clone(),
            inv,
            points,
            origin: a,
        },
        alpha,
    ))
}

/// The degrees of freedom the frame leaves free, ascending.
fn free_dofs(mesh: &Mesh, frame: BeamFrame) -> Vec<usize> {
    let last = mesh.elements;
    let held: Vec<Option<usize>> = match frame {
        BeamFrame::Chord => vec![
            mesh.dof_of(0, Field::Axial, 0),
            mesh.dof_of(0, Field::Transverse, 0),
            mesh.dof_of(last, Field::Transverse, 0),
        ],
        BeamFrame::Tangent => vec![
            mesh.dof_of(0, Field::Axial, 0),
            mesh.dof_of(0, Field::Transverse, 0),
            mesh.dof_of(0, Field::Transverse, 1),
        ],
    };
    (0..mesh.dofs())
        .filter(|d| !held.contains(&Some(*d)))
        .collect()
}

/// The elastic coordinates (indices into `free`) of the translations of the nodes nearest to
/// the `joints` (local frame, m), ascending: the interface Craig-Bampton keeps.
fn joint_coordinates(
    joints: &[Vector2<f64>],
    mesh: &Mesh,
    free: &[usize],
    a: Vector2<f64>,
    alpha: f64,
) -> Vec<usize> {
    let xs = mesh.node_positions();
    let mut out: Vec<usize> = joints
        .iter()
        .map(|p| to_axis(*p, a, alpha).x)
        .flat_map(|x| {
            let node = (0..xs.len())
                .min_by(|&i, &j| (xs[i] - x).abs().total_cmp(&(xs[j] - x).abs()))
                .unwrap_or(0);
            [Field::Axial, Field::Transverse]
                .into_iter()
                .filter_map(move |f| mesh.dof_of(node, f, 0))
        })
        .filter_map(|d| free.iter().position(|&f| f == d))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The invariants on the free degrees of freedom and the basis they are in (identity, or the
/// reduction's basis when `spec.modes` asks for one; `interface`: the joints' coordinates,
/// for Craig-Bampton).
fn invariants(
    mesh: &Mesh,
    free: &[usize],
    spec: &BeamSpec,
    interface: &[usize],
) -> Result<(Invariants, DMatrix<f64>), FlexError> {
    let g = mesh.assemble();
    let n = free.len();
    let sub = |m: &DMatrix<f64>| DMatrix::from_fn(n, n, |i, j| m[(free[i], free[j])]);
    let (ra, l) = (spec.density * spec.area, mesh.lever.length);
    let full = Invariants {
        mass: ra * l,
        first_moment: Vector2::new(ra * l * l / 2.0, 0.0),
        inertia_origin: ra * l.powi(3) / 3.0 + spec.density * spec.second_moment * l,
        static_moment: DMatrix::from_fn(2, n, |r, j| g.m_o[(free[j], r)]),
        axial_moment: DVector::from_fn(n, |j, _| g.q_x[free[j]]),
        cross_moment: DVector::from_fn(n, |j, _| g.q_y[free[j]]),
        mass_qq: sub(&g.m),
        gyroscopic: -sub(&g.s),
        stiffness: sub(&g.k),
        damping: sub(&g.k) * spec.damping_beta,
    };
    match (spec.reduction, spec.modes) {
        (Reduction::CraigBampton, Some(k)) => craig_bampton(full, k, interface),
        _ => reduce(full, spec.modes),
    }
}

/// Craig-Bampton's reduction (Craig and Bampton, AIAA J. 6, 1968): the coordinates split into
/// the interface b (the joints' nodes) and the interior i; the basis
///
/// ```text
/// V = [ I            0      ]   (rows b)
///     [ -K_ii^-1 K_ib  Phi_ik ]   (rows i)
/// ```
///
/// holds the constraint modes (each interface coordinate moved by one, the interior following
/// statically) and the lowest `k` modes of (K_ii, M_ii) with the interface held. The constraint
/// modes carry the static stretch and bending the joints' forces cause, which the lowest free
/// modes alone miss (docs/flexible.md section 7).
pub fn craig_bampton(
    full: Invariants,
    k: usize,
    interface: &[usize],
) -> Result<(Invariants, DMatrix<f64>), FlexError> {
    let n = full.elastic();
    let interior: Vec<usize> = (0..n).filter(|i| !interface.contains(i)).collect();
    let (nb, ni) = (interface.len(), interior.len());
    if k > ni {
        return Err(FlexError::Model(format!(
            "the body has {ni} interior coordinates besides its {nb} joint coordinates; it cannot keep {k} fixed-interface modes (lower `modes` or refine the mesh)"
        )));
    }
    let pick = |a: &DMatrix<f64>, r: &[usize], c: &[usize]| {
        DMatrix::from_fn(r.len(), c.len(), |i, j| a[(r[i], c[j])])
    };
    let k_ii = pick(&full.stiffness, &interior, &interior);
    let k_ib = pick(&full.stiffness, &interior, interface);
    let singular = || {
        FlexError::Model(
            "the beam's interior is not held by its joints' nodes (a singular stiffness): Craig-Bampton needs joints that fix the frame; use reduction = \"modal\"".into(),
        )
    };
    let psi = -k_ii.clone().cholesky().ok_or_else(singular)?.solve(&k_ib);
    let modes =
        symmetric_modes(&k_ii, &pick(&full.mass_qq, &interior, &interior)).map_err(|source| {
            FlexError::Fem {
                body: String::new(),
                source,
            }
        })?;
    let mut v = DMatrix::zeros(n, nb + k);
    for (c, &b) in interface.iter().enumerate() {
        v[(b, c)] = 1.0;
    }
    for (r, &i) in interior.iter().enumerate() {
        for c in 0..nb {
            v[(i, c)] = psi[(r, c)];
        }
        for c in 0..k {
            v[(i, nb + c)] = modes.shapes[(r, c)];
        }
    }
    Ok((full.transformed(&v), v))
}

/// The invariants kept whole (`modes` None) or reduced to the lowest `modes` modes of (K, M_qq),
/// with the basis they are in (identity, or the mode shapes, M_qq-orthonormal).
pub fn reduce(
    full: Invariants,
    modes: Option<usize>,
) -> Result<(Invariants, DMatrix<f64>), FlexError> {
    let n = full.elastic();
    match modes {
        None => Ok((full, DMatrix::identity(n, n))),
        Some(k) => {
            if k > n {
                return Err(FlexError::Model(format!(
                    "the body has {n} elastic coordinates; it cannot keep {k} modes (lower `modes` or refine the mesh)"
                )));
            }
            let modes = symmetric_modes(&full.stiffness, &full.mass_qq).map_err(|source| {
                FlexError::Fem {
                    body: String::new(),
                    source,
                }
            })?;
            let v = modes.shapes.columns(0, k).into_owned();
            Ok((full.transformed(&v), v))
        }
    }
}

/// Phi at lever coordinate `x` (2 x free dofs): the displacement of each free unit nodal value.
fn shape_at(mesh: &Mesh, free: &[usize], x: f64) -> DMatrix<f64> {
    let mut phi = DMatrix::zeros(2, free.len());
    let mut d = DVector::zeros(mesh.dofs());
    for (j, &f) in free.iter().enumerate() {
        d[f] = 1.0;
        let (u, v) = mesh.displacement_at(&d, x);
        phi[(0, j)] = u;
        phi[(1, j)] = v;
        d[f] = 0.0;
    }
    phi
}

/// The free nodal coordinates of `spec`'s beam (length `length`, m, no modal reduction) that
/// sample a displacement field at the nodes: `field(X)` gives (u, u', v, v', v'') at lever
/// coordinate X (m, and its derivatives in 1/m); each node takes the values its element carries.
/// For starting a beam from another discretization's deformed state.
pub fn nodal_values(spec: &BeamSpec, length: f64, field: &dyn Fn(f64) -> [f64; 5]) -> Vec<f64> {
    let kind = match spec.element {
        BeamElement::Frame => ElementKind::Frame,
        BeamElement::Quintic => ElementKind::Quintic,
    };
    let le = length / spec.elements as f64;
    let mut all = Vec::new();
    for node in 0..=spec.elements {
        let f = field(node as f64 * le);
        for &(fld, order) in kind.node_dofs() {
            all.push(match (fld, order) {
                (Field::Axial, 0) => f[0],
                (Field::Axial, _) => f[1],
                (Field::Transverse, 0) => f[2],
                (Field::Transverse, 1) => f[3],
                (Field::Transverse, _) => f[4],
            });
        }
    }
    let section = Section {
        young: spec.young,
        density: spec.density,
        area: spec.area,
        inertia: spec.second_moment,
    };
    match Lever::new(length, section).and_then(|l| Mesh::new(l, kind, spec.elements)) {
        Ok(mesh) => free_dofs(&mesh, spec.frame)
            .iter()
            .map(|&d| all[d])
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Every named point of `body` and `extra` (local frame) in the axis frame of an elastic body:
/// from its origin `a` (local frame, m), rotated by -`alpha` (rad).
pub(crate) fn axis_points(
    body: &Body,
    extra: &[(String, Vector2<f64>)],
    a: Vector2<f64>,
    alpha: f64,
) -> Vec<(String, Vector2<f64>)> {
    crate::body::named_points(body, extra)
        .map(|(name, p)| (name, to_axis(p, a, alpha)))
        .collect()
}

/// A point `p` of the file's local frame in the beam's axis frame (origin `a`, x axis at angle
/// `alpha` in the local frame), m.
fn to_axis(p: Vector2<f64>, a: Vector2<f64>, alpha: f64) -> Vector2<f64> {
    let (sn, cs) = (-alpha).sin_cos();
    let d = p - a;
    Vector2::new(cs * d.x - sn * d.y, sn * d.x + cs * d.y)
}
