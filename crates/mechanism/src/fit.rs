//! The mechanism's motion that best explains the measured markers, the closed loop satisfied
//! exactly (docs/bench.md section 4, stage 4).
//!
//! Position: minimise sum_m |r_m(q) - p_m|^2 subject to Phi(q) = 0, by Gauss-Newton on the KKT
//! system
//!
//! ```text
//! [ J^T J   Phi_q^T ] [ dq ]   [ -J^T (r(q) - p) ]
//! [ Phi_q      0    ] [ mu ] = [ -Phi(q)         ]
//! ```
//!
//! (J the markers' Jacobian). Velocity and acceleration are the same constrained least-squares
//! problems, now linear: J q' ~ v with Phi_q q' = 0, and J q'' ~ a - c with Phi_q q'' = gamma,
//! c_m = -R(phi) s_m phi'^2 being the marker's centripetal part. No angle is differentiated: the
//! loop's velocity and acceleration analysis does it. The residual r(q) - p is kept per sample
//! and marker; the disagreements between data and geometry (units, swapped markers, a joint
//! off its circle) are measured and reported.

use nalgebra::{DMatrix, DVector, Vector2};

use crate::constraints::body_point;
use crate::model::{BodyRef, Coordinate, JointKind, Mechanism};
use crate::{rot, rot_d, MechanismError};

/// Measured kinematics of one marker at one sample (bench frame): position (m), velocity
/// (m/s), acceleration (m/s^2).
#[derive(Debug, Clone, Copy, PartialEq)]
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

