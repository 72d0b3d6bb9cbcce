//! The fem stage's tables and figures: the modal table, the mode shapes, the deflection.

use super::*;

/// The modal table, the figures (eigenfrequencies 3-6 and 1-2 along the cycle, mode shapes)
/// and, with the forced response, the deflection table and figure.
pub(super) fn write_outputs(
    lever: &LeverResult,
    cfg: &FemConfig,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let (crank, count) = (lever.followed.crank, lever.followed.count);
    let deg: Vec<f64> = crank.iter().map(|a| (a - crank[0]).to_degrees()).collect();
    let x_label = "crank angle phi1 from the first sample (deg)";
    let panel = |label: usize| Panel {
        title: format!("mode {}", label + 1),
        y_label: "frequency (Hz)".into(),
        curves: vec![Curve {
            label: format!("f{} (symmetric problem)", label + 1),
            x: deg.clone(),
            y: lever.modal.per_mode[label].clone(),
            band: Vec::new(),
        }],
    };
    let caption = format!(
        "{} {} elements, {}: ",
        cfg.elements,
        cfg.element.name(),
        cfg.supports.name()
    );
    let high = Figure {
        caption: format!(
            "{caption}eigenfrequencies 3-6 of the lever along the cycle (seed 001 Fig. 8)"
        ),
        x_label: x_label.into(),
        panels: (2..count.min(6)).map(panel).collect(),
    };
    let low = Figure {
        caption: format!(
            "{caption}the first two eigenfrequencies along the cycle (seed 000 Fig. 6)"
        ),
        x_label: x_label.into(),
        panels: (0..count.min(2)).map(panel).collect(),
    };
    let first = &lever.followed.first;
    let shapes = shapes_figure(
        lever.mesh,
        first,
        &lever.followed.first_labels,
        lever.free,
        &format!("{caption}mode shapes at t = {:.3} s", first.t),
    );
    ensure_dir(out)?;
    let mut files: Vec<PathBuf> =
        flexbench_tables::write_table(&lever.modal.table, out, "modal")?.to_vec();
    if !high.panels.is_empty() {
        files.extend(flexbench_report::write_figure(
            &high,
            &out.join("modes-3-6"),
        )?);
    }
    files.extend(flexbench_report::write_figure(
        &low,
        &out.join("modes-1-2"),
    )?);
    files.extend(flexbench_report::write_figure(
        &shapes,
        &out.join("mode-shapes"),
    )?);
    if let (Some(table), Some((r, _))) = (lever.deflection, lever.response) {
        files.extend(flexbench_tables::write_table(table, out, "deflection")?);
        let fig = deflection_figure(lever.mesh, r, lever.markers, &caption);
        files.extend(flexbench_report::write_figure(
            &fig,
            &out.join("deflection"),
        )?);
    }
    Ok(files)
}

/// The first instant's followed modes: the transverse and axial displacement of each along the
/// lever, at the nodes, scaled to a largest component of 1, signed to start positive from B.
pub(super) fn shapes_figure(
    mesh: &Mesh,
    im: &InstantModes,
    idx: &[usize],
    free: &[usize],
    caption: &str,
) -> Figure {
    let mut panels = Vec::new();
    for (label, &j) in idx.iter().enumerate() {
        let mut full = vec![0.0; mesh.dofs()];
        for (r, &gdof) in free.iter().enumerate() {
            full[gdof] = im.modes.shapes[(r, j)];
        }
        let full = nalgebra::DVector::from_vec(full);
        // Ten points per element, by the shape functions.
        let xs: Vec<f64> = (0..=10 * mesh.elements)
            .map(|i| mesh.lever.length * i as f64 / (10 * mesh.elements) as f64)
            .collect();
        let (u, v): (Vec<f64>, Vec<f64>) =
            xs.iter().map(|&x| mesh.displacement_at(&full, x)).unzip();
        let largest = u
            .iter()
            .chain(&v)
            .fold(0.0f64, |a, b| a.max(b.abs()))
            .max(1e-300);
        // The shape's sign (the eigensolver's is arbitrary): positive where, going from B, it
        // first passes a tenth of its largest, across the lever before along it. Not the sign
        // of the largest component: two nearly equal and opposite ones (an antisymmetric mode)
        // trade places for a change in the last digits of the motion.
        let sign = xs
            .iter()
            .enumerate()
            .flat_map(|(i, _)| [v[i], u[i]])
            .find(|a| a.abs() > 0.1 * largest)
            .map_or(1.0, f64::signum);
        let peak = sign * largest;
        panels.push(Panel {
            title: format!("mode {}: {:.1} Hz", label + 1, im.modes.frequency_hz(j)),
            y_label: "displacement / largest (1)".into(),
            curves: vec![
                Curve {
                    label: "v, across the lever".into(),
                    x: xs.clone(),
                    y: v.iter().map(|a| Some(a / peak)).collect(),
                    band: Vec::new(),
                },
                Curve {
                    label: "u, along the lever".into(),
                    x: xs.clone(),
                    y: u.iter().map(|a| Some(a / peak)).collect(),
                    band: Vec::new(),
                },
            ],
        });
    }
    Figure {
        caption: caption.into(),
        x_label: "position along the lever from B, X (m)".into(),
        panels,
    }
}

