//! Small operations on sampled series that several stages share: angles made continuous over
//! the turns, and a least-squares slope (a crank's mean speed).

/// Angles (rad) made continuous: each moved by whole turns to within half a turn of the one
/// before it (a crank angle counted over the recording's turns).
pub fn unwrap_angles(angles: &mut [f64]) {
    for k in 1..angles.len() {
        let d = angles[k] - angles[k - 1];
        angles[k] -= std::f64::consts::TAU * (d / std::f64::consts::TAU).round();
    }
}

/// Least-squares slope of y against x (a crank's mean speed, rad/s, from its unwrapped angle
/// against time).
pub fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - mx) * (b - my))
        .sum::<f64>()
        / x.iter().map(|a| (a - mx).powi(2)).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crank turning at 14.65 rad/s sampled at 240 Hz, wrapped to (-pi, pi]: unwrapped back
    /// to its angle, its slope the speed.
    #[test]
    fn unwrapped_crank_and_its_speed() {
        let t: Vec<f64> = (0..500).map(|k| k as f64 / 240.0).collect();
        let true_phi: Vec<f64> = t.iter().map(|t| 0.3 + 14.65 * t).collect();
        let mut phi: Vec<f64> = true_phi.iter().map(|p| p.sin().atan2(p.cos())).collect();
        unwrap_angles(&mut phi);
        for (a, b) in phi.iter().zip(&true_phi) {
            assert!((a - b).abs() < 1e-12);
        }
        assert!((slope(&t, &phi) - 14.65).abs() < 1e-10);
    }
}
