//! Gets, lists and watches of the simulated types, and why one fails
//! (`ReadError`). They negotiate `Accept` with kubecache's own negotiation
//! (`encode::negotiate`) and answer in its encodings: JSON,
//! PartialObjectMetadata[List] and Tables printed by kubecache's printers,
//! with the apiserver's 406s and 400s for what does not fit. The
//! simulator's one serializer is JSON: where the apiserver would answer
//! YAML or protobuf, it answers the header's JSON clause if it has one,
//! else go-restful's bare "406: Not Acceptable" (its routes produce JSON
//! alone), and its NotAcceptable lists `application/json` alone. `pretty`
//! is ignored (compact JSON).

use super::json::respond;
use crate::{Sim, SimType};
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Frame;
use http_body_util::BodyExt;
use kubecache::body::{Body, BoxError};
use kubecache::encode::list_meta::ListMeta;
use kubecache::encode::negotiate::{Negotiation, Refusal};
use kubecache::encode::Repr;
use kubecache::go::strconv::quote as go_quote;
use kubecache::request::accept::Accept;
use kubecache::request::accept::{Conversion, Endpoint};
use kubecache::request::options::{ModeError, OptionsError, WatchFrom};
use kubecache::request::Shape;
use kubecache::request::{ContinueToken, ListOptions, ReadMode, ResourcePath};
use kubecache::resource::GroupVersionResource;
use kubecache::selector::field::FieldRules;
use kubecache::selector::{FieldSelector, LabelSelector, SelectorError};
use kubecache::serving::read::{ReadError as CacheReadError, FRESHNESS_WAIT};
use kubecache::serving::watch::{self, Start, WatchSpec};
use kubecache::status::Status;
use kubecache::store::page::{read_page, PageRequest};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A get, list or watch, answered in the representation `accept` asks for.
pub(super) async fn read(
    sim: &Arc<Sim>,
    accept: &Accept,
    t: &Arc<SimType>,
    rp: &ResourcePath,
    ns: Option<&str>,
    key: Option<&str>,
    query: Option<&str>,
) -> Result<Response<Body>, ReadError> {
    let opts = ListOptions::parse(query);
    let read = Read {
        t,
        ns,
        name: rp.name.as_deref(),
        shape: Shape::of(rp, opts.watch),
        opts: &opts,
    };
    let n = read.representation(accept)?;
    match (read.shape, read.name) {
        (Shape::Watch, _) => watch(sim, &read, n).await,
        (_, Some(name)) => get(sim, &read, key.unwrap_or_default(), name, n).await,
        (_, None) => list(sim, &read, n).await,
    }
}

/// The simulator's serializers: JSON alone, so that what the apiserver
/// would answer in YAML or protobuf falls to a JSON clause, or is refused.
const RESOURCES: Endpoint = Endpoint::JSON_ONLY_RESOURCE;

