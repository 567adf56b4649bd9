//! Executing a read the router decided to serve from the cache.

use super::route::{ForwardReason, Read};
use super::watch::{self, Interference};
use crate::cache::bodies::{compress, BodyKey, Finished, Output, Pieces, ReprKey};
use crate::cache::TypeCache;
use crate::encode::codec::{Entry, Items, Snapshot, TypeCodec};
use crate::encode::json;
use crate::encode::list_meta::ListMeta;
use crate::encode::pretty::Layout;
use crate::encode::{Repr, Unencodable};
use crate::request::{ContinueToken, ReadMode};
use crate::status::Status;
use crate::store::page::{read_page, PageRequest};
use crate::upstream::Body;
use bytes::Bytes;
use http::Response;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How long a NotOlderThan read waits for the cache, as the apiserver's cacher.
pub const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

pub enum Outcome {
    Body(Finished),
    /// A watch: the response streams on its own.
    Stream(Response<Body>),
    Error(Status),
    Forward(ForwardReason),
}

async fn at_least(tc: &TypeCache, rv: u64) -> Result<Snapshot, Status> {
    match tc.store.wait_for(rv, FRESHNESS_WAIT).await {
        Ok(_) => Ok(tc.store.current()),
        Err(have) => Err(Status::too_large_resource_version(rv, have)),
    }
}

/// The body finished for `out`, or the error finishing it.
async fn finish(body: Bytes, out: Output) -> Outcome {
    match Finished::make(body, out).await {
        Ok(f) => Outcome::Body(f),
        Err(e) => Outcome::Error(finish_failed(e)),
    }
}

fn finish_failed(e: crate::cache::bodies::FinishError) -> Status {
    Status::internal(format!("finishing the response: {}", e.0))
}

