//! One finite element of the lever: shape functions and the matrices of Kane's equations.
//!
//! Local coordinate x in [0, L] along the element (lever frame, m), xi = x / L. The element's
//! degrees of freedom are, node by node, the nodal values and derivatives that its Hermite
//! interpolation uses (see [`ElementKind::node_dofs`]); a derivative of order k with respect to
//! x has the shape function L^k H(xi), H the Hermite basis polynomial on [0, 1] of that
//! condition, so that every degree of freedom is in its physical unit (m, rad, 1/m).
//!
//! The matrices (derivation from the partial velocities of r_B + R(phi2) (x + u, v) in
//! docs/fem.md; seed 000 eqs 10-20, seed 001 eq 14 give the same up to their garbling):
//!
//! ```text
//! [m]   = int rho A (Nu^T Nu + Nv^T Nv) dx            mass
//! [S]   = int rho A (Nv^T Nu - Nu^T Nv) dx            skew coupling: [c] = 2 omega [S], [k(eps)] = eps [S]
//! [k]   = int (E A Nu'^T Nu' + E I Nv''^T Nv'') dx     elastic stiffness ([k_a] + [k_b])
//! [k_g] = int N(x) Nv'^T Nv' dx                        geometric stiffness of the axial force N(x) (tension > 0)
//! [m_O] = int rho A [Nu^T  Nv^T] dx                    (n x 2): the load of the frame origin's acceleration
//! {q_x} = int rho A Nu^T X dx,  {q_y} = int rho A Nv^T X dx    (X = x0 + x, the lever coordinate)
//! ```

use nalgebra::{DMatrix, DVector};

use crate::quadrature::gauss_legendre;
use flexbench_numeric::lu::Lu;

/// Quadrature points per element: exact to degree 15, beyond every integrand here (the quintic
/// element's mass is degree 10; its geometric stiffness with a quadratic N(x) degree 10).
pub const QUADRATURE_POINTS: usize = 8;

/// Which displacement a degree of freedom interpolates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Axial displacement u, along the lever (m).
    Axial,
    /// Transverse displacement v, across the lever in its plane (m).
    Transverse,
}

/// The element's interpolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementKind {
    /// Planar frame element: u linear (u at each node), v cubic Hermite (v, v' at each node);
    /// 6 degrees of freedom.
    Frame,
    /// Higher-order element: u cubic Hermite (u, u'), v quintic Hermite (v, v', v''); 10 degrees
    /// of freedom.
    Quintic,
}

impl ElementKind {
    /// The degrees of freedom of one node, in order: (field, order of the x-derivative).
    pub fn node_dofs(&self) -> &'static [(Field, usize)] {
        match self {
            ElementKind::Frame => &[
                (Field::Axial, 0),
                (Field::Transverse, 0),
                (Field::Transverse, 1),
            ],
            ElementKind::Quintic => &[
                (Field::Axial, 0),
                (Field::Axial, 1),
                (Field::Transverse, 0),
                (Field::Transverse, 1),
                (Field::Transverse, 2),
            ],
        }
    }

    /// Degrees of freedom of the element (two nodes).
    pub fn dofs(&self) -> usize {
        2 * self.node_dofs().len()
    }

    /// The name used on the command line and in tables.
    pub fn name(&self) -> &'static str {
        match self {
            ElementKind::Frame => "frame",
            ElementKind::Quintic => "quintic",
        }
    }

    /// Shape functions of the element of length `len` (m): for each degree of freedom, its
    /// field and its polynomial in xi (coefficients of xi^0, xi^1, ...), the L^k scale included.
    pub fn shape_functions(&self, len: f64) -> Vec<(Field, Vec<f64>)> {
        let orders = self.node_dofs().iter().map(|d| d.1).cycle();
        self.unit_shapes()
            .iter()
            .zip(orders)
            .map(|((field, h), order)| {
                (
                    *field,
                    h.iter().map(|c| c * len.powi(order as i32)).collect(),
                )
            })
            .collect()
    }

    /// The shape functions on xi in [0, 1] before the L^k scale, solved once per kind: for each
    /// degree of freedom, its field and its Hermite basis polynomial.
    fn unit_shapes(&self) -> &'static [(Field, Vec<f64>)] {
        static FRAME: std::sync::OnceLock<Vec<(Field, Vec<f64>)>> = std::sync::OnceLock::new();
        static QUINTIC: std::sync::OnceLock<Vec<(Field, Vec<f64>)>> = std::sync::OnceLock::new();
        let cell = match self {
            ElementKind::Frame => &FRAME,
            ElementKind::Quintic => &QUINTIC,
        };
        cell.get_or_init(|| {
            let nodes = self.node_dofs();
            (0..2)
                .flat_map(|node| {
                    nodes.iter().map(move |&(field, order)| {
                        // The highest derivative this field carries at a node fixes its Hermite degree.
                        let r = nodes
                            .iter()
                            .filter(|(f, _)| *f == field)
                            .map(|(_, o)| *o)
                            .max()
                            .unwrap_or(0);
                        (field, hermite_basis(r, node, order))
                    })
                })
                .collect()
        })
    }
}

