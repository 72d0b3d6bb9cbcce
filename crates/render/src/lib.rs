//! The rendered truth of a mechanism filmed by a known camera (`flexbench render`): the video
//! of the markers on the moving bench, chessboard views for calibration, one board view lying in
//! the lever's plane with the pixels of A and of the horizontal (as a user would click them),
//! and the truth (tracks with u, v and x, y; the camera; the simulation's tables).
//!
//! The camera file is [`RenderSpec`] (`spec`), the scene as the camera sees it [`MarkerDrawing`]
//! (`scene`); the imaging itself (the board and plane renderers, the encoder) is
//! `flexbench_vision::render`'s. Every test of tracking, calibration and timing on renders
//! films its bench here.

#![warn(missing_docs)]

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

mod spec;
pub use spec::*;
mod scene;
pub use scene::*;

/// Errors of the render: the camera file refused, a step of the imaging failed, a file not
/// written. Each keeps its cause.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum RenderError {
    /// The camera file (or its use with this mechanism) asks for what cannot be filmed: the key
    /// and the fix, in words.
    #[error("{0}")]
    Spec(String),
    /// The camera file cannot be read as TOML: where, and the parser's reason.
    #[error("{what}: cannot be read")]
    Toml {
        what: String,
        #[source]
        source: toml::de::Error,
    },
    /// A file or folder could not be read, written or made: what was tried; the system's (or
    /// OpenCV's) own error is the cause.
    #[error(transparent)]
    Io(#[from] flexbench_contracts::IoFailure),
    /// OpenCV's random generator (the noise, the boards' poses) could not be seeded.
    #[error("OpenCV's random generator could not be seeded")]
    Random(#[source] opencv::Error),
    /// The camera, a board or the video could not be drawn or encoded.
    #[error(transparent)]
    Vision(#[from] flexbench_vision::VisionError),
    /// The mechanism could not be simulated or tabled.
    #[error(transparent)]
    Mechanism(#[from] flexbench_mechanism::MechanismError),
    /// A truth table broke its contract.
    #[error(transparent)]
    Contract(#[from] flexbench_contracts::ContractError),
    /// A truth table could not be written.
    #[error(transparent)]
    Table(#[from] flexbench_tables::TableError),
}

impl RenderError {
    /// `path` could not `doing` ("be read", "be written"...): `e` is why.
    pub fn io(
        path: &Path,
        doing: impl Into<String>,
        e: impl Into<flexbench_contracts::Cause>,
    ) -> RenderError {
        RenderError::Io(flexbench_contracts::IoFailure::new(path, doing, e))
    }
}

/// Create the output folder (and parents) or say why not.
fn ensure_dir(dir: &Path) -> Result<(), RenderError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        RenderError::io(
            dir,
            "create the output directory; choose a writable --out",
            e,
        )
    })
}

/// Write a JSON value atomically, its keys sorted.
fn write_json(path: &Path, value: &serde_json::Value) -> Result<PathBuf, RenderError> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| RenderError::io(path, "be written", e))?;
    flexbench_contracts::atomic::write_bytes(path, text.as_bytes())
        .map_err(|e| RenderError::io(path, "be written", e))?;
    Ok(path.to_path_buf())
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

fn imwrite(path: &Path, img: &opencv::core::Mat) -> Result<(), RenderError> {
    let ok = opencv::imgcodecs::imwrite(path.as_os_str(), img, &opencv::core::Vector::new())
        .map_err(|e| RenderError::io(path, "be written", e))?;
    if !ok {
        return Err(RenderError::io(
            path,
            "be written",
            "OpenCV's image writer refused the image",
        ));
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

/// Render `mech` as `spec` films it into `out`; `progress` gets what is being done (simulate,
/// views, film) and the fraction of it done (0..1).
pub fn render(
    mech: &Mechanism,
    spec: &RenderSpec,
    out: &Path,
    mut progress: impl FnMut(&str, f64),
) -> Result<RenderSummary, RenderError> {
    let codec = spec.codec().map_err(RenderError::Spec)?;
    // The spec checked before anything is simulated or written.
    let spots = spec.check_against(mech).map_err(RenderError::Spec)?;
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
        return Err(RenderError::Spec(format!(
            "[timing] dropped: frame {d} is beyond the recording's {frames} frames (0 to {})",
            frames.saturating_sub(1)
        )));
    }
    ensure_dir(out)?;
    ensure_dir(&out.join("views"))?;
    ensure_dir(&out.join("truth"))?;
    let mut rng = opencv::core::RNG::new(spec.seed).map_err(RenderError::Random)?;
    let mut files = calibration_images(spec, &cam, &look, &mut rng, out, &mut progress)?;
    let centre = -(cam.r.transpose() * cam.t);
    if let Some(mk) = mech.markers.iter().find(|mk| mk.depth >= centre.z.abs()) {
        return Err(RenderError::Spec(format!(
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
    fn new(spec: &RenderSpec, intr: &Intrinsics) -> Result<BoardViews, RenderError> {
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
        let board = c.board().map_err(RenderError::Spec)?;
        let inner = Board {
            cols: board.squares_x - 1,
            rows: board.squares_y - 1,
            square: board.square,
        };
        let drawing = board.drawing(64).map_err(RenderError::Vision)?;
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
    ) -> Result<opencv::core::Mat, RenderError> {
        let vision = RenderError::Vision;
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
) -> Result<Vec<PathBuf>, RenderError> {
    let vision = RenderError::Vision;
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
    flexbench_contracts::atomic::write_bytes(&clicks, text.as_bytes())
        .map_err(|e| RenderError::io(&clicks, "be written", e))?;
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
    ) -> Result<(PathBuf, Vec<flexbench_contracts::TrackRow>), RenderError> {
        let (spec, vision) = (self.spec, RenderError::Vision);
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
        std::fs::rename(&tmp, &video).map_err(|e| RenderError::io(&video, "be written", e))?;
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
    ) -> Result<Vec<flexbench_contracts::TrackRow>, RenderError> {
        let (mech, spec, vision) = (self.mech, self.spec, RenderError::Vision);
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
) -> Result<Vec<PathBuf>, RenderError> {
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
        (mech.markers_table(&states)?, "markers"),
        (mech.bodies_table(&states)?, "bodies"),
        (mech.forces_table(&times, &forces_rows)?, "forces"),
        (
            flexbench_contracts::Tracks::new(rows)?.to_table()?,
            "tracks",
        ),
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
