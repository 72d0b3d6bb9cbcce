//! The process stage's tables: the bodies', the markers' kinematics and the fit's residuals, and
//! their writing.

use super::*;

/// The bodies table of the fitted samples.
pub(super) fn bodies_table(
    mech: &Mechanism,
    t: &[f64],
    motion: &Motion,
) -> Result<Table, ContractError> {
    let states: Vec<_> = motion
        .samples
        .iter()
        .zip(t)
        .filter_map(|(f, &tk)| f.state.as_ref().map(|(q, qd, qdd)| (tk, q, qd, qdd)))
        .collect();
    mech.bodies_table(&states)
}

/// Write the tables, the forces table and the forces figure into `out`.
pub(super) fn write_outputs(
    mech: &Mechanism,
    t: &[f64],
    tables: [(Table, &str); 3],
    forces: &ForceSeries,
    motion: &Motion,
    tracks_path: &Path,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let combined = combined_sigmas(forces);
    let (rows, sigmas) = (&forces.rows, combined.as_deref());
    let forces_table = mech.forces_table_with_sigma(t, rows, sigmas)?;
    ensure_dir(out)?;
    let mut files = Vec::new();
    // The order of the files: markers, bodies, forces, fit_residuals; each table let go as it
    // is written.
    let [markers, bodies, residuals] = tables;
    for (table, stem) in [markers, bodies, (forces_table, "forces"), residuals] {
        files.extend(flexbench_tables::write_owned_table(table, out, stem)?);
    }
    let band_note = match (sigmas.is_some(), motion.bands_before_periodic) {
        _ if forces.parameter_sigmas.is_some() || forces.frame_sigmas.is_some() => {
            " (bands: 2 sigma of the tracks' noise, the file's tolerances and the bench frame)"
        }
        (true, true) => " (bands: 2 sigma of the smoother, before the periodic refit)",
        (true, false) => " (bands: 2 sigma)",
        _ => "",
    };
    let source = tracks_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    files.extend(forces_figure(
        t,
        &mech.force_columns(),
        rows,
        sigmas,
        &format!("{}: liaison forces from {source}{band_note}", mech.name),
        &out.join("forces"),
    )?);
    Ok(files)
}

/// The markers' kinematics table from the differentiation (contract columns, plus the origin
/// of each sample in `provenance`: measured, edge or rejected).
pub(crate) fn markers_table(
    names: &[String],
    t: &[f64],
    diffs: &[(Derivatives, Derivatives)],
) -> Result<Table, ContractError> {
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 7];
    let mut sig: Vec<Vec<f64>> = vec![Vec::new(); 6];
    let with_sigma = diffs
        .iter()
        .all(|(dx, dy)| dx.sigma.len() == t.len() && dy.sigma.len() == t.len());
    let mut name_col = Vec::new();
    let mut prov = Vec::new();
    for (k, &tk) in t.iter().enumerate() {
        for (name, (dx, dy)) in names.iter().zip(diffs) {
            name_col.push(name.clone());
            let p = if dx.provenance[k] == Provenance::Rejected
                || dy.provenance[k] == Provenance::Rejected
            {
                Provenance::Rejected
            } else if dx.provenance[k] == Provenance::Edge || dy.provenance[k] == Provenance::Edge {
                Provenance::Edge
            } else {
                Provenance::Measured
            };
            prov.push(p.as_str().to_string());
            for (c, v) in cols.iter_mut().zip([
                tk,
                dx.value[k],
                dy.value[k],
                dx.rate[k],
                dy.rate[k],
                dx.accel[k],
                dy.accel[k],
            ]) {
                c.push(v);
            }
            if with_sigma {
                let (a, b) = (dx.sigma[k], dy.sigma[k]);
                for (c, v) in sig.iter_mut().zip([a[0], b[0], a[1], b[1], a[2], b[2]]) {
                    c.push(v);
                }
            }
        }
    }
    let mut table = Table::new("markers");
    let mut it = cols.into_iter();
    table.push(
        flexbench_contracts::MARKER_KEYS[0],
        Column::F64(it.next().unwrap_or_default()),
    )?;
    table.push(flexbench_contracts::MARKER_KEYS[1], Column::Str(name_col))?;
    for name in &MARKER_COLUMNS {
        let v: Vec<Option<f64>> = it
            .next()
            .unwrap_or_default()
            .into_iter()
            .map(|x| x.is_finite().then_some(x))
            .collect();
        table.push(name, Column::OptF64(v))?;
    }
    if with_sigma {
        for (name, c) in MARKER_COLUMNS.iter().zip(sig) {
            let v: Vec<Option<f64>> = c.into_iter().map(|x| x.is_finite().then_some(x)).collect();
            table.push(&format!("{name}_sigma"), Column::OptF64(v))?;
        }
    }
    table.push("provenance", Column::Str(prov))?;
    Ok(table)
}

/// Per sample and marker, the fitted minus measured position (m, bench frame).
pub(super) fn residual_table(
    mech: &Mechanism,
    t: &[f64],
    fit: &[flexbench_kinematics::FitSample],
) -> Result<Table, ContractError> {
    let (mut tt, mut names, mut rx, mut ry) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (f, &tk) in fit.iter().zip(t) {
        for (mk, r) in mech.markers.iter().zip(&f.residual) {
            tt.push(tk);
            names.push(mk.name.clone());
            rx.push(r.map(|r| r.x));
            ry.push(r.map(|r| r.y));
        }
    }
    Table::from_columns(
        "fit_residuals",
        [
            ("t", Column::F64(tt)),
            ("marker", Column::Str(names)),
            ("rx", Column::OptF64(rx)),
            ("ry", Column::OptF64(ry)),
        ],
    )
}
