//! Gauss-Newton on the free numbers, the truncated singular value decomposition of its step,
//! and the estimates' covariance by the sandwich with Bartlett weights (crate documentation).

use nalgebra::{DMatrix, DVector};

use flexbench_mechanism::sensitivity::OriginMotion;
use flexbench_signal::butterworth::Design;

use crate::equations::{self, Equation, Rows};
use crate::{
    read_at, EquationFit, Estimate, Identification, IdentifyError, MeasuredColumn, Settings,
};

/// Singular values below this share of the largest (of the column-scaled Jacobian) are the
/// numerical null space.
const RANK_TOLERANCE: f64 = 1e-8;

/// A free number is determined when the recording pins it to this share of its file value at
/// one standard deviation.
const DETERMINED_SHARE: f64 = 0.5;

/// The motion identified from: its times (s), the bodies about their origins, and the cutoff
/// both sides of the equations are low-passed at (Hz).
pub(crate) struct Recording<'a> {
    pub t: &'a [f64],
    pub motion: &'a [Vec<OriginMotion>],
    pub cutoff_hz: Option<f64>,
}

/// The fewest samples of the equations per unknown: fewer, and nothing is determined.
const MIN_SAMPLES_PER_UNKNOWN: usize = 10;

/// The fewest samples of a run of consecutive rows of one equation that is low-passed; shorter
/// runs are left out.
const MIN_RUN: usize = 16;

/// `rows` with each equation's residuals and derivatives low-passed along each run of
/// consecutive samples (zero-lag Butterworth, fourth order, at `hz`; the sampling rate from the
/// median step of `t`); runs shorter than [`MIN_RUN`] left out.
fn low_passed(rows: Rows, neq: usize, t: &[f64], hz: f64) -> Result<Rows, IdentifyError> {
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(f64::total_cmp);
    let dt = steps.get(steps.len() / 2).copied().unwrap_or(f64::NAN);
    let design =
        Design::new(2, hz, 1.0 / dt).map_err(|source| IdentifyError::LowPass { hz, source })?;
    let ncol = rows.j.ncols();
    let (mut r, mut j, mut at) = (Vec::new(), Vec::new(), Vec::new());
    for e in 0..neq {
        let mine: Vec<usize> = (0..rows.at.len()).filter(|&k| rows.at[k].1 == e).collect();
        let runs = mine.chunk_by(|&a, &b| rows.at[b].0 == rows.at[a].0 + 1);
        for run in runs.filter(|run| run.len() >= MIN_RUN) {
            let rf = design.filtfilt(&run.iter().map(|&k| rows.r[k]).collect::<Vec<_>>());
            let cols: Vec<Vec<f64>> = (0..ncol)
                .map(|c| design.filtfilt(&run.iter().map(|&k| rows.j[(k, c)]).collect::<Vec<_>>()))
                .collect();
            for (i, &k) in run.iter().enumerate() {
                r.push(rf[i]);
                j.extend(cols.iter().map(|c| c[i]));
                at.push(rows.at[k]);
            }
        }
    }
    Ok(Rows {
        r: nalgebra::DVector::from_vec(r),
        j: DMatrix::from_row_slice(at.len(), ncol, &j),
        at,
    })
}

/// Huber's constant: residuals within this many robust standard deviations count in full
/// (95 % efficiency under normal errors), those beyond in proportion (an encoder's glitch, a
/// spin the model does not hold).
const HUBER: f64 = 1.345;

/// The rows at one set of values, with each equation's residual scales.
pub(crate) struct Weighted {
    pub(crate) rows: Rows,
    /// Per equation: its RMS residual, N or N m.
    rms: Vec<f64>,
    /// Per equation: its residuals' robust standard deviation (1.4826 times their median
    /// absolute value), N or N m.
    pub(crate) scale: Vec<f64>,
    /// The file with these values.
    file: String,
}

