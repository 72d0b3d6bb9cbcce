//! The lever's modes followed along the cycle, made into the modal table as the instants' modes
//! come (none held): each instant's modes matched to the instant before's by their shape
//! ([`ModeTracker`]), each followed mode told bending or axial by its transverse share, the full
//! problem's frequencies and damping ratios set beside the symmetric one's; and the Rayleigh
//! damping of the forced response from the first instant's modes.

use flexbench_contracts::{ModeKind, ModeRow, Modes, Table};

use crate::cycle::{InstantModes, ModeTracker};
use crate::response::Damping;
use crate::{FemError, Mesh};

/// The modes along the cycle as followed: the first sample's modes and the index of each
/// followed mode among them (for the shapes' figure), the crank angle of each sample (rad),
/// the modes followed and the smallest MAC between successive samples' matched modes.
pub struct Followed<'a> {
    /// The first sample's modes.
    pub first: InstantModes,
    /// Each followed mode's index among the first sample's modes.
    pub first_labels: Vec<usize>,
    /// The crank angle of each sample, rad.
    pub crank: &'a [f64],
    /// The modes followed.
    pub count: usize,
    /// The smallest MAC between successive samples' matched modes.
    pub worst_mac: f64,
}

/// The modal table and what it shows about the followed modes.
pub struct Modal {
    /// The modal table (`modal.csv`, `modal.parquet`): one row per sample and followed mode.
    pub table: Table,
    /// Per followed mode, its frequency (symmetric problem) at each sample, Hz.
    pub per_mode: Vec<Vec<Option<f64>>>,
    /// Largest relative gap of the full problem's frequencies to the symmetric one's.
    pub max_gap: f64,
    /// Largest |damping ratio| of the full problem.
    pub max_zeta: f64,
}

/// The modal table made as the samples' modes come, one after the other (none held): each
/// sample's modes followed from the sample before by their shape ([`ModeTracker`]), one row
/// per followed mode.
pub struct ModalCollector<'a> {
    mesh: &'a Mesh,
    m_free: &'a nalgebra::DMatrix<f64>,
    free: &'a [usize],
    crank: &'a [f64],
    count: usize,
    tracker: ModeTracker,
    rows: Vec<ModeRow>,
    per_mode: Vec<Vec<Option<f64>>>,
    max_gap: f64,
    max_zeta: f64,
    first: Option<(InstantModes, Vec<usize>)>,
    /// Samples taken so far.
    taken: usize,
}

impl<'a> ModalCollector<'a> {
    /// A collector of `count` followed modes over samples at crank angles `crank` (rad).
    pub fn new(
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
    pub fn take(&mut self, im: InstantModes) -> Result<(), FemError> {
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
                crate::modal::transverse_share(self.mesh, self.m_free, self.free, phi)
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
    pub fn finish(self) -> Result<(Modal, Followed<'a>), FemError> {
        let Some((first, first_labels)) = self.first else {
            return Err(FemError::NoInstant);
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
pub fn rayleigh(first: &InstantModes, count: usize, zeta: f64) -> Damping {
    let f_top = first.modes.frequency_hz(count.saturating_sub(1));
    Damping::from_ratio(zeta, first.modes.frequency_hz(0), f_top)
}
