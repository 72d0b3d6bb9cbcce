//! The camera from the mechanism's own motion: a bundle adjustment over the mechanism (issue
//! "Cameras and benches as they are", item 2b).
//!
//! The markers are seen in hundreds of frames as the mechanism turns; where each marker is on
//! the bench at any configuration is known from the mechanism file (its bodies' lengths, its
//! ground pins, the markers' places on their bodies). The camera's parameters theta (the
//! caller's model: `flexbench_vision::motion_camera` takes the plane's homography and the lens's
//! radial distortion) and each frame's driving coordinates d_k are fitted together to the
//! tracked pixels,
//!
//! ```text
//! min over theta, d_1 .. d_N of  sum_k sum_i w_ki |pi(theta, r_i(q(d_k))) - u_ki|^2
//! ```
//!
//! (pi the projection, r_i(q) marker i's bench position, q(d) the configuration assembled at d,
//! u_ki the tracked pixel) by Levenberg-Marquardt with each frame's d_k eliminated (the Schur
//! complement of the frames' blocks: Triggs et al., "Bundle adjustment, a modern synthesis",
//! 2000, section 6.1). The bench frame needs no gauge: the mechanism's ground pins fix its origin
//! and axes, its lengths the scale. So the result rests on the file's lengths: a length 0.1 %
//! off scales the plane by about as much.
//!
//! Robust: three rounds of weights (Huber's within 3 sigma, none beyond 6 sigma, sigma from the
//! residuals' median absolute deviation) leave wrong samples out. The covariance is the
//! Gauss-Newton one, scaled by the residuals' variance and by their correlation from frame to
//! frame ((1 + rho) / (1 - rho), rho their lag-one autocorrelation: neighbouring frames do not
//! bring independent errors).

use nalgebra::{DMatrix, DVector, Vector2};

use flexbench_mechanism::model::Coordinate;
use flexbench_mechanism::{BodyTrig, Mechanism};

use crate::fold::fit_positions;
use crate::observe::MarkerState;
use crate::KinematicsError;

/// A camera's projection: the pixel (px) of a bench point (m) under the parameters theta; None
/// where the point cannot be seen (behind the camera).
pub type Projection<'a> = dyn Fn(&[f64], Vector2<f64>) -> Option<Vector2<f64>> + Sync + 'a;

/// The camera's parameters to fit: their names (for messages), start values and
/// finite-difference steps (each about 1e-6 of the parameter's plausible range), and what is
/// known of them beforehand.
#[derive(Clone, Copy)]
pub struct CameraParams<'a> {
    /// The parameters' names.
    pub names: &'a [&'a str],
    /// Their start values.
    pub start: &'a [f64],
    /// Their finite-difference steps.
    pub steps: &'a [f64],
    /// Functions of the parameters known beforehand, each with its standard deviation: they
    /// decide what the motion does not (on the wind pump, whose only ground pin is A, the
    /// bench's horizontal).
    pub priors: &'a [Prior<'a>],
}

/// A function of the camera's parameters known beforehand: value(theta) ~ target +- sigma.
#[derive(Clone, Copy)]
pub struct Prior<'a> {
    /// What it is, for messages.
    pub name: &'a str,
    /// The function.
    pub value: &'a (dyn Fn(&[f64]) -> f64 + Sync),
    /// Its value beforehand.
    pub target: f64,
    /// Its standard deviation beforehand (the function's unit).
    pub sigma: f64,
}

/// The camera fitted to the mechanism's motion.
#[derive(Debug, Clone, PartialEq)]
pub struct MotionCalibration {
    /// The fitted parameters, in the order given.
    pub theta: Vec<f64>,
    /// Their covariance (scaled by the residuals' variance and their correlation).
    pub covariance: DMatrix<f64>,
    /// RMS pixel residual over the samples kept, before the fit (the start's camera), px.
    pub start_rms_px: f64,
    /// RMS pixel residual over the samples kept, px.
    pub rms_px: f64,
    /// RMS pixel residual per model marker, px (NaN: never kept).
    pub rms_per_marker_px: Vec<(String, f64)>,
    /// Frames used.
    pub frames: usize,
    /// Marker samples used.
    pub samples: usize,
    /// Marker samples left out as wrong (beyond six robust standard deviations).
    pub left_out: usize,
    /// The covariance's factor for the residuals' correlation from frame to frame.
    pub correlation_factor: f64,
    /// Levenberg-Marquardt iterations, all rounds.
    pub iterations: usize,
    /// What the data say against the model, in words.
    pub warnings: Vec<String>,
}

