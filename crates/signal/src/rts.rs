//! The Kalman/Rauch-Tung-Striebel smoother of one sampled coordinate, its parameters from the
//! data: the automatic method of the signal stage.
//!
//! Model: x(t) = h(t) + r(t) + noise.
//! - h(t) = c_0 + c_1 t + sum_{k=1..K} (a_k cos 2 pi k f0 t + b_k sin 2 pi k f0 t), the periodic
//!   part of a motion driven at a steady speed (the crank's turn): Bayesian harmonic regression
//!   over every present sample ([`PeriodicFit`]: a prior whose variance decays as a power of
//!   the harmonic number, its scale, decay and the noise by marginal likelihood), every harmonic
//!   up to 0.45 of the sample rate kept and shrunk as the data say; none when the motion is not
//!   periodic.
//! - r(t): the rest, the coordinate and its first three derivatives as the state of a white-snap
//!   model of density s ([`crate::kalman`]), smoothed by Kalman/RTS.
//! - noise: white, standard deviation sigma.
//!
//! Everything is chosen from the data: sigma and s by maximum likelihood of the innovations
//! (coordinate ascent on logarithmic grids, from sigma_0, the noise the third differences show,
//! and the density that balances it at one sample step); f0 by [`fundamental`] (over all the
//! markers' coordinates at once in `flexbench smooth`); the periodic part kept only if the
//! whole model's penalised likelihood (log-likelihood of the rest - (edf + 3)/2 ln N, edf the
//! periodic part's effective number of parameters) beats the plain smoother's. The periodic
//! part has no edge: at the ends of a recording it carries the acceleration where a one-sided
//! smoother cannot (the study in docs/signal-study.md: end zones within 1.2 times the interior).
//!
//! Gaps split the smoother's series: no smoothing across a gap, no sample invented in it,
//! segments shorter than [`MIN_SEGMENT`] rejected; a dropped frame (a step up to
//! [`MAX_STEP_RATIO`] median steps) does not split, since the model is in continuous time.
//! Each output sample carries the standard deviations of value, rate and acceleration: the
//! periodic part's posterior variance plus the smoother's (the two taken independent).

use nalgebra::{DMatrix, DVector, Matrix4, Vector4};

use crate::{Derivatives, Differentiator, Provenance, SignalError};

mod scalar;
use scalar::*;
mod harmonic;
pub use harmonic::*;

/// Fewest samples of a segment the smoother estimates (shorter ones are rejected).
pub const MIN_SEGMENT: usize = 8;

/// Longest time step, in median steps, bridged within a segment (a dropped frame); a longer one
/// splits the series.
pub const MAX_STEP_RATIO: f64 = 2.5;

/// Relative change of the predicted covariance below which a likelihood pass takes the filter
/// as steady (its effect on the log-likelihood is far below the search's resolution).
const STEADY_TOLERANCE: f64 = 1e-10;

/// Relative difference under which two time steps count as equal (timestamps k / rate differ in
/// their last bits; the transition is reused rather than rebuilt).
const STEP_TOLERANCE: f64 = 1e-9;

/// Most harmonics of the periodic part.
pub const MAX_HARMONICS: usize = 40;

/// The smoother's settings: each None is chosen from the data.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RtsSmoother {
    /// Measurement noise, standard deviation in the input's unit.
    pub noise: Option<f64>,
    /// Density of the white snap, input unit per s^3.5.
    pub density: Option<f64>,
    /// Fundamental frequency of the periodic part, Hz (None: [`fundamental`] of the coordinate).
    pub frequency: Option<f64>,
    /// Most harmonics of the periodic part (None: up to 0.45 of the sample rate, at most
    /// [`MAX_HARMONICS`]; Some(0): no periodic part).
    pub harmonics: Option<usize>,
}

/// What the smoother chose for one coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chosen {
    /// Measurement noise, input unit.
    pub noise: f64,
    /// Density of the white snap, input unit per s^3.5.
    pub density: f64,
    /// Log-likelihood of the innovations at the choice.
    pub log_likelihood: f64,
    /// Fundamental frequency of the periodic part, Hz (None when there is none).
    pub frequency: Option<f64>,
    /// Harmonics of the periodic part (0: none).
    pub harmonics: usize,
    /// The periodic part's prior (lambda, beta) and effective number of parameters.
    pub prior: Option<(f64, f64, f64)>,
}

/// Runs of present samples: a gap (absent samples) or a time step longer than
/// [`MAX_STEP_RATIO`] median steps ends a run.
fn runs(t: &[f64], present: &[bool]) -> Vec<(usize, usize)> {
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let median = steps.get(steps.len() / 2).copied().unwrap_or(0.0);
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut last_present: Option<usize> = None;
    for k in 0..t.len() {
        if !present[k] {
            if let Some(s) = start.take() {
                out.push((s, k));
            }
            continue;
        }
        if let (Some(s), Some(l)) = (start, last_present) {
            if t[k] - t[l] > MAX_STEP_RATIO * median {
                out.push((s, k));
                start = None;
            }
        }
        if start.is_none() {
            start = Some(k);
        }
        last_present = Some(k);
    }
    if let Some(s) = start {
        out.push((s, t.len()));
    }
    out
}

