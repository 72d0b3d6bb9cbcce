//! The mechanism file's `[tolerances]`: the standard uncertainty of the numbers it is least sure
//! of (a rocker weighed, an inertia guessed, a spring read from a catalogue), by the keys
//! [`crate::parameters::file_parameters`] gives them (`mw`, `J3`, `g3[0]`,
//! `"bodies.pendulum.inertia"`, `"joints.axle.friction.viscous"`). A value is one standard
//! deviation in the number's own unit, or a string `"5%"` of the number's value. The forces'
//! bands carry them by the exact sensitivities ([`crate::sensitivity`]), each tolerance taken
//! independent of the others.
//!
//! ```toml
//! [tolerances]
//! mw = 0.02          # kg
//! J3 = "10%"
//! "g3[0]" = 0.002    # m
//! ```

use nalgebra::DVector;

use crate::inverse::InverseSample;
use crate::parameters::{file_parameters, FileParameter, NotAParameter};
use crate::MechanismError;

/// The table's name in the mechanism file.
pub const TABLE: &str = crate::parameters::TOLERANCES_TABLE;

pub use crate::model::Tolerance;

/// What a tolerance's value gives: a standard deviation in the number's unit, or a share of
/// its value.
enum Given {
    Absolute(f64),
    Percent(f64),
}

fn key_err(key: &str, reason: String) -> MechanismError {
    MechanismError::Key {
        key: format!("{TABLE}.{key}"),
        reason,
    }
}

/// One value of the table, checked: a finite number of zero or more, or a string "p%".
fn given(key: &str, v: &toml::Value) -> Result<Given, MechanismError> {
    let how = "give the number's standard uncertainty, zero or more, in its own unit (mw = 0.02) or as a share of its value (J3 = \"10%\")";
    let g = match v {
        toml::Value::Float(x) => Given::Absolute(*x),
        toml::Value::Integer(i) => Given::Absolute(*i as f64),
        toml::Value::String(s) => match s.trim().strip_suffix('%').map(|p| p.trim().parse()) {
            Some(Ok(p)) => Given::Percent(p),
            _ => {
                return Err(key_err(
                    key,
                    format!("\"{s}\" is not a share like \"5%\": {how}"),
                ))
            }
        },
        other => return Err(key_err(key, format!("{other} is not a number: {how}"))),
    };
    let x = match g {
        Given::Absolute(x) | Given::Percent(x) => x,
    };
    if !x.is_finite() || x < 0.0 {
        return Err(key_err(
            key,
            format!("{v} is negative or not finite: a tolerance is a standard deviation; {how}"),
        ));
    }
    Ok(g)
}

/// The `[tolerances]` of the mechanism file's `text` (`origin` names it in errors), each
/// checked: a negative or non-numeric value, or a key that is no parameter of the forces or a
/// law, is an error that says why. Empty when the file has no such table.
pub fn read(text: &str, origin: &str) -> Result<Vec<Tolerance>, MechanismError> {
    let root: toml::Table = toml::from_str(text).map_err(|e| MechanismError::Unreadable {
        path: origin.into(),
        hint: " as a mechanism",
        source: flexbench_contracts::SharedCause::new(e),
    })?;
    let Some(table) = root.get(TABLE) else {
        return Ok(Vec::new());
    };
    let Some(table) = table.as_table() else {
        return Err(key_err(
            "",
            "is not a table: write [tolerances] with one line per number (mw = 0.02)".into(),
        ));
    };
    let given: Vec<(String, Given)> = table
        .iter()
        .map(|(k, v)| Ok((k.clone(), given(k, v)?)))
        .collect::<Result<_, MechanismError>>()?;
    if given.is_empty() {
        return Ok(Vec::new());
    }
    let read = file_parameters(text, origin)?;
    given
        .into_iter()
        .map(|(key, g)| {
            let (parameter, solved_for) = match read.parameters.iter().find(|p| p.key == key) {
                Some(p) => (p.clone(), None),
                None => {
                    let p = read
                        .laws
                        .iter()
                        .find(|p| p.key == key)
                        .ok_or_else(|| key_err(&key, read.why_not_a_parameter(&key)))?;
                    let force = read.others.iter().find_map(|(k, why)| match why {
                        NotAParameter::SolvedFor(f) if *k == key => Some(f.clone()),
                        _ => None,
                    });
                    (p.clone(), force)
                }
            };
            let sigma = match g {
                Given::Absolute(s) => s,
                Given::Percent(p) => 0.01 * p * parameter.value.abs(),
            };
            Ok(Tolerance {
                key,
                sigma,
                parameter,
                solved_for,
            })
        })
        .collect()
}

/// A key as the table writes it: bare when it is letters, digits, `_` and `-`, quoted otherwise
/// (`"g3[0]"`, `"bodies.pendulum.inertia"`).
fn written_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match bare {
        true => key.to_string(),
        false => toml::Value::String(key.into()).to_string(),
    }
}

