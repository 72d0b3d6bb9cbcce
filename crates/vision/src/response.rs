//! What the tracker segments: each marker kind's response image, in which its markers are the
//! bright blobs. Bright markers: the grey level (OpenCV's BGR2GRAY, to the bit); dark markers:
//! 255 minus it; coloured stickers: 255 s w(dh), s the saturation (max - min) / max of the
//! pixel's B, G, R, dh the circular distance of its hue from the sticker's, w(dh) = 1 - (dh /
//! tolerance)^2 within the tolerance and 0 beyond, and 0 where the pixel is darker than 15 % of
//! full scale (its hue is noise there). The response is smooth across a sticker's edge (a pixel
//! that mixes the sticker and the background loses saturation and hue together), so the
//! sub-pixel centre works on it as on a grey disc.

use flexbench_contracts::MarkerKind;
use opencv::core::Mat;
use opencv::prelude::*;

use crate::{cv, VisionError};

/// Grey level of a BGR pixel exactly as OpenCV's 8-bit BGR2GRAY rounds it (fixed point, 14 bits).
pub fn grey_of(b: u8, g: u8, r: u8) -> u8 {
    ((b as u32 * 1868 + g as u32 * 9617 + r as u32 * 4899 + (1 << 13)) >> 14) as u8
}

/// The hue of a BGR pixel, degrees in [0, 360), and its saturation and value in [0, 1].
pub fn hsv(b: u8, g: u8, r: u8) -> (f64, f64, f64) {
    let (b, g, r) = (b as f64, g as f64, r as f64);
    let max = b.max(g).max(r);
    let min = b.min(g).min(r);
    let d = max - min;
    if d <= 0.0 {
        return (0.0, 0.0, max / 255.0);
    }
    let h = if max == r {
        60.0 * ((g - b) / d)
    } else if max == g {
        60.0 * ((b - r) / d + 2.0)
    } else {
        60.0 * ((r - g) / d + 4.0)
    };
    (h.rem_euclid(360.0), d / max, max / 255.0)
}

/// A sticker's hue learnt from one click: the circular mean of the hues of the saturated pixels
/// (saturation at least 0.25, value at least 0.15) within `radius` px of the click, their spread
/// (circular standard deviation) and count, and the tolerance to give (three spreads, at least
/// 10 deg, at most 90).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HueSample {
    /// The sticker's hue, degrees in [0, 360).
    pub hue_deg: f64,
    /// The hues' circular standard deviation, degrees.
    pub spread_deg: f64,
    /// The tolerance to give (`hue_tolerance`), degrees.
    pub tolerance_deg: f64,
    /// Saturated pixels taken.
    pub pixels: usize,
}

/// The hue of the sticker clicked at (u, v) px in the BGR `frame` ([`HueSample`]); an error
/// for a grey frame, a click outside it, or no saturated pixel near the click.
pub fn hue_at(frame: &Mat, u: f64, v: f64, radius: f64) -> Result<HueSample, VisionError> {
    let fail = |reason: String| VisionError::Tracking {
        path: "(frame)".into(),
        reason,
    };
    if frame.channels() != 3 {
        return Err(fail(
            "a grey video has no hue: its markers are bright or dark".into(),
        ));
    }
    let (w, h) = (frame.cols(), frame.rows());
    if !(u >= 0.0 && v >= 0.0 && u < w as f64 && v < h as f64) {
        return Err(fail(format!(
            "the pixel ({u}, {v}) is outside the {w} x {h} frame: click the sticker in the video's frame"
        )));
    }
    let r = radius.ceil() as i32;
    let (mut sx, mut sy, mut n) = (0.0, 0.0, 0usize);
    for y in (v.round() as i32 - r).max(0)..=(v.round() as i32 + r).min(h - 1) {
        for x in (u.round() as i32 - r).max(0)..=(u.round() as i32 + r).min(w - 1) {
            if (x as f64 - u).hypot(y as f64 - v) > radius {
                continue;
            }
            let p = cv("pixel", frame.at_2d::<opencv::core::Vec3b>(y, x))?;
            let (hue, s, val) = hsv(p[0], p[1], p[2]);
            if s >= 0.25 && val >= 0.15 {
                let a = hue.to_radians();
                (sx, sy, n) = (sx + a.cos(), sy + a.sin(), n + 1);
            }
        }
    }
    if n == 0 {
        return Err(fail(format!(
            "no coloured pixel within {radius} px of ({u}, {v}): click the middle of the sticker (its pixels saturated at 0.25 or more)"
        )));
    }
    let len = (sx * sx + sy * sy).sqrt() / n as f64;
    let spread = (-2.0 * len.max(1e-12).ln()).sqrt().to_degrees();
    Ok(HueSample {
        hue_deg: sy.atan2(sx).to_degrees().rem_euclid(360.0),
        spread_deg: spread,
        tolerance_deg: (3.0 * spread).clamp(10.0, 90.0),
        pixels: n,
    })
}

