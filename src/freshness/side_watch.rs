//! A side watch: a short watch of a type from its cache's resourceVersion,
//! opened only for the bookmark the upstream sends shortly before its
//! deadline — the upstream's word that it sent every event of the type up
//! to the bookmark's version. The apiserver's cacher (`cache_watcher.go`
//! `nextBookmarkTime`) wants a watcher's bookmark 2 s before its deadline
//! (or a minute on), files the watcher in that second's bucket, and its
//! bookmark timer (`cacher.go` `dispatchEvents`: every 1–1.25 s) sends the
//! due ones `lastProcessedResourceVersion` — which a consistent read has
//! made fresh on 1.31+, however quiet the type. So `timeoutSeconds=3` is
//! the shortest watch that gets one (at 1 or 2 the time is past before the
//! watcher is filed): it comes 0–2.25 s after the watch starts.
//!
//! The events the side watch sees before its bookmark are the type's
//! events since the cache's version, the same the cache's own watch
//! brings: the proof applies once the cache has applied them all
//! (`Update::Proven`), and so never puts the cache past an event it has
//! not seen.

use crate::encode::codec::Store;
use crate::reflector::{Update, Writer};
use crate::store::StoreError;
use crate::upstream::{Upstream, UpstreamError};
use bytes::BytesMut;
use http_body_util::BodyExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A side watch's timeout: the shortest that gets a bookmark (above).
pub const TIMEOUT_SECONDS: u64 = 3;
/// How long past its timeout a side watch may stay open.
const GRACE: Duration = Duration::from_secs(2);
/// How long a proof waits for the cache's own watch to bring the events
/// the side watch saw before its bookmark.
const CATCH_UP: Duration = Duration::from_secs(1);
/// The largest line a side watch reads.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// How a side watch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Its bookmark was applied: the cache stands at `rv` or later.
    Proven { rv: u64 },
    /// The bookmark came but the cache moved on to another list meanwhile,
    /// or did not bring the events before it in time: nothing applied.
    NotApplied { rv: u64 },
    /// The watch ended without a bookmark.
    NoBookmark,
    /// The upstream refused or broke it.
    Failed(String),
}

impl Ended {
    /// As `kubecache_freshness_side_watches_total` labels it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Ended::Proven { .. } => "proven",
            Ended::NotApplied { .. } => "not_applied",
            Ended::NoBookmark => "no_bookmark",
            Ended::Failed(_) => "failed",
        }
    }
}

/// What one line of the side watch says.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Event(u64),
    Bookmark(u64),
    Error(String),
}

/// Reads only the type and the object's resourceVersion of a watch line.
fn read_line(line: &[u8]) -> Result<Line, String> {
    #[derive(serde::Deserialize)]
    struct Event<'a> {
        #[serde(rename = "type", borrow)]
        kind: &'a str,
        #[serde(borrow)]
        object: Object<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Object<'a> {
        #[serde(default, borrow)]
        metadata: Option<Meta<'a>>,
        #[serde(default)]
        code: Option<u16>,
        #[serde(default, borrow)]
        message: Option<std::borrow::Cow<'a, str>>,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "resourceVersion", default, borrow)]
        resource_version: Option<&'a str>,
    }
    let ev: Event = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    let rv = || {
        ev.object
            .metadata
            .as_ref()
            .and_then(|m| m.resource_version)
            .and_then(|rv| rv.parse::<u64>().ok())
            .ok_or_else(|| format!("{} event without a numeric resourceVersion", ev.kind))
    };
    match ev.kind {
        "ADDED" | "MODIFIED" | "DELETED" => Ok(Line::Event(rv()?)),
        "BOOKMARK" => Ok(Line::Bookmark(rv()?)),
        "ERROR" => Ok(Line::Error(format!(
            "ERROR event {}: {}",
            ev.object.code.unwrap_or(0),
            ev.object.message.as_deref().unwrap_or("")
        ))),
        other => Err(format!("event type {other:?}")),
    }
}

