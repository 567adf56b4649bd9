//! The `kubecache` command: `serve` (the proxy in front of an apiserver),
//! `sim` (the simulated apiserver) and `demo` (both, the proxy in front of
//! the simulator). Flags and configuration are validated before anything
//! is bound; a bad one exits 64 with one line saying why.

mod malloc;

use clap::{Parser, Subcommand};
use kubecache::cache::Cache;
use kubecache::cache::CacheError;
use kubecache::config::{ConfigError, FileConfig, LogFormat, ServeConfig};
use kubecache::serve::auth::AuthMode;
use kubecache::serve::{self, ConsistentReads, ServeState};
use kubecache::upstream::UpstreamError;
use kubecache_sim::faults::FaultCommand;
use kubecache_sim::{Personality, Sim, SimOptions};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// EX_USAGE: bad flags or configuration.
const EXIT_CONFIG: u8 = 64;

/// Why the command stopped: bad flags or configuration, found before any
/// port is bound (exit 64), or a failure to start (exit 1). Each prints as
/// one line.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// A flag's value, as clap or our own checks refuse it.
    #[error("{0}")]
    Flag(String),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// A probe's answer was not 200 (exit 1).
    #[error("probe failed: {0}")]
    Probe(String),
    #[error("metrics: {0}")]
    Metrics(#[source] metrics_exporter_prometheus::BuildError),
    #[error("{0}")]
    Upstream(#[source] UpstreamError),
    #[error("{0}")]
    Cache(#[source] CacheError),
}

impl CliError {
    fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Config(_) | CliError::Flag(_) => ExitCode::from(EXIT_CONFIG),
            _ => ExitCode::FAILURE,
        }
    }
}

#[derive(Parser)]
#[command(
    name = "kubecache",
    version,
    about = "A caching read-through proxy for the Kubernetes API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How the log is written to stderr: `text` (colour only on a
    /// terminal, and never with NO_COLOR set) or `json` (an object per
    /// line, for files and container logs). For `serve`, the config
    /// file's `logFormat` when not given. Which lines: KUBECACHE_LOG, as
    /// an env-filter (`info`, `kubecache=debug`, `warn,kubecache::reflector=trace`).
    #[arg(long, global = true, env = "KUBECACHE_LOG_FORMAT", value_parser = parse_log_format)]
    log_format: Option<LogFormat>,
}

fn parse_log_format(s: &str) -> Result<LogFormat, String> {
    s.parse().map_err(|e: ConfigError| e.to_string())
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy in front of an apiserver.
    Serve(Box<ServeArgs>),
    /// Run the simulated apiserver.
    Sim(SimArgs),
    /// The simulator loaded with realistic objects and the proxy in front of it.
    Demo(DemoArgs),
    /// Asks a kubecache on this host's loopback one health path, as an exec
    /// probe (the kubelet cannot reach a pod's loopback): exit 0 when it
    /// answers 200, 1 otherwise.
    Probe(ProbeArgs),
    /// Prints the shell completion script for bash, zsh or fish: e.g.
    /// `source <(kubecache completion bash)`, or into
    /// /etc/bash_completion.d/kubecache, ~/.zfunc/_kubecache,
    /// ~/.config/fish/completions/kubecache.fish.
    Completion(CompletionArgs),
}

#[derive(clap::Args)]
struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    shell: String,
}

#[derive(clap::Args, Clone)]
struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// Namespaces the generated objects are spread over (`default`,
    /// `kube-system`, then `team-NN`).
    #[arg(long, default_value_t = 5)]
    namespaces: usize,
    /// Pods to generate, in every phase, owned by generated deployments.
    #[arg(long, default_value_t = 100)]
    pods: usize,
    /// ConfigMaps to generate.
    #[arg(long, default_value_t = 50)]
    configmaps: usize,
    /// Nodes to generate (the pods are scheduled on them).
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Pod updates per second.
    #[arg(long, default_value_t = 0.0)]
    churn: f64,
    /// Random seed for generated objects.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Fault: answer the first N requests with 500.
    #[arg(long, default_value_t = 0)]
    fail_requests: u64,
    /// Fault: delay every response.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Fault: end every open watch this often (seconds).
    #[arg(long)]
    drop_watches_every: Option<f64>,
    /// Fault: compact history and drop watches this often (seconds), so
    /// resuming clients get 410 Expired.
    #[arg(long)]
    expire_every: Option<f64>,
    /// Which kube-apiserver to behave as: v1.20 (the default), or v1.36 —
    /// streaming lists (`sendInitialEvents`), and consistent reads served
    /// from a watch cache made fresh by progress notifications, which its
    /// bookmarks then carry.
    #[arg(long = "version", value_name = "VERSION", default_value = "v1.20", value_parser = parse_personality)]
    personality: Personality,
}

