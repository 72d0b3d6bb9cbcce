//! A rolling shutter's samples observed at their own times. The tracker carries each sample to
//! its frame's time along the marker's own path (the quadratic through its three nearest
//! samples: `flexbench_vision::shutter`), whose error grows with the cube of the frame step (2
//! mm RMS at a phone's 30 frames/s on the bench's lever). Once the motion is fitted, each sample
//! is carried again along the fitted mechanism instead: the marker was seen at t + delta, where
//! the motion puts it at r_m(q(t + delta)); at the frame's time t the motion puts it at
//! r_m(q(t)); the sample's place at t is the seen place less that difference,
//!
//! p(t) = p_seen - [r_m(q(t + delta)) - r_m(q(t))],
//!
//! q(t + delta) assembled (the loop closed) at the drivers' values at t + delta: the quintic
//! Hermite interpolant of the drivers between the fitted sample and the next (their values,
//! rates d' = c_q q' and accelerations d'' = c_q q'' + (c_q q')_q q' at both ends, as the loop's
//! acceleration analysis writes them; exact for a quintic), or the Taylor polynomial
//! d + d' delta + d'' delta^2 / 2 of the sample alone at the recording's end or before a gap.
//! The motion is then fitted again to those places: the fixed point of fitting each
//! observation at its own time, p_seen = r_m(q(t + delta)), to first order in the motion's
//! error (the difference is the fitted velocity's error times delta: micrometres). The
//! mechanism's geometry, which turns a steady crank into the lever's swing, is exact; only the
//! drivers are interpolated, where the path's carry interpolated the markers' own swing.

use flexbench_contracts::MarkerSeries;
use std::f64::consts::TAU;

use flexbench_mechanism::constraints::body_point;
use flexbench_mechanism::model::Coordinate;
use flexbench_mechanism::Mechanism;
use nalgebra::DVector;

use crate::observe::FitSample;

/// What carrying the late samples along the fitted motion did (the process record's
/// `shutter`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CarriedAgain {
    /// Samples carried again.
    pub samples: usize,
    /// Late samples left as the path carried them: their frame's motion not fitted, or the loop
    /// not closing at their own time.
    pub kept: usize,
    /// How far the motion's carry moved the samples from the path's, RMS, mm.
    pub rms_change_mm: f64,
    /// The largest such move, mm.
    pub max_change_mm: f64,
}

/// Carry the late samples of `series` (the markers by name, on the frame grid of `samples`, at
/// the times `t`, s) along the fitted motion `samples` (module documentation), in place.
pub fn carry_along(
    mech: &Mechanism,
    t: &[f64],
    samples: &[FitSample],
    series: &mut [MarkerSeries],
) -> CarriedAgain {
    let mut out = CarriedAgain::default();
    let mut sum = 0.0;
    for s in series.iter_mut() {
        let Some(m) = mech.markers.iter().position(|mk| mk.name == s.name) else {
            continue;
        };
        for k in 0..s.late.len().min(samples.len()) {
            let (Some([delay, dx, dy]), true) = (s.late[k], s.present[k]) else {
                continue;
            };
            let next = samples.get(k + 1).and_then(|s| s.state.as_ref());
            let step = t.get(k + 1).zip(t.get(k)).map(|(b, a)| b - a);
            let Some(moved) = samples[k].state.as_ref().and_then(|now| {
                let next = next.zip(step).filter(|(_, h)| *h > delay);
                displacement(mech, m, now, next, delay)
            }) else {
                out.kept += 1;
                continue;
            };
            let (x, y) = (s.x[k] + dx - moved[0], s.y[k] + dy - moved[1]);
            let change = (x - s.x[k]).hypot(y - s.y[k]);
            sum += change * change;
            out.max_change_mm = out.max_change_mm.max(1e3 * change);
            out.samples += 1;
            // The offset is now from the new place: a second carry starts from where it is.
            s.late[k] = Some([delay, dx + s.x[k] - x, dy + s.y[k] - y]);
            (s.x[k], s.y[k]) = (x, y);
        }
    }
    out.rms_change_mm = 1e3 * (sum / out.samples.max(1) as f64).sqrt();
    out
}

/// A fitted state: q, q', q''.
type State = (DVector<f64>, DVector<f64>, DVector<f64>);

/// The drivers' values, rates and accelerations at a fitted state.
fn drivers(mech: &Mechanism, (q, qd, qdd): &State) -> Vec<[f64; 3]> {
    let n = mech.ncoords();
    mech.drivers
        .iter()
        .map(|d| {
            let g = d.coordinate.gradient(q, n);
            let acc = g.dot(qdd) + d.coordinate.quadratic(q, qd);
            [d.coordinate.value(q), g.dot(qd), acc]
        })
        .collect()
}

/// The quintic Hermite interpolant at s = delta / h in [0, 1] of the values, rates and
/// accelerations `a` at 0 and `b` at h.
fn hermite(a: [f64; 3], b: [f64; 3], h: f64, s: f64) -> f64 {
    let (s2, s3) = (s * s, s * s * s);
    let (s4, s5) = (s3 * s, s3 * s2);
    let h0 = 1.0 - 10.0 * s3 + 15.0 * s4 - 6.0 * s5;
    let h1 = s - 6.0 * s3 + 8.0 * s4 - 3.0 * s5;
    let h2 = 0.5 * (s2 - 3.0 * s3 + 3.0 * s4 - s5);
    let h3 = 10.0 * s3 - 15.0 * s4 + 6.0 * s5;
    let h4 = -4.0 * s3 + 7.0 * s4 - 3.0 * s5;
    let h5 = 0.5 * (s3 - 2.0 * s4 + s5);
    h0 * a[0] + h1 * h * a[1] + h2 * h * h * a[2] + h3 * b[0] + h4 * h * b[1] + h5 * h * h * b[2]
}

