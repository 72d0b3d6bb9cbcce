//! `flexbench calibrate` and `flexbench clicks-page`: the camera and the bench plane.
//!
//! The calibration's settings have the pipeline file's `[calibrate]` keys and defaults: the
//! options fill a [`CalibrateSection`], and the section's own conversion (`target`, `nominal`)
//! accepts or refuses them in the words a run uses (`flag_walk.rs` walks every option).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use flexbench_mechanism::file::load;
use flexbench_pipeline::job::{CalibrateInputs, CalibrateJob, Job};
use flexbench_pipeline::pipeline_file::CalibrateSection;

use crate::{parse_pair, print_written};

/// Arguments of `flexbench calibrate`.
#[derive(clap::Args)]
pub(crate) struct CalibrateArgs {
    /// Folder of the board's views (png, jpg, bmp, tif).
    #[arg(long)]
    views: Option<PathBuf>,
    /// No board: the bench plane and the lens's radial distortion from the recording itself,
    /// the tracks `track` wrote with the rough calibration --start, through the mechanism file
    /// --mechanism (its lengths give the scale, its ground pins the frame).
    #[arg(long, conflicts_with_all = ["views", "board", "square", "detector", "subpix_window", "charuco", "marker", "dictionary", "plane_view", "nominal_camera", "points", "clicks", "origin", "horizontal"], requires_all = ["start", "mechanism"])]
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
    #[arg(long, conflicts_with_all = ["views", "board", "square", "detector", "subpix_window", "charuco", "marker", "dictionary", "plane_view"], requires = "points")]
    nominal_camera: Option<FrameSize>,
    /// The nominal camera's focal length, px (default: the frame's larger side, assumed).
    #[arg(long, requires = "nominal_camera")]
    focal_px: Option<f64>,
    /// The nominal camera's lens distortion, "k1,k2,p1,p2,k3" (default: none).
    #[arg(long, requires = "nominal_camera", allow_hyphen_values = true)]
    distortion: Option<String>,
    /// The video the nominal camera filmed: its metadata's focal length (a phone's 35 mm
    /// equivalent) is taken when --focal-px is not given.
    #[arg(long, requires = "nominal_camera")]
    video: Option<PathBuf>,
    /// Inner corners of the chessboard, COLSxROWS.
    #[arg(long, default_value_t = CalibrateSection::default().board)]
    board: flexbench_vision::calibrate::BoardCorners,
    /// A ChArUco board instead: its squares, XxY (e.g. 7x5), with --marker and --dictionary;
    /// views may show part of it.
    #[arg(long, requires_all = ["marker", "dictionary"])]
    charuco: Option<flexbench_vision::calibrate::BoardCorners>,
    /// The ChArUco markers' side, m.
    #[arg(long)]
    marker: Option<f64>,
    /// The ChArUco markers' dictionary, OpenCV's name without DICT_ (4x4_50, 5x5_100, 6x6_250,
    /// aruco_original, apriltag_36h11, ...).
    #[arg(long)]
    dictionary: Option<flexbench_vision::charuco::Dictionary>,
    /// Side of a square, m (needed with a board).
    #[arg(long)]
    square: Option<f64>,
    /// The corners' detector, before cornerSubPix refines them: sb (findChessboardCornersSB, fast
    /// on views without the whole board) or classic (findChessboardCorners).
    #[arg(long, default_value_t = CalibrateSection::default().detector)]
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

/// Arguments of `flexbench clicks-page`.
#[derive(clap::Args)]
pub(crate) struct ClicksPageArgs {
    /// The board view in the lever's plane (PNG or JPEG).
    #[arg(long)]
    image: PathBuf,
    /// The page to write (HTML).
    #[arg(long)]
    out: PathBuf,
}

impl CalibrateArgs {
    /// The pipeline file's `[calibrate]` section these options write: each option given
    /// replaces the section's default, as the same key in the file would.
    pub fn section(&self) -> Result<CalibrateSection> {
        Ok(CalibrateSection {
            board: self.board,
            square: self.square,
            detector: self.detector,
            subpix_window: self.subpix_window,
            charuco: self.charuco,
            marker: self.marker,
            dictionary: self.dictionary,
            nominal_camera: self
                .nominal_camera
                .map(|s| format!("{}x{}", s.width, s.height)),
            focal_px: self.focal_px,
            distortion: self
                .distortion
                .as_deref()
                .map(parse_distortion)
                .transpose()?,
            from_motion: self.from_motion.is_some(),
        })
    }
}

/// `flexbench calibrate`: what `Command::Calibrate` describes.
pub(crate) fn calibrate_command(args: CalibrateArgs) -> Result<()> {
    if let Some(tracks) = &args.from_motion {
        return calibrate_from_motion(
            tracks,
            args.start.as_deref(),
            args.mechanism.as_deref(),
            &args.out,
        );
    }
    let section = args.section()?;
    let inputs = CalibrateInputs {
        views: args.views.as_deref(),
        plane: plane_source(&args)?,
        video: args.video.as_deref(),
    };
    let made = CalibrateJob::run(&section, &inputs, &args.out, &mut |_| {})
        .context("calibrating the camera")?;
    print_calibration(&made.record);
    print_written(&made.files);
    Ok(())
}

/// The bench plane the flags give: clicked points of known bench position, or a board view in
/// the lever's plane with its clicked origin and horizontal; None for the camera alone.
fn plane_source(
    args: &CalibrateArgs,
) -> Result<Option<flexbench_pipeline::calibrate::PlaneSource>> {
    use flexbench_pipeline::calibrate::{
        read_clicks, read_points, Clicks, PlaneSource, CLICK_SIGMA_PX,
    };
    if let Some(points) = &args.points {
        return Ok(Some(read_points(points)?));
    }
    let clicked = match (&args.clicks, &args.origin, &args.horizontal) {
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
    Ok(match (&args.plane_view, clicked) {
        (Some(view), Some(c)) => Some(PlaneSource::Board {
            view: view.clone(),
            origin: c.origin,
            horizontal: c.horizontal,
            click_sigma_px: c.click_sigma_px,
        }),
        (None, None) => None,
        _ => anyhow::bail!("the bench plane needs both --plane-view and the clicked pixels (--origin and --horizontal, or --clicks)"),
    })
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

/// `flexbench clicks-page`: what `Command::ClicksPage` describes.
pub(crate) fn clicks_page_command(args: ClicksPageArgs) -> Result<()> {
    let page = flexbench_pipeline::calibrate::clicks_page(&args.image, &args.out)
        .with_context(|| format!("the clicks page of {}", args.image.display()))?;
    println!(
        "wrote {}: open it in a browser, click A and the horizontal, download clicks.toml",
        page.display()
    );
    Ok(())
}
