//! The camera file (`RenderSpec`): the camera, the film, the nuisances and the calibration views,
//! every key with its default, checked.

use super::*;

pub(super) fn d_fps() -> f64 {
    240.0
}

pub(super) fn d_duration() -> f64 {
    2.0
}

pub(super) fn d_settle() -> f64 {
    3.0
}

pub(super) fn d_exposure() -> f64 {
    0.002
}

pub(super) fn d_blur() -> usize {
    7
}

pub(super) fn d_noise() -> f64 {
    1.5
}

pub(super) fn d_lighting() -> f64 {
    0.2
}

pub(super) fn d_background() -> f64 {
    90.0
}

pub(super) fn d_marker_radius() -> f64 {
    0.006
}

pub(super) fn d_fiducial_side() -> f64 {
    0.03
}

pub(super) fn d_codec() -> String {
    "ffv1".into()
}

pub(super) fn d_seed() -> u64 {
    1
}

pub(super) fn d_board() -> [i32; 2] {
    [9, 6]
}

pub(super) fn d_square() -> f64 {
    0.03
}

pub(super) fn d_views() -> usize {
    15
}

pub(super) fn d_plane_board_at() -> [f64; 2] {
    [0.05, 0.05]
}

pub(super) fn d_horizontal_at() -> f64 {
    0.3
}

/// A ChArUco board instead of the chessboard in the calibration views and the plane view
/// (`[charuco]` of the camera file; `square` and `board` then unused).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CharucoSpec {
    /// Squares along the board's width and height.
    pub squares: [i32; 2],
    /// Side of a square, m.
    pub square: f64,
    /// Side of a marker, m.
    pub marker: f64,
    /// The markers' dictionary, OpenCV's name without DICT_ ("4x4_50", ...).
    pub dictionary: String,
    /// Board y range (m, from its first row of squares' outer edge) that a dark bar, the
    /// lever lying across the board, hides in the plane view.
    #[serde(default)]
    pub hidden: Option<[f64; 2]>,
}

impl CharucoSpec {
    /// The board it describes, checked.
    pub fn board(&self) -> Result<flexbench_vision::calibrate::Charuco, String> {
        let dictionary = self
            .dictionary
            .parse()
            .map_err(|e| format!("[charuco] {e}"))?;
        let c = flexbench_vision::calibrate::Charuco {
            squares_x: self.squares[0],
            squares_y: self.squares[1],
            square: self.square,
            marker: self.marker,
            dictionary,
        };
        c.check().map_err(|e| format!("[charuco] {e}"))?;
        Ok(c)
    }
}

/// A marker hidden for a range of frames.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Occlusion {
    /// Marker name.
    pub marker: String,
    /// First and last frame hidden (inclusive).
    pub frames: [usize; 2],
}

/// A marker's look changed for a range of frames: a specular glint sweeping over it, or an
/// edge of something half hiding it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkerNuisance {
    /// Marker name.
    pub marker: String,
    /// First and last frame (inclusive).
    pub frames: [usize; 2],
}

/// A bright spot fixed on a body (a screw head on the crank disc), in the body's own frame as
/// the mechanism file gives its points, m.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spot {
    /// Body name.
    pub body: String,
    /// Place in the body's frame, m.
    pub at: [f64; 2],
}

pub(super) fn d_flicker_hz() -> f64 {
    100.0
}

/// What a real bench adds to the picture (`[nuisances]` of the camera file): the lamp's
/// flicker, bright bolt heads on the frame, bright screws on moving bodies, glints sweeping over
/// markers, markers half hidden. Every one is off unless given; vignetting is the `lighting` key.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nuisances {
    /// Relative amplitude of the lamp's flicker (0: steady).
    #[serde(default)]
    pub flicker: f64,
    /// Frequency of the flicker, Hz (twice the mains frequency: 100 Hz on 50 Hz mains).
    #[serde(default = "d_flicker_hz")]
    pub flicker_hz: f64,
    /// Bright bolt heads on the bench frame, bench metres; drawn as bright as a marker and the
    /// same size, under the moving bodies.
    #[serde(default)]
    pub bolts: Vec<[f64; 2]>,
    /// Bright screw heads on moving bodies, drawn over their body and under the lever.
    #[serde(default)]
    pub screws: Vec<Spot>,
    /// Glints: a small saturated spot sweeping across the marker (0.6 of its radius, from 2.5
    /// radii on one side to 2.5 on the other) over the frames.
    #[serde(default)]
    pub glints: Vec<MarkerNuisance>,
    /// Markers half hidden (the half towards +Y of the bench) over the frames.
    #[serde(default)]
    pub half_hidden: Vec<MarkerNuisance>,
    /// Coloured stickers on the bench frame, as large as a marker, under the moving bodies
    /// (the video is then filmed in colour).
    #[serde(default)]
    pub stickers: Vec<Sticker>,
}

