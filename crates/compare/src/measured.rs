//! Computed against measured on their own clocks: a joint's torque or force from the inverse
//! dynamics (the process stage's forces table, at the recording's samples) against the same
//! quantity measured by the rig (a motor's current times its torque constant, a load cell), on
//! the logger's own samples. No crank angle is needed: the comparison is in time.
//!
//! - The computed series is carried to the measured times by a natural cubic spline (its
//!   error is the fourth power of the step times the fourth derivative, far below a rig's
//!   noise at the rates the process stage needs); measured samples outside the computed span
//!   are left out and counted.
//! - RMS and mean of measured - computed, each one's RMS and peak (largest |value|, its time),
//!   their correlation.
//! - The lag: the shift L (s) for which measured(t) - computed(t - L) varies least (an offset
//!   does not pull it) over the samples every shift keeps, on the computed step's grid within
//!   +-`max_lag`, refined by golden section; positive when the measurement comes late. The RMS
//!   after the shift is stated beside.
//! - The share the friction model explains: with the computed series also given without the
//!   mechanism file's friction, 1 - SSE(with) / SSE(without) once the clocks are aligned by the
//!   lag, the fraction of the frictionless model's squared error against the measurement that
//!   the friction law takes away (1: all of it; 0: none; below 0: the friction law makes it
//!   worse).

use flexbench_signal::resample::CubicSpline;

use crate::CompareError;

/// A series on its own clock: times (s, finite, strictly increasing) and values (finite, the
/// quantity's unit).
#[derive(Debug, Clone, Copy)]
pub struct TimeSeries<'a> {
    /// Times, s.
    pub t: &'a [f64],
    /// Values, in the quantity's unit.
    pub v: &'a [f64],
}

/// What a comparison of a computed series with a measured one asks.
#[derive(Debug, Clone, Copy)]
pub struct MeasuredOptions<'a> {
    /// The quantity's name for messages (a forces-table column: `motor_torque`).
    pub what: &'a str,
    /// The largest lag searched, s.
    pub max_lag: f64,
    /// The computed series without the friction of the mechanism file, on the computed series'
    /// times, when the file has friction.
    pub without_friction: Option<&'a [f64]>,
}

/// A computed series against a measured one, in the quantity's unit and s; its record's keys
/// (`measured.json`) are the fields' names, the lag's `lag_s`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeasuredComparison {
    /// Measured samples within the computed span (compared).
    pub samples: usize,
    /// Measured samples outside the computed span (left out).
    pub outside: usize,
    /// RMS of measured - computed.
    pub rms_difference: f64,
    /// Mean of measured - computed (an offset the model does not hold).
    pub mean_difference: f64,
    /// RMS of the computed series at the compared samples.
    pub computed_rms: f64,
    /// RMS of the measured samples compared.
    pub measured_rms: f64,
    /// The computed series' largest |value| (signed) and its time (s), at the compared samples.
    pub computed_peak: (f64, f64),
    /// The measured series' largest |value| (signed) and its time (s).
    pub measured_peak: (f64, f64),
    /// Pearson's correlation of the two at the compared samples (NaN for a constant series).
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub correlation: f64,
    /// The lag of the measurement behind the computed series, s.
    #[serde(rename = "lag_s")]
    pub lag: f64,
    /// Whether the lag sits at the search's bound (the true one may be larger).
    pub lag_at_bound: bool,
    /// RMS of measured(t) - computed(t - lag) over the measured samples the shift keeps in
    /// the computed span.
    pub rms_after_lag: f64,
    /// The same RMS with the computed series without the friction model, when given.
    pub rms_without_friction: Option<f64>,
    /// 1 - SSE(with friction) / SSE(without), both after the lag (the clocks aligned), when the
    /// frictionless series is given.
    pub friction_share: Option<f64>,
}

