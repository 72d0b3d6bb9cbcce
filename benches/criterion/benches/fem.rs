//! The lever's modes over one crank turn of the simulated bench at 1000 samples, 10 quintic
//! elements (51 free degrees of freedom): the symmetric problem alone, and with the full problem
//! for the lowest six modes, with criterion's statistics (`make criterion`). The same matrices go
//! to scipy's eigh and eig in `make bench` (benches/peers.sh), which also checks the frequencies.

use criterion::{criterion_group, criterion_main, Criterion};
use flexbench_benches::{fem_cycle, pinned_cycle_modes};

fn cycle(c: &mut Criterion) {
    let cycle = fem_cycle(1000);
    let mut group = c.benchmark_group("fem_cycle_1000_samples_10_quintic");
    group.sample_size(10);
    // The lowest 12 modes (twice the 6 the pipeline follows), `full` of them in the full problem.
    let modes = |full: usize| pinned_cycle_modes(&cycle, full, 12);
    group.bench_function("symmetric", |b| b.iter(|| modes(0)));
    group.bench_function("symmetric_and_full_6", |b| b.iter(|| modes(6)));
    group.finish();
}

criterion_group!(benches, cycle);
criterion_main!(benches);
