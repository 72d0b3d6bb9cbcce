//! Plane-stress elements (seed 002: two-dimensional finite elements of a body in plane motion):
//! the 4-node bilinear and the 8-node serendipity quadrilaterals, a structured mesh of a
//! rectangular plate (the lever seen in its plane: length along X, height across Y, thickness
//! out of the plane), and its matrices.
//!
//! Isoparametric, (xi, eta) in [-1, 1]^2, two degrees of freedom a node (u, v, lever frame, m):
//!
//! ```text
//! [k] = int B^T D B t dA,   [m] = int rho t N^T N dA,   D = E / (1 - nu^2) [[1, nu, 0], [nu, 1, 0], [0, 0, (1 - nu) / 2]]
//! ```
//!
//! by Gauss quadrature (2 x 2 for the bilinear element, 3 x 3 for the serendipity one: exact for
//! straight-sided rectangles). The rigid-motion terms (the skew coupling, the centrifugal and
//! the angular-acceleration loads) need only [m]-like integrals with the position: see
//! [`PlateMatrices`].

use nalgebra::{DMatrix, DVector, Matrix3, Vector2};

use crate::quadrature::gauss_legendre;
use crate::FemError;

/// The quadrilateral's interpolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuadKind {
    /// 4 corner nodes, bilinear.
    Q4,
    /// 4 corner and 4 mid-side nodes, serendipity quadratic.
    Q8,
}

impl QuadKind {
    /// Nodes of one element.
    pub fn nodes(&self) -> usize {
        match self {
            QuadKind::Q4 => 4,
            QuadKind::Q8 => 8,
        }
    }

    /// Gauss points a direction (exact on rectangles).
    fn gauss(&self) -> usize {
        match self {
            QuadKind::Q4 => 2,
            QuadKind::Q8 => 3,
        }
    }

    /// The nodes' natural coordinates: corners counter-clockwise from (-1, -1), then the
    /// mid-sides from the bottom one.
    fn natural(&self) -> &'static [(f64, f64)] {
        const Q8: [(f64, f64); 8] = [
            (-1.0, -1.0),
            (1.0, -1.0),
            (1.0, 1.0),
            (-1.0, 1.0),
            (0.0, -1.0),
            (1.0, 0.0),
            (0.0, 1.0),
            (-1.0, 0.0),
        ];
        match self {
            QuadKind::Q4 => &Q8[..4],
            QuadKind::Q8 => &Q8,
        }
    }

    /// Shape functions and their derivatives d/dxi, d/deta at (xi, eta).
    fn shapes(&self, xi: f64, eta: f64) -> Vec<(f64, f64, f64)> {
        self.natural()
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| match (self, i) {
                (QuadKind::Q4, _) => (
                    0.25 * (1.0 + a * xi) * (1.0 + b * eta),
                    0.25 * a * (1.0 + b * eta),
                    0.25 * b * (1.0 + a * xi),
                ),
                (QuadKind::Q8, 0..=3) => (
                    0.25 * (1.0 + a * xi) * (1.0 + b * eta) * (a * xi + b * eta - 1.0),
                    0.25 * a * (1.0 + b * eta) * (2.0 * a * xi + b * eta),
                    0.25 * b * (1.0 + a * xi) * (a * xi + 2.0 * b * eta),
                ),
                (QuadKind::Q8, _) if a == 0.0 => (
                    0.5 * (1.0 - xi * xi) * (1.0 + b * eta),
                    -xi * (1.0 + b * eta),
                    0.5 * b * (1.0 - xi * xi),
                ),
                (QuadKind::Q8, _) => (
                    0.5 * (1.0 + a * xi) * (1.0 - eta * eta),
                    0.5 * a * (1.0 - eta * eta),
                    -eta * (1.0 + a * xi),
                ),
            })
            .collect()
    }
}

/// Material and thickness of a plate in plane stress (SI).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaneMaterial {
    /// Young's modulus E, Pa.
    pub young: f64,
    /// Poisson's ratio nu.
    pub poisson: f64,
    /// Density rho, kg/m^3.
    pub density: f64,
    /// Thickness t (out of the plane), m.
    pub thickness: f64,
}

