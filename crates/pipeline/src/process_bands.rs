//! The forces' bands of the process stage, share by share: the tracks' noise (the smoother's
//! covariance, scaled when the bands are calibrated: `crate::band_calibration`), the mechanism
//! file's tolerances and the bench frame's uncertainty (`flexbench_kinematics::frame_share`,
//! from the calibration file), combined as independent sources; their shares for the record
//! and the bands in words.

use std::path::Path;

use flexbench_kinematics::ForceSeries;
use serde::{Deserialize, Serialize};

use crate::PipelineError;

/// One force's band, share by share: the RMS over the samples of each standard deviation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandShare {
    /// The forces column.
    pub force: String,
    /// From the tracks' noise (the smoother's covariance), N or N m; None without it.
    pub tracks: Option<f64>,
    /// From the mechanism file's tolerances, N or N m; None without them.
    pub parameters: Option<f64>,
    /// From the bench frame's uncertainty (the calibration's), N or N m; None without it.
    #[serde(default)]
    pub calibration: Option<f64>,
    /// All together, N or N m.
    pub combined: f64,
}

/// The forces' standard deviations of every source combined (sqrt of the sum of squares, the
/// sources independent), per sample: the tracks' noise, the file's tolerances, the frame's
/// uncertainty, those there are; None without any.
pub(crate) fn combined_sigmas(forces: &ForceSeries) -> Option<Vec<Option<Vec<f64>>>> {
    let sources: Vec<&Vec<Option<Vec<f64>>>> = [
        &forces.sigmas,
        &forces.parameter_sigmas,
        &forces.frame_sigmas,
    ]
    .into_iter()
    .flatten()
    .collect();
    let first = sources.first()?;
    Some(
        (0..first.len())
            .map(|k| {
                let mut at = sources.iter().filter_map(|s| s[k].as_ref());
                let mut sum: Vec<f64> = at.next()?.iter().map(|x| x * x).collect();
                for row in at {
                    sum.iter_mut().zip(row).for_each(|(a, x)| *a += x * x);
                }
                Some(sum.into_iter().map(f64::sqrt).collect())
            })
            .collect(),
    )
}

/// Each force's band shares (RMS over the samples), when the file's tolerances or the frame's
/// uncertainty move the forces (the tracks' alone need no shares).
pub(crate) fn band_shares(columns: &[String], forces: &ForceSeries) -> Vec<BandShare> {
    let rms = |s: &Vec<Option<Vec<f64>>>, j: usize| {
        let v: Vec<f64> = s.iter().flatten().map(|r| r[j] * r[j]).collect();
        (v.iter().sum::<f64>() / v.len().max(1) as f64).sqrt()
    };
    if forces.parameter_sigmas.is_none() && forces.frame_sigmas.is_none() {
        return Vec::new();
    }
    let Some(all) = combined_sigmas(forces) else {
        return Vec::new();
    };
    columns
        .iter()
        .enumerate()
        .map(|(j, c)| BandShare {
            force: c.clone(),
            tracks: forces.sigmas.as_ref().map(|s| rms(s, j)),
            parameters: forces.parameter_sigmas.as_ref().map(|s| rms(s, j)),
            calibration: forces.frame_sigmas.as_ref().map(|s| rms(s, j)),
            combined: rms(&all, j),
        })
        .collect()
}

/// The tracks' share of each force's band multiplied by its calibrated scale.
pub(crate) fn scale_tracks_share(
    forces: &mut ForceSeries,
    scale: &crate::band_calibration::TracksScale,
) {
    let Some(sigmas) = forces.sigmas.as_mut() else {
        return;
    };
    for row in sigmas.iter_mut().flatten() {
        for (v, s) in row.iter_mut().zip(&scale.scales) {
            if s.scale.is_finite() {
                *v *= s.scale;
            }
        }
    }
}

/// The bench frame's covariance in the calibration file `path` (None when the calibration has
/// none: a calibration made before it was measured, or without a bench plane).
pub fn frame_covariance(
    path: &Path,
) -> Result<Option<flexbench_contracts::frame::FrameCovariance>, PipelineError> {
    let cal = flexbench_vision::Calibration::read(path).map_err(PipelineError::Vision)?;
    Ok(cal.plane_uncertainty.and_then(|u| u.covariance))
}

/// Where the forces' bands come from, in words.
pub(crate) fn bands_in_words(
    forces: &ForceSeries,
    before_periodic: bool,
    scale: Option<&crate::band_calibration::TracksScale>,
) -> String {
    let scaled = scale.map(|s| {
        format!(
            "2 sigma of the Kalman smoother per sample, carried at the periodic fit's states, each force's scaled by a bootstrap of {} replicates of the recording (tracks_scale)",
            s.replicates
        )
    });
    let tracks = match (forces.sigmas.is_some(), before_periodic) {
        (true, _) if scaled.is_some() => scaled.as_deref(),
        (true, true) => Some("2 sigma of the Kalman smoother per sample, carried at the periodic fit's states (conservative: the periodic fit pools every turn)"),
        (true, false) => Some("2 sigma of the Kalman smoother"),
        (false, _) => None,
    };
    let parts: Vec<&str> = [
        tracks,
        forces.parameter_sigmas.as_ref().map(|_| {
            "2 sigma of the mechanism file's tolerances (independent, first order)"
        }),
        forces.frame_sigmas.as_ref().map(|_| {
            "2 sigma of the bench frame's uncertainty (the calibration's, by finite differences through the estimate)"
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    match parts.len() {
        0 => "none".into(),
        _ => parts.join(", combined with "),
    }
}
