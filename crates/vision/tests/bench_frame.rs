//! The bench frame from clicked points of known bench coordinates (no whole board in the lever's
//! plane), against the rendering camera's true plane: five points over 0.35 m x 0.37 m of the
//! plane, clicked to 0.1 px, give the origin within 0.5 mm and the horizontal within 0.5 mrad
//! (the criterion); the stated uncertainty covers the truth (at least 90 % of 200 trials
//! within twice it, for the origin and for the angle); fewer than 4 points, points on a line and a point given twice are refused.

use flexbench_vision::bench_frame::{
    bench_plane_from_points, frame_uncertainty, ClickedPoint, FrameModel,
};
use flexbench_vision::render::CameraTruth;
use flexbench_vision::BenchPlane;
use opencv::core::RNGTrait;

/// The shipped recording's camera (its true intrinsics, `recordings/default/truth/camera.yaml`),
/// looking at the bench.
fn camera() -> CameraTruth {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings/default/truth/camera.yaml");
    let intr = flexbench_vision::Calibration::read(&file)
        .unwrap()
        .intrinsics;
    CameraTruth::looking_at(intr, [0.25, -0.05], 1.0, 4.0, -3.0, 1.5)
}

/// Points of known bench position (m): A, a point of the horizontal, and three more.
const BENCH: [(f64, f64); 5] = [
    (0.0, 0.0),
    (0.35, 0.0),
    (0.3, 0.22),
    (0.05, 0.25),
    (0.18, -0.12),
];

/// The points clicked with Gaussian noise of `sigma` px per coordinate, rounded to 0.1 px.
fn clicked(cam: &CameraTruth, sigma: f64, rng: &mut opencv::core::RNG) -> Vec<ClickedPoint> {
    BENCH
        .iter()
        .map(|&b| {
            let (u, v) = cam.project(b.0, b.1);
            let mut noisy = |x: f64| {
                let n = rng.gaussian(sigma).unwrap();
                ((x + n) * 10.0).round() / 10.0
            };
            ClickedPoint {
                pixel: (noisy(u), noisy(v)),
                bench: b,
            }
        })
        .collect()
}

/// The estimated frame's errors against the truth: the origin's displacement (mm) and the
/// horizontal's angle (mrad), over the points' reach.
fn errors(cam: &CameraTruth, plane: &BenchPlane) -> (f64, f64) {
    let truth = cam.plane().unwrap();
    let o = truth.to_image(0.0, 0.0).unwrap();
    let x = truth.to_image(0.35, 0.0).unwrap();
    let (a, b) = (plane.to_bench(o.0, o.1), plane.to_bench(x.0, x.1));
    (
        a.0.hypot(a.1) * 1e3,
        (b.1 - a.1).atan2(b.0 - a.0).abs() * 1e3,
    )
}

#[test]
fn origin_and_horizontal_from_five_clicks() {
    let cam = camera();
    let mut rng = opencv::core::RNG::new(11).unwrap();
    let points = clicked(&cam, 0.0, &mut rng);
    let plane = bench_plane_from_points(&cam.intrinsics, &points, FrameModel::Pose).unwrap();
    let (origin, angle) = errors(&cam, &plane);
    let u = frame_uncertainty(&cam.intrinsics, &points, &plane, 0.1, FrameModel::Pose).unwrap();
    eprintln!(
        "clicks rounded to 0.1 px: origin {origin:.4} mm, horizontal {angle:.4} mrad off; stated for 0.1 px clicks: origin {:.4} mm, angle {:.4} mrad, scale {:.2e}",
        u.origin_mm, u.angle_mrad, u.scale
    );
    assert!(origin < 0.5 && angle < 0.5, "{origin} mm, {angle} mrad");
}

