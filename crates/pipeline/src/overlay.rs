//! `flexbench overlay` and the run's overlay stage: the recording with the tracked markers, the
//! gaps, the flagged samples and the fitted mechanism drawn on every frame
//! (`flexbench_vision::overlay`), and the contact sheet of the flagged samples' crops.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use flexbench_contracts::motion::Bodies;
use flexbench_mechanism::constraints::{body_point, point_pos};
use flexbench_mechanism::model::{JointKind, Mechanism};
use flexbench_report::review::ReviewSample;
use flexbench_vision::overlay::{write_overlay, OverlayFrame, OverlayMarker};
use flexbench_vision::Calibration;
use nalgebra::DVector;

use crate::PipelineError;

/// The overlay stage's record (`summary.json`). Written and read back by this type.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OverlayRecord {
    /// The overlay video's file name (in the stage's folder).
    pub video: String,
    /// Its codec: h264, or mjpg where OpenCV has no H.264 encoder.
    pub codec: String,
    /// Frames written.
    pub frames: usize,
    /// Flagged samples drawn.
    pub flagged: usize,
    /// The contact sheet of the flagged samples' crops (file name), when there are any.
    pub sheet: Option<String>,
    /// Whether the fitted mechanism is drawn (a process stage's bodies were given).
    pub mechanism_drawn: bool,
    /// The review page of the flagged samples (file name), when there are any.
    #[serde(default)]
    pub review: Option<String>,
}

impl crate::StageRecord for OverlayRecord {
    const STAGE: &'static str = "overlay";
}

/// What the overlay draws from: the video, the calibration, the tracks, and optionally the
/// flags tables (the track stage's, the process stage's residual test) and the fitted motion (the
/// process stage's bodies table) with its mechanism.
pub struct OverlayInputs<'a> {
    /// The recording.
    pub video: &'a Path,
    /// Its calibration (with the bench plane).
    pub calibration: &'a Path,
    /// The tracks table of the video.
    pub tracks: &'a Path,
    /// The flags tables: the track stage's (beside the tracks), the process stage's fit_flags.
    pub flags: &'a [&'a Path],
    /// The process stage's bodies table.
    pub bodies: Option<&'a Path>,
    /// The mechanism.
    pub mechanism: &'a Mechanism,
}

/// Write the overlay of `inputs` into the folder `out` (`overlay.mp4` or `.avi`,
/// `overlay-flagged.png` and `.svg`, the review page `review.html`, `summary.json`), or the
/// frames copied without drawing when `plain` (the benchmark's baseline: decoding plus
/// encoding); the record and the files written.
pub fn overlay(
    inputs: &OverlayInputs,
    plain: bool,
    out: &Path,
    mut events: impl FnMut(crate::StageEvent),
) -> Result<(OverlayRecord, Vec<PathBuf>), PipelineError> {
    let progress = |k: usize, n: usize| events(crate::StageEvent::counted("overlay", k, n));
    let cal = Calibration::read(inputs.calibration)?;
    let drawing = Drawing::read(inputs)?;
    let mut frame = |k: usize| match plain {
        true => OverlayFrame::default(),
        false => drawing.frame(k),
    };
    crate::ensure_dir(out)?;
    let s = write_overlay(
        inputs.video,
        &cal,
        &mut frame,
        &out.join("overlay.mp4"),
        progress,
    )?;
    let video_name = inputs
        .video
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let review = review_page(&s.review, &cal, &mut frame, &video_name, out)?;
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let record = OverlayRecord {
        video: name(&s.video),
        codec: s.codec.clone(),
        frames: s.frames,
        flagged: s.flagged,
        sheet: s.sheet.as_deref().map(name),
        mechanism_drawn: drawing.bodies.is_some(),
        review: review.as_deref().map(name),
    };
    let mut files = vec![s.video.clone()];
    files.extend(review.clone());
    if let Some(sheet) = &s.sheet {
        files.push(sheet.clone());
        files.push(sheet_svg(sheet)?);
    }
    files.push(crate::StageRecord::write(
        &record,
        &out.join(crate::folders::SUMMARY),
    )?);
    Ok((record, files))
}

/// What the overlay draws, looked up by frame: the tracked pixels, the flags' reasons, the fitted
/// motion (the bodies table's sample of each frame).
struct Drawing<'a> {
    mech: &'a Mechanism,
    bodies: Option<Bodies>,
    names: Vec<String>,
    first: i64,
    sample: BTreeMap<i64, usize>,
    seen: BTreeMap<(i64, String), (f64, f64)>,
    reasons: BTreeMap<(i64, String), Vec<String>>,
}

