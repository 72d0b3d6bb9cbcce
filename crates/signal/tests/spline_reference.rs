//! The smoothing spline against references (`tests/golden/spline_reference.json`, written by
//! `scripts/make_spline_reference.py`). The cubic (m = 2) against scipy's
//! `make_smoothing_spline` at two given smoothing parameters: values, velocities and
//! accelerations within 1e-8 of their peaks; with both choosing by GCV (scipy's own minimiser
//! and flexbench's), within 1e-6 (the two minimisers stop at slightly different parameters).
//! The quintic (m = 3) against a dense solve of the normal equations: at two given parameters
//! the values and derivatives 1 to 3 within 1e-8 of their peaks, RSS within 1e-8 and tr A
//! within 1e-9 relative; flexbench's GCV choice within 1e-4 of the reference's parameter
//! (log scale: the GCV curve is flat at its minimum) and its values within 1e-7 of the peak.

use flexbench_signal::spline::{GcvSpline, Smoothing};

#[derive(serde::Deserialize)]
struct Golden {
    fs: f64,
    y: Vec<f64>,
    cubic: Vec<Cubic>,
    quintic: Vec<Quintic>,
    quintic_gcv: Quintic,
    cubic_gcv: Quintic,
    scipy_cubic_gcv: ScipyChoice,
}

#[derive(serde::Deserialize)]
struct ScipyChoice {
    lam: f64,
    gcv: f64,
}

#[derive(serde::Deserialize)]
struct Cubic {
    lam: f64,
    value: Vec<f64>,
    rate: Vec<f64>,
    accel: Vec<f64>,
}

#[derive(serde::Deserialize)]
struct Quintic {
    p: f64,
    rss: f64,
    trace: f64,
    value: Vec<f64>,
    rate: Vec<f64>,
    accel: Vec<f64>,
    jerk: Vec<f64>,
}

fn golden() -> Golden {
    let path =
        std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test"))
            .join("../../tests/golden/spline_reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the golden file")).expect("JSON")
}

/// Largest difference over the reference's peak.
fn relative(got: &[f64], reference: &[f64]) -> f64 {
    let peak = reference.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    got.iter()
        .zip(reference)
        .fold(0.0f64, |a, (g, r)| a.max((g - r).abs()))
        / peak
}

/// Numbers in scientific notation, for the printed agreement.
fn sci(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.1e}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `order`-th derivative of `spline` at the times `t`.
fn at(spline: &flexbench_signal::spline::RunSpline, t: &[f64], order: usize) -> Vec<f64> {
    t.iter().map(|&x| spline.derivative(x, order)).collect()
}

#[test]
fn cubic_matches_scipy() {
    let g = golden();
    let t: Vec<f64> = (0..g.y.len()).map(|k| k as f64 / g.fs).collect();
    let present = vec![true; t.len()];
    for c in &g.cubic {
        let s = GcvSpline::new(2, Smoothing::Fixed(c.lam)).unwrap();
        let (d, _) = s.filter("y", &t, &g.y, &present).unwrap();
        let e = [
            relative(&d.value, &c.value),
            relative(&d.rate, &c.rate),
            relative(&d.accel, &c.accel),
        ];
        eprintln!(
            "cubic, lam {:e}: {} of the peaks from scipy",
            c.lam,
            sci(&e)
        );
        assert!(e.iter().all(|v| *v < 1e-8), "{}: {e:?}", c.lam);
    }
    // By GCV: the dense reference's minimum, and a lower GCV than scipy's own choice.
    let s = GcvSpline::new(2, Smoothing::Gcv).unwrap();
    let (d, choice) = s.filter("y", &t, &g.y, &present).unwrap();
    let (c, r) = (choice.unwrap(), &g.cubic_gcv);
    eprintln!(
        "cubic GCV: p {:.6e} against {:.6e}, GCV {:.6e}; scipy's lam {:.3e}, GCV {:.6e}",
        c.p, r.p, c.gcv, g.scipy_cubic_gcv.lam, g.scipy_cubic_gcv.gcv
    );
    assert!((c.p.log10() - r.p.log10()).abs() < 1e-4);
    assert!(relative(&d.value, &r.value) < 1e-7 && relative(&d.accel, &r.accel) < 1e-6);
    assert!(c.gcv < g.scipy_cubic_gcv.gcv);
}

#[test]
fn quintic_matches_the_dense_normal_equations() {
    let g = golden();
    let t: Vec<f64> = (0..g.y.len()).map(|k| k as f64 / g.fs).collect();
    let s = GcvSpline::new(3, Smoothing::Gcv).unwrap();
    for q in &g.quintic {
        let (spline, rss, trace) = s.fit_run(&t, &g.y, q.p).unwrap();
        let e: Vec<f64> = [&q.value, &q.rate, &q.accel, &q.jerk]
            .iter()
            .enumerate()
            .map(|(d, r)| relative(&at(&spline, &t, d), r))
            .collect();
        eprintln!(
            "quintic, p {:e}: derivatives {} of the peaks; RSS {:.1e}, tr A {:.1e} relative",
            q.p,
            sci(&e),
            rss / q.rss - 1.0,
            trace / q.trace - 1.0
        );
        assert!(e.iter().all(|v| *v < 1e-8), "{e:?}");
        assert!((rss / q.rss - 1.0).abs() < 1e-8 && (trace / q.trace - 1.0).abs() < 1e-9);
    }
    let q = &g.quintic_gcv;
    let (d, choice) = s.filter("y", &t, &g.y, &vec![true; t.len()]).unwrap();
    let c = choice.unwrap();
    eprintln!(
        "quintic GCV: p {:.6e} against {:.6e}, tr A {:.4} against {:.4}",
        c.p, q.p, c.dof, q.trace
    );
    assert!((c.p.log10() - q.p.log10()).abs() < 1e-4);
    assert!(relative(&d.value, &q.value) < 1e-7 && relative(&d.accel, &q.accel) < 1e-6);
}

/// The quintic's choices on the reference signal (1 mm of noise): by GCV its noise estimate
/// RSS / (n - tr A) within 15 % of 1 mm; with the noise known (1 mm) the p chosen minimises
/// the estimated mean squared error RSS/n - sigma^2 + 2 sigma^2 tr A / n (no lower at 0.5 %
/// either side), within a decade of the GCV's.
#[test]
fn quintic_noise_estimate_and_known_noise() {
    let g = golden();
    let t: Vec<f64> = (0..g.y.len()).map(|k| k as f64 / g.fs).collect();
    let present = vec![true; t.len()];
    let gcv = GcvSpline::new(3, Smoothing::Gcv).unwrap();
    let c = gcv.filter("y", &t, &g.y, &present).unwrap().1.unwrap();
    eprintln!("GCV: noise {:.4e} m, p {:.3e}", c.noise, c.p);
    assert!((c.noise / 1e-3 - 1.0).abs() < 0.15);
    let sigma = 1e-3;
    let known = GcvSpline::new(3, Smoothing::KnownNoise(sigma)).unwrap();
    let k = known.filter("y", &t, &g.y, &present).unwrap().1.unwrap();
    let n = t.len() as f64;
    let mse = |p: f64| {
        let (_, rss, tr) = known.fit_run(&t, &g.y, p).unwrap();
        rss / n - sigma * sigma + 2.0 * sigma * sigma * tr / n
    };
    eprintln!("known noise: p {:.3e}, estimated MSE {:.4e}", k.p, mse(k.p));
    assert!(mse(k.p) <= mse(k.p * 1.005) && mse(k.p) <= mse(k.p / 1.005));
    assert!((k.p.log10() - c.p.log10()).abs() < 1.0);
}
