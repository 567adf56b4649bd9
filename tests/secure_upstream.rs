//! kubecache in front of the real apiserver's secure port: TLS verified
//! against the apiserver's CA, the proxy's bearer token read from a file,
//! and the apiserver's own 401 passed through when the token is wrong;
//! client certificates (EC and RSA keys, files and inline data) and exec
//! credential plugins (a token replaced after a 401, a client certificate,
//! a refused certificate replaced on new connections) from kubeconfigs.
#![cfg(feature = "real-apiserver")]

mod common;

use common::*;
use kubecache::upstream::auth::Credentials;
use kubecache::upstream::credentials::TokenSource;
use kubecache::upstream::UpstreamConfig;
use std::path::PathBuf;
use std::time::Duration;

fn secure() -> (String, PathBuf, String) {
    let url = std::env::var("KUBECACHE_REAL_APISERVER_SECURE")
        .expect("KUBECACHE_REAL_APISERVER_SECURE=https://127.0.0.1:6443 (see .ci/run)");
    let run = PathBuf::from(
        std::env::var("KUBECACHE_REAL_APISERVER_RUN")
            .expect("KUBECACHE_REAL_APISERVER_RUN=the real apiserver's RUN dir (see .ci/run)"),
    );
    let insecure = std::env::var("KUBECACHE_REAL_APISERVER").expect("KUBECACHE_REAL_APISERVER");
    (url, run, insecure)
}

