//! Configuration: every setting of `kubecache serve` declared once
//! ([`Settings`]: its type, help, flag and file key), given by the YAML
//! file (see `config/kubecache.yaml`), environment variables or flags,
//! laid over each other and validated as a whole before anything binds
//! a port ([`ServeConfig`]).

use crate::access::AccessConfig;
use crate::serve::auth::{AuthConfig, AuthMode};
use crate::serve::limits::LimitsConfig;
use crate::serve::tls::{self as serving_tls, ServingCert, TlsError, TlsFiles, TlsServing};
use crate::serve::ConsistentReads;
use crate::store::HistoryLimits;
use crate::upstream::kubeconfig::{self, KubeconfigError};
use crate::upstream::{UpstreamConfig, UpstreamError};
use kube_client::config::KubeConfigOptions;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config file {0}: {1}")]
    Read(String, #[source] std::io::Error),
    #[error("config file {path}: {}", one_line(.source))]
    Parse {
        path: String,
        #[source]
        source: serde_saphyr::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Kubeconfig(#[from] KubeconfigError),
    #[error("{0}")]
    Upstream(#[from] UpstreamError),
    #[error("serving TLS: {0}")]
    Tls(#[from] TlsError),
}

/// How the `kubecache` command writes its log (to stderr): text for a
/// terminal, a JSON object per line for files and container logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(ConfigError::Invalid(format!(
                "log format {s:?} is neither text nor json"
            ))),
        }
    }
}