/// Check that a series' times are finite and strictly increasing and its values finite.
fn check(what: &str, side: &str, s: &TimeSeries) -> Result<(), CompareError> {
    let bad = |reason: String| CompareError::Series {
        what: what.into(),
        side: side.into(),
        reason,
    };
    if s.t.len() != s.v.len() {
        return Err(bad(format!("{} times for {} values", s.t.len(), s.v.len())));
    }
    if s.t.len() < 2 {
        return Err(bad("fewer than two samples".into()));
    }
    if let Some(i) = (0..s.t.len()).find(|&i| !s.t[i].is_finite() || !s.v[i].is_finite()) {
        return Err(bad(format!(
            "sample {i} is not finite (t = {}, value {}): drop it or fill the gap first",
            s.t[i], s.v[i]
        )));
    }
    if let Some(i) = (1..s.t.len()).find(|&i| s.t[i] <= s.t[i - 1]) {
        return Err(bad(format!(
            "times do not increase at sample {i} (t = {} after {}): sort the samples and drop repeated times",
            s.t[i], s.t[i - 1]
        )));
    }
    Ok(())
}

/// The largest |value| (signed) and its time.
fn peak(t: &[f64], v: &[f64]) -> (f64, f64) {
    t.iter().zip(v).fold((0.0, f64::NAN), |(p, tp), (ti, vi)| {
        if vi.abs() > p.abs() || tp.is_nan() {
            (*vi, *ti)
        } else {
            (p, tp)
        }
    })
}

fn rms(x: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = x.fold((0.0, 0usize), |(s, n), v| (s + v * v, n + 1));
    (s / n.max(1) as f64).sqrt()
}

/// Compare `computed` (the inverse dynamics' series) with `measured` on its own clock.
pub fn compare_measured(
    computed: TimeSeries,
    measured: TimeSeries,
    options: &MeasuredOptions,
) -> Result<MeasuredComparison, CompareError> {
    let what = options.what;
    check(what, "computed", &computed)?;
    check(what, "measured", &measured)?;
    let (c0, c1) = (computed.t[0], computed.t[computed.t.len() - 1]);
    let inside: Vec<usize> = (0..measured.t.len())
        .filter(|&i| measured.t[i] >= c0 && measured.t[i] <= c1)
        .collect();
    if inside.len() < 3 {
        return Err(CompareError::NoOverlap {
            what: what.into(),
            computed: (c0, c1),
            measured: (measured.t[0], measured.t[measured.t.len() - 1]),
        });
    }
    let spline = CubicSpline::new(computed.t, computed.v);
    let tm: Vec<f64> = inside.iter().map(|&i| measured.t[i]).collect();
    let vm: Vec<f64> = inside.iter().map(|&i| measured.v[i]).collect();
    let vc: Vec<f64> = tm.iter().map(|&t| spline.at(t)).collect();
    let n = tm.len() as f64;
    let diff: Vec<f64> = vm.iter().zip(&vc).map(|(a, b)| a - b).collect();
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let (mm, mc) = (mean(&vm), mean(&vc));
    let cov: f64 = vm.iter().zip(&vc).map(|(a, b)| (a - mm) * (b - mc)).sum();
    let var_m: f64 = vm.iter().map(|a| (a - mm).powi(2)).sum();
    let var_c: f64 = vc.iter().map(|b| (b - mc).powi(2)).sum();
    let (lag, lag_at_bound) = best_lag(&spline, computed.t, &tm, &vm, options.max_lag);
    // The RMS of the difference at the lag, over the samples the shift keeps in the span.
    let rms_at = |s: &CubicSpline| {
        rms(tm
            .iter()
            .zip(&vm)
            .filter(|(t, _)| **t - lag >= c0 && **t - lag <= c1)
            .map(|(t, m)| m - s.at(t - lag)))
    };
    let rms_after_lag = rms_at(&spline);
    let without = match options.without_friction {
        Some(w) => {
            let bare = TimeSeries {
                t: computed.t,
                v: w,
            };
            check(what, "computed without friction", &bare)?;
            Some(rms_at(&CubicSpline::new(computed.t, w)))
        }
        None => None,
    };
    let rms_difference = rms(diff.iter().copied());
    Ok(MeasuredComparison {
        samples: tm.len(),
        outside: measured.t.len() - tm.len(),
        rms_difference,
        mean_difference: diff.iter().sum::<f64>() / n,
        computed_rms: rms(vc.iter().copied()),
        measured_rms: rms(vm.iter().copied()),
        computed_peak: peak(&tm, &vc),
        measured_peak: peak(&tm, &vm),
        correlation: cov / (var_m * var_c).sqrt(),
        lag,
        lag_at_bound,
        rms_after_lag,
        rms_without_friction: without,
        friction_share: without.map(|w| {
            if w > 0.0 {
                1.0 - (rms_after_lag / w).powi(2)
            } else {
                0.0
            }
        }),
    })
}

