//! Interchange with other motion tools: a foreign tracks CSV imported (the wide format DLTdv and
//! Tracker write: one row per frame, a pair of coordinate columns per marker, NaN or an empty
//! cell for a gap), and the tracks and the markers' kinematics exported as TRC (OpenSim, Motion
//! Analysis) and C3D (every biomechanics tool).

use std::path::{Path, PathBuf};

use flexbench_contracts::{TrackRow, Tracks};

use crate::{opt_f64, read_frame, DataFrame, TableError};

/// The unit of a foreign table's coordinates: a length in the bench frame, or image pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthUnit {
    /// Metres.
    M,
    /// Millimetres.
    Mm,
    /// Centimetres.
    Cm,
    /// Inches.
    In,
    /// Image pixels, mapped to the bench plane through a calibration.
    Px,
}

impl LengthUnit {
    /// Metres per unit (None for pixels).
    pub fn metres(self) -> Option<f64> {
        match self {
            LengthUnit::M => Some(1.0),
            LengthUnit::Mm => Some(1e-3),
            LengthUnit::Cm => Some(1e-2),
            LengthUnit::In => Some(0.0254),
            LengthUnit::Px => None,
        }
    }
}

impl std::fmt::Display for LengthUnit {
    /// The unit's name, as files and the command line give it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LengthUnit::M => "m",
            LengthUnit::Mm => "mm",
            LengthUnit::Cm => "cm",
            LengthUnit::In => "in",
            LengthUnit::Px => "px",
        })
    }
}

impl std::str::FromStr for LengthUnit {
    type Err = TableError;

    fn from_str(unit: &str) -> Result<LengthUnit, TableError> {
        Ok(match unit {
            "m" => LengthUnit::M,
            "mm" => LengthUnit::Mm,
            "cm" => LengthUnit::Cm,
            "in" => LengthUnit::In,
            "px" => LengthUnit::Px,
            other => {
                return Err(TableError::Unit {
                    unit: other.to_string(),
                })
            }
        })
    }
}

/// How to read a wide tracks table (one row per frame, a pair of coordinate columns per marker).
#[derive(Debug, Clone, PartialEq)]
pub struct WideSpec {
    /// The coordinates' unit.
    pub unit: LengthUnit,
    /// Frame rate when the table has no time column, frames/s.
    pub fps: Option<f64>,
    /// The markers renamed, in the file's column order (None: the file's own names).
    pub markers: Option<Vec<String>>,
}

/// How a wide table's pixel coordinates reach the bench plane.
#[derive(Clone, Copy)]
pub enum Pixels<'a> {
    /// No calibration was given.
    Uncalibrated,
    /// A calibration without the bench plane.
    NoPlane,
    /// The calibration's map from a pixel (u, v) to the bench frame (m).
    Plane(&'a dyn Fn(f64, f64) -> (f64, f64)),
}

/// The marker name and axis of a wide table's coordinate column: `M1_x`, `M1.y`, `M1 X`,
/// `pt1_cam1_X` (DLTdv) -> (`pt1_cam1`, 'x').
fn coordinate_column(name: &str) -> Option<(String, char)> {
    let n = name.trim();
    let axis = n.chars().last()?.to_ascii_lowercase();
    if axis != 'x' && axis != 'y' {
        return None;
    }
    let stem = n[..n.len() - 1].trim_end_matches(['_', '.', ' ', '-']);
    (!stem.is_empty() && stem.len() < n.len() - 1).then(|| (stem.to_string(), axis))
}

/// A column of optional numbers (None: empty or absent).
type OptColumn = Vec<Option<f64>>;

