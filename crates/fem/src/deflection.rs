//! The forced response against the measured deflection: the process stage's fit residuals
//! along the lever (fitted minus measured, turned to the lever's normal) and the model's
//! deflection at the markers, each less its best-fit line over the markers at every instant (the
//! rigid fit of the measurement absorbs any line), and how well they agree.

use flexbench_contracts::motion::{MarkerResiduals, ResidualRow};
use nalgebra::Vector2;

use crate::response::Response;
use crate::{FemError, LeverInstant, Mesh};

/// The model's and the measured deflection across the lever at the markers, each with its own
/// best-fit line over the markers removed at every sample (the rigid fit of the measurement
/// absorbs any line), and how well they agree.
pub struct Comparison {
    /// Per sample, per marker: the model's detrended v, m (None where the measurement has no
    /// value at that sample).
    pub model: Vec<Vec<Option<f64>>>,
    /// Per sample, per marker: the measured detrended v, m.
    pub measured: Vec<Vec<Option<f64>>>,
    /// Samples with a measured value.
    pub samples: usize,
    /// RMS of the model's detrended deflection, m.
    pub rms_model: f64,
    /// RMS of the measured detrended deflection, m.
    pub rms_measured: f64,
    /// RMS of their difference, m.
    pub rms_difference: f64,
    /// Their correlation coefficient (uncentred).
    pub correlation: f64,
}

/// Values less their least-squares line a + b x (None where absent; all None with fewer than
/// three values).
pub fn detrend(x: &[f64], v: &[Option<f64>]) -> Vec<Option<f64>> {
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

/// Compare the forced response `r` at the markers (name and abscissa from B, m) with the
/// measured deflection: the fit's residuals (fitted minus measured, bench frame) turned to the
/// lever's normal at each instant.
pub fn compare_measured(
    residuals: &MarkerResiduals,
    mesh: &Mesh,
    r: &Response,
    instants: &[LeverInstant],
    markers: &[(String, f64)],
) -> Result<Comparison, FemError> {
    // Each marker's rows, in time order (the checked table's): a sample found by bisection.
    let mut by_marker: std::collections::HashMap<&str, Vec<&ResidualRow>> = Default::default();
    for r in residuals.rows() {
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
            let names: Vec<&str> = markers.iter().map(|m| m.0.as_str()).collect();
            return Err(FemError::Measured(format!("no residual of the lever's markers ({}) at t = {} s: give the fit_residuals table of `process` on the same run", names.join(", "), inst.t)));
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
        return Err(FemError::Measured(
            "fewer than three of the lever's markers at every sample: nothing to compare".into(),
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A line is taken out whole, gaps kept; what is not a line stays, less its own line;
    /// fewer than three values give nothing.
    #[test]
    fn detrend_takes_out_the_best_line() {
        let x = [0.0, 0.1, 0.2, 0.3, 0.4];
        let line: Vec<Option<f64>> = x.iter().map(|x| Some(2e-3 - 0.01 * x)).collect();
        for v in detrend(&x, &line).into_iter().flatten() {
            assert!(v.abs() < 1e-15, "{v}");
        }
        let mut bump = line.clone();
        bump[2] = bump[2].map(|v| v + 1e-4);
        bump[4] = None;
        let d = detrend(&x, &bump);
        assert_eq!(d[4], None);
        // The bump of 1e-4 at x = 0.2 among x = 0, 0.1, 0.2, 0.3: the least-squares line
        // through the bump alone is 2.5e-5 + 1e-3 (x - 0.15), 3e-5 at x = 0.2.
        assert!((d[2].unwrap() - 0.7e-4).abs() < 1e-15, "{:?}", d);
        let sum: f64 = d.iter().flatten().sum();
        assert!(sum.abs() < 1e-15, "{sum}");
        assert_eq!(detrend(&x[..2], &line[..2]), vec![None, None]);
    }
}
