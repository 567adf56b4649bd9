//! The one place a request is decided: answered from the cache (and
//! how), refused with the apiserver's error, or forwarded — with why.
//! [`route`] decides before reading what it can (the type, the read's
//! mode, the representation) and runs the read; what only reading can tell
//! (a version the cache no longer or not yet holds, an object v1.20's
//! protobuf cannot hold) comes back from it as a named fallback and is
//! decided here too.

use super::errors::ServeError;
use super::read::{self, Answer, CacheRead, Fallback, Plan};
use super::state::{ConsistentReads, ServeState};
use super::watch::{Selection, Start, WatchSpec};
use crate::cache::bodies::Output;
use crate::cache::{Cache, TypeCache};
use crate::encode::codec::ListStyle;
use crate::encode::negotiate::Negotiation;
use crate::encode::pretty::Layout;
use crate::encode::Repr;
use crate::freshness::Want;
use crate::reflector::Condition;
use crate::request::accept::{Endpoint, Media};
use crate::request::options::{ModeError, WatchFrom};
use crate::request::{ListOptions, ReadMode, Request, Shape};
use crate::resource::ResourceType;
use crate::selector::field::FieldRules;
use crate::selector::{FieldSelector, LabelSelector};
use http::Method;
use std::sync::Arc;

/// Why a request goes upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardReason {
    NotRead,
    NotResource,
    Subresource,
    Representation,
    OutputOptions,
    UnknownType,
    NotCacheable,
    Scope,
    NotSynced,
    /// A read that needs freshness, of a type whose reflector is failing.
    NotCurrent,
    /// A type let go for its size (`cache::limits`).
    TooLarge,
    Consistent,
    /// A consistent read whose type's cache could not be proven fresh.
    Unproven(&'static str),
    /// The read found what the cache cannot answer.
    Fallback(Fallback),
}

impl ForwardReason {
    /// Whether it is a consistent read whose type's cache could not be
    /// proven fresh (which identical ones may share: `coalesce`).
    pub fn is_unproven(self) -> bool {
        matches!(self, ForwardReason::Unproven(_))
    }

    /// Whether it is a read at an exact version the cache does not hold
    /// (which identical ones may share too).
    pub fn is_exact_elsewhere(self) -> bool {
        matches!(self, ForwardReason::Fallback(Fallback::NotInCache))
    }

    /// The `reason` label of `kubecache_forwarded_requests_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            ForwardReason::NotRead => "not_read",
            ForwardReason::NotResource => "not_resource",
            ForwardReason::Subresource => "subresource",
            ForwardReason::Representation => "representation",
            ForwardReason::OutputOptions => "output_options",
            ForwardReason::UnknownType => "unknown_type",
            ForwardReason::NotCacheable => "not_cacheable",
            ForwardReason::Scope => "scope",
            ForwardReason::NotSynced => "not_synced",
            ForwardReason::NotCurrent => "not_current",
            ForwardReason::TooLarge => "too_large",
            ForwardReason::Consistent => "consistent_read",
            ForwardReason::Unproven(why) => why,
            ForwardReason::Fallback(Fallback::NotInCache) => "version_not_in_cache",
            ForwardReason::Fallback(Fallback::Unencodable) => "unencodable",
        }
    }
}

/// Where a request went.
pub enum Route {
    /// Answered from the cache.
    Answered(Answer),
    /// Refused with the apiserver's error, made here.
    Refused(ServeError),
    Forward(ForwardReason),
}

/// An answer from a state the upstream has not confirmed: the
/// `Warning` header (RFC 7234's 299, as the apiserver writes its own
/// warnings) that tells the client so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale(pub String);

impl Stale {
    /// The header's value: `299 - "kubecache: …"`.
    pub fn header(&self) -> http::HeaderValue {
        let text = self.0.replace(['"', '\\'], "'");
        http::HeaderValue::from_str(&format!("299 - \"kubecache: {text}\""))
            .unwrap_or_else(|_| http::HeaderValue::from_static("299 - \"kubecache: stale\""))
    }
}