/// A wide tracks table: its markers in column order with their x and y columns, and the time.
/// Exposed for tests and for tools that read DLTdv or Tracker files.
pub fn read_wide(path: &Path, spec: &WideSpec, pixels: Pixels) -> Result<Tracks, TableError> {
    let df = read_frame(path)?;
    let bad = |reason: String| TableError::Wide {
        path: path.display().to_string(),
        reason,
    };
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let markers = wide_markers(&names).map_err(&bad)?;
    let labels = wide_labels(&markers, spec.markers.as_deref()).map_err(&bad)?;
    let frames = wide_frames(&df, path, &names)?;
    let t = wide_times(&df, path, &names, &frames, spec.fps)?;
    let factor = spec.unit.metres();
    let plane = match (factor, pixels) {
        (Some(_), _) => None,
        (None, Pixels::Plane(map)) => Some(map),
        (None, Pixels::NoPlane) => return Err(bad("the calibration has no bench plane, needed to map pixels to the bench".into())),
        (None, Pixels::Uncalibrated) => return Err(bad("coordinates in px need a calibration with the bench plane: give [inputs] calibration or views".into())),
    };
    let n = df.height();
    let mut rows = Vec::with_capacity(n * markers.len());
    let cols: Vec<(OptColumn, OptColumn)> = markers
        .iter()
        .map(|(_, x, y)| Ok((opt_f64(&df, path, x)?, opt_f64(&df, path, y)?)))
        .collect::<Result<_, TableError>>()?;
    for i in 0..n {
        for (k, (xs, ys)) in cols.iter().enumerate() {
            let (x, y) = (
                xs[i].filter(|v| v.is_finite()),
                ys[i].filter(|v| v.is_finite()),
            );
            let (u, v, x, y) = match (x, y, factor, &plane) {
                (Some(a), Some(b), Some(f), _) => (None, None, Some(a * f), Some(b * f)),
                (Some(a), Some(b), None, Some(map)) => {
                    let (bx, by) = map(a, b);
                    (Some(a), Some(b), Some(bx), Some(by))
                }
                _ => (None, None, None, None),
            };
            rows.push(TrackRow {
                frame: frames[i],
                t: t[i],
                marker: labels[k].clone(),
                u,
                v,
                x,
                y,
                sigma_px: None,
                late: None,
            });
        }
    }
    Tracks::new(rows).map_err(|e| TableError::Contract {
        path: path.display().to_string(),
        source: Box::new(e),
    })
}

/// A wide table's markers in column order, each with its x and y columns; the reason when a
/// marker lacks one of them or the table has none.
fn wide_markers(names: &[String]) -> Result<Vec<(String, String, String)>, String> {
    let mut markers: Vec<(String, Option<String>, Option<String>)> = Vec::new();
    for c in names {
        if let Some((m, axis)) = coordinate_column(c) {
            let k = match markers.iter().position(|e| e.0 == m) {
                Some(k) => k,
                None => {
                    markers.push((m.clone(), None, None));
                    markers.len() - 1
                }
            };
            if axis == 'x' {
                markers[k].1 = Some(c.clone());
            } else {
                markers[k].2 = Some(c.clone());
            }
        }
    }
    let markers: Vec<(String, String, String)> = markers
        .into_iter()
        .map(|(m, x, y)| match (x, y) {
            (Some(x), Some(y)) => Ok((m, x, y)),
            (x, _) => Err(format!(
                "marker {m} has a {} column but no {} column; each marker needs both",
                if x.is_some() { "x" } else { "y" },
                if x.is_some() { "y" } else { "x" }
            )),
        })
        .collect::<Result<_, _>>()?;
    if markers.is_empty() {
        return Err(format!(
            "no marker coordinate columns (a pair <marker>_x, <marker>_y per marker, e.g. M1_x, M1_y or pt1_cam1_X, pt1_cam1_Y); the columns are {}",
            names.join(", ")
        ));
    }
    Ok(markers)
}

