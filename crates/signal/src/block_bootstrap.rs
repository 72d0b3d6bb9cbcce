//! The markers' errors a parametric bootstrap gives its replicates (the identification's, the
//! forces' bands' calibration): the recording's own, as the process stage's fit left them (its `fit_residuals`), resampled in circular blocks of
//! whole samples (every marker's residual of a sample together, so that errors shared by the
//! markers stay shared; Politis and Romano 1992), the block as long as the residuals' lag-one
//! correlation asks (Politis and White 2004, for an AR(1)). A tracker's errors are neither
//! white nor independent from marker to marker (on the rendered bench the residuals' whiteness
//! test fails at p = 1e-27); white noise at the same level underestimates the processing's
//! spread. White noise at the smoother's level is the fallback where the residuals are absent.

use flexbench_contracts::gauss::Gauss;

/// The markers' errors of a replicate.
#[derive(Debug, Clone)]
pub enum MarkerNoise {
    /// White noise of this standard deviation on x and y, m.
    White(f64),
    /// The recording's residuals: per sample where every marker has one, each marker's (x, y)
    /// in m (markers in `names`' order), resampled in circular blocks of `block` samples.
    Residuals {
        /// The markers, in the order of each sample's errors.
        names: Vec<String>,
        /// Each sample's errors, (x, y) per marker, m, in time order.
        rows: Vec<Vec<[f64; 2]>>,
        /// The blocks' length, samples.
        block: usize,
    },
}

impl MarkerNoise {
    /// The residuals of the markers `names` per sample (each marker's (x, y), m, None where it
    /// has none; the samples in time order), or white noise of `sigma` m with fewer than 20
    /// samples where every marker has one.
    pub fn of_samples(
        names: &[String],
        samples: impl IntoIterator<Item = Vec<Option<[f64; 2]>>>,
        sigma: f64,
    ) -> MarkerNoise {
        let rows: Vec<Vec<[f64; 2]>> = samples
            .into_iter()
            .filter_map(|row| row.into_iter().collect::<Option<Vec<_>>>())
            .collect();
        if rows.len() < 20 {
            return MarkerNoise::White(sigma);
        }
        let block = block_length(&rows);
        MarkerNoise::Residuals {
            names: names.to_vec(),
            rows,
            block,
        }
    }

    /// In words, for the record.
    pub fn describe(&self) -> String {
        match self {
            MarkerNoise::White(s) => format!("white, {:.4} mm on x and y", 1e3 * s),
            MarkerNoise::Residuals { rows, block, .. } => format!(
                "the process stage's fit residuals ({} samples, {:.4} mm RMS), resampled in circular blocks of {block} samples",
                rows.len(),
                1e3 * rms(rows)
            ),
        }
    }

    /// The errors of `n` samples of the markers `names` (m; per sample, per marker (x, y)).
    pub fn draw(&self, names: &[String], n: usize, g: &mut Gauss) -> Vec<Vec<[f64; 2]>> {
        match self {
            MarkerNoise::White(s) => (0..n)
                .map(|_| names.iter().map(|_| [s * g.next(), s * g.next()]).collect())
                .collect(),
            MarkerNoise::Residuals {
                names: have,
                rows,
                block,
            } => {
                let order: Vec<Option<usize>> = names
                    .iter()
                    .map(|m| have.iter().position(|h| h == m))
                    .collect();
                let m = rows.len();
                let mut out = Vec::with_capacity(n);
                while out.len() < n {
                    let start = ((g.uniform() * m as f64) as usize).min(m - 1);
                    for i in 0..*block {
                        if out.len() == n {
                            break;
                        }
                        let row = &rows[(start + i) % m];
                        out.push(
                            order
                                .iter()
                                .map(|o| o.map_or([0.0; 2], |j| row[j]))
                                .collect(),
                        );
                    }
                }
                out
            }
        }
    }
}

/// The RMS of the residuals, m per coordinate.
fn rms(rows: &[Vec<[f64; 2]>]) -> f64 {
    let (mut ss, mut n) = (0.0, 0usize);
    for r in rows.iter().flatten() {
        ss += r[0] * r[0] + r[1] * r[1];
        n += 2;
    }
    (ss / n.max(1) as f64).sqrt()
}

/// The block length for the residuals `rows`: Politis and White's rule for an AR(1) of the
/// pooled lag-one correlation rho, 1.145 (2 rho / (1 - rho^2))^(2/3) n^(1/3) samples, at
/// least 1 and at most a quarter of the samples.
fn block_length(rows: &[Vec<[f64; 2]>]) -> usize {
    let (mut num, mut den) = (0.0, 0.0);
    for w in rows.windows(2) {
        for (a, b) in w[0].iter().zip(&w[1]) {
            num += a[0] * b[0] + a[1] * b[1];
        }
    }
    for r in rows.iter().flatten() {
        den += r[0] * r[0] + r[1] * r[1];
    }
    let rho = (num / den.max(f64::MIN_POSITIVE)).clamp(0.0, 0.99);
    let n = rows.len() as f64;
    let b = 1.145 * (2.0 * rho / (1.0 - rho * rho)).powf(2.0 / 3.0) * n.cbrt();
    (b.round() as usize).clamp(1, rows.len() / 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An AR(1) of correlation 0.8: the block asks for several samples, and the resampled
    /// errors keep the residuals' level and most of their lag-one correlation; every marker's
    /// error of a sample comes from the same recorded sample.
    #[test]
    fn resampled_residuals_keep_their_level_and_correlation() {
        let mut g = Gauss::new(7);
        let mut e = 0.0;
        let rows: Vec<Vec<[f64; 2]>> = (0..2000)
            .map(|_| {
                e = 0.8 * e + 0.6e-4 * g.next();
                vec![[e, -e], [2.0 * e, 0.0]]
            })
            .collect();
        let block = block_length(&rows);
        assert!((8..60).contains(&block), "{block}");
        let noise = MarkerNoise::Residuals {
            names: vec!["M1".into(), "M2".into()],
            rows: rows.clone(),
            block,
        };
        let names = vec!["M2".to_string(), "M1".to_string()];
        let d = noise.draw(&names, 2000, &mut Gauss::new(99));
        let x: Vec<f64> = d.iter().map(|s| s[1][0]).collect();
        let level = (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64).sqrt();
        let want = (rows.iter().map(|r| r[0][0] * r[0][0]).sum::<f64>() / 2000.0).sqrt();
        assert!((level / want - 1.0).abs() < 0.15, "{level} {want}");
        let lag1 =
            x.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / x.iter().map(|v| v * v).sum::<f64>();
        assert!(lag1 > 0.65, "{lag1}");
        assert!(d.iter().all(|s| (s[0][0] - 2.0 * s[1][0]).abs() < 1e-18));
    }

    /// Fewer than 20 samples where every marker has a residual: white noise at the given level
    /// (a sample with a marker missing does not count), said so in words.
    #[test]
    fn too_few_whole_samples_fall_back_to_white_noise() {
        let names = vec!["M1".to_string(), "M2".to_string()];
        let samples = (0..30).map(|k| {
            let m2 = (k % 2 == 0).then_some([1e-4, 0.0]);
            vec![Some([1e-4, -1e-4]), m2]
        });
        let noise = MarkerNoise::of_samples(&names, samples, 2e-5);
        assert!(
            matches!(noise, MarkerNoise::White(s) if s == 2e-5),
            "{noise:?}"
        );
        assert_eq!(noise.describe(), "white, 0.0200 mm on x and y");
        let d = noise.draw(&names, 5, &mut Gauss::new(3));
        assert_eq!((d.len(), d[0].len()), (5, 2));
    }
}
