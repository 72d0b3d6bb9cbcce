//! The report stage's figures: each marker's acceleration, the forces over a crank turn, the
//! stages' own figures.

use super::*;

/// Per marker (in first-seen order): times and the rows' values of the named columns.
pub(super) struct ByMarker {
    pub(super) names: Vec<String>,
    pub(super) rows: Vec<Vec<usize>>,
}

pub(super) fn by_marker(names: &[Option<String>]) -> ByMarker {
    let mut out = ByMarker {
        names: Vec::new(),
        rows: Vec::new(),
    };
    for (i, n) in names.iter().enumerate() {
        let Some(n) = n else { continue };
        let k = match out.names.iter().position(|m| m == n) {
            Some(k) => k,
            None => {
                out.names.push(n.clone());
                out.rows.push(Vec::new());
                out.names.len() - 1
            }
        };
        out.rows[k].push(i);
    }
    out
}

/// The largest acceleration of the markers: (|a| in m/s^2, marker, t in s).
pub(super) fn largest_acceleration(
    names: &ByMarker,
    t: &[Option<f64>],
    ax: &[Option<f64>],
    ay: &[Option<f64>],
) -> Option<(f64, String, f64)> {
    let mut best: Option<(f64, String, f64)> = None;
    for (k, rows) in names.rows.iter().enumerate() {
        for &i in rows {
            if let (Some(a), Some(b), Some(ti)) = (ax[i], ay[i], t[i]) {
                let m = a.hypot(b);
                if best.as_ref().is_none_or(|b| m > b.0) {
                    best = Some((m, names.names[k].clone(), ti));
                }
            }
        }
    }
    best
}

/// The crank angle along the process stage's motion: times (s) and unwrapped angles (rad).
pub(super) struct Crank {
    pub(super) t: Vec<f64>,
    pub(super) phi: Vec<f64>,
    /// The angle one turn after the first sample's, in the motion's sense.
    pub(super) turn_end: Option<f64>,
}

impl Crank {
    pub(super) fn new(t: Vec<f64>, phi: Vec<f64>) -> Crank {
        let turn_end = phi
            .first()
            .map(|p| p + TAU * phi.last().map(|l| (l - p).signum()).unwrap_or(1.0));
        Crank { t, phi, turn_end }
    }

    /// The crank angle at a sample's time, from the recording's first sample, in [0, 360) deg.
    pub(super) fn degrees_at(&self, ti: Option<f64>) -> f64 {
        ti.and_then(|ti| crate::compare::angle_at(&self.t, &self.phi, ti))
            .map(|p| (p - self.phi[0]).to_degrees().rem_euclid(360.0))
            .unwrap_or(f64::NAN)
    }

    /// Whether the mechanism has no crank: the figures then run over the whole recording.
    pub(super) fn is_none(&self) -> bool {
        self.t.is_empty()
    }

    /// Whether the sample at `ti` lies in the recording's first crank turn (every sample
    /// without a crank).
    pub(super) fn in_first_turn(&self, ti: f64) -> bool {
        if self.is_none() {
            return true;
        }
        match (
            crate::compare::angle_at(&self.t, &self.phi, ti),
            self.phi.first(),
            self.turn_end,
        ) {
            (Some(p), Some(p0), Some(pe)) => (p - p0).abs() <= (pe - p0).abs(),
            _ => false,
        }
    }
}

/// The markers' fitted kinematics from the process stage's markers table.
pub(super) struct MarkerColumns {
    pub(super) t: Vec<Option<f64>>,
    pub(super) x: Vec<Option<f64>>,
    pub(super) y: Vec<Option<f64>>,
    pub(super) ax: Vec<Option<f64>>,
    pub(super) ay: Vec<Option<f64>>,
    pub(super) by_marker: ByMarker,
}

impl MarkerColumns {
    /// The columns of the markers table at `path`, read and checked as `MarkerStates`.
    pub(super) fn read(path: &Path) -> Result<MarkerColumns, PipelineError> {
        let rows = flexbench_tables::read_markers(path)?.into_rows();
        let col = |c: &str| rows.iter().map(|r| r.value(c)).collect();
        let names: Vec<Option<String>> = rows.iter().map(|r| Some(r.marker.clone())).collect();
        Ok(MarkerColumns {
            t: rows.iter().map(|r| Some(r.t)).collect(),
            x: col("x"),
            y: col("y"),
            ax: col("ax"),
            ay: col("ay"),
            by_marker: by_marker(&names),
        })
    }
}

