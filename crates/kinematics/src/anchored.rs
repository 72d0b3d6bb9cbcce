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
}