/// At least this many frames with two markers or more seen are needed.
pub const MIN_FRAMES: usize = 20;

/// At most this many frames are used (evenly spread): more add little to the camera.
pub const MAX_FRAMES: usize = 1200;

/// One frame's state: its sample index, configuration, driving coordinates and per-marker
/// weights.
#[derive(Debug, Clone)]
struct Frame {
    k: usize,
    q: DVector<f64>,
    d: Vec<f64>,
    w: Vec<f64>,
}

/// One frame's linearised system: residuals r (weighted, 2 per marker present), their Jacobians
/// with respect to theta and to the frame's drivers.
struct FrameSystem {
    r: DVector<f64>,
    jt: DMatrix<f64>,
    jd: DMatrix<f64>,
}

/// The inputs every step shares.
struct Problem<'a> {
    mech: &'a Mechanism,
    pixels: &'a [Vec<Option<Vector2<f64>>>],
    steps: &'a [f64],
    project: &'a Projection<'a>,
    driver_steps: Vec<f64>,
    priors: &'a [Prior<'a>],
    /// The pixels' robust standard deviation, px: the priors' rows are scaled by it, so that
    /// they weigh against the pixels as their variances say.
    sigma_px: f64,
}

/// Fit the camera's parameters to the tracked pixels `pixels[k][i]` (model marker i at sample
/// k, time `t[k]`, s) through the mechanism, from the start's bench positions `bench` (the same
/// samples mapped by the start's camera, which give the first configurations).
pub fn calibrate_from_motion(
    mech: &Mechanism,
    t: &[f64],
    bench: &[Vec<Option<MarkerState>>],
    pixels: &[Vec<Option<Vector2<f64>>>],
    params: CameraParams,
    project: &Projection,
) -> Result<MotionCalibration, KinematicsError> {
    // Long: the bundle adjustment's steps in their order (the start's configurations, the frames
    // kept, the problem, three reweighted rounds, the covariance), over the frames they share.
    let np = params.start.len();
    if params.names.len() != np || params.steps.len() != np || np == 0 {
        return Err(KinematicsError::Fit(
            "the camera's parameters, names and steps differ in number".into(),
        ));
    }
    if t.len() != bench.len() || bench.len() != pixels.len() {
        return Err(KinematicsError::Fit(format!(
            "{} times, {} bench samples and {} pixel samples: give one of each per frame",
            t.len(),
            bench.len(),
            pixels.len()
        )));
    }
    let (qs, _) = fit_positions(mech, t, bench)?;
    let stride = qs.len().div_ceil(MAX_FRAMES).max(1);
    let mut frames: Vec<Frame> = (0..qs.len())
        .step_by(stride)
        .filter_map(|k| {
            let q = qs[k].clone()?;
            let seen = pixels[k].iter().filter(|p| p.is_some()).count();
            let d = mech
                .drivers
                .iter()
                .map(|d| d.coordinate.value(&q))
                .collect();
            (seen >= 2).then(|| Frame {
                k,
                q,
                d,
                w: vec![1.0; mech.markers.len()],
            })
        })
        .collect();
    let nd = mech.drivers.len();
    let seen: usize = frames
        .iter()
        .map(|f| pixels[f.k].iter().flatten().count())
        .sum();
    if frames.len() < MIN_FRAMES || 2 * seen < np + frames.len() * nd + 10 {
        return Err(KinematicsError::Fit(format!(
            "{} frames with two markers or more seen: too few to calibrate the camera from the motion (record a whole turn of the mechanism)",
            frames.len()
        )));
    }
    let l = mech.reference_length();
    let driver_steps = mech
        .drivers
        .iter()
        .map(|d| match d.coordinate {
            Coordinate::Angle { .. } => 1e-6,
            _ => 1e-6 * l,
        })
        .collect();
    let mut pb = Problem {
        mech,
        pixels,
        steps: params.steps,
        project,
        driver_steps,
        priors: params.priors,
        sigma_px: 1.0,
    };
    let mut theta = params.start.to_vec();
    let start_rms_px = rms(&pb, &theta, &frames)?;
    let mut iterations = 0;
    for round in 0..3 {
        let Some(sigma) = reweight(&pb, &theta, &mut frames, round > 0) else {
            break;
        };
        pb.sigma_px = sigma;
        // The first rounds only bring the weights near their place; the last converges.
        let tol = if round == 2 { 1e-8 } else { 1e-3 };
        iterations += levenberg_marquardt(&pb, &mut theta, &mut frames, tol)?;
    }
    finish(&pb, theta, frames, start_rms_px, iterations, params.names)
}

