//! Which blob is which marker. The lock names the markers once: by the mechanism's layout when
//! the tracker has one (each body's markers found among any other blobs as a rigid pattern the
//! assembly places, `pattern`), else as the blobs of the one frame where exactly the expected
//! number lie on a line, named from the end nearest the bench origin A. After it, each marker is
//! predicted in every frame and takes the nearest blob whose distance is plausible under the
//! motion model.
//!
//! Motion model: a marker seen in the last two frames moves on at constant velocity in the
//! image; one that was not is placed by its body (its pattern fitted to the others' predictions,
//! in the bench) or on the lever's line. The error of the constant-velocity prediction has a
//! running mean square s^2 per marker (weight 0.1 per frame, from a start of (spacing / 8)^2);
//! its variance is s^2 + 0.25 px^2 (a floor for the blobs' own noise). A blob is taken only when
//! its squared distance over that variance (chi-square, 2 degrees of freedom) is within the
//! 1e-6 level ([`ACCEPT_CHI2`]), and within the gate of 0.4 times the smallest marker spacing;
//! the nearest other blob among the candidates is kept as the marker's rival, its chi-square
//! with it, so that a second blob as plausible as the marker is flagged, never silently taken.

use nalgebra::Vector2;

use crate::blob::Blob;
use crate::camera::{BenchPlane, Calibration};
use crate::pattern::{find_all, find_body, MarkerLayout, NotFound, Pose};

/// Chi-square (2 degrees of freedom) of the 1e-6 level: a blob farther from a marker's
/// prediction than this is not taken.
pub const ACCEPT_CHI2: f64 = 27.631021115928547;

/// Variance floor of a prediction, px^2 (a 0.5 px standard deviation).
const VAR_FLOOR: f64 = 0.25;

/// How the markers were locked on, and what following them needs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lock {
    /// Smallest distance between two markers at the lock, px: the gate is 0.4 of it.
    pub spacing: f64,
    /// The markers' places along the lever's line at the lock, px, when they were locked in a
    /// line (no layout).
    pub line: Option<Vec<f64>>,
}

impl Lock {
    /// The gate about a prediction, px.
    pub fn gate(&self) -> f64 {
        0.4 * self.spacing
    }
}

/// The camera's maps between pixels and the bench plane.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    /// Intrinsics and distortion.
    pub cal: &'a Calibration,
    /// The bench plane.
    pub plane: &'a BenchPlane,
}

impl View<'_> {
    /// The bench point (m) of a pixel.
    pub fn to_bench(self, u: f64, v: f64) -> Vector2<f64> {
        let (x, y) = self.plane.pixel_to_bench(&self.cal.intrinsics, u, v);
        Vector2::new(x, y)
    }

    /// The pixel of a bench point (m).
    pub fn to_pixel(self, p: Vector2<f64>) -> Option<(f64, f64)> {
        self.plane.bench_to_pixel(&self.cal.intrinsics, p.x, p.y)
    }
}

/// A marker's predicted place in a frame, px, and the variance of its error, px^2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Prediction {
    /// Column, px.
    pub u: f64,
    /// Row, px.
    pub v: f64,
    /// Variance of the prediction's error (per axis), px^2.
    pub var: f64,
}

impl Prediction {
    /// Chi-square of a blob against the prediction.
    pub fn chi2(&self, b: &Blob) -> f64 {
        ((b.u - self.u).powi(2) + (b.v - self.v).powi(2)) / self.var
    }
}

/// The lock by the mechanism's layout: the blob of each marker and the lock, or the body that
/// was not found and why.
pub(crate) fn lock_by_layout(
    blobs: &[Blob],
    layout: &MarkerLayout,
    nm: usize,
    view: View,
) -> Result<(Vec<usize>, Lock), (String, NotFound)> {
    let points: Vec<Vector2<f64>> = blobs.iter().map(|b| view.to_bench(b.u, b.v)).collect();
    let order = find_all(layout, &points, nm)?;
    let mut spacing = f64::INFINITY;
    for (i, &a) in order.iter().enumerate() {
        for &b in &order[i + 1..] {
            spacing = spacing.min((blobs[a].u - blobs[b].u).hypot(blobs[a].v - blobs[b].v));
        }
    }
    Ok((
        order,
        Lock {
            spacing,
            line: None,
        },
    ))
}

