//! The motion's own assembly branch through the folds of the map from the driving coordinates
//! to the markers.
//!
//! At a fold the markers lose sight of one direction of the driving coordinates to first
//! order: on the bench, when the rocker passes C'D vertical, the lever's markers see how far
//! the rocker is from the vertical but not on which side, so that two slide positions x_D =
//! x_C' +- r sin(beta) (r = |C'D|, beta the angle of C'D from the vertical) explain them
//! equally. The true motion either goes through the fold or turns back, and noise can send a
//! sample-by-sample fit either way. The mirror continuation has a kink in the drivers at the
//! fold (the slide's velocity jumps by 2 r beta', over a metre per second on the bench); the
//! true one is smooth. So both continuations are followed from each fold's zone to the next one
//! and the one kept is the more likely under a white-jerk motion model of the drivers (the
//! constant-acceleration Kalman filter of [`crate::smoother`]), the fitted drivers entering as
//! measurements with the covariance the markers give them, sigma^2 (J_d^T J_d)^-1. Samples in
//! the zone itself are bridged by the Rauch-Tung-Striebel smoother through both sides, then
//! refitted to their markers with that bridge as their prior.
//!
//! That test sees a window about each zone. The whole recording is then judged at once
//! ([`crate::fold::branch_path`]): outside the zones every sample has its two roots (the second
//! found by a profile scan along the blind driver, [`crate::fold::second_root`]), and dynamic
//! programming picks one per sample for the least jerk (weighted by the markers' uncertainty,
//! which grows without bound towards a fold) plus the rest prior. At 60 frames/s the sample
//! fit's continuation crossed to the other root between zones and the recording's first
//! stretch was the atlas' pick; the path repairs both, and the zones are bridged again.

use nalgebra::{DMatrix, DVector};

use flexbench_mechanism::model::Coordinate;
use flexbench_mechanism::Mechanism;
use flexbench_signal::kalman::{
    diffuse_prior, kalman_rts, ml_jerk_densities, LinearObs, Observations, ORDER,
};

use crate::iterated::{gauss_newton, NoiseModel};
use crate::observe::{
    branch_atlas, driver_values, driver_weights, fold_ratio, marker_noise, marker_system, predict,
    refine, sight_jacobian, weakest_direction, MarkerState, PRIOR_WEIGHT,
};
use crate::KinematicsError;

use crate::fold_sight::{near_misses, sight, NEAR_MISS_SIGHT};

mod roots;
use roots::*;
mod paths;
pub use crate::fold_sight::{FOLD_MISS_RATIO, FOLD_NEAR, FOLD_ZONE_RATIO};
use paths::*;

/// Spread of the rest prior of the fold test ([`crate::fold::window_score`]), as a fraction of the
/// mechanism's reference length.
pub const REST_SPREAD: f64 = 0.1;

/// Least distance between two roots of a sample's markers' equations in the blind driver for
/// them to count as two ([`crate::fold::distinct_root`]), as a fraction of the mechanism's
/// reference length (0.72 mm on the bench, whose reference length is 0.289 m, the rocker's
/// centroid to D).
pub const MIRROR_STEP: f64 = 0.0025;

/// Step of the profile scan that seeks a sample's second root ([`crate::fold::second_root`]), as
/// a fraction of the reference length (2.9 mm on the bench): a fifth of the distance between
/// the two roots just outside a fold's zone (15 mm or more on the bench), so that the scan
/// meets the other root's basin; the root itself is then found by Levenberg-Marquardt from
/// the scan's point in it. (The step was [`MIRROR_STEP`] until the speed issue: four times the
/// scan's work for the same roots, to 1e-11 of the forces' peaks on the shipped recording.)
pub const SCAN_STEP: f64 = 0.01;

/// How far the profile scan goes on each side of the fitted root, as a fraction of the
/// reference length (0.35 m on the bench, where the two slide positions are up to
/// 2 |C'D| = 0.31 m apart; the scan stops sooner where the loop no longer closes).
pub const MIRROR_SPAN: f64 = 1.2;

