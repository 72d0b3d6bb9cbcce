//! The tests every tracked sample goes through, each at one false-alarm level alpha (the
//! probability that a clean sample fails it, under the test's model; the rate measured on clean
//! video is stated in docs/tracking.md):
//!
//! - **innovation**: the sample against the marker's motion about it: a quadratic in time fitted
//!   to its neighbours within 4 frames on each side (at least 2 each side; neighbours that
//!   failed a first pass left out) predicts it; the residual over a scale per marker (1.4826
//!   times the median absolute residual component, at least 0.02 px) is chi-square with 2
//!   degrees of freedom, failed above its 1 - alpha quantile, -2 ln alpha.
//! - **pattern**: the sample against its body's other markers in the same frame (their rigid
//!   pattern fitted in the bench, at least two of them, those that failed a first pass left
//!   out), the residual reprojected to pixels and scaled as above, the same chi-square.
//! - **area** and **partly_hidden**: the log of the blob's area at half its peak against the running median of
//!   the marker's areas over 15 frames each side, over 1.4826 times the median absolute
//!   deviation of those logs (at least 0.02, and at least a whole-pixel count's spread,
//!   sqrt(r) px for a disc of radius r px: `count_floor`): a normal score, failed beyond its 1 - alpha
//!   quantile above (grown: a glint or another blob merged) or below (partly hidden).
//! - **shape**: the log of the blob's elongation likewise, failed above.
//! - **second_blob**: the nearest other blob among the marker's candidates, when its
//!   chi-square under the motion model is within the 1 - alpha quantile (as plausible as a
//!   marker).
//!
//! Scores are the statistic over its threshold (1 at the threshold); a second blob's score is the
//! threshold over its chi-square.

use flexbench_contracts::flags::{chi2_2_quantile, robust_scale, Flag, FlagReason, Flags};
use nalgebra::Vector2;

use crate::assign::View;
use crate::blob::Blob;
use crate::pattern::{MarkerLayout, Pose};

/// Neighbours on each side of the innovation test, frames.
const HALF: usize = 4;
/// Frames on each side of the running medians of the area and shape tests.
const MEDIAN_HALF: usize = 15;
/// Scale floor of the innovation and pattern tests, px.
const PX_FLOOR: f64 = 0.02;
/// Scale floor of the area and shape tests (log units).
const LOG_FLOOR: f64 = 0.02;

/// The standard normal distribution's quantile at probability p in (0, 1): Acklam's rational
/// approximation (relative error under 1.2e-9). Written here because it is one function (a
/// statistics crate would bring a second nalgebra); checked against scipy.stats.norm.ppf.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The tracked samples of every frame (`per_frame[k][m]`) tested at level `alpha`; `names` the
/// markers', `layout` the mechanism's (the pattern test needs it), `view` the camera; the
/// samples the user corrected (frame, marker) are not flagged.
pub(crate) fn test_samples(
    per_frame: &[Vec<Option<Blob>>],
    names: &[String],
    layout: Option<&MarkerLayout>,
    view: View,
    alpha: f64,
    corrected: &std::collections::BTreeSet<(usize, usize)>,
) -> Flags {
    let chi2 = chi2_2_quantile(alpha);
    let z = normal_quantile(1.0 - alpha);
    let mut flags = Vec::new();
    let mut push = |k: usize, m: usize, reason: FlagReason, score: f64| {
        if score > 1.0 && !corrected.contains(&(k, m)) {
            flags.push(Flag {
                frame: k as i64,
                marker: names[m].clone(),
                reason,
                score,
            });
        }
    };
    for m in 0..names.len() {
        let series: Vec<Option<Blob>> = per_frame.iter().map(|f| f[m]).collect();
        for (k, c) in innovation(&series, chi2).into_iter().enumerate() {
            push(k, m, FlagReason::Innovation, c.unwrap_or(0.0) / chi2);
        }
        // A corrected sample's blob is the user's, not measured: out of the blob statistics.
        let measured: Vec<Option<Blob>> = (0..series.len())
            .map(|k| series[k].filter(|_| !corrected.contains(&(k, m))))
            .collect();
        let area = running_scores(&measured, |b| b.half_area.ln(), count_floor(&measured));
        let shape = running_scores(&measured, |b| b.elongation.ln(), LOG_FLOOR);
        for k in 0..series.len() {
            let (a, s) = (area[k].unwrap_or(0.0), shape[k].unwrap_or(0.0));
            push(k, m, FlagReason::Area, a / z);
            push(k, m, FlagReason::PartlyHidden, -a / z);
            push(k, m, FlagReason::Shape, s / z);
            if let Some(r) = series[k].and_then(|b| b.rival) {
                push(k, m, FlagReason::SecondBlob, chi2 / r.max(chi2 * 1e-9));
            }
        }
    }
    if let Some(layout) = layout {
        for (k, m, c) in pattern(per_frame, layout, view, chi2) {
            push(k, m, FlagReason::Pattern, c / chi2);
        }
    }
    Flags::from_rows(flags)
}

