//! The time base of a video: each frame's capture time, s, from the first frame.
//!
//! Accelerations scale with 1/dt^2, so a frame's time is part of the liaison forces' accuracy.
//! OpenCV 4.6 gives no timestamps for MP4 (its `CAP_PROP_POS_MSEC` stays 0), so the container's
//! presentation timestamps are read with FFmpeg's `ffprobe` (Debian's ffmpeg package), packet by
//! packet without decoding: their sorted presentation times are the frames' times. Then:
//!
//! - timestamps on the grid of the nominal frame rate (within [`GRID_TOLERANCE`] of a period)
//!   are snapped to it, so that the container's rounding adds no jitter, and a missing slot is a
//!   dropped frame: no frame, hence a gap in every marker's track, never an invented sample;
//! - timestamps off the grid (variable frame rate: phones, consumer cameras) are kept as they
//!   are, and the smoother and the inverse dynamics take every step as it is;
//! - a file without timestamps (a raw H.264 stream) needs its frame rate given
//!   ([`TimeBaseConfig::frame_rate`]), or it is refused;
//! - a capture rate that differs from the playback rate (slow motion: 240 frames/s captured,
//!   played back at 30) comes from the container's metadata (`com.android.capture.fps`) or is
//!   given ([`TimeBaseConfig::capture_rate`]); the times are scaled by playback / capture.
//!
//! Without ffprobe on the machine, OpenCV's timestamps are used when they increase, else the
//! frame rate, with a warning.

use std::path::Path;
use std::process::Command;

use crate::VisionError;

/// Largest distance of a timestamp from the nominal frame rate's grid, in periods, under which
/// the video counts as constant-rate and its timestamps are snapped (containers round times to
/// their time base: 1/15360 s for a 240 frames/s MP4 is 1.6 % of a period).
pub const GRID_TOLERANCE: f64 = 0.1;

/// A step longer than this many median steps counts as dropped frames in a variable-rate video
/// (round(step / median) - 1 of them).
pub const DROP_RATIO: f64 = 1.5;

/// Metadata keys of the container giving the capture rate of a slow-motion recording, frames/s.
pub const CAPTURE_RATE_KEYS: [&str; 1] = ["com.android.capture.fps"];

/// What the user states about a video's time base; None: from the file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeBaseConfig {
    /// Playback frame rate, frames/s: the frames are taken as evenly spaced at this rate instead
    /// of the file's timestamps (needed when the file has none).
    pub frame_rate: Option<f64>,
    /// Capture frame rate of a slow-motion recording, frames/s (overrides the metadata's).
    pub capture_rate: Option<f64>,
}

/// What the container says about time, read by ffprobe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerTiming {
    /// Presentation times of the video frames, s, sorted (packets the demuxer discards left
    /// out); empty when the container carries none.
    pub pts: Vec<f64>,
    /// Nominal playback frame rates the header states (`r_frame_rate`, then `avg_frame_rate`),
    /// frames/s: a variable-rate file's `r_frame_rate` may be its time base's (1 MHz).
    pub rates: Vec<f64>,
    /// Capture rate from the metadata ([`CAPTURE_RATE_KEYS`]), frames/s.
    pub capture_rate: Option<f64>,
    /// The stream's time base, s: the resolution of its timestamps (1 ms in Matroska by
    /// default, 1/15360 s in a 240 frames/s MP4).
    pub tick: Option<f64>,
}

/// Where the frames' times come from (a closed set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeSource {
    /// The container's timestamps, on the frame rate's grid (snapped to it).
    #[default]
    FileGrid,
    /// The container's timestamps, off any grid (variable frame rate), kept as they are.
    FileVariable,
    /// The frame rate the user gave: frame k at k / rate.
    GivenRate,
    /// The frame rate in the file's header, the file's timestamps being unusable.
    HeaderRate,
}

/// Where the capture rate comes from (a closed set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureSource {
    /// Taken equal to the playback rate: no slow-motion metadata, none given.
    #[default]
    Playback,
    /// The container's slow-motion metadata.
    Metadata,
    /// Given by the user.
    Given,
}