/// Samples on each side of a fold's zone that the likelihood test and the bridge use.
pub const FOLD_SIDE: usize = 24;

/// The driving coordinates of one sample (angles scaled by the reference length, m) and their
/// covariance from the markers, m^2; None where they are not fitted or not trusted.
type DriverObs = Option<(DVector<f64>, DMatrix<f64>)>;

/// The mechanism's configuration q at each sample (None where not fitted).
pub type Configurations = Vec<Option<DVector<f64>>>;

/// What the fold zones' decisions change, per sample: the configuration, the ratio of how well
/// the markers see every driver ([`fold_ratio`]), the drivers' observations.
type FoldState<'a> = (
    &'a mut [Option<DVector<f64>>],
    &'a mut [f64],
    &'a mut [DriverObs],
);

/// What the fold resolution found, for the run's summary.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FoldReport {
    /// Fold zones met (runs of samples where the markers nearly lose sight of a driver).
    pub zones: usize,
    /// Zones after which the sample-by-sample fit had followed the mirror and was switched.
    pub switched: usize,
    /// Samples then moved to the other root by the whole recording's branch path
    /// ([`crate::fold::branch_path`]).
    pub relabelled: usize,
    /// Jerk spectral density of the drivers' motion model per driver, chosen by maximum
    /// likelihood, m/s^3 per sqrt(Hz) (angles scaled by the reference length).
    #[serde(deserialize_with = "flexbench_contracts::json::vec_f64_or_nan")]
    pub jerk_density: Vec<f64>,
    /// Of the zones, those where the sample fit came near a fold and turned back
    /// ([`FOLD_MISS_RATIO`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub near_misses: usize,
}

/// Whether a count is zero (left out of the record then).
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A driver's smoothed values and their covariance at one sample.
type DriverEstimate = (DVector<f64>, DMatrix<f64>);

/// Driver observations prepared for the filter's passes: the first observed sample, the prior
/// it gives (its rates diffuse) and the later ones as the filter's observations.
struct DriverSeries {
    first: usize,
    prior: (DVector<f64>, DMatrix<f64>),
    obs: Observations,
}

impl DriverSeries {
    /// The series of `zs` (nd drivers); None when nothing is observed.
    fn new(zs: &[DriverObs], nd: usize) -> Option<DriverSeries> {
        let first = zs.iter().position(|z| z.is_some())?;
        let (z0, r0) = zs[first].as_ref()?;
        let mut sel = DMatrix::zeros(nd, ORDER * nd);
        for i in 0..nd {
            sel[(i, ORDER * i)] = 1.0;
        }
        let obs: Vec<Option<LinearObs>> = zs[first..]
            .iter()
            .enumerate()
            .map(|(k, z)| {
                let (v, c) = z.as_ref().filter(|_| k > 0)?;
                Some(LinearObs {
                    h: sel.clone(),
                    z: v.clone(),
                    r: c.clone(),
                })
            })
            .collect();
        Some(DriverSeries {
            first,
            prior: diffuse_prior(z0, r0),
            obs: Observations::new(&obs),
        })
    }
}

/// Log-likelihood of driver observations under the white-jerk model with density `s`, and,
/// when `smooth`, the Rauch-Tung-Striebel smoothed driver values and their covariances. The
/// first observation is the prior (its rates diffuse) and adds nothing to the likelihood.
fn driver_filter(
    t: &[f64],
    series: &DriverSeries,
    nd: usize,
    s: &[f64],
    smooth: bool,
) -> Option<(f64, Vec<Option<DriverEstimate>>)> {
    let first = series.first;
    let est = kalman_rts(
        &t[first..],
        &series.obs,
        nd,
        s,
        series.prior.clone(),
        smooth,
    )?;
    let mut out = vec![None; t.len()];
    if smooth {
        for (k, (x, p)) in est.states.iter().enumerate() {
            let v = DVector::from_iterator(nd, (0..nd).map(|i| x[ORDER * i]));
            let c = DMatrix::from_fn(nd, nd, |i, j| p[(ORDER * i, ORDER * j)]);
            out[first + k] = Some((v, c));
        }
    }
    Some((est.loglik, out))
}

