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
    let design = Design::new(2, hz, 1.0 / dt)
        .map_err(|e| IdentifyError::Input(format!("the equations' low-pass at {hz} Hz: {e}")))?;
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

/// The weighted rows at one set of values, each equation's residual divided by its RMS.
struct Weighted {
    rows: Rows,
    /// Per equation: its RMS residual, N or N m.
    rms: Vec<f64>,
    /// The file with these values.
    file: String,
}

/// The rows at `values` and `offsets`, and their weights.
fn weighted(
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
    let rms = ss
        .iter()
        .map(|&(s, n)| (s / n.max(1) as f64).sqrt())
        .collect();
    Ok(Weighted { rows, rms, file })
}

/// The weighted Jacobian and residuals (rows divided by their equation's RMS, with a floor),
/// the held unknowns' columns zeroed.
fn scaled(w: &Weighted, held: &[bool]) -> (DMatrix<f64>, DVector<f64>) {
    let mut j = w.rows.j.clone();
    let mut r = w.rows.r.clone();
    for (k, &(_, e)) in w.rows.at.iter().enumerate() {
        let s = 1.0 / w.rms[e].max(1e-12);
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
fn normal_inverse(j: &DMatrix<f64>) -> (DMatrix<f64>, usize, f64, Vec<f64>) {
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

/// The Gauss-Newton iterations from `values`/`offsets` with the `held` unknowns fixed: the
/// final values and offsets, the weighted rows there, and the iterations made.
#[allow(clippy::type_complexity)]
fn gauss_newton(
    text: &str,
    origin: &str,
    rec: &Recording,
    inputs: (&[MeasuredColumn], &[Equation]),
    keys: &[String],
    (mut values, mut offsets): (Vec<f64>, Vec<Option<f64>>),
    (held, max_iterations): (&[bool], usize),
) -> Result<(Vec<f64>, Vec<Option<f64>>, Weighted, usize), IdentifyError> {
    let free_offsets: Vec<usize> = (0..offsets.len())
        .filter(|&k| offsets[k].is_some())
        .collect();
    let mut iterations = 0;
    loop {
        let w = weighted(text, origin, rec, inputs, (keys, &values, &offsets))?;
        if iterations == max_iterations {
            return Ok((values, offsets, w, iterations));
        }
        let (j, r) = scaled(&w, held);
        let (b, _, _, _) = normal_inverse(&j);
        let step = -(&b * j.transpose() * &r);
        iterations += 1;
        let mut small = true;
        for (c, v) in values.iter_mut().enumerate() {
            small &= step[c].abs() <= 1e-10 * v.abs().max(1e-12);
            *v += step[c];
        }
        for (pos, &k) in free_offsets.iter().enumerate() {
            let s = step[values.len() + pos];
            small &= s.abs() <= 1e-10 * w.rms.iter().cloned().fold(1e-12, f64::max);
            if let Some(o) = offsets[k].as_mut() {
                *o += s;
            }
        }
        if small {
            let w = weighted(text, origin, rec, inputs, (keys, &values, &offsets))?;
            return Ok((values, offsets, w, iterations));
        }
    }
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
    let keys = &settings.free;
    let (_, read) = read_at(text, origin, &[], &[])?;
    let free = equations::free(&read, keys)?;
    let file_values: Vec<f64> = free.entry.iter().map(|p| p.value).collect();
    let offsets0: Vec<Option<f64>> = measured
        .iter()
        .map(|c| c.free_offset.then_some(c.offset))
        .collect();
    let mut names: Vec<String> = keys.clone();
    let mut starts = file_values.clone();
    for c in measured.iter().filter(|c| c.free_offset) {
        names.push(format!("offset of {}", c.column));
        starts.push(c.offset);
    }
    let before = weighted(
        text,
        origin,
        rec,
        (measured, eqs),
        (keys, &file_values, &offsets0),
    )?;
    let mut held = vec![false; names.len()];
    let mut notes: Vec<Option<String>> = vec![None; names.len()];
    let mut iterations = 0;
    loop {
        // Held numbers restart at the file's values.
        let values: Vec<f64> = (0..keys.len()).map(|c| file_values[c]).collect();
        let (values, offsets, w, its) = gauss_newton(
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
                    eqs.iter()
                        .map(|e| e.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            continue;
        }
        let estimates = names
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
            .collect();
        let kept: Vec<usize> = (0..names.len()).filter(|&c| !held[c]).collect();
        let correlation = kept
            .iter()
            .map(|&a| {
                kept.iter()
                    .map(|&b| cov[(a, b)] / (cov[(a, a)] * cov[(b, b)]).sqrt())
                    .collect()
            })
            .collect();
        let fits = eqs
            .iter()
            .enumerate()
            .map(|(e, eq)| EquationFit {
                name: eq.name.clone(),
                samples: w.rows.at.iter().filter(|a| a.1 == e).count(),
                rms_before: before.rms[e],
                rms_after: w.rms[e],
            })
            .collect();
        return Ok(Identification {
            estimates,
            rank,
            unknowns: names.len(),
            condition,
            correlation,
            equations: fits,
            iterations,
            bandwidth,
            file: w.file,
        });
    }
}
