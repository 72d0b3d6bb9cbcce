//! Kalman filtering and Rauch-Tung-Striebel smoothing of sampled coordinates under a white-noise
//! model of a high derivative: the building blocks of the smoothers of markers (here) and of
//! the mechanism's driving coordinates (`flexbench-mechanism`).
//!
//! State per coordinate: the value and its derivatives up to order ORDER - 1; the ORDER-th
//! derivative is white noise of spectral density s^2 (ORDER = 4: white snap, the constant-jerk
//! model). Discretised exactly: F_ij = h^(j-i)/(j-i)!, Q_ij = s^2 h^(2m-1-i-j) / ((m-1-i)!
//! (m-1-j)! (2m-1-i-j)) (Bar-Shalom, Li & Kirubarajan, Estimation with Applications to Tracking
//! and Navigation, 6.2-6.3, generalised to order m).

use nalgebra::{DMatrix, DVector};

/// Transition and process-noise matrices over a step h for nd coordinates with densities s
/// (module documentation).
pub fn transition(nd: usize, h: f64, s: &[f64]) -> (DMatrix<f64>, DMatrix<f64>) {
    // Derivatives 0..m-1 of each driver, white noise on the m-th: F_ij = h^(j-i)/(j-i)! and
    // Q_ij = s^2 h^(2m-1-i-j) / ((m-1-i)! (m-1-j)! (2m-1-i-j)) (m = 3: the table above).
    let m = ORDER;
    let fact = |n: usize| (1..=n).map(|v| v as f64).product::<f64>();
    let mut f = DMatrix::zeros(m * nd, m * nd);
    let mut q = DMatrix::zeros(m * nd, m * nd);
    for k in 0..nd {
        for i in 0..m {
            for j in 0..m {
                if j >= i {
                    f[(m * k + i, m * k + j)] = h.powi((j - i) as i32) / fact(j - i);
                }
                let e = 2 * m - 1 - i - j;
                q[(m * k + i, m * k + j)] =
                    s[k] * s[k] * h.powi(e as i32) / (fact(m - 1 - i) * fact(m - 1 - j) * e as f64);
            }
        }
    }
    (f, q)
}

/// A linear observation z = H x + v, v ~ N(0, R), of the state at one sample.
pub struct LinearObs {
    /// Observation matrix.
    pub h: DMatrix<f64>,
    /// Observed values.
    pub z: DVector<f64>,
    /// Observation noise covariance.
    pub r: DMatrix<f64>,
}

/// An observation as the filter uses it: restricted to the state components its matrix reads
/// (`cols`) and, when it has more rows than those, reduced to as many rows. The reduction
/// whitens the rows by the Cholesky factor L of R and rotates them by the QR factorisation of
/// the whitened matrix, L^-1 H_c = Q1 R1: the observation R1 x_c + v' of Q1^T L^-1 z, v' ~
/// N(0, I), carries the same information on the state, and the likelihood of the rows it drops
/// (orthogonal to the state's influence) is a constant, `ll_const` = -(|Q2^T L^-1 z|^2 +
/// log det R) / 2 (derivation: the innovation's covariance in the rotated whitened rows is
/// block-diagonal, diag(R1 P R1^T + I, I), and the rotation keeps its determinant). On the
/// smoother's markers (ten rows on the drivers' values) the filter's update then factorises a
/// matrix of the drivers' count instead of ten.
struct Prepared {
    cols: Vec<usize>,
    h: DMatrix<f64>,
    z: DVector<f64>,
    r: DMatrix<f64>,
    ll_const: f64,
    /// The kept rows' share of -log det R / 2 (c / m of it), 0 when not reduced.
    ll_kept: f64,
}

