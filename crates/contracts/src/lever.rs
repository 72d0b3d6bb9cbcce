//! The elastic lever's section as the mechanism file gives it and the FEM reads it: the record
//! the mechanism stage hands to the lever's finite elements, so that the FEM does not read the
//! mechanism file's format.

/// The elastic properties of the lever B -> C' that the FEM needs, SI units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeverSection {
    /// Young's modulus, Pa.
    pub e: f64,
    /// Density, kg/m^3.
    pub rho: f64,
    /// Cross-section area, m^2.
    pub area: f64,
    /// In-plane second moment of area, m^4.
    pub inertia: f64,
    /// Length B -> C', m.
    pub length: f64,
}
