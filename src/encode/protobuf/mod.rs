//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) from the
//! cache. Each object's message is transcoded once per version from the
//! JSON the cache holds ([`transcode`], against the Go types' [`schema`]
//! of the release the codec follows: v1.20's or v1.36's) and kept on its
//! entry; bodies are that message in the
//! envelope the apiserver's protobuf serializer writes: `k8s\0` and a
//! `runtime.Unknown` naming the kind. Lists splice the kept messages, as
//! JSON lists splice the kept JSON. Bodies clients write in protobuf are
//! read back into JSON by [`decode`].

pub mod decode;
pub mod schema;
pub mod transcode;
mod wire;

use super::list_meta::ListMeta;
use super::recycle::{self, NoMemory};
use bytes::Bytes;

pub use decode::{decode_message, decode_message_with, decode_object, DecodeError};
pub use schema::{Message, Schema};
pub use transcode::TranscodeError;

/// The protobuf serializer's magic prefix.
pub const MAGIC: &[u8] = b"k8s\0";
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// `runtime.Unknown`'s fields before `raw`: its TypeMeta.
fn type_meta(out: &mut Vec<u8>, api_version: &str, kind: &str) {
    let mut tm = Vec::with_capacity(api_version.len() + kind.len() + 4);
    wire::len_field(&mut tm, 1, api_version.as_bytes());
    wire::len_field(&mut tm, 2, kind.as_bytes());
    wire::len_field(out, 1, &tm);
}

/// `runtime.Unknown`'s fields after `raw`: the empty contentEncoding and
/// contentType, which gogo writes all the same.
const UNKNOWN_TAIL: &[u8] = b"\x1a\x00\x22\x00";

/// One object as the serializer writes it: `k8s\0`, then `runtime.Unknown`
/// with the kind and the object's message as `raw`.
pub fn envelope(api_version: &str, kind: &str, message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 64);
    out.extend_from_slice(MAGIC);
    type_meta(&mut out, api_version, kind);
    wire::len_field(&mut out, 2, message);
    out.extend_from_slice(UNKNOWN_TAIL);
    out
}

/// A list (`{metadata: ListMeta, items}`) in its envelope, its items'
/// messages spliced in: [`list_head`], each item ([`put_list_item`]),
/// [`LIST_TAIL`] (`encode::list_body` writes lists with them).
pub fn list<'a>(
    api_version: &str,
    list_kind: &str,
    meta: &ListMeta,
    items: impl Iterator<Item = &'a [u8]> + Clone,
) -> Result<Bytes, NoMemory> {
    let items_len: usize = items.clone().map(|m| list_item_len(m.len())).sum();
    let head = list_head(api_version, list_kind, meta, items_len);
    let mut out = recycle::buffer(head.len() + items_len + LIST_TAIL.len())?;
    out.extend_from_slice(&head);
    for m in items {
        put_list_item(&mut out, m);
    }
    out.extend_from_slice(LIST_TAIL);
    Ok(recycle::freeze(out))
}

/// A list's bytes before its items, whose messages (with their heads,
/// [`list_item_len`]) take `items_len` bytes: the envelope's magic, type
/// meta and `raw`'s head, the list message's head and its ListMeta.
pub fn list_head(api_version: &str, list_kind: &str, meta: &ListMeta, items_len: usize) -> Vec<u8> {
    let mut lm = Vec::new();
    wire::len_field(&mut lm, 1, b""); // selfLink
    wire::len_field(&mut lm, 2, meta.resource_version.to_string().as_bytes());
    wire::len_field(
        &mut lm,
        3,
        meta.continue_token.as_deref().unwrap_or("").as_bytes(),
    );
    if let Some(n) = meta.remaining_item_count {
        wire::varint_field(&mut lm, 4, n as u64);
    }
    let list_len = wire::len_head_len(1, lm.len()) + lm.len() + items_len;
    let mut out = Vec::with_capacity(lm.len() + 64 + api_version.len() + list_kind.len());
    out.extend_from_slice(MAGIC);
    type_meta(&mut out, api_version, list_kind);
    wire::len_head(&mut out, 2, list_len);
    wire::len_field(&mut out, 1, &lm);
    out
}

/// The bytes an item's message of `len` bytes takes in a list: its
/// field's head and itself.
pub fn list_item_len(len: usize) -> usize {
    wire::len_head_len(2, len) + len
}