/// Lock on in a line: exactly `nm` blobs lying on a line (residual under 1 % of their spread);
/// the blob index of each marker (from the end nearest the bench origin) and the lock (their
/// places along the line, px).
pub(crate) fn lock_in_line(blobs: &[Blob], nm: usize, view: View) -> Option<(Vec<usize>, Lock)> {
    if blobs.len() != nm {
        return None;
    }
    let (mu, mv) = (
        blobs.iter().map(|b| b.u).sum::<f64>() / nm as f64,
        blobs.iter().map(|b| b.v).sum::<f64>() / nm as f64,
    );
    let (mut suu, mut suv, mut svv) = (0.0, 0.0, 0.0);
    for b in blobs {
        suu += (b.u - mu).powi(2);
        suv += (b.u - mu) * (b.v - mv);
        svv += (b.v - mv).powi(2);
    }
    // Principal direction of the blobs.
    let angle = 0.5 * (2.0 * suv).atan2(suu - svv);
    let (du, dv) = (angle.cos(), angle.sin());
    let along: Vec<f64> = blobs
        .iter()
        .map(|b| (b.u - mu) * du + (b.v - mv) * dv)
        .collect();
    let across: Vec<f64> = blobs
        .iter()
        .map(|b| -(b.u - mu) * dv + (b.v - mv) * du)
        .collect();
    let spread = along.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
        - along.iter().cloned().fold(f64::INFINITY, f64::min);
    if across.iter().any(|a| a.abs() > 0.01 * spread + 1.0) {
        return None;
    }
    let mut order: Vec<usize> = (0..nm).collect();
    order.sort_by(|&a, &b| along[a].total_cmp(&along[b]));
    // The end nearest A (bench origin) is M1.
    let dist_to_a = |i: usize| view.to_bench(blobs[i].u, blobs[i].v).norm();
    if dist_to_a(order[nm - 1]) < dist_to_a(order[0]) {
        order.reverse();
    }
    let params: Vec<f64> = order
        .iter()
        .map(|&i| (blobs[i].u - blobs[order[0]].u).hypot(blobs[i].v - blobs[order[0]].v))
        .collect();
    let spacing = params
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(f64::INFINITY, f64::min);
    Some((
        order,
        Lock {
            spacing,
            line: Some(params),
        },
    ))
}

/// Every marker's prediction in the next frame (module documentation): constant velocity from
/// the last two frames; else from its body's pattern (or the lever's line) fitted to the
/// others' predictions; else, seen last frame only, where it was, with the variance of a
/// third of the gate; else none.
pub(crate) fn predict(
    lock: &Lock,
    layout: Option<&MarkerLayout>,
    view: View,
    prev1: &[Option<Blob>],
    prev2: Option<&Vec<Option<Blob>>>,
    scale2: &[f64],
) -> Vec<Option<Prediction>> {
    let nm = prev1.len();
    let mut out: Vec<Option<Prediction>> = (0..nm)
        .map(|m| match (prev1[m], prev2.and_then(|p| p[m])) {
            (Some(a), Some(b)) => Some(Prediction {
                u: 2.0 * a.u - b.u,
                v: 2.0 * a.v - b.v,
                var: scale2[m] + VAR_FLOOR,
            }),
            _ => None,
        })
        .collect();
    let known = out.clone();
    for m in 0..nm {
        if out[m].is_some() {
            continue;
        }
        let placed = match (&lock.line, layout) {
            (Some(params), _) => on_line(params, &known, m),
            (None, Some(layout)) => by_body(layout, view, &known, m),
            (None, None) => None,
        };
        out[m] = placed
            .map(|(u, v)| Prediction {
                u,
                v,
                var: scale2[m] + VAR_FLOOR,
            })
            .or_else(|| {
                prev1[m].map(|a| Prediction {
                    u: a.u,
                    v: a.v,
                    var: (lock.gate() / 3.0).powi(2),
                })
            });
    }
    out
}

/// Marker `m` on the line through the other markers' predictions, fitted linearly in their
/// places along the line at the lock (`params`, px); None with fewer than two.
fn on_line(params: &[f64], known: &[Option<Prediction>], m: usize) -> Option<(f64, f64)> {
    let seen: Vec<(f64, Prediction)> = known
        .iter()
        .zip(params)
        .filter_map(|(p, &s)| p.map(|p| (s, p)))
        .collect();
    if seen.len() < 2 {
        return None;
    }
    let n = seen.len() as f64;
    let ms = seen.iter().map(|(s, _)| s).sum::<f64>() / n;
    let mu = seen.iter().map(|(_, p)| p.u).sum::<f64>() / n;
    let mv = seen.iter().map(|(_, p)| p.v).sum::<f64>() / n;
    let sss: f64 = seen.iter().map(|(s, _)| (s - ms).powi(2)).sum();
    let su: f64 = seen.iter().map(|(s, p)| (s - ms) * (p.u - mu)).sum::<f64>() / sss;
    let sv: f64 = seen.iter().map(|(s, p)| (s - ms) * (p.v - mv)).sum::<f64>() / sss;
    Some((mu + su * (params[m] - ms), mv + sv * (params[m] - ms)))
}

/// Marker `m` placed by its body: the body's pattern fitted (in the bench) to the predictions
/// of its other markers; None when fewer than two of them are predicted.
fn by_body(
    layout: &MarkerLayout,
    view: View,
    known: &[Option<Prediction>],
    m: usize,
) -> Option<(f64, f64)> {
    let body = layout
        .bodies
        .iter()
        .find(|b| b.markers.iter().any(|(k, _)| *k == m))?;
    let (mut from, mut to) = (Vec::new(), Vec::new());
    for &(k, local) in &body.markers {
        if let Some(Some(p)) = known.get(k) {
            from.push(Vector2::from(local));
            to.push(view.to_bench(p.u, p.v));
        }
    }
    let pose = Pose::fit(&from, &to)?;
    let local = body.markers.iter().find(|(k, _)| *k == m)?.1;
    view.to_pixel(pose.apply(Vector2::from(local)))
}