/// The markers' names: the table's, or `rename` (as many names as markers).
fn wide_labels(
    markers: &[(String, String, String)],
    rename: Option<&[String]>,
) -> Result<Vec<String>, String> {
    match rename {
        Some(r) if r.len() != markers.len() => Err(format!(
            "tracks_markers names {} markers but the file has {} ({})",
            r.len(),
            markers.len(),
            markers
                .iter()
                .map(|m| m.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Some(r) => Ok(r.to_vec()),
        None => Ok(markers.iter().map(|m| m.0.clone()).collect()),
    }
}

/// The rows' frame numbers: the frame column's (whole numbers), else the row index.
fn wide_frames(df: &DataFrame, path: &Path, names: &[String]) -> Result<Vec<i64>, TableError> {
    let frame_col = names
        .iter()
        .find(|c| ["frame", "frame#", "frames"].contains(&c.trim().to_lowercase().as_str()));
    let Some(c) = frame_col else {
        return Ok((0..df.height() as i64).collect());
    };
    opt_f64(df, path, c)?
        .iter()
        .enumerate()
        .map(|(i, f)| {
            f.filter(|f| f.is_finite() && f.fract() == 0.0)
                .map(|f| f as i64)
                .ok_or_else(|| TableError::Wide {
                    path: path.display().to_string(),
                    reason: format!("row {}: the {c} column needs a whole frame number", i + 2),
                })
        })
        .collect()
}

/// The rows' times, s: the time column's, else the frames over the frame rate `fps`.
fn wide_times(
    df: &DataFrame,
    path: &Path,
    names: &[String],
    frames: &[i64],
    fps: Option<f64>,
) -> Result<Vec<f64>, TableError> {
    let bad = |reason: String| TableError::Wide {
        path: path.display().to_string(),
        reason,
    };
    let time_col = names.iter().find(|c| {
        ["t", "time", "time_s", "t_s", "time (s)"].contains(&c.trim().to_lowercase().as_str())
    });
    match (time_col, fps) {
        (Some(c), _) => opt_f64(df, path, c)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.filter(|v| v.is_finite())
                    .ok_or_else(|| bad(format!("row {}: the {c} column needs a time in s", i + 2)))
            })
            .collect(),
        (None, Some(fps)) if fps > 0.0 && fps.is_finite() => {
            Ok(frames.iter().map(|&f| f as f64 / fps).collect())
        }
        (None, Some(fps)) => Err(bad(format!(
            "tracks_fps = {fps}: give the frame rate in frames/s, a positive number"
        ))),
        (None, None) => Err(bad(
            "no time column (t or time, s): give the frame rate as [inputs] tracks_fps".into(),
        )),
    }
}

/// Marker trajectories on a common frame grid, for export: names, frame rate, first frame, and
/// per frame per marker the bench-frame position (m) or None in a gap.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectories {
    /// Marker names.
    pub markers: Vec<String>,
    /// Frames per second.
    pub rate: f64,
    /// Number of the first frame (1-based, as TRC and C3D count).
    pub first_frame: usize,
    /// `positions[frame][marker]`: (x, y) in m, bench frame.
    pub positions: Vec<Vec<Option<(f64, f64)>>>,
}

impl Trajectories {
    /// From a tracks table: the frame grid from the first to the last frame, the rate from the
    /// median time step.
    pub fn from_tracks(tracks: &Tracks) -> Result<Trajectories, TableError> {
        let series = tracks
            .series()
            .map_err(|e| TableError::Tracks(Box::new(e)))?;
        let markers: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
        let s0 = &series[0];
        let mut steps: Vec<f64> =
            s0.t.windows(2)
                .map(|w| w[1] - w[0])
                .filter(|d| *d > 0.0)
                .collect();
        steps.sort_by(f64::total_cmp);
        let dt = steps.get(steps.len() / 2).copied().ok_or_else(|| {
            TableError::Export("the tracks have fewer than two frames: nothing to export".into())
        })?;
        let positions = (0..s0.t.len())
            .map(|k| {
                series
                    .iter()
                    .map(|s| s.present[k].then(|| (s.x[k], s.y[k])))
                    .collect()
            })
            .collect();
        Ok(Trajectories {
            markers,
            rate: 1.0 / dt,
            first_frame: s0.frame[0].max(0) as usize + 1,
            positions,
        })
    }
}

