//! The signal stage on 5 markers x 100,000 samples (10 coordinates, 240 samples/s, a bench-like
//! periodic motion at 2.33 Hz with 0.1 mm of white noise): Savitzky-Golay (window 21, order 5,
//! value, rate and acceleration) and the automatic Kalman/RTS smoother (parameters by maximum
//! likelihood, periodic part included), with criterion's statistics (`make criterion`). The
//! side-by-side with scipy on the same inputs is `make bench` (benches/peers.sh).

use criterion::{criterion_group, criterion_main, Criterion};
use flexbench_benches::signal_coordinates;
use flexbench_signal::{Differentiator, RtsSmoother, SavGol};
use std::hint::black_box;

/// Samples per coordinate.
const N: usize = 100_000;

fn signal(c: &mut Criterion) {
    let (t, coords) = signal_coordinates(N);
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
            let pairs: Vec<(&[f64], &[bool])> = coords
                .iter()
                .map(|x| (x.as_slice(), present.as_slice()))
                .collect();
            let f0 = flexbench_signal::rts::fundamental(&t, &pairs);
            for x in &coords {
                black_box(
                    RtsSmoother::automatic()
                        .with_frequency(f0)
                        .smooth("x", &t, x, &present)
                        .expect("smooths"),
                );
            }
        })
    });
    g.finish();
}

criterion_group!(benches, signal);
criterion_main!(benches);
