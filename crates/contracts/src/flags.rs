//! The flags table (`flags.csv` beside the tracks, `fit_flags.csv` beside the process stage's
//! outputs): the tracked samples to doubt, each with the test that doubts it and its score (the
//! test's statistic over its threshold: 1 at the threshold, larger beyond). Columns
//! `frame, marker, reason, score`. And the two statistics the tests share: the chi-square
//! threshold of a 2-D residual and the robust scale of residuals.

use std::collections::BTreeSet;

use crate::names::{by_name, UnknownName};
use crate::table::{Column, Table};
use crate::ContractError;

/// Why a tracked sample is doubted: the tests of the track stage, and the fitted mechanism's
/// residual (the process stage's).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FlagReason {
    /// Its place is far from where the marker's motion around it puts it (the innovation
    /// against the motion model, chi-square).
    Innovation,
    /// Its place is far from where the body's other markers put it (the body's rigid pattern,
    /// chi-square).
    Pattern,
    /// Its blob grew against the marker's running median (a glint or another blob merged).
    Area,
    /// Its blob lengthened against the marker's running median.
    Shape,
    /// A second blob among the marker's candidates was as plausible under the motion model.
    SecondBlob,
    /// Its blob is short of the marker's running median area (the marker partly hidden).
    PartlyHidden,
    /// Its place is far from where the fitted mechanism puts it (the kinematic fit's
    /// reprojection residual, chi-square; the process stage's test).
    Residual,
}

const REASONS: [(&str, FlagReason); 7] = [
    ("innovation", FlagReason::Innovation),
    ("pattern", FlagReason::Pattern),
    ("area", FlagReason::Area),
    ("shape", FlagReason::Shape),
    ("second_blob", FlagReason::SecondBlob),
    ("partly_hidden", FlagReason::PartlyHidden),
    ("residual", FlagReason::Residual),
];

/// The default false-alarm level of each test of the tracked samples (the probability that a
/// clean sample fails it): measured on the clean default recording, 0.2 % of its samples fail a
/// test of the track stage at this level (docs/tracking.md).
pub const FALSE_ALARM: f64 = 1e-6;

/// The 1 - alpha quantile of the chi-square distribution with 2 degrees of freedom: -2 ln alpha
/// (its survival function is exp(-x/2)), the threshold of a 2-D residual over its scale at the
/// false-alarm level alpha.
pub fn chi2_2_quantile(alpha: f64) -> f64 {
    -2.0 * alpha.ln()
}

/// 1.4826 times the median of the absolute values of `x` (the standard deviation of normal
/// values, robust to a minority of outliers), at least `floor`; `floor` for no values.
pub fn robust_scale(mut x: Vec<f64>, floor: f64) -> f64 {
    if x.is_empty() {
        return floor;
    }
    x.iter_mut().for_each(|v| *v = v.abs());
    let mid = x.len() / 2;
    x.select_nth_unstable_by(mid, f64::total_cmp);
    (1.4826 * x[mid]).max(floor)
}

impl FlagReason {
    /// Every reason, in the table's order.
    pub fn all() -> impl Iterator<Item = FlagReason> {
        REASONS.iter().map(|(_, r)| *r)
    }
}

impl std::str::FromStr for FlagReason {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<FlagReason, UnknownName> {
        by_name(name, "a flag's reason", &REASONS)
    }
}

impl std::fmt::Display for FlagReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = REASONS
            .iter()
            .find(|(_, r)| r == self)
            .map_or("", |(n, _)| n);
        f.write_str(name)
    }
}

/// One flagged sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    /// Frame number (from 0).
    pub frame: i64,
    /// The marker's name.
    pub marker: String,
    /// The test that doubts it.
    pub reason: FlagReason,
    /// The test's statistic over its threshold (above 1).
    pub score: f64,
}

/// The flags table, checked: frames whole and not negative, markers named, reasons known,
/// scores finite and positive.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Flags {
    /// The flags in frame, marker, reason order.
    rows: Vec<Flag>,
}

/// One row as a table reader gives it: frame, marker, reason, score.
pub type FlagRead = (Option<f64>, Option<String>, Option<String>, Option<f64>);

