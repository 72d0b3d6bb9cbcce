//! The mechanism's own help (the crank-angle mode): in steady motion the crank turns at a mean
//! speed with a periodic ripple, and every other driving coordinate is a periodic function of
//! the crank angle. Both are fitted to the markers over every turn of the recording at once.
//!
//! Model: theta(t) = c_0 + c_1 u + sum_{h=1..K0} (a_h cos h W u + b_h sin h W u), u = t - t_0,
//! W = c_1 the mean speed ([`CrankFit`]: the speed's ripple allowed for); d_j(t) =
//! f_j(theta(t)), f_j(theta) = a_0 + sum_{h=1..K} (a_h cos h theta + b_h sin h theta). Rates by
//! the chain rule: d_j' = f_j'(theta) theta', d_j'' = f_j''(theta) theta'^2 + f_j'(theta)
//! theta''. The coefficients minimise the markers' residual sum of squares, by Gauss-Newton
//! with the markers' Jacobian J_m dq/dd_j times the basis: the crank's first (the others held
//! at the smoother's), then the others'. K0 and K by the Bayesian information criterion
//! BIC = N ln(RSS / N) + p ln N (N marker coordinates, p coefficients) on the markers
//! linearised about the smoothed motion, K0 up to [`MAX_CRANK_HARMONICS`], K over 2, 4, ...,
//! [`MAX_HARMONICS`], from the harmonics the bench's liaison forces need
//! ([`crate::spectrum`], rounded up to even) on: BIC weighs a harmonic by its amplitude in the
//! markers' positions, the forces by h^2 times it, and the wind-pump slide's 7th harmonic is
//! below the markers' noise yet 2 % of the forces' peak. Measured on two renders at
//! 240 frames/s (truth camera): BIC from 2 took 6 harmonics, forces at B 4.05 % and 4.02 % of
//! their peak; from the floor of 8, 2.30 % and 2.49 %; forced to 10, 5.8 % and 5.1 %.

use flexbench_contracts::parallel::map_samples;
use flexbench_signal::rts::trend_harmonic_basis;
use nalgebra::{DMatrix, DVector};

use flexbench_mechanism::model::Coordinate;
use flexbench_mechanism::Mechanism;

use crate::observe::{marker_system, FitSample, MarkerState};
use crate::KinematicsError;

/// Most harmonics tried per driver.
pub const MAX_HARMONICS: usize = 40;

/// What the periodic fit chose and found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeriodicReport {
    /// Harmonics of the non-first drivers in the crank angle (by BIC).
    pub harmonics: usize,
    /// Harmonics of the crank angle's ripple in time (by BIC).
    pub crank_harmonics: usize,
    /// The crank's mean speed, rad/s.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub crank_speed: f64,
    /// Turns of the first driver covered by the samples.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub turns: f64,
    /// RMS marker residual of the periodic fit, m per coordinate.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms: f64,
    /// RMS marker residual of the starting (smoothed) motion, m per coordinate.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_start: f64,
    /// Least harmonics of the non-first drivers: those the bench's liaison forces need
    /// (`spectrum`), rounded up to even (0 when the bench cannot be simulated).
    #[serde(default)]
    pub harmonics_floor: usize,
    /// Harmonics of the crank angle the bench's liaison forces need (`spectrum`, at the fit's
    /// crank speed; 0 when the bench cannot be simulated): the rate check's too.
    #[serde(default)]
    pub forces_harmonics: usize,
}

fn basis(theta: f64, k: usize) -> (DVector<f64>, DVector<f64>, DVector<f64>) {
    let p = 2 * k + 1;
    let (mut b, mut b1, mut b2) = (DVector::zeros(p), DVector::zeros(p), DVector::zeros(p));
    b[0] = 1.0;
    for h in 1..=k {
        let hf = h as f64;
        let (s, c) = (hf * theta).sin_cos();
        b[2 * h - 1] = c;
        b[2 * h] = s;
        b1[2 * h - 1] = -hf * s;
        b1[2 * h] = hf * c;
        b2[2 * h - 1] = -hf * hf * c;
        b2[2 * h] = -hf * hf * s;
    }
    (b, b1, b2)
}

