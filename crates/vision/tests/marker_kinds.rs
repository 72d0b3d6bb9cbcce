//! Marker kinds on a rendered frame among distractors: dark discs (a black target, or a black
//! mass with a bright hole at its centre) on a light wall with a brightness gradient and sensor
//! noise, beside a thin dark cable, a dark bracket and bright bolts. The dark kind finds every
//! free disc within 0.1 px RMS of its true centre (0.014 px measured), takes neither the cable,
//! the bracket nor a bolt, and gives no wrong centre for a disc the cable touches; the bright
//! kind finds the bolts and none of the dark discs. Coloured stickers (green discs on an
//! orange-beige wall, among red and blue discs, a white bolt, a dark bracket and a thin green
//! cable): the colour kind finds every green disc within 0.1 px RMS and nothing else.

use flexbench_contracts::MarkerKind;
use flexbench_vision::track::{find_blobs, TrackConfig};
use opencv::core::{Mat, Size, BORDER_REPLICATE};
use opencv::prelude::*;

const W: usize = 640;
const H: usize = 480;
/// Samples per pixel side for the discs' coverage.
const SUB: usize = 8;

/// A dark disc: centre (px), radius (px), and the radius of its bright central hole (0: none).
struct Disc {
    c: (f64, f64),
    r: f64,
    hole: f64,
}

/// A deterministic uniform draw in [0, 1) (a linear congruential sequence).
struct Draw(u64);
impl Draw {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A normal draw (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (a, b) = (self.next().max(1e-12), self.next());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }
}

/// The grey level of the scene at a point (x, y) in px: the wall, then the distractors, then
/// the discs on top.
fn scene(x: f64, y: f64, discs: &[Disc]) -> f64 {
    let mut g = 200.0 + 30.0 * x / W as f64;
    // A thin dark cable: a line 3 px wide from (0, 300) to (640, 380).
    let (dx, dy) = (640.0, 80.0);
    let dist = ((x * dy - (y - 300.0) * dx) / (dx * dx + dy * dy).sqrt()).abs();
    if dist < 1.5 {
        g = 45.0;
    }
    // A dark bracket, 70 x 22 px.
    if (500.0..570.0).contains(&x) && (60.0..82.0).contains(&y) {
        g = 30.0;
    }
    for d in discs {
        let r2 = (x - d.c.0).powi(2) + (y - d.c.1).powi(2);
        if r2 < d.r * d.r {
            g = if r2 < d.hole * d.hole { 190.0 } else { 35.0 };
        }
    }
    // Bright bolts, 4 px in radius.
    for b in [(80.0, 420.0), (600.0, 200.0)] {
        if (x - b.0).powi(2) + (y - b.1).powi(2) < 16.0 {
            g = 255.0;
        }
    }
    g
}

/// A plane of the frame: each pixel the mean of SUB x SUB samples of `level`, blurred (sigma
/// 0.8 px).
fn supersampled(level: impl Fn(f64, f64) -> f64) -> Mat {
    let mut f = vec![vec![0f32; W]; H];
    for (v, row) in f.iter_mut().enumerate() {
        for (u, p) in row.iter_mut().enumerate() {
            let mut s = 0.0;
            for i in 0..SUB {
                for j in 0..SUB {
                    let x = u as f64 + (i as f64 + 0.5) / SUB as f64 - 0.5;
                    let y = v as f64 + (j as f64 + 0.5) / SUB as f64 - 0.5;
                    s += level(x, y);
                }
            }
            *p = (s / (SUB * SUB) as f64) as f32;
        }
    }
    let m = Mat::from_slice_2d(&f).unwrap();
    let mut blurred = Mat::default();
    opencv::imgproc::gaussian_blur(
        &m,
        &mut blurred,
        Size::new(0, 0),
        0.8,
        0.8,
        BORDER_REPLICATE,
    )
    .unwrap();
    blurred
}

/// A plane's level at pixel (u, v) with normal noise of 2 grey levels, quantized to 8 bits.
fn noisy(plane: &Mat, u: usize, v: usize, draw: &mut Draw) -> u8 {
    let g = *plane.at_2d::<f32>(v as i32, u as i32).unwrap() as f64 + 2.0 * draw.normal();
    g.round().clamp(0.0, 255.0) as u8
}

