//! The identification's parametric bootstrap: what the processing of the recording does to the
//! estimates, measured on recordings made like it. The mechanism file with the identified
//! values is simulated at the recording's crank speed, rate and length; its markers' positions
//! get the recording's own errors (the process stage's residuals resampled in blocks,
//! [`crate::bootstrap_noise`]). Each such replicate is processed with the same settings and the
//! same mechanism file, and identified from that file as the recording was (the same estimator:
//! its robust weights start from the same residuals). The replicates' estimates scatter about
//! the identified values by the processing's spread, and their mean is off them by the
//! processing's bias (the smoothed motion's lost harmonics, docs/identification.md). The
//! estimates are then corrected by that bias, and their standard deviations are the replicates'
//! spread with the residuals' sandwich and the bias's own uncertainty (Efron and Tibshirani, An
//! Introduction to the Bootstrap, 1993, ch. 10: the bias-corrected estimate).

use std::path::Path;

use flexbench_contracts::tracks::Tracks;
use flexbench_identify::{Identification, Settings};
use flexbench_mechanism::sensitivity::OriginMotion;
use flexbench_mechanism::Mechanism;
use serde::{Deserialize, Serialize};

use crate::{PipelineError, ProcessConfig, StageEvent};

/// One free number's bootstrap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapEstimate {
    /// Its key in the file.
    pub key: String,
    /// The value identified from the recording, before the correction (its unit).
    pub identified: f64,
    /// The replicates' mean (its unit).
    pub replicates_mean: f64,
    /// The processing's bias: the replicates' mean less the value they were made with.
    pub bias: f64,
    /// The replicates' standard deviation (its unit).
    pub replicates_sigma: f64,
    /// The residuals' sandwich standard deviation of the identification (its unit).
    pub residuals_sigma: f64,
    /// The identified value less the bias (its unit).
    pub corrected: f64,
    /// Its standard deviation: the replicates', the residuals' and the bias's own combined.
    pub sigma: f64,
    /// Why the corrected value was not taken (the file refuses it: a friction below zero),
    /// the estimate then left as identified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The bootstrap's record: how the replicates were made and each free number's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapRecord {
    /// Replicates made.
    pub replicates: usize,
    /// The first replicate's noise seed (the k-th uses seed + k).
    pub seed: u64,
    /// The markers' errors given to each replicate, in words (the recording's residuals
    /// resampled, or white noise).
    pub noise: String,
    /// The replicates' sampling rate, Hz, and length, s: the recording's.
    pub rate_hz: f64,
    /// Length, s.
    pub duration_s: f64,
    /// The recording's mean crank speed, rad/s.
    pub crank_speed_rad_s: f64,
    /// The simulated bench's, rad/s (the motor's reference set so).
    pub simulated_speed_rad_s: f64,
    /// Per free number (the offsets of measured columns left out).
    pub estimates: Vec<BootstrapEstimate>,
}

/// The recording the replicates copy: the mechanism file it was processed and identified with
/// (its text), its sample times (s), the bodies' motion at them, the markers' noise (m) and the
/// process stage's settings.
pub(crate) struct Recording<'a> {
    pub text: &'a str,
    pub t: &'a [f64],
    pub motion: &'a [Vec<OriginMotion>],
    pub noise: crate::bootstrap_noise::MarkerNoise,
    pub process: &'a ProcessConfig,
}

/// A simulated sample: its time (s) and the bodies' centroid coordinates q.
type State = (f64, nalgebra::DVector<f64>);

/// One replicate: its tracks processed into `dir` with the recording's mechanism `mech` and
/// identified as the recording was: the same estimator, started from the same file.
fn replicate(
    origin: &str,
    mech: &Mechanism,
    tracks: &Tracks,
    rec: &Recording,
    settings: &Settings,
    dir: &Path,
) -> Result<Identification, PipelineError> {
    flexbench_tables::write_table(&tracks.to_table()?, dir, "tracks")?;
    let out = dir.join("processed");
    // The forces' bands are not read here: neither the frame's share nor their calibration
    // (the bodies, all the identification reads, do not depend on them).
    let cfg = rec.process.without_bands();
    crate::process(
        &dir.join(crate::folders::TRACKS),
        None,
        mech,
        &cfg,
        &out,
        |_| {},
    )?;
    let bodies = crate::tables::bodies_of(
        &crate::folders::ProcessedFolder::new(&out).table(crate::folders::ProcessedTable::Bodies),
        mech,
    )?;
    let (motion, t) = crate::tables::origin_motions(mech, &bodies);
    Ok(flexbench_identify::identify(
        rec.text,
        origin,
        &t,
        &motion,
        &[],
        settings,
    )?)
}

