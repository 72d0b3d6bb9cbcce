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

mod crank;
pub use crank::*;
mod normals;
use normals::*;

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
