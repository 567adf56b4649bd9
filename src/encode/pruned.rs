//! Reading an object for what its entry keeps, in one pass: `metadata` as
//! the raw bytes it came in, and of the rest only the subtrees the type's
//! selectable fields point into (a pod's `spec.nodeName`, not its
//! containers). Parsing a whole pod into a `serde_json::Value` to read seven
//! strings was most of the cost of taking an event into the store.
//! Also an object parsed whole but for one subtree nobody reads (a Table
//! row's printer and its object's managed fields).

use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The paths to keep, as a tree of object keys.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Wanted {
    children: Vec<(Box<str>, Wanted)>,
    /// Keep this subtree whole.
    whole: bool,
}

impl Wanted {
    /// The tree of JSON pointers (`/status/podIPs/0/ip`). Below an array
    /// index the whole array is kept: arrays are not pruned.
    pub fn of<'a>(pointers: impl IntoIterator<Item = &'a str>) -> Wanted {
        let mut root = Wanted::default();
        for p in pointers {
            let mut node = &mut root;
            for token in p.split('/').skip(1) {
                if node.whole || token.parse::<usize>().is_ok() {
                    break;
                }
                let key = token.replace("~1", "/").replace("~0", "~");
                let i = match node.children.iter().position(|(k, _)| **k == *key) {
                    Some(i) => i,
                    None => {
                        node.children.push((key.into(), Wanted::default()));
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[i].1;
            }
            node.whole = true;
            node.children.clear();
        }
        root
    }

    fn child(&self, key: &str) -> Option<&Wanted> {
        self.children
            .iter()
            .find(|(k, _)| **k == *key)
            .map(|(_, w)| w)
    }
}

/// An item's raw `metadata`, and the object pruned to what `wanted` names.
pub fn read<'a>(item: &'a [u8], wanted: &Wanted) -> serde_json::Result<(&'a RawValue, Value)> {
    let mut de = serde_json::Deserializer::from_slice(item);
    let (meta, mut rest) = de.deserialize_map(Top { wanted })?;
    de.end()?;
    let meta = meta.ok_or_else(|| serde_json::Error::missing_field("metadata"))?;
    if let Some(w) = wanted.child("metadata") {
        let m = Pruned(w).deserialize(&mut serde_json::Deserializer::from_str(meta.get()))?;
        rest.insert("metadata".into(), m);
    }
    Ok((meta, Value::Object(rest)))
}

struct Top<'w> {
    wanted: &'w Wanted,
}