/// The rows at `values` and `offsets`, and their weights.
pub(crate) fn weighted(
    text: &str,
    origin: &str,
    rec: &Recording,
    (measured, eqs): (&[MeasuredColumn], &[Equation]),
    (keys, values, offsets): (&[String], &[f64], &[Option<f64>]),
) -> Result<Weighted, IdentifyError> {
    let (file, read) = read_at(text, origin, keys, values)?;
    let free = equations::free(&read, keys)?;
    let mut rows = equations::rows(&read, &free, eqs, rec.motion, (measured, offsets))?;
    if let Some(hz) = rec.cutoff_hz {
        rows = low_passed(rows, eqs.len(), rec.t, hz)?;
    }
    let mut ss = vec![(0.0, 0usize); eqs.len()];
    for (k, &(_, e)) in rows.at.iter().enumerate() {
        ss[e].0 += rows.r[k] * rows.r[k];
        ss[e].1 += 1;
    }
    let rms: Vec<f64> = ss
        .iter()
        .map(|&(s, n)| (s / n.max(1) as f64).sqrt())
        .collect();
    let scale = (0..eqs.len())
        .map(|e| {
            let mut a: Vec<f64> = (0..rows.at.len())
                .filter(|&k| rows.at[k].1 == e)
                .map(|k| rows.r[k].abs())
                .collect();
            a.sort_by(f64::total_cmp);
            let mad = a.get(a.len() / 2).copied().unwrap_or(0.0);
            (1.4826 * mad).max(1e-9 * rms[e]).max(1e-300)
        })
        .collect();
    Ok(Weighted {
        rows,
        rms,
        scale,
        file,
    })
}

/// Huber's weight of a residual `u` robust standard deviations from zero.
pub(crate) fn huber_weight(u: f64) -> f64 {
    (HUBER / u.abs().max(1e-300)).min(1.0)
}

/// The weighted Jacobian and residuals (rows divided by their equation's robust scale, and
/// by Huber's weight's root: one step of iteratively reweighted least squares), the held
/// unknowns' columns zeroed.
pub(crate) fn scaled(w: &Weighted, held: &[bool]) -> (DMatrix<f64>, DVector<f64>) {
    let mut j = w.rows.j.clone();
    let mut r = w.rows.r.clone();
    for (k, &(_, e)) in w.rows.at.iter().enumerate() {
        let u = r[k] / w.scale[e];
        let s = huber_weight(u).sqrt() / w.scale[e];
        j.row_mut(k).scale_mut(s);
        r[k] *= s;
    }
    for (c, &h) in held.iter().enumerate() {
        if h {
            j.column_mut(c).fill(0.0);
        }
    }
    (j, r)
}

/// The truncated pseudo-inverse of `j`'s normal matrix, with columns scaled to unit norm: the
/// pseudo-inverse (unscaled back), the numerical rank, the condition of the kept part, and per
/// column its share in the null space.
pub(crate) fn normal_inverse(j: &DMatrix<f64>) -> (DMatrix<f64>, usize, f64, Vec<f64>) {
    let n = j.ncols();
    let norms: Vec<f64> = (0..n).map(|c| j.column(c).norm()).collect();
    let d = DVector::from_iterator(
        n,
        norms.iter().map(|&x| if x > 0.0 { 1.0 / x } else { 0.0 }),
    );
    let js = j * DMatrix::from_diagonal(&d);
    let svd = js.svd(false, true);
    let vt = svd.v_t.expect("V^T asked for");
    let s = &svd.singular_values;
    let smax = s.max();
    let mut inv = DMatrix::zeros(n, n);
    let mut null = vec![0.0; n];
    let (mut rank, mut smin) = (0, f64::INFINITY);
    for (i, &si) in s.iter().enumerate() {
        let v = vt.row(i).transpose();
        if smax > 0.0 && si > RANK_TOLERANCE * smax {
            inv += &v * v.transpose() / (si * si);
            rank += 1;
            smin = smin.min(si);
        } else {
            for c in 0..n {
                null[c] += v[c] * v[c];
            }
        }
    }
    // Columns that are all zero (held, or moving nothing) are wholly in the null space.
    for c in 0..n {
        if norms[c] == 0.0 {
            null[c] = 1.0;
        }
    }
    let dd = DMatrix::from_diagonal(&d);
    (&dd * inv * &dd, rank, smax / smin, null)
}

