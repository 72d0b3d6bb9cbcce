//! The signal stage on 5 markers x 100,000 samples (10 coordinates, 240 samples/s, a bench-like
//! periodic motion at 2.33 Hz with 0.1 mm of white noise): Savitzky-Golay (window 21, order 5,
//! value, rate and acceleration) and the automatic Kalman/RTS smoother (parameters by maximum
//! likelihood, periodic part included). `make bench` runs it beside the same work in scipy
//! (benches/signal_scipy.py).

use criterion::{criterion_group, criterion_main, Criterion};
use flexbench_signal::{Differentiator, RtsSmoother, SavGol};
use std::hint::black_box;

/// Samples per coordinate.
const N: usize = 100_000;

/// The ten coordinates: time (s) and values (m), deterministic.
fn coordinates() -> (Vec<f64>, Vec<Vec<f64>>) {
    let t: Vec<f64> = (0..N).map(|k| k as f64 / 240.0).collect();
    let w = std::f64::consts::TAU * 2.33;
    // xorshift + Box-Muller, fixed seed
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut gauss = move || {
        let (u1, u2) = (uniform().max(1e-300), uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let coords = (0..10)
        .map(|c| {
            let (a, ph) = (0.02 + 0.005 * c as f64, 0.3 * c as f64);
            t.iter().map(|&x| a * (w * x + ph).sin() + 0.2 * a * (2.0 * w * x + 2.0 * ph).cos() + 0.05 * a * (3.0 * w * x).sin() + 1e-4 * gauss()).collect()
        })
        .collect();
    (t, coords)
}

fn signal(c: &mut Criterion) {
    let (t, coords) = coordinates();
    let present = vec![true; N];
    let mut g = c.benchmark_group("5 markers x 100k samples");
    g.sample_size(10);
    let sg = SavGol::new(21, 5).expect("valid window");
    g.bench_function("savgol 21/5, derivatives 0-2", |b| {
        b.iter(|| {
            for x in &coords {
                black_box(sg.differentiate("x", &t, x, &present).expect("smooths"));
            }
        })
    });
    g.bench_function("rts automatic (ML, periodic part)", |b| {
        b.iter(|| {
            let pairs: Vec<(&[f64], &[bool])> = coords.iter().map(|x| (x.as_slice(), present.as_slice())).collect();
            let f0 = flexbench_signal::rts::fundamental(&t, &pairs);
            for x in &coords {
                black_box(RtsSmoother::automatic().with_frequency(f0).smooth("x", &t, x, &present).expect("smooths"));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, signal);
criterion_main!(benches);
