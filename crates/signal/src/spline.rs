//! Woltring's generalized cross-validated smoothing spline (GCVSPL; Woltring 1986, *Adv. Eng.
//! Software* 8): the natural spline of degree 2m - 1 (m = 3: the quintic spline of the
//! biomechanics labs) that minimises
//!
//! ```text
//! sum_i (y_i - s(t_i))^2 + p * integral (s^(m)(t))^2 dt
//! ```
//!
//! over a run of samples, its smoothing parameter p chosen by generalized cross-validation
//! (Craven & Wahba 1979: the p minimising GCV(p) = (RSS/n) / (1 - tr A(p) / n)^2, A the hat
//! matrix), by the known noise variance (Woltring's mode 3: the p minimising the estimated
//! mean squared error RSS/n - sigma^2 + 2 sigma^2 tr A / n, Mallows' C_p), or given.
//!
//! The minimiser over all functions with a square-integrable m-th derivative is a spline of
//! degree 2m - 1 with a knot at each sample (natural outside the samples), so it is sought in
//! the B-spline basis of order 2m on the samples as knots: n + 2m - 2 coefficients c solving
//! the banded system (B^T B + p Omega) c = B^T y, B the basis at the samples (2m non-zero per
//! row), Omega_jl = integral B_j^(m) B_l^(m) dt (Gauss-Legendre with m points per interval,
//! exact for the products' degree 2m - 2). Both are banded (half-bandwidth 2m - 1): the
//! factorisation is LDL^T in band storage, and tr A = tr((B^T B + p Omega)^-1 B^T B) takes only
//! the inverse's entries inside the band, found by the Takahashi recurrence from the factors
//! (Hutchinson & de Hoog 1985): O(n m^2) per value of p, as GCVSPL.
//!
//! Derivatives to the (2m - 1)-th of the fitted spline at any time ([`RunSpline::derivative`];
//! the markers' tables take value, velocity and acceleration). Written here: no maintained
//! crate offers a smoothing spline of general order with GCV (the B-spline crates interpolate).

use crate::{check_input, Derivatives, Differentiator, Provenance, SignalError};

/// How the smoothing parameter is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Smoothing {
    /// Generalized cross-validation (GCVSPL's mode 2).
    Gcv,
    /// The noise's standard deviation known, in the input's unit (GCVSPL's mode 3).
    KnownNoise(f64),
    /// The smoothing parameter p given (GCVSPL's mode 1), in (input unit)^2 s^(2m - 1).
    Fixed(f64),
}

/// The smoothing spline of half-order `m` with its parameter's criterion: a [`Differentiator`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GcvSpline {
    /// Half the spline's order: degree 2m - 1 (3: quintic; 2: cubic).
    pub half_order: usize,
    /// How p is chosen.
    pub smoothing: Smoothing,
}

/// What the spline chose for one coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplineChoice {
    /// The smoothing parameter p, (input unit)^2 s^(2m - 1).
    pub p: f64,
    /// Effective degrees of freedom, tr A (summed over the runs).
    pub dof: f64,
    /// GCV(p), (input unit)^2.
    pub gcv: f64,
    /// RMS of the residuals y - s(t), input unit.
    pub rms_residual: f64,
    /// The noise's standard deviation estimated as RSS / (n - tr A), input unit.
    pub noise: f64,
}

/// Decades of p about the balance of the data and penalty terms (the ratio of their traces)
/// within which the span of the search is looked for.
const SEARCH_DECADES: (f64, f64) = (-30.0, 30.0);
/// The search's span: from tr A at this share of the samples down to this share above the
/// penalty's null space.
const SPAN_TRACE: f64 = 0.99;
/// Grid step of the search, decades.
const SEARCH_STEP: f64 = 0.25;

impl GcvSpline {
    /// A spline of half-order `m` (1 to 5) with its criterion; an error for an order out of
    /// range, or a noise or p that is not a positive number.
    pub fn new(half_order: usize, smoothing: Smoothing) -> Result<GcvSpline, SignalError> {
        let bad = |reason: String| SignalError::BadFilter { reason };
        if !(1..=5).contains(&half_order) {
            return Err(bad(format!(
                "smoothing spline half-order {half_order}: give 1 to 5 (3: the quintic spline, degree 5)"
            )));
        }
        match smoothing {
            Smoothing::KnownNoise(s) | Smoothing::Fixed(s) if !(s.is_finite() && s > 0.0) => {
                Err(bad(format!(
                    "{s}: the noise or smoothing parameter must be a positive number"
                )))
            }
            _ => Ok(GcvSpline {
                half_order,
                smoothing,
            }),
        }
    }