/// The response of one BGR pixel for markers of `kind` (module documentation).
pub fn respond(kind: &MarkerKind, b: u8, g: u8, r: u8) -> u8 {
    match *kind {
        MarkerKind::Bright => grey_of(b, g, r),
        MarkerKind::Dark => 255 - grey_of(b, g, r),
        // A fiducial is found by its code (`fiducial`), a feature by its template
        // (`template`), not by a response.
        MarkerKind::Fiducial { .. } | MarkerKind::Template => grey_of(b, g, r),
        MarkerKind::Colour {
            hue_deg,
            tolerance_deg,
        } => {
            let (h, s, v) = hsv(b, g, r);
            if v < 0.15 {
                return 0;
            }
            let dh = (h - hue_deg).rem_euclid(360.0);
            let dh = dh.min(360.0 - dh) / tolerance_deg;
            (255.0 * s * (1.0 - dh * dh).max(0.0)).round() as u8
        }
    }
}

/// The response for markers of `kind` of the pixels (x0..=x1, y0..=y1) of a frame's bytes
/// `data` (`cols` pixels a row, `ch` channels: 1 grey, 3 BGR), appended row by row to `out`.
pub fn window_into(
    data: &[u8],
    (cols, ch): (usize, usize),
    kind: &MarkerKind,
    (x0, y0, x1, y1): (usize, usize, usize, usize),
    out: &mut Vec<u8>,
) {
    let flip = match kind {
        MarkerKind::Dark => 255,
        _ => 0,
    };
    for v in y0..=y1 {
        let row = v * cols;
        for u in x0..=x1 {
            let i = (row + u) * ch;
            out.push(match (ch, kind) {
                (1, _) => flip ^ data[i],
                (_, MarkerKind::Colour { .. }) => respond(kind, data[i], data[i + 1], data[i + 2]),
                _ => flip ^ grey_of(data[i], data[i + 1], data[i + 2]),
            });
        }
    }
}

/// The response image of a colour frame (or a view of one) for coloured markers; an error for a
/// grey frame, which has no hue.
pub fn colour_response(src: &Mat, kind: &MarkerKind) -> Result<Mat, VisionError> {
    if src.channels() != 3 {
        return Err(VisionError::Tracking {
            path: "(frame)".into(),
            reason: "coloured markers need a colour video; this one is grey: mark the markers bright or dark".into(),
        });
    }
    let owned = cv("clone", src.try_clone())?;
    let (w, h) = (owned.cols(), owned.rows());
    let data = cv("pixels", owned.data_bytes())?;
    let out: Vec<u8> = data
        .chunks_exact(3)
        .map(|p| respond(kind, p[0], p[1], p[2]))
        .collect();
    let flat = cv("response", Mat::from_slice(&out))?;
    let m = cv("reshape", flat.reshape(1, h))?;
    debug_assert_eq!(m.cols(), w);
    cv("clone", m.try_clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hues_and_responses() {
        let (h, s, v) = hsv(0, 200, 0);
        assert!((h - 120.0).abs() < 1e-9 && (s - 1.0).abs() < 1e-12 && v > 0.78);
        assert!((hsv(0, 0, 255).0 - 0.0).abs() < 1e-9 && (hsv(255, 0, 0).0 - 240.0).abs() < 1e-9);
        let green = MarkerKind::Colour {
            hue_deg: 120.0,
            tolerance_deg: 30.0,
        };
        assert_eq!(respond(&green, 0, 200, 0), 255);
        assert_eq!(respond(&green, 0, 0, 200), 0, "red is no green");
        assert_eq!(respond(&green, 200, 200, 200), 0, "grey has no hue");
        assert_eq!(respond(&green, 0, 20, 0), 0, "too dark to tell");
        // 15 deg off within a tolerance of 30: 1 - 0.25.
        let (b, g, r) = (0u8, 200u8, 100u8);
        let off = hsv(b, g, r).0 - 120.0;
        let w = 1.0 - (off / 30.0).powi(2);
        assert_eq!(respond(&green, b, g, r), (255.0 * w).round() as u8);
        assert_eq!(respond(&MarkerKind::Dark, 10, 10, 10), 245);
    }
}
