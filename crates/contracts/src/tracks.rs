//! The `tracks` table (docs/bench.md section 6): long format `frame, t, marker, u, v, x, y`,
//! u, v in image pixels, x, y in bench-frame metres. A marker not seen in a frame has no row or
//! empty x, y: a gap, never an invented value. Tracks of a rolling shutter's video add
//! `delay_s, x_seen, y_seen`: each sample was seen `delay_s` after its frame's time, at
//! (x_seen, y_seen); x, y are its place at the frame's time, carried back along its own path.

use std::collections::BTreeMap;

use crate::{Column, ContractError, Table};

/// How a marker looks to the camera, so that the tracker knows what to seek (a closed set: a
/// marker's `kind` in the mechanism file).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum MarkerKind {
    /// A bright disc on a darker part (white or retro-reflective discs): the default.
    #[default]
    Bright,
    /// A dark disc on a lighter part or wall (a black target, a black mass before a white wall).
    Dark,
    /// A coloured sticker: its hue and how far from it a pixel may be, degrees.
    Colour {
        /// The sticker's hue, degrees (0 red, 120 green, 240 blue).
        hue_deg: f64,
        /// The half-width of the hues taken, degrees.
        tolerance_deg: f64,
    },
    /// A printed fiducial (an ArUco or AprilTag square): its identity read from its code, its
    /// centre where its corners' diagonals cross.
    Fiducial {
        /// OpenCV's predefined dictionary ([`FIDUCIAL_DICTIONARIES`]).
        dictionary: i32,
        /// The marker's identity in the dictionary.
        id: u32,
    },
    /// A feature that is no marker (a bolt's head, a pin), clicked once in the video and
    /// followed by normalized cross-correlation.
    Template,
}

/// The predefined ArUco and AprilTag dictionaries of OpenCV 4.6, by the names files use
/// (OpenCV's `DICT_*` names, lower case, without the prefix), with OpenCV's numbers.
pub const FIDUCIAL_DICTIONARIES: [(&str, i32); 21] = [
    ("4x4_50", 0),
    ("4x4_100", 1),
    ("4x4_250", 2),
    ("4x4_1000", 3),
    ("5x5_50", 4),
    ("5x5_100", 5),
    ("5x5_250", 6),
    ("5x5_1000", 7),
    ("6x6_50", 8),
    ("6x6_100", 9),
    ("6x6_250", 10),
    ("6x6_1000", 11),
    ("7x7_50", 12),
    ("7x7_100", 13),
    ("7x7_250", 14),
    ("7x7_1000", 15),
    ("aruco_original", 16),
    ("apriltag_16h5", 17),
    ("apriltag_25h9", 18),
    ("apriltag_36h10", 19),
    ("apriltag_36h11", 20),
];

impl MarkerKind {
    /// The kind's name as the mechanism file writes it.
    pub fn name(self) -> &'static str {
        match self {
            MarkerKind::Bright => "bright",
            MarkerKind::Dark => "dark",
            MarkerKind::Colour { .. } => "colour",
            MarkerKind::Fiducial { .. } => "fiducial",
            MarkerKind::Template => "template",
        }
    }

    /// Whether one tracker seeks both kinds in one video: the same kind, fiducials of one
    /// dictionary whatever their identities.
    pub fn same_look(self, other: MarkerKind) -> bool {
        match (self, other) {
            (
                MarkerKind::Fiducial { dictionary: a, .. },
                MarkerKind::Fiducial { dictionary: b, .. },
            ) => a == b,
            (a, b) => a == b,
        }
    }
}

/// One row of the tracks table: one marker in one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackRow {
    /// Frame index in the recording (0-based).
    pub frame: i64,
    /// Time of the frame, s.
    pub t: f64,
    /// Marker name (M1..M5 on the bench).
    pub marker: String,
    /// Image column of the marker's centre, px (None where not tracked from video).
    pub u: Option<f64>,
    /// Image row of the marker's centre, px.
    pub v: Option<f64>,
    /// Bench-frame x of the marker, m (None: not seen in this frame).
    pub x: Option<f64>,
    /// Bench-frame y of the marker, m.
    pub y: Option<f64>,
    /// Standard deviation of the image centre, px (written as the extra column `sigma_px`).
    pub sigma_px: Option<f64>,
    /// Where and when a rolling shutter's row saw the marker, when later than its frame's
    /// time (the extra columns `delay_s, x_seen, y_seen`; None: at the frame's time).
    pub late: Option<Late>,
}

