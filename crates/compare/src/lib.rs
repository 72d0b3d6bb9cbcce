//! Measured against simulated, aligned by the crank angle (issue 7's comparison).
//!
//! A quantity of the bench (a marker's acceleration component, a liaison force) is periodic in
//! the crank angle phi1 once the motion has settled. The simulated one is known over a turn (or
//! several); the measured one at the recording's samples. Both are described as functions of the
//! crank angle modulo a turn:
//!
//! - [`PeriodicSeries`]: a quantity's least-squares Fourier series in the crank angle (its
//!   harmonic content), evaluated anywhere on the turn;
//! - [`compare`]: the measured samples against the simulated series at the same crank angles:
//!   NRMSE (RMS of the difference over the simulated range), each one's peak and the crank angle
//!   where it is reached, the phase lag (the crank-angle shift of the simulated series that best
//!   fits the measured samples), and both harmonic contents;
//! - [`measured`]: a computed torque or force against one the rig measured, in time on their
//!   own clocks (RMS, mean, peaks, lag, the share the friction model explains).

#![warn(missing_docs)]

pub mod measured;

use nalgebra::{DMatrix, DVector};
use std::f64::consts::TAU;

/// What can go wrong in a comparison.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A series on its own clock that cannot be compared (times, values).
    #[error("{what}: the {side} series: {reason}")]
    Series {
        /// The quantity.
        what: String,
        /// Which series (computed, measured).
        side: String,
        /// What is wrong and the fix.
        reason: String,
    },
    /// A measured series whose times do not overlap the computed one's.
    #[error("{what}: the measured times ({:.4} to {:.4} s) do not overlap the computed ones ({:.4} to {:.4} s) by three samples; both must be on one clock: shift the measured times by the loggers' offset", measured.0, measured.1, computed.0, computed.1)]
    NoOverlap {
        /// The quantity.
        what: String,
        /// The computed series' first and last times, s.
        computed: (f64, f64),
        /// The measured series' first and last times, s.
        measured: (f64, f64),
    },
    /// Too few samples, or samples that do not cover the turn, for the harmonics asked.
    #[error("{what}: {samples} samples over {turns:.2} turns cannot determine {harmonics} harmonics; record at least one whole turn, or ask for fewer harmonics")]
    Underdetermined {
        /// The quantity.
        what: String,
        /// Samples given.
        samples: usize,
        /// Turns of the crank they cover.
        turns: f64,
        /// Harmonics asked.
        harmonics: usize,
    },
    /// A value or a crank angle that is not finite.
    #[error(
        "{what}: sample {index} is not finite (crank angle {angle}, value {value}); drop it first"
    )]
    NotFinite {
        /// The quantity.
        what: String,
        /// Index of the sample.
        index: usize,
        /// Its crank angle, rad.
        angle: f64,
        /// Its value.
        value: f64,
    },
}

/// A quantity's Fourier series in the crank angle: value(phi) = a_0 + sum_k a_k cos(k phi) +
/// b_k sin(k phi), phi in rad (any turn: the series is 2 pi periodic), in the quantity's unit.
#[derive(Debug, Clone, PartialEq)]
pub struct PeriodicSeries {
    /// Mean a_0.
    pub mean: f64,
    /// Cosine coefficients a_1 .. a_K.
    pub cos: Vec<f64>,
    /// Sine coefficients b_1 .. b_K.
    pub sin: Vec<f64>,
    /// RMS of the samples' residual about the series (the part no harmonic up to K explains).
    pub residual_rms: f64,
}

/// The least-squares problem of a Fourier series in the crank angle over given samples: the
/// basis (1, cos k phi, sin k phi) at each sample and its SVD, made once and solved for every
/// quantity sampled at the same crank angles (the same numbers as [`PeriodicSeries::fit`] on
/// each: the same matrix, factored the same way).
#[derive(Debug, Clone)]
pub struct PeriodicBasis {
    harmonics: usize,
    what: String,
    a: DMatrix<f64>,
    svd: nalgebra::SVD<f64, nalgebra::Dyn, nalgebra::Dyn>,
    turns: f64,
}

