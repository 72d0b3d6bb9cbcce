//! The periodic refit's normal equations and its Gauss-Newton over the drivers' Fourier
//! coefficients.

use super::*;

/// Per sample, the markers' normal equations in the non-first drivers about configuration
/// qs[i]: G_i = J_s^T J_s and h_i = G_i d_i - J_s^T r_i (J_s the markers' Jacobian in those
/// drivers, r_i the residuals, d_i the drivers), and e_i^T e_i with e_i = J_s d_i - r_i:
/// the linear model r_i(d) = r_i + J_s (d - d_i).
pub(super) fn periodic_normals(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    idx: &[usize],
    qs: &[DVector<f64>],
) -> Result<Normals, KinematicsError> {
    driver_normals(mech, obs, idx, qs, 1..mech.drivers.len())
}

/// As [`crate::periodic::periodic_normals`] for the drivers `cols` (the others held).
pub(super) fn driver_normals(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    idx: &[usize],
    qs: &[DVector<f64>],
    cols: std::ops::Range<usize>,
) -> Result<Normals, KinematicsError> {
    let nd = mech.drivers.len();
    let unit = vec![1.0; nd];
    let mut out = Normals {
        g: Vec::with_capacity(qs.len()),
        h: Vec::with_capacity(qs.len()),
        ee: 0.0,
    };
    // Each sample's normal equations on every core, taken in the samples' order (the sum of
    // squares as one after the other makes it).
    let items: Vec<(usize, usize)> = idx.iter().copied().enumerate().collect();
    let per = map_samples(&items, |&(i, s)| {
        let (jm, r) = marker_system(mech, &qs[i], &obs[s]);
        let sens = flexbench_mechanism::assembly::driver_sensitivity(mech, &qs[i], &unit)?;
        let js = (&jm * sens).columns(cols.start, cols.len()).into_owned();
        let d = DVector::from_iterator(
            cols.len(),
            cols.clone()
                .map(|j| mech.drivers[j].coordinate.value(&qs[i])),
        );
        let e = &js * &d - &r;
        Some((e.norm_squared(), js.transpose() * &js, js.transpose() * e))
    });
    for sample in per {
        let (ee, g, h) = sample
            .ok_or_else(|| KinematicsError::Fit("the periodic fit met a toggle position".into()))?;
        out.ee += ee;
        out.g.push(g);
        out.h.push(h);
    }
    Ok(out)
}

/// Gauss-Newton for the Fourier coefficients of the non-first drivers with K harmonics
/// (relinearised at each iterate); returns the coefficients (per driver) and the samples'
/// configurations.
pub(super) fn periodic_gauss_newton(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    idx: &[usize],
    start_q: &[DVector<f64>],
    theta: &[(f64, f64, f64)],
    k: usize,
) -> Option<(Trajectory, Trajectory)> {
    let bases = AngleBasis { theta, k };
    let nd = mech.drivers.len();
    let p = 2 * k + 1;
    // The non-first drivers' series laid end to end, p coefficients each.
    let split = |c: &DVector<f64>| -> Vec<DVector<f64>> {
        (0..nd - 1).map(|j| c.rows(j * p, p).into_owned()).collect()
    };
    let join = |cs: Vec<DVector<f64>>| -> DVector<f64> {
        DVector::from_iterator((nd - 1) * p, cs.iter().flat_map(|c| c.iter().copied()))
    };
    let assemble = |qs: &[DVector<f64>], c: &DVector<f64>| -> Option<Vec<DVector<f64>>> {
        let coefs = split(c);
        let items: Vec<usize> = (0..bases.count()).collect();
        map_samples(&items, |&i| {
            let b = bases.row(i);
            let mut values = vec![theta[i].0];
            values.extend(coefs.iter().map(|c| b.dot(c)));
            mech.assemble_from(&qs[i], &values).ok()
        })
        .into_iter()
        .collect()
    };
    // Start: each driver's series fitted to its own start values (the smoother's, or rest);
    // then Gauss-Newton on the markers (from rest the slide may start centimetres away,
    // where the linearisation overshoots: the steps are halved).
    let mut qs: Vec<DVector<f64>> = start_q.to_vec();
    let start = join(
        (1..nd)
            .map(|j| {
                series_fit(
                    &bases,
                    &qs.iter()
                        .map(|q| mech.drivers[j].coordinate.value(q))
                        .collect::<Vec<_>>(),
                )
                .map(|f| f.0)
            })
            .collect::<Option<Vec<_>>>()?,
    );
    if let Some(q) = assemble(&qs, &start) {
        qs = q;
    }
    // The basis of the samples formed once above, not at every iterate.
    let target = |qs: &[DVector<f64>]| -> Option<DVector<f64>> {
        Some(join(
            periodic_normals(mech, obs, idx, qs)
                .ok()?
                .solve_basis(&bases)?
                .0,
        ))
    };
    let rss_at = |qs: &[DVector<f64>]| markers_rss(mech, obs, idx, qs);
    let (coef, qs) = damped_gauss_newton(start, qs, 20, &target, &assemble, &rss_at)?;
    Some((split(&coef), qs))
}

