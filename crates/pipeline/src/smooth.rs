//! The `smooth` job: the signal stage alone, from any tracks table to the markers' kinematics,
//! and, when asked, the lever's rigid-motion field and its residual (the elastic part).

use std::path::{Path, PathBuf};

use flexbench_contracts::{Column, Table};
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

/// How `smooth` differentiates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SmoothMethod {
    /// The Kalman/RTS smoother with its periodic part, every parameter from the data unless
    /// set, with per-sample standard deviations (the default).
    Rts(RtsSmoother),
    /// Savitzky-Golay with this window (samples, odd) and order.
    SavGol {
        /// Window, samples.
        window: usize,
        /// Polynomial order.
        order: usize,
    },
    /// The zero-lag Butterworth filter, its cutoff given or chosen per coordinate, derivatives
    /// by central differences.
    Butterworth(Butterworth),
    /// Woltring's natural smoothing spline, its smoothing by GCV (or the noise given) per
    /// coordinate.
    Spline(GcvSpline),
}

impl SmoothMethod {
    /// The method and its parameters in words, as the smooth stage's record states them.
    pub fn describe(&self) -> String {
        match self {
            SmoothMethod::Rts(r) => r.describe(),
            SmoothMethod::SavGol { window, order } => {
                format!("Savitzky-Golay, window {window}, order {order}")
            }
            SmoothMethod::Butterworth(b) => b.describe(),
            SmoothMethod::Spline(g) => g.describe(),
        }
    }
}

/// The smooth stage's method by name: `rts` (the Kalman/RTS smoother), `savgol` or
/// `butterworth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmoothKind {
    /// The Kalman/RTS smoother with its periodic part.
    Rts,
    /// Savitzky-Golay.
    Savgol,
    /// The zero-lag Butterworth filter.
    Butterworth,
    /// Woltring's GCV smoothing spline.
    Spline,
}

const SMOOTH_KINDS: [(&str, SmoothKind); 4] = [
    ("rts", SmoothKind::Rts),
    ("savgol", SmoothKind::Savgol),
    ("butterworth", SmoothKind::Butterworth),
    ("spline", SmoothKind::Spline),
];

/// How the Butterworth filter's cutoff is chosen when none is given, by name: `residual`
/// (Winter's residual analysis, the default) or `durbin-watson`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutoffCriterion {
    /// Winter's residual analysis.
    Residual,
    /// The residuals' Durbin-Watson statistic equal to 2.
    DurbinWatson,
}

const CUTOFF_CRITERIA: [(&str, CutoffCriterion); 2] = [
    ("residual", CutoffCriterion::Residual),
    ("durbin-watson", CutoffCriterion::DurbinWatson),
];

impl std::str::FromStr for CutoffCriterion {
    type Err = flexbench_contracts::names::UnknownName;

    fn from_str(name: &str) -> Result<CutoffCriterion, Self::Err> {
        flexbench_contracts::names::by_name(name, "a cutoff criterion", &CUTOFF_CRITERIA)
    }
}

impl std::fmt::Display for CutoffCriterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = CUTOFF_CRITERIA
            .iter()
            .find(|(_, k)| k == self)
            .map_or("", |(n, _)| n);
        f.write_str(name)
    }
}

impl std::str::FromStr for SmoothKind {
    type Err = flexbench_contracts::names::UnknownName;

    fn from_str(name: &str) -> Result<SmoothKind, Self::Err> {
        flexbench_contracts::names::by_name(name, "a smoothing method", &SMOOTH_KINDS)
    }
}

impl std::fmt::Display for SmoothKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = SMOOTH_KINDS
            .iter()
            .find(|(_, k)| k == self)
            .map_or("", |(n, _)| n);
        f.write_str(name)
    }
}

