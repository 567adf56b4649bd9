//! One cached object: the pre-serialized bytes it is served from and the few
//! parsed facts (key, rv, labels, selectable fields) requests are decided on.

use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::Arc;

/// How the apiserver serializes a type's lists, which decides how items are
/// spliced. Built-in types are typed structs: list items carry no
/// `kind`/`apiVersion` and fields come in struct order. Custom resources are
/// unstructured maps: items are self-describing and keys sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStyle {
    Typed,
    Unstructured,
}

impl ListStyle {
    /// Told apart by the first key of a list body the upstream sent.
    pub fn detect(list_body: &[u8]) -> Option<ListStyle> {
        let trimmed = list_body.trim_ascii_start();
        if trimmed.starts_with(b"{\"kind\"") {
            Some(ListStyle::Typed)
        } else if trimmed.starts_with(b"{\"apiVersion\"") {
            Some(ListStyle::Unstructured)
        } else {
            None
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("object is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("object has no metadata.name")]
    NoName,
    #[error("metadata.resourceVersion {0:?} is not a number")]
    BadVersion(String),
    #[error("object does not start with the expected {0}")]
    UnexpectedTypeMeta(String),
}

/// An entry's labels and selectable fields: every key and value in one
/// string, and where each ends. As a dozen separately allocated short
/// strings per pod, each with its name, they cost a cache of 100,000 pods
/// about 60 MB more (allocation headers, rounding, 24-byte name-and-end
/// pairs): a fifth of the objects' own bytes (benches/memory).
#[derive(Debug, Default)]
pub struct Attrs {
    text: Box<str>,
    /// Where each label key, label value, … and then each field value ends.
    ends: Box<[u32]>,
    /// The fields' names, one list per type shared by all its entries.
    names: &'static [&'static str],
}

impl Attrs {
    pub fn new(
        labels: impl IntoIterator<Item = (String, String)>,
        fields: Vec<(&'static str, String)>,
    ) -> Attrs {
        let mut text = String::new();
        let mut ends = Vec::new();
        let mut push = |s: &str| {
            text.push_str(s);
            ends.push(text.len() as u32);
        };
        for (k, v) in labels {
            push(&k);
            push(&v);
        }
        let mut names = Vec::with_capacity(fields.len());
        for (name, v) in &fields {
            push(v);
            names.push(*name);
        }
        Attrs {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            names: interned(names),
        }
    }

    /// The i-th string.
    fn string(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j] as usize);
        &self.text[start..self.ends[i] as usize]
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        let strings = self.ends.len() - self.names.len();
        (0..strings / 2)
            .find(|p| self.string(2 * p) == key)
            .map(|p| self.string(2 * p + 1))
    }

    pub fn field(&self, field: &str) -> Option<&str> {
        let labels = self.ends.len() - self.names.len();
        let i = self.names.iter().position(|n| *n == field)?;
        Some(self.string(labels + i))
    }
}

/// One copy of each type's list of field names (there are a handful),
/// for all its entries to point at.
fn interned(names: Vec<&'static str>) -> &'static [&'static str] {
    static LISTS: std::sync::Mutex<Vec<&'static [&'static str]>> =
        std::sync::Mutex::new(Vec::new());
    if names.is_empty() {
        return &[];
    }
    let mut lists = LISTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(l) = lists.iter().find(|l| ***l == names[..]) {
        return l;
    }
    let l: &'static [&'static str] = Box::leak(names.into_boxed_slice());
    lists.push(l);
    l
}

#[derive(Debug)]
pub struct Entry {
    /// `namespace/name` or `name`: the etcd key after the resource prefix,
    /// so byte order equals the apiserver's list order.
    pub key: Arc<str>,
    /// The length of the namespace at the head of `key` (0: none); the
    /// name is the rest.
    ns_len: u32,
    pub rv: u64,
    /// Labels and type-specific selectable fields (metadata ones come
    /// from the fields above).
    pub attrs: Attrs,
    /// The object as a list item (see `ListStyle`).
    pub item: Bytes,
    /// `metadata` as the apiserver encodes an `ObjectMeta`, for
    /// PartialObjectMetadata and Table rows: a slice of `item` for built-in
    /// types (re-encoded without the annotations apps/v1 and autoscaling
    /// conversions move into the spec), a re-encoding in struct order for
    /// custom resources (whose maps come with sorted keys).
    pub meta: Bytes,
    /// The object's Table row, printed on first use: `(printer id, row)`.
    pub table_row: std::sync::OnceLock<(u64, crate::encode::table::Row)>,
    /// The row under a newer printer than the first slot's (a custom
    /// resource's columns changed while the object did not).
    pub table_row_reprinted: std::sync::Mutex<Option<(u64, Arc<crate::encode::table::Row>)>>,
    /// The object's protobuf message, transcoded on first use; `None`: it
    /// has none (a field v1.20's message lacks).
    pub protobuf: std::sync::OnceLock<Option<Box<[u8]>>>,
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

impl Entry {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.attrs.label(key)
    }

