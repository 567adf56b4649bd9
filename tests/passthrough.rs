//! What kubecache forwards, it forwards faithfully and streaming: HTTP
//! upgrades (exec/attach/port-forward) spliced both ways (exec and attach
//! only when allowed: trust-local refuses them by default, as `kubectl
//! proxy` does), followed logs
//! delivered as they come, large request bodies streamed up, the
//! upstream's errors and headers unchanged, its own credentials instead of
//! the client's, hop-by-hop headers dropped, and a 503 Status when the
//! upstream cannot be reached. The upstream here is a scripted fake.

mod common;

use bytes::Bytes;
use common::*;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubecache::serve::limits::LimitsConfig;
use kubecache::upstream::auth::Credentials;
use kubecache::upstream::credentials::TokenSource;
use kubecache::upstream::UpstreamConfig;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type FakeBody = kubecache::body::Body;

fn full(b: impl Into<Bytes>) -> FakeBody {
    kubecache::body::full(b)
}

/// An upstream whose every answer comes from `handler`.
async fn fake_upstream<F, Fut>(handler: F) -> String
where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<FakeBody>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = Arc::new(handler);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let handler = handler.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let h = handler.clone();
                    async move { Ok::<_, Infallible>(h(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .with_upgrades()
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

fn client(
) -> hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, FakeBody>
{
    hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build(hyper_util::client::legacy::connect::HttpConnector::new())
}

/// An upstream whose exec answers every message with "echo:" and it.
async fn echo_exec_upstream() -> String {
    fake_upstream(|mut req: Request<Incoming>| async move {
        assert!(req.uri().path().ends_with("/exec"));
        let on = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            let mut io = TokioIo::new(on.await.unwrap());
            let mut buf = [0u8; 64];
            loop {
                let n = io.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    return;
                }
                let mut reply = b"echo:".to_vec();
                reply.extend_from_slice(&buf[..n]);
                io.write_all(&reply).await.unwrap();
            }
        });
        Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header("connection", "Upgrade")
            .header("upgrade", "SPDY/3.1")
            .header("x-stream-protocol-version", "v4.channel.k8s.io")
            .body(full(""))
            .unwrap()
    })
    .await
}

type Session = TokioIo<hyper::upgrade::Upgraded>;

/// An exec session through the proxy at `url`.
async fn open_exec(url: &str) -> Session {
    let req = Request::post(format!(
        "{url}/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true"
    ))
    .header("connection", "Upgrade")
    .header("upgrade", "SPDY/3.1")
    .header("x-stream-protocol-version", "v4.channel.k8s.io")
    .body(full(""))
    .unwrap();
    let mut resp = client().request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(resp.headers()["upgrade"], "SPDY/3.1");
    assert_eq!(
        resp.headers()["x-stream-protocol-version"],
        "v4.channel.k8s.io"
    );
    TokioIo::new(hyper::upgrade::on(&mut resp).await.unwrap())
}

