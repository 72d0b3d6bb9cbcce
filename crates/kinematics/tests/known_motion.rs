//! The kinematics' estimators on motions whose truth is known: the wind-pump bench simulated
//! forward (absolute coordinates, Lagrange multipliers; the rocker passes C'D vertical twice a
//! turn, the folds where the markers cannot tell the slide's side), its markers computed exactly
//! from the simulated configurations, then with Gaussian noise of a fixed seed.
//!
//! Tolerances, each from what the estimator can do on its data:
//! - exact markers: the fit gives back the driving coordinates within 1e-12 (rad and m; the
//!   loop is closed to 1e-12 by the assembly and Levenberg-Marquardt stops at rounding);
//! - 50 um of noise at 240 samples/s: no sample on the mirror branch (the mirror puts the slide
//!   2 r sin(beta) away, millimetres outside the folds; the true branch keeps it within 1 mm of
//!   the truth everywhere), the smoother's slide within 0.1 mm RMS and its crank angle within
//!   0.5 mrad RMS, the periodic refit no worse than the smoother on a steady turn.

#[path = "../../../tests/common/gauss.rs"]
mod gauss;

use flexbench_kinematics::fit::fit_markers;
use flexbench_kinematics::fold::fit_positions;
use flexbench_kinematics::periodic::{crank_speed, periodic_refit};
use flexbench_kinematics::smoother::smooth_markers_with_covariance;
use flexbench_kinematics::MarkerState;
use flexbench_mechanism::constraints::{body_point, body_point_acc, body_point_vel};
use flexbench_mechanism::file::wind_pump_default;
use flexbench_mechanism::simulate::SimConfig;
use flexbench_mechanism::{BodyRef, Mechanism};
use flexbench_signal::SavGol;
use nalgebra::{DVector, Vector2};

/// The bench simulated for `duration` s at `rate` samples/s after 1 s of settling: times and
/// states (q, q', q'').
fn simulated(duration: f64, rate: f64) -> (Mechanism, Vec<f64>, Vec<[DVector<f64>; 3]>) {
    let mech = wind_pump_default();
    let cfg = SimConfig {
        duration,
        rate,
        settle: 1.0,
        ..SimConfig::default()
    };
    let sim = mech
        .simulate(&cfg, &mut |_| {})
        .expect("the bench simulates");
    let t = sim.samples.iter().map(|s| s.t).collect();
    let states = sim
        .samples
        .iter()
        .map(|s| [s.q.clone(), s.qd.clone(), s.qdd.clone()])
        .collect();
    (mech, t, states)
}

/// Each marker's exact state at every sample, plus Gaussian noise of `sigma` m on positions.
fn markers(
    mech: &Mechanism,
    states: &[[DVector<f64>; 3]],
    sigma: f64,
) -> Vec<Vec<Option<MarkerState>>> {
    let mut g = gauss::Gauss::new(0x5eed_1234_abcd_0001);
    states
        .iter()
        .map(|[q, qd, qdd]| {
            mech.markers
                .iter()
                .map(|mk| {
                    let noise = Vector2::new(g.next(), g.next()) * sigma;
                    Some(MarkerState {
                        p: body_point(q, mk.body, mk.local) + noise,
                        v: body_point_vel(q, qd, mk.body, mk.local),
                        a: body_point_acc(q, qd, qdd, mk.body, mk.local),
                    })
                })
                .collect()
        })
        .collect()
}

/// The driving coordinates of a configuration.
fn drivers(mech: &Mechanism, q: &DVector<f64>) -> Vec<f64> {
    mech.drivers.iter().map(|d| d.coordinate.value(q)).collect()
}

/// Positions only (the smoother and the periodic refit take raw positions).
fn positions(obs: &[Vec<Option<MarkerState>>]) -> Vec<Vec<Option<MarkerState>>> {
    obs.iter()
        .map(|o| {
            o.iter()
                .map(|m| {
                    m.map(|m| MarkerState {
                        p: m.p,
                        v: Vector2::zeros(),
                        a: Vector2::zeros(),
                    })
                })
                .collect()
        })
        .collect()
}

/// The slide's mirror position at a true state (the other side of C', same |C'D|) and the sine
/// of the angle of C'D from the vertical (0 at a fold).
fn mirror(mech: &Mechanism, q: &DVector<f64>) -> (f64, f64) {
    let lever = mech.body_index("lever").expect("the bench has a lever");
    let local = mech
        .point(BodyRef::Body(lever), "C'")
        .expect("the lever has C'");
    let c = body_point(q, lever, local);
    let slide = mech.body_index("slide").expect("the bench has a slide");
    let d = body_point(q, slide, Vector2::zeros());
    (2.0 * c.x - d.x, (d.x - c.x) / (d - c).norm())
}

