//! Every metric kubecache exports, declared in one place. Names follow
//! kube-apiserver's where the meaning matches; label values come from enums
//! or fixed strings. A leaf: it knows nothing of the modules that count.

use metrics::{
    counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Unit,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A cached type's own tallies, kept beside its Prometheus series for the
/// status page (`/debug/cache`, a line per type) and the tests that ask
/// one type what it did. Counted only by the recording functions below.
#[derive(Debug, Default)]
pub struct TypeTally {
    served: AtomicU64,
    forwarded: AtomicU64,
    lists: AtomicU64,
    watches: AtomicU64,
    errors: AtomicU64,
    gzipped_watches: AtomicU64,
    watch_bytes: AtomicU64,
}

impl TypeTally {
    /// Reads answered from the cache.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
    /// Reads of the type sent upstream instead.
    pub fn forwarded(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }
    /// The reflector's completed lists (the first sync and every relist).
    pub fn lists(&self) -> u64 {
        self.lists.load(Ordering::Relaxed)
    }
    /// The reflector's watch requests.
    pub fn watches(&self) -> u64 {
        self.watches.load(Ordering::Relaxed)
    }
    /// The reflector's errors, of any phase.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
    /// Watches the upstream answered gzipped (an upstream kubecache).
    pub fn gzipped_watches(&self) -> u64 {
        self.gzipped_watches.load(Ordering::Relaxed)
    }
    /// The watches' body bytes as they came (gzipped or not).
    pub fn watch_bytes(&self) -> u64 {
        self.watch_bytes.load(Ordering::Relaxed)
    }
}

fn tally(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A read of a cached type answered from the cache, or sent upstream.
pub fn type_read(t: &TypeTally, answered: bool) {
    tally(if answered { &t.served } else { &t.forwarded }, 1);
}

/// A reflector's list completed (its state swapped in).
pub fn reflector_listed(t: &TypeTally) {
    tally(&t.lists, 1);
}

/// A reflector's watch asked for.
pub fn reflector_watch_asked(t: &TypeTally) {
    tally(&t.watches, 1);
}

/// A reflector's watch answered gzipped.
pub fn reflector_watch_gzipped(t: &TypeTally) {
    tally(&t.gzipped_watches, 1);
}

/// `apiserver_request_duration_seconds`' buckets, as the apiserver's.
pub const REQUEST_DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// `kubecache_freshness_proof_duration_seconds`' buckets: a busy type's
/// proof takes a probe's round trip (milliseconds), a quiet type's waits
/// for a tick of the upstream's bookmark timer (up to 2.25 s).
pub const PROOF_DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.5,
];

/// Each metric's name, spelled once: `describe` and the functions that
/// record it use these.
pub const APISERVER_REQUEST_TOTAL: &str = "apiserver_request_total";
pub const APISERVER_REQUEST_DURATION_SECONDS: &str = "apiserver_request_duration_seconds";
pub const APISERVER_LONGRUNNING_REQUESTS: &str = "apiserver_longrunning_requests";
pub const KUBECACHE_CONSISTENCY_CHECKS_TOTAL: &str = "kubecache_consistency_checks_total";
pub const KUBECACHE_CACHE_RELEASED_TOTAL: &str = "kubecache_cache_released_total";
pub const KUBECACHE_FORWARDED_REQUESTS_TOTAL: &str = "kubecache_forwarded_requests_total";
pub const KUBECACHE_LIST_BODIES_TOTAL: &str = "kubecache_list_bodies_total";
pub const KUBECACHE_STREAMED_LISTS_TOTAL: &str = "kubecache_streamed_lists_total";
pub const KUBECACHE_LIST_BODIES_KEPT_BYTES: &str = "kubecache_list_bodies_kept_bytes";
pub const KUBECACHE_BODY_BUFFERS_IDLE_BYTES: &str = "kubecache_body_buffers_idle_bytes";
pub const KUBECACHE_BYTES_IN_FLIGHT: &str = "kubecache_bytes_in_flight";
pub const KUBECACHE_BYTES_IN_FLIGHT_LIMIT: &str = "kubecache_bytes_in_flight_limit";
pub const KUBECACHE_BODY_ALLOCATION_FAILURES_TOTAL: &str =
    "kubecache_body_allocation_failures_total";
pub const KUBECACHE_BODY_BUFFERS_REUSED_TOTAL: &str = "kubecache_body_buffers_reused_total";
pub const KUBECACHE_GZIP_LIST_BODIES_TOTAL: &str = "kubecache_gzip_list_bodies_total";
pub const APISERVER_WATCH_CACHE_EVENTS_RECEIVED_TOTAL: &str =
    "apiserver_watch_cache_events_received_total";
pub const APISERVER_WATCH_CACHE_EVENTS_DISPATCHED_TOTAL: &str =
    "apiserver_watch_cache_events_dispatched_total";
pub const APISERVER_WATCH_CACHE_RESOURCE_VERSION: &str = "apiserver_watch_cache_resource_version";
pub const KUBECACHE_CACHE_LAG_SECONDS: &str = "kubecache_cache_lag_seconds";
pub const KUBECACHE_REFLECTOR_STATE: &str = "kubecache_reflector_state";
pub const KUBECACHE_UPSTREAM_REQUESTS_TOTAL: &str = "kubecache_upstream_requests_total";
pub const KUBECACHE_GZIP_BYTES_TOTAL: &str = "kubecache_gzip_bytes_total";
pub const KUBECACHE_UPSTREAM_BODY_BYTES_TOTAL: &str = "kubecache_upstream_body_bytes_total";
pub const APISERVER_WATCH_CACHE_INITIALIZATIONS_TOTAL: &str =
    "apiserver_watch_cache_initializations_total";
pub const KUBECACHE_RELISTS_TOTAL: &str = "kubecache_relists_total";
pub const KUBECACHE_RELIST_EVENTS_TOTAL: &str = "kubecache_relist_events_total";
pub const KUBECACHE_SNAPSHOT_WRITES_TOTAL: &str = "kubecache_snapshot_writes_total";
pub const KUBECACHE_SNAPSHOT_BYTES: &str = "kubecache_snapshot_bytes";
pub const KUBECACHE_STALE_RESPONSES_TOTAL: &str = "kubecache_stale_responses_total";
pub const APISERVER_WATCH_CACHE_CAPACITY: &str = "apiserver_watch_cache_capacity";
pub const KUBECACHE_CACHE_OBJECTS: &str = "kubecache_cache_objects";
pub const KUBECACHE_CACHE_BYTES: &str = "kubecache_cache_bytes";
pub const KUBECACHE_CACHE_HISTORY_EVENTS: &str = "kubecache_cache_history_events";
pub const KUBECACHE_REFLECTOR_ERRORS_TOTAL: &str = "kubecache_reflector_errors_total";
pub const APISERVER_TERMINATED_WATCHERS_TOTAL: &str = "apiserver_terminated_watchers_total";
pub const AUTHENTICATION_ATTEMPTS: &str = "authentication_attempts";
pub const APISERVER_AUTHORIZATION_DECISIONS_TOTAL: &str = "apiserver_authorization_decisions_total";
pub const AUTHENTICATION_TOKEN_CACHE_REQUEST_TOTAL: &str =
    "authentication_token_cache_request_total";
pub const AUTHENTICATION_TOKEN_CACHE_FETCH_TOTAL: &str = "authentication_token_cache_fetch_total";
pub const KUBECACHE_TOKEN_REVIEWS_REFUSED_TOTAL: &str = "kubecache_token_reviews_refused_total";
pub const KUBECACHE_AUTHORIZATION_CACHE_REQUESTS_TOTAL: &str =
    "kubecache_authorization_cache_requests_total";
pub const APISERVER_AUTHORIZATION_WEBHOOK_EVALUATIONS_TOTAL: &str =
    "apiserver_authorization_webhook_evaluations_total";
pub const KUBECACHE_CONSISTENT_READS_TOTAL: &str = "kubecache_consistent_reads_total";
pub const KUBECACHE_FRESHNESS_PROOF_DURATION_SECONDS: &str =
    "kubecache_freshness_proof_duration_seconds";
pub const KUBECACHE_FRESHNESS_PROBES_TOTAL: &str = "kubecache_freshness_probes_total";
pub const KUBECACHE_FRESHNESS_SIDE_WATCHES_TOTAL: &str = "kubecache_freshness_side_watches_total";
pub const KUBECACHE_COALESCED_READS_TOTAL: &str = "kubecache_coalesced_reads_total";
pub const KUBECACHE_WEBSOCKET_WATCHES_TOTAL: &str = "kubecache_websocket_watches_total";
pub const KUBECACHE_WEBSOCKET_REFUSALS_TOTAL: &str = "kubecache_websocket_refusals_total";

/// The HELP text of every metric (and with it its TYPE before the first
/// sample): call once the recorder is installed.
pub fn describe() {
    describe_counter!(
        APISERVER_REQUEST_TOTAL,
        "Counter of apiserver requests broken out for each verb, resource and HTTP response code; served_by tells the cache, the upstream and kubecache's own endpoints apart."
    );
    describe_histogram!(
        APISERVER_REQUEST_DURATION_SECONDS,
        Unit::Seconds,
        "Response latency distribution in seconds for each verb and resource, to the response's headers (a watch: to its start); served_by tells the cache from the upstream."
    );
    describe_gauge!(
        APISERVER_LONGRUNNING_REQUESTS,
        "Gauge of all active long-running apiserver requests (watches) broken out by verb and resource."
    );
    describe_counter!(
        KUBECACHE_CONSISTENCY_CHECKS_TOTAL,
        "Counter of comparisons of a type's cache with the upstream, by resource and status (consistent, inconsistent, skipped, failed)."
    );
    describe_counter!(
        KUBECACHE_CACHE_RELEASED_TOTAL,
        "Counter of types' caches let go (too_large, idle); their reads are forwarded until cached again."
    );
    describe_counter!(
        KUBECACHE_FORWARDED_REQUESTS_TOTAL,
        "Counter of reads sent upstream instead of being served from the cache, by reason."
    );
    describe_counter!(
        KUBECACHE_LIST_BODIES_TOTAL,
        "Counter of whole-list bodies served, kept from an earlier request or made."
    );
    describe_counter!(
        KUBECACHE_STREAMED_LISTS_TOTAL,
        "Counter of lists not kept, written as their clients read them, by how they went out: whole (they fit in their first chunk) or streamed."
    );
    describe_gauge!(
        KUBECACHE_LIST_BODIES_KEPT_BYTES,
        Unit::Bytes,
        "Bytes the kept list bodies and gzip pieces hold (--max-kept-body-bytes)."
    );
    describe_gauge!(
        KUBECACHE_BODY_BUFFERS_IDLE_BYTES,
        Unit::Bytes,
        "Bytes of big bodies' buffers waiting to be reused."
    );
    describe_gauge!(
        KUBECACHE_BYTES_IN_FLIGHT,
        Unit::Bytes,
        "Bytes of the cache's answers held while their clients read them."
    );
    describe_gauge!(
        KUBECACHE_BYTES_IN_FLIGHT_LIMIT,
        Unit::Bytes,
        "The most the cache's answers may hold in flight (--max-bytes-in-flight); past it, 429."
    );
    describe_counter!(
        KUBECACHE_BODY_ALLOCATION_FAILURES_TOTAL,
        "Counter of response bodies the allocator refused memory for (answered 429)."
    );
    describe_counter!(
        KUBECACHE_BODY_BUFFERS_REUSED_TOTAL,
        "Counter of big bodies made in a buffer another body handed back."
    );
    describe_counter!(
        KUBECACHE_GZIP_LIST_BODIES_TOTAL,
        "Counter of gzipped list bodies, stitched from kept pieces or compressed whole."
    );
    describe_counter!(
        APISERVER_WATCH_CACHE_EVENTS_RECEIVED_TOTAL,
        "Counter of events received by the watch cache, by resource and type."
    );
    describe_counter!(
        APISERVER_WATCH_CACHE_EVENTS_DISPATCHED_TOTAL,
        "Counter of events dispatched in watch cache broken by resource type."
    );
    describe_gauge!(
        APISERVER_WATCH_CACHE_RESOURCE_VERSION,
        "Current resource version of watch cache broken by resource type."
    );
    describe_gauge!(
        KUBECACHE_CACHE_LAG_SECONDS,
        Unit::Seconds,
        "Seconds since the upstream was last heard from for the type (a list, an event or a bookmark): how stale its cache may be."
    );
    describe_gauge!(
        KUBECACHE_REFLECTOR_STATE,
        "The type's reflector state: 1 for the state it is in, 0 for the others."
    );
    describe_counter!(
        KUBECACHE_UPSTREAM_REQUESTS_TOTAL,
        "Counter of requests kubecache made of the upstream (its own and forwarded), by verb and code (error: no answer)."
    );
    describe_counter!(
        KUBECACHE_GZIP_BYTES_TOTAL,
        Unit::Bytes,
        "Bytes gzipped for responses: in (plain) and out (compressed)."
    );
    describe_counter!(
        KUBECACHE_UPSTREAM_BODY_BYTES_TOTAL,
        Unit::Bytes,
        "Bytes of the reflectors' list and watch bodies as they came from the upstream, by request (list, watch) and content encoding (gzip or identity)."
    );
    describe_counter!(
        APISERVER_WATCH_CACHE_INITIALIZATIONS_TOTAL,
        "Counter of watch cache initializations (lists and relists), by resource."
    );
    describe_counter!(
        KUBECACHE_RELISTS_TOTAL,
        "Counter of relists of a type's cache, by how watchers went on: told (the difference sent as events) or replaced (watchers behind it get a 410)."
    );
    describe_counter!(
        KUBECACHE_RELIST_EVENTS_TOTAL,
        "Counter of events that told watchers a relist's difference."
    );
    describe_counter!(
        KUBECACHE_SNAPSHOT_WRITES_TOTAL,
        "Counter of a type's snapshot writes (--snapshot-dir), by resource and result (ok, error)."
    );
    describe_gauge!(
        KUBECACHE_SNAPSHOT_BYTES,
        Unit::Bytes,
        "The size on disk of a type's last snapshot."
    );
    describe_counter!(
        KUBECACHE_STALE_RESPONSES_TOTAL,
        "Counter of answers served from a state the upstream has not confirmed (unreachable upstream, a restored snapshot), each with a Warning header, by resource."
    );
    describe_gauge!(
        APISERVER_WATCH_CACHE_CAPACITY,
        "Total capacity of the watch cache's history, by resource."
    );
    describe_gauge!(KUBECACHE_CACHE_OBJECTS, "Objects a type's cache holds.");
    describe_gauge!(
        KUBECACHE_CACHE_BYTES,
        Unit::Bytes,
        "The serialized bytes of the objects a type's cache holds."
    );
    describe_gauge!(
        KUBECACHE_CACHE_HISTORY_EVENTS,
        "Events a type's history keeps for watches and reads in the past."
    );
    describe_counter!(
        KUBECACHE_REFLECTOR_ERRORS_TOTAL,
        "Counter of reflector errors, by resource and phase (list, watch, expired, ...)."
    );
    describe_counter!(
        APISERVER_TERMINATED_WATCHERS_TOTAL,
        "Counter of watchers closed due to unresponsiveness, by resource."
    );
    describe_counter!(
        AUTHENTICATION_ATTEMPTS,
        "Counter of authenticated attempts, by result."
    );
    describe_counter!(
        APISERVER_AUTHORIZATION_DECISIONS_TOTAL,
        "Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision."
    );
    describe_counter!(
        AUTHENTICATION_TOKEN_CACHE_REQUEST_TOTAL,
        "Counter of token review cache lookups, by status (hit, miss)."
    );
    describe_counter!(
        AUTHENTICATION_TOKEN_CACHE_FETCH_TOTAL,
        "Counter of token reviews asked of the upstream, by status."
    );
    describe_counter!(
        KUBECACHE_TOKEN_REVIEWS_REFUSED_TOTAL,
        "Tokens refused unreviewed (429) because --max-token-reviews-in-flight reviews were being asked."
    );
    describe_counter!(
        KUBECACHE_AUTHORIZATION_CACHE_REQUESTS_TOTAL,
        "Counter of access review cache lookups, by status (hit, miss)."
    );
    describe_counter!(
        APISERVER_AUTHORIZATION_WEBHOOK_EVALUATIONS_TOTAL,
        "Round-trips to authorization webhooks (here: access reviews asked of the upstream), by result."
    );
    describe_counter!(
        KUBECACHE_CONSISTENT_READS_TOTAL,
        "Counter of consistent reads (resourceVersion unset, and NotOlderThan reads past the cache), by resource, served_by (cache or upstream) and reason: how the cache was proven fresh (reached, events, bookmark) or why it was not (no_proof, probe_failed, proof_timeout, proof_busy, forward_configured)."
    );
    describe_histogram!(
        KUBECACHE_FRESHNESS_PROOF_DURATION_SECONDS,
        Unit::Seconds,
        "How long proving a type's cache fresh for a read took, by outcome (reached, events, bookmark, or why it failed)."
    );
    describe_counter!(
        KUBECACHE_FRESHNESS_PROBES_TOTAL,
        "Counter of consistent probes asked of the upstream for proofs of freshness, by result (ok, error)."
    );
    describe_counter!(
        KUBECACHE_FRESHNESS_SIDE_WATCHES_TOTAL,
        "Counter of side watches opened for proofs of freshness, by how they ended (proven, not_applied, no_bookmark, failed)."
    );
    describe_counter!(
        KUBECACHE_COALESCED_READS_TOTAL,
        "Counter of consistent reads forwarded as one shared upstream read, by role: began (asked upstream) or shared (answered by a read another began)."
    );
    describe_counter!(
        KUBECACHE_WEBSOCKET_WATCHES_TOTAL,
        "Counter of watches served over WebSocket from the cache, by resource and how they ended: ended (the watch's end: its timeout, the drain, cut off), client_closed (a close frame), client_gone (the connection closed or failed), protocol_error (an unmasked, unreadable or over-32-MiB client frame), drained (still writing a second into the drain), upgrade_failed."
    );
    describe_counter!(
        KUBECACHE_WEBSOCKET_REFUSALS_TOTAL,
        "Counter of WebSocket watch handshakes refused as the apiserver's x/net refuses them, by reason (method, not_websocket, key, version, location, origin, protocols)."
    );
    process().describe();
}

/// The process's own metrics (CPU, memory, descriptors, threads), read
/// from /proc: collected at each scrape.
pub fn collect_process() {
    process().collect();
}

fn process() -> &'static metrics_process::Collector {
    static COLLECTOR: std::sync::OnceLock<metrics_process::Collector> = std::sync::OnceLock::new();
    COLLECTOR.get_or_init(metrics_process::Collector::default)
}

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

