//! The overlay video: the recording with what flexbench made of it drawn on every frame, to see
//! the tracker's work at a glance: each marker's tracked centre and name (green), a marker not
//! found in a frame as a gap (an open yellow circle where the fitted mechanism puts it), the
//! flagged samples (a red ring and the first letters of their reasons), and the fitted
//! mechanism (each body's points joined, the joints as small rings, cyan) drawn back into the
//! image through the calibration. Written with H.264 in MP4 (what OpenCV and browsers play), or
//! Motion JPEG in AVI where OpenCV's FFmpeg has no H.264 encoder. The flagged samples' crops
//! (64 x 64 px about the marker, up to [`SHEET_MAX`]) are gathered into a contact sheet.

use std::path::{Path, PathBuf};

use nalgebra::Vector2;
use opencv::core::{Mat, Point, Rect, Scalar, Size};
use opencv::prelude::*;

use crate::assign::View;
use crate::camera::Calibration;
use crate::labels::Labels;
use crate::render::{Codec, VideoOut};
use crate::track::open_video;
use crate::{cv, VisionError};

/// Most crops on the contact sheet of flagged samples.
pub const SHEET_MAX: usize = 48;
/// Most flagged samples kept for the review page.
pub const REVIEW_MAX: usize = 200;
/// Side of a review crop, px.
pub const REVIEW_SIDE: i32 = 48;

/// The recording's pixels about a flagged sample, for the review page.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagCrop {
    /// Frame number.
    pub frame: usize,
    /// The marker's name.
    pub marker: String,
    /// The crop's top-left pixel (u, v) in the frame.
    pub origin: (i32, i32),
    /// Its side, px.
    pub side: i32,
    /// The crop as PNG.
    pub png: Vec<u8>,
}
/// Side of a crop on the contact sheet, px (the recording's pixels, drawn twice as large).
const CROP: i32 = 64;

/// A marker in one frame of the overlay.
#[derive(Debug, Clone, PartialEq)]
pub struct OverlayMarker {
    /// The marker's name.
    pub name: String,
    /// Its tracked centre, px (None: a gap in this frame).
    pub tracked: Option<(f64, f64)>,
    /// Where the fitted mechanism puts it, bench m (None without a fit).
    pub fitted: Option<[f64; 2]>,
    /// The reasons it was flagged in this frame (names, empty when it was not).
    pub flags: Vec<String>,
}

/// What is drawn on one frame.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OverlayFrame {
    /// The markers.
    pub markers: Vec<OverlayMarker>,
    /// The fitted mechanism: each body's points in order, bench m.
    pub bodies: Vec<Vec<[f64; 2]>>,
    /// The joints' places, bench m.
    pub joints: Vec<[f64; 2]>,
}

/// What the overlay wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct OverlaySummary {
    /// The video written.
    pub video: PathBuf,
    /// Its codec's name ("h264" or "mjpg").
    pub codec: String,
    /// Frames written.
    pub frames: usize,
    /// Flagged samples in the recording.
    pub flagged: usize,
    /// The contact sheet of the flagged samples' crops (PNG), when there are any.
    pub sheet: Option<PathBuf>,
    /// The first [`REVIEW_MAX`] flagged samples' pixels, as decoded.
    pub review: Vec<FlagCrop>,
}

const GREEN: (f64, f64, f64) = (60.0, 220.0, 60.0);
const RED: (f64, f64, f64) = (40.0, 40.0, 240.0);
const YELLOW: (f64, f64, f64) = (0.0, 220.0, 240.0);
const CYAN: (f64, f64, f64) = (230.0, 200.0, 40.0);

fn colour(c: (f64, f64, f64)) -> Scalar {
    Scalar::new(c.0, c.1, c.2, 0.0)
}

/// A pixel to OpenCV's fixed point with 4 fractional bits (sub-pixel drawing).
fn fixed(u: f64, v: f64) -> Point {
    Point::new((u * 16.0).round() as i32, (v * 16.0).round() as i32)
}

