//! The run's manifest: its inputs with their hashes, the stages and their keys.

use super::*;

/// The manifest before the stages: build, inputs' hashes, parameters, seed. Everything needed to
/// repeat the run exactly, and nothing that changes between two runs (no dates, no wall times).
pub(super) fn manifest(
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
pub(super) fn with_stages(manifest: Manifest, stamps: &[StageStamp]) -> Manifest {
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
