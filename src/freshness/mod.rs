//! Proofs that a type's cache holds every write the upstream had committed
//! when a request arrived: what lets a consistent read (resourceVersion
//! unset) — and a read at a version newer than its type's last change —
//! be answered from the cache, never staler than the apiserver's answer.
//!
//! The proof is the apiserver's own, made from outside it. Its cacher
//! serves a consistent list (`delegator.go`, `watch_cache.go`
//! `waitAndListLatestRV`) by reading etcd's current revision and waiting
//! until its watch cache has reached it. kubecache does the same with what
//! a client of the apiserver can ask:
//!
//! 1. **a probe** ([`probe`]): a consistent list of the type begun after
//!    the request arrived answers a resourceVersion R no older than every
//!    write committed before it — the revision to reach. Probes are shared:
//!    one in flight per type, serving every request that arrived before it
//!    began ([`crate::flight`]).
//! 2. **the cache reaching R**: the type's own watch passing R (a busy
//!    type: at once), or, for a quiet type, a bookmark at or past R on a
//!    short side watch from the cache's version ([`side_watch`]), applied
//!    as [`Update::Proven`](crate::reflector::Update) once the cache has
//!    applied every event the side watch saw before it. On 1.31+ the probe
//!    itself makes the upstream's watch cache fresh to R (its progress
//!    requester), and the cacher's bookmark timer carries that version to
//!    the side watch; while proofs of a type are wanted, a side watch opens
//!    every half second, so that one is due at every tick of that timer.
//!    Older upstreams (v1.20) never move a quiet type's bookmarks, so there
//!    a quiet type has no proof: its consistent reads are forwarded, shared
//!    among identical ones (`serve::coalesce`).
//!
//! A read whose proof fails, is slow (past [`FreshnessConfig::timeout`]),
//! or would pass the count of proofs in flight is forwarded. What the
//! upstream can prove is learned in `upstream::version`.

pub mod probe;
pub mod side_watch;

use crate::encode::codec::Store;
use crate::flight::Flights;
use crate::metrics;
use crate::reflector::Writer;
use crate::resource::GroupVersionResource;
use crate::upstream::version::{ProbeForm, UpstreamVersion};
use crate::upstream::Upstream;
use probe::ProbeError;
use side_watch::Ended;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// How proofs are bounded.
#[derive(Debug, Clone, Copy)]
pub struct FreshnessConfig {
    /// How long a read waits for its proof before it is forwarded.
    pub timeout: Duration,
    /// Without fresh bookmarks (v1.20), how long a changing type's own
    /// events are waited for.
    pub events_wait: Duration,
    /// Probes and side watches in flight at most, across types: past it,
    /// reads are forwarded.
    pub max_in_flight: usize,
}

impl Default for FreshnessConfig {
    fn default() -> Self {
        FreshnessConfig {
            // A side watch's bookmark comes at the first tick of the
            // cacher's bookmark timer (every 1–1.25 s) once its bucket is
            // due: ≤ 1.25 s while side watches run, but ≤ 2.25 s for the
            // first one after a quiet spell (its bucket is the next
            // second). The bound covers that worst case and the probe, so
            // the first consistent read of a quiet type is answered from
            // the cache, not forwarded (as it could be at 1.5 s:
            // `cli/tests/demo.rs` caught it in CI). It is within the 3 s
            // the apiserver itself waits for its cache
            // (`watch_cache.go`'s `blockTimeout`).
            timeout: Duration::from_millis(2500),
            events_wait: Duration::from_millis(250),
            max_in_flight: 64,
        }
    }
}

/// A type with this many events in the last second changes often enough
/// that its own watch passes a probed revision within a few tens of
/// milliseconds: it is worth waiting for. (A type with fewer may wait a
/// second or more for its next event.)
const BUSY_EVENTS: usize = 20;
/// How long a changing type's own events are waited for before side
/// watches are asked for too.
const EVENTS_FIRST: Duration = Duration::from_millis(50);
/// While proofs of a type were wanted this recently, side watches go on.
const PULSE_KEEP: Duration = Duration::from_secs(5);
/// How often a side watch opens while they are wanted: so that one is due
/// at every tick of the cacher's bookmark timer (its buckets are a second
/// wide; two a second leave none empty).
const PULSE_EVERY: Duration = Duration::from_millis(500);
/// Side watches in a row that should have proven a type and did not,
/// before the upstream's bookmarks are taken not to follow its reads.
const MISSES_TO_DISPROVE: u32 = 3;

