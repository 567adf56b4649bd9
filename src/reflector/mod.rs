//! One reflector per resource type: list (paginated) → watch from the list's
//! resourceVersion with bookmarks → on 410 or any inconsistency relist into a
//! buffer and swap it in atomically → back off with jitter on errors, like
//! client-go's reflector. It writes what it reads through a narrow
//! [`Writer`] (`writer`), never touching what reads the cache.

mod writer;

pub use writer::{Overflow, Update, Writer};

pub mod consistency;

use crate::encode::codec::{DecodeError, Entry, ListStyle, TypeCodec};
use crate::metrics;
use crate::store::EventType;
use crate::upstream::health::UpstreamHealth;
use crate::upstream::watch_gzip::Gunzip;
use crate::upstream::{Upstream, UpstreamError};
use bytes::{Buf, BytesMut};
use http_body_util::BodyExt;
use rand::RngExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Where the reflector is; each step moves it to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Empty,
    /// Listing page by page; `consistent` after a 410, so the cache never
    /// goes back in time.
    Listing {
        consistent: bool,
    },
    Watching {
        rv: u64,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ReflectorError {
    #[error("list: {0}")]
    List(#[source] UpstreamError),
    #[error("list: {0}")]
    ListDecode(#[source] DecodeError),
    #[error("list: the upstream's body is neither a typed nor an unstructured list")]
    ListShape,
    #[error("list: continue token expired")]
    ListExpired,
    #[error("list: no answer within {0:?}")]
    ListStalled(Duration),
    #[error("watch: {0}")]
    Watch(#[source] UpstreamError),
    #[error("watch: the stream broke: {source}")]
    WatchBroke {
        rv: u64,
        #[source]
        source: hyper::Error,
    },
    #[error("watch: still open {after:?} after it was asked, past its timeout")]
    WatchStalled { after: Duration, rv: u64 },
    #[error("watch: resource version {0} is too old")]
    WatchExpired(u64),
    #[error("watch: undecodable event: {0}")]
    WatchDecode(String),
    #[error("watch: {0}")]
    Apply(#[from] crate::store::StoreError),
    /// The consistency check found the cache different from the upstream.
    #[error("the cache differs from the upstream")]
    Inconsistent,
    #[error("too large to cache: {0}")]
    TooLarge(#[source] Overflow),
}

impl ReflectorError {
    /// How long the upstream asked to be left alone, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ReflectorError::List(e) | ReflectorError::Watch(e) => e.retry_after(),
            _ => None,
        }
    }

    /// Where it happened, as the errors metric labels it.
    pub fn phase(&self) -> &'static str {
        match self {
            ReflectorError::List(_)
            | ReflectorError::ListDecode(_)
            | ReflectorError::ListShape
            | ReflectorError::ListExpired
            | ReflectorError::ListStalled(_) => "list",
            ReflectorError::Watch(_)
            | ReflectorError::WatchStalled { .. }
            | ReflectorError::WatchBroke { .. }
            | ReflectorError::WatchDecode(_)
            | ReflectorError::Apply(_) => "watch",
            ReflectorError::Inconsistent => "inconsistent",
            ReflectorError::TooLarge(_) => "too_large",
            ReflectorError::WatchExpired(_) => "expired",
        }
    }
}

/// How long the reflector waits on a silent upstream.
#[derive(Debug, Clone, Copy)]
pub struct ReflectorConfig {
    /// A list page whose upstream has been silent this long (before its
    /// head, or between pieces of its body) is abandoned.
    pub list_page_timeout: Duration,
    /// A watch asks the upstream to end it after a random number of
    /// seconds in this range (client-go picks 5–10 minutes; shorter here,
    /// so that a stall is found sooner: a re-watch from the last version is
    /// cheap). Every apiserver ends a watch at its timeout — v1.20's with a
    /// bookmark 2 s before — so one still open well past it has stalled.
    pub watch_timeout_seconds: (u64, u64),
    /// How long past its timeout a watch may stay open.
    pub watch_grace: Duration,
    /// The timeout of the watch that follows a stall: short, so that a
    /// stall repeated is found in seconds and leads to a relist.
    pub recheck_timeout_seconds: u64,
    /// How often the cache is compared with the upstream (`consistency`);
    /// `None`: never.
    pub consistency_check: Option<Duration>,
    /// How long a type let go for its size waits before listing again.
    pub too_large_retry: Duration,
    /// Whether lists (the consistency check's too) ask for gzip (as
    /// client-go's do: the apiserver and kubecache compress those over
    /// 128 KiB), and watches ask an upstream
    /// kubecache for gzipped streams (`request::WATCH_ENCODING`; an
    /// apiserver ignores that ask).
    pub gzip: bool,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            list_page_timeout: Duration::from_secs(60),
            watch_timeout_seconds: (60, 120),
            watch_grace: Duration::from_secs(15),
            recheck_timeout_seconds: 10,
            // The apiserver checks its watch cache every 5 minutes too.
            consistency_check: Some(Duration::from_secs(300)),
            too_large_retry: Duration::from_secs(600),
            gzip: true,
        }
    }
}

/// What a reflector is doing, for readiness and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// Not listed yet.
    Starting,
    /// Listing (the first sync, or a relist).
    Listing,
    /// Watching: the cache follows the upstream.
    Watching,
    /// The upstream refuses kubecache this type (403, 404): its reads are
    /// forwarded; the reflector asks again at its backoff's pace.
    Refused(u16),
    /// The last attempt failed; the reflector is backing off.
    Failing(String),
    /// Let go for its size: its reads are forwarded; the reflector lists
    /// again later.
    TooLarge(Overflow),
}

