//! A disc marker that touches something of its own shade (a dark disc against a black cable or
//! a clamp, a bright disc merged with a glint) or is cut by the frame's edge: its thresholded
//! blob is no disc, the search leaves a gap. Where the motion predicts the marker, its visible
//! outline is fitted by a circle of the marker's own radius:
//!
//! - the outline's sub-pixel points: where the response (`response`) crosses halfway between the
//!   disc's level (the median within 0.6 radius of the prediction) and the background's (the
//!   median of the ring 3-8 px outside the radius), between neighbouring pixels along rows and
//!   columns (as marching squares), in a window about the prediction;
//! - the centre by iteratively reweighted least squares of the points' radial residuals
//!   (|p - c| - r, Tukey's biweight at 6 px, then 3, then 1.5), from the prediction; the radius
//!   is not fitted (a partial arc fixes a centre poorly along with its radius);
//! - accepted when the points within 1 px of the circle cover at least half its circumference
//!   (18 of 36 bins of 10 deg) and their RMS residual is under 0.5 px; the centre's standard
//!   deviation is that RMS over sqrt(n / 2) (n points spread round the circle). Where the disc
//!   runs out of the picture (the frame's edge, or the black bars of a video letterboxed or
//!   pillarboxed into its frame, [`picture`]) only the part inside is asked for: half of the
//!   bins whose arc is in the picture, and a third of the circle at least (the radius being
//!   known, a third of the outline fixes the centre).
//!
//! A coloured sticker is found by its hue, but a phone's H.264 keeps the hue at half the
//! resolution (4:2:0) and quantizes it coarsely: its centre is then refined on the frame's full
//! resolution luma ([`refine_on_luma`]) by the same outline fit, where the sticker stands out
//! from its ring by 20 levels or more (lighter or darker); else the hue's centre stays.
//!
//! The caller tests the centre against the motion model as any candidate. A centre the motion
//! model refuses (a hand's push, a sudden acceleration no constant-acceleration prediction
//! follows) is kept when a marker of its body is seen in the same frame and the two lie at their
//! image spacing of the last frame that saw both, within [`SPACING_TOL_PX`] plus
//! [`SPACING_TOL_SHARE`] of it: the rigid pattern vouches for it where the motion cannot.

use flexbench_contracts::MarkerKind;
use opencv::core::Mat;
use opencv::prelude::*;

use crate::assign::{Prediction, ACCEPT_CHI2};
use crate::blob::Blob;
use crate::{cv, VisionError};

/// A locked frame's markers as the tracker predicts them: their kind, each one's prediction
/// and radius (px; None before any blob), and a marker of its body seen in this frame (None:
/// none, or none seen with it before).
pub(crate) struct Gaps<'a> {
    pub kind: &'a MarkerKind,
    pub preds: &'a [Option<Prediction>],
    pub radii: &'a [Option<f64>],
    pub partners: &'a [Option<Partner>],
    /// Per marker, the arc about its partner where a marker lost for frames is sought first.
    pub arcs: &'a [Option<Arc>],
}

/// A marker of the same body seen in the frame: its centre (px) and the two markers' image
/// spacing in the last frame that saw both, px.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Partner {
    pub u: f64,
    pub v: f64,
    pub spacing: f64,
}

/// The rigid pattern's tolerance on a body's image spacing from one frame to another, px: the
/// outline's centre and its partner's, a few tenths of a pixel each, and the body's turn out of
/// the image plane over a few frames.
pub const SPACING_TOL_PX: f64 = 1.5;

/// The rigid pattern's tolerance as a share of the spacing: a camera not square to the plane
/// foreshortens a body by a few per cent as it turns; over the few frames a gap lasts, by less.
pub const SPACING_TOL_SHARE: f64 = 0.01;

impl Partner {
    /// Whether `b` lies at the partner's spacing.
    fn holds(&self, b: &Blob) -> bool {
        let d = (b.u - self.u).hypot(b.v - self.v);
        (d - self.spacing).abs() <= SPACING_TOL_PX + SPACING_TOL_SHARE * self.spacing
    }
}

/// Where a lost marker is sought about its partner: the angles (rad, image frame, from the
/// partner) between which its disc is looked for, at the partner's spacing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Arc {
    pub from: f64,
    pub to: f64,
}

