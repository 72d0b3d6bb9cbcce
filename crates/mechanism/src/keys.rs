//! A mechanism file's values checked key by key: an error names the key and the reason.

use nalgebra::Vector2;

use crate::MechanismError;

pub(crate) fn key_err(key: &str, reason: impl Into<String>) -> MechanismError {
    MechanismError::Key {
        key: key.into(),
        reason: reason.into(),
    }
}

/// The largest magnitude of any value in a mechanism file (SI units): beyond it (a Young's
/// modulus is 2.1e11 Pa) a value is a typo or a wrong unit, and would overflow the dynamics.
pub const MAX_VALUE: f64 = 1e13;

pub(crate) fn need(v: Option<f64>, key: &str, what: &str) -> Result<f64, MechanismError> {
    match v {
        None => Err(key_err(key, format!("missing: give {what}"))),
        Some(x) if !x.is_finite() => {
            Err(key_err(key, format!("{x} is not a finite number ({what})")))
        }
        Some(x) if x.abs() > MAX_VALUE => Err(key_err(
            key,
            format!("{x:e} is beyond any bench's value ({what}); check the unit"),
        )),
        Some(x) => Ok(x),
    }
}

pub(crate) fn positive(v: Option<f64>, key: &str, what: &str) -> Result<f64, MechanismError> {
    let x = need(v, key, what)?;
    if x <= 0.0 {
        return Err(key_err(key, format!("{x} must be positive ({what})")));
    }
    Ok(x)
}

pub(crate) fn non_negative(v: Option<f64>, key: &str, what: &str) -> Result<f64, MechanismError> {
    let x = need(v, key, what)?;
    if x < 0.0 {
        return Err(key_err(key, format!("{x} must not be negative ({what})")));
    }
    Ok(x)
}

pub(crate) fn vec2(
    v: Option<[f64; 2]>,
    key: &str,
    what: &str,
) -> Result<Vector2<f64>, MechanismError> {
    let a = v.ok_or_else(|| key_err(key, format!("missing: give {what} as [x, y]")))?;
    if !a.iter().all(|x| x.is_finite()) {
        return Err(key_err(
            key,
            format!("{a:?} is not a pair of finite numbers ({what})"),
        ));
    }
    Ok(Vector2::new(a[0], a[1]))
}
