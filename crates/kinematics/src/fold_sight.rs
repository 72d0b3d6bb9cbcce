//! Where the fold zones are: how well the markers see the motion's weakest direction at a
//! configuration (the fold ratio, [`crate::observe::fold_ratio`]), and whether a fold is near,
//! so that neither a marker layout's own dip (no fold) nor a fit that turns back short of a fold
//! (a near miss) is mistaken (docs/signal-study.md).

use nalgebra::DVector;

use flexbench_mechanism::Mechanism;

use crate::observe::{driver_values, driver_weights, fold_ratio, weakest_direction, MarkerState};

/// Below this ratio of the extreme eigenvalues of the markers' normal matrix in the driving
/// coordinates (see [`crate::observe::FOLD_RATIO`]) a sample lies in a fold's zone: on the
/// bench, within about 0.05 rad of C'D vertical, where the two slide positions that explain the
/// markers are less than about 15 mm apart and the fitted slide position is uncertain by
/// millimetres.
pub const FOLD_ZONE_RATIO: f64 = 0.03;

/// How near a fold must lie, as a fraction of the mechanism's reference length along the
/// markers' weakest direction, for a sample below [`FOLD_ZONE_RATIO`] to lie in its zone
/// ([`crate::fold_sight::fold_near`]): 29 mm on the bench. At a fold the markers' sight of that
/// direction falls to zero linearly; a marker layout's own dip between folds does not. On the
/// bench's motion, Newton's step to zero sight is 0.6-8 mm in the folds' zones; with the
/// markers at s = 0.3-0.9 (none near B) the sight also dips to a ratio of 0.021 between the
/// folds, where the step is 56-91 mm and the mirror root 205 mm away. Taken for a fold's zone,
/// that dip sent the fit to the mirror branch for part of every turn (the rocker 0.57 rad off,
/// the pump's force residual 680 N, nothing said).
pub const FOLD_NEAR: f64 = 0.1;

/// The step of the one-sided differences of [`crate::fold_sight::fold_near`], as a fraction of
/// the reference length (0.29 mm on the bench).
const FOLD_NEAR_STEP: f64 = 1e-3;

/// The highest least sight (ratio) of a near miss ([`crate::fold_sight::near_misses`]): where the
/// fitted motion comes near a fold and turns back without entering its zone. Markers a little
/// off the places the file gives them (0.3 mm across the bench's lever) keep the sample fit
/// from reaching the fold: it turned back 12 mm short (a least ratio of 0.0375) at every
/// passage of C'D through the vertical, took no zone, and followed the mirror (the forces 26 %
/// off, nothing said). A near miss is a zone too, so that passing through is weighed against
/// turning back.
pub const FOLD_MISS_RATIO: f64 = 0.1;

/// The sight of configuration q as the fold zones read it: its fold ratio over the markers
/// `every` (all present), lifted to [`FOLD_ZONE_RATIO`] where it dips with no fold near (a dip
/// of the layout's: no zone, see [`FOLD_NEAR`]).
pub(crate) fn sight(mech: &Mechanism, q: &DVector<f64>, every: &[Option<MarkerState>]) -> f64 {
    let r = fold_ratio(mech, q, every);
    match r >= FOLD_ZONE_RATIO || fold_near(mech, q, every, r) {
        true => r,
        false => FOLD_ZONE_RATIO,
    }
}

/// Whether a fold lies within [`FOLD_NEAR`] of the reference length of configuration q, whose
/// fold ratio is `ratio`: Newton's step to zero of the markers' sight sqrt(ratio) along their
/// weakest direction (the smallest eigenvalue's eigenvector of J_s^T J_s in the scaled
/// drivers), its slope the steeper of the two one-sided differences (a fold inside the step
/// flattens the central one). True where the slope cannot be taken (as before this test).
pub(crate) fn fold_near(
    mech: &Mechanism,
    q: &DVector<f64>,
    obs: &[Option<MarkerState>],
    ratio: f64,
) -> bool {
    let scale = driver_weights(mech, 1.0);
    let Some(dir) = weakest_direction(mech, q, obs) else {
        return true;
    };
    let h = FOLD_NEAR_STEP * mech.reference_length();
    let values = driver_values(mech, q);
    let sight_at = |side: f64| -> Option<f64> {
        let moved: Vec<f64> = (0..values.len())
            .map(|i| values[i] + side * h * dir[i] / scale[i])
            .collect();
        let p = mech.assemble_from(q, &moved).ok()?;
        Some(fold_ratio(mech, &p, obs).max(0.0).sqrt())
    };
    let (Some(lo), Some(hi)) = (sight_at(-1.0), sight_at(1.0)) else {
        return true;
    };
    let sight = ratio.max(0.0).sqrt();
    let slope = (hi - sight).abs().max((sight - lo).abs()) / h;
    sight <= FOLD_NEAR * mech.reference_length() * slope
}

/// The sight a near miss's samples are given: just inside a zone.
pub(crate) const NEAR_MISS_SIGHT: f64 = 0.999 * FOLD_ZONE_RATIO;

/// The near misses of the fitted samples `qs` (their sights `seen`): each least sight (a local
/// minimum over fitted samples) at or above [`FOLD_ZONE_RATIO`] and below [`FOLD_MISS_RATIO`],
/// with a fold near it ([`crate::fold_sight::fold_near`]; a lifted dip of the layout's is
/// none), as the run of samples about it whose sight is within 1.5 times its least (first
/// sample, end); a run that meets a zone or an unfitted sample is none (the zone already weighs
/// that fold).
pub(crate) fn near_misses(
    mech: &Mechanism,
    qs: &[Option<DVector<f64>>],
    seen: &[f64],
    every: &[Option<MarkerState>],
) -> Vec<(usize, usize)> {
    let n = qs.len();
    let fitted = |k: usize| qs[k].is_some();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for m in 1..n.saturating_sub(1) {
        let least = seen[m];
        let minimum = fitted(m - 1)
            && fitted(m)
            && fitted(m + 1)
            && least <= seen[m - 1]
            && least < seen[m + 1];
        if !minimum || !(FOLD_ZONE_RATIO..FOLD_MISS_RATIO).contains(&least) {
            continue;
        }
        let inside = |k: usize| fitted(k) && seen[k] < 1.5 * least;
        let mut a = m;
        while a > 0 && inside(a - 1) {
            a -= 1;
        }
        let b = (m..n).find(|&k| !inside(k)).unwrap_or(n);
        let clear = |k: usize| fitted(k) && seen[k] >= FOLD_ZONE_RATIO;
        let bounded = a > 0 && b < n && (a - 1..=b).all(clear);
        let overlaps = out.last().is_some_and(|&(_, e)| e > a);
        // The sight itself, not `seen`: a dip of the layout's was lifted to the zones' ratio
        // there (fit_next) and is no near miss.
        let near = qs[m].as_ref().is_some_and(|q| {
            let ratio = fold_ratio(mech, q, every);
            ratio >= FOLD_ZONE_RATIO && fold_near(mech, q, every, ratio)
        });
        if bounded && !overlaps && near {
            out.push((a, b));
        }
    }
    out
}
