//! Printed fiducials (ArUco and AprilTag squares, OpenCV 4.6's contrib aruco module as Debian
//! ships it): each marker's identity is read from its code, so no lock and no assignment by
//! motion is needed, and its centre is where the diagonals of its four corners cross (the image
//! of the square's centre under any perspective). The corners come from the black square's
//! edges: each edge's half-way crossings fitted by a line, each corner where two lines cross
//! (`by_edges`); `cornerSubPix` in a window of half a cell first (OpenCV 4.6's own refinement
//! takes a window past a small code's quiet zone: 3 px off on a 20 px code). A code of the dictionary that no marker carries is
//! counted as a rejected blob; a marker whose code is seen twice in a frame is left out there
//! (a gap, never a guess).

use opencv::core::{Mat, Point2f, Ptr, Vector};
use opencv::prelude::*;

use crate::blob::Blob;
use crate::render::Shape;
use crate::{cv, VisionError};

/// The corners' standard deviation taken for a printed square, px (OpenCV gives none; four
/// corners halve it at the centre): the centres of 25 mm codes rendered 0.7 m away came 0.014 px
/// RMS from the truth lossless and 0.064 px through H.264 at a phone's bit rate with motion
/// blur and a glint (docs/tracking.md), from the edges (`by_edges`).
const CORNER_SIGMA_PX: f64 = 0.15;

/// The fiducials sought in a video: the dictionary and each tracked marker's identity.
pub struct Fiducials {
    dictionary: Ptr<opencv::aruco::Dictionary>,
    parameters: Ptr<opencv::aruco::DetectorParameters>,
    /// Each tracked marker's identity, in the order of the markers' names.
    ids: Vec<u32>,
    /// Cells along a code's side, its black border included.
    cells: i32,
}

/// The grey image of a frame (itself when grey).
fn grey_of(frame: &Mat) -> Result<Mat, VisionError> {
    if frame.channels() == 1 {
        return cv("clone", frame.try_clone());
    }
    let mut g = Mat::default();
    cv(
        "cvtColor",
        opencv::imgproc::cvt_color(frame, &mut g, opencv::imgproc::COLOR_BGR2GRAY, 0),
    )?;
    Ok(g)
}

/// A code's four corners refined to sub-pixel (`cornerSubPix`) in a window of half a cell on
/// each side (2 px at least): OpenCV 4.6's own refinement takes a fixed window that reaches
/// past a small code's quiet zone, and its corners came 3 px off on a code of 20 px.
fn refine(grey: &Mat, quad: Vector<Point2f>, cells: i32) -> Result<Vec<(f64, f64)>, VisionError> {
    let q: Vec<(f64, f64)> = quad.iter().map(|p| (p.x as f64, p.y as f64)).collect();
    let perimeter: f64 = (0..q.len())
        .map(|i| {
            let (a, b) = (q[i], q[(i + 1) % q.len()]);
            (a.0 - b.0).hypot(a.1 - b.1)
        })
        .sum();
    let cell = perimeter / 4.0 / cells.max(1) as f64;
    let half = ((0.5 * cell).floor() as i32).max(2);
    let mut pts = quad;
    cv(
        "cornerSubPix",
        opencv::imgproc::corner_sub_pix(
            grey,
            &mut pts,
            opencv::core::Size::new(half, half),
            opencv::core::Size::new(-1, -1),
            cv(
                "TermCriteria",
                opencv::core::TermCriteria::new(
                    opencv::core::TermCriteria_COUNT + opencv::core::TermCriteria_EPS,
                    50,
                    0.005,
                ),
            )?,
        ),
    )?;
    Ok(pts.iter().map(|p| (p.x as f64, p.y as f64)).collect())
}

impl Fiducials {
    /// The fiducials of OpenCV's predefined `dictionary` with identities `ids` (one per marker).
    pub fn new(dictionary: i32, ids: Vec<u32>) -> Result<Fiducials, VisionError> {
        let dictionary = cv(
            "getPredefinedDictionary",
            opencv::aruco::get_predefined_dictionary_i32(dictionary),
        )?;
        let mut parameters = cv(
            "DetectorParameters",
            opencv::aruco::DetectorParameters::create(),
        )?;
        // The corners are refined here (`refine`), in a window sized to the code's cells.
        parameters.set_corner_refinement_method(opencv::aruco::CORNER_REFINE_NONE);
        let cells = dictionary.marker_size() + 2;
        Ok(Fiducials {
            dictionary,
            parameters,
            ids,
            cells,
        })
    }

