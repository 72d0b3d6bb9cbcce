//! `flexbench calibrate`: chessboard views (and a board view in the lever's plane with the two
//! clicked pixels) -> the calibration file (OpenCV FileStorage YAML) and, beside it, every kept
//! corner's reprojection residual (`<stem>.corners.csv`: view, u, v, du, dv in px). Without a
//! board, a nominal camera ([`NominalCamera`]) and the plane from clicked points of known bench
//! position: the calibration file alone.

use std::path::{Path, PathBuf};

use flexbench_vision::bench_frame::{
    bench_plane_from_points, frame_uncertainty, ClickedPoint, FrameModel,
};
use flexbench_vision::calibrate::{calibrate_target, image_files, read_grey, Target};
use flexbench_vision::camera::CornerResidual;
use flexbench_vision::camera::FrameUncertainty;
use flexbench_vision::Calibration;

use crate::PipelineError;

/// A pixel of an image: (u, v), px.
pub type Pixel = (f64, f64);

/// What to calibrate from.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateRequest {
    /// Where the camera's intrinsics come from.
    pub camera: CameraSource,
    /// Where the bench plane comes from, if it is wanted.
    pub plane: Option<PlaneSource>,
}

/// Where the camera's intrinsics come from (a closed set).
#[derive(Debug, Clone, PartialEq)]
pub enum CameraSource {
    /// Views of a board.
    Board {
        /// Folder of the board's views (png, jpg, bmp, tif).
        views: PathBuf,
        /// The board (a chessboard and how its corners are found, or a ChArUco board), the
        /// same in the views and the plane view.
        target: Target,
    },
    /// No board: a nominal camera, its plane from clicked points (`NominalCamera`).
    Nominal(NominalCamera),
}

/// A nominal camera for footage without a board: the frame's size, a focal length given or
/// assumed (the larger side, a 53 deg field of view), the principal point at the frame's centre,
/// the lens's distortion given or none. Without distortion the plane's metric from clicked
/// points does not depend on the focal length or the principal point (a facing camera's
/// similarity, a tilted camera's homography): they matter only for what leaves the plane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NominalCamera {
    /// Frame width, px.
    pub width: i32,
    /// Frame height, px.
    pub height: i32,
    /// Focal length, px (None: from `focal_35mm`, else assumed, the larger side).
    pub focal_px: Option<f64>,
    /// The focal length the video's metadata gives, mm in 35 mm equivalent (`lens`).
    pub focal_35mm: Option<f64>,
    /// Distortion k1, k2, p1, p2, k3 (OpenCV's order; zeros: none).
    pub dist: [f64; 5],
}

impl NominalCamera {
    /// Whether the focal length is read from the video's metadata (none given): the video is
    /// then one of the calibration's inputs.
    pub fn focal_from_video(&self) -> bool {
        self.focal_px.is_none()
    }

    /// The focal length, px: given, else from the video's 35 mm equivalent (`lens`), else the
    /// frame's larger side.
    pub fn focal(&self) -> f64 {
        let from_tag = self.focal_35mm.map(|mm| {
            flexbench_vision::lens::FocalTag {
                key: String::new(),
                mm_35: mm,
            }
            .focal_px(self.width, self.height)
        });
        self.focal_px
            .or(from_tag)
            .unwrap_or(self.width.max(self.height) as f64)
    }

    /// The camera's intrinsics, checked: a frame of positive size, a positive focal length,
    /// finite coefficients.
    pub fn intrinsics(&self) -> Result<flexbench_vision::Intrinsics, PipelineError> {
        let bad = |why: String| Err(PipelineError::Input(format!("nominal camera: {why}")));
        if self.width < 2 || self.height < 2 {
            return bad(format!(
                "a frame of {} x {} px: give the video's frame size, WIDTHxHEIGHT (1280x720, say)",
                self.width, self.height
            ));
        }
        let f = self.focal();
        if !(f.is_finite() && f > 0.0) {
            return bad(format!(
                "a focal length of {f} px: give it above 0 (the camera's focal length over its pixel pitch), or leave it out"
            ));
        }
        if !self.dist.iter().all(|d| d.is_finite()) {
            return bad("the distortion coefficients must be finite numbers".into());
        }
        Ok(flexbench_vision::Intrinsics {
            width: self.width,
            height: self.height,
            fx: f,
            fy: f,
            cx: (self.width as f64 - 1.0) / 2.0,
            cy: (self.height as f64 - 1.0) / 2.0,
            dist: self.dist,
        })
    }

