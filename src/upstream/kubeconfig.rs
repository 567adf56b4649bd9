//! Where the upstream is and how to authenticate, from a kubeconfig file or
//! the in-cluster service account. Supported: server, CA (file or data),
//! bearer token (inline or file), client certificate and key (file or
//! data), exec credential plugins; insecure-skip-tls-verify, auth-provider
//! and basic auth are refused.

use super::auth::{ClientCert, Credentials};
use super::credentials::TokenSource;
use super::exec::{self, ClusterInfo, ExecConfig};
use super::UpstreamConfig;
use base64::Engine;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("reading {0}: {1}")]
    Read(String, std::io::Error),
    #[error("parsing {0}: {1}")]
    Parse(String, serde_yaml::Error),
    #[error("kubeconfig has no context {0:?}")]
    NoContext(String),
    #[error("kubeconfig has no cluster {0:?}")]
    NoCluster(String),
    #[error("kubeconfig: {0}")]
    Unsupported(String),
    #[error("not running in a cluster: {0}")]
    NotInCluster(String),
}

#[derive(Deserialize)]
struct Kubeconfig {
    #[serde(rename = "current-context", default)]
    current_context: String,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    users: Vec<Named<User>>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "context", alias = "cluster", alias = "user")]
    value: T,
}

#[derive(Deserialize)]
struct Context {
    cluster: String,
    #[serde(default)]
    user: String,
}

#[derive(Deserialize)]
struct Cluster {
    server: String,
    #[serde(rename = "certificate-authority")]
    ca_file: Option<String>,
    #[serde(rename = "certificate-authority-data")]
    ca_data: Option<String>,
    #[serde(rename = "insecure-skip-tls-verify", default)]
    insecure: bool,
}

#[derive(Deserialize, Default)]
struct User {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
    #[serde(rename = "client-certificate")]
    client_cert: Option<String>,
    #[serde(rename = "client-certificate-data")]
    client_cert_data: Option<String>,
    #[serde(rename = "client-key")]
    client_key: Option<String>,
    #[serde(rename = "client-key-data")]
    client_key_data: Option<String>,
    exec: Option<Exec>,
    #[serde(rename = "auth-provider")]
    auth_provider: Option<serde_yaml::Value>,
    username: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Exec {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<EnvVar>,
    install_hint: Option<String>,
    #[serde(default)]
    provide_cluster_info: bool,
    interactive_mode: Option<String>,
}

#[derive(Deserialize)]
struct EnvVar {
    name: String,
    value: String,
}

fn read(path: &Path) -> Result<Vec<u8>, KubeconfigError> {
    std::fs::read(path).map_err(|e| KubeconfigError::Read(path.display().to_string(), e))
}

pub fn from_kubeconfig(
    path: &Path,
    context: Option<&str>,
) -> Result<UpstreamConfig, KubeconfigError> {
    let raw = read(path)?;
    let kc: Kubeconfig = serde_yaml::from_slice(&raw)
        .map_err(|e| KubeconfigError::Parse(path.display().to_string(), e))?;
    let ctx_name = context.unwrap_or(&kc.current_context).to_string();
    let ctx = kc
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .ok_or_else(|| KubeconfigError::NoContext(ctx_name.clone()))?;
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == ctx.value.cluster)
        .ok_or_else(|| KubeconfigError::NoCluster(ctx.value.cluster.clone()))?;
    if cluster.value.insecure {
        return Err(KubeconfigError::Unsupported(
            "insecure-skip-tls-verify is not supported; give the cluster's CA".into(),
        ));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let ca_pem = data_or_file(
        "certificate-authority",
        &cluster.value.ca_data,
        &cluster.value.ca_file,
        base,
    )?;
    let user = kc
        .users
        .iter()
        .find(|u| u.name == ctx.value.user)
        .map(|u| &u.value);
    let credentials = match user {
        Some(u) => credentials(u, base, &cluster.value.server, &ca_pem)?,
        None => Credentials::default(),
    };
    Ok(UpstreamConfig {
        url: cluster.value.server.clone(),
        ca_pem,
        credentials,
    })
}

/// Inline data (base64) or a file relative to the kubeconfig's folder.
fn data_or_file(
    what: &str,
    data: &Option<String>,
    file: &Option<String>,
    base: &Path,
) -> Result<Option<Vec<u8>>, KubeconfigError> {
    match (data, file) {
        (Some(d), _) => base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map(Some)
            .map_err(|e| KubeconfigError::Unsupported(format!("{what}-data: {e}"))),
        (None, Some(f)) => read(&base.join(f)).map(Some),
        (None, None) => Ok(None),
    }
}

fn credentials(
    u: &User,
    base: &Path,
    server: &str,
    ca_pem: &Option<Vec<u8>>,
) -> Result<Credentials, KubeconfigError> {
    let unsupported = |m: &str| Err(KubeconfigError::Unsupported(m.into()));
    if u.auth_provider.is_some() {
        return unsupported("auth-provider plugins are not supported; use an exec plugin");
    }
    if u.username.is_some() {
        return unsupported("basic authentication is not supported; use a token");
    }
    let token = match (&u.token, &u.token_file) {
        (Some(t), _) => Some(TokenSource::Inline(t.clone())),
        (None, Some(f)) => {
            let path = base.join(f);
            read(&path)?;
            Some(TokenSource::File(path))
        }
        (None, None) => None,
    };
    let cert = data_or_file(
        "client-certificate",
        &u.client_cert_data,
        &u.client_cert,
        base,
    )?;
    let key = data_or_file("client-key", &u.client_key_data, &u.client_key, base)?;
    let client_cert = match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => Some(ClientCert { cert_pem, key_pem }),
        (None, None) => None,
        (Some(_), None) => return unsupported("client-certificate is given without client-key"),
        (None, Some(_)) => return unsupported("client-key is given without client-certificate"),
    };
    // As in client-go, a token or certificate given outright is used, and
    // the exec plugin beside it is not run.
    let exec = match &u.exec {
        Some(_) if token.is_some() || client_cert.is_some() => {
            tracing::info!(
                "kubeconfig: a token or client certificate is given; its exec plugin is not run"
            );
            None
        }
        Some(e) => Some(exec_config(e, base, server, ca_pem)?),
        None => None,
    };
    Ok(Credentials {
        token,
        client_cert,
        exec,
    })
}

