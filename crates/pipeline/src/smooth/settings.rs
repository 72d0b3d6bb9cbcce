//! The signal stage's settings: its methods, the `[smooth]` table, the Butterworth filter and the
//! smoothing spline as the settings ask them.

use super::*;

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

pub(super) const SMOOTH_KINDS: [(&str, SmoothKind); 4] = [
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

pub(super) const CUTOFF_CRITERIA: [(&str, CutoffCriterion); 2] = [
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
            .map_err(|e| PipelineError::read(path, "a pipeline file", e))?;
        let value: toml::Table = toml::from_str(&text).map_err(|source| PipelineError::Toml {
            what: path.display().to_string(),
            source,
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
    pub(super) fn butterworth(&self) -> Result<Butterworth, PipelineError> {
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
