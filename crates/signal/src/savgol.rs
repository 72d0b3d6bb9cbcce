//! Savitzky-Golay smoothing and differentiation.
//!
//! For a window of `w = 2m + 1` samples and a polynomial of order `p`, the least-squares fit
//! `x(z) = sum_k c_k z^k` over the abscissae `z_i = (i - m)/m` (scaled to [-1, 1] so that the
//! normal equations stay well conditioned at high order) gives, for any evaluation point `z0`,
//! linear weights `h` with `x^(d)(z0) = sum_i h_i x_i`. With the sample interval `dt`, the time
//! derivative is `d^d x/dt^d = (1/(m dt))^d x^(d)(z0)` (Savitzky & Golay 1964; scipy's
//! `savgol_coeffs` with `delta`). Inside a segment the centred weights are used (`z0 = 0`); in
//! the first and last `m` samples the first and last window's fit is evaluated at the sample's
//! own position (scipy's `mode="interp"`); the other edge modes of scipy (mirror, nearest,
//! constant, wrap) extend the segment and use the centred weights.
//!
//! Unevenly sampled segments (a variable-frame-rate camera, a dropped frame) are fitted on the
//! samples' own times: at each sample the polynomial is fitted by least squares to the window's
//! samples at `z_i = (t_i - t_c) / h` (t_c the window's centre sample, h its half-span) and
//! differentiated at the sample's own `z` (the definition above without the even grid; Gorry
//! 1991 for the general case; the even-grid weights are its special case, checked in the tests).
//! Only the `interp` edges are defined there: the other modes extend the segment as if evenly
//! sampled.

use nalgebra::{DMatrix, DVector};

use crate::{Derivatives, Differentiator, Provenance, SignalError};

/// How the filter treats the ends of a segment (scipy.signal.savgol_filter's `mode`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EdgeMode {
    /// Fit the polynomial to the first and last windows and evaluate it at the edge samples.
    Interp,
    /// Extend by reflection about the edge sample, the edge not repeated: (d c b | a b c d).
    Mirror,
    /// Extend with the edge value: (a a a | a b c d).
    Nearest,
    /// Extend with a constant: (k k k | a b c d).
    Constant(f64),
    /// Extend periodically: (b c d | a b c d).
    Wrap,
}

impl EdgeMode {
    /// The mode's name in scipy (and in pipeline files).
    pub fn name(&self) -> &'static str {
        match self {
            EdgeMode::Interp => "interp",
            EdgeMode::Mirror => "mirror",
            EdgeMode::Nearest => "nearest",
            EdgeMode::Constant(_) => "constant",
            EdgeMode::Wrap => "wrap",
        }
    }
}

impl std::str::FromStr for EdgeMode {
    type Err = flexbench_contracts::names::UnknownName;

    /// A mode by its scipy name; `constant` extends with zeros.
    fn from_str(name: &str) -> Result<EdgeMode, Self::Err> {
        flexbench_contracts::names::by_name(
            name,
            "an edge mode",
            &[
                ("interp", EdgeMode::Interp),
                ("mirror", EdgeMode::Mirror),
                ("nearest", EdgeMode::Nearest),
                ("constant", EdgeMode::Constant(0.0)),
                ("wrap", EdgeMode::Wrap),
            ],
        )
    }
}

impl std::fmt::Display for EdgeMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Savitzky-Golay parameters and their weights (computed once, at construction).
#[derive(Debug, Clone, PartialEq)]
pub struct SavGol {
    /// Window length in samples (odd, > order).
    pub window: usize,
    /// Polynomial order (>= 2 so that accelerations exist).
    pub order: usize,
    /// Edge treatment.
    pub mode: EdgeMode,
    coefficients: SavGolCoefficients,
}

/// Weights for derivatives 0, 1, 2 at every position of a window, in units of the scaled
/// abscissa (multiply derivative d by `(1/(m dt))^d`).
#[derive(Debug, Clone, PartialEq)]
pub struct SavGolCoefficients {
    /// Half window m.
    pub half: usize,
    /// `weights[d][j]` are the `w` weights evaluating derivative `d` at window position `j`.
    pub weights: [Vec<Vec<f64>>; 3],
}