    pub fn namespace(&self) -> Option<&str> {
        (self.ns_len > 0).then(|| &self.key[..self.ns_len as usize])
    }

    pub fn name(&self) -> &str {
        match self.ns_len {
            0 => &self.key,
            n => &self.key[n as usize + 1..],
        }
    }

    /// Any selectable field, metadata ones included.
    pub fn field(&self, name: &str) -> Option<&str> {
        match name {
            "metadata.name" => Some(self.name()),
            "metadata.namespace" => self.namespace(),
            _ => self.attrs.field(name),
        }
    }

    #[cfg(test)]
    pub fn for_test(key: &str, rv: u64) -> Entry {
        Entry {
            key: key.into(),
            ns_len: 0,
            rv,
            attrs: Attrs::default(),
            item: Bytes::from(format!("{{\"metadata\":{{\"name\":\"{key}\"}}}}")),
            meta: Bytes::from(format!("{{\"name\":\"{key}\"}}")),
            table_row: Default::default(),
            table_row_reprinted: Default::default(),
            protobuf: Default::default(),
        }
    }
}

/// Everything needed to turn one type's objects into entries and back into
/// the forms the apiserver serves them in.
#[derive(Debug, Clone)]
pub struct TypeCodec {
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
    wanted: Arc<super::pruned::Wanted>,
    /// The kind's protobuf message, if v1.20 has one (built-in kinds).
    protobuf: Option<&'static crate::encode::protobuf::Message>,
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
            protobuf: crate::encode::protobuf::Schema::v1_20().kind(api_version, kind),
            wanted: Arc::new(super::pruned::Wanted::of(
                crate::selector::field::field_table(group, kind)
                    .iter()
                    .flat_map(|(_, read)| read.pointers()),
            )),
        }
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
    pub fn from_item(&self, item: Bytes) -> Result<Entry, EntryError> {
        let (raw_meta, pruned) = super::pruned::read(&item, &self.wanted)?;
        let raw_meta = raw_meta.get();
        let meta: Meta = serde_json::from_str(raw_meta)?;
        let meta_bytes = match self.style {
            ListStyle::Typed => {
                crate::encode::meta::internal_meta(&self.group, &self.kind, raw_meta)
                    .unwrap_or_else(|| {
                        // The slice of `item` the raw value borrows: no copy.
                        let start = raw_meta.as_ptr() as usize - item.as_ptr() as usize;
                        item.slice(start..start + raw_meta.len())
                    })
            }
            ListStyle::Unstructured => crate::encode::meta::object_meta(raw_meta),
        };
        let name = meta.name.ok_or(EntryError::NoName)?;
        let rv_str = meta.resource_version.unwrap_or_default();
        let rv = rv_str
            .parse()
            .map_err(|_| EntryError::BadVersion(rv_str.to_string()))?;
        // A cluster-scoped object has no namespace, whatever it says.
        let namespace = meta.namespace.filter(|n| !n.is_empty() && self.namespaced);
        let (key, ns_len): (Arc<str>, u32) = match &namespace {
            Some(ns) => (format!("{ns}/{name}").into(), ns.len() as u32),
            None => (Arc::from(&*name), 0),
        };
        let fields = crate::selector::field::selectable_fields(&self.group, &self.kind, &pruned);
        let attrs = Attrs::new(meta.labels.unwrap_or_default(), fields);
        Ok(Entry {
            key,
            ns_len,
            rv,
            attrs,
            item,
            meta: meta_bytes,
            table_row: Default::default(),
            table_row_reprinted: Default::default(),
            protobuf: Default::default(),
        })
    }

    /// An entry from a self-describing object (a watch event or a get).
    pub fn from_object(&self, object: &[u8]) -> Result<Entry, EntryError> {
        self.from_item(self.item_of(object)?)
    }

    fn item_of(&self, object: &[u8]) -> Result<Bytes, EntryError> {
        match self.style {
            ListStyle::Unstructured => Ok(Bytes::copy_from_slice(object)),
            ListStyle::Typed => {
                let rest = object.strip_prefix(&self.type_meta[..]).ok_or_else(|| {
                    EntryError::UnexpectedTypeMeta(
                        String::from_utf8_lossy(&self.type_meta).into_owned(),
                    )
                })?;
                let mut b = BytesMut::with_capacity(rest.len() + 1);
                b.put_u8(b'{');
                b.put_slice(rest);
                Ok(b.freeze())
            }
        }
    }

    /// The self-describing form, as a get or a watch event carries it.
    pub fn object_bytes(&self, entry: &Entry) -> Bytes {
        match self.style {
            ListStyle::Unstructured => entry.item.clone(),
            ListStyle::Typed => {
                let mut b = BytesMut::with_capacity(self.type_meta.len() + entry.item.len());
                self.put_object(&mut b, entry);
                b.freeze()
            }
        }
    }

    /// The object, self-describing, appended to a body being built.
    pub fn put_object(&self, b: &mut BytesMut, entry: &Entry) {
        match self.style {
            ListStyle::Unstructured => b.put_slice(&entry.item),
            ListStyle::Typed => {
                b.put_slice(&self.type_meta);
                b.put_slice(&entry.item[1..]);
            }
        }
    }

    /// Whether objects of this type can be written as protobuf: built-in
    /// kinds v1.20 has a message for.
    pub fn protobuf_kind(&self) -> bool {
        self.protobuf.is_some() && self.style == ListStyle::Typed
    }

    /// The object's protobuf message (without envelope), transcoded once
    /// per entry; `None` for custom resources and objects v1.20's
    /// messages cannot hold.
    pub fn protobuf_message<'e>(&self, entry: &'e Entry) -> Option<&'e [u8]> {
        let msg = self.protobuf.filter(|_| self.style == ListStyle::Typed)?;
        let kept = entry.protobuf.get_or_init(|| {
            let schema = crate::encode::protobuf::Schema::v1_20();
            match crate::encode::protobuf::transcode::message(schema, msg, &entry.item) {
                Ok(m) => Some(m.into_boxed_slice()),
                Err(e) => {
                    tracing::debug!(key = %entry.key, error = %e, "no protobuf for this object");
                    None
                }
            }
        });
        kept.as_deref()
    }

    /// Splits a list body into its items' raw bytes and list metadata.
    pub fn parse_list(&self, body: &[u8]) -> Result<ParsedList, EntryError> {
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
            rv: rv.parse().map_err(|_| EntryError::BadVersion(rv.clone()))?,
            continue_token: list.metadata.continue_token.filter(|c| !c.is_empty()),
            entries,
        })
    }
}

