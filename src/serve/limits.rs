//! What one client, and one request, may take: concurrent requests and
//! watches per user (over either: 429 with `Retry-After`, as API Priority
//! and Fairness answers), the request line's length (414) and a forwarded
//! body's size (413, the apiserver's limit and words). Header sizes are
//! the listener's (`max_header_bytes`: 431, from hyper, as Go answers).
//!
//! Counted per authenticated user (the one who sends, not whom it
//! impersonates), in authorize mode. In trust-local mode every client is
//! kubecache itself, so a per-user count would be one for the whole
//! machine — and a load test's thousands of clients are what that mode
//! serves — so only the sizes apply there. A slot is held until the
//! answer's body is done: a watch holds its own for as long as it streams.
//!
//! And what all answers made by the cache may hold together while their
//! clients read them ([`BytesInFlight`]): a list is built only if its
//! likely size fits (else 429), and its bytes are counted until the last
//! client reading them has them — once, however many clients share them —
//! so that clients that never read cannot pin the process's memory.

use crate::body::{self, Body};
use crate::request::{Identity, Request, Verb};
use dashmap::DashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The limits, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitsConfig {
    /// Requests (watches aside) one user may have open at once.
    pub requests_per_user: usize,
    /// Watches one user may have open at once.
    pub watches_per_user: usize,
    /// The request line's path and query, in bytes.
    pub max_url_bytes: usize,
    /// A request's header section, in bytes (Go's and the apiserver's
    /// default: 1 MiB).
    pub max_header_bytes: usize,
    /// A forwarded request's body (the apiserver's limit: 3 MiB).
    pub max_body_bytes: u64,
    /// Open connections at most; `None`: derived from the open-files and
    /// memory limits (see `listener::max_connections_for`).
    pub max_connections: Option<usize>,
    /// An HTTP/1 request's headers must arrive within this (32 s, the
    /// apiserver's `ReadHeaderTimeout`).
    pub header_read_timeout: std::time::Duration,
    /// A connection with nothing in flight is closed after this (90 s, the
    /// apiserver's `IdleTimeout`).
    pub idle_timeout: std::time::Duration,
    /// The bytes of cache-made answers that may be in flight to clients;
    /// `None`: a quarter of the memory limit (cgroup), else 1 GiB.
    pub max_bytes_in_flight: Option<usize>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            // The apiserver's --max-requests-inflight, for one user.
            requests_per_user: 400,
            watches_per_user: 1000,
            // hyper refuses longer request targets itself (414).
            max_url_bytes: 64 * 1024,
            max_header_bytes: 1 << 20,
            max_body_bytes: 3 * 1024 * 1024,
            max_connections: None,
            header_read_timeout: std::time::Duration::from_secs(32),
            idle_timeout: std::time::Duration::from_secs(90),
            max_bytes_in_flight: None,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LimitError {
    #[error("{user:?} has {limit} requests open")]
    TooManyRequests { user: String, limit: usize },
    #[error("{user:?} has {limit} watches open")]
    TooManyWatches { user: String, limit: usize },
    #[error("the request's URI is {len} bytes, over {limit}")]
    UriTooLong { len: usize, limit: usize },
    #[error("the request's body is {len} bytes, over {limit}")]
    BodyTooLarge { len: u64, limit: u64 },
    #[error("answers of {used} bytes are in flight; {wanted} more would pass {limit}")]
    BytesInFlight {
        used: usize,
        wanted: usize,
        limit: usize,
    },
}

#[derive(Default)]
struct Open {
    requests: AtomicUsize,
    watches: AtomicUsize,
}

/// The open requests and watches of every user with any.
pub struct Limits {
    pub config: LimitsConfig,
    open: DashMap<String, Arc<Open>>,
    /// What the cache's answers hold while their clients read them.
    pub in_flight: Arc<BytesInFlight>,
}

/// A request's place among its user's open ones, given back when dropped.
pub struct Slot {
    limits: Arc<Limits>,
    user: String,
    open: Arc<Open>,
    watch: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.counter().fetch_sub(1, Ordering::AcqRel);
        // Forget users with nothing open, so the map holds only users
        // with requests in flight.
        self.limits.open.remove_if(&self.user, |_, o| {
            o.requests.load(Ordering::Acquire) == 0 && o.watches.load(Ordering::Acquire) == 0
        });
    }
}