/// Watches `tc`'s type from its cache's version until the upstream's
/// first bookmark, and applies it as a proof (`proving` says which version
/// is being applied, before it is: a read that sees the cache reach it
/// knows a bookmark took it there): the version it watched from, and how
/// it ended.
pub async fn run<W>(up: &Upstream, tc: &Arc<W>, proving: &AtomicU64) -> (u64, Ended)
where
    W: Writer + AsRef<Store>,
{
    let snap = tc.snapshot();
    let (epoch, from) = (snap.epoch, snap.rv);
    drop(snap);
    (from, watch_and_apply(up, tc, epoch, from, proving).await)
}

async fn watch_and_apply<W>(
    up: &Upstream,
    tc: &Arc<W>,
    epoch: u64,
    from: u64,
    proving: &AtomicU64,
) -> Ended
where
    W: Writer + AsRef<Store>,
{
    let path = format!(
        "{}?watch=1&resourceVersion={from}&allowWatchBookmarks=true&timeoutSeconds={TIMEOUT_SECONDS}",
        tc.resource().path(None)
    );
    let opened = tokio::time::Instant::now();
    let deadline = opened + Duration::from_secs(TIMEOUT_SECONDS) + GRACE;
    let bookmark = tokio::time::timeout_at(deadline, bookmark_after(up, &path, from)).await;
    let (through, rv) = match bookmark {
        Err(_) => return Ended::Failed("still open past its timeout".into()),
        Ok(Err(e)) => return Ended::Failed(e),
        // Ended before its bookmark was due (2 s before its deadline): cut,
        // not a watch the upstream chose not to bookmark.
        Ok(Ok(None)) if opened.elapsed() < Duration::from_secs(TIMEOUT_SECONDS - 2) => {
            return Ended::Failed("ended before its bookmark was due".into())
        }
        Ok(Ok(None)) => return Ended::NoBookmark,
        Ok(Ok(Some(found))) => found,
    };
    let store = (**tc).as_ref();
    let catch_up = tokio::time::Instant::now() + CATCH_UP;
    proving.fetch_max(rv, Ordering::AcqRel);
    loop {
        match tc.apply(Update::Proven { epoch, through, rv }) {
            Ok(()) => return Ended::Proven { rv },
            Err(StoreError::NotYet { .. }) if store.current().epoch == epoch => {
                // The cache's own watch has not brought what the side watch
                // saw: wait for it, a little.
                let left = catch_up.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() || store.wait_for(through, left).await.is_err() {
                    return Ended::NotApplied { rv };
                }
            }
            Err(_) => return Ended::NotApplied { rv },
        }
    }
}

/// The first bookmark of the watch at `path` (from `from`), and the last
/// event's version before it (`from` if none): `None` if the watch ended
/// without one.
async fn bookmark_after(
    up: &Upstream,
    path: &str,
    from: u64,
) -> Result<Option<(u64, u64)>, String> {
    let resp = up
        .watch(path, false)
        .await
        .map_err(|e: UpstreamError| e.to_string())?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("answered {status}"));
    }
    let mut body = resp.into_body();
    let mut buf = BytesMut::new();
    let mut through = from;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let line = buf.split_to(nl + 1);
            let line = &line[..nl];
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match read_line(line)? {
                Line::Event(rv) => through = through.max(rv),
                // Dropping the body ends the watch: it was opened for this.
                Line::Bookmark(rv) => return Ok(Some((through, rv))),
                Line::Error(e) => return Err(e),
            }
        }
        if buf.len() > MAX_LINE {
            return Err("a line larger than 64 MiB".into());
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_watch_reads_only_types_and_versions() {
        let ev = br#"{"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"12"},"spec":{}}}"#;
        assert_eq!(read_line(ev), Ok(Line::Event(12)));
        let bm = br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"2250"}}}"#;
        assert_eq!(read_line(bm), Ok(Line::Bookmark(2250)));
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        assert_eq!(
            read_line(gone),
            Ok(Line::Error(
                "ERROR event 410: too old resource version: 1 (5)".into()
            ))
        );
        assert!(read_line(br#"{"type":"ADDED","object":{"metadata":{}}}"#).is_err());
        assert!(read_line(br#"{"type":"SOMETHING","object":{}}"#).is_err());
    }
}