impl PlaneMaterial {
    /// The plane-stress elasticity matrix D (Pa): (s_xx, s_yy, s_xy) = D (e_xx, e_yy, g_xy).
    pub fn elasticity(&self) -> DMatrix<f64> {
        let (e, nu) = (self.young, self.poisson);
        let d = Matrix3::new(1.0, nu, 0.0, nu, 1.0, 0.0, 0.0, 0.0, 0.5 * (1.0 - nu))
            * (e / (1.0 - nu * nu));
        DMatrix::from_column_slice(3, 3, d.as_slice())
    }
}

/// A structured mesh of quadrilaterals over the rectangle [0, length] x [-height/2, height/2]
/// (lever frame, m), `nx` by `ny` elements.
#[derive(Debug, Clone, PartialEq)]
pub struct PlateMesh {
    /// The element.
    pub kind: QuadKind,
    /// Node positions, m.
    pub nodes: Vec<Vector2<f64>>,
    /// Each element's node indices, in [`QuadKind`]'s order.
    pub elements: Vec<Vec<usize>>,
}

impl PlateMesh {
    /// The rectangle meshed; `holes` (centre, radius, m) remove the elements whose centre falls
    /// inside one (a pin's bore, a marker's seat).
    pub fn rectangle(
        kind: QuadKind,
        length: f64,
        height: f64,
        nx: usize,
        ny: usize,
        holes: &[(Vector2<f64>, f64)],
    ) -> Result<PlateMesh, FemError> {
        if nx == 0 || ny == 0 || !(length > 0.0 && height > 0.0) {
            return Err(FemError::Model(format!(
                "a plate needs a positive size and at least one element each way (got {length} x {height} m, {nx} x {ny})"
            )));
        }
        // A (2 nx + 1) x (2 ny + 1) grid of candidate nodes; Q4 uses the even ones, Q8 all but
        // the element centres.
        let (gx, gy) = (2 * nx + 1, 2 * ny + 1);
        let used = |i: usize, j: usize| match kind {
            QuadKind::Q4 => i.is_multiple_of(2) && j.is_multiple_of(2),
            QuadKind::Q8 => !(i % 2 == 1 && j % 2 == 1),
        };
        let mut index = vec![usize::MAX; gx * gy];
        let mut nodes = Vec::new();
        for j in 0..gy {
            for i in 0..gx {
                if used(i, j) {
                    index[j * gx + i] = nodes.len();
                    nodes.push(Vector2::new(
                        length * i as f64 / (gx - 1) as f64,
                        height * (j as f64 / (gy - 1) as f64 - 0.5),
                    ));
                }
            }
        }
        let mut elements = Vec::new();
        for ey in 0..ny {
            for ex in 0..nx {
                let (i0, j0) = (2 * ex, 2 * ey);
                let centre = Vector2::new(
                    length * (i0 + 1) as f64 / (gx - 1) as f64,
                    height * ((j0 + 1) as f64 / (gy - 1) as f64 - 0.5),
                );
                if holes.iter().any(|(c, r)| (centre - c).norm() < *r) {
                    continue;
                }
                let at = |di: usize, dj: usize| index[(j0 + dj) * gx + i0 + di];
                let mut e = vec![at(0, 0), at(2, 0), at(2, 2), at(0, 2)];
                if kind == QuadKind::Q8 {
                    e.extend([at(1, 0), at(2, 1), at(1, 2), at(0, 1)]);
                }
                elements.push(e);
            }
        }
        // Nodes of removed elements only are dropped and the rest renumbered.
        let mut keep = vec![false; nodes.len()];
        elements.iter().flatten().for_each(|&n| keep[n] = true);
        let mut renum = vec![usize::MAX; nodes.len()];
        let mut kept = Vec::new();
        for (n, p) in nodes.iter().enumerate() {
            if keep[n] {
                renum[n] = kept.len();
                kept.push(*p);
            }
        }
        for e in &mut elements {
            e.iter_mut().for_each(|n| *n = renum[*n]);
        }
        Ok(PlateMesh {
            kind,
            nodes: kept,
            elements,
        })
    }

