//! The foreign wide tracks CSV (DLTdv, Tracker): any bytes give tracks or an error.
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = common::scratch(data, "csv");
    if let Ok(t) = flexbench_pipeline::interchange::read_wide(&p, "mm", Some(240.0), None, None) {
        let _ = t.series();
    }
});
