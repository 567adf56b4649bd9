//! What one request may take, against the simulator: a request line
//! longer than the limit gets 414, a header section larger than it 431
//! (over HTTP/1.1 and HTTP/2), a declared body larger than it 413 with
//! the apiserver's words, and an undeclared (chunked) one is cut off
//! there and never reaches the upstream whole. Per-user limits count
//! clients in authorize mode (tests/authorize.rs); trust-local's one
//! identity is not counted. Bounded memory, never a hang.

mod common;

use bytes::Bytes;
use common::*;
use http::Method;
use kubecache::serve::limits::LimitsConfig;

fn small() -> LimitsConfig {
    LimitsConfig {
        watches_per_user: 2,
        max_url_bytes: 2048,
        max_header_bytes: 16 * 1024,
        max_body_bytes: 4096,
        ..LimitsConfig::default()
    }
}

#[tokio::test]
async fn oversized_urls_headers_and_bodies_get_their_codes() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = ProxyBuilder::new(&sim.url).limits(small()).start().await;
        let long = format!(
            "{}/api/v1/pods?labelSelector=a+in+({})",
            p.url,
            "x,".repeat(1100)
        );
        let r = get(&long).await;
        assert_eq!(r.status, 414, "{}", r.text());
        assert_eq!(r.json()["code"], 414);
        let big = "v".repeat(20 * 1024);
        let r = send_with(
            Method::GET,
            &format!("{}/api/v1/pods", p.url),
            &[("x-big", &big)],
            Bytes::new(),
        )
        .await;
        assert_eq!(r.status, 431);
        // HTTP/2 (prior knowledge, as over TLS after ALPN) too.
        let h2 = h2_get_status(&format!("{}/api/v1/namespaces", p.url), &[("x-big", &big)]).await;
        assert_eq!(h2, 431);
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big"}, "data": {"k": "v".repeat(5000)}});
        let r = send(
            Method::POST,
            &format!("{}/api/v1/namespaces/default/configmaps", p.url),
            Some(cm.clone()),
        )
        .await;
        assert_eq!(r.status, 413, "{}", r.text());
        assert_eq!(
            r.json()["message"],
            "Request entity too large: limit is 4096"
        );
        assert_eq!(r.json()["reason"], "RequestEntityTooLarge");
        // Chunked, with no length declared: cut off at the limit, and the
        // object is not created.
        let r = send_chunked(
            &format!("{}/api/v1/namespaces/default/configmaps", p.url),
            cm.to_string(),
        )
        .await;
        assert!(r >= 400, "a cut-off body answered {r}");
        let r = get(&format!(
            "{}/api/v1/namespaces/default/configmaps/big",
            sim.url
        ))
        .await;
        assert_eq!(r.status, 404);
        // Within the limits all is as before.
        let r = get(&format!("{}/api/v1/namespaces", p.url)).await;
        assert_eq!(r.status, 200);
    })
    .await
}

#[tokio::test]
async fn trust_local_counts_no_user_so_its_clients_watches_are_not_limited_per_user() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = ProxyBuilder::new(&sim.url).limits(small()).start().await;
        let watch = format!("{}/api/v1/namespaces?watch=1&resourceVersion=0", p.url);
        let mut open = Vec::new();
        for _ in 0..5 {
            let w = request(&watch, "application/json").await;
            assert_eq!(w.status(), 200);
            open.push(w);
        }
    })
    .await
}
