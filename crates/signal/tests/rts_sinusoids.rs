//! The Kalman/RTS smoother of one coordinate against exact derivatives.

#[path = "../../../tests/common/gauss.rs"]
mod gauss;

use flexbench_signal::{Provenance, RtsSmoother};

/// A sum of sinusoids sampled at 240 Hz with 0.1 mm of white noise: the smoother's noise
/// estimate within 10 % of the truth (4.6 % measured), its accelerations within 3 % RMS of
/// the peak (1.7 % measured), and its 2-sigma band holding at least 95 % of the exact
/// accelerations over the interior (99.7 % measured: for a smooth deterministic motion the
/// white-snap prior's band is conservative); a gap splits the series (no value inside it).
#[test]
fn sinusoids_with_noise() {
    let n = 960;
    let t: Vec<f64> = (0..n).map(|k| k as f64 / 240.0).collect();
    let w = 2.0 * std::f64::consts::PI * 2.3;
    let f = |t: f64| 0.05 * (w * t).sin() + 0.01 * (3.0 * w * t + 0.4).cos();
    let a = |t: f64| -0.05 * w * w * (w * t).sin() - 0.01 * 9.0 * w * w * (3.0 * w * t + 0.4).cos();
    let mut g = gauss::Gauss::new(0x9E3779B97F4A7C15);
    let sigma = 1e-4;
    let values: Vec<f64> = t.iter().map(|&x| f(x) + sigma * g.next()).collect();
    let mut present = vec![true; n];
    for p in present.iter_mut().take(500).skip(480) {
        *p = false;
    }
    let (d, chosen) = RtsSmoother::automatic()
        .smooth("x", &t, &values, &present)
        .unwrap();
    let chosen = chosen.unwrap();
    assert!(
        (chosen.noise / sigma - 1.0).abs() < 0.1,
        "noise {}",
        chosen.noise
    );
    assert!((480..500).all(|k| d.value[k].is_nan() && d.provenance[k] == Provenance::Rejected));
    let peak = (0..n).map(|k| a(t[k]).abs()).fold(0.0, f64::max);
    let interior: Vec<usize> = (0..n)
        .filter(|&k| d.provenance[k] == Provenance::Measured)
        .collect();
    let rms = (interior
        .iter()
        .map(|&k| (d.accel[k] - a(t[k])).powi(2))
        .sum::<f64>()
        / interior.len() as f64)
        .sqrt();
    let inside = interior
        .iter()
        .filter(|&&k| (d.accel[k] - a(t[k])).abs() <= 2.0 * d.sigma[k][2])
        .count() as f64
        / interior.len() as f64;
    eprintln!("noise {:.3e}, density {:.3e}; acceleration RMS error {:.2} % of peak; {:.1} % within 2 sigma; {} interior samples", chosen.noise, chosen.density, 100.0 * rms / peak, 100.0 * inside, interior.len());
    assert!(rms / peak < 0.03, "{}", rms / peak);
    assert!(inside >= 0.95, "{inside}");
}
