//! A rolling shutter: the camera exposes its rows one after the other, row v `readout` v /
//! height after row 0 (the frame's time), so that each marker is seen at its own instant, later
//! the lower it is in the image. Each tracked sample is timed by its row, and its bench position
//! carried back to its frame's time along the marker's own path: the quadratic through the
//! marker's three samples nearest in time (Lagrange), each at its own instant, evaluated at the
//! frame's time. The error is the path's third derivative times the cube of the frame step,
//! well below a tenth of a millimetre at the bench's 240 frames/s; without the correction every
//! marker lags by its row's delay, and markers at different heights by different delays.
//!
//! The carry's error is bounded from the marker's own path (the Lagrange remainder
//! |(t - t0)(t - t1)(t - t2)| / 6 |x'''|, x''' the mean of the third divided differences of
//! the [`JERK_GROUPS`] groups of four samples nearest in time: their noise telescopes, the mean
//! of five carries 0.15 of one's) and recorded beside the tracks' noise, measured from the same
//! third differences (their scatter about that mean: 20 sigma^2 for white noise on an even
//! clock). Where the carry is not small against the noise (a low frame rate, a fast marker, a
//! gap that the three samples span) the record warns and names the fix.
//! Measured on a marker 0.3 m from its centre at 14.7 rad/s (the bench's crank speed), a readout
//! of 0.8 frame (the tests below): the carry's error 0.0035, 0.030, 0.27 and 2.6 mm RMS at 240,
//! 120, 60 and 30 frames/s (0.016, 0.13, 1.1 and 9.6 mm at most: the first and last samples are
//! carried by extrapolation), the bound 0.78 to 1.0 times it. At a phone's 30 or 60 frames/s the
//! carry is no longer small against a tracker's tenth of a millimetre: the record says so.

use flexbench_contracts::{Late, TrackRow};

/// What the rolling shutter's correction did (the track record's `shutter`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShutterRecord {
    /// The readout given, s.
    pub readout_s: f64,
    /// The mean delay of the markers' samples after their frame's time, ms: the lag of the
    /// markers' exposure a global-shutter model would carry.
    pub mean_delay_ms: f64,
    /// The largest delay, ms.
    pub max_delay_ms: f64,
    /// The largest distance a sample was carried back, mm.
    pub max_shift_mm: f64,
    /// The carry's error bound (module documentation), RMS over the samples, mm.
    #[serde(default)]
    pub carry_error_rms_mm: f64,
    /// The carry's largest error bound, mm.
    #[serde(default)]
    pub carry_error_max_mm: f64,
    /// Samples carried along a path that spans a gap (three samples more than three frames
    /// apart): their error bound is the larger.
    #[serde(default)]
    pub across_gaps: usize,
    /// The tracks' noise the carry's error is judged against, mm per coordinate: from the third
    /// differences' scatter about their local mean (module documentation; 0: too few samples).
    #[serde(default)]
    pub noise_mm: f64,
}

impl ShutterRecord {
    /// What the user must hear of the carry: its error against the tracks' noise
    /// (`noise_mm`), when it is not small beside it.
    pub fn warning(&self) -> Option<String> {
        let noise_mm = self.noise_mm;
        (noise_mm > 0.0 && self.carry_error_rms_mm > CARRY_WARN * noise_mm).then(|| format!(
            "the rolling shutter's correction carries each sample to its frame's time along its own path, with an error of {:.3} mm RMS ({:.3} mm at most{}) against the tracks' noise of {:.3} mm: the tracks' x, y (what smooth and the exports read) carry that error; process fits each sample at its own time instead (delay_s, x_seen, y_seen); film at a higher frame rate, or with a shorter readout, for positions fit to publish without it",
            self.carry_error_rms_mm,
            self.carry_error_max_mm,
            match self.across_gaps {
                0 => String::new(),
                n => format!(", {n} samples carried across a gap"),
            },
            noise_mm
        ))
    }
}

/// The carry's RMS error bound, as a share of the tracks' noise, above which the record warns:
/// half the noise (on noisy tracks the bound's own noise is about 0.05 of it).
pub const CARRY_WARN: f64 = 0.5;

