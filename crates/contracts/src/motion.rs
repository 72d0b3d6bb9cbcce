//! The process stage's motion tables, checked: [`Bodies`] (each body's centroid motion and
//! angle per sample) and [`Forces`] (the liaison forces, actuator efforts and their standard
//! deviations per sample). Both share one time grid, finite and strictly increasing; a value
//! may be absent (a sample the process stage did not fit, or a toggle) but never NaN or
//! infinite. Built by [`Bodies::new`] and [`Forces::new`], which check, so a reader that holds
//! one needs no further checks of its shape.

use crate::ContractError;

/// The columns of a body's motion in the bodies table, in the table's order: centroid x, y (m),
/// angle phi (rad), centroid velocity vx, vy (m/s), angular velocity omega (rad/s), centroid
/// acceleration ax, ay (m/s^2), angular acceleration epsilon (rad/s^2); bench frame.
pub const BODY_COLUMNS: [&str; 9] = ["x", "y", "phi", "vx", "vy", "omega", "ax", "ay", "epsilon"];

/// One body's motion along the recording, bench frame, SI (None where the sample was not fitted).
#[derive(Debug, Clone, PartialEq)]
pub struct BodyMotion {
    /// The body's name in the mechanism (crank, lever, rocker, slide on the bench).
    pub name: String,
    /// Per column of [`BODY_COLUMNS`], its value per sample.
    pub values: [Vec<Option<f64>>; 9],
}

impl BodyMotion {
    /// The values of column `name` of [`BODY_COLUMNS`] (None for another name).
    pub fn column(&self, name: &str) -> Option<&[Option<f64>]> {
        let k = BODY_COLUMNS.iter().position(|c| *c == name)?;
        Some(&self.values[k])
    }
}

/// The bodies table, checked: one time grid (s) shared by every body, and each body's motion.
#[derive(Debug, Clone, PartialEq)]
pub struct Bodies {
    /// Times of the samples, s: finite, strictly increasing.
    t: Vec<f64>,
    /// The bodies in the table's order.
    bodies: Vec<BodyMotion>,
}

/// A row of the bodies table as read: time, body name, and the values of [`BODY_COLUMNS`].
pub type BodyRow = (Option<f64>, Option<String>, [Option<f64>; 9]);

impl Bodies {
    /// The table from its rows (`table` names it in errors): rows grouped by body in first-seen
    /// order; every body on the same times, finite and strictly increasing; every value finite
    /// or absent.
    pub fn new(table: &str, rows: Vec<BodyRow>) -> Result<Bodies, ContractError> {
        let mut t: Vec<f64> = Vec::new();
        let mut bodies: Vec<BodyMotion> = Vec::new();
        let mut times: Vec<Vec<f64>> = Vec::new();
        for (i, (ti, name, values)) in rows.into_iter().enumerate() {
            let row = i + 1;
            let name = name.ok_or_else(|| ContractError::Missing {
                table: table.into(),
                row,
                column: "body".into(),
            })?;
            for (c, v) in BODY_COLUMNS.iter().zip(&values) {
                finite(table, row, c, *v)?;
            }
            let k = match bodies.iter().position(|b| b.name == name) {
                Some(k) => k,
                None => {
                    bodies.push(BodyMotion {
                        name,
                        values: Default::default(),
                    });
                    times.push(Vec::new());
                    bodies.len() - 1
                }
            };
            let ti = next_time(table, row, ti, times[k].last().copied())?;
            times[k].push(ti);
            for (col, v) in bodies[k].values.iter_mut().zip(values) {
                col.push(v);
            }
        }
        if let Some(first) = times.first() {
            t.clone_from(first);
        }
        for (b, tb) in bodies.iter().zip(&times) {
            if *tb != t {
                return Err(ContractError::TimeGrid {
                    table: table.into(),
                    reason: format!(
                        "body '{}' has {} samples on other times than body '{}' ({}); every body needs one row per sample",
                        b.name,
                        tb.len(),
                        bodies[0].name,
                        t.len()
                    ),
                });
            }
        }
        Ok(Bodies { t, bodies })
    }

    /// Times of the samples, s: finite, strictly increasing.
    pub fn t(&self) -> &[f64] {
        &self.t
    }

    /// The bodies in the table's order, each on [`Bodies::t`].
    pub fn bodies(&self) -> &[BodyMotion] {
        &self.bodies
    }

    /// The body named `name`, if the table has it.
    pub fn body(&self, name: &str) -> Option<&BodyMotion> {
        self.bodies.iter().find(|b| b.name == name)
    }
}

