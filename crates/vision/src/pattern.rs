//! The markers as the mechanism places them: each body's markers form a rigid pattern (their
//! places in the body's frame, m), and the mechanism's assembly says where the body's joint
//! points can be in the bench (a pin to the ground; the end of a body pinned to the ground on
//! its circle; a point of a slide on its line). The lock finds each body's markers among any
//! number of other bright blobs by a robust fit: every pair of blobs as far apart as the
//! pattern's two farthest markers proposes the body's pose (RANSAC's minimal sample, all of
//! them tried: a frame holds a few dozen blobs at most); a pose is kept when every marker of the
//! pattern falls on a blob and every joint point where the assembly lets it be; the pose of
//! least squared misfit wins, and a second pose with other blobs nearly as good leaves the frame
//! ambiguous (no lock there).
//!
//! Rigid fits in the plane (2-D Procrustes, the rotation from the cross-covariance's angle)
//! serve the lock, the prediction of a marker hidden in a frame from its body's other markers,
//! and the pattern's residual of each marker (its place predicted by the body's other markers).

use nalgebra::{Matrix2, Vector2};

/// Where the mechanism's assembly lets a body's point be, bench frame, m.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reach {
    /// Pinned to the ground at this point (the crank's A).
    Point([f64; 2]),
    /// On a circle: the pin of a body that turns about a ground pin (the lever's B on the crank's
    /// circle about A, its C' on the rocker's circle about C).
    Circle {
        /// The ground pin, m.
        centre: [f64; 2],
        /// The pin's distance from it, m.
        radius: f64,
    },
    /// On a ground line (a slide's point).
    Line {
        /// A point of the line, m.
        origin: [f64; 2],
        /// Its direction, rad from +X.
        angle: f64,
    },
}

impl Reach {
    /// Distance of bench point `p` (m) from where the point may be, m.
    pub fn miss(&self, p: Vector2<f64>) -> f64 {
        match *self {
            Reach::Point(a) => (p - Vector2::from(a)).norm(),
            Reach::Circle { centre, radius } => ((p - Vector2::from(centre)).norm() - radius).abs(),
            Reach::Line { origin, angle } => {
                let d = p - Vector2::from(origin);
                (-d.x * angle.sin() + d.y * angle.cos()).abs()
            }
        }
    }
}

/// A joint point of a body and where the assembly lets it be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    /// The point in the body's frame (the frame of its markers), m.
    pub local: [f64; 2],
    /// Where it may be in the bench.
    pub reach: Reach,
}

/// One body's markers as a rigid pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyPattern {
    /// The body's name (for messages).
    pub body: String,
    /// Its markers: index into the tracked markers' names, and place in the body's frame, m.
    pub markers: Vec<(usize, [f64; 2])>,
    /// Its joint points that the assembly places.
    pub anchors: Vec<Anchor>,
}

impl BodyPattern {
    /// Smallest distance between two of the body's markers, m (infinite for one marker).
    pub fn spacing(&self) -> f64 {
        let mut d = f64::INFINITY;
        for (i, a) in self.markers.iter().enumerate() {
            for b in &self.markers[i + 1..] {
                d = d.min((Vector2::from(a.1) - Vector2::from(b.1)).norm());
            }
        }
        d
    }

    /// Largest distance between two of the body's markers, m, and the two (positions in
    /// `markers`).
    fn extent(&self) -> (f64, usize, usize) {
        let mut best = (0.0, 0, 0);
        for (i, a) in self.markers.iter().enumerate() {
            for (j, b) in self.markers.iter().enumerate().skip(i + 1) {
                let d = (Vector2::from(a.1) - Vector2::from(b.1)).norm();
                if d > best.0 {
                    best = (d, i, j);
                }
            }
        }
        best
    }

    /// A pose's worst joint-point misfit, m (0 without anchors).
    fn anchor_miss(&self, pose: &Pose) -> f64 {
        self.anchors
            .iter()
            .map(|a| a.reach.miss(pose.apply(Vector2::from(a.local))))
            .fold(0.0, f64::max)
    }
}