fn config(url: &str, run: &std::path::Path, token: TokenSource) -> UpstreamConfig {
    let up = UpstreamConfig::new(url)
        .unwrap()
        .with_ca_file(&run.join("certs/apiserver.crt"))
        .unwrap();
    UpstreamConfig {
        credentials: Credentials {
            token: Some(token),
            ..Credentials::default()
        },
        ..up
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_and_the_apiservers_ca_reach_the_secure_port() {
    let (url, run, insecure) = secure();
    within(60, async {
        let p = ProxyBuilder::new(&url)
            .upstream(config(&url, &run, TokenSource::File(run.join("token"))))
            .start()
            .await;
        wait_synced(&p, "/api/v1/namespaces", "v1/namespaces").await;
        let a = get(&format!("{insecure}/api/v1/namespaces?resourceVersion=0")).await;
        let b = get(&format!("{}/api/v1/namespaces?resourceVersion=0", p.url)).await;
        assert_eq!(b.status, 200, "{}", b.text());
        assert_eq!(item_set(&a.json()), item_set(&b.json()));
        // Passthrough carries the proxy's credentials too.
        let v = get(&format!("{}/version", p.url)).await;
        assert_eq!(v.status, 200, "{}", v.text());
        assert_eq!(v.json()["gitVersion"], "v1.20.2");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_gets_the_apiservers_own_401() {
    let (url, run, _) = secure();
    within(60, async {
        let p = ProxyBuilder::new(&url)
            .upstream(config(
                &url,
                &run,
                TokenSource::Inline("not-the-token".into()),
            ))
            .start()
            .await;
        let r = get(&format!("{}/api/v1/namespaces?resourceVersion=0", p.url)).await;
        assert_eq!(r.status, 401, "{}", r.text());
        let s = r.json();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["reason"], "Unauthorized");
        assert_eq!(s["code"], 401);
    })
    .await;
}

/// The client certificates .ci/client-certs made, for a CA the apiserver
/// was started to trust.
fn client_certs() -> PathBuf {
    PathBuf::from(
        std::env::var("KUBECACHE_REAL_APISERVER_CLIENT_CERTS").expect(
            "KUBECACHE_REAL_APISERVER_CLIENT_CERTS=the folder .ci/client-certs made (see .ci/run)",
        ),
    )
}

/// A kubeconfig for the secure port whose user is `user` (YAML flow), in a
/// folder of its own; paths in it are relative to that folder.
fn kubeconfig(name: &str, user: &str) -> UpstreamConfig {
    let (url, run, _) = secure();
    let dir = std::env::temp_dir().join(format!("kubecache-kc-{name}-{}", unique_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let kc = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n\
         contexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n\
         clusters: [{{name: c, cluster: {{server: '{url}', certificate-authority: '{}'}}}}]\n\
         users: [{{name: u, user: {user}}}]\n",
        run.join("certs/apiserver.crt").display()
    );
    std::fs::write(dir.join("config"), kc).unwrap();
    // Files the user names, beside it.
    let certs = client_certs();
    for f in ["admin-ec", "admin-rsa", "stranger"] {
        for ext in ["crt", "key"] {
            std::fs::copy(
                certs.join(format!("{f}.{ext}")),
                dir.join(format!("{f}.{ext}")),
            )
            .unwrap();
        }
    }
    std::fs::write(dir.join("token"), std::fs::read(run.join("token")).unwrap()).unwrap();
    kubecache::upstream::kubeconfig::from_kubeconfig(&dir.join("config"), None).unwrap()
}

/// Lists namespaces through a proxy with `cfg` upstream.
async fn namespaces_through(cfg: UpstreamConfig) -> Resp {
    let p = ProxyBuilder::new(&cfg.url.clone())
        .upstream(cfg)
        .start()
        .await;
    get(&format!("{}/api/v1/namespaces?resourceVersion=0", p.url)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_with_ec_and_rsa_keys_reach_the_secure_port() {
    within(60, async {
        for who in ["admin-ec", "admin-rsa"] {
            let user = format!("{{client-certificate: {who}.crt, client-key: {who}.key}}");
            let r = namespaces_through(kubeconfig(who, &user)).await;
            assert_eq!(r.status, 200, "{who}: {}", r.text());
            assert_eq!(r.json()["kind"], "NamespaceList");
        }
        // Inline data, as kubeadm's admin.conf carries it.
        use base64::Engine;
        let b64 = |f: &str| {
            base64::engine::general_purpose::STANDARD
                .encode(std::fs::read(client_certs().join(f)).unwrap())
        };
        let user = format!(
            "{{client-certificate-data: {}, client-key-data: {}}}",
            b64("admin-rsa.crt"),
            b64("admin-rsa.key")
        );
        let r = namespaces_through(kubeconfig("data", &user)).await;
        assert_eq!(r.status, 200, "{}", r.text());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_of_a_ca_the_apiserver_does_not_trust_gets_its_401() {
    within(60, async {
        let user = "{client-certificate: stranger.crt, client-key: stranger.key}";
        let r = namespaces_through(kubeconfig("stranger", user)).await;
        assert_eq!(r.status, 401, "{}", r.text());
        assert_eq!(r.json()["reason"], "Unauthorized");
    })
    .await;
}

/// A plugin script in its own folder, which it runs in, so that it can
/// read the files put beside it (`token`, the certificates).
fn exec_user(script: &str) -> (String, PathBuf) {
    let dir = std::env::temp_dir().join(format!("kubecache-plugin-{}", unique_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let plugin = dir.join("plugin");
    write_script(&plugin, &format!("cd \"$(dirname \"$0\")\"\n{script}"));
    let user = format!(
        "{{exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: '{}'}}}}",
        plugin.display()
    );
    (user, dir)
}

/// Whether `/version` through the proxy at `url`, refused (401) while the
/// plugin's first credential is in use, is served within 10 s.
async fn refused_then_served(url: &str) -> bool {
    for _ in 0..100 {
        let status = get(&format!("{url}/version")).await.status.as_u16();
        if status == 200 {
            return true;
        }
        assert_eq!(status, 401);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Whether the namespaces' reflector syncs within 10 s, every read of
/// them meanwhile served (by passthrough until it does).
async fn namespaces_served_then_synced(url: &str) -> bool {
    for _ in 0..100 {
        let r = get(&format!("{url}/api/v1/namespaces?resourceVersion=0")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let ready = get(&format!("{url}/readyz?verbose")).await.text();
        if ready.contains("[+]informer-sync/v1/namespaces ok") {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

const CREDENTIAL: &str =
    r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_plugins_token_is_replaced_after_the_apiserver_refuses_it() {
    let (_, run, _) = secure();
    within(60, async {
        // The first run answers a token the apiserver refuses, the later
        // ones the right one.
        let (user, dir) = exec_user(&format!(
            r#"n=$(( $(cat runs 2>/dev/null || echo 0) + 1 )); echo $n > runs
if [ $n = 1 ]; then t=wrong; else t=$(cat token); fi
printf '%s{{"token":"%s"}}}}' '{CREDENTIAL}' "$t""#
        ));
        std::fs::copy(run.join("token"), dir.join("token")).unwrap();
        let cfg = kubeconfig("exec-token", &user);
        let p = ProxyBuilder::new(&cfg.url.clone())
            .upstream(cfg)
            .start()
            .await;
        // The reflector's first list is refused and relists after a
        // backoff; the passthrough read below is refused or served,
        // depending on which came first. In the end every read is served.
        assert!(
            refused_then_served(&p.url).await,
            "the token was never replaced"
        );
        // Discovery, refused at the start, is looked at again when a read
        // finds its type unknown: the reads after it come from the cache.
        assert!(
            namespaces_served_then_synced(&p.url).await,
            "namespaces never synced"
        );
        let runs = std::fs::read_to_string(dir.join("runs")).unwrap();
        assert_eq!(runs.trim(), "2", "the plugin runs again only once refused");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_plugins_client_certificate_reaches_the_secure_port() {
    within(60, async {
        let certs = client_certs();
        let (user, dir) = exec_user(&format!(
            r#"pem() {{ awk '{{printf "%s\\n", $0}}' "$1"; }}
printf '%s{{"clientCertificateData":"%s","clientKeyData":"%s","expirationTimestamp":"2100-01-01T00:00:00Z"}}}}' '{CREDENTIAL}' "$(pem admin-ec.crt)" "$(pem admin-ec.key)""#
        ));
        for ext in ["crt", "key"] {
            let f = format!("admin-ec.{ext}");
            std::fs::copy(certs.join(&f), dir.join(&f)).unwrap();
        }
        let r = namespaces_through(kubeconfig("exec-cert", &user)).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["kind"], "NamespaceList");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_plugins_refused_certificate_is_replaced_on_new_connections() {
    within(60, async {
        // The first run answers a certificate of a CA the apiserver does
        // not trust, the later ones an admin's. The refused identity stays
        // with the connections made with it, and with any TLS session
        // resumed from theirs: only new connections with full handshakes
        // present the new certificate.
        let certs = client_certs();
        let (user, dir) = exec_user(&format!(
            r#"n=$(( $(cat runs 2>/dev/null || echo 0) + 1 )); echo $n > runs
if [ $n = 1 ]; then who=stranger; else who=admin-ec; fi
pem() {{ awk '{{printf "%s\\n", $0}}' "$1"; }}
printf '%s{{"clientCertificateData":"%s","clientKeyData":"%s"}}}}' '{CREDENTIAL}' "$(pem $who.crt)" "$(pem $who.key)""#
        ));
        for f in ["admin-ec", "stranger"] {
            for ext in ["crt", "key"] {
                let f = format!("{f}.{ext}");
                std::fs::copy(certs.join(&f), dir.join(&f)).unwrap();
            }
        }
        let cfg = kubeconfig("exec-cert-replaced", &user);
        let p = ProxyBuilder::new(&cfg.url.clone())
            .upstream(cfg)
            .start()
            .await;
        assert!(
            refused_then_served(&p.url).await,
            "the new certificate was never presented"
        );
        // The cache's client had its discovery refused on a connection
        // with the first certificate: it syncs once it no longer uses
        // that connection, nor resumes its session.
        assert!(
            namespaces_served_then_synced(&p.url).await,
            "the cache's client kept the refused certificate"
        );
        let runs = std::fs::read_to_string(dir.join("runs")).unwrap();
        assert_eq!(runs.trim(), "2", "the plugin runs again only once refused");
    })
    .await;
}