/// The forces table, checked: the liaison forces' components (`<joint>_x`, `<joint>_y`, N,
/// bench frame), the actuators' efforts (N or N m) and other constraint efforts, each with its
/// standard deviation (`<name>_sigma`) when the process stage gave one.
#[derive(Debug, Clone, PartialEq)]
pub struct Forces {
    /// Times of the samples, s: finite, strictly increasing.
    t: Vec<f64>,
    /// Every other column by name, in the table's order: a value per sample (None where the
    /// inverse dynamics gave none: an unfitted sample or a toggle).
    columns: Vec<(String, Vec<Option<f64>>)>,
}

impl Forces {
    /// The table from its time column and the other columns (`table` names it in errors): times
    /// finite and strictly increasing, every value finite or absent, every column as long as
    /// the times.
    pub fn new(
        table: &str,
        t: Vec<Option<f64>>,
        columns: Vec<(String, Vec<Option<f64>>)>,
    ) -> Result<Forces, ContractError> {
        let mut times = Vec::with_capacity(t.len());
        for (i, ti) in t.into_iter().enumerate() {
            let ti = next_time(table, i + 1, ti, times.last().copied())?;
            times.push(ti);
        }
        for (name, values) in &columns {
            if values.len() != times.len() {
                return Err(ContractError::RaggedColumn {
                    table: table.into(),
                    column: name.clone(),
                    len: values.len(),
                    expected: times.len(),
                });
            }
            for (i, v) in values.iter().enumerate() {
                finite(table, i + 1, name, *v)?;
            }
        }
        Ok(Forces { t: times, columns })
    }

    /// Times of the samples, s: finite, strictly increasing.
    pub fn t(&self) -> &[f64] {
        &self.t
    }

    /// Every other column by name, in the table's order, each as long as [`Forces::t`]: a
    /// value per sample (N, N m; None where the inverse dynamics gave none).
    pub fn columns(&self) -> &[(String, Vec<Option<f64>>)] {
        &self.columns
    }

    /// The column `name` (e.g. `B_x`, `motor_torque`, `B_x_sigma`), if the table has it.
    pub fn column(&self, name: &str) -> Option<&[Option<f64>]> {
        self.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// The columns of a marker's state in the markers table, in the table's order: position x, y
/// (m), velocity vx, vy (m/s), acceleration ax, ay (m/s^2); bench frame. Each may have its
/// standard deviation beside it as `<column>_sigma`.
pub const MARKER_COLUMNS: [&str; 6] = ["x", "y", "vx", "vy", "ax", "ay"];

/// One row of the markers table: a marker's state at one sample, bench frame, SI.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerRow {
    /// Time, s.
    pub t: f64,
    /// The marker's name.
    pub marker: String,
    /// Per column of [`MARKER_COLUMNS`], its value (None where not estimated).
    pub values: [Option<f64>; 6],
    /// Per column of [`MARKER_COLUMNS`], its standard deviation (None where not given).
    pub sigmas: [Option<f64>; 6],
}

impl MarkerRow {
    /// The value of column `name` of [`MARKER_COLUMNS`] (None for another name or no value).
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values[MARKER_COLUMNS.iter().position(|c| *c == name)?]
    }

    /// The standard deviation of column `name` of [`MARKER_COLUMNS`], when given.
    pub fn sigma(&self, name: &str) -> Option<f64> {
        self.sigmas[MARKER_COLUMNS.iter().position(|c| *c == name)?]
    }
}

/// The markers table (of the smooth or the process stage), checked: rows in the table's order,
/// each marker's times finite and strictly increasing, every value and sigma finite or absent.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerStates {
    /// The rows, as the table holds them.
    rows: Vec<MarkerRow>,
}

/// A row of the markers table as read: time, marker name, values, sigmas.
pub type MarkerRowRead = (
    Option<f64>,
    Option<String>,
    [Option<f64>; 6],
    [Option<f64>; 6],
);

impl MarkerStates {
    /// The table from its rows (`table` names it in errors), checked.
    pub fn new(table: &str, read: Vec<MarkerRowRead>) -> Result<MarkerStates, ContractError> {
        let mut times = MarkerTimes::default();
        let mut rows = Vec::with_capacity(read.len());
        for (i, (t, marker, values, sigmas)) in read.into_iter().enumerate() {
            let row = i + 1;
            let (marker, t) = times.next(table, row, marker, t)?;
            for (c, v) in MARKER_COLUMNS.iter().zip(&values) {
                finite(table, row, c, *v)?;
            }
            // The column's name made only for the error.
            if let Some(c) = (0..sigmas.len()).find(|&c| sigmas[c].is_some_and(|v| !v.is_finite()))
            {
                finite(
                    table,
                    row,
                    &format!("{}_sigma", MARKER_COLUMNS[c]),
                    sigmas[c],
                )?;
            }
            rows.push(MarkerRow {
                t,
                marker,
                values,
                sigmas,
            });
        }
        Ok(MarkerStates { rows })
    }

