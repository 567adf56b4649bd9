//! Configuration: the YAML file (see `config/kubecache.yaml`), overridden by
//! flags, validated as a whole before anything binds a port.

use crate::serve::auth::{AuthConfig, AuthMode};
use crate::serve::tls::{ServingCert, TlsError, TlsFiles};
use crate::serve::ConsistentReads;
use crate::store::HistoryLimits;
use crate::upstream::kubeconfig::{self, KubeconfigError};
use crate::upstream::{UpstreamConfig, UpstreamError};
use kube_client::config::KubeConfigOptions;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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

/// The file's shape; every field optional so flags can fill the gaps.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FileConfig {
    pub listen: Option<String>,
    pub upstream: Option<String>,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub token_file: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
    pub client_cert_file: Option<PathBuf>,
    pub client_key_file: Option<PathBuf>,
    pub consistent_reads: Option<ConsistentReads>,
    /// `trust-local` (the default on a loopback address) or `authorize`
    /// (the default on any other).
    pub auth_mode: Option<AuthMode>,
    /// trust-local: pass on pods' exec and attach.
    pub allow_exec: Option<bool>,
    /// Serve TLS with this certificate (and chain), PEM; with the key.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_private_key_file: Option<PathBuf>,
    pub history_capacity: Option<usize>,
    pub history_window_seconds: Option<u64>,
    pub drain_seconds: Option<u64>,
    /// Types to cache from the start, as `v1/pods` or `apps/v1/deployments`.
    #[serde(default)]
    pub eager: Vec<String>,
}

/// What `kubecache serve` runs with, fully validated.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub upstream: UpstreamConfig,
    pub consistent_reads: ConsistentReads,
    pub auth: AuthConfig,
    /// The serving certificate, loaded (and reloaded as its files change).
    pub tls: Option<Arc<ServingCert>>,
    pub history: HistoryLimits,
    pub drain: Duration,
    pub eager: Vec<crate::resource::GroupVersionResource>,
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let raw =
            std::fs::read(path).map_err(|e| ConfigError::Read(path.display().to_string(), e))?;
        serde_saphyr::from_slice(&raw).map_err(|source| ConfigError::Parse {
            path: path.display().to_string(),
            source,
        })
    }

    pub fn into_serve(self) -> Result<ServeConfig, ConfigError> {
        let listen_s = self.listen.unwrap_or_else(|| "127.0.0.1:8001".into());
        let listen: SocketAddr = listen_s.parse().map_err(|_| {
            ConfigError::Invalid(format!("listen address {listen_s:?} is not HOST:PORT"))
        })?;
        let auth = auth(listen, self.auth_mode, self.allow_exec.unwrap_or(false))?;
        let tls = match (self.tls_cert_file, self.tls_private_key_file) {
            (Some(cert), Some(key)) => Some(ServingCert::load(&TlsFiles { cert, key })?),
            (None, None) => None,
            _ => {
                return Err(ConfigError::Invalid(
                    "give --tls-cert-file and --tls-private-key-file together".into(),
                ))
            }
        };
        let picks = KubeConfigOptions {
            context: self.context,
            cluster: self.cluster,
            user: self.user,
        };
        let picked = picks.context.is_some() || picks.cluster.is_some() || picks.user.is_some();
        let files = [
            &self.token_file,
            &self.ca_file,
            &self.client_cert_file,
            &self.client_key_file,
        ];
        let upstream = match (self.upstream, self.kubeconfig) {
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
            tls,
            history,
            drain: Duration::from_secs(self.drain_seconds.unwrap_or(30)),
            eager,
        })
    }
}

/// The auth mode for `listen`: a mode that serves every client with
/// kubecache's identity only where every client is this machine's.
fn auth(
    listen: SocketAddr,
    mode: Option<AuthMode>,
    allow_exec: bool,
) -> Result<AuthConfig, ConfigError> {
    let loopback = listen.ip().is_loopback();
    match mode {
        Some(AuthMode::TrustLocal) | None if loopback => Ok(AuthConfig {
            mode: AuthMode::TrustLocal,
            allow_exec,
        }),
        Some(AuthMode::TrustLocal) => Err(ConfigError::Invalid(format!(
            "--auth-mode trust-local serves every client with kubecache's own identity, so it listens only on a loopback address, not {listen}"
        ))),
        None => Err(ConfigError::Invalid(format!(
            "{listen} is not a loopback address: serving other machines' clients needs --auth-mode authorize, which this version does not have yet (listen on a loopback address)"
        ))),
        Some(AuthMode::Authorize) => Err(ConfigError::Invalid(
            "--auth-mode authorize is not in this version yet: kubecache serves only its own machine's clients, with --auth-mode trust-local on a loopback address".into(),
        )),
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
        let c = FileConfig {
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
            FileConfig {
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
    fn bad_values_are_named() {
        let e = FileConfig {
            upstream: Some("ftp://x".into()),
            ..Default::default()
        }
        .into_serve()
        .unwrap_err();
        assert!(e.to_string().contains("ftp://x"));
        let e = FileConfig {
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
            FileConfig {
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
            let e = serve(listen, None).unwrap_err();
            assert!(e.contains("is not a loopback address"), "{e}");
        }
        let e = serve("127.0.0.1:8001", Some(AuthMode::Authorize)).unwrap_err();
        assert!(e.contains("authorize is not in this version"), "{e}");
        let file: FileConfig =
            serde_saphyr::from_str("authMode: trust-local\nallowExec: true\n").unwrap();
        assert_eq!(
            (file.auth_mode, file.allow_exec),
            (Some(AuthMode::TrustLocal), Some(true))
        );
        assert!(serde_saphyr::from_str::<FileConfig>("authMode: none\n").is_err());
    }

    #[test]
    fn the_example_config_file_loads_and_validates() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kubecache.yaml");
        let c = FileConfig::load(&path).unwrap().into_serve().unwrap();
        assert_eq!(c.auth, AuthConfig::default());
        assert_eq!(c.listen.to_string(), "127.0.0.1:8001");
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        let r: Result<FileConfig, _> = serde_saphyr::from_str("listen: x\nbogus: 1\n");
        assert!(r.is_err());
    }
}