impl PeriodicBasis {
    /// The basis of `harmonics` harmonics at the crank angles `phi` (rad, finite), `what`
    /// naming them in errors. Needs the samples to spread over the whole turn: every one of
    /// 4 K + 4 equal sectors of the turn holds one, and at least twice as many samples as
    /// coefficients.
    pub fn new(what: &str, phi: &[f64], harmonics: usize) -> Result<Self, CompareError> {
        if let Some((i, p)) = phi.iter().enumerate().find(|(_, p)| !p.is_finite()) {
            return Err(CompareError::NotFinite {
                what: what.into(),
                index: i,
                angle: *p,
                value: f64::NAN,
            });
        }
        let n = phi.len();
        let p = 1 + 2 * harmonics;
        let turns = if n > 1 {
            (phi[n - 1] - phi[0]).abs() / TAU
        } else {
            0.0
        };
        let sectors = 4 * harmonics + 4;
        let mut seen = vec![false; sectors];
        for x in phi {
            seen[((x.rem_euclid(TAU) / TAU * sectors as f64) as usize).min(sectors - 1)] = true;
        }
        let under = CompareError::Underdetermined {
            what: what.into(),
            samples: n,
            turns,
            harmonics,
        };
        if n < 2 * p || seen.iter().any(|s| !s) {
            return Err(under);
        }
        let a = DMatrix::from_fn(n, p, |i, j| basis(phi[i], j));
        let svd = a.clone().svd(true, true);
        Ok(PeriodicBasis {
            harmonics,
            what: what.into(),
            a,
            svd,
            turns,
        })
    }

    /// The number of samples.
    pub fn samples(&self) -> usize {
        self.a.nrows()
    }

    /// The series through `value` (one per sample, finite), `what` naming the quantity in
    /// errors.
    pub fn fit(&self, what: &str, value: &[f64]) -> Result<PeriodicSeries, CompareError> {
        let n = self.samples();
        if let Some((i, v)) = value.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(CompareError::NotFinite {
                what: what.into(),
                index: i,
                angle: f64::NAN,
                value: *v,
            });
        }
        let under = || CompareError::Underdetermined {
            what: match what == self.what {
                true => what.into(),
                false => format!("{what} (at the crank angles of {})", self.what),
            },
            samples: n,
            turns: self.turns,
            harmonics: self.harmonics,
        };
        if value.len() != n {
            return Err(under());
        }
        let y = DVector::from_column_slice(value);
        let coef = self.svd.solve(&y, 1e-12).map_err(|_| under())?;
        let residual = &y - &self.a * &coef;
        let harmonics = self.harmonics;
        Ok(PeriodicSeries {
            mean: coef[0],
            cos: (0..harmonics).map(|k| coef[1 + 2 * k]).collect(),
            sin: (0..harmonics).map(|k| coef[2 + 2 * k]).collect(),
            residual_rms: (residual.norm_squared() / n as f64).sqrt(),
        })
    }
}

impl PeriodicSeries {
    /// The least-squares series with `harmonics` harmonics through the samples (crank angle
    /// phi in rad, value). Needs the samples to spread over the whole turn.
    pub fn fit(
        what: &str,
        phi: &[f64],
        value: &[f64],
        harmonics: usize,
    ) -> Result<Self, CompareError> {
        for (i, (p, v)) in phi.iter().zip(value).enumerate() {
            if !(p.is_finite() && v.is_finite()) {
                return Err(CompareError::NotFinite {
                    what: what.into(),
                    index: i,
                    angle: *p,
                    value: *v,
                });
            }
        }
        let n = phi.len().min(value.len());
        PeriodicBasis::new(what, &phi[..n], harmonics)?.fit(what, &value[..n])
    }

