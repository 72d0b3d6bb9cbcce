//! `flexbench track`: a video file and a calibration -> the tracks table (CSV or Parquet, by the
//! output's extension) and a summary beside it; or, in a run, a tracks table from another tool
//! imported in its place.

use std::path::{Path, PathBuf};

use flexbench_contracts::MarkerKind;
use flexbench_mechanism::model::{BodyRef, JointKind, Mechanism, PointRef};
use flexbench_tables::interchange::{read_wide, Pixels, WideSpec};
use flexbench_tables::{read_frame, read_tracks};
use flexbench_vision::pattern::{Anchor, BodyPattern, MarkerLayout, Reach};
use flexbench_vision::track::{track_video, TrackConfig, TrackSummary};
use flexbench_vision::Calibration;

use crate::PipelineError;
use crate::StageRecord;

/// The track stage's record (`<stem>.summary.json`): what tracking found, and its inputs.
/// Written and read back by this type.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrackRecord {
    /// What tracking found.
    #[serde(flatten)]
    pub summary: TrackSummary,
    /// The video tracked.
    pub video: String,
    /// The calibration used.
    pub calibration: String,
    /// The user's corrections applied, in words.
    #[serde(default)]
    pub corrections: Vec<String>,
}

impl crate::StageRecord for TrackRecord {
    const STAGE: &'static str = "track";
}

/// The stem of the flags table beside a tracks table of stem `stem` (`tracks` -> `flags`,
/// `run7` -> `run7.flags`).
pub fn flags_stem(stem: &str) -> String {
    match stem {
        "tracks" => "flags".into(),
        other => format!("{other}.flags"),
    }
}

/// Track the markers of `video` with the calibration at `calibration` into `out` (.csv or
/// .parquet; the other format, the flags table (`flags.csv` and `.parquet` beside
/// `tracks.csv`, [`flags_stem`]) and `<stem>.summary.json` are written beside it).
pub fn track(
    video: &Path,
    calibration: &Path,
    cfg: &TrackConfig,
    out: &Path,
    mut events: impl FnMut(crate::StageEvent),
) -> Result<(TrackSummary, Vec<PathBuf>), PipelineError> {
    let progress = |k: usize, n: usize| events(crate::StageEvent::counted("tracking", k, n));
    let vision = PipelineError::Vision;
    let cal = Calibration::read(calibration).map_err(vision)?;
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if ext != "csv" && ext != "parquet" {
        return Err(PipelineError::Input(format!(
            "{}: the tracks table must end in .csv or .parquet",
            out.display()
        )));
    }
    let tracked = track_video(video, &cal, cfg, progress).map_err(vision)?;
    let summary = tracked.summary;
    let table = flexbench_contracts::Tracks::new(tracked.rows)?.into_table()?;
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::ensure_dir(dir)?;
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tracks".into());
    let mut files: Vec<PathBuf> = flexbench_tables::write_table(&table, dir, &stem)?.to_vec();
    files.extend(flexbench_tables::write_table(
        &tracked.flags.to_table()?,
        dir,
        &flags_stem(&stem),
    )?);
    let record = TrackRecord {
        summary: summary.clone(),
        video: video.display().to_string(),
        calibration: calibration.display().to_string(),
        corrections: cfg
            .corrections
            .iter()
            .map(|c| c.describe(&cfg.markers))
            .collect(),
    };
    files.push(record.write(&dir.join(format!("{stem}.summary.json")))?);
    Ok((summary, files))
}

/// The track stage of a run on a tracks table: flexbench's long format (a `marker` column) is
/// taken as it is (x, y in m); a wide table is read with the unit, frame rate and names of
/// the pipeline file's `[inputs]` (`tracks_unit`, `tracks_fps`, `tracks_markers`). Writes `out`
/// (.parquet) and the CSV beside it.
pub fn import_tracks(
    path: &Path,
    unit: Option<&str>,
    fps: Option<f64>,
    markers: Option<&[String]>,
    calibration: Option<&Path>,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let tracks = load_tracks(path, unit, fps, markers, calibration)?;
    let dir = out.parent().unwrap_or(Path::new("."));
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tracks".into());
    Ok(flexbench_tables::write_table(&tracks.to_table()?, dir, &stem)?.to_vec())
}

