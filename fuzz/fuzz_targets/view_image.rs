//! Chessboard views (image files read by OpenCV, then the board's corners found and refined):
//! any bytes give corners, no board, or an error, never a crash or a hang.
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = common::scratch(data, "png");
    if let Some(img) = flexbench_vision::calibrate::read_grey(&p) {
        let board = flexbench_vision::calibrate::Board {
            cols: 9,
            rows: 6,
            square: 0.03,
        };
        let _ = flexbench_vision::calibrate::find_corners(
            &img,
            &board,
            flexbench_vision::calibrate::SubPixWindow::Auto,
        );
    }
});