/// `apiserver_request_total` and `apiserver_request_duration_seconds`,
/// with `served_by` telling cache from upstream.
pub fn request(verb: &'static str, resource: &str, code: u16, served_by: ServedBy, took: Duration) {
    counter!(
        APISERVER_REQUEST_TOTAL,
        "verb" => verb,
        "resource" => resource.to_string(),
        "code" => code.to_string(),
        "served_by" => served_by.as_str()
    )
    .increment(1);
    histogram!(
        APISERVER_REQUEST_DURATION_SECONDS,
        "verb" => verb,
        "resource" => resource.to_string(),
        "served_by" => served_by.as_str()
    )
    .record(took.as_secs_f64());
}

/// An open watch, counted in `apiserver_longrunning_requests` from its
/// start until it is dropped.
pub struct LongRunning(metrics::Gauge);

impl LongRunning {
    pub fn watch(resource: &str) -> Self {
        let g = gauge!(
            APISERVER_LONGRUNNING_REQUESTS,
            "verb" => "WATCH",
            "resource" => resource.to_string()
        );
        g.increment(1.0);
        LongRunning(g)
    }
}

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// One comparison of a type's cache with the upstream
/// (`consistent`, `inconsistent`, `skipped`, `failed`), as the apiserver's
/// `apiserver_storage_consistency_checks_total`.
pub fn consistency_check(resource: &str, outcome: &'static str) {
    counter!(
        KUBECACHE_CONSISTENCY_CHECKS_TOTAL,
        "resource" => resource.to_string(),
        "status" => outcome
    )
    .increment(1);
}