/// Whether `store`'s type changes often enough for its own watch to prove
/// it soon.
fn busy(store: &Store) -> bool {
    store.events_within(Duration::from_secs(1), BUSY_EVENTS) >= BUSY_EVENTS
}

/// What a read needs proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Every write committed before it arrived (resourceVersion unset).
    Consistent,
    /// A state at least as new as this version (NotOlderThan).
    AtLeast(u64),
}

/// How the cache was proven fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// It already stood where it had to.
    Reached,
    /// The type's own events took it there.
    Events,
    /// A side watch's bookmark took it there.
    Bookmark,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Reached => "reached",
            How::Events => "events",
            How::Bookmark => "bookmark",
        }
    }
}

/// A read proven fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proven {
    pub how: How,
    pub took: Duration,
}

/// Why a read could not be proven fresh: it is forwarded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unproven {
    /// The upstream cannot prove a quiet type fresh.
    #[error("{0}")]
    NoProof(String),
    #[error("probing the upstream: {0}")]
    Probe(#[from] ProbeError),
    #[error("not proven within {0:?}")]
    Timeout(Duration),
    /// Past `max_in_flight`.
    #[error("too many proofs in flight")]
    Busy,
}

impl Unproven {
    /// As metrics label it (`kubecache_forwarded_requests_total`'s reason).
    pub fn as_str(&self) -> &'static str {
        match self {
            Unproven::NoProof(_) => "no_proof",
            Unproven::Probe(_) => "probe_failed",
            Unproven::Timeout(_) => "proof_timeout",
            Unproven::Busy => "proof_busy",
        }
    }
}

/// What proves the upstream's types fresh: shared by every type.
pub struct Freshness {
    up: Arc<Upstream>,
    version: Arc<UpstreamVersion>,
    /// Where probes and side watches run (the cache's own runtime).
    rt: tokio::runtime::Handle,
    cfg: FreshnessConfig,
    probes: Arc<Flights<GroupVersionResource, Result<u64, Unproven>>>,
    slots: Arc<Semaphore>,
    /// Side watches in a row that should have proven and did not.
    misses: AtomicU32,
}

/// A type's proofs: what keeps its side watches going, and what they
/// found.
#[derive(Debug, Default)]
pub struct TypeProofs {
    /// When a proof last waited for a bookmark (ms of `clock_ms`).
    wanted: AtomicU64,
    pulsing: AtomicBool,
    /// The newest revision a probe of the type answered, and when.
    probed: Mutex<Option<(u64, Instant)>>,
    /// The newest version a side watch's bookmark is proving (or proved)
    /// the type at: set before it is applied.
    proving: AtomicU64,
    /// The last proof, for the status page.
    last: Mutex<Option<(Result<Proven, Unproven>, std::time::SystemTime)>>,
    /// Proofs made and failed so far.
    pub proven: AtomicU64,
    pub unproven: AtomicU64,
}

static START: OnceLock<std::time::Instant> = OnceLock::new();

fn clock_ms() -> u64 {
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

/// How a type's consistent reads are proven now, and why: for
/// `/readyz?verbose` and `/debug/cache`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mode {
    /// `events`, `bookmarks` or `forwarded`.
    pub name: &'static str,
    pub why: String,
}

impl TypeProofs {
    /// The last proof's outcome and when it was made.
    pub fn last(&self) -> Option<(Result<Proven, Unproven>, std::time::SystemTime)> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn record(&self, outcome: &Result<Proven, Unproven>) {
        let counter = match outcome {
            Ok(_) => &self.proven,
            Err(_) => &self.unproven,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((outcome.clone(), std::time::SystemTime::now()));
    }

    fn probed_before(&self, t: Instant) -> Option<u64> {
        let p = self.probed.lock().unwrap_or_else(|e| e.into_inner());
        p.filter(|(_, at)| *at <= t).map(|(rv, _)| rv)
    }
}

impl Freshness {
    pub fn new(
        up: Arc<Upstream>,
        version: Arc<UpstreamVersion>,
        rt: tokio::runtime::Handle,
        cfg: FreshnessConfig,
    ) -> Arc<Self> {
        Arc::new(Freshness {
            up,
            version,
            rt,
            cfg,
            probes: Arc::default(),
            slots: Arc::new(Semaphore::new(cfg.max_in_flight)),
            misses: AtomicU32::new(0),
        })
    }

