//! The scene of a mechanism's state: the bodies, the markers of each kind and the ground pins, as
//! the camera sees them.

use super::*;

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
    pub fn of(mech: &Mechanism, radius: f64, side: f64) -> Result<MarkerDrawing, RenderError> {
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
            .map_err(RenderError::Vision)?;
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
pub(super) fn seen_at(centre: &Vector3<f64>, p: [f64; 2], depth: f64) -> [f64; 2] {
    if depth == 0.0 {
        return p;
    }
    flexbench_vision::camera::onto_plane(centre, (p[0], p[1]), depth).map_or(p, |(x, y)| [x, y])
}

/// A shape `depth` m in front of the plane as the camera at `centre` sees it on the plane: a
/// disc or a bar parallel to the plane stays one, scaled about the camera's foot.
pub(super) fn shape_seen(shape: Shape, centre: &Vector3<f64>, depth: f64) -> Shape {
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
pub(super) const READOUT_BAND_ROWS: usize = 4;

/// A marker's grey level before lighting (bright spots of the nuisances are as bright).
pub(super) const MARKER_GREY: f64 = 235.0;

/// A sticker's colour of hue `hue_deg` (degrees): saturation 0.8 and value 0.85, as a matt
/// printed sticker under the bench's lamp, [red, green, blue] levels.
pub(super) fn sticker_rgb(hue_deg: f64) -> [f64; 3] {
    let (s, v) = (0.8, 0.85 * 255.0);
    let h = hue_deg.rem_euclid(360.0) / 60.0;
    let f = |n: f64| {
        let k = (n + h).rem_euclid(6.0);
        v - v * s * k.min(4.0 - k).clamp(0.0, 1.0)
    };
    [f(5.0), f(3.0), f(1.0)]
}

/// A dark marker's grey level (a black target printed on the lever).
pub(super) const DARK_MARKER_GREY: f64 = 30.0;

/// The shapes of body `b`, `pt` placing its points (relative to the centroid) in the bench.
pub(super) fn body_shapes(
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
pub(super) fn pinned_to_ground(m: &Mechanism, b: usize) -> bool {
    m.joints.iter().any(|j| {
        matches!(&j.kind, JointKind::Revolute { a, b: bb }
            if (a.body == BodyRef::Ground && bb.body == BodyRef::Body(b))
                || (bb.body == BodyRef::Ground && a.body == BodyRef::Body(b)))
    })
}

/// A body pinned to the ground drawn as a disc about the pin `c` reaching 25 mm beyond its
/// farthest point, with a dark dot at each of its points `pts` (m, bench frame).
pub(super) fn pinned_disc(c: [f64; 2], pts: &[[f64; 2]]) -> Vec<Shape> {
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
