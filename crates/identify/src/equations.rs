//! The identification's equations at one set of values: per sample, each force the inverse
//! dynamics solves for that has a law (the bench's motor torque and pump force) against its
//! law, and each measured column against the solved force of its name; their residuals and
//! their derivatives in the free numbers of the file (the inverse dynamics' exact
//! sensitivities, `flexbench_mechanism::sensitivity`, less the laws' central differences).

use nalgebra::{DMatrix, DVector};

use flexbench_mechanism::inverse::InverseSample;
use flexbench_mechanism::model::ForceKind;
use flexbench_mechanism::parameters::{FileParameter, FileParameters};
use flexbench_mechanism::sensitivity::OriginMotion;
use flexbench_mechanism::Mechanism;

use crate::{IdentifyError, MeasuredColumn};

/// What an equation holds a solved force against.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// The law of the actuator at this index of the model's forces.
    Law(usize),
    /// The measured column at this index of the measured columns (less its offset when the
    /// offset is free).
    Measured(usize),
}

/// One equation: a force column of the inverse dynamics and what it must equal.
#[derive(Debug, Clone, PartialEq)]
pub struct Equation {
    /// Its name for the record: `pump_force = its law`, `motor_torque = measured torque`.
    pub name: String,
    /// The force column ([`Mechanism::force_columns`] index).
    pub column: usize,
    /// What it is held against.
    pub target: Target,
}

/// Whether an actuator's law is one the recording can be held against: a motor's, a pump's, a
/// joint's or a slide's actuator; a constant torque is a placeholder of the inverse dynamics.
fn has_law(kind: &ForceKind) -> bool {
    matches!(
        kind,
        ForceKind::Motor { .. }
            | ForceKind::Pump { .. }
            | ForceKind::JointTorque { .. }
            | ForceKind::SlideForce { .. }
    )
}

/// The equations of `m` with the measured columns `measured`: one per actuator with a law,
/// one per measured column; an error that names a measured column the forces do not have.
pub fn equations(
    m: &Mechanism,
    measured: &[MeasuredColumn],
) -> Result<Vec<Equation>, IdentifyError> {
    let columns = m.force_columns();
    let mut out = Vec::new();
    for (i, f) in m.forces.iter().enumerate() {
        if f.actuator && has_law(&f.kind) {
            let column = columns.iter().position(|c| *c == f.name).ok_or_else(|| {
                IdentifyError::Input(format!("the actuator {} has no forces column", f.name))
            })?;
            out.push(Equation {
                name: format!("{} = its law", f.name),
                column,
                target: Target::Law(i),
            });
        }
    }
    for (k, c) in measured.iter().enumerate() {
        let column = columns.iter().position(|n| *n == c.column).ok_or_else(|| {
            IdentifyError::Input(format!(
                "the measured column {} is no force of the mechanism; its forces are {}",
                c.column,
                columns.join(", ")
            ))
        })?;
        out.push(Equation {
            name: format!("{} = measured", c.column),
            column,
            target: Target::Measured(k),
        });
    }
    Ok(out)
}

/// The free numbers at one set of values: each as the inverse dynamics' parameter (its index
/// among the sensitivities' columns) or a law's number, with its sides.
pub struct Free<'a> {
    /// Per free number: its parameter (for the sensitivities), or None for a law's number.
    pub parameter: Vec<Option<usize>>,
    /// Per free number: its entry, for the laws' differences.
    pub entry: Vec<&'a FileParameter>,
    /// The parameters among them, in the sensitivities' column order.
    pub parameters: Vec<FileParameter>,
}