impl Condition {
    /// Its name in logs and on status pages.
    pub fn name(&self) -> &'static str {
        match self {
            Condition::Starting => "starting",
            Condition::Listing => "listing",
            Condition::Watching => "watching",
            Condition::Refused(_) => "refused",
            Condition::Failing(_) => "failing",
            Condition::TooLarge(_) => "too-large",
        }
    }

    /// Whether the cache follows the upstream right now.
    pub fn is_current(&self) -> bool {
        matches!(self, Condition::Watching)
    }
}

/// client-go's reflector backoff: 800 ms doubling to 30 s, full jitter.
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    const START: Duration = Duration::from_millis(800);
    const CAP: Duration = Duration::from_secs(30);

    pub fn new() -> Self {
        Backoff { next: Self::START }
    }
    pub fn reset(&mut self) {
        self.next = Self::START;
    }
    /// The next wait: the current step plus up to 100% jitter.
    pub fn step(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(Self::CAP);
        let jitter = rand::rng().random_range(0.0..1.0);
        base + base.mul_f64(jitter)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct WatchEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize)]
struct StatusIn {
    #[serde(default)]
    code: u16,
}

#[derive(Deserialize)]
struct BookmarkIn {
    metadata: BookmarkMeta,
}
#[derive(Deserialize)]
struct BookmarkMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

/// The reflector between two steps: where it goes next, and whether its
/// last watch stalled (a re-watch that stalls again means the upstream's
/// watch is broken, and only a relist catches up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub phase: Phase,
    pub stalled: bool,
}

/// What the reflector does before its next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Nothing: go on.
    None,
    /// A list went through: the backoff starts over.
    ResetBackoff,
    /// Let the type go for its size and wait before listing again.
    LetGo,
    /// The re-watch stalled too: say the type is failing, then relist.
    Failing,
    /// Say what failed and wait out the backoff.
    BackOff,
}

