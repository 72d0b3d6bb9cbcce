//! Savitzky-Golay against exact rational references (`tests/golden/savgol_reference.json`,
//! written by `scripts/make_savgol_reference.py` with Python's fractions): the weights of every
//! (window, order, derivative, position) case up to order 7 and windows of 61, and the filtered
//! test signal in scipy's five edge modes. Tolerance: 1e-12 relative to the largest exact value
//! (scipy itself is 8e-9 away at order 7, window 61).

use flexbench_signal::{EdgeMode, SavGol};

fn golden() -> serde_json::Value {
    let path =
        std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test"))
            .join("../../tests/golden/savgol_reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().parse::<f64>().unwrap())
        .collect()
}

fn relative(got: &[f64], exact: &[f64]) -> f64 {
    let scale = exact.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    got.iter()
        .zip(exact)
        .fold(0.0f64, |a, (g, e)| a.max((g - e).abs()))
        / scale
}

#[test]
fn weights_match_exact_rationals() {
    let g = golden();
    let mut worst: f64 = 0.0;
    for c in g["coefficients"].as_array().unwrap() {
        let (w, p, d, j) = (
            c["window"].as_u64().unwrap() as usize,
            c["order"].as_u64().unwrap() as usize,
            c["deriv"].as_u64().unwrap() as usize,
            c["pos"].as_u64().unwrap() as usize,
        );
        let exact = numbers(&c["weights"]);
        let sg = SavGol::new(w, p.max(2)).unwrap();
        let got = sg.coefficients().for_interval(d, j, 1.0);
        let r = relative(&got, &exact);
        worst = worst.max(r);
        assert!(r < 1e-12, "window {w} order {p} deriv {d} pos {j}: {r:e}");
    }
    eprintln!("weights: worst relative difference {worst:.2e}");
}

#[test]
fn five_edge_modes_match_exact_rationals() {
    let g = golden();
    let signal: Vec<f64> = g["signal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let mut worst: f64 = 0.0;
    for f in g["filters"].as_array().unwrap() {
        let (w, p, d) = (
            f["window"].as_u64().unwrap() as usize,
            f["order"].as_u64().unwrap() as usize,
            f["deriv"].as_u64().unwrap() as usize,
        );
        let mode = match f["mode"].as_str().unwrap() {
            "interp" => EdgeMode::Interp,
            "mirror" => EdgeMode::Mirror,
            "nearest" => EdgeMode::Nearest,
            "constant" => EdgeMode::Constant(0.0),
            "wrap" => EdgeMode::Wrap,
            other => panic!("{other}"),
        };
        let exact = numbers(&f["output"]);
        let sg = SavGol::new(w, p).unwrap().with_mode(mode);
        let mut out = vec![0.0; signal.len()];
        sg.filter_into(&signal, 1.0, d, &mut out);
        let r = relative(&out, &exact);
        worst = worst.max(r);
        assert!(
            r < 1e-12,
            "window {w} order {p} deriv {d} mode {}: {r:e}",
            mode.name()
        );
    }
    eprintln!("filters: worst relative difference {worst:.2e}");
}
