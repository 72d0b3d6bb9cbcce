//! ChArUco calibration on rendered views in which no whole board is visible: every view's
//! board leaves the image (some inner corners outside), yet its visible corners, each known by
//! its markers, recover the rendering camera's focal lengths and principal point within 0.2 %
//! (the criterion). The corners are measured against the rendered truth (bias and RMS,
//! printed and in docs/calibration.md); a board of another dictionary than the one given is
//! named; a plane view partly hidden by the lever still gives the bench plane.

mod common;

use common::{camera, corner_errors, look};
use flexbench_vision::calibrate::{bench_plane, calibrate_target, Charuco, Target};
use flexbench_vision::render::{BoardPose, BoardRenderer};
use nalgebra::Vector3;

/// The board: 9 x 7 squares of 40 mm, 26 mm markers of dictionary 4x4_50 (an A2 sheet).
fn charuco() -> Charuco {
    Charuco {
        squares_x: 9,
        squares_y: 7,
        square: 0.04,
        marker: 0.026,
        dictionary: "4x4_50".parse().unwrap(),
    }
}

/// Poses of the ChArUco board as a user films a big board: close to the camera (0.35 to
/// 0.55 m, so that it fills the image; only the views where it leaves the image are kept), its
/// centre within 6 cm of the optical axis, tilted up to 35 deg about each of its axes and turned
/// up to 20 deg in its plane; each view's angles from OpenCV's RNG, so the same every run.
fn poses(count: usize, rng: &mut opencv::core::RNG) -> Vec<BoardPose> {
    use opencv::core::RNGTrait;
    let c = charuco();
    let centre = Vector3::new(
        c.squares_x as f64 * c.square / 2.0,
        c.squares_y as f64 * c.square / 2.0,
        0.0,
    );
    let (truth, corners) = (camera(), c.corners().unwrap());
    let leaves = |r: &nalgebra::Matrix3<f64>, t: &Vector3<f64>| {
        corners.iter().any(|[x, y]| {
            let p = r * Vector3::new(*x, *y, 0.0) + t;
            let (u, v) = truth.project_normalized(p.x / p.z, p.y / p.z);
            u < 0.0 || v < 0.0 || u > 639.0 || v > 479.0
        })
    };
    let mut out = Vec::new();
    while out.len() < count {
        let mut u = |a: f64, b: f64| rng.uniform_f64(a, b).unwrap();
        let (ax, ay, roll) = (
            u(-35.0, 35.0).to_radians(),
            u(-35.0, 35.0).to_radians(),
            u(-20.0, 20.0).to_radians(),
        );
        let r = nalgebra::Rotation3::from_euler_angles(ax, ay, roll).into_inner();
        let at = Vector3::new(u(-0.06, 0.06), u(-0.06, 0.06), u(0.35, 0.55));
        let t = at - r * centre;
        if leaves(&r, &t) {
            out.push((r, t));
        }
    }
    out
}

/// Rendered views: their files, each view's true corners (px, by identity), and how many
/// leave the image.
type Rendered = (Vec<std::path::PathBuf>, Vec<Vec<(f64, f64)>>, usize);

/// Render `count` partial views into `dir`: the files, and each view's true corners (px) with
/// whether any inner corner is outside the image.
fn rendered(dir: &std::path::Path, count: usize) -> Rendered {
    let (truth, c) = (camera(), charuco());
    let drawing = c.drawing(64).unwrap();
    let corners = c.corners().unwrap();
    let renderer = BoardRenderer::new(&truth);
    let mut rng = opencv::core::RNG::new(11).unwrap();
    let (mut files, mut truths, mut leaving) = (Vec::new(), Vec::new(), 0);
    for (k, (r, t)) in poses(count, &mut rng).iter().enumerate() {
        let px: Vec<(f64, f64)> = corners
            .iter()
            .map(|[x, y]| {
                let p = r * Vector3::new(*x, *y, 0.0) + t;
                truth.project_normalized(p.x / p.z, p.y / p.z)
            })
            .collect();
        let outside = |(u, v): &(f64, f64)| *u < 0.0 || *v < 0.0 || *u > 639.0 || *v > 479.0;
        leaving += px.iter().any(outside) as usize;
        let img = renderer
            .render_charuco((&c, &drawing), (r, t), &look(), None, &mut rng)
            .unwrap();
        let p = dir.join(format!("view{k:02}.png"));
        assert!(
            opencv::imgcodecs::imwrite(p.as_os_str(), &img, &opencv::core::Vector::new()).unwrap()
        );
        files.push(p);
        truths.push(px);
    }
    (files, truths, leaving)
}

