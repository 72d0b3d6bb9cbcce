//! The forces figure of the simulate and process jobs: the liaison forces over time, in the
//! bench frame.

use std::path::{Path, PathBuf};

use crate::{write_figure, Curve, Figure, Panel, ReportError};

/// The forces figure: the liaison forces at B and C' (components and magnitude) over time.
/// Columns `B_x, B_y, C_x, C_y` are used when the mechanism has them (the bench); otherwise every
/// joint force of the table (a pair `<joint>_x`, `<joint>_y`) is drawn. `rows` holds each
/// sample's forces in the order of `columns` (None: not solved), `sigma` their standard
/// deviations (drawn as bands of 2 sigma on the components); the figure is written at `stem`
/// (PNG and SVG).
pub fn forces_figure(
    t: &[f64],
    columns: &[String],
    rows: &[Option<Vec<f64>>],
    sigma: Option<&[Option<Vec<f64>>]>,
    caption: &str,
    stem: &Path,
) -> Result<[PathBuf; 2], ReportError> {
    let idx = |n: &str| columns.iter().position(|c| c == n);
    let mut joints: Vec<(String, String)> = Vec::new();
    for c in columns {
        if let Some(j) = c.strip_suffix("_x") {
            if idx(&format!("{j}_y")).is_some() {
                joints.push((j.to_string(), j.to_string()));
            }
        }
    }
    if idx("B_x").is_some() && idx("C_x").is_some() {
        joints = vec![
            ("B".into(), "B: force of the crank on the lever".into()),
            ("C".into(), "C': force of the rocker on the lever".into()),
        ];
    }
    let mut panels = Vec::new();
    for (j, title) in joints {
        let (ix, iy) = (
            idx(&format!("{j}_x")).unwrap_or(0),
            idx(&format!("{j}_y")).unwrap_or(0),
        );
        let get = |f: &dyn Fn(&[f64]) -> f64| -> Vec<Option<f64>> {
            rows.iter().map(|r| r.as_ref().map(|r| f(r))).collect()
        };
        // Bands of 2 sigma on the components.
        let band = |i: usize| -> Vec<Option<f64>> {
            sigma
                .map(|s| s.iter().map(|r| r.as_ref().map(|r| 2.0 * r[i])).collect())
                .unwrap_or_default()
        };
        panels.push(Panel {
            title,
            y_label: "force (N), bench frame".into(),
            curves: vec![
                Curve {
                    label: format!("{j}_x"),
                    x: t.to_vec(),
                    y: get(&|r| r[ix]),
                    band: band(ix),
                },
                Curve {
                    label: format!("{j}_y"),
                    x: t.to_vec(),
                    y: get(&|r| r[iy]),
                    band: band(iy),
                },
                Curve {
                    label: format!("|{j}|"),
                    x: t.to_vec(),
                    y: get(&|r| r[ix].hypot(r[iy])),
                    band: Vec::new(),
                },
            ],
        });
    }
    let fig = Figure {
        caption: caption.into(),
        x_label: "time t (s)".into(),
        panels,
    };
    write_figure(&fig, stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// The bench's figure draws B and C' (x, y and magnitude), and the figure's numbers say so.
    #[test]
    fn the_bench_draws_b_and_c() {
        let dir = std::env::temp_dir().join(format!("forces-figure-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cols = columns(&["A_x", "A_y", "B_x", "B_y", "C_x", "C_y", "motor_torque"]);
        let rows = vec![
            Some(vec![0.0, 0.0, 3.0, 4.0, 1.0, 0.0, 2.0]),
            None,
            Some(vec![0.0, 0.0, 6.0, 8.0, 0.0, 1.0, 2.0]),
        ];
        let [png, svg] =
            forces_figure(&[0.0, 0.1, 0.2], &cols, &rows, None, "c", &dir.join("f")).unwrap();
        assert!(png.exists() && svg.exists());
        let table = std::fs::read_to_string(dir.join("f.figure.csv")).unwrap();
        assert!(table.contains("|B|") && table.contains("|C|"), "{table}");
        assert!(
            !table.contains("A_x"),
            "A is not drawn on the bench: {table}"
        );
        assert!(
            table.contains(",5") && table.contains(",10"),
            "|B| = 5 and 10: {table}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Another linkage's figure draws every joint with both components.
    #[test]
    fn another_linkage_draws_every_joint() {
        let dir = std::env::temp_dir().join(format!("forces-figure-gen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cols = columns(&["O_x", "O_y", "P_x", "P_y", "Q_x", "torque"]);
        let rows = vec![Some(vec![1.0, 0.0, 0.0, 2.0, 5.0, 0.0]); 2];
        forces_figure(&[0.0, 1.0], &cols, &rows, None, "c", &dir.join("f")).unwrap();
        let table = std::fs::read_to_string(dir.join("f.figure.csv")).unwrap();
        assert!(table.contains("|O|") && table.contains("|P|"), "{table}");
        assert!(!table.contains("|Q|"), "Q has no y component: {table}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