/// Carry every sample of `rows` (frame by frame, marker by marker) back to its frame's time for
/// a rolling shutter of `readout` s over `height` rows (module documentation); u, v stay where
/// the marker was seen, and the row's `late` keeps when and where (bench frame) that was, for
/// the kinematic fit to carry it again along the fitted motion.
pub fn to_frame_times(rows: &mut [TrackRow], readout: f64, height: f64) -> ShutterRecord {
    let delay = |r: &TrackRow| readout * r.v.unwrap_or(0.0).clamp(0.0, height) / height;
    let mut markers: Vec<&str> = rows.iter().map(|r| r.marker.as_str()).collect();
    markers.sort_unstable();
    markers.dedup();
    let markers: Vec<String> = markers.into_iter().map(String::from).collect();
    let step = frame_step(rows);
    let mut tally = Tally::default();
    for name in &markers {
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].marker == *name && rows[i].x.is_some() && rows[i].y.is_some())
            .collect();
        let seen: Vec<(f64, f64, f64)> = idx
            .iter()
            .map(|&i| {
                let r = &rows[i];
                (r.t + delay(r), r.x.unwrap_or(0.0), r.y.unwrap_or(0.0))
            })
            .collect();
        let jerk = Jerk::of(&seen, step, &mut tally);
        for (j, &i) in idx.iter().enumerate() {
            tally.delay(delay(&rows[i]));
            if seen.len() < 3 {
                continue;
            }
            let a = j.saturating_sub(1).min(seen.len() - 3);
            let at = rows[i].t;
            let (x, y) = quadratic(&seen[a..a + 3], at);
            tally.shift((x - seen[j].1).hypot(y - seen[j].2));
            if let Some(jk) = jerk.near(a) {
                let w = (0..3).map(|i| at - seen[a + i].0).product::<f64>().abs();
                tally.error(w / 6.0 * jk, seen[a + 2].0 - seen[a].0 > 3.5 * step);
            }
            let r = &mut rows[i];
            r.late = Some(Late {
                delay_s: seen[j].0 - r.t,
                x: seen[j].1,
                y: seen[j].2,
            });
            (r.x, r.y) = (Some(x), Some(y));
        }
    }
    tally.record(readout)
}

/// The frame step, s: the median step between the frames' times (0 with fewer than two).
fn frame_step(rows: &[TrackRow]) -> f64 {
    let mut times: Vec<f64> = rows.iter().map(|r| r.t).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let mut steps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_by(f64::total_cmp);
    steps.get(steps.len() / 2).copied().unwrap_or(0.0)
}

/// Groups of four samples whose third divided differences are averaged for a sample's jerk.
pub const JERK_GROUPS: usize = 5;

/// A marker's third divided differences (x''' estimates, m/s^3), one per group of four
/// consecutive samples.
struct Jerk(Vec<[f64; 2]>);

impl Jerk {
    /// The third divided differences of `seen` (t, x, y); the scatter of those on an even clock
    /// (`step`, s) about their local mean added to `tally`'s noise.
    fn of(seen: &[(f64, f64, f64)], step: f64, tally: &mut Tally) -> Jerk {
        let third = |p: &[(f64, f64, f64)], f: fn(&(f64, f64, f64)) -> f64| {
            let d1: Vec<f64> = (0..3)
                .map(|i| (f(&p[i + 1]) - f(&p[i])) / (p[i + 1].0 - p[i].0))
                .collect();
            let d2: Vec<f64> = (0..2)
                .map(|i| (d1[i + 1] - d1[i]) / (p[i + 2].0 - p[i].0))
                .collect();
            6.0 * (d2[1] - d2[0]) / (p[3].0 - p[0].0)
        };
        let jerk = Jerk(
            seen.windows(4)
                .map(|p| [third(p, |s| s.1), third(p, |s| s.2)])
                .collect(),
        );
        let half = JERK_GROUPS / 2;
        for b in half..jerk.0.len().saturating_sub(half) {
            let even = (seen[b + 3].0 - seen[b].0 - 3.0 * step).abs() < 0.1 * step;
            if let (true, Some(mean)) = (even, jerk.mean(b)) {
                for (j, m) in jerk.0[b].iter().zip(mean) {
                    // x''' h^3 is the third difference itself (an even clock).
                    tally.noise_sq += ((j - m) * step.powi(3)).powi(2);
                    tally.noise_n += 1;
                }
            }
        }
        jerk
    }