/// The signal stage's settings as a pipeline file's `[smooth]` table gives them (every key
/// optional; the command line overrides the file, the file the defaults):
///
/// ```toml
/// [smooth]
/// method = "rts"          # or "savgol"
/// unit = "m"              # of x and y in the tracks: m, mm, cm, in
/// window = 21             # savgol: samples (odd)
/// order = 5               # savgol: polynomial order
/// noise_m = 1e-4          # rts: measurement noise (else by maximum likelihood)
/// snap_density = 300.0    # rts: white-snap density, m/s^3.5 (else by maximum likelihood)
/// frequency_hz = 2.33     # rts: the periodic part's fundamental (else found in the data)
/// harmonics = 20          # rts: most harmonics of the periodic part (0: none)
/// filter_order = 2        # butterworth: order of each pass (2: the fourth-order zero-lag filter)
/// cutoff_hz = 8.0         # butterworth: the cutoff (else chosen per coordinate by cutoff_by)
/// cutoff_by = "residual"  # butterworth: "residual" (Winter) or "durbin-watson"
/// noise_band_hz = [30.0, 60.0]  # butterworth, residual: the noise line's band (else fs/8 to fs/4)
/// spline_degree = 5       # spline: odd degree (5: quintic); smoothing by GCV, or for noise_m
/// rigid_field = true      # also fit the markers as one rigid body (the lever)
/// ```
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmoothSettings {
    /// rts or savgol.
    #[serde(
        default,
        deserialize_with = "flexbench_contracts::names::de_opt_name",
        serialize_with = "flexbench_contracts::names::ser_opt_name"
    )]
    pub method: Option<SmoothKind>,
    /// Unit of x and y in the tracks: m, mm, cm or in.
    #[serde(
        default,
        deserialize_with = "flexbench_contracts::names::de_opt_name",
        serialize_with = "flexbench_contracts::names::ser_opt_name"
    )]
    pub unit: Option<LengthUnit>,
    /// Savitzky-Golay window, samples.
    pub window: Option<usize>,
    /// Savitzky-Golay order.
    pub order: Option<usize>,
    /// Measurement noise, m.
    pub noise_m: Option<f64>,
    /// White-snap density, m/s^3.5.
    pub snap_density: Option<f64>,
    /// Fundamental frequency of the periodic part, Hz.
    pub frequency_hz: Option<f64>,
    /// Most harmonics of the periodic part (0: none).
    pub harmonics: Option<usize>,
    /// Butterworth: order of each pass.
    pub filter_order: Option<usize>,
    /// Butterworth: the cutoff, Hz.
    pub cutoff_hz: Option<f64>,
    /// Butterworth: how the cutoff is chosen when not given.
    #[serde(
        default,
        deserialize_with = "flexbench_contracts::names::de_opt_name",
        serialize_with = "flexbench_contracts::names::ser_opt_name"
    )]
    pub cutoff_by: Option<CutoffCriterion>,
    /// Butterworth with the residual analysis: the band of the noise line, Hz.
    pub noise_band_hz: Option<[f64; 2]>,
    /// Smoothing spline: its odd degree (default 5).
    pub spline_degree: Option<usize>,
    /// Fit the rigid field of the markers.
    pub rigid_field: Option<bool>,
}

impl SmoothSettings {
    /// The `[smooth]` table of a pipeline file (other tables are other stages'; a file without
    /// it gives the defaults). Unknown keys and wrong types are refused by name.
    pub fn from_pipeline_file(path: &Path) -> Result<SmoothSettings, PipelineError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PipelineError::Input(format!("{}: {e}", path.display())))?;
        let value: toml::Table = toml::from_str(&text).map_err(|e| {
            PipelineError::Input(format!("{}: not a TOML file: {e}", path.display()))
        })?;
        match value.get("smooth") {
            None => Ok(SmoothSettings::default()),
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e| PipelineError::Input(format!("{}: [smooth]: {e}. The keys are method, unit, window, order, noise_m, snap_density, frequency_hz, harmonics, filter_order, cutoff_hz, cutoff_by, noise_band_hz, spline_degree, rigid_field", path.display()))),
        }
    }

    /// These settings with every value set in `over` taking precedence.
    pub fn overridden_by(&self, over: &SmoothSettings) -> SmoothSettings {
        SmoothSettings {
            method: over.method.or(self.method),
            unit: over.unit.or(self.unit),
            window: over.window.or(self.window),
            order: over.order.or(self.order),
            noise_m: over.noise_m.or(self.noise_m),
            snap_density: over.snap_density.or(self.snap_density),
            frequency_hz: over.frequency_hz.or(self.frequency_hz),
            harmonics: over.harmonics.or(self.harmonics),
            filter_order: over.filter_order.or(self.filter_order),
            cutoff_hz: over.cutoff_hz.or(self.cutoff_hz),
            cutoff_by: over.cutoff_by.or(self.cutoff_by),
            noise_band_hz: over.noise_band_hz.or(self.noise_band_hz),
            spline_degree: over.spline_degree.or(self.spline_degree),
            rigid_field: over.rigid_field.or(self.rigid_field),
        }
    }

    /// The unit factor (m per unit of the tracks) and the method, checked.
    pub fn resolve(&self) -> Result<(f64, SmoothMethod), PipelineError> {
        let unit = self.unit.unwrap_or(LengthUnit::M).metres().ok_or_else(|| {
            PipelineError::Input(
                "unit px: smoothing works on bench coordinates; give m, mm, cm or in (a table in pixels is imported by a run with a calibration)".into(),
            )
        })?;
        let positive = |v: Option<f64>, what: &str| -> Result<Option<f64>, PipelineError> {
            match v {
                Some(x) if !(x.is_finite() && x > 0.0) => Err(PipelineError::Input(format!(
                    "{what} {x} must be a positive number"
                ))),
                _ => Ok(v),
            }
        };
        let method = match self.method.unwrap_or(SmoothKind::Rts) {
            SmoothKind::Rts => SmoothMethod::Rts(RtsSmoother {
                noise: positive(self.noise_m, "noise_m")?,
                density: positive(self.snap_density, "snap_density")?,
                frequency: positive(self.frequency_hz, "frequency_hz")?,
                harmonics: self.harmonics,
            }),
            SmoothKind::Savgol => SmoothMethod::SavGol {
                window: self.window.unwrap_or(21),
                order: self.order.unwrap_or(5),
            },
            SmoothKind::Butterworth => SmoothMethod::Butterworth(self.butterworth()?),
            SmoothKind::Spline => SmoothMethod::Spline(smoothing_spline(
                self.spline_degree,
                positive(self.noise_m, "noise_m")?,
            )?),
        };
        Ok((unit, method))
    }

    /// The Butterworth filter these settings give ([`butterworth_filter`]).
    fn butterworth(&self) -> Result<Butterworth, PipelineError> {
        butterworth_filter(
            self.filter_order,
            self.cutoff_hz,
            self.cutoff_by,
            self.noise_band_hz,
        )
    }
}

