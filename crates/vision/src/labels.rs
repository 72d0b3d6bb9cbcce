//! The overlay's text labels (a marker's name, "gap", its flags' first letters), drawn from
//! coverage masks made once per text instead of rasterised on every frame.
//!
//! A label is OpenCV's Hershey text with a dark outline: the text at thickness 3 in black, then
//! at thickness 1 in its colour, both antialiased. Antialiased thick text is the costliest thing
//! the overlay draws (about a seventh of its processor time on a 100 s recording, 5 labels a
//! frame), yet a marker's label changes only when its flags do. Each stroke OpenCV draws blends
//! its colour c over the pixel p with its coverage a, p' = p (1 - a) + c a; strokes of one colour
//! compose to p (1 - A) + c A with A = 1 - prod (1 - a_i), which is what the same text drawn in
//! white on black leaves as its grey level. So the mask of each pass is drawn once, and each frame
//! blends p <- p (1 - A_outline), then p <- p (1 - A_text) + c A_text: the same image up to the
//! rounding of 8-bit blends (checked against OpenCV's own drawing by the tests).

use std::collections::HashMap;

use opencv::core::{Mat, Point, Scalar, Size, Vec3b, CV_8UC1};
use opencv::prelude::*;

use crate::{cv, VisionError};

/// The labels' font and scale: OpenCV's Hershey simplex at 0.4.
const FONT: i32 = opencv::imgproc::FONT_HERSHEY_SIMPLEX;
const SCALE: f64 = 0.4;
/// Thickness of the outline pass and of the text pass, px.
const OUTLINE: i32 = 3;
const TEXT: i32 = 1;
/// Pixels around the text's box in a mask, wider than the outline's reach.
const MARGIN: i32 = 4;
/// Most masks kept; the cache starts again past it (a long recording's flags combine into few
/// labels, but nothing bounds them).
const CACHE_MAX: usize = 1024;

/// A label's two coverage masks (row-major, as OpenCV's blend weights 0-256), and where the
/// text's origin lies in them.
struct Mask {
    size: Size,
    origin: Point,
    outline: Vec<i32>,
    text: Vec<i32>,
}

/// The text `s` drawn in white on black at `thickness` into a `size` mask, its origin at
/// `origin`: the coverage of that pass, as OpenCV's blend weight (0-255 to 0-256).
fn coverage(s: &str, size: Size, origin: Point, thickness: i32) -> Result<Vec<i32>, VisionError> {
    let mut m = cv(
        "label mask",
        Mat::new_size_with_default(size, CV_8UC1, Scalar::all(0.0)),
    )?;
    let aa = opencv::imgproc::LINE_AA;
    let white = Scalar::all(255.0);
    cv(
        "text",
        opencv::imgproc::put_text(&mut m, s, origin, FONT, SCALE, white, thickness, aa, false),
    )?;
    let bytes = cv("label mask bytes", m.data_bytes())?;
    Ok(bytes
        .iter()
        .map(|&a| (i32::from(a) * 256 + 127) / 255)
        .collect())
}

impl Mask {
    fn new(s: &str) -> Result<Mask, VisionError> {
        let mut baseline = 0;
        let text = cv(
            "text size",
            opencv::imgproc::get_text_size(s, FONT, SCALE, OUTLINE, &mut baseline),
        )?;
        let size = Size::new(text.width + 2 * MARGIN, text.height + baseline + 2 * MARGIN);
        let origin = Point::new(MARGIN, MARGIN + text.height);
        Ok(Mask {
            size,
            origin,
            outline: coverage(s, size, origin, OUTLINE)?,
            text: coverage(s, size, origin, TEXT)?,
        })
    }

    /// Blend the label onto the BGR image `img`, the text's origin at (x, y), in colour `c`
    /// (B, G, R); the part outside the image is left out.
    fn blend(&self, img: &mut Mat, x: i32, y: i32, c: [u8; 3]) -> Result<(), VisionError> {
        let (left, top) = (x - self.origin.x, y - self.origin.y);
        let w = self.size.width;
        for i in 0..self.size.height {
            let row = top + i;
            if row < 0 || row >= img.rows() {
                continue;
            }
            let pixels = cv("image row", img.at_row_mut::<Vec3b>(row))?;
            for j in 0..w {
                let k = (i * w + j) as usize;
                let (a1, a2) = (self.outline[k], self.text[k]);
                if a1 == 0 && a2 == 0 {
                    continue;
                }
                let Some(p) = usize::try_from(left + j)
                    .ok()
                    .and_then(|u| pixels.get_mut(u))
                else {
                    continue;
                };
                // OpenCV's own 8-bit blend, p + ((c - p) a + 127) >> 8 with a in 0..=256.
                for (v, c) in p.0.iter_mut().zip(c) {
                    let p0 = i32::from(*v);
                    let dark = p0 + ((-p0 * a1 + 127) >> 8);
                    let lit = dark + (((i32::from(c) - dark) * a2 + 127) >> 8);
                    *v = lit.clamp(0, 255) as u8;
                }
            }
        }
        Ok(())
    }
}