/// Decides the request and, when the cache can answer it, reads. A read
/// the cache may answer is authorized for the client first, before its
/// type's cache is touched (and so started). While the upstream is
/// unreachable and `--serve-stale-when-offline` is on, reads that need it
/// to be current and discovery are answered from the last known state;
/// every answer from a state the upstream has not confirmed comes back
/// with its [`Stale`] warning.
pub async fn route(state: &ServeState, request: &Request) -> (Route, Option<Stale>) {
    let offline = state.cache.offline_for_request().await;
    if offline {
        if let Some(answer) = discovery_offline(state, request).await {
            return answer;
        }
    }
    let target = match resolve(&state.cache, request) {
        Ok(t) => t,
        Err(route) => return (route, None),
    };
    if let Err(e) = super::auth::authorize_read(state.access.as_deref(), request).await {
        return (Route::Refused(e.into()), None);
    }
    let gvr = target.gvr.clone();
    let consistent = if offline {
        Freshness::Offline
    } else {
        Freshness::from(state.consistent)
    };
    let route = match plan_for(&state.cache, consistent, request, target) {
        Ok(read) => match read::execute(read, &state.limits.in_flight).await {
            Ok(answer) => Route::Answered(answer),
            Err(read::ReadError::Fallback(f)) => Route::Forward(ForwardReason::Fallback(f)),
            Err(read::ReadError::Unproven(u)) => {
                Route::Forward(ForwardReason::Unproven(u.as_str()))
            }
            Err(read::ReadError::Busy(e)) => Route::Refused(e.into()),
            Err(e) => Route::Refused(e.into()),
        },
        Err(route) => {
            if let Route::Forward(ForwardReason::Consistent) = route {
                crate::metrics::consistent_read(&gvr.to_string(), false, "forward_configured");
            }
            route
        }
    };
    let mut stale = None;
    // Per type, for the status page: answered here, or sent upstream.
    if let Some(tc) = state.cache.existing(&gvr) {
        match &route {
            Route::Answered(_) => crate::metrics::type_read(tc.tally(), true),
            Route::Forward(_) => crate::metrics::type_read(tc.tally(), false),
            Route::Refused(_) => {}
        }
        if let Route::Answered(_) = route {
            stale = staleness(&tc, offline);
            if stale.is_some() {
                crate::metrics::stale_response(&tc.rt.gvr.to_string());
            }
        }
    }
    (route, stale)
}

/// Why an answer from `tc` is stale, if it is: the upstream is
/// unreachable, or the type's state came from a snapshot the upstream has
/// not listed since.
fn staleness(tc: &TypeCache, offline: bool) -> Option<Stale> {
    let restored = tc.restored_at();
    // Asked per cached answer: nothing more unless it is stale.
    if !offline && restored.is_none() {
        return None;
    }
    let rv = tc.store.rv();
    let as_of = match (tc.activity.lag(), restored) {
        (Some(lag), _) => std::time::SystemTime::now().checked_sub(lag),
        (None, restored) => restored,
    }
    .map(crate::go::time::format_rfc3339)
    .unwrap_or_else(|| "an unknown time".into());
    if offline {
        return Some(Stale(format!(
            "the upstream is unreachable; served from the cache as last seen at {as_of} (resourceVersion {rv})"
        )));
    }
    restored.map(|_| {
        Stale(format!(
            "served from a snapshot written at {as_of} (resourceVersion {rv}) that the upstream has not confirmed yet"
        ))
    })
}

/// A discovery document (`/api`, `/apis`, a group version, `/version`)
/// from the last discovery, while the upstream is unreachable: so that a
/// client that has none cached (a fresh kubectl) can still find the types
/// to read. Authorized as the path it is; JSON only (the aggregated
/// discovery of `/api` and `/apis` when asked first and the upstream
/// served it).
async fn discovery_offline(
    state: &ServeState,
    request: &Request,
) -> Option<(Route, Option<Stale>)> {
    if request.method != Method::GET || request.resource.is_some() {
        return None;
    }
    let discovery = state.cache.discovery();
    // Current kubectl asks aggregated discovery first: the upstream's, as
    // last read, when it served one (else the plain document, as v1.20's
    // answer to the same request is).
    let aggregated = if request.accept.prefers_aggregated_discovery() {
        discovery.aggregated(&request.path).cloned()
    } else {
        None
    };
    let (doc, content_type) = match aggregated {
        Some(doc) => (doc, crate::upstream::discovery::AGGREGATED),
        None => {
            let doc = discovery.document(&request.path)?.clone();
            request.accept.negotiate(Endpoint::JSON_ONLY_ERRORS)?;
            (doc, "application/json")
        }
    };
    if let Err(e) = super::auth::authorize_path(state.access.as_deref(), request).await {
        return Some((Route::Refused(e.into()), None));
    }
    let as_of = state
        .cache
        .discovery_as_of()
        .map(crate::go::time::format_rfc3339)
        .unwrap_or_else(|| "an unknown time".into());
    crate::metrics::stale_response("discovery");
    let body = crate::cache::bodies::Finished {
        bytes: doc,
        gzipped: false,
    };
    Some((
        Route::Answered(Answer::Body(body, content_type)),
        Some(Stale(format!(
            "the upstream is unreachable; discovery as read from it at {as_of}"
        ))),
    ))
}