impl Trajectories {
    /// From a markers table (`t, marker, x, y, ...`, as `process` and `smooth` write it): the
    /// markers' fitted or smoothed positions, on the table's time grid.
    pub fn from_markers_table(path: &Path) -> Result<Trajectories, TableError> {
        let df = read_frame(path)?;
        let (t, names, x, y) = (
            opt_f64(&df, path, "t")?,
            crate::strings(&df, path, "marker")?,
            opt_f64(&df, path, "x")?,
            opt_f64(&df, path, "y")?,
        );
        let mut markers: Vec<String> = Vec::new();
        let mut times: Vec<f64> = Vec::new();
        for i in 0..names.len() {
            if let Some(n) = &names[i] {
                if !markers.contains(n) {
                    markers.push(n.clone());
                }
            }
            if let Some(ti) = t[i] {
                if times.last().is_none_or(|l| ti > *l) {
                    times.push(ti);
                }
            }
        }
        let mut steps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        steps.sort_by(f64::total_cmp);
        let dt = steps.get(steps.len() / 2).copied().ok_or_else(|| {
            TableError::Export(format!(
                "{}: fewer than two samples: nothing to export",
                path.display()
            ))
        })?;
        let mut positions = vec![vec![None; markers.len()]; times.len()];
        for i in 0..names.len() {
            let (Some(n), Some(ti)) = (&names[i], t[i]) else {
                continue;
            };
            let (Ok(k), Some(j)) = (
                times.binary_search_by(|v| v.total_cmp(&ti)),
                markers.iter().position(|m| m == n),
            ) else {
                continue;
            };
            positions[k][j] = x[i].zip(y[i]);
        }
        Ok(Trajectories {
            markers,
            rate: 1.0 / dt,
            first_frame: 1,
            positions,
        })
    }
}

/// Write a TRC file (tab-separated text: OpenSim's and Motion Analysis' marker format), in mm,
/// bench frame x to the right, y up, z = 0 (the bench plane); a gap is an empty cell.
pub fn write_trc(tr: &Trajectories, path: &Path) -> Result<PathBuf, TableError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = tr.positions.len();
    let mut s = String::new();
    s.push_str(&format!("PathFileType\t4\t(X/Y/Z)\t{name}\n"));
    s.push_str("DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames\n");
    s.push_str(&format!(
        "{:.6}\t{:.6}\t{n}\t{}\tmm\t{:.6}\t{}\t{n}\n",
        tr.rate,
        tr.rate,
        tr.markers.len(),
        tr.rate,
        tr.first_frame
    ));
    s.push_str("Frame#\tTime");
    for m in &tr.markers {
        s.push_str(&format!("\t{m}\t\t"));
    }
    s.push_str("\n\t");
    for k in 1..=tr.markers.len() {
        s.push_str(&format!("\tX{k}\tY{k}\tZ{k}"));
    }
    s.push_str("\n\n");
    for (i, frame) in tr.positions.iter().enumerate() {
        s.push_str(&format!(
            "{}\t{:.6}",
            tr.first_frame + i,
            i as f64 / tr.rate
        ));
        for p in frame {
            match p {
                Some((x, y)) => s.push_str(&format!("\t{:.4}\t{:.4}\t0.0000", x * 1e3, y * 1e3)),
                None => s.push_str("\t\t\t"),
            }
        }
        s.push('\n');
    }
    flexbench_contracts::atomic::write_bytes(path, s.as_bytes())
        .map_err(|e| TableError::io(path, "be written", e))?;
    Ok(path.to_path_buf())
}

/// One C3D parameter: name, data type (-1 char, 2 int16, 4 float), dimensions, data bytes.
struct C3dParam {
    name: &'static str,
    kind: i8,
    dims: Vec<u8>,
    data: Vec<u8>,
}

fn c3d_chars(values: &[String], width: usize) -> C3dParam {
    let mut data = Vec::new();
    for v in values {
        let mut b: Vec<u8> = v.bytes().take(width).collect();
        b.resize(width, b' ');
        data.extend(b);
    }
    C3dParam {
        name: "",
        kind: -1,
        dims: if values.len() == 1 {
            vec![width as u8]
        } else {
            vec![width as u8, values.len() as u8]
        },
        data,
    }
}

