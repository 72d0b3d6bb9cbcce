//! The wind-pump bench with its lever elastic and coupled (mechanisms/wind-pump-elastic.toml)
//! against the rigid bench (mechanisms/wind-pump.toml): one crank turn after 3 s of settling,
//! the liaison forces at B and C', the motor torque and the markers' accelerations, peak and
//! RMS differences, and the coupled simulation's cost per turn (docs/flexible.md section 6).
//! As the lever is made stiffer the coupled bench tends to the rigid one.

use std::path::PathBuf;

use flexbench_flexible::simulate::FlexConfig;
use flexbench_flexible::system::System;
use flexbench_mechanism::file;
use flexbench_mechanism::simulate::SimConfig;
use flexbench_mechanism::Mechanism;

fn mechanisms() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../mechanisms")
}

/// One turn at 140 rpm, s.
const TURN: f64 = 60.0 / 140.0;

/// Per sample of one turn: the forces row (rigid model's columns) and the markers'
/// accelerations (x, y per marker), rigid then coupled; and the coupled run's seconds.
fn both(elastic: &Mechanism, rigid: &Mechanism) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, f64, f64) {
    let cfg = SimConfig {
        duration: TURN,
        rate: 1000.0,
        settle: 3.0,
        ..Default::default()
    };
    let t0 = std::time::Instant::now();
    let rs = rigid.simulate(&cfg, &mut |_| {}).unwrap();
    eprintln!(
        "rigid: {:.2} s for 3 s of settling and a turn",
        t0.elapsed().as_secs_f64()
    );
    let sys = System::new(elastic).unwrap();
    let fc = FlexConfig {
        duration: TURN,
        rate: 1000.0,
        settle: 3.0,
        rtol: 1e-8,
        atol: 1e-11,
    };
    let t0 = std::time::Instant::now();
    let es = sys.simulate(&fc, &mut |_| {}).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "coupled: {:?}, {secs:.2} s for 3 s of settling and a turn",
        es.report
    );
    assert!(
        es.report.energy_error_relative < 1e-6,
        "energy balance {:e}",
        es.report.energy_error_relative
    );
    let row = |f: Vec<f64>, acc: Vec<f64>| f.into_iter().chain(acc).collect::<Vec<f64>>();
    let rrows = rs
        .samples
        .iter()
        .map(|s| {
            let acc = rigid
                .markers
                .iter()
                .flat_map(|mk| {
                    let a = flexbench_mechanism::constraints::body_point_acc(
                        &s.q, &s.qd, &s.qdd, mk.body, mk.local,
                    );
                    [a.x, a.y]
                })
                .collect();
            row(rigid.forces_from_multipliers(s), acc)
        })
        .collect();
    let erows = es
        .samples
        .iter()
        .map(|s| {
            row(
                sys.forces_row(s),
                sys.marker_states(s)
                    .iter()
                    .flat_map(|m| [m[2].x, m[2].y])
                    .collect(),
            )
        })
        .collect();
    (rrows, erows, secs, es.report.steps as f64)
}

fn load(name: &str) -> Mechanism {
    file::load(&mechanisms().join(name)).unwrap().mechanism
}

