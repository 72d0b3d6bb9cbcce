//! The `fem` job: the elastic lever along the recorded (or simulated) motion. From the bodies
//! table (the lever's and the crank's motion) and the forces table (the liaison forces at B and
//! C'), the lever's modes at every sample (symmetric and full problems, followed by their
//! shape), the modal table and the figures of the seeds.

use std::path::{Path, PathBuf};

use flexbench_contracts::{Column, Table};
use flexbench_fem::cycle::{cycle_modes_each, CycleSpec, InstantModes};
use flexbench_fem::deflection::Comparison;
use flexbench_fem::followed::{rayleigh, Followed, Modal, ModalCollector};
use flexbench_fem::response::{Damping, Response};
use flexbench_fem::{ElementKind, Lever, LeverInstant, Mesh, Supports};
use flexbench_mechanism::Mechanism;
use flexbench_report::{Curve, Figure, Panel};
use nalgebra::Vector2;
use serde::{Deserialize, Serialize};

use crate::StageRecord;
use crate::{ensure_dir, PipelineError};

mod modal;
use modal::*;
mod outputs;
use outputs::*;
mod measured;
use measured::*;

/// Largest imbalance of the liaison forces against the lever's rigid motion, relative to the
/// largest term, before the job warns that the forces and the motion do not belong together
/// (computed with the same mechanism they balance to rounding: 1e-14 on the bench).
pub const BALANCE_WARNING: f64 = 1e-6;

/// Default damping ratio of the forced response: 1 %, a small structural damping for a steel
/// bar with pinned ends.
pub const DEFAULT_DAMPING: f64 = 0.01;

/// Default longest step of the forced response, s: 50 us, so that Newmark's period error
/// (w dt)^2 / 12 is 4e-5 for mode 1 of the bench's lever (70 Hz) and 3 % for mode 6 (2.5 kHz).
pub const DEFAULT_STEP: f64 = 5e-5;

/// What the `fem` job is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct FemConfig {
    /// The element.
    pub element: ElementKind,
    /// Number of elements along the lever.
    pub elements: usize,
    /// How the lever is held in its frame (the bench: pinned at B and C').
    pub supports: Supports,
    /// Modes followed along the cycle and written (the lowest at the first sample).
    pub modes: usize,
    /// Damping ratio of the forced response (Rayleigh, exact at the first and the highest
    /// followed mode at the first sample); None: no forced response.
    pub damping: Option<f64>,
    /// Longest integration step of the forced response, s.
    pub max_step: f64,
    /// The measured deflection to compare with: the `fit_residuals` table of `process` on the
    /// same run (fitted minus measured marker positions, bench frame).
    pub measured: Option<PathBuf>,
}

impl Default for FemConfig {
    fn default() -> Self {
        FemConfig {
            element: ElementKind::Quintic,
            elements: 10,
            supports: Supports::Pinned,
            modes: 6,
            damping: Some(DEFAULT_DAMPING),
            max_step: DEFAULT_STEP,
            measured: None,
        }
    }
}

