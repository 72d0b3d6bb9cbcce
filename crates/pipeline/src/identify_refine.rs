//! The identification refined by processing again: the process stage's periodic refit keeps at
//! least the harmonics of the crank angle that the bench's forces need, and it finds them by
//! simulating the mechanism file (`flexbench_kinematics::spectrum`). A file whose spring,
//! weight or friction are off asks for too few: on the bench with the spring 20 % stiffer, the
//! weight 20 % heavier and the slide's friction doubled, the shipped file asks for 7 (a floor of
//! 8) where the bench needs 11 (12), and the motion then lacks its 9th to 12th harmonics, which
//! biases the identification by about 1 % (k, mw) and 5 % (Fr) at 0.1 mm of noise. So when the
//! identified values ask for another floor than the processing used, the recording's tracks are
//! processed again with the identified file and identified again from it, until the floor holds
//! (at most [`PASSES`] times). The estimates are then reported against the given file's values.

use std::path::{Path, PathBuf};

use flexbench_identify::{Identification, MeasuredColumn, Settings};
use flexbench_mechanism::sensitivity::OriginMotion;
use serde::{Deserialize, Serialize};

use crate::process::ProcessRecord;
use crate::{PipelineError, ProcessConfig, StageEvent, StageRecord};

/// Passes of processing again at most.
pub const PASSES: usize = 3;

/// One pass of processing again with an identified file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefinePass {
    /// The periodic refit's least harmonics the pass's file asked for (and the pass used).
    pub harmonics_floor: usize,
    /// The estimates it gave, by key.
    pub values: Vec<(String, f64)>,
}

/// What processing again did: the floor the given processing used and each pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefineRecord {
    /// The periodic refit's least harmonics in the given processed folder.
    pub harmonics_floor_given: usize,
    /// Each pass, in order.
    pub passes: Vec<RefinePass>,
}

/// The recording as the refinement reads it: the given processed folder, its times and motion
/// are re-made by each pass.
pub(crate) struct Refined {
    /// The identification of the last pass, its numbers against the given file's.
    pub identification: Identification,
    /// The mechanism file the last pass processed and identified with (its text).
    pub text: String,
    /// The last pass's sample times (s) and bodies' motion.
    pub t: Vec<f64>,
    /// Motion at them.
    pub motion: Vec<Vec<OriginMotion>>,
    /// The passes.
    pub record: RefineRecord,
}

/// How a pass reads its measured columns at its sample times.
pub(crate) type MeasuredAt<'a> = &'a dyn Fn(&[f64]) -> Result<Vec<MeasuredColumn>, PipelineError>;

/// The tracks the processed folder `processed` was made from, and their flags table when
/// there is one; None when the tracks are no longer where the record says.
fn tracks_of(record: &ProcessRecord) -> Option<(PathBuf, Option<PathBuf>)> {
    let tracks = PathBuf::from(&record.tracks);
    let flags = tracks.with_file_name("flags.parquet");
    tracks
        .exists()
        .then(|| (tracks.clone(), flags.exists().then_some(flags)))
}

/// The periodic refit's floor the file `text` asks for at the crank speed `speed` (rad/s).
fn floor_of(text: &str, origin: &str, speed: f64) -> Result<usize, PipelineError> {
    let mech = flexbench_mechanism::file::parse(text, origin)?.mechanism;
    let needed = flexbench_kinematics::spectrum::harmonics_needed(&mech, speed).unwrap_or(0);
    Ok(needed + needed % 2)
}