/// The robust scale of residuals' components, px (at least [`PX_FLOOR`]).
fn px_scale<'a>(res: impl Iterator<Item = &'a Vector2<f64>>) -> f64 {
    robust_scale(res.flat_map(|r| [r.x, r.y]).collect(), PX_FLOOR)
}

/// The innovation test's chi-square of every sample of one marker (None: not tested).
fn innovation(series: &[Option<Blob>], chi2: f64) -> Vec<Option<f64>> {
    let first = residuals(series, &vec![false; series.len()]);
    let scale = px_scale(first.iter().flatten());
    let failed: Vec<bool> = first
        .iter()
        .map(|r| r.is_some_and(|r| r.norm_squared() / (scale * scale) > chi2))
        .collect();
    let second = residuals(series, &failed);
    let scale = px_scale(second.iter().flatten());
    second
        .iter()
        .map(|r| r.map(|r| r.norm_squared() / (scale * scale)))
        .collect()
}

/// Each sample minus the quadratic through its neighbours (within [`HALF`] frames, at least
/// two each side, those `left_out` excepted) at its frame, px.
fn residuals(series: &[Option<Blob>], left_out: &[bool]) -> Vec<Option<Vector2<f64>>> {
    let n = series.len();
    (0..n)
        .map(|k| {
            let b = series[k]?;
            let near: Vec<(f64, Blob)> = (k.saturating_sub(HALF)..(k + HALF + 1).min(n))
                .filter(|&j| j != k && !left_out[j])
                .filter_map(|j| series[j].map(|s| (j as f64 - k as f64, s)))
                .collect();
            let before = near.iter().filter(|(t, _)| *t < 0.0).count();
            if before < 2 || near.len() - before < 2 {
                return None;
            }
            let u = quadratic_at_zero(&near, |s| s.u)?;
            let v = quadratic_at_zero(&near, |s| s.v)?;
            Some(Vector2::new(b.u - u, b.v - v))
        })
        .collect()
}

/// The least-squares quadratic through (t, f(sample)) evaluated at t = 0.
fn quadratic_at_zero(pts: &[(f64, Blob)], f: impl Fn(&Blob) -> f64) -> Option<f64> {
    let mut ata = nalgebra::Matrix3::<f64>::zeros();
    let mut atb = nalgebra::Vector3::<f64>::zeros();
    for (t, s) in pts {
        let row = nalgebra::Vector3::new(1.0, *t, t * t);
        ata += row * row.transpose();
        atb += row * f(s);
    }
    ata.lu().solve(&atb).map(|c| c[0])
}

/// The area test's scale floor for a marker (log units): [`LOG_FLOOR`], or the spread of a
/// count of whole pixels when larger. A disc of radius r px counted in whole pixels varies with
/// its sub-pixel position by 0.42-0.73 sqrt(r) px RMS, within +-2.5 sqrt(r) (the lattice-point
/// problem; counted over 4000 random offsets for r = 2 to 12 px); its median absolute
/// deviation may be 0 (at r = 3.6 px, 40 or 41 px nearly always, 39 to 44 over the offsets),
/// and a blob whose response is flat and noise-free (a coloured sticker's hue) would then fail
/// for a pixel's change. The floor takes sqrt(r) px over the marker's median area A (r =
/// sqrt(A / pi)): 0.047 at A = 40 px, LOG_FLOOR from A = 100 px on.
fn count_floor(series: &[Option<Blob>]) -> f64 {
    let mut areas: Vec<f64> = series
        .iter()
        .flatten()
        .map(|b| b.half_area)
        .filter(|a| a.is_finite() && *a > 0.0)
        .collect();
    if areas.is_empty() {
        return LOG_FLOOR;
    }
    let mid = areas.len() / 2;
    areas.select_nth_unstable_by(mid, f64::total_cmp);
    let a = areas[mid];
    let r = (a / std::f64::consts::PI).sqrt();
    (r.sqrt() / a).max(LOG_FLOOR)
}

