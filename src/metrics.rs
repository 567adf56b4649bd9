//! Every metric kubecache exports, declared in one place. Names follow
//! kube-apiserver's where the meaning matches; label values come from enums.

use crate::reflector::ReflectorError;
use crate::store::EventType;
use metrics::{counter, gauge};

/// Who answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedBy {
    Cache,
    Upstream,
    Local,
}

impl ServedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            ServedBy::Cache => "cache",
            ServedBy::Upstream => "upstream",
            ServedBy::Local => "local",
        }
    }
}

/// The apiserver's request verbs (its `verb` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Post,
    Put,
    Patch,
    Delete,
    DeleteCollection,
    /// Anything else, e.g. non-resource paths.
    Other,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Patch => "PATCH",
            Verb::Delete => "DELETE",
            Verb::DeleteCollection => "DELETECOLLECTION",
            Verb::Other => "OTHER",
        }
    }

    /// The verb of a request as the apiserver's RequestInfo names it: a
    /// read of a collection is a LIST, or a WATCH with `watch`; a legacy
    /// `/watch/` path is always a WATCH.
    pub fn of(
        method: &http::Method,
        path: Option<&crate::request::ResourcePath>,
        watch: bool,
    ) -> Verb {
        use http::Method;
        let Some(p) = path else {
            return Verb::Other;
        };
        let named = p.name.is_some();
        match *method {
            Method::GET | Method::HEAD if p.legacy_watch => Verb::Watch,
            // `?watch` on a named object is still a get to the apiserver.
            Method::GET | Method::HEAD if named => Verb::Get,
            Method::GET | Method::HEAD if watch => Verb::Watch,
            Method::GET | Method::HEAD => Verb::List,
            Method::POST => Verb::Post,
            Method::PUT => Verb::Put,
            Method::PATCH => Verb::Patch,
            Method::DELETE if named => Verb::Delete,
            Method::DELETE => Verb::DeleteCollection,
            _ => Verb::Other,
        }
    }
}

/// `apiserver_request_total`, with `served_by` telling cache from upstream.
pub fn request(verb: Verb, resource: &str, code: u16, served_by: ServedBy) {
    counter!(
        "apiserver_request_total",
        "verb" => verb.as_str(),
        "resource" => resource.to_string(),
        "code" => code.to_string(),
        "served_by" => served_by.as_str()
    )
    .increment(1);
}

/// Why a read went upstream instead of being served from the cache.
pub fn forwarded(reason: &'static str) {
    counter!("kubecache_forwarded_requests_total", "reason" => reason).increment(1);
}

/// Whether a whole-list body was kept from an earlier request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyOutcome {
    Kept,
    Made,
}

/// A whole-list body served, kept or made, and what kept bodies take.
pub fn list_body(outcome: BodyOutcome, kept_bytes: usize) {
    let outcome = match outcome {
        BodyOutcome::Kept => "kept",
        BodyOutcome::Made => "made",
    };
    counter!("kubecache_list_bodies_total", "outcome" => outcome).increment(1);
    gauge!("kubecache_list_bodies_kept_bytes").set(kept_bytes as f64);
}

/// What the buffers of big bodies waiting to be reused hold
/// (src/encode/recycle.rs).
pub fn body_buffers_idle(bytes: usize) {
    gauge!("kubecache_body_buffers_idle_bytes").set(bytes as f64);
}

/// A body made in a buffer another body handed back.
pub fn body_buffer_reused() {
    counter!("kubecache_body_buffers_reused_total").increment(1);
}

/// How a gzipped list body was compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GzipHow {
    /// From the objects' kept pieces (src/serve/pieces.rs).
    Stitched,
    /// All of it at once (pieces missing).
    Whole,
}

pub fn gzip_list(how: GzipHow) {
    let how = match how {
        GzipHow::Stitched => "stitched",
        GzipHow::Whole => "whole",
    };
    counter!("kubecache_gzip_list_bodies_total", "how" => how).increment(1);
}

pub fn watch_event(resource: &str, kind: EventType) {
    counter!(
        "apiserver_watch_cache_events_received_total",
        "resource" => resource.to_string(),
        "type" => kind.as_str()
    )
    .increment(1);
}

/// A completed (re)list; `capacity` is the history's event capacity, as
/// the apiserver's gauge of the same name reports its cache's.
pub fn reflector_list(resource: &str, capacity: usize) {
    counter!("apiserver_watch_cache_initializations_total", "resource" => resource.to_string())
        .increment(1);
    gauge!("apiserver_watch_cache_capacity", "resource" => resource.to_string())
        .set(capacity as f64);
}

/// What a type's cache holds now: its objects, their serialized bytes,
/// and the events its history keeps for watches and reads in the past.
pub fn cache_size(resource: &str, objects: usize, bytes: usize, history: usize) {
    gauge!("kubecache_cache_objects", "resource" => resource.to_string()).set(objects as f64);
    gauge!("kubecache_cache_bytes", "resource" => resource.to_string()).set(bytes as f64);
    gauge!("kubecache_cache_history_events", "resource" => resource.to_string())
        .set(history as f64);
}

pub fn reflector_error(resource: &str, e: &ReflectorError) {
    let phase = match e {
        ReflectorError::List(_)
        | ReflectorError::ListDecode(_)
        | ReflectorError::ListShape
        | ReflectorError::ListExpired
        | ReflectorError::ListStalled(_) => "list",
        ReflectorError::Watch(_)
        | ReflectorError::WatchStalled(_)
        | ReflectorError::WatchDecode(_)
        | ReflectorError::Apply(_) => "watch",
        ReflectorError::WatchExpired(_) => "expired",
    };
    counter!("kubecache_reflector_errors_total", "resource" => resource.to_string(), "phase" => phase)
        .increment(1);
}

/// A watcher cut off for falling behind, as the apiserver counts them.
pub fn watcher_terminated(resource: &str) {
    counter!("apiserver_terminated_watchers_total", "resource" => resource.to_string())
        .increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ResourcePath;
    use http::Method;

    fn verb(method: Method, path: &str, watch: bool) -> &'static str {
        Verb::of(&method, ResourcePath::parse(path).as_ref(), watch).as_str()
    }

    #[test]
    fn verbs_are_named_as_the_apiservers_request_info_names_them() {
        let cms = "/api/v1/namespaces/a/configmaps";
        assert_eq!(verb(Method::GET, cms, false), "LIST");
        assert_eq!(verb(Method::GET, cms, true), "WATCH");
        assert_eq!(verb(Method::GET, &format!("{cms}/x"), false), "GET");
        assert_eq!(verb(Method::GET, &format!("{cms}/x"), true), "GET");
        assert_eq!(
            verb(
                Method::GET,
                "/api/v1/watch/namespaces/a/configmaps/x",
                false
            ),
            "WATCH"
        );
        assert_eq!(verb(Method::DELETE, &format!("{cms}/x"), false), "DELETE");
        assert_eq!(verb(Method::DELETE, cms, false), "DELETECOLLECTION");
        assert_eq!(verb(Method::POST, cms, false), "POST");
        assert_eq!(verb(Method::GET, "/version", false), "OTHER");
    }
}
