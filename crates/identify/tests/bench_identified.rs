//! The bench simulated with its spring 20 % stiffer, its weight 20 % heavier and its slide's
//! friction doubled, identified against the shipped file from the exact motion.

use flexbench_identify::{change_with_motion, identify, Settings};
use flexbench_mechanism::parameters::with_values;
use flexbench_mechanism::sensitivity::OriginMotion;
use flexbench_mechanism::simulate::SimConfig;

const BENCH: &str = include_str!("../../../pipelines/wind-pump.toml");

/// The spring 20 % stiffer, the weight 20 % heavier, the slide's friction doubled.
const TRUTH: [(&str, f64); 3] = [("k", 24000.0), ("mw", 1.8), ("Fr", 10.0)];

/// The changed bench's bodies about their origins, simulated for 1 s at 500 samples/s, and
/// the samples' times (s).
fn motion() -> (Vec<f64>, Vec<Vec<OriginMotion>>) {
    motion_of(&TRUTH)
}

/// The bench with the numbers `values` simulated as [`motion`] is.
fn motion_of(values: &[(&str, f64)]) -> (Vec<f64>, Vec<Vec<OriginMotion>>) {
    let changed = with_values(BENCH, "changed", values).unwrap();
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
    let t = sim.samples.iter().map(|s| s.t).collect();
    let motion = sim
        .samples
        .iter()
        .map(|s| m.origin_motion(&s.q, &s.qd, &s.qdd))
        .collect();
    (t, motion)
}

fn free(keys: &[&str]) -> Settings {
    Settings {
        free: keys.iter().map(|k| k.to_string()).collect(),
        ..Default::default()
    }
}

/// The three changed numbers set free: each identified to 1e-6 in two iterations, the laws'
/// residuals gone.
#[test]
fn the_changed_bench_is_identified_from_its_exact_motion() {
    let (t, motion) = motion();
    let id = identify(
        BENCH,
        "wind-pump.toml",
        &t,
        &motion,
        &[],
        &free(&["k", "mw", "Fr"]),
    )
    .unwrap();
    for (e, (k, v)) in id.estimates.iter().zip(TRUTH) {
        assert_eq!(e.key, k);
        assert!(e.determined, "{e:?}");
        assert!((e.value - v).abs() < 1e-6 * v, "{e:?} against {v}");
    }
    assert_eq!((id.rank, id.unknowns), (3, 3));
    for f in &id.equations {
        assert!(f.rms_after < 1e-9 * f.rms_before, "{f:?}");
    }
}

/// Every mass, inertia and law number set free: gravity and the laws scale together, so the
/// motion fixes only their ratios (the rank is one short); one number is held at the file's
/// value with why, and the laws' residuals still vanish; a length named is refused with why.
#[test]
fn a_free_scale_is_found_and_held() {
    let (t, motion) = motion();
    let keys = [
        "m1", "J1", "m3", "J3", "mw", "mD", "rho", "k", "xD0", "cD", "Fr", "Km",
    ];
    let id = identify(BENCH, "wind-pump.toml", &t, &motion, &[], &free(&keys)).unwrap();
    eprintln!("{:#?}", id.estimates);
    let held: Vec<_> = id.estimates.iter().filter(|e| !e.determined).collect();
    assert!(!held.is_empty(), "{:?}", id.estimates);
    assert!(held
        .iter()
        .any(|e| e.why_not.as_deref().unwrap().contains("fixes their scale")));
    let err = identify(BENCH, "wind-pump.toml", &t, &motion, &[], &free(&["l2"])).unwrap_err();
    assert!(
        err.to_string().contains("a length of the geometry"),
        "{err}"
    );
    let err = identify(
        BENCH,
        "wind-pump.toml",
        &t,
        &motion,
        &[],
        &free(&["stiffness"]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no such number"), "{err}");
}

/// The estimates' change with the motion, first order with the weights held: the same motion
/// changes nothing; the motion of the bench with its spring 1 % stiffer still (k 24,240 N/m)
/// moves k by 240 N/m within 2 % (236.5: the rows' Jacobian is the first motion's) and mw and
/// Fr by under 0.1 % and 0.2 % of theirs, as the exact identification of that motion does
/// (240 and nothing).
#[test]
fn the_estimates_change_with_the_motion_as_identified_again() {
    let (t, motion) = motion();
    let settings = free(&["k", "mw", "Fr"]);
    let id = identify(BENCH, "wind-pump.toml", &t, &motion, &[], &settings).unwrap();
    let same = change_with_motion(
        BENCH,
        "wind-pump.toml",
        &t,
        (&motion, &motion),
        &[],
        &settings,
        &id,
    )
    .unwrap();
    assert!(same.iter().all(|d| *d == 0.0), "{same:?}");
    let stiffer = [("k", 24240.0), ("mw", 1.8), ("Fr", 10.0)];
    let (t2, moved) = motion_of(&stiffer);
    assert_eq!(t, t2);
    let d = change_with_motion(
        BENCH,
        "wind-pump.toml",
        &t,
        (&motion, &moved),
        &[],
        &settings,
        &id,
    )
    .unwrap();
    let again = identify(BENCH, "wind-pump.toml", &t, &moved, &[], &settings).unwrap();
    eprintln!(
        "first order {d:?}; identified again {:?}",
        again
            .estimates
            .iter()
            .zip(&id.estimates)
            .map(|(a, b)| a.value - b.value)
            .collect::<Vec<_>>()
    );
    assert!((d[0] - 240.0).abs() < 4.8, "{d:?}");
    assert!(d[1].abs() < 1.8e-3 && d[2].abs() < 2e-2, "{d:?}");
}