/// The smoothing spline of a settings table's keys: `spline_degree` (odd, default 5), its
/// smoothing by GCV, or for the noise `noise_m` (m) when given.
pub fn smoothing_spline(
    degree: Option<usize>,
    noise_m: Option<f64>,
) -> Result<GcvSpline, PipelineError> {
    let degree = degree.unwrap_or(5);
    if degree.is_multiple_of(2) {
        return Err(PipelineError::Input(format!(
            "spline_degree = {degree}: a smoothing spline's degree is odd (5: the quintic spline, 3: the cubic)"
        )));
    }
    let smoothing = noise_m.map_or(Smoothing::Gcv, Smoothing::KnownNoise);
    Ok(GcvSpline::new(degree.div_ceil(2), smoothing)?)
}

/// The Butterworth filter of a settings table's keys: `filter_order` (default 2), `cutoff_hz`,
/// or else `cutoff_by` (default Winter's residual analysis, its noise line in `noise_band_hz`);
/// an error for a cutoff given with a criterion, or a value out of range.
pub fn butterworth_filter(
    order: Option<usize>,
    cutoff_hz: Option<f64>,
    cutoff_by: Option<CutoffCriterion>,
    noise_band_hz: Option<[f64; 2]>,
) -> Result<Butterworth, PipelineError> {
    let cutoff = match (cutoff_hz, cutoff_by) {
        (Some(_), Some(by)) => {
            return Err(PipelineError::Input(format!(
            "cutoff_hz and cutoff_by = \"{by}\" both given: give the cutoff, or how to choose it"
        )))
        }
        (Some(f), None) => Cutoff::Fixed(f),
        (None, Some(CutoffCriterion::DurbinWatson)) => Cutoff::DurbinWatson,
        (None, _) => Cutoff::Residual(noise_band_hz.map(|[lo, hi]| (lo, hi))),
    };
    Ok(Butterworth::new(order.unwrap_or(2), cutoff)?)
}

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

/// Smooth and differentiate every marker of the tracks at `tracks_path`, whose x and y are in
/// metres times `unit` (1 for metres, 1e-3 for millimetres...), into the markers table
/// (`t, marker, x, y, vx, vy, ax, ay`, in SI, with `*_sigma` columns for the RTS smoother and
/// each sample's provenance) at `out` (CSV or Parquet, the other beside it, and
/// `<stem>.summary.json` with the method's parameters per coordinate). Nothing is written on an
/// error.
pub fn smooth(
    tracks_path: &Path,
    unit: f64,
    method: SmoothMethod,
    rigid: Option<RigidRequest>,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
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
    let table = markers_table(&names, &t, &diffs);
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
    Ok(files)
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

/// A named point of a body's frame: marker name and coordinates (m).
pub type NamedPoint = (String, Vector2<f64>);

/// What the rigid-field fit needs: the markers' layout in the body frame (None: the mean shape
/// from the data, about its centroid), and the reference point's name for the tables.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidRequest {
    /// Per marker name, its coordinates in the body frame (m), and the reference point there.
    pub layout: Option<(Vec<NamedPoint>, Vector2<f64>)>,
    /// Name of the reference point (B for the lever; "centroid" from the data).
    pub reference: String,
}

