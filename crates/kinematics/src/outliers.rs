//! The fitted mechanism's reprojection test: each measured marker position against where the
//! fitted motion puts it. The residual (fitted minus measured, bench frame) of marker m at
//! sample k over the marker's scale s_m (1.4826 times the median absolute residual component of
//! that marker over the recording, at least [`RESIDUAL_FLOOR_M`]) gives
//! chi2 = |r|^2 / s_m^2, chi-square with 2 degrees of freedom for a clean sample; the sample
//! fails above the 1 - alpha quantile, -2 ln alpha (the track stage's tests use the same
//! statistic and level: `flexbench_contracts::flags`).
//!
//! The scale is per marker because the loop holds the markers unequally (a marker near a pin
//! of the ground moves little under the fit and keeps a larger share of its noise as residual
//! than one the fit follows). A bad marker pulls the fit towards itself: it hides part of its
//! own error, and it lends some to the other markers of its sample (on the bench, a lever marker
//! 5 mm off pushes a clean neighbour past the threshold). So at each sample only the marker that
//! fails worst is flagged; the caller leaves the flagged samples out, refits and tests again
//! ([`ROUNDS`] at most), and a second bad marker of the same sample is found in the next round.

use crate::observe::FitSample;
use flexbench_contracts::flags::{chi2_2_quantile, robust_scale};

/// Scale floor of the residual test, m: 1 um, a thousandth of a pixel on the bench's recording
/// (1.4 mm/px). It matters only for noise-free (simulated) tracks, whose residuals are the
/// fit's rounding and would otherwise make any tiny model error an outlier.
pub const RESIDUAL_FLOOR_M: f64 = 1e-6;

/// Most rounds of test, leave out and refit the caller runs: each round finds at most one bad
/// marker per sample, and those the previous fit hid.
pub const ROUNDS: usize = 4;

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

/// Each marker's residual scale over the fitted samples, m per coordinate (at least
/// [`RESIDUAL_FLOOR_M`]).
pub fn residual_scales(samples: &[FitSample], markers: usize) -> Vec<f64> {
    (0..markers)
        .map(|m| {
            let comps = samples
                .iter()
                .filter_map(|s| s.residual.get(m).copied().flatten())
                .flat_map(|r| [r.x, r.y])
                .collect();
            robust_scale(comps, RESIDUAL_FLOOR_M)
        })
        .collect()
}

/// The samples whose residual fails the test at false-alarm level `alpha`, the worst marker of
/// each sample only, in sample order.
pub fn residual_outliers(
    samples: &[FitSample],
    markers: usize,
    alpha: f64,
) -> Vec<ResidualOutlier> {
    let chi2 = chi2_2_quantile(alpha);
    let scales = residual_scales(samples, markers);
    let mut out = Vec::new();
    for (k, s) in samples.iter().enumerate() {
        let worst = s
            .residual
            .iter()
            .take(markers)
            .enumerate()
            .filter_map(|(m, r)| Some((m, r.as_ref()?.norm_squared() / scales[m].powi(2) / chi2)))
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
    use nalgebra::Vector2;

    /// Residuals of two markers over 2000 samples: Gaussian-like (a fixed sequence) of 0.1 mm
    /// and 0.3 mm, with three outliers on the second marker.
    fn samples() -> Vec<FitSample> {
        let mut state = 0x9E3779B97F4A7C15u64;
        let mut normal = move || {
            // Box-Muller on a xorshift sequence.
            let mut u = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64
            };
            let (a, b) = (u().max(1e-300), u());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        };
        (0..2000)
            .map(|k| {
                let r0 = Vector2::new(normal(), normal()) * 1e-4;
                let mut r1 = Vector2::new(normal(), normal()) * 3e-4;
                if [100, 900, 1500].contains(&k) {
                    r1 += Vector2::new(3e-3, -2e-3);
                }
                FitSample {
                    state: None,
                    residual: vec![Some(r0), if k == 7 { None } else { Some(r1) }],
                }
            })
            .collect()
    }

    #[test]
    fn scales_per_marker_within_five_percent() {
        let s = residual_scales(&samples(), 2);
        assert!((s[0] / 1e-4 - 1.0).abs() < 0.05, "{s:?}");
        assert!((s[1] / 3e-4 - 1.0).abs() < 0.05, "{s:?}");
    }

    #[test]
    fn only_the_planted_outliers_fail() {
        // 2 x 2000 clean samples at alpha 1e-6: the chance of a false alarm is 0.4 %.
        let out = residual_outliers(&samples(), 2, 1e-6);
        let got: Vec<(usize, usize)> = out.iter().map(|o| (o.sample, o.marker)).collect();
        assert_eq!(got, vec![(100, 1), (900, 1), (1500, 1)]);
        // |r| = 3.6 mm over 0.3 mm: chi2 = 144, threshold 27.6.
        for o in &out {
            assert!(o.score > 4.0 && o.score < 7.0, "{o:?}");
        }
    }

    #[test]
    fn one_marker_per_sample_each_round() {
        let mut s = samples();
        s[100].residual[0] = Some(Vector2::new(1e-3, 0.0));
        let out = residual_outliers(&s, 2, 1e-6);
        // Marker 0's residual is 10 of its scales (chi2 100), marker 1's 12 (chi2 144).
        assert_eq!(out[0].sample, 100);
        assert_eq!(out[0].marker, 1);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn noise_free_residuals_use_the_floor() {
        let s: Vec<FitSample> = (0..100)
            .map(|k| FitSample {
                state: None,
                residual: vec![Some(Vector2::new(1e-12, if k == 50 { 2e-6 } else { 0.0 }))],
            })
            .collect();
        assert_eq!(residual_scales(&s, 1), vec![RESIDUAL_FLOOR_M]);
        assert!(residual_outliers(&s, 1, 1e-6).is_empty());
    }
}
