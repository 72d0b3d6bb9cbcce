//! `flexbench`: the command line of the wind-pump lever bench pipeline. It parses, dispatches
//! to the library crates and reports; the work lives in `flexbench-pipeline` and below.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use flexbench_mechanism::file::load;
use flexbench_mechanism::simulate::SimConfig;
use flexbench_pipeline::simulate;
use flexbench_vision::timebase::TimeBaseConfig;
use indicatif::{ProgressBar, ProgressStyle};

mod compare;
#[cfg(test)]
mod flag_walk;
mod identify;
mod measured;
mod process;

/// Video recordings of the wind-pump lever bench -> trajectories, accelerations, liaison forces.
#[derive(Parser)]
#[command(name = "flexbench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a mechanism (forward dynamics with Lagrange multipliers) and write the ground
    /// truth: tracks, markers, bodies, forces (CSV and Parquet), forces.png/svg, summary.json.
    ///
    /// Example: flexbench simulate --mechanism pipelines/wind-pump.toml --duration 2 --rate 1000 --settle 3 --out out/sim
    Simulate(SimulateArgs),
    /// Process a tracks table (CSV or Parquet, contract format) into marker kinematics, the
    /// mechanism's kinematics, the liaison forces, summary.json and forces.png/svg.
    ///
    /// Example: flexbench process --tracks out/sim/tracks.parquet --mechanism pipelines/wind-pump.toml --out out/process
    Process(process::ProcessArgs),
    /// Calibrate the camera from chessboard views: intrinsics, distortion, their standard
    /// deviations and per-view errors, and (with --plane-view, --origin and --horizontal) the
    /// bench plane. Written as OpenCV FileStorage YAML.
    ///
    /// Example: flexbench calibrate --views calibration/opencv-left-chessboard --board 9x6 --square 0.025 --out calibration/left.yaml
    Calibrate(CalibrateArgs),
    /// Render what a known camera films of the simulated bench: the video (motion blur, noise,
    /// uneven lighting, occlusions), calibration views, a board view in the lever's plane with the
    /// pixels of A and of the horizontal, and the truth (tracks with u, v and x, y, the camera,
    /// the simulation's tables).
    ///
    /// Example: flexbench render --mechanism pipelines/wind-pump.toml --camera recordings/default/camera.toml --out out/render
    Render(RenderArgs),
    /// The elastic lever along the motion: its modes at every sample (symmetric problem and
    /// the full one with the gyroscopic and skew terms), followed by their shape; writes the
    /// modal table, the figures (eigenfrequencies 3-6 and 1-2 along the cycle, mode shapes) and
    /// a summary.
    ///
    /// Example: flexbench fem --kinematics out/demo/process/bodies.csv --forces out/demo/process/forces.csv --mechanism pipelines/wind-pump.toml --out out/fem
    Fem(FemArgs),
    /// A processed recording against the rigid bench simulated from the mechanism file, aligned
    /// by the crank angle (where the mechanism has a motor-driven crank): per marker
    /// acceleration component and per liaison force component at B and C', NRMSE, peaks and
    /// their crank angles, phase lag, harmonic content; and, with --measured, the computed joint
    /// torques and forces against the rig's measured ones on its own clock (any mechanism): RMS,
    /// mean, peaks, lag, the share the file's friction explains (measured.json, the table and
    /// figure).
    ///
    /// Example: flexbench compare --processed out/demo/process --mechanism pipelines/wind-pump.toml --out out/compare
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
    /// Example: flexbench identify --processed out/demo/process --mechanism pipelines/wind-pump.toml --free k,mw,Fr --out out/identify
    Identify(identify::IdentifyArgs),
    /// Smooth and differentiate the markers of any tracks table (any marker names; x and y in
    /// --unit) into the markers' kinematics table with standard deviations: the signal stage
    /// alone.
    Smooth(SmoothArgs),
    /// Track the markers in a video: sub-pixel centres, identities along the lever, gaps where a
    /// marker is not seen, mapped to bench metres; the tracks table and a summary.
    ///
    /// Example: flexbench track --video recordings/default/video.mp4 --calibration calibration/default.yaml --out out/tracks.parquet
    Track(TrackArgs),
    /// Draw on the recording what flexbench made of it: each marker's tracked centre and name,
    /// the gaps, the flagged samples, and (with --processed) the fitted mechanism through the
    /// calibration; H.264 MP4 (Motion JPEG AVI where H.264 is missing), with a contact sheet of
    /// the flagged samples' crops.
    ///
    /// Example: flexbench overlay --video recordings/default/video.mp4 --calibration out/demo/calibrate/calibration.yaml --tracks out/demo/track/tracks.parquet --flags out/demo/track/flags.parquet --processed out/demo/process --mechanism pipelines/wind-pump.toml --out out/overlay
    Overlay(OverlayArgs),
    /// Write the clicks page of a board view lying in the lever's plane: a self-contained HTML
    /// page where the bench origin A and a point of the horizontal are clicked (to 0.1 px, in a
    /// magnified window) and clicks.toml is downloaded for `calibrate` and `run`.
    ///
    /// Example: flexbench clicks-page --image recordings/default/plane-view.png --out out/clicks.html
    ClicksPage(ClicksPageArgs),
    /// Decode a video and report its frames, frame rate, timestamps and decoding speed.
    ///
    /// Example: flexbench probe --video recordings/default/video.mp4
    Probe(ProbeArgs),
    /// The whole chain for a recording, from its video (or a tracks table) to the report:
    /// calibrate -> track -> smooth -> process -> overlay -> fem -> compare -> report, each stage's settings
    /// from the pipeline file. A stage whose inputs and settings have not changed is not run
    /// again. With several recordings (`[run] recordings` or --recordings), a batch run in
    /// parallel with a summary table; a failed recording is reported and the others go on.
    ///
    /// Example: flexbench run pipelines/default.toml
    Run(RunArgs),
    /// Check a mechanism file: parse, validate, assemble over a whole crank turn, and describe.
    ///
    /// Example: flexbench check --mechanism pipelines/wind-pump.toml
    Check(CheckArgs),
}

