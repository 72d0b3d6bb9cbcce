//! The mechanism file: any text gives a mechanism (checked over a whole turn) or an error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = flexbench_mechanism::file::parse(text, "fuzz");
    }
});
