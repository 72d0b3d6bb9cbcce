//! The simulated bench the `compare` stage measures a recording against: the rigid bench
//! (`flexbench-mechanism`) or, for a file with an elastic body, the coupled elastic one
//! (`flexbench-flexible`), run at the recording's mean crank speed (the motor's reference speed
//! set so) and given as series per simulated sample: the crank angle, the markers' kinematics
//! and the forces row. With the elastic model the rigid bench is also run at the same reference
//! speed, so that the elastic lever's effect can be stated.

use std::f64::consts::TAU;

use flexbench_contracts::series::{slope, unwrap_angles};
use flexbench_mechanism::inverse::{InverseSample, DEFAULT_MAX_CONDITION};
use flexbench_mechanism::model::ForceKind;
use flexbench_mechanism::simulate::{Settled, SimConfig, Simulation};
use flexbench_mechanism::Mechanism;

use crate::simulate::{FlexConfig, FlexSimulation};
use crate::system::System;
use crate::FlexError;

/// Which model a simulated bench ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Rigid bodies (the mechanism stage's simulation).
    Rigid,
    /// Rigid and elastic bodies coupled (the flexible crate's simulation).
    Coupled,
}

impl Model {
    /// The model of a mechanism file: coupled when it has an elastic body or a prescribed driver.
    pub fn of(mech: &Mechanism) -> Model {
        if System::needed_for(mech) {
            Model::Coupled
        } else {
            Model::Rigid
        }
    }

    /// Its name in the record and the figures' captions.
    pub fn name(&self) -> &'static str {
        match self {
            Model::Rigid => "rigid",
            Model::Coupled => "elastic (coupled)",
        }
    }
}

/// A simulated run's series, one entry per output sample.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSeries {
    /// The crank angle, unwrapped, rad.
    pub phi: Vec<f64>,
    /// Per sample, each marker's x, y (m), vx, vy (m/s), ax, ay (m/s^2), bench frame.
    pub marks: Vec<Vec<f64>>,
    /// Per sample, the forces row in the mechanism's `force_columns` order (N, N m).
    pub forces: Vec<Vec<f64>>,
}

impl SimSeries {
    /// A simulated quantity's series by its compared name: `<marker> ax` or `<marker> ay`
    /// (m/s^2, bench frame) or a forces column (N, N m); None when the mechanism has none.
    pub fn quantity(&self, mech: &Mechanism, name: &str) -> Option<Vec<f64>> {
        if let Some(col) = mech.force_columns().iter().position(|c| c == name) {
            return Some(self.forces.iter().map(|r| r[col]).collect());
        }
        let (marker, axis) = name.rsplit_once(' ')?;
        let mi = mech.markers.iter().position(|m| m.name == marker)?;
        let c = match axis {
            "ax" => 4,
            "ay" => 5,
            _ => return None,
        };
        Some(self.marks.iter().map(|r| r[6 * mi + c]).collect())
    }
}

/// The bench simulated at the recording's crank speed.
pub struct SimulatedBench {
    /// The model that ran.
    pub model: Model,
    /// Its series.
    pub series: SimSeries,
    /// The simulation's mean crank speed, rad/s.
    pub speed: f64,
    /// The motor's reference speed in the file, rad/s (None without a motor).
    pub file_ref: Option<f64>,
    /// The reference speed the simulation ran at, rad/s.
    pub adjusted: Option<f64>,
    /// With the coupled model: the rigid bench (the same file, its bodies rigid) at the same
    /// reference speed; None with the rigid model or when a driver is prescribed.
    pub rigid: Option<SimSeries>,
}

/// One run of a turn and a half: the crank angle (unwrapped, rad), the mean crank speed (rad/s)
/// and what the series are made from.
struct Turns {
    phi: Vec<f64>,
    speed: f64,
    run: Run,
}

/// The simulation a [`Turns`] came from.
enum Run {
    Rigid(Simulation),
    Coupled(Box<System>, FlexSimulation),
}

/// A turn and a half of `model` at `per_turn` samples a turn of `turn` s after 3 s of settling;
/// the rigid model records from `from` when given (the settled state of the same reference
/// speed) and returns the settled state it used.
fn turns(
    model: Model,
    mech: &Mechanism,
    ci: usize,
    turn: f64,
    per_turn: f64,
    from: Option<Settled>,
) -> Result<(Turns, Option<Settled>), FlexError> {
    let cfg = SimConfig {
        duration: 1.5 * turn,
        rate: per_turn / turn,
        settle: 3.0,
        ..SimConfig::default()
    };
    let (t, mut phi, run, settled) = match model {
        Model::Rigid => {
            let settled = match from {
                Some(s) => s,
                None => mech.settle(&cfg)?,
            };
            let sim = mech.simulate_from(&settled, &cfg)?;
            let t: Vec<f64> = sim.samples.iter().map(|s| s.t).collect();
            let phi: Vec<f64> = sim.samples.iter().map(|s| s.q[3 * ci + 2]).collect();
            (t, phi, Run::Rigid(sim), Some(settled))
        }
        Model::Coupled => {
            let sys = System::new(mech)?;
            let fc = FlexConfig {
                duration: cfg.duration,
                rate: cfg.rate,
                settle: cfg.settle,
                rtol: 1e-8,
                atol: 1e-11,
            };
            let sim = sys.simulate(&fc, &mut |_| {})?;
            let t: Vec<f64> = sim.samples.iter().map(|s| s.t).collect();
            let phi: Vec<f64> = sim
                .samples
                .iter()
                .map(|s| sys.shadow_state(s).0[3 * ci + 2])
                .collect();
            (t, phi, Run::Coupled(Box::new(sys), sim), None)
        }
    };
    unwrap_angles(&mut phi);
    let speed = slope(&t, &phi);
    Ok((Turns { phi, speed, run }, settled))
}