/// A type's cache let go (`too_large`, `idle`): its reads are forwarded
/// until it is cached again.
pub fn cache_released(resource: &str, reason: &'static str) {
    counter!(
        KUBECACHE_CACHE_RELEASED_TOTAL,
        "resource" => resource.to_string(),
        "reason" => reason
    )
    .increment(1);
}

/// A consistent read, served from the cache (`reason`: how it was proven
/// fresh) or upstream (why not).
pub fn consistent_read(resource: &str, from_cache: bool, reason: &'static str) {
    let served_by = if from_cache { "cache" } else { "upstream" };
    counter!(KUBECACHE_CONSISTENT_READS_TOTAL, "resource" => resource.to_string(),
        "served_by" => served_by, "reason" => reason)
    .increment(1);
}

/// A proof of freshness made (`outcome`: how, or why it failed).
pub fn freshness_proof(outcome: &'static str, took: Duration) {
    histogram!(KUBECACHE_FRESHNESS_PROOF_DURATION_SECONDS, "outcome" => outcome)
        .record(took.as_secs_f64());
}

pub fn freshness_probe(ok: bool) {
    let result = if ok { "ok" } else { "error" };
    counter!(KUBECACHE_FRESHNESS_PROBES_TOTAL, "result" => result).increment(1);
}