/// Process the recording again with the identified file while its floor differs from the one
/// the processing used (module documentation). None when the given processing has no periodic
/// refit or its floor already holds; a warning in `id` when its tracks cannot be found.
pub(crate) fn refine(
    processed: &Path,
    (text, origin): (&str, &str),
    id: &mut Identification,
    (settings, process): (&Settings, &ProcessConfig),
    measured_at: MeasuredAt,
    events: &mut dyn FnMut(StageEvent),
) -> Result<Option<Refined>, PipelineError> {
    // Long: the refit's loop in its order (the floor compared, the tracks processed again,
    // identified again, the floor compared again), each a call.
    let given = ProcessRecord::read(&processed.join(crate::folders::SUMMARY))?;
    let Some(periodic) = &given.periodic else {
        return Ok(None);
    };
    let (speed, floor_given) = (periodic.crank_speed, periodic.harmonics_floor);
    if floor_of(&id.file, origin, speed)? == floor_given {
        return Ok(None);
    }
    let Some((tracks, flags)) = tracks_of(&given) else {
        id.warnings.push(format!(
            "the identified values ask the periodic refit for other harmonics than the processing used ({floor_given}), and the tracks {} are not where the process record says: process them again with the identified file and identify again from it",
            given.tracks
        ));
        return Ok(None);
    };
    let scratch = tempfile::tempdir()
        .map_err(|e| PipelineError::io(&std::env::temp_dir(), "make a scratch folder", e))?;
    let mut record = RefineRecord {
        harmonics_floor_given: floor_given,
        passes: Vec::new(),
    };
    // The peak locking as the given processing did: taken out again where it was.
    let mut again = *process;
    if let Some(s) = again.smoother_mut() {
        s.peak_locking = match given.peak_locking.as_ref().is_some_and(|p| p.corrected) {
            true => flexbench_contracts::names::Switch::On,
            false => flexbench_contracts::names::Switch::Off,
        };
    }
    let process = &again;
    let mut last = None;
    for pass in 0..PASSES {
        events(StageEvent::Progress(
            "processing again with the identified file",
            pass as f64 / PASSES as f64,
        ));
        let file = last
            .as_ref()
            .map_or(&id.file, |r: &Refined| &r.identification.file);
        let floor = floor_of(file, origin, speed)?;
        if record
            .passes
            .last()
            .is_some_and(|p| p.harmonics_floor == floor)
        {
            break;
        }
        let text_k = file.clone();
        let mech = flexbench_mechanism::file::parse(&text_k, origin)?.mechanism;
        let out = scratch.path().join(format!("pass-{pass}"));
        crate::process(&tracks, flags.as_deref(), &mech, process, &out, |_| {})?;
        let bodies = crate::tables::bodies_of(
            &crate::folders::ProcessedFolder::new(&out)
                .table(crate::folders::ProcessedTable::Bodies),
            &mech,
        )?;
        let (motion, t) = crate::tables::origin_motions(&mech, &bodies);
        let measured = measured_at(&t)?;
        let found =
            flexbench_identify::identify(&text_k, origin, &t, &motion, &measured, settings)?;
        record.passes.push(RefinePass {
            harmonics_floor: floor,
            values: found
                .estimates
                .iter()
                .map(|e| (e.key.clone(), e.value))
                .collect(),
        });
        last = Some(Refined {
            identification: found,
            text: text_k,
            t,
            motion,
            record: record.clone(),
        });
    }
    Ok(last.map(|mut r| {
        r.record = record;
        against_given(&mut r.identification, id, text, origin);
        r
    }))
}

/// The last pass's identification `last` stated against the given file's values (those of the
/// first identification `first`), its file rewritten from the given file `text` with its values.
fn against_given(last: &mut Identification, first: &Identification, text: &str, origin: &str) {
    for (e, f) in last.estimates.iter_mut().zip(&first.estimates) {
        e.file_value = f.file_value;
    }
    for (b, f) in last.bodies.iter_mut().zip(&first.bodies) {
        b.file = f.file;
    }
    for (q, f) in last.equations.iter_mut().zip(&first.equations) {
        q.rms_before = f.rms_before;
    }
    let values = crate::identify_bootstrap::file_values(last);
    match flexbench_mechanism::parameters::with_values(text, origin, &values) {
        Ok(file) => last.file = file,
        Err(e) => last.warnings.push(format!(
            "the refined values could not be written into the given file ({e}): the file written is the last pass's"
        )),
    }
}
