//! A prescribed rigid motion: the lever clamped at B and spun about it at constant omega (a
//! rotating cantilever, hub radius 0). Its in-plane bending frequencies from the symmetric
//! problem ([K] + [K_g(N)] - omega^2 [M], N the centrifugal tension by statics) against the
//! reference of scripts/rotating_beam_reference.py (shooting with scipy, 1e-10;
//! tests/golden/rotating_beam.json): mu_chordwise = sqrt(mu_flapwise^2 - eta^2), with
//! mu = omega_n L^2 sqrt(rho A / EI) and eta = Omega L^2 sqrt(rho A / EI).

use flexbench_fem::cycle::instant_modes;
use flexbench_fem::element::Section;
use flexbench_fem::modal::transverse_share;
use flexbench_fem::{ElementKind, Lever, LeverInstant, Mesh, Supports};
use nalgebra::Vector2;

/// 10 quintic elements reproduce bending modes 1-4 within 4.9e-8 relative at every speed from
/// eta = 0 to 12 (asserted 1e-7); 10 frame elements within 2e-3. (This test found the clamped
/// support holding the quintic element's curvature v'' at the root, which is not kinematic:
/// 3.3 % off before.) The full problem's Coriolis coupling of the in-plane bending with the
/// axial motion, which the reference leaves out, moves mode 1 by 1.7e-3 at most (printed;
/// asserted below 5e-3).
#[test]
fn rotating_cantilever_matches_the_reference() {
    let golden: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/golden/rotating_beam.json"))
            .expect("the reference");
    let lever = Lever::new(
        0.45,
        Section {
            young: 210e9,
            density: 7850.0,
            area: 1.5e-4,
            inertia: 4.5e-10,
        },
    )
    .unwrap();
    let (ei, ra, l) = (
        lever.section.young * lever.section.inertia,
        lever.line_density(),
        lever.length,
    );
    let scale = l * l * (ra / ei).sqrt();
    for (kind, tol) in [(ElementKind::Quintic, 1e-7), (ElementKind::Frame, 2e-3)] {
        let mesh = Mesh::new(lever, kind, 10).unwrap();
        let g = mesh.assemble();
        let free = mesh.free_dofs(Supports::ClampedFree);
        let m = g.m.select_rows(&free).select_columns(&free);
        let mut worst: f64 = 0.0;
        let mut coriolis: f64 = 0.0;
        for row in golden["rows"].as_array().unwrap() {
            let eta = row["eta"].as_f64().unwrap();
            let omega = eta / scale;
            let inst = LeverInstant::prescribed(omega, 0.0, Vector2::zeros());
            let im = instant_modes(&mesh, &g, &inst, Supports::ClampedFree, 8).unwrap();
            let bending: Vec<usize> = (0..im.modes.eigenvalues.len())
                .filter(|&i| {
                    transverse_share(&mesh, &m, &free, &im.modes.shapes.column(i).into_owned())
                        > 0.5
                })
                .take(4)
                .collect();
            for (n, &i) in bending.iter().enumerate() {
                let mu_f = row["mu"][n].as_f64().unwrap();
                let want = (mu_f * mu_f - eta * eta).sqrt();
                let got = im.modes.eigenvalues[i].sqrt() * scale;
                worst = worst.max((got / want - 1.0).abs());
                if n == 0 {
                    if let Some(Some((f, _))) = im.full.get(i) {
                        coriolis =
                            coriolis.max((f * std::f64::consts::TAU * scale / got - 1.0).abs());
                    }
                }
            }
        }
        eprintln!("{kind:?}: bending modes 1-4 within {worst:.1e} of the reference for eta 0-12; Coriolis moves mode 1 by {coriolis:.1e}");
        assert!(worst < tol, "{kind:?}: {worst}");
        assert!(coriolis < 5e-3, "{coriolis}");
    }
}