impl Turns {
    /// The run's series: the rigid model's forces by the inverse dynamics of each sample, the
    /// coupled model's from its multipliers.
    fn series(self, mech: &Mechanism) -> Result<SimSeries, FlexError> {
        let (marks, forces) = match &self.run {
            Run::Rigid(sim) => rigid_rows(mech, sim)?,
            Run::Coupled(sys, sim) => (
                sim.samples
                    .iter()
                    .map(|s| {
                        sys.marker_states(s)
                            .iter()
                            .flat_map(|[p, v, a]| [p.x, p.y, v.x, v.y, a.x, a.y])
                            .collect()
                    })
                    .collect(),
                sim.samples.iter().map(|s| sys.forces_row(s)).collect(),
            ),
        };
        Ok(SimSeries {
            phi: self.phi,
            marks,
            forces,
        })
    }
}

/// The rigid run's marker kinematics and forces rows.
type Rows = (Vec<Vec<f64>>, Vec<Vec<f64>>);

/// The markers' kinematics and the inverse dynamics' forces of every sample of a rigid run.
fn rigid_rows(mech: &Mechanism, sim: &Simulation) -> Result<Rows, FlexError> {
    let states: Vec<_> = sim.samples.iter().map(|s| (&s.q, &s.qd, &s.qdd)).collect();
    let forces = mech
        .inverse_dynamics_batch(&states, DEFAULT_MAX_CONDITION)?
        .into_iter()
        .zip(&sim.samples)
        .map(|(solved, s)| match solved {
            InverseSample::Solved { forces, .. } => Ok(forces),
            InverseSample::Toggle { condition } => Err(FlexError::Toggle { t: s.t, condition }),
        })
        .collect::<Result<_, _>>()?;
    let marks = sim
        .samples
        .iter()
        .map(|s| mech.marker_kinematics(&s.q, &s.qd, &s.qdd))
        .collect();
    Ok((marks, forces))
}

/// The bench simulated with the motor's reference speed set so that it turns at the recording's
/// mean crank speed `speed` (secant iterations, to 1e-5 of it); the file's reference as it is
/// when the mechanism has no motor. The secant's runs are coarse (200 samples a turn); the one
/// kept (2000) is recorded from the last run's settling for the rigid model, which is its own:
/// the settling does not depend on the samples recorded after it. The coupled model settles
/// anew each run.
pub fn simulate_at_speed(
    mech: &mut Mechanism,
    ci: usize,
    speed: f64,
) -> Result<SimulatedBench, FlexError> {
    let model = Model::of(mech);
    let turn = TAU / speed.abs().max(1e-9);
    let motor = mech
        .forces
        .iter()
        .position(|f| matches!(f.kind, ForceKind::Motor { .. }));
    let set_ref = |mech: &mut Mechanism, w: f64| {
        if let Some(ForceKind::Motor { omega_ref, .. }) = motor.map(|i| &mut mech.forces[i].kind) {
            *omega_ref = w;
        }
    };
    let file_ref = motor.and_then(|i| match mech.forces[i].kind {
        ForceKind::Motor { omega_ref, .. } => Some(omega_ref),
        _ => None,
    });
    // The reference the bench holds, and its settling.
    let (mut adjusted, mut settled) = (file_ref, None);
    if let Some(w0) = file_ref {
        let (run, st) = turns(model, mech, ci, turn, 200.0, None)?;
        settled = st;
        let (mut a, mut fa) = (w0, run.speed - speed);
        let mut b = w0 - fa;
        for _ in 0..8 {
            set_ref(mech, b);
            let (run, st) = turns(model, mech, ci, turn, 200.0, None)?;
            (adjusted, settled) = (Some(b), st);
            let fb = run.speed - speed;
            if fb.abs() <= 1e-5 * speed.abs() || (fb - fa).abs() < 1e-15 {
                break;
            }
            let next = b - fb * (b - a) / (fb - fa);
            (a, fa, b) = (b, fb, next);
        }
    }
    let (run, _) = turns(model, mech, ci, turn, 2000.0, settled)?;
    let speed = run.speed;
    let series = run.series(mech)?;
    let rigid = match model {
        Model::Coupled => rigid_counterpart(mech)
            .map(|rigid| -> Result<SimSeries, FlexError> {
                let (run, _) = turns(Model::Rigid, &rigid, ci, turn, 2000.0, None)?;
                run.series(&rigid)
            })
            .transpose()?,
        Model::Rigid => None,
    };
    Ok(SimulatedBench {
        model,
        series,
        speed,
        file_ref,
        adjusted,
        rigid,
    })
}

/// The same mechanism with every body rigid (its rigid mass, inertia and centroid, which an
/// elastic body's file also gives); None when a driver is prescribed (the rigid simulation
/// drives by forces only).
fn rigid_counterpart(mech: &Mechanism) -> Option<Mechanism> {
    if mech.drivers.iter().any(|d| d.prescribed) {
        return None;
    }
    let mut rigid = mech.clone();
    rigid.bodies.iter_mut().for_each(|b| b.elastic = None);
    Some(rigid)
}