/// The free numbers `keys` found in `read` (a parameter or a law's number).
pub fn free<'a>(read: &'a FileParameters, keys: &[String]) -> Result<Free<'a>, IdentifyError> {
    let mut out = Free {
        parameter: Vec::new(),
        entry: Vec::new(),
        parameters: Vec::new(),
    };
    for key in keys {
        if let Some(p) = read.parameters.iter().find(|p| &p.key == key) {
            out.parameter.push(Some(out.parameters.len()));
            out.parameters.push(p.clone());
            out.entry.push(p);
        } else if let Some(p) = read.laws.iter().find(|p| &p.key == key) {
            out.parameter.push(None);
            out.entry.push(p);
        } else {
            return Err(crate::not_free(read, key));
        }
    }
    Ok(out)
}

/// The rows at one set of values: residuals (the solved force less its target) and their
/// derivatives in the free numbers, then in the free offsets; and each row's sample and
/// equation. Toggle samples are left out.
pub struct Rows {
    /// Residuals, N or N m.
    pub r: DVector<f64>,
    /// d r / d (free numbers, then offsets).
    pub j: DMatrix<f64>,
    /// Each row's sample index and equation index.
    pub at: Vec<(usize, usize)>,
}

/// The rows of `eqs` over the samples `motion` with the model `read` and the free numbers
/// `free`; `offsets` the free offsets' current values (per measured column, None when held).
pub fn rows(
    read: &FileParameters,
    free: &Free,
    eqs: &[Equation],
    motion: &[Vec<OriginMotion>],
    (measured, offsets): (&[MeasuredColumn], &[Option<f64>]),
) -> Result<Rows, IdentifyError> {
    let m = &read.nominal;
    let owned: Vec<_> = motion.iter().map(|o| m.centroid_state(o)).collect();
    let states: Vec<_> = owned.iter().map(|(q, qd, qdd)| (q, qd, qdd)).collect();
    let solved =
        m.inverse_dynamics_batch(&states, flexbench_mechanism::inverse::DEFAULT_MAX_CONDITION)?;
    let sens = m.force_sensitivities_solved(&free.parameters, &states, &solved)?;
    let free_offsets: Vec<usize> = (0..offsets.len())
        .filter(|&k| offsets[k].is_some())
        .collect();
    let nfree = free.entry.len();
    let (mut r, mut j, mut at) = (Vec::new(), Vec::new(), Vec::new());
    for (t, ((s, sens), o)) in solved.iter().zip(&sens).zip(motion).enumerate() {
        let (InverseSample::Solved { forces, .. }, Some(sens)) = (s, sens) else {
            continue;
        };
        for (e, eq) in eqs.iter().enumerate() {
            let mut row = vec![0.0; nfree + free_offsets.len()];
            for (c, p) in free.parameter.iter().enumerate() {
                if let Some(p) = p {
                    row[c] = sens[(eq.column, *p)];
                }
            }
            let target = match eq.target {
                Target::Law(f) => {
                    let (q, qd, _) = &owned[t];
                    for (c, entry) in free.entry.iter().enumerate() {
                        let (plus, minus, span) = entry.sides();
                        row[c] -= (law(plus, f, o) - law(minus, f, o)) / span;
                    }
                    m.forces[f].magnitude(q, qd)
                }
                Target::Measured(k) => {
                    let value = measured[k].values[t];
                    if !value.is_finite() {
                        continue;
                    }
                    if let Some(pos) = free_offsets.iter().position(|&x| x == k) {
                        row[nfree + pos] = 1.0;
                    }
                    value - offsets[k].unwrap_or(measured[k].offset)
                }
            };
            r.push(forces[eq.column] - target);
            j.extend(row);
            at.push((t, e));
        }
    }
    let ncol = nfree + free_offsets.len();
    Ok(Rows {
        r: DVector::from_vec(r),
        j: DMatrix::from_row_slice(at.len(), ncol, &j),
        at,
    })
}

/// The law of force `f` of model `m` with its bodies moving as `motion`.
fn law(m: &Mechanism, f: usize, motion: &[OriginMotion]) -> f64 {
    let (q, qd, _) = m.centroid_state(motion);
    m.forces[f].magnitude(&q, &qd)
}
