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
    board_poses, BoardRenderer, CameraTruth, Codec, Look, PlaneMap, Shape, VideoOut,
};
use flexbench_vision::{Calibration, Intrinsics};
use nalgebra::{DVector, Vector2};
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

/// A marker hidden for a range of frames.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Occlusion {
    /// Marker name.
    pub marker: String,
    /// First and last frame hidden (inclusive).
    pub frames: [usize; 2],
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
    /// Sensor noise, grey levels.
    #[serde(default = "d_noise")]
    pub noise: f64,
    /// Uneven lighting's relative amplitude.
    #[serde(default = "d_lighting")]
    pub lighting: f64,
    /// Background grey level.
    #[serde(default = "d_background")]
    pub background: f64,
    /// Marker disc radius, m.
    #[serde(default = "d_marker_radius")]
    pub marker_radius: f64,
    /// Video codec: ffv1 (lossless, .mkv), mjpg (.avi), h264 (.mp4).
    #[serde(default = "d_codec")]
    pub codec: String,
    /// Seed of the noise.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// Chessboard inner corners [cols, rows].
    #[serde(default = "d_board")]
    pub board: [i32; 2],
    /// Chessboard square, m.
    #[serde(default = "d_square")]
    pub square: f64,
    /// Number of calibration views.
    #[serde(default = "d_views")]
    pub views: usize,
    /// Bench position of the plane view board's first inner corner, m.
    #[serde(default = "d_plane_board_at")]
    pub plane_board_at: [f64; 2],
    /// The second clicked point is (this, 0) in the bench frame, m.
    #[serde(default = "d_horizontal_at")]
    pub horizontal_at: f64,
    /// Markers hidden in chosen frames.
    #[serde(default)]
    pub occlusion: Vec<Occlusion>,
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
        let i = &self.intrinsics;
        pos(i.width as f64, "intrinsics.width")?;
        pos(i.height as f64, "intrinsics.height")?;
        pos(i.fx, "intrinsics.fx")?;
        pos(i.fy, "intrinsics.fy")?;
        pos(self.distance, "distance")?;
        pos(self.fps, "fps")?;
        pos(self.duration, "duration")?;
        pos(self.marker_radius, "marker_radius")?;
        if self.blur_samples == 0 {
            return Err("key 'blur_samples': at least 1".into());
        }
        self.codec()?;
        Ok(())
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

