//! A type's codec: everything needed to turn its objects, as the upstream
//! sends them, into cache entries (key, version, labels, selectable fields,
//! the bytes served) and back into the forms the apiserver serves them in —
//! and what is kept beside each entry so that no form is made twice
//! (`memo`). `metadata` makes an object's `ObjectMeta` bytes.

pub mod memo;
pub mod metadata;

pub use super::style::ListStyle;
pub use memo::Memo;

use super::personality::Personality;
use super::protobuf::schema::{Message, Schema};
use super::protobuf::transcode;
use super::pruned::{self, Wanted};
use crate::store::{Attrs, EntryKey};
use bytes::{BufMut, Bytes};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A cached object with what its codec keeps beside it.
pub type Entry = crate::store::Entry<Memo>;
/// The objects of a snapshot, by key.
pub type Items = crate::store::Items<Memo>;
/// A type's watch cache, holding entries with their memos.
pub type Store = crate::store::Store<Memo>;
pub type Snapshot = crate::store::Snapshot<Memo>;
pub type Event = crate::store::Event<Memo>;
pub type Change = crate::store::Change<Memo>;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("object is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("object has no metadata.name")]
    NoName,
    #[error("metadata.resourceVersion {0:?} is not a number")]
    BadVersion(String),
    #[error("object does not start with the expected {0}")]
    UnexpectedTypeMeta(String),
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "resourceVersion", borrow, default)]
    resource_version: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

/// Everything needed to turn one type's objects into entries and back into
/// the forms the apiserver serves them in.
#[derive(Debug)]
pub struct TypeCodec {
    /// This codec's identity, which encoded forms shared between requests
    /// are tagged with (an event's watch line): a codec replaced after a
    /// relist must not reuse what an older one wrote.
    id: u64,
    pub group: String,
    pub kind: String,
    pub api_version: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub style: ListStyle,
    /// `{"kind":"Pod","apiVersion":"v1",`: what a typed object has before
    /// its list-item form's first field.
    type_meta: Bytes,
    /// What of an object its selectable fields are read from.
    wanted: Arc<Wanted>,
    /// The kind's protobuf message in the schema its personality writes
    /// protobuf with, if it has one (built-in kinds; none for a release
    /// whose protobuf kubecache leaves to the upstream).
    protobuf: Option<(&'static Schema, &'static Message)>,
    /// Whose representations the ones made with it follow: the upstream's
    /// release when the type was listed.
    pub personality: Personality,
}

/// Every codec made gets the next id.
static CODECS: AtomicU64 = AtomicU64::new(1);

impl Clone for TypeCodec {
    /// A copy is another codec: it gets an id of its own.
    fn clone(&self) -> Self {
        TypeCodec {
            id: CODECS.fetch_add(1, Ordering::Relaxed),
            group: self.group.clone(),
            kind: self.kind.clone(),
            api_version: self.api_version.clone(),
            list_kind: self.list_kind.clone(),
            namespaced: self.namespaced,
            style: self.style,
            type_meta: self.type_meta.clone(),
            wanted: self.wanted.clone(),
            protobuf: self.protobuf,
            personality: self.personality,
        }
    }
}

impl TypeCodec {
    pub fn new(
        group: &str,
        api_version: &str,
        kind: &str,
        namespaced: bool,
        style: ListStyle,
    ) -> Self {
        TypeCodec {
            id: CODECS.fetch_add(1, Ordering::Relaxed),
            group: group.into(),
            kind: kind.into(),
            api_version: api_version.into(),
            list_kind: format!("{kind}List"),
            namespaced,
            style,
            type_meta: Bytes::from(format!(
                "{{\"kind\":{},\"apiVersion\":{},",
                serde_json::Value::from(kind),
                serde_json::Value::from(api_version)
            )),
            protobuf: protobuf_message(Personality::default(), api_version, kind),
            wanted: Arc::new(Wanted::of(
                crate::selector::field::field_table(group, kind)
                    .iter()
                    .flat_map(|(_, read)| read.pointers()),
            )),
            personality: Personality::default(),
        }
    }

