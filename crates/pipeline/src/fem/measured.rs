//! The measured deflection (the process stage's fit residuals along the lever) against the forced
//! response: the table read here, the comparison `flexbench_fem::deflection`'s.

use super::*;
use flexbench_fem::deflection::Comparison;

impl MeasuredDeflection {
    /// The record of a comparison with the measured table at `file`.
    pub(super) fn of(c: &Comparison, file: Option<&Path>) -> MeasuredDeflection {
        MeasuredDeflection {
            file: file.map(|p| p.display().to_string()),
            samples_compared: c.samples,
            rms_model_detrended_m: c.rms_model,
            rms_measured_detrended_m: c.rms_measured,
            rms_difference_m: c.rms_difference,
            correlation: c.correlation,
        }
    }
}

/// Compare the forced response at the markers with the measured deflection of the `fit_residuals`
/// table at `path` ([`flexbench_fem::deflection::compare_measured`]).
pub(super) fn compare_measured(
    path: &Path,
    mesh: &Mesh,
    r: &flexbench_fem::response::Response,
    instants: &[LeverInstant],
    markers: &[(String, f64)],
) -> Result<Comparison, PipelineError> {
    let table = flexbench_tables::read_fit_residuals(path)?;
    flexbench_fem::deflection::compare_measured(&table, mesh, r, instants, markers).map_err(
        |source| PipelineError::FemStep {
            context: format!("{}: the measured deflection", path.display()),
            source,
        },
    )
}
