//! Reading a mechanism file: [`parse`] and [`load`] build the model from either form (the
//! bench's flat form, [`crate::flat`]; the general form, [`crate::general`]), check its geometry
//! over a whole turn of its first driver, and read its `[tolerances]` ([`crate::tolerances`]).

use std::path::Path;

pub use crate::flat::*;
use crate::model::{Coordinate, Mechanism};
use crate::MechanismError;

/// Parse a mechanism from TOML text: the general form when it has `[[bodies]]`, otherwise the
/// bench's flat form. The geometry is then checked over a whole turn of the first driver when
/// that driver is an angle.
pub fn parse(text: &str, origin: &str) -> Result<MechanismFile, MechanismError> {
    let MechanismFile {
        mut mechanism,
        lever,
    } = crate::flat::build_text(text, origin)?;
    mechanism.tolerances = crate::tolerances::read(text, origin)?;
    if matches!(mechanism.drivers[0].coordinate, Coordinate::Angle { .. }) {
        mechanism.check_full_turn()?;
    } else {
        mechanism.initial_configuration()?;
    }
    Ok(MechanismFile { mechanism, lever })
}

/// Read and parse a mechanism file.
pub fn load(path: &Path) -> Result<MechanismFile, MechanismError> {
    let text = std::fs::read_to_string(path).map_err(|e| MechanismError::Unreadable {
        path: path.display().to_string(),
        hint: "; check the path",
        source: flexbench_contracts::SharedCause::new(e),
    })?;
    parse(&text, &path.display().to_string())
}

/// The default bench, from `mechanisms/wind-pump.toml` as committed (for tests and examples).
pub fn wind_pump_default() -> Mechanism {
    const TEXT: &str = include_str!("../../../mechanisms/wind-pump.toml");
    match parse(TEXT, "mechanisms/wind-pump.toml") {
        Ok(f) => f.mechanism,
        Err(e) => panic!("the committed default bench does not load: {e}"),
    }
}