    /// The same codec (another, as `clone`) following `personality`: its
    /// protobuf is that release's.
    pub fn with_personality(&self, personality: Personality) -> Self {
        let mut c = self.clone();
        c.personality = personality;
        c.protobuf = protobuf_message(personality, &c.api_version, &c.kind);
        c
    }

    /// The codec's identity (see `id`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The codec of a discovered type, before its list style is known.
    pub fn for_type(rt: &crate::resource::ResourceType, style: ListStyle) -> Self {
        TypeCodec::new(
            &rt.gvr.group,
            &rt.gvr.api_version(),
            &rt.kind,
            rt.namespaced,
            style,
        )
    }

    pub fn with_style(&self, style: ListStyle) -> Self {
        let mut c = self.clone();
        c.style = style;
        c
    }

    /// An entry from a list item's bytes, as the upstream listed it.
    pub fn from_item(&self, item: Bytes) -> Result<Entry, DecodeError> {
        let (raw_meta, pruned) = pruned::read(&item, &self.wanted)?;
        let raw_meta = raw_meta.get();
        let meta: Meta = serde_json::from_str(raw_meta)?;
        let memo = match self.style {
            ListStyle::Typed => match metadata::internal_meta(&self.group, &self.kind, raw_meta) {
                Some(own) => Memo::owned(&own),
                None => {
                    // The slice of `item` the raw value borrows: no copy.
                    let start = raw_meta.as_ptr() as usize - item.as_ptr() as usize;
                    Memo::in_item(start..start + raw_meta.len())
                }
            },
            ListStyle::Unstructured => Memo::owned(&metadata::object_meta(raw_meta)),
        };
        let name = meta.name.ok_or(DecodeError::NoName)?;
        let rv_str = meta.resource_version.unwrap_or_default();
        let rv = rv_str
            .parse()
            .map_err(|_| DecodeError::BadVersion(rv_str.to_string()))?;
        // A cluster-scoped object has no namespace, whatever it says.
        let namespace = meta.namespace.filter(|n| !n.is_empty() && self.namespaced);
        let fields = crate::selector::field::selectable_fields(&self.group, &self.kind, &pruned);
        let attrs = Attrs::new(meta.labels.unwrap_or_default(), fields);
        let key = EntryKey::new(namespace.as_deref(), &name);
        // Moved, not cloned, once nothing borrows it: a second handle on
        // a `Bytes` made from a `Vec` costs a 32-byte allocation.
        Ok(Entry::new(key, rv, attrs, item, memo))
    }

    /// An entry from a self-describing object (a watch event or a get).
    pub fn from_object(&self, object: &[u8]) -> Result<Entry, DecodeError> {
        self.from_item(self.item_of(object)?)
    }

    fn item_of(&self, object: &[u8]) -> Result<Bytes, DecodeError> {
        match self.style {
            ListStyle::Unstructured => Ok(Bytes::copy_from_slice(object)),
            ListStyle::Typed => {
                let rest = object.strip_prefix(&self.type_meta[..]).ok_or_else(|| {
                    DecodeError::UnexpectedTypeMeta(
                        String::from_utf8_lossy(&self.type_meta).into_owned(),
                    )
                })?;
                let mut b = Vec::with_capacity(rest.len() + 1);
                b.put_u8(b'{');
                b.put_slice(rest);
                Ok(Bytes::from(b))
            }
        }
    }

    /// The self-describing form, as a get or a watch event carries it.
    pub fn object_bytes(&self, entry: &Entry) -> Bytes {
        match self.style {
            ListStyle::Unstructured => entry.item.clone(),
            ListStyle::Typed => {
                let mut b = Vec::with_capacity(self.type_meta.len() + entry.item.len());
                self.put_object(&mut b, entry);
                Bytes::from(b)
            }
        }
    }

