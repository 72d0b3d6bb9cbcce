//! The `smooth` job: the signal stage alone, from any tracks table to the markers' kinematics,
//! and, when asked, the lever's rigid-motion field and its residual (the elastic part).

use std::path::{Path, PathBuf};

use flexbench_contracts::{Column, ContractError, Table};
use flexbench_signal::butterworth::{Butterworth, ButterworthChoice, Cutoff};
use flexbench_signal::rigid::{Layout, MarkerKinematics};
use flexbench_signal::spline::{GcvSpline, Smoothing, SplineChoice};
use flexbench_signal::{Derivatives, Differentiator, RtsSmoother, SavGol};
pub use flexbench_tables::interchange::LengthUnit;
use flexbench_tables::read_tracks;
use nalgebra::Vector2;
use serde::{Deserialize, Serialize};

use crate::process::{markers_table, CoordinateChoice};
use crate::StageRecord;
use crate::{ensure_dir, PipelineError};

mod settings;
pub use settings::*;
mod rigid;
pub use rigid::*;

/// The smooth stage's record (`<stem>.summary.json`): the method, its parameters per coordinate
/// and the samples' provenance. Written and read back by this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmoothRecord {
    /// The tracks table read.
    pub tracks: String,
    /// Metres per unit of the tracks' coordinates.
    pub unit_m: f64,
    /// The method in words.
    pub method: String,
    /// The periodic part's fundamental found over all markers, Hz.
    pub fundamental_hz: Option<f64>,
    /// Per coordinate (`M1.x`, ...), what the smoother or the Butterworth filter chose (empty
    /// for Savitzky-Golay).
    pub parameters: Vec<CoordinateParameters>,
    /// The markers fitted as one rigid body, when asked.
    pub rigid_field: Option<RigidSummary>,
    /// Samples by provenance.
    pub samples: SampleCounts,
}

/// What the automatic smoother, the Butterworth filter or the smoothing spline chose for one
/// coordinate (None where it did not run or does not apply; `noise_m` is the residual
/// analysis's noise estimate for the filter, RSS / (n - tr A) for the spline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoordinateParameters {
    /// The coordinate, `<marker>.<axis>`.
    pub coordinate: String,
    /// Measurement noise, m.
    pub noise_m: Option<f64>,
    /// White-snap density, m/s^3.5.
    pub snap_density: Option<f64>,
    /// Log-likelihood at the choice.
    pub log_likelihood: Option<f64>,
    /// The periodic part's fundamental, Hz.
    pub periodic_frequency_hz: Option<f64>,
    /// Harmonics of the periodic part.
    pub harmonics: Option<usize>,
    /// The periodic prior's lambda, beta and effective degrees of freedom.
    pub periodic_prior_lambda_beta_edf: Option<[f64; 3]>,
    /// Butterworth: the zero-lag cutoff (-3 dB after both passes), Hz.
    #[serde(default)]
    pub cutoff_hz: Option<f64>,
    /// Butterworth: each pass's cutoff after Winter's correction, Hz.
    #[serde(default)]
    pub pass_cutoff_hz: Option<f64>,
    /// Butterworth: samples of odd reflection padded at each end of the longest run.
    #[serde(default)]
    pub padding_samples: Option<usize>,
    /// Butterworth: the residuals' Durbin-Watson statistic at the cutoff.
    #[serde(default)]
    pub durbin_watson: Option<f64>,
    /// Smoothing spline: the smoothing parameter p, m^2 s^(2m - 1).
    #[serde(default)]
    pub spline_p: Option<f64>,
    /// Smoothing spline: its effective degrees of freedom (tr A).
    #[serde(default)]
    pub spline_dof: Option<f64>,
    /// Butterworth on an uneven clock: the largest departure of a sample's time from the even
    /// grid it was filtered on, as a share of the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resampled_departure: Option<f64>,
    /// Butterworth on an uneven clock: the interpolation's error on the filtered positions, RMS,
    /// in the tracks' unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resampled_interpolation: Option<f64>,
}

impl CoordinateParameters {
    /// A coordinate's record with nothing chosen.
    fn named(coordinate: String) -> CoordinateParameters {
        CoordinateParameters {
            coordinate,
            noise_m: None,
            snap_density: None,
            log_likelihood: None,
            periodic_frequency_hz: None,
            harmonics: None,
            periodic_prior_lambda_beta_edf: None,
            cutoff_hz: None,
            pass_cutoff_hz: None,
            padding_samples: None,
            durbin_watson: None,
            spline_p: None,
            spline_dof: None,
            resampled_departure: None,
            resampled_interpolation: None,
        }
    }