/// How a step ends, moves the reflector on: a pure function of where it
/// was and what happened, so that every transition is tested without a
/// network (kube-runtime's watcher is built the same way).
pub fn transition(state: &State, step: Result<&Phase, &ReflectorError>) -> (State, Effect) {
    let error = match step {
        Ok(next) => {
            let listed = matches!(state.phase, Phase::Listing { .. });
            let next = State {
                phase: next.clone(),
                // A watch that ended at its timeout: the upstream is well.
                stalled: state.stalled && listed,
            };
            let effect = if listed {
                Effect::ResetBackoff
            } else {
                Effect::None
            };
            return (next, effect);
        }
        Err(e) => e,
    };
    let stalled = matches!(error, ReflectorError::WatchStalled { .. });
    let relist = |stalled| State {
        phase: Phase::Listing { consistent: true },
        stalled,
    };
    match error {
        ReflectorError::TooLarge(_) => (
            State {
                phase: Phase::Listing { consistent: false },
                stalled,
            },
            Effect::LetGo,
        ),
        ReflectorError::WatchExpired(_)
        | ReflectorError::ListExpired
        | ReflectorError::Inconsistent => (relist(stalled), Effect::None),
        ReflectorError::WatchStalled { .. } if state.stalled => (relist(false), Effect::Failing),
        // Asked again at once, with a short timeout: the answer tells a
        // watch that stalled once from one that stalls.
        ReflectorError::WatchStalled { rv, .. } => (
            State {
                phase: Phase::Watching { rv: *rv },
                stalled: true,
            },
            Effect::None,
        ),
        e => {
            // A failed watch connection resumes where it was.
            let phase = match e {
                ReflectorError::Watch(_) => state.phase.clone(),
                ReflectorError::WatchBroke { rv, .. } => Phase::Watching { rv: *rv },
                _ => Phase::Listing {
                    consistent: matches!(state.phase, Phase::Watching { .. }),
                },
            };
            (State { phase, stalled }, Effect::BackOff)
        }
    }
}

pub async fn run<W: Writer>(
    up: Arc<Upstream>,
    writer: Arc<W>,
    cfg: ReflectorConfig,
    health: Arc<UpstreamHealth>,
) {
    let mut state = State {
        phase: Phase::Empty,
        stalled: false,
    };
    let mut backoff = Backoff::new();
    let resource = writer.resource().to_string();
    writer.report(Condition::Starting);
    let relist = Arc::new(Notify::new());
    // Only a cache that follows the upstream is compared with it: one
    // listing, backing off or let go would be found different for nothing.
    let watching = tokio::sync::watch::Sender::new(false);
    // Ends with the reflector (dropped with this future).
    let _checker = cfg.consistency_check.map(|every| {
        AbortOnDrop(tokio::spawn(consistency::run(
            up.clone(),
            writer.clone(),
            every,
            watching.subscribe(),
            relist.clone(),
            cfg.gzip,
        )))
    });
    loop {
        let step = match &state.phase {
            Phase::Empty => Ok(Phase::Listing {
                consistent: writer.restored(),
            }),
            Phase::Listing { consistent } => {
                writer.report(Condition::Listing);
                watching.send_replace(false);
                list(&up, &*writer, &cfg, *consistent).await
            }
            Phase::Watching { rv } => {
                writer.report(Condition::Watching);
                watching.send_replace(true);
                let (lo, hi) = cfg.watch_timeout_seconds;
                let timeout = if state.stalled {
                    cfg.recheck_timeout_seconds
                } else {
                    rand::rng().random_range(lo..=hi.max(lo))
                };
                let w = watch(&up, &*writer, &cfg, *rv, timeout, &mut backoff);
                tokio::select! {
                    end = w => end,
                    _ = relist.notified() => Err(ReflectorError::Inconsistent),
                }
            }
        };
        let (next, effect) = transition(&state, step.as_ref());
        if let Err(e) = &step {
            watching.send_replace(false);
            metrics::reflector_error(writer.tally(), &resource, e.phase());
        }
        match (effect, &step) {
            (Effect::None, Err(e)) => match e {
                ReflectorError::WatchStalled { .. } => {
                    tracing::warn!(%resource, error = %e, "watch stalled: watching again")
                }
                _ => tracing::info!(%resource, error = %e, "reflector relisting"),
            },
            (Effect::None, Ok(_)) => {}
            (Effect::ResetBackoff, _) => backoff.reset(),
            (Effect::LetGo, Err(e)) => {
                tracing::warn!(%resource, error = %e, retry = ?cfg.too_large_retry,
                    "letting the type's cache go: its reads are forwarded");
                metrics::cache_released(&resource, "too_large");
                let _ = writer.apply(Update::Released);
                if let ReflectorError::TooLarge(o) = e {
                    writer.report(Condition::TooLarge(o.clone()));
                }
                let jitter = rand::rng().random_range(0.9..1.1);
                tokio::time::sleep(cfg.too_large_retry.mul_f64(jitter)).await;
            }
            (Effect::Failing, Err(e)) => {
                tracing::warn!(%resource, error = %e, "the re-watch stalled too: relisting");
                writer.report(Condition::Failing(e.to_string()));
            }
            (Effect::BackOff, Err(e)) => {
                writer.report(condition_of(e));
                wait_to_retry(&health, &mut backoff, &resource, e).await;
            }
            // Only errors let go, fail or back off.
            (Effect::LetGo | Effect::Failing | Effect::BackOff, Ok(_)) => {}
        }
        state = next;
    }
}

