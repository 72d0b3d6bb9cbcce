//! The stage contract: each stage's job as one type, with the pipeline file's section of the
//! stage as its settings, its inputs, its record and one `run`. The command line, the Python
//! package and a run's stages all call `run` (as argmin separates its `Executor` from each
//! `Solver`: the front-ends and the runner are the executors, the job is the solver), so that
//! the three give the same settings the same check, read the same inputs the same way and tell
//! the same warnings.
//!
//! A job checks its section itself (the front-ends fill it: the command line from its options,
//! Python from its keyword arguments, a run from its file), tells every warning as an event as
//! it goes (the record's own warnings included) and returns them with its record and the files
//! it wrote.

use std::path::{Path, PathBuf};

use flexbench_mechanism::Mechanism;

use crate::calibrate::{CalibrateRequest, CameraSource, PlaneSource};
use crate::identify::{IdentifyRecord, IdentifySpec};
use crate::overlay::{OverlayInputs, OverlayRecord};
use crate::pipeline_file::{
    CalibrateSection, CompareSection, FemSection, OverlaySection, ProcessSection, TrackSection,
};
use crate::runner::StageName;
use crate::smooth::{SmoothRecord, SmoothSettings};
use crate::{PipelineError, StageEvent};

/// What a job made: its record, every file it wrote, and the warnings it told.
#[derive(Debug, Clone)]
pub struct Made<R> {
    /// The stage's record (also written as its `summary.json` where the stage has one).
    pub record: R,
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// The warnings told as events, in their order.
    pub warnings: Vec<String>,
}

/// A stage's job: its name, its settings (the pipeline file's section), its inputs, its record
/// and one `run` (module documentation).
pub trait Job {
    /// The stage (its name in the events, the run's folders and the manifest).
    const STAGE: StageName;
    /// The stage's settings: the pipeline file's section of it.
    type Section;
    /// What the job reads (tables' and files' paths, the mechanism).
    type Inputs<'a>;
    /// The stage's record.
    type Record;
    /// Check `section` against `inputs`, then run into `out`; `events` gets the progress and
    /// every warning. Nothing is written when the check refuses.
    fn run(
        section: &Self::Section,
        inputs: &Self::Inputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<Self::Record>, PipelineError>;
}

/// Run `body` with an event sink that passes every event on to `events` and keeps the warnings;
/// then tell `more` (the record's own warnings) as events too. The record, files and warnings.
fn telling<R>(
    events: &mut dyn FnMut(StageEvent),
    body: impl FnOnce(&mut dyn FnMut(StageEvent)) -> Result<(R, Vec<PathBuf>), PipelineError>,
    more: impl FnOnce(&R) -> Vec<String>,
) -> Result<Made<R>, PipelineError> {
    let mut warnings = Vec::new();
    let mut sink = |e: StageEvent| {
        if let StageEvent::Warning(w) = e {
            warnings.push(w.to_string());
        }
        events(e);
    };
    let (record, files) = body(&mut sink)?;
    for w in more(&record) {
        sink(StageEvent::Warning(&w));
    }
    Ok(Made {
        record,
        files,
        warnings,
    })
}

/// The process stage: kinematics and inverse dynamics from a tracks table.
pub struct ProcessJob;

/// What the process stage reads.
#[derive(Debug, Clone, Copy)]
pub struct ProcessInputs<'a> {
    /// The tracks table (CSV or Parquet; x, y in m).
    pub tracks: &'a Path,
    /// The track stage's flags table: its flagged samples are left out of the fit as gaps
    /// (unless `keep_flagged`).
    pub flags: Option<&'a Path>,
    /// The calibration the tracks were made with: its bench frame's covariance goes into the
    /// forces' bands.
    pub calibration: Option<&'a Path>,
    /// The mechanism.
    pub mechanism: &'a Mechanism,
}

impl Job for ProcessJob {
    const STAGE: StageName = StageName::Process;
    type Section = ProcessSection;
    type Inputs<'a> = ProcessInputs<'a>;
    type Record = crate::ProcessSummary;

    fn run(
        section: &ProcessSection,
        inputs: &ProcessInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<crate::ProcessSummary>, PipelineError> {
        let mut cfg = section.config()?;
        if let Some(c) = inputs.calibration {
            cfg.frame = crate::process::frame_covariance(c)?;
        }
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            let (tracks, mech) = (inputs.tracks, inputs.mechanism);
            let s = crate::process(tracks, inputs.flags, mech, &cfg, out, sink)?;
            let files = s.files.clone();
            Ok((s, files))
        };
        telling(events, body, |_| Vec::new())
    }
}

