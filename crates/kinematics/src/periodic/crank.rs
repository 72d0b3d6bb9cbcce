//! The crank angle first: its speed, its harmonics chosen by BIC, and its refit as a Fourier series
//! of time.

use super::*;

/// The crank's refit, the periodic fit's first step: the samples fitted (`idx`), the crank's
/// path and the configurations after its refit, its fit, the smoothed motion's residual sum of
/// squares and coordinate count, and the turns covered.
pub(super) struct CrankFirst {
    pub(super) idx: Vec<usize>,
    pub(super) theta: Vec<CrankAngle>,
    pub(super) start_q: Trajectory,
    pub(super) crank: CrankFit,
    pub(super) rss0: f64,
    pub(super) ncoord: usize,
    pub(super) turns: f64,
}

/// The crank's mean speed (rad/s) as the periodic refit of the smoothed motion `start` finds it
/// ([`periodic_refit`]'s first step, whose speed its forces' harmonics are simulated at): for
/// choosing those harmonics ahead of the refit. Errors as the refit does.
pub fn crank_speed(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    start: &[FitSample],
) -> Result<f64, KinematicsError> {
    Ok(crank_first(mech, t, obs, start, None)?.crank.coef[1])
}

/// [`periodic_refit`]'s checks and first step, the crank's refit ([`CrankFirst`]; its ripple's
/// harmonics `fixed` when given, by BIC otherwise).
pub(super) fn crank_first(
    mech: &Mechanism,
    t: &[f64],
    obs: &[Vec<Option<MarkerState>>],
    start: &[FitSample],
    fixed: Option<usize>,
) -> Result<CrankFirst, KinematicsError> {
    if t.len() != start.len() {
        return Err(KinematicsError::Fit(format!(
            "the periodic fit got {} times for {} samples",
            t.len(),
            start.len()
        )));
    }
    let nd = mech.drivers.len();
    if nd < 2 || !matches!(mech.drivers[0].coordinate, Coordinate::Angle { .. }) {
        return Err(KinematicsError::Fit("the periodic fit needs a first driving coordinate that is an angle (the crank) and at least one other".into()));
    }
    let idx: Vec<usize> = (0..start.len())
        .filter(|&k| start[k].state.is_some())
        .collect();
    let theta = first_driver_path(mech, start, &idx);
    let (lo, hi) = theta
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x.0), b.max(x.0))
        });
    let turns = (hi - lo) / std::f64::consts::TAU;
    if turns < 2.0 {
        return Err(KinematicsError::Fit(format!(
            "the periodic fit needs at least two turns of the {}; the samples cover {turns:.2}",
            mech.drivers[0].name
        )));
    }
    let start_q: Vec<DVector<f64>> = idx
        .iter()
        .filter_map(|&k| start[k].state.as_ref().map(|s| s.0.clone()))
        .collect();
    let (rss0, ncoord) = rss_and_count(mech, obs, &idx, &start_q);
    // The crank first: its angle as a steady turn with a periodic ripple in time.
    let times: Vec<f64> = idx.iter().map(|&k| t[k]).collect();
    let (theta, start_q, crank) =
        crank_refit(mech, obs, (&idx, &times), &start_q, &theta, (ncoord, fixed)).ok_or_else(
            || {
                KinematicsError::Fit(format!(
                    "the periodic fit of the {} did not converge",
                    mech.drivers[0].name
                ))
            },
        )?;
    Ok(CrankFirst {
        idx,
        theta,
        start_q,
        crank,
        rss0,
        ncoord,
        turns,
    })
}

/// The first driver's (the crank's) value, rate and acceleration at the samples `idx` of the
/// smoothed motion.
pub(super) fn first_driver_path(
    mech: &Mechanism,
    start: &[FitSample],
    idx: &[usize],
) -> Vec<CrankAngle> {
    let c0 = &mech.drivers[0].coordinate;
    idx.iter()
        .filter_map(|&k| {
            let (q, qd, qdd) = start[k].state.as_ref()?;
            let n = q.len();
            Some((
                c0.value(q),
                c0.gradient(q, n).dot(qd),
                c0.gradient(q, n).dot(qdd) + c0.quadratic(q, qd),
            ))
        })
        .collect()
}

/// The crank's mean speed (rad/s): the least-squares slope of its smoothed angle against
/// time; None when it is zero or not finite.
pub(super) fn mean_speed(times: &[f64], theta: &[CrankAngle]) -> Option<f64> {
    let t0 = *times.first()?;
    let n = times.len() as f64;
    let (su, sth) = times
        .iter()
        .zip(theta)
        .fold((0.0, 0.0), |(a, b), (t, th)| (a + (t - t0), b + th.0));
    let (mu, mth) = (su / n, sth / n);
    let (num, den) = times.iter().zip(theta).fold((0.0, 0.0), |(a, b), (t, th)| {
        (a + (t - t0 - mu) * (th.0 - mth), b + (t - t0 - mu).powi(2))
    });
    let speed = num / den;
    (speed.is_finite() && speed != 0.0).then_some(speed)
}