impl SavGolCoefficients {
    /// The weights of derivative `d` at window position `j` for the sample interval `dt` (s):
    /// x^(d)(t_j) = sum_i h_i x_i.
    pub fn for_interval(&self, d: usize, j: usize, dt: f64) -> Vec<f64> {
        let scale = (1.0 / (self.half as f64 * dt)).powi(d as i32);
        self.weights[d][j].iter().map(|h| h * scale).collect()
    }
}

/// Least-squares polynomial weights through a QR factorisation of the Vandermonde matrix on
/// the scaled abscissae z_i = (i - m)/m in [-1, 1] (Householder QR is backward stable; the
/// scaled columns keep the condition number moderate up to order 7 and windows of 101 and more).
fn compute_weights(window: usize, order: usize) -> SavGolCoefficients {
    let w = window;
    let m = w / 2;
    let p = order;
    let z = |i: usize| (i as f64 - m as f64) / m as f64;
    let a = DMatrix::from_fn(w, p + 1, |i, k| z(i).powi(k as i32));
    let qr = a.qr();
    let (q, r) = (qr.q(), qr.r());
    // Pseudo-inverse (p+1) x w: R^-1 Q^T (R is upper triangular and invertible: w > p).
    let qt = q.transpose();
    let pinv = r
        .solve_upper_triangular(&qt)
        .unwrap_or_else(|| DMatrix::zeros(p + 1, w));
    let mut weights: [Vec<Vec<f64>>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (d, wd) in weights.iter_mut().enumerate() {
        for j in 0..w {
            let z0 = z(j);
            // e_k = d^d/dz^d z^k at z0.
            let e = DVector::from_fn(p + 1, |k, _| {
                if k < d {
                    0.0
                } else {
                    let falling: f64 = (0..d).map(|r| (k - r) as f64).product();
                    falling * z0.powi((k - d) as i32)
                }
            });
            let h = pinv.transpose() * e;
            wd.push(h.iter().copied().collect());
        }
    }
    SavGolCoefficients { half: m, weights }
}

impl SavGol {
    /// Checked parameters, edges by `EdgeMode::Interp`.
    pub fn new(window: usize, order: usize) -> Result<Self, SignalError> {
        let bad = |reason: &str| SignalError::BadParameters {
            window,
            order,
            reason: reason.into(),
        };
        if window.is_multiple_of(2) {
            return Err(bad("the window must be odd (e.g. 2*m+1 samples)"));
        }
        if order < 2 {
            return Err(bad("the order must be at least 2 to give accelerations"));
        }
        if window <= order {
            return Err(bad("the window must be longer than the polynomial order"));
        }
        Ok(SavGol {
            window,
            order,
            mode: EdgeMode::Interp,
            coefficients: compute_weights(window, order),
        })
    }

    /// The same filter with another edge mode.
    pub fn with_mode(mut self, mode: EdgeMode) -> Self {
        self.mode = mode;
        self
    }

    /// The weights of every window position for derivatives 0..=2.
    pub fn coefficients(&self) -> &SavGolCoefficients {
        &self.coefficients
    }

    /// Filter `x` (uniformly sampled at interval `dt`, s) for derivative `deriv` (0, 1 or 2)
    /// into `out` (same length as x, at least one window long), in this filter's edge mode.
    /// O(n * window), no allocation.
    pub fn filter_into(&self, x: &[f64], dt: f64, deriv: usize, out: &mut [f64]) {
        self.filter_many(x, dt, [deriv], [out]);
    }

    /// Derivatives 0, 1 and 2 of `x` (uniformly sampled at interval `dt`, s) into `out`, as
    /// three calls of [`SavGol::filter_into`] give them, bit for bit, in one pass over `x`.
    pub fn filter3_into(&self, x: &[f64], dt: f64, out: [&mut [f64]; 3]) {
        self.filter_many(x, dt, [0, 1, 2], out);
    }

    /// Derivatives `derivs` of `x` into `out`, one each: the interior tap by tap over blocks of
    /// outputs, each sample read once for all of them (each output's sum in a dot product's
    /// order, but the inner loop runs along the samples, which the compiler vectorises), then
    /// the edges.
    fn filter_many<const N: usize>(
        &self,
        x: &[f64],
        dt: f64,
        derivs: [usize; N],
        mut out: [&mut [f64]; N],
    ) {
        let m = self.coefficients.half;
        let scales = derivs.map(|d| (1.0 / (m as f64 * dt)).powi(d as i32));
        let taps = derivs.map(|d| &self.coefficients.weights[d][m][..]);
        let (lo, hi) = (m, x.len().saturating_sub(m).max(m));
        for start in (lo..hi).step_by(BLOCK) {
            let end = (start + BLOCK).min(hi);
            let mut block = out.each_mut().map(|o| &mut o[start..end]);
            block.iter_mut().for_each(|b| b.fill(-0.0)); // f64's Sum starts at -0.0
            accumulate(
                taps,
                &x[start - m..end + m],
                block.each_mut().map(|b| &mut **b),
            );
            for (b, s) in block.into_iter().zip(scales) {
                b.iter_mut().for_each(|o| *o *= s);
            }
        }
        for ((o, d), s) in out.into_iter().zip(derivs).zip(scales) {
            self.edges_into(x, d, s, o);
        }
    }

    /// The first and last `m` outputs of derivative `deriv` (times `scale`) in this filter's
    /// edge mode.
    fn edges_into(&self, x: &[f64], deriv: usize, scale: f64, out: &mut [f64]) {
        let n = x.len();
        let m = self.coefficients.half;
        let w = self.window;
        let c = &self.coefficients.weights[deriv];
        let centre = &c[m];
        let edge_indices = (0..m.min(n)).chain(n.saturating_sub(m).max(m.min(n))..n);
        for i in edge_indices {
            let v = match self.mode {
                EdgeMode::Interp => {
                    let (start, j) = if i < m { (0, i) } else { (n - w, i - (n - w)) };
                    c[j].iter()
                        .zip(&x[start..start + w])
                        .map(|(h, v)| h * v)
                        .sum::<f64>()
                }
                mode => (0..w)
                    .map(|k| {
                        let idx = i as isize - m as isize + k as isize;
                        centre[k] * extended(x, idx, mode)
                    })
                    .sum::<f64>(),
            };
            out[i] = v * scale;
        }
    }
}

impl SavGol {
    /// The value, rate and acceleration of the unevenly sampled segment `x` at times `t` (each
    /// sample's window fitted on its own times: the module's description), into `out`.
    fn uneven_into(&self, t: &[f64], x: &[f64], out: [&mut [f64]; 3]) {
        let (len, m, p) = (t.len(), self.coefficients.half, self.order);
        let [value, rate, accel] = out;
        let mut v = DMatrix::<f64>::zeros(2 * m + 1, p + 1);
        for i in 0..len {
            let c = i.clamp(m, len - 1 - m);
            let h = 0.5 * (t[c + m] - t[c - m]);
            for (r, j) in (c - m..=c + m).enumerate() {
                let z = (t[j] - t[c]) / h;
                let mut zk = 1.0;
                for k in 0..=p {
                    v[(r, k)] = zk;
                    zk *= z;
                }
            }
            let rhs = DVector::from_column_slice(&x[c - m..=c + m]);
            // Least squares by the SVD: the scaled Vandermonde matrix is well conditioned, the
            // SVD keeps it so without forming the normal equations.
            let coef = v
                .clone()
                .svd(true, true)
                .solve(&rhs, 1e-14)
                .unwrap_or_else(|_| DVector::from_element(p + 1, f64::NAN));
            let z = (t[i] - t[c]) / h;
            let (mut d0, mut d1, mut d2) = (0.0, 0.0, 0.0);
            for k in (0..=p).rev() {
                let kf = k as f64;
                d0 = d0 * z + coef[k];
                if k >= 1 {
                    d1 = d1 * z + kf * coef[k];
                }
                if k >= 2 {
                    d2 = d2 * z + kf * (kf - 1.0) * coef[k];
                }
            }
            value[i] = d0;
            rate[i] = d1 / h;
            accel[i] = d2 / (h * h);
        }
    }
}

/// The sample at index `i` of `x` extended by `mode` beyond its ends.
fn extended(x: &[f64], i: isize, mode: EdgeMode) -> f64 {
    let n = x.len() as isize;
    if (0..n).contains(&i) {
        return x[i as usize];
    }
    match mode {
        EdgeMode::Mirror => {
            if n == 1 {
                return x[0];
            }
            let period = 2 * (n - 1);
            let k = i.rem_euclid(period);
            x[(if k < n { k } else { period - k }) as usize]
        }
        EdgeMode::Nearest | EdgeMode::Interp => x[if i < 0 { 0 } else { (n - 1) as usize }],
        EdgeMode::Constant(c) => c,
        EdgeMode::Wrap => x[i.rem_euclid(n) as usize],
    }
}

/// The filters' taps accumulated over a block: `out[d][i] += taps[d][k] * x[i + k]`, tap by
/// tap in order (each output's sum in a dot product's order). With AVX2 where the processor has
/// it (the same multiplications and additions four at a time, no fused multiply-add, so the same
/// bits), else the baseline's SSE2.
fn accumulate<const N: usize>(taps: [&[f64]; N], x: &[f64], out: [&mut [f64]; N]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above).
            return unsafe { accumulate_avx2(taps, x, out) };
        }
    }
    accumulate_portable(taps, x, out)
}