    /// The filter's or the spline's choice as the process stage records it, in this record.
    fn from_choice(c: CoordinateChoice) -> CoordinateParameters {
        CoordinateParameters {
            noise_m: c.noise_m,
            cutoff_hz: c.cutoff_hz,
            durbin_watson: c.durbin_watson,
            spline_p: c.spline_p,
            spline_dof: c.spline_dof,
            resampled_departure: c.resampled_departure,
            resampled_interpolation: c.resampled_interpolation_m,
            ..CoordinateParameters::named(c.coordinate)
        }
    }

    /// What the smoothing spline chose (its noise estimate as `noise_m`).
    fn spline(coordinate: String, c: Option<SplineChoice>) -> CoordinateParameters {
        CoordinateParameters::from_choice(CoordinateChoice::spline(coordinate, c))
    }

    /// What the Butterworth filter chose (the residual analysis's noise as `noise_m`), with
    /// the single pass's cutoff and the padding.
    fn butterworth(coordinate: String, c: Option<ButterworthChoice>) -> CoordinateParameters {
        CoordinateParameters {
            pass_cutoff_hz: c.map(|c| c.pass_cutoff_hz),
            padding_samples: c.map(|c| c.padding),
            ..CoordinateParameters::from_choice(CoordinateChoice::butterworth(coordinate, c))
        }
    }
}

/// The rigid field's fit of the markers as one body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RigidSummary {
    /// The reference point's name.
    pub reference: String,
    /// The markers' layout in the body's frame, m.
    pub layout_m: Vec<[f64; 2]>,
    /// Samples where the field was fitted.
    pub fitted_samples: usize,
    /// RMS residual acceleration along the body's normal, m/s^2.
    pub rms_normal_residual_m_s2: Option<f64>,
    /// RMS of its standard deviation, m/s^2.
    pub rms_normal_sigma_m_s2: Option<f64>,
    /// Mean chi-square per degree of freedom of the acceleration fits.
    pub mean_chi2_dof: Option<f64>,
}

/// Samples by provenance (counted on the x coordinates).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleCounts {
    /// Measured samples.
    pub measured: usize,
    /// Samples at an edge (a window that does not fit inside the data).
    pub edge: usize,
    /// Rejected samples.
    pub rejected: usize,
}

impl SampleCounts {
    /// The samples of the markers' x coordinates by provenance.
    fn of(diffs: &[(Derivatives, Derivatives)]) -> SampleCounts {
        let counts = |p: flexbench_signal::Provenance| {
            diffs
                .iter()
                .map(|(dx, _)| dx.provenance.iter().filter(|q| **q == p).count())
                .sum::<usize>()
        };
        SampleCounts {
            measured: counts(flexbench_signal::Provenance::Measured),
            edge: counts(flexbench_signal::Provenance::Edge),
            rejected: counts(flexbench_signal::Provenance::Rejected),
        }
    }
}

impl crate::StageRecord for SmoothRecord {
    const STAGE: &'static str = "smooth";
}

/// The markers table's path for an `out` given to the smooth stage: `out` itself when it names
/// a table (`.csv` or `.parquet`), else `out/markers.parquet`, a folder as every other stage's
/// `out` and as the run's smooth stage writes it.
pub fn markers_path(out: &Path) -> PathBuf {
    match out.extension().and_then(|e| e.to_str()) {
        Some("csv" | "parquet") => out.to_path_buf(),
        _ => out.join(crate::folders::SMOOTHED_MARKERS),
    }
}