pub async fn execute(tc: &Arc<TypeCache>, read: Read, out: Output) -> Outcome {
    let codec = tc.codec();
    match read {
        Read::Watch {
            spec,
            at_least: min,
        } => {
            // A version the cache does not reach in time fails the watch
            // inside its stream, as the cacher's error watcher does.
            if let Some(rv) = min {
                if let Err(s) = at_least(tc, rv).await {
                    return Outcome::Stream(watch::error_response(&spec.repr, &s));
                }
            }
            // A protobuf watch of a type whose objects have no message
            // goes upstream whole; one that meets such an object later
            // ends there (see `watch`).
            if spec.repr.is_protobuf() {
                let items = tc.store.current().items.values().cloned().collect();
                if !protobuf_holds(&codec, items).await {
                    return Outcome::Forward(ForwardReason::Unencodable);
                }
            }
            Outcome::Stream(watch::serve(
                tc.clone(),
                codec,
                spec,
                Interference::default(),
                tc.rt.gvr.to_string(),
            ))
        }
        Read::Get {
            key,
            name,
            mode,
            repr,
        } => {
            let snap = match mode {
                ReadMode::NotOlderThan(rv) => match at_least(tc, rv).await {
                    Ok(s) => s,
                    Err(s) => return Outcome::Error(s),
                },
                _ => tc.store.current(),
            };
            match snap.items.get(key.as_str()) {
                Some(e) => match repr.body(&codec, e) {
                    Ok(body) => finish(body, out).await,
                    Err(Unencodable) => Outcome::Forward(ForwardReason::Unencodable),
                },
                None => Outcome::Error(Status::not_found(
                    &tc.rt.gvr.group,
                    &tc.rt.gvr.resource,
                    &name,
                )),
            }
        }
        Read::List {
            repr,
            prefix,
            mode,
            limit,
            labels,
            fields,
        } => {
            // (snapshot, start key, whether the limit applies)
            let (snap, start, paged) = match mode {
                // The apiserver's cache ignores the limit for RV=0.
                ReadMode::Any => (tc.store.current(), None, false),
                // Consistent reads reach here only when configured to be
                // served stale: the newest snapshot, paged as etcd pages.
                ReadMode::MostRecent => (tc.store.current(), None, true),
                ReadMode::NotOlderThan(rv) => match at_least(tc, rv).await {
                    Ok(s) => (s, None, true),
                    Err(s) => return Outcome::Error(s),
                },
                ReadMode::Exact(rv) => match exact(tc, rv) {
                    Some(s) => (s, None, true),
                    None => return Outcome::Forward(ForwardReason::NotInCache),
                },
                ReadMode::Continue(ContinueToken { rv, start }) => {
                    let Some(s) = u64::try_from(rv).ok().and_then(|rv| exact(tc, rv)) else {
                        return Outcome::Forward(ForwardReason::NotInCache);
                    };
                    (s, Some(start), true)
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
            if repr.is_protobuf()
                && !protobuf_holds(&codec, read_page(&snap.items, &req).items).await
            {
                return Outcome::Forward(ForwardReason::Unencodable);
            }
            // Unfiltered, the items are a key-ordered run of the snapshot:
            // their gzip pieces fit together.
            let stitchable = out.gzip
                && out.layout == Layout::Compact
                && matches!(repr, Repr::Json)
                && labels.is_empty()
                && fields.is_empty();
            // Assembled before anything awaits: a Table's spec is not `Sync`.
            let make = || -> Pin<Box<dyn Future<Output = Result<Finished, Status>> + Send>> {
                let page = read_page(&snap.items, &req);
                let meta = ListMeta::of_page(snap.rv, &page);
                if stitchable {
                    let (head, tail) = json::list_ends(&codec, &meta);
                    if json::joined_len(&head, &page.items, &tail) > compress::THRESHOLD {
                        return Box::pin(gzipped_list(
                            tc.pieces.clone(),
                            head,
                            page.items,
                            tail,
                            snap.items.clone(),
                        ));
                    }
                }
                match repr.list(&codec, &meta, &page.items) {
                    Ok(body) => {
                        Box::pin(
                            async move { Finished::make(body, out).await.map_err(finish_failed) },
                        )
                    }
                    // `holds` said it would: unreachable.
                    Err(e) => Box::pin(std::future::ready(Err(Status::internal(e.to_string())))),
                }
            };
            // Whole lists and pages of the newest snapshot are what many
            // clients ask for alike: kept until the next event.
            let keep = labels.is_empty() && fields.is_empty() && snap.rv == tc.store.rv();
            let result = if keep {
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
                tc.bodies.get_or_make(snap.rv, key, generation, make).await
            } else {
                make().await
            };
            match result {
                Ok(f) => Outcome::Body(f),
                Err(s) => Outcome::Error(s),
            }
        }
    }
}

/// Whether each of `items` has a protobuf message (see `Repr::holds`).
/// The first time, that is transcoding them all (~24 µs a pod): many go
/// off the async workers.
async fn protobuf_holds(codec: &Arc<TypeCodec>, items: Vec<Arc<Entry>>) -> bool {
    let check = |c: &TypeCodec, items: &[Arc<Entry>]| Repr::Protobuf(None).holds(c, items);
    if items.len() < 256 {
        return check(codec, &items);
    }
    let codec = codec.clone();
    tokio::task::spawn_blocking(move || check(&codec, &items))
        .await
        .unwrap_or(false)
}

/// A compact JSON list, gzipped: stitched from its items' pieces when they
/// are at hand, compressed whole otherwise.
async fn gzipped_list(
    pieces: Arc<Pieces>,
    head: Vec<u8>,
    items: Vec<Arc<Entry>>,
    tail: Vec<u8>,
    all: Items,
) -> Result<Finished, Status> {
    let work = move || {
        let bytes = match pieces.stitch(&head, &items, &tail, &all) {
            Some(z) => z,
            None => compress::gzip(&json::join(&head, &items, &tail)),
        };
        Finished {
            bytes,
            gzipped: true,
        }
    };
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Status::internal(format!("finishing the response: {e}")))
}

/// The state at exactly `rv`, if the cache has it: within its history and
/// not beyond what it has seen (a future rv may exist upstream).
fn exact(tc: &TypeCache, rv: u64) -> Option<Snapshot> {
    if rv > tc.store.rv() {
        return None;
    }
    tc.store.snapshot_at(rv)
}
