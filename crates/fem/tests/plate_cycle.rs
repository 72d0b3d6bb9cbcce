//! The lever as a plane-stress plate along the bench's cycle against the beam model
//! (docs/flexible.md section 8): the lowest four frequencies at every instant of a crank turn,
//! both with their prestress (the beam's axial force by statics, the plate's whole in-plane
//! stress), the difference stated and explained.

mod common;

use flexbench_fem::assembly::Supports;
use flexbench_fem::modal::symmetric_modes;
use flexbench_fem::plane::{PlaneMaterial, PlateMesh, QuadKind};
use flexbench_fem::plate_cycle::PlateLever;
use flexbench_fem::{ElementKind, LeverInstant, Mesh};

const MODES: usize = 4;

/// Per mode, (lowest, highest) of `f` over the instants.
fn range(f: &[Vec<f64>], i: usize) -> (f64, f64) {
    f.iter()
        .map(|v| v[i])
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        })
}

/// One turn of the default bench at 140 rpm, 100 instants: the plate (Q8, 64 x 2) and the
/// beam (10 quintic elements), both pinned at B and C'.
///
/// - At rest the plate lies below the beam by its depth's shear and rotary inertia (section 8's
///   table: -2.8e-4 to -6e-3 in modes 1-4).
/// - Along the turn the prestress swings the beam's first frequency by -3.1 % to +3.6 %, and the
///   plate's f^2 moves by the beam's f^2 shift (the prestress's share of f^2 is the same in
///   both: `plate_cycle::tests::rigid_motion_prestress_matches_the_beams_axial_force`): the
///   plate's frequency predicted as sqrt(f_plate,rest^2 + f_beam^2 - f_beam,rest^2) holds
///   within 1e-7 at every instant (found 1.4e-8). The ratio plate / beam thus moves along the turn by the rest
///   offset times the relative f^2 swing (2e-5 in mode 1), no more.
/// - The plate's followed modes equal the dense solver's at mid-turn within 1e-8.
#[test]
fn the_plate_lever_along_the_cycle_against_the_beam() {
    let (mech, lever) = common::bench();
    let turn = 60.0 / 140.0;
    let instants = common::bench_instants(&mech, turn, 100.0 / turn);
    let mesh = Mesh::new(lever, ElementKind::Quintic, 10).unwrap();
    let g = mesh.assemble();
    let t0 = std::time::Instant::now();
    let beam: Vec<Vec<f64>> = flexbench_fem::cycle::cycle_modes(
        &mesh,
        &g,
        &instants,
        Supports::Pinned,
        0,
        MODES,
        &mut |_, _| {},
    )
    .unwrap()
    .iter()
    .map(|m| (0..MODES).map(|i| m.modes.frequency_hz(i)).collect())
    .collect();
    let beam_time = t0.elapsed().as_secs_f64();
    let material = PlaneMaterial {
        young: lever.section.young,
        poisson: 0.3,
        density: lever.section.density,
        thickness: 0.025,
    };
    let height = lever.section.area / material.thickness;
    let t0 = std::time::Instant::now();
    let plate_mesh = PlateMesh::rectangle(QuadKind::Q8, lever.length, height, 64, 2, &[]).unwrap();
    let plate = PlateLever::new(plate_mesh, material).unwrap();
    let freq = |prestress: bool, at: &[LeverInstant]| -> Vec<Vec<f64>> {
        plate
            .cycle_modes(at, MODES, prestress, &mut |_, _| {})
            .unwrap()
            .iter()
            .map(|m| (0..MODES).map(|i| m.frequency_hz(i)).collect())
            .collect()
    };
    let plated = freq(true, &instants);
    let plate_time = t0.elapsed().as_secs_f64();
    let bare = freq(false, &instants);
    let rest = LeverInstant::prescribed(0.0, 0.0, nalgebra::Vector2::zeros());
    let beam_rest: Vec<f64> = {
        let m = flexbench_fem::cycle::instant_modes(&mesh, &g, &rest, Supports::Pinned, 0).unwrap();
        (0..MODES).map(|i| m.modes.frequency_hz(i)).collect()
    };
    let plate_rest = freq(true, &[rest]).remove(0);
    let mid = instants.len() / 2;
    let dense =
        symmetric_modes(&plate.instant_stiffness(&instants[mid], true), plate.mass()).unwrap();
    for (i, f) in plated[mid].iter().enumerate() {
        let d = f / dense.frequency_hz(i) - 1.0;
        assert!(
            d.abs() < 1e-8,
            "mode {}: followed against dense {d:e}",
            i + 1
        );
    }
    eprintln!(
        "{} instants; beam {beam_time:.2} s, plate (matrices, prestress cases and the turn) {plate_time:.2} s",
        instants.len()
    );
    eprintln!("| mode | beam along the turn (Hz) | plate along the turn (Hz) | plate without prestress (Hz) | plate / beam - 1 at rest | along the turn | plate against its prediction from the beam's f^2 shift |");
    eprintln!("|---:|---:|---:|---:|---:|---:|---:|");
    let rests = [beam_rest, plate_rest];
    for i in 0..MODES {
        table_row(i, [&beam, &plated, &bare], &rests);
    }
}

/// Mode `i`'s row of the table, `turn` = the beam's, the plate's and the unstressed plate's
/// frequencies along the turn, `rest` = the beam's and the plate's at rest; the plate's
/// frequency checked against its prediction from the beam's f^2 shift.
fn table_row(i: usize, turn: [&[Vec<f64>]; 3], rest: &[Vec<f64>; 2]) {
    let [beam, plated, bare] = turn;
    let [beam_rest, plate_rest] = rest;
    let (b, p, n) = (range(beam, i), range(plated, i), range(bare, i));
    let at_rest = plate_rest[i] / beam_rest[i] - 1.0;
    let ratio: Vec<Vec<f64>> = plated
        .iter()
        .zip(beam)
        .map(|(p, b)| vec![p[i] / b[i] - 1.0])
        .collect();
    let predicted: Vec<Vec<f64>> = plated
        .iter()
        .zip(beam)
        .map(|(p, b)| {
            let f2 = plate_rest[i].powi(2) + b[i].powi(2) - beam_rest[i].powi(2);
            vec![p[i] / f2.sqrt() - 1.0]
        })
        .collect();
    let (r, e) = (range(&ratio, 0), range(&predicted, 0));
    eprintln!(
        "| {} | {:.3} - {:.3} | {:.3} - {:.3} | {:.3} - {:.3} | {at_rest:+.3e} | {:+.3e} to {:+.3e} | {:+.1e} to {:+.1e} |",
        i + 1, b.0, b.1, p.0, p.1, n.0, n.1, r.0, r.1, e.0, e.1
    );
    assert!(
        e.0.abs() < 1e-7 && e.1.abs() < 1e-7,
        "mode {}: the plate against its prediction from the beam's shift {e:?}",
        i + 1
    );
}
