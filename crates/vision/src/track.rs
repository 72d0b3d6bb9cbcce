//! Sub-pixel tracking of the lever's markers in a video file.
//!
//! Every frame is decoded (OpenCV, FFmpeg backend), its capture time taken from the container's
//! presentation timestamps ([`crate::timebase`]: snapped to the frame rate's grid, so a dropped
//! frame leaves a slot empty, kept as they are at a variable rate, scaled for slow motion).
//! Bright blobs are segmented at a threshold halfway between the frame's median and its
//! brightest level (or a given one) and kept when their area and fill are those of a disc. Each blob's centre starts at the intensity
//! centroid of (I - b) over its box widened by 3 px, b being the median of the box's border (the
//! lever or background around the marker), and is refined to the blob's centre of point symmetry
//! ([`symmetric_centre`]), which a lossy codec's ringing does not bias as it biases the centroid.
//! Its standard deviation is the centroid's, from the noise of the border pixels,
//! sigma = sigma_noise sqrt(sum (u - u_c)^2) / sum (I - b).
//!
//! After the lock each marker is sought in a small window about its predicted place, straight
//! on the decoded pixels, and must be the one disc-like blob there; otherwise, and in one frame
//! of [`WINDOW_CHECK_EVERY`], the lever's neighbourhood is searched (the box of the markers'
//! predicted places widened by a marker spacing), and the whole frame when fewer than two
//! markers were seen. Decoding runs on a thread of its own, ahead of the tracking by a few
//! frames. This keeps tracking cheap next to decoding.
//!
//! Identities (`assign`, `pattern`): by the mechanism's layout when given; else the markers are
//! in a line on the lever, M1 nearest B, and move smoothly. The
//! tracker locks on the first frame where exactly the expected number of blobs lie on a line,
//! names them along the line from the end nearest the bench origin A (B turns within the crank's
//! length of A; C' is far from it), and then follows each marker to the nearest blob of its
//! prediction (constant velocity in the image, or its place on the line through the markers
//! seen), within a gate of 0.4 times the smallest marker spacing. A marker with no blob in its
//! gate is a gap in that frame, never invented.

use std::f64::consts::PI;
use std::path::Path;
use std::time::Instant;

use flexbench_contracts::flags::{FlagReason, Flags};
use flexbench_contracts::{MarkerKind, TrackRow};
use opencv::core::{Mat, CV_32S};
use opencv::prelude::*;

use crate::assign::{
    extra_on_line, follow, lock_by_layout, lock_in_line, predict, research, Lock, Prediction, View,
    ACCEPT_CHI2,
};
pub use crate::blob::Blob;
use crate::camera::Calibration;
use crate::pattern::NotFound;
use crate::timebase::{self, probe_container, TimeBaseConfig, TimingRecord};
use crate::{cv, VisionError};

pub use flexbench_contracts::flags::FALSE_ALARM;

pub use crate::track_config::TrackConfig;

/// What tracking found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrackSummary {
    /// Frames decoded.
    pub frames: usize,
    /// Marker detections written.
    pub detections: usize,
    /// Marker-frames without a detection (gaps), after the lock.
    pub gaps: usize,
    /// Blobs seen but not taken as a marker (wrong shape, outside every gate).
    pub rejected_blobs: usize,
    /// Frame where the markers were first found in a line.
    pub lock_frame: usize,
    /// The video's time base: where the frames' times come from, their steps, dropped frames.
    #[serde(default)]
    pub timing: TimingRecord,
    /// Frames per second of decoding and tracking together (a wall time: printed, never written,
    /// so that two runs write the same bytes).
    #[serde(skip)]
    pub frames_per_second: f64,
    /// Median standard deviation of the centres, px.
    #[serde(deserialize_with = "flexbench_contracts::json::f64_or_nan")]
    pub median_sigma_px: f64,
    /// Frames tracked in the markers' own windows (the fast path), the rest by a search.
    pub window_frames: usize,
    /// Samples flagged by at least one test.
    #[serde(default)]
    pub flagged: usize,
    /// Samples the user's corrections set (dropped, moved, swapped or sought again).
    #[serde(default)]
    pub corrected: usize,
    /// Samples whose disc was fitted to its visible outline, where it touched something of its
    /// shade or the frame's edge and its blob was no disc (`outline`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outlined: usize,
    /// Of the `outlined` samples, those the motion model refused (a sudden acceleration) and
    /// their body's rigid spacing to a marker seen in the same frame vouched for (`outline`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outlined_by_spacing: usize,
    /// Coloured stickers' samples whose centre was refined on the frame's luma (`outline`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub luma_refined: usize,
    /// Flags of each reason.
    #[serde(default)]
    pub flags_by_reason: std::collections::BTreeMap<FlagReason, usize>,
    /// What the markers' spacings say of their depth in front of the bench plane, where a body
    /// carries two markers or more (`depth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<crate::depth::DepthEstimate>,
    /// What the rolling shutter's correction did, when a readout was given (`shutter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutter: Option<crate::shutter::ShutterRecord>,
    /// What the rigid patterns' deformation with the motion says of a rolling shutter's readout,
    /// where a body carries two markers or more (`readout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readout: Option<crate::readout::ReadoutEstimate>,
}

impl TrackSummary {
    /// What the user must hear: the time base's warnings, then the depth's and the readout's.
    pub fn warnings(&self) -> Vec<String> {
        let depth = self.depth.as_ref().and_then(|d| d.warning());
        let readout = self.readout.as_ref().and_then(|r| r.warning());
        let carry = self.shutter.as_ref().and_then(|s| s.warning());
        self.timing
            .warnings
            .iter()
            .cloned()
            .chain(depth)
            .chain(readout)
            .chain(carry)
            .collect()
    }
}

/// Whether a count is zero (left out of the summary's JSON).
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What tracking a video gives: the tracks' rows, the flagged samples, the summary.
#[derive(Debug, Clone)]
pub struct Tracked {
    /// Rows frame by frame, marker by marker; a marker not found in a frame has no row.
    pub rows: Vec<TrackRow>,
    /// The samples that failed a test (`flags`).
    pub flags: Flags,
    /// What tracking found.
    pub summary: TrackSummary,
}

/// The markers' disc-like blobs of a frame with their sub-pixel centres: the bright blobs of its
/// response for the markers' kind (`response`): a grey frame for bright markers, the inverted
/// grey frame for dark ones, the colour frame's hue response for coloured ones.
pub fn find_blobs(grey: &Mat, cfg: &TrackConfig) -> Result<(Vec<Blob>, usize), VisionError> {
    let made;
    let grey = match cfg.kind {
        MarkerKind::Bright | MarkerKind::Fiducial { .. } | MarkerKind::Template => grey,
        MarkerKind::Dark => {
            let mut m = Mat::default();
            cv(
                "bitwise_not",
                opencv::core::bitwise_not(grey, &mut m, &opencv::core::no_array()),
            )?;
            made = m;
            &made
        }
        MarkerKind::Colour { .. } => {
            made = crate::response::colour_response(grey, &cfg.kind)?;
            &made
        }
    };
    let size = cv("size", grey.size())?;
    let (w, h) = (size.width as usize, size.height as usize);
    let data = cv("pixels", grey.data_bytes())?;
    let threshold = threshold_of(data, cfg);
    let mut binary = Mat::default();
    cv(
        "threshold",
        opencv::imgproc::threshold(
            grey,
            &mut binary,
            threshold,
            255.0,
            opencv::imgproc::THRESH_BINARY,
        ),
    )?;
    let mut labels = Mat::default();
    let mut stats = Mat::default();
    let mut centroids = Mat::default();
    let n = cv(
        "connectedComponents",
        opencv::imgproc::connected_components_with_stats(
            &binary,
            &mut labels,
            &mut stats,
            &mut centroids,
            8,
            CV_32S,
        ),
    )?;
    let mut blobs = Vec::new();
    let mut rejected = 0;
    for k in 1..n {
        let st =
            |c: i32| -> Result<i32, VisionError> { cv("stats", stats.at_2d::<i32>(k, c).copied()) };
        let (x0, y0, bw, bh, area) = (st(0)?, st(1)?, st(2)?, st(3)?, st(4)? as f64);
        if !disc_like(area, bw, bh, cfg) {
            rejected += 1;
            continue;
        }
        match measure_blob(data, w, h, (x0, y0, bw, bh), area) {
            Some(b) => blobs.push(b),
            None => rejected += 1,
        }
    }
    Ok((blobs, rejected))
}

