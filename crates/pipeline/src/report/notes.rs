//! The report stage's notes: the words and numbers of each stage's paragraph and table (tracking,
//! calibration, motion, methods, comparison, the lever).

use super::*;

/// The tracks' columns the tracking-quality figure and table read, row by row as the table
/// holds them.
pub(super) struct TrackColumns {
    pub(super) t: Vec<Option<f64>>,
    pub(super) x: Vec<Option<f64>>,
    pub(super) frame: Vec<Option<f64>>,
    pub(super) sigma: Vec<Option<f64>>,
    pub(super) by_marker: ByMarker,
}

impl TrackColumns {
    /// The columns of the tracks table at `path`, read and checked as `Tracks`.
    pub(super) fn read(path: &Path) -> Result<TrackColumns, PipelineError> {
        let tracks = flexbench_tables::read_tracks(path)?;
        let rows = tracks.rows();
        let names: Vec<Option<String>> = rows.iter().map(|r| Some(r.marker.clone())).collect();
        Ok(TrackColumns {
            t: rows.iter().map(|r| Some(r.t)).collect(),
            x: rows.iter().map(|r| r.x).collect(),
            frame: rows.iter().map(|r| Some(r.frame as f64)).collect(),
            sigma: rows.iter().map(|r| r.sigma_px).collect(),
            by_marker: by_marker(&names),
        })
    }
}

/// Tracking quality: each marker's centre sigma over time (figure) and its gaps (table), with
/// the tracking record's counts; returns that record (None for imported tracks).
pub(super) fn tracking_quality(
    page: &mut RunPage,
    dirs: &StageDirs,
) -> Result<Option<TrackSummary>, PipelineError> {
    // Long: the figure, the table and the counts of one note, read from the same tracks' columns.
    let tc = TrackColumns::read(&dirs.track.join(crate::folders::TRACKS))?;
    // The recording's frames (a marker's gap may be a row without x, y or no row at all).
    let all_frames: BTreeSet<i64> = tc.frame.iter().flatten().map(|f| *f as i64).collect();
    let smooth_summary = SmoothRecord::read(&dirs.smooth.join("markers.summary.json"))?;
    let mut qrows: Vec<Vec<String>> = Vec::new();
    let mut curves = Vec::new();
    for (name, rows) in tc.by_marker.names.iter().zip(&tc.by_marker.rows) {
        qrows.push(marker_quality_row(
            name,
            rows,
            &tc,
            &all_frames,
            &smooth_summary,
        ));
        curves.push(Curve {
            label: name.clone(),
            x: rows.iter().map(|&i| tc.t[i].unwrap_or(f64::NAN)).collect(),
            y: rows.iter().map(|&i| tc.sigma[i]).collect(),
            band: Vec::new(),
        });
    }
    if curves.iter().any(|c| c.y.iter().any(Option::is_some)) {
        let fig = Figure {
            caption: "Tracking quality: each marker's centre standard deviation (breaks: gaps)"
                .into(),
            x_label: "time t (s)".into(),
            panels: vec![Panel {
                title: "standard deviation of the marker's image centre".into(),
                y_label: "sigma (px)".into(),
                curves,
            }],
        };
        page.figure(&fig, "tracking-quality", "Standard deviation of each marker's sub-pixel centre as the tracker estimates it from the blob's intensity, frame by frame; a break in a line is a gap (the marker not seen: marked, never invented).".into())?;
    }
    // A run on a tracks table has no tracking record: flexbench did not track.
    let summary_path = dirs.track.join("tracks.summary.json");
    let record = match summary_path.exists() {
        true => Some(TrackRecord::read(&summary_path)?),
        false => None,
    };
    let corrections = record
        .as_ref()
        .map(|r| r.corrections.clone())
        .unwrap_or_default();
    let track_summary = record.map(|r| r.summary);
    let tracking = match &track_summary {
        Some(ts) => format!(
            "{} frames, {} detections, {} gaps, {} rejected blobs, markers locked at frame {}. Time base: {}.{} {}",
            ts.frames, ts.detections, ts.gaps, ts.rejected_blobs, ts.lock_frame,
            ts.timing.sentence(),
            ts.timing.warnings.iter().map(|w| format!(" Warning: {w}.")).collect::<String>(),
            flags_sentence(ts)
        ),
        None => "The tracks were imported from a table made by another tool: flexbench did not track them.".into(),
    };
    let mut note = Note::new("Tracking").text(tracking);
    if let Some(d) = track_summary.as_ref().and_then(|ts| ts.depth.as_ref()) {
        note = note.text(format!(
            "The markers' spacings against the mechanism file's: {:+.3} %, a depth of {:.2} +- {:.2} mm in front of the bench plane (standard error over {} frames); the tracks use {:.2} mm{}.{}",
            (d.scale - 1.0) * 100.0,
            d.depth_m * 1e3,
            d.sigma_m * 1e3,
            d.frames,
            d.used_m * 1e3,
            if d.applied { ", the estimate" } else { "" },
            d.warning().map(|w| format!(" Warning: {w}.")).unwrap_or_default()
        ));
    }
    if let Some(r) = track_summary.as_ref().and_then(|ts| ts.readout.as_ref()) {
        note = note.text(format!(
            "The markers' rigid patterns against their deformation by a rolling shutter: a readout of {:.2} +- {:.2} ms ({} body-frames, {:.3} mm RMS misfit); the tracks use {:.2} ms{}.{}",
            r.readout_s * 1e3,
            r.sigma_s * 1e3,
            r.fits,
            r.misfit_mm,
            r.used_s * 1e3,
            if r.applied { ", the estimate" } else { "" },
            r.warning().map(|w| format!(" Warning: {w}.")).unwrap_or_default()
        ));
    }
    if !corrections.is_empty() {
        note = note.text(format!(
            "The user's corrections (corrections.toml), applied as the video was tracked: {}.",
            corrections.join("; ")
        ));
    }
    page.note(note.table(
        &[
            "marker",
            "frames seen",
            "gaps (frames)",
            "longest gap (frames)",
            "median sigma (px)",
            "95th percentile sigma (px)",
            "noise by the smoother (mm)",
        ],
        qrows,
    ));
    Ok(track_summary)
}