/// A marker seen in a frame: its model index, predicted and observed pixels (px).
type Seen = (usize, Vector2<f64>, Vector2<f64>);

/// The predicted pixels of the frame's markers that were seen, and their observed pixels.
fn predicted(pb: &Problem, theta: &[f64], q: &DVector<f64>, k: usize) -> Option<Vec<Seen>> {
    let trig = BodyTrig::of(q);
    let mut out = Vec::with_capacity(pb.mech.markers.len());
    for (i, m) in pb.mech.markers.iter().enumerate() {
        if let Some(obs) = pb.pixels[k][i] {
            let p = trig.point(q, m.body, m.local);
            out.push((i, (pb.project)(theta, p)?, obs));
        }
    }
    Some(out)
}

/// The frame's weighted residuals (2 per marker present, in model order).
fn residuals(pb: &Problem, theta: &[f64], f: &Frame, q: &DVector<f64>) -> Option<DVector<f64>> {
    let pred = predicted(pb, theta, q, f.k)?;
    let mut r = DVector::zeros(2 * pred.len());
    for (row, (i, p, o)) in pred.iter().enumerate() {
        let s = f.w[*i].sqrt();
        r[2 * row] = s * (p.x - o.x);
        r[2 * row + 1] = s * (p.y - o.y);
    }
    Some(r)
}

/// The frame's linearised system by central differences (theta's steps; the drivers' steps
/// re-assembled from the frame's configuration).
fn frame_system(pb: &Problem, theta: &[f64], f: &Frame) -> Option<FrameSystem> {
    let r = residuals(pb, theta, f, &f.q)?;
    let mut jt = DMatrix::zeros(r.len(), theta.len());
    let mut th = theta.to_vec();
    for j in 0..theta.len() {
        let h = pb.steps[j];
        th[j] = theta[j] + h;
        let plus = residuals(pb, &th, f, &f.q)?;
        th[j] = theta[j] - h;
        let minus = residuals(pb, &th, f, &f.q)?;
        th[j] = theta[j];
        jt.set_column(j, &((plus - minus) / (2.0 * h)));
    }
    let jd = driver_jacobian(pb, theta, f)?;
    Some(FrameSystem { r, jt, jd })
}

/// The frame's weighted residuals' Jacobian with respect to its drivers, by central
/// differences (each re-assembled from the frame's configuration).
fn driver_jacobian(pb: &Problem, theta: &[f64], f: &Frame) -> Option<DMatrix<f64>> {
    let mut jd = DMatrix::zeros(2 * pb.pixels[f.k].iter().flatten().count(), f.d.len());
    for j in 0..f.d.len() {
        let h = pb.driver_steps[j];
        let at = |s: f64| {
            let mut d = f.d.clone();
            d[j] += s;
            let q = pb.mech.assemble_from(&f.q, &d).ok()?;
            residuals(pb, theta, f, &q)
        };
        jd.set_column(j, &((at(h)? - at(-h)?) / (2.0 * h)));
    }
    Some(jd)
}