impl Prepared {
    /// `o` prepared (its rows reduced when they outnumber the state components read and R
    /// factorises).
    fn new(o: &LinearObs) -> Prepared {
        let cols: Vec<usize> = (0..o.h.ncols())
            .filter(|&j| o.h.column(j).iter().any(|v| *v != 0.0))
            .collect();
        let hc = o.h.select_columns(&cols);
        let plain = |hc: DMatrix<f64>| Prepared {
            cols: cols.clone(),
            h: hc,
            z: o.z.clone(),
            r: o.r.clone(),
            ll_const: 0.0,
            ll_kept: 0.0,
        };
        if hc.nrows() <= cols.len() {
            return plain(hc);
        }
        let Some(chol) = o.r.clone().cholesky() else {
            return plain(hc);
        };
        let l = chol.l();
        let (Some(hw), Some(zw)) = (
            l.solve_lower_triangular(&hc),
            l.solve_lower_triangular(&o.z),
        ) else {
            return plain(hc);
        };
        let qr = hw.qr();
        let q1 = qr.q();
        let z = q1.transpose() * &zw;
        let dropped = (&zw - &q1 * &z).norm_squared();
        let log_det_r: f64 = l.diagonal().iter().map(|v| 2.0 * v.ln()).sum();
        let c = cols.len();
        Prepared {
            h: qr.r(),
            z,
            r: DMatrix::identity(c, c),
            ll_const: -0.5 * (dropped + log_det_r),
            ll_kept: -0.5 * log_det_r * c as f64 / hc.nrows() as f64,
            cols,
        }
    }
}

/// One sample's observation prepared for the filter ([`LinearObs::prepare`]).
pub struct PreparedObs(Option<Prepared>);

impl LinearObs {
    /// The observation as the filter uses it (reduced when it has more rows than the state
    /// components it reads): prepared where it is made, the rows need not be kept.
    pub fn prepare(&self) -> PreparedObs {
        PreparedObs((self.h.nrows() > 0).then(|| Prepared::new(self)))
    }
}

/// Observations of the state at every sample, prepared once for the filter's passes (a
/// density search runs many passes over the same observations).
pub struct Observations(Vec<Option<Prepared>>);

impl Observations {
    /// The observations of every sample (None, or no rows: nothing observed there).
    pub fn new(obs: &[Option<LinearObs>]) -> Observations {
        Observations(
            obs.iter()
                .map(|o| o.as_ref().and_then(|o| o.prepare().0))
                .collect(),
        )
    }

    /// The observations of every sample, each already prepared (None: nothing observed).
    pub fn from_prepared(obs: Vec<Option<PreparedObs>>) -> Observations {
        Observations(obs.into_iter().map(|o| o.and_then(|o| o.0)).collect())
    }

