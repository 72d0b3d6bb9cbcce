//! Criterion benchmarks of flexbench (see benches/) and the workloads they share with the
//! scipy peers.

use flexbench_fem::assembly::GlobalMatrices;
use flexbench_fem::{ElementKind, Lever, LeverInstant, Mesh};
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_mechanism::simulate::{Sample, SimConfig};
use nalgebra::Vector2;

/// The default bench (mechanisms/wind-pump.toml) simulated over one crank turn at 140 rpm,
/// `samples` samples: the mechanism file and the samples (configuration, velocities,
/// accelerations in the bench frame).
pub fn bench_cycle(samples: usize) -> (flexbench_mechanism::file::MechanismFile, Vec<Sample>) {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mechanisms/wind-pump.toml");
    let file = flexbench_mechanism::file::load(&root).expect("the default bench");
    let turn = 60.0 / 140.0;
    let rate = samples as f64 / turn;
    let sim = file
        .mechanism
        .simulate(
            &SimConfig {
                duration: (samples as f64 - 0.5) / rate,
                rate,
                settle: 3.0,
                ..SimConfig::default()
            },
            &mut |_| {},
        )
        .expect("the simulation");
    let samples = sim.samples.into_iter().take(samples).collect();
    (file, samples)
}

/// The lever's lowest `lowest` modes at every instant of `fem_cycle`'s output, pinned at B and
/// C', `full` of them in the full (gyroscopic) problem: the pipeline's way, each instant's
/// matrices built from the motion.
pub fn pinned_cycle_modes(
    (mesh, g, instants): &(Mesh, GlobalMatrices, Vec<LeverInstant>),
    full: usize,
    lowest: usize,
) -> Vec<flexbench_fem::cycle::InstantModes> {
    let supports = flexbench_fem::Supports::Pinned;
    flexbench_fem::cycle::cycle_modes(mesh, g, instants, supports, full, lowest, &mut |_, _| {})
        .expect("modes")
}

/// The bench's lever (10 quintic elements) over one crank turn of the simulated default bench
/// at `samples` samples: the mesh, its matrices and the instants (motion and liaison forces from
/// the simulation's inverse dynamics).
pub fn fem_cycle(samples: usize) -> (Mesh, GlobalMatrices, Vec<LeverInstant>) {
    fem_cycle_with(samples, ElementKind::Quintic, 10)
}

/// [`fem_cycle`] with the lever meshed by `elements` elements of `kind`.
pub fn fem_cycle_with(
    samples: usize,
    kind: ElementKind,
    elements: usize,
) -> (Mesh, GlobalMatrices, Vec<LeverInstant>) {
    let (file, sim) = bench_cycle(samples);
    let mech = file.mechanism;
    let sec = file.lever.expect("the lever's section");
    let lever = Lever::from_section(&sec).expect("the lever");
    let mesh = Mesh::new(lever, kind, elements).expect("the mesh");
    let g = mesh.assemble();
    let li = mech.body_index("lever").expect("a lever");
    let centroid = mech.bodies[li].centroid;
    let cols = mech.force_columns();
    let col = |n: &str| cols.iter().position(|c| c == n).expect("a force column");
    let instants = sim
        .iter()
        .map(|s| {
            let InverseSample::Solved { forces, .. } = mech
                .inverse_dynamics(&s.q, &s.qd, &s.qdd, DEFAULT_MAX_CONDITION)
                .expect("inverse dynamics")
            else {
                panic!("toggle")
            };
            let (phi, omega, eps) = (s.q[3 * li + 2], s.qd[3 * li + 2], s.qdd[3 * li + 2]);
            let a_b = LeverInstant::origin_acceleration(
                Vector2::new(s.qdd[3 * li], s.qdd[3 * li + 1]),
                phi,
                omega,
                eps,
                centroid,
            );
            LeverInstant {
                t: s.t,
                phi,
                omega,
                epsilon: eps,
                a_b,
                force_b: Vector2::new(forces[col("B_x")], forces[col("B_y")]),
                force_c: Vector2::new(forces[col("C_x")], forces[col("C_y")]),
                gravity: mech.gravity,
            }
        })
        .collect();
    (mesh, g, instants)
}

/// The signal benchmarks' input: 10 coordinates (5 markers, x and y) of `n` samples at 240
/// samples/s, a bench-like periodic motion at 2.33 Hz with 0.1 mm of white noise
/// (xorshift64 + Box-Muller, fixed seed): time (s) and values (m), deterministic.
pub fn signal_coordinates(n: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
    let t: Vec<f64> = (0..n).map(|k| k as f64 / 240.0).collect();
    let w = std::f64::consts::TAU * 2.33;
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
            t.iter()
                .map(|&x| {
                    a * (w * x + ph).sin()
                        + 0.2 * a * (2.0 * w * x + 2.0 * ph).cos()
                        + 0.05 * a * (3.0 * w * x).sin()
                        + 1e-4 * gauss()
                })
                .collect()
        })
        .collect();
    (t, coords)
}
