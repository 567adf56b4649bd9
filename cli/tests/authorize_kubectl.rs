//! `kubecache serve` as the issue's CLI contract runs it — `--upstream
//! --token-file --ca-file --listen --auth-mode authorize --tls-cert-file
//! --tls-private-key-file --client-ca-file` — in front of the real
//! apiserver running RBAC (`KUBECACHE_RBAC_APISERVER`, see .ci/run), used
//! by real kubectl with a token and with a client certificate: gets,
//! Tables, a watch, create and delete where RBAC allows them and the
//! apiserver's refusal where it does not. Its log, at trace level, is then
//! searched for every token, key and Secret value of the test: none may
//! appear.
#![cfg(feature = "real-apiserver")]

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use http::Method;
use running::Running;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn var(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| panic!("{k} (see .ci/run)"))
}

/// kubecache in authorize mode, logging everything (trace).
fn serve(serving_cert: &Path, serving_key: &Path) -> Running {
    let run = PathBuf::from(var("KUBECACHE_RBAC_APISERVER_RUN"));
    let certs = PathBuf::from(var("KUBECACHE_REAL_APISERVER_CLIENT_CERTS"));
    let mut cmd = running::kubecache();
    cmd.arg("serve")
        .args(["--upstream", &var("KUBECACHE_RBAC_APISERVER")])
        .arg("--token-file")
        .arg(run.join("token"))
        .arg("--ca-file")
        .arg(run.join("certs/apiserver.crt"))
        .args(["--listen", "127.0.0.1:0", "--auth-mode", "authorize"])
        .arg("--tls-cert-file")
        .arg(serving_cert)
        .arg("--tls-private-key-file")
        .arg(serving_key)
        .arg("--client-ca-file")
        .arg(certs.join("ca.crt"))
        .env_remove("KUBECONFIG")
        .env("KUBECACHE_LOG", "trace");
    running::spawn(cmd, "kubecache serving")
}

