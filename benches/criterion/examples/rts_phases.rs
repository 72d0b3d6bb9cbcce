//! Where the automatic smoother's time goes on one long coordinate (a profiling aid):
//! `cargo run --release -p flexbench-benches --example rts_phases`.
use flexbench_signal::RtsSmoother;
use std::time::Instant;

fn main() {
    let n = 100_000;
    let t: Vec<f64> = (0..n).map(|k| k as f64 / 240.0).collect();
    let w = std::f64::consts::TAU * 2.33;
    let x: Vec<f64> = t
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            0.02 * (w * s).sin()
                + 0.004 * (2.0 * w * s).cos()
                + 1e-4 * (((k * 7919) % 101) as f64 / 50.0 - 1.0)
        })
        .collect();
    let present = vec![true; n];
    let s = Instant::now();
    let f0 = flexbench_signal::rts::fundamental(&t, &[(&x, &present)]);
    println!("fundamental {:?}: {:.3} s", f0, s.elapsed().as_secs_f64());
    let s = Instant::now();
    let r = RtsSmoother {
        harmonics: Some(0),
        ..Default::default()
    }
    .smooth("x", &t, &x, &present)
    .map(|r| r.1);
    println!(
        "plain: {:.3} s {:?}",
        s.elapsed().as_secs_f64(),
        r.ok().flatten().map(|c| (c.noise, c.density))
    );
    let s = Instant::now();
    let r = RtsSmoother::automatic()
        .with_frequency(f0)
        .smooth("x", &t, &x, &present)
        .map(|r| r.1);
    println!(
        "automatic: {:.3} s {:?}",
        s.elapsed().as_secs_f64(),
        r.ok().flatten().map(|c| (c.harmonics, c.prior))
    );
}