    /// The rows, as the table holds them (each marker's times strictly increasing).
    pub fn rows(&self) -> &[MarkerRow] {
        &self.rows
    }

    /// The rows, the table let go.
    pub fn into_rows(self) -> Vec<MarkerRow> {
        self.rows
    }
}

/// One row of the fit residuals table: a marker's position residual from the fitted mechanism
/// (fitted minus measured, bench frame, m) at a sample; None where the sample was not fitted.
#[derive(Debug, Clone, PartialEq)]
pub struct ResidualRow {
    /// Time, s.
    pub t: f64,
    /// The marker's name.
    pub marker: String,
    /// Residual along x, m.
    pub rx: Option<f64>,
    /// Residual along y, m.
    pub ry: Option<f64>,
}

/// The fit residuals table (of the process stage), checked: each marker's times finite and
/// strictly increasing, residuals finite or absent.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerResiduals {
    /// The rows, as the table holds them.
    rows: Vec<ResidualRow>,
}

impl MarkerResiduals {
    /// The table from its rows (time, marker, rx, ry as read), checked.
    #[allow(clippy::type_complexity)]
    pub fn new(
        table: &str,
        read: Vec<(Option<f64>, Option<String>, Option<f64>, Option<f64>)>,
    ) -> Result<MarkerResiduals, ContractError> {
        let mut times = MarkerTimes::default();
        let mut rows = Vec::with_capacity(read.len());
        for (i, (t, marker, rx, ry)) in read.into_iter().enumerate() {
            let row = i + 1;
            let (marker, t) = times.next(table, row, marker, t)?;
            let (rx, ry) = (finite(table, row, "rx", rx)?, finite(table, row, "ry", ry)?);
            rows.push(ResidualRow { t, marker, rx, ry });
        }
        Ok(MarkerResiduals { rows })
    }

    /// The rows, as the table holds them (each marker's times strictly increasing).
    pub fn rows(&self) -> &[ResidualRow] {
        &self.rows
    }
}

/// Each marker's last time in a table read row by row.
#[derive(Default)]
struct MarkerTimes(std::collections::HashMap<String, f64>);

impl MarkerTimes {
    /// Row `row`'s marker (present) and time (present, finite, after the marker's previous).
    fn next(
        &mut self,
        table: &str,
        row: usize,
        marker: Option<String>,
        t: Option<f64>,
    ) -> Result<(String, f64), ContractError> {
        let marker = marker.ok_or_else(|| ContractError::Missing {
            table: table.into(),
            row,
            column: "marker".into(),
        })?;
        let t = next_time(table, row, t, self.0.get(&marker).copied())?;
        self.0.insert(marker.clone(), t);
        Ok((marker, t))
    }
}

/// The time of row `row` (s): present, finite and after the `previous` one; the error naming the
/// table and row otherwise.
fn next_time(
    table: &str,
    row: usize,
    t: Option<f64>,
    previous: Option<f64>,
) -> Result<f64, ContractError> {
    let t = finite(table, row, "t", t)?.ok_or_else(|| ContractError::Missing {
        table: table.into(),
        row,
        column: "t".into(),
    })?;
    match previous {
        Some(previous) if t <= previous => Err(ContractError::TimeNotIncreasing {
            table: table.into(),
            row,
            previous,
            current: t,
        }),
        _ => Ok(t),
    }
}

