//! Markers the assembly holds still: a marker at the point of a body pinned to the ground (the
//! pendulum's hub at its axle, a marker on a ground pin) must stay at one bench position
//! whatever the motion. When its track wanders farther than its noise allows, the camera (or
//! what it stands on) moved during the recording, or the calibration does not hold over the
//! frame: every marker carries that error, and the fit cannot tell it from the motion. This is
//! a check of any mechanism, not of the wind-pump bench: it runs only where the mechanism file
//! puts a marker on a ground pin.
//!
//! The noise scale is each marker's own frame-to-frame scatter: the median absolute difference
//! of successive samples, over sqrt 2, times 1.4826 (a normal scale from the median). Slow drift
//! leaves it small, so the test sees the drift against it.
//!
//! [`stabilise`] measures every marker against the held ones: in each frame, the transform that
//! puts the held markers seen back on their pins (a translation from one; a similarity,
//! Procrustes with scale, from two or more) is applied to every marker of that frame. A frame
//! that sees no held marker takes the transform interpolated linearly between the nearest frames
//! that do (held at the ends). This removes a camera's drift or shake parallel to the plane;
//! the held markers' own noise is added to every marker's, and a held marker is no longer an
//! observation of the motion.

use flexbench_contracts::MarkerSeries;
use flexbench_mechanism::model::{BodyRef, JointKind, Mechanism};
use nalgebra::Vector2;

/// A marker on a ground pin within this distance of the pin, m.
const AT_PIN: f64 = 1e-3;

/// How far a held marker may wander, in its noise scales, before it is reported.
const NOISE_SCALES: f64 = 8.0;

/// The smallest wander reported, m (below it the check stays silent whatever the noise).
const FLOOR: f64 = 1e-3;

/// A marker the assembly holds at a ground pin, and how its track wandered.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldMarker {
    /// The marker's name.
    pub marker: String,
    /// The ground pin's joint.
    pub joint: String,
    /// Where the pin is in the bench frame, m.
    pub pin: Vector2<f64>,
    /// The 95th percentile of the samples' distance from their median place, m.
    pub wander: f64,
    /// The largest such distance, m.
    pub max_wander: f64,
    /// The frame-to-frame noise scale (module documentation), m.
    pub noise: f64,
    /// Samples seen.
    pub samples: usize,
}

impl HeldMarker {
    /// Whether the wander exceeds what the noise allows.
    pub fn moved(&self) -> bool {
        self.wander > FLOOR.max(NOISE_SCALES * self.noise)
    }

    /// The warning a moved marker gives, naming the cause and the fix.
    pub fn warning(&self) -> String {
        format!(
            "the marker '{}' sits on the ground pin '{}' at ({:.4}, {:.4}) m, yet its track wanders {:.1} mm from its median place (95 % of {} samples; {:.1} mm at most) against a frame-to-frame noise of {:.2} mm: the camera, or what it stands on, moved during the recording (or the calibration does not hold across the frame), and every marker carries that error; fix the camera to the bench and record again, or measure the markers against the held one",
            self.marker,
            self.joint,
            self.pin.x,
            self.pin.y,
            self.wander * 1e3,
            self.samples,
            self.max_wander * 1e3,
            self.noise * 1e3
        )
    }
}

/// The markers of `mech` held at a ground pin, with their tracks' wander in `series` (markers
/// with fewer than 10 samples are left out).
pub fn held_markers(mech: &Mechanism, series: &[MarkerSeries]) -> Vec<HeldMarker> {
    let mut out = Vec::new();
    for mk in &mech.markers {
        let Some((joint, pin)) = ground_pin_at(mech, mk.body, mk.local) else {
            continue;
        };
        let Some(s) = series.iter().find(|s| s.name == mk.name) else {
            continue;
        };
        let pts: Vec<Vector2<f64>> = (0..s.x.len())
            .filter(|&k| s.present[k])
            .map(|k| Vector2::new(s.x[k], s.y[k]))
            .collect();
        if pts.len() < 10 {
            continue;
        }
        let centre = Vector2::new(
            median(pts.iter().map(|p| p.x).collect()),
            median(pts.iter().map(|p| p.y).collect()),
        );
        let mut dist: Vec<f64> = pts.iter().map(|p| (p - centre).norm()).collect();
        dist.sort_by(f64::total_cmp);
        let steps: Vec<f64> = pts.windows(2).map(|w| (w[1] - w[0]).norm()).collect();
        out.push(HeldMarker {
            marker: mk.name.clone(),
            joint,
            pin,
            wander: dist[(0.95 * (dist.len() - 1) as f64).round() as usize],
            max_wander: dist[dist.len() - 1],
            noise: 1.4826 * median(steps) / std::f64::consts::SQRT_2,
            samples: pts.len(),
        });
    }
    out
}