/// Arguments of `flexbench simulate`.
#[derive(clap::Args)]
struct SimulateArgs {
    /// Mechanism file (TOML, bench flat form or general form).
    #[arg(long)]
    mechanism: PathBuf,
    /// Recorded duration, s.
    #[arg(long, default_value_t = 2.0)]
    duration: f64,
    /// Output sample rate, Hz.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Time simulated before the recording starts, s (the motion settles).
    #[arg(long, default_value_t = 3.0)]
    settle: f64,
    /// Relative tolerance of the integrator.
    #[arg(long, default_value_t = 1e-10)]
    rtol: f64,
    /// Output directory (created if needed; files in it are replaced atomically).
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `flexbench calibrate`.
#[derive(clap::Args)]
struct CalibrateArgs {
    /// Folder of the board's views (png, jpg, bmp, tif).
    #[arg(long, required_unless_present_any = ["nominal_camera", "from_motion"])]
    views: Option<PathBuf>,
    /// No board: the bench plane and the lens's radial distortion from the recording itself,
    /// the tracks `track` wrote with the rough calibration --start, through the mechanism file
    /// --mechanism (its lengths give the scale, its ground pins the frame).
    #[arg(long, conflicts_with_all = ["views", "board", "charuco", "plane_view", "nominal_camera", "points", "clicks", "origin", "horizontal"], requires_all = ["start", "mechanism"])]
    from_motion: Option<PathBuf>,
    /// The rough calibration the tracks of --from-motion were made with (a nominal camera and
    /// clicked points, say): the fit's start.
    #[arg(long, requires = "from_motion")]
    start: Option<PathBuf>,
    /// The mechanism file of --from-motion.
    #[arg(long, requires = "from_motion")]
    mechanism: Option<PathBuf>,
    /// No board: a nominal camera for frames of WIDTHxHEIGHT px (the video's), its plane from
    /// --points (two points at a known distance when the camera faces the plane, four or more
    /// otherwise); the principal point at the frame's centre.
    #[arg(long, conflicts_with_all = ["views", "board", "charuco", "plane_view"], requires = "points")]
    nominal_camera: Option<FrameSize>,
    /// The nominal camera's focal length, px (default: the frame's larger side, assumed).
    #[arg(long, requires = "nominal_camera")]
    focal_px: Option<f64>,
    /// The nominal camera's lens distortion, "k1,k2,p1,p2,k3" (default: none).
    #[arg(long, requires = "nominal_camera")]
    distortion: Option<String>,
    /// The video the nominal camera filmed: its metadata's focal length (a phone's 35 mm
    /// equivalent) is taken when --focal-px is not given.
    #[arg(long, requires = "nominal_camera")]
    video: Option<PathBuf>,
    /// Inner corners of the chessboard, COLSxROWS (e.g. 9x6).
    #[arg(long, required_unless_present_any = ["charuco", "nominal_camera", "from_motion"])]
    board: Option<flexbench_vision::calibrate::BoardCorners>,
    /// A ChArUco board instead: its squares, XxY (e.g. 7x5), with --marker and --dictionary;
    /// views may show part of it.
    #[arg(long, conflicts_with = "board", requires_all = ["marker", "dictionary"])]
    charuco: Option<flexbench_vision::calibrate::BoardCorners>,
    /// The ChArUco markers' side, m.
    #[arg(long)]
    marker: Option<f64>,
    /// The ChArUco markers' dictionary, OpenCV's name without DICT_ (4x4_50, 5x5_100, 6x6_250,
    /// aruco_original, apriltag_36h11, ...).
    #[arg(long)]
    dictionary: Option<flexbench_vision::charuco::Dictionary>,
    /// Side of a square, m.
    #[arg(long, required_unless_present_any = ["nominal_camera", "from_motion"])]
    square: Option<f64>,
    /// The corners' detector, before cornerSubPix refines them: sb (findChessboardCornersSB, fast
    /// on views without the whole board) or classic (findChessboardCorners).
    #[arg(long, default_value = "sb")]
    detector: flexbench_vision::calibrate::DetectorKind,
    /// cornerSubPix half-window in px; default: 11, smaller for small squares.
    #[arg(long)]
    subpix_window: Option<i32>,
    /// A view of the board lying in the lever's plane (for the bench plane).
    #[arg(long)]
    plane_view: Option<PathBuf>,
    /// Pixel of the bench origin A in the plane view, "u,v".
    #[arg(long)]
    origin: Option<String>,
    /// Pixel of a second point on the horizontal through A, towards the pendulum, "u,v".
    #[arg(long)]
    horizontal: Option<String>,
    /// A TOML file with `origin = [u, v]` and `horizontal = [u, v]` (instead of the two options).
    #[arg(long, conflicts_with_all = ["origin", "horizontal"])]
    clicks: Option<PathBuf>,
    /// The bench plane without a board in it instead: a TOML file of four or more clicked
    /// points of known bench position, `[[point]]` tables of `pixel = [u, v]` (px, in the
    /// video's frames) and `bench = [x, y]` (m), optionally `click_sigma_px` (default 0.3); the
    /// frame's uncertainty from the clicks is written with the plane.
    #[arg(long, conflicts_with_all = ["origin", "horizontal", "clicks", "plane_view"])]
    points: Option<PathBuf>,
    /// Output calibration file (YAML).
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `flexbench render`.
#[derive(clap::Args)]
struct RenderArgs {
    /// Mechanism file (TOML).
    #[arg(long)]
    mechanism: PathBuf,
    /// Camera and recording settings (TOML).
    #[arg(long)]
    camera: PathBuf,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `flexbench fem`.
#[derive(clap::Args)]
struct FemArgs {
    /// Bodies table of `process` or `simulate` (t, body, phi, omega, ax, ay, epsilon).
    #[arg(long)]
    kinematics: PathBuf,
    /// Forces table of the same run (t, B_x, B_y, C_x, C_y).
    #[arg(long)]
    forces: PathBuf,
    /// Mechanism file with the lever's section (E, rho, area, inertia).
    #[arg(long)]
    mechanism: PathBuf,
    /// Number of elements along the lever.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().elements)]
    elements: usize,
    /// Element: quintic (cubic axial, quintic bending) or frame (linear axial, cubic bending).
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().element)]
    element: flexbench_fem::ElementKind,
    /// Supports in the lever frame: pinned (the bench: B and C'), clamped-free, free-free.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().supports)]
    supports: flexbench_fem::Supports,
    /// Modes followed along the cycle.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().modes)]
    modes: usize,
    /// Damping ratio of the forced response (Rayleigh, exact at the first and the highest
    /// followed mode), between 0 and 1.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().damping)]
    damping: f64,
    /// Longest integration step of the forced response, s.
    #[arg(long, default_value_t = flexbench_pipeline::pipeline_file::FemSection::default().step)]
    step: f64,
    /// Modes only: no forced response (the file's response = false).
    #[arg(long)]
    no_response: bool,
    /// The fit_residuals table of `process` on the same run: the measured deflection,
    /// compared with the forced response after removing each one's best-fit line.
    #[arg(long)]
    measured: Option<PathBuf>,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

impl FemArgs {
    /// The pipeline file's `[fem]` section these flags write, over its defaults.
    fn section(&self) -> flexbench_pipeline::pipeline_file::FemSection {
        flexbench_pipeline::pipeline_file::FemSection {
            elements: self.elements,
            element: self.element,
            supports: self.supports,
            modes: self.modes,
            damping: self.damping,
            response: !self.no_response,
            step: self.step,
        }
    }
}

/// Arguments of `flexbench smooth`.
#[derive(clap::Args)]
struct SmoothArgs {
    /// Tracks table (CSV or Parquet: frame, t, marker, u, v, x, y).
    #[arg(long)]
    tracks: PathBuf,
    /// Markers table to write (.csv or .parquet; the other format and a summary beside it).
    #[arg(long)]
    out: PathBuf,
    /// Method: rts (Kalman/RTS smoother with a periodic part, parameters from the data;
    /// the default), savgol, butterworth (zero-lag, the labs' filter) or spline (Woltring's
    /// GCV smoothing spline).
    #[arg(long)]
    method: Option<flexbench_pipeline::smooth::SmoothKind>,
    /// Unit of x and y in the tracks: m (the default), mm, cm or in.
    #[arg(long)]
    unit: Option<flexbench_pipeline::smooth::LengthUnit>,
    /// Savitzky-Golay window, samples (odd), with --method savgol (default 21).
    #[arg(long)]
    window: Option<usize>,
    /// Savitzky-Golay polynomial order, with --method savgol (default 5).
    #[arg(long)]
    order: Option<usize>,
    /// Butterworth: order of each of the two passes, with --method butterworth (default 2:
    /// the fourth-order zero-lag filter).
    #[arg(long)]
    filter_order: Option<usize>,
    /// Butterworth: the cutoff, Hz (-3 dB after both passes); without it the cutoff is
    /// chosen per coordinate by --cutoff-by.
    #[arg(long)]
    cutoff_hz: Option<f64>,
    /// Butterworth: how the cutoff is chosen: residual (Winter's residual analysis, the
    /// default) or durbin-watson (the residuals' Durbin-Watson statistic at 2).
    #[arg(long)]
    cutoff_by: Option<flexbench_pipeline::smooth::CutoffCriterion>,
    /// Smoothing spline: its odd degree, with --method spline (default 5, the quintic).
    #[arg(long)]
    spline_degree: Option<usize>,
    /// The markers' measurement noise, m (in the tracks' unit scaled to metres): the RTS
    /// smoother's instead of its maximum-likelihood estimate, the spline's known noise instead
    /// of GCV.
    #[arg(long)]
    noise_m: Option<f64>,
    /// RTS: the white-snap density, m/s^3.5 [default: its maximum-likelihood estimate].
    #[arg(long)]
    snap_density: Option<f64>,
    /// RTS: the fundamental frequency of the periodic part, Hz [default: found from the data].
    #[arg(long)]
    frequency_hz: Option<f64>,
    /// RTS: the most harmonics of the periodic part (0: none) [default: chosen from the data].
    #[arg(long)]
    harmonics: Option<usize>,
    /// Butterworth with the residual analysis: the noise line's band, "LO,HI" in Hz.
    #[arg(long, value_parser = parse_band)]
    noise_band_hz: Option<[f64; 2]>,
    /// Pipeline file whose [smooth] table sets any of the settings (the command line wins).
    #[arg(long)]
    pipeline: Option<PathBuf>,
    /// Also fit the markers' velocities and accelerations as one rigid body (the lever):
    /// writes <stem>.rigid (reference point, omega, epsilon) and <stem>.rigid_residual
    /// (the elastic part) beside the markers table.
    #[arg(long)]
    rigid_field: bool,
    /// Mechanism file giving the markers' places on their body and its reference point (B on
    /// the lever), for --rigid-field; without it the layout is learnt from the data and the
    /// reference is the markers' centroid.
    #[arg(long)]
    mechanism: Option<PathBuf>,
}

/// Arguments of `flexbench track`.
#[derive(clap::Args)]
struct TrackArgs {
    /// Video file.
    #[arg(long)]
    video: PathBuf,
    /// Calibration file (YAML, with the bench plane).
    #[arg(long)]
    calibration: PathBuf,
    /// Tracks table to write (.csv or .parquet; the other format is written beside it).
    #[arg(long)]
    out: PathBuf,
    /// Marker names along the lever from B, comma-separated (default: the mechanism's markers,
    /// else M1,M2,M3,M4,M5).
    #[arg(long)]
    markers: Option<String>,
    /// Mechanism file: its markers are found where it places them (each body's markers a rigid
    /// pattern, among any other bright blobs); without it, the markers must be the only bright
    /// discs on one line.
    #[arg(long)]
    mechanism: Option<PathBuf>,
    /// Segmentation threshold, grey level; default: halfway between median and maximum.
    #[arg(long)]
    threshold: Option<f64>,
    /// Smallest marker blob kept, px of area.
    #[arg(long, default_value_t = 6.0)]
    min_area: f64,
    /// Largest marker blob kept, px of area (a disc d px across covers 0.785 d^2).
    #[arg(long, default_value_t = 5000.0)]
    max_area: f64,
    /// Estimate the markers' depth in front of the bench plane from their rigid patterns'
    /// spacings and use it (by default the mechanism file's depths are used and the estimate
    /// only reported).
    #[arg(long)]
    estimate_depth: bool,
    /// A rolling shutter's readout, s (the time from the first row's exposure to the last's):
    /// each sample timed by its row and carried back to its frame's time.
    #[arg(long)]
    readout: Option<f64>,
    /// Estimate a rolling shutter's readout from the rigid patterns' deformation with the
    /// motion and use it (by default the readout given is used and the estimate only reported).
    #[arg(long)]
    estimate_readout: bool,
    /// False-alarm level of each test of the tracked samples (flags.csv beside the tracks).
    #[arg(long, default_value_t = flexbench_vision::track::FALSE_ALARM)]
    false_alarm: f64,
    /// The user's corrections (TOML: [[drop]], [[move]], [[swap]], [[seek]] per marker and
    /// frames), applied as the video is tracked.
    #[arg(long)]
    corrections: Option<PathBuf>,
    /// The features clicked once for markers of the template kind (TOML: [[template]] tables of
    /// marker, frame, pixel = [u, v] and half_size in px), each followed by its template.
    #[arg(long)]
    templates: Option<PathBuf>,
    /// Playback frame rate, frames/s: the frames taken as evenly spaced at this rate instead of
    /// the file's timestamps (needed for a file without timestamps, such as a raw H.264 stream).
    #[arg(long)]
    frame_rate: Option<f64>,
    /// Capture frame rate of a slow-motion recording, frames/s (e.g. 240 for a file played back
    /// at 30); default: the file's metadata, else the playback rate.
    #[arg(long)]
    capture_rate: Option<f64>,
}

/// Arguments of `flexbench overlay`.
#[derive(clap::Args)]
struct OverlayArgs {
    /// Video file.
    #[arg(long)]
    video: PathBuf,
    /// Calibration file (YAML, with the bench plane).
    #[arg(long)]
    calibration: PathBuf,
    /// Tracks table of the video.
    #[arg(long)]
    tracks: PathBuf,
    /// Flags table of the tracks (flags.csv beside them).
    #[arg(long)]
    flags: Option<PathBuf>,
    /// Folder of the process stage: the fitted mechanism (its bodies table) is drawn, and the
    /// samples that failed its residual test (fit_flags) marked.
    #[arg(long)]
    processed: Option<PathBuf>,
    /// Mechanism file (TOML).
    #[arg(long)]
    mechanism: PathBuf,
    /// Output folder: overlay.mp4 (or .avi), overlay-flagged.png, review.html, summary.json.
    #[arg(long)]
    out: PathBuf,
    /// Copy the frames without drawing: decoding plus encoding alone, the overlay's benchmark
    /// baseline.
    #[arg(long)]
    plain: bool,
}

/// Arguments of `flexbench clicks-page`.
#[derive(clap::Args)]
struct ClicksPageArgs {
    /// The board view in the lever's plane (PNG or JPEG).
    #[arg(long)]
    image: PathBuf,
    /// The page to write (HTML).
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `flexbench probe`.
#[derive(clap::Args)]
struct ProbeArgs {
    /// Video file.
    #[arg(long)]
    video: PathBuf,
    /// Playback frame rate, frames/s: the frames taken as evenly spaced at this rate instead of
    /// the file's timestamps (needed for a file without timestamps, such as a raw H.264 stream).
    #[arg(long)]
    frame_rate: Option<f64>,
    /// Capture frame rate of a slow-motion recording, frames/s (e.g. 240 for a file played back
    /// at 30); default: the file's metadata, else the playback rate.
    #[arg(long)]
    capture_rate: Option<f64>,
    /// A coloured sticker's hue learnt from one click: the pixel "U,V" (px) at the sticker's
    /// middle, in frame --frame; prints the mechanism file's keys for it.
    #[arg(long)]
    hue_at: Option<String>,
    /// The frame of --hue-at (0-based).
    #[arg(long, default_value_t = 0)]
    frame: usize,
}

/// Arguments of `flexbench run`.
#[derive(clap::Args)]
struct RunArgs {
    /// Pipeline file (TOML): [run] mechanism and recording, and one table per stage.
    pipeline: PathBuf,
    /// Output directory (instead of [run] out).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Recording folders, or folders of recording folders: a batch (instead of [run]
    /// recording and recordings).
    #[arg(long, num_args = 1..)]
    recordings: Vec<PathBuf>,
    /// Recordings processed at once in a batch (default: [run] jobs, else the cores).
    #[arg(long)]
    jobs: Option<usize>,
}

/// Arguments of `flexbench check`.
#[derive(clap::Args)]
struct CheckArgs {
    /// Mechanism file (TOML).
    #[arg(long)]
    mechanism: PathBuf,
}

pub(crate) fn bar(len: u64) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg:20} [{bar:40}] {percent:>3}% {elapsed_precise}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    pb
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Simulate(args) => simulate_command(args),
        Command::Process(args) => process::process_command(args),
        Command::Calibrate(args) => calibrate_command(args),
        Command::Render(args) => render_command(args),
        Command::Track(args) => track_command(args),
        Command::Fem(args) => fem_command(args),
        Command::Compare(args) => compare::compare_command(args),
        Command::Identify(args) => identify::identify_command(args),
        Command::Smooth(args) => smooth_command(args),
        Command::Probe(args) => probe_command(args),
        Command::Overlay(args) => overlay_command(args),
        Command::ClicksPage(args) => {
            let page = flexbench_pipeline::calibrate::clicks_page(&args.image, &args.out)
                .with_context(|| format!("the clicks page of {}", args.image.display()))?;
            println!(
                "wrote {}: open it in a browser, click A and the horizontal, download clicks.toml",
                page.display()
            );
            Ok(())
        }
        Command::Run(args) => run_command(args),
        Command::Check(args) => check_command(args),
    }
}