/// [`accumulate`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn accumulate_avx2<const N: usize>(taps: [&[f64]; N], x: &[f64], out: [&mut [f64]; N]) {
    accumulate_portable(taps, x, out)
}

/// [`accumulate`]'s loops, inlined into each caller so that each is compiled for its target.
/// Outputs are taken [`LANES`] at a time, their N filters' sums held in registers over every
/// tap (each sample loaded once per tap for all N, each output stored once); the last outputs
/// of a block tap by tap over memory. Either way each output's sum runs over the taps in order.
#[inline(always)]
fn accumulate_portable<const N: usize>(taps: [&[f64]; N], x: &[f64], out: [&mut [f64]; N]) {
    let n = out[0].len();
    let mut out = out.map(|o| &mut o[..n]);
    let nt = taps[0].len();
    let whole = n - n % LANES;
    for i in (0..whole).step_by(LANES) {
        let mut acc: [[f64; LANES]; N] =
            std::array::from_fn(|j| out[j][i..i + LANES].try_into().expect("LANES outputs"));
        for k in 0..nt {
            let src: &[f64; LANES] = x[i + k..i + k + LANES].try_into().expect("LANES samples");
            for (a, t) in acc.iter_mut().zip(&taps) {
                let h = t[k];
                for (a, v) in a.iter_mut().zip(src) {
                    *a += h * v;
                }
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            o[i..i + LANES].copy_from_slice(a);
        }
    }
    for k in 0..nt {
        let h = taps.map(|t| t[k]);
        let src = &x[whole + k..k + n];
        for (j, o) in out.iter_mut().enumerate() {
            for (a, v) in o[whole..].iter_mut().zip(src) {
                *a += h[j] * v;
            }
        }
    }
}

/// Outputs whose sums [`accumulate`] holds in registers at once, per filter (two AVX2
/// registers; three filters' take six of the sixteen).
const LANES: usize = 8;

/// Outputs filtered together, tap by tap (8 KB: they stay in the first-level cache).
const BLOCK: usize = 1024;

/// Largest relative deviation of a time step from the segment's mean under which the segment
/// counts as evenly sampled and the precomputed weights are used (timestamps snapped to the
/// frame rate vary by far less); beyond, each sample's fit is on its own times.
pub const MAX_STEP_VARIATION: f64 = 0.01;

/// The median time step of `t` (s; 0 for fewer than two samples), or, where every step is
/// within [`crate::rts::MAX_STEP_RATIO`] of the shortest, the shortest: no step can then be
/// longer than that ratio times the median (which is at least the shortest), so the split
/// below is the same, and an evenly sampled recording skips the selection (a tenth of the
/// filter's time on 100,000 samples; `make bench`). With it, the longest step.
fn median_step(t: &[f64]) -> (f64, f64) {
    if t.len() < 2 {
        return (0.0, 0.0);
    }
    let (lo, hi) = step_range(t);
    if hi <= crate::rts::MAX_STEP_RATIO * lo {
        return (lo, hi);
    }
    // The median step, selected in linear time (a full sort was half the filter's time on
    // 100,000 samples; `make bench`).
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let half = steps.len() / 2;
    (
        *steps.select_nth_unstable_by(half, |a, b| a.total_cmp(b)).1,
        hi,
    )
}

/// Split sample indices into runs of present samples: a gap or a time step longer than
/// [`crate::rts::MAX_STEP_RATIO`] median steps ends a run (a dropped frame does not: its
/// segment is fitted on the samples' own times).
pub(crate) fn segments(t: &[f64], present: &[bool]) -> Vec<(usize, usize)> {
    let (median, longest) = median_step(t);
    // Every step within the ratio of the median and every sample present: one run, found
    // without the test of each sample (a tenth of the filter's time; `make bench`).
    if t.len() >= 2
        && longest <= crate::rts::MAX_STEP_RATIO * median
        && present.iter().fold(true, |a, p| a & *p)
    {
        return vec![(0, t.len())];
    }
    runs(t, present, median)
}

/// The runs of present samples of [`segments`], sample by sample, for the median step
/// `median` (s).
fn runs(t: &[f64], present: &[bool], median: f64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for k in 0..t.len() {
        let broken = k > 0 && (t[k] - t[k - 1]) > crate::rts::MAX_STEP_RATIO * median;
        if let Some(s) = start {
            if !present[k] || broken {
                out.push((s, k));
                start = None;
            }
        }
        if present[k] && start.is_none() {
            start = Some(k);
        }
    }
    if let Some(s) = start {
        out.push((s, t.len()));
    }
    out
}

/// The shortest and the longest step of `t` (at least two finite times), eight lanes at a
/// time: one running minimum is a chain of dependent instructions, as slow as the filter's
/// sums.
fn step_range(t: &[f64]) -> (f64, f64) {
    const L: usize = 8;
    let (mut lo, mut hi) = ([f64::INFINITY; L], [f64::NEG_INFINITY; L]);
    let steps = t.len() - 1;
    let whole = steps / L * L;
    for base in (0..whole).step_by(L) {
        for k in 0..L {
            let d = t[base + k + 1] - t[base + k];
            lo[k] = if d < lo[k] { d } else { lo[k] };
            hi[k] = if d > hi[k] { d } else { hi[k] };
        }
    }
    for k in whole..steps {
        let d = t[k + 1] - t[k];
        lo[0] = lo[0].min(d);
        hi[0] = hi[0].max(d);
    }
    (
        lo.iter().copied().fold(f64::INFINITY, f64::min),
        hi.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// The first sample of `t` whose step from the one before departs from `dt` by more than
/// [`MAX_STEP_VARIATION`] of it, if any. The departure |step / dt - 1| is largest at the
/// shortest or the longest step (it falls, then rises, with the step, rounding included), so
/// those two are tested first and an even segment costs no division per sample.
pub(crate) fn uneven_step(t: &[f64], dt: f64) -> Option<usize> {
    let off = |d: f64| (d / dt - 1.0).abs() > MAX_STEP_VARIATION;
    if t.len() < 2 {
        return None;
    }
    let (lo, hi) = step_range(t);
    if !(off(lo) || off(hi)) {
        return None;
    }
    (1..t.len()).find(|&k| off(t[k] - t[k - 1]))
}

impl Differentiator for SavGol {
    fn differentiate(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<Derivatives, SignalError> {
        crate::check_input(name, t, values, present)?;
        let n = t.len();
        let m = self.coefficients.half;
        let w = self.window;
        // NaN where nothing is fitted. (Zeroed outputs, NaN written only where nothing is
        // fitted, were slower: zeroed memory is fresh pages from the system, faulted in on
        // every call, where these reuse the allocator's; `make bench`, 12.6 -> 20 ms.)
        let mut out = Derivatives::rejected(n);
        for (s, e) in segments(t, present) {
            let len = e - s;
            if len < w {
                continue; // Too short for the window: stays rejected.
            }
            let dt = (t[e - 1] - t[s]) / (len - 1) as f64;
            let x = &values[s..e];
            // The precomputed weights assume one sample interval; a varying one is fitted on
            // the samples' own times.
            match uneven_step(&t[s..e], dt).map(|k| s + k) {
                None => {
                    let (v, r, a) = (&mut out.value, &mut out.rate, &mut out.accel);
                    self.filter3_into(x, dt, [&mut v[s..e], &mut r[s..e], &mut a[s..e]]);
                }
                Some(k) if self.mode != EdgeMode::Interp => {
                    return Err(SignalError::BadInput {
                        name: name.into(),
                        reason: format!(
                            "the time step varies ({:.6} s at sample {k} against a mean of {dt:.6} s) and edges '{}' extend a segment as if evenly sampled: use edges 'interp', which fits the first and last windows on their own times",
                            t[k] - t[k - 1],
                            self.mode.name()
                        ),
                    });
                }
                Some(_) => {
                    let (v, r, a) = (&mut out.value, &mut out.rate, &mut out.accel);
                    self.uneven_into(&t[s..e], x, [&mut v[s..e], &mut r[s..e], &mut a[s..e]]);
                }
            }
            for i in 0..len {
                out.provenance[s + i] = if i < m || i + m >= len {
                    Provenance::Edge
                } else {
                    Provenance::Measured
                };
            }
        }
        Ok(out)
    }

    fn describe(&self) -> String {
        format!(
            "Savitzky-Golay, window {} samples, order {}, edges '{}'",
            self.window,
            self.order,
            self.mode.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A polynomial of degree <= order is reproduced exactly, with its derivatives, everywhere
    /// including the edges (tolerance: rounding of a 21-term dot product, 1e-9 relative).
    /// The runs of present samples are those of a plain scan (a sample starts a run where it
    /// is present and the one before is absent or more than 2.5 median steps back), on even
    /// and uneven times with and without absent samples, long steps among them: the
    /// shortcut for even, complete recordings changes nothing.
    #[test]
    fn segments_match_a_plain_scan() {
        // the median by a full sort, every sample tested
        let plain = |t: &[f64], present: &[bool]| -> Vec<(usize, usize)> {
            let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
            steps.sort_by(f64::total_cmp);
            runs(t, present, steps[steps.len() / 2])
        };
        let mut g = flexbench_contracts::gauss::Gauss::new(7);
        for case in 0..40 {
            let n = 50 + case;
            let mut t = vec![0.0];
            for k in 1..n {
                let step = match case % 4 {
                    0 => 0.01,
                    1 => 0.01 * (1.0 + 0.3 * g.uniform()),
                    2 if k % 17 == 0 => 0.04,
                    _ => 0.01 * (1.0 + 0.01 * g.uniform()),
                };
                t.push(t[k - 1] + step);
            }
            let present: Vec<bool> = (0..n).map(|k| case % 3 != 0 || k % 11 != 5).collect();
            assert_eq!(segments(&t, &present), plain(&t, &present), "case {case}");
        }
    }

    #[test]
    fn reproduces_polynomials_with_time_scaling() {
        let sg = SavGol::new(21, 4).unwrap();
        let dt = 1e-3;
        let t: Vec<f64> = (0..200).map(|k| 0.3 + k as f64 * dt).collect();
        let f = |t: f64| 2.0 - 3.0 * t + 5.0 * t * t - 7.0 * t.powi(3) + 0.5 * t.powi(4);
        let df = |t: f64| -3.0 + 10.0 * t - 21.0 * t * t + 2.0 * t.powi(3);
        let ddf = |t: f64| 10.0 - 42.0 * t + 6.0 * t * t;
        let x: Vec<f64> = t.iter().map(|&t| f(t)).collect();
        let d = sg.differentiate("p", &t, &x, &[true; 200]).unwrap();
        for (k, &tk) in t.iter().enumerate() {
            assert!((d.value[k] - f(tk)).abs() < 1e-10, "value {k}");
            assert!(
                (d.rate[k] - df(tk)).abs() < 1e-7,
                "rate {k}: {} vs {}",
                d.rate[k],
                df(tk)
            );
            assert!(
                (d.accel[k] - ddf(tk)).abs() < 1e-4,
                "accel {k}: {} vs {}",
                d.accel[k],
                ddf(tk)
            );
        }
        assert_eq!(d.provenance[0], Provenance::Edge);
        assert_eq!(d.provenance[100], Provenance::Measured);
    }

    /// Centred weights equal scipy.signal.savgol_coeffs(5, 2, deriv=d, delta=1, use="dot")
    /// (exact rationals: d0 = [-3, 12, 17, 12, -3]/35, d1 = [-2, -1, 0, 1, 2]/10,
    /// d2 = [2, -1, -2, -1, 2]/7).
    #[test]
    fn centred_weights_match_the_classic_tables() {
        let sg = SavGol::new(5, 2).unwrap();
        let c = sg.coefficients();
        let m = 2.0;
        let d0 = [
            -3.0 / 35.0,
            12.0 / 35.0,
            17.0 / 35.0,
            12.0 / 35.0,
            -3.0 / 35.0,
        ];
        let d1 = [-0.2, -0.1, 0.0, 0.1, 0.2];
        let d2 = [2.0 / 7.0, -1.0 / 7.0, -2.0 / 7.0, -1.0 / 7.0, 2.0 / 7.0];
        for i in 0..5 {
            assert!((c.weights[0][2][i] - d0[i]).abs() < 1e-14);
            assert!((c.weights[1][2][i] / m - d1[i]).abs() < 1e-14);
            assert!((c.weights[2][2][i] / (m * m) - d2[i]).abs() < 1e-14);
        }
    }

    /// Unevenly sampled (steps from 0.6 to 1.4 of the mean, and a dropped sample): a polynomial
    /// of degree <= order is reproduced with its derivatives everywhere, edges included, and on
    /// an even grid the uneven fit equals the precomputed weights (1e-10 relative).
    #[test]
    fn uneven_steps_fitted_on_their_own_times() {
        let sg = SavGol::new(11, 4).unwrap();
        let dt = 1.0 / 240.0;
        let mut t: Vec<f64> = (0..120)
            .map(|k| (k as f64 + 0.2 * (k as f64 * 2.399963).sin()) * dt)
            .collect();
        t.remove(60);
        let f = |t: f64| 0.1 - 0.4 * t + 3.0 * t * t - 7.0 * t.powi(3) + 9.0 * t.powi(4);
        let df = |t: f64| -0.4 + 6.0 * t - 21.0 * t * t + 36.0 * t.powi(3);
        let ddf = |t: f64| 6.0 - 42.0 * t + 108.0 * t * t;
        let x: Vec<f64> = t.iter().map(|&t| f(t)).collect();
        let d = sg.differentiate("p", &t, &x, &vec![true; t.len()]).unwrap();
        for (k, &tk) in t.iter().enumerate() {
            assert!((d.value[k] - f(tk)).abs() < 1e-12, "value {k}");
            assert!((d.rate[k] - df(tk)).abs() < 1e-9, "rate {k}");
            assert!(
                (d.accel[k] - ddf(tk)).abs() < 1e-6,
                "accel {k}: {}",
                d.accel[k]
            );
        }
        // The even grid through the uneven fit against the weights.
        let t: Vec<f64> = (0..60).map(|k| k as f64 * dt).collect();
        let x: Vec<f64> = t
            .iter()
            .map(|&t| (9.0 * t).sin() + (31.0 * t).cos())
            .collect();
        let even = sg.differentiate("p", &t, &x, &[true; 60]).unwrap();
        let (mut v, mut r, mut a) = (vec![0.0; 60], vec![0.0; 60], vec![0.0; 60]);
        sg.uneven_into(&t, &x, [&mut v, &mut r, &mut a]);
        for k in 0..60 {
            assert!((v[k] - even.value[k]).abs() < 1e-10);
            assert!((r[k] - even.rate[k]).abs() < 1e-10 * 31.0);
            assert!(
                (a[k] - even.accel[k]).abs() < 1e-10 * 31.0 * 31.0,
                "accel {k}"
            );
        }
        // Mirror edges are defined on an even grid only: refused, with the fix named.
        let t: Vec<f64> = (0..40)
            .map(|k| (k as f64 + 0.2 * (k as f64).sin()) * dt)
            .collect();
        let e = SavGol::new(11, 4)
            .unwrap()
            .with_mode(EdgeMode::Mirror)
            .differentiate("p", &t, &t, &[true; 40])
            .unwrap_err();
        assert!(e.to_string().contains("'interp'"), "{e}");
    }

    /// The three derivatives in one pass are the three single passes, bit for bit, in every
    /// edge mode.
    #[test]
    fn one_pass_equals_three() {
        let x: Vec<f64> = (0..3000)
            .map(|k| (k as f64 * 0.013).sin() + 1e-3 * ((k * 7919) % 13) as f64)
            .collect();
        for mode in [
            EdgeMode::Interp,
            EdgeMode::Mirror,
            EdgeMode::Nearest,
            EdgeMode::Wrap,
        ] {
            let sg = SavGol::new(21, 5).unwrap().with_mode(mode);
            let mut three = [vec![0.0; 3000], vec![0.0; 3000], vec![0.0; 3000]];
            for (d, o) in three.iter_mut().enumerate() {
                sg.filter_into(&x, 1e-3, d, o);
            }
            let (mut a, mut b, mut c) = (vec![0.0; 3000], vec![0.0; 3000], vec![0.0; 3000]);
            sg.filter3_into(&x, 1e-3, [&mut a, &mut b, &mut c]);
            for (one, many) in [(&a, &three[0]), (&b, &three[1]), (&c, &three[2])] {
                assert!(one
                    .iter()
                    .zip(many.iter())
                    .all(|(p, q)| p.to_bits() == q.to_bits()));
            }
            // The interior as a plain dot product per output, as the filter was first written.
            for (d, o) in three.iter().enumerate() {
                let scale = (1.0 / (10.0 * 1e-3f64)).powi(d as i32);
                for i in 10..2990 {
                    let dot: f64 = sg.coefficients().weights[d][10]
                        .iter()
                        .zip(&x[i - 10..i + 11])
                        .map(|(h, v)| h * v)
                        .sum();
                    assert_eq!(
                        (dot * scale).to_bits(),
                        o[i].to_bits(),
                        "deriv {d}, sample {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn gaps_are_not_bridged() {
        let sg = SavGol::new(5, 2).unwrap();
        let t: Vec<f64> = (0..30).map(|k| k as f64 * 0.01).collect();
        let x: Vec<f64> = t.iter().map(|t| t * t).collect();
        let mut present = vec![true; 30];
        for p in present.iter_mut().take(14).skip(10) {
            *p = false;
        }
        present[16] = false;
        present[20] = false;
        // Runs: 0..10 (10 samples), 14..16 (2), 17..20 (3), 21..30 (9): the two short ones
        // are shorter than the window and rejected.
        let d = sg.differentiate("x", &t, &x, &present).unwrap();
        assert!(d.value[12].is_nan() && d.provenance[12] == Provenance::Rejected);
        assert!(d.value[14].is_nan() && d.provenance[15] == Provenance::Rejected);
        assert!((d.accel[25] - 2.0).abs() < 1e-9);
        assert!(d.accel[17].is_nan() && d.provenance[18] == Provenance::Rejected);
        assert!((d.accel[5] - 2.0).abs() < 1e-9 && d.provenance[9] == Provenance::Edge);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(SavGol::new(4, 2).is_err());
        assert!(SavGol::new(3, 3).is_err());
        assert!(SavGol::new(7, 1).is_err());
    }
}