/// The scene of the mechanism at configuration q: every body drawn around its points (a disc
/// for a body turning about a ground pin, like the crank; bars between its points otherwise; the
/// slide as a block), the markers as bright discs on top, occluders over hidden markers.
pub fn scene(m: &Mechanism, q: &DVector<f64>, marker_radius: f64, hidden: &[usize]) -> Vec<Shape> {
    let mut back = Vec::new();
    let mut front = Vec::new();
    let pt = |b: usize, s: Vector2<f64>| {
        let p = body_point(q, b, s);
        [p.x, p.y]
    };
    for (b, body) in m.bodies.iter().enumerate() {
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
            back.extend(pinned_disc(c, &pts));
        } else if sliding {
            let g = pt(b, Vector2::zeros());
            back.push(Shape::Bar {
                a: [g[0] - 0.03, g[1]],
                b: [g[0] + 0.03, g[1]],
                half_width: 0.012,
                grey: 120.0,
            });
        } else {
            let (hw, grey, layer) = if has_markers {
                (0.0125, 150.0, &mut front)
            } else {
                (0.01, 110.0, &mut back)
            };
            for w in pts.windows(2) {
                layer.push(Shape::Bar {
                    a: w[0],
                    b: w[1],
                    half_width: hw,
                    grey,
                });
            }
            let g = pt(b, Vector2::zeros());
            if pts.iter().all(|p| (p[0] - g[0]).hypot(p[1] - g[1]) > 0.03) {
                layer.push(Shape::Disc {
                    c: g,
                    r: 0.025,
                    grey: 55.0,
                });
            }
        }
    }
    back.extend(front);
    for (k, mk) in m.markers.iter().enumerate() {
        back.push(Shape::Disc {
            c: pt(mk.body, mk.local),
            r: marker_radius,
            grey: 235.0,
        });
        if hidden.contains(&k) {
            back.push(Shape::Disc {
                c: pt(mk.body, mk.local),
                r: marker_radius * 2.0,
                grey: 35.0,
            });
        }
    }
    back
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
    for o in &spec.occlusion {
        if !mech.markers.iter().any(|m| m.name == o.marker) {
            return Err(PipelineError::Input(format!(
                "occlusion of '{}': the mechanism has no such marker",
                o.marker
            )));
        }
    }
    let cam = spec.camera();
    let look = Look {
        background: spec.background,
        lighting: spec.lighting,
        noise: spec.noise,
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
    ensure_dir(out)?;
    ensure_dir(&out.join("views"))?;
    ensure_dir(&out.join("truth"))?;
    let mut rng = opencv::core::RNG::new(spec.seed).map_err(|e| PipelineError::Input(e.message))?;
    let mut files = calibration_images(spec, &cam, &look, &mut rng, out, &mut progress)?;
    let film = Film {
        mech,
        spec,
        cam: &cam,
        look: &look,
        motion: &motion,
    };
    let (video, rows) = film.shoot(codec, frames, &mut rng, out, &mut progress)?;
    files.push(video.clone());
    files.extend(truth_tables(mech, &motion.sim, frames, spec, rows, out)?);
    Ok(RenderSummary {
        video,
        frames,
        files,
    })
}

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
    let board = Board {
        cols: spec.board[0],
        rows: spec.board[1],
        square: spec.square,
    };
    let br = BoardRenderer::new(&intr);
    for (k, (r, t)) in board_poses(&intr, &board, spec.views, rng)
        .map_err(vision)?
        .iter()
        .enumerate()
    {
        progress("calibration views", k as f64 / spec.views as f64);
        let p = out.join("views").join(format!("view{k:02}.png"));
        imwrite(&p, &br.render(&board, r, t, look, rng).map_err(vision)?)?;
        files.push(p);
    }
    let flip = nalgebra::Matrix3::new(1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0);
    let r = cam.r * flip;
    let t =
        cam.r * nalgebra::Vector3::new(spec.plane_board_at[0], spec.plane_board_at[1], 0.0) + cam.t;
    let plane_view = out.join("plane-view.png");
    imwrite(
        &plane_view,
        &br.render(&board, &r, &t, look, rng).map_err(vision)?,
    )?;
    files.push(plane_view);
    let round = |x: f64| (x * 10.0).round() / 10.0;
    let a = cam.project(0.0, 0.0);
    let h = cam.project(spec.horizontal_at, 0.0);
    let clicks = out.join("clicks.toml");
    let text = format!(
        "# Pixels of the bench origin A and of a point on the horizontal through A, towards the pendulum,\n# in plane-view.png, as a user clicks them (to 0.1 px).\norigin = [{}, {}]\nhorizontal = [{}, {}]\n",
        round(a.0), round(a.1), round(h.0), round(h.1)
    );
    flexbench_contracts::atomic::write_bytes(&clicks, text.as_bytes()).map_err(|e| {
        PipelineError::Io {
            path: clicks.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    files.push(clicks);
    let truth_cam = Calibration {
        intrinsics: intr,
        rms: 0.0,
        std_intrinsics: Vec::new(),
        per_view: Vec::new(),
        rejected: Vec::new(),
        plane: cam.plane(),
        distortion_model: None,
        corners: Vec::new(),
    };
    let truth_cam_path = out.join("truth").join("camera.yaml");
    truth_cam.write(&truth_cam_path).map_err(vision)?;
    files.push(truth_cam_path);
    Ok(files)
}

/// What the video is made of: the mechanism, the spec, the camera, the look and the motion.
struct Film<'a> {
    mech: &'a Mechanism,
    spec: &'a RenderSpec,
    cam: &'a CameraTruth,
    look: &'a Look,
    motion: &'a Motion,
}

impl Film<'_> {
    /// The video (written to a temporary file, then renamed) and the markers' true tracks at
    /// its frames. Frame k shows the motion at t = k / fps plus one frame, each exposure blurred
    /// over `blur_samples` instants; occluded markers are left out of their frames.
    fn shoot(
        &self,
        codec: Codec,
        frames: usize,
        rng: &mut opencv::core::RNG,
        out: &Path,
        progress: &mut impl FnMut(&str, f64),
    ) -> Result<(PathBuf, Vec<flexbench_contracts::TrackRow>), PipelineError> {
        let (spec, vision) = (self.spec, PipelineError::Vision);
        let intr = self.cam.intrinsics;
        let video = out.join(format!("video.{}", codec.extension()));
        let tmp = flexbench_contracts::atomic::temporary_path(&video);
        let writer =
            VideoOut::create(&tmp, codec, spec.fps, intr.width, intr.height).map_err(vision)?;
        let rows = self
            .frames(writer, frames, rng, progress)
            .inspect_err(|_| {
                // A failed rendering leaves no partial video behind.
                let _ = std::fs::remove_file(&tmp);
            })?;
        std::fs::rename(&tmp, &video).map_err(|e| PipelineError::Io {
            path: video.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok((video, rows))
    }

    /// The video's frames written by `writer` (then closed), and the markers' true tracks at
    /// them.
    fn frames(
        &self,
        mut writer: VideoOut,
        frames: usize,
        rng: &mut opencv::core::RNG,
        progress: &mut impl FnMut(&str, f64),
    ) -> Result<Vec<flexbench_contracts::TrackRow>, PipelineError> {
        let (mech, spec, vision) = (self.mech, self.spec, PipelineError::Vision);
        let map = PlaneMap::new(self.cam, self.look).map_err(vision)?;
        let mut rows = Vec::new();
        for k in 0..frames {
            let tk = k as f64 / spec.fps;
            let img = map
                .render(&self.exposure(k, tk), self.look, rng)
                .map_err(vision)?;
            writer.write(&img).map_err(vision)?;
            let q = self.motion.at(tk + 1.0 / spec.fps);
            for mk in &mech.markers {
                let p = body_point(&q, mk.body, mk.local);
                let (u, v) = self.cam.project(p.x, p.y);
                rows.push(flexbench_contracts::TrackRow {
                    frame: k as i64,
                    t: tk,
                    marker: mk.name.clone(),
                    u: Some(u),
                    v: Some(v),
                    x: Some(p.x),
                    y: Some(p.y),
                    sigma_px: None,
                });
            }
            if k % 8 == 0 {
                progress("video", k as f64 / frames as f64);
            }
        }
        writer.finish().map_err(vision)?;
        Ok(rows)
    }

    /// The scenes of frame `k` (at `tk`, s) over its exposure, without its occluded markers.
    fn exposure(&self, k: usize, tk: f64) -> Vec<Vec<Shape>> {
        let spec = self.spec;
        let hidden: Vec<usize> = spec
            .occlusion
            .iter()
            .filter(|o| k >= o.frames[0] && k <= o.frames[1])
            .filter_map(|o| self.mech.markers.iter().position(|m| m.name == o.marker))
            .collect();
        let n = spec.blur_samples;
        (0..n)
            .map(|j| {
                let dt = if n > 1 {
                    (j as f64 / (n - 1) as f64 - 0.5) * spec.exposure
                } else {
                    0.0
                };
                scene(
                    self.mech,
                    &self.motion.at(tk + dt + 1.0 / spec.fps),
                    spec.marker_radius,
                    &hidden,
                )
            })
            .collect()
    }
}

/// The simulation's own tables at the frames' instants (exact samples: the rate is a multiple
/// of the frame rate; forces from the multipliers), the true tracks and `render.json`, in
/// `out/truth`; the files written.
fn truth_tables(
    mech: &Mechanism,
    sim: &flexbench_mechanism::simulate::Simulation,
    frames: usize,
    spec: &RenderSpec,
    rows: Vec<flexbench_contracts::TrackRow>,
    out: &Path,
) -> Result<Vec<PathBuf>, PipelineError> {
    let truth = out.join("truth");
    let at: Vec<&flexbench_mechanism::simulate::Sample> = (0..frames)
        .map(|k| &sim.samples[(k + 1) * SAMPLES_PER_FRAME])
        .collect();
    let times: Vec<f64> = (0..frames).map(|k| k as f64 / spec.fps).collect();
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
    files.push(write_json(
        &truth.join("render.json"),
        &json!({
            "mechanism": mech.name, "frames": frames, "fps": spec.fps, "exposure_s": spec.exposure, "blur_samples": spec.blur_samples,
            "noise": spec.noise, "lighting": spec.lighting, "codec": spec.codec, "seed": spec.seed,
            "occlusion": spec.occlusion.iter().map(|o| json!({"marker": o.marker, "frames": o.frames})).collect::<Vec<_>>(),
            "note": "frame k shows the motion at t = k / fps after the settling time plus one frame",
        }),
    )?);
    Ok(files)
}