/// `v` when it is finite or absent; the error naming the table, row and column otherwise.
fn finite(
    table: &str,
    row: usize,
    column: &str,
    v: Option<f64>,
) -> Result<Option<f64>, ContractError> {
    match v {
        Some(x) if !x.is_finite() => Err(ContractError::NotFiniteValue {
            table: table.into(),
            row,
            column: column.into(),
            value: x,
        }),
        v => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, body: &str, x: f64) -> BodyRow {
        let mut v = [Some(0.0); 9];
        v[0] = Some(x);
        (Some(t), Some(body.into()), v)
    }

    #[test]
    fn bodies_group_by_body_on_one_time_grid() {
        let b = Bodies::new(
            "bodies",
            vec![
                row(0.0, "crank", 1.0),
                row(0.0, "lever", 2.0),
                row(0.1, "crank", 3.0),
                row(0.1, "lever", 4.0),
            ],
        )
        .unwrap();
        assert_eq!(b.t, [0.0, 0.1]);
        assert_eq!(b.bodies.len(), 2);
        assert_eq!(
            b.body("lever").unwrap().column("x").unwrap(),
            [Some(2.0), Some(4.0)]
        );
        assert!(b.body("slide").is_none());
    }

    #[test]
    fn bodies_refuse_nan_unsorted_time_and_a_ragged_grid() {
        let mut nan = row(0.1, "crank", 0.0);
        nan.2[8] = Some(f64::NAN);
        let e = Bodies::new("bodies", vec![row(0.0, "crank", 0.0), nan]).unwrap_err();
        assert!(
            e.to_string().contains("row 2") && e.to_string().contains("'epsilon'"),
            "{e}"
        );
        let e = Bodies::new(
            "bodies",
            vec![row(0.1, "crank", 0.0), row(0.1, "crank", 0.0)],
        )
        .unwrap_err();
        assert!(e.to_string().contains("0.1 s to 0.1 s"), "{e}");
        let e = Bodies::new(
            "bodies",
            vec![
                row(0.0, "crank", 0.0),
                row(0.0, "lever", 0.0),
                row(0.1, "crank", 0.0),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("body 'lever' has 1 samples"), "{e}");
    }

    #[test]
    fn markers_keep_their_rows_and_refuse_nan_and_unsorted_time() {
        let row = |t: f64, m: &str, ax: f64| -> MarkerRowRead {
            let mut v = [Some(0.5); 6];
            v[4] = Some(ax);
            (Some(t), Some(m.into()), v, [None; 6])
        };
        let m = MarkerStates::new(
            "markers",
            vec![
                row(0.0, "M1", 1.0),
                row(0.0, "M2", 2.0),
                row(0.1, "M1", 3.0),
            ],
        )
        .unwrap();
        assert_eq!(m.rows[1].marker, "M2");
        assert_eq!(m.rows[2].value("ax"), Some(3.0));
        assert_eq!(m.rows[2].sigma("ax"), None);
        let e = MarkerStates::new("markers", vec![row(0.1, "M1", 0.0), row(0.1, "M1", 0.0)])
            .unwrap_err();
        assert!(
            e.to_string().contains("row 2") && e.to_string().contains("0.1 s to 0.1 s"),
            "{e}"
        );
        let e = MarkerStates::new("markers", vec![row(0.0, "M1", f64::NAN)]).unwrap_err();
        assert!(e.to_string().contains("'ax' is NaN"), "{e}");
        // A standard deviation named by its column, the first of the row's bad ones.
        let mut bad = row(0.0, "M1", 1.0);
        bad.3[3] = Some(f64::INFINITY);
        bad.3[5] = Some(f64::NAN);
        let e = MarkerStates::new("markers", vec![row(-0.1, "M1", 1.0), bad]).unwrap_err();
        assert!(
            e.to_string().contains("row 2") && e.to_string().contains("'vy_sigma'"),
            "{e}"
        );
    }

    #[test]
    fn residuals_per_marker_in_time_and_finite() {
        let r = |t: f64, m: &str, rx: f64| (Some(t), Some(m.to_string()), Some(rx), None);
        let ok = MarkerResiduals::new("fit_residuals", vec![r(0.0, "M1", 1e-4), r(0.0, "M2", 0.0)]);
        assert_eq!(ok.unwrap().rows[0].rx, Some(1e-4));
        let e =
            MarkerResiduals::new("fit_residuals", vec![r(0.0, "M1", f64::INFINITY)]).unwrap_err();
        assert!(e.to_string().contains("'rx' is inf"), "{e}");
        let e = MarkerResiduals::new("fit_residuals", vec![(None, Some("M1".into()), None, None)])
            .unwrap_err();
        assert!(e.to_string().contains("column 't' is empty"), "{e}");
    }

    #[test]
    fn forces_check_time_values_and_lengths() {
        let f = Forces::new(
            "forces",
            vec![Some(0.0), Some(0.1)],
            vec![("B_x".into(), vec![Some(1.0), None])],
        )
        .unwrap();
        assert_eq!(f.column("B_x").unwrap(), [Some(1.0), None]);
        assert!(f.column("C_x").is_none());
        let e = Forces::new("forces", vec![Some(0.0), None], vec![]).unwrap_err();
        assert!(
            e.to_string().contains("row 2") && e.to_string().contains("'t'"),
            "{e}"
        );
        let e = Forces::new(
            "forces",
            vec![Some(0.0)],
            vec![("B_x".into(), vec![Some(f64::INFINITY)])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("inf"), "{e}");
        let e = Forces::new("forces", vec![Some(0.0)], vec![("B_x".into(), vec![])]).unwrap_err();
        assert!(e.to_string().contains("has 0 rows, expected 1"), "{e}");
    }
}