pub fn freshness_side_watch(result: &'static str) {
    counter!(KUBECACHE_FRESHNESS_SIDE_WATCHES_TOTAL, "result" => result).increment(1);
}

/// A consistent read forwarded through a shared upstream read.
pub fn coalesced_read(began: bool) {
    let role = if began { "began" } else { "shared" };
    counter!(KUBECACHE_COALESCED_READS_TOTAL, "role" => role).increment(1);
}

/// Why a read went upstream instead of being served from the cache.
pub fn forwarded(reason: &'static str) {
    counter!(KUBECACHE_FORWARDED_REQUESTS_TOTAL, "reason" => reason).increment(1);
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
    counter!(KUBECACHE_LIST_BODIES_TOTAL, "outcome" => outcome).increment(1);
    gauge!(KUBECACHE_LIST_BODIES_KEPT_BYTES).set(kept_bytes as f64);
}

/// A list not kept, written as its client reads it: `whole` when it fit
/// in its first chunk, else `streamed`.
pub fn streamed_list(finished: &'static str) {
    counter!(KUBECACHE_STREAMED_LISTS_TOTAL, "finished" => finished).increment(1);
}

/// What the buffers of big bodies waiting to be reused hold
/// (src/encode/recycle.rs).
pub fn body_buffers_idle(bytes: usize) {
    gauge!(KUBECACHE_BODY_BUFFERS_IDLE_BYTES).set(bytes as f64);
}

