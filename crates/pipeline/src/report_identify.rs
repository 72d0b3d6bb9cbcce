//! The report's identification notes (a run with `[identify] enabled = true`): the identified
//! numbers with their 2-sigma and what the recording leaves undetermined; the forces'
//! sensitivities to every parameter of the mechanism file (RMS change per 10 %, as % of each
//! force's peak); and the forces, the comparison with the simulation and the comparison with the
//! rig's measurement before and after the identification (the process and compare stages run
//! again with the identified file).

use std::path::{Path, PathBuf};

use flexbench_mechanism::Mechanism;
use flexbench_report::page::{Note, RunPage};

use crate::compare::CompareRecord;
use crate::compare_measured::MeasuredRecord;
use crate::identify::IdentifyRecord;
use crate::{PipelineError, StageRecord, StageWarning};

/// The identify stage's folder and the stages run again with the identified file.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentifiedDirs {
    /// The identify stage's (identify.json, sensitivities, the identified mechanism file).
    pub identify: PathBuf,
    /// The process stage's run with the identified file.
    pub process: PathBuf,
    /// The compare stage's run with the identified file, when the run compares.
    pub compare: Option<PathBuf>,
}

/// The identification's three notes, from its folders and the process and compare stages'
/// folders before it (`process`, `compare`).
pub(crate) fn identify_notes(
    page: &mut RunPage,
    dirs: &IdentifiedDirs,
    process: &Path,
    compare: Option<&Path>,
    mech: &Mechanism,
) -> Result<Vec<StageWarning>, PipelineError> {
    let record = IdentifyRecord::read(&dirs.identify.join(crate::folders::IDENTIFY_RECORD))?;
    estimates_note(page, &record);
    sensitivity_note(page, &record, mech);
    let forces = force_changes(process, &dirs.process, mech)?;
    let mut rows = forces;
    if let (Some(before), Some(after)) = (compare, &dirs.compare) {
        rows.extend(compare_changes(before, after)?);
    }
    page.note(
        Note::new("Before and after the identification")
            .text(format!(
                "The process and compare stages run again with {} (written by the identify stage beside its record): each force's RMS change as % of its peak; the comparison's NRMSE with the simulation and RMS difference from the rig's measurement, with the mechanism file and with the identified one.",
                record.identified_file
            ))
            .table(&["quantity", "unit", "with the file", "identified", "change"], rows),
    );
    let warnings = record.identification.warnings.iter();
    Ok(warnings
        .map(|w| StageWarning {
            stage: "identify".into(),
            warning: w.clone(),
        })
        .collect())
}

/// The forces' band shares (the tracks' noise, the file's tolerances, the bench frame's
/// uncertainty, all together), when the tolerances or the frame's uncertainty move the forces.
pub(crate) fn band_shares_note(page: &mut RunPage, process: &crate::process::ProcessRecord) {
    if process.band_shares.is_empty() {
        return;
    }
    let rows = process
        .band_shares
        .iter()
        .map(|b| {
            vec![
                b.force.clone(),
                unit(&b.force).into(),
                b.tracks.map_or("-".into(), |x| format!("{:.4}", 2.0 * x)),
                b.parameters
                    .map_or("-".into(), |x| format!("{:.4}", 2.0 * x)),
                b.calibration
                    .map_or("-".into(), |x| format!("{:.4}", 2.0 * x)),
                format!("{:.4}", 2.0 * b.combined),
            ]
        })
        .collect();
    page.note(
        Note::new("The forces' bands, share by share")
            .text("Each force's 2-sigma band (RMS over the samples) from the tracks' noise, from the mechanism file's [tolerances] carried by the exact sensitivities, from the bench frame's uncertainty (the calibration's clicks, board corners and intrinsics, carried by finite differences through the estimate), and all combined (taken independent), as the forces table's sigma columns hold it.")
            .table(
                &["force", "unit", "tracks' noise", "file's tolerances", "bench frame", "combined"],
                rows,
            ),
    );
}

