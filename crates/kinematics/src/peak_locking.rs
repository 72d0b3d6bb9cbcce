//! Peak locking: a centroid tracker's bias tied to the pixel grid, estimated from the fit's
//! residuals and taken out of the markers' positions.
//!
//! A marker's image centre found by a centroid (or a template's peak) is pulled towards the
//! centres of the pixels: its error is a periodic function of the centre's fraction of a pixel,
//! the same in every frame (Westerweel 1997, "Fundamentals of digital particle image
//! velocimetry", Meas. Sci. Technol. 8, section 5; Roesgen 2003). On a periodic motion the
//! markers cross the same pixels at the same crank angle every turn, so the error is periodic
//! too: the part of it at the crank's harmonics looks like motion, the fit takes it up, and the
//! residuals do not show it. On the rendered bench (`flexbench render`, 4 px markers) it is
//! 0.026 px in amplitude (0.04 mm), and it moved the slide's identified friction by 2.4 of its
//! standard deviations.
//!
//! What the fit leaves is enough to measure it: the markers sweep many pixels per turn, so the
//! error's fast part stays in the residuals. Each image axis's residual (px, measured less
//! fitted, through the tracks' own bench-to-image map) is regressed on the first two
//! harmonics of that axis's pixel fraction f where the fit puts the centre,
//! e(f) = a1 sin 2 pi f + b1 cos 2 pi f + a2 sin 4 pi f + b2 cos 4 pi f; the harmonics' Wald
//! statistic is tested against chi-square with 4 degrees of freedom per axis (the variance
//! widened for the residuals' lag-one correlation), and the fitted curve is subtracted from
//! every sample where asked.

use nalgebra::{Matrix2, SMatrix, SVector, Vector2};

/// One measured sample of a marker: where the tracker put it (px and bench m) and what the fit
/// left (fitted less measured, bench m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PixelSample {
    /// Image column and row of the marker's centre, px.
    pub uv: [f64; 2],
    /// Bench-frame position, m.
    pub xy: [f64; 2],
    /// The fit's residual, fitted less measured, bench frame, m.
    pub residual: [f64; 2],
}

/// The peak locking the residuals show: per image axis, the harmonics of the pixel fraction.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeakLocking {
    /// Samples used (residuals beyond 5 robust sigmas left out).
    pub samples: usize,
    /// Column (u) error as [a1, b1, a2, b2], px: a1 sin 2 pi f + b1 cos 2 pi f + a2 sin 4 pi f +
    /// b2 cos 4 pi f of the column's fraction f.
    pub u: [f64; 4],
    /// Row (v) error, the same harmonics of the row's fraction, px.
    pub v: [f64; 4],
    /// The curves' RMS over a pixel, both axes pooled, px.
    pub rms_px: f64,
    /// The residuals' RMS about the curves, px.
    pub noise_px: f64,
    /// The harmonics' Wald statistic, both axes (chi-square with 8 degrees of freedom).
    pub chi2: f64,
    /// Its p-value: the chance of a curve this large from residuals without peak locking.
    pub p_value: f64,
    /// Bench metres to pixels: the tracks' own affine map's matrix (px/m, rows u and v).
    pub px_per_m: [[f64; 2]; 2],
}

/// Below this p-value the peak locking is taken as real (and corrected where asked).
pub const SIGNIFICANT: f64 = 1e-3;

/// A residual below this (m) is a marker the fit passes through exactly.
const EXACT_M: f64 = 1e-12;

/// The largest robust residual (px, 1.4826 MAD, the larger axis) it is measured under.
pub const NOISIEST_PX: f64 = 0.25;

/// Fewest samples to estimate it from.
const FEWEST: usize = 60;

impl PeakLocking {
    /// The tracker's error where the marker's centre truly is, image point `uv`, px (measured
    /// less true).
    pub fn error_px(&self, uv: [f64; 2]) -> [f64; 2] {
        [curve(&self.u, uv[0]), curve(&self.v, uv[1])]
    }

    /// The tracker's error where the marker's centre truly is, image point `uv`, in the bench
    /// frame, m (measured less true).
    pub fn error_m(&self, uv: [f64; 2]) -> [f64; 2] {
        let a = Matrix2::from_fn(|i, j| self.px_per_m[i][j]);
        let e = self.error_px(uv);
        // A has the scale of the image (hundreds of px/m): invertible whenever estimated.
        let d = a
            .try_inverse()
            .map_or(Vector2::zeros(), |inv| inv * Vector2::new(e[0], e[1]));
        [d.x, d.y]
    }