/// One sample's fit from the prediction of the earlier ones (or, with no history, the best
/// of the branch atlas) and how well it sees every driver ([`fold_ratio`]).
#[allow(clippy::too_many_arguments)]
fn fit_next(
    mech: &Mechanism,
    t: &[f64],
    k: usize,
    o: &[Option<MarkerState>],
    qs: &[Option<DVector<f64>>],
    seen: &[f64],
    atlas: &[DVector<f64>],
    w: &[f64],
) -> (Option<DVector<f64>>, f64) {
    let targets_of = |q: &DVector<f64>| -> Vec<f64> {
        mech.drivers.iter().map(|d| d.coordinate.value(q)).collect()
    };
    // Fewer measured coordinates than drivers: the markers do not determine the sample (a
    // configuration there would be the prediction's, not the data's).
    if 2 * o.iter().flatten().count() < mech.drivers.len().max(1) {
        return (None, 0.0);
    }
    let fitted = match predict(mech, t, k, qs, seen) {
        Some(p) => refine(mech, &p, o, &targets_of(&p), w, 30),
        None => atlas
            .iter()
            .filter_map(|q| refine(mech, q, o, &targets_of(q), w, 30))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(mut q, c)| {
                // Started afresh from the atlas (its angles within one turn): each body's angle
                // unwrapped to the nearest turn of the last fitted sample's, so that the crank
                // angle does not jump by whole turns.
                if let Some(last) = qs[..k].iter().rev().flatten().next() {
                    for b in 0..mech.bodies.len() {
                        let i = 3 * b + 2;
                        q[i] += std::f64::consts::TAU
                            * ((last[i] - q[i]) / std::f64::consts::TAU).round();
                    }
                }
                (q, c)
            }),
    };
    // The fold's zone is the mechanism's geometry, not the sample's luck: the ratio of every
    // marker, so that a marker missing at one sample (hidden, or flagged and left out) does not
    // make a zone of it.
    let every = vec![Some(MarkerState::default()); o.len()];
    let ratio = fitted.as_ref().map_or(0.0, |(q, _)| sight(mech, q, &every));
    (fitted.map(|f| f.0), ratio)
}

/// The fitted drivers of configuration q (scaled) with their covariance sigma^2 (J_d^T
/// J_d)^-1 from the markers present, J_d the markers' Jacobian in the scaled drivers.
fn driver_obs(
    mech: &Mechanism,
    q: &DVector<f64>,
    o: &[Option<MarkerState>],
    noise: f64,
) -> DriverObs {
    let scale = driver_weights(mech, 1.0);
    let js = sight_jacobian(mech, q, o)?;
    if js.nrows() < mech.drivers.len() {
        return None;
    }
    let cov = (js.transpose() * &js).try_inverse()? * (noise * noise);
    let v = DVector::from_iterator(
        mech.drivers.len(),
        mech.drivers
            .iter()
            .zip(&scale)
            .map(|(d, s)| d.coordinate.value(q) * s),
    );
    (cov.iter().all(|c| c.is_finite()) && v.iter().all(|c| c.is_finite())).then_some((v, cov))
}

