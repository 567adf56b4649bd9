//! What serving shares across requests: the cache, the upstream client
//! forwarded requests go through, and the settings they are decided by
//! (consistent reads, authentication and authorization).

use super::auth::AuthConfig;
use crate::cache::Cache;
use crate::upstream::Upstream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// How consistent (RV-unset) reads are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsistentReads {
    /// Forward them: always correct.
    #[default]
    Forward,
    /// Serve them from a synced cache: not linearizable (opt-in, dashboards).
    ServeStale,
}

pub struct ServeState {
    pub cache: Arc<Cache>,
    /// The client forwarded requests go through (its connections run on
    /// the serving runtime, unlike the cache's).
    pub forward: Arc<Upstream>,
    pub consistent: ConsistentReads,
    pub auth: AuthConfig,
    pub shutting_down: AtomicBool,
    pub prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
}
