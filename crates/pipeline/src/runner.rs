//! The stage runner of a run: each stage made in a temporary folder that replaces the old one
//! only on success, its key (SHA-256 over the build, its parameters and its inputs' bytes) in
//! `stage.json`, a stage whose key is unchanged and whose files are intact kept; the events a
//! run reports as it goes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::{io_error, PipelineError};
use crate::{StageEvent, StageWarning};

/// What a run reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// A stage begins (its index from 1, of how many).
    Stage {
        /// Stage name.
        name: String,
        /// Index, from 1.
        index: usize,
        /// Stages in the run.
        of: usize,
    },
    /// The current stage's progress, 0..1, with what it is doing.
    Progress(String, f64),
    /// A stage ended: run, or skipped because its inputs had not changed.
    Done(StageOutcome),
    /// Something the user should know (the run goes on).
    Warning(StageWarning),
}

/// A stage of a run, by name: the folder it writes under the run's output, and its name in the
/// events, the manifest and the batch summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StageName {
    /// The camera and the bench plane.
    Calibrate,
    /// The rough calibration the camera's fit to the motion starts from.
    CalibrateStart,
    /// The markers tracked (or a tracks table imported).
    Track,
    /// The video tracked with the start's calibration, for the camera's fit to the motion.
    TrackStart,
    /// The markers smoothed alone (no mechanism).
    Smooth,
    /// Kinematics and inverse dynamics.
    Process,
    /// The video with what flexbench made of it drawn.
    Overlay,
    /// The elastic lever's modes and forced response.
    Fem,
    /// Measured against simulated.
    Compare,
    /// The mechanism file's numbers identified from the recording.
    Identify,
    /// Process again with the identified file.
    ProcessIdentified,
    /// Compare again with the identified file.
    CompareIdentified,
    /// The report page.
    Report,
}

impl StageName {
    /// The chain's stages in order (every run's, bar the camera's fit to the motion and the
    /// identification).
    pub const CHAIN: [StageName; 8] = [
        StageName::Calibrate,
        StageName::Track,
        StageName::Smooth,
        StageName::Process,
        StageName::Overlay,
        StageName::Fem,
        StageName::Compare,
        StageName::Report,
    ];

    /// The stage's name: its folder's.
    pub const fn as_str(self) -> &'static str {
        match self {
            StageName::Calibrate => "calibrate",
            StageName::CalibrateStart => "calibrate-start",
            StageName::Track => "track",
            StageName::TrackStart => "track-start",
            StageName::Smooth => "smooth",
            StageName::Process => "process",
            StageName::Overlay => "overlay",
            StageName::Fem => "fem",
            StageName::Compare => "compare",
            StageName::Identify => "identify",
            StageName::ProcessIdentified => "process-identified",
            StageName::CompareIdentified => "compare-identified",
            StageName::Report => "report",
        }
    }
}

impl std::fmt::Display for StageName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a stage ended.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOutcome {
    /// Stage name.
    pub name: String,
    /// False when skipped (its key and files unchanged).
    pub ran: bool,
    /// Wall time, s.
    pub seconds: f64,
    /// Its folder.
    pub dir: PathBuf,
}

/// A path with its `.` and `name/..` components removed, lexically (`pipelines/../out` ->
/// `out`), so that the manifest and the messages show the paths one would type.
pub fn clean_path(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.is_empty() {
        PathBuf::from(".")
    } else {
        out.iter().collect()
    }
}

/// SHA-256 of a byte string, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a file's bytes, or of a folder's files (names and bytes, sorted by name), hex.
pub fn hash_path(path: &Path) -> Result<String, PipelineError> {
    let io = |e: std::io::Error| PipelineError::io(path, "be read to hash it", e);
    if path.is_dir() {
        let mut names: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        names.sort();
        let mut h = Sha256::new();
        for p in names {
            h.update(
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
                    .as_bytes(),
            );
            h.update([0]);
            h.update(hash_path(&p)?.as_bytes());
        }
        Ok(hex(&h.finalize()))
    } else {
        let bytes = std::fs::read(path).map_err(io)?;
        Ok(sha256_hex(&bytes))
    }
}

/// The identity of the running flexbench build: its version and the SHA-256 of its executable
/// (a rebuilt flexbench reruns every stage).
pub fn build_identity() -> String {
    // Hashed once per process: a debug executable is hundreds of megabytes, and a batch asks
    // once per recording.
    static IDENTITY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let exe = std::env::current_exe()
                .ok()
                .and_then(|p| std::fs::read(p).ok())
                .map(|b| sha256_hex(&b))
                .unwrap_or_else(|| "unknown".into());
            format!("flexbench {} {}", env!("CARGO_PKG_VERSION"), exe)
        })
        .clone()
}

