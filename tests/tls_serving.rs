//! kubecache serving HTTPS: HTTP/2 and HTTP/1.1 through ALPN, with its
//! certificate from PEM files; a certificate replaced on disk is served to
//! new connections within seconds, while open connections — a watch
//! among them — carry on undisturbed. kubectl reads through it. The
//! upstream is the simulator; the certificates are made here (rcgen).

mod common;

use bytes::Bytes;
use common::*;
use http::{Method, Request, Version};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use kubecache::serve::tls::ServingCert;
use std::path::PathBuf;
use std::time::Duration;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubecache-tls-{name}-{}", unique_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// GETs `url` with `client`: the status, the HTTP version, the body.
async fn get_with(
    client: &Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    url: &str,
) -> Result<(u16, Version, Bytes), String> {
    let req = Request::builder()
        .uri(url)
        .header("accept", "application/json")
        .body(Full::default())
        .unwrap();
    let resp = client.request(req).await.map_err(|e| format!("{e:?}"))?;
    let (status, version) = (resp.status().as_u16(), resp.version());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Ok((status, version, body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_http2_and_http1_through_alpn_from_the_cache() {
    within(30, async {
        let sim = SimBuilder::new().start().await;
        let ca = TestCa::new("kubecache test CA");
        let files = ca.issue_into(&scratch("alpn"));
        let p = ProxyBuilder::new(&sim.url)
            .tls(ServingCert::load(&files).unwrap())
            .start()
            .await;
        assert!(p.url.starts_with("https://"));
        let list = format!(
            "{}/api/v1/namespaces/default/configmaps?resourceVersion=0",
            p.url
        );
        for (h2, version) in [(true, Version::HTTP_2), (false, Version::HTTP_11)] {
            let (status, v, body) = get_with(&ca.client(h2), &list).await.unwrap();
            assert_eq!(
                (status, v),
                (200, version),
                "{}",
                String::from_utf8_lossy(&body)
            );
            let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(list["kind"], "ConfigMapList");
        }
        // Plain HTTP to the TLS port gets what Go's net/http answers it.
        let plain = get(&list.replace("https://", "http://")).await;
        assert_eq!(plain.status, 400);
        assert_eq!(
            plain.text(),
            "Client sent an HTTP request to an HTTPS server.\n"
        );
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_certificate_is_served_to_new_connections_while_open_ones_carry_on() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let dir = scratch("reload");
        let (old_ca, new_ca) = (TestCa::new("old CA"), TestCa::new("new CA"));
        let files = old_ca.issue_into(&dir);
        let p = ProxyBuilder::new(&sim.url)
            .tls(ServingCert::load(&files).unwrap())
            .start()
            .await;
        wait_synced_via(&old_ca, &p.url).await;
        let configmaps = format!("{}/api/v1/namespaces/default/configmaps", p.url);
        // An HTTP/2 connection, trusting the old CA only, with a watch open
        // on it and another request to come.
        let old = old_ca.client(true);
        let watch = old
            .request(
                Request::builder()
                    .uri(format!("{configmaps}?watch=1&resourceVersion=0"))
                    .body(Full::default())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(watch.status(), 200);
        let mut events = watch.into_body();

        new_ca.issue_into(&dir);
        let new = new_ca.client(true);
        let mut served = None;
        for _ in 0..100 {
            if let Ok(r) = get_with(&new, &format!("{configmaps}?resourceVersion=0")).await {
                served = Some(r.0);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(served, Some(200), "the new certificate was never served");
        // A new connection trusting only the old CA is refused now.
        let fresh_old = old_ca.client(true);
        let refused = get_with(&fresh_old, &format!("{configmaps}?resourceVersion=0")).await;
        assert!(refused.is_err(), "{refused:?}");
        // The open connection still serves, and its watch still streams.
        let again = get_with(&old, &format!("{configmaps}?resourceVersion=0")).await;
        assert_eq!(again.map(|r| r.0), Ok(200));
        let created = send(
            Method::POST,
            &format!("{}/api/v1/namespaces/default/configmaps", sim.url),
            Some(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-reload"}})),
        )
        .await;
        assert_eq!(created.status, 201);
        let mut seen = String::new();
        while !seen.contains("after-reload") {
            let frame = events.frame().await.expect("the watch ended").unwrap();
            if let Ok(data) = frame.into_data() {
                seen.push_str(&String::from_utf8_lossy(&data));
            }
        }
    })
    .await
}

/// Waits until configmaps are served from the cache through `url`.
async fn wait_synced_via(ca: &TestCa, url: &str) {
    let client = ca.client(false);
    let path = format!("{url}/api/v1/configmaps?resourceVersion=0");
    get_with(&client, &path).await.unwrap();
    for _ in 0..300 {
        let (_, _, body) = get_with(&client, &format!("{url}/readyz?verbose"))
            .await
            .unwrap();
        if String::from_utf8_lossy(&body).contains("[+]informer-sync/v1/configmaps ok") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("configmaps never synced");
}

// kubectl is installed by .ci/run, which runs the tests with this feature.
#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_through_https_with_the_ca_it_is_given() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let dir = scratch("kubectl");
        let ca = TestCa::new("kubectl CA");
        let files = ca.issue_into(&dir);
        let p = ProxyBuilder::new(&sim.url)
            .tls(ServingCert::load(&files).unwrap())
            .start()
            .await;
        let ca_file = ca.pem_file(&dir);
        let ca_flag = format!("--certificate-authority={}", ca_file.display());
        // A token, or kubectl asks for a password (trust-local ignores it).
        let (ok, out, err) = kubectl(
            &p.url,
            &[
                &ca_flag,
                "--token=unused",
                "get",
                "configmaps",
                "-n",
                "default",
                "-o",
                "name",
            ],
            None,
        );
        assert!(ok, "{err}");
        assert!(
            out.lines().count() > 0 && out.starts_with("configmap/"),
            "{out}"
        );
        // Without the CA, kubectl refuses kubecache's certificate.
        let (ok, _, err) = kubectl(
            &p.url,
            &["--token=unused", "get", "configmaps", "-n", "default"],
            None,
        );
        assert!(!ok);
        assert!(err.contains("certificate"), "{err}");
    })
    .await
}

/// A client that opens a connection to the TLS port and never finishes
/// its handshake — silent, or stalled halfway through its ClientHello —
/// holds it for the handshake's 10 s and no longer, while other clients
/// are served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_that_never_finishes_is_closed_after_ten_seconds() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let ca = TestCa::new("kubecache test CA");
        let files = ca.issue_into(&scratch("handshake"));
        let p = ProxyBuilder::new(&sim.url)
            .tls(ServingCert::load(&files).unwrap())
            .start()
            .await;
        let addr = p.url.trim_start_matches("https://").to_string();
        let silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let mut stalled = tokio::net::TcpStream::connect(&addr).await.unwrap();
        // A TLS record header and the start of a ClientHello, no more.
        stalled
            .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01])
            .await
            .unwrap();
        let opened = std::time::Instant::now();
        let (status, _, _) = get_with(&ca.client(true), &format!("{}/livez", p.url))
            .await
            .unwrap();
        assert_eq!(status, 200, "another client is served meanwhile");
        for (what, mut conn) in [("silent", silent), ("stalled", stalled)] {
            let mut buf = [0u8; 64];
            let read = tokio::time::timeout(Duration::from_secs(30), conn.read(&mut buf)).await;
            let closed = matches!(read, Ok(Ok(0)) | Ok(Err(_)));
            assert!(closed, "{what}: {read:?}");
            let held = opened.elapsed();
            assert!(
                held >= Duration::from_secs(9) && held < Duration::from_secs(15),
                "{what} held for {held:?}"
            );
        }
    })
    .await;
}