/// `flexbench simulate`: what [`Command::Simulate`] describes.
fn simulate_command(args: SimulateArgs) -> Result<()> {
    let SimulateArgs {
        mechanism,
        duration,
        rate,
        settle,
        rtol,
        out,
    } = args;
    let file = load(&mechanism)
        .with_context(|| format!("loading the mechanism {}", mechanism.display()))?;
    let cfg = SimConfig {
        duration,
        rate,
        settle,
        rtol,
        ..Default::default()
    };
    let pb = bar(1000);
    pb.set_message("simulating");
    let s = simulate(&file.mechanism, &cfg, &out, |f| {
        pb.set_position((f * 1000.0) as u64)
    })
    .with_context(|| format!("simulating {}", mechanism.display()))?;
    pb.finish_and_clear();
    println!(
        "simulated {} samples in {:.2} s: {} steps ({} rejected), drift {:.1e} m before projection, energy balance {:.1e} relative ({:.2e} J of {:.3} J gross work)",
        s.samples, s.seconds, s.report.steps, s.report.rejected, s.report.max_drift_before_projection,
        s.report.energy_error_relative, s.report.energy_error_j, s.report.gross_work_j
    );
    println!("wrote {} files into {}", s.files.len(), out.display());
    Ok(())
}

/// `flexbench calibrate`: what [`Command::Calibrate`] describes.
fn calibrate_command(args: CalibrateArgs) -> Result<()> {
    if let Some(tracks) = &args.from_motion {
        return calibrate_from_motion(
            tracks,
            args.start.as_deref(),
            args.mechanism.as_deref(),
            &args.out,
        );
    }
    let CalibrateArgs {
        views,
        from_motion: _,
        start: _,
        mechanism: _,
        nominal_camera,
        focal_px,
        distortion,
        video,
        board,
        charuco,
        marker,
        dictionary,
        square,
        detector,
        subpix_window,
        plane_view,
        origin,
        horizontal,
        clicks,
        points,
        out,
    } = args;
    use flexbench_pipeline::calibrate::{
        calibrate, read_clicks, read_points, CalibrateRequest, CameraSource, Clicks, NominalCamera,
        PlaneSource, CLICK_SIGMA_PX,
    };
    use flexbench_vision::calibrate::Target;
    let camera = match (nominal_camera, views, square) {
        (Some(size), _, _) => CameraSource::Nominal(flexbench_pipeline::calibrate::with_video_focal(
            NominalCamera {
                width: size.width,
                height: size.height,
                focal_px,
                focal_35mm: None,
                dist: match &distortion {
                    Some(d) => parse_distortion(d)?,
                    None => [0.0; 5],
                },
            },
            video.as_deref(),
        )?),
        (None, Some(views), Some(square)) => {
            let target = match (board, charuco, marker, dictionary) {
                (_, Some(sq), Some(marker), Some(dictionary)) => {
                    Target::charuco(sq, square, marker, dictionary)?
                }
                (Some(b), None, _, _) => Target::chessboard(b, square, detector, subpix_window),
                _ => anyhow::bail!(
                    "give the board: --board COLSxROWS (a chessboard), or --charuco XxY with --marker and --dictionary"
                ),
            };
            CameraSource::Board { views, target }
        }
        _ => anyhow::bail!(
            "give the board's views (--views, --board or --charuco, --square), or --nominal-camera WIDTHxHEIGHT with --points for footage without a board"
        ),
    };
    let clicked = match (&clicks, &origin, &horizontal) {
        (Some(c), _, _) => Some(read_clicks(c)?),
        (None, Some(o), Some(h)) => Some(Clicks {
            origin: parse_pair::<f64>(o, ',')
                .with_context(|| format!("--origin {o}: give the pixel as u,v"))?,
            horizontal: parse_pair::<f64>(h, ',')
                .with_context(|| format!("--horizontal {h}: give the pixel as u,v"))?,
            click_sigma_px: CLICK_SIGMA_PX,
        }),
        (None, None, None) => None,
        _ => anyhow::bail!("--origin and --horizontal go together (or give --clicks FILE)"),
    };
    let plane = match (plane_view, clicked) {
        (_, _) if points.is_some() => points.as_deref().map(read_points).transpose()?,
        (Some(view), Some(c)) => Some(PlaneSource::Board {
            view,
            origin: c.origin,
            horizontal: c.horizontal,
            click_sigma_px: c.click_sigma_px,
        }),
        (None, None) => None,
        _ => anyhow::bail!("the bench plane needs both --plane-view and the clicked pixels (--origin and --horizontal, or --clicks)"),
    };
    let req = CalibrateRequest { camera, plane };
    let (cal, files) = calibrate(&req, &out).context("calibrating the camera")?;
    print_calibration(&cal);
    print_written(&files);
    Ok(())
}

