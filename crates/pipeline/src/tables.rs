//! The checked tables a stage reads, checked against the mechanism too: the bodies table holds
//! every body of the mechanism, the forces table every column its joints and actuators give.

use std::path::Path;

use flexbench_contracts::{Bodies, Forces};
use flexbench_mechanism::Mechanism;

use crate::PipelineError;

/// The bodies table at `path` (checked by its reader), with a row per sample for every body of
/// `mech`.
pub fn bodies_of(path: &Path, mech: &Mechanism) -> Result<Bodies, PipelineError> {
    let table = flexbench_tables::read_bodies(path)?;
    if let Some(b) = mech.bodies.iter().find(|b| table.body(&b.name).is_none()) {
        let have: Vec<&str> = table.bodies().iter().map(|b| b.name.as_str()).collect();
        return Err(PipelineError::Input(format!(
            "{}: no rows for body '{}' of the mechanism '{}' (the table has {}); give the bodies table the process stage wrote with this mechanism",
            path.display(),
            b.name,
            mech.name,
            have.join(", ")
        )));
    }
    Ok(table)
}

/// The mechanism's state (q, q', q'': each body's centroid and angle, bench frame) at every
/// sample of the bodies table where every body of `mech` was fitted, with the sample's index.
pub fn whole_states(
    mech: &Mechanism,
    bodies: &Bodies,
) -> Vec<(usize, [nalgebra::DVector<f64>; 3])> {
    let n = mech.bodies.len();
    let tables: Vec<_> = mech
        .bodies
        .iter()
        .filter_map(|b| bodies.body(&b.name))
        .collect();
    let mut out = Vec::new();
    'samples: for k in 0..bodies.t().len() {
        let mut v: [nalgebra::DVector<f64>; 3] =
            std::array::from_fn(|_| nalgebra::DVector::zeros(3 * n));
        for (i, m) in tables.iter().enumerate() {
            for (c, col) in m.values.iter().enumerate() {
                let Some(x) = col[k] else {
                    continue 'samples;
                };
                v[c / 3][3 * i + c % 3] = x;
            }
        }
        out.push((k, v));
    }
    out
}

/// The forces table at `path` (checked by its reader), with every column the joints and
/// actuators of `mech` give.
pub fn forces_of(path: &Path, mech: &Mechanism) -> Result<Forces, PipelineError> {
    let table = flexbench_tables::read_forces(path)?;
    if let Some(c) = mech
        .force_columns()
        .into_iter()
        .find(|c| table.column(c).is_none())
    {
        return Err(PipelineError::Input(format!(
            "{}: no column '{c}', which the mechanism '{}' gives (its joints and actuators); give the forces table the process stage wrote with this mechanism",
            path.display(),
            mech.name
        )));
    }
    Ok(table)
}

/// The bodies' motion about their origins (`Mechanism::origin_motion`) at every sample where
/// every body was fitted, and those samples' times (s).
pub(crate) fn origin_motions(
    mech: &Mechanism,
    bodies: &flexbench_contracts::Bodies,
) -> (
    Vec<Vec<flexbench_mechanism::sensitivity::OriginMotion>>,
    Vec<f64>,
) {
    whole_states(mech, bodies)
        .into_iter()
        .map(|(k, [q, qd, qdd])| (mech.origin_motion(&q, &qd, &qdd), bodies.t()[k]))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_contracts::{Column, Table};

    fn bench() -> Mechanism {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mechanisms/wind-pump.toml");
        flexbench_mechanism::file::load(&path).unwrap().mechanism
    }

    /// A forces table without a column the bench's joints give, and a bodies table without one
    /// of its bodies, are refused with the column or body named; whole ones are read.
    #[test]
    fn tables_hold_what_the_mechanism_gives() {
        let mech = bench();
        let dir = tempfile::tempdir().unwrap();
        let mut forces = Table::new("forces");
        forces.push("t", Column::F64(vec![0.0, 0.01])).unwrap();
        for c in mech.force_columns() {
            if c != "C_y" {
                forces
                    .push(&c, Column::OptF64(vec![Some(1.0), Some(2.0)]))
                    .unwrap();
            }
        }
        let [p, _] = flexbench_tables::write_table(&forces, dir.path(), "forces").unwrap();
        let e = forces_of(&p, &mech).unwrap_err().to_string();
        assert!(e.contains("no column 'C_y'"), "{e}");
        forces
            .push("C_y", Column::OptF64(vec![None, Some(0.5)]))
            .unwrap();
        let [p, _] = flexbench_tables::write_table(&forces, dir.path(), "forces").unwrap();
        assert_eq!(
            forces_of(&p, &mech).unwrap().column("C_y").unwrap()[1],
            Some(0.5)
        );

        let mut bodies = Table::new("bodies");
        let names: Vec<String> = mech.bodies.iter().skip(1).map(|b| b.name.clone()).collect();
        bodies
            .push("t", Column::F64(vec![0.0; names.len()]))
            .unwrap();
        bodies.push("body", Column::Str(names.clone())).unwrap();
        for c in flexbench_contracts::motion::BODY_COLUMNS {
            bodies
                .push(c, Column::OptF64(vec![Some(0.0); names.len()]))
                .unwrap();
        }
        let [p, _] = flexbench_tables::write_table(&bodies, dir.path(), "bodies").unwrap();
        let e = bodies_of(&p, &mech).unwrap_err().to_string();
        assert!(e.contains("no rows for body 'crank'"), "{e}");
    }
}
