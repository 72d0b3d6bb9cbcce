//! The default bench's rigid motion as the FEM stage sees it, for the integration tests: the
//! lever's instants (rigid motion and liaison forces at B and C' by the inverse dynamics) from
//! the rigid simulation of mechanisms/wind-pump.toml.

use flexbench_fem::{Lever, LeverInstant};
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_mechanism::simulate::SimConfig;
use flexbench_mechanism::Mechanism;
use nalgebra::Vector2;

/// The default bench's mechanism and its lever (from the file's lever section).
pub fn bench() -> (Mechanism, Lever) {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mechanisms/wind-pump.toml");
    let file = flexbench_mechanism::file::load(&root).expect("the default bench");
    let sec = file.lever.expect("the bench's lever section");
    let lever = Lever::from_section(&sec).expect("the bench's lever");
    (file.mechanism, lever)
}

/// `duration` s of the bench sampled at `rate` Hz after 1 s of settling: the lever's instants.
pub fn bench_instants(mech: &Mechanism, duration: f64, rate: f64) -> Vec<LeverInstant> {
    let sim = mech
        .simulate(
            &SimConfig {
                duration,
                rate,
                settle: 1.0,
                ..SimConfig::default()
            },
            &mut |_| {},
        )
        .expect("the simulation");
    let li = mech.body_index("lever").expect("a lever body");
    let body = &mech.bodies[li];
    let cols = mech.force_columns();
    let col = |n: &str| cols.iter().position(|c| c == n).expect("a force column");
    let (bx, by, cx, cy) = (col("B_x"), col("B_y"), col("C_x"), col("C_y"));
    sim.samples
        .iter()
        .map(|s| {
            let InverseSample::Solved { forces, .. } = mech
                .inverse_dynamics(&s.q, &s.qd, &s.qdd, DEFAULT_MAX_CONDITION)
                .expect("inverse dynamics")
            else {
                panic!("toggle at t = {}", s.t)
            };
            let (phi, omega, eps) = (s.q[3 * li + 2], s.qd[3 * li + 2], s.qdd[3 * li + 2]);
            let a_b = LeverInstant::origin_acceleration(
                Vector2::new(s.qdd[3 * li], s.qdd[3 * li + 1]),
                phi,
                omega,
                eps,
                body.centroid,
            );
            LeverInstant {
                t: s.t,
                phi,
                omega,
                epsilon: eps,
                a_b,
                force_b: Vector2::new(forces[bx], forces[by]),
                force_c: Vector2::new(forces[cx], forces[cy]),
                gravity: mech.gravity,
            }
        })
        .collect()
}