/// Declares [`Settings`]: every setting of `kubecache serve` once. A
/// setting's doc comment is its `--help` and documents its file key; its
/// flag is the field's name in kebab case unless `arg(long = ..)` names
/// another; its file key is the name in camel case; its environment
/// variable is `KUBECACHE_` and the flag in upper snake case (the CLI sets
/// that on every flag, so none is spelt here). `file_only` settings have
/// a key and no flag of their own.
macro_rules! settings {
    (
        flags { $( $(#[$fattr:meta])* $flag:ident: $fty:ty, )* }
        file_only { $( $(#[$oattr:meta])* $only:ident: $oty:ty, )* }
    ) => {
        /// Every setting, each optional: what a flag, its environment
        /// variable or the file gives ([`Settings::over`] layers them),
        /// validated as a whole by [`Settings::into_serve`].
        #[derive(Debug, Default, Deserialize)]
        #[cfg_attr(feature = "cli", derive(clap::Args))]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub struct Settings {
            $(
                #[cfg_attr(feature = "cli", arg(long))]
                $(#[$fattr])*
                pub $flag: $fty,
            )*
            $(
                #[cfg_attr(feature = "cli", arg(skip))]
                $(#[$oattr])*
                pub $only: $oty,
            )*
        }

        impl Settings {
            /// Each setting `self` gives, else `under`'s: flags (and their
            /// environment variables) over the file.
            fn over(self, under: Settings) -> Settings {
                Settings {
                    $( $flag: Overlay::over(self.$flag, under.$flag), )*
                    $( $only: Overlay::over(self.$only, under.$only), )*
                }
            }
        }
    };
}

/// A setting given, over one not: an option that is set, a list that is
/// not empty.
trait Overlay {
    fn over(self, under: Self) -> Self;
}

impl<T> Overlay for Option<T> {
    fn over(self, under: Self) -> Self {
        self.or(under)
    }
}

impl<T> Overlay for Vec<T> {
    fn over(self, under: Self) -> Self {
        if self.is_empty() {
            under
        } else {
            self
        }
    }
}

settings! {
    flags {
        /// The apiserver's URL (http:// with no credentials works). Without it
        /// or --kubeconfig: KUBECONFIG's files, else ~/.kube/config, else the
        /// pod's service account, as client-go tools do.
        upstream: Option<String>,
        /// A kubeconfig file, read alone (KUBECONFIG is not merged in).
        kubeconfig: Option<PathBuf>,
        /// The kubeconfig context to use instead of its current-context.
        context: Option<String>,
        /// The kubeconfig cluster to use instead of the context's.
        cluster: Option<String>,
        /// The kubeconfig user to use instead of the context's.
        user: Option<String>,
        /// A bearer token file for --upstream.
        token_file: Option<PathBuf>,
        /// A CA bundle for an https --upstream.
        ca_file: Option<PathBuf>,
        /// A client certificate (PEM) for an https --upstream, with --client-key.
        #[cfg_attr(feature = "cli", arg(long = "client-cert"))]
        client_cert_file: Option<PathBuf>,
        /// The client certificate's key (PEM).
        #[cfg_attr(feature = "cli", arg(long = "client-key"))]
        client_key_file: Option<PathBuf>,
        /// Address to listen on (default 127.0.0.1:8001).
        listen: Option<String>,
        /// How reads that ask for the latest state (no resourceVersion, as
        /// kubectl's) are answered (default prove).
        #[cfg_attr(feature = "cli", arg(value_enum))]
        consistent_reads: Option<ConsistentReads>,
        /// Whose identity requests are served with (default: trust-local on
        /// a loopback address, authorize on any other).
        #[cfg_attr(feature = "cli", arg(value_enum))]
        auth_mode: Option<AuthMode>,
        /// authorize: verify client certificates against this CA bundle (PEM);
        /// the common name is the user, the organizations its groups.
        client_ca_file: Option<PathBuf>,
        /// authorize: serve requests without credentials as system:anonymous
        /// (true, the apiserver's default) or answer them 401 (false).
        #[cfg_attr(feature = "cli", arg(num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new()))]
        anonymous_auth: Option<bool>,
        /// authorize: the audiences a client's token must be for, comma
        /// separated (default: the upstream's own).
        #[cfg_attr(feature = "cli", arg(value_delimiter = ','))]
        #[serde(default)]
        authentication_token_audiences: Vec<String>,
        /// authorize: how long a token review is kept (default 2m).
        #[cfg_attr(feature = "cli", arg(long = "authentication-token-webhook-cache-ttl"))]
        authentication_token_cache_ttl: Option<GoDuration>,
        /// authorize: how long an allowed decision is kept (default 5m).
        #[cfg_attr(feature = "cli", arg(long = "authorization-webhook-cache-authorized-ttl"))]
        authorization_cache_authorized_ttl: Option<GoDuration>,
        /// authorize: how long a refusal is kept (default 30s).
        #[cfg_attr(feature = "cli", arg(long = "authorization-webhook-cache-unauthorized-ttl"))]
        authorization_cache_unauthorized_ttl: Option<GoDuration>,
        /// Requests (watches aside) one user may have open at once; more get
        /// 429 with Retry-After (default 400).
        max_requests_per_user: Option<usize>,
        /// Watches one user may have open at once; more get 429 (default 1000).
        max_watches_per_user: Option<usize>,
        /// The longest request path and query in bytes; longer get 414
        /// (default 65536).
        max_url_bytes: Option<usize>,
        /// The largest request header section in bytes; larger get 431
        /// (default 1048576, Go's).
        max_request_header_bytes: Option<usize>,
        /// The largest forwarded request body in bytes; larger get 413
        /// (default 3145728, the apiserver's).
        max_request_body_bytes: Option<u64>,
        /// Open connections at most; past it idle ones are closed and new ones
        /// wait (default: an eighth below the open-files limit, and what an
        /// eighth of the container's memory limit holds at 32 KiB each).
        max_connections: Option<usize>,
        /// Bytes of answers made by the cache that may be in flight to clients
        /// at once; a list that would pass it gets 429 (default: a quarter of
        /// the container's memory limit, else 1 GiB).
        max_bytes_in_flight: Option<usize>,
        /// An HTTP/1 request's headers must arrive within this (default 32s).
        request_header_timeout: Option<GoDuration>,
        /// A connection with nothing in flight is closed after this
        /// (default 90s).
        connection_idle_timeout: Option<GoDuration>,
        /// After SIGTERM, keep accepting this long with /readyz failing, so
        /// that load balancers stop sending first (default 5s; 0s when
        /// listening on loopback).
        shutdown_delay_duration: Option<GoDuration>,
        /// How often each cached type is compared with the upstream at the
        /// cache's resourceVersion, relisting on a difference (default 5m;
        /// 0s turns it off).
        consistency_check_interval: Option<GoDuration>,
        /// Whether the reflectors ask for gzipped lists (as client-go does) and
        /// an upstream kubecache (a chain) for gzipped watch streams (default
        /// true; an apiserver ignores the watch's ask).
        #[cfg_attr(feature = "cli", arg(num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new()))]
        upstream_gzip: Option<bool>,
        /// The objects' bytes all types together may cache; a type that would
        /// pass it is forwarded instead (default: a quarter of the container's
        /// memory limit, else none).
        max_cache_bytes: Option<usize>,
        /// The objects' bytes one type may cache (default: no limit of its own).
        max_type_cache_bytes: Option<usize>,
        /// The bytes kept list bodies and gzip pieces may hold together
        /// (default: a sixteenth of the container's memory limit, at least
        /// 16 MiB, else 256 MiB).
        max_kept_body_bytes: Option<usize>,
        /// A type nobody reads or watches for this long is let go; the next
        /// read starts it again (default 1h; 0s: never).
        cache_idle_timeout: Option<GoDuration>,
        /// trust-local: pass on pods' exec and attach (refused otherwise, as
        /// kubectl proxy refuses them).
        #[cfg_attr(feature = "cli", arg(num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new()))]
        allow_exec: Option<bool>,
        /// Persist each cached type and the discovery documents here, and
        /// restore them on start (edge autonomy; made if missing).
        snapshot_dir: Option<PathBuf>,
        /// How often what changed is written to the snapshot (default 30s).
        snapshot_interval: Option<GoDuration>,
        /// While the upstream is unreachable, answer reads (discovery, and
        /// reads that would need it to be current) from the last known state,
        /// each with a Warning header.
        #[cfg_attr(feature = "cli", arg(num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new()))]
        serve_stale_when_offline: Option<bool>,
        /// Types to cache from the start (readiness waits for them), comma
        /// separated: `v1/pods,apps/v1/deployments`.
        #[cfg_attr(feature = "cli", arg(value_delimiter = ','))]
        #[serde(default)]
        eager: Vec<String>,
        /// Events each type's history keeps for watches and reads in the past
        /// (default 102400, the apiserver's cacher's).
        history_capacity: Option<usize>,
        /// Seconds of events the history keeps beyond its last 100 (default 75).
        history_window_seconds: Option<u64>,
        /// Seconds open connections have to finish after the shutdown delay;
        /// watches end at its start (default 30).
        drain_seconds: Option<u64>,
        /// authorize: token reviews kept at most, and as many decisions
        /// (default 10000).
        review_cache_entries: Option<u64>,
        /// authorize: token reviews asked of the upstream at once; a token that
        /// finds none free within a second gets 429 (default 64).
        max_token_reviews_in_flight: Option<usize>,
        /// Serve HTTPS (HTTP/2 and HTTP/1.1) with this certificate, PEM (the
        /// server's first, then its chain); reloaded when the file changes.
        tls_cert_file: Option<PathBuf>,
        /// The serving certificate's private key, PEM.
        tls_private_key_file: Option<PathBuf>,
    }
    file_only {
        /// `text` (the default) or `json`; the global `--log-format` flag
        /// wins.
        log_format: Option<LogFormat>,
    }
}

/// A Go duration (`30s`, `1m30s`, `500ms`), as the apiserver's flags take
/// them: parsed where it is given, so a bad one is refused with the flag
/// or the file key that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoDuration(pub Duration);

impl std::str::FromStr for GoDuration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        crate::go::time::parse_duration(s)
            .map(GoDuration)
            .ok_or_else(|| format!("{s:?} is not a duration (like 30s, 5m)"))
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Settings {
    /// The flags given (`self`, environment variables included) over the
    /// file's settings. A flag that says where the upstream is sets aside
    /// the file's upstream and what went with it.
    pub fn over_file(self, mut file: Settings) -> Result<Settings, ConfigError> {
        if self.upstream.is_some() && self.kubeconfig.is_some() {
            return Err(ConfigError::Invalid(
                "give either --upstream or --kubeconfig, not both".into(),
            ));
        }
        if self.upstream.is_some() {
            file.kubeconfig = None;
            (file.context, file.cluster, file.user) = (None, None, None);
        }
        if self.kubeconfig.is_some() {
            file.upstream = None;
            (file.token_file, file.ca_file) = (None, None);
            (file.client_cert_file, file.client_key_file) = (None, None);
        }
        Ok(self.over(file))
    }
}

/// What `kubecache serve` runs with, fully validated.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub upstream: UpstreamConfig,
    pub consistent_reads: ConsistentReads,
    pub auth: AuthConfig,
    pub limits: LimitsConfig,
    /// The serving certificate, loaded (and reloaded as its files change),
    /// and the client CA's verifier.
    pub tls: Option<TlsServing>,
    pub history: HistoryLimits,
    pub drain: Duration,
    /// How long kubecache keeps accepting after SIGTERM.
    pub shutdown_delay: Duration,
    pub reflector: crate::reflector::ReflectorConfig,
    pub cache: crate::cache::CacheLimits,
    pub eager: Vec<crate::resource::GroupVersionResource>,
    /// The file's log format, if it names one.
    pub log_format: Option<LogFormat>,
    pub edge: crate::cache::registry::EdgeConfig,
}

impl Settings {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let raw =
            std::fs::read(path).map_err(|e| ConfigError::Read(path.display().to_string(), e))?;
        serde_saphyr::from_slice(&raw).map_err(|source| ConfigError::Parse {
            path: path.display().to_string(),
            source,
        })
    }

    pub fn into_serve(mut self) -> Result<ServeConfig, ConfigError> {
        let listen_s = self
            .listen
            .take()
            .unwrap_or_else(|| "127.0.0.1:8001".into());
        let listen: SocketAddr = listen_s.parse().map_err(|_| {
            ConfigError::Invalid(format!("listen address {listen_s:?} is not HOST:PORT"))
        })?;
        let cert = match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(cert), Some(key)) => Some(ServingCert::load(&TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            })?),
            (None, None) => None,
            _ => {
                return Err(ConfigError::Invalid(
                    "give --tls-cert-file and --tls-private-key-file together".into(),
                ))
            }
        };
        let picks = KubeConfigOptions {
            context: self.context.take(),
            cluster: self.cluster.take(),
            user: self.user.take(),
        };
        let picked = picks.context.is_some() || picks.cluster.is_some() || picks.user.is_some();
        let files = [
            &self.token_file,
            &self.ca_file,
            &self.client_cert_file,
            &self.client_key_file,
        ];
        let upstream = match (self.upstream.take(), self.kubeconfig.take()) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Invalid(
                    "give either --upstream or --kubeconfig, not both".into(),
                ))
            }
            (Some(url), None) => {
                if picked {
                    return Err(ConfigError::Invalid(
                        "--context, --cluster and --user pick from a kubeconfig, not --upstream"
                            .into(),
                    ));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ConfigError::Invalid(format!(
                        "upstream {url:?} must start with http:// or https://"
                    )));
                }
                let mut up = UpstreamConfig::new(&url)?;
                if let Some(f) = &self.ca_file {
                    up = up.with_ca_file(f)?;
                }
                match (&self.client_cert_file, &self.client_key_file) {
                    (Some(cert), Some(key)) => up = up.with_client_cert(cert, key)?,
                    (None, None) => {}
                    _ => {
                        return Err(ConfigError::Invalid(
                            "give --client-cert and --client-key together".into(),
                        ))
                    }
                }
                if let Some(f) = &self.token_file {
                    up = up.with_token_file(f)?;
                }
                up
            }
            (None, kc) => {
                if files.iter().any(|f| f.is_some()) {
                    return Err(ConfigError::Invalid(
                        "--token-file, --ca-file, --client-cert and --client-key go with --upstream; a kubeconfig names its own".into(),
                    ));
                }
                match kc {
                    Some(kc) => kubeconfig::from_file(&kc, &picks)?,
                    None => kubeconfig::infer(&picks).map_err(|e| match e {
                        KubeconfigError::NotInCluster { .. } => ConfigError::Invalid(format!(
                            "no --upstream or --kubeconfig given, {e}"
                        )),
                        e => e.into(),
                    })?,
                }
            }
        };
        let auth = self.auth(listen, cert.is_some(), &upstream)?;
        let clients = match &auth.client_ca {
            Some(ca) => Some(serving_tls::client_verifier(ca)?),
            None => None,
        };
        let tls = cert.map(|cert| TlsServing { cert, clients });
        let d = LimitsConfig::default();
        let limits = LimitsConfig {
            requests_per_user: self.max_requests_per_user.unwrap_or(d.requests_per_user),
            watches_per_user: self.max_watches_per_user.unwrap_or(d.watches_per_user),
            max_url_bytes: self.max_url_bytes.unwrap_or(d.max_url_bytes),
            max_header_bytes: self.max_request_header_bytes.unwrap_or(d.max_header_bytes),
            max_body_bytes: self.max_request_body_bytes.unwrap_or(d.max_body_bytes),
            max_connections: self.max_connections,
            max_bytes_in_flight: self.max_bytes_in_flight,
            header_read_timeout: self
                .request_header_timeout
                .map_or(d.header_read_timeout, |v| v.0),
            idle_timeout: self.connection_idle_timeout.map_or(d.idle_timeout, |v| v.0),
        };
        if limits.max_connections == Some(0)
            || limits.header_read_timeout.is_zero()
            || limits.idle_timeout.is_zero()
        {
            return Err(ConfigError::Invalid(
                "maxConnections, requestHeaderTimeout and connectionIdleTimeout must be above 0"
                    .into(),
            ));
        }
        let delay_default = if listen.ip().is_loopback() {
            Duration::ZERO
        } else {
            SHUTDOWN_DELAY_OFF_LOOPBACK
        };
        let shutdown_delay = self.shutdown_delay_duration.map_or(delay_default, |v| v.0);
        let mut reflector = crate::reflector::ReflectorConfig::default();
        let check = self
            .consistency_check_interval
            .map_or(reflector.consistency_check.unwrap_or_default(), |v| v.0);
        reflector.consistency_check = (!check.is_zero()).then_some(check);
        reflector.gzip = self.upstream_gzip.unwrap_or(true);
        let idle = self
            .cache_idle_timeout
            .map_or(crate::cache::limits::DEFAULT_IDLE_AFTER, |v| v.0);
        let cache = crate::cache::CacheLimits {
            max_type_bytes: self.max_type_cache_bytes,
            max_total_bytes: self.max_cache_bytes.or_else(|| {
                crate::cache::limits::default_total(crate::serve::limits::memory_limit())
            }),
            idle_after: (!idle.is_zero()).then_some(idle),
            max_kept_bytes: self.max_kept_body_bytes.unwrap_or_else(|| {
                crate::cache::limits::default_kept(crate::serve::limits::memory_limit())
            }),
        };
        if limits.requests_per_user == 0 || limits.watches_per_user == 0 {
            return Err(ConfigError::Invalid(
                "maxRequestsPerUser and maxWatchesPerUser must be at least 1".into(),
            ));
        }
        // hyper's smallest read buffer.
        if limits.max_header_bytes < 8192 {
            return Err(ConfigError::Invalid(
                "maxRequestHeaderBytes must be at least 8192".into(),
            ));
        }
        let defaults = HistoryLimits::default();
        let history = HistoryLimits {
            capacity: self.history_capacity.unwrap_or(defaults.capacity),
            window: self
                .history_window_seconds
                .map(Duration::from_secs)
                .unwrap_or(defaults.window),
        };
        if history.capacity == 0 {
            return Err(ConfigError::Invalid(
                "historyCapacity must be at least 1".into(),
            ));
        }
        let snapshot_every = self
            .snapshot_interval
            .map_or(DEFAULT_SNAPSHOT_INTERVAL, |v| v.0);
        if snapshot_every.is_zero() {
            return Err(ConfigError::Invalid(
                "snapshotInterval must be above 0".into(),
            ));
        }
        if let Some(dir) = &self.snapshot_dir {
            // Found now, not at the first write.
            crate::cache::snapshot::Snapshots::open(dir, upstream.url.as_str())
                .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        }
        let edge = crate::cache::registry::EdgeConfig {
            snapshot_dir: self.snapshot_dir.clone(),
            snapshot_every,
            serve_stale_when_offline: self.serve_stale_when_offline.unwrap_or(false),
        };
        let eager = self
            .eager
            .iter()
            .map(|s| parse_gvr(s))
            .collect::<Result<_, _>>()?;
        Ok(ServeConfig {
            listen,
            upstream,
            consistent_reads: self.consistent_reads.unwrap_or_default(),
            auth,
            limits,
            tls,
            history,
            drain: Duration::from_secs(self.drain_seconds.unwrap_or(30)),
            shutdown_delay,
            reflector,
            cache,
            eager,
            log_format: self.log_format,
            edge,
        })
    }
}