fn exec_config(
    e: &Exec,
    base: &Path,
    server: &str,
    ca_pem: &Option<Vec<u8>>,
) -> Result<ExecConfig, KubeconfigError> {
    let invalid = |m: String| Err(KubeconfigError::Unsupported(format!("exec: {m}")));
    if e.command.is_empty() {
        return invalid("command is required".into());
    }
    if !exec::API_VERSIONS.contains(&e.api_version.as_str()) {
        return invalid(format!(
            "apiVersion {:?} is not one of {}",
            e.api_version,
            exec::API_VERSIONS.join(", ")
        ));
    }
    // A proxy has no terminal to ask a user at.
    if e.interactive_mode.as_deref() == Some("Always") {
        return invalid("interactiveMode Always needs a terminal, which a proxy has not".into());
    }
    // client-go resolves a relative command with a slash against the
    // kubeconfig's folder; a bare name is looked up on PATH.
    let command = Path::new(&e.command);
    let command = if command.is_relative() && e.command.contains('/') {
        base.join(command)
    } else {
        command.to_path_buf()
    };
    Ok(ExecConfig {
        api_version: e.api_version.clone(),
        command,
        args: e.args.clone(),
        env: e
            .env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect(),
        install_hint: e.install_hint.clone(),
        cluster: e.provide_cluster_info.then(|| ClusterInfo {
            server: server.to_string(),
            ca_pem: ca_pem.clone(),
        }),
    })
}

const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

