//! The stage-5/stage-6 contract: the liaison forces at B and C' that the inverse dynamics
//! (Newton-Euler, crates/mechanism) finds for the simulated bench balance the rigid-motion loads
//! of the finite-element lever on its three rigid-body modes, at every sample.

use flexbench_fem::element::Section;
use flexbench_fem::{ElementKind, Lever, LeverInstant, Mesh};
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_mechanism::simulate::SimConfig;
use nalgebra::Vector2;

/// 0.5 s of the default bench at 200 Hz (more than one crank turn): the forces along the
/// lever, across it and the moment about B balance to 1e-9 of the largest term, with both
/// elements and 10 elements (the projection on the rigid modes is exact for any mesh).
#[test]
fn liaison_forces_balance_the_lever_rigid_motion() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pipelines/wind-pump.toml");
    let file = flexbench_mechanism::file::load(&root).expect("the default bench");
    let mech = file.mechanism;
    let sec = file.lever.expect("the bench's lever section");
    let lever = Lever::new(
        sec.length,
        Section {
            young: sec.e,
            density: sec.rho,
            area: sec.area,
            inertia: sec.inertia,
        },
    )
    .unwrap();
    let sim = mech
        .simulate(
            &SimConfig {
                duration: 0.5,
                rate: 200.0,
                settle: 1.0,
                ..SimConfig::default()
            },
            &mut |_| {},
        )
        .expect("the simulation");
    let li = mech.body_index("lever").expect("a lever body");
    let body = &mech.bodies[li];
    assert!(
        (body.mass - lever.line_density() * lever.length).abs() < 1e-12,
        "the lever's mass in the mechanism is rho A l2"
    );
    let cols = mech.force_columns();
    let col = |n: &str| cols.iter().position(|c| c == n).expect("a force column");
    let (bx, by, cx, cy) = (col("B_x"), col("B_y"), col("C_x"), col("C_y"));
    for kind in [ElementKind::Frame, ElementKind::Quintic] {
        let mesh = Mesh::new(lever, kind, 10).unwrap();
        let g = mesh.assemble();
        let mut worst: f64 = 0.0;
        for s in &sim.samples {
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
            let inst = LeverInstant {
                t: s.t,
                phi,
                omega,
                epsilon: eps,
                a_b,
                force_b: Vector2::new(forces[bx], forces[by]),
                force_c: Vector2::new(forces[cx], forces[cy]),
                gravity: mech.gravity,
            };
            let (r, scale) = inst.rigid_balance(&mesh, &g);
            worst = worst.max(r.iter().fold(0.0, |a: f64, v| a.max(v.abs())) / scale);
            // and the axial force by statics from either end agrees
            let n0 = inst.axial_force(&mesh, 0.0);
            let fb = inst.to_lever(&inst.force_b);
            assert!(
                (n0 + fb.x).abs() < 1e-9 * scale,
                "t {}: N(0) {n0} vs -F_Bx {}",
                s.t,
                -fb.x
            );
        }
        eprintln!(
            "{kind:?}: rigid balance within {worst:.1e} of the largest term over {} samples",
            sim.samples.len()
        );
        assert!(worst < 1e-9, "{kind:?}: {worst}");
    }
}
