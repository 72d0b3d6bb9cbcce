//! The loop's second roots: the other assembly of the same drivers, found about each fitted
//! configuration.

use super::*;

/// The second roots already found ([`crate::fold::second_root`]): per entry the sample, the
/// blind driver, the configuration searched from and what the search found. The zones' tests
/// search from the sample after each zone, where the whole recording's branch path searches
/// again: the same search from the same configuration is taken from here, bit for bit.
#[derive(Default)]
pub(super) struct SecondRoots(pub(super) Vec<SecondRoot>);

/// One search for a second root: the sample, the blind driver, the configuration searched
/// from, and the root found (None: none).
pub(super) struct SecondRoot(
    pub(super) usize,
    pub(super) usize,
    pub(super) DVector<f64>,
    pub(super) Option<DVector<f64>>,
);

impl SecondRoots {
    /// The search of sample `k` from `q` with driver `blind` blind, when made before.
    pub(super) fn lookup(&self, k: usize, blind: usize, q: &DVector<f64>) -> Option<&SecondRoot> {
        self.0
            .iter()
            .find(|e| e.0 == k && e.1 == blind && &e.2 == q)
    }

    /// The second root of sample `k` from `q` with driver `blind` blind: found before, or
    /// searched now and kept.
    pub(super) fn get(
        &mut self,
        k: usize,
        blind: usize,
        q: &DVector<f64>,
        search: impl FnOnce() -> Option<DVector<f64>>,
    ) -> Option<DVector<f64>> {
        if let Some(e) = self.lookup(k, blind, q) {
            return e.3.clone();
        }
        let found = search();
        self.0.push(SecondRoot(k, blind, q.clone(), found.clone()));
        found
    }

    /// The second roots the zones' tests will search for, searched beforehand on every core:
    /// the sample after each zone as the sample-by-sample fit left it (a zone's test changes
    /// samples up to the next zone only, so the later zones' searches start from these same
    /// configurations; one that does not is searched again when asked).
    pub(super) fn searched_after_zones<'a>(
        mech: &Mechanism,
        qs: &[Option<DVector<f64>>],
        seen: &[f64],
        zone: &(dyn Fn(usize, usize) -> Zone<'a> + Sync),
    ) -> SecondRoots {
        let mut asks = Vec::new();
        let mut from = 0;
        while let Some((a, k)) = next_zone(from, qs, seen) {
            from = k;
            if let (Some(q), Some(blind)) = (
                qs.get(k).and_then(|q| q.as_ref()),
                blind_driver(mech, &zone(a, k), qs),
            ) {
                asks.push((k, blind, q));
            }
        }
        let threads = flexbench_contracts::parallel::threads();
        let roots =
            flexbench_contracts::parallel::map_in_order(threads, &asks, |&(k, blind, q)| {
                let z = zone(k, k);
                second_root(mech, q, &z.obs[k], blind, z.w, z.noise)
            });
        SecondRoots(
            asks.into_iter()
                .zip(roots)
                .map(|((k, blind, q), root)| SecondRoot(k, blind, q.clone(), root))
                .collect(),
        )
    }

    /// A configuration of sample `k` whose second root (driver `blind` blind) was found to be
    /// `q`: where a zone's test switched to the mirror, the fit it switched from.
    pub(super) fn partner(
        &self,
        k: usize,
        blind: usize,
        q: &DVector<f64>,
    ) -> Option<&DVector<f64>> {
        self.0
            .iter()
            .find(|e| e.0 == k && e.1 == blind && e.3.as_ref() == Some(q))
            .map(|e| &e.2)
    }
}

/// The driver the markers barely see in the zone a..b: the one most aligned with the
/// eigenvector of the smallest eigenvalue of J_d^T J_d at the zone's least-seen sample (on
/// the bench, the slide).
pub(super) fn blind_driver(
    mech: &Mechanism,
    z: &Zone,
    qs: &[Option<DVector<f64>>],
) -> Option<usize> {
    let nd = mech.drivers.len();
    let (kf, qf) = (z.a..z.b)
        .filter_map(|j| {
            qs[j]
                .as_ref()
                .map(|q| (j, q, fold_ratio(mech, q, &z.obs[j])))
        })
        .min_by(|x, y| x.2.total_cmp(&y.2))
        .map(|x| (x.0, x.1))?;
    let dir = weakest_direction(mech, qf, &z.obs[kf])?;
    (0..nd).max_by(|&x, &y| dir[x].abs().total_cmp(&dir[y].abs()))
}

