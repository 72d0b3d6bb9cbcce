//! The lever's mesh and its global matrices: assembly by scatter-add and by Maggi's projection,
//! and the supports.

use nalgebra::{DMatrix, DVector};

use crate::element::{
    distributed_load, geometric_stiffness, ElementKind, ElementMatrices, Field, Section,
};
use crate::FemError;
use flexbench_numeric::lu::Lu;

/// The elastic lever BC' as a straight uniform beam (lever frame: B at x = 0, C' at x = length).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lever {
    /// Length |BC'| = l2, m.
    pub length: f64,
    /// Material and cross-section.
    pub section: Section,
}

impl Lever {
    /// A lever after checking that every property is finite and positive.
    pub fn new(length: f64, section: Section) -> Result<Self, FemError> {
        for (name, v) in [
            ("length l2", length),
            ("Young's modulus E", section.young),
            ("density rho", section.density),
            ("area", section.area),
            ("inertia", section.inertia),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(FemError::Model(format!(
                    "the lever's {name} is {v}; it must be a positive number"
                )));
            }
        }
        Ok(Lever { length, section })
    }

    /// The lever of a mechanism file's section (its E, rho, area, inertia and l2), checked as
    /// [`Lever::new`] checks.
    pub fn from_section(sec: &flexbench_contracts::lever::LeverSection) -> Result<Self, FemError> {
        Lever::new(
            sec.length,
            Section {
                young: sec.e,
                density: sec.rho,
                area: sec.area,
                inertia: sec.inertia,
            },
        )
    }

    /// Mass per unit length rho A, kg/m.
    pub fn line_density(&self) -> f64 {
        self.section.density * self.section.area
    }
}

/// How the lever is held in its own frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supports {
    /// Pinned at B and C': u = v = 0 at both end nodes, rotations (and higher derivatives) free.
    /// The bench's: the lever frame is the line through the pins.
    Pinned,
    /// Clamped at B, free at C': u, v and v' of the first node zero.
    ClampedFree,
    /// Free-free: nothing held (three rigid-body modes).
    FreeFree,
}

impl Supports {
    /// The name used on the command line and in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Supports::Pinned => "pinned",
            Supports::ClampedFree => "clamped-free",
            Supports::FreeFree => "free-free",
        }
    }
}

impl std::str::FromStr for Supports {
    type Err = flexbench_contracts::names::UnknownName;

    fn from_str(name: &str) -> Result<Supports, Self::Err> {
        flexbench_contracts::names::by_name(
            name,
            "a support of the lever",
            &[
                ("pinned", Supports::Pinned),
                ("clamped-free", Supports::ClampedFree),
                ("free-free", Supports::FreeFree),
            ],
        )
    }
}

impl std::fmt::Display for Supports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A mesh of equal elements along the lever.
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// The lever meshed.
    pub lever: Lever,
    /// The element used throughout.
    pub kind: ElementKind,
    /// Number of elements (at least 1).
    pub elements: usize,
}

/// The lever's global matrices: the element's matrices ([`ElementMatrices`], same units and
/// meaning) assembled over all the degrees of freedom, node by node, before supports.
pub type GlobalMatrices = ElementMatrices;

impl Mesh {
    /// A mesh of `elements` equal elements of `kind`.
    pub fn new(lever: Lever, kind: ElementKind, elements: usize) -> Result<Self, FemError> {
        if elements == 0 {
            return Err(FemError::Model(
                "the lever needs at least one element".into(),
            ));
        }
        Ok(Mesh {
            lever,
            kind,
            elements,
        })
    }

    /// Element length, m.
    pub fn element_length(&self) -> f64 {
        self.lever.length / self.elements as f64
    }

    /// Degrees of freedom per node.
    pub fn node_dofs(&self) -> usize {
        self.kind.node_dofs().len()
    }

    /// Global degrees of freedom (all nodes).
    pub fn dofs(&self) -> usize {
        (self.elements + 1) * self.node_dofs()
    }

    /// The global index of element e's local degree of freedom i (elements share their
    /// common node's degrees of freedom).
    pub fn global_dof(&self, e: usize, i: usize) -> usize {
        e * self.node_dofs() + i
    }

    /// The nodes' lever coordinates, m.
    pub fn node_positions(&self) -> Vec<f64> {
        (0..=self.elements)
            .map(|i| i as f64 * self.element_length())
            .collect()
    }

    /// Each element's matrices.
    pub fn element_matrices(&self) -> Vec<ElementMatrices> {
        let l = self.element_length();
        (0..self.elements)
            .map(|e| ElementMatrices::new(self.kind, &self.lever.section, l, e as f64 * l))
            .collect()
    }