/// The first of [`basis`]'s three: the functions' values alone (the same formulas, the same
/// bits), for the fits that read no derivative.
fn basis_values(theta: f64, k: usize) -> DVector<f64> {
    let mut b = DVector::zeros(2 * k + 1);
    b[0] = 1.0;
    for h in 1..=k {
        let (s, c) = (h as f64 * theta).sin_cos();
        b[2 * h - 1] = c;
        b[2 * h] = s;
    }
    b
}

/// The crank angle as a steady turn with a periodic ripple in time:
/// theta(t) = c_0 + c_1 u + sum_{h=1..K} (a_h cos h W u + b_h sin h W u), u = t - t0, W the mean
/// speed.
struct CrankFit {
    t0: f64,
    speed: f64,
    harmonics: usize,
    coef: DVector<f64>,
}

impl CrankFit {
    /// (theta, theta', theta'') at time t.
    fn at(&self, t: f64) -> (f64, f64, f64) {
        let [b, b1, b2] = trend_harmonic_basis(t - self.t0, self.speed, self.harmonics);
        (b.dot(&self.coef), b1.dot(&self.coef), b2.dot(&self.coef))
    }
}

/// The most harmonics a series in the crank angle may have given the samples per turn: a
/// third of them (a series sampled at few points per turn aliases, even when the turns sample
/// different phases; BIC alone let a 60 frames/s recording take 28 harmonics from 26 samples
/// per turn, and its accelerations with them).
fn resolvable_harmonics(samples: usize, turns: f64) -> usize {
    ((samples as f64 / turns.max(1e-9)) / 3.0).floor().max(2.0) as usize
}

/// Most harmonics of the crank's ripple tried.
pub const MAX_CRANK_HARMONICS: usize = 24;

/// The least-squares series through `values` (one per sample) on the basis `bases` (its values
/// at each sample): coefficients and residual sum of squares. None when the basis is singular
/// over the samples.
fn series_fit<B: BasisRows + ?Sized>(bases: &B, values: &[f64]) -> Option<(DVector<f64>, f64)> {
    let p = bases.width()?;
    let mut ata = DMatrix::zeros(p, p);
    let mut atb = DVector::zeros(p);
    for (i, v) in values.iter().enumerate().take(bases.count()) {
        let b = bases.row(i);
        ata += &*b * b.transpose();
        atb += &*b * *v;
    }
    let c = ata.cholesky()?.solve(&atb);
    let rss = values
        .iter()
        .enumerate()
        .take(bases.count())
        .map(|(i, v)| (v - bases.row(i).dot(&c)).powi(2))
        .sum::<f64>();
    Some((c, rss))
}

/// Basis functions' values at each sample, as a fit reads them: held ([`DVector`]s), or made
/// as they are read ([`AngleBasis`]).
trait BasisRows: Sync {
    /// The number of samples.
    fn count(&self) -> usize;
    /// The values at sample `i`.
    fn row(&self, i: usize) -> std::borrow::Cow<'_, DVector<f64>>;
    /// The number of functions (None without samples).
    fn width(&self) -> Option<usize> {
        (self.count() > 0).then(|| self.row(0).len())
    }
}

impl BasisRows for [DVector<f64>] {
    fn count(&self) -> usize {
        self.len()
    }
    fn row(&self, i: usize) -> std::borrow::Cow<'_, DVector<f64>> {
        std::borrow::Cow::Borrowed(&self[i])
    }
}

/// The crank-angle basis of `k` harmonics ([`basis`]) at the samples' angles `theta`, made as
/// it is read instead of held: held, it grew with the samples times the harmonics a longer
/// recording resolves (34 at 300 s of the bench: 40 MB a copy). Made again at every pass
/// (one sine and cosine per harmonic and sample): the process stage alone 14.4 -> 14.8 s and
/// 232 -> 226 MB at 100 s, 63.1 -> 67.6 s and 549 -> 466 MB at 300 s, the same bits.
struct AngleBasis<'a> {
    theta: &'a [CrankAngle],
    k: usize,
}

impl BasisRows for AngleBasis<'_> {
    fn count(&self) -> usize {
        self.theta.len()
    }
    fn row(&self, i: usize) -> std::borrow::Cow<'_, DVector<f64>> {
        std::borrow::Cow::Owned(basis_values(self.theta[i].0, self.k))
    }
}

