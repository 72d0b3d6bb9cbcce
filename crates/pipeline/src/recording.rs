//! A recording's inputs: the files of `[inputs]` (relative to the pipeline file) and the
//! recording folder's usual ones, resolved to paths that exist, or an error that names the
//! missing file and how to give it.

use std::path::{Path, PathBuf};

use crate::pipeline_file::Inputs;
use crate::runner::clean_path;
use crate::PipelineError;

/// One recording's files, resolved to paths that exist.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingInputs {
    /// Name of the recording (its folder's name).
    pub name: String,
    /// Where the tracks come from.
    pub source: TracksSource,
    /// The mechanism file.
    pub mechanism: PathBuf,
    /// The rig's measured table, when there is one.
    pub measured: Option<PathBuf>,
    /// Seed of a rendered recording (its `camera.toml`), recorded in the manifest.
    pub seed: Option<u64>,
}

/// Where a run's tracks come from.
#[derive(Debug, Clone, PartialEq)]
pub enum TracksSource {
    /// A video tracked here, with a calibration made here or reused.
    Video {
        /// The video.
        video: PathBuf,
        /// The calibration.
        calibration: CalibrationSource,
        /// The user's corrections of the tracking, when there are any.
        corrections: Option<PathBuf>,
        /// The features clicked once for template markers, when there are any.
        templates: Option<PathBuf>,
    },
    /// A tracks table made elsewhere (long contract format or wide CSV).
    Table {
        /// The table.
        tracks: PathBuf,
        /// A calibration, for a wide CSV in pixels.
        calibration: Option<CalibrationSource>,
    },
}

/// Where a run's calibration comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum CalibrationSource {
    /// A calibration file reused as it is.
    File(PathBuf),
    /// No board: a nominal camera (`[calibrate] nominal_camera`), its plane from clicked
    /// points of known bench position.
    Nominal {
        /// The clicked points (`points.toml`).
        points: PathBuf,
    },
    /// Chessboard views calibrated here, with the bench plane's files.
    Views {
        /// Folder of views.
        views: PathBuf,
        /// Where the bench plane comes from.
        plane: PlaneFiles,
    },
}

/// The files the bench plane comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PlaneFiles {
    /// The board in the lever's plane (`plane-view.png`) and the clicked pixels of A and the
    /// horizontal (`clicks.toml`).
    Board {
        /// The plane view.
        plane_view: PathBuf,
        /// The clicks.
        clicks: PathBuf,
    },
    /// Clicked points of known bench position (`points.toml`).
    Points(PathBuf),
}

impl PlaneFiles {
    /// The stage's inputs: (name, file).
    pub(crate) fn inputs(&self) -> Vec<(&'static str, &Path)> {
        match self {
            PlaneFiles::Board { plane_view, clicks } => {
                vec![
                    ("plane_view", plane_view.as_path()),
                    ("clicks", clicks.as_path()),
                ]
            }
            PlaneFiles::Points(points) => vec![("points", points.as_path())],
        }
    }
}

