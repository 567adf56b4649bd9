//! Credentials from a kubeconfig's exec plugin (client.authentication.k8s.io),
//! run as client-go runs it: the command with its args and env, the
//! `ExecCredential` request in `KUBERNETES_EXEC_INFO`, no stdin, and its
//! answer — a bearer token or a client certificate and key — kept until its
//! `expirationTimestamp`, or until the upstream answers 401 to it.
//!
//! kube-client reads the plugin's configuration, but kubecache runs it:
//! kube-client runs a plugin when a client is built (once for its TLS
//! configuration, again for its auth layer), blocking, with the terminal's
//! stdin and stderr unless `interactiveMode: Never`; it runs it again only
//! as a token nears its expiry, never after a 401 nor for a certificate,
//! and it takes answers client-go refuses.

use kube_client::config::ExecInteractiveMode;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The ExecCredential versions client-go speaks.
pub const API_VERSIONS: [&str; 3] = [
    "client.authentication.k8s.io/v1alpha1",
    "client.authentication.k8s.io/v1beta1",
    "client.authentication.k8s.io/v1",
];

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("exec plugin {command:?}: {err}{hint}")]
    Start {
        command: String,
        err: std::io::Error,
        hint: String,
    },
    #[error("exec plugin {0:?} exited with {1}: {2}")]
    Exit(String, std::process::ExitStatus, String),
    #[error("exec plugin {0:?} ran longer than {1:?}")]
    Timeout(String, Duration),
    #[error("exec plugin {0:?}: decoding its ExecCredential: {1}")]
    Decode(String, #[source] serde_json::Error),
    #[error("exec plugin {0:?}: {1}")]
    Invalid(String, String),
    #[error("exec: {0}")]
    Config(String),
}

/// What the kubeconfig says to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecConfig {
    pub api_version: String,
    /// Resolved against the kubeconfig's folder when relative with a slash.
    pub command: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub install_hint: Option<String>,
    /// `provideClusterInfo`: the request's `spec.cluster`, as kube-client
    /// writes the cluster (server, CA data, TLS server name…).
    pub cluster: Option<serde_json::Value>,
}

/// A credential the plugin gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecCredential {
    pub token: Option<String>,
    /// PEM certificate chain and key.
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    pub expires: Option<SystemTime>,
}

/// Not expired, nor about to. client-go waits for the expiry itself; a
/// proxy's requests include long lists and watches, so it replaces a
/// credential 10 s early rather than send one that expires in flight.
pub fn usable(now: SystemTime, expires: Option<SystemTime>) -> bool {
    expires.is_none_or(|t| now + Duration::from_secs(10) < t)
}

/// A plugin that answers nothing in this long is stuck; client-go has no
/// limit, but a proxy must not stall every upstream request behind one.
const TIMEOUT: Duration = Duration::from_secs(60);

impl ExecConfig {
    /// The plugin of a kubeconfig's user, as kube-client read it: a
    /// relative command with a slash already resolved against the
    /// kubeconfig's folder, the cluster filled in when
    /// `provideClusterInfo`. What client-go refuses, and what a proxy
    /// cannot do, is refused.
    pub fn from_kubeconfig(e: &kube_client::config::ExecConfig) -> Result<Self, ExecError> {
        let invalid = |m: String| Err(ExecError::Config(m));
        let command = match e.command.as_deref() {
            Some(c) if !c.is_empty() => c,
            _ => return invalid("command is required".into()),
        };
        let api_version = e.api_version.clone().unwrap_or_default();
        if !API_VERSIONS.contains(&api_version.as_str()) {
            return invalid(format!(
                "apiVersion {api_version:?} is not one of {}",
                API_VERSIONS.join(", ")
            ));
        }
        if e.interactive_mode == Some(ExecInteractiveMode::Always) {
            return invalid(
                "interactiveMode Always needs a terminal, which a proxy has not".into(),
            );
        }
        let cluster = match (&e.cluster, e.provide_cluster_info) {
            (Some(c), true) => Some(
                serde_json::to_value(c).map_err(|e| ExecError::Config(format!("cluster: {e}")))?,
            ),
            _ => None,
        };
        let field = |v: &std::collections::HashMap<String, String>, k: &str| {
            v.get(k).cloned().unwrap_or_default()
        };
        Ok(ExecConfig {
            api_version,
            command: command.into(),
            args: e.args.clone().unwrap_or_default(),
            env: e
                .env
                .iter()
                .flatten()
                .map(|v| (field(v, "name"), field(v, "value")))
                .collect(),
            install_hint: e.install_hint.clone(),
            cluster,
        })
    }