/// The fem stage: the elastic lever's modes along the cycle and its forced response.
pub struct FemJob;

/// What the fem stage reads.
#[derive(Debug, Clone, Copy)]
pub struct FemInputs<'a> {
    /// The process stage's bodies table.
    pub bodies: &'a Path,
    /// The process stage's forces table.
    pub forces: &'a Path,
    /// The process stage's fit residuals: the measured deflection the forced response is
    /// compared with.
    pub measured: Option<&'a Path>,
    /// The mechanism file (its lever's section).
    pub mechanism: &'a Path,
}

impl Job for FemJob {
    const STAGE: StageName = StageName::Fem;
    type Section = FemSection;
    type Inputs<'a> = FemInputs<'a>;
    type Record = crate::fem::FemRecord;

    fn run(
        section: &FemSection,
        inputs: &FemInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<crate::fem::FemRecord>, PipelineError> {
        let cfg = section.config(inputs.measured.map(Path::to_path_buf))?;
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            let (bodies, forces, mech) = (inputs.bodies, inputs.forces, inputs.mechanism);
            crate::fem::fem(bodies, forces, mech, &cfg, out, sink)
        };
        telling(events, body, |r| r.warnings.clone())
    }
}

/// The compare stage: measured against simulated (by the crank angle) and against the rig's
/// measured table.
pub struct CompareJob;

/// What the compare stage reads.
#[derive(Debug, Clone, Copy)]
pub struct CompareInputs<'a> {
    /// The process stage's folder.
    pub processed: &'a Path,
    /// The mechanism file the bench is simulated from.
    pub mechanism: &'a Path,
    /// The rig's measured table (torques, forces on its own clock), read as the section's
    /// `measured_*` keys say.
    pub measured: Option<&'a Path>,
}

impl Job for CompareJob {
    const STAGE: StageName = StageName::Compare;
    type Section = CompareSection;
    type Inputs<'a> = CompareInputs<'a>;
    type Record = crate::compare_measured::CompareOutcome;

    fn run(
        section: &CompareSection,
        inputs: &CompareInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<Self::Record>, PipelineError> {
        section.check()?;
        // A run's recordings differ in having a measured table: the keys that read one are
        // refused without it by the command line and Python only (`CompareSection::measured`),
        // where it is given by hand.
        let measured = inputs.measured.map(|m| (m, section.measured_spec()));
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            sink(StageEvent::Progress("comparing", 0.0));
            let outcome = crate::compare_measured::compare_job(
                inputs.processed,
                inputs.mechanism,
                section.harmonics,
                measured.as_ref().map(|(m, spec)| (*m, spec)),
                out,
            )?;
            let files = outcome.files.clone();
            Ok((outcome, files))
        };
        let said = |o: &Self::Record| {
            let simulated = o.simulated.iter().flat_map(|r| r.warnings.iter());
            let against = o.measured.iter().flat_map(|r| r.warnings.iter());
            simulated.chain(against).cloned().collect()
        };
        telling(events, body, said)
    }
}

/// The smooth stage: every marker smoothed and differentiated alone (no mechanism's model), and
/// the rigid field of the markers' body.
pub struct SmoothJob;

/// What the smooth stage reads.
#[derive(Debug, Clone, Copy)]
pub struct SmoothInputs<'a> {
    /// The tracks table, x and y in the section's `unit`.
    pub tracks: &'a Path,
    /// The mechanism: its layout of the markers for the rigid field
    /// ([`crate::smooth::RigidRequest::requested`]).
    pub mechanism: Option<&'a Mechanism>,
}

impl Job for SmoothJob {
    const STAGE: StageName = StageName::Smooth;
    type Section = SmoothSettings;
    type Inputs<'a> = SmoothInputs<'a>;
    type Record = SmoothRecord;

    /// `out` is the markers table's path, or a folder ([`crate::smooth::markers_path`]).
    fn run(
        section: &SmoothSettings,
        inputs: &SmoothInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<SmoothRecord>, PipelineError> {
        let (factor, method) = section.resolve()?;
        let asked = section.rigid_field.unwrap_or(false);
        let rigid = crate::smooth::RigidRequest::requested(asked, inputs.mechanism)?;
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            sink(StageEvent::Progress("smoothing", 0.0));
            crate::smooth::smooth(inputs.tracks, factor, method, rigid, out)
        };
        telling(events, body, |_| Vec::new())
    }
}

/// The track stage: the markers of a video tracked with a calibration.
pub struct TrackJob;