    /// The tracker's error of `sample`, bench frame, m (measured less true), at the image point
    /// where the fit puts it.
    pub fn error_of(&self, sample: &PixelSample) -> [f64; 2] {
        let a = Matrix2::from_fn(|i, j| self.px_per_m[i][j]);
        let fitted = Vector2::new(sample.uv[0], sample.uv[1])
            + a * Vector2::new(sample.residual[0], sample.residual[1]);
        self.error_m([fitted.x, fitted.y])
    }

    /// Whether it is larger than residuals without it would give ([`SIGNIFICANT`]).
    pub fn significant(&self) -> bool {
        self.p_value < SIGNIFICANT
    }
}

/// The curve [a1, b1, a2, b2] at coordinate `c` (px): its fraction's two harmonics.
fn curve(k: &[f64; 4], c: f64) -> f64 {
    let h = harmonics(c);
    k.iter().zip(&h[1..]).map(|(a, b)| a * b).sum()
}

/// The regressors of coordinate `c`, px: 1 and the two harmonics of its pixel fraction.
fn harmonics(c: f64) -> [f64; 5] {
    let w = std::f64::consts::TAU * (c - c.floor());
    [1.0, w.sin(), w.cos(), (2.0 * w).sin(), (2.0 * w).cos()]
}

/// Why the peak locking was not measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotMeasured {
    /// Fewer than [`FEWEST`] samples with pixels that the fit does not pass through exactly.
    TooFewSamples(usize),
    /// The residuals' robust standard deviation, px, beyond [`NOISIEST_PX`].
    ResidualsTooLarge(f64),
    /// The bench positions do not span the plane, or the markers' fractions of a pixel do not
    /// spread (markers that hardly move).
    Degenerate,
}

impl std::fmt::Display for NotMeasured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotMeasured::TooFewSamples(n) => write!(
                f,
                "{n} samples with pixel coordinates that the fit does not pass through exactly, fewer than {FEWEST}"
            ),
            NotMeasured::ResidualsTooLarge(px) => write!(
                f,
                "the fit's residuals are {px:.2} px (robust), beyond {NOISIEST_PX} px: the model's or the camera's errors, in which a pull of hundredths of a pixel cannot be seen"
            ),
            NotMeasured::Degenerate => write!(
                f,
                "the markers' positions do not spread over the plane and the pixels"
            ),
        }
    }
}

/// The peak locking of `samples` (in time order, any marker), or why it cannot be measured
/// from them ([`NotMeasured`]).
pub fn estimate(samples: &[PixelSample]) -> Result<PeakLocking, NotMeasured> {
    // A marker the fit passes through exactly (one held at a ground pin that the others are
    // measured against) tells nothing of the tracker.
    let samples: Vec<PixelSample> = samples
        .iter()
        .filter(|s| s.residual[0].hypot(s.residual[1]) > EXACT_M)
        .copied()
        .collect();
    let samples = samples.as_slice();
    if samples.len() < FEWEST {
        return Err(NotMeasured::TooFewSamples(samples.len()));
    }
    let a = bench_to_image(samples).ok_or(NotMeasured::Degenerate)?;
    // Measured less fitted, px.
    let err: Vec<[f64; 2]> = samples
        .iter()
        .map(|s| {
            let e = -(a * Vector2::new(s.residual[0], s.residual[1]));
            [e.x, e.y]
        })
        .collect();
    // Where the fit puts each sample in the image, px: the curve's argument. The measured
    // centre's fraction carries the tracker's noise, which flattens the curve by
    // exp(-2 pi^2 sigma^2) and more (0.65-0.8 at 0.08 px); the fit's is nearly noise-free.
    let fitted: Vec<[f64; 2]> = samples
        .iter()
        .zip(&err)
        .map(|(s, e)| [s.uv[0] - e[0], s.uv[1] - e[1]])
        .collect();
    // Residuals of a large fraction of a pixel are the model's or the camera's, not the
    // centroid's: the fit's fraction of a pixel is then unknown, and a curve found in them is
    // not a tracker's (the real pendulum's video, its camera drifting: 4 px).
    let spread = spread(&err);
    let sigma = robust_sigma(&spread);
    if sigma > NOISIEST_PX {
        return Err(NotMeasured::ResidualsTooLarge(sigma));
    }
    let keep = inliers(&err, &spread);
    let used: Vec<usize> = (0..samples.len()).filter(|&i| keep[i]).collect();
    if used.len() < FEWEST {
        return Err(NotMeasured::TooFewSamples(used.len()));
    }
    let (mut coef, mut chi2, mut ss, mut rms2) = ([[0.0; 4]; 2], 0.0, 0.0, 0.0);
    for (axis, c) in coef.iter_mut().enumerate() {
        let fit = regress(&fitted, &err, &used, axis).ok_or(NotMeasured::Degenerate)?;
        *c = fit.coef;
        chi2 += fit.chi2;
        ss += fit.ss;
        rms2 += fit.coef.iter().map(|c| c * c).sum::<f64>() / 2.0;
    }
    Ok(PeakLocking {
        samples: used.len(),
        u: coef[0],
        v: coef[1],
        rms_px: (rms2 / 2.0).sqrt(),
        noise_px: (ss / (2 * used.len()) as f64).sqrt(),
        chi2,
        p_value: flexbench_signal::noise::gamma_q(4.0, chi2 / 2.0),
        px_per_m: [[a[(0, 0)], a[(0, 1)]], [a[(1, 0)], a[(1, 1)]]],
    })
}

