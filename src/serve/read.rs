//! Reading what the router decided the cache answers: an object, a list
//! (whole, a page, filtered), or a watch, in the negotiated representation
//! — or finding, only now, that the cache cannot answer it after all
//! ([`Fallback`]), which the router forwards.

use super::limits::{BytesInFlight, LimitError};
use super::watch::{self, WatchSpec};
use crate::body::Body;
use crate::cache::bodies::stream::{self, Streamed};
use crate::cache::bodies::{compress, kept, BodyKey, FinishError, Finished, Output, ReprKey};
use crate::cache::TypeCache;
use crate::encode::codec::{Entry, Snapshot, TypeCodec};
use crate::encode::json;
use crate::encode::list_body::Source;
use crate::encode::list_meta::ListMeta;
use crate::encode::pretty::Layout;
use crate::encode::recycle::NoMemory;
use crate::encode::{ListError, Repr, Unencodable};
use crate::freshness::{Unproven, Want};
use crate::request::{ContinueToken, ReadMode};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::Status;
use crate::store::page::{read_page_counted, PageRequest, Walk};
use http::Response;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How long a NotOlderThan read waits for the cache, as the apiserver's cacher.
pub const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

/// What the cache reads for a request.
pub enum Plan {
    Get {
        key: String,
        name: String,
        mode: ReadMode,
        repr: Repr,
    },
    List {
        repr: Repr,
        /// `ns/` or "".
        prefix: String,
        mode: ReadMode,
        limit: usize,
        labels: LabelSelector,
        fields: FieldSelector,
    },
    Watch {
        spec: WatchSpec,
        /// Wait for the cache to reach this version first (NotOlderThan).
        at_least: Option<u64>,
    },
}

impl Plan {
    /// The `Content-Type` of the read's answer.
    pub fn content_type(&self) -> &'static str {
        match self {
            Plan::Get { repr, .. } | Plan::List { repr, .. } => repr.content_type(),
            Plan::Watch { spec, .. } => spec.repr.watch_content_type(),
        }
    }
}

/// A read the cache answers: of which type, what, and how its body goes out.
pub struct CacheRead {
    pub tc: Arc<TypeCache>,
    pub plan: Plan,
    pub out: Output,
    /// What must be proven of the cache before it is read (`freshness`):
    /// a consistent read's every write committed before it arrived.
    pub proof: Option<Want>,
    /// Whether a read at a version the cache has not reached may be
    /// proven (`consistentReads: prove`) rather than waited for.
    pub proving: bool,
    /// When the request arrived.
    pub arrived: tokio::time::Instant,
}