/// What the track stage reads.
#[derive(Debug, Clone, Copy)]
pub struct TrackInputs<'a> {
    /// The video.
    pub video: &'a Path,
    /// The calibration (camera and bench plane).
    pub calibration: &'a Path,
    /// The mechanism: its markers' names, layout, kinds, codes and depths.
    pub mechanism: Option<&'a Mechanism>,
    /// The user's corrections of the tracks (a table of frame, marker and position).
    pub corrections: Option<&'a Path>,
    /// The clicked templates of the features to follow.
    pub templates: Option<&'a Path>,
}

impl Job for TrackJob {
    const STAGE: StageName = StageName::Track;
    type Section = TrackSection;
    type Inputs<'a> = TrackInputs<'a>;
    type Record = flexbench_vision::track::TrackSummary;

    /// `out` is the tracks table's path (.csv or .parquet; the other format, the flags and
    /// the summary beside it).
    fn run(
        section: &TrackSection,
        inputs: &TrackInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<Self::Record>, PipelineError> {
        let cfg = section.config(inputs.mechanism, inputs.corrections, inputs.templates)?;
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            crate::track::track(inputs.video, inputs.calibration, &cfg, out, sink)
        };
        telling(events, body, |s| s.warnings())
    }
}

/// The overlay stage: the video with the tracks, the flagged samples and the fitted mechanism
/// drawn on every frame.
pub struct OverlayJob;

impl Job for OverlayJob {
    const STAGE: StageName = StageName::Overlay;
    type Section = OverlaySection;
    type Inputs<'a> = OverlayInputs<'a>;
    type Record = OverlayRecord;

    fn run(
        section: &OverlaySection,
        inputs: &OverlayInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<OverlayRecord>, PipelineError> {
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            crate::overlay::overlay(inputs, section.plain, out, sink)
        };
        telling(events, body, |_| Vec::new())
    }
}

/// The identify stage: the mechanism file's uncertain numbers identified from a processed
/// recording (and the rig's measured table), written as a new mechanism file.
pub struct IdentifyJob;

/// What the identify stage reads.
#[derive(Debug, Clone, Copy)]
pub struct IdentifyInputs<'a> {
    /// The process stage's folder.
    pub processed: &'a Path,
    /// The mechanism file whose numbers are identified.
    pub mechanism: &'a Path,
    /// The rig's measured table (torques, forces on its own clock).
    pub measured: Option<&'a Path>,
    /// The process stage's settings the recording is processed again with, and the
    /// bootstrap's replicates (the command line and Python give the pipeline file's defaults,
    /// a run its own).
    pub process: &'a ProcessSection,
}

impl Job for IdentifyJob {
    const STAGE: StageName = StageName::Identify;
    type Section = IdentifySpec;
    type Inputs<'a> = IdentifyInputs<'a>;
    type Record = IdentifyRecord;

    fn run(
        section: &IdentifySpec,
        inputs: &IdentifyInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<IdentifyRecord>, PipelineError> {
        let process = inputs.process.config()?;
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            sink(StageEvent::Progress("identifying", 0.0));
            let (processed, mechanism) = (inputs.processed, inputs.mechanism);
            let measured = inputs.measured;
            crate::identify::identify_job(
                processed, mechanism, measured, section, out, &process, sink,
            )
        };
        telling(events, body, |r| r.identification.warnings.clone())
    }
}

/// The calibrate stage: the camera (from a board's views, or a nominal camera) and the bench
/// plane (from a board view in the lever's plane and two clicked pixels, or from clicked points
/// of known bench position). The camera fitted to the mechanism's motion (`from_motion`) is a
/// stage of its own after this one (`motion_calibration`): this job makes its start.
pub struct CalibrateJob;

/// What the calibrate stage reads.
#[derive(Debug, Clone)]
pub struct CalibrateInputs<'a> {
    /// The folder of the board's views (for a board's camera).
    pub views: Option<&'a Path>,
    /// Where the bench plane comes from (read by the front-end: a clicks file, the clicked
    /// pixels, a points file); None for the camera alone.
    pub plane: Option<PlaneSource>,
    /// The video, whose metadata gives a nominal camera's focal length when the section does
    /// not.
    pub video: Option<&'a Path>,
}

impl Job for CalibrateJob {
    const STAGE: StageName = StageName::Calibrate;
    type Section = CalibrateSection;
    type Inputs<'a> = CalibrateInputs<'a>;
    type Record = flexbench_vision::Calibration;