/// The time base found for a video, written in the track summary and the report.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimingRecord {
    /// Where the frames' times come from.
    pub source: TimeSource,
    /// Nominal playback frame rate, frames/s.
    pub playback_rate_hz: f64,
    /// Capture frame rate, frames/s (the playback rate unless slow motion).
    pub capture_rate_hz: f64,
    /// Where the capture rate comes from.
    pub capture_source: CaptureSource,
    /// Shortest step between frames, s (capture time).
    pub dt_min_s: f64,
    /// Median step between frames, s (capture time).
    pub dt_median_s: f64,
    /// Longest step between frames, s (capture time).
    pub dt_max_s: f64,
    /// Frames dropped by the camera: missing slots of the grid, or steps of more than
    /// [`DROP_RATIO`] median steps in a variable-rate video.
    pub dropped: usize,
    /// What the user should know about the time base (each a sentence).
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl TimingRecord {
    /// The time base in a sentence, for the CLI and the report.
    pub fn sentence(&self) -> String {
        let from = match self.source {
            TimeSource::FileGrid => format!(
                "the file's timestamps, on the {:.3} frames/s grid",
                self.playback_rate_hz
            ),
            TimeSource::FileVariable => "the file's timestamps, at a variable frame rate".into(),
            TimeSource::GivenRate => format!(
                "the frame rate given ({:.3} frames/s)",
                self.playback_rate_hz
            ),
            TimeSource::HeaderRate => format!(
                "the header's frame rate ({:.3} frames/s)",
                self.playback_rate_hz
            ),
        };
        let capture = match self.capture_source {
            CaptureSource::Playback => String::new(),
            CaptureSource::Metadata | CaptureSource::Given => format!(
                "; slow motion: captured at {:.3} frames/s ({}), played back at {:.3}",
                self.capture_rate_hz,
                if self.capture_source == CaptureSource::Metadata {
                    "the file's metadata"
                } else {
                    "as given"
                },
                self.playback_rate_hz
            ),
        };
        format!(
            "times from {from}{capture}; steps {:.3} / {:.3} / {:.3} ms (min / median / max), {} frame{} dropped",
            self.dt_min_s * 1e3,
            self.dt_median_s * 1e3,
            self.dt_max_s * 1e3,
            self.dropped,
            if self.dropped == 1 { "" } else { "s" }
        )
    }
}

/// The frames' capture times, s from the first frame, and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeBase {
    /// Capture time of each decoded frame, s.
    pub times: Vec<f64>,
    /// How they were found.
    pub record: TimingRecord,
}

/// The container's timing read by `ffprobe` (packets only: nothing is decoded); None when
/// ffprobe is not installed.
pub fn probe_container(path: &Path) -> Result<Option<ContainerTiming>, VisionError> {
    let entries =
        "packet=pts_time,flags:stream=r_frame_rate,avg_frame_rate,time_base:stream_tags:format_tags";
    let Some(out) = ffprobe(
        path,
        &["-select_streams", "v:0", "-show_entries", entries],
        "its timestamps",
    )?
    else {
        return Ok(None);
    };
    parse_ffprobe(&out).map(Some).map_err(|e| {
        VisionError::io(
            path,
            "be probed for its timestamps: ffprobe's answer cannot be read",
            e,
        )
    })
}