    /// The object, self-describing, appended to a body being built.
    pub fn put_object(&self, b: &mut Vec<u8>, entry: &Entry) {
        match self.style {
            ListStyle::Unstructured => b.put_slice(&entry.item),
            ListStyle::Typed => {
                b.put_slice(&self.type_meta);
                b.put_slice(&entry.item[1..]);
            }
        }
    }

    /// Whether objects of this type can be written as protobuf: built-in
    /// kinds the personality's schema has a message for.
    pub fn protobuf_kind(&self) -> bool {
        self.protobuf.is_some() && self.style == ListStyle::Typed
    }

    /// The schema this codec writes protobuf with (its personality's), if
    /// its objects can be written as protobuf.
    pub fn protobuf_schema(&self) -> Option<&'static Schema> {
        self.protobuf
            .filter(|_| self.style == ListStyle::Typed)
            .map(|(s, _)| s)
    }

    /// The object's protobuf message (without envelope), transcoded once
    /// per entry and schema; `None` for custom resources and objects the
    /// schema's messages cannot hold.
    pub fn protobuf_message<'e>(&self, entry: &'e Entry) -> Option<&'e [u8]> {
        let (schema, msg) = self.protobuf.filter(|_| self.style == ListStyle::Typed)?;
        entry.memo.later().protobuf(schema.slot(), || {
            match transcode::message(schema, msg, &entry.item) {
                Ok(m) => Some(m.into_boxed_slice()),
                Err(e) => {
                    tracing::debug!(key = %entry.key, error = %e, "no protobuf for this object");
                    None
                }
            }
        })
    }

    /// Splits a list body into its items' raw bytes and list metadata.
    pub fn parse_list(&self, body: &[u8]) -> Result<ParsedList, DecodeError> {
        #[derive(Deserialize)]
        struct ListBody<'a> {
            #[serde(default)]
            metadata: ListMetaIn,
            #[serde(borrow, default)]
            items: Vec<&'a RawValue>,
        }
        let list: ListBody = serde_json::from_slice(body)?;
        let mut entries = Vec::with_capacity(list.items.len());
        for raw in list.items {
            entries.push(Arc::new(
                self.from_item(Bytes::copy_from_slice(raw.get().as_bytes()))?,
            ));
        }
        let rv = list.metadata.resource_version.unwrap_or_default();
        Ok(ParsedList {
            rv: rv
                .parse()
                .map_err(|_| DecodeError::BadVersion(rv.clone()))?,
            continue_token: list.metadata.continue_token.filter(|c| !c.is_empty()),
            remaining_item_count: list.metadata.remaining_item_count,
            entries,
        })
    }
}

/// The schema `personality` writes protobuf with and its message of
/// objects of `kind`, if it has one.
fn protobuf_message(
    personality: Personality,
    api_version: &str,
    kind: &str,
) -> Option<(&'static Schema, &'static Message)> {
    let schema = Schema::of(personality.protobuf()?);
    Some((schema, schema.kind(api_version, kind)?))
}

#[derive(Deserialize, Default)]
struct ListMetaIn {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
    #[serde(rename = "remainingItemCount")]
    remaining_item_count: Option<i64>,
}

pub struct ParsedList {
    pub rv: u64,
    pub continue_token: Option<String>,
    /// The objects after this page, when the upstream counts them.
    pub remaining_item_count: Option<i64>,
    pub entries: Vec<Arc<Entry>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> TypeCodec {
        TypeCodec::new("", "v1", "Pod", true, ListStyle::Typed)
    }

