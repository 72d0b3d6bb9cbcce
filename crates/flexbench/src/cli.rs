//! The command line's arguments (one subcommand per stage) and their dispatch.

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::{compare, identify, process};

/// Video recordings of the wind-pump lever bench -> trajectories, accelerations, liaison forces.
#[derive(Parser)]
#[command(name = "flexbench", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a mechanism (forward dynamics with Lagrange multipliers) and write the ground
    /// truth: tracks, markers, bodies, forces (CSV and Parquet), forces.png/svg, summary.json.
    ///
    /// Example: flexbench simulate --mechanism mechanisms/wind-pump.toml --duration 2 --rate 1000 --settle 3 --out out/sim
    Simulate(crate::simulate::SimulateArgs),
    /// Process a tracks table (CSV or Parquet, contract format) into marker kinematics, the
    /// mechanism's kinematics, the liaison forces, summary.json and forces.png/svg.
    ///
    /// Example: flexbench process --tracks out/sim/tracks.parquet --mechanism mechanisms/wind-pump.toml --out out/process
    Process(process::ProcessArgs),
    /// Calibrate the camera from chessboard views: intrinsics, distortion, their standard
    /// deviations and per-view errors, and (with --plane-view, --origin and --horizontal) the
    /// bench plane. Written as OpenCV FileStorage YAML.
    ///
    /// Example: flexbench calibrate --views calibration/opencv-left-chessboard --board 9x6 --square 0.025 --out calibration/left.yaml
    Calibrate(crate::calibrate::CalibrateArgs),
    /// Render what a known camera films of the simulated bench: the video (motion blur, noise,
    /// uneven lighting, occlusions), calibration views, a board view in the lever's plane with the
    /// pixels of A and of the horizontal, and the truth (tracks with u, v and x, y, the camera,
    /// the simulation's tables).
    ///
    /// Example: flexbench render --mechanism mechanisms/wind-pump.toml --camera recordings/default/camera.toml --out out/render
    Render(crate::render::RenderArgs),
    /// The elastic lever along the motion: its modes at every sample (symmetric problem and
    /// the full one with the gyroscopic and skew terms), followed by their shape; writes the
    /// modal table, the figures (eigenfrequencies 3-6 and 1-2 along the cycle, mode shapes) and
    /// a summary.
    ///
    /// Example: flexbench fem --kinematics out/demo/process/bodies.csv --forces out/demo/process/forces.csv --mechanism mechanisms/wind-pump.toml --out out/fem
    Fem(crate::fem::FemArgs),
    /// A processed recording against the rigid bench simulated from the mechanism file, aligned
    /// by the crank angle (where the mechanism has a motor-driven crank): per marker
    /// acceleration component and per liaison force component at B and C', NRMSE, peaks and
    /// their crank angles, phase lag, harmonic content; and, with --measured, the computed joint
    /// torques and forces against the rig's measured ones on its own clock (any mechanism): RMS,
    /// mean, peaks, lag, the share the file's friction explains (measured.json, the table and
    /// figure).
    ///
    /// Example: flexbench compare --processed out/demo/process --mechanism mechanisms/wind-pump.toml --out out/compare
    ///
    /// Example: flexbench compare --processed out/pendulum --mechanism recordings/dfki-pendulum/pendulum-friction.toml --measured recordings/dfki-pendulum/runs/ddp_swingup.csv --measured-column torque=motor_torque --measured-cutoff 10 --out out/pendulum-compare
    Compare(compare::CompareArgs),
    /// The mechanism file's uncertain numbers identified from a processed recording: each
    /// actuator's solved force held against its law (the bench's motor and pump), and each
    /// measured torque or force (--measured) against the solved one; by Gauss-Newton on the
    /// numbers named free, with what the recording determines (rank, each number pinned to half
    /// its value), standard deviations and correlations (identify.json); the forces'
    /// sensitivities to every parameter of the file (sensitivities.csv); the file with the
    /// identified values (<mechanism>.identified.toml; the given file is not changed).
    ///
    /// Example: flexbench identify --processed out/demo/process --mechanism mechanisms/wind-pump.toml --free k,mw,Fr --out out/identify
    Identify(identify::IdentifyArgs),
    /// Smooth and differentiate the markers of any tracks table (any marker names; x and y in
    /// --unit) into the markers' kinematics table with standard deviations: the signal stage
    /// alone.
    Smooth(crate::smooth::SmoothArgs),
    /// Track the markers in a video: sub-pixel centres, identities along the lever, gaps where a
    /// marker is not seen, mapped to bench metres; the tracks table and a summary.
    ///
    /// Example: flexbench track --video recordings/default/video.mp4 --calibration calibration/default.yaml --out out/tracks.parquet
    Track(crate::track::TrackArgs),
    /// Draw on the recording what flexbench made of it: each marker's tracked centre and name,
    /// the gaps, the flagged samples, and (with --processed) the fitted mechanism through the
    /// calibration; H.264 MP4 (Motion JPEG AVI where H.264 is missing), with a contact sheet of
    /// the flagged samples' crops.
    ///
    /// Example: flexbench overlay --video recordings/default/video.mp4 --calibration out/demo/calibrate/calibration.yaml --tracks out/demo/track/tracks.parquet --flags out/demo/track/flags.parquet --processed out/demo/process --mechanism mechanisms/wind-pump.toml --out out/overlay
    Overlay(crate::overlay::OverlayArgs),
    /// Write the clicks page of a board view lying in the lever's plane: a self-contained HTML
    /// page where the bench origin A and a point of the horizontal are clicked (to 0.1 px, in a
    /// magnified window) and clicks.toml is downloaded for `calibrate` and `run`.
    ///
    /// Example: flexbench clicks-page --image recordings/default/plane-view.png --out out/clicks.html
    ClicksPage(crate::calibrate::ClicksPageArgs),
    /// Decode a video and report its frames, frame rate, timestamps and decoding speed.
    ///
    /// Example: flexbench probe --video recordings/default/video.mp4
    Probe(crate::probe::ProbeArgs),
    /// The whole chain for a recording, from its video (or a tracks table) to the report:
    /// calibrate -> track -> smooth -> process -> overlay -> fem -> compare -> report, each stage's settings
    /// from the pipeline file. A stage whose inputs and settings have not changed is not run
    /// again. With several recordings (`[run] recordings` or --recordings), a batch run in
    /// parallel with a summary table; a failed recording is reported and the others go on.
    ///
    /// Example: flexbench run pipelines/default.toml
    Run(crate::run::RunArgs),
    /// Check a mechanism file: parse, validate, assemble over a whole crank turn, and describe.
    ///
    /// Example: flexbench check --mechanism mechanisms/wind-pump.toml
    Check(crate::check::CheckArgs),
}

pub(crate) fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Simulate(args) => crate::simulate::simulate_command(args),
        Command::Process(args) => process::process_command(args),
        Command::Calibrate(args) => crate::calibrate::calibrate_command(args),
        Command::Render(args) => crate::render::render_command(args),
        Command::Track(args) => crate::track::track_command(args),
        Command::Fem(args) => crate::fem::fem_command(args),
        Command::Compare(args) => compare::compare_command(args),
        Command::Identify(args) => identify::identify_command(args),
        Command::Smooth(args) => crate::smooth::smooth_command(args),
        Command::Probe(args) => crate::probe::probe_command(args),
        Command::Overlay(args) => crate::overlay::overlay_command(args),
        Command::ClicksPage(args) => crate::calibrate::clicks_page_command(args),
        Command::Run(args) => crate::run::run_command(args),
        Command::Check(args) => crate::check::check_command(args),
    }
}
