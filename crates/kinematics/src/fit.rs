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

use flexbench_mechanism::model::{BodyRef, JointKind};
use flexbench_mechanism::{rot, Mechanism};

use crate::fold::{fit_positions, FoldReport};
use crate::observe::{
    driver_jacobian, driver_weights, free_body_fit, free_body_pose, free_fit_rms, marker_system,
    FitSample, MarkerState, RATE_PRIOR_WEIGHT,
};
use crate::KinematicsError;
use flexbench_numeric::lu::Lu;

/// Summary of the fit.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FitReport {
    /// RMS position residual per marker of the closed-loop fit, m.
    #[serde(deserialize_with = "flexbench_contracts::json::named_f64_or_nan")]
    pub rms_per_marker: Vec<(String, f64)>,
    /// RMS residual over all markers of the closed-loop fit, m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms: f64,
    /// RMS residual of the free rigid fit of each body (no loop), m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_free: f64,
    /// What the loop closure adds: sqrt(rms^2 - rms_free^2), m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub loop_excess_rms: f64,
    /// For a marker-carrying body pinned to a body that turns about a ground pin: the median and
    /// largest |distance - length| of the free-fitted pin from the ground pin, m.
    #[serde(deserialize_with = "flexbench_contracts::json::named_f64_pair_or_nan")]
    pub pin_circle: Vec<(String, f64, f64)>,
    /// Samples where the markers did not determine the motion.
    pub unfitted_samples: usize,
    /// Disagreements between the data and the geometry, in words with their sizes.
    pub warnings: Vec<String>,
    /// The folds met and how they were resolved.
    pub folds: FoldReport,
    /// Each marker's mean residual in its body's frame: how far the recording puts it from
    /// where the file places it ([`crate::marker_places`]).
    #[serde(default)]
    pub marker_places: Vec<crate::marker_places::MarkerPlace>,
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
    let sol = Lu::new(k).solve(&rhs)?;
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