impl std::str::FromStr for ElementKind {
    type Err = flexbench_contracts::names::UnknownName;

    fn from_str(name: &str) -> Result<ElementKind, Self::Err> {
        flexbench_contracts::names::by_name(
            name,
            "a lever element",
            &[
                ("quintic", ElementKind::Quintic),
                ("frame", ElementKind::Frame),
            ],
        )
    }
}

impl std::fmt::Display for ElementKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The Hermite basis polynomial on [0, 1] of degree 2r + 1 whose derivative of order `order`
/// is 1 at end `node` (0: xi = 0, 1: xi = 1) and whose derivatives 0..=r are 0 at both ends
/// otherwise. Coefficients of xi^0 .. xi^(2r+1), solved from the 2r + 2 conditions.
fn hermite_basis(r: usize, node: usize, order: usize) -> Vec<f64> {
    let n = 2 * r + 2;
    let mut a = DMatrix::<f64>::zeros(n, n);
    for (end, xi) in [(0usize, 0.0f64), (1, 1.0)] {
        for k in 0..=r {
            let row = end * (r + 1) + k;
            for j in k..n {
                // d^k/dxi^k xi^j = j!/(j-k)! xi^(j-k)
                let falling: f64 = (0..k).map(|i| (j - i) as f64).product();
                a[(row, j)] = falling * xi.powi((j - k) as i32);
            }
        }
    }
    let mut b = DVector::<f64>::zeros(n);
    b[node * (r + 1) + order] = 1.0;
    Lu::new(a)
        .solve(&b)
        .map(|c| c.iter().copied().collect())
        .unwrap_or_default()
}

/// Value of the polynomial `c` (coefficients of xi^0, xi^1, ...) and of its derivative of
/// order `k`, at xi.
fn poly_derivative(c: &[f64], k: usize, xi: f64) -> f64 {
    let mut s = 0.0;
    for (j, cj) in c.iter().enumerate().skip(k) {
        let falling: f64 = (0..k).map(|i| (j - i) as f64).product();
        s += cj * falling * xi.powi((j - k) as i32);
    }
    s
}

/// Cross-section and material of the lever (SI): the element matrices' constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Section {
    /// Young's modulus E, Pa.
    pub young: f64,
    /// Density rho, kg/m^3.
    pub density: f64,
    /// Cross-section area A, m^2.
    pub area: f64,
    /// Second moment of area I about the axis normal to the plane of motion, m^4.
    pub inertia: f64,
}

