//! Criterion benchmarks of flexbench (see benches/) and the workloads they share with the
//! scipy peers.

use flexbench_fem::assembly::GlobalMatrices;
use flexbench_fem::element::Section;
use flexbench_fem::{ElementKind, Lever, LeverInstant, Mesh};
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_mechanism::simulate::SimConfig;
use nalgebra::Vector2;

/// The bench's lever (10 quintic elements) over one crank turn of the simulated default bench
/// at `samples` samples: the mesh, its matrices and the instants (motion and liaison forces from
/// the simulation's inverse dynamics).
pub fn fem_cycle(samples: usize) -> (Mesh, GlobalMatrices, Vec<LeverInstant>) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pipelines/wind-pump.toml");
    let file = flexbench_mechanism::file::load(&root).expect("the default bench");
    let mech = file.mechanism;
    let sec = file.lever.expect("the lever's section");
    let lever = Lever::new(sec.length, Section { young: sec.e, density: sec.rho, area: sec.area, inertia: sec.inertia }).expect("the lever");
    let mesh = Mesh::new(lever, ElementKind::Quintic, 10).expect("the mesh");
    let g = mesh.assemble();
    let turn = 60.0 / 140.0;
    let rate = samples as f64 / turn;
    let sim = mech.simulate(&SimConfig { duration: (samples as f64 - 0.5) / rate, rate, settle: 3.0, ..SimConfig::default() }, &mut |_| {}).expect("the simulation");
    let li = mech.body_index("lever").expect("a lever");
    let centroid = mech.bodies[li].centroid;
    let cols = mech.force_columns();
    let col = |n: &str| cols.iter().position(|c| c == n).expect("a force column");
    let instants = sim
        .samples
        .iter()
        .take(samples)
        .map(|s| {
            let InverseSample::Solved { forces, .. } = mech.inverse_dynamics(&s.q, &s.qd, &s.qdd, DEFAULT_MAX_CONDITION).expect("inverse dynamics") else { panic!("toggle") };
            let (phi, omega, eps) = (s.q[3 * li + 2], s.qd[3 * li + 2], s.qdd[3 * li + 2]);
            let a_b = LeverInstant::origin_acceleration(Vector2::new(s.qdd[3 * li], s.qdd[3 * li + 1]), phi, omega, eps, centroid);
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
