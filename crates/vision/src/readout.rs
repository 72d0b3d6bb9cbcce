//! The rolling shutter's readout estimated from the motion: a rigid pattern filmed row after row
//! comes out deformed. Marker i of a body, seen in row v_i of a frame of `height` rows, is seen
//! `readout` v_i / height after the frame's time, where the marker has moved on by its velocity
//! times that delay (to first order). Its tracked position is therefore
//!
//!   p_i = s R(theta) L_i + t + readout (v_i / height) dp_i/dt,
//!
//! L_i the marker's place in the body's frame (the mechanism file's), R(theta) and t the body's
//! pose in that frame, s the spacings' scale on the bench plane (1 in the plane; the depth's,
//! `depth`, otherwise) and dp_i/dt the marker's velocity, taken from its neighbouring frames by a
//! central difference. The readout and the scale are common to every frame, the pose each
//! frame's own: a separable least-squares problem solved by Gauss-Newton with the poses
//! eliminated (their Schur complement), started from each frame's rigid fit (`Pose::fit`). Its
//! standard error comes from the residuals' scatter (taken as independent between samples).
//!
//! The readout shows where markers at different rows move at different velocities or along
//! their spacings: a lever that turns and slides, as the bench's does. A body that only
//! translates across the rows, or stands still, leaves it undetermined (a large standard
//! error, and no warning).

use flexbench_contracts::TrackRow;
use nalgebra::{Matrix2, Matrix3, Matrix3x2, Vector2, Vector3};

use crate::pattern::{MarkerLayout, Pose};

/// A readout differing from the one used by more than this (s) and three standard errors is
/// reported.
const REPORTED: f64 = 5e-4;

/// Frames whose rigid misfit is this many times the median are left out of the estimate (a
/// marker mistaken in that frame).
const OUTLIER: f64 = 4.0;

/// What the patterns' deformation with the motion says of the rolling shutter (the track
/// record's `readout`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadoutEstimate {
    /// The readout the patterns' deformation asks for, s from the first row to the last.
    pub readout_s: f64,
    /// Its standard error, s.
    pub sigma_s: f64,
    /// The readout the tracks use (given, or this estimate when asked for), s.
    pub used_s: f64,
    /// Whether the estimate was applied.
    pub applied: bool,
    /// Body-frames that entered the estimate.
    pub fits: usize,
    /// The patterns' RMS misfit once the readout is accounted for, mm.
    pub misfit_mm: f64,
    /// The video's frame step, s: a readout is between 0 and it.
    #[serde(default)]
    pub frame_s: f64,
}

impl ReadoutEstimate {
    /// Whether a rolling shutter can be what deforms the patterns: the readout between 0 and a
    /// frame, within three standard errors (and [`REPORTED`]).
    pub fn possible(&self) -> bool {
        let margin = REPORTED.max(3.0 * self.sigma_s);
        self.readout_s > -margin && (self.frame_s <= 0.0 || self.readout_s < self.frame_s + margin)
    }

    /// The warning when the patterns ask for another readout than the one used: it names the
    /// estimate and the fix.
    pub fn warning(&self) -> Option<String> {
        let off = self.readout_s - self.used_s;
        if self.applied || off.abs() <= REPORTED.max(3.0 * self.sigma_s) {
            return None;
        }
        if !self.possible() {
            return Some(format!(
                "the markers' rigid patterns deform with the motion as no rolling shutter would (a readout of {:.2} +- {:.2} ms, not between 0 and a frame's {:.2} ms): a marker that slips or is mistaken for another feature, a camera that moved, or marker places in the mechanism file other than the part's; look at the markers on the overlay",
                self.readout_s * 1e3,
                self.sigma_s * 1e3,
                self.frame_s * 1e3
            ));
        }
        Some(format!(
            "the markers' rigid patterns deform with the motion as a rolling shutter of {:.2} +- {:.2} ms readout makes them, not the {:.2} ms used: give the camera's readout (--readout, [track] readout_s; its data sheet) or track with --estimate-readout ([track] estimate_readout = true)",
            self.readout_s * 1e3,
            self.sigma_s * 1e3,
            self.used_s * 1e3
        ))
    }
}