    /// The global matrices by scatter-add of the element matrices.
    pub fn assemble(&self) -> GlobalMatrices {
        let n = self.dofs();
        let mut g = ElementMatrices::zeros(n);
        for (e, em) in self.element_matrices().iter().enumerate() {
            self.scatter(e, &em.m, &mut g.m);
            self.scatter(e, &em.s, &mut g.s);
            self.scatter(e, &em.k, &mut g.k);
            for i in 0..self.kind.dofs() {
                let gi = self.global_dof(e, i);
                g.q_x[gi] += em.q_x[i];
                g.q_y[gi] += em.q_y[i];
                for c in 0..2 {
                    g.m_o[(gi, c)] += em.m_o[(i, c)];
                }
            }
        }
        g
    }

    /// Add an element matrix into a global one.
    fn scatter(&self, e: usize, local: &DMatrix<f64>, global: &mut DMatrix<f64>) {
        for i in 0..local.nrows() {
            for j in 0..local.ncols() {
                global[(self.global_dof(e, i), self.global_dof(e, j))] += local[(i, j)];
            }
        }
    }

    /// Maggi's projection (seed 003 eq 31): the element degrees of freedom of all elements
    /// stacked, d_el = [A] d, [A] Boolean (one 1 a row); the global matrix is [A]^T
    /// blockdiag(element matrices) [A]. The same numbers as [`Mesh::assemble`]'s scatter-add,
    /// written as the projection onto the independent coordinates.
    pub fn maggi_projection(&self) -> DMatrix<f64> {
        let ne = self.kind.dofs();
        let mut a = DMatrix::zeros(self.elements * ne, self.dofs());
        for e in 0..self.elements {
            for i in 0..ne {
                a[(e * ne + i, self.global_dof(e, i))] = 1.0;
            }
        }
        a
    }

    /// The global geometric stiffness [K_g] of the axial force `axial(X)` (N, tension positive,
    /// X the lever coordinate, m).
    pub fn geometric_stiffness(&self, axial: &dyn Fn(f64) -> f64) -> DMatrix<f64> {
        let n = self.dofs();
        let l = self.element_length();
        let mut kg = DMatrix::zeros(n, n);
        for e in 0..self.elements {
            let x0 = e as f64 * l;
            let local = geometric_stiffness(self.kind, l, &|x| axial(x0 + x));
            self.scatter(e, &local, &mut kg);
        }
        kg
    }

    /// The moments G_p = int X^p Nv'^T Nv' dX, p = 0, 1, 2, of the global geometric stiffness:
    /// for an axial force N(X) = n0 + n1 X + n2 X^2 (the lever's, [`crate::LeverInstant::axial_polynomial`]),
    /// [K_g] = n0 G_0 + n1 G_1 + n2 G_2, exactly (the quadrature is exact to degree 15).
    pub fn geometric_stiffness_moments(&self) -> [DMatrix<f64>; 3] {
        [
            self.geometric_stiffness(&|_| 1.0),
            self.geometric_stiffness(&|x| x),
            self.geometric_stiffness(&|x| x * x),
        ]
    }

    /// The consistent global load of a distributed load (p_x, p_y)(X), N/m, lever frame.
    pub fn distributed_load(&self, load: &dyn Fn(f64) -> (f64, f64)) -> DVector<f64> {
        let l = self.element_length();
        let mut f = DVector::zeros(self.dofs());
        for e in 0..self.elements {
            let x0 = e as f64 * l;
            let local = distributed_load(self.kind, l, &|x| load(x0 + x));
            for i in 0..self.kind.dofs() {
                f[self.global_dof(e, i)] += local[i];
            }
        }
        f
    }

    /// The displacement (u, v) at lever coordinate X (m) of the global nodal vector `d` (all
    /// degrees of freedom), by the element's shape functions: m, lever frame.
    pub fn displacement_at(&self, d: &DVector<f64>, x: f64) -> (f64, f64) {
        let l = self.element_length();
        let e = ((x / l).floor().max(0.0) as usize).min(self.elements - 1);
        let xi = (x - e as f64 * l) / l;
        let (mut u, mut v) = (0.0, 0.0);
        for (i, (field, c)) in self.kind.shape_functions(l).iter().enumerate() {
            let n = c.iter().rev().fold(0.0, |acc, a| acc * xi + a);
            match field {
                Field::Axial => u += n * d[self.global_dof(e, i)],
                Field::Transverse => v += n * d[self.global_dof(e, i)],
            }
        }
        (u, v)
    }

