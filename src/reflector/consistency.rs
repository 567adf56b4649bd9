//! Checking a type's cache against the upstream, as the apiserver's
//! `DetectCacheInconsistency` (KEP-4988) checks its watch cache against
//! etcd: now and then, the cache's (namespace, name, resourceVersion) at its
//! own resourceVersion are compared with the upstream's list at exactly that
//! resourceVersion; a difference is logged, counted, and makes the
//! reflector relist.
//!
//! The upstream's list is read page by page (`limit=500`) as object
//! metadata only and merged against the cache's snapshot in key order,
//! which is etcd's: a check holds a page at a time, whatever the type's size.

use crate::encode::codec::Snapshot;
use crate::resource::GroupVersionResource;
use crate::upstream::{Upstream, UpstreamError};
use rand::RngExt;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// What a check reads of a type's cache: every reflector's `Writer` is one.
pub trait Checked: Send + Sync + 'static {
    fn resource(&self) -> &GroupVersionResource;
    fn snapshot(&self) -> Snapshot;
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("listing at the cache's resourceVersion {rv}: {source}")]
    List {
        rv: u64,
        #[source]
        source: UpstreamError,
    },
    #[error("listing at the cache's resourceVersion: {0}")]
    Decode(#[source] serde_json::Error),
    #[error("asked for the list at resourceVersion {asked}, the upstream answered {got:?}")]
    WrongVersion { asked: u64, got: String },
    #[error("the upstream's list is not in key order at {0:?}")]
    Unordered(String),
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not synced yet, or the upstream no longer has the cache's version
    /// (compacted: a 410): nothing to compare.
    Skipped(&'static str),
    Consistent {
        objects: usize,
        digest: u64,
    },
    Inconsistent(Difference),
}

/// How a cache differs from its upstream at one resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Difference {
    pub rv: u64,
    /// In the upstream's list, not in the cache.
    pub missing: usize,
    /// In the cache, not in the upstream's list.
    pub extra: usize,
    /// In both, at different resourceVersions.
    pub changed: usize,
    /// The first key found different, for the log.
    pub first: String,
    pub cache_digest: u64,
    pub upstream_digest: u64,
}

impl Outcome {
    /// As the metric labels it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Skipped(_) => "skipped",
            Outcome::Consistent { .. } => "consistent",
            Outcome::Inconsistent(_) => "inconsistent",
        }
    }
}

/// Checks every `every` (± a fifth, so that types and replicas spread
/// out) for as long as the reflector runs; a difference wakes `relist`.
pub async fn run<W: Checked>(
    up: Arc<Upstream>,
    writer: Arc<W>,
    every: Duration,
    watching: tokio::sync::watch::Receiver<bool>,
    relist: Arc<Notify>,
    gzip: bool,
) {
    let resource = writer.resource().to_string();
    loop {
        let jitter = rand::rng().random_range(0.8..1.2);
        tokio::time::sleep(every.mul_f64(jitter)).await;
        let checked = if *watching.borrow() {
            check(&up, &*writer, gzip).await
        } else {
            Ok(Outcome::Skipped("not watching"))
        };
        let outcome = match checked {
            Ok(o) => o,
            Err(e) => {
                tracing::info!(%resource, error = %e, "consistency check failed");
                crate::metrics::consistency_check(&resource, "failed");
                continue;
            }
        };
        crate::metrics::consistency_check(&resource, outcome.as_str());
        match &outcome {
            // Unless the reflector has stopped watching meanwhile (a relist
            // of its own will do).
            Outcome::Inconsistent(d) if *watching.borrow() => {
                tracing::warn!(
                    %resource, rv = d.rv, missing = d.missing, extra = d.extra,
                    changed = d.changed, first = %d.first,
                    cache_digest = format_args!("{:016x}", d.cache_digest),
                    upstream_digest = format_args!("{:016x}", d.upstream_digest),
                    "the cache differs from the upstream at its own resourceVersion: relisting"
                );
                relist.notify_one();
            }
            Outcome::Inconsistent(_) => {}
            Outcome::Consistent { objects, digest } => tracing::debug!(
                %resource, objects, digest = format_args!("{digest:016x}"), "cache consistent"
            ),
            Outcome::Skipped(why) => tracing::debug!(%resource, why, "consistency check skipped"),
        }
    }
}

#[derive(Deserialize)]
struct MetaList {
    #[serde(default)]
    metadata: ListMetaIn,
    #[serde(default)]
    items: Vec<ItemIn>,
}

