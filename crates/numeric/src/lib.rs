//! The small numerical kernels the stages share, outside any stage's model or file format:
//!
//! - [`lu`]: LU with partial pivoting of the small square systems solved at every sample (the
//!   assembly's Newton-Raphson, the inverse dynamics, the simulation's augmented mass matrix,
//!   the lever's element and reduced matrices), bit for bit nalgebra's.
//! - [`lu_lanes`]: the same factorisation of four systems of one order side by side (the
//!   inverse dynamics along a recording).
//! - [`ode`]: the Dormand-Prince 5(4) step and its step-size rule (the rigid and the coupled
//!   elastic simulations).

#![warn(missing_docs)]

pub mod lu;
pub mod lu_lanes;
pub mod ode;
