//! Watches over WebSocket, as the apiserver serves them
//! (`serve::websocket`), through kubecache in front of the simulator —
//! which serves them the same way — and, with `real-apiserver`, compared
//! with the real kube-apiserver v1.20:
//!
//! - a cached watch: the 101 and one message per event, each exactly a line
//!   of the same watch over HTTP (JSON, text frames) or its frame without
//!   the length (protobuf, binary frames); selectors; a close of 1000 at
//!   `timeoutSeconds`, at the drain, and in answer to the client's close;
//!   pings answered;
//! - a forwarded watch: the upstream's 101 and messages, spliced;
//! - the handshake's refusals (origin 403, two protocols 400, no key 400,
//!   a bad version 400) and a list with Upgrade headers served as a list;
//! - authorize mode with the bearer token in `Sec-WebSocket-Protocol`: the
//!   entry authenticates and is removed; forwarded, the upstream gets the
//!   token as `Authorization: Bearer` and never kubecache's identity;
//!   every token error is a 401; trust-local leaves the entry alone.

mod common;

use common::*;
use http::Method;
use serde_json::json;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The lines of a watch over HTTP that ends by itself.
async fn http_lines(url: &str) -> Vec<String> {
    let (status, _, body) = fetch_with(url, &[("accept", "application/json")]).await;
    assert_eq!(status, 200, "{url}");
    String::from_utf8(body)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect()
}

/// The frames of a protobuf watch over HTTP that ends by itself, each
/// without its length.
async fn http_frames(url: &str) -> Vec<Vec<u8>> {
    let (status, ct, body) = fetch_with(url, &[("accept", PROTOBUF)]).await;
    assert_eq!(status, 200, "{url}");
    assert!(ct.starts_with(PROTOBUF), "{ct}");
    let mut frames = Vec::new();
    let mut rest = &body[..];
    while rest.len() >= 4 {
        let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        frames.push(rest[4..4 + n].to_vec());
        rest = &rest[4 + n..];
    }
    assert!(rest.is_empty());
    frames
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// The WebSocket headers x/net's 101 has: exactly these, whatever the
/// server adds of its own (hyper's `date`).
fn assert_handshake(head: &WsHead, protocol: Option<&str>) {
    assert_eq!(head.status, 101, "{head:?}");
    let mut want = vec![
        ("connection".to_string(), "Upgrade".to_string()),
        ("sec-websocket-accept".into(), WS_ACCEPT.into()),
        ("upgrade".into(), "websocket".into()),
    ];
    if let Some(p) = protocol {
        want.push(("sec-websocket-protocol".into(), p.into()));
    }
    want.sort();
    assert_eq!(head.handshake_headers(), want, "{head:?}");
}

/// Reads of configmaps kubecache (served from its cache, forwarded).
fn configmap_reads(p: &Proxy) -> (u64, u64) {
    let tc = type_cache(p, "v1/configmaps").expect("configmaps cached");
    (tc.tally().served(), tc.tally().forwarded())
}

async fn cm(up: &str, ns: &str, name: &str, team: &str) {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"team": team}}, "data": {"v": "1"}});
    let r = send(
        Method::POST,
        &format!("{up}/api/v1/namespaces/{ns}/configmaps"),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

#[tokio::test]
async fn a_cached_json_watch_is_a_text_message_per_line_of_the_http_stream_then_a_close_of_1000() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let (served, forwarded) = configmap_reads(&p);
        let path = "/api/v1/configmaps?watch=1&resourceVersion=0&timeoutSeconds=2";
        let (head, client) = ws_open(&format!("{}{path}", p.url), &[], None).await;
        assert_handshake(&head, None);
        let mut client = client.unwrap();
        let began = std::time::Instant::now();
        let got = client
            .until_close_or_quiet(Duration::from_secs(10), Duration::from_secs(10))
            .await;
        let took = began.elapsed();
        let (close, events) = got.split_last().unwrap();
        assert_eq!(*close, Ws::Close(Some(1000)), "{got:?}");
        assert!(
            took >= Duration::from_millis(1900) && took < Duration::from_secs(5),
            "closed after {took:?}, timeoutSeconds=2"
        );
        assert_eq!(
            client.next(Duration::from_secs(2)).await,
            Ws::End("stream ended".into())
        );
        let texts = text_events(events);
        assert_eq!(texts.len(), events.len(), "JSON events come as text");
        assert_eq!(texts.len(), 10, "the simulator's 10 configmaps");
        for t in &texts {
            assert!(t.ends_with("}\n") && t.matches('\n').count() == 1, "{t:?}");
            assert!(t.starts_with("{\"type\":\"ADDED\""), "{t:?}");
        }
        // Exactly the lines of the same watch over HTTP.
        let lines = http_lines(&format!("{}{path}", p.url)).await;
        assert_eq!(sorted(texts), sorted(lines));
        // Both from the cache.
        assert_eq!(configmap_reads(&p), (served + 2, forwarded));
    })
    .await
}