    /// The series' value at crank angle phi (rad).
    pub fn at(&self, phi: f64) -> f64 {
        self.mean
            + self
                .cos
                .iter()
                .zip(&self.sin)
                .enumerate()
                .map(|(k, (a, b))| {
                    let x = (k + 1) as f64 * phi;
                    a * x.cos() + b * x.sin()
                })
                .sum::<f64>()
    }

    /// Amplitude of harmonic k (1-based), sqrt(a_k^2 + b_k^2); the mean for k = 0.
    pub fn amplitude(&self, k: usize) -> f64 {
        if k == 0 {
            return self.mean.abs();
        }
        self.cos
            .get(k - 1)
            .zip(self.sin.get(k - 1))
            .map_or(0.0, |(a, b)| a.hypot(*b))
    }

    /// The series' peak (largest |value|) over the turn and the crank angle where it is
    /// reached (rad in [0, 2 pi)), on a grid of `grid` angles refined by a parabola.
    pub fn peak(&self, grid: usize) -> (f64, f64) {
        let g = grid.max(8);
        let vals: Vec<f64> = (0..g).map(|i| self.at(TAU * i as f64 / g as f64)).collect();
        let i = (0..g)
            .max_by(|&a, &b| vals[a].abs().total_cmp(&vals[b].abs()))
            .unwrap_or(0);
        let (l, c, r) = (
            vals[(i + g - 1) % g].abs(),
            vals[i].abs(),
            vals[(i + 1) % g].abs(),
        );
        let denom = l - 2.0 * c + r;
        let shift = if denom.abs() > 0.0 {
            (0.5 * (l - r) / denom).clamp(-0.5, 0.5)
        } else {
            0.0
        };
        let angle = (TAU * (i as f64 + shift) / g as f64).rem_euclid(TAU);
        (self.at(angle), angle)
    }

    /// The same series shifted by `lag` (rad): value(phi - lag).
    pub fn shifted(&self, lag: f64) -> Self {
        let mut out = self.clone();
        for k in 0..self.cos.len() {
            let x = (k + 1) as f64 * lag;
            let (a, b) = (self.cos[k], self.sin[k]);
            // a cos(k(phi - l)) + b sin(k(phi - l)) = (a cos kl - b sin kl) cos k phi + (a sin kl + b cos kl) sin k phi
            out.cos[k] = a * x.cos() - b * x.sin();
            out.sin[k] = a * x.sin() + b * x.cos();
        }
        out
    }
}

/// Column j of the Fourier basis at phi: 1, cos phi, sin phi, cos 2 phi, ...
fn basis(phi: f64, j: usize) -> f64 {
    if j == 0 {
        return 1.0;
    }
    let k = j.div_ceil(2) as f64;
    if j % 2 == 1 {
        (k * phi).cos()
    } else {
        (k * phi).sin()
    }
}

/// Measured samples against a simulated series.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// RMS of measured minus simulated at the measured crank angles, in the quantity's unit.
    pub rms_error: f64,
    /// rms_error over the simulated series' range (max - min over the turn).
    pub nrmse: f64,
    /// The simulated peak (largest |value|) and its crank angle (rad).
    pub simulated_peak: (f64, f64),
    /// The measured peak, from the measured samples' own series, and its crank angle (rad).
    pub measured_peak: (f64, f64),
    /// The crank-angle shift (rad, in (-pi, pi]) of the simulated series that best fits the
    /// measured samples: positive when the measurement lags the simulation.
    pub phase_lag: f64,
    /// The RMS error after that shift.
    pub rms_error_after_lag: f64,
    /// The measured samples' own series (harmonic content).
    pub measured: PeriodicSeries,
}

/// Compare measured samples (crank angle phi in rad, value) with the simulated series,
/// the measured harmonic content up to the simulated series' number of harmonics.
pub fn compare(
    what: &str,
    phi: &[f64],
    value: &[f64],
    simulated: &PeriodicSeries,
) -> Result<Comparison, CompareError> {
    let measured = PeriodicSeries::fit(what, phi, value, simulated.cos.len())?;
    Ok(compare_series(phi, value, measured, simulated))
}

