//! The markers fitted as one rigid body (the lever): its field of velocities and accelerations and
//! what the elastic part leaves.

use super::*;

/// A named point of a body's frame: marker name and coordinates (m).
pub type NamedPoint = (String, Vector2<f64>);

/// What the rigid-field fit needs: the markers' layout in the body frame (None: the mean shape
/// from the data, about its centroid), and the reference point's name for the tables.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidRequest {
    /// Per marker name, its coordinates in the body frame (m), and the reference point there.
    pub layout: Option<(Vec<NamedPoint>, Vector2<f64>)>,
    /// Name of the reference point (B for the lever; "centroid" from the data).
    pub reference: String,
}

impl RigidRequest {
    /// The layout of the markers on the body that carries them in a mechanism (the lever on the
    /// bench), the reference point that body's frame origin (B). Errors when the markers are
    /// on several bodies.
    pub fn from_mechanism(
        m: &flexbench_mechanism::model::Mechanism,
    ) -> Result<RigidRequest, PipelineError> {
        let Some(first) = m.markers.first() else {
            return Err(PipelineError::Input(
                "the mechanism declares no marker".into(),
            ));
        };
        if m.markers.iter().any(|k| k.body != first.body) {
            return Err(PipelineError::Input("the mechanism's markers lie on several bodies: the rigid field fits the markers of one body".into()));
        }
        let body = &m.bodies[first.body];
        let origin = body.name.clone();
        Ok(RigidRequest {
            layout: Some((
                m.markers
                    .iter()
                    .map(|k| (k.name.clone(), k.local_frame))
                    .collect(),
                Vector2::zeros(),
            )),
            reference: format!("{origin} frame origin"),
        })
    }

    /// The rigid-field fit of the smooth stage: with a mechanism whose markers lie on one body
    /// (a run's always is given), that body's layout of its markers (reference: its frame
    /// origin); asked for (`rigid_field`) without a mechanism, the layout learnt from the data
    /// about the markers' centroid; otherwise none. Asked for with a mechanism whose markers
    /// lie on several bodies: refused.
    pub fn requested(
        rigid_field: bool,
        mechanism: Option<&flexbench_mechanism::model::Mechanism>,
    ) -> Result<Option<RigidRequest>, PipelineError> {
        let one_body = |m: &flexbench_mechanism::model::Mechanism| {
            m.markers.windows(2).all(|w| w[0].body == w[1].body)
        };
        match (rigid_field, mechanism) {
            (false, Some(m)) if !one_body(m) => Ok(None),
            (true, Some(m)) if !one_body(m) => Err(PipelineError::Input(format!("[smooth] rigid_field (--rigid-field): the markers of the mechanism '{}' lie on several bodies, and the rigid field fits the markers of one body; leave it off, or give no mechanism to fit the markers' layout from the data", m.name))),
            (_, Some(m)) => Ok(Some(RigidRequest::from_mechanism(m)?)),
            (true, None) => Ok(Some(RigidRequest {
                layout: None,
                reference: "markers' centroid".into(),
            })),
            (false, None) => Ok(None),
        }
    }
}

/// The rigid-field tables: per sample the reference point's kinematics and the rotation with
/// standard deviations and chi^2 per degree of freedom; per sample and marker the residual
/// acceleration (the elastic part). And a summary: RMS residual along the body's normal against
/// the markers' own sigma.
pub(super) fn rigid_tables(
    req: &RigidRequest,
    names: &[String],
    t: &[f64],
    diffs: &[(Derivatives, Derivatives)],
) -> Result<(Table, Table, RigidSummary), PipelineError> {
    let samples = marker_samples(diffs, t.len());
    let layout = rigid_layout(req, names, &samples)?;
    let fits: Vec<_> = samples.iter().map(|s| layout.fit(s)).collect();
    let field = rigid_field_table(t, &fits)?;
    let (residual, rms_residual, rms_sigma) = rigid_residual_table(t, names, &fits)?;
    let chi: Vec<f64> = fits
        .iter()
        .filter_map(|f| f.as_ref().map(|f| f.chi2_dof))
        .filter(|v| v.is_finite())
        .collect();
    let summary = RigidSummary {
        reference: req.reference.clone(),
        layout_m: layout.markers.iter().map(|p| [p.x, p.y]).collect(),
        fitted_samples: fits.iter().filter(|f| f.is_some()).count(),
        rms_normal_residual_m_s2: rms_residual,
        rms_normal_sigma_m_s2: rms_sigma,
        mean_chi2_dof: (!chi.is_empty()).then(|| chi.iter().sum::<f64>() / chi.len() as f64),
    };
    Ok((field, residual, summary))
}