/// What the cache's answers hold while their clients read them, and the
/// most they may (`--max-bytes-in-flight`); set when scraped.
pub fn bytes_in_flight(used: usize, limit: usize) {
    gauge!(KUBECACHE_BYTES_IN_FLIGHT).set(used as f64);
    gauge!(KUBECACHE_BYTES_IN_FLIGHT_LIMIT).set(limit as f64);
}

/// A response body the allocator refused memory for: its request was
/// answered 429 instead (src/encode/recycle.rs).
pub fn body_without_memory() {
    counter!(KUBECACHE_BODY_ALLOCATION_FAILURES_TOTAL).increment(1);
}

/// A body made in a buffer another body handed back.
pub fn body_buffer_reused() {
    counter!(KUBECACHE_BODY_BUFFERS_REUSED_TOTAL).increment(1);
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
    counter!(KUBECACHE_GZIP_LIST_BODIES_TOTAL, "how" => how).increment(1);
}

/// An event the cache dispatched to its watchers (once per event, as the
/// cacher counts them).
pub fn event_dispatched(resource: &str) {
    counter!(APISERVER_WATCH_CACHE_EVENTS_DISPATCHED_TOTAL, "resource" => resource.to_string())
        .increment(1);
}

/// The resourceVersion a type's cache is at.
pub fn cache_resource_version(resource: &str, rv: u64) {
    gauge!(APISERVER_WATCH_CACHE_RESOURCE_VERSION, "resource" => resource.to_string())
        .set(rv as f64);
}

