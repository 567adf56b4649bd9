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
pub enum ConsistentReads {
    /// Answer them from the cache once it is proven to hold every write
    /// committed before they arrived (`freshness`), else forward them.
    #[default]
    Prove,
    /// Forward them all.
    Forward,
    /// Serve them from a synced cache: not linearizable (opt-in, dashboards).
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

impl ServeState {
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