/// Whether a connected component of `area` px in a box bw x bh px has the area and fill of a
/// marker's disc.
fn disc_like(area: f64, bw: i32, bh: i32, cfg: &TrackConfig) -> bool {
    let fill = area / (std::f64::consts::PI / 4.0 * (bw.max(bh) as f64).powi(2));
    !(area < cfg.min_area
        || area > cfg.max_area
        || fill < 0.55
        || (bw.max(bh) as f64) > 2.5 * (bw.min(bh) as f64))
}

/// The sub-pixel centre of the component in the box (x0, y0, bw, bh) of a w x h grey image:
/// the intensity centroid of (I - b) over the box widened by 3 px (clipped to the image), b the
/// median of the widened box's border, refined to the blob's centre of point symmetry, with the
/// centroid's standard deviation (module documentation).
fn measure_blob(
    data: &[u8],
    w: usize,
    h: usize,
    (x0, y0, bw, bh): (i32, i32, i32, i32),
    area: f64,
) -> Option<Blob> {
    let m = 3;
    let (u0, v0) = ((x0 - m).max(0) as usize, (y0 - m).max(0) as usize);
    let (u1, v1) = (
        ((x0 + bw + m) as usize).min(w - 1),
        ((y0 + bh + m) as usize).min(h - 1),
    );
    let mut border = Vec::with_capacity(2 * (u1 - u0 + v1 - v0 + 2));
    for v in v0..=v1 {
        for u in u0..=u1 {
            if v == v0 || v == v1 || u == u0 || u == u1 {
                border.push(data[v * w + u] as f64);
            }
        }
    }
    border.sort_by(|a, b| a.total_cmp(b));
    let b = border[border.len() / 2];
    let mut dev: Vec<f64> = border.iter().map(|x| (x - b).abs()).collect();
    dev.sort_by(|a, b| a.total_cmp(b));
    let noise = 1.4826 * dev[dev.len() / 2];
    let (mut s, mut su, mut sv, mut peak) = (0.0, 0.0, 0.0, 0.0f64);
    for v in v0..=v1 {
        for u in u0..=u1 {
            let wgt = data[v * w + u] as f64 - b;
            if wgt > 0.0 {
                s += wgt;
                su += wgt * u as f64;
                sv += wgt * v as f64;
                peak = peak.max(wgt);
            }
        }
    }
    if s <= 0.0 {
        return None;
    }
    let (cu, cv_) = (su / s, sv / s);
    let (mut mu, mut mv, mut half_area) = (0.0, 0.0, 0.0);
    // The intensity-weighted second moments, for the blob's elongation.
    let (mut wuu, mut wvv, mut wuv) = (0.0, 0.0, 0.0);
    for v in v0..=v1 {
        for u in u0..=u1 {
            let wgt = data[v * w + u] as f64 - b;
            if wgt > 0.0 {
                let (du, dv) = (u as f64 - cu, v as f64 - cv_);
                mu += du * du;
                mv += dv * dv;
                wuu += wgt * du * du;
                wvv += wgt * dv * dv;
                wuv += wgt * du * dv;
                if wgt >= 0.5 * peak {
                    half_area += 1.0;
                }
            }
        }
    }
    // Principal moments: (wuu + wvv)/2 +- sqrt(((wuu - wvv)/2)^2 + wuv^2).
    let (mean, dev) = (
        0.5 * (wuu + wvv),
        (0.25 * (wuu - wvv).powi(2) + wuv * wuv).sqrt(),
    );
    let elongation = ((mean + dev) / (mean - dev).max(1e-12 * mean)).sqrt();
    // Noise quantised to 8 bits has a floor of 1/sqrt(12) grey level.
    let sigma = noise.max(1.0 / 12f64.sqrt()) * mu.max(mv).sqrt() / s;
    let (u, v) = symmetric_centre(data, w, h, (cu, cv_), (area / PI).sqrt() + 2.0);
    Some(Blob {
        u,
        v,
        sigma,
        area,
        half_area,
        elongation,
        rival: None,
    })
}

/// The centre of point symmetry of a blob: the point c minimizing the sum over the disc of
/// radius `r` px about it of (I(c + d) - I(c - d))^2, I interpolated bilinearly, by Newton
/// steps (derivatives by central differences of 0.02 px, steps at most 0.5 px) from the
/// intensity centroid `start`. A marker's image is symmetric about its centre whatever its
/// blur, while a lossy codec's ringing and a background's gradient bias the intensity centroid:
/// on H.264 video the RMS error falls from 0.09-0.19 px to 0.09-0.13 px and the bias from up to
/// 0.13 px to 0.04 px (docs/tracking.md). Falls back to `start` when the cost is not convex there
/// or the centre wanders more than 1.5 px.
fn symmetric_centre(data: &[u8], w: usize, h: usize, start: (f64, f64), r: f64) -> (f64, f64) {
    if w < 2 || h < 2 {
        return start;
    }
    let at = |u: f64, v: f64| -> f64 {
        let (u, v) = (u.clamp(0.0, (w - 2) as f64), v.clamp(0.0, (h - 2) as f64));
        let (i, j) = (u.floor() as usize, v.floor() as usize);
        let (fu, fv) = (u - i as f64, v - j as f64);
        let p = |i: usize, j: usize| data[j * w + i] as f64;
        (1.0 - fv) * ((1.0 - fu) * p(i, j) + fu * p(i + 1, j))
            + fv * ((1.0 - fu) * p(i, j + 1) + fu * p(i + 1, j + 1))
    };
    let ri = r.ceil() as i32;
    // Each pair (d, -d) once: half the disc.
    let half: Vec<(f64, f64)> = (-ri..=ri)
        .flat_map(|dy| (0..=ri).map(move |dx| (dx, dy)))
        .filter(|&(dx, dy)| !(dx == 0 && dy <= 0) && ((dx * dx + dy * dy) as f64) <= r * r)
        .map(|(dx, dy)| (dx as f64, dy as f64))
        .collect();
    let cost = |u: f64, v: f64| -> f64 {
        half.iter()
            .map(|(dx, dy)| (at(u + dx, v + dy) - at(u - dx, v - dy)).powi(2))
            .sum()
    };
    let (mut u, mut v) = start;
    let e = 0.02;
    for _ in 0..6 {
        let f0 = cost(u, v);
        let (fu1, fu0, fv1, fv0) = (
            cost(u + e, v),
            cost(u - e, v),
            cost(u, v + e),
            cost(u, v - e),
        );
        let (gu, gv) = ((fu1 - fu0) / (2.0 * e), (fv1 - fv0) / (2.0 * e));
        let huu = (fu1 - 2.0 * f0 + fu0) / (e * e);
        let hvv = (fv1 - 2.0 * f0 + fv0) / (e * e);
        let huv = (cost(u + e, v + e) - fu1 - fv1 + f0) / (e * e);
        let det = huu * hvv - huv * huv;
        if !(det > 0.0 && huu > 0.0) {
            break;
        }
        let du = (-(hvv * gu - huv * gv) / det).clamp(-0.5, 0.5);
        let dv = (-(huu * gv - huv * gu) / det).clamp(-0.5, 0.5);
        u += du;
        v += dv;
        if du.abs() < 1e-4 && dv.abs() < 1e-4 {
            break;
        }
    }
    if (u - start.0).hypot(v - start.1) > 1.5 {
        start
    } else {
        (u, v)
    }
}

