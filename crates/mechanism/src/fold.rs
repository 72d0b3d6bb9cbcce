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

use nalgebra::{DMatrix, DVector};

use crate::fit::{driver_weights, fold_ratio, marker_system, refine, MarkerState, PRIOR_WEIGHT};
use crate::model::{Coordinate, Mechanism};
use flexbench_signal::kalman::{diffuse_prior, kalman_rts, ml_jerk_densities, LinearObs, ORDER};
use crate::MechanismError;

/// Below this ratio of the extreme eigenvalues of the markers' normal matrix in the driving
/// coordinates (see [`FOLD_RATIO`]) a sample lies in a fold's zone: on the bench, within about
/// 0.05 rad of C'D vertical, where the two slide positions that explain the markers are less
/// than about 15 mm apart and the fitted slide position is uncertain by millimetres.
pub const FOLD_ZONE_RATIO: f64 = 0.03;

/// Spread of the rest prior of the fold test ([`Mechanism::window_score`]), as a fraction of the
/// mechanism's reference length.
pub const REST_SPREAD: f64 = 0.1;

/// Samples on each side of a fold's zone that the likelihood test and the bridge use.
pub const FOLD_SIDE: usize = 24;

/// The driving coordinates of one sample (angles scaled by the reference length, m) and their
/// covariance from the markers, m^2; None where they are not fitted or not trusted.
type DriverObs = Option<(DVector<f64>, DMatrix<f64>)>;

/// What the fold resolution found, for the run's summary.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FoldReport {
    /// Fold zones met (runs of samples where the markers nearly lose sight of a driver).
    pub zones: usize,
    /// Zones after which the sample-by-sample fit had followed the mirror and was switched.
    pub switched: usize,
    /// Jerk spectral density of the drivers' motion model per driver, chosen by maximum
    /// likelihood, m/s^3 per sqrt(Hz) (angles scaled by the reference length).
    pub jerk_density: Vec<f64>,
    /// For each resolved zone, the stretch after it up to the next zone (samples a..b) on the
    /// branch not chosen: (a, b, configurations). What a later, global criterion (the
    /// periodicity of the crank-angle mode) may prefer where the window's test could not tell.
    #[serde(skip)]
    pub alternatives: Vec<(usize, usize, Vec<DVector<f64>>)>,
}

