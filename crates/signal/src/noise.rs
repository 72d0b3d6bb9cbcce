//! What real signals' errors are, tested from the data: quantization (an encoder's counts, a
//! centroid locked to pixels, a table written with few decimals) and whiteness (errors that are
//! correlated from one sample to the next: a staircase, vibration, a rolling shutter).
//!
//! - [`lattice`]: whether a series' values lie on a lattice v0 + k step, and its step. Uniform
//!   quantization by a step q adds an error of variance q^2 / 12 (Widrow & Kollar, Quantization
//!   Noise, 2008, ch. 4), the floor below which no estimate of the measurement noise may go.
//! - [`ljung_box`]: the Ljung-Box portmanteau test of a residual sequence's whiteness (Ljung &
//!   Box, Biometrika 65, 1978): Q = n (n + 2) sum_k r_k^2 / (n - k) over the first lags, against
//!   chi-square with as many degrees of freedom.

/// A series' values on a lattice v0 + k step.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Lattice {
    /// The lattice's step, in the series' unit.
    pub step: f64,
    /// Distinct levels the series visits.
    pub levels: usize,
    /// Share of the non-zero changes from one sample to the next that are whole multiples of
    /// the step (within [`LATTICE_TOLERANCE`] of it).
    pub share: f64,
}

impl Lattice {
    /// The quantization error's standard deviation, step / sqrt(12), in the series' unit.
    pub fn sigma(&self) -> f64 {
        self.step / 12f64.sqrt()
    }
}

/// A change is a whole multiple of the step when within this fraction of the step of one.
pub const LATTICE_TOLERANCE: f64 = 0.05;
/// The share of non-zero changes that must be whole multiples for a lattice to be declared
/// (white noise gives 2 x [`LATTICE_TOLERANCE`], 10 %).
pub const LATTICE_SHARE: f64 = 0.95;
/// The fewest non-zero changes a lattice is judged on.
pub const LATTICE_MIN_CHANGES: usize = 10;

/// The lattice the finite values of `values` lie on, if they do: the step is the least non-zero
/// change from one sample to the next (then, when that fails, the change at the second
/// percentile, which a few changes off the lattice do not move), declared when at least
/// [`LATTICE_SHARE`] of the non-zero changes are whole multiples of it. Changes below 1e-9 of
/// the series' range are taken as none (rounding). None for a series that moves fewer than
/// [`LATTICE_MIN_CHANGES`] times, or whose values lie on no lattice.
pub fn lattice(values: &[f64]) -> Option<Lattice> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let range = hi - lo;
    if range.is_nan() || range <= 0.0 {
        return None;
    }
    let mut changes: Vec<f64> = finite
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .filter(|d| *d > 1e-9 * range)
        .collect();
    if changes.len() < LATTICE_MIN_CHANGES {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let candidates = [changes[0], changes[changes.len() / 50]];
    candidates.into_iter().find_map(|step| {
        let whole = |d: f64| {
            let k = d / step;
            (k - k.round()).abs() <= LATTICE_TOLERANCE
        };
        let share = changes.iter().filter(|d| whole(**d)).count() as f64 / changes.len() as f64;
        (share >= LATTICE_SHARE).then(|| {
            let mut levels: Vec<i64> = finite
                .iter()
                .map(|v| ((v - lo) / step).round() as i64)
                .collect();
            levels.sort_unstable();
            levels.dedup();
            Lattice {
                step,
                levels: levels.len(),
                share,
            }
        })
    })
}

/// The Ljung-Box test of a sequence's whiteness.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Whiteness {
    /// Samples tested.
    pub samples: usize,
    /// The autocorrelation at lag 1.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub lag1: f64,
    /// Lags summed in the statistic.
    pub lags: usize,
    /// The statistic Q.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub q: f64,
    /// P(chi-square(lags) > Q): the chance of a Q this large from white errors.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub p_value: f64,
}

/// The Ljung-Box test of the sequences `series` (each one coordinate's residuals over time,
/// mean removed per sequence) pooled: the autocorrelations r_k = sum_i e_i e_(i+k) / sum_i e_i^2
/// summed over the sequences, Q = n (n + 2) sum_(k=1..lags) r_k^2 / (n - k) with n the samples of
/// one sequence (the mean length), against chi-square with `lags` degrees of freedom times the
/// number of sequences. None with fewer than 2 `lags` + 2 samples in every sequence.
pub fn ljung_box(series: &[Vec<f64>], lags: usize) -> Option<Whiteness> {
    let used: Vec<&Vec<f64>> = series.iter().filter(|s| s.len() > 2 * lags + 1).collect();
    if used.is_empty() || lags == 0 {
        return None;
    }
    let mut q = 0.0;
    let mut lag1 = 0.0;
    let mut samples = 0;
    for s in &used {
        let n = s.len() as f64;
        let mean = s.iter().sum::<f64>() / n;
        let e: Vec<f64> = s.iter().map(|v| v - mean).collect();
        let c0: f64 = e.iter().map(|v| v * v).sum();
        if c0.is_nan() || c0 <= 0.0 {
            return None;
        }
        let r = |k: usize| e.iter().zip(&e[k..]).map(|(a, b)| a * b).sum::<f64>() / c0;
        lag1 += r(1) / used.len() as f64;
        q += n
            * (n + 2.0)
            * (1..=lags)
                .map(|k| r(k).powi(2) / (n - k as f64))
                .sum::<f64>();
        samples += s.len();
    }
    let dof = (lags * used.len()) as f64;
    Some(Whiteness {
        samples,
        lag1,
        lags,
        q,
        p_value: gamma_q(dof / 2.0, q / 2.0),
    })
}

