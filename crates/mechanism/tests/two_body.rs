//! Inverse dynamics on a case solved by hand: two uniform rods in a vertical plane, rod 1 (2 kg,
//! 1 m) pinned to the ground at O, rod 2 (1 kg, 1 m) pinned to rod 1's end P, each turned by an
//! actuator torque from the ground, both angles driven. Horizontal and in line (phi1 = phi2 = 0),
//! turning together at a constant omega (no angular acceleration), g = 9.81 m/s^2 downwards.
//!
//! Newton-Euler by hand (centroids at the rods' middles, accelerations centripetal only):
//! - rod 2: F_P + m2 g = m2 a2 with a2 = (-1.5 omega^2, 0), so F_P = (-1.5 m2 omega^2, m2 g);
//!   moments about its centroid: (-0.5, 0) x F_P + tau2 = 0, so tau2 = 0.5 m2 g;
//! - rod 1: F_O - F_P + m1 g = m1 a1 with a1 = (-0.5 omega^2, 0), so
//!   F_O = (-(1.5 m2 + 0.5 m1) omega^2, (m1 + m2) g); moments about its centroid:
//!   (-0.5, 0) x F_O + (0.5, 0) x (-F_P) + tau1 = 0, so tau1 = 0.5 (m1 + m2) g + 0.5 m2 g.
//!
//! With m1 = 2, m2 = 1, omega = 2 rad/s: F_O = (-10, 29.43) N, F_P = (-6, 9.81) N,
//! tau1 = 19.62 N m, tau2 = 4.905 N m (their sum is the weights' moment about O, 24.525 N m).
//! Tolerance 1e-12 relative to the largest force: the system is solved by LU on 12 unknowns.

use flexbench_mechanism::file::parse;
use flexbench_mechanism::inverse::InverseSample;
use nalgebra::DVector;

const TWO_RODS: &str = r#"
name = "two rods"
gravity = [0.0, -9.81]
ground = { O = [0.0, 0.0] }

[[bodies]]
name = "rod1"
mass = 2.0
inertia = 0.16666666666666666
centroid = [0.5, 0.0]
points = { O = [0.0, 0.0], P = [1.0, 0.0] }
pose = [0.0, 0.0, 0.0]

[[bodies]]
name = "rod2"
mass = 1.0
inertia = 0.08333333333333333
centroid = [0.5, 0.0]
points = { P = [0.0, 0.0] }
pose = [1.0, 0.0, 0.0]

[[joints]]
name = "O"
type = "revolute"
first = "ground:O"
second = "rod1:O"

[[joints]]
name = "P"
type = "revolute"
first = "rod1:P"
second = "rod2:P"

[[forces]]
name = "tau1"
type = "torque"
body = "rod1"
torque = 0.0
actuator = true

[[forces]]
name = "tau2"
type = "torque"
body = "rod2"
torque = 0.0
actuator = true

[[markers]]
name = "K1"
body = "rod2"
at = [0.5, 0.0]

[[drivers]]
name = "rod 1 angle"
body = "rod1"
coordinate = "angle"
value = 0.0
rate = 2.0

[[drivers]]
name = "rod 2 angle"
body = "rod2"
coordinate = "angle"
value = 0.0
rate = 2.0
"#;

#[test]
fn two_rods_turning_together_match_the_hand_solution() {
    let mech = parse(TWO_RODS, "two rods").unwrap().mechanism;
    let omega = 2.0;
    let (m1, m2, g) = (2.0, 1.0, 9.81);
    // Centroids at x = 0.5 and 1.5 on the x axis, both angles 0, both turning at omega.
    let q = DVector::from_vec(vec![0.5, 0.0, 0.0, 1.5, 0.0, 0.0]);
    let qd = DVector::from_vec(vec![0.0, 0.5 * omega, omega, 0.0, 1.5 * omega, omega]);
    let qdd = DVector::from_vec(vec![
        -0.5 * omega * omega,
        0.0,
        0.0,
        -1.5 * omega * omega,
        0.0,
        0.0,
    ]);
    assert!(mech.phi(&q).amax() < 1e-15, "the configuration closes");
    let columns = mech.force_columns();
    let InverseSample::Solved { forces, .. } = mech.inverse_dynamics(&q, &qd, &qdd, 1e8).unwrap()
    else {
        panic!("not a toggle position");
    };
    let hand = [
        ("O_x", -(1.5 * m2 + 0.5 * m1) * omega * omega),
        ("O_y", (m1 + m2) * g),
        ("P_x", -1.5 * m2 * omega * omega),
        ("P_y", m2 * g),
        ("tau1", 0.5 * (m1 + m2) * g + 0.5 * m2 * g),
        ("tau2", 0.5 * m2 * g),
    ];
    let scale = hand.iter().map(|(_, v)| v.abs()).fold(0.0, f64::max);
    for (name, expected) in hand {
        let k = columns
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name} in {columns:?}"));
        assert!(
            (forces[k] - expected).abs() < 1e-12 * scale,
            "{name}: {} against {expected} by hand",
            forces[k]
        );
    }
}
