//! The zero-lag Butterworth low-pass filter of the biomechanics labs, with its cutoff chosen from
//! the data: Winter's residual analysis, or the Durbin-Watson criterion on the residuals.
//!
//! - **Design**: the digital Butterworth filter of order N (per pass) by the bilinear transform
//!   of the analog prototype with its cutoff pre-warped, as `scipy.signal.butter` designs it, held
//!   as second-order sections (a first-order one for odd N), each in transposed direct form II
//!   as `scipy.signal.sosfilt` runs it.
//! - **Zero lag**: run forward then backward (`filtfilt`), which squares the magnitude response.
//!   The single pass's cutoff is raised so that the double pass is -3 dB at the cutoff asked
//!   (Winter, *Biomechanics and Motor Control of Human Movement*, 4th ed., 2009, sec. 3.4.4.2):
//!   |H(f)|^4 = 1/2 at f_c gives tan(pi f_d / f_s) = tan(pi f_c / f_s) / C with
//!   C = (2^(1/2) - 1)^(1/(2N)) (0.802 for N = 2, the "fourth-order zero-lag" filter).
//! - **Edges**: each run of samples is extended by odd reflection about its end samples
//!   (2 x_0 - x_k, scipy's `padtype='odd'`; Smith 1989), the filters started in the steady
//!   state of their first input (scipy's `sosfilt_zi`), and the padding dropped after the two
//!   passes. The padding is one period of the cutoff (f_s / f_c samples, at least 3 (N + 1) as
//!   scipy's, at most the run's length - 1), which the summary states.
//! - **Derivatives**: velocity and acceleration by fourth-order central differences of the
//!   filtered positions (five points; second-order one-sided formulas on the first and last two
//!   samples). The three-point differences of Winter's book lose 1.5 % of a harmonic at a
//!   fifteenth of the sampling rate in the acceleration; these 0.02 %.
//! - **Cutoff from the data** ([`Cutoff`]): Winter's residual analysis (the RMS difference
//!   between the raw and filtered samples over a grid of cutoffs, a line fitted to its noise
//!   part and extrapolated to 0 Hz, the cutoff where the residual falls to that intercept), or
//!   the Durbin-Watson statistic of the residuals (Challis 1999, *J. Appl. Biomech.* 15: the
//!   cutoff where the residuals stop being correlated sample to sample, d = 2).
//!
//! Runs of samples split at gaps as for every method; a run too short (under 2 (3 (N + 1)) + 1
//! samples, or 5 for the differences) is rejected. A run whose clock is uneven (a data logger's
//! jitter) is filtered on the even grid of its mean step and carried back to its samples' own
//! times by natural cubic splines ([`crate::resample`]); the choice states the departure and the
//! interpolation's error.

use std::f64::consts::PI;

use crate::{check_input, Derivatives, Differentiator, Provenance, SignalError};

/// Cutoffs tested by the residual analysis and the Durbin-Watson criterion: this many, evenly
/// spaced from 0 to [`HIGHEST_CUTOFF`] of the sampling rate (the first one step above 0).
pub const CUTOFF_GRID: usize = 200;

/// Highest cutoff tested, as a share of the sampling rate (0.45: 90 % of the Nyquist frequency).
pub const HIGHEST_CUTOFF: f64 = 0.45;

/// Default band of the residual's noise part for Winter's line, as shares of the sampling rate:
/// a quarter to a half of the Nyquist frequency, above the motion's content at the frame rates
/// mechanisms are filmed at (the residual of white noise alone, sqrt(1 - 2 f / f_s) of its RMS,
/// puts the line's intercept 2.5 % above the noise there).
pub const NOISE_BAND: (f64, f64) = (0.125, 0.25);

/// How the cutoff is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cutoff {
    /// Given, Hz.
    Fixed(f64),
    /// Winter's residual analysis, the noise line fitted between these cutoffs (Hz; None: the
    /// [`NOISE_BAND`] of the sampling rate).
    Residual(Option<(f64, f64)>),
    /// The Durbin-Watson statistic of the residuals equal to 2.
    DurbinWatson,
}

