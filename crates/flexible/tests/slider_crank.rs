//! Simeon's flexible slider-crank, the IVP test set's problem 'crank' (crank at 150 rad/s,
//! elastic rod, slider): flexbench's coupled simulation of tests/mechanisms/flexible-slider-crank.toml
//! (the test set's discretization as a reduced elastic body, written with its reference by
//! scripts/make_flexible_crank.py) against
//!
//! - scipy's DOP853 solution (rtol 1e-13) of the test set's own equations in its own coordinates,
//!   from the same consistent initial state: the peer, to 1e-9 relative (q3, q4: 1e-7, they are
//!   5e-6 m and 8e-6 m and oscillate at 2.2 kHz), their rates likewise to 1e-7 (q3', q4': 1e-6);
//! - the test set's current reference at t = 0.1 s (`cranksoln`, MEBDFI at ATOL = RTOL = 1e-14):
//!   every position and rate within 1e-6 relative (flexbench at rtol 1e-12: at 1e-10 the axial
//!   rate q3' is 1.03e-6 off). (The older SOLN of the test set's 2000 driver,
//!   kept in the file as `reference_2000`, is off in the axial coordinates by 2.1e-6 and 3.6e-6,
//!   in their rates by 8e-4 and 6e-4: a test asserts that it is the older reference that is.)
//! - the energy balance: kinetic + strain energy against the prescribed crank's work, 1e-10 of
//!   the gross work;
//! - the same rod meshed with flexbench's own beam elements: a table of element counts against
//!   the difference from the reference, which shrinks.

use std::path::PathBuf;

use flexbench_flexible::beam::nodal_values;
use flexbench_flexible::simulate::{FlexConfig, FlexSimulation};
use flexbench_flexible::system::System;
use flexbench_mechanism::elastic::{BeamElement, BeamFrame, BeamSpec, Elastic};
use flexbench_mechanism::file;
use flexbench_mechanism::model::Marker;
use flexbench_mechanism::Mechanism;
use nalgebra::Vector2;

/// The compared coordinates at t = 0.1 s: positions, then rates.
const NAMES: [&str; 12] = [
    "phi2", "x3", "q1", "q2", "q3", "q4", "phi2'", "x3'", "q1'", "q2'", "q3'", "q4'",
];

fn mechanisms() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mechanisms")
}