impl RtsSmoother {
    /// The smoother with every parameter chosen from the data.
    pub fn automatic() -> Self {
        RtsSmoother::default()
    }

    /// The same with the periodic part's fundamental frequency given (Hz), e.g. found over all
    /// the markers at once by [`fundamental`].
    pub fn with_frequency(mut self, f0: Option<f64>) -> Self {
        self.frequency = f0;
        self
    }

    /// Maximum-likelihood noise and density for the residual `z` over the segments: (sigma, s,
    /// log-likelihood).
    fn ml(
        &self,
        t: &[f64],
        z: &[f64],
        segs: &[(usize, usize)],
        tau: f64,
    ) -> Option<(f64, f64, f64)> {
        let ll = |sigma: f64, s: f64| -> Option<f64> {
            let mut total = 0.0;
            for &(a, b) in segs {
                total += scalar_rts(&t[a..b], &z[a..b], sigma, s, tau, false)?.0;
            }
            Some(total)
        };
        // Starting noise: third differences of white noise have variance 20 sigma^2.
        let mut d3: Vec<f64> = segs
            .iter()
            .flat_map(|&(a, b)| {
                (a + 3..b).map(move |k| (z[k] - 3.0 * z[k - 1] + 3.0 * z[k - 2] - z[k - 3]).abs())
            })
            .collect();
        d3.sort_by(|x, y| x.total_cmp(y));
        let mad = d3.get(d3.len() / 2).copied().unwrap_or(0.0) / 0.6745;
        let span: f64 = segs
            .iter()
            .flat_map(|&(a, b)| z[a..b].iter())
            .map(|v| v.abs())
            .fold(0.0, f64::max)
            .max(1e-12);
        let sigma0 = (mad / 20f64.sqrt()).max(1e-9 * span);
        let s0 = sigma0 / tau.powf(3.5);
        let mut best: Option<(f64, f64, f64)> = None;
        let consider = |sigma: f64, s: f64, best: &mut Option<(f64, f64, f64)>| {
            if let Some(l) = ll(sigma, s) {
                if l.is_finite() && best.is_none_or(|b| l > b.2) {
                    *best = Some((sigma, s, l));
                }
            }
        };
        let sig_start = self.noise.unwrap_or(sigma0);
        match self.density {
            Some(s) => consider(sig_start, s, &mut best),
            None => {
                for e in -8..=8 {
                    consider(sig_start, s0 * 10f64.powf(0.5 * e as f64), &mut best);
                }
            }
        }
        for _ in 0..3 {
            let (sb, db, _) = best?;
            if self.noise.is_none() {
                for e in -6..=6 {
                    consider(sb * 10f64.powf(0.05 * e as f64), db, &mut best);
                }
            }
            if self.density.is_none() {
                let (sb, db, _) = best?;
                for e in -4..=4 {
                    consider(sb, db * 10f64.powf(0.125 * e as f64), &mut best);
                }
            }
        }
        best
    }

