//! A disc smeared by its motion during the exposure: at 30 frames/s a pendulum's mass moves tens
//! of pixels while the shutter is open, its edges along the motion become ramps, and no circle
//! of its radius fits its outline. The smeared disc is fitted to the pixels instead: the
//! response at p is B + (D - B) C(p), C(p) the share of the exposure during which p lies inside
//! the disc whose centre moves uniformly from c - b/2 to c + b/2,
//!
//! C(p) = |[s - h, s + h] n [-|b|/2, |b|/2]| / |b|, s = (p - c).u, h = sqrt(r^2 - ((p - c).n)^2),
//!
//! (u the motion's direction, n its normal; C is 1 or 0 inside or outside the disc when b = 0),
//! averaged over 2 x 2 points of each pixel; r the marker's radius, D and B the disc's and the
//! background's levels. The centre c (the disc's place at mid-exposure) and the smear b by
//! Gauss-Newton with Tukey's biweight on the residuals (a clamp or a cable in the window is
//! weighed out); kept when the pixels the disc covers are explained: no more than
//! [`MAX_OUTLIERS`] of them beyond four noise levels (a half-hidden disc is not), the smear no
//! longer than three radii.

use crate::outline::{levels, median, Outline, Picture, Window, MIN_CONTRAST};

/// The largest share of the smeared disc's pixels its model may leave unexplained.
pub const MAX_OUTLIERS: f64 = 0.1;

/// A smeared disc's fit: its centre at mid-exposure (px), its smear (px) and the centre's
/// standard deviation (px).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Smeared {
    /// Column of the centre, px.
    pub u: f64,
    /// Row of the centre, px.
    pub v: f64,
    /// The disc's move during the exposure, px (column, row).
    pub smear: (f64, f64),
    /// Standard deviation of the centre, px.
    pub sigma: f64,
}

/// The share of the exposure during which the point `q` (relative to the centre, px) lies in a
/// disc of radius `r` smeared by `b` (module documentation).
fn cover(q: (f64, f64), b: (f64, f64), r: f64) -> f64 {
    let len = b.0.hypot(b.1);
    if len < 1e-6 {
        return f64::from(q.0.hypot(q.1) <= r);
    }
    let u = (b.0 / len, b.1 / len);
    let (s, y) = (q.0 * u.0 + q.1 * u.1, -q.0 * u.1 + q.1 * u.0);
    if y.abs() >= r {
        return 0.0;
    }
    let h = (r * r - y * y).sqrt();
    let overlap = (s + h).min(0.5 * len) - (s - h).max(-0.5 * len);
    (overlap.max(0.0) / len).min(1.0)
}

/// The model's share at pixel (x, y) of the window: [`cover`] averaged over 2 x 2 points.
fn pixel_cover(x: f64, y: f64, c: (f64, f64), b: (f64, f64), r: f64) -> f64 {
    let mut sum = 0.0;
    for (dx, dy) in [(-0.25, -0.25), (0.25, -0.25), (-0.25, 0.25), (0.25, 0.25)] {
        sum += cover((x + dx - c.0, y + dy - c.1), b, r);
    }
    0.25 * sum
}

