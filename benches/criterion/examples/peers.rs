//! The flexbench side of `make bench` (benches/peers.sh): flexbench's kernels on the workloads
//! its peers run, on one thread, best of several wall times each, and the very inputs and
//! flexbench's results written for benches/peers.py (which times scipy and numpy on the same
//! bytes and checks that the numbers agree). Little-endian f64, row-major.
//!
//! - Savitzky-Golay: 5 markers x 100,000 samples (10 coordinates), window 21, order 5, value,
//!   rate and acceleration.
//! - Inverse dynamics: the default bench's linear system per sample (Newton-Euler matrix and
//!   right-hand side), 100,000 samples (one simulated crank turn of 1000 samples, 100 times).
//! - Modal analysis along a cycle: the lever (10 quintic elements, 51 free degrees of freedom)
//!   at 1000 samples of a crank turn, the symmetric problem's lowest 12 modes (and all of
//!   them, densely) and the full one (6 modes).
//!
//! Run: cargo run --release -p flexbench-benches --example peers -- DIR

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use flexbench_benches::{bench_cycle, fem_cycle, pinned_cycle_modes, signal_coordinates};
use flexbench_fem::cycle::{cycle_matrices, RUN};
use flexbench_fem::modal::symmetric_modes;
use flexbench_fem::subspace::ModeFollower;
use flexbench_fem::Supports;
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_numeric::lu::Lu;
use flexbench_numeric::lu_lanes::{LuLanes, LANES};
use flexbench_signal::{Differentiator, SavGol};
use nalgebra::DMatrix;

/// Samples per coordinate of the Savitzky-Golay workload.
const SG_SAMPLES: usize = 100_000;
/// Modes of the symmetric problem computed along the cycle: twice the 6 the pipeline follows.
const LOWEST: usize = 12;
/// Samples of one crank turn (inverse dynamics and modal analysis).
const TURN: usize = 1000;
/// Crank turns of the inverse-dynamics workload.
const TURNS: usize = 100;

fn write(path: &Path, values: impl IntoIterator<Item = f64>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("a writable file"));
    for v in values {
        f.write_all(&v.to_le_bytes()).expect("written");
    }
}

fn row_major(a: &DMatrix<f64>) -> Vec<f64> {
    (0..a.nrows())
        .flat_map(|i| (0..a.ncols()).map(move |j| a[(i, j)]))
        .collect()
}

/// The shortest of `runs` wall times of `f` (s), and its last result.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..runs {
        let s = Instant::now();
        let r = std::hint::black_box(f());
        best = best.min(s.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.expect("at least one run"))
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("an output directory"));
    std::fs::create_dir_all(&dir).expect("the directory");
    // Kernels on one thread, as the peers' (OPENBLAS_NUM_THREADS=1): flexbench's per-sample
    // maps run in the enclosing pool, here of one thread.
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool")
        .install(|| measure(&dir));
}