/// The centre on `arc` about `partner` (at its spacing) where a disc of radius `r` stands out
/// most from its background in the response (the disc's median less the ring's, at least
/// [`MIN_CONTRAST`]), in steps of half a radius along the arc; frame px.
fn best_on_arc(
    frame: (&[u8], usize, usize),
    kind: &MarkerKind,
    picture: Picture,
    (partner, arc): (Partner, Arc),
    r: f64,
    buf: &mut Vec<u8>,
) -> Option<(f64, f64)> {
    let (data, cols, ch) = frame;
    let rows = data.len() / (cols * ch).max(1);
    let step = 0.5 * r / partner.spacing.max(r);
    let n = ((arc.to - arc.from).abs() / step).ceil().min(720.0) as usize;
    let mut best: Option<(f64, (f64, f64))> = None;
    for i in 0..=n {
        let a = arc.from + (arc.to - arc.from) * i as f64 / n.max(1) as f64;
        let c = (
            partner.u + partner.spacing * a.cos(),
            partner.v + partner.spacing * a.sin(),
        );
        let half = r + 9.0;
        let (x0, y0) = ((c.0 - half).floor(), (c.1 - half).floor());
        let (x1, y1) = ((c.0 + half).ceil(), (c.1 + half).ceil());
        if x0 < 0.0 || y0 < 0.0 || x1 > (cols - 1) as f64 || y1 > (rows - 1) as f64 {
            continue;
        }
        let rect = (x0 as usize, y0 as usize, x1 as usize, y1 as usize);
        buf.clear();
        crate::response::window_into(data, (cols, ch), kind, rect, buf);
        let win = Window {
            values: buf,
            w: rect.2 - rect.0 + 1,
            h: rect.3 - rect.1 + 1,
            origin: (rect.0, rect.1),
        };
        let local = (c.0 - x0, c.1 - y0);
        let Some((disc, ring)) = levels(win, local, r, picture) else {
            continue;
        };
        if disc - ring >= MIN_CONTRAST && best.is_none_or(|(b, _)| disc - ring > b) {
            best = Some((disc - ring, c));
        }
    }
    best.map(|(_, c)| c)
}

/// What [`fill_gaps`] found: the samples fitted to their outline, and how many of them the
/// motion model refused and their body's spacing vouched for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Filled {
    pub found: usize,
    pub by_spacing: usize,
}

/// The markers of `frame` left without a sample (None in `assigned`) that have a prediction and
/// a radius, each sought by its disc's visible outline about its prediction ([`fit`]) and kept
/// when plausible under the motion model ([`ACCEPT_CHI2`]) or at its body's spacing from a
/// partner (module documentation); disc markers only (bright, dark, coloured). `buf` is
/// scratch space.
pub(crate) fn fill_gaps(
    frame: &Mat,
    gaps: &Gaps,
    assigned: &mut [Option<Blob>],
    buf: &mut Vec<u8>,
) -> Result<Filled, VisionError> {
    let disc = matches!(
        gaps.kind,
        MarkerKind::Bright | MarkerKind::Dark | MarkerKind::Colour { .. }
    );
    let ch = frame.channels() as usize;
    if !disc || !(ch == 1 || ch == 3) || !frame.is_continuous() {
        return Ok(Filled::default());
    }
    let (cols, rows) = (frame.cols() as f64, frame.rows() as f64);
    let data = cv("pixels", frame.data_bytes())?;
    let mut filled = Filled::default();
    let mut picture = None;
    for (m, slot) in assigned.iter_mut().enumerate() {
        let (None, Some(mut p), Some(r)) = (*slot, gaps.preds[m], gaps.radii[m]) else {
            continue;
        };
        let inside = *picture.get_or_insert_with(|| self::picture(data, (cols as usize, ch)));
        let arc = gaps.partners[m].zip(gaps.arcs.get(m).copied().flatten());
        let on_arc =
            arc.and_then(|a| best_on_arc((data, cols as usize, ch), gaps.kind, inside, a, r, buf));
        if let Some(c) = on_arc {
            (p.u, p.v) = c;
        }
        let half = r + 10.0 + 3.0 * p.var.sqrt();
        let (x0, y0) = ((p.u - half).floor().max(0.0), (p.v - half).floor().max(0.0));
        let (x1, y1) = (
            (p.u + half).ceil().min(cols - 1.0),
            (p.v + half).ceil().min(rows - 1.0),
        );
        if x1 - x0 < r || y1 - y0 < r {
            continue;
        }
        let rect = (x0 as usize, y0 as usize, x1 as usize, y1 as usize);
        buf.clear();
        crate::response::window_into(data, (cols as usize, ch), gaps.kind, rect, buf);
        let win = Window {
            values: buf,
            w: rect.2 - rect.0 + 1,
            h: rect.3 - rect.1 + 1,
            origin: (rect.0, rect.1),
        };
        let Some(o) = fit(win, (p.u, p.v), r, inside) else {
            continue;
        };
        let blob = Blob {
            u: o.u,
            v: o.v,
            sigma: o.sigma,
            area: std::f64::consts::PI * r * r,
            // Not measured: the blob is the outline's, left out of the area and shape tests.
            half_area: f64::NAN,
            elongation: f64::NAN,
            rival: None,
        };
        let vouched = || {
            gaps.partners
                .get(m)
                .copied()
                .flatten()
                .is_some_and(|q| q.holds(&blob))
        };
        // A centre sought along the arc is placed by the pattern, not the motion: the pattern
        // must vouch for it.
        if on_arc.is_none() && p.chi2(&blob) <= ACCEPT_CHI2 {
            filled.found += 1;
        } else if vouched() {
            filled.found += 1;
            filled.by_spacing += 1;
        } else {
            continue;
        }
        *slot = Some(blob);
    }
    Ok(filled)
}