/// A coloured sticker on the bench frame (`[[nuisances.stickers]]`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sticker {
    /// Where, bench m.
    pub at: [f64; 2],
    /// Its colour, [red, green, blue] levels.
    pub rgb: [f64; 3],
}

/// The camera file of `render`: the camera (intrinsics, distortion, pose) and the recording's
/// settings, SI units and pixels.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderSpec {
    /// The camera's intrinsics and distortion (the `[intrinsics]` table).
    pub intrinsics: Intrinsics,
    /// Bench point on the optical axis, m.
    pub look_at: [f64; 2],
    /// Distance from the bench plane, m.
    pub distance: f64,
    /// Tilts about the bench's X and Y axes, deg.
    #[serde(default)]
    pub tilt_deg: [f64; 2],
    /// Roll about the optical axis, deg.
    #[serde(default)]
    pub roll_deg: f64,
    /// Frames per second.
    #[serde(default = "d_fps")]
    pub fps: f64,
    /// Recorded duration, s.
    #[serde(default = "d_duration")]
    pub duration: f64,
    /// Simulated time before the recording starts, s.
    #[serde(default = "d_settle")]
    pub settle: f64,
    /// Exposure time, s (0: no motion blur).
    #[serde(default = "d_exposure")]
    pub exposure: f64,
    /// Instants averaged over the exposure.
    #[serde(default = "d_blur")]
    pub blur_samples: usize,
    /// A rolling shutter's readout: the time from the first row's exposure to the last's, s (0:
    /// a global shutter). Row v is exposed readout v / height after row 0, the frame's time.
    #[serde(default)]
    pub readout: f64,
    /// Sensor noise, grey levels.
    #[serde(default = "d_noise")]
    pub noise: f64,
    /// Uneven lighting's relative amplitude.
    #[serde(default = "d_lighting")]
    pub lighting: f64,
    /// Background grey level.
    #[serde(default = "d_background")]
    pub background: f64,
    /// The background's colour, [red, green, blue] levels (a coloured wall): the video is then
    /// filmed in colour (`background` unused).
    #[serde(default)]
    pub background_rgb: Option<[f64; 3]>,
    /// Marker disc radius, m.
    #[serde(default = "d_marker_radius")]
    pub marker_radius: f64,
    /// The black square's side of a fiducial marker (`kind = "fiducial"`), m.
    #[serde(default = "d_fiducial_side")]
    pub fiducial_side: f64,
    /// Video codec: ffv1 (lossless, .mkv), mjpg (.avi), h264 (.mp4).
    #[serde(default = "d_codec")]
    pub codec: String,
    /// H.264's bit rate, Mbit/s (a phone's: about 0.25 bit per pixel and frame, 18 Mbit/s
    /// for 640 x 480 at 240 frames/s); none: x264's constant quality (CRF 23), a far smaller
    /// file than a phone writes for the bench's plain scenes.
    #[serde(default)]
    pub bitrate_mbps: Option<f64>,
    /// Seed of the noise.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// Chessboard inner corners [cols, rows].
    #[serde(default = "d_board")]
    pub board: [i32; 2],
    /// Chessboard square, m.
    #[serde(default = "d_square")]
    pub square: f64,
    /// Number of calibration views (the whole board in the image).
    #[serde(default = "d_views")]
    pub views: usize,
    /// Number of further calibration views whose board leaves the image (some inner corners
    /// outside), as a user holding the board too close to an edge makes them.
    #[serde(default)]
    pub partial_views: usize,
    /// Bench position of the plane view board's first inner corner, m.
    #[serde(default = "d_plane_board_at")]
    pub plane_board_at: [f64; 2],
    /// The second clicked point is (this, 0) in the bench frame, m.
    #[serde(default = "d_horizontal_at")]
    pub horizontal_at: f64,
    /// Markers hidden in chosen frames.
    #[serde(default)]
    pub occlusion: Vec<Occlusion>,
    /// What a real bench adds to the picture.
    #[serde(default)]
    pub nuisances: Nuisances,
    /// The camera's clock: a variable frame rate, dropped frames, slow motion.
    #[serde(default)]
    pub timing: RenderTiming,
    /// A ChArUco board in the calibration and plane views instead of the chessboard.
    #[serde(default)]
    pub charuco: Option<CharucoSpec>,
}

