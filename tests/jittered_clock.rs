//! A data logger's clock: the bench sampled at 240 per second with each sample taken up to 2 %
//! of the step early or late (and stamped with its own time), against the same bench on an even
//! clock, both with the 140 um of noise tracking the shipped video leaves. Every kinematics
//! method must accept it, and give forces at B and C' within 1.05 times its own error on the
//! even clock (issue 38).

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

use common::{gauss::Gauss, num, read_csv};

/// The simulation's rate over the recording's: the truth is read between its samples.
const FINE: usize = 10;
/// The recording's rate, samples/s.
const RATE: f64 = 240.0;

/// Cubic (four-point Lagrange) interpolation of `y` on the even grid of step `h` from 0 at `t`.
fn cubic(y: &[f64], h: f64, t: f64) -> f64 {
    let s = t / h;
    let i = (s.floor() as usize).clamp(1, y.len() - 3);
    let x = s - i as f64;
    let (a, b, c, d) = (y[i - 1], y[i], y[i + 1], y[i + 2]);
    let l0 = -x * (x - 1.0) * (x - 2.0) / 6.0;
    let l1 = (x + 1.0) * (x - 1.0) * (x - 2.0) / 2.0;
    let l2 = -(x + 1.0) * x * (x - 2.0) / 2.0;
    let l3 = (x + 1.0) * x * (x - 1.0) / 6.0;
    a * l0 + b * l1 + c * l2 + d * l3
}

/// The recording's samples at times `times` (s from the simulation's first sample): tracks with
/// the noise of `seed` written to `tracks`, the true forces at B and C' returned.
fn sampled(sim: &Path, times: &[f64], seed: u64, tracks: &Path) -> BTreeMap<String, Vec<f64>> {
    let fine = read_csv(&sim.join("tracks.csv"));
    let h = 1.0 / (RATE * FINE as f64);
    let mut per_marker: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let (x, y) = (num(&fine, "x"), num(&fine, "y"));
    for (i, m) in fine["marker"].iter().enumerate() {
        let e = per_marker.entry(m.clone()).or_default();
        e.0.push(x[i]);
        e.1.push(y[i]);
    }
    let mut g = Gauss::new(seed);
    let mut out = vec!["frame,t,marker,x,y".to_string()];
    for (k, t) in times.iter().enumerate() {
        for (m, (xs, ys)) in &per_marker {
            let (px, py) = (
                cubic(xs, h, *t) + 1.4e-4 * g.next(),
                cubic(ys, h, *t) + 1.4e-4 * g.next(),
            );
            out.push(format!("{k},{t:?},{m},{px:?},{py:?}"));
        }
    }
    std::fs::write(tracks, out.join("\n")).unwrap();
    let forces = read_csv(&sim.join("forces.csv"));
    ["B_x", "B_y", "C_x", "C_y"]
        .iter()
        .map(|c| {
            let f = num(&forces, c);
            (
                c.to_string(),
                times.iter().map(|t| cubic(&f, h, *t)).collect(),
            )
        })
        .collect()
}

/// The larger of the force errors at B and C' of `out` against `truth`, as a share of the peak.
fn force_error(truth: &BTreeMap<String, Vec<f64>>, out: &Path) -> f64 {
    let got = read_csv(&out.join("forces.csv"));
    ["B", "C"]
        .iter()
        .map(|j| {
            let (tx, ty) = (&truth[&format!("{j}_x")], &truth[&format!("{j}_y")]);
            let (gx, gy) = (num(&got, &format!("{j}_x")), num(&got, &format!("{j}_y")));
            let peak = tx
                .iter()
                .zip(ty)
                .map(|(a, b)| a.hypot(*b))
                .fold(0.0, f64::max);
            let (mut s, mut n) = (0.0, 0usize);
            for i in 0..tx.len() {
                if gx[i].is_finite() && gy[i].is_finite() {
                    s += (gx[i] - tx[i]).powi(2) + (gy[i] - ty[i]).powi(2);
                    n += 1;
                }
            }
            assert!(n + 4 >= tx.len(), "{j}: {n} of {} samples solved", tx.len());
            (s / n as f64).sqrt() / peak
        })
        .fold(0.0, f64::max)
}

#[test]
fn every_method_takes_a_two_percent_jitter() {
    let dir = tempfile::tempdir().unwrap();
    let rate = format!("{}", RATE * FINE as f64);
    let sim = common::simulate_bench(dir.path(), "sim", "2.1", &rate, "3");
    let step = 1.0 / RATE;
    let n = 490;
    let even: Vec<f64> = (0..n).map(|k| (k + 2) as f64 * step).collect();
    let mut u = Gauss::new(77);
    let jittered: Vec<f64> = even
        .iter()
        .map(|t| t + 0.02 * step * (2.0 * u.uniform() - 1.0))
        .collect();
    let (te, tj) = (dir.path().join("even.csv"), dir.path().join("jittered.csv"));
    let truth_even = sampled(&sim, &even, 5, &te);
    let truth_jit = sampled(&sim, &jittered, 5, &tj);
    for (name, extra) in [
        ("default", &[][..]),
        ("butterworth", &["--butterworth"][..]),
        ("spline", &["--spline"][..]),
        (
            "savgol",
            &["--savgol", "--window", "15", "--order", "3"][..],
        ),
    ] {
        let (oe, oj) = (
            dir.path().join(format!("{name}-even")),
            dir.path().join(format!("{name}-jit")),
        );
        common::process(&te, &oe, extra);
        common::process(&tj, &oj, extra);
        let (ee, ej) = (force_error(&truth_even, &oe), force_error(&truth_jit, &oj));
        eprintln!(
            "{name}: even clock {:.2} %, 2 % jitter {:.2} % of the peak ({:.3}x)",
            100.0 * ee,
            100.0 * ej,
            ej / ee
        );
        assert!(
            ej <= 1.05 * ee,
            "{name}: {ej} against {ee} on the even clock"
        );
    }
}