/// The smeared disc of radius `r` in `win` (the response, the disc high), from the centre
/// `start` (frame px) and the smear `smear` (px; None: from the blob's second moments about
/// `start`, [`smear_of`]); `levels` the disc's and the background's
/// levels, `noise` the response's noise (levels). None when the fit fails or the pixels are not
/// explained (module documentation).
pub(crate) fn fit(
    win: Window,
    start: (f64, f64),
    smear: Option<(f64, f64)>,
    r: f64,
    (levels, noise): ((f64, f64), f64),
    picture: Picture,
) -> Option<Smeared> {
    let (ox, oy) = (win.origin.0 as f64, win.origin.1 as f64);
    let pixels: Vec<(f64, f64, f64)> = (0..win.h)
        .flat_map(|y| (0..win.w).map(move |x| (x, y)))
        .filter(|&(x, y)| picture.holds(x as f64 + ox, y as f64 + oy))
        .map(|(x, y)| (x as f64, y as f64, win.values[y * win.w + x] as f64))
        .collect();
    let (disc, ring) = levels;
    let model = |p: &[f64; 4], x: f64, y: f64| {
        ring + (disc - ring) * pixel_cover(x, y, (p[0], p[1]), (p[2], p[3]), r)
    };
    let smear = smear.unwrap_or_else(|| smear_of(&pixels, (start.0 - ox, start.1 - oy), r, levels));
    let mut p = [start.0 - ox, start.1 - oy, smear.0, smear.1];
    let tukey = 4.685 * noise.max(1.0) * 2.0;
    for _ in 0..20 {
        let (mut a, mut g) = ([[0.0; 4]; 4], [0.0; 4]);
        for &(x, y, v) in &pixels {
            let m = model(&p, x, y);
            let e = v - m;
            let w = (1.0 - (e / tukey).powi(2)).max(0.0).powi(2);
            if w == 0.0 {
                continue;
            }
            let mut j = [0.0; 4];
            for (k, jk) in j.iter_mut().enumerate() {
                let mut q = p;
                q[k] += 0.05;
                *jk = (model(&q, x, y) - m) / 0.05;
            }
            for i in 0..4 {
                g[i] += w * j[i] * e;
                for k in 0..4 {
                    a[i][k] += w * j[i] * j[k];
                }
            }
        }
        let step = solve4(a, g)?;
        for k in 0..4 {
            p[k] += step[k].clamp(-0.5 * r, 0.5 * r);
        }
        if step.iter().all(|s| s.abs() < 1e-3) {
            break;
        }
    }
    // Judged on the pixels the smeared disc covers at all.
    let (mut n, mut out, mut ss) = (0usize, 0usize, 0.0);
    for &(x, y, v) in &pixels {
        if pixel_cover(x, y, (p[0], p[1]), (p[2], p[3]), r) <= 0.0 {
            continue;
        }
        let e = v - model(&p, x, y);
        n += 1;
        out += usize::from(e.abs() > 4.0 * noise.max(1.0));
        ss += e * e;
    }
    let len = p[2].hypot(p[3]);
    let moved = (p[0] + ox - start.0).hypot(p[1] + oy - start.1);
    let explained = n > 0 && (out as f64) <= MAX_OUTLIERS * n as f64;
    (explained && len <= 3.0 * r && moved <= r).then(|| Smeared {
        u: p[0] + ox,
        v: p[1] + oy,
        smear: (p[2], p[3]),
        // The edge pixels fix the centre: about the circumference's worth of them.
        sigma: (ss / n as f64).sqrt()
            / (disc - ring).abs().max(1.0)
            / (std::f64::consts::PI * r).sqrt(),
    })
}

/// A smear's first guess from the response above the background within two radii of `c`
/// (window px): its principal axis, and the length by which its variance along it exceeds a
/// disc's (r^2 / 4 for a disc, plus L^2 / 12 for a smear of length L).
fn smear_of(
    pixels: &[(f64, f64, f64)],
    c: (f64, f64),
    r: f64,
    (disc, ring): (f64, f64),
) -> (f64, f64) {
    let (mut m, mut sx, mut sy, mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y, v) in pixels {
        let w = ((v - ring) / (disc - ring)).clamp(0.0, 1.0);
        if (x - c.0).hypot(y - c.1) > 2.0 * r || w == 0.0 {
            continue;
        }
        (m, sx, sy) = (m + w, sx + w * x, sy + w * y);
        (sxx, sxy, syy) = (sxx + w * x * x, sxy + w * x * y, syy + w * y * y);
    }
    if m <= 0.0 {
        return (0.0, 0.0);
    }
    let (mx, my) = (sx / m, sy / m);
    let (a, b, d) = (sxx / m - mx * mx, sxy / m - mx * my, syy / m - my * my);
    let tr = 0.5 * (a + d);
    let big = tr + (0.25 * (a - d).powi(2) + b * b).sqrt();
    let len = (12.0 * (big - 0.25 * r * r)).max(0.0).sqrt();
    let angle = 0.5 * (2.0 * b).atan2(a - d);
    (len * angle.cos(), len * angle.sin())
}

