//! The recording's own marker errors for a parametric bootstrap: the process stage's fit
//! residuals read from its folder, handed to [`flexbench_signal::block_bootstrap`] (circular
//! blocks of whole samples), or white noise where the folder has none.

use std::collections::BTreeMap;
use std::path::Path;

pub(crate) use flexbench_signal::block_bootstrap::MarkerNoise;

use crate::PipelineError;

/// The residuals of the processed folder `processed` for the markers `names`, or white
/// noise of `sigma` m where the folder has none (or fewer than 20 whole samples).
pub(crate) fn marker_noise(
    processed: &Path,
    names: &[String],
    sigma: f64,
) -> Result<MarkerNoise, PipelineError> {
    let path = crate::folders::ProcessedFolder::new(processed)
        .table(crate::folders::ProcessedTable::FitResiduals);
    if !path.exists() {
        return Ok(MarkerNoise::White(sigma));
    }
    let table = flexbench_tables::read_fit_residuals(&path)?;
    let mut by_time: BTreeMap<u64, Vec<Option<[f64; 2]>>> = BTreeMap::new();
    for r in table.rows() {
        let Some(j) = names.iter().position(|n| *n == r.marker) else {
            continue;
        };
        let row = by_time
            .entry(r.t.to_bits())
            .or_insert_with(|| vec![None; names.len()]);
        if let (Some(x), Some(y)) = (r.rx, r.ry) {
            row[j] = Some([x, y]);
        }
    }
    Ok(MarkerNoise::of_samples(names, by_time.into_values(), sigma))
}
