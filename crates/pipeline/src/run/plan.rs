//! The run's plan (`RunPlan`): the pipeline file's paths, output folder and batch resolved, as the
//! command line and the Python package run it.

use super::*;

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