/// Write a C3D file (Intel byte order, float data, points only): the markers in mm in the bench
/// frame, z = 0; a gap is an invalid point (residual word -1), as every C3D reader expects.
///
/// Written here rather than with c3dio: its writer builds the residual word's sign from the
/// camera-mask byte, which it caps at 7 bits, so it cannot mark a point invalid in float files.
/// The file is checked by reading it back with c3dio (tests) and with Python's `c3d` package.
pub fn write_c3d(tr: &Trajectories, path: &Path) -> Result<PathBuf, TableError> {
    let (n, m) = (tr.positions.len(), tr.markers.len());
    if !fits_c3d(tr) {
        return Err(TableError::Export(format!("{}: {n} frames of {m} markers from frame {} cannot be written as C3D (at most 65535 frames, 255 markers)", path.display(), tr.first_frame)));
    }
    let blocks = c3d_parameters(tr, 0).len() / 512;
    let data_start = (2 + blocks) as u16;
    let mut bytes = c3d_header(tr, data_start);
    bytes.extend(c3d_parameters(tr, data_start));
    bytes.extend(c3d_points(tr));
    flexbench_contracts::atomic::write_bytes(path, &bytes)
        .map_err(|e| TableError::io(path, "be written", e))?;
    Ok(path.to_path_buf())
}

/// True when the trajectories fit a C3D header: at least one frame and one marker, the last
/// frame's number at most 65535 (a 16-bit word: 4.5 min at 240 frames/s), at most 255 markers.
pub fn fits_c3d(tr: &Trajectories) -> bool {
    let (n, m) = (tr.positions.len(), tr.markers.len());
    let last = tr.first_frame + n.saturating_sub(1);
    n > 0 && m > 0 && last <= u16::MAX as usize && m <= 255
}

