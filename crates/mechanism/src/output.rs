//! The contract tables (docs/bench.md section 6) built from the mechanism's states.

use flexbench_contracts::{
    Column, ContractError, Table, TrackRow, Tracks, BODY_COLUMNS, BODY_KEYS, MARKER_COLUMNS,
    MARKER_KEYS,
};
use nalgebra::DVector;

use crate::constraints::{body_point, body_point_acc, body_point_vel};
use crate::model::Mechanism;

/// One state of the mechanism: time (s), coordinates, velocities, accelerations.
pub type State<'a> = (f64, &'a DVector<f64>, &'a DVector<f64>, &'a DVector<f64>);

/// A state of the mechanism by reference: q, q', q'' (absolute coordinates, SI).
pub type StateRef<'a> = (&'a DVector<f64>, &'a DVector<f64>, &'a DVector<f64>);

impl Mechanism {
    /// The bodies table: per sample and body, the centroid's position (m), angle (rad),
    /// velocity (m/s), angular velocity (rad/s), acceleration (m/s^2), angular acceleration
    /// (rad/s^2), bench frame.
    pub fn bodies_table(&self, states: &[State]) -> Result<Table, ContractError> {
        let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 10];
        let mut names = Vec::new();
        for (t, q, qd, qdd) in states {
            for (i, b) in self.bodies.iter().enumerate() {
                names.push(b.name.clone());
                let vals = [
                    *t,
                    q[3 * i],
                    q[3 * i + 1],
                    q[3 * i + 2],
                    qd[3 * i],
                    qd[3 * i + 1],
                    qd[3 * i + 2],
                    qdd[3 * i],
                    qdd[3 * i + 1],
                    qdd[3 * i + 2],
                ];
                for (c, v) in cols.iter_mut().zip(vals) {
                    c.push(v);
                }
            }
        }
        let mut it = cols.into_iter();
        let mut v = vec![
            (BODY_KEYS[0], Column::F64(it.next().unwrap_or_default())),
            (BODY_KEYS[1], Column::Str(names)),
        ];
        for name in &BODY_COLUMNS {
            v.push((name, Column::F64(it.next().unwrap_or_default())));
        }
        Table::from_columns("bodies", v)
    }

    /// The markers table from the model: each marker's position, velocity and acceleration
    /// (bench frame, SI) at every state.
    pub fn markers_table(&self, states: &[State]) -> Result<Table, ContractError> {
        let rows = states.iter().flat_map(|(t, q, qd, qdd)| {
            self.markers.iter().map(move |mk| {
                let p = body_point(q, mk.body, mk.local);
                let v = body_point_vel(q, qd, mk.body, mk.local);
                let a = body_point_acc(q, qd, qdd, mk.body, mk.local);
                (mk.name.clone(), [*t, p.x, p.y, v.x, v.y, a.x, a.y])
            })
        });
        markers_table_from(rows)
    }

    /// The markers table from a fitted motion: per sample (every sample of `t`, in order) and
    /// marker, the kinematics of the marker's point under the fitted state `states[k]` (None:
    /// not fitted, written empty), with when given each value's standard deviation in a
    /// `*_sigma` column (`sigma[k]`, as [`Mechanism::marker_kinematics_sigma`] gives it), and the
    /// sample's provenance: `measured` where the marker was seen at that sample (`seen[k][m]`),
    /// `inferred` where the mechanism places it from the other markers, `rejected` where the
    /// sample was not fitted.
    pub fn fitted_markers_table(
        &self,
        t: &[f64],
        states: &[Option<StateRef<'_>>],
        sigma: Option<&[Option<Vec<f64>>]>,
        seen: &[Vec<bool>],
    ) -> Result<Table, ContractError> {
        let nm = self.markers.len();
        let mut cols: Vec<Vec<Option<f64>>> = vec![Vec::new(); 6];
        let mut sig: Vec<Vec<Option<f64>>> = vec![Vec::new(); 6];
        let (mut tt, mut names, mut prov) = (Vec::new(), Vec::new(), Vec::new());
        for (k, &tk) in t.iter().enumerate() {
            let kin = states
                .get(k)
                .copied()
                .flatten()
                .map(|(q, qd, qdd)| self.marker_kinematics(q, qd, qdd));
            let sd = sigma.and_then(|s| s.get(k).cloned().flatten());
            for (m, mk) in self.markers.iter().enumerate() {
                tt.push(tk);
                names.push(mk.name.clone());
                prov.push(
                    match (
                        &kin,
                        seen.get(k).and_then(|s| s.get(m)).copied().unwrap_or(false),
                    ) {
                        (None, _) => "rejected",
                        (Some(_), true) => "measured",
                        (Some(_), false) => "inferred",
                    }
                    .to_string(),
                );
                for c in 0..6 {
                    cols[c].push(kin.as_ref().map(|v| v[6 * m + c]));
                    sig[c].push(
                        sd.as_ref()
                            .filter(|v| v.len() == 6 * nm)
                            .map(|v| v[6 * m + c]),
                    );
                }
            }
        }
        let mut v = vec![
            (MARKER_KEYS[0].to_string(), Column::F64(tt)),
            (MARKER_KEYS[1].to_string(), Column::Str(names)),
        ];
        for (name, c) in MARKER_COLUMNS.iter().zip(cols) {
            v.push((name.to_string(), Column::OptF64(c)));
        }
        if sigma.is_some() {
            for (name, c) in MARKER_COLUMNS.iter().zip(sig) {
                v.push((format!("{name}_sigma"), Column::OptF64(c)));
            }
        }
        v.push(("provenance".to_string(), Column::Str(prov)));
        Table::from_columns("markers", v)
    }

    /// The tracks the markers would give (frame k, t, marker, x, y; no image coordinates).
    pub fn tracks(
        &self,
        states: &[(f64, &DVector<f64>)],
    ) -> Result<Tracks, flexbench_contracts::ContractError> {
        let mut rows = Vec::new();
        for (k, (t, q)) in states.iter().enumerate() {
            for mk in &self.markers {
                let p = body_point(q, mk.body, mk.local);
                rows.push(TrackRow {
                    frame: k as i64,
                    t: *t,
                    marker: mk.name.clone(),
                    u: None,
                    v: None,
                    x: Some(p.x),
                    y: Some(p.y),
                    sigma_px: None,
                    late: None,
                });
            }
        }
        Tracks::new(rows)
    }

    /// The forces table: one row per sample, `t` then [`Mechanism::force_columns`]; a row that
    /// is None (a toggle sample) is written empty.
    pub fn forces_table(
        &self,
        t: &[f64],
        rows: &[Option<Vec<f64>>],
    ) -> Result<Table, ContractError> {
        self.forces_table_with_sigma(t, rows, None)
    }

    /// The forces table with, when given, each force's standard deviation per sample in a
    /// column named after it with `_sigma` (same unit).
    pub fn forces_table_with_sigma(
        &self,
        t: &[f64],
        rows: &[Option<Vec<f64>>],
        sigma: Option<&[Option<Vec<f64>>]>,
    ) -> Result<Table, ContractError> {
        let names = self.force_columns();
        let mut v = vec![("t".to_string(), Column::F64(t.to_vec()))];
        for (c, n) in names.iter().enumerate() {
            v.push((
                n.clone(),
                Column::OptF64(rows.iter().map(|r| r.as_ref().map(|r| r[c])).collect()),
            ));
        }
        if let Some(sig) = sigma {
            for (c, n) in names.iter().enumerate() {
                v.push((
                    format!("{n}_sigma"),
                    Column::OptF64(sig.iter().map(|r| r.as_ref().map(|r| r[c])).collect()),
                ));
            }
        }
        Table::from_columns("forces", v)
    }
}

/// The markers table (the contract's columns) from its rows: each marker's name and its
/// (t, x, y, vx, vy, ax, ay) at one sample (s, m, m/s, m/s^2, bench frame).
pub fn markers_table_from(
    rows: impl IntoIterator<Item = (String, [f64; 7])>,
) -> Result<Table, ContractError> {
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 7];
    let mut names = Vec::new();
    for (name, vals) in rows {
        names.push(name);
        for (c, x) in cols.iter_mut().zip(vals) {
            c.push(x);
        }
    }
    let mut it = cols.into_iter();
    let mut v = vec![
        (MARKER_KEYS[0], Column::F64(it.next().unwrap_or_default())),
        (MARKER_KEYS[1], Column::Str(names)),
    ];
    for name in &MARKER_COLUMNS {
        v.push((name, Column::F64(it.next().unwrap_or_default())));
    }
    Table::from_columns("markers", v)
}