/// A sample a rolling shutter saw after its frame's time: when, and where (bench frame).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Late {
    /// The time after the frame's time at which the marker's row was exposed, s.
    pub delay_s: f64,
    /// Bench-frame x where it was seen then, m.
    pub x: f64,
    /// Bench-frame y where it was seen then, m.
    pub y: f64,
}

/// A validated tracks table: finite values, strictly increasing time per marker, no duplicate
/// frames, positions given as whole pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracks {
    rows: Vec<TrackRow>,
}

/// One marker's positions on the recording's frame grid: `present[k]` is false in a gap.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerSeries {
    /// Marker name.
    pub name: String,
    /// Frame index of each sample.
    pub frame: Vec<i64>,
    /// Time of each sample, s.
    pub t: Vec<f64>,
    /// Bench-frame x, m (NaN in a gap).
    pub x: Vec<f64>,
    /// Bench-frame y, m (NaN in a gap).
    pub y: Vec<f64>,
    /// Whether the marker was seen in that frame.
    pub present: Vec<bool>,
    /// Per sample, when a rolling shutter saw it late: the delay after the frame's time, s, and
    /// where it was seen less where it is carried to (x, y), m; empty when the tracks have no
    /// such samples.
    pub late: Vec<Option<[f64; 3]>>,
}

/// The largest coordinate a tracks table may hold, in its own unit (metres, millimetres or
/// pixels): a bench position beyond it is a wrong column or a wrong unit, and would overflow the
/// smoothing's squares.
pub const MAX_COORDINATE: f64 = 1e9;

fn check_finite(
    table: &str,
    row: usize,
    marker: &str,
    column: &str,
    value: Option<f64>,
) -> Result<(), ContractError> {
    match value {
        Some(v) if !v.is_finite() => Err(ContractError::NotFinite {
            table: table.into(),
            row,
            marker: marker.into(),
            column: column.into(),
            value: v,
        }),
        Some(v) if v.abs() > MAX_COORDINATE && column != "sigma_px" => Err(ContractError::Absurd {
            table: table.into(),
            row,
            marker: marker.into(),
            column: column.into(),
            value: v,
        }),
        _ => Ok(()),
    }
}

fn check_pair(
    table: &str,
    row: usize,
    marker: &str,
    (na, a): (&str, Option<f64>),
    (nb, b): (&str, Option<f64>),
) -> Result<(), ContractError> {
    let half = |present: &str, missing: &str| ContractError::HalfPosition {
        table: table.into(),
        row,
        marker: marker.into(),
        present: present.into(),
        missing: missing.into(),
    };
    match (a, b) {
        (Some(_), None) => Err(half(na, nb)),
        (None, Some(_)) => Err(half(nb, na)),
        _ => Ok(()),
    }
}

/// A late sample's values checked: finite, a delay of 0 s to 1 s, on a row that has its
/// position.
fn check_late(row: usize, marker: &str, l: &Late, placed: bool) -> Result<(), ContractError> {
    for (name, v) in [("delay_s", l.delay_s), ("x_seen", l.x), ("y_seen", l.y)] {
        check_finite("tracks", row, marker, name, Some(v))?;
    }
    let half = |present: &str, missing: &str| ContractError::HalfPosition {
        table: "tracks".into(),
        row,
        marker: marker.into(),
        present: present.into(),
        missing: missing.into(),
    };
    if !placed {
        return Err(half("x_seen", "x"));
    }
    if !(0.0..1.0).contains(&l.delay_s) {
        return Err(ContractError::Absurd {
            table: "tracks".into(),
            row,
            marker: marker.into(),
            column: "delay_s".into(),
            value: l.delay_s,
        });
    }
    Ok(())
}

