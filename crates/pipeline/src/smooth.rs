//! The `smooth` job: the signal stage alone, from any tracks table to the markers' kinematics.

use std::path::{Path, PathBuf};

use flexbench_signal::{Derivatives, Differentiator, RtsSmoother, SavGol};
use flexbench_tables::read_tracks;
use serde_json::json;

use crate::process::markers_table;
use crate::{ensure_dir, write_json, PipelineError};

/// How `smooth` differentiates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SmoothMethod {
    /// The Kalman/RTS smoother, noise and density by maximum likelihood per coordinate, with
    /// per-sample standard deviations (the default).
    Rts,
    /// Savitzky-Golay with this window (samples, odd) and order.
    SavGol {
        /// Window, samples.
        window: usize,
        /// Polynomial order.
        order: usize,
    },
}

/// Smooth and differentiate every marker of the tracks at `tracks_path`, whose x and y are in
/// metres times `unit` (1 for metres, 1e-3 for millimetres...), into the markers table
/// (`t, marker, x, y, vx, vy, ax, ay`, in SI, with `*_sigma` columns for the RTS smoother and
/// each sample's provenance) at `out` (CSV or Parquet, the other beside it, and
/// `<stem>.summary.json` with the method's parameters per coordinate). Nothing is written on an
/// error.
pub fn smooth(tracks_path: &Path, unit: f64, method: SmoothMethod, out: &Path) -> Result<Vec<PathBuf>, PipelineError> {
    if !(unit.is_finite() && unit > 0.0) {
        return Err(PipelineError::Input(format!("unit factor {unit} must be a positive number of metres")));
    }
    let tracks = read_tracks(tracks_path)?;
    let series = tracks.series()?;
    let Some(first) = series.first() else {
        return Err(PipelineError::Input(format!("{} holds no marker", tracks_path.display())));
    };
    let t = first.t.clone();
    // The motion's fundamental frequency, over every marker's coordinates at once (the markers
    // of one mechanism share it); each coordinate then decides on its periodic part.
    let scaled: Vec<(Vec<f64>, Vec<f64>)> = series.iter().map(|s| (s.x.iter().map(|v| v * unit).collect(), s.y.iter().map(|v| v * unit).collect())).collect();
    let f0 = match method {
        SmoothMethod::Rts if series.iter().all(|s| s.t == t) => {
            let coords: Vec<(&[f64], &[bool])> = series.iter().zip(&scaled).flat_map(|(s, (x, y))| [(x.as_slice(), s.present.as_slice()), (y.as_slice(), s.present.as_slice())]).collect();
            flexbench_signal::rts::fundamental(&t, &coords)
        }
        _ => None,
    };
    let mut diffs: Vec<(Derivatives, Derivatives)> = Vec::with_capacity(series.len());
    let mut params = Vec::new();
    for (s, (x, y)) in series.iter().zip(&scaled) {
        let mut pair = Vec::with_capacity(2);
        for (axis, v) in [("x", x), ("y", y)] {
            let name = format!("{}.{axis}", s.name);
            let d = match method {
                SmoothMethod::Rts => {
                    let (d, chosen) = RtsSmoother::automatic().with_frequency(f0).smooth(&name, &s.t, v, &s.present)?;
                    params.push(json!({
                        "coordinate": name,
                        "noise_m": chosen.map(|c| c.noise),
                        "snap_density": chosen.map(|c| c.density),
                        "log_likelihood": chosen.map(|c| c.log_likelihood),
                        "periodic_frequency_hz": chosen.and_then(|c| c.frequency),
                        "harmonics": chosen.map(|c| c.harmonics),
                    }));
                    d
                }
                SmoothMethod::SavGol { window, order } => SavGol::new(window, order)?.differentiate(&name, &s.t, v, &s.present)?,
            };
            pair.push(d);
        }
        let dy = pair.pop().ok_or_else(|| PipelineError::Input("internal: no y".into()))?;
        let dx = pair.pop().ok_or_else(|| PipelineError::Input("internal: no x".into()))?;
        diffs.push((dx, dy));
    }
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let table = markers_table(&names, &t, &diffs);
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "markers".into());
    ensure_dir(dir)?;
    let mut files: Vec<PathBuf> = flexbench_tables::write_table(&table, dir, &stem)?.to_vec();
    let counts = |p: flexbench_signal::Provenance| diffs.iter().map(|(dx, _)| dx.provenance.iter().filter(|q| **q == p).count()).sum::<usize>();
    let summary = json!({
        "tracks": tracks_path.display().to_string(),
        "unit_m": unit,
        "method": match method { SmoothMethod::Rts => RtsSmoother::automatic().describe(), SmoothMethod::SavGol { window, order } => format!("Savitzky-Golay, window {window}, order {order}") },
        "fundamental_hz": f0,
        "parameters": params,
        "samples": { "measured": counts(flexbench_signal::Provenance::Measured), "edge": counts(flexbench_signal::Provenance::Edge), "rejected": counts(flexbench_signal::Provenance::Rejected) },
    });
    files.push(write_json(&dir.join(format!("{stem}.summary.json")), &summary)?);
    Ok(files)
}