    /// The fewest consecutive samples a run needs: twice the spline's order.
    pub fn shortest_run(&self) -> usize {
        4 * self.half_order
    }

    /// Smooth and differentiate one coordinate ([`Differentiator::differentiate`]) and say what
    /// was chosen (None when no run was long enough).
    pub fn filter(
        &self,
        name: &str,
        t: &[f64],
        values: &[f64],
        present: &[bool],
    ) -> Result<(Derivatives, Option<SplineChoice>), SignalError> {
        check_input(name, t, values, present)?;
        let n = t.len();
        let mut out = Derivatives::rejected(n);
        let runs: Vec<Run> = crate::savgol::segments(t, present)
            .into_iter()
            .filter(|(s, e)| e - s >= self.shortest_run())
            .map(|(s, e)| Run::new(self.half_order, &t[s..e], &values[s..e], s))
            .collect();
        if runs.is_empty() {
            return Ok((out, None));
        }
        let p = self.choose(name, &runs)?;
        let fits = runs
            .iter()
            .map(|r| r.solve(p).ok_or_else(|| singular(name)))
            .collect::<Result<Vec<_>, _>>()?;
        for (r, f) in runs.iter().zip(&fits) {
            let spline = r.spline(&f.coef);
            for (i, &ti) in r.t.iter().enumerate() {
                let k = r.start + i;
                out.value[k] = spline.derivative(ti, 0);
                out.rate[k] = spline.derivative(ti, 1);
                out.accel[k] = spline.derivative(ti, 2);
                // The spline's end conditions (natural: zero derivatives m to 2m - 1 beyond the
                // samples) reach about m samples in.
                let edge = i < self.half_order || i + self.half_order >= r.t.len();
                out.provenance[k] = if edge {
                    Provenance::Edge
                } else {
                    Provenance::Measured
                };
            }
        }
        Ok((out, Some(summarise(p, &fits))))
    }

    /// The smoothing parameter by the criterion, on log10 p: the span from nearly interpolating
    /// (tr A at [`SPAN_TRACE`] of the samples) to nearly the penalty's null space (tr A within
    /// that share of the samples above it), found by bisection (tr A falls as p grows), a grid
    /// of [`SEARCH_STEP`] decades across it, then golden-section search between the best grid
    /// point's neighbours.
    fn choose(&self, name: &str, runs: &[Run]) -> Result<f64, SignalError> {
        let score: Box<dyn Fn(f64) -> f64> = match self.smoothing {
            Smoothing::Fixed(p) => return Ok(p),
            Smoothing::Gcv => Box::new(|p| criterion(runs, p, None)),
            Smoothing::KnownNoise(s) => Box::new(move |p| criterion(runs, p, Some(s))),
        };
        let n: usize = runs.iter().map(|r| r.t.len()).sum();
        let null = (self.half_order * runs.len()) as f64;
        let slack = (1.0 - SPAN_TRACE) * n as f64;
        let anchor = (runs.iter().map(|r| r.gram_trace).sum::<f64>()
            / runs.iter().map(|r| r.penalty_trace).sum::<f64>())
        .log10();
        let lo = trace_crossing(runs, n as f64 - slack, anchor);
        let hi = trace_crossing(runs, null + slack, anchor);
        let steps = (((hi - lo) / SEARCH_STEP).ceil() as usize).max(8);
        let grid: Vec<(f64, f64)> = (0..=steps)
            .map(|k| {
                let lp = lo + (hi - lo) * k as f64 / steps as f64;
                (lp, score(10f64.powf(lp)))
            })
            .collect();
        let best = grid
            .iter()
            .enumerate()
            .filter(|(_, g)| g.1.is_finite())
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .map(|(k, _)| k)
            .ok_or_else(|| singular(name))?;
        let a = grid[best.saturating_sub(1)].0;
        let b = grid[(best + 1).min(steps)].0;
        Ok(10f64.powf(golden_section(|lp| score(10f64.powf(lp)), a, b, 1e-9)))
    }
}