    /// The global index of node `node`'s degree of freedom (field, derivative order), if the
    /// element has it.
    pub fn dof_of(&self, node: usize, field: Field, order: usize) -> Option<usize> {
        self.kind
            .node_dofs()
            .iter()
            .position(|&(f, o)| f == field && o == order)
            .map(|i| node * self.node_dofs() + i)
    }

    /// The free degrees of freedom under `supports`, ascending.
    pub fn free_dofs(&self, supports: Supports) -> Vec<usize> {
        let last = self.elements;
        let held: Vec<usize> = match supports {
            Supports::Pinned => [0, last]
                .iter()
                .flat_map(|&node| {
                    [Field::Axial, Field::Transverse]
                        .into_iter()
                        .filter_map(move |f| self.dof_of(node, f, 0))
                })
                .collect(),
            // Clamped: displacement and slope held; the higher derivatives of the quintic
            // element (axial strain u', curvature v'') are not kinematic and stay free.
            Supports::ClampedFree => [
                (Field::Axial, 0),
                (Field::Transverse, 0),
                (Field::Transverse, 1),
            ]
            .iter()
            .filter_map(|&(f, o)| self.dof_of(0, f, o))
            .collect(),
            Supports::FreeFree => Vec::new(),
        };
        (0..self.dofs()).filter(|d| !held.contains(d)).collect()
    }