#[tokio::test]
async fn a_cached_watch_sends_each_change_as_it_happens_with_its_selector_and_answers_pings() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        ensure_namespace(&sim.url, "ws").await;
        let path =
            "/api/v1/namespaces/ws/configmaps?watch=1&resourceVersion=0&labelSelector=team%3Dred";
        let (head, client) = ws_open(&format!("{}{path}", p.url), &[], None).await;
        assert_handshake(&head, None);
        let mut client = client.unwrap();
        assert_eq!(client.next(Duration::from_millis(300)).await, Ws::Silent);
        cm(&sim.url, "ws", "blue-1", "blue").await;
        cm(&sim.url, "ws", "red-1", "red").await;
        let Ws::Text(added) = client.next(Duration::from_secs(10)).await else {
            panic!("no event");
        };
        let event: serde_json::Value = serde_json::from_str(&added).unwrap();
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["metadata"]["name"], "red-1");
        assert!(added.ends_with('\n'));
        client
            .send(Message::Ping(b"are you there".to_vec().into()))
            .await;
        assert_eq!(
            client.next(Duration::from_secs(5)).await,
            Ws::Pong(b"are you there".to_vec())
        );
        // The client's data is read and dropped; the watch goes on.
        client.send(Message::Text("ignored".into())).await;
        client.send(Message::Binary(vec![1, 2, 3].into())).await;
        cm(&sim.url, "ws", "red-2", "red").await;
        let Ws::Text(second) = client.next(Duration::from_secs(10)).await else {
            panic!("no second event");
        };
        assert!(second.contains("\"name\":\"red-2\""), "{second}");
        // A client's close, whatever its code, is answered with 1000.
        client.close(4000).await;
        assert_eq!(
            client.next(Duration::from_secs(5)).await,
            Ws::Close(Some(1000))
        );
    })
    .await
}

#[tokio::test]
async fn a_cached_protobuf_watch_is_a_binary_message_per_frame_without_its_length() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let path = "/api/v1/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1";
        let url = format!("{}{path}", p.url);
        // Any one subprotocol is echoed, and changes nothing of the frames.
        let (head, client) = ws_open(
            &url,
            &[
                ("Accept", Some(PROTOBUF)),
                ("Sec-WebSocket-Protocol", Some("base64.binary.k8s.io")),
            ],
            None,
        )
        .await;
        assert_handshake(&head, Some("base64.binary.k8s.io"));
        let got = client
            .unwrap()
            .until_close_or_quiet(Duration::from_secs(10), Duration::from_secs(10))
            .await;
        let (close, events) = got.split_last().unwrap();
        assert_eq!(*close, Ws::Close(Some(1000)));
        let binaries: Vec<Vec<u8>> = events
            .iter()
            .map(|m| match m {
                Ws::Binary(b) => b.clone(),
                other => panic!("not binary: {other:?}"),
            })
            .collect();
        assert_eq!(binaries.len(), 10);
        let frames = http_frames(&url).await;
        assert_eq!(sorted(binaries), sorted(frames));
    })
    .await
}