/// The log10 p at which the runs' summed tr A falls to `target`, by bisection over
/// [`SEARCH_DECADES`] about `anchor` (a failed system counts as interpolating).
fn trace_crossing(runs: &[Run], target: f64, anchor: f64) -> f64 {
    let trace = |lp: f64| -> f64 {
        let p = 10f64.powf(lp);
        runs.iter()
            .map(|r| r.solve(p).map_or(r.t.len() as f64, |f| f.trace))
            .sum()
    };
    let (mut a, mut b) = (anchor + SEARCH_DECADES.0, anchor + SEARCH_DECADES.1);
    for _ in 0..60 {
        let mid = 0.5 * (a + b);
        match trace(mid) > target {
            true => a = mid,
            false => b = mid,
        }
    }
    0.5 * (a + b)
}

impl GcvSpline {
    /// The spline of one run of samples `t`, `y` (every sample present) at smoothing `p`, with
    /// its residual sum of squares and effective degrees of freedom tr A; None when the system
    /// is not positive definite. For references and studies; [`GcvSpline::filter`] is the
    /// stage's entry.
    pub fn fit_run(&self, t: &[f64], y: &[f64], p: f64) -> Option<(RunSpline, f64, f64)> {
        let run = Run::new(self.half_order, t, y, 0);
        let fit = run.solve(p)?;
        Some((run.spline(&fit.coef), fit.rss, fit.trace))
    }
}

impl Differentiator for GcvSpline {
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
        let degree = 2 * self.half_order - 1;
        let how = match self.smoothing {
            Smoothing::Gcv => "smoothing by generalized cross-validation".to_string(),
            Smoothing::KnownNoise(s) => {
                format!("smoothing for a known noise of {s:e} (mean squared error minimised)")
            }
            Smoothing::Fixed(p) => format!("smoothing parameter {p:e}"),
        };
        format!(
            "natural smoothing spline of degree {degree} (Woltring's GCVSPL, m = {}), {how}; derivatives of the spline",
            self.half_order
        )
    }
}

/// The error of a run's system that could not be factored.
fn singular(name: &str) -> SignalError {
    SignalError::BadInput {
        name: name.into(),
        reason: "the smoothing spline's system is singular for every smoothing tried (samples too close in time, or values not finite)".into(),
    }
}

/// GCV(p) over the runs pooled, or with a known noise `sigma` the estimated mean squared error;
/// infinite where a system fails or the fit interpolates.
fn criterion(runs: &[Run], p: f64, sigma: Option<f64>) -> f64 {
    let (mut rss, mut tr, mut n) = (0.0, 0.0, 0usize);
    for r in runs {
        let Some(f) = r.solve(p) else {
            return f64::INFINITY;
        };
        rss += f.rss;
        tr += f.trace;
        n += r.t.len();
    }
    let n = n as f64;
    match sigma {
        None if 1.0 - tr / n > 1e-6 => (rss / n) / (1.0 - tr / n).powi(2),
        None => f64::INFINITY,
        Some(s) => rss / n - s * s + 2.0 * s * s * tr / n,
    }
}

/// The choice's summary over the runs' fits at `p`.
fn summarise(p: f64, fits: &[RunFit]) -> SplineChoice {
    let (rss, tr, n) = fits.iter().fold((0.0, 0.0, 0usize), |(a, b, c), f| {
        (a + f.rss, b + f.trace, c + f.n)
    });
    let nf = n as f64;
    SplineChoice {
        p,
        dof: tr,
        gcv: (rss / nf) / (1.0 - tr / nf).powi(2),
        rms_residual: (rss / nf).sqrt(),
        noise: (rss / (nf - tr).max(f64::MIN_POSITIVE)).sqrt(),
    }
}

