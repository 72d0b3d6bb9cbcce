//! The video: opened, probed and decoded frame by frame to grey images, with the frame size
//! bounded.

use super::*;

/// The video decoded on a thread of its own, frames handed over through a short queue and
/// their buffers recycled: decoding and tracking overlap on two cores.
pub(super) struct Decoder {
    /// Each decoded frame with its timestamp (ms), or the decoder's error.
    pub(super) frames: std::sync::mpsc::Receiver<Result<(Mat, f64), opencv::Error>>,
    /// Buffers handed back for the next frames.
    pub(super) back: std::sync::mpsc::Sender<Mat>,
    pub(super) thread: std::thread::JoinHandle<()>,
}

impl Decoder {
    pub(super) fn spawn(cap: opencv::videoio::VideoCapture) -> Decoder {
        let (frame_tx, frames) =
            std::sync::mpsc::sync_channel::<Result<(Mat, f64), opencv::Error>>(4);
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
                        let _ = frame_tx.send(Err(e));
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
    pub(super) fn recycle(&self, m: Mat) {
        let _ = self.back.send(m);
    }

    /// Stop the decoding thread (it ends at its next send) and wait for it.
    pub(super) fn finish(self) {
        drop(self.frames);
        let _ = self.thread.join();
    }
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
