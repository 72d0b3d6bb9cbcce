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
    pub choices: &'static str,
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