    /// Runs the plugin once and reads its answer.
    pub async fn run(&self) -> Result<ExecCredential, ExecError> {
        let name = self.command.display().to_string();
        let mut cmd = tokio::process::Command::new(&self.command);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("KUBERNETES_EXEC_INFO", self.request())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = async {
            // A plugin being written as it starts (replaced by an update, or
            // its writer's descriptor held a moment by a process forked
            // elsewhere) is "text file busy": that passes, so try again.
            let mut tries = 0;
            loop {
                match cmd.output().await {
                    Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 10 => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    other => return other,
                }
            }
        };
        let out = tokio::time::timeout(TIMEOUT, output)
            .await
            .map_err(|_| ExecError::Timeout(name.clone(), TIMEOUT))?
            .map_err(|err| ExecError::Start {
                command: name.clone(),
                err,
                hint: self
                    .install_hint
                    .as_ref()
                    .map(|h| format!("\n\n{h}"))
                    .unwrap_or_default(),
            })?;
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if !out.status.success() {
            return Err(ExecError::Exit(name, out.status, stderr));
        }
        if !stderr.is_empty() {
            tracing::info!(plugin = %name, "{stderr}");
        }
        self.parse(&out.stdout)
    }

    /// The `ExecCredential` the plugin finds in `KUBERNETES_EXEC_INFO`.
    fn request(&self) -> String {
        // In the order of client-go's structs: the cluster, then whether
        // the plugin may ask the user.
        let mut spec = serde_json::Map::new();
        if let Some(c) = &self.cluster {
            spec.insert("cluster".into(), c.clone());
        }
        spec.insert("interactive".into(), false.into());
        serde_json::json!({"kind": "ExecCredential", "apiVersion": self.api_version, "spec": spec})
            .to_string()
    }

    /// The plugin's answer, checked as client-go checks it.
    fn parse(&self, stdout: &[u8]) -> Result<ExecCredential, ExecError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Answer {
            #[serde(default)]
            api_version: String,
            #[serde(default)]
            kind: String,
            status: Option<Status>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Status {
            expiration_timestamp: Option<String>,
            #[serde(default)]
            token: String,
            #[serde(default)]
            client_certificate_data: String,
            #[serde(default)]
            client_key_data: String,
        }
        let name = self.command.display().to_string();
        let invalid = |m: String| ExecError::Invalid(name.clone(), m);
        let a: Answer =
            serde_json::from_slice(stdout).map_err(|e| ExecError::Decode(name.clone(), e))?;
        if a.kind != "ExecCredential" {
            return Err(invalid(format!(
                "it returned kind {:?}, not ExecCredential",
                a.kind
            )));
        }
        if a.api_version != self.api_version {
            return Err(invalid(format!(
                "exec plugin is configured to use API version {}, plugin returned version {}",
                self.api_version, a.api_version
            )));
        }
        let s = a
            .status
            .ok_or_else(|| invalid("exec plugin didn't return a status field".into()))?;
        let (cert, key) = (s.client_certificate_data, s.client_key_data);
        if s.token.is_empty() && cert.is_empty() && key.is_empty() {
            return Err(invalid(
                "exec plugin didn't return a token or cert/key pair".into(),
            ));
        }
        if cert.is_empty() != key.is_empty() {
            return Err(invalid(
                "exec plugin returned only certificate or key, not both".into(),
            ));
        }
        let expires = match s.expiration_timestamp {
            Some(t) => Some(parse_rfc3339(&t).ok_or_else(|| {
                invalid(format!("expirationTimestamp {t:?} is not an RFC 3339 time"))
            })?),
            None => None,
        };
        Ok(ExecCredential {
            token: (!s.token.is_empty()).then_some(s.token),
            client_cert: (!cert.is_empty()).then(|| (cert.into_bytes(), key.into_bytes())),
            expires,
        })
    }
}

/// An RFC 3339 time, as Go's time.RFC3339 reads it.
fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let (secs, nanos) = crate::go::time::rfc3339(s)?;
    let secs = u64::try_from(secs).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::new(secs, nanos))
}