#[test]
fn the_stated_uncertainty_covers_the_truth() {
    // For Gaussian clicks, twice the stated uncertainty holds the angle's error in 95 % of the
    // trials and the origin's (a 2-D error against its RMS) in 98 %; at least 90 % each of 200.
    let cam = camera();
    let mut rng = opencv::core::RNG::new(12).unwrap();
    let (mut in_o, mut in_a, trials) = (0, 0, 200);
    let (mut worst_o, mut worst_a) = (0.0f64, 0.0f64);
    for _ in 0..trials {
        let points = clicked(&cam, 0.3, &mut rng);
        let plane = bench_plane_from_points(&cam.intrinsics, &points, FrameModel::Pose).unwrap();
        let u = frame_uncertainty(&cam.intrinsics, &points, &plane, 0.3, FrameModel::Pose).unwrap();
        let (origin, angle) = errors(&cam, &plane);
        (worst_o, worst_a) = (worst_o.max(origin), worst_a.max(angle));
        in_o += usize::from(origin <= 2.0 * u.origin_mm);
        in_a += usize::from(angle <= 2.0 * u.angle_mrad);
    }
    eprintln!(
        "0.3 px clicks, {trials} trials within twice the stated uncertainty: origin {in_o}, angle {in_a}; worst origin {worst_o:.3} mm, angle {worst_a:.3} mrad"
    );
    assert!(
        in_o >= 180 && in_a >= 180,
        "origin {in_o}, angle {in_a} of {trials}"
    );
}

#[test]
fn too_few_collinear_or_repeated_points_are_refused() {
    let cam = camera();
    let mut rng = opencv::core::RNG::new(13).unwrap();
    let points = clicked(&cam, 0.0, &mut rng);
    let err = |p: &[ClickedPoint]| {
        bench_plane_from_points(&cam.intrinsics, p, FrameModel::Pose)
            .unwrap_err()
            .to_string()
    };
    assert!(
        err(&points[..3]).contains("3 clicked point(s)"),
        "{}",
        err(&points[..3])
    );
    let line: Vec<ClickedPoint> = [0.0, 0.1, 0.2, 0.3]
        .iter()
        .map(|&x| ClickedPoint {
            pixel: cam.project(x, 0.0),
            bench: (x, 0.0),
        })
        .collect();
    assert!(err(&line).contains("lie on a line"), "{}", err(&line));
    let mut twice = points.clone();
    twice[4].bench = twice[0].bench;
    let e = err(&twice);
    assert!(
        e.contains("share the bench position") || e.contains("lie on a line"),
        "{e}"
    );
    twice[4] = ClickedPoint {
        pixel: (1.0, 1.0),
        ..points[0]
    };
    twice.push(points[4]);
    assert!(
        err(&twice).contains("share the bench position"),
        "{}",
        err(&twice)
    );
}

/// A camera facing the plane (no tilt, turned 1.5 deg about its axis): two clicks, A and a point
/// of the horizontal 0.35 m away, to 0.1 px, give the frame as a similarity within 0.5 mm and
/// 0.5 mrad, and a scale within 0.1 %; the stated uncertainty is that of two clicks. A camera
/// tilted 3 deg from facing it is measured too (printed: the model's limit, in the docs); one
/// point is refused.
#[test]
fn two_clicks_when_the_camera_faces_the_plane() {
    let intr = camera().intrinsics;
    let mut rng = opencv::core::RNG::new(5).unwrap();
    for (tilt, check) in [(0.0, true), (3.0, false)] {
        let cam = CameraTruth::looking_at(intr, [0.17, 0.0], 1.0, tilt, 0.0, 1.5);
        let two: Vec<ClickedPoint> = clicked(&cam, 0.0, &mut rng)[..2].to_vec();
        let plane = bench_plane_from_points(&intr, &two, FrameModel::Facing).unwrap();
        let (origin, angle) = errors(&cam, &plane);
        let truth = cam.plane().unwrap();
        let far = truth.to_image(0.3, 0.22).unwrap();
        let (x, y) = plane.to_bench(far.0, far.1);
        let scale = ((x.hypot(y) / 0.3f64.hypot(0.22)) - 1.0).abs();
        let u = frame_uncertainty(&intr, &two, &plane, 0.1, FrameModel::Facing).unwrap();
        eprintln!(
            "two clicks, camera tilted {tilt} deg from facing the plane: origin {origin:.3} mm, horizontal {angle:.3} mrad, scale at (0.3, 0.22) m {:.3} % off; stated for 0.1 px: origin {:.3} mm, angle {:.3} mrad, scale {:.1e}",
            100.0 * scale, u.origin_mm, u.angle_mrad, u.scale
        );
        if check {
            assert!(
                origin < 0.5 && angle < 0.5 && scale < 1e-3,
                "{origin} mm, {angle} mrad, {scale}"
            );
        }
    }
    let cam = camera();
    let one = clicked(&cam, 0.0, &mut rng)[..1].to_vec();
    let e = bench_plane_from_points(&cam.intrinsics, &one, FrameModel::Facing).unwrap_err();
    assert!(e.to_string().contains("needs 2 at least"), "{e}");
}

