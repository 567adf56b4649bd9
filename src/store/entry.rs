//! One cached object: the bytes it is served from, the few parsed facts
//! (key, rv, labels, selectable fields) requests are decided on, and
//! whatever its codec keeps beside it (`M`: the encoded forms made once
//! per version; the store neither reads nor knows them).

use bytes::Bytes;

/// An entry's labels and selectable fields: every key and value in one
/// allocation — the count, where each string ends, then the strings. As a
/// dozen separately allocated short strings per pod, each with its name,
/// they cost a cache of 100,000 pods about 60 MB more (allocation headers,
/// rounding, 24-byte name-and-end pairs): a fifth of the objects' own bytes
/// (benches/memory); the ends apart from the text cost 50,000 configmaps
/// another 2.4 MB.
#[derive(Debug, Default)]
pub struct Attrs {
    /// `[n: u32][end of each string: u32; n][the strings]`, little-endian;
    /// empty when there are none.
    packed: Box<[u8]>,
    /// The fields' names, one list per type shared by all its entries.
    names: &'static [&'static str],
}

impl Attrs {
    pub fn new(
        labels: impl IntoIterator<Item = (String, String)>,
        fields: Vec<(&'static str, String)>,
    ) -> Attrs {
        let mut strings: Vec<String> = Vec::new();
        for (k, v) in labels {
            strings.push(k);
            strings.push(v);
        }
        let mut names = Vec::with_capacity(fields.len());
        for (name, v) in fields {
            strings.push(v);
            names.push(name);
        }
        let text: usize = strings.iter().map(String::len).sum();
        let mut packed = Vec::new();
        if !strings.is_empty() {
            packed.reserve_exact(4 + 4 * strings.len() + text);
            packed.extend_from_slice(&(strings.len() as u32).to_le_bytes());
            let mut end = 0u32;
            for s in &strings {
                end += s.len() as u32;
                packed.extend_from_slice(&end.to_le_bytes());
            }
            for s in &strings {
                packed.extend_from_slice(s.as_bytes());
            }
        }
        Attrs {
            packed: packed.into_boxed_slice(),
            names: interned(names),
        }
    }

    fn word(&self, i: usize) -> usize {
        let at = 4 * i;
        let w: [u8; 4] = self.packed[at..at + 4].try_into().unwrap_or_default();
        u32::from_le_bytes(w) as usize
    }

    fn count(&self) -> usize {
        if self.packed.is_empty() {
            0
        } else {
            self.word(0)
        }
    }

    /// The i-th string's bytes (whole strings of valid UTF-8 went in).
    fn bytes(&self, i: usize) -> &[u8] {
        let text = 4 + 4 * self.count();
        let start = if i == 0 { 0 } else { self.word(i) };
        &self.packed[text + start..text + self.word(i + 1)]
    }

    fn string(&self, i: usize) -> &str {
        std::str::from_utf8(self.bytes(i)).unwrap_or_default()
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        let strings = self.count() - self.names.len();
        (0..strings / 2)
            .find(|p| self.bytes(2 * p) == key.as_bytes())
            .map(|p| self.string(2 * p + 1))
    }

    pub fn field(&self, field: &str) -> Option<&str> {
        let labels = self.count() - self.names.len();
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
    /// so byte order equals the apiserver's list order. Its own, not
    /// shared: the store's set finds entries by it (an `Arc`'s counts
    /// cost 16 bytes more per object).
    pub key: Box<str>,
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

/// An entry's key, `namespace/name` (or `name` without a namespace),
/// made before the entry so that the name may borrow the item's bytes.
pub struct EntryKey {
    key: Box<str>,
    ns_len: u32,
}

impl EntryKey {
    pub fn new(namespace: Option<&str>, name: &str) -> EntryKey {
        match namespace {
            Some(ns) => EntryKey {
                key: format!("{ns}/{name}").into_boxed_str(),
                ns_len: ns.len() as u32,
            },
            None => EntryKey {
                key: Box::from(name),
                ns_len: 0,
            },
        }
    }
}

impl<M> Entry<M> {
    pub fn new(key: EntryKey, rv: u64, attrs: Attrs, item: Bytes, memo: M) -> Self {
        let EntryKey { key, ns_len } = key;
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
            EntryKey::new(None, key),
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