/// One body in one frame: its markers' places in the body (m), tracked positions (m) and
/// velocities times their row's share of the frame (m/s).
struct Group {
    local: Vec<Vector2<f64>>,
    seen: Vec<Vector2<f64>>,
    lag: Vec<Vector2<f64>>,
    pose: (f64, Vector2<f64>),
}

/// The readout (s), its standard error (s), the body-frames used and the RMS misfit (m) that the
/// tracked `rows` (frame by frame, marker by marker, seen at their rows' instants; `names` the
/// markers in the layout's order) ask for in a frame of `height` rows. None without a body of
/// two markers seen in three frames running.
pub fn estimate(
    rows: &[TrackRow],
    names: &[String],
    layout: &MarkerLayout,
    height: f64,
) -> Option<(f64, f64, usize, f64)> {
    let mut groups = groups(rows, names, layout, height);
    let mut g = Vector2::new(0.0, 1.0);
    for round in 0..6 {
        if round == 2 {
            drop_outliers(&mut groups, g);
        }
        g += step(&mut groups, g)?;
    }
    let (rss, n) = groups.iter().fold((0.0, 0usize), |(s, n), gr| {
        (s + misfit(gr, g), n + 2 * gr.seen.len())
    });
    let dof = n.checked_sub(3 * groups.len() + 2).filter(|&d| d > 0)?;
    let normal = schur(&groups, g).0;
    let var = normal.try_inverse()?[(0, 0)] * rss / dof as f64;
    Some((g.x, var.sqrt(), groups.len(), (rss / (n / 2) as f64).sqrt()))
}

/// The body-frames of `rows` whose markers were seen in the frames before and after.
fn groups(rows: &[TrackRow], names: &[String], layout: &MarkerLayout, height: f64) -> Vec<Group> {
    let frames = rows.iter().map(|r| r.frame).max().map_or(0, |f| f + 1) as usize;
    let mut at = vec![vec![None; names.len()]; frames];
    for r in rows {
        let (Some(m), Ok(k)) = (
            names.iter().position(|n| *n == r.marker),
            usize::try_from(r.frame),
        ) else {
            continue;
        };
        if let (Some(x), Some(y), Some(v)) = (r.x, r.y, r.v) {
            at[k][m] = Some((r.t, Vector2::new(x, y), v / height));
        }
    }
    let mut out = Vec::new();
    for k in 1..frames.saturating_sub(1) {
        for body in layout.bodies.iter().filter(|b| b.markers.len() > 1) {
            let mut gr = Group {
                local: Vec::new(),
                seen: Vec::new(),
                lag: Vec::new(),
                pose: (0.0, Vector2::zeros()),
            };
            for &(m, l) in &body.markers {
                let (Some(a), Some(p), Some(b)) = (at[k - 1][m], at[k][m], at[k + 1][m]) else {
                    continue;
                };
                let vel = (b.1 - a.1) / (b.0 - a.0);
                gr.local.push(Vector2::from(l));
                gr.seen.push(p.1);
                gr.lag.push(vel * p.2);
            }
            if gr.seen.len() < 2 {
                continue;
            }
            if let Some(pose) = Pose::fit(&gr.local, &gr.seen) {
                gr.pose = (pose.angle, pose.shift);
                out.push(gr);
            }
        }
    }
    out
}

/// The body's markers as the model puts them for the readout and scale `g`, and the model's
/// derivatives: by the pose (angle, shift) and by (readout, scale).
fn model(gr: &Group, i: usize, g: Vector2<f64>) -> (Vector2<f64>, [Vector2<f64>; 3], Matrix2<f64>) {
    let (c, s) = (gr.pose.0.cos(), gr.pose.0.sin());
    let rot = Matrix2::new(c, -s, s, c);
    let rl = rot * gr.local[i];
    let at = g.y * rl + gr.pose.1 + g.x * gr.lag[i];
    let turn = g.y * Vector2::new(-rl.y, rl.x);
    let by_global = Matrix2::from_columns(&[gr.lag[i], rl]);
    (at, [turn, Vector2::x(), Vector2::y()], by_global)
}