/// The segmentation threshold of a grey image (inverted for dark markers): the given one, else
/// halfway between the median and the brightest level.
fn threshold_of(data: &[u8], cfg: &TrackConfig) -> f64 {
    // A given threshold is a grey level: dark markers lie below it, so in the inverted image
    // they lie above 255 minus it.
    if let Some(t) = cfg.threshold {
        return match cfg.kind {
            MarkerKind::Bright
            | MarkerKind::Colour { .. }
            | MarkerKind::Fiducial { .. }
            | MarkerKind::Template => t,
            MarkerKind::Dark => 255.0 - t,
        };
    }
    let mut hist = [0usize; 256];
    for &p in data {
        hist[p as usize] += 1;
    }
    let mut acc = 0;
    let mut median = 0;
    for (i, c) in hist.iter().enumerate() {
        acc += c;
        if acc * 2 >= data.len() {
            median = i;
            break;
        }
    }
    let max = (0..256).rev().find(|&i| hist[i] > 0).unwrap_or(255);
    median as f64 + 0.5 * (max as f64 - median as f64)
}

/// Scratch space of [`follow_in_windows`]: a window's grey levels, the component labelling's
/// visited flags and stack.
#[derive(Default)]
struct WindowBuffers {
    grey: Vec<u8>,
    seen: Vec<bool>,
    stack: Vec<usize>,
}

/// One frame followed in the markers' windows: each marker's blob (None where not found) and
/// the number of blobs rejected.
type WindowFollow = (Vec<Option<Blob>>, usize);

/// The fast path of a locked frame: each marker sought in a small window about its prediction
/// (constant velocity in the image), straight on the decoded pixels. None when a marker was not
/// seen in the last frame, or a window does not hold exactly one disc-like blob wholly inside it,
/// or its blob is not plausible under the motion model (`preds`, [`ACCEPT_CHI2`]): the frame
/// then goes through the lever-neighbourhood search. The buffers are reused from frame to frame.
fn follow_in_windows(
    frame: &Mat,
    prev1: &[Option<Blob>],
    prev2: Option<&Vec<Option<Blob>>>,
    preds: &[Option<Prediction>],
    cfg: &TrackConfig,
    bufs: &mut WindowBuffers,
) -> Result<Option<WindowFollow>, VisionError> {
    let (cols, rows) = (frame.cols() as i64, frame.rows() as i64);
    let ch = frame.channels() as usize;
    if !(ch == 1 || ch == 3) || !frame.is_continuous() {
        return Ok(None);
    }
    let data = cv("pixels", frame.data_bytes())?;
    let mut out = Vec::with_capacity(prev1.len());
    let mut rejected = 0;
    for (m, last) in prev1.iter().enumerate() {
        let Some(b1) = last else { return Ok(None) };
        let (du, dv) = match prev2.and_then(|p| p[m]) {
            Some(b0) => (b1.u - b0.u, b1.v - b0.v),
            None => (0.0, 0.0),
        };
        let (pu, pv) = (b1.u + du, b1.v + dv);
        let radius = (b1.area / std::f64::consts::PI).sqrt();
        let half = (2.0 * radius + 0.5 * du.hypot(dv) + 5.0).ceil() as i64;
        let (x0, y0) = (
            (pu.round() as i64 - half).max(0),
            (pv.round() as i64 - half).max(0),
        );
        let (x1, y1) = (
            (pu.round() as i64 + half).min(cols - 1),
            (pv.round() as i64 + half).min(rows - 1),
        );
        if x1 - x0 < 8 || y1 - y0 < 8 {
            return Ok(None);
        }
        let (w, h) = ((x1 - x0 + 1) as usize, (y1 - y0 + 1) as usize);
        bufs.grey.clear();
        // The markers' response (`response`): dark markers inverted, coloured ones by hue.
        let rect = (x0 as usize, y0 as usize, x1 as usize, y1 as usize);
        crate::response::window_into(data, (cols as usize, ch), &cfg.kind, rect, &mut bufs.grey);
        let edges = [x0 == 0, x1 == cols - 1, y0 == 0, y1 == rows - 1];
        let (found, r) = single_disc(bufs, w, h, edges, cfg);
        rejected += r;
        let Some((bx, by, bw, bh, area)) = found else {
            return Ok(None);
        };
        let Some(mut blob) = measure_blob(&bufs.grey, w, h, (bx, by, bw, bh), area) else {
            return Ok(None);
        };
        blob.u += x0 as f64;
        blob.v += y0 as f64;
        if preds[m].is_none_or(|p| p.chi2(&blob) > ACCEPT_CHI2) {
            return Ok(None);
        }
        out.push(Some(blob));
    }
    Ok(Some((out, rejected)))
}

/// A blob's box in a window (x, y, width, height, px) and its area (px).
type BlobBox = (i32, i32, i32, i32, f64);