/// The other root of one sample's markers' equations (`q` the fitted one), by a profile
/// scan: the `blind` driver is stepped away from its fitted value on both sides, by
/// [`SCAN_STEP`] of the reference length up to [`MIRROR_SPAN`] of it, each step assembled
/// from the previous one and the other drivers refitted to the markers; each local minimum
/// of the markers' residual along that profile other than the fit's own is refined with
/// every driver free ([`crate::fold::distinct_root`]). None when there is no second root.
/// (A reflection across the fold, which this replaced, missed the second root at 60
/// frames/s, where the sample after a zone lies far from the fold.)
pub(super) fn second_root(
    mech: &Mechanism,
    q: &DVector<f64>,
    obs: &[Option<MarkerState>],
    blind: usize,
    w: &[f64],
    noise: f64,
) -> Option<DVector<f64>> {
    let scale = driver_weights(mech, 1.0);
    let (_, r0) = marker_system(mech, q, obs);
    // The blind driver held (to a micrometre of its scaled value), the others weakly as in
    // the fit.
    let mut held = w.to_vec();
    held[blind] = 1e6 * scale[blind];
    let step = SCAN_STEP * mech.reference_length() / scale[blind];
    let steps = (MIRROR_SPAN / SCAN_STEP).round() as usize;
    let zero = mech.drivers[blind].coordinate.value(q);
    let mut candidates: Vec<DVector<f64>> = Vec::new();
    for side in [-1.0, 1.0] {
        // (configuration, markers' residual) along this side, the fit itself first.
        let mut profile: Vec<(DVector<f64>, f64)> = vec![(q.clone(), r0.norm_squared())];
        for i in 1..=steps {
            let last = &profile[profile.len() - 1].0;
            let mut values = driver_values(mech, last);
            values[blind] = zero + side * step * i as f64;
            let Ok(start) = mech.assemble_from(last, &values) else {
                break;
            };
            let Some((p, _)) = refine(mech, &start, obs, &values, &held, 10) else {
                break;
            };
            let (_, r) = marker_system(mech, &p, obs);
            profile.push((p, r.norm_squared()));
        }
        for i in 1..profile.len().saturating_sub(1) {
            if profile[i].1 <= profile[i - 1].1 && profile[i].1 <= profile[i + 1].1 {
                candidates.push(profile[i].0.clone());
            }
        }
    }
    candidates
        .iter()
        .filter_map(|c| distinct_root(mech, c, q, obs, blind, w, noise))
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|x| x.0)
}

/// The root of one sample's markers' equations that Levenberg-Marquardt reaches from
/// `start`, with its markers' residual sum of squares, when it explains the markers as well
/// as the fitted root `q` does (within 3 sigma per coordinate) and lies clearly apart from
/// it (by more than [`MIRROR_STEP`] of the reference length in the `blind` driver).
pub(super) fn distinct_root(
    mech: &Mechanism,
    start: &DVector<f64>,
    q: &DVector<f64>,
    obs: &[Option<MarkerState>],
    blind: usize,
    w: &[f64],
    noise: f64,
) -> Option<(DVector<f64>, f64)> {
    let scale = driver_weights(mech, 1.0);
    let (_, r0) = marker_system(mech, q, obs);
    let allowed = r0.norm_squared() + 9.0 * noise * noise * r0.len() as f64;
    let (p, _) = refine(mech, start, obs, &driver_values(mech, start), w, 30)?;
    let (_, r) = marker_system(mech, &p, obs);
    let distance = ((mech.drivers[blind].coordinate.value(&p)
        - mech.drivers[blind].coordinate.value(q))
        * scale[blind])
        .abs();
    (distance > MIRROR_STEP * mech.reference_length() && r.norm_squared() <= allowed)
        .then(|| (p, r.norm_squared()))
}