/// The markers' blobs in a searched frame: candidate pairs within the gate and plausible under
/// the motion model ([`ACCEPT_CHI2`]), taken nearest first, each blob once; each marker's
/// rival (the nearest other blob among its candidates, its chi-square) noted on its blob.
/// Returns the assignment and the blobs left unused.
pub(crate) fn follow(
    blobs: &[Blob],
    lock: &Lock,
    preds: &[Option<Prediction>],
) -> (Vec<Option<Blob>>, usize) {
    let nm = preds.len();
    let gate = lock.gate();
    let mut pairs = Vec::new();
    let mut near: Vec<Vec<(f64, usize)>> = vec![Vec::new(); nm];
    for (m, p) in preds.iter().enumerate() {
        let Some(p) = p else { continue };
        for (i, b) in blobs.iter().enumerate() {
            let d = (b.u - p.u).hypot(b.v - p.v);
            if d < gate {
                let chi2 = p.chi2(b);
                near[m].push((chi2, i));
                if chi2 <= ACCEPT_CHI2 {
                    pairs.push((d, m, i));
                }
            }
        }
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = vec![None; nm];
    let mut used = vec![false; blobs.len()];
    for (_, m, i) in pairs {
        if out[m].is_none() && !used[i] {
            let rival = near[m]
                .iter()
                .filter(|(_, j)| *j != i)
                .map(|(c, _)| *c)
                .min_by(f64::total_cmp);
            out[m] = Some(Blob { rival, ..blobs[i] });
            used[i] = true;
        }
    }
    let extra = used.iter().filter(|u| !**u).count();
    (out, extra)
}

/// A body of the layout with fewer than two of its markers found in a frame found again among
/// the blobs left: its pattern sought as at the lock (`pattern::find_body`). The assignment
/// completed in place; the blobs taken.
pub(crate) fn research(
    layout: &MarkerLayout,
    blobs: &[Blob],
    assigned: &mut [Option<Blob>],
    view: View,
) -> usize {
    let points: Vec<Vector2<f64>> = blobs.iter().map(|b| view.to_bench(b.u, b.v)).collect();
    let mut used: Vec<bool> = blobs
        .iter()
        .map(|b| assigned.iter().flatten().any(|a| a.u == b.u && a.v == b.v))
        .collect();
    let mut taken = 0;
    for body in &layout.bodies {
        let seen = body
            .markers
            .iter()
            .filter(|(m, _)| assigned.get(*m).is_some_and(Option::is_some))
            .count();
        if seen >= 2.min(body.markers.len()) {
            continue;
        }
        // The body's own markers still followed are sought again with it (a body of two
        // markers, one of them lost, is found again only as the pair).
        let mut free = used.clone();
        for (m, _) in &body.markers {
            if let Some(Some(a)) = assigned.get(*m) {
                for (k, b) in blobs.iter().enumerate() {
                    if a.u == b.u && a.v == b.v {
                        free[k] = false;
                    }
                }
            }
        }
        if let Ok(f) = find_body(body, &points, &free) {
            for (&(m, _), &k) in body.markers.iter().zip(&f.blobs) {
                used[k] = true;
                if let Some(a) = assigned.get_mut(m) {
                    // A blob taken from the extras; one that replaces another leaves the count.
                    taken += usize::from(a.is_none());
                    *a = Some(blobs[k]);
                }
            }
        }
    }
    taken
}

/// Unassigned blobs lying on the line through the assigned markers, within its extent widened
/// by one marker spacing at each end, and within 2 px of it (a lock in a line: `params` the
/// markers' places along it at the lock, px).
pub(crate) fn extra_on_line(blobs: &[Blob], assigned: &[Option<Blob>], params: &[f64]) -> usize {
    let seen: Vec<(f64, Blob)> = assigned
        .iter()
        .zip(params)
        .filter_map(|(a, &s)| a.map(|b| (s, b)))
        .collect();
    if seen.len() < 2 {
        return 0;
    }
    let (s0, a) = seen[0];
    let (s1, b) = seen[seen.len() - 1];
    let len = (b.u - a.u).hypot(b.v - a.v);
    if len <= 0.0 || s1 <= s0 {
        return 0;
    }
    let (du, dv) = ((b.u - a.u) / len, (b.v - a.v) / len);
    let px_per_s = len / (s1 - s0);
    let spacing = params
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(f64::INFINITY, f64::min)
        * px_per_s;
    let (lo, hi) = (
        (params[0] - s0) * px_per_s - spacing,
        (params[params.len() - 1] - s0) * px_per_s + spacing,
    );
    blobs
        .iter()
        .filter(|x| !assigned.iter().flatten().any(|y| y.u == x.u && y.v == x.v))
        .filter(|x| {
            let along = (x.u - a.u) * du + (x.v - a.v) * dv;
            let across = (-(x.u - a.u) * dv + (x.v - a.v) * du).abs();
            across < 2.0 && along > lo && along < hi
        })
        .count()
}