/// ffprobe's JSON answer (`-of json`) on the file at `path` with the arguments `args`; None when
/// ffprobe is not installed; an error naming `what` was read when it fails.
pub(crate) fn ffprobe(
    path: &Path,
    args: &[&str],
    what: &str,
) -> Result<Option<Vec<u8>>, VisionError> {
    let out = match Command::new("ffprobe")
        .args(["-v", "error"])
        .args(args)
        .args(["-of", "json"])
        .arg(path)
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let doing = format!("be probed for {what}: ffprobe could not be run");
            return Err(VisionError::io(path, doing, e));
        }
    };
    if !out.status.success() {
        return Err(VisionError::Video {
            path: path.display().to_string(),
            reason: format!(
                "ffprobe cannot read {what} ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(Some(out.stdout))
}

/// ffprobe's JSON answer (`-of json`), the fields flexbench reads.
#[derive(serde::Deserialize)]
struct FfprobeAnswer {
    #[serde(default)]
    packets: Vec<FfprobePacket>,
    #[serde(default)]
    streams: Vec<FfprobeStream>,
    #[serde(default)]
    format: Option<FfprobeTagged>,
}

#[derive(serde::Deserialize)]
struct FfprobePacket {
    pts_time: Option<String>,
    #[serde(default)]
    flags: String,
}

#[derive(serde::Deserialize)]
struct FfprobeStream {
    r_frame_rate: Option<String>,
    avg_frame_rate: Option<String>,
    time_base: Option<String>,
    #[serde(default)]
    tags: std::collections::BTreeMap<String, String>,
}

#[derive(serde::Deserialize)]
struct FfprobeTagged {
    #[serde(default)]
    tags: std::collections::BTreeMap<String, String>,
}

/// The container's timing from ffprobe's JSON answer.
fn parse_ffprobe(json: &[u8]) -> Result<ContainerTiming, serde_json::Error> {
    let a: FfprobeAnswer = serde_json::from_slice(json)?;
    let mut pts: Vec<f64> = a
        .packets
        .iter()
        .filter(|p| !p.flags.contains('D'))
        .filter_map(|p| p.pts_time.as_deref()?.parse::<f64>().ok())
        .filter(|t| t.is_finite())
        .collect();
    if pts.len() < a.packets.iter().filter(|p| !p.flags.contains('D')).count() {
        pts.clear(); // Some frames without a time: the file's times are not usable.
    }
    pts.sort_by(|x, y| x.total_cmp(y));
    let stream = a.streams.first();
    let rates = stream
        .into_iter()
        .flat_map(|s| [&s.r_frame_rate, &s.avg_frame_rate])
        .filter_map(|r| parse_ratio(r.as_deref()?))
        .collect();
    let tags = stream
        .map(|s| &s.tags)
        .into_iter()
        .chain(a.format.as_ref().map(|f| &f.tags));
    let capture_rate = tags
        .flat_map(|t| CAPTURE_RATE_KEYS.iter().filter_map(|k| t.get(*k)))
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .find(|r| r.is_finite() && *r > 0.0);
    let tick = stream
        .and_then(|s| s.time_base.as_deref())
        .and_then(parse_ratio);
    Ok(ContainerTiming {
        pts,
        rates,
        capture_rate,
        tick,
    })
}

/// A rate written "num/den" (or a plain number), when positive and finite.
fn parse_ratio(s: &str) -> Option<f64> {
    let r = match s.split_once('/') {
        Some((n, d)) => n.trim().parse::<f64>().ok()? / d.trim().parse::<f64>().ok()?,
        None => s.trim().parse::<f64>().ok()?,
    };
    (r.is_finite() && r > 0.0).then_some(r)
}

/// Refuse, before any frame is decoded, a file whose container carries no timestamps when no
/// frame rate is given (the same words as [`resolve`]'s); and a rate given that is not one.
pub fn check_timestamps(
    path: &str,
    container: Option<&ContainerTiming>,
    cfg: &TimeBaseConfig,
) -> Result<(), VisionError> {
    check_rate("frame_rate", cfg.frame_rate, path)?;
    check_rate("capture_rate", cfg.capture_rate, path)?;
    match (container, cfg.frame_rate) {
        (Some(c), None) if c.pts.is_empty() => Err(no_timestamps(path)),
        _ => Ok(()),
    }
}

/// The error of a file without timestamps and no rate given.
fn no_timestamps(path: &str) -> VisionError {
    VisionError::Video {
        path: path.into(),
        reason: "carries no timestamps and no frame rate can be trusted: give its frame rate ([track] frame_rate in the pipeline file, or --frame-rate), or remux it into MP4 or MKV with its rate (ffmpeg -r RATE -i IN -c copy OUT.mp4)".into(),
    }
}

/// Whether a rate the user gives is usable, frames/s.
fn check_rate(name: &str, r: Option<f64>, path: &str) -> Result<(), VisionError> {
    match r {
        Some(r) if !(r.is_finite() && r > 0.0 && r <= 1e6) => Err(VisionError::Video {
            path: path.into(),
            reason: format!("{name} = {r}: give the rate in frames/s, a positive number"),
        }),
        _ => Ok(()),
    }
}

/// The frames' capture times of a video of `frames` decoded frames, from the container's timing
/// (None: no ffprobe), OpenCV's timestamps (s) and frame rate, and what the user states.
pub fn resolve(
    path: &str,
    frames: usize,
    container: Option<&ContainerTiming>,
    opencv: (&[f64], f64),
    cfg: &TimeBaseConfig,
) -> Result<TimeBase, VisionError> {
    // Long: the time sources in their order of trust (the rate given, the container's stamps,
    // OpenCV's, the header's rate), each with its warning, then the capture rate.
    check_rate("frame_rate", cfg.frame_rate, path)?;
    check_rate("capture_rate", cfg.capture_rate, path)?;
    let (cv_stamps, cv_rate) = opencv;
    let mut warnings = Vec::new();
    let header_rates: Vec<f64> = container
        .map(|c| c.rates.clone())
        .unwrap_or_default()
        .into_iter()
        .chain((cv_rate.is_finite() && cv_rate > 0.0).then_some(cv_rate))
        .collect();
    let stamps: Option<&[f64]> = match container {
        Some(c) if c.pts.len() == frames && increasing(&c.pts) => Some(&c.pts),
        Some(c) if !c.pts.is_empty() => {
            warnings.push(format!(
                "the container's timestamps ({} frames) do not match the {frames} decoded frames",
                c.pts.len()
            ));
            None
        }
        Some(_) => None,
        None => {
            warnings.push("ffprobe (Debian's ffmpeg package) is not installed: the container's timestamps are not read; install ffmpeg".into());
            (cv_stamps.len() == frames && increasing(cv_stamps)).then_some(cv_stamps)
        }
    };
    let (mut times, source, playback, dropped) = match (cfg.frame_rate, stamps) {
        (Some(r), s) => {
            if let (Some(s), true) = (s, frames > 1) {
                let file = (frames - 1) as f64 / (s[frames - 1] - s[0]);
                if (file / r - 1.0).abs() > 0.01 {
                    warnings.push(format!("the frame rate given ({r} frames/s) is not the file's ({file:.3} frames/s, from its timestamps): the given one is used, every frame evenly spaced"));
                }
            }
            let t = (0..frames).map(|k| k as f64 / r).collect();
            (t, TimeSource::GivenRate, r, 0)
        }
        (None, Some(s)) => {
            let tick = container.and_then(|c| c.tick).unwrap_or(0.0);
            let found = from_stamps(s, &header_rates, tick);
            if found.1 == TimeSource::FileVariable && tick > 0.05 / found.2 {
                warnings.push(format!(
                    "the container keeps times to {:.3} ms, {:.0} % of a frame period: the variable frame rate's steps are that coarse; record to MP4, whose times are finer",
                    tick * 1e3,
                    100.0 * tick * found.2
                ));
            }
            found
        }
        (None, None) => match (container, header_rates.first().copied()) {
            // No timestamps at all: the header's rate is a demuxer's guess (25 for raw H.264).
            (Some(c), _) if c.pts.is_empty() => return Err(no_timestamps(path)),
            (_, None) => return Err(no_timestamps(path)),
            // Without ffprobe, or timestamps that do not match the frames (warned above).
            (_, Some(r)) => {
                warnings.push(format!(
                    "the frames are timed from the header's frame rate ({r:.3} frames/s): a dropped frame or a variable rate would go unseen"
                ));
                let t = (0..frames).map(|k| k as f64 / r).collect();
                (t, TimeSource::HeaderRate, r, 0)
            }
        },
    };
    let meta = container.and_then(|c| c.capture_rate);
    let (capture, capture_source) = capture_rate(cfg.capture_rate, meta, playback, &mut warnings);
    let scale = playback / capture;
    if scale != 1.0 {
        times.iter_mut().for_each(|t| *t *= scale);
    }
    let record = record(
        &times,
        source,
        (playback, capture, capture_source),
        dropped,
        warnings,
    );
    Ok(TimeBase { times, record })
}

/// The capture rate (frames/s) and where it comes from: the one `given`, else the container's
/// metadata's `meta`, else the `playback` rate; a warning when the given one and the metadata's
/// differ.
fn capture_rate(
    given: Option<f64>,
    meta: Option<f64>,
    playback: f64,
    warnings: &mut Vec<String>,
) -> (f64, CaptureSource) {
    match (given, meta) {
        (Some(g), Some(m)) if (g / m - 1.0).abs() > 1e-3 => {
            warnings.push(format!("the capture rate given ({g} frames/s) is not the file's metadata's ({m} frames/s): the given one is used"));
            (g, CaptureSource::Given)
        }
        (Some(g), _) => (g, CaptureSource::Given),
        (None, Some(m)) => (m, CaptureSource::Metadata),
        (None, None) => (playback, CaptureSource::Playback),
    }
}

/// Whether the times strictly increase.
fn increasing(t: &[f64]) -> bool {
    t.windows(2).all(|w| w[1] > w[0])
}

/// Times from the file's timestamps: snapped to the grid of the nominal rate (the first header
/// rate within a factor 1.5 of the median step's, else the median step's) when every stamp is
/// within [`GRID_TOLERANCE`] of a period of it, plus half the container's `tick` (its
/// timestamps' resolution, s: Matroska's 1 ms is a quarter of a period at 240 frames/s; missing
/// slots dropped), else kept (variable rate). Returns the times from the first frame, the
/// source, the playback rate and the frames dropped.
fn from_stamps(s: &[f64], header_rates: &[f64], tick: f64) -> (Vec<f64>, TimeSource, f64, usize) {
    let t0 = s[0];
    let rel: Vec<f64> = s.iter().map(|x| x - t0).collect();
    let mut steps: Vec<f64> = rel.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let median = steps.get(steps.len() / 2).copied();
    let rate = match median {
        Some(m) if m > 0.0 => header_rates
            .iter()
            .copied()
            .find(|r| (r * m).max(1.0 / (r * m)) < 1.5)
            .unwrap_or(1.0 / m),
        _ => header_rates.first().copied().unwrap_or(1.0),
    };
    let slots: Vec<f64> = rel.iter().map(|x| (x * rate).round()).collect();
    let on_grid = rel
        .iter()
        .zip(&slots)
        .all(|(x, n)| (x * rate - n).abs() <= GRID_TOLERANCE + 0.5 * tick * rate + 1e-9)
        && increasing(&slots);
    if on_grid {
        let dropped = slots.windows(2).map(|w| (w[1] - w[0] - 1.0) as usize).sum();
        let t = slots.iter().map(|n| n / rate).collect();
        return (t, TimeSource::FileGrid, rate, dropped);
    }
    let m = median.unwrap_or(1.0 / rate);
    let dropped = rel
        .windows(2)
        .map(|w| (w[1] - w[0]) / m)
        .filter(|r| *r > DROP_RATIO)
        .map(|r| (r.round() as usize).saturating_sub(1).max(1))
        .sum();
    (rel, TimeSource::FileVariable, rate, dropped)
}

/// The record of a time base: its steps' statistics and what was found.
fn record(
    times: &[f64],
    source: TimeSource,
    rates: (f64, f64, CaptureSource),
    dropped: usize,
    warnings: Vec<String>,
) -> TimingRecord {
    let mut steps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let at = |i: usize| steps.get(i).copied().unwrap_or(f64::NAN);
    TimingRecord {
        source,
        playback_rate_hz: rates.0,
        capture_rate_hz: rates.1,
        capture_source: rates.2,
        dt_min_s: at(0),
        dt_median_s: at(steps.len() / 2),
        dt_max_s: steps.last().copied().unwrap_or(f64::NAN),
        dropped,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(pts: Vec<f64>, rates: Vec<f64>, capture: Option<f64>) -> ContainerTiming {
        ContainerTiming {
            pts,
            rates,
            capture_rate: capture,
            tick: None,
        }
    }

    /// A constant-rate file's timestamps, rounded to the MP4 time base 1/15360 s, come out on
    /// the exact grid k / 240, and a missing slot is one dropped frame.
    #[test]
    fn grid_snapped_and_drop_counted() {
        let mut pts: Vec<f64> = (0..100)
            .filter(|k| *k != 40)
            .map(|k| (k as f64 / 240.0 * 15360.0).round() / 15360.0)
            .collect();
        pts.iter_mut().for_each(|t| *t += 0.5);
        let c = container(pts, vec![240.0], None);
        let tb = resolve("v", 99, Some(&c), (&[], 240.0), &Default::default()).unwrap();
        assert_eq!(tb.record.source, TimeSource::FileGrid);
        assert_eq!(tb.record.dropped, 1);
        assert_eq!(tb.times[39], 39.0 / 240.0);
        assert_eq!(tb.times[40], 41.0 / 240.0);
        assert!((tb.record.dt_max_s - 2.0 / 240.0).abs() < 1e-15);
        assert!(tb.record.warnings.is_empty());
    }

    /// A Matroska file's 1 ms timestamps at 240 frames/s (up to a quarter period off the grid)
    /// are on the grid, snapped; the same ms-rounded times of a variable-rate file are kept, with
    /// a warning that they are coarse.
    #[test]
    fn matroska_milliseconds_snapped() {
        let pts: Vec<f64> = (0..100)
            .map(|k| (k as f64 / 240.0 * 1000.0).round() / 1000.0)
            .collect();
        let c = ContainerTiming {
            tick: Some(0.001),
            ..container(pts, vec![240.0], None)
        };
        let tb = resolve("v.mkv", 100, Some(&c), (&[], 240.0), &Default::default()).unwrap();
        assert_eq!(tb.record.source, TimeSource::FileGrid);
        assert_eq!(tb.times[7], 7.0 / 240.0);
        let vfr: Vec<f64> = (0..100)
            .map(|k| ((k as f64 + 0.3 * (k as f64 * 2.4).sin()) / 240.0 * 1000.0).round() / 1000.0)
            .collect();
        let c = ContainerTiming {
            tick: Some(0.001),
            ..container(vfr, vec![240.0], None)
        };
        let tb = resolve("v.mkv", 100, Some(&c), (&[], 240.0), &Default::default()).unwrap();
        assert_eq!(tb.record.source, TimeSource::FileVariable);
        assert!(
            tb.record.warnings[0].contains("1.000 ms"),
            "{:?}",
            tb.record.warnings
        );
    }

    /// Variable-rate timestamps are kept to the microsecond; a long step counts its drops.
    #[test]
    fn variable_rate_kept() {
        let mut pts: Vec<f64> = (0..200)
            .map(|k| k as f64 / 240.0 + 0.001 * (k as f64 * 1.7).sin())
            .collect();
        pts.remove(100);
        let c = container(pts.clone(), vec![1e6, 239.8], None);
        let tb = resolve("v", 199, Some(&c), (&[], 0.0), &Default::default()).unwrap();
        assert_eq!(tb.record.source, TimeSource::FileVariable);
        for (a, b) in tb.times.iter().zip(&pts) {
            assert!((a - (b - pts[0])).abs() < 1e-12);
        }
        assert_eq!(tb.record.dropped, 1);
        assert!((tb.record.playback_rate_hz - 239.8).abs() < 1e-9);
    }

    /// Slow motion: 240 frames/s captured, played back at 30; the metadata's rate scales the
    /// times by 1/8, and a given rate overrides it with a warning.
    #[test]
    fn slow_motion_scaled() {
        let pts: Vec<f64> = (0..64).map(|k| k as f64 / 30.0).collect();
        let c = container(pts.clone(), vec![30.0], Some(240.0));
        let tb = resolve("v", 64, Some(&c), (&[], 30.0), &Default::default()).unwrap();
        assert_eq!(tb.record.capture_source, CaptureSource::Metadata);
        assert!((tb.times[8] - 8.0 / 240.0).abs() < 1e-15);
        assert!((tb.record.dt_median_s - 1.0 / 240.0).abs() < 1e-15);
        let given = TimeBaseConfig {
            capture_rate: Some(120.0),
            ..Default::default()
        };
        let tb = resolve("v", 64, Some(&c), (&[], 30.0), &given).unwrap();
        assert_eq!(tb.record.capture_source, CaptureSource::Given);
        assert!((tb.times[4] - 4.0 / 120.0).abs() < 1e-15);
        assert_eq!(tb.record.warnings.len(), 1, "{:?}", tb.record.warnings);
        let plain = container(pts, vec![30.0], None);
        let tb = resolve("v", 64, Some(&plain), (&[], 30.0), &Default::default()).unwrap();
        assert_eq!(tb.record.capture_source, CaptureSource::Playback);
        assert_eq!(tb.record.capture_rate_hz, 30.0);
    }

    /// A file without timestamps needs its rate: refused with the fix named, else timed by it.
    #[test]
    fn no_timestamps_needs_a_rate() {
        let c = container(Vec::new(), vec![25.0], None);
        let e = resolve(
            "raw.h264",
            10,
            Some(&c),
            (&[0.0; 10], 25.0),
            &Default::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("raw.h264") && e.contains("frame_rate"), "{e}");
        // Refused before decoding too.
        let early = check_timestamps("raw.h264", Some(&c), &Default::default()).unwrap_err();
        assert_eq!(early.to_string(), e);
        // Timestamps that do not match the frames: the header's rate, with both warnings.
        let short = container((0..9).map(|k| k as f64 / 25.0).collect(), vec![25.0], None);
        let tb = resolve("v", 10, Some(&short), (&[], 25.0), &Default::default()).unwrap();
        assert_eq!(tb.record.source, TimeSource::HeaderRate);
        assert_eq!(tb.record.warnings.len(), 2, "{:?}", tb.record.warnings);
        let cfg = TimeBaseConfig {
            frame_rate: Some(200.0),
            ..Default::default()
        };
        let tb = resolve("raw.h264", 10, Some(&c), (&[], 25.0), &cfg).unwrap();
        assert_eq!(tb.record.source, TimeSource::GivenRate);
        assert_eq!(tb.times[3], 3.0 / 200.0);
        let bad = TimeBaseConfig {
            frame_rate: Some(-3.0),
            ..Default::default()
        };
        let e = resolve("v", 10, Some(&c), (&[], 25.0), &bad).unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");
    }

    /// Without ffprobe: OpenCV's increasing timestamps, else the header's rate, with a warning.
    #[test]
    fn without_ffprobe() {
        let tb = resolve("v", 5, None, (&[0.0; 5], 240.0), &Default::default()).unwrap();
        assert_eq!(tb.record.source, TimeSource::HeaderRate);
        assert_eq!(tb.record.warnings.len(), 2);
        let cv: Vec<f64> = (0..5).map(|k| k as f64 / 100.0).collect();
        let tb = resolve("v", 5, None, (&cv, 100.0), &Default::default()).unwrap();
        assert_eq!(tb.record.source, TimeSource::FileGrid);
    }

    /// ffprobe's JSON: discarded packets left out, the rate and the capture metadata read.
    #[test]
    fn ffprobe_answer_parsed() {
        let json = br#"{"packets": [{"pts_time": "0.033333", "flags": "__"},
            {"pts_time": "0.000000", "flags": "K_"}, {"pts_time": "-0.033", "flags": "_D"}],
            "streams": [{"r_frame_rate": "30/1", "avg_frame_rate": "0/0", "tags": {"language": "und"}}],
            "format": {"tags": {"com.android.capture.fps": "240.000000"}}}"#;
        let c = parse_ffprobe(json).unwrap();
        assert_eq!(c.pts, vec![0.0, 0.033333]);
        assert_eq!(c.rates, vec![30.0]);
        assert_eq!(c.capture_rate, Some(240.0));
        let none =
            br#"{"packets": [{"pts_time": "N/A"}, {}], "streams": [{"r_frame_rate": "25/1"}]}"#;
        assert!(parse_ffprobe(none).unwrap().pts.is_empty());
    }
}