    /// Degrees of freedom (2 a node: u then v).
    pub fn dofs(&self) -> usize {
        2 * self.nodes.len()
    }

    /// The node nearest to `p`.
    pub fn nearest(&self, p: Vector2<f64>) -> usize {
        let d = |i: usize| (self.nodes[i] - p).norm_squared();
        (0..self.nodes.len())
            .min_by(|&a, &b| d(a).total_cmp(&d(b)))
            .unwrap_or(0)
    }

    /// The quadrature points of element `el` (node indices): Gauss points of the element's
    /// order mapped to the plate (exact for straight-sided rectangles).
    pub(crate) fn quad_points(&self, el: &[usize]) -> Vec<QuadPoint> {
        let xy: Vec<Vector2<f64>> = el.iter().map(|&i| self.nodes[i]).collect();
        let gp = gauss_legendre(self.kind.gauss());
        let mut out = Vec::with_capacity(gp.len() * gp.len());
        for &(s1, w1) in &gp {
            for &(s2, w2) in &gp {
                // gauss_legendre is on [0, 1]: map to [-1, 1] (weights x 2 each way).
                let (xi, eta, w) = (2.0 * s1 - 1.0, 2.0 * s2 - 1.0, 4.0 * w1 * w2);
                let sh = self.kind.shapes(xi, eta);
                let mut jac = nalgebra::Matrix2::<f64>::zeros();
                let mut x = Vector2::<f64>::zeros();
                for (a, (nv, dxi, deta)) in sh.iter().enumerate() {
                    jac[(0, 0)] += dxi * xy[a].x;
                    jac[(0, 1)] += dxi * xy[a].y;
                    jac[(1, 0)] += deta * xy[a].x;
                    jac[(1, 1)] += deta * xy[a].y;
                    x += xy[a] * *nv;
                }
                let det = jac.determinant();
                let inv = jac.try_inverse().unwrap_or_else(nalgebra::Matrix2::zeros);
                out.push(QuadPoint {
                    x,
                    da: w * det,
                    n: sh.iter().map(|s| s.0).collect(),
                    dx: sh
                        .iter()
                        .map(|s| inv[(0, 0)] * s.1 + inv[(0, 1)] * s.2)
                        .collect(),
                    dy: sh
                        .iter()
                        .map(|s| inv[(1, 0)] * s.1 + inv[(1, 1)] * s.2)
                        .collect(),
                });
            }
        }
        out
    }

    /// The global matrices of the plate.
    pub fn assemble(&self, mat: &PlaneMaterial) -> PlateMatrices {
        let n = self.dofs();
        let mut g = PlateMatrices {
            k: DMatrix::zeros(n, n),
            m: DMatrix::zeros(n, n),
            s: DMatrix::zeros(n, n),
            m_o: DMatrix::zeros(n, 2),
            q_x: DVector::zeros(n),
            q_y: DVector::zeros(n),
            mass: 0.0,
            first_moment: Vector2::zeros(),
            inertia_origin: 0.0,
        };
        let dd = mat.elasticity();
        let rt = mat.density * mat.thickness;
        for el in &self.elements {
            for p in self.quad_points(el) {
                let b = p.strain_matrix();
                let kl: DMatrix<f64> = b.transpose() * &dd * &b * (p.da * mat.thickness);
                g.add_point(el, &p.n, p.x, rt * p.da, &kl);
            }
        }
        g
    }
}

/// One quadrature point of a plate element (lever frame).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QuadPoint {
    /// Position, m.
    pub(crate) x: Vector2<f64>,
    /// Weight times the Jacobian's determinant, m^2.
    pub(crate) da: f64,
    /// Shape function values, in the element's node order.
    pub(crate) n: Vec<f64>,
    /// Their derivatives d/dx, 1/m.
    pub(crate) dx: Vec<f64>,
    /// Their derivatives d/dy, 1/m.
    pub(crate) dy: Vec<f64>,
}

