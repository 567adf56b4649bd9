//! authorize mode against the real apiserver running RBAC
//! (`KUBECACHE_RBAC_APISERVER`, started by .ci/run with the static-token
//! users of tests/data/rbac-tokens.csv and the client CA of
//! .ci/client-certs), kubecache reading upstream as its admin:
//!
//! - the matrix: users (through a group, by certificate, impersonated,
//!   anonymous, with a wrong token) × verbs × resources × scopes ×
//!   representations, reads served from the cache, plus forwarded reads
//!   and dry-run writes — kubecache answers each with the apiserver's
//!   status code, and every refusal with its body, byte for byte;
//! - a revoked RoleBinding stops access through kubecache within the
//!   allowed decisions' TTL;
//! - a request nobody was allowed to make starts no reflector;
//! - a user over its watch limit gets 429 while another user proceeds;
//! - no token appears in kubecache's log.
#![cfg(feature = "real-apiserver")]

mod common;

use bytes::Bytes;
use common::*;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use kubecache::access::AccessConfig;
use kubecache::serve::limits::LimitsConfig;
use kubecache::serve::tls::ServingCert;
use kubecache::upstream::UpstreamConfig;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// kubecache in authorize mode over TLS in front of the RBAC apiserver,
/// reading it as admin, with client certificates verified against
/// .ci/client-certs' CA; and the CA its serving certificate chains to.
async fn kubecache(r: &RbacApiserver, access: AccessConfig) -> (Proxy, PathBuf) {
    kubecache_limited(r, access, LimitsConfig::default()).await
}

async fn kubecache_limited(
    r: &RbacApiserver,
    access: AccessConfig,
    limits: LimitsConfig,
) -> (Proxy, PathBuf) {
    kubecache_with(r, access, limits, true).await
}

/// The same, `anonymous` saying whether requests without credentials are
/// `system:anonymous` (else 401).
async fn kubecache_with(
    r: &RbacApiserver,
    access: AccessConfig,
    limits: LimitsConfig,
    anonymous: bool,
) -> (Proxy, PathBuf) {
    let (cert, ca) = serving_cert("kubecache authorize test CA");
    let upstream = UpstreamConfig::new(&r.url)
        .unwrap()
        .with_ca_file(&r.ca)
        .unwrap()
        .with_token_file(&r.token)
        .unwrap();
    let mut proxy = ProxyBuilder::new(&r.url)
        .upstream(upstream)
        .tls(cert)
        .client_ca(&r.certs.join("ca.crt"))
        .authorize(access)
        .limits(limits);
    if !anonymous {
        proxy = proxy.no_anonymous();
    }
    (proxy.start().await, ca)
}

