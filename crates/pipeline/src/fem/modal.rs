//! The lever's forced response along the cycle (its modes followed: `flexbench_fem::followed`).

use super::*;

/// The forced response along the cycle with Rayleigh `damping`.
pub(super) fn forced(
    mesh: &Mesh,
    g: &flexbench_fem::assembly::GlobalMatrices,
    instants: &[LeverInstant],
    damping: Damping,
    cfg: &FemConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Response, PipelineError> {
    let rcfg = flexbench_fem::response::ResponseConfig {
        damping,
        max_step: cfg.max_step,
    };
    flexbench_fem::response::forced_response(mesh, g, instants, cfg.supports, &rcfg, progress)
        .map_err(|source| PipelineError::FemStep {
            context: "forced response".into(),
            source,
        })
}