/// The minimum of `f` on [a, b] by golden-section search, to `tol` in the argument.
fn golden_section(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64, tol: f64) -> f64 {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    while (b - a).abs() > tol {
        if fc < fd {
            (b, d, fd) = (d, c, fc);
            c = b - g * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    0.5 * (a + b)
}

/// One run of samples with its spline's banded matrices: B^T B, Omega, B^T y.
struct Run {
    /// Its first sample's index in the whole series.
    start: usize,
    t: Vec<f64>,
    y: Vec<f64>,
    /// The B-spline basis: order 2m, the samples as knots (the ends repeated).
    basis: Basis,
    /// Per sample, its first non-zero basis function and the 2m values there (the rows of B,
    /// made once: every trial of p needs them for its residual).
    rows: Vec<(usize, Vec<f64>)>,
    /// B^T B and Omega in lower band storage.
    gram: Band,
    penalty: Band,
    /// B^T y.
    bty: Vec<f64>,
    /// The traces of B^T B and Omega (their balance starts the search).
    gram_trace: f64,
    penalty_trace: f64,
}

/// A run's fit at one p: the coefficients, the residual sum of squares, tr A, the samples.
struct RunFit {
    coef: Vec<f64>,
    rss: f64,
    trace: f64,
    n: usize,
}

impl Run {
    /// The run `t`, `y` (its first sample `start` in the series) with its matrices.
    fn new(m: usize, t: &[f64], y: &[f64], start: usize) -> Run {
        let basis = Basis::on(t, 2 * m);
        let nb = basis.count();
        let b = 2 * m - 1;
        let (mut gram, mut penalty) = (Band::zeros(nb, b), Band::zeros(nb, b));
        let mut bty = vec![0.0; nb];
        let rows: Vec<(usize, Vec<f64>)> = t
            .iter()
            .map(|&ti| {
                let (first, mut ders) = basis.derivatives(ti, 0);
                (first, ders.swap_remove(0))
            })
            .collect();
        for ((first, row), &yi) in rows.iter().zip(y) {
            for (a, va) in row.iter().enumerate() {
                bty[first + a] += va * yi;
                for (c, vc) in row.iter().enumerate().take(a + 1) {
                    gram.add(first + a, first + c, va * vc);
                }
            }
        }
        let (nodes, weights) = gauss_legendre(m);
        for w in t.windows(2) {
            let (lo, h) = (w[0], w[1] - w[0]);
            for (x, wq) in nodes.iter().zip(&weights) {
                let at = lo + 0.5 * h * (x + 1.0);
                let (first, ders) = basis.derivatives(at, m);
                let dm = &ders[m];
                for (a, va) in dm.iter().enumerate() {
                    for (c, vc) in dm.iter().enumerate().take(a + 1) {
                        penalty.add(first + a, first + c, 0.5 * h * wq * va * vc);
                    }
                }
            }
        }
        let (gram_trace, penalty_trace) = (gram.trace(), penalty.trace());
        Run {
            start,
            t: t.to_vec(),
            y: y.to_vec(),
            basis,
            rows,
            gram,
            penalty,
            bty,
            gram_trace,
            penalty_trace,
        }
    }

    /// The fit at `p`: (B^T B + p Omega) c = B^T y, with RSS and tr A; None when the system is
    /// not positive definite.
    fn solve(&self, p: f64) -> Option<RunFit> {
        let system = self.gram.plus_scaled(&self.penalty, p);
        let factors = system.ldlt()?;
        let coef = factors.solve(&self.bty);
        let rss = self
            .rows
            .iter()
            .zip(&self.y)
            .map(|((first, row), &yi)| {
                let s: f64 = row
                    .iter()
                    .enumerate()
                    .map(|(a, v)| v * coef[first + a])
                    .sum();
                (yi - s).powi(2)
            })
            .sum();
        let trace = factors.selected_inverse().trace_with(&self.gram);
        Some(RunFit {
            coef,
            rss,
            trace,
            n: self.t.len(),
        })
    }

    /// The fitted spline of coefficients `coef`.
    fn spline(&self, coef: &[f64]) -> RunSpline {
        RunSpline {
            basis: self.basis.clone(),
            coef: coef.to_vec(),
        }
    }
}

/// A fitted spline of one run: its basis and coefficients.
#[derive(Debug, Clone)]
pub struct RunSpline {
    basis: Basis,
    coef: Vec<f64>,
}

impl RunSpline {
    /// The spline's `order`-th derivative at `x` (within the run's samples' span), input unit per
    /// s^order; zero above the spline's degree.
    pub fn derivative(&self, x: f64, order: usize) -> f64 {
        if order >= self.basis.order {
            return 0.0;
        }
        let (first, ders) = self.basis.derivatives(x, order);
        ders[order]
            .iter()
            .enumerate()
            .map(|(a, v)| v * self.coef[first + a])
            .sum()
    }
}

/// A B-spline basis of order `order` (degree order - 1) on knots: the samples, the first and
/// last repeated `order` times.
#[derive(Debug, Clone)]
struct Basis {
    knots: Vec<f64>,
    order: usize,
}

impl Basis {
    /// The basis of `order` with the samples `t` as knots.
    fn on(t: &[f64], order: usize) -> Basis {
        let (first, last) = (t[0], t[t.len() - 1]);
        let mut knots = vec![first; order - 1];
        knots.extend_from_slice(t);
        knots.extend(std::iter::repeat_n(last, order - 1));
        Basis { knots, order }
    }

    /// Number of basis functions.
    fn count(&self) -> usize {
        self.knots.len() - self.order
    }

    /// The index of the first basis function non-zero at `x`, and the `order` non-zero
    /// functions' derivatives 0 to `upto` there (`ders[d][a]`: the d-th derivative of function
    /// first + a). The Cox-de Boor recurrence with its derivatives (Piegl & Tiller, *The NURBS
    /// Book*, algorithm A2.3); `x` at the last knot belongs to the last interval.
    fn derivatives(&self, x: f64, upto: usize) -> (usize, Vec<Vec<f64>>) {
        let p = self.order - 1;
        let u = &self.knots;
        let nb = self.count();
        // The knot span: u[span] <= x < u[span + 1], span in p..nb.
        let span = match x >= u[nb] {
            true => nb - 1,
            false => u[p..=nb].partition_point(|&k| k <= x) + p - 1,
        };
        let mut ndu = vec![vec![0.0; p + 1]; p + 1];
        ndu[0][0] = 1.0;
        let (mut left, mut right) = (vec![0.0; p + 1], vec![0.0; p + 1]);
        for j in 1..=p {
            left[j] = x - u[span + 1 - j];
            right[j] = u[span + j] - x;
            let mut saved = 0.0;
            for r in 0..j {
                ndu[j][r] = right[r + 1] + left[j - r];
                let temp = ndu[r][j - 1] / ndu[j][r];
                ndu[r][j] = saved + right[r + 1] * temp;
                saved = left[j - r] * temp;
            }
            ndu[j][j] = saved;
        }
        let upto = upto.min(p);
        let mut ders = vec![vec![0.0; p + 1]; upto + 1];
        for j in 0..=p {
            ders[0][j] = ndu[j][p];
        }
        let mut a = [vec![0.0; p + 1], vec![0.0; p + 1]];
        for r in 0..=p {
            let (mut s1, mut s2) = (0usize, 1usize);
            a[0][0] = 1.0;
            for k in 1..=upto {
                let mut d = 0.0;
                let (rk, pk) = (r as i64 - k as i64, p - k);
                if r >= k {
                    a[s2][0] = a[s1][0] / ndu[pk + 1][rk as usize];
                    d = a[s2][0] * ndu[rk as usize][pk];
                }
                let j1 = if rk >= -1 { 1 } else { (-rk) as usize };
                let j2 = if r as i64 - 1 <= pk as i64 {
                    k - 1
                } else {
                    p - r
                };
                for j in j1..=j2 {
                    let i = (rk + j as i64) as usize;
                    a[s2][j] = (a[s1][j] - a[s1][j - 1]) / ndu[pk + 1][i];
                    d += a[s2][j] * ndu[i][pk];
                }
                if r <= pk {
                    a[s2][k] = -a[s1][k - 1] / ndu[pk + 1][r];
                    d += a[s2][k] * ndu[r][pk];
                }
                ders[k][r] = d;
                std::mem::swap(&mut s1, &mut s2);
            }
        }
        let mut factor = p as f64;
        for (k, row) in ders.iter_mut().enumerate().skip(1) {
            for v in row.iter_mut() {
                *v *= factor;
            }
            factor *= (p - k) as f64;
        }
        (span - p, ders)
    }
}

/// The Gauss-Legendre rule of `n` points on [-1, 1]: nodes and weights (Newton's method on the
/// Legendre polynomial from Chebyshev's estimates, to round-off).
fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut nodes, mut weights) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        let mut dp = 1.0;
        for _ in 0..100 {
            // P_n(x) and its derivative by the three-term recurrence.
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=n {
                let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                (p0, p1) = (p1, p2);
            }
            let pn = if n == 0 {
                1.0
            } else if n == 1 {
                x
            } else {
                p1
            };
            let pm = if n == 1 { 1.0 } else { p0 };
            dp = n as f64 * (x * pn - pm) / (x * x - 1.0);
            let dx = pn / dp;
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        nodes.push(x);
        weights.push(2.0 / ((1.0 - x * x) * dp * dp));
    }
    (nodes, weights)
}

