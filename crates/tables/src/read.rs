//! The contract tables read back by their own types: tracks, bodies, markers, fit residuals, flags,
//! modes, forces, and any table by its extension.

use super::*;

/// Any table read back whole (CSV or Parquet): each column's values, numbers (integers as
/// doubles, nulls as NaN) or text (nulls as empty), in the file's order; `name` the table's.
pub fn read_any(path: &Path, name: &str) -> Result<Table, TableError> {
    let df = read_frame(path)?;
    let mut table = Table::new(name);
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    for col_name in names {
        let numeric = column(&df, path, &col_name)?.dtype().is_primitive_numeric();
        let column = match numeric {
            true => FbColumn::F64(
                opt_f64(&df, path, &col_name)?
                    .into_iter()
                    .map(|v| v.unwrap_or(f64::NAN))
                    .collect(),
            ),
            false => FbColumn::Str(
                strings(&df, path, &col_name)?
                    .into_iter()
                    .map(Option::unwrap_or_default)
                    .collect(),
            ),
        };
        table
            .push(&col_name, column)
            .map_err(|e| TableError::Column {
                path: path.display().to_string(),
                column: col_name.clone(),
                reason: e.to_string(),
            })?;
    }
    Ok(table)
}

/// Read a tracks table (CSV or Parquet) and check its contract: columns `frame, t, marker, u, v,
/// x, y` (u, v optional), finite values, strictly increasing time per marker.
pub fn read_tracks(path: &Path) -> Result<Tracks, TableError> {
    let df = read_frame(path)?;
    let p = path.display().to_string();
    if df.height() == 0 {
        return Err(broken(path)(ContractError::Empty {
            table: "tracks".into(),
        }));
    }
    let t = opt_f64(&df, path, "t")?;
    let frame = opt_f64(&df, path, "frame")?;
    let marker = strings(&df, path, "marker")?;
    let x = opt_f64(&df, path, "x")?;
    let y = opt_f64(&df, path, "y")?;
    let has = |n: &str| df.get_column_names().iter().any(|c| c.as_str() == n);
    let u = if has("u") {
        opt_f64(&df, path, "u")?
    } else {
        vec![None; df.height()]
    };
    let v = if has("v") {
        opt_f64(&df, path, "v")?
    } else {
        vec![None; df.height()]
    };
    let sigma = if has("sigma_px") {
        opt_f64(&df, path, "sigma_px")?
    } else {
        vec![None; df.height()]
    };
    let late = late_columns(&df, path)?;
    let mut rows = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let col_err = |c: &str, r: &str| TableError::Column {
            path: p.clone(),
            column: c.into(),
            reason: format!("row {}: {r}", i + 1),
        };
        let ti = t[i].ok_or_else(|| col_err("t", "empty: every row needs its time in s"))?;
        let fi =
            frame[i].ok_or_else(|| col_err("frame", "empty: every row needs its frame number"))?;
        if fi.fract() != 0.0 || !fi.is_finite() {
            return Err(col_err(
                "frame",
                &format!("{fi} is not a whole frame number"),
            ));
        }
        let m = marker[i]
            .clone()
            .ok_or_else(|| col_err("marker", "empty: every row needs a marker name"))?;
        rows.push(TrackRow {
            frame: fi as i64,
            t: ti,
            marker: m,
            u: u[i],
            v: v[i],
            x: x[i],
            y: y[i],
            sigma_px: sigma[i],
            late: late.as_ref().and_then(|l| l[i]),
        });
    }
    Tracks::new(rows).map_err(broken(path))
}

