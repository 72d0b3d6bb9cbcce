//! The contract tables of a coupled simulation: the markers (on an elastic body they move with
//! its deformation), the bodies (each frame's rigid pose, as the rigid model's centroid
//! coordinates), the liaison forces from the multipliers, and the elastic coordinates.

use flexbench_contracts::{Column, Table, TrackRow, Tracks};
use flexbench_mechanism::model::{BodyRef, ForceKind, JointKind};
use nalgebra::{DVector, Vector2};

use crate::simulate::FlexSample;
use crate::system::{Attach, Constraint, System};

/// A marker's kinematics: position (m), velocity (m/s), acceleration (m/s^2), bench frame.
pub type MarkerState = [Vector2<f64>; 3];

impl System {
    /// Every marker's position, velocity and acceleration at a sample, in the file's order.
    pub fn marker_states(&self, s: &FlexSample) -> Vec<MarkerState> {
        self.mechanism
            .markers
            .iter()
            .map(|mk| {
                let k = mk.body;
                let shape = &self.bodies[k].points[&format!("marker:{}", mk.name)];
                let a = Attach {
                    body: Some(k),
                    point: shape.clone(),
                };
                let st = self.state(k, &s.p, &s.pd);
                let o = self.offsets[k];
                let nk = self.bodies[k].ncoords();
                let j = self.bodies[k].point_jacobian(shape, &st);
                let v = &j * s.pd.rows(o, nk);
                let acc = &j * s.pdd.rows(o, nk);
                let av = self.bodies[k].point_quadratic(shape, &st);
                [
                    self.position(&a, &s.p),
                    Vector2::new(v[0], v[1]),
                    Vector2::new(acc[0] + av.x, acc[1] + av.y),
                ]
            })
            .collect()
    }

    /// The tracks the markers would give (frame k, t, marker, x, y).
    pub fn tracks(
        &self,
        samples: &[FlexSample],
    ) -> Result<Tracks, flexbench_contracts::ContractError> {
        let mut rows = Vec::new();
        for (k, s) in samples.iter().enumerate() {
            for (mk, st) in self.mechanism.markers.iter().zip(self.marker_states(s)) {
                rows.push(TrackRow {
                    frame: k as i64,
                    t: s.t,
                    marker: mk.name.clone(),
                    u: None,
                    v: None,
                    x: Some(st[0].x),
                    y: Some(st[0].y),
                    sigma_px: None,
                    late: None,
                });
            }
        }
        Tracks::new(rows)
    }

    /// The markers table (the contract's columns).
    pub fn markers_table(
        &self,
        samples: &[FlexSample],
    ) -> Result<Table, flexbench_contracts::ContractError> {
        let rows = samples.iter().flat_map(|s| {
            let names = self.mechanism.markers.iter().map(|mk| mk.name.clone());
            names.zip(self.marker_states(s)).map(move |(n, st)| {
                (
                    n,
                    [s.t, st[0].x, st[0].y, st[1].x, st[1].y, st[2].x, st[2].y],
                )
            })
        });
        flexbench_mechanism::output::markers_table_from(rows)
    }

    /// The rigid model's (q, q', q'') of a sample: each body's frame as its centroid's pose.
    pub fn shadow_state(&self, s: &FlexSample) -> (DVector<f64>, DVector<f64>, DVector<f64>) {
        let (q, qd) = self.shadow(&s.p, &s.pd);
        let mut qdd = DVector::zeros(q.len());
        for (k, b) in self.mechanism.bodies.iter().enumerate() {
            let o = self.offsets[k];
            let arm = flexbench_mechanism::rot(q[3 * k + 2], b.centroid - self.bodies[k].origin);
            let (w, e) = (s.pd[o + 2], s.pdd[o + 2]);
            qdd[3 * k] = s.pdd[o] - e * arm.y - w * w * arm.x;
            qdd[3 * k + 1] = s.pdd[o + 1] + e * arm.x - w * w * arm.y;
            qdd[3 * k + 2] = e;
        }
        (q, qd, qdd)
    }