/// The lever's motion and loads read from the tables, one instant per sample, with the crank
/// angle (rad, unwrapped) of each.
fn read_instants(
    bodies: &Path,
    forces: &Path,
    mech: &Mechanism,
    centroid: Vector2<f64>,
) -> Result<(Vec<LeverInstant>, Vec<f64>), PipelineError> {
    let gravity = mech.gravity;
    let table = crate::tables::bodies_of(bodies, mech)?;
    let Some(lever) = table.body("lever") else {
        return Err(PipelineError::Input(format!("{}: no rows for body 'lever': give the bodies table that `process` or `simulate` wrote", bodies.display())));
    };
    let ff = crate::tables::forces_of(forces, mech)?;
    let fcol = |n: &str| -> Result<&[Option<f64>], PipelineError> {
        ff.column(n).ok_or_else(|| {
            PipelineError::Input(format!(
                "{}: no column '{n}': give the forces table of the bench's process stage",
                forces.display()
            ))
        })
    };
    let (bx, by, cx, cy) = (fcol("B_x")?, fcol("B_y")?, fcol("C_x")?, fcol("C_y")?);
    if ff.t().len() != table.t().len() {
        return Err(PipelineError::Input(format!(
            "{} has {} samples and {} has {} of the lever: give the forces and the bodies of the same run",
            forces.display(),
            ff.t().len(),
            bodies.display(),
            table.t().len()
        )));
    }
    let col = |n: &str| lever.column(n).unwrap_or_default();
    let (phi, omega, ax, ay, eps) = (
        col("phi"),
        col("omega"),
        col("ax"),
        col("ay"),
        col("epsilon"),
    );
    let mut out = Vec::with_capacity(table.t().len());
    for (k, (&ti, &tfi)) in table.t().iter().zip(ff.t()).enumerate() {
        let need = |v: Option<f64>, what: &str, file: &Path| -> Result<f64, PipelineError> {
            v.ok_or_else(|| PipelineError::Input(format!("{}: sample {} has no finite {what}: the FEM needs every sample (drop the rejected ones first)", file.display(), k + 1)))
        };
        if (ti - tfi).abs() > 1e-9 * ti.abs().max(1.0) {
            return Err(PipelineError::Input(format!("sample {}: t = {ti} s in {} but {tfi} s in {}: give the forces and the bodies of the same run", k + 1, bodies.display(), forces.display())));
        }
        let (p, w, e) = (
            need(phi[k], "lever phi", bodies)?,
            need(omega[k], "lever omega", bodies)?,
            need(eps[k], "lever epsilon", bodies)?,
        );
        let a_g = Vector2::new(
            need(ax[k], "lever ax", bodies)?,
            need(ay[k], "lever ay", bodies)?,
        );
        let a_b = LeverInstant::origin_acceleration(a_g, p, w, e, centroid);
        out.push(LeverInstant {
            t: ti,
            phi: p,
            omega: w,
            epsilon: e,
            a_b,
            force_b: Vector2::new(need(bx[k], "B_x", forces)?, need(by[k], "B_y", forces)?),
            force_c: Vector2::new(need(cx[k], "C_x", forces)?, need(cy[k], "C_y", forces)?),
            gravity,
        });
    }
    let mut crank_angle: Vec<f64> = match table.body("crank").and_then(|c| c.column("phi")) {
        Some(phi) => phi.iter().map(|p| p.unwrap_or(f64::NAN)).collect(),
        None => vec![f64::NAN; out.len()],
    };
    crate::unwrap_angles(&mut crank_angle);
    Ok((out, crank_angle))
}

/// The fem stage's record (`summary.json`): the lever's model, its modes along the cycle and the
/// forced response. Written and read back by this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FemRecord {
    /// Always "fem".
    pub job: String,
    /// The bodies table read.
    pub bodies: String,
    /// The forces table read.
    pub forces: String,
    /// The mechanism file read.
    pub mechanism: String,
    /// Element kind (quintic or frame).
    pub element: String,
    /// Elements along the lever.
    pub elements: usize,
    /// Supports (pinned, clamped-free, free-free).
    pub supports: String,
    /// Instants of the cycle analysed.
    pub samples: usize,
    /// Modes followed along the cycle.
    pub modes: usize,
    /// Per mode, its lowest and highest frequency along the cycle, Hz.
    #[serde(deserialize_with = "flexbench_contracts::json::nested_f64_or_nan")]
    pub frequency_range_hz: Vec<Vec<f64>>,
    /// Smallest MAC between successive instants' matched modes.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub smallest_mac_along_the_cycle: f64,
    /// Largest relative gap between the full problem's frequencies and the symmetric one's.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub full_vs_symmetric_max_relative: f64,
    /// Largest |damping ratio| of the full problem.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub max_abs_damping_ratio: f64,
    /// Worst relative balance of the lever's rigid motion by the liaison forces.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rigid_balance_worst_relative: f64,
    /// The model's deflection against the measured one, when given.
    pub measured: Option<MeasuredDeflection>,
    /// The forced response, when damping is given.
    pub response: Option<ResponseRecord>,
    /// What the data or the model made doubtful, in words.
    pub warnings: Vec<String>,
}