/// The configurations that best explain the markers, sample by sample, on the motion's
/// own assembly branch through every fold (see the module's documentation). The first sample
/// with the most markers seen is fitted from the best of a whole turn of the assembly branch,
/// each later one from the quadratic extrapolation of the earlier ones, and those before it
/// likewise backwards in time; a sample whose markers give fewer coordinates than drivers is
/// left unfitted. Then each fold's zone is resolved in time order.
pub fn fit_positions(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
) -> Result<(Configurations, FoldReport), KinematicsError> {
    // Long: the first full sample's fit from a whole turn, the sweeps forward and back from it, and
    // each fold's zone resolved, in their order over the configurations they share.
    let w = driver_weights(mech, PRIOR_WEIGHT);
    let atlas = branch_atlas(mech, 72)?;
    let n = obs.len();
    // The sequence starts where the most markers are seen (the first such sample): a start
    // with markers missing (hidden, or flagged and left out) may not tell the assembly's two
    // branches apart, and every later sample would follow the wrong one. The samples before it
    // are fitted backwards from it.
    let k0 = (0..n)
        .max_by_key(|&k| (obs[k].iter().flatten().count(), std::cmp::Reverse(k)))
        .unwrap_or(0);
    let mut qs: Vec<Option<DVector<f64>>> = Vec::with_capacity(n);
    let mut seen: Vec<f64> = Vec::with_capacity(n);
    for (k, o) in obs.iter().enumerate().skip(k0) {
        let (q, r) = fit_next(mech, &t[k0..], k - k0, o, &qs, &seen, &atlas, &w);
        qs.push(q);
        seen.push(r);
    }
    if k0 > 0 {
        // Backwards: time reversed (negated, so that it increases), from the start's fit.
        let t_back: Vec<f64> = (0..=k0).map(|j| -t[k0 - j]).collect();
        let (mut q_back, mut s_back) = (vec![qs[0].clone()], vec![seen[0]]);
        for j in 1..=k0 {
            let (q, r) = fit_next(mech, &t_back, j, &obs[k0 - j], &q_back, &s_back, &atlas, &w);
            q_back.push(q);
            s_back.push(r);
        }
        q_back.reverse();
        s_back.reverse();
        q_back.pop();
        s_back.pop();
        q_back.append(&mut qs);
        s_back.append(&mut seen);
        (qs, seen) = (q_back, s_back);
    }
    let mut report = FoldReport::default();
    let every = vec![Some(MarkerState::default()); mech.markers.len()];
    for (a, b) in near_misses(mech, &qs, &seen, &every) {
        report.near_misses += 1;
        for s in &mut seen[a..b] {
            *s = s.min(NEAR_MISS_SIGHT);
        }
    }
    if !(0..n).any(|k| in_zone(k, &qs, &seen)) {
        return Ok((qs, report));
    }
    let noise = marker_noise(mech, obs).unwrap_or(0.0).max(1e-7);
    let nd = mech.drivers.len();
    let mut zs = zone_free_obs(mech, obs, &qs, &seen, noise, 0..n);
    // The motion model's jerk density by maximum likelihood over a logarithmic grid.
    let series = DriverSeries::new(&zs, nd);
    let (s, _) = ml_jerk_densities(nd, |s| {
        Some(driver_filter(t, series.as_ref()?, nd, s, false)?.0)
    })
    .ok_or_else(|| KinematicsError::Fit("the drivers' motion model fits no jerk density".into()))?;
    report.jerk_density = s.clone();
    let zone = |a: usize, b: usize| Zone {
        t,
        obs,
        a,
        b,
        noise,
        s: &s,
        atlas: &atlas,
        w: &w,
    };
    // The driver each zone's markers are blind to (on the bench, the slide).
    let mut blind: Vec<usize> = Vec::new();
    let mut zones: Vec<(usize, usize)> = Vec::new();
    let mut found = SecondRoots::searched_after_zones(mech, &qs, &seen, &zone);
    let mut ahead: std::collections::VecDeque<Ahead> = Default::default();
    let mut from = 0;
    while let Some((a, k)) = next_zone(from, &qs, &seen) {
        from = k;
        report.zones += 1;
        let ctx = zone(a, k);
        let zone_blind = blind_driver(mech, &ctx, &qs);
        blind.extend(zone_blind);
        zones.push((a, k));
        // The zones are decided in time order, each on the samples the earlier ones left; the
        // mirror continuations after the next zones (which no earlier zone's decision reaches)
        // are followed ahead on every core.
        while ahead.front().is_some_and(|g| g.a < a) {
            ahead.pop_front();
        }
        if ahead.is_empty() {
            ahead = Ahead::follow(mech, a, &qs, &seen, &found, &zone).into();
        }
        let guess = match ahead.front().is_some_and(|g| g.a == a) {
            true => ahead.pop_front(),
            false => None,
        };
        let fold = (&mut qs[..], &mut seen[..], &mut zs[..]);
        if resolve_fold(mech, &ctx, zone_blind, fold, &mut found, guess) {
            report.switched += 1;
        }
    }
    // The most frequent blind driver: the one whose two roots the path chooses between.
    if let Some(b) = (0..nd)
        .max_by_key(|&d| blind.iter().filter(|&&x| x == d).count())
        .filter(|_| !blind.is_empty())
    {
        report.relabelled = branch_path(mech, t, obs, &mut qs, &seen, b, noise, &w, found);
    }
    if report.relabelled > 0 {
        // The zones bridged anew between the path's sides.
        for &(a, b) in &zones {
            let (lo, hi) = (a.saturating_sub(FOLD_SIDE), (b + FOLD_SIDE).min(n));
            let window = zone_free_obs(mech, obs, &qs, &seen, noise, lo..hi);
            let mut path = qs[lo..hi].to_vec();
            bridge_zone(mech, &zone(a, b), lo, &mut path, &window);
            qs[a..b].clone_from_slice(&path[a - lo..b - lo]);
        }
    }
    Ok((qs, report))
}