#[test]
fn charuco_calibration_from_views_without_a_whole_board() {
    let dir = tempfile::tempdir().unwrap();
    let (files, truths, leaving) = rendered(dir.path(), 20);
    assert_eq!(leaving, files.len(), "every view's board leaves the image");
    let cal = calibrate_target(&files, &Target::Charuco(charuco()), 2).unwrap();
    eprintln!("views rejected: {:?}", cal.rejected);
    assert!(
        cal.per_view.len() >= 20,
        "views kept: {}",
        cal.per_view.len()
    );
    // The corners found against the truth (each matched to the nearest true corner).
    let ((bu, bv), rms, n) = corner_errors(&cal, &files, &truths, 0.5);
    eprintln!(
        "ChArUco: {n} corners in {} views (every board leaving the image), bias ({:.4}, {:.4}) px, RMS {:.4} px from the truth; reprojection RMS {:.4} px",
        cal.per_view.len(),
        bu,
        bv,
        rms,
        cal.rms
    );
    eprintln!(
        "standard deviations (fx fy cx cy): {:?}",
        &cal.std_intrinsics[..4.min(cal.std_intrinsics.len())]
    );
    let (e, t) = (cal.intrinsics, camera());
    for (name, a, b) in [
        ("fx", e.fx, t.fx),
        ("fy", e.fy, t.fy),
        ("cx", e.cx, t.cx),
        ("cy", e.cy, t.cy),
    ] {
        eprintln!("{name}: {a:.3} vs {b:.3} ({:.3} %)", 100.0 * (a - b) / b);
        assert!((a - b).abs() / b < 2e-3, "{name}: {a} vs {b}");
    }

    // The same views described with another dictionary: the one they show is named.
    let wrong = Charuco {
        dictionary: "6x6_250".parse().unwrap(),
        ..charuco()
    };
    let e = calibrate_target(&files, &Target::Charuco(wrong), 2)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dictionary 4x4_50") && e.contains("not of the 6x6_250 given"),
        "{e}"
    );
}

/// A ChArUco board lying in the lever's plane, a dark bar (the lever) across a third of it:
/// the bench plane from its visible corners maps the image to the bench within 0.5 mm.
#[test]
fn plane_view_partly_hidden() {
    let (truth, c) = (camera(), charuco());
    let drawing = c.drawing(64).unwrap();
    // The board in the plane, seen from 0.9 m, slightly tilted.
    let r = nalgebra::Rotation3::from_euler_angles(0.05, -0.04, 0.02).into_inner();
    let t = Vector3::new(-0.18, -0.14, 0.9);
    let bar = |_x: f64, y: f64| (0.12..0.17).contains(&y);
    let mut rng = opencv::core::RNG::new(3).unwrap();
    let img = BoardRenderer::new(&truth)
        .render_charuco((&c, &drawing), (&r, &t), &look(), Some(&bar), &mut rng)
        .unwrap();
    let seen = c.detect(&img).unwrap().unwrap();
    assert!(
        seen.ids.len() < 40,
        "the bar hides corners: {} seen",
        seen.ids.len()
    );
    // A and the horizontal: board points (0.04, 0.04) and (0.28, 0.04).
    let px = |x: f64, y: f64| {
        let p = r * Vector3::new(x, y, 0.0) + t;
        truth.project_normalized(p.x / p.z, p.y / p.z)
    };
    let plane = bench_plane(
        &truth,
        &img,
        &Target::Charuco(c),
        px(0.04, 0.04),
        px(0.28, 0.04),
    )
    .unwrap();
    // Board points to bench: X along the board's x from A, Y = the board's -y or y (up in the
    // image); compare distances, which do not depend on the sign.
    let mut worst: f64 = 0.0;
    for (x, y) in [(0.04, 0.04), (0.32, 0.24), (0.16, 0.14), (0.3, 0.04)] {
        let (u, v) = px(x, y);
        let (bx, by) = plane.pixel_to_bench(&truth, u, v);
        let d_true = (x - 0.04f64).hypot(y - 0.04);
        worst = worst.max((bx.hypot(by) - d_true).abs());
        assert!((bx - (x - 0.04)).abs() < 5e-4, "X of ({x}, {y}): {bx}");
    }
    eprintln!(
        "plane view with the bar: {} corners, worst distance error {:.3} mm",
        seen.ids.len(),
        worst * 1e3
    );
    assert!(worst < 5e-4);
}