/// The model's deflection at the markers against the measured elastic residual.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredDeflection {
    /// The measured table.
    pub file: Option<String>,
    /// Samples compared.
    pub samples_compared: usize,
    /// RMS of the model's deflection, detrended, m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_model_detrended_m: f64,
    /// RMS of the measured deflection, detrended, m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_measured_detrended_m: f64,
    /// RMS of their difference, m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub rms_difference_m: f64,
    /// Their correlation.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub correlation: f64,
}

/// The forced response's settings and extremes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseRecord {
    /// Damping ratio of the response (the one the fem stage was given).
    pub damping_ratio: Option<f64>,
    /// Rayleigh's mass coefficient, 1/s.
    pub rayleigh_alpha: f64,
    /// Rayleigh's stiffness coefficient, s.
    pub rayleigh_beta: f64,
    /// Longest integration step, s.
    pub max_step_s: f64,
    /// Steps taken.
    pub steps: usize,
    /// Largest transverse deflection at a marker, m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub max_deflection_at_markers_m: f64,
    /// Largest quasi-static transverse deflection at a marker, m.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub max_quasi_static_deflection_at_markers_m: f64,
}

impl crate::StageRecord for FemRecord {
    const STAGE: &'static str = "fem";
}

/// Run the `fem` job: read, compute every instant's modes, follow them, then write the modal
/// table, the figures and summary.json into `out` (nothing is written when a step fails).
pub fn fem(
    bodies: &Path,
    forces: &Path,
    mechanism: &Path,
    cfg: &FemConfig,
    out: &Path,
    mut events: impl FnMut(crate::StageEvent),
) -> Result<(FemRecord, Vec<PathBuf>), PipelineError> {
    let mut progress =
        |k: usize, n: usize| events(crate::StageEvent::counted("modes along the cycle", k, n));
    let (mech, mesh) = lever_mesh(mechanism, cfg)?;
    let lever_body = mech.bodies.iter().find(|b| b.name == "lever");
    let centroid = lever_body.map(|b| b.centroid).unwrap_or_default();
    let (instants, crank) = read_instants(bodies, forces, &mech, centroid)?;
    let g = mesh.assemble();
    let worst_balance = flexbench_fem::loads::worst_rigid_balance(&instants, &mesh, &g);
    let free = mesh.free_dofs(cfg.supports);
    let m_free = g.m.select_rows(&free).select_columns(&free);
    let count = cfg.modes.min(free.len());
    let cycle = Cycle {
        mesh: &mesh,
        g: &g,
        instants: &instants,
        count,
    };
    let mut collector = ModalCollector::new(&mesh, &m_free, &free, &crank, count);
    let response = modes_and_response(&cycle, cfg, &mut collector, &mut progress)?;
    let (modal, followed) = collector.finish()?;
    let markers = lever_markers(&mech);
    let measured = match (&cfg.measured, &response) {
        (Some(path), Some((r, _))) => Some(compare_measured(path, &mesh, r, &instants, &markers)?),
        (Some(_), None) => return Err(PipelineError::Input(NEEDS_RESPONSE.into())),
        _ => None,
    };
    let deflection = response
        .as_ref()
        .map(|(r, _)| deflection_table(&mesh, r, &markers, measured.as_ref()))
        .transpose()?;
    let lever = LeverResult {
        mesh: &mesh,
        free: &free,
        followed: &followed,
        modal: &modal,
        response: response.as_ref(),
        deflection: deflection.as_ref(),
        markers: &markers,
    };
    let mut files = write_outputs(&lever, cfg, out)?;
    let run = FemRun {
        inputs: [bodies, forces, mechanism],
        samples: instants.len(),
        smallest_mac: followed.worst_mac,
        worst_balance,
        measured: measured
            .as_ref()
            .map(|c| MeasuredDeflection::of(c, cfg.measured.as_deref())),
    };
    let record = FemRecord::new(run, &lever, cfg);
    files.push(record.write(&out.join(crate::folders::SUMMARY))?);
    Ok((record, files))
}

