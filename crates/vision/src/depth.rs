//! The markers' depth in front of the bench plane, estimated from their rigid patterns.
//!
//! Markers that stand `d` m in front of the bench plane, taken where their rays meet the plane,
//! come out scaled about the camera's foot by s = C_z / (C_z - d) (C the camera's centre,
//! `BenchPlane::camera_centre`): every distance between two markers of one body is the
//! mechanism file's times s. Each frame's s is the least-squares ratio of the tracked spacings
//! (taken on the plane, from the pixels) to the file's over every pair of markers on one body
//! seen in that frame; s is their mean, its standard error from their scatter, and the depth
//! d = C_z (1 - 1 / s). The profile of the pattern's misfit over a common depth of a body's
//! markers is quadratic in s, so this is its minimum.
//!
//! What it cannot tell apart: a wrong scale of the calibration (a board's square mis-measured)
//! or of the file's marker spacings scales the spacings the same way; the warning says so.

use flexbench_contracts::TrackRow;
use nalgebra::{Vector2, Vector3};

use crate::camera::{onto_plane, toward_camera};
use crate::pattern::MarkerLayout;

/// What the depth's estimate needs of the tracker's settings: the markers' names (the layout's
/// indices), their depths given (m, in that order; missing: 0), and whether to apply it.
pub struct Markers<'a> {
    /// The tracked markers' names.
    pub names: &'a [String],
    /// Their depths in front of the bench plane, m.
    pub depths: &'a [f64],
    /// The bodies' rigid patterns.
    pub layout: &'a MarkerLayout,
    /// Whether the estimate is applied to the markers of every rigid pattern.
    pub apply: bool,
}

/// A depth differing from the one used by more than this (m) and three standard errors is
/// reported.
const REPORTED: f64 = 1e-3;

/// What the markers' spacings say of their depth (the track record's `depth`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DepthEstimate {
    /// The depth the spacings ask for, m in front of the bench plane (towards the camera).
    pub depth_m: f64,
    /// Its standard error from the frames' scatter, m.
    pub sigma_m: f64,
    /// The spacings' scale on the bench plane against the mechanism file's.
    pub scale: f64,
    /// The depth the tracks use (the mechanism file's, or this estimate when asked for), m.
    pub used_m: f64,
    /// Whether the estimate was applied to the markers.
    pub applied: bool,
    /// Frames that gave a scale.
    pub frames: usize,
}

impl DepthEstimate {
    /// The warning when the spacings ask for another depth than the one used: it names the
    /// estimate, the other causes and the fix.
    pub fn warning(&self) -> Option<String> {
        let off = self.depth_m - self.used_m;
        if self.applied || off.abs() <= REPORTED.max(3.0 * self.sigma_m) {
            return None;
        }
        Some(format!(
            "the markers' spacings come out {:+.2} % against the mechanism file's: they stand {:.1} +- {:.1} mm in front of the bench plane, not the {:.1} mm used (or the calibration's or the file's scale is off by as much); give the markers' depth in the mechanism file (depth, or marker_depth for the lever), or track with --estimate-depth ([track] estimate_depth = true)",
            (self.scale - 1.0) * 100.0,
            self.depth_m * 1e3,
            self.sigma_m * 1e3,
            self.used_m * 1e3
        ))
    }
}

/// The depth the markers' spacings ask for. `on_plane[k][m]` is marker m's position in frame k
/// where its ray meets the bench plane (m; None: not seen); `layout` the bodies' patterns;
/// `centre` the camera's centre. None without a body of two markers seen together in at least
/// three frames.
pub fn estimate(
    on_plane: &[Vec<Option<(f64, f64)>>],
    layout: &MarkerLayout,
    centre: &Vector3<f64>,
) -> Option<(f64, f64, f64, usize)> {
    let mut scales = Vec::new();
    for frame in on_plane {
        let (mut num, mut den) = (0.0, 0.0);
        for body in &layout.bodies {
            for (i, a) in body.markers.iter().enumerate() {
                for b in &body.markers[i + 1..] {
                    let (Some(Some(pa)), Some(Some(pb))) = (frame.get(a.0), frame.get(b.0)) else {
                        continue;
                    };
                    let file = (Vector2::from(a.1) - Vector2::from(b.1)).norm();
                    let seen = (pa.0 - pb.0).hypot(pa.1 - pb.1);
                    num += seen * file;
                    den += file * file;
                }
            }
        }
        if den > 0.0 {
            scales.push(num / den);
        }
    }
    let n = scales.len();
    if n < 3 {
        return None;
    }
    let s = scales.iter().sum::<f64>() / n as f64;
    let var = scales.iter().map(|x| (x - s).powi(2)).sum::<f64>() / (n - 1) as f64;
    let cz = centre.z.abs();
    let depth = cz * (1.0 - 1.0 / s);
    // d(depth)/ds = C_z / s^2.
    let sigma = cz / (s * s) * (var / n as f64).sqrt();
    Some((depth, sigma, s, n))
}