    /// The assumptions in words, as the calibration file's `distortion_model` states them.
    pub fn describe(&self) -> String {
        let focal = match (self.focal_px, self.focal_35mm) {
            (Some(f), _) => format!("focal length {f} px (given)"),
            (None, Some(mm)) => format!(
                "focal length {:.1} px (from the video's metadata: {mm} mm in 35 mm equivalent)",
                self.focal()
            ),
            (None, None) => format!(
                "focal length {} px (assumed: the larger side; it does not change the plane's metric without distortion)",
                self.width.max(self.height)
            ),
        };
        let dist = match self.dist.iter().all(|d| *d == 0.0) {
            true => "no lens distortion (assumed: straight lines must look straight)".to_string(),
            false => format!("distortion {:?} (given)", self.dist),
        };
        format!("nominal camera, no board: {focal}, principal point at the frame's centre, {dist}")
    }
}

/// A nominal camera's focal length from the video's metadata when none is given (`lens`).
pub fn with_video_focal(
    mut n: NominalCamera,
    video: Option<&Path>,
) -> Result<NominalCamera, PipelineError> {
    if let (true, Some(v)) = (n.focal_from_video(), video) {
        n.focal_35mm = flexbench_vision::lens::focal_tag(v)?.map(|t| t.mm_35);
    }
    Ok(n)
}

/// Where the bench plane comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PlaneSource {
    /// A view of the board lying in the lever's plane and the pixels of the bench origin A and
    /// of a second point on the horizontal through A (u, v).
    Board {
        /// The plane view.
        view: PathBuf,
        /// The pixel of A.
        origin: Pixel,
        /// The pixel of a point on the horizontal through A, towards the pendulum.
        horizontal: Pixel,
        /// The clicks' standard deviation per coordinate, px, for the frame's uncertainty.
        click_sigma_px: f64,
    },
    /// Clicked pixels of points of known bench position (`points.toml`): four or more, or two
    /// when the camera faces the plane; with the clicks' standard deviation (px) for the
    /// frame's uncertainty.
    Points {
        /// The points.
        points: Vec<ClickedPoint>,
        /// The clicks' standard deviation per coordinate, px.
        click_sigma_px: f64,
        /// How they give the frame (a pose; a similarity when the camera faces the plane).
        model: FrameModel,
    },
}

/// The default standard deviation of a clicked coordinate, px: a click on the review page's
/// zoomed view (docs/calibration.md).
pub const CLICK_SIGMA_PX: f64 = 0.3;

/// `points.toml` as written: optionally the clicks' sigma, and the points.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PointsFile {
    click_sigma_px: Option<f64>,
    #[serde(default)]
    camera_faces_plane: bool,
    point: Vec<PointEntry>,
}

/// One `[[point]]` of `points.toml`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PointEntry {
    #[allow(dead_code)] // named for the reader of the file; the points are used in order
    name: Option<String>,
    pixel: [f64; 2],
    bench: [f64; 2],
}