/// Set at each scrape, per type: seconds since the upstream was last
/// heard from for it (a list, an event or a bookmark), and its reflector's
/// state (1 for the one it is in, 0 for the others).
pub fn type_state(resource: &str, lag: Option<Duration>, state: &'static str) {
    if let Some(lag) = lag {
        gauge!(KUBECACHE_CACHE_LAG_SECONDS, "resource" => resource.to_string())
            .set(lag.as_secs_f64());
    }
    for s in REFLECTOR_STATES {
        gauge!(KUBECACHE_REFLECTOR_STATE, "resource" => resource.to_string(), "state" => s)
            .set(if s == state { 1.0 } else { 0.0 });
    }
}

/// Every state `kubecache_reflector_state` reports (`Condition::name`).
pub const REFLECTOR_STATES: [&str; 6] = [
    "starting",
    "listing",
    "watching",
    "refused",
    "failing",
    "too-large",
];

/// A request kubecache made of the upstream (its own or forwarded), by
/// method and the status it got (`error`: none).
pub fn upstream_request(method: &str, code: Option<u16>) {
    counter!(
        KUBECACHE_UPSTREAM_REQUESTS_TOTAL,
        "verb" => method.to_string(),
        "code" => code.map_or_else(|| "error".to_string(), |c| c.to_string())
    )
    .increment(1);
}

/// Bytes gzipped: `plain` in, `compressed` out (stitched bodies count
/// their pieces' plain bytes).
pub fn gzip_bytes(plain: usize, compressed: usize) {
    counter!(KUBECACHE_GZIP_BYTES_TOTAL, "direction" => "in").increment(plain as u64);
    counter!(KUBECACHE_GZIP_BYTES_TOTAL, "direction" => "out").increment(compressed as u64);
}

