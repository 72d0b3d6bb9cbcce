//! Reading back the stages' JSON records with the same types that wrote them.
//!
//! JSON has no NaN: a number that is not finite (an RMS of no sample, a ratio of zeros) is
//! written as `null`. These helpers, used with `#[serde(deserialize_with = "...")]` on the
//! fields that hold such numbers, read `null` back as NaN, so that a record always reads back
//! as the value that was written.

use serde::{Deserialize, Deserializer};

/// A number, `null` read as NaN.
pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Numbers, each `null` read as NaN.
pub fn vec_f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let v = Vec::<Option<f64>>::deserialize(d)?;
    Ok(v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
}

/// Rows of numbers, each `null` read as NaN.
pub fn nested_f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
    let v = Vec::<Vec<Option<f64>>>::deserialize(d)?;
    Ok(v.into_iter()
        .map(|r| r.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
        .collect())
}

/// Named numbers (`[name, value]` pairs), each `null` value read as NaN.
pub fn named_f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, f64)>, D::Error> {
    let v = Vec::<(String, Option<f64>)>::deserialize(d)?;
    Ok(v.into_iter()
        .map(|(n, x)| (n, x.unwrap_or(f64::NAN)))
        .collect())
}

/// Named pairs of numbers (`[name, a, b]`), each `null` read as NaN.
pub fn named_f64_pair_or_nan<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, f64, f64)>, D::Error> {
    let v = Vec::<(String, Option<f64>, Option<f64>)>::deserialize(d)?;
    Ok(v.into_iter()
        .map(|(n, a, b)| (n, a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN)))
        .collect())
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    struct Record {
        #[serde(deserialize_with = "super::f64_or_nan")]
        rms: f64,
        #[serde(deserialize_with = "super::vec_f64_or_nan")]
        density: Vec<f64>,
        #[serde(deserialize_with = "super::named_f64_or_nan")]
        per_marker: Vec<(String, f64)>,
        #[serde(deserialize_with = "super::named_f64_pair_or_nan")]
        circle: Vec<(String, f64, f64)>,
    }

    /// NaN is written as null and read back as NaN; finite numbers round-trip exactly.
    #[test]
    fn nan_round_trips_through_null() {
        let r = Record {
            rms: f64::NAN,
            density: vec![1.5, f64::NAN],
            per_marker: vec![("M1".into(), f64::NAN), ("M2".into(), 0.1)],
            circle: vec![("lever".into(), 2e-4, f64::NAN)],
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(
            text,
            r#"{"rms":null,"density":[1.5,null],"per_marker":[["M1",null],["M2",0.1]],"circle":[["lever",0.0002,null]]}"#
        );
        let back: Record = serde_json::from_str(&text).unwrap();
        assert!(back.rms.is_nan() && back.density[1].is_nan() && back.per_marker[0].1.is_nan());
        assert_eq!(
            (back.density[0], back.per_marker[1].1, back.circle[0].1),
            (1.5, 0.1, 2e-4)
        );
        assert!(back.circle[0].2.is_nan());
    }
}