/// The markers' trajectories (seed 001 Fig. 5) and their acceleration field over the first
/// crank turn (Fig. 6), with the note of the largest acceleration.
pub(super) fn marker_figures(
    page: &mut RunPage,
    cols: &MarkerColumns,
    crank: &Crank,
) -> Result<Largest, PipelineError> {
    // Long: the two figures of seed 001 (Fig. 5 and Fig. 6) built from the same columns and crank
    // turn.
    let bm = &cols.by_marker;
    let paths: Vec<flexbench_report::LabelledPath> = bm
        .names
        .iter()
        .zip(&bm.rows)
        .map(|(n, rows)| {
            (
                n.clone(),
                rows.iter().map(|&i| cols.x[i].zip(cols.y[i])).collect(),
            )
        })
        .collect();
    let fig5 = PlaneFigure {
        caption: match crank.is_none() {
            false => "Trajectories of the five markers on the lever (bench frame; seed 001 Fig. 5)",
            true => "Trajectories of the markers (bench frame)",
        }
        .into(),
        x_label: "x (m), bench frame".into(),
        y_label: "y (m), bench frame".into(),
        y_down: false,
        paths: paths.clone(),
        arrow_groups: Vec::new(),
        arrows: Vec::new(),
        scale: 1.0,
        vector_unit: "m/s^2".into(),
    };
    let text = match crank.is_none() {
        false => "Trajectories of the five markers on the lever over the whole recording, in the bench frame (origin at A, x horizontal towards the pendulum, y up), as the mechanism fitted to the tracked positions gives them (seed 001 Fig. 5).",
        true => "Trajectories of the markers over the whole recording, in the bench frame, as the mechanism fitted to the tracked positions gives them.",
    };
    page.plane(&fig5, "trajectories", text.into())?;
    let largest = largest_acceleration(bm, &cols.t, &cols.ax, &cols.ay).unwrap_or((
        f64::NAN,
        String::new(),
        f64::NAN,
    ));
    let (amax, amax_marker, amax_t) = largest.clone();
    // Arrows every `step` samples over the first turn; the longest arrow is 0.06 m on the plot.
    let span = paths
        .iter()
        .flat_map(|p| p.1.iter().flatten())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    let scale = if amax > 0.0 {
        0.15 * (span.1 - span.0).max(1e-3) / amax
    } else {
        1.0
    };
    let over = match crank.is_none() {
        false => "one crank turn",
        true => "the whole recording",
    };
    let fig6 = PlaneFigure {
        caption: format!("Acceleration field of the markers along their trajectories, {over} (largest |a| = {amax:.2} m/s^2)"),
        arrow_groups: vec![format!("acceleration, {:.3} m per 10 m/s^2", 10.0 * scale)],
        arrows: first_turn_arrows(cols, crank),
        scale,
        ..fig5
    };
    let seed = match crank.is_none() {
        false => "; seed 001 Fig. 6 states 14.33 m/s^2 for its bench",
        true => "",
    };
    page.plane(&fig6, "acceleration-field", format!(
        "The markers' accelerations as vectors along their trajectories over {} (bench frame; an arrow of {:.3} m is 10 m/s^2). The largest acceleration of any marker over the recording is {amax:.2} m/s^2 ({amax_marker} at t = {amax_t:.3} s){seed}.",
        if crank.is_none() { "the whole recording" } else { "the recording's first crank turn" },
        10.0 * scale
    ))?;
    page.note(Note::new("Largest acceleration").paragraph(vec![
        Span::Text("Largest acceleration of the markers (the fitted motion): ".into()),
        Span::Bold(format!("{amax:.2} m/s²")),
        Span::Text(format!(
            " at {amax_marker} (t = {amax_t:.3} s).{}",
            match crank.is_none() {
                false => " Seed 001 states 14.33 m/s² (its Fig. 6).",
                true => "",
            }
        )),
    ]));
    Ok(largest)
}