pub fn in_cluster() -> Result<UpstreamConfig, KubeconfigError> {
    let host = std::env::var("KUBERNETES_SERVICE_HOST")
        .map_err(|_| KubeconfigError::NotInCluster("KUBERNETES_SERVICE_HOST is not set".into()))?;
    let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".into());
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let token_path = std::path::PathBuf::from(format!("{SA_DIR}/token"));
    std::fs::read_to_string(&token_path)
        .map_err(|e| KubeconfigError::Read(token_path.display().to_string(), e))?;
    let ca = read(Path::new(&format!("{SA_DIR}/ca.crt")))?;
    Ok(UpstreamConfig {
        url: format!("https://{host}:{port}"),
        ca_pem: Some(ca),
        credentials: Credentials {
            // The kubelet rotates this file: it is re-read, not copied.
            token: Some(TokenSource::File(token_path)),
            ..Credentials::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_server_token_and_ca_of_the_current_context() {
        let dir = std::env::temp_dir().join(format!("kc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.pem"), b"PEM").unwrap();
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
  cluster: {server: "https://one:6443"}
- name: c2
  cluster: {server: "https://two:6443", certificate-authority: ca.pem}
users:
- name: u1
  user: {token: t1}
- name: u2
  user: {token: t2}
"#;
        std::fs::write(dir.join("config"), kc).unwrap();
        let c = from_kubeconfig(&dir.join("config"), None).unwrap();
        assert_eq!(c.url, "https://two:6443");
        assert_eq!(c.credentials.token, Some(TokenSource::Inline("t2".into())));
        assert_eq!(c.ca_pem.as_deref(), Some(&b"PEM"[..]));
        let c = from_kubeconfig(&dir.join("config"), Some("a")).unwrap();
        assert_eq!(c.url, "https://one:6443");
        assert!(matches!(
            from_kubeconfig(&dir.join("config"), Some("zz")),
            Err(KubeconfigError::NoContext(_))
        ));
    }

    /// A kubeconfig of one context whose user is `user` (YAML flow), in a
    /// folder of its own.
    fn one_user(name: &str, user: &str) -> Result<UpstreamConfig, KubeconfigError> {
        let dir = std::env::temp_dir().join(format!("kc-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cert.pem"), b"CERT").unwrap();
        std::fs::write(dir.join("key.pem"), b"KEY").unwrap();
        let kc = format!(
            "current-context: x\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n\
             clusters: [{{name: c, cluster: {{server: 'https://up:6443', certificate-authority-data: UEVN}}}}]\n\
             users: [{{name: u, user: {user}}}]\n"
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
            cert_pem: b"CERT".to_vec(),
            key_pem: b"KEY".to_vec(),
        };
        assert_eq!(c.credentials.client_cert.as_ref(), Some(&want));
        let c = one_user(
            "cert-data",
            "{client-certificate-data: Q0VSVA==, client-key-data: S0VZ, token: t}",
        )
        .unwrap();
        assert_eq!(c.credentials.client_cert, Some(want));
        // A token goes along with a certificate, as in client-go.
        assert_eq!(c.credentials.token, Some(TokenSource::Inline("t".into())));
        for (user, words) in [
            ("{client-certificate: cert.pem}", "without client-key"),
            ("{client-key-data: S0VZ}", "without client-certificate"),
            (
                "{client-certificate-data: '!!', client-key-data: S0VZ}",
                "client-certificate-data",
            ),
            (
                "{client-certificate: missing.pem, client-key: key.pem}",
                "missing.pem",
            ),
            ("{username: a, password: b}", "basic authentication"),
            ("{auth-provider: {name: gcp}}", "auth-provider"),
        ] {
            let e = one_user("cert-bad", user).unwrap_err();
            assert!(e.to_string().contains(words), "{user}: {e}");
        }
    }

    #[test]
    fn an_exec_plugin_is_resolved_as_client_go_resolves_it() {
        let user = "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./bin/plugin, \
                    args: [get-token], env: [{name: A, value: b}], installHint: get it, provideClusterInfo: true}}";
        let c = one_user("exec", user).unwrap();
        let e = c.credentials.exec.unwrap();
        let dir = std::env::temp_dir().join(format!("kc-exec-{}", std::process::id()));
        assert_eq!(e.command, dir.join("./bin/plugin"));
        assert_eq!(e.args, ["get-token"]);
        assert_eq!(e.env, [("A".to_string(), "b".to_string())]);
        assert_eq!(e.install_hint.as_deref(), Some("get it"));
        let cluster = e.cluster.unwrap();
        assert_eq!(cluster.server, "https://up:6443");
        assert_eq!(cluster.ca_pem.as_deref(), Some(&b"PEM"[..]));
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
            let e = one_user("exec-bad", user).unwrap_err();
            assert!(e.to_string().contains(words), "{user}: {e}");
        }
    }
}
