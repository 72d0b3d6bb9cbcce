//! One recording's stages in their order, each through the runner with its inputs and settings:
//! calibrate, track, smooth, process, overlay, fem, compare, identify, report.

use super::*;
use crate::job::{
    CalibrateInputs, CalibrateJob, CompareInputs, CompareJob, FemInputs, FemJob, Job, OverlayJob,
    ProcessInputs, ProcessJob, SmoothInputs, SmoothJob, TrackInputs, TrackJob,
};

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
    /// Calibrate as the stage `stage` through the calibrate job (a board's views with the
    /// bench plane from its view and clicks or from clicked points; a nominal camera, its
    /// plane from the clicked points), or reuse a calibration: the calibration file, None for a
    /// tracks table in m.
    pub(super) fn calibrate(&mut self, stage: StageName) -> Result<Option<PathBuf>, PipelineError> {
        let rec = self.rec;
        let (cal_source, video) = match &rec.source {
            TracksSource::Video {
                calibration, video, ..
            } => (Some(calibration), Some(video.as_path())),
            TracksSource::Table { calibration, .. } => (calibration.as_ref(), None),
        };
        let (views, plane, inputs) = match cal_source {
            None => return Ok(None),
            Some(CalibrationSource::File(p)) => return Ok(Some(p.clone())),
            Some(CalibrationSource::Nominal { points }) => {
                let plane = crate::calibrate::read_points(points)?;
                let mut inputs = vec![("points", points.as_path())];
                // The focal length then comes from the video's metadata: its stage key too.
                let nominal = self.file.calibrate.nominal()?;
                if let (true, Some(video)) = (nominal.is_some_and(|n| n.focal_from_video()), video)
                {
                    inputs.push(("video", video));
                }
                (None, plane, inputs)
            }
            Some(CalibrationSource::Views { views, plane }) => {
                let mut inputs = vec![("views", views.as_path())];
                inputs.extend(plane.inputs());
                (Some(views.as_path()), board_plane(plane)?, inputs)
            }
        };
        let job = CalibrateInputs {
            views,
            plane: Some(plane),
            video,
        };
        let section = &self.file.calibrate;
        let dir = self
            .runner
            .stage(stage, params(section), &inputs, &mut |tmp, events| {
                let out = tmp.join(crate::folders::CALIBRATION);
                CalibrateJob::run(section, &job, &out, events).map(|_| ())
            })?;
        Ok(Some(dir.join(crate::folders::CALIBRATION)))
    }

    /// The tracker's settings: `[track]`'s ([`TrackSection::config`]) with the mechanism.
    pub(super) fn track_config(
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
    pub(super) fn calibrate_motion(
        &mut self,
        start: &Path,
        tracks: &Path,
    ) -> Result<PathBuf, PipelineError> {
        let inputs = [
            ("start", start),
            ("tracks", tracks),
            ("mechanism", self.rec.mechanism.as_path()),
        ];
        let mech = self.mech;
        let dir = self.runner.stage(
            StageName::Calibrate,
            json!({ "from_motion": true }),
            &inputs,
            &mut |tmp, progress| {
                progress(StageEvent::Progress("the camera from the motion", 0.0));
                let cal = flexbench_vision::Calibration::read(start)?;
                let out = tmp.join(crate::folders::CALIBRATION);
                let (_, rec, _) =
                    crate::motion_calibration::calibrate_motion(&cal, mech, tracks, &out)?;
                for w in &rec.warnings {
                    progress(StageEvent::Warning(w));
                }
                Ok(())
            },
        )?;
        Ok(dir.join(crate::folders::CALIBRATION))
    }

    /// Track the video as the stage `stage`, or import a table: the tracks table.
    pub(super) fn track(
        &mut self,
        stage: StageName,
        calibration: Option<&Path>,
    ) -> Result<PathBuf, PipelineError> {
        // Long: the track stage's two sources (a video tracked, a table imported) and the runner's
        // call for each, in one place so that both write the same outputs.
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
                let parameters = track_parameters(&file.track, &markers, alpha);
                let job = TrackInputs {
                    video,
                    calibration: &cal,
                    mechanism: Some(self.mech),
                    corrections: corrections.as_deref(),
                    templates: templates.as_deref(),
                };
                self.runner
                    .stage(stage, parameters, &inputs, &mut |tmp, progress| {
                        let out = tmp.join(crate::folders::TRACKS);
                        // The start's tracks are wrong by the start's calibration, as the fit to
                        // the motion states: the final tracks' warnings are the ones to read.
                        let mut said = |e: StageEvent| match e {
                            StageEvent::Warning(_) if stage == StageName::TrackStart => {}
                            StageEvent::Warning(w) => {
                                progress(StageEvent::Warning(&format!("{}: {w}", video.display())))
                            }
                            other => progress(other),
                        };
                        TrackJob::run(&file.track, &job, &out, &mut said).map(|_| ())
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
                        &tmp.join(crate::folders::TRACKS),
                    )
                    .map(|_| ())
                })?
            }
        };
        Ok(dir.join(crate::folders::TRACKS))
    }

    /// Process: kinematics and inverse dynamics with the run's mechanism file.
    pub(super) fn process(&mut self, tracks: &Path) -> Result<PathBuf, PipelineError> {
        let (mech, path) = (self.mech, self.rec.mechanism.clone());
        self.process_with(StageName::Process, tracks, mech, &path)
    }

    /// Process as the stage `stage` with the mechanism `mech` read from the file `mechanism`.
    pub(crate) fn process_with(
        &mut self,
        stage: StageName,
        tracks: &Path,
        mech: &Mechanism,
        mechanism: &Path,
    ) -> Result<PathBuf, PipelineError> {
        let flags = tracks.with_file_name("flags.parquet");
        let flags = flags.exists().then_some(flags);
        let mut inputs = vec![("tracks", tracks), ("mechanism", mechanism)];
        if let Some(f) = &flags {
            inputs.push(("flags", f));
        }
        // The bench frame's covariance from the calibration the tracks were made with: the
        // calibration is then an input (its covariance can change where the tracks do not).
        let calibration = self.calibration.clone();
        let mut frame_from = None;
        if let Some(c) = &calibration {
            if crate::process::frame_covariance(c)?.is_some() {
                inputs.push(("calibration", c));
                frame_from = Some(c.as_path());
            }
        }
        let job = ProcessInputs {
            tracks,
            flags: flags.as_deref(),
            calibration: frame_from,
            mechanism: mech,
        };
        let section = &self.file.process;
        self.runner
            .stage(stage, params(section), &inputs, &mut |tmp, events| {
                ProcessJob::run(section, &job, tmp, events).map(|_| ())
            })
    }

    /// FEM: the elastic lever, from the process stage's folder.
    pub(super) fn fem(&mut self, process_dir: &Path) -> Result<PathBuf, PipelineError> {
        let f = &self.file.fem;
        let mechanism = self.rec.mechanism.as_path();
        let (bodies, forces, residuals) = (
            crate::folders::ProcessedFolder::new(process_dir)
                .table(crate::folders::ProcessedTable::Bodies),
            crate::folders::ProcessedFolder::new(process_dir)
                .table(crate::folders::ProcessedTable::Forces),
            crate::folders::ProcessedFolder::new(process_dir)
                .table(crate::folders::ProcessedTable::FitResiduals),
        );
        let job = FemInputs {
            bodies: &bodies,
            forces: &forces,
            measured: Some(&residuals),
            mechanism,
        };
        self.runner.stage(
            StageName::Fem,
            params(f),
            &[
                ("bodies", &bodies),
                ("forces", &forces),
                ("fit_residuals", &residuals),
                ("mechanism", mechanism),
            ],
            &mut |tmp, events| FemJob::run(f, &job, tmp, events).map(|_| ()),
        )
    }

    /// Compare: measured against simulated (where the mechanism has a crank to simulate by),
    /// and against the rig's measured table (when there is one), from the process stage's
    /// folder. The measured table is read and compared first; nothing is kept of a failure.
    pub(super) fn compare(&mut self, process_dir: &Path) -> Result<PathBuf, PipelineError> {
        let mechanism = self.rec.mechanism.clone();
        self.compare_with(StageName::Compare, process_dir, &mechanism)
    }

    /// Compare as the stage `stage`, the process folder `process_dir` made with the mechanism
    /// file `mechanism`.
    pub(crate) fn compare_with(
        &mut self,
        stage: StageName,
        process_dir: &Path,
        mechanism: &Path,
    ) -> Result<PathBuf, PipelineError> {
        let measured = self.rec.measured.clone();
        let (bodies, markers, forces) = (
            crate::folders::ProcessedFolder::new(process_dir)
                .table(crate::folders::ProcessedTable::Bodies),
            crate::folders::ProcessedFolder::new(process_dir)
                .table(crate::folders::ProcessedTable::Markers),
            crate::folders::ProcessedFolder::new(process_dir)
                .table(crate::folders::ProcessedTable::Forces),
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
        let section = &self.file.compare;
        let job = CompareInputs {
            processed: process_dir,
            mechanism,
            measured: measured.as_deref(),
        };
        self.runner
            .stage(stage, params(section), &inputs, &mut |tmp, events| {
                CompareJob::run(section, &job, tmp, events).map(|_| ())
            })
    }

    /// Stage `name` ([`Runner::begin`]'s parameters and inputs) made by `body` into the folder
    /// it is given on a thread of its own, while `then` runs the stages after it (which must
    /// not read its results). Its progress is not shown (the stages beside have the bar), it
    /// ends in its own place among the stages, and its error comes first; the stages beside
    /// have then still run and kept their results.
    pub(super) fn beside<R>(
        &mut self,
        (name, parameters, inputs): (StageName, Value, &[(&str, &Path)]),
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
    pub(super) fn smooth_beside<R>(
        &mut self,
        tracks: &Path,
        then: impl FnOnce(&mut Self) -> Result<R, PipelineError>,
    ) -> Result<(PathBuf, R), PipelineError> {
        let (section, mech) = (&self.file.smooth, self.mech);
        let mechanism = self.rec.mechanism.clone();
        let inputs = [("tracks", tracks), ("mechanism", mechanism.as_path())];
        let body = |tmp: &Path| {
            let out = tmp.join(crate::folders::SMOOTHED_MARKERS);
            let job = SmoothInputs {
                tracks,
                mechanism: Some(mech),
            };
            SmoothJob::run(section, &job, &out, &mut |_| {}).map(|_| ())
        };
        self.beside(
            (StageName::Smooth, params(&self.file.smooth), &inputs),
            body,
            then,
        )
    }

    /// Overlay: the video with what the run made of it drawn on every frame, beside `then`
    /// (the fem and compare: neither reads the overlay, and the video's decoding and encoding
    /// leave a core's share free beside the lever's analysis).
    pub(super) fn overlay_beside<R>(
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
            crate::folders::ProcessedFolder::new(process_dir)
                .table(crate::folders::ProcessedTable::Bodies),
        );
        // The process stage's residual flags (absent from a process folder of before them).
        let fit_flags = crate::folders::ProcessedFolder::new(process_dir)
            .table(crate::folders::ProcessedTable::FitFlags);
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
        };
        let section = &self.file.overlay;
        let body =
            |tmp: &Path| OverlayJob::run(section, &overlay_inputs, tmp, &mut |_| {}).map(|_| ());
        self.beside(
            (StageName::Overlay, params(&self.file.overlay), &inputs),
            body,
            then,
        )
    }

    /// Report: every stage's figures and numbers on one page.
    pub(super) fn report(
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
            .stage(StageName::Report, parameters, &ins, &mut |tmp, progress| {
                let page = crate::report::ReportPage {
                    title: &title,
                    csv_units,
                };
                crate::report::report(&page, dirs, mech, manifest, tmp, &mut *progress).map(|_| ())
            })
    }
}