/// The tracks' own affine map from the bench plane to the image, px/m (its matrix), by least
/// squares over `samples`; None where the bench positions do not span the plane.
fn bench_to_image(samples: &[PixelSample]) -> Option<Matrix2<f64>> {
    let mut ata = SMatrix::<f64, 3, 3>::zeros();
    let mut atb = SMatrix::<f64, 3, 2>::zeros();
    let (mx, my) = mean_xy(samples);
    for s in samples {
        let r = SVector::<f64, 3>::new(s.xy[0] - mx, s.xy[1] - my, 1.0);
        ata += r * r.transpose();
        atb += r * SMatrix::<f64, 1, 2>::new(s.uv[0], s.uv[1]);
    }
    let sol = ata.cholesky()?.solve(&atb);
    let a = Matrix2::new(sol[(0, 0)], sol[(1, 0)], sol[(0, 1)], sol[(1, 1)]);
    (a.determinant().abs() > 1.0).then_some(a)
}

/// The samples' mean bench position, m (the affine fit's origin, for its conditioning).
fn mean_xy(samples: &[PixelSample]) -> (f64, f64) {
    let n = samples.len() as f64;
    let sx: f64 = samples.iter().map(|s| s.xy[0]).sum();
    let sy: f64 = samples.iter().map(|s| s.xy[1]).sum();
    (sx / n, sy / n)
}

/// Each axis's median and median absolute deviation of the errors, px.
fn spread(err: &[[f64; 2]]) -> [(f64, f64); 2] {
    std::array::from_fn(|axis| {
        let med = median(err.iter().map(|e| e[axis]).collect());
        let mad = median(err.iter().map(|e| (e[axis] - med).abs()).collect());
        (med, mad)
    })
}

/// Whether each error is within 5 robust sigmas (1.4826 MAD per axis) of its axis's median
/// (`spread`): a glint or a swap the fit flagged does not make a curve.
fn inliers(err: &[[f64; 2]], spread: &[(f64, f64); 2]) -> Vec<bool> {
    let bounds = spread.map(|(med, mad)| (med, 5.0 * 1.4826 * mad));
    err.iter()
        .map(|e| (0..2).all(|a| (e[a] - bounds[a].0).abs() <= bounds[a].1))
        .collect()
}

