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
//! The same fit places coloured stickers on the frame's luma (`luma`); a disc smeared by its
//! motion, whose outline no circle fits, is fitted to the pixels instead (`smear`); the tracker's
//! gaps are filled with both (`gapfill`).

use crate::blob::Blob;

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
    pub(crate) fn holds(&self, u: f64, v: f64) -> bool {
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
    let (x0, x1) = inner_span(cols, dark_col);
    let (y0, y1) = inner_span(rows, dark_row);
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
pub(crate) const MIN_CONTRAST: f64 = 20.0;

/// The disc's response (the median within 0.6 r of `c`, window px) and the background's (the
/// median of the ring 3-8 px outside r), each from the pixels in the picture.
pub(crate) fn levels(win: Window, c: (f64, f64), r: f64, picture: Picture) -> Option<(f64, f64)> {
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

pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
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

/// The first and last of `n` columns (or rows) inside the bars: from the middle outward to the
/// first `dark` one on each side (text or a logo in a bar, beyond it, does not move the edge).
fn inner_span(n: usize, dark: impl Fn(usize) -> bool) -> (usize, usize) {
    let lo = (0..n / 2).rev().find(|&i| dark(i)).map_or(0, |i| i + 1);
    let hi = (n / 2..n)
        .find(|&i| dark(i))
        .map_or(n.saturating_sub(1), |i| i.saturating_sub(1));
    (lo, hi)
}

/// The share of pixel (x, y) for which `inside` holds, sampled at n x n points: how the tests
/// draw discs with their edges' coverage.
#[cfg(test)]
pub(crate) fn pixel_share(x: usize, y: usize, n: usize, inside: impl Fn(f64, f64) -> bool) -> f64 {
    let mut hits = 0;
    for sy in 0..n {
        for sx in 0..n {
            let px = x as f64 - 0.5 + (sx as f64 + 0.5) / n as f64;
            let py = y as f64 - 0.5 + (sy as f64 + 0.5) / n as f64;
            hits += usize::from(inside(px, py));
        }
    }
    hits as f64 / (n * n) as f64
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
                let cover = pixel_share(x, y, 8, |px, py| {
                    (px - cu).hypot(py - cv) <= r || (px - 109.0).abs() <= 6.0
                });
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
}