/// Every body's markers: the layout the mechanism gives the tracker.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MarkerLayout {
    /// One pattern per body that carries markers.
    pub bodies: Vec<BodyPattern>,
}

/// A rigid motion of the plane: x -> R(angle) x + shift, m.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Rotation, rad.
    pub angle: f64,
    /// Translation, m.
    pub shift: Vector2<f64>,
}

impl Pose {
    /// The image of a body point (m) in the bench (m).
    pub fn apply(&self, x: Vector2<f64>) -> Vector2<f64> {
        Matrix2::new(
            self.angle.cos(),
            -self.angle.sin(),
            self.angle.sin(),
            self.angle.cos(),
        ) * x
            + self.shift
    }

    /// The least-squares rigid motion taking body points `from` onto bench points `to` (2-D
    /// Procrustes: centroids matched, the angle that of the cross-covariance); None for fewer
    /// than two pairs.
    pub fn fit(from: &[Vector2<f64>], to: &[Vector2<f64>]) -> Option<Pose> {
        let n = from.len();
        if n < 2 || to.len() != n {
            return None;
        }
        let cf = from.iter().sum::<Vector2<f64>>() / n as f64;
        let ct = to.iter().sum::<Vector2<f64>>() / n as f64;
        let (mut c, mut s) = (0.0, 0.0);
        for (a, b) in from.iter().zip(to) {
            let (a, b) = (a - cf, b - ct);
            c += a.dot(&b);
            s += a.x * b.y - a.y * b.x;
        }
        let angle = s.atan2(c);
        let r = Pose {
            angle,
            shift: Vector2::zeros(),
        };
        Some(Pose {
            angle,
            shift: ct - r.apply(cf),
        })
    }
}

/// A body's markers found among the blobs: the blob of each of its markers (in the pattern's
/// order) and the pose's squared misfit, m^2.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Blob index of each marker of the pattern.
    pub blobs: Vec<usize>,
    /// The body's pose.
    pub pose: Pose,
    /// Sum of the markers' squared misfits, m^2.
    pub misfit: f64,
}

/// Why a body's markers were not found among a frame's blobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotFound {
    /// No pose puts every marker on a blob and every joint point where it may be.
    NoPose,
    /// Two poses on different blobs fit nearly as well (a symmetric pattern without joint
    /// points to tell its ends apart, or distractors placed like markers).
    Ambiguous,
}

/// Find the body's markers among `points` (the blobs in the bench, m) left free (`used` false):
/// the pose of least misfit over every pair of blobs as far apart as the pattern's farthest
/// markers (module documentation). Tolerances: a marker within a tenth of the pattern's
/// smallest spacing of its blob (at least 3 mm); a joint point within 15 % of the pattern's
/// extent (at least 10 mm) of where it may be.
pub fn find_body(
    pattern: &BodyPattern,
    points: &[Vector2<f64>],
    used: &[bool],
) -> Result<Found, NotFound> {
    let local: Vec<Vector2<f64>> = pattern.markers.iter().map(|m| Vector2::from(m.1)).collect();
    if local.len() == 1 {
        return find_lone(pattern, points, used);
    }
    let (extent, i, j) = pattern.extent();
    let tol = (0.1 * pattern.spacing()).max(3e-3);
    let tol_anchor = (0.15 * extent).max(10e-3);
    let base = local[j] - local[i];
    let mut best: Vec<Found> = Vec::new();
    for (a, pa) in points.iter().enumerate().filter(|(a, _)| !used[*a]) {
        for (_, pb) in points
            .iter()
            .enumerate()
            .filter(|(b, _)| !used[*b] && *b != a)
        {
            let d = pb - pa;
            if (d.norm() - extent).abs() > tol {
                continue;
            }
            let angle = d.y.atan2(d.x) - base.y.atan2(base.x);
            let r = Pose {
                angle,
                shift: Vector2::zeros(),
            };
            let pose = Pose {
                angle,
                shift: pa - r.apply(local[i]),
            };
            if let Some(f) = place(&local, &pose, points, used, tol) {
                if pattern.anchor_miss(&f.pose) <= tol_anchor {
                    best.push(f);
                }
            }
        }
    }
    choose(best)
}