/// About 24 acceleration arrows per marker over the first crank turn: (group, x, y, ax, ay).
pub(super) fn first_turn_arrows(
    cols: &MarkerColumns,
    crank: &Crank,
) -> Vec<(usize, f64, f64, f64, f64)> {
    let mut arrows = Vec::new();
    for rows in &cols.by_marker.rows {
        let first: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&i| cols.t[i].is_some_and(|ti| crank.in_first_turn(ti)))
            .collect();
        let step = (first.len() / 24).max(1);
        for &i in first.iter().step_by(step) {
            if let (Some(px), Some(py), Some(a), Some(b)) =
                (cols.x[i], cols.y[i], cols.ax[i], cols.ay[i])
            {
                arrows.push((0usize, px, py, a, b));
            }
        }
    }
    arrows
}

/// The liaison forces at B and C' against the crank angle, every turn overlaid, with the table
/// of their peaks; returns the peaks for the run's key numbers.
pub(super) fn forces_over_turn(
    page: &mut RunPage,
    dirs: &StageDirs,
    mech: &Mechanism,
    crank: &Crank,
    bands: &str,
) -> Result<Peaks, PipelineError> {
    let forces = crate::tables::forces_of(
        &crate::folders::ProcessedFolder::new(&dirs.process)
            .table(crate::folders::ProcessedTable::Forces),
        mech,
    )?;
    let deg: Vec<f64> = forces
        .t()
        .iter()
        .map(|ti| crank.degrees_at(Some(*ti)))
        .collect();
    let mut panels = Vec::new();
    let mut peak_rows: Vec<Vec<String>> = Vec::new();
    let mut peaks = Peaks::default();
    for (j, label) in [
        ("B", "B: force of the crank on the lever"),
        ("C", "C': force of the rocker on the lever"),
    ] {
        let Some((panel, mag)) = joint_panel(&forces, j, label, &deg) else {
            continue;
        };
        panels.push(panel);
        if let Some(k) = (0..mag.len())
            .filter(|&i| mag[i].is_some())
            .max_by(|&a, &b| mag[a].unwrap_or(0.0).total_cmp(&mag[b].unwrap_or(0.0)))
        {
            let name = if j == "C" { "C'" } else { "B" };
            peaks.set(j, mag[k], deg[k]);
            peak_rows.push(vec![
                name.into(),
                format!("{:.1}", mag[k].unwrap_or(f64::NAN)),
                format!("{:.1}", deg[k]),
                format!("{:.4}", forces.t()[k]),
            ]);
        }
    }
    let banded = panels
        .iter()
        .any(|p| p.curves.iter().any(|c| !c.band.is_empty()));
    if !panels.is_empty() {
        let fig = Figure {
            caption: "Liaison forces at B and C' over the crank turn (bench frame)".into(),
            x_label: "crank angle phi1 from the recording's first sample, modulo 360 (deg)".into(),
            panels,
        };
        page.figure(&fig, "forces-cycle", format!(
            "Liaison forces at B (crank on lever) and C' (rocker on lever) in the bench frame against the crank angle, every turn of the recording overlaid; {}",
            if banded {
                format!("shaded: {bands} carried through the inverse dynamics.")
            } else {
                "no bands: the process stage gave no uncertainty (kinematics from the markers' filtered positions, without the smoother).".to_string()
            }
        ))?;
        page.note(Note::new("Peak forces").table(
            &["joint", "peak |F| (N)", "crank angle (deg)", "t (s)"],
            peak_rows,
        ));
    }
    Ok(peaks)
}

