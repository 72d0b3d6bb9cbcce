//! The lever's modes followed along the cycle and its forced response, sample by sample.

use super::*;

/// The modes along the cycle as followed: the first sample's modes and the index of each
/// followed mode among them (for the shapes' figure), the crank angle of each sample (rad),
/// the modes followed and the smallest MAC between successive samples' matched modes.
pub(super) struct Followed<'a> {
    pub(super) first: InstantModes,
    pub(super) first_labels: Vec<usize>,
    pub(super) crank: &'a [f64],
    pub(super) count: usize,
    pub(super) worst_mac: f64,
}

/// The modal table and what it shows about the followed modes.
pub(super) struct Modal {
    pub(super) table: Table,
    /// Per followed mode, its frequency (symmetric problem) at each sample, Hz.
    pub(super) per_mode: Vec<Vec<Option<f64>>>,
    /// Largest relative gap of the full problem's frequencies to the symmetric one's.
    pub(super) max_gap: f64,
    /// Largest |damping ratio| of the full problem.
    pub(super) max_zeta: f64,
}

/// The modal table made as the samples' modes come, one after the other (none held): each
/// sample's modes followed from the sample before by their shape ([`ModeTracker`]), one row
/// per followed mode.
pub(super) struct ModalCollector<'a> {
    pub(super) mesh: &'a Mesh,
    pub(super) m_free: &'a nalgebra::DMatrix<f64>,
    pub(super) free: &'a [usize],
    pub(super) crank: &'a [f64],
    pub(super) count: usize,
    pub(super) tracker: ModeTracker,
    pub(super) rows: Vec<ModeRow>,
    pub(super) per_mode: Vec<Vec<Option<f64>>>,
    pub(super) max_gap: f64,
    pub(super) max_zeta: f64,
    pub(super) first: Option<(InstantModes, Vec<usize>)>,
    /// Samples taken so far.
    pub(super) taken: usize,
}

impl<'a> ModalCollector<'a> {
    /// A collector of `count` followed modes over samples at crank angles `crank` (rad).
    pub(super) fn new(
        mesh: &'a Mesh,
        m_free: &'a nalgebra::DMatrix<f64>,
        free: &'a [usize],
        crank: &'a [f64],
        count: usize,
    ) -> Self {
        ModalCollector {
            mesh,
            m_free,
            free,
            crank,
            count,
            tracker: ModeTracker::new(count),
            rows: Vec::new(),
            per_mode: vec![Vec::new(); count],
            max_gap: 0.0,
            max_zeta: 0.0,
            first: None,
            taken: 0,
        }
    }

    /// The next sample's modes: followed, its rows made.
    pub(super) fn take(&mut self, im: InstantModes) -> Result<(), flexbench_fem::FemError> {
        let s = self.taken;
        self.taken += 1;
        let idx = self.tracker.next(&im, self.m_free);
        let shapes = self.tracker.followed_shapes();
        for (label, (&j, shape)) in idx.iter().zip(shapes).enumerate() {
            let f = im.modes.frequency_hz(j);
            let fl = im.full.get(j).copied().flatten();
            // A label left without a mode (a lever with fewer than twice the modes followed)
            // has no frequency, and no share to tell its kind.
            let share = shape.map_or(f64::NAN, |phi| {
                flexbench_fem::modal::transverse_share(self.mesh, self.m_free, self.free, phi)
            });
            self.rows.push(ModeRow {
                t: im.t,
                crank_angle: self.crank[s],
                mode: label + 1,
                kind: if share > 0.5 {
                    ModeKind::Bending
                } else {
                    ModeKind::Axial
                },
                freq_hz: f.is_finite().then_some(f),
                full_freq_hz: fl.map(|x| x.0),
                damping_ratio: fl.map(|x| x.1),
            });
            self.per_mode[label].push(f.is_finite().then_some(f));
            if let Some((ff, z)) = fl {
                self.max_gap = self.max_gap.max((ff / f - 1.0).abs());
                self.max_zeta = self.max_zeta.max(z.abs());
            }
        }
        if self.first.is_none() {
            self.first = Some((im, idx));
        }
        Ok(())
    }

    /// The modal table and the modes as followed, once every sample is taken.
    pub(super) fn finish(self) -> Result<(Modal, Followed<'a>), PipelineError> {
        let Some((first, first_labels)) = self.first else {
            return Err(PipelineError::Input(
                "no sample to compute the lever's modes at: give a bodies table with rows".into(),
            ));
        };
        let modal = Modal {
            table: Modes::new(self.rows)?.to_table()?,
            per_mode: self.per_mode,
            max_gap: self.max_gap,
            max_zeta: self.max_zeta,
        };
        let followed = Followed {
            first,
            first_labels,
            crank: self.crank,
            count: self.count,
            worst_mac: self.tracker.worst_mac(),
        };
        Ok((modal, followed))
    }
}

/// Rayleigh damping of ratio `zeta` exact at the lowest and the highest of the `count` modes
/// followed at the first sample (`first`: its modes; the labels start as its lowest `count`).
pub(super) fn rayleigh(first: &InstantModes, count: usize, zeta: f64) -> Damping {
    let f_top = first.modes.frequency_hz(count.saturating_sub(1));
    Damping::from_ratio(zeta, first.modes.frequency_hz(0), f_top)
}

/// The forced response along the cycle with Rayleigh `damping`.
pub(super) fn forced(
    mesh: &Mesh,
    g: &flexbench_fem::assembly::GlobalMatrices,
    instants: &[LeverInstant],
    damping: Damping,
    cfg: &FemConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Response, PipelineError> {
    let rcfg = flexbench_fem::response::ResponseConfig {
        damping,
        max_step: cfg.max_step,
    };
    flexbench_fem::response::forced_response(mesh, g, instants, cfg.supports, &rcfg, progress)
        .map_err(|source| PipelineError::FemStep {
            context: "forced response".into(),
            source,
        })
}