/// The regularized upper incomplete gamma function Q(a, x) = Gamma(a, x) / Gamma(a): by its
/// series below x = a + 1, by Lentz's continued fraction above (Press et al., Numerical Recipes,
/// 3rd ed., 6.2), to 1e-15 relative.
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let log_prefix = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        (1.0 - sum * log_prefix.exp()).max(0.0)
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < tiny { tiny } else { d };
            c = b + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (log_prefix.exp() * h).clamp(0.0, 1.0)
    }
}

/// ln Gamma(x) for x > 0 by Lanczos' approximation (g = 7, nine coefficients; 1e-15 relative).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |s, (i, g)| s + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_contracts::gauss::Gauss;

    /// An encoder's angle (steps of 2.9 mrad, a swing crossing thousands of counts and resting
    /// on one) is found with its step; the same swing with white noise, and a smooth curve
    /// written to every digit, are not lattices.
    #[test]
    fn an_encoders_counts_are_a_lattice_and_noise_is_not() {
        let step = 0.002914473182258348;
        let q: Vec<f64> = (0..3000)
            .map(|i| {
                let t = i as f64 * 0.002;
                let swing = if t < 1.0 {
                    0.0
                } else {
                    3.0 * (2.0 * (t - 1.0)).sin()
                };
                (swing / step).round() * step - 0.001457
            })
            .collect();
        let l = lattice(&q).expect("the encoder's lattice");
        assert!((l.step / step - 1.0).abs() < 1e-9, "{l:?}");
        assert!(l.share == 1.0 && l.levels > 1000, "{l:?}");
        assert!((l.sigma() - step / 12f64.sqrt()).abs() < 1e-15);
        let mut g = Gauss::new(7);
        let noisy: Vec<f64> = q.iter().map(|v| v + 1e-4 * g.next()).collect();
        assert_eq!(lattice(&noisy), None);
        let smooth: Vec<f64> = (0..3000).map(|i| (i as f64 * 0.01).sin()).collect();
        assert_eq!(lattice(&smooth), None);
        // A track written to millimetres (metres with 3 decimals) is a 1 mm lattice, and one
        // sample off it in a hundred does not hide it.
        let mm: Vec<f64> = (0..1000)
            .map(|i| {
                let v = ((0.2 * (i as f64 * 0.02).sin()) * 1e3).round() / 1e3;
                if i % 100 == 7 {
                    v + 3.3e-4
                } else {
                    v
                }
            })
            .collect();
        let l = lattice(&mm).expect("millimetres");
        assert!((l.step - 1e-3).abs() < 1e-12 && l.share > 0.95, "{l:?}");
        // A series at rest or moving fewer than ten times is not judged.
        assert_eq!(lattice(&[1.0; 100]), None);
    }

    /// Q(a, x) against scipy.special.gammaincc (scipy 1.17.1), on both sides of x = a + 1.
    #[test]
    fn the_upper_incomplete_gamma_matches_scipy() {
        for (a, x, want) in [
            (0.5, 0.3, 0.4385780260809997),
            (10.0, 5.0, 0.9681719426937951),
            (10.0, 20.0, 0.0049954123083075785),
            (30.0, 45.0, 0.007337199297796568),
            (1.0, 2.0, (-2.0f64).exp()),
        ] {
            let got = gamma_q(a, x);
            assert!(
                (got - want).abs() < 1e-12 * want.max(1e-3),
                "Q({a}, {x}) = {got} against {want}"
            );
        }
        assert!((ln_gamma(10.0) - 362880f64.ln()).abs() < 1e-13);
    }

    /// White noise passes the Ljung-Box test; a random walk's steps summed (strongly correlated)
    /// and a staircase's error fail it.
    #[test]
    fn ljung_box_tells_white_from_correlated() {
        let mut g = Gauss::new(11);
        let white: Vec<f64> = (0..3000).map(|_| g.next()).collect();
        let w = ljung_box(std::slice::from_ref(&white), 20).unwrap();
        assert!(w.p_value > 0.01 && w.lag1.abs() < 0.06, "{w:?}");
        let mut acc = 0.0;
        let walk: Vec<f64> = white
            .iter()
            .map(|v| {
                acc = 0.9 * acc + v;
                acc
            })
            .collect();
        let c = ljung_box(&[walk], 20).unwrap();
        assert!(c.p_value < 1e-10 && c.lag1 > 0.8, "{c:?}");
        let stair: Vec<f64> = (0..3000)
            .map(|i| {
                let v = 0.5 * (i as f64 * 0.003).sin();
                (v / 0.01).round() * 0.01 - v
            })
            .collect();
        let s = ljung_box(&[stair], 20).unwrap();
        assert!(s.p_value < 1e-10, "{s:?}");
        assert_eq!(ljung_box(&[vec![1.0; 10]], 20), None);
    }
}