impl<W: Writer> consistency::Checked for W {
    fn resource(&self) -> &crate::resource::GroupVersionResource {
        Writer::resource(self)
    }
    fn snapshot(&self) -> crate::encode::codec::Snapshot {
        Writer::snapshot(self)
    }
}

/// A task that ends when its handle goes.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a failure says of the type's cache.
fn condition_of(e: &ReflectorError) -> Condition {
    match e {
        ReflectorError::List(UpstreamError::Status { status, .. })
            if *status == 403 || *status == 404 =>
        {
            Condition::Refused(status.as_u16())
        }
        e => Condition::Failing(e.to_string()),
    }
}

/// Waits out the backoff after a failure — or less, if the failure was the
/// upstream's being away and it comes back meanwhile (then a little jitter,
/// so that every type does not ask in the same millisecond).
async fn wait_to_retry(
    health: &UpstreamHealth,
    backoff: &mut Backoff,
    resource: &str,
    e: &ReflectorError,
) {
    let seq = health.current().seq;
    health.poke();
    let step = backoff.step();
    // An upstream that said when to come back (429, 503 while starting) is
    // taken at its word: not asked sooner, whatever the probe finds.
    if let Some(asked) = e.retry_after() {
        let wait = step.max(asked);
        tracing::warn!(%resource, error = %e, ?wait, "reflector: the upstream asked to wait");
        tokio::time::sleep(wait).await;
        return;
    }
    let wait = step;
    tracing::warn!(%resource, error = %e, ?wait, "reflector");
    tokio::select! {
        _ = tokio::time::sleep(wait) => {}
        _ = health.recovered_after(seq) => {
            let jitter = Duration::from_millis(rand::rng().random_range(0..500));
            tokio::time::sleep(jitter).await;
            tracing::info!(%resource, "the upstream is back: retrying before the backoff ends");
        }
    }
}

/// A list still coming after this long logs how far it is, and again as
/// often.
const LIST_PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// How far a list is, logged every [`LIST_PROGRESS_EVERY`]: a big list
/// over a thin link takes minutes, and an RV=0 list is one response
/// (the watch cache ignores `limit`), so its bytes are what can be told.
struct Progress<'a> {
    resource: &'a crate::resource::GroupVersionResource,
    started: tokio::time::Instant,
    told: tokio::time::Instant,
}

impl<'a> Progress<'a> {
    fn new(resource: &'a crate::resource::GroupVersionResource) -> Self {
        let now = tokio::time::Instant::now();
        Progress {
            resource,
            started: now,
            told: now,
        }
    }

    /// `objects` decoded from earlier pages, `remaining` after them (if the
    /// upstream counts), `bytes` received in all.
    fn tick(&mut self, objects: usize, remaining: Option<i64>, bytes: usize) {
        if self.told.elapsed() < LIST_PROGRESS_EVERY {
            return;
        }
        self.told = tokio::time::Instant::now();
        tracing::info!(
            resource = %self.resource,
            objects,
            remaining,
            bytes,
            elapsed = ?self.started.elapsed(),
            "listing"
        );
    }
}