async fn echoes(io: &mut Session, msg: &str) {
    io.write_all(msg.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 5 + msg.len()];
    io.read_exact(&mut buf).await.unwrap();
    assert_eq!(buf, format!("echo:{msg}").as_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_upgrades_are_spliced_both_ways() {
    within(30, async {
        let up = echo_exec_upstream().await;
        let p = ProxyBuilder::new(&up).allow_exec().start().await;
        let mut io = open_exec(&p.url).await;
        for msg in ["ls", "whoami"] {
            echoes(&mut io, msg).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_session_holds_its_connection_slot_until_it_ends() {
    within(30, async {
        let up = echo_exec_upstream().await;
        let p = ProxyBuilder::new(&up)
            .allow_exec()
            .limits(LimitsConfig {
                max_connections: Some(1),
                ..Default::default()
            })
            .start()
            .await;
        let mut io = open_exec(&p.url).await;
        echoes(&mut io, "ls").await;
        // The one slot is the session's (hyper ended the connection's own
        // task when it upgraded): another client waits in the backlog.
        let url = format!("{}/livez", p.url);
        let waiting = tokio::spawn(async move { get(&url).await.status });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished(), "served past the cap");
        echoes(&mut io, "still here").await;
        drop(io);
        let status = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("answered once the session ended")
            .unwrap();
        assert_eq!(status, 200);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_session_ends_when_the_drain_starts() {
    within(30, async {
        let up = echo_exec_upstream().await;
        let mut p = ProxyBuilder::new(&up).allow_exec().start().await;
        let mut io = open_exec(&p.url).await;
        echoes(&mut io, "ls").await;
        p.begin_stop();
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(5), io.read(&mut buf))
            .await
            .expect("the session ended")
            .unwrap_or(0);
        assert_eq!(n, 0, "an orderly end, not more bytes");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_and_attach_are_refused_unless_allowed_and_never_reach_the_upstream() {
    within(30, async {
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = seen.clone();
        let up = fake_upstream(move |req: Request<Incoming>| {
            log.lock().unwrap().push(req.uri().path().to_string());
            async { Response::builder().body(full("{}")).unwrap() }
        })
        .await;
        let p = start_proxy(&up).await;
        for sub in ["exec", "attach"] {
            let url = format!("{}/api/v1/namespaces/default/pods/web-1/{sub}?command=sh", p.url);
            let r = send_with(http::Method::POST, &url, &[], Bytes::new()).await;
            assert_eq!(r.status, 403, "{}", r.text());
            let s = r.json();
            assert_eq!(s["reason"], "Forbidden");
            assert_eq!(
                s["message"],
                format!("pods \"web-1\" is forbidden: kubecache in trust-local mode does not pass on pods/{sub} unless it runs with --allow-exec")
            );
            assert_eq!(s["details"], serde_json::json!({"name": "web-1", "kind": "pods"}));
        }
        // Other subresources of pods are passed on.
        let logs = send_with(
            http::Method::GET,
            &format!("{}/api/v1/namespaces/default/pods/web-1/log", p.url),
            &[],
            Bytes::new(),
        )
        .await;
        assert_eq!(logs.status, 200);
        // Discovery's requests beside it, and no exec or attach.
        let seen = seen.lock().unwrap();
        let pods: Vec<_> = seen.iter().filter(|p| p.contains("/pods/")).collect();
        assert_eq!(pods, ["/api/v1/namespaces/default/pods/web-1/log"]);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followed_logs_arrive_as_the_upstream_writes_them() {
    within(30, async {
        let (release_tx, release_rx) = tokio::sync::watch::channel(false);
        let up = fake_upstream(move |req: Request<Incoming>| {
            let mut release = release_rx.clone();
            async move {
                assert_eq!(req.uri().query(), Some("follow=true"));
                let (tx, body) = kubecache::body::channel(4);
                tokio::spawn(async move {
                    let _ = tx.send(Bytes::from("line 1\n")).await;
                    // The second line waits for the test to have seen the first.
                    let _ = release.wait_for(|r| *r).await;
                    let _ = tx.send(Bytes::from("line 2\n")).await;
                });
                Response::builder()
                    .header("content-type", "text/plain")
                    .body(body)
                    .unwrap()
            }
        })
        .await;
        let p = start_proxy(&up).await;
        let req = Request::get(format!(
            "{}/api/v1/namespaces/default/pods/p/log?follow=true",
            p.url
        ))
        .body(full(""))
        .unwrap();
        let resp = client().request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/plain");
        let mut body = resp.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first, "line 1\n");
        release_tx.send_replace(true);
        let rest = body.collect().await.unwrap().to_bytes();
        assert_eq!(rest, "line 2\n");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_go_up_whole_with_the_proxys_credentials_and_without_hop_headers() {
    within(30, async {
        let up = fake_upstream(|req: Request<Incoming>| async move {
            let h = req.headers().clone();
            let method = req.method().to_string();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let sum: u64 = body.iter().map(|b| *b as u64).sum();
            let seen = serde_json::json!({
                "method": method,
                "len": body.len(),
                "sum": sum,
                "authorization": h.get("authorization").map(|v| v.to_str().unwrap()),
                "x-test": h.get("x-test").map(|v| v.to_str().unwrap()),
                "x-hop": h.get("x-hop").map(|v| v.to_str().unwrap()),
                "proxy-authorization": h.get("proxy-authorization").map(|v| v.to_str().unwrap()),
                "content-type": h.get("content-type").map(|v| v.to_str().unwrap()),
            });
            Response::builder()
                .status(201)
                .header("content-type", "application/json")
                .header("warning", "299 - \"kept as it is\"")
                .body(full(seen.to_string()))
                .unwrap()
        })
        .await;
        let p = ProxyBuilder::new(&up)
            .upstream(UpstreamConfig {
                credentials: Credentials {
                    token: Some(TokenSource::Inline("proxy-token".into())),
                    ..Credentials::default()
                },
                ..UpstreamConfig::new(&up).unwrap()
            })
            // Over the apiserver's 3 MiB (its own limit is the fake's to keep).
            .limits(LimitsConfig {
                max_body_bytes: 8 << 20,
                ..LimitsConfig::default()
            })
            .start()
            .await;
        let big: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
        let sum: u64 = big.iter().map(|b| *b as u64).sum();
        let req = Request::post(format!("{}/api/v1/namespaces/default/configmaps", p.url))
            .header("authorization", "Bearer client-token")
            .header("proxy-authorization", "Basic c2VjcmV0")
            .header("content-type", "application/json")
            .header("x-test", "1")
            .header("connection", "keep-alive, x-hop")
            .header("x-hop", "only for the next hop")
            .body(full(big.clone()))
            .unwrap();
        let resp = client().request(req).await.unwrap();
        assert_eq!(resp.status(), 201);
        assert_eq!(resp.headers()["warning"], "299 - \"kept as it is\"");
        let seen: serde_json::Value =
            serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(seen["method"], "POST");
        assert_eq!(seen["len"], big.len());
        assert_eq!(seen["sum"], sum);
        assert_eq!(seen["authorization"], "Bearer proxy-token");
        assert_eq!(seen["x-test"], "1");
        assert_eq!(seen["content-type"], "application/json");
        assert!(seen["x-hop"].is_null(), "{seen}");
        assert!(seen["proxy-authorization"].is_null(), "{seen}");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_reach_the_client_unchanged() {
    within(30, async {
        const STATUS: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"ConfigMap \\\"x\\\" is invalid: data: Too long\",\"reason\":\"Invalid\",\"details\":{\"name\":\"x\",\"kind\":\"ConfigMap\"},\"code\":422}\n";
        let up = fake_upstream(|_req: Request<Incoming>| async move {
            Response::builder()
                .status(422)
                .header("content-type", "application/json")
                .header("audit-id", "a1b2")
                .body(full(STATUS))
                .unwrap()
        })
        .await;
        let p = start_proxy(&up).await;
        let r = send(
            http::Method::PUT,
            &format!("{}/api/v1/namespaces/default/configmaps/x", p.url),
            Some(serde_json::json!({"metadata": {"name": "x"}})),
        )
        .await;
        assert_eq!(r.status, 422);
        assert_eq!(r.headers["audit-id"], "a1b2");
        assert_eq!(r.text(), STATUS);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_is_a_503_status() {
    within(30, async {
        // A port that was free a moment ago: nothing listens there.
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let p = start_proxy(&format!("http://{addr}")).await;
        let r = get(&format!("{}/api/v1/namespaces/default/pods/p/log", p.url)).await;
        assert_eq!(r.status, 503, "{}", r.text());
        let s = r.json();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["reason"], "ServiceUnavailable");
        assert_eq!(s["code"], 503);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_credential_plugin_is_a_503_that_keeps_its_output_to_the_log() {
    within(30, async {
        let reached = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = reached.clone();
        let up = fake_upstream(move |_| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Response::new(full("{}")) }
        })
        .await;
        let dir = std::env::temp_dir().join(format!("kubecache-failing-{}", unique_suffix()));
        std::fs::create_dir_all(&dir).unwrap();
        let plugin = dir.join("plugin");
        write_script(&plugin, "echo 'secret-ish detail' >&2\nexit 1");
        let exec = kubecache::upstream::exec::ExecConfig {
            api_version: "client.authentication.k8s.io/v1beta1".into(),
            command: plugin,
            args: vec![],
            env: vec![],
            install_hint: None,
            cluster: None,
        };
        let p = ProxyBuilder::new(&up)
            .upstream(UpstreamConfig {
                credentials: Credentials {
                    exec: Some(exec),
                    ..Credentials::default()
                },
                ..UpstreamConfig::new(&up).unwrap()
            })
            .start()
            .await;
        let r = get(&format!("{}/version", p.url)).await;
        assert_eq!(r.status, 503, "{}", r.text());
        let s = r.json();
        assert_eq!(s["reason"], "ServiceUnavailable");
        let message = s["message"].as_str().unwrap();
        assert!(message.contains("credentials"), "{message}");
        assert!(!message.contains("secret-ish"), "{message}");
        assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 0);
    })
    .await
}
