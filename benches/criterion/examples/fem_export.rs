//! Write the matrices of the fem benchmark's cycle (1000 samples, 10 quintic elements) and
//! flexbench's frequencies for them, for benches/fem_scipy.py: little-endian f64, row-major.
//! Run: cargo run --release -p flexbench-benches --example fem_export -- DIR

use std::io::Write;

use flexbench_benches::fem_cycle;
use flexbench_fem::cycle::{cycle_matrices, cycle_modes};
use flexbench_fem::Supports;

fn write(path: &std::path::Path, values: impl Iterator<Item = f64>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("a writable file"));
    for v in values {
        f.write_all(&v.to_le_bytes()).expect("written");
    }
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("an output directory"));
    std::fs::create_dir_all(&dir).expect("the directory");
    let (mesh, g, instants) = fem_cycle(1000);
    let mats = cycle_matrices(&mesh, &g, &instants, Supports::Pinned);
    let n = mats[0].m.nrows();
    let row_major = |a: &nalgebra::DMatrix<f64>| (0..a.nrows()).flat_map(move |i| (0..a.ncols()).map(move |j| a[(i, j)])).collect::<Vec<_>>();
    write(&dir.join("m.f64"), row_major(&mats[0].m).into_iter());
    for (name, pick) in [("k", 0usize), ("gyroscopic", 1), ("skew", 2)] {
        write(&dir.join(format!("{name}.f64")), mats.iter().flat_map(|x| row_major([&x.k, &x.gyroscopic, &x.skew][pick])));
    }
    let start = std::time::Instant::now();
    let sym = cycle_modes(&mesh, &g, &instants, Supports::Pinned, 0, &mut |_, _| {}).expect("modes");
    let t_sym = start.elapsed().as_secs_f64();
    let start = std::time::Instant::now();
    let full = cycle_modes(&mesh, &g, &instants, Supports::Pinned, 6, &mut |_, _| {}).expect("modes");
    let t_full = start.elapsed().as_secs_f64();
    write(&dir.join("freq_symmetric.f64"), sym.iter().flat_map(|m| (0..6).map(move |i| m.modes.frequency_hz(i))));
    write(&dir.join("freq_full.f64"), full.iter().flat_map(|m| m.full.iter().map(|f| f.map_or(f64::NAN, |x| x.0))));
    write(&dir.join("zeta_full.f64"), full.iter().flat_map(|m| m.full.iter().map(|f| f.map_or(f64::NAN, |x| x.1))));
    std::fs::write(dir.join("meta.json"), format!("{{\"samples\": {}, \"n\": {n}, \"flexbench_symmetric_s\": {t_sym}, \"flexbench_full_s\": {t_full}}}\n", mats.len())).expect("meta");
    println!("{} samples, {n} degrees of freedom: flexbench symmetric {t_sym:.3} s, symmetric + full (6 modes) {t_full:.3} s (one run, release)", mats.len());
}