/// The lever's mesh, matrices and samples, and the number of modes followed.
struct Cycle<'a> {
    mesh: &'a Mesh,
    g: &'a flexbench_fem::assembly::GlobalMatrices,
    instants: &'a [LeverInstant],
    count: usize,
}

/// Every sample's modes, handed to `collector` in order, and, with damping asked, the forced
/// response: the response (one sample after the other) runs beside the modes (every sample
/// apart), since it needs only the first sample's, which the cycle's first run begins with
/// (the same numbers).
fn modes_and_response(
    cycle: &Cycle,
    cfg: &FemConfig,
    collector: &mut ModalCollector,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Option<(Response, Damping)>, PipelineError> {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let Cycle {
        mesh,
        g,
        instants,
        count,
    } = *cycle;
    let Some(zeta) = cfg.damping else {
        let n = instants.len();
        let each = &mut |m| collector.take(m);
        lever_modes(mesh, g, instants, cfg, count, &mut |k| progress(k, n), each)?;
        return Ok(None);
    };
    let total = 2 * instants.len();
    let head = &instants[..instants.len().min(1)];
    let mut first = None;
    lever_modes(mesh, g, head, cfg, count, &mut |_| {}, &mut |m| {
        first = Some(m);
        Ok(())
    })?;
    let damping = match &first {
        Some(f) => rayleigh(f, count, zeta),
        // No sample: the forced response says so.
        None => Damping::from_ratio(zeta, 1.0, 2.0),
    };
    let done = AtomicUsize::new(0);
    let (modes, response) = std::thread::scope(|s| {
        let modes = s.spawn(|| {
            lever_modes(
                mesh,
                g,
                instants,
                cfg,
                count,
                &mut |k| done.store(k, Relaxed),
                &mut |m| collector.take(m),
            )
        });
        let mut step = |k: usize, _: usize| progress(done.load(Relaxed) + k, total);
        let response = forced(mesh, g, instants, damping, cfg, &mut step);
        let modes = modes
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (modes, response)
    });
    modes?;
    Ok(Some((response?, damping)))
}

/// Every instant's modes of the lever, handed to `each` in order: the lowest 2 `count` modes,
/// all that following `count` modes reads. `progress` is told each instant done.
fn lever_modes(
    mesh: &Mesh,
    g: &flexbench_fem::assembly::GlobalMatrices,
    instants: &[LeverInstant],
    cfg: &FemConfig,
    count: usize,
    progress: &mut dyn FnMut(usize),
    each: &mut dyn FnMut(InstantModes) -> Result<(), flexbench_fem::FemError>,
) -> Result<(), PipelineError> {
    let spec = CycleSpec {
        supports: cfg.supports,
        full: cfg.modes,
        lowest: 2 * count,
    };
    cycle_modes_each(mesh, g, instants, spec, &mut |k, _| progress(k), each).map_err(|source| {
        PipelineError::FemStep {
            context: "the lever's modes".into(),
            source,
        }
    })
}

/// The error of a comparison with the measured deflection asked without the forced response.
const NEEDS_RESPONSE: &str = "--measured needs the forced response (drop --no-response)";

/// The markers on the lever: name and abscissa from B along the lever, m.
fn lever_markers(mech: &Mechanism) -> Vec<(String, f64)> {
    let lever_index = mech.bodies.iter().position(|b| b.name == "lever");
    mech.markers
        .iter()
        .filter(|m| Some(m.body) == lever_index)
        .map(|m| (m.name.clone(), m.local_frame.x))
        .collect()
}

/// The warning when the liaison forces do not balance the lever's rigid motion.
fn balance_warning(worst_balance: f64) -> Vec<String> {
    if worst_balance > BALANCE_WARNING {
        vec![format!("the liaison forces at B and C' balance the lever's rigid motion only to {worst_balance:.1e} of the largest term: were the forces and the bodies computed with this mechanism file?")]
    } else {
        Vec::new()
    }
}

/// The mechanism and the lever's mesh from its elastic section.
fn lever_mesh(mechanism: &Path, cfg: &FemConfig) -> Result<(Mechanism, Mesh), PipelineError> {
    let file = flexbench_mechanism::file::load(mechanism)?;
    let sec = file.lever.ok_or_else(|| {
        PipelineError::Input(format!("{}: no elastic lever (keys E, rho, area, inertia, l2 of the bench form): the FEM needs the lever's section", mechanism.display()))
    })?;
    let mech = file.mechanism;
    if !mech.bodies.iter().any(|b| b.name == "lever") {
        return Err(PipelineError::Input(format!(
            "{}: no body named 'lever'",
            mechanism.display()
        )));
    }
    let lever = Lever::from_section(&sec).map_err(|source| PipelineError::FemStep {
        context: format!("{}: the lever's section", mechanism.display()),
        source,
    })?;
    let mesh = Mesh::new(lever, cfg.element, cfg.elements)?;
    if cfg.modes == 0 {
        return Err(PipelineError::Input("--modes must be at least 1".into()));
    }
    Ok((mech, mesh))
}

/// What the fem job computed, for its figures, files and record.
struct LeverResult<'a> {
    mesh: &'a Mesh,
    free: &'a [usize],
    followed: &'a Followed<'a>,
    modal: &'a Modal,
    response: Option<&'a (Response, Damping)>,
    deflection: Option<&'a Table>,
    markers: &'a [(String, f64)],
}

