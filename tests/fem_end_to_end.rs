//! `flexbench fem` on the simulated bench: the modal table against a first-order perturbation
//! of the pinned lever's exact frequencies by the axial force and the rotation, and the
//! refusals of bad input.

use crate::common;

use common::{flexbench, num, ok, read_csv};

/// The bench's lever, as in mechanisms/wind-pump.toml.
const L: f64 = 0.45;
const EI: f64 = 210e9 * 4.5e-10;
const RHO_A: f64 = 7850.0 * 1.5e-4;

/// Over one crank turn of the simulated bench (200 Hz, 0.43 s), the followed modes 1-4 at every
/// sample agree with the pinned beam's frequency perturbed to first order by the instant's axial
/// force N(X) (from the forces table and the lever's motion, by statics) and the centrifugal
/// softening:
///   f_n^2 = f_n0^2 (1 + (2/L) int N(X) cos^2(n pi X / L) dX / (n^2 P_cr)) - omega^2 / (4 pi^2),
/// P_cr = pi^2 EI / L^2. Measured: within 1.5e-7 relative (the second-order terms: N / P_cr is
/// below 0.1), asserted 1e-6. The full problem's frequencies within 1e-6 of the symmetric ones,
/// damping ratios below 1e-8 in size; the modes' shapes followed with MAC above 0.999.
#[test]
fn modes_along_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let sim = common::simulate_bench(dir.path(), "sim", "0.43", "200", "3");
    let out = dir.path().join("fem");
    ok(&[
        "fem",
        "--kinematics",
        sim.join("bodies.csv").to_str().unwrap(),
        "--forces",
        sim.join("forces.csv").to_str().unwrap(),
        "--mechanism",
        "mechanisms/wind-pump.toml",
        "--elements",
        "10",
        "--element",
        "quintic",
        "--modes",
        "6",
        "--out",
        out.to_str().unwrap(),
    ]);
    for f in [
        "modal.csv",
        "modal.parquet",
        "modes-3-6.png",
        "modes-3-6.svg",
        "modes-1-2.png",
        "modes-1-2.svg",
        "mode-shapes.png",
        "mode-shapes.svg",
        "summary.json",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["smallest_mac_along_the_cycle"].as_f64().unwrap() > 0.999);
    assert!(summary["full_vs_symmetric_max_relative"].as_f64().unwrap() < 1e-6);
    assert!(summary["max_abs_damping_ratio"].as_f64().unwrap() < 1e-8);
    assert!(summary["rigid_balance_worst_relative"].as_f64().unwrap() < 1e-9);
    // The instant's loads from the tables.
    let bodies = read_csv(&sim.join("bodies.csv"));
    let forces = read_csv(&sim.join("forces.csv"));
    let lever: Vec<usize> = (0..bodies["body"].len())
        .filter(|&i| bodies["body"][i] == "lever")
        .collect();
    let (phi, omega, eps, ax, ay) = (
        num(&bodies, "phi"),
        num(&bodies, "omega"),
        num(&bodies, "epsilon"),
        num(&bodies, "ax"),
        num(&bodies, "ay"),
    );
    let (cx, cy) = (num(&forces, "C_x"), num(&forces, "C_y"));
    let modal = read_csv(&out.join("modal.csv"));
    let (mode, freq) = (num(&modal, "mode"), num(&modal, "freq_hz"));
    assert_eq!(freq.len(), 6 * lever.len());
    let p_cr = std::f64::consts::PI.powi(2) * EI / (L * L);
    let mut worst: f64 = 0.0;
    for (k, &i) in lever.iter().enumerate() {
        let (p, w, e) = (phi[i], omega[i], eps[i]);
        let (c, s) = (p.cos(), p.sin());
        // a_B = a_G - (eps J - omega^2) R c, c = (L/2, 0); lever-frame components.
        let rc = [c * L / 2.0, s * L / 2.0];
        let a_b = [
            ax[i] + e * rc[1] + w * w * rc[0],
            ay[i] - e * rc[0] + w * w * rc[1],
        ];
        let a_ox = c * a_b[0] + s * a_b[1];
        let g_x = s * -9.81;
        let f_cx = c * cx[k] + s * cy[k];
        let axial =
            |x: f64| f_cx + RHO_A * ((g_x - a_ox) * (L - x) + w * w * (L * L - x * x) / 2.0);
        for n in 1..=4usize {
            let arg = |x: f64| n as f64 * std::f64::consts::PI * x / L;
            // Simpson on 400 intervals
            let m = 400;
            let h = L / m as f64;
            let integral: f64 = (0..=m)
                .map(|j| {
                    let x = j as f64 * h;
                    let wgt = if j == 0 || j == m {
                        1.0
                    } else if j % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    wgt * axial(x) * arg(x).cos().powi(2)
                })
                .sum::<f64>()
                * h
                / 3.0;
            let f0 = (n * n) as f64 * std::f64::consts::PI / (2.0 * L * L) * (EI / RHO_A).sqrt();
            let want = (f0 * f0 * (1.0 + 2.0 / L * integral / ((n * n) as f64 * p_cr))
                - w * w / (4.0 * std::f64::consts::PI.powi(2)))
            .sqrt();
            let row = (0..mode.len())
                .find(|&r| r / 6 == k && mode[r] as usize == n)
                .unwrap();
            worst = worst.max((freq[row] / want - 1.0).abs());
        }
    }
    eprintln!(
        "modes 1-4 within {worst:.1e} of the first-order perturbation over {} samples",
        lever.len()
    );
    assert!(worst < 1e-6, "{worst}");
}

