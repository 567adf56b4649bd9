//! Fault injection for the simulator: what can go wrong between a client and
//! an apiserver, switched on by flags at start or by `/sim/faults` at run
//! time. Requests can fail (5xx) or be slow; watches can be dropped, stall,
//! carry undecodable events, or be expired by a compaction (410 on resume).
//! A `key=value` that switches nothing is a `FaultCommandError`.

use bytes::Bytes;
use http_body_util::BodyExt;
use kubecache::body::Body;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Debug)]
pub struct Faults {
    /// Answer this many next requests with 500.
    errors: AtomicU64,
    /// Answer this many next requests with 429 and `Retry-After`.
    throttled: AtomicU64,
    /// The `Retry-After` of those 429s, in seconds.
    retry_after_seconds: AtomicU64,
    /// Delay every response by this many milliseconds.
    latency_ms: AtomicU64,
    /// Bumped to end every open watch, as a dropped connection would.
    drops: watch::Sender<u64>,
    /// While true, open watches send nothing and keep the connection open.
    stall: watch::Sender<bool>,
    /// The next this many watch events go out as undecodable lines.
    garbage: AtomicU64,
    /// The next this many watch events are not sent at all, the watch
    /// going on as if they had been: a silently inconsistent cache.
    lose: AtomicU64,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            errors: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            retry_after_seconds: AtomicU64::new(1),
            latency_ms: AtomicU64::new(0),
            drops: watch::channel(0).0,
            stall: watch::channel(false).0,
            garbage: AtomicU64::new(0),
            lose: AtomicU64::new(0),
        }
    }
}

/// A change asked of the fault controls, from a flag or the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultCommand {
    Errors(u64),
    Throttled(u64),
    RetryAfterSeconds(u64),
    LatencyMs(u64),
    DropWatches,
    StallWatches(bool),
    GarbageWatchEvents(u64),
    LoseWatchEvents(u64),
    /// Compact history and drop watches: resuming from before now is a 410.
    Expire,
}

/// A `key=value` of `/sim/faults` that is no fault command, worded as the
/// endpoint's 400 words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultCommandError {
    #[error("{key}={value:?}: expected a non-negative integer")]
    NotACount {
        key: String,
        value: String,
        #[source]
        source: std::num::ParseIntError,
    },
    #[error("{key}={value:?}: expected true or false")]
    NotAFlag { key: String, value: String },
    /// `dropWatches` and `expire` are actions: switching one off means nothing.
    #[error("{key}={value:?} does nothing")]
    DoesNothing { key: String, value: String },
    #[error("unknown fault {key:?}; known: errors, throttled, retryAfterSeconds, latencyMs, dropWatches, stallWatches, garbageWatchEvents, loseWatchEvents, expire")]
    UnknownFault { key: String },
}

impl FaultCommand {
    /// One `key=value` of `/sim/faults`.
    pub fn parse(key: &str, value: &str) -> Result<Self, FaultCommandError> {
        let number = || {
            value
                .parse::<u64>()
                .map_err(|source| FaultCommandError::NotACount {
                    key: key.into(),
                    value: value.into(),
                    source,
                })
        };
        let flag = || match value {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(FaultCommandError::NotAFlag {
                key: key.into(),
                value: value.into(),
            }),
        };
        Ok(match key {
            "errors" => FaultCommand::Errors(number()?),
            "throttled" => FaultCommand::Throttled(number()?),
            "retryAfterSeconds" => FaultCommand::RetryAfterSeconds(number()?),
            "latencyMs" => FaultCommand::LatencyMs(number()?),
            "dropWatches" if flag()? => FaultCommand::DropWatches,
            "stallWatches" => FaultCommand::StallWatches(flag()?),
            "garbageWatchEvents" => FaultCommand::GarbageWatchEvents(number()?),
            "loseWatchEvents" => FaultCommand::LoseWatchEvents(number()?),
            "expire" if flag()? => FaultCommand::Expire,
            "dropWatches" | "expire" => {
                return Err(FaultCommandError::DoesNothing {
                    key: key.into(),
                    value: value.into(),
                })
            }
            _ => return Err(FaultCommandError::UnknownFault { key: key.into() }),
        })
    }
}

impl Faults {
    /// Applies a command; `Expire` needs the stores and is the caller's.
    pub fn apply(&self, c: &FaultCommand) {
        match c {
            FaultCommand::Errors(n) => self.errors.store(*n, Ordering::Release),
            FaultCommand::Throttled(n) => self.throttled.store(*n, Ordering::Release),
            FaultCommand::RetryAfterSeconds(n) => {
                self.retry_after_seconds.store(*n, Ordering::Release)
            }
            FaultCommand::LatencyMs(n) => self.latency_ms.store(*n, Ordering::Release),
            FaultCommand::DropWatches | FaultCommand::Expire => self.drops.send_modify(|g| *g += 1),
            FaultCommand::StallWatches(on) => {
                self.stall.send_replace(*on);
            }
            FaultCommand::GarbageWatchEvents(n) => self.garbage.store(*n, Ordering::Release),
            FaultCommand::LoseWatchEvents(n) => self.lose.store(*n, Ordering::Release),
        }
    }