/// The errors' robust standard deviation, px: 1.4826 MAD about the median (`spread`), the
/// larger axis.
fn robust_sigma(spread: &[(f64, f64); 2]) -> f64 {
    spread
        .iter()
        .map(|(_, mad)| 1.4826 * mad)
        .fold(0.0, f64::max)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// One axis's regression: the harmonics, their Wald statistic, the residual sum of squares.
struct AxisFit {
    coef: [f64; 4],
    chi2: f64,
    ss: f64,
}

/// Regress axis `axis` of `err` (px) on the harmonics of the pixel fraction of `at` (px) over
/// the samples `used`.
/// The Wald statistic's variance is widened by (1 + rho) / (1 - rho) for the residuals'
/// lag-one correlation rho (at least 0): neighbouring samples of a marker share their errors.
fn regress(at: &[[f64; 2]], err: &[[f64; 2]], used: &[usize], axis: usize) -> Option<AxisFit> {
    let mut ata = SMatrix::<f64, 5, 5>::zeros();
    let mut atb = SVector::<f64, 5>::zeros();
    for &i in used {
        let h = SVector::<f64, 5>::from(harmonics(at[i][axis]));
        ata += h * h.transpose();
        atb += h * err[i][axis];
    }
    let inv = ata.try_inverse()?;
    let b = inv * atb;
    let rest: Vec<f64> = used
        .iter()
        .map(|&i| err[i][axis] - SVector::<f64, 5>::from(harmonics(at[i][axis])).dot(&b))
        .collect();
    let ss: f64 = rest.iter().map(|r| r * r).sum();
    let dof = used.len().saturating_sub(5).max(1) as f64;
    let lag1 = rest.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / ss.max(f64::MIN_POSITIVE);
    let rho = lag1.clamp(0.0, 0.95);
    let var = ss / dof * (1.0 + rho) / (1.0 - rho);
    let c = b.fixed_rows::<4>(1).into_owned();
    let cov = inv.fixed_view::<4, 4>(1, 1).into_owned() * var;
    // A pixel fraction that never changes leaves the harmonics undetermined.
    let chi2 = c.dot(&(cov.try_inverse()? * c));
    Some(AxisFit {
        coef: [c[0], c[1], c[2], c[3]],
        chi2,
        ss,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_contracts::gauss::Gauss;

    /// Markers sweeping the image with a known peak locking and white noise: the curve is found
    /// to its noise's standard error, it is significant, and without it nothing is.
    fn swept(lock: [f64; 4], noise_px: f64, seed: u64) -> Vec<PixelSample> {
        let mut g = Gauss::new(seed);
        let a = Matrix2::new(700.0, 15.0, 20.0, -705.0);
        let inv = a.try_inverse().expect("invertible");
        (0..2000)
            .map(|i| {
                let t = i as f64 / 240.0;
                let xy = Vector2::new(0.2 + 0.05 * (14.6 * t).cos(), 0.1 * (14.6 * t).sin());
                let uv = a * xy + Vector2::new(320.0, 240.0);
                let e = Vector2::new(
                    curve(&lock, uv.x) + noise_px * g.next(),
                    curve(&[lock[1], lock[0], 0.0, 0.0], uv.y) + noise_px * g.next(),
                );
                // Tracked at uv + e; the fit (the truth here) less the measured, in metres.
                let measured = uv + e;
                let r = -(inv * e);
                PixelSample {
                    uv: [measured.x, measured.y],
                    xy: [xy.x - r.x, xy.y - r.y],
                    residual: [r.x, r.y],
                }
            })
            .collect()
    }

    #[test]
    fn a_known_curve_is_found_and_tested() {
        let lock = [0.026, 0.004, -0.003, 0.002];
        let pl = estimate(&swept(lock, 0.08, 3)).expect("estimated");
        // Standard error of each coefficient: 0.08 sqrt(2 / 2000) = 0.0025 px.
        for (got, want) in pl.u.iter().zip(&lock) {
            assert!((got - want).abs() < 0.0075, "{:?}", pl.u);
        }
        assert!(
            (pl.v[0] - 0.004).abs() < 0.0075 && (pl.v[1] - 0.026).abs() < 0.0075,
            "{:?}",
            pl.v
        );
        assert!(pl.significant(), "{}", pl.p_value);
        assert!((pl.noise_px - 0.08).abs() < 0.01, "{}", pl.noise_px);
        assert!((pl.px_per_m[0][0] - 700.0).abs() < 1.0, "{:?}", pl.px_per_m);
        // The correction in metres maps back to the curve in pixels.
        let uv = [321.3, 200.7];
        let m = pl.error_m(uv);
        let a = Matrix2::from_fn(|i, j| pl.px_per_m[i][j]);
        let px = a * Vector2::new(m[0], m[1]);
        let want = pl.error_px(uv);
        assert!((px.x - want[0]).abs() < 1e-9 && (px.y - want[1]).abs() < 1e-9);
    }

    #[test]
    fn noise_alone_is_not_significant() {
        let mut significant = 0;
        for seed in 0..20 {
            let pl = estimate(&swept([0.0; 4], 0.08, seed)).expect("estimated");
            significant += usize::from(pl.significant());
        }
        assert!(significant <= 1, "{significant} of 20");
    }

    #[test]
    fn markers_that_do_not_move_give_none() {
        let mut s = swept([0.0; 4], 0.08, 1);
        for p in &mut s {
            p.uv = [320.25, 240.5];
        }
        assert_eq!(estimate(&s), Err(NotMeasured::Degenerate));
        assert_eq!(estimate(&s[..10]), Err(NotMeasured::TooFewSamples(10)));
        // Residuals of half a pixel: not a tracker's pull to measure.
        let noisy = estimate(&swept([0.026, 0.0, 0.0, 0.0], 0.5, 4));
        assert!(
            matches!(noisy, Err(NotMeasured::ResidualsTooLarge(px)) if (px - 0.5).abs() < 0.1),
            "{noisy:?}"
        );
        // Samples the fit passes through exactly (a held marker) are not counted.
        let mut held = swept([0.026, 0.0, 0.0, 0.0], 0.08, 2);
        for p in held.iter_mut().skip(FEWEST / 2) {
            p.residual = [0.0, 0.0];
        }
        assert_eq!(estimate(&held), Err(NotMeasured::TooFewSamples(FEWEST / 2)));
    }
}