/// Fit the mechanism's motion to measured markers. `obs[k][i]` is model marker i at sample
/// k, time `t[k]` (None: not measured there).
///
/// Three passes. (1) Positions, sample by sample, each Gauss-Newton solve started from the
/// quadratic extrapolation of the previous fitted samples (which carries the motion through
/// the configurations where the markers cannot tell two assembly modes apart: on the bench,
/// the rocker passing through C'D vertical, where the lever does not see the slide's x), the
/// first, the first sample with the most markers seen, from the best of a whole turn of the
/// assembly branch, the samples before it backwards from it (`fold::fit_positions`). (2) The
/// driving coordinates of the fitted positions, differentiated by `diff`. (3) Velocities and
/// accelerations from the loop's analysis with the markers' measured rates, the drivers'
/// rates of (2) entering with the weight [`RATE_PRIOR_WEIGHT`]. Where the markers see every
/// direction of the motion the two estimates agree and are averaged; near a configuration
/// where the markers lose sight of one direction (on the bench, the slide's x when C'D is
/// vertical, twice per turn: there the markers alone would amplify their errors without
/// bound), the drivers' rates decide that direction.
pub fn fit_markers(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    diff: &dyn flexbench_signal::Differentiator,
) -> Result<(Vec<FitSample>, FitReport), KinematicsError> {
    let nm = mech.markers.len();
    if nm == 0 {
        return Err(KinematicsError::Fit(
            "the mechanism file declares no markers".into(),
        ));
    }
    if t.len() != obs.len() {
        return Err(KinematicsError::Fit(format!(
            "{} times for {} samples",
            t.len(),
            obs.len()
        )));
    }
    let mut report = FitReport::default();
    check_scale(mech, obs)?;
    check_swaps(mech, obs)?;

    // (1) Positions.
    let (qs, fold_report) = fit_positions(mech, t, obs)?;
    report.folds = fold_report;

    // (2) The drivers' rates from their fitted values.
    let rates = driver_rates(mech, t, &qs, diff)?;

    // (3) Velocities and accelerations.
    let w_rate = driver_weights(mech, RATE_PRIOR_WEIGHT);
    let mut out = Vec::with_capacity(obs.len());
    let mut sum2 = vec![0.0; nm];
    let mut cnt = vec![0usize; nm];
    for (k, o) in obs.iter().enumerate() {
        let wk: Vec<f64> = (0..mech.drivers.len())
            .map(|j| if rates[j].ok[k] { w_rate[j] } else { 0.0 })
            .collect();
        let state = qs[k].as_ref().and_then(|q| {
            let (qd, qdd, r) = rates_at(mech, q, o, &wk, &rates, k)?;
            Some((q.clone(), qd, qdd, r))
        });
        let Some((q, qd, qdd, r)) = state else {
            report.unfitted_samples += 1;
            out.push(FitSample {
                state: None,
                residual: vec![None; nm],
            });
            continue;
        };
        let present: Vec<usize> = (0..nm).filter(|&i| o[i].is_some()).collect();
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
    (report.rms_per_marker, report.rms) = marker_rms(mech, &sum2, &cnt);
    free_fit_diagnostics(mech, obs, &mut report);
    report.marker_places = crate::marker_places::marker_places(mech, &out);
    let noise = crate::observe::marker_noise(mech, obs).unwrap_or(report.rms);
    if let Some(w) = crate::marker_places::place_warning(&report.marker_places, noise) {
        report.warnings.push(w);
    }
    if report.unfitted_samples == obs.len() {
        return Err(KinematicsError::Fit(
            "no sample could be fitted: too few markers are measured at any time".into(),
        ));
    }
    Ok((out, report))
}

/// The fit's report for a refit of the same tracks with some samples left out (`obs`, turned
/// as the refit's) that starts from an earlier fit ([`crate::estimate::estimate`]'s `earlier`): the
/// earlier fit's residuals and folds, the free rigid fits' diagnostics (and their warnings)
/// taken anew on the samples kept.
pub(crate) fn refit_report(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    earlier: &FitReport,
) -> FitReport {
    let mut report = FitReport {
        rms_per_marker: earlier.rms_per_marker.clone(),
        rms: earlier.rms,
        unfitted_samples: earlier.unfitted_samples,
        folds: earlier.folds.clone(),
        marker_places: earlier.marker_places.clone(),
        ..FitReport::default()
    };
    free_fit_diagnostics(mech, obs, &mut report);
    // The earlier fit's residuals: its places and their warning stand.
    report.warnings.extend(
        earlier
            .warnings
            .iter()
            .filter(|w| w.starts_with("the markers are not where"))
            .cloned(),
    );
    report
}

/// A driving coordinate's rate and acceleration from its fitted values, and where both are
/// finite.
struct DriverRates {
    rate: Vec<f64>,
    accel: Vec<f64>,
    ok: Vec<bool>,
}

/// Every driving coordinate's values at the fitted positions `qs`, differentiated by `diff`.
fn driver_rates(
    mech: &Mechanism,
    t: &[f64],
    qs: &[Option<DVector<f64>>],
    diff: &dyn flexbench_signal::Differentiator,
) -> Result<Vec<DriverRates>, KinematicsError> {
    let present: Vec<bool> = qs.iter().map(|q| q.is_some()).collect();
    mech.drivers
        .iter()
        .map(|d| {
            let vals: Vec<f64> = qs
                .iter()
                .map(|q| q.as_ref().map_or(f64::NAN, |q| d.coordinate.value(q)))
                .collect();
            let der = diff
                .differentiate(&d.name, t, &vals, &present)
                .map_err(|source| KinematicsError::Differentiate {
                    coordinate: d.name.clone(),
                    source,
                })?;
            let ok = der
                .rate
                .iter()
                .zip(&der.accel)
                .map(|(a, b)| a.is_finite() && b.is_finite())
                .collect();
            Ok(DriverRates {
                rate: der.rate,
                accel: der.accel,
                ok,
            })
        })
        .collect()
}

/// The velocities and accelerations at sample `k` of fitted position `q`: the loop's analysis
/// with the markers' measured rates (`o`), the drivers' rates entering with the weights `wk`
/// (zero where a driver's rate is missing). Returns (q', q'', the markers' position
/// residual), None when a least-squares solve fails.
fn rates_at(
    mech: &Mechanism,
    q: &DVector<f64>,
    o: &[Option<MarkerState>],
    wk: &[f64],
    rates: &[DriverRates],
    k: usize,
) -> Option<(DVector<f64>, DVector<f64>, DVector<f64>)> {
    let nd = mech.drivers.len();
    let (jac, r) = marker_system(mech, q, o);
    let jd = driver_jacobian(mech, q, wk);
    let present: Vec<usize> = (0..mech.markers.len())
        .filter(|&i| o[i].is_some())
        .collect();
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
                wk[j] * rates[j].rate[k]
            } else {
                0.0
            }
        }),
    );
    let (a, b) = stack(&jac, &vel, &jd, &vd);
    let qd = constrained_lsq(mech, q, &a, &b, &DVector::zeros(mech.nconstraints()))?;
    let mut acc = DVector::zeros(2 * present.len());
    for (row, &i) in present.iter().enumerate() {
        if let Some(s) = o[i] {
            let mk = &mech.markers[i];
            let om = qd[3 * mk.body + 2];
            let c = -rot(q[3 * mk.body + 2], mk.local) * (om * om);
            acc[2 * row] = s.a.x - c.x;
            acc[2 * row + 1] = s.a.y - c.y;
        }
    }
    let ad = DVector::from_iterator(
        nd,
        mech.drivers.iter().enumerate().map(|(j, d)| {
            if wk[j] > 0.0 {
                wk[j] * (rates[j].accel[k] - d.coordinate.quadratic(q, &qd))
            } else {
                0.0
            }
        }),
    );
    let (a, b) = stack(&jac, &acc, &jd, &ad);
    let qdd = constrained_lsq(mech, q, &a, &b, &mech.gamma(q, &qd))?;
    Some((qd, qdd, r))
}