/// The weighted cost at theta with the frames' configurations `qs`.
fn cost(pb: &Problem, theta: &[f64], frames: &[Frame], qs: &[&DVector<f64>]) -> Option<f64> {
    let each = flexbench_contracts::parallel::map_each(
        &frames.iter().zip(qs).collect::<Vec<_>>(),
        |(f, q)| residuals(pb, theta, f, q).map(|r| r.norm_squared()),
    );
    let pixels: f64 = each.into_iter().sum::<Option<f64>>()?;
    let (r, _) = prior_rows(pb, theta);
    Some(pixels + r.norm_squared())
}

/// The priors' rows: residuals sigma_px (value - target) / sigma and their Jacobian.
fn prior_rows(pb: &Problem, theta: &[f64]) -> (DVector<f64>, DMatrix<f64>) {
    let n = pb.priors.len();
    let mut r = DVector::zeros(n);
    let mut j = DMatrix::zeros(n, theta.len());
    let mut th = theta.to_vec();
    for (k, p) in pb.priors.iter().enumerate() {
        let w = pb.sigma_px / p.sigma;
        r[k] = w * ((p.value)(theta) - p.target);
        for c in 0..theta.len() {
            let h = pb.steps[c];
            th[c] = theta[c] + h;
            let plus = (p.value)(&th);
            th[c] = theta[c] - h;
            let minus = (p.value)(&th);
            th[c] = theta[c];
            j[(k, c)] = w * (plus - minus) / (2.0 * h);
        }
    }
    (r, j)
}

/// Levenberg-Marquardt on theta and every frame's drivers (the frames' blocks eliminated),
/// until a step lowers the cost by less than `tol` of it; returns the iterations taken.
fn levenberg_marquardt(
    pb: &Problem,
    theta: &mut Vec<f64>,
    frames: &mut [Frame],
    tol: f64,
) -> Result<usize, KinematicsError> {
    let mut lambda = 1e-3;
    let qs: Vec<&DVector<f64>> = frames.iter().map(|f| &f.q).collect();
    let mut c = cost(pb, theta, frames, &qs).ok_or_else(unseen)?;
    for it in 0..60 {
        let systems: Vec<FrameSystem> =
            flexbench_contracts::parallel::map_each(frames, |f| frame_system(pb, theta, f))
                .into_iter()
                .collect::<Option<_>>()
                .ok_or_else(unseen)?;
        loop {
            let Some((dt, dds)) = damped_step(pb, theta, &systems, lambda) else {
                lambda *= 10.0;
                if lambda > 1e12 {
                    return Ok(it);
                }
                continue;
            };
            let trial: Vec<f64> = theta.iter().zip(dt.iter()).map(|(a, b)| a + b).collect();
            let moved = moved_frames(pb, &trial, frames, &dds);
            let tc = moved.as_ref().and_then(|m| {
                let qs: Vec<&DVector<f64>> = m.iter().map(|(q, _)| q).collect();
                cost(pb, &trial, frames, &qs)
            });
            match (tc, moved) {
                (Some(tc), Some(moved)) if tc <= c => {
                    let small = c - tc <= tol * c;
                    *theta = trial;
                    for (f, (q, d)) in frames.iter_mut().zip(moved) {
                        (f.q, f.d) = (q, d);
                    }
                    c = tc;
                    lambda = (lambda / 3.0).max(1e-12);
                    if small {
                        return Ok(it + 1);
                    }
                    break;
                }
                _ => {
                    lambda *= 4.0;
                    if lambda > 1e12 {
                        return Ok(it);
                    }
                }
            }
        }
    }
    Ok(60)
}

fn unseen() -> KinematicsError {
    KinematicsError::Fit(
        "a marker falls behind the camera during the fit: the start's camera is too far from the truth (check the points that start it)".into(),
    )
}

