//! Where the upstream is and how to authenticate, found as client-go tools
//! find it: `--kubeconfig`'s file alone; else the files `KUBECONFIG` lists
//! (those that exist), merged; else `~/.kube/config`; else the pod's
//! service account. kube-client reads and merges the files (the first to
//! set a value or name wins), resolves their relative paths against each
//! file's folder and picks the context, cluster and user (`--context`,
//! `--cluster`, `--user`); what kubecache does not do is refused here,
//! before kube-client is handed anything to act on.

use super::auth::{AuthError, ClientCert, Credentials};
use super::credentials::{BearerToken, CredentialsError, TokenSource};
use super::exec::{ExecConfig, ExecError};
use super::{UpstreamConfig, UpstreamError};
use kube_client::config::{
    Config, InClusterError, KubeConfigOptions, Kubeconfig, KubeconfigError as KubeError,
    LoadDataError,
};
use secrecy::ExposeSecret;
use std::ffi::OsStr;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::task::Poll;

/// Where a pod's service account is mounted; kube-client reads it there.
pub const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("{origin}: {}", one_line(.source))]
    Load {
        origin: String,
        #[source]
        source: KubeError,
    },
    #[error("{origin}: {message}")]
    Refused { origin: String, message: String },
    #[error("{origin}: {field} {}: {source}", .path.display())]
    ReadData {
        origin: String,
        field: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: {field}-data is not base64: {source}")]
    Base64 {
        origin: String,
        field: &'static str,
        #[source]
        source: base64::DecodeError,
    },
    #[error("{origin}: user's token: {source}")]
    Token {
        origin: String,
        #[source]
        source: CredentialsError,
    },
    #[error("{origin}: user's {source}")]
    Cert {
        origin: String,
        #[source]
        source: AuthError,
    },
    #[error("{origin}: user's {source}")]
    Exec {
        origin: String,
        #[source]
        source: ExecError,
    },
    #[error("{origin}: {source}")]
    Upstream {
        origin: String,
        #[source]
        source: UpstreamError,
    },
    #[error("--context, --cluster and --user pick from a kubeconfig, and there is none: {0}")]
    NoKubeconfig(String),
    #[error("{looked}, and not running in a cluster: {why}")]
    NotInCluster { looked: String, why: String },
    #[error("in-cluster ({SERVICE_ACCOUNT}): {}", one_line(.0))]
    InCluster(#[source] InClusterError),
    #[error("{0}: kube-client's loader did not finish at once")]
    Pending(String),
}

/// The upstream of one kubeconfig file, as client-go reads an explicit
/// `--kubeconfig` (KUBECONFIG is not merged in).
pub fn from_file(
    path: &Path,
    options: &KubeConfigOptions,
) -> Result<UpstreamConfig, KubeconfigError> {
    let origin = format!("kubeconfig {}", path.display());
    from_merged(read(path)?, options, &origin)
}

/// The upstream of one kubeconfig file, in its current context or `context`.
pub fn from_kubeconfig(
    path: &Path,
    context: Option<&str>,
) -> Result<UpstreamConfig, KubeconfigError> {
    let options = KubeConfigOptions {
        context: context.map(Into::into),
        ..KubeConfigOptions::default()
    };
    from_file(path, &options)
}

/// The upstream client-go tools use when given no kubeconfig: KUBECONFIG's
/// files, else `~/.kube/config`, else the pod's service account.
pub fn infer(options: &KubeConfigOptions) -> Result<UpstreamConfig, KubeconfigError> {
    let list = std::env::var_os("KUBECONFIG");
    match kubeconfigs(list.as_deref(), std::env::home_dir())? {
        Found::Merged(kc, origin) => from_merged(*kc, options, &origin),
        Found::None(looked) => {
            if options.context.is_some() || options.cluster.is_some() || options.user.is_some() {
                return Err(KubeconfigError::NoKubeconfig(looked));
            }
            in_cluster().map_err(|e| match e {
                KubeconfigError::NotInCluster { why, .. } => {
                    KubeconfigError::NotInCluster { looked, why }
                }
                e => e,
            })
        }
    }
}

/// The pod's service account: the apiserver at KUBERNETES_SERVICE_HOST and
/// _PORT, its CA (re-read as it rotates) and token (see credentials.rs).
pub fn in_cluster() -> Result<UpstreamConfig, KubeconfigError> {
    for var in ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"] {
        if std::env::var_os(var).is_none() {
            return Err(KubeconfigError::NotInCluster {
                looked: "no kubeconfig".into(),
                why: format!("{var} is not set"),
            });
        }
    }
    let config = Config::incluster().map_err(KubeconfigError::InCluster)?;
    upstream(config, "in-cluster service account")
}

