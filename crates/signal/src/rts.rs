//! The Kalman/Rauch-Tung-Striebel smoother of one sampled coordinate, its parameters from the
//! data: the automatic method of the signal stage.
//!
//! Model ([`crate::kalman`]): the coordinate and its first three derivatives, white snap of
//! density s, each sample measured with white noise of standard deviation sigma. Both are chosen
//! by maximum likelihood of the innovations over every segment of the coordinate at once
//! (coordinate ascent on logarithmic grids, from sigma_0, the noise the third differences show,
//! and the density that balances it at one sample step). Gaps split the series: no smoothing
//! across a gap, no sample invented in it, segments shorter than [`MIN_SEGMENT`] rejected. Each
//! output sample carries the smoother's standard deviations of value, rate and acceleration.

use nalgebra::{DMatrix, DVector};

use crate::kalman::{kalman_rts, LinearObs, ORDER};
use crate::savgol::segments;
use crate::{Derivatives, Differentiator, Provenance, SignalError};

/// Fewest samples of a segment the smoother estimates (shorter ones are rejected).
pub const MIN_SEGMENT: usize = 8;

/// The smoother's settings: each None is chosen by maximum likelihood.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RtsSmoother {
    /// Measurement noise, standard deviation in the input's unit.
    pub noise: Option<f64>,
    /// Density of the white snap, input unit per s^3.5.
    pub density: Option<f64>,
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
}

fn prior(first: f64, noise: f64, range: f64, duration: f64) -> (DVector<f64>, DMatrix<f64>) {
    let mut x = DVector::zeros(ORDER);
    x[0] = first;
    let mut p = DMatrix::zeros(ORDER, ORDER);
    let scale = range.max(10.0 * noise);
    let rate = 100.0 * scale / duration.max(1e-9);
    p[(0, 0)] = (10.0 * noise + scale).powi(2);
    for o in 1..ORDER {
        p[(o, o)] = (rate * (100.0 / duration.max(1e-9)).powi(o as i32 - 1)).powi(2);
    }
    (x, p)
}

impl RtsSmoother {
    /// The smoother with both parameters chosen from the data.
    pub fn automatic() -> Self {
        RtsSmoother::default()
    }