    /// The markers found in `frame` (grey or BGR), in the order of the markers, and the count of
    /// codes of the dictionary that are none of them.
    pub fn detect(&self, frame: &Mat) -> Result<(Vec<Option<Blob>>, usize), VisionError> {
        let (corners, ids) = codes(frame, &self.dictionary, &self.parameters)?;
        let grey = grey_of(frame)?;
        let mut found = vec![None; self.ids.len()];
        let mut seen = vec![0usize; self.ids.len()];
        let mut others = 0;
        for (quad, id) in corners.iter().zip(ids.iter()) {
            let Some(m) = self.ids.iter().position(|&i| i64::from(i) == i64::from(id)) else {
                others += 1;
                continue;
            };
            seen[m] += 1;
            let q = refine(&grey, quad, self.cells)?;
            let q = by_edges(&grey, &q, self.cells).unwrap_or(q);
            found[m] = blob_of(&q);
        }
        for (m, n) in seen.iter().enumerate() {
            if *n > 1 {
                found[m] = None;
            }
        }
        Ok((found, others))
    }
}

/// A code's corners from its black square's four edges: along each edge (away from the
/// corners), the sub-pixel place where the grey level crosses halfway from the square's black
/// to the quiet zone's white, across the edge; a line fitted through those places (total least
/// squares); each corner where two neighbouring lines cross. Motion blur spreads an edge evenly
/// about that place, so the centre keeps unbiased where corner refinement wanders. None when an
/// edge shows too little contrast or too few places (the corners found are kept then).
fn by_edges(grey: &Mat, q: &[(f64, f64)], cells: i32) -> Option<Vec<(f64, f64)>> {
    let centre = (
        q.iter().map(|p| p.0).sum::<f64>() / 4.0,
        q.iter().map(|p| p.1).sum::<f64>() / 4.0,
    );
    let mut lines = Vec::with_capacity(4);
    for i in 0..4 {
        let (a, b) = (q[i], q[(i + 1) % 4]);
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len = dx.hypot(dy);
        let cell = len / cells.max(1) as f64;
        let (tx, ty) = (dx / len, dy / len);
        // The normal pointing out of the square.
        let (mut nx, mut ny) = (-ty, tx);
        let mid = (0.5 * (a.0 + b.0), 0.5 * (a.1 + b.1));
        if (mid.0 - centre.0) * nx + (mid.1 - centre.1) * ny < 0.0 {
            (nx, ny) = (-nx, -ny);
        }
        let reach = 0.45 * cell;
        let steps = 16;
        let mut places = Vec::new();
        let n = len.ceil() as usize;
        for k in 0..=n {
            let t = 0.15 + 0.7 * k as f64 / n.max(1) as f64;
            let p = (a.0 + t * dx, a.1 + t * dy);
            let profile: Option<Vec<f64>> = (0..=steps)
                .map(|j| {
                    let s = -reach + 2.0 * reach * j as f64 / steps as f64;
                    crate::blob::bilinear(grey, p.0 + s * nx, p.1 + s * ny)
                })
                .collect();
            let Some(profile) = profile else { continue };
            let quarter = steps / 4;
            let dark = profile[..=quarter].iter().sum::<f64>() / (quarter + 1) as f64;
            let light = profile[steps - quarter..].iter().sum::<f64>() / (quarter + 1) as f64;
            if light - dark < 20.0 {
                continue;
            }
            let half = 0.5 * (dark + light);
            let Some(j) = (0..steps).find(|&j| profile[j] < half && profile[j + 1] >= half) else {
                continue;
            };
            let f = (half - profile[j]) / (profile[j + 1] - profile[j]);
            let s = -reach + 2.0 * reach * (j as f64 + f) / steps as f64;
            places.push((p.0 + s * nx, p.1 + s * ny));
        }
        if places.len() < 4 {
            return None;
        }
        lines.push(fit_line(&places));
    }
    (0..4)
        .map(|i| cross(lines[(i + 3) % 4], lines[i]))
        .collect()
}