    #[test]
    fn a_codec_following_another_release_never_serves_the_others_protobuf() {
        let obj = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}"#;
        let old = pods();
        let e = old.from_object(obj).unwrap();
        let written_old = old.protobuf_message(&e).unwrap().to_vec();
        // The upstream upgraded: the codec follows v1.36, the entry is kept.
        let new = old.with_personality(Personality::NEWEST);
        let written_new = new.protobuf_message(&e).unwrap().to_vec();
        let item = &e.item[..];
        let schema = |p: Personality| Schema::of(p.protobuf().unwrap());
        let fresh = |s: &Schema| transcode::message(s, s.kind("v1", "Pod").unwrap(), item);
        assert_eq!(written_old, fresh(schema(Personality::V1_20)).unwrap());
        assert_eq!(written_new, fresh(schema(Personality::NEWEST)).unwrap());
        // v1.20's ObjectMeta writes clusterName (15, `z\0`) and v1.36's
        // has none; v1.36's PodStatus always writes observedGeneration (17)
        // and resize (14): two messages.
        assert_ne!(written_old, written_new);
        // Each kept beside the entry: asked again, the same slices.
        assert_eq!(old.protobuf_message(&e).unwrap(), &written_old[..]);
        assert_eq!(new.protobuf_message(&e).unwrap(), &written_new[..]);
        // A third release finds the entry's two cells taken: the object is
        // not written (it is read upstream), never with another's message.
        let at = |minor| old.with_personality(Personality::of(1, minor).0);
        assert!(at(34).protobuf_kind() && at(34).protobuf_message(&e).is_none());
        // On an entry of its own, v1.34 writes this pod as v1.36 does (it
        // has no field 1.35 or 1.36 added), v1.32 without
        // status.observedGeneration (1.33), v1.30 as v1.32 (nothing this
        // pod has came between), v1.24 with ObjectMeta's clusterName, as
        // v1.20, and v1.25 without it.
        let written = |minor| {
            let e = old.from_object(obj).unwrap();
            at(minor).protobuf_message(&e).unwrap().to_vec()
        };
        assert_eq!(written(34), written_new);
        assert_eq!(written(32).len() + 3, written_new.len());
        assert_eq!(written(30), written(32));
        assert_eq!(written(24), written_old);
        assert_eq!(written(24).len(), written(25).len() + 2);
    }

    #[test]
    fn typed_objects_lose_and_regain_their_type_meta() {
        let obj = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","labels":{"app":"web"}},"spec":{"nodeName":"n1"}}"#;
        let c = pods();
        let e = c.from_object(obj).unwrap();
        assert_eq!(&*e.key, "ns/a");
        assert_eq!(e.rv, 7);
        assert_eq!(e.label("app"), Some("web"));
        assert_eq!(e.field("spec.nodeName"), Some("n1"));
        assert_eq!(e.field("metadata.namespace"), Some("ns"));
        assert!(e.item.starts_with(b"{\"metadata\""));
        assert_eq!(&c.object_bytes(&e)[..], &obj[..]);
    }

    #[test]
    fn unstructured_objects_are_kept_as_they_are() {
        let c = TypeCodec::new(
            "example.com",
            "example.com/v1",
            "Widget",
            false,
            ListStyle::Unstructured,
        );
        let obj = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"3"}}"#;
        let e = c.from_object(obj).unwrap();
        assert_eq!(&*e.key, "w");
        assert_eq!(&c.object_bytes(&e)[..], &obj[..]);
    }

    #[test]
    fn broken_objects_are_errors_not_panics() {
        let c = pods();
        assert!(c.from_object(b"{").is_err());
        assert!(c
            .from_object(br#"{"kind":"Pod","apiVersion":"v1","metadata":{}}"#)
            .is_err());
        assert!(c
            .from_object(br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"x"}}"#)
            .is_err());
        assert!(c
            .from_object(br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#)
            .is_err());
        assert!(c.parse_list(b"[1,2]").is_err());
    }

    /// Every kind with selectable fields, as an object in which each of
    /// them is set (among fields that are not).
    fn objects_with_every_field_set() -> Vec<(&'static str, &'static str, serde_json::Value)> {
        use serde_json::json;
        let meta = |name: &str| json!({"name": name, "namespace": "ns", "resourceVersion": "5", "labels": {"a": "b"}});
        let mut pod = crate::fixtures::pod("ns", 3);
        pod["metadata"]["resourceVersion"] = json!("5");
        pod["metadata"]["labels"]["a"] = json!("b");
        pod["spec"]["restartPolicy"] = json!("OnFailure");
        pod["spec"]["serviceAccountName"] = json!("sa");
        pod["status"]["nominatedNodeName"] = json!("n9");
        vec![
            ("", "Pod", pod),
            (
                "",
                "Node",
                json!({"metadata": meta("n1"), "spec": {"podCIDR": "10.0.0.0/24", "unschedulable": true}}),
            ),
            (
                "",
                "Namespace",
                json!({"metadata": meta("kube-system"), "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}}),
            ),
            (
                "",
                "Secret",
                json!({"metadata": meta("s"), "data": {"k": "dg=="}, "type": "kubernetes.io/tls"}),
            ),
            (
                "",
                "Event",
                json!({"metadata": meta("e"), "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u", "apiVersion": "v1", "resourceVersion": "3", "fieldPath": "spec.containers{c}"}, "reason": "Started", "message": "m", "source": {"component": "kubelet", "host": "n1"}, "reportingComponent": "rc", "type": "Normal"}),
            ),
            (
                "events.k8s.io",
                "Event",
                json!({"metadata": meta("e"), "regarding": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u", "apiVersion": "v1", "resourceVersion": "3", "fieldPath": "f"}, "reason": "Pulled", "reportingController": "kubelet", "note": "n", "type": "Warning"}),
            ),
            (
                "",
                "ReplicationController",
                json!({"metadata": meta("rc"), "spec": {"replicas": 3}, "status": {"replicas": 2, "readyReplicas": 1}}),
            ),
            (
                "batch",
                "Job",
                json!({"metadata": meta("j"), "spec": {"parallelism": 2}, "status": {"succeeded": 4, "failed": 1}}),
            ),
            (
                "certificates.k8s.io",
                "CertificateSigningRequest",
                json!({"metadata": meta("csr"), "spec": {"request": "eA==", "signerName": "kubernetes.io/kubelet-serving"}}),
            ),
        ]
    }

    #[test]
    fn entries_keep_every_selectable_field_as_a_whole_parse_reads_it() {
        use crate::selector::field::{field_table, selectable_fields};
        for (group, kind, object) in objects_with_every_field_set() {
            let codec = TypeCodec::new(
                group,
                "v1",
                kind,
                kind != "Node" && kind != "Namespace" && kind != "CertificateSigningRequest",
                ListStyle::Unstructured,
            );
            let entry = codec
                .from_item(Bytes::from(serde_json::to_vec(&object).unwrap()))
                .unwrap();
            let whole = selectable_fields(group, kind, &object);
            assert_eq!(whole.len(), field_table(group, kind).len());
            for (name, value) in whole {
                assert!(
                    !value.is_empty() && value != "0" && value != "false",
                    "{kind}'s test object leaves {name} unset"
                );
                assert_eq!(entry.field(name), Some(&*value), "{group}/{kind} {name}");
            }
            assert_eq!(entry.label("a"), Some("b"));
        }
    }

    #[test]
    fn list_style_is_told_by_the_first_key() {
        assert_eq!(
            ListStyle::detect(b"{\"kind\":\"PodList\"}"),
            Some(ListStyle::Typed)
        );
        assert_eq!(
            ListStyle::detect(b"{\"apiVersion\":\"x\"}"),
            Some(ListStyle::Unstructured)
        );
        assert_eq!(ListStyle::detect(b"<html>"), None);
    }

    #[test]
    fn lists_split_into_entries_with_their_metadata() {
        let c = pods();
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"abc"},"items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"4"}}]}"#;
        let l = c.parse_list(body).unwrap();
        assert_eq!(l.rv, 9);
        assert_eq!(l.continue_token.as_deref(), Some("abc"));
        assert_eq!(l.entries.len(), 1);
        assert_eq!(
            &l.entries[0].item[..],
            br#"{"metadata":{"name":"a","namespace":"n","resourceVersion":"4"}}"#
        );
    }
}
