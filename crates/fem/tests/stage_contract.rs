//! The stage-5/stage-6 contract: the liaison forces at B and C' that the inverse dynamics
//! (Newton-Euler, crates/mechanism) finds for the simulated bench balance the rigid-motion loads
//! of the finite-element lever on its three rigid-body modes, at every sample.

mod common;

use flexbench_fem::{ElementKind, Mesh};

/// 0.5 s of the default bench at 200 Hz (more than one crank turn): the forces along the
/// lever, across it and the moment about B balance to 1e-9 of the largest term, with both
/// elements and 10 elements (the projection on the rigid modes is exact for any mesh).
#[test]
fn liaison_forces_balance_the_lever_rigid_motion() {
    let (mech, lever) = common::bench();
    let li = mech.body_index("lever").expect("a lever body");
    assert!(
        (mech.bodies[li].mass - lever.line_density() * lever.length).abs() < 1e-12,
        "the lever's mass in the mechanism is rho A l2"
    );
    let instants = common::bench_instants(&mech, 0.5, 200.0);
    for kind in [ElementKind::Frame, ElementKind::Quintic] {
        let mesh = Mesh::new(lever, kind, 10).unwrap();
        let g = mesh.assemble();
        let mut worst: f64 = 0.0;
        for inst in &instants {
            let (r, scale) = inst.rigid_balance(&mesh, &g);
            worst = worst.max(r.iter().fold(0.0, |a: f64, v| a.max(v.abs())) / scale);
            // and the axial force by statics from either end agrees
            let n0 = inst.axial_force(&mesh, 0.0);
            let fb = inst.to_lever(&inst.force_b);
            assert!(
                (n0 + fb.x).abs() < 1e-9 * scale,
                "t {}: N(0) {n0} vs -F_Bx {}",
                inst.t,
                -fb.x
            );
        }
        eprintln!(
            "{kind:?}: rigid balance within {worst:.1e} of the largest term over {} samples",
            instants.len()
        );
        assert!(worst < 1e-9, "{kind:?}: {worst}");
    }
}