/// A symmetric banded matrix in lower band storage: `rows[i][d]` = M(i, i - d), d = 0..=band.
#[derive(Debug, Clone)]
struct Band {
    rows: Vec<Vec<f64>>,
    band: usize,
}

impl Band {
    fn zeros(n: usize, band: usize) -> Band {
        Band {
            rows: vec![vec![0.0; band + 1]; n],
            band,
        }
    }

    /// M(i, j) += v for j <= i within the band.
    fn add(&mut self, i: usize, j: usize, v: f64) {
        self.rows[i][i - j] += v;
    }

    /// M(i, j) for any i, j (zero outside the band).
    fn get(&self, i: usize, j: usize) -> f64 {
        let (hi, lo) = if i >= j { (i, j) } else { (j, i) };
        match hi - lo <= self.band {
            true => self.rows[hi][hi - lo],
            false => 0.0,
        }
    }

    fn trace(&self) -> f64 {
        self.rows.iter().map(|r| r[0]).sum()
    }

    /// self + p other.
    fn plus_scaled(&self, other: &Band, p: f64) -> Band {
        let rows = self
            .rows
            .iter()
            .zip(&other.rows)
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x + p * y).collect())
            .collect();
        Band {
            rows,
            band: self.band,
        }
    }

    /// M = L D L^T, L unit lower triangular within the band; None unless every pivot is
    /// positive (and finite).
    #[allow(clippy::needless_range_loop)] // k indexes L's rows and D alike, as the formulas do
    fn ldlt(&self) -> Option<Ldlt> {
        let (n, b) = (self.rows.len(), self.band);
        let mut l = Band::zeros(n, b);
        let mut d = vec![0.0; n];
        for j in 0..n {
            let k0 = j.saturating_sub(b);
            let mut dj = self.rows[j][0];
            for k in k0..j {
                dj -= l.rows[j][j - k].powi(2) * d[k];
            }
            if !(dj > 0.0 && dj.is_finite()) {
                return None;
            }
            d[j] = dj;
            l.rows[j][0] = 1.0;
            for i in j + 1..(j + b + 1).min(n) {
                let mut v = self.rows[i][i - j];
                for k in i.saturating_sub(b)..j {
                    v -= l.rows[i][i - k] * l.rows[j][j - k] * d[k];
                }
                l.rows[i][i - j] = v / dj;
            }
        }
        Some(Ldlt { l, d })
    }

    /// tr(self other) for two symmetric matrices of the same band.
    fn trace_with(&self, other: &Band) -> f64 {
        let mut t = 0.0;
        for (a, b) in self.rows.iter().zip(&other.rows) {
            t += a[0] * b[0];
            for dd in 1..a.len().min(b.len()) {
                t += 2.0 * a[dd] * b[dd];
            }
        }
        t
    }
}