/// The matrices of one element, or assembled over the lever ([`crate::assembly::GlobalMatrices`])
/// (lever frame, SI units of the degrees of freedom); see the module's documentation for their
/// definitions.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementMatrices {
    /// Mass [m], kg.
    pub m: DMatrix<f64>,
    /// Skew coupling [S] of axial and transverse motion, kg: [c] = 2 omega [S] (gyroscopic),
    /// [k(eps)] = eps [S].
    pub s: DMatrix<f64>,
    /// Elastic stiffness [k] = [k_a] + [k_b] (axial and bending), N/m.
    pub k: DMatrix<f64>,
    /// [m_O] (n x 2): the generalized load of a unit acceleration of the frame's origin along
    /// the lever's x and y, kg.
    pub m_o: DMatrix<f64>,
    /// {q_x} = int rho A Nu^T X dx, kg m: times -omega^2 the centrifugal load of the rigid
    /// motion on the undeformed axis ({q(omega)} = -omega^2 {q_x}).
    pub q_x: DVector<f64>,
    /// {q_y} = int rho A Nv^T X dx, kg m: times epsilon the load of the angular acceleration
    /// ({q(eps)} = eps {q_y}).
    pub q_y: DVector<f64>,
}

impl ElementMatrices {
    /// All zero, for `n` degrees of freedom.
    pub fn zeros(n: usize) -> Self {
        ElementMatrices {
            m: DMatrix::zeros(n, n),
            s: DMatrix::zeros(n, n),
            k: DMatrix::zeros(n, n),
            m_o: DMatrix::zeros(n, 2),
            q_x: DVector::zeros(n),
            q_y: DVector::zeros(n),
        }
    }

    /// The matrices of an element of length `len` (m) starting at lever coordinate `x0` (m).
    pub fn new(kind: ElementKind, section: &Section, len: f64, x0: f64) -> Self {
        let n = kind.dofs();
        let shapes = kind.shape_functions(len);
        let (ra, ea, ei) = (
            section.density * section.area,
            section.young * section.area,
            section.young * section.inertia,
        );
        let ElementMatrices {
            mut m,
            mut s,
            mut k,
            mut m_o,
            mut q_x,
            mut q_y,
        } = ElementMatrices::zeros(n);
        for (xi, w) in gauss_legendre(QUADRATURE_POINTS) {
            let wx = w * len;
            let x = x0 + xi * len;
            let (nu, nv, du, d2v) = values(&shapes, xi, len);
            m += (&nu * nu.transpose() + &nv * nv.transpose()) * (ra * wx);
            s += (&nv * nu.transpose() - &nu * nv.transpose()) * (ra * wx);
            k += (&du * du.transpose() * ea + &d2v * d2v.transpose() * ei) * wx;
            for i in 0..n {
                m_o[(i, 0)] += ra * nu[i] * wx;
                m_o[(i, 1)] += ra * nv[i] * wx;
            }
            q_x += &nu * (ra * x * wx);
            q_y += &nv * (ra * x * wx);
        }
        ElementMatrices {
            m,
            s,
            k,
            m_o,
            q_x,
            q_y,
        }
    }
}

/// The shape-function columns at xi: Nu, Nv, Nu' = dNu/dx, Nv'' = d^2Nv/dx^2.
pub(crate) fn values(
    shapes: &[(Field, Vec<f64>)],
    xi: f64,
    len: f64,
) -> (DVector<f64>, DVector<f64>, DVector<f64>, DVector<f64>) {
    let n = shapes.len();
    let pick = |field: Field, k: usize| {
        DVector::from_iterator(
            n,
            shapes.iter().map(|(f, c)| {
                if *f == field {
                    poly_derivative(c, k, xi) / len.powi(k as i32)
                } else {
                    0.0
                }
            }),
        )
    };
    (
        pick(Field::Axial, 0),
        pick(Field::Transverse, 0),
        pick(Field::Axial, 1),
        pick(Field::Transverse, 2),
    )
}

/// The geometric stiffness [k_g] = int N(x) Nv'^T Nv' dx of an element of length `len` (m)
/// under the axial force `axial(x)` (N, tension positive, x local in [0, len]): exact for a
/// polynomial N(x) of degree up to 15 - 2 (2p - 2), p the bending degree (3 or 5).
pub fn geometric_stiffness(
    kind: ElementKind,
    len: f64,
    axial: &dyn Fn(f64) -> f64,
) -> DMatrix<f64> {
    let n = kind.dofs();
    let shapes = kind.shape_functions(len);
    let mut kg = DMatrix::zeros(n, n);
    for (xi, w) in gauss_legendre(QUADRATURE_POINTS) {
        let dv = DVector::from_iterator(
            n,
            shapes.iter().map(|(f, c)| {
                if *f == Field::Transverse {
                    poly_derivative(c, 1, xi) / len
                } else {
                    0.0
                }
            }),
        );
        kg += &dv * dv.transpose() * (axial(xi * len) * w * len);
    }
    kg
}

