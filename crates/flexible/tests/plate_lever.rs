//! The bench's lever as a plane-stress plate (8-node quadrilaterals, 40 x 2) in the coupled
//! simulation, against the same lever as a beam (8 frame elements): the frame's lowest
//! frequencies, and one turn of the coupled bench (docs/flexible.md section 8).

use std::path::PathBuf;

use flexbench_flexible::simulate::FlexConfig;
use flexbench_flexible::system::System;
use flexbench_mechanism::elastic::{Elastic, PlateElement, PlateSpec};
use flexbench_mechanism::file;
use flexbench_mechanism::Mechanism;

fn lever_frequencies(sys: &System) -> Vec<f64> {
    let inv = &sys.bodies[1].inv;
    let modes = flexbench_fem::modal::symmetric_modes(&inv.stiffness, &inv.mass_qq).unwrap();
    (0..4).map(|i| modes.frequency_hz(i)).collect()
}

fn plate(beam: &Mechanism, modes: Option<usize>) -> Mechanism {
    let mut m = beam.clone();
    let e = m.bodies[1].elastic.as_mut().unwrap();
    let beta = match &e.model {
        Elastic::Beam(b) => b.damping_beta,
        _ => 0.0,
    };
    e.model = Elastic::Plate(PlateSpec {
        element: PlateElement::Q8,
        along: 40,
        across: 2,
        young: 210e9,
        poisson: 0.3,
        density: 7850.0,
        thickness: 0.025,
        height: 0.006,
        from: "B".into(),
        to: "C'".into(),
        modes,
        damping_beta: beta,
    });
    m
}

#[test]
fn the_plate_lever_in_the_coupled_bench() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../mechanisms/wind-pump-elastic.toml");
    let beam = file::load(&path).unwrap().mechanism;
    // Unreduced, the lowest frequencies of each in its chord frame.
    let mut beam_full = beam.clone();
    if let Some(Elastic::Beam(b)) = beam_full.bodies[1].elastic.as_mut().map(|e| &mut e.model) {
        b.modes = None;
    }
    let fb = lever_frequencies(&System::new(&beam_full).unwrap());
    let fp = lever_frequencies(&System::new(&plate(&beam, None)).unwrap());
    eprintln!("| mode | beam, 8 frame elements (Hz) | plate, 40 x 2 Q8 (Hz) | plate / beam - 1 |");
    eprintln!("|---:|---:|---:|---:|");
    for i in 0..4 {
        eprintln!(
            "| {} | {:.3} | {:.3} | {:+.2e} |",
            i + 1,
            fb[i],
            fp[i],
            fp[i] / fb[i] - 1.0
        );
    }
    // Chord frame (the far end free to slide along the axis): the lowest modes are bending
    // ones, the plate's below the beam's by shear and rotary inertia (Timoshenko), 3e-4 in the
    // first, more above.
    assert!(fp[0] < fb[0] && fp[0] / fb[0] > 0.999, "{fp:?} vs {fb:?}");
    // One turn of the coupled bench, lever reduced to 4 modes either way.
    let cfg = FlexConfig {
        duration: 60.0 / 140.0,
        rate: 500.0,
        settle: 3.0,
        rtol: 1e-8,
        atol: 1e-11,
    };
    let run = |m: &Mechanism| {
        let sys = System::new(m).unwrap();
        let t0 = std::time::Instant::now();
        let sim = sys.simulate(&cfg, &mut |_| {}).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        assert!(sim.report.energy_error_relative < 1e-6);
        let rows: Vec<Vec<f64>> = sim
            .samples
            .iter()
            .map(|s| {
                let mut r = sys.forces_row(s);
                r.extend(sys.marker_states(s).iter().map(|m| m[2].y));
                r
            })
            .collect();
        (rows, secs)
    };
    let (rb, sb) = run(&beam);
    let (rp, sp) = run(&plate(&beam, Some(4)));
    let names = beam.force_columns();
    let by = names.iter().position(|n| n == "B_y").unwrap();
    let m3 = names.len() + 2;
    let diff = |c: usize| {
        rb.iter()
            .zip(&rp)
            .fold(0.0f64, |m, (a, b)| m.max((a[c] - b[c]).abs()))
    };
    let peak = |c: usize| rb.iter().fold(0.0f64, |m, a| m.max(a[c].abs()));
    eprintln!(
        "plate against beam over a turn: B_y peak difference {:.4} N of {:.2} N, M3 a_y {:.4} of {:.2} m/s^2; {sb:.2} s (beam) and {sp:.2} s (plate)",
        diff(by), peak(by), diff(m3), peak(m3)
    );
    assert!(diff(by) < 1e-3 * peak(by) && diff(m3) < 0.05 * peak(m3));
}