/// The frames' configurations at the trial parameters `theta`: each refined alone to its
/// markers ([`refine_frame`]) from its drivers' step and from where it was, the better kept, so
/// that the trial's cost is the profile's: a driver a frame's markers hardly see (on the bench,
/// the slide near C'D vertical, where a step may cross to the mirror assembly) never carries a
/// step the linear model got wrong into the comparison. None if a frame has no configuration.
fn moved_frames(
    pb: &Problem,
    theta: &[f64],
    frames: &[Frame],
    dds: &[DVector<f64>],
) -> Option<Vec<(DVector<f64>, Vec<f64>)>> {
    let pairs: Vec<(&Frame, &DVector<f64>)> = frames.iter().zip(dds).collect();
    flexbench_contracts::parallel::map_each(&pairs, |(f, dd)| {
        let d: Vec<f64> = f.d.iter().zip(dd.iter()).map(|(a, b)| a + b).collect();
        let stepped = pb
            .mech
            .assemble_from(&f.q, &d)
            .ok()
            .and_then(|q| refine_frame(pb, theta, f, q, d));
        let stayed = refine_frame(pb, theta, f, f.q.clone(), f.d.clone());
        let cost = |s: &Option<(DVector<f64>, Vec<f64>)>| {
            s.as_ref()
                .and_then(|(q, _)| residuals(pb, theta, f, q))
                .map_or(f64::INFINITY, |r| r.norm_squared())
        };
        match cost(&stepped) < cost(&stayed) {
            true => stepped,
            false => stayed,
        }
    })
    .into_iter()
    .collect()
}

/// One frame's drivers refined to its markers at `theta` by a few damped Gauss-Newton steps
/// from (q, d), each kept only if it lowers the frame's cost.
fn refine_frame(
    pb: &Problem,
    theta: &[f64],
    f: &Frame,
    mut q: DVector<f64>,
    mut d: Vec<f64>,
) -> Option<(DVector<f64>, Vec<f64>)> {
    let mut r = residuals(pb, theta, f, &q)?;
    let mut mu = 1e-3;
    for _ in 0..8 {
        let at = Frame {
            k: f.k,
            q: q.clone(),
            d: d.clone(),
            w: f.w.clone(),
        };
        let jd = driver_jacobian(pb, theta, &at)?;
        let mut a = regularised(jd.transpose() * &jd);
        for i in 0..a.nrows() {
            a[(i, i)] *= 1.0 + mu;
        }
        let step = a.try_inverse()? * (jd.transpose() * &r);
        let trial: Vec<f64> = d.iter().zip(step.iter()).map(|(a, b)| a - b).collect();
        let better = pb
            .mech
            .assemble_from(&q, &trial)
            .ok()
            .and_then(|tq| Some((residuals(pb, theta, f, &tq)?, tq)))
            .filter(|(tr, _)| tr.norm_squared() < r.norm_squared());
        match better {
            Some((tr, tq)) => {
                let small = r.norm_squared() - tr.norm_squared() < 1e-12 * r.norm_squared();
                (q, d, r) = (tq, trial, tr);
                mu = (mu / 3.0).max(1e-9);
                if small {
                    break;
                }
            }
            None if mu > 1e6 => break,
            None => mu *= 10.0,
        }
    }
    Some((q, d))
}

/// The damped normal equations' step for theta and each frame's drivers, theta's by the Schur
/// complement of the frames' blocks; None where they are singular.
fn damped_step(
    pb: &Problem,
    theta: &[f64],
    systems: &[FrameSystem],
    lambda: f64,
) -> Option<(DVector<f64>, Vec<DVector<f64>>)> {
    systems.first()?;
    let damp = |m: &DMatrix<f64>| {
        let mut m = m.clone();
        for i in 0..m.nrows() {
            m[(i, i)] *= 1.0 + lambda;
        }
        m
    };
    let (rp, jp) = prior_rows(pb, theta);
    let mut s = damp(&(jp.transpose() * &jp));
    let mut g = jp.transpose() * rp;
    let mut blocks = Vec::with_capacity(systems.len());
    for sys in systems {
        let a_inv = regularised(damp(&(sys.jd.transpose() * &sys.jd))).try_inverse()?;
        let b = sys.jt.transpose() * &sys.jd;
        let jdr = sys.jd.transpose() * &sys.r;
        s += damp(&(sys.jt.transpose() * &sys.jt)) - &b * &a_inv * b.transpose();
        g += sys.jt.transpose() * &sys.r - &b * &a_inv * &jdr;
        blocks.push((a_inv, b, jdr));
    }
    let dt = scaled_solve(&s, &g)?;
    let dds = blocks
        .iter()
        .map(|(a_inv, b, jdr)| -(a_inv * (jdr + b.transpose() * &dt)))
        .collect();
    Some((dt, dds))
}