/// Coloured stickers' centres in `assigned` refined on the luma of `frame` (a colour frame):
/// each blob's outline in the grey image (or its inverse, for a sticker darker than its ring)
/// fitted by a circle of the blob's own radius (its area at half its peak) from the hue's
/// centre, kept when the fit holds and lies within a quarter radius of it. The number refined;
/// `buf` is scratch space.
pub(crate) fn refine_on_luma(
    frame: &Mat,
    assigned: &mut [Option<Blob>],
    buf: &mut Vec<u8>,
) -> Result<usize, VisionError> {
    let ch = frame.channels() as usize;
    if ch != 3 || !frame.is_continuous() {
        return Ok(0);
    }
    let (cols, rows) = (frame.cols() as usize, frame.rows() as usize);
    let data = cv("pixels", frame.data_bytes())?;
    let whole = Picture([-0.5, -0.5, cols as f64 - 0.5, rows as f64 - 0.5]);
    let mut refined = 0;
    for b in assigned.iter_mut().flatten() {
        let r = (b.half_area / std::f64::consts::PI).sqrt();
        if !(r.is_finite() && r >= 2.0) {
            continue;
        }
        let half = r + 10.0;
        let (x0, y0) = ((b.u - half).floor(), (b.v - half).floor());
        let (x1, y1) = ((b.u + half).ceil(), (b.v + half).ceil());
        if x0 < 0.0 || y0 < 0.0 || x1 > (cols - 1) as f64 || y1 > (rows - 1) as f64 {
            continue;
        }
        let rect = (x0 as usize, y0 as usize, x1 as usize, y1 as usize);
        for kind in [MarkerKind::Bright, MarkerKind::Dark] {
            buf.clear();
            crate::response::window_into(data, (cols, ch), &kind, rect, buf);
            let win = Window {
                values: buf,
                w: rect.2 - rect.0 + 1,
                h: rect.3 - rect.1 + 1,
                origin: (rect.0, rect.1),
            };
            let local = (b.u - x0, b.v - y0);
            let stands_out = levels(win, local, r, whole)
                .is_some_and(|(disc, ring)| disc - ring >= MIN_CONTRAST);
            if !stands_out {
                continue;
            }
            if let Some(o) = fit(win, (b.u, b.v), r, whole) {
                if (o.u - b.u).hypot(o.v - b.v) <= 0.25 * r {
                    (b.u, b.v, b.sigma) = (o.u, o.v, o.sigma);
                    refined += 1;
                }
            }
            break;
        }
    }
    Ok(refined)
}