/// A tracks table from any tool, checked: flexbench's long format (a `marker` column, x and y
/// in bench metres) as it is, or a wide table (`<marker>_x`, `<marker>_y`) in `unit` (m, mm,
/// cm, in, or px through the `calibration`'s bench plane) at `fps` when it has no time column,
/// its markers renamed `markers` in column order.
pub fn load_tracks(
    path: &Path,
    unit: Option<&str>,
    fps: Option<f64>,
    markers: Option<&[String]>,
    calibration: Option<&Path>,
) -> Result<flexbench_contracts::Tracks, PipelineError> {
    let df = read_frame(path)?;
    let long = df.get_column_names().iter().any(|c| c.as_str() == "marker");
    let tracks = if long {
        if unit.is_some_and(|u| u != "m") {
            return Err(PipelineError::Input(format!("{}: a long tracks table (with a marker column) is in bench metres; remove [inputs] tracks_unit", path.display())));
        }
        read_tracks(path)?
    } else {
        let unit = unit.ok_or_else(|| PipelineError::Input(format!("{}: a wide tracks table needs its unit: give [inputs] tracks_unit (m, mm, cm, in or px)", path.display())))?;
        let spec = WideSpec {
            unit: unit.parse()?,
            fps,
            markers: markers.map(<[String]>::to_vec),
        };
        let cal = match calibration {
            Some(c) => Some(Calibration::read(c)?),
            None => None,
        };
        let map = cal.as_ref().and_then(|c| {
            let (intr, plane) = (c.intrinsics, c.plane?);
            Some(move |u: f64, v: f64| plane.pixel_to_bench(&intr, u, v))
        });
        let pixels = match (&cal, &map) {
            (None, _) => Pixels::Uncalibrated,
            (Some(_), None) => Pixels::NoPlane,
            (Some(_), Some(map)) => Pixels::Plane(map),
        };
        read_wide(path, &spec, pixels)?
    };
    Ok(tracks)
}