impl SimArgs {
    fn options(&self) -> Result<SimOptions, CliError> {
        if !(self.churn >= 0.0 && self.churn.is_finite()) {
            return Err(CliError::Flag(format!(
                "--churn {} must be a non-negative number",
                self.churn
            )));
        }
        let every = |flag: &str, v: Option<f64>| match v {
            None => Ok(None),
            Some(s) if s > 0.0 && s.is_finite() => Ok(Some(Duration::from_secs_f64(s))),
            Some(s) => Err(CliError::Flag(format!(
                "--{flag} {s} must be a positive number of seconds"
            ))),
        };
        let mut faults = vec![];
        if self.fail_requests > 0 {
            faults.push(FaultCommand::Errors(self.fail_requests));
        }
        if self.latency_ms > 0 {
            faults.push(FaultCommand::LatencyMs(self.latency_ms));
        }
        let mut schedule = vec![];
        if let Some(d) = every("drop-watches-every", self.drop_watches_every)? {
            schedule.push((d, FaultCommand::DropWatches));
        }
        if let Some(d) = every("expire-every", self.expire_every)? {
            schedule.push((d, FaultCommand::Expire));
        }
        Ok(SimOptions {
            namespaces: self.namespaces,
            pods: self.pods,
            configmaps: self.configmaps,
            nodes: self.nodes,
            churn: self.churn,
            seed: self.seed,
            faults,
            fault_schedule: schedule,
            personality: self.personality,
            ..Default::default()
        })
    }
}

#[derive(clap::Args)]
struct ProbeArgs {
    /// `http://127.0.0.1:PORT/readyz` or `/livez`: loopback, plain HTTP.
    url: String,
    /// How long to wait for the whole answer.
    #[arg(long, default_value = "5s")]
    timeout: String,
}

#[derive(clap::Args)]
struct DemoArgs {
    /// Where the proxy listens; point kubectl --server here.
    #[arg(long, default_value = "127.0.0.1:8001")]
    listen: String,
    /// Where the simulated apiserver listens.
    #[arg(long, default_value = "127.0.0.1:0")]
    sim_listen: String,
    /// Pods the simulator generates (in every phase, owned by deployments).
    #[arg(long, default_value_t = 2000)]
    pods: usize,
    /// ConfigMaps the simulator generates.
    #[arg(long, default_value_t = 500)]
    configmaps: usize,
    /// Pod updates per second, as kubelets and controllers make them.
    #[arg(long, default_value_t = 2.0)]
    churn: f64,
    /// Which kube-apiserver the simulator behaves as: v1.36 (the default:
    /// kubecache proves its consistent reads fresh, quiet types too),
    /// v1.35, v1.34 or v1.33 (as v1.36, their Tables and protobuf their own)
    /// or v1.20.
    #[arg(long = "version", value_name = "VERSION", default_value = "v1.36", value_parser = parse_personality)]
    personality: Personality,
}

#[derive(clap::Args)]
struct ServeArgs {
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

/// The log on stderr, as `format` says; colour only when stderr is a
/// terminal and NO_COLOR is unset or empty (no-color.org).
fn init_tracing(format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("KUBECACHE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => log.with_ansi(colour).init(),
        // Fields beside `message` at the top level, as log pipelines
        // (Loki, Elasticsearch, Cloud Logging) index them.
        LogFormat::Json => log.json().flatten_event(true).init(),
    }
}

/// The loopback address and path a probe asks.
fn probe_target(url: &str) -> Result<(SocketAddr, String), CliError> {
    let bad = || CliError::Flag(format!("probe {url:?}: want http://LOOPBACK:PORT/PATH"));
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr: SocketAddr = authority.parse().map_err(|_| bad())?;
    if !addr.ip().is_loopback() {
        return Err(bad());
    }
    Ok((
        addr,
        if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
    ))
}

/// GET `path` from `addr` (HTTP/1.0, the connection closed after): the
/// status line when it is 200, else why not.
async fn probe(addr: SocketAddr, path: &str, timeout: Duration) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ask = async {
        let mut conn = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        let request =
            format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: kubecache-probe\r\n\r\n");
        conn.write_all(request.as_bytes())
            .await
            .map_err(|e| format!("asking {addr}: {e}"))?;
        let mut answer = Vec::new();
        // A health answer is small; more is not read.
        conn.take(64 * 1024)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| format!("reading {addr}'s answer: {e}"))?;
        let text = String::from_utf8_lossy(&answer);
        let status = text.lines().next().unwrap_or_default().to_string();
        let body = text
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .trim()
            .to_string();
        if status.split_whitespace().nth(1) == Some("200") {
            Ok(format!("{status}: {body}"))
        } else {
            Err(format!("{path}: {status}: {body}"))
        }
    };
    tokio::time::timeout(timeout, ask)
        .await
        .unwrap_or_else(|_| Err(format!("no answer from {addr} within {timeout:?}")))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutdown signal received: failing readyz");
    // A second one is someone who will not wait for the drain.
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::warn!("second shutdown signal: exiting without draining");
        std::process::exit(1);
    });
}

