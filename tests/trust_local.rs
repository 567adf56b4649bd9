//! trust-local mode, in which every client is served with kubecache's own
//! identity, keeps to the machine's own clients as `kubectl proxy` does: a
//! request for a host that is not a loopback name or address (what a
//! DNS-rebinding page in a browser sends) is refused before anything is
//! read or forwarded, and so is impersonation, which kubecache's identity
//! would otherwise carry out for anyone. Exec and attach are in
//! `passthrough.rs`. The upstream is the simulator.

mod common;

use bytes::Bytes;
use common::*;
use http::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CONFIGMAP: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rebound"}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_a_host_that_is_not_loopback_is_refused_and_does_nothing() {
    within(30, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        let port = p.addr.port();
        let configmaps = format!("{}/api/v1/namespaces/default/configmaps", p.url);
        // What a page served from evil.example sends once its name
        // resolves to 127.0.0.1.
        let evil = format!("evil.example:{port}");
        let r = send_with(
            Method::POST,
            &configmaps,
            &[
                ("host", &evil),
                ("origin", "http://evil.example"),
                ("content-type", "application/json"),
            ],
            Bytes::from(CONFIGMAP),
        )
        .await;
        assert_eq!(r.status, 403, "{}", r.text());
        let s = r.json();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["reason"], "Forbidden");
        let message = s["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("this one is for \"{evil}\"")),
            "{message}"
        );
        let gone = get(&format!("{configmaps}/rebound")).await;
        assert_eq!(gone.status, 404, "{}", gone.text());
        // Reads too, from the cache or not.
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        for path in [
            "/api/v1/configmaps?resourceVersion=0",
            "/api/v1/namespaces/default/configmaps",
            "/version",
            "/metrics",
            "/readyz",
        ] {
            let r = send_with(
                Method::GET,
                &format!("{}{path}", p.url),
                &[("host", "attacker.example")],
                Bytes::new(),
            )
            .await;
            assert_eq!(r.status, 403, "{path}: {}", r.text());
        }
        // Every loopback name and address is the machine's own.
        for host in [
            format!("localhost:{port}"),
            "localhost".into(),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ] {
            let r = send_with(
                Method::GET,
                &format!("{configmaps}?resourceVersion=0"),
                &[("host", &host)],
                Bytes::new(),
            )
            .await;
            assert_eq!(r.status, 200, "{host}: {}", r.text());
        }
    })
    .await
}

/// What the proxy answers to `raw`, sent as is on a new connection.
async fn raw_exchange(addr: std::net::SocketAddr, raw: &str) -> String {
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(raw.as_bytes()).await.unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_host_or_for_another_host_in_its_target_is_refused() {
    within(30, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        let answer = raw_exchange(p.addr, "GET /api/v1/namespaces HTTP/1.0\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.0 403"), "{answer}");
        assert!(answer.contains("this one is for no host"), "{answer}");
        // An absolute-form target names the host, whatever Host says.
        let answer = raw_exchange(
            p.addr,
            "GET http://evil.example/api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(answer.contains("this one is for \\\"evil.example\\\""), "{answer}");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_is_refused_for_reads_from_the_cache_and_for_writes() {
    within(30, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let configmaps = format!("{}/api/v1/namespaces/default/configmaps", p.url);
        for (header, value) in [
            ("impersonate-user", "alice"),
            ("impersonate-group", "system:masters"),
            ("impersonate-extra-scopes", "view"),
            ("impersonate-uid", "1234"),
        ] {
            let read = send_with(
                Method::GET,
                &format!("{configmaps}?resourceVersion=0"),
                &[(header, value)],
                Bytes::new(),
            )
            .await;
            assert_eq!(read.status, 403, "{header}: {}", read.text());
            assert!(
                read.json()["message"]
                    .as_str()
                    .unwrap()
                    .contains("does not pass on impersonation"),
                "{}",
                read.text()
            );
            let write = send_with(
                Method::POST,
                &configmaps,
                &[(header, value), ("content-type", "application/json")],
                Bytes::from(CONFIGMAP),
            )
            .await;
            assert_eq!(write.status, 403, "{header}: {}", write.text());
        }
        let gone = get(&format!("{configmaps}/rebound")).await;
        assert_eq!(gone.status, 404, "{}", gone.text());
    })
    .await
}
