//! The observation model every estimator of the mechanism's motion shares: the markers'
//! measured states, their Jacobian and residuals through the mechanism, the driving coordinates'
//! weights, one configuration refined to the markers with the loop closed (Levenberg-Marquardt),
//! how well the markers see the drivers at a configuration (the fold ratio), the prediction of a
//! sample from the trend of the previous ones, the starting points along the assembly branch,
//! and the measurement noise from the free rigid fits of each body.

use nalgebra::{DMatrix, DVector, Vector2};

use flexbench_mechanism::model::Coordinate;
use flexbench_mechanism::{rot, BodyTrig, Mechanism};

use crate::KinematicsError;
use flexbench_numeric::lu::Lu;

/// Measured kinematics of one marker at one sample (bench frame): position (m), velocity
/// (m/s), acceleration (m/s^2).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MarkerState {
    /// Position, m.
    pub p: Vector2<f64>,
    /// Velocity, m/s.
    pub v: Vector2<f64>,
    /// Acceleration, m/s^2.
    pub a: Vector2<f64>,
}

/// The fitted state at one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct FitSample {
    /// Coordinates, velocities, accelerations (None where the markers do not determine them).
    pub state: Option<(DVector<f64>, DVector<f64>, DVector<f64>)>,
    /// Per model marker: fitted minus measured position, m (None where not measured).
    pub residual: Vec<Option<Vector2<f64>>>,
}

/// Weight of the driving coordinates' weak observations relative to the markers' (per metre;
/// angles are scaled by the reference length). Small enough to leave the markers in charge
/// wherever they determine the motion; it decides only the directions they cannot see.
pub const PRIOR_WEIGHT: f64 = 1e-3;

/// Weight of the driving coordinates' differentiated rates against the markers' measured rates
/// (per metre; angles scaled by the reference length). Both are estimates of similar accuracy
/// where the markers see the motion; where they do not, the drivers' rates decide.
pub const RATE_PRIOR_WEIGHT: f64 = 1.0;

/// Marker Jacobian rows and residuals for the markers present at one sample.
pub(crate) fn marker_system(
    m: &Mechanism,
    q: &DVector<f64>,
    obs: &[Option<MarkerState>],
) -> (DMatrix<f64>, DVector<f64>) {
    let present: Vec<usize> = (0..obs.len()).filter(|&i| obs[i].is_some()).collect();
    let n = m.ncoords();
    let mut jac = DMatrix::zeros(2 * present.len(), n);
    let mut r = DVector::zeros(2 * present.len());
    let trig = BodyTrig::of(q);
    for (row, &i) in present.iter().enumerate() {
        let mk = &m.markers[i];
        let b = mk.body;
        let d = trig.rot_d(b, mk.local);
        jac[(2 * row, 3 * b)] = 1.0;
        jac[(2 * row + 1, 3 * b + 1)] = 1.0;
        jac[(2 * row, 3 * b + 2)] = d.x;
        jac[(2 * row + 1, 3 * b + 2)] = d.y;
        if let Some(o) = obs[i] {
            let res = trig.point(q, b, mk.local) - o.p;
            r[2 * row] = res.x;
            r[2 * row + 1] = res.y;
        }
    }
    (jac, r)
}

/// The driving coordinates' weights (angles scaled by the reference length).
pub(crate) fn driver_weights(m: &Mechanism, weight: f64) -> Vec<f64> {
    let l = m.reference_length();
    m.drivers
        .iter()
        .map(|d| match d.coordinate {
            Coordinate::Angle { .. } => weight * l,
            _ => weight,
        })
        .collect()
}

/// The driving coordinates' values at configuration q (rad or m).
pub(crate) fn driver_values(mech: &Mechanism, q: &DVector<f64>) -> Vec<f64> {
    mech.drivers.iter().map(|d| d.coordinate.value(q)).collect()
}

/// Rows w_k grad c_k(q) of the drivers' weak observations (zero rows where the weight is 0).
pub(crate) fn driver_jacobian(m: &Mechanism, q: &DVector<f64>, w: &[f64]) -> DMatrix<f64> {
    let n = m.ncoords();
    let mut jd = DMatrix::zeros(m.drivers.len(), n);
    for (k, d) in m.drivers.iter().enumerate() {
        jd.row_mut(k)
            .copy_from(&(d.coordinate.gradient(q, n) * w[k]).transpose());
    }
    jd
}