/// How fresh a read must be: as `consistentReads` says, or whatever the
/// cache last knew while the upstream is unreachable (`--serve-stale-when-offline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Most-recent reads are served from a cache proven fresh for them,
    /// else forwarded.
    Prove,
    /// Most-recent reads go upstream.
    Forward,
    /// Most-recent reads are served from a current cache.
    ServeStale,
    /// Every read the cache holds is answered from it.
    Offline,
}

impl From<ConsistentReads> for Freshness {
    fn from(c: ConsistentReads) -> Self {
        match c {
            ConsistentReads::Prove => Freshness::Prove,
            ConsistentReads::Forward => Freshness::Forward,
            ConsistentReads::ServeStale => Freshness::ServeStale,
        }
    }
}

/// The representation negotiated on `Accept`, if the cache can serve it:
/// JSON objects, their metadata in the form that fits the request, a
/// Table of a type the cache can print, or protobuf of either of the first
/// two for a built-in kind. Everything else — YAML, protobuf of custom
/// resources or Tables, a metadata form that does not fit, a Table
/// kubecache cannot print or with an invalid `includeObject`, nothing
/// acceptable — goes upstream, which answers it (406 and 400 included)
/// exactly.
fn representation(
    request: &Request,
    cache: &Cache,
    tc: &TypeCache,
    shape: Shape,
) -> Option<(Repr, Layout)> {
    let accept = &request.accept;
    if accept.is_unreadable() {
        return None;
    }
    // Errors made here are negotiated apart; JSON ones (compact, pretty,
    // or the indented fallback when nothing fits) and protobuf ones are
    // made here.
    if let Some(e) = accept.negotiate(Endpoint::ERRORS) {
        if e.media == Media::Yaml {
            return None;
        }
    }
    // Built-in resources are go-restful routes, custom resources are not.
    let builtin = tc.codec().style == ListStyle::Typed;
    let n = Negotiation {
        accept,
        endpoint: Endpoint::resource(builtin),
        restful: builtin,
        shape,
        include_object: request.options.include_object.as_deref(),
        protobuf: tc.codec().protobuf_kind(),
    }
    .repr(|| cache.table_printer(tc))
    .ok()?;
    let layout = match (&n.repr, builtin) {
        (Repr::Protobuf(_), _) => Layout::Compact,
        _ if !(request.pretty || n.pretty) => Layout::Compact,
        (Repr::Json, false) => Layout::Unindented,
        (Repr::Json, true) => Layout::Indented {
            raw_data: tc.rt.gvr.group == "apps" && tc.rt.gvr.resource == "controllerrevisions",
        },
        _ => Layout::Indented { raw_data: false },
    };
    Some((n.repr, layout))
}

/// Whether the cache can answer the request, and how: the decision that
/// needs no reading. `Err` is the route it takes instead. (The serving
/// path authorizes between [`resolve`] and [`plan`].)
pub fn decide(
    cache: &Arc<Cache>,
    consistent: ConsistentReads,
    request: &Request,
) -> Result<CacheRead, Route> {
    let target = resolve(cache, request)?;
    plan_for(cache, consistent.into(), request, target)
}

/// A read of a type the cache could answer, before the type's cache is
/// touched.
pub struct Target<'r> {
    discovery: Arc<crate::upstream::discovery::Discovery>,
    gvr: crate::resource::GroupVersionResource,
    rp: &'r crate::request::ResourcePath,
    shape: Shape,
    /// The namespace the read is in (not a namespace object's own name).
    namespace: Option<String>,
}