/// How long kubecache keeps accepting after SIGTERM off loopback, where a
/// load balancer or Service may still send to it (none on loopback).
const SHUTDOWN_DELAY_OFF_LOOPBACK: Duration = Duration::from_secs(5);

/// How often what changed is written to the snapshot: an edge restarted
/// after an outage's first half minute still has the state from before.
const DEFAULT_SNAPSHOT_INTERVAL: Duration = Duration::from_secs(30);

/// The auth mode for `listen` and its settings, checked as a whole: a
/// mode that serves every client with kubecache's identity only where
/// every client is this machine's; one that forwards each client's own
/// credentials only to an upstream that checks them.
impl Settings {
    fn auth(
        &self,
        listen: SocketAddr,
        tls: bool,
        upstream: &UpstreamConfig,
    ) -> Result<AuthConfig, ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        let loopback = listen.ip().is_loopback();
        let mode = match self.auth_mode {
            Some(m) => m,
            None if loopback => AuthMode::TrustLocal,
            None => AuthMode::Authorize,
        };
        let d = AccessConfig::default();
        let access = AccessConfig {
            audiences: self.authentication_token_audiences.clone(),
            token_ttl: self
                .authentication_token_cache_ttl
                .map_or(d.token_ttl, |v| v.0),
            allowed_ttl: self
                .authorization_cache_authorized_ttl
                .map_or(d.allowed_ttl, |v| v.0),
            denied_ttl: self
                .authorization_cache_unauthorized_ttl
                .map_or(d.denied_ttl, |v| v.0),
            max_entries: self.review_cache_entries.unwrap_or(d.max_entries),
            max_token_reviews_in_flight: match self.max_token_reviews_in_flight {
                Some(0) => {
                    return invalid("--max-token-reviews-in-flight must be at least 1".into())
                }
                n => n.unwrap_or(d.max_token_reviews_in_flight),
            },
        };
        let auth = AuthConfig {
            mode,
            allow_exec: self.allow_exec.unwrap_or(false),
            anonymous: self.anonymous_auth.unwrap_or(true),
            client_ca: self.client_ca_file.clone(),
            access,
        };
        match mode {
            AuthMode::TrustLocal if !loopback => invalid(format!(
                "--auth-mode trust-local serves every client with kubecache's own identity, so it listens only on a loopback address, not {listen}"
            )),
            AuthMode::TrustLocal
                if self.client_ca_file.is_some()
                    || self.anonymous_auth.is_some()
                    || !self.authentication_token_audiences.is_empty() =>
            {
                invalid("--client-ca-file, --anonymous-auth and --authentication-token-audiences go with --auth-mode authorize".into())
            }
            AuthMode::TrustLocal => Ok(auth),
            AuthMode::Authorize if self.allow_exec == Some(true) => invalid(
                "--allow-exec is for trust-local mode; in authorize mode the upstream decides exec and attach for each client".into(),
            ),
            AuthMode::Authorize if !upstream.url.starts_with("https://") => invalid(format!(
                "--auth-mode authorize forwards each client's own credentials, which the plain-http upstream {} does not check: give an https upstream",
                upstream.url
            )),
            AuthMode::Authorize if !tls && !loopback => invalid(format!(
                "--auth-mode authorize on {listen} needs --tls-cert-file and --tls-private-key-file: clients send tokens and certificates only over TLS"
            )),
            AuthMode::Authorize if self.client_ca_file.is_some() && !tls => invalid(
                "--client-ca-file needs --tls-cert-file and --tls-private-key-file: client certificates come with TLS".into(),
            ),
            AuthMode::Authorize => Ok(auth),
        }
    }
}