/// Smooth and differentiate every marker of the tracks at `tracks_path`, whose x and y are in
/// metres times `unit` (1 for metres, 1e-3 for millimetres...), into the markers table
/// (`t, marker, x, y, vx, vy, ax, ay`, in SI, with `*_sigma` columns for the RTS smoother and
/// each sample's provenance) at `out` ([`markers_path`]: a table's path, CSV or Parquet, or a
/// folder that gets `markers.parquet`), the other format beside it, and `<stem>.summary.json`
/// with the method's parameters per coordinate: the record and the files written. Nothing is
/// written on an error.
pub fn smooth(
    tracks_path: &Path,
    unit: f64,
    method: SmoothMethod,
    rigid: Option<RigidRequest>,
    out: &Path,
) -> Result<(SmoothRecord, Vec<PathBuf>), PipelineError> {
    if !(unit.is_finite() && unit > 0.0) {
        return Err(PipelineError::Input(format!(
            "unit factor {unit} must be a positive number of metres"
        )));
    }
    // The table let go once its series are made; the scaled coordinates once differentiated;
    // the derivatives once tabled; the table as it is written (a long recording's copies are
    // not held side by side).
    let series = read_tracks(tracks_path)?.series()?;
    let Some(first) = series.first() else {
        return Err(PipelineError::Input(format!(
            "{} holds no marker",
            tracks_path.display()
        )));
    };
    let t = first.t.clone();
    let scaled: Vec<(Vec<f64>, Vec<f64>)> = series
        .iter()
        .map(|s| {
            (
                s.x.iter().map(|v| v * unit).collect(),
                s.y.iter().map(|v| v * unit).collect(),
            )
        })
        .collect();
    let f0 = common_fundamental(method, &series, &scaled, &t);
    let mut diffs: Vec<(Derivatives, Derivatives)> = Vec::with_capacity(series.len());
    let mut params = Vec::new();
    for (s, (x, y)) in series.iter().zip(&scaled) {
        diffs.push(differentiate_marker(s, x, y, method, f0, &mut params)?);
    }
    drop(scaled);
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    drop(series);
    let table = markers_table(&names, &t, &diffs)?;
    let out = markers_path(out);
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "markers".into());
    // The rigid field, computed before anything is written.
    let rigid_out = match &rigid {
        None => None,
        Some(req) => Some(rigid_tables(req, &names, &t, &diffs)?),
    };
    let samples = SampleCounts::of(&diffs);
    drop(diffs);
    ensure_dir(dir)?;
    let mut files: Vec<PathBuf> = flexbench_tables::write_owned_table(table, dir, &stem)?.to_vec();
    let mut rigid_summary = None;
    if let Some((field, residual, summary)) = rigid_out {
        for (table, suffix) in [(&field, "rigid"), (&residual, "rigid_residual")] {
            let stem = format!("{stem}.{suffix}");
            files.extend(flexbench_tables::write_table(table, dir, &stem)?);
        }
        rigid_summary = Some(summary);
    }
    let record = SmoothRecord {
        tracks: tracks_path.display().to_string(),
        unit_m: unit,
        method: method.describe(),
        fundamental_hz: f0,
        parameters: params,
        rigid_field: rigid_summary,
        samples,
    };
    files.push(record.write(&dir.join(format!("{stem}.summary.json")))?);
    Ok((record, files))
}

/// The motion's fundamental frequency (Hz) for the RTS smoother's periodic part: the one given,
/// or found over every marker's coordinates at once (the markers of one mechanism share it;
/// each coordinate then decides on its periodic part); None without a periodic part, for
/// Savitzky-Golay, or when the markers' times differ.
fn common_fundamental(
    method: SmoothMethod,
    series: &[flexbench_contracts::MarkerSeries],
    scaled: &[(Vec<f64>, Vec<f64>)],
    t: &[f64],
) -> Option<f64> {
    match method {
        SmoothMethod::Rts(r) if r.frequency.is_some() => r.frequency,
        SmoothMethod::Rts(r) if r.harmonics != Some(0) && series.iter().all(|s| s.t == t) => {
            let coords: Vec<(&[f64], &[bool])> = series
                .iter()
                .zip(scaled)
                .flat_map(|(s, (x, y))| {
                    [
                        (x.as_slice(), s.present.as_slice()),
                        (y.as_slice(), s.present.as_slice()),
                    ]
                })
                .collect();
            flexbench_signal::rts::fundamental(t, &coords)
        }
        _ => None,
    }
}