/// Bad input: a mechanism file without the lever's section, forces of another run, a bodies
/// table without the lever, an unknown element: each refused by name, nothing written.
#[test]
fn bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sim = common::simulate_bench(dir.path(), "sim", "0.1", "100", "0.5");
    let other = common::simulate_bench(dir.path(), "other", "0.2", "100", "0.5");
    let out = dir.path().join("fem");
    let run = |bodies: &std::path::Path, forces: &std::path::Path, mech: &str, extra: &[&str]| {
        let mut args = vec![
            "fem",
            "--kinematics",
            bodies.to_str().unwrap(),
            "--forces",
            forces.to_str().unwrap(),
            "--mechanism",
            mech,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = flexbench(&args);
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = run(
        &sim.join("bodies.csv"),
        &other.join("forces.csv"),
        "mechanisms/wind-pump.toml",
        &[],
    );
    assert!(e.contains("same run"), "{e}");
    let e = run(
        &sim.join("bodies.csv"),
        &sim.join("forces.csv"),
        "tests/mechanisms/andrews-squeezer.toml",
        &[],
    );
    assert!(e.contains("the FEM needs the lever's section"), "{e}");
    let markers = sim.join("markers.csv");
    let e = run(
        &markers,
        &sim.join("forces.csv"),
        "mechanisms/wind-pump.toml",
        &[],
    );
    assert!(
        e.contains("no rows for body 'lever'") || e.contains("column"),
        "{e}"
    );
    let e = run(
        &sim.join("bodies.csv"),
        &sim.join("forces.csv"),
        "mechanisms/wind-pump.toml",
        &["--element", "cubic"],
    );
    assert!(e.contains("quintic or frame"), "{e}");
    assert!(!out.exists(), "nothing written on a refusal");
}

/// The comparison with a measured deflection: a fit_residuals table made from the model's own
/// deflection at the markers plus a different line across the lever at every sample (what a
/// rigid fit leaves or absorbs) plus white noise of 2 um per coordinate. After each one's line
/// is removed, the difference is the noise's detrended part: RMS sigma sqrt(3/5) = 1.55 um for
/// five markers, within 10 %; the correlation above 0.99.
#[test]
fn measured_deflection_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let sim = common::simulate_bench(dir.path(), "sim", "0.43", "200", "3");
    let args = |out: &std::path::Path| -> Vec<String> {
        [
            "fem",
            "--kinematics",
            sim.join("bodies.csv").to_str().unwrap(),
            "--forces",
            sim.join("forces.csv").to_str().unwrap(),
            "--mechanism",
            "mechanisms/wind-pump.toml",
            "--out",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let first = dir.path().join("fem");
    let a = args(&first);
    ok(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let defl = read_csv(&first.join("deflection.csv"));
    let (t, x, v) = (num(&defl, "t"), num(&defl, "x_lever"), num(&defl, "v"));
    let bodies = read_csv(&sim.join("bodies.csv"));
    let phi: Vec<f64> = (0..bodies["body"].len())
        .filter(|&i| bodies["body"][i] == "lever")
        .map(|i| bodies["phi"][i].parse().unwrap())
        .collect();
    let sigma = 2e-6;
    let mut g = common::gauss::Gauss::new(7);
    let mut csv = vec!["t,marker,rx,ry".to_string()];
    for r in 0..t.len() {
        let k = r / 5;
        let (s, c) = phi[k].sin_cos();
        // measured - fitted = (v + a + b x) n + noise; the table holds fitted - measured.
        let line = 30e-6 * (k as f64 * 0.7).sin() + 80e-6 * (k as f64 * 0.3).cos() * x[r];
        let w = v[r] + line;
        let (dx, dy) = (-s * w + sigma * g.next(), c * w + sigma * g.next());
        csv.push(format!("{},{},{},{}", t[r], defl["marker"][r], -dx, -dy));
    }
    let residuals = dir.path().join("fit_residuals.csv");
    std::fs::write(&residuals, csv.join("\n")).unwrap();
    let second = dir.path().join("fem2");
    let mut b = args(&second);
    b.extend([
        "--measured".to_string(),
        residuals.to_str().unwrap().to_string(),
    ]);
    ok(&b.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(second.join("summary.json")).unwrap())
            .unwrap();
    let m = &summary["measured"];
    let (diff, corr) = (
        m["rms_difference_m"].as_f64().unwrap(),
        m["correlation"].as_f64().unwrap(),
    );
    let want = sigma * (3.0f64 / 5.0).sqrt();
    eprintln!("difference {:.2} um RMS (noise's detrended part {:.2} um), correlation {corr:.4}, model {:.1} um RMS", diff * 1e6, want * 1e6, m["rms_model_detrended_m"].as_f64().unwrap() * 1e6);
    assert!((diff / want - 1.0).abs() < 0.1, "{diff} vs {want}");
    assert!(corr > 0.99, "{corr}");
    let table = read_csv(&second.join("deflection.csv"));
    assert!(table.contains_key("v_measured_detrended") && table.contains_key("v_detrended"));
}
