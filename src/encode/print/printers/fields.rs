//! What every printer reads objects with: readers over versioned JSON that
//! give Go's zero value for what is missing, and the shapes of a printer's
//! functions.

use crate::encode::print::row::RowBuilder;
use serde_json::Value;

/// Appends one object's cells (and conditions) to a row.
pub type RowFn = fn(&Value, &mut RowBuilder);

/// The key a list printer sorts a page's rows by, before their names.
pub type OrderFn = fn(&Value) -> i64;

/// The value at a path of object keys.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// A string field, "" when missing.
pub(crate) fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

/// An integer field, 0 when missing.
pub(crate) fn int(v: &Value, path: &[&str]) -> i64 {
    at(v, path).and_then(Value::as_i64).unwrap_or(0)
}

/// A boolean field, false when missing.
pub(crate) fn flag(v: &Value, path: &[&str]) -> bool {
    at(v, path).and_then(Value::as_bool).unwrap_or(false)
}

/// An array field, empty when missing.
pub(crate) fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The number of entries of an array or map field.
pub(crate) fn count(v: &Value, path: &[&str]) -> usize {
    match at(v, path) {
        Some(Value::Array(a)) => a.len(),
        Some(Value::Object(m)) => m.len(),
        _ => 0,
    }
}

/// `metadata.name` and the age, which most printers start or end with.
pub(crate) fn name(v: &Value) -> &str {
    s(v, &["metadata", "name"])
}

pub(crate) fn created(v: &Value) -> Option<&Value> {
    at(v, &["metadata", "creationTimestamp"])
}