/// The overlay's labels, each text's masks made the first time it is drawn.
#[derive(Default)]
pub(crate) struct Labels {
    masks: HashMap<String, Mask>,
}

impl Labels {
    /// Draw `s` with its dark outline at (x, y) (the text's bottom-left, px) in colour `c`
    /// (B, G, R, as OpenCV's scalars).
    pub(crate) fn draw(
        &mut self,
        img: &mut Mat,
        s: &str,
        x: i32,
        y: i32,
        c: Scalar,
    ) -> Result<(), VisionError> {
        if !self.masks.contains_key(s) {
            if self.masks.len() >= CACHE_MAX {
                self.masks.clear();
            }
            self.masks.insert(s.to_string(), Mask::new(s)?);
        }
        let colour = [0, 1, 2].map(|i| c[i].round().clamp(0.0, 255.0) as u8);
        match self.masks.get(s) {
            Some(mask) => mask.blend(img, x, y, colour),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opencv::core::CV_8UC3;

    /// A BGR image of noise and ramps (every level met), seeded.
    fn background(seed: u64) -> Mat {
        let mut img = Mat::new_rows_cols_with_default(60, 200, CV_8UC3, Scalar::all(0.0)).unwrap();
        let mut s = seed;
        for r in 0..60 {
            let row = img.at_row_mut::<Vec3b>(r).unwrap();
            for (u, p) in row.iter_mut().enumerate() {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let noise = (s >> 56) as u8;
                p.0 = [noise, (u as u8).wrapping_mul(3), (r as u8).wrapping_mul(4)];
            }
        }
        img
    }

    /// OpenCV's own outlined text, as the overlay drew it before the masks.
    fn drawn_by_opencv(img: &mut Mat, s: &str, x: i32, y: i32, c: Scalar) {
        for (colour, thickness) in [(Scalar::all(0.0), OUTLINE), (c, TEXT)] {
            let aa = opencv::imgproc::LINE_AA;
            opencv::imgproc::put_text(
                img,
                s,
                Point::new(x, y),
                FONT,
                SCALE,
                colour,
                thickness,
                aa,
                false,
            )
            .unwrap();
        }
    }

    /// Labels blended from their masks are OpenCV's drawing to within the rounding of its
    /// 8-bit blends (each of a thick text's overlapping strokes rounds on its own; a mask
    /// rounds once): on noise and ramps, in the overlay's colours, every value within 6 levels
    /// (measured: 5), at most 10 % of the values drawn more than 1 level off (measured: 6 %),
    /// the mean difference under 1 level and its signed mean within 0.25 level (measured: 0.59
    /// and 0.2). A wrong blend is tens of levels off. Compared away from the image's edges
    /// (4 px): there OpenCV clips each stroke before thickening it, which changes its ends,
    /// while a mask is the whole text cut by the edge; labels cut by the edges are drawn too
    /// (no panic, nothing outside the image).
    #[test]
    fn masks_draw_what_opencv_draws() {
        let mut labels = Labels::default();
        let texts = ["M1", "M3 gap", "M5 resi,jump", "frame 12345"];
        let colours = [
            (60.0, 220.0, 60.0),
            (40.0, 40.0, 240.0),
            (255.0, 255.0, 255.0),
        ];
        let places = [(20, 30), (-6, 8), (170, 58), (60, 2)];
        for (n, s) in texts.iter().enumerate() {
            for (m, c) in colours.iter().enumerate() {
                for (x, y) in places {
                    let c = Scalar::new(c.0, c.1, c.2, 0.0);
                    let bg = background((n * 10 + m) as u64);
                    let (mut ours, mut theirs) = (bg.clone(), bg.clone());
                    labels.draw(&mut ours, s, x, y, c).unwrap();
                    drawn_by_opencv(&mut theirs, s, x, y, c);
                    let (mut touched, mut off, mut worst, mut total, mut signed) = (0, 0, 0, 0, 0);
                    for r in 4..bg.rows() - 4 {
                        let rows = [&bg, &ours, &theirs].map(|i| i.at_row::<Vec3b>(r).unwrap());
                        for u in 4..bg.cols() as usize - 4 {
                            for ch in 0..3 {
                                let [b0, a, t] = rows.map(|row| i64::from(row[u].0[ch]));
                                if t == b0 && a == b0 {
                                    continue;
                                }
                                touched += 1;
                                let e = (a - t).abs();
                                worst = worst.max(e);
                                off += i64::from(e > 1);
                                total += e;
                                signed += a - t;
                            }
                        }
                    }
                    let what = format!("{s:?} at ({x}, {y}), colour {m}");
                    assert!(touched > 20, "{what}: {touched} values drawn");
                    assert!(worst <= 6, "{what}: a value {worst} levels off");
                    let share = off as f64 / touched as f64;
                    assert!(
                        share <= 0.1,
                        "{what}: {share:.3} of the values over 1 level off"
                    );
                    let (mean, bias) = (
                        total as f64 / touched as f64,
                        signed as f64 / touched as f64,
                    );
                    assert!(
                        mean < 1.0 && bias.abs() < 0.25,
                        "{what}: mean {mean:.2}, bias {bias:.2}"
                    );
                }
            }
        }
    }
}
