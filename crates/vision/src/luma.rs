//! A coloured sticker is found by its hue, but a phone's H.264 keeps the hue at half the
//! resolution (4:2:0) and quantizes it coarsely: its centre is refined on the frame's full
//! resolution luma by the outline fit (`outline`), where the sticker stands out from its ring by
//! 20 levels or more (lighter or darker); else the hue's centre stays.

use flexbench_contracts::MarkerKind;
use opencv::core::Mat;
use opencv::prelude::*;

use crate::blob::Blob;
use crate::outline::{fit, levels, Picture, Window, MIN_CONTRAST};
use crate::{cv, VisionError};

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A colour frame (BGR) of a grey part (146) with a sticker of radius 8 px of the colour
    /// `bgr`, drawn with its edge's coverage, centred at `c`.
    fn part_with_sticker(c: (f64, f64), bgr: [f64; 3]) -> Mat {
        let (w, h) = (60usize, 50usize);
        let mut data = vec![0u8; w * h * 3];
        for y in 0..h {
            for x in 0..w {
                let cover = crate::outline::pixel_share(x, y, 8, |px, py| {
                    (px - c.0).hypot(py - c.1) <= 8.0
                });
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
