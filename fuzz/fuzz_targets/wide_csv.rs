//! The foreign wide tracks CSV (DLTdv, Tracker): any bytes give tracks or an error.
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = common::scratch(data, "csv");
    use flexbench_tables::interchange::{read_wide, LengthUnit, Pixels, WideSpec};
    let spec = WideSpec {
        unit: LengthUnit::Mm,
        fps: Some(240.0),
        markers: None,
    };
    if let Ok(t) = read_wide(&p, &spec, Pixels::Uncalibrated) {
        let _ = t.series();
    }
});