#[tokio::test]
async fn a_forwarded_watch_over_websocket_is_the_upstreams_own_spliced() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let (served, forwarded) = configmap_reads(&p);
        // No resourceVersion: a consistent watch, forwarded.
        let path = "/api/v1/configmaps?watch=1&timeoutSeconds=1";
        let (head, client) = ws_open(
            &format!("{}{path}", p.url),
            &[("Sec-WebSocket-Protocol", Some("v4.channel.k8s.io"))],
            None,
        )
        .await;
        assert_eq!(head.status, 101, "{head:?}");
        assert_eq!(
            head.header("sec-websocket-protocol"),
            Some("v4.channel.k8s.io")
        );
        assert_eq!(head.header("sec-websocket-accept"), Some(WS_ACCEPT));
        let got = client
            .unwrap()
            .until_close_or_quiet(Duration::from_secs(10), Duration::from_secs(10))
            .await;
        assert_eq!(got.last(), Some(&Ws::Close(Some(1000))), "{got:?}");
        assert_eq!(text_events(&got).len(), 10);
        assert_eq!(configmap_reads(&p), (served, forwarded + 1));
        // The simulator answers as kubecache does: the same messages.
        let (direct_head, direct) = ws_open(
            &format!("{}{path}", sim.url),
            &[("Sec-WebSocket-Protocol", Some("v4.channel.k8s.io"))],
            None,
        )
        .await;
        assert_handshake(&direct_head, Some("v4.channel.k8s.io"));
        let direct = direct
            .unwrap()
            .until_close_or_quiet(Duration::from_secs(10), Duration::from_secs(10))
            .await;
        assert_eq!(sorted(text_events(&direct)), sorted(text_events(&got)));
    })
    .await
}

/// A refusal: what it is, the headers changed, its status and body.
type Refusal = (
    &'static str,
    Vec<(&'static str, Option<&'static str>)>,
    u16,
    &'static str,
);

/// The refusals of x/net's handshake, for a cached watch and for the
/// simulator's.
fn refusals() -> Vec<Refusal> {
    vec![
        ("no origin", vec![("Origin", None)], 403, ""),
        ("origin null", vec![("Origin", Some("null"))], 403, ""),
        ("origin not a URI", vec![("Origin", Some("foo"))], 403, ""),
        (
            "two protocols",
            vec![(
                "Sec-WebSocket-Protocol",
                Some("base64.binary.k8s.io, v4.channel.k8s.io"),
            )],
            400,
            "",
        ),
        (
            "no key",
            vec![("Sec-WebSocket-Key", None)],
            400,
            "mismatch challenge/response",
        ),
        (
            "version 8",
            vec![("Sec-WebSocket-Version", Some("8"))],
            400,
            "missing or bad WebSocket Version",
        ),
    ]
}

#[tokio::test]
async fn handshake_refusals_are_x_nets_for_kubecache_and_the_simulator_alike() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let path = "/api/v1/configmaps?watch=1&resourceVersion=0";
        for server in [&p.url, &sim.url] {
            for (what, headers, status, body) in refusals() {
                let (head, client) = ws_open(&format!("{server}{path}"), &headers, None).await;
                assert!(client.is_none());
                assert_eq!(head.status, status, "{server} {what}: {head:?}");
                assert_eq!(String::from_utf8_lossy(&head.body), body, "{server} {what}");
                assert_eq!(head.header("connection"), Some("close"), "{server} {what}");
                if what == "version 8" {
                    assert_eq!(head.header("sec-websocket-version"), Some("13"));
                }
            }
            // A list with the same headers is a list.
            let (head, _) = ws_open(
                &format!("{server}/api/v1/configmaps?resourceVersion=0"),
                &[],
                None,
            )
            .await;
            assert_eq!(head.status, 200, "{server}: {head:?}");
            let list: serde_json::Value = serde_json::from_slice(&head.body).unwrap();
            assert_eq!(list["kind"], "ConfigMapList");
        }
    })
    .await
}