/// A serving certificate of a new CA, and that CA's file.
fn serving_cert(ca_name: &str) -> (std::sync::Arc<ServingCert>, PathBuf) {
    let ca = TestCa::new(ca_name);
    let dir = std::env::temp_dir().join(format!("kubecache-authz-{}", unique_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = ca.issue_into(&dir);
    (ServingCert::load(&files).unwrap(), ca.pem_file(&dir))
}

const TOKENS: &[(&str, &str)] = &[
    ("reader", "reader-token-3f9a"),
    ("pod-reader", "pods-token-8c21"),
    ("lister", "lister-token-5d07"),
    ("named", "named-token-e6b4"),
    ("nobody", "nobody-token-91ac"),
    ("impersonator", "impersonator-token-27fd"),
];

fn token(user: &str) -> &'static str {
    TOKENS.iter().find(|(u, _)| *u == user).unwrap().1
}

/// Who asks: headers, and a client certificate.
struct Who {
    name: &'static str,
    headers: Vec<(&'static str, String)>,
    cert: Option<&'static str>,
}

fn bearer(user: &str) -> (&'static str, String) {
    ("authorization", format!("Bearer {}", token(user)))
}

fn everyone() -> Vec<Who> {
    let who = |name, headers, cert| Who {
        name,
        headers,
        cert,
    };
    vec![
        who("reader (group team-readers)", vec![bearer("reader")], None),
        who("pod-reader", vec![bearer("pod-reader")], None),
        who("lister (list only)", vec![bearer("lister")], None),
        who("named (secret s1 only)", vec![bearer("named")], None),
        who("nobody", vec![bearer("nobody")], None),
        who("anonymous", vec![], None),
        who(
            "a wrong token",
            vec![("authorization", "Bearer not-a-token".into())],
            None,
        ),
        who("carol (certificate)", vec![], Some("carol")),
        who(
            "impersonator as reader",
            vec![
                bearer("impersonator"),
                ("impersonate-user", "reader".into()),
                ("impersonate-group", "team-readers".into()),
            ],
            None,
        ),
        who(
            "impersonator as admin",
            vec![bearer("impersonator"), ("impersonate-user", "admin".into())],
            None,
        ),
        who(
            "impersonator with a group alone",
            vec![
                bearer("impersonator"),
                ("impersonate-group", "team-readers".into()),
            ],
            None,
        ),
    ]
}

/// Sends a request and reads its status and (unless it streams: a watch
/// that was let through) its body.
async fn ask(
    client: &HttpsClient,
    method: Method,
    url: &str,
    headers: &[(&str, String)],
    body: Option<serde_json::Value>,
) -> (u16, Bytes) {
    let mut req = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, v.as_str());
    }
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    if !body.is_empty() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(Full::new(body)).unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(20), client.request(req))
        .await
        .unwrap_or_else(|_| panic!("{url}: no answer in 20 s"))
        .unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let status = resp.status().as_u16();
    let streaming = url.contains("watch=1") && status == 200;
    if streaming {
        return (status, Bytes::new());
    }
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, body)
}

/// The objects and the RBAC rules of one run (its namespaces are new).
struct World {
    a: String,
    b: String,
    node: String,
}

async fn make_world(r: &RbacApiserver) -> World {
    let up = &r.insecure;
    let sfx = unique_suffix();
    let (a, b) = (format!("authz-a-{sfx}"), format!("authz-b-{sfx}"));
    establish(up, crd("widgets", "Widget", "Namespaced")).await;
    for ns in [&a, &b] {
        ensure_namespace(up, ns).await;
        let post = |path: String, obj: serde_json::Value| async move {
            let resp = send(Method::POST, &format!("{up}{path}"), Some(obj)).await;
            assert_eq!(resp.status, 201, "{path}: {}", resp.text());
        };
        post(
            format!("/api/v1/namespaces/{ns}/pods"),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .await;
        post(
            format!("/api/v1/namespaces/{ns}/configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "v"}}),
        )
        .await;
        for s in ["s1", "s2"] {
            post(
                format!("/api/v1/namespaces/{ns}/secrets"),
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": s},
                       "stringData": {"password": format!("secret-value-{s}-{ns}")}}),
            )
            .await;
        }
        post(
            format!("/apis/kubecache.test/v1/namespaces/{ns}/widgets"),
            json!({"apiVersion": "kubecache.test/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}),
        )
        .await;
    }
    let node = format!("authz-node-{sfx}");
    let resp = send(
        Method::POST,
        &format!("{up}/api/v1/nodes"),
        Some(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})),
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text());
    let reads = json!(["get", "list", "watch"]);
    let everything = json!([
        {"apiGroups": [""], "resources": ["pods", "configmaps", "secrets"], "verbs": reads},
        {"apiGroups": ["kubecache.test"], "resources": ["widgets"], "verbs": reads},
    ]);
    let list_only = json!([
        {"apiGroups": [""], "resources": ["pods", "configmaps", "secrets"], "verbs": ["list"]},
        {"apiGroups": ["kubecache.test"], "resources": ["widgets"], "verbs": ["list"]},
    ]);
    let one_secret = json!([
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s1"], "verbs": reads},
    ]);
    grant(
        up,
        Some(&a),
        &format!("read-all-{sfx}"),
        everything,
        ("Group", "team-readers"),
    )
    .await;
    grant(
        up,
        Some(&a),
        &format!("list-only-{sfx}"),
        list_only,
        ("User", "lister"),
    )
    .await;
    grant(
        up,
        Some(&a),
        &format!("one-secret-{sfx}"),
        one_secret,
        ("User", "named"),
    )
    .await;
    grant(
        up,
        None,
        &format!("authz-pods-nodes-{sfx}"),
        json!([{"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": reads}]),
        ("User", "pod-reader"),
    )
    .await;
    grant(
        up,
        None,
        &format!("authz-impersonate-{sfx}"),
        json!([
            {"apiGroups": [""], "resources": ["users"], "resourceNames": ["reader"], "verbs": ["impersonate"]},
            {"apiGroups": [""], "resources": ["groups"], "resourceNames": ["team-readers"], "verbs": ["impersonate"]},
        ]),
        ("User", "impersonator"),
    )
    .await;
    World { a, b, node }
}

