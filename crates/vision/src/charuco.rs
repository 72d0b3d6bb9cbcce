//! ChArUco boards (OpenCV 4.6's contrib aruco module, as Debian ships it): a chessboard whose
//! white squares hold ArUco markers, so that every corner found is known by its marker
//! neighbours and a board that leaves the image, or is partly hidden by the lever, still gives
//! its visible corners with their identities.
//!
//! A view: the markers detected (`detectMarkers`, the board's dictionary), the chessboard
//! corners between them interpolated by local homographies and refined by `cornerSubPix`
//! inside OpenCV (`interpolateCornersCharuco`, at least two adjacent markers per corner), kept
//! when at least [`MIN_CORNERS`] corners not on one line are found. Their board coordinates
//! are the board's `chessboardCorners` by identity. A board whose markers are of another
//! dictionary is named: every predefined dictionary is tried on the view ([`dictionary_in`]).

use opencv::core::{Mat, Point2f, Point3f, Ptr, Vector};
use opencv::prelude::*;

use crate::{cv, VisionError};

/// Fewest corners of a view kept for calibration (each view adds six pose unknowns).
pub const MIN_CORNERS: usize = 6;

/// The predefined ArUco dictionaries of OpenCV 4.6, by the names files use (OpenCV's
/// `DICT_*` names, lower case, without the prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dictionary(i32);

/// Names and OpenCV ids of the predefined dictionaries.
const DICTIONARIES: [(&str, i32); 21] = flexbench_contracts::FIDUCIAL_DICTIONARIES;

impl std::str::FromStr for Dictionary {
    type Err = flexbench_contracts::names::UnknownName;

    fn from_str(name: &str) -> Result<Dictionary, Self::Err> {
        let table: Vec<(&str, Dictionary)> = DICTIONARIES
            .iter()
            .map(|(n, i)| (*n, Dictionary(*i)))
            .collect();
        flexbench_contracts::names::by_name(name, "an ArUco dictionary", &table)
    }
}

impl std::fmt::Display for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = DICTIONARIES
            .iter()
            .find(|(_, i)| *i == self.0)
            .map_or("", |(n, _)| n);
        f.write_str(name)
    }
}

impl Dictionary {
    /// OpenCV's dictionary.
    fn get(self) -> Result<Ptr<opencv::aruco::Dictionary>, VisionError> {
        cv(
            "getPredefinedDictionary",
            opencv::aruco::get_predefined_dictionary_i32(self.0),
        )
    }
}

/// A ChArUco board: squares along its width and height, the square's and the marker's sides (m),
/// and the markers' dictionary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Charuco {
    /// Squares along the board's width (its x axis).
    pub squares_x: i32,
    /// Squares along the board's height (its y axis).
    pub squares_y: i32,
    /// Side of a square, m.
    pub square: f64,
    /// Side of a marker, m (less than the square's).
    pub marker: f64,
    /// The markers' dictionary.
    pub dictionary: Dictionary,
}

/// The corners of one view: their identities, board coordinates (m) and pixels.
#[derive(Debug, Clone, Default)]
pub struct ViewPoints {
    /// Each corner's identity on the board (its index in the board's corners).
    pub ids: Vec<i32>,
    /// Board coordinates, m (z = 0).
    pub object: Vector<Point3f>,
    /// Pixels.
    pub image: Vector<Point2f>,
}

impl Charuco {
    /// The board's values checked: at least 2 x 2 squares, a marker smaller than its square,
    /// enough markers in the dictionary for the board.
    pub fn check(&self) -> Result<(), VisionError> {
        let bad = |r: String| Err(VisionError::Calibration(format!("ChArUco board: {r}")));
        if self.squares_x < 2 || self.squares_y < 2 {
            return bad(format!(
                "{} x {} squares: give at least 2 x 2",
                self.squares_x, self.squares_y
            ));
        }
        if !(self.square.is_finite() && self.square > 0.0) {
            return bad(format!(
                "square {} m: give the square's side in m",
                self.square
            ));
        }
        if !(self.marker.is_finite() && self.marker > 0.0 && self.marker < self.square) {
            return bad(format!(
                "marker {} m: give the marker's side in m, less than the square's {} m",
                self.marker, self.square
            ));
        }
        let markers = self.squares_x * self.squares_y / 2;
        let dict = self.dictionary.get()?;
        let available = dict.bytes_list().rows();
        if markers > available {
            return bad(format!(
                "{} x {} squares hold {markers} markers, more than dictionary {}'s {available}",
                self.squares_x, self.squares_y, self.dictionary
            ));
        }
        Ok(())
    }

