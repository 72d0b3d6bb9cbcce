//! An elastic plate's floating-frame invariants from the FEM stage's plane-stress
//! quadrilaterals ([`flexbench_fem::plane`]): the rectangle from the `from` point to the `to`
//! point (its axis at mid-height), the frame's origin at the `from` node and its x axis through
//! the `to` node (u = v = 0 at `from`, v = 0 at `to`: the beam's chord frame). With x the
//! undeformed position (X, Y), the plate's global matrices in the beam's conventions give
//!
//! ```text
//! S = [m_O]^T, c_a = {q_x} = int rho t N^T x dA, c_c = {q_y} = int rho t N^T (z x x) dA,
//! M_qq = [m], B = -[S_fem], K = [k], D = beta [k]
//! ```
//!
//! and m, s0, J_O are the rectangle's. Joints and markers must sit on nodes (a point between
//! nodes is refused: "the mesh cannot carry the joint").

use std::collections::BTreeMap;

use nalgebra::{DMatrix, DVector, Vector2};

use flexbench_fem::plane::{restrict, PlaneMaterial, PlateMesh, QuadKind};
use flexbench_mechanism::elastic::{PlateElement, PlateSpec};
use flexbench_mechanism::model::Body;

use crate::beam::reduce;
use crate::body::{FloatingBody, Invariants, PointShape};
use crate::FlexError;

/// A point farther than this fraction of the plate's length from every node is not carried.
const NODE_TOLERANCE: f64 = 1e-9;

/// The plate of `body` (declared by `spec`) as a floating body, with the angle (rad) of its axis
/// in the file's local frame; `extra` are further named points (the markers), local frame.
pub fn plate_body(
    body: &Body,
    spec: &PlateSpec,
    extra: &[(String, Vector2<f64>)],
) -> Result<(FloatingBody, f64), FlexError> {
    let a = body.points[&spec.from];
    let axis = body.points[&spec.to] - a;
    let length = axis.norm();
    let alpha = axis.y.atan2(axis.x);
    let kind = match spec.element {
        PlateElement::Q4 => QuadKind::Q4,
        PlateElement::Q8 => QuadKind::Q8,
    };
    let fem = |source| FlexError::Fem {
        body: body.name.clone(),
        source,
    };
    let mesh = PlateMesh::rectangle(kind, length, spec.height, spec.along, spec.across, &[])
        .map_err(fem)?;
    let mat = PlaneMaterial {
        young: spec.young,
        poisson: spec.poisson,
        density: spec.density,
        thickness: spec.thickness,
    };
    let g = mesh.assemble(&mat);
    let (b0, c0) = (
        mesh.nearest(Vector2::zeros()),
        mesh.nearest(Vector2::new(length, 0.0)),
    );
    for (node, name) in [(b0, &spec.from), (c0, &spec.to)] {
        if mesh.nodes[node].y.abs() > NODE_TOLERANCE * length {
            return Err(FlexError::Model(format!(
                "body '{}': the plate has no node at mid-height for its end '{name}'; give an even number of elements across (`across`)",
                body.name
            )));
        }
    }
    let held = [2 * b0, 2 * b0 + 1, 2 * c0 + 1];
    let free: Vec<usize> = (0..mesh.dofs()).filter(|d| !held.contains(d)).collect();
    let n = free.len();
    let full = Invariants {
        mass: g.mass,
        first_moment: g.first_moment,
        inertia_origin: g.inertia_origin,
        static_moment: DMatrix::from_fn(2, n, |r, j| g.m_o[(free[j], r)]),
        axial_moment: DVector::from_fn(n, |j, _| g.q_x[free[j]]),
        cross_moment: DVector::from_fn(n, |j, _| g.q_y[free[j]]),
        mass_qq: restrict(&g.m, &free),
        gyroscopic: -restrict(&g.s, &free),
        stiffness: restrict(&g.k, &free),
        damping: restrict(&g.k, &free) * spec.damping_beta,
    };
    let (inv, basis) = reduce(full, spec.modes)?;
    let points = plate_points(body, spec, extra, &mesh, &free, &basis, alpha)?;
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

/// Every named point of the plate's body (and `extra`) as a node's shape in the reduced basis;
/// a point on no node is refused.
fn plate_points(
    body: &Body,
    spec: &PlateSpec,
    extra: &[(String, Vector2<f64>)],
    mesh: &PlateMesh,
    free: &[usize],
    basis: &DMatrix<f64>,
    alpha: f64,
) -> Result<BTreeMap<String, PointShape>, FlexError> {
    let a = body.points[&spec.from];
    let length = (body.points[&spec.to] - a).norm();
    let n = free.len();
    let mut points = BTreeMap::new();
    for (name, x) in crate::beam::axis_points(body, extra, a, alpha) {
        let node = mesh.nearest(x);
        if (mesh.nodes[node] - x).norm() > NODE_TOLERANCE * length {
            return Err(FlexError::Model(format!(
                "body '{}': point '{name}' at ({:.6}, {:.6}) m along the plate is on no node of its {} x {} mesh, which cannot carry it; choose `elements` so that a node falls there",
                body.name, x.x, x.y, spec.along, spec.across
            )));
        }
        let mut phi = DMatrix::zeros(2, n);
        for (j, &f) in free.iter().enumerate() {
            if f / 2 == node {
                phi[(f % 2, j)] = 1.0;
            }
        }
        points.insert(
            name,
            PointShape {
                at: mesh.nodes[node],
                phi: phi * basis,
            },
        );
    }
    Ok(points)
}