    /// Smooth one coordinate; returns its derivatives with their standard deviations and the
    /// parameters used.
    pub fn smooth(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<(Derivatives, Option<Chosen>), SignalError> {
        crate::check_input(name, t, values, present)?;
        let n = t.len();
        let mut out = Derivatives {
            sigma: vec![[f64::NAN; 3]; n],
            ..Derivatives::rejected(n)
        };
        let segs: Vec<(usize, usize)> = runs(t, present)
            .into_iter()
            .filter(|(a, b)| b - a >= MIN_SEGMENT)
            .collect();
        if segs.is_empty() {
            return Ok((out, None));
        }
        let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        steps.sort_by(|x, y| x.total_cmp(y));
        let tau = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
        let failed = || SignalError::BadInput {
            name: name.into(),
            reason: "the smoother failed for every noise and density tried".into(),
        };
        // The plain smoother.
        let plain = self.ml(t, values, &segs, tau).ok_or_else(failed)?;
        let periodic = self.periodic_part(t, values, present, &segs, tau, plain);
        let (sigma, s, l) = periodic.as_ref().map_or(plain, |p| p.1);
        let parts: Vec<([f64; 3], [f64; 3])> = match &periodic {
            None => vec![([0.0; 3], [0.0; 3]); n],
            Some(p) => p.0.evaluate(t),
        };
        for &(a, b) in &segs {
            let z: Vec<f64> = (a..b).map(|j| values[j] - parts[j].0[0]).collect();
            let (_, st) = scalar_rts(&t[a..b], &z, sigma, s, tau, true).ok_or_else(|| {
                SignalError::BadInput {
                    name: name.into(),
                    reason: "the smoother lost positive definiteness".into(),
                }
            })?;
            add_segment(&mut out, a, &st, &parts);
        }
        let (frequency, harmonics) = periodic
            .as_ref()
            .map_or((None, 0), |p| (Some(p.0.frequency), p.0.harmonics));
        let prior = periodic
            .as_ref()
            .map(|p| (p.0.lambda, p.0.beta, p.0.effective_parameters));
        Ok((
            out,
            Some(Chosen {
                noise: sigma,
                density: s,
                log_likelihood: l,
                frequency,
                harmonics,
                prior,
            }),
        ))
    }

    /// The periodic part (Bayesian harmonic regression) with the smoother's (noise, density,
    /// log-likelihood) on the rest, kept if the whole model's penalised likelihood beats the
    /// plain smoother's (`plain`) or the harmonics were given; None without a fundamental or
    /// two of its periods.
    fn periodic_part(
        &self,
        t: &[f64],
        values: &[f64],
        present: &[bool],
        segs: &[(usize, usize)],
        tau: f64,
        plain: (f64, f64, f64),
    ) -> Option<(PeriodicFit, (f64, f64, f64))> {
        let idx: Vec<usize> = segs.iter().flat_map(|&(a, b)| a..b).collect();
        let nobs = idx.len() as f64;
        let f0 = if self.harmonics == Some(0) {
            None
        } else {
            self.frequency
                .or_else(|| fundamental(t, &[(values, present)]))
        }?;
        let t_span = t[*idx.last().unwrap_or(&0)] - t[idx[0]];
        let k_auto = MAX_HARMONICS
            .min((0.45 / (tau * f0)).floor() as usize)
            .min(((nobs / 2.0 - 2.0) / 2.0).max(0.0) as usize);
        let k = self.harmonics.map_or(k_auto, |k| k.min(k_auto));
        if t_span * f0 < 2.0 {
            return None;
        }
        let fit = PeriodicFit::fit(t, values, &idx, f0, k, plain.0)?;
        let resid: Vec<f64> = (0..t.len())
            .map(|j| {
                if present[j] {
                    values[j] - fit.value_at(t[j])
                } else {
                    0.0
                }
            })
            .collect();
        let ml = self.ml(t, &resid, segs, tau)?;
        let penalised = ml.2 - 0.5 * (fit.effective_parameters + 3.0) * nobs.ln();
        (penalised > plain.2 || self.harmonics.is_some()).then_some((fit, ml))
    }
}

/// One run's smoothed states (from sample `a`) into `out`, with the periodic part's value and
/// variance (`parts`) added back; a sample whose acceleration sigma exceeds twice the run's
/// median is marked as at an edge.
fn add_segment(
    out: &mut Derivatives,
    a: usize,
    st: &[ScaledState],
    parts: &[([f64; 3], [f64; 3])],
) {
    let mut acc_sd: Vec<f64> = st.iter().map(|(_, p)| p[(2, 2)].max(0.0).sqrt()).collect();
    acc_sd.sort_by(|x, y| x.total_cmp(y));
    let median = acc_sd[acc_sd.len() / 2];
    for (i, (x, p)) in st.iter().enumerate() {
        let j = a + i;
        let (hv, hvar) = parts[j];
        out.value[j] = x[0] + hv[0];
        out.rate[j] = x[1] + hv[1];
        out.accel[j] = x[2] + hv[2];
        let rs = [p[(0, 0)], p[(1, 1)], p[(2, 2)]];
        out.sigma[j] = [0, 1, 2].map(|i| (rs[i].max(0.0) + hvar[i]).sqrt());
        out.provenance[j] = if rs[2].max(0.0).sqrt() > 2.0 * median {
            Provenance::Edge
        } else {
            Provenance::Measured
        };
    }
}

impl Differentiator for RtsSmoother {
    fn differentiate(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<Derivatives, SignalError> {
        self.smooth(name, t, values, present).map(|r| r.0)
    }

    fn describe(&self) -> String {
        let part = |v: Option<f64>, what: &str| {
            v.map_or(format!("{what} by maximum likelihood"), |x| {
                format!("{what} {x}")
            })
        };
        let periodic = match (self.harmonics, self.frequency) {
            (Some(0), _) => "no periodic part".to_string(),
            (k, f) => format!(
                "periodic part with {} at {}",
                k.map_or("harmonics by BIC".to_string(), |k| format!("{k} harmonics")),
                f.map_or(
                    "the fundamental found in the data".to_string(),
                    |f| format!("{f} Hz")
                )
            ),
        };
        format!(
            "Kalman/RTS smoother, white snap ({}, {}), {periodic}",
            part(self.noise, "noise"),
            part(self.density, "density")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed-size recursion equals the general one (crate::kalman) to rounding.
    #[test]
    fn scalar_recursion_matches_the_general_one() {
        let t: Vec<f64> = (0..200)
            .map(|k| k as f64 / 60.0 + if k > 100 { 1.0 / 60.0 } else { 0.0 })
            .collect();
        let z: Vec<f64> = t
            .iter()
            .enumerate()
            .map(|(k, &x)| 0.1 * (7.0 * x).sin() + 1e-4 * ((k * 7919 % 13) as f64 - 6.0))
            .collect();
        let (sigma, s) = (1e-4, 300.0);
        let (ll, st) = scalar_rts(&t, &z, sigma, s, 1.0 / 60.0, true).unwrap();
        let h = DMatrix::from_fn(1, 4, |_, j| if j == 0 { 1.0 } else { 0.0 });
        let obs: Vec<Option<crate::kalman::LinearObs>> = z
            .iter()
            .map(|&v| {
                Some(crate::kalman::LinearObs {
                    h: h.clone(),
                    z: DVector::from_element(1, v),
                    r: DMatrix::from_element(1, 1, sigma * sigma),
                })
            })
            .collect();
        let (lo, hi) = z
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        let range = hi - lo;
        let tau: f64 = 1.0 / 60.0;
        let mut p0 = DMatrix::zeros(4, 4);
        p0[(0, 0)] = 4.0 * sigma * sigma + range * range;
        for o in 1..4 {
            p0[(o, o)] = 1e2 * range * range / tau.powi(2 * o as i32);
        }
        let mut x0 = DVector::zeros(4);
        x0[0] = z[0];
        let obs = crate::kalman::Observations::new(&obs);
        let est = crate::kalman::kalman_rts(&t, &obs, 1, &[s], (x0, p0), true).unwrap();
        // a sum of 200 terms of order 10: agreement to 1e-6 absolute is rounding
        assert!((ll - est.loglik).abs() < 1e-6, "{ll} {}", est.loglik);
        // Means within 1e-4 of their standard deviation, variances within 1e-4 relative (the
        // diffuse prior's cancellation costs the two orderings of the arithmetic a few digits).
        for (k, (a, b)) in st.iter().zip(&est.states).enumerate() {
            for i in 0..4 {
                let sd = b.1[(i, i)].sqrt();
                assert!(
                    (a.0[i] - b.0[i]).abs() <= 1e-4 * sd,
                    "sample {k} state {i}: {} {} (sd {sd})",
                    a.0[i],
                    b.0[i]
                );
                assert!(
                    (a.1[(i, i)] - b.1[(i, i)]).abs() <= 1e-4 * b.1[(i, i)].abs(),
                    "sample {k} variance {i}: {} {}",
                    a.1[(i, i)],
                    b.1[(i, i)]
                );
            }
        }
    }

    /// A dropped frame does not split a run; an absent sample or a long hole does.
    #[test]
    fn runs_bridge_a_dropped_frame_only() {
        let mut t: Vec<f64> = (0..40).map(|k| k as f64).collect();
        t[20..].iter_mut().for_each(|x| *x += 1.0); // one frame dropped before sample 20
        t[30..].iter_mut().for_each(|x| *x += 5.0); // a hole before sample 30
        let mut present = vec![true; 40];
        present[10] = false;
        assert_eq!(runs(&t, &present), vec![(0, 10), (11, 30), (30, 40)]);
    }

    /// The fundamental of a periodic motion is found to 1e-4 relative; a chirp (no period) gives
    /// none, and the smoother then keeps no periodic part.
    #[test]
    fn fundamental_found_or_refused() {
        let t: Vec<f64> = (0..720).map(|k| k as f64 / 240.0).collect();
        let present = vec![true; t.len()];
        let w = std::f64::consts::TAU * 2.33;
        let x: Vec<f64> = t
            .iter()
            .map(|&s| (w * s).sin() + 0.3 * (2.0 * w * s + 1.0).cos())
            .collect();
        let y: Vec<f64> = t.iter().map(|&s| 0.5 * (w * s + 0.4).cos()).collect();
        let f = fundamental(&t, &[(&x, &present), (&y, &present)]).unwrap();
        assert!((f / 2.33 - 1.0).abs() < 1e-4, "{f}");
        let chirp: Vec<f64> = t
            .iter()
            .map(|&s| (std::f64::consts::TAU * (0.5 * s + 0.8 * s * s)).sin())
            .collect();
        assert_eq!(fundamental(&t, &[(&chirp, &present)]), None);
        let (_, chosen) = RtsSmoother::automatic()
            .smooth("chirp", &t, &chirp, &present)
            .unwrap();
        assert_eq!(chosen.unwrap().harmonics, 0);
    }
}
