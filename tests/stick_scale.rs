//! When a stick is enough: the bench plane from two clicked points of known distance (a 0.5 m
//! stick along the bench's horizontal from A, `camera_faces_plane = true`) with a nominal camera
//! (`calibrate --nominal-camera 640x480`: the focal length assumed, 640 px for the true 700;
//! the principal point at the centre; the lens's distortion none or given), against the camera's
//! tilt from facing the plane and its lens's distortion. The markers are the shipped recording's
//! true positions (`recordings/default/truth`), projected by the true camera (the shipped
//! camera's intrinsics, fy / fx = 1.003, 1 m from the bench, tilted about the bench's horizontal)
//! with the tracking's 0.05 px of white noise, so that what differs between the cases is the
//! calibration: the lever's scale (its end markers' spacing against the file's 0.36 m), the
//! markers' RMS position error without the noise, and the liaison forces at B and C' from
//! `process` (RMS error as a share of the peak). Measured (docs/calibration.md):
//!
//! | camera | calibration | scale | markers | forces at B, C' |
//! |---|---|---|---|---|
//! | facing, ideal lens | the true camera (the noise's floor) | 0.001 % | 0 | 1.51, 1.55 % |
//! | facing, ideal lens | a stick | +0.004 % | 0.08 mm | 3.35, 3.41 % |
//! | 1 deg tilt | a stick | +0.018 % | 0.13 mm | 3.94, 4.02 % |
//! | 3 deg tilt | a stick | +0.045 % | 0.25 mm | 5.25, 5.35 % |
//! | 10 deg tilt | a stick | +0.131 % | 0.72 mm | 6.75, 6.86 % |
//! | facing, k1 = -0.12 | a stick, no distortion | +0.328 % | 1.04 mm | 9.53, 9.70 % |
//! | facing, k1 = -0.12 | a stick, the distortion given | -0.069 % | 0.30 mm | 3.43, 3.50 % |
//! | 3 deg tilt, k1 = -0.12 | a stick, the distortion given | -0.028 % | 0.35 mm | 4.63, 4.72 % |

use crate::common;

use std::path::Path;

use common::{num, read_csv, root, Noise};
use flexbench_vision::render::CameraTruth;
use flexbench_vision::{Calibration, Intrinsics};

/// The shipped camera's lens (recordings/default/camera.toml).
const LENS: [f64; 5] = [-0.12, 0.06, 0.0006, -0.0004, 0.0];

/// The tracking's white noise on each pixel coordinate, px (the shipped recording's: 0.05 px).
const TRACKING_PX: f64 = 0.05;

/// One case: the camera's tilt (deg), its lens, and the calibration: the true camera's, or the
/// stick's with the distortion given to the nominal camera (an argument of `calibrate`) or none.
struct Case {
    tilt: f64,
    lens: [f64; 5],
    given: Given,
}