/// RMS over samples of (estimated - true) for driver `j`, and the largest error.
fn driver_error(
    mech: &Mechanism,
    states: &[[DVector<f64>; 3]],
    fitted: &[Option<DVector<f64>>],
    j: usize,
) -> (f64, f64) {
    let (mut s2, mut worst, mut n) = (0.0, 0.0f64, 0);
    for (st, q) in states.iter().zip(fitted) {
        let q = q.as_ref().expect("every sample fitted");
        let e = drivers(mech, q)[j] - drivers(mech, &st[0])[j];
        // Angles are compared modulo a turn (the simulation counts the crank's turns).
        let e = e - std::f64::consts::TAU * (e / std::f64::consts::TAU).round();
        s2 += e * e;
        worst = worst.max(e.abs());
        n += 1;
    }
    ((s2 / n as f64).sqrt(), worst)
}

#[test]
fn fit_gives_back_the_drivers_from_exact_markers() {
    let (mech, t, states) = simulated(0.45, 240.0);
    let obs = markers(&mech, &states, 0.0);
    let sg = SavGol::new(7, 5).unwrap();
    let (fit, report) = fit_markers(&mech, &t, &obs, &sg).unwrap();
    assert_eq!(report.unfitted_samples, 0);
    // The fit holds the drivers weakly at their predicted values (PRIOR_WEIGHT) so that the
    // folds' blind directions are decided; on exact markers that pull is the only error:
    // PRIOR_WEIGHT^2 times the prediction's error over the markers' sight of the driver.
    let (mut outside, mut inside) = ([0.0f64; 2], [0.0f64; 2]);
    for (st, f) in states.iter().zip(&fit) {
        let q = &f.state.as_ref().expect("fitted").0;
        let (_, sin_beta) = mirror(&mech, &st[0]);
        let worst = if sin_beta.abs() > 0.1 {
            &mut outside
        } else {
            &mut inside
        };
        for (j, (a, b)) in drivers(&mech, q)
            .iter()
            .zip(drivers(&mech, &st[0]))
            .enumerate()
        {
            let e = a - b;
            let e = e - std::f64::consts::TAU * (e / std::f64::consts::TAU).round();
            worst[j] = worst[j].max(e.abs());
        }
    }
    eprintln!("exact markers: outside the folds crank {:.1e} rad, slide {:.1e} m; inside {:.1e} rad, {:.1e} m", outside[0], outside[1], inside[0], inside[1]);
    assert!(
        outside[0] < 1e-6 && outside[1] < 1e-6,
        "outside the folds {outside:?}"
    );
    assert!(
        inside[0] < 1e-5 && inside[1] < 1e-4,
        "inside the folds {inside:?}"
    );
}

#[test]
fn fold_test_keeps_the_true_branch_through_the_crossings() {
    let (mech, t, states) = simulated(0.9, 240.0);
    let obs = markers(&mech, &states, 50e-6);
    let (fitted, folds) = fit_positions(&mech, &t, &obs).unwrap();
    assert!(
        folds.zones >= 4,
        "two turns cross C'D vertical four times: {folds:?}"
    );
    let mut mirrored = Vec::new();
    for (k, (st, q)) in states.iter().zip(&fitted).enumerate() {
        let x = drivers(&mech, q.as_ref().expect("fitted"))[1];
        let truth = drivers(&mech, &st[0])[1];
        let (other, _) = mirror(&mech, &st[0]);
        // Where the two roots are a millimetre apart or more, the fit must be on the true one.
        if (truth - other).abs() > 1e-3 && (x - other).abs() < (x - truth).abs() {
            mirrored.push((k, x - truth));
        }
    }
    eprintln!("folds {folds:?}");
    assert!(
        mirrored.is_empty(),
        "samples on the mirror branch: {mirrored:?}"
    );
}