/// The camera's clock (`[timing]` of the camera file): every key off unless given. A video with
/// any of them is written through Debian's ffmpeg as H.264 MP4, each frame's presentation time
/// kept to the microsecond, and its truth holds each frame's capture time.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RenderTiming {
    /// Largest shift of a frame's capture time, in frame periods (0 to 0.45): frame k is
    /// captured at (k + jitter sin(2.399963 k)) / fps, the shift rounded to 1/20 of a period
    /// (the simulation's step): a variable-frame-rate camera.
    pub jitter: f64,
    /// Frames the camera drops (indices on the capture clock, from 0): not in the video.
    pub dropped: Vec<usize>,
    /// Playback rate of a slow-motion file, frames/s: captured at `fps`, stored at this rate.
    pub playback_fps: Option<f64>,
    /// Whether the capture rate is written in the container's metadata
    /// (`com.android.capture.fps`), as Android phones write it.
    pub capture_metadata: bool,
}

/// Golden angle, rad: the phase step of the jitter, so that the shifts of successive frames
/// look random yet are a formula FFmpeg evaluates as flexbench does.
pub(super) const JITTER_STEP: f64 = 2.399963;

impl RenderTiming {
    /// Whether the clock is the plain one (frame k at k / fps, every frame kept).
    pub fn is_plain(&self) -> bool {
        self == &RenderTiming::default()
    }
    /// Frame k's capture instant in simulation steps (1 / (fps SAMPLES_PER_FRAME) s).
    pub(super) fn slot(&self, k: usize) -> i64 {
        let spf = SAMPLES_PER_FRAME as f64;
        (k * SAMPLES_PER_FRAME) as i64
            + (self.jitter * (k as f64 * JITTER_STEP).sin() * spf).round() as i64
    }
    /// The frames the camera keeps among the first `frames` of its clock.
    pub(super) fn kept(&self, frames: usize) -> Vec<usize> {
        (0..frames).filter(|k| !self.dropped.contains(k)).collect()
    }
    /// FFmpeg's expression of the presentation time (s) of the video's frame N, the same
    /// formula as [`RenderTiming::slot`] over the playback rate (sorted drops d_i shift N by
    /// one each from N = d_i - i on).
    pub(super) fn pts_expression(&self, fps: f64) -> String {
        let mut d = self.dropped.clone();
        d.sort_unstable();
        d.dedup();
        let k: String = std::iter::once("N".to_string())
            .chain(
                d.iter()
                    .enumerate()
                    .map(|(i, di)| format!("+gte(N,{})", di - i)),
            )
            .collect();
        let playback = self.playback_fps.unwrap_or(fps);
        format!(
            "(({k})*{SAMPLES_PER_FRAME}+round({j:?}*sin(({k})*{JITTER_STEP:?})*{SAMPLES_PER_FRAME}))/({playback:?}*{SAMPLES_PER_FRAME})",
            j = self.jitter
        )
    }
    /// The keys' values checked.
    pub(super) fn check(&self, codec: Codec) -> Result<(), String> {
        if !(0.0..=0.45).contains(&self.jitter) {
            return Err(format!(
                "[timing] jitter = {}: give a share of a frame period from 0 to 0.45",
                self.jitter
            ));
        }
        if let Some(p) = self.playback_fps {
            if !(p > 0.0 && p.is_finite()) {
                return Err(format!(
                    "[timing] playback_fps = {p}: give a positive rate, frames/s"
                ));
            }
        }
        if self.capture_metadata && self.playback_fps.is_none() {
            return Err("[timing] capture_metadata needs playback_fps (a slow-motion file)".into());
        }
        if !self.is_plain() && codec != Codec::H264 {
            return Err("[timing] needs codec = \"h264\": the MP4 keeps each frame's time to the microsecond".into());
        }
        Ok(())
    }
}

