//! The zero-lag Butterworth filter against scipy (`tests/golden/butterworth_reference.json`,
//! written by `scripts/make_butterworth_reference.py`): the single pass's corrected cutoff to
//! 1e-14, the filtered test signal to 1e-10 of its peak against `sosfiltfilt` (orders 1 to 6)
//! and against `filtfilt` on the transfer function (order 2), with the same odd padding; the
//! cutoffs chosen by Winter's residual analysis and by the Durbin-Watson criterion against an
//! independent numpy implementation of the same rules to 1e-8 Hz, the noise line's intercept
//! to 1e-10 of itself.

use flexbench_signal::butterworth::{Butterworth, Cutoff, Design};

#[derive(serde::Deserialize)]
struct Golden {
    fs: f64,
    x: Vec<f64>,
    cases: Vec<Case>,
    selection: Selection,
}

#[derive(serde::Deserialize)]
struct Case {
    order: usize,
    cutoff_hz: f64,
    padlen: usize,
    pass_wn: f64,
    sosfiltfilt: Vec<f64>,
    filtfilt: Option<Vec<f64>>,
}

#[derive(serde::Deserialize)]
struct Selection {
    order: usize,
    noise_intercept: f64,
    residual_cutoff_hz: f64,
    durbin_watson_cutoff_hz: f64,
}

fn golden() -> Golden {
    let path =
        std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test"))
            .join("../../tests/golden/butterworth_reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the golden file")).expect("JSON")
}

/// Largest difference over the peak of the reference.
fn relative(got: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(got.len(), reference.len());
    let peak = reference.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    got.iter()
        .zip(reference)
        .fold(0.0f64, |a, (g, r)| a.max((g - r).abs()))
        / peak
}

#[test]
fn filtering_matches_scipy() {
    let g = golden();
    for c in &g.cases {
        let d = Design::new(c.order, c.cutoff_hz, g.fs).unwrap();
        let wn = 2.0 * d.pass_cutoff_hz() / g.fs;
        assert!(
            (wn - c.pass_wn).abs() < 1e-14,
            "order {}: {wn} against {}",
            c.order,
            c.pass_wn
        );
        let y = d.filtfilt_padded(&g.x, c.padlen);
        let e = relative(&y, &c.sosfiltfilt);
        eprintln!(
            "order {} at {} Hz, padding {}: {e:.1e} of the peak from sosfiltfilt",
            c.order, c.cutoff_hz, c.padlen
        );
        assert!(e < 1e-10, "order {}: {e}", c.order);
        if let Some(ba) = &c.filtfilt {
            let e = relative(&y, ba);
            eprintln!("  {e:.1e} from filtfilt");
            assert!(e < 1e-10, "order {} against filtfilt: {e}", c.order);
        }
    }
}

#[test]
fn cutoff_choices_match_an_independent_implementation() {
    let g = golden();
    let s = &g.selection;
    let t: Vec<f64> = (0..g.x.len()).map(|k| k as f64 / g.fs).collect();
    let present = vec![true; g.x.len()];
    let choose = |cutoff| {
        let bw = Butterworth::new(s.order, cutoff).unwrap();
        bw.filter("x", &t, &g.x, &present).unwrap().1.unwrap()
    };
    let residual = choose(Cutoff::Residual(None));
    eprintln!(
        "residual analysis: {:.6} Hz (numpy {:.6}), noise {:.4e} m (numpy {:.4e})",
        residual.cutoff_hz,
        s.residual_cutoff_hz,
        residual.noise_rms.unwrap(),
        s.noise_intercept
    );
    assert!((residual.cutoff_hz - s.residual_cutoff_hz).abs() < 1e-8);
    assert!((residual.noise_rms.unwrap() / s.noise_intercept - 1.0).abs() < 1e-10);
    let dw = choose(Cutoff::DurbinWatson);
    eprintln!(
        "Durbin-Watson: {:.6} Hz (numpy {:.6}), d = {:.4} there",
        dw.cutoff_hz, s.durbin_watson_cutoff_hz, dw.durbin_watson
    );
    assert!((dw.cutoff_hz - s.durbin_watson_cutoff_hz).abs() < 1e-8);
    assert!((dw.durbin_watson - 2.0).abs() < 0.05);
}