#[tokio::test]
async fn an_open_websocket_watch_is_closed_with_1000_when_kubecache_drains() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let mut p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let path = "/api/v1/configmaps?watch=1&resourceVersion=0";
        let (head, client) = ws_open(&format!("{}{path}", p.url), &[], None).await;
        assert_handshake(&head, None);
        let mut client = client.unwrap();
        let initial = client
            .until_close_or_quiet(Duration::from_millis(500), Duration::from_secs(10))
            .await;
        assert_eq!(text_events(&initial).len(), 10);
        p.begin_stop();
        assert_eq!(
            client.next(Duration::from_secs(5)).await,
            Ws::Close(Some(1000))
        );
    })
    .await
}

fn token_entry(token: &str) -> String {
    use base64::Engine;
    format!(
        "base64url.bearer.authorization.k8s.io.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token)
    )
}

#[tokio::test]
async fn authorize_mode_takes_the_token_in_the_protocol_and_forwards_it_as_a_bearer_token() {
    within(90, async {
        let up = ReviewingSim::start(SimBuilder::new()).await;
        let p = up.proxy().start().await;
        let alice = token_entry("alice-token");
        let offered = format!("{alice}, base64.binary.k8s.io");
        let cached = format!(
            "{}/api/v1/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1",
            p.url
        );
        // The first read starts the cache; wait until it serves.
        let asked = "configmaps?watch=1&resourceVersion=0&timeoutSeconds=1";
        until("configmaps cached", 30, || async {
            let before = up.seen(asked).len();
            let (head, client) = ws_open(
                &cached,
                &[("Sec-WebSocket-Protocol", Some(offered.as_str()))],
                None,
            )
            .await;
            assert_handshake(&head, Some("base64.binary.k8s.io"));
            let got = client
                .unwrap()
                .until_close_or_quiet(Duration::from_secs(5), Duration::from_secs(5))
                .await;
            assert_eq!(got.last(), Some(&Ws::Close(Some(1000))), "{got:?}");
            up.seen(asked).len() == before && !text_events(&got).is_empty()
        })
        .await;

        // Forwarded: the token goes as Authorization, the entry removed.
        let forwarded = format!("{}/api/v1/configmaps?watch=1&timeoutSeconds=1", p.url);
        let (head, client) = ws_open(
            &forwarded,
            &[("Sec-WebSocket-Protocol", Some(offered.as_str()))],
            None,
        )
        .await;
        assert_handshake(&head, Some("base64.binary.k8s.io"));
        let got = client
            .unwrap()
            .until_close_or_quiet(Duration::from_secs(5), Duration::from_secs(10))
            .await;
        assert!(!text_events(&got).is_empty(), "{got:?}");
        let seen = up.seen("configmaps?watch=1&timeoutSeconds=1");
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].authorization.as_deref(), Some("Bearer alice-token"));
        assert_eq!(seen[0].protocol.as_deref(), Some("base64.binary.k8s.io"));

        // A bad Authorization does not stop the protocol's token (the
        // union tries each); a good one leaves the entry among the
        // protocols, two of them then: the handshake's 400.
        let (head, _) = ws_open(
            &cached,
            &[
                ("Sec-WebSocket-Protocol", Some(offered.as_str())),
                ("Authorization", Some("Bearer wrong")),
            ],
            None,
        )
        .await;
        assert_handshake(&head, Some("base64.binary.k8s.io"));
        let (head, _) = ws_open(
            &cached,
            &[
                ("Sec-WebSocket-Protocol", Some(offered.as_str())),
                ("Authorization", Some("Bearer alice-token")),
            ],
            None,
        )
        .await;
        assert_eq!((head.status, head.body.as_slice()), (400, &b""[..]));

        // Every error of the protocol's token is a 401, anonymous or not.
        let bad_encoding = "base64url.bearer.authorization.k8s.io.YWxpY2U=, x".to_string();
        let two = format!("{alice}, {}, x", token_entry("nobody-token"));
        let unknown = format!("{}, x", token_entry("made-up"));
        for (what, protocols) in [
            ("bad encoding", bad_encoding.as_str()),
            ("alone", alice.as_str()),
            ("two tokens", two.as_str()),
            ("unknown", unknown.as_str()),
        ] {
            for url in [&cached, &forwarded] {
                let (head, _) =
                    ws_open(url, &[("Sec-WebSocket-Protocol", Some(protocols))], None).await;
                assert_eq!(head.status, 401, "{what} {url}: {head:?}");
                let status: serde_json::Value = serde_json::from_slice(&head.body).unwrap();
                assert_eq!(status["reason"], "Unauthorized", "{what}");
            }
        }
        // Authenticated, not authorized: the authorizer's 403.
        let nobody = format!("{}, x", token_entry("nobody-token"));
        let (head, _) = ws_open(
            &cached,
            &[("Sec-WebSocket-Protocol", Some(nobody.as_str()))],
            None,
        )
        .await;
        assert_eq!(head.status, 403, "{head:?}");
        // Nothing forwarded carried kubecache's own token but its own reads.
        let clients_forwarded = up.seen("watch=1&timeoutSeconds=1");
        assert!(clients_forwarded
            .iter()
            .all(|s| s.authorization.as_deref() != Some("Bearer kubecache-token")));
    })
    .await
}