/// The crank angle and its first two time derivatives at a sample (rad, rad/s, rad/s^2).
type CrankAngle = (f64, f64, f64);

/// A sequence of vectors, one per sample: configurations q, or a series' coefficients.
type Trajectory = Vec<DVector<f64>>;

/// The residual vector at the configurations (None when it cannot be formed).
type Target<'a> = dyn Fn(&[DVector<f64>]) -> Option<DVector<f64>> + 'a;

/// The configurations reached from the previous ones for new coefficients (None on failure).
type Assemble<'a> = dyn Fn(&[DVector<f64>], &DVector<f64>) -> Option<Vec<DVector<f64>>> + 'a;

/// Gauss-Newton on series coefficients `coef` (every series laid end to end) for the markers:
/// at most `iters` steps towards `target(qs)` (the linearised least-squares solution about the
/// configurations), each halved while the markers' residual `rss_at` grows or a sample fails
/// to `assemble`; stops when the residual no longer changes (1e-9 relative). Returns the
/// coefficients and configurations reached; None when a linearisation fails.
fn damped_gauss_newton(
    mut coef: DVector<f64>,
    mut qs: Vec<DVector<f64>>,
    iters: usize,
    target: &Target<'_>,
    assemble: &Assemble<'_>,
    rss_at: &dyn Fn(&[DVector<f64>]) -> f64,
) -> Option<(DVector<f64>, Trajectory)> {
    let mut last = rss_at(&qs);
    for _ in 0..iters {
        let c = target(&qs)?;
        let mut step = 1.0;
        let mut accepted = None;
        while step > 1e-3 {
            let trial = &coef + (&c - &coef) * step;
            if let Some(q) = assemble(&qs, &trial) {
                let r = rss_at(&q);
                if r <= last {
                    accepted = Some((trial, q, r));
                    break;
                }
            }
            step *= 0.5;
        }
        let Some((trial, q, r)) = accepted else { break };
        let done = (last - r).abs() <= 1e-9 * r.max(1e-300);
        coef = trial;
        qs = q;
        last = r;
        if done {
            break;
        }
    }
    Some((coef, qs))
}

/// Relative difference of crank speeds within which the forces' harmonics found at one are
/// taken for the other: the simulated forces scale about as the speed squared, so their
/// harmonics' amplitudes move by 2e-4 of themselves at most, and the count (the last above
/// [`crate::spectrum::HARMONIC_SHARE`] of the peak) changes only for one lying that close to
/// the threshold. A refit of the same recording differs by about 1e-7 (the bench renders:
/// 14.6505148 and 14.6505142 rad/s).
pub const SAME_SPEED: f64 = 1e-4;

/// What earlier fits of the recording chose, for a refit: the forces' harmonics with the crank
/// speed (rad/s) they were found at, and the harmonics of the crank's ripple and of the other
/// drivers to take as they are.
pub type Known = (Option<(f64, usize)>, Option<(usize, usize)>);