    /// The mean of the [`JERK_GROUPS`] groups about group `b` (fewer at the ends).
    fn mean(&self, b: usize) -> Option<[f64; 2]> {
        let n = self.0.len();
        if n == 0 {
            return None;
        }
        let b = b.min(n - 1);
        let lo = b.saturating_sub(JERK_GROUPS / 2);
        let hi = (lo + JERK_GROUPS).min(n);
        let lo = hi.saturating_sub(JERK_GROUPS);
        let k = (hi - lo) as f64;
        let sum = self.0[lo..hi]
            .iter()
            .fold([0.0, 0.0], |s, j| [s[0] + j[0], s[1] + j[1]]);
        Some([sum[0] / k, sum[1] / k])
    }

    /// The jerk's size (m/s^3) about the quadratic through samples `a..a + 3`.
    fn near(&self, a: usize) -> Option<f64> {
        self.mean(a).map(|m| m[0].hypot(m[1]))
    }
}

/// The carry's sums over the samples.
#[derive(Default)]
struct Tally {
    delay_sum: f64,
    n: usize,
    max_delay: f64,
    max_shift: f64,
    err_sq: f64,
    err_n: usize,
    err_max: f64,
    across_gaps: usize,
    noise_sq: f64,
    noise_n: usize,
}

impl Tally {
    fn delay(&mut self, d: f64) {
        self.delay_sum += d;
        self.n += 1;
        self.max_delay = self.max_delay.max(d);
    }

    fn shift(&mut self, s: f64) {
        self.max_shift = self.max_shift.max(s);
    }

    fn error(&mut self, e: f64, across_gap: bool) {
        self.err_sq += e * e;
        self.err_n += 1;
        self.err_max = self.err_max.max(e);
        self.across_gaps += usize::from(across_gap);
    }

    fn record(self, readout: f64) -> ShutterRecord {
        ShutterRecord {
            readout_s: readout,
            mean_delay_ms: 1e3 * self.delay_sum / self.n.max(1) as f64,
            max_delay_ms: 1e3 * self.max_delay,
            max_shift_mm: 1e3 * self.max_shift,
            carry_error_rms_mm: 1e3 * (self.err_sq / self.err_n.max(1) as f64).sqrt(),
            carry_error_max_mm: 1e3 * self.err_max,
            across_gaps: self.across_gaps,
            noise_mm: match self.noise_n {
                0 => 0.0,
                n => 1e3 * (self.noise_sq / (20.0 * n as f64)).sqrt(),
            },
        }
    }
}

