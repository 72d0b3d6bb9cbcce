//! `flexbench run PIPELINE.toml`: the whole chain for one recording, from its video (or a tracks
//! table from any tool) to the report: calibrate (or reuse a calibration) -> track (or import)
//! -> smooth -> process (kinematics, inverse dynamics) -> fem -> compare -> report.
//!
//! Every stage writes into its own folder of the run's output directory, first into a temporary
//! folder that replaces the old one only when the stage succeeded, so a failure loses nothing.
//! Each stage's folder holds `stage.json`: the key of the stage (SHA-256 over the flexbench
//! build, the stage's parameters and the bytes of every input, earlier stages' outputs
//! included) and the SHA-256 of each file it wrote. A stage whose key is unchanged and whose
//! files are intact is not run again; a changed parameter reruns its stage, and the stages after
//! it only where its outputs changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use flexbench_contracts::manifest::{InputFile, Manifest, StageEntry};
use flexbench_mechanism::Mechanism;

use crate::report::ReportRecord;
use crate::PipelineError;
use crate::StageEvent;
use crate::StageRecord;

pub use crate::pipeline_file::*;
pub use crate::recording::*;
pub use crate::runner::*;

use crate::recording::find_video;

mod stages;
pub(crate) use stages::*;
mod manifest;
use manifest::*;
mod batch;
pub use batch::*;
mod plan;
pub use plan::*;

/// What one recording's run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The recording's name.
    pub name: String,
    /// The run's output directory.
    pub out: PathBuf,
    /// How each stage ended.
    pub outcomes: Vec<StageOutcome>,
    /// The report (HTML).
    pub report: PathBuf,
    /// The manifest.
    pub manifest: PathBuf,
}

fn params<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// A pipeline file's settings, checked and turned into the stages' configurations.
pub struct Settings {
    /// The process stage's configuration.
    pub process: crate::ProcessConfig,
    /// What the identify stage is asked, when `[identify]` switches it on.
    pub identify: Option<crate::identify::IdentifySpec>,
}

impl Settings {
    /// Check every table of `file` against the mechanism; `calibrating`: the run calibrates
    /// (so the board must be complete).
    pub fn resolve(
        file: &PipelineFile,
        mech: &flexbench_mechanism::Mechanism,
        calibrating: bool,
    ) -> Result<Settings, PipelineError> {
        let bad = |m: String| Err(PipelineError::Input(m));
        // The board checked before any stage runs (the calibrate job reads it again).
        if calibrating {
            file.calibrate.target()?;
        }
        if file
            .smooth
            .unit
            .is_some_and(|u| u != flexbench_tables::interchange::LengthUnit::M)
        {
            return bad("[smooth] unit: in a run the tracks are in metres (the track stage maps them); give a foreign table's unit as [inputs] tracks_unit".into());
        }
        // The smooth stage's settings checked before anything runs (its job checks them again).
        file.smooth.resolve()?;
        crate::smooth::RigidRequest::requested(file.smooth.rigid_field == Some(true), Some(mech))?;
        let process = file.process.config()?;
        file.fem.check()?;
        file.compare.check()?;
        let identify = file.identify.spec(&file.compare)?;
        Ok(Settings {
            process,
            identify: file.identify.enabled.then_some(identify),
        })
    }
}

