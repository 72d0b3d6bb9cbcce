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

/// Names of a run's stages, in order.
pub const STAGES: [&str; 8] = [
    "calibrate",
    "track",
    "smooth",
    "process",
    "overlay",
    "fem",
    "compare",
    "report",
];

/// The stage that tracks the video with the start's calibration when the camera is fitted to
/// the motion (`[calibrate] from_motion`).
const TRACK_START: &str = "track-start";

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
    /// The calibration target: a chessboard and its detector, or a ChArUco board (when
    /// calibrating).
    pub target: Option<flexbench_vision::calibrate::Target>,
    /// Metres per unit of the tracks for the smooth stage (1: a run's tracks are in m).
    pub factor: f64,
    /// The smooth stage's method.
    pub method: crate::smooth::SmoothMethod,
    /// The marker layout of the rigid field (the lever's on the bench); None when the markers
    /// lie on several bodies (no rigid field then).
    pub rigid: Option<crate::smooth::RigidRequest>,
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
        let target = match calibrating {
            true => Some(file.calibrate.target()?),
            false => None,
        };
        if file
            .smooth
            .unit
            .is_some_and(|u| u != flexbench_tables::interchange::LengthUnit::M)
        {
            return bad("[smooth] unit: in a run the tracks are in metres (the track stage maps them); give a foreign table's unit as [inputs] tracks_unit".into());
        }
        let (factor, method) = file.smooth.resolve()?;
        let one_body = mech.markers.windows(2).all(|w| w[0].body == w[1].body);
        let rigid = match one_body {
            true => Some(crate::smooth::RigidRequest::from_mechanism(mech)?),
            false => None,
        };
        let process = file.process.config()?;
        file.fem.check()?;
        if file.compare.harmonics < 1 {
            return bad("[compare] harmonics = 0: keep at least one harmonic of the crank angle (default 20)".into());
        }
        crate::compare_measured::check_spec(&file.compare.measured_spec())?;
        let identify = file.identify.spec(&file.compare)?;
        Ok(Settings {
            target,
            factor,
            method,
            rigid,
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
        let text = std::fs::read_to_string(&rec.mechanism).map_err(|e| PipelineError::Io {
            path: rec.mechanism.display().to_string(),
            reason: e.to_string(),
        })?;
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
    let stages = STAGES.len() + 2 * usize::from(from_motion)
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
            let calibration = run.calibrate("calibrate")?;
            let tracks = run.track("track", calibration.as_deref())?;
            (calibration, tracks)
        }
        true => {
            let start = run.calibrate("calibrate-start")?;
            let rough = run.track(TRACK_START, start.as_deref())?;
            let calibration = start
                .map(|s| run.calibrate_motion(&s, &rough))
                .transpose()?;
            let tracks = run.track("track", calibration.as_deref())?;
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

/// One recording's run: its pipeline file, inputs, mechanism, checked settings, and the runner
/// that keeps or reruns each stage. One method per stage, each returning its folder (or file).
pub(crate) struct RecordingRun<'r, 'e> {
    pub(crate) file: &'r PipelineFile,
    pub(crate) rec: &'r RecordingInputs,
    pub(crate) mech: &'r Mechanism,
    pub(crate) settings: Settings,
    pub(crate) runner: Runner<'e>,
    /// The calibration the tracks were made with (its frame's covariance goes into the
    /// forces' bands), once calibrated.
    pub(crate) calibration: Option<PathBuf>,
}

impl RecordingRun<'_, '_> {
    /// Calibrate as the stage `stage`, or reuse a calibration: the calibration file, None for a
    /// tracks table in m.
    fn calibrate(&mut self, stage: &str) -> Result<Option<PathBuf>, PipelineError> {
        use crate::calibrate::{calibrate, read_clicks, CalibrateRequest};
        let cal_source = match &self.rec.source {
            TracksSource::Video { calibration, .. } => Some(calibration),
            TracksSource::Table { calibration, .. } => calibration.as_ref(),
        };
        let (views, plane_files) = match cal_source {
            None => return Ok(None),
            Some(CalibrationSource::File(p)) => return Ok(Some(p.clone())),
            Some(CalibrationSource::Nominal { points }) => {
                return self.calibrate_nominal(stage, &points.clone()).map(Some)
            }
            Some(CalibrationSource::Views { views, plane }) => (views, plane),
        };
        let c = &self.file.calibrate;
        let target = self
            .settings
            .target
            .ok_or_else(|| PipelineError::Input("[calibrate]: no board".into()))?;
        let plane = match plane_files {
            PlaneFiles::Board { plane_view, clicks } => {
                let clicks = read_clicks(clicks)?;
                crate::calibrate::PlaneSource::Board {
                    view: plane_view.clone(),
                    origin: clicks.origin,
                    horizontal: clicks.horizontal,
                    click_sigma_px: clicks.click_sigma_px,
                }
            }
            PlaneFiles::Points(points) => crate::calibrate::read_points(points)?,
        };
        let req = CalibrateRequest {
            camera: crate::calibrate::CameraSource::Board {
                views: views.clone(),
                target,
            },
            plane: Some(plane),
        };
        let mut inputs = vec![("views", views.as_path())];
        inputs.extend(plane_files.inputs());
        let dir = self
            .runner
            .stage(stage, params(c), &inputs, &mut |tmp, progress| {
                progress(StageEvent::Progress("calibration views", 0.0));
                calibrate(&req, &tmp.join("calibration.yaml")).map(|_| ())
            })?;
        Ok(Some(dir.join("calibration.yaml")))
    }

    /// The calibration of a nominal camera (`[calibrate] nominal_camera`), its plane from the
    /// clicked `points`: the calibration file.
    fn calibrate_nominal(&mut self, stage: &str, points: &Path) -> Result<PathBuf, PipelineError> {
        use crate::calibrate::{calibrate, CalibrateRequest, CameraSource};
        let nominal =
            self.file.calibrate.nominal()?.ok_or_else(|| {
                PipelineError::Input("[calibrate] nominal_camera is missing".into())
            })?;
        let video = match &self.rec.source {
            TracksSource::Video { video, .. } => Some(video.as_path()),
            TracksSource::Table { .. } => None,
        };
        let nominal = crate::calibrate::with_video_focal(nominal, video)?;
        let req = CalibrateRequest {
            camera: CameraSource::Nominal(nominal),
            plane: Some(crate::calibrate::read_points(points)?),
        };
        let inputs = [("points", points)];
        let dir = self.runner.stage(
            stage,
            params(&self.file.calibrate),
            &inputs,
            &mut |tmp, progress| {
                progress(StageEvent::Progress("nominal camera", 0.0));
                calibrate(&req, &tmp.join("calibration.yaml")).map(|_| ())
            },
        )?;
        Ok(dir.join("calibration.yaml"))
    }

    /// The tracker's settings: `[track]`'s ([`TrackSection::config`]) with the mechanism.
    fn track_config(
        &self,
        corrections: Option<&Path>,
        templates: Option<&Path>,
    ) -> Result<flexbench_vision::track::TrackConfig, PipelineError> {
        self.file
            .track
            .config(Some(self.mech), corrections, templates)
    }

    /// The camera fitted to the motion of the tracks `tracks` made with the calibration
    /// `start` (`[calibrate] from_motion`): the calibration file.
    fn calibrate_motion(&mut self, start: &Path, tracks: &Path) -> Result<PathBuf, PipelineError> {
        let inputs = [
            ("start", start),
            ("tracks", tracks),
            ("mechanism", self.rec.mechanism.as_path()),
        ];
        let mech = self.mech;
        let dir = self.runner.stage(
            "calibrate",
            json!({ "from_motion": true }),
            &inputs,
            &mut |tmp, progress| {
                progress(StageEvent::Progress("the camera from the motion", 0.0));
                let cal = flexbench_vision::Calibration::read(start)?;
                let out = tmp.join("calibration.yaml");
                let (_, rec, _) =
                    crate::motion_calibration::calibrate_motion(&cal, mech, tracks, &out)?;
                for w in &rec.warnings {
                    progress(StageEvent::Warning(w));
                }
                Ok(())
            },
        )?;
        Ok(dir.join("calibration.yaml"))
    }

    /// Track the video as the stage `stage`, or import a table: the tracks table.
    fn track(&mut self, stage: &str, calibration: Option<&Path>) -> Result<PathBuf, PipelineError> {
        let file = self.file;
        let dir = match &self.rec.source {
            TracksSource::Video {
                video,
                corrections,
                templates,
                ..
            } => {
                let cal = calibration.map(Path::to_path_buf).unwrap_or_default();
                let cfg = self.track_config(corrections.as_deref(), templates.as_deref())?;
                let (markers, alpha) = (cfg.markers.clone(), cfg.alpha);
                let mut inputs = vec![
                    ("video", video.as_path()),
                    ("calibration", cal.as_path()),
                    ("mechanism", self.rec.mechanism.as_path()),
                ];
                if let Some(c) = corrections {
                    inputs.push(("corrections", c));
                }
                if let Some(t) = templates {
                    inputs.push(("templates", t));
                }
                let mut parameters = json!({ "markers": markers, "threshold": file.track.threshold, "false_alarm": alpha,
                        "frame_rate": file.track.frame_rate, "capture_rate": file.track.capture_rate });
                // Keys given only when set, so that a run without them keeps its stage's key.
                for (k, v) in [
                    ("min_area", file.track.min_area),
                    ("max_area", file.track.max_area),
                ] {
                    if let Some(v) = v {
                        parameters[k] = json!(v);
                    }
                }
                if file.track.estimate_depth {
                    parameters["estimate_depth"] = json!(true);
                }
                if file.track.estimate_readout {
                    parameters["estimate_readout"] = json!(true);
                }
                if let Some(r) = file.track.readout_s {
                    parameters["readout_s"] = json!(r);
                }
                self.runner
                    .stage(stage, parameters, &inputs, &mut |tmp, progress| {
                        let out = tmp.join("tracks.parquet");
                        let (s, _) = crate::track::track(video, &cal, &cfg, &out, |k, n| {
                            progress(StageEvent::Progress("tracking", k as f64 / n.max(1) as f64))
                        })?;
                        // The start's tracks are wrong by the start's calibration, as the fit to
                        // the motion states: the final tracks' warnings are the ones to read.
                        for w in s.warnings().iter().filter(|_| stage != TRACK_START) {
                            progress(StageEvent::Warning(&format!("{}: {w}", video.display())));
                        }
                        Ok(())
                    })?
            }
            TracksSource::Table { tracks, .. } => {
                let inputs = &file.inputs;
                let mut ins: Vec<(&str, &Path)> = vec![("tracks", tracks.as_path())];
                if let Some(c) = calibration {
                    ins.push(("calibration", c));
                }
                let p = json!({ "unit": inputs.tracks_unit, "fps": inputs.tracks_fps, "markers": inputs.tracks_markers });
                self.runner.stage(stage, p, &ins, &mut |tmp, progress| {
                    progress(StageEvent::Progress("importing the tracks table", 0.0));
                    crate::track::import_tracks(
                        tracks,
                        inputs.tracks_unit.as_deref(),
                        inputs.tracks_fps,
                        inputs.tracks_markers.as_deref(),
                        calibration,
                        &tmp.join("tracks.parquet"),
                    )
                    .map(|_| ())
                })?
            }
        };
        Ok(dir.join("tracks.parquet"))
    }

    /// Process: kinematics and inverse dynamics with the run's mechanism file.
    fn process(&mut self, tracks: &Path) -> Result<PathBuf, PipelineError> {
        let (mech, path) = (self.mech, self.rec.mechanism.clone());
        self.process_with("process", tracks, mech, &path)
    }

    /// Process as the stage `stage` with the mechanism `mech` read from the file `mechanism`.
    pub(crate) fn process_with(
        &mut self,
        stage: &str,
        tracks: &Path,
        mech: &Mechanism,
        mechanism: &Path,
    ) -> Result<PathBuf, PipelineError> {
        let mut cfg = self.settings.process;
        let flags = tracks.with_file_name("flags.parquet");
        let flags = flags.exists().then_some(flags);
        let mut inputs = vec![("tracks", tracks), ("mechanism", mechanism)];
        if let Some(f) = &flags {
            inputs.push(("flags", f));
        }
        // The bench frame's covariance from the calibration the tracks were made with: the
        // calibration is then an input (its covariance can change where the tracks do not).
        let calibration = self.calibration.clone();
        if let Some(c) = &calibration {
            cfg.frame = crate::process::frame_covariance(c)?;
            if cfg.frame.is_some() {
                inputs.push(("calibration", c));
            }
        }
        self.runner.stage(
            stage,
            params(&self.file.process),
            &inputs,
            &mut |tmp, progress| {
                crate::process(tracks, flags.as_deref(), mech, &cfg, tmp, &mut *progress)
                    .map(|_| ())
            },
        )
    }

    /// FEM: the elastic lever, from the process stage's folder.
    fn fem(&mut self, process_dir: &Path) -> Result<PathBuf, PipelineError> {
        let f = &self.file.fem;
        let mechanism = self.rec.mechanism.as_path();
        let (bodies, forces, residuals) = (
            process_dir.join("bodies.parquet"),
            process_dir.join("forces.parquet"),
            process_dir.join("fit_residuals.parquet"),
        );
        let fem_cfg = f.config(Some(residuals.clone()))?;
        self.runner.stage(
            "fem",
            params(f),
            &[
                ("bodies", &bodies),
                ("forces", &forces),
                ("fit_residuals", &residuals),
                ("mechanism", mechanism),
            ],
            &mut |tmp, progress| {
                let (record, _) =
                    crate::fem::fem(&bodies, &forces, mechanism, &fem_cfg, tmp, |k, n| {
                        progress(StageEvent::Progress(
                            "modes along the cycle",
                            k as f64 / n.max(1) as f64,
                        ))
                    })?;
                for w in &record.warnings {
                    progress(StageEvent::Warning(w));
                }
                Ok(())
            },
        )
    }

    /// Compare: measured against simulated (where the mechanism has a crank to simulate by),
    /// and against the rig's measured table (when there is one), from the process stage's
    /// folder. The measured table is read and compared first; nothing is kept of a failure.
    fn compare(&mut self, process_dir: &Path) -> Result<PathBuf, PipelineError> {
        let mechanism = self.rec.mechanism.clone();
        self.compare_with("compare", process_dir, &mechanism)
    }

    /// Compare as the stage `stage`, the process folder `process_dir` made with the mechanism
    /// file `mechanism`.
    pub(crate) fn compare_with(
        &mut self,
        stage: &str,
        process_dir: &Path,
        mechanism: &Path,
    ) -> Result<PathBuf, PipelineError> {
        let harmonics = self.file.compare.harmonics;
        let spec = self.file.compare.measured_spec();
        let measured = self.rec.measured.clone();
        let (bodies, markers, forces) = (
            process_dir.join("bodies.parquet"),
            process_dir.join("markers.parquet"),
            process_dir.join("forces.parquet"),
        );
        let mut inputs: Vec<(&str, &Path)> = vec![
            ("bodies", &bodies),
            ("markers", &markers),
            ("forces", &forces),
            ("mechanism", mechanism),
        ];
        if let Some(m) = &measured {
            inputs.push(("measured", m));
        }
        self.runner.stage(
            stage,
            params(&self.file.compare),
            &inputs,
            &mut |tmp, progress| {
                progress(StageEvent::Progress("comparing", 0.0));
                let outcome = crate::compare_measured::compare_job(
                    process_dir,
                    mechanism,
                    harmonics,
                    measured.as_deref().map(|m| (m, &spec)),
                    tmp,
                )?;
                let said = [
                    outcome.simulated.map(|r| r.warnings),
                    outcome.measured.map(|r| r.warnings),
                ];
                for w in said.iter().flatten().flatten() {
                    progress(StageEvent::Warning(w));
                }
                Ok(())
            },
        )
    }

    /// Stage `name` ([`Runner::begin`]'s parameters and inputs) made by `body` into the folder
    /// it is given on a thread of its own, while `then` runs the stages after it (which must
    /// not read its results). Its progress is not shown (the stages beside have the bar), it
    /// ends in its own place among the stages, and its error comes first; the stages beside
    /// have then still run and kept their results.
    fn beside<R>(
        &mut self,
        (name, parameters, inputs): (&str, Value, &[(&str, &Path)]),
        body: impl FnOnce(&Path) -> Result<(), PipelineError> + Send,
        then: impl FnOnce(&mut Self) -> Result<R, PipelineError>,
    ) -> Result<(PathBuf, R), PipelineError> {
        let pending = match self.runner.begin(name, parameters, inputs)? {
            Begun::Kept(dir) => return Ok((dir, then(self)?)),
            Begun::Run(p) => p,
        };
        let tmp = pending.tmp.clone();
        let ((made, took), rest) = std::thread::scope(|s| {
            let job = s.spawn(|| {
                let clock = Instant::now();
                (body(&tmp), clock.elapsed())
            });
            let rest = then(self);
            let made = job.join().unwrap_or_else(|_| {
                let why = format!(
                    "the {name} stage's thread stopped unexpectedly: run it alone to see why"
                );
                (Err(PipelineError::Input(why)), Default::default())
            });
            (made, rest)
        });
        // Its time is its own work's, not the wait for the stages beside.
        let mut pending = pending;
        pending.clock = Instant::now().checked_sub(took).unwrap_or(pending.clock);
        let dir = self.runner.finish(pending, made)?;
        Ok((dir, rest?))
    }

    /// Smooth: the markers alone through the signal stage, beside `then` (the process and the
    /// stages after it, which do not read it).
    fn smooth_beside<R>(
        &mut self,
        tracks: &Path,
        then: impl FnOnce(&mut Self) -> Result<R, PipelineError>,
    ) -> Result<(PathBuf, R), PipelineError> {
        let s = &self.settings;
        let (factor, method, rigid) = (s.factor, s.method, s.rigid.clone());
        let mechanism = self.rec.mechanism.clone();
        let inputs = [("tracks", tracks), ("mechanism", mechanism.as_path())];
        let body = |tmp: &Path| {
            let out = tmp.join("markers.parquet");
            crate::smooth::smooth(tracks, factor, method, rigid, &out).map(|_| ())
        };
        self.beside(("smooth", params(&self.file.smooth), &inputs), body, then)
    }

    /// Overlay: the video with what the run made of it drawn on every frame, beside `then`
    /// (the fem and compare: neither reads the overlay, and the video's decoding and encoding
    /// leave a core's share free beside the lever's analysis).
    fn overlay_beside<R>(
        &mut self,
        calibration: &Path,
        tracks: &Path,
        process_dir: &Path,
        then: impl FnOnce(&mut Self) -> Result<R, PipelineError>,
    ) -> Result<(PathBuf, R), PipelineError> {
        let TracksSource::Video { video, .. } = &self.rec.source else {
            return Err(PipelineError::Input(
                "the overlay needs the recording's video".into(),
            ));
        };
        let (flags, bodies) = (
            tracks.with_file_name("flags.parquet"),
            process_dir.join("bodies.parquet"),
        );
        // The process stage's residual flags (absent from a process folder of before them).
        let fit_flags = process_dir.join("fit_flags.parquet");
        let mut tables = vec![flags.as_path()];
        tables.extend(fit_flags.exists().then_some(fit_flags.as_path()));
        let mut inputs = vec![
            ("video", video.as_path()),
            ("calibration", calibration),
            ("tracks", tracks),
            ("flags", &flags),
            ("bodies", &bodies),
            ("mechanism", &self.rec.mechanism),
        ];
        inputs.extend(
            fit_flags
                .exists()
                .then_some(("fit_flags", fit_flags.as_path())),
        );
        let overlay_inputs = crate::overlay::OverlayInputs {
            video,
            calibration,
            tracks,
            flags: &tables,
            bodies: Some(&bodies),
            mechanism: self.mech,
            plain: false,
        };
        let body =
            |tmp: &Path| crate::overlay::overlay(&overlay_inputs, tmp, |_, _| {}).map(|_| ());
        self.beside(("overlay", params(&self.file.overlay), &inputs), body, then)
    }

    /// Report: every stage's figures and numbers on one page.
    fn report(
        &mut self,
        dirs: &crate::report::StageDirs,
        manifest: &Manifest,
    ) -> Result<PathBuf, PipelineError> {
        let title = self
            .file
            .report
            .title
            .clone()
            .unwrap_or_else(|| format!("flexbench: recording {}", self.rec.name));
        let mut ins: Vec<(&str, &Path)> = vec![
            ("track", &dirs.track),
            ("smooth", &dirs.smooth),
            ("process", &dirs.process),
        ];
        if let Some(f) = &dirs.fem {
            ins.push(("fem", f));
        }
        if let Some(c) = &dirs.compare {
            ins.push(("compare", c));
        }
        if let Some(c) = &dirs.calibrate {
            ins.push(("calibrate", c));
        }
        if let Some(i) = &dirs.identified {
            ins.push(("identify", &i.identify));
            ins.push(("process-identified", &i.process));
            if let Some(c) = &i.compare {
                ins.push(("compare-identified", c));
            }
        }
        let (mech, csv_units) = (self.mech, self.file.report.csv_units);
        let mut parameters = json!({ "title": title, "manifest": manifest });
        if csv_units {
            parameters["csv_units"] = json!(true);
        }
        self.runner
            .stage("report", parameters, &ins, &mut |tmp, progress| {
                let page = crate::report::ReportPage {
                    title: &title,
                    csv_units,
                };
                crate::report::report(&page, dirs, mech, manifest, tmp, &mut *progress).map(|_| ())
            })
    }
}

/// The manifest before the stages: build, inputs' hashes, parameters, seed. Everything needed to
/// repeat the run exactly, and nothing that changes between two runs (no dates, no wall times).
fn manifest(
    file: &PipelineFile,
    pipeline_path: &Path,
    rec: &RecordingInputs,
    runner: &mut Runner,
) -> Result<Manifest, PipelineError> {
    let mut inputs = BTreeMap::new();
    // The stages' own hashes of their inputs, reused (the video and the views are read once).
    let mut add = |k: &str, p: &Path| -> Result<(), PipelineError> {
        let input = InputFile {
            path: p.display().to_string(),
            sha256: runner.hash(p)?,
        };
        inputs.insert(k.to_string(), input);
        Ok(())
    };
    add("pipeline_file", pipeline_path)?;
    add("mechanism", &rec.mechanism)?;
    match &rec.source {
        TracksSource::Video {
            video,
            calibration,
            corrections,
            templates,
        } => {
            add("video", video)?;
            if let Some(c) = corrections {
                add("corrections", c)?;
            }
            if let Some(t) = templates {
                add("templates", t)?;
            }
            match calibration {
                CalibrationSource::File(p) => add("calibration", p)?,
                CalibrationSource::Nominal { points } => add("points", points)?,
                CalibrationSource::Views { views, plane } => {
                    add("views", views)?;
                    for (name, file) in plane.inputs() {
                        add(name, file)?;
                    }
                }
            }
        }
        TracksSource::Table {
            tracks,
            calibration,
        } => {
            add("tracks", tracks)?;
            if let Some(CalibrationSource::File(p)) = calibration {
                add("calibration", p)?;
            }
        }
    }
    if let Some(m) = &rec.measured {
        add("measured", m)?;
    }
    Ok(Manifest {
        build: runner.build.clone(),
        flexbench: env!("CARGO_PKG_VERSION").into(),
        inputs,
        opencv: flexbench_vision::opencv_version(),
        parameters: params(file),
        recording: rec.name.clone(),
        repeat: format!("flexbench run {}", pipeline_path.display()),
        seed: rec.seed,
        stages: Vec::new(),
    })
}

/// The manifest with the stages as they ran or were kept.
fn with_stages(manifest: Manifest, stamps: &[StageStamp]) -> Manifest {
    let stages = stamps
        .iter()
        .map(|s| StageEntry {
            inputs: s.inputs.clone(),
            key: s.key.clone(),
            outputs: s.outputs.clone(),
            stage: s.stage.clone(),
        })
        .collect();
    Manifest { stages, ..manifest }
}

/// Whether a folder is a recording (a video or a tracks table in it).
fn is_recording(dir: &Path) -> bool {
    find_video(dir).is_some()
        || dir.join("tracks.parquet").exists()
        || dir.join("tracks.csv").exists()
}

/// The recording folders named by `paths`: each a recording folder, or a folder of them (its
/// sub-folders that hold a video or a tracks table, sorted by name).
pub fn discover_recordings(paths: &[PathBuf]) -> Result<Vec<PathBuf>, PipelineError> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            return Err(PipelineError::Input(format!("{}: not a folder; give recording folders (video.mp4, views/, plane-view.png, clicks.toml) or a folder of them", p.display())));
        }
        if is_recording(p) {
            out.push(p.clone());
            continue;
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| PipelineError::Io {
                path: p.display().to_string(),
                reason: e.to_string(),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|d| d.is_dir())
            .collect();
        subs.sort();
        let before = out.len();
        // A sub-folder is taken when it looks like a recording; a broken one is still taken (it
        // fails with its own message), so only folders with no file at all are passed over.
        for s in subs {
            if is_recording(&s)
                || std::fs::read_dir(&s)
                    .map(|mut r| r.next().is_some())
                    .unwrap_or(false)
            {
                out.push(s);
            }
        }
        if out.len() == before {
            return Err(PipelineError::Input(format!(
                "{}: no recording in it (a folder with video.mp4 or tracks.csv)",
                p.display()
            )));
        }
    }
    Ok(out)
}