    /// OpenCV's board.
    pub fn board(&self) -> Result<Ptr<opencv::aruco::CharucoBoard>, VisionError> {
        cv(
            "CharucoBoard::create",
            opencv::aruco::CharucoBoard::create(
                self.squares_x,
                self.squares_y,
                self.square as f32,
                self.marker as f32,
                &self.dictionary.get()?,
            ),
        )
    }

    /// The board's inner corners in its frame, m, by identity.
    pub fn corners(&self) -> Result<Vec<[f64; 2]>, VisionError> {
        Ok(self
            .board()?
            .chessboard_corners()
            .iter()
            .map(|p| [p.x as f64, p.y as f64])
            .collect())
    }

    /// The corners of the board in a grey image, with their identities; None when fewer than
    /// [`MIN_CORNERS`] are found or they lie on one line.
    pub fn detect(&self, image: &Mat) -> Result<Option<ViewPoints>, VisionError> {
        let board = self.board()?;
        let (marker_corners, marker_ids) = markers(image, self.dictionary)?;
        if marker_ids.len() < 2 {
            return Ok(None);
        }
        let mut corners = Vector::<Point2f>::new();
        let mut ids = Vector::<i32>::new();
        cv(
            "interpolateCornersCharuco",
            opencv::aruco::interpolate_corners_charuco_def(
                &marker_corners,
                &marker_ids,
                image,
                &board,
                &mut corners,
                &mut ids,
            ),
        )?;
        refine(&mut corners);
        if ids.len() < MIN_CORNERS
            || cv(
                "testCharucoCornersCollinear",
                opencv::aruco::test_charuco_corners_collinear(&board, &ids),
            )?
        {
            return Ok(None);
        }
        let all = board.chessboard_corners();
        let mut object = Vector::<Point3f>::new();
        for id in &ids {
            object.push(cv("corner", all.get(id as usize))?);
        }
        Ok(Some(ViewPoints {
            ids: ids.to_vec(),
            object,
            image: corners,
        }))
    }

    /// The board as printed: a grey image (0 black, 255 white) of `px_per_square` pixels a
    /// square, the squares' grid filling it (no margin), and the map from board coordinates (m)
    /// to its pixels ([`drawing_map`]: OpenCV 4.6 draws its boards with the y axis up).
    pub fn drawing(&self, px_per_square: i32) -> Result<(Mat, [f64; 6]), VisionError> {
        let mut board = self.board()?;
        let size = opencv::core::Size::new(
            self.squares_x * px_per_square,
            self.squares_y * px_per_square,
        );
        let mut img = Mat::default();
        cv("CharucoBoard::draw", board.draw(size, &mut img, 0, 1))?;
        // A white margin so that the edge markers are detected in the drawing.
        let pad = px_per_square;
        let mut padded = Mat::default();
        cv(
            "copyMakeBorder",
            opencv::core::copy_make_border(
                &img,
                &mut padded,
                pad,
                pad,
                pad,
                pad,
                opencv::core::BORDER_CONSTANT,
                opencv::core::Scalar::all(255.0),
            ),
        )?;
        let found = self.detect(&padded)?.ok_or_else(|| {
            VisionError::Calibration("the ChArUco board's own drawing shows no corners".into())
        })?;
        let map = drawing_map(
            self,
            px_per_square,
            (&found.object, &found.image),
            -(pad as f64),
        )?;
        Ok((img, map))
    }
}

/// Whether the linked OpenCV's `interpolateCornersCharuco` returns its corners shifted by
/// +0.5 px in u and v: from 4.5.4 (opencv_contrib pull request 3024 moved the points by -0.5 px
/// before `cornerSubPix` and back after, while `cornerSubPix` converges to the saddle point
/// whatever the start: opencv/opencv issue 25539) to 4.6, the contrib module Debian ships (4.7
/// moved ChArUco into objdetect, where the same shift stayed until pull request 28380 in 2026,
/// an API this crate's aruco binding does not use). Measured on rendered views with Debian's
/// 4.6: (+0.496, +0.499) px on 20 views (`charuco_calibration`), the principal point 0.5 px off.
fn shifted_by_half_pixel() -> bool {
    let version: Vec<u32> = opencv::core::get_version_string()
        .unwrap_or_default()
        .split('.')
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    matches!(version.as_slice(), [4, 5, p, ..] if *p >= 4)
        || matches!(version.as_slice(), [4, 6, ..])
}

/// The interpolated corners with OpenCV's half-pixel shift undone where it has it.
fn refine(corners: &mut Vector<Point2f>) {
    if shifted_by_half_pixel() {
        let fixed: Vector<Point2f> = corners
            .iter()
            .map(|p| Point2f::new(p.x - 0.5, p.y - 0.5))
            .collect();
        *corners = fixed;
    }
}

