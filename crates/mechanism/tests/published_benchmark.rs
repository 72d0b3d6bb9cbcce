//! The simulator against a published multibody benchmark: Andrews' squeezing mechanism
//! (Hairer & Wanner, Solving ODE II, sec. VII.7; the Test Set for IVP Solvers' reference solution
//! at t = 0.03 s, computed with PSIDE at tolerances 1e-14). The mechanism file and the reference
//! are written by `scripts/make_andrews.py`.
//!
//! Tolerance: each of the seven angles within 1e-6 of its range over the 0.03 s (the issue's
//! criterion); the integrator runs at rtol 1e-10, so the error expected is far smaller.

use std::f64::consts::PI;
use std::path::Path;

use flexbench_mechanism::file::load;
use flexbench_mechanism::simulate::SimConfig;

#[test]
fn andrews_squeezer_matches_the_reference_solution() {
    let root =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test")).join("../..");
    let file = load(&root.join("tests/mechanisms/andrews-squeezer.toml")).unwrap();
    let m = file.mechanism;
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/mechanisms/andrews-squeezer.reference.json"))
            .unwrap(),
    )
    .unwrap();
    let cfg = SimConfig {
        duration: 0.03,
        rate: 10_000.0,
        settle: 0.0,
        ..Default::default()
    };
    let sim = m.simulate(&cfg, &mut |_| {}).unwrap();
    // The test set's relative angles from the bodies' absolute angles (scripts/make_andrews.py).
    let angles = |q: &nalgebra::DVector<f64>| -> [(&str, f64); 7] {
        let a = |i: usize| q[3 * i + 2];
        [
            ("beta", a(0)),
            ("Theta", a(1) - a(0) - PI),
            ("gamma", a(2)),
            ("Phi", a(3) - a(4) + PI / 2.0),
            ("delta", a(4)),
            ("Omega", a(5) - a(6)),
            ("epsilon", a(6)),
        ]
    };
    let mut lo = [f64::INFINITY; 7];
    let mut hi = [f64::NEG_INFINITY; 7];
    for s in &sim.samples {
        for (k, (_, v)) in angles(&s.q).iter().enumerate() {
            lo[k] = lo[k].min(*v);
            hi[k] = hi[k].max(*v);
        }
    }
    let last = sim.samples.last().unwrap();
    assert!((last.t - 0.03).abs() < 1e-12);
    for (k, (name, v)) in angles(&last.q).iter().enumerate() {
        let r = reference["reference"][name].as_f64().unwrap();
        let range = hi[k] - lo[k];
        let err = (v - r).abs();
        eprintln!("{name:8} flexbench {v:+.12} reference {r:+.12} error {err:.2e} ({:.2e} of its range {range:.4})", err / range);
        assert!(
            err <= 1e-6 * range,
            "{name}: error {err:e} exceeds 1e-6 of its range {range}"
        );
    }
    assert!(sim.report.max_drift_before_projection < 1e-9);
}
