//! The simulator negotiates `Accept` as kubecache does, with kubecache's
//! own code: its Tables, metadata-only lists and watches equal what
//! kubecache serves from its cache in front of it, it refuses what does not
//! fit with the apiserver's 406s and 400s (byte for byte), and — with the
//! `real-apiserver` feature — it answers the same Accept headers with the
//! same statuses and types as a real v1.20 apiserver, but where it has no
//! YAML or protobuf.

mod common;

use common::*;
use http::Method;
use http_body_util::BodyExt;
use kubecache::serve::ConsistentReads;
use serde_json::{json, Value};
use std::time::Duration;

const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const TABLE_V1BETA1: &str = "application/json;as=Table;g=meta.k8s.io;v=v1beta1";
const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const META_V1BETA1: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const META_LIST_V1BETA1: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";

/// Accept headers of every kind: served, converted, refused.
const HEADERS: &[&str] = &[
    "",
    "application/json",
    "*/*",
    TABLE,
    TABLE_V1BETA1,
    KUBECTL_ACCEPT,
    META,
    META_V1BETA1,
    META_LIST,
    META_LIST_V1BETA1,
    "application/*",
    "text/html",
    "application/json;as=Foo;g=meta.k8s.io;v=v1",
    "application/json;as=Table",
    "application/json;as=Table;g=meta.k8s.io;v=v2",
    "application/json;q=abc",
    "application/json;stream=watch",
    "application/json;sv=v9",
    "text/html, */*;q=0.1",
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1;q=0.1, text/plain",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/vnd.kubernetes.protobuf, application/json;q=0.5",
    "application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1",
];

/// kubecache answers this from its cache, so a comparison with the
/// simulator compares two servers, not the simulator with itself.
fn assert_served_from_cache(p: &Proxy, path_and_query: &str, accept: &str) {
    assert_served_with(p, ConsistentReads::Forward, path_and_query, accept);
}

fn parse(what: &str, body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{what}: {e}: {body}"))
}

/// The simulator and kubecache in front of it, its configmaps, pods,
/// nodes, namespaces, deployments (and its empty services) synced.
async fn sim_and_proxy() -> (SimServer, Proxy) {
    let sim = SimBuilder::new().start().await;
    let p = start_proxy(&sim.url).await;
    for (path, resource) in [
        ("/api/v1/configmaps", "v1/configmaps"),
        ("/api/v1/pods", "v1/pods"),
        ("/api/v1/nodes", "v1/nodes"),
        ("/api/v1/namespaces", "v1/namespaces"),
        ("/api/v1/services", "v1/services"),
        ("/apis/apps/v1/deployments", "apps/v1/deployments"),
    ] {
        wait_synced(&p, path, resource).await;
    }
    (sim, p)
}

