//! The batch summary: one row per recording of a batch (its key numbers, or its error), as a
//! CSV table and as an HTML page linking each recording's report.

use std::fmt::Write as _;

use crate::csv_field;
use crate::page::esc;

/// One number column of the batch summary: its CSV key, its heading (with the unit) and the
/// decimals the page shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchColumn {
    /// The CSV column's name (e.g. `crank_speed_rpm`).
    pub key: &'static str,
    /// The page's heading, with the unit (e.g. `crank speed (rpm)`).
    pub label: &'static str,
    /// Decimals shown on the page (the CSV keeps every digit).
    pub decimals: usize,
}

/// A recording whose run ended: its numbers in the batch summary.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchDone {
    /// The recording's folder name.
    pub recording: String,
    /// One value per column, in the column's unit (None where absent or not finite).
    pub values: Vec<Option<f64>>,
    /// The lever's mode 1, lowest and highest frequency along the cycle, Hz.
    pub mode1: [Option<f64>; 2],
    /// The lever's mode 3, lowest and highest frequency along the cycle, Hz.
    pub mode3: [Option<f64>; 2],
    /// The report's path, relative to the batch folder.
    pub report: String,
}

/// One recording's row of the batch summary.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchRow {
    /// The run ended.
    Done(BatchDone),
    /// The run stopped with an error.
    Failed {
        /// The recording's folder name.
        recording: String,
        /// The error in words.
        error: String,
    },
}

/// The batch summary as CSV: recording, status, the columns, the modes' ranges, the report and
/// the error.
pub fn batch_csv(cols: &[BatchColumn], rows: &[BatchRow]) -> String {
    let mut csv = String::from("recording,status,");
    csv.push_str(&cols.iter().map(|c| c.key).collect::<Vec<_>>().join(","));
    csv.push_str(",mode1_hz_min,mode1_hz_max,mode3_hz_min,mode3_hz_max,report,error\n");
    let f = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for row in rows {
        match row {
            BatchRow::Done(d) => {
                let _ = write!(csv, "{},ok,", csv_field(&d.recording));
                for v in &d.values {
                    let _ = write!(csv, "{},", f(*v));
                }
                let [a, b, c, e] = [d.mode1[0], d.mode1[1], d.mode3[0], d.mode3[1]].map(f);
                let _ = writeln!(csv, "{a},{b},{c},{e},{},", csv_field(&d.report));
            }
            BatchRow::Failed { recording, error } => {
                let _ = writeln!(
                    csv,
                    "{},failed,{}{}",
                    csv_field(recording),
                    ",".repeat(cols.len() + 5),
                    csv_field(error)
                );
            }
        }
    }
    csv
}

/// The batch summary as an HTML page: one row per recording, its numbers, the modes' ranges
/// and a link to its report, or its error.
pub fn batch_html(cols: &[BatchColumn], rows: &[BatchRow]) -> String {
    let mut html = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>flexbench batch summary</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:right}td:first-child,td.err{text-align:left}.err{color:#a00}</style></head><body><h1>Batch summary</h1><table><tr><th>recording</th><th>status</th>");
    for c in cols {
        let _ = write!(html, "<th>{}</th>", esc(c.label));
    }
    html.push_str("<th>mode 1 (Hz)</th><th>mode 3 (Hz)</th><th>report / error</th></tr>\n");
    let range = |m: &[Option<f64>; 2]| match (m[0], m[1]) {
        (Some(a), Some(b)) => format!("{a:.1}-{b:.1}"),
        _ => "-".into(),
    };
    for row in rows {
        match row {
            BatchRow::Done(d) => {
                let _ = write!(html, "<tr><td>{}</td><td>ok</td>", esc(&d.recording));
                for (c, v) in cols.iter().zip(&d.values) {
                    let cell = v
                        .map(|v| format!("{v:.*}", c.decimals))
                        .unwrap_or_else(|| "-".into());
                    let _ = write!(html, "<td>{cell}</td>");
                }
                let _ = writeln!(
                    html,
                    "<td>{}</td><td>{}</td><td><a href=\"{}\">report</a></td></tr>",
                    range(&d.mode1),
                    range(&d.mode3),
                    esc(&d.report)
                );
            }
            BatchRow::Failed { recording, error } => {
                let _ = writeln!(html, "<tr><td>{}</td><td class=\"err\">failed</td><td class=\"err\" colspan=\"{}\">{}</td></tr>", esc(recording), cols.len() + 3, esc(error));
            }
        }
    }
    html.push_str("</table></body></html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> [BatchColumn; 2] {
        [
            BatchColumn {
                key: "crank_speed_rpm",
                label: "crank speed (rpm)",
                decimals: 2,
            },
            BatchColumn {
                key: "fit_rms_mm",
                label: "fit RMS (mm)",
                decimals: 3,
            },
        ]
    }

    fn rows() -> Vec<BatchRow> {
        vec![
            BatchRow::Done(BatchDone {
                recording: "a, 240 fps".into(),
                values: vec![Some(139.987654), None],
                mode1: [Some(20.04), Some(21.96)],
                mode3: [None, Some(90.0)],
                report: "a/report/report.html".into(),
            }),
            BatchRow::Failed {
                recording: "b".into(),
                error: "video <broken>".into(),
            },
        ]
    }

    #[test]
    fn csv_keeps_every_digit_and_every_column() {
        let csv = batch_csv(&cols(), &rows());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "recording,status,crank_speed_rpm,fit_rms_mm,mode1_hz_min,mode1_hz_max,mode3_hz_min,mode3_hz_max,report,error");
        assert_eq!(
            lines[1],
            "\"a, 240 fps\",ok,139.987654,,20.04,21.96,,90,a/report/report.html,"
        );
        assert_eq!(lines[2], "b,failed,,,,,,,,video <broken>");
        for l in &lines {
            // Every row has as many fields as the header (the quoted comma is one field).
            let fields = l.replace("\"a, 240 fps\"", "a").split(',').count();
            assert_eq!(fields, 10, "{l}");
        }
    }

    #[test]
    fn page_rounds_escapes_and_links() {
        let html = batch_html(&cols(), &rows());
        assert!(html.contains("<td>139.99</td><td>-</td><td>20.0-22.0</td><td>-</td>"));
        assert!(html.contains("<a href=\"a/report/report.html\">report</a>"));
        assert!(html.contains("colspan=\"5\">video &lt;broken&gt;</td>"));
        assert!(html.ends_with("</table></body></html>\n"));
    }
}
