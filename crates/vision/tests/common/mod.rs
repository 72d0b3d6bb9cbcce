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
        background: 110.0,
        lighting: 0.2,
        noise: 1.5,
        gain: 1.0,
    }
}