/// A name of one object in an RV=0 list of `path` on the simulator.
async fn some_name(sim: &SimServer, path: &str) -> String {
    let list = get(&format!("{}{path}?resourceVersion=0", sim.url))
        .await
        .json();
    list["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{path} is empty"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sims_tables_equal_kubecaches_tables_of_the_same_objects() {
    within(60, async {
        let (sim, p) = sim_and_proxy().await;
        let pod = some_name(&sim, "/api/v1/namespaces/default/pods").await;
        let node = some_name(&sim, "/api/v1/nodes").await;
        let deploy = some_name(&sim, "/apis/apps/v1/namespaces/team-02/deployments").await;
        let lists = [
            "/api/v1/pods",
            "/api/v1/namespaces/default/configmaps",
            "/api/v1/nodes",
            "/api/v1/namespaces",
            "/apis/apps/v1/deployments",
            // Empty: a Table without rows.
            "/api/v1/services",
        ];
        let gets = [
            format!("/api/v1/namespaces/default/pods/{pod}"),
            format!("/api/v1/nodes/{node}"),
            format!("/apis/apps/v1/namespaces/team-02/deployments/{deploy}"),
            "/api/v1/namespaces/kube-system".to_string(),
        ];
        let mut json_lists = Vec::new();
        for path in lists {
            let items = get(&format!("{}{path}?resourceVersion=0", sim.url))
                .await
                .json()["items"]
                .as_array()
                .unwrap()
                .clone();
            json_lists.push((path, items));
        }
        for accept in [TABLE, TABLE_V1BETA1, KUBECTL_ACCEPT] {
            for include in [
                "",
                "&includeObject=None",
                "&includeObject=Metadata",
                "&includeObject=Object",
            ] {
                for (path, items) in &json_lists {
                    let q = format!("{path}?resourceVersion=0{include}");
                    assert_served_from_cache(&p, &q, accept);
                    let (cs, _, s) = fetch(&format!("{}{q}", sim.url), accept).await;
                    let (ck, _, k) = fetch(&format!("{}{q}", p.url), accept).await;
                    assert_eq!((cs, ck), (200, 200), "{q}: {s}");
                    let (s, k) = (parse(&q, &s), parse(&q, &k));
                    assert_tables_agree(&s, &k, &format!("{q} {accept}"), true);
                    // The Table is of the objects the JSON list holds, one row each.
                    assert_eq!(s["kind"], "Table");
                    assert_eq!(s["columnDefinitions"][0]["name"], "Name", "{q}");
                    let rows = s["rows"].as_array().map(Vec::as_slice).unwrap_or_default();
                    assert_eq!(rows.len(), items.len(), "{q}");
                    for (row, item) in rows.iter().zip(items) {
                        assert_eq!(row["cells"][0], item["metadata"]["name"], "{q}");
                        let object = &row["object"];
                        match include {
                            "&includeObject=None" => assert_eq!(*object, Value::Null),
                            "&includeObject=Object" => {
                                // The whole object, kind and all (a list's items have none).
                                assert!(
                                    object["kind"].is_string()
                                        && object["kind"] != "PartialObjectMetadata"
                                );
                                for (k, v) in item.as_object().unwrap() {
                                    assert_eq!(&object[k], v, "{q}: {k}");
                                }
                            }
                            _ => {
                                assert_eq!(object["kind"], "PartialObjectMetadata");
                                assert_eq!(object["metadata"], item["metadata"]);
                            }
                        }
                    }
                }
                for path in &gets {
                    let q = format!("{path}?resourceVersion=0{include}");
                    assert_served_from_cache(&p, &q, accept);
                    let (cs, _, s) = fetch(&format!("{}{q}", sim.url), accept).await;
                    let (ck, _, k) = fetch(&format!("{}{q}", p.url), accept).await;
                    assert_eq!((cs, ck), (200, 200), "{q}: {s}");
                    let (s, k) = (parse(&q, &s), parse(&q, &k));
                    assert_tables_agree(&s, &k, &format!("{q} {accept}"), false);
                    assert_eq!(s["rows"].as_array().unwrap().len(), 1, "{q}");
                }
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sims_table_watches_equal_kubecaches() {
    within(60, async {
        let (sim, p) = sim_and_proxy().await;
        let cms = "/api/v1/namespaces/default/configmaps";
        let rv = get(&format!("{}{cms}?resourceVersion=0", p.url))
            .await
            .json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let watches = [
            (format!("{cms}?watch=1&resourceVersion={rv}"), TABLE),
            (
                format!(
                    "{cms}?watch=1&resourceVersion={rv}&labelSelector=w%3D1&includeObject=Object"
                ),
                TABLE_V1BETA1,
            ),
        ];
        let mut open = Vec::new();
        for (path, accept) in &watches {
            assert_served_from_cache(&p, path, accept);
            let direct = LineWatch::open(&format!("{}{path}", sim.url), accept).await;
            let cached = LineWatch::open(&format!("{}{path}", p.url), accept).await;
            open.push((path, direct, cached));
        }
        // Created, changed, relabelled out of w=1, deleted.
        let url = format!("{}{cms}", sim.url);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "watched", "labels": {"w": "1"}}, "data": {"a": "1"}});
        assert_eq!(send(Method::POST, &url, Some(cm)).await.status, 201);
        let mut cm = get(&format!("{url}/watched")).await.json();
        cm["data"]["b"] = json!("2");
        assert_eq!(
            send(Method::PUT, &format!("{url}/watched"), Some(cm.clone()))
                .await
                .status,
            200
        );
        let mut cm = get(&format!("{url}/watched")).await.json();
        cm["metadata"]["labels"]["w"] = json!("2");
        assert_eq!(
            send(Method::PUT, &format!("{url}/watched"), Some(cm))
                .await
                .status,
            200
        );
        assert_eq!(
            send(Method::DELETE, &format!("{url}/watched"), None)
                .await
                .status,
            200
        );
        let expected: [&[&str]; 2] = [
            &["ADDED", "MODIFIED", "MODIFIED", "DELETED"],
            &["ADDED", "MODIFIED", "DELETED"],
        ];
        for ((path, direct, cached), types) in open.iter_mut().zip(expected) {
            for (i, want) in types.iter().enumerate() {
                let (s, k) = (direct.line().await, cached.line().await);
                let (s, k) = (parse(path, &s), parse(path, &k));
                assert_eq!(s["type"], *want, "{path}: {s}");
                assert_eq!(k["type"], s["type"], "{path}");
                assert_tables_agree(&s["object"], &k["object"], path, false);
                // Column definitions with the first event only, as v1.20.
                assert_eq!(
                    s["object"]["columnDefinitions"].is_array(),
                    i == 0,
                    "{path} #{i}"
                );
                assert_eq!(s["object"]["rows"][0]["cells"][0], "watched");
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sims_metadata_lists_gets_and_watches() {
    within(60, async {
        let (sim, p) = sim_and_proxy().await;
        let cms = "/api/v1/namespaces/default/configmaps";
        let json = get(&format!("{}{cms}?resourceVersion=0", sim.url))
            .await
            .json();
        let items = json["items"].as_array().unwrap();
        assert!(!items.is_empty());
        for (accept, version) in [
            (META_LIST, "meta.k8s.io/v1"),
            (META_LIST_V1BETA1, "meta.k8s.io/v1beta1"),
        ] {
            let q = format!("{cms}?resourceVersion=0");
            assert_served_from_cache(&p, &q, accept);
            let (code, ct, body) = fetch(&format!("{}{q}", sim.url), accept).await;
            assert_eq!((code, ct.as_str()), (200, "application/json"), "{body}");
            // Through kubecache, from its cache: the same bytes.
            assert_eq!(fetch(&format!("{}{q}", p.url), accept).await.2, body);
            let list = parse(&q, &body);
            assert_eq!(list["kind"], "PartialObjectMetadataList");
            assert_eq!(list["apiVersion"], version);
            assert_eq!(list["metadata"], json["metadata"]);
            let metas = list["items"].as_array().unwrap();
            assert_eq!(metas.len(), items.len());
            for (m, item) in metas.iter().zip(items) {
                assert_eq!(m["kind"], "PartialObjectMetadata");
                assert_eq!(m["apiVersion"], version);
                assert_eq!(m["metadata"], item["metadata"]);
                assert!(m.get("data").is_none());
            }
        }
        // A page of a limited list carries its continue token along.
        let page = fetch(&format!("{}/api/v1/configmaps?limit=2", sim.url), META_LIST).await;
        let page = parse("page", &page.2);
        assert_eq!(page["items"].as_array().unwrap().len(), 2);
        assert!(page["metadata"]["continue"].is_string(), "{page}");
        // One object.
        let name = items[0]["metadata"]["name"].as_str().unwrap();
        let q = format!("{cms}/{name}?resourceVersion=0");
        for accept in [META, META_V1BETA1] {
            assert_served_from_cache(&p, &q, accept);
            let (code, _, body) = fetch(&format!("{}{q}", sim.url), accept).await;
            assert_eq!(code, 200, "{body}");
            assert_eq!(fetch(&format!("{}{q}", p.url), accept).await.2, body);
            let one = parse(&q, &body);
            assert_eq!(one["kind"], "PartialObjectMetadata");
            assert_eq!(one["metadata"], items[0]["metadata"]);
        }
        // A metadata watch sees the change as metadata, as kubecache's does.
        let rv = json["metadata"]["resourceVersion"].as_str().unwrap();
        let path = format!("{cms}?watch=1&resourceVersion={rv}");
        assert_served_from_cache(&p, &path, META);
        let mut direct = LineWatch::open(&format!("{}{path}", sim.url), META).await;
        let mut cached = LineWatch::open(&format!("{}{path}", p.url), META).await;
        let mut cm = items[0].clone();
        cm["metadata"]["labels"] = json!({"changed": "yes"});
        assert_eq!(
            send(Method::PUT, &format!("{}{cms}/{name}", sim.url), Some(cm))
                .await
                .status,
            200
        );
        let (a, b) = (direct.line().await, cached.line().await);
        assert_eq!(a, b);
        let ev = parse("event", &a);
        assert_eq!(ev["type"], "MODIFIED");
        assert_eq!(ev["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(
            ev["object"]["metadata"]["labels"],
            json!({"changed": "yes"})
        );
    })
    .await;
}

/// The apiserver's indented fallback: what it writes for an error when no
/// clause of the header can carry one (conversions cannot).
fn indented(message: &str, code: u16, reason: &str, details: Option<Value>) -> String {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason});
    if let Some(d) = details {
        s["details"] = d;
    }
    s["code"] = json!(code);
    serde_json::to_string_pretty(&s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sim_refuses_what_does_not_fit_as_the_apiserver_does() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let s = &sim.url;
        let cms = format!("{s}/api/v1/namespaces/default/configmaps");
        let name = some_name(&sim, "/api/v1/namespaces/default/configmaps").await;
        let one = format!("{cms}/{name}");
        let deployments = format!("{s}/apis/apps/v1/deployments");
        let not_acceptable = |m: &str| indented(m, 406, "NotAcceptable", None);
        // The wrong metadata form for the read, after reading it.
        let cases: Vec<(String, &str, u16, String)> = vec![
            (cms.clone(), META, 406, not_acceptable("you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)")),
            (deployments.clone(), META_V1BETA1, 406, not_acceptable("you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)")),
            (one.clone(), META_LIST, 406, not_acceptable("you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)")),
            // A missing object's 404 comes first.
            (format!("{cms}/nope"), META_LIST, 404, indented("configmaps \"nope\" not found", 404, "NotFound", Some(json!({"name": "nope", "kind": "configmaps"})))),
            // So does a list's own error.
            (format!("{cms}?labelSelector=a%3D%3Db%3D"), META, 400, indented("found '=', expected: ',' or 'end of string'", 400, "BadRequest", None)),
            // Nothing acceptable: the simulator's one media type.
            (cms.clone(), "application/json;as=Foo;g=meta.k8s.io;v=v1", 406, not_acceptable("only the following media types are accepted: application/json")),
            (format!("{cms}/nope"), "application/json;as=Table", 406, not_acceptable("only the following media types are accepted: application/json")),
            (format!("{cms}?watch=1"), "application/json;as=Table;g=apps;v=v1", 406, not_acceptable("only the following media types are accepted: application/json")),
            // go-restful's check, before anything: compact when a clause
            // can carry the error, indented when none can.
            (cms.clone(), "application/*", 406, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"406: Not Acceptable\",\"reason\":\"NotAcceptable\",\"details\":{},\"code\":406}\n".into()),
            (format!("{cms}/nope"), "text/html", 406, indented("406: Not Acceptable", 406, "NotAcceptable", Some(json!({})))),
            // No YAML or protobuf in the simulator.
            (one.clone(), "application/yaml", 406, indented("406: Not Acceptable", 406, "NotAcceptable", Some(json!({})))),
            (format!("{cms}?watch=1"), "application/vnd.kubernetes.protobuf", 406, indented("406: Not Acceptable", 406, "NotAcceptable", Some(json!({})))),
        ];
        for (url, accept, code, body) in &cases {
            let got = fetch(url, accept).await;
            assert_eq!((got.0, got.1.as_str(), got.2.as_str()), (*code, "application/json", body.as_str()), "{url} {accept}");
        }
        // An includeObject the apiserver rejects, once the read is done.
        let bad = indented(
            "Unable to convert to Table as requested: includeObject: Invalid value: \"Fo\\\"o\": must be 'Metadata', 'Object', 'None', or empty",
            400,
            "BadRequest",
            None,
        );
        for url in [format!("{cms}?includeObject=Fo%22o"), format!("{one}?includeObject=Fo%22o"), format!("{cms}?watch=1&includeObject=Fo%22o")] {
            assert_eq!(fetch(&url, TABLE).await, (400, "application/json".into(), bad.clone()), "{url}");
        }
        // With a JSON clause to carry it, the same error is compact.
        let (code, _, body) = fetch(&format!("{cms}?includeObject=Foo"), KUBECTL_ACCEPT).await;
        assert_eq!(code, 400);
        assert!(body.starts_with("{\"kind\":\"Status\"") && body.ends_with("}\n"), "{body}");
        let (code, _, body) = fetch(&format!("{cms}/nope?includeObject=Foo"), TABLE).await;
        assert_eq!(code, 404, "{body}");
        // A YAML or protobuf header with a JSON clause is answered in JSON.
        for accept in ["application/vnd.kubernetes.protobuf, application/json;q=0.5", "application/yaml, */*"] {
            let (code, ct, body) = fetch(&cms, accept).await;
            assert_eq!((code, ct.as_str()), (200, "application/json"), "{accept}");
            assert_eq!(parse(accept, &body)["kind"], "ConfigMapList");
        }
        let (code, _, body) = fetch(&cms, "application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1").await;
        assert_eq!((code, parse("yaml or table", &body)["kind"].as_str()), (200, Some("Table")));
    })
    .await;
}

/// Reads a watch's body until it ends: None if it is still open at `wait`.
async fn watch_body(url: &str, accept: &str, wait: Duration) -> (u16, Option<String>) {
    let resp = request(url, accept).await;
    let code = resp.status().as_u16();
    match tokio::time::timeout(wait, resp.into_body().collect()).await {
        Ok(body) => (
            code,
            Some(String::from_utf8_lossy(&body.unwrap().to_bytes()).into_owned()),
        ),
        Err(_) => (code, None),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_list_watch_ends_at_its_first_event_as_in_v1_20() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let cms = format!("{}/api/v1/namespaces/default/configmaps", sim.url);
        // The state's first ADDED event cannot be converted: 200, nothing, the end.
        let (code, body) = watch_body(
            &format!("{cms}?watch=1&timeoutSeconds=30"),
            META_LIST,
            Duration::from_secs(5),
        )
        .await;
        assert_eq!((code, body.as_deref()), (200, Some("")));
        // Without events it stays open, and ends at the first.
        let rv = get(&cms).await.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let url = format!("{cms}?watch=1&resourceVersion={rv}&timeoutSeconds=30");
        let waiting =
            tokio::spawn(async move { watch_body(&url, META_LIST, Duration::from_secs(10)).await });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!waiting.is_finished());
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first-event"}});
        assert_eq!(send(Method::POST, &cms, Some(cm)).await.status, 201);
        assert_eq!(waiting.await.unwrap(), (200, Some(String::new())));
        // An ERROR event is a Status, not converted: it is sent.
        sim.sim.fault(&kubecache_sim::faults::FaultCommand::Expire);
        let (code, body) = watch_body(
            &format!("{cms}?watch=1&resourceVersion={rv}"),
            META_LIST,
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(code, 200);
        let ev = parse("error event", body.as_deref().expect("the stream ends"));
        assert_eq!(
            (ev["type"].as_str(), ev["object"]["code"].as_u64()),
            (Some("ERROR"), Some(410))
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_headers_through_kubecache_get_the_sims_answer() {
    within(90, async {
        let (sim, p) = sim_and_proxy().await;
        let cms = "/api/v1/namespaces/default/configmaps";
        let name = some_name(&sim, cms).await;
        let paths = [
            format!("{cms}?resourceVersion=0"),
            format!("{cms}/{name}?resourceVersion=0"),
            format!("{cms}/nope?resourceVersion=0"),
            format!("{cms}?resourceVersion=0&includeObject=Object"),
            format!("{cms}?resourceVersion=0&includeObject=Bad"),
        ];
        for accept in HEADERS {
            for path in &paths {
                let direct = fetch(&format!("{}{path}", sim.url), accept).await;
                let cached = fetch(&format!("{}{path}", p.url), accept).await;
                let what = format!("{path} {accept:?}");
                // kubecache writes protobuf, which the JSON-only simulator
                // cannot (it answers a JSON clause, or 406): kubecache
                // answers from its cache, as the apiserver would.
                let protobuf = kubecache::request::accept::Accept::new(Some(accept))
                    .negotiate(kubecache::request::accept::Endpoint::resource(true))
                    .is_some_and(|n| {
                        n.media == kubecache::request::accept::Media::Protobuf
                            && !matches!(
                                n.conversion,
                                Some(kubecache::request::accept::Conversion::Table(_))
                            )
                    });
                if protobuf {
                    assert_eq!(direct.1, "application/json", "{what}");
                    assert_eq!(cached.1, "application/vnd.kubernetes.protobuf", "{what}");
                    continue;
                }
                assert_eq!(
                    (cached.0, &cached.1),
                    (direct.0, &direct.1),
                    "{what}: {}",
                    direct.2
                );
                let list = !path.contains(&name) && !path.contains("nope");
                match serde_json::from_str::<Value>(&direct.2) {
                    Ok(d) if d["kind"] == "Table" => {
                        assert_tables_agree(&d, &parse(&what, &cached.2), &what, list)
                    }
                    Ok(mut d) if list && direct.0 == 200 => {
                        // An RV=0 list's version is each cache's own.
                        let mut c = parse(&what, &cached.2);
                        d["metadata"]["resourceVersion"] = json!(null);
                        c["metadata"]["resourceVersion"] = json!(null);
                        assert_eq!(c, d, "{what}");
                    }
                    _ => assert_eq!(cached.2, direct.2, "{what}"),
                }
            }
        }
    })
    .await;
}

/// Against the real apiserver (`real-apiserver` feature): the same Accept
/// headers get the same answers from the simulator.
#[cfg(feature = "real-apiserver")]
mod real {
    use super::*;

    /// Where the apiserver would answer YAML or protobuf, the simulator, which
    /// has neither, answers as the apiserver does for the header's JSON
    /// clause, or refuses as go-restful does when it has none.
    enum Differs {
        AsFor(&'static str),
        Refused,
    }

    fn sim_differs(accept: &str) -> Option<Differs> {
        match accept {
            "application/yaml" | "application/vnd.kubernetes.protobuf" => Some(Differs::Refused),
            "application/vnd.kubernetes.protobuf, application/json;q=0.5" => {
                Some(Differs::AsFor("application/json;q=0.5"))
            }
            "application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1" => {
                Some(Differs::AsFor(TABLE))
            }
            _ => None,
        }
    }

    /// A Table's cells but its ages, which differ between two servers' objects.
    fn cells_but_age(t: &Value) -> Vec<Vec<Value>> {
        let age = t["columnDefinitions"]
            .as_array()
            .and_then(|c| c.iter().position(|c| c["name"] == "Age"));
        t["rows"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|r| {
                let mut cells = r["cells"].as_array().cloned().unwrap_or_default();
                if let Some(i) = age.filter(|i| *i < cells.len()) {
                    cells[i] = Value::Null;
                }
                cells
            })
            .collect()
    }

    /// The simulator's answer agrees with the apiserver's: the same status and
    /// type; errors byte for byte (but the media types a 406 lists); the same
    /// kind of answer, Tables with the same columns and cells but ages.
    fn assert_agree(what: &str, real: &(u16, String, String), ours: &(u16, String, String)) {
        assert_eq!(
            (ours.0, &ours.1),
            (real.0, &real.1),
            "{what}: {} vs {}",
            ours.2,
            real.2
        );
        if real.0 != 200 {
            let only = "only the following media types are accepted: ";
            if real.2.contains(only) {
                // The apiserver lists its three; the simulator its one.
                let three = ", application/yaml, application/vnd.kubernetes.protobuf";
                assert!(
                    real.2.contains(&format!("{only}application/json{three}")),
                    "{what}"
                );
                assert_eq!(ours.2, real.2.replace(three, ""), "{what}");
            } else {
                assert_eq!(ours.2, real.2, "{what}");
            }
            return;
        }
        let (r, o) = (parse(what, &real.2), parse(what, &ours.2));
        assert_eq!(o["kind"], r["kind"], "{what}");
        assert_eq!(o["apiVersion"], r["apiVersion"], "{what}");
        if r["kind"] == "Table" {
            assert_eq!(o["columnDefinitions"], r["columnDefinitions"], "{what}");
            assert_eq!(cells_but_age(&o), cells_but_age(&r), "{what}");
            assert_eq!(
                o["rows"][0]["object"]["kind"], r["rows"][0]["object"]["kind"],
                "{what}"
            );
            return;
        }
        let names = |v: &Value| -> Vec<Value> {
            match v["items"].as_array() {
                Some(items) => items
                    .iter()
                    .map(|i| i["metadata"]["name"].clone())
                    .collect(),
                None => vec![v["metadata"]["name"].clone()],
            }
        };
        assert_eq!(names(&o), names(&r), "{what}");
    }

    /// A watch's status and Content-Type.
    async fn watch_head(url: &str, accept: &str) -> (u16, String) {
        let resp = request(url, accept).await;
        let ct = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string());
        (resp.status().as_u16(), ct.unwrap_or_default())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sim_negotiates_as_the_real_apiserver_does() {
        let up = real_apiserver();
        within(120, async {
            let sim = SimBuilder::new().start().await;
            // The same namespace and config map on both.
            let ns = format!("simneg-{}", unique_suffix());
            for server in [up.as_str(), sim.url.as_str()] {
                ensure_namespace(server, &ns).await;
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
                let r = send(Method::POST, &format!("{server}/api/v1/namespaces/{ns}/configmaps"), Some(cm)).await;
                assert_eq!(r.status, 201, "{server}: {}", r.text());
            }
            let cms = format!("/api/v1/namespaces/{ns}/configmaps");
            let reads = [
                format!("{cms}?resourceVersion=0"),
                format!("{cms}/a?resourceVersion=0"),
                format!("{cms}/nope"),
                format!("{cms}?resourceVersion=0&includeObject=None"),
                format!("{cms}?resourceVersion=0&includeObject=Bad"),
                format!("{cms}?labelSelector=a%3D%3Db%3D"),
            ];
            let refused = (406, "application/json".to_string(), indented("406: Not Acceptable", 406, "NotAcceptable", Some(json!({})))) ;
            let watch = format!("{cms}?watch=1&resourceVersion=0&timeoutSeconds=5");
            for accept in HEADERS {
                let asked_of_real = match sim_differs(accept) {
                    Some(Differs::AsFor(json)) => json,
                    Some(Differs::Refused) => {
                        for path in &reads {
                            assert_eq!(fetch(&format!("{}{path}", sim.url), accept).await, refused, "{path} {accept:?}");
                        }
                        assert_eq!(watch_head(&format!("{}{watch}", sim.url), accept).await.0, 406);
                        continue;
                    }
                    None => accept,
                };
                for path in &reads {
                    let real = fetch(&format!("{up}{path}"), asked_of_real).await;
                    let ours = fetch(&format!("{}{path}", sim.url), accept).await;
                    assert_agree(&format!("{path} {accept:?}"), &real, &ours);
                }
                let real = watch_head(&format!("{up}{watch}"), asked_of_real).await;
                let ours = watch_head(&format!("{}{watch}", sim.url), accept).await;
                assert_eq!(ours, real, "{watch} {accept:?}");
            }
            // A Table watch's first event, and a metadata-list watch that ends
            // at its first event without sending it, on both.
            let mut real = LineWatch::open(&format!("{up}{watch}"), TABLE).await;
            let mut ours = LineWatch::open(&format!("{}{watch}", sim.url), TABLE).await;
            let (r, o) = (parse("real", &real.line().await), parse("sim", &ours.line().await));
            assert_eq!((o["type"].as_str(), r["type"].as_str()), (Some("ADDED"), Some("ADDED")));
            assert_eq!(o["object"]["columnDefinitions"], r["object"]["columnDefinitions"]);
            assert_eq!(cells_but_age(&o["object"]), cells_but_age(&r["object"]));
            let real = watch_body(&format!("{up}{watch}"), META_LIST, Duration::from_secs(4)).await;
            let ours = watch_body(&format!("{}{watch}", sim.url), META_LIST, Duration::from_secs(4)).await;
            assert_eq!(real, (200, Some(String::new())));
            assert_eq!(ours, real);
        })
        .await;
    }
}