/// The one disc-like blob (box x, y, width, height in px, and area) of the window of `w` x `h`
/// grey pixels in `bufs`, and the blobs rejected by shape. None when there is none, more than
/// one, or one not wholly inside the window with the 3 px of the centroid's box (unless the
/// window ends at the frame's edge there: `edges` left, right, top, bottom, as the
/// whole-frame search clips there too). Connected components with 8-connectivity.
fn single_disc(
    bufs: &mut WindowBuffers,
    w: usize,
    h: usize,
    edges: [bool; 4],
    cfg: &TrackConfig,
) -> (Option<BlobBox>, usize) {
    let WindowBuffers {
        grey: buf,
        seen,
        stack,
    } = bufs;
    let thr = threshold_of(buf, cfg);
    seen.clear();
    seen.resize(w * h, false);
    stack.clear();
    let mut found: Option<BlobBox> = None;
    let mut rejected = 0;
    for start in 0..w * h {
        if seen[start] || (buf[start] as f64) <= thr {
            continue;
        }
        let (mut bx0, mut by0, mut bx1, mut by1, mut area) =
            (usize::MAX, usize::MAX, 0usize, 0usize, 0usize);
        seen[start] = true;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (u, v) = (i % w, i / w);
            area += 1;
            bx0 = bx0.min(u);
            by0 = by0.min(v);
            bx1 = bx1.max(u);
            by1 = by1.max(v);
            for dv in -1i64..=1 {
                for du in -1i64..=1 {
                    let (nu, nv) = (u as i64 + du, v as i64 + dv);
                    if nu < 0 || nv < 0 || nu >= w as i64 || nv >= h as i64 {
                        continue;
                    }
                    let j = nv as usize * w + nu as usize;
                    if !seen[j] && (buf[j] as f64) > thr {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        let (bw, bh) = ((bx1 - bx0 + 1) as i32, (by1 - by0 + 1) as i32);
        if !disc_like(area as f64, bw, bh, cfg) {
            rejected += 1;
            continue;
        }
        let inside = |lo: usize, hi: usize, n: usize, at_lo: bool, at_hi: bool| {
            (lo >= 4 || at_lo) && (hi + 4 < n || at_hi)
        };
        if found.is_some()
            || !inside(bx0, bx1, w, edges[0], edges[1])
            || !inside(by0, by1, h, edges[2], edges[3])
        {
            return (None, rejected);
        }
        found = Some((bx0 as i32, by0 as i32, bw, bh, area as f64));
    }
    (found, rejected)
}

/// The one disc-like blob in the window (u0, v0, u1, v1, px) of a frame, in frame pixels; None
/// when there is none or more than one.
fn seek_in(frame: &Mat, w: [f64; 4], cfg: &TrackConfig) -> Result<Option<Blob>, VisionError> {
    let (x0, y0) = (w[0].floor() as i32, w[1].floor() as i32);
    let (x1, y1) = (
        (w[2].ceil() as i32).min(frame.cols() - 1),
        (w[3].ceil() as i32).min(frame.rows() - 1),
    );
    let rect = opencv::core::Rect::new(x0, y0, (x1 - x0 + 1).max(1), (y1 - y0 + 1).max(1));
    let view = cv("roi", Mat::roi(frame, rect))?;
    let mut grey = Mat::default();
    if frame.channels() == 1 || matches!(cfg.kind, MarkerKind::Colour { .. }) {
        grey = cv("roi", view.try_clone())?;
    } else {
        cv(
            "cvtColor",
            opencv::imgproc::cvt_color(&view, &mut grey, opencv::imgproc::COLOR_BGR2GRAY, 0),
        )?;
    }
    let (blobs, _) = find_blobs(&grey, cfg)?;
    Ok(match blobs.as_slice() {
        [b] => Some(Blob {
            u: b.u + x0 as f64,
            v: b.v + y0 as f64,
            ..*b
        }),
        _ => None,
    })
}

/// The trackers of the groups of one look (`kinds::split`) as one over every marker of `cfg`:
/// the samples and the corrected ones in the markers' order, the gaps and rejected blobs
/// summed, the lock at the latest group's, the frames on the fast path those of every group.
fn merged<'a>(
    mut trackers: Vec<Tracker<'a>>,
    groups: &[crate::kinds::Group],
    cfg: &'a TrackConfig,
    view: View<'a>,
) -> Tracker<'a> {
    if trackers.len() == 1 {
        return trackers.remove(0);
    }
    let mut all = Tracker::new(cfg, view);
    let frames = trackers.first().map_or(0, |t| t.per_frame.len());
    all.per_frame = vec![vec![None; cfg.markers.len()]; frames];
    all.summary.window_frames = frames;
    for (t, g) in trackers.iter().zip(groups) {
        for (k, samples) in t.per_frame.iter().enumerate() {
            for (j, b) in samples.iter().enumerate() {
                all.per_frame[k][g.index[j]] = *b;
            }
        }
        for (&(k, j), b) in &t.corrected {
            all.corrected.insert((k, g.index[j]), *b);
        }
        let s = &t.summary;
        all.summary.gaps += s.gaps;
        all.summary.rejected_blobs += s.rejected_blobs;
        all.summary.outlined += s.outlined;
        all.summary.outlined_by_spacing += s.outlined_by_spacing;
        all.summary.luma_refined += s.luma_refined;
        all.summary.lock_frame = all.summary.lock_frame.max(s.lock_frame);
        all.summary.window_frames = all.summary.window_frames.min(s.window_frames);
    }
    all
}

mod gaps;
pub use gaps::{COAST_FRAMES, PARTNER_LOOKBACK};

/// One locked frame in this many is searched over the lever's neighbourhood rather than in the
/// markers' own windows (see [`track_video`]).
pub const WINDOW_CHECK_EVERY: usize = 16;

/// The settings checked before a frame is decoded: two markers at least, the corrections
/// within the markers and the image.
fn check_config(cfg: &TrackConfig, cal: &Calibration, p: &str) -> Result<(), VisionError> {
    let nm = cfg.markers.len();
    let fail = |reason: String| VisionError::Tracking {
        path: p.into(),
        reason,
    };
    if nm < 2 {
        return Err(fail("at least two markers are needed".into()));
    }
    check_depths(cfg, cal).map_err(fail)?;
    let (w, h) = (cal.intrinsics.width, cal.intrinsics.height);
    crate::corrections::check(&cfg.corrections, nm, w, h)
        .map_err(|r| fail(format!("the corrections: {r}")))
}

/// The clicks of a group of template markers (`kinds`): each inside the image, one per marker.
fn check_templates(cfg: &TrackConfig, cal: &Calibration, p: &str) -> Result<(), VisionError> {
    if cfg.kind != MarkerKind::Template {
        return Ok(());
    }
    let fail = |reason: String| VisionError::Tracking {
        path: p.into(),
        reason,
    };
    let (w, h) = (cal.intrinsics.width, cal.intrinsics.height);
    crate::template::check(&cfg.templates, w, h).map_err(fail)?;
    match (0..cfg.markers.len()).find(|m| cfg.templates.iter().all(|c| c.marker != *m)) {
        Some(m) => Err(fail(format!(
            "the marker '{}' is a feature followed by its template, but no click gives it: add a [[template]] with marker = \"{}\" to the templates file (--templates, [inputs] templates)",
            cfg.markers[m], cfg.markers[m]
        ))),
        None => Ok(()),
    }
}

/// The markers' depths: one per marker (or none), finite, each in front of the camera.
fn check_depths(cfg: &TrackConfig, cal: &Calibration) -> Result<(), String> {
    if cfg.depths.iter().all(|d| *d == 0.0) {
        return Ok(());
    }
    if cfg.depths.len() != cfg.markers.len() {
        return Err(format!(
            "{} depths for {} markers: give one per marker",
            cfg.depths.len(),
            cfg.markers.len()
        ));
    }
    let centre = cal.plane.and_then(|p| p.camera_centre()).ok_or(
        "the markers' depths need the camera's pose, and the calibration's bench plane gives none",
    )?;
    for (name, d) in cfg.markers.iter().zip(&cfg.depths) {
        if !d.is_finite() || *d >= centre.z.abs() {
            return Err(format!(
                "the marker '{name}' at {d} m in front of the bench plane would stand at or behind the camera ({:.3} m from the plane): give its depth in metres towards the camera (a lever's thickness and stand-off: millimetres)",
                centre.z.abs()
            ));
        }
    }
    Ok(())
}

/// Track the markers of the video at `path` with the camera `cal` (intrinsics and bench plane),
/// and test every sample (`flags`).
pub fn track_video(
    path: &Path,
    cal: &Calibration,
    cfg: &TrackConfig,
    mut progress: impl FnMut(usize, usize),
) -> Result<Tracked, VisionError> {
    let p = path.display().to_string();
    let video_err = |reason: String| VisionError::Video {
        path: p.clone(),
        reason,
    };
    let plane = cal.plane.ok_or_else(|| VisionError::CalibrationFile {
        path: "(calibration)".into(),
        reason: "it has no bench plane ('bench_homography'); calibrate with --plane-view, --origin and --horizontal".into(),
    })?;
    let cap = open_video(path)?;
    // The container's timing first: a file without timestamps and no rate given is refused
    // before any frame is decoded.
    let container = probe_container(path)?;
    timebase::check_timestamps(&p, container.as_ref(), &cfg.timing)?;
    let fps = cv("fps", cap.get(opencv::videoio::CAP_PROP_FPS))?;
    let total = cv(
        "frame count",
        cap.get(opencv::videoio::CAP_PROP_FRAME_COUNT),
    )?
    .max(0.0) as usize;
    check_config(cfg, cal, &p)?;
    let groups = crate::kinds::split(cfg).map_err(|reason| VisionError::Tracking {
        path: p.clone(),
        reason,
    })?;
    for g in &groups {
        check_templates(&g.cfg, cal, &p)?;
    }
    let start = Instant::now();
    let view = View { cal, plane: &plane };
    let mut trackers = groups
        .iter()
        .map(|g| Tracker::for_kind(&g.cfg, view))
        .collect::<Result<Vec<_>, _>>()?;
    let mut frame = Mat::default();
    let mut stamps: Vec<f64> = Vec::new();
    let decoder = Decoder::spawn(cap);
    while let Ok(item) = decoder.frames.recv() {
        let (decoded, ts) =
            item.map_err(|e| video_err(format!("decoding frame {} failed ({e})", stamps.len())))?;
        decoder.recycle(std::mem::replace(&mut frame, decoded));
        stamps.push(ts / 1000.0);
        let k = stamps.len() - 1;
        for t in trackers.iter_mut() {
            t.frame(&frame)?;
        }
        if k.is_multiple_of(16) {
            progress(k, total);
        }
    }
    decoder.finish();
    if stamps.is_empty() {
        return Err(video_err(
            "holds no frame that can be decoded (empty or truncated file)".into(),
        ));
    }
    let frames = stamps.len();
    if let Some(c) = cfg.templates.iter().find(|c| c.frame >= frames) {
        return Err(VisionError::Tracking {
            path: p,
            reason: format!(
                "the template of '{}' is clicked in frame {}, but the video has {frames} frames (0 to {}): click it in a frame the video has",
                cfg.markers.get(c.marker).map_or("?", String::as_str),
                c.frame,
                frames.saturating_sub(1)
            ),
        });
    }
    for t in &trackers {
        t.check_lock(&p)?;
    }
    let mut tracker = merged(trackers, &groups, cfg, view);
    if let Some(c) = cfg.corrections.iter().find(|c| c.frames[1] >= frames) {
        let last = frames.saturating_sub(1);
        return Err(VisionError::Tracking {
            path: p,
            reason: format!(
                "the corrections: {} names frame {}, but the video has {frames} frames (0 to {last})",
                c.label, c.frames[1]
            ),
        });
    }
    let mut summary = std::mem::take(&mut tracker.summary);
    let tb = timebase::resolve(&p, frames, container.as_ref(), (&stamps, fps), &cfg.timing)?;
    summary.timing = tb.record;
    let times = tb.times;
    let flags = tracker.flags(&mut summary);
    let (mut rows, mut sigmas) = bench_rows(tracker.per_frame, &times, cal, &plane, cfg);
    let h = cal.intrinsics.height as f64;
    let readout = shutter_readout(&p, &rows, cfg, h, &mut summary)?;
    if readout > 0.0 {
        summary.shutter = Some(crate::shutter::to_frame_times(&mut rows, readout, h));
    }
    // The depth from the spacings once each sample is at its frame's time (a rolling shutter
    // skews a pattern), applied to the rows when asked for.
    summary.depth = match (plane.camera_centre(), &cfg.layout) {
        (Some(c), Some(layout)) => {
            let markers = crate::depth::Markers {
                names: &cfg.markers,
                depths: &cfg.depths,
                layout,
                apply: cfg.estimate_depth,
            };
            crate::depth::from_rows(&mut rows, &markers, &c)
        }
        _ => None,
    };
    summary.frames = frames;
    summary.detections = rows.len();
    summary.frames_per_second = frames as f64 / start.elapsed().as_secs_f64().max(1e-9);
    sigmas.sort_by(|a, b| a.total_cmp(b));
    summary.median_sigma_px = sigmas.get(sigmas.len() / 2).copied().unwrap_or(f64::NAN);
    progress(frames, frames);
    Ok(Tracked {
        rows,
        flags,
        summary,
    })
}

/// The rolling shutter's readout the tracks use (s): the one given, or the one the rigid
/// patterns' deformation asks for with `cfg.estimate_readout`; the estimate goes into
/// `summary.readout`. A readout not shorter than a frame is refused.
fn shutter_readout(
    p: &str,
    rows: &[TrackRow],
    cfg: &TrackConfig,
    height: f64,
    summary: &mut TrackSummary,
) -> Result<f64, VisionError> {
    let step = summary.timing.dt_min_s;
    let estimate = cfg.layout.as_ref().and_then(|layout| {
        crate::readout::from_rows(rows, &cfg.markers, layout, height, cfg.readout).map(|e| {
            crate::readout::ReadoutEstimate {
                frame_s: if step.is_finite() { step } else { 0.0 },
                ..e
            }
        })
    });
    let refuse = |what: String| VisionError::Tracking {
        path: p.to_string(),
        reason: what,
    };
    let readout = match (&estimate, cfg.estimate_readout) {
        (_, false) => cfg.readout,
        (Some(e), true) if e.possible() => e.readout_s.clamp(0.0, e.frame_s.max(0.0)),
        (Some(e), true) => {
            return Err(refuse(format!(
                "--estimate-readout: {}",
                e.warning().unwrap_or_default()
            )));
        }
        (None, true) => {
            return Err(refuse("the readout cannot be estimated: no body of the mechanism file carries two markers seen in three frames running (a rigid pattern); give the camera's readout instead (--readout, [track] readout_s)".into()));
        }
    };
    summary.readout = estimate.map(|e| crate::readout::ReadoutEstimate {
        used_s: readout,
        applied: cfg.estimate_readout,
        ..e
    });
    if readout > 0.0 && (readout >= step || !step.is_finite()) {
        let source = if cfg.estimate_readout {
            "as the motion asks"
        } else {
            "as given"
        };
        return Err(refuse(format!(
            "a rolling shutter's readout of {:.2} ms ({source}) is not shorter than a frame ({:.2} ms): give the readout in seconds (the time from the first row to the last, a few milliseconds on a phone)",
            readout * 1e3,
            step * 1e3
        )));
    }
    Ok(readout)
}

/// The video decoded on a thread of its own, frames handed over through a short queue and
/// their buffers recycled: decoding and tracking overlap on two cores.
struct Decoder {
    /// Each decoded frame with its timestamp (ms), or the decoder's error.
    frames: std::sync::mpsc::Receiver<Result<(Mat, f64), String>>,
    /// Buffers handed back for the next frames.
    back: std::sync::mpsc::Sender<Mat>,
    thread: std::thread::JoinHandle<()>,
}

impl Decoder {
    fn spawn(cap: opencv::videoio::VideoCapture) -> Decoder {
        let (frame_tx, frames) = std::sync::mpsc::sync_channel::<Result<(Mat, f64), String>>(4);
        let (back, back_rx) = std::sync::mpsc::channel::<Mat>();
        let thread = std::thread::spawn(move || {
            let mut cap = cap;
            loop {
                let mut m = back_rx.try_recv().unwrap_or_default();
                match cap.read(&mut m) {
                    Ok(true) if !m.empty() => {
                        let ts = cap.get(opencv::videoio::CAP_PROP_POS_MSEC).unwrap_or(0.0);
                        if frame_tx.send(Ok((m, ts))).is_err() {
                            break;
                        }
                    }
                    Ok(_) => break,
                    Err(e) => {
                        let _ = frame_tx.send(Err(e.message));
                        break;
                    }
                }
            }
        });
        Decoder {
            frames,
            back,
            thread,
        }
    }

    /// A frame's buffer handed back for reuse.
    fn recycle(&self, m: Mat) {
        let _ = self.back.send(m);
    }

    /// Stop the decoding thread (it ends at its next send) and wait for it.
    fn finish(self) {
        drop(self.frames);
        let _ = self.thread.join();
    }
}

/// The tracker's state over the frames: each frame's assigned blobs, the lock, the running
/// mean square of each marker's prediction error (px^2 per axis), the blob counts per frame,
/// the counts of frames with extra discs on the lever's line, why the layout found no lock, and
/// the summary so far.
struct Tracker<'a> {
    nm: usize,
    cfg: &'a TrackConfig,
    view: View<'a>,
    per_frame: Vec<Vec<Option<Blob>>>,
    lock: Option<Lock>,
    scale2: Vec<f64>,
    counts: std::collections::BTreeMap<usize, usize>,
    extra_frames: usize,
    searched_frames: usize,
    not_found: std::collections::BTreeMap<(String, String), usize>,
    corrected: std::collections::BTreeMap<(usize, usize), Option<Blob>>,
    summary: TrackSummary,
    window_buf: WindowBuffers,
    grey: Mat,
    /// The fiducials sought, for fiducial markers (found by their codes: no lock, no search).
    fiducials: Option<crate::fiducial::Fiducials>,
    /// The first frame where no fiducial was found, to name the dictionary it shows.
    unfound: Option<Mat>,
    /// The features followed by their templates, for template markers.
    templates: Option<crate::template::Templates>,
}

