//! JSON bodies exactly as the apiserver writes them: compact, a trailing
//! newline, list metadata in `ListMeta` field order for typed lists and in
//! sorted-key order for unstructured (custom resource) lists.

use super::codec::{Entry, ListStyle, TypeCodec};
use super::list_meta::ListMeta;
use super::recycle::{self, NoMemory};
use bytes::{BufMut, Bytes};
use serde_json::value::RawValue;
use std::sync::Arc;

fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The length of what [`join`] makes, exactly: it decides whether a body
/// is over the gzip threshold.
pub fn joined_len(head: &[u8], items: &[Arc<Entry>], tail: &[u8]) -> usize {
    let commas = items.len().saturating_sub(1);
    head.len() + items.iter().map(|e| e.item.len()).sum::<usize>() + commas + tail.len()
}

/// `head`, the items comma-separated, `tail`, in a buffer of exactly
/// that length.
pub fn join(head: &[u8], items: &[Arc<Entry>], tail: &[u8]) -> Result<Bytes, NoMemory> {
    let mut b = recycle::buffer(joined_len(head, items, tail))?;
    b.put_slice(head);
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            b.put_u8(b',');
        }
        b.put_slice(&e.item);
    }
    b.put_slice(tail);
    Ok(recycle::freeze(b))
}

/// What a list body has before its first item and after its last: the
/// items go between, comma-separated.
pub fn list_ends(codec: &TypeCodec, meta: &ListMeta) -> (Vec<u8>, Vec<u8>) {
    let meta = meta.to_json(codec.style);
    match codec.style {
        ListStyle::Typed => (
            format!(
                "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{meta},\"items\":[",
                json_str(&codec.list_kind),
                json_str(&codec.api_version)
            )
            .into_bytes(),
            b"]}\n".to_vec(),
        ),
        ListStyle::Unstructured => (
            format!(
                "{{\"apiVersion\":{},\"items\":[",
                json_str(&codec.api_version)
            )
            .into_bytes(),
            format!(
                "],\"kind\":{},\"metadata\":{meta}}}\n",
                json_str(&codec.list_kind)
            )
            .into_bytes(),
        ),
    }
}

/// A single object body, as a get returns it.
pub fn object(codec: &TypeCodec, entry: &Entry) -> Bytes {
    let obj = codec.object_bytes(entry);
    let mut b = Vec::with_capacity(obj.len() + 1);
    b.put_slice(&obj);
    b.put_u8(b'\n');
    Bytes::from(b)
}

/// One watch event line: `{"type":"ADDED","object":{…}}` and a newline.
pub fn watch_event(kind: &str, object: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(object.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    Bytes::from(b)
}

/// A JSON object's members in order, each value's bytes untouched.
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some(kv) = m.next_entry::<String, Box<RawValue>>()? {
                    out.push(kv);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl Members {
    fn write(&self, b: &mut Vec<u8>) {
        b.put_u8(b'{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                b.put_u8(b',');
            }
            b.put_slice(json_str(k).as_bytes());
            b.put_u8(b':');
            b.put_slice(v.get().as_bytes());
        }
        b.put_u8(b'}');
    }
}

/// The object with `metadata.resourceVersion` set to `rv` and every other
/// byte as it was — what the cacher sends for an object that left a
/// watcher's selection (its previous content at the event's version).
/// `None` if the bytes are not an object with that field.
pub fn with_resource_version(object: &[u8], rv: u64) -> Option<Bytes> {
    let mut top: Members = serde_json::from_slice(object).ok()?;
    let (_, meta_raw) = top.0.iter_mut().find(|(k, _)| k == "metadata")?;
    let mut meta: Members = serde_json::from_str(meta_raw.get()).ok()?;
    let (_, rv_raw) = meta.0.iter_mut().find(|(k, _)| k == "resourceVersion")?;
    *rv_raw = RawValue::from_string(format!("\"{rv}\"")).ok()?;
    let mut m = Vec::with_capacity(meta_raw.get().len() + 8);
    meta.write(&mut m);
    *meta_raw = RawValue::from_string(String::from_utf8(m).ok()?).ok()?;
    let mut b = Vec::with_capacity(object.len() + 8);
    top.write(&mut b);
    Some(Bytes::from(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(
        c: &TypeCodec,
        meta: &ListMeta,
        items: &[Arc<Entry>],
    ) -> Result<Bytes, crate::encode::ListError> {
        crate::encode::Repr::Json.list(c, meta, items)
    }

    #[test]
    fn a_joined_body_is_as_long_as_said_whatever_the_item_count() {
        let e = |k: &str| Arc::new(Entry::for_test(k, 1));
        for items in [vec![], vec![e("a")], vec![e("a"), e("bb"), e("c")]] {
            let body = join(b"{[", &items, b"]}").unwrap();
            assert_eq!(body.len(), joined_len(b"{[", &items, b"]}"));
        }
    }

    #[test]
    fn typed_list_matches_the_apiserver_layout() {
        let c = TypeCodec::new("", "v1", "Namespace", false, ListStyle::Typed);
        let e = Arc::new(
            c.from_item(Bytes::from_static(
                br#"{"metadata":{"name":"default","resourceVersion":"71"}}"#,
            ))
            .unwrap(),
        );
        let meta = ListMeta {
            resource_version: 73,
            continue_token: Some("tok".into()),
            remaining_item_count: Some(3),
        };
        assert_eq!(
            std::str::from_utf8(&list(&c, &meta, &[e]).unwrap()).unwrap(),
            "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"73\",\"continue\":\"tok\",\"remainingItemCount\":3},\"items\":[{\"metadata\":{\"name\":\"default\",\"resourceVersion\":\"71\"}}]}\n"
        );
        let empty = list(
            &c,
            &ListMeta {
                resource_version: 5,
                ..Default::default()
            },
            &[],
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&empty).unwrap(),
            "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}\n"
        );
    }

    #[test]
    fn only_the_resource_version_changes() {
        let obj = br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"7","labels":{"resourceVersion":"x","t":"\u003cb\u003e"}},"data":{"v":"1.50"}}"#;
        let out = with_resource_version(obj, 12).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"12","labels":{"resourceVersion":"x","t":"\u003cb\u003e"}},"data":{"v":"1.50"}}"#
        );
        assert!(with_resource_version(b"[1]", 3).is_none());
        assert!(with_resource_version(br#"{"metadata":{}}"#, 3).is_none());
    }

    #[test]
    fn unstructured_list_keys_are_sorted() {
        let c = TypeCodec::new("x.io", "x.io/v1", "Widget", true, ListStyle::Unstructured);
        let meta = ListMeta {
            resource_version: 9,
            continue_token: Some("t".into()),
            remaining_item_count: Some(1),
        };
        assert_eq!(
            std::str::from_utf8(&list(&c, &meta, &[]).unwrap()).unwrap(),
            "{\"apiVersion\":\"x.io/v1\",\"items\":[],\"kind\":\"WidgetList\",\"metadata\":{\"continue\":\"t\",\"remainingItemCount\":1,\"resourceVersion\":\"9\"}}\n"
        );
        let last_page = ListMeta {
            resource_version: 9,
            ..Default::default()
        };
        assert_eq!(
            std::str::from_utf8(&list(&c, &last_page, &[]).unwrap()).unwrap(),
            "{\"apiVersion\":\"x.io/v1\",\"items\":[],\"kind\":\"WidgetList\",\"metadata\":{\"continue\":\"\",\"resourceVersion\":\"9\"}}\n"
        );
    }
}
