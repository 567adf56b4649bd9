//! kubecache in front of the real apiserver's secure port: TLS verified
//! against the apiserver's CA, the proxy's bearer token read from a file,
//! and the apiserver's own 401 passed through when the token is wrong.
#![cfg(feature = "real-apiserver")]

mod common;

use common::*;
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
    UpstreamConfig {
        url: url.into(),
        token: Some(token),
        ca_pem: Some(std::fs::read(run.join("certs/apiserver.crt")).unwrap()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_and_the_apiservers_ca_reach_the_secure_port() {
    let (url, run, insecure) = secure();
    tokio::time::timeout(Duration::from_secs(60), async {
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
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_gets_the_apiservers_own_401() {
    let (url, run, _) = secure();
    tokio::time::timeout(Duration::from_secs(60), async {
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
    .await
    .expect("timed out");
}
