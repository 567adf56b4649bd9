//! An object's metadata as the apiserver encodes an `ObjectMeta`, made once
//! when the object is cached: what PartialObjectMetadata and Table rows are
//! built from. Built-in objects' metadata bytes are reused as they are (but
//! for the annotations their internal form holds elsewhere); a custom
//! resource's metadata is re-encoded in `ObjectMeta` field order.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// `metav1.ObjectMeta` in its field order, with its `omitempty` rules.
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectMeta<'a> {
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    generate_name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    namespace: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    self_link: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    uid: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    resource_version: std::borrow::Cow<'a, str>,
    #[serde(default, skip_serializing_if = "is_zero")]
    generation: i64,
    /// Not omitted: a zero time is `null`.
    #[serde(borrow, default)]
    creation_timestamp: Option<&'a RawValue>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    deletion_timestamp: Option<&'a RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deletion_grace_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "map_empty")]
    labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "map_empty")]
    annotations: BTreeMap<String, String>,
    #[serde(borrow, default, skip_serializing_if = "Vec::is_empty")]
    owner_references: Vec<OwnerReference<'a>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    finalizers: Vec<String>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    cluster_name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Vec::is_empty")]
    managed_fields: Vec<ManagedFieldsEntry<'a>>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnerReference<'a> {
    #[serde(borrow, default)]
    api_version: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    uid: std::borrow::Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    controller: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    block_owner_deletion: Option<bool>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct ManagedFieldsEntry<'a> {
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    manager: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    operation: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    api_version: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    time: Option<&'a RawValue>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    fields_type: std::borrow::Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    fields_v1: Option<&'a RawValue>,
    #[serde(borrow, default, skip_serializing_if = "str::is_empty")]
    subresource: std::borrow::Cow<'a, str>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn map_empty(m: &BTreeMap<String, String>) -> bool {
    m.is_empty()
}

/// A custom resource's metadata (sorted keys) as an `ObjectMeta` encodes.
/// Metadata the apiserver would not have written (a string generation,
/// say) is kept as it came rather than costing the object its place in
/// the cache.
pub fn object_meta(raw: &str) -> Bytes {
    reencode(raw, |_| ()).unwrap_or_else(|| Bytes::copy_from_slice(raw.as_bytes()))
}

/// Metadata re-encoded in `ObjectMeta` order after a change, escaped as
/// Go escapes; `None` if it is not metadata the apiserver would write.
fn reencode(raw: &str, change: impl FnOnce(&mut ObjectMeta)) -> Option<Bytes> {
    let mut meta = serde_json::from_str::<ObjectMeta>(raw).ok()?;
    change(&mut meta);
    let v = serde_json::to_vec(&meta).ok()?;
    Some(Bytes::from(crate::go::json::escape(&v)))
}

/// Annotations a versioned object carries for fields its internal form
/// holds instead (apps/v1's conversions move them into the spec;
/// autoscaling's keep what other versions have fields for, and drop all
/// four, set or not, converting to the internal type).
fn conversion_annotations(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("apps", "DaemonSet") => &["deprecated.daemonset.template.generation"],
        ("apps", "Deployment") => &["deprecated.deployment.rollback.to"],
        ("autoscaling", "HorizontalPodAutoscaler") => &[
            "autoscaling.alpha.kubernetes.io/metrics",
            "autoscaling.alpha.kubernetes.io/behavior",
            "autoscaling.alpha.kubernetes.io/current-metrics",
            "autoscaling.alpha.kubernetes.io/conditions",
        ],
        _ => &[],
    }
}

