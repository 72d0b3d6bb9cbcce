//! The calibration's share of the identification's standard deviations: what the bench
//! frame's uncertainty does to the estimates. The process stage, given the calibration's frame
//! covariance, estimates the motion again with the markers moved by a tenth of each of its
//! principal directions e_k (`flexbench_kinematics::frame_share`, the recording's model kept)
//! and writes those bodies' motions beside its own (`frame_bodies_<k>`). Each estimate's change
//! with the motion moved (`flexbench_identify::change_with_motion`: the weighted least-squares
//! step with the identification's weights held), over the tenth, is its derivative along e_k,
//! and its variance from the frame sum_k d_k^2 (first order, as the forces' bands take it). The frame's error is one for the whole
//! recording: it does not average over the turns as the tracks' noise does, and the bootstrap,
//! whose replicates share the recording's frame, does not see it.
//!
//! Measured on the simulated changed bench (white noise 0.11 mm, two draws): the frame's
//! offset along x by its standard deviation on the rendered recordings (0.078 mm), the markers
//! moved and processed afresh, moved the pump's friction Fr by 0.6-1.6 N, where the bootstrap's
//! sigma is 0.5-0.7 N.

use std::path::Path;

use flexbench_identify::{Identification, Settings};
use flexbench_mechanism::sensitivity::OriginMotion;
use serde::{Deserialize, Serialize};

use crate::PipelineError;

/// The moved bodies' table of the principal direction `k` (from 0): its stem in the processed
/// folder.
pub fn table_stem(k: usize) -> String {
    format!("frame_bodies_{}", k + 1)
}

/// The frame tables of an earlier processing into the folder `out` beyond the `written` ones
/// removed, so that `identify` never reads another run's (a recording processed again without
/// the calibration's covariance).
pub(crate) fn remove_stale(out: &Path, written: usize) -> Result<(), PipelineError> {
    for k in written..4 {
        for ext in ["csv", "parquet"] {
            let path = out.join(format!("{}.{ext}", table_stem(k)));
            if path.exists() {
                std::fs::remove_file(&path).map_err(|e| {
                    PipelineError::io(&path, "remove an earlier run's frame table", e)
                })?;
            }
        }
    }
    Ok(())
}

/// One estimate's share of the calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameShareEstimate {
    /// Its key in the file.
    pub key: String,
    /// Its standard deviation from the bench frame's uncertainty (its unit).
    pub sigma: f64,
    /// Its derivative along each principal direction of the frame's covariance (its unit per
    /// standard deviation of that direction).
    pub per_direction: Vec<f64>,
}

/// The calibration's share: the directions taken and each determined estimate's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameShare {
    /// The principal directions of the frame's covariance the process stage moved the markers
    /// by (at most four).
    pub directions: usize,
    /// The share of each direction's standard deviation the markers were moved by.
    pub step: f64,
    /// Per determined free number (the offsets of measured columns left out).
    pub estimates: Vec<FrameShareEstimate>,
}

/// The share of the processed folder `processed`'s frame tables in the identification `first`
/// (the mechanism file `text`, `origin` naming it, identified from the processed motion
/// `motion` at times `t` with `settings` and the measured columns `measured` at those times):
/// None when the folder has no frame table (processed without the calibration's covariance).
pub(crate) fn frame_share(
    processed: &Path,
    mech: &flexbench_mechanism::Mechanism,
    (text, origin): (&str, &str),
    (t, motion): (&[f64], &[Vec<OriginMotion>]),
    first: &Identification,
    (settings, measured): (&Settings, &[flexbench_identify::MeasuredColumn]),
) -> Result<Option<FrameShare>, PipelineError> {
    let step = flexbench_kinematics::frame_share::STEP;
    let mut derivatives: Vec<Vec<f64>> = Vec::new();
    for k in 0.. {
        let path = crate::folders::ProcessedFolder::new(processed).stem(&table_stem(k));
        if !path.exists() {
            break;
        }
        let bodies = crate::tables::bodies_of(&path, mech)?;
        let (moved, moved_t) = crate::tables::origin_motions(mech, &bodies);
        if moved_t != t {
            return Err(PipelineError::Input(format!(
                "{}: its samples are not the bodies table's; process the recording again",
                path.display()
            )));
        }
        let change = flexbench_identify::change_with_motion(
            text,
            origin,
            t,
            (motion, &moved),
            measured,
            settings,
            first,
        )?;
        derivatives.push(change.iter().map(|d| d / step).collect());
    }
    if derivatives.is_empty() {
        return Ok(None);
    }
    let estimates = per_estimate(first, &derivatives)
        .into_iter()
        .map(|(key, sigma, per_direction)| FrameShareEstimate {
            key,
            sigma,
            per_direction,
        })
        .collect();
    Ok(Some(FrameShare {
        directions: derivatives.len(),
        step,
        estimates,
    }))
}

/// Each determined free number of `first` (the offsets of measured columns left out): its key,
/// the root sum of squares of its changes, and its change in each of `changes` (one vector per
/// direction or number, in `first`'s estimates' order).
pub(crate) fn per_estimate(
    first: &Identification,
    changes: &[Vec<f64>],
) -> Vec<(String, f64, Vec<f64>)> {
    first
        .estimates
        .iter()
        .enumerate()
        .filter(|(_, e)| e.determined && !e.key.starts_with("offset of "))
        .map(|(i, e)| {
            let each: Vec<f64> = changes.iter().map(|d| d[i]).collect();
            let sigma = each.iter().map(|d| d * d).sum::<f64>().sqrt();
            (e.key.clone(), sigma, each)
        })
        .collect()
}

/// The identification `id`'s standard deviations with the frame's share `share` added in
/// quadrature (each estimate's by its key).
pub(crate) fn apply(id: &mut Identification, share: &FrameShare) {
    add_in_quadrature(
        id,
        share.estimates.iter().map(|s| (s.key.as_str(), s.sigma)),
    );
}

/// The identification `id`'s standard deviations with the shares `shares` (key, standard
/// deviation in its unit) added in quadrature, each estimate's by its key.
pub(crate) fn add_in_quadrature<'a>(
    id: &mut Identification,
    shares: impl Iterator<Item = (&'a str, f64)>,
) {
    for (key, sigma) in shares {
        if let Some(e) = id.estimates.iter_mut().find(|e| e.key == key) {
            e.sigma = e.sigma.map(|v| v.hypot(sigma));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An earlier run's frame tables beyond those written are removed, the written ones and
    /// other files kept.
    #[test]
    fn an_earlier_runs_frame_tables_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in [
            "frame_bodies_1.csv",
            "frame_bodies_2.csv",
            "frame_bodies_2.parquet",
            "frame_bodies_4.parquet",
            "bodies.csv",
        ] {
            std::fs::write(d.join(name), "x").unwrap();
        }
        remove_stale(d, 1).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["bodies.csv", "frame_bodies_1.csv"]);
    }
}