impl Flags {
    /// The flags in frame, marker, reason order.
    pub fn rows(&self) -> &[Flag] {
        &self.rows
    }

    /// The flags, the table let go.
    pub fn into_rows(self) -> Vec<Flag> {
        self.rows
    }

    /// The flags, sorted by frame, marker and reason.
    pub fn from_rows(mut rows: Vec<Flag>) -> Flags {
        rows.sort_by(|a, b| (a.frame, &a.marker, a.reason).cmp(&(b.frame, &b.marker, b.reason)));
        Flags { rows }
    }

    /// The table from its rows as read, checked.
    pub fn new(table: &str, read: Vec<FlagRead>) -> Result<Flags, ContractError> {
        let mut rows = Vec::with_capacity(read.len());
        for (i, (frame, marker, reason, score)) in read.into_iter().enumerate() {
            let row = i + 1;
            let missing = |column: &str| ContractError::Missing {
                table: table.into(),
                row,
                column: column.into(),
            };
            let bad = |column: &str, reason: String| ContractError::Invalid {
                table: table.into(),
                row,
                column: column.into(),
                reason,
            };
            let frame = frame.ok_or_else(|| missing("frame"))?;
            if !(frame >= 0.0 && frame.fract() == 0.0 && frame < 1e15) {
                return Err(bad("frame", format!("is {frame}, not a frame number")));
            }
            let marker = marker.ok_or_else(|| missing("marker"))?;
            let reason: FlagReason = reason
                .ok_or_else(|| missing("reason"))?
                .parse()
                .map_err(|e: UnknownName| bad("reason", e.to_string()))?;
            let score = score.ok_or_else(|| missing("score"))?;
            if !(score.is_finite() && score > 0.0) {
                return Err(bad("score", format!("is {score}, not a positive number")));
            }
            rows.push(Flag {
                frame: frame as i64,
                marker,
                reason,
                score,
            });
        }
        Ok(Flags::from_rows(rows))
    }

    /// The samples flagged (frame, marker), each once.
    pub fn samples(&self) -> BTreeSet<(i64, String)> {
        self.rows
            .iter()
            .map(|f| (f.frame, f.marker.clone()))
            .collect()
    }

    /// The number of flags of each reason, in [`FlagReason::all`]'s order.
    pub fn counts(&self) -> Vec<(FlagReason, usize)> {
        FlagReason::all()
            .map(|r| (r, self.rows.iter().filter(|f| f.reason == r).count()))
            .collect()
    }

    /// The table to write (`flags`): frame, marker, reason, score.
    pub fn to_table(&self) -> Result<Table, ContractError> {
        self.to_named_table("flags")
    }

    /// The table to write under the name `name`: frame, marker, reason, score.
    pub fn to_named_table(&self, name: &str) -> Result<Table, ContractError> {
        let rows = &self.rows;
        Table::from_columns(
            name,
            [
                ("frame", Column::I64(rows.iter().map(|f| f.frame).collect())),
                (
                    "marker",
                    Column::Str(rows.iter().map(|f| f.marker.clone()).collect()),
                ),
                (
                    "reason",
                    Column::Str(rows.iter().map(|f| f.reason.to_string()).collect()),
                ),
                ("score", Column::F64(rows.iter().map(|f| f.score).collect())),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_by_name_and_a_bad_row_refused() {
        for r in FlagReason::all() {
            assert_eq!(r.to_string().parse::<FlagReason>().unwrap(), r);
        }
        let ok = Flags::new(
            "flags",
            vec![(Some(3.0), Some("M2".into()), Some("area".into()), Some(2.5))],
        )
        .unwrap();
        assert_eq!(ok.samples().len(), 1);
        let e = Flags::new(
            "flags",
            vec![(
                Some(3.0),
                Some("M2".into()),
                Some("glare".into()),
                Some(2.5),
            )],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("glare") && e.contains("second_blob"), "{e}");
        let e = Flags::new(
            "flags",
            vec![(
                Some(-1.0),
                Some("M2".into()),
                Some("area".into()),
                Some(2.5),
            )],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("frame"), "{e}");
    }
}