/// Refit the smoothed motion `start` (every sample's q, q', q'') with the non-first drivers
/// periodic in the first (module documentation). None-states are left as they are. Errors
/// when the first driver is not an angle or covers less than two turns.
///
/// No covariance: the coefficients' own (s^2 H^-1) leaves out the bias of the harmonics the
/// fit leaves out, which dominates at low noise (bands holding 56-81 % of the true marker
/// accelerations in docs/signal-study.md; estimating the left-out power from a fit with
/// twice the harmonics was too noisy to calibrate them). The smoother's bands stand.
///
/// `known`: the forces' harmonics ([`crate::spectrum::harmonics_needed`]) an earlier fit of the
/// same recording found, with the crank speed (rad/s) they were found at; taken when this fit's
/// speed is within [`SAME_SPEED`] of it instead of simulating the bench again. And the
/// harmonics of the crank's ripple and of the other drivers to take as they are (an earlier
/// fit's), instead of choosing them by BIC.
pub fn periodic_refit(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    start: &[FitSample],
    (known, fixed): Known,
) -> Result<(Vec<FitSample>, PeriodicReport), KinematicsError> {
    let CrankFirst {
        idx,
        theta,
        start_q,
        crank,
        rss0,
        ncoord,
        turns,
    } = crank_first(mech, t, obs, start, fixed.map(|f| f.0))?;
    let fit = PeriodicFit {
        mech,
        obs,
        idx: &idx,
        theta: &theta,
        ncoord,
    };
    // BIC on the markers' positions weighs a harmonic by its amplitude there, the forces by h^2
    // times it: the harmonics the bench's forces need are the least taken (module doc).
    let speed = crank.coef[1];
    let needed = match known {
        Some((at, needed)) if (speed - at).abs() <= SAME_SPEED * at.abs() => needed,
        _ => crate::spectrum::harmonics_needed(mech, speed).unwrap_or(0),
    };
    let floor = needed + needed % 2;
    let range = match fixed {
        Some((_, k)) => (k, k),
        None => (floor, resolvable_harmonics(idx.len(), turns)),
    };
    let (k, coefs, qs) = fit.best(start_q, range, fixed.is_some())?;
    let (out, rss) = fit.samples(start, k, &coefs, &qs)?;
    let rms = |s: f64| (s / ncoord.max(1) as f64).sqrt();
    Ok((
        out,
        PeriodicReport {
            harmonics: k,
            crank_harmonics: crank.harmonics,
            crank_speed: crank.coef[1],
            turns,
            harmonics_floor: floor,
            forces_harmonics: needed,
            rms: rms(rss),
            rms_start: rms(rss0),
        },
    ))
}

/// The crank's refit, the periodic fit's first step: the samples fitted (`idx`), the crank's
/// path and the configurations after its refit, its fit, the smoothed motion's residual sum of
/// squares and coordinate count, and the turns covered.
struct CrankFirst {
    idx: Vec<usize>,
    theta: Vec<CrankAngle>,
    start_q: Trajectory,
    crank: CrankFit,
    rss0: f64,
    ncoord: usize,
    turns: f64,
}

/// The crank's mean speed (rad/s) as the periodic refit of the smoothed motion `start` finds it
/// ([`periodic_refit`]'s first step, whose speed its forces' harmonics are simulated at): for
/// choosing those harmonics ahead of the refit. Errors as the refit does.
pub fn crank_speed(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    start: &[FitSample],
) -> Result<f64, KinematicsError> {
    Ok(crank_first(mech, t, obs, start, None)?.crank.coef[1])
}

/// [`periodic_refit`]'s checks and first step, the crank's refit ([`CrankFirst`]; its ripple's
/// harmonics `fixed` when given, by BIC otherwise).
fn crank_first(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    start: &[FitSample],
    fixed: Option<usize>,
) -> Result<CrankFirst, KinematicsError> {
    if t.len() != start.len() {
        return Err(KinematicsError::Fit(format!(
            "the periodic fit got {} times for {} samples",
            t.len(),
            start.len()
        )));
    }
    let nd = mech.drivers.len();
    if nd < 2 || !matches!(mech.drivers[0].coordinate, Coordinate::Angle { .. }) {
        return Err(KinematicsError::Fit("the periodic fit needs a first driving coordinate that is an angle (the crank) and at least one other".into()));
    }
    let idx: Vec<usize> = (0..start.len())
        .filter(|&k| start[k].state.is_some())
        .collect();
    let theta = first_driver_path(mech, start, &idx);
    let (lo, hi) = theta
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x.0), b.max(x.0))
        });
    let turns = (hi - lo) / std::f64::consts::TAU;
    if turns < 2.0 {
        return Err(KinematicsError::Fit(format!(
            "the periodic fit needs at least two turns of the {}; the samples cover {turns:.2}",
            mech.drivers[0].name
        )));
    }
    let start_q: Vec<DVector<f64>> = idx
        .iter()
        .filter_map(|&k| start[k].state.as_ref().map(|s| s.0.clone()))
        .collect();
    let (rss0, ncoord) = rss_and_count(mech, obs, &idx, &start_q);
    // The crank first: its angle as a steady turn with a periodic ripple in time.
    let times: Vec<f64> = idx.iter().map(|&k| t[k]).collect();
    let (theta, start_q, crank) =
        crank_refit(mech, obs, (&idx, &times), &start_q, &theta, (ncoord, fixed)).ok_or_else(
            || {
                KinematicsError::Fit(format!(
                    "the periodic fit of the {} did not converge",
                    mech.drivers[0].name
                ))
            },
        )?;
    Ok(CrankFirst {
        idx,
        theta,
        start_q,
        crank,
        rss0,
        ncoord,
        turns,
    })
}