#[tokio::test]
async fn trust_local_leaves_a_token_entry_among_the_protocols_as_behind_kubectl_proxy() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let entry = token_entry("anything");
        let both = format!("{entry}, base64.binary.k8s.io");
        for path in [
            "/api/v1/configmaps?watch=1&resourceVersion=0",
            "/api/v1/configmaps?watch=1",
        ] {
            // Two protocols, cached or forwarded: the 400 of an apiserver
            // that authenticated someone else first.
            let (head, _) = ws_open(
                &format!("{}{path}", p.url),
                &[("Sec-WebSocket-Protocol", Some(both.as_str()))],
                None,
            )
            .await;
            assert_eq!(head.status, 400, "{path}: {head:?}");
            // The entry alone is one protocol: echoed.
            let (head, _) = ws_open(
                &format!("{}{path}&timeoutSeconds=1", p.url),
                &[("Sec-WebSocket-Protocol", Some(entry.as_str()))],
                None,
            )
            .await;
            assert_handshake(&head, Some(&entry));
        }
    })
    .await
}

/// Against the real kube-apiserver v1.20 (.ci/run's): the same watch over
/// WebSocket through kubecache (from its cache) and directly gives the
/// same handshake and the same messages, byte for byte; the same
/// refusals; and in authorize mode, the RBAC apiserver's answers to the
/// token in the protocol.
#[cfg(feature = "real-apiserver")]
mod real {
    use super::*;

    /// What a watch says until it is quiet for a second (v1.20 does not
    /// end a WebSocket watch at its timeout; see docs/differences.md).
    async fn watch_messages(
        url: &str,
        headers: &[(&str, Option<&str>)],
        tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    ) -> (WsHead, Vec<Ws>, Option<WsClient>) {
        let (head, client) = ws_open(url, headers, tls).await;
        let Some(mut client) = client else {
            return (head, Vec::new(), None);
        };
        let got = client
            .until_close_or_quiet(Duration::from_secs(1), Duration::from_secs(20))
            .await;
        (head, got, Some(client))
    }

    /// Reads of configmaps and services kubecache sent upstream.
    fn forwarded_reads(p: &Proxy) -> u64 {
        ["v1/configmaps", "v1/services"]
            .iter()
            .map(|r| {
                let tc = type_cache(p, r).unwrap();
                tc.tally().forwarded()
            })
            .sum()
    }

    fn sorted_messages(mut m: Vec<Ws>) -> Vec<Ws> {
        m.sort_by_key(|w| format!("{w:?}"));
        m
    }