impl Cutoff {
    /// The criterion in words, for summaries and the report's methods paragraph.
    pub fn describe(&self) -> String {
        match self {
            Cutoff::Fixed(f) => format!("cutoff {f} Hz"),
            Cutoff::Residual(None) => format!(
                "cutoff by Winter's residual analysis (noise line fitted from {} to {} of the sampling rate)",
                NOISE_BAND.0, NOISE_BAND.1
            ),
            Cutoff::Residual(Some((lo, hi))) => format!(
                "cutoff by Winter's residual analysis (noise line fitted from {lo} to {hi} Hz)"
            ),
            Cutoff::DurbinWatson => {
                "cutoff where the residuals' Durbin-Watson statistic is 2 (Challis 1999)".into()
            }
        }
    }
}

/// The zero-lag Butterworth filter with its cutoff criterion: a [`Differentiator`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Butterworth {
    /// Order of the filter designed, run twice (2: the fourth-order zero-lag filter).
    pub order: usize,
    /// The cutoff or how it is chosen.
    pub cutoff: Cutoff,
}

/// What the filter chose for one coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ButterworthChoice {
    /// The cutoff of the zero-lag filter (-3 dB after both passes), Hz.
    pub cutoff_hz: f64,
    /// The single pass's cutoff after Winter's correction, Hz.
    pub pass_cutoff_hz: f64,
    /// Samples of odd reflection padded at each end of a run.
    pub padding: usize,
    /// The residual analysis's noise estimate (the line's intercept), in the input's unit.
    pub noise_rms: Option<f64>,
    /// The residuals' Durbin-Watson statistic at the cutoff.
    pub durbin_watson: f64,
    /// When the run's clock was uneven: how it was put on an even grid and back.
    pub resampled: Option<Resampled>,
}

/// An unevenly timed coordinate filtered on an even grid ([`crate::resample`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resampled {
    /// The largest departure of a sample's time from the grid, as a share of the step.
    pub largest_departure: f64,
    /// The interpolation's error on the filtered values (to the samples' times, one way), RMS,
    /// in the input's unit: the largest over the runs.
    pub interpolation_rms: f64,
}

/// The runs whose clock departs from their even grid by more than
/// [`crate::savgol::MAX_STEP_VARIATION`] of the step, put on it.
struct OnGrid {
    /// The times: each moved run's grid, the other samples' own.
    t: Vec<f64>,
    /// The values, carried to the grid by the natural cubic spline where moved.
    values: Vec<f64>,
    /// The runs moved.
    moved: Vec<(usize, usize)>,
    /// The largest departure of a sample's time from its run's grid, as a share of the step.
    departure: f64,
}

/// The uneven runs of `runs` put on their even grids; None when every run is even (nothing is
/// copied then).
fn to_even_grid(t: &[f64], values: &[f64], runs: &[(usize, usize)]) -> Option<OnGrid> {
    let moved: Vec<(usize, usize)> = runs
        .iter()
        .copied()
        .filter(|&(s, e)| {
            let dt = (t[e - 1] - t[s]) / (e - s - 1) as f64;
            crate::savgol::uneven_step(&t[s..e], dt).is_some()
        })
        .collect();
    if moved.is_empty() {
        return None;
    }
    let mut g = OnGrid {
        t: t.to_vec(),
        values: values.to_vec(),
        moved,
        departure: 0.0,
    };
    for &(s, e) in &g.moved {
        let grid = crate::resample::even_grid(&t[s..e]);
        let d = crate::resample::largest_departure(&t[s..e], &grid);
        g.departure = g.departure.max(d);
        g.values[s..e].copy_from_slice(&crate::resample::carry(&t[s..e], &values[s..e], &grid));
        g.t[s..e].copy_from_slice(&grid);
    }
    Some(g)
}

/// A filter as second-order sections: per section (b0, b1, b2, a1, a2), a0 = 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Sections(pub Vec<[f64; 5]>);

impl Butterworth {
    /// A filter of `order` (1 to 10) with its cutoff criterion; an error for an order out of
    /// range or a given cutoff or noise band that is not a positive, increasing pair.
    pub fn new(order: usize, cutoff: Cutoff) -> Result<Butterworth, SignalError> {
        let bad = |reason: String| SignalError::BadFilter { reason };
        if !(1..=10).contains(&order) {
            return Err(bad(format!(
                "order {order}: the Butterworth filter's order must be 1 to 10 (2 is the fourth-order zero-lag filter of the field)"
            )));
        }
        match cutoff {
            Cutoff::Fixed(f) if !(f.is_finite() && f > 0.0) => {
                return Err(bad(format!("cutoff {f} Hz must be a positive number")))
            }
            Cutoff::Residual(Some((lo, hi))) if !(lo.is_finite() && lo > 0.0 && hi > lo) => {
                return Err(bad(format!(
                    "noise band {lo} to {hi} Hz must be two positive frequencies, the first lower"
                )))
            }
            _ => {}
        }
        Ok(Butterworth { order, cutoff })
    }