/// A line through `places` by total least squares: a point on it and its direction.
fn fit_line(places: &[(f64, f64)]) -> ((f64, f64), (f64, f64)) {
    let n = places.len() as f64;
    let m = (
        places.iter().map(|p| p.0).sum::<f64>() / n,
        places.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for p in places {
        let (x, y) = (p.0 - m.0, p.1 - m.1);
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
    }
    let angle = 0.5 * (2.0 * sxy).atan2(sxx - syy);
    (m, (angle.cos(), angle.sin()))
}

/// Where two lines (a point and a direction each) cross; None when parallel.
fn cross(l: ((f64, f64), (f64, f64)), k: ((f64, f64), (f64, f64))) -> Option<(f64, f64)> {
    let ((p, d), (q, e)) = (l, k);
    let den = d.0 * e.1 - d.1 * e.0;
    if den.abs() < 1e-9 {
        return None;
    }
    let s = ((q.0 - p.0) * e.1 - (q.1 - p.1) * e.0) / den;
    Some((p.0 + s * d.0, p.1 + s * d.1))
}

/// `dictionary`'s codes in `frame`: their corners (px) and identities.
fn codes(
    frame: &Mat,
    dictionary: &Ptr<opencv::aruco::Dictionary>,
    parameters: &Ptr<opencv::aruco::DetectorParameters>,
) -> Result<(Vector<Vector<Point2f>>, Vector<i32>), VisionError> {
    let mut corners: Vector<Vector<Point2f>> = Vector::new();
    let mut ids: Vector<i32> = Vector::new();
    let mut rejected: Vector<Vector<Point2f>> = Vector::new();
    cv(
        "detectMarkers",
        opencv::aruco::detect_markers(
            frame,
            dictionary,
            &mut corners,
            &mut ids,
            parameters,
            &mut rejected,
        ),
    )?;
    Ok((corners, ids))
}

/// The predefined dictionary (name) whose codes `frame` shows most, with their count: what
/// fiducials of another dictionary than the one given are.
pub fn dictionary_in(frame: &Mat) -> Result<Option<(&'static str, usize)>, VisionError> {
    let parameters = cv(
        "DetectorParameters",
        opencv::aruco::DetectorParameters::create(),
    )?;
    let mut best: Option<(&'static str, usize)> = None;
    for (name, d) in flexbench_contracts::FIDUCIAL_DICTIONARIES {
        let dict = cv(
            "getPredefinedDictionary",
            opencv::aruco::get_predefined_dictionary_i32(d),
        )?;
        let n = codes(frame, &dict, &parameters)?.1.len();
        if n > 0 && best.is_none_or(|b| n > b.1) {
            best = Some((name, n));
        }
    }
    Ok(best)
}

/// The code cells of marker `id` of OpenCV's predefined `dictionary`, its black border
/// included (true where black), as OpenCV draws it (`drawMarker`).
pub fn cells(dictionary: i32, id: u32) -> Result<Vec<Vec<bool>>, VisionError> {
    let dict = cv(
        "getPredefinedDictionary",
        opencv::aruco::get_predefined_dictionary_i32(dictionary),
    )?;
    let n = dict.marker_size() + 2;
    let id =
        i32::try_from(id).map_err(|_| VisionError::Calibration(format!("fiducial id {id}")))?;
    let mut img = Mat::default();
    cv(
        "drawMarker",
        opencv::aruco::draw_marker(&dict, id, n, &mut img, 1),
    )?;
    (0..n)
        .map(|r| {
            (0..n)
                .map(|c| cv("pixel", img.at_2d::<u8>(r, c).map(|p| *p < 128)))
                .collect()
        })
        .collect()
}

/// The shapes of a printed fiducial of code `cells` (`cells`) whose black square of `side` (m)
/// is centred on `c` (m) and turned by `turn` (rad): a white quiet zone one cell wide, the black
/// square, and the code's white cells (each row's runs merged) on it; read the right way round
/// by a camera that sees the bench's +Y up.
pub fn tag_shapes(c: [f64; 2], turn: f64, side: f64, cells: &[Vec<bool>]) -> Vec<Shape> {
    let n = cells.len().max(1) as f64;
    let cell = side / n;
    let (co, si) = (turn.cos(), turn.sin());
    let at = |a: f64, b: f64| [c[0] + co * a - si * b, c[1] + si * a + co * b];
    let half = 0.5 * side;
    let mut shapes = vec![
        Shape::Rect {
            c,
            turn,
            half: [half + cell; 2],
            grey: TAG_WHITE,
        },
        Shape::Rect {
            c,
            turn,
            half: [half; 2],
            grey: TAG_BLACK,
        },
    ];
    for (i, row) in cells.iter().enumerate() {
        let mut j = 0;
        while j < row.len() {
            if row[j] {
                j += 1;
                continue;
            }
            let start = j;
            while j < row.len() && !row[j] {
                j += 1;
            }
            // Cells start..j of row i, white: the code's first row at the top (the bench's +Y
            // is the image's up), its columns along +X.
            let a = -half + cell * 0.5 * (start + j) as f64;
            let b = half - cell * (i as f64 + 0.5);
            shapes.push(Shape::Rect {
                c: at(a, b),
                turn,
                half: [0.5 * cell * (j - start) as f64, 0.5 * cell],
                grey: TAG_WHITE,
            });
        }
    }
    shapes
}

/// A printed fiducial's white and black, grey levels before lighting.
const TAG_WHITE: f64 = 235.0;
const TAG_BLACK: f64 = 25.0;

/// A fiducial's quadrilateral (its four corners in order, px) as a blob: the centre where its
/// diagonals cross, its area (the shoelace formula), its elongation (the diagonals' ratio, 1 for
/// a square seen face on). None for a quadrilateral whose diagonals do not cross inside it.
pub fn blob_of(q: &[(f64, f64)]) -> Option<Blob> {
    let [a, b, c, d] = <[(f64, f64); 4]>::try_from(q).ok()?;
    // a + s (c - a) = b + t (d - b).
    let (e, f) = ((c.0 - a.0, c.1 - a.1), (d.0 - b.0, d.1 - b.1));
    let den = e.0 * f.1 - e.1 * f.0;
    if den.abs() < 1e-12 {
        return None;
    }
    let g = (b.0 - a.0, b.1 - a.1);
    let s = (g.0 * f.1 - g.1 * f.0) / den;
    let t = (g.0 * e.1 - g.1 * e.0) / den;
    if !(0.0..=1.0).contains(&s) || !(0.0..=1.0).contains(&t) {
        return None;
    }
    let area = 0.5
        * (0..4)
            .map(|i| {
                let (p, n) = (q[i], q[(i + 1) % 4]);
                p.0 * n.1 - n.0 * p.1
            })
            .sum::<f64>()
            .abs();
    let (le, lf) = (e.0.hypot(e.1), f.0.hypot(f.1));
    Some(Blob {
        u: a.0 + s * e.0,
        v: a.1 + s * e.1,
        sigma: 0.5 * CORNER_SIGMA_PX,
        area,
        half_area: area,
        elongation: le.max(lf) / le.min(lf).max(1e-9),
        rival: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_squares_centre_is_where_its_diagonals_cross() {
        // A square of side 20 px centred on (50, 40), turned by 0.3 rad, seen through a
        // homography that shrinks its far side: the centre is the image of the square's centre.
        let h = nalgebra::Matrix3::new(1.0, 0.05, 10.0, 0.02, 0.9, 5.0, 0.001, 0.0005, 1.0);
        let map = |x: f64, y: f64| {
            let p = h * nalgebra::Vector3::new(x, y, 1.0);
            (p.x / p.z, p.y / p.z)
        };
        let (c, s) = (0.3f64.cos(), 0.3f64.sin());
        let corner = |i: usize| {
            let (x, y) = [(-10.0, -10.0), (10.0, -10.0), (10.0, 10.0), (-10.0, 10.0)][i];
            map(50.0 + c * x - s * y, 40.0 + s * x + c * y)
        };
        let q: Vec<(f64, f64)> = (0..4).map(corner).collect();
        let b = blob_of(&q).unwrap();
        let want = map(50.0, 40.0);
        assert!((b.u - want.0).hypot(b.v - want.1) < 1e-9, "{b:?} {want:?}");
        assert!(
            b.elongation > 1.0 && b.area > 200.0 && b.area < 500.0,
            "{b:?}"
        );
        // A bow-tie (corners out of order) is no marker.
        assert!(blob_of(&[q[0], q[2], q[1], q[3]]).is_none());
    }
}