/// The body-frame's squared misfit, m^2.
fn misfit(gr: &Group, g: Vector2<f64>) -> f64 {
    (0..gr.seen.len())
        .map(|i| (gr.seen[i] - model(gr, i, g).0).norm_squared())
        .sum()
}

/// One body-frame's normal equations: poses (`a`, 3x3), poses by globals (`b`, 3x2), globals
/// (`c`, 2x2), and the right-hand sides of the poses (`ra`) and globals (`rc`).
struct Normal {
    a: Matrix3<f64>,
    b: Matrix3x2<f64>,
    c: Matrix2<f64>,
    ra: Vector3<f64>,
    rc: Vector2<f64>,
}

/// The body-frame's normal equations at the globals `g`.
fn normal(gr: &Group, g: Vector2<f64>) -> Normal {
    let mut n = Normal {
        a: Matrix3::zeros(),
        b: Matrix3x2::zeros(),
        c: Matrix2::zeros(),
        ra: Vector3::zeros(),
        rc: Vector2::zeros(),
    };
    for i in 0..gr.seen.len() {
        let (at, local, global) = model(gr, i, g);
        let e = gr.seen[i] - at;
        let jl = nalgebra::Matrix2x3::from_columns(&local);
        n.a += jl.transpose() * jl;
        n.b += jl.transpose() * global;
        n.c += global.transpose() * global;
        n.ra += jl.transpose() * e;
        n.rc += global.transpose() * e;
    }
    n
}

/// The globals' reduced normal matrix and right-hand side (the poses eliminated).
fn schur(groups: &[Group], g: Vector2<f64>) -> (Matrix2<f64>, Vector2<f64>) {
    let (mut m, mut r) = (Matrix2::zeros(), Vector2::zeros());
    for gr in groups {
        let n = normal(gr, g);
        let Some(ai) = n.a.try_inverse() else {
            continue;
        };
        m += n.c - n.b.transpose() * ai * n.b;
        r += n.rc - n.b.transpose() * ai * n.ra;
    }
    (m, r)
}

/// One Gauss-Newton step: the globals' change, each pose updated in place.
fn step(groups: &mut [Group], g: Vector2<f64>) -> Option<Vector2<f64>> {
    let (m, r) = schur(groups, g);
    let dg = m.try_inverse()? * r;
    for gr in groups.iter_mut() {
        let n = normal(gr, g);
        if let Some(ai) = n.a.try_inverse() {
            let dl = ai * (n.ra - n.b * dg);
            gr.pose.0 += dl.x;
            gr.pose.1 += Vector2::new(dl.y, dl.z);
        }
    }
    Some(dg)
}

/// Leave out the body-frames whose misfit is [`OUTLIER`] times the median's or more.
fn drop_outliers(groups: &mut Vec<Group>, g: Vector2<f64>) {
    let rms = |gr: &Group| (misfit(gr, g) / gr.seen.len() as f64).sqrt();
    let mut all: Vec<f64> = groups.iter().map(rms).collect();
    all.sort_by(f64::total_cmp);
    let Some(&median) = all.get(all.len() / 2) else {
        return;
    };
    groups.retain(|gr| rms(gr) <= OUTLIER * median.max(1e-9));
}