/// The markers' normal equations per sample, linearised (see
/// [`crate::periodic::periodic_normals`]).
pub(super) struct Normals {
    pub(super) g: Vec<DMatrix<f64>>,
    pub(super) h: Vec<DVector<f64>>,
    pub(super) ee: f64,
}

impl Normals {
    /// The coefficients that minimise the linearised residual, that residual sum of squares
    /// and the inverse of the normal matrix H (the coefficients' covariance per unit noise
    /// variance, coefficients driver by driver), with any basis: `bases[i]` the basis
    /// functions' values at sample i (the same functions for every driver of the normals):
    /// min sum |J_s B_i c - e_i|^2 = ee - 2 c^T g + c^T H c with H = sum (G_i (x) b_i b_i^T)
    /// and g = sum (h_i (x) b_i).
    pub(super) fn solve_basis<B: BasisRows + ?Sized>(
        &self,
        bases: &B,
    ) -> Option<(Vec<DVector<f64>>, f64, DMatrix<f64>)> {
        let (hm, g, m) = self.normal_equations(bases)?;
        let (c, rss, inverse) = self.solve_normal(hm, g, m, true)?;
        Some((c, rss, inverse?))
    }

    /// The normal matrix H and vector g of [`Normals::solve_basis`], and the number of drivers
    /// m (p coefficients each, p the basis' length); None without samples.
    pub(super) fn normal_equations<B: BasisRows + ?Sized>(
        &self,
        bases: &B,
    ) -> Option<(DMatrix<f64>, DVector<f64>, usize)> {
        let m = self.h.first()?.len();
        let p = bases.width()?;
        let np = p * m;
        let mut hm = DMatrix::zeros(np, np);
        let mut g = DVector::zeros(np);
        for i in 0..bases.count() {
            let b = &*bases.row(i);
            for j in 0..m {
                g.rows_mut(j * p, p).axpy(self.h[i][j], b, 1.0);
                for l in 0..m {
                    let w = self.g[i][(j, l)];
                    if w != 0.0 {
                        // blk += (b b^T) w, column by column in place (no product formed;
                        // H is column-major, so a block's column is contiguous); a diagonal
                        // block's upper triangle only, its lower one mirrored below.
                        let bs = b.as_slice();
                        let hs = hm.as_mut_slice();
                        for (c, &bc) in bs.iter().enumerate() {
                            let at = (l * p + c) * np + j * p;
                            let rows = if j == l { c + 1 } else { p };
                            for (e, &br) in hs[at..at + rows].iter_mut().zip(bs) {
                                *e += br * bc * w;
                            }
                        }
                    }
                }
            }
        }
        // The diagonal blocks' lower triangles: b_r b_c w is b_c b_r w to the last bit.
        for j in 0..m {
            for c in 0..p {
                for r in c + 1..p {
                    hm[(j * p + r, j * p + c)] = hm[(j * p + c, j * p + r)];
                }
            }
        }
        Some((hm, g, m))
    }

    /// The normal equations (H, g) of m drivers solved: the coefficients driver by driver, the
    /// residual sum of squares and, when asked, the inverse of H; None when H is not positive
    /// definite.
    #[allow(clippy::type_complexity)]
    pub(super) fn solve_normal(
        &self,
        hm: DMatrix<f64>,
        g: DVector<f64>,
        m: usize,
        inverse: bool,
    ) -> Option<(Vec<DVector<f64>>, f64, Option<DMatrix<f64>>)> {
        let p = g.len() / m.max(1);
        let chol = hm.clone().cholesky()?;
        let c = chol.solve(&g);
        let rss = (self.ee - 2.0 * c.dot(&g) + c.dot(&(&hm * &c))).max(0.0);
        Some((
            (0..m).map(|j| c.rows(j * p, p).into_owned()).collect(),
            rss,
            inverse.then(|| chol.inverse()),
        ))
    }
}
