//! The bench frame's share of the forces' bands: the calibration's uncertainty of the frame
//! (`flexbench_contracts::frame`: a similarity of the bench plane about the origin, offset,
//! angle and scale, with their covariance) carried to the liaison forces by finite differences
//! through the whole estimate. The covariance is split into its principal directions
//! (Sigma = sum_k e_k e_k^T, e_k = D u_k sqrt(lambda_k) with D the standard deviations and
//! u_k, lambda_k the correlation matrix's eigenvectors and values); the markers are moved by
//! each e_k (positions by the similarity, rates and accelerations by its turn and scale), the
//! motion estimated again from where the recording's started with the recording's model kept
//! (its horizontal, the smoother's noise and jerk densities, the periodic fit's harmonics), and
//! each force's change dF_k taken, over a tenth of e_k ([`STEP`]); the force's variance is
//! sum_k dF_k^2 (first order). Where the motion refined the horizontal, the band still carries
//! the calibration's angle: the refinement's own likelihood claimed 0.03 mrad on a rendering
//! whose frame was 0.16 mrad off and not turned (the smoother's white noise is not the
//! tracks'), too confident to stand in for it.
//!
//! The markers see the frame's error as the mechanism's ground pins moved against them: the
//! fitted slide and rocker move with it, and through the spring's stiffness the forces (the
//! wind pump's forces at B and C' move by about 10 N per 0.2 mrad of the horizontal).

use flexbench_contracts::frame::FrameCovariance;
use flexbench_mechanism::Mechanism;
use flexbench_signal::Differentiator;
use nalgebra::{Matrix4, SymmetricEigen, Vector4};

use crate::estimate::{estimate, forces, Config, MarkerStates, Motion};
use crate::observe::MarkerState;
use crate::KinematicsError;

/// Principal directions whose variance is below this share of the largest are left out (they
/// move nothing a float can hold).
const NEGLIGIBLE: f64 = 1e-12;

/// The finite differences' step, as a share of each principal direction's standard deviation:
/// the forces' change over a tenth of it, times ten (the tangent). On a rendering of the bench
/// (0.1 mm noise) a half, one and two standard deviations moved the forces in proportion
/// (2.815, 5.606, 11.122 N at B); on noise-free tracks the forces bend within one (0.1 and 0.01
/// of it: 212 and 215 N per standard deviation; one: 189 N).
pub const STEP: f64 = 0.1;

/// The largest standard deviations taken to first order: offsets 20 mm, angle 20 mrad, scale
/// 2 %. A frame known no better is refused: its errors are not small.
pub const LARGEST: [f64; 4] = [0.02, 0.02, 0.02, 0.02];

/// The covariance's principal directions e_k (the module's description), each with
/// Sigma = sum e_k e_k^T; the negligible ones left out.
pub fn principal_errors(cov: &FrameCovariance) -> Vec<[f64; 4]> {
    let sd = cov.sigmas();
    let m = Matrix4::from_fn(|i, j| cov.0[i][j]);
    let d = Matrix4::from_diagonal(&Vector4::from_fn(
        |i, _| if sd[i] > 0.0 { sd[i] } else { 0.0 },
    ));
    let inv = Matrix4::from_diagonal(&Vector4::from_fn(|i, _| {
        if sd[i] > 0.0 {
            1.0 / sd[i]
        } else {
            0.0
        }
    }));
    let eig = SymmetricEigen::new(inv * m * inv);
    let top = eig.eigenvalues.iter().fold(0.0f64, |a, &b| a.max(b));
    (0..4)
        .filter(|&k| eig.eigenvalues[k] > NEGLIGIBLE * top)
        .map(|k| {
            let e = d * eig.eigenvectors.column(k) * eig.eigenvalues[k].sqrt();
            [e[0], e[1], e[2], e[3]]
        })
        .collect()
}

/// The markers' states moved by the frame's error `e` (the module's description).
fn moved(obs: &[MarkerStates], e: &[f64; 4]) -> Vec<MarkerStates> {
    let v2 = |(x, y): (f64, f64)| nalgebra::Vector2::new(x, y);
    obs.iter()
        .map(|sample| {
            sample
                .iter()
                .map(|m| {
                    m.map(|s| MarkerState {
                        p: v2(FrameCovariance::moved(e, (s.p.x, s.p.y))),
                        v: v2(FrameCovariance::turned(e, (s.v.x, s.v.y))),
                        a: v2(FrameCovariance::turned(e, (s.a.x, s.a.y))),
                    })
                })
                .collect()
        })
        .collect()
}