    async fn service(up: &str, ns: &str, name: &str, app: &str) {
        let body = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": app}}});
        let r = send(
            Method::POST,
            &format!("{up}/api/v1/namespaces/{ns}/services"),
            Some(body),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cached_websocket_watches_equal_the_real_apiservers_message_for_message() {
        within(120, async {
            let up = real_apiserver();
            let ns = format!("ws-{}", unique_suffix());
            ensure_namespace(&up, &ns).await;
            for (name, team) in [("a", "red"), ("b", "blue"), ("c", "red")] {
                cm(&up, &ns, name, team).await;
                service(&up, &ns, &format!("svc-{name}"), team).await;
            }
            let p = start_proxy(&up).await;
            wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
            wait_synced(&p, "/api/v1/services", "v1/services").await;
            converged(&up, &p, &format!("/api/v1/namespaces/{ns}/services"), Duration::from_secs(10)).await;
            converged(&up, &p, &format!("/api/v1/namespaces/{ns}/configmaps"), Duration::from_secs(10)).await;
            let watches = [
                format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=0"),
                format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=0&labelSelector=team%3Dred"),
                format!("/api/v1/namespaces/{ns}/services?watch=1&resourceVersion=0"),
                format!("/api/v1/watch/namespaces/{ns}/services?resourceVersion=0&fieldSelector=metadata.name%3Dsvc-b"),
            ];
            let mut open = Vec::new();
            let binary = Some("base64.binary.k8s.io");
            let mut cases: Vec<(&String, &str, Option<&str>)> = Vec::new();
            for path in &watches {
                cases.push((path, "application/json", None));
                cases.push((path, PROTOBUF, binary));
            }
            cases.push((&watches[0], "application/json", binary));
            cases.push((&watches[2], PROTOBUF, None));
            let forwarded_before = forwarded_reads(&p);
            for (path, accept, protocol) in cases {
                let headers = [("Accept", Some(accept)), ("Sec-WebSocket-Protocol", protocol)];
                let (theirs_head, theirs, theirs_client) =
                    watch_messages(&format!("{up}{path}"), &headers, None).await;
                let (ours_head, ours, ours_client) =
                    watch_messages(&format!("{}{path}", p.url), &headers, None).await;
                let what = format!("{path} {accept} {protocol:?}");
                assert_eq!(theirs_head.status, 101, "{what}: {theirs_head:?}");
                assert_eq!(
                    ours_head.handshake_headers(),
                    theirs_head.handshake_headers(),
                    "{what}"
                );
                assert!(!theirs.is_empty(), "{what}: no events");
                assert_eq!(sorted_messages(ours), sorted_messages(theirs), "{what}");
                open.push((what, theirs_client.unwrap(), ours_client.unwrap()));
            }
            // What happens next reaches both alike.
            cm(&up, &ns, "d", "red").await;
            service(&up, &ns, "svc-d", "red").await;
            let mut changed = 0;
            for (what, mut theirs, mut ours) in open {
                let quiet = Duration::from_secs(1);
                let theirs = theirs
                    .until_close_or_quiet(quiet, Duration::from_secs(10))
                    .await;
                let ours = ours.until_close_or_quiet(quiet, Duration::from_secs(10)).await;
                assert_eq!(ours, theirs, "{what}: after the writes");
                changed += usize::from(!theirs.is_empty());
            }
            // All but the watch of svc-b alone saw a change.
            assert_eq!(changed, 8);
            // All of them from the cache.
            assert_eq!(forwarded_reads(&p), forwarded_before);
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn handshake_refusals_and_forwarded_watches_equal_the_real_apiservers() {
        within(120, async {
            let up = real_apiserver();
            let p = start_proxy(&up).await;
            wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
            let cached = "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0";
            for (what, headers, _, _) in refusals() {
                let (theirs, _) = ws_open(&format!("{up}{cached}"), &headers, None).await;
                let (ours, _) = ws_open(&format!("{}{cached}", p.url), &headers, None).await;
                assert_eq!(ours.status, theirs.status, "{what}: {theirs:?}");
                assert_eq!(ours.body, theirs.body, "{what}");
                assert_eq!(
                    ours.header("sec-websocket-version"),
                    theirs.header("sec-websocket-version"),
                    "{what}"
                );
            }
            // A list with Upgrade headers is a list to both.
            let list = "/api/v1/namespaces/default/configmaps?resourceVersion=0";
            let (theirs, _) = ws_open(&format!("{up}{list}"), &[], None).await;
            let (ours, _) = ws_open(&format!("{}{list}", p.url), &[], None).await;
            assert_eq!((ours.status, theirs.status), (200, 200));
            // A forwarded watch (no resourceVersion) is the apiserver's own.
            let forwarded = "/api/v1/namespaces/default/services?watch=1";
            let headers = [("Sec-WebSocket-Protocol", Some("base64.binary.k8s.io"))];
            let (theirs_head, theirs, _) =
                watch_messages(&format!("{up}{forwarded}"), &headers, None).await;
            let (ours_head, ours, _) =
                watch_messages(&format!("{}{forwarded}", p.url), &headers, None).await;
            assert_eq!(
                ours_head.handshake_headers(),
                theirs_head.handshake_headers()
            );
            assert_eq!(ours, theirs);
            assert!(!ours.is_empty());
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_token_in_the_protocol_is_answered_as_the_rbac_apiserver_answers_it() {
        within(120, async {
            let r = rbac_apiserver();
            let ns = format!("ws-authz-{}", unique_suffix());
            ensure_namespace(&r.insecure, &ns).await;
            for (name, team) in [("a", "red"), ("b", "blue")] {
                cm(&r.insecure, &ns, name, team).await;
            }
            let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]);
            grant(&r.insecure, Some(&ns), "ws-reader", rules, ("User", "reader")).await;
            let upstream = kubecache::upstream::UpstreamConfig::new(&r.url)
                .unwrap()
                .with_ca_file(&r.ca)
                .unwrap()
                .with_token_file(&r.token)
                .unwrap();
            let p = ProxyBuilder::new(&r.url)
                .upstream(upstream)
                .authorize(kubecache::access::AccessConfig::default())
                .start()
                .await;
            let tls = || Some(ws_tls(&r.ca));
            let reader = token_entry("reader-token-3f9a");
            let offered = format!("{reader}, base64.binary.k8s.io");
            let cached = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=0");
            // The reader's first read starts the cache.
            until("configmaps synced", 30, || async {
                let (head, _) = ws_open(
                    &format!("{}{cached}", p.url),
                    &[("Sec-WebSocket-Protocol", Some(offered.as_str()))],
                    None,
                )
                .await;
                assert_eq!(head.status, 101, "{head:?}");
                get(&format!("{}/readyz?verbose", p.url))
                    .await
                    .text()
                    .contains("[+]informer-sync/v1/configmaps ok")
            })
            .await;
            let forwarded = format!("/api/v1/namespaces/{ns}/configmaps?watch=1");
            for path in [&cached, &forwarded] {
                let headers = [("Sec-WebSocket-Protocol", Some(offered.as_str()))];
                let (theirs_head, theirs, _) = watch_messages(&format!("{}{path}", r.url), &headers, tls()).await;
                let (ours_head, ours, _) = watch_messages(&format!("{}{path}", p.url), &headers, None).await;
                assert_handshake(&theirs_head, Some("base64.binary.k8s.io"));
                assert_eq!(ours_head.handshake_headers(), theirs_head.handshake_headers(), "{path}");
                assert_eq!(text_events(&theirs).len(), 2, "{path}: {theirs:?}");
                assert_eq!(sorted_messages(ours), sorted_messages(theirs), "{path}");
            }
            // Refusals: the same status, and the same body.
            let bad_encoding = "base64url.bearer.authorization.k8s.io.YWxpY2U=, x".to_string();
            let nobody = format!("{}, x", token_entry("nobody-token-91ac"));
            let unknown = format!("{}, x", token_entry("made-up"));
            let two = format!("{reader}, {}, x", token_entry("nobody-token-91ac"));
            type Headers<'a> = Vec<(&'a str, Option<&'a str>)>;
            let cases: Vec<(&str, Headers)> = vec![
                ("bad encoding", vec![("Sec-WebSocket-Protocol", Some(&bad_encoding))]),
                ("the token alone", vec![("Sec-WebSocket-Protocol", Some(&reader))]),
                ("two tokens", vec![("Sec-WebSocket-Protocol", Some(&two))]),
                ("an unknown token", vec![("Sec-WebSocket-Protocol", Some(&unknown))]),
                ("nobody", vec![("Sec-WebSocket-Protocol", Some(&nobody))]),
                (
                    "a good Authorization too",
                    vec![
                        ("Sec-WebSocket-Protocol", Some(&offered)),
                        ("Authorization", Some("Bearer reader-token-3f9a")),
                    ],
                ),
                (
                    "a bad Authorization and a good protocol token",
                    vec![
                        ("Sec-WebSocket-Protocol", Some(&offered)),
                        ("Authorization", Some("Bearer wrong")),
                    ],
                ),
            ];
            for (what, headers) in cases {
                for path in [&cached, &forwarded] {
                    let (theirs, _) = ws_open(&format!("{}{path}", r.url), &headers, tls()).await;
                    let (ours, _) = ws_open(&format!("{}{path}", p.url), &headers, None).await;
                    assert_eq!(ours.status, theirs.status, "{what} {path}: {theirs:?} {ours:?}");
                    if theirs.status != 101 {
                        assert_eq!(
                            String::from_utf8_lossy(&ours.body),
                            String::from_utf8_lossy(&theirs.body),
                            "{what} {path}"
                        );
                    }
                }
            }
        })
        .await
    }
}

/// Many watchers of a type over WebSocket and over HTTP, all served from
/// the cache, get a burst of changes alike: each the same events
/// in the same order, the WebSocket ones a message per HTTP line. Prints
/// how long the last watcher of each took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_websocket_watchers_get_a_burst_as_three_hundred_http_watchers_do() {
    within(180, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        ensure_namespace(&sim.url, "burst").await;
        let rv = get(&format!("{}/api/v1/configmaps?resourceVersion=0", p.url))
            .await
            .json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let path = format!("/api/v1/namespaces/burst/configmaps?watch=1&resourceVersion={rv}");
        const WATCHERS: usize = 300;
        const EVENTS: usize = 100;
        let mut sockets = Vec::new();
        let mut streams = Vec::new();
        for _ in 0..WATCHERS {
            let (head, client) = ws_open(&format!("{}{path}", p.url), &[], None).await;
            assert_eq!(head.status, 101);
            sockets.push(client.unwrap());
            streams.push(WatchStream::open(&format!("{}{path}", p.url)).await);
        }
        let (_, forwarded) = configmap_reads(&p);
        let began = std::time::Instant::now();
        let ws_readers: Vec<_> = sockets
            .into_iter()
            .map(|mut c| {
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    while got.len() < EVENTS {
                        match c.next(Duration::from_secs(30)).await {
                            Ws::Text(t) => got.push(t),
                            other => panic!("{other:?} after {} events", got.len()),
                        }
                    }
                    (got, began.elapsed())
                })
            })
            .collect();
        let http_readers: Vec<_> = streams
            .into_iter()
            .map(|mut w| {
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    while got.len() < EVENTS {
                        got.push(w.event(Duration::from_secs(30)).await);
                    }
                    (got, began.elapsed())
                })
            })
            .collect();
        for i in 0..EVENTS {
            cm(&sim.url, "burst", &format!("cm-{i:03}"), "red").await;
        }
        let written = began.elapsed();
        let mut first: Option<Vec<String>> = None;
        let mut ws_last = Duration::ZERO;
        for r in ws_readers {
            let (got, took) = r.await.unwrap();
            ws_last = ws_last.max(took);
            match &first {
                None => first = Some(got),
                Some(f) => assert_eq!(&got, f),
            }
        }
        let first = first.unwrap();
        let mut http_last = Duration::ZERO;
        for r in http_readers {
            let (got, took) = r.await.unwrap();
            http_last = http_last.max(took);
            let lines: Vec<serde_json::Value> = first
                .iter()
                .map(|t| serde_json::from_str(t).unwrap())
                .collect();
            assert_eq!(got, lines);
        }
        assert_eq!(configmap_reads(&p).1, forwarded, "every watch from the cache");
        println!(
            "{WATCHERS} WebSocket and {WATCHERS} HTTP watchers, {EVENTS} creates written upstream in \
             {written:?}: the last WebSocket watcher had them all {:?} after the last write, the last \
             HTTP one {:?} after it",
            ws_last.saturating_sub(written),
            http_last.saturating_sub(written)
        );
    })
    .await
}