/// A stage's record in its folder (`stage.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStamp {
    /// Stage name.
    pub stage: String,
    /// SHA-256 over the build, the parameters and the inputs' bytes.
    pub key: String,
    /// The parameters, as resolved.
    pub parameters: Value,
    /// Inputs: a name and the SHA-256 of its bytes.
    pub inputs: BTreeMap<String, String>,
    /// Files written (relative to the stage folder) and their SHA-256.
    pub outputs: BTreeMap<String, String>,
}

/// Every file a stage wrote into `tmp` (relative, with / separators, sorted) and its SHA-256.
fn outputs_of(tmp: &Path) -> Result<BTreeMap<String, String>, PipelineError> {
    let mut files: Vec<PathBuf> = Vec::new();
    list_files(tmp, &mut files).map_err(|e| PipelineError::io(tmp, "list the stage's files", e))?;
    files.sort();
    let mut outputs = BTreeMap::new();
    for f in files {
        let rel = f
            .strip_prefix(tmp)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        outputs.insert(rel, hash_path(&f)?);
    }
    Ok(outputs)
}

const STAMP: &str = "stage.json";

/// A stage's work: it writes its files into the given temporary folder and reports progress
/// (step name, fraction done) to the callback.
pub type StageBody<'a> =
    dyn FnMut(&Path, &mut dyn FnMut(StageEvent)) -> Result<(), PipelineError> + 'a;

/// Runs stages with their keys, into one output directory.
pub struct Runner<'a> {
    out: PathBuf,
    pub(crate) build: String,
    hashes: BTreeMap<PathBuf, String>,
    events: &'a mut dyn FnMut(RunEvent),
    /// Stages in the run (for the progress).
    pub stages: usize,
    /// The stamps of the stages run or kept, in order.
    pub stamps: Vec<StageStamp>,
    /// Stages begun so far (the next one's index less one).
    started: usize,
    /// How each stage ended.
    pub outcomes: Vec<StageOutcome>,
}