/// A listener on `addr`, and the address it got (port 0 picks one).
async fn listen(addr: SocketAddr) -> Result<(tokio::net::TcpListener, SocketAddr), CliError> {
    let failed = |source| CliError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(failed)?;
    let bound = listener.local_addr().map_err(failed)?;
    Ok((listener, bound))
}

async fn run_serve(cfg: ServeConfig, bound_to: impl FnOnce(SocketAddr)) -> Result<(), CliError> {
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Full("apiserver_request_duration_seconds".into()),
            &kubecache::metrics::REQUEST_DURATION_BUCKETS,
        )
        .map_err(CliError::Metrics)?
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Full(
                "kubecache_freshness_proof_duration_seconds".into(),
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
        tracing::warn!(error = %e, "initial discovery failed; requests are forwarded until it succeeds");
    }
    let discovery = cache.discovery();
    for gvr in &cfg.eager {
        match discovery.get(gvr) {
            Some(rt) => {
                cache.start_eager(rt);
            }
            None => tracing::warn!(resource = %gvr, "eager type not served by the upstream"),
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
    tracing::info!(listen = %bound, %scheme, auth_mode = auth_mode.as_str(), upstream = %cfg.upstream.url, "kubecache serving");
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

fn parse_personality(s: &str) -> Result<Personality, String> {
    Personality::parse(s).ok_or_else(|| {
        format!("{s:?} is not a version the simulator knows: v1.20, v1.33, v1.34, v1.35 or v1.36")
    })
}

fn parse_addr(s: &str) -> Result<SocketAddr, CliError> {
    s.parse()
        .map_err(|_| CliError::Flag(format!("listen address {s:?} is not HOST:PORT")))
}

/// The simulator's objects, made (a few seconds for 100,000 pods), saying
/// so before and after.
fn generate(opts: &SimOptions) -> Arc<Sim> {
    tracing::info!(
        pods = opts.pods,
        configmaps = opts.configmaps,
        namespaces = opts.namespaces,
        nodes = opts.nodes,
        "simulator: generating objects"
    );
    let started = std::time::Instant::now();
    let sim = Sim::new(opts);
    tracing::info!(took = ?started.elapsed(), "simulator: objects generated");
    sim
}

async fn run_sim(opts: SimOptions, addr: SocketAddr) -> Result<(), CliError> {
    let (listener, bound) = listen(addr).await?;
    let sim = generate(&opts);
    sim.start_churn(opts.churn);
    sim.start_faults(&opts);
    tracing::info!(listen = %bound, pods = opts.pods, "simulated apiserver serving");
    kubecache_sim::run(sim, listener, shutdown_signal()).await;
    Ok(())
}

async fn run_demo(
    opts: SimOptions,
    sim_listen: SocketAddr,
    listen_on: SocketAddr,
) -> Result<(), CliError> {
    let (sim_listener, sim_addr) = listen(sim_listen).await?;
    let sim = generate(&opts);
    sim.start_churn(opts.churn);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(kubecache_sim::run(sim, sim_listener, async {
        let _ = stop_rx.await;
    }));
    let cfg = FileConfig {
        upstream: Some(format!("http://{sim_addr}")),
        listen: Some(listen_on.to_string()),
        eager: vec![
            "v1/pods".into(),
            "v1/configmaps".into(),
            "v1/namespaces".into(),
            "v1/nodes".into(),
            "apps/v1/deployments".into(),
        ],
        // kubecache's defaults: kubectl's (consistent) lists are answered
        // from the cache once it is proven fresh (README, "consistentReads").
        ..Default::default()
    }
    .into_serve()?;
    let r = run_serve(cfg, |listen| demo_guide(sim_addr, listen)).await;
    let _ = stop_tx.send(());
    r
}

/// What the demo says once it serves: what to try, and which of it the
/// cache answers and which goes to the simulator.
fn demo_guide(sim: SocketAddr, listen: SocketAddr) {
    let k = format!("kubectl --server http://{listen}");
    eprintln!(
        "kubecache demo: simulated apiserver on http://{sim}, kubecache on http://{listen}\n\
         (consistentReads: prove: kubectl's lists are answered from the cache once it is proven to hold every\n\
         \x20write made before them: at once for a busy type, within a second or two for a quiet one)\n\
         answered from the cache:\n\
         \x20 {k} get pods -A\n\
         \x20 {k} get deploy,cm,ns,no -A -l app=web\n\
         \x20 {k} get pods -n default -o wide --watch --request-timeout=5s\n\
         \x20 curl -s 'http://{listen}/api/v1/pods?resourceVersion=0' | head -c 300\n\
         forwarded to the simulator:\n\
         \x20 {k} create configmap demo -n default --from-literal=greeting=hello\n\
         \x20 {k} label pods -n default --all demo=yes --overwrite\n\
         \x20 {k} logs -n team-02 deploy/web --tail=1\n\
         \x20 {k} explain deployment.spec.replicas\n\
         what went where: http://{listen}/debug/cache (a page per type: served, forwarded) and\n\
         \x20 curl -s http://{listen}/metrics | grep -E 'kubecache_forwarded_requests_total|apiserver_request_total'"
    );
}

fn main() -> ExitCode {
    // First, while this is the only thread (see the module).
    let arenas_limited = malloc::limit_arenas(malloc::ARENAS);
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // clap's whole message — its suggestion, the allowed values,
            // the usage — under kubecache's own first line.
            let msg = e.to_string();
            let (first, rest) = msg.split_once('\n').unwrap_or((&msg, ""));
            eprintln!("kubecache: {}", first.trim_start_matches("error: "));
            eprint!("{rest}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if matches!(cli.command, Command::Sim(_)) {
        // Before any thread starts: the exec replaces this process.
        malloc::rerun_with_sim_tcache();
    }
    match run(cli.command, cli.log_format, arenas_limited) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubecache: {e}");
            e.exit_code()
        }
    }
}