/// Where the calibration comes from.
#[derive(Clone, Copy, PartialEq)]
enum Given {
    /// The true camera (intrinsics and plane): the floor the tracking noise sets.
    Truth,
    /// The stick with a nominal camera, and the distortion given (`--distortion=...`) or not.
    Stick(Option<&'static str>),
}

/// What the stick gave: the lever's scale error, the markers' RMS error (m), the forces' errors.
struct Outcome {
    scale: f64,
    markers: f64,
    forces: [f64; 2],
}

/// `calibrate --nominal-camera` from the stick's two points (`point` writes one).
fn calibrate_by_stick(
    dir: &Path,
    point: &dyn Fn([f64; 2]) -> String,
    distortion: Option<&str>,
) -> Calibration {
    let points = dir.join("stick.toml");
    let text = format!(
        "camera_faces_plane = true\n{}{}",
        point([0.0, 0.0]),
        point([0.5, 0.0])
    );
    std::fs::write(&points, text).unwrap();
    let cal_path = dir.join("stick.yaml");
    let (p, c) = (points.to_str().unwrap(), cal_path.to_str().unwrap());
    let mut args = vec![
        "calibrate",
        "--nominal-camera",
        "640x480",
        "--points",
        p,
        "--out",
        c,
    ];
    args.extend(distortion);
    common::ok(&args);
    Calibration::read(&cal_path).unwrap()
}

/// Map the true markers, seen by the camera of case `c` with the tracking's noise, through its
/// calibration, and process them in `dir`.
fn stick(dir: &Path, c: &Case) -> Outcome {
    let intr = Intrinsics {
        width: 640,
        height: 480,
        fx: 700.0,
        fy: 702.0,
        cx: 324.0,
        cy: 236.0,
        dist: c.lens,
    };
    let cam = CameraTruth::looking_at(intr, [0.2, -0.05], 1.0, c.tilt, 0.0, 0.0);
    let point = |b: [f64; 2]| {
        let (u, v) = cam.project(b[0], b[1]);
        format!(
            "[[point]]\npixel = [{u:?}, {v:?}]\nbench = [{:?}, {:?}]\n",
            b[0], b[1]
        )
    };
    let cal = match c.given {
        Given::Truth => cam.calibration(),
        Given::Stick(distortion) => calibrate_by_stick(dir, &point, distortion),
    };
    let plane = cal.plane.unwrap();

    // The true markers seen exactly, mapped back through the stick's calibration.
    let truth = read_csv(&root().join("recordings/default/truth/tracks.csv"));
    let (x, y, t) = (num(&truth, "x"), num(&truth, "y"), num(&truth, "t"));
    let mut csv = String::from("frame,t,marker,u,v,x,y,sigma_px\n");
    let mut seen = Vec::new();
    let mut err2 = 0.0;
    let mut noise = Noise(12345);
    for i in 0..x.len() {
        let (u, v) = cam.project(x[i], y[i]);
        // The calibration's own error, without the noise.
        let (ex, ey) = plane.pixel_to_bench(&cal.intrinsics, u, v);
        err2 += (ex - x[i]).powi(2) + (ey - y[i]).powi(2);
        let (u, v) = (
            u + TRACKING_PX * noise.gauss(),
            v + TRACKING_PX * noise.gauss(),
        );
        let (bx, by) = plane.pixel_to_bench(&cal.intrinsics, u, v);
        seen.push((bx, by));
        let (f, m) = (&truth["frame"][i], &truth["marker"][i]);
        csv += &format!("{f},{:?},{m},{u:?},{v:?},{bx:?},{by:?},\n", t[i]);
    }
    let tracks = dir.join("tracks.csv");
    std::fs::write(&tracks, csv).unwrap();
    // The lever's end markers M1 and M5 (0.36 m apart in the file), frame by frame.
    let (mut ratio, mut n) = (0.0, 0);
    for i in 0..x.len() {
        if truth["marker"][i] == "M1" && truth["marker"].get(i + 4).is_some_and(|m| m == "M5") {
            let (a, b) = (seen[i], seen[i + 4]);
            ratio += (a.0 - b.0).hypot(a.1 - b.1) / 0.36;
            n += 1;
        }
    }
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = dir.join("process");
    common::ok(&[
        "process",
        "--tracks",
        &s(&tracks),
        "--mechanism",
        &s(&root().join("mechanisms/wind-pump.toml")),
        "--periodic",
        "--refine-horizontal",
        "--out",
        &s(&out),
    ]);
    let (want, got) = (
        read_csv(&root().join("recordings/default/truth/forces.csv")),
        read_csv(&out.join("forces.csv")),
    );
    Outcome {
        scale: ratio / n as f64 - 1.0,
        markers: (err2 / x.len() as f64).sqrt(),
        forces: ["B", "C"].map(|j| common::force_error(&want, &got, j).0),
    }
}

#[test]
fn a_stick_is_enough_while_the_camera_faces_the_plane() {
    let dir = tempfile::tempdir().unwrap();
    let none = [0.0; 5];
    let (plain, given) = (
        Given::Stick(None),
        Given::Stick(Some("--distortion=-0.12,0.06,0.0006,-0.0004,0")),
    );
    let case = |tilt, lens, given| Case { tilt, lens, given };
    let cases = [
        case(0.0, none, Given::Truth),
        case(0.0, none, plain),
        case(1.0, none, plain),
        case(3.0, none, plain),
        case(10.0, none, plain),
        case(0.0, LENS, plain),
        case(0.0, LENS, given),
        case(3.0, LENS, given),
        case(3.0, LENS, Given::Truth),
    ];
    let mut got = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let sub = dir.path().join(format!("case-{k}"));
        std::fs::create_dir_all(&sub).unwrap();
        let o = stick(&sub, c);
        eprintln!(
            "tilt {:>4.1} deg, lens {}, {}: scale {:+.3} %, markers {:.2} mm RMS, forces at B {:.2} %, C' {:.2} %",
            c.tilt,
            if c.lens == none { "ideal" } else { "k1 = -0.12" },
            match c.given {
                Given::Truth => "the true camera",
                Given::Stick(None) => "a stick, no distortion",
                Given::Stick(Some(_)) => "a stick, the distortion given",
            },
            o.scale * 100.0,
            o.markers * 1e3,
            o.forces[0] * 100.0,
            o.forces[1] * 100.0
        );
        got.push(o);
    }
    // The true camera: the noise's floor.
    assert!(got[0].markers < 1e-9 && got[8].markers < 1e-9);
    assert!(
        got[0].forces.iter().all(|e| *e < 0.02),
        "{:?}",
        got[0].forces
    );
    // Facing the plane through an ideal lens, the stick's scale is exact (the assumed focal
    // length does not enter a similarity); what is left is the pixels' aspect (fy / fx = 1.003),
    // which no stick along one direction sees.
    assert!(got[1].scale.abs() < 1e-4, "{}", got[1].scale);
    // The error grows with the tilt, and beyond the floor.
    for w in got[1..5].windows(2) {
        assert!(w[1].markers > w[0].markers && w[1].forces[0] > w[0].forces[0]);
    }
    assert!(got[1].forces[0] > got[0].forces[0]);
    // A lens's distortion not given costs more than a given one.
    assert!(
        got[5].markers > 3.0 * got[6].markers,
        "{} {}",
        got[5].markers,
        got[6].markers
    );
}
