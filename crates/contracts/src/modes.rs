//! The fem stage's modal table, checked: per instant of the cycle and per followed mode of the
//! lever, its frequency (symmetric problem and full problem with the gyroscopic and skew terms)
//! and its damping ratio. Built by [`Modes::new`], which checks, and written by
//! [`Modes::to_table`].

use crate::table::{Column, Table};
use crate::ContractError;

/// What a mode of the lever mostly is: bending (transverse) or axial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeKind {
    /// More than half of the mode's kinetic energy is transverse.
    Bending,
    /// The rest.
    Axial,
}

impl ModeKind {
    /// Its name in the table.
    pub fn as_str(&self) -> &'static str {
        match self {
            ModeKind::Bending => "bending",
            ModeKind::Axial => "axial",
        }
    }
}

/// One followed mode at one instant of the cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModeRow {
    /// The instant, s.
    pub t: f64,
    /// The crank angle there, rad (unwrapped).
    pub crank_angle: f64,
    /// The mode's number as followed along the cycle, from 1.
    pub mode: usize,
    /// Bending or axial.
    pub kind: ModeKind,
    /// Its frequency in the symmetric problem, Hz (None when not found).
    pub freq_hz: Option<f64>,
    /// Its frequency in the full problem, Hz (None when not computed).
    pub full_freq_hz: Option<f64>,
    /// Its damping ratio in the full problem (None when not computed).
    pub damping_ratio: Option<f64>,
}

/// The modal table: rows instant by instant (times non-decreasing, modes numbered 1, 2, ... at
/// each instant), frequencies finite and not negative, or absent.
#[derive(Debug, Clone, PartialEq)]
pub struct Modes {
    /// The rows in order.
    rows: Vec<ModeRow>,
}

impl Modes {
    /// The rows in order (instant by instant, modes numbered from 1 at each).
    pub fn rows(&self) -> &[ModeRow] {
        &self.rows
    }

    /// The table from its rows, checked.
    pub fn new(rows: Vec<ModeRow>) -> Result<Modes, ContractError> {
        let table = "modal";
        for (i, r) in rows.iter().enumerate() {
            let row = i + 1;
            for (column, v) in [("t", Some(r.t)), ("crank_angle", Some(r.crank_angle))] {
                if let Some(x) = v.filter(|x| !x.is_finite()) {
                    return Err(ContractError::NotFiniteValue {
                        table: table.into(),
                        row,
                        column: column.into(),
                        value: x,
                    });
                }
            }
            for (column, v) in [("freq_hz", r.freq_hz), ("full_freq_hz", r.full_freq_hz)] {
                if let Some(x) = v.filter(|x| !(x.is_finite() && *x >= 0.0)) {
                    return Err(ContractError::NotFiniteValue {
                        table: table.into(),
                        row,
                        column: column.into(),
                        value: x,
                    });
                }
            }
            let expected = match i.checked_sub(1).map(|p| &rows[p]) {
                Some(prev) if prev.t == r.t => prev.mode + 1,
                Some(prev) if r.t < prev.t => {
                    return Err(ContractError::TimeNotIncreasing {
                        table: table.into(),
                        row,
                        previous: prev.t,
                        current: r.t,
                    })
                }
                _ => 1,
            };
            if r.mode != expected {
                return Err(ContractError::TimeGrid {
                    table: table.into(),
                    reason: format!(
                        "row {row}: mode {} at t = {} s where mode {expected} was due; each instant lists its modes 1, 2, ... in order",
                        r.mode, r.t
                    ),
                });
            }
        }
        Ok(Modes { rows })
    }

    /// The table as written (`modal.csv`, `modal.parquet`).
    pub fn to_table(&self) -> Result<Table, crate::ContractError> {
        let r = &self.rows;
        let columns = [
            ("t", Column::F64(r.iter().map(|x| x.t).collect())),
            (
                "crank_angle",
                Column::F64(r.iter().map(|x| x.crank_angle).collect()),
            ),
            (
                "mode",
                Column::I64(r.iter().map(|x| x.mode as i64).collect()),
            ),
            (
                "kind",
                Column::Str(r.iter().map(|x| x.kind.as_str().to_string()).collect()),
            ),
            (
                "freq_hz",
                Column::OptF64(r.iter().map(|x| x.freq_hz).collect()),
            ),
            (
                "full_freq_hz",
                Column::OptF64(r.iter().map(|x| x.full_freq_hz).collect()),
            ),
            (
                "damping_ratio",
                Column::OptF64(r.iter().map(|x| x.damping_ratio).collect()),
            ),
        ];
        Table::from_columns("modal", columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, mode: usize, f: f64) -> ModeRow {
        ModeRow {
            t,
            crank_angle: t * 10.0,
            mode,
            kind: ModeKind::Bending,
            freq_hz: Some(f),
            full_freq_hz: None,
            damping_ratio: None,
        }
    }

    #[test]
    fn modes_are_numbered_per_instant_with_positive_frequencies() {
        let ok = Modes::new(vec![
            row(0.0, 1, 20.0),
            row(0.0, 2, 70.0),
            row(0.1, 1, 21.0),
        ]);
        assert_eq!(ok.unwrap().to_table().unwrap().height(), 3);
        let e = Modes::new(vec![row(0.0, 1, 20.0), row(0.0, 3, 70.0)]).unwrap_err();
        assert!(
            e.to_string().contains("mode 3") && e.to_string().contains("mode 2 was due"),
            "{e}"
        );
        let e = Modes::new(vec![row(0.1, 1, 20.0), row(0.0, 1, 20.0)]).unwrap_err();
        assert!(e.to_string().contains("0.1 s to 0 s"), "{e}");
        let e = Modes::new(vec![row(0.0, 1, -3.0)]).unwrap_err();
        assert!(e.to_string().contains("'freq_hz' is -3"), "{e}");
    }
}
