//! What is written, listed and watched: kinds, keys, scopes, and the objects and lists as the checks read them.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub(crate) enum Kind {
    ConfigMap,
    Pod,
}

pub(crate) const KINDS: [Kind; 2] = [Kind::ConfigMap, Kind::Pod];

impl Kind {
    pub(crate) fn plural(self) -> &'static str {
        match self {
            Kind::ConfigMap => "configmaps",
            Kind::Pod => "pods",
        }
    }

    pub(crate) fn collection(self, ns: Option<&str>) -> String {
        match ns {
            Some(ns) => format!("/api/v1/namespaces/{ns}/{}", self.plural()),
            None => format!("/api/v1/{}", self.plural()),
        }
    }

    /// The object a create writes; its `chaos/seq` annotation names the
    /// write, so that what is read can be told apart from what was written.
    pub(crate) fn object(self, key: &Key, seq: u64) -> Value {
        let metadata = json!({"name": key.name, "namespace": key.ns,
                              "labels": {"chaos": "true"},
                              "annotations": {"chaos/seq": seq.to_string()}});
        match self {
            Kind::ConfigMap => json!({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": metadata, "data": {"seq": seq.to_string()}}),
            Kind::Pod => json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                "spec": {"containers": [{"name": "c", "image": "registry.invalid/chaos:1"}]}}),
        }
    }

    /// An update as a merge patch, conditional on the version the writer
    /// last saw: a pod's spec cannot be replaced, and a write whose answer
    /// was lost must not be overwritten unknowingly.
    pub(crate) fn change(self, seq: u64, rv: u64) -> Value {
        let mut patch = json!({"metadata": {"resourceVersion": rv.to_string(),
                                            "annotations": {"chaos/seq": seq.to_string()}}});
        if self == Kind::ConfigMap {
            patch["data"] = json!({"seq": seq.to_string()});
        }
        patch
    }
}

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub(crate) struct Key {
    pub(crate) kind: Kind,
    pub(crate) ns: String,
    pub(crate) name: String,
}

impl Key {
    pub(crate) fn path(&self) -> String {
        format!("{}/{}", self.kind.collection(Some(&self.ns)), self.name)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind.plural(), self.ns, self.name)
    }
}

/// What a list or a watch covers: one type, in one namespace or all.
#[derive(Clone, Debug)]
pub(crate) struct Scope {
    pub(crate) kind: Kind,
    pub(crate) ns: Option<String>,
}

impl Scope {
    pub(crate) fn path(&self) -> String {
        self.kind.collection(self.ns.as_deref())
    }

