//! The calibration board's poses in front of the camera: random, each seen whole or in part.

use super::*;

/// A board's pose in the camera frame: rotation and translation (m).
pub type BoardPose = (Matrix3<f64>, Vector3<f64>);

/// Board poses (board -> camera) for calibration views, varied and whole in the image (every
/// corner of the paper at least 4 px inside), deterministic from `rng`. The views' aims cycle
/// over a 3 x 3 grid of the image (centre, edges and corners, so the lens distortion is seen up
/// to the image's corners), each turned up to 35 deg about the board's axes and 30 deg in
/// plane, 0.6 to 0.8 m away at the centre, 0.7 to 1.2 m towards the edges and corners.
pub fn board_poses(
    intr: &Intrinsics,
    board: &Board,
    count: usize,
    rng: &mut opencv::core::RNG,
) -> Result<Vec<BoardPose>, VisionError> {
    poses(intr, board, count, rng, Placement::Whole)
}

/// Board poses for calibration views whose board leaves the image: aimed past the image's edges
/// and corners (the aims of [`board_poses`] pushed 20 to 60 % further out), kept when at least
/// one inner corner is outside the image and the board's centre inside (a real user's views of
/// a board held too close to an edge).
pub fn partial_board_poses(
    intr: &Intrinsics,
    board: &Board,
    count: usize,
    rng: &mut opencv::core::RNG,
) -> Result<Vec<BoardPose>, VisionError> {
    poses(intr, board, count, rng, Placement::Leaving)
}

/// Where a view's board lies in the image.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Placement {
    /// The whole paper inside, 4 px from the borders.
    Whole,
    /// Some inner corners outside, the centre inside.
    Leaving,
}

/// Board poses placed as `placement` says (see [`board_poses`] and [`partial_board_poses`]).
pub(super) fn poses(
    intr: &Intrinsics,
    board: &Board,
    count: usize,
    rng: &mut opencv::core::RNG,
    placement: Placement,
) -> Result<Vec<BoardPose>, VisionError> {
    let s = board.square;
    let centre = Vector3::new(
        (board.cols - 1) as f64 * s / 2.0,
        (board.rows - 1) as f64 * s / 2.0,
        0.0,
    );
    let paper = [
        (-2.0 * s, -2.0 * s),
        ((board.cols as f64 + 1.0) * s, -2.0 * s),
        (-2.0 * s, (board.rows as f64 + 1.0) * s),
        ((board.cols as f64 + 1.0) * s, (board.rows as f64 + 1.0) * s),
    ];
    let inner: Vec<(f64, f64)> = (0..board.rows)
        .flat_map(|j| (0..board.cols).map(move |i| (i as f64 * s, j as f64 * s)))
        .collect();
    let inside = |r: &Matrix3<f64>, t: &Vector3<f64>, (x, y): (f64, f64), margin: f64| {
        let p = r * Vector3::new(x, y, 0.0) + t;
        if p.z <= 0.05 {
            return false;
        }
        let (pu, pv) = intr.project_normalized(p.x / p.z, p.y / p.z);
        pu > margin
            && pv > margin
            && pu < intr.width as f64 - margin
            && pv < intr.height as f64 - margin
    };
    let mut out = Vec::new();
    let mut tries = 0;
    while out.len() < count {
        tries += 1;
        if tries > 20_000 {
            return Err(VisionError::Calibration(
                "cannot place the board wholly in the image: use a smaller board or a wider lens"
                    .into(),
            ));
        }
        let (r, t) = random_pose(intr, board, out.len(), rng, placement)?;
        let ok = match placement {
            Placement::Whole => paper.iter().all(|&c| inside(&r, &t, c, 4.0)),
            Placement::Leaving => {
                inside(&r, &t, (centre.x, centre.y), 0.0)
                    && inner.iter().any(|&c| !inside(&r, &t, c, 0.0))
            }
        };
        if ok {
            out.push((r, t));
        }
    }
    Ok(out)
}

/// One random pose of the `k`-th view (see [`board_poses`]); for a board leaving the image, the
/// aim pushed past the edges (never the image's centre).
pub(super) fn random_pose(
    intr: &Intrinsics,
    board: &Board,
    k: usize,
    rng: &mut opencv::core::RNG,
    placement: Placement,
) -> Result<BoardPose, VisionError> {
    let s = board.square;
    let centre = Vector3::new(
        (board.cols - 1) as f64 * s / 2.0,
        (board.rows - 1) as f64 * s / 2.0,
        0.0,
    );
    let k = match placement {
        Placement::Whole => k % 9,
        // The eight aims off the centre.
        Placement::Leaving => [0, 1, 2, 3, 5, 6, 7, 8][k % 8],
    };
    let (gx, gy) = ((k % 3) as f64 - 1.0, (k / 3) as f64 - 1.0);
    let mut u = || -> Result<f64, VisionError> { cv("rng", rng.uniform_f64(-1.0, 1.0)) };
    let (ax, ay, az) = (
        u()? * 45f64.to_radians(),
        u()? * 45f64.to_radians(),
        u()? * 30f64.to_radians(),
    );
    // Views aimed at the edges and corners stand farther, so the board reaches into them.
    let dist = if k == 4 {
        0.7 + 0.1 * u()?
    } else {
        0.95 + 0.25 * u()?
    };
    // Aim: a point of the image grid, shrunk a little at random so the board fits (pushed out
    // for a board leaving the image).
    let shrink = match placement {
        Placement::Whole => 0.8 + 0.2 * (u()? + 1.0) / 2.0,
        Placement::Leaving => 1.2 + 0.4 * (u()? + 1.0) / 2.0,
    };
    let half_u = (board.cols as f64 + 3.0) * s / 2.0 * intr.fx / dist;
    let half_v = (board.rows as f64 + 3.0) * s / 2.0 * intr.fy / dist;
    let aim_u = intr.cx + gx * shrink * (intr.width as f64 / 2.0 - half_u - 5.0).max(0.0);
    let aim_v = intr.cy + gy * shrink * (intr.height as f64 / 2.0 - half_v - 5.0).max(0.0);
    let (xn, yn) = intr.undistort_pixel(aim_u, aim_v);
    let r = *Rotation3::from_euler_angles(ax, ay, az).matrix();
    let t = Vector3::new(xn * dist, yn * dist, dist) - r * centre;
    Ok((r, t))
}