impl Tracks {
    /// Build a tracks table from rows, checking its invariants; `rows` may be in any marker
    /// order but each marker's rows must be in increasing time.
    pub fn new(rows: Vec<TrackRow>) -> Result<Self, ContractError> {
        const T: &str = "tracks";
        let mut last: BTreeMap<&str, (f64, i64)> = BTreeMap::new();
        let mut any = false;
        for (i, r) in rows.iter().enumerate() {
            let row = i + 1;
            if !r.t.is_finite() {
                return Err(ContractError::NotFinite {
                    table: T.into(),
                    row,
                    marker: r.marker.clone(),
                    column: "t".into(),
                    value: r.t,
                });
            }
            for (name, val) in [
                ("u", r.u),
                ("v", r.v),
                ("x", r.x),
                ("y", r.y),
                ("sigma_px", r.sigma_px),
            ] {
                check_finite(T, row, &r.marker, name, val)?;
            }
            check_pair(T, row, &r.marker, ("u", r.u), ("v", r.v))?;
            check_pair(T, row, &r.marker, ("x", r.x), ("y", r.y))?;
            if let Some(l) = r.late {
                check_late(row, &r.marker, &l, r.x.is_some())?;
            }
            any |= r.x.is_some();
            if let Some(&(pt, pf)) = last.get(r.marker.as_str()) {
                if r.frame == pf {
                    return Err(ContractError::DuplicateFrame {
                        table: T.into(),
                        row,
                        marker: r.marker.clone(),
                        frame: r.frame,
                    });
                }
                if r.t <= pt || r.frame < pf {
                    return Err(ContractError::UnsortedTime {
                        table: T.into(),
                        row,
                        marker: r.marker.clone(),
                        previous: pt,
                        current: r.t,
                    });
                }
            }
            last.insert(&r.marker, (r.t, r.frame));
        }
        if !any {
            return Err(ContractError::Empty { table: T.into() });
        }
        Ok(Tracks { rows })
    }

    /// The same tracks with the samples `left_out` (frame, marker) made gaps (their positions
    /// emptied, their rows kept, so that the frame grid stays whole), and how many were.
    pub fn without(&self, left_out: &std::collections::BTreeSet<(i64, String)>) -> (Tracks, usize) {
        let mut n = 0;
        let rows = self
            .rows
            .iter()
            .map(|r| {
                if r.x.is_some() && left_out.contains(&(r.frame, r.marker.clone())) {
                    n += 1;
                    TrackRow {
                        u: None,
                        v: None,
                        x: None,
                        y: None,
                        sigma_px: None,
                        late: None,
                        ..r.clone()
                    }
                } else {
                    r.clone()
                }
            })
            .collect();
        (Tracks { rows }, n)
    }

    /// The rows, as given.
    pub fn rows(&self) -> &[TrackRow] {
        &self.rows
    }