/// One marker's x and y (m) smoothed and differentiated by `method`, the RTS smoother's chosen
/// parameters appended to `params`; an error when no run of the marker is long enough.
fn differentiate_marker(
    s: &flexbench_contracts::MarkerSeries,
    x: &[f64],
    y: &[f64],
    method: SmoothMethod,
    f0: Option<f64>,
    params: &mut Vec<CoordinateParameters>,
) -> Result<(Derivatives, Derivatives), PipelineError> {
    let mut coordinate = |axis: &str, v: &[f64]| -> Result<Derivatives, PipelineError> {
        let name = format!("{}.{axis}", s.name);
        Ok(match method {
            SmoothMethod::Rts(r) => {
                let (d, chosen) = r.with_frequency(f0).smooth(&name, &s.t, v, &s.present)?;
                params.push(CoordinateParameters {
                    noise_m: chosen.map(|c| c.noise),
                    snap_density: chosen.map(|c| c.density),
                    log_likelihood: chosen.map(|c| c.log_likelihood),
                    periodic_frequency_hz: chosen.and_then(|c| c.frequency),
                    harmonics: chosen.map(|c| c.harmonics),
                    periodic_prior_lambda_beta_edf: chosen
                        .and_then(|c| c.prior)
                        .map(|p| [p.0, p.1, p.2]),
                    ..CoordinateParameters::named(name.clone())
                });
                d
            }
            SmoothMethod::SavGol { window, order } => {
                SavGol::new(window, order)?.differentiate(&name, &s.t, v, &s.present)?
            }
            SmoothMethod::Butterworth(b) => {
                let (d, chosen) = b.filter(&name, &s.t, v, &s.present)?;
                params.push(CoordinateParameters::butterworth(name.clone(), chosen));
                d
            }
            SmoothMethod::Spline(g) => {
                let (d, chosen) = g.filter(&name, &s.t, v, &s.present)?;
                params.push(CoordinateParameters::spline(name.clone(), chosen));
                d
            }
        })
    };
    let dx = coordinate("x", x)?;
    let dy = coordinate("y", y)?;
    if dx
        .provenance
        .iter()
        .all(|p| *p == flexbench_signal::Provenance::Rejected)
    {
        let seen = s.present.iter().filter(|p| **p).count();
        let need = match method {
            SmoothMethod::Rts(_) => flexbench_signal::rts::MIN_SEGMENT,
            SmoothMethod::SavGol { window, .. } => window,
            SmoothMethod::Butterworth(b) => b.shortest_run(),
            SmoothMethod::Spline(g) => g.shortest_run(),
        };
        return Err(PipelineError::Input(format!(
            "marker {}: no run of at least {need} consecutive samples to smooth ({seen} seen in all, {} in the recording): the recording or its runs between gaps are too short for the method{}",
            s.name,
            s.t.len(),
            if matches!(method, SmoothMethod::SavGol { .. }) { "; try a shorter --window or --method rts" } else { "" }
        )));
    }
    Ok((dx, dy))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mechanism(name: &str) -> flexbench_mechanism::Mechanism {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mechanisms");
        flexbench_mechanism::file::load(&root.join(name))
            .expect("a shipped mechanism")
            .mechanism
    }

    /// The rigid field, one rule for the command line, Python and a run: the bench's lever
    /// (its markers on one body) with or without asking; the four-bar (markers on the coupler
    /// and the rocker) none unless asked, and refused when asked; no mechanism: the data's
    /// layout when asked.
    #[test]
    fn the_rigid_field_is_asked_or_given_by_the_mechanism() {
        let bench = mechanism("wind-pump.toml");
        for asked in [false, true] {
            let r = RigidRequest::requested(asked, Some(&bench)).unwrap();
            assert_eq!(
                r.map(|r| r.reference),
                Some("lever frame origin".to_string())
            );
        }
        let four_bar = mechanism("four-bar.toml");
        assert_eq!(
            RigidRequest::requested(false, Some(&four_bar)).unwrap(),
            None
        );
        let e = RigidRequest::requested(true, Some(&four_bar)).unwrap_err();
        assert!(e.to_string().contains("several bodies"), "{e}");
        let data = RigidRequest::requested(true, None).unwrap().unwrap();
        assert!(data.layout.is_none());
        assert_eq!(RigidRequest::requested(false, None).unwrap(), None);
    }

    #[test]
    fn out_is_a_folder_unless_it_names_a_table() {
        let p = |s: &str| markers_path(Path::new(s));
        assert_eq!(p("out/smooth"), Path::new("out/smooth/markers.parquet"));
        assert_eq!(p("out/run.v2"), Path::new("out/run.v2/markers.parquet"));
        assert_eq!(p("out/sg.csv"), Path::new("out/sg.csv"));
        assert_eq!(p("out/m.parquet"), Path::new("out/m.parquet"));
    }
}