/// The grey frame of the dark discs' scene.
fn render(discs: &[Disc], draw: &mut Draw) -> Mat {
    let plane = supersampled(|x, y| scene(x, y, discs));
    let mut rows = vec![[0u8; W]; H];
    for (v, row) in rows.iter_mut().enumerate() {
        for (u, p) in row.iter_mut().enumerate() {
            *p = noisy(&plane, u, v, draw);
        }
    }
    Mat::from_slice_2d(&rows).unwrap()
}

fn config(kind: MarkerKind) -> TrackConfig {
    TrackConfig {
        kind,
        ..Default::default()
    }
}

#[test]
fn dark_discs_among_distractors() {
    let mut draw = Draw(7);
    let mut discs = Vec::new();
    // Nine free discs on a 3 x 3 grid, off the cable, at random sub-pixel places.
    for i in 0..3 {
        for j in 0..3 {
            let c = (
                110.0 + 170.0 * i as f64 + 20.0 * draw.next(),
                60.0 + 95.0 * j as f64 + 20.0 * draw.next(),
            );
            let (r, hole) = if (i + j) % 2 == 0 {
                (11.0, 0.0)
            } else {
                (14.0, 3.0)
            };
            discs.push(Disc { c, r, hole });
        }
    }
    // One disc the cable crosses (centre on the line y = 300 + x / 8).
    discs.push(Disc {
        c: (400.3, 350.2),
        r: 12.0,
        hole: 0.0,
    });
    let frame = render(&discs, &mut draw);

    let (blobs, _) = find_blobs(&frame, &config(MarkerKind::Dark)).unwrap();
    let nearest = |c: (f64, f64)| {
        blobs
            .iter()
            .map(|b| (b.u - c.0).hypot(b.v - c.1))
            .fold(f64::INFINITY, f64::min)
    };
    let errors: Vec<f64> = discs[..9].iter().map(|d| nearest(d.c)).collect();
    let rms = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
    eprintln!(
        "dark discs: {} blobs, errors {errors:.3?} px, RMS {rms:.4} px",
        blobs.len()
    );
    assert!(rms < 0.1, "RMS {rms} px over the free discs");
    // Every blob is a free disc: not the cable, the bracket, a bolt, nor a wrong centre of the
    // disc the cable crosses (that disc merges with the cable and is left out, a gap).
    for b in &blobs {
        let d = discs[..9]
            .iter()
            .map(|d| (b.u - d.c.0).hypot(b.v - d.c.1))
            .fold(f64::INFINITY, f64::min);
        assert!(
            d < 0.3,
            "a blob at ({:.1}, {:.1}) is no free disc",
            b.u,
            b.v
        );
    }
    assert_eq!(blobs.len(), 9);

    // Bright markers sought on the same frame: the two bolts, no dark disc.
    let (bright, _) = find_blobs(&frame, &config(MarkerKind::Bright)).unwrap();
    assert_eq!(bright.len(), 2, "{bright:?}");
    assert!(bright
        .iter()
        .all(|b| b.v > 150.0 && (b.u < 100.0 || b.u > 580.0)));
}

/// A colour (B, G, R) of the coloured scene at (x, y) px: a beige-orange wall, a thin green cable
/// from (0, 420) to (640, 440), a red and a blue disc, a white bolt, a dark bracket, and the green
/// discs on top.
fn colour_scene(x: f64, y: f64, green: &[(f64, f64)]) -> [f64; 3] {
    let shade = 0.9 + 0.2 * x / W as f64;
    let mut c = [150.0 * shade, 180.0 * shade, 210.0 * shade];
    let (dx, dy) = (640.0, 20.0);
    if ((x * dy - (y - 420.0) * dx) / (dx * dx + dy * dy).sqrt()).abs() < 1.5 {
        c = [40.0, 170.0, 60.0];
    }
    let disc = |cx: f64, cy: f64, r: f64| (x - cx).powi(2) + (y - cy).powi(2) < r * r;
    if disc(560.0, 80.0, 12.0) {
        c = [40.0, 40.0, 200.0];
    }
    if disc(80.0, 300.0, 12.0) {
        c = [200.0, 80.0, 40.0];
    }
    if disc(600.0, 300.0, 4.0) {
        c = [255.0, 255.0, 255.0];
    }
    if (20.0..90.0).contains(&x) && (40.0..62.0).contains(&y) {
        c = [30.0, 30.0, 30.0];
    }
    for g in green {
        if disc(g.0, g.1, 12.0) {
            c = [40.0, 170.0, 60.0];
        }
    }
    c
}