impl RigidRequest {
    /// The layout of the markers on the body that carries them in a mechanism (the lever on the
    /// bench), the reference point that body's frame origin (B). Errors when the markers are
    /// on several bodies.
    pub fn from_mechanism(
        m: &flexbench_mechanism::model::Mechanism,
    ) -> Result<RigidRequest, PipelineError> {
        let Some(first) = m.markers.first() else {
            return Err(PipelineError::Input(
                "the mechanism declares no marker".into(),
            ));
        };
        if m.markers.iter().any(|k| k.body != first.body) {
            return Err(PipelineError::Input("the mechanism's markers lie on several bodies: the rigid field fits the markers of one body".into()));
        }
        let body = &m.bodies[first.body];
        let origin = body.name.clone();
        Ok(RigidRequest {
            layout: Some((
                m.markers
                    .iter()
                    .map(|k| (k.name.clone(), k.local_frame))
                    .collect(),
                Vector2::zeros(),
            )),
            reference: format!("{origin} frame origin"),
        })
    }

    /// The rigid-field fit `smooth` is asked for: with `rigid_field` set or a mechanism given;
    /// the mechanism's layout of its markers (reference: the frame origin of their body), else
    /// the layout learnt from the data about the markers' centroid. None: no rigid field.
    pub fn requested(
        rigid_field: bool,
        mechanism: Option<&flexbench_mechanism::model::Mechanism>,
    ) -> Result<Option<RigidRequest>, PipelineError> {
        match (rigid_field, mechanism) {
            (_, Some(m)) => Ok(Some(RigidRequest::from_mechanism(m)?)),
            (true, None) => Ok(Some(RigidRequest {
                layout: None,
                reference: "markers' centroid".into(),
            })),
            (false, None) => Ok(None),
        }
    }
}

/// The rigid-field tables: per sample the reference point's kinematics and the rotation with
/// standard deviations and chi^2 per degree of freedom; per sample and marker the residual
/// acceleration (the elastic part). And a summary: RMS residual along the body's normal against
/// the markers' own sigma.
fn rigid_tables(
    req: &RigidRequest,
    names: &[String],
    t: &[f64],
    diffs: &[(Derivatives, Derivatives)],
) -> Result<(Table, Table, RigidSummary), PipelineError> {
    let samples = marker_samples(diffs, t.len());
    let layout = rigid_layout(req, names, &samples)?;
    let fits: Vec<_> = samples.iter().map(|s| layout.fit(s)).collect();
    let field = rigid_field_table(t, &fits);
    let (residual, rms_residual, rms_sigma) = rigid_residual_table(t, names, &fits);
    let chi: Vec<f64> = fits
        .iter()
        .filter_map(|f| f.as_ref().map(|f| f.chi2_dof))
        .filter(|v| v.is_finite())
        .collect();
    let summary = RigidSummary {
        reference: req.reference.clone(),
        layout_m: layout.markers.iter().map(|p| [p.x, p.y]).collect(),
        fitted_samples: fits.iter().filter(|f| f.is_some()).count(),
        rms_normal_residual_m_s2: rms_residual,
        rms_normal_sigma_m_s2: rms_sigma,
        mean_chi2_dof: (!chi.is_empty()).then(|| chi.iter().sum::<f64>() / chi.len() as f64),
    };
    Ok((field, residual, summary))
}

/// Per sample, each marker's position, velocity and acceleration (bench frame, SI) with the
/// velocity's and acceleration's sigmas when the smoother gave them; None where one is missing.
fn marker_samples(
    diffs: &[(Derivatives, Derivatives)],
    n: usize,
) -> Vec<Vec<Option<MarkerKinematics>>> {
    (0..n)
        .map(|k| {
            diffs
                .iter()
                .map(|(dx, dy)| {
                    let ok = [
                        dx.value[k],
                        dy.value[k],
                        dx.rate[k],
                        dy.rate[k],
                        dx.accel[k],
                        dy.accel[k],
                    ]
                    .iter()
                    .all(|v| v.is_finite());
                    ok.then(|| MarkerKinematics {
                        p: Vector2::new(dx.value[k], dy.value[k]),
                        v: Vector2::new(dx.rate[k], dy.rate[k]),
                        a: Vector2::new(dx.accel[k], dy.accel[k]),
                        sigma: (dx.sigma.len() == n && dy.sigma.len() == n).then(|| {
                            [
                                dx.sigma[k][1],
                                dy.sigma[k][1],
                                dx.sigma[k][2],
                                dy.sigma[k][2],
                            ]
                        }),
                    })
                })
                .collect()
        })
        .collect()
}