/// The quadratic through three samples (t, x, y) evaluated at `t` (Lagrange).
fn quadratic(p: &[(f64, f64, f64)], t: f64) -> (f64, f64) {
    let (mut x, mut y) = (0.0, 0.0);
    for i in 0..3 {
        let mut w = 1.0;
        for j in 0..3 {
            if i != j {
                w *= (t - p[j].0) / (p[i].0 - p[j].0);
            }
        }
        x += w * p[i].1;
        y += w * p[i].2;
    }
    (x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_back_to_their_frames_time() {
        // A marker on a circle of 0.3 m at 15 rad/s (4.5 m/s), 240 frames/s, 480 rows, a 3.5 ms
        // readout; the marker seen at its row's instant: 14.4 mm off its frame's time at worst,
        // within 0.02 mm once carried back.
        let (fps, h, readout) = (240.0, 480.0, 0.0035);
        let path = |t: f64| (0.3 * (15.0 * t).cos(), 0.3 * (15.0 * t).sin());
        let mut rows: Vec<TrackRow> = (0..100)
            .map(|k| {
                let t = k as f64 / fps;
                let v = 240.0 + 200.0 * (15.0 * t).sin();
                seen(k, t, v, path(t + readout * v / h))
            })
            .collect();
        let before = rows
            .iter()
            .map(|r| (r.x.unwrap() - path(r.t).0).hypot(r.y.unwrap() - path(r.t).1))
            .fold(0.0, f64::max);
        let rec = to_frame_times(&mut rows, readout, h);
        let after = rows
            .iter()
            .map(|r| (r.x.unwrap() - path(r.t).0).hypot(r.y.unwrap() - path(r.t).1))
            .fold(0.0, f64::max);
        assert!(before > 1e-2, "{before}");
        assert!(after < 2e-5, "{after} m after, {before} m before");
        assert!((rec.mean_delay_ms - 1.75).abs() < 0.2, "{rec:?}");
        assert!(rec.max_delay_ms <= 3.5 && rec.max_shift_mm > 10.0);
    }

    /// Marker M1 seen in frame `k` (at `t`, s) on row `v` at (x, y), m.
    fn seen(k: i64, t: f64, v: f64, (x, y): (f64, f64)) -> TrackRow {
        TrackRow {
            frame: k,
            t,
            marker: "M1".into(),
            u: Some(320.0),
            v: Some(v),
            x: Some(x),
            y: Some(y),
            sigma_px: None,
            late: None,
        }
    }

    /// A marker on a circle of 0.3 m at the bench's 14.7 rad/s, 720 rows, a readout of 0.8
    /// frame, filmed at `fps` for two turns: the rows as seen (each at its row's instant, with
    /// noise of `noise` m per coordinate, a deterministic sequence), and the path.
    fn circle(fps: f64, noise: f64) -> (Vec<TrackRow>, f64, impl Fn(f64) -> (f64, f64)) {
        let (w, h) = (14.7, 720.0);
        let readout = 0.8 / fps;
        let path = move |t: f64| (0.3 * (w * t).cos(), 0.3 * (w * t).sin());
        let n = (2.0 * std::f64::consts::TAU / w * fps) as i64;
        let mut seed = 12345u64;
        let mut draw = move || {
            // Uniform on (-sqrt 3, sqrt 3): unit variance (a linear congruential sequence).
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 12f64.sqrt()
        };
        let rows = (0..n)
            .map(|k| {
                let t = k as f64 / fps;
                let v = 360.0 + 300.0 * (w * t).sin();
                let (x, y) = path(t + readout * v / h);
                seen(k, t, v, (x + noise * draw(), y + noise * draw()))
            })
            .collect();
        (rows, readout, path)
    }

    /// The carry's largest error (m) against the path, its record.
    fn carried(fps: f64, noise: f64) -> (f64, ShutterRecord) {
        let (mut rows, readout, path) = circle(fps, noise);
        let rec = to_frame_times(&mut rows, readout, 720.0);
        let err = rows
            .iter()
            .map(|r| (r.x.unwrap() - path(r.t).0).hypot(r.y.unwrap() - path(r.t).1))
            .fold(0.0, f64::max);
        (err, rec)
    }

    #[test]
    fn the_carrys_error_is_bounded_from_the_path_itself() {
        // Noise-free: the bound within 0.7 and 2 times the error at every frame rate (the mean
        // of five groups turns less than the path at 30 frames/s)
        // (the figures of the module documentation).
        for (fps, most) in [
            (240.0, 1.7e-5),
            (120.0, 1.4e-4),
            (60.0, 1.2e-3),
            (30.0, 1.0e-2),
        ] {
            let (err, rec) = carried(fps, 0.0);
            eprintln!("{fps} frames/s: the carry's largest error {:.4} mm, its bound {:.4} mm ({:.4} mm RMS)", err * 1e3, rec.carry_error_max_mm, rec.carry_error_rms_mm);
            assert!(err < most, "{fps}: {err}");
            let bound = rec.carry_error_max_mm * 1e-3;
            assert!(
                bound >= 0.7 * err && bound <= 2.0 * err,
                "{fps}: {bound} against {err}"
            );
        }
    }

    #[test]
    fn a_carry_not_small_against_the_noise_is_named() {
        // 0.1 mm of noise: at 240 frames/s the carry is below it (no warning); at 30 frames/s it
        // is not, and the warning names the frame rate and the readout.
        let (_, fast) = carried(240.0, 1e-4);
        assert!((fast.noise_mm - 0.1).abs() < 0.01, "{fast:?}");
        assert_eq!(fast.warning(), None, "{fast:?}");
        let (_, slow) = carried(30.0, 1e-4);
        let w = slow.warning().expect("a warning at 30 frames/s");
        assert!(
            w.contains("higher frame rate") && w.contains("shorter readout"),
            "{w}"
        );
        // A gap of five frames: the samples beside it are carried across it, and counted.
        let (mut rows, readout, _) = circle(240.0, 0.0);
        for r in &mut rows[50..55] {
            (r.x, r.y) = (None, None);
        }
        let rec = to_frame_times(&mut rows, readout, 720.0);
        assert!(rec.across_gaps >= 2, "{rec:?}");
    }
}