enum Found {
    /// The files read, merged, and their names for messages.
    Merged(Box<Kubeconfig>, String),
    /// What was looked for.
    None(String),
}

/// The kubeconfigs client-go reads: the files KUBECONFIG lists that exist
/// (client-go skips the others), merged in order; without KUBECONFIG,
/// `~/.kube/config` if it exists.
fn kubeconfigs(list: Option<&OsStr>, home: Option<PathBuf>) -> Result<Found, KubeconfigError> {
    let listed: Vec<PathBuf> = list
        .map(|l| std::env::split_paths(l).filter(|p| !p.as_os_str().is_empty()))
        .into_iter()
        .flatten()
        .collect();
    let (candidates, looked) = if listed.is_empty() {
        let default = home.map(|h| h.join(".kube").join("config"));
        let looked = match &default {
            Some(p) => format!("no KUBECONFIG, no {}", p.display()),
            None => "no KUBECONFIG, and no home folder".into(),
        };
        (default.into_iter().collect::<Vec<_>>(), looked)
    } else {
        let names: Vec<String> = listed.iter().map(|p| p.display().to_string()).collect();
        let looked = format!("none of KUBECONFIG's files ({}) exist", names.join(", "));
        (listed, looked)
    };
    let present: Vec<PathBuf> = candidates
        .into_iter()
        .filter(
            |p| !matches!(std::fs::metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound),
        )
        .collect();
    if present.is_empty() {
        return Ok(Found::None(looked));
    }
    let mut merged = Kubeconfig::default();
    for p in &present {
        merged = merged
            .merge(read(p)?)
            .map_err(|source| KubeconfigError::Load {
                origin: format!("kubeconfig {}", p.display()),
                source,
            })?;
    }
    let names: Vec<String> = present.iter().map(|p| p.display().to_string()).collect();
    let origin = format!("kubeconfig {}", names.join(":"));
    Ok(Found::Merged(Box::new(merged), origin))
}

/// One file, its relative paths made absolute against its folder.
fn read(path: &Path) -> Result<Kubeconfig, KubeconfigError> {
    Kubeconfig::read_from(path).map_err(|source| KubeconfigError::Load {
        origin: format!("kubeconfig {}", path.display()),
        source,
    })
}

fn from_merged(
    kc: Kubeconfig,
    options: &KubeConfigOptions,
    origin: &str,
) -> Result<UpstreamConfig, KubeconfigError> {
    let config = ready(Config::from_custom_kubeconfig(kc, options))
        .ok_or_else(|| KubeconfigError::Pending(origin.into()))?
        .map_err(|source| KubeconfigError::Load {
            origin: origin.into(),
            source,
        })?;
    upstream(config, origin)
}