/// `flexbench calibrate --from-motion`: the plane and the lens from the mechanism's motion.
fn calibrate_from_motion(
    tracks: &Path,
    start: Option<&Path>,
    mechanism: Option<&Path>,
    out: &Path,
) -> Result<()> {
    let (Some(start), Some(mechanism)) = (start, mechanism) else {
        anyhow::bail!("--from-motion needs --start (the rough calibration the tracks were made with) and --mechanism");
    };
    let cal = flexbench_vision::Calibration::read(start)
        .with_context(|| format!("reading the start's calibration {}", start.display()))?;
    let mech = load(mechanism)
        .with_context(|| format!("loading the mechanism {}", mechanism.display()))?
        .mechanism;
    let (cal, rec, files) =
        flexbench_pipeline::motion_calibration::calibrate_motion(&cal, &mech, tracks, out)
            .context("calibrating the camera from the mechanism's motion")?;
    let i = &cal.intrinsics;
    println!(
        "calibrated from the motion: {} frames, {} marker samples ({} left out), {:.3} px RMS (the start's camera: {:.3} px)",
        rec.frames, rec.samples, rec.left_out, rec.rms_px, rec.start_rms_px
    );
    println!(
        "  lens: k1 {:.5} +- {:.5}, k2 {:.5} +- {:.5} (fx {:.1}, fy {:.1}, cx {:.1}, cy {:.1} px kept from the start)",
        rec.k1[0], rec.k1[1], rec.k2[0], rec.k2[1], i.fx, i.fy, i.cx, i.cy
    );
    println!(
        "  plane: scale +- {:.2e}, positions +- {:.3} mm over the region the markers swept; the start was {:.3} mm RMS off there (scale {:+.3} %)",
        rec.scale_sd,
        rec.position_sd_mm,
        1e3 * rec.start_displacement.rms_m,
        -100.0 * rec.start_displacement.scale
    );
    for w in &rec.warnings {
        eprintln!("warning: {w}");
    }
    print_written(&files);
    Ok(())
}

