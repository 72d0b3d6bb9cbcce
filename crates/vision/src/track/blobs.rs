//! The marker blobs: found by a threshold, measured (sub-pixel centre with its sigma, area,
//! elongation) and followed in windows about their predictions.

use super::*;

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
pub(super) fn disc_like(area: f64, bw: i32, bh: i32, cfg: &TrackConfig) -> bool {
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
pub(super) fn measure_blob(
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
pub(super) fn symmetric_centre(
    data: &[u8],
    w: usize,
    h: usize,
    start: (f64, f64),
    r: f64,
) -> (f64, f64) {
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
pub(super) fn threshold_of(data: &[u8], cfg: &TrackConfig) -> f64 {
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
pub(super) struct WindowBuffers {
    pub(super) grey: Vec<u8>,
    pub(super) seen: Vec<bool>,
    pub(super) stack: Vec<usize>,
}

/// One frame followed in the markers' windows: each marker's blob (None where not found) and
/// the number of blobs rejected.
pub(super) type WindowFollow = (Vec<Option<Blob>>, usize);

/// The fast path of a locked frame: each marker sought in a small window about its prediction
/// (constant velocity in the image), straight on the decoded pixels. None when a marker was not
/// seen in the last frame, or a window does not hold exactly one disc-like blob wholly inside it,
/// or its blob is not plausible under the motion model (`preds`, [`ACCEPT_CHI2`]): the frame
/// then goes through the lever-neighbourhood search. The buffers are reused from frame to frame.
pub(super) fn follow_in_windows(
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
pub(super) type BlobBox = (i32, i32, i32, i32, f64);

/// The one disc-like blob (box x, y, width, height in px, and area) of the window of `w` x `h`
/// grey pixels in `bufs`, and the blobs rejected by shape. None when there is none, more than
/// one, or one not wholly inside the window with the 3 px of the centroid's box (unless the
/// window ends at the frame's edge there: `edges` left, right, top, bottom, as the
/// whole-frame search clips there too). Connected components with 8-connectivity.
pub(super) fn single_disc(
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
pub(super) fn seek_in(
    frame: &Mat,
    w: [f64; 4],
    cfg: &TrackConfig,
) -> Result<Option<Blob>, VisionError> {
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
pub(super) fn merged<'a>(
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

/// The search box of a frame after the lock: the markers' predicted places (constant velocity)
/// widened by one marker spacing (px) and 12 px, clipped to the image; None when fewer than two
/// markers were seen in the last frame.
pub(super) fn search_box(
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