    /// The number of samples.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there is no sample.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The filter's (or, when smoothed, the Rauch-Tung-Striebel smoother's) state means and
/// covariances, and the innovations' log-likelihood.
pub struct Estimate {
    /// Log-likelihood of the innovations.
    pub loglik: f64,
    /// Log-likelihood of the observations' rows that inform the state: `loglik` without the
    /// rows a reduced observation drops (orthogonal to the state's influence), whitened rows
    /// counted with their share of log det R (c / m of it for c rows kept of m). With R = sigma^2
    /// I it is the likelihood of the observations projected on the state's influence, the one
    /// to choose sigma by when the dropped rows are not noise (a marker exactly on its circle).
    pub loglik_informing: f64,
    /// Mean and covariance of the state at every sample (the smoother's; none when only the
    /// likelihood was asked, `smooth` false: a density search's passes keep nothing).
    pub states: Vec<(DVector<f64>, DMatrix<f64>)>,
    /// The filter's standardised innovations L^-1 y at every observed sample (S = L L^T the
    /// innovation's covariance; in the observation's reduced rows), white and of unit variance
    /// when the model holds: the whiteness test's input (`noise::ljung_box`). Kept with the
    /// states only (empty when `smooth` is false).
    pub innovations: Vec<DVector<f64>>,
}

/// The jerk densities, one per driving coordinate, that maximise `loglik`: one density common to
/// all over a logarithmic grid from 1 to 10^7 (half-decade steps), then each driver's in turn
/// over quarter-decade steps within a decade of it (two sweeps). Returns them with the
/// log-likelihood reached.
pub fn ml_jerk_densities(
    nd: usize,
    loglik: impl Fn(&[f64]) -> Option<f64> + Sync,
) -> Option<(Vec<f64>, f64)> {
    let grid: Vec<Vec<f64>> = (0..15)
        .map(|e| vec![10f64.powf(0.5 * e as f64); nd])
        .collect();
    // Each density's likelihood on its own (on every core), the best taken in order.
    let lls = flexbench_contracts::parallel::map_each(&grid, |s| loglik(s));
    let best = lls
        .into_iter()
        .zip(grid)
        .filter_map(|(l, s)| Some((l?, s)))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(refine_jerk_densities(best, 2, loglik))
}

/// The jerk densities that maximise `loglik` from `start` (densities and their
/// log-likelihood): each driver's in turn over quarter-decade steps within a decade of it, for
/// `sweeps` sweeps. Returns them with the log-likelihood reached (`start`'s when none gains).
/// A driver's nine steps are evaluated on every core, then taken in order: the first of the
/// highest that gains, as one after the other would.
pub fn refine_jerk_densities(
    start: (f64, Vec<f64>),
    sweeps: usize,
    loglik: impl Fn(&[f64]) -> Option<f64> + Sync,
) -> (Vec<f64>, f64) {
    let mut best = start;
    for _ in 0..sweeps {
        for j in 0..best.1.len() {
            let centre = best.1[j];
            let steps: Vec<Vec<f64>> = (-4..=4)
                .map(|e| {
                    let mut s = best.1.clone();
                    s[j] = centre * 10f64.powf(0.25 * e as f64);
                    s
                })
                .collect();
            let lls = flexbench_contracts::parallel::map_each(&steps, |s| loglik(s));
            for (l, s) in lls.into_iter().zip(steps) {
                if let Some(l) = l {
                    if l > best.0 {
                        best = (l, s);
                    }
                }
            }
        }
    }
    (best.1, best.0)
}

/// Kalman filter over `t` for nd driving coordinates with white snap of density s (the model of
/// [`transition`]), from the prior (x0, p0) at t[0], observed by `obs` (one entry per sample);
/// the RTS backward pass when `smooth`. Covariance update in Joseph form. None when an
/// innovation's covariance is not positive definite.
///
/// Numerics: the recursion runs on the state scaled to the sample step tau (derivative o times
/// tau^o), where a diffuse prior and the collapsed covariances differ by far fewer orders of
/// magnitude than in SI units (at 60 samples/s the jerk's variance is 10^12 times the value's
/// unscaled; the plain recursion lost every digit there); the smoother's gain solves with the
/// Cholesky factor of the predicted covariance instead of inverting it. The scaling is exact
/// (F~ = D F D^-1, Q~ = D Q D, H~ = H D^-1); the results are returned in SI.
pub fn kalman_rts(
    t: &[f64],
    obs: &Observations,
    nd: usize,
    s: &[f64],
    (x0, p0): (DVector<f64>, DMatrix<f64>),
    smooth: bool,
) -> Option<Estimate> {
    let n = t.len();
    let scaled = Scaled::new(t, nd);
    let d = &scaled.d;
    let mut x = DVector::from_fn(scaled.dim, |i, _| x0[i] * d[i]);
    let mut p = scaled.sandwich(&p0, false);
    let mut loglik = 0.0;
    let mut loglik_informing = 0.0;
    let mut states = Vec::with_capacity(if smooth { n } else { 0 });
    let mut innovations = Vec::new();
    let mut steps = StepCache::default();
    let mut work = Work::new(scaled.dim);
    for k in 0..n {
        if k > 0 {
            let (f, ft, qn) = steps.get(&scaled, t[k] - t[k - 1], s);
            work.predict(f, ft, qn, &mut x, &mut p);
        }
        if let Some(o) = obs.0.get(k).and_then(|o| o.as_ref()) {
            let (ll, e) = work.update(&scaled, o, &mut x, &mut p, smooth)?;
            loglik += ll;
            loglik_informing += ll - o.ll_const + o.ll_kept;
            innovations.extend(e);
        }
        if smooth {
            states.push((x.clone(), p.clone()));
        }
    }
    if smooth {
        scaled.backward(t, s, &mut states)?;
    }
    for (x, p) in states.iter_mut() {
        for i in 0..scaled.dim {
            x[i] /= d[i];
        }
        *p = scaled.sandwich(p, true);
    }
    Some(Estimate {
        loglik,
        loglik_informing,
        states,
        innovations,
    })
}

/// The scaled transition F~, its transpose and the noise Q~ of the last few step lengths met:
/// a recording's steps are nearly all equal, so they are formed once instead of at every
/// sample. Nearly: t = frame / rate rounds, so the differences of successive times take two or
/// three values a few units in the last place apart, alternating, more of them the later the
/// times (a single remembered step was formed again at 13,898 of the 24,000 samples of a 100 s
/// recording at 240 frames/s, four at 16). The same step length gives the same matrices, bit
/// for bit, whichever is remembered.
#[derive(Default)]
struct StepCache {
    steps: Vec<CachedStep>,
    /// Where the next new step goes once [`STEPS_KEPT`] are remembered.
    next: usize,
}

/// Step lengths a [`StepCache`] remembers.
const STEPS_KEPT: usize = 4;

/// A step length (s) with its F~^T, F~ and Q~.
type CachedStep = (f64, DMatrix<f64>, DMatrix<f64>, DMatrix<f64>);

impl StepCache {
    /// (F~, F~^T, Q~) over a step `h` (s) with snap densities `s` (the same `s` at every call).
    fn get(
        &mut self,
        scaled: &Scaled,
        h: f64,
        s: &[f64],
    ) -> (&DMatrix<f64>, &DMatrix<f64>, &DMatrix<f64>) {
        let at = match self.steps.iter().position(|c| c.0 == h) {
            Some(at) => at,
            None => {
                let (f, q) = scaled.step(h, s);
                let step = (h, f.transpose(), f, q);
                if self.steps.len() < STEPS_KEPT {
                    self.steps.push(step);
                    self.steps.len() - 1
                } else {
                    let at = self.next;
                    self.steps[at] = step;
                    self.next = (at + 1) % STEPS_KEPT;
                    at
                }
            }
        };
        let (_, ft, f, q) = &self.steps[at];
        (f, ft, q)
    }
}

/// The filter's work space: the recursion's products formed in place, without allocating at
/// every sample.
struct Work {
    x: DVector<f64>,
    fp: DMatrix<f64>,
    ikh: DMatrix<f64>,
    ikh_t: DMatrix<f64>,
}

impl Work {
    fn new(dim: usize) -> Work {
        Work {
            x: DVector::zeros(dim),
            fp: DMatrix::zeros(dim, dim),
            ikh: DMatrix::zeros(dim, dim),
            ikh_t: DMatrix::zeros(dim, dim),
        }
    }