/// Each sample's normal score of `f` against the running median of the marker's values over
/// [`MEDIAN_HALF`] frames each side (itself left out), scaled by the robust spread of those
/// differences (at least `floor`, log units).
fn running_scores(
    series: &[Option<Blob>],
    f: impl Fn(&Blob) -> f64,
    floor: f64,
) -> Vec<Option<f64>> {
    let n = series.len();
    // A blob not measured (fitted to its outline: `outline`) has no area or shape to test.
    let values: Vec<Option<f64>> = series
        .iter()
        .map(|b| b.as_ref().map(&f).filter(|x| x.is_finite()))
        .collect();
    let diffs: Vec<Option<f64>> = (0..n)
        .map(|k| {
            let x = values[k]?;
            let mut near: Vec<f64> = (k.saturating_sub(MEDIAN_HALF)..(k + MEDIAN_HALF + 1).min(n))
                .filter(|&j| j != k)
                .filter_map(|j| values[j])
                .collect();
            if near.len() < 4 {
                return None;
            }
            let mid = near.len() / 2;
            near.select_nth_unstable_by(mid, f64::total_cmp);
            Some(x - near[mid])
        })
        .collect();
    let scale = robust_scale(diffs.iter().flatten().copied().collect(), floor);
    diffs.iter().map(|d| d.map(|d| d / scale)).collect()
}

/// The pattern test: (frame, marker, chi-square) of every sample whose body has at least two
/// other markers in its frame.
fn pattern(
    per_frame: &[Vec<Option<Blob>>],
    layout: &MarkerLayout,
    view: View,
    chi2: f64,
) -> Vec<(usize, usize, f64)> {
    let nm = per_frame.first().map_or(0, Vec::len);
    let none = vec![vec![false; nm]; per_frame.len()];
    let first = pattern_residuals(per_frame, layout, view, &none);
    let scales = marker_scales(&first, nm);
    let mut failed = none.clone();
    for &(k, m, r) in &first {
        failed[k][m] = r.norm_squared() / scales[m].powi(2) > chi2;
    }
    let second = pattern_residuals(per_frame, layout, view, &failed);
    let scales = marker_scales(&second, nm);
    second
        .into_iter()
        .map(|(k, m, r)| (k, m, r.norm_squared() / scales[m].powi(2)))
        .collect()
}

/// Each marker's robust scale of its pattern residuals' components, px.
fn marker_scales(res: &[(usize, usize, Vector2<f64>)], nm: usize) -> Vec<f64> {
    (0..nm)
        .map(|m| px_scale(res.iter().filter(|r| r.1 == m).map(|r| &r.2)))
        .collect()
}

