//! `kubecache serve`: its flags (each also a `KUBECACHE_*` variable and a
//! config file key; a flag wins over the environment, which wins over the
//! file) and the proxy's start: metrics, the cache (its snapshot
//! restored), discovery and eager types, then serving until SIGTERM, and a
//! snapshot written on the way out.

use super::{listen, shutdown_signal};
use crate::{blocking_threads, init_tracing, malloc, runtime, CliError};
use kubecache::cache::Cache;
use kubecache::config::{ConfigError, FileConfig, LogFormat, ServeConfig};
use kubecache::serve::auth::AuthMode;
use kubecache::serve::{self, ConsistentReads, ServeState};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// The apiserver's URL (http:// with no credentials works). Without it
    /// or --kubeconfig: KUBECONFIG's files, else ~/.kube/config, else the
    /// pod's service account, as client-go tools do.
    #[arg(long, env = "KUBECACHE_UPSTREAM")]
    upstream: Option<String>,
    /// A kubeconfig file, read alone (KUBECONFIG is not merged in).
    #[arg(long, env = "KUBECACHE_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of its current-context.
    #[arg(long, env = "KUBECACHE_CONTEXT")]
    context: Option<String>,
    /// The kubeconfig cluster to use instead of the context's.
    #[arg(long, env = "KUBECACHE_CLUSTER")]
    cluster: Option<String>,
    /// The kubeconfig user to use instead of the context's.
    #[arg(long, env = "KUBECACHE_USER")]
    user: Option<String>,
    /// A bearer token file for --upstream.
    #[arg(long, env = "KUBECACHE_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// A CA bundle for an https --upstream.
    #[arg(long, env = "KUBECACHE_CA_FILE")]
    ca_file: Option<PathBuf>,
    /// A client certificate (PEM) for an https --upstream, with --client-key.
    #[arg(long, env = "KUBECACHE_CLIENT_CERT")]
    client_cert: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, env = "KUBECACHE_CLIENT_KEY")]
    client_key: Option<PathBuf>,
    /// Address to listen on (default 127.0.0.1:8001).
    #[arg(long, env = "KUBECACHE_LISTEN")]
    listen: Option<String>,
    /// A YAML config file; flags override it.
    #[arg(long, env = "KUBECACHE_CONFIG")]
    config: Option<PathBuf>,
    /// prove (default): answered from the cache once it is proven to hold
    /// every write committed before the read, else forwarded; forward:
    /// always forwarded; serve-stale: answered from a synced cache
    /// unproven (not linearizable).
    #[arg(long, env = "KUBECACHE_CONSISTENT_READS", value_parser = ["prove", "forward", "serve-stale"])]
    consistent_reads: Option<String>,
    /// trust-local: every client served with kubecache's own identity, as
    /// kubectl proxy does (loopback addresses only; the default there).
    /// authorize: every client authenticated (its token reviewed upstream,
    /// or its certificate), every cached read authorized upstream, and
    /// everything forwarded with the client's own identity (the default
    /// on any other address; needs an https upstream, and TLS off
    /// loopback).
    #[arg(long, env = "KUBECACHE_AUTH_MODE", value_parser = ["trust-local", "authorize"])]
    auth_mode: Option<String>,
    /// authorize: verify client certificates against this CA bundle (PEM);
    /// the common name is the user, the organizations its groups.
    #[arg(long, env = "KUBECACHE_CLIENT_CA_FILE")]
    client_ca_file: Option<PathBuf>,
    /// authorize: serve requests without credentials as system:anonymous
    /// (true, the apiserver's default) or answer them 401 (false).
    #[arg(long, env = "KUBECACHE_ANONYMOUS_AUTH", num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    anonymous_auth: Option<bool>,
    /// authorize: the audiences a client's token must be for, comma
    /// separated (default: the upstream's own).
    #[arg(
        long,
        env = "KUBECACHE_AUTHENTICATION_TOKEN_AUDIENCES",
        value_delimiter = ','
    )]
    authentication_token_audiences: Vec<String>,
    /// authorize: how long a token review is kept (default 2m).
    #[arg(long, env = "KUBECACHE_AUTHENTICATION_TOKEN_WEBHOOK_CACHE_TTL")]
    authentication_token_webhook_cache_ttl: Option<String>,
    /// authorize: how long an allowed decision is kept (default 5m).
    #[arg(long, env = "KUBECACHE_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL")]
    authorization_webhook_cache_authorized_ttl: Option<String>,
    /// authorize: how long a refusal is kept (default 30s).
    #[arg(long, env = "KUBECACHE_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL")]
    authorization_webhook_cache_unauthorized_ttl: Option<String>,
    /// Requests (watches aside) one user may have open at once; more get
    /// 429 with Retry-After (default 400).
    #[arg(long, env = "KUBECACHE_MAX_REQUESTS_PER_USER")]
    max_requests_per_user: Option<usize>,
    /// Watches one user may have open at once; more get 429 (default 1000).
    #[arg(long, env = "KUBECACHE_MAX_WATCHES_PER_USER")]
    max_watches_per_user: Option<usize>,
    /// The longest request path and query in bytes; longer get 414
    /// (default 65536).
    #[arg(long, env = "KUBECACHE_MAX_URL_BYTES")]
    max_url_bytes: Option<usize>,
    /// The largest request header section in bytes; larger get 431
    /// (default 1048576, Go's).
    #[arg(long, env = "KUBECACHE_MAX_REQUEST_HEADER_BYTES")]
    max_request_header_bytes: Option<usize>,
    /// The largest forwarded request body in bytes; larger get 413
    /// (default 3145728, the apiserver's).
    #[arg(long, env = "KUBECACHE_MAX_REQUEST_BODY_BYTES")]
    max_request_body_bytes: Option<u64>,
    /// Open connections at most; past it idle ones are closed and new ones
    /// wait (default: an eighth below the open-files limit, and what an
    /// eighth of the container's memory limit holds at 32 KiB each).
    #[arg(long, env = "KUBECACHE_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Bytes of answers made by the cache that may be in flight to clients
    /// at once; a list that would pass it gets 429 (default: a quarter of
    /// the container's memory limit, else 1 GiB).
    #[arg(long, env = "KUBECACHE_MAX_BYTES_IN_FLIGHT")]
    max_bytes_in_flight: Option<usize>,
    /// An HTTP/1 request's headers must arrive within this (default 32s).
    #[arg(long, env = "KUBECACHE_REQUEST_HEADER_TIMEOUT")]
    request_header_timeout: Option<String>,
    /// A connection with nothing in flight is closed after this
    /// (default 90s).
    #[arg(long, env = "KUBECACHE_CONNECTION_IDLE_TIMEOUT")]
    connection_idle_timeout: Option<String>,
    /// After SIGTERM, keep accepting this long with /readyz failing, so
    /// that load balancers stop sending first (default 5s; 0s when
    /// listening on loopback).
    #[arg(long, env = "KUBECACHE_SHUTDOWN_DELAY_DURATION")]
    shutdown_delay_duration: Option<String>,
    /// How often each cached type is compared with the upstream at the
    /// cache's resourceVersion, relisting on a difference (default 5m;
    /// 0s turns it off).
    #[arg(long, env = "KUBECACHE_CONSISTENCY_CHECK_INTERVAL")]
    consistency_check_interval: Option<String>,
    /// Whether the reflectors ask for gzipped lists (as client-go does) and
    /// an upstream kubecache (a chain) for gzipped watch streams (default
    /// true; an apiserver ignores the watch's ask).
    #[arg(long, env = "KUBECACHE_UPSTREAM_GZIP", num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    upstream_gzip: Option<bool>,
    /// The objects' bytes all types together may cache; a type that would
    /// pass it is forwarded instead (default: a quarter of the container's
    /// memory limit, else none).
    #[arg(long, env = "KUBECACHE_MAX_CACHE_BYTES")]
    max_cache_bytes: Option<usize>,
    /// The objects' bytes one type may cache (default: no limit of its own).
    #[arg(long, env = "KUBECACHE_MAX_TYPE_CACHE_BYTES")]
    max_type_cache_bytes: Option<usize>,
    /// The bytes kept list bodies and gzip pieces may hold together
    /// (default: a sixteenth of the container's memory limit, at least
    /// 16 MiB, else 256 MiB).
    #[arg(long, env = "KUBECACHE_MAX_KEPT_BODY_BYTES")]
    max_kept_body_bytes: Option<usize>,
    /// A type nobody reads or watches for this long is let go; the next
    /// read starts it again (default 1h; 0s: never).
    #[arg(long, env = "KUBECACHE_CACHE_IDLE_TIMEOUT")]
    cache_idle_timeout: Option<String>,
    /// trust-local: pass on pods' exec and attach (refused otherwise, as
    /// kubectl proxy refuses them).
    #[arg(long, env = "KUBECACHE_ALLOW_EXEC")]
    allow_exec: bool,
    /// Persist each cached type and the discovery documents here, and
    /// restore them on start (edge autonomy; made if missing).
    #[arg(long, env = "KUBECACHE_SNAPSHOT_DIR")]
    snapshot_dir: Option<PathBuf>,
    /// How often what changed is written to the snapshot (default 30s).
    #[arg(long, env = "KUBECACHE_SNAPSHOT_INTERVAL")]
    snapshot_interval: Option<String>,
    /// While the upstream is unreachable, answer reads (discovery, and
    /// reads that would need it to be current) from the last known state,
    /// each with a Warning header.
    #[arg(long, env = "KUBECACHE_SERVE_STALE_WHEN_OFFLINE")]
    serve_stale_when_offline: bool,
    /// Types to cache from the start (readiness waits for them), comma
    /// separated: `v1/pods,apps/v1/deployments`.
    #[arg(long, env = "KUBECACHE_EAGER", value_delimiter = ',')]
    eager: Vec<String>,
    /// Events each type's history keeps for watches and reads in the past
    /// (default 102400, the apiserver's cacher's).
    #[arg(long, env = "KUBECACHE_HISTORY_CAPACITY")]
    history_capacity: Option<usize>,
    /// Seconds of events the history keeps beyond its last 100 (default 75).
    #[arg(long, env = "KUBECACHE_HISTORY_WINDOW_SECONDS")]
    history_window_seconds: Option<u64>,
    /// Seconds open connections have to finish after the shutdown delay;
    /// watches end at its start (default 30).
    #[arg(long, env = "KUBECACHE_DRAIN_SECONDS")]
    drain_seconds: Option<u64>,
    /// authorize: token reviews kept at most, and as many decisions
    /// (default 10000).
    #[arg(long, env = "KUBECACHE_REVIEW_CACHE_ENTRIES")]
    review_cache_entries: Option<u64>,
    /// authorize: token reviews asked of the upstream at once; a token that
    /// finds none free within a second gets 429 (default 64).
    #[arg(long, env = "KUBECACHE_MAX_TOKEN_REVIEWS_IN_FLIGHT")]
    max_token_reviews_in_flight: Option<usize>,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1) with this certificate, PEM (the
    /// server's first, then its chain); reloaded when the file changes.
    #[arg(long, env = "KUBECACHE_TLS_CERT_FILE")]
    tls_cert_file: Option<PathBuf>,
    /// The serving certificate's private key, PEM.
    #[arg(long, env = "KUBECACHE_TLS_PRIVATE_KEY_FILE")]
    tls_private_key_file: Option<PathBuf>,
}