impl RenderSpec {
    /// Read a camera file.
    pub fn load(path: &Path) -> Result<Self, RenderError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| RenderError::io(path, "be read", e))?;
        let spec: RenderSpec = toml::from_str(&text).map_err(|source| RenderError::Toml {
            what: format!("camera file {}", path.display()),
            source,
        })?;
        spec.check()
            .map_err(|r| RenderError::Spec(format!("camera file {}: {r}", path.display())))?;
        Ok(spec)
    }
    pub(super) fn check(&self) -> Result<(), String> {
        let pos = |v: f64, k: &str| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(format!("key '{k}': {v} must be positive"))
            }
        };
        let level = |rgb: &[f64; 3], k: &str| match rgb.iter().all(|c| (0.0..=255.0).contains(c)) {
            true => Ok(()),
            false => Err(format!(
                "key '{k}': {rgb:?}: give [red, green, blue] levels from 0 to 255"
            )),
        };
        if let Some(rgb) = &self.background_rgb {
            level(rgb, "background_rgb")?;
        }
        for s in &self.nuisances.stickers {
            level(&s.rgb, "nuisances.stickers.rgb")?;
        }
        let i = &self.intrinsics;
        pos(i.width as f64, "intrinsics.width")?;
        pos(i.height as f64, "intrinsics.height")?;
        pos(i.fx, "intrinsics.fx")?;
        pos(i.fy, "intrinsics.fy")?;
        pos(self.distance, "distance")?;
        pos(self.fps, "fps")?;
        pos(self.duration, "duration")?;
        pos(self.marker_radius, "marker_radius")?;
        pos(self.fiducial_side, "fiducial_side")?;
        if self.blur_samples == 0 {
            return Err("key 'blur_samples': at least 1".into());
        }
        if !(self.readout.is_finite() && self.readout >= 0.0 && self.readout < 1.0 / self.fps) {
            return Err(format!(
                "key 'readout': {} s: a rolling shutter's readout is at least 0 and shorter than a frame ({:.4} s at {} frames/s)",
                self.readout,
                1.0 / self.fps,
                self.fps
            ));
        }
        self.timing.check(self.codec()?)?;
        if let Some(b) = self.bitrate_mbps {
            if !(b.is_finite() && b > 0.0) || self.codec()? != Codec::H264 {
                return Err(format!(
                    "key 'bitrate_mbps': {b}: H.264's bit rate in Mbit/s, more than 0, with codec = \"h264\" (a phone writes about 18 Mbit/s at 640 x 480 and 240 frames/s)"
                ));
            }
        }
        if let Some(c) = &self.charuco {
            c.board()?;
        }
        Ok(())
    }
    /// The spec checked against the mechanism it films: every marker and body it names exists,
    /// every frame range is in order; the screws as (body, place relative to its centroid,
    /// radius, m).
    pub(super) fn check_against(
        &self,
        mech: &Mechanism,
    ) -> Result<Vec<(usize, Vector2<f64>, f64)>, String> {
        let nz = &self.nuisances;
        let ranges = self
            .occlusion
            .iter()
            .map(|o| ("occlusion", &o.marker, o.frames));
        let glints = nz.glints.iter().map(|g| ("glint", &g.marker, g.frames));
        let halves = nz
            .half_hidden
            .iter()
            .map(|h| ("half_hidden", &h.marker, h.frames));
        for (what, marker, frames) in ranges.chain(glints).chain(halves) {
            if !mech.markers.iter().any(|m| &m.name == marker) {
                return Err(format!(
                    "{what} of '{marker}': the mechanism has no such marker"
                ));
            }
            if frames[1] < frames[0] {
                return Err(format!(
                    "{what} of '{marker}': frames [{}, {}] end before they start",
                    frames[0], frames[1]
                ));
            }
        }
        if !(nz.flicker >= 0.0 && nz.flicker < 1.0 && nz.flicker_hz.is_finite()) {
            return Err(format!(
                "[nuisances] flicker = {}: a relative amplitude in [0, 1)",
                nz.flicker
            ));
        }
        nz.screws
            .iter()
            .map(|sc| {
                let b = mech.body_index(&sc.body).ok_or_else(|| {
                    format!("screw on '{}': the mechanism has no such body", sc.body)
                })?;
                let at = Vector2::new(sc.at[0], sc.at[1]) - mech.bodies[b].centroid;
                Ok((b, at, self.marker_radius))
            })
            .collect()
    }

    /// The codec named in the file.
    pub fn codec(&self) -> Result<Codec, String> {
        match self.codec.as_str() {
            "ffv1" => Ok(Codec::Ffv1),
            "mjpg" => Ok(Codec::Mjpg),
            "h264" => Ok(Codec::H264),
            other => Err(format!(
                "key 'codec': '{other}' is not one of ffv1, mjpg, h264"
            )),
        }
    }
    /// The camera it describes.
    pub fn camera(&self) -> CameraTruth {
        CameraTruth::looking_at(
            self.intrinsics,
            self.look_at,
            self.distance,
            self.tilt_deg[0],
            self.tilt_deg[1],
            self.roll_deg,
        )
    }
}