/// Summary of the fit.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FitReport {
    /// RMS position residual per marker of the closed-loop fit, m.
    pub rms_per_marker: Vec<(String, f64)>,
    /// RMS residual over all markers of the closed-loop fit, m.
    pub rms: f64,
    /// RMS residual of the free rigid fit of each body (no loop), m.
    pub rms_free: f64,
    /// What the loop closure adds: sqrt(rms^2 - rms_free^2), m.
    pub loop_excess_rms: f64,
    /// For a marker-carrying body pinned to a body that turns about a ground pin: the median and
    /// largest |distance - length| of the free-fitted pin from the ground pin, m.
    pub pin_circle: Vec<(String, f64, f64)>,
    /// Samples where the markers did not determine the motion.
    pub unfitted_samples: usize,
    /// Disagreements between the data and the geometry, in words with their sizes.
    pub warnings: Vec<String>,
    /// The folds met and how they were resolved.
    pub folds: crate::fold::FoldReport,
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
    for (row, &i) in present.iter().enumerate() {
        let mk = &m.markers[i];
        let b = mk.body;
        let d = rot_d(q[3 * b + 2], mk.local);
        jac[(2 * row, 3 * b)] = 1.0;
        jac[(2 * row + 1, 3 * b + 1)] = 1.0;
        jac[(2 * row, 3 * b + 2)] = d.x;
        jac[(2 * row + 1, 3 * b + 2)] = d.y;
        if let Some(o) = obs[i] {
            let res = body_point(q, b, mk.local) - o.p;
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

/// Rows w_k grad c_k(q) of the drivers' weak observations (zero rows where the weight is 0).
fn driver_jacobian(m: &Mechanism, q: &DVector<f64>, w: &[f64]) -> DMatrix<f64> {
    let n = m.ncoords();
    let mut jd = DMatrix::zeros(m.drivers.len(), n);
    for (k, d) in m.drivers.iter().enumerate() {
        jd.row_mut(k)
            .copy_from(&(d.coordinate.gradient(q, n) * w[k]).transpose());
    }
    jd
}

/// Solve the equality-constrained least squares min |A x - b|^2 s.t. Phi_q x = c by its KKT
/// system; None when the system is singular (the markers do not determine the motion).
fn constrained_lsq(
    m: &Mechanism,
    q: &DVector<f64>,
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    c: &DVector<f64>,
) -> Option<DVector<f64>> {
    let n = m.ncoords();
    let nc = m.nconstraints();
    let mut k = DMatrix::zeros(n + nc, n + nc);
    k.view_mut((0, 0), (n, n)).copy_from(&(a.transpose() * a));
    let pq = m.phi_q(q);
    k.view_mut((n, 0), (nc, n)).copy_from(&pq);
    k.view_mut((0, n), (n, nc)).copy_from(&pq.transpose());
    let mut rhs = DVector::zeros(n + nc);
    rhs.rows_mut(0, n).copy_from(&(a.transpose() * b));
    rhs.rows_mut(n, nc).copy_from(c);
    let sol = k.lu().solve(&rhs)?;
    sol.iter()
        .all(|v| v.is_finite())
        .then(|| sol.rows(0, n).into_owned())
}

fn stack(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    a2: &DMatrix<f64>,
    b2: &DVector<f64>,
) -> (DMatrix<f64>, DVector<f64>) {
    let mut sa = DMatrix::zeros(a.nrows() + a2.nrows(), a.ncols());
    sa.rows_mut(0, a.nrows()).copy_from(a);
    sa.rows_mut(a.nrows(), a2.nrows()).copy_from(a2);
    let mut sb = DVector::zeros(b.len() + b2.len());
    sb.rows_mut(0, b.len()).copy_from(b);
    sb.rows_mut(b.len(), b2.len()).copy_from(b2);
    (sa, sb)
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
        let sens = crate::assembly::driver_sensitivity(m, &q, &vec![1.0; nd])?;
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
            let Some(delta) = hl.lu().solve(&(-&g)) else {
                lambda *= 10.0;
                continue;
            };
            let dn: Vec<f64> = (0..nd).map(|k| d[k] + delta[k]).collect();
            if let Ok(qn) = m.assemble_from(&q, &dn) {
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

/// The ratio of the extreme eigenvalues of J_d^T J_d, J_d the markers' Jacobian with respect to
/// the driving coordinates (angles scaled by the reference length): 1 when the markers see every
/// driver alike, 0 at a fold.
pub(crate) fn fold_ratio(m: &Mechanism, q: &DVector<f64>, obs: &[Option<MarkerState>]) -> f64 {
    let Some(sens) = crate::assembly::driver_sensitivity(m, q, &driver_weights(m, 1.0)) else {
        return 0.0;
    };
    let (jm, _) = marker_system(m, q, obs);
    let js = &jm * &sens;
    let eig = (js.transpose() * &js).symmetric_eigenvalues();
    let (lo, hi) = (eig.min(), eig.max());
    if hi > 0.0 {
        lo / hi
    } else {
        0.0
    }
}

impl Mechanism {
    /// The predicted configuration of sample k: each driving coordinate extrapolated by a
    /// quadratic in time fitted (least squares) to the last fitted samples, up to 12, the
    /// samples near a fold weighing 1/100 (their drivers are poorly seen and carry little of
    /// the motion's trend), then assembled from the last configuration (same assembly branch).
    /// Carrying the trend of the well-seen samples through a fold keeps noise from flipping the
    /// motion onto the mirror solution there.
    pub(crate) fn predict(
        &self,
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
        let mut d_pred = Vec::with_capacity(self.drivers.len());
        for d in &self.drivers {
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
        self.assemble_from(last, &d_pred).ok()
    }

    /// Configurations along a whole turn of the first driver (others at their initial values),
    /// by continuation on the initial assembly branch: starting points for the fit.
    pub fn branch_atlas(&self, count: usize) -> Result<Vec<DVector<f64>>, MechanismError> {
        let mut q = self.initial_configuration()?;
        let mut values: Vec<f64> = self.drivers.iter().map(|d| d.value).collect();
        let is_angle = matches!(self.drivers[0].coordinate, Coordinate::Angle { .. });
        let mut out = vec![q.clone()];
        if !is_angle {
            return Ok(out);
        }
        let start = values[0];
        for s in 1..count {
            values[0] = start + 2.0 * std::f64::consts::PI * s as f64 / count as f64;
            if let Ok(next) = self.assemble_from(&q, &values) {
                q = next;
                out.push(q.clone());
            }
        }
        Ok(out)
    }

    /// Fit the mechanism's motion to measured markers. `obs[k][i]` is model marker i at sample
    /// k, time `t[k]` (None: not measured there).
    ///
    /// Three passes. (1) Positions, sample by sample, each Gauss-Newton solve started from the
    /// quadratic extrapolation of the previous fitted samples (which carries the motion through
    /// the configurations where the markers cannot tell two assembly modes apart: on the bench,
    /// the rocker passing through C'D vertical, where the lever does not see the slide's x), the
    /// first one from the best of a whole turn of the assembly branch. (2) The driving
    /// coordinates of the fitted positions, differentiated by `diff`. (3) Velocities and
    /// accelerations from the loop's analysis with the markers' measured rates, the drivers'
    /// rates of (2) entering with the weight [`RATE_PRIOR_WEIGHT`]. Where the markers see every
    /// direction of the motion the two estimates agree and are averaged; near a configuration
    /// where the markers lose sight of one direction (on the bench, the slide's x when C'D is
    /// vertical, twice per turn: there the markers alone would amplify their errors without
    /// bound), the drivers' rates decide that direction.
    pub fn fit_markers(
        &self,
        t: &[f64],
        obs: &[Vec<Option<MarkerState>>],
        diff: &dyn flexbench_signal::Differentiator,
    ) -> Result<(Vec<FitSample>, FitReport), MechanismError> {
        let nm = self.markers.len();
        if nm == 0 {
            return Err(MechanismError::Fit(
                "the mechanism file declares no markers".into(),
            ));
        }
        if t.len() != obs.len() {
            return Err(MechanismError::Fit(format!(
                "{} times for {} samples",
                t.len(),
                obs.len()
            )));
        }
        let mut report = FitReport::default();
        self.check_scale(obs)?;
        self.check_swaps(obs)?;
        let w_rate = driver_weights(self, RATE_PRIOR_WEIGHT);
        let nd = self.drivers.len();

        // (1) Positions.
        let (qs, fold_report) = self.fit_positions(t, obs)?;
        report.folds = fold_report;

        // (2) The drivers' rates from their fitted values.
        let mut driver_rates: Vec<(Vec<f64>, Vec<f64>, Vec<bool>)> = Vec::with_capacity(nd);
        for d in &self.drivers {
            let present: Vec<bool> = qs.iter().map(|q| q.is_some()).collect();
            let vals: Vec<f64> = qs
                .iter()
                .map(|q| q.as_ref().map_or(f64::NAN, |q| d.coordinate.value(q)))
                .collect();
            let der = diff
                .differentiate(&d.name, t, &vals, &present)
                .map_err(|e| MechanismError::Fit(format!("differentiating the {}: {e}", d.name)))?;
            let ok: Vec<bool> = der
                .rate
                .iter()
                .zip(&der.accel)
                .map(|(a, b)| a.is_finite() && b.is_finite())
                .collect();
            driver_rates.push((der.rate, der.accel, ok));
        }

        // (3) Velocities and accelerations.
        let mut out = Vec::with_capacity(obs.len());
        let mut sum2 = vec![0.0; nm];
        let mut cnt = vec![0usize; nm];
        for (k, o) in obs.iter().enumerate() {
            let unfitted = FitSample {
                state: None,
                residual: vec![None; nm],
            };
            let Some(q) = qs[k].clone() else {
                report.unfitted_samples += 1;
                out.push(unfitted);
                continue;
            };
            let wk: Vec<f64> = (0..nd)
                .map(|j| if driver_rates[j].2[k] { w_rate[j] } else { 0.0 })
                .collect();
            let (jac, r) = marker_system(self, &q, o);
            let jd = driver_jacobian(self, &q, &wk);
            let present: Vec<usize> = (0..nm).filter(|&i| o[i].is_some()).collect();
            let mut vel = DVector::zeros(2 * present.len());
            for (row, &i) in present.iter().enumerate() {
                if let Some(s) = o[i] {
                    vel[2 * row] = s.v.x;
                    vel[2 * row + 1] = s.v.y;
                }
            }
            let vd = DVector::from_iterator(
                nd,
                (0..nd).map(|j| {
                    if wk[j] > 0.0 {
                        wk[j] * driver_rates[j].0[k]
                    } else {
                        0.0
                    }
                }),
            );
            let (a, b) = stack(&jac, &vel, &jd, &vd);
            let Some(qd) = constrained_lsq(self, &q, &a, &b, &DVector::zeros(self.nconstraints()))
            else {
                report.unfitted_samples += 1;
                out.push(unfitted);
                continue;
            };
            let mut acc = DVector::zeros(2 * present.len());
            for (row, &i) in present.iter().enumerate() {
                if let Some(s) = o[i] {
                    let mk = &self.markers[i];
                    let om = qd[3 * mk.body + 2];
                    let c = -rot(q[3 * mk.body + 2], mk.local) * (om * om);
                    acc[2 * row] = s.a.x - c.x;
                    acc[2 * row + 1] = s.a.y - c.y;
                }
            }
            let ad = DVector::from_iterator(
                nd,
                self.drivers.iter().enumerate().map(|(j, d)| {
                    if wk[j] > 0.0 {
                        wk[j] * (driver_rates[j].1[k] - d.coordinate.quadratic(&q, &qd))
                    } else {
                        0.0
                    }
                }),
            );
            let (a, b) = stack(&jac, &acc, &jd, &ad);
            let Some(qdd) = constrained_lsq(self, &q, &a, &b, &self.gamma(&q, &qd)) else {
                report.unfitted_samples += 1;
                out.push(unfitted);
                continue;
            };
            let mut residual = vec![None; nm];
            for (row, &i) in present.iter().enumerate() {
                let d = Vector2::new(r[2 * row], r[2 * row + 1]);
                sum2[i] += d.norm_squared();
                cnt[i] += 1;
                residual[i] = Some(d);
            }
            out.push(FitSample {
                state: Some((q, qd, qdd)),
                residual,
            });
        }
        let rms = |s: f64, c: usize| {
            if c > 0 {
                (s / c as f64).sqrt()
            } else {
                f64::NAN
            }
        };
        report.rms_per_marker = self
            .markers
            .iter()
            .enumerate()
            .map(|(i, mk)| (mk.name.clone(), rms(sum2[i], cnt[i])))
            .collect();
        report.rms = rms(sum2.iter().sum(), cnt.iter().sum());
        self.free_fit_diagnostics(obs, &mut report);
        if report.unfitted_samples == obs.len() {
            return Err(MechanismError::Fit(
                "no sample could be fitted: too few markers are measured at any time".into(),
            ));
        }
        Ok((out, report))
    }

    /// Refuse markers in the wrong unit: on each body, the measured distances between its
    /// markers, summed over all pairs (a sum that relabelling cannot change), must match the
    /// model's within 5 %.
    fn check_scale(&self, obs: &[Vec<Option<MarkerState>>]) -> Result<(), MechanismError> {
        for b in 0..self.bodies.len() {
            let idx: Vec<usize> = (0..self.markers.len())
                .filter(|&i| self.markers[i].body == b)
                .collect();
            let mut ratios = Vec::new();
            let mut model_sum = 0.0;
            for (a, &i) in idx.iter().enumerate() {
                for &j in &idx[a + 1..] {
                    model_sum += (self.markers[i].local - self.markers[j].local).norm();
                }
            }
            if idx.len() < 2 || model_sum < 1e-9 {
                continue;
            }
            for o in obs {
                if idx.iter().any(|&i| o[i].is_none()) {
                    continue;
                }
                let mut s = 0.0;
                for (a, &i) in idx.iter().enumerate() {
                    for &j in &idx[a + 1..] {
                        s += (o[i].map(|m| m.p).unwrap_or_default()
                            - o[j].map(|m| m.p).unwrap_or_default())
                        .norm();
                    }
                }
                ratios.push(s / model_sum);
            }
            if ratios.is_empty() {
                continue;
            }
            ratios.sort_by(|x, y| x.total_cmp(y));
            let ratio = ratios[ratios.len() / 2];
            if (ratio - 1.0).abs() > 0.05 {
                let hint = if (ratio / 1000.0 - 1.0).abs() < 0.05 {
                    " The tracks look like millimetres: divide x and y by 1000."
                } else if (ratio / 100.0 - 1.0).abs() < 0.05 {
                    " The tracks look like centimetres: divide x and y by 100."
                } else if (ratio / 39.37 - 1.0).abs() < 0.05 {
                    " The tracks look like inches: multiply x and y by 0.0254."
                } else {
                    " Check the calibration's scale and the markers' positions in the mechanism file."
                };
                let names: Vec<&str> = idx.iter().map(|&i| self.markers[i].name.as_str()).collect();
                return Err(MechanismError::Fit(format!(
                    "the markers {} on the {} are {ratio:.4} times as far apart in the tracks (median over the samples) as in the mechanism file.{hint}",
                    names.join(", "),
                    self.bodies[b].name
                )));
            }
        }
        Ok(())
    }

    /// Refuse swapped marker labels: if exchanging two markers of one body makes the free rigid
    /// fit's residual at least 10 times smaller (and the present one exceeds 1 mm), say which.
    fn check_swaps(&self, obs: &[Vec<Option<MarkerState>>]) -> Result<(), MechanismError> {
        let stride = (obs.len() / 50).max(1);
        let sub: Vec<&Vec<Option<MarkerState>>> = obs.iter().step_by(stride).collect();
        let cost = |perm: &dyn Fn(usize) -> usize| -> f64 {
            let mut s = 0.0;
            let mut c = 0usize;
            for o in &sub {
                for b in 0..self.bodies.len() {
                    if let Some((rss, k)) = self.free_body_fit(b, o, perm) {
                        s += rss;
                        c += k;
                    }
                }
            }
            if c > 0 {
                (s / c as f64).sqrt()
            } else {
                0.0
            }
        };
        let base = cost(&|i| i);
        if base < 1e-3 {
            return Ok(());
        }
        let nm = self.markers.len();
        let mut best: Option<(usize, usize, f64)> = None;
        for i in 0..nm {
            for j in (i + 1)..nm {
                if self.markers[i].body != self.markers[j].body {
                    continue;
                }
                let c = cost(&|k| {
                    if k == i {
                        j
                    } else if k == j {
                        i
                    } else {
                        k
                    }
                });
                if best.is_none_or(|b| c < b.2) {
                    best = Some((i, j, c));
                }
            }
        }
        if let Some((i, j, c)) = best {
            if c * 10.0 < base {
                return Err(MechanismError::Fit(format!(
                    "markers {} and {} appear swapped: the rigid fit's RMS residual is {:.2} mm as labelled and {:.3} mm with the two exchanged; fix their labels in the tracks",
                    self.markers[i].name,
                    self.markers[j].name,
                    base * 1e3,
                    c * 1e3
                )));
            }
        }
        Ok(())
    }

    /// Free rigid fit (2-D Procrustes) of body b's markers at one sample, with the measured
    /// position of model marker i taken from marker perm(i). Returns the residual sum of squares
    /// and the marker count, and the fitted pose (origin-free: centroid position and angle).
    pub(crate) fn free_body_fit(
        &self,
        b: usize,
        o: &[Option<MarkerState>],
        perm: &dyn Fn(usize) -> usize,
    ) -> Option<(f64, usize)> {
        let (rss, k, _) = self.free_body_pose(b, o, perm)?;
        Some((rss, k))
    }

    fn free_body_pose(
        &self,
        b: usize,
        o: &[Option<MarkerState>],
        perm: &dyn Fn(usize) -> usize,
    ) -> Option<(f64, usize, (Vector2<f64>, f64))> {
        let pairs: Vec<(Vector2<f64>, Vector2<f64>)> = self
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
            ss += crate::cross(a, bb);
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
    fn free_fit_totals(&self, obs: &[Vec<Option<MarkerState>>]) -> (f64, usize, usize) {
        let id = |i: usize| i;
        let (mut s, mut markers, mut dof) = (0.0, 0usize, 0usize);
        for o in obs {
            for b in 0..self.bodies.len() {
                if let Some((rss, k)) = self.free_body_fit(b, o, &id) {
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
    pub(crate) fn free_fit_rms(&self, obs: &[Vec<Option<MarkerState>>]) -> Option<f64> {
        let (s, c, _) = self.free_fit_totals(obs);
        (c > 0).then(|| (s / c as f64).sqrt())
    }

    /// The markers' noise per coordinate, m, from the free rigid fits' residuals: sqrt(sum RSS /
    /// sum (2 k - 3)) ([`Mechanism::free_fit_totals`]). None when no body carries two markers.
    pub fn marker_noise(&self, obs: &[Vec<Option<MarkerState>>]) -> Option<f64> {
        let (s, _, dof) = self.free_fit_totals(obs);
        (dof > 0).then(|| (s / dof as f64).sqrt())
    }

    /// Fill the free-fit figures of the report and its warnings.
    fn free_fit_diagnostics(&self, obs: &[Vec<Option<MarkerState>>], report: &mut FitReport) {
        let id = |i: usize| i;
        report.rms_free = self.free_fit_rms(obs).unwrap_or(f64::NAN);
        report.loop_excess_rms = (report.rms.powi(2) - report.rms_free.powi(2))
            .max(0.0)
            .sqrt();
        // Pins of marker-carrying bodies on bodies that turn about a ground pin (B on the crank).
        let has_markers = |b: usize| self.markers.iter().any(|m| m.body == b);
        for j in &self.joints {
            let JointKind::Revolute { a, b } = &j.kind else {
                continue;
            };
            for (meas, other) in [(a, b), (b, a)] {
                let (BodyRef::Body(mb), BodyRef::Body(ob)) = (meas.body, other.body) else {
                    continue;
                };
                if !has_markers(mb) || has_markers(ob) {
                    continue;
                }
                // The other body's ground pin.
                let ground_pin = self.joints.iter().find_map(|g| match &g.kind {
                    JointKind::Revolute { a: ga, b: gb }
                        if ga.body == BodyRef::Ground && gb.body == BodyRef::Body(ob) =>
                    {
                        Some((ga.local, gb.local))
                    }
                    JointKind::Revolute { a: ga, b: gb }
                        if gb.body == BodyRef::Ground && ga.body == BodyRef::Body(ob) =>
                    {
                        Some((gb.local, ga.local))
                    }
                    _ => None,
                });
                let Some((ground, pin_on_other)) = ground_pin else {
                    continue;
                };
                let length = (other.local - pin_on_other).norm();
                let mut dev: Vec<f64> = obs
                    .iter()
                    .filter_map(|o| {
                        let (_, _, (r, phi)) = self.free_body_pose(mb, o, &id)?;
                        // free_body_pose returns the pose of the body's centroid frame.
                        let p = r + rot(phi, meas.local);
                        Some((p - ground).norm() - length)
                    })
                    .collect();
                if dev.is_empty() {
                    continue;
                }
                dev.sort_by(|x, y| x.abs().total_cmp(&y.abs()));
                let med = dev[dev.len() / 2].abs();
                let max = dev[dev.len() - 1].abs();
                report.pin_circle.push((j.name.clone(), med, max));
                let tol = (0.01 * length).max(3.0 * report.rms_free).max(1e-4);
                if med > tol {
                    report.warnings.push(format!(
                        "joint {}: the {} as measured puts its pin {:.2} mm (median; up to {:.2} mm) off its circle of radius {:.4} m about the ground pin: the measured motion disagrees with the mechanism's lengths",
                        j.name,
                        self.bodies[mb].name,
                        med * 1e3,
                        max * 1e3,
                        length
                    ));
                }
            }
        }
        let excess_tol = (3.0 * report.rms_free).max(1e-4);
        if report.loop_excess_rms > excess_tol {
            report.warnings.push(format!(
                "closing the loop adds {:.2} mm RMS to the markers' residual (free rigid fit: {:.3} mm): the measured motion and the mechanism file disagree",
                report.loop_excess_rms * 1e3,
                report.rms_free * 1e3
            ));
        }
    }
}
