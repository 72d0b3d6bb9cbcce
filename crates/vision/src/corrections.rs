//! A user's corrections of the tracking (`corrections.toml` in the recording's folder, read by
//! the pipeline): per marker and range of frames, drop the samples, move the marker to a clicked
//! pixel, swap two markers, or seek the marker again in a window of the image. Each entry
//! rewrites the tracker's samples in its frames (a seek looks at the frame as it is decoded);
//! the tracker itself follows its own samples, so that an entry means the same whatever it did
//! before. Deterministic; a corrected sample is the user's judgement and is not flagged.

use crate::blob::Blob;

/// What a correction does to a marker in its frames.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fix {
    /// No sample: a gap.
    Drop,
    /// The marker is at this pixel (u, v), as clicked.
    Move {
        /// Column, px.
        u: f64,
        /// Row, px.
        v: f64,
    },
    /// The marker and marker `other` (index into the tracked names) exchange their samples.
    Swap {
        /// The other marker.
        other: usize,
    },
    /// The marker is the one disc-like blob in this window of the image (u0, v0, u1, v1, px);
    /// a gap when there is none or more than one.
    Seek {
        /// Left, top, right, bottom, px.
        window: [f64; 4],
    },
}

/// One correction: a marker (index into the tracked names), its frames (first and last,
/// inclusive), what is done, and how the file names it (for messages and the report).
#[derive(Debug, Clone, PartialEq)]
pub struct Correction {
    /// The entry as the file names it (`[[drop]] 2`).
    pub label: String,
    /// The marker.
    pub marker: usize,
    /// First and last frame, inclusive.
    pub frames: [usize; 2],
    /// What is done.
    pub fix: Fix,
}

/// Standard deviation given to a clicked centre, px (a click to the nearest half pixel).
pub const CLICK_SIGMA: f64 = 0.5;

impl Correction {
    /// The markers it touches (two for a swap).
    pub fn markers(&self) -> Vec<usize> {
        match self.fix {
            Fix::Swap { other } => vec![self.marker, other],
            _ => vec![self.marker],
        }
    }

    /// The correction in words, the markers named by `names` ("[[move]] 1: M4 in frames 305 to
    /// 305 moved to (451.2, 190.8) px").
    pub fn describe(&self, names: &[String]) -> String {
        let name = |m: usize| names.get(m).map_or("?", String::as_str);
        let what = match self.fix {
            Fix::Drop => "dropped".to_string(),
            Fix::Move { u, v } => format!("moved to ({u}, {v}) px"),
            Fix::Swap { other } => format!("swapped with {}", name(other)),
            Fix::Seek { window: w } => {
                format!(
                    "sought again in [{}, {}, {}, {}] px",
                    w[0], w[1], w[2], w[3]
                )
            }
        };
        format!(
            "{}: {} in frames {} to {} {what}",
            self.label,
            name(self.marker),
            self.frames[0],
            self.frames[1]
        )
    }

    /// Whether it applies to frame `k`.
    pub fn covers(&self, k: usize) -> bool {
        k >= self.frames[0] && k <= self.frames[1]
    }
}

/// Check corrections against the tracked markers (`markers` of them) and the image (`width` x
/// `height` px): frames in order, windows and moves inside the image, a swap of two different
/// markers, no two entries on one marker in one frame. The first problem in words, naming the
/// entry by its label.
pub fn check(
    entries: &[Correction],
    markers: usize,
    width: i32,
    height: i32,
) -> Result<(), String> {
    let inside = |u: f64, v: f64| u >= 0.0 && v >= 0.0 && u < width as f64 && v < height as f64;
    for (i, c) in entries.iter().enumerate() {
        let n = &c.label;
        if c.frames[1] < c.frames[0] {
            return Err(format!(
                "{n}: frames [{}, {}] end before they start",
                c.frames[0], c.frames[1]
            ));
        }
        if c.markers().iter().any(|&m| m >= markers) {
            return Err(format!(
                "entry {n}: a marker index beyond the {markers} tracked"
            ));
        }
        match c.fix {
            Fix::Move { u, v } if !inside(u, v) => {
                return Err(format!(
                    "{n}: the move to ({u}, {v}) px is outside the {width} x {height} px image"
                ))
            }
            Fix::Seek { window: [u0, v0, u1, v1] } if !(inside(u0, v0) && inside(u1, v1) && u1 > u0 && v1 > v0) => {
                return Err(format!(
                    "{n}: the window [{u0}, {v0}, {u1}, {v1}] px is not a box inside the {width} x {height} px image (left, top, right, bottom)"
                ))
            }
            Fix::Swap { other } if other == c.marker => {
                return Err(format!("{n}: a swap needs two different markers"))
            }
            _ => {}
        }
        for d in entries.iter().take(i) {
            let overlap = c.frames[0] <= d.frames[1] && d.frames[0] <= c.frames[1];
            let shared = c.markers().iter().any(|m| d.markers().contains(m));
            if overlap && shared {
                return Err(format!(
                    "{} and {n} both correct a marker in frames {} to {}; merge them or split their frames",
                    d.label,
                    c.frames[0].max(d.frames[0]),
                    c.frames[1].min(d.frames[1])
                ));
            }
        }
    }
    Ok(())
}