/// What stabilising on the held markers did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stabilised {
    /// The held markers it used.
    pub markers: Vec<String>,
    /// The largest shift it removed (at the held markers' pins), m.
    pub max_shift_m: f64,
    /// The RMS of the shifts removed, m.
    pub rms_shift_m: f64,
    /// Frames with no held marker seen, their transform interpolated.
    pub frames_interpolated: usize,
    /// Frames in all.
    pub frames: usize,
}

/// A frame's transform back to the pins: bench point p -> s R(theta) (p - c) + c + d, c the
/// held markers' pins' centroid.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Back {
    d: Vector2<f64>,
    theta: f64,
    log_s: f64,
}

impl Back {
    fn apply(&self, p: Vector2<f64>, c: Vector2<f64>) -> Vector2<f64> {
        let (sn, cs) = self.theta.sin_cos();
        let q = p - c;
        self.log_s.exp() * Vector2::new(cs * q.x - sn * q.y, sn * q.x + cs * q.y) + c + self.d
    }
    fn lerp(a: &Back, b: &Back, w: f64) -> Back {
        Back {
            d: a.d * (1.0 - w) + b.d * w,
            theta: a.theta * (1.0 - w) + b.theta * w,
            log_s: a.log_s * (1.0 - w) + b.log_s * w,
        }
    }
}

/// The transform that puts the held markers seen (`seen`, with their `pins`) back on their pins:
/// a translation from one, a similarity from two or more (Umeyama's least squares).
fn back_to_pins(seen: &[Vector2<f64>], pins: &[Vector2<f64>], c: Vector2<f64>) -> Back {
    let n = seen.len() as f64;
    let (ms, mp) = (
        seen.iter().sum::<Vector2<f64>>() / n,
        pins.iter().sum::<Vector2<f64>>() / n,
    );
    if seen.len() < 2 {
        return Back {
            d: mp - ms,
            theta: 0.0,
            log_s: 0.0,
        };
    }
    let (mut sxx, mut sxy, mut var) = (0.0, 0.0, 0.0);
    for (a, b) in seen.iter().zip(pins) {
        let (p, q) = (a - ms, b - mp);
        sxx += p.x * q.x + p.y * q.y;
        sxy += p.x * q.y - p.y * q.x;
        var += p.norm_squared();
    }
    let theta = sxy.atan2(sxx);
    let scale = (sxx * sxx + sxy * sxy).sqrt() / var.max(1e-300);
    // p -> s R (p - c) + c + d maps the seen centroid ms onto the pins' centroid mp.
    let (sn, cs) = theta.sin_cos();
    let q = ms - c;
    let rotated = scale * Vector2::new(cs * q.x - sn * q.y, sn * q.x + cs * q.y) + c;
    Back {
        d: mp - rotated,
        theta,
        log_s: scale.ln(),
    }
}

/// Every marker of `series` measured against the markers `mech` holds at ground pins (module
/// documentation). An error names why it cannot: no marker on a ground pin, or none seen.
pub fn stabilise(mech: &Mechanism, series: &mut [MarkerSeries]) -> Result<Stabilised, String> {
    let held: Vec<(usize, Vector2<f64>)> = mech
        .markers
        .iter()
        .filter_map(|mk| {
            let (_, pin) = ground_pin_at(mech, mk.body, mk.local)?;
            let i = series.iter().position(|s| s.name == mk.name)?;
            Some((i, pin))
        })
        .collect();
    if held.is_empty() {
        return Err(format!(
            "stabilising needs a marker on a ground pin (a marker at the point where a body is pinned to the ground: an axle's hub, a pin's head), tracked; the mechanism '{}' has none among the tracks",
            mech.name
        ));
    }
    let c = held.iter().map(|h| h.1).sum::<Vector2<f64>>() / held.len() as f64;
    let n = series.first().map_or(0, |s| s.x.len());
    let backs: Vec<Option<Back>> = (0..n)
        .map(|k| {
            let (seen, pins): (Vec<_>, Vec<_>) = held
                .iter()
                .filter(|(i, _)| series[*i].present[k])
                .map(|(i, pin)| (Vector2::new(series[*i].x[k], series[*i].y[k]), *pin))
                .unzip();
            (!seen.is_empty()).then(|| back_to_pins(&seen, &pins, c))
        })
        .collect();
    let known: Vec<usize> = (0..n).filter(|&k| backs[k].is_some()).collect();
    if known.is_empty() {
        return Err("stabilising: no held marker is seen in any frame".into());
    }
    let (mut max_shift, mut sum2) = (0.0f64, 0.0);
    let mut next = 0;
    for k in 0..n {
        while next < known.len() && known[next] < k {
            next += 1;
        }
        let back = match (backs[k], next) {
            (Some(b), _) => b,
            (None, 0) => backs[known[0]].unwrap_or(IDENTITY),
            (None, j) if j == known.len() => backs[known[j - 1]].unwrap_or(IDENTITY),
            (None, j) => {
                let (a, b) = (known[j - 1], known[j]);
                let w = (k - a) as f64 / (b - a) as f64;
                Back::lerp(
                    &backs[a].unwrap_or(IDENTITY),
                    &backs[b].unwrap_or(IDENTITY),
                    w,
                )
            }
        };
        let shift = (back.apply(c, c) - c).norm();
        max_shift = max_shift.max(shift);
        sum2 += shift * shift;
        for s in series.iter_mut() {
            if s.present[k] {
                let p = back.apply(Vector2::new(s.x[k], s.y[k]), c);
                (s.x[k], s.y[k]) = (p.x, p.y);
            }
        }
    }
    Ok(Stabilised {
        markers: held.iter().map(|(i, _)| series[*i].name.clone()).collect(),
        max_shift_m: max_shift,
        rms_shift_m: (sum2 / n.max(1) as f64).sqrt(),
        frames_interpolated: n - known.len(),
        frames: n,
    })
}