/// The estimates (value, 2-sigma, change from the file's) and each equation's fit.
fn estimates_note(page: &mut RunPage, r: &IdentifyRecord) {
    // Long: one note's table rows and sentences, in the order the page shows them.
    let id = &r.identification;
    let rows = id
        .estimates
        .iter()
        .map(|e| {
            let change = match e.file_value {
                0.0 => "-".to_string(),
                f => format!("{:+.2}", 100.0 * (e.value - f) / f.abs()),
            };
            vec![
                e.key.clone(),
                format!("{:.6}", e.file_value),
                format!("{:.6}", e.value),
                e.sigma.map_or("-".into(), |s| format!("{:.3e}", 2.0 * s)),
                change,
                match &e.why_not {
                    None => "determined".into(),
                    Some(w) => format!("held at the file's value: {w}"),
                },
            ]
        })
        .collect();
    let fits = id
        .equations
        .iter()
        .map(|q| {
            vec![
                q.name.clone(),
                q.samples.to_string(),
                format!("{:.4}", q.rms_before),
                format!("{:.4}", q.rms_after),
            ]
        })
        .collect();
    let refined = r.refined.as_ref().map_or(String::new(), |f| {
        format!(
            " The recording was processed again with the identified values ({} pass(es); the periodic refit's least harmonics {} -> {}).",
            f.passes.len(),
            f.harmonics_floor_given,
            f.passes.last().map_or(f.harmonics_floor_given, |p| p.harmonics_floor)
        )
    });
    let boot = r.bootstrap.as_ref().map_or(String::new(), |b| {
        let refused: Vec<&str> = b
            .estimates
            .iter()
            .filter(|e| e.refused.is_some())
            .map(|e| e.key.as_str())
            .collect();
        let but = match refused.is_empty() {
            true => String::new(),
            false => format!(" (but {}: the file refuses the corrected value)", refused.join(", ")),
        };
        format!(
            " The values are corrected by a parametric bootstrap of {} replicates{but} (the bench simulated at {:.4} rad/s, the markers' errors {}), and their 2 sigma hold its spread.",
            b.replicates, b.simulated_speed_rad_s, b.noise
        )
    });
    let (frame, held) = (frame_sentence(r), held_sentence(r));
    let said = match id.warnings.is_empty() {
        true => String::new(),
        false => format!(" Warnings: {}", id.warnings.join("; ")),
    };
    let filter = r.cutoff_hz.map_or("not low-passed".to_string(), |hz| {
        format!("both sides low-passed at {hz} Hz")
    });
    page.note(
        Note::new("Identified parameters")
            .text(format!(
                "{} numbers of {} identified from {} samples of the processed motion ({filter}): rank {} of {} unknowns, condition {:.3e}, {} Gauss-Newton iterations; 2 sigma from the sandwich covariance with Bartlett weights over {} samples.{refined}{boot}{frame}{held}{said}",
                id.estimates.len(),
                r.mechanism,
                r.samples,
                id.rank,
                id.unknowns,
                id.condition,
                id.iterations,
                id.bandwidth
            ))
            .table(
                &["number", "file", "identified", "2 sigma", "change (%)", "status"],
                rows,
            )
            .table(
                &["equation", "samples", "RMS residual before", "after"],
                fits,
            ),
    );
}

/// The note's sentence on the bench frame's share of the standard deviations (empty without it).
fn frame_sentence(r: &IdentifyRecord) -> String {
    r.frame.as_ref().map_or(String::new(), |f| {
        let shares: Vec<String> = f
            .estimates
            .iter()
            .map(|e| format!("{} {:.4e}", e.key, e.sigma))
            .collect();
        format!(
            " Their sigma also carries the bench frame's uncertainty (the calibration's, along {} directions, to first order): {}.",
            f.directions,
            shares.join(", ")
        )
    })
}

/// The note's sentence on the held numbers' share of the standard deviations (empty without it).
fn held_sentence(r: &IdentifyRecord) -> String {
    r.held.as_ref().map_or(String::new(), |h| {
        let shares: Vec<String> = h
            .estimates
            .iter()
            .map(|e| {
                let most = crate::identify_held::largest(h, &e.key)
                    .map_or(String::new(), |(k, _)| format!(", most from {k}"));
                format!("{} {:.4e}{most}", e.key, e.sigma)
            })
            .collect();
        let numbers: Vec<&str> = h.numbers.iter().map(|n| n.key.as_str()).collect();
        format!(
            " Their sigma also carries the file's tolerances on the numbers held ({}: each moved by its tolerance, the estimates' change to first order): {}. The identified file keeps those tolerances beside the estimates' as independent; the forces processed with it count them twice where the estimates make up for a held number (conservative).",
            numbers.join(", "),
            shares.join(", ")
        )
    })
}