/// -S^-1 g, solved in Jacobi's scaling (S's diagonal made one: theta's entries differ in their
/// effect by orders of magnitude, the plane's by a focal length, the lens's k2 by r^4).
fn scaled_solve(s: &DMatrix<f64>, g: &DVector<f64>) -> Option<DVector<f64>> {
    let d = DVector::from_iterator(
        s.nrows(),
        s.diagonal()
            .iter()
            .map(|v| if *v > 0.0 { 1.0 / v.sqrt() } else { 1.0 }),
    );
    let scaled = DMatrix::from_fn(s.nrows(), s.ncols(), |i, j| d[i] * s[(i, j)] * d[j]);
    let y = scaled.cholesky()?.solve(&g.component_mul(&d));
    Some(-y.component_mul(&d))
}

/// A frame's drivers' normal matrix with a trace's 1e-10 added to its diagonal: where the
/// markers do not see a driver (on the bench, the slide near C'D vertical), its step stays
/// bounded and no information is invented.
fn regularised(mut a: DMatrix<f64>) -> DMatrix<f64> {
    let eps = 1e-6 * a.trace() + 1e-300;
    for i in 0..a.nrows() {
        a[(i, i)] += eps;
    }
    a
}

/// Each marker sample's unweighted residual norm, px, by frame (None: not seen).
fn residual_norms(pb: &Problem, theta: &[f64], frames: &[Frame]) -> Vec<Vec<Option<f64>>> {
    flexbench_contracts::parallel::map_each(frames, |f| {
        let mut out = vec![None; pb.mech.markers.len()];
        for (i, p, o) in predicted(pb, theta, &f.q, f.k).unwrap_or_default() {
            out[i] = Some((p - o).norm());
        }
        out
    })
}

/// The robust scale of the residuals (px per coordinate, from the median norm of a 2-D normal:
/// sigma sqrt(2 ln 2)) and the weights it gives (Huber's within 3 sigma, none beyond 6 sigma;
/// all one when `robust` is false). None when no sample is seen.
fn reweight(pb: &Problem, theta: &[f64], frames: &mut [Frame], robust: bool) -> Option<f64> {
    let norms = residual_norms(pb, theta, frames);
    let mut all: Vec<f64> = norms.iter().flatten().flatten().copied().collect();
    if all.is_empty() {
        return None;
    }
    all.sort_by(f64::total_cmp);
    let sigma = (all[all.len() / 2] / (2.0 * 2f64.ln()).sqrt()).max(1e-6);
    for (f, n) in frames.iter_mut().zip(&norms) {
        for (w, e) in f.w.iter_mut().zip(n) {
            *w = match (robust, e) {
                (false, _) | (_, None) => 1.0,
                (true, Some(e)) if *e <= 3.0 * sigma => 1.0,
                (true, Some(e)) if *e <= 6.0 * sigma => 3.0 * sigma / e,
                _ => 0.0,
            };
        }
    }
    Some(sigma)
}

/// RMS unweighted pixel residual over every sample seen, px.
fn rms(pb: &Problem, theta: &[f64], frames: &[Frame]) -> Result<f64, KinematicsError> {
    let norms = residual_norms(pb, theta, frames);
    let all: Vec<f64> = norms.iter().flatten().flatten().copied().collect();
    if all.is_empty() {
        return Err(unseen());
    }
    Ok((all.iter().map(|e| e * e).sum::<f64>() / all.len() as f64).sqrt())
}

