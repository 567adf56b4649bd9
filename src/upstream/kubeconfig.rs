//! Where the upstream is and how to authenticate, from a kubeconfig file or
//! the in-cluster service account. Supported: server, CA (file or data),
//! bearer token (inline or file), insecure-skip-tls-verify is refused.

use super::credentials::TokenSource;
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
    exec: Option<serde_yaml::Value>,
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
    let ca_pem = match (&cluster.value.ca_data, &cluster.value.ca_file) {
        (Some(d), _) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(d.trim())
                .map_err(|e| {
                    KubeconfigError::Unsupported(format!("certificate-authority-data: {e}"))
                })?,
        ),
        (None, Some(f)) => Some(read(&base.join(f))?),
        _ => None,
    };
    let user = kc
        .users
        .iter()
        .find(|u| u.name == ctx.value.user)
        .map(|u| &u.value);
    let token = match user {
        Some(u) if u.client_cert.is_some() || u.client_cert_data.is_some() => {
            return Err(KubeconfigError::Unsupported(
                "client certificate authentication is not supported yet; use a token".into(),
            ))
        }
        Some(u) if u.exec.is_some() => {
            return Err(KubeconfigError::Unsupported(
                "exec credential plugins are not supported yet; use a token".into(),
            ))
        }
        Some(User { token: Some(t), .. }) => Some(TokenSource::Inline(t.clone())),
        Some(User {
            token_file: Some(f),
            ..
        }) => {
            let path = base.join(f);
            read(&path)?;
            Some(TokenSource::File(path))
        }
        _ => None,
    };
    Ok(UpstreamConfig {
        url: cluster.value.server.clone(),
        token,
        ca_pem,
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
        // The kubelet rotates this file: it is re-read, not copied.
        token: Some(TokenSource::File(token_path)),
        ca_pem: Some(ca),
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
        assert_eq!(c.token, Some(TokenSource::Inline("t2".into())));
        assert_eq!(c.ca_pem.as_deref(), Some(&b"PEM"[..]));
        let c = from_kubeconfig(&dir.join("config"), Some("a")).unwrap();
        assert_eq!(c.url, "https://one:6443");
        assert!(matches!(
            from_kubeconfig(&dir.join("config"), Some("zz")),
            Err(KubeconfigError::NoContext(_))
        ));
    }
}