    /// Marker names in order of first appearance.
    pub fn marker_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for r in &self.rows {
            if !names.contains(&r.marker) {
                names.push(r.marker.clone());
            }
        }
        names
    }

    /// Each marker's positions on the common frame grid (the union of all frames), with gaps
    /// where the marker has no row or an empty position. The time of a frame is taken from any
    /// row that has it; rows of different markers that disagree on a frame's time are an error.
    pub fn series(&self) -> Result<Vec<MarkerSeries>, ContractError> {
        let mut frame_time: BTreeMap<i64, f64> = BTreeMap::new();
        for (i, r) in self.rows.iter().enumerate() {
            if let Some(&t) = frame_time.get(&r.frame) {
                if (t - r.t).abs() > 1e-9 * t.abs().max(1.0) {
                    return Err(ContractError::UnsortedTime {
                        table: "tracks".into(),
                        row: i + 1,
                        marker: r.marker.clone(),
                        previous: t,
                        current: r.t,
                    });
                }
            } else {
                frame_time.insert(r.frame, r.t);
            }
        }
        // Times must increase with frame number across markers too.
        let mut prev: Option<(i64, f64)> = None;
        for (&f, &t) in &frame_time {
            if let Some((_, pt)) = prev {
                if t <= pt {
                    return Err(ContractError::UnsortedTime {
                        table: "tracks".into(),
                        row: 0,
                        marker: format!("(frame {f})"),
                        previous: pt,
                        current: t,
                    });
                }
            }
            prev = Some((f, t));
        }
        let index: BTreeMap<i64, usize> = frame_time
            .keys()
            .enumerate()
            .map(|(k, &f)| (f, k))
            .collect();
        let n = frame_time.len();
        let frames: Vec<i64> = frame_time.keys().copied().collect();
        let times: Vec<f64> = frame_time.values().copied().collect();
        let mut out = Vec::new();
        let any_late = self.rows.iter().any(|r| r.late.is_some());
        for name in self.marker_names() {
            let mut s = MarkerSeries {
                name: name.clone(),
                frame: frames.clone(),
                t: times.clone(),
                x: vec![f64::NAN; n],
                y: vec![f64::NAN; n],
                present: vec![false; n],
                late: if any_late { vec![None; n] } else { Vec::new() },
            };
            for r in self.rows.iter().filter(|r| r.marker == name) {
                if let (Some(x), Some(y)) = (r.x, r.y) {
                    let k = index[&r.frame];
                    s.x[k] = x;
                    s.y[k] = y;
                    s.present[k] = true;
                    if let Some(l) = r.late {
                        s.late[k] = Some([l.delay_s, l.x - x, l.y - y]);
                    }
                }
            }
            out.push(s);
        }
        Ok(out)
    }

    /// The table in contract column order, the rows consumed as the columns are filled (a long
    /// recording's tracks are not held twice).
    pub fn into_table(self) -> Result<Table, ContractError> {
        let n = self.rows.len();
        let (mut frame, mut t, mut marker) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let any_late = self.rows.iter().any(|r| r.late.is_some());
        let mut opt: [Vec<Option<f64>>; 8] = std::array::from_fn(|_| Vec::with_capacity(n));
        for r in self.rows {
            frame.push(r.frame);
            t.push(r.t);
            marker.push(r.marker);
            let late = r.late.map(|l| [l.delay_s, l.x, l.y]);
            let late = |i: usize| late.map(|l| l[i]);
            let values = [r.u, r.v, r.x, r.y, r.sigma_px, late(0), late(1), late(2)];
            for (c, v) in opt.iter_mut().zip(values) {
                c.push(v);
            }
        }
        let [u, v, x, y, sigma, delay, x_seen, y_seen] = opt;
        let cols = [
            ("frame", Column::I64(frame)),
            ("t", Column::F64(t)),
            ("marker", Column::Str(marker)),
            ("u", Column::OptF64(u)),
            ("v", Column::OptF64(v)),
            ("x", Column::OptF64(x)),
            ("y", Column::OptF64(y)),
            ("sigma_px", Column::OptF64(sigma)),
        ];
        let late = [
            ("delay_s", Column::OptF64(delay)),
            ("x_seen", Column::OptF64(x_seen)),
            ("y_seen", Column::OptF64(y_seen)),
        ];
        // The late columns only where a rolling shutter's samples are: every other table's
        // bytes as before.
        let late = late.into_iter().filter(|_| any_late);
        Table::from_columns("tracks", cols.into_iter().chain(late))
    }

    /// The table in contract column order.
    pub fn to_table(&self) -> Result<Table, ContractError> {
        self.clone().into_table()
    }
}

