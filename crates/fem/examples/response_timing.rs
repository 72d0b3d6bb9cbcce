//! Time the forced response's steps on the bench's lever (10 quintic elements).
use flexbench_fem::element::Section;
use flexbench_fem::response::{forced_response, Damping, ResponseConfig};
use flexbench_fem::{ElementKind, Lever, LeverInstant, Mesh, Supports};
use nalgebra::Vector2;

fn main() {
    let lever = Lever::new(
        0.45,
        Section {
            young: 210e9,
            density: 7850.0,
            area: 1.5e-4,
            inertia: 4.5e-10,
        },
    )
    .expect("lever");
    let mesh = Mesh::new(lever, ElementKind::Quintic, 10).expect("mesh");
    let g = mesh.assemble();
    let inst: Vec<LeverInstant> = (0..=100)
        .map(|i| {
            let mut x = LeverInstant::prescribed(15.0, 100.0, Vector2::new(1.0, 2.0));
            x.t = i as f64 * 1e-3;
            x
        })
        .collect();
    let start = std::time::Instant::now();
    let r = forced_response(
        &mesh,
        &g,
        &inst,
        Supports::Pinned,
        &ResponseConfig {
            damping: Damping::from_ratio(0.01, 70.0, 2500.0),
            max_step: 5e-5,
        },
        &mut |_, _| {},
    )
    .expect("response");
    let el = start.elapsed().as_secs_f64();
    println!(
        "{} steps in {el:.3} s: {:.1} us per step",
        r.steps,
        el / r.steps as f64 * 1e6
    );
}