/// The rolling shutter's columns `delay_s, x_seen, y_seen` of a tracks table, when it has them
/// (all three or none; a row's three all given or all empty).
pub(super) fn late_columns(
    df: &DataFrame,
    path: &Path,
) -> Result<Option<Vec<Option<Late>>>, TableError> {
    let names = ["delay_s", "x_seen", "y_seen"];
    let has = |n: &str| df.get_column_names().iter().any(|c| c.as_str() == n);
    let given: Vec<&str> = names.into_iter().filter(|n| has(n)).collect();
    match given.len() {
        0 => return Ok(None),
        3 => {}
        _ => {
            return Err(TableError::Column {
                path: path.display().to_string(),
                column: given.join(", "),
                reason: "a rolling shutter's samples need the three columns delay_s, x_seen and y_seen together: give all three or none".into(),
            })
        }
    }
    let (d, x, y) = (
        opt_f64(df, path, "delay_s")?,
        opt_f64(df, path, "x_seen")?,
        opt_f64(df, path, "y_seen")?,
    );
    (0..df.height())
        .map(|i| match (d[i], x[i], y[i]) {
            (Some(delay_s), Some(x), Some(y)) => Ok(Some(Late { delay_s, x, y })),
            (None, None, None) => Ok(None),
            _ => Err(TableError::Column {
                path: path.display().to_string(),
                column: "delay_s, x_seen, y_seen".into(),
                reason: format!(
                    "row {}: give the three together or leave all three empty",
                    i + 1
                ),
            }),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The error of a table at `path` that breaks the contract.
pub(super) fn broken(path: &Path) -> impl Fn(ContractError) -> TableError + '_ {
    move |source| TableError::Contract {
        path: path.display().to_string(),
        source: Box::new(source),
    }
}

/// Read the bodies table (`bodies.parquet` or `.csv` of the process stage or of `simulate`):
/// columns `t, body` and [`BODY_COLUMNS`], checked by [`Bodies::new`].
pub fn read_bodies(path: &Path) -> Result<Bodies, TableError> {
    let df = read_frame(path)?;
    let t = opt_f64(&df, path, "t")?;
    let body = strings(&df, path, "body")?;
    let mut cols = Vec::with_capacity(BODY_COLUMNS.len());
    for c in BODY_COLUMNS {
        cols.push(opt_f64(&df, path, c)?);
    }
    let rows: Vec<BodyRow> = t
        .into_iter()
        .zip(body)
        .enumerate()
        .map(|(i, (ti, b))| (ti, b, std::array::from_fn(|c| cols[c][i])))
        .collect();
    Bodies::new("bodies", rows).map_err(broken(path))
}

/// Read a markers table (`markers.parquet` or `.csv` of the smooth or the process stage): columns
/// `t, marker` and [`MARKER_COLUMNS`], with their `<column>_sigma` where the table has them,
/// checked by [`MarkerStates::new`].
pub fn read_markers(path: &Path) -> Result<MarkerStates, TableError> {
    let df = read_frame(path)?;
    let n = df.height();
    let t = opt_f64(&df, path, "t")?;
    let marker = strings(&df, path, "marker")?;
    let mut values = Vec::with_capacity(6);
    let mut sigmas = Vec::with_capacity(6);
    for c in MARKER_COLUMNS {
        values.push(opt_f64(&df, path, c)?);
        let s = format!("{c}_sigma");
        sigmas.push(match has_column(&df, &s) {
            true => opt_f64(&df, path, &s)?,
            false => vec![None; n],
        });
    }
    let rows: Vec<MarkerRowRead> = t
        .into_iter()
        .zip(marker)
        .enumerate()
        .map(|(i, (ti, m))| {
            let v = std::array::from_fn(|c| values[c][i]);
            let s = std::array::from_fn(|c| sigmas[c][i]);
            (ti, m, v, s)
        })
        .collect();
    // The frame and the columns let go before the rows are checked into their second form
    // (a long recording's markers table is held once at a time, not three times).
    drop((df, values, sigmas));
    MarkerStates::new("markers", rows).map_err(broken(path))
}

/// Read the process stage's fit residuals table (`fit_residuals.parquet` or `.csv`: `t, marker,
/// rx, ry`), checked by [`MarkerResiduals::new`].
pub fn read_fit_residuals(path: &Path) -> Result<MarkerResiduals, TableError> {
    let df = read_frame(path)?;
    let t = opt_f64(&df, path, "t")?;
    let marker = strings(&df, path, "marker")?;
    let (rx, ry) = (opt_f64(&df, path, "rx")?, opt_f64(&df, path, "ry")?);
    let rows = (0..df.height())
        .map(|i| (t[i], marker[i].clone(), rx[i], ry[i]))
        .collect();
    MarkerResiduals::new("fit_residuals", rows).map_err(broken(path))
}

/// Read a flags table (`flags.csv` of the track stage), checked by
/// [`flexbench_contracts::flags::Flags::new`].
pub fn read_flags(path: &Path) -> Result<flexbench_contracts::flags::Flags, TableError> {
    let df = read_frame(path)?;
    let frame = opt_f64(&df, path, "frame")?;
    let (marker, reason) = (strings(&df, path, "marker")?, strings(&df, path, "reason")?);
    let score = opt_f64(&df, path, "score")?;
    let rows = (0..df.height())
        .map(|i| (frame[i], marker[i].clone(), reason[i].clone(), score[i]))
        .collect();
    flexbench_contracts::flags::Flags::new("flags", rows).map_err(broken(path))
}

/// Read the fem stage's modal table (`modal.parquet` or `.csv`), checked by [`Modes::new`].
pub fn read_modes(path: &Path) -> Result<Modes, TableError> {
    let df = read_frame(path)?;
    let col = |n: &str| opt_f64(&df, path, n);
    let (t, ca, mode) = (col("t")?, col("crank_angle")?, col("mode")?);
    let (freq, full, zeta) = (col("freq_hz")?, col("full_freq_hz")?, col("damping_ratio")?);
    let kind = strings(&df, path, "kind")?;
    let bad = |row: usize, column: &str, reason: &str| TableError::Column {
        path: path.display().to_string(),
        column: column.into(),
        reason: format!("row {row}: {reason}"),
    };
    let mut rows = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let row = i + 1;
        let m = mode[i]
            .filter(|m| m.fract() == 0.0 && *m >= 1.0)
            .ok_or_else(|| bad(row, "mode", "needs a mode number from 1"))?;
        rows.push(ModeRow {
            t: t[i].ok_or_else(|| bad(row, "t", "empty: every row needs its time in s"))?,
            crank_angle: ca[i].unwrap_or(f64::NAN),
            mode: m as usize,
            kind: match kind[i].as_deref() {
                Some("bending") => ModeKind::Bending,
                Some("axial") => ModeKind::Axial,
                other => {
                    return Err(bad(
                        row,
                        "kind",
                        &format!("{other:?} is not bending or axial"),
                    ))
                }
            },
            freq_hz: freq[i],
            full_freq_hz: full[i],
            damping_ratio: zeta[i],
        });
    }
    Modes::new(rows).map_err(broken(path))
}

/// Read the forces table (`forces.parquet` or `.csv` of the process stage): column `t` and
/// every other column as numbers, checked by [`Forces::new`].
pub fn read_forces(path: &Path) -> Result<Forces, TableError> {
    let df = read_frame(path)?;
    let t = opt_f64(&df, path, "t")?;
    let mut columns = Vec::new();
    for name in df.get_column_names() {
        if name.as_str() != "t" {
            columns.push((name.to_string(), opt_f64(&df, path, name.as_str())?));
        }
    }
    Forces::new("forces", t, columns).map_err(broken(path))
}