/// The bootstrap of the identification `id` (its file `id.file`, `origin` naming it) of the
/// recording `rec` with `settings`: `replicates` replicates from the noise seed `seed`, made in
/// a scratch folder removed after. Refused for a mechanism without a motor-driven crank (no
/// simulation to copy the recording by) and with measured columns (not simulated).
pub(crate) fn bootstrap(
    id: &Identification,
    origin: &str,
    rec: &Recording,
    settings: &Settings,
    (replicates, seed): (usize, u64),
    events: &mut dyn FnMut(StageEvent),
) -> Result<BootstrapRecord, PipelineError> {
    let mut mech = flexbench_mechanism::file::parse(&id.file, origin)?.mechanism;
    let given = flexbench_mechanism::file::parse(rec.text, origin)?.mechanism;
    let Some(crank) = mech.crank() else {
        return Err(PipelineError::Input(format!(
            "{origin}: the bootstrap simulates the mechanism at the recording's crank speed, and this mechanism has no motor-driven crank: identify without bootstrap (the standard deviations are then the residuals' only)"
        )));
    };
    if replicates < 2 {
        return Err(PipelineError::Input(format!(
            "bootstrap = {replicates}: give 2 replicates or more (10 or more for the standard deviations)"
        )));
    }
    let (ci, n) = (crank.body, rec.t.len());
    let speed = (rec.motion[n - 1][ci].theta - rec.motion[0][ci].theta) / (rec.t[n - 1] - rec.t[0]);
    events(StageEvent::Progress("bootstrap: the bench simulated", 0.0));
    let (sim, simulated) =
        crate::replicas::simulated_at(&mut mech, (ci, crank.motor), rec.t, speed)?;
    let states: Vec<State> = sim.into_iter().map(|s| (s.t, s.q)).collect();
    let scratch = tempfile::tempdir().map_err(|e| {
        PipelineError::io(
            &std::env::temp_dir(),
            "make the bootstrap's scratch folder",
            e,
        )
    })?;
    let mut runs = Vec::with_capacity(replicates);
    for k in 0..replicates {
        events(StageEvent::Progress(
            "bootstrap: replicates processed and identified",
            k as f64 / replicates as f64,
        ));
        let tracks = crate::replicas::noisy_tracks(&mech, &states, &rec.noise, seed + k as u64)?;
        let dir = scratch.path().join(format!("replicate-{k}"));
        crate::ensure_dir(&dir)?;
        runs.push(replicate(origin, &given, &tracks, rec, settings, &dir)?);
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(BootstrapRecord {
        replicates,
        seed,
        noise: rec.noise.describe(),
        rate_hz: (n - 1) as f64 / (rec.t[n - 1] - rec.t[0]),
        duration_s: rec.t[n - 1] - rec.t[0],
        crank_speed_rad_s: speed,
        simulated_speed_rad_s: simulated,
        estimates: combined(id, &runs),
    })
}

/// Each determined free number's bias, spread and corrected value from the replicates' `runs`.
fn combined(id: &Identification, runs: &[Identification]) -> Vec<BootstrapEstimate> {
    let r = runs.len() as f64;
    id.estimates
        .iter()
        .enumerate()
        .filter(|(_, e)| e.determined && !e.key.starts_with("offset of "))
        .map(|(i, e)| {
            let v: Vec<f64> = runs.iter().map(|run| run.estimates[i].value).collect();
            let mean = v.iter().sum::<f64>() / r;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (r - 1.0);
            let residuals = e.sigma.unwrap_or(0.0);
            // The bias is a mean of r replicates: its own variance var / r adds to the corrected
            // value's.
            let sigma = (var * (1.0 + 1.0 / r) + residuals * residuals).sqrt();
            BootstrapEstimate {
                key: e.key.clone(),
                identified: e.value,
                replicates_mean: mean,
                bias: mean - e.value,
                replicates_sigma: var.sqrt(),
                residuals_sigma: residuals,
                corrected: 2.0 * e.value - mean,
                sigma,
                refused: None,
            }
        })
        .collect()
}

/// The identification `id`'s estimates and file set to the bootstrap `b`'s bias-corrected
/// values and standard deviations, the file rewritten from the mechanism file `text`. A
/// corrected value the file refuses (an estimate near a limit, a friction near zero, where the
/// bias is no shift) is not taken: the estimate stays as identified, with the bootstrap's
/// standard deviation, `refused` in `b` says why and a warning in `id` names it.
pub(crate) fn apply(
    id: &mut Identification,
    b: &mut BootstrapRecord,
    text: &str,
    origin: &str,
) -> Result<(), PipelineError> {
    for c in b.estimates.iter_mut() {
        let Some(i) = id.estimates.iter().position(|e| e.key == c.key) else {
            continue;
        };
        id.estimates[i].sigma = Some(c.sigma);
        let identified = id.estimates[i].value;
        id.estimates[i].value = c.corrected;
        if let Err(why) = file_with(id, text, origin) {
            id.estimates[i].value = identified;
            id.warnings.push(format!(
                "the bootstrap's bias correction would put {} at {:.6e}, which the file refuses ({why}): {} is left at its estimate {:.6e}, not corrected; the recording pins it near that limit, where its standard deviation does not hold (hold it at the file's value, or record longer)",
                c.key, c.corrected, c.key, identified
            ));
            c.refused = Some(why.to_string());
        }
    }
    id.file = file_with(id, text, origin)?;
    Ok(())
}

/// The mechanism file's keys and values among `id`'s estimates (the offsets of measured
/// columns left out), in their units.
pub(crate) fn file_values(id: &Identification) -> Vec<(&str, f64)> {
    id.estimates
        .iter()
        .filter(|e| !e.key.starts_with("offset of "))
        .map(|e| (e.key.as_str(), e.value))
        .collect()
}

/// The mechanism file `text` with `id`'s estimates ([`file_values`]), checked to make a
/// mechanism.
fn file_with(id: &Identification, text: &str, origin: &str) -> Result<String, PipelineError> {
    let values = file_values(id);
    let file = flexbench_mechanism::parameters::with_values(text, origin, &values)?;
    flexbench_mechanism::file::parse(&file, origin)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_identify::Estimate;

    fn identification(values: &[f64], sigma: f64) -> Identification {
        Identification {
            estimates: values
                .iter()
                .enumerate()
                .map(|(i, &v)| Estimate {
                    key: format!("p{i}"),
                    file_value: 1.0,
                    value: v,
                    sigma: Some(sigma),
                    determined: true,
                    why_not: None,
                })
                .collect(),
            rank: values.len(),
            unknowns: values.len(),
            condition: 1.0,
            correlation: Vec::new(),
            equations: Vec::new(),
            bodies: Vec::new(),
            iterations: 1,
            bandwidth: 1,
            file: String::new(),
            warnings: Vec::new(),
        }
    }

    /// Replicates at 9.0, 9.2, 9.4 of a value identified at 10.0 (sandwich 0.1): the bias
    /// -0.8, the corrected value 10.8, and its sigma sqrt(0.04 (1 + 1/3) + 0.01).
    #[test]
    fn the_bias_is_taken_off_and_the_spread_added() {
        let id = identification(&[10.0], 0.1);
        let runs: Vec<_> = [9.0, 9.2, 9.4]
            .iter()
            .map(|&v| identification(&[v], 0.1))
            .collect();
        let b = &combined(&id, &runs)[0];
        assert!((b.bias + 0.8).abs() < 1e-12, "{b:?}");
        assert!((b.corrected - 10.8).abs() < 1e-12, "{b:?}");
        assert!((b.replicates_sigma - 0.2).abs() < 1e-12, "{b:?}");
        let want = (0.04f64 * (1.0 + 1.0 / 3.0) + 0.01).sqrt();
        assert!((b.sigma - want).abs() < 1e-12, "{b:?}");
    }

    /// On the shipped file with k and Fr free: a correction the file accepts is taken; one
    /// that puts the pump's friction below zero is not (Fr stays as identified, with the
    /// bootstrap's sigma), the record and a warning say why, and the file still reads.
    #[test]
    fn a_correction_the_file_refuses_leaves_the_estimate() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../mechanisms/wind-pump.toml");
        let text = std::fs::read_to_string(&path).expect("the shipped mechanism file");
        let mut id = identification(&[23000.0, 0.5], 0.1);
        id.estimates[0].key = "k".into();
        id.estimates[1].key = "Fr".into();
        let estimate = |key: &str, identified: f64, mean: f64| BootstrapEstimate {
            key: key.into(),
            identified,
            replicates_mean: mean,
            bias: mean - identified,
            replicates_sigma: 1.0,
            residuals_sigma: 0.1,
            corrected: 2.0 * identified - mean,
            sigma: 1.5,
            refused: None,
        };
        let mut b = BootstrapRecord {
            replicates: 10,
            seed: 1,
            noise: "white".into(),
            rate_hz: 240.0,
            duration_s: 2.0,
            crank_speed_rad_s: 10.0,
            simulated_speed_rad_s: 10.0,
            estimates: vec![estimate("k", 23000.0, 22500.0), estimate("Fr", 0.5, 3.0)],
        };
        apply(&mut id, &mut b, &text, "wind-pump.toml").expect("the raw Fr is accepted");
        assert_eq!(id.estimates[0].value, 23500.0);
        assert_eq!(id.estimates[1].value, 0.5);
        assert_eq!(id.estimates[1].sigma, Some(1.5));
        assert!(b.estimates[0].refused.is_none(), "{b:?}");
        let why = b.estimates[1].refused.as_deref().expect("Fr refused");
        assert!(why.contains("'Fr'") && why.contains("negative"), "{why}");
        assert!(
            id.warnings.iter().any(|w| w.contains("would put Fr at -2")),
            "{:?}",
            id.warnings
        );
        let read: toml::Table = id.file.parse().expect("the identified file reads");
        assert_eq!(read["Fr"].as_float(), Some(0.5));
        assert_eq!(read["k"].as_float(), Some(23500.0));
    }
}