/// The tracker's layout of the markers `names` (in this order) from the mechanism: each body's
/// markers as a rigid pattern (places relative to the body's centroid, m), with the joint
/// points the assembly places: a pin to the ground, the pin of a body that turns about a
/// ground pin (on its circle), a slide's point (on its line). An error names a marker the
/// mechanism does not have.
pub fn layout_of(mech: &Mechanism, names: &[String]) -> Result<MarkerLayout, PipelineError> {
    let mut bodies: Vec<BodyPattern> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let mk = mech.markers.iter().find(|m| &m.name == name).ok_or_else(|| {
            PipelineError::Input(format!(
                "[track] markers: '{name}' is not a marker of the mechanism '{}' ({}); name its markers or leave the key out",
                mech.name,
                mech.markers.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })?;
        let at = [mk.local.x, mk.local.y];
        match bodies
            .iter_mut()
            .find(|b| b.body == mech.bodies[mk.body].name)
        {
            Some(b) => b.markers.push((k, at)),
            None => bodies.push(BodyPattern {
                body: mech.bodies[mk.body].name.clone(),
                markers: vec![(k, at)],
                anchors: anchors_of(mech, mk.body),
            }),
        }
    }
    Ok(MarkerLayout { bodies })
}

/// Check the blob areas a tracker keeps (px): finite, the smallest above 0 and below the
/// largest. `min_key` and `max_key` name them as the user gave them.
pub fn check_areas(min: f64, max: f64, min_key: &str, max_key: &str) -> Result<(), PipelineError> {
    if min.is_finite() && max.is_finite() && min > 0.0 && min < max {
        return Ok(());
    }
    Err(PipelineError::Input(format!(
        "{min_key} = {min}, {max_key} = {max}: give the marker blobs' smallest and largest area in px, 0 < smallest < largest (defaults 6 and 5000; a disc d px across has an area of 0.785 d^2)"
    )))
}

/// A rolling shutter's readout (s) checked: finite and not negative (None: 0, a global
/// shutter), and not given beside `estimate` (the readout estimated from the motion); `keys`
/// name both as the user gave them. Whether it is shorter than a frame is checked when the
/// video's time base is known.
pub fn check_readout(
    readout: Option<f64>,
    estimate: bool,
    keys: [&str; 2],
) -> Result<f64, PipelineError> {
    let [key, estimate_key] = keys;
    match readout {
        Some(r) if estimate => Err(PipelineError::Input(format!(
            "{key} = {r} and {estimate_key}: give the camera's readout or ask for it to be estimated from the motion, not both"
        ))),
        None => Ok(0.0),
        Some(r) if r.is_finite() && r >= 0.0 => Ok(r),
        Some(r) => Err(PipelineError::Input(format!(
            "{key} = {r}: give a rolling shutter's readout in seconds, 0 or more (the camera's data sheet; a phone's is a few milliseconds)"
        ))),
    }
}

/// The fiducial markers' identities in their dictionary, in the order of `names` (0 for a
/// marker of another kind; empty when no marker is a fiducial).
pub fn codes_of(mech: &Mechanism, names: &[String]) -> Vec<u32> {
    let codes: Vec<Option<u32>> = names
        .iter()
        .map(|n| {
            mech.markers
                .iter()
                .find(|m| m.name == *n)
                .and_then(|m| match m.kind {
                    MarkerKind::Fiducial { id, .. } => Some(id),
                    _ => None,
                })
        })
        .collect();
    if codes.iter().all(Option::is_none) {
        return Vec::new();
    }
    codes.into_iter().map(|c| c.unwrap_or(0)).collect()
}

/// The markers' depths in front of the bench plane (the mechanism's `depth` of each, m), in
/// the order of `names` (a name the mechanism lacks: 0, refused by `layout_of`).
pub fn depths_of(mech: &Mechanism, names: &[String]) -> Vec<f64> {
    names
        .iter()
        .map(|n| {
            mech.markers
                .iter()
                .find(|m| &m.name == n)
                .map_or(0.0, |m| m.depth)
        })
        .collect()
}

/// How the markers `names` look (the mechanism's `kind` of each, in the order of `names`): the
/// first marker's kind, and each marker's when they differ (else empty). Markers of several
/// looks are followed by one tracker per look on the same frames (`flexbench_vision::kinds`).
pub fn kind_of(mech: &Mechanism, names: &[String]) -> (MarkerKind, Vec<MarkerKind>) {
    let kinds: Vec<MarkerKind> = names
        .iter()
        .map(|n| {
            mech.markers
                .iter()
                .find(|m| &m.name == n)
                .map_or(MarkerKind::Bright, |m| m.kind)
        })
        .collect();
    let first = kinds.first().copied().unwrap_or(MarkerKind::Bright);
    if kinds.iter().all(|k| k.same_look(first)) {
        (first, Vec::new())
    } else {
        (first, kinds)
    }
}

/// The joint points of body `b` that the assembly places, relative to its centroid (m).
fn anchors_of(mech: &Mechanism, b: usize) -> Vec<Anchor> {
    let mut out = Vec::new();
    for j in &mech.joints {
        match &j.kind {
            JointKind::Revolute { a, b: bb } => {
                let (mine, other) = if a.body == BodyRef::Body(b) {
                    (a, bb)
                } else if bb.body == BodyRef::Body(b) {
                    (bb, a)
                } else {
                    continue;
                };
                if let Some(reach) = reach_of(mech, other) {
                    out.push(Anchor {
                        local: [mine.local.x, mine.local.y],
                        reach,
                    });
                }
            }
            JointKind::Slide {
                body,
                point,
                origin,
                angle,
                ..
            } if *body == b => out.push(Anchor {
                local: [point.x, point.y],
                reach: Reach::Line {
                    origin: [origin.x, origin.y],
                    angle: *angle,
                },
            }),
            JointKind::Slide { .. } => {}
        }
    }
    out
}

/// Where the point `other` (of the ground, or of a body pinned to the ground) is: the ground
/// point itself, or the circle the pinned body's point turns on; None otherwise.
fn reach_of(mech: &Mechanism, other: &PointRef) -> Option<Reach> {
    let c = match other.body {
        BodyRef::Ground => return Some(Reach::Point([other.local.x, other.local.y])),
        BodyRef::Body(c) => c,
    };
    mech.joints.iter().find_map(|j| match &j.kind {
        JointKind::Revolute { a, b } => {
            let (ground, pin) = match (a.body, b.body) {
                (BodyRef::Ground, x) if x == BodyRef::Body(c) => (a, b),
                (x, BodyRef::Ground) if x == BodyRef::Body(c) => (b, a),
                _ => return None,
            };
            Some(Reach::Circle {
                centre: [ground.local.x, ground.local.y],
                radius: (other.local - pin.local).norm(),
            })
        }
        JointKind::Slide { .. } => None,
    })
}

/// A marker's frames in the corrections file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkerFrames {
    marker: String,
    frames: [usize; 2],
}

/// A move in the corrections file: the marker at the pixel `to` in its frames.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MoveEntry {
    marker: String,
    frames: [usize; 2],
    to: [f64; 2],
}

/// A swap in the corrections file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SwapEntry {
    markers: [String; 2],
    frames: [usize; 2],
}

/// A seek in the corrections file: the marker sought again in `window` (u0, v0, u1, v1, px).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SeekEntry {
    marker: String,
    frames: [usize; 2],
    window: [f64; 4],
}

