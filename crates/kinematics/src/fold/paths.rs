//! The branch through every fold: the fitted runs, their roots, and the cheapest path of
//! configurations across the zones.

use super::*;

/// The whole recording's branch path, after the zones' own tests. Outside the fold zones
/// every sample has two roots (on the bench the slide on either side of C'); the second is
/// followed from the previous samples' second roots, or found afresh by
/// [`crate::fold::second_root`]. The path through them is chosen by dynamic programming over
/// each run of fitted samples (states: the roots of the last three samples) for the least
/// cost: the drivers' third divided differences (the jerk, scaled by its median absolute
/// value along the fitted path: a path that changes root outside a zone jumps, one that
/// takes the mirror at a fold kinks) plus the fold test's rest prior (see
/// [`crate::fold::window_score`]). The zone-by-zone test sees a window about each zone only:
/// at 60 frames/s on the bench its sample-by-sample continuation crossed to the other root
/// between zones, and the first stretch was the branch atlas' pick; the motion mirrored at
/// every fold is smooth throughout and only the rest prior, summed over the recording,
/// tells it from the true one. Returns how many samples changed root.
#[allow(clippy::too_many_arguments)]
pub(super) fn branch_path(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    qs: &mut [Option<DVector<f64>>],
    seen: &[f64],
    blind: usize,
    noise: f64,
    w: &[f64],
    found: SecondRoots,
) -> usize {
    let runs = fitted_runs(qs, seen);
    let roots = run_roots(mech, &runs, qs, obs, blind, noise, w, found);
    let Some(costs) = PathCosts::new(mech, t, obs, &roots, &runs, noise) else {
        return 0;
    };
    let mut changed = 0;
    for run in &runs {
        let Some(path) = costs.best_path(run) else {
            continue;
        };
        for (&k, i) in run.iter().zip(path) {
            if i != 0 {
                qs[k] = Some(roots[k][i].clone());
                changed += 1;
            }
        }
    }
    changed
}

/// The samples outside the fold zones (in a zone the blind driver is uncertain by more than
/// the two roots' distance, and the bridge leans to the zone test's choice) in runs broken by
/// gaps only.
pub(super) fn fitted_runs(qs: &[Option<DVector<f64>>], seen: &[f64]) -> Vec<Vec<usize>> {
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut fresh = true;
    for k in 0..qs.len() {
        match qs[k] {
            None => fresh = true,
            Some(_) if seen[k] >= FOLD_ZONE_RATIO => {
                if fresh {
                    runs.push(Vec::new());
                    fresh = false;
                }
                if let Some(r) = runs.last_mut() {
                    r.push(k);
                }
            }
            Some(_) => {}
        }
    }
    runs
}

/// Every run sample's roots: the fitted one first, then the other (followed from the previous
/// samples' second roots by extrapolating their drivers, or found afresh).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_roots(
    mech: &Mechanism,
    runs: &[Vec<usize>],
    qs: &[Option<DVector<f64>>],
    obs: &[Vec<Option<MarkerState>>],
    blind: usize,
    noise: f64,
    w: &[f64],
    mut found: SecondRoots,
) -> Vec<Vec<DVector<f64>>> {
    let mut roots: Vec<Vec<DVector<f64>>> = vec![Vec::new(); qs.len()];
    for run in runs {
        for (p, &k) in run.iter().enumerate() {
            let Some(q) = qs[k].clone() else { continue };
            let prev: Vec<&DVector<f64>> = run[p.saturating_sub(2)..p]
                .iter()
                .rev()
                .map_while(|&j| roots[j].get(1))
                .collect();
            let guess = match prev.as_slice() {
                [a, b, ..] => {
                    let values: Vec<f64> = driver_values(mech, a)
                        .iter()
                        .zip(driver_values(mech, b))
                        .map(|(x, y)| 2.0 * x - y)
                        .collect();
                    mech.assemble_from(a, &values).ok()
                }
                [a] => Some((*a).clone()),
                [] => None,
            };
            let other = guess
                .and_then(|g| distinct_root(mech, &g, &q, &obs[k], blind, w, noise).map(|x| x.0))
                .or_else(|| {
                    let from = found.partner(k, blind, &q)?;
                    distinct_root(mech, from, &q, &obs[k], blind, w, noise).map(|x| x.0)
                })
                .or_else(|| {
                    found.get(k, blind, &q, || {
                        second_root(mech, &q, &obs[k], blind, w, noise)
                    })
                });
            roots[k] = std::iter::once(q).chain(other).collect();
        }
    }
    roots
}

