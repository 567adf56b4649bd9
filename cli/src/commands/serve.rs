//! `kubecache serve`: its flags (each also a `KUBECACHE_*` variable and a
//! config file key; a flag wins over the environment, which wins over the
//! file) and the proxy's start: metrics, the cache (its snapshot
//! restored), discovery and eager types, then serving until SIGTERM, and a
//! snapshot written on the way out.

use super::{listen, shutdown_signal};
use crate::{blocking_threads, init_tracing, malloc, runtime, CliError};
use kubecache::cache::Cache;
use kubecache::config::{ConfigError, LogFormat, ServeConfig, Settings};
use kubecache::serve::{self, ServeState};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// `serve`'s flags: the config file, and every setting
/// ([`Settings`], where each is declared).
#[derive(clap::Args)]
pub struct ServeArgs {
    /// A YAML config file; flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    settings: Settings,
}

/// Every flag of `serve` is also an environment variable: `KUBECACHE_` and
/// the flag in upper snake case (`--max-cache-bytes`:
/// `KUBECACHE_MAX_CACHE_BYTES`). A flag wins over its variable.
pub(crate) fn with_environment(serve: clap::Command) -> clap::Command {
    serve.mut_args(|arg| match arg.get_long() {
        Some(long) => {
            let var = format!("KUBECACHE_{}", long.replace('-', "_").to_uppercase());
            arg.env(var)
        }
        None => arg,
    })
}

impl ServeArgs {
    fn into_config(self) -> Result<ServeConfig, ConfigError> {
        let file = match &self.config {
            Some(p) => Settings::load(p)?,
            None => Settings::default(),
        };
        self.settings.over_file(file)?.into_serve()
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
