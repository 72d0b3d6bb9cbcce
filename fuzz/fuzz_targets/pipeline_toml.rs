//! The pipeline file: any text gives checked settings for the default bench or an error.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

static BENCH: OnceLock<flexbench_mechanism::Mechanism> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let bench = BENCH.get_or_init(flexbench_mechanism::file::wind_pump_default);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(file) = toml::from_str::<flexbench_pipeline::run::PipelineFile>(text) {
            let _ = flexbench_pipeline::run::Settings::resolve(&file, bench, true);
        }
    }
});