/// What the fem stage measured beside the lever's model, modes and response: its input tables
/// and mechanism file, the instants, the smallest MAC along the cycle, the rigid balance's
/// worst residual and the comparison with the measured deflection.
struct FemRun<'a> {
    inputs: [&'a Path; 3],
    samples: usize,
    smallest_mac: f64,
    worst_balance: f64,
    measured: Option<MeasuredDeflection>,
}

impl FemRecord {
    /// The record of a fem run: its inputs and measures, the lever's model, modes and response.
    fn new(run: FemRun, lever: &LeverResult, cfg: &FemConfig) -> FemRecord {
        let range = |v: &[Option<f64>]| -> Vec<f64> {
            let f: Vec<f64> = v.iter().flatten().copied().collect();
            vec![
                f.iter().copied().fold(f64::INFINITY, f64::min),
                f.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ]
        };
        let at = |v: &[nalgebra::DVector<f64>]| {
            lever
                .markers
                .iter()
                .map(|(_, x)| {
                    v.iter()
                        .map(|d| lever.mesh.displacement_at(d, *x).1.abs())
                        .fold(0.0, f64::max)
                })
                .fold(0.0, f64::max)
        };
        let [bodies, forces, mechanism] = run.inputs.map(|p| p.display().to_string());
        FemRecord {
            job: "fem".into(),
            bodies,
            forces,
            mechanism,
            element: cfg.element.name().into(),
            elements: cfg.elements,
            supports: cfg.supports.name().into(),
            samples: run.samples,
            modes: lever.followed.count,
            frequency_range_hz: lever.modal.per_mode.iter().map(|v| range(v)).collect(),
            smallest_mac_along_the_cycle: run.smallest_mac,
            full_vs_symmetric_max_relative: lever.modal.max_gap,
            max_abs_damping_ratio: lever.modal.max_zeta,
            rigid_balance_worst_relative: run.worst_balance,
            measured: run.measured,
            response: lever.response.map(|(r, d)| ResponseRecord {
                damping_ratio: cfg.damping,
                rayleigh_alpha: d.alpha,
                rayleigh_beta: d.beta,
                max_step_s: cfg.max_step,
                steps: r.steps,
                max_deflection_at_markers_m: at(&r.d),
                max_quasi_static_deflection_at_markers_m: at(&r.quasi_static),
            }),
            warnings: balance_warning(run.worst_balance),
        }
    }
}
