//! Every metric kubecache exports, declared in one place. Names follow
//! kube-apiserver's where the meaning matches; label values come from enums
//! or fixed strings. A leaf: it knows nothing of the modules that count.

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

/// `apiserver_request_total`, with `served_by` telling cache from upstream.
pub fn request(verb: &'static str, resource: &str, code: u16, served_by: ServedBy) {
    counter!(
        "apiserver_request_total",
        "verb" => verb,
        "resource" => resource.to_string(),
        "code" => code.to_string(),
        "served_by" => served_by.as_str()
    )
    .increment(1);
}

/// One comparison of a type's cache with the upstream
/// (`consistent`, `inconsistent`, `skipped`, `failed`), as the apiserver's
/// `apiserver_storage_consistency_checks_total`.
pub fn consistency_check(resource: &str, outcome: &'static str) {
    counter!(
        "kubecache_consistency_checks_total",
        "resource" => resource.to_string(),
        "status" => outcome
    )
    .increment(1);
}

/// A type's cache let go (`too_large`, `idle`): its reads are forwarded
/// until it is cached again.
pub fn cache_released(resource: &str, reason: &'static str) {
    counter!(
        "kubecache_cache_released_total",
        "resource" => resource.to_string(),
        "reason" => reason
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

/// What the cache's answers hold while their clients read them, and the
/// most they may (`--max-bytes-in-flight`); set when scraped.
pub fn bytes_in_flight(used: usize, limit: usize) {
    gauge!("kubecache_bytes_in_flight").set(used as f64);
    gauge!("kubecache_bytes_in_flight_limit").set(limit as f64);
}

/// A response body the allocator refused memory for: its request was
/// answered 429 instead (src/encode/recycle.rs).
pub fn body_without_memory() {
    counter!("kubecache_body_allocation_failures_total").increment(1);
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

/// An event the cache received; `kind` is the watch event's type
/// (`ADDED`, `MODIFIED`, `DELETED`).
pub fn watch_event(resource: &str, kind: &'static str) {
    counter!(
        "apiserver_watch_cache_events_received_total",
        "resource" => resource.to_string(),
        "type" => kind
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

/// A reflector error; `phase` is where it happened: `list`, `watch`, or
/// `expired` (the upstream's 410).
pub fn reflector_error(resource: &str, phase: &'static str) {
    counter!("kubecache_reflector_errors_total", "resource" => resource.to_string(), "phase" => phase)
        .increment(1);
}

/// A watcher cut off for falling behind, as the apiserver counts them.
pub fn watcher_terminated(resource: &str) {
    counter!("apiserver_terminated_watchers_total", "resource" => resource.to_string())
        .increment(1);
}

/// How an authentication ended (the apiserver's `authentication_attempts`
/// labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthnResult {
    Success,
    /// Credentials that do not authenticate.
    Failure,
    /// The review could not be made.
    Error,
}

/// `authentication_attempts`, as the apiserver counts them.
pub fn authentication(result: AuthnResult) {
    let result = match result {
        AuthnResult::Success => "success",
        AuthnResult::Failure => "failure",
        AuthnResult::Error => "error",
    };
    counter!("authentication_attempts", "result" => result).increment(1);
}

/// `apiserver_authorization_decisions_total` (the apiserver's since 1.29):
/// each read kubecache authorized, by the upstream's decision.
pub fn authorization(allowed: bool) {
    let decision = if allowed { "allowed" } else { "denied" };
    counter!(
        "apiserver_authorization_decisions_total",
        "type" => "Webhook",
        "name" => "kubecache",
        "decision" => decision
    )
    .increment(1);
}

/// A review looked up in its cache: a hit, or a miss that asked the
/// upstream (`ok` whether it answered). Token reviews under the
/// apiserver's token-cache names (`authentication_token_cache_*`), access
/// reviews under its webhook authorizer's
/// (`apiserver_authorization_webhook_evaluations_total`) and kubecache's.
pub fn review_cache(review: &'static str, asked: bool, ok: bool) {
    let status = if asked { "miss" } else { "hit" };
    let fetched = if ok { "ok" } else { "error" };
    if review == "token" {
        counter!("authentication_token_cache_request_total", "status" => status).increment(1);
        if asked {
            counter!("authentication_token_cache_fetch_total", "status" => fetched).increment(1);
        }
    } else {
        counter!("kubecache_authorization_cache_requests_total", "status" => status).increment(1);
        if asked {
            let result = if ok { "success" } else { "error" };
            counter!(
                "apiserver_authorization_webhook_evaluations_total",
                "name" => "kubecache",
                "result" => result
            )
            .increment(1);
        }
    }
}