/// Read `points.toml`: `[[point]]` tables of `pixel = [u, v]` (px) and `bench = [x, y]` (m),
/// optionally `name`; optionally `click_sigma_px` (default [`CLICK_SIGMA_PX`]) and
/// `camera_faces_plane = true` (two points then suffice: the frame is a similarity).
pub fn read_points(path: &Path) -> Result<PlaneSource, PipelineError> {
    let bad = |reason: String| PipelineError::Input(format!("{}: {reason}", path.display()));
    let what =
        "a points file; give [[point]] tables with pixel = [u, v] and bench = [x, y] in metres";
    let text = std::fs::read_to_string(path).map_err(|e| PipelineError::read(path, what, e))?;
    let file: PointsFile = toml::from_str(&text).map_err(|e| PipelineError::read(path, what, e))?;
    let click_sigma_px = file.click_sigma_px.unwrap_or(CLICK_SIGMA_PX);
    if !(click_sigma_px.is_finite() && click_sigma_px > 0.0) {
        return Err(bad(format!(
            "click_sigma_px = {click_sigma_px}: give the clicks' standard deviation in px, above 0 (default 0.3)"
        )));
    }
    let mut points = Vec::with_capacity(file.point.len());
    for (i, p) in file.point.iter().enumerate() {
        if !p.pixel.iter().chain(&p.bench).all(|v| v.is_finite()) {
            return Err(bad(format!(
                "point {}: its pixel and bench position must be finite numbers",
                i + 1
            )));
        }
        points.push(ClickedPoint {
            pixel: (p.pixel[0], p.pixel[1]),
            bench: (p.bench[0], p.bench[1]),
        });
    }
    let model = match file.camera_faces_plane {
        true => FrameModel::Facing,
        false => FrameModel::Pose,
    };
    Ok(PlaneSource::Points {
        points,
        click_sigma_px,
        model,
    })
}

fn vision(e: flexbench_vision::VisionError) -> PipelineError {
    PipelineError::Vision(e)
}

/// Calibrate and write `out` (YAML) and `<stem>.corners.csv` beside it; returns the calibration
/// and the files written. Nothing is written unless the whole calibration succeeds.
pub fn calibrate(
    req: &CalibrateRequest,
    out: &Path,
) -> Result<(Calibration, Vec<PathBuf>), PipelineError> {
    let mut cal = match &req.camera {
        CameraSource::Board { views, target } => {
            let cal = board_camera(views, target)?;
            let plane = match &req.plane {
                Some(PlaneSource::Board {
                    view,
                    origin,
                    horizontal,
                    click_sigma_px,
                }) => Some(board_plane(
                    &cal,
                    target,
                    view,
                    [*origin, *horizontal],
                    *click_sigma_px,
                )?),
                _ => None,
            };
            let (plane, plane_uncertainty) = plane.unzip();
            Calibration {
                plane,
                plane_uncertainty,
                ..cal
            }
        }
        CameraSource::Nominal(n) => nominal_camera(n, req.plane.as_ref())?,
    };
    if let Some(PlaneSource::Points {
        points,
        click_sigma_px,
        model,
    }) = &req.plane
    {
        // A nominal camera's focal length is not known: a tilted plane by its homography.
        let model = match (&req.camera, model) {
            (CameraSource::Nominal(_), FrameModel::Pose) => FrameModel::Homography,
            _ => *model,
        };
        let intr = &cal.intrinsics;
        let plane = bench_plane_from_points(intr, points, model).map_err(vision)?;
        let u = frame_uncertainty(intr, points, &plane, *click_sigma_px, model).map_err(vision)?;
        (cal.plane, cal.plane_uncertainty) = (Some(plane), Some(u));
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::ensure_dir(dir)?;
    }
    let mut csv = String::from("view,u_px,v_px,du_px,dv_px\n");
    for c in &cal.corners {
        csv.push_str(&format!(
            "{},{:.4},{:.4},{:.5},{:.5}\n",
            c.view, c.u, c.v, c.du, c.dv
        ));
    }
    let corners = out.with_extension("corners.csv");
    cal.write(out).map_err(vision)?;
    if matches!(req.camera, CameraSource::Nominal(_)) {
        // No board, no corners.
        return Ok((cal, vec![out.to_path_buf()]));
    }
    flexbench_contracts::atomic::write_bytes(&corners, csv.as_bytes())
        .map_err(|e| PipelineError::io(&corners, "be written", e))?;
    Ok((cal, vec![out.to_path_buf(), corners]))
}

