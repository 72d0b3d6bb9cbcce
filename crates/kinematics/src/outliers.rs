//! The fitted mechanism's reprojection test: each measured marker position (as tracked, before
//! any smoothing) against where the fitted motion puts it.
//!
//! The residual r_k (fitted minus measured, bench frame) of a marker is not only noise: the
//! elastic lever bends away from the rigid model along the cycle, and a Savitzky-Golay fit
//! follows the markers' smoothed positions, not their samples. Both make a residual that drifts
//! slowly. A bad sample is a short departure from it, so the test takes each residual against the
//! running median of the marker's residuals over [`HALF`] samples on each side (per component;
//! a burst of up to [`HALF`] bad samples does not move that median), d_k = r_k - median, over the
//! marker's scale s (1.4826 times the median absolute component of its d, at least
//! [`RESIDUAL_FLOOR_M`]): chi2 = |d_k|^2 / s^2, chi-square with 2 degrees of freedom for a clean
//! sample, failed above the 1 - alpha quantile, -2 ln alpha (the track stage's tests use the same
//! statistic and level: `flexbench_contracts::flags`).
//!
//! The scale is per marker because the loop holds the markers unequally (a marker near a pin of
//! the ground moves little under the fit and keeps a larger share of its noise as residual than
//! one the fit follows). A bad marker pulls the fit towards itself: it hides part of its own
//! error, and it lends some to the other markers of its sample (on the bench, a lever marker 5 mm
//! off pushes a clean neighbour past the threshold). So at each sample only the marker that fails
//! worst is flagged; the caller leaves the flagged samples out, refits and tests again
//! ([`ROUNDS`] at most), and a second bad marker of the same sample is found in the next round.

use nalgebra::Vector2;

use flexbench_contracts::flags::{chi2_2_quantile, robust_scale};
use flexbench_mechanism::constraints::body_point;
use flexbench_mechanism::Mechanism;

use crate::observe::{FitSample, MarkerState};

/// Scale floor of the residual test, m: 1 um, a thousandth of a pixel on the bench's recording
/// (1.4 mm/px). It matters only for noise-free (simulated) tracks, whose residuals are the
/// fit's rounding and would otherwise make any tiny model error an outlier.
pub const RESIDUAL_FLOOR_M: f64 = 1e-6;

/// Samples on each side of the running median the residual is taken against: 7 (15 in all), so
/// that a burst of up to 7 bad samples is found whole.
pub const HALF: usize = 7;

/// Most rounds of test, leave out and refit the caller runs: each round finds at most one bad
/// marker per sample, and those the previous fit hid.
pub const ROUNDS: usize = 4;

/// The largest share of the measured samples the test may flag over its rounds: beyond it the
/// residuals are not the tracking's noise but a disagreement of the model with the markers (a
/// wrong length, a wrong time base, a calibration off), or the tracks are mostly bad; either way
/// leaving out so many and refitting is not a correction the test can stand behind, and the
/// caller keeps the first fit whole and says so. 10 %: forty times the share the tests flag on
/// the clean default recording.
pub const MAX_SHARE: f64 = 0.1;

/// One sample that failed the residual test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResidualOutlier {
    /// Sample index in the recording.
    pub sample: usize,
    /// Marker index in the mechanism's order.
    pub marker: usize,
    /// Its chi-square over the threshold (above 1).
    pub score: f64,
}

/// Each marker's residual at each sample (fitted minus measured, m, bench frame; None where the
/// marker was not measured or the motion not fitted): `positions[k][m]` the measured states in
/// the mechanism's marker order.
pub fn raw_residuals(
    mech: &Mechanism,
    samples: &[FitSample],
    positions: &[Vec<Option<MarkerState>>],
) -> Vec<Vec<Option<Vector2<f64>>>> {
    samples
        .iter()
        .zip(positions)
        .map(|(s, seen)| {
            mech.markers
                .iter()
                .zip(seen)
                .map(|(mk, o)| {
                    let (q, _, _) = s.state.as_ref()?;
                    Some(body_point(q, mk.body, mk.local) - o.as_ref()?.p)
                })
                .collect()
        })
        .collect()
}