/// [`compare`] with the measured samples' own series already fitted (`measured`, through a
/// [`PeriodicBasis`] shared by the quantities sampled at the same crank angles).
pub fn compare_series(
    phi: &[f64],
    value: &[f64],
    measured: PeriodicSeries,
    simulated: &PeriodicSeries,
) -> Comparison {
    let harmonics = simulated.cos.len();
    let n = phi.len().min(value.len());
    let rms = |s: &PeriodicSeries| {
        (phi[..n]
            .iter()
            .zip(&value[..n])
            .map(|(p, v)| (v - s.at(*p)).powi(2))
            .sum::<f64>()
            / n as f64)
            .sqrt()
    };
    let grid = 720;
    let sim_vals: Vec<f64> = (0..grid)
        .map(|i| simulated.at(TAU * i as f64 / grid as f64))
        .collect();
    let range = sim_vals.iter().fold(f64::NEG_INFINITY, |a, b| a.max(*b))
        - sim_vals.iter().fold(f64::INFINITY, |a, b| a.min(*b));
    let rms_error = rms(simulated);
    // The lag: the shift of the simulated series closest to the measured series (their
    // difference's L2 norm over the turn, from the coefficients), on a grid then golden section.
    let misfit = |lag: f64| -> f64 {
        let s = simulated.shifted(lag);
        (0..harmonics)
            .map(|k| (s.cos[k] - measured.cos[k]).powi(2) + (s.sin[k] - measured.sin[k]).powi(2))
            .sum()
    };
    let steps = 720;
    let mut best = (0..steps)
        .map(|i| -std::f64::consts::PI + TAU * i as f64 / steps as f64)
        .min_by(|a, b| misfit(*a).total_cmp(&misfit(*b)))
        .unwrap_or(0.0);
    let (mut lo, mut hi) = (best - TAU / steps as f64, best + TAU / steps as f64);
    let gr = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let (a, b) = (hi - gr * (hi - lo), lo + gr * (hi - lo));
        if misfit(a) < misfit(b) {
            hi = b
        } else {
            lo = a
        }
        best = 0.5 * (lo + hi);
    }
    let phase_lag = (best + std::f64::consts::PI).rem_euclid(TAU) - std::f64::consts::PI;
    Comparison {
        rms_error,
        nrmse: rms_error / range.max(f64::MIN_POSITIVE),
        simulated_peak: simulated.peak(grid),
        measured_peak: measured.peak(grid),
        phase_lag,
        rms_error_after_lag: rms(&simulated.shifted(phase_lag)),
        measured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(phi: f64) -> f64 {
        3.0 + 10.0 * phi.cos() - 4.0 * (2.0 * phi).sin() + 1.5 * (5.0 * phi).cos()
    }

    /// One basis fitted to several quantities sampled at the same crank angles gives each the
    /// series `PeriodicSeries::fit` gives it alone, to the bit; a value that is not finite, or
    /// of the wrong count, is refused by name.
    #[test]
    fn shared_basis_fits_as_each_alone() {
        let phi: Vec<f64> = (0..400)
            .map(|i| 0.2 + 0.037 * i as f64 + 0.01 * (i as f64).sin())
            .collect();
        let basis = PeriodicBasis::new("the samples", &phi, 9).unwrap();
        for shift in [0.0, 0.4, 2.0] {
            let v: Vec<f64> = phi
                .iter()
                .map(|p| signal(p + shift) * (1.0 + shift))
                .collect();
            let shared = basis.fit("q", &v).unwrap();
            let alone = PeriodicSeries::fit("q", &phi, &v, 9).unwrap();
            let bits = |s: &PeriodicSeries| -> Vec<u64> {
                std::iter::once(s.mean)
                    .chain(s.cos.iter().copied())
                    .chain(s.sin.iter().copied())
                    .chain([s.residual_rms])
                    .map(f64::to_bits)
                    .collect()
            };
            assert_eq!(bits(&shared), bits(&alone), "shift {shift}");
        }
        let mut v: Vec<f64> = phi.iter().map(|p| signal(*p)).collect();
        assert!(basis.fit("q", &v[1..]).is_err(), "one value short");
        v[7] = f64::NAN;
        let e = basis.fit("ax of M3", &v).unwrap_err().to_string();
        assert!(e.contains("ax of M3") && e.contains("sample 7"), "{e}");
    }

    /// The fit recovers known harmonics exactly (1e-12) from samples over 2.3 turns, unevenly
    /// spaced; the amplitude of harmonic 2 is 4, of 5 is 1.5, of the absent 3 zero.
    #[test]
    fn fit_recovers_harmonics() {
        let phi: Vec<f64> = (0..300)
            .map(|i| 0.1 + 2.3 * TAU * (i as f64 / 300.0).powf(1.1))
            .collect();
        let v: Vec<f64> = phi.iter().map(|p| signal(*p)).collect();
        let s = PeriodicSeries::fit("test", &phi, &v, 8).unwrap();
        assert!((s.mean - 3.0).abs() < 1e-12 && (s.amplitude(1) - 10.0).abs() < 1e-12);
        assert!(
            (s.amplitude(2) - 4.0).abs() < 1e-12
                && (s.amplitude(5) - 1.5).abs() < 1e-12
                && s.amplitude(3) < 1e-12
        );
        assert!(s.residual_rms < 1e-12);
        for p in [0.0, 1.0, 4.0] {
            assert!((s.at(p) - signal(p)).abs() < 1e-11);
        }
    }

    /// A measurement that lags the simulation by 0.3 rad, with noise of 0.1 (1 % of the range):
    /// the lag found within 2 mrad, the NRMSE after the lag at the noise's level, the peaks and
    /// their angles consistent (the simulated peak's angle plus the lag).
    #[test]
    fn lag_and_errors() {
        let sim_phi: Vec<f64> = (0..720).map(|i| TAU * i as f64 / 720.0).collect();
        let sim = PeriodicSeries::fit(
            "sim",
            &sim_phi,
            &sim_phi.iter().map(|p| signal(*p)).collect::<Vec<_>>(),
            8,
        )
        .unwrap();
        let mut gauss = flexbench_contracts::gauss::Gauss::new(12345);
        let mut noise = || gauss.next();
        let phi: Vec<f64> = (0..1000)
            .map(|i| 0.05 + 4.5 * TAU * i as f64 / 1000.0)
            .collect();
        let v: Vec<f64> = phi
            .iter()
            .map(|p| signal(p - 0.3) + 0.1 * noise())
            .collect();
        let c = compare("test", &phi, &v, &sim).unwrap();
        assert!((c.phase_lag - 0.3).abs() < 2e-3, "{}", c.phase_lag);
        assert!(
            (c.rms_error_after_lag - 0.1).abs() < 0.01,
            "{}",
            c.rms_error_after_lag
        );
        assert!(c.rms_error > 2.0, "{}", c.rms_error);
        assert!(
            ((c.measured_peak.1 - c.simulated_peak.1 - 0.3 + 1.0).rem_euclid(TAU) - 1.0).abs()
                < 0.01
        );
        assert!((c.measured_peak.0 - c.simulated_peak.0).abs() < 0.05);
    }

    /// Too few samples or a turn not covered, and NaN, are refused by name.
    #[test]
    fn bad_input() {
        let phi: Vec<f64> = (0..50).map(|i| 0.02 * i as f64).collect();
        let v = vec![1.0; 50];
        let e = PeriodicSeries::fit("B_x", &phi, &v, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("B_x") && e.contains("whole turn"), "{e}");
        let mut v2: Vec<f64> = (0..400).map(|i| i as f64).collect();
        v2[7] = f64::NAN;
        let p2: Vec<f64> = (0..400).map(|i| TAU * i as f64 / 100.0).collect();
        assert!(PeriodicSeries::fit("ax", &p2, &v2, 4)
            .unwrap_err()
            .to_string()
            .contains("sample 7"));
    }
}