/// `flexbench render`: what [`Command::Render`] describes.
fn render_command(args: RenderArgs) -> Result<()> {
    let RenderArgs {
        mechanism,
        camera,
        out,
    } = args;
    let file = load(&mechanism)
        .with_context(|| format!("loading the mechanism {}", mechanism.display()))?;
    let spec = flexbench_pipeline::render::RenderSpec::load(&camera)?;
    let pb = bar(1000);
    let s = flexbench_pipeline::render::render(&file.mechanism, &spec, &out, |stage, f| {
        pb.set_message(stage.to_string());
        pb.set_position((f * 1000.0) as u64);
    })
    .with_context(|| format!("rendering into {}", out.display()))?;
    pb.finish_and_clear();
    println!(
        "rendered {} frames into {} ({} files in {})",
        s.frames,
        s.video.display(),
        s.files.len(),
        out.display()
    );
    Ok(())
}

/// The mechanism file's mechanism when one is given.
fn load_optional(
    mechanism: Option<&std::path::Path>,
) -> Result<Option<flexbench_mechanism::Mechanism>> {
    mechanism
        .map(|m| {
            load(m)
                .map(|f| f.mechanism)
                .with_context(|| format!("loading the mechanism {}", m.display()))
        })
        .transpose()
}

/// `flexbench track`: what [`Command::Track`] describes.
fn track_command(args: TrackArgs) -> Result<()> {
    let TrackArgs {
        video,
        calibration,
        out,
        markers,
        mechanism,
        threshold,
        min_area,
        max_area,
        estimate_depth,
        readout,
        estimate_readout,
        false_alarm,
        corrections,
        templates,
        frame_rate,
        capture_rate,
    } = args;
    flexbench_pipeline::track::check_areas(min_area, max_area, "--min-area", "--max-area")?;
    if !(false_alarm > 0.0 && false_alarm < 0.5) {
        anyhow::bail!(
            "--false-alarm {false_alarm}: give a probability between 0 and 0.5 (default 1e-6)"
        );
    }
    let mech = load_optional(mechanism.as_deref())?;
    let names: Vec<String> = match (&markers, &mech) {
        (Some(list), _) => list
            .split(',')
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect(),
        (None, Some(m)) => m.markers.iter().map(|k| k.name.clone()).collect(),
        (None, None) => (1..=5).map(|i| format!("M{i}")).collect(),
    };
    let (layout, (kind, kinds), codes, depths) = match &mech {
        Some(m) => (
            Some(flexbench_pipeline::track::layout_of(m, &names)?),
            flexbench_pipeline::track::kind_of(m, &names),
            flexbench_pipeline::track::codes_of(m, &names),
            flexbench_pipeline::track::depths_of(m, &names),
        ),
        None => (None, Default::default(), Vec::new(), Vec::new()),
    };
    let corrections = match &corrections {
        Some(c) => flexbench_pipeline::track::read_corrections(c, &names)?,
        None => Vec::new(),
    };
    let clicks = match &templates {
        Some(t) => flexbench_pipeline::track::read_templates(t, &names)?,
        None => Vec::new(),
    };
    let cfg = flexbench_vision::track::TrackConfig {
        markers: names,
        threshold,
        min_area,
        max_area,
        kind,
        kinds,
        codes,
        templates: clicks,
        depths,
        estimate_depth,
        readout: flexbench_pipeline::track::check_readout(
            readout,
            estimate_readout,
            ["--readout", "--estimate-readout"],
        )?,
        estimate_readout,
        layout,
        alpha: false_alarm,
        corrections,
        timing: TimeBaseConfig {
            frame_rate,
            capture_rate,
        },
    };
    let pb = bar(1);
    pb.set_message("tracking");
    let (s, files) = flexbench_pipeline::track::track(&video, &calibration, &cfg, &out, |k, n| {
        pb.set_length(n.max(k).max(1) as u64);
        pb.set_position(k as u64);
    })
    .with_context(|| format!("tracking {}", video.display()))?;
    pb.finish_and_clear();
    println!(
        "tracked {} frames at {:.0} frames/s: {} detections, {} gaps, {} rejected blobs, {} samples flagged, locked at frame {}, median sigma {:.3} px",
        s.frames, s.frames_per_second, s.detections, s.gaps, s.rejected_blobs, s.flagged, s.lock_frame, s.median_sigma_px,
    );
    if s.outlined > 0 {
        println!(
            "{} samples of discs that touched something of their shade or the frame's edge: each fitted to its visible outline about its prediction{}",
            s.outlined,
            match s.outlined_by_spacing {
                0 => String::new(),
                n => format!(" ({n} beyond the motion's gate, at their body's spacing from a marker seen in the same frame)"),
            }
        );
    }
    if s.luma_refined > 0 {
        println!(
            "{} samples of coloured stickers: the hue's centre refined on the frame's luma, where the sticker stands out from its ring",
            s.luma_refined
        );
    }
    println!("{}", s.timing.sentence());
    if let Some(d) = &s.depth {
        println!(
            "the markers' spacings: {:+.3} % against the mechanism file's, a depth of {:.2} +- {:.2} mm in front of the bench plane ({} frames); {:.2} mm used{}",
            (d.scale - 1.0) * 100.0,
            d.depth_m * 1e3,
            d.sigma_m * 1e3,
            d.frames,
            d.used_m * 1e3,
            if d.applied { " (estimated)" } else { "" }
        );
    }
    if let Some(r) = &s.shutter {
        println!(
            "rolling shutter: a readout of {:.2} ms; the markers seen {:.2} ms after their frame's time on average ({:.2} ms at most), carried back up to {:.3} mm with an error of {:.4} mm RMS ({:.4} mm at most) against a noise of {:.4} mm",
            r.readout_s * 1e3,
            r.mean_delay_ms,
            r.max_delay_ms,
            r.max_shift_mm,
            r.carry_error_rms_mm,
            r.carry_error_max_mm,
            r.noise_mm
        );
    }
    if let Some(r) = &s.readout {
        println!(
            "the rigid patterns' deformation with the motion: a rolling shutter's readout of {:.2} +- {:.2} ms ({} body-frames, {:.3} mm RMS misfit); {:.2} ms used{}",
            r.readout_s * 1e3,
            r.sigma_s * 1e3,
            r.fits,
            r.misfit_mm,
            r.used_s * 1e3,
            if r.applied { " (estimated)" } else { "" }
        );
    }
    for w in s.warnings() {
        println!("warning: {w}");
    }
    print_written(&files);
    Ok(())
}

