//! The tracks table reader (CSV): any bytes give a table or an error, never a panic.
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = common::scratch(data, "csv");
    if let Ok(t) = flexbench_tables::read_tracks(&p) {
        let _ = t.series();
    }
});
