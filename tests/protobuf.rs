//! Kubernetes protobuf against the real apiserver: kubecache's transcoding
//! of every fixture's JSON equals the apiserver's own protobuf byte for
//! byte, the apiserver's protobuf decodes to its own JSON, and protobuf gets, lists and watches through kubecache equal the
//! apiserver's.
#![cfg(feature = "real-apiserver")]

mod common;

use common::fixtures::*;
use common::*;
use kubecache::encode::list_meta::ListMeta;
use kubecache::encode::protobuf;
use serde_json::Value;
use std::time::Duration;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

#[derive(Clone, PartialEq, prost::Message)]
struct TypeMeta {
    #[prost(string, tag = "1")]
    api_version: String,
    #[prost(string, tag = "2")]
    kind: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", tag = "2")]
    raw: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct List {
    #[prost(bytes = "vec", tag = "1")]
    metadata: Vec<u8>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    items: Vec<Vec<u8>>,
}

fn unwrap_envelope(body: &[u8]) -> Unknown {
    let rest = body
        .strip_prefix(protobuf::MAGIC)
        .expect("the k8s\\0 prefix");
    prost::Message::decode(rest).expect("a runtime.Unknown")
}

/// A protobuf message's fields, nested messages guessed and shown as
/// trees: enough to see where two messages part.
fn dump(b: &[u8], depth: usize, out: &mut String) {
    let mut i = 0;
    while i < b.len() {
        let Some((key, n)) = varint(&b[i..]) else {
            out.push_str(&format!("{:w$}<bad {:?}>\n", "", &b[i..], w = depth * 2));
            return;
        };
        i += n;
        let (field, wt) = (key >> 3, key & 7);
        match wt {
            0 => {
                let (v, n) = varint(&b[i..]).unwrap_or((0, b.len() - i));
                i += n;
                out.push_str(&format!("{:w$}{field}: {v}\n", "", w = depth * 2));
            }
            1 => {
                out.push_str(&format!(
                    "{:w$}{field}: fixed64 {:?}\n",
                    "",
                    &b[i..(i + 8).min(b.len())],
                    w = depth * 2
                ));
                i += 8;
            }
            2 => {
                let (len, n) = varint(&b[i..]).unwrap_or((0, 0));
                i += n;
                let end = (i + len as usize).min(b.len());
                let v = &b[i..end];
                i = end;
                let printable = std::str::from_utf8(v)
                    .ok()
                    .filter(|s| s.chars().all(|c| !c.is_control() || c == '\n'));
                match printable {
                    Some(s) if !v.is_empty() && (looks_text(v) || !parses(v)) => {
                        out.push_str(&format!("{:w$}{field}: {s:?}\n", "", w = depth * 2))
                    }
                    _ if v.is_empty() => {
                        out.push_str(&format!("{:w$}{field}: \"\"\n", "", w = depth * 2))
                    }
                    _ if parses(v) => {
                        out.push_str(&format!("{:w$}{field} {{\n", "", w = depth * 2));
                        dump(v, depth + 1, out);
                        out.push_str(&format!("{:w$}}}\n", "", w = depth * 2));
                    }
                    _ => out.push_str(&format!("{:w$}{field}: {v:?}\n", "", w = depth * 2)),
                }
            }
            _ => {
                out.push_str(&format!("{:w$}<wire type {wt}>\n", "", w = depth * 2));
                return;
            }
        }
    }
}

fn looks_text(v: &[u8]) -> bool {
    v.iter().all(|c| c.is_ascii_graphic() || *c == b' ') && v.len() > 1
}

fn parses(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        let Some((key, n)) = varint(&b[i..]) else {
            return false;
        };
        i += n;
        if key >> 3 == 0 {
            return false;
        }
        match key & 7 {
            0 => match varint(&b[i..]) {
                Some((_, n)) => i += n,
                None => return false,
            },
            1 => i += 8,
            2 => match varint(&b[i..]) {
                Some((len, n)) => i += n + len as usize,
                None => return false,
            },
            _ => return false,
        }
    }
    i == b.len()
}

fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &c) in b.iter().enumerate().take(10) {
        v |= u64::from(c & 0x7f) << (7 * i);
        if c & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Where two messages part, as their dumps' first differing lines.
fn explain(ours: &[u8], theirs: &[u8]) -> String {
    let (mut a, mut b) = (String::new(), String::new());
    dump(ours, 0, &mut a);
    dump(theirs, 0, &mut b);
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let first = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = first.saturating_sub(6);
    format!(
        "ours:\n{}\ntheirs:\n{}",
        a[from..(first + 6).min(a.len())].join("\n"),
        b[from..(first + 6).min(b.len())].join("\n")
    )
}

/// The list at `path` as JSON and as protobuf, both read at one version.
async fn both_lists(up: &str, path: &str) -> (Value, Vec<u8>) {
    let json = get(&format!("{up}{path}")).await.json();
    let rv = json["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let exact = format!("{up}{path}?resourceVersion={rv}&resourceVersionMatch=Exact");
    let json = get(&exact).await.json();
    let (code, _, proto) = fetch_with(&exact, &[("Accept", PROTOBUF)]).await;
    assert_eq!(code, 200, "{path}");
    (json, proto)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixtures_json_transcodes_to_the_apiservers_protobuf_and_back() {
    let up = real_apiserver();
    within(240, async {
        let fixtures = Fixtures::make(&up, "protobuf").await;
        let ns = &fixtures.ns;
        let mut failures = Vec::new();
        let mut objects = 0;
        for path in &fixtures.paths {
            let (json, proto) = both_lists(&up, path).await;
            let api_version = json["apiVersion"].as_str().unwrap();
            let list_kind = json["kind"].as_str().unwrap();
            let kind = list_kind.strip_suffix("List").unwrap();
            let env = unwrap_envelope(&proto);
            let tm = env.type_meta.clone().unwrap();
            assert_eq!(
                (tm.api_version.as_str(), tm.kind.as_str()),
                (api_version, list_kind)
            );
            let list: List = prost::Message::decode(&env.raw[..]).unwrap();
            let items = json["items"].as_array().unwrap();
            assert_eq!(items.len(), list.items.len(), "{path}");
            let mut ours = Vec::new();
            for (item, theirs) in items.iter().zip(&list.items) {
                objects += 1;
                // The apiserver's message read back is its JSON, key for
                // key and in its order (the decoder adds the envelope's
                // kind and apiVersion, which list items lack).
                match protobuf::decode_message(api_version, kind, theirs) {
                    Ok(mut v) => {
                        let o = v.as_object_mut().unwrap();
                        o.shift_remove("kind");
                        o.shift_remove("apiVersion");
                        // As text: Value's equality ignores key order.
                        let text = |v: &Value| serde_json::to_string(v).unwrap();
                        if text(&v) != text(item) {
                            failures.push(format!(
                                "{path} {} decodes to\n{v}\nnot\n{item}",
                                item["metadata"]["name"]
                            ));
                        }
                    }
                    Err(e) => failures.push(format!(
                        "{path} {} does not decode: {e}",
                        item["metadata"]["name"]
                    )),
                }
                let text = serde_json::to_vec(item).unwrap();
                match protobuf::object_message(api_version, kind, &text) {
                    Ok(m) if &m == theirs => ours.push(m),
                    Ok(m) => {
                        failures.push(format!(
                            "{path} {}:\n{}",
                            item["metadata"]["name"],
                            explain(&m, theirs)
                        ));
                        ours.push(m);
                    }
                    Err(e) => failures.push(format!("{path} {}: {e}", item["metadata"]["name"])),
                }
            }
            if ours.len() == items.len() {
                let meta = ListMeta {
                    resource_version: json["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap(),
                    continue_token: None,
                    remaining_item_count: None,
                };
                let whole = protobuf::list(
                    api_version,
                    list_kind,
                    &meta,
                    ours.iter().map(Vec::as_slice),
                )
                .unwrap();
                if whole[..] != proto[..] {
                    failures.push(format!("{path}: the whole list differs"));
                }
            }
        }
        eprintln!("{objects} objects");
        assert!(objects > 150, "only {objects} objects");
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n\n")
        );
        release(&up, ns).await;
    })
    .await;
}

const PROTOBUF_META: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const PROTOBUF_META_LIST: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// What client-go's protobuf clients send.
const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf, */*";

/// The same answer (status, content type, bytes) through kubecache as
/// directly, served from the cache.
async fn same(up: &str, p: &Proxy, path: &str, accept: &str) -> Vec<u8> {
    assert_served_with(p, kubecache::serve::ConsistentReads::Forward, path, accept);
    same_answer(up, p, path, accept).await
}

/// The same answer, however kubecache came by it.
async fn same_answer(up: &str, p: &Proxy, path: &str, accept: &str) -> Vec<u8> {
    let a = fetch_with(&format!("{up}{path}"), &[("Accept", accept)]).await;
    let b = fetch_with(&format!("{}{path}", p.url), &[("Accept", accept)]).await;
    if b.2 != a.2 {
        let (x, y) = (unwrap_envelope(&b.2).raw, unwrap_envelope(&a.2).raw);
        panic!("{path} as {accept}:\n{}", explain(&x, &y));
    }
    assert_eq!((b.0, &b.1), (a.0, &a.1), "{path} as {accept}");
    a.2
}

/// A page of metadata: the same but for `remainingItemCount`, which
/// kubecache keeps as current apiservers do (v1.20 drops it from
/// PartialObjectMetadataLists).
async fn same_metadata_page(up: &str, p: &Proxy, path: &str) {
    let accept = PROTOBUF_META_LIST;
    assert_served_with(p, kubecache::serve::ConsistentReads::Forward, path, accept);
    let a = fetch_with(&format!("{up}{path}"), &[("Accept", accept)]).await;
    let b = fetch_with(&format!("{}{path}", p.url), &[("Accept", accept)]).await;
    assert_eq!((b.0, &b.1), (a.0, &a.1), "{path}");
    let (theirs, ours): (List, List) = (
        prost::Message::decode(&unwrap_envelope(&a.2).raw[..]).unwrap(),
        prost::Message::decode(&unwrap_envelope(&b.2).raw[..]).unwrap(),
    );
    assert_eq!(ours.items, theirs.items, "{path}");
    let count = ours.metadata.strip_prefix(&theirs.metadata[..]);
    let continues = !theirs.metadata.ends_with(b"\x1a\x00");
    match count {
        // remainingItemCount = 4, after a continue token.
        Some([0x20, n @ ..]) if continues => assert!(varint(n).is_some(), "{path}"),
        Some([]) if !continues => {}
        _ => panic!("{path}: {:?} vs {:?}", ours.metadata, theirs.metadata),
    }
}

/// A protobuf list's items, sorted: an RV=0 list's order is each cache's own.
fn proto_items(body: &[u8]) -> Vec<Vec<u8>> {
    let list: List = prost::Message::decode(&unwrap_envelope(body).raw[..]).unwrap();
    let mut items = list.items;
    items.sort();
    items
}

/// The reads' tests one at a time: each makes cluster-scoped fixtures,
/// which the other's RV=0 lists would see come and go between two reads.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_reads_through_kubecache_equal_the_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    within(240, protobuf_reads(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_reads_through_two_kubecaches_equal_the_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    within(240, protobuf_reads(2)).await;
}

/// Through `hops` kubecaches, each in front of the one before it.
async fn protobuf_reads(hops: usize) {
    let up = real_apiserver();
    {
        let start: u64 = get(&format!("{up}/api/v1/namespaces")).await.json()["metadata"]
            ["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let fixtures = Fixtures::make(&up, "protobuf-reads").await;
        let ns = &fixtures.ns;
        let chain = start_chain(&up, hops).await;
        let p = chain.front();
        for path in &fixtures.paths {
            synced_chain(&up, &chain, path).await;
            let cached = get(&format!("{}{path}?resourceVersion=0", p.url))
                .await
                .json();
            let rv = cached["metadata"]["resourceVersion"].as_str().unwrap();
            // Exact reads only at versions of this run: etcd may have
            // compacted an older one (a quiet type's, or an empty type's
            // "1"), which the apiserver answers with a 410 and kubecache
            // from its cache (docs/differences.md).
            let old = rv.parse::<u64>().unwrap() < start;
            let exact = format!("{path}?resourceVersion={rv}&resourceVersionMatch=Exact");
            for accept in [PROTOBUF, CLIENT_GO, PROTOBUF_META_LIST] {
                if old {
                    break;
                }
                same(&up, p, &exact, accept).await;
            }
            if !old {
                for accept in [PROTOBUF, CLIENT_GO] {
                    same(&up, p, &format!("{exact}&limit=1"), accept).await;
                }
                same_metadata_page(&up, p, &format!("{exact}&limit=1")).await;
            }
            // RV=0: the same items, in each cache's order.
            let all = format!("{path}?resourceVersion=0");
            assert_served_with(
                p,
                kubecache::serve::ConsistentReads::Forward,
                &all,
                PROTOBUF,
            );
            let (a, b) = (
                fetch_with(&format!("{up}{all}"), &[("Accept", PROTOBUF)]).await,
                fetch_with(&format!("{}{all}", p.url), &[("Accept", PROTOBUF)]).await,
            );
            assert_eq!(proto_items(&b.2), proto_items(&a.2), "{all}");
            for item in cached["items"].as_array().unwrap().iter().take(12) {
                let name = item["metadata"]["name"].as_str().unwrap();
                let one = format!("{path}/{name}?resourceVersion=0");
                same(&up, p, &one, PROTOBUF).await;
                same(&up, p, &one, PROTOBUF_META).await;
            }
        }
        // Errors made here are written in protobuf too.
        let missing = format!("/api/v1/namespaces/{ns}/configmaps/nope?resourceVersion=0");
        same(&up, p, &missing, PROTOBUF).await;
        let invalid = format!("/api/v1/namespaces/{ns}/configmaps?resourceVersionMatch=Exact");
        let mut headers = http::HeaderMap::new();
        headers.insert("accept", http::HeaderValue::from_static(PROTOBUF));
        let request = kubecache::request::Request::parse(
            &http::Method::GET,
            &invalid.parse().unwrap(),
            &headers,
        );
        let d = kubecache::serve::route::decide(
            &p.cache,
            kubecache::serve::ConsistentReads::Forward,
            &request,
        );
        assert!(matches!(d, Err(kubecache::serve::route::Route::Refused(_))));
        let body = same_answer(&up, p, &invalid, PROTOBUF).await;
        assert_eq!(unwrap_envelope(&body).type_meta.unwrap().kind, "Status");
        release(&up, ns).await;
    }
}

/// A protobuf watch, read frame by frame.
struct FrameWatch {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
    content_type: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WatchEvent {
    #[prost(string, tag = "1")]
    r#type: String,
    #[prost(message, optional, tag = "2")]
    object: Option<Raw>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Raw {
    #[prost(bytes = "vec", tag = "1")]
    raw: Vec<u8>,
}

impl FrameWatch {
    async fn open(url: &str) -> FrameWatch {
        let resp = request(url, PROTOBUF).await;
        assert_eq!(resp.status(), 200, "{url}");
        let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
        FrameWatch {
            body: resp.into_body(),
            buf: Vec::new(),
            content_type,
        }
    }

    /// The next frame (the event's bytes), or None at the end.
    async fn next(&mut self) -> Option<Vec<u8>> {
        use http_body_util::BodyExt;
        loop {
            if self.buf.len() >= 4 {
                let n = u32::from_be_bytes(self.buf[..4].try_into().unwrap()) as usize;
                if self.buf.len() >= 4 + n {
                    let frame = self.buf[4..4 + n].to_vec();
                    self.buf.drain(..4 + n);
                    return Some(frame);
                }
            }
            let f = tokio::time::timeout(Duration::from_secs(20), self.body.frame())
                .await
                .expect("a frame within 20 s")?;
            if let Ok(data) = f.expect("the watch body").into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }
}

/// An event's type and its object's envelope.
fn event(frame: &[u8]) -> (String, Unknown) {
    let ev: WatchEvent = prost::Message::decode(frame).expect("a WatchEvent");
    (ev.r#type, unwrap_envelope(&ev.object.unwrap().raw))
}

/// An object's dump with its metadata's resourceVersion blanked: bookmarks
/// carry each server's own.
fn without_version(object: &[u8]) -> String {
    let mut d = String::new();
    dump(object, 0, &mut d);
    d.lines()
        .map(|l| match l.strip_prefix("  6: \"") {
            Some(rest) if rest.trim_end_matches('"').parse::<u64>().is_ok() => "  6: <rv>",
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_watches_through_kubecache_equal_the_apiservers() {
    let up = real_apiserver();
    within(120, async {
        let ns = format!("protobuf-watch-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let p = start_proxy(&up).await;
        let cms = format!("/api/v1/namespaces/{ns}/configmaps");
        let deploys = format!("/apis/apps/v1/namespaces/{ns}/deployments");
        for (path, resource) in [(&cms, "v1/configmaps"), (&deploys, "apps/v1/deployments")] {
            wait_synced(&p, path, resource).await;
        }
        let cm = |data: &str| serde_json::json!({"metadata": {"name": "w"}, "data": {"k": data}});
        send(http::Method::POST, &format!("{up}{cms}"), Some(cm("0"))).await;
        converged_items(&up, &p, &cms, Duration::from_secs(20)).await;
        let rv = get(&format!("{}{cms}?resourceVersion=0", p.url))
            .await
            .json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        // From a version on: every event's frame byte for byte, and the
        // bookmark 2 s before the deadline the same but for its version.
        let query =
            format!("watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=6");
        assert_served_with(
            &p,
            kubecache::serve::ConsistentReads::Forward,
            &format!("{cms}?{query}"),
            PROTOBUF,
        );
        let mut direct = FrameWatch::open(&format!("{up}{cms}?{query}")).await;
        let mut cached = FrameWatch::open(&format!("{}{cms}?{query}", p.url)).await;
        assert_eq!(cached.content_type, direct.content_type);
        assert_eq!(
            cached.content_type,
            "application/vnd.kubernetes.protobuf;stream=watch"
        );
        let one = format!("{up}{cms}/w");
        send(
            http::Method::PUT,
            &one,
            Some({
                let mut c = get(&one).await.json();
                c["data"]["k"] = "1".into();
                c
            }),
        )
        .await;
        send(http::Method::DELETE, &one, None).await;
        for kind in ["MODIFIED", "DELETED"] {
            let (a, b) = (direct.next().await.unwrap(), cached.next().await.unwrap());
            assert_eq!(event(&a).0, kind);
            assert!(a == b, "{kind}:\n{}", explain(&b, &a));
        }
        let (a, b) = (direct.next().await.unwrap(), cached.next().await.unwrap());
        let ((ta, ea), (tb, eb)) = (event(&a), event(&b));
        assert_eq!((ta.as_str(), tb.as_str()), ("BOOKMARK", "BOOKMARK"));
        assert_eq!(eb.type_meta, ea.type_meta);
        assert_eq!(without_version(&eb.raw), without_version(&ea.raw));
        // The apiserver may bookmark again before its deadline (under
        // load its timer runs late); kubecache's watch ends.
        assert_eq!(cached.next().await, None);

        // RV=0: the state as ADDED events, the list's items.
        for i in 0..3 {
            let d = serde_json::json!({
                "metadata": {"name": format!("d{i}"), "labels": {"app": "a"}},
                "spec": {"selector": {"matchLabels": {"app": "a"}},
                         "template": {"metadata": {"labels": {"app": "a"}},
                                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
            });
            send(http::Method::POST, &format!("{up}{deploys}"), Some(d)).await;
        }
        converged_items(&up, &p, &deploys, Duration::from_secs(20)).await;
        let list = fetch_with(
            &format!("{}{deploys}?resourceVersion=0", p.url),
            &[("Accept", PROTOBUF)],
        )
        .await;
        let mut w =
            FrameWatch::open(&format!("{}{deploys}?watch=1&resourceVersion=0", p.url)).await;
        let mut added = Vec::new();
        for _ in 0..3 {
            let (t, obj) = event(&w.next().await.unwrap());
            assert_eq!(t, "ADDED");
            assert_eq!(obj.type_meta.unwrap().kind, "Deployment");
            added.push(obj.raw);
        }
        added.sort();
        assert_eq!(added, proto_items(&list.2));

        // Too old a version: one ERROR event carrying the 410 Status.
        let mut old =
            FrameWatch::open(&format!("{}{deploys}?watch=1&resourceVersion=2", p.url)).await;
        let (t, status) = event(&old.next().await.unwrap());
        assert_eq!(t, "ERROR");
        assert_eq!(status.type_meta.unwrap().kind, "Status");
        let mut d = String::new();
        dump(&status.raw, 0, &mut d);
        assert!(d.contains("4: \"Expired\"") && d.contains("6: 410"), "{d}");
        assert_eq!(old.next().await, None);
    })
    .await;
}
