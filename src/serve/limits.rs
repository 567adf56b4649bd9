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
    /// Open connections at most; `None`: derived from the open-files
    /// limit (see `listener::max_connections_for`).
    pub max_connections: Option<usize>,
    /// An HTTP/1 request's headers must arrive within this (32 s, the
    /// apiserver's `ReadHeaderTimeout`).
    pub header_read_timeout: std::time::Duration,
    /// A connection with nothing in flight is closed after this (90 s, the
    /// apiserver's `IdleTimeout`).
    pub idle_timeout: std::time::Duration,
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
        Arc::new(Limits {
            config,
            open: DashMap::new(),
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