impl<'a> Runner<'a> {
    /// A runner writing into `out`, for a run of `stages` stages.
    pub fn new(
        out: &Path,
        build: String,
        stages: usize,
        events: &'a mut dyn FnMut(RunEvent),
    ) -> Runner<'a> {
        Runner {
            out: out.to_path_buf(),
            build,
            hashes: BTreeMap::new(),
            events,
            stages,
            stamps: Vec::new(),
            started: 0,
            outcomes: Vec::new(),
        }
    }

    pub(crate) fn hash(&mut self, p: &Path) -> Result<String, PipelineError> {
        if let Some(h) = self.hashes.get(p) {
            return Ok(h.clone());
        }
        let h = hash_path(p)?;
        self.hashes.insert(p.to_path_buf(), h.clone());
        Ok(h)
    }

    /// The stage folder's stamp when its key is `key` and every file it lists is unchanged
    /// (their hashes then remembered for the stages after it); None when the stage must run.
    fn kept(&mut self, dir: &Path, key: &str) -> Option<StageStamp> {
        let stamp = read_stamp(dir).filter(|s| s.key == key)?;
        let unchanged = stamp
            .outputs
            .iter()
            .all(|(f, h)| hash_path(&dir.join(f)).ok().as_deref() == Some(h.as_str()));
        if !unchanged {
            return None;
        }
        for (f, h) in &stamp.outputs {
            self.hashes.insert(dir.join(f), h.clone());
        }
        Some(stamp)
    }

    /// Send an event.
    pub fn event(&mut self, e: RunEvent) {
        (self.events)(e)
    }

    /// Run (or keep) the stage `name` with `parameters` over the `inputs` (a name each; files or
    /// folders). `body` writes into the folder it is given and reports progress 0..1; on success
    /// that folder replaces the stage's, on failure the old folder stays as it was.
    pub fn stage(
        &mut self,
        name: StageName,
        parameters: Value,
        inputs: &[(&str, &Path)],
        body: &mut StageBody<'_>,
    ) -> Result<PathBuf, PipelineError> {
        let pending = match self.begin(name, parameters, inputs)? {
            Begun::Kept(dir) => return Ok(dir),
            Begun::Run(p) => p,
        };
        let events = &mut *self.events;
        let result = body(&pending.tmp, &mut |event: StageEvent| match event {
            StageEvent::Warning(w) => events(RunEvent::Warning(StageWarning {
                stage: name.to_string(),
                warning: w.into(),
            })),
            StageEvent::Progress(what, f) => events(RunEvent::Progress(what.to_string(), f)),
        });
        self.finish(pending, result)
    }

    /// A stage's start: its event, its key from its parameters and inputs; the stage kept
    /// (its folder) when its key and files are unchanged, else a fresh temporary folder for it
    /// to run into ([`Runner::finish`] puts it in place).
    pub fn begin(
        &mut self,
        name: StageName,
        parameters: Value,
        inputs: &[(&str, &Path)],
    ) -> Result<Begun, PipelineError> {
        let name = name.as_str();
        self.started += 1;
        let (index, slot) = (self.started, self.outcomes.len());
        self.event(RunEvent::Stage {
            name: name.into(),
            index,
            of: self.stages,
        });
        let clock = Instant::now();
        let mut hashed = BTreeMap::new();
        for (n, p) in inputs {
            hashed.insert(n.to_string(), self.hash(p)?);
        }
        let key = sha256_hex(serde_json::to_string(&json!({ "build": self.build, "stage": name, "parameters": parameters, "inputs": hashed })).unwrap_or_default().as_bytes());
        let dir = self.out.join(name);
        if let Some(stamp) = self.kept(&dir, &key) {
            self.stamps.push(stamp);
            return Ok(Begun::Kept(self.done(name, false, clock, dir, slot)));
        }
        // Run into a fresh temporary folder beside the stage's.
        crate::ensure_dir(&self.out)?;
        let tmp = self.out.join(format!(".{name}.partial"));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)
                .map_err(|e| io_error(&tmp, "remove an earlier unfinished stage folder", e))?;
        }
        crate::ensure_dir(&tmp)?;
        let stamp = StageStamp {
            stage: name.into(),
            key,
            parameters,
            inputs: hashed,
            outputs: BTreeMap::new(),
        };
        Ok(Begun::Run(Pending {
            stamp,
            tmp,
            dir,
            clock,
            slot,
        }))
    }

    /// A stage's end after its body ran into `pending`'s folder with `result`: on success the
    /// folder, stamped, replaces the stage's (atomically); on failure it is removed and the
    /// stage's old folder stays as it was.
    pub fn finish(
        &mut self,
        pending: Pending,
        result: Result<(), PipelineError>,
    ) -> Result<PathBuf, PipelineError> {
        let Pending {
            mut stamp,
            tmp,
            dir,
            clock,
            slot,
        } = pending;
        release_freed_memory();
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        stamp.outputs = outputs_of(&tmp)?;
        crate::write_json(
            &tmp.join(STAMP),
            &serde_json::to_value(&stamp).unwrap_or_default(),
        )?;
        // The whole new folder in the place of the old one, atomically.
        flexbench_contracts::atomic::replace_dir(&tmp, &dir)
            .map_err(|e| io_error(&dir, "put the stage's results in place", e))?;
        for (f, h) in &stamp.outputs {
            self.hashes.insert(dir.join(f), h.clone());
        }
        let name = stamp.stage.clone();
        self.stamps.insert(slot.min(self.stamps.len()), stamp);
        Ok(self.done(&name, true, clock, dir, slot))
    }

    /// A stage's outcome recorded in its place among the stages (`slot`: a stage run beside
    /// later ones ends after them) and announced.
    fn done(
        &mut self,
        name: &str,
        ran: bool,
        clock: Instant,
        dir: PathBuf,
        slot: usize,
    ) -> PathBuf {
        let o = StageOutcome {
            name: name.into(),
            ran,
            seconds: clock.elapsed().as_secs_f64(),
            dir: dir.clone(),
        };
        self.outcomes
            .insert(slot.min(self.outcomes.len()), o.clone());
        self.event(RunEvent::Done(o));
        dir
    }
}

/// How a stage begins ([`Runner::begin`]).
pub enum Begun {
    /// Kept: its key and files unchanged; its folder.
    Kept(PathBuf),
    /// To run into a temporary folder, then [`Runner::finish`].
    Run(Pending),
}

/// A stage under way: its stamp (outputs listed at the end), its temporary and final folders,
/// its clock, and its place among the stages.
pub struct Pending {
    stamp: StageStamp,
    /// The folder the stage's body writes into.
    pub tmp: PathBuf,
    dir: PathBuf,
    pub(crate) clock: Instant,
    slot: usize,
}

/// Hand the memory a stage freed back to the system. The stages run in one process and glibc
/// keeps freed pages of its heaps resident until told, so each stage would start from the
/// last one's peak: the 100 s recording's run peaked at its stages' sum. Elsewhere, nothing.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the system; no memory in use is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn read_stamp(dir: &Path) -> Option<StageStamp> {
    serde_json::from_str(&std::fs::read_to_string(dir.join(STAMP)).ok()?).ok()
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            list_files(&p, out)?;
        } else if p.file_name().is_some_and(|n| n != STAMP) {
            out.push(p);
        }
    }
    Ok(())
}
