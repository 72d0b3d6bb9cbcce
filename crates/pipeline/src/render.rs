//! `flexbench render` as a job: the render of `flexbench-render` (the rendered truth of a
//! mechanism filmed by a known camera), its progress reported as the other jobs' events.

use std::path::Path;

use flexbench_mechanism::Mechanism;
pub use flexbench_render::*;

use crate::{PipelineError, StageEvent};

/// Render `mech` as `spec` films it into `out` ([`flexbench_render::render`]).
pub fn render(
    mech: &Mechanism,
    spec: &RenderSpec,
    out: &Path,
    mut events: impl FnMut(StageEvent),
) -> Result<RenderSummary, PipelineError> {
    let progress = |what: &str, f: f64| events(StageEvent::Progress(what, f));
    Ok(flexbench_render::render(mech, spec, out, progress)?)
}
