//! Recordings copied by simulation, for the bootstraps (the identification's,
//! [`crate::identify_bootstrap`], and the bands', [`crate::band_calibration`]): the mechanism
//! simulated at a recording's crank speed, rate and length, and its markers given a recording's
//! own errors ([`crate::bootstrap_noise`]).

use flexbench_contracts::gauss::Gauss;
use flexbench_contracts::tracks::Tracks;
use flexbench_mechanism::model::ForceKind;
use flexbench_mechanism::simulate::SimConfig;
use flexbench_mechanism::Mechanism;

use crate::PipelineError;

/// A simulated sample: its time (s) and the bodies' centroid coordinates q.
pub(crate) type State = (f64, nalgebra::DVector<f64>);

/// The mechanism simulated at the crank speed `speed` (rad/s) over the sample times `t` (their
/// rate and length), its crank `(body, motor)`: the samples and the simulated mean speed
/// (rad/s). The motor's reference is moved by the speed's shortfall until the two agree to
/// 1e-4 (the motor's slip changes little with the reference).
pub(crate) fn simulated_at(
    mech: &mut Mechanism,
    (ci, motor): (usize, usize),
    t: &[f64],
    speed: f64,
) -> Result<(Vec<flexbench_mechanism::simulate::Sample>, f64), PipelineError> {
    let n = t.len();
    let duration = t[n - 1] - t[0];
    let cfg = SimConfig {
        duration,
        rate: (n - 1) as f64 / duration,
        settle: 3.0,
        ..SimConfig::default()
    };
    let mut last = (Vec::new(), f64::NAN);
    for _ in 0..6 {
        let sim = mech.simulate(&cfg, &mut |_| {})?;
        let s = &sim.samples;
        let got = (s[s.len() - 1].q[3 * ci + 2] - s[0].q[3 * ci + 2]) / (s[s.len() - 1].t - s[0].t);
        last = (sim.samples, got);
        if (got - speed).abs() <= 1e-4 * speed.abs() {
            break;
        }
        if let ForceKind::Motor { omega_ref, .. } = &mut mech.forces[motor].kind {
            *omega_ref += speed - got;
        }
    }
    Ok(last)
}

/// The tracks of `mech` at the states `states` with the markers' errors `noise` drawn from the
/// sequence of `seed`.
pub(crate) fn noisy_tracks(
    mech: &Mechanism,
    states: &[State],
    noise: &crate::bootstrap_noise::MarkerNoise,
    seed: u64,
) -> Result<Tracks, PipelineError> {
    let refs: Vec<_> = states.iter().map(|(t, q)| (*t, q)).collect();
    let clean = mech.tracks(&refs)?;
    let names: Vec<String> = mech.markers.iter().map(|m| m.name.clone()).collect();
    let errors = noise.draw(&names, states.len(), &mut Gauss::new(scrambled(seed)));
    // The rows are sample by sample, each sample's markers in the mechanism's order.
    let rows = clean
        .rows()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let k = usize::try_from(r.frame).unwrap_or(0);
            let j = names.iter().position(|n| *n == r.marker).unwrap_or(0);
            let e = errors
                .get(k)
                .and_then(|s| s.get(j))
                .copied()
                .unwrap_or([0.0; 2]);
            r.x = r.x.map(|x| x + e[0]);
            r.y = r.y.map(|y| y + e[1]);
            r
        })
        .collect();
    Ok(Tracks::new(rows)?)
}

/// The seed `seed` spread over the generator's 64 bits (splitmix64's finalizer, Steele et al.
/// 2014): xorshift from a small seed starts with numbers near zero, and from neighbouring seeds
/// with related ones.
fn scrambled(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Neighbouring seeds spread over the generator's bits: their first normal numbers are
    /// ordinary (within 4) and unrelated.
    #[test]
    fn neighbouring_seeds_start_unrelated() {
        let firsts: Vec<f64> = (1..=8).map(|k| Gauss::new(scrambled(k)).next()).collect();
        assert!(firsts.iter().all(|x| x.abs() < 4.0), "{firsts:?}");
        assert!(
            firsts.windows(2).all(|w| (w[0] - w[1]).abs() > 1e-6),
            "{firsts:?}"
        );
    }
}