/// Write the overlay of `video` into `out` (its extension set by the codec used: `.mp4` for
/// H.264, `.avi` for Motion JPEG), frame k drawn from `frame(k)`; the contact sheet of the
/// flagged samples beside it (`<stem>-flagged.png`). Written to temporary files, then renamed.
pub fn write_overlay(
    video: &Path,
    cal: &Calibration,
    mut frame: impl FnMut(usize) -> OverlayFrame,
    out: &Path,
    mut progress: impl FnMut(usize, usize),
) -> Result<OverlaySummary, VisionError> {
    // Long: the overlay's steps in their order (the encoder, each frame drawn and written, the
    // contact sheet, the renames), over the writer they share.
    let plane = cal.plane.ok_or_else(|| VisionError::CalibrationFile {
        path: "(calibration)".into(),
        reason: "it has no bench plane: the overlay draws the mechanism in bench metres".into(),
    })?;
    let view = View { cal, plane: &plane };
    let mut cap = open_video(video)?;
    let fps = cv("fps", cap.get(opencv::videoio::CAP_PROP_FPS))?;
    let total = cv("frames", cap.get(opencv::videoio::CAP_PROP_FRAME_COUNT))?.max(0.0) as usize;
    let (w, h) = (cal.intrinsics.width, cal.intrinsics.height);
    let (mut writer, codec, path) = open_writer(out, if fps > 0.0 { fps } else { 30.0 }, w, h)?;
    let tmp = flexbench_contracts::atomic::temporary_path(&path);
    let mut img = Mat::default();
    let (mut k, mut crops, mut review) = (0usize, Vec::new(), Vec::new());
    let mut flagged = 0;
    let mut labels = Labels::default();
    let result = (|| -> Result<(), VisionError> {
        while cap
            .read(&mut img)
            .map_err(|e| video_err(video, e.message))?
            && !img.empty()
        {
            if cv("size", img.size())? != Size::new(w, h) {
                return Err(video_err(
                    video,
                    format!("its frames are not {w} x {h} px, the calibration's size"),
                ));
            }
            let f = frame(k);
            for m in f.markers.iter().filter(|m| !m.flags.is_empty()) {
                flagged += 1;
                if crops.len() < SHEET_MAX {
                    if let Some(c) = crop(&img, m, k)? {
                        crops.push(c);
                    }
                }
                if review.len() < REVIEW_MAX {
                    review.extend(raw_crop(&img, m, k)?);
                }
            }
            // An empty frame is copied as decoded (the benchmark's decode-and-encode baseline).
            if f != OverlayFrame::default() {
                draw(&mut img, &f, view, k, &mut labels)?;
            }
            writer.write_bgr(&img)?;
            k += 1;
            if k.is_multiple_of(32) {
                progress(k, total);
            }
        }
        Ok(())
    })();
    // The frames' error first: it carries what a failed writer said (finishing that writer
    // again only finds it stopped).
    let finished = writer.finish();
    if let Err(e) = result.and(finished) {
        let _ = std::fs::remove_file(&tmp);
        // Named by the file it was to be, not by its temporary name.
        return Err(match e {
            VisionError::Video { reason, .. } => video_err(&path, reason),
            e => e,
        });
    }
    std::fs::rename(&tmp, &path).map_err(|e| io_err(&path, e))?;
    let sheet = contact_sheet(&crops, out)?;
    progress(k, k);
    Ok(OverlaySummary {
        video: path,
        codec: codec.into(),
        frames: k,
        flagged,
        sheet,
        review,
    })
}

/// The recording's pixels about a flagged marker ([`REVIEW_SIDE`] px, as decoded), about its
/// tracked centre or where the fitted mechanism puts it; None when it has neither.
fn raw_crop(img: &Mat, m: &OverlayMarker, k: usize) -> Result<Option<FlagCrop>, VisionError> {
    let Some((u, v)) = m.tracked else {
        return Ok(None);
    };
    let side = REVIEW_SIDE;
    if img.cols() < side || img.rows() < side {
        return Ok(None);
    }
    let x = ((u.round() as i32) - side / 2).clamp(0, img.cols() - side);
    let y = ((v.round() as i32) - side / 2).clamp(0, img.rows() - side);
    let roi = cv("crop", Mat::roi(img, Rect::new(x, y, side, side)))?;
    let mut buf = opencv::core::Vector::<u8>::new();
    cv(
        "png",
        opencv::imgcodecs::imencode(".png", &roi, &mut buf, &opencv::core::Vector::new()),
    )?;
    Ok(Some(FlagCrop {
        frame: k,
        marker: m.name.clone(),
        origin: (x, y),
        side,
        png: buf.to_vec(),
    }))
}

fn video_err(video: &Path, reason: String) -> VisionError {
    VisionError::Video {
        path: video.display().to_string(),
        reason,
    }
}

fn io_err(path: &Path, e: std::io::Error) -> VisionError {
    VisionError::io(path, "be written", e)
}