#[derive(Deserialize, Default)]
struct ListMetaIn {
    #[serde(default, rename = "resourceVersion")]
    resource_version: String,
    #[serde(default, rename = "continue")]
    continue_token: String,
}

#[derive(Deserialize)]
struct ItemIn {
    metadata: ItemMeta,
}

#[derive(Deserialize)]
struct ItemMeta {
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

/// Object metadata only, where the upstream can (every apiserver since
/// 1.15): a tenth of the bytes of a pod list.
const METADATA_ONLY: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// One check of the cache as it is now.
pub async fn check(
    up: &Upstream,
    writer: &impl Checked,
    gzip: bool,
) -> Result<Outcome, CheckError> {
    let snap = writer.snapshot();
    if snap.rv == 0 {
        return Ok(Outcome::Skipped("not synced"));
    }
    let rv = snap.rv;
    let base = writer.resource().path(None);
    let mut merge = Merge::new(rv, versions(&snap.items));
    let mut token: Option<String> = None;
    loop {
        let query = match &token {
            Some(t) => {
                let t: String = url::form_urlencoded::byte_serialize(t.as_bytes()).collect();
                format!("{base}?limit=500&continue={t}")
            }
            None => format!("{base}?limit=500&resourceVersion={rv}&resourceVersionMatch=Exact"),
        };
        let body = match up.get_bytes_accepting(&query, METADATA_ONLY, gzip).await {
            Err(UpstreamError::Status { status, .. }) if status == 410 => {
                return Ok(Outcome::Skipped("compacted"))
            }
            other => other.map_err(|source| CheckError::List { rv, source })?,
        };
        let page: MetaList = serde_json::from_slice(&body).map_err(CheckError::Decode)?;
        if page.metadata.resource_version != rv.to_string() {
            return Err(CheckError::WrongVersion {
                asked: rv,
                got: page.metadata.resource_version,
            });
        }
        for item in page.items {
            let m = item.metadata;
            let key = if m.namespace.is_empty() {
                m.name
            } else {
                format!("{}/{}", m.namespace, m.name)
            };
            // An unparseable version is one no cached object has.
            merge.upstream(key, m.resource_version.parse().unwrap_or(0))?;
        }
        if page.metadata.continue_token.is_empty() {
            break;
        }
        token = Some(page.metadata.continue_token);
    }
    Ok(merge.finish())
}

/// A named function, not a closure: a closure's lifetimes held across the
/// awaits above are more than the compiler proves `Send`.
fn versions(items: &crate::encode::codec::Items) -> impl Iterator<Item = (&str, u64)> {
    items.iter().map(key_and_version)
}

fn key_and_version(e: &Arc<crate::encode::codec::Entry>) -> (&str, u64) {
    (&e.key, e.rv)
}

/// The cache's versions in key order, met by the upstream's one at a time.
struct Merge<'a, I: Iterator<Item = (&'a str, u64)>> {
    cache: std::iter::Peekable<I>,
    diff: Difference,
    cache_digest: Digest,
    upstream_digest: Digest,
    objects: usize,
    last: Option<String>,
}

impl<'a, I: Iterator<Item = (&'a str, u64)>> Merge<'a, I> {
    fn new(rv: u64, cache: I) -> Self {
        Merge {
            cache: cache.peekable(),
            diff: Difference {
                rv,
                ..Difference::default()
            },
            cache_digest: Digest::new(),
            upstream_digest: Digest::new(),
            objects: 0,
            last: None,
        }
    }

    fn upstream(&mut self, key: String, rv: u64) -> Result<(), CheckError> {
        if self.last.as_ref().is_some_and(|last| key <= *last) {
            return Err(CheckError::Unordered(key));
        }
        self.objects += 1;
        self.upstream_digest.add(&key, rv);
        // What the cache holds before this key, the upstream does not.
        while let Some((k, v)) = self.cache.next_if(|(k, _)| *k < key.as_str()) {
            self.diff.note_extra(k);
            self.cache_digest.add(k, v);
        }
        match self.cache.next_if(|(k, _)| *k == key.as_str()) {
            Some((k, v)) => {
                if v != rv {
                    self.diff.changed += 1;
                    self.diff.first_at(k);
                }
                self.cache_digest.add(k, v);
            }
            None => {
                self.diff.missing += 1;
                self.diff.first_at(&key);
            }
        }
        self.last = Some(key);
        Ok(())
    }

    fn finish(mut self) -> Outcome {
        for (k, v) in self.cache {
            self.diff.note_extra(k);
            self.cache_digest.add(k, v);
        }
        self.diff.cache_digest = self.cache_digest.0;
        self.diff.upstream_digest = self.upstream_digest.0;
        if self.diff.missing + self.diff.extra + self.diff.changed == 0 {
            return Outcome::Consistent {
                objects: self.objects,
                digest: self.diff.cache_digest,
            };
        }
        Outcome::Inconsistent(self.diff)
    }
}