const JSON: &str = "application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The reads of the matrix: (path and query, the Accepts to read it in).
fn reads(w: &World) -> Vec<String> {
    let mut out = Vec::new();
    let typed = [
        ("/api/v1", "pods", "p1"),
        ("/api/v1", "secrets", "s1"),
        ("/api/v1", "configmaps", "c1"),
        ("/apis/kubecache.test/v1", "widgets", "w1"),
    ];
    for (prefix, resource, name) in typed {
        out.push(format!("{prefix}/{resource}?resourceVersion=0"));
        out.push(format!("{prefix}/{resource}?watch=1&resourceVersion=0"));
        for ns in [&w.a, &w.b] {
            let base = format!("{prefix}/namespaces/{ns}/{resource}");
            out.push(format!("{base}?resourceVersion=0"));
            out.push(format!("{base}?resourceVersion=0&limit=1"));
            out.push(format!("{base}?watch=1&resourceVersion=0"));
            out.push(format!("{base}/{name}?resourceVersion=0"));
            out.push(format!(
                "{base}?resourceVersion=0&fieldSelector=metadata.name%3D{name}"
            ));
            out.push(format!(
                "{base}?watch=1&resourceVersion=0&fieldSelector=metadata.name%3D{name}"
            ));
            // Forwarded (a consistent read), with the client's identity.
            out.push(base.clone());
        }
        out.push(format!(
            "{prefix}/namespaces/{}/{resource}/{name}-missing?resourceVersion=0",
            w.a
        ));
    }
    let a = &w.a;
    out.push(format!(
        "/api/v1/namespaces/{a}/secrets/s2?resourceVersion=0"
    ));
    out.push(format!(
        "/api/v1/namespaces/{a}/secrets?resourceVersion=0&fieldSelector=metadata.name%3Ds2"
    ));
    out.push("/api/v1/nodes?resourceVersion=0".into());
    out.push("/api/v1/nodes?watch=1&resourceVersion=0".into());
    out.push(format!("/api/v1/nodes/{}?resourceVersion=0", w.node));
    out.push(format!("/api/v1/namespaces/{a}?resourceVersion=0"));
    out
}

