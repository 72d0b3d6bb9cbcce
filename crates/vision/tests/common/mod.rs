//! What the vision crate's rendered tests share: the rendering camera and the look of its
//! views.

use flexbench_vision::render::Look;
use flexbench_vision::Intrinsics;

/// The rendering camera: 640 x 480 with a moderate barrel distortion (the shipped recording's).
pub fn camera() -> Intrinsics {
    Intrinsics {
        width: 640,
        height: 480,
        fx: 700.0,
        fy: 702.0,
        cx: 324.0,
        cy: 236.0,
        dist: [-0.12, 0.06, 0.0006, -0.0004, 0.0],
    }
}

/// The views' look: a mid-grey background, 20 % uneven lighting, 1.5 grey levels of noise.
pub fn look() -> Look {
    Look {
        background_rgb: None,
        background: 110.0,
        lighting: 0.2,
        noise: 1.5,
        gain: 1.0,
    }
}

/// The detected corners of `cal` against the truth `corners` of the views `files`: the mean
/// error (bias, u and v) and the RMS error, px, and how many; each detected corner matched to
/// the nearest true one (a symmetric board may be found in either direction), and none farther
/// than `limit` px from it.
pub fn corner_errors(
    cal: &flexbench_vision::Calibration,
    files: &[std::path::PathBuf],
    corners: &[Vec<(f64, f64)>],
    limit: f64,
) -> ((f64, f64), f64, usize) {
    let (mut su, mut sv, mut s2, mut n) = (0.0, 0.0, 0.0, 0usize);
    for c in &cal.corners {
        let k = files
            .iter()
            .position(|f| f.file_name().unwrap().to_string_lossy() == c.view)
            .unwrap();
        let (du, dv) = corners[k]
            .iter()
            .map(|t| (c.u - t.0, c.v - t.1))
            .min_by(|a, b| a.0.hypot(a.1).total_cmp(&b.0.hypot(b.1)))
            .unwrap();
        assert!(
            du.hypot(dv) < limit,
            "{} corner at ({}, {}) is {du}, {dv} px off",
            c.view,
            c.u,
            c.v
        );
        (su, sv, s2, n) = (su + du, sv + dv, s2 + du * du + dv * dv, n + 1);
    }
    let n_f = n as f64;
    ((su / n_f, sv / n_f), (s2 / n_f).sqrt(), n)
}
