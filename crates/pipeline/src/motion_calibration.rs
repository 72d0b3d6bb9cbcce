//! `flexbench calibrate --from-motion`: the bench plane and the lens's radial distortion from
//! the recording itself (`flexbench_kinematics::selfcal` through
//! `flexbench_vision::motion_camera`), started from a rough calibration (a nominal camera and
//! two clicked points, say) whose tracks give the first configurations. Writes the calibration
//! file and, beside it, `<stem>.motion.json` ([`MotionRecord`]).

use std::path::{Path, PathBuf};

use nalgebra::Vector2;

use flexbench_kinematics::selfcal::{
    calibrate_from_motion, CameraParams, MotionCalibration, Prior,
};
use flexbench_kinematics::MarkerState;
use flexbench_mechanism::Mechanism;
use flexbench_vision::motion_camera::{grid, Displacement, MotionCamera, NAMES, STEPS};
use flexbench_vision::Calibration;

use crate::{PipelineError, StageRecord};

/// What the motion gave: the fit's residuals, the lens's coefficients and the plane's
/// uncertainty over the region the markers swept, and how far the start was.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MotionRecord {
    /// Frames used.
    pub frames: usize,
    /// Marker samples used.
    pub samples: usize,
    /// Marker samples left out as wrong.
    pub left_out: usize,
    /// RMS pixel residual through the start's camera, px.
    pub start_rms_px: f64,
    /// RMS pixel residual after the fit, px.
    pub rms_px: f64,
    /// RMS pixel residual per marker, px.
    pub rms_per_marker_px: Vec<(String, f64)>,
    /// The lens's k1 and its standard deviation.
    pub k1: [f64; 2],
    /// The lens's k2 and its standard deviation.
    pub k2: [f64; 2],
    /// The plane's scale's standard deviation over the swept region, relative.
    pub scale_sd: f64,
    /// RMS standard deviation of a bench position in the swept region, mm.
    pub position_sd_mm: f64,
    /// The bench's horizontal's standard deviation after the fit, and the start's (the prior),
    /// mrad: the first well below the second when the motion determines the horizontal.
    pub horizontal_sd_mrad: [f64; 2],
    /// The region the markers swept in the image: u0, v0, u1, v1, px.
    pub region_px: [f64; 4],
    /// How the start's bench positions of the swept region differ from the fitted ones.
    pub start_displacement: Displacement,
    /// The covariance's factor for the residuals' correlation from frame to frame.
    pub correlation_factor: f64,
    /// Levenberg-Marquardt iterations.
    pub iterations: usize,
    /// What the data say against the model.
    pub warnings: Vec<String>,
}

impl StageRecord for MotionRecord {
    const STAGE: &'static str = "calibrate --from-motion";
}

/// The record's path beside the calibration file `out`.
pub fn record_path(out: &Path) -> PathBuf {
    out.with_extension("motion.json")
}

/// The tracks at `tracks` as the fit wants them: times, the start's bench positions and the
/// pixels, by frame and model marker, and the pixels' bounding box.
type Samples = (
    Vec<f64>,
    Vec<Vec<Option<MarkerState>>>,
    Vec<Vec<Option<Vector2<f64>>>>,
    [f64; 4],
);

fn samples(mech: &Mechanism, tracks: &Path) -> Result<Samples, PipelineError> {
    let tracks = flexbench_tables::read_tracks(tracks)?;
    let frames: std::collections::BTreeMap<i64, f64> =
        tracks.rows().iter().map(|r| (r.frame, r.t)).collect();
    let index: std::collections::BTreeMap<i64, usize> =
        frames.keys().enumerate().map(|(k, f)| (*f, k)).collect();
    let nm = mech.markers.len();
    let mut bench = vec![vec![None; nm]; frames.len()];
    let mut pixels = vec![vec![None; nm]; frames.len()];
    let mut bbox = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    for r in tracks.rows() {
        let Some(i) = mech.markers.iter().position(|m| m.name == r.marker) else {
            continue;
        };
        if let (Some(u), Some(v), Some(x), Some(y)) = (r.u, r.v, r.x, r.y) {
            let k = index[&r.frame];
            bench[k][i] = Some(MarkerState {
                p: Vector2::new(x, y),
                ..Default::default()
            });
            pixels[k][i] = Some(Vector2::new(u, v));
            bbox = [
                bbox[0].min(u),
                bbox[1].min(v),
                bbox[2].max(u),
                bbox[3].max(v),
            ];
        }
    }
    if !bbox.iter().all(|b| b.is_finite()) {
        return Err(PipelineError::Input(
            "the tracks hold no pixel (u, v) of the mechanism file's markers: calibrating from the motion needs the tracks `track` wrote from the video".into(),
        ));
    }
    Ok((frames.into_values().collect(), bench, pixels, bbox))
}