/// A built-in object's metadata as the apiserver's internal object has
/// it, which is what PartialObjectMetadata and Table rows are made from:
/// the versioned metadata, less any annotation its conversion moves into
/// the spec. `None` when that is the versioned metadata unchanged.
pub fn internal_meta(group: &str, kind: &str, raw: &str) -> Option<Bytes> {
    let keys = conversion_annotations(group, kind);
    if !keys.iter().any(|k| raw.contains(k)) {
        return None;
    }
    reencode(raw, |m| {
        for key in keys {
            // Deployment's moves only a non-empty revision.
            if m.annotations
                .get(*key)
                .is_some_and(|v| !v.is_empty() || kind != "Deployment")
            {
                m.annotations.remove(*key);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_resource_metadata_is_reencoded_in_object_meta_order() {
        let sorted = r#"{"annotations":{"b":"2","a":"1"},"creationTimestamp":"2026-01-01T00:00:00Z","generation":3,"labels":{"x":"y"},"managedFields":[{"apiVersion":"x/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z"}],"name":"w","namespace":"ns","ownerReferences":[{"apiVersion":"v1","blockOwnerDeletion":true,"controller":true,"kind":"Pod","name":"p","uid":"u1"}],"resourceVersion":"7","uid":"u2","unknownField":1}"#;
        let out = object_meta(sorted);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"name":"w","namespace":"ns","uid":"u2","resourceVersion":"7","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"x":"y"},"annotations":{"a":"1","b":"2"},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u1","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"m","operation":"Update","apiVersion":"x/v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]}"#
        );
    }

    #[test]
    fn internal_metadata_lacks_the_annotations_conversions_move_into_the_spec() {
        let ds = r#"{"name":"d","generation":1,"creationTimestamp":null,"annotations":{"deprecated.daemonset.template.generation":"1"}}"#;
        assert_eq!(
            &internal_meta("apps", "DaemonSet", ds).unwrap()[..],
            br#"{"name":"d","generation":1,"creationTimestamp":null}"#
        );
        let dep = r#"{"name":"d","creationTimestamp":null,"annotations":{"a":"<x>","deprecated.deployment.rollback.to":"3"}}"#;
        assert_eq!(
            &internal_meta("apps", "Deployment", dep).unwrap()[..],
            br#"{"name":"d","creationTimestamp":null,"annotations":{"a":"\u003cx\u003e"}}"#
        );
        let empty = r#"{"name":"d","creationTimestamp":null,"annotations":{"deprecated.deployment.rollback.to":""}}"#;
        assert_eq!(
            &internal_meta("apps", "Deployment", empty).unwrap()[..],
            empty.as_bytes()
        );
        // As autoscaling/v1 and v2beta1 write them (and v1.20 read them off).
        let hpa = r#"{"name":"h","creationTimestamp":null,"annotations":{"autoscaling.alpha.kubernetes.io/behavior":"{}","autoscaling.alpha.kubernetes.io/conditions":"[]","autoscaling.alpha.kubernetes.io/current-metrics":"","autoscaling.alpha.kubernetes.io/metrics":"[]","keep":"me"}}"#;
        assert_eq!(
            &internal_meta("autoscaling", "HorizontalPodAutoscaler", hpa).unwrap()[..],
            br#"{"name":"h","creationTimestamp":null,"annotations":{"keep":"me"}}"#
        );
        let only = r#"{"name":"h","creationTimestamp":null,"annotations":{"autoscaling.alpha.kubernetes.io/current-metrics":"[]"}}"#;
        assert_eq!(
            &internal_meta("autoscaling", "HorizontalPodAutoscaler", only).unwrap()[..],
            br#"{"name":"h","creationTimestamp":null}"#
        );
        assert!(internal_meta("apps", "DaemonSet", r#"{"name":"d"}"#).is_none());
        assert!(internal_meta("", "ConfigMap", ds).is_none());
    }

    #[test]
    fn reencoded_metadata_is_escaped_as_go_escapes_it() {
        let out = object_meta(r#"{"annotations":{"a":"<&>"},"name":"w"}"#);
        assert_eq!(
            &out[..],
            br#"{"name":"w","creationTimestamp":null,"annotations":{"a":"\u003c\u0026\u003e"}}"#
        );
    }

    #[test]
    fn a_missing_creation_timestamp_is_null() {
        let out = object_meta(r#"{"name":"w"}"#);
        assert_eq!(&out[..], br#"{"name":"w","creationTimestamp":null}"#);
    }

    #[test]
    fn metadata_the_apiserver_would_not_write_is_kept_as_it_came() {
        let odd = r#"{"generation":"7","name":"w"}"#;
        assert_eq!(&object_meta(odd)[..], odd.as_bytes());
    }
}
