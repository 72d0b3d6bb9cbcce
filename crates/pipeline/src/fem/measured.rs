//! The measured deflection (the process stage's fit residuals along the lever) against the forced
//! response.

use super::*;

/// The model's and the measured deflection across the lever at the markers, each with its own
/// best-fit line over the markers removed at every sample (the rigid fit of the measurement
/// absorbs any line), and how well they agree.
pub(super) struct Comparison {
    /// Per sample, per marker: the model's detrended v, m (None where the measurement has no
    /// value at that sample).
    pub(super) model: Vec<Vec<Option<f64>>>,
    /// Per sample, per marker: the measured detrended v, m.
    pub(super) measured: Vec<Vec<Option<f64>>>,
    pub(super) samples: usize,
    pub(super) rms_model: f64,
    pub(super) rms_measured: f64,
    pub(super) rms_difference: f64,
    pub(super) correlation: f64,
}

/// Values less their least-squares line a + b x (None where absent; all None with fewer than
/// three values).
pub(super) fn detrend(x: &[f64], v: &[Option<f64>]) -> Vec<Option<f64>> {
    let pts: Vec<(f64, f64)> = x
        .iter()
        .zip(v)
        .filter_map(|(x, v)| v.map(|v| (*x, v)))
        .collect();
    if pts.len() < 3 {
        return vec![None; v.len()];
    }
    let n = pts.len() as f64;
    let (mx, mv) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let b = pts.iter().map(|p| (p.0 - mx) * (p.1 - mv)).sum::<f64>() / sxx;
    x.iter()
        .zip(v)
        .map(|(x, v)| v.map(|v| v - mv - b * (x - mx)))
        .collect()
}

impl MeasuredDeflection {
    /// The record of a comparison with the measured table at `file`.
    pub(super) fn of(c: &Comparison, file: Option<&Path>) -> MeasuredDeflection {
        MeasuredDeflection {
            file: file.map(|p| p.display().to_string()),
            samples_compared: c.samples,
            rms_model_detrended_m: c.rms_model,
            rms_measured_detrended_m: c.rms_measured,
            rms_difference_m: c.rms_difference,
            correlation: c.correlation,
        }
    }
}

/// Compare the forced response at the markers with the measured deflection: the `fit_residuals`
/// table (fitted minus measured, bench frame) turned to the lever's normal at each sample.
pub(super) fn compare_measured(
    path: &Path,
    mesh: &Mesh,
    r: &flexbench_fem::response::Response,
    instants: &[LeverInstant],
    markers: &[(String, f64)],
) -> Result<Comparison, PipelineError> {
    let table = flexbench_tables::read_fit_residuals(path)?;
    // Each marker's rows, in time order (the checked table's): a sample found by bisection.
    let mut by_marker: std::collections::HashMap<&str, Vec<&ResidualRow>> = Default::default();
    for r in table.rows() {
        by_marker.entry(r.marker.as_str()).or_default().push(r);
    }
    let xs: Vec<f64> = markers.iter().map(|m| m.1).collect();
    let (mut model, mut measured) = (Vec::new(), Vec::new());
    let (mut s_mod, mut s_mea, mut s_dif, mut s_mm, mut count, mut samples) =
        (0.0, 0.0, 0.0, 0.0, 0usize, 0usize);
    for (k, inst) in instants.iter().enumerate() {
        let normal = Vector2::new(-inst.phi.sin(), inst.phi.cos());
        let meas: Vec<Option<f64>> = markers
            .iter()
            .map(|(name, _)| {
                let rows = by_marker.get(name.as_str())?;
                let tol = 1e-9 * inst.t.abs().max(1.0);
                let r = rows.get(rows.partition_point(|r| r.t < inst.t - tol))?;
                if (r.t - inst.t).abs() > tol {
                    return None;
                }
                Some(-Vector2::new(r.rx?, r.ry?).dot(&normal))
            })
            .collect();
        if k == 0 && meas.iter().all(|m| m.is_none()) {
            return Err(PipelineError::Input(format!("{}: no residual of the lever's markers ({}) at t = {} s: give the fit_residuals table of `process` on the same run", path.display(), markers.iter().map(|m| m.0.as_str()).collect::<Vec<_>>().join(", "), inst.t)));
        }
        let fe: Vec<Option<f64>> = xs
            .iter()
            .zip(&meas)
            .map(|(x, m)| m.map(|_| mesh.displacement_at(&r.d[k], *x).1))
            .collect();
        let (dm, df_) = (detrend(&xs, &meas), detrend(&xs, &fe));
        if dm.iter().any(|v| v.is_some()) {
            samples += 1;
        }
        for (a, b) in df_.iter().zip(&dm) {
            if let (Some(a), Some(b)) = (a, b) {
                s_mod += a * a;
                s_mea += b * b;
                s_dif += (a - b) * (a - b);
                s_mm += a * b;
                count += 1;
            }
        }
        model.push(df_);
        measured.push(dm);
    }
    if count == 0 {
        return Err(PipelineError::Input(format!(
            "{}: fewer than three of the lever's markers at every sample: nothing to compare",
            path.display()
        )));
    }
    let c = count as f64;
    Ok(Comparison {
        model,
        measured,
        samples,
        rms_model: (s_mod / c).sqrt(),
        rms_measured: (s_mea / c).sqrt(),
        rms_difference: (s_dif / c).sqrt(),
        correlation: s_mm / (s_mod * s_mea).sqrt().max(1e-300),
    })
}