/// The flagged samples in words: how many, by which test (flags.csv of the track stage).
pub(super) fn flags_sentence(ts: &TrackSummary) -> String {
    if ts.flagged == 0 {
        return "No sample failed a test of the tracked samples.".into();
    }
    let by: Vec<String> = ts
        .flags_by_reason
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    format!(
        "{} sample(s) ({:.2} %) failed a test of the tracked samples (flags.csv: {}); the kinematic fit leaves them out unless [process] keep_flagged.",
        ts.flagged,
        100.0 * ts.flagged as f64 / ts.detections.max(1) as f64,
        by.join(", ")
    )
}

/// One marker's row of the tracking table: frames seen, gaps, the longest gap, the median and
/// 95th percentile of its centre's sigma, the noise the smoother found.
pub(super) fn marker_quality_row(
    name: &str,
    rows: &[usize],
    tc: &TrackColumns,
    all_frames: &BTreeSet<i64>,
    smooth: &SmoothRecord,
) -> Vec<String> {
    let seen_frames: BTreeSet<i64> = rows
        .iter()
        .filter(|&&i| tc.x[i].is_some())
        .filter_map(|&i| tc.frame[i].map(|f| f as i64))
        .collect();
    let seen: Vec<bool> = all_frames.iter().map(|f| seen_frames.contains(f)).collect();
    let gaps = seen.iter().filter(|s| !**s).count();
    let (mut longest, mut run) = (0usize, 0usize);
    for s in &seen {
        run = if *s { 0 } else { run + 1 };
        longest = longest.max(run);
    }
    let mut sig: Vec<f64> = rows.iter().filter_map(|&i| tc.sigma[i]).collect();
    sig.sort_by(f64::total_cmp);
    let q = |f: f64| {
        sig.get(((sig.len() as f64 - 1.0) * f).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let noise_of = |c: &str| -> Option<f64> {
        let coordinate = format!("{name}.{c}");
        smooth
            .parameters
            .iter()
            .find(|p| p.coordinate == coordinate)?
            .noise_m
    };
    let noise = noise_of("x")
        .zip(noise_of("y"))
        .map(|(a, b)| (0.5 * (a * a + b * b)).sqrt() * 1e3);
    vec![
        name.to_string(),
        (seen.len() - gaps).to_string(),
        gaps.to_string(),
        longest.to_string(),
        format!("{:.4}", q(0.5)),
        format!("{:.4}", q(0.95)),
        noise
            .map(|n| format!("{n:.3}"))
            .unwrap_or_else(|| "-".into()),
    ]
}

/// The calibration's corner residuals drawn over the image, and the calibration's numbers.
pub(super) fn calibration_residuals(page: &mut RunPage, cdir: &Path) -> Result<(), PipelineError> {
    let corners_file = cdir.join("calibration.corners.csv");
    let motion = crate::motion_calibration::record_path(&cdir.join(crate::folders::CALIBRATION));
    if motion.exists() {
        return motion_note(page, &motion);
    }
    if !corners_file.exists() {
        return nominal_note(page, cdir);
    }
    let corners = crate::calibrate::read_corners(&corners_file)?;
    let rmax = corners.iter().map(|c| c.du.hypot(c.dv)).fold(0.0, f64::max);
    let rms = (corners
        .iter()
        .map(|c| c.du.powi(2) + c.dv.powi(2))
        .sum::<f64>()
        / corners.len().max(1) as f64)
        .sqrt();
    let cal = flexbench_vision::Calibration::read(&cdir.join(crate::folders::CALIBRATION))?;
    let (w, h) = (cal.intrinsics.width as f64, cal.intrinsics.height as f64);
    let scale = if rmax > 0.0 { 0.05 * w / rmax } else { 1.0 };
    let border = vec![
        Some((0.0, 0.0)),
        Some((w, 0.0)),
        Some((w, h)),
        Some((0.0, h)),
        Some((0.0, 0.0)),
    ];
    let fig = PlaneFigure {
        caption: format!(
            "Calibration residuals over the image (RMS {rms:.3} px; arrows x{scale:.0})"
        ),
        x_label: "u (px), image column".into(),
        y_label: "v (px), image row, downward".into(),
        y_down: true,
        paths: vec![("image border".into(), border)],
        arrow_groups: vec![format!(
            "corner residual (found - reprojected), x{scale:.0}"
        )],
        arrows: corners.iter().map(|c| (0, c.u, c.v, c.du, c.dv)).collect(),
        scale,
        vector_unit: "px".into(),
    };
    page.plane(&fig, "calibration-residuals", format!("Reprojection residual of every chessboard corner kept for the calibration, drawn where the corner lies in the image, magnified {scale:.0} times; RMS {rms:.3} px, largest {rmax:.3} px. A pattern (rather than scatter) would show a distortion model too poor for the lens."))?;
    let views = corners
        .iter()
        .map(|c| &c.view)
        .collect::<BTreeSet<_>>()
        .len();
    let i = &cal.intrinsics;
    let mut note = Note::new("Calibration").text(format!(
        "RMS reprojection error {:.4} px over {views} views; fx {:.2}, fy {:.2}, cx {:.2}, cy {:.2} px; distortion k1 {:.5}, k2 {:.5}, p1 {:.6}, p2 {:.6}, k3 {:.5}.",
        cal.rms, i.fx, i.fy, i.cx, i.cy, i.dist[0], i.dist[1], i.dist[2], i.dist[3], i.dist[4]
    ));
    if let Some(u) = &cal.plane_uncertainty {
        note = note.text(format!(
            "The bench frame from clicked points of known bench position (points.toml); its {} (the intrinsics' own uncertainty not included).",
            frame_uncertainty(u)
        ));
    }
    page.note(note);
    Ok(())
}

/// The bench frame's uncertainty from the clicks, as the calibration notes state it.
pub(super) fn frame_uncertainty(u: &flexbench_vision::camera::FrameUncertainty) -> String {
    format!(
        "uncertainty for clicks of {:.2} px: origin {:.3} mm, horizontal {:.3} mrad, scale {:.1e}{}",
        u.click_sigma_px,
        u.origin_mm,
        u.angle_mrad,
        u.scale,
        u.beyond_similarity_mm.map_or(String::new(), |b| format!(
            "; beyond that similarity, the plane bent by {b:.3} mm RMS over its points (not carried to the forces)"
        ))
    )
}

/// The calibration's note for a nominal camera (no board, no corners): what was assumed.
pub(super) fn nominal_note(page: &mut RunPage, cdir: &Path) -> Result<(), PipelineError> {
    let cal = flexbench_vision::Calibration::read(&cdir.join(crate::folders::CALIBRATION))?;
    let i = &cal.intrinsics;
    let mut note = Note::new("Calibration").text(format!(
        "No board: a nominal camera ({}), fx {:.1}, fy {:.1}, cx {:.1}, cy {:.1} px, distortion k1 {:.5}, k2 {:.5}, p1 {:.6}, p2 {:.6}, k3 {:.5}; the bench plane from clicked points of known bench position. The scale holds in the plane of the clicked points only (docs/calibration.md).",
        cal.distortion_model.as_deref().unwrap_or("assumed"),
        i.fx, i.fy, i.cx, i.cy, i.dist[0], i.dist[1], i.dist[2], i.dist[3], i.dist[4]
    ));
    if let Some(u) = &cal.plane_uncertainty {
        note = note.text(format!("Its {}.", frame_uncertainty(u)));
    }
    page.note(note);
    Ok(())
}

/// The calibration's note for a camera fitted to the mechanism's motion (`[calibrate]
/// from_motion`): the fit, the lens, and the plane's uncertainty where the markers went.
pub(super) fn motion_note(page: &mut RunPage, record: &Path) -> Result<(), PipelineError> {
    use crate::StageRecord;
    let r = crate::motion_calibration::MotionRecord::read(record)?;
    let [u0, v0, u1, v1] = r.region_px;
    let note = Note::new("Calibration").text(format!(
        "The camera fitted to the mechanism's motion (calibrate --from-motion): the bench plane's homography and the lens's k1 {:.5} +- {:.5}, k2 {:.5} +- {:.5}, from {} frames ({} marker samples, {} left out) tracked with the start's calibration (calibrate-start), {:.3} px RMS where the start left {:.3} px. Over the region the markers swept ({u0:.0} to {u1:.0} px across, {v0:.0} to {v1:.0} px down) the plane's scale is known to {:.1e} and a position to {:.3} mm; the horizontal to {:.3} mrad (the start's {:.3} mrad). The scale rests on the mechanism file's lengths; outside the swept region the lens is extrapolated (docs/calibration.md).",
        r.k1[0], r.k1[1], r.k2[0], r.k2[1], r.frames, r.samples, r.left_out, r.rms_px,
        r.start_rms_px, r.scale_sd, r.position_sd_mm, r.horizontal_sd_mrad[0], r.horizontal_sd_mrad[1]
    ));
    page.note(note);
    Ok(())
}

/// The overlay video's link and the contact sheet of the flagged samples, when the overlay
/// stage ran.
pub(super) fn overlay_note(page: &mut RunPage, dirs: &StageDirs) -> Result<(), PipelineError> {
    let Some(dir) = &dirs.overlay else {
        return Ok(());
    };
    let record = crate::overlay::OverlayRecord::read(&dir.join(crate::folders::SUMMARY))?;
    let mut spans = vec![
        Span::Text("The recording with the tracked markers (green), the gaps (yellow), the flagged samples (red) and the fitted mechanism (cyan) drawn on every frame: ".into()),
        Span::Link {
            text: format!("overlay/{}", record.video),
            // The report's folder and the overlay's are siblings in the run's folder.
            href: Path::new("..")
                .join("overlay")
                .join(&record.video)
                .display()
                .to_string(),
        },
        Span::Text(format!(" ({} frames, {}); ", record.frames, record.codec)),
        Span::Bold(format!("{} flagged sample(s)", record.flagged)),
        Span::Text(".".into()),
    ];
    match &record.review {
        Some(page) => spans.extend([
            Span::Text(" Review them one by one (accept, drop, or click the true centre) and download corrections.toml: ".into()),
            Span::Link {
                text: format!("overlay/{page}"),
                href: Path::new("..").join("overlay").join(page).display().to_string(),
            },
            Span::Text(".".into()),
        ]),
        None => spans.push(Span::Text(" No sample was flagged.".into())),
    }
    page.note(Note::new("Overlay").paragraph(spans));
    page.show_from("overlay", dir, "overlay-flagged", "The flagged samples (the first 48): 64 x 64 px of the recording about each marker, drawn twice as large, with its frame, its name and the tests it failed (flags.csv of the track stage, fit_flags.csv of the process stage).");
    Ok(())
}

/// With the elastic model: its effect against the rigid bench, a row per simulated quantity.
pub(super) fn elastic_note(page: &mut RunPage, compare: &CompareRecord) {
    if compare.elastic_effect.is_empty() {
        return;
    }
    let rows = compare
        .elastic_effect
        .iter()
        .map(|e| {
            vec![
                e.quantity.clone(),
                e.unit.clone(),
                format!("{:.3}", e.rigid_peak),
                format!("{:.4}", e.peak_difference),
                format!("{:.4}", e.rms_difference),
                format!("{:.2}", 100.0 * e.peak_difference / e.rigid_peak),
            ]
        })
        .collect();
    let header = [
        "quantity",
        "unit",
        "rigid peak",
        "peak difference",
        "RMS difference",
        "peak difference (% of peak)",
    ];
    page.note(
        Note::new("The elastic lever against the rigid bench")
            .text("The comparison ran against the coupled elastic simulation of the mechanism file. The same bench with every body rigid was simulated at the same motor reference; over one turn, sample by sample at the same crank angle:")
            .table(&header, rows),
    );
}

/// The kinematic fit's and the inverse dynamics' numbers.
pub(super) fn kinematics_note(page: &mut RunPage, process: &ProcessRecord) {
    let fit = &process.fit;
    let per_marker: String = fit
        .rms_per_marker
        .iter()
        .map(|(name, rms)| format!("{name} {:.3} mm", rms * 1e3))
        .collect::<Vec<_>>()
        .join(", ");
    page.note(
        Note::new("Kinematics and inverse dynamics")
            .text(format!(
                "{} samples; markers' RMS residual from the fitted mechanism {:.3} mm ({per_marker}); horizontal correction {:.2} mrad; {} toggle sample(s), largest condition number {:.1}.",
                process.samples,
                fit.rms * 1e3,
                process.horizontal_correction_rad.unwrap_or(0.0) * 1e3,
                process.inverse_dynamics.toggle_samples,
                process.inverse_dynamics.max_condition
            ))
            .text(residual_sentence(&process.residual_test)),
    );
}

/// The warnings of the process, fem and compare stages, each with its stage's name.
pub(super) fn stage_warnings(process: &ProcessRecord, records: &Records) -> Vec<StageWarning> {
    let mut warnings = Vec::new();
    let none = Vec::new();
    for (stage, s) in [
        ("process", &process.warnings()),
        ("fem", records.fem.as_ref().map_or(&none, |f| &f.warnings)),
        (
            "compare",
            records.compare.as_ref().map_or(&none, |c| &c.warnings),
        ),
        (
            "compare",
            records.measured.as_ref().map_or(&none, |m| &m.warnings),
        ),
    ] {
        warnings.extend(s.iter().map(|w| StageWarning {
            stage: stage.into(),
            warning: w.clone(),
        }));
    }
    warnings
}

/// The run's methods in a paragraph fit for a paper's methods section: how the markers were
/// smoothed and differentiated (the smooth stage, with what it chose), how the mechanism's
/// motion was estimated, the inverse dynamics, the lever's model and the comparison.
pub(super) fn methods_note(
    page: &mut RunPage,
    dirs: &StageDirs,
    process: &ProcessRecord,
    records: &Records,
) {
    let mut text = Vec::new();
    if let Ok(smooth) = SmoothRecord::read(&dirs.smooth.join("markers.summary.json")) {
        text.push(format!(
            "The markers' model-free kinematics (the smooth stage): each coordinate smoothed and differentiated ({}){}.",
            smooth.method,
            smooth_choices(&smooth)
        ));
    }
    text.push(method_sentence(process));
    if let Some(c) = &process.shutter {
        text.push(format!(
            "The rolling shutter's {} late samples were fitted at their own times: carried to their frame's time along the fitted motion (they moved {:.3} mm RMS, {:.3} mm at most, from the carry along each marker's own path) and the motion fitted again.",
            c.samples, c.rms_change_mm, c.max_change_mm
        ));
    }
    text.push(format!(
        "The liaison forces follow per sample from the Newton-Euler equations of the rigid bodies, a linear system solved by LU; a sample whose scaled 1-norm condition number exceeds {:.0e} is reported as a toggle position, not solved. Their bands: {}.",
        process.inverse_dynamics.max_condition_allowed, process.bands
    ));
    if let Some(fem) = &records.fem {
        let response = fem.response.as_ref().map_or(String::new(), |r| {
            format!(
                "; its forced response by Newmark's average acceleration (steps of at most {:.0e} s) with Rayleigh damping ({:.3e}, {:.3e})",
                r.max_step_s, r.rayleigh_alpha, r.rayleigh_beta
            )
        });
        text.push(format!(
            "The elastic lever was modelled by {} {} beam elements ({} supports) in the measured rigid motion (Kane's formalism), its lowest {} modes followed along the cycle by their modal assurance criterion{response}.",
            fem.elements, fem.element, fem.supports, fem.modes
        ));
    }
    if let Some(compare) = &records.compare {
        text.push(format!(
            "Measured and simulated quantities are compared as Fourier series of the crank angle ({} harmonics), the bench simulated at the recording's mean crank speed.",
            compare.harmonics
        ));
    }
    if let Some(m) = &records.measured {
        text.push(measured_sentence(m));
    }
    page.note(Note::new("Methods").text(text.join(" ")));
}

/// What the smooth stage chose over the coordinates, in words (empty for Savitzky-Golay).
pub(super) fn smooth_choices(smooth: &SmoothRecord) -> String {
    let range = |v: Vec<f64>, what: &str, scale: f64, unit: &str| -> Option<String> {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (!v.is_empty()).then(|| format!("{what} {:.1} to {:.1}{unit}", lo * scale, hi * scale))
    };
    let p = &smooth.parameters;
    let parts: Vec<String> = [
        range(
            p.iter().filter_map(|c| c.cutoff_hz).collect(),
            "cutoffs",
            1.0,
            " Hz",
        ),
        range(
            p.iter().filter_map(|c| c.spline_dof).collect(),
            "effective degrees of freedom",
            1.0,
            "",
        ),
        range(
            p.iter().filter_map(|c| c.noise_m).collect(),
            "noise",
            1e6,
            " um",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!(", choosing per coordinate: {}", parts.join("; ")),
    }
}

/// How the process stage estimated the motion, in words: the smoother (and the periodic
/// refit), or the markers' filter through the loop's analysis with what the Butterworth filter
/// or the smoothing spline chose over the coordinates.
pub(super) fn method_sentence(process: &ProcessRecord) -> String {
    let d = &process.differentiation;
    if process.smoother.is_some() {
        let periodic = match process.periodic.is_some() {
            true => ", the drivers then refitted as Fourier series of the crank angle",
            false => "",
        };
        return format!("The motion was estimated by the Kalman/RTS smoother on the mechanism's driving coordinates{periodic}.");
    }
    let range = |v: Vec<f64>, what: &str, unit: &str| match v.is_empty() {
        true => String::new(),
        false => {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!(" ({what} {lo:.1} to {hi:.1}{unit} over the markers' coordinates)")
        }
    };
    let cutoffs = range(
        d.choices.iter().filter_map(|c| c.cutoff_hz).collect(),
        "cutoffs",
        " Hz",
    );
    let dof = range(
        d.choices.iter().filter_map(|c| c.spline_dof).collect(),
        "effective degrees of freedom",
        &format!(" of {}", process.samples),
    );
    format!(
        "The markers were smoothed and differentiated ({}){cutoffs}{dof}, then fitted by the mechanism sample by sample.",
        d.method
    )
}

/// The fitted mechanism's residual test in words (fit_flags.csv of the process stage).
pub(super) fn residual_sentence(test: &crate::process::ResidualTestRecord) -> String {
    let level = format!("at a false-alarm level of {:.0e}", test.false_alarm);
    if let Some(why) = &test.skipped {
        return format!("The fitted mechanism's residual test ({level}) {why}.");
    }
    match (test.flagged, test.left_out) {
        (0, _) => format!("No sample failed the fitted mechanism's residual test ({level})."),
        (n, true) => format!(
            "{n} sample(s) failed the fitted mechanism's residual test ({level}; fit_flags.csv): left out as gaps and the motion refitted ({} fits).",
            test.fits
        ),
        (n, false) => format!(
            "{n} sample(s) failed the fitted mechanism's residual test ({level}; fit_flags.csv): kept in the fit ([process] keep_flagged)."
        ),
    }
}

/// The measured comparison in the methods' words.
pub(super) fn measured_sentence(m: &MeasuredRecord) -> String {
    let filter = m.spec.cutoff_hz.map_or(String::new(), |hz| {
        format!(", low-passed at {hz} Hz by a zero-lag fourth-order Butterworth filter")
    });
    let friction = if m.friction.is_empty() {
        String::new()
    } else {
        format!("; the share of the frictionless model's squared error that the file's friction ({}) explains is stated once the clocks are aligned", m.friction.join(", "))
    };
    format!(
        "The computed joint torques and forces are compared with the rig's measurement ({}{filter}) on its own clock (times shifted by {} s), the computed series carried to the measured times by a natural cubic spline; the lag is the shift (within {} s) that leaves the difference least variable{friction}.",
        m.measured, m.spec.time_offset_s, m.spec.max_lag_s
    )
}

/// The measured comparison's table: each quantity's RMS and mean difference, peaks, lag and
/// the share the friction explains.
pub(super) fn measured_note(page: &mut RunPage, m: &MeasuredRecord) {
    let rows = m
        .quantities
        .iter()
        .map(|q| {
            let share =
                q.c.friction_share
                    .map_or("-".to_string(), |s| format!("{:.1}", 100.0 * s));
            vec![
                q.quantity.clone(),
                q.unit.clone(),
                q.c.samples.to_string(),
                format!("{:.4}", q.c.rms_difference),
                format!("{:+.4}", q.c.mean_difference),
                format!("{:.3} at {:.3} s", q.c.computed_peak.0, q.c.computed_peak.1),
                format!("{:.3} at {:.3} s", q.c.measured_peak.0, q.c.measured_peak.1),
                format!("{:.3}", q.c.correlation),
                format!("{:+.1}", 1e3 * q.c.lag),
                format!("{:.4}", q.c.rms_after_lag),
                share,
            ]
        })
        .collect();
    let header = [
        "quantity",
        "unit",
        "samples",
        "RMS difference",
        "mean difference",
        "computed peak",
        "measured peak",
        "correlation",
        "lag (ms)",
        "RMS after the lag",
        "friction explains (%)",
    ];
    page.note(
        Note::new("Computed against the rig's measurement")
            .text(format!(
                "The measured table {} (time column '{}'), each column against the forces table's; measured minus computed.",
                m.measured, m.time_column
            ))
            .table(&header, rows),
    );
}

/// The comparison's table: each quantity's NRMSE, peaks and phase lag.
pub(super) fn comparison_note(page: &mut RunPage, compare: &CompareRecord) {
    let rows = compare
        .quantities
        .iter()
        .map(|q| {
            vec![
                q.quantity.clone(),
                q.unit.clone(),
                format!("{:.2}", 100.0 * q.nrmse),
                format!("{:.3}", q.rms_error),
                format!("{:.3}", q.measured_peak),
                format!("{:.1}", q.measured_peak_angle_deg),
                format!("{:.3}", q.simulated_peak),
                format!("{:.1}", q.simulated_peak_angle_deg),
                format!("{:.2}", q.phase_lag_deg),
            ]
        })
        .collect();
    let header = [
        "quantity",
        "unit",
        "NRMSE (%)",
        "RMS error",
        "measured peak",
        "at (deg)",
        "simulated peak",
        "at (deg)",
        "phase lag (deg)",
    ];
    page.note(
        Note::new("Measured against simulated")
            .text(format!(
                "Recording's mean crank speed {:.2} rpm; the {} bench simulated at {:.2} rpm (motor reference {:.2} rpm, the file's {:.2} rpm); {} harmonics of the crank angle.",
                compare.measured_crank_speed_rpm,
                compare.model,
                compare.simulated_crank_speed_rpm,
                compare.motor_reference_rpm_simulated.unwrap_or(f64::NAN),
                compare.motor_reference_rpm_in_file.unwrap_or(f64::NAN),
                compare.harmonics
            ))
            .table(&header, rows),
    );
}

/// The lever's model, its frequency ranges and its deflection against the measured one.
pub(super) fn lever_note(page: &mut RunPage, fem: &FemRecord) {
    let rows = fem
        .frequency_range_hz
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let at = |i: usize| r.get(i).copied().unwrap_or(f64::NAN);
            vec![
                (k + 1).to_string(),
                format!("{:.2}", at(0)),
                format!("{:.2}", at(1)),
            ]
        })
        .collect();
    let meas = |f: fn(&MeasuredDeflection) -> f64| fem.measured.as_ref().map_or(f64::NAN, f);
    page.note(
        Note::new("The elastic lever")
            .text(format!(
                "{} {} elements, supports {:?}; smallest MAC between successive samples {:.4}; full against symmetric frequencies within {:.1e} (relative).",
                fem.elements,
                fem.element,
                fem.supports.as_str(),
                fem.smallest_mac_along_the_cycle,
                fem.full_vs_symmetric_max_relative,
            ))
            .table(&["mode", "lowest (Hz)", "highest (Hz)"], rows)
            .text(format!(
                "Deflection at the markers: model {:.3} mm RMS, measured residual {:.3} mm RMS, correlation {:.2}.",
                meas(|m| m.rms_model_detrended_m) * 1e3,
                meas(|m| m.rms_measured_detrended_m) * 1e3,
                meas(|m| m.correlation)
            )),
    );
}