    pub fn version(&self) -> &UpstreamVersion {
        &self.version
    }

    /// How `store`'s consistent reads are proven now, and why.
    pub fn mode(&self, store: &Store) -> Mode {
        let c = self.version.consistency();
        let upstream = match self.version.known() {
            Some(k) => k.version.to_string(),
            None => "an upstream whose version is not known yet".into(),
        };
        if busy(store) {
            return Mode {
                name: "events",
                why: format!("busy ({BUSY_EVENTS}+ events a second): its own watch passes the probed revision"),
            };
        }
        if c.fresh_bookmarks {
            return Mode {
                name: "bookmarks",
                why: format!("quiet: {upstream} makes its bookmarks fresh on consistent reads"),
            };
        }
        let why = match self.version.disproved_now() {
            Some(d) => format!("quiet, and {upstream}'s bookmarks were found not to follow its reads ({d})"),
            None => format!("quiet, and {upstream} cannot prove a quiet type fresh (its bookmarks follow only events before 1.31)"),
        };
        Mode {
            name: "forwarded",
            why,
        }
    }

    /// Proves that `tc` holds what `want` asks of a read that arrived at
    /// `arrived`, or says why not (the read is then forwarded).
    pub async fn prove<W>(
        self: &Arc<Self>,
        tc: &Arc<W>,
        proofs: &Arc<TypeProofs>,
        want: Want,
        arrived: Instant,
    ) -> Result<Proven, Unproven>
    where
        W: Writer + AsRef<Store>,
    {
        let began = Instant::now();
        let outcome = self.proof(tc, proofs, want, arrived).await;
        let took = began.elapsed();
        let outcome = outcome.map(|how| Proven { how, took });
        match &outcome {
            Ok(p) => metrics::freshness_proof(p.how.as_str(), took),
            Err(e) => metrics::freshness_proof(e.as_str(), took),
        }
        proofs.record(&outcome);
        outcome
    }

    async fn proof<W>(
        self: &Arc<Self>,
        tc: &Arc<W>,
        proofs: &Arc<TypeProofs>,
        want: Want,
        arrived: Instant,
    ) -> Result<How, Unproven>
    where
        W: Writer + AsRef<Store>,
    {
        let store = (**tc).as_ref();
        if let Want::AtLeast(n) = want {
            if store.rv() >= n {
                return Ok(How::Reached);
            }
        }
        let c = self.version.consistency();
        let changing = busy(store);
        if !c.fresh_bookmarks && !changing {
            return Err(Unproven::NoProof(self.mode(store).why));
        }
        let bound = if c.fresh_bookmarks {
            self.cfg.timeout
        } else {
            self.cfg.events_wait
        };
        let deadline = Instant::now() + bound;
        let r = tokio::time::timeout_at(deadline, self.probe(tc.resource(), c.probe, arrived))
            .await
            .map_err(|_| Unproven::Timeout(bound))??;
        {
            let mut p = proofs.probed.lock().unwrap_or_else(|e| e.into_inner());
            if p.is_none_or(|(had, _)| had <= r) {
                *p = Some((r, Instant::now()));
            }
        }
        let target = match want {
            Want::Consistent => r,
            Want::AtLeast(n) => n,
        };
        if store.rv() >= target {
            return Ok(How::Reached);
        }
        let left = |now: Instant| deadline.saturating_duration_since(now);
        if changing && c.fresh_bookmarks {
            let first = left(Instant::now()).min(EVENTS_FIRST);
            if store.wait_for(target, first).await.is_ok() {
                return Ok(How::Events);
            }
        }
        if c.fresh_bookmarks {
            self.want_bookmarks(tc, proofs);
        }
        match store.wait_for(target, left(Instant::now())).await {
            Ok(_) if proofs.proving.load(Ordering::Acquire) >= target => Ok(How::Bookmark),
            Ok(_) => Ok(How::Events),
            Err(_) => Err(Unproven::Timeout(bound)),
        }
    }