/// A YAML error without the snippet of the file it would draw.
fn one_line(e: &serde_saphyr::Error) -> String {
    let text = e.without_snippet().to_string();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `v1/pods` or `apps/v1/deployments`.
pub fn parse_gvr(s: &str) -> Result<crate::resource::GroupVersionResource, ConfigError> {
    let parts: Vec<&str> = s.split('/').collect();
    match parts.as_slice() {
        [v, r] if !v.is_empty() && !r.is_empty() => {
            Ok(crate::resource::GroupVersionResource::new("", v, r))
        }
        [g, v, r] if !g.is_empty() && !v.is_empty() && !r.is_empty() => {
            Ok(crate::resource::GroupVersionResource::new(g, v, r))
        }
        _ => Err(ConfigError::Invalid(format!(
            "eager type {s:?} is not VERSION/RESOURCE or GROUP/VERSION/RESOURCE"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_http_upstream_needs_no_credentials() {
        let c = Settings {
            upstream: Some("http://127.0.0.1:8080".into()),
            ..Default::default()
        }
        .into_serve()
        .unwrap();
        assert_eq!(c.upstream.url, "http://127.0.0.1:8080");
        assert!(c.upstream.credentials == Default::default());
        assert!(c.upstream.tls.root_cert.is_none());
    }

    #[test]
    fn a_client_certificate_needs_its_key_and_both_must_parse() {
        let dir = std::env::temp_dir().join(format!("kubecache-cfg-cert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("garbage.pem"), "not PEM").unwrap();
        let with = |cert: Option<&str>, key: Option<&str>| {
            Settings {
                upstream: Some("https://127.0.0.1:6443".into()),
                client_cert_file: cert.map(|f| dir.join(f)),
                client_key_file: key.map(|f| dir.join(f)),
                ..Default::default()
            }
            .into_serve()
            .unwrap_err()
            .to_string()
        };
        assert!(with(Some("garbage.pem"), None).contains("together"));
        assert!(with(None, Some("garbage.pem")).contains("together"));
        assert!(with(Some("garbage.pem"), Some("garbage.pem")).contains("client certificate"));
        assert!(with(Some("missing.pem"), Some("garbage.pem")).contains("missing.pem"));
    }

    #[test]
    fn the_consistency_check_runs_every_five_minutes_unless_set_or_turned_off() {
        let every = |v: Option<&str>| {
            Settings {
                upstream: Some("http://127.0.0.1:8080".into()),
                consistency_check_interval: v.map(|v| v.parse().unwrap()),
                ..Default::default()
            }
            .into_serve()
            .unwrap()
            .reflector
            .consistency_check
        };
        assert_eq!(every(None), Some(Duration::from_secs(300)));
        assert_eq!(every(Some("90s")), Some(Duration::from_secs(90)));
        assert_eq!(every(Some("0s")), None);
    }

    #[test]
    fn reflectors_ask_for_gzip_unless_told_not_to() {
        let gzip = |yaml: &str| {
            let file: Settings = serde_saphyr::from_str(yaml).unwrap();
            Settings {
                upstream: Some("http://127.0.0.1:8080".into()),
                ..file
            }
            .into_serve()
            .unwrap()
            .reflector
            .gzip
        };
        assert!(gzip("{}"));
        assert!(gzip("upstreamGzip: true"));
        assert!(!gzip("upstreamGzip: false"));
    }

    #[test]
    fn cache_limits_come_from_the_file_or_their_defaults() {
        let with = |f: Settings| {
            Settings {
                upstream: Some("http://127.0.0.1:8080".into()),
                ..f
            }
            .into_serve()
        };
        let c = with(Settings::default()).unwrap().cache;
        assert_eq!(c.idle_after, Some(Duration::from_secs(3600)));
        assert_eq!(c.max_type_bytes, None);
        let memory = crate::serve::limits::memory_limit();
        assert_eq!(c.max_total_bytes, memory.map(|m| m / 4));
        assert_eq!(
            c.max_kept_bytes,
            memory.map_or(256 << 20, |m| (m / 16).max(16 << 20))
        );
        let c = with(Settings {
            max_cache_bytes: Some(1 << 30),
            max_type_cache_bytes: Some(1 << 20),
            cache_idle_timeout: Some("0s".parse().unwrap()),
            max_kept_body_bytes: Some(5 << 20),
            ..Default::default()
        })
        .unwrap()
        .cache;
        assert_eq!(
            (
                c.max_total_bytes,
                c.max_type_bytes,
                c.idle_after,
                c.max_kept_bytes
            ),
            (Some(1 << 30), Some(1 << 20), None, 5 << 20)
        );
    }

    #[test]
    fn a_duration_that_is_not_one_is_refused_where_it_is_given() {
        let e = "later".parse::<GoDuration>().unwrap_err();
        assert_eq!(e, "\"later\" is not a duration (like 30s, 5m)");
        assert_eq!("1m30s".parse(), Ok(GoDuration(Duration::from_secs(90))));
        let e = serde_saphyr::from_str::<Settings>("cacheIdleTimeout: later\n").unwrap_err();
        let e = one_line(&e);
        assert!(e.contains("\"later\" is not a duration"), "{e}");
        // A number is not a Go duration either (seconds are `30s`).
        assert!(serde_saphyr::from_str::<Settings>("snapshotInterval: 30\n").is_err());
    }

    #[test]
    fn bad_values_are_named() {
        let e = Settings {
            upstream: Some("ftp://x".into()),
            ..Default::default()
        }
        .into_serve()
        .unwrap_err();
        assert!(e.to_string().contains("ftp://x"));
        let e = Settings {
            upstream: Some("http://x".into()),
            listen: Some("nowhere".into()),
            ..Default::default()
        }
        .into_serve()
        .unwrap_err();
        assert!(e.to_string().contains("nowhere"));
        assert!(parse_gvr("pods").is_err());
        assert_eq!(parse_gvr("apps/v1/deployments").unwrap().group, "apps");
    }

    #[test]
    fn every_client_is_served_as_kubecache_only_on_loopback() {
        let serve = |listen: &str, mode: Option<AuthMode>| {
            Settings {
                upstream: Some("http://127.0.0.1:8080".into()),
                listen: Some(listen.into()),
                auth_mode: mode,
                ..Default::default()
            }
            .into_serve()
            .map(|c| c.auth.mode)
            .map_err(|e| e.to_string())
        };
        for listen in ["127.0.0.1:8001", "127.3.2.1:0", "[::1]:8001"] {
            assert_eq!(serve(listen, None), Ok(AuthMode::TrustLocal), "{listen}");
            let explicit = serve(listen, Some(AuthMode::TrustLocal));
            assert_eq!(explicit, Ok(AuthMode::TrustLocal), "{listen}");
        }
        for listen in ["0.0.0.0:8001", "[::]:8001", "10.1.2.3:8001"] {
            let e = serve(listen, Some(AuthMode::TrustLocal)).unwrap_err();
            assert!(e.contains("only on a loopback address, not"), "{e}");
            assert!(e.contains(listen), "{e}");
            // Off loopback, authorize is the default; it forwards each
            // client's credentials, so only to an upstream that checks them.
            let e = serve(listen, None).unwrap_err();
            assert!(e.contains("which the plain-http upstream"), "{e}");
        }
        let file: Settings =
            serde_saphyr::from_str("authMode: trust-local\nallowExec: true\n").unwrap();
        assert_eq!(
            (file.auth_mode, file.allow_exec),
            (Some(AuthMode::TrustLocal), Some(true))
        );
        assert!(serde_saphyr::from_str::<Settings>("authMode: none\n").is_err());
    }

    #[test]
    fn authorize_mode_needs_an_https_upstream_and_tls_off_loopback_and_its_flags_need_it() {
        let serve = |yaml: &str| {
            let mut file: Settings = serde_saphyr::from_str(yaml).unwrap();
            file.upstream.get_or_insert("https://127.0.0.1:6443".into());
            file.into_serve().map(|c| c.auth).map_err(|e| e.to_string())
        };
        let local = serve("authMode: authorize\n").unwrap();
        assert_eq!(local.mode, AuthMode::Authorize);
        assert!(local.anonymous);
        assert_eq!(local.access, AccessConfig::default());
        let e = serve("listen: 0.0.0.0:8443\n").unwrap_err();
        assert!(e.contains("needs --tls-cert-file"), "{e}");
        let e = serve("authMode: authorize\nclientCaFile: /ca.crt\n").unwrap_err();
        assert!(e.contains("client certificates come with TLS"), "{e}");
        let e = serve("authMode: authorize\nallowExec: true\n").unwrap_err();
        assert!(e.contains("--allow-exec is for trust-local"), "{e}");
        // The example file's explicit `allowExec: false` is no conflict.
        assert!(serve("authMode: authorize\nallowExec: false\n").is_ok());
        let e = serve("anonymousAuth: false\n").unwrap_err();
        assert!(e.contains("go with --auth-mode authorize"), "{e}");
        let tuned = serve(
            "authMode: authorize\nanonymousAuth: false\nauthenticationTokenAudiences: [kubecache]\n\
             authenticationTokenCacheTtl: 10s\nauthorizationCacheAuthorizedTtl: 1m30s\n\
             authorizationCacheUnauthorizedTtl: 500ms\nreviewCacheEntries: 7\n\
             maxTokenReviewsInFlight: 3\n",
        )
        .unwrap();
        assert!(!tuned.anonymous);
        assert_eq!(tuned.access.audiences, ["kubecache"]);
        assert_eq!(tuned.access.token_ttl, Duration::from_secs(10));
        assert_eq!(tuned.access.allowed_ttl, Duration::from_secs(90));
        assert_eq!(tuned.access.denied_ttl, Duration::from_millis(500));
        assert_eq!(tuned.access.max_entries, 7);
        assert_eq!(tuned.access.max_token_reviews_in_flight, 3);
        let e = serve("authMode: authorize\nmaxTokenReviewsInFlight: 0\n").unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = serde_saphyr::from_str::<Settings>("authorizationCacheAuthorizedTtl: 5\n");
        assert!(one_line(&e.unwrap_err()).contains("is not a duration"));
    }

    #[test]
    fn the_example_config_file_loads_and_validates() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kubecache.yaml");
        let c = Settings::load(&path).unwrap().into_serve().unwrap();
        assert_eq!(c.auth, AuthConfig::default());
        assert_eq!(c.listen.to_string(), "127.0.0.1:8001");
    }

    #[test]
    fn the_example_config_files_commented_options_are_real_keys_with_valid_values() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kubecache.yaml");
        let text = std::fs::read_to_string(path).unwrap();
        // `# key: value` with a number: an option shown but left at its default.
        let options: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| {
                l.split_once(": ").is_some_and(|(k, v)| {
                    k.chars().all(|c| c.is_ascii_alphanumeric())
                        && v.chars().all(|c| c.is_ascii_digit())
                })
            })
            .collect();
        assert!(options.len() >= 4, "{options:?}");
        let uncommented: String = text
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(o) if options.contains(&o) => o,
                _ => l,
            })
            .flat_map(|l| [l, "\n"])
            .collect();
        let c: Settings = serde_saphyr::from_str(&uncommented).unwrap();
        let c = c.into_serve().unwrap();
        assert_eq!(c.cache.max_kept_bytes, 268435456);
    }

    #[test]
    fn each_default_a_settings_doc_states_is_the_one_it_gets() {
        // A setting's doc comment is its --help and its file key's docs;
        // where it states "(default X", the validated config of no
        // settings must have X (a default is written in the code once and
        // stated in the doc once: this keeps the two the same).
        let src = include_str!("config.rs");
        let block = &src[src.find("settings! {\n").unwrap()..];
        let block = &block[..block.find("\n}\n").unwrap()];
        let mut stated = std::collections::BTreeMap::new();
        let mut doc = String::new();
        for line in block.lines().map(str::trim) {
            if let Some(d) = line.strip_prefix("///") {
                doc.push_str(d);
                doc.push(' ');
                continue;
            }
            let Some((field, _)) = line.split_once(": ") else {
                continue;
            };
            if line.starts_with("#[") || !field.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            {
                continue;
            }
            let doc = std::mem::take(&mut doc);
            let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
            if let Some(rest) = doc.split("(default ").nth(1) {
                let value = rest.split([')', ';', ',']).next().unwrap().trim();
                stated.insert(field.to_string(), value.to_string());
            }
        }
        enum V {
            D(Duration),
            N(u64),
            B(bool),
            S(String),
        }
        let c = Settings {
            upstream: Some("http://127.0.0.1:8080".into()),
            ..Default::default()
        }
        .into_serve()
        .unwrap();
        let (a, l) = (&c.auth.access, &c.limits);
        let got = |field: &str| -> V {
            match field {
                "listen" => V::S(c.listen.to_string()),
                "consistent_reads" => V::S(format!("{:?}", c.consistent_reads).to_lowercase()),
                "authentication_token_cache_ttl" => V::D(a.token_ttl),
                "authorization_cache_authorized_ttl" => V::D(a.allowed_ttl),
                "authorization_cache_unauthorized_ttl" => V::D(a.denied_ttl),
                "review_cache_entries" => V::N(a.max_entries),
                "max_token_reviews_in_flight" => V::N(a.max_token_reviews_in_flight as u64),
                "max_requests_per_user" => V::N(l.requests_per_user as u64),
                "max_watches_per_user" => V::N(l.watches_per_user as u64),
                "max_url_bytes" => V::N(l.max_url_bytes as u64),
                "max_request_header_bytes" => V::N(l.max_header_bytes as u64),
                "max_request_body_bytes" => V::N(l.max_body_bytes),
                "request_header_timeout" => V::D(l.header_read_timeout),
                "connection_idle_timeout" => V::D(l.idle_timeout),
                // Off loopback; on it (as here) none.
                "shutdown_delay_duration" => V::D(SHUTDOWN_DELAY_OFF_LOOPBACK),
                "consistency_check_interval" => V::D(c.reflector.consistency_check.unwrap()),
                "upstream_gzip" => V::B(c.reflector.gzip),
                "cache_idle_timeout" => V::D(c.cache.idle_after.unwrap()),
                "snapshot_interval" => V::D(c.edge.snapshot_every),
                "history_capacity" => V::N(c.history.capacity as u64),
                "history_window_seconds" => V::N(c.history.window.as_secs()),
                "drain_seconds" => V::N(c.drain.as_secs()),
                _ => panic!("{field} states a default this test does not read"),
            }
        };
        assert!(stated.len() >= 20, "{stated:?}");
        for (field, value) in &stated {
            match got(field) {
                V::D(d) => assert_eq!(value.parse::<GoDuration>().map(|g| g.0), Ok(d), "{field}"),
                V::N(n) => assert_eq!(value.parse::<u64>(), Ok(n), "{field}"),
                V::B(b) => assert_eq!(value.parse::<bool>(), Ok(b), "{field}"),
                V::S(s) => assert_eq!(value, &s, "{field}"),
            }
        }
        assert_eq!(c.shutdown_delay, Duration::ZERO);
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        let r: Result<Settings, _> = serde_saphyr::from_str("listen: x\nbogus: 1\n");
        assert!(r.is_err());
    }
}