/// One joint's panel (x, y with their 2-sigma bands, and |F|) in order of crank angle, and the
/// magnitude per sample; None when the forces table has no components of the joint.
pub(super) fn joint_panel(
    forces: &flexbench_contracts::Forces,
    j: &str,
    label: &str,
    deg: &[f64],
) -> Option<(Panel, Vec<Option<f64>>)> {
    let (cx, cy) = (format!("{j}_x"), format!("{j}_y"));
    let (vx, vy) = (forces.column(&cx)?, forces.column(&cy)?);
    let sig = |c: &str| -> Vec<Option<f64>> {
        match forces.column(&format!("{c}_sigma")) {
            Some(s) => s.iter().map(|s| s.map(|s| 2.0 * s)).collect(),
            None => Vec::new(),
        }
    };
    // The samples in order of crank angle, with a break where the angle wraps.
    let mut order: Vec<usize> = (0..deg.len()).filter(|&i| deg[i].is_finite()).collect();
    order.sort_by(|&a, &b| deg[a].total_cmp(&deg[b]));
    let xs: Vec<f64> = order.iter().map(|&i| deg[i]).collect();
    let pick = |v: &[Option<f64>]| -> Vec<Option<f64>> {
        order.iter().map(|&i| v.get(i).copied().flatten()).collect()
    };
    let (sx, sy) = (sig(&cx), sig(&cy));
    let mag: Vec<Option<f64>> = vx
        .iter()
        .zip(vy)
        .map(|(a, b)| a.zip(*b).map(|(a, b)| a.hypot(b)))
        .collect();
    let curve = |label: String, y: &[Option<f64>], band: &[Option<f64>]| Curve {
        label,
        x: xs.clone(),
        y: pick(y),
        band: if band.is_empty() {
            Vec::new()
        } else {
            pick(band)
        },
    };
    let panel = Panel {
        title: label.into(),
        y_label: "force (N), bench frame".into(),
        curves: vec![
            curve(format!("{j}_x"), vx, &sx),
            curve(format!("{j}_y"), vy, &sy),
            curve(format!("|{j}|"), &mag, &[]),
        ],
    };
    Some((panel, mag))
}

/// The figures the earlier stages drew, shown from their own folders, and the overlay's note.
pub(super) fn stage_figures(
    page: &mut RunPage,
    dirs: &StageDirs,
    model: Option<&str>,
    crank: &Crank,
) -> Result<(), PipelineError> {
    let forces = match crank.is_none() {
        false => "Liaison forces at B and C' over time, from the inverse dynamics of the measured motion.",
        true => "The joints' forces over time, from the inverse dynamics of the measured motion.",
    };
    let accelerations = format!("The markers' accelerations measured (process stage, from the fitted motion) against the {} bench simulated at the recording's mean crank speed, aligned by the crank angle; NRMSE and phase lag per component in each panel's title.", model.unwrap_or("rigid"));
    let none = PathBuf::new();
    let (compare, fem) = (
        dirs.compare.as_ref().unwrap_or(&none),
        dirs.fem.as_ref().unwrap_or(&none),
    );
    for (stage, dir, stem, caption) in [
        ("compare", compare, "accelerations", accelerations.as_str()),
        ("compare", compare, "elastic-effect-forces", "The elastic lever's effect on the simulated liaison forces and actuators: the coupled elastic bench minus the same bench rigid, over a turn at the same motor reference."),
        ("compare", compare, "elastic-effect-accelerations", "The elastic lever's effect on the simulated markers' accelerations: the coupled elastic bench minus the same bench rigid, over a turn."),
        ("compare", compare, "forces", "Liaison forces at B and C' from the measured motion against the simulated bench, aligned by the crank angle."),
        ("compare", compare, "spectra-accelerations", "Harmonic content (amplitude of each harmonic of the crank angle) of the markers' accelerations, measured and simulated."),
        ("compare", compare, "spectra-forces", "Harmonic content of the liaison forces at B and C', measured and simulated."),
        ("fem", fem, "modes-3-6", "Eigenfrequencies of the lever's modes 3 to 6 along the cycle (seed 001 Fig. 8), symmetric problem and full problem with the gyroscopic and skew terms."),
        ("fem", fem, "modes-1-2", "Eigenfrequencies of the lever's modes 1 and 2 along the cycle (seed 000 Fig. 6)."),
        ("fem", fem, "mode-shapes", "Shapes of the followed modes at the recording's first sample."),
        ("fem", fem, "deflection", "The lever's deflection at the markers: forced response of the FEM model against the measured residual of the rigid fit (each detrended by its best-fit line)."),
        ("compare", compare, "measured", "The computed joint torques and forces (inverse dynamics of the measured motion) against the rig's own measurement on its clock, and without the mechanism file's friction where it has one."),
        ("process", &dirs.process, "forces", forces),
    ] {
        if dir.as_os_str().is_empty() {
            continue;
        }
        page.show_from(stage, dir, stem, caption);
    }
    overlay_note(page, dirs)
}