/// The markers' blobs under `pose` (the nearest free blob to each marker, within `tol`, each
/// blob once), refitted; None when a marker has none.
fn place(
    local: &[Vector2<f64>],
    pose: &Pose,
    points: &[Vector2<f64>],
    used: &[bool],
    tol: f64,
) -> Option<Found> {
    let mut blobs = Vec::with_capacity(local.len());
    for l in local {
        let p = pose.apply(*l);
        let (k, d) = points
            .iter()
            .enumerate()
            .filter(|(k, _)| !used[*k] && !blobs.contains(k))
            .map(|(k, q)| (k, (q - p).norm()))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        if d > tol {
            return None;
        }
        blobs.push(k);
    }
    let to: Vec<Vector2<f64>> = blobs.iter().map(|&k| points[k]).collect();
    let pose = Pose::fit(local, &to)?;
    let misfit = local
        .iter()
        .zip(&to)
        .map(|(l, t)| (pose.apply(*l) - t).norm_squared())
        .sum();
    Some(Found {
        blobs,
        pose,
        misfit,
    })
}

/// The best of the poses found: the least misfit; ambiguous when another pose on other blobs
/// fits within four times its misfit (plus a 1 mm^2 floor per marker: two exact fits are
/// equally good).
fn choose(mut found: Vec<Found>) -> Result<Found, NotFound> {
    found.sort_by(|a, b| a.misfit.total_cmp(&b.misfit));
    let Some(first) = found.first() else {
        return Err(NotFound::NoPose);
    };
    let floor = 1e-6 * first.blobs.len() as f64;
    let rival = found
        .iter()
        .skip(1)
        .find(|f| f.blobs != first.blobs)
        .is_some_and(|f| f.misfit <= 4.0 * first.misfit + floor);
    if rival {
        return Err(NotFound::Ambiguous);
    }
    Ok(found.swap_remove(0))
}

/// A body with one marker: the one free blob where the joint points allow the marker (its
/// distance from a ground pin); a lone marker without a pin to the ground cannot be told from
/// another blob.
fn find_lone(
    pattern: &BodyPattern,
    points: &[Vector2<f64>],
    used: &[bool],
) -> Result<Found, NotFound> {
    let m = Vector2::from(pattern.markers[0].1);
    let pins: Vec<(Vector2<f64>, f64)> = pattern
        .anchors
        .iter()
        .filter_map(|a| match a.reach {
            Reach::Point(p) => Some((Vector2::from(p), (m - Vector2::from(a.local)).norm())),
            _ => None,
        })
        .collect();
    if pins.is_empty() {
        return Err(NotFound::NoPose);
    }
    let fits: Vec<usize> = (0..points.len())
        .filter(|&k| !used[k])
        .filter(|&k| {
            pins.iter()
                .all(|(c, r)| ((points[k] - c).norm() - r).abs() <= 3e-3)
        })
        .collect();
    match fits.as_slice() {
        [k] => Ok(Found {
            blobs: vec![*k],
            pose: Pose {
                angle: 0.0,
                shift: points[*k] - m,
            },
            misfit: 0.0,
        }),
        [] => Err(NotFound::NoPose),
        _ => Err(NotFound::Ambiguous),
    }
}