/// Marker `m`'s move from the fitted state `now` to `delay` s later along the motion, m: the
/// drivers interpolated towards `next` (the next fitted state, `h` s later) when given, else
/// extrapolated from `now` alone (None where the loop does not close there).
fn displacement(
    mech: &Mechanism,
    m: usize,
    now: &State,
    next: Option<(&State, f64)>,
    delay: f64,
) -> Option<[f64; 2]> {
    let here = drivers(mech, now);
    let later: Vec<f64> = match next {
        Some((next, h)) => here
            .iter()
            .zip(drivers(mech, next))
            .zip(&mech.drivers)
            .map(|((a, mut b), d)| {
                // An angle taken on the turn nearest the sample's (a fit that wrapped it).
                if let Coordinate::Angle { .. } = d.coordinate {
                    b[0] -= TAU * ((b[0] - a[0]) / TAU).round();
                }
                hermite(*a, b, h, delay / h)
            })
            .collect(),
        None => here
            .iter()
            .map(|[d, v, a]| d + v * delay + 0.5 * a * delay * delay)
            .collect(),
    };
    // From the configuration the sample's own motion predicts: Newton closes the loop in a
    // step or two, on the sample's assembly branch.
    let (q, qd, qdd) = now;
    let guess = q + qd * delay + qdd * (0.5 * delay * delay);
    let q2 = mech.assemble_from(&guess, &later).ok()?;
    let mk = &mech.markers[m];
    let (a, b) = (
        body_point(q, mk.body, mk.local),
        body_point(&q2, mk.body, mk.local),
    );
    Some([b.x - a.x, b.y - a.y])
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_mechanism::file::wind_pump_default;
    use flexbench_mechanism::simulate::SimConfig;

    /// The bench simulated at 6 kHz; filmed at 60 frames/s, each marker seen up to 12 ms late
    /// (a phone's readout) at its true place then, its carried place spoiled by a millimetre
    /// (the path's carry at that rate is off by as much); carried along the true motion, every
    /// sample comes back to its frame's time within 0.01 mm (0.003 mm measured; the drivers'
    /// Taylor polynomial alone, 0.063 mm; the path's carry at 60 frames/s, 1.1 mm at most).
    #[test]
    fn late_samples_come_back_along_the_motion() {
        let mech = wind_pump_default();
        let cfg = SimConfig {
            duration: 0.6,
            rate: 6000.0,
            settle: 1.0,
            ..SimConfig::default()
        };
        let sim = mech.simulate(&cfg, &mut |_| {}).unwrap();
        let frames: Vec<usize> = (0..sim.samples.len() - 80).step_by(100).collect();
        let at = |i: usize, m: usize| {
            let mk = &mech.markers[m];
            body_point(&sim.samples[i].q, mk.body, mk.local)
        };
        let samples: Vec<FitSample> = frames
            .iter()
            .map(|&i| {
                let s = &sim.samples[i];
                FitSample {
                    state: Some((s.q.clone(), s.qd.clone(), s.qdd.clone())),
                    residual: Vec::new(),
                }
            })
            .collect();
        let mut series: Vec<MarkerSeries> = (0..mech.markers.len())
            .map(|m| {
                let n = frames.len();
                let mut s = MarkerSeries {
                    name: mech.markers[m].name.clone(),
                    frame: (0..n as i64).collect(),
                    t: frames.iter().map(|&i| sim.samples[i].t).collect(),
                    x: vec![0.0; n],
                    y: vec![0.0; n],
                    present: vec![true; n],
                    late: vec![None; n],
                };
                for (k, &i) in frames.iter().enumerate() {
                    // Up to 72 steps of the simulation late: 12 ms.
                    let j = (k * 29 + m * 17) % 73;
                    let seen = at(i + j, m);
                    (s.x[k], s.y[k]) = (at(i, m).x + 1e-3, at(i, m).y - 1e-3);
                    s.late[k] = Some([j as f64 / 6000.0, seen.x - s.x[k], seen.y - s.y[k]]);
                }
                s
            })
            .collect();
        let times = series[0].t.clone();
        let done = carry_along(&mech, &times, &samples, &mut series);
        let mut worst: f64 = 0.0;
        for (m, s) in series.iter().enumerate() {
            for (k, &i) in frames.iter().enumerate() {
                worst = worst.max((s.x[k] - at(i, m).x).hypot(s.y[k] - at(i, m).y));
            }
        }
        eprintln!(
            "{done:?}: the worst sample {:.4} mm from its place",
            worst * 1e3
        );
        assert_eq!(done.samples, frames.len() * mech.markers.len());
        assert_eq!(done.kept, 0);
        assert!(worst < 1e-5, "{worst} m");
        assert!((done.rms_change_mm - 2f64.sqrt()).abs() < 0.02, "{done:?}");
        // Carried again from there: where it is (the offsets follow the places).
        let again = carry_along(&mech, &times, &samples, &mut series);
        assert!(again.max_change_mm < 1e-9, "{again:?}");
        // A fit that wrapped the crank's angle every other sample carries them the same.
        let Coordinate::Angle { body } = mech.drivers[0].coordinate else {
            panic!("the bench's first driver is the crank's angle")
        };
        let wrapped: Vec<FitSample> = samples
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let mut s = s.clone();
                if let (Some((q, _, _)), 1) = (&mut s.state, k % 2) {
                    q[3 * body + 2] -= TAU;
                }
                s
            })
            .collect();
        let again = carry_along(&mech, &times, &wrapped, &mut series);
        assert!(again.max_change_mm < 1e-6, "{again:?}");
    }
}