/// The deflection table: per sample and marker of the lever, its lever coordinate and the
/// forced response's displacement there (u along, v across the lever, m, lever frame), with
/// the quasi-static v for comparison.
pub(super) fn deflection_table(
    mesh: &Mesh,
    r: &flexbench_fem::response::Response,
    markers: &[(String, f64)],
    measured: Option<&Comparison>,
) -> Result<Table, PipelineError> {
    let (mut t, mut name, mut x, mut u, mut v, mut vq) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut vd, mut md) = (vec![], vec![]);
    for (k, d) in r.d.iter().enumerate() {
        for (j, (m, xm)) in markers.iter().enumerate() {
            if let Some(c) = measured {
                vd.push(c.model[k].get(j).copied().flatten());
                md.push(c.measured[k].get(j).copied().flatten());
            }
            let (du, dv) = mesh.displacement_at(d, *xm);
            t.push(r.t[k]);
            name.push(m.clone());
            x.push(*xm);
            u.push(du);
            v.push(dv);
            vq.push(mesh.displacement_at(&r.quasi_static[k], *xm).1);
        }
    }
    let mut table = Table::new("deflection");
    table.push("t", Column::F64(t))?;
    table.push("marker", Column::Str(name))?;
    table.push("x_lever", Column::F64(x))?;
    table.push("u", Column::F64(u))?;
    table.push("v", Column::F64(v))?;
    table.push("v_quasi_static", Column::F64(vq))?;
    if measured.is_some() {
        table.push("v_detrended", Column::OptF64(vd))?;
        table.push("v_measured_detrended", Column::OptF64(md))?;
    }
    Ok(table)
}

/// The deflection across the lever at its markers over time: the forced response and the
/// quasi-static solution.
pub(super) fn deflection_figure(
    mesh: &Mesh,
    r: &flexbench_fem::response::Response,
    markers: &[(String, f64)],
    caption: &str,
) -> Figure {
    let curves = |field: &dyn Fn(&nalgebra::DVector<f64>, f64) -> f64,
                  which: &[nalgebra::DVector<f64>]|
     -> Vec<Curve> {
        markers
            .iter()
            .map(|(name, xm)| Curve {
                label: format!("{name} (X = {xm:.3} m)"),
                x: r.t.clone(),
                y: which.iter().map(|d| Some(field(d, *xm) * 1e6)).collect(),
                band: Vec::new(),
            })
            .collect()
    };
    let v = |d: &nalgebra::DVector<f64>, x: f64| mesh.displacement_at(d, x).1;
    Figure {
        caption: format!("{caption}deflection across the lever at its markers"),
        x_label: "time t (s)".into(),
        panels: vec![
            Panel {
                title: "forced response".into(),
                y_label: "v, lever frame (um)".into(),
                curves: curves(&v, &r.d),
            },
            Panel {
                title: "quasi-static".into(),
                y_label: "v, lever frame (um)".into(),
                curves: curves(&v, &r.quasi_static),
            },
        ],
    }
}