/// The key of a `key = value` line, when the line is one.
fn line_key(line: &str) -> Option<String> {
    let t: toml::Table = toml::from_str(line).ok()?;
    let mut keys = t.keys();
    let k = keys.next()?.clone();
    keys.next().is_none().then_some(k)
}

/// The mechanism file's `text` with the tolerances `sigmas` (key, standard deviation in the
/// number's unit) set in its `[tolerances]` table: each key's line replaced where the table has
/// it, added under the table's header otherwise, the table added at the end when the file has
/// none; the rest of the text unchanged. The text is read back and must hold exactly those
/// values and the others' as they were; it is written anew from its TOML otherwise.
pub fn with_tolerances(
    text: &str,
    origin: &str,
    sigmas: &[(&str, f64)],
) -> Result<String, MechanismError> {
    let mut root: toml::Table = toml::from_str(text).map_err(|e| MechanismError::Unreadable {
        path: origin.into(),
        hint: " as a mechanism",
        source: flexbench_contracts::SharedCause::new(e),
    })?;
    let table = root
        .entry(TABLE)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(table) = table.as_table_mut() else {
        return Err(key_err("", "is not a table".into()));
    };
    for (k, s) in sigmas {
        table.insert(k.to_string(), toml::Value::Float(*s));
    }
    let wanted = toml::Value::Table(root.clone());
    let line = |k: &str, s: f64| format!("{} = {s:e}", written_key(k));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let header = lines.iter().position(|l| l.trim() == format!("[{TABLE}]"));
    let edited = match header {
        None => {
            let mut t = text.trim_end().to_string();
            t.push_str(
                "\n\n# Standard uncertainties of the file's numbers (flexbench identify).\n",
            );
            t.push_str(&format!("[{TABLE}]\n"));
            for (k, s) in sigmas {
                t.push_str(&line(k, *s));
                t.push('\n');
            }
            t
        }
        Some(h) => {
            let end = (h + 1..lines.len())
                .find(|&i| lines[i].trim_start().starts_with('['))
                .unwrap_or(lines.len());
            let mut added = Vec::new();
            for (k, s) in sigmas {
                match (h + 1..end).find(|&i| line_key(&lines[i]).as_deref() == Some(*k)) {
                    Some(i) => lines[i] = line(k, *s),
                    None => added.push(line(k, *s)),
                }
            }
            lines.splice(h + 1..h + 1, added);
            lines.join("\n") + "\n"
        }
    };
    match toml::from_str::<toml::Value>(&edited) {
        Ok(v) if v == wanted => Ok(edited),
        _ => toml::to_string(&wanted).map_err(|e| MechanismError::Unwritable {
            path: origin.into(),
            source: flexbench_contracts::SharedCause::new(e),
        }),
    }
}

impl crate::Mechanism {
    /// The tolerances that move the forces (those of no law solved for, of a sigma above zero),
    /// as parameters and standard deviations: taken once for every sample's
    /// [`Mechanism::forces_sigma_of`].
    pub fn moving_tolerances(&self) -> (Vec<FileParameter>, Vec<f64>) {
        self.tolerances
            .iter()
            .filter(|t| t.solved_for.is_none() && t.sigma > 0.0)
            .map(|t| (t.parameter.clone(), t.sigma))
            .unzip()
    }

    /// Each force's standard deviation from the file's tolerances (N or N m, the force
    /// columns' order), at the samples' centroid states `states` whose inverse dynamics is
    /// `solved`: sqrt(sum_p (df/dp sigma_p)^2), the tolerances independent, to first order (the
    /// forces are linear in the inertial parameters, exactly so in a mass, a centroid's
    /// product m c and an inertia). None at a toggle; None for every sample when no tolerance
    /// moves the forces.
    pub fn forces_sigma_tolerances(
        &self,
        states: &[(&DVector<f64>, &DVector<f64>, &DVector<f64>)],
        solved: &[InverseSample],
    ) -> Result<Option<Vec<Option<Vec<f64>>>>, MechanismError> {
        let (parameters, sigma) = self.moving_tolerances();
        if parameters.is_empty() {
            return Ok(None);
        }
        self.forces_sigma_of((&parameters, &sigma), states, solved)
            .map(Some)
    }