/// Andrews' (1991) bandwidth for Bartlett weights from the AR(1) fit of `series` (its
/// lag-one autocorrelation rho): 1.1447 (alpha n)^(1/3), alpha = 4 rho^2 / ((1 - rho)^2
/// (1 + rho)^2); at most a third of the series.
pub fn hac_bandwidth(series: &[f64]) -> usize {
    let n = series.len();
    if n < 3 {
        return 0;
    }
    let mean = series.iter().sum::<f64>() / n as f64;
    let (mut c0, mut c1) = (0.0, 0.0);
    for k in 0..n {
        c0 += (series[k] - mean).powi(2);
        if k + 1 < n {
            c1 += (series[k] - mean) * (series[k + 1] - mean);
        }
    }
    let rho = if c0 > 0.0 {
        (c1 / c0).clamp(-0.99, 0.99)
    } else {
        0.0
    };
    let alpha = 4.0 * rho * rho / ((1.0 - rho).powi(2) * (1.0 + rho).powi(2));
    ((1.1447 * (alpha * n as f64).cbrt()).ceil() as usize).min(n / 3)
}

/// The sandwich covariance B Omega B of the least-squares step, B the normal matrix's
/// pseudo-inverse, Omega the scores' long-run covariance with Bartlett weights over the
/// samples (each sample's score the sum over its rows of J_row^T r_row); and the bandwidth.
fn sandwich(
    j: &DMatrix<f64>,
    r: &DVector<f64>,
    at: &[(usize, usize)],
    b: &DMatrix<f64>,
) -> (DMatrix<f64>, usize) {
    let n = j.ncols();
    let samples = at.iter().map(|a| a.0 + 1).max().unwrap_or(0);
    let mut g = vec![DVector::<f64>::zeros(n); samples];
    let mut sum_r = vec![0.0; samples];
    for (k, &(t, _)) in at.iter().enumerate() {
        g[t] += j.row(k).transpose() * r[k];
        sum_r[t] += r[k];
    }
    let bandwidth = hac_bandwidth(&sum_r);
    let mut omega = DMatrix::zeros(n, n);
    for gt in &g {
        omega += gt * gt.transpose();
    }
    for l in 1..=bandwidth {
        let w = 1.0 - l as f64 / (bandwidth + 1) as f64;
        for t in 0..samples.saturating_sub(l) {
            let c = &g[t] * g[t + l].transpose();
            omega += (&c + c.transpose()) * w;
        }
    }
    (b * omega * b, bandwidth)
}

/// `values` and `offsets` moved by `frac` of `step` (the numbers', then the free offsets').
fn moved(
    (values, offsets): (&[f64], &[Option<f64>]),
    step: &DVector<f64>,
    frac: f64,
) -> (Vec<f64>, Vec<Option<f64>>) {
    let v: Vec<f64> = values
        .iter()
        .enumerate()
        .map(|(c, v)| v + frac * step[c])
        .collect();
    let mut k = values.len();
    let o = offsets
        .iter()
        .map(|o| {
            o.map(|x| {
                k += 1;
                x + frac * step[k - 1]
            })
        })
        .collect();
    (v, o)
}

/// Huber's loss of `w`'s residuals with the equations' scales `scale`: u^2 / 2 within
/// [`HUBER`], HUBER |u| - HUBER^2 / 2 beyond, u the residual in scales.
fn cost(w: &Weighted, scale: &[f64]) -> f64 {
    w.rows
        .at
        .iter()
        .zip(w.rows.r.iter())
        .map(|(&(_, e), r)| {
            let u = (r / scale[e]).abs();
            match u <= HUBER {
                true => 0.5 * u * u,
                false => HUBER * u - 0.5 * HUBER * HUBER,
            }
        })
        .sum()
}

/// Where Gauss-Newton stopped: the values, the offsets, the rows there, the iterations, and
/// the file's refusal of the last step tried, when it refused one (the data ask for a value
/// beyond the file's limits, as a negative inertia).
struct Converged {
    values: Vec<f64>,
    offsets: Vec<Option<f64>>,
    w: Weighted,
    iterations: usize,
    refused: Option<String>,
}