/// The markers of `dictionary` in a grey image: their corners and identities.
fn markers(
    image: &Mat,
    dictionary: Dictionary,
) -> Result<(Vector<Vector<Point2f>>, Vector<i32>), VisionError> {
    let mut corners = Vector::<Vector<Point2f>>::new();
    let mut ids = Vector::<i32>::new();
    cv(
        "detectMarkers",
        opencv::aruco::detect_markers_def(image, &dictionary.get()?, &mut corners, &mut ids),
    )?;
    Ok((corners, ids))
}

/// The dictionary whose markers a view shows most (at least four of them), with their count:
/// what a board of another dictionary than the one given is made of.
pub fn dictionary_in(image: &Mat) -> Result<Option<(Dictionary, usize)>, VisionError> {
    let mut best: Option<(Dictionary, usize)> = None;
    for (_, i) in DICTIONARIES {
        let d = Dictionary(i);
        let n = markers(image, d)?.1.len();
        if n >= 4 && best.is_none_or(|b| n > b.1) {
            best = Some((d, n));
        }
    }
    Ok(best)
}

/// The map [a b c; d e f] (pixel = A (x, y) + (c, f)) from board coordinates (m) to the
/// pixels of a drawing of `pps` pixels a square with no margin: a square's edge on a pixel's
/// edge (the pixel centre at k + 0.5), each axis possibly flipped; the flip is the one that puts
/// the corners found in the drawing (`object`, `image`, the latter shifted by `shift` px) within
/// 1 px (the found corners of a sharp drawing are off by up to 0.2 px: aliasing).
fn drawing_map(
    charuco: &Charuco,
    pps: i32,
    (object, image): (&Vector<Point3f>, &Vector<Point2f>),
    shift: f64,
) -> Result<[f64; 6], VisionError> {
    let s = pps as f64 / charuco.square;
    let (w, h) = (
        (charuco.squares_x * pps) as f64,
        (charuco.squares_y * pps) as f64,
    );
    let mut best: Option<(f64, [f64; 6])> = None;
    for (fx, fy) in [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)] {
        let cx = if fx > 0.0 { -0.5 } else { w - 0.5 };
        let cy = if fy > 0.0 { -0.5 } else { h - 0.5 };
        let map = [fx * s, 0.0, cx, 0.0, fy * s, cy];
        let worst = object
            .iter()
            .zip(image.iter())
            .map(|(o, p)| {
                let u = map[0] * o.x as f64 + map[2];
                let v = map[4] * o.y as f64 + map[5];
                (u - (p.x as f64 + shift)).hypot(v - (p.y as f64 + shift))
            })
            .fold(0.0, f64::max);
        if best.is_none_or(|b| worst < b.0) {
            best = Some((worst, map));
        }
    }
    match best {
        Some((worst, map)) if worst < 1.0 => Ok(map),
        Some((worst, _)) => Err(VisionError::Calibration(format!(
            "the ChArUco board's drawing and its corners disagree by {worst:.2} px"
        ))),
        None => Err(VisionError::Calibration(
            "the ChArUco board's drawing shows no corners".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> Charuco {
        Charuco {
            squares_x: 7,
            squares_y: 5,
            square: 0.04,
            marker: 0.03,
            dictionary: "4x4_50".parse().unwrap(),
        }
    }

    /// The drawing's corners are found where the board puts them (the fitted map's residual
    /// under 0.05 px), a square of 60 px is 0.04 m, and the other dictionaries find nothing.
    #[test]
    fn drawing_and_detection_agree() {
        let b = board();
        b.check().unwrap();
        let (img, map) = b.drawing(60).unwrap();
        assert_eq!(img.cols(), 7 * 60);
        assert!((map[0].abs() * 0.04 - 60.0).abs() < 1e-9, "{map:?}");
        let other = Charuco {
            dictionary: "6x6_250".parse().unwrap(),
            ..b
        };
        let mut padded = Mat::default();
        opencv::core::copy_make_border(
            &img,
            &mut padded,
            60,
            60,
            60,
            60,
            opencv::core::BORDER_CONSTANT,
            opencv::core::Scalar::all(255.0),
        )
        .unwrap();
        assert!(other.detect(&padded).unwrap().is_none());
        let (d, n) = dictionary_in(&padded).unwrap().unwrap();
        assert_eq!(d.to_string(), "4x4_50");
        assert_eq!(n, 17);
    }

    /// Impossible boards are refused with the value named.
    #[test]
    fn impossible_boards_refused() {
        let too_many = Charuco {
            squares_x: 12,
            squares_y: 10,
            ..board()
        };
        assert!(too_many
            .check()
            .unwrap_err()
            .to_string()
            .contains("60 markers"));
        let big_marker = Charuco {
            marker: 0.05,
            ..board()
        };
        assert!(big_marker
            .check()
            .unwrap_err()
            .to_string()
            .contains("less than"));
        assert!("5x5_77".parse::<Dictionary>().is_err());
    }
}