/// Levenberg-Marquardt over the driving coordinates d, the configuration q(d) assembled by
/// Newton-Raphson from the previous iterate (so the loop is closed exactly at every iterate and
/// the assembly branch is kept), from the start `q0`, the drivers weakly held at `targets`.
/// The Jacobian of the markers with respect to d is J dq/dd, dq/dd from [Phi_q; c_q] dq/dd =
/// [0; I]. Returns q and the cost (markers' residual sum of squares plus the drivers' weak term).
pub(crate) fn refine(
    m: &Mechanism,
    q0: &DVector<f64>,
    obs: &[Option<MarkerState>],
    targets: &[f64],
    w: &[f64],
    iters: usize,
) -> Option<(DVector<f64>, f64)> {
    let nd = m.drivers.len();
    let drivers = |q: &DVector<f64>| -> Vec<f64> {
        m.drivers.iter().map(|d| d.coordinate.value(q)).collect()
    };
    let cost = |q: &DVector<f64>, d: &[f64]| -> f64 {
        let (_, r) = marker_system(m, q, obs);
        r.norm_squared()
            + (0..nd)
                .map(|k| (w[k] * (d[k] - targets[k])).powi(2))
                .sum::<f64>()
    };
    let mut d = drivers(q0);
    let mut q = m.assemble_from(q0, &d).ok()?;
    let mut c = cost(&q, &d);
    let mut lambda = 1e-4;
    for _ in 0..iters {
        // The driven Jacobian's factors at q serve the sensitivity and every trial's first
        // Newton step from q.
        let lu = Lu::new(flexbench_mechanism::assembly::driven_jacobian(m, &q));
        let sens =
            flexbench_mechanism::assembly::driver_sensitivity_factored(m, &lu, &vec![1.0; nd])?;
        let (jm, r) = marker_system(m, &q, obs);
        let jd = &jm * &sens;
        let mut h = jd.transpose() * &jd;
        let mut g = jd.transpose() * &r;
        for k in 0..nd {
            h[(k, k)] += w[k] * w[k];
            g[k] += w[k] * w[k] * (d[k] - targets[k]);
        }
        let mut improved = false;
        let mut step_size = 0.0;
        while lambda < 1e10 {
            let mut hl = h.clone();
            for k in 0..nd {
                hl[(k, k)] += lambda * (h[(k, k)] + 1e-12);
            }
            let Some(delta) = Lu::new(hl).solve(&(-&g)) else {
                lambda *= 10.0;
                continue;
            };
            let dn: Vec<f64> = (0..nd).map(|k| d[k] + delta[k]).collect();
            if let Ok(qn) = m.assemble_from_factored(&q, &dn, Some(&lu)) {
                let cn = cost(&qn, &dn);
                if cn <= c {
                    step_size = delta.amax();
                    improved = cn < c;
                    q = qn;
                    d = dn;
                    c = cn;
                    lambda = (lambda / 10.0).max(1e-12);
                    break;
                }
            }
            lambda *= 10.0;
        }
        if !improved || step_size < 1e-13 {
            break;
        }
    }
    Some((q, c))
}

/// Below this ratio of the smallest to the largest eigenvalue of the markers' normal matrix in
/// the driving coordinates, a sample is near a fold of the map from drivers to markers (on the
/// bench: the rocker near C'D vertical, where the lever's markers see the size of the rocker's
/// angle from the vertical but not its side).
pub const FOLD_RATIO: f64 = 1e-2;

/// J_d, the markers' Jacobian `obs` at configuration q with respect to the driving coordinates
/// (angles scaled by the reference length, [`driver_weights`]); None where the drivers do not
/// determine q.
pub(crate) fn sight_jacobian(
    m: &Mechanism,
    q: &DVector<f64>,
    obs: &[Option<MarkerState>],
) -> Option<DMatrix<f64>> {
    let sens = flexbench_mechanism::assembly::driver_sensitivity(m, q, &driver_weights(m, 1.0))?;
    let (jm, _) = marker_system(m, q, obs);
    Some(&jm * &sens)
}

/// The direction of the scaled drivers the markers `obs` see least at configuration q: the
/// eigenvector of the smallest eigenvalue of J_d^T J_d ([`sight_jacobian`]).
pub(crate) fn weakest_direction(
    m: &Mechanism,
    q: &DVector<f64>,
    obs: &[Option<MarkerState>],
) -> Option<DVector<f64>> {
    let js = sight_jacobian(m, q, obs)?;
    let eig = (js.transpose() * &js).symmetric_eigen();
    let imin =
        (0..m.drivers.len()).min_by(|&x, &y| eig.eigenvalues[x].total_cmp(&eig.eigenvalues[y]))?;
    Some(eig.eigenvectors.column(imin).into_owned())
}