/// The first fold zone at or after sample `from`: its first sample and the one after it.
fn next_zone(from: usize, qs: &[Option<DVector<f64>>], seen: &[f64]) -> Option<(usize, usize)> {
    let a = (from..qs.len()).find(|&k| in_zone(k, qs, seen))?;
    let b = (a..qs.len())
        .find(|&k| !in_zone(k, qs, seen))
        .unwrap_or(qs.len());
    Some((a, b))
}

/// Whether sample `k` is fitted and lies in a fold zone (the markers see the motion's weakest
/// direction less than [`FOLD_ZONE_RATIO`] of its strongest).
fn in_zone(k: usize, qs: &[Option<DVector<f64>>], seen: &[f64]) -> bool {
    qs[k].is_some() && seen[k] < FOLD_ZONE_RATIO
}

/// The drivers' observations from the markers at the samples of `range` (None in a fold zone
/// or where the sample is not fitted).
fn zone_free_obs(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    qs: &[Option<DVector<f64>>],
    seen: &[f64],
    noise: f64,
    range: std::ops::Range<usize>,
) -> Vec<DriverObs> {
    range
        .map(|k| {
            if in_zone(k, qs, seen) {
                None
            } else {
                qs[k]
                    .as_ref()
                    .and_then(|q| driver_obs(mech, q, &obs[k], noise))
            }
        })
        .collect()
}

/// The end of the segment after the zone ending before `b`: the next zone, gap or the
/// recording's end.
fn segment_end(b: usize, qs: &[Option<DVector<f64>>], seen: &[f64]) -> usize {
    let mut end = b;
    while end < qs.len() && qs[end].is_some() && seen[end] >= FOLD_ZONE_RATIO {
        end += 1;
    }
    end
}

/// The mirror's continuation after a fold zone: the second root of the sample after it
/// (driver `blind` blind, the search taken from `found` when made before), then each sample
/// to the segment's `end` fitted from the continuation's earlier ones ([`fit_next`], which
/// looks no further back than the continuation's start). `samples`: per sample from the zone's
/// `b`, the configuration and its ratio; None when there is no second root or the
/// continuation loses a sample (no branch of this motion). `searched`: the search made anew.
struct Mirror {
    samples: Option<Vec<(DVector<f64>, f64)>>,
    searched: Option<SecondRoot>,
}

impl Mirror {
    fn follow(
        mech: &Mechanism,
        z: &Zone,
        blind: usize,
        end: usize,
        from: &DVector<f64>,
        seen: &[f64],
        found: &SecondRoots,
    ) -> Mirror {
        let b = z.b;
        let (root, searched) = match found.lookup(b, blind, from) {
            Some(e) => (e.3.clone(), None),
            None => {
                let r = second_root(mech, from, &z.obs[b], blind, z.w, z.noise);
                (r.clone(), Some(SecondRoot(b, blind, from.clone(), r)))
            }
        };
        let samples = root.and_then(|mirror| {
            // Numbered from b: the continuation's samples before it are absent, as in a
            // whole-length vector, and the times are the same numbers.
            let t = &z.t[b..end];
            let mut alt: Vec<Option<DVector<f64>>> = vec![None; end - b];
            let mut alt_seen: Vec<f64> = seen[b..end].to_vec();
            alt[0] = Some(mirror);
            for j in 1..end - b {
                let (q, r) = fit_next(mech, t, j, &z.obs[b + j], &alt, &alt_seen, z.atlas, z.w);
                alt[j] = q;
                alt_seen[j] = r;
            }
            alt.into_iter()
                .zip(alt_seen)
                .map(|(q, r)| Some((q?, r)))
                .collect()
        });
        Mirror { samples, searched }
    }
}