#[test]
fn smoother_and_periodic_refit_recover_a_steady_motion() {
    let (mech, t, states) = simulated(0.9, 240.0);
    let obs = markers(&mech, &states, 50e-6);
    let sg = SavGol::new(7, 5).unwrap();
    let (fit, _) = fit_markers(&mech, &t, &obs, &sg).unwrap();
    let init: Vec<_> = fit
        .iter()
        .map(|f| f.state.as_ref().map(|s| s.0.clone()))
        .collect();
    let raw = positions(&obs);
    let (smoothed, _, report, cov) =
        smooth_markers_with_covariance(&mech, &t, &raw, &init).unwrap();
    let q_of = |f: &[flexbench_kinematics::FitSample]| -> Vec<Option<DVector<f64>>> {
        f.iter()
            .map(|s| s.state.as_ref().map(|s| s.0.clone()))
            .collect()
    };
    let (fit_crank, _) = driver_error(&mech, &states, &init, 0);
    let (fit_slide, _) = driver_error(&mech, &states, &init, 1);
    let (crank, _) = driver_error(&mech, &states, &q_of(&smoothed), 0);
    let (slide, _) = driver_error(&mech, &states, &q_of(&smoothed), 1);
    eprintln!(
        "RMS errors: fit crank {:.3} mrad, slide {:.3} mm; smoother {:.3} mrad, {:.3} mm; noise estimate {:.1} um",
        fit_crank * 1e3, fit_slide * 1e3, crank * 1e3, slide * 1e3, report.sigma_m * 1e6
    );
    // The smoother pools the samples: better than the sample-by-sample fit on both drivers.
    assert!(
        crank < 0.5 * fit_crank && slide < 0.8 * fit_slide,
        "smoother {crank} {slide}"
    );
    // The noise is estimated from the free rigid fits: within 10 % of the 50 um put in.
    assert!(
        (report.sigma_m / 50e-6 - 1.0).abs() < 0.1,
        "noise {}",
        report.sigma_m
    );
    // Its bands are calibrated: at least 90 % of the true drivers within 2 sigma (95 % nominal).
    for j in 0..2 {
        let inside = states
            .iter()
            .zip(&smoothed)
            .zip(&cov)
            .filter(|((st, f), c)| {
                let q = &f.state.as_ref().expect("smoothed").0;
                let e = drivers(&mech, q)[j] - drivers(&mech, &st[0])[j];
                let e = e - std::f64::consts::TAU * (e / std::f64::consts::TAU).round();
                e.abs() <= 2.0 * c[(3 * j, 3 * j)].sqrt()
            })
            .count();
        let share = inside as f64 / states.len() as f64;
        eprintln!("driver {j}: {:.1} % within 2 sigma", share * 100.0);
        assert!(share >= 0.9, "driver {j}: {share}");
    }
    // Steady motion: the refit in the crank angle pools every turn, no worse than the smoother.
    let (periodic, pr) = periodic_refit(&mech, &t, &raw, &smoothed, (None, None)).unwrap();
    let (p_slide, _) = driver_error(&mech, &states, &q_of(&periodic), 1);
    eprintln!(
        "periodic: slide {:.4} mm RMS, {} harmonics, {:.2} turns",
        p_slide * 1e3,
        pr.harmonics,
        pr.turns
    );
    assert!(p_slide <= slide, "periodic {p_slide} vs smoother {slide}");
    assert!(pr.turns > 1.9, "turns {}", pr.turns);
    // The forces' harmonics an earlier fit found are taken at its crank speed, and found again
    // (by the bench simulated) at a speed a percent away.
    let at = pr.crank_speed;
    let taken = periodic_refit(&mech, &t, &raw, &smoothed, (Some((at, 40)), None)).unwrap();
    assert_eq!(taken.1.forces_harmonics, 40);
    let again = periodic_refit(&mech, &t, &raw, &smoothed, (Some((1.01 * at, 40)), None)).unwrap();
    assert_eq!(again.1.forces_harmonics, pr.forces_harmonics);
    // The harmonics BIC chose, given as they are (a refit that keeps the model): the same fit,
    // bit for bit.
    let fixed = Some((pr.crank_harmonics, pr.harmonics));
    let kept = periodic_refit(&mech, &t, &raw, &smoothed, (None, fixed)).unwrap();
    assert_eq!(kept.1, pr);
    assert_eq!(kept.0, periodic);
    // The speed the harmonics are found at ahead of the refit is the refit's own, bit for bit.
    assert_eq!(crank_speed(&mech, &t, &raw, &smoothed).unwrap(), at);
}

/// The horizontal refined on a window shorter than the recording: the bench simulated for
/// 1.2 s, its markers (50 um of noise) turned by 1 mrad about the origin. Refined on the first
/// 0.5 s, the angle reported is the one the refinement finds on those 0.5 s alone (the same
/// candidates, the same runs), and the motion is then the whole recording's, every sample
/// fitted at that angle.
#[test]
fn horizontal_refined_on_a_window_then_the_whole_recording_fitted() {
    use flexbench_kinematics::estimate::{estimate, rotate, Config};
    let (mech, t, states) = simulated(1.2, 240.0);
    let obs = rotate(&markers(&mech, &states, 50e-6), 1e-3);
    let raw = positions(&obs);
    let sg = SavGol::new(7, 5).unwrap();
    let cfg = Config {
        smoother: true,
        refine_horizontal: flexbench_contracts::names::Switch::On,
        periodic: flexbench_contracts::names::Switch::Off,
        threads: 2,
        horizontal_window_s: 0.5,
        horizontal_found: None,
        keep_model: false,
    };
    let whole = estimate(&mech, &t, &obs, &raw, &sg, &cfg, None).unwrap();
    let m = t.iter().take_while(|&&tk| tk - t[0] <= 0.5).count();
    assert!(m < t.len() / 2);
    let first = estimate(&mech, &t[..m], &obs[..m], &raw[..m], &sg, &cfg, None).unwrap();
    eprintln!(
        "horizontal corrected by {:.2} mrad (the first 0.5 s alone: {:.2} mrad)",
        whole.horizontal.unwrap() * 1e3,
        first.horizontal.unwrap() * 1e3
    );
    assert_eq!(whole.horizontal, first.horizontal);
    assert_eq!(whole.samples.len(), t.len());
    assert!(whole.samples.iter().all(|s| s.state.is_some()));
    assert_eq!(first.samples.len(), m);
}