/// `flexbench overlay`: what [`Command::Overlay`] describes.
fn overlay_command(args: OverlayArgs) -> Result<()> {
    let file = load(&args.mechanism)
        .with_context(|| format!("loading the mechanism {}", args.mechanism.display()))?;
    let bodies = args.processed.as_ref().map(|p| p.join("bodies.parquet"));
    let fit_flags = args.processed.as_ref().map(|p| p.join("fit_flags.parquet"));
    let flags: Vec<&std::path::Path> = args
        .flags
        .iter()
        .chain(fit_flags.iter().filter(|f| f.exists()))
        .map(PathBuf::as_path)
        .collect();
    let inputs = flexbench_pipeline::overlay::OverlayInputs {
        video: &args.video,
        calibration: &args.calibration,
        tracks: &args.tracks,
        flags: &flags,
        bodies: bodies.as_deref(),
        mechanism: &file.mechanism,
        plain: args.plain,
    };
    let pb = bar(1);
    pb.set_message("overlay");
    let (record, files) = flexbench_pipeline::overlay::overlay(&inputs, &args.out, |k, n| {
        pb.set_length(n.max(k).max(1) as u64);
        pb.set_position(k as u64);
    })
    .with_context(|| format!("drawing the overlay of {}", args.video.display()))?;
    pb.finish_and_clear();
    println!(
        "overlay of {} frames ({}), {} flagged sample(s) marked{}",
        record.frames,
        record.codec,
        record.flagged,
        if record.mechanism_drawn {
            ", the fitted mechanism drawn"
        } else {
            ""
        }
    );
    print_written(&files);
    Ok(())
}

/// `flexbench fem`: what [`Command::Fem`] describes.
fn fem_command(args: FemArgs) -> Result<()> {
    let cfg = args.section().config(args.measured.clone())?;
    let FemArgs {
        kinematics,
        forces,
        mechanism,
        out,
        ..
    } = args;
    let pb = bar(1);
    pb.set_message("modes along the cycle");
    let (summary, files) =
        flexbench_pipeline::fem::fem(&kinematics, &forces, &mechanism, &cfg, &out, |k, n| {
            pb.set_length(n as u64);
            pb.set_position(k as u64);
        })
        .with_context(|| format!("the lever's modes along {}", kinematics.display()))?;
    pb.finish_and_clear();
    print_warnings(&summary.warnings);
    println!(
        "{} samples, {} modes followed (smallest MAC {:.3}); wrote {} files into {}",
        summary.samples,
        summary.modes,
        summary.smallest_mac_along_the_cycle,
        files.len(),
        out.display()
    );
    Ok(())
}

/// `flexbench smooth`: what [`Command::Smooth`] describes.
impl SmoothArgs {
    /// The pipeline file's `[smooth]` table these flags write (each key left out unset).
    fn settings(&self) -> flexbench_pipeline::smooth::SmoothSettings {
        flexbench_pipeline::smooth::SmoothSettings {
            method: self.method,
            unit: self.unit,
            window: self.window,
            order: self.order,
            noise_m: self.noise_m,
            snap_density: self.snap_density,
            frequency_hz: self.frequency_hz,
            harmonics: self.harmonics,
            filter_order: self.filter_order,
            cutoff_hz: self.cutoff_hz,
            cutoff_by: self.cutoff_by,
            noise_band_hz: self.noise_band_hz,
            spline_degree: self.spline_degree,
            rigid_field: self.rigid_field.then_some(true),
        }
    }
}

fn smooth_command(args: SmoothArgs) -> Result<()> {
    use flexbench_pipeline::smooth::{RigidRequest, SmoothSettings};
    let cli_settings = args.settings();
    let SmoothArgs {
        tracks,
        out,
        pipeline,
        mechanism,
        ..
    } = args;
    let file = match &pipeline {
        Some(p) => SmoothSettings::from_pipeline_file(p)
            .with_context(|| format!("reading the pipeline file {}", p.display()))?,
        None => SmoothSettings::default(),
    };
    let settings = file.overridden_by(&cli_settings);
    let (factor, method) = settings.resolve()?;
    let mech = load_optional(mechanism.as_deref())?;
    let rigid = RigidRequest::requested(settings.rigid_field.unwrap_or(false), mech.as_ref())?;
    let files = flexbench_pipeline::smooth::smooth(&tracks, factor, method, rigid, &out)
        .with_context(|| format!("smoothing {}", tracks.display()))?;
    print_written(&files);
    Ok(())
}

/// `flexbench probe`: what [`Command::Probe`] describes.
fn probe_command(args: ProbeArgs) -> Result<()> {
    let ProbeArgs {
        video,
        frame_rate,
        capture_rate,
        hue_at,
        frame,
    } = args;
    if let Some(at) = hue_at {
        return hue_command(&video, &at, frame);
    }
    let timing = TimeBaseConfig {
        frame_rate,
        capture_rate,
    };
    let p = flexbench_vision::track::probe_video(&video, &timing)?;
    println!(
        "{}: {} frames of {}x{} at {:.3} fps (header), decoded at {:.0} frames/s",
        video.display(),
        p.frames,
        p.width,
        p.height,
        p.fps,
        p.frames_per_second
    );
    match (&p.timing, &p.timing_problem) {
        (Some(t), _) => {
            println!("{}", t.sentence());
            for w in &t.warnings {
                println!("warning: {w}");
            }
        }
        (None, Some(why)) => println!("no time base: {why}"),
        (None, None) => {}
    }
    Ok(())
}

/// `flexbench probe --hue-at`: the hue of the sticker clicked at "U,V" in frame `frame`.
fn hue_command(video: &std::path::Path, at: &str, frame: usize) -> Result<()> {
    let (u, v) = at
        .split_once(',')
        .and_then(|(u, v)| Some((u.trim().parse::<f64>().ok()?, v.trim().parse::<f64>().ok()?)))
        .ok_or_else(|| {
            anyhow::anyhow!("--hue-at {at}: give the pixel as U,V (px, e.g. 412.5,208)")
        })?;
    let img = flexbench_vision::track::frame_of(video, frame)
        .with_context(|| format!("reading frame {frame} of {}", video.display()))?;
    let h = flexbench_vision::response::hue_at(&img, u, v, 6.0).with_context(|| {
        format!(
            "the hue at ({u}, {v}) in frame {frame} of {}",
            video.display()
        )
    })?;
    println!(
        "hue at ({u}, {v}) in frame {frame}: {:.1} deg, spread {:.1} deg over {} coloured pixels within 6 px",
        h.hue_deg, h.spread_deg, h.pixels
    );
    println!(
        "in the mechanism file: kind = \"colour\", hue = {:.1}, hue_tolerance = {:.0}",
        h.hue_deg, h.tolerance_deg
    );
    Ok(())
}

