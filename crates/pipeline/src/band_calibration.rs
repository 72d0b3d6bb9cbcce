//! The tracks' share of the forces' bands calibrated by a parametric bootstrap
//! (docs/identification.md, "Coverage"). The smoother's per-sample sigma, carried at the periodic
//! fit's states, does not know that the periodic fit pools every turn: on 50 renderings of the
//! bench it was about 2.5 times the forces' error. Here the recording is copied: the mechanism
//! file is simulated at the recording's crank speed, rate and length
//! ([`crate::identify_bootstrap`]), its markers get the recording's own errors (the fit's
//! residuals resampled in circular blocks, [`crate::bootstrap_noise`]), and each replicate is
//! processed with the same settings (by `process` itself, handed in: the stage's own code).
//! Each force's error against the simulation, over its
//! replicate's smoother sigma, has an RMS over the replicates and samples: the scale the
//! recording's tracks' share is multiplied by. It measures what the processing does with such
//! tracks; errors the fit takes up entirely (a frame's, a lens's) are not in the residuals and
//! not in the scale (the frame's share is [`flexbench_kinematics::frame_share`]'s).

use flexbench_mechanism::Mechanism;
use serde::{Deserialize, Serialize};

use std::path::Path;

use crate::bootstrap_noise::MarkerNoise;
use crate::{PipelineError, StageEvent};

/// The replicates' noise seed (the k-th uses seed + k): fixed, so that a run is repeatable.
pub const SEED: u64 = 1;

/// One force's scale of the tracks' share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForceScale {
    /// The forces column.
    pub force: String,
    /// RMS over the replicates' samples of (force - simulated) / the smoother's sigma (NaN
    /// where no sample had both: a force the bench never loads).
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub scale: f64,
    /// Samples it was measured on.
    pub samples: usize,
}

/// The bootstrap that calibrated the tracks' share: how the replicates were made, each force's
/// scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TracksScale {
    /// Replicates processed.
    pub replicates: usize,
    /// The first replicate's noise seed.
    pub seed: u64,
    /// The markers' errors given to the replicates, in words.
    pub noise: String,
    /// The recording's mean crank speed, rad/s, and the simulated bench's.
    pub crank_speed_rad_s: [f64; 2],
    /// Per force column.
    pub scales: Vec<ForceScale>,
}

/// The recording the replicates copy: its sample times (s), its motion's mean crank speed
/// (rad/s), the markers' errors, and the condition number above which a sample is a toggle.
pub(crate) struct Copied<'a> {
    pub t: &'a [f64],
    pub speed: f64,
    pub noise: MarkerNoise,
    pub max_condition: f64,
}

/// The process stage as the replicates are processed: a tracks table's path into an output
/// folder, with the recording's settings (no calibration of the bands, no frame).
pub(crate) type ProcessReplicate<'a> = dyn Fn(&Path, &Path) -> Result<(), PipelineError> + 'a;

/// The scale of each force's tracks' share from `replicates` replicates of the recording `rec`
/// processed with `mech` (the module's description). Refused for a mechanism without a
/// motor-driven crank (nothing to copy the recording by) and for fewer than 2 replicates.
pub(crate) fn tracks_scale(
    mech: &Mechanism,
    rec: &Copied<'_>,
    (replicates, process): (usize, &ProcessReplicate<'_>),
    events: &mut dyn FnMut(StageEvent),
) -> Result<TracksScale, PipelineError> {
    let Some(crank) = mech.crank() else {
        return Err(PipelineError::Input(
            "the bands' calibration ([process] calibrate_bands) simulates the mechanism at the recording's crank speed, and this mechanism has no motor-driven crank: leave calibrate_bands at 0 (the bands are then the smoother's, conservative)".into(),
        ));
    };
    if replicates < 2 {
        return Err(PipelineError::Input(format!(
            "calibrate_bands = {replicates}: give 0 (not calibrated) or 2 replicates or more (8 or more for a scale within about 10 %)"
        )));
    }
    events(StageEvent::Progress("bands: the bench simulated", 0.0));
    let mut sim_mech = mech.clone();
    let (sim, simulated) =
        crate::replicas::simulated_at(&mut sim_mech, (crank.body, crank.motor), rec.t, rec.speed)?;
    let states: Vec<_> = sim.iter().map(|s| (&s.q, &s.qd, &s.qdd)).collect();
    let truth = mech.inverse_dynamics_batch(&states, rec.max_condition)?;
    let columns = mech.force_columns();
    let scratch = tempfile::tempdir().map_err(|e| {
        PipelineError::io(&std::env::temp_dir(), "make the bands' scratch folder", e)
    })?;
    let mut sums = vec![(0.0, 0usize); columns.len()];
    let tq: Vec<_> = sim.iter().map(|s| (s.t, s.q.clone())).collect();
    for k in 0..replicates {
        events(StageEvent::Progress(
            "bands: replicates processed",
            k as f64 / replicates as f64,
        ));
        let tracks = crate::replicas::noisy_tracks(mech, &tq, &rec.noise, SEED + k as u64)?;
        let dir = scratch.path().join(format!("replicate-{k}"));
        crate::ensure_dir(&dir)?;
        flexbench_tables::write_table(&tracks.to_table()?, &dir, "tracks")?;
        let out = dir.join("processed");
        process(&dir.join(crate::folders::TRACKS), &out)?;
        let forces = flexbench_tables::read_forces(
            &crate::folders::ProcessedFolder::new(&out)
                .table(crate::folders::ProcessedTable::Forces),
        )?;
        accumulate(&mut sums, &columns, &forces, &truth);
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(TracksScale {
        replicates,
        seed: SEED,
        noise: rec.noise.describe(),
        crank_speed_rad_s: [rec.speed, simulated],
        scales: columns
            .iter()
            .zip(sums)
            .map(|(c, (s, n))| ForceScale {
                force: c.clone(),
                scale: if n > 0 {
                    (s / n as f64).sqrt()
                } else {
                    f64::NAN
                },
                samples: n,
            })
            .collect(),
    })
}

/// Each force's squared (error / sigma) summed over the replicate's samples `forces` against the
/// simulation's `truth` (sample by sample, the same times), and the samples counted.
fn accumulate(
    sums: &mut [(f64, usize)],
    columns: &[String],
    forces: &flexbench_contracts::Forces,
    truth: &[flexbench_mechanism::inverse::InverseSample],
) {
    use flexbench_mechanism::inverse::InverseSample;
    let column = |name: &str| forces.columns().iter().find(|c| c.0 == name).map(|c| &c.1);
    for (j, name) in columns.iter().enumerate() {
        let (Some(f), Some(s)) = (column(name), column(&format!("{name}_sigma"))) else {
            continue;
        };
        for (k, sample) in truth.iter().enumerate().take(forces.t().len()) {
            let InverseSample::Solved { forces: want, .. } = sample else {
                continue;
            };
            if let (Some(Some(got)), Some(Some(sigma))) = (f.get(k), s.get(k)) {
                if *sigma > 0.0 && sigma.is_finite() {
                    sums[j].0 += ((got - want[j]) / sigma).powi(2);
                    sums[j].1 += 1;
                }
            }
        }
    }
}
