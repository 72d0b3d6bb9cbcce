//! How the markers are smoothed and differentiated for the fit: Savitzky-Golay, the zero-lag
//! Butterworth filter or the smoothing spline.

use super::*;

/// How `process` smooths and differentiates the markers (and the fit's drivers): Savitzky-Golay
/// with its window, the zero-lag Butterworth filter, or the smoothing spline.
pub(super) enum MarkerFilter {
    /// The filter, its window (samples) and the settings it was made of.
    SavGol(SavGol, usize, SavGolSettings),
    Butterworth(Butterworth),
    Spline(GcvSpline),
}

impl MarkerFilter {
    /// The filter `cfg`'s method asks for on the times `t` (the smoother's fit starts from
    /// the Savitzky-Golay derivatives).
    pub(super) fn of(cfg: &ProcessConfig, t: &[f64]) -> Result<MarkerFilter, PipelineError> {
        let savgol = match cfg.method {
            ProcessMethod::Butterworth(b) => return Ok(MarkerFilter::Butterworth(b)),
            ProcessMethod::Spline(g) => return Ok(MarkerFilter::Spline(g)),
            ProcessMethod::Smoother(s) => s.start,
            ProcessMethod::SavGol(s) => s,
        };
        let window = savgol
            .window
            .unwrap_or_else(|| default_window(t, savgol.order));
        let sg = SavGol::new(window, savgol.order)?.with_mode(savgol.edges);
        Ok(MarkerFilter::SavGol(sg, window, savgol))
    }

    /// The filter as the fit's differentiator.
    pub(super) fn as_diff(&self) -> &(dyn Differentiator + Sync) {
        match self {
            MarkerFilter::SavGol(sg, ..) => sg,
            MarkerFilter::Butterworth(b) => b,
            MarkerFilter::Spline(g) => g,
        }
    }

    /// Each marker's x and y differentiated, and the Butterworth filter's or the spline's
    /// choice per coordinate (none for Savitzky-Golay).
    pub(super) fn differentiate(
        &self,
        series: &[MarkerSeries],
    ) -> Result<Differentiated, PipelineError> {
        let mut diffs = Vec::with_capacity(series.len());
        let mut choices = Vec::new();
        for s in series {
            let mut one = |axis: &str, v: &[f64]| -> Result<Derivatives, PipelineError> {
                let name = format!("{}.{axis}", s.name);
                Ok(match self {
                    MarkerFilter::SavGol(sg, ..) => sg.differentiate(&name, &s.t, v, &s.present)?,
                    MarkerFilter::Butterworth(b) => {
                        let (d, c) = b.filter(&name, &s.t, v, &s.present)?;
                        choices.push(CoordinateChoice::butterworth(name, c));
                        d
                    }
                    MarkerFilter::Spline(g) => {
                        let (d, c) = g.filter(&name, &s.t, v, &s.present)?;
                        choices.push(CoordinateChoice::spline(name, c));
                        d
                    }
                })
            };
            let dx = one("x", &s.x)?;
            let dy = one("y", &s.y)?;
            diffs.push((dx, dy));
        }
        Ok((diffs, choices))
    }
}

/// The markers' derivatives (x, y per marker) and the Butterworth filter's or the spline's
/// choices.
pub(super) type Differentiated = (Vec<(Derivatives, Derivatives)>, Vec<CoordinateChoice>);