/// The forces' sensitivities as a matrix: one row per parameter (largest effect first), one
/// column per force, each cell the RMS change per 10 % of the parameter as % of the force's
/// peak.
fn sensitivity_note(page: &mut RunPage, r: &IdentifyRecord, mech: &Mechanism) {
    let forces = mech.force_columns();
    let mut params: Vec<(String, f64, Vec<f64>)> = Vec::new();
    for s in &r.sensitivities {
        let Some(f) = forces.iter().position(|c| *c == s.force) else {
            continue;
        };
        if params.last().is_none_or(|p| p.0 != s.parameter) {
            params.push((s.parameter.clone(), s.value, vec![0.0; forces.len()]));
        }
        if let Some(p) = params.last_mut() {
            p.2[f] = s.percent_of_peak;
        }
    }
    let largest = |p: &(String, f64, Vec<f64>)| p.2.iter().fold(0.0f64, |a, &b| a.max(b));
    params.sort_by(|a, b| largest(b).total_cmp(&largest(a)));
    let rows = params
        .iter()
        .map(|(key, value, cells)| {
            let mut row = vec![key.clone(), format!("{value:.6}")];
            row.extend(cells.iter().map(|c| format!("{c:.2}")));
            row
        })
        .collect();
    let mut header = vec!["parameter", "value"];
    header.extend(forces.iter().map(String::as_str));
    page.note(
        Note::new("Which parameters matter for which force")
            .text("Each force's RMS change over the recording for a change of 10 % of each parameter of the mechanism file, as % of the force's peak (exact: the inverse dynamics is linear in the bodies' inertial parameters); the file's numbers the forces do not depend on are listed in identify.json.")
            .table(&header, rows),
    );
}

/// Per force: its RMS change between the two process folders, as % of its peak with the file.
fn force_changes(
    before: &Path,
    after: &Path,
    mech: &Mechanism,
) -> Result<Vec<Vec<String>>, PipelineError> {
    let a = crate::tables::forces_of(
        &crate::folders::ProcessedFolder::new(before).table(crate::folders::ProcessedTable::Forces),
        mech,
    )?;
    let b = crate::tables::forces_of(
        &crate::folders::ProcessedFolder::new(after).table(crate::folders::ProcessedTable::Forces),
        mech,
    )?;
    let column = |f: &flexbench_contracts::Forces, name: &str| {
        f.columns()
            .iter()
            .find(|(c, _)| c == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut rows = Vec::new();
    for name in mech.force_columns() {
        let (x, y) = (column(&a, &name), column(&b, &name));
        let (mut ss, mut n, mut peak) = (0.0, 0usize, 0.0f64);
        for (xi, yi) in x.iter().zip(&y) {
            if let (Some(xi), Some(yi)) = (xi, yi) {
                ss += (yi - xi).powi(2);
                n += 1;
                peak = peak.max(xi.abs());
            }
        }
        let rms = (ss / n.max(1) as f64).sqrt();
        let peak_after = y.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        rows.push(vec![
            format!("{name}: peak magnitude"),
            unit(&name).into(),
            format!("{peak:.3}"),
            format!("{peak_after:.3}"),
            format!(
                "RMS change {:.3} % of the peak",
                100.0 * rms / peak.max(f64::MIN_POSITIVE)
            ),
        ]);
    }
    Ok(rows)
}

/// The comparison's figures before and after: each simulated quantity's NRMSE, each measured
/// quantity's RMS difference.
fn compare_changes(before: &Path, after: &Path) -> Result<Vec<Vec<String>>, PipelineError> {
    let mut rows = Vec::new();
    let (sb, sa) = (
        before.join(crate::folders::SUMMARY),
        after.join(crate::folders::SUMMARY),
    );
    if sb.exists() && sa.exists() {
        let (b, a) = (CompareRecord::read(&sb)?, CompareRecord::read(&sa)?);
        for (qb, qa) in b.quantities.iter().zip(&a.quantities) {
            rows.push(vec![
                format!("{}: NRMSE against the simulation", qb.quantity),
                "%".into(),
                format!("{:.3}", 100.0 * qb.nrmse),
                format!("{:.3}", 100.0 * qa.nrmse),
                format!("{:+.3}", 100.0 * (qa.nrmse - qb.nrmse)),
            ]);
        }
    }
    let (mb, ma) = (
        before.join(crate::folders::MEASURED_RECORD),
        after.join(crate::folders::MEASURED_RECORD),
    );
    if mb.exists() && ma.exists() {
        let (b, a) = (MeasuredRecord::read(&mb)?, MeasuredRecord::read(&ma)?);
        for (qb, qa) in b.quantities.iter().zip(&a.quantities) {
            rows.push(vec![
                format!("{}: RMS difference from the measured", qb.quantity),
                qb.unit.clone(),
                format!("{:.4}", qb.c.rms_difference),
                format!("{:.4}", qa.c.rms_difference),
                format!("{:+.4}", qa.c.rms_difference - qb.c.rms_difference),
            ]);
        }
    }
    Ok(rows)
}

/// A forces column's unit: the contract's, else N for a joint's component and N or N m for an
/// actuator's effort (a slide's force or a revolute joint's torque).
fn unit(column: &str) -> &'static str {
    match flexbench_contracts::units::unit_of("forces", column) {
        Some(u) => u,
        None if column.ends_with("_x") || column.ends_with("_y") => "N",
        None => "N or N m",
    }
}