/// The factors L (unit lower, banded) and D of a symmetric positive definite banded matrix.
struct Ldlt {
    l: Band,
    d: Vec<f64>,
}

impl Ldlt {
    /// The solution of L D L^T x = rhs.
    fn solve(&self, rhs: &[f64]) -> Vec<f64> {
        let (n, b) = (self.d.len(), self.l.band);
        let mut x = rhs.to_vec();
        for i in 0..n {
            for k in i.saturating_sub(b)..i {
                x[i] -= self.l.rows[i][i - k] * x[k];
            }
        }
        for (xi, di) in x.iter_mut().zip(&self.d) {
            *xi /= di;
        }
        for i in (0..n).rev() {
            for k in i + 1..(i + b + 1).min(n) {
                x[i] -= self.l.rows[k][k - i] * x[k];
            }
        }
        x
    }

    /// The inverse's entries inside the band, by the Takahashi recurrence: from the last row
    /// up, S(j, i) = -sum_k L(k, i) S(k, j) for j > i, and S(i, i) = 1 / D(i) - sum_k L(k, i)
    /// S(k, i), k over i + 1..=i + band (Hutchinson & de Hoog 1985).
    fn selected_inverse(&self) -> Band {
        let (n, b) = (self.d.len(), self.l.band);
        let mut s = Band::zeros(n, b);
        for i in (0..n).rev() {
            let end = (i + b + 1).min(n);
            for j in (i + 1..end).rev() {
                let mut v = 0.0;
                for k in i + 1..end {
                    v -= self.l.rows[k][k - i] * s.get(k, j);
                }
                s.rows[j][j - i] = v;
            }
            let mut v = 1.0 / self.d[i];
            for k in i + 1..end {
                v -= self.l.rows[k][k - i] * s.rows[k][k - i];
            }
            s.rows[i][0] = v;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The B-spline basis is a partition of unity at every point and its derivatives sum to
    /// zero; a polynomial of degree m - 1 (the penalty's null space) is the smoothing spline of
    /// its own samples at any p, derivatives included (1e-9 relative), its residual zero.
    #[test]
    fn basis_sums_to_one_and_keeps_the_null_space() {
        let t: Vec<f64> = (0..30)
            .map(|k| 0.1 * k as f64 + 0.003 * (k as f64).sin())
            .collect();
        let basis = Basis::on(&t, 6);
        for x in [0.0, 0.05, 1.234, 2.9, t[29]] {
            let (_, ders) = basis.derivatives(x, 3);
            assert!((ders[0].iter().sum::<f64>() - 1.0).abs() < 1e-13, "{x}");
            for (d, row) in ders.iter().enumerate().skip(1) {
                assert!(row.iter().sum::<f64>().abs() < 1e-8, "{x} {d}");
            }
        }
        let y: Vec<f64> = t.iter().map(|x| 0.5 - 2.0 * x + 3.0 * x * x).collect();
        let run = Run::new(3, &t, &y, 0);
        // (p up to 1e-4 here: p Omega then outweighs B^T B a millionfold and more, and the
        // system's conditioning, not the method, sets the error beyond.)
        for p in [1e-8, 1e-6, 1e-4] {
            let fit = run.solve(p).unwrap();
            let s = run.spline(&fit.coef);
            for x in [0.0f64, 0.3, 1.7, t[29]] {
                let want = [0.5 - 2.0 * x + 3.0 * x * x, -2.0 + 6.0 * x, 6.0, 0.0];
                for (d, w) in want.iter().enumerate() {
                    let got = s.derivative(x, d);
                    assert!(
                        (got - w).abs() < 1e-9 * w.abs().max(1.0),
                        "p {p}, {x} d{d}: {got} vs {w}"
                    );
                }
            }
            assert!(fit.rss < 1e-20, "p {p}: rss {}", fit.rss);
        }
    }

    /// The selected inverse equals the dense inverse inside the band (a random banded SPD
    /// matrix, 1e-12).
    #[test]
    fn selected_inverse_is_the_inverse_in_the_band() {
        let (n, b) = (12, 3);
        let mut m = Band::zeros(n, b);
        let mut g = flexbench_contracts::gauss::Gauss::new(3);
        for i in 0..n {
            for j in i.saturating_sub(b)..i {
                m.add(i, j, 0.3 * g.next());
            }
            m.add(i, i, 4.0 + g.uniform());
        }
        let dense = nalgebra::DMatrix::from_fn(n, n, |i, j| m.get(i, j));
        let inv = dense.clone().try_inverse().unwrap();
        let s = m.ldlt().unwrap().selected_inverse();
        for i in 0..n {
            for j in i.saturating_sub(b)..=i {
                assert!((s.get(i, j) - inv[(i, j)]).abs() < 1e-12, "{i} {j}");
            }
        }
        let x = m.ldlt().unwrap().solve(&vec![1.0; n]);
        let back = &dense * nalgebra::DVector::from_vec(x);
        assert!(back.iter().all(|v| (v - 1.0).abs() < 1e-12));
    }

    /// Gauss-Legendre integrates x^(2n-1) and x^(2n-2) exactly on [-1, 1].
    #[test]
    fn gauss_legendre_is_exact() {
        for n in 1..=6 {
            let (x, w) = gauss_legendre(n);
            let q = |k: i32| x.iter().zip(&w).map(|(x, w)| w * x.powi(k)).sum::<f64>();
            let k = 2 * n as i32 - 2;
            assert!((q(k) - 2.0 / (k + 1) as f64).abs() < 1e-14, "{n}");
            assert!(q(k + 1).abs() < 1e-14, "{n}");
        }
    }
}
