//! Closed sets named in files and on the command line (an element kind, an edge mode, a
//! method): the error of a name outside the set, and serde helpers that read and write such a
//! value by its name (`FromStr` and `Display`), so that a pipeline file holds the typed value.

use std::fmt::Display;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serializer};

/// A name that is not one of a closed set's, with the names that are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{given}\" is not {what}: use {choices}")]
pub struct UnknownName {
    /// What the set is, with its article ("a lever element", "an edge mode").
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The names of the set, in words ("quintic or frame").
    pub choices: String,
}

/// A value of a closed set by its name, from the set's table of (name, value); a name outside it
/// is refused with `what` the set is and the names that are.
pub fn by_name<T: Copy>(
    name: &str,
    what: &'static str,
    table: &[(&'static str, T)],
) -> Result<T, UnknownName> {
    if let Some((_, v)) = table.iter().find(|(n, _)| *n == name) {
        return Ok(*v);
    }
    let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
    let choices = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    Err(UnknownName {
        what,
        given: name.to_string(),
        choices,
    })
}

/// Read a value by its name (serde `deserialize_with`).
pub fn de_name<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: Display,
{
    let name = String::deserialize(d)?;
    name.parse().map_err(serde::de::Error::custom)
}

/// Write a value as its name (serde `serialize_with`).
pub fn ser_name<S: Serializer, T: Display>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// Read an optional value by its name (serde `deserialize_with`, with `default`).
pub fn de_opt_name<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: Display,
{
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(name) => name.parse().map(Some).map_err(serde::de::Error::custom),
    }
}

/// Write an optional value as its name, or nothing (serde `serialize_with`).
pub fn ser_opt_name<S: Serializer, T: Display>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// A step that runs where the mechanism and the motion have what it assumes (`Auto`, the
/// default), or always (`On`), or never (`Off`): the refit in a crank's angle, the horizontal's
/// refinement. Named "auto", "on", "off"; a pipeline file may also give true or false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Switch {
    /// Where it applies.
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl Switch {
    /// Whether the step runs, `applies` saying whether the mechanism has what it assumes.
    pub fn resolve(self, applies: bool) -> bool {
        match self {
            Switch::Auto => applies,
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

impl FromStr for Switch {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Switch, UnknownName> {
        by_name(
            name,
            "a switch",
            &[
                ("auto", Switch::Auto),
                ("on", Switch::On),
                ("off", Switch::Off),
                ("true", Switch::On),
                ("false", Switch::Off),
            ],
        )
    }
}

impl Display for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Switch::Auto => "auto",
            Switch::On => "on",
            Switch::Off => "off",
        })
    }
}

impl From<bool> for Switch {
    fn from(on: bool) -> Switch {
        if on {
            Switch::On
        } else {
            Switch::Off
        }
    }
}

/// Read a [`Switch`] from a name ("auto", "on", "off") or a boolean (serde `deserialize_with`).
pub fn de_switch<'de, D: Deserializer<'de>>(d: D) -> Result<Switch, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Flag(bool),
        Name(String),
    }
    match Given::deserialize(d)? {
        Given::Flag(b) => Ok(b.into()),
        Given::Name(n) => n.parse().map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    /// A name of the set gives its value; another is refused with the set's names in words.
    #[test]
    fn names_and_refusal() {
        let table = [("pinned", 1), ("clamped-free", 2), ("free-free", 3)];
        assert_eq!(super::by_name("free-free", "a support", &table), Ok(3));
        let e = super::by_name("loose", "a support", &table).unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"loose\" is not a support: use pinned, clamped-free or free-free"
        );
        let e = super::by_name("x", "a unit", &[("m", 1.0)]).unwrap_err();
        assert_eq!(e.to_string(), "\"x\" is not a unit: use m");
    }

    /// A switch reads its names and the booleans of older pipeline files, and resolves.
    #[test]
    fn switch_names_and_booleans() {
        use super::Switch;
        #[derive(serde::Deserialize)]
        struct S {
            #[serde(deserialize_with = "super::de_switch")]
            s: Switch,
        }
        let read =
            |v: serde_json::Value| serde_json::from_value::<S>(serde_json::json!({ "s": v }));
        assert_eq!(read(true.into()).unwrap().s, Switch::On);
        assert_eq!(read(false.into()).unwrap().s, Switch::Off);
        assert_eq!(read("auto".into()).unwrap().s, Switch::Auto);
        let e = read("maybe".into()).err().unwrap().to_string();
        assert!(
            e.contains("\"maybe\" is not a switch: use auto, on, off, true or false"),
            "{e}"
        );
        assert!(Switch::Auto.resolve(true) && !Switch::Auto.resolve(false));
        assert!(Switch::On.resolve(false) && !Switch::Off.resolve(true));
        assert_eq!(Switch::default().to_string(), "auto");
    }
}
