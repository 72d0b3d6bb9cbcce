//! A feature that is no marker (a bolt's head, a pin, a sticker of no known look), clicked once
//! and followed by normalized cross-correlation, as Tracker's autotracker does: the patch of
//! (2 half_size + 1)^2 px about the click in the clicked frame is the template; in each later
//! frame it is sought about the place its last two positions predict (constant velocity), in a
//! window that grows with its speed (`cv::matchTemplate`, `TM_CCOEFF_NORMED`), its position the
//! correlation's peak refined to sub-pixel by a parabola through the peak and its neighbours on
//! each axis, plus the click's own offset from the patch's centre pixel. A peak below
//! [`MIN_SCORE`] is a gap (the feature lost or hidden), and the search goes on about its last
//! place. The template is never updated, so the track does not drift; a feature that turns
//! decorrelates, so choose one that looks the same whichever way it turns (a round head).

use opencv::core::{Mat, Point, Rect};
use opencv::prelude::*;

use crate::blob::Blob;
use crate::{cv, VisionError};

/// Correlation below which the feature is taken as lost in a frame.
pub const MIN_SCORE: f64 = 0.7;

/// The half-size of the template taken when the click gives none, px.
pub const HALF_SIZE: i32 = 10;

/// A feature clicked once: the marker it is, the frame and pixel of the click, and the
/// template's half-size (px).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemplateClick {
    /// Index of the marker into the tracked markers.
    pub marker: usize,
    /// The frame clicked in (0-based).
    pub frame: usize,
    /// The pixel clicked, px (u right, v down).
    pub pixel: (f64, f64),
    /// The template's half-size, px.
    pub half_size: i32,
}

/// The clicks checked against a frame of `width` x `height` px: each template whole inside the
/// frame, a half-size of 3 to 60 px, one click per marker.
pub fn check(clicks: &[TemplateClick], width: i32, height: i32) -> Result<(), String> {
    for (i, c) in clicks.iter().enumerate() {
        let h = c.half_size;
        if !(3..=60).contains(&h) {
            return Err(format!(
                "template {}: a half-size of {h} px; give 3 to 60 px (the feature and a little of what surrounds it)",
                i + 1
            ));
        }
        let (u, v) = c.pixel;
        let inside = u.is_finite()
            && v.is_finite()
            && u.round() as i64 - h as i64 >= 0
            && v.round() as i64 - h as i64 >= 0
            && u.round() as i64 + (h as i64) < width as i64
            && v.round() as i64 + (h as i64) < height as i64;
        if !inside {
            return Err(format!(
                "template {}: the pixel ({u}, {v}) with its half-size {h} px is not inside the {width} x {height} frame; click the feature in the video's frame (u right from 0 to {}, v down from 0 to {}), at least {h} px from its border",
                i + 1,
                width - 1,
                height - 1
            ));
        }
        if clicks[..i].iter().any(|o| o.marker == c.marker) {
            return Err(format!(
                "template {}: its marker is clicked twice; give one click per marker",
                i + 1
            ));
        }
    }
    Ok(())
}

/// The features followed through a video.
pub struct Templates {
    clicks: Vec<TemplateClick>,
    /// Each click's template, once its frame has come.
    patches: Vec<Option<Mat>>,
    /// Each feature's last two places, px (the latest first).
    last: Vec<[Option<(f64, f64)>; 2]>,
    /// The frames each feature was lost in (after its click).
    pub lost: Vec<usize>,
    grey: Mat,
}

impl Templates {
    /// The features of `clicks` (checked by [`check`]).
    pub fn new(clicks: Vec<TemplateClick>) -> Templates {
        let n = clicks.len();
        Templates {
            clicks,
            patches: vec![None; n],
            last: vec![[None; 2]; n],
            lost: vec![0; n],
            grey: Mat::default(),
        }
    }

    /// The clicks' latest frame: no frame before it has every feature.
    pub fn last_click_frame(&self) -> usize {
        self.clicks.iter().map(|c| c.frame).max().unwrap_or(0)
    }

