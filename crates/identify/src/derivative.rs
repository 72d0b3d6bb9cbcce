//! The estimates' change when the motion they were identified from changes a little (a bench
//! frame moved within its uncertainty, say), or a number of the file held at its value moves by
//! its tolerance (Schmidt's consider analysis; Tapley, Schutz and Born 2004, ch. 6): the
//! weighted least-squares step at the identification's values with its weights held (each
//! row's Huber weight and its equation's robust scale, as the identification ended),
//! d theta = -(J^T W J)^+ J^T W (r_moved - r), first order in the residuals' change at fixed
//! values (the rows are linear in the free numbers). The reweighting is held because it is not smooth in the motion (each equation's
//! median-based scale, the rows crossing Huber's threshold): estimates identified afresh from
//! a motion moved by a tenth of the frame's standard deviation jumped by up to 1 % of k on two
//! of five renderings, where their iterations were within 1e-5 of their end (the slower one
//! stopped at 30 iterations, its last step 1.6e-6 of the values, shrinking by 0.82 a step).

use nalgebra::DVector;

use crate::solve::{huber_weight, normal_inverse, scaled, unknowns, weighted, Recording, Weighted};
use crate::{Identification, IdentifyError, MeasuredColumn, Settings};

/// The change of `id`'s estimates (in its order; zero for those held) when the motion `rec`
/// they were identified from (the file `text`, `origin` naming it, the measured columns and
/// the equations as identified) becomes `moved` at the same samples, and the file `text`
/// becomes `moved_text`.
pub(crate) fn change(
    (text, moved_text): (&str, &str),
    origin: &str,
    (rec, moved): (&Recording, &Recording),
    (measured, eqs): (&[MeasuredColumn], &[crate::equations::Equation]),
    settings: &Settings,
    id: &Identification,
) -> Result<Vec<f64>, IdentifyError> {
    let keys = &settings.free;
    let u = unknowns(text, origin, keys, measured)?;
    if u.names.len() != id.estimates.len() {
        return Err(IdentifyError::Input(format!(
            "{} unknowns for {} estimates: the identification was made with other free numbers",
            u.names.len(),
            id.estimates.len()
        )));
    }
    let values: Vec<f64> = id.estimates[..keys.len()].iter().map(|e| e.value).collect();
    let mut free_offsets = id.estimates[keys.len()..].iter().map(|e| e.value);
    let offsets: Vec<Option<f64>> = u
        .offsets0
        .iter()
        .map(|o| o.and_then(|_| free_offsets.next()))
        .collect();
    let held: Vec<bool> = id.estimates.iter().map(|e| !e.determined).collect();
    let at = (keys.as_slice(), values.as_slice(), offsets.as_slice());
    let base = weighted(text, origin, rec, (measured, eqs), at)?;
    let next = weighted(moved_text, origin, moved, (measured, eqs), at)?;
    if base.rows.at != next.rows.at {
        return Err(IdentifyError::Input(
            "the moved motion or file gives other rows than the recording's (samples or equations differ): give the motion at the same samples and the file with the same laws".into(),
        ));
    }
    let (j, _) = scaled(&base, &held);
    let (b, _, _, _) = normal_inverse(&j);
    let dr = held_weights(&base).component_mul(&(&next.rows.r - &base.rows.r));
    let step: DVector<f64> = -(&b * j.transpose() * dr);
    Ok(step.iter().copied().collect())
}

/// Each row's weight as the identification ended: the root of its Huber weight over its
/// equation's robust scale (as [`scaled`] weighs the rows).
fn held_weights(w: &Weighted) -> DVector<f64> {
    DVector::from_iterator(
        w.rows.r.len(),
        w.rows
            .at
            .iter()
            .zip(w.rows.r.iter())
            .map(|(&(_, e), &r)| huber_weight(r / w.scale[e]).sqrt() / w.scale[e]),
    )
}