/// Frame `k`'s samples (`assigned[m]`) corrected by `entries`; `seek(window)` finds the one
/// disc-like blob in a window of the frame. Returns the markers corrected.
pub fn apply(
    entries: &[Correction],
    k: usize,
    assigned: &mut [Option<Blob>],
    mut seek: impl FnMut([f64; 4]) -> Option<Blob>,
) -> Vec<usize> {
    let mut touched = Vec::new();
    for c in entries.iter().filter(|c| c.covers(k)) {
        let m = c.marker;
        match c.fix {
            Fix::Drop => assigned[m] = None,
            Fix::Move { u, v } => {
                let like = assigned[m].or_else(|| assigned.iter().flatten().next().copied());
                assigned[m] = Some(Blob {
                    u,
                    v,
                    sigma: CLICK_SIGMA,
                    rival: None,
                    ..like.unwrap_or(Blob {
                        u,
                        v,
                        sigma: CLICK_SIGMA,
                        area: f64::NAN,
                        half_area: f64::NAN,
                        elongation: f64::NAN,
                        rival: None,
                    })
                });
            }
            Fix::Swap { other } => assigned.swap(m, other),
            Fix::Seek { window } => assigned[m] = seek(window),
        }
        touched.extend(c.markers());
    }
    touched
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(marker: usize, frames: [usize; 2], fix: Fix) -> Correction {
        Correction {
            label: format!("entry {marker}-{}", frames[0]),
            marker,
            frames,
            fix,
        }
    }

    #[test]
    fn bad_corrections_are_named() {
        let ok = [
            entry(0, [1, 3], Fix::Drop),
            entry(1, [1, 3], Fix::Move { u: 10.0, v: 20.0 }),
            entry(2, [4, 9], Fix::Swap { other: 0 }),
        ];
        assert_eq!(check(&ok, 5, 640, 480), Ok(()));
        let overlap = [
            entry(0, [1, 5], Fix::Drop),
            entry(2, [4, 9], Fix::Swap { other: 0 }),
        ];
        let e = check(&overlap, 5, 640, 480).unwrap_err();
        assert!(
            e.contains("entry 0-1 and entry 2-4") && e.contains("frames 4 to 5"),
            "{e}"
        );
        let outside = [entry(1, [1, 1], Fix::Move { u: 700.0, v: 20.0 })];
        assert!(check(&outside, 5, 640, 480)
            .unwrap_err()
            .contains("outside"));
        let reversed = [entry(1, [5, 1], Fix::Drop)];
        assert!(check(&reversed, 5, 640, 480)
            .unwrap_err()
            .contains("end before"));
        let window = [entry(
            1,
            [1, 2],
            Fix::Seek {
                window: [50.0, 50.0, 40.0, 60.0],
            },
        )];
        assert!(check(&window, 5, 640, 480)
            .unwrap_err()
            .contains("not a box"));
    }

    #[test]
    fn corrections_applied_in_their_frames() {
        let b = |u: f64| {
            Some(Blob {
                u,
                v: 0.0,
                sigma: 0.03,
                area: 50.0,
                half_area: 30.0,
                elongation: 1.1,
                rival: None,
            })
        };
        let entries = [
            entry(0, [2, 2], Fix::Drop),
            entry(1, [2, 3], Fix::Swap { other: 2 }),
            entry(3, [2, 2], Fix::Move { u: 7.5, v: 8.5 }),
        ];
        let mut frame = vec![b(1.0), b(2.0), b(3.0), b(4.0)];
        let touched = apply(&entries, 2, &mut frame, |_| None);
        assert_eq!(frame[0], None);
        assert_eq!((frame[1].unwrap().u, frame[2].unwrap().u), (3.0, 2.0));
        let moved = frame[3].unwrap();
        assert_eq!((moved.u, moved.v, moved.sigma), (7.5, 8.5, CLICK_SIGMA));
        assert_eq!(touched, vec![0, 1, 2, 3]);
        let mut later = vec![b(1.0), b(2.0), b(3.0), b(4.0)];
        assert!(apply(&entries, 4, &mut later, |_| None).is_empty());
    }
}
