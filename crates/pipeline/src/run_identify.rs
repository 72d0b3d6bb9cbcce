//! A run's identification (`[identify] enabled = true`): the identify stage on the process
//! stage's bodies (and the rig's measured table), then `process` and `compare` again with the
//! identified mechanism file, as the stages `process-identified` and `compare-identified`, so
//! that the report shows the forces and the comparison before and after.

use std::path::{Path, PathBuf};

use crate::identify::{identified_path, IdentifySpec};
use crate::job::{IdentifyInputs, IdentifyJob, Job};
use crate::report_identify::IdentifiedDirs;
use crate::run::RecordingRun;
use crate::runner::StageName;
use crate::PipelineError;

impl RecordingRun<'_, '_> {
    /// Identify from the process stage's folder `process_dir`, then process the tracks
    /// `tracks` again with the identified file, and compare again when `comparing`.
    pub(crate) fn identified(
        &mut self,
        spec: &IdentifySpec,
        tracks: &Path,
        process_dir: &Path,
        comparing: bool,
    ) -> Result<IdentifiedDirs, PipelineError> {
        let identify = self.identify(spec, tracks, process_dir)?;
        let file = identified_path(&self.rec.mechanism, &identify);
        let mech = flexbench_mechanism::file::load(&file)?.mechanism;
        let process = self.process_with(StageName::ProcessIdentified, tracks, &mech, &file)?;
        let compare = match comparing {
            true => Some(self.compare_with(StageName::CompareIdentified, &process, &file)?),
            false => None,
        };
        Ok(IdentifiedDirs {
            identify,
            process,
            compare,
        })
    }

    /// The identify stage: its folder.
    fn identify(
        &mut self,
        spec: &IdentifySpec,
        tracks: &Path,
        process_dir: &Path,
    ) -> Result<PathBuf, PipelineError> {
        let mechanism = self.rec.mechanism.clone();
        let measured = self.rec.measured.clone();
        let bodies = crate::folders::ProcessedFolder::new(process_dir)
            .table(crate::folders::ProcessedTable::Bodies);
        // The bodies moved along the frame's uncertainty (crate::identify_frame), when the
        // process stage wrote them.
        let frame: Vec<(String, PathBuf)> = (0..)
            .map(|k| {
                let stem = crate::identify_frame::table_stem(k);
                let path = process_dir.join(format!("{stem}.parquet"));
                (stem, path)
            })
            .take_while(|(_, p)| p.exists())
            .collect();
        // The tracks too: the identification processes them again when its values ask for
        // other harmonics than the processing used (crate::identify_refine).
        let mut inputs: Vec<(&str, &Path)> = vec![
            ("bodies", &bodies),
            ("mechanism", &mechanism),
            ("tracks", tracks),
        ];
        if let Some(m) = &measured {
            inputs.push(("measured", m));
        }
        inputs.extend(frame.iter().map(|(s, p)| (s.as_str(), p.as_path())));
        let mut parameters = serde_json::to_value(spec).unwrap_or_default();
        // The recording processed again, and the bootstrap's replicates, as the process stage
        // processed it.
        parameters["process"] = serde_json::to_value(&self.file.process).unwrap_or_default();
        self.runner.stage(
            StageName::Identify,
            parameters,
            &inputs,
            &mut |tmp, events| {
                let job = IdentifyInputs {
                    processed: process_dir,
                    mechanism: &mechanism,
                    measured: measured.as_deref(),
                    process: &self.file.process,
                };
                IdentifyJob::run(spec, &job, tmp, events).map(|_| ())
            },
        )
    }
}