    pub(crate) fn holds(&self, key: &Key) -> bool {
        key.kind == self.kind && self.ns.as_deref().is_none_or(|ns| ns == key.ns)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.ns {
            Some(ns) => write!(f, "{} in {ns}", self.kind.plural()),
            None => write!(f, "all {}", self.kind.plural()),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Change {
    Added,
    Modified,
    Deleted,
}

/// One change the upstream made, from its own history.
#[derive(Clone, Debug)]
pub(crate) struct Made {
    pub(crate) key: Key,
    pub(crate) rv: u64,
    pub(crate) change: Change,
    /// The `chaos/seq` of the object the upstream stored at `rv`: which
    /// write it holds (none for a delete).
    pub(crate) seq: Option<u64>,
}

/// The `chaos/seq` annotation's value in an object as the upstream stores
/// it, JSON or protobuf (etcd holds the apiserver's protobuf): the digits
/// after the key, past the few bytes that separate them (`":"`, or a
/// field tag and a length).
pub(crate) fn stored_seq(value: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"chaos/seq";
    let at = value.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &value[at..];
    let start = rest.iter().take(4).position(u8::is_ascii_digit)?;
    let digits: Vec<u8> = rest[start..]
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

#[derive(Deserialize)]
pub(crate) struct ObjectIn {
    #[serde(default)]
    pub(crate) metadata: MetaIn,
}

#[derive(Deserialize, Default)]
pub(crate) struct MetaIn {
    #[serde(default)]
    pub(crate) namespace: String,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(rename = "resourceVersion", default)]
    pub(crate) resource_version: String,
    #[serde(default)]
    pub(crate) annotations: Option<HashMap<String, String>>,
    #[serde(rename = "deletionTimestamp", default)]
    pub(crate) deletion_timestamp: Option<String>,
}

/// An object as the checks see it.
pub(crate) struct Obj {
    pub(crate) ns: String,
    pub(crate) name: String,
    pub(crate) rv: u64,
    pub(crate) seq: Option<u64>,
    /// Its deletion was asked for (`deletionTimestamp` set).
    pub(crate) deleting: bool,
}

pub(crate) fn object_of(raw: &[u8]) -> Option<Obj> {
    let o: ObjectIn = serde_json::from_slice(raw).ok()?;
    let m = o.metadata;
    Some(Obj {
        rv: m.resource_version.parse().ok()?,
        seq: m
            .annotations
            .as_ref()
            .and_then(|a| a.get("chaos/seq"))
            .and_then(|s| s.parse().ok()),
        deleting: m.deletion_timestamp.is_some(),
        ns: m.namespace,
        name: m.name,
    })
}

#[derive(Deserialize)]
pub(crate) struct ListIn<'a> {
    #[serde(default)]
    pub(crate) metadata: ListMetaIn,
    #[serde(borrow, default)]
    pub(crate) items: Vec<&'a RawValue>,
}

#[derive(Deserialize, Default)]
pub(crate) struct ListMetaIn {
    #[serde(rename = "resourceVersion", default)]
    pub(crate) resource_version: String,
    #[serde(rename = "continue", default)]
    pub(crate) continue_token: String,
}

/// One listed object: namespace, name, version and a hash of its exact
/// bytes — what two lists are compared on.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub(crate) struct Item {
    pub(crate) ns: String,
    pub(crate) name: String,
    pub(crate) rv: u64,
    pub(crate) bytes: u64,
}

pub(crate) struct Listed {
    pub(crate) rv: u64,
    pub(crate) cont: Option<String>,
    pub(crate) items: Vec<Item>,
}

pub(crate) fn parse_list(body: &[u8]) -> Option<Listed> {
    let l: ListIn = serde_json::from_slice(body).ok()?;
    let mut items = Vec::with_capacity(l.items.len());
    for raw in l.items {
        let o = object_of(raw.get().as_bytes())?;
        let mut h = DefaultHasher::new();
        raw.get().hash(&mut h);
        items.push(Item {
            ns: o.ns,
            name: o.name,
            rv: o.rv,
            bytes: h.finish(),
        });
    }
    items.sort();
    Some(Listed {
        rv: l.metadata.resource_version.parse().ok()?,
        cont: Some(l.metadata.continue_token).filter(|t| !t.is_empty()),
        items,
    })
}

/// The summary's hash over (namespace, name, resourceVersion).
pub(crate) fn nnr_hash(items: &[Item]) -> u64 {
    let mut h = DefaultHasher::new();
    for i in items {
        (&i.ns, &i.name, i.rv).hash(&mut h);
    }
    h.finish()
}

/// What differs between a list through kubecache and the upstream's.
pub(crate) fn diff(kube: &[Item], up: &[Item]) -> String {
    let name = |i: &Item| format!("{}/{}@{}", i.ns, i.name, i.rv);
    // The first few of `a` that `b` lacks.
    let only = |a: &[Item], b: &[Item]| -> Vec<String> {
        let b: HashSet<_> = b.iter().collect();
        a.iter()
            .filter(|i| !b.contains(i))
            .map(name)
            .take(4)
            .collect()
    };
    let (only_kube, only_up) = (only(kube, up), only(up, kube));
    format!(
        "{} items through kubecache, {} upstream; only through kubecache (or other bytes): {only_kube:?}; only upstream: {only_up:?}",
        kube.len(),
        up.len()
    )
}