/// `flexbench run`: what [`Command::Run`] describes.
fn run_command(args: RunArgs) -> Result<()> {
    let RunArgs {
        pipeline,
        out,
        recordings,
        jobs,
    } = args;
    run_pipeline(&pipeline, out, recordings, jobs)
}

/// `flexbench check`: what [`Command::Check`] describes.
fn check_command(args: CheckArgs) -> Result<()> {
    let CheckArgs { mechanism } = args;
    let file = load(&mechanism)
        .with_context(|| format!("loading the mechanism {}", mechanism.display()))?;
    let m = &file.mechanism;
    println!(
        "{}: {} bodies, {} joints, {} degrees of freedom, {} markers",
        m.name,
        m.bodies.len(),
        m.joints.len(),
        m.dof(),
        m.markers.len()
    );
    for b in &m.bodies {
        println!(
            "  body {:<8} mass {:.4} kg, inertia {:.6} kg m^2 about its centroid ({:.4}, {:.4}) m",
            b.name, b.mass, b.inertia, b.centroid.x, b.centroid.y
        );
    }
    for f in &m.forces {
        println!("  force {}", f.describe());
    }
    println!(
        "  forces table columns: t, {}",
        m.force_columns().join(", ")
    );
    let worst = m
        .check_full_turn()
        .context("turning the first driver a whole turn")?;
    println!(
        "  assembles over a whole turn of the {}; worst condition number {:.1}",
        m.drivers[0].name, worst
    );
    Ok(())
}

/// `flexbench run`: one recording, or a batch.
fn run_pipeline(
    pipeline: &std::path::Path,
    out: Option<PathBuf>,
    recordings: Vec<PathBuf>,
    jobs: Option<usize>,
) -> Result<()> {
    let clock = std::time::Instant::now();
    let plan = flexbench_pipeline::run::RunPlan::resolve(pipeline, out, recordings)?;
    if plan.batch.is_empty() {
        run_one(&plan, clock)
    } else {
        run_many(&plan, jobs, clock)
    }
}

/// The progress bars' style.
fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg:40} [{bar:30}] {percent:>3}% {elapsed_precise}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// `flexbench run` on one recording (the pipeline file's [run] recording): a bar per stage.
fn run_one(plan: &flexbench_pipeline::run::RunPlan, clock: std::time::Instant) -> Result<()> {
    use flexbench_pipeline::run::{run_recording, RunEvent};
    let style = bar_style();
    let (name, rec) = plan.recording()?;
    let mut pb: Option<ProgressBar> = None;
    let mut label = String::new();
    // Each stage's label by name: a stage run beside later ones (the overlay) ends after them.
    let mut labels: HashMap<String, String> = HashMap::new();
    let summary = run_recording(
        &plan.file,
        &plan.pipeline,
        &rec,
        &plan.out,
        &mut |e| match e {
            RunEvent::Stage { name, index, of } => {
                label = format!("[{index}/{of}] {name}");
                labels.insert(name, label.clone());
                if let Some(b) = pb.take() {
                    b.finish_and_clear();
                }
                let b = ProgressBar::new(1000).with_style(style.clone());
                b.set_message(label.clone());
                pb = Some(b);
            }
            RunEvent::Progress(what, f) => {
                if let Some(b) = &pb {
                    b.set_message(format!("{label}: {what}"));
                    b.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64);
                }
            }
            RunEvent::Warning(w) => match &pb {
                Some(b) => b.suspend(|| eprintln!("warning: {w}")),
                None => eprintln!("warning: {w}"),
            },
            RunEvent::Done(o) => {
                if let Some(b) = pb.take() {
                    b.finish_and_clear();
                }
                let label = labels.get(&o.name).unwrap_or(&label);
                println!(
                    "{label:<22} {:>8.2} s  {}",
                    o.seconds,
                    if o.ran { "ran" } else { "unchanged: kept" }
                );
            }
        },
    )
    .with_context(|| format!("running {} on recording {name}", plan.pipeline.display()))?;
    let ran = summary.outcomes.iter().filter(|o| o.ran).count();
    println!(
        "{} of {} stages ran in {:.2} s; report {}; manifest {}",
        ran,
        summary.outcomes.len(),
        clock.elapsed().as_secs_f64(),
        summary.report.display(),
        summary.manifest.display()
    );
    Ok(())
}

/// `flexbench run` on a batch of recordings, `jobs` at once: a bar per recording, then a
/// line per recording and the summary tables.
fn run_many(
    plan: &flexbench_pipeline::run::RunPlan,
    jobs: Option<usize>,
    clock: std::time::Instant,
) -> Result<()> {
    use flexbench_pipeline::run::{discover_recordings, run_batch, RunEvent};
    let flexbench_pipeline::run::RunPlan {
        file,
        pipeline,
        mechanism,
        out,
        batch,
        ..
    } = plan;
    let style = bar_style();
    let folders = discover_recordings(batch)?;
    let jobs = jobs
        .or(file.run.jobs)
        .unwrap_or_else(flexbench_pipeline::threads);
    let multi = indicatif::MultiProgress::new();
    let bars: std::collections::BTreeMap<String, ProgressBar> = folders
        .iter()
        .map(|f| {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let b = multi.add(ProgressBar::new(1000).with_style(style.clone()));
            b.set_message(format!("{name}: waiting"));
            (name, b)
        })
        .collect();
    let stage_of: std::sync::Mutex<std::collections::BTreeMap<String, String>> = Default::default();
    let events = |name: &str, e: RunEvent| {
        let Some(b) = bars.get(name) else { return };
        match e {
            RunEvent::Stage {
                name: stage,
                index,
                of,
            } => {
                let l = format!("{name}: [{index}/{of}] {stage}");
                b.set_message(l.clone());
                b.set_position(0);
                if let Ok(mut m) = stage_of.lock() {
                    m.insert(name.to_string(), l);
                }
            }
            RunEvent::Progress(_, f) => b.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64),
            RunEvent::Warning(w) => multi.suspend(|| eprintln!("warning: {name}: {w}")),
            RunEvent::Done(_) => b.set_position(1000),
        }
    };
    let (items, files) = run_batch(file, pipeline, mechanism, &folders, out, jobs, &events)?;
    for b in bars.values() {
        b.finish_and_clear();
    }
    print_batch(&items, &files, clock.elapsed().as_secs_f64())
}