/// A marker's radius, px, from its samples in frame order: the median of its last 15 measured blobs' (from their areas; outlines' left out); None before
/// any.
pub(crate) fn radius_of(samples: impl DoubleEndedIterator<Item = Option<Blob>>) -> Option<f64> {
    let mut r: Vec<f64> = samples
        .rev()
        .filter_map(|b| b.filter(|b| b.half_area.is_finite()))
        .take(15)
        .map(|b| (b.area / std::f64::consts::PI).sqrt())
        .collect();
    if r.is_empty() {
        return None;
    }
    let mid = r.len() / 2;
    r.select_nth_unstable_by(mid, f64::total_cmp);
    Some(r[mid])
}

/// A disc's centre fitted to its visible outline, px (window coordinates plus the origin).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outline {
    /// Column of the centre, px.
    pub u: f64,
    /// Row of the centre, px.
    pub v: f64,
    /// Standard deviation of the centre, px.
    pub sigma: f64,
    /// Share of the circumference the outline's points cover (0 to 1).
    pub coverage: f64,
    /// RMS radial residual of the points on the circle, px.
    pub rms: f64,
}

/// The response window: `w` x `h` values (row by row), its top-left pixel at `origin` (px).
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    /// The response's values, row by row.
    pub values: &'a [u8],
    /// Width, px.
    pub w: usize,
    /// Height, px.
    pub h: usize,
    /// The frame's pixel of the window's first value (column, row).
    pub origin: (usize, usize),
}

/// Bins of the circumference's coverage, and the bins the outline must cover.
const BINS: usize = 36;
const MIN_BINS: usize = 18;

/// The bins a disc that runs out of the picture must still cover: a third of the circle.
const MIN_BINS_CUT: usize = 12;

/// The frame's picture, px (first column, first row, last column, last row): inside the frame's
/// edges and any black bars.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Picture(pub [f64; 4]);

impl Picture {
    /// Whether (u, v) lies in the picture, a pixel and a half in from its edges.
    fn holds(&self, u: f64, v: f64) -> bool {
        let [x0, y0, x1, y1] = self.0;
        u >= x0 + 1.5 && u <= x1 - 1.5 && v >= y0 + 1.5 && v <= y1 - 1.5
    }
}

/// The darkest level a black bar's pixels reach (a codec's black is 16 and its noise a few).
const BAR_LEVEL: u8 = 28;

/// The share of a bar's column (or row) that is black: a caption written across the bars (a
/// video's title or subtitle) leaves them bars.
const BAR_SHARE: f64 = 0.9;

/// The picture of a frame (`data`: `cols` x rows pixels of `ch` channels): the frame less the
/// black bars at its sides (columns or rows, from the frame's middle outward, of which
/// [`BAR_SHARE`] of the pixels are no brighter than [`BAR_LEVEL`] in any channel).
pub fn picture(data: &[u8], (cols, ch): (usize, usize)) -> Picture {
    let rows = data.len() / (cols * ch).max(1);
    let dark = |v: &[u8]| v.iter().all(|&v| v <= BAR_LEVEL);
    let dark_col = |x: usize| {
        let n = (0..rows)
            .filter(|&y| dark(&data[(y * cols + x) * ch..][..ch]))
            .count();
        n as f64 >= BAR_SHARE * rows as f64
    };
    let dark_row = |y: usize| {
        let row = &data[y * cols * ch..(y + 1) * cols * ch];
        let n = row.chunks_exact(ch.max(1)).filter(|p| dark(p)).count();
        n as f64 >= BAR_SHARE * cols as f64
    };
    // From the frame's middle outward to the first bar: text or a logo in a bar, beyond it,
    // does not move the picture's edge.
    let x0 = (0..cols / 2)
        .rev()
        .find(|&x| dark_col(x))
        .map_or(0, |x| x + 1);
    let x1 = (cols / 2..cols)
        .find(|&x| dark_col(x))
        .map_or(cols.saturating_sub(1), |x| x.saturating_sub(1));
    let y0 = (0..rows / 2)
        .rev()
        .find(|&y| dark_row(y))
        .map_or(0, |y| y + 1);
    let y1 = (rows / 2..rows)
        .find(|&y| dark_row(y))
        .map_or(rows.saturating_sub(1), |y| y.saturating_sub(1));
    // Bars are the picture's outside: a pixel of the picture's own edge is the first inside.
    Picture([
        x0 as f64 - 0.5,
        y0 as f64 - 0.5,
        x1 as f64 + 0.5,
        y1 as f64 + 0.5,
    ])
}

