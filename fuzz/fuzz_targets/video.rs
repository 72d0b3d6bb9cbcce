//! Video files (OpenCV's FFmpeg backend, then flexbench's tracker on whatever frames decode):
//! any bytes give tracks or an error, never a crash or a hang.
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = common::scratch(data, "mp4");
    if flexbench_vision::track::probe_video(&p).is_err() {
        return;
    }
    static CAL: std::sync::OnceLock<flexbench_vision::Calibration> = std::sync::OnceLock::new();
    let cal = CAL.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../recordings/default/truth/camera.yaml");
        flexbench_vision::Calibration::read(&path).expect("the shipped calibration")
    });
    let _ = flexbench_vision::track::track_video(
        &p,
        cal,
        &flexbench_vision::track::TrackConfig::default(),
        |_, _| {},
    );
});