    /// [`Mechanism::forces_sigma_tolerances`] with the tolerances given
    /// ([`Mechanism::moving_tolerances`]): per sample, None at a toggle.
    pub fn forces_sigma_of(
        &self,
        (parameters, sigma): (&[FileParameter], &[f64]),
        states: &[(&DVector<f64>, &DVector<f64>, &DVector<f64>)],
        solved: &[InverseSample],
    ) -> Result<Vec<Option<Vec<f64>>>, MechanismError> {
        let sens = self.force_sensitivities_solved(parameters, states, solved)?;
        Ok(sens
            .into_iter()
            .map(|s| {
                let s = s?;
                Some(
                    (0..s.nrows())
                        .map(|f| {
                            let v: f64 =
                                (0..s.ncols()).map(|c| (s[(f, c)] * sigma[c]).powi(2)).sum();
                            v.sqrt()
                        })
                        .collect(),
                )
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench_with(table: &str) -> String {
        let text = include_str!("../../../mechanisms/wind-pump.toml");
        format!("{text}\n[tolerances]\n{table}\n")
    }

    #[test]
    fn tolerances_are_read_absolute_or_as_a_share() {
        let t = read(&bench_with("mw = 0.02\nJ3 = \"10%\"\nk = 500"), "bench").unwrap();
        let by = |k: &str| t.iter().find(|x| x.key == k).unwrap();
        assert_eq!(by("mw").sigma, 0.02);
        assert!((by("J3").sigma - 0.0004).abs() < 1e-15);
        assert_eq!(by("k").solved_for.as_deref(), Some("pump_force"));
        assert_eq!(by("mw").solved_for, None);
    }

    #[test]
    fn a_negative_tolerance_or_one_on_no_parameter_is_refused() {
        for (table, words) in [
            ("mw = -0.02", "negative"),
            ("J3 = \"-5%\"", "negative"),
            ("J3 = \"ten%\"", "not a share"),
            ("mw = [1.0]", "not a number"),
            ("stiffness = 1.0", "no such number"),
            ("l2 = 0.001", "a length of the geometry"),
            ("E = 1e9", "neither the forces nor any law"),
        ] {
            let err = read(&bench_with(table), "bench").unwrap_err().to_string();
            assert!(err.contains(words), "{table}: {err}");
            assert!(err.contains("tolerances."), "{table}: {err}");
        }
    }

    #[test]
    fn tolerances_are_written_into_the_file_keeping_its_lines() {
        let text = include_str!("../../../mechanisms/wind-pump.toml");
        let with = with_tolerances(text, "bench", &[("mw", 0.01), ("g3[0]", 0.002)]).unwrap();
        assert!(with.starts_with(text.trim_end()), "the file's lines kept");
        let t = read(&with, "bench").unwrap();
        assert_eq!((t[0].key.as_str(), t[0].sigma), ("g3[0]", 0.002));
        assert_eq!((t[1].key.as_str(), t[1].sigma), ("mw", 0.01));
        // Again: the table's lines replaced and added, its comment kept.
        let again = with_tolerances(&with, "bench", &[("mw", 0.03), ("J3", 1e-4)]).unwrap();
        assert!(again.contains("(flexbench identify)"));
        let t = read(&again, "bench").unwrap();
        let by = |k: &str| t.iter().find(|x| x.key == k).unwrap().sigma;
        assert_eq!((by("mw"), by("J3"), by("g3[0]")), (0.03, 1e-4, 0.002));
        assert_eq!(
            again.matches("mw =").count(),
            2,
            "the file's mw and its tolerance"
        );
    }

    /// The bands from a tolerance on the weight's mass against the forces of the file with the
    /// mass one sigma up and down (the forces are linear in it): equal to 1e-9 of the force's
    /// peak at 20 samples of a simulated turn; a tolerance on the pump's spring (a law solved
    /// for) moves no force.
    #[test]
    fn the_bands_from_a_tolerance_are_the_forces_change_by_it() {
        use crate::simulate::SimConfig;
        let text = bench_with("mw = 0.1\nk = 1000.0");
        let m = crate::file::parse(&text, "bench").unwrap().mechanism;
        let up = crate::file::parse(&text.replace("mw = 1.5 ", "mw = 1.6 "), "up")
            .unwrap()
            .mechanism;
        let cfg = SimConfig {
            duration: 0.43,
            rate: 47.0,
            settle: 1.0,
            ..Default::default()
        };
        let sim = m.simulate(&cfg, &mut |_| {}).unwrap();
        let owned: Vec<_> = sim
            .samples
            .iter()
            .map(|s| (s.q.clone(), s.qd.clone(), s.qdd.clone()))
            .collect();
        let states: Vec<_> = owned.iter().map(|(a, b, c)| (a, b, c)).collect();
        let solved = m.inverse_dynamics_batch(&states, 1e12).unwrap();
        let sigma = m
            .forces_sigma_tolerances(&states, &solved)
            .unwrap()
            .unwrap();
        let mut worst = 0.0f64;
        let mut peak = 0.0f64;
        for ((q, qd, qdd), (s, sig)) in owned.iter().zip(solved.iter().zip(&sigma)) {
            // The same bodies' poses: the centroids of the heavier weight's model.
            let o = m.origin_motion(q, qd, qdd);
            let (uq, uqd, uqdd) = up.centroid_state(&o);
            let (InverseSample::Solved { forces: f0, .. }, Some(sig)) = (s, sig) else {
                panic!("toggle");
            };
            let InverseSample::Solved { forces: f1, .. } =
                up.inverse_dynamics(&uq, &uqd, &uqdd, 1e12).unwrap()
            else {
                panic!("toggle");
            };
            for j in 0..f0.len() {
                peak = peak.max(f0[j].abs());
                worst = worst.max(((f1[j] - f0[j]).abs() - sig[j]).abs());
            }
        }
        assert!(worst < 1e-9 * peak, "{worst} of {peak}");
    }
}
