//! `flexbench calibrate`: chessboard views (and a board view in the lever's plane with the two
//! clicked pixels) -> the calibration file (OpenCV FileStorage YAML) and, beside it, every kept
//! corner's reprojection residual (`<stem>.corners.csv`: view, u, v, du, dv in px).

use std::path::{Path, PathBuf};

use flexbench_vision::calibrate::{
    bench_plane, calibrate_views, image_files, read_grey, Board, Detector,
};
use flexbench_vision::camera::CornerResidual;
use flexbench_vision::Calibration;

use crate::PipelineError;

/// A pixel of an image: (u, v), px.
pub type Pixel = (f64, f64);

/// What to calibrate from.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateRequest {
    /// Folder of chessboard views (png, jpg, bmp, tif).
    pub views: PathBuf,
    /// The board: inner corners and square side (m).
    pub board: Board,
    /// How the corners are found (the same in the views and the plane view).
    pub detector: Detector,
    /// A view of the board lying in the lever's plane and the pixels of the bench origin A and
    /// of a second point on the horizontal through A (u, v), for the bench plane.
    pub plane: Option<(PathBuf, Pixel, Pixel)>,
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
    let files = image_files(&req.views).map_err(vision)?;
    if files.is_empty() {
        return Err(PipelineError::Input(format!(
            "{}: no image files (png, jpg, bmp, tif) to calibrate from",
            req.views.display()
        )));
    }
    let mut cal =
        calibrate_views(&files, &req.board, req.detector, crate::threads()).map_err(vision)?;
    if let Some((view, origin, horizontal)) = &req.plane {
        let img = read_grey(view).ok_or_else(|| {
            PipelineError::Input(format!(
                "{}: cannot be read as an image (the plane view)",
                view.display()
            ))
        })?;
        cal.plane = Some(
            bench_plane(
                &cal.intrinsics,
                &img,
                (&req.board, req.detector),
                *origin,
                *horizontal,
            )
            .map_err(vision)?,
        );
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
    flexbench_contracts::atomic::write_bytes(&corners, csv.as_bytes()).map_err(|e| {
        PipelineError::Io {
            path: corners.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    Ok((cal, vec![out.to_path_buf(), corners]))
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

/// Read `origin = [u, v]` and `horizontal = [u, v]` (pixels of the bench origin A and of a second
/// point on the horizontal through A) from a TOML file.
pub fn read_clicks(path: &Path) -> Result<(Pixel, Pixel), PipelineError> {
    let bad = |reason: String| PipelineError::Input(format!("{}: {reason}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot be read ({e})")))?;
    let t: toml::Table = toml::from_str(&text).map_err(|e| bad(format!("not TOML ({e})")))?;
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
    Ok((get("origin")?, get("horizontal")?))
}

/// Write the clicks page of the plane view `image` (`flexbench_report::review::clicks_page`)
/// to `out`: the user clicks A and the horizontal there and downloads `clicks.toml`.
pub fn clicks_page(image: &Path, out: &Path) -> Result<PathBuf, PipelineError> {
    use opencv::prelude::{MatTraitConst, VectorToVec};
    let io = |path: &Path, reason: String| PipelineError::Io {
        path: path.display().to_string(),
        reason,
    };
    let bytes = std::fs::read(image).map_err(|e| io(image, format!("cannot be read ({e})")))?;
    let img = opencv::imgcodecs::imread(image.as_os_str(), opencv::imgcodecs::IMREAD_COLOR)
        .map_err(|e| io(image, e.message))?;
    if img.empty() {
        return Err(io(
            image,
            "is not an image OpenCV reads (PNG or JPEG)".into(),
        ));
    }
    let mut png = opencv::core::Vector::<u8>::new();
    let is_png = bytes.starts_with(b"\x89PNG");
    if !is_png {
        opencv::imgcodecs::imencode(".png", &img, &mut png, &opencv::core::Vector::new())
            .map_err(|e| io(image, e.message))?;
    }
    let data = if is_png { bytes } else { png.to_vec() };
    let name = image
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let html = flexbench_report::review::clicks_page(&data, img.cols(), img.rows(), &name);
    flexbench_contracts::atomic::write_bytes(out, html.as_bytes())
        .map_err(|e| io(out, e.to_string()))?;
    Ok(out.to_path_buf())
}
