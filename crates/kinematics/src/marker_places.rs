//! Where each marker sits on its body, as the recording says.
//!
//! The closed-loop fit puts each marker where the mechanism file places it on its body. A
//! marker glued elsewhere (off the lever's axis, at another fraction of its length) leaves in
//! its residual, measured less fitted, a part that is constant in its body's frame; the
//! tracker's noise averages out of it. So each marker's residual is turned into its body's axes
//! (by the fitted body angle) and averaged over the samples. Its standard error is the
//! residuals' spread over sqrt(n), widened by sqrt((1 + rho) / (1 - rho)) for their lag-one
//! correlation rho (neighbouring samples do not bring independent errors).
//!
//! The loop shares a marker's offset among the markers of its body (and the pins), so the
//! means show the pattern, not each marker's own offset. On the bench with one marker 3 mm
//! across the lever: that marker's mean 2.50 mm across, the others' 0.27-0.75 mm; every marker
//! 0.3 mm across: 0.05-0.17 mm, a trend along the lever. Renderings with the markers where the
//! file puts them give at most 0.06 mm (the calibration's scale, the tracker's pull), under
//! the tracker's noise of 0.1 mm.

use flexbench_mechanism::Mechanism;

use crate::observe::FitSample;

/// Below this many standard errors a marker's mean residual in its body's frame is noise.
pub const PLACE_SIGNIFICANT: f64 = 5.0;

/// One marker's mean residual in its body's frame: how far the recording puts it from the
/// place the mechanism file gives it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MarkerPlace {
    /// The marker's name.
    pub marker: String,
    /// Measured less fitted along the body's x axis (on the bench, along the lever), m.
    pub along_m: f64,
    /// Measured less fitted along the body's y axis (across the lever, to its left), m.
    pub across_m: f64,
    /// The standard error of `along_m`, m.
    pub along_sigma_m: f64,
    /// The standard error of `across_m`, m.
    pub across_sigma_m: f64,
    /// Samples averaged.
    pub samples: usize,
}

impl MarkerPlace {
    /// Whether the mean is beyond [`PLACE_SIGNIFICANT`] standard errors on either axis and
    /// farther than `noise` m (the markers' noise per coordinate) from the file's place.
    pub fn off(&self, noise: f64) -> bool {
        let beyond = |mean: f64, se: f64| mean.abs() > PLACE_SIGNIFICANT * se;
        (beyond(self.along_m, self.along_sigma_m) || beyond(self.across_m, self.across_sigma_m))
            && self.along_m.hypot(self.across_m) > noise
    }
}

/// Each marker's mean residual in its body's frame over the fitted `samples` (markers with
/// fewer than 10 residuals left out).
pub fn marker_places(mech: &Mechanism, samples: &[FitSample]) -> Vec<MarkerPlace> {
    mech.markers
        .iter()
        .enumerate()
        .filter_map(|(i, mk)| {
            let (along, across): (Vec<f64>, Vec<f64>) = samples
                .iter()
                .filter_map(|s| {
                    let (q, _, _) = s.state.as_ref()?;
                    // The residual is fitted less measured: turned, then negated.
                    let d = -(*s.residual.get(i)?.as_ref()?);
                    let phi = q[3 * mk.body + 2];
                    let (c, sn) = (phi.cos(), phi.sin());
                    Some((d.x * c + d.y * sn, -d.x * sn + d.y * c))
                })
                .unzip();
            (along.len() >= 10).then(|| {
                let (a, a_se) = mean_and_error(&along);
                let (c, c_se) = mean_and_error(&across);
                MarkerPlace {
                    marker: mk.name.clone(),
                    along_m: a,
                    across_m: c,
                    along_sigma_m: a_se,
                    across_sigma_m: c_se,
                    samples: along.len(),
                }
            })
        })
        .collect()
}

/// A series' mean and its standard error, widened for the lag-one correlation (at most 0.99).
fn mean_and_error(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let ss: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    let lag: f64 = x.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    let rho = if ss > 0.0 {
        (lag / ss).clamp(-0.99, 0.99)
    } else {
        0.0
    };
    let se = (ss / n).sqrt() / n.sqrt() * ((1.0 + rho) / (1.0 - rho)).sqrt();
    (mean, se)
}

/// The warning for the markers of `places` off their places beyond the markers' `noise` m
/// (per coordinate), naming each with its offset; None when every marker is where the file
/// puts it.
pub fn place_warning(places: &[MarkerPlace], noise: f64) -> Option<String> {
    let off: Vec<String> = places
        .iter()
        .filter(|p| p.off(noise))
        .map(|p| {
            format!(
                "{} {:+.2} mm along and {:+.2} mm across its body (+- {:.3} mm)",
                p.marker,
                1e3 * p.along_m,
                1e3 * p.across_m,
                1e3 * p.along_sigma_m.max(p.across_sigma_m)
            )
        })
        .collect();
    (!off.is_empty()).then(|| {
        format!(
            "the markers are not where the mechanism file puts them on their bodies: their residuals keep a constant part in their body's frame, beyond the tracker's noise of {:.3} mm ({}); a marker glued off its place (off the lever's axis), the file's places or lengths wrong, or the camera's scale: measure the markers' places and give them in the file ([[markers]] at = [x, y] in the body's frame)",
            1e3 * noise,
            off.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(along: f64, across: f64, se: f64) -> MarkerPlace {
        MarkerPlace {
            marker: "M3".into(),
            along_m: along,
            across_m: across,
            along_sigma_m: se,
            across_sigma_m: se,
            samples: 400,
        }
    }

    /// A mean beyond five standard errors and beyond the noise is off; within either, not.
    #[test]
    fn a_place_is_off_only_beyond_its_error_and_the_noise() {
        assert!(place(0.0, 2.5e-3, 6e-6).off(1e-4));
        assert!(!place(0.0, 5e-5, 6e-6).off(1e-4), "under the noise");
        assert!(
            !place(0.0, 2e-4, 5e-5).off(1e-4),
            "within 5 standard errors"
        );
        let w = place_warning(&[place(0.0, -2.5e-3, 6e-6)], 1e-4).expect("a warning");
        assert!(w.contains("M3 +0.00 mm along and -2.50 mm across"), "{w}");
        assert!(place_warning(&[place(1e-5, 0.0, 6e-6)], 1e-4).is_none());
    }

    /// White noise's mean and error; a random walk's error widened by its correlation.
    #[test]
    fn the_error_is_widened_for_correlation() {
        let mut g = flexbench_contracts::gauss::Gauss::new(3);
        let white: Vec<f64> = (0..4000).map(|_| g.next()).collect();
        let (m, se) = mean_and_error(&white);
        assert!((se - 1.0 / 4000f64.sqrt()).abs() < 0.002, "{se}");
        assert!(m.abs() < 4.0 * se, "{m}");
        let mut x = 0.0;
        let ar: Vec<f64> = white
            .iter()
            .map(|e| {
                x = 0.9 * x + e;
                x
            })
            .collect();
        let (_, se_ar) = mean_and_error(&ar);
        // AR(1) with rho 0.9: sd 1 / sqrt(1 - 0.81), widened by sqrt(19).
        let want = (1.0 / 0.19f64).sqrt() / 4000f64.sqrt() * 19f64.sqrt();
        assert!((se_ar / want - 1.0).abs() < 0.15, "{se_ar} against {want}");
    }
}