/// The record: residuals kept, per marker, the covariance (Gauss-Newton, scaled), warnings.
fn finish(
    pb: &Problem,
    theta: Vec<f64>,
    frames: Vec<Frame>,
    start_rms_px: f64,
    iterations: usize,
    names: &[&str],
) -> Result<MotionCalibration, KinematicsError> {
    let nm = pb.mech.markers.len();
    let norms = residual_norms(pb, &theta, &frames);
    let (mut sum, mut count, mut left_out) = (vec![0.0; nm], vec![0usize; nm], 0);
    for (f, n) in frames.iter().zip(&norms) {
        for i in 0..nm {
            match (n[i], f.w[i] > 0.0) {
                (Some(e), true) => (sum[i], count[i]) = (sum[i] + e * e, count[i] + 1),
                (Some(_), false) => left_out += 1,
                _ => {}
            }
        }
    }
    let samples: usize = count.iter().sum();
    let rms_px = (sum.iter().sum::<f64>() / samples.max(1) as f64).sqrt();
    let rms_per_marker_px = (0..nm)
        .map(|i| {
            let r = (sum[i] / count[i] as f64).sqrt();
            (pb.mech.markers[i].name.clone(), r)
        })
        .collect();
    let systems: Vec<FrameSystem> =
        flexbench_contracts::parallel::map_each(&frames, |f| frame_system(pb, &theta, f))
            .into_iter()
            .collect::<Option<_>>()
            .ok_or_else(unseen)?;
    let rho = lag_one_correlation(&systems);
    let correlation_factor = (1.0 + rho) / (1.0 - rho);
    let nd = pb.mech.drivers.len();
    let dof = (2 * samples)
        .saturating_sub(theta.len() + frames.len() * nd)
        .max(1);
    let variance = systems.iter().map(|s| s.r.norm_squared()).sum::<f64>() / dof as f64;
    let covariance = reduced_information(pb, &theta, &systems)
        .and_then(|s| s.try_inverse())
        .map(|c| c * variance * correlation_factor)
        .ok_or_else(|| {
            KinematicsError::Fit(
                "the motion does not determine the camera (its normal equations are singular): the markers must sweep a good part of the image".into(),
            )
        })?;
    let mut warnings = Vec::new();
    if rms_px > 0.5 {
        warnings.push(format!(
            "the markers' motion fits the mechanism seen through the camera model to {rms_px:.2} px RMS only: check the mechanism file's lengths and markers, markers at different distances from the plane, a lens with more than radial distortion"
        ));
    }
    if left_out * 50 > samples {
        warnings.push(format!(
            "{left_out} marker samples ({:.1} %) left out as wrong: check the tracking",
            100.0 * left_out as f64 / (samples + left_out) as f64
        ));
    }
    warnings.extend(confounded(&covariance, names));
    Ok(MotionCalibration {
        theta,
        covariance,
        start_rms_px,
        rms_px,
        rms_per_marker_px,
        frames: frames.len(),
        samples,
        left_out,
        correlation_factor,
        iterations,
        warnings,
    })
}

/// The undamped normal matrix of theta with the frames' drivers eliminated.
fn reduced_information(
    pb: &Problem,
    theta: &[f64],
    systems: &[FrameSystem],
) -> Option<DMatrix<f64>> {
    let (_, jp) = prior_rows(pb, theta);
    let mut s = jp.transpose() * jp;
    for sys in systems {
        let a_inv = regularised(sys.jd.transpose() * &sys.jd).try_inverse()?;
        let b = sys.jt.transpose() * &sys.jd;
        s += sys.jt.transpose() * &sys.jt - &b * a_inv * b.transpose();
    }
    Some(s)
}

/// The residuals' lag-one autocorrelation from frame to frame (consecutive frames of equal
/// length, each residual with the one in the same place), clamped to [0, 0.95].
fn lag_one_correlation(systems: &[FrameSystem]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for w in systems.windows(2) {
        if w[0].r.len() == w[1].r.len() {
            num += w[0].r.dot(&w[1].r);
            den += 0.5 * (w[0].r.norm_squared() + w[1].r.norm_squared());
        }
    }
    if den > 0.0 {
        (num / den).clamp(0.0, 0.95)
    } else {
        0.0
    }
}