    /// Smooth and differentiate one coordinate ([`Differentiator::differentiate`]) and say what
    /// cutoff was chosen (None when no run was long enough to filter).
    pub fn filter(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<(Derivatives, Option<ButterworthChoice>), SignalError> {
        check_input(name, t, values, present)?;
        let runs = self.runs(t, present);
        let Some(grid) = to_even_grid(t, values, &runs) else {
            return self.filter_even(name, t, values, &runs);
        };
        let (mut out, choice) = self.filter_even(name, &grid.t, &grid.values, &runs)?;
        let Some(choice) = choice else {
            return Ok((out, None));
        };
        // Back from the grid to the samples' own times, run by run; the interpolation's error
        // measured on the filtered values.
        let mut error: f64 = 0.0;
        for &(s, e) in &grid.moved {
            let (g, ts) = (&grid.t[s..e], &t[s..e]);
            error = error.max(crate::resample::round_trip_rms(g, &out.value[s..e], ts));
            for series in [&mut out.value, &mut out.rate, &mut out.accel] {
                let back = crate::resample::carry(g, &series[s..e], ts);
                series[s..e].copy_from_slice(&back);
            }
        }
        let resampled = Resampled {
            largest_departure: grid.departure,
            interpolation_rms: error,
        };
        Ok((
            out,
            Some(ButterworthChoice {
                resampled: Some(resampled),
                ..choice
            }),
        ))
    }

    /// [`Butterworth::filter`] on runs whose times are even (`t` on its grid).
    fn filter_even(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        runs: &[(usize, usize)],
    ) -> Result<(Derivatives, Option<ButterworthChoice>), SignalError> {
        let n = t.len();
        let mut out = Derivatives::rejected(n);
        let Some(dt) = mean_step(t, runs) else {
            return Ok((out, None));
        };
        let fs = 1.0 / dt;
        let cutoff = self.choose(name, fs, values, runs)?;
        let design = Design::new(self.order, cutoff.cutoff_hz, fs)?;
        for &(s, e) in runs {
            let x = design.filtfilt(&values[s..e]);
            central_differences(&x, dt, &mut out, s);
            out.value[s..e].copy_from_slice(&x);
            let edge = design.edge(e - s);
            for (i, p) in out.provenance[s..e].iter_mut().enumerate() {
                *p = match i < edge || i + edge >= e - s {
                    true => Provenance::Edge,
                    false => Provenance::Measured,
                };
            }
        }
        let choice = ButterworthChoice {
            padding: design.pad(runs.iter().map(|r| r.1 - r.0).max().unwrap_or(0)),
            ..cutoff
        };
        Ok((out, Some(choice)))
    }

    /// The fewest consecutive samples a run needs to be filtered: twice scipy's least padding
    /// and one, at least the differences' five.
    pub fn shortest_run(&self) -> usize {
        (2 * min_padding(self.order) + 1).max(5)
    }

    /// The runs of present samples long enough to filter.
    fn runs(&self, t: &[f64], present: &[bool]) -> Vec<(usize, usize)> {
        crate::savgol::segments(t, present)
            .into_iter()
            .filter(|(s, e)| e - s >= self.shortest_run())
            .collect()
    }

    /// The cutoff by the criterion, with the padding not yet known (0).
    fn choose(
        &self,
        name: &str,
        fs: f64,
        values: &[f64],
        runs: &[(usize, usize)],
    ) -> Result<ButterworthChoice, SignalError> {
        let nyquist = 0.5 * fs;
        let at = |fc: f64| -> Result<ButterworthChoice, SignalError> {
            let design = Design::new(self.order, fc, fs)?;
            let (_, dw) = design.residual(values, runs);
            Ok(ButterworthChoice {
                cutoff_hz: fc,
                pass_cutoff_hz: design.pass_cutoff_hz,
                padding: 0,
                noise_rms: None,
                durbin_watson: dw,
                resampled: None,
            })
        };
        match self.cutoff {
            Cutoff::Fixed(fc) if fc >= nyquist => Err(SignalError::BadInput {
                name: name.into(),
                reason: format!(
                    "cutoff {fc} Hz is not below the Nyquist frequency {nyquist} Hz of the samples"
                ),
            }),
            Cutoff::Fixed(fc) => at(fc),
            Cutoff::Residual(band) => {
                let band = band.unwrap_or((NOISE_BAND.0 * fs, NOISE_BAND.1 * fs));
                let (fc, noise) = self.residual_analysis(name, fs, values, runs, band)?;
                Ok(ButterworthChoice {
                    noise_rms: Some(noise),
                    ..at(fc)?
                })
            }
            Cutoff::DurbinWatson => at(self.durbin_watson_cutoff(name, fs, values, runs)?),
        }
    }

    /// Winter's residual analysis: the RMS residual R(f) over the grid of cutoffs, the line fitted
    /// by least squares to R between the `band`'s cutoffs extrapolated to 0 Hz (its intercept
    /// a, the noise's RMS), and the lowest cutoff where R falls to a (linear between the grid's
    /// cutoffs). Returns the cutoff and a.
    fn residual_analysis(
        &self,
        name: &str,
        fs: f64,
        values: &[f64],
        runs: &[(usize, usize)],
        (lo, hi): (f64, f64),
    ) -> Result<(f64, f64), SignalError> {
        let grid = self.grid(fs, values, runs)?;
        let fail = |reason: String| SignalError::BadInput {
            name: name.into(),
            reason,
        };
        let line: Vec<(f64, f64)> = grid
            .iter()
            .filter(|g| g.0 >= lo && g.0 <= hi)
            .map(|g| (g.0, g.1))
            .collect();
        if line.len() < 3 || hi >= 0.5 * fs {
            return Err(fail(format!(
                "the residual analysis's noise band {lo:.2} to {hi:.2} Hz holds {} of the cutoffs tested below {:.2} Hz (the Nyquist frequency's {}): give a band below the Nyquist frequency",
                line.len(),
                HIGHEST_CUTOFF * fs,
                2.0 * HIGHEST_CUTOFF
            )));
        }
        // The least-squares line's intercept: its mean less the slope times the mean cutoff.
        let (x, y): (Vec<f64>, Vec<f64>) = line.into_iter().unzip();
        let n = x.len() as f64;
        let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
        let intercept = my - flexbench_contracts::series::slope(&x, &y) * mx;
        let found = crossing(&grid, |g| g.1 - intercept).ok_or_else(|| {
            fail(format!(
                "the residual analysis found no cutoff: the residual never falls to the noise line's intercept ({intercept:.3e}) below {:.2} Hz; give the cutoff",
                HIGHEST_CUTOFF * fs
            ))
        })?;
        Ok((found, intercept))
    }

    /// The lowest cutoff of the grid at which the residuals' Durbin-Watson statistic reaches 2
    /// (linear between the grid's cutoffs).
    fn durbin_watson_cutoff(
        &self,
        name: &str,
        fs: f64,
        values: &[f64],
        runs: &[(usize, usize)],
    ) -> Result<f64, SignalError> {
        let grid = self.grid(fs, values, runs)?;
        crossing(&grid, |g| 2.0 - g.2).ok_or_else(|| SignalError::BadInput {
            name: name.into(),
            reason: format!(
                "the residuals' Durbin-Watson statistic stays below 2 up to {:.2} Hz: the samples hold no white noise the criterion can find; give the cutoff",
                HIGHEST_CUTOFF * fs
            ),
        })
    }

    /// Per cutoff of the grid: the cutoff (Hz), the RMS residual and the residuals' Durbin-Watson
    /// statistic.
    fn grid(
        &self,
        fs: f64,
        values: &[f64],
        runs: &[(usize, usize)],
    ) -> Result<Vec<(f64, f64, f64)>, SignalError> {
        (1..=CUTOFF_GRID)
            .map(|j| {
                let fc = HIGHEST_CUTOFF * fs * j as f64 / CUTOFF_GRID as f64;
                let (rms, dw) = Design::new(self.order, fc, fs)?.residual(values, runs);
                Ok((fc, rms, dw))
            })
            .collect()
    }
}

impl Differentiator for Butterworth {
    fn differentiate(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<Derivatives, SignalError> {
        self.filter(name, t, values, present).map(|(d, _)| d)
    }

    fn describe(&self) -> String {
        format!(
            "zero-lag Butterworth low-pass, order {} run forward and backward (order {} in all), {}; odd reflection padding; fourth-order central differences",
            self.order,
            2 * self.order,
            self.cutoff.describe()
        )
    }
}

/// The least padding of a run: scipy's `filtfilt` default, 3 (N + 1) samples.
fn min_padding(order: usize) -> usize {
    3 * (order + 1)
}

/// The mean time step over the runs, s (None without a run).
fn mean_step(t: &[f64], runs: &[(usize, usize)]) -> Option<f64> {
    let (span, steps) = runs.iter().fold((0.0, 0usize), |(a, b), &(s, e)| {
        (a + t[e - 1] - t[s], b + e - s - 1)
    });
    (steps > 0).then(|| span / steps as f64)
}

/// The first cutoff of `grid` at which `f` turns from positive to zero or below, linear
/// between the two grid points about the turn; None when it never does.
fn crossing(grid: &[(f64, f64, f64)], f: impl Fn(&(f64, f64, f64)) -> f64) -> Option<f64> {
    let k = grid.iter().position(|g| f(g) <= 0.0)?;
    if k == 0 {
        return Some(grid[0].0);
    }
    let (a, b) = (f(&grid[k - 1]), f(&grid[k]));
    let (fa, fb) = (grid[k - 1].0, grid[k].0);
    Some(fa + (fb - fa) * a / (a - b))
}

/// Velocity and acceleration of the filtered run `x` (step `dt`) into `out` from sample `s`:
/// fourth-order central differences inside, second-order one-sided ones on the first and last
/// two samples.
fn central_differences(x: &[f64], dt: f64, out: &mut Derivatives, s: usize) {
    let n = x.len();
    let (h, h2) = (dt, dt * dt);
    for i in 0..n {
        let (v, a) = if i >= 2 && i + 2 < n {
            (
                (x[i - 2] - 8.0 * x[i - 1] + 8.0 * x[i + 1] - x[i + 2]) / (12.0 * h),
                (-x[i - 2] + 16.0 * x[i - 1] - 30.0 * x[i] + 16.0 * x[i + 1] - x[i + 2])
                    / (12.0 * h2),
            )
        } else if i < 2 {
            (
                (-3.0 * x[i] + 4.0 * x[i + 1] - x[i + 2]) / (2.0 * h),
                (2.0 * x[i] - 5.0 * x[i + 1] + 4.0 * x[i + 2] - x[i + 3]) / h2,
            )
        } else {
            (
                (3.0 * x[i] - 4.0 * x[i - 1] + x[i - 2]) / (2.0 * h),
                (2.0 * x[i] - 5.0 * x[i - 1] + 4.0 * x[i - 2] - x[i - 3]) / h2,
            )
        };
        out.rate[s + i] = v;
        out.accel[s + i] = a;
    }
}

/// One designed filter: its sections, their steady states for a unit input, the cutoffs.
#[derive(Debug, Clone)]
pub struct Design {
    /// The sections.
    pub sections: Sections,
    /// Each section's state for a constant unit input ([`Design::filtfilt`] scales it by the
    /// first sample).
    zi: Vec<[f64; 2]>,
    /// The zero-lag cutoff asked, Hz.
    cutoff_hz: f64,
    /// The single pass's cutoff, Hz.
    pass_cutoff_hz: f64,
    /// Sampling rate, Hz.
    fs: f64,
    order: usize,
}

impl Design {
    /// The order-`order` Butterworth low-pass at `fs` Hz whose forward-backward run is -3 dB at
    /// `cutoff_hz` (module documentation).
    pub fn new(order: usize, cutoff_hz: f64, fs: f64) -> Result<Design, SignalError> {
        if !(cutoff_hz > 0.0 && cutoff_hz < 0.5 * fs) {
            return Err(SignalError::BadFilter {
                reason: format!(
                    "cutoff {cutoff_hz} Hz must lie between 0 and the Nyquist frequency {} Hz",
                    0.5 * fs
                ),
            });
        }
        let c = (2f64.sqrt() - 1.0).powf(1.0 / (2.0 * order as f64));
        let pass = fs / PI * ((PI * cutoff_hz / fs).tan() / c).atan();
        let sections = butter_sections(order, 2.0 * pass / fs);
        let zi = steady_states(&sections);
        Ok(Design {
            sections,
            zi,
            cutoff_hz,
            pass_cutoff_hz: pass,
            fs,
            order,
        })
    }

