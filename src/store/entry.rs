//! One cached object: the bytes it is served from, the few parsed facts
//! (key, rv, labels, selectable fields) requests are decided on, and
//! whatever its codec keeps beside it (`M`: the encoded forms made once
//! per version; the store neither reads nor knows them).

use bytes::Bytes;
use std::sync::Arc;

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
pub struct Entry<M = ()> {
    /// `namespace/name` or `name`: the etcd key after the resource prefix,
    /// so byte order equals the apiserver's list order.
    pub key: Arc<str>,
    /// The length of the namespace at the head of `key` (0: none); the
    /// name is the rest.
    ns_len: u32,
    pub rv: u64,
    /// Labels and type-specific selectable fields (metadata ones come
    /// from the key).
    pub attrs: Attrs,
    /// The object as it is served (for the apiserver's typed lists, as a
    /// list item: see `encode::codec::ListStyle`).
    pub item: Bytes,
    /// What the object's codec keeps beside it.
    pub memo: M,
}

impl<M> Entry<M> {
    /// An entry keyed `namespace/name` (or `name` without a namespace).
    pub fn new(
        namespace: Option<&str>,
        name: &str,
        rv: u64,
        attrs: Attrs,
        item: Bytes,
        memo: M,
    ) -> Self {
        let (key, ns_len): (Arc<str>, u32) = match namespace {
            Some(ns) => (format!("{ns}/{name}").into(), ns.len() as u32),
            None => (Arc::from(name), 0),
        };
        Entry {
            key,
            ns_len,
            rv,
            attrs,
            item,
            memo,
        }
    }

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
}

impl<M: Default> Entry<M> {
    /// A cluster-scoped object named `key` at `rv`, for tests.
    #[cfg(test)]
    pub fn for_test(key: &str, rv: u64) -> Self {
        Entry::new(
            None,
            key,
            rv,
            Attrs::default(),
            Bytes::from(format!("{{\"metadata\":{{\"name\":\"{key}\"}}}}")),
            M::default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