    /// `out` is the calibration file's path (YAML; `<stem>.corners.csv` beside it).
    fn run(
        section: &CalibrateSection,
        inputs: &CalibrateInputs<'_>,
        out: &Path,
        events: &mut dyn FnMut(StageEvent),
    ) -> Result<Made<Self::Record>, PipelineError> {
        let camera = match (section.nominal()?, inputs.views) {
            (Some(nominal), _) => {
                let nominal = crate::calibrate::with_video_focal(nominal, inputs.video)?;
                CameraSource::Nominal(nominal)
            }
            (None, Some(views)) => CameraSource::Board {
                views: views.to_path_buf(),
                target: section.target()?,
            },
            (None, None) => return Err(PipelineError::Input("[calibrate]: give the board's views (--views, with --square and --board or --charuco; a run's [inputs] views), or nominal_camera (--nominal-camera WIDTHxHEIGHT) with clicked points (--points) for footage without a board".into())),
        };
        let req = CalibrateRequest {
            camera,
            plane: inputs.plane.clone(),
        };
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            let what = match req.camera {
                CameraSource::Nominal(_) => "nominal camera",
                CameraSource::Board { .. } => "calibration views",
            };
            sink(StageEvent::Progress(what, 0.0));
            crate::calibrate::calibrate(&req, out)
        };
        telling(events, body, |_| Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's events reach the caller in their order, the record's own warnings after the
    /// job's, and `Made` holds every warning told.
    #[test]
    fn every_warning_is_told_and_kept() {
        let mut seen = Vec::new();
        let mut events = |e: StageEvent| {
            seen.push(match e {
                StageEvent::Progress(what, f) => format!("{what} {f}"),
                StageEvent::Warning(w) => format!("warning: {w}"),
            })
        };
        let body = |sink: &mut dyn FnMut(StageEvent)| {
            sink(StageEvent::Progress("fitting", 0.5));
            sink(StageEvent::Warning("the periodic fit stood down"));
            Ok((vec!["the record's own"], vec![PathBuf::from("t.csv")]))
        };
        let made = telling(&mut events, body, |r| {
            r.iter().map(|w| w.to_string()).collect()
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                "fitting 0.5",
                "warning: the periodic fit stood down",
                "warning: the record's own"
            ]
        );
        assert_eq!(
            made.warnings,
            ["the periodic fit stood down", "the record's own"]
        );
        assert_eq!(made.files, [PathBuf::from("t.csv")]);
    }

    /// A section the job refuses writes nothing: compare with no harmonic, before its inputs
    /// are read.
    #[test]
    fn a_refused_section_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("compare");
        let section = CompareSection {
            harmonics: 0,
            ..CompareSection::default()
        };
        let inputs = CompareInputs {
            processed: &dir.path().join("absent"),
            mechanism: &dir.path().join("absent.toml"),
            measured: None,
        };
        let e = CompareJob::run(&section, &inputs, &out, &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("harmonics = 0"), "{e}");
        assert!(!out.exists());
    }

    /// The calibrate job's camera chosen from its section alone: a nominal camera when
    /// `nominal_camera` is set (the board's views, even when given, are not read), and with
    /// neither a nominal camera nor views, a refusal that names both and writes nothing.
    #[test]
    fn calibrate_chooses_its_camera_from_the_section() {
        use flexbench_vision::bench_frame::{ClickedPoint, FrameModel};
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("calibration.yaml");
        let plane = PlaneSource::Points {
            points: vec![
                ClickedPoint {
                    pixel: (340.0, 360.0),
                    bench: (0.0, 0.0),
                },
                ClickedPoint {
                    pixel: (940.0, 360.0),
                    bench: (0.3, 0.0),
                },
            ],
            click_sigma_px: 0.3,
            model: FrameModel::Facing,
        };
        let absent = dir.path().join("no-views");
        let inputs = CalibrateInputs {
            views: Some(&absent),
            plane: Some(plane),
            video: None,
        };
        let section = CalibrateSection {
            nominal_camera: Some("1280x720".into()),
            focal_px: Some(1000.0),
            ..CalibrateSection::default()
        };
        let made = CalibrateJob::run(&section, &inputs, &out, &mut |_| {}).unwrap();
        let k = &made.record.intrinsics;
        assert_eq!((k.width, k.height, k.fx, k.fy), (1280, 720, 1000.0, 1000.0));
        assert!(made.record.plane.is_some() && out.exists());

        let board = CalibrateSection::default();
        let bare = CalibrateInputs {
            views: None,
            plane: None,
            video: None,
        };
        let out = dir.path().join("refused.yaml");
        let e = CalibrateJob::run(&board, &bare, &out, &mut |_| {}).unwrap_err();
        assert!(matches!(e, PipelineError::Input(_)), "{e}");
        assert!(e.to_string().contains("nominal_camera"), "{e}");
        assert!(!out.exists());
    }
}