/// The ratio of the extreme eigenvalues of J_d^T J_d, J_d the markers' Jacobian with respect to
/// the driving coordinates (angles scaled by the reference length): 1 when the markers see every
/// driver alike, 0 at a fold.
pub(crate) fn fold_ratio(m: &Mechanism, q: &DVector<f64>, obs: &[Option<MarkerState>]) -> f64 {
    let Some(js) = sight_jacobian(m, q, obs) else {
        return 0.0;
    };
    let eig = (js.transpose() * &js).symmetric_eigenvalues();
    let (lo, hi) = (eig.min(), eig.max());
    if hi > 0.0 {
        lo / hi
    } else {
        0.0
    }
}

/// The predicted configuration of sample k: each driving coordinate extrapolated by a
/// quadratic in time fitted (least squares) to the last fitted samples, up to 12, the
/// samples near a fold weighing 1/100 (their drivers are poorly seen and carry little of
/// the motion's trend), then assembled from the last configuration (same assembly branch).
/// Carrying the trend of the well-seen samples through a fold keeps noise from flipping the
/// motion onto the mirror solution there.
pub(crate) fn predict(
    mech: &Mechanism,
    t: &[f64],
    k: usize,
    qs: &[Option<DVector<f64>>],
    seen: &[f64],
) -> Option<DVector<f64>> {
    let last = qs.get(k.checked_sub(1)?)?.as_ref()?;
    let hist: Vec<usize> = (k.saturating_sub(12)..k)
        .rev()
        .take_while(|&j| qs[j].is_some())
        .collect();
    if hist.len() < 3 {
        return Some(match hist.len() {
            2 => last * 2.0 - qs[k - 2].as_ref()?,
            _ => last.clone(),
        });
    }
    let t0 = t[k];
    let mut d_pred = Vec::with_capacity(mech.drivers.len());
    for d in &mech.drivers {
        // Weighted least squares of d(t) = c0 + c1 (t - t_k) + c2 (t - t_k)^2.
        let mut ata = nalgebra::Matrix3::<f64>::zeros();
        let mut atb = nalgebra::Vector3::<f64>::zeros();
        for &j in &hist {
            let wgt = if seen[j] < FOLD_RATIO { 0.01 } else { 1.0 };
            let x = t[j] - t0;
            let row = nalgebra::Vector3::new(1.0, x, x * x);
            let v = d.coordinate.value(qs[j].as_ref()?);
            ata += row * row.transpose() * wgt;
            atb += row * (v * wgt);
        }
        let c = ata.lu().solve(&atb)?;
        d_pred.push(c[0]);
    }
    mech.assemble_from(last, &d_pred).ok()
}

/// Configurations along a whole turn of the first driver (others at their initial values),
/// by continuation on the initial assembly branch: starting points for the fit.
pub fn branch_atlas(mech: &Mechanism, count: usize) -> Result<Vec<DVector<f64>>, KinematicsError> {
    let mut q = mech.initial_configuration()?;
    let mut values: Vec<f64> = mech.drivers.iter().map(|d| d.value).collect();
    let is_angle = matches!(mech.drivers[0].coordinate, Coordinate::Angle { .. });
    let mut out = vec![q.clone()];
    if !is_angle {
        return Ok(out);
    }
    let start = values[0];
    for s in 1..count {
        values[0] = start + 2.0 * std::f64::consts::PI * s as f64 / count as f64;
        if let Ok(next) = mech.assemble_from(&q, &values) {
            q = next;
            out.push(q.clone());
        }
    }
    Ok(out)
}

/// Free rigid fit (2-D Procrustes) of body b's markers at one sample, with the measured
/// position of model marker i taken from marker perm(i). Returns the residual sum of squares
/// and the marker count, and the fitted pose (origin-free: centroid position and angle).
pub(crate) fn free_body_fit(
    mech: &Mechanism,
    b: usize,
    o: &[Option<MarkerState>],
    perm: &dyn Fn(usize) -> usize,
) -> Option<(f64, usize)> {
    let (rss, k, _) = free_body_pose(mech, b, o, perm)?;
    Some((rss, k))
}

pub(crate) fn free_body_pose(
    mech: &Mechanism,
    b: usize,
    o: &[Option<MarkerState>],
    perm: &dyn Fn(usize) -> usize,
) -> Option<(f64, usize, (Vector2<f64>, f64))> {
    let pairs: Vec<(Vector2<f64>, Vector2<f64>)> = mech
        .markers
        .iter()
        .enumerate()
        .filter(|(_, m)| m.body == b)
        .filter_map(|(i, m)| Some((m.local, o[perm(i)]?.p)))
        .collect();
    if pairs.len() < 2 {
        return None;
    }
    let k = pairs.len() as f64;
    let cl = pairs.iter().map(|p| p.0).sum::<Vector2<f64>>() / k;
    let cm = pairs.iter().map(|p| p.1).sum::<Vector2<f64>>() / k;
    let (mut sc, mut ss) = (0.0, 0.0);
    for (l, mp) in &pairs {
        let (a, bb) = (l - cl, mp - cm);
        sc += a.dot(&bb);
        ss += flexbench_mechanism::cross(a, bb);
    }
    let phi = ss.atan2(sc);
    let r = cm - rot(phi, cl);
    let rss: f64 = pairs
        .iter()
        .map(|(l, mp)| (r + rot(phi, *l) - mp).norm_squared())
        .sum();
    Some((rss, pairs.len(), (r, phi)))
}