/// A zone's mirror continuation followed ahead ([`Ahead::follow`]), with what it was followed
/// from: it stands when, at the zone's turn, the zone, its blind driver, the sample after it
/// and the segment's ratios are the same (earlier zones' decisions change samples before the
/// zone only, so it nearly always does).
struct Ahead {
    a: usize,
    b: usize,
    blind: usize,
    from: DVector<f64>,
    seen: Vec<f64>,
    mirror: Mirror,
}

/// Zones whose mirror continuations are followed ahead at once.
const ZONES_AHEAD: usize = 16;

impl Ahead {
    /// The mirror continuations after up to [`ZONES_AHEAD`] zones from sample `from` on, as
    /// the samples are now, on every core.
    fn follow<'a>(
        mech: &Mechanism,
        from: usize,
        qs: &[Option<DVector<f64>>],
        seen: &[f64],
        found: &SecondRoots,
        zone: &(dyn Fn(usize, usize) -> Zone<'a> + Sync),
    ) -> Vec<Ahead> {
        let mut spans = Vec::new();
        let mut next = from;
        while let Some((a, b)) = next_zone(next, qs, seen).filter(|_| spans.len() < ZONES_AHEAD) {
            next = b;
            spans.push((a, b));
        }
        let made = flexbench_contracts::parallel::map_each(&spans, |&(a, b)| {
            let z = zone(a, b);
            let blind = blind_driver(mech, &z, qs)?;
            let from = qs.get(b)?.as_ref()?;
            let end = segment_end(b, qs, seen);
            let mirror = Mirror::follow(mech, &z, blind, end, from, seen, found);
            Some(Ahead {
                a,
                b,
                blind,
                from: from.clone(),
                seen: seen[b..end].to_vec(),
                mirror,
            })
        });
        made.into_iter().flatten().collect()
    }

    /// This continuation when it stands for zone a..`b` with `blind` on the samples as they
    /// are (`end` the segment's end).
    fn standing(
        self,
        (b, blind, end): (usize, usize, usize),
        qs: &[Option<DVector<f64>>],
        seen: &[f64],
    ) -> Option<Mirror> {
        let same_seen = seen[b..end].len() == self.seen.len()
            && seen[b..end]
                .iter()
                .zip(&self.seen)
                .all(|(x, y)| x.to_bits() == y.to_bits());
        (self.b == b && self.blind == blind && qs[b].as_ref() == Some(&self.from) && same_seen)
            .then_some(self.mirror)
    }
}

