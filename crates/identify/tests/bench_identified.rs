//! The bench simulated with its spring 20 % stiffer, its weight 20 % heavier and its slide's
//! friction doubled, identified against the shipped file from the exact motion.

use flexbench_identify::{change_with_file, change_with_motion, identify, Settings};
use flexbench_mechanism::parameters::with_values;
use flexbench_mechanism::sensitivity::OriginMotion;
use flexbench_mechanism::simulate::SimConfig;

const BENCH: &str = include_str!("../../../mechanisms/wind-pump.toml");

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

/// `motion` with its accelerations disturbed by pseudo-random normal errors of `sigma_a` (m/s^2)
/// and `sigma_alpha` (rad/s^2), as a smoothed recording's are (a fixed xorshift and Box-Muller:
/// the same errors on every run).
fn disturbed(
    motion: &[Vec<OriginMotion>],
    (sigma_a, sigma_alpha): (f64, f64),
) -> Vec<Vec<OriginMotion>> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let mut normal = move || {
        let (u, v) = (uniform(), uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    motion
        .iter()
        .map(|bodies| {
            bodies
                .iter()
                .map(|b| {
                    let mut b = *b;
                    b.a.x += sigma_a * normal();
                    b.a.y += sigma_a * normal();
                    b.alpha += sigma_alpha * normal();
                    b
                })
                .collect()
        })
        .collect()
}

/// A number held at the file's value moved by a tolerance's worth (the rocker's arm 3 %
/// heavier, its inertia 10 % larger, the crank's inertia 10 % larger), on the changed bench's
/// motion with its accelerations disturbed (0.2 m/s^2, 2 rad/s^2: the equations' residuals
/// then of a recording's size, not of rounding, which their robust scales would follow): the
/// estimates' first-order change with the weights held is identifying the same motion again
/// with the moved file to 0.2 of their standard deviations, and to 25 % where that change is
/// over half of one (identified again, the rows are weighted anew: up to 0.17 sigma and 22 %,
/// the crank's inertia), and exactly linear in the number; an unmoved file changes nothing.
#[test]
fn the_estimates_change_with_a_held_number_as_identified_again() {
    let (t, exact) = motion();
    let motion = disturbed(&exact, (0.2, 2.0));
    let settings = free(&["k", "mw", "Fr"]);
    let id = identify(BENCH, "wind-pump.toml", &t, &motion, &[], &settings).unwrap();
    let change = |moved: &str| {
        change_with_file(
            (BENCH, moved),
            "wind-pump.toml",
            &t,
            &motion,
            &[],
            &settings,
            &id,
        )
        .unwrap()
    };
    let same = change(BENCH);
    assert!(same.iter().all(|d| *d == 0.0), "{same:?}");
    for (key, file, moved) in [
        ("m3", 0.8, 0.824),
        ("J3", 0.004, 0.0044),
        ("J1", 0.05, 0.055),
    ] {
        let text = with_values(BENCH, "moved", &[(key, moved)]).unwrap();
        let d = change(&text);
        let twice = change(&with_values(BENCH, "moved", &[(key, 2.0 * moved - file)]).unwrap());
        let again = identify(&text, "moved", &t, &motion, &[], &settings).unwrap();
        let a: Vec<f64> = again
            .estimates
            .iter()
            .zip(&id.estimates)
            .map(|(a, b)| a.value - b.value)
            .collect();
        let sigma: Vec<f64> = id.estimates.iter().map(|e| e.sigma.unwrap()).collect();
        eprintln!("{key} = {moved}: first order {d:?}; identified again {a:?}; sigma {sigma:?}");
        for ((d, a), s) in d.iter().zip(&a).zip(&sigma) {
            assert!(
                (d - a).abs() <= 0.2 * s,
                "{key}: {d} against {a} (sigma {s})"
            );
            if a.abs() > 0.5 * s {
                assert!((d - a).abs() <= 0.25 * a.abs(), "{key}: {d} against {a}");
            }
        }
        for (d, d2) in d.iter().zip(&twice) {
            assert!(
                (2.0 * d - d2).abs() <= 1e-9 * d.abs().max(1e-12),
                "{key}: {d} and {d2}"
            );
        }
    }
}