/// kube-client's loaders are `async` but wait on nothing (they read with
/// std::fs): polled once, configuration stays synchronous, inside a
/// runtime or out of one.
fn ready<T>(f: impl Future<Output = T>) -> Option<T> {
    let mut f = std::pin::pin!(f);
    match f
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// What kube-client made of a kubeconfig or the service account, with
/// what kubecache refuses refused, and the credentials taken out for
/// kubecache to present (kube-client keeps the CA and server name).
fn upstream(mut config: Config, origin: &str) -> Result<UpstreamConfig, KubeconfigError> {
    let refused = |message: &str| {
        Err(KubeconfigError::Refused {
            origin: origin.into(),
            message: message.into(),
        })
    };
    if config.accept_invalid_certs {
        return refused("insecure-skip-tls-verify is not supported; give the cluster's CA");
    }
    if config.root_cert.as_ref().is_some_and(|c| c.is_empty()) {
        return refused("the cluster's certificate-authority holds no PEM certificate");
    }
    let user = &mut config.auth_info;
    if user.auth_provider.is_some() {
        return refused("auth-provider plugins are not supported; use an exec plugin");
    }
    if user.username.is_some() || user.password.is_some() {
        return refused("basic authentication is not supported; use a token");
    }
    let cert = data_or_file(
        origin,
        "client-certificate",
        user.client_certificate_data.take(),
        user.client_certificate.take(),
    )?;
    let key = data_or_file(
        origin,
        "client-key",
        user.client_key_data
            .take()
            .map(|k| k.expose_secret().to_string()),
        user.client_key.take(),
    )?;
    let client_cert = match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => Some(ClientCert { cert_pem, key_pem }),
        (None, None) => None,
        (Some(_), None) => return refused("client-certificate is given without client-key"),
        (None, Some(_)) => return refused("client-key is given without client-certificate"),
    };
    if let Some(c) = &client_cert {
        c.certified_key().map_err(|source| KubeconfigError::Cert {
            origin: origin.into(),
            source,
        })?;
    }
    // An inline token wins over tokenFile, as in client-go.
    let token = match (user.token.take(), user.token_file.take()) {
        (Some(t), _) => Some(TokenSource::Inline(t.expose_secret().to_string())),
        (None, Some(f)) => Some(TokenSource::File(f.into())),
        (None, None) => None,
    };
    if let Some(t) = &token {
        // Read now, so that a bad token or file is a configuration error.
        BearerToken::new(t).map_err(|source| KubeconfigError::Token {
            origin: origin.into(),
            source,
        })?;
    }
    // As in client-go, a token or certificate given outright is used, and
    // the exec plugin beside it is not run.
    let exec = match user.exec.take() {
        Some(_) if token.is_some() || client_cert.is_some() => {
            tracing::info!(
                kubeconfig = origin,
                "a token or client certificate is given; its exec plugin is not run"
            );
            None
        }
        Some(e) => {
            Some(
                ExecConfig::from_kubeconfig(&e).map_err(|source| KubeconfigError::Exec {
                    origin: origin.into(),
                    source,
                })?,
            )
        }
        None => None,
    };
    // Written as a kubeconfig's server is, without the slash Uri adds.
    let uri = config.cluster_url.to_string();
    let url = match uri.strip_suffix('/') {
        Some(u) if config.cluster_url.path() == "/" => u.to_string(),
        _ => uri,
    };
    let up = UpstreamConfig {
        url,
        tls: config,
        credentials: Credentials {
            token,
            client_cert,
            exec,
        },
    };
    super::parse_url(&up.url)
        .and_then(|_| up.check_tls())
        .map_err(|e| match e {
            // A file or field the TLS set-up could not read, in its words.
            UpstreamError::Tls(kube_client::Error::InferKubeconfig(source)) => {
                KubeconfigError::Load {
                    origin: origin.into(),
                    source,
                }
            }
            source => KubeconfigError::Upstream {
                origin: origin.into(),
                source,
            },
        })?;
    Ok(up)
}

/// A kubeconfig's `-data` field (base64) or, if it has none, its file, as
/// kube-client reads them.
fn data_or_file(
    origin: &str,
    field: &'static str,
    data: Option<String>,
    file: Option<String>,
) -> Result<Option<Vec<u8>>, KubeconfigError> {
    use base64::Engine;
    match (data, file) {
        (Some(d), _) => base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map(Some)
            .map_err(|source| KubeconfigError::Base64 {
                origin: origin.into(),
                field,
                source,
            }),
        (None, Some(f)) => {
            std::fs::read(&f)
                .map(Some)
                .map_err(|source| KubeconfigError::ReadData {
                    origin: origin.into(),
                    field,
                    path: f.into(),
                    source,
                })
        }
        (None, None) => Ok(None),
    }
}