impl Slot {
    fn counter(&self) -> &AtomicUsize {
        if self.watch {
            &self.open.watches
        } else {
            &self.open.requests
        }
    }
}

impl Limits {
    pub fn new(config: LimitsConfig) -> Arc<Limits> {
        let budget = config
            .max_bytes_in_flight
            .unwrap_or_else(default_bytes_in_flight);
        Arc::new(Limits {
            config,
            open: DashMap::new(),
            in_flight: BytesInFlight::new(budget),
        })
    }

    /// Checks what can be checked before the request is authenticated:
    /// its URI's length and its declared body's size.
    pub fn check_size(
        &self,
        request: &Request,
        content_length: Option<u64>,
    ) -> Result<(), LimitError> {
        let len = request.request_uri.len();
        if len > self.config.max_url_bytes {
            return Err(LimitError::UriTooLong {
                len,
                limit: self.config.max_url_bytes,
            });
        }
        match content_length {
            Some(len) if len > self.config.max_body_bytes => Err(LimitError::BodyTooLarge {
                len,
                limit: self.config.max_body_bytes,
            }),
            _ => Ok(()),
        }
    }

    /// A slot for the request among its user's open ones, if there is
    /// room; none needed for a request served as kubecache itself.
    pub fn admit(self: &Arc<Self>, request: &Request) -> Result<Option<Slot>, LimitError> {
        let user = match &request.identity {
            Identity::Client(c) => c.user.name.clone(),
            _ => return Ok(None),
        };
        let watch = request.verb == Verb::Watch;
        let limit = if watch {
            self.config.watches_per_user
        } else {
            self.config.requests_per_user
        };
        // Counted first, then checked: two racing for the last place
        // cannot both get it. Counted while the map's entry is held, so
        // that a slot given back meanwhile cannot forget the user between
        // finding its counts and counting this one.
        let entry = self.open.entry(user.clone()).or_default();
        let counter = if watch {
            &entry.watches
        } else {
            &entry.requests
        };
        let before = counter.fetch_add(1, Ordering::AcqRel);
        let open = entry.clone();
        drop(entry);
        let slot = Slot {
            limits: self.clone(),
            user,
            open,
            watch,
        };
        if before >= limit {
            let user = slot.user.clone();
            drop(slot);
            return Err(if watch {
                LimitError::TooManyWatches { user, limit }
            } else {
                LimitError::TooManyRequests { user, limit }
            });
        }
        Ok(Some(slot))
    }

    /// How many users have anything open (for tests and metrics).
    pub fn users_open(&self) -> usize {
        self.open.len()
    }
}

/// A quarter of the container's memory limit (cgroup v2, else v1), else
/// 1 GiB: with `deploy/`'s 4 GiB, 1 GiB.
pub fn default_bytes_in_flight() -> usize {
    const GIB: usize = 1 << 30;
    memory_limit().map_or(GIB, |limit| (limit / 4).max(64 << 20))
}