    /// Frame `k` (grey or BGR): each of `markers` markers' place when a click follows it.
    pub fn frame(
        &mut self,
        k: usize,
        frame: &Mat,
        markers: usize,
    ) -> Result<Vec<Option<Blob>>, VisionError> {
        if frame.channels() == 1 {
            self.grey = cv("clone", frame.try_clone())?;
        } else {
            cv(
                "cvtColor",
                opencv::imgproc::cvt_color(
                    frame,
                    &mut self.grey,
                    opencv::imgproc::COLOR_BGR2GRAY,
                    0,
                ),
            )?;
        }
        let mut places = vec![None; self.clicks.len()];
        for (i, place) in places.iter_mut().enumerate() {
            let c = self.clicks[i];
            *place = if k == c.frame {
                self.take_patch(i)?;
                Some(c.pixel)
            } else if k > c.frame {
                self.follow(i)?
            } else {
                None
            };
        }
        // Two features on one place: one of them has jumped to the other (two alike bolts);
        // neither is taken there.
        for i in 0..places.len() {
            for j in i + 1..places.len() {
                if let (Some(a), Some(b)) = (places[i], places[j]) {
                    let h = self.clicks[i].half_size.min(self.clicks[j].half_size) as f64;
                    if (a.0 - b.0).hypot(a.1 - b.1) < 0.5 * h {
                        (places[i], places[j]) = (None, None);
                    }
                }
            }
        }
        let mut found = vec![None; markers];
        for (i, place) in places.into_iter().enumerate() {
            let c = self.clicks[i];
            match place {
                Some(p) => self.last[i] = [Some(p), self.last[i][0]],
                None => self.lost[i] += usize::from(k > c.frame),
            }
            if let (Some(p), Some(slot)) = (place, found.get_mut(c.marker)) {
                let side = (2 * c.half_size + 1) as f64;
                *slot = Some(Blob {
                    u: p.0,
                    v: p.1,
                    sigma: SIGMA_PX,
                    area: side * side,
                    half_area: side * side,
                    elongation: 1.0,
                    rival: None,
                });
            }
        }
        Ok(found)
    }

    /// Feature `i`'s template cut from the frame about its click.
    fn take_patch(&mut self, i: usize) -> Result<(), VisionError> {
        let c = self.clicks[i];
        let (cu, cv_) = (c.pixel.0.round() as i32, c.pixel.1.round() as i32);
        let h = c.half_size;
        let roi = Rect::new(cu - h, cv_ - h, 2 * h + 1, 2 * h + 1);
        let patch = cv("roi", Mat::roi(&self.grey, roi))?;
        self.patches[i] = Some(cv("clone", patch.try_clone())?);
        Ok(())
    }

    /// Feature `i` sought about its predicted place; None when the correlation's peak is low.
    fn follow(&self, i: usize) -> Result<Option<(f64, f64)>, VisionError> {
        let (Some(patch), [Some(p1), p2]) = (&self.patches[i], self.last[i]) else {
            return Ok(None);
        };
        let c = self.clicks[i];
        let step = p2.map_or((0.0, 0.0), |p2| (p1.0 - p2.0, p1.1 - p2.1));
        let predicted = (p1.0 + step.0, p1.1 + step.1);
        let reach = (6.0 + 2.0 * step.0.hypot(step.1)).min(80.0).round() as i32;
        let h = c.half_size;
        let (w, ht) = (self.grey.cols(), self.grey.rows());
        let (pu, pv) = (predicted.0.round() as i32, predicted.1.round() as i32);
        let (x0, y0) = ((pu - h - reach).max(0), (pv - h - reach).max(0));
        let (x1, y1) = ((pu + h + reach + 1).min(w), (pv + h + reach + 1).min(ht));
        if x1 - x0 < 2 * h + 3 || y1 - y0 < 2 * h + 3 {
            return Ok(None);
        }
        let window = cv(
            "roi",
            Mat::roi(&self.grey, Rect::new(x0, y0, x1 - x0, y1 - y0)),
        )?;
        let mut score = Mat::default();
        cv(
            "matchTemplate",
            opencv::imgproc::match_template(
                &window,
                patch,
                &mut score,
                opencv::imgproc::TM_CCOEFF_NORMED,
                &opencv::core::no_array(),
            ),
        )?;
        let (mut best, mut at) = (0.0, Point::default());
        cv(
            "minMaxLoc",
            opencv::core::min_max_loc(
                &score,
                None,
                Some(&mut best),
                None,
                Some(&mut at),
                &opencv::core::no_array(),
            ),
        )?;
        if best < MIN_SCORE {
            return Ok(None);
        }
        let s = |x: i32, y: i32| score.at_2d::<f32>(y, x).ok().map(|v| *v as f64);
        let peak = |a: Option<f64>, b: f64, c: Option<f64>| match (a, c) {
            (Some(a), Some(c)) if a - 2.0 * b + c < 0.0 => 0.5 * (a - c) / (a - 2.0 * b + c),
            _ => 0.0,
        };
        let du = peak(s(at.x - 1, at.y), best, s(at.x + 1, at.y));
        let dv = peak(s(at.x, at.y - 1), best, s(at.x, at.y + 1));
        // The patch's top-left corner in the frame, refined.
        let start = ((x0 + at.x) as f64 + du, (y0 + at.y) as f64 + dv);
        let corner = refine(&self.grey, patch, start).unwrap_or(start);
        let offset = (c.pixel.0 - c.pixel.0.round(), c.pixel.1 - c.pixel.1.round());
        Ok(Some((
            corner.0 + h as f64 + offset.0,
            corner.1 + h as f64 + offset.1,
        )))
    }
}