    /// Log-likelihood of the segments (and, when `smooth`, the smoothed states) at noise
    /// `sigma` and density `s`.
    fn run(t: &[f64], values: &[f64], segs: &[(usize, usize)], sigma: f64, s: f64, smooth: bool) -> Option<(f64, Vec<Vec<(DVector<f64>, DMatrix<f64>)>>)> {
        let mut total = 0.0;
        let mut states = Vec::new();
        let h = DMatrix::from_fn(1, ORDER, |_, j| if j == 0 { 1.0 } else { 0.0 });
        for &(a, b) in segs {
            let v = &values[a..b];
            let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, u), x| (l.min(*x), u.max(*x)));
            let obs: Vec<Option<LinearObs>> = v
                .iter()
                .map(|&z| Some(LinearObs { h: h.clone(), z: DVector::from_element(1, z), r: DMatrix::from_element(1, 1, sigma * sigma) }))
                .collect();
            let est = kalman_rts(&t[a..b], &obs, 1, &[s], prior(v[0], sigma, hi - lo, t[b - 1] - t[a]), smooth)?;
            total += est.loglik;
            if smooth {
                states.push(est.states);
            }
        }
        Some((total, states))
    }

    /// Smooth one coordinate; returns its derivatives with their standard deviations and the
    /// parameters used.
    pub fn smooth(&self, name: &str, t: &[f64], values: &[f64], present: &[bool]) -> Result<(Derivatives, Option<Chosen>), SignalError> {
        crate::check_input(name, t, values, present)?;
        let n = t.len();
        let mut out = Derivatives {
            value: vec![f64::NAN; n],
            rate: vec![f64::NAN; n],
            accel: vec![f64::NAN; n],
            provenance: vec![Provenance::Rejected; n],
            sigma: vec![[f64::NAN; 3]; n],
        };
        let segs: Vec<(usize, usize)> = segments(t, present).into_iter().filter(|(a, b)| b - a >= MIN_SEGMENT).collect();
        if segs.is_empty() {
            return Ok((out, None));
        }
        // Starting noise: third differences of white noise have variance 20 sigma^2.
        let mut d3: Vec<f64> = segs
            .iter()
            .flat_map(|&(a, b)| (a + 3..b).map(move |k| (values[k] - 3.0 * values[k - 1] + 3.0 * values[k - 2] - values[k - 3]).abs()))
            .collect();
        d3.sort_by(|x, y| x.total_cmp(y));
        let mad = d3.get(d3.len() / 2).copied().unwrap_or(0.0) / 0.6745;
        let span: f64 = (values.iter().zip(present).filter(|(_, p)| **p).map(|(v, _)| v.abs()).fold(0.0, f64::max)).max(1e-12);
        let sigma0 = (mad / 20f64.sqrt()).max(1e-9 * span);
        let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        steps.sort_by(|x, y| x.total_cmp(y));
        let h = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
        let s0 = sigma0 / h.powf(3.5);
        let ll = |sigma: f64, s: f64| Self::run(t, values, &segs, sigma, s, false).map(|r| r.0);
        let mut best: Option<(f64, f64, f64)> = None;
        let consider = |sigma: f64, s: f64, best: &mut Option<(f64, f64, f64)>| {
            if let Some(l) = ll(sigma, s) {
                if l.is_finite() && best.map_or(true, |b| l > b.2) {
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
            let Some((sb, db, _)) = best else { break };
            if self.noise.is_none() {
                for e in -6..=6 {
                    consider(sb * 10f64.powf(0.05 * e as f64), db, &mut best);
                }
            }
            if self.density.is_none() {
                let (sb, db, _) = best.unwrap_or((sb, db, 0.0));
                for e in -4..=4 {
                    consider(sb, db * 10f64.powf(0.125 * e as f64), &mut best);
                }
            }
        }
        let (sigma, s, l) = best.ok_or_else(|| SignalError::BadInput { name: name.into(), reason: "the smoother failed for every noise and density tried".into() })?;
        let (_, states) = Self::run(t, values, &segs, sigma, s, true)
            .ok_or_else(|| SignalError::BadInput { name: name.into(), reason: "the smoother lost positive definiteness".into() })?;
        for (&(a, b), st) in segs.iter().zip(&states) {
            let mut acc_sd: Vec<f64> = st.iter().map(|(_, p)| p[(2, 2)].max(0.0).sqrt()).collect();
            acc_sd.sort_by(|x, y| x.total_cmp(y));
            let median = acc_sd[acc_sd.len() / 2];
            for (i, (x, p)) in st.iter().enumerate() {
                let k = a + i;
                out.value[k] = x[0];
                out.rate[k] = x[1];
                out.accel[k] = x[2];
                let sd = [p[(0, 0)].max(0.0).sqrt(), p[(1, 1)].max(0.0).sqrt(), p[(2, 2)].max(0.0).sqrt()];
                out.sigma[k] = sd;
                out.provenance[k] = if sd[2] > 2.0 * median { Provenance::Edge } else { Provenance::Measured };
            }
            let _ = b;
        }
        Ok((out, Some(Chosen { noise: sigma, density: s, log_likelihood: l })))
    }
}

impl Differentiator for RtsSmoother {
    fn differentiate(&self, name: &str, t: &[f64], values: &[f64], present: &[bool]) -> Result<Derivatives, SignalError> {
        self.smooth(name, t, values, present).map(|r| r.0)
    }

    fn describe(&self) -> String {
        let part = |v: Option<f64>, what: &str| v.map_or(format!("{what} by maximum likelihood"), |x| format!("{what} {x}"));
        format!("Kalman/RTS smoother, white snap ({}, {})", part(self.noise, "noise"), part(self.density, "density"))
    }
}