/// Peak |difference| and RMS difference of column c, and the rigid column's peak |value|.
fn diff(r: &[Vec<f64>], e: &[Vec<f64>], c: usize) -> (f64, f64, f64) {
    let d: Vec<f64> = r.iter().zip(e).map(|(a, b)| b[c] - a[c]).collect();
    let peak = d.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let rms = (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt();
    (peak, rms, r.iter().fold(0.0f64, |m, x| m.max(x[c].abs())))
}

#[test]
fn the_elastic_lever_changes_the_bench_by_little_and_less_as_it_stiffens() {
    let rigid = load("wind-pump.toml");
    let elastic = load("wind-pump-elastic.toml");
    let mut names = rigid.force_columns();
    names.extend(
        rigid
            .markers
            .iter()
            .flat_map(|m| [format!("{}_ax", m.name), format!("{}_ay", m.name)]),
    );
    let (r, e, secs, steps) = both(&elastic, &rigid);
    eprintln!("| quantity | rigid peak | peak difference | RMS difference |");
    eprintln!("|---|---:|---:|---:|");
    let mut rel_b = 0.0;
    for (c, n) in names.iter().enumerate() {
        let (peak, rms, rpeak) = diff(&r, &e, c);
        eprintln!("| {n} | {rpeak:.4} | {peak:.4} | {rms:.4} |");
        if n == "B_y" {
            rel_b = rms / rpeak;
        }
        assert!(peak.is_finite());
    }
    eprintln!("coupled cost: {secs:.2} s, {steps} steps for 3.43 s simulated");
    // The lever's first bending mode (70 Hz) is far above the crank's 2.3 Hz: the forces at B
    // move by a few percent at most.
    assert!(rel_b > 0.0 && rel_b < 0.05, "B_y RMS difference {rel_b}");
    // A lever 16 times stiffer (its deflections 16 times smaller): the difference shrinks.
    let mut stiff = elastic.clone();
    if let Some(flexbench_mechanism::elastic::Elastic::Beam(b)) =
        stiff.bodies[1].elastic.as_mut().map(|e| &mut e.model)
    {
        b.young *= 16.0;
    }
    let (r2, e2, _, _) = both(&stiff, &rigid);
    let c = names.iter().position(|n| n == "B_y").unwrap();
    let (_, rms2, rpeak2) = diff(&r2, &e2, c);
    eprintln!(
        "B_y RMS difference: {rel_b:.3e} of the peak; 16 times stiffer: {:.3e}",
        rms2 / rpeak2
    );
    assert!(
        rms2 / rpeak2 < 0.2 * rel_b,
        "stiffer lever, B_y RMS difference {} vs {rel_b}",
        rms2 / rpeak2
    );
}

/// The reductions' error on the bench: the lever kept with 1, 2 and 4 of its modes, and by
/// Craig-Bampton with 1, 2 and 4 fixed-interface modes beside its joint's constraint mode,
/// against 8 modes (8 frame elements, 21 nodal coordinates: all of them would put the axial
/// modes in, which the explicit stepper follows at great cost), over one turn: the largest
/// difference of B_y and of the mid-lever marker's transverse acceleration.
#[test]
fn the_modal_reductions_error() {
    use flexbench_mechanism::elastic::Reduction;
    let base = load("wind-pump-elastic.toml");
    let with = |modes: Option<usize>, reduction: Reduction| {
        let mut m = base.clone();
        if let Some(flexbench_mechanism::elastic::Elastic::Beam(b)) =
            m.bodies[1].elastic.as_mut().map(|e| &mut e.model)
        {
            b.modes = modes;
            b.reduction = reduction;
        }
        let sys = System::new(&m).unwrap();
        let fc = FlexConfig {
            duration: TURN,
            rate: 500.0,
            settle: 3.0,
            rtol: 1e-8,
            atol: 1e-11,
        };
        let t0 = std::time::Instant::now();
        let sim = sys.simulate(&fc, &mut |_| {}).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let by = m.force_columns().iter().position(|n| n == "B_y").unwrap();
        let rows: Vec<[f64; 2]> = sim
            .samples
            .iter()
            .map(|s| [sys.forces_row(s)[by], sys.marker_states(s)[2][2].y])
            .collect();
        (rows, secs, sim.report.steps)
    };
    let (full, secs, steps) = with(Some(8), Reduction::Modal);
    eprintln!("| reduction | modes kept | B_y max difference (N) | M3 a_y max difference (m/s^2) | steps | time (s) |");
    eprintln!("|---|---:|---:|---:|---:|---:|");
    eprintln!("| modal | 8 (reference) | - | - | {steps} | {secs:.2} |");
    let mut errs = Vec::new();
    let cases = [Reduction::Modal, Reduction::CraigBampton]
        .into_iter()
        .flat_map(|r| [1usize, 2, 4].map(|k| (r, k)));
    for (reduction, k) in cases {
        let (r, secs, steps) = with(Some(k), reduction);
        let d = |c: usize| {
            r.iter()
                .zip(&full)
                .fold(0.0f64, |m, (a, b)| m.max((a[c] - b[c]).abs()))
        };
        let name = match reduction {
            Reduction::Modal => "modal",
            Reduction::CraigBampton => "Craig-Bampton (+1 constraint mode)",
        };
        eprintln!(
            "| {name} | {k} | {:.2e} | {:.2e} | {steps} | {secs:.2} |",
            d(0),
            d(1)
        );
        errs.push((d(0), d(1)));
    }
    // The marker's error falls with the bending modes kept; B_y's does not: modes 1-6 bend the
    // lever, the 7th (2.9 kHz) is its first axial one, and without it the lever does not
    // stretch under its 344 N (0.3 % of B_y's 42 N peak, docs/flexible.md section 7).
    assert!(
        errs[2].1 < errs[0].1 && errs[2].0 < 0.005 * 42.5,
        "{errs:?}"
    );
    // Craig-Bampton's constraint mode lets the lever stretch: with 4 fixed-interface modes its
    // errors are about half the modal reduction's (found 0.063 against 0.115 N for B_y, 4.6e-3
    // against 8.7e-3 m/s^2 for M3). The 8-mode reference itself moves B_y by 0.031 N when 12
    // modes are kept (docs/flexible.md section 7).
    assert!(
        errs[5].0 < 0.7 * errs[2].0 && errs[5].1 < 0.7 * errs[2].1,
        "{errs:?}"
    );
}

/// The step budget (flexible::stability): the shipped lever (8 frame elements, 4 modes kept)
/// moves no faster than its 4th kept mode (its damping, 2 % of critical in the first mode, is
/// slower there), which the power iteration finds within 1e-5 of the dense eigensolver; the
/// same lever unreduced and meshed with 40 elements has its damping's fast rate near 1e8 Hz
/// and is refused before any step, with the fixes named.
#[test]
fn the_step_budget_admits_the_shipped_lever_and_refuses_an_unreduced_fine_one() {
    use flexbench_flexible::stability::fastest_rate;
    use flexbench_flexible::FlexError;
    use flexbench_mechanism::elastic::Elastic;
    let base = load("wind-pump-elastic.toml");
    let sys = System::new(&base).unwrap();
    let inv = &sys.bodies[1].inv;
    let modes = flexbench_fem::modal::symmetric_modes(&inv.stiffness, &inv.mass_qq).unwrap();
    let top = modes.frequency_hz(modes.eigenvalues.len() - 1);
    let fast = fastest_rate(inv).unwrap() / std::f64::consts::TAU;
    eprintln!("shipped lever: fastest {fast:.3} Hz, highest kept mode {top:.3} Hz");
    assert!((fast / top - 1.0).abs() < 1e-5, "{fast} vs {top}");
    sys.check_step_budget(3.0 + TURN).unwrap();
    let mut fine = base.clone();
    if let Some(Elastic::Beam(b)) = fine.bodies[1].elastic.as_mut().map(|e| &mut e.model) {
        b.modes = None;
        b.elements = 40;
    }
    let err = System::new(&fine)
        .unwrap()
        .simulate(
            &FlexConfig {
                duration: TURN,
                settle: 3.0,
                ..FlexConfig::default()
            },
            &mut |_| {},
        )
        .unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    assert!(matches!(err, FlexError::TooStiff { .. }), "{err:?}");
    assert!(
        text.contains("modes = 4") && text.contains("young in Pa"),
        "{text}"
    );
}