/// The number of the crank ripple's harmonics (0 to `cap`) with the least BIC on the markers
/// linearised about the smoothed motion (`lin`), the trend at `speed`; None when no number fits.
pub(super) fn crank_harmonics_by_bic(
    lin: &Normals,
    times: &[f64],
    speed: f64,
    cap: usize,
    ncoord: usize,
) -> Option<usize> {
    let t0 = *times.first()?;
    let nc = ncoord as f64;
    let mut best: Option<(f64, usize)> = None;
    for k in 0..=cap {
        let p = 2 + 2 * k;
        if 4 * p > ncoord {
            break;
        }
        let bases: Vec<DVector<f64>> = times
            .iter()
            .map(|t| trend_harmonic_basis(t - t0, speed, k)[0].clone())
            .collect();
        let Some((_, rss, _)) = lin.solve_basis(bases.as_slice()) else {
            continue;
        };
        let bic = nc * (rss.max(1e-300) / nc).ln() + p as f64 * nc.ln();
        if best.is_none_or(|b| bic < b.0) {
            best = Some((bic, k));
        }
    }
    best.map(|b| b.1)
}

/// The crank's refit ([`CrankFit`]): the mean speed from the smoothed angle, the ripple's
/// harmonics by BIC on the markers linearised about the smoothed motion, then Gauss-Newton
/// (the other drivers held), the speed updated from the fitted trend and the fit repeated.
/// Returns the crank's (theta, theta', theta'') per sample, the configurations, the fit.
pub(super) fn crank_refit(
    mech: &Mechanism,
    obs: &[Vec<Option<MarkerState>>],
    (idx, times): (&[usize], &[f64]),
    start_q: &[DVector<f64>],
    theta: &[(f64, f64, f64)],
    (ncoord, fixed): (usize, Option<usize>),
) -> Option<(Vec<CrankAngle>, Trajectory, CrankFit)> {
    let nd = mech.drivers.len();
    let t0 = *times.first()?;
    let mut speed = mean_speed(times, theta)?;
    let lin = driver_normals(mech, obs, idx, start_q, 0..1).ok()?;
    let turns = (theta.last()?.0 - theta.first()?.0).abs() / std::f64::consts::TAU;
    let cap = MAX_CRANK_HARMONICS.min(resolvable_harmonics(times.len(), turns));
    let k = match fixed {
        Some(k) => k,
        None => crank_harmonics_by_bic(&lin, times, speed, cap, ncoord)?,
    };
    let mut qs = start_q.to_vec();
    let mut fit = None;
    let rss_at = |qs: &[DVector<f64>]| markers_rss(mech, obs, idx, qs);
    for _round in 0..2 {
        let bases: Vec<DVector<f64>> = times
            .iter()
            .map(|t| trend_harmonic_basis(t - t0, speed, k)[0].clone())
            .collect();
        let assemble = |qs: &[DVector<f64>], c: &DVector<f64>| -> Option<Vec<DVector<f64>>> {
            let items: Vec<(&DVector<f64>, &DVector<f64>)> = qs.iter().zip(&bases).collect();
            map_samples(&items, |(q, b)| {
                let mut values = vec![b.dot(c)];
                values.extend((1..nd).map(|j| mech.drivers[j].coordinate.value(q)));
                mech.assemble_from(q, &values).ok()
            })
            .into_iter()
            .collect()
        };
        // Start: the series fitted to the smoothed angle itself (valid where the smoother
        // is); then Gauss-Newton on the markers.
        let thetas: Vec<f64> = theta.iter().map(|th| th.0).collect();
        let (start, _) = series_fit(bases.as_slice(), &thetas)?;
        if let Some(q) = assemble(&qs, &start) {
            qs = q;
        }
        let target = |qs: &[DVector<f64>]| -> Option<DVector<f64>> {
            let lin = driver_normals(mech, obs, idx, qs, 0..1).ok()?;
            lin.solve_basis(bases.as_slice())?.0.into_iter().next()
        };
        let (coef, reached) = damped_gauss_newton(start, qs, 12, &target, &assemble, &rss_at)?;
        qs = reached;
        fit = Some(CrankFit {
            t0,
            speed,
            harmonics: k,
            coef,
        });
        // The fitted trend is the mean speed: rebuild the ripple's basis on it.
        let f = fit.as_ref()?;
        if (f.coef[1] - speed).abs() <= 1e-9 * speed.abs() {
            break;
        }
        speed = f.coef[1];
    }
    let fit = fit?;
    let theta_new = times.iter().map(|&t| fit.at(t)).collect();
    Some((theta_new, qs, fit))
}