    /// The static deflection {d} (all degrees of freedom, held ones zero) of K d = f on the
    /// free degrees of freedom: `k` the global stiffness (elastic plus any geometric part).
    pub fn solve_static(
        &self,
        k: &DMatrix<f64>,
        f: &DVector<f64>,
        supports: Supports,
    ) -> Result<DVector<f64>, FemError> {
        let free = self.free_dofs(supports);
        let kr = k.select_rows(&free).select_columns(&free);
        let fr = f.select_rows(&free);
        // Singular when the LU's pivots span more than 1e13 (a rigid-body mode left free gives
        // pivots at rounding level; the bench's pinned lever spans about 1e9).
        let lu = Lu::new(kr);
        let pivots = DVector::from_vec(lu.pivots()).map(f64::abs);
        if pivots.is_empty() || pivots.min().is_nan() || pivots.min() <= 1e-13 * pivots.max() {
            return Err(FemError::Singular(supports.name().into()));
        }
        let d = lu
            .solve(&fr)
            .filter(|d| d.iter().all(|v| v.is_finite()))
            .ok_or_else(|| FemError::Singular(supports.name().into()))?;
        let mut out = DVector::zeros(self.dofs());
        for (i, &g) in free.iter().enumerate() {
            out[g] = d[i];
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::bench_lever;

    /// Maggi's projection [A]^T blockdiag [A] gives the scatter-add's matrices to rounding
    /// (1e-15 of the largest entry), for both elements.
    #[test]
    fn maggi_projection_equals_scatter_add() {
        for kind in [ElementKind::Frame, ElementKind::Quintic] {
            let mesh = Mesh::new(bench_lever(), kind, 7).unwrap();
            let g = mesh.assemble();
            let a = mesh.maggi_projection();
            let ne = kind.dofs();
            let els = mesh.element_matrices();
            let pick = |em: &ElementMatrices, name: &str| -> DMatrix<f64> {
                match name {
                    "m" => em.m.clone(),
                    "s" => em.s.clone(),
                    _ => em.k.clone(),
                }
            };
            for (name, global) in [("m", &g.m), ("s", &g.s), ("k", &g.k)] {
                let mut block = DMatrix::zeros(mesh.elements * ne, mesh.elements * ne);
                for (e, em) in els.iter().enumerate() {
                    block
                        .view_mut((e * ne, e * ne), (ne, ne))
                        .copy_from(&pick(em, name));
                }
                let maggi = a.transpose() * block * &a;
                assert!(
                    (maggi - global).amax() <= 1e-15 * global.amax(),
                    "{kind:?} {name}"
                );
            }
        }
    }

    /// A uniform transverse load p on the pinned lever: v(x) = p x (L^3 - 2 L x^2 + x^3) / (24 EI)
    /// at every node, and the end rotations p L^3 / (24 EI), to 1e-10 relative (Hermite
    /// elements are nodally exact for polynomial loads).
    #[test]
    fn uniform_load_deflection_is_exact_at_the_nodes() {
        let lever = bench_lever();
        let (l, ei, p) = (
            lever.length,
            lever.section.young * lever.section.inertia,
            100.0,
        );
        for kind in [ElementKind::Frame, ElementKind::Quintic] {
            let mesh = Mesh::new(lever, kind, 6).unwrap();
            let g = mesh.assemble();
            let f = mesh.distributed_load(&|_| (0.0, p));
            let d = mesh.solve_static(&g.k, &f, Supports::Pinned).unwrap();
            let peak = 5.0 * p * l.powi(4) / (384.0 * ei);
            for (node, x) in mesh.node_positions().into_iter().enumerate() {
                let want = p * x * (l.powi(3) - 2.0 * l * x * x + x.powi(3)) / (24.0 * ei);
                let got = d[mesh.dof_of(node, Field::Transverse, 0).unwrap()];
                assert!(
                    (got - want).abs() < 1e-10 * peak,
                    "{kind:?} node {node}: {got} vs {want}"
                );
            }
            let theta0 = d[mesh.dof_of(0, Field::Transverse, 1).unwrap()];
            assert!(
                (theta0 - p * l.powi(3) / (24.0 * ei)).abs() < 1e-10 * p * l.powi(3) / (24.0 * ei)
            );
        }
    }

    /// The load of an angular acceleration eps on the undeformed lever, p(x) = -rho A eps x
    /// (the {q(eps)} = eps {Q_y} of the equation, on the right-hand side with a minus): on the
    /// pinned lever v(x) = -rho A eps x (7 L^4 - 10 L^2 x^2 + 3 x^4) / (360 EI L) at the nodes,
    /// to 1e-10; and the consistent load equals eps {Q_y} to rounding.
    #[test]
    fn angular_acceleration_load_deflection_is_exact_at_the_nodes() {
        let lever = bench_lever();
        let (l, ei, ra, eps) = (
            lever.length,
            lever.section.young * lever.section.inertia,
            lever.line_density(),
            300.0,
        );
        for kind in [ElementKind::Frame, ElementKind::Quintic] {
            let mesh = Mesh::new(lever, kind, 5).unwrap();
            let g = mesh.assemble();
            let f = mesh.distributed_load(&|x| (0.0, -ra * eps * x));
            assert!((&f + &g.q_y * eps).amax() < 1e-15 * f.amax());
            let d = mesh.solve_static(&g.k, &f, Supports::Pinned).unwrap();
            let q0 = -ra * eps * l;
            for (node, x) in mesh.node_positions().into_iter().enumerate() {
                let want = q0 * x * (7.0 * l.powi(4) - 10.0 * l * l * x * x + 3.0 * x.powi(4))
                    / (360.0 * ei * l);
                let got = d[mesh.dof_of(node, Field::Transverse, 0).unwrap()];
                assert!(
                    (got - want).abs() < 1e-10 * (q0 * l.powi(4) / ei).abs(),
                    "{kind:?} node {node}: {got} vs {want}"
                );
            }
        }
    }

    /// Between the nodes the displacement follows the shape functions: the uniform load's
    /// deflection at mid-element matches the exact curve within 1e-3 of the peak with 6 frame
    /// elements, and within 1e-9 with 6 quintic ones (quintic interpolation of a quartic).
    #[test]
    fn displacement_between_nodes() {
        let lever = bench_lever();
        let (l, ei, p) = (
            lever.length,
            lever.section.young * lever.section.inertia,
            100.0,
        );
        for (kind, tol) in [(ElementKind::Frame, 1e-3), (ElementKind::Quintic, 1e-9)] {
            let mesh = Mesh::new(lever, kind, 6).unwrap();
            let d = mesh
                .solve_static(
                    &mesh.assemble().k,
                    &mesh.distributed_load(&|_| (0.0, p)),
                    Supports::Pinned,
                )
                .unwrap();
            let peak = 5.0 * p * l.powi(4) / (384.0 * ei);
            for k in 0..6 {
                let x = (k as f64 + 0.5) * l / 6.0;
                let want = p * x * (l.powi(3) - 2.0 * l * x * x + x.powi(3)) / (24.0 * ei);
                let (u, v) = mesh.displacement_at(&d, x);
                assert!(
                    u.abs() < 1e-15 && (v - want).abs() < tol * peak,
                    "{kind:?} x {x}: {v} vs {want}"
                );
            }
        }
    }

    /// A free-free lever cannot be solved statically: the error names the supports.
    #[test]
    fn free_free_static_solve_is_refused() {
        let mesh = Mesh::new(bench_lever(), ElementKind::Frame, 4).unwrap();
        let g = mesh.assemble();
        let f = mesh.distributed_load(&|_| (0.0, 1.0));
        let e = mesh.solve_static(&g.k, &f, Supports::FreeFree).unwrap_err();
        assert!(e.to_string().contains("free-free"), "{e}");
        assert!(Lever::new(
            0.45,
            Section {
                young: f64::NAN,
                density: 1.0,
                area: 1.0,
                inertia: 1.0
            }
        )
        .unwrap_err()
        .to_string()
        .contains("Young"));
    }
}
