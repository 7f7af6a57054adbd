//! Attribute values: building them from Rust values and reading them back.
//!
//! Generic conversions only (strings, numbers, booleans, string lists); how a domain
//! record maps to an item lives with that domain. A value of the wrong type is a
//! corrupt item, named by operation, never by key or value.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::corrupt;
use crate::store::StoreError;

pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(super) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(super) fn get_s(op: &'static str, item: &Item, name: &str) -> Result<String, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        _ => Err(corrupt(op)),
    }
}

pub(super) fn get_opt_s(
    op: &'static str,
    item: &Item,
    name: &str,
) -> Result<Option<String>, StoreError> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(_) => Err(corrupt(op)),
    }
}

pub(super) fn get_u64(op: &'static str, item: &Item, name: &str) -> Result<u64, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| corrupt(op)),
        _ => Err(corrupt(op)),
    }
}

/// A number attribute that may be absent.
pub(super) fn get_opt_u64(
    op: &'static str,
    item: &Item,
    name: &str,
) -> Result<Option<u64>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => v.parse().map(Some).map_err(|_| corrupt(op)),
        Some(_) => Err(corrupt(op)),
    }
}

pub(super) fn get_bool(op: &'static str, item: &Item, name: &str) -> Result<bool, StoreError> {
    match item.get(name) {
        Some(AttributeValue::Bool(v)) => Ok(*v),
        _ => Err(corrupt(op)),
    }
}

/// A list of strings (a list, not a string set: a set cannot be empty).
pub(super) fn string_list(values: &[String]) -> AttributeValue {
    AttributeValue::L(values.iter().map(|v| s(v.as_str())).collect())
}

/// A list of strings as written, or a string set written by hand.
pub(super) fn get_strings(
    op: &'static str,
    item: &Item,
    name: &str,
) -> Result<Vec<String>, StoreError> {
    match item.get(name) {
        Some(AttributeValue::L(list)) => list
            .iter()
            .map(|v| match v {
                AttributeValue::S(p) => Ok(p.clone()),
                _ => Err(corrupt(op)),
            })
            .collect(),
        Some(AttributeValue::Ss(set)) => Ok(set.clone()),
        _ => Err(corrupt(op)),
    }
}

/// Adds the optional string attributes that are present.
pub(super) fn insert_optional(item: &mut Item, values: &[(&str, &Option<String>)]) {
    for (name, value) in values {
        if let Some(v) = value {
            item.insert(name.to_string(), s(v.as_str()));
        }
    }
}