impl QuadPoint {
    /// B (3 x 2 nodes): the strains (e_xx, e_yy, g_xy) of the element's nodal displacements
    /// (u, v a node).
    pub(crate) fn strain_matrix(&self) -> DMatrix<f64> {
        let mut b = DMatrix::zeros(3, 2 * self.n.len());
        for (a, (dx, dy)) in self.dx.iter().zip(&self.dy).enumerate() {
            b[(0, 2 * a)] = *dx;
            b[(1, 2 * a + 1)] = *dy;
            b[(2, 2 * a)] = *dy;
            b[(2, 2 * a + 1)] = *dx;
        }
        b
    }
}

/// A plate's global matrices (lever frame, all degrees of freedom), in the beam's conventions
/// (crate::element::ElementMatrices) so that the rigid-motion terms read the same, with the
/// undeformed plate's rigid invariants.
#[derive(Debug, Clone, PartialEq)]
pub struct PlateMatrices {
    /// Stiffness [k], N/m.
    pub k: DMatrix<f64>,
    /// Mass [m], kg.
    pub m: DMatrix<f64>,
    /// Skew coupling [S] = int rho t (Nv Nu^T - Nu Nv^T) dA, kg.
    pub s: DMatrix<f64>,
    /// [m_O] = int rho t [Nu Nv] dA (n x 2), kg.
    pub m_o: DMatrix<f64>,
    /// {q_x} = int rho t N^T x dA (the position's two components on u and v), kg m.
    pub q_x: DVector<f64>,
    /// {q_y} = int rho t N^T (z x x) dA, kg m.
    pub q_y: DVector<f64>,
    /// Mass, kg.
    pub mass: f64,
    /// int rho t x dA, kg m.
    pub first_moment: Vector2<f64>,
    /// int rho t |x|^2 dA, kg m^2.
    pub inertia_origin: f64,
}

impl PlateMatrices {
    /// Add one quadrature point of element `el` (node indices): shape values `sh`, position `x`
    /// (m), mass `m` = rho t dA (kg) and stiffness contribution `kl` (element-local order).
    fn add_point(&mut self, el: &[usize], sh: &[f64], x: Vector2<f64>, m: f64, kl: &DMatrix<f64>) {
        let g = self;
        let dof = |a: usize, c: usize| 2 * el[a] + c;
        let nn = sh.len();
        g.mass += m;
        g.first_moment += x * m;
        g.inertia_origin += x.norm_squared() * m;
        for a in 0..nn {
            let na = sh[a];
            g.m_o[(dof(a, 0), 0)] += m * na;
            g.m_o[(dof(a, 1), 1)] += m * na;
            // {q_x} = int rho t N^T x, {q_y} = int rho t N^T (z x x): the loads of omega^2 and
            // epsilon on the undeformed plate.
            g.q_x[dof(a, 0)] += m * na * x.x;
            g.q_x[dof(a, 1)] += m * na * x.y;
            g.q_y[dof(a, 0)] -= m * na * x.y;
            g.q_y[dof(a, 1)] += m * na * x.x;
            for c in 0..nn {
                let mn = m * na * sh[c];
                g.m[(dof(a, 0), dof(c, 0))] += mn;
                g.m[(dof(a, 1), dof(c, 1))] += mn;
                // [S] = int rho t (Nv Nu^T - Nu Nv^T), the beam's convention.
                g.s[(dof(a, 1), dof(c, 0))] += mn;
                g.s[(dof(a, 0), dof(c, 1))] -= mn;
                for r in 0..2 {
                    for q in 0..2 {
                        g.k[(dof(a, r), dof(c, q))] += kl[(2 * a + r, 2 * c + q)];
                    }
                }
            }
        }
    }
}