#[derive(Deserialize, Default)]
struct ListMetaIn {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

pub struct ParsedList {
    pub rv: u64,
    pub continue_token: Option<String>,
    pub entries: Vec<Arc<Entry>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> TypeCodec {
        TypeCodec::new("", "v1", "Pod", true, ListStyle::Typed)
    }

    #[test]
    fn packed_labels_and_fields_are_found_by_their_own_names_only() {
        let a = Attrs::new(
            [
                ("app".to_string(), "web".to_string()),
                ("empty".to_string(), String::new()),
                ("status.phase".to_string(), "label".to_string()),
            ],
            vec![
                ("status.phase", "Running".to_string()),
                ("spec.nodeName", String::new()),
            ],
        );
        assert_eq!(a.label("app"), Some("web"));
        assert_eq!(a.label("empty"), Some(""));
        assert_eq!(a.label("web"), None, "a value is not a key");
        assert_eq!(a.label("status.phase"), Some("label"));
        assert_eq!(a.field("status.phase"), Some("Running"));
        assert_eq!(a.field("spec.nodeName"), Some(""));
        assert_eq!(a.field("app"), None, "labels are not fields");
        assert_eq!(a.label("Running"), None);
        let b = Attrs::new(
            [],
            vec![
                ("status.phase", String::new()),
                ("spec.nodeName", String::new()),
            ],
        );
        assert!(std::ptr::eq(a.names, b.names), "one list of names per type");
        let none = Attrs::default();
        assert_eq!(
            (none.label("app"), none.field("status.phase")),
            (None, None)
        );
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
        let mut pod = crate::sim::generate::Generator::new(7).pod("ns", 3, 4);
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