/// The costs of a branch path: each root's scaled drivers and their variances from the
/// markers, the motion's own jerk variance per driver, and each root's rest prior.
pub(super) struct PathCosts<'a> {
    pub(super) t: &'a [f64],
    pub(super) nd: usize,
    /// Per sample and root: the scaled drivers and their variances (the blind driver's grows
    /// without bound towards a fold).
    pub(super) stats: Vec<Vec<(DVector<f64>, DVector<f64>)>>,
    /// The motion's jerk variance per driver.
    pub(super) jerk_var: Vec<f64>,
    /// Per sample and root: the fold test's rest prior.
    pub(super) rest: Vec<Vec<f64>>,
}

impl<'a> PathCosts<'a> {
    /// The costs, or None when the motion's jerk variance cannot be estimated.
    pub(super) fn new(
        mech: &Mechanism,
        t: &'a [f64],
        obs: &[Vec<Option<MarkerState>>],
        roots: &[Vec<DVector<f64>>],
        runs: &[Vec<usize>],
        noise: f64,
    ) -> Option<PathCosts<'a>> {
        let nd = mech.drivers.len();
        let scale = driver_weights(mech, 1.0);
        let spread = REST_SPREAD * mech.reference_length();
        let stats = (0..roots.len())
            .map(|k| {
                roots[k]
                    .iter()
                    .map(|q| {
                        let v = DVector::from_iterator(
                            nd,
                            driver_values(mech, q)
                                .iter()
                                .zip(&scale)
                                .map(|(v, s)| v * s),
                        );
                        let var = driver_obs(mech, q, &obs[k], noise)
                            .map_or(DVector::from_element(nd, f64::INFINITY), |(_, c)| {
                                c.diagonal()
                            });
                        (v, var)
                    })
                    .collect()
            })
            .collect();
        let rest = roots
            .iter()
            .map(|rs| {
                rs.iter()
                    .map(|q| {
                        mech.drivers
                            .iter()
                            .filter(|d| !matches!(d.coordinate, Coordinate::Angle { .. }))
                            .map(|d| 0.5 * ((d.coordinate.value(q) - d.value) / spread).powi(2))
                            .sum()
                    })
                    .collect()
            })
            .collect();
        let mut costs = PathCosts {
            t,
            nd,
            stats,
            jerk_var: Vec::new(),
            rest,
        };
        costs.jerk_var = costs.jerk_variance(runs);
        (!costs.jerk_var.iter().any(|s| s.is_nan() || *s <= 0.0)).then_some(costs)
    }

    /// Third divided difference times 3! (the jerk) at samples ks on roots idx, and its
    /// variance from the markers' noise: sum of c_i^2 var_i, c_i = 6 / prod_{j != i} (t_i - t_j).
    pub(super) fn jerk(&self, ks: [usize; 4], idx: [usize; 4]) -> (DVector<f64>, DVector<f64>) {
        let mut e = DVector::zeros(self.nd);
        let mut var = DVector::zeros(self.nd);
        for i in 0..4 {
            let c = 6.0
                / (0..4)
                    .filter(|&j| j != i)
                    .map(|j| self.t[ks[i]] - self.t[ks[j]])
                    .product::<f64>();
            let (v, vv) = &self.stats[ks[i]][idx[i]];
            e += v * c;
            var += vv * (c * c);
        }
        (e, var)
    }

    /// The motion's own jerk variance per driver along the fitted path: the square of 1.4826
    /// times the jerk's median absolute value, less the median variance the noise gives it
    /// (at least a tenth of that square).
    pub(super) fn jerk_variance(&self, runs: &[Vec<usize>]) -> Vec<f64> {
        let median = |mut a: Vec<f64>| -> f64 {
            a.sort_by(f64::total_cmp);
            a.get(a.len() / 2).copied().unwrap_or(0.0)
        };
        (0..self.nd)
            .map(|j| {
                let all: Vec<(f64, f64)> = runs
                    .iter()
                    .flat_map(|r| r.windows(4).map(|w| [w[0], w[1], w[2], w[3]]))
                    .map(|ks| self.jerk(ks, [0; 4]))
                    .map(|(e, v)| (e[j].abs(), v[j]))
                    .collect();
                let spread2 = (1.4826 * median(all.iter().map(|x| x.0).collect())).powi(2);
                (spread2 - median(all.iter().map(|x| x.1).collect())).max(0.1 * spread2)
            })
            .collect()
    }

    /// The least-cost root index per sample of `run`, by dynamic programming: state
    /// (i_{p-2}, i_{p-1}, i_p) as 4 i_{p-2} + 2 i_{p-1} + i_p, the missing ones 0; back[p][state]
    /// the best i_{p-3}. None when no path has a finite cost.
    pub(super) fn best_path(&self, run: &[usize]) -> Option<Vec<usize>> {
        let mut cost = [f64::INFINITY; 8];
        let mut back: Vec<[usize; 8]> = Vec::with_capacity(run.len());
        for (p, &k) in run.iter().enumerate() {
            let mut next = [f64::INFINITY; 8];
            let mut from = [0usize; 8];
            for i in 0..self.stats[k].len() {
                if p == 0 {
                    next[i] = self.rest[k][i];
                    continue;
                }
                for (prev, &prev_cost) in cost.iter().enumerate() {
                    if !prev_cost.is_finite() {
                        continue;
                    }
                    let (x, a, b) = (prev >> 2, (prev >> 1) & 1, prev & 1);
                    let mut c = prev_cost + self.rest[k][i];
                    if p >= 3 {
                        c += self.jerk_cost([run[p - 3], run[p - 2], run[p - 1], k], [x, a, b, i]);
                    }
                    let state = ((a << 2) | (b << 1) | i) & 7;
                    if c < next[state] {
                        next[state] = c;
                        from[state] = x;
                    }
                }
            }
            cost = next;
            back.push(from);
        }
        // Backtrack.
        let mut state = (0..8)
            .filter(|&s| cost[s].is_finite())
            .min_by(|&x, &y| cost[x].total_cmp(&cost[y]))?;
        let mut path = vec![0; run.len()];
        for p in (0..run.len()).rev() {
            path[p] = state & 1;
            state = (back[p][state] << 2) | (state >> 1);
        }
        Some(path)
    }

    /// The negative log-likelihood of the jerk at samples ks on roots idx (Gaussian, the
    /// motion's variance plus the markers').
    pub(super) fn jerk_cost(&self, ks: [usize; 4], idx: [usize; 4]) -> f64 {
        let (e, var) = self.jerk(ks, idx);
        let jv = &self.jerk_var;
        (0..self.nd)
            .map(|d| 0.5 * (e[d] * e[d] / (jv[d] + var[d]) + (jv[d] + var[d]).ln()))
            .sum::<f64>()
    }
}

/// One fold zone a..b (b the first sample after it) and what its resolution needs.
pub(super) struct Zone<'a> {
    pub(super) t: &'a [f64],
    pub(super) obs: &'a [Vec<Option<MarkerState>>],
    pub(super) a: usize,
    pub(super) b: usize,
    /// Markers' noise, m per coordinate.
    pub(super) noise: f64,
    /// Jerk densities of the drivers' motion model.
    pub(super) s: &'a [f64],
    pub(super) atlas: &'a [DVector<f64>],
    pub(super) w: &'a [f64],
}