/// The cgroup's memory limit, if it has one.
pub fn memory_limit() -> Option<usize> {
    [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .find_map(|s| s.trim().parse::<u64>().ok())
    // v1 writes "no limit" as a huge number.
    .filter(|n| *n < 1 << 60)
    .and_then(|n| usize::try_from(n).ok())
}

/// The bytes of the cache's answers in flight to clients, within a limit.
/// An answer's bytes are counted once per allocation while anyone reads
/// them: a list kept for many clients counts once.
pub struct BytesInFlight {
    limit: usize,
    used: AtomicUsize,
    /// Allocations being read (by their address): their length and readers.
    held: DashMap<usize, (usize, usize)>,
}

/// Room taken for a body being built, given back when dropped.
pub struct Reservation {
    budget: Arc<BytesInFlight>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// A reader of an answer's bytes, counted while it lives.
pub struct Reader {
    budget: Arc<BytesInFlight>,
    at: usize,
}

impl Drop for Reader {
    fn drop(&mut self) {
        let gone = self.budget.held.remove_if_mut(&self.at, |_, (_, readers)| {
            *readers -= 1;
            *readers == 0
        });
        if let Some((_, (len, _))) = gone {
            self.budget.used.fetch_sub(len, Ordering::AcqRel);
        }
    }
}

impl BytesInFlight {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(BytesInFlight {
            limit,
            used: AtomicUsize::new(0),
            held: DashMap::new(),
        })
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Room for a body of about `bytes` about to be built, if there is.
    pub fn reserve(self: &Arc<Self>, bytes: usize) -> Result<Reservation, LimitError> {
        let limit = self.limit;
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u.saturating_add(bytes) <= limit).then_some(u + bytes)
            })
            .map_err(|used| LimitError::BytesInFlight {
                used,
                wanted: bytes,
                limit,
            })?;
        Ok(Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    /// Counts `bytes` (once per allocation) until the reader is dropped.
    /// Never refused: they exist already, and were reserved when built.
    pub fn read(self: &Arc<Self>, bytes: &bytes::Bytes) -> Reader {
        let at = bytes.as_ptr() as usize;
        let mut entry = self.held.entry(at).or_insert((bytes.len(), 0));
        if entry.1 == 0 {
            self.used.fetch_add(bytes.len(), Ordering::AcqRel);
        }
        entry.1 += 1;
        drop(entry);
        Reader {
            budget: self.clone(),
            at,
        }
    }
}

/// The answer, holding `slot` until its body is done.
pub fn hold(resp: http::Response<Body>, slot: Slot) -> http::Response<Body> {
    resp.map(|b| body::holding(b, slot))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Client, UserInfo, Via};

    fn request(path: &str, user: &str) -> Request {
        let mut r = Request::parse(
            &http::Method::GET,
            &path.parse().unwrap(),
            &http::HeaderMap::new(),
        );
        let u = UserInfo::authenticated(user.into(), String::new(), vec![]);
        r.identity = Identity::Client(Arc::new(Client {
            user: u.clone(),
            acting_as: u,
            via: Via::Token,
        }));
        r
    }

    #[test]
    fn each_user_has_its_own_room_for_requests_and_for_watches() {
        let limits = Limits::new(LimitsConfig {
            requests_per_user: 2,
            watches_per_user: 1,
            ..LimitsConfig::default()
        });
        let list = request("/api/v1/pods", "alice");
        let watch = request("/api/v1/pods?watch=1", "alice");
        let a = limits.admit(&list).unwrap();
        let b = limits.admit(&list).unwrap();
        assert!(a.is_some() && b.is_some());
        assert_eq!(
            limits.admit(&list).err(),
            Some(LimitError::TooManyRequests {
                user: "alice".into(),
                limit: 2
            })
        );
        let w = limits.admit(&watch).unwrap();
        assert!(matches!(
            limits.admit(&watch),
            Err(LimitError::TooManyWatches { .. })
        ));
        // Another user is not held back by alice.
        let bob = limits
            .admit(&request("/api/v1/pods?watch=1", "bob"))
            .unwrap();
        drop(a);
        let c = limits.admit(&list).unwrap();
        drop((b, c, w, bob));
        assert_eq!(
            limits.users_open(),
            0,
            "users with nothing open are forgotten"
        );
    }

    #[test]
    fn long_uris_and_large_declared_bodies_are_refused_before_anything_else() {
        let limits = Limits::new(LimitsConfig {
            max_url_bytes: 20,
            max_body_bytes: 10,
            ..LimitsConfig::default()
        });
        let long = request("/api/v1/pods?labelSelector=a", "u");
        assert_eq!(
            limits.check_size(&long, None),
            Err(LimitError::UriTooLong { len: 28, limit: 20 })
        );
        let short = request("/api/v1/pods", "u");
        assert_eq!(limits.check_size(&short, Some(10)), Ok(()));
        assert_eq!(
            limits.check_size(&short, Some(11)),
            Err(LimitError::BodyTooLarge { len: 11, limit: 10 })
        );
    }
}