/// Each sample minus where its body's other markers in the frame (those `left_out` excepted, at
/// least two) put it, px: (frame, marker, residual).
fn pattern_residuals(
    per_frame: &[Vec<Option<Blob>>],
    layout: &MarkerLayout,
    view: View,
    left_out: &[Vec<bool>],
) -> Vec<(usize, usize, Vector2<f64>)> {
    let mut out = Vec::new();
    for (k, frame) in per_frame.iter().enumerate() {
        for body in layout.bodies.iter().filter(|b| b.markers.len() >= 3) {
            let seen: Vec<(usize, Vector2<f64>, Vector2<f64>, Blob)> = body
                .markers
                .iter()
                .filter_map(|&(m, local)| {
                    let b = frame.get(m).copied().flatten()?;
                    Some((m, Vector2::from(local), view.to_bench(b.u, b.v), b))
                })
                .collect();
            for &(m, local, _, b) in &seen {
                let others: Vec<_> = seen
                    .iter()
                    .filter(|o| o.0 != m && !left_out[k][o.0])
                    .collect();
                let from: Vec<_> = others.iter().map(|o| o.1).collect();
                let to: Vec<_> = others.iter().map(|o| o.2).collect();
                let Some(pose) = Pose::fit(&from, &to).filter(|_| from.len() >= 2) else {
                    continue;
                };
                if let Some((u, v)) = view.to_pixel(pose.apply(local)) {
                    out.push((k, m, Vector2::new(b.u - u, b.v - v)));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scipy.stats.norm.ppf at these probabilities.
    #[test]
    fn normal_quantiles_as_scipy() {
        for (p, x) in [
            (0.999, 3.090232306167813),
            (0.9999, 3.719016485455709),
            (0.5, 0.0),
            (0.975, 1.959963984540054),
            (0.01, -2.3263478740408408),
        ] {
            assert!(
                (normal_quantile(p) - x).abs() < 1e-8 * x.abs().max(1.0),
                "{p}"
            );
        }
        assert!((chi2_2_quantile(1e-3) - 13.815510557964274).abs() < 1e-12);
    }

    fn blob(u: f64, v: f64, area: f64) -> Option<Blob> {
        Some(Blob {
            u,
            v,
            sigma: 0.03,
            area,
            half_area: area,
            elongation: 1.05,
            rival: None,
        })
    }

    /// A marker on a smooth path with small noise: one sample 1 px off fails the innovation
    /// test and nothing else does; one with half its area fails the partly-hidden test.
    #[test]
    fn one_bad_sample_among_clean_ones() {
        let mut seed = 1u64;
        let mut noise = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.1
        };
        let mut series: Vec<Option<Blob>> = (0..200)
            .map(|k| {
                let t = k as f64 / 240.0;
                let a = 50.0 + noise();
                blob(
                    300.0 + 60.0 * (14.6 * t).cos() + noise(),
                    200.0 + 40.0 * (14.6 * t).sin() + noise(),
                    a,
                )
            })
            .collect();
        if let Some(b) = series[100].as_mut() {
            b.u += 1.0;
        }
        if let Some(b) = series[150].as_mut() {
            b.half_area *= 0.5;
        }
        let chi2 = chi2_2_quantile(1e-3);
        let inn = innovation(&series, chi2);
        let over: Vec<usize> = (0..200)
            .filter(|&k| inn[k].is_some_and(|c| c > chi2))
            .collect();
        assert_eq!(over, vec![100]);
        let z = normal_quantile(1.0 - 1e-3);
        let area = running_scores(&series, |b| b.half_area.ln(), LOG_FLOOR);
        let low: Vec<usize> = (0..200)
            .filter(|&k| area[k].is_some_and(|s| s < -z))
            .collect();
        assert_eq!(low, vec![150]);
    }

    /// A sticker whose response is flat and noise-free: its area at half its peak is a count of
    /// whole pixels of a 3.6 px disc at the marker's sub-pixel position (40 or 41 px nearly
    /// always, 39 to 44). At a false-alarm level of 1e-6 no clean sample fails the area test,
    /// and one hidden by a third still fails it.
    #[test]
    fn a_whole_pixel_count_is_no_change_of_area() {
        let count = |du: f64, dv: f64| {
            let mut n = 0.0;
            for y in -6..=6 {
                for x in -6..=6 {
                    if (x as f64 - du).hypot(y as f64 - dv) <= 3.6 {
                        n += 1.0;
                    }
                }
            }
            n
        };
        let mut series: Vec<Option<Blob>> = (0..600)
            .map(|k| {
                let t = k as f64 / 240.0;
                let (u, v) = (
                    300.0 + 60.0 * (14.6 * t).cos(),
                    200.0 + 40.0 * (14.6 * t).sin(),
                );
                blob(u, v, count(u.fract(), v.fract()))
            })
            .collect();
        if let Some(b) = series[300].as_mut() {
            b.half_area *= 2.0 / 3.0;
        }
        let z = normal_quantile(1.0 - 1e-6);
        let area = running_scores(&series, |b| b.half_area.ln(), count_floor(&series));
        let failed: Vec<usize> = (0..600)
            .filter(|&k| area[k].is_some_and(|s| s.abs() > z))
            .collect();
        assert_eq!(failed, vec![300]);
        // The fixed floor alone fails clean samples.
        let fixed = running_scores(&series, |b| b.half_area.ln(), LOG_FLOOR);
        assert!((0..600).any(|k| k != 300 && fixed[k].is_some_and(|s| s.abs() > z)));
    }
}