impl<'a> Drawing<'a> {
    /// The tables of `inputs` read and indexed.
    fn read(inputs: &OverlayInputs<'a>) -> Result<Drawing<'a>, PipelineError> {
        let tracks = flexbench_tables::read_tracks(inputs.tracks)?;
        let mut flags = Vec::new();
        for f in inputs.flags {
            flags.extend(flexbench_tables::read_flags(f)?.into_rows());
        }
        let bodies = match inputs.bodies {
            Some(b) => Some(crate::tables::bodies_of(b, inputs.mechanism)?),
            None => None,
        };
        let frames: BTreeSet<i64> = tracks.rows().iter().map(|r| r.frame).collect();
        let mut reasons: BTreeMap<(i64, String), Vec<String>> = BTreeMap::new();
        for f in &flags {
            let key = (f.frame, f.marker.clone());
            reasons.entry(key).or_default().push(f.reason.to_string());
        }
        Ok(Drawing {
            mech: inputs.mechanism,
            bodies,
            names: tracks.marker_names(),
            first: frames.first().copied().unwrap_or(0),
            sample: frames.iter().enumerate().map(|(k, &f)| (f, k)).collect(),
            seen: tracks
                .rows()
                .iter()
                .filter_map(|r| Some(((r.frame, r.marker.clone()), (r.u?, r.v?))))
                .collect(),
            reasons,
        })
    }

    /// What frame `k` (from the tracks' first) shows.
    fn frame(&self, k: usize) -> OverlayFrame {
        let f = self.first + k as i64;
        let q = self
            .bodies
            .as_ref()
            .zip(self.sample.get(&f))
            .and_then(|(b, &s)| configuration(self.mech, b, s));
        drawn(self.mech, q.as_ref(), &self.names, |m| {
            let key = (f, m.to_string());
            let reasons = self.reasons.get(&key).cloned().unwrap_or_default();
            (self.seen.get(&key).copied(), reasons)
        })
    }
}

/// The review page of the flagged samples (`review.html`, `flexbench_report::review`) from
/// their crops, each with its tracked centre and where the fitted mechanism puts it (`frame(k)`
/// draws frame k); None when no sample was flagged.
fn review_page(
    crops: &[flexbench_vision::overlay::FlagCrop],
    cal: &Calibration,
    frame: &mut impl FnMut(usize) -> OverlayFrame,
    video: &str,
    out: &Path,
) -> Result<Option<PathBuf>, PipelineError> {
    if crops.is_empty() {
        return Ok(None);
    }
    let to_pixel = |p: [f64; 2]| cal.plane?.bench_to_pixel(&cal.intrinsics, p[0], p[1]);
    let samples: Vec<ReviewSample> = crops
        .iter()
        .map(|c| {
            let f = frame(c.frame);
            let m = f.markers.iter().find(|m| m.name == c.marker);
            ReviewSample {
                frame: c.frame,
                marker: c.marker.clone(),
                reasons: m.map(|m| m.flags.clone()).unwrap_or_default(),
                crop_png: c.png.clone(),
                origin: c.origin,
                side: c.side,
                tracked: m.and_then(|m| m.tracked),
                predicted: m.and_then(|m| m.fitted).and_then(to_pixel),
            }
        })
        .collect();
    let path = out.join("review.html");
    let html = flexbench_report::review::flags_page(&samples, video);
    flexbench_contracts::atomic::write_bytes(&path, html.as_bytes())
        .map_err(|e| PipelineError::io(&path, "be written", e))?;
    Ok(Some(path))
}

/// The contact sheet (PNG) as an SVG beside it (`<stem>.svg`), for the report's page.
fn sheet_svg(png: &Path) -> Result<PathBuf, PipelineError> {
    let bytes = std::fs::read(png).map_err(|e| PipelineError::io(png, "be read", e))?;
    let img = opencv::imgcodecs::imread(png.as_os_str(), opencv::imgcodecs::IMREAD_COLOR)
        .map_err(|e| PipelineError::io(png, "be read by OpenCV", e))?;
    use opencv::prelude::MatTraitConst;
    let (w, h) = (img.cols().max(1) as u32, img.rows().max(1) as u32);
    let svg = png.with_extension("svg");
    let text = flexbench_report::page::png_svg(&bytes, w, h);
    flexbench_contracts::atomic::write_bytes(&svg, text.as_bytes())
        .map_err(|e| PipelineError::io(&svg, "be written", e))?;
    Ok(svg)
}

/// The configuration q (x, y, phi of every body of the mechanism, in its order) at sample `k` of
/// the bodies table; None where a body was not fitted.
fn configuration(mech: &Mechanism, bodies: &Bodies, k: usize) -> Option<DVector<f64>> {
    let mut q = Vec::with_capacity(3 * mech.bodies.len());
    for b in &mech.bodies {
        let motion = bodies.body(&b.name)?;
        for c in ["x", "y", "phi"] {
            q.push((*motion.column(c)?.get(k)?)?);
        }
    }
    Some(DVector::from_vec(q))
}

/// One frame's drawing: the markers (`at(name)`: tracked pixel and flag reasons) with their
/// fitted places, and the mechanism at q (each body's points other than markers, closed when
/// three or more; the revolute joints).
fn drawn<'a>(
    mech: &Mechanism,
    q: Option<&DVector<f64>>,
    names: &'a [String],
    at: impl Fn(&'a str) -> (Option<(f64, f64)>, Vec<String>),
) -> OverlayFrame {
    let pt = |v: nalgebra::Vector2<f64>| [v.x, v.y];
    let markers = names
        .iter()
        .map(|name| {
            let (tracked, flags) = at(name.as_str());
            let fitted = q
                .zip(mech.markers.iter().find(|m| &m.name == name))
                .map(|(q, mk)| pt(body_point(q, mk.body, mk.local)));
            OverlayMarker {
                name: name.clone(),
                tracked,
                fitted,
                flags,
            }
        })
        .collect();
    let Some(q) = q else {
        return OverlayFrame {
            markers,
            ..Default::default()
        };
    };
    let bodies = mech
        .bodies
        .iter()
        .enumerate()
        .map(|(b, body)| {
            let mut pts: Vec<[f64; 2]> = body
                .points
                .iter()
                .filter(|(n, _)| !mech.markers.iter().any(|m| &m.name == *n))
                .map(|(_, p)| pt(body_point(q, b, p - body.centroid)))
                .collect();
            if pts.len() >= 3 {
                pts.push(pts[0]);
            }
            pts
        })
        .collect();
    let joints = mech
        .joints
        .iter()
        .filter_map(|j| match &j.kind {
            JointKind::Revolute { a, .. } => Some(pt(point_pos(q, a))),
            JointKind::Slide { .. } => None,
        })
        .collect();
    OverlayFrame {
        markers,
        bodies,
        joints,
    }
}