/// The first driver's (the crank's) value, rate and acceleration at the samples `idx` of the
/// smoothed motion.
fn first_driver_path(mech: &Mechanism, start: &[FitSample], idx: &[usize]) -> Vec<CrankAngle> {
    let c0 = &mech.drivers[0].coordinate;
    idx.iter()
        .filter_map(|&k| {
            let (q, qd, qdd) = start[k].state.as_ref()?;
            let n = q.len();
            Some((
                c0.value(q),
                c0.gradient(q, n).dot(qd),
                c0.gradient(q, n).dot(qdd) + c0.quadratic(q, qd),
            ))
        })
        .collect()
}

/// The markers' residual sum of squares of configurations `qs` at the samples `idx`, and the
/// number of marker coordinates it sums.
fn rss_and_count(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    idx: &[usize],
    qs: &[DVector<f64>],
) -> (f64, usize) {
    let items: Vec<(usize, usize)> = idx.iter().copied().enumerate().collect();
    let per = map_samples(&items, |&(i, k)| {
        let (_, r) = marker_system(mech, &qs[i], &obs[k]);
        (r.norm_squared(), r.len())
    });
    // Summed in the samples' order: the sum one after the other makes.
    let mut s = 0.0;
    let mut n = 0;
    for (r2, len) in per {
        s += r2;
        n += len;
    }
    (s, n)
}

/// The non-first drivers' periodic fit once the crank's is done: the samples it fits, the
/// crank's refitted angle there, and the number of marker coordinates.
struct PeriodicFit<'a> {
    mech: &'a Mechanism,
    obs: &'a [Vec<Option<MarkerState>>],
    idx: &'a [usize],
    theta: &'a [CrankAngle],
    ncoord: usize,
}