/// The type a read names, if the cache may answer it: everything decided
/// from the request and discovery alone.
pub fn resolve<'r>(cache: &Arc<Cache>, request: &'r Request) -> Result<Target<'r>, Route> {
    use ForwardReason as F;
    let forward = |reason| Err(Route::Forward(reason));
    if request.method != Method::GET {
        return forward(F::NotRead);
    }
    let (Some(rp), Some(shape)) = (&request.resource, request.shape()) else {
        return forward(F::NotResource);
    };
    if rp.subresource.is_some() {
        return forward(F::Subresource);
    }
    let opts = &request.options;
    if !opts.unparsed.is_empty() {
        return forward(F::OutputOptions);
    }
    let gvr = crate::resource::GroupVersionResource::new(&rp.group, &rp.version, &rp.resource);
    let discovery = cache.discovery();
    let Some(rt) = discovery.get(&gvr) else {
        cache.discovery_miss();
        return forward(F::UnknownType);
    };
    if !rt.cacheable() {
        return forward(F::NotCacheable);
    }
    // Scope mismatches are the apiserver's 404s to give.
    let namespace = if rp.is_namespace_object() {
        None
    } else {
        rp.namespace.clone()
    };
    if namespace.is_some() && !rt.namespaced {
        return forward(F::Scope);
    }
    if rp.name.is_some() && rt.namespaced && namespace.is_none() {
        return forward(F::Scope);
    }
    Ok(Target {
        gvr,
        discovery,
        rp,
        shape,
        namespace,
    })
}

/// How the cache answers a resolved read, its type's cache started if it
/// was not.
pub fn plan(
    cache: &Arc<Cache>,
    consistent: ConsistentReads,
    request: &Request,
    target: Target<'_>,
) -> Result<CacheRead, Route> {
    plan_for(cache, consistent.into(), request, target)
}

fn plan_for(
    cache: &Arc<Cache>,
    consistent: Freshness,
    request: &Request,
    target: Target<'_>,
) -> Result<CacheRead, Route> {
    use ForwardReason as F;
    let forward = |reason| Err(Route::Forward(reason));
    let Target {
        discovery,
        gvr,
        rp,
        shape,
        namespace,
    } = target;
    let rt = discovery.get(&gvr).expect("resolved from this discovery");
    let opts = &request.options;
    let tc = cache.type_cache(rt);
    tc.touch();
    if !tc.is_synced() {
        if let Condition::TooLarge(_) = tc.condition() {
            return forward(F::TooLarge);
        }
        return forward(F::NotSynced);
    }
    let Some((repr, layout)) = representation(request, cache, &tc, shape) else {
        return forward(F::Representation);
    };
    let out = Output {
        layout,
        gzip: request.gzip,
    };
    let proving = consistent == Freshness::Prove;
    let read = |tc, plan, out, proof| CacheRead {
        tc,
        plan,
        out,
        proof,
        proving,
        arrived: request.arrived,
    };
    if shape == Shape::Watch {
        let (plan, proof) = watch(&tc, rt, rp.name.clone(), namespace, opts, consistent, repr)?;
        // Watch events are never indented nor compressed.
        let out = Output::default();
        return Ok(read(tc, plan, out, proof));
    }
    // Whether the read must be proven fresh first.
    let mut proof = None;
    let mut mode_of = |m: Result<ReadMode, ModeError>| match m {
        // The last known state, with a warning: the upstream cannot answer.
        Ok(ReadMode::MostRecent) if consistent == Freshness::Offline => Ok(ReadMode::MostRecent),
        Ok(ReadMode::MostRecent) if consistent == Freshness::Forward => {
            Err(Route::Forward(F::Consistent))
        }
        // Proofs and serve-stale both need the cache to follow the
        // upstream (serve-stale's staleness is the watch's lag, never an
        // outage's).
        Ok(ReadMode::MostRecent) if !tc.is_current() => Err(Route::Forward(F::NotCurrent)),
        Ok(ReadMode::MostRecent) if proving => {
            proof = Some(Want::Consistent);
            Ok(ReadMode::MostRecent)
        }
        // Served from the newest snapshot; a list still honours its limit,
        // as the consistent (etcd) list it stands in for does.
        Ok(ReadMode::MostRecent) => Ok(ReadMode::MostRecent),
        Ok(m) => Ok(m),
        Err(ModeError::Reject(e)) => Err(Route::Refused(e.into())),
        Err(ModeError::Forward(_)) => Err(Route::Forward(F::OutputOptions)),
    };
    if let Some(name) = rp.name.clone() {
        let mode = mode_of(opts.get_mode())?;
        let key = match &namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.clone(),
        };
        let plan = Plan::Get {
            key,
            name,
            mode,
            repr,
        };
        return Ok(read(tc, plan, out, proof));
    }
    opts.validate_list().map_err(refused)?;
    let (labels, fields) = selectors(rt, &tc, opts)?;
    let mode = mode_of(opts.list_mode())?;
    let plan = Plan::List {
        repr,
        prefix: namespace.map(|ns| format!("{ns}/")).unwrap_or_default(),
        mode,
        limit: opts.limit.max(0) as usize,
        labels,
        fields,
    };
    Ok(read(tc, plan, out, proof))
}