/// The Gauss-Newton iterations from `values`/`offsets` with the `held` unknowns fixed, each
/// step halved until Huber's loss does not rise and the file accepts the values.
fn gauss_newton(
    text: &str,
    origin: &str,
    rec: &Recording,
    inputs: (&[MeasuredColumn], &[Equation]),
    keys: &[String],
    (values, offsets): (Vec<f64>, Vec<Option<f64>>),
    (held, max_iterations): (&[bool], usize),
) -> Result<Converged, IdentifyError> {
    let w = weighted(text, origin, rec, inputs, (keys, &values, &offsets))?;
    let mut at = Converged {
        values,
        offsets,
        w,
        iterations: 0,
        refused: None,
    };
    while at.iterations < max_iterations {
        at.iterations += 1;
        let (j, r) = scaled(&at.w, held);
        let (b, _, _, _) = normal_inverse(&j);
        let step = -(&b * j.transpose() * &r);
        let base = cost(&at.w, &at.w.scale);
        let (mut frac, mut refused) = (1.0, None);
        let next = loop {
            let (v, o) = moved((&at.values, &at.offsets), &step, frac);
            match weighted(text, origin, rec, inputs, (keys, &v, &o)) {
                Ok(n) if cost(&n, &at.w.scale) <= base * (1.0 + 1e-12) => break Some((v, o, n)),
                Err(IdentifyError::Mechanism(e)) => refused = Some(e.to_string()),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
            if frac <= 1e-6 {
                break None;
            }
            frac *= 0.5;
        };
        at.refused = refused;
        let Some((v, o, n)) = next else {
            return Ok(at);
        };
        let tiny = 1e-10 * at.w.rms.iter().cloned().fold(1e-12, f64::max);
        let small = at
            .values
            .iter()
            .zip(&v)
            .all(|(a, b)| (a - b).abs() <= 1e-10 * a.abs().max(1e-12))
            && at
                .offsets
                .iter()
                .zip(&o)
                .all(|(a, b)| (a.unwrap_or(0.0) - b.unwrap_or(0.0)).abs() <= tiny);
        (at.values, at.offsets, at.w) = (v, o, n);
        if small {
            break;
        }
    }
    Ok(at)
}

/// The free unknown the fit determines least, with why, or None when every one not `held` is
/// determined: first, while the Jacobian's rank is short of the unknowns, the one most in its
/// null space (it moves only with others: held, it fixes their scale); then the one pinned
/// least, beyond [`DETERMINED_SHARE`] of its file value at one standard deviation.
fn worst_undetermined(
    held: &[bool],
    rank: usize,
    null: &[f64],
    (cov, starts): (&DMatrix<f64>, &[f64]),
) -> Option<(usize, String)> {
    let active: Vec<usize> = (0..held.len()).filter(|&c| !held[c]).collect();
    if rank < active.len() {
        let c = *active
            .iter()
            .max_by(|&&a, &&b| null[a].total_cmp(&null[b]))?;
        return Some((
            c,
            format!(
                "it moves only with the others ({:.0} % of it in the equations' null space): held at the file's value, it fixes their scale",
                100.0 * null[c]
            ),
        ));
    }
    let share = |c: usize| cov[(c, c)].max(0.0).sqrt() / starts[c].abs();
    let c = *active
        .iter()
        .filter(|&&c| starts[c] != 0.0)
        .max_by(|&&a, &&b| share(a).total_cmp(&share(b)))?;
    (share(c) > DETERMINED_SHARE).then(|| {
        (
            c,
            format!(
                "the recording pins it only to {:.0} % of its value at one standard deviation",
                100.0 * share(c)
            ),
        )
    })
}

/// The equations' names, for a message.
fn names_of(eqs: &[Equation]) -> String {
    eqs.iter()
        .map(|e| e.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The undetermined unknowns and why, for a message.
fn notes_of(names: &[String], notes: &[Option<String>]) -> String {
    names
        .iter()
        .zip(notes)
        .filter_map(|(n, w)| Some(format!("{n}: {}", w.as_ref()?)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// [`crate::identify`] once its inputs are checked: Gauss-Newton, the undetermined held at the
/// file's values and the rest fitted again, the estimates and the fits.
pub(crate) fn identify_with(
    text: &str,
    origin: &str,
    rec: &Recording,
    (measured, eqs): (&[MeasuredColumn], &[Equation]),
    settings: &Settings,
) -> Result<Identification, IdentifyError> {
    // Long: the steps of one solve in their order (Gauss-Newton, the undetermined held at the
    // file's values and the rest fitted again, the estimates and the fits), sharing the scaled
    // Jacobian.
    let keys = &settings.free;
    let Unknowns {
        names,
        starts,
        file_values,
        offsets0,
    } = unknowns(text, origin, keys, measured)?;
    let before = weighted(
        text,
        origin,
        rec,
        (measured, eqs),
        (keys, &file_values, &offsets0),
    )?;
    enough_samples(&before, rec, &names)?;
    let mut held = vec![false; names.len()];
    let mut notes: Vec<Option<String>> = vec![None; names.len()];
    let mut iterations = 0;
    loop {
        // Held numbers restart at the file's values.
        let values: Vec<f64> = (0..keys.len()).map(|c| file_values[c]).collect();
        let Converged {
            values,
            offsets,
            w,
            iterations: its,
            refused,
        } = gauss_newton(
            text,
            origin,
            rec,
            (measured, eqs),
            keys,
            (values, offsets0.clone()),
            (&held, settings.max_iterations),
        )?;
        iterations += its;
        let (j, r) = scaled(&w, &held);
        let (b, rank, condition, null) = normal_inverse(&j);
        let (cov, bandwidth) = sandwich(&j, &r, &w.rows.at, &b);
        let fitted: Vec<f64> = values
            .iter()
            .copied()
            .chain(offsets.iter().flatten().copied())
            .collect();
        if let Some((c, why)) = worst_undetermined(&held, rank, &null, (&cov, &starts)) {
            held[c] = true;
            notes[c] = Some(why);
            if held.iter().all(|h| *h) {
                return Err(IdentifyError::NothingDetermined(format!(
                    "{} (held against {})",
                    notes_of(&names, &notes),
                    names_of(eqs)
                )));
            }
            continue;
        }
        let estimates = estimates_of((&names, &starts, &fitted), (&held, &notes), &cov);
        let ends = Ends {
            before: &before,
            after: &w,
            eqs,
        };
        let bodies = body_inertia(text, origin, keys, (&fitted, &cov, &held))?;
        let mut out = finish(
            (estimates, &held, &cov),
            (rank, condition, bandwidth, iterations),
            ends,
            bodies,
        );
        out.warnings.extend(refused.map(|why| format!(
            "the data ask for values the file refuses ({why}): the estimates stop at that limit, and their standard deviations do not hold there; a number of the file that is wrong (a mass too small for the gravity moment measured), a measured signal's scale, or a number held that should be free"
        )));
        return Ok(out);
    }
}

/// The unknowns: their names (the free numbers' keys, then `offset of <column>` for each free
/// offset) and starts (the file's values, the given offsets), the free numbers' file values,
/// and each measured column's offset where free.
pub(crate) struct Unknowns {
    pub(crate) names: Vec<String>,
    pub(crate) starts: Vec<f64>,
    pub(crate) file_values: Vec<f64>,
    pub(crate) offsets0: Vec<Option<f64>>,
}

/// [`Unknowns`] of the file `text` with the free numbers `keys` and the measured columns.
pub(crate) fn unknowns(
    text: &str,
    origin: &str,
    keys: &[String],
    measured: &[MeasuredColumn],
) -> Result<Unknowns, IdentifyError> {
    let (_, read) = read_at(text, origin, &[], &[])?;
    let free = equations::free(&read, keys)?;
    let file_values: Vec<f64> = free.entry.iter().map(|p| p.value).collect();
    let offsets0 = measured
        .iter()
        .map(|c| c.free_offset.then_some(c.offset))
        .collect();
    let (names, starts) = keys
        .iter()
        .cloned()
        .zip(file_values.iter().copied())
        .chain(
            measured
                .iter()
                .filter(|c| c.free_offset)
                .map(|c| (format!("offset of {}", c.column), c.offset)),
        )
        .unzip();
    Ok(Unknowns {
        names,
        starts,
        file_values,
        offsets0,
    })
}

/// An error when the equations hold fewer samples than [`MIN_SAMPLES_PER_UNKNOWN`] per
/// unknown (`names`), saying what is not determined and what to give.
fn enough_samples(
    before: &Weighted,
    rec: &Recording,
    names: &[String],
) -> Result<(), IdentifyError> {
    let samples: std::collections::BTreeSet<usize> = before.rows.at.iter().map(|a| a.0).collect();
    let needed = MIN_SAMPLES_PER_UNKNOWN * names.len();
    if samples.len() >= needed {
        return Ok(());
    }
    Err(IdentifyError::NothingDetermined(format!(
        "{}: the recording gives {} samples of the equations ({} of motion; runs shorter than {MIN_RUN} samples are left out of the low-pass), {needed} at least are needed for {} unknowns; give a longer recording (a few cycles of the motion)",
        names.join(", "),
        samples.len(),
        rec.motion.len(),
        names.len()
    )))
}

/// Each unknown's estimate: the fitted value and its standard deviation from `cov`, or the
/// file's value (`starts`) and why where it is held.
fn estimates_of(
    (names, starts, fitted): (&[String], &[f64], &[f64]),
    (held, notes): (&[bool], &[Option<String>]),
    cov: &DMatrix<f64>,
) -> Vec<Estimate> {
    names
        .iter()
        .enumerate()
        .map(|(c, name)| Estimate {
            key: name.clone(),
            file_value: starts[c],
            value: if held[c] { starts[c] } else { fitted[c] },
            sigma: (!held[c]).then(|| cov[(c, c)].max(0.0).sqrt()),
            determined: !held[c],
            why_not: notes[c].clone(),
        })
        .collect()
}

/// The fits' two ends: the rows with the file's values and with the identified ones.
struct Ends<'a> {
    before: &'a Weighted,
    after: &'a Weighted,
    eqs: &'a [Equation],
}

/// Each body's phi about its origin with the file's values and with the identified `values`
/// (the free numbers first in `values`), the standard deviations from `cov` through each free
/// number's d phi.
fn body_inertia(
    text: &str,
    origin: &str,
    keys: &[String],
    (values, cov, held): (&[f64], &DMatrix<f64>, &[bool]),
) -> Result<Vec<crate::BodyInertia>, IdentifyError> {
    let (_, before) = read_at(text, origin, &[], &[])?;
    let (_, after) = read_at(text, origin, keys, &values[..keys.len()])?;
    let free = equations::free(&after, keys)?;
    let (phi0, phi1) = (
        flexbench_mechanism::parameters::body_phi(&before.nominal),
        flexbench_mechanism::parameters::body_phi(&after.nominal),
    );
    Ok(after
        .nominal
        .bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let sigma = std::array::from_fn(|k| {
                let mut var = 0.0;
                for (a, pa) in free.entry.iter().enumerate().filter(|(a, _)| !held[*a]) {
                    for (c, pc) in free.entry.iter().enumerate().filter(|(c, _)| !held[*c]) {
                        var += pa.d_phi[i][k] * cov[(a, c)] * pc.d_phi[i][k];
                    }
                }
                var.max(0.0).sqrt()
            });
            crate::BodyInertia {
                body: b.name.clone(),
                file: phi0[i],
                identified: phi1[i],
                sigma,
            }
        })
        .collect())
}

/// The identification from its parts: the estimates, the correlations of the determined, the
/// equations' fits.
fn finish(
    (estimates, held, cov): (Vec<Estimate>, &[bool], &DMatrix<f64>),
    (rank, condition, bandwidth, iterations): (usize, f64, usize, usize),
    ends: Ends,
    bodies: Vec<crate::BodyInertia>,
) -> Identification {
    let kept: Vec<usize> = (0..held.len()).filter(|&c| !held[c]).collect();
    let correlation = kept
        .iter()
        .map(|&a| {
            kept.iter()
                .map(|&b| cov[(a, b)] / (cov[(a, a)] * cov[(b, b)]).sqrt())
                .collect()
        })
        .collect();
    let fits = ends
        .eqs
        .iter()
        .enumerate()
        .map(|(e, eq)| EquationFit {
            name: eq.name.clone(),
            samples: ends.after.rows.at.iter().filter(|a| a.1 == e).count(),
            rms_before: ends.before.rms[e],
            rms_after: ends.after.rms[e],
        })
        .collect();
    Identification {
        unknowns: held.len(),
        estimates,
        rank,
        condition,
        correlation,
        equations: fits,
        bodies,
        iterations,
        bandwidth,
        file: ends.after.file.clone(),
        warnings: Vec::new(),
    }
}