/// No transform.
const IDENTITY: Back = Back {
    d: Vector2::new(0.0, 0.0),
    theta: 0.0,
    log_s: 0.0,
};

/// The ground pin (its joint's name and bench position) at point `local` of body `body`, if the
/// body is pinned to the ground there.
fn ground_pin_at(
    mech: &Mechanism,
    body: usize,
    local: Vector2<f64>,
) -> Option<(String, Vector2<f64>)> {
    mech.joints.iter().find_map(|j| match &j.kind {
        JointKind::Revolute { a, b } => {
            let (ground, moving) = match (a.body, b.body) {
                (BodyRef::Ground, BodyRef::Body(i)) => (a, (i, b.local)),
                (BodyRef::Body(i), BodyRef::Ground) => (b, (i, a.local)),
                _ => return None,
            };
            (moving.0 == body && (moving.1 - local).norm() < AT_PIN)
                .then(|| (j.name.clone(), ground.local))
        }
        _ => None,
    })
}

/// The median of `v` (NaN when empty).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n % 2 {
        1 => v[n / 2],
        _ => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pendulum() -> Mechanism {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../recordings/dfki-pendulum/pendulum-video.toml");
        flexbench_mechanism::file::load(&path).unwrap().mechanism
    }

    fn series(name: &str, drift: f64) -> MarkerSeries {
        let n = 300;
        let noise = |k: usize| 1e-4 * ((k * 7919 % 101) as f64 / 50.0 - 1.0);
        MarkerSeries {
            name: name.into(),
            frame: (0..n as i64).collect(),
            t: (0..n).map(|k| k as f64 / 30.0).collect(),
            x: (0..n)
                .map(|k| noise(k) + drift * k as f64 / n as f64)
                .collect(),
            y: (0..n).map(|k| noise(k + 13)).collect(),
            present: vec![true; n],
            late: Vec::new(),
        }
    }

    #[test]
    fn a_held_marker_that_drifts_is_reported_and_one_that_stays_is_not() {
        let mech = pendulum();
        let still = held_markers(&mech, &[series("hub", 0.0), series("mass", 0.3)]);
        assert_eq!(still.len(), 1, "only the hub is held: {still:?}");
        assert_eq!(
            (still[0].marker.as_str(), still[0].joint.as_str()),
            ("hub", "axle")
        );
        assert!(!still[0].moved(), "{still:?}");
        let drifted = held_markers(&mech, &[series("hub", 0.02)]);
        assert!(drifted[0].moved(), "{drifted:?}");
        assert!((drifted[0].wander - 0.009).abs() < 0.001, "{drifted:?}");
        assert!(drifted[0].warning().contains("the camera"));
    }

    #[test]
    fn stabilising_removes_the_drift_of_the_held_marker_from_every_marker() {
        let mech = pendulum();
        let mut s = vec![series("hub", 0.02), series("mass", 0.02)];
        // The mass swings 0.5 m about the axle, the camera drifting 20 mm along x as it does;
        // the hub is not seen in frames 100-119.
        for k in 0..300 {
            let q = (k as f64 / 30.0).sin();
            s[1].x[k] += 0.5 * q.sin();
            s[1].y[k] -= 0.5 * q.cos();
            s[0].present[k] = !(100..120).contains(&k);
        }
        let done = stabilise(&mech, &mut s).unwrap();
        assert_eq!(done.markers, vec!["hub".to_string()]);
        assert_eq!(done.frames_interpolated, 20);
        assert!((done.max_shift_m - 0.02).abs() < 1e-3, "{done:?}");
        // The mass's distance from the axle now holds to the noise (0.1 mm each, hub and mass).
        let worst = (0..300)
            .map(|k| (s[1].x[k].hypot(s[1].y[k]) - 0.5).abs())
            .fold(0.0, f64::max);
        assert!(worst < 3e-4, "{worst}");
        let mut other = vec![series("mass", 0.0)];
        assert!(stabilise(&mech, &mut other)
            .unwrap_err()
            .contains("ground pin"));
    }
}