pub(crate) fn find_video(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            let ext = p
                .extension()
                .map(|s| s.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            stem == "video" && ["mp4", "avi", "mkv", "mov", "m4v", "webm"].contains(&ext.as_str())
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

impl RecordingInputs {
    /// Resolve a recording's inputs: `inputs` (relative to `base`) first, then the recording
    /// folder's usual files. Says which file is missing and how to give it.
    pub fn resolve(
        name: &str,
        folder: Option<&Path>,
        inputs: &Inputs,
        base: &Path,
        mechanism: &Path,
        nominal: bool,
    ) -> Result<RecordingInputs, PipelineError> {
        if let Some(d) = folder.filter(|d| !d.is_dir()) {
            return Err(PipelineError::Input(format!("recording {name}: the recording folder {} does not exist; check [run] recording (paths are relative to the pipeline file)", d.display())));
        }
        let look = Lookup { name, folder, base };
        let tracks = match look.given(&inputs.tracks) {
            Some(t) => Some(look.exists(t, "tracks")?),
            None => None,
        };
        let video = match look.given(&inputs.video) {
            Some(v) => Some(look.exists(v, "video")?),
            None if tracks.is_none() => folder.and_then(find_video),
            None => None,
        };
        let tracks = tracks.or_else(|| {
            if video.is_none() {
                look.usual("tracks.parquet")
                    .or_else(|| look.usual("tracks.csv"))
            } else {
                None
            }
        });
        let source = match (video, tracks) {
            (Some(video), _) => TracksSource::Video {
                video,
                calibration: look.calibration(inputs, nominal)?,
                corrections: match look.given(&inputs.corrections) {
                    Some(c) => Some(look.exists(c, "corrections")?),
                    None => look.usual("corrections.toml"),
                },
                templates: match look.given(&inputs.templates) {
                    Some(c) => Some(look.exists(c, "templates")?),
                    None => look.usual("templates.toml"),
                },
            },
            (None, Some(tracks)) => {
                let px = inputs.tracks_unit.as_deref() == Some("px");
                TracksSource::Table {
                    tracks,
                    calibration: if px {
                        Some(look.calibration(inputs, nominal)?)
                    } else {
                        None
                    },
                }
            }
            (None, None) => {
                return Err(look.missing(
                    "video or tracks table",
                    "video or tracks",
                    "video.mp4 (or .avi, .mkv, .mov)",
                ))
            }
        };
        let seed = folder
            .and_then(|d| std::fs::read_to_string(d.join("camera.toml")).ok())
            .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
            .and_then(|t| t.get("seed").and_then(|s| s.as_integer()))
            .map(|s| s as u64);
        let measured = match look.given(&inputs.measured) {
            Some(m) => Some(look.exists(m, "measured")?),
            None => look.usual("measured.csv"),
        };
        Ok(RecordingInputs {
            name: name.to_string(),
            source,
            mechanism: mechanism.to_path_buf(),
            measured,
            seed,
        })
    }
}

/// Where a recording's inputs are looked up: the `[inputs]` paths (relative to `base`) and
/// the recording folder's usual files; its errors name the recording and how to give a file.
struct Lookup<'a> {
    name: &'a str,
    folder: Option<&'a Path>,
    base: &'a Path,
}

impl Lookup<'_> {
    /// A path given in `[inputs]`, from the pipeline file's folder.
    fn given(&self, p: &Option<PathBuf>) -> Option<PathBuf> {
        p.as_ref().map(|p| clean_path(&self.base.join(p)))
    }

    /// The recording folder's file `f`, when it is there.
    fn usual(&self, f: &str) -> Option<PathBuf> {
        self.folder.map(|d| d.join(f)).filter(|p| p.exists())
    }

    /// The error of an input found nowhere: `what` it is, the `[inputs]` key and the usual file.
    fn missing(&self, what: &str, key: &str, usual: &str) -> PipelineError {
        let name = self.name;
        PipelineError::Input(match self.folder {
            Some(d) => format!("recording {name}: no {what}; put {usual} in the recording folder ({}) or give [inputs] {key} in the pipeline file", d.display()),
            None => format!("recording {name}: no {what}; give [run] recording (a folder with {usual}) or [inputs] {key} in the pipeline file"),
        })
    }

    /// A given path, or the error that it does not exist.
    fn exists(&self, p: PathBuf, key: &str) -> Result<PathBuf, PipelineError> {
        if p.exists() {
            Ok(p)
        } else {
            Err(PipelineError::Input(format!(
                "recording {}: [inputs] {key} = {}: no such file or folder",
                self.name,
                p.display()
            )))
        }
    }

    /// The calibration: a file given, or views with the plane view and the clicks (given or
    /// the folder's), or the folder's calibration file.
    fn calibration(
        &self,
        inputs: &Inputs,
        nominal: bool,
    ) -> Result<CalibrationSource, PipelineError> {
        if let Some(c) = self.given(&inputs.calibration) {
            return Ok(CalibrationSource::File(self.exists(c, "calibration")?));
        }
        if nominal {
            let points = self.given_or_usual(
                &inputs.points,
                "points",
                "points.toml",
                "clicked points of known bench position, for the nominal camera's plane",
            )?;
            return Ok(CalibrationSource::Nominal { points });
        }
        let views = match self.given(&inputs.views) {
            Some(v) => self.exists(v, "views")?,
            None => match self.usual("views") {
                Some(v) => v,
                None => match self.usual("calibration.yaml") {
                    Some(c) => return Ok(CalibrationSource::File(c)),
                    None => {
                        return Err(self.missing(
                            "calibration",
                            "calibration (a file) or views",
                            "views/ (chessboard views) or calibration.yaml",
                        ))
                    }
                },
            },
        };
        let points = match self.given(&inputs.points) {
            Some(p) => Some(self.exists(p, "points")?),
            None => self.usual("points.toml"),
        };
        let plane = match points {
            Some(points) => PlaneFiles::Points(points),
            None => PlaneFiles::Board {
                plane_view: self.given_or_usual(
                    &inputs.plane_view,
                    "plane_view",
                    "plane-view.png",
                    "view of the board in the lever's plane (or points.toml)",
                )?,
                clicks: self.given_or_usual(
                    &inputs.clicks,
                    "clicks",
                    "clicks.toml",
                    "clicked pixels of A and the horizontal (or points.toml)",
                )?,
            },
        };
        Ok(CalibrationSource::Views { views, plane })
    }

    /// The file given as `[inputs] key`, else the folder's `usual` one; else the error that
    /// the `what` is missing.
    fn given_or_usual(
        &self,
        p: &Option<PathBuf>,
        key: &str,
        usual: &str,
        what: &str,
    ) -> Result<PathBuf, PipelineError> {
        match self.given(p) {
            Some(p) => self.exists(p, key),
            None => self
                .usual(usual)
                .ok_or_else(|| self.missing(what, key, usual)),
        }
    }
}