/// Validates the configuration before anything is bound, then runs.
fn run(
    command: Command,
    log_format: Option<LogFormat>,
    arenas_limited: bool,
) -> Result<(), CliError> {
    match command {
        Command::Completion(args) => {
            use clap::CommandFactory;
            let shell = match args.shell.as_str() {
                "zsh" => clap_complete::Shell::Zsh,
                "fish" => clap_complete::Shell::Fish,
                _ => clap_complete::Shell::Bash,
            };
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "kubecache",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Sim(args) => {
            let opts = args.options()?;
            let listen = parse_addr(&args.listen)?;
            init_tracing(log_format.unwrap_or_default());
            runtime().block_on(run_sim(opts, listen))
        }
        Command::Demo(args) => {
            let listen = parse_addr(&args.listen)?;
            let sim_listen = parse_addr(&args.sim_listen)?;
            init_tracing(log_format.unwrap_or_default());
            let opts = SimOptions {
                namespaces: 8,
                nodes: 20,
                pods: args.pods,
                configmaps: args.configmaps,
                churn: args.churn,
                personality: args.personality,
                ..Default::default()
            };
            runtime().block_on(run_demo(opts, sim_listen, listen))
        }
        Command::Probe(args) => {
            let (addr, path) = probe_target(&args.url)?;
            let timeout = kubecache::go::time::parse_duration(&args.timeout).ok_or_else(|| {
                CliError::Flag(format!("--timeout {:?} is not a duration", args.timeout))
            })?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the tokio runtime starts");
            match rt.block_on(probe(addr, &path, timeout)) {
                Ok(line) => {
                    println!("{line}");
                    Ok(())
                }
                Err(why) => Err(CliError::Probe(why)),
            }
        }
        Command::Serve(args) => {
            let cfg = args.into_config()?;
            init_tracing(log_format.or(cfg.log_format).unwrap_or_default());
            tracing::info!(
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
    }
}

/// The most threads tokio's blocking pool may run at once (its default is
/// 512). Its work here is CPU-bound — compressing and stitching list
/// bodies — so threads beyond the cores add no throughput, only bodies
/// being built at once: under the load benchmark ~40 ran together.
fn blocking_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2 * cores).max(4)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(blocking_threads())
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}