/// A refusal of the request, with the error that refuses it.
fn refused(e: impl Into<ServeError>) -> Route {
    Route::Refused(e.into())
}

fn selectors(
    rt: &ResourceType,
    tc: &TypeCache,
    opts: &ListOptions,
) -> Result<(LabelSelector, FieldSelector), Route> {
    let parsed = &opts.selectors;
    let labels = parsed.labels.clone().map_err(refused)?;
    let fields = (parsed.fields.clone())
        .and_then(|f| f.convert(field_rules(rt, tc)))
        .map_err(refused)?;
    Ok((labels, fields))
}

/// A watch of a synced type: validated, its selection and start decided,
/// and what must be proven before it starts.
fn watch(
    tc: &TypeCache,
    rt: &ResourceType,
    name: Option<String>,
    namespace: Option<String>,
    opts: &ListOptions,
    consistent: Freshness,
    repr: Repr,
) -> Result<(Plan, Option<Want>), Route> {
    use ForwardReason as F;
    opts.validate_watch().map_err(refused)?;
    let (labels, fields) = selectors(rt, tc, opts)?;
    let from = match opts.watch_from() {
        Ok(f) => f,
        Err(ModeError::Reject(e)) => return Err(refused(e)),
        Err(ModeError::Forward(_)) => return Err(Route::Forward(F::OutputOptions)),
    };
    let mut proof = None;
    let (start, at_least) = match from {
        // Only a cache proven current may start at the most recent state
        // (or the last known one, while the upstream is unreachable).
        WatchFrom::Latest(i) if consistent == Freshness::Offline => (i.into(), None),
        WatchFrom::Latest(_) if consistent == Freshness::Forward => {
            return Err(Route::Forward(F::Consistent))
        }
        WatchFrom::Latest(_) if !tc.is_current() => return Err(Route::Forward(F::NotCurrent)),
        WatchFrom::Latest(i) => {
            if consistent == Freshness::Prove {
                proof = Some(Want::Consistent);
            }
            (i.into(), None)
        }
        WatchFrom::Any(i) => (i.into(), None),
        WatchFrom::After(rv) => (Start::After(rv), None),
        WatchFrom::AtLeast(rv) => (Start::InitialEvents, Some(rv)),
    };
    let plan = Plan::Watch {
        spec: WatchSpec {
            start,
            selection: Selection {
                labels,
                fields,
                namespace,
                name,
            },
            repr,
            bookmarks: opts.allow_watch_bookmarks,
            timeout: super::watch::timeout(opts.timeout_seconds),
            schedule: super::watch::Schedule::Timer,
        },
        at_least,
    };
    Ok((plan, proof))
}

/// Custom resources are the types whose lists came back unstructured.
fn field_rules<'a>(rt: &'a ResourceType, tc: &TypeCache) -> FieldRules<'a> {
    match tc.codec().style {
        ListStyle::Unstructured => FieldRules::Custom {
            namespaced: rt.namespaced,
        },
        ListStyle::Typed => FieldRules::BuiltIn {
            group: &rt.gvr.group,
            version: &rt.gvr.version,
            kind: &rt.kind,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_reasons_keep_their_metric_labels() {
        let fallbacks = [
            ForwardReason::Fallback(Fallback::NotInCache),
            ForwardReason::Fallback(Fallback::Unencodable),
        ];
        let labels: Vec<_> = fallbacks.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels, ["version_not_in_cache", "unencodable"]);
    }
}