/// What the tracked `rows` (seen at their rows' instants) say of the readout, against the one
/// `given` (s); None without a rigid pattern seen long enough.
pub fn from_rows(
    rows: &[TrackRow],
    names: &[String],
    layout: &MarkerLayout,
    height: f64,
    given: f64,
) -> Option<ReadoutEstimate> {
    let (readout_s, sigma_s, fits, misfit) = estimate(rows, names, layout, height)?;
    Some(ReadoutEstimate {
        readout_s,
        sigma_s,
        used_s: given,
        applied: false,
        fits,
        misfit_mm: misfit * 1e3,
        frame_s: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::BodyPattern;

    /// A lever of five markers 0.09 m apart whose end B runs on a 0.06 m crank at 10 rad/s while
    /// its other end slides along x (the bench's lever, roughly), filmed at 240 frames/s in 720
    /// rows of 1 mm each from y = -0.3 m, with a rolling shutter of `readout` s; tracked
    /// positions rounded to `noise` m.
    fn lever(readout: f64, noise: f64) -> (Vec<TrackRow>, Vec<String>, MarkerLayout) {
        let local: Vec<[f64; 2]> = (0..5).map(|i| [0.05 + 0.09 * i as f64, 0.0]).collect();
        let names: Vec<String> = (1..=5).map(|i| format!("M{i}")).collect();
        let layout = MarkerLayout {
            bodies: vec![BodyPattern {
                body: "lever".into(),
                markers: local.iter().copied().enumerate().collect(),
                anchors: Vec::new(),
            }],
        };
        let at = |t: f64, l: [f64; 2]| {
            let b = Vector2::new(0.06 * (10.0 * t).cos(), 0.06 * (10.0 * t).sin());
            let angle = (0.2 + 0.3 * (10.0 * t).sin()).sin().asin();
            b + Vector2::new(angle.cos(), angle.sin()) * l[0]
        };
        let row = |p: Vector2<f64>| (p.y + 0.3) * 1e3;
        let mut rows = Vec::new();
        for k in 0..240i64 {
            let t = k as f64 / 240.0;
            for (m, l) in local.iter().enumerate() {
                // The row where the marker is seen, found by a fixed point.
                let mut p = at(t, *l);
                for _ in 0..4 {
                    p = at(t + readout * row(p) / 720.0, *l);
                }
                let q = |x: f64| (x / noise).round() * noise;
                rows.push(TrackRow {
                    frame: k,
                    t,
                    marker: names[m].clone(),
                    u: Some(p.x * 1e3),
                    v: Some(row(p)),
                    x: Some(q(p.x)),
                    y: Some(q(p.y)),
                    sigma_px: None,
                    late: None,
                });
            }
        }
        (rows, names, layout)
    }

    #[test]
    fn a_rolling_shutters_readout_comes_back_from_the_levers_motion() {
        for readout in [0.0, 0.0035] {
            let (rows, names, layout) = lever(readout, 5e-5);
            let e = from_rows(&rows, &names, &layout, 720.0, 0.0).unwrap();
            assert!(
                (e.readout_s - readout).abs() < 0.05e-3 && e.sigma_s < 0.05e-3,
                "{readout} s: {e:?}"
            );
            assert!(e.fits > 230, "{e:?}");
            assert_eq!(e.warning().is_some(), readout > 0.0, "{e:?}");
        }
    }

    #[test]
    fn a_deformation_no_shutter_makes_is_named_as_such() {
        // The real pendulum's camera moved: its two markers ask for -40 ms at 30 frames/s.
        let e = ReadoutEstimate {
            readout_s: -0.040,
            sigma_s: 0.004,
            used_s: 0.0,
            applied: false,
            fits: 270,
            misfit_mm: 9.0,
            frame_s: 1.0 / 30.0,
        };
        assert!(!e.possible());
        let w = e.warning().unwrap();
        assert!(
            w.contains("as no rolling shutter would") && w.contains("camera that moved"),
            "{w}"
        );
        let phone = ReadoutEstimate {
            readout_s: 0.0034,
            sigma_s: 0.0001,
            frame_s: 1.0 / 240.0,
            ..e
        };
        assert!(phone.possible() && phone.warning().unwrap().contains("--estimate-readout"));
    }

    #[test]
    fn a_pattern_that_stands_still_says_nothing_of_the_readout() {
        let (rows, names, layout) = lever(0.0035, 5e-5);
        let still: Vec<TrackRow> = rows
            .iter()
            .map(|r| {
                let at0 = rows
                    .iter()
                    .find(|q| q.frame == 0 && q.marker == r.marker)
                    .unwrap();
                TrackRow {
                    x: at0.x,
                    y: at0.y,
                    ..r.clone()
                }
            })
            .collect();
        let e = estimate(&still, &names, &layout, 720.0);
        assert!(e.is_none(), "{e:?}");
    }
}