#[test]
fn a_nominal_camera_frames_the_plane_by_its_homography() {
    // A camera without distortion, tilted from facing the plane; the user knows neither its
    // focal length nor its principal point: a nominal camera (focal length the image's width,
    // the principal point at its centre) with the five points' homography maps every pixel to
    // its bench position, where a pose solved with the nominal focal length is millimetres off.
    let mut intr = camera().intrinsics;
    intr.dist = [0.0; 5];
    let cam = CameraTruth::looking_at(intr, [0.25, -0.05], 1.0, 4.0, -3.0, 1.5);
    let nominal = flexbench_vision::Intrinsics {
        fx: intr.width as f64,
        fy: intr.width as f64,
        cx: intr.width as f64 / 2.0,
        cy: intr.height as f64 / 2.0,
        ..intr
    };
    let points: Vec<ClickedPoint> = BENCH
        .iter()
        .map(|&b| ClickedPoint {
            pixel: cam.project(b.0, b.1),
            bench: b,
        })
        .collect();
    let worst = |plane: &BenchPlane| {
        let mut worst = 0.0f64;
        for i in 0..=10 {
            for j in 0..=10 {
                let (bx, by) = (-0.05 + 0.045 * i as f64, -0.15 + 0.045 * j as f64);
                let (u, v) = cam.project(bx, by);
                let (x, y) = plane.pixel_to_bench(&nominal, u, v);
                worst = worst.max((x - bx).hypot(y - by));
            }
        }
        worst * 1e3
    };
    let h = bench_plane_from_points(&nominal, &points, FrameModel::Homography).unwrap();
    let pose = bench_plane_from_points(&nominal, &points, FrameModel::Pose).unwrap();
    let (wh, wp) = (worst(&h), worst(&pose));
    let mut rng = opencv::core::RNG::new(14).unwrap();
    let rounded = clicked(&cam, 0.0, &mut rng);
    let hr = bench_plane_from_points(&nominal, &rounded, FrameModel::Homography).unwrap();
    let u = frame_uncertainty(&nominal, &points, &h, 0.3, FrameModel::Homography).unwrap();
    eprintln!(
        "nominal camera (focal {:.0} px for {:.0} px): worst error over 0.45 m x 0.45 m by the homography {wh:.2e} mm (exact clicks), {:.3} mm (clicks rounded to 0.1 px), by a pose {wp:.3} mm; stated for 0.3 px clicks: origin {:.3} mm, angle {:.3} mrad, scale {:.1e}",
        nominal.fx, intr.fx, worst(&hr), u.origin_mm, u.angle_mrad, u.scale
    );
    assert!(wh < 1e-6, "homography {wh} mm");
    assert!(wp > 0.1, "the pose with a wrong focal length: {wp} mm");
}