/// The disc of radius `r` px predicted at `pred` (frame px) fitted to its visible outline in
/// `win` (module documentation); None when the disc does not stand out or its outline is not
/// seen round half its circumference.
pub fn fit(win: Window, pred: (f64, f64), r: f64, picture: Picture) -> Option<Outline> {
    let local = (pred.0 - win.origin.0 as f64, pred.1 - win.origin.1 as f64);
    let level = halfway(win, local, r, picture)?;
    let points = crossings(win, level);
    if points.len() < 8 {
        return None;
    }
    let mut c = local;
    for scale in [6.0, 3.0, 1.5] {
        for _ in 0..8 {
            c = step(&points, c, r, scale)?;
        }
    }
    let (mut n, mut ss) = (0usize, 0.0);
    let mut bins = [false; BINS];
    for p in &points {
        let d = (p.0 - c.0).hypot(p.1 - c.1);
        let e = d - r;
        if e.abs() < 1.0 {
            (n, ss) = (n + 1, ss + e * e);
            let a = (p.1 - c.1)
                .atan2(p.0 - c.0)
                .rem_euclid(std::f64::consts::TAU);
            bins[((a / std::f64::consts::TAU * BINS as f64) as usize).min(BINS - 1)] = true;
        }
    }
    let covered = bins.iter().filter(|b| **b).count();
    let rms = (ss / n.max(1) as f64).sqrt();
    let centre = (c.0 + win.origin.0 as f64, c.1 + win.origin.1 as f64);
    let visible = (0..BINS)
        .filter(|&b| {
            let a = (b as f64 + 0.5) / BINS as f64 * std::f64::consts::TAU;
            picture.holds(centre.0 + r * a.cos(), centre.1 + r * a.sin())
        })
        .count();
    if covered < MIN_BINS.min(visible.div_ceil(2)).max(MIN_BINS_CUT) || rms >= 0.5 {
        return None;
    }
    Some(Outline {
        u: c.0 + win.origin.0 as f64,
        v: c.1 + win.origin.1 as f64,
        sigma: rms.max(0.05) / (n as f64 / 2.0).sqrt(),
        coverage: covered as f64 / BINS as f64,
        rms,
    })
}

/// The level halfway between the disc's response and the background's about the centre `c`
/// (window px), each from the pixels in the picture; None when they differ by less than 20
/// levels.
fn halfway(win: Window, c: (f64, f64), r: f64, picture: Picture) -> Option<f64> {
    let (disc, ring) = levels(win, c, r, picture)?;
    (disc - ring >= MIN_CONTRAST).then_some(0.5 * (disc + ring))
}

/// The least difference between a disc's response and its background's, levels.
const MIN_CONTRAST: f64 = 20.0;

/// The disc's response (the median within 0.6 r of `c`, window px) and the background's (the
/// median of the ring 3-8 px outside r), each from the pixels in the picture.
fn levels(win: Window, c: (f64, f64), r: f64, picture: Picture) -> Option<(f64, f64)> {
    let (mut inside, mut ring) = (Vec::new(), Vec::new());
    let (ox, oy) = (win.origin.0 as f64, win.origin.1 as f64);
    for y in 0..win.h {
        for x in 0..win.w {
            if !picture.holds(x as f64 + ox, y as f64 + oy) {
                continue;
            }
            let d = (x as f64 - c.0).hypot(y as f64 - c.1);
            let value = win.values[y * win.w + x] as f64;
            if d <= 0.6 * r {
                inside.push(value);
            } else if d >= r + 3.0 && d <= r + 8.0 {
                ring.push(value);
            }
        }
    }
    Some((median(&mut inside)?, median(&mut ring)?))
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mid = v.len() / 2;
    v.select_nth_unstable_by(mid, f64::total_cmp);
    Some(v[mid])
}

/// The points where the response crosses `level` between neighbouring pixels of a row or a
/// column (linear between the two), window px.
fn crossings(win: Window, level: f64) -> Vec<(f64, f64)> {
    let at = |x: usize, y: usize| win.values[y * win.w + x] as f64;
    let mut out = Vec::new();
    let cross = |a: f64, b: f64| -> Option<f64> {
        ((a - level) * (b - level) < 0.0).then(|| (level - a) / (b - a))
    };
    for y in 0..win.h {
        for x in 0..win.w {
            if x + 1 < win.w {
                if let Some(f) = cross(at(x, y), at(x + 1, y)) {
                    out.push((x as f64 + f, y as f64));
                }
            }
            if y + 1 < win.h {
                if let Some(f) = cross(at(x, y), at(x, y + 1)) {
                    out.push((x as f64, y as f64 + f));
                }
            }
        }
    }
    out
}