/// Totals of the free rigid fits of every marker-carrying body over all samples: residual
/// sum of squares (m^2), markers fitted, and degrees of freedom left (2 k - 3 per fit of k
/// markers: a rigid fit in the plane takes 3 of the 2 k coordinates).
fn free_fit_totals(mech: &Mechanism, obs: &[Vec<Option<MarkerState>>]) -> (f64, usize, usize) {
    let id = |i: usize| i;
    let (mut s, mut markers, mut dof) = (0.0, 0usize, 0usize);
    for o in obs {
        for b in 0..mech.bodies.len() {
            if let Some((rss, k)) = free_body_fit(mech, b, o, &id) {
                s += rss;
                markers += k;
                dof += 2 * k - 3;
            }
        }
    }
    (s, markers, dof)
}

/// RMS residual of the free rigid fit of each marker-carrying body over all samples, m
/// (None when no body carries two markers).
pub(crate) fn free_fit_rms(mech: &Mechanism, obs: &[Vec<Option<MarkerState>>]) -> Option<f64> {
    let (s, c, _) = free_fit_totals(mech, obs);
    (c > 0).then(|| (s / c as f64).sqrt())
}

/// The whole turns the first driver's body makes over the fitted `samples` (0 when the first
/// driver is not an angle): the unwrapped angle's span over 2 pi, rounded down.
pub fn driver_turns(mech: &Mechanism, samples: &[FitSample]) -> f64 {
    let Some(Coordinate::Angle { body }) = mech.drivers.first().map(|d| &d.coordinate) else {
        return 0.0;
    };
    let mut phi: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.state.as_ref().map(|(q, _, _)| q[3 * body + 2]))
        .collect();
    flexbench_contracts::series::unwrap_angles(&mut phi);
    match (phi.first(), phi.last()) {
        (Some(a), Some(b)) => ((b - a).abs() / std::f64::consts::TAU).floor(),
        _ => 0.0,
    }
}

/// The markers' noise per coordinate, m, from the free rigid fits' residuals: sqrt(sum RSS /
/// sum (2 k - 3)) ([`crate::observe::free_fit_totals`]). None when no body carries two markers.
pub fn marker_noise(mech: &Mechanism, obs: &[Vec<Option<MarkerState>>]) -> Option<f64> {
    let (s, _, dof) = free_fit_totals(mech, obs);
    (dof > 0).then(|| (s / dof as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_mechanism::constraints::body_point;
    use flexbench_mechanism::file::wind_pump_default;

    /// Levenberg-Marquardt through the closed loop lands on the exact configuration: exact
    /// markers, the drivers' weak targets at the truth, a start 3 degrees and 5 mm away.
    #[test]
    fn refine_reaches_the_exact_configuration() {
        let mech = wind_pump_default();
        let truth = mech.assemble_at(&[1.0, 0.43]).unwrap();
        let obs: Vec<Option<MarkerState>> = mech
            .markers
            .iter()
            .map(|mk| {
                Some(MarkerState {
                    p: body_point(&truth, mk.body, mk.local),
                    v: Vector2::zeros(),
                    a: Vector2::zeros(),
                })
            })
            .collect();
        let start = mech.assemble_at(&[1.0 + 3f64.to_radians(), 0.425]).unwrap();
        let w = driver_weights(&mech, PRIOR_WEIGHT);
        let (q, cost) = refine(&mech, &start, &obs, &[1.0, 0.43], &w, 50).unwrap();
        let d: Vec<f64> = mech
            .drivers
            .iter()
            .map(|d| d.coordinate.value(&q))
            .collect();
        assert!(
            (d[0] - 1.0).abs() < 1e-12 && (d[1] - 0.43).abs() < 1e-12,
            "{d:?}"
        );
        assert!(
            (&q - &truth).amax() < 1e-12,
            "q off by {:e}",
            (&q - &truth).amax()
        );
        assert!(cost < 1e-24, "cost {cost:e}");
        assert!(mech.phi(&q).amax() < 1e-12, "the loop is closed");
    }
}