/// Bytes of a reflector's watch stream as they came: `gzipped` from an
/// upstream kubecache, else as the apiserver frames them.
pub fn upstream_watch_bytes(t: &TypeTally, gzipped: bool, n: usize) {
    tally(&t.watch_bytes, n as u64);
    upstream_body_bytes("watch", gzipped, n);
}

/// Bytes of a reflector's list page as they came, `gzipped` or not.
pub fn upstream_list_bytes(gzipped: bool, n: usize) {
    upstream_body_bytes("list", gzipped, n);
}

fn upstream_body_bytes(request: &'static str, gzipped: bool, n: usize) {
    let encoding = if gzipped { "gzip" } else { "identity" };
    counter!(KUBECACHE_UPSTREAM_BODY_BYTES_TOTAL, "request" => request, "encoding" => encoding)
        .increment(n as u64);
}

/// An event the cache received; `kind` is the watch event's type
/// (`ADDED`, `MODIFIED`, `DELETED`).
pub fn watch_event(resource: &str, kind: &'static str) {
    counter!(
        APISERVER_WATCH_CACHE_EVENTS_RECEIVED_TOTAL,
        "resource" => resource.to_string(),
        "type" => kind
    )
    .increment(1);
}

/// A completed (re)list; `capacity` is the history's event capacity, as
/// the apiserver's gauge of the same name reports its cache's.
pub fn reflector_list(resource: &str, capacity: usize) {
    counter!(APISERVER_WATCH_CACHE_INITIALIZATIONS_TOTAL, "resource" => resource.to_string())
        .increment(1);
    gauge!(APISERVER_WATCH_CACHE_CAPACITY, "resource" => resource.to_string()).set(capacity as f64);
}

/// A type's snapshot written (`bytes` on disk), or not.
pub fn snapshot_written(resource: &str, bytes: u64, ok: bool) {
    let result = if ok { "ok" } else { "error" };
    counter!(KUBECACHE_SNAPSHOT_WRITES_TOTAL, "resource" => resource.to_string(), "result" => result)
        .increment(1);
    if ok {
        gauge!(KUBECACHE_SNAPSHOT_BYTES, "resource" => resource.to_string()).set(bytes as f64);
    }
}

/// An answer served stale, with a Warning header.
pub fn stale_response(resource: &str) {
    counter!(KUBECACHE_STALE_RESPONSES_TOTAL, "resource" => resource.to_string()).increment(1);
}

/// A relist whose difference went to watchers as `events`.
pub fn relist_told(resource: &str, events: usize) {
    counter!(KUBECACHE_RELISTS_TOTAL, "resource" => resource.to_string(), "how" => "told")
        .increment(1);
    counter!(KUBECACHE_RELIST_EVENTS_TOTAL, "resource" => resource.to_string())
        .increment(events as u64);
}

/// A relist swapped in whole (a first list, or one that cannot be told).
pub fn relist_replaced(resource: &str) {
    counter!(KUBECACHE_RELISTS_TOTAL, "resource" => resource.to_string(), "how" => "replaced")
        .increment(1);
}

/// What a type's cache holds now: its objects, their serialized bytes,
/// and the events its history keeps for watches and reads in the past.
pub fn cache_size(resource: &str, objects: usize, bytes: usize, history: usize) {
    gauge!(KUBECACHE_CACHE_OBJECTS, "resource" => resource.to_string()).set(objects as f64);
    gauge!(KUBECACHE_CACHE_BYTES, "resource" => resource.to_string()).set(bytes as f64);
    gauge!(KUBECACHE_CACHE_HISTORY_EVENTS, "resource" => resource.to_string()).set(history as f64);
}

/// A reflector error; `phase` is where it happened: `list`, `watch`, or
/// `expired` (the upstream's 410).
pub fn reflector_error(t: &TypeTally, resource: &str, phase: &'static str) {
    tally(&t.errors, 1);
    counter!(KUBECACHE_REFLECTOR_ERRORS_TOTAL, "resource" => resource.to_string(), "phase" => phase)
        .increment(1);
}

/// A watcher cut off for falling behind, as the apiserver counts them.
pub fn watcher_terminated(resource: &str) {
    counter!(APISERVER_TERMINATED_WATCHERS_TOTAL, "resource" => resource.to_string()).increment(1);
}

/// A watch served over WebSocket ended, `how` (see its HELP).
pub fn websocket_watch_ended(resource: &str, how: &'static str) {
    counter!(KUBECACHE_WEBSOCKET_WATCHES_TOTAL, "resource" => resource.to_string(), "end" => how)
        .increment(1);
}