/// One Gauss-Newton step of the centre `c` on the points' radial residuals |p - c| - r, each
/// weighted by Tukey's biweight at `scale` px; None when no point weighs.
fn step(points: &[(f64, f64)], c: (f64, f64), r: f64, scale: f64) -> Option<(f64, f64)> {
    let (mut a11, mut a12, mut a22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        let (dx, dy) = (p.0 - c.0, p.1 - c.1);
        let d = dx.hypot(dy);
        if d < 1e-9 {
            continue;
        }
        let e = d - r;
        let u = e / scale;
        if u.abs() >= 1.0 {
            continue;
        }
        let wgt = (1.0 - u * u).powi(2);
        // d e / d c = -(p - c) / |p - c|.
        let (jx, jy) = (-dx / d, -dy / d);
        a11 += wgt * jx * jx;
        a12 += wgt * jx * jy;
        a22 += wgt * jy * jy;
        b1 += wgt * jx * e;
        b2 += wgt * jy * e;
    }
    let det = a11 * a22 - a12 * a12;
    if det.is_nan() || det <= 1e-9 {
        return None;
    }
    let sx = (a22 * b1 - a12 * b2) / det;
    let sy = (a11 * b2 - a12 * b1) / det;
    Some((c.0 - sx, c.1 - sy))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dark disc of radius 40 px on a light wall (grey 200, the disc 30), drawn with its
    /// edge's coverage (8 x 8 samples a pixel), cut by the window's bottom edge and touching a
    /// black cable 12 px wide: the centre within 0.05 px from a prediction 4 px off; the disc
    /// response inverted as the tracker's for dark markers.
    #[test]
    fn a_dark_disc_against_a_cable_and_cut_by_the_edge() {
        let (w, h) = (140usize, 110usize);
        let (cu, cv, r) = (63.37, 72.81, 40.0);
        let mut values = vec![0u8; w * h];
        for y in 0..h {
            for x in 0..w {
                let mut cover: f64 = 0.0;
                for sy in 0..8 {
                    for sx in 0..8 {
                        let (px, py) = (
                            x as f64 - 0.5 + (sx as f64 + 0.5) / 8.0,
                            y as f64 - 0.5 + (sy as f64 + 0.5) / 8.0,
                        );
                        let disc = (px - cu).hypot(py - cv) <= r;
                        let cable = (px - 109.0).abs() <= 6.0;
                        if disc || cable {
                            cover += 1.0 / 64.0;
                        }
                    }
                }
                let grey = 200.0 - 170.0 * cover;
                values[y * w + x] = 255 - (grey.round() as u8);
            }
        }
        let win = Window {
            values: &values,
            w,
            h,
            origin: (500, 600),
        };
        let frame = Picture([-0.5, -0.5, 2000.0, 2000.0]);
        let o = fit(win, (500.0 + cu + 3.0, 600.0 + cv - 2.6), r, frame).expect("the disc");
        assert!(
            (o.u - 500.0 - cu).abs() < 0.05 && (o.v - 600.0 - cv).abs() < 0.05,
            "{o:?}"
        );
        assert!(o.coverage >= 0.5 && o.coverage < 1.0, "{o:?}");
        // A wall with no disc: none.
        let blank = vec![55u8; w * h];
        let win = Window {
            values: &blank,
            ..win
        };
        assert!(fit(win, (560.0, 670.0), r, frame).is_none());
    }

    /// A frame of a light wall (grey 200) with a dark disc of radius 30 px (grey 30) centred at
    /// `c`, drawn with its edge's coverage (4 x 4 samples a pixel).
    fn wall_with_disc(c: (f64, f64)) -> Mat {
        wall_with_disc_and_bar(c, 0)
    }

    /// [`wall_with_disc`] pillarboxed: its first `bar` columns black (grey 16).
    fn wall_with_disc_and_bar(c: (f64, f64), bar: usize) -> Mat {
        let (w, h) = (240usize, 200usize);
        let rows: Vec<Vec<u8>> = (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| {
                        let mut cover: f64 = 0.0;
                        for sy in 0..4 {
                            for sx in 0..4 {
                                let px = x as f64 - 0.5 + (sx as f64 + 0.5) / 4.0;
                                let py = y as f64 - 0.5 + (sy as f64 + 0.5) / 4.0;
                                if (px - c.0).hypot(py - c.1) <= 30.0 {
                                    cover += 1.0 / 16.0;
                                }
                            }
                        }
                        match x < bar {
                            true => 16,
                            false => (200.0 - 170.0 * cover).round() as u8,
                        }
                    })
                    .collect()
            })
            .collect();
        Mat::from_slice_2d(&rows).unwrap()
    }

    /// The disc 15 px from a prediction of 2 px standard deviation (a hand's push): the motion
    /// refuses it; a marker of its body seen 150 px away, as in the frames before, vouches for
    /// it; a partner whose spacing was 160 px does not; a loose prediction takes it alone.
    #[test]
    fn a_jump_the_motion_refuses_is_kept_at_its_bodys_spacing() {
        let c = (120.3, 100.7);
        let frame = wall_with_disc(c);
        let pred = Prediction {
            u: c.0 - 15.0,
            v: c.1 + 2.0,
            var: 4.0,
        };
        let run = |pred: Prediction, spacing: Option<f64>| {
            let partner = spacing.map(|spacing| Partner {
                u: c.0,
                v: c.1 - 150.0,
                spacing,
            });
            let gaps = Gaps {
                kind: &MarkerKind::Dark,
                preds: &[Some(pred)],
                radii: &[Some(30.0)],
                partners: &[partner],
                arcs: &[None],
            };
            let mut assigned = [None];
            let filled = fill_gaps(&frame, &gaps, &mut assigned, &mut Vec::new()).unwrap();
            (filled, assigned[0])
        };
        found_at(run(pred, Some(150.0)), c, 1);
        assert_eq!(run(pred, None), (Filled::default(), None));
        assert_eq!(run(pred, Some(160.0)), (Filled::default(), None));
        let loose = Prediction { var: 100.0, ..pred };
        found_at(run(loose, None), c, 0);
    }

    /// A fill's outcome: one disc found within 0.05 px of `c`, `by_spacing` of it vouched for
    /// by the spacing alone.
    fn found_at((filled, found): (Filled, Option<Blob>), c: (f64, f64), by_spacing: usize) {
        let b = found.expect("the disc");
        assert!(
            (b.u - c.0).abs() < 0.05 && (b.v - c.1).abs() < 0.05,
            "{b:?}"
        );
        assert_eq!(
            filled,
            Filled {
                found: 1,
                by_spacing
            }
        );
    }

    /// A disc that runs into a pillarbox's black bar, 58 % of its circle hidden: found within
    /// 0.1 px from a prediction 3 px off, judged on the part in the picture; the bar found.
    #[test]
    fn a_disc_half_in_a_black_bar_is_judged_on_what_the_picture_shows() {
        let c = (52.4, 100.7);
        let frame = wall_with_disc_and_bar(c, 60);
        let data = frame.data_bytes().unwrap();
        assert_eq!(picture(data, (240, 1)), Picture([59.5, -0.5, 239.5, 199.5]));
        let pred = Prediction {
            u: c.0 + 3.0,
            v: c.1 - 1.0,
            var: 9.0,
        };
        let gaps = Gaps {
            kind: &MarkerKind::Dark,
            preds: &[Some(pred)],
            radii: &[Some(30.0)],
            partners: &[None],
            arcs: &[None],
        };
        let mut assigned = [None];
        let filled = fill_gaps(&frame, &gaps, &mut assigned, &mut Vec::new()).unwrap();
        let b = assigned[0].expect("the disc in the bar");
        assert!((b.u - c.0).abs() < 0.1 && (b.v - c.1).abs() < 0.1, "{b:?}");
        assert_eq!(filled.found, 1);
    }

    /// A disc lost for frames, its velocity carried on 40 px past it (a swing that turned): not
    /// found about that prediction; sought along the arc about its partner (150 px away, from
    /// its last place past the prediction), found within 0.05 px and vouched for by the
    /// spacing; the same arc about a partner whose spacing was 20 px longer finds nothing it
    /// may keep.
    #[test]
    fn a_disc_lost_for_frames_is_sought_along_its_arc() {
        let c = (120.3, 100.7);
        let frame = wall_with_disc(c);
        let partner = |spacing| Partner {
            u: c.0 - 150.0 * 0.6,
            v: c.1 + 150.0 * 0.8,
            spacing,
        };
        // The disc at angle atan2(-0.8, 0.6) about the partner; its last place 0.3 rad before,
        // its carried-on place 0.27 rad beyond (40 px).
        let at = (-0.8f64).atan2(0.6);
        let q = partner(150.0);
        let beyond = (
            q.u + 150.0 * (at + 0.27).cos(),
            q.v + 150.0 * (at + 0.27).sin(),
        );
        let pred = Prediction {
            u: beyond.0,
            v: beyond.1,
            var: 400.0,
        };
        let run = |partner: Partner, arc: Option<Arc>| {
            let gaps = Gaps {
                kind: &MarkerKind::Dark,
                preds: &[Some(pred)],
                radii: &[Some(30.0)],
                partners: &[Some(partner)],
                arcs: &[arc],
            };
            let mut assigned = [None];
            let filled = fill_gaps(&frame, &gaps, &mut assigned, &mut Vec::new()).unwrap();
            (filled, assigned[0])
        };
        assert_eq!(run(q, None).1, None);
        let arc = Arc {
            from: at - 0.3 - 0.3,
            to: at + 0.27 + 0.3,
        };
        found_at(run(q, Some(arc)), c, 1);
        assert_eq!(run(partner(170.0), Some(arc)).1, None);
    }

    /// A colour frame (BGR) of a grey part (146) with a sticker of radius 8 px of the colour
    /// `bgr`, drawn with its edge's coverage, centred at `c`.
    fn part_with_sticker(c: (f64, f64), bgr: [f64; 3]) -> Mat {
        let (w, h) = (60usize, 50usize);
        let mut data = vec![0u8; w * h * 3];
        for y in 0..h {
            for x in 0..w {
                let mut cover = 0.0;
                for sy in 0..8 {
                    for sx in 0..8 {
                        let px = x as f64 - 0.5 + (sx as f64 + 0.5) / 8.0;
                        let py = y as f64 - 0.5 + (sy as f64 + 0.5) / 8.0;
                        if (px - c.0).hypot(py - c.1) <= 8.0 {
                            cover += 1.0 / 64.0;
                        }
                    }
                }
                for (k, v) in bgr.iter().enumerate() {
                    data[(y * w + x) * 3 + k] = (146.0 * (1.0 - cover) + v * cover).round() as u8;
                }
            }
        }
        let flat = Mat::from_slice(&data).unwrap();
        flat.reshape(3, h as i32).unwrap().try_clone().unwrap()
    }

    /// A yellow sticker (lighter than the part) and a dark red one, their hue centres 0.3 px
    /// off (a phone's half-resolution chroma): refined on the luma to within 0.05 px. A green
    /// sticker as light as the part keeps its hue's centre.
    #[test]
    fn a_stickers_centre_is_refined_on_the_luma_where_it_stands_out() {
        let c = (30.37, 24.81);
        let hue_centre = |half_area: f64| Blob {
            u: c.0 + 0.3,
            v: c.1 - 0.2,
            sigma: 0.001,
            area: half_area,
            half_area,
            elongation: 1.0,
            rival: None,
        };
        let disc = std::f64::consts::PI * 64.0;
        for (bgr, refined) in [
            ([40.0, 220.0, 230.0], true),
            ([30.0, 30.0, 150.0], true),
            ([43.0, 217.0, 43.0], false),
        ] {
            let frame = part_with_sticker(c, bgr);
            let mut assigned = [Some(hue_centre(disc)), None];
            let n = refine_on_luma(&frame, &mut assigned, &mut Vec::new()).unwrap();
            let b = assigned[0].unwrap();
            let off = (b.u - c.0).hypot(b.v - c.1);
            match refined {
                true => assert!(n == 1 && off < 0.05, "{bgr:?}: {b:?}"),
                false => assert!(n == 0 && (off - 0.3f64.hypot(0.2)).abs() < 1e-12, "{bgr:?}"),
            }
        }
    }
}