/// One marker's residuals less their running median over [`HALF`] samples each side (None
/// where the residual is, or where fewer than 4 neighbours are).
fn detrended(r: &[Option<Vector2<f64>>]) -> Vec<Option<Vector2<f64>>> {
    let n = r.len();
    let median = |mut v: Vec<f64>| {
        let mid = v.len() / 2;
        *v.select_nth_unstable_by(mid, f64::total_cmp).1
    };
    (0..n)
        .map(|k| {
            let x = r[k]?;
            let near: Vec<Vector2<f64>> = (k.saturating_sub(HALF)..(k + HALF + 1).min(n))
                .filter_map(|j| r[j])
                .collect();
            if near.len() < 5 {
                return None;
            }
            let m = Vector2::new(
                median(near.iter().map(|p| p.x).collect()),
                median(near.iter().map(|p| p.y).collect()),
            );
            Some(x - m)
        })
        .collect()
}

/// The samples whose residual (`residuals[k][m]`, m) fails the test at false-alarm level
/// `alpha`, the worst marker of each sample only, in sample order. `scale_floor_m`: a floor of
/// each marker's scale besides [`RESIDUAL_FLOOR_M`], m: at least the tracks' quantization
/// error's standard deviation (step / sqrt(12)), since quantized tracks at rest have residuals
/// of exactly nothing most of the time, and every step would otherwise fail.
pub fn residual_outliers(
    residuals: &[Vec<Option<Vector2<f64>>>],
    alpha: f64,
    scale_floor_m: f64,
) -> Vec<ResidualOutlier> {
    let chi2 = chi2_2_quantile(alpha);
    let markers = residuals.first().map_or(0, Vec::len);
    // Per marker: its detrended residuals and their scale.
    let per_marker: Vec<(Vec<Option<Vector2<f64>>>, f64)> = (0..markers)
        .map(|m| {
            let d = detrended(
                &residuals
                    .iter()
                    .map(|s| s.get(m).copied().flatten())
                    .collect::<Vec<_>>(),
            );
            let comps = d.iter().flatten().flat_map(|r| [r.x, r.y]).collect();
            let scale = robust_scale(comps, RESIDUAL_FLOOR_M.max(scale_floor_m));
            (d, scale)
        })
        .collect();
    let mut out = Vec::new();
    for k in 0..residuals.len() {
        let worst = per_marker
            .iter()
            .enumerate()
            .filter_map(|(m, (d, s))| Some((m, d[k]?.norm_squared() / (s * s) / chi2)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((marker, score)) = worst.filter(|w| w.1 > 1.0) {
            out.push(ResidualOutlier {
                sample: k,
                marker,
                score,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Residuals of two markers over 2000 samples: Gaussian (a fixed sequence) of 0.1 mm and
    /// 0.3 mm about a slow drift of 2 mm (a bending lever), with three outliers on the second
    /// marker (one of them a burst of 5 samples) and a gap.
    fn residuals() -> Vec<Vec<Option<Vector2<f64>>>> {
        let mut g = flexbench_contracts::gauss::Gauss::new(0x9E3779B97F4A7C15);
        let mut normal = move || g.next();
        (0..2000)
            .map(|k| {
                let drift = Vector2::new(2e-3, -1e-3) * (k as f64 * 0.01).sin();
                let r0 = drift + Vector2::new(normal(), normal()) * 1e-4;
                let mut r1 = drift + Vector2::new(normal(), normal()) * 3e-4;
                if k == 100 || k == 1500 || (900..905).contains(&k) {
                    r1 += Vector2::new(3e-3, -2e-3);
                }
                vec![Some(r0), if k == 7 { None } else { Some(r1) }]
            })
            .collect()
    }

    /// The detrended residuals' scale of marker `m`.
    fn scale(r: &[Vec<Option<Vector2<f64>>>], m: usize) -> f64 {
        let d = detrended(&r.iter().map(|s| s[m]).collect::<Vec<_>>());
        robust_scale(d.iter().flatten().flat_map(|r| [r.x, r.y]).collect(), 0.0)
    }

    #[test]
    fn scales_per_marker_within_ten_percent_under_a_drift() {
        // A running median of 15 takes a little of each sample's noise with it: the scale is
        // sqrt(1 - 2/15 + pi/(2 15)) ~ 0.98 of the noise's for Gaussian noise.
        let r = residuals();
        let (s0, s1) = (scale(&r, 0), scale(&r, 1));
        assert!((s0 / 1e-4 - 1.0).abs() < 0.1, "{s0}");
        assert!((s1 / 3e-4 - 1.0).abs() < 0.1, "{s1}");
    }

    #[test]
    fn only_the_planted_outliers_fail() {
        // 2 x 2000 clean samples at alpha 1e-6: the chance of a false alarm is 0.4 %.
        let out = residual_outliers(&residuals(), 1e-6, 0.0);
        let got: Vec<(usize, usize)> = out.iter().map(|o| (o.sample, o.marker)).collect();
        let want: Vec<(usize, usize)> = [100, 900, 901, 902, 903, 904, 1500]
            .iter()
            .map(|&k| (k, 1))
            .collect();
        assert_eq!(got, want);
        // |r| = 3.6 mm over 0.3 mm: chi2 about 144 (100 to 250 with the sample's own noise),
        // threshold 27.6; a burst's middle less (5 of the 15 samples of its running median are
        // bad and move it a little).
        for o in &out {
            assert!(o.score > 3.0 && o.score < 9.0, "{o:?}");
        }
    }

    #[test]
    fn one_marker_per_sample_each_round() {
        let mut r = residuals();
        r[100][0] = r[100][0].map(|v| v + Vector2::new(1e-3, 0.0));
        let out = residual_outliers(&r, 1e-6, 0.0);
        // Marker 0's departure is 10 of its scales (chi2 100), marker 1's 12 (chi2 144).
        assert_eq!((out[0].sample, out[0].marker), (100, 1));
        assert_eq!(out.len(), 7);
    }

    #[test]
    fn noise_free_residuals_use_the_floor() {
        let r: Vec<Vec<Option<Vector2<f64>>>> = (0..100)
            .map(|k| vec![Some(Vector2::new(1e-12, if k == 50 { 2e-6 } else { 0.0 }))])
            .collect();
        assert!(residual_outliers(&r, 1e-6, 0.0).is_empty());
        let big: Vec<_> = (0..100)
            .map(|k| vec![Some(Vector2::new(0.0, if k == 50 { 6e-6 } else { 0.0 }))])
            .collect();
        assert_eq!(residual_outliers(&big, 1e-6, 0.0).len(), 1);
    }

    /// An encoder's staircase: the marker rests on a count most of the time (residual exactly
    /// nothing) and steps by one count (1.5 mm) now and then. Without the quantization's floor
    /// every step fails; with it (1.5 mm / sqrt(12)) none does, and a 6 mm departure still does.
    #[test]
    fn a_staircase_passes_at_its_quantization() {
        let step = 1.5e-3;
        let r: Vec<Vec<Option<Vector2<f64>>>> = (0..1000)
            .map(|k| {
                let y = if k % 40 < 3 { step } else { 0.0 };
                let y = if k == 500 { 6e-3 } else { y };
                vec![Some(Vector2::new(0.0, y))]
            })
            .collect();
        assert!(residual_outliers(&r, 1e-6, 0.0).len() > 50);
        let out = residual_outliers(&r, 1e-6, step / 12f64.sqrt());
        assert_eq!(out.iter().map(|o| o.sample).collect::<Vec<_>>(), vec![500]);
    }
}