impl ServeArgs {
    fn into_config(self) -> Result<ServeConfig, ConfigError> {
        let mut file = match &self.config {
            Some(p) => FileConfig::load(p)?,
            None => FileConfig::default(),
        };
        if self.upstream.is_some() && self.kubeconfig.is_some() {
            return Err(ConfigError::Invalid(
                "give either --upstream or --kubeconfig, not both".into(),
            ));
        }
        // A flag that says where the upstream is sets aside the file's
        // upstream, and what went with it.
        if self.upstream.is_some() {
            file.upstream = self.upstream;
            file.kubeconfig = None;
            (file.context, file.cluster, file.user) = (None, None, None);
        }
        if self.kubeconfig.is_some() {
            file.kubeconfig = self.kubeconfig;
            file.upstream = None;
            (file.token_file, file.ca_file) = (None, None);
            (file.client_cert_file, file.client_key_file) = (None, None);
        }
        file.context = self.context.or(file.context);
        file.cluster = self.cluster.or(file.cluster);
        file.user = self.user.or(file.user);
        file.token_file = self.token_file.or(file.token_file);
        file.ca_file = self.ca_file.or(file.ca_file);
        file.client_cert_file = self.client_cert.or(file.client_cert_file);
        file.client_key_file = self.client_key.or(file.client_key_file);
        file.listen = self.listen.or(file.listen);
        if let Some(c) = self.consistent_reads {
            file.consistent_reads = Some(match c.as_str() {
                "serve-stale" => ConsistentReads::ServeStale,
                "forward" => ConsistentReads::Forward,
                _ => ConsistentReads::Prove,
            });
        }
        if let Some(m) = self.auth_mode {
            file.auth_mode = Some(if m == "authorize" {
                AuthMode::Authorize
            } else {
                AuthMode::TrustLocal
            });
        }
        if self.allow_exec {
            file.allow_exec = Some(true);
        }
        file.client_ca_file = self.client_ca_file.or(file.client_ca_file);
        file.anonymous_auth = self.anonymous_auth.or(file.anonymous_auth);
        if !self.authentication_token_audiences.is_empty() {
            file.authentication_token_audiences = self.authentication_token_audiences;
        }
        file.authentication_token_cache_ttl = self
            .authentication_token_webhook_cache_ttl
            .or(file.authentication_token_cache_ttl);
        file.authorization_cache_authorized_ttl = self
            .authorization_webhook_cache_authorized_ttl
            .or(file.authorization_cache_authorized_ttl);
        file.authorization_cache_unauthorized_ttl = self
            .authorization_webhook_cache_unauthorized_ttl
            .or(file.authorization_cache_unauthorized_ttl);
        file.max_requests_per_user = self.max_requests_per_user.or(file.max_requests_per_user);
        file.max_watches_per_user = self.max_watches_per_user.or(file.max_watches_per_user);
        file.max_url_bytes = self.max_url_bytes.or(file.max_url_bytes);
        file.max_request_header_bytes = self
            .max_request_header_bytes
            .or(file.max_request_header_bytes);
        file.max_request_body_bytes = self.max_request_body_bytes.or(file.max_request_body_bytes);
        file.max_connections = self.max_connections.or(file.max_connections);
        file.max_bytes_in_flight = self.max_bytes_in_flight.or(file.max_bytes_in_flight);
        file.request_header_timeout = self.request_header_timeout.or(file.request_header_timeout);
        file.connection_idle_timeout = self
            .connection_idle_timeout
            .or(file.connection_idle_timeout);
        file.shutdown_delay_duration = self
            .shutdown_delay_duration
            .or(file.shutdown_delay_duration);
        file.consistency_check_interval = self
            .consistency_check_interval
            .or(file.consistency_check_interval);
        file.upstream_gzip = self.upstream_gzip.or(file.upstream_gzip);
        file.max_cache_bytes = self.max_cache_bytes.or(file.max_cache_bytes);
        file.max_type_cache_bytes = self.max_type_cache_bytes.or(file.max_type_cache_bytes);
        file.max_kept_body_bytes = self.max_kept_body_bytes.or(file.max_kept_body_bytes);
        file.cache_idle_timeout = self.cache_idle_timeout.or(file.cache_idle_timeout);
        file.snapshot_dir = self.snapshot_dir.or(file.snapshot_dir);
        if !self.eager.is_empty() {
            file.eager = self.eager;
        }
        file.history_capacity = self.history_capacity.or(file.history_capacity);
        file.history_window_seconds = self.history_window_seconds.or(file.history_window_seconds);
        file.drain_seconds = self.drain_seconds.or(file.drain_seconds);
        file.review_cache_entries = self.review_cache_entries.or(file.review_cache_entries);
        file.max_token_reviews_in_flight = self
            .max_token_reviews_in_flight
            .or(file.max_token_reviews_in_flight);
        file.snapshot_interval = self.snapshot_interval.or(file.snapshot_interval);
        if self.serve_stale_when_offline {
            file.serve_stale_when_offline = Some(true);
        }
        file.tls_cert_file = self.tls_cert_file.or(file.tls_cert_file);
        file.tls_private_key_file = self.tls_private_key_file.or(file.tls_private_key_file);
        file.into_serve()
    }
}