/// The camera calibrated from the board's views in `views`.
fn board_camera(views: &Path, target: &Target) -> Result<Calibration, PipelineError> {
    let files = image_files(views).map_err(vision)?;
    if files.is_empty() {
        return Err(PipelineError::Input(format!(
            "{}: no image files (png, jpg, bmp, tif) to calibrate from",
            views.display()
        )));
    }
    calibrate_target(&files, target, crate::threads()).map_err(vision)
}

/// The bench plane from a view of the board lying in the lever's plane and the clicked pixels
/// of the origin and of a point on the horizontal, with its uncertainty
/// (`flexbench_vision::plane_uncertainty`: the clicks at `click_sigma_px`, the corners at the
/// calibration's reprojection RMS, the intrinsics at their standard deviations).
fn board_plane(
    cal: &Calibration,
    target: &Target,
    view: &Path,
    clicks: [Pixel; 2],
    click_sigma_px: f64,
) -> Result<(flexbench_vision::BenchPlane, FrameUncertainty), PipelineError> {
    use flexbench_vision::calibrate::{plane_from_view, plane_view_points};
    use flexbench_vision::plane_uncertainty::{board_frame_uncertainty, PlaneInputs};
    let img = read_grey(view).ok_or_else(|| {
        PipelineError::Input(format!(
            "{}: cannot be read as an image (the plane view)",
            view.display()
        ))
    })?;
    let found = plane_view_points(&img, target).map_err(vision)?;
    let plane = plane_from_view(&cal.intrinsics, &found, clicks[0], clicks[1]).map_err(vision)?;
    let inputs = PlaneInputs {
        intrinsics: &cal.intrinsics,
        std_intrinsics: &cal.std_intrinsics,
        found: &found,
        clicks,
        click_sigma_px,
        corner_rms_px: if cal.rms.is_finite() { cal.rms } else { 0.0 },
    };
    let u = board_frame_uncertainty(&inputs, &plane).map_err(vision)?;
    Ok((plane, u))
}

/// A nominal camera's calibration (no plane yet): its plane must come from clicked points.
fn nominal_camera(
    n: &NominalCamera,
    plane: Option<&PlaneSource>,
) -> Result<Calibration, PipelineError> {
    if !matches!(plane, Some(PlaneSource::Points { .. })) {
        return Err(PipelineError::Input(
            "a nominal camera (no board) needs the bench plane from clicked points of known bench position: give a points file (two points at a known distance when the camera faces the plane, four or more otherwise)".into(),
        ));
    }
    Ok(Calibration {
        intrinsics: n.intrinsics()?,
        rms: f64::NAN,
        std_intrinsics: Vec::new(),
        per_view: Vec::new(),
        rejected: Vec::new(),
        plane: None,
        plane_uncertainty: None,
        distortion_model: Some(n.describe()),
        corners: Vec::new(),
    })
}

/// Read the calibration's corner residuals (`<stem>.corners.csv`, as `calibrate` writes it):
/// every row a view's name and finite u, v, du, dv (px).
pub fn read_corners(path: &Path) -> Result<Vec<CornerResidual>, PipelineError> {
    use flexbench_tables::{opt_f64, read_frame, strings};
    let df = read_frame(path)?;
    let view = strings(&df, path, "view")?;
    let cols = ["u_px", "v_px", "du_px", "dv_px"]
        .map(|c| opt_f64(&df, path, c).map(|v| (c, v)))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    (0..df.height())
        .map(|i| {
            let bad = |what: &str| {
                PipelineError::Input(format!(
                    "{}: row {}: {what}; give the corners table `calibrate` wrote",
                    path.display(),
                    i + 1
                ))
            };
            let at = |k: usize| -> Result<f64, PipelineError> {
                let (c, v) = &cols[k];
                v[i].filter(|x| x.is_finite())
                    .ok_or_else(|| bad(&format!("'{c}' is not a finite number")))
            };
            Ok(CornerResidual {
                view: view[i].clone().ok_or_else(|| bad("no view"))?,
                u: at(0)?,
                v: at(1)?,
                du: at(2)?,
                dv: at(3)?,
            })
        })
        .collect()
}

