//! Camera calibration from chessboard views (Zhang's method through OpenCV's
//! `calibrateCameraExtended`), and the bench plane from a board lying in the lever's plane.
//!
//! Corners: found by default by `findChessboardCornersSB` (the sector-based detector of Duda and
//! Frese, "Accurate detection and localization of checkerboard corners for calibration", BMVC
//! 2018), which gives up quickly on a view without the whole board: a quick search on the
//! normalized image, then the exhaustive one on the up-sampled image (on OpenCV's sample photos
//! each finds boards the other misses); or by the classic `findChessboardCorners` (adaptive
//! threshold, normalized image). Either way refined by `cornerSubPix` (half-window 11 px, 30
//! iterations or 0.001 px, as in OpenCV's tutorial and the reference result of
//! `calibration/opencv-left-chessboard`; the window shrinks for boards whose squares are smaller
//! than 24 px, so that it never takes in the next corner): on rendered views the sector-based
//! corners alone were 0.081 px RMS from the truth with a 0.01 px bias, 0.059 px refined
//! (docs/calibration.md). Views are searched in parallel. Views where the board is not found are
//! rejected with that reason; after a first calibration, views whose RMS reprojection error
//! exceeds five times the median and 2 px (a misdetected board, a blurred or moved view; a good
//! real view stays under it: OpenCV's sample photos reach 1.2 px for a median of 0.3 px) are
//! rejected as outliers and the camera is calibrated again without them.

use std::path::{Path, PathBuf};

use nalgebra::{Matrix3, Vector3};
use opencv::core::{Mat, Point2f, Point3f, Size, TermCriteria, TermCriteria_Type, Vector};
use opencv::prelude::*;

use crate::camera::{
    mat_values, plane_to_normalized, BenchPlane, Calibration, CornerResidual, Intrinsics,
};
pub use crate::charuco::{Charuco, ViewPoints};
use crate::{cv, VisionError};

/// A chessboard's inner corners (each count at least 2), as files and the command line name
/// them: "COLSxROWS", e.g. "9x6".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardCorners {
    /// Inner corners per row.
    pub cols: i32,
    /// Inner corners per column.
    pub rows: i32,
}

impl std::str::FromStr for BoardCorners {
    type Err = String;

    fn from_str(text: &str) -> Result<BoardCorners, String> {
        text.split_once('x')
            .and_then(|(a, b)| Some((a.trim().parse::<i32>().ok()?, b.trim().parse::<i32>().ok()?)))
            .filter(|(a, b)| *a >= 2 && *b >= 2)
            .map(|(cols, rows)| BoardCorners { cols, rows })
            .ok_or_else(|| {
                format!("board \"{text}\": give the inner corners as \"COLSxROWS\", each at least 2, e.g. \"9x6\"")
            })
    }
}

impl std::fmt::Display for BoardCorners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.cols, self.rows)
    }
}

/// A chessboard: inner corners along its width and height, and the square's side (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Board {
    /// Inner corners per row.
    pub cols: i32,
    /// Inner corners per column.
    pub rows: i32,
    /// Side of a square, m.
    pub square: f64,
}

impl Board {
    /// The inner corners in the board's frame (m), in OpenCV's detection order (row by row).
    pub fn object_points(&self) -> Vector<Point3f> {
        let mut v = Vector::new();
        for r in 0..self.rows {
            for c in 0..self.cols {
                v.push(Point3f::new(
                    (c as f64 * self.square) as f32,
                    (r as f64 * self.square) as f32,
                    0.0,
                ));
            }
        }
        v
    }
}

/// How a view's chessboard corners are found: the detector, then `cornerSubPix` with a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Detector {
    /// Which detector finds the board.
    pub kind: DetectorKind,
    /// The refinement's window.
    pub window: SubPixWindow,
}

/// Which detector finds the corners, as files and the command line name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DetectorKind {
    /// "sb": `findChessboardCornersSB` with its exhaustive search (default).
    #[default]
    Sb,
    /// "classic": `findChessboardCorners` and `cornerSubPix`.
    Classic,
}