/// Lock on every body: each body's markers found among the blobs (bench points, m), the bodies
/// with most markers first, a blob taken by one body free no more for the next. The blob of
/// each tracked marker (`markers` of them), or the first body that failed and why.
pub fn find_all(
    layout: &MarkerLayout,
    points: &[Vector2<f64>],
    markers: usize,
) -> Result<Vec<usize>, (String, NotFound)> {
    let mut order: Vec<&BodyPattern> = layout.bodies.iter().collect();
    order.sort_by_key(|b| std::cmp::Reverse(b.markers.len()));
    let mut used = vec![false; points.len()];
    let mut out = vec![usize::MAX; markers];
    for body in order {
        let f = find_body(body, points, &used).map_err(|e| (body.body.clone(), e))?;
        for (&(m, _), &k) in body.markers.iter().zip(&f.blobs) {
            used[k] = true;
            if let Some(o) = out.get_mut(m) {
                *o = k;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's lever: five markers equally spaced on BC' (0.45 m), B on the crank's circle
    /// (radius 0.0667 m about A), C' on the rocker's (0.15 m about the rocker's pin `c`).
    fn lever(c: [f64; 2]) -> BodyPattern {
        BodyPattern {
            body: "lever".into(),
            markers: (0..5)
                .map(|k| (k, [0.045 + 0.09 * k as f64, 0.0]))
                .collect(),
            anchors: vec![
                Anchor {
                    local: [0.0, 0.0],
                    reach: Reach::Circle {
                        centre: [0.0, 0.0],
                        radius: 0.0667,
                    },
                },
                Anchor {
                    local: [0.45, 0.0],
                    reach: Reach::Circle {
                        centre: c,
                        radius: 0.15,
                    },
                },
            ],
        }
    }

    #[test]
    fn procrustes_recovers_a_rigid_motion() {
        let truth = Pose {
            angle: 0.7,
            shift: Vector2::new(0.1, -0.2),
        };
        let from: Vec<Vector2<f64>> = [[0.0, 0.0], [0.3, 0.1], [-0.1, 0.2]]
            .iter()
            .map(|p| Vector2::from(*p))
            .collect();
        let to: Vec<_> = from.iter().map(|p| truth.apply(*p)).collect();
        let got = Pose::fit(&from, &to).unwrap();
        assert!((got.angle - 0.7).abs() < 1e-12);
        assert!((got.shift - truth.shift).norm() < 1e-12);
    }

    /// The lever among distractors: bright spots on its line beyond its ends, a spot near a
    /// marker, spots as far apart as the pattern: found, with its ends told apart by the
    /// joints (the equal spacing alone is symmetric).
    #[test]
    fn the_lever_among_distractors() {
        let pose = Pose {
            angle: 0.25,
            shift: Vector2::new(0.06, 0.02),
        };
        // C' where the pose puts it, the rocker's pin 0.15 m beyond.
        let cp = pose.apply(Vector2::new(0.45, 0.0));
        let pattern = lever([cp.x + 0.15, cp.y]);
        let mut pts: Vec<Vector2<f64>> = pattern
            .markers
            .iter()
            .rev()
            .map(|m| pose.apply(Vector2::from(m.1)) + Vector2::new(4e-4, -3e-4))
            .collect();
        let extra = [
            pose.apply(Vector2::new(-0.045, 0.0)),
            pose.apply(Vector2::new(0.585, 0.0)),
            pose.apply(Vector2::new(0.135, 0.02)),
            Vector2::new(0.3, -0.1),
            Vector2::new(0.3, -0.1) + Vector2::new(0.36, 0.0),
        ];
        pts.extend(extra);
        let got = find_all(
            &MarkerLayout {
                bodies: vec![pattern],
            },
            &pts,
            5,
        )
        .unwrap();
        // The points were listed M5 first.
        assert_eq!(got, vec![4, 3, 2, 1, 0]);
    }

    #[test]
    fn a_symmetric_pattern_without_joints_is_ambiguous() {
        let mut pattern = lever([0.0, 0.0]);
        pattern.anchors.clear();
        let pts: Vec<Vector2<f64>> = pattern.markers.iter().map(|m| Vector2::from(m.1)).collect();
        let used = vec![false; pts.len()];
        assert_eq!(find_body(&pattern, &pts, &used), Err(NotFound::Ambiguous));
    }

    #[test]
    fn a_missing_marker_finds_no_pose() {
        let pattern = lever([0.6, 0.0]);
        let pts: Vec<Vector2<f64>> = pattern.markers[..4]
            .iter()
            .map(|m| Vector2::from(m.1))
            .collect();
        let used = vec![false; pts.len()];
        assert_eq!(find_body(&pattern, &pts, &used), Err(NotFound::NoPose));
    }
}