/// A WebSocket watch's handshake refused, for `reason`.
pub fn websocket_refused(reason: &'static str) {
    counter!(KUBECACHE_WEBSOCKET_REFUSALS_TOTAL, "reason" => reason).increment(1);
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
    counter!(AUTHENTICATION_ATTEMPTS, "result" => result).increment(1);
}

/// `apiserver_authorization_decisions_total` (the apiserver's since 1.29):
/// each read kubecache authorized, by the upstream's decision.
pub fn authorization(allowed: bool) {
    let decision = if allowed { "allowed" } else { "denied" };
    counter!(
        APISERVER_AUTHORIZATION_DECISIONS_TOTAL,
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
        counter!(AUTHENTICATION_TOKEN_CACHE_REQUEST_TOTAL, "status" => status).increment(1);
        if asked {
            counter!(AUTHENTICATION_TOKEN_CACHE_FETCH_TOTAL, "status" => fetched).increment(1);
        }
    } else {
        counter!(KUBECACHE_AUTHORIZATION_CACHE_REQUESTS_TOTAL, "status" => status).increment(1);
        if asked {
            let result = if ok { "success" } else { "error" };
            counter!(
                APISERVER_AUTHORIZATION_WEBHOOK_EVALUATIONS_TOTAL,
                "name" => "kubecache",
                "result" => result
            )
            .increment(1);
        }
    }
}

/// A token refused unreviewed: every token review permit stayed taken.
pub fn token_review_refused_busy() {
    counter!(KUBECACHE_TOKEN_REVIEWS_REFUSED_TOTAL).increment(1);
}

#[cfg(test)]
mod dashboard_tests {
    /// The families this module describes, read off its own source.
    /// The names `describe` describes: its macros' first arguments, read
    /// from this file, through the consts they name.
    fn described() -> Vec<String> {
        let src = include_str!("metrics.rs");
        let consts: std::collections::HashMap<&str, &str> = src
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter_map(|l| {
                let (ident, rest) = l.split_once(": &str =")?;
                let rest = rest.trim().trim_end_matches(';');
                Some((ident, rest.trim_matches('"')))
            })
            .collect();
        // (Names split over two lines: `pub const X: &str =\n    "name";`.)
        let mut split = src.lines().zip(src.lines().skip(1)).filter_map(|(a, b)| {
            let ident = a.strip_prefix("pub const ")?.strip_suffix(": &str =")?;
            Some((ident, b.trim().trim_end_matches(';').trim_matches('"')))
        });
        let consts: std::collections::HashMap<&str, &str> = consts
            .into_iter()
            .chain(&mut split)
            .filter(|(_, n)| !n.is_empty())
            .collect();
        src.split("describe_")
            .skip(1)
            .filter_map(|s| {
                let s = s
                    .strip_prefix("counter!(")
                    .or_else(|| s.strip_prefix("gauge!("))
                    .or_else(|| s.strip_prefix("histogram!("))?;
                let ident = s.trim_start().split(',').next()?.trim();
                consts.get(ident).map(|n| n.to_string())
            })
            .collect()
    }

    #[test]
    fn every_metric_the_grafana_dashboard_queries_is_one_kubecache_exports() {
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../deploy/grafana/kubecache.json")).unwrap();
        let described = described();
        // Every name, those whose const is split over two lines too.
        let declared = include_str!("metrics.rs")
            .lines()
            .filter(|l| l.starts_with("pub const ") && l.contains(": &str"))
            .count();
        assert_eq!(described.len(), declared, "{described:?}");
        assert!(described
            .iter()
            .any(|d| d == "kubecache_body_allocation_failures_total"));
        let mut queried = 0;
        for panel in dashboard["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                // Metric names: identifiers followed by a selector.
                for (i, _) in expr.match_indices('{') {
                    let name: String = expr[..i]
                        .chars()
                        .rev()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    if name.is_empty() || name == "by" {
                        continue;
                    }
                    let family = ["_bucket", "_count", "_sum"]
                        .iter()
                        .find_map(|s| name.strip_suffix(s))
                        .unwrap_or(&name);
                    queried += 1;
                    assert!(
                        described.iter().any(|d| d == family) || family.starts_with("process_"),
                        "{name} in {:?} is not a metric kubecache exports",
                        panel["title"]
                    );
                }
            }
        }
        assert!(queried >= 16, "{queried}");
    }
}