    /// A forces row in the rigid model's column order (its `force_columns`): each revolute
    /// joint's force of its first body on its second (N), the actuators' efforts (a torque or
    /// motor actuator on a body whose angle is prescribed, or a joint's actuator on such a
    /// second body, reports the law's torque plus the driver's, N m), each slide's normal force
    /// (N) and couple (N m).
    pub fn forces_row(&self, s: &FlexSample) -> Vec<f64> {
        let m = &self.mechanism;
        let mut rev = Vec::new();
        let mut slide = Vec::new();
        for (k, j) in m.joints.iter().enumerate() {
            let (l1, l2) = (s.lambda[2 * k], s.lambda[2 * k + 1]);
            match j.kind {
                JointKind::Revolute { .. } => rev.extend([l1, l2]),
                JointKind::Slide { .. } => slide.extend([-l1, -l2]),
            }
        }
        let (q, qd) = self.shadow(&s.p, &s.pd);
        let mut driver_torque = vec![0.0; m.bodies.len()];
        let mut r = 2 * m.joints.len();
        for c in self
            .constraints
            .iter()
            .filter(|c| matches!(c, Constraint::Driver { .. }))
        {
            if let Constraint::Driver {
                body,
                what: crate::system::Prescribed::Angle(_),
                ..
            } = c
            {
                driver_torque[*body] -= s.lambda[r];
            }
            r += c.rows();
        }
        let acts = m.forces.iter().filter(|f| f.actuator).map(|f| {
            let law = f.magnitude(&q, &qd);
            match f.kind {
                ForceKind::Torque { body, .. } | ForceKind::Motor { body, .. } => {
                    law + std::mem::take(&mut driver_torque[body])
                }
                ForceKind::JointTorque {
                    second: BodyRef::Body(body),
                    ..
                } => law + std::mem::take(&mut driver_torque[body]),
                _ => law,
            }
        });
        let acts: Vec<f64> = acts.collect();
        rev.into_iter().chain(acts).chain(slide).collect()
    }

    /// Names of the elastic coordinates' columns: `<body>_q<j>` for each elastic body.
    pub fn elastic_columns(&self) -> Vec<String> {
        self.bodies
            .iter()
            .flat_map(|b| (1..=b.inv.elastic()).map(move |j| format!("{}_q{j}", b.name)))
            .collect()
    }

    /// The elastic table: t, every elastic coordinate (m or rad, as the element's nodal values
    /// or the modal amplitudes), the kinetic, strain and gravity energies (J).
    pub fn elastic_table(
        &self,
        samples: &[FlexSample],
    ) -> Result<Table, flexbench_contracts::ContractError> {
        let names = self.elastic_columns();
        let mut cols: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        for s in samples {
            let mut c = 0;
            for (k, b) in self.bodies.iter().enumerate() {
                for j in 0..b.inv.elastic() {
                    cols[c].push(s.p[self.offsets[k] + 3 + j]);
                    c += 1;
                }
            }
        }
        let mut table = Table::new("elastic");
        table.push("t", Column::F64(samples.iter().map(|s| s.t).collect()))?;
        for (n, c) in names.iter().zip(cols) {
            table.push(n, Column::F64(c))?;
        }
        for (n, f) in [("kinetic_J", 0usize), ("strain_J", 1), ("gravity_J", 2)] {
            let v = samples
                .iter()
                .map(|s| [s.kinetic, s.strain, s.gravity][f])
                .collect();
            table.push(n, Column::F64(v))?;
        }
        Ok(table)
    }

    /// True when the mechanism needs the coupled simulation: an elastic body or a prescribed
    /// driver.
    pub fn needed_for(m: &flexbench_mechanism::Mechanism) -> bool {
        m.bodies.iter().any(|b| b.elastic.is_some()) || m.drivers.iter().any(|d| d.prescribed)
    }
}