const DETECTORS: [(&str, DetectorKind); 2] =
    [("sb", DetectorKind::Sb), ("classic", DetectorKind::Classic)];

impl std::str::FromStr for DetectorKind {
    type Err = flexbench_contracts::names::UnknownName;

    fn from_str(name: &str) -> Result<DetectorKind, Self::Err> {
        flexbench_contracts::names::by_name(name, "a chessboard detector", &DETECTORS)
    }
}

impl std::fmt::Display for DetectorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = DETECTORS
            .iter()
            .find(|(_, k)| k == self)
            .map_or("", |(n, _)| n);
        f.write_str(name)
    }
}

/// The half-size of `cornerSubPix`'s search window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubPixWindow {
    /// 11 px, shrunk to half the smallest corner spacing for small squares (default).
    #[default]
    Auto,
    /// A fixed half-size in px (OpenCV's tutorial uses 11).
    Fixed(i32),
}

/// What the calibration views (and the plane view) show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// A chessboard, its corners found by the detector.
    Chessboard(Board, Detector),
    /// A ChArUco board: the corners seen, each known by its markers.
    Charuco(Charuco),
}

impl Target {
    /// A chessboard of `corners` inner corners and `square` (m) squares, its corners found by
    /// `kind` and refined in a `subpix` half-window (px; None: from the board's size).
    pub fn chessboard(
        corners: BoardCorners,
        square: f64,
        kind: DetectorKind,
        subpix: Option<i32>,
    ) -> Target {
        let (cols, rows) = (corners.cols, corners.rows);
        let window = subpix.map_or(SubPixWindow::Auto, SubPixWindow::Fixed);
        Target::Chessboard(Board { cols, rows, square }, Detector { kind, window })
    }

    /// A ChArUco board of `squares`, `square` and `marker` sides (m) and `dictionary`, checked
    /// ([`Charuco::check`]).
    pub fn charuco(
        squares: BoardCorners,
        square: f64,
        marker: f64,
        dictionary: crate::charuco::Dictionary,
    ) -> Result<Target, VisionError> {
        let c = Charuco {
            squares_x: squares.cols,
            squares_y: squares.rows,
            square,
            marker,
            dictionary,
        };
        c.check()?;
        Ok(Target::Charuco(c))
    }

    /// The target in words, for messages: "9x6 chessboard", "7 x 5 ChArUco board (4x4_50)".
    pub fn describe(&self) -> String {
        match self {
            Target::Chessboard(b, _) => format!("{}x{} chessboard", b.cols, b.rows),
            Target::Charuco(c) => format!(
                "{} x {} ChArUco board ({})",
                c.squares_x, c.squares_y, c.dictionary
            ),
        }
    }

    /// The target's values checked.
    fn check(&self) -> Result<(), VisionError> {
        match self {
            Target::Chessboard(b, _) => {
                if b.cols < 2 || b.rows < 2 || b.square.is_nan() || b.square <= 0.0 {
                    return Err(VisionError::Calibration(format!(
                        "a board of {} x {} inner corners with {} m squares is impossible; give the inner corners (e.g. 9x6) and the square side in m",
                        b.cols, b.rows, b.square
                    )));
                }
                Ok(())
            }
            Target::Charuco(c) => c.check(),
        }
    }

    /// The target's corners in a grey image with their board coordinates; None when it is not
    /// found (a chessboard must be whole; a ChArUco board may be partial).
    pub fn find(&self, image: &Mat) -> Result<Option<ViewPoints>, VisionError> {
        match self {
            Target::Chessboard(board, detector) => Ok(find_corners(image, board, *detector)?.map(
                |image| ViewPoints {
                    ids: (0..image.len() as i32).collect(),
                    object: board.object_points(),
                    image,
                },
            )),
            Target::Charuco(c) => c.detect(image),
        }
    }
}