/// Every kernel timed, its results written into `dir` for benches/peers.py.
fn measure(dir: &Path) {
    let mut meta = Vec::new();

    // Savitzky-Golay, derivatives 0-2.
    let (t, coords) = signal_coordinates(SG_SAMPLES);
    let present = vec![true; SG_SAMPLES];
    let sg = SavGol::new(21, 5).expect("a valid window");
    let (t_sg, d) = best(5, || {
        coords
            .iter()
            .map(|x| sg.differentiate("x", &t, x, &present).expect("smooths"))
            .collect::<Vec<_>>()
    });
    write(&dir.join("sg_t.f64"), t.iter().copied());
    write(&dir.join("sg_x.f64"), coords.iter().flatten().copied());
    for (name, pick) in [("value", 0), ("rate", 1), ("accel", 2)] {
        write(
            &dir.join(format!("sg_{name}.f64")),
            d.iter()
                .flat_map(|d| [&d.value, &d.rate, &d.accel][pick].iter().copied()),
        );
    }
    meta.push(format!(
        "\"sg_s\": {t_sg}, \"sg_samples\": {SG_SAMPLES}, \"sg_coordinates\": {}",
        coords.len()
    ));
    println!(
        "savgol 21/5, derivatives 0-2, {} x {SG_SAMPLES}: {:.1} ms",
        coords.len(),
        t_sg * 1e3
    );

    // Inverse dynamics over 100 turns.
    let (file, turn) = bench_cycle(TURN);
    let mech = &file.mechanism;
    let samples: Vec<_> = (0..TURNS).flat_map(|_| turn.iter()).collect();
    // As the pipeline solves them (Mechanism::inverse_dynamics_batch: four side by side).
    let (t_full, forces) = best(3, || {
        let states: Vec<_> = samples.iter().map(|s| (&s.q, &s.qd, &s.qdd)).collect();
        mech.inverse_dynamics_batch(&states, DEFAULT_MAX_CONDITION)
            .expect("a square system")
            .into_iter()
            .map(|s| match s {
                InverseSample::Solved { forces, .. } => forces,
                InverseSample::Toggle { .. } => panic!("no toggle on the default bench"),
            })
            .collect::<Vec<_>>()
    });
    let (t_assemble, systems) = best(3, || {
        samples
            .iter()
            .map(|s| {
                mech.inverse_dynamics_system(&s.q, &s.qd, &s.qdd)
                    .expect("a square system")
            })
            .collect::<Vec<_>>()
    });
    // The pipeline's batched factorisation (LuLanes: LANES systems side by side, its storage
    // reused from batch to batch, each matrix copied in as numpy's batched call copies them for
    // LAPACK), the solutions one after the other in one array, as numpy returns them.
    let (t_solve, solved) = best(3, || {
        let n = systems[0].0.nrows();
        let mut lu = LuLanes::empty();
        let mut b = Vec::with_capacity(n);
        let mut out = Vec::with_capacity(systems.len() * n);
        for batch in systems.chunks(LANES) {
            let mats: Vec<&[f64]> = batch.iter().map(|(a, _)| a.as_slice()).collect();
            lu.refactor(&mats, n);
            b.clear();
            b.extend((0..n).map(|i| std::array::from_fn(|l| batch.get(l).map_or(0.0, |s| s.1[i]))));
            let regular = lu.solve_mut(&mut b);
            for l in 0..batch.len() {
                assert!(regular[l], "a regular system");
                out.extend(b.iter().map(|v| v[l]));
            }
        }
        out
    });
    // The scalar factorisation system by system, for the notes.
    let (t_scalar, _) = best(3, || {
        let n = systems[0].0.nrows();
        let mut lu = Lu::empty();
        let mut out = Vec::with_capacity(systems.len() * n);
        for (a, b) in &systems {
            lu.refactor(a.as_slice(), n);
            let k = out.len();
            out.extend_from_slice(b.as_slice());
            assert!(lu.solve_mut(&mut out[k..]), "a regular system");
        }
        out
    });
    let solved: Vec<&[f64]> = solved.chunks_exact(systems[0].0.nrows()).collect();
    let worst = forces
        .iter()
        .zip(&solved)
        .flat_map(|(f, x)| f.iter().zip(x.iter()).map(|(a, b)| (a - b).abs()))
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-9,
        "the solve alone gives the inverse dynamics' forces ({worst:e} N)"
    );
    let n = systems[0].0.nrows();
    write(
        &dir.join("id_a.f64"),
        systems[..TURN].iter().flat_map(|(a, _)| row_major(a)),
    );
    write(
        &dir.join("id_b.f64"),
        systems[..TURN]
            .iter()
            .flat_map(|(_, b)| b.iter().copied().collect::<Vec<_>>()),
    );
    write(
        &dir.join("id_x.f64"),
        forces[..TURN].iter().flatten().copied(),
    );
    meta.push(format!("\"id_full_s\": {t_full}, \"id_assemble_s\": {t_assemble}, \"id_solve_s\": {t_solve}, \"id_solve_scalar_s\": {t_scalar}, \"id_turn\": {TURN}, \"id_turns\": {TURNS}, \"id_n\": {n}"));
    println!(
        "inverse dynamics, {} samples, {n} unknowns: whole (system, condition number, LU) {:.1} ms; system alone {:.1} ms; LU solve alone {:.1} ms (system by system {:.1} ms)",
        samples.len(),
        t_full * 1e3,
        t_assemble * 1e3,
        t_solve * 1e3,
        t_scalar * 1e3
    );

    // Modal analysis along a cycle.
    let cycle = fem_cycle(TURN);
    let (mesh, g, instants) = &cycle;
    let mats = cycle_matrices(mesh, g, instants, Supports::Pinned);
    let nf = mats[0].m.nrows();
    write(&dir.join("fem_m.f64"), row_major(&mats[0].m));
    for (name, pick) in [("k", 0usize), ("gyroscopic", 1), ("skew", 2)] {
        write(
            &dir.join(format!("fem_{name}.f64")),
            mats.iter()
                .flat_map(|x| row_major([&x.k, &x.gyroscopic, &x.skew][pick])),
        );
    }
    // The lowest 12 modes (the pipeline's: twice the 6 followed) by subspace iteration, each
    // run of RUN instants started densely, as cycle_modes runs them; every mode densely too.
    let (t_eigh, _) = best(3, || {
        mats.chunks(RUN)
            .flat_map(|run| {
                let mut f = ModeFollower::new(LOWEST);
                run.iter()
                    .map(move |x| f.modes(&x.k, &x.m).expect("modes"))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    });
    let (t_dense, _) = best(3, || {
        mats.iter()
            .map(|x| symmetric_modes(&x.k, &x.m).expect("modes"))
            .collect::<Vec<_>>()
    });
    // The pipeline's way: each instant's matrices built from the motion, `full` modes of the
    // full problem.
    let modes = |full: usize| pinned_cycle_modes(&cycle, full, LOWEST);
    let (t_sym, sym) = best(3, || modes(0));
    let (t_fullm, full) = best(3, || modes(6));
    write(
        &dir.join("fem_freq_symmetric.f64"),
        sym.iter()
            .flat_map(|m| (0..LOWEST).map(move |i| m.modes.frequency_hz(i))),
    );
    write(
        &dir.join("fem_freq_full.f64"),
        full.iter()
            .flat_map(|m| m.full.iter().map(|f| f.map_or(f64::NAN, |x| x.0))),
    );
    write(
        &dir.join("fem_zeta_full.f64"),
        full.iter()
            .flat_map(|m| m.full.iter().map(|f| f.map_or(f64::NAN, |x| x.1))),
    );
    meta.push(format!("\"fem_samples\": {}, \"fem_n\": {nf}, \"fem_lowest\": {LOWEST}, \"fem_eigh_s\": {t_eigh}, \"fem_dense_s\": {t_dense}, \"fem_symmetric_s\": {t_sym}, \"fem_full_s\": {t_fullm}", mats.len()));
    println!(
        "modes along the cycle, {} samples, {nf} degrees of freedom: the lowest {LOWEST} of the generalized symmetric eigenproblem alone {:.1} ms (every mode, dense: {:.1} ms); symmetric (matrices, modes) {:.1} ms; symmetric + full (6 modes) {:.1} ms",
        mats.len(),
        t_eigh * 1e3,
        t_dense * 1e3,
        t_sym * 1e3,
        t_fullm * 1e3
    );

    std::fs::write(dir.join("meta.json"), format!("{{{}}}\n", meta.join(", "))).expect("meta.json");
}