impl Difference {
    fn note_extra(&mut self, key: &str) {
        self.extra += 1;
        self.first_at(key);
    }

    fn first_at(&mut self, key: &str) {
        if self.first.is_empty() {
            self.first = key.to_string();
        }
    }
}

/// FNV-1a over each object's key and resourceVersion in key order: the
/// same for both sides exactly when they hold the same versions (barring a
/// 64-bit collision), to compare in the log with another replica's.
struct Digest(u64);

impl Digest {
    fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, key: &str, rv: u64) {
        for b in key.bytes().chain([0]).chain(rv.to_le_bytes()) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(cache: &[(&str, u64)], upstream: &[(&str, u64)]) -> Outcome {
        let mut m = Merge::new(9, cache.iter().copied());
        for (k, v) in upstream {
            m.upstream(k.to_string(), *v).unwrap();
        }
        m.finish()
    }

    #[test]
    fn the_same_versions_are_consistent_with_equal_digests() {
        let both = [("a/1", 3), ("a/2", 5), ("b/1", 7)];
        let Outcome::Consistent { objects, digest } = merged(&both, &both) else {
            panic!("inconsistent")
        };
        assert_eq!(objects, 3);
        assert_ne!(digest, Digest::new().0);
        assert_eq!(
            merged(&[], &[]),
            Outcome::Consistent {
                objects: 0,
                digest: Digest::new().0
            }
        );
    }

    #[test]
    fn missing_extra_and_changed_objects_are_each_counted() {
        let cache = [("a/0", 1), ("a/1", 3), ("a/2", 4), ("c/1", 8)];
        let upstream = [("a/1", 3), ("a/2", 6), ("b/1", 7), ("b/2", 7)];
        let Outcome::Inconsistent(d) = merged(&cache, &upstream) else {
            panic!("consistent")
        };
        assert_eq!((d.missing, d.extra, d.changed), (2, 2, 1));
        assert_eq!(d.first, "a/0");
        assert_eq!(d.rv, 9);
        assert_ne!(d.cache_digest, d.upstream_digest);
    }

    #[test]
    fn an_object_only_at_either_end_is_a_difference() {
        let Outcome::Inconsistent(d) = merged(&[("a", 1), ("b", 2)], &[("b", 2)]) else {
            panic!()
        };
        assert_eq!(
            (d.missing, d.extra, d.changed, d.first.as_str()),
            (0, 1, 0, "a")
        );
        let Outcome::Inconsistent(d) = merged(&[("a", 1)], &[("a", 1), ("z", 2)]) else {
            panic!()
        };
        assert_eq!(
            (d.missing, d.extra, d.changed, d.first.as_str()),
            (1, 0, 0, "z")
        );
    }

    #[test]
    fn an_upstream_list_out_of_key_order_is_an_error_not_a_difference() {
        let mut m = Merge::new(9, [("a", 1), ("b", 1)].into_iter());
        m.upstream("b".into(), 1).unwrap();
        assert!(matches!(m.upstream("a".into(), 1), Err(CheckError::Unordered(k)) if k == "a"));
        assert!(matches!(
            m.upstream("b".into(), 1),
            Err(CheckError::Unordered(_))
        ));
    }

    #[test]
    fn the_digest_tells_a_version_from_a_key_boundary() {
        let digest = |pairs: &[(&str, u64)]| {
            let mut d = Digest::new();
            for (k, v) in pairs {
                d.add(k, *v);
            }
            d.0
        };
        assert_ne!(digest(&[("a", 1)]), digest(&[("a", 2)]));
        assert_ne!(digest(&[("ab", 1)]), digest(&[("a", 1), ("b", 1)]));
        assert_eq!(digest(&[("a", 1), ("b", 2)]), digest(&[("a", 1), ("b", 2)]));
    }
}