impl PeriodicFit<'_> {
    /// The number of harmonics by BIC on the markers linearised about the smoothed motion, then
    /// Gauss-Newton at that number, from two starts: the smoother's drivers, and every
    /// non-first driver at rest (its value in the mechanism file). Near a fold the markers
    /// cannot tell the slide's two positions apart, and at low frame rates the smoother may
    /// follow the wrong one for a stretch; such a motion is not periodic, and the fit from
    /// rest, which is, wins on the markers. Returns the harmonics, coefficients and
    /// configurations of the start with the lower BIC.
    fn best(
        &self,
        start_q: Trajectory,
        (k_floor, k_cap): (usize, usize),
        fixed: bool,
    ) -> Result<(usize, Trajectory, Trajectory), KinematicsError> {
        let (mech, theta) = (self.mech, self.theta);
        let rest_q: Option<Vec<DVector<f64>>> = start_q
            .iter()
            .zip(theta)
            .map(|(q, th)| {
                let mut values = vec![th.0];
                values.extend(mech.drivers[1..].iter().map(|d| d.value));
                mech.assemble_from(q, &values).ok()
            })
            .collect();
        let n = self.ncoord as f64;
        let nd = mech.drivers.len();
        // The two starts' fits are independent: on two cores, then taken in order (the same
        // choice as one after the other).
        let starts: Vec<Trajectory> = [Some(start_q), rest_q].into_iter().flatten().collect();
        let fits = flexbench_contracts::parallel::map_in_order(
            flexbench_contracts::parallel::threads(),
            &starts,
            |from| {
                let k = match fixed {
                    true => k_floor,
                    false => self.harmonics_by_bic(from, (k_floor, k_cap))?,
                };
                let (coefs, qs) = periodic_gauss_newton(mech, self.obs, self.idx, from, theta, k)?;
                let (rss, _) = rss_and_count(mech, self.obs, self.idx, &qs);
                let bic = n * (rss.max(1e-300) / n).ln() + ((2 * k + 1) * (nd - 1)) as f64 * n.ln();
                Some((bic, k, coefs, qs))
            },
        );
        let mut chosen: Option<(f64, usize, Trajectory, Trajectory)> = None;
        for fit in fits.into_iter().flatten() {
            if chosen.as_ref().is_none_or(|c| fit.0 < c.0) {
                chosen = Some(fit);
            }
        }
        let (_, k, coefs, qs) = chosen.ok_or_else(|| KinematicsError::Fit("the periodic fit did not assemble at every sample from either start (the smoother's motion or rest)".into()))?;
        Ok((k, coefs, qs))
    }

    /// The even number of harmonics (from the floor, at least 2, to the cap; the cap alone when
    /// the floor exceeds it) with the least BIC on the markers linearised about `from`; None
    /// when the normal equations cannot be formed or solved.
    fn harmonics_by_bic(
        &self,
        from: &[DVector<f64>],
        (k_floor, k_cap): (usize, usize),
    ) -> Option<usize> {
        let lin = periodic_normals(self.mech, self.obs, self.idx, from).ok()?;
        let nd = self.mech.drivers.len();
        let n = self.ncoord as f64;
        let mut best: Option<(f64, usize)> = None;
        let top = MAX_HARMONICS.min(k_cap);
        let first = k_floor.clamp(2, top.max(2));
        let first = first - first % 2;
        let ks: Vec<usize> = (first.max(2)..=top)
            .step_by(2)
            .take_while(|&k| (2 * k + 1) * (nd - 1) * 4 <= self.ncoord)
            .collect();
        // The basis of k harmonics is the first 2 k + 1 functions of the largest's, so each
        // k's normal equations are a corner of the largest's, entry by entry the same sums:
        // gathered once instead of once per k.
        let &k_top = ks.last()?;
        let bases = AngleBasis {
            theta: self.theta,
            k: k_top,
        };
        let (hm, g, m) = lin.normal_equations(&bases)?;
        let p_top = 2 * k_top + 1;
        for k in ks {
            let p = 2 * k + 1;
            let corner: Vec<usize> = (0..m)
                .flat_map(|j| (0..p).map(move |r| j * p_top + r))
                .collect();
            let (hk, gk) = (
                hm.select_rows(&corner).select_columns(&corner),
                g.select_rows(&corner),
            );
            let Some((_, rss, _)) = lin.solve_normal(hk, gk, m, false) else {
                continue;
            };
            let bic = n * (rss.max(1e-300) / n).ln() + (p * (nd - 1)) as f64 * n.ln();
            if best.is_none_or(|b| bic < b.0) {
                best = Some((bic, k));
            }
        }
        best.map(|b| b.1)
    }

    /// The fitted samples (the drivers' rates and accelerations from the harmonics by the
    /// chain rule, the markers' residuals), `start` elsewhere; and their markers' RSS.
    fn samples(
        &self,
        start: &[FitSample],
        k: usize,
        coefs: &[DVector<f64>],
        qs: &[DVector<f64>],
    ) -> Result<(Vec<FitSample>, f64), KinematicsError> {
        let (mech, obs) = (self.mech, self.obs);
        let mut out: Vec<FitSample> = start.to_vec();
        let mut rss = 0.0;
        for (i, &s) in self.idx.iter().enumerate() {
            let (th, th1, th2) = self.theta[i];
            let (_, b1, b2) = basis(th, k);
            let mut rates = vec![th1];
            let mut accs = vec![th2];
            for c in coefs {
                rates.push(b1.dot(c) * th1);
                accs.push(b2.dot(c) * th1 * th1 + b1.dot(c) * th2);
            }
            let q = qs[i].clone();
            let (qd, qdd) = mech.motion_at(&q, &rates, &accs)?;
            let (_, r) = marker_system(mech, &q, &obs[s]);
            rss += r.norm_squared();
            let mut residual = vec![None; mech.markers.len()];
            let present: Vec<usize> = (0..mech.markers.len())
                .filter(|&m| obs[s][m].is_some())
                .collect();
            for (row, &m) in present.iter().enumerate() {
                residual[m] = Some(nalgebra::Vector2::new(r[2 * row], r[2 * row + 1]));
            }
            out[s] = FitSample {
                state: Some((q, qd, qdd)),
                residual,
            };
        }
        Ok((out, rss))
    }
}

/// The markers' residual sum of squares of configurations `qs` at the samples `idx`.
fn markers_rss(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    idx: &[usize],
    qs: &[DVector<f64>],
) -> f64 {
    let items: Vec<(usize, usize)> = idx.iter().copied().enumerate().collect();
    map_samples(&items, |&(i, k)| {
        marker_system(mech, &qs[i], &obs[k]).1.norm_squared()
    })
    .into_iter()
    .sum()
}