    /// The prediction x~ <- F~ x~, P~ <- F~ P~ F~^T + Q~ (symmetrised).
    fn predict(
        &mut self,
        f: &DMatrix<f64>,
        ft: &DMatrix<f64>,
        q: &DMatrix<f64>,
        x: &mut DVector<f64>,
        p: &mut DMatrix<f64>,
    ) {
        self.x.gemv(1.0, f, x, 0.0);
        x.copy_from(&self.x);
        self.fp.gemm(1.0, f, p, 0.0);
        p.copy_from(q);
        p.gemm(1.0, &self.fp, ft, 1.0);
        symmetrise(p);
    }

    /// The measurement update of (x~, P~) by `o` (H~ = H D^-1 on the columns it reads),
    /// covariance in Joseph form; returns the innovation's log-likelihood term (with the
    /// reduced rows' constant) and, when `standardised`, the innovation L^-1 y (S = L L^T);
    /// None when its covariance is not positive definite.
    fn update(
        &mut self,
        scaled: &Scaled,
        o: &Prepared,
        x: &mut DVector<f64>,
        p: &mut DMatrix<f64>,
        standardised: bool,
    ) -> Option<(f64, Option<DVector<f64>>)> {
        let (m, c) = (o.h.nrows(), o.cols.len());
        if m == 0 {
            return Some((o.ll_const, None));
        }
        let d = &scaled.d;
        let h = DMatrix::from_fn(m, c, |i, j| o.h[(i, j)] / d[o.cols[j]]);
        let y = &o.z - &h * DVector::from_fn(c, |j, _| x[o.cols[j]]);
        // H~ P~ = H~_c P~[cols, :], m x dim
        let hp = &h * p.select_rows(&o.cols);
        let chol = (hp.select_columns(&o.cols) * h.transpose() + &o.r).cholesky()?;
        let sol = chol.solve(&y);
        let log_det: f64 = chol.l().diagonal().iter().map(|v| 2.0 * v.ln()).sum();
        let ll = -0.5 * (y.dot(&sol) + log_det) + o.ll_const;
        let e = standardised
            .then(|| chol.l().solve_lower_triangular(&y))
            .flatten();
        // K = P H^T S^-1 = (S^-1 H P)^T
        let gain = chol.solve(&hp).transpose();
        x.gemv(1.0, &gain, &y, 1.0);
        // I - K H~, H~ reading the columns `cols` only
        self.ikh.fill_with_identity();
        for (jj, &col) in o.cols.iter().enumerate() {
            self.ikh
                .column_mut(col)
                .gemv(-1.0, &gain, &h.column(jj), 1.0);
        }
        self.ikh.transpose_to(&mut self.ikh_t);
        self.fp.gemm(1.0, &self.ikh, p, 0.0);
        p.gemm(1.0, &self.fp, &self.ikh_t, 0.0);
        let kr = &gain * &o.r;
        p.gemm(1.0, &kr, &gain.transpose(), 1.0);
        symmetrise(p);
        Some((ll, e))
    }
}

/// P <- (P + P^T) / 2, in place.
fn symmetrise(p: &mut DMatrix<f64>) {
    let n = p.nrows();
    for j in 0..n {
        for i in 0..j {
            let v = (p[(i, j)] + p[(j, i)]) * 0.5;
            p[(i, j)] = v;
            p[(j, i)] = v;
        }
    }
}

/// The state scaled to the sample step tau for `nd` drivers: D = diag(tau^o) per coordinate
/// (scaled quantities carry a tilde in the comments).
struct Scaled {
    nd: usize,
    dim: usize,
    d: Vec<f64>,
}

impl Scaled {
    /// The scaling of the samples `t` (tau their median step).
    fn new(t: &[f64], nd: usize) -> Scaled {
        let dim = ORDER * nd;
        let tau = {
            let mut steps: Vec<f64> = t
                .windows(2)
                .map(|w| w[1] - w[0])
                .filter(|h| *h > 0.0)
                .collect();
            steps.sort_by(|a, b| a.total_cmp(b));
            steps.get(steps.len() / 2).copied().unwrap_or(1.0)
        };
        let d: Vec<f64> = (0..dim).map(|i| tau.powi((i % ORDER) as i32)).collect();
        Scaled { nd, dim, d }
    }

