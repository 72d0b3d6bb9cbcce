//! Criterion benchmarks of flexbench (see benches/); nothing to export.