/// The markers' layout on the body: the mechanism's (every tracked marker declared there), or
/// the mean shape of the samples where every marker is seen.
fn rigid_layout(
    req: &RigidRequest,
    names: &[String],
    samples: &[Vec<Option<MarkerKinematics>>],
) -> Result<Layout, PipelineError> {
    Ok(match &req.layout {
        Some((named, reference)) => {
            let markers = names
                .iter()
                .map(|nm| {
                    named.iter().find(|(k, _)| k == nm).map(|(_, p)| *p).ok_or_else(|| {
                        PipelineError::Input(format!("marker '{nm}' of the tracks is not declared in the mechanism; the rigid field needs every marker's place on the body"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Layout { markers, reference: *reference }
        }
        None => Layout::from_samples(samples)
            .ok_or_else(|| PipelineError::Input("the rigid field needs at least one sample where every marker is seen, to learn their layout; give the mechanism file (--mechanism)".into()))?,
    })
}

/// The rigid field per sample: the reference point's position, velocity and acceleration, the
/// body's angle, rate and angular acceleration, their sigmas and the fit's chi2 per degree of
/// freedom (SI, bench frame).
fn rigid_field_table(t: &[f64], fits: &[Option<flexbench_signal::rigid::RigidField>]) -> Table {
    let opt = |f: &dyn Fn(&flexbench_signal::rigid::RigidField) -> f64| {
        Column::OptF64(
            fits.iter()
                .map(|r| r.as_ref().map(f).filter(|v| v.is_finite()))
                .collect(),
        )
    };
    let mut field = Table::new("rigid_field");
    let cols: Vec<(&str, Column)> = vec![
        ("t", Column::F64(t.to_vec())),
        ("x", opt(&|r| r.p.x)),
        ("y", opt(&|r| r.p.y)),
        ("phi", opt(&|r| r.phi)),
        ("vx", opt(&|r| r.v.x)),
        ("vy", opt(&|r| r.v.y)),
        ("omega", opt(&|r| r.omega)),
        ("ax", opt(&|r| r.a.x)),
        ("ay", opt(&|r| r.a.y)),
        ("epsilon", opt(&|r| r.epsilon)),
        ("vx_sigma", opt(&|r| r.v_sigma[0])),
        ("vy_sigma", opt(&|r| r.v_sigma[1])),
        ("omega_sigma", opt(&|r| r.v_sigma[2])),
        ("ax_sigma", opt(&|r| r.a_sigma[0])),
        ("ay_sigma", opt(&|r| r.a_sigma[1])),
        ("epsilon_sigma", opt(&|r| r.a_sigma[2])),
        ("chi2_dof", opt(&|r| r.chi2_dof)),
    ];
    for (name, c) in cols {
        let _ = field.push(name, c);
    }
    field
}

/// Each marker's acceleration residual from the rigid field per sample (m/s^2), its normal
/// part and that part's sigma; with the RMS normal residual and RMS sigma over the samples that
/// have a sigma.
fn rigid_residual_table(
    t: &[f64],
    names: &[String],
    fits: &[Option<flexbench_signal::rigid::RigidField>],
) -> (Table, Option<f64>, Option<f64>) {
    let (mut tt, mut mk, mut ex, mut ey, mut en, mut es) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let (mut sum_e2, mut sum_s2, mut count) = (0.0, 0.0, 0usize);
    for (k, f) in fits.iter().enumerate() {
        for (i, nm) in names.iter().enumerate() {
            tt.push(t[k]);
            mk.push(nm.clone());
            let r = f
                .as_ref()
                .and_then(|f| f.residual.get(i).copied().flatten());
            ex.push(r.map(|r| r.0.x));
            ey.push(r.map(|r| r.0.y));
            en.push(r.map(|r| r.1));
            es.push(r.and_then(|r| r.2));
            if let Some((_, e, Some(sd))) = r {
                sum_e2 += e * e;
                sum_s2 += sd * sd;
                count += 1;
            }
        }
    }
    let mut residual = Table::new("rigid_residual");
    for (name, c) in [
        ("t", Column::F64(tt)),
        ("marker", Column::Str(mk)),
        ("ax", Column::OptF64(ex)),
        ("ay", Column::OptF64(ey)),
        ("a_normal", Column::OptF64(en)),
        ("a_normal_sigma", Column::OptF64(es)),
    ] {
        let _ = residual.push(name, c);
    }
    let rms = |s: f64| (count > 0).then(|| (s / count as f64).sqrt());
    (residual, rms(sum_e2), rms(sum_s2))
}