/// The TOML file at `path` read as a `T`; `what` names it in errors.
fn read_toml<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T, PipelineError> {
    let text = std::fs::read_to_string(path).map_err(|e| PipelineError::io(path, "be read", e))?;
    toml::from_str(&text).map_err(|source| PipelineError::Toml {
        what: format!("{what} {}", path.display()),
        source,
    })
}

/// `templates.toml`: `[[template]]` tables, one per feature clicked.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplatesFile {
    #[serde(default)]
    template: Vec<TemplateEntry>,
}

/// A feature clicked once: its marker, the frame and pixel, the template's half-size (px).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateEntry {
    marker: String,
    #[serde(default)]
    frame: usize,
    pixel: [f64; 2],
    half_size: Option<i32>,
}

/// Read a templates file for the tracked markers `names`; where the clicks lie in the frame is
/// checked by the tracker, which knows the frame's size. An error names the file, the entry and
/// the fix.
pub fn read_templates(
    path: &Path,
    names: &[String],
) -> Result<Vec<flexbench_vision::template::TemplateClick>, PipelineError> {
    let file: TemplatesFile = read_toml(path, "templates file")?;
    if file.template.is_empty() {
        return Err(PipelineError::Input(format!(
            "templates file {}: no [[template]] table; give one per feature: marker, frame, pixel = [u, v] (px), half_size (px, default {})",
            path.display(),
            flexbench_vision::template::HALF_SIZE
        )));
    }
    file.template
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let marker = names.iter().position(|n| *n == t.marker).ok_or_else(|| {
                PipelineError::Input(format!(
                    "templates file {}: [[template]] {} names the marker '{}', which is not tracked ({}); use one of those names",
                    path.display(),
                    i + 1,
                    t.marker,
                    names.join(", ")
                ))
            })?;
            Ok(flexbench_vision::template::TemplateClick {
                marker,
                frame: t.frame,
                pixel: (t.pixel[0], t.pixel[1]),
                half_size: t.half_size.unwrap_or(flexbench_vision::template::HALF_SIZE),
            })
        })
        .collect()
}

/// `corrections.toml`: arrays of tables `[[drop]]`, `[[move]]`, `[[swap]]`, `[[seek]]`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CorrectionsFile {
    #[serde(default)]
    drop: Vec<MarkerFrames>,
    #[serde(default, rename = "move")]
    moves: Vec<MoveEntry>,
    #[serde(default)]
    swap: Vec<SwapEntry>,
    #[serde(default)]
    seek: Vec<SeekEntry>,
}

/// Read a corrections file for the tracked markers `names`: every entry with its label
/// (`[[move]] 2`), markers named by index. An error names the file, the entry and the fix.
pub fn read_corrections(
    path: &Path,
    names: &[String],
) -> Result<Vec<flexbench_vision::corrections::Correction>, PipelineError> {
    use flexbench_vision::corrections::{Correction, Fix};
    let file: CorrectionsFile = read_toml(path, "corrections file")?;
    let index = |label: &str, name: &str| {
        names.iter().position(|n| n == name).ok_or_else(|| {
            PipelineError::Input(format!(
                "corrections file {}: {label} names the marker '{name}', which is not tracked ({}); use one of those names",
                path.display(),
                names.join(", ")
            ))
        })
    };
    let mut out = Vec::new();
    let mut push = |label: String, marker: &str, frames, fix| -> Result<(), PipelineError> {
        let marker = index(&label, marker)?;
        out.push(Correction {
            label,
            marker,
            frames,
            fix,
        });
        Ok(())
    };
    for (i, d) in file.drop.iter().enumerate() {
        push(
            format!("[[drop]] {}", i + 1),
            &d.marker,
            d.frames,
            Fix::Drop,
        )?;
    }
    for (i, m) in file.moves.iter().enumerate() {
        let fix = Fix::Move {
            u: m.to[0],
            v: m.to[1],
        };
        push(format!("[[move]] {}", i + 1), &m.marker, m.frames, fix)?;
    }
    for (i, s) in file.swap.iter().enumerate() {
        let label = format!("[[swap]] {}", i + 1);
        let other = index(&label, &s.markers[1])?;
        push(label, &s.markers[0], s.frames, Fix::Swap { other })?;
    }
    for (i, s) in file.seek.iter().enumerate() {
        let fix = Fix::Seek { window: s.window };
        push(format!("[[seek]] {}", i + 1), &s.marker, s.frames, fix)?;
    }
    Ok(out)
}