fn accepts(path: &str) -> Vec<String> {
    let metadata = if path.contains("watch=1") || !path.split('?').next().unwrap().ends_with('1') {
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    } else {
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
    };
    [JSON, TABLE, metadata, PROTOBUF]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// A request of the matrix: method, path, headers, body.
type Case = (
    Method,
    String,
    Vec<(&'static str, String)>,
    Option<serde_json::Value>,
);

/// kubecache in authorize mode in front of `behind` (another kubecache in
/// authorize mode), reading it as the admin — whom the one behind reviews
/// upstream like any client, and who may impersonate the clients known by
/// their certificates; and the CA its serving certificate chains to.
async fn kubecache_in_front(
    r: &RbacApiserver,
    behind: &Proxy,
    behind_ca: &Path,
) -> (Proxy, PathBuf) {
    let (cert, ca) = serving_cert("kubecache front test CA");
    let upstream = UpstreamConfig::new(&behind.url)
        .unwrap()
        .with_ca_file(behind_ca)
        .unwrap()
        .with_token_file(&r.token)
        .unwrap();
    let proxy = ProxyBuilder::new(&behind.url)
        .upstream(upstream)
        .tls(cert)
        .client_ca(&r.certs.join("ca.crt"))
        .authorize(AccessConfig::default())
        .start()
        .await;
    (proxy, ca)
}

#[tokio::test]
async fn every_answer_through_kubecache_is_the_apiservers_for_every_user() {
    matrix(1).await
}

/// The same matrix through two kubecaches in authorize mode, one in front
/// of the other: every client is still served as itself at each hop.
#[tokio::test]
async fn every_answer_through_kubecache_is_the_apiservers_for_every_user_through_two_hops() {
    matrix(2).await
}

async fn matrix(hops: usize) {
    within(600, async {
        let r = rbac_apiserver();
        let w = make_world(&r).await;
        let (behind, behind_ca) = kubecache(&r, AccessConfig::default()).await;
        let (front, proxy_ca) = match hops {
            1 => (None, behind_ca.clone()),
            _ => {
                let (front, ca) = kubecache_in_front(&r, &behind, &behind_ca).await;
                (Some(front), ca)
            }
        };
        let proxy = front.as_ref().unwrap_or(&behind);
        // The types cached and synced before the matrix (an admin's reads
        // start them), so that its reads are the cache's to answer.
        let admin = https_client(&proxy_ca, None);
        let admin_token = std::fs::read_to_string(&r.token).unwrap();
        let admin_h = [("authorization", format!("Bearer {}", admin_token.trim()))];
        for (path, rt) in [
            ("/api/v1/pods", "v1/pods"),
            ("/api/v1/secrets", "v1/secrets"),
            ("/api/v1/configmaps", "v1/configmaps"),
            ("/api/v1/nodes", "v1/nodes"),
            ("/api/v1/namespaces", "v1/namespaces"),
            ("/apis/kubecache.test/v1/widgets", "kubecache.test/v1/widgets"),
        ] {
            let (code, body) = ask(&admin, Method::GET, &format!("{}{path}?resourceVersion=0", proxy.url), &admin_h, None).await;
            assert_eq!(code, 200, "{path}: {}", String::from_utf8_lossy(&body));
            wait_synced_https(&admin, &proxy.url, rt).await;
        }
        let apiserver_clients = |cert: Option<&str>| {
            let files = cert.map(|c| (r.certs.join(format!("{c}.crt")), r.certs.join(format!("{c}.key"))));
            let direct = https_client(&r.ca, files.as_ref().map(|(c, k)| (c.as_path(), k.as_path())));
            let through = https_client(&proxy_ca, files.as_ref().map(|(c, k)| (c.as_path(), k.as_path())));
            (direct, through)
        };
        let (mut size, mut leaks, mut over_denials, mut other) = (0, 0, 0, 0);
        let mut cached_allowed = 0;
        let mut report = Vec::new();
        let paths = reads(&w);
        for who in everyone() {
            let (direct, through) = apiserver_clients(who.cert);
            let mut cases: Vec<Case> = Vec::new();
            for path in &paths {
                for accept in accepts(path) {
                    let mut h = who.headers.clone();
                    h.push(("accept", accept));
                    cases.push((Method::GET, path.clone(), h, None));
                }
            }
            // Dry-run writes, forwarded with the client's identity.
            let mut h = who.headers.clone();
            h.push(("accept", JSON.into()));
            cases.push((
                Method::POST,
                format!("/api/v1/namespaces/{}/configmaps?dryRun=All", w.a),
                h.clone(),
                Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}})),
            ));
            cases.push((
                Method::DELETE,
                format!("/api/v1/namespaces/{}/secrets/s1?dryRun=All", w.a),
                h,
                None,
            ));
            for (method, path, headers, body) in cases {
                size += 1;
                let (want, want_body) = ask(&direct, method.clone(), &format!("{}{path}", r.url), &headers, body.clone()).await;
                let (got, got_body) = ask(&through, method.clone(), &format!("{}{path}", proxy.url), &headers, body).await;
                let ok = |c: u16| (200..300).contains(&c);
                if ok(got) && !ok(want) {
                    leaks += 1;
                } else if !ok(got) && ok(want) {
                    over_denials += 1;
                } else if got != want || (!ok(want) && got_body != want_body) {
                    other += 1;
                } else {
                    if ok(got) && method == Method::GET && path.contains("resourceVersion=0") {
                        cached_allowed += 1;
                    }
                    continue;
                }
                let accept = headers.iter().find(|(k, _)| *k == "accept").map_or("", |(_, v)| v.as_str());
                report.push(format!(
                    "{}: {method} {path} [{accept}]: apiserver {want} {:?}, kubecache {got} {:?}",
                    who.name,
                    String::from_utf8_lossy(&want_body[..want_body.len().min(300)]),
                    String::from_utf8_lossy(&got_body[..got_body.len().min(300)]),
                ));
            }
        }
        println!(
            "authorization matrix through {hops} kubecache(s): {size} requests, {leaks} leaks, {over_denials} over-denials, {other} other differences ({cached_allowed} allowed cached reads)"
        );
        assert!(
            report.is_empty(),
            "{} differences:\n{}",
            report.len(),
            report[..report.len().min(40)].join("\n")
        );
        assert!(size > 1000, "a matrix of {size}");
        assert!(cached_allowed > 100, "only {cached_allowed} allowed reads");
    })
    .await
}