    /// The single pass's cutoff (Winter's correction of the zero-lag cutoff), Hz.
    pub fn pass_cutoff_hz(&self) -> f64 {
        self.pass_cutoff_hz
    }

    /// Samples padded at each end of a run of `len`: one period of the cutoff, at least
    /// scipy's default, at most `len - 1`.
    pub fn pad(&self, len: usize) -> usize {
        let period = (self.fs / self.cutoff_hz).ceil() as usize;
        period
            .max(min_padding(self.order))
            .min(len.saturating_sub(1))
    }

    /// Samples within reach of a run's ends: half a period of the cutoff, plus the
    /// differences' two.
    fn edge(&self, len: usize) -> usize {
        ((0.5 * self.fs / self.cutoff_hz).ceil() as usize + 2).min(len / 2)
    }

    /// The zero-lag filtering of one evenly sampled run, padded by [`Design::pad`].
    pub fn filtfilt(&self, x: &[f64]) -> Vec<f64> {
        self.filtfilt_padded(x, self.pad(x.len()))
    }

    /// The zero-lag filtering of `x` padded by `pad` samples of odd reflection at each end
    /// (`pad` < `x.len()`): scipy's `sosfiltfilt(sos, x, padtype='odd', padlen=pad)`.
    pub fn filtfilt_padded(&self, x: &[f64], pad: usize) -> Vec<f64> {
        let n = x.len();
        let pad = pad.min(n.saturating_sub(1));
        let mut ext = Vec::with_capacity(n + 2 * pad);
        ext.extend((1..=pad).rev().map(|k| 2.0 * x[0] - x[k]));
        ext.extend_from_slice(x);
        ext.extend((1..=pad).map(|k| 2.0 * x[n - 1] - x[n - 1 - k]));
        self.run(&mut ext);
        ext.reverse();
        self.run(&mut ext);
        ext.reverse();
        ext.drain(..pad);
        ext.truncate(n);
        ext
    }