/// Fit the camera to the motion in the tracks `tracks` (made with the calibration `start`) of
/// the mechanism `mech`; write the calibration to `out` and the record beside it. Nothing is
/// written unless the fit succeeds.
pub fn calibrate_motion(
    start: &Calibration,
    mech: &Mechanism,
    tracks: &Path,
    out: &Path,
) -> Result<(Calibration, MotionRecord, Vec<PathBuf>), PipelineError> {
    if let Some(m) = mech.markers.iter().find(|m| m.depth != 0.0) {
        return Err(PipelineError::Input(format!(
            "marker {} stands {} m in front of the bench plane in the mechanism file: the plane fitted to the motion is the markers' own, so their depths would count twice, and markers at different depths break its one plane; give the markers no depth (or calibrate with a board or clicked points)",
            m.name, m.depth
        )));
    }
    let plane = start.plane.as_ref().ok_or_else(|| {
        PipelineError::Input(
            "the start's calibration has no bench plane: calibrate it with a plane (clicked points, or a board view) first".into(),
        )
    })?;
    let camera = MotionCamera {
        base: start.intrinsics,
    };
    let theta0 = camera.start(plane).ok_or_else(|| {
        PipelineError::Input("the start's bench plane is singular: calibrate it again".into())
    })?;
    let (t, bench, pixels, bbox) = samples(mech, tracks)?;
    let project = |th: &[f64], p: Vector2<f64>| camera.project(th, p);
    let horizontal = |th: &[f64]| MotionCamera::horizontal(th);
    let priors = [Prior {
        name: "the bench's horizontal",
        value: &horizontal,
        target: MotionCamera::horizontal(&theta0),
        sigma: horizontal_sigma(start),
    }];
    let params = CameraParams {
        names: &NAMES,
        start: &theta0,
        steps: &STEPS,
        priors: &priors,
    };
    let fit = calibrate_from_motion(mech, &t, &bench, &pixels, params, &project)?;
    let (record, cal) = outcome(&camera, start, &theta0, &fit, bbox)?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::ensure_dir(dir)?;
    }
    let rec_path = record.write(&record_path(out))?;
    cal.write(out)?;
    Ok((cal, record, vec![out.to_path_buf(), rec_path]))
}

/// The start's horizontal's standard deviation, rad: its clicks' when it states them, else
/// [`HORIZONTAL_SIGMA`].
fn horizontal_sigma(start: &Calibration) -> f64 {
    start
        .plane_uncertainty
        .map(|u| 1e-3 * u.angle_mrad)
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(HORIZONTAL_SIGMA)
}

/// The standard deviation of a start's horizontal that states none, rad (a board view's two
/// clicks about 200 px apart, each to 0.3 px).
pub const HORIZONTAL_SIGMA: f64 = 2e-3;

/// The record and the calibration of a fit.
fn outcome(
    camera: &MotionCamera,
    start: &Calibration,
    theta0: &[f64],
    fit: &MotionCalibration,
    bbox: [f64; 4],
) -> Result<(MotionRecord, Calibration), PipelineError> {
    let singular = || {
        PipelineError::Input("the fitted bench plane is singular: the motion does not determine it; calibrate with a board or clicked points".into())
    };
    let region = grid((bbox[0], bbox[1], bbox[2], bbox[3]), 12);
    let (intrinsics, plane) = camera.calibration(&fit.theta).ok_or_else(singular)?;
    let (si, sp) = camera.calibration(theta0).ok_or_else(singular)?;
    let start_displacement = camera
        .displacement(&fit.theta, (&si, &sp), &region)
        .ok_or_else(singular)?;
    let (scale_sd, position_sd) = camera
        .uncertainty(&fit.theta, &fit.covariance, &region)
        .ok_or_else(singular)?;
    let sd = |i: usize| fit.covariance[(i, i)].max(0.0).sqrt();
    let grad = nalgebra::DVector::from_fn(fit.theta.len(), |j, _| {
        let mut th = fit.theta.clone();
        th[j] += STEPS[j];
        let plus = MotionCamera::horizontal(&th);
        th[j] -= 2.0 * STEPS[j];
        (plus - MotionCamera::horizontal(&th)) / (2.0 * STEPS[j])
    });
    let horizontal_sd = (grad.transpose() * &fit.covariance * &grad)[(0, 0)]
        .max(0.0)
        .sqrt();
    let record = MotionRecord {
        frames: fit.frames,
        samples: fit.samples,
        left_out: fit.left_out,
        start_rms_px: fit.start_rms_px,
        rms_px: fit.rms_px,
        rms_per_marker_px: fit.rms_per_marker_px.clone(),
        k1: [fit.theta[8], sd(8)],
        k2: [fit.theta[9], sd(9)],
        scale_sd,
        position_sd_mm: 1e3 * position_sd,
        horizontal_sd_mrad: [1e3 * horizontal_sd, 1e3 * horizontal_sigma(start)],
        region_px: bbox,
        start_displacement,
        correlation_factor: fit.correlation_factor,
        iterations: fit.iterations,
        warnings: fit.warnings.clone(),
    };
    let cal = Calibration {
        intrinsics,
        rms: fit.rms_px,
        std_intrinsics: Vec::new(),
        per_view: Vec::new(),
        rejected: Vec::new(),
        plane: Some(plane),
        plane_uncertainty: None,
        distortion_model: Some(format!(
            "from the mechanism's motion (calibrate --from-motion): the plane's homography and k1 {:.5} +- {:.5}, k2 {:.5} +- {:.5} fitted to {} frames ({:.3} px RMS), the other intrinsics the start's ({}); the plane's scale +- {:.2e} over the region the markers swept",
            record.k1[0],
            record.k1[1],
            record.k2[0],
            record.k2[1],
            record.frames,
            record.rms_px,
            start.distortion_model.as_deref().unwrap_or("calibrated"),
            record.scale_sd
        )),
        corners: Vec::new(),
    };
    Ok((record, cal))
}
