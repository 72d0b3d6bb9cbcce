//! A rolling shutter: the camera exposes its rows one after the other, row v `readout` v /
//! height after row 0 (the frame's time), so that each marker is seen at its own instant, later
//! the lower it is in the image. Each tracked sample is timed by its row, and its bench position
//! carried back to its frame's time along the marker's own path: the quadratic through the
//! marker's three samples nearest in time (Lagrange), each at its own instant, evaluated at the
//! frame's time. The error is the path's third derivative times the cube of the frame step,
//! well below a tenth of a millimetre at the bench's 240 frames/s; without the correction every
//! marker lags by its row's delay, and markers at different heights by different delays.

use flexbench_contracts::TrackRow;

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
}

/// Carry every sample of `rows` (frame by frame, marker by marker) back to its frame's time for
/// a rolling shutter of `readout` s over `height` rows (module documentation); u, v stay where
/// the marker was seen.
pub fn to_frame_times(rows: &mut [TrackRow], readout: f64, height: f64) -> ShutterRecord {
    let delay = |r: &TrackRow| readout * r.v.unwrap_or(0.0).clamp(0.0, height) / height;
    let mut markers: Vec<&str> = rows.iter().map(|r| r.marker.as_str()).collect();
    markers.sort_unstable();
    markers.dedup();
    let markers: Vec<String> = markers.into_iter().map(String::from).collect();
    let (mut sum, mut n, mut max_delay, mut max_shift) = (0.0, 0usize, 0.0f64, 0.0f64);
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
        for (j, &i) in idx.iter().enumerate() {
            let d = delay(&rows[i]);
            sum += d;
            n += 1;
            max_delay = max_delay.max(d);
            if seen.len() < 3 {
                continue;
            }
            let a = j.saturating_sub(1).min(seen.len() - 3);
            let at = rows[i].t;
            let (x, y) = quadratic(&seen[a..a + 3], at);
            let r = &mut rows[i];
            max_shift = max_shift.max((x - seen[j].1).hypot(y - seen[j].2));
            (r.x, r.y) = (Some(x), Some(y));
        }
    }
    ShutterRecord {
        readout_s: readout,
        mean_delay_ms: 1e3 * sum / n.max(1) as f64,
        max_delay_ms: 1e3 * max_delay,
        max_shift_mm: 1e3 * max_shift,
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
                let (x, y) = path(t + readout * v / h);
                TrackRow {
                    frame: k,
                    t,
                    marker: "M1".into(),
                    u: Some(320.0),
                    v: Some(v),
                    x: Some(x),
                    y: Some(y),
                    sigma_px: None,
                }
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
}