/// One recording of a batch: its run or its error.
#[derive(Debug)]
pub struct BatchItem {
    /// The recording folder.
    pub folder: PathBuf,
    /// The run's summary, or why it failed.
    pub result: Result<RunSummary, String>,
}

/// The per-recording `[inputs]` of a batch: a `recording.toml` in the recording folder, paths
/// relative to it; none: the folder's usual files.
fn recording_inputs(folder: &Path) -> Result<Inputs, PipelineError> {
    let f = folder.join("recording.toml");
    if !f.exists() {
        return Ok(Inputs::default());
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RecordingFile {
        #[serde(default)]
        inputs: Inputs,
    }
    let text = std::fs::read_to_string(&f)
        .map_err(|e| PipelineError::Input(format!("{}: {e}", f.display())))?;
    let r: RecordingFile = toml::from_str(&text).map_err(|source| PipelineError::Toml {
        what: f.display().to_string(),
        source,
    })?;
    Ok(r.inputs)
}

/// Run one recording folder of a batch into `out/<folder name>`.
pub fn run_folder(
    file: &PipelineFile,
    pipeline_path: &Path,
    mechanism: &Path,
    folder: &Path,
    out: &Path,
    events: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary, PipelineError> {
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "recording".into());
    let inputs = recording_inputs(folder)?;
    let nominal = file.calibrate.nominal_camera.is_some();
    let rec = RecordingInputs::resolve(&name, Some(folder), &inputs, folder, mechanism, nominal)?;
    let mut file = file.clone();
    file.inputs = inputs;
    run_recording(&file, pipeline_path, &rec, &out.join(&name), events)
}

/// Run every recording folder with `jobs` at once (each recording's stages in order); a failed
/// recording is reported and the others go on. `events` gets each recording's events with its
/// name. Writes the batch summary (`batch-summary.csv`, `.json`, `.html`) into `out`.
pub fn run_batch(
    file: &PipelineFile,
    pipeline_path: &Path,
    mechanism: &Path,
    folders: &[PathBuf],
    out: &Path,
    jobs: usize,
    events: &(dyn Fn(&str, RunEvent) + Sync),
) -> Result<(Vec<BatchItem>, Vec<PathBuf>), PipelineError> {
    crate::ensure_dir(out)?;
    let results = flexbench_contracts::parallel::map_in_order(jobs, folders, |folder| {
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        run_folder(file, pipeline_path, mechanism, folder, out, &mut |e| {
            events(&name, e)
        })
        .map_err(|e| e.to_string())
    });
    let items: Vec<BatchItem> = folders
        .iter()
        .zip(results)
        .map(|(f, result)| BatchItem {
            folder: f.clone(),
            result,
        })
        .collect();
    let files = batch_summary(&items, out)?;
    Ok((items, files))
}

/// A column of the batch summary, the factor to its unit, and its value in the report's record.
type BatchColumnOf = (
    flexbench_report::batch::BatchColumn,
    f64,
    fn(&ReportRecord) -> Option<f64>,
);

/// The batch summary's number columns: each recording's key numbers from its report's record.
fn batch_columns() -> [BatchColumnOf; 9] {
    use flexbench_report::batch::BatchColumn;
    let col = |key, label, decimals| BatchColumn {
        key,
        label,
        decimals,
    };
    [
        (col("frame_rate_hz", "frame rate (Hz)", 1), 1.0, |k| {
            Some(k.frame_rate_hz)
        }),
        (col("crank_speed_rpm", "crank speed (rpm)", 2), 1.0, |k| {
            Some(k.crank_speed_rpm)
        }),
        (
            col("largest_acceleration_m_s2", "largest |a| (m/s^2)", 2),
            1.0,
            |k| Some(k.largest_acceleration_m_s2),
        ),
        (col("peak_force_B_n", "peak |B| (N)", 1), 1.0, |k| {
            k.peaks.b_n
        }),
        (col("peak_force_C_n", "peak |C'| (N)", 1), 1.0, |k| {
            k.peaks.c_n
        }),
        (
            col("acceleration_nrmse_mean", "accel. NRMSE mean (%)", 2),
            100.0,
            |k| Some(k.acceleration_nrmse_mean),
        ),
        (
            col("acceleration_nrmse_max", "accel. NRMSE max (%)", 2),
            100.0,
            |k| Some(k.acceleration_nrmse_max),
        ),
        (
            col("force_nrmse_max", "force NRMSE max (%)", 2),
            100.0,
            |k| Some(k.force_nrmse_max),
        ),
        (col("fit_rms_mm", "fit RMS (mm)", 3), 1.0, |k| {
            Some(k.fit_rms_mm)
        }),
    ]
}

/// One recording's row of the batch summary and its entry in `batch-summary.json`.
fn batch_row(
    it: &BatchItem,
    out: &Path,
    cols: &[BatchColumnOf],
) -> (flexbench_report::batch::BatchRow, Value) {
    use flexbench_report::batch::BatchRow;
    let recording = it
        .folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match &it.result {
        Ok(r) => {
            // An unreadable record leaves its cells empty (the batch goes on).
            let k = ReportRecord::read(&r.report.with_file_name("summary.json")).ok();
            let modes = |m: usize, e: usize| {
                let v = *k.as_ref()?.mode_frequency_ranges_hz.get(m)?.get(e)?;
                v.is_finite().then_some(v)
            };
            let report = r
                .report
                .strip_prefix(out)
                .unwrap_or(&r.report)
                .to_string_lossy()
                .into_owned();
            let values = cols
                .iter()
                .map(|c| {
                    k.as_ref()
                        .and_then(c.2)
                        .filter(|v| v.is_finite())
                        .map(|v| v * c.1)
                })
                .collect();
            let entry = json!({ "recording": recording, "status": "ok", "report": report, "summary": k.as_ref().map(params) });
            let row = BatchRow::Done(flexbench_report::batch::BatchDone {
                recording,
                values,
                mode1: [modes(0, 0), modes(0, 1)],
                mode3: [modes(2, 0), modes(2, 1)],
                report,
            });
            (row, entry)
        }
        Err(e) => {
            let entry = json!({ "recording": recording, "status": "failed", "error": e });
            let row = BatchRow::Failed {
                recording,
                error: e.clone(),
            };
            (row, entry)
        }
    }
}

/// The batch summary: one row per recording (its key numbers, or its error), as CSV, HTML and
/// JSON in `out`.
fn batch_summary(items: &[BatchItem], out: &Path) -> Result<Vec<PathBuf>, PipelineError> {
    use flexbench_report::batch::{batch_csv, batch_html, BatchColumn, BatchRow};
    let cols = batch_columns();
    let (rows, json_rows): (Vec<BatchRow>, Vec<Value>) =
        items.iter().map(|it| batch_row(it, out, &cols)).unzip();
    let columns: Vec<BatchColumn> = cols.iter().map(|c| c.0).collect();
    let w = |p: PathBuf, b: &str| -> Result<PathBuf, PipelineError> {
        flexbench_contracts::atomic::write_bytes(&p, b.as_bytes()).map_err(|e| {
            PipelineError::Io {
                path: p.display().to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(p)
    };
    Ok(vec![
        w(out.join("batch-summary.csv"), &batch_csv(&columns, &rows))?,
        w(out.join("batch-summary.html"), &batch_html(&columns, &rows))?,
        crate::write_json(
            &out.join("batch-summary.json"),
            &json!({ "recordings": json_rows }),
        )?,
    ])
}

/// What `flexbench run` (and the Python package's `run`) resolves from a pipeline file and its
/// arguments: the file, its folder, the mechanism, the output folder and the batch.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The pipeline file, read and checked.
    pub file: PipelineFile,
    /// Its path.
    pub pipeline: PathBuf,
    /// Its folder: paths in it are relative to it.
    pub base: PathBuf,
    /// The mechanism file (`[run] mechanism`).
    pub mechanism: PathBuf,
    /// The output folder: the argument, else `[run] out`, else `out/<pipeline file's stem>`.
    pub out: PathBuf,
    /// The pipeline file's stem: the recording's name when it has no folder.
    pub stem: String,
    /// The batch's recording folders (or folders of them): the argument, else
    /// `[run] recordings`; empty for one recording.
    pub batch: Vec<PathBuf>,
}

impl RunPlan {
    /// Read the pipeline file and resolve its paths; `out` and `recordings` override
    /// `[run] out` and `[run] recordings`.
    pub fn resolve(
        pipeline: &Path,
        out: Option<PathBuf>,
        recordings: Vec<PathBuf>,
    ) -> Result<RunPlan, PipelineError> {
        let file = PipelineFile::load(pipeline)?;
        let base = pipeline
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let mechanism = file.run.mechanism.as_ref().ok_or_else(|| {
            PipelineError::Input(format!("{}: [run] mechanism is missing: give the mechanism file (e.g. mechanism = \"wind-pump.toml\")", pipeline.display()))
        })?;
        let mechanism = clean_path(&base.join(mechanism));
        let stem = pipeline
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        let out = out
            .or_else(|| file.run.out.as_ref().map(|o| clean_path(&base.join(o))))
            .unwrap_or_else(|| PathBuf::from("out").join(&stem));
        let batch = match recordings.is_empty() {
            false => recordings,
            true => file
                .run
                .recordings
                .iter()
                .map(|r| clean_path(&base.join(r)))
                .collect(),
        };
        Ok(RunPlan {
            file,
            pipeline: pipeline.to_path_buf(),
            base,
            mechanism,
            out,
            stem,
            batch,
        })
    }

    /// The one recording's name (its folder's, else the pipeline file's stem) and inputs
    /// (`[run] recording` and `[inputs]`), checked to exist.
    pub fn recording(&self) -> Result<(String, RecordingInputs), PipelineError> {
        let folder = self
            .file
            .run
            .recording
            .as_ref()
            .map(|r| clean_path(&self.base.join(r)));
        let name = folder
            .as_ref()
            .and_then(|f| f.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.stem.clone());
        let rec = RecordingInputs::resolve(
            &name,
            folder.as_deref(),
            &self.file.inputs,
            &self.base,
            &self.mechanism,
            self.file.calibrate.nominal_camera.is_some(),
        )?;
        Ok((name, rec))
    }
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
        assert!(no_marker.contains("marker is missing"), "{no_marker}");
        let no_dict = section("charuco = \"9x7\"\nsquare = 0.04\nmarker = 0.026")
            .unwrap()
            .target()
            .unwrap_err()
            .to_string();
        assert!(no_dict.contains("dictionary is missing"), "{no_dict}");
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