/// Run the whole chain for one recording into `out`. `file` and `pipeline_path` are the pipeline
/// file (its path for the manifest).
pub fn run_recording(
    file: &PipelineFile,
    pipeline_path: &Path,
    rec: &RecordingInputs,
    out: &Path,
    events: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary, PipelineError> {
    // Long: the chain's stages in their order (calibrate, track, smooth, process, overlay, fem,
    // compare, identify, report), each a call: kept in one function so that the order is read at
    // once.
    let mech_file = flexbench_mechanism::file::load(&rec.mechanism)?;
    let mech = &mech_file.mechanism;
    let cal_source = match &rec.source {
        TracksSource::Video { calibration, .. } => Some(calibration),
        TracksSource::Table { calibration, .. } => calibration.as_ref(),
    };
    // A board's views, or a nominal camera with its clicked points, calibrated here.
    let with_board = matches!(cal_source, Some(CalibrationSource::Views { .. }));
    let calibrating = with_board || matches!(cal_source, Some(CalibrationSource::Nominal { .. }));
    if calibrating {
        file.calibrate.nominal()?;
    }
    // Every setting checked before any stage runs: a wrong value late in the file is reported
    // at once, not after the stages before it.
    let settings = Settings::resolve(file, mech, with_board)?;
    crate::process::check_band_calibration(mech, &settings.process)?;
    if let Some(spec) = &settings.identify {
        let text = std::fs::read_to_string(&rec.mechanism)
            .map_err(|e| PipelineError::io(&rec.mechanism, "be read", e))?;
        let origin = rec.mechanism.display().to_string();
        flexbench_identify::check_free(&text, &origin, &spec.free)?;
    }
    let overlaying = file.overlay.enabled && matches!(rec.source, TracksSource::Video { .. });
    // The lever's FEM needs the bench's elastic lever; the comparison needs a crank to simulate
    // by, or a measured table.
    let fem = mech_file.lever.is_some();
    let comparing = crate::compare::simulated_applies(mech) || rec.measured.is_some();
    let from_motion = file.calibrate.from_motion;
    if from_motion && !(calibrating && matches!(rec.source, TracksSource::Video { .. })) {
        return Err(PipelineError::Input(
            "[calibrate] from_motion = true fits the camera to a video's motion from a calibration made here: give the recording's video and its board views or clicked points (with nominal_camera)".into(),
        ));
    }
    let stages = StageName::CHAIN.len() + 2 * usize::from(from_motion)
        - usize::from(!calibrating)
        - usize::from(!overlaying)
        - usize::from(!fem)
        - usize::from(!comparing)
        + settings
            .identify
            .as_ref()
            .map_or(0, |_| 2 + usize::from(comparing));
    let mut run = RecordingRun {
        file,
        rec,
        mech,
        settings,
        runner: Runner::new(out, build_identity(), stages, events),
        calibration: None,
    };
    let (calibration, tracks) = match from_motion {
        false => {
            let calibration = run.calibrate(StageName::Calibrate)?;
            let tracks = run.track(StageName::Track, calibration.as_deref())?;
            (calibration, tracks)
        }
        true => {
            let start = run.calibrate(StageName::CalibrateStart)?;
            let rough = run.track(StageName::TrackStart, start.as_deref())?;
            let calibration = start
                .map(|s| run.calibrate_motion(&s, &rough))
                .transpose()?;
            let tracks = run.track(StageName::Track, calibration.as_deref())?;
            (calibration, tracks)
        }
    };
    run.calibration = calibration.clone();
    // The stages on the markers alone (smooth) and on the video (overlay) beside the
    // mechanism's, which do not read them.
    let (smooth, (process, overlay, (fem, compare, identified))) =
        run.smooth_beside(&tracks, |run| {
            let process = run.process(&tracks)?;
            let analyses = |run: &mut RecordingRun| {
                let fem = match fem {
                    true => Some(run.fem(&process)?),
                    false => None,
                };
                let compare = match comparing {
                    true => Some(run.compare(&process)?),
                    false => None,
                };
                let identified = match run.settings.identify.clone() {
                    Some(spec) => Some(run.identified(&spec, &tracks, &process, comparing)?),
                    None => None,
                };
                Ok((fem, compare, identified))
            };
            let (overlay, analysed) = match (overlaying, &calibration) {
                (true, Some(cal)) => {
                    let (dir, rest) = run.overlay_beside(cal, &tracks, &process, analyses)?;
                    (Some(dir), rest)
                }
                _ => (None, analyses(run)?),
            };
            Ok((process, overlay, analysed))
        })?;
    let dirs = crate::report::StageDirs {
        calibrate: calibration
            .as_ref()
            .and_then(|c| c.parent().map(Path::to_path_buf))
            .filter(|_| calibrating),
        track: tracks.parent().map(Path::to_path_buf).unwrap_or_default(),
        smooth,
        process,
        overlay,
        fem,
        compare,
        identified,
    };
    let manifest = manifest(file, pipeline_path, rec, &mut run.runner)?;
    let report_dir = run.report(&dirs, &manifest)?;
    let runner = run.runner;
    let manifest_path = crate::write_json(
        &out.join("manifest.json"),
        &params(&with_stages(manifest, &runner.stamps)),
    )?;
    Ok(RunSummary {
        name: rec.name.clone(),
        out: out.to_path_buf(),
        outcomes: runner.outcomes,
        report: report_dir.join("report.html"),
        manifest: manifest_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[calibrate]` describes a chessboard by default, a ChArUco board with `charuco`; a
    /// ChArUco board without its marker or dictionary, or with an unknown dictionary, is refused
    /// with the key named.
    #[test]
    fn calibrate_table_targets() {
        let section = |text: &str| toml::from_str::<CalibrateSection>(text);
        let chess = section("board = \"9x6\"\nsquare = 0.03")
            .unwrap()
            .target()
            .unwrap();
        assert!(matches!(
            chess,
            flexbench_vision::calibrate::Target::Chessboard(..)
        ));
        let charuco =
            section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.026\ndictionary = \"4x4_50\"")
                .unwrap()
                .target()
                .unwrap();
        assert_eq!(charuco.describe(), "9 x 7 ChArUco board (4x4_50)");
        let no_marker = section("charuco = \"9x7\"\nsquare = 0.04\ndictionary = \"4x4_50\"")
            .unwrap()
            .target()
            .unwrap_err()
            .to_string();
        assert!(
            no_marker.contains("marker (--marker) is missing"),
            "{no_marker}"
        );
        let no_dict = section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.026")
            .unwrap()
            .target()
            .unwrap_err()
            .to_string();
        assert!(
            no_dict.contains("dictionary (--dictionary) is missing"),
            "{no_dict}"
        );
        let unknown =
            section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.026\ndictionary = \"4x4_51\"")
                .unwrap_err()
                .to_string();
        assert!(unknown.contains("4x4_51"), "{unknown}");
        let big =
            section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.05\ndictionary = \"4x4_50\"")
                .unwrap()
                .target()
                .unwrap_err()
                .to_string();
        assert!(big.contains("less than the square"), "{big}");
    }
}
