//! The process stage's peak-locking pass: the tracker's bias tied to the pixel grid measured
//! from the first fit's residuals (`flexbench_kinematics::peak_locking`), reported, and, where
//! the settings ask for it, taken out of the markers' positions before the motion is fitted
//! again.

use std::collections::BTreeMap;

use flexbench_contracts::names::Switch;
use flexbench_contracts::{MarkerSeries, Tracks};
use flexbench_kinematics::peak_locking::{self, NotMeasured, PeakLocking, PixelSample};
use flexbench_kinematics::Motion;
use flexbench_mechanism::Mechanism;
use serde::{Deserialize, Serialize};

/// What the process stage found of the tracker's peak locking, and whether it took it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakLockingRecord {
    /// The curves, their size and their test (from the first fit's residuals), when measured.
    pub estimate: Option<PeakLocking>,
    /// Why it was not measured, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
    /// Why it was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<NotMeasured>,
    /// Whether the markers' positions were corrected by it and the motion fitted again.
    pub corrected: bool,
}

impl PeakLockingRecord {
    /// The warning a user reads when the peak locking is real and was left in.
    pub fn warning(&self) -> Option<String> {
        let e = self.estimate.as_ref()?;
        (e.significant() && !self.corrected).then(|| {
            format!(
                "the tracks show peak locking: the tracker pulls the markers' centres towards the pixels' by {:.3} px RMS (the residuals' {:.3} px about it; p = {:.1e}). On a periodic motion it repeats every turn, the fit takes it up as motion, and the forces and identified parameters carry it; process with --peak-locking auto (Python: peak_locking=\"auto\"; pipeline file: [process] peak_locking = \"auto\") to take it out",
                e.rms_px, e.noise_px, e.p_value
            )
        })
    }
}

/// The tracks' image positions, px, by (marker, frame); empty for tracks without pixels.
pub(crate) fn pixels(tracks: &Tracks) -> BTreeMap<(String, i64), [f64; 2]> {
    tracks
        .rows()
        .iter()
        .filter_map(|r| Some(((r.marker.clone(), r.frame), [r.u?, r.v?])))
        .collect()
}

/// Each fitted sample with pixels: (series index, sample index, the sample).
fn samples(
    mech: &Mechanism,
    series: &[MarkerSeries],
    motion: &Motion,
    pixels: &BTreeMap<(String, i64), [f64; 2]>,
) -> Vec<(usize, usize, PixelSample)> {
    let mut out = Vec::new();
    for (k, s) in series.iter().enumerate() {
        let Some(j) = mech.markers.iter().position(|m| m.name == s.name) else {
            continue;
        };
        for (i, fit) in motion.samples.iter().enumerate() {
            let Some(r) = fit.residual.get(j).copied().flatten() else {
                continue;
            };
            let (Some(&frame), Some(true)) = (s.frame.get(i), s.present.get(i).copied()) else {
                continue;
            };
            let Some(&uv) = pixels.get(&(s.name.clone(), frame)) else {
                continue;
            };
            // A rolling shutter's late sample was seen at its pixels where it was then, not
            // where it has been carried to (its offset in `late`).
            let [dx, dy] = match s.late.get(i).copied().flatten() {
                Some([_, dx, dy]) => [dx, dy],
                None => [0.0, 0.0],
            };
            out.push((
                k,
                i,
                PixelSample {
                    uv,
                    xy: [s.x[i] + dx, s.y[i] + dy],
                    residual: [r.x, r.y],
                },
            ));
        }
    }
    out
}

/// The peak locking of the markers `series` as the `motion` fitted to them leaves it, and,
/// where `switch` asks (auto: when significant; on: whenever estimated), the series corrected
/// by it (true returned in the record's `corrected`); why not, when it cannot be measured.
pub(crate) fn measure_and_correct(
    mech: &Mechanism,
    series: &mut [MarkerSeries],
    motion: &Motion,
    pixels: &BTreeMap<(String, i64), [f64; 2]>,
    switch: Switch,
) -> PeakLockingRecord {
    let found = samples(mech, series, motion, pixels);
    let list: Vec<PixelSample> = found.iter().map(|(_, _, p)| *p).collect();
    let estimate = match peak_locking::estimate(&list) {
        Ok(e) => e,
        Err(why) => {
            return PeakLockingRecord {
                estimate: None,
                not_measured: Some(why.to_string()),
                why_not: Some(why),
                corrected: false,
            }
        }
    };
    let corrected = switch.resolve(estimate.significant());
    if corrected {
        for (k, i, p) in &found {
            let e = estimate.error_of(p);
            series[*k].x[*i] -= e[0];
            series[*k].y[*i] -= e[1];
        }
    }
    PeakLockingRecord {
        estimate: Some(estimate),
        not_measured: None,
        why_not: None,
        corrected,
    }
}