/// The lag (s) of the measured samples behind the computed spline within +-`max_lag` and
/// whether it sits at the bound. The lag minimises the
/// variance of the difference (an offset between the two does not pull it) over the samples
/// every shift keeps: on the computed step's grid, then by golden section between the best
/// point's neighbours.
fn best_lag(spline: &CubicSpline, tc: &[f64], tm: &[f64], vm: &[f64], max_lag: f64) -> (f64, bool) {
    let mut steps: Vec<f64> = tc.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(f64::total_cmp);
    let dt = steps[steps.len() / 2];
    let (c0, c1) = (tc[0], tc[tc.len() - 1]);
    // Keep the window of samples valid at every shift; the shift at most a third of the span.
    let max_lag = max_lag.max(0.0).min((c1 - c0) / 3.0);
    let kept: Vec<usize> = (0..tm.len())
        .filter(|&i| tm[i] - max_lag >= c0 && tm[i] + max_lag <= c1)
        .collect();
    // The variance of the difference at a shift.
    let variance = |lag: f64| -> f64 {
        let n = kept.len().max(1) as f64;
        let (s1, s2) = kept.iter().fold((0.0, 0.0), |(s1, s2), &i| {
            let d = vm[i] - spline.at(tm[i] - lag);
            (s1 + d, s2 + d * d)
        });
        s2 / n - (s1 / n).powi(2)
    };
    if kept.len() < 3 || dt <= 0.0 {
        return (0.0, false);
    }
    let k = (max_lag / dt).floor() as i64;
    let grid: Vec<(f64, f64)> = (-k..=k)
        .map(|j| (j as f64 * dt, variance(j as f64 * dt)))
        .collect();
    let best = (0..grid.len())
        .min_by(|&a, &b| grid[a].1.total_cmp(&grid[b].1))
        .unwrap_or(0);
    if best == 0 || best + 1 == grid.len() {
        return (grid[best].0, k > 0);
    }
    // Golden section on [best - dt, best + dt], where the variance is unimodal.
    let (mut a, mut b) = (grid[best - 1].0, grid[best + 1].0);
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let (mut x1, mut x2) = (b - g * (b - a), a + g * (b - a));
    let (mut f1, mut f2) = (variance(x1), variance(x2));
    while b - a > 1e-9 * dt {
        if f1 <= f2 {
            (b, x2, f2) = (x2, x1, f1);
            x1 = b - g * (b - a);
            f1 = variance(x1);
        } else {
            (a, x1, f1) = (x1, x2, f2);
            x2 = a + g * (b - a);
            f2 = variance(x2);
        }
    }
    (0.5 * (a + b), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(t: &[f64], f: f64, lag: f64, offset: f64) -> Vec<f64> {
        t.iter()
            .map(|ti| {
                offset
                    + (std::f64::consts::TAU * f * (ti - lag)).sin()
                    + 0.3 * (std::f64::consts::TAU * 2.7 * f * (ti - lag)).cos()
            })
            .collect()
    }

    /// A computed series at 500 Hz against the same signal measured at 1 kHz on a jittered
    /// clock, 12.3 ms late and 0.2 off: the lag within 0.1 ms, the mean difference 0.2, the
    /// RMS after the lag that of the offset alone; samples outside the span counted.
    #[test]
    fn lag_offset_and_rms_of_a_known_signal() {
        let tc: Vec<f64> = (0..2000).map(|i| i as f64 * 0.002).collect();
        let vc = sine(&tc, 1.3, 0.0, 0.0);
        let tm: Vec<f64> = (0..4200)
            .map(|i| -0.05 + i as f64 * 0.001 + 2e-5 * ((i * 7919) % 13) as f64)
            .collect();
        let vm = sine(&tm, 1.3, 0.0123, 0.2);
        let c = compare_measured(
            TimeSeries { t: &tc, v: &vc },
            TimeSeries { t: &tm, v: &vm },
            &MeasuredOptions {
                what: "torque",
                max_lag: 0.1,
                without_friction: None,
            },
        )
        .unwrap();
        assert!((c.lag - 0.0123).abs() < 1e-4, "{}", c.lag);
        assert!(!c.lag_at_bound);
        assert!(
            (c.mean_difference - 0.2).abs() < 0.02,
            "{}",
            c.mean_difference
        );
        assert!((c.rms_after_lag - 0.2).abs() < 2e-3, "{}", c.rms_after_lag);
        assert!(c.rms_difference > c.rms_after_lag);
        assert_eq!(c.samples + c.outside, tm.len());
        let outside = tm.iter().filter(|t| **t < 0.0 || **t > tc[1999]).count();
        assert_eq!(c.outside, outside);
        assert_eq!(c.friction_share, None);
    }

    /// Identical series: every difference zero, no lag, correlation 1; the friction share of a
    /// frictionless series that misses by a known amount is 1 when the friction closes it.
    #[test]
    fn identical_series_and_the_friction_share() {
        let t: Vec<f64> = (0..500).map(|i| i as f64 * 0.01).collect();
        let v = sine(&t, 0.7, 0.0, 0.0);
        let friction: Vec<f64> = t.iter().map(|ti| 0.1 * (3.0 * ti).cos()).collect();
        let without: Vec<f64> = v.iter().zip(&friction).map(|(a, b)| a - b).collect();
        let c = compare_measured(
            TimeSeries { t: &t, v: &v },
            TimeSeries { t: &t, v: &v },
            &MeasuredOptions {
                what: "torque",
                max_lag: 0.2,
                without_friction: Some(&without),
            },
        )
        .unwrap();
        assert!(c.rms_difference < 1e-12 && c.lag.abs() < 1e-8, "{c:?}");
        assert!((c.correlation - 1.0).abs() < 1e-12);
        assert!((c.friction_share.unwrap() - 1.0).abs() < 1e-12);
        let rw = c.rms_without_friction.unwrap();
        let want = (friction.iter().map(|f| f * f).sum::<f64>() / friction.len() as f64).sqrt();
        assert!((rw - want).abs() < 1e-9, "{rw} {want}");
    }

    /// Bad series: NaN, times that do not increase, no overlap: errors that say which side.
    #[test]
    fn bad_series_are_refused_by_side() {
        let t = [0.0, 1.0, 2.0, 3.0];
        let v = [0.0, 1.0, f64::NAN, 3.0];
        let ok = [0.0, 1.0, 2.0, 3.0];
        let o = MeasuredOptions {
            what: "elbow_torque",
            max_lag: 0.1,
            without_friction: None,
        };
        let e = compare_measured(
            TimeSeries { t: &t, v: &ok },
            TimeSeries { t: &t, v: &v },
            &o,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("elbow_torque") && e.contains("measured") && e.contains("sample 2"),
            "{e}"
        );
        let back = [0.0, 2.0, 1.0, 3.0];
        let e = compare_measured(
            TimeSeries { t: &t, v: &ok },
            TimeSeries { t: &back, v: &ok },
            &o,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("do not increase"), "{e}");
        let late = [10.0, 11.0, 12.0, 13.0];
        let e = compare_measured(
            TimeSeries { t: &t, v: &ok },
            TimeSeries { t: &late, v: &ok },
            &o,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("overlap") && e.contains("10"), "{e}");
    }
}