/// Validates the configuration (before anything is bound), then serves.
pub fn run(
    args: ServeArgs,
    log_format: Option<LogFormat>,
    arenas_limited: bool,
) -> Result<(), CliError> {
    let cfg = args.into_config()?;
    init_tracing(log_format.or(cfg.log_format).unwrap_or_default());
    tracing::info!(target: "kubecache",
        version = env!("CARGO_PKG_VERSION"),
        malloc_arenas = %if arenas_limited {
            malloc::ARENAS.to_string()
        } else {
            "as the environment sets".to_string()
        },
        blocking_threads = blocking_threads(),
        "kubecache starting"
    );
    runtime().block_on(run_serve(cfg, |_| {}))
}

/// Serves `cfg` until a shutdown signal; `bound_to` hears the address.
pub(crate) async fn run_serve(
    cfg: ServeConfig,
    bound_to: impl FnOnce(SocketAddr),
) -> Result<(), CliError> {
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Full(
                kubecache::metrics::APISERVER_REQUEST_DURATION_SECONDS.into(),
            ),
            &kubecache::metrics::REQUEST_DURATION_BUCKETS,
        )
        .map_err(CliError::Metrics)?
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Full(
                kubecache::metrics::KUBECACHE_FRESHNESS_PROOF_DURATION_SECONDS.into(),
            ),
            &kubecache::metrics::PROOF_DURATION_BUCKETS,
        )
        .map_err(CliError::Metrics)?
        .install_recorder()
        .map_err(CliError::Metrics)?;
    kubecache::metrics::describe();
    let (listener, bound) = listen(cfg.listen).await?;
    // One pool of body buffers for the process.
    kubecache::encode::recycle::set_idle_limit(kubecache::encode::recycle::default_idle_limit(
        kubecache::serve::limits::memory_limit(),
    ));
    let cache = Cache::new(
        &cfg.upstream,
        cfg.history,
        cfg.reflector,
        cfg.cache,
        cfg.edge.clone(),
        kubecache::freshness::FreshnessConfig::default(),
    )
    .map_err(CliError::Cache)?;
    {
        let cache = cache.clone();
        // File reads, before any request: what a snapshot restores is
        // there from the first one.
        let _ = tokio::task::spawn_blocking(move || cache.restore_snapshot()).await;
    }
    if let Err(e) = cache.refresh_discovery().await {
        tracing::warn!(target: "kubecache", error = %e, "initial discovery failed; requests are forwarded until it succeeds");
    }
    let discovery = cache.discovery();
    for gvr in &cfg.eager {
        match discovery.get(gvr) {
            Some(rt) => {
                cache.start_eager(rt);
            }
            None => {
                tracing::warn!(target: "kubecache", resource = %gvr, "eager type not served by the upstream")
            }
        }
    }
    let auth_mode = cfg.auth.mode;
    let state = ServeState::new(
        cache,
        &cfg.upstream,
        cfg.consistent_reads,
        cfg.auth,
        cfg.limits,
        Some(prometheus),
    )
    .map_err(CliError::Upstream)?;
    let state = Arc::new(state);
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    tracing::info!(target: "kubecache", listen = %bound, %scheme, auth_mode = auth_mode.as_str(), upstream = %cfg.upstream.url, "kubecache serving");
    bound_to(bound);
    let stop = serve::Stop {
        delay: cfg.shutdown_delay,
        drain: cfg.drain,
    };
    let cache = state.cache.clone();
    serve::run(listener, cfg.tls, state, shutdown_signal(), stop).await;
    // The last state, for the next start.
    cache.write_snapshot().await;
    Ok(())
}