/// An item's message, as a list's `items` field.
pub fn put_list_item(out: &mut Vec<u8>, message: &[u8]) {
    wire::len_field(out, 2, message);
}

/// A list's bytes after its items: the envelope's tail.
pub const LIST_TAIL: &[u8] = UNKNOWN_TAIL;

/// One frame of a protobuf watch: a 4-byte big-endian length, then a
/// `WatchEvent{type, object: RawExtension{raw: the object's envelope}}`.
pub fn watch_event(kind: &str, object: &[u8]) -> Bytes {
    let mut raw = Vec::with_capacity(object.len() + 8);
    wire::len_field(&mut raw, 1, object);
    let mut ev = Vec::with_capacity(raw.len() + 24);
    ev.extend_from_slice(&[0; 4]);
    wire::len_field(&mut ev, 1, kind.as_bytes());
    wire::len_field(&mut ev, 2, &raw);
    let n = (ev.len() - 4) as u32;
    ev[..4].copy_from_slice(&n.to_be_bytes());
    Bytes::from(ev)
}

/// The message of a kind's JSON object, as `schema`'s release writes it.
pub fn object_message_in(
    schema: &Schema,
    api_version: &str,
    kind: &str,
    json: &[u8],
) -> Result<Vec<u8>, TranscodeError> {
    let msg = schema
        .kind(api_version, kind)
        .ok_or_else(|| TranscodeError::NoMessage(format!("{api_version}/{kind}")))?;
    transcode::message(schema, msg, json)
}

/// The message of a kind's JSON object, as v1.20 writes it (the
/// simulator's release; a codec writes its personality's with
/// [`object_message_in`]).
pub fn object_message(
    api_version: &str,
    kind: &str,
    json: &[u8],
) -> Result<Vec<u8>, TranscodeError> {
    object_message_in(Schema::v1_20(), api_version, kind, json)
}

/// A JSON object of a kind (its `apiVersion` and `kind` in it) in its
/// envelope, as `schema`'s release writes it: what errors and bookmarks
/// are written as.
pub fn object_in(
    schema: &Schema,
    api_version: &str,
    kind: &str,
    json: &[u8],
) -> Result<Vec<u8>, TranscodeError> {
    Ok(envelope(
        api_version,
        kind,
        &object_message_in(schema, api_version, kind, json)?,
    ))
}

/// [`object_in`] as v1.20 writes it.
pub fn object(api_version: &str, kind: &str, json: &[u8]) -> Result<Vec<u8>, TranscodeError> {
    object_in(Schema::v1_20(), api_version, kind, json)
}

/// A PartialObjectMetadata's message: `{metadata}`, from the JSON of an
/// `ObjectMeta`, as `schema`'s release writes it (v1.20's has a
/// clusterName, 15, always written; v1.36's has none).
pub fn partial_message_in(schema: &Schema, meta: &[u8]) -> Result<Vec<u8>, TranscodeError> {
    let msg = schema
        .message("apimachinery/pkg/apis/meta/v1.ObjectMeta")
        .ok_or_else(|| TranscodeError::NoMessage("ObjectMeta".into()))?;
    let m = transcode::message(schema, msg, meta)?;
    let mut out = Vec::with_capacity(m.len() + 4);
    wire::len_field(&mut out, 1, &m);
    Ok(out)
}

/// [`partial_message_in`] as v1.20 writes it.
pub fn partial_message(meta: &[u8]) -> Result<Vec<u8>, TranscodeError> {
    partial_message_in(Schema::v1_20(), meta)
}