    /// D M D (into scaled units) or D^-1 M D^-1 (`back` to SI) of a covariance.
    fn sandwich(&self, m: &DMatrix<f64>, back: bool) -> DMatrix<f64> {
        let d = &self.d;
        DMatrix::from_fn(m.nrows(), m.ncols(), |i, j| {
            if back {
                m[(i, j)] / (d[i] * d[j])
            } else {
                m[(i, j)] * d[i] * d[j]
            }
        })
    }

    /// The scaled transition F~ = D F D^-1 and noise Q~ = D Q D over a step `h` (s) with snap
    /// densities `s`.
    fn step(&self, h: f64, s: &[f64]) -> (DMatrix<f64>, DMatrix<f64>) {
        let (f, q) = transition(self.nd, h, s);
        let d = &self.d;
        let ft = DMatrix::from_fn(self.dim, self.dim, |i, j| f[(i, j)] * d[i] / d[j]);
        (ft, self.sandwich(&q, false))
    }

    /// The RTS backward pass over the filtered `states` (snap densities `s`); each sample's
    /// prediction of the next formed again from its filtered state, by the forward pass's own
    /// operations on the same step matrices (the same bits, without holding a second mean and
    /// covariance per sample). The gain solves with the Cholesky factor of the predicted
    /// covariance (LU where it fails). None when neither solves.
    fn backward(
        &self,
        t: &[f64],
        s: &[f64],
        states: &mut [(DVector<f64>, DMatrix<f64>)],
    ) -> Option<()> {
        let mut steps = StepCache::default();
        let mut work = Work::new(self.dim);
        for k in (0..t.len().saturating_sub(1)).rev() {
            let (f, ft, q) = steps.get(self, t[k + 1] - t[k], s);
            let (mut x_pred, mut p_pred) = states[k].clone();
            work.predict(f, ft, q, &mut x_pred, &mut p_pred);
            // G = P_k F^T Ppred^-1 = (Ppred^-1 F P_k)^T, F P_k the prediction's own product
            let fp = &work.fp;
            let g = match p_pred.clone().cholesky() {
                Some(c) => c.solve(fp).transpose(),
                None => p_pred.clone().lu().solve(fp)?.transpose(),
            };
            let xk = &states[k].0 + &g * (&states[k + 1].0 - &x_pred);
            let pk = &states[k].1 + &g * (&states[k + 1].1 - &p_pred) * g.transpose();
            states[k] = (xk, (&pk + pk.transpose()) * 0.5);
        }
        Some(())
    }
}

/// The state's size per driver: the driver and its derivatives up to order ORDER - 1, the
/// ORDER-th derivative white noise.
pub const ORDER: usize = 4;

/// A prior for nd coordinates at the first sample: their values `values` with covariance
/// `value_cov` (nd x nd), every derivative diffuse (variance 1e2 for the rate, times 1e4 per
/// order above).
pub fn diffuse_prior(
    values: &DVector<f64>,
    value_cov: &DMatrix<f64>,
) -> (DVector<f64>, DMatrix<f64>) {
    let nd = values.len();
    let mut x = DVector::zeros(ORDER * nd);
    let mut p = DMatrix::zeros(ORDER * nd, ORDER * nd);
    for i in 0..nd {
        x[ORDER * i] = values[i];
        for j in 0..nd {
            p[(ORDER * i, ORDER * j)] = value_cov[(i, j)];
        }
        for o in 1..ORDER {
            p[(ORDER * i + o, ORDER * i + o)] = 1e2 * 1e4f64.powi(o as i32 - 1);
        }
    }
    (x, p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_contracts::gauss::Gauss;

    /// The next number of a fixed sequence, uniform in (-1, 1).
    fn sym(g: &mut Gauss) -> f64 {
        2.0 * g.uniform() - 1.0
    }

    /// Two drivers over 12 samples (one step longer), observed by ten rows on their values
    /// (the smoother's markers: reduced to two), by one row, by rows reading a rate too, by
    /// none, and by rows that read no state (a constant term alone).
    fn case() -> (Vec<f64>, Vec<Option<LinearObs>>, DVector<f64>, DMatrix<f64>) {
        let nd = 2;
        let dim = ORDER * nd;
        let mut seed = Gauss::new(7);
        let t: Vec<f64> = (0..12)
            .map(|k| k as f64 / 240.0 + if k > 6 { 0.5 / 240.0 } else { 0.0 })
            .collect();
        let obs = (0..t.len())
            .map(|k| {
                let (rows, cols): (usize, Vec<usize>) = match k {
                    3 => return None,
                    5 => (1, vec![0]),
                    7 => (3, vec![0, 1, ORDER]),
                    9 => (2, vec![]),
                    _ => (10, vec![0, ORDER]),
                };
                let mut h = DMatrix::zeros(rows, dim);
                for i in 0..rows {
                    for &j in &cols {
                        h[(i, j)] = sym(&mut seed);
                    }
                }
                let z = DVector::from_fn(rows, |_, _| sym(&mut seed));
                let a = DMatrix::from_fn(rows, rows, |_, _| 0.1 * sym(&mut seed));
                let r = &a * a.transpose() + DMatrix::identity(rows, rows) * 0.01;
                Some(LinearObs { h, z, r })
            })
            .collect();
        let x0 = DVector::from_fn(dim, |_, _| sym(&mut seed));
        let (_, p0) = diffuse_prior(&x0.rows(0, nd).into(), &DMatrix::identity(nd, nd));
        (t, obs, x0, p0 * 1e-4)
    }

    /// The filter's likelihood and the smoother's means and covariances equal those of the
    /// whole trajectory as one Gaussian: the states stacked (the prior carried by F and Q), the
    /// observations stacked, the likelihood of z and the conditional mean and covariance of x
    /// given z by dense linear algebra.
    #[test]
    fn filter_and_smoother_equal_the_batch_gaussian() {
        let (t, obs, x0, p0) = case();
        let (nd, s) = (2, [30.0, 300.0]);
        let dim = ORDER * nd;
        let n = t.len();
        let est = kalman_rts(
            &t,
            &Observations::new(&obs),
            nd,
            &s,
            (x0.clone(), p0.clone()),
            true,
        )
        .expect("positive definite");
        // Prior of the stacked states: mean F^k x0, covariance by the recursion of the model.
        let mut mean = DVector::zeros(n * dim);
        let mut cov = DMatrix::zeros(n * dim, n * dim);
        mean.rows_mut(0, dim).copy_from(&x0);
        cov.view_mut((0, 0), (dim, dim)).copy_from(&p0);
        for k in 1..n {
            let (f, q) = transition(nd, t[k] - t[k - 1], &s);
            let m = &f * mean.rows(dim * (k - 1), dim);
            mean.rows_mut(dim * k, dim).copy_from(&m);
            for j in 0..k {
                let c = &f * cov.view((dim * (k - 1), dim * j), (dim, dim));
                cov.view_mut((dim * k, dim * j), (dim, dim)).copy_from(&c);
                cov.view_mut((dim * j, dim * k), (dim, dim))
                    .copy_from(&c.transpose());
            }
            let ckk = &f * cov.view((dim * (k - 1), dim * (k - 1)), (dim, dim)) * f.transpose() + q;
            cov.view_mut((dim * k, dim * k), (dim, dim)).copy_from(&ckk);
        }
        // Stacked observations.
        let rows: usize = obs.iter().flatten().map(|o| o.h.nrows()).sum();
        let (mut h, mut z, mut r) = (
            DMatrix::zeros(rows, n * dim),
            DVector::zeros(rows),
            DMatrix::zeros(rows, rows),
        );
        let mut at = 0;
        for (k, o) in obs.iter().enumerate() {
            let Some(o) = o else { continue };
            let m = o.h.nrows();
            h.view_mut((at, dim * k), (m, dim)).copy_from(&o.h);
            z.rows_mut(at, m).copy_from(&o.z);
            r.view_mut((at, at), (m, m)).copy_from(&o.r);
            at += m;
        }
        let y = &z - &h * &mean;
        let sc = (&h * &cov * h.transpose() + r)
            .cholesky()
            .expect("positive definite");
        let log_det: f64 = sc.l().diagonal().iter().map(|v| 2.0 * v.ln()).sum();
        let loglik = -0.5 * (y.dot(&sc.solve(&y)) + log_det);
        // A sum of about 100 terms of order 10: agreement to 1e-9 is rounding.
        assert!(
            (loglik - est.loglik).abs() < 1e-9,
            "{loglik} {}",
            est.loglik
        );
        let gain = sc.solve(&(&h * &cov)).transpose();
        let post_mean = &mean + &gain * &y;
        let post_cov = &cov - &gain * &h * &cov;
        for k in 0..n {
            let (xm, pm) = &est.states[k];
            for i in 0..dim {
                let sd = pm[(i, i)].sqrt();
                let (a, b) = (post_mean[dim * k + i], xm[i]);
                assert!(
                    (a - b).abs() <= 1e-7 * sd,
                    "sample {k} state {i}: {a} {b} (sd {sd})"
                );
                for j in 0..dim {
                    let (a, b) = (post_cov[(dim * k + i, dim * k + j)], pm[(i, j)]);
                    let scale = (pm[(i, i)] * pm[(j, j)]).sqrt();
                    assert!(
                        (a - b).abs() <= 1e-7 * scale,
                        "sample {k} cov {i},{j}: {a} {b}"
                    );
                }
            }
        }
    }
}