    /// The revision a consistent probe of `gvr` begun after `arrived`
    /// answers: shared with every read that arrived before it began.
    async fn probe(
        self: &Arc<Self>,
        gvr: &GroupVersionResource,
        form: ProbeForm,
        arrived: Instant,
    ) -> Result<u64, Unproven> {
        // Flights never join a probe already under way, so every probe
        // joined began after its callers arrived, `arrived` included.
        let _ = arrived;
        let (up, slots, timeout, g) = (
            self.up.clone(),
            self.slots.clone(),
            self.cfg.timeout,
            gvr.clone(),
        );
        let run = move || {
            let (up, slots, g) = (up.clone(), slots.clone(), g.clone());
            async move {
                let Ok(_slot) = slots.try_acquire_owned() else {
                    return Err(Unproven::Busy);
                };
                let r = probe::probe(&up, &g, form, timeout).await;
                metrics::freshness_probe(r.is_ok());
                Ok(r?)
            }
        };
        let (answer, _) = self.probes.join(gvr.clone(), &self.rt, run).await;
        answer.unwrap_or(Err(Unproven::Busy))
    }

    /// Side watches of `tc`'s type, every [`PULSE_EVERY`] for as long as
    /// proofs of it are wanted.
    fn want_bookmarks<W>(self: &Arc<Self>, tc: &Arc<W>, proofs: &Arc<TypeProofs>)
    where
        W: Writer + AsRef<Store>,
    {
        proofs.wanted.store(clock_ms(), Ordering::Relaxed);
        if proofs.pulsing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (me, tc, proofs) = (self.clone(), tc.clone(), proofs.clone());
        self.rt.spawn(async move {
            loop {
                let idle = clock_ms().saturating_sub(proofs.wanted.load(Ordering::Relaxed));
                if idle > PULSE_KEEP.as_millis() as u64 {
                    proofs.pulsing.store(false, Ordering::Release);
                    // Wanted again just now, by a proof that found it
                    // still pulsing: go on.
                    let idle = clock_ms().saturating_sub(proofs.wanted.load(Ordering::Relaxed));
                    if idle > PULSE_KEEP.as_millis() as u64
                        || proofs.pulsing.swap(true, Ordering::AcqRel)
                    {
                        return;
                    }
                }
                if let Ok(slot) = me.slots.clone().try_acquire_owned() {
                    let (me, tc, proofs) = (me.clone(), tc.clone(), proofs.clone());
                    tokio::spawn(async move {
                        let started = Instant::now();
                        let (from, ended) = side_watch::run(&me.up, &tc, &proofs.proving).await;
                        drop(slot);
                        me.side_watch_ended(&proofs, started, from, &ended);
                    });
                }
                tokio::time::sleep(PULSE_EVERY).await;
            }
        });
    }

    /// Counts a side watch's end, and learns from it whether the
    /// upstream's bookmarks follow its consistent reads.
    fn side_watch_ended(&self, proofs: &TypeProofs, started: Instant, from: u64, ended: &Ended) {
        metrics::freshness_side_watch(ended.as_str());
        // A probe answered before the side watch began made the
        // upstream's cache fresh to its revision before any of the side
        // watch's ticks: its bookmark must be there.
        let Some(probed) = proofs.probed_before(started).filter(|r| *r > from) else {
            return;
        };
        let missed = match ended {
            Ended::Proven { rv } | Ended::NotApplied { rv } if *rv < probed => {
                format!("a bookmark at {rv}")
            }
            Ended::NoBookmark => "no bookmark".to_string(),
            // Not the bookmarks' doing.
            Ended::Failed(_) => return,
            Ended::Proven { .. } | Ended::NotApplied { .. } => {
                self.misses.store(0, Ordering::Relaxed);
                return;
            }
        };
        let n = self.misses.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= MISSES_TO_DISPROVE {
            self.misses.store(0, Ordering::Relaxed);
            let what = missed;
            self.version.disprove(format!(
                "{n} side watches in a row got {what} where a probe had read {probed}"
            ));
        }
    }
}
