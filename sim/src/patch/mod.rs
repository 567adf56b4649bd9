//! What a PATCH does to a simulated object: JSON merge patches (RFC 7386),
//! JSON patches (RFC 6902) and strategic merge patches, each as the v1.20
//! apiserver applies them — evanphx/json-patch v4.9.0 for the first two,
//! apimachinery's `strategicpatch` for the third — with the errors it
//! answers, quirks included (a JSON patch `replace` of a missing key adds
//! it; negative array indices count from the end).
//!
//! The apiserver applies a patch to its typed object and decodes the result
//! into the type again, which drops unknown fields and puts fields in the
//! struct's order; the simulator has no schema, so the patched JSON is kept
//! as it is (keys a patch adds to an object come after the ones it had).
//!
//! Each format is its own part, a port of the Go code the apiserver runs:
//! `merge` and `json` (evanphx's `MergePatch` and `Patch.Apply`) and
//! `strategic` (apimachinery's `strategicpatch`, with the simulated types'
//! merge keys in `strategic_keys`). This part holds the formats and the dispatch;
//! `error` the errors they share.

mod error;
mod json;
mod merge;
mod strategic;
mod strategic_keys;

pub use error::PatchError;

use json::json_patch;
use kubecache::go::strconv::quote as go_quote;
use merge::merge_patch;
use serde_json::Value;
use strategic::strategic_patch;

/// The patch formats the simulator takes, by `Content-Type`. Server-side
/// apply (`application/apply-patch+yaml`) is not simulated: it gets the 415
/// an apiserver without the ServerSideApply feature answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
}

impl PatchType {
    /// The media type before any `;` parameters, as the apiserver reads it.
    pub fn from_content_type(header: Option<&str>) -> Option<PatchType> {
        let media = header.unwrap_or("");
        let media = media.split_once(';').map_or(media, |(m, _)| m);
        match media {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            _ => None,
        }
    }
}

/// Applies `patch` to `current` and returns the patched object.
pub fn apply(
    ty: PatchType,
    kind: &str,
    current: &Value,
    patch: &[u8],
) -> Result<Value, PatchError> {
    let patched = match ty {
        PatchType::Merge => merge_patch(current, patch)?,
        PatchType::Json => json_patch(current, patch)?,
        PatchType::Strategic => strategic_patch(kind, current, patch)?,
    };
    if patched.is_object() {
        Ok(patched)
    } else {
        let js = serde_json::to_string(&patched).unwrap_or_default();
        Err(PatchError::NotAnObject(format!(
            "{}: couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            go_quote(&js),
            kubecache::go::json::kind(&patched),
        )))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// The object the formats' tests patch.
    pub(super) fn cm() -> Value {
        json!({"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"},
            "finalizers": ["x", "y"]}, "data": {"k": "v"}})
    }

    #[test]
    fn syntax_errors_are_worded_as_gos_scanner_words_them() {
        let err = |body: &str| match apply(PatchType::Strategic, "Pod", &cm(), body.as_bytes()) {
            Err(PatchError::BadRequest(m)) => m,
            other => panic!("{body}: {other:?}"),
        };
        assert_eq!(err(""), "unexpected end of JSON input");
        assert_eq!(err(r#"{"a":"#), "unexpected end of JSON input");
        assert_eq!(
            err("x"),
            "invalid character 'x' looking for beginning of value"
        );
        assert_eq!(err(r#"{"a" 1}"#), "invalid character '1' after object key");
        assert_eq!(
            err(r#"{"a":1 "b":2}"#),
            "invalid character '\"' after object key:value pair"
        );
        assert_eq!(
            err(r#"{1:2}"#),
            "invalid character '1' looking for beginning of object key string"
        );
        assert_eq!(err("{}\n x"), "invalid character 'x' after top-level value");
        assert_eq!(
            err(r#"{"a":[1 2]}"#),
            "invalid character '2' after array element"
        );
        assert_eq!(err("{\"a\":1\t\n\n"), "unexpected end of JSON input");
        assert_eq!(
            err("\u{1}"),
            "invalid character '\\x01' looking for beginning of value"
        );
        assert_eq!(
            err("\n\n {\"a\"\t}"),
            "invalid character '}' after object key"
        );
    }

    #[test]
    fn the_content_type_names_the_patch_type_before_its_parameters() {
        assert_eq!(
            PatchType::from_content_type(Some("application/merge-patch+json; charset=utf-8")),
            Some(PatchType::Merge)
        );
        assert_eq!(
            PatchType::from_content_type(Some("application/apply-patch+yaml")),
            None
        );
        assert_eq!(PatchType::from_content_type(None), None);
    }
}