/// The track stage's key parameters: the markers, the flags' level and the `[track]` keys
/// (those that are optional only when set, so that a run without them keeps its stage's key).
fn track_parameters(
    track: &crate::pipeline_file::TrackSection,
    markers: &[String],
    alpha: f64,
) -> Value {
    let mut parameters = json!({ "markers": markers, "threshold": track.threshold, "false_alarm": alpha,
            "frame_rate": track.frame_rate, "capture_rate": track.capture_rate });
    for (k, v) in [("min_area", track.min_area), ("max_area", track.max_area)] {
        if let Some(v) = v {
            parameters[k] = json!(v);
        }
    }
    if track.estimate_depth {
        parameters["estimate_depth"] = json!(true);
    }
    if track.estimate_readout {
        parameters["estimate_readout"] = json!(true);
    }
    if let Some(r) = track.readout_s {
        parameters["readout_s"] = json!(r);
    }
    parameters
}

/// The bench plane a board's calibration reads: the plane view with its clicks file, or the
/// clicked points of known bench position.
fn board_plane(files: &PlaneFiles) -> Result<crate::calibrate::PlaneSource, PipelineError> {
    Ok(match files {
        PlaneFiles::Board { plane_view, clicks } => {
            let clicks = crate::calibrate::read_clicks(clicks)?;
            crate::calibrate::PlaneSource::Board {
                view: plane_view.clone(),
                origin: clicks.origin,
                horizontal: clicks.horizontal,
                click_sigma_px: clicks.click_sigma_px,
            }
        }
        PlaneFiles::Points(points) => crate::calibrate::read_points(points)?,
    })
}
