//! gzip against the real apiserver: the same bodies compressed or not, the
//! same 128 KiB threshold (a body of exactly 131,072 bytes goes out as it
//! is, one byte more is gzipped), the same `Accept-Encoding` parsing, and
//! the same Content-Encoding and Vary headers.
#![cfg(feature = "real-apiserver")]

mod common;

use common::*;
use flate2::read::GzDecoder;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::io::Read;
use std::time::Duration;

/// (Content-Encoding, Vary, the body decompressed).
async fn fetch_encoded(
    url: &str,
    accept_encoding: &str,
) -> (Option<String>, Option<String>, Vec<u8>) {
    let resp = request_with(
        url,
        &[
            ("accept", "application/json"),
            ("accept-encoding", accept_encoding),
            ("user-agent", "kubecache-tests"),
        ],
    )
    .await;
    assert_eq!(resp.status(), 200, "{url}");
    let header = |n: &str| {
        resp.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let (enc, vary) = (header("content-encoding"), header("vary"));
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let body = if enc.as_deref() == Some("gzip") {
        let mut out = Vec::new();
        GzDecoder::new(&body[..]).read_to_end(&mut out).unwrap();
        out
    } else {
        body.to_vec()
    };
    (enc, vary, body)
}

async fn create_cm(up: &str, ns: &str, name: &str, size: usize) {
    let body = json!({"metadata": {"name": name}, "data": {"pad": "x".repeat(size)}});
    let r = send(
        http::Method::POST,
        &format!("{up}/api/v1/namespaces/{ns}/configmaps"),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_follows_the_apiservers_threshold_and_negotiation() {
    let up = real_apiserver();
    within(90, async {
        let ns = format!("gzip-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let base = format!("{up}/api/v1/namespaces/{ns}/configmaps");
        // A probe tells the get body's size around its data; objects of the
        // same name length then land exactly on and just over the threshold.
        create_cm(&up, &ns, "edge-p", 1000).await;
        let probe = get(&format!("{base}/edge-p")).await.body.len();
        let fixed = probe - 1000;
        create_cm(&up, &ns, "edge-a", 131_072 - fixed).await;
        create_cm(&up, &ns, "edge-b", 131_073 - fixed).await;
        for i in 0..4 {
            create_cm(&up, &ns, &format!("bulk-{i}"), 60_000).await;
        }
        let p = start_proxy(&up).await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        converged_items(&up, &p, &path, Duration::from_secs(10)).await;
        for (name, size, gzipped) in [("edge-a", 131_072, false), ("edge-b", 131_073, true)] {
            let url = |server: &str| format!("{server}{path}/{name}?resourceVersion=0");
            let direct = fetch_encoded(&url(&up), "gzip").await;
            assert_eq!(direct.2.len(), size, "the probe mispredicted {name}'s size");
            assert_eq!(direct.0.is_some(), gzipped, "{name}");
            assert_eq!(fetch_encoded(&url(&p.url), "gzip").await, direct, "{name}");
        }
        // Negotiation: only the exact token counts.
        for ae in [
            "gzip",
            "deflate, gzip",
            "gzip;q=1",
            "GZIP",
            "*",
            "identity",
            "",
        ] {
            let url = |server: &str| format!("{server}{path}/edge-b?resourceVersion=0");
            let (a, b) = (
                fetch_encoded(&url(&up), ae).await,
                fetch_encoded(&url(&p.url), ae).await,
            );
            assert_eq!(b, a, "Accept-Encoding: {ae}");
        }
        // A list: compressed alike, the same objects (RV=0 order is free).
        let (ea, va, a) = fetch_encoded(&format!("{up}{path}?resourceVersion=0"), "gzip").await;
        let (eb, vb, b) =
            fetch_encoded(&format!("{}{path}?resourceVersion=0", p.url), "gzip").await;
        assert_eq!((eb, vb), (ea, va));
        let (a, b): (Value, Value) = (
            serde_json::from_slice(&a).unwrap(),
            serde_json::from_slice(&b).unwrap(),
        );
        assert_eq!(item_set(&b).1, item_set(&a).1);
    })
    .await;
}