/// The batch's outcome: a line per recording (its report, or its error), the summary tables'
/// paths; an error when a recording failed.
fn print_batch(
    items: &[flexbench_pipeline::run::BatchItem],
    files: &[PathBuf],
    seconds: f64,
) -> Result<()> {
    let failed: Vec<&flexbench_pipeline::run::BatchItem> =
        items.iter().filter(|i| i.result.is_err()).collect();
    for it in items {
        match &it.result {
            Ok(r) => println!(
                "{:<20} ok      {} stage(s) ran; report {}",
                it.folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                r.outcomes.iter().filter(|o| o.ran).count(),
                r.report.display()
            ),
            Err(e) => eprintln!(
                "{:<20} FAILED  {e}",
                it.folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ),
        }
    }
    println!(
        "{} recording(s), {} failed, in {:.2} s; summary {}",
        items.len(),
        failed.len(),
        seconds,
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !failed.is_empty() {
        anyhow::bail!("{} of {} recordings failed (each error above and in the summary); the others' reports are written", failed.len(), items.len());
    }
    Ok(())
}

/// Print a stage's warnings on standard error.
fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// Print the files a command wrote.
fn print_written(files: &[PathBuf]) {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
}

/// Print what a calibration found.
fn print_calibration(cal: &flexbench_vision::Calibration) {
    let i = cal.intrinsics;
    match &cal.distortion_model {
        Some(m) if cal.per_view.is_empty() && m.starts_with("nominal") => println!("{m}"),
        _ => println!(
            "calibrated from {} of {} views: RMS reprojection error {:.4} px",
            cal.per_view.len(),
            cal.per_view.len() + cal.rejected.len(),
            cal.rms
        ),
    }
    println!(
        "  fx {:.3} fy {:.3} cx {:.3} cy {:.3} px; k1 {:.5} k2 {:.5} p1 {:.6} p2 {:.6} k3 {:.5}",
        i.fx, i.fy, i.cx, i.cy, i.dist[0], i.dist[1], i.dist[2], i.dist[3], i.dist[4]
    );
    if cal.std_intrinsics.len() >= 4 {
        let s = &cal.std_intrinsics;
        println!(
            "  standard deviations: fx {:.3} fy {:.3} cx {:.3} cy {:.3} px",
            s[0], s[1], s[2], s[3]
        );
    }
    for (n, why) in &cal.rejected {
        println!("  rejected {n}: {why}");
    }
    match (&cal.plane, &cal.plane_uncertainty) {
        (Some(_), Some(u)) => println!(
            "  bench plane: from the clicked points; uncertainty for {:.2} px clicks: origin {:.3} mm, horizontal {:.3} mrad, scale {:.2e}{}",
            u.click_sigma_px,
            u.origin_mm,
            u.angle_mrad,
            u.scale,
            u.beyond_similarity_mm.map_or(String::new(), |b| format!(
                "; beyond that similarity {b:.3} mm RMS over its points (not carried to the forces)"
            ))
        ),
        (Some(_), None) => println!("  bench plane: calibrated"),
        (None, _) => println!("  bench plane: not given (intrinsics only)"),
    }
}

/// A video frame's size, px, as "WIDTHxHEIGHT".
#[derive(Debug, Clone, Copy)]
struct FrameSize {
    width: i32,
    height: i32,
}

impl std::str::FromStr for FrameSize {
    type Err = String;

    fn from_str(text: &str) -> Result<FrameSize, String> {
        parse_pair::<i32>(text, 'x')
            .ok()
            .filter(|(w, h)| *w >= 2 && *h >= 2)
            .map(|(width, height)| FrameSize { width, height })
            .ok_or_else(|| {
                format!("\"{text}\": give the frame's size in px as WIDTHxHEIGHT, e.g. 1280x720")
            })
    }
}

/// Parse "k1,k2,p1,p2,k3" (OpenCV's order; fewer values leave the rest at zero).
fn parse_distortion(text: &str) -> Result<[f64; 5]> {
    let mut out = [0.0; 5];
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > 5 {
        anyhow::bail!("--distortion {text}: give at most five coefficients, k1,k2,p1,p2,k3");
    }
    for (o, p) in out.iter_mut().zip(&parts) {
        *o = p
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| {
                anyhow::anyhow!("--distortion {text}: '{p}' is not a number; give k1,k2,p1,p2,k3")
            })?;
    }
    Ok(out)
}

/// Parse "a<sep>b" into two numbers.
/// A band of frequencies from "LO,HI" (Hz), as the pipeline file's two-number arrays.
fn parse_band(text: &str) -> Result<[f64; 2]> {
    let (lo, hi) = parse_pair::<f64>(text, ',')?;
    Ok([lo, hi])
}

fn parse_pair<T: std::str::FromStr>(text: &str, sep: char) -> Result<(T, T)> {
    let (a, b) = text
        .split_once(sep)
        .ok_or_else(|| anyhow::anyhow!("'{text}' has no '{sep}'"))?;
    let a = a
        .trim()
        .parse::<T>()
        .map_err(|_| anyhow::anyhow!("'{a}' is not a number"))?;
    let b = b
        .trim()
        .parse::<T>()
        .map_err(|_| anyhow::anyhow!("'{b}' is not a number"))?;
    Ok((a, b))
}

/// The allocator: mimalloc, for the chain's millions of small per-sample matrices (glibc's
/// left the process stage at twice its live memory in holes, and spent a tenth of its time).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option `purge_delay` by its number in the mimalloc 3 this build links
/// (libmimalloc-sys 0.1.49's `mi_option_e`; the crate's named constants follow mimalloc 2's
/// numbering). A test checks the number against the option's documented default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory freed by a stage goes back to the system within 10 ms (mimalloc's default: 1 s) and
/// no transparent huge page is formed (mimalloc asks for them on its arenas, and a partly used
/// 2 MB page is resident whole): on the 100 s render the chain's peak resident memory
/// 357-389 -> 295 MB at the same wall time (benches/long-run.sh; purging at once, 0 ms, cost
/// a fifth of the time). Set before the stages allocate; the few pages made before `main`
/// keep their size.
fn tune_allocator() {
    // SAFETY: mi_option_set stores an integer in mimalloc's option table (thread-safe); prctl
    // with PR_SET_THP_DISABLE only sets a flag of this process's address space.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10);
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    // A closed standard output (`flexbench probe ... | head -1`) ends the process quietly, as
    // any Unix tool, instead of a panic at the next line printed. Outputs are written to
    // temporary files and renamed, so an end at any moment loses no earlier result.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // polars' thread pool (table reading and writing) follows flexbench's thread count unless
    // POLARS_MAX_THREADS says otherwise; set before any thread exists and before polars reads it.
    tune_allocator();
    if std::env::var_os("POLARS_MAX_THREADS").is_none() {
        std::env::set_var(
            "POLARS_MAX_THREADS",
            flexbench_pipeline::threads().to_string(),
        );
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use libmimalloc_sys::mi_option_get;

    /// The option numbered [`super::MI_OPTION_PURGE_DELAY`] is mimalloc's purge delay: it
    /// holds that option's documented default (1000 ms) and its neighbours theirs (use_numa_nodes
    /// 0 at 16, os_tag 100 at 18, max_errors 32 at 19), which a renumbering would not.
    #[test]
    fn purge_delay_is_the_option_numbered() {
        // SAFETY: reading mimalloc's option table.
        let at = |n| unsafe { mi_option_get(n) };
        let n = super::MI_OPTION_PURGE_DELAY;
        assert_eq!([at(n), at(n + 1), at(n + 3), at(n + 4)], [1000, 0, 100, 32]);
    }
}