/// What the recording's motion was estimated from: the markers' differentiated states and
/// positions, the differentiator and the settings.
pub struct Estimated<'a> {
    /// Sample times, s.
    pub t: &'a [f64],
    /// The markers' differentiated states per sample.
    pub differentiated: &'a [MarkerStates],
    /// The markers' positions per sample.
    pub positions: &'a [MarkerStates],
    /// The differentiator of the markers.
    pub diff: &'a (dyn Differentiator + Sync),
    /// The settings of the estimate.
    pub cfg: &'a Config,
}

/// The recording's estimate `motion` (from `from`) made again with the markers moved by a
/// tenth ([`STEP`]) of each principal direction of the frame's covariance `cov`
/// ([`principal_errors`]), the recording's horizontal and model kept; empty when the
/// covariance moves nothing. An error for a frame known too poorly ([`LARGEST`]).
pub fn frame_motions(
    mech: &Mechanism,
    from: &Estimated<'_>,
    motion: &Motion,
    cov: &FrameCovariance,
) -> Result<Vec<Motion>, KinematicsError> {
    let sd = cov.sigmas();
    if let Some(i) = (0..4).find(|&i| sd[i] > LARGEST[i] || sd[i].is_nan()) {
        return Err(KinematicsError::Fit(format!(
            "the bench frame's {} is known to {:.3e} only (the calibration's covariance), beyond the {:.0e} taken to first order: calibrate again (click the horizontal farther from the origin, state the clicks' sigma)",
            flexbench_contracts::frame::FRAME_ERROR_NAMES[i],
            sd[i],
            LARGEST[i]
        )));
    }
    // The recording's horizontal and model (the smoother's noise and densities, the periodic
    // fit's harmonics) kept: a derivative, not a new choice (a frame turned 0.23 mrad and
    // fitted afresh took 10 harmonics for 8 on a rendering of the bench, and its force at B
    // moved 27 N RMS; with the model kept, 5.6 N for the frame's 0.23 mrad).
    let cfg = Config {
        horizontal_found: motion.horizontal.or(from.cfg.horizontal_found),
        keep_model: true,
        ..*from.cfg
    };
    principal_errors(cov)
        .iter()
        .map(|e| {
            let e = e.map(|x| x * STEP);
            let (d, p) = (moved(from.differentiated, &e), moved(from.positions, &e));
            estimate(mech, from.t, &d, &p, from.diff, &cfg, Some(motion))
        })
        .collect()
}

/// Per sample, each force's standard deviation from the frame's covariance, given the
/// estimates `motions` moved by its principal directions ([`frame_motions`]) at times `t`
/// (s): sum over them of ((F moved - F) / STEP)^2, rooted (None where `rows`, the recording's
/// forces, has none or a moved estimate has none); None when no direction moves anything.
pub fn frame_sigmas(
    mech: &Mechanism,
    t: &[f64],
    motions: &[Motion],
    rows: &[Option<Vec<f64>>],
    max_condition: f64,
) -> Result<Option<Vec<Option<Vec<f64>>>>, KinematicsError> {
    if motions.is_empty() {
        return Ok(None);
    }
    let mut var: Vec<Option<Vec<f64>>> = rows
        .iter()
        .map(|r| r.as_ref().map(|r| vec![0.0; r.len()]))
        .collect();
    for m in motions {
        let f = forces(mech, t, m, max_condition, &mut |_| {})?;
        for (v, (r0, r1)) in var.iter_mut().zip(rows.iter().zip(&f.rows)) {
            match (v.as_mut(), r0, r1) {
                (Some(v), Some(r0), Some(r1)) => {
                    for (vj, (a, b)) in v.iter_mut().zip(r0.iter().zip(r1)) {
                        *vj += ((b - a) / STEP).powi(2);
                    }
                }
                _ => *v = None,
            }
        }
    }
    Ok(Some(
        var.into_iter()
            .map(|v| v.map(|v| v.into_iter().map(f64::sqrt).collect()))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The principal directions rebuild the covariance (1e-12 of its entries), correlated
    /// entries and a zero variance included.
    #[test]
    fn principal_errors_rebuild_the_covariance() {
        let sd = [5e-5, 3e-5, 2e-4, 0.0];
        let rho = 0.6;
        let mut c = [[0.0; 4]; 4];
        for i in 0..4 {
            c[i][i] = sd[i] * sd[i];
        }
        c[0][2] = rho * sd[0] * sd[2];
        c[2][0] = c[0][2];
        let cov = FrameCovariance(c);
        let e = principal_errors(&cov);
        assert_eq!(e.len(), 3, "the zero variance is left out");
        for i in 0..4 {
            for j in 0..4 {
                let s: f64 = e.iter().map(|v| v[i] * v[j]).sum();
                let scale = (sd[i] * sd[j]).max(1e-30);
                assert!(
                    (s - c[i][j]).abs() <= 1e-12 * scale.max(c[i][j].abs()),
                    "{i},{j}: {s} vs {}",
                    c[i][j]
                );
            }
        }
    }
}
