//! Savitzky-Golay throughput on a size ladder (1e3 to 1e6 samples; windows 5, 21, 61), the
//! three derivatives of one coordinate per run: `cargo bench -p flexbench-signal`. The cost must
//! grow as n * window (the weights are computed once per filter, nothing is allocated per
//! sample). A plain timing harness (best of 5) keeps criterion out of the test build.

use std::hint::black_box;
use std::time::Instant;

use flexbench_signal::{Differentiator, EdgeMode, SavGol};

fn main() {
    println!(
        "{:>9} {:>7} {:>9} {:>12} {:>14}",
        "samples", "window", "mode", "best (ms)", "ns/sample/tap"
    );
    for &n in &[1_000usize, 10_000, 100_000, 1_000_000] {
        let t: Vec<f64> = (0..n).map(|k| k as f64 * 1e-3).collect();
        let x: Vec<f64> = t
            .iter()
            .map(|t| (7.0 * t).sin() + 0.3 * (31.0 * t).cos())
            .collect();
        let present = vec![true; n];
        for &w in &[5usize, 21, 61] {
            for mode in [EdgeMode::Interp, EdgeMode::Mirror] {
                let sg = SavGol::new(w, 3).unwrap().with_mode(mode);
                let mut best = f64::INFINITY;
                for _ in 0..5 {
                    let s = Instant::now();
                    let d = sg.differentiate("x", &t, &x, &present).unwrap();
                    black_box(&d);
                    best = best.min(s.elapsed().as_secs_f64());
                }
                println!(
                    "{n:>9} {w:>7} {:>9} {:>12.3} {:>14.3}",
                    mode.name(),
                    best * 1e3,
                    best * 1e9 / (n as f64 * w as f64 * 3.0)
                );
            }
        }
    }
}