/// The clicks of the bench origin A and of a second point on the horizontal through A in the
/// plane view, with their standard deviation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clicks {
    /// The pixel of A.
    pub origin: Pixel,
    /// The pixel of a point on the horizontal through A, towards the pendulum.
    pub horizontal: Pixel,
    /// The clicks' standard deviation per coordinate, px ([`CLICK_SIGMA_PX`] unless the file
    /// gives `click_sigma_px`).
    pub click_sigma_px: f64,
}

/// Read `origin = [u, v]` and `horizontal = [u, v]` (pixels of the bench origin A and of a second
/// point on the horizontal through A) and optionally `click_sigma_px` (their standard deviation
/// per coordinate, px; default [`CLICK_SIGMA_PX`]) from a TOML file.
pub fn read_clicks(path: &Path) -> Result<Clicks, PipelineError> {
    let bad = |reason: String| PipelineError::Input(format!("{}: {reason}", path.display()));
    let what = "a clicks file (origin = [u, v], horizontal = [u, v])";
    let text = std::fs::read_to_string(path).map_err(|e| PipelineError::read(path, what, e))?;
    let t: toml::Table = toml::from_str(&text).map_err(|e| PipelineError::read(path, what, e))?;
    let get = |k: &str| -> Result<(f64, f64), PipelineError> {
        let a = t
            .get(k)
            .and_then(|v| v.as_array())
            .ok_or_else(|| bad(format!("'{k}' is missing; give {k} = [u, v]")))?;
        let n = |i: usize| {
            a.get(i)
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|x| x as f64)))
        };
        match (n(0), n(1)) {
            (Some(u), Some(v)) if a.len() == 2 => Ok((u, v)),
            _ => Err(bad(format!("'{k}' must be two numbers [u, v]"))),
        }
    };
    let click_sigma_px = match t.get("click_sigma_px") {
        None => CLICK_SIGMA_PX,
        Some(v) => match v.as_float().or_else(|| v.as_integer().map(|x| x as f64)) {
            Some(s) if s.is_finite() && s > 0.0 => s,
            _ => {
                return Err(bad(format!(
                    "click_sigma_px = {v}: give the clicks' standard deviation in px, a number above 0 (default {CLICK_SIGMA_PX})"
                )))
            }
        },
    };
    Ok(Clicks {
        origin: get("origin")?,
        horizontal: get("horizontal")?,
        click_sigma_px,
    })
}

/// Write the clicks page of the plane view `image` (`flexbench_report::review::clicks_page`)
/// to `out`: the user clicks A and the horizontal there and downloads `clicks.toml`.
pub fn clicks_page(image: &Path, out: &Path) -> Result<PathBuf, PipelineError> {
    use opencv::prelude::{MatTraitConst, VectorToVec};
    let bytes = std::fs::read(image).map_err(|e| PipelineError::io(image, "be read", e))?;
    let img = opencv::imgcodecs::imread(image.as_os_str(), opencv::imgcodecs::IMREAD_COLOR)
        .map_err(|e| PipelineError::io(image, "be read by OpenCV", e))?;
    if img.empty() {
        return Err(PipelineError::Input(format!(
            "{}: not an image OpenCV reads (PNG or JPEG)",
            image.display()
        )));
    }
    let mut png = opencv::core::Vector::<u8>::new();
    let is_png = bytes.starts_with(b"\x89PNG");
    if !is_png {
        opencv::imgcodecs::imencode(".png", &img, &mut png, &opencv::core::Vector::new())
            .map_err(|e| PipelineError::io(image, "be encoded as PNG", e))?;
    }
    let data = if is_png { bytes } else { png.to_vec() };
    let name = image
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let html = flexbench_report::review::clicks_page(&data, img.cols(), img.rows(), &name);
    flexbench_contracts::atomic::write_bytes(out, html.as_bytes())
        .map_err(|e| PipelineError::io(out, "be written", e))?;
    Ok(out.to_path_buf())
}