fn kubectl_as(url: &str, ca: &Path, who: &[String], args: &[&str]) -> (bool, String, String) {
    let mut cmd = kubectl_command(url);
    cmd.arg(format!("--certificate-authority={}", ca.display()))
        .args(who)
        .args(args);
    let out = cmd.output().expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn kubectl_with_a_token_or_a_certificate_reads_and_writes_as_itself_and_nothing_leaks_into_the_log(
) {
    within(300, async {
        let up = var("KUBECACHE_RBAC_APISERVER_INSECURE");
        let certs = PathBuf::from(var("KUBECACHE_REAL_APISERVER_CLIENT_CERTS"));
        let ns = format!("authz-kubectl-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let secret_value = format!("hunter2-{}", unique_suffix());
        let r = send(
            Method::POST,
            &format!("{up}/api/v1/namespaces/{ns}/secrets"),
            Some(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                        "stringData": {"password": secret_value}})),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        // reader (by token, through its group) and carol (by certificate,
        // through hers) may read and write configmaps and read secrets
        // here; nobody may not.
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "team"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "delete"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]},
            ]});
        let rbac = format!("{up}/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}");
        let r = send(Method::POST, &format!("{rbac}/roles"), Some(role)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "team"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-readers"}]});
        let r = send(Method::POST, &format!("{rbac}/rolebindings"), Some(binding)).await;
        assert_eq!(r.status, 201, "{}", r.text());

        let ca = TestCa::new("kubecache kubectl CA");
        let dir = std::env::temp_dir().join(format!("kubecache-authz-kubectl-{}", unique_suffix()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = ca.issue_into(&dir);
        let ca_file = ca.pem_file(&dir);
        let s = serve(&files.cert, &files.key);

        let reader = vec!["--token=reader-token-3f9a".to_string()];
        let carol = vec![
            format!("--client-certificate={}", certs.join("carol.crt").display()),
            format!("--client-key={}", certs.join("carol.key").display()),
        ];
        let nobody = vec!["--token=nobody-token-91ac".to_string()];
        // The Secret's value as the API carries it (base64).
        let mut encoded = String::new();
        for (who, creds) in [("reader", &reader), ("carol", &carol)] {
            let name = format!("made-by-{who}");
            let (ok, out, err) = kubectl_as(&s.url(), &ca_file, creds, &["-n", &ns, "create", "configmap", &name, "--from-literal=a=b"]);
            assert!(ok, "{who} create: {out}{err}");
            // A Table (kubectl get), served from the cache once synced.
            let mut listed = String::new();
            for _ in 0..50 {
                let (ok, out, err) = kubectl_as(&s.url(), &ca_file, creds, &["-n", &ns, "get", "configmaps", "--chunk-size=0"]);
                assert!(ok, "{who} get: {err}");
                listed = out;
                if listed.contains(&name) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            assert!(listed.starts_with("NAME") && listed.contains(&name), "{who}: {listed}");
            // Again: the decision is kubecache's to remember.
            let (ok, again, err) = kubectl_as(&s.url(), &ca_file, creds, &["-n", &ns, "get", "configmaps", "--chunk-size=0"]);
            assert!(ok && again.contains(&name), "{who} get again: {err}");
            let (ok, out, err) = kubectl_as(&s.url(), &ca_file, creds, &["-n", &ns, "get", "secret", "db", "-o", "jsonpath={.data.password}"]);
            assert!(ok, "{who} get secret: {err}");
            assert!(!out.is_empty());
            encoded = out;
            // A watch: the events so far, then the timeout ends it.
            let (ok, out, err) = kubectl_as(&s.url(), &ca_file, creds, &["get", "--raw", &format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=0&timeoutSeconds=2")]);
            assert!(ok, "{who} watch: {err}");
            assert!(out.contains(r#""type":"ADDED""#) && out.contains(&name), "{who}: {out}");
            let (ok, out, err) = kubectl_as(&s.url(), &ca_file, creds, &["-n", &ns, "delete", "configmap", &name]);
            assert!(ok, "{who} delete: {out}{err}");
        }
        // nobody: the apiserver's refusals, for a cached read and a write.
        let (ok, _, err) = kubectl_as(&s.url(), &ca_file, &nobody, &["-n", &ns, "get", "secrets", "--chunk-size=0"]);
        assert!(!ok);
        assert!(
            err.contains(&format!(r#"secrets is forbidden: User "nobody" cannot list resource "secrets" in API group "" in the namespace "{ns}""#)),
            "{err}"
        );
        let (ok, _, err) = kubectl_as(&s.url(), &ca_file, &nobody, &["-n", &ns, "create", "configmap", "x"]);
        assert!(!ok);
        assert!(err.contains(r#"User "nobody" cannot create resource "configmaps""#), "{err}");
        // A wrong token: the apiserver's 401.
        let wrong = vec!["--token=wrong".to_string()];
        let (ok, _, err) = kubectl_as(&s.url(), &ca_file, &wrong, &["-n", &ns, "get", "configmaps"]);
        assert!(!ok);
        assert!(err.contains("Unauthorized"), "{err}");

        // kubecache's /metrics: its authentication and authorization
        // counts, for whom the apiserver would let read its own (the
        // admin), not for nobody.
        let admin_token = std::fs::read_to_string(
            PathBuf::from(var("KUBECACHE_RBAC_APISERVER_RUN")).join("token"),
        )
        .unwrap();
        let admin = vec![format!("--token={}", admin_token.trim())];
        let (ok, metrics, err) = kubectl_as(&s.url(), &ca_file, &admin, &["get", "--raw", "/metrics"]);
        assert!(ok, "{err}");
        for line in [
            r#"authentication_attempts{result="success"}"#,
            r#"authentication_attempts{result="failure"}"#,
            r#"authentication_token_cache_request_total{status="hit"}"#,
            r#"authentication_token_cache_fetch_total{status="ok"}"#,
            r#"apiserver_authorization_decisions_total{type="Webhook",name="kubecache",decision="allowed"}"#,
            r#"apiserver_authorization_decisions_total{type="Webhook",name="kubecache",decision="denied"}"#,
            r#"apiserver_authorization_webhook_evaluations_total{name="kubecache",result="success"}"#,
            r#"kubecache_authorization_cache_requests_total{status="hit"}"#,
        ] {
            assert!(metrics.contains(line), "{line} not in /metrics:\n{metrics}");
        }
        let (ok, _, err) = kubectl_as(&s.url(), &ca_file, &nobody, &["get", "--raw", "/metrics"]);
        assert!(!ok);
        assert!(err.contains(r#"User \"nobody\" cannot get path \"/metrics\""#) || err.contains("Forbidden"), "{err}");
        // The status page, the same way.
        let (ok, page, err) = kubectl_as(&s.url(), &ca_file, &admin, &["get", "--raw", "/debug/cache"]);
        assert!(ok, "{err}");
        // kubectl asks for JSON.
        let page: serde_json::Value = serde_json::from_str(&page).unwrap();
        assert!(page["types"].as_array().is_some_and(|t| !t.is_empty()), "{page}");
        let (ok, _, err) = kubectl_as(&s.url(), &ca_file, &nobody, &["get", "--raw", "/debug/cache"]);
        assert!(!ok);
        assert!(err.contains(r#"User \"nobody\" cannot get path \"/debug/cache\""#) || err.contains("Forbidden"), "{err}");

        let log = s.log();
        assert!(log.contains("kubecache serving"), "{log}");
        let carol_key = std::fs::read_to_string(certs.join("carol.key")).unwrap();
        let key_body: String = carol_key.lines().filter(|l| !l.starts_with("-----")).collect();
        for (what, needle) in [
            ("the admin token", admin_token.trim()),
            ("reader's token", "reader-token-3f9a"),
            ("nobody's token", "nobody-token-91ac"),
            ("the wrong token", "Bearer wrong"),
            ("carol's key", &key_body[..40]),
            ("the secret's value", &secret_value),
            ("the secret's value, encoded", &encoded),
        ] {
            assert!(!log.contains(needle), "{what} is in kubecache's log");
        }
        println!("kubecache's trace log: {} lines, no token, key or secret value in it", log.lines().count());
    })
    .await
}
