//! Each stage's settings with their defaults, read from the settings' own types (the pipeline
//! file's sections), for the Python functions' signatures: `help(flexbench.process)` lists every
//! key the section has, each with the value the stage runs with when it is left out.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// The values a key left out of a record (its `skip_serializing_if`) may stand for, tried in
/// turn: the one that reads back as the default is the default.
const SKIPPED: [&str; 8] = ["null", "false", "true", "0", "1", "0.0", "{}", "[]"];

/// The keys of a `deny_unknown_fields` section, in its order, from serde's refusal of an
/// unknown one ("unknown field `zz`, expected one of `a`, `b`").
pub fn section_keys<S: DeserializeOwned>() -> Vec<String> {
    let err = serde_json::from_str::<S>(r#"{"zz_not_a_key": 1}"#)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let list = err.split("expected").nth(1).unwrap_or("");
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every key of the section `S` with its default, in the section's order; `extra` the values to
/// try for a key its record leaves out at a default none of [`SKIPPED`] is. An error naming a
/// key whose default cannot be told.
pub fn defaults<S>(extra: &[(&str, Value)]) -> Result<Map<String, Value>, String>
where
    S: Serialize + DeserializeOwned + Default + PartialEq,
{
    let default = S::default();
    let written = match serde_json::to_value(&default) {
        Ok(Value::Object(m)) => m,
        _ => return Err("the section is not a table".into()),
    };
    let mut out = Map::new();
    for key in section_keys::<S>() {
        if let Some(v) = written.get(&key) {
            out.insert(key, v.clone());
            continue;
        }
        let tries = SKIPPED
            .iter()
            .filter_map(|t| serde_json::from_str::<Value>(t).ok())
            .chain(
                extra
                    .iter()
                    .filter(|(k, _)| *k == key)
                    .map(|(_, v)| v.clone()),
            );
        let found = tries.into_iter().find(|v| {
            let one = Value::Object(Map::from_iter([(key.clone(), v.clone())]));
            serde_json::from_value::<S>(one).is_ok_and(|s| s == default)
        });
        match found {
            Some(v) => out.insert(key, v),
            None => return Err(format!("the default of '{key}' cannot be told")),
        };
    }
    Ok(out)
}

/// The settings of the stage `table` (`process`, `fem`, `compare`, `smooth`, `identify`) with
/// their defaults, as a JSON object.
pub fn stage_defaults(table: &str) -> Result<Map<String, Value>, String> {
    use super::{CompareSection, FemSection, ProcessSection};
    match table {
        "process" => defaults::<ProcessSection>(&[]),
        "fem" => defaults::<FemSection>(&[]),
        "compare" => defaults::<CompareSection>(&[(
            "max_lag_s",
            Value::from(crate::compare_measured::DEFAULT_MAX_LAG_S),
        )]),
        "smooth" => defaults::<crate::smooth::SmoothSettings>(&[]),
        "identify" => defaults::<crate::identify::IdentifySpec>(&[(
            "seed",
            Value::from(crate::identify::DEFAULT_SEED),
        )]),
        other => Err(format!("no stage '{other}' has settings")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stage's defaults are told for every key, and each reads back as the default.
    #[test]
    fn every_key_has_its_default() {
        for table in ["process", "fem", "compare", "smooth", "identify"] {
            let d = stage_defaults(table).unwrap_or_else(|e| panic!("[{table}] {e}"));
            assert!(d.len() >= 5, "[{table}] {d:?}");
        }
        let p = stage_defaults("process").expect("process");
        assert_eq!(p["calibrate_bands"], Value::from(0));
        assert_eq!(p["stabilise"], Value::from(false));
        assert_eq!(p["periodic"], Value::from("auto"));
        assert_eq!(p["noise_m"], Value::Null);
        assert_eq!(p.len(), 18);
        let f = stage_defaults("fem").expect("fem");
        assert_eq!(f["response"], Value::from(true));
        let c = stage_defaults("compare").expect("compare");
        assert_eq!(c["measured_columns"], serde_json::json!({}));
    }
}