/// A file or `-data` field of a kubeconfig that could not be read.
fn data(field: &str, e: &LoadDataError) -> String {
    match e {
        LoadDataError::ReadFile(e, path) => format!("{field} {}: {e}", path.display()),
        LoadDataError::DecodeBase64(e) => format!("{field}-data is not base64: {e}"),
        e => format!("{field}: {e}"),
    }
}

/// kube-client's errors on one line, in words that name what is missing.
fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let text = match e.downcast_ref::<KubeError>() {
        Some(KubeError::Parse(e)) => e.without_snippet().to_string(),
        Some(KubeError::ReadConfig(e, _)) => e.to_string(),
        Some(KubeError::LoadContext(c)) => format!("has no context {c:?}"),
        Some(KubeError::LoadClusterOfContext(c)) => format!("has no cluster {c:?}"),
        Some(KubeError::CurrentContextNotSet) => "sets no current-context; give --context".into(),
        Some(KubeError::MissingClusterUrl) => "the cluster has no server".into(),
        Some(KubeError::LoadCertificateAuthority(e)) => data("certificate-authority", e),
        Some(KubeError::LoadClientCertificate(e)) => data("client-certificate", e),
        Some(KubeError::LoadClientKey(e)) => data("client-key", e),
        _ => e.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::auth::testing::{CERT, KEY, OTHER_KEY, V1_CERT, V1_KEY};
    use base64::Engine;
    use kube_client::client::ConfigExt;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    /// A folder of its own for a test's files.
    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kc-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn pick(context: &str, cluster: &str, user: &str) -> KubeConfigOptions {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        KubeConfigOptions {
            context: some(context),
            cluster: some(cluster),
            user: some(user),
        }
    }

    #[test]
    fn the_current_context_or_the_picked_one_gives_server_token_and_ca() {
        let dir = folder("contexts");
        std::fs::write(dir.join("ca.pem"), CERT).unwrap();
        let kc = r#"
apiVersion: v1
kind: Config
current-context: b
contexts:
- name: a
  context: {cluster: c1, user: u1}
- name: b
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster: {server: "http://one:8080"}
- name: c2
  cluster: {server: "https://two:6443", certificate-authority: ca.pem}
users:
- name: u1
  user: {token: t1}
- name: u2
  user: {token: t2}
"#;
        let path = dir.join("config");
        std::fs::write(&path, kc).unwrap();
        let c = from_kubeconfig(&path, None).unwrap();
        assert_eq!(c.url, "https://two:6443");
        assert_eq!(c.credentials.token, Some(TokenSource::Inline("t2".into())));
        assert_eq!(c.tls.root_cert.as_ref().map(Vec::len), Some(1));
        // kube-client keeps no credential of its own to present.
        assert!(c.tls.auth_info.token.is_none() && c.tls.auth_info.exec.is_none());
        let c = from_kubeconfig(&path, Some("a")).unwrap();
        assert_eq!(c.url, "http://one:8080");
        assert_eq!(c.credentials.token, Some(TokenSource::Inline("t1".into())));
        // --cluster and --user override the context's.
        let c = from_file(&path, &pick("", "c1", "u1")).unwrap();
        assert_eq!(c.url, "http://one:8080");
        assert_eq!(c.credentials.token, Some(TokenSource::Inline("t1".into())));
        for (options, words) in [
            (pick("zz", "", ""), r#"has no context "zz""#),
            (pick("", "c9", ""), r#"has no cluster "c9""#),
        ] {
            let e = from_file(&path, &options).unwrap_err().to_string();
            assert!(e.contains(words) && e.contains("config"), "{e}");
        }
    }

    /// A kubeconfig of one context, on an https cluster whose CA is
    /// inline, whose user is `user` (YAML flow), in a folder of its own.
    fn one_user(name: &str, user: &str) -> Result<UpstreamConfig, KubeconfigError> {
        let dir = folder(name);
        std::fs::write(dir.join("cert.pem"), CERT).unwrap();
        std::fs::write(dir.join("key.pem"), KEY).unwrap();
        std::fs::write(dir.join("token"), "from-a-file\n").unwrap();
        let kc = format!(
            "current-context: x\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n\
             clusters: [{{name: c, cluster: {{server: 'https://up:6443', certificate-authority-data: {}}}}}]\n\
             users: [{{name: u, user: {user}}}]\n",
            b64(CERT)
        );
        std::fs::write(dir.join("config"), kc).unwrap();
        from_kubeconfig(&dir.join("config"), None)
    }

    #[test]
    fn client_certificates_come_from_files_beside_it_or_inline_data() {
        let c = one_user(
            "cert-files",
            "{client-certificate: cert.pem, client-key: key.pem}",
        )
        .unwrap();
        let want = ClientCert {
            cert_pem: CERT.into(),
            key_pem: KEY.into(),
        };
        assert_eq!(c.credentials.client_cert.as_ref(), Some(&want));
        // kube-client is left no certificate to present.
        let user = &c.tls.auth_info;
        assert!(user.client_certificate.is_none() && user.client_key.is_none());
        let c = one_user(
            "cert-data",
            &format!(
                "{{client-certificate-data: {}, client-key-data: {}, token: t}}",
                b64(CERT),
                b64(KEY)
            ),
        )
        .unwrap();
        assert_eq!(c.credentials.client_cert, Some(want));
        // A token goes along with a certificate, as in client-go.
        assert_eq!(c.credentials.token, Some(TokenSource::Inline("t".into())));
        for (user, words) in [
            ("{client-certificate: cert.pem}", "without client-key"),
            (
                &format!("{{client-key-data: {}}}", b64(KEY)),
                "without client-certificate",
            ),
            (
                &format!(
                    "{{client-certificate-data: '!!', client-key-data: {}}}",
                    b64(KEY)
                ),
                "base64",
            ),
            (
                "{client-certificate: missing.pem, client-key: key.pem}",
                "missing.pem",
            ),
            // A certificate that does not parse is refused at start.
            (
                "{client-certificate: key.pem, client-key: key.pem}",
                "certificate",
            ),
            (
                "{client-certificate: cert.pem, client-key: cert.pem}",
                "private key",
            ),
            (
                &format!(
                    "{{client-certificate: cert.pem, client-key-data: {}}}",
                    b64(OTHER_KEY)
                ),
                "not the certificate's",
            ),
        ] {
            let e = one_user("cert-bad", user).unwrap_err().to_string();
            assert!(e.contains(words), "{user}: {e}");
            assert!(e.contains("kubeconfig") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn x509_v1_certificates_are_presented_though_kube_client_refuses_them() {
        let user = format!(
            "{{client-certificate-data: {}, client-key-data: {}}}",
            b64(V1_CERT),
            b64(V1_KEY)
        );
        let c = one_user("cert-v1", &user).unwrap();
        let cert = c.credentials.client_cert.as_ref().unwrap();
        assert_eq!(cert.certified_key().unwrap().cert.len(), 1);
        // Why kubecache presents certificates itself: kube-client hands
        // them to rustls, whose webpki parses only X.509 v3.
        let mut kube = c.tls.clone();
        kube.auth_info.client_certificate_data = Some(b64(V1_CERT));
        kube.auth_info.client_key_data = Some(b64(V1_KEY).into());
        let e = kube.rustls_client_config().unwrap_err();
        assert!(format!("{e:?}").contains("UnsupportedCertVersion"), "{e:?}");
    }

    #[test]
    fn what_kubecache_does_not_do_is_refused_at_start() {
        for (user, words) in [
            ("{username: a, password: b}", "basic authentication"),
            ("{auth-provider: {name: gcp}}", "auth-provider"),
            ("{tokenFile: missing-token}", "missing-token"),
            ("{token: \"a\\nb\"}", "not a valid header value"),
        ] {
            let e = one_user("refused", user).unwrap_err().to_string();
            assert!(e.contains(words), "{user}: {e}");
        }
        let dir = folder("insecure");
        let path = dir.join("config");
        std::fs::write(
            &path,
            "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n\
             clusters: [{name: c, cluster: {server: 'https://up:6443', insecure-skip-tls-verify: true}}]\n",
        )
        .unwrap();
        let e = from_kubeconfig(&path, None).unwrap_err().to_string();
        assert!(e.contains("insecure-skip-tls-verify"), "{e}");
        std::fs::write(&path, "current-context: x\ncontexts: [oops\n").unwrap();
        let e = from_kubeconfig(&path, None).unwrap_err().to_string();
        assert!(
            e.contains(&path.display().to_string()) && !e.contains('\n'),
            "{e}"
        );
    }

    #[test]
    fn a_token_file_is_read_beside_the_kubeconfig_and_rotates() {
        let c = one_user("token-file", "{tokenFile: token}").unwrap();
        let file = folder("token-file").join("token");
        assert_eq!(c.credentials.token, Some(TokenSource::File(file)));
    }

    #[test]
    fn an_exec_plugin_is_resolved_as_client_go_resolves_it() {
        let user = "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./bin/plugin, \
                    args: [get-token], env: [{name: A, value: b}], installHint: get it, provideClusterInfo: true}}";
        let e = one_user("exec", user).unwrap().credentials.exec.unwrap();
        assert_eq!(e.command, folder("exec").join("./bin/plugin"));
        assert_eq!(e.args, ["get-token"]);
        assert_eq!(e.env, [("A".to_string(), "b".to_string())]);
        assert_eq!(e.install_hint.as_deref(), Some("get it"));
        let cluster = e.cluster.unwrap();
        assert_eq!(cluster["server"], "https://up:6443");
        assert_eq!(cluster["certificate-authority-data"], b64(CERT));
        // A bare name is looked up on PATH; no cluster info unless asked.
        let user =
            "{exec: {apiVersion: client.authentication.k8s.io/v1, command: aws-iam-authenticator}}";
        let e = one_user("exec-path", user)
            .unwrap()
            .credentials
            .exec
            .unwrap();
        assert_eq!(e.command, Path::new("aws-iam-authenticator"));
        assert_eq!(e.cluster, None);
        // A token given outright wins, and the plugin is not run.
        let user = "{token: t, exec: {apiVersion: client.authentication.k8s.io/v1, command: x}}";
        let c = one_user("exec-token", user).unwrap().credentials;
        assert_eq!(
            (c.token, c.exec),
            (Some(TokenSource::Inline("t".into())), None)
        );
        for (user, words) in [
            ("{exec: {apiVersion: client.authentication.k8s.io/v2, command: x}}", "apiVersion"),
            ("{exec: {apiVersion: client.authentication.k8s.io/v1}}", "command is required"),
            (
                "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Always}}",
                "interactiveMode",
            ),
        ] {
            let e = one_user("exec-bad", user).unwrap_err().to_string();
            assert!(e.contains(words), "{user}: {e}");
        }
    }

    #[tokio::test]
    async fn a_plugin_of_a_kubeconfig_gets_its_cluster_when_it_asks() {
        let dir = folder("exec-run");
        crate::upstream::exec::testing::write_script(
            &dir.join("plugin"),
            r#"case "$KUBERNETES_EXEC_INFO" in *'"cluster":{"server":"https://up:6443"'*) ;; *) echo "$KUBERNETES_EXEC_INFO" >&2; exit 4;; esac
echo '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}}'"#,
        );
        let user = "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./plugin, provideClusterInfo: true}}";
        let e = one_user("exec-run", user)
            .unwrap()
            .credentials
            .exec
            .unwrap();
        assert_eq!(e.run().await.unwrap().token.as_deref(), Some("t"));
    }

    /// KUBECONFIG's files, written to a folder of their own: `a.yaml` and
    /// `b/b.yaml`, each naming a file beside it.
    fn two_files(name: &str) -> (PathBuf, PathBuf) {
        let dir = folder(name);
        std::fs::create_dir_all(dir.join("b")).unwrap();
        std::fs::write(dir.join("ca.pem"), CERT).unwrap();
        std::fs::write(dir.join("b/token"), "b-token").unwrap();
        let a = dir.join("a.yaml");
        let b = dir.join("b/b.yaml");
        std::fs::write(
            &a,
            "current-context: good\n\
             contexts: [{name: good, context: {cluster: real, user: admin}}]\n\
             users: [{name: admin, user: {token: a-token}}]\n",
        )
        .unwrap();
        std::fs::write(
            &b,
            "current-context: bad\n\
             contexts: [{name: bad, context: {cluster: real, user: other}}, {name: good, context: {cluster: nowhere, user: other}}]\n\
             clusters: [{name: real, cluster: {server: 'https://real:6443', certificate-authority: ../ca.pem}}]\n\
             users: [{name: admin, user: {token: b-admin}}, {name: other, user: {tokenFile: token}}]\n",
        )
        .unwrap();
        (a, b)
    }

    fn merged(list: &[&Path], options: &KubeConfigOptions) -> UpstreamConfig {
        let list = std::env::join_paths(list).unwrap();
        match kubeconfigs(Some(&list), None).unwrap() {
            Found::Merged(kc, origin) => from_merged(*kc, options, &origin).unwrap(),
            Found::None(looked) => panic!("{looked}"),
        }
    }

    #[test]
    fn kubeconfig_files_merge_as_client_go_merges_them() {
        let (a, b) = two_files("merge");
        // The first file's current-context and user win; the second adds
        // the cluster, its CA path relative to its own folder.
        let c = merged(&[&a, &b], &KubeConfigOptions::default());
        assert_eq!(c.url, "https://real:6443");
        assert_eq!(
            c.credentials.token,
            Some(TokenSource::Inline("a-token".into()))
        );
        // The second file's context, its token file beside it.
        let c = merged(&[&a, &b], &pick("bad", "", ""));
        let token = b.parent().unwrap().join("token");
        assert_eq!(c.credentials.token, Some(TokenSource::File(token)));
        // In the other order, the other file wins.
        let c = merged(&[&b, &a], &pick("", "", "admin"));
        assert_eq!(
            c.credentials.token,
            Some(TokenSource::Inline("b-admin".into()))
        );
        // Files that do not exist are skipped, as client-go skips them.
        let missing = a.with_file_name("missing.yaml");
        let c = merged(&[&missing, &a, &b], &KubeConfigOptions::default());
        assert_eq!(c.url, "https://real:6443");
        let list = std::env::join_paths([&missing]).unwrap();
        match kubeconfigs(Some(&list), None).unwrap() {
            Found::None(looked) => assert!(looked.contains("missing.yaml"), "{looked}"),
            Found::Merged(..) => panic!("merged a missing file"),
        }
    }

    #[test]
    fn without_kubeconfig_the_homes_is_read() {
        let (a, _) = two_files("home");
        let home = folder("home-dir");
        std::fs::create_dir_all(home.join(".kube")).unwrap();
        match kubeconfigs(None, Some(home.clone())).unwrap() {
            Found::None(looked) => assert!(looked.contains(".kube/config"), "{looked}"),
            Found::Merged(..) => panic!("no ~/.kube/config was written"),
        }
        std::fs::copy(&a, home.join(".kube/config")).unwrap();
        // An empty KUBECONFIG is no KUBECONFIG.
        match kubeconfigs(Some(OsStr::new("")), Some(home)).unwrap() {
            Found::Merged(kc, origin) => {
                assert!(origin.ends_with(".kube/config"), "{origin}");
                assert_eq!(kc.current_context.as_deref(), Some("good"));
            }
            Found::None(looked) => panic!("{looked}"),
        }
    }
}
