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

mod gaps;
pub use gaps::{COAST_FRAMES, PARTNER_LOOKBACK};
mod blobs;
pub use blobs::*;
mod video;
pub use video::*;
mod tracker;
use tracker::*;

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
    // Long: the tracking's steps in their order (checks, decoding, the tracker frame by frame, the
    // gaps, the shutter, the flags, the summary), each a call.
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
        let (decoded, ts) = item.map_err(|source| VisionError::OpenCv {
            context: format!("video {p}: decoding frame {}", stamps.len()),
            source,
        })?;
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