/// kubecache's `/readyz?verbose`, which anyone may read.
async fn readyz(client: &HttpsClient, url: &str) -> String {
    let (_, body) = ask(
        client,
        Method::GET,
        &format!("{url}/readyz?verbose"),
        &[],
        None,
    )
    .await;
    String::from_utf8_lossy(&body).into_owned()
}

/// Waits until kubecache's `/readyz?verbose` says `rt` synced.
async fn wait_synced_https(client: &HttpsClient, url: &str, rt: &str) {
    for _ in 0..300 {
        if readyz(client, url)
            .await
            .contains(&format!("[+]informer-sync/{rt} ok"))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{rt} never synced");
}

#[tokio::test]
async fn a_read_nobody_was_allowed_starts_no_reflector() {
    within(120, async {
        let r = rbac_apiserver();
        let (proxy, proxy_ca) = kubecache(&r, AccessConfig::default()).await;
        let anonymous = https_client(&proxy_ca, None);
        let nobody = [bearer("nobody")];
        for (who, h) in [("anonymous", &[][..]), ("nobody", &nobody[..])] {
            for path in [
                "/api/v1/secrets?resourceVersion=0",
                "/api/v1/secrets?watch=1&resourceVersion=0",
            ] {
                let (code, body) = ask(
                    &anonymous,
                    Method::GET,
                    &format!("{}{path}", proxy.url),
                    h,
                    None,
                )
                .await;
                assert_eq!(
                    code,
                    403,
                    "{who} {path}: {}",
                    String::from_utf8_lossy(&body)
                );
            }
        }
        let ready = readyz(&anonymous, &proxy.url).await;
        assert!(!ready.contains("secrets"), "{ready}");
        // An unknown token is the apiserver's 401, and starts nothing either.
        let wrong = [("authorization", "Bearer nope".to_string())];
        let (code, body) = ask(
            &anonymous,
            Method::GET,
            &format!("{}/api/v1/configmaps?resourceVersion=0", proxy.url),
            &wrong,
            None,
        )
        .await;
        assert_eq!(code, 401, "{}", String::from_utf8_lossy(&body));
        let ready = readyz(&anonymous, &proxy.url).await;
        assert!(!ready.contains("configmaps"), "{ready}");
    })
    .await
}

#[tokio::test]
async fn a_deleted_role_binding_stops_reads_within_the_allowed_ttl() {
    within(120, async {
        let r = rbac_apiserver();
        let sfx = unique_suffix();
        let ns = format!("authz-revoke-{sfx}");
        ensure_namespace(&r.insecure, &ns).await;
        let name = format!("revocable-{sfx}");
        grant(
            &r.insecure,
            Some(&ns),
            &name,
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]),
            ("User", "nobody"),
        )
        .await;
        let ttl = Duration::from_secs(2);
        let (proxy, proxy_ca) = kubecache(
            &r,
            AccessConfig {
                allowed_ttl: ttl,
                denied_ttl: Duration::from_secs(1),
                ..AccessConfig::default()
            },
        )
        .await;
        let client = https_client(&proxy_ca, None);
        let h = [bearer("nobody")];
        let url = format!("{}/api/v1/namespaces/{ns}/configmaps?resourceVersion=0", proxy.url);
        let mut allowed = false;
        for _ in 0..100 {
            let (code, _) = ask(&client, Method::GET, &url, &h, None).await;
            if code == 200 {
                allowed = true;
                break;
            }
            // RBAC's own informers take a moment to see the new binding.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(allowed, "the binding never let nobody read");
        let resp = send(
            Method::DELETE,
            &format!("{}/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/{name}", r.insecure),
            None,
        )
        .await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        let deleted = std::time::Instant::now();
        loop {
            let (code, body) = ask(&client, Method::GET, &url, &h, None).await;
            if code == 403 {
                let body = String::from_utf8_lossy(&body);
                assert!(body.contains(r#"User \"nobody\" cannot list resource \"configmaps\""#), "{body}");
                break;
            }
            // The TTL, and a second for the apiserver's RBAC to see it.
            assert!(deleted.elapsed() < ttl + Duration::from_secs(3), "still allowed after {:?}", deleted.elapsed());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

#[tokio::test]
async fn a_user_over_its_watch_limit_gets_429_while_another_proceeds() {
    within(120, async {
        let r = rbac_apiserver();
        let ns = format!("authz-limits-{}", unique_suffix());
        ensure_namespace(&r.insecure, &ns).await;
        let reads = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]);
        grant(&r.insecure, Some(&ns), "nobody-reads", reads.clone(), ("User", "nobody")).await;
        grant(&r.insecure, Some(&ns), "lister-reads", reads, ("User", "lister")).await;
        let limits = LimitsConfig {
            watches_per_user: 2,
            ..LimitsConfig::default()
        };
        let (proxy, proxy_ca) = kubecache_limited(&r, AccessConfig::default(), limits).await;
        let client = https_client(&proxy_ca, None);
        let url = format!("{}/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=0", proxy.url);
        let open = |user: &'static str| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let req = http::Request::get(&url)
                    .header("authorization", format!("Bearer {}", token(user)))
                    .body(Full::new(Bytes::new()))
                    .unwrap();
                client.request(req).await.unwrap()
            }
        };
        // RBAC's informers take a moment to see the new bindings.
        let until_allowed = |user: &'static str| {
            let open = &open;
            async move {
                let mut resp = open(user).await;
                for _ in 0..50 {
                    if resp.status() == 200 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    resp = open(user).await;
                }
                resp
            }
        };
        let first = until_allowed("nobody").await;
        assert_eq!(first.status(), 200);
        let second = open("nobody").await;
        assert_eq!(second.status(), 200);
        let third = open("nobody").await;
        assert_eq!(third.status(), 429);
        assert_eq!(third.headers()["retry-after"], "1");
        let other = until_allowed("lister").await;
        assert_eq!(other.status(), 200, "another user is not held back");
        // An ended watch gives its slot back.
        drop(first);
        let again = until_allowed("nobody").await;
        assert_eq!(again.status(), 200, "the ended watch's slot never came back");
        drop((second, other, again));
    })
    .await
}

#[tokio::test]
async fn without_anonymous_access_a_request_without_credentials_is_the_apiservers_401() {
    within(60, async {
        let r = rbac_apiserver();
        let (proxy, proxy_ca) =
            kubecache_with(&r, AccessConfig::default(), LimitsConfig::default(), false).await;
        let client = https_client(&proxy_ca, None);
        let url = format!("{}/api/v1/namespaces?resourceVersion=0", proxy.url);
        let (code, body) = ask(&client, Method::GET, &url, &[], None).await;
        assert_eq!(code, 401);
        // The apiserver's 401, as it answers a wrong token.
        assert_eq!(
            String::from_utf8_lossy(&body),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n"
        );
        // A client with credentials is served as before, and the health
        // endpoints still answer anyone.
        let (code, _) = ask(&client, Method::GET, &url, &[bearer("pod-reader")], None).await;
        assert_eq!(code, 403, "pod-reader may not list namespaces");
        assert!(readyz(&client, &proxy.url).await.contains("ok"));
    })
    .await
}