/// The rows and columns `free` of a square matrix.
pub fn restrict(a: &DMatrix<f64>, free: &[usize]) -> DMatrix<f64> {
    DMatrix::from_fn(free.len(), free.len(), |i, j| a[(free[i], free[j])])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steel() -> PlaneMaterial {
        PlaneMaterial {
            young: 210e9,
            poisson: 0.3,
            density: 7850.0,
            thickness: 0.025,
        }
    }

    /// Shape functions: a partition of unity reproducing x and y, and their derivatives summing
    /// to zero, at arbitrary points.
    #[test]
    fn shape_functions_reproduce_linear_fields() {
        for kind in [QuadKind::Q4, QuadKind::Q8] {
            for &(xi, eta) in &[(0.3, -0.7), (-0.9, 0.1), (0.0, 0.0)] {
                let sh = kind.shapes(xi, eta);
                let sum: f64 = sh.iter().map(|s| s.0).sum();
                let sx: f64 = sh.iter().zip(kind.natural()).map(|(s, n)| s.0 * n.0).sum();
                let dsum: f64 = sh.iter().map(|s| s.1).sum();
                assert!((sum - 1.0).abs() < 1e-14 && (sx - xi).abs() < 1e-14 && dsum.abs() < 1e-14);
            }
        }
    }

    /// The plate's mass matrix carries its mass in each direction, and the rigid invariants are
    /// the rectangle's.
    #[test]
    fn the_plate_weighs_what_it_should() {
        let mat = steel();
        let (l, h) = (0.45, 0.006);
        for kind in [QuadKind::Q4, QuadKind::Q8] {
            let mesh = PlateMesh::rectangle(kind, l, h, 10, 2, &[]).unwrap();
            let g = mesh.assemble(&mat);
            let m = mat.density * mat.thickness * l * h;
            let ones_u = DVector::from_fn(mesh.dofs(), |i, _| if i % 2 == 0 { 1.0 } else { 0.0 });
            assert!((ones_u.dot(&(&g.m * &ones_u)) / m - 1.0).abs() < 1e-12);
            assert!((g.mass / m - 1.0).abs() < 1e-12);
            assert!((g.first_moment.x / (m * l / 2.0) - 1.0).abs() < 1e-12);
            let j = m * (l * l + h * h) / 3.0 - m * h * h / 4.0;
            assert!((g.inertia_origin / j - 1.0).abs() < 1e-12, "{kind:?}");
            // Rigid motions cost no strain energy.
            let rot = DVector::from_fn(mesh.dofs(), |i, _| {
                let p = mesh.nodes[i / 2];
                if i % 2 == 0 {
                    -p.y
                } else {
                    p.x
                }
            });
            assert!((&g.k * &rot).amax() < 1e-6 * g.k.amax());
        }
    }

    /// The exact plane-stress field of pure bending (Timoshenko and Goodier sec. 22):
    /// u = -M x y / (E I), v = M (x^2 + nu y^2) / (2 E I), I = t h^3 / 12.
    fn bending_exact(m: f64, mat: &PlaneMaterial, h: f64, p: Vector2<f64>) -> Vector2<f64> {
        let ei = mat.young * mat.thickness * h.powi(3) / 12.0;
        Vector2::new(
            -m * p.x * p.y / ei,
            m * (p.x * p.x + mat.poisson * p.y * p.y) / (2.0 * ei),
        )
    }

    /// The cantilever in pure bending: the left edge held at the exact solution, the right
    /// edge loaded by the linear traction sigma_x = -M y / I. Returns the largest nodal
    /// displacement error relative to the tip deflection M L^2 / (2 E I), and that deflection's
    /// relative error at (L, 0).
    pub(crate) fn pure_bending(kind: QuadKind, l: f64, nx: usize, ny: usize) -> (f64, f64) {
        let mat = steel();
        let (h, m) = (0.006, 10.0);
        let mesh = PlateMesh::rectangle(kind, l, h, nx, ny, &[]).unwrap();
        let g = mesh.assemble(&mat);
        let n = mesh.dofs();
        let i_area = mat.thickness * h.powi(3) / 12.0;
        // The consistent load of the end traction, by the edge's own quadrature (exact: the
        // traction is linear, the shape functions at most quadratic along the edge).
        let mut f = DVector::zeros(n);
        let right: Vec<usize> = (0..mesh.nodes.len())
            .filter(|&i| (mesh.nodes[i].x - l).abs() < 1e-12)
            .collect();
        for e in &mesh.elements {
            let on: Vec<usize> = e.iter().copied().filter(|i| right.contains(i)).collect();
            if on.len() < 2 {
                continue;
            }
            let (y0, y1) = on.iter().fold((f64::MAX, f64::MIN), |(a, b), &i| {
                (a.min(mesh.nodes[i].y), b.max(mesh.nodes[i].y))
            });
            for (s, w) in gauss_legendre(3) {
                let y = y0 + s * (y1 - y0);
                let sigma = -m * y / i_area;
                // The edge's 1-D Lagrange interpolation through its nodes.
                for &a in &on {
                    let na: f64 = on
                        .iter()
                        .filter(|&&b| b != a)
                        .map(|&b| (y - mesh.nodes[b].y) / (mesh.nodes[a].y - mesh.nodes[b].y))
                        .product();
                    f[2 * a] += sigma * na * w * (y1 - y0) * mat.thickness;
                }
            }
        }
        let mut d = DVector::zeros(n);
        let mut held = vec![false; n];
        for (i, p) in mesh.nodes.iter().enumerate() {
            if p.x.abs() < 1e-12 {
                let ex = bending_exact(m, &mat, h, *p);
                d[2 * i] = ex.x;
                d[2 * i + 1] = ex.y;
                held[2 * i] = true;
                held[2 * i + 1] = true;
            }
        }
        let free: Vec<usize> = (0..n).filter(|&i| !held[i]).collect();
        let rhs = &f - &g.k * &d;
        let kf = restrict(&g.k, &free);
        let rf = DVector::from_fn(free.len(), |i, _| rhs[free[i]]);
        let sol = kf.cholesky().expect("positive definite").solve(&rf);
        free.iter().zip(sol.iter()).for_each(|(&i, v)| d[i] = *v);
        let tip = m * l * l / (2.0 * mat.young * i_area);
        let worst = mesh.nodes.iter().enumerate().fold(0.0f64, |w, (i, p)| {
            let ex = bending_exact(m, &mat, h, *p);
            w.max((d[2 * i] - ex.x).abs())
                .max((d[2 * i + 1] - ex.y).abs())
        });
        let c = mesh.nearest(Vector2::new(l, 0.0));
        (worst / tip, (d[2 * c + 1] / tip - 1.0).abs())
    }

    /// Pure bending: the serendipity element holds the exact field (quadratic) on every mesh, to
    /// rounding: the slender plate's stiffness has a condition near 1e9 (axial against bending,
    /// growing with the mesh), which leaves 4e-9 at 4 x 2 elements and 1.4e-7 at 16 x 2;
    /// the bilinear one locks in shear (its parasitic shear stiffens bending by about
    /// (1 - nu) / 2 (a / b)^2, a and b the element's sides), which on the lever (L/h = 75) leaves
    /// 5 % at 256 x 2 elements, and converges at second order on a cantilever of L/h = 5 meshed
    /// ever finer both ways (5 x 1 to 40 x 8 elements).
    #[test]
    fn pure_bending_converges_to_the_elasticity_solution() {
        for nx in [4, 16] {
            let (worst, tip) = pure_bending(QuadKind::Q8, 0.45, nx, 2);
            eprintln!("Q8 {nx} x 2: largest nodal error {worst:.2e}, tip {tip:.2e}");
            assert!(worst < 1e-6 && tip < 1e-6, "Q8 {nx}: {worst:e} {tip:e}");
        }
        let lever: Vec<(usize, f64)> = [32, 64, 128, 256]
            .iter()
            .map(|&nx| (nx, pure_bending(QuadKind::Q4, 0.45, nx, 2).1))
            .collect();
        eprintln!("Q4 on the lever (L/h = 75), tip deflection errors: {lever:?}");
        assert!(lever.windows(2).all(|w| w[1].1 < w[0].1));
        // Refined both ways: the depth's discretization has its own error.
        let stub: Vec<(usize, f64)> = [1, 2, 4, 8]
            .iter()
            .map(|&ny| (ny, pure_bending(QuadKind::Q4, 0.03, 5 * ny, ny).1))
            .collect();
        let orders: Vec<f64> = stub.windows(2).map(|w| (w[0].1 / w[1].1).log2()).collect();
        eprintln!("Q4 on a cantilever of L/h = 5: {stub:?}, observed orders {orders:?}");
        assert!(
            orders[2] > 1.9 && orders[2] < 2.1,
            "Q4's observed order {orders:?}"
        );
    }

    /// The lever as a plate (Q8, 64 x 2), pinned at the mid-height points of its ends like the
    /// beam model (u = v = 0 at B and C'): its lowest bending frequencies against
    /// Euler-Bernoulli's (the beam model's limit) and Timoshenko's (shear and rotary inertia,
    /// Cowper's shear coefficient for plane stress) closed forms.
    #[test]
    fn the_plate_lever_lies_on_timoshenkos_frequencies() {
        let mat = steel();
        let (l, h) = (0.45, 0.006);
        let table = plate_vs_beam(&mat, l, h, QuadKind::Q8, 64, 2);
        for (n, plate, eb, timo) in &table {
            eprintln!("mode {n}: plate {plate:.3} Hz, Euler-Bernoulli {eb:.3} ({:+.2e}), Timoshenko {timo:.3} ({:+.2e})", plate / eb - 1.0, plate / timo - 1.0);
            assert!((plate / timo - 1.0).abs() < 2e-4, "mode {n}");
            assert!(plate < eb);
        }
    }

    /// (mode number, plate, Euler-Bernoulli, Timoshenko) bending frequencies, Hz.
    pub(crate) fn plate_vs_beam(
        mat: &PlaneMaterial,
        l: f64,
        h: f64,
        kind: QuadKind,
        nx: usize,
        ny: usize,
    ) -> Vec<(usize, f64, f64, f64)> {
        let mesh = PlateMesh::rectangle(kind, l, h, nx, ny, &[]).unwrap();
        let g = mesh.assemble(mat);
        let (b, c) = (
            mesh.nearest(Vector2::zeros()),
            mesh.nearest(Vector2::new(l, 0.0)),
        );
        let held = [2 * b, 2 * b + 1, 2 * c, 2 * c + 1];
        let free: Vec<usize> = (0..mesh.dofs()).filter(|i| !held.contains(i)).collect();
        let modes =
            crate::modal::symmetric_modes(&restrict(&g.k, &free), &restrict(&g.m, &free)).unwrap();
        // Bending modes: those whose shape is mostly v.
        let bending: Vec<f64> = (0..modes.eigenvalues.len())
            .filter(|&i| {
                let s = modes.shapes.column(i);
                let (mut u, mut v) = (0.0, 0.0);
                for (k, &d) in free.iter().enumerate() {
                    if d % 2 == 0 {
                        u += s[k] * s[k]
                    } else {
                        v += s[k] * s[k]
                    }
                }
                v > u
            })
            .take(3)
            .map(|i| modes.frequency_hz(i))
            .collect();
        let (a, i2) = (mat.thickness * h, mat.thickness * h.powi(3) / 12.0);
        let (e, rho, nu) = (mat.young, mat.density, mat.poisson);
        let gm = e / (2.0 * (1.0 + nu));
        let kappa = 10.0 * (1.0 + nu) / (12.0 + 11.0 * nu);
        bending
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                let k = (i + 1) as f64 * std::f64::consts::PI / l;
                let eb = k * k * (e * i2 / (rho * a)).sqrt() / std::f64::consts::TAU;
                // (kGA k^2 - rho A w^2)(EI k^2 + kGA - rho I w^2) = (kGA k)^2, the lower root.
                let kga = kappa * gm * a;
                let (qa, qb, qc) = (
                    rho * a * rho * i2,
                    -(rho * a * (e * i2 * k * k + kga) + kga * k * k * rho * i2),
                    kga * k * k * e * i2 * k * k,
                );
                let w2 = (-qb - (qb * qb - 4.0 * qa * qc).sqrt()) / (2.0 * qa);
                (i + 1, f, eb, w2.sqrt() / std::f64::consts::TAU)
            })
            .collect()
    }
}