/// Per sample, each marker's position, velocity and acceleration (bench frame, SI) with the
/// velocity's and acceleration's sigmas when the smoother gave them; None where one is missing.
pub(super) fn marker_samples(
    diffs: &[(Derivatives, Derivatives)],
    n: usize,
) -> Vec<Vec<Option<MarkerKinematics>>> {
    (0..n)
        .map(|k| {
            diffs
                .iter()
                .map(|(dx, dy)| {
                    let ok = [
                        dx.value[k],
                        dy.value[k],
                        dx.rate[k],
                        dy.rate[k],
                        dx.accel[k],
                        dy.accel[k],
                    ]
                    .iter()
                    .all(|v| v.is_finite());
                    ok.then(|| MarkerKinematics {
                        p: Vector2::new(dx.value[k], dy.value[k]),
                        v: Vector2::new(dx.rate[k], dy.rate[k]),
                        a: Vector2::new(dx.accel[k], dy.accel[k]),
                        sigma: (dx.sigma.len() == n && dy.sigma.len() == n).then(|| {
                            [
                                dx.sigma[k][1],
                                dy.sigma[k][1],
                                dx.sigma[k][2],
                                dy.sigma[k][2],
                            ]
                        }),
                    })
                })
                .collect()
        })
        .collect()
}

/// The markers' layout on the body: the mechanism's (every tracked marker declared there), or
/// the mean shape of the samples where every marker is seen.
pub(super) fn rigid_layout(
    req: &RigidRequest,
    names: &[String],
    samples: &[Vec<Option<MarkerKinematics>>],
) -> Result<Layout, PipelineError> {
    Ok(match &req.layout {
        Some((named, reference)) => {
            let markers = names
                .iter()
                .map(|nm| {
                    named.iter().find(|(k, _)| k == nm).map(|(_, p)| *p).ok_or_else(|| {
                        PipelineError::Input(format!("marker '{nm}' of the tracks is not declared in the mechanism; the rigid field needs every marker's place on the body"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Layout { markers, reference: *reference }
        }
        None => Layout::from_samples(samples)
            .ok_or_else(|| PipelineError::Input("the rigid field needs at least one sample where every marker is seen, to learn their layout; give the mechanism file (--mechanism)".into()))?,
    })
}

/// The rigid field per sample: the reference point's position, velocity and acceleration, the
/// body's angle, rate and angular acceleration, their sigmas and the fit's chi2 per degree of
/// freedom (SI, bench frame).
pub(super) fn rigid_field_table(
    t: &[f64],
    fits: &[Option<flexbench_signal::rigid::RigidField>],
) -> Result<Table, ContractError> {
    let opt = |f: &dyn Fn(&flexbench_signal::rigid::RigidField) -> f64| {
        Column::OptF64(
            fits.iter()
                .map(|r| r.as_ref().map(f).filter(|v| v.is_finite()))
                .collect(),
        )
    };
    let cols: Vec<(&str, Column)> = vec![
        ("t", Column::F64(t.to_vec())),
        ("x", opt(&|r| r.p.x)),
        ("y", opt(&|r| r.p.y)),
        ("phi", opt(&|r| r.phi)),
        ("vx", opt(&|r| r.v.x)),
        ("vy", opt(&|r| r.v.y)),
        ("omega", opt(&|r| r.omega)),
        ("ax", opt(&|r| r.a.x)),
        ("ay", opt(&|r| r.a.y)),
        ("epsilon", opt(&|r| r.epsilon)),
        ("vx_sigma", opt(&|r| r.v_sigma[0])),
        ("vy_sigma", opt(&|r| r.v_sigma[1])),
        ("omega_sigma", opt(&|r| r.v_sigma[2])),
        ("ax_sigma", opt(&|r| r.a_sigma[0])),
        ("ay_sigma", opt(&|r| r.a_sigma[1])),
        ("epsilon_sigma", opt(&|r| r.a_sigma[2])),
        ("chi2_dof", opt(&|r| r.chi2_dof)),
    ];
    Table::from_columns("rigid_field", cols)
}

/// Each marker's acceleration residual from the rigid field per sample (m/s^2), its normal
/// part and that part's sigma; with the RMS normal residual and RMS sigma over the samples that
/// have a sigma.
pub(super) fn rigid_residual_table(
    t: &[f64],
    names: &[String],
    fits: &[Option<flexbench_signal::rigid::RigidField>],
) -> Result<(Table, Option<f64>, Option<f64>), ContractError> {
    let (mut tt, mut mk, mut ex, mut ey, mut en, mut es) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let (mut sum_e2, mut sum_s2, mut count) = (0.0, 0.0, 0usize);
    for (k, f) in fits.iter().enumerate() {
        for (i, nm) in names.iter().enumerate() {
            tt.push(t[k]);
            mk.push(nm.clone());
            let r = f
                .as_ref()
                .and_then(|f| f.residual.get(i).copied().flatten());
            ex.push(r.map(|r| r.0.x));
            ey.push(r.map(|r| r.0.y));
            en.push(r.map(|r| r.1));
            es.push(r.and_then(|r| r.2));
            if let Some((_, e, Some(sd))) = r {
                sum_e2 += e * e;
                sum_s2 += sd * sd;
                count += 1;
            }
        }
    }
    let residual = Table::from_columns(
        "rigid_residual",
        [
            ("t", Column::F64(tt)),
            ("marker", Column::Str(mk)),
            ("ax", Column::OptF64(ex)),
            ("ay", Column::OptF64(ey)),
            ("a_normal", Column::OptF64(en)),
            ("a_normal_sigma", Column::OptF64(es)),
        ],
    )?;
    let rms = |s: f64| (count > 0).then(|| (s / count as f64).sqrt());
    Ok((residual, rms(sum_e2), rms(sum_s2)))
}