/// The crank's mean speed (rad/s): the least-squares slope of its smoothed angle against
/// time; None when it is zero or not finite.
fn mean_speed(times: &[f64], theta: &[CrankAngle]) -> Option<f64> {
    let t0 = *times.first()?;
    let n = times.len() as f64;
    let (su, sth) = times
        .iter()
        .zip(theta)
        .fold((0.0, 0.0), |(a, b), (t, th)| (a + (t - t0), b + th.0));
    let (mu, mth) = (su / n, sth / n);
    let (num, den) = times.iter().zip(theta).fold((0.0, 0.0), |(a, b), (t, th)| {
        (a + (t - t0 - mu) * (th.0 - mth), b + (t - t0 - mu).powi(2))
    });
    let speed = num / den;
    (speed.is_finite() && speed != 0.0).then_some(speed)
}

/// The number of the crank ripple's harmonics (0 to `cap`) with the least BIC on the markers
/// linearised about the smoothed motion (`lin`), the trend at `speed`; None when no number fits.
fn crank_harmonics_by_bic(
    lin: &Normals,
    times: &[f64],
    speed: f64,
    cap: usize,
    ncoord: usize,
) -> Option<usize> {
    let t0 = *times.first()?;
    let nc = ncoord as f64;
    let mut best: Option<(f64, usize)> = None;
    for k in 0..=cap {
        let p = 2 + 2 * k;
        if 4 * p > ncoord {
            break;
        }
        let bases: Vec<DVector<f64>> = times
            .iter()
            .map(|t| trend_harmonic_basis(t - t0, speed, k)[0].clone())
            .collect();
        let Some((_, rss, _)) = lin.solve_basis(bases.as_slice()) else {
            continue;
        };
        let bic = nc * (rss.max(1e-300) / nc).ln() + p as f64 * nc.ln();
        if best.is_none_or(|b| bic < b.0) {
            best = Some((bic, k));
        }
    }
    best.map(|b| b.1)
}

/// The crank's refit ([`CrankFit`]): the mean speed from the smoothed angle, the ripple's
/// harmonics by BIC on the markers linearised about the smoothed motion, then Gauss-Newton
/// (the other drivers held), the speed updated from the fitted trend and the fit repeated.
/// Returns the crank's (theta, theta', theta'') per sample, the configurations, the fit.
fn crank_refit(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    (idx, times): (&[usize], &[f64]),
    start_q: &[DVector<f64>],
    theta: &[(f64, f64, f64)],
    (ncoord, fixed): (usize, Option<usize>),
) -> Option<(Vec<CrankAngle>, Trajectory, CrankFit)> {
    let nd = mech.drivers.len();
    let t0 = *times.first()?;
    let mut speed = mean_speed(times, theta)?;
    let lin = driver_normals(mech, obs, idx, start_q, 0..1).ok()?;
    let turns = (theta.last()?.0 - theta.first()?.0).abs() / std::f64::consts::TAU;
    let cap = MAX_CRANK_HARMONICS.min(resolvable_harmonics(times.len(), turns));
    let k = match fixed {
        Some(k) => k,
        None => crank_harmonics_by_bic(&lin, times, speed, cap, ncoord)?,
    };
    let mut qs = start_q.to_vec();
    let mut fit = None;
    let rss_at = |qs: &[DVector<f64>]| markers_rss(mech, obs, idx, qs);
    for _round in 0..2 {
        let bases: Vec<DVector<f64>> = times
            .iter()
            .map(|t| trend_harmonic_basis(t - t0, speed, k)[0].clone())
            .collect();
        let assemble = |qs: &[DVector<f64>], c: &DVector<f64>| -> Option<Vec<DVector<f64>>> {
            let items: Vec<(&DVector<f64>, &DVector<f64>)> = qs.iter().zip(&bases).collect();
            map_samples(&items, |(q, b)| {
                let mut values = vec![b.dot(c)];
                values.extend((1..nd).map(|j| mech.drivers[j].coordinate.value(q)));
                mech.assemble_from(q, &values).ok()
            })
            .into_iter()
            .collect()
        };
        // Start: the series fitted to the smoothed angle itself (valid where the smoother
        // is); then Gauss-Newton on the markers.
        let thetas: Vec<f64> = theta.iter().map(|th| th.0).collect();
        let (start, _) = series_fit(bases.as_slice(), &thetas)?;
        if let Some(q) = assemble(&qs, &start) {
            qs = q;
        }
        let target = |qs: &[DVector<f64>]| -> Option<DVector<f64>> {
            let lin = driver_normals(mech, obs, idx, qs, 0..1).ok()?;
            lin.solve_basis(bases.as_slice())?.0.into_iter().next()
        };
        let (coef, reached) = damped_gauss_newton(start, qs, 12, &target, &assemble, &rss_at)?;
        qs = reached;
        fit = Some(CrankFit {
            t0,
            speed,
            harmonics: k,
            coef,
        });
        // The fitted trend is the mean speed: rebuild the ripple's basis on it.
        let f = fit.as_ref()?;
        if (f.coef[1] - speed).abs() <= 1e-9 * speed.abs() {
            break;
        }
        speed = f.coef[1];
    }
    let fit = fit?;
    let theta_new = times.iter().map(|&t| fit.at(t)).collect();
    Some((theta_new, qs, fit))
}