/// A `Status` as the apiserver writes it for a protobuf client: the
/// Status message in the serializer's envelope. metav1.Status (and its
/// details and causes) are the same message in every release kubecache
/// knows (a test below holds v1.20's and v1.36's to it), so an error needs
/// no codec to be written.
pub fn status(s: &crate::status::Status) -> Bytes {
    // Every field of a Status has a number in metav1.Status.
    let json = serde_json::to_vec(s).expect("a Status always serializes");
    let m = object("v1", "Status", &json).expect("a Status always transcodes");
    Bytes::from(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_frame_is_its_length_and_a_watch_event() {
        let f = watch_event("ADDED", b"k8s\0x");
        assert_eq!(&f[..4], &[0, 0, 0, 16]);
        assert_eq!(&f[4..], b"\x0a\x05ADDED\x12\x07\x0a\x05k8s\0x");
    }

    #[test]
    fn a_list_splices_its_items_after_its_list_meta() {
        let meta = ListMeta {
            resource_version: 7,
            continue_token: None,
            remaining_item_count: Some(2),
        };
        let items: [&[u8]; 2] = [b"ab", b"c"];
        let b = list("v1", "PodList", &meta, items.iter().copied()).unwrap();
        let expect = [
            &b"k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList"[..],
            b"\x12\x12",
            b"\x0a\x09\x0a\x00\x12\x017\x1a\x00\x20\x02",
            b"\x12\x02ab\x12\x01c",
            b"\x1a\x00\x22\x00",
        ]
        .concat();
        assert_eq!(&b[..], &expect[..]);
    }

    #[test]
    fn a_status_is_the_same_message_in_v1_20_and_v1_36() {
        for name in ["Status", "StatusDetails", "StatusCause", "ListMeta"] {
            let name = format!("apimachinery/pkg/apis/meta/v1.{name}");
            // Message types are indices into each schema's own list: only
            // whether a field is a message is compared.
            let fields = |s: &'static Schema| {
                let m = s.message(&name).unwrap();
                m.fields
                    .iter()
                    .map(|f| (f.json, f.number, f.card, format!("{:?}", f.ty)))
                    .map(|(j, n, c, t)| (j, n, c, t.starts_with("Message")))
                    .collect::<Vec<_>>()
            };
            let (old, mut new) = (fields(Schema::v1_20()), fields(Schema::v1_36()));
            // 1.36's ListMeta.shardInfo (alpha), which no Status sets.
            new.retain(|f| f.0 != "shardInfo");
            assert_eq!(old, new, "{name}");
        }
        let s = crate::status::Status::not_found("apps", "deployments", "d");
        let json = serde_json::to_vec(&s).unwrap();
        assert_eq!(
            object_in(Schema::v1_36(), "v1", "Status", &json).unwrap(),
            &status(&s)[..]
        );
    }

    #[test]
    fn v1_36s_partial_object_metadata_has_no_cluster_name() {
        let meta = br#"{"name":"a","namespace":"n"}"#;
        let old = partial_message(meta).unwrap();
        let new = partial_message_in(Schema::v1_36(), meta).unwrap();
        // v1.20 writes clusterName (15) empty: `z\0`; v1.36 has no 15.
        assert!(old.ends_with(b"z\x00"), "{old:?}");
        assert_eq!(old.len(), new.len() + 2);
        assert!(!new.windows(2).any(|w| w == b"z\x00"));
    }

    #[test]
    fn every_kind_of_status_is_written_as_protobuf() {
        let cause = crate::status::Cause {
            reason: "FieldValueInvalid".into(),
            message: "bad".into(),
            field: "spec".into(),
        };
        let mut expired = crate::status::Status::expired("too old");
        expired.metadata.continue_token = Some("abc".into());
        for s in [
            crate::status::Status::bad_request("x"),
            crate::status::Status::not_found("apps", "deployments", "d"),
            crate::status::Status::conflict_because("", "pods", "p", "changed"),
            crate::status::Status::invalid("", "Pod", "p", vec![cause]),
            crate::status::Status::too_large_resource_version(9, 3),
            crate::status::Status::internal("boom"),
            crate::status::Status::no_acceptable_route(),
            expired,
        ] {
            let b = status(&s);
            assert!(
                b.starts_with(b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Status"),
                "{s:?}"
            );
        }
    }

    /// The schemas of v1.21 to v1.36, oldest first.
    fn releases() -> Vec<&'static Schema> {
        (21..=36).map(Schema::of_release).collect()
    }

    #[test]
    fn each_release_serves_the_kinds_it_serves_by_default() {
        let has = |s: &Schema, av: &str, k: &str| s.kind(av, k).is_some();
        for (i, s) in releases().into_iter().enumerate() {
            let minor = 21 + i;
            assert_eq!(s.release(), format!("v1.{minor}"));
            // In every one: the kinds all serve.
            for (av, k) in [
                ("v1", "Pod"),
                ("apps/v1", "Deployment"),
                ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                ("batch/v1", "Job"),
            ] {
                assert!(has(s, av, k), "v1.{minor} {av}/{k}");
            }
            // Betas as the deprecation guide removed them: batch/v1beta1
            // and policy/v1beta1 after 1.24, autoscaling/v2beta2 after
            // 1.25, flowcontrol v1beta3 from 1.26 to 1.31; GA versions as
            // they came: batch/v1 cron jobs 1.21, autoscaling/v2 1.23,
            // ValidatingAdmissionPolicy 1.30.
            let gv = [
                ("batch/v1beta1", "CronJob", minor <= 24),
                ("policy/v1beta1", "PodSecurityPolicy", minor <= 24),
                (
                    "autoscaling/v2beta2",
                    "HorizontalPodAutoscaler",
                    minor <= 25,
                ),
                (
                    "flowcontrol.apiserver.k8s.io/v1beta3",
                    "FlowSchema",
                    (26..=31).contains(&minor),
                ),
                ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", minor >= 29),
                ("batch/v1", "CronJob", true),
                ("autoscaling/v2", "HorizontalPodAutoscaler", minor >= 23),
                (
                    "admissionregistration.k8s.io/v1",
                    "ValidatingAdmissionPolicy",
                    minor >= 30,
                ),
            ];
            for (av, k, served) in gv {
                assert_eq!(has(s, av, k), served, "v1.{minor} {av}/{k}");
            }
            // IP addresses and service CIDRs are GA at networking v1 in
            // 1.33 (v1beta1 before, off by default).
            assert_eq!(has(s, "networking.k8s.io/v1", "ServiceCIDR"), minor >= 33);
            assert_eq!(has(s, "networking.k8s.io/v1", "IPAddressList"), minor >= 33);
            assert!(!has(s, "networking.k8s.io/v1beta1", "ServiceCIDR"));
            // resource.k8s.io/v1 and storage's VolumeAttributesClass are
            // GA, so served, from 1.34 (1.33 has only betas, off by
            // default); MutatingAdmissionPolicy v1 from 1.36.
            let ga_1_34 = minor >= 34;
            assert_eq!(has(s, "resource.k8s.io/v1", "ResourceClaim"), ga_1_34);
            assert_eq!(has(s, "resource.k8s.io/v1", "DeviceClassList"), ga_1_34);
            assert_eq!(
                has(s, "storage.k8s.io/v1", "VolumeAttributesClass"),
                ga_1_34
            );
            assert_eq!(
                has(
                    s,
                    "admissionregistration.k8s.io/v1",
                    "MutatingAdmissionPolicy"
                ),
                minor >= 36
            );
            // No beta of them is served by default in any.
            assert!(!has(s, "resource.k8s.io/v1beta1", "ResourceClaim"));
            assert!(!has(s, "resource.k8s.io/v1beta2", "ResourceClaim"));
            assert!(!has(s, "storage.k8s.io/v1beta1", "VolumeAttributesClass"));
        }
        // And each release's own slot, so that an entry's messages are
        // told apart by release.
        let mut slots: Vec<usize> = releases().iter().map(|s| s.slot().into()).collect();
        slots.push(Schema::v1_20().slot().into());
        slots.sort_unstable();
        assert_eq!(slots, (0..Schema::SLOTS).collect::<Vec<_>>());
    }

    /// The field numbers of a message of `schema`.
    fn numbers(schema: &Schema, message: &str) -> Vec<u32> {
        let m = schema.message(message);
        // (A message a release lacks has no fields.)
        m.map(|m| m.fields.iter().map(|f| f.number).collect())
            .unwrap_or_default()
    }

    #[test]
    fn a_release_has_the_fields_of_its_own_and_older_releases_only() {
        // (message, field number, the release that added it)
        let added = [
            ("api/core/v1.PodStatus", 17, 33),        // observedGeneration
            ("api/core/v1.PodCondition", 7, 33),      // observedGeneration
            ("api/apps/v1.DeploymentStatus", 9, 33),  // terminatingReplicas
            ("api/core/v1.PodSpec", 41, 34),          // hostnameOverride
            ("api/core/v1.PodStatus", 18, 34),        // extendedResourceClaimStatus
            ("api/core/v1.Container", 25, 34),        // restartPolicyRules
            ("api/core/v1.EnvVarSource", 5, 34),      // fileKeyRef
            ("api/core/v1.VolumeProjection", 6, 34),  // podCertificate
            ("api/core/v1.PodStatus", 19, 35),        // allocatedResources
            ("api/core/v1.NodeStatus", 14, 35),       // declaredFeatures
            ("api/storage/v1.CSIDriverSpec", 10, 35), // serviceAccountTokenInSecrets
            (
                "apiextensions-apiserver/pkg/apis/apiextensions/v1.CustomResourceDefinitionStatus",
                4,
                35,
            ), // observedGeneration
            ("api/core/v1.VolumeMountStatus", 5, 36), // volumeStatus
            ("api/core/v1.PodSpec", 43, 36),          // schedulingGroup
            ("api/core/v1.PodStatus", 21, 36),        // nodeAllocatableResourceClaimStatuses
            ("api/core/v1.ResourceHealth", 6, 36),    // message
            ("api/resource/v1.Device", 13, 36),       // nodeAllocatableResourceMappings
            ("api/resource/v1.DeviceAttribute", 6, 36), // ints (7 to 9: bools, strings, versions)
            ("api/storage/v1.CSIDriverSpec", 11, 36), // preventPodSchedulingIfMissing
            ("apimachinery/pkg/apis/meta/v1.ListMeta", 5, 36), // shardInfo
        ];
        for (message, number, since) in added {
            for (i, s) in releases().into_iter().enumerate() {
                let minor = 21 + i;
                assert_eq!(
                    numbers(s, message).contains(&number),
                    minor >= since,
                    "v1.{minor} {message} {number}"
                );
            }
        }
        // Older fields as they came and went: ObjectMeta's clusterName
        // (15) to 1.24, a pod's status.resize (14) from 1.27, its
        // status.hostIPs (16) and sidecars' restartPolicy (Container, 24)
        // from 1.28.
        for (i, s) in releases().into_iter().enumerate() {
            let minor = 21 + i;
            let meta = numbers(s, "apimachinery/pkg/apis/meta/v1.ObjectMeta");
            assert_eq!(meta.contains(&15), minor <= 24, "v1.{minor}");
            let status = numbers(s, "api/core/v1.PodStatus");
            assert_eq!(status.contains(&14), minor >= 27, "v1.{minor}");
            assert_eq!(status.contains(&16), minor >= 28, "v1.{minor}");
            let container = numbers(s, "api/core/v1.Container");
            assert_eq!(container.contains(&24), minor >= 28, "v1.{minor}");
            // A pod's spec.workloadRef (42) was 1.35's alone: 1.36
            // replaced it with schedulingGroup (43).
            let spec = numbers(s, "api/core/v1.PodSpec");
            assert_eq!(spec.contains(&42), minor == 35, "v1.{minor}");
        }
    }

    #[test]
    fn v1_36_writes_the_alpha_fields_it_added_and_v1_35_refuses_them() {
        // PodSpec.schedulingGroup is field 43 (tag 0xda 0x02), a
        // PodSchedulingGroup whose podGroupName is its field 1.
        let pod = br#"{"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[{"name":"c","image":"i"}],"schedulingGroup":{"podGroupName":"g"}}}"#;
        let m = object_message_in(Schema::v1_36(), "v1", "Pod", pod).unwrap();
        assert!(m.windows(6).any(|w| w == b"\xda\x02\x03\x0a\x01g"));
        let back = decode::decode_message_with(Schema::v1_36(), "v1", "Pod", &m).unwrap();
        assert_eq!(back["spec"]["schedulingGroup"]["podGroupName"], "g");
        assert!(object_message_in(Schema::v1_35(), "v1", "Pod", pod).is_err());
        // 1.35's workloadRef is no field of 1.36's: such a pod is refused.
        let old = br#"{"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[{"name":"c","image":"i"}],"workloadRef":{"name":"w","podGroup":"g"}}}"#;
        assert!(object_message_in(Schema::v1_35(), "v1", "Pod", old).is_ok());
        assert!(object_message_in(Schema::v1_36(), "v1", "Pod", old).is_err());
        // A device attribute's list of ints (field 6), repeated int64s
        // written unpacked as proto2 does: one tag (0x30) per value.
        let slice = br#"{"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","generation":1,"resourceSliceCount":1},"nodeName":"n","devices":[{"name":"x","attributes":{"a":{"ints":[1,2]}}}]}}"#;
        let (av, kind) = ("resource.k8s.io/v1", "ResourceSlice");
        let m = object_message_in(Schema::v1_36(), av, kind, slice).unwrap();
        assert!(m.windows(4).any(|w| w == b"\x30\x01\x30\x02"));
        assert!(object_message_in(Schema::v1_35(), av, kind, slice).is_err());
        // A list's metadata.shardInfo (5) holds its selector (1).
        let list =
            br#"{"metadata":{"resourceVersion":"5","shardInfo":{"selector":"x"}},"items":[]}"#;
        let m = object_message_in(Schema::v1_36(), "v1", "PodList", list).unwrap();
        assert!(m
            .windows(12)
            .any(|w| w == b"\x0a\x00\x12\x015\x1a\x00\x2a\x03\x0a\x01x"));
        assert!(object_message_in(Schema::v1_35(), "v1", "PodList", list).is_err());
    }

    #[test]
    fn a_resource_health_without_a_message_is_refused_under_v1_36() {
        // Whether 1.36 writes an unset ResourceHealth.message (field 6) is
        // not known (no 1.36 types.go was found to say whether it is a
        // pointer), so such an object is refused — forwarded — rather than
        // perhaps written wrong; one that has a message is written.
        let pod = |health: &str| {
            format!(
                r#"{{"metadata":{{"name":"p","namespace":"n"}},"spec":{{"containers":[{{"name":"c","image":"i"}}]}},"status":{{"containerStatuses":[{{"name":"c","ready":true,"restartCount":0,"image":"i","imageID":"","allocatedResourcesStatus":[{{"name":"claim:x","resources":[{health}]}}]}}]}}}}"#
            )
        };
        let without = pod(r#"{"resourceID":"r","health":"Healthy"}"#);
        let with = pod(r#"{"resourceID":"r","health":"Unhealthy","message":"ECC"}"#);
        let write = |s, p: &str| object_message_in(s, "v1", "Pod", p.as_bytes());
        assert!(write(Schema::v1_36(), &without).is_err());
        let m = write(Schema::v1_36(), &with).unwrap();
        assert!(m.windows(5).any(|w| w == b"\x32\x03ECC"));
        assert!(write(Schema::v1_35(), &without).is_ok());
        assert!(write(Schema::v1_35(), &with).is_err());
    }

    #[test]
    fn a_field_newer_than_the_release_is_refused_not_dropped() {
        let pod = br#"{"metadata":{"name":"p","namespace":"n"},"spec":{"hostnameOverride":"h","containers":[{"name":"c","image":"i"}]}}"#;
        assert!(object_message_in(Schema::v1_33(), "v1", "Pod", pod).is_err());
        let m = object_message_in(Schema::v1_34(), "v1", "Pod", pod).unwrap();
        assert_eq!(
            m,
            object_message_in(Schema::v1_36(), "v1", "Pod", pod).unwrap()
        );
        // A CRD's status.observedGeneration (1.35) likewise.
        let crd = br#"{"metadata":{"name":"ws.example.com"},"spec":{"group":"example.com","names":{"plural":"ws","kind":"W"},"scope":"Namespaced","versions":[]},"status":{"observedGeneration":2}}"#;
        let (av, kind) = ("apiextensions.k8s.io/v1", "CustomResourceDefinition");
        assert!(object_message_in(Schema::v1_34(), av, kind, crd).is_err());
        assert!(object_message_in(Schema::v1_35(), av, kind, crd).is_ok());
    }

    #[test]
    fn a_pod_is_written_without_observed_generations_before_v1_33() {
        // 1.33 added PodStatus.observedGeneration (17) and
        // PodCondition.observedGeneration (7), int64s gogo writes even
        // when 0: v1.32's pod has neither (`\x88\x01\x00`, `\x38\x00`)
        // and reads back the same.
        let pod = br#"{"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
        let old = object_message_in(Schema::v1_32(), "v1", "Pod", pod).unwrap();
        let new = object_message_in(Schema::v1_33(), "v1", "Pod", pod).unwrap();
        // The status (3) is the last field: it ends with its own (17),
        // and its condition, after its message (6, empty), with 7.
        assert!(new.ends_with(b"r\x00\x88\x01\x00") && old.ends_with(b"r\x00"));
        let has = |m: &[u8], b: &[u8]| m.windows(b.len()).any(|w| w == b);
        assert!(has(&new, b"True\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00"));
        assert!(has(&old, b"True\x1a\x00\x22\x00\x2a\x00\x32\x00\x1a"));
        assert_eq!(old.len() + 5, new.len());
        let back = |s, m| decode::decode_message_with(s, "v1", "Pod", m).unwrap();
        assert_eq!(back(Schema::v1_32(), &old), back(Schema::v1_33(), &new));
        // With the field set, v1.32 refuses it (it would be forwarded).
        let set = br#"{"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[]},"status":{"observedGeneration":1}}"#;
        assert!(object_message_in(Schema::v1_32(), "v1", "Pod", set).is_err());
        assert!(object_message_in(Schema::v1_33(), "v1", "Pod", set).is_ok());
    }

    #[test]
    fn object_meta_writes_an_empty_cluster_name_through_v1_24_only() {
        // ObjectMeta.ClusterName, a non-pointer string (15): gogo wrote it
        // even empty (`\x7a\x00`) until 1.25 removed it.
        let cm = br#"{"metadata":{"name":"c","namespace":"n"},"data":{"k":"v"}}"#;
        let at =
            |minor| object_message_in(Schema::of_release(minor), "v1", "ConfigMap", cm).unwrap();
        let (v1_24, v1_25) = (at(24), at(25));
        assert_eq!(v1_24.len(), v1_25.len() + 2);
        assert_eq!(at(21), v1_24);
        assert_eq!(at(20), v1_24, "v1.20's own schema agrees");
        assert_eq!(at(32), v1_25);
    }

    #[test]
    fn a_sidecar_or_host_ips_are_refused_before_v1_28_and_written_from_it() {
        // Container.restartPolicy and PodStatus.hostIPs came in 1.28: a
        // v1.27 schema cannot hold them (the pod is read upstream), 1.28's
        // writes them as every later release does.
        let pod = br#"{"metadata":{"name":"p","namespace":"n"},"spec":{"initContainers":[{"name":"s","image":"i","restartPolicy":"Always"}],"containers":[{"name":"c","image":"i"}]},"status":{"hostIPs":[{"ip":"10.0.0.1"}]}}"#;
        let at = |minor| object_message_in(Schema::of_release(minor), "v1", "Pod", pod);
        assert!(at(27).is_err());
        assert!(at(21).is_err());
        let v1_28 = at(28).unwrap();
        assert_eq!(v1_28, at(31).unwrap());
        let back = |minor, m: &[u8]| {
            decode::decode_message_with(Schema::of_release(minor), "v1", "Pod", m).unwrap()
        };
        assert_eq!(back(28, &v1_28), back(31, &at(31).unwrap()));
    }

    #[test]
    fn a_crd_is_written_without_observed_generation_before_v1_35() {
        // 1.35 added CustomResourceDefinitionStatus.observedGeneration
        // (4), an int64 that gogo writes even when 0 (v1.36.2 recorded
        // writing it): v1.34 and older have no such field, so a CRD whose
        // JSON leaves it out (omitempty, 0) is two bytes shorter.
        let crd = br#"{"metadata":{"name":"ws.example.com"},"spec":{"group":"example.com","names":{"plural":"ws","kind":"W"},"scope":"Namespaced","versions":[]},"status":{"acceptedNames":{"plural":"ws","kind":"W"}}}"#;
        let (av, kind) = ("apiextensions.k8s.io/v1", "CustomResourceDefinition");
        let written: Vec<Vec<u8>> = releases()[11..]
            .iter()
            .map(|s| object_message_in(s, av, kind, crd).unwrap())
            .collect();
        // v1.32 to v1.34 alike, v1.35 and v1.36 alike.
        assert_eq!(written[0], written[2]);
        assert_eq!(written[1], written[2]);
        assert_eq!(written[3], written[4]);
        assert_eq!(written[2].len() + 2, written[3].len());
        // The status (3) ends with field 4 = 0 from 1.35 on.
        assert!(written[3].ends_with(b"\x20\x00"));
        assert!(!written[2].ends_with(b"\x20\x00"));
    }
}
