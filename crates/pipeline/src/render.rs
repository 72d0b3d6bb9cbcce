//! `flexbench render`: the rendered truth of a mechanism filmed by a known camera: the video of
//! the markers on the moving bench, chessboard views for calibration, one board view lying in
//! the lever's plane with the pixels of A and of the horizontal (as a user would click them),
//! and the truth (tracks with u, v and x, y; the camera; the simulation's tables).

use std::path::{Path, PathBuf};

use flexbench_mechanism::constraints::body_point;
use flexbench_mechanism::model::{BodyRef, JointKind, Mechanism};
use flexbench_mechanism::simulate::SimConfig;
use flexbench_vision::calibrate::Board;
use flexbench_vision::render::{
    board_poses, luminance, BoardRenderer, CameraTruth, Codec, Look, PlaneMap, Shape, VideoOut,
};
use flexbench_vision::Intrinsics;
use nalgebra::{DVector, Vector2, Vector3};
use serde::Deserialize;
use serde_json::json;

use crate::{ensure_dir, write_json, PipelineError};

fn d_fps() -> f64 {
    240.0
}
fn d_duration() -> f64 {
    2.0
}
fn d_settle() -> f64 {
    3.0
}
fn d_exposure() -> f64 {
    0.002
}
fn d_blur() -> usize {
    7
}
fn d_noise() -> f64 {
    1.5
}
fn d_lighting() -> f64 {
    0.2
}
fn d_background() -> f64 {
    90.0
}
fn d_marker_radius() -> f64 {
    0.006
}
fn d_fiducial_side() -> f64 {
    0.03
}
fn d_codec() -> String {
    "ffv1".into()
}
fn d_seed() -> u64 {
    1
}
fn d_board() -> [i32; 2] {
    [9, 6]
}
fn d_square() -> f64 {
    0.03
}
fn d_views() -> usize {
    15
}
fn d_plane_board_at() -> [f64; 2] {
    [0.05, 0.05]
}
fn d_horizontal_at() -> f64 {
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

fn d_flicker_hz() -> f64 {
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
const JITTER_STEP: f64 = 2.399963;

impl RenderTiming {
    /// Whether the clock is the plain one (frame k at k / fps, every frame kept).
    pub fn is_plain(&self) -> bool {
        self == &RenderTiming::default()
    }
    /// Frame k's capture instant in simulation steps (1 / (fps SAMPLES_PER_FRAME) s).
    fn slot(&self, k: usize) -> i64 {
        let spf = SAMPLES_PER_FRAME as f64;
        (k * SAMPLES_PER_FRAME) as i64
            + (self.jitter * (k as f64 * JITTER_STEP).sin() * spf).round() as i64
    }
    /// The frames the camera keeps among the first `frames` of its clock.
    fn kept(&self, frames: usize) -> Vec<usize> {
        (0..frames).filter(|k| !self.dropped.contains(k)).collect()
    }
    /// FFmpeg's expression of the presentation time (s) of the video's frame N, the same
    /// formula as [`RenderTiming::slot`] over the playback rate (sorted drops d_i shift N by
    /// one each from N = d_i - i on).
    fn pts_expression(&self, fps: f64) -> String {
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
    fn check(&self, codec: Codec) -> Result<(), String> {
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
    pub fn load(path: &Path) -> Result<Self, PipelineError> {
        let text = std::fs::read_to_string(path).map_err(|e| PipelineError::Io {
            path: path.display().to_string(),
            reason: format!("cannot be read ({e})"),
        })?;
        let spec: RenderSpec = toml::from_str(&text).map_err(|source| PipelineError::Toml {
            what: format!("camera file {}", path.display()),
            source,
        })?;
        spec.check()
            .map_err(|r| PipelineError::Input(format!("camera file {}: {r}", path.display())))?;
        Ok(spec)
    }
    fn check(&self) -> Result<(), String> {
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
    fn check_against(&self, mech: &Mechanism) -> Result<Vec<(usize, Vector2<f64>, f64)>, String> {
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

/// What `render` wrote.
#[derive(Debug, Clone)]
pub struct RenderSummary {
    /// The video file.
    pub video: PathBuf,
    /// Frames written.
    pub frames: usize,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// What one instant of a frame adds to the bodies and markers: markers hidden, bright spots on
/// the ground (under every body) and on bodies (over the bodies without markers, under those
/// with), shapes on top of everything (glints, half-occluders), bench metres.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Markers hidden (index into the mechanism's markers).
    pub hidden: Vec<usize>,
    /// Shapes on the ground, under every body.
    pub ground: Vec<Shape>,
    /// Bright spots on bodies: the body, the spot's place relative to its centroid (local
    /// axes, m), its radius (m).
    pub spots: Vec<(usize, Vector2<f64>, f64)>,
    /// Shapes over everything.
    pub top: Vec<Shape>,
}

/// How the markers are drawn: discs (bright, or dark for `kind = "dark"`), or the printed
/// squares of fiducial markers.
pub struct MarkerDrawing {
    /// A disc marker's radius, m.
    pub radius: f64,
    /// Each disc marker's grey level, in the mechanism's order.
    pub greys: Vec<f64>,
    /// Each coloured sticker's colour (`kind = "colour"`: its hue at a sticker's saturation
    /// and value), red, green, blue levels, in the mechanism's order.
    pub colours: Vec<Option<[f64; 3]>>,
    /// A fiducial's black square's side, m.
    pub fiducial_side: f64,
    /// Each marker's code cells when it is a fiducial (`fiducial::cells`), in the mechanism's
    /// order.
    pub tags: Vec<Option<Vec<Vec<bool>>>>,
}

impl MarkerDrawing {
    /// The drawing of `mech`'s markers: discs of `radius` (m), fiducials' squares of `side` (m).
    pub fn of(mech: &Mechanism, radius: f64, side: f64) -> Result<MarkerDrawing, PipelineError> {
        let tags = mech
            .markers
            .iter()
            .map(|mk| match mk.kind {
                flexbench_contracts::MarkerKind::Fiducial { dictionary, id } => {
                    flexbench_vision::fiducial::cells(dictionary, id).map(Some)
                }
                _ => Ok(None),
            })
            .collect::<Result<_, _>>()
            .map_err(PipelineError::Vision)?;
        let greys = mech
            .markers
            .iter()
            .map(|mk| match mk.kind {
                flexbench_contracts::MarkerKind::Dark => DARK_MARKER_GREY,
                _ => MARKER_GREY,
            })
            .collect();
        let colours = mech
            .markers
            .iter()
            .map(|mk| match mk.kind {
                flexbench_contracts::MarkerKind::Colour { hue_deg, .. } => {
                    Some(sticker_rgb(hue_deg))
                }
                _ => None,
            })
            .collect();
        Ok(MarkerDrawing {
            radius,
            greys,
            colours,
            fiducial_side: side,
            tags,
        })
    }
}

/// The scene of the mechanism at configuration q: every body drawn around its points (a disc
/// for a body turning about a ground pin, like the crank; bars between its points otherwise; the
/// slide as a block), the markers on top (bright discs, dark ones, or fiducials), occluders over hidden markers, and the
/// frame's `extras`.
pub fn scene(
    m: &Mechanism,
    q: &DVector<f64>,
    markers: &MarkerDrawing,
    extras: &Extras,
    camera_centre: &Vector3<f64>,
) -> Vec<Shape> {
    let mut back = extras.ground.clone();
    let mut front = Vec::new();
    let pt = |b: usize, s: Vector2<f64>| {
        let p = body_point(q, b, s);
        [p.x, p.y]
    };
    for b in 0..m.bodies.len() {
        let layer = if m.markers.iter().any(|mk| mk.body == b) {
            &mut front
        } else {
            &mut back
        };
        // A body carrying markers off the plane has its face there with them (the deepest
        // marker's depth): drawn where its rays meet the plane.
        let depth = m
            .markers
            .iter()
            .filter(|mk| mk.body == b)
            .map(|mk| mk.depth)
            .fold(0.0, f64::max);
        layer.extend(
            body_shapes(m, b, &pt)
                .into_iter()
                .map(|sh| shape_seen(sh, camera_centre, depth)),
        );
    }
    for &(b, at, r) in &extras.spots {
        back.push(Shape::Disc {
            c: pt(b, at),
            r,
            grey: MARKER_GREY,
        });
    }
    back.extend(front);
    for (k, mk) in m.markers.iter().enumerate() {
        // A marker off the plane is drawn where its rays meet the plane (a disc parallel to the
        // plane stays a disc there, scaled about the camera's foot).
        let c = seen_at(camera_centre, pt(mk.body, mk.local), mk.depth);
        let k_depth = 1.0 / (1.0 - mk.depth / camera_centre.z.abs());
        let r = markers.radius * k_depth;
        match markers.tags.get(k).and_then(Option::as_ref) {
            Some(cells) => {
                // The tag turns with its body (the body's X axis at the marker).
                let ahead = pt(mk.body, mk.local + Vector2::x());
                let turn = (ahead[1] - pt(mk.body, mk.local)[1])
                    .atan2(ahead[0] - pt(mk.body, mk.local)[0]);
                let side = markers.fiducial_side * k_depth;
                back.extend(flexbench_vision::fiducial::tag_shapes(c, turn, side, cells));
            }
            None => back.push(match markers.colours.get(k).copied().flatten() {
                Some(rgb) => Shape::Sticker { c, r, rgb },
                None => Shape::Disc {
                    c,
                    r,
                    grey: markers.greys.get(k).copied().unwrap_or(MARKER_GREY),
                },
            }),
        }
        if extras.hidden.contains(&k) {
            back.push(Shape::Disc {
                c,
                r: r * 2.0,
                grey: 35.0,
            });
        }
    }
    back.extend(extras.top.iter().copied());
    back
}

/// Where the camera at `centre` sees bench point `p` (m) that stands `depth` m in front of
/// the plane: where its ray meets the plane (`p` itself in the plane).
fn seen_at(centre: &Vector3<f64>, p: [f64; 2], depth: f64) -> [f64; 2] {
    if depth == 0.0 {
        return p;
    }
    flexbench_vision::camera::onto_plane(centre, (p[0], p[1]), depth).map_or(p, |(x, y)| [x, y])
}

/// A shape `depth` m in front of the plane as the camera at `centre` sees it on the plane: a
/// disc or a bar parallel to the plane stays one, scaled about the camera's foot.
fn shape_seen(shape: Shape, centre: &Vector3<f64>, depth: f64) -> Shape {
    if depth == 0.0 {
        return shape;
    }
    let k = 1.0 / (1.0 - depth / centre.z.abs());
    match shape {
        Shape::Disc { c, r, grey } => Shape::Disc {
            c: seen_at(centre, c, depth),
            r: r * k,
            grey,
        },
        Shape::Bar {
            a,
            b,
            half_width,
            grey,
        } => Shape::Bar {
            a: seen_at(centre, a, depth),
            b: seen_at(centre, b, depth),
            half_width: half_width * k,
            grey,
        },
        Shape::Rect {
            c,
            turn,
            half,
            grey,
        } => Shape::Rect {
            c: seen_at(centre, c, depth),
            turn,
            half: [half[0] * k, half[1] * k],
            grey,
        },
        Shape::Sticker { c, r, rgb } => Shape::Sticker {
            c: seen_at(centre, c, depth),
            r: r * k,
            rgb,
        },
    }
}

/// The rows of a band of a rolling shutter's frame, rendered at its middle row's time: every
/// row within two rows' readout of its own time. Coarser bands make the markers of a lever
/// that spans few rows share one instant and hide the shutter's skew from the tracks: the
/// readout the patterns' deformation asks for (`readout`) on the bench 0.85 m away, lossless,
/// 3.43 ms of 3.50 with bands of 1 or 4 rows, 2.4 ms with 30 bands of 16 rows.
const READOUT_BAND_ROWS: usize = 4;

/// A marker's grey level before lighting (bright spots of the nuisances are as bright).
const MARKER_GREY: f64 = 235.0;

/// A sticker's colour of hue `hue_deg` (degrees): saturation 0.8 and value 0.85, as a matt
/// printed sticker under the bench's lamp, [red, green, blue] levels.
fn sticker_rgb(hue_deg: f64) -> [f64; 3] {
    let (s, v) = (0.8, 0.85 * 255.0);
    let h = hue_deg.rem_euclid(360.0) / 60.0;
    let f = |n: f64| {
        let k = (n + h).rem_euclid(6.0);
        v - v * s * k.min(4.0 - k).clamp(0.0, 1.0)
    };
    [f(5.0), f(3.0), f(1.0)]
}

/// A dark marker's grey level (a black target printed on the lever).
const DARK_MARKER_GREY: f64 = 30.0;

/// The shapes of body `b`, `pt` placing its points (relative to the centroid) in the bench.
fn body_shapes(
    m: &Mechanism,
    b: usize,
    pt: &impl Fn(usize, Vector2<f64>) -> [f64; 2],
) -> Vec<Shape> {
    let body = &m.bodies[b];
    let pinned = pinned_to_ground(m, b);
    let sliding = m
        .joints
        .iter()
        .any(|j| matches!(&j.kind, JointKind::Slide { body, .. } if *body == b));
    let has_markers = m.markers.iter().any(|mk| mk.body == b);
    let pts: Vec<[f64; 2]> = body
        .points
        .iter()
        .filter(|(n, _)| !m.markers.iter().any(|mk| &mk.name == *n))
        .map(|(_, p)| pt(b, p - body.centroid))
        .collect();
    if pinned && !has_markers {
        let c = pt(
            b,
            -body.centroid + body.points.values().next().copied().unwrap_or_default(),
        );
        return pinned_disc(c, &pts);
    }
    if sliding {
        let g = pt(b, Vector2::zeros());
        return vec![Shape::Bar {
            a: [g[0] - 0.03, g[1]],
            b: [g[0] + 0.03, g[1]],
            half_width: 0.012,
            grey: 120.0,
        }];
    }
    let (hw, grey) = if has_markers {
        (0.0125, 150.0)
    } else {
        (0.01, 110.0)
    };
    let mut shapes: Vec<Shape> = pts
        .windows(2)
        .map(|w| Shape::Bar {
            a: w[0],
            b: w[1],
            half_width: hw,
            grey,
        })
        .collect();
    let g = pt(b, Vector2::zeros());
    if pts.iter().all(|p| (p[0] - g[0]).hypot(p[1] - g[1]) > 0.03) {
        shapes.push(Shape::Disc {
            c: g,
            r: 0.025,
            grey: 55.0,
        });
    }
    shapes
}

/// Whether body `b` turns about a pin in the ground (a revolute joint between them).
fn pinned_to_ground(m: &Mechanism, b: usize) -> bool {
    m.joints.iter().any(|j| {
        matches!(&j.kind, JointKind::Revolute { a, b: bb }
            if (a.body == BodyRef::Ground && bb.body == BodyRef::Body(b))
                || (bb.body == BodyRef::Ground && a.body == BodyRef::Body(b)))
    })
}

/// A body pinned to the ground drawn as a disc about the pin `c` reaching 25 mm beyond its
/// farthest point, with a dark dot at each of its points `pts` (m, bench frame).
fn pinned_disc(c: [f64; 2], pts: &[[f64; 2]]) -> Vec<Shape> {
    let r = pts
        .iter()
        .map(|p| (p[0] - c[0]).hypot(p[1] - c[1]))
        .fold(0.0, f64::max)
        + 0.025;
    let mut shapes = vec![Shape::Disc { c, r, grey: 70.0 }];
    for p in pts {
        shapes.push(Shape::Disc {
            c: *p,
            r: 0.008,
            grey: 40.0,
        });
    }
    shapes
}

fn imwrite(path: &Path, img: &opencv::core::Mat) -> Result<(), PipelineError> {
    let ok = opencv::imgcodecs::imwrite(path.as_os_str(), img, &opencv::core::Vector::new())
        .map_err(|e| PipelineError::Io {
            path: path.display().to_string(),
            reason: e.message,
        })?;
    if !ok {
        return Err(PipelineError::Io {
            path: path.display().to_string(),
            reason: "the image could not be written".into(),
        });
    }
    Ok(())
}

/// Samples of the simulated motion per video frame: fine enough to place the exposure's instants
/// by linear interpolation.
const SAMPLES_PER_FRAME: usize = 20;

/// The simulated motion at `rate` samples per second, interpolated linearly between samples.
struct Motion {
    sim: flexbench_mechanism::simulate::Simulation,
    rate: f64,
}

impl Motion {
    /// The coordinates q at time `t` (s from the first sample), clamped to the simulation.
    fn at(&self, t: f64) -> DVector<f64> {
        let s = &self.sim.samples;
        let x = (t * self.rate).clamp(0.0, (s.len() - 1) as f64);
        let i = (x.floor() as usize).min(s.len() - 2);
        let f = x - i as f64;
        &s[i].q * (1.0 - f) + &s[i + 1].q * f
    }
}

/// Render `mech` as `spec` films it into `out`.
pub fn render(
    mech: &Mechanism,
    spec: &RenderSpec,
    out: &Path,
    mut progress: impl FnMut(&str, f64),
) -> Result<RenderSummary, PipelineError> {
    let codec = spec.codec().map_err(PipelineError::Input)?;
    // The spec checked before anything is simulated or written.
    let spots = spec.check_against(mech).map_err(PipelineError::Input)?;
    let cam = spec.camera();
    let look = Look {
        background: spec.background_rgb.map_or(spec.background, luminance),
        background_rgb: spec.background_rgb,
        lighting: spec.lighting,
        noise: spec.noise,
        gain: 1.0,
    };
    let rate = spec.fps * SAMPLES_PER_FRAME as f64;
    progress("simulate", 0.0);
    let sim = mech.simulate(
        &SimConfig {
            duration: spec.duration + 2.0 / spec.fps,
            rate,
            settle: spec.settle,
            ..Default::default()
        },
        &mut |f| progress("simulate", f),
    )?;
    let motion = Motion { sim, rate };
    let frames = (spec.duration * spec.fps).round() as usize;
    if let Some(d) = spec.timing.dropped.iter().find(|d| **d >= frames) {
        return Err(PipelineError::Input(format!(
            "[timing] dropped: frame {d} is beyond the recording's {frames} frames (0 to {})",
            frames.saturating_sub(1)
        )));
    }
    ensure_dir(out)?;
    ensure_dir(&out.join("views"))?;
    ensure_dir(&out.join("truth"))?;
    let mut rng = opencv::core::RNG::new(spec.seed).map_err(|e| PipelineError::Input(e.message))?;
    let mut files = calibration_images(spec, &cam, &look, &mut rng, out, &mut progress)?;
    let centre = -(cam.r.transpose() * cam.t);
    if let Some(mk) = mech.markers.iter().find(|mk| mk.depth >= centre.z.abs()) {
        return Err(PipelineError::Input(format!(
            "the marker '{}' at {} m in front of the bench plane would stand at or behind the camera ({:.3} m from the plane): give its depth in metres towards the camera",
            mk.name,
            mk.depth,
            centre.z.abs()
        )));
    }
    let film = Film {
        mech,
        spec,
        centre,
        cam: &cam,
        look: &look,
        motion: &motion,
        spots,
        markers: MarkerDrawing::of(mech, spec.marker_radius, spec.fiducial_side)?,
    };
    let kept = spec.timing.kept(frames);
    let (video, rows) = film.shoot(codec, &kept, &mut rng, out, &mut progress)?;
    files.push(video.clone());
    files.extend(truth_tables(mech, &motion.sim, &kept, spec, rows, out)?);
    Ok(RenderSummary {
        video,
        frames: kept.len(),
        files,
    })
}

/// A ChArUco board as rendered: the board, its drawing (image and map from board coordinates
/// to its pixels), and the plane view's band hidden by the lever (board y, m).
type CharucoLook = (
    flexbench_vision::calibrate::Charuco,
    (opencv::core::Mat, [f64; 6]),
    Option<[f64; 2]>,
);

/// The board of the calibration and plane views, and its renderer.
struct BoardViews {
    /// The board's inner corners as a chessboard (the poses are made for it: its first inner
    /// corner at the origin).
    inner: Board,
    /// The ChArUco board, its drawing, and the plane view's hidden band, when it is one.
    charuco: Option<CharucoLook>,
    renderer: BoardRenderer,
}

impl BoardViews {
    fn new(spec: &RenderSpec, intr: &Intrinsics) -> Result<BoardViews, PipelineError> {
        let renderer = BoardRenderer::new(intr);
        let Some(c) = &spec.charuco else {
            let inner = Board {
                cols: spec.board[0],
                rows: spec.board[1],
                square: spec.square,
            };
            return Ok(BoardViews {
                inner,
                charuco: None,
                renderer,
            });
        };
        let board = c.board().map_err(PipelineError::Input)?;
        let inner = Board {
            cols: board.squares_x - 1,
            rows: board.squares_y - 1,
            square: board.square,
        };
        let drawing = board.drawing(64).map_err(PipelineError::Vision)?;
        Ok(BoardViews {
            inner,
            charuco: Some((board, drawing, c.hidden)),
            renderer,
        })
    }

    /// The board at pose (R, t) of its first inner corner; the plane view's band hidden when
    /// `plane` (a ChArUco board's).
    fn render(
        &self,
        (r, t): (&nalgebra::Matrix3<f64>, &nalgebra::Vector3<f64>),
        look: &Look,
        plane: bool,
        rng: &mut opencv::core::RNG,
    ) -> Result<opencv::core::Mat, PipelineError> {
        let vision = PipelineError::Vision;
        let Some((board, drawing, hidden)) = &self.charuco else {
            return self
                .renderer
                .render(&self.inner, r, t, look, rng)
                .map_err(vision);
        };
        // The ChArUco frame's origin is one square before the first inner corner.
        let sq = board.square;
        let t = t - r * nalgebra::Vector3::new(sq, sq, 0.0);
        let band = hidden.filter(|_| plane);
        let hide = move |_x: f64, y: f64| band.is_some_and(|[a, b]| y >= a && y <= b);
        let hide: Option<&dyn Fn(f64, f64) -> bool> = band.map(|_| &hide as _);
        self.renderer
            .render_charuco((board, drawing), (r, &t), look, hide, rng)
            .map_err(vision)
    }
}

/// The standard deviation of the rendered clicks, px per coordinate: the true pixels rounded to
/// 0.1 px, an error uniform over 0.1 px.
pub const RENDER_CLICK_SIGMA_PX: f64 = 0.028_867_513_459_481_29;

/// The calibration views, the plane view, the clicks of A and the horizontal in it (to 0.1 px,
/// as a user clicks them) and the true camera (`truth/camera.yaml`); the files written.
fn calibration_images(
    spec: &RenderSpec,
    cam: &CameraTruth,
    look: &Look,
    rng: &mut opencv::core::RNG,
    out: &Path,
    progress: &mut impl FnMut(&str, f64),
) -> Result<Vec<PathBuf>, PipelineError> {
    let vision = PipelineError::Vision;
    let mut files = Vec::new();
    let intr = cam.intrinsics;
    let views = BoardViews::new(spec, &intr)?;
    let board = views.inner;
    let mut poses = board_poses(&intr, &board, spec.views, rng).map_err(vision)?;
    if spec.partial_views > 0 {
        poses.extend(
            flexbench_vision::render::partial_board_poses(&intr, &board, spec.partial_views, rng)
                .map_err(vision)?,
        );
    }
    for (k, (r, t)) in poses.iter().enumerate() {
        progress("calibration views", k as f64 / poses.len() as f64);
        let p = out.join("views").join(format!("view{k:02}.png"));
        imwrite(&p, &views.render((r, t), look, false, rng)?)?;
        files.push(p);
    }
    let flip = nalgebra::Matrix3::new(1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0);
    let r = cam.r * flip;
    let t =
        cam.r * nalgebra::Vector3::new(spec.plane_board_at[0], spec.plane_board_at[1], 0.0) + cam.t;
    let plane_view = out.join("plane-view.png");
    imwrite(&plane_view, &views.render((&r, &t), look, true, rng)?)?;
    files.push(plane_view);
    let round = |x: f64| (x * 10.0).round() / 10.0;
    let a = cam.project(0.0, 0.0);
    let h = cam.project(spec.horizontal_at, 0.0);
    let clicks = out.join("clicks.toml");
    let text = format!(
        "# Pixels of the bench origin A and of a point on the horizontal through A, towards the pendulum,\n# in plane-view.png, as a user clicks them (to 0.1 px).\norigin = [{}, {}]\nhorizontal = [{}, {}]\n# Their standard deviation per coordinate, px: the true pixels rounded to 0.1 px\n# (uniform over 0.1 px: 0.1 / sqrt(12)).\nclick_sigma_px = {:.4}\n",
        round(a.0), round(a.1), round(h.0), round(h.1), RENDER_CLICK_SIGMA_PX
    );
    flexbench_contracts::atomic::write_bytes(&clicks, text.as_bytes()).map_err(|e| {
        PipelineError::Io {
            path: clicks.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    files.push(clicks);
    let truth_cam = cam.calibration();
    let truth_cam_path = out.join("truth").join("camera.yaml");
    truth_cam.write(&truth_cam_path).map_err(vision)?;
    files.push(truth_cam_path);
    Ok(files)
}

/// What the video is made of: the mechanism, the spec, the camera, the look and the motion.
struct Film<'a> {
    mech: &'a Mechanism,
    spec: &'a RenderSpec,
    /// The camera's centre in the bench frame (m), for markers off the plane.
    centre: Vector3<f64>,
    cam: &'a CameraTruth,
    look: &'a Look,
    motion: &'a Motion,
    /// The screws of the nuisances: body, place relative to its centroid, radius (m).
    spots: Vec<(usize, Vector2<f64>, f64)>,
    /// How the markers are drawn.
    markers: MarkerDrawing,
}

impl Film<'_> {
    /// The video (written to a temporary file, then renamed) and the markers' true tracks at
    /// its frames (`kept`: the camera's frames it holds). Frame k shows the motion at its capture
    /// time (k / fps, or the `[timing]` clock's) plus one frame, each exposure blurred over
    /// `blur_samples` instants; occluded markers are left out of their frames. A `[timing]`
    /// clock's video is written lossless, then encoded by ffmpeg with its frames' times.
    fn shoot(
        &self,
        codec: Codec,
        kept: &[usize],
        rng: &mut opencv::core::RNG,
        out: &Path,
        progress: &mut impl FnMut(&str, f64),
    ) -> Result<(PathBuf, Vec<flexbench_contracts::TrackRow>), PipelineError> {
        let (spec, vision) = (self.spec, PipelineError::Vision);
        let intr = self.cam.intrinsics;
        let video = out.join(format!("video.{}", codec.extension()));
        let tmp = flexbench_contracts::atomic::temporary_path(&video);
        // Written by OpenCV's writer directly, or lossless first and encoded by ffmpeg (frame
        // times of their own, a bit rate).
        let plain = spec.timing.is_plain() && spec.bitrate_mbps.is_none();
        let lossless = out.join(".video-lossless.mkv");
        let (first, first_codec) = match plain {
            true => (&tmp, codec),
            false => (&lossless, Codec::Ffv1),
        };
        let writer = VideoOut::create(first, first_codec, spec.fps, intr.width, intr.height)
            .map_err(vision)?;
        let rows = self
            .frames(writer, kept, rng, progress)
            .and_then(|rows| {
                if !plain {
                    let t = &spec.timing;
                    let capture = t.capture_metadata.then_some(spec.fps);
                    flexbench_vision::render::encode_with_times(
                        &lossless,
                        &tmp,
                        &t.pts_expression(spec.fps),
                        capture,
                        spec.bitrate_mbps,
                    )
                    .map_err(vision)?;
                }
                Ok(rows)
            })
            .inspect_err(|_| {
                // A failed rendering leaves no partial video behind.
                let _ = std::fs::remove_file(&tmp);
            });
        let _ = std::fs::remove_file(&lossless);
        let rows = rows?;
        std::fs::rename(&tmp, &video).map_err(|e| PipelineError::Io {
            path: video.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok((video, rows))
    }

    /// The video's frames (the camera's frames `kept`) written by `writer` (then closed), and
    /// the markers' true tracks at them: row frame is the video's frame, t its capture time.
    fn frames(
        &self,
        mut writer: VideoOut,
        kept: &[usize],
        rng: &mut opencv::core::RNG,
        progress: &mut impl FnMut(&str, f64),
    ) -> Result<Vec<flexbench_contracts::TrackRow>, PipelineError> {
        let (mech, spec, vision) = (self.mech, self.spec, PipelineError::Vision);
        let map = PlaneMap::new(self.cam, self.look).map_err(vision)?;
        let mut rows = Vec::new();
        let frames = kept.len();
        for (n, &k) in kept.iter().enumerate() {
            let tk = capture_time(spec, k);
            let nz = &spec.nuisances;
            let look = Look {
                gain: 1.0 + nz.flicker * (std::f64::consts::TAU * nz.flicker_hz * tk).sin(),
                ..*self.look
            };
            let img = match spec.readout > 0.0 {
                false => map.render(&self.exposure(k, tk), &look, rng),
                true => map.render_bands(&self.bands(k, tk), &look, rng),
            }
            .map_err(vision)?;
            writer.write(&img).map_err(vision)?;
            let q = self.motion.at(tk + 1.0 / spec.fps);
            for mk in &mech.markers {
                let p = body_point(&q, mk.body, mk.local);
                let seen = seen_at(&self.centre, [p.x, p.y], mk.depth);
                let (u, v) = self.cam.project(seen[0], seen[1]);
                rows.push(flexbench_contracts::TrackRow {
                    frame: n as i64,
                    t: tk,
                    marker: mk.name.clone(),
                    u: Some(u),
                    v: Some(v),
                    x: Some(p.x),
                    y: Some(p.y),
                    sigma_px: None,
                    late: None,
                });
            }
            if n % 8 == 0 {
                progress("video", n as f64 / frames as f64);
            }
        }
        writer.finish().map_err(vision)?;
        Ok(rows)
    }

    /// A rolling shutter's frame `k` (at `tk`, s): its rows in bands of [`READOUT_BAND_ROWS`], each
    /// band's scenes over the exposure of its middle row, `readout` v / height later.
    fn bands(&self, k: usize, tk: f64) -> Vec<(usize, usize, Vec<Vec<Shape>>)> {
        let h = self.spec.intrinsics.height as usize;
        (0..h.div_ceil(READOUT_BAND_ROWS))
            .map(|b| {
                let (r0, r1) = (b * READOUT_BAND_ROWS, ((b + 1) * READOUT_BAND_ROWS).min(h));
                let mid = 0.5 * (r0 + r1) as f64;
                let delay = self.spec.readout * mid / h as f64;
                (r0, r1, self.exposure(k, tk + delay))
            })
            .collect()
    }

    /// The scenes of frame `k` (at `tk`, s) over its exposure, without its occluded markers.
    fn exposure(&self, k: usize, tk: f64) -> Vec<Vec<Shape>> {
        let spec = self.spec;
        let n = spec.blur_samples;
        (0..n)
            .map(|j| {
                let dt = if n > 1 {
                    (j as f64 / (n - 1) as f64 - 0.5) * spec.exposure
                } else {
                    0.0
                };
                let q = self.motion.at(tk + dt + 1.0 / spec.fps);
                let extras = self.extras(k, &q);
                scene(self.mech, &q, &self.markers, &extras, &self.centre)
            })
            .collect()
    }

    /// What frame `k` adds at configuration `q`: its occluded markers and the nuisances.
    fn extras(&self, k: usize, q: &DVector<f64>) -> Extras {
        let (spec, mech) = (self.spec, self.mech);
        let nz = &spec.nuisances;
        let r = spec.marker_radius;
        let during = |f: [usize; 2]| k >= f[0] && k <= f[1];
        let marker_at = |name: &str| {
            let mk = mech.markers.iter().find(|m| m.name == name)?;
            let p = body_point(q, mk.body, mk.local);
            Some([p.x, p.y])
        };
        let mut top = Vec::new();
        for g in nz.glints.iter().filter(|g| during(g.frames)) {
            let Some(c) = marker_at(&g.marker) else {
                continue;
            };
            // Across the marker along +Y, from -2.5 r to +2.5 r over the frames.
            let s = (k - g.frames[0]) as f64 + 0.5;
            let y = (s / (g.frames[1] - g.frames[0] + 1) as f64 - 0.5) * 5.0 * r;
            top.push(Shape::Disc {
                c: [c[0], c[1] + y],
                r: 0.6 * r,
                grey: 255.0,
            });
        }
        for h in nz.half_hidden.iter().filter(|h| during(h.frames)) {
            let Some(c) = marker_at(&h.marker) else {
                continue;
            };
            top.push(Shape::Disc {
                c: [c[0], c[1] + 3.0 * r],
                r: 3.0 * r,
                grey: 35.0,
            });
        }
        Extras {
            hidden: spec
                .occlusion
                .iter()
                .filter(|o| during(o.frames))
                .filter_map(|o| mech.markers.iter().position(|m| m.name == o.marker))
                .collect(),
            ground: nz
                .bolts
                .iter()
                .map(|&c| Shape::Disc {
                    c,
                    r,
                    grey: MARKER_GREY,
                })
                .chain(nz.stickers.iter().map(|s| Shape::Sticker {
                    c: s.at,
                    r,
                    rgb: s.rgb,
                }))
                .collect(),
            spots: self.spots.clone(),
            top,
        }
    }
}

/// The nuisances as `render.json` states them (none: empty, and left out, so that a recording
/// without them is described as before).
fn nuisances_json(nz: &Nuisances) -> serde_json::Map<String, serde_json::Value> {
    let ranges = |v: &[MarkerNuisance]| {
        v.iter()
            .map(|g| json!({"marker": g.marker, "frames": g.frames}))
            .collect::<Vec<_>>()
    };
    let mut out = serde_json::Map::new();
    if nz.flicker > 0.0 {
        out.insert("flicker".into(), json!(nz.flicker));
        out.insert("flicker_hz".into(), json!(nz.flicker_hz));
    }
    for (key, value, any) in [
        ("bolts", json!(nz.bolts), !nz.bolts.is_empty()),
        (
            "stickers",
            json!(nz
                .stickers
                .iter()
                .map(|s| json!({"at": s.at, "rgb": s.rgb}))
                .collect::<Vec<_>>()),
            !nz.stickers.is_empty(),
        ),
        (
            "screws",
            json!(nz
                .screws
                .iter()
                .map(|s| json!({"body": s.body, "at": s.at}))
                .collect::<Vec<_>>()),
            !nz.screws.is_empty(),
        ),
        ("glints", json!(ranges(&nz.glints)), !nz.glints.is_empty()),
        (
            "half_hidden",
            json!(ranges(&nz.half_hidden)),
            !nz.half_hidden.is_empty(),
        ),
    ] {
        if any {
            out.insert(key.into(), value);
        }
    }
    out
}

/// Capture time of the camera's frame `k`, s from the recording's start (the simulation's
/// samples are exact at it: a whole number of steps).
fn capture_time(spec: &RenderSpec, k: usize) -> f64 {
    spec.timing.slot(k) as f64 / (spec.fps * SAMPLES_PER_FRAME as f64)
}

/// The simulation's own tables at the frames' instants (exact samples: the rate is a multiple
/// of the frame rate; forces from the multipliers), the true tracks and `render.json`, in
/// `out/truth`; the files written.
fn truth_tables(
    mech: &Mechanism,
    sim: &flexbench_mechanism::simulate::Simulation,
    kept: &[usize],
    spec: &RenderSpec,
    rows: Vec<flexbench_contracts::TrackRow>,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let truth = out.join("truth");
    let frames = kept.len();
    let at: Vec<&flexbench_mechanism::simulate::Sample> = kept
        .iter()
        .map(|&k| &sim.samples[(spec.timing.slot(k) + SAMPLES_PER_FRAME as i64) as usize])
        .collect();
    let times: Vec<f64> = kept.iter().map(|&k| capture_time(spec, k)).collect();
    let states: Vec<_> = at
        .iter()
        .zip(&times)
        .map(|(s, &t)| (t, &s.q, &s.qd, &s.qdd))
        .collect();
    let forces_rows: Vec<Option<Vec<f64>>> = at
        .iter()
        .map(|s| Some(mech.forces_from_multipliers(s)))
        .collect();
    let mut files = Vec::new();
    for (table, stem) in [
        (mech.markers_table(&states), "markers"),
        (mech.bodies_table(&states), "bodies"),
        (mech.forces_table(&times, &forces_rows), "forces"),
        (flexbench_contracts::Tracks::new(rows)?.to_table(), "tracks"),
    ] {
        files.extend(flexbench_tables::write_table(&table, &truth, stem)?);
    }
    let mut described = json!({
        "mechanism": mech.name, "frames": frames, "fps": spec.fps, "exposure_s": spec.exposure, "blur_samples": spec.blur_samples,
        "noise": spec.noise, "lighting": spec.lighting, "codec": spec.codec, "seed": spec.seed,
        "occlusion": spec.occlusion.iter().map(|o| json!({"marker": o.marker, "frames": o.frames})).collect::<Vec<_>>(),
        "note": "frame k shows the motion at t = k / fps after the settling time plus one frame (or at its capture time, the truth tables' t, with [timing])",
    });
    if let (Some(obj), false) = (described.as_object_mut(), spec.timing.is_plain()) {
        let t = &spec.timing;
        obj.insert(
            "timing".into(),
            json!({"jitter": t.jitter, "dropped": t.dropped,
            "playback_fps": t.playback_fps, "capture_metadata": t.capture_metadata}),
        );
    }
    let nuisances = nuisances_json(&spec.nuisances);
    if let (Some(obj), false) = (described.as_object_mut(), nuisances.is_empty()) {
        obj.insert("nuisances".into(), serde_json::Value::Object(nuisances));
    }
    files.push(write_json(&truth.join("render.json"), &described)?);
    Ok(files)
}

#[cfg(test)]
mod sticker_tests {
    use super::sticker_rgb;

    #[test]
    fn a_sticker_has_the_hue_it_is_given() {
        // OpenCV's own conversion gives the hue back (its 8-bit hue is half the degrees).
        for hue in [0.0, 30.0, 120.0, 200.0, 300.0] {
            let [r, g, b] = sticker_rgb(hue);
            let px = opencv::core::Mat::from_slice_2d(&[[b as u8, g as u8, r as u8]]).unwrap();
            let px = px.reshape(3, 1).unwrap().try_clone().unwrap();
            let mut hsv = opencv::core::Mat::default();
            opencv::imgproc::cvt_color(&px, &mut hsv, opencv::imgproc::COLOR_BGR2HSV, 0).unwrap();
            use opencv::prelude::MatTraitConst;
            let h = hsv.at_2d::<opencv::core::Vec3b>(0, 0).unwrap()[0] as f64 * 2.0;
            let d = (h - hue).rem_euclid(360.0);
            assert!(d.min(360.0 - d) <= 2.0, "hue {hue}: {h}");
        }
    }
}
