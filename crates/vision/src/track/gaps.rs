//! The discs a locked frame left without a sample (the tracker's part of `outline`): each
//! sought by its visible outline about its prediction; a marker lost for frames carried on at
//! its last velocity and, about a marker of its body seen in the frame, sought along the arc at
//! their image spacing; the spacing that vouches for a centre the motion's gate refuses.

use super::*;

/// A carried-on prediction `p` moved onto the circle of its body's image spacing about a partner
/// seen in the frame (a rigid pair keeps its spacing; the velocity carried on does not turn
/// with the body): the nearest point of that circle.
fn on_spacing(p: Prediction, partner: Option<crate::gapfill::Partner>) -> Prediction {
    let Some(q) = partner else {
        return p;
    };
    let (du, dv) = (p.u - q.u, p.v - q.v);
    let d = du.hypot(dv);
    if d < 1e-9 {
        return p;
    }
    Prediction {
        u: q.u + du * q.spacing / d,
        v: q.v + dv * q.spacing / d,
        ..p
    }
}

/// The arc about `partner` from the angle of a lost marker's last place to that of where its
/// velocity carries it (`coasted`), widened by half its length on each side and by
/// [`ARC_WIDEN_MIN`] at least: a swing that slowed, or went on faster, is inside.
fn arc_about(
    partner: crate::gapfill::Partner,
    (coasted, last): (Prediction, (f64, f64)),
) -> crate::gapfill::Arc {
    let angle = |u: f64, v: f64| (v - partner.v).atan2(u - partner.u);
    let from = angle(last.0, last.1);
    let turn = (angle(coasted.u, coasted.v) - from + std::f64::consts::PI)
        .rem_euclid(std::f64::consts::TAU)
        - std::f64::consts::PI;
    let widen = (0.5 * turn.abs()).max(ARC_WIDEN_MIN);
    let (lo, hi) = if turn >= 0.0 {
        (from - widen, from + turn + widen)
    } else {
        (from + turn - widen, from + widen)
    };
    crate::gapfill::Arc { from: lo, to: hi }
}

/// The least widening of a lost marker's arc on each side, rad: a disc's radius at a spacing of
/// ten radii.
pub const ARC_WIDEN_MIN: f64 = 0.1;

/// How many frames a lost disc's last velocity is carried on for the outline's search
/// (`outline`): beyond, its place is too uncertain for a window about it.
pub const COAST_FRAMES: usize = 6;

/// How many frames back a gap's partner spacing is sought (`outline`): a second at 30
/// frames/s, a few crank turns' eighth at 240; a body's image spacing changes little over it.
pub const PARTNER_LOOKBACK: usize = 30;

impl Tracker<'_> {
    /// The discs a locked frame left without a sample, each fitted to its visible outline about
    /// its prediction (`gapfill::fill_gaps`) with the radius of its last blobs.
    pub(super) fn outline_gaps(
        &mut self,
        frame: &Mat,
        preds: &[Option<Prediction>],
        assigned: &mut [Option<Blob>],
    ) -> Result<(), VisionError> {
        // Most locked frames have no gap: nothing to seek, no radius to work out.
        if self.lock.is_none() || assigned.iter().all(Option::is_some) {
            return Ok(());
        }
        let radii: Vec<Option<f64>> = (0..self.nm)
            .map(|m| match assigned[m] {
                None => crate::outline::radius_of(self.per_frame.iter().map(|f| f[m])),
                Some(_) => None,
            })
            .collect();
        let partners: Vec<_> = (0..self.nm)
            .map(|m| radii[m].and_then(|_| self.partner(m, assigned)))
            .collect();
        // A marker lost for a frame or more has no prediction of the motion model's: it is
        // sought where its last two samples, carried on, put it.
        let coasted: Vec<Option<(Prediction, (f64, f64))>> = (0..self.nm)
            .map(|m| match (assigned[m], preds[m]) {
                (None, None) if radii[m].is_some() => self.coast(m),
                _ => None,
            })
            .collect();
        let preds: Vec<Option<Prediction>> = (0..self.nm)
            .map(|m| match coasted[m] {
                Some((p, _)) => Some(on_spacing(p, partners[m])),
                None => preds[m],
            })
            .collect();
        let preds = &preds[..];
        // About a partner, a marker lost for frames is sought along the arc from its last place
        // past where its velocity carries it.
        let arcs: Vec<Option<crate::gapfill::Arc>> = (0..self.nm)
            .map(|m| Some(arc_about(partners[m]?, coasted[m]?)))
            .collect();
        let gaps = crate::gapfill::Gaps {
            kind: &self.cfg.kind,
            preds,
            radii: &radii,
            partners: &partners,
            arcs: &arcs,
        };
        let filled = crate::gapfill::fill_gaps(frame, &gaps, assigned, &mut self.window_buf.grey)?;
        self.summary.outlined += filled.found;
        self.summary.outlined_by_spacing += filled.by_spacing;
        Ok(())
    }

    /// Marker `m`'s place carried on, `j` frames after its last sample (within [`COAST_FRAMES`]),
    /// at the velocity from the sample before that (within as many frames again); the variance
    /// the motion model's prediction error has one frame ahead (`scale2`), times j^4 (an
    /// unknown acceleration's share grows as j^2) and the square of the two samples' distance
    /// in frames; and its last place (px). None when it was not seen so lately.
    pub(super) fn coast(&self, m: usize) -> Option<(Prediction, (f64, f64))> {
        let k = self.per_frame.len();
        let seen = |f: usize| self.per_frame.get(f)?.get(m).copied().flatten();
        let last = (k.saturating_sub(COAST_FRAMES)..k)
            .rev()
            .find_map(|f| Some((f, seen(f)?)))?;
        let before = (last.0.saturating_sub(COAST_FRAMES)..last.0)
            .rev()
            .find_map(|f| Some((f, seen(f)?)))?;
        let ((fa, a), (fb, b)) = (last, before);
        let step = (fa - fb) as f64;
        let j = (k - fa) as f64;
        let var = (self.scale2.get(m).copied().unwrap_or(0.0) + 0.25) * j.powi(4) * step.powi(2);
        let p = Prediction {
            u: a.u + j * (a.u - b.u) / step,
            v: a.v + j * (a.v - b.v) / step,
            var,
        };
        Some((p, (a.u, a.v)))
    }

    /// A marker of `m`'s body (the layout's) seen in this frame (`assigned`), with the two's
    /// image spacing in the last of the previous [`PARTNER_LOOKBACK`] frames that saw both; the
    /// partner seen most recently with `m` (None without a layout, or none seen with it).
    pub(super) fn partner(
        &self,
        m: usize,
        assigned: &[Option<Blob>],
    ) -> Option<crate::gapfill::Partner> {
        let layout = self.cfg.layout.as_ref()?;
        let body = layout
            .bodies
            .iter()
            .find(|b| b.markers.iter().any(|(i, _)| *i == m))?;
        self.per_frame
            .iter()
            .rev()
            .take(PARTNER_LOOKBACK)
            .find_map(|f| {
                let a = f.get(m).copied().flatten()?;
                body.markers.iter().find_map(|&(n, _)| {
                    let now = assigned.get(n).copied().flatten().filter(|_| n != m)?;
                    let then = f.get(n).copied().flatten()?;
                    Some(crate::gapfill::Partner {
                        u: now.u,
                        v: now.v,
                        spacing: (a.u - then.u).hypot(a.v - then.v),
                    })
                })
            })
    }
}