/// Decide the branch after one fold zone and bridge the zone (`blind`: the driver the zone's
/// markers are blind to; `ahead`: its mirror continuation followed ahead, used when it stands);
/// true when the fit's branch was switched to the mirror's. The fit's hypothesis and the
/// mirror's are bridged and scored side by side.
fn resolve_fold(
    mech: &Mechanism,
    z: &Zone,
    blind: Option<usize>,
    (qs, seen, zs): FoldState<'_>,
    found: &mut SecondRoots,
    ahead: Option<Ahead>,
) -> bool {
    let (a, b) = (z.a, z.b);
    let end = segment_end(b, qs, seen);
    let lo = a.saturating_sub(FOLD_SIDE);
    let hi = end.min(b + FOLD_SIDE);
    let before = (lo..a).filter(|&j| zs[j].is_some()).count();
    let mirror = blind.filter(|_| before >= 3 && hi > b).and_then(|d| {
        let from = qs[b].as_ref()?;
        let stands = ahead.and_then(|g| g.standing((b, d, end), qs, seen));
        Some(stands.unwrap_or_else(|| Mirror::follow(mech, z, d, end, from, seen, found)))
    });
    let alt = mirror.and_then(|m| {
        found.0.extend(m.searched);
        m.samples
    });
    // The fit's hypothesis over lo..hi and, when there is one, the mirror's (the mirror's
    // continuation from b on, with its drivers' observations); each bridged through the zone.
    let keep: Vec<Option<DVector<f64>>> = qs[lo..hi].to_vec();
    let other = alt.as_ref().map(|alt| {
        let mut path = keep.clone();
        let mut path_zs: Vec<DriverObs> = zs[lo..hi].to_vec();
        for j in b..hi {
            let q = &alt[j - b].0;
            path[j - lo] = Some(q.clone());
            path_zs[j - lo] = driver_obs(mech, q, &z.obs[j], z.noise);
        }
        (path, path_zs)
    });
    let bridged = |mut path: Vec<Option<DVector<f64>>>, obs: &[DriverObs]| {
        bridge_zone(mech, z, lo, &mut path, obs);
        let score = alt.as_ref().and_then(|_| window_score(mech, z, lo, &path));
        (path, score)
    };
    let ((mut keep, score_keep), other) = flexbench_contracts::parallel::join(
        || bridged(keep, &zs[lo..hi]),
        || other.map(|(path, path_zs)| bridged(path, &path_zs)),
    );
    let mut switched = false;
    if let (Some(alt), Some((other, Some(so))), Some(sk)) = (alt, other, score_keep) {
        if so > sk {
            switched = true;
            keep = other;
            for (j, (q, r)) in (b..end).zip(alt) {
                zs[j] = driver_obs(mech, &q, &z.obs[j], z.noise);
                qs[j] = Some(q);
                seen[j] = r;
            }
        }
    }
    qs[a..b].clone_from_slice(&keep[(a - lo)..(b - lo)]);
    switched
}

/// Bridge the zone a..b of the window starting at `lo` (`path` and `zs` are the window's)
/// through both sides by the RTS smoother of the drivers, then refit each zone sample to its
/// markers with the bridge as its prior, weighted by the bridge's own uncertainty: each
/// sample lands on the root of its markers' equations next to the motion through the zone.
fn bridge_zone(
    mech: &Mechanism,
    z: &Zone,
    lo: usize,
    path: &mut [Option<DVector<f64>>],
    zs: &[DriverObs],
) {
    let nd = mech.drivers.len();
    let hi = lo + path.len();
    let Some((_, bridge)) = DriverSeries::new(zs, nd)
        .and_then(|series| driver_filter(&z.t[lo..hi], &series, nd, z.s, true))
    else {
        return;
    };
    let scale = driver_weights(mech, 1.0);
    for j in z.a..z.b {
        let Some((v, c)) = bridge[j - lo].as_ref() else {
            continue;
        };
        let targets: Vec<f64> = (0..nd).map(|i| v[i] / scale[i]).collect();
        let w: Vec<f64> = (0..nd)
            .map(|i| scale[i] * z.noise / c[(i, i)].max(1e-30).sqrt())
            .collect();
        let Some(start) = path[j - lo]
            .as_ref()
            .and_then(|q| mech.assemble_from(q, &targets).ok())
        else {
            continue;
        };
        if let Some((q, _)) = refine(mech, &start, &z.obs[j], &targets, &w, 30) {
            path[j - lo] = Some(q);
        }
    }
}

