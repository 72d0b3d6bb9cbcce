//! Joint friction as real rigs identify it: a viscous term and a Coulomb term smoothed through
//! zero, resisting the joint's relative motion (a revolute joint's relative angular velocity
//! w, rad/s; a slide's speed along its line, m/s):
//!
//!   M = -(Fv w + Fc s(k w)),  s = atan (the DFKI pendulum's identification: Fc atan(100 q'),
//!   which saturates at Fc pi / 2) or tanh (saturating at Fc).
//!
//! In the mechanism file, a joint's `friction = { viscous = Fv, coulomb = Fc, sharpness = k,
//! law = "atan" }` (N m s and N m for a revolute joint, N s/m and N for a slide; k in s/rad or
//! s/m). The model carries it as a force element `<joint>_friction` (`ForceKind::JointFriction`,
//! `ForceKind::SlideFriction`), so the simulation and the inverse dynamics apply it as they apply
//! every law: an actuator solved for by the inverse dynamics then includes what it spends on
//! friction.

use serde::Deserialize;

use crate::MechanismError;

/// How the Coulomb term is smoothed through zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoulombLaw {
    /// Fc atan(k w): saturates at Fc pi / 2 (the DFKI pendulum's identified model).
    #[default]
    Atan,
    /// Fc tanh(k w): saturates at Fc.
    Tanh,
}

impl CoulombLaw {
    /// The function's name as the file writes it: "atan" or "tanh".
    pub fn name(&self) -> &'static str {
        match self {
            CoulombLaw::Atan => "atan",
            CoulombLaw::Tanh => "tanh",
        }
    }
}

/// A joint's friction law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Friction {
    /// Viscous coefficient Fv: N m s (revolute) or N s/m (slide).
    pub viscous: f64,
    /// Coulomb coefficient Fc: N m (revolute) or N (slide).
    pub coulomb: f64,
    /// Sharpness k of the smoothing: s/rad or s/m.
    pub sharpness: f64,
    /// The smoothing.
    pub law: CoulombLaw,
}

impl Friction {
    /// The friction's magnitude at the relative rate `w` (N m or N), positive along w: the
    /// joint's load on the second body is minus this.
    pub fn resisting(&self, w: f64) -> f64 {
        let s = match self.law {
            CoulombLaw::Atan => (self.sharpness * w).atan(),
            CoulombLaw::Tanh => (self.sharpness * w).tanh(),
        };
        self.viscous * w + self.coulomb * s
    }
}

/// A joint's `friction = { ... }` table in the mechanism file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrictionEntry {
    /// Fv, N m s or N s/m (default 0).
    #[serde(default)]
    pub viscous: f64,
    /// Fc, N m or N (default 0).
    #[serde(default)]
    pub coulomb: f64,
    /// k, s/rad or s/m (needed with a Coulomb term).
    pub sharpness: Option<f64>,
    /// "atan" (default) or "tanh".
    #[serde(default)]
    pub law: CoulombLaw,
}

impl FrictionEntry {
    /// The law, checked: coefficients finite and not negative, a positive sharpness with a
    /// Coulomb term; `key` names the table in errors.
    pub fn build(&self, key: &str) -> Result<Friction, MechanismError> {
        let bad = |k: &str, reason: String| MechanismError::Key {
            key: format!("{key}.{k}"),
            reason,
        };
        for (k, v) in [("viscous", self.viscous), ("coulomb", self.coulomb)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(
                    k,
                    format!("{v} is not a friction coefficient: give a finite number, 0 or more"),
                ));
            }
        }
        let sharpness = match (self.sharpness, self.coulomb > 0.0) {
            (Some(k), _) if !(k.is_finite() && k > 0.0) => {
                return Err(bad("sharpness", format!("{k} is not a sharpness: give a positive number (s/rad or s/m; 100 in the DFKI pendulum's identification)")))
            }
            (Some(k), _) => k,
            (None, true) => {
                return Err(bad("sharpness", "a Coulomb term needs the sharpness k of its smoothing through zero (Fc atan(k w)); give it, e.g. 100".into()))
            }
            (None, false) => 1.0,
        };
        Ok(Friction {
            viscous: self.viscous,
            coulomb: self.coulomb,
            sharpness,
            law: self.law,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DFKI pendulum's identified friction at a few rates, by its formula; tanh saturates at
    /// Fc; bad tables are refused by key.
    #[test]
    fn laws_and_refusals() {
        let f = Friction {
            viscous: 4.707e-2,
            coulomb: 1.839e-1,
            sharpness: 100.0,
            law: CoulombLaw::Atan,
        };
        for w in [-3.0f64, -0.01, 0.0, 0.002, 1.5] {
            let want = 4.707e-2 * w + 1.839e-1 * (100.0 * w).atan();
            assert!((f.resisting(w) - want).abs() < 1e-15);
        }
        let t = Friction {
            law: CoulombLaw::Tanh,
            viscous: 0.0,
            ..f
        };
        assert!((t.resisting(10.0) - 1.839e-1).abs() < 1e-12);
        let entry = |v: f64, c: f64, k: Option<f64>| FrictionEntry {
            viscous: v,
            coulomb: c,
            sharpness: k,
            law: CoulombLaw::Atan,
        };
        let e = entry(-1.0, 0.0, None)
            .build("joints[0] (axle).friction")
            .unwrap_err();
        assert!(
            e.to_string().contains("joints[0] (axle).friction.viscous"),
            "{e}"
        );
        let e = entry(0.0, 0.2, None).build("j").unwrap_err();
        assert!(
            e.to_string().contains("j.sharpness") && e.to_string().contains("Coulomb"),
            "{e}"
        );
        let e = entry(0.0, 0.2, Some(0.0)).build("j").unwrap_err();
        assert!(e.to_string().contains("not a sharpness"), "{e}");
        assert!(entry(0.1, 0.0, None).build("j").is_ok());
    }
}