async fn list(
    up: &Upstream,
    writer: &impl Writer,
    cfg: &ReflectorConfig,
    consistent: bool,
) -> Result<Phase, ReflectorError> {
    let base = writer.resource().path(None);
    let mut entries = Vec::new();
    let mut token: Option<String> = None;
    let mut codec = (*writer.codec()).clone();
    let mut rv;
    let mut bytes = 0;
    let mut progress = Progress::new(writer.resource());
    let mut remaining = None;
    let mut pages = 0u64;
    loop {
        let query = match &token {
            Some(t) => format!("{base}?limit=500&continue={}", urlencode(t)),
            None if consistent => format!("{base}?limit=500"),
            None => format!("{base}?limit=500&resourceVersion=0"),
        };
        // A stalled upstream must not hold the reflector forever; one
        // still sending a long list is not stalled.
        let (objects, so_far) = (entries.len(), bytes);
        // An RV=0 list is one answer, the whole type: one that cannot be
        // kept is given up as it arrives, not held whole and then refused.
        // Its objects are a little smaller than the answer (a typed list's
        // items lose their kind and apiVersion): 15/16 of it is counted.
        let mut overflow = None;
        let received = |n: usize| {
            progress.tick(objects, remaining, so_far + n);
            match writer.room(so_far + n / 16 * 15) {
                Ok(()) => std::ops::ControlFlow::Continue(()),
                Err(o) => {
                    overflow = Some(o);
                    std::ops::ControlFlow::Break(())
                }
            }
        };
        let page = up
            .get_bytes_unless_silent(&query, cfg.list_page_timeout, cfg.gzip, received)
            .await
            .ok_or(ReflectorError::ListStalled(cfg.list_page_timeout))?;
        if let Some(o) = overflow {
            return Err(ReflectorError::TooLarge(o));
        }
        let body = match page {
            Err(UpstreamError::Status { status, .. }) if status == 410 => {
                return Err(ReflectorError::ListExpired)
            }
            other => other.map_err(ReflectorError::List)?,
        };
        if token.is_none() {
            let style = ListStyle::detect(&body).ok_or(ReflectorError::ListShape)?;
            codec = codec.with_style(style);
        }
        let page = codec
            .parse_list(&body)
            .map_err(ReflectorError::ListDecode)?;
        bytes += page.entries.iter().map(|e| e.item.len()).sum::<usize>();
        // Checked as it comes: a list too large to cache is not held whole.
        writer.room(bytes).map_err(ReflectorError::TooLarge)?;
        entries.extend(page.entries);
        rv = page.rv;
        pages += 1;
        remaining = page.remaining_item_count;
        if page.continue_token.is_some() {
            progress.tick(entries.len(), remaining, bytes);
        }
        match page.continue_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    tracing::info!(
        resource = %writer.resource(),
        objects = entries.len(),
        bytes,
        pages,
        took = ?progress.started.elapsed(),
        resource_version = rv,
        "listed"
    );
    // The list was built aside; readers see either the old or the new state.
    writer
        .apply(Update::Listed { codec, entries, rv })
        .map_err(ReflectorError::Apply)?;
    metrics::reflector_listed(writer.tally());
    Ok(Phase::Watching { rv })
}

async fn watch(
    up: &Upstream,
    writer: &impl Writer,
    cfg: &ReflectorConfig,
    rv: u64,
    timeout_seconds: u64,
    backoff: &mut Backoff,
) -> Result<Phase, ReflectorError> {
    let path = format!(
        "{}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds={timeout_seconds}",
        writer.resource().path(None)
    );
    metrics::reflector_watch_asked(writer.tally());
    // Past this, the upstream has not ended the watch as it was asked to.
    let allowed = Duration::from_secs(timeout_seconds) + cfg.watch_grace;
    let deadline = tokio::time::Instant::now() + allowed;
    let stalled = |rv| ReflectorError::WatchStalled { after: allowed, rv };
    let resp = tokio::time::timeout_at(deadline, up.watch(&path, cfg.gzip))
        .await
        .map_err(|_| stalled(rv))?
        .map_err(ReflectorError::Watch)?;
    let status = resp.status();
    if status == 410 {
        return Err(ReflectorError::WatchExpired(rv));
    }
    if !status.is_success() {
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(ReflectorError::Watch(UpstreamError::of_answer(
            status,
            &parts.headers,
            &path,
            &body,
        )));
    }
    // An upstream kubecache gzips the stream it was asked to; an
    // apiserver never does.
    let mut gunzip = match resp.headers().get(http::header::CONTENT_ENCODING) {
        None => None,
        Some(v) if v == "gzip" => {
            metrics::reflector_watch_gzipped(writer.tally());
            Some(Gunzip::default())
        }
        Some(v) if v == "identity" => None,
        Some(v) => {
            return Err(ReflectorError::WatchDecode(format!(
                "content encoding {v:?}"
            )))
        }
    };
    let codec = writer.codec();
    let resource = writer.resource().to_string();
    let mut body = resp.into_body();
    let mut buf = BytesMut::new();
    let mut last = rv;
    let started = Instant::now();
    loop {
        let Ok(next) = tokio::time::timeout_at(deadline, body.frame()).await else {
            return Err(stalled(last));
        };
        let frame = match next {
            None => break,
            // Whatever of an event came before the break is dropped: the
            // re-watch from `last` sends it again, whole.
            Some(Err(source)) => return Err(ReflectorError::WatchBroke { rv: last, source }),
            Some(Ok(f)) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        metrics::upstream_watch_bytes(writer.tally(), gunzip.is_some(), data.len());
        match &mut gunzip {
            Some(g) => g
                .push(&data, &mut buf, MAX_EVENT_BYTES + data.len())
                .map_err(|e| ReflectorError::WatchDecode(e.to_string()))?,
            None => buf.extend_from_slice(&data),
        }
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let line = buf.split_to(nl + 1);
            let line = &line[..nl];
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            last = apply_event(writer, &codec, &resource, line, last)?;
            writer
                .room(writer.cached_bytes())
                .map_err(ReflectorError::TooLarge)?;
            if started.elapsed() > Duration::from_secs(1) {
                backoff.reset();
            }
        }
        if buf.len() > MAX_EVENT_BYTES {
            return Err(ReflectorError::WatchDecode(
                "event larger than 64 MiB".into(),
            ));
        }
    }
    if !buf.is_empty() && !buf.chunk().iter().all(u8::is_ascii_whitespace) {
        last = apply_event(writer, &codec, &resource, &buf, last)?;
    }
    Ok(Phase::Watching { rv: last })
}

/// The largest event line a watch stream may hold.
const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

fn apply_event(
    writer: &impl Writer,
    codec: &TypeCodec,
    resource: &str,
    line: &[u8],
    last: u64,
) -> Result<u64, ReflectorError> {
    match decode_event(codec, line)? {
        WatchLine::Change(kind, entry) => {
            let rv = entry.rv;
            writer.apply(Update::Event(kind, entry))?;
            metrics::watch_event(resource, kind.as_str());
            Ok(rv)
        }
        WatchLine::Bookmark(rv) => {
            writer.apply(Update::Progress(rv))?;
            Ok(rv.max(last))
        }
        WatchLine::Expired => Err(ReflectorError::WatchExpired(last)),
    }
}

/// What one line of a JSON watch stream says.
#[derive(Debug)]
pub enum WatchLine {
    /// An object added, modified or deleted.
    Change(EventType, Arc<Entry>),
    /// Nothing changed up to this version.
    Bookmark(u64),
    /// The upstream's 410 ERROR event: the watch's version is too old.
    Expired,
}

/// Decodes one line of a JSON watch stream, apart from applying it (so
/// it can be fuzzed alone): any other ERROR event, an unknown type or an
/// object `codec` cannot decode is a `WatchDecode` error.
pub fn decode_event(codec: &TypeCodec, line: &[u8]) -> Result<WatchLine, ReflectorError> {
    let ev: WatchEvent =
        serde_json::from_slice(line).map_err(|e| ReflectorError::WatchDecode(e.to_string()))?;
    let raw = ev.object.get().as_bytes();
    let kind = match ev.kind {
        "ADDED" => EventType::Added,
        "MODIFIED" => EventType::Modified,
        "DELETED" => EventType::Deleted,
        "BOOKMARK" => {
            let b: BookmarkIn = serde_json::from_slice(raw)
                .map_err(|e| ReflectorError::WatchDecode(e.to_string()))?;
            let rv =
                b.metadata.resource_version.parse().map_err(|_| {
                    ReflectorError::WatchDecode("bookmark without a numeric rv".into())
                })?;
            return Ok(WatchLine::Bookmark(rv));
        }
        "ERROR" => {
            let s: StatusIn = serde_json::from_slice(raw)
                .map_err(|e| ReflectorError::WatchDecode(e.to_string()))?;
            if s.code == 410 {
                return Ok(WatchLine::Expired);
            }
            return Err(ReflectorError::WatchDecode(format!(
                "ERROR event: {}",
                String::from_utf8_lossy(raw)
            )));
        }
        other => return Err(ReflectorError::WatchDecode(format!("event type {other:?}"))),
    };
    let entry = codec
        .from_object(raw)
        .map_err(|e| ReflectorError::WatchDecode(e.to_string()))?;
    Ok(WatchLine::Change(kind, Arc::new(entry)))
}

pub fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(phase: Phase, stalled: bool) -> State {
        State { phase, stalled }
    }
    fn watching(rv: u64) -> Phase {
        Phase::Watching { rv }
    }
    fn listing(consistent: bool) -> Phase {
        Phase::Listing { consistent }
    }
    fn stalled_at(rv: u64) -> ReflectorError {
        ReflectorError::WatchStalled {
            after: Duration::from_secs(75),
            rv,
        }
    }

    #[test]
    fn a_list_leads_to_a_watch_and_resets_the_backoff() {
        let (next, effect) = transition(&at(listing(false), false), Ok(&watching(7)));
        assert_eq!(next, at(watching(7), false));
        assert_eq!(effect, Effect::ResetBackoff);
    }

    #[test]
    fn a_watch_that_ends_at_its_timeout_clears_a_stall() {
        let (next, effect) = transition(&at(watching(7), true), Ok(&watching(9)));
        assert_eq!(next, at(watching(9), false));
        assert_eq!(effect, Effect::None);
    }

    #[test]
    fn expiry_and_inconsistency_relist_consistently_at_once() {
        for e in [
            ReflectorError::WatchExpired(3),
            ReflectorError::ListExpired,
            ReflectorError::Inconsistent,
        ] {
            let (next, effect) = transition(&at(watching(3), false), Err(&e));
            assert_eq!(next, at(listing(true), false), "{e}");
            assert_eq!(effect, Effect::None, "{e}");
        }
    }

    #[test]
    fn a_stall_watches_again_and_a_second_stall_relists_as_failing() {
        let (next, effect) = transition(&at(watching(5), false), Err(&stalled_at(6)));
        assert_eq!(next, at(watching(6), true));
        assert_eq!(effect, Effect::None);
        let (next, effect) = transition(&next, Err(&stalled_at(6)));
        assert_eq!(next, at(listing(true), false));
        assert_eq!(effect, Effect::Failing);
    }

    #[test]
    fn a_type_too_large_is_let_go_and_listed_again_later() {
        let e = ReflectorError::TooLarge(Overflow {
            bytes: 10,
            limit: 5,
            which: "per-type",
        });
        let (next, effect) = transition(&at(watching(5), false), Err(&e));
        assert_eq!(next, at(listing(false), false));
        assert_eq!(effect, Effect::LetGo);
    }

    #[test]
    fn a_failed_connection_backs_off_and_resumes_where_it_was() {
        let broke = ReflectorError::Watch(UpstreamError::Stopped);
        let (next, effect) = transition(&at(watching(5), false), Err(&broke));
        assert_eq!(next, at(watching(5), false));
        assert_eq!(effect, Effect::BackOff);
        // A list that failed lists again, consistently only after a watch.
        let failed = ReflectorError::ListShape;
        let (next, _) = transition(&at(listing(false), false), Err(&failed));
        assert_eq!(next, at(listing(false), false));
        let decode = ReflectorError::WatchDecode("x".into());
        let (next, effect) = transition(&at(watching(5), false), Err(&decode));
        assert_eq!(next, at(listing(true), false));
        assert_eq!(effect, Effect::BackOff);
    }

    #[test]
    fn backoff_doubles_to_the_cap_with_jitter() {
        let mut b = Backoff::new();
        let first = b.step();
        assert!(first >= Duration::from_millis(800) && first < Duration::from_millis(1600));
        for _ in 0..10 {
            b.step();
        }
        let capped = b.step();
        assert!(capped >= Duration::from_secs(30) && capped < Duration::from_secs(60));
        b.reset();
        assert!(b.step() < Duration::from_millis(1600));
    }
}
