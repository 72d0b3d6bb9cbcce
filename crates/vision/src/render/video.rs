//! The rendered video written: H.264 through FFmpeg where it has libx264 (with each frame's time),
//! else OpenCV's writer.

use super::*;

/// A video codec of OpenCV's FFmpeg writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// FFV1 in Matroska: lossless.
    Ffv1,
    /// Motion JPEG in AVI: lossy, frame by frame.
    Mjpg,
    /// H.264 (libx264) in MP4: lossy, small files.
    H264,
}

impl Codec {
    /// The file extension the codec goes with.
    pub fn extension(&self) -> &'static str {
        match self {
            Codec::Ffv1 => "mkv",
            Codec::Mjpg => "avi",
            Codec::H264 => "mp4",
        }
    }
    pub(super) fn fourcc(&self) -> Result<i32, VisionError> {
        let (a, b, c, d) = match self {
            Codec::Ffv1 => ('F', 'F', 'V', '1'),
            Codec::Mjpg => ('M', 'J', 'P', 'G'),
            Codec::H264 => ('a', 'v', 'c', '1'),
        };
        cv("fourcc", opencv::videoio::VideoWriter::fourcc(a, b, c, d))
    }
}

/// Re-encode the lossless video `src` as H.264 in MP4 at `dst`, each frame's presentation time
/// set by the FFmpeg expression `pts_s` (seconds, of the frame's index `N`), kept to the
/// microsecond (time base 1/1000000 from the filter to the container), and the capture rate
/// of a slow-motion file written in the container's metadata (`com.android.capture.fps`, as
/// Android phones write it) when given, at `bitrate_mbps` (Mbit/s; None: x264's constant
/// quality). Needs Debian's ffmpeg: OpenCV's writer keeps one rate.
pub fn encode_with_times(
    src: &Path,
    dst: &Path,
    pts_s: &str,
    capture_rate: Option<f64>,
    bitrate_mbps: Option<f64>,
) -> Result<(), VisionError> {
    let mut cmd = std::process::Command::new("ffmpeg");
    cmd.args(["-v", "error", "-nostdin", "-y", "-i"])
        .arg(src)
        .arg("-vf")
        .arg(format!("settb=1/1000000,setpts='({pts_s})/TB'"))
        .args(["-fps_mode", "passthrough", "-enc_time_base", "1/1000000"])
        .args(["-video_track_timescale", "1000000", "-c:v", "libx264"])
        .args(["-pix_fmt", "yuv420p", "-f", "mp4"]);
    if let Some(b) = bitrate_mbps {
        cmd.arg("-b:v").arg(format!("{}k", (b * 1e3).round()));
    }
    if let Some(r) = capture_rate {
        cmd.args(["-movflags", "use_metadata_tags", "-metadata"])
            .arg(format!("com.android.capture.fps={r:.6}"));
    }
    let video_err = |reason: String| VisionError::Video {
        path: dst.display().to_string(),
        reason,
    };
    let out = cmd.arg(dst).output().map_err(|e| {
        video_err(format!(
            "ffmpeg cannot be run ({e}): a video with its own frame times needs Debian's ffmpeg (apt-get install ffmpeg)"
        ))
    })?;
    if !out.status.success() {
        return Err(video_err(format!(
            "ffmpeg failed to write it ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// A video being written: frames are 8-bit grey, written as BGR.
pub struct VideoOut {
    pub(super) writer: Sink,
    pub(super) size: Size,
    pub(super) path: String,
}

/// Where a [`VideoOut`]'s frames go.
pub(super) enum Sink {
    /// OpenCV's FFmpeg writer (its encoder's own settings).
    OpenCv(opencv::videoio::VideoWriter),
    /// Debian's ffmpeg, fed raw frames on its standard input: YUV 4:2:0 (BT.601, video
    /// range, as ffmpeg's own conversion makes it) converted here by OpenCV when `yuv`, which
    /// halves the bytes piped and spares ffmpeg's slower conversion (the overlay of the 10 s
    /// recording, plain, at x264's 'veryfast': 7.7 -> 5.0 s), else BGR (a side of odd length).
    Ffmpeg {
        /// The ffmpeg process.
        child: std::process::Child,
        /// Its standard input (None once closed).
        input: Option<FfmpegInput>,
        /// Whether frames go as YUV 4:2:0 (else as BGR).
        yuv: bool,
        /// The converted frame, reused.
        buffer: Mat,
    },
}

/// ffmpeg's standard input: one end of a Unix socket pair, written with MSG_NOSIGNAL. The
/// command keeps SIGPIPE's default so that a closed standard output ends it quietly (`flexbench
/// probe | head -1`); on a pipe to ffmpeg that signal would end the whole run, with no message
/// and the stages beside stopped midway, when ffmpeg stops (a broken encoder, a full disk). On
/// the socket an ffmpeg that has stopped is an error (EPIPE) this writer reports with what
/// ffmpeg said. ffmpeg reads its standard input the same from either.
pub(super) struct FfmpegInput(std::os::unix::net::UnixStream);

impl FfmpegInput {
    /// A socket pair: ours, and the end to give ffmpeg as its standard input.
    pub(super) fn pair() -> std::io::Result<(FfmpegInput, std::process::Stdio)> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        Ok((
            FfmpegInput(ours),
            std::process::Stdio::from(std::os::fd::OwnedFd::from(theirs)),
        ))
    }

    /// Write all of `bytes`, an error (not a signal) if ffmpeg has stopped reading.
    pub(super) fn write_all(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        while !bytes.is_empty() {
            // SAFETY: send on this socket's own open descriptor, with the valid buffer `bytes`
            // and its length.
            let sent = unsafe {
                libc::send(
                    self.0.as_raw_fd(),
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            match usize::try_from(sent) {
                Ok(n) => bytes = &bytes[n..],
                Err(_) => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }
}

/// x264's preset for the H.264 written through ffmpeg. Transcoding the 10 s recording's 2400
/// frames (640 x 480) with ffmpeg alone: x264's default 'medium' (what OpenCV's writer uses)
/// 7.8 s, 592 KB; 'veryfast' 3.2-3.6 s (5.4-5.9 s of processor time), 386 KB; 'superfast'
/// 2.7-3.0 s, 1.0 MB; 'ultrafast' 1.6 s (2.5 s of processor time), 1.9 MB, all at x264's
/// default quality (CRF 23). The overlay is a review video, the largest stage of a long
/// recording's run: the fastest (the overlay of the 10 s recording: 3.3 MB).
pub const X264_PRESET: &str = "ultrafast";

/// Whether `ffmpeg` runs and lists the libx264 encoder (asked once per process).
pub(super) fn ffmpeg_has_libx264() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::process::Command::new("ffmpeg")
            .args(["-hide_banner", "-v", "error", "-encoders"])
            .output()
            .is_ok_and(|o| o.status.success() && lists_encoder(&o.stdout, "libx264"))
    })
}

/// Whether `ffmpeg -encoders`'s listing names the encoder `name` (a line "<flags> <name> ...").
pub(super) fn lists_encoder(listing: &[u8], name: &str) -> bool {
    String::from_utf8_lossy(listing)
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(name))
}

impl VideoOut {
    /// Open `path` for writing with `codec` at `fps`.
    pub fn create(
        path: &Path,
        codec: Codec,
        fps: f64,
        width: i32,
        height: i32,
    ) -> Result<Self, VisionError> {
        let p = path.display().to_string();
        let size = Size::new(width, height);
        let writer = cv(
            "VideoWriter",
            opencv::videoio::VideoWriter::new_with_backend(
                path.as_os_str(),
                opencv::videoio::CAP_FFMPEG,
                codec.fourcc()?,
                fps,
                size,
                true,
            ),
        )?;
        if !cv("VideoWriter", writer.is_opened())? {
            return Err(VisionError::Video {
                path: p,
                reason: format!("OpenCV's FFmpeg writer cannot open it with codec {codec:?}"),
            });
        }
        Ok(VideoOut {
            writer: Sink::OpenCv(writer),
            size,
            path: p,
        })
    }

    /// Open `path` for H.264 in MP4 written by Debian's ffmpeg (x264 at [`X264_PRESET`],
    /// yuv420p, the index at the front for browsers), fed raw frames at `fps`: OpenCV's writer
    /// takes no encoder preset (opencv/opencv#24570). Fails when ffmpeg cannot be started or
    /// has no libx264 encoder (an ffmpeg built without it would only fail at the first frame,
    /// too late for the caller to take another writer).
    pub fn ffmpeg_h264(
        path: &Path,
        fps: f64,
        width: i32,
        height: i32,
    ) -> Result<Self, VisionError> {
        use std::process::{Command, Stdio};
        let p = path.display().to_string();
        if !ffmpeg_has_libx264() {
            return Err(VisionError::Video {
                path: p,
                reason: "ffmpeg cannot be run or has no libx264 encoder (`ffmpeg -encoders`): install Debian's ffmpeg (apt-get install ffmpeg)".into(),
            });
        }
        let yuv = width % 2 == 0 && height % 2 == 0;
        let (input, stdin) = FfmpegInput::pair().map_err(|e| VisionError::Video {
            path: p.clone(),
            reason: format!("no socket for ffmpeg's input ({e})"),
        })?;
        let child = Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-f", "rawvideo", "-pix_fmt"])
            .arg(if yuv { "yuv420p" } else { "bgr24" })
            .args(["-s", &format!("{width}x{height}"), "-r", &format!("{fps}")])
            .args(["-i", "-", "-c:v", "libx264", "-preset", X264_PRESET])
            .args([
                "-pix_fmt",
                "yuv420p",
                "-movflags",
                "+faststart",
                "-f",
                "mp4",
            ])
            .arg(path)
            .stdin(stdin)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| VisionError::Video {
                path: p.clone(),
                reason: format!(
                    "ffmpeg cannot be run ({e}): install Debian's ffmpeg (apt-get install ffmpeg)"
                ),
            })?;
        Ok(VideoOut {
            writer: Sink::Ffmpeg {
                child,
                input: Some(input),
                yuv,
                buffer: Mat::default(),
            },
            size: Size::new(width, height),
            path: p,
        })
    }
    /// Append a frame: grey, or BGR (three channels).
    pub fn write(&mut self, grey: &Mat) -> Result<(), VisionError> {
        if cv("channels", Ok::<i32, opencv::Error>(grey.channels()))? == 3 {
            return self.write_bgr(grey);
        }
        let mut bgr = Mat::default();
        cv(
            "cvtColor",
            opencv::imgproc::cvt_color(grey, &mut bgr, opencv::imgproc::COLOR_GRAY2BGR, 0),
        )?;
        self.write_bgr(&bgr)
    }
    /// Append a colour (BGR) frame.
    pub fn write_bgr(&mut self, bgr: &Mat) -> Result<(), VisionError> {
        if cv("size", bgr.size())? != self.size {
            return Err(VisionError::Video {
                path: self.path.clone(),
                reason: "frame size differs from the video's".into(),
            });
        }
        match &mut self.writer {
            Sink::OpenCv(w) => cv("write frame", w.write(bgr)),
            Sink::Ffmpeg {
                input, yuv, buffer, ..
            } => {
                let bytes = if *yuv {
                    let code = opencv::imgproc::COLOR_BGR2YUV_I420;
                    cv("cvtColor", opencv::imgproc::cvt_color(bgr, buffer, code, 0))?;
                    cv("frame bytes", buffer.data_bytes())?
                } else {
                    cv("frame bytes", bgr.data_bytes())?
                };
                let written = input.as_mut().map(|s| s.write_all(bytes));
                match written {
                    Some(Ok(())) => Ok(()),
                    // ffmpeg has stopped: its own message says why.
                    _ => Err(self.ffmpeg_failure("stopped taking frames")),
                }
            }
        }
    }
    /// Finish the file.
    pub fn finish(mut self) -> Result<(), VisionError> {
        match &mut self.writer {
            Sink::OpenCv(w) => cv("closing the video", w.release()),
            Sink::Ffmpeg { child, input, .. } => {
                drop(input.take());
                match child.wait() {
                    Ok(status) if status.success() => Ok(()),
                    _ => Err(self.ffmpeg_failure("failed to finish")),
                }
            }
        }
    }

    /// The error of an ffmpeg writer that stopped, with what ffmpeg said (it is waited for).
    pub(super) fn ffmpeg_failure(&mut self, what: &str) -> VisionError {
        use std::io::Read;
        let mut said = String::new();
        if let Sink::Ffmpeg { child, input, .. } = &mut self.writer {
            drop(input.take());
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut said);
            }
            let _ = child.wait();
        }
        VisionError::Video {
            path: self.path.clone(),
            reason: format!("ffmpeg {what}: {}", said.trim()),
        }
    }
}
