//! A joint's actuator: a motor at a revolute joint (between two bodies, or a body and the
//! ground) or a jack along a slide, declared on the joint itself and reported as the joint's
//! torque (`<joint>_torque`, N m, of the first side on the second) or force (`<joint>_force`, N,
//! along the slide's line). The inverse dynamics solves for it; the simulation applies the law
//!
//!   M = constant + km (reference - w)
//!
//! with w the joint's relative rate (the second side's angular velocity less the first's, rad/s;
//! or the sliding point's speed along the line, m/s): a constant torque or force, a damping motor
//! (km, reference 0) or a motor with a speed-torque line (the bench's M = Km (omega_ref -
//! omega)), as the mechanism file's `[[forces]]` motor has it.
//!
//! ```toml
//! [[joints]]
//! name = "elbow"
//! type = "revolute"
//! first = "upper:E"
//! second = "fore:E"
//! actuator = { km = 0.1, omega_ref_rpm = 0.0 }   # or { constant = 0.5 } (N m), or {}
//! ```

use serde::Deserialize;

use crate::MechanismError;

/// The law of a joint's actuator in the simulation: M = constant + km (reference - w), in N m
/// (revolute, w in rad/s) or N (slide, w in m/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActuatorLaw {
    /// The constant part, N m or N.
    pub constant: f64,
    /// The slope against the relative rate, N m s/rad or N s/m (not negative).
    pub km: f64,
    /// The rate at which the slope's part vanishes, rad/s or m/s.
    pub reference: f64,
}

impl ActuatorLaw {
    /// The actuator's torque (N m) or force (N) at the joint's relative rate `w` (rad/s or m/s).
    pub fn at(&self, w: f64) -> f64 {
        self.constant + self.km * (self.reference - w)
    }
}

/// A joint's `actuator = { ... }` table as the mechanism file gives it; every key optional
/// (an empty table: an actuator that is zero in the simulation and solved for in the inverse
/// dynamics).
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActuatorEntry {
    /// The constant part, N m (revolute) or N (slide).
    pub constant: Option<f64>,
    /// The slope against the relative rate, N m s/rad (revolute) or N s/m (slide).
    pub km: Option<f64>,
    /// A revolute joint's reference speed, rpm.
    pub omega_ref_rpm: Option<f64>,
    /// A slide's reference speed along its line, m/s.
    pub speed_ref: Option<f64>,
}

/// Which kind of joint carries the actuator: the units and the reference's key follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActuatedJoint {
    /// A revolute joint: a torque, N m; reference `omega_ref_rpm`.
    Revolute,
    /// A slide: a force along the line, N; reference `speed_ref`.
    Slide,
}

impl ActuatorEntry {
    /// The law, checked; `key` names the table for messages (`joints[1] (elbow).actuator`).
    pub fn build(&self, key: &str, joint: ActuatedJoint) -> Result<ActuatorLaw, MechanismError> {
        let bad = |k: &str, reason: String| MechanismError::Key {
            key: format!("{key}.{k}"),
            reason,
        };
        let (unit, slope) = match joint {
            ActuatedJoint::Revolute => ("N m", "N m s/rad"),
            ActuatedJoint::Slide => ("N", "N s/m"),
        };
        let constant = self.constant.unwrap_or(0.0);
        if !constant.is_finite() {
            return Err(bad("constant", format!("{constant} is not a {unit} value")));
        }
        let km = self.km.unwrap_or(0.0);
        if !(km.is_finite() && km >= 0.0) {
            return Err(bad(
                "km",
                format!("{km} is not a slope: give a number of {slope}, not negative"),
            ));
        }
        let reference = match (joint, self.omega_ref_rpm, self.speed_ref) {
            (ActuatedJoint::Revolute, _, Some(_)) => {
                return Err(bad("speed_ref", "a revolute joint's actuator takes its reference speed as omega_ref_rpm (speed_ref is a slide's, in m/s)".into()))
            }
            (ActuatedJoint::Slide, Some(_), _) => {
                return Err(bad("omega_ref_rpm", "a slide's actuator takes its reference speed as speed_ref in m/s (omega_ref_rpm is a revolute joint's)".into()))
            }
            (ActuatedJoint::Revolute, w, None) => w.unwrap_or(0.0) * std::f64::consts::PI / 30.0,
            (ActuatedJoint::Slide, None, v) => v.unwrap_or(0.0),
        };
        if !reference.is_finite() {
            return Err(bad(
                match joint {
                    ActuatedJoint::Revolute => "omega_ref_rpm",
                    ActuatedJoint::Slide => "speed_ref",
                },
                "not a finite speed".into(),
            ));
        }
        Ok(ActuatorLaw {
            constant,
            km,
            reference,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The law's three forms, the units' keys by joint, and the refusals by key.
    #[test]
    fn laws_and_refusals() {
        let e = ActuatorEntry {
            km: Some(0.1),
            omega_ref_rpm: Some(60.0),
            constant: Some(0.5),
            ..Default::default()
        };
        let law = e.build("j", ActuatedJoint::Revolute).unwrap();
        let w = 1.5;
        assert!((law.at(w) - (0.5 + 0.1 * (2.0 * std::f64::consts::PI - w))).abs() < 1e-15);
        let zero = ActuatorEntry::default()
            .build("j", ActuatedJoint::Slide)
            .unwrap();
        assert_eq!(zero.at(3.0), 0.0);
        let err = e.build("joints[1] (slide).actuator", ActuatedJoint::Slide);
        let msg = err.unwrap_err().to_string();
        assert!(
            msg.contains("joints[1] (slide).actuator.omega_ref_rpm") && msg.contains("speed_ref"),
            "{msg}"
        );
        let neg = ActuatorEntry {
            km: Some(-1.0),
            ..Default::default()
        };
        let msg = neg
            .build("a", ActuatedJoint::Revolute)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("a.km") && msg.contains("N m s/rad"), "{msg}");
    }
}
