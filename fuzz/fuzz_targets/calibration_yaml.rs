//! The calibration file (OpenCV FileStorage YAML): any bytes give a calibration or an error.
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = common::scratch(data, "yaml");
    let _ = flexbench_vision::Calibration::read(&p);
});