/// The coloured frame: each channel supersampled and blurred, with its own noise.
fn render_colour(green: &[(f64, f64)], draw: &mut Draw) -> Mat {
    let planes: Vec<Mat> = (0..3)
        .map(|ch| supersampled(|x, y| colour_scene(x, y, green)[ch]))
        .collect();
    let mut bgr = vec![0u8; W * H * 3];
    for v in 0..H {
        for u in 0..W {
            for (ch, plane) in planes.iter().enumerate() {
                bgr[(v * W + u) * 3 + ch] = noisy(plane, u, v, draw);
            }
        }
    }
    let flat = Mat::from_slice(&bgr).unwrap();
    flat.reshape(3, H as i32).unwrap().try_clone().unwrap()
}

#[test]
fn coloured_stickers_among_other_colours() {
    let mut draw = Draw(11);
    let green: Vec<(f64, f64)> = (0..8)
        .map(|i| {
            (
                120.0 + 130.0 * (i % 4) as f64 + 20.0 * draw.next(),
                130.0 + 150.0 * (i / 4) as f64 + 20.0 * draw.next(),
            )
        })
        .collect();
    let frame = render_colour(&green, &mut draw);
    let cfg = config(MarkerKind::Colour {
        hue_deg: 111.0,
        tolerance_deg: 25.0,
    });
    let (blobs, _) = find_blobs(&frame, &cfg).unwrap();
    let errors: Vec<f64> = green
        .iter()
        .map(|c| {
            blobs
                .iter()
                .map(|b| (b.u - c.0).hypot(b.v - c.1))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let rms = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
    eprintln!(
        "green stickers: {} blobs, errors {errors:.3?} px, RMS {rms:.4} px",
        blobs.len()
    );
    assert_eq!(blobs.len(), green.len(), "{blobs:?}");
    assert!(rms < 0.1, "RMS {rms} px");
    // The hue learnt from one click at a sticker's middle finds the same stickers.
    let h = flexbench_vision::response::hue_at(&frame, green[0].0 + 0.3, green[0].1 - 0.4, 6.0)
        .unwrap();
    eprintln!("hue learnt from one click: {h:?}");
    assert!((h.hue_deg - 111.0).abs() < 5.0 && h.pixels > 80, "{h:?}");
    let learnt = config(MarkerKind::Colour {
        hue_deg: h.hue_deg,
        tolerance_deg: h.tolerance_deg,
    });
    let (again, _) = find_blobs(&frame, &learnt).unwrap();
    assert_eq!(again.len(), green.len(), "{again:?}");
    let outside = flexbench_vision::response::hue_at(&frame, 700.0, 10.0, 6.0).unwrap_err();
    assert!(
        outside.to_string().contains("outside the 640 x 480 frame"),
        "{outside}"
    );
    // A grey frame has no hue: refused with the fix.
    let mut grey = Mat::default();
    opencv::imgproc::cvt_color(&frame, &mut grey, opencv::imgproc::COLOR_BGR2GRAY, 0).unwrap();
    let err = find_blobs(&grey, &cfg).unwrap_err().to_string();
    assert!(err.contains("need a colour video"), "{err}");
    let err = flexbench_vision::response::hue_at(&grey, 100.0, 100.0, 6.0).unwrap_err();
    assert!(err.to_string().contains("a grey video has no hue"), "{err}");
}

/// A printed fiducial: its centre (px), side of its black square (px), turn (rad) and code
/// cells (the black square's (n + 2) x (n + 2) cells, true where black), on a white quiet zone
/// one cell wide.
struct Tag {
    c: (f64, f64),
    side: f64,
    turn: f64,
    cells: Vec<Vec<bool>>,
}

impl Tag {
    /// The tag's grey level at (x, y) px, None outside its quiet zone.
    fn level(&self, x: f64, y: f64) -> Option<f64> {
        let n = self.cells.len() as f64;
        let cell = self.side / n;
        let (dx, dy) = (x - self.c.0, y - self.c.1);
        let (c, s) = (self.turn.cos(), self.turn.sin());
        let (a, b) = (c * dx + s * dy, -s * dx + c * dy);
        let half = 0.5 * self.side;
        if a.abs() >= half + cell || b.abs() >= half + cell {
            return None;
        }
        if a.abs() >= half || b.abs() >= half {
            return Some(235.0);
        }
        let (i, j) = (((b + half) / cell) as usize, ((a + half) / cell) as usize);
        Some(
            if self.cells[i.min(self.cells.len() - 1)][j.min(self.cells.len() - 1)] {
                25.0
            } else {
                235.0
            },
        )
    }
}

/// The code cells of OpenCV's `dictionary` (predefined number) marker `id`, border included.
fn code_cells(dictionary: i32, id: i32, bits: i32) -> Vec<Vec<bool>> {
    let dict = opencv::aruco::get_predefined_dictionary_i32(dictionary).unwrap();
    let mut img = Mat::default();
    opencv::aruco::draw_marker(&dict, id, bits + 2, &mut img, 1).unwrap();
    (0..bits + 2)
        .map(|r| {
            (0..bits + 2)
                .map(|c| *img.at_2d::<u8>(r, c).unwrap() < 128)
                .collect()
        })
        .collect()
}

#[test]
fn printed_fiducials_among_distractors() {
    use flexbench_vision::fiducial::{dictionary_in, Fiducials};
    let mut draw = Draw(5);
    // Six tags of dictionary 4x4_50 (ids 3, 7, 11, 19, 23, 42), 34 px squares turned at random,
    // on the dark-disc scene's wall with its cable, bracket and bolts; a seventh tag of the
    // same dictionary that is no marker (id 30), and one of another dictionary (5x5_50).
    let ids = [3u32, 7, 11, 19, 23, 42];
    let mut tags: Vec<Tag> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| Tag {
            c: (
                110.0 + 190.0 * (k % 3) as f64 + 20.0 * draw.next(),
                80.0 + 150.0 * (k / 3) as f64 + 20.0 * draw.next(),
            ),
            side: 34.0,
            turn: 1.5 * draw.next() - 0.75,
            cells: code_cells(0, *id as i32, 4),
        })
        .collect();
    tags.push(Tag {
        c: (300.0, 420.0),
        side: 34.0,
        turn: 0.3,
        cells: code_cells(0, 30, 4),
    });
    tags.push(Tag {
        c: (520.0, 420.0),
        side: 40.0,
        turn: -0.2,
        cells: code_cells(4, 2, 5),
    });
    let plane = supersampled(|x, y| {
        tags.iter()
            .find_map(|t| t.level(x, y))
            .unwrap_or_else(|| scene(x, y, &[]))
    });
    let mut rows = vec![[0u8; W]; H];
    for (v, row) in rows.iter_mut().enumerate() {
        for (u, p) in row.iter_mut().enumerate() {
            *p = noisy(&plane, u, v, &mut draw);
        }
    }
    let frame = Mat::from_slice_2d(&rows).unwrap();

    let fiducials = Fiducials::new(0, ids.to_vec()).unwrap();
    let (found, others) = fiducials.detect(&frame).unwrap();
    let errors: Vec<f64> = found
        .iter()
        .zip(&tags)
        .map(|(b, t)| {
            let b = b.as_ref().expect("every tag found");
            // The pixel grid's centres sit at integer coordinates: the scene's (x, y).
            (b.u - t.c.0).hypot(b.v - t.c.1)
        })
        .collect();
    let rms = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
    eprintln!("fiducials 4x4_50: errors {errors:.3?} px, RMS {rms:.4} px, {others} other code(s)");
    assert!(rms < 0.1, "RMS {rms} px");
    // The tag of the same dictionary that is no marker is counted, not taken.
    assert_eq!(others, 1);
    // A dictionary that matches nothing in the frame: nothing found, and the frame names the
    // dictionary its codes are of.
    let wrong = Fiducials::new(10, ids.to_vec()).unwrap();
    assert!(wrong.detect(&frame).unwrap().0.iter().all(Option::is_none));
    let (name, n) = dictionary_in(&frame).unwrap().unwrap();
    assert!(name.starts_with("4x4_") && n >= 7, "{name} {n}");
}