/// The patch's place in the frame refined below the correlation's grid: Gauss-Newton on the
/// weighted sum of squares of frame(x + p) - (gain template(x) + offset) over the patch (Lucas
/// and Kanade's translation, with the brightness's gain and offset that the correlation
/// ignores), the frame sampled bilinearly, from `start` (the patch's top-left corner, px).
/// None when it leaves the frame or does not settle within half a pixel of the start.
fn refine(grey: &Mat, patch: &Mat, start: (f64, f64)) -> Option<(f64, f64)> {
    let (w, h) = (patch.cols(), patch.rows());
    let t: Vec<f64> = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .map(|(x, y)| patch.at_2d::<u8>(y, x).map(|p| *p as f64).ok())
        .collect::<Option<_>>()?;
    // Weights falling off from the patch's centre (a Gaussian of half the half-size): what
    // surrounds the feature (a body behind it that turns) counts less than the feature.
    let (cx, cy) = (0.5 * (w - 1) as f64, 0.5 * (h - 1) as f64);
    let s2 = 2.0 * (0.5 * cx.max(1.0)).powi(2);
    let weight = |x: i32, y: i32| (-((x as f64 - cx).powi(2) + (y as f64 - cy).powi(2)) / s2).exp();
    let mut p = [start.0, start.1, 1.0, 0.0];
    for _ in 0..8 {
        let mut jtj = nalgebra::Matrix4::<f64>::zeros();
        let mut jtr = nalgebra::Vector4::<f64>::zeros();
        for y in 0..h {
            for x in 0..w {
                let (u, v) = (p[0] + x as f64, p[1] + y as f64);
                let i = crate::blob::bilinear(grey, u, v)?;
                let gx = 0.5
                    * (crate::blob::bilinear(grey, u + 1.0, v)?
                        - crate::blob::bilinear(grey, u - 1.0, v)?);
                let gy = 0.5
                    * (crate::blob::bilinear(grey, u, v + 1.0)?
                        - crate::blob::bilinear(grey, u, v - 1.0)?);
                let tv = t[(y * w + x) as usize];
                let r = i - (p[2] * tv + p[3]);
                let j = nalgebra::Vector4::new(gx, gy, -tv, -1.0);
                let wt = weight(x, y);
                jtj += wt * j * j.transpose();
                jtr += wt * j * r;
            }
        }
        let d = jtj.try_inverse()? * jtr;
        for (k, dk) in d.iter().enumerate() {
            p[k] -= dk;
        }
        if d[0].hypot(d[1]) < 1e-4 {
            break;
        }
    }
    ((p[0] - start.0).hypot(p[1] - start.1) < 0.5).then_some((p[0], p[1]))
}

/// A followed feature's standard deviation taken, px (`matchTemplate` gives none; measured on
/// renders, docs/tracking.md).
const SIGMA_PX: f64 = 0.1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_outside_the_frame_are_refused() {
        let click = |u, v, h| TemplateClick {
            marker: 0,
            frame: 0,
            pixel: (u, v),
            half_size: h,
        };
        assert!(check(&[click(100.0, 100.0, 10)], 640, 480).is_ok());
        for (c, says) in [
            (click(5.0, 100.0, 10), "not inside the 640 x 480 frame"),
            (click(700.0, 100.0, 10), "not inside"),
            (click(100.0, f64::NAN, 10), "not inside"),
            (click(100.0, 100.0, 1), "half-size of 1 px"),
        ] {
            let e = check(&[c], 640, 480).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let twice = [click(100.0, 100.0, 10), click(200.0, 100.0, 10)];
        assert!(check(&twice, 640, 480).unwrap_err().contains("twice"));
    }
}