/// A disc smeared by its motion (`smear`), sought where its outline fit failed: its centre at
/// mid-exposure as an outline's (coverage and RMS not measured: 0).
pub(crate) fn as_outline(
    win: Window,
    pred: (f64, f64),
    r: f64,
    picture: Picture,
) -> Option<Outline> {
    let local = (pred.0 - win.origin.0 as f64, pred.1 - win.origin.1 as f64);
    let (disc, ring) = levels(win, local, r, picture)?;
    if disc - ring < MIN_CONTRAST {
        return None;
    }
    // The background's noise: the spread of the pixels near its level.
    let mut near: Vec<f64> = win
        .values
        .iter()
        .map(|&v| v as f64 - ring)
        .filter(|d| d.abs() < 0.25 * (disc - ring))
        .map(f64::abs)
        .collect();
    let noise = (1.4826 * median(&mut near)?).max(1.0);
    let s = fit(win, pred, None, r, ((disc, ring), noise), picture)?;
    Some(Outline {
        u: s.u,
        v: s.v,
        sigma: s.sigma.max(0.05),
        coverage: 0.0,
        rms: 0.0,
    })
}

/// Solve the 4 x 4 system `a` x = `g` (Gaussian elimination with partial pivoting); None when
/// singular.
fn solve4(mut a: [[f64; 4]; 4], mut g: [f64; 4]) -> Option<[f64; 4]> {
    for c in 0..4 {
        let piv = (c..4).max_by(|&i, &k| a[i][c].abs().total_cmp(&a[k][c].abs()))?;
        if a[piv][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, piv);
        g.swap(c, piv);
        let (top, rest) = a.split_at_mut(c + 1);
        let pivot = top[c];
        for (i, row) in rest.iter_mut().enumerate() {
            let f = row[c] / pivot[c];
            for (x, p) in row.iter_mut().zip(pivot).skip(c) {
                *x -= f * p;
            }
            g[c + 1 + i] -= f * g[c];
        }
    }
    let mut x = [0.0; 4];
    for c in (0..4).rev() {
        let s: f64 = (c + 1..4).map(|k| a[c][k] * x[k]).sum();
        x[c] = (g[c] - s) / a[c][c];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dark disc (inverted: 225 on 55) of radius 30 px smeared by (40, -25) px, with a
    /// deterministic noise of 2 levels: found from 6 px off with no smear guessed... within
    /// 0.1 px; the same disc with its right half covered by a clamp as dark as it is refused.
    #[test]
    fn a_smeared_disc_is_found_and_a_half_hidden_one_refused() {
        let (w, h) = (160usize, 130usize);
        let (c, b, r) = ((80.3, 64.7), (40.0, -25.0), 30.0);
        let mut seed = 7u64;
        let mut noise = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0 * 12f64.sqrt()
        };
        let draw = |clamp: bool, noise: &mut dyn FnMut() -> f64| -> Vec<u8> {
            let mut v = Vec::with_capacity(w * h);
            for y in 0..h {
                for x in 0..w {
                    let mut s = 0.0;
                    for k in 0..16 {
                        let (dx, dy) = ((k % 4) as f64 / 4.0 - 0.375, (k / 4) as f64 / 4.0 - 0.375);
                        s += cover((x as f64 + dx - c.0, y as f64 + dy - c.1), b, r);
                    }
                    let mut level = 55.0 + 170.0 * s / 16.0;
                    if clamp && x as f64 > c.0 + 5.0 {
                        level = 225.0;
                    }
                    v.push((level + noise()).round().clamp(0.0, 255.0) as u8);
                }
            }
            v
        };
        let whole = Picture([-0.5, -0.5, w as f64 - 0.5, h as f64 - 0.5]);
        let values = draw(false, &mut noise);
        let win = Window {
            values: &values,
            w,
            h,
            origin: (0, 0),
        };
        let from_off = |win| {
            fit(
                win,
                (c.0 + 5.0, c.1 - 3.0),
                None,
                r,
                ((225.0, 55.0), 2.0),
                whole,
            )
        };
        let s = from_off(win).expect("the smeared disc");
        assert!((s.u - c.0).abs() < 0.1 && (s.v - c.1).abs() < 0.1, "{s:?}");
        assert!(
            (s.smear.0 - b.0).abs() < 1.0 && (s.smear.1 - b.1).abs() < 1.0,
            "{s:?}"
        );
        let values = draw(true, &mut noise);
        let win = Window {
            values: &values,
            ..win
        };
        let hidden = from_off(win);
        assert!(hidden.is_none(), "{hidden:?}");
    }
}