/// The consistent nodal load {f} = int (Nu^T p_x(x) + Nv^T p_y(x)) dx of a distributed load
/// (p_x, p_y)(x) (N/m, lever frame, x local in [0, len]).
pub fn distributed_load(
    kind: ElementKind,
    len: f64,
    load: &dyn Fn(f64) -> (f64, f64),
) -> DVector<f64> {
    let shapes = kind.shape_functions(len);
    let mut f = DVector::zeros(kind.dofs());
    for (xi, w) in gauss_legendre(QUADRATURE_POINTS) {
        let (nu, nv, _, _) = values(&shapes, xi, len);
        let (px, py) = load(xi * len);
        f += (nu * px + nv * py) * (w * len);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEEL: Section = Section {
        young: 210e9,
        density: 7850.0,
        area: 1.5e-4,
        inertia: 4.5e-10,
    }; // crate::bench_lever()'s

    /// The frame element's matrices are the textbook ones (Przemieniecki): mass rho A L / 420
    /// [156, 22L, 54, -13L; ...] in bending and rho A L / 6 [2, 1; 1, 2] axially, stiffness
    /// EI / L^3 [12, 6L, -12, 6L; ...] and EA / L [1, -1; -1, 1]; to 1e-12 relative.
    #[test]
    fn frame_element_is_the_textbook_one() {
        let l = 0.045;
        let e = ElementMatrices::new(ElementKind::Frame, &STEEL, l, 0.0);
        let ra = STEEL.density * STEEL.area;
        let mb = [
            [156.0, 22.0 * l, 54.0, -13.0 * l],
            [22.0 * l, 4.0 * l * l, 13.0 * l, -3.0 * l * l],
            [54.0, 13.0 * l, 156.0, -22.0 * l],
            [-13.0 * l, -3.0 * l * l, -22.0 * l, 4.0 * l * l],
        ];
        let ei = STEEL.young * STEEL.inertia;
        let kb = [
            [12.0, 6.0 * l, -12.0, 6.0 * l],
            [6.0 * l, 4.0 * l * l, -6.0 * l, 2.0 * l * l],
            [-12.0, -6.0 * l, 12.0, -6.0 * l],
            [6.0 * l, 2.0 * l * l, -6.0 * l, 4.0 * l * l],
        ];
        // Degrees of freedom u1 v1 t1 u2 v2 t2: bending 1, 2, 4, 5; axial 0, 3.
        let bi = [1, 2, 4, 5];
        for i in 0..4 {
            for j in 0..4 {
                let want_m = ra * l / 420.0 * mb[i][j];
                let want_k = ei / l.powi(3) * kb[i][j];
                assert!(
                    (e.m[(bi[i], bi[j])] - want_m).abs() <= 1e-12 * want_m.abs(),
                    "m {i} {j}"
                );
                assert!(
                    (e.k[(bi[i], bi[j])] - want_k).abs() <= 1e-12 * want_k.abs(),
                    "k {i} {j}"
                );
            }
        }
        let ea = STEEL.young * STEEL.area;
        for (i, j, mm, kk) in [(0, 0, 2.0, 1.0), (0, 3, 1.0, -1.0), (3, 3, 2.0, 1.0)] {
            assert!((e.m[(i, j)] - ra * l / 6.0 * mm).abs() < 1e-12 * ra * l);
            assert!((e.k[(i, j)] - ea / l * kk).abs() < 1e-12 * ea / l);
        }
        // no coupling of axial and bending in [m] and [k]
        for i in [0, 3] {
            for j in [1, 2, 4, 5] {
                assert_eq!(e.k[(i, j)], 0.0);
                assert!(e.m[(i, j)].abs() < 1e-15);
            }
        }
    }

    /// [m] and [k] symmetric, [S] skew, for both elements; [m] positive definite; [k] with
    /// exactly the three rigid-body modes of a plane element (u = const; v = const; v = x)
    /// in its null space.
    #[test]
    fn symmetry_and_rigid_body_modes() {
        for kind in [ElementKind::Frame, ElementKind::Quintic] {
            let l = 0.045;
            let e = ElementMatrices::new(kind, &STEEL, l, 0.1);
            assert!((&e.m - e.m.transpose()).amax() < 1e-14 * e.m.amax());
            assert!((&e.k - e.k.transpose()).amax() < 1e-14 * e.k.amax());
            assert!((&e.s + e.s.transpose()).amax() < 1e-14 * e.s.amax());
            assert!(e.m.clone().cholesky().is_some());
            // Null space counted on the Jacobi-scaled matrix (the degrees of freedom are in m, rad
            // and 1/m, so the raw eigenvalues span many decades).
            let d = e.k.diagonal().map(|v| 1.0 / v.sqrt());
            let scaled =
                DMatrix::from_fn(e.k.nrows(), e.k.ncols(), |i, j| e.k[(i, j)] * d[i] * d[j]);
            let eig = scaled.symmetric_eigen();
            let zero = eig.eigenvalues.iter().filter(|v| v.abs() < 1e-10).count();
            assert_eq!(zero, 3, "{kind:?}");
            // The nodal values of the rigid modes: u = 1; v = 1; v = x (v' = 1).
            let nd = kind.node_dofs();
            let rigid = |f: &dyn Fn(Field, usize, f64) -> f64| {
                DVector::from_iterator(
                    kind.dofs(),
                    (0..2)
                        .flat_map(|node| nd.iter().map(move |&(fi, o)| (fi, o, node as f64 * l)))
                        .map(|(fi, o, x)| f(fi, o, x)),
                )
            };
            for mode in [
                rigid(&|f, o, _| {
                    if f == Field::Axial && o == 0 {
                        1.0
                    } else {
                        0.0
                    }
                }),
                rigid(&|f, o, _| {
                    if f == Field::Transverse && o == 0 {
                        1.0
                    } else {
                        0.0
                    }
                }),
                rigid(&|f, o, x| {
                    if f == Field::Transverse {
                        [x, 1.0, 0.0][o]
                    } else {
                        0.0
                    }
                }),
            ] {
                assert!((&e.k * &mode).amax() < 1e-9 * e.k.amax());
            }
        }
    }

    /// The element's total mass: a rigid translation's kinetic form u^T [m] u is rho A L, and
    /// [m_O] sums to rho A L on each axis for a rigid translation; {q_x} on u = 1 is the first
    /// moment rho A (x0 L + L^2 / 2).
    #[test]
    fn mass_moments() {
        for kind in [ElementKind::Frame, ElementKind::Quintic] {
            let (l, x0) = (0.045, 0.09);
            let e = ElementMatrices::new(kind, &STEEL, l, x0);
            let ra = STEEL.density * STEEL.area;
            let nd = kind.node_dofs();
            let unit = |field: Field| {
                DVector::from_iterator(
                    kind.dofs(),
                    (0..2).flat_map(|_| {
                        nd.iter()
                            .map(move |&(f, o)| if f == field && o == 0 { 1.0 } else { 0.0 })
                    }),
                )
            };
            let (ux, uy) = (unit(Field::Axial), unit(Field::Transverse));
            assert!((ux.dot(&(&e.m * &ux)) - ra * l).abs() < 1e-14);
            assert!((uy.dot(&(&e.m * &uy)) - ra * l).abs() < 1e-14);
            assert!((ux.dot(&e.m_o.column(0)) - ra * l).abs() < 1e-14);
            assert!((uy.dot(&e.m_o.column(1)) - ra * l).abs() < 1e-14);
            assert!((ux.dot(&e.q_x) - ra * (x0 * l + l * l / 2.0)).abs() < 1e-15);
            assert!((uy.dot(&e.q_y) - ra * (x0 * l + l * l / 2.0)).abs() < 1e-15);
        }
    }
}