/// The writer of the overlay: H.264 in MP4 by ffmpeg (x264's faster preset), else by OpenCV's
/// writer, else Motion JPEG in AVI, writing into the temporary file of the final path
/// (`atomic::temporary_path`); the writer, the codec's name and the final path.
fn open_writer(
    out: &Path,
    fps: f64,
    w: i32,
    h: i32,
) -> Result<(VideoOut, &'static str, PathBuf), VisionError> {
    let path = out.with_extension(Codec::H264.extension());
    let tmp = flexbench_contracts::atomic::temporary_path(&path);
    if let Ok(wr) = VideoOut::ffmpeg_h264(&tmp, fps, w, h) {
        return Ok((wr, "h264", path));
    }
    let mut last = None;
    for (codec, name) in [(Codec::H264, "h264"), (Codec::Mjpg, "mjpg")] {
        let path = out.with_extension(codec.extension());
        let tmp = flexbench_contracts::atomic::temporary_path(&path);
        match VideoOut::create(&tmp, codec, fps, w, h) {
            Ok(wr) => return Ok((wr, name, path)),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| video_err(out, "no video writer".into())))
}

/// Draw frame `k`'s overlay on `img` (BGR), the markers' labels from `labels`.
fn draw(
    img: &mut Mat,
    f: &OverlayFrame,
    view: View,
    k: usize,
    labels: &mut Labels,
) -> Result<(), VisionError> {
    let aa = opencv::imgproc::LINE_AA;
    let px = |p: &[f64; 2]| view.to_pixel(Vector2::new(p[0], p[1]));
    for body in &f.bodies {
        let pts: Vec<(f64, f64)> = body.iter().filter_map(px).collect();
        for w in pts.windows(2) {
            cv(
                "line",
                opencv::imgproc::line(
                    img,
                    fixed(w[0].0, w[0].1),
                    fixed(w[1].0, w[1].1),
                    colour(CYAN),
                    1,
                    aa,
                    4,
                ),
            )?;
        }
    }
    for j in f.joints.iter().filter_map(px) {
        cv(
            "circle",
            opencv::imgproc::circle(img, fixed(j.0, j.1), 4 * 16, colour(CYAN), 1, aa, 4),
        )?;
    }
    for m in &f.markers {
        let at = m.tracked.or_else(|| m.fitted.as_ref().and_then(px));
        let Some((u, v)) = at else { continue };
        match m.tracked {
            Some(_) => {
                let c = colour(GREEN);
                cv(
                    "line",
                    opencv::imgproc::line(img, fixed(u - 5.0, v), fixed(u + 5.0, v), c, 1, aa, 4),
                )?;
                cv(
                    "line",
                    opencv::imgproc::line(img, fixed(u, v - 5.0), fixed(u, v + 5.0), c, 1, aa, 4),
                )?;
            }
            None => {
                cv(
                    "circle",
                    opencv::imgproc::circle(img, fixed(u, v), 7 * 16, colour(YELLOW), 1, aa, 4),
                )?;
            }
        }
        let mut label = m.name.clone();
        if m.tracked.is_none() {
            label += " gap";
        }
        if !m.flags.is_empty() {
            cv(
                "circle",
                opencv::imgproc::circle(img, fixed(u, v), 10 * 16, colour(RED), 2, aa, 4),
            )?;
            let short: Vec<String> = m
                .flags
                .iter()
                .map(|r| r.chars().take(4).collect())
                .collect();
            label += &format!(" {}", short.join(","));
        }
        let c = if m.flags.is_empty() {
            colour(GREEN)
        } else {
            colour(RED)
        };
        labels.draw(img, &label, (u + 9.0) as i32, (v - 9.0) as i32, c)?;
    }
    counter(img, k)
}

/// Frame `k`'s number at the top left, in green on a black box: one thin antialiased pass. (The
/// labels' outline is a thick antialiased pass, which OpenCV draws as polygons with round caps;
/// a text that changes with every frame cannot take the labels' masks, and outlined it cost
/// more than the rest of the drawing.)
fn counter(img: &mut Mat, k: usize) -> Result<(), VisionError> {
    let s = format!("frame {k}");
    let font = opencv::imgproc::FONT_HERSHEY_SIMPLEX;
    let mut baseline = 0;
    let size = cv(
        "text size",
        opencv::imgproc::get_text_size(&s, font, 0.4, 1, &mut baseline),
    )?;
    let (x, y) = (8, 18);
    let b = Rect::new(
        x - 3,
        y - size.height - 3,
        size.width + 6,
        size.height + baseline + 5,
    );
    let black = Scalar::new(0.0, 0.0, 0.0, 0.0);
    let (filled, line8) = (opencv::imgproc::FILLED, opencv::imgproc::LINE_8);
    cv(
        "box",
        opencv::imgproc::rectangle(img, b, black, filled, line8, 0),
    )?;
    let aa = opencv::imgproc::LINE_AA;
    cv(
        "text",
        opencv::imgproc::put_text(
            img,
            &s,
            Point::new(x, y),
            font,
            0.4,
            colour(GREEN),
            1,
            aa,
            false,
        ),
    )
}