/// Refuse markers in the wrong unit: on each body, the measured distances between its
/// markers, summed over all pairs (a sum that relabelling cannot change), must match the
/// model's within 5 %.
fn check_scale(mech: &Mechanism, obs: &[Vec<Option<MarkerState>>]) -> Result<(), KinematicsError> {
    for b in 0..mech.bodies.len() {
        let idx: Vec<usize> = (0..mech.markers.len())
            .filter(|&i| mech.markers[i].body == b)
            .collect();
        let mut ratios = Vec::new();
        let mut model_sum = 0.0;
        for (a, &i) in idx.iter().enumerate() {
            for &j in &idx[a + 1..] {
                model_sum += (mech.markers[i].local - mech.markers[j].local).norm();
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
            let names: Vec<&str> = idx.iter().map(|&i| mech.markers[i].name.as_str()).collect();
            return Err(KinematicsError::Fit(format!(
                "the markers {} on the {} are {ratio:.4} times as far apart in the tracks (median over the samples) as in the mechanism file.{hint}",
                names.join(", "),
                mech.bodies[b].name
            )));
        }
    }
    Ok(())
}

/// Refuse swapped marker labels: if exchanging two markers of one body makes the free rigid
/// fit's residual at least 10 times smaller (and the present one exceeds 1 mm), say which.
fn check_swaps(mech: &Mechanism, obs: &[Vec<Option<MarkerState>>]) -> Result<(), KinematicsError> {
    let stride = (obs.len() / 50).max(1);
    let sub: Vec<&Vec<Option<MarkerState>>> = obs.iter().step_by(stride).collect();
    let cost = |perm: &dyn Fn(usize) -> usize| -> f64 {
        let mut s = 0.0;
        let mut c = 0usize;
        for o in &sub {
            for b in 0..mech.bodies.len() {
                if let Some((rss, k)) = free_body_fit(mech, b, o, perm) {
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
    let nm = mech.markers.len();
    let mut best: Option<(usize, usize, f64)> = None;
    for i in 0..nm {
        for j in (i + 1)..nm {
            if mech.markers[i].body != mech.markers[j].body {
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
            return Err(KinematicsError::Fit(format!(
                "markers {} and {} appear swapped: the rigid fit's RMS residual is {:.2} mm as labelled and {:.3} mm with the two exchanged; fix their labels in the tracks",
                mech.markers[i].name,
                mech.markers[j].name,
                base * 1e3,
                c * 1e3
            )));
        }
    }
    Ok(())
}

/// Fill the free-fit figures of the report and its warnings.
fn free_fit_diagnostics(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    report: &mut FitReport,
) {
    let id = |i: usize| i;
    report.rms_free = free_fit_rms(mech, obs).unwrap_or(f64::NAN);
    report.loop_excess_rms = (report.rms.powi(2) - report.rms_free.powi(2))
        .max(0.0)
        .sqrt();
    // Pins of marker-carrying bodies on bodies that turn about a ground pin (B on the crank).
    let has_markers = |b: usize| mech.markers.iter().any(|m| m.body == b);
    for j in &mech.joints {
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
            let ground_pin = mech.joints.iter().find_map(|g| match &g.kind {
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
                    let (_, _, (r, phi)) = free_body_pose(mech, mb, o, &id)?;
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
                    mech.bodies[mb].name,
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

/// The markers' RMS residual from sums of squares and counts: per marker (m; NaN for a marker
/// never measured) and over all markers, m per coordinate pair.
pub(crate) fn marker_rms(
    mech: &Mechanism,
    sum2: &[f64],
    cnt: &[usize],
) -> (Vec<(String, f64)>, f64) {
    let rms = |s: f64, c: usize| {
        if c > 0 {
            (s / c as f64).sqrt()
        } else {
            f64::NAN
        }
    };
    let per_marker = mech
        .markers
        .iter()
        .enumerate()
        .map(|(i, mk)| (mk.name.clone(), rms(sum2[i], cnt[i])))
        .collect();
    (per_marker, rms(sum2.iter().sum(), cnt.iter().sum()))
}
