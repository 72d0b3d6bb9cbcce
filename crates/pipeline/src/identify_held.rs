//! The file's tolerances on the numbers the identification holds: their share of the
//! estimates' standard deviations (Schmidt's consider analysis; Tapley, Schutz and Born 2004,
//! ch. 6). A number held at the file's value (the rocker's arm weighed, its inertia guessed)
//! that is off by its tolerance moves the estimates: the free numbers take up what the held one
//! leaves in the equations. Each held number of the file's `[tolerances]` is moved by its
//! standard deviation sigma_h and the estimates' change d_h taken with the identification's
//! weights held (`flexbench_identify::change_with_file`: exact for a mass, an inertia or a
//! law's number, in which the equations are linear; first order in a centroid); their variance
//! from the held numbers is sum_h d_h^2, the tolerances independent as the forces' bands take
//! them. Neither the residuals' bootstrap nor the calibration's share sees it: every replicate
//! holds the same file.
//!
//! The identified file keeps the held numbers' tolerances beside the estimates' standard
//! deviations, each independent: processed with it, the forces' bands count the held number
//! twice, through the estimates' share and its own, where the estimates move to make up for it
//! (the correlation is left out: conservative by up to that share).

use flexbench_identify::{Identification, MeasuredColumn, Settings};
use flexbench_mechanism::sensitivity::OriginMotion;
use serde::{Deserialize, Serialize};

use crate::PipelineError;

/// One held number of the file's `[tolerances]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldNumber {
    /// Its key in the file.
    pub key: String,
    /// Its value in the file (its unit).
    pub value: f64,
    /// Its tolerance: one standard deviation (its unit).
    pub sigma: f64,
}

/// One estimate's share of the held numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldShareEstimate {
    /// Its key in the file.
    pub key: String,
    /// Its standard deviation from the held numbers' tolerances (its unit).
    pub sigma: f64,
    /// Its change with each held number moved by its tolerance (its unit, in
    /// [`HeldShare::numbers`]' order).
    pub per_number: Vec<f64>,
}

/// The held numbers' share: the numbers and each determined estimate's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldShare {
    /// The held numbers with a tolerance above zero, as the file gives them.
    pub numbers: Vec<HeldNumber>,
    /// Per determined free number (the offsets of measured columns left out).
    pub estimates: Vec<HeldShareEstimate>,
}

/// The share of the tolerances of the numbers the identification `first` held (the mechanism
/// `mech` read from the file `text`, `origin` naming it, identified from the motion `motion` at
/// times `t` with `settings` and the measured columns `measured` at those times): None when the
/// file gives no tolerance above zero to a number it holds.
pub(crate) fn held_share(
    mech: &flexbench_mechanism::Mechanism,
    (text, origin): (&str, &str),
    (t, motion): (&[f64], &[Vec<OriginMotion>]),
    first: &Identification,
    (settings, measured): (&Settings, &[MeasuredColumn]),
) -> Result<Option<HeldShare>, PipelineError> {
    let numbers: Vec<HeldNumber> = mech
        .tolerances
        .iter()
        .filter(|tol| tol.sigma > 0.0 && !settings.free.contains(&tol.key))
        .map(|tol| HeldNumber {
            key: tol.key.clone(),
            value: tol.parameter.value,
            sigma: tol.sigma,
        })
        .collect();
    if numbers.is_empty() {
        return Ok(None);
    }
    let mut changes: Vec<Vec<f64>> = Vec::with_capacity(numbers.len());
    for n in &numbers {
        let moved = flexbench_mechanism::parameters::with_values(
            text,
            origin,
            &[(n.key.as_str(), n.value + n.sigma)],
        )?;
        changes.push(flexbench_identify::change_with_file(
            (text, &moved),
            origin,
            t,
            motion,
            measured,
            settings,
            first,
        )?);
    }
    let estimates = crate::identify_frame::per_estimate(first, &changes)
        .into_iter()
        .map(|(key, sigma, per_number)| HeldShareEstimate {
            key,
            sigma,
            per_number,
        })
        .collect();
    Ok(Some(HeldShare { numbers, estimates }))
}

/// The identification `id`'s standard deviations with the held numbers' share `share` added in
/// quadrature (each estimate's by its key).
pub(crate) fn apply(id: &mut Identification, share: &HeldShare) {
    crate::identify_frame::add_in_quadrature(
        id,
        share.estimates.iter().map(|s| (s.key.as_str(), s.sigma)),
    );
}

/// The held number that moves the estimate `key` most, with its change (its unit): what the
/// command's line and the report name.
pub fn largest<'a>(share: &'a HeldShare, key: &str) -> Option<(&'a str, f64)> {
    let e = share.estimates.iter().find(|e| e.key == key)?;
    e.per_number
        .iter()
        .zip(&share.numbers)
        .max_by(|a, b| a.0.abs().total_cmp(&b.0.abs()))
        .map(|(d, n)| (n.key.as_str(), *d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest mover is found by its absolute change, and an estimate without a share has
    /// none.
    #[test]
    fn the_largest_mover_is_named() {
        let share = HeldShare {
            numbers: ["m3", "J3"]
                .iter()
                .map(|k| HeldNumber {
                    key: k.to_string(),
                    value: 1.0,
                    sigma: 0.1,
                })
                .collect(),
            estimates: vec![HeldShareEstimate {
                key: "mw".into(),
                sigma: 5.0,
                per_number: vec![3.0, -4.0],
            }],
        };
        assert_eq!(largest(&share, "mw"), Some(("J3", -4.0)));
        assert_eq!(largest(&share, "k"), None);
    }
}