/// The reference file's phi2, x3, q1..q4 and their rates under `key`.
fn reference(key: &str) -> Vec<f64> {
    let path = mechanisms().join("flexible-slider-crank.reference.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    NAMES.iter().map(|n| v[key][n].as_f64().unwrap()).collect()
}

/// phi2, x3 and the rod's elastic coordinates at the last sample, then their rates.
fn state(sys: &System, sim: &FlexSimulation) -> Vec<f64> {
    let s = sim.samples.last().unwrap();
    let (rod, slider) = (sys.offsets[1], sys.offsets[2]);
    let elastic = sys.bodies[1].inv.elastic();
    let mut out = vec![s.p[rod + 2], s.p[slider]];
    out.extend((0..elastic).map(|j| s.p[rod + 3 + j]));
    out.extend([s.pd[rod + 2], s.pd[slider]]);
    out.extend((0..elastic).map(|j| s.pd[rod + 3 + j]));
    out
}

/// The tolerance against scipy of the `i`-th of [`NAMES`]: 1e-9 for positions, 1e-7 for rates;
/// ten times looser for the axial coordinates (q3, q4: 5e-6 m and 8e-6 m at 2.2 kHz).
fn peer_tolerance(i: usize) -> f64 {
    let axial = matches!(i, 4 | 5 | 10 | 11);
    match (i < 6, axial) {
        (true, false) => 1e-9,
        (true, true) | (false, false) => 1e-7,
        (false, true) => 1e-6,
    }
}

fn load(name: &str) -> Mechanism {
    file::load(&mechanisms().join(name)).unwrap().mechanism
}

fn simulate(m: &Mechanism, rtol: f64) -> (System, FlexSimulation) {
    let sys = System::new(m).unwrap();
    let cfg = FlexConfig {
        duration: 0.1,
        rate: 1000.0,
        settle: 0.0,
        rtol,
        atol: rtol * 1e-3,
    };
    let t0 = std::time::Instant::now();
    let sim = sys.simulate(&cfg, &mut |_| {}).unwrap();
    eprintln!(
        "rtol {rtol:e}: {:?} in {:.2} s",
        sim.report,
        t0.elapsed().as_secs_f64()
    );
    (sys, sim)
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

#[test]
fn the_test_sets_crank_matches_scipy_and_the_published_reference() {
    let (sys, sim) = simulate(&load("flexible-slider-crank.toml"), 1e-12);
    let got = state(&sys, &sim);
    let (published, scipy) = (reference("reference"), reference("scipy"));
    for (i, n) in NAMES.iter().enumerate() {
        let (rp, rs) = (rel(got[i], published[i]), rel(got[i], scipy[i]));
        eprintln!(
            "{n}: {:.15e}  published rel {rp:.2e}  scipy rel {rs:.2e}",
            got[i]
        );
        assert!(rs < peer_tolerance(i), "{n} against scipy: {rs:e}");
        assert!(rp < 1e-6, "{n} against the reference: {rp:e}");
    }
    let r = &sim.report;
    assert!(
        r.energy_error_relative < 1e-10,
        "energy balance {:e}",
        r.energy_error_relative
    );
    assert!(
        r.gross_work_j > 100.0,
        "the crank works: {} J",
        r.gross_work_j
    );
    assert!(
        r.max_drift_before_projection < 1e-12,
        "drift {}",
        r.max_drift_before_projection
    );
    // The integration has converged: a 100 times looser tolerance moves no position beyond
    // 1e-6 and no rate beyond 2e-6 (the axial rates, 5e-4 m/s at 2.2 kHz, move most: at rtol
    // 1e-10 q3' is 1.03e-6 from the reference, hence the test's 1e-12).
    let (sys10, sim10) = simulate(&load("flexible-slider-crank.toml"), 1e-10);
    for (i, (a, b)) in state(&sys10, &sim10).iter().zip(&got).enumerate() {
        let tol = if i < 6 { 1e-6 } else { 2e-6 };
        assert!(rel(*a, *b) < tol, "{}: {a} vs {b}", NAMES[i]);
    }
}

/// The test set's older SOLN (its 2000 driver's) is the one at fault in the axial coordinates:
/// the converged solution is 2.1e-6 and 3.6e-6 from its q3, q4 and 8e-4, 6e-4 from its q3', q4',
/// and within 1e-6 of the current reference in each; the lateral coordinates agree with both.
#[test]
fn the_older_reference_is_off_in_the_axial_coordinates() {
    let (current, older) = (reference("reference"), reference("reference_2000"));
    let scipy = reference("scipy");
    for (i, n) in NAMES.iter().enumerate() {
        let (rc, ro) = (rel(scipy[i], current[i]), rel(scipy[i], older[i]));
        eprintln!("{n}: converged against current {rc:.2e}, against the 2000 SOLN {ro:.2e}");
        assert!(rc < 1e-6, "{n}: {rc:e}");
    }
    let older_axial = [4, 5].map(|i| rel(scipy[i], older[i]));
    assert!(
        older_axial.iter().all(|r| (1.5e-6..5e-6).contains(r)),
        "{older_axial:?}"
    );
    let older_rates = [10, 11].map(|i| rel(scipy[i], older[i]));
    assert!(older_rates.iter().all(|r| *r > 3e-4), "{older_rates:?}");
}

/// With the axial mass the ansatz integrates to (FACM [[8,1],[1,2]] / 15 instead of the printed
/// FACM [[8,1],[1,2]]), flexbench and scipy agree as closely, and the axial coordinates move by
/// percent: the printed matrix is what the reference was computed with. (Positions only: the
/// lighter axial mass puts the axial mode near 8.5 kHz, whose rates this tolerance does not hold
/// to 1e-6.)
#[test]
fn the_integrated_axial_mass_moves_the_axial_coordinates() {
    let (sys, sim) = simulate(&load("flexible-slider-crank-corrected.toml"), 1e-10);
    let got = state(&sys, &sim);
    let (published, scipy) = (reference("reference"), reference("scipy_corrected_mass"));
    for (i, n) in NAMES.iter().enumerate().take(6) {
        let rs = rel(got[i], scipy[i]);
        eprintln!(
            "{n}: scipy rel {rs:.2e}, published rel {:.2e}",
            rel(got[i], published[i])
        );
        assert!(rs < peer_tolerance(i), "{n} against scipy: {rs:e}");
    }
    assert!(rel(got[4], published[4]) > 1e-3 && rel(got[5], published[5]) > 1e-3);
}

/// The test set's rod as a beam of flexbench's own frame elements (chord frame: B pinned, the x
/// axis through C), started from the test set's initial displacement and rate fields sampled at
/// the nodes. Compared at t = 0.1 s: phi2, x3, the lateral deflection at the middle v(l2/2)
/// (q1 in the test set) and the axial displacement at the end u(l2) (q4).
#[test]
fn flexbench_beam_elements_converge_towards_the_reference() {
    beam_table(&[2, 4]);
}

/// The whole table of docs/flexible.md (2 to 16 elements; about 11 min: the explicit stepper
/// follows the 16-element mesh's axial modes near 1e6 rad/s). Run with `--ignored`.
#[test]
#[ignore = "11 min: the 8- and 16-element meshes' axial modes near 1e6 rad/s make the explicit stepper slow; `make test` runs 2 and 4 elements with the same assertions"]
fn beam_convergence_table() {
    beam_table(&[2, 4, 8, 16]);
}

fn beam_table(counts: &[usize]) {
    let published = reference("reference");
    let base = load("flexible-slider-crank.toml");
    let pi = std::f64::consts::PI;
    let l2 = 0.3;
    let init = [0.0, 0.0, 1.03339863e-05, 1.69327969e-05];
    let rate = [0.444896105, 0.00463434311, -1.78591076e-06, -2.68938672e-06];
    // The test set's fields: v = q1 sin(pi xi) + q2 sin(2 pi xi), u = q3 4 xi (1 - xi) + q4 xi (2 xi - 1).
    let field = |q: [f64; 4]| {
        move |x: f64| {
            let xi = x / l2;
            [
                q[2] * 4.0 * xi * (1.0 - xi) + q[3] * xi * (2.0 * xi - 1.0),
                (q[2] * (4.0 - 8.0 * xi) + q[3] * (4.0 * xi - 1.0)) / l2,
                q[0] * (pi * xi).sin() + q[1] * (2.0 * pi * xi).sin(),
                (q[0] * pi * (pi * xi).cos() + q[1] * 2.0 * pi * (2.0 * pi * xi).cos()) / l2,
                -(q[0] * pi * pi * (pi * xi).sin() + q[1] * 4.0 * pi * pi * (2.0 * pi * xi).sin())
                    / (l2 * l2),
            ]
        }
    };
    eprintln!("| elements | coordinates | phi2 rel | x3 rel | v(l2/2) rel | u(l2) rel | steps | time (s) |");
    eprintln!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut errors = Vec::new();
    for &elements in counts {
        let spec = BeamSpec {
            element: BeamElement::Frame,
            elements,
            young: 0.2e12,
            density: 7870.0,
            area: 0.008 * 0.008,
            second_moment: 0.008f64.powi(4) / 12.0,
            from: "B".into(),
            to: "C".into(),
            frame: BeamFrame::Chord,
            modes: None,
            reduction: Default::default(),
            damping_beta: 0.0,
        };
        let mut m = base.clone();
        let e = m.bodies[1].elastic.as_mut().unwrap();
        e.initial = nodal_values(&spec, l2, &field(init));
        e.initial_rate = nodal_values(&spec, l2, &field(rate));
        e.model = Elastic::Beam(spec);
        m.markers.push(Marker {
            name: "mid".into(),
            body: 1,
            local: Vector2::new(0.0, 0.0),
            local_frame: Vector2::new(l2 / 2.0, 0.0),
            kind: Default::default(),
            depth: 0.0,
        });
        let t0 = std::time::Instant::now();
        let (sys, sim) = simulate(&m, 1e-9);
        let secs = t0.elapsed().as_secs_f64();
        let s = sim.samples.last().unwrap();
        let rod = &sys.bodies[1];
        let st = sys.state(1, &s.p, &s.pd);
        let c = &rod.points["C"];
        let u_end: f64 = (0..st.q.len()).map(|j| c.phi[(0, j)] * st.q[j]).sum();
        let mid = &rod.points["marker:mid"];
        let v_mid: f64 = (0..st.q.len()).map(|j| mid.phi[(1, j)] * st.q[j]).sum();
        let got = [s.p[sys.offsets[1] + 2], s.p[sys.offsets[2]], v_mid, u_end];
        let refs = [published[0], published[1], published[2], published[5]];
        let r: Vec<f64> = got.iter().zip(&refs).map(|(a, b)| rel(*a, *b)).collect();
        eprintln!(
            "| {elements} | {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {} | {secs:.2} |",
            rod.inv.elastic(),
            r[0],
            r[1],
            r[2],
            r[3],
            sim.report.steps
        );
        errors.push(r);
    }
    // phi2 and x3 within 1e-6 of the reference, v(l2/2) within 1 %, u(l2) within 2 %.
    let last = errors.last().unwrap();
    assert!(
        last[0] < 1e-6 && last[1] < 1e-6 && last[2] < 1e-2 && last[3] < 2e-2,
        "{last:?}"
    );
    assert!(
        errors[0][2] > last[2],
        "the midspan deflection converges: {errors:?}"
    );
}