/// Pairs of parameters the motion hardly tells apart (correlation beyond 0.999), in words.
fn confounded(cov: &DMatrix<f64>, names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..cov.nrows() {
        for j in i + 1..cov.ncols() {
            let c = cov[(i, j)] / (cov[(i, i)] * cov[(j, j)]).sqrt();
            if c.abs() > 0.999 {
                out.push(format!(
                    "the motion hardly tells the camera's {} from its {} (correlation {c:.4}): their uncertainties are large together, and a board or clicked points would separate them",
                    names[i], names[j]
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_mechanism::file::wind_pump_default;

    /// A facing camera with radial distortion: theta = (scale px/m, u0, v0, angle rad, k1 per
    /// (250 px)^2), the distortion about the pixel (320, 240).
    fn project(theta: &[f64], p: Vector2<f64>) -> Option<Vector2<f64>> {
        let (s, c) = theta[3].sin_cos();
        let u = theta[1] + theta[0] * (c * p.x - s * p.y) - 320.0;
        let v = theta[2] - theta[0] * (s * p.x + c * p.y) - 240.0;
        let r2 = (u * u + v * v) / (250.0 * 250.0);
        let f = 1.0 + theta[4] * r2;
        Some(Vector2::new(320.0 + u * f, 240.0 + v * f))
    }

    #[test]
    fn the_bench_motion_gives_back_the_camera_that_filmed_it() {
        let mech = wind_pump_default();
        let truth = [800.0, 150.0, 250.0, 0.0, -0.05];
        let start = [780.0, 153.0, 248.0, 0.0, 0.0];
        let q0 = mech.initial_configuration().unwrap();
        let (mut t, mut bench, mut pixels) = (Vec::new(), Vec::new(), Vec::new());
        let mut q = q0.clone();
        for k in 0..120 {
            let phi = k as f64 * std::f64::consts::TAU / 120.0;
            let mut d: Vec<f64> = mech
                .drivers
                .iter()
                .map(|d| d.coordinate.value(&q))
                .collect();
            d[0] = mech.drivers[0].coordinate.value(&q0) + phi;
            q = mech.assemble_from(&q, &d).unwrap();
            let trig = BodyTrig::of(&q);
            let at: Vec<Vector2<f64>> = mech
                .markers
                .iter()
                .map(|m| trig.point(&q, m.body, m.local))
                .collect();
            t.push(k as f64 * 0.003);
            pixels.push(at.iter().map(|p| project(&truth, *p)).collect::<Vec<_>>());
            // What the start's camera makes of those pixels: its similarity inverted, no lens.
            bench.push(
                pixels[k]
                    .iter()
                    .map(|p| {
                        let p = p.unwrap();
                        let (x, y) = ((p.x - start[1]) / start[0], -(p.y - start[2]) / start[0]);
                        Some(MarkerState {
                            p: Vector2::new(x, y),
                            ..Default::default()
                        })
                    })
                    .collect::<Vec<_>>(),
            );
        }
        let names = ["scale", "u0", "v0", "angle", "k1"];
        let horizontal = |th: &[f64]| th[3];
        let priors = [Prior {
            name: "the horizontal",
            value: &horizontal,
            target: 0.0,
            sigma: 1e-3,
        }];
        let params = CameraParams {
            names: &names,
            start: &start,
            steps: &[1e-4, 1e-5, 1e-5, 1e-8, 1e-7],
            priors: &priors,
        };
        let fit = calibrate_from_motion(&mech, &t, &bench, &pixels, params, &project).unwrap();
        for (got, want) in fit.theta.iter().zip(truth) {
            assert!(
                (got - want).abs() < 1e-6 * (1.0 + want.abs()),
                "{:?}",
                fit.theta
            );
        }
        assert!(fit.rms_px < 1e-6 && fit.start_rms_px > 1.0, "{fit:?}");
        assert!(fit.warnings.is_empty(), "{:?}", fit.warnings);
    }
}