    pub fn latency(&self) -> Option<Duration> {
        match self.latency_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// Whether this request is one of the injected failures (and counts it).
    pub fn take_error(&self) -> bool {
        take_one(&self.errors)
    }

    /// Whether the next watch event goes out garbled (and counts it).
    /// The `Retry-After` seconds if this request is one of the injected
    /// 429s (and counts it).
    pub fn take_throttle(&self) -> Option<u64> {
        take_one(&self.throttled).then(|| self.retry_after_seconds.load(Ordering::Acquire))
    }

    /// Whether this watch event is one to lose (and counts it).
    pub fn take_lost(&self) -> bool {
        take_one(&self.lose)
    }

    pub fn take_garbage(&self) -> bool {
        take_one(&self.garbage)
    }

    pub fn drops(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }

    pub fn stall(&self) -> watch::Receiver<bool> {
        self.stall.subscribe()
    }

    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "errors": self.errors.load(Ordering::Acquire),
            "throttled": self.throttled.load(Ordering::Acquire),
            "retryAfterSeconds": self.retry_after_seconds.load(Ordering::Acquire),
            "latencyMs": self.latency_ms.load(Ordering::Acquire),
            "stallWatches": *self.stall.borrow(),
            "garbageWatchEvents": self.garbage.load(Ordering::Acquire),
            "loseWatchEvents": self.lose.load(Ordering::Acquire),
            "watchDrops": *self.drops.borrow(),
        })
    }
}

fn take_one(n: &AtomicU64) -> bool {
    n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok()
}

/// An undecodable watch line: cut off inside the object, like a proxy that
/// truncated the stream and glued the next event on.
pub const GARBAGE_LINE: &[u8] = b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\n";

/// The faults one watch meets, subscribed to as its request arrives: a
/// drop or stall from then on reaches it, even one that comes before its
/// response is under way.
pub struct WatchFaults {
    faults: Arc<Faults>,
    drops: watch::Receiver<u64>,
    stall: watch::Receiver<bool>,
}

impl WatchFaults {
    pub fn new(faults: &Arc<Faults>) -> Self {
        WatchFaults {
            faults: faults.clone(),
            drops: faults.drops(),
            stall: faults.stall(),
        }
    }

    /// The watch's body as it reaches the client through the faults: it
    /// ends when watches are dropped, holds everything back (the
    /// connection open) while they are stalled, and has lines replaced
    /// with garbage while garbage is asked for. Each frame of a watch body
    /// is one event.
    pub fn body(self, inner: Body) -> Body {
        let WatchFaults {
            faults,
            mut drops,
            mut stall,
        } = self;
        let (tx, body) = kubecache::body::channel(1);
        tokio::spawn(async move {
            let mut inner = inner;
            loop {
                if *stall.borrow_and_update() {
                    tokio::select! {
                        _ = drops.changed() => return,
                        _ = stall.changed() => continue,
                    }
                }
                let frame = tokio::select! {
                    biased;
                    _ = drops.changed() => return,
                    _ = stall.changed() => continue,
                    frame = inner.frame() => frame,
                };
                let Some(Ok(frame)) = frame else { return };
                let Ok(line) = frame.into_data() else {
                    continue;
                };
                // Only events: a lost bookmark loses nothing.
                if !line.starts_with(b"{\"type\":\"BOOKMARK\"") && faults.take_lost() {
                    continue;
                }
                let line = if faults.take_garbage() {
                    Bytes::from_static(GARBAGE_LINE)
                } else {
                    line
                };
                // A client that is not reading is still dropped.
                tokio::select! {
                    biased;
                    _ = drops.changed() => return,
                    sent = tx.send(line) => if sent.is_err() { return },
                }
            }
        });
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_from_the_control_endpoints_keys() {
        assert_eq!(
            FaultCommand::parse("errors", "3"),
            Ok(FaultCommand::Errors(3))
        );
        assert_eq!(
            FaultCommand::parse("stallWatches", "false"),
            Ok(FaultCommand::StallWatches(false))
        );
        assert_eq!(FaultCommand::parse("expire", "1"), Ok(FaultCommand::Expire));
        assert!(FaultCommand::parse("errors", "-1").is_err());
        assert!(FaultCommand::parse("errors", "").is_err());
        assert!(FaultCommand::parse("stallWatches", "yes").is_err());
        assert!(FaultCommand::parse("dropWatches", "false").is_err());
        assert!(FaultCommand::parse("explode", "1").is_err());
    }

    #[test]
    fn a_bad_command_names_its_key_and_value() {
        let err = |k, v| FaultCommand::parse(k, v).unwrap_err().to_string();
        assert_eq!(
            err("errors", "-1"),
            "errors=\"-1\": expected a non-negative integer"
        );
        assert_eq!(
            err("stallWatches", "maybe"),
            "stallWatches=\"maybe\": expected true or false"
        );
        assert_eq!(err("expire", "0"), "expire=\"0\" does nothing");
        assert_eq!(
            err("explode", "1"),
            "unknown fault \"explode\"; known: errors, throttled, retryAfterSeconds, latencyMs, dropWatches, stallWatches, garbageWatchEvents, loseWatchEvents, expire"
        );
        let e = FaultCommand::parse("latencyMs", "x").unwrap_err();
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn counted_faults_run_out() {
        let f = Faults::default();
        f.apply(&FaultCommand::Throttled(1));
        f.apply(&FaultCommand::RetryAfterSeconds(7));
        assert_eq!(f.take_throttle(), Some(7));
        assert_eq!(f.take_throttle(), None);
        f.apply(&FaultCommand::LoseWatchEvents(1));
        assert!(f.take_lost());
        assert!(!f.take_lost());
        f.apply(&FaultCommand::Errors(2));
        assert!(f.take_error());
        assert!(f.take_error());
        assert!(!f.take_error());
        f.apply(&FaultCommand::GarbageWatchEvents(1));
        assert!(f.take_garbage());
        assert!(!f.take_garbage());
    }

    #[test]
    fn drops_and_stalls_reach_open_watches() {
        let f = Faults::default();
        let d = f.drops();
        let s = f.stall();
        f.apply(&FaultCommand::DropWatches);
        assert!(d.has_changed().unwrap());
        f.apply(&FaultCommand::StallWatches(true));
        assert!(*s.borrow());
    }
}