/// What the cache answered.
pub enum Answer {
    /// A body, and its `Content-Type`.
    Body(Finished, &'static str),
    /// A watch: the response streams on its own.
    Stream(Response<Body>),
    /// A list written as the client reads it, and its `Content-Type`.
    List(Streamed, &'static str),
}

/// What only reading can tell the cache cannot answer: the upstream must.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// An exact read or continue token at a version the cache does not
    /// hold (older than its history, or newer than it has seen).
    NotInCache,
    /// Protobuf of an object with a field the release's message lacks, or
    /// a Table holding an object the release's printer fails on.
    Unencodable,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The object is not there (the apiserver's 404).
    #[error("{resource} {name:?} not found")]
    NotFound {
        group: String,
        resource: String,
        name: String,
    },
    /// The cache did not reach the version asked for in time (the
    /// cacher's 504).
    #[error("the cache did not reach resourceVersion {requested} in time (it is at {current})")]
    TooLargeResourceVersion { requested: u64, current: u64 },
    #[error("finishing the body")]
    Finish(#[from] FinishError),
    /// A list whose items all have messages failed to encode as one.
    #[error("encoding the list")]
    Encode(#[from] Unencodable),
    /// Not an error of the client's: the upstream answers instead.
    #[error("the cache cannot answer this read ({0:?})")]
    Fallback(Fallback),
    /// A consistent read whose type's cache could not be proven fresh:
    /// the upstream answers instead.
    #[error("the cache could not be proven fresh for this read")]
    Unproven(#[source] Unproven),
    /// Answers in flight already hold what building this one would take.
    #[error("no room to build the answer")]
    Busy(#[from] LimitError),
    /// The allocator refused the memory for the answer's body.
    #[error("building the answer")]
    NoMemory(#[source] NoMemory),
}

impl From<ListError> for ReadError {
    fn from(e: ListError) -> Self {
        match e {
            ListError::Unencodable(u) => ReadError::Encode(u),
            ListError::NoMemory(m) => ReadError::NoMemory(m),
        }
    }
}

/// A state at least as new as `rv`, waiting for it as the cacher waits —
/// and, when `proving`, proving it as current apiservers do for a version
/// newer than the type's last change (another type's write): their cache
/// is kept fresh by etcd's progress notifications, so they answer at once
/// where v1.20 (and a cache that only waits) answers 504 after 3 s.
async fn at_least(
    tc: &Arc<TypeCache>,
    rv: u64,
    proving: bool,
    arrived: tokio::time::Instant,
) -> Result<Snapshot, ReadError> {
    if tc.store.rv() < rv && proving {
        if let Ok(p) = tc.prove(Want::AtLeast(rv), arrived).await {
            crate::metrics::consistent_read(&tc.rt.gvr.to_string(), true, p.how.as_str());
            return Ok(tc.store.current());
        }
    }
    let left = FRESHNESS_WAIT.saturating_sub(arrived.elapsed());
    match tc.store.wait_for(rv, left).await {
        Ok(_) => Ok(tc.store.current()),
        Err(current) => Err(ReadError::TooLargeResourceVersion {
            requested: rv,
            current,
        }),
    }
}

/// Reads; a list is built only if room for it is reserved in `in_flight`.
pub async fn execute(read: CacheRead, in_flight: &Arc<BytesInFlight>) -> Result<Answer, ReadError> {
    let CacheRead {
        tc,
        plan,
        out,
        proof,
        proving,
        arrived,
    } = read;
    if let Some(want) = proof {
        let resource = tc.rt.gvr.to_string();
        match tc.prove(want, arrived).await {
            Ok(p) => crate::metrics::consistent_read(&resource, true, p.how.as_str()),
            Err(u) => {
                crate::metrics::consistent_read(&resource, false, u.as_str());
                return Err(ReadError::Unproven(u));
            }
        }
    }
    let content_type = plan.content_type();
    let codec = tc.codec();
    match plan {
        Plan::Watch {
            spec,
            at_least: min,
        } => {
            // A version the cache does not reach in time fails the watch
            // inside its stream, as the cacher's error watcher does.
            if let Some(rv) = min {
                if let Err(e) = at_least(&tc, rv, proving, arrived).await {
                    let s = Status::from(&e);
                    return Ok(Answer::Stream(watch::error_response(&spec.repr, &s)));
                }
            }
            // A protobuf watch of a type whose objects have no message
            // goes upstream whole; one that meets such an object later
            // ends there (see `watch`). A Table watch meeting an object
            // its printer fails on ends there too, as the apiserver's
            // does (its watch encoder falls back to the untransformed
            // object, which the Table's meta.k8s.io encoder cannot write:
            // "unable to encode watch object", and the handler returns);
            // only an object it sends fails it.
            if spec.repr.is_protobuf() {
                let items = tc.store.current().items.iter().cloned().collect();
                if !holds(Repr::Protobuf(None), &codec, items).await {
                    return Err(ReadError::Fallback(Fallback::Unencodable));
                }
            }
            let resource = tc.rt.gvr.to_string();
            Ok(Answer::Stream(watch::serve(tc, codec, spec, resource)))
        }
        Plan::Get {
            key,
            name,
            mode,
            repr,
        } => {
            let snap = match mode {
                ReadMode::NotOlderThan(rv) => at_least(&tc, rv, proving, arrived).await?,
                _ => tc.store.current(),
            };
            let Some(e) = snap.items.get(key.as_str()) else {
                return Err(ReadError::NotFound {
                    group: tc.rt.gvr.group.clone(),
                    resource: tc.rt.gvr.resource.clone(),
                    name,
                });
            };
            let body = repr
                .body(&codec, e)
                .map_err(|Unencodable| ReadError::Fallback(Fallback::Unencodable))?;
            Ok(Answer::Body(Finished::make(body, out).await?, content_type))
        }
        Plan::List {
            repr,
            prefix,
            mode,
            limit,
            labels,
            fields,
        } => {
            let not_in_cache = ReadError::Fallback(Fallback::NotInCache);
            // (snapshot, start key, whether the limit applies)
            let (snap, start, paged) = match mode {
                // The apiserver's cache ignores the limit for RV=0.
                ReadMode::Any => (tc.store.current(), None, false),
                // Consistent reads reach here proven fresh, or when
                // configured to be served stale: the newest snapshot
                // (at least as new as what was proven), paged as etcd
                // pages.
                ReadMode::MostRecent => (tc.store.current(), None, true),
                ReadMode::NotOlderThan(rv) => {
                    (at_least(&tc, rv, proving, arrived).await?, None, true)
                }
                ReadMode::Exact(rv) => (exact(&tc, rv).ok_or(not_in_cache)?, None, true),
                ReadMode::Continue(ContinueToken { rv, start }) => {
                    let snap = u64::try_from(rv).ok().and_then(|rv| exact(&tc, rv));
                    (snap.ok_or(not_in_cache)?, Some(start), true)
                }
            };
            let limit = if paged { limit } else { 0 };
            let req = PageRequest {
                prefix: &prefix,
                start: start.as_deref(),
                limit,
                labels: &labels,
                fields: &fields,
            };
            // Whether protobuf (or a Table whose printer fails on some
            // objects) can hold the page is known only by reading it; the
            // page read for that is the one the body is made of.
            let mut checked_page = None;
            if repr.may_not_hold() {
                let page = read_page_counted(
                    &snap.items,
                    &req,
                    Some((tc.store.remaining_counts(), snap.version())),
                );
                if !holds(repr.clone(), &codec, page.items.clone()).await {
                    return Err(ReadError::Fallback(Fallback::Unencodable));
                }
                checked_page = Some(page);
            }
            // Unfiltered, the items are a key-ordered run of the snapshot:
            // their gzip pieces fit together.
            let stitchable = out.gzip
                && out.layout == Layout::Compact
                && matches!(repr, Repr::Json)
                && labels.is_empty()
                && fields.is_empty();
            // Whole lists and pages of the newest snapshot are what many
            // clients ask for alike: kept until the next event, unless too
            // big to make whole before the first byte.
            let (objects, bytes) = tc.store.size();
            let keep = labels.is_empty()
                && fields.is_empty()
                && snap.rv == tc.store.rv()
                && (kept::keeps(objects, bytes, limit, stitchable)
                    // A namespace of a type too big to keep whole: its own
                    // items' size, read up to the line.
                    || (!prefix.is_empty()
                        && limit == 0
                        && kept::keeps_run(
                            snap.items
                                .range(prefix.as_str()..)
                                .take_while(|e| e.key.starts_with(prefix.as_str()))
                                .map(|e| e.item.len()),
                            stitchable,
                        )));
            if !keep {
                // Written as the client reads it, holding a few chunks
                // (`stream::HELD`), not the body; a whole list's items
                // walked as they are written, so that its first byte waits
                // for nothing but its first item (a page's are read first:
                // its continue key and count say what follows them).
                let (meta, items) = match checked_page {
                    None if limit == 0 => {
                        let meta = ListMeta {
                            resource_version: snap.rv,
                            ..Default::default()
                        };
                        let walk = Walk::new(snap.items.clone(), &prefix, &labels, &fields);
                        (meta, Source::Walk(Box::new(walk)))
                    }
                    page => {
                        let page = page.unwrap_or_else(|| {
                            read_page_counted(
                                &snap.items,
                                &req,
                                Some((tc.store.remaining_counts(), snap.version())),
                            )
                        });
                        let meta = ListMeta::of_page(snap.rv, &page, codec.personality);
                        (meta, Source::Vec(page.items))
                    }
                };
                let mut list = repr.list_body(codec, &meta, items)?;
                match out.layout {
                    Layout::Compact => {}
                    Layout::Unindented => list = list.without_newline(),
                    Layout::Indented { raw_data } => {
                        list = list.indented(raw_data).map_err(ListError::from)?
                    }
                }
                // What it holds at most; less if it is smaller (walked
                // items: nothing known of its size).
                let room = match list.likely_len() {
                    0 => in_flight.reserve(stream::HELD)?,
                    n => in_flight.reserve(stream::HELD.min(likely_size(n, out)))?,
                };
                let streamed = stream::stream(list, out, room).await?;
                return Ok(Answer::List(streamed, content_type));
            }
            // Assembled before anything awaits: a Table's spec is not `Sync`.
            let make = || -> Pin<Box<dyn Future<Output = Result<Finished, ReadError>> + Send>> {
                let page = checked_page.unwrap_or_else(|| {
                    read_page_counted(
                        &snap.items,
                        &req,
                        Some((tc.store.remaining_counts(), snap.version())),
                    )
                });
                let meta = ListMeta::of_page(snap.rv, &page, codec.personality);
                let json = json_len(&page.items);
                if stitchable {
                    let (head, tail) = json::list_ends(&codec, &meta);
                    if json::joined_len(&head, &page.items, &tail) > compress::THRESHOLD {
                        // Stitched, the body is its compressed bytes alone
                        // (a fifteenth of the JSON for pods); room for the
                        // JSON and its copy is taken only if the pieces are
                        // missing. Reserving it always refused nine in ten
                        // informers' lists of 10k pods under load
                        // (benches/load.rs) for room they never used.
                        let room = match in_flight.reserve(json / 4) {
                            Ok(room) => room,
                            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
                        };
                        let budget = in_flight.clone();
                        let gz = tc.pieces.clone().gzip_list(
                            head,
                            page.items,
                            tail,
                            snap.items.clone(),
                            move || budget.reserve(json),
                        );
                        return Box::pin(async move {
                            let _room = room;
                            Ok(gz.await??)
                        });
                    }
                }
                let room = match in_flight.reserve(likely_size(json, out)) {
                    Ok(room) => room,
                    Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
                };
                match repr.list(&codec, &meta, &page.items) {
                    Ok(body) => Box::pin(async move {
                        let _room = room;
                        Ok(Finished::make(body, out).await?)
                    }),
                    // `holds` said it would.
                    Err(e) => Box::pin(std::future::ready(Err(e.into()))),
                }
            };
            let body = if keep {
                let key = BodyKey {
                    prefix: prefix.clone(),
                    start: start.clone(),
                    limit,
                    repr: ReprKey::of(&repr),
                    out,
                };
                let generation = match repr {
                    Repr::Table(_) => crate::go::time::now() / 1_000_000_000,
                    _ if stitchable => tc.pieces.fills() as i64,
                    _ => 0,
                };
                tc.bodies
                    .get_or_make(snap.version(), key, generation, make)
                    .await?
            } else {
                make().await?
            };
            Ok(Answer::Body(body, content_type))
        }
    }
}

/// The JSON of `items`, with their commas.
fn json_len(items: &[Arc<Entry>]) -> usize {
    items.iter().map(|e| e.item.len() + 1).sum()
}

/// What building a list of `json` bytes of objects may hold at its peak:
/// the JSON, twice when indented (the compact body and the indented one),
/// a quarter more when gzipped (the compressed copy beside the plain one).
fn likely_size(json: usize, out: Output) -> usize {
    let laid_out = match out.layout {
        Layout::Compact => json,
        _ => json * 2,
    };
    if out.gzip {
        laid_out + laid_out / 4
    } else {
        laid_out
    }
}

/// Whether `repr` can write each of `items` (`Repr::holds`): a protobuf
/// message for each, or a Table row. The first time, that is transcoding
/// (~24 µs a pod) or printing them all: many go off the async workers.
async fn holds(repr: Repr, codec: &Arc<TypeCodec>, items: Vec<Arc<Entry>>) -> bool {
    if items.len() < 256 {
        return repr.holds(codec, &items);
    }
    let codec = codec.clone();
    tokio::task::spawn_blocking(move || repr.holds(&codec, &items))
        .await
        .unwrap_or(false)
}

/// The state at exactly `rv`, if the cache has it: within its history and
/// not beyond what it has seen (a future rv may exist upstream).
fn exact(tc: &TypeCache, rv: u64) -> Option<Snapshot> {
    if rv > tc.store.rv() {
        return None;
    }
    tc.store.snapshot_at(rv)
}
