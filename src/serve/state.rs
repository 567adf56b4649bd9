//! What serving shares across requests: the cache, the upstream client
//! forwarded requests go through, and the settings they are decided by
//! (consistent reads, authentication and authorization).

use super::auth::{AuthConfig, AuthMode};
use super::limits::{Limits, LimitsConfig};
use crate::access::Access;
use crate::cache::Cache;
use crate::upstream::auth::Credentials;
use crate::upstream::{Upstream, UpstreamConfig, UpstreamError};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// How consistent (RV-unset) reads are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ConsistentReads {
    /// Answered from the cache once it is proven to hold every write
    /// committed before they arrived, else forwarded.
    #[default]
    Prove,
    /// Always forwarded.
    Forward,
    /// Answered from a synced cache unproven: not linearizable (opt-in,
    /// for dashboards).
    ServeStale,
}

pub struct ServeState {
    pub cache: Arc<Cache>,
    /// The client forwarded requests go through (its connections run on
    /// the serving runtime, unlike the cache's).
    pub forward: Arc<Upstream>,
    /// authorize mode: the same upstream without kubecache's credentials,
    /// which requests forwarded with a client's own go through.
    pub forward_as_client: Option<Arc<Upstream>>,
    pub consistent: ConsistentReads,
    pub auth: AuthConfig,
    /// authorize mode: the upstream's reviews of clients.
    pub access: Option<Arc<Access>>,
    /// What each user and each request may take.
    pub limits: Arc<Limits>,
    pub shutting_down: AtomicBool,
    /// Started when kubecache stops accepting: watches end then.
    pub drain: super::listener::Drain,
    pub prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// Consistent reads forwarded together (`coalesce`).
    pub coalesced: Arc<super::coalesce::Flights>,
}

/// How a type's consistent reads are answered now, and why: the
/// setting's word, or under `prove` the type's proof (`freshness`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsistentMode {
    /// `events`, `bookmarks`, `forwarded` (under prove), `forward` or
    /// `serve-stale`.
    pub name: &'static str,
    pub why: String,
}

impl ConsistentReads {
    pub fn as_str(self) -> &'static str {
        match self {
            ConsistentReads::Prove => "prove",
            ConsistentReads::Forward => "forward",
            ConsistentReads::ServeStale => "serve-stale",
        }
    }
}

impl ServeState {
    /// How `tc`'s consistent reads are answered now, and why.
    pub fn consistent_mode(&self, tc: &crate::cache::TypeCache) -> ConsistentMode {
        match self.consistent {
            ConsistentReads::Prove => {
                let m = tc.freshness_mode();
                ConsistentMode {
                    name: m.name,
                    why: m.why,
                }
            }
            ConsistentReads::Forward => ConsistentMode {
                name: "forward",
                why: "consistentReads: forward sends every one upstream".into(),
            },
            ConsistentReads::ServeStale => ConsistentMode {
                name: "serve-stale",
                why: "consistentReads: serve-stale answers them from the synced cache, unproven"
                    .into(),
            },
        }
    }

    /// Whose representations kubecache's own follow, and why, in a line.
    pub fn representations(&self) -> String {
        use crate::encode::personality::Fit;
        let v = self.cache.freshness().version();
        let (p, fit) = v.personality();
        let line = match (v.known(), fit) {
            (None, _) => format!("{p}: the upstream's version is not read yet"),
            (Some(k), Fit::Known) => format!("{p}: the upstream's release ({})", k.version),
            (Some(k), Fit::Newer) => format!(
                "{p}, the newest kubecache knows: the upstream ({}) is newer",
                k.version
            ),
            (Some(k), Fit::Older) => format!(
                "{p}, the oldest kubecache follows: the upstream ({}) is older",
                k.version
            ),
        };
        line
    }

    /// What kubecache knows of its upstream and what it can prove, in a
    /// line.
    pub fn upstream_consistency(&self) -> String {
        let f = self.cache.freshness();
        let version = match f.version().known() {
            Some(k) => k.version.to_string(),
            None => "version not read yet".into(),
        };
        let c = f.version().consistency();
        let proves = if c.fresh_bookmarks {
            "busy types proven by their events, quiet ones by bookmarks"
        } else {
            "busy types proven by their events, quiet ones forwarded (shared)"
        };
        match self.consistent {
            ConsistentReads::Prove => format!("prove; upstream {version}: {proves}"),
            other => format!("{}; upstream {version}", other.as_str()),
        }
    }

    /// What serving shares, its upstream clients made from `upstream`: in
    /// authorize mode, also one presenting none of kubecache's credentials
    /// (for requests forwarded with a client's own) and the reviews.
    pub fn new(
        cache: Arc<Cache>,
        upstream: &UpstreamConfig,
        consistent: ConsistentReads,
        auth: AuthConfig,
        limits: LimitsConfig,
        prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
    ) -> Result<ServeState, UpstreamError> {
        let forward = Upstream::new(upstream)?;
        let (forward_as_client, access) = match auth.mode {
            AuthMode::TrustLocal => (None, None),
            AuthMode::Authorize => {
                let bare = UpstreamConfig {
                    credentials: Credentials::default(),
                    ..upstream.clone()
                };
                let access = Access::new(forward.clone(), auth.access.clone());
                (Some(Upstream::new(&bare)?), Some(Arc::new(access)))
            }
        };
        Ok(ServeState {
            cache,
            forward,
            forward_as_client,
            consistent,
            auth,
            access,
            limits: Limits::new(limits),
            shutting_down: AtomicBool::new(false),
            drain: Default::default(),
            prometheus,
            coalesced: super::coalesce::flights(),
        })
    }
}