impl<'de, 'w> Visitor<'de> for Top<'w> {
    type Value = (Option<&'de RawValue>, Map<String, Value>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = None;
        let mut rest = Map::new();
        while let Some(Key(key)) = map.next_key()? {
            if key == "metadata" {
                meta = Some(map.next_value()?);
            } else if let Some(w) = self.wanted.child(&key) {
                rest.insert(key.into_owned(), map.next_value_seed(Pruned(w))?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok((meta, rest))
    }
}

/// A value pruned to what it wants; a value that is not an object where
/// keys are wanted reads as null (no pointer can reach into it).
struct Pruned<'w>(&'w Wanted);

impl<'de, 'w> DeserializeSeed<'de> for Pruned<'w> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.0.whole {
            Value::deserialize(d)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de, 'w> Visitor<'de> for Pruned<'w> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(Key(key)) = map.next_key()? {
            match self.0.child(&key) {
                Some(w) => {
                    out.insert(key.into_owned(), map.next_value_seed(Pruned(w))?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Null)
    }

    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// `item` parsed whole but for the subtree at `path` (object keys from the
/// root), which is skipped without being built.
pub fn parse_without(item: &[u8], path: &[&str]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(item);
    let v = Without(path).deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A value parsed whole but for what `.0` leads to (empty: nothing).
struct Without<'p>(&'p [&'p str]);

impl<'de, 'p> DeserializeSeed<'de> for Without<'p> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'p> Visitor<'de> for Without<'p> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(Key(key)) = map.next_key()? {
            match self.0 {
                [first] if *first == key => {
                    map.next_value::<IgnoredAny>()?;
                }
                [first, rest @ ..] if *first == key => {
                    out.insert(key.into_owned(), map.next_value_seed(Without(rest))?);
                }
                _ => {
                    out.insert(key.into_owned(), map.next_value()?);
                }
            }
        }
        Ok(Value::Object(out))
    }

    // Anything but an object has nothing to skip: the value as it is.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// An object key, borrowed from the input unless it had escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pruned(item: &Value, pointers: &[&str]) -> (String, Value) {
        let bytes = serde_json::to_vec(item).unwrap();
        let (meta, rest) = read(&bytes, &Wanted::of(pointers.iter().copied())).unwrap();
        (meta.get().to_string(), rest)
    }

    #[test]
    fn only_the_pointed_at_subtrees_are_kept_and_metadata_comes_raw() {
        let pod = json!({
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}], "restartPolicy": "Always"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}], "conditions": []}
        });
        let (meta, rest) = pruned(
            &pod,
            &["/spec/nodeName", "/status/podIPs/0/ip", "/spec/missing"],
        );
        assert_eq!(meta, r#"{"name":"p","labels":{"a":"b"}}"#);
        assert_eq!(
            rest,
            json!({"spec": {"nodeName": "n1"}, "status": {"podIPs": [{"ip": "10.0.0.1"}]}})
        );
    }

    #[test]
    fn a_pointer_into_metadata_reads_it_from_the_raw_bytes_too() {
        let ns =
            json!({"metadata": {"name": "kube-system", "uid": "u"}, "status": {"phase": "Active"}});
        let (_, rest) = pruned(&ns, &["/metadata/name", "/status/phase"]);
        assert_eq!(
            rest,
            json!({"metadata": {"name": "kube-system"}, "status": {"phase": "Active"}})
        );
    }

    #[test]
    fn a_non_object_where_keys_are_wanted_reads_as_null() {
        for odd in [
            json!("x"),
            json!(1),
            json!(-1),
            json!(1.5),
            json!(true),
            json!(null),
            json!([1, {"a": 2}]),
        ] {
            let (_, rest) = pruned(&json!({"metadata": {}, "spec": odd}), &["/spec/nodeName"]);
            assert_eq!(rest, json!({"spec": null}));
        }
    }

    #[test]
    fn escaped_keys_are_matched_by_their_unescaped_text() {
        let item = br#"{"metadata":{},"sp\u0065c":{"a/b":1,"x":2}}"#;
        let (_, rest) = read(item, &Wanted::of(["/spec/a~1b"])).unwrap();
        assert_eq!(rest, json!({"spec": {"a/b": 1}}));
    }

    #[test]
    fn an_item_without_metadata_or_not_an_object_or_with_trailing_bytes_is_an_error() {
        let w = Wanted::of(["/spec/nodeName"]);
        let missing = read(br#"{"spec":{}}"#, &w).unwrap_err();
        assert!(missing.to_string().contains("metadata"), "{missing}");
        assert!(read(b"[1]", &w).is_err());
        assert!(read(br#"{"metadata":{}} x"#, &w).is_err());
        assert!(read(br#"{"metadata":{},"spec":{"nodeName":}"#, &w).is_err());
    }

    #[test]
    fn a_shorter_pointer_keeps_the_whole_subtree_whichever_comes_first() {
        let a = Wanted::of(["/status/phase", "/status"]);
        let b = Wanted::of(["/status", "/status/phase"]);
        assert_eq!(a, b);
    }

    #[test]
    fn an_object_parsed_without_a_subtree_is_the_whole_parse_less_that_subtree() {
        let item = json!({
            "metadata": {"name": "p", "managedFields": [{"manager": "kubelet"}], "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "ports": [1, 2.5, true, null]}]},
            "managedFields": "only the one under metadata goes",
        });
        let raw = serde_json::to_vec(&item).unwrap();
        let got = parse_without(&raw, &["metadata", "managedFields"]).unwrap();
        let mut want = item.clone();
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(got, want);
        // Key order is kept.
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
        // Where the path leads through something that is not an object, or
        // nowhere, the value is whole.
        for other in [
            json!({"metadata": 3}),
            json!([1, {"a": 2}]),
            json!("s"),
            json!({}),
        ] {
            let raw = serde_json::to_vec(&other).unwrap();
            assert_eq!(
                parse_without(&raw, &["metadata", "managedFields"]).unwrap(),
                other
            );
        }
        assert!(parse_without(b"{\"metadata\":{}} x", &["metadata"]).is_err());
        assert!(parse_without(b"{\"metadata\":", &["metadata"]).is_err());
    }
}
