//! The end-to-end tests in one target: each file of `tests/` is a module here, sharing the
//! helpers of `common` (run the real `flexbench` binary, read its tables), so that the binary,
//! OpenCV and polars are linked once. Library tests live in their crates (`crates/<x>/tests`).

mod common;

mod any_mechanism;
mod bad_input;
mod bad_input_corpus;
mod band_calibration;
mod bench_points;
mod charuco;
mod compare_end_to_end;
mod corrections;
mod crash_safety;
mod fem_end_to_end;
mod fiducial_video;
mod flexible_end_to_end;
mod four_bar_video;
mod frame_share;
mod identify_end_to_end;
mod import_circles;
mod jittered_clock;
mod marker_kinds_video;
mod marker_layout;
mod markers_off_plane;
mod measured_compare;
mod motion_calibration;
mod peak_locking;
mod pendulum_real;
mod pendulum_video;
mod phone_shutter;
mod process_end_to_end;
mod quantized_bench;
mod residual_flags;
mod review_pages;
mod run_end_to_end;
mod smooth_end_to_end;
mod stand_alone;
mod stick_scale;
mod template_video;
mod time_base;
mod tracking_nuisances;
mod tracking_rendered;
mod video_chain;