/// What the spacings of the tracked `rows` (frame by frame, marker by marker, each at the depth
/// `markers.depths` gives it) say of the markers' depth, seen by the camera at `centre`; with
/// `markers.apply`, the markers of every rigid pattern moved to the estimated depth. None
/// without a body of two markers seen together.
pub fn from_rows(
    rows: &mut [TrackRow],
    markers: &Markers,
    centre: &Vector3<f64>,
) -> Option<DepthEstimate> {
    let layout = markers.layout;
    let index = |name: &str| markers.names.iter().position(|m| m == name);
    let given = |m: usize| markers.depths.get(m).copied().unwrap_or(0.0);
    // Where each sample's ray meets the bench plane.
    let plane_of = |r: &TrackRow, m: usize| -> Option<(f64, f64)> {
        let p = (r.x?, r.y?);
        let d = given(m);
        if d == 0.0 {
            return Some(p);
        }
        onto_plane(centre, p, d)
    };
    let frames = rows.iter().map(|r| r.frame).max().map_or(0, |f| f + 1) as usize;
    let mut on_plane = vec![vec![None; markers.names.len()]; frames];
    for r in rows.iter() {
        if let (Some(m), Ok(k)) = (index(&r.marker), usize::try_from(r.frame)) {
            on_plane[k][m] = plane_of(r, m);
        }
    }
    let (depth_m, sigma_m, scale, frames) = estimate(&on_plane, layout, centre)?;
    let patterned: Vec<usize> = layout
        .bodies
        .iter()
        .filter(|b| b.markers.len() > 1)
        .flat_map(|b| b.markers.iter().map(|m| m.0))
        .collect();
    // The depth used: the patterned markers' own (their mean when they differ).
    let used_m = patterned.iter().map(|&m| given(m)).sum::<f64>() / patterned.len().max(1) as f64;
    let applied = markers.apply && depth_m.is_finite() && depth_m < centre.z.abs();
    if applied {
        for r in rows.iter_mut() {
            let Some(m) = index(&r.marker).filter(|m| patterned.contains(m)) else {
                continue;
            };
            let Ok(k) = usize::try_from(r.frame) else {
                continue;
            };
            if let Some((x, y)) = on_plane[k][m].and_then(|p| toward_camera(centre, p, depth_m)) {
                (r.x, r.y) = (Some(x), Some(y));
            }
            // Where a rolling shutter's row saw it, moved to the same depth the same way.
            let d = given(m);
            if let Some(l) = &mut r.late {
                let seen = match d == 0.0 {
                    true => Some((l.x, l.y)),
                    false => onto_plane(centre, (l.x, l.y), d),
                };
                if let Some((x, y)) = seen.and_then(|p| toward_camera(centre, p, depth_m)) {
                    (l.x, l.y) = (x, y);
                }
            }
        }
    }
    Some(DepthEstimate {
        depth_m,
        sigma_m,
        scale,
        used_m: if applied { depth_m } else { used_m },
        applied,
        frames,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::BodyPattern;

    #[test]
    fn a_common_depth_comes_back_from_the_spacings() {
        // Five markers 0.09 m apart on a lever that turns; seen 12 mm in front of the plane by
        // a camera 0.85 m away whose foot is at (0.2, 0.1).
        let centre = Vector3::new(0.2, 0.1, 0.85);
        let d = 0.012;
        let local: Vec<[f64; 2]> = (0..5).map(|i| [0.045 + 0.09 * i as f64, 0.0]).collect();
        let layout = MarkerLayout {
            bodies: vec![BodyPattern {
                body: "lever".into(),
                markers: local.iter().copied().enumerate().collect(),
                anchors: Vec::new(),
            }],
        };
        let frames: Vec<Vec<Option<(f64, f64)>>> = (0..50)
            .map(|k| {
                let a = 0.02 * k as f64;
                local
                    .iter()
                    .map(|l| {
                        let p = (0.1 + l[0] * a.cos(), -0.05 + l[0] * a.sin());
                        crate::camera::onto_plane(&centre, p, d)
                    })
                    .collect()
            })
            .collect();
        let (depth, sigma, scale, n) = estimate(&frames, &layout, &centre).unwrap();
        assert!((depth - d).abs() < 1e-12, "{depth}");
        assert!(sigma < 1e-12 && n == 50 && (scale - 0.85 / 0.838).abs() < 1e-12);
        let e = DepthEstimate {
            depth_m: depth,
            sigma_m: 1e-4,
            scale,
            used_m: 0.0,
            applied: false,
            frames: n,
        };
        assert!(e.warning().unwrap().contains("12.0 +- 0.1 mm in front"));
        assert!(DepthEstimate {
            used_m: 0.0115,
            ..e.clone()
        }
        .warning()
        .is_none());
    }
}
