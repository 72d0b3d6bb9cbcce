//! The workspace's fixed Gaussian sequence for test data (`flexbench_contracts::gauss`), under
//! the name the tests use (included by path where `common` is not a module).

pub use flexbench_contracts::gauss::Gauss;