/// A little-endian 32-bit float's bytes.
fn f32b(v: f32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// A little-endian 16-bit integer's bytes.
fn i16b(v: i16) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// A scalar parameter: integer (kind 2) or float (kind 4).
fn c3d_scalar(name: &'static str, kind: i8, data: Vec<u8>) -> C3dParam {
    C3dParam {
        name,
        kind,
        dims: vec![],
        data,
    }
}

/// The C3D header block: the point count, the frames' range, float data (scale -1), where the
/// data start (512-byte block), no analog samples, the frame rate.
fn c3d_header(tr: &Trajectories, data_start: u16) -> Vec<u8> {
    let m = tr.markers.len();
    let last = tr.first_frame + tr.positions.len().saturating_sub(1);
    let mut header = vec![0u8; 512];
    header[0] = 2;
    header[1] = 0x50;
    let mut put = |word: usize, b: Vec<u8>| {
        header[2 * (word - 1)..2 * (word - 1) + b.len()].copy_from_slice(&b)
    };
    put(2, i16b(m as i16));
    put(3, i16b(0));
    put(4, (tr.first_frame as u16).to_le_bytes().to_vec());
    put(5, (last as u16).to_le_bytes().to_vec());
    put(6, i16b(0));
    put(7, f32b(-1.0));
    put(9, data_start.to_le_bytes().to_vec());
    put(10, i16b(0));
    put(11, f32b(tr.rate as f32));
    header
}

/// The parameter section, in two groups, POINT (1) and ANALOG (2), padded to 512-byte blocks;
/// `data_start` is the data's first block (0 to measure the section first).
fn c3d_parameters(tr: &Trajectories, data_start: u16) -> Vec<u8> {
    let (n, m) = (tr.positions.len(), tr.markers.len());
    let width = tr
        .markers
        .iter()
        .map(|s| s.len())
        .max()
        .unwrap_or(4)
        .clamp(4, 32);
    let point: Vec<C3dParam> = vec![
        c3d_scalar("USED", 2, i16b(m as i16)),
        c3d_scalar("FRAMES", 2, i16b(n.min(i16::MAX as usize) as i16)),
        c3d_scalar("SCALE", 4, f32b(-1.0)),
        c3d_scalar("RATE", 4, f32b(tr.rate as f32)),
        c3d_scalar("DATA_START", 2, i16b(data_start as i16)),
        C3dParam {
            name: "UNITS",
            ..c3d_chars(&["mm".into()], 2)
        },
        C3dParam {
            name: "LABELS",
            ..c3d_chars(&tr.markers, width)
        },
        C3dParam {
            name: "DESCRIPTIONS",
            ..c3d_chars(
                &tr.markers
                    .iter()
                    .map(|k| format!("{k}, bench frame"))
                    .collect::<Vec<_>>(),
                width.max(20),
            )
        },
    ];
    // No analog channels: ANALOG:RATE 0, consistent with the header's 0 samples per frame.
    let analog: Vec<C3dParam> = vec![
        c3d_scalar("USED", 2, i16b(0)),
        c3d_scalar("RATE", 4, f32b(0.0)),
    ];
    let mut records: Vec<Vec<u8>> = Vec::new();
    for (id, gname, desc, params) in [
        (1i8, "POINT", "3-D point parameters", point),
        (2, "ANALOG", "analog parameters", analog),
    ] {
        let mut g = vec![gname.len() as u8, (-id) as u8];
        g.extend(gname.bytes());
        g.extend(i16b(3 + desc.len() as i16));
        g.push(desc.len() as u8);
        g.extend(desc.bytes());
        records.push(g);
        records.extend(params.iter().map(|p| c3d_record(p, id)));
    }
    // The last record's offset is 0: the end of the parameters.
    if let Some(r) = records.last_mut() {
        let at = 2 + r[0] as usize;
        r[at] = 0;
        r[at + 1] = 0;
    }
    let mut bytes = vec![1u8, 0x50, 0, 84];
    for r in records {
        bytes.extend(r);
    }
    let blocks = bytes.len().div_ceil(512);
    bytes[2] = blocks as u8;
    bytes.resize(blocks * 512, 0);
    bytes
}

/// One parameter's record in group `id`: name, offset to the next record, kind, dimensions,
/// data, and an empty description.
fn c3d_record(p: &C3dParam, id: i8) -> Vec<u8> {
    let mut r = vec![p.name.len() as u8, id as u8];
    r.extend(p.name.bytes());
    let body_len = 1 + 1 + p.dims.len() + p.data.len() + 1;
    r.extend(i16b(2 + body_len as i16));
    r.push(p.kind as u8);
    r.push(p.dims.len() as u8);
    r.extend(&p.dims);
    r.extend(&p.data);
    r.push(0); // no description
    r
}

/// The points' data: per frame and marker x, y, z (mm) and the residual word (0, or -1 for a
/// gap), as floats, padded to 512-byte blocks.
fn c3d_points(tr: &Trajectories) -> Vec<u8> {
    let mut data = Vec::with_capacity(tr.positions.len() * tr.markers.len() * 16);
    for frame in &tr.positions {
        for p in frame {
            let words = match p {
                Some((x, y)) => [(x * 1e3) as f32, (y * 1e3) as f32, 0.0, 0.0],
                None => [0.0, 0.0, 0.0, -1.0],
            };
            for w in words {
                data.extend(f32b(w));
            }
        }
    }
    data.resize(data.len().div_ceil(512) * 512, 0);
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trajectories {
        let positions = (0..50)
            .map(|k| {
                let t = k as f64 / 240.0;
                vec![
                    Some((0.1 + 0.01 * t, -0.02 * t)),
                    if (10..14).contains(&k) {
                        None
                    } else {
                        Some((0.3, 0.05 + t))
                    },
                ]
            })
            .collect();
        Trajectories {
            markers: vec!["M1".into(), "M2".into()],
            rate: 240.0,
            first_frame: 1,
            positions,
        }
    }

    /// The C3D file read back by an independent reader (c3dio): labels, rate, frames, every
    /// coordinate to f32 precision in mm, and the gap as invalid points.
    #[test]
    fn c3d_reads_back_with_c3dio() {
        let dir = tempfile::tempdir().unwrap();
        let tr = sample();
        let p = write_c3d(&tr, &dir.path().join("t.c3d")).unwrap();
        let c = c3dio::C3d::load_path(p).unwrap();
        assert_eq!(
            c.points
                .labels
                .iter()
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>(),
            tr.markers
        );
        assert_eq!(c.points.frame_rate, 240.0);
        assert_eq!(c.points.size(), (50, 2));
        for (k, frame) in tr.positions.iter().enumerate() {
            for (j, p) in frame.iter().enumerate() {
                let q = &c.points[(k, j)];
                match p {
                    Some((x, y)) => {
                        assert!(q.residual >= 0.0, "frame {k} marker {j} valid");
                        assert!(
                            (q.point[0] as f64 - x * 1e3).abs() < 1e-4
                                && (q.point[1] as f64 - y * 1e3).abs() < 1e-4,
                            "frame {k} marker {j}: {:?}",
                            q.point
                        );
                    }
                    None => assert!(
                        q.residual < 0.0,
                        "frame {k} marker {j}: a gap is an invalid point"
                    ),
                }
            }
        }
    }

    /// C3D's header limits: the last frame number 65535 fits, 65536 does not (writing it is
    /// refused by name, not wrapped); 255 markers fit, 256 do not.
    #[test]
    fn c3d_limits_are_checked() {
        let mut tr = sample();
        tr.first_frame = 65535 - 49;
        assert!(fits_c3d(&tr));
        tr.first_frame += 1;
        assert!(!fits_c3d(&tr));
        let dir = tempfile::tempdir().unwrap();
        let e = write_c3d(&tr, &dir.path().join("t.c3d")).unwrap_err();
        assert!(e.to_string().contains("at most 65535 frames"), "{e}");
        tr.first_frame = 1;
        tr.markers = (0..256).map(|i| format!("M{i}")).collect();
        assert!(!fits_c3d(&tr));
        tr.markers.truncate(255);
        assert!(fits_c3d(&tr));
    }

    /// TRC: the header's counts and units, a gap as empty cells, positions in mm.
    #[test]
    fn trc_has_counts_units_and_empty_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_trc(&sample(), &dir.path().join("t.trc")).unwrap();
        let text = std::fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[2].split('\t').collect::<Vec<_>>()[..5],
            ["240.000000", "240.000000", "50", "2", "mm"]
        );
        assert!(lines[3].starts_with("Frame#\tTime\tM1\t\t\tM2"));
        let row = |k: usize| {
            lines[6 + k]
                .split('\t')
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(row(11)[5..8], ["", "", ""]);
        assert_eq!(row(0)[2], "100.0000");
        assert_eq!(row(0)[6], "50.0000");
    }

    /// A wide CSV as DLTdv writes it (pt1_cam1_X ...), in mm with NaN gaps and no time column.
    #[test]
    fn wide_csv_in_mm_with_nan_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dlt.csv");
        std::fs::write(&p, "pt1_cam1_X,pt1_cam1_Y,pt2_cam1_X,pt2_cam1_Y\n100,5,300,50\nNaN,NaN,301,51\n102,7,302,52\n").unwrap();
        let spec = |fps: Option<f64>, markers: Option<Vec<String>>| WideSpec {
            unit: LengthUnit::Mm,
            fps,
            markers,
        };
        let names = vec!["M1".to_string(), "M2".to_string()];
        let t = read_wide(&p, &spec(Some(100.0), Some(names)), Pixels::Uncalibrated).unwrap();
        let s = t.series().unwrap();
        assert_eq!(s[0].name, "M1");
        assert_eq!(s[0].present, vec![true, false, true]);
        assert!((s[1].x[1] - 0.301).abs() < 1e-12 && (s[0].t[2] - 0.02).abs() < 1e-12);
        // Without a frame rate or a time column: refused by name.
        let e = read_wide(&p, &spec(None, None), Pixels::Uncalibrated)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tracks_fps"), "{e}");
        let e = "furlong".parse::<LengthUnit>().unwrap_err().to_string();
        assert!(e.contains("furlong") && e.contains("mm"), "{e}");
    }
}