/// Log-likelihood of driver observations under the white-jerk model with density `s`, and,
/// when `smooth`, the Rauch-Tung-Striebel smoothed driver values and their covariances. The
/// first observation is the prior (its rates diffuse) and adds nothing to the likelihood.
fn driver_filter(t: &[f64], zs: &[DriverObs], nd: usize, s: &[f64], smooth: bool) -> Option<(f64, Vec<Option<(DVector<f64>, DMatrix<f64>)>>)> {
    let first = zs.iter().position(|z| z.is_some())?;
    let (z0, r0) = zs[first].as_ref()?;
    let (x0, p0) = diffuse_prior(z0, r0);
    let mut sel = DMatrix::zeros(nd, ORDER * nd);
    for i in 0..nd {
        sel[(i, ORDER * i)] = 1.0;
    }
    let obs: Vec<Option<LinearObs>> = zs[first..]
        .iter()
        .enumerate()
        .map(|(k, z)| {
            let (v, c) = z.as_ref().filter(|_| k > 0)?;
            Some(LinearObs { h: sel.clone(), z: v.clone(), r: c.clone() })
        })
        .collect();
    let est = kalman_rts(&t[first..], &obs, nd, s, (x0, p0), smooth)?;
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

impl Mechanism {
    /// One sample's fit from the prediction of the earlier ones (or, with no history, the best
    /// of the branch atlas) and how well it sees every driver ([`fold_ratio`]).
    #[allow(clippy::too_many_arguments)]
    fn fit_next(
        &self,
        t: &[f64],
        k: usize,
        o: &[Option<MarkerState>],
        qs: &[Option<DVector<f64>>],
        seen: &[f64],
        atlas: &[DVector<f64>],
        w: &[f64],
    ) -> (Option<DVector<f64>>, f64) {
        let targets_of = |q: &DVector<f64>| -> Vec<f64> { self.drivers.iter().map(|d| d.coordinate.value(q)).collect() };
        let fitted = match self.predict(t, k, qs, seen) {
            Some(p) => refine(self, &p, o, &targets_of(&p), w, 30),
            None => atlas.iter().filter_map(|q| refine(self, q, o, &targets_of(q), w, 30)).min_by(|a, b| a.1.total_cmp(&b.1)).map(|(mut q, c)| {
                // Started afresh from the atlas (its angles within one turn): each body's angle
                // unwrapped to the nearest turn of the last fitted sample's, so that the crank
                // angle does not jump by whole turns.
                if let Some(last) = qs[..k].iter().rev().flatten().next() {
                    for b in 0..self.bodies.len() {
                        let i = 3 * b + 2;
                        q[i] += std::f64::consts::TAU * ((last[i] - q[i]) / std::f64::consts::TAU).round();
                    }
                }
                (q, c)
            }),
        };
        let ratio = fitted.as_ref().map_or(0.0, |(q, _)| fold_ratio(self, q, o));
        (fitted.map(|f| f.0), ratio)
    }

    /// The fitted drivers of configuration q (scaled) with their covariance sigma^2 (J_d^T
    /// J_d)^-1 from the markers present, J_d the markers' Jacobian in the scaled drivers.
    fn driver_obs(&self, q: &DVector<f64>, o: &[Option<MarkerState>], noise: f64) -> DriverObs {
        let scale = driver_weights(self, 1.0);
        let sens = crate::assembly::driver_sensitivity(self, q, &scale)?;
        let (jm, _) = marker_system(self, q, o);
        if jm.nrows() < self.drivers.len() {
            return None;
        }
        let js = &jm * &sens;
        let cov = (js.transpose() * &js).try_inverse()? * (noise * noise);
        let v = DVector::from_iterator(self.drivers.len(), self.drivers.iter().zip(&scale).map(|(d, s)| d.coordinate.value(q) * s));
        (cov.iter().all(|c| c.is_finite()) && v.iter().all(|c| c.is_finite())).then_some((v, cov))
    }

    /// The configurations that best explain the markers, sample by sample, on the motion's
    /// own assembly branch through every fold (see the module's documentation). Each sample is
    /// fitted from the quadratic extrapolation of the earlier ones, the first from the best of a
    /// whole turn of the assembly branch; then each fold's zone is resolved in time order.
    pub fn fit_positions(&self, t: &[f64], obs: &[Vec<Option<MarkerState>>]) -> Result<(Vec<Option<DVector<f64>>>, FoldReport), MechanismError> {
        let w = driver_weights(self, PRIOR_WEIGHT);
        let atlas = self.branch_atlas(72)?;
        let n = obs.len();
        let mut qs: Vec<Option<DVector<f64>>> = Vec::with_capacity(n);
        let mut seen: Vec<f64> = Vec::with_capacity(n);
        for k in 0..n {
            let (q, r) = self.fit_next(t, k, &obs[k], &qs, &seen, &atlas, &w);
            qs.push(q);
            seen.push(r);
        }
        let mut report = FoldReport::default();
        let in_zone = |k: usize, qs: &[Option<DVector<f64>>], seen: &[f64]| qs[k].is_some() && seen[k] < FOLD_ZONE_RATIO;
        if !(0..n).any(|k| in_zone(k, &qs, &seen)) {
            return Ok((qs, report));
        }
        let noise = self.marker_noise(obs).unwrap_or(0.0).max(1e-7);
        let nd = self.drivers.len();
        let mut zs: Vec<DriverObs> =
            (0..n).map(|k| if in_zone(k, &qs, &seen) { None } else { qs[k].as_ref().and_then(|q| self.driver_obs(q, &obs[k], noise)) }).collect();
        // The motion model's jerk density by maximum likelihood over a logarithmic grid.
        let (s, _) = ml_jerk_densities(nd, |s| Some(driver_filter(t, &zs, nd, s, false)?.0))
            .ok_or_else(|| MechanismError::Fit("the drivers' motion model fits no jerk density".into()))?;
        report.jerk_density = s.clone();
        let mut k = 0;
        while k < n {
            if !in_zone(k, &qs, &seen) {
                k += 1;
                continue;
            }
            let a = k;
            while k < n && in_zone(k, &qs, &seen) {
                k += 1;
            }
            report.zones += 1;
            let ctx = Zone { t, obs, a, b: k, noise, s: &s, atlas: &atlas, w: &w };
            let (switched, alternative) = self.resolve_fold(&ctx, &mut qs, &mut seen, &mut zs);
            if switched {
                report.switched += 1;
            }
            if let Some(alt) = alternative {
                report.alternatives.push(alt);
            }
        }
        Ok((qs, report))
    }

    /// Decide the branch after one fold zone and bridge the zone; true when the fit's branch
    /// was switched to the mirror's; and the branch not chosen after the zone, up to the next
    /// one, when both were followed.
    fn resolve_fold(&self, z: &Zone, qs: &mut [Option<DVector<f64>>], seen: &mut [f64], zs: &mut [DriverObs]) -> (bool, Option<(usize, usize, Vec<DVector<f64>>)>) {
        let (t, a, b) = (z.t, z.a, z.b);
        let n = qs.len();
        // The end of the segment: the next zone, gap or the recording's end.
        let mut end = b;
        while end < n && qs[end].is_some() && seen[end] >= FOLD_ZONE_RATIO {
            end += 1;
        }
        let lo = a.saturating_sub(FOLD_SIDE);
        let hi = end.min(b + FOLD_SIDE);
        let mut switched = false;
        let mut alternative = None;
        // The fit's hypothesis over lo..hi, its zone bridged.
        let mut keep: Vec<Option<DVector<f64>>> = qs[lo..hi].to_vec();
        self.bridge_zone(z, lo, &mut keep, &zs[lo..hi]);
        let before = (lo..a).filter(|&j| zs[j].is_some()).count();
        if before >= 3 && hi > b {
            if let Some(mirror) = self.mirror_branch(z, qs) {
                // The mirror's continuation is predicted from its own samples only.
                let mut alt: Vec<Option<DVector<f64>>> = vec![None; end];
                let mut alt_seen: Vec<f64> = seen[..end].to_vec();
                alt[b] = Some(mirror);
                for j in b + 1..end {
                    let (q, r) = self.fit_next(t, j, &z.obs[j], &alt, &alt_seen, z.atlas, z.w);
                    alt[j] = q;
                    alt_seen[j] = r;
                }
                // A continuation that loses samples is no branch of this motion.
                if (b..end).all(|j| alt[j].is_some()) {
                    let mut other: Vec<Option<DVector<f64>>> = qs[lo..hi].to_vec();
                    let mut other_zs: Vec<DriverObs> = zs[lo..hi].to_vec();
                    for j in b..hi {
                        other[j - lo] = alt[j].clone();
                        other_zs[j - lo] = alt[j].as_ref().and_then(|q| self.driver_obs(q, &z.obs[j], z.noise));
                    }
                    self.bridge_zone(z, lo, &mut other, &other_zs);
                    let score_keep = self.window_score(z, lo, &keep);
                    let score_other = self.window_score(z, lo, &other);
                    if let (Some(sk), Some(so)) = (score_keep, score_other) {
                        if so > sk {
                            switched = true;
                            keep = other;
                            let old: Option<Vec<DVector<f64>>> = qs[b..end].iter().cloned().collect();
                            for j in b..end {
                                qs[j] = alt[j].take();
                                seen[j] = alt_seen[j];
                                zs[j] = qs[j].as_ref().and_then(|q| self.driver_obs(q, &z.obs[j], z.noise));
                            }
                            alternative = old.map(|v| (b, end, v));
                        } else {
                            alternative = alt[b..end].iter().cloned().collect::<Option<Vec<_>>>().map(|v| (b, end, v));
                        }
                    }
                }
            }
        }
        for j in a..b {
            qs[j] = keep[j - lo].clone();
        }
        (switched, alternative)
    }

    /// Bridge the zone a..b of the window starting at `lo` (`path` and `zs` are the window's)
    /// through both sides by the RTS smoother of the drivers, then refit each zone sample to its
    /// markers with the bridge as its prior, weighted by the bridge's own uncertainty: each
    /// sample lands on the root of its markers' equations next to the motion through the zone.
    fn bridge_zone(&self, z: &Zone, lo: usize, path: &mut [Option<DVector<f64>>], zs: &[DriverObs]) {
        let nd = self.drivers.len();
        let hi = lo + path.len();
        let Some((_, bridge)) = driver_filter(&z.t[lo..hi], zs, nd, z.s, true) else { return };
        let scale = driver_weights(self, 1.0);
        for j in z.a..z.b {
            let Some((v, c)) = bridge[j - lo].as_ref() else { continue };
            let targets: Vec<f64> = (0..nd).map(|i| v[i] / scale[i]).collect();
            let w: Vec<f64> = (0..nd).map(|i| scale[i] * z.noise / c[(i, i)].max(1e-30).sqrt()).collect();
            let Some(start) = path[j - lo].as_ref().and_then(|q| self.assemble_from(q, &targets).ok()) else { continue };
            if let Some((q, _)) = refine(self, &start, &z.obs[j], &targets, &w, 30) {
                path[j - lo] = Some(q);
            }
        }
    }

    /// How likely a hypothesis over the window starting at `lo` is: the log-likelihood of the
    /// markers (zone included) under the white-jerk model, at the maximum a posteriori
    /// trajectory that Gauss-Newton reaches from the hypothesis ([`Mechanism::gauss_newton`]),
    /// with the rest prior: each driver that is not an angle (the spring-loaded slide on the
    /// bench) stays near its initial value in the mechanism file, within [`REST_SPREAD`] of the
    /// reference length. A fast fold's kink alone decides weakly against the noise of a video
    /// (a few units of log-likelihood at 0.13 mm and 240 frames/s on the bench); the mirror
    /// continuation also carries the slide a tenth of a metre away within a tenth of a second,
    /// which the rest prior weighs heavily while the true motion barely pays for it.
    fn window_score(&self, z: &Zone, lo: usize, path: &[Option<DVector<f64>>]) -> Option<f64> {
        let hi = lo + path.len();
        let mut lin: Vec<DVector<f64>> = path.iter().cloned().collect::<Option<Vec<_>>>()?;
        let scale = driver_weights(self, 1.0);
        let spread = REST_SPREAD * self.reference_length();
        let rest: Vec<Option<(f64, f64)>> = self
            .drivers
            .iter()
            .zip(&scale)
            .map(|(d, sc)| (!matches!(d.coordinate, Coordinate::Angle { .. })).then(|| (d.value * sc, (spread * sc).powi(2))))
            .collect();
        let (est, _, _) = self.gauss_newton(&z.t[lo..hi], &z.obs[lo..hi], &mut lin, z.noise, z.s, &rest, 6)?;
        Some(est.loglik)
    }

    /// The other root of the markers' equations at sample b, just after the zone a..b: the
    /// drivers reflected across the fold along its blind direction (the eigenvector of the
    /// smallest eigenvalue of J_d^T J_d at the zone's least-seen sample), refined by
    /// Levenberg-Marquardt. Accepted when it explains the markers as well as the fit does (within
    /// the noise) and lies clearly apart from it; None when the fold has no second root there.
    fn mirror_branch(&self, z: &Zone, qs: &[Option<DVector<f64>>]) -> Option<DVector<f64>> {
        let (a, b, obs) = (z.a, z.b, z.obs);
        let scale = driver_weights(self, 1.0);
        let nd = self.drivers.len();
        let scaled = |q: &DVector<f64>| DVector::from_iterator(nd, self.drivers.iter().zip(&scale).map(|(d, s)| d.coordinate.value(q) * s));
        let (kf, qf) = (a..b)
            .filter_map(|j| qs[j].as_ref().map(|q| (j, q, fold_ratio(self, q, &obs[j]))))
            .min_by(|x, y| x.2.total_cmp(&y.2))
            .map(|x| (x.0, x.1))?;
        let sens = crate::assembly::driver_sensitivity(self, qf, &scale)?;
        let (jm, _) = marker_system(self, qf, &obs[kf]);
        let js = &jm * &sens;
        let eig = (js.transpose() * &js).symmetric_eigen();
        let imin = (0..nd).min_by(|&x, &y| eig.eigenvalues[x].total_cmp(&eig.eigenvalues[y]))?;
        let dir = eig.eigenvectors.column(imin).into_owned();
        let qb = qs.get(b)?.as_ref()?;
        let db = scaled(qb);
        let delta = (&db - scaled(qf)).dot(&dir);
        if delta.abs() < 1e-12 {
            return None;
        }
        let (_, r0) = marker_system(self, qb, &obs[b]);
        let allowed = r0.norm_squared() + 9.0 * z.noise * z.noise * r0.len() as f64;
        let mut best: Option<(DVector<f64>, f64)> = None;
        for c in [2.0, 1.5, 2.5, 3.0, 1.25, 4.0] {
            let guess = &db - &dir * (c * delta);
            let values: Vec<f64> = (0..nd).map(|k| guess[k] / scale[k]).collect();
            let Ok(start) = self.assemble_from(qb, &values) else { continue };
            let Some((q, _)) = refine(self, &start, &obs[b], &values, z.w, 30) else { continue };
            let (_, r) = marker_system(self, &q, &obs[b]);
            let rss = r.norm_squared();
            let apart = (scaled(&q) - &db).dot(&dir).abs() > 0.5 * delta.abs();
            if apart && rss <= allowed && best.as_ref().map_or(true, |x| rss < x.1) {
                best = Some((q, rss));
            }
        }
        best.map(|x| x.0)
    }
}

/// One fold zone a..b (b the first sample after it) and what its resolution needs.
struct Zone<'a> {
    t: &'a [f64],
    obs: &'a [Vec<Option<MarkerState>>],
    a: usize,
    b: usize,
    /// Markers' noise, m per coordinate.
    noise: f64,
    /// Jerk densities of the drivers' motion model.
    s: &'a [f64],
    atlas: &'a [DVector<f64>],
    w: &'a [f64],
}
