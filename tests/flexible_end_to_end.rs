//! `flexbench simulate` on mechanism files with an elastic body: the coupled simulation through
//! the command line (docs/flexible.md). Simeon's slider-crank's bodies table at t = 0.1 s
//! against the IVP test set's reference; the bench with its lever elastic writes the contract
//! tables and the elastic table, its markers moving off the rigid lever's line.

use crate::common;

/// The value of `col` for body `body` at time `t` of a bodies table.
fn body_at(
    cols: &std::collections::HashMap<String, Vec<String>>,
    body: &str,
    t: f64,
    col: &str,
) -> f64 {
    let times = common::num(cols, "t");
    let names = &cols["body"];
    let vals = common::num(cols, col);
    (0..times.len())
        .find(|&i| names[i] == body && (times[i] - t).abs() < 1e-9)
        .map(|i| vals[i])
        .unwrap_or_else(|| panic!("no row for {body} at {t}"))
}

#[test]
fn simeons_crank_through_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crank");
    let said = common::ok(&[
        "simulate",
        "--mechanism",
        "tests/mechanisms/flexible-slider-crank.toml",
        "--duration",
        "0.1",
        "--rate",
        "1000",
        "--settle",
        "0",
        "--rtol",
        "1e-10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("energy balance"), "{said}");
    let bodies = common::read_csv(&out.join("bodies.csv"));
    // The rod's frame is its file frame (reduced body): its angle is the test set's phi2; the
    // slider's x is x3 (docs/flexible.md section 5; published reference at t = 0.1 s).
    let phi2 = body_at(&bodies, "rod", 0.1, "phi");
    let x3 = body_at(&bodies, "slider", 0.1, "x");
    assert!(
        (phi2 / -3.311734987910881e-01 - 1.0).abs() < 1e-6,
        "phi2 {phi2}"
    );
    assert!((x3 / 1.69737332671841e-1 - 1.0).abs() < 1e-6, "x3 {x3}");
    let elastic = common::read_csv(&out.join("elastic.csv"));
    let q1 = common::num(&elastic, "rod_q1");
    assert!(
        (q1.last().unwrap() / 1.893192460247178e-04 - 1.0).abs() < 1e-6,
        "q1 {:?}",
        q1.last()
    );
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary.contains("\"coupled_elastic\": true"), "{summary}");
}

#[test]
fn the_bench_with_its_lever_elastic() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("elastic");
    common::ok(&[
        "simulate",
        "--mechanism",
        "mechanisms/wind-pump-elastic.toml",
        "--duration",
        "0.1",
        "--rate",
        "500",
        "--settle",
        "0.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    for f in [
        "tracks.csv",
        "markers.csv",
        "bodies.csv",
        "forces.csv",
        "elastic.csv",
        "forces.png",
        "forces.svg",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let elastic = common::read_csv(&out.join("elastic.csv"));
    let q1 = common::num(&elastic, "lever_q1");
    assert!(q1.iter().all(|v| v.is_finite()) && q1.iter().any(|v| v.abs() > 0.0));
    let strain = common::num(&elastic, "strain_J");
    assert!(strain.iter().all(|v| *v >= 0.0) && strain.iter().any(|v| *v > 0.0));
    // M3 sits mid-lever: with the lever bent it leaves the line through B and C'.
    let markers = common::read_csv(&out.join("markers.csv"));
    assert_eq!(common::num(&markers, "x").len(), 51 * 5);
}