/// Why a get, list or watch is refused, worded as the apiserver words it
/// where a message is all its Status says.
#[derive(Debug, thiserror::Error)]
pub(super) enum ReadError {
    /// No route produces what `Accept` names (go-restful's 406).
    #[error("no route produces what the Accept header names")]
    NoAcceptableRoute,
    /// Nothing the simulator serializes is acceptable
    /// (NegotiateOutputMediaType's 406).
    #[error("only the following media types are accepted: {}", RESOURCES.media_types())]
    UnacceptableMedia,
    /// `as=PartialObjectMetadata` of a list, whose Go type is `list`.
    #[error("you requested PartialObjectMetadata, but the requested object is a list ({list})")]
    MetadataOfList { list: String },
    /// `as=PartialObjectMetadataList` of one object, of Go type `object`.
    #[error("you requested PartialObjectMetadataList, but the requested object is not a list ({object})")]
    MetadataListOfObject { object: String },
    /// A Table's `includeObject` that is none of its values.
    #[error("Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty", go_quote(.0))]
    IncludeObject(String),
    #[error("the simulator has no Table printer for {0}")]
    NoPrinter(GroupVersionResource),
    #[error("the read's options")]
    Options(#[from] OptionsError),
    #[error("the read's selector")]
    Selector(#[from] SelectorError),
    /// A get's or list's resourceVersion that is not a number.
    #[error("invalid resourceVersion")]
    VersionNotANumber,
    /// A watch's, worded as the watch handler words it.
    #[error("invalid resource version: {0}")]
    WatchVersionNotANumber(String),
    /// An exact list at a version compacted away.
    #[error("The resourceVersion for the provided list is too old.")]
    VersionCompacted,
    /// A continue token at a version compacted away; its 410 gives a token
    /// that goes on from `start` at the latest version.
    #[error("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")]
    ContinueCompacted { start: String },
    /// The simulator's stores are kubecache's own, and fail a read as its
    /// cache does: a name not there, a version not reached in time.
    #[error("reading the store")]
    Store(#[from] CacheReadError),
}

/// The 504 of a read at a version the store has not reached.
fn too_large(requested: u64, current: u64) -> ReadError {
    CacheReadError::TooLargeResourceVersion { requested, current }.into()
}

/// A get, list or watch of a simulated type.
struct Read<'a> {
    t: &'a Arc<SimType>,
    ns: Option<&'a str>,
    name: Option<&'a str>,
    shape: Shape,
    opts: &'a ListOptions,
}

/// The representation a read answers in, decided as kubecache decides its
/// own, or why not: refusals the apiserver makes after reading wait for
/// the read (its errors come first).
type Negotiated = Result<Repr, Refusal>;

impl Read<'_> {
    /// Refusals made before the read (no route produces what Accept names,
    /// nothing acceptable) are errors; the others are the read's to give.
    fn representation(&self, accept: &Accept) -> Result<Negotiated, ReadError> {
        let n = Negotiation {
            accept,
            endpoint: RESOURCES,
            restful: true,
            shape: self.shape,
            include_object: self.opts.include_object.as_deref(),
            protobuf: false,
        };
        match n.repr(|| self.t.printer.clone()) {
            Err(Refusal::NoRoute) => Err(ReadError::NoAcceptableRoute),
            // The simulator has no other serializer to have negotiated.
            Err(Refusal::NotAcceptable | Refusal::Serializer(_)) => {
                Err(ReadError::UnacceptableMedia)
            }
            // The apiserver indents for `pretty=1`; the simulator answers
            // compact JSON.
            other => Ok(other.map(|n| n.repr)),
        }
    }

    /// The read's representation, or the apiserver's error for converting
    /// what it read (transformResponseObject).
    fn convert(&self, n: Negotiated) -> Result<Repr, ReadError> {
        n.map_err(|r| refused(self.t, r))
    }
}

/// The error the apiserver gives for a conversion that fails once the
/// object or list is read.
fn refused(t: &SimType, r: Refusal) -> ReadError {
    match r {
        Refusal::Form(Conversion::PartialObjectMetadata(_)) => ReadError::MetadataOfList {
            list: go_type(t, true),
        },
        Refusal::Form(Conversion::PartialObjectMetadataList(_)) => {
            ReadError::MetadataListOfObject {
                object: go_type(t, false),
            }
        }
        Refusal::IncludeObject(v) => ReadError::IncludeObject(v),
        Refusal::NoPrinter => ReadError::NoPrinter(t.rt.gvr.clone()),
        // A Table fits every read; the rest are refused before it.
        Refusal::Form(Conversion::Table(_))
        | Refusal::NoRoute
        | Refusal::NotAcceptable
        | Refusal::Serializer(_) => ReadError::UnacceptableMedia,
    }
}

/// Go's `%T` of the apiserver's internal object (or list) of a simulated
/// type, as its conversion errors name it: `*core.Pod`, `*apps.DeploymentList`.
fn go_type(t: &SimType, list: bool) -> String {
    let group = &t.rt.gvr.group;
    let package = if group.is_empty() {
        "core"
    } else {
        group.split('.').next().unwrap_or(group)
    };
    let suffix = if list { "List" } else { "" };
    format!("*{package}.{}{suffix}", t.rt.kind)
}

async fn get(
    sim: &Sim,
    read: &Read<'_>,
    key: &str,
    name: &str,
    n: Negotiated,
) -> Result<Response<Body>, ReadError> {
    let t = read.t;
    let snap = match read.opts.get_mode() {
        Ok(ReadMode::NotOlderThan(rv)) => match fresh_for(sim, t, rv).await {
            Ok(_) => t.store.current(),
            Err(have) => return Err(too_large(rv, have)),
        },
        Ok(_) => t.store.current(),
        Err(ModeError::Reject(e)) => return Err(e.into()),
        Err(ModeError::Forward(_)) => return Err(ReadError::VersionNotANumber),
    };
    match snap.items.get(key) {
        Some(e) => {
            let body = read.convert(n)?.body(&t.codec, e);
            Ok(respond(StatusCode::OK, body.map_err(CacheReadError::from)?))
        }
        None => Err(CacheReadError::NotFound {
            group: t.rt.gvr.group.clone(),
            resource: t.rt.gvr.resource.clone(),
            name: name.to_string(),
        }
        .into()),
    }
}

struct Selection {
    labels: LabelSelector,
    fields: FieldSelector,
}

fn selection(t: &SimType, opts: &ListOptions) -> Result<Selection, ReadError> {
    let labels = opts.selectors.labels.clone()?;
    let fields = opts.selectors.fields.clone().and_then(|f| {
        f.convert(FieldRules::BuiltIn {
            group: &t.rt.gvr.group,
            version: &t.rt.gvr.version,
            kind: &t.rt.kind,
        })
    })?;
    Ok(Selection { labels, fields })
}

async fn list(sim: &Sim, read: &Read<'_>, n: Negotiated) -> Result<Response<Body>, ReadError> {
    let _counted = sim.lists.enter();
    let (t, opts) = (read.t, read.opts);
    opts.validate_list()?;
    let sel = selection(t, opts)?;
    let mode = match opts.list_mode() {
        Ok(m) => m,
        Err(ModeError::Reject(e)) => return Err(e.into()),
        Err(ModeError::Forward(_)) => return Err(ReadError::VersionNotANumber),
    };
    let limit = opts.limit.max(0) as usize;
    let etcd_now = || sim.at_revision(t);
    let (snap, start, paged) = match mode {
        ReadMode::Any => (t.store.current(), None, false),
        ReadMode::NotOlderThan(rv) if limit == 0 => match fresh_for(sim, t, rv).await {
            Ok(_) => (t.store.current(), None, false),
            Err(have) => return Err(too_large(rv, have)),
        },
        ReadMode::NotOlderThan(rv) => {
            if rv > sim.revision() {
                return Err(too_large(rv, sim.revision()));
            }
            (etcd_now(), None, true)
        }
        // A current apiserver serves it from its watch cache, made fresh
        // first; v1.20 from etcd. Either way: etcd's state now.
        ReadMode::MostRecent => {
            sim.make_fresh(t);
            (etcd_now(), None, true)
        }
        ReadMode::Exact(rv) => {
            if rv > sim.revision() {
                return Err(too_large(rv, sim.revision()));
            }
            match t.store.snapshot_at(rv) {
                Some(s) => (s, None, true),
                None => return Err(ReadError::VersionCompacted),
            }
        }
        ReadMode::Continue(ContinueToken { rv, start }) if rv < 0 => {
            (etcd_now(), Some(start), true)
        }
        ReadMode::Continue(ContinueToken { rv, start }) => match t.store.snapshot_at(rv as u64) {
            Some(s) => (s, Some(start), true),
            None => return Err(ReadError::ContinueCompacted { start }),
        },
    };
    let prefix = key_prefix(t, read.ns);
    let page = read_page(
        &snap.items,
        &PageRequest {
            prefix: &prefix,
            start: start.as_deref(),
            limit: if paged { limit } else { 0 },
            labels: &sel.labels,
            fields: &sel.fields,
        },
    );
    let meta = ListMeta::of_page(snap.rv, &page, t.codec.personality);
    let repr = read.convert(n)?;
    Ok(respond(
        StatusCode::OK,
        repr.list(&t.codec, &meta, &page.items)
            .map_err(CacheReadError::from)?,
    ))
}

/// Waits until the type's watch cache reaches `rv`, as the cacher's
/// `waitUntilFreshLocked` does (3 s, then the 504): a current apiserver's
/// progress requester takes it to etcd's revision at once when that is
/// far enough; v1.20's waits for the type's own events.
async fn fresh_for(sim: &Sim, t: &SimType, rv: u64) -> Result<u64, u64> {
    if t.store.rv() < rv && rv <= sim.revision() {
        sim.make_fresh(t);
    }
    t.store.wait_for(rv, FRESHNESS_WAIT).await
}

/// Where a namespace's objects' keys start (none for a cluster-wide read,
/// or a cluster-scoped type).
fn key_prefix(t: &SimType, ns: Option<&str>) -> String {
    ns.filter(|_| t.rt.namespaced)
        .map(|n| format!("{n}/"))
        .unwrap_or_default()
}

/// `deletecollection`: every object of the type in `ns` the selectors
/// match is deleted, one watch event each, and the answer is the list of
/// them as they were, as the apiserver's registry answers it.
pub(super) fn delete_collection(
    sim: &Sim,
    t: &SimType,
    ns: Option<&str>,
    query: Option<&str>,
) -> Result<Response<Body>, ReadError> {
    let opts = ListOptions::parse(query);
    opts.validate_list()?;
    let sel = selection(t, &opts)?;
    let snap = t.store.current();
    let prefix = key_prefix(t, ns);
    let page = read_page(
        &snap.items,
        &PageRequest {
            prefix: &prefix,
            start: None,
            limit: 0,
            labels: &sel.labels,
            fields: &sel.fields,
        },
    );
    for e in &page.items {
        // One deleted meanwhile by someone else is gone all the same.
        let _ = sim.delete(t, &e.key);
    }
    let meta = ListMeta::of_page(snap.rv, &page, t.codec.personality);
    let body = kubecache::encode::Repr::Json
        .list(&t.codec, &meta, &page.items)
        .map_err(CacheReadError::from)?;
    Ok(respond(StatusCode::OK, body))
}

async fn watch(
    sim: &Arc<Sim>,
    read: &Read<'_>,
    n: Negotiated,
) -> Result<Response<Body>, ReadError> {
    let (t, opts) = (read.t, read.opts);
    // Before it is counted as served: a drop from then on ends it.
    let faults = crate::faults::WatchFaults::new(&sim.faults);
    sim.watches_served
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sel = selection(t, opts)?;
    let start = if sim.personality.watch_list() {
        // Validated now, waited for once the watch is under way.
        StreamingStart::Validated(streaming_from(opts)?)
    } else {
        // v1.20: an unset resourceVersion watches from the cache's state
        // like "0", and sendInitialEvents is not known.
        let rv = opts.resource_version.clone().unwrap_or_default();
        if rv.is_empty() || rv == "0" {
            StreamingStart::Ready(Start::State)
        } else {
            match rv.parse::<u64>() {
                Ok(n) => StreamingStart::Ready(Start::After(n)),
                Err(_) => return Err(ReadError::WatchVersionNotANumber(rv)),
            }
        }
    };
    // The watch is open: now the apiserver checks the conversion. A
    // PartialObjectMetadataList watch is served, but v1.20 cannot convert
    // its events (they are not lists): at the first, it logs the failure
    // and ends the stream without sending it.
    let (repr, unconvertible) = match n {
        Err(Refusal::Form(Conversion::PartialObjectMetadataList(_))) => (Repr::Json, true),
        n => (read.convert(n)?, false),
    };
    let start = match start {
        StreamingStart::Ready(s) => s,
        StreamingStart::Validated(from) => match wait_for_start(sim, t, from).await {
            Ok(s) => s,
            // No error answer: the watch is served, and the library writes
            // the error's Status as its one (ERROR) event.
            Err(e) => return Ok(watch::error_response(&repr, &Status::from(&e))),
        },
    };
    let spec = WatchSpec {
        start,
        repr,
        selection: watch::Selection {
            labels: sel.labels,
            fields: sel.fields,
            namespace: read.ns.map(str::to_string),
            name: read.name.map(str::to_string),
        },
        bookmarks: opts.allow_watch_bookmarks,
        timeout: watch::timeout(opts.timeout_seconds),
        // Bookmarks at the ticks of the type's cacher timer, as the
        // apiserver's (v1.20's: only once the type has seen an event).
        schedule: watch::Schedule::Cacher(t.timer(sim.personality)),
    };
    let resp = watch::serve(t.clone(), t.codec.clone(), spec, t.rt.gvr.to_string());
    let resp = resp.map(|b| faults.body(b));
    Ok(if unconvertible {
        resp.map(|b| EndsAtFirstEvent { inner: Some(b) }.boxed_unsync())
    } else {
        resp
    })
}

/// A watch's start on a current apiserver (`--watch-list`), before and
/// after its options are checked.
enum StreamingStart {
    Ready(Start),
    Validated(WatchFrom),
}

/// Where a watch starts on a current apiserver (the WatchList feature):
/// its watch-option validation.
fn streaming_from(opts: &ListOptions) -> Result<WatchFrom, ReadError> {
    opts.validate_watch()?;
    opts.watch_from().map_err(|e| match e {
        ModeError::Reject(e) => e.into(),
        ModeError::Forward(_) => {
            ReadError::WatchVersionNotANumber(opts.resource_version.clone().unwrap_or_default())
        }
    })
}

/// A `sendInitialEvents` watch from a version the cache has not reached
/// waits for it, then fails inside the stream. One from no version is a
/// consistent read: its cache is made fresh first (`cacher.go` `Watch`:
/// `getWatchCacheResourceVersion`, then `waitUntilWatchCacheFreshAndForceAllEvents`),
/// so its initial-events-end bookmark carries etcd's revision.
async fn wait_for_start(sim: &Sim, t: &SimType, from: WatchFrom) -> Result<Start, ReadError> {
    Ok(match from {
        WatchFrom::Latest(i) => {
            sim.make_fresh(t);
            i.into()
        }
        WatchFrom::Any(i) => i.into(),
        WatchFrom::After(rv) => Start::After(rv),
        WatchFrom::AtLeast(rv) => {
            if let Err(have) = fresh_for(sim, t, rv).await {
                return Err(too_large(rv, have));
            }
            Start::InitialEvents
        }
    })
}

/// The body of a watch whose events v1.20 cannot convert: nothing until
/// the first event, then the end. An ERROR event's Status is sent, as it
/// is not converted.
struct EndsAtFirstEvent {
    inner: Option<Body>,
}

impl http_body::Body for EndsAtFirstEvent {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f)))
                if f.data_ref()
                    .is_some_and(|d| !d.starts_with(b"{\"type\":\"ERROR\"")) =>
            {
                // Dropping the stream ends its watcher.
                self.inner = None;
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimOptions;

    /// Every type, no generated objects.
    fn bare_sim() -> std::sync::Arc<Sim> {
        Sim::new(&SimOptions {
            pods: 0,
            configmaps: 0,
            nodes: 0,
            namespaces: 1,
            ..Default::default()
        })
    }

    #[test]
    fn every_simulated_type_has_kubecaches_printer() {
        let sim = bare_sim();
        for t in sim.types.values() {
            assert!(t.printer.is_some(), "{}", t.rt.gvr);
        }
        let with_widgets = Sim::new(&SimOptions {
            custom_resource: true,
            ..Default::default()
        });
        let widgets = with_widgets
            .type_of("ref.example.com", "v1", "widgets")
            .unwrap();
        assert!(
            widgets.printer.is_none(),
            "a custom resource is printed by its CRD"
        );
    }

    #[test]
    fn internal_types_are_named_as_go_prints_them() {
        let sim = bare_sim();
        let t = |g, r| sim.type_of(g, "v1", r).unwrap().clone();
        assert_eq!(go_type(&t("", "pods"), false), "*core.Pod");
        assert_eq!(go_type(&t("", "events"), true), "*core.EventList");
        assert_eq!(
            go_type(&t("apps", "deployments"), true),
            "*apps.DeploymentList"
        );
    }

    fn frames(lines: &[&'static str]) -> Body {
        let (tx, body) = kubecache::body::channel(lines.len().max(1));
        for l in lines {
            tx.try_send(Bytes::from_static(l.as_bytes())).unwrap();
        }
        body
    }

    async fn collect(b: EndsAtFirstEvent) -> String {
        let bytes = b.collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn an_unconvertible_watch_ends_at_its_first_event_but_sends_errors() {
        let ev = "{\"type\":\"ADDED\",\"object\":{}}\n";
        let err = "{\"type\":\"ERROR\",\"object\":{\"code\":410}}\n";
        let b = EndsAtFirstEvent {
            inner: Some(frames(&[ev, ev])),
        };
        assert_eq!(collect(b).await, "");
        let b = EndsAtFirstEvent {
            inner: Some(frames(&[err])),
        };
        assert_eq!(collect(b).await, err);
    }
}