/// A line of text at (x, y), px, with a dark outline so that it reads on any background.
fn text(img: &mut Mat, s: &str, x: i32, y: i32, c: Scalar) -> Result<(), VisionError> {
    let font = opencv::imgproc::FONT_HERSHEY_SIMPLEX;
    let org = Point::new(x, y);
    for (colour, thickness) in [(Scalar::new(0.0, 0.0, 0.0, 0.0), 3), (c, 1)] {
        let aa = opencv::imgproc::LINE_AA;
        cv(
            "text",
            opencv::imgproc::put_text(img, s, org, font, 0.4, colour, thickness, aa, false),
        )?;
    }
    Ok(())
}

/// A flagged marker's crop (CROP x CROP px about it, drawn twice as large, labelled with the
/// frame, the marker and its reasons); None when it has no place in the frame.
fn crop(img: &Mat, m: &OverlayMarker, k: usize) -> Result<Option<Mat>, VisionError> {
    let Some((u, v)) = m.tracked else {
        return Ok(None);
    };
    let (cols, rows) = (img.cols(), img.rows());
    let x = ((u.round() as i32) - CROP / 2).clamp(0, (cols - CROP).max(0));
    let y = ((v.round() as i32) - CROP / 2).clamp(0, (rows - CROP).max(0));
    if cols < CROP || rows < CROP {
        return Ok(None);
    }
    let roi = cv("crop", Mat::roi(img, Rect::new(x, y, CROP, CROP)))?;
    let mut big = Mat::default();
    cv(
        "resize",
        opencv::imgproc::resize(
            &roi,
            &mut big,
            Size::new(2 * CROP, 2 * CROP),
            0.0,
            0.0,
            opencv::imgproc::INTER_NEAREST,
        ),
    )?;
    let (cu, cv_) = (2.0 * (u - x as f64), 2.0 * (v - y as f64));
    cv(
        "circle",
        opencv::imgproc::circle(
            &mut big,
            fixed(cu, cv_),
            3 * 16,
            colour(GREEN),
            1,
            opencv::imgproc::LINE_AA,
            4,
        ),
    )?;
    text(&mut big, &format!("{k} {}", m.name), 4, 14, colour(GREEN))?;
    text(&mut big, &m.flags.join(","), 4, 2 * CROP - 6, colour(RED))?;
    Ok(Some(big))
}

/// The crops in a grid of 8 columns, written as `<stem>-flagged.png` beside `out`.
fn contact_sheet(crops: &[Mat], out: &Path) -> Result<Option<PathBuf>, VisionError> {
    if crops.is_empty() {
        return Ok(None);
    }
    let cols = crops.len().min(8) as i32;
    let rows = crops.len().div_ceil(8) as i32;
    let side = 2 * CROP;
    let mut sheet = cv(
        "sheet",
        Mat::new_rows_cols_with_default(
            rows * side,
            cols * side,
            opencv::core::CV_8UC3,
            Scalar::all(30.0),
        ),
    )?;
    for (i, c) in crops.iter().enumerate() {
        let (r, col) = (i as i32 / 8, i as i32 % 8);
        let mut cell = cv(
            "cell",
            Mat::roi_mut(&mut sheet, Rect::new(col * side, r * side, side, side)),
        )?;
        cv("copy", c.copy_to(&mut cell))?;
    }
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = out.with_file_name(format!("{stem}-flagged.png"));
    let tmp = flexbench_contracts::atomic::temporary_path(&path);
    let ok = cv(
        "imwrite",
        opencv::imgcodecs::imwrite(tmp.as_os_str(), &sheet, &opencv::core::Vector::new()),
    )?;
    if !ok {
        return Err(io_err(
            &path,
            std::io::Error::other("the image could not be written"),
        ));
    }
    std::fs::rename(&tmp, &path).map_err(|e| io_err(&path, e))?;
    Ok(Some(path))
}