/// Image files of a folder (png, jpg, jpeg, bmp, tif, tiff), sorted by name.
pub fn image_files(dir: &Path) -> Result<Vec<PathBuf>, VisionError> {
    let rd = std::fs::read_dir(dir).map_err(|e| {
        VisionError::io(
            dir,
            "list the views; give --views the folder of chessboard images",
            e,
        )
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .map(|e| {
                    matches!(
                        e.to_string_lossy().to_lowercase().as_str(),
                        "png" | "jpg" | "jpeg" | "bmp" | "tif" | "tiff"
                    )
                })
                .unwrap_or(false)
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Read an image as 8-bit grey; None if it cannot be decoded.
pub fn read_grey(path: &Path) -> Option<Mat> {
    let m =
        opencv::imgcodecs::imread(path.as_os_str(), opencv::imgcodecs::IMREAD_GRAYSCALE).ok()?;
    if m.empty() {
        None
    } else {
        Some(m)
    }
}

/// The sector-based detector's searches, in order: the image normalized (equalized histogram),
/// then also with the exhaustive search and the accuracy flag (up-sampled).
const SB_FLAGS: [i32; 2] = [
    opencv::calib3d::CALIB_CB_NORMALIZE_IMAGE,
    opencv::calib3d::CALIB_CB_NORMALIZE_IMAGE
        + opencv::calib3d::CALIB_CB_EXHAUSTIVE
        + opencv::calib3d::CALIB_CB_ACCURACY,
];

/// The board's inner corners in an image, refined to sub-pixel by `detector`; None when the
/// board is not found.
pub fn find_corners(
    image: &Mat,
    board: &Board,
    detector: Detector,
) -> Result<Option<Vector<Point2f>>, VisionError> {
    let Some(mut corners) = detect_corners(image, board, detector.kind)? else {
        return Ok(None);
    };
    // The refinement window (half-size 11 px, as in OpenCV's tutorial) must not reach the
    // neighbouring corners: it shrinks to half the smallest corner spacing for small squares.
    let half = match detector.window {
        SubPixWindow::Auto => {
            ((corner_spacing(&corners, board)? / 2.0 - 1.0).floor() as i32).clamp(3, 11)
        }
        SubPixWindow::Fixed(h) => h.max(1),
    };
    let crit = cv(
        "criteria",
        TermCriteria::new(
            TermCriteria_Type::COUNT as i32 + TermCriteria_Type::EPS as i32,
            30,
            0.001,
        ),
    )?;
    cv(
        "cornerSubPix",
        opencv::imgproc::corner_sub_pix(
            image,
            &mut corners,
            Size::new(half, half),
            Size::new(-1, -1),
            crit,
        ),
    )?;
    Ok(Some(corners))
}

/// The board's inner corners as OpenCV's detector of `kind` finds them (to the pixel's
/// fraction it gives), None when it does not find the board.
fn detect_corners(
    image: &Mat,
    board: &Board,
    kind: DetectorKind,
) -> Result<Option<Vector<Point2f>>, VisionError> {
    let mut corners = Vector::<Point2f>::new();
    let size = Size::new(board.cols, board.rows);
    let found = match kind {
        DetectorKind::Sb => {
            // The quick search first, then the exhaustive one on the up-sampled image: on
            // OpenCV's sample photos each finds boards the other misses (docs/calibration.md).
            let mut found = false;
            for flags in SB_FLAGS {
                found = cv(
                    "findChessboardCornersSB",
                    opencv::calib3d::find_chessboard_corners_sb(image, size, &mut corners, flags),
                )?;
                if found {
                    break;
                }
            }
            found
        }
        DetectorKind::Classic => {
            let flags = opencv::calib3d::CALIB_CB_ADAPTIVE_THRESH
                + opencv::calib3d::CALIB_CB_NORMALIZE_IMAGE;
            cv(
                "findChessboardCorners",
                opencv::calib3d::find_chessboard_corners(image, size, &mut corners, flags),
            )?
        }
    };
    Ok(found.then_some(corners))
}

/// The smallest distance between neighbouring corners along the board's rows and columns, px
/// (infinite for a board of one corner).
fn corner_spacing(corners: &Vector<Point2f>, board: &Board) -> Result<f64, VisionError> {
    let at = |i: usize| {
        corners.get(i).map_err(|e| VisionError::OpenCv {
            context: "corners".into(),
            source: e,
        })
    };
    let mut spacing = f64::INFINITY;
    for r in 0..board.rows {
        for c in 0..board.cols {
            let i = (r * board.cols + c) as usize;
            let p = at(i)?;
            let right = (c + 1 < board.cols).then_some(i + 1);
            let below = (r + 1 < board.rows).then_some(i + board.cols as usize);
            for j in [right, below].into_iter().flatten() {
                let q = at(j)?;
                spacing = spacing.min(((p.x - q.x) as f64).hypot((p.y - q.y) as f64));
            }
        }
    }
    Ok(spacing)
}

struct Solved {
    intrinsics: Intrinsics,
    rms: f64,
    std: Vec<f64>,
    per_view: Vec<f64>,
    /// Per view, per corner: found (u, v) minus reprojected, px.
    residuals: Vec<Vec<[f64; 4]>>,
}

/// Per view, per corner: the corner found (u, v) and found minus reprojected through the
/// solved camera (`k`, `d`) and the view's pose (`rvecs`, `tvecs`), px.
fn corner_residuals(
    points: &[&ViewPoints],
    (rvecs, tvecs): (&Vector<Mat>, &Vector<Mat>),
    (k, d): (&Mat, &Mat),
) -> Result<Vec<Vec<[f64; 4]>>, VisionError> {
    let mut residuals = Vec::with_capacity(points.len());
    for (i, view) in points.iter().enumerate() {
        let found = &view.image;
        let mut projected = Vector::<Point2f>::new();
        let (r, t) = (cv("rvec", rvecs.get(i))?, cv("tvec", tvecs.get(i))?);
        cv(
            "projectPoints",
            opencv::calib3d::project_points_def(&view.object, &r, &t, k, d, &mut projected),
        )?;
        residuals.push(
            found
                .iter()
                .zip(projected.iter())
                .map(|(f, p)| {
                    [
                        f.x as f64,
                        f.y as f64,
                        (f.x - p.x) as f64,
                        (f.y - p.y) as f64,
                    ]
                })
                .collect(),
        );
    }
    Ok(residuals)
}

/// OpenCV's calibration (calibrateCameraExtended, `flags`) from the boards' corners in the
/// views: intrinsics, RMS and per-view errors, the intrinsics' standard deviations, the corner
/// residuals.
fn solve(points: &[&ViewPoints], size: Size, flags: i32) -> Result<Solved, VisionError> {
    let obj: Vector<Vector<Point3f>> = points.iter().map(|v| v.object.clone()).collect();
    let img: Vector<Vector<Point2f>> = points.iter().map(|v| v.image.clone()).collect();
    let mut k = Mat::default();
    let mut d = Mat::default();
    let mut rvecs = Vector::<Mat>::new();
    let mut tvecs = Vector::<Mat>::new();
    let mut std_i = Mat::default();
    let mut std_e = Mat::default();
    let mut per_view = Mat::default();
    let crit = cv(
        "criteria",
        TermCriteria::new(
            TermCriteria_Type::COUNT as i32 + TermCriteria_Type::EPS as i32,
            30,
            f64::EPSILON,
        ),
    )?;
    let rms = cv(
        "calibrateCameraExtended",
        opencv::calib3d::calibrate_camera_extended(
            &obj,
            &img,
            size,
            &mut k,
            &mut d,
            &mut rvecs,
            &mut tvecs,
            &mut std_i,
            &mut std_e,
            &mut per_view,
            flags,
            crit,
        ),
    )?;
    let kv = mat_values(&k)?;
    let dv = mat_values(&d)?;
    if kv.len() != 9 || dv.len() < 5 {
        return Err(VisionError::Calibration(format!(
            "OpenCV returned {} camera-matrix and {} distortion values",
            kv.len(),
            dv.len()
        )));
    }
    let residuals = corner_residuals(points, (&rvecs, &tvecs), (&k, &d))?;
    Ok(Solved {
        intrinsics: Intrinsics {
            width: size.width,
            height: size.height,
            fx: kv[0],
            fy: kv[4],
            cx: kv[2],
            cy: kv[5],
            dist: [dv[0], dv[1], dv[2], dv[3], dv[4]],
        },
        rms,
        std: mat_values(&std_i)?.into_iter().take(9).collect(),
        per_view: mat_values(&per_view)?,
        residuals,
    })
}

/// Calibrate the camera from the chessboard views in `files`. Views that cannot be read, whose
/// board is not found, whose size differs from the first view's, or that are outliers are
/// rejected with their reason; at least three views must remain.
pub fn calibrate_views(
    files: &[PathBuf],
    board: &Board,
    detector: Detector,
    threads: usize,
) -> Result<Calibration, VisionError> {
    calibrate_target(files, &Target::Chessboard(*board, detector), threads)
}

/// Calibrate the camera from the views in `files` of `target` (a chessboard, or a ChArUco
/// board which may leave the image): as [`calibrate_views`]; a ChArUco board found in no view
/// but whose markers are of another dictionary is named with it.
pub fn calibrate_target(
    files: &[PathBuf],
    target: &Target,
    threads: usize,
) -> Result<Calibration, VisionError> {
    target.check()?;
    let Detected {
        mut kept,
        mut rejected,
        size,
    } = detect_views(files, target, threads)?;
    let listed = |rejected: &[(String, String)]| {
        rejected
            .iter()
            .map(|(n, r)| format!("{n}: {r}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let Some(size) = size else {
        if let Target::Charuco(c) = target {
            other_dictionary(files, c)?;
        }
        let check = match target {
            Target::Chessboard(..) => "check --board (inner corners, e.g. 9x6) and the images",
            Target::Charuco(_) => {
                "check --charuco (the board's squares, e.g. 9x7), --marker, --square and the images"
            }
        };
        return Err(VisionError::Calibration(format!(
            "the {} was found in none of the {} views ({}); {check}",
            target.describe(),
            files.len(),
            listed(&rejected)
        )));
    };
    if kept.len() < 3 {
        return Err(VisionError::Calibration(format!(
            "only {} usable view(s); calibration needs at least 3 views of the board at varied poses (rejected: {})",
            kept.len(),
            listed(&rejected)
        )));
    }
    let solve_kept = |kept: &[ViewCorners], flags: i32| {
        let views: Vec<&ViewPoints> = kept.iter().map(|(_, c)| c).collect();
        solve(&views, size, flags)
    };
    let mut s = solve_kept(&kept, 0)?;
    if drop_outliers(&mut kept, &mut rejected, &s.per_view) {
        s = solve_kept(&kept, 0)?;
    }
    let s4 = solve_kept(&kept, opencv::calib3d::CALIB_FIX_K3)?;
    let (s, model) = distortion_model(&kept, s, s4);
    Ok(Calibration {
        intrinsics: s.intrinsics,
        rms: s.rms,
        std_intrinsics: s.std,
        per_view: kept
            .iter()
            .map(|(n, _)| n.clone())
            .zip(s.per_view.iter().copied())
            .collect(),
        rejected,
        plane: None,
        plane_uncertainty: None,
        distortion_model: Some(model),
        corners: kept
            .iter()
            .zip(&s.residuals)
            .flat_map(|((name, _), r)| {
                r.iter().map(move |c| CornerResidual {
                    view: name.clone(),
                    u: c[0],
                    v: c[1],
                    du: c[2],
                    dv: c[3],
                })
            })
            .collect(),
    })
}

/// Reject the views whose reprojection error `per_view` (px) exceeds 5 times the median (at
/// least 2 px), when at least 3 views remain; true when some were.
fn drop_outliers(
    kept: &mut Vec<ViewCorners>,
    rejected: &mut Vec<(String, String)>,
    per_view: &[f64],
) -> bool {
    let mut sorted = per_view.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = sorted[sorted.len() / 2];
    let limit = (5.0 * median).max(2.0);
    let outliers: Vec<usize> = (0..kept.len()).filter(|&i| per_view[i] > limit).collect();
    if outliers.is_empty() || kept.len() - outliers.len() < 3 {
        return false;
    }
    for &i in outliers.iter().rev() {
        let (name, _) = kept.remove(i);
        rejected.push((name, format!("outlier: reprojection error {:.2} px above {:.2} px (5 x the median, at least 2 px)", per_view[i], limit)));
    }
    true
}

/// A view's file name and its board's corners (board coordinates and pixels).
type ViewCorners = (String, ViewPoints);

/// The views with a board (name and corners), the rejected ones (name and reason), and the
/// image size of the first view with a board (None when there is none).
struct Detected {
    kept: Vec<ViewCorners>,
    rejected: Vec<(String, String)>,
    size: Option<Size>,
}

/// What one view gave: its image size and its board's corners (None: not found), or why it was
/// rejected before the search.
type ViewSearch = Result<(Size, Option<ViewPoints>), String>;

/// One view read and searched for the board.
fn search_view(file: &Path, target: &Target) -> Result<ViewSearch, VisionError> {
    let Some(img) = read_grey(file) else {
        return Ok(Err("cannot be read as an image".to_string()));
    };
    let size = cv("size", img.size())?;
    Ok(Ok((size, target.find(&img)?)))
}

/// The error naming the dictionary of the ArUco markers the views show, when it is not the
/// ChArUco board's (the first view showing four markers or more of one).
fn other_dictionary(files: &[PathBuf], c: &Charuco) -> Result<(), VisionError> {
    for f in files {
        let Some(img) = read_grey(f) else { continue };
        if let Some((d, n)) = crate::charuco::dictionary_in(&img)? {
            if d != c.dictionary {
                return Err(VisionError::Calibration(format!(
                    "the views show ArUco markers of dictionary {d} ({n} in {}), not of the {} given: set the board's dictionary to \"{d}\" ([calibrate] dictionary, or --dictionary {d})",
                    f.display(),
                    c.dictionary
                )));
            }
            return Ok(());
        }
    }
    Ok(())
}

/// The views whose board was found (name and corners), the rejected ones with their reason,
/// and the image size (of the first view with a board; None when there is none). The views are
/// searched on up to `threads` threads; the outcome does not depend on their number.
fn detect_views(
    files: &[PathBuf],
    target: &Target,
    threads: usize,
) -> Result<Detected, VisionError> {
    let searched =
        flexbench_contracts::parallel::map_in_order(threads, files, |f| search_view(f, target));
    let mut rejected = Vec::new();
    let mut kept: Vec<ViewCorners> = Vec::new();
    let mut size: Option<Size> = None;
    for (f, found) in files.iter().zip(searched) {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (s, corners) = match found? {
            Ok(found) => found,
            Err(reason) => {
                rejected.push((name, reason));
                continue;
            }
        };
        if let Some(first) = size.filter(|first| *first != s) {
            rejected.push((
                name,
                format!(
                    "its size {}x{} differs from the first view's {}x{}",
                    s.width, s.height, first.width, first.height
                ),
            ));
            continue;
        }
        match corners {
            Some(c) => {
                size.get_or_insert(s);
                kept.push((name, c));
            }
            None => rejected.push((name, format!("no {} found", target.describe()))),
        }
    }
    Ok(Detected {
        kept,
        rejected,
        size,
    })
}

/// The distortion model: k3 free (`s5`) or fixed at 0 (`s4`), by the Bayesian information
/// criterion (N ln(RSS / N) + p ln N over the N corner coordinates, p the intrinsics,
/// distortion and the views' poses). A k3 that the views cannot pin down is extrapolated wildly
/// into the image's corners, beyond the boards' reach. Returns the chosen solution and the
/// choice in words.
fn distortion_model(kept: &[ViewCorners], s5: Solved, s4: Solved) -> (Solved, String) {
    let points: usize = kept.iter().map(|(_, c)| c.image.len()).sum();
    let n_obs = 2.0 * points as f64;
    let bic = |rms: f64, params: usize| {
        n_obs * (rms * rms * points as f64 / n_obs).max(1e-300).ln() + params as f64 * n_obs.ln()
    };
    let (b5, b4) = (
        bic(s5.rms, 9 + 6 * kept.len()),
        bic(s4.rms, 8 + 6 * kept.len()),
    );
    if b4 <= b5 {
        let text = format!("k1 k2 p1 p2, k3 fixed at 0 (BIC {b4:.1}; {b5:.1} with k3 free, RMS {:.4} px, k3 {:.4})", s5.rms, s5.intrinsics.dist[4]);
        (s4, text)
    } else {
        let text = format!(
            "k1 k2 p1 p2 k3 (BIC {b5:.1}; {b4:.1} with k3 fixed at 0, RMS {:.4} px)",
            s4.rms
        );
        (s5, text)
    }
}

/// The bench plane from one view of the board lying in the lever's plane: the board's pose by
/// `solvePnP` (intrinsics known), then the user's origin A and a second point on the horizontal
/// through A, both as image pixels (as one clicks them), define the bench frame: X from A
/// towards the second point, Y perpendicular, pointing up in the image.
pub fn bench_plane(
    intr: &Intrinsics,
    image: &Mat,
    target: &Target,
    origin_px: (f64, f64),
    horizontal_px: (f64, f64),
) -> Result<BenchPlane, VisionError> {
    let found = plane_view_points(image, target)?;
    plane_from_view(intr, &found, origin_px, horizontal_px)
}

/// The board's corners found in the plane view (the board lying in the lever's plane).
pub fn plane_view_points(image: &Mat, target: &Target) -> Result<ViewPoints, VisionError> {
    target.find(image)?.ok_or_else(|| {
        VisionError::Calibration(format!("no {} found in the plane view: it must show the board lying in the lever's plane (a chessboard whole; a ChArUco board may be partly hidden)", target.describe()))
    })
}

/// The bench plane from the board's corners `found` in the plane view (their pixels and board
/// positions), the camera's intrinsics and the clicked pixels of the origin and of a point on
/// the horizontal ([`bench_plane`] once the board is found).
pub fn plane_from_view(
    intr: &Intrinsics,
    found: &ViewPoints,
    origin_px: (f64, f64),
    horizontal_px: (f64, f64),
) -> Result<BenchPlane, VisionError> {
    let mut rvec = Mat::default();
    let mut tvec = Mat::default();
    cv(
        "solvePnP",
        opencv::calib3d::solve_pnp(
            &found.object,
            &found.image,
            &intr.camera_matrix()?,
            &intr.dist_coeffs()?,
            &mut rvec,
            &mut tvec,
            false,
            opencv::calib3d::SOLVEPNP_ITERATIVE,
        ),
    )?;
    // Board (X, Y, 1) -> normalized image.
    let h_bn = plane_to_normalized(&rvec, &tvec)?;
    let h_nb = h_bn
        .try_inverse()
        .ok_or_else(|| VisionError::Calibration("the plane view's board is seen edge-on".into()))?;
    let to_board = |(u, v): (f64, f64)| {
        let (x, y) = intr.undistort_pixel(u, v);
        let p = h_nb * Vector3::new(x, y, 1.0);
        (p.x / p.z, p.y / p.z)
    };
    let a = to_board(origin_px);
    let b = to_board(horizontal_px);
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = dx.hypot(dy);
    if len.is_nan() || len <= 1e-6 {
        return Err(VisionError::Calibration(
            "the origin and the horizontal point coincide; give two distinct pixels".into(),
        ));
    }
    let (ex, ey) = (dx / len, dy / len);
    // Y = X turned a quarter in the board frame, its sign chosen to point up in the image.
    let mut sign = 1.0;
    let up = (a.0 - ey * 0.01, a.1 + ex * 0.01);
    let up_n = h_bn * Vector3::new(up.0, up.1, 1.0);
    let (uu, uv) = intr.project_normalized(up_n.x / up_n.z, up_n.y / up_n.z);
    let _ = uu;
    if uv > origin_px.1 {
        sign = -1.0;
    }
    // bench = [ex ey; s*(-ey) s*ex] (board - a)
    let rot = Matrix3::new(ex, ey, 0.0, -sign * ey, sign * ex, 0.0, 0.0, 0.0, 1.0);
    let shift = Matrix3::new(1.0, 0.0, -a.0, 0.0, 1.0, -a.1, 0.0, 0.0, 1.0);
    Ok(BenchPlane {
        h: rot * shift * h_nb,
    })
}