/// Per sample, the markers' normal equations in the non-first drivers about configuration
/// qs[i]: G_i = J_s^T J_s and h_i = G_i d_i - J_s^T r_i (J_s the markers' Jacobian in those
/// drivers, r_i the residuals, d_i the drivers), and e_i^T e_i with e_i = J_s d_i - r_i:
/// the linear model r_i(d) = r_i + J_s (d - d_i).
fn periodic_normals(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    idx: &[usize],
    qs: &[DVector<f64>],
) -> Result<Normals, KinematicsError> {
    driver_normals(mech, obs, idx, qs, 1..mech.drivers.len())
}

/// As [`crate::periodic::periodic_normals`] for the drivers `cols` (the others held).
fn driver_normals(
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
fn periodic_gauss_newton(
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
struct Normals {
    g: Vec<DMatrix<f64>>,
    h: Vec<DVector<f64>>,
    ee: f64,
}

impl Normals {
    /// The coefficients that minimise the linearised residual, that residual sum of squares
    /// and the inverse of the normal matrix H (the coefficients' covariance per unit noise
    /// variance, coefficients driver by driver), with any basis: `bases[i]` the basis
    /// functions' values at sample i (the same functions for every driver of the normals):
    /// min sum |J_s B_i c - e_i|^2 = ee - 2 c^T g + c^T H c with H = sum (G_i (x) b_i b_i^T)
    /// and g = sum (h_i (x) b_i).
    fn solve_basis<B: BasisRows + ?Sized>(
        &self,
        bases: &B,
    ) -> Option<(Vec<DVector<f64>>, f64, DMatrix<f64>)> {
        let (hm, g, m) = self.normal_equations(bases)?;
        let (c, rss, inverse) = self.solve_normal(hm, g, m, true)?;
        Some((c, rss, inverse?))
    }

    /// The normal matrix H and vector g of [`Normals::solve_basis`], and the number of drivers
    /// m (p coefficients each, p the basis' length); None without samples.
    fn normal_equations<B: BasisRows + ?Sized>(
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
    fn solve_normal(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The basis made as it is read is the held one to the bit: [`basis_values`] is
    /// [`basis`]'s first, and [`AngleBasis`] gives the same rows as the vectors it replaced,
    /// at angles of many turns (where h theta is large).
    #[test]
    fn angle_basis_is_the_held_basis_to_the_bit() {
        let theta: Vec<CrankAngle> = (0..500)
            .map(|i| (0.37 + 1.9 * i as f64, 14.65, 0.0))
            .collect();
        let k = 34;
        let held: Vec<DVector<f64>> = theta.iter().map(|t| basis(t.0, k).0).collect();
        let made = AngleBasis { theta: &theta, k };
        assert_eq!(made.count(), held.len());
        assert_eq!(made.width(), held.as_slice().width());
        for (i, h) in held.iter().enumerate() {
            let bits = |v: &DVector<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&made.row(i)), bits(h), "sample {i}");
        }
    }
}