/// Plugins for tests: shell scripts written to a temporary folder.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A v1beta1 plugin running `script` with the arg `one` and the env
    /// `PLUGIN_GREETING=hello`.
    pub fn plugin(script: &str) -> ExecConfig {
        let dir = std::env::temp_dir().join(format!("kubecache-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Named for its script, so that tests running at once do not
        // write over each other's.
        let hash = script.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let path = dir.join(format!("plugin-{hash:x}"));
        write_script(&path, script);
        ExecConfig {
            api_version: API_VERSIONS[1].into(),
            command: path,
            args: vec!["one".into()],
            env: vec![("PLUGIN_GREETING".into(), "hello".into())],
            install_hint: Some("install it from example.com".into()),
            cluster: None,
        }
    }

    /// An executable shell script at `path`, written aside and renamed
    /// into place: a plugin still open for writing cannot be run.
    pub fn write_script(path: &std::path::Path, script: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, format!("#!/bin/sh\n{script}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::testing::plugin;
    use super::*;

    const V1BETA1: &str =
        r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1""#;

    #[tokio::test]
    async fn a_plugin_gets_its_args_env_and_request_and_its_token_is_read() {
        let p = plugin(&format!(
            r#"[ "$1" = one ] && [ "$PLUGIN_GREETING" = hello ] || exit 3
case "$KUBERNETES_EXEC_INFO" in *'"interactive":false'*) ;; *) exit 4;; esac
echo '{V1BETA1},"status":{{"token":"t-1","expirationTimestamp":"2030-01-02T03:04:05Z"}}}}'"#
        ));
        let c = p.run().await.unwrap();
        assert_eq!(c.token.as_deref(), Some("t-1"));
        assert_eq!(c.client_cert, None);
        assert_eq!(c.expires, parse_rfc3339("2030-01-02T03:04:05Z"));
        assert!(usable(SystemTime::now(), c.expires));
        assert!(!usable(c.expires.unwrap(), c.expires));
        assert!(usable(SystemTime::now(), None));
    }

    #[tokio::test]
    async fn cluster_info_is_passed_when_asked_for() {
        let mut p = plugin(&format!(
            r#"case "$KUBERNETES_EXEC_INFO" in *'"spec":{{"cluster":{{"server":"https://up:6443","certificate-authority-data":"UEVN"}},"interactive":false}}'*) ;; *) echo "$KUBERNETES_EXEC_INFO" >&2; exit 4;; esac
echo '{V1BETA1},"status":{{"clientCertificateData":"CERT","clientKeyData":"KEY"}}}}'"#
        ));
        p.cluster = Some(serde_json::json!({
            "server": "https://up:6443",
            "certificate-authority-data": "UEVN",
        }));
        let c = p.run().await.unwrap();
        assert_eq!(c.client_cert, Some((b"CERT".to_vec(), b"KEY".to_vec())));
        assert_eq!((c.token, c.expires), (None, None));
    }

    #[tokio::test]
    async fn what_client_go_refuses_is_refused_with_its_words() {
        for (out, words) in [
            ("{}", "not ExecCredential"),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"}"#,
                "exec plugin is configured to use API version client.authentication.k8s.io/v1beta1, plugin returned version client.authentication.k8s.io/v1",
            ),
            (&format!("{V1BETA1}}}"), "didn't return a status field"),
            (&format!(r#"{V1BETA1},"status":{{}}}}"#), "didn't return a token or cert/key pair"),
            (
                &format!(r#"{V1BETA1},"status":{{"clientKeyData":"K"}}}}"#),
                "only certificate or key, not both",
            ),
            (
                &format!(r#"{V1BETA1},"status":{{"token":"t","expirationTimestamp":"soon"}}}}"#),
                "not an RFC 3339 time",
            ),
            ("not json", "decoding its ExecCredential"),
        ] {
            let e = plugin(&format!("echo '{out}'")).run().await.unwrap_err();
            assert!(e.to_string().contains(words), "{out}: {e}");
        }
        let e = plugin("echo broken >&2; exit 7").run().await.unwrap_err();
        assert!(matches!(e, ExecError::Exit(..)), "{e}");
        assert!(e.to_string().contains("broken"), "{e}");
        let mut missing = plugin("true");
        missing.command = "/nonexistent/kubecache-plugin".into();
        let e = missing.run().await.unwrap_err();
        assert!(e.to_string().contains("install it from example.com"), "{e}");
    }

    #[test]
    fn rfc3339_times_with_offsets_and_fractions() {
        let z = parse_rfc3339("2026-11-22T10:00:00Z").unwrap();
        assert_eq!(parse_rfc3339("2026-11-22T11:30:00+01:30"), Some(z));
        assert_eq!(
            parse_rfc3339("2026-11-22T10:00:00.5Z"),
            Some(z + Duration::from_millis(500))
        );
        assert_eq!(parse_rfc3339("2026-11-22T09:00:00-01:00"), Some(z));
        assert_eq!(
            z.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_795_341_600
        );
        for bad in [
            "2026-11-22",
            "2026-11-22T10:00:00",
            "2026-13-22T10:00:00Z",
            "2026-11-22T10:00:00+0100",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