    /// One pass of the sections over `y`, in place, each started in its steady state for
    /// `y[0]` (scipy's `sosfilt` with `zi = sosfilt_zi(sos) * y[0]`).
    fn run(&self, y: &mut [f64]) {
        let Some(&x0) = y.first() else { return };
        for (sec, zi) in self.sections.0.iter().zip(&self.zi) {
            let [b0, b1, b2, a1, a2] = *sec;
            let (mut z0, mut z1) = (zi[0] * x0, zi[1] * x0);
            for v in y.iter_mut() {
                let x = *v;
                let out = b0 * x + z0;
                z0 = b1 * x - a1 * out + z1;
                z1 = b2 * x - a2 * out;
                *v = out;
            }
        }
    }

    /// The RMS of raw minus filtered over the runs, and the residuals' Durbin-Watson statistic
    /// (sum of squared successive differences over the sum of squares, within each run).
    fn residual(&self, values: &[f64], runs: &[(usize, usize)]) -> (f64, f64) {
        let (mut ss, mut sd, mut count) = (0.0, 0.0, 0usize);
        for &(s, e) in runs {
            let x = &values[s..e];
            let f = self.filtfilt(x);
            let mut last: Option<f64> = None;
            for (a, b) in x.iter().zip(&f) {
                let r = a - b;
                ss += r * r;
                if let Some(l) = last {
                    sd += (r - l) * (r - l);
                }
                last = Some(r);
            }
            count += e - s;
        }
        ((ss / count.max(1) as f64).sqrt(), sd / ss)
    }
}

/// scipy's `butter(order, wn, output='sos')` for a low-pass, `wn` the cutoff as a share of the
/// Nyquist frequency: the analog prototype's poles -exp(i pi m / (2N)) (m = -N+1, -N+3, ...,
/// N-1) scaled by the pre-warped cutoff 4 tan(pi wn / 2), mapped by the bilinear transform
/// (z = (4 + s) / (4 - s)), every zero at z = -1, the gain set for unity at 0 Hz; each
/// conjugate pair of poles one section, the real pole of an odd order a first-order one.
fn butter_sections(order: usize, wn: f64) -> Sections {
    let warped = 4.0 * (PI * wn / 2.0).tan();
    let mut sections = Vec::new();
    // The poles in the upper half plane (and the real one), by m = N-1, N-3, ... > -1.
    let mut m = order as i64 - 1;
    while m >= 0 {
        let theta = PI * m as f64 / (2.0 * order as f64);
        // s = -warped exp(i theta): the pole and its conjugate.
        let (re, im) = (-warped * theta.cos(), warped * theta.sin());
        // z = (4 + s) / (4 - s).
        let (nr, ni, dr, di) = (4.0 + re, im, 4.0 - re, -im);
        let den = dr * dr + di * di;
        let (zr, zi) = ((nr * dr + ni * di) / den, (ni * dr - nr * di) / den);
        if m == 0 {
            // The real pole (odd order): (1 + z^-1) / (1 - p z^-1).
            let p = zr;
            let g = (1.0 - p) / 2.0;
            sections.push([g, g, 0.0, -p, 0.0]);
        } else {
            let (a1, a2) = (-2.0 * zr, zr * zr + zi * zi);
            let g = (1.0 + a1 + a2) / 4.0;
            sections.push([g, 2.0 * g, g, a1, a2]);
        }
        m -= 2;
    }
    // scipy's order: the poles nearest the unit circle in the last sections.
    sections.reverse();
    Sections(sections)
}

/// Each section's state in the steady state of a constant unit input through the sections
/// before it (scipy's `sosfilt_zi`; every section here has unit gain at 0 Hz).
fn steady_states(sections: &Sections) -> Vec<[f64; 2]> {
    sections
        .0
        .iter()
        .map(|&[b0, b1, b2, a1, a2]| {
            // (I - A^T) z = b[1:] - a[1:] b0 with A the companion matrix of (1, a1, a2).
            let (r0, r1) = (b1 - a1 * b0, b2 - a2 * b0);
            let z0 = (r0 + r1) / (1.0 + a1 + a2);
            [z0, r1 - a2 * z0]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The zero-lag filter is -3 dB at the cutoff asked, for every order: the single pass's
    /// magnitude there is 2^(-1/4), from its sections' transfer functions at z = exp(i 2 pi f /
    /// f_s) (to 1e-12); unity at 0 Hz; and a constant passes unchanged (the steady states).
    #[test]
    fn minus_three_decibels_at_the_cutoff() {
        let fs = 240.0;
        for order in 1..=8 {
            for fc in [2.0, 6.0, 20.0, 60.0, 110.0] {
                let d = Design::new(order, fc, fs).unwrap();
                let gain = |f: f64| {
                    let w = 2.0 * PI * f / fs;
                    let (c, s) = (w.cos(), w.sin());
                    d.sections.0.iter().fold(1.0, |g, sec| {
                        let [b0, b1, b2, a1, a2] = *sec;
                        // H(z) = (b0 + b1 z^-1 + b2 z^-2) / (1 + a1 z^-1 + a2 z^-2).
                        let num = (
                            b0 + b1 * c + b2 * (2.0 * w).cos(),
                            -b1 * s - b2 * (2.0 * w).sin(),
                        );
                        let den = (
                            1.0 + a1 * c + a2 * (2.0 * w).cos(),
                            -a1 * s - a2 * (2.0 * w).sin(),
                        );
                        g * num.0.hypot(num.1) / den.0.hypot(den.1)
                    })
                };
                assert!(
                    (gain(fc) - 0.5f64.powf(0.25)).abs() < 1e-12,
                    "order {order}, {fc} Hz: {}",
                    gain(fc)
                );
                assert!((gain(0.0) - 1.0).abs() < 1e-12);
                let y = d.filtfilt(&[3.5; 50]);
                assert!(y.iter().all(|v| (v - 3.5).abs() < 1e-12), "order {order}");
            }
        }
    }

    /// A straight line: odd reflection continues it, and a zero-lag filter with unit gain at
    /// 0 Hz passes a ramp, so away from the ends (where the filters' start from a constant's
    /// steady state decays, as in scipy's) the filter returns it (1e-10) and the differences
    /// its slope and zero acceleration. The differences are exact on a parabola, one-sided
    /// ends included.
    #[test]
    fn lines_pass_and_differences_are_exact_on_polynomials() {
        let bw = Butterworth::new(2, Cutoff::Fixed(10.0)).unwrap();
        let t: Vec<f64> = (0..300).map(|k| k as f64 / 240.0).collect();
        let x: Vec<f64> = t.iter().map(|t| 0.2 + 1.5 * t).collect();
        let (d, c) = bw.filter("line", &t, &x, &[true; 300]).unwrap();
        let c = c.unwrap();
        assert_eq!(c.cutoff_hz, 10.0);
        assert_eq!(c.padding, 24);
        for (k, xk) in x.iter().enumerate().take(200).skip(100) {
            assert!((d.value[k] - xk).abs() < 1e-10, "{k}");
            assert!((d.rate[k] - 1.5).abs() < 1e-8, "{k}: {}", d.rate[k]);
            assert!(d.accel[k].abs() < 1e-5, "{k}: {}", d.accel[k]);
        }
        let edge = |k: usize| d.provenance[k] == Provenance::Edge;
        assert!(edge(0) && edge(13) && !edge(14) && !edge(285) && edge(286) && edge(299));
        let mut out = Derivatives {
            value: vec![0.0; 40],
            rate: vec![0.0; 40],
            accel: vec![0.0; 40],
            provenance: vec![Provenance::Measured; 40],
            sigma: Vec::new(),
        };
        let dt = 0.01;
        let p: Vec<f64> = (0..40)
            .map(|k| 3.0 * (k as f64 * dt).powi(2) - (k as f64 * dt))
            .collect();
        central_differences(&p, dt, &mut out, 0);
        for k in 0..40 {
            assert!(
                (out.rate[k] - (6.0 * k as f64 * dt - 1.0)).abs() < 1e-10,
                "{k}"
            );
            assert!((out.accel[k] - 6.0).abs() < 1e-8, "{k}: {}", out.accel[k]);
        }
    }

    /// A data logger's clock (a 2 % jitter of a 200 Hz step): the filter runs on the even grid
    /// and comes back to the samples' own times. Against a 2 Hz motion's value, rate and
    /// acceleration, the jittered run's error is within 1.05 times the even clock's (and 1e-6
    /// of the amplitude), and the choice states the departure and the interpolation's error.
    #[test]
    fn a_jittered_clock_is_filtered_on_the_grid() {
        let bw = Butterworth::new(2, Cutoff::Fixed(8.0)).unwrap();
        let w = 2.0 * PI * 2.0;
        let n = 800;
        let jitter = |k: usize| 1e-4 * (((k * 7919) % 17) as f64 / 8.0 - 1.0);
        let even: Vec<f64> = (0..n).map(|k| k as f64 * 0.005).collect();
        let jittered: Vec<f64> = (0..n).map(|k| k as f64 * 0.005 + jitter(k)).collect();
        let x = |t: &[f64]| t.iter().map(|t| (w * t).sin()).collect::<Vec<f64>>();
        let (a, ca) = bw.filter("even", &even, &x(&even), &vec![true; n]).unwrap();
        let (b, cb) = bw
            .filter("jittered", &jittered, &x(&jittered), &vec![true; n])
            .unwrap();
        assert_eq!(ca.unwrap().resampled, None);
        let r = cb.unwrap().resampled.expect("resampled");
        assert!(
            r.largest_departure > 0.015 && r.largest_departure < 0.05,
            "{r:?}"
        );
        assert!(r.interpolation_rms < 1e-6, "{r:?}");
        let worst = |d: &Derivatives, t: &[f64], order: usize| {
            (100..700)
                .map(|k| {
                    let (s, c) = (w * t[k]).sin_cos();
                    let (got, want) = match order {
                        0 => (d.value[k], s),
                        1 => (d.rate[k], w * c),
                        _ => (d.accel[k], -w * w * s),
                    };
                    (got - want).abs() / w.powi(order as i32)
                })
                .fold(0.0, f64::max)
        };
        for order in 0..3 {
            let (ea, eb) = (worst(&a, &even, order), worst(&b, &jittered, order));
            assert!(
                eb < 1.05 * ea + 1e-6,
                "derivative {order}: {eb:e} against {ea:e}"
            );
        }
    }
}