/// The markers' series with the samples `left_out` ((frame, marker name) pairs) made gaps
/// (NaN, not present), in place: what [`Tracks::without`] then [`Tracks::series`] make of the
/// table the series came from (the frame grid kept, since `without` keeps the rows), without
/// holding the table. Returns the number of samples left out that were present.
pub fn series_without(
    series: &mut [MarkerSeries],
    left_out: &std::collections::BTreeSet<(i64, String)>,
) -> usize {
    let mut n = 0;
    for s in series.iter_mut() {
        for (frame, _) in left_out.iter().filter(|(_, m)| *m == s.name) {
            if let Ok(k) = s.frame.binary_search(frame) {
                if s.present[k] {
                    (s.x[k], s.y[k], s.present[k]) = (f64::NAN, f64::NAN, false);
                    n += 1;
                }
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table has the contract's columns in order, one row per track row, gaps kept.
    #[test]
    fn table_in_contract_order_with_gaps() {
        let t = Tracks::new(vec![
            row(0, 0.0, "M1", Some(0.1)),
            row(0, 0.0, "M2", None),
            row(1, 0.01, "M1", Some(0.2)),
        ])
        .unwrap()
        .into_table()
        .unwrap();
        let names = t.names();
        assert_eq!(
            names,
            ["frame", "t", "marker", "u", "v", "x", "y", "sigma_px"]
        );
        assert_eq!(
            t.column("marker"),
            Some(&Column::Str(vec!["M1".into(), "M2".into(), "M1".into()]))
        );
        assert_eq!(
            t.column("x"),
            Some(&Column::OptF64(vec![Some(0.1), None, Some(0.2)]))
        );
        assert_eq!(t.column("t"), Some(&Column::F64(vec![0.0, 0.0, 0.01])));
    }

    /// Leaving samples out of the series is leaving them out of the table then making the
    /// series: a present sample, a gap, a frame the table lacks, a marker it lacks; the same
    /// series (NaN compared as NaN) and the same count.
    #[test]
    fn series_without_is_the_table_without() {
        let rows = vec![
            row(0, 0.0, "M1", Some(0.1)),
            row(0, 0.0, "M2", Some(0.5)),
            row(1, 0.01, "M1", Some(0.2)),
            row(1, 0.01, "M2", None),
            row(3, 0.03, "M1", Some(0.3)),
            row(3, 0.03, "M2", Some(0.7)),
        ];
        let tracks = Tracks::new(rows).unwrap();
        let out: std::collections::BTreeSet<(i64, String)> =
            [(1, "M1"), (1, "M2"), (2, "M1"), (3, "M2"), (3, "M9")]
                .into_iter()
                .map(|(f, m)| (f, m.to_string()))
                .collect();
        let (table, n_table) = tracks.without(&out);
        let expected = table.series().unwrap();
        let mut series = tracks.series().unwrap();
        assert_eq!(series_without(&mut series, &out), n_table);
        assert_eq!(n_table, 2);
        // Each series as its name, frames, x's and y's bits, presence.
        type Bits = (String, Vec<i64>, Vec<u64>, Vec<u64>, Vec<bool>);
        let bits = |s: &[MarkerSeries]| -> Vec<Bits> {
            s.iter()
                .map(|m| {
                    let b = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect();
                    (
                        m.name.clone(),
                        m.frame.clone(),
                        b(&m.x),
                        b(&m.y),
                        m.present.clone(),
                    )
                })
                .collect()
        };
        assert_eq!(bits(&series), bits(&expected));
    }

    fn row(frame: i64, t: f64, m: &str, x: Option<f64>) -> TrackRow {
        TrackRow {
            frame,
            t,
            marker: m.into(),
            u: None,
            v: None,
            x,
            y: x,
            sigma_px: None,
            late: None,
        }
    }

    /// A late sample gives its series the delay and the seen place less the carried one; a late
    /// sample without a position, or with a delay below 0 s, is refused.
    #[test]
    fn late_samples_in_the_series_and_refused_when_absurd() {
        let late = |delay_s: f64| Late {
            delay_s,
            x: 1.25,
            y: 0.75,
        };
        let mut a = row(0, 0.0, "M1", Some(1.0));
        a.late = Some(late(0.004));
        let tr = Tracks::new(vec![a.clone(), row(1, 0.01, "M1", Some(1.1))]).unwrap();
        let s = tr.series().unwrap();
        assert_eq!(s[0].late, vec![Some([0.004, 0.25, -0.25]), None]);
        let mut gap = row(0, 0.0, "M1", None);
        gap.late = Some(late(0.004));
        let e = Tracks::new(vec![gap]).unwrap_err().to_string();
        assert!(e.contains("x_seen") && e.contains("'x'"), "{e}");
        a.late = Some(late(-0.001));
        let e = Tracks::new(vec![a]).unwrap_err().to_string();
        assert!(e.contains("delay_s"), "{e}");
        // Tracks without late samples: series without the late vector.
        let plain = Tracks::new(vec![row(0, 0.0, "M1", Some(1.0))]).unwrap();
        assert!(plain.series().unwrap()[0].late.is_empty());
    }

    #[test]
    fn gaps_stay_gaps() {
        let tr = Tracks::new(vec![
            row(0, 0.0, "M1", Some(1.0)),
            row(0, 0.0, "M2", Some(2.0)),
            row(1, 0.1, "M2", Some(2.1)),
            row(2, 0.2, "M1", None),
            row(2, 0.2, "M2", Some(2.2)),
        ])
        .unwrap();
        let s = tr.series().unwrap();
        assert_eq!(s[0].present, vec![true, false, false]);
        assert!(s[0].x[1].is_nan());
        assert_eq!(s[1].x, vec![2.0, 2.1, 2.2]);
    }

    #[test]
    fn unsorted_and_nan_are_named() {
        let e = Tracks::new(vec![
            row(0, 0.1, "M1", Some(1.0)),
            row(1, 0.05, "M1", Some(1.0)),
        ])
        .unwrap_err();
        assert!(
            e.to_string().contains("row 2") && e.to_string().contains("sort"),
            "{e}"
        );
        let e = Tracks::new(vec![row(0, 0.0, "M1", Some(f64::NAN))]).unwrap_err();
        assert!(e.to_string().contains("'x' is NaN"), "{e}");
        let e = Tracks::new(vec![
            row(0, 0.0, "M1", Some(1.0)),
            row(0, 0.1, "M1", Some(1.0)),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("appears twice"), "{e}");
    }
}
