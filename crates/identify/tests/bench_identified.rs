//! The bench simulated with its spring 20 % stiffer, its weight 20 % heavier and its slide's
//! friction doubled, identified against the shipped file from the exact motion.

use flexbench_identify::{identify, Settings};
use flexbench_mechanism::parameters::with_values;
use flexbench_mechanism::simulate::SimConfig;

const BENCH: &str = include_str!("../../../pipelines/wind-pump.toml");

#[test]
fn the_changed_bench_is_identified_from_its_exact_motion() {
    let truth = [("k", 24000.0), ("mw", 1.8), ("Fr", 10.0)];
    let changed = with_values(BENCH, "changed", &truth).unwrap();
    let m = flexbench_mechanism::file::parse(&changed, "changed")
        .unwrap()
        .mechanism;
    let cfg = SimConfig {
        duration: 1.0,
        rate: 500.0,
        settle: 2.0,
        ..Default::default()
    };
    let sim = m.simulate(&cfg, &mut |_| {}).unwrap();
    let motion: Vec<_> = sim
        .samples
        .iter()
        .map(|s| m.origin_motion(&s.q, &s.qd, &s.qdd))
        .collect();
    let settings = Settings {
        free: truth.iter().map(|(k, _)| k.to_string()).collect(),
        ..Default::default()
    };
    let id = identify(BENCH, "wind-pump.toml", &motion, &[], &settings).unwrap();
    eprintln!("{id:#?}");
    for (e, (k, v)) in id.estimates.iter().zip(truth) {
        assert_eq!(e.key, k);
        assert!(e.determined, "{e:?}");
        assert!((e.value - v).abs() < 1e-6 * v, "{e:?} against {v}");
    }
}