impl<'a> Tracker<'a> {
    fn new(cfg: &'a TrackConfig, view: View<'a>) -> Tracker<'a> {
        Tracker {
            nm: cfg.markers.len(),
            cfg,
            view,
            per_frame: Vec::new(),
            lock: None,
            scale2: Vec::new(),
            counts: Default::default(),
            extra_frames: 0,
            searched_frames: 0,
            not_found: Default::default(),
            corrected: Default::default(),
            summary: TrackSummary::default(),
            window_buf: WindowBuffers::default(),
            grey: Mat::default(),
            fiducials: None,
            unfound: None,
            templates: None,
        }
    }

    /// A tracker of the markers of `cfg` (of one look): fiducials sought by their codes,
    /// features by their templates.
    fn for_kind(cfg: &'a TrackConfig, view: View<'a>) -> Result<Tracker<'a>, VisionError> {
        let mut t = Tracker::new(cfg, view);
        if cfg.kind == MarkerKind::Template {
            t.templates = Some(crate::template::Templates::new(cfg.templates.clone()));
        }
        if let MarkerKind::Fiducial { dictionary, .. } = cfg.kind {
            t.fiducials = Some(crate::fiducial::Fiducials::new(
                dictionary,
                cfg.codes.clone(),
            )?);
        }
        Ok(t)
    }

    /// A frame of template markers: each feature followed from its click.
    fn template_frame(&mut self, frame: &Mat) -> Result<Option<()>, VisionError> {
        let k = self.per_frame.len();
        let nm = self.nm;
        let Some(t) = &mut self.templates else {
            return Ok(None);
        };
        let found = t.frame(k, frame, nm)?;
        let n = found.iter().filter(|b| b.is_some()).count();
        *self.counts.entry(n).or_default() += 1;
        self.lock_when_all(k, &found);
        self.correct(frame, k, &found)?;
        if self.lock.is_some() {
            self.summary.gaps += nm - n;
        }
        self.per_frame.push(found);
        Ok(Some(()))
    }

    /// The lock (for markers found by their identity: fiducials, templates) in the first frame
    /// where every marker is found.
    fn lock_when_all(&mut self, k: usize, found: &[Option<Blob>]) {
        if self.lock.is_some() || found.iter().any(Option::is_none) {
            return;
        }
        // The gate of a marker sought again (the user's corrections): the markers' spacing.
        let at: Vec<(f64, f64)> = found.iter().flatten().map(|b| (b.u, b.v)).collect();
        let spacing = at
            .iter()
            .enumerate()
            .flat_map(|(i, a)| {
                at[i + 1..]
                    .iter()
                    .map(move |b| (a.0 - b.0).hypot(a.1 - b.1))
            })
            .fold(f64::INFINITY, f64::min);
        self.lock = Some(Lock {
            spacing,
            line: None,
        });
        self.summary.lock_frame = k;
    }

    /// A frame of fiducial markers: each found by its code.
    fn fiducial_frame(&mut self, frame: &Mat) -> Result<Option<()>, VisionError> {
        let Some(f) = &self.fiducials else {
            return Ok(None);
        };
        let k = self.per_frame.len();
        let (found, others) = f.detect(frame)?;
        self.summary.rejected_blobs += others;
        let n = found.iter().filter(|b| b.is_some()).count();
        *self.counts.entry(n).or_default() += 1;
        if n == 0 && self.unfound.is_none() {
            self.unfound = Some(cv("clone", frame.try_clone())?);
        }
        self.lock_when_all(k, &found);
        self.correct(frame, k, &found)?;
        if self.lock.is_some() {
            self.summary.gaps += self.nm - n;
        }
        self.per_frame.push(found);
        Ok(Some(()))
    }

    /// The markers' predictions in the next frame (`assign::predict`); None before the lock.
    fn predictions(&self) -> Option<Vec<Option<Prediction>>> {
        let lock = self.lock.as_ref()?;
        let prev1 = self.per_frame.last()?;
        let k = self.per_frame.len();
        let prev2 = k.checked_sub(2).and_then(|i| self.per_frame.get(i));
        let layout = self.cfg.layout.as_ref();
        Some(predict(lock, layout, self.view, prev1, prev2, &self.scale2))
    }

    /// One frame: once locked, every marker in a small window about its prediction, except
    /// one frame in WINDOW_CHECK_EVERY, which goes through the lever-neighbourhood search so
    /// that extra discs on the lever's line are still counted; else a search for blobs, then
    /// the lock or the assignment to the markers.
    fn frame(&mut self, frame: &Mat) -> Result<(), VisionError> {
        if self.fiducial_frame(frame)?.is_some() || self.template_frame(frame)?.is_some() {
            return Ok(());
        }
        let k = self.per_frame.len();
        let preds = self.predictions();
        let assigned = match self.in_windows(frame, preds.as_deref())? {
            Some(a) => a,
            None => {
                let (blobs, rejected) = self.search(frame)?;
                self.summary.rejected_blobs += rejected;
                *self.counts.entry(blobs.len()).or_default() += 1;
                let a = self.assign(&blobs, preds.as_deref());
                if let (Some(lock), true) = (&self.lock, preds.is_some()) {
                    if let Some(params) = &lock.line {
                        if extra_on_line(&blobs, &a, params) > 0 {
                            self.extra_frames += 1;
                        }
                    }
                    self.searched_frames += 1;
                }
                a
            }
        };
        let mut assigned = assigned;
        if let Some(preds) = &preds {
            self.outline_gaps(frame, preds, &mut assigned)?;
        }
        if matches!(self.cfg.kind, MarkerKind::Colour { .. }) {
            self.summary.luma_refined +=
                crate::luma::refine_on_luma(frame, &mut assigned, &mut self.window_buf.grey)?;
        }
        self.correct(frame, k, &assigned)?;
        if let Some(preds) = &preds {
            self.summary.gaps += assigned.iter().filter(|a| a.is_none()).count();
            self.learn(preds, &assigned);
        }
        self.per_frame.push(assigned);
        Ok(())
    }

    /// The fast path of a locked frame (`follow_in_windows`), except one frame in
    /// [`WINDOW_CHECK_EVERY`]; None when the frame needs a search.
    fn in_windows(
        &mut self,
        frame: &Mat,
        preds: Option<&[Option<Prediction>]>,
    ) -> Result<Option<Vec<Option<Blob>>>, VisionError> {
        let k = self.per_frame.len();
        let (Some(preds), Some(prev1)) = (preds, self.per_frame.last()) else {
            return Ok(None);
        };
        if k.is_multiple_of(WINDOW_CHECK_EVERY) {
            return Ok(None);
        }
        let prev2 = k.checked_sub(2).and_then(|i| self.per_frame.get(i));
        let found = follow_in_windows(frame, prev1, prev2, preds, self.cfg, &mut self.window_buf)?;
        Ok(found.map(|(assigned, rejected)| {
            self.summary.rejected_blobs += rejected;
            *self.counts.entry(self.nm).or_default() += 1;
            self.summary.window_frames += 1;
            assigned
        }))
    }

    /// Frame `k`'s samples as the user's corrections set them (`corrections::apply`; a marker
    /// sought again by the one disc-like blob in its window), kept aside: the tracker follows
    /// its own samples, and the corrected ones replace them once the video is tracked
    /// ([`Tracker::corrected_frames`]), so that an entry means the same whatever the tracker did
    /// in the frames before.
    fn correct(
        &mut self,
        frame: &Mat,
        k: usize,
        assigned: &[Option<Blob>],
    ) -> Result<(), VisionError> {
        let entries = &self.cfg.corrections;
        if !entries.iter().any(|c| c.covers(k)) {
            return Ok(());
        }
        let mut failure = None;
        let mut fixed = assigned.to_vec();
        let touched = crate::corrections::apply(entries, k, &mut fixed, |w| {
            match seek_in(frame, w, self.cfg) {
                Ok(b) => b,
                Err(e) => {
                    failure = Some(e);
                    None
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        for m in touched {
            self.corrected.insert((k, m), fixed[m]);
        }
        Ok(())
    }

    /// The frames' samples with the user's corrections in place; the samples corrected.
    fn corrected_frames(&mut self) -> std::collections::BTreeSet<(usize, usize)> {
        for (&(k, m), b) in &self.corrected {
            self.per_frame[k][m] = *b;
        }
        self.corrected.keys().copied().collect()
    }

    /// The running mean square of the constant-velocity predictions' errors updated by a
    /// frame's assignment (weight 0.1; per axis: half the squared distance).
    fn learn(&mut self, preds: &[Option<Prediction>], assigned: &[Option<Blob>]) {
        let k = self.per_frame.len();
        let Some(prev2) = k.checked_sub(2).and_then(|i| self.per_frame.get(i)) else {
            return;
        };
        let prev1 = &self.per_frame[k - 1];
        for m in 0..self.nm {
            if let (Some(p), Some(b), Some(_), Some(_)) =
                (preds[m], assigned[m], prev1[m], prev2[m])
            {
                let d2 = (b.u - p.u).powi(2) + (b.v - p.v).powi(2);
                self.scale2[m] = 0.9 * self.scale2[m] + 0.1 * 0.5 * d2;
            }
        }
    }

    /// The blobs of a frame (and those rejected by shape). Once locked, only the lever's
    /// neighbourhood is searched: the box of the markers' predicted places widened by the gate
    /// and one marker spacing (the whole frame again when the markers were lost).
    fn search(&mut self, frame: &Mat) -> Result<(Vec<Blob>, usize), VisionError> {
        let cfg = self.cfg;
        let region = match (&self.lock, self.per_frame.last()) {
            (Some(lock), Some(last)) => search_box(
                last,
                self.per_frame
                    .len()
                    .checked_sub(2)
                    .and_then(|i| self.per_frame.get(i)),
                lock.spacing,
                frame.cols(),
                frame.rows(),
            ),
            _ => None,
        };
        let (mut blobs, rejected) = match region {
            Some(rect) => {
                let view = cv("roi", Mat::roi(frame, rect))?;
                let sub = if frame.channels() == 1 {
                    cv("roi", view.try_clone())?
                } else {
                    self.grey_of(&view)?
                };
                find_blobs(&sub, cfg)?
            }
            None => {
                let full = if frame.channels() == 1 {
                    cv("clone", frame.try_clone())?
                } else {
                    self.grey_of(frame)?
                };
                return find_blobs(&full, cfg);
            }
        };
        if let Some(rect) = region {
            for x in &mut blobs {
                x.u += rect.x as f64;
                x.v += rect.y as f64;
            }
        }
        Ok((blobs, rejected))
    }

    /// A colour image (or a view of one) in grey, through the tracker's buffer; coloured
    /// markers keep the colour (`find_blobs` takes their response).
    fn grey_of(
        &mut self,
        src: &(impl opencv::core::ToInputArray + MatTraitConst),
    ) -> Result<Mat, VisionError> {
        if matches!(self.cfg.kind, MarkerKind::Colour { .. }) {
            return cv("clone", src.try_clone());
        }
        cv(
            "cvtColor",
            opencv::imgproc::cvt_color(src, &mut self.grey, opencv::imgproc::COLOR_BGR2GRAY, 0),
        )?;
        Ok(std::mem::take(&mut self.grey))
    }

    /// The searched blobs assigned to the markers: the lock when not yet locked (or nothing),
    /// else by the markers' predictions, a body of the layout lost sought again.
    fn assign(
        &mut self,
        blobs: &[Blob],
        preds: Option<&[Option<Prediction>]>,
    ) -> Vec<Option<Blob>> {
        let nm = self.nm;
        match (&self.lock, preds) {
            (Some(lock), Some(preds)) => {
                let (mut a, mut extra) = follow(blobs, lock, preds);
                if let Some(layout) = &self.cfg.layout {
                    extra -= research(layout, blobs, &mut a, self.view);
                }
                self.summary.rejected_blobs += extra;
                a
            }
            _ => match self.lock_on(blobs) {
                Some((order, lock)) => {
                    self.scale2 = vec![(lock.spacing / 8.0).powi(2); nm];
                    self.lock = Some(lock);
                    self.summary.lock_frame = self.per_frame.len();
                    self.summary.rejected_blobs += blobs.len() - nm;
                    order.into_iter().map(|i| Some(blobs[i])).collect()
                }
                None => vec![None; nm],
            },
        }
    }

    /// The lock in this frame: by the layout when there is one (why not, counted), else in a
    /// line.
    fn lock_on(&mut self, blobs: &[Blob]) -> Option<(Vec<usize>, Lock)> {
        let Some(layout) = &self.cfg.layout else {
            return lock_in_line(blobs, self.nm, self.view);
        };
        match lock_by_layout(blobs, layout, self.nm, self.view) {
            Ok(found) => Some(found),
            Err((body, why)) => {
                let why = match why {
                    NotFound::NoPose => "not found",
                    NotFound::Ambiguous => "ambiguous",
                };
                *self.not_found.entry((body, why.into())).or_default() += 1;
                None
            }
        }
    }

    /// Every tracked sample tested (`flags`), the counts written into `summary`.
    fn flags(&mut self, summary: &mut TrackSummary) -> Flags {
        let cfg = self.cfg;
        let corrected = self.corrected_frames();
        let layout = cfg.layout.as_ref();
        let flags = crate::flags::test_samples(
            &self.per_frame,
            &cfg.markers,
            layout,
            self.view,
            cfg.alpha,
            &corrected,
        );
        summary.flagged = flags.samples().len();
        summary.corrected = corrected.len();
        summary.flags_by_reason = flags.counts().into_iter().filter(|c| c.1 > 0).collect();
        flags
    }

    /// Why fiducial markers were never all found in one frame (None when they were, or the
    /// markers are no fiducials): the dictionary the video's codes are of, when another.
    fn fiducials_missing(&self) -> Result<Option<String>, VisionError> {
        let (Some(_), MarkerKind::Fiducial { dictionary, .. }) = (&self.fiducials, self.cfg.kind)
        else {
            return Ok(None);
        };
        if self.lock.is_some() {
            return Ok(None);
        }
        let name = flexbench_contracts::FIDUCIAL_DICTIONARIES
            .iter()
            .find(|(_, d)| *d == dictionary)
            .map_or("?", |(n, _)| n);
        let ids: Vec<String> = self.cfg.codes.iter().map(u32::to_string).collect();
        let shown = match &self.unfound {
            Some(f) => crate::fiducial::dictionary_in(f)?,
            None => None,
        };
        let hint = match shown {
            Some((other, n)) if other != name => format!(
                "; the video's codes are of dictionary {other} ({n} in the first frame without a marker): give dictionary = \"{other}\" in the mechanism file"
            ),
            _ => "; check each marker's dictionary and id in the mechanism file, and that the squares are sharp and whole in the frames".into(),
        };
        Ok(Some(format!(
            "the fiducials of dictionary {name} with ids {} were never all found in one frame{hint}",
            ids.join(", ")
        )))
    }

    /// An error when the markers were never found, or (a lock in a line) when more
    /// marker-like blobs lie on the lever's line than markers named (the count is wrong: a
    /// lock taken while a marker was hidden would otherwise name the markers wrongly).
    fn check_lock(&self, p: &str) -> Result<(), VisionError> {
        if let (Some(t), None) = (&self.templates, &self.lock) {
            let lost: Vec<String> = self
                .cfg
                .templates
                .iter()
                .zip(&t.lost)
                .map(|(c, n)| format!("{} lost in {n} frame(s)", self.cfg.markers[c.marker]))
                .collect();
            return Err(VisionError::Tracking {
                path: p.into(),
                reason: format!(
                    "the clicked features were never all followed in one frame ({}): click each feature where it is seen, in a frame the video has, with a half-size that holds the feature and a little of what surrounds it",
                    lost.join(", ")
                ),
            });
        }
        if let Some(missing) = self.fiducials_missing()? {
            return Err(VisionError::Tracking {
                path: p.into(),
                reason: missing,
            });
        }
        let nm = self.nm;
        let Some(lock) = &self.lock else {
            let seen: Vec<String> = self
                .counts
                .iter()
                .map(|(n, f)| format!("{n} blob(s) in {f} frame(s)"))
                .collect();
            let reason = if self.cfg.layout.is_some() {
                let why: Vec<String> = self
                    .not_found
                    .iter()
                    .map(|((body, why), f)| format!("the {body}'s markers {why} in {f} frame(s)"))
                    .collect();
                format!(
                    "the markers were never all found where the mechanism places them: {}; {}; check the mechanism's markers (their places on their bodies), the calibration's bench plane, and the threshold",
                    why.join(", "),
                    seen.join(", ")
                )
            } else {
                format!(
                    "the {nm} markers were never found in a line: {}; check the marker count (--markers), the threshold, and that the markers are bright on a darker lever",
                    seen.join(", ")
                )
            };
            return Err(VisionError::Tracking {
                path: p.into(),
                reason,
            });
        };
        let (extra, searched) = (self.extra_frames, self.searched_frames);
        if lock.line.is_some() && extra * 10 > searched {
            return Err(VisionError::Tracking {
                path: p.into(),
                reason: format!(
                    "more bright discs lie on the lever's line than the {nm} markers named, in {extra} of {searched} frames searched; name every marker with --markers (e.g. M1,M2,M3,M4,M5)"
                ),
            });
        }
        Ok(())
    }
}

/// The tracks' rows (each detection undistorted and taken to the bench plane, m) and the
/// detections' centre sigmas (px). Consumed frame by frame: a long recording's detections are
/// not held twice.
fn bench_rows(
    per_frame: Vec<Vec<Option<Blob>>>,
    times: &[f64],
    cal: &Calibration,
    plane: &crate::camera::BenchPlane,
    cfg: &TrackConfig,
) -> (Vec<TrackRow>, Vec<f64>) {
    let mut rows = Vec::with_capacity(per_frame.len() * cfg.markers.len());
    let mut sigmas = Vec::new();
    // The camera's centre, for markers off the plane (checked by `check_depths`).
    let centre = plane.camera_centre();
    let depth = |m: usize| cfg.depths.get(m).copied().unwrap_or(0.0);
    for (k, assigned) in per_frame.into_iter().enumerate() {
        for (m, a) in assigned.into_iter().enumerate() {
            if let Some(b) = a {
                let mut xy = plane.pixel_to_bench(&cal.intrinsics, b.u, b.v);
                if let (d, Some(c)) = (depth(m), centre) {
                    if d != 0.0 {
                        xy = crate::camera::toward_camera(&c, xy, d).unwrap_or(xy);
                    }
                }
                let (x, y) = xy;
                sigmas.push(b.sigma);
                rows.push(TrackRow {
                    frame: k as i64,
                    t: times[k],
                    marker: cfg.markers[m].clone(),
                    u: Some(b.u),
                    v: Some(b.v),
                    x: Some(x),
                    y: Some(y),
                    sigma_px: Some(b.sigma),
                    late: None,
                });
            }
        }
    }
    (rows, sigmas)
}

/// What decoding a video alone gives: frames, the file's frame rate, its time base, and the
/// decoding speed (the reference for the tracker's throughput).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Probe {
    /// Frames decoded.
    pub frames: usize,
    /// Frame size, px.
    pub width: i32,
    /// Frame size, px.
    pub height: i32,
    /// The file's frame rate, Hz.
    pub fps: f64,
    /// The time base found (None when it cannot be: `timing_problem` says why).
    pub timing: Option<TimingRecord>,
    /// Why no time base can be found (a file without timestamps and no rate given).
    pub timing_problem: Option<String>,
    /// Frames decoded per second.
    pub frames_per_second: f64,
}

/// Largest frame side accepted, px (beyond any camera's sensor: 16K video is 15360 px wide).
pub const MAX_FRAME_SIDE: i32 = 16384;
/// Largest frame accepted, px (about 8K video; a 64 Mpx colour frame is 200 MB decoded).
pub const MAX_FRAME_PIXELS: i64 = 64 << 20;

/// Frame `k` (0-based) of the video at `path`, as decoded (BGR).
pub fn frame_of(path: &Path, k: usize) -> Result<Mat, VisionError> {
    let mut cap = open_video(path)?;
    let mut frame = Mat::default();
    for i in 0..=k {
        let read = cv("read", cap.read(&mut frame))?;
        if !read || frame.empty() {
            return Err(VisionError::Video {
                path: path.display().to_string(),
                reason: format!(
                    "has no frame {k} ({i} frames decoded): give a frame the video has"
                ),
            });
        }
    }
    Ok(frame)
}

/// Open a video with OpenCV's FFmpeg backend, refusing what no camera films before a frame is
/// decoded: fuzzing found an 11-byte file that FFmpeg takes for one frame of 60880 x 4107 px,
/// whose decoding took 1.8 GB and 7 s.
pub fn open_video(path: &Path) -> Result<opencv::videoio::VideoCapture, VisionError> {
    let video_err = |reason: String| VisionError::Video {
        path: path.display().to_string(),
        reason,
    };
    if !path.exists() {
        return Err(video_err("no such file; check the path".into()));
    }
    let cap =
        opencv::videoio::VideoCapture::from_file(path.as_os_str(), opencv::videoio::CAP_FFMPEG)
            .map_err(|e| video_err(format!("cannot be opened ({})", e.message)))?;
    if !cv("open", cap.is_opened())? {
        return Err(video_err(
            "cannot be decoded: not a video file OpenCV's FFmpeg backend reads, or damaged".into(),
        ));
    }
    let (w, h) = (
        cv("width", cap.get(opencv::videoio::CAP_PROP_FRAME_WIDTH))?,
        cv("height", cap.get(opencv::videoio::CAP_PROP_FRAME_HEIGHT))?,
    );
    if !(w >= 1.0
        && h >= 1.0
        && w <= MAX_FRAME_SIDE as f64
        && h <= MAX_FRAME_SIDE as f64
        && (w * h) as i64 <= MAX_FRAME_PIXELS)
    {
        return Err(video_err(format!(
            "declares frames of {w} x {h} px, beyond any camera (at most {MAX_FRAME_SIDE} px a side and {} Mpx): the file is damaged or not a video; export the recording again",
            MAX_FRAME_PIXELS >> 20
        )));
    }
    Ok(cap)
}

/// Decode every frame of a video and find its time base (with what the user states, `timing`).
pub fn probe_video(path: &Path, timing: &TimeBaseConfig) -> Result<Probe, VisionError> {
    let p = path.display().to_string();
    let video_err = |reason: String| VisionError::Video {
        path: p.clone(),
        reason,
    };
    let mut cap = open_video(path)?;
    let start = Instant::now();
    let mut frame = Mat::default();
    let mut out = Probe {
        fps: cv("fps", cap.get(opencv::videoio::CAP_PROP_FPS))?,
        ..Default::default()
    };
    let mut stamps = Vec::new();
    while cap
        .read(&mut frame)
        .map_err(|e| video_err(format!("decoding failed ({})", e.message)))?
        && !frame.empty()
    {
        stamps.push(cv("timestamp", cap.get(opencv::videoio::CAP_PROP_POS_MSEC))? / 1000.0);
        if out.frames == 0 {
            let s = cv("size", frame.size())?;
            out.width = s.width;
            out.height = s.height;
        }
        out.frames += 1;
    }
    if out.frames == 0 {
        return Err(video_err(
            "holds no frame that can be decoded (empty or truncated file)".into(),
        ));
    }
    out.frames_per_second = out.frames as f64 / start.elapsed().as_secs_f64().max(1e-9);
    let container = probe_container(path)?;
    match timebase::resolve(
        &p,
        out.frames,
        container.as_ref(),
        (&stamps, out.fps),
        timing,
    ) {
        Ok(tb) => out.timing = Some(tb.record),
        Err(e) => out.timing_problem = Some(e.to_string()),
    }
    Ok(out)
}

/// The search box of a frame after the lock: the markers' predicted places (constant velocity)
/// widened by one marker spacing (px) and 12 px, clipped to the image; None when fewer than two
/// markers were seen in the last frame.
fn search_box(
    last: &[Option<Blob>],
    before: Option<&Vec<Option<Blob>>>,
    spacing: f64,
    cols: i32,
    rows: i32,
) -> Option<opencv::core::Rect> {
    let mut pts = Vec::new();
    for (m, b) in last.iter().enumerate() {
        if let Some(b) = b {
            let (du, dv) = match before.and_then(|p| p[m]) {
                Some(a) => (b.u - a.u, b.v - a.v),
                None => (0.0, 0.0),
            };
            pts.push((b.u + du, b.v + dv));
            pts.push((b.u, b.v));
        }
    }
    if pts.len() < 4 {
        return None;
    }
    let pad = spacing + 12.0;
    let (mut u0, mut v0, mut u1, mut v1) = (
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    );
    for (u, v) in pts {
        u0 = u0.min(u);
        v0 = v0.min(v);
        u1 = u1.max(u);
        v1 = v1.max(v);
    }
    let x0 = ((u0 - pad).floor() as i32).clamp(0, cols - 1);
    let y0 = ((v0 - pad).floor() as i32).clamp(0, rows - 1);
    let x1 = ((u1 + pad).ceil() as i32).clamp(0, cols - 1);
    let y1 = ((v1 + pad).ceil() as i32).clamp(0, rows - 1);
    if x1 - x0 < 8 || y1 - y0 < 8 {
        return None;
    }
    Some(opencv::core::Rect::new(x0, y0, x1 - x0 + 1, y1 - y0 + 1))
}