/// How likely a hypothesis over the window starting at `lo` is: the log-likelihood of the
/// markers (zone included) under the white-jerk model, at the maximum a posteriori
/// trajectory that Gauss-Newton reaches from the hypothesis ([`crate::iterated::gauss_newton`]),
/// with the rest prior: each driver that is not an angle (the spring-loaded slide on the
/// bench) stays near its initial value in the mechanism file, within [`REST_SPREAD`] of the
/// reference length. A fast fold's kink alone decides weakly against the noise of a video
/// (a few units of log-likelihood at 0.13 mm and 240 frames/s on the bench); the mirror
/// continuation also carries the slide a tenth of a metre away within a tenth of a second,
/// which the rest prior weighs heavily while the true motion barely pays for it.
fn window_score(
    mech: &Mechanism,
    z: &Zone,
    lo: usize,
    path: &[Option<DVector<f64>>],
) -> Option<f64> {
    let hi = lo + path.len();
    let mut lin: Vec<DVector<f64>> = path.iter().cloned().collect::<Option<Vec<_>>>()?;
    let scale = driver_weights(mech, 1.0);
    let spread = REST_SPREAD * mech.reference_length();
    let rest: Vec<Option<(f64, f64)>> = mech
        .drivers
        .iter()
        .zip(&scale)
        .map(|(d, sc)| {
            (!matches!(d.coordinate, Coordinate::Angle { .. }))
                .then(|| (d.value * sc, (spread * sc).powi(2)))
        })
        .collect();
    let (est, _, _) = gauss_newton(
        mech,
        &z.t[lo..hi],
        &z.obs[lo..hi],
        &mut lin,
        &NoiseModel {
            sigma: z.noise,
            s: z.s,
            rest: &rest,
        },
        6,
        0.0,
    )?;
    Some(est.loglik)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_mechanism::file::wind_pump_default;
    use flexbench_mechanism::BodyTrig;
    use nalgebra::Vector2;

    /// Times, true configurations and markers of a recording.
    type Turn = (Vec<f64>, Vec<DVector<f64>>, Vec<Vec<Option<MarkerState>>>);

    /// The bench over one crank turn in 120 samples.
    fn turn() -> Turn {
        let mech = wind_pump_default();
        let q0 = mech.initial_configuration().unwrap();
        let (mut t, mut qs, mut obs) = (Vec::new(), Vec::new(), Vec::new());
        let mut q = q0.clone();
        for k in 0..120 {
            let mut d: Vec<f64> = mech
                .drivers
                .iter()
                .map(|d| d.coordinate.value(&q))
                .collect();
            d[0] = mech.drivers[0].coordinate.value(&q0) + k as f64 * std::f64::consts::TAU / 120.0;
            q = mech.assemble_from(&q, &d).unwrap();
            let trig = BodyTrig::of(&q);
            obs.push(
                mech.markers
                    .iter()
                    .map(|m| {
                        Some(MarkerState {
                            p: trig.point(&q, m.body, m.local),
                            v: Vector2::zeros(),
                            a: Vector2::zeros(),
                        })
                    })
                    .collect(),
            );
            t.push(k as f64 * 0.003);
            qs.push(q.clone());
        }
        (t, qs, obs)
    }

    #[test]
    fn markers_missing_at_the_start_leave_those_samples_unfitted_and_the_rest_right() {
        let mech = wind_pump_default();
        let (t, truth, mut obs) = turn();
        // No marker in the first two samples, one in the third, two in the next three: the
        // fit starts at the first sample with all five and goes back to them.
        for (k, keep) in [(0, 0), (1, 0), (2, 1), (3, 2), (4, 2), (5, 2)] {
            for o in obs[k].iter_mut().skip(keep) {
                *o = None;
            }
        }
        let (qs, _) = fit_positions(&mech, &t, &obs).unwrap();
        assert!(
            qs[0].is_none() && qs[1].is_none(),
            "nothing seen, nothing fitted"
        );
        for k in 2..t.len() {
            let q = qs[k]
                .as_ref()
                .unwrap_or_else(|| panic!("sample {k} unfitted"));
            let trig = (BodyTrig::of(q), BodyTrig::of(&truth[k]));
            for m in &mech.markers {
                let e = trig.0.point(q, m.body, m.local) - trig.1.point(&truth[k], m.body, m.local);
                // 1 um: the drivers' weak prior where two markers see the sample; the other
                // branch would be centimetres off.
                assert!(e.norm() < 1e-6, "sample {k}: {} m off", e.norm());
            }
        }
    }
}
