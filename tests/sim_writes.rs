//! Writes to the simulator answer as the apiserver's do: patches of the
//! three non-apply types (merge, JSON, strategic), updates with the
//! apiserver's rules (name and namespace checks, the resourceVersion
//! precondition, uid and creationTimestamp kept, status kept for types
//! with a status subresource, a deployment's generation bumped, a write
//! that changes nothing is no write), and kubectl's label, annotate and
//! patch through kubecache. With the `real-apiserver` feature, a battery
//! of patches and updates goes to the simulator and to a real v1.20
//! apiserver holding the same object, and both must answer the same.

mod common;

use bytes::Bytes;
use common::*;
use http::Method;
use serde_json::{json, Value};
use std::time::Duration;

const MERGE: &str = "application/merge-patch+json";
const JSON: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

async fn patch(url: &str, content_type: &str, body: &str) -> Resp {
    send_bytes(
        Method::PATCH,
        url,
        Some(content_type),
        Bytes::from(body.to_string()),
    )
    .await
}

fn rv(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().unwrap()
}

#[tokio::test]
async fn patches_of_each_type_change_a_simulated_object_and_are_watched() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let cms = format!("{}/api/v1/namespaces/default/configmaps", sim.url);
        let r = send(
            Method::POST,
            &cms,
            Some(json!({"metadata": {"name": "p", "labels": {"x": "1"}}, "data": {"a": "1"}})),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        let created = r.json();
        let mut watch =
            WatchStream::open(&format!("{cms}?watch=true&resourceVersion={}", rv(&created))).await;

        let r = patch(&format!("{cms}/p"), MERGE, r#"{"data":{"b":"2","a":null}}"#).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let merged = r.json();
        assert_eq!(merged["data"], json!({"b": "2"}));
        assert_eq!(merged["metadata"]["uid"], created["metadata"]["uid"]);
        let ev = watch.event(Duration::from_secs(5)).await;
        assert_eq!(ev["type"], "MODIFIED");
        assert_eq!(ev["object"], merged);

        let r = patch(
            &format!("{cms}/p"),
            JSON,
            r#"[{"op":"add","path":"/data/c","value":"3"},{"op":"test","path":"/data/b","value":"2"}]"#,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["data"], json!({"b": "2", "c": "3"}));
        assert_eq!(watch.event(Duration::from_secs(5)).await["object"], r.json());

        let r = patch(
            &format!("{cms}/p"),
            STRATEGIC,
            r#"{"metadata":{"labels":{"x":null,"y":"2"}}}"#,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let latest = r.json();
        assert_eq!(latest["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(watch.event(Duration::from_secs(5)).await["object"], latest);

        // A patch that changes nothing is no write: same version, no event.
        let r = patch(&format!("{cms}/p"), MERGE, r#"{"data":{"b":"2"}}"#).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(rv(&r.json()), rv(&latest));
        let r = patch(&format!("{cms}/p"), MERGE, r#"{"data":{"b":"3"}}"#).await;
        let ev = watch.event(Duration::from_secs(5)).await;
        assert_eq!(ev["object"], r.json(), "the no-op sent an event");

        // What does not apply changes nothing.
        let r = patch(
            &format!("{cms}/p"),
            JSON,
            r#"[{"op":"test","path":"/data/b","value":"nope"}]"#,
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text());
        let r = patch(&format!("{cms}/p"), "text/plain", "{}").await;
        assert_eq!(r.status, 415, "{}", r.text());
        let r = patch(&format!("{cms}/nope"), MERGE, "{}").await;
        assert_eq!(r.status, 404, "{}", r.text());
        assert_eq!(r.json()["message"], "configmaps \"nope\" not found");
    })
    .await;
}

#[tokio::test]
async fn an_update_keeps_what_the_apiserver_keeps() {
    within(60, async {
        let sim = SimBuilder::new().pods(5).start().await;
        let pods = format!("{}/api/v1/namespaces/default/pods", sim.url);
        let list = get(&pods).await.json();
        let pod = list["items"][0].clone();
        let name = pod["metadata"]["name"].as_str().unwrap().to_string();
        let url = format!("{pods}/{name}");

        // The body without uid, creationTimestamp or namespace, with a new
        // label and a status the main resource may not change.
        let mut body = pod.clone();
        let meta = body["metadata"].as_object_mut().unwrap();
        meta.remove("uid");
        meta.remove("namespace");
        meta.insert("creationTimestamp".into(), json!("2000-01-01T00:00:00Z"));
        body["metadata"]["labels"]["put"] = json!("yes");
        body["status"]["phase"] = json!("Failed");
        let r = send(Method::PUT, &url, Some(body.clone())).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let updated = r.json();
        assert_eq!(updated["metadata"]["uid"], pod["metadata"]["uid"]);
        assert_eq!(
            updated["metadata"]["creationTimestamp"],
            pod["metadata"]["creationTimestamp"]
        );
        assert_eq!(updated["metadata"]["namespace"], "default");
        assert_eq!(updated["metadata"]["labels"]["put"], "yes");
        assert_eq!(updated["status"], pod["status"]);
        assert_ne!(rv(&updated), rv(&pod));

        // The same again is no write; an old version is a conflict; the
        // name, namespace and uid must fit.
        body["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"].clone();
        let r = send(Method::PUT, &url, Some(body.clone())).await;
        assert_eq!(rv(&r.json()), rv(&updated));
        let mut stale = body.clone();
        stale["metadata"]["resourceVersion"] = pod["metadata"]["resourceVersion"].clone();
        stale["metadata"]["labels"]["put"] = json!("again");
        assert_eq!(send(Method::PUT, &url, Some(stale)).await.status, 409);
        let r = send(Method::PUT, &format!("{pods}/other"), Some(body.clone())).await;
        assert_eq!(r.status, 400);
        assert_eq!(
            r.json()["message"],
            format!("the name of the object ({name}) does not match the name on the URL (other)")
        );
        let mut elsewhere = body.clone();
        elsewhere["metadata"]["namespace"] = json!("kube-system");
        assert_eq!(send(Method::PUT, &url, Some(elsewhere)).await.status, 400);
        let mut other_uid = body.clone();
        other_uid["metadata"]["uid"] = json!("0000");
        let r = send(Method::PUT, &url, Some(other_uid)).await;
        assert_eq!(r.status, 409, "{}", r.text());
        assert!(r
            .text()
            .contains("Precondition failed: UID in precondition: 0000"));
        let r = patch(&url, MERGE, r#"{"metadata":{"uid":"0000"}}"#).await;
        assert_eq!(r.status, 422, "{}", r.text());
        assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.uid");

        // A deployment's generation follows its spec.
        let deps = format!("{}/apis/apps/v1/namespaces/team-02/deployments", sim.url);
        let dep = get(&format!("{deps}/web")).await.json();
        let generation = dep["metadata"]["generation"].as_i64().unwrap();
        let r = patch(&format!("{deps}/web"), MERGE, r#"{"spec":{"replicas":7}}"#).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["metadata"]["generation"], generation + 1);
        let r = patch(
            &format!("{deps}/web"),
            MERGE,
            r#"{"metadata":{"labels":{"l":"1"}}}"#,
        )
        .await;
        assert_eq!(r.json()["metadata"]["generation"], generation + 1);

        // A namespace's finalizers are written through /finalize only.
        let team = format!("{}/api/v1/namespaces/team-02", sim.url);
        let before = get(&team).await.json();
        let body = r#"{"spec":{"finalizers":[]},"metadata":{"labels":{"n":"1"}}}"#;
        let r = patch(&team, MERGE, body).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["spec"], before["spec"]);
        assert_eq!(r.json()["metadata"]["labels"]["n"], "1");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_label_annotate_and_patch_work_through_kubecache_in_front_of_the_simulator() {
    let sim = SimBuilder::new().pods(5).start().await;
    let p = start_proxy(&sim.url).await;
    let pods = format!("{}/api/v1/namespaces/default/pods", sim.url);
    let name = get(&pods).await.json()["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let pod = format!("pod/{name}");
    for args in [
        vec!["label", pod.as_str(), "grade=gold"],
        vec!["annotate", pod.as_str(), "note=hello"],
        vec![
            "patch",
            pod.as_str(),
            "-p",
            r#"{"spec":{"containers":[{"name":"app","image":"nginx:patched"}]}}"#,
        ],
        vec![
            "patch",
            pod.as_str(),
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/metadata/labels/json","value":"yes"}]"#,
        ],
        vec![
            "patch",
            pod.as_str(),
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"merge":"yes"}}}"#,
        ],
    ] {
        let mut full = vec!["-n", "default"];
        full.extend(args.iter().copied());
        let (ok, out, err) = kubectl(&p.url, &full, None);
        assert!(ok, "kubectl {args:?}: {out} {err}");
    }
    let got = get(&format!("{pods}/{name}")).await.json();
    let labels = &got["metadata"]["labels"];
    assert_eq!(
        (&labels["grade"], &labels["json"], &labels["merge"]),
        (&json!("gold"), &json!("yes"), &json!("yes"))
    );
    assert_eq!(got["metadata"]["annotations"]["note"], "hello");
    let containers = got["spec"]["containers"].as_array().unwrap();
    let app = containers.iter().find(|c| c["name"] == "app");
    assert_eq!(
        app.map(|c| &c["image"]),
        Some(&json!("nginx:patched")),
        "{containers:?}"
    );
    // kubecache's cache followed: the proxy answers the patched pod.
    let (ok, out, err) = kubectl(
        &p.url,
        &[
            "-n",
            "default",
            "get",
            &pod,
            "-o",
            "jsonpath={.metadata.labels.merge}",
        ],
        None,
    );
    assert!(ok, "{err}");
    assert_eq!(out, "yes");
}

#[cfg(feature = "real-apiserver")]
mod real {
    use super::*;

    /// The fields only the server that wrote an object decides.
    fn strip(mut obj: Value) -> Value {
        if let Some(meta) = obj["metadata"].as_object_mut() {
            for f in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "selfLink",
            ] {
                meta.remove(f);
            }
        }
        obj
    }

    /// The same object on the real apiserver and on the simulator: the
    /// real one's as it defaulted it; returns both URLs.
    async fn twin(sim: &str, real: &str, collection: &str, body: Value) -> (String, String) {
        let r = send(Method::POST, &format!("{real}{collection}"), Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let created = r.json();
        let name = created["metadata"]["name"].as_str().unwrap().to_string();
        let r = send(
            Method::POST,
            &format!("{sim}{collection}"),
            Some(strip(created)),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        (
            format!("{real}{collection}/{name}"),
            format!("{sim}{collection}/{name}"),
        )
    }

    enum Write {
        Patch(&'static str, &'static str),
        /// A PUT of the stored object changed by the function.
        Put(fn(&mut Value)),
    }

    async fn write(url: &str, w: &Write) -> Resp {
        match w {
            Write::Patch(ct, body) => patch(url, ct, body).await,
            Write::Put(change) => {
                let mut obj = get(url).await.json();
                change(&mut obj);
                send(Method::PUT, url, Some(obj)).await
            }
        }
    }

    /// What a write's answer must agree on: the status, the error as
    /// written, or the object without what only its server decides, and
    /// whether the write made a new version.
    async fn outcome(url: &str, w: &Write) -> (u16, Value, bool) {
        let before = get(url).await.json();
        let r = write(url, w).await;
        let body = r.json();
        if r.status != 200 {
            // The servers' uids differ; errors may quote them.
            let uid = before["metadata"]["uid"].as_str().unwrap();
            let text = body.to_string().replace(uid, "<uid>");
            return (
                r.status.as_u16(),
                serde_json::from_str(&text).unwrap(),
                false,
            );
        }
        let changed = rv(&body) != rv(&before);
        (200, strip(body), changed)
    }

    fn configmap(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"x": "1", "y": "2"},
                "finalizers": ["a.io/one", "a.io/two"]},
            "data": {"a": "1", "b": "2"}})
    }

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "w"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}]}]}})
    }

    fn deployment(name: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name},
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "uid": "u1"}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "app", "image": "nginx:1",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}]}],
                        "volumes": [{"name": "cfg", "emptyDir": {}}]}}}})
    }

    fn service(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name},
            "spec": {"selector": {"app": "w"},
                "ports": [{"name": "a", "port": 80, "targetPort": 80, "protocol": "TCP"}]}})
    }

    type Make = fn(&str) -> Value;

    fn cases() -> Vec<(&'static str, Make, &'static str, Write)> {
        use Write::*;
        let cm: Make = configmap;
        let po: Make = pod;
        let de: Make = deployment;
        let sv: Make = service;
        vec![
            (
                "merge: set and delete keys",
                cm,
                "configmaps",
                Patch(
                    MERGE,
                    r#"{"data":{"c":"3","a":null},"metadata":{"labels":{"x":null,"z":"9"}}}"#,
                ),
            ),
            (
                "merge: a null field",
                cm,
                "configmaps",
                Patch(MERGE, r#"{"data":null}"#),
            ),
            (
                "merge: a top-level array",
                cm,
                "configmaps",
                Patch(MERGE, "[1]"),
            ),
            (
                "merge: a scalar",
                cm,
                "configmaps",
                Patch(MERGE, r#""str""#),
            ),
            (
                "merge: not JSON",
                cm,
                "configmaps",
                Patch(MERGE, r#"{"data":"#),
            ),
            ("merge: null", cm, "configmaps", Patch(MERGE, "null")),
            (
                "merge: another name",
                cm,
                "configmaps",
                Patch(MERGE, r#"{"metadata":{"name":"other"}}"#),
            ),
            (
                "merge: another namespace",
                cm,
                "configmaps",
                Patch(MERGE, r#"{"metadata":{"namespace":"other"}}"#),
            ),
            (
                "merge: an old resourceVersion",
                cm,
                "configmaps",
                Patch(MERGE, r#"{"metadata":{"resourceVersion":"1"}}"#),
            ),
            (
                "merge: another uid",
                cm,
                "configmaps",
                Patch(
                    MERGE,
                    r#"{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"}}"#,
                ),
            ),
            (
                "merge: no change",
                cm,
                "configmaps",
                Patch(MERGE, r#"{"data":{"a":"1"}}"#),
            ),
            (
                "json: add, replace, remove, test",
                cm,
                "configmaps",
                Patch(
                    JSON,
                    r#"[{"op":"add","path":"/data/c","value":"3"},{"op":"replace","path":"/data/a","value":"x"},{"op":"remove","path":"/metadata/labels/x"},{"op":"test","path":"/data/b","value":"2"}]"#,
                ),
            ),
            (
                "json: a failed test",
                cm,
                "configmaps",
                Patch(JSON, r#"[{"op":"test","path":"/data/b","value":"nope"}]"#),
            ),
            (
                "json: remove a missing key",
                cm,
                "configmaps",
                Patch(JSON, r#"[{"op":"remove","path":"/data/nope"}]"#),
            ),
            (
                "json: not a list",
                cm,
                "configmaps",
                Patch(JSON, r#"{"op":"remove"}"#),
            ),
            (
                "json: an escaped key",
                cm,
                "configmaps",
                Patch(
                    JSON,
                    r#"[{"op":"add","path":"/metadata/labels/a.io~1k","value":"v"}]"#,
                ),
            ),
            (
                "json: move and copy",
                cm,
                "configmaps",
                Patch(
                    JSON,
                    r#"[{"op":"move","from":"/data/a","path":"/data/moved"},{"op":"copy","from":"/data/b","path":"/data/copied"}]"#,
                ),
            ),
            (
                "json: replace a missing key",
                cm,
                "configmaps",
                Patch(JSON, r#"[{"op":"replace","path":"/data/new","value":"n"}]"#),
            ),
            (
                "json: array indices",
                cm,
                "configmaps",
                Patch(
                    JSON,
                    r#"[{"op":"add","path":"/metadata/finalizers/-","value":"a.io/three"},{"op":"add","path":"/metadata/finalizers/0","value":"a.io/zero"},{"op":"remove","path":"/metadata/finalizers/-1"}]"#,
                ),
            ),
            (
                "json: an index past the end",
                cm,
                "configmaps",
                Patch(
                    JSON,
                    r#"[{"op":"add","path":"/metadata/finalizers/9","value":"x"}]"#,
                ),
            ),
            (
                "json: an operation that is not an object",
                cm,
                "configmaps",
                Patch(JSON, "[1]"),
            ),
            (
                "json: an unknown operation",
                cm,
                "configmaps",
                Patch(JSON, r#"[{"op":"frob","path":"/data"}]"#),
            ),
            (
                "json: test that a missing key is null",
                cm,
                "configmaps",
                Patch(JSON, r#"[{"op":"test","path":"/data/zzz","value":null}]"#),
            ),
            (
                "json: a missing parent",
                cm,
                "configmaps",
                Patch(JSON, r#"[{"op":"add","path":"/nope/x","value":1}]"#),
            ),
            ("json: not JSON", cm, "configmaps", Patch(JSON, "x")),
            ("json: empty", cm, "configmaps", Patch(JSON, "")),
            (
                "strategic: maps merge",
                cm,
                "configmaps",
                Patch(
                    STRATEGIC,
                    r#"{"metadata":{"labels":{"x":null,"z":"9"}},"data":{"c":"3"}}"#,
                ),
            ),
            (
                "strategic: replace a map",
                cm,
                "configmaps",
                Patch(
                    STRATEGIC,
                    r#"{"metadata":{"labels":{"$patch":"replace","only":"1"}}}"#,
                ),
            ),
            (
                "strategic: delete a map",
                cm,
                "configmaps",
                Patch(STRATEGIC, r#"{"metadata":{"labels":{"$patch":"delete"}}}"#),
            ),
            (
                "strategic: delete from a list of scalars",
                cm,
                "configmaps",
                Patch(
                    STRATEGIC,
                    r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.io/one"]}}"#,
                ),
            ),
            (
                "strategic: merge a list of scalars",
                cm,
                "configmaps",
                Patch(
                    STRATEGIC,
                    r#"{"metadata":{"finalizers":["a.io/three","a.io/one"]}}"#,
                ),
            ),
            (
                "strategic: order a list of scalars",
                cm,
                "configmaps",
                Patch(
                    STRATEGIC,
                    r#"{"metadata":{"$setElementOrder/finalizers":["a.io/two","a.io/three","a.io/one"],"finalizers":["a.io/three"]}}"#,
                ),
            ),
            (
                "strategic: an order that is not a list",
                cm,
                "configmaps",
                Patch(
                    STRATEGIC,
                    r#"{"metadata":{"$setElementOrder/finalizers":"x"}}"#,
                ),
            ),
            (
                "strategic: not an object",
                cm,
                "configmaps",
                Patch(STRATEGIC, "[1]"),
            ),
            (
                "strategic: an unknown directive",
                cm,
                "configmaps",
                Patch(STRATEGIC, r#"{"metadata":{"labels":{"$patch":"frob"}}}"#),
            ),
            (
                "strategic: delete the object",
                cm,
                "configmaps",
                Patch(STRATEGIC, r#"{"$patch":"delete"}"#),
            ),
            (
                "strategic: owner references by uid",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o2","uid":"u2"},{"apiVersion":"v1","kind":"ConfigMap","name":"o1-renamed","uid":"u1"}]}}"#,
                ),
            ),
            (
                "unsupported content type",
                cm,
                "configmaps",
                Patch("text/plain", "{}"),
            ),
            (
                "put: without uid and creationTimestamp",
                cm,
                "configmaps",
                Put(|o| {
                    let m = o["metadata"].as_object_mut().unwrap();
                    m.remove("uid");
                    m.remove("creationTimestamp");
                    o["data"]["put"] = json!("1");
                }),
            ),
            ("put: unchanged", cm, "configmaps", Put(|_| {})),
            (
                "put: another name",
                cm,
                "configmaps",
                Put(|o| o["metadata"]["name"] = json!("other")),
            ),
            (
                "put: another uid",
                cm,
                "configmaps",
                Put(|o| o["metadata"]["uid"] = json!("0000")),
            ),
            (
                "put: an old resourceVersion",
                cm,
                "configmaps",
                Put(|o| {
                    o["metadata"]["resourceVersion"] = json!("1");
                    o["data"]["put"] = json!("1");
                }),
            ),
            (
                "put: no namespace",
                cm,
                "configmaps",
                Put(|o| {
                    o["metadata"].as_object_mut().unwrap().remove("namespace");
                    o["data"]["put"] = json!("1");
                }),
            ),
            (
                "put: a pod's status is not the main resource's",
                po,
                "pods",
                Put(|o| {
                    o["status"]["phase"] = json!("Failed");
                    o["metadata"]["labels"]["put"] = json!("1");
                }),
            ),
            (
                "strategic: a container's image by name",
                po,
                "pods",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}"#,
                ),
            ),
            (
                "strategic: an item without its merge key",
                po,
                "pods",
                Patch(STRATEGIC, r#"{"spec":{"containers":[{"image":"x"}]}}"#),
            ),
            (
                "merge: labels and status",
                po,
                "pods",
                Patch(
                    MERGE,
                    r#"{"metadata":{"labels":{"new":"1"}},"status":{"phase":"Failed"}}"#,
                ),
            ),
            (
                "merge: a deployment's replicas",
                de,
                "deployments",
                Patch(MERGE, r#"{"spec":{"replicas":3}}"#),
            ),
            (
                "merge: a deployment's annotations",
                de,
                "deployments",
                Patch(MERGE, r#"{"metadata":{"annotations":{"a":"1"}}}"#),
            ),
            (
                "merge: a deployment's labels",
                de,
                "deployments",
                Patch(MERGE, r#"{"metadata":{"labels":{"l":"1"}}}"#),
            ),
            (
                "strategic: env merged and ordered as kubectl sends it",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"$setElementOrder/env":[{"name":"B"},{"name":"A"},{"name":"C"}],"name":"app","env":[{"name":"C","value":"3"}]}]}}}}"#,
                ),
            ),
            (
                "strategic: an env item deleted",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"A","$patch":"delete"}]}]}}}}"#,
                ),
            ),
            (
                "strategic: a port added by containerPort",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","ports":[{"containerPort":81,"name":"alt","protocol":"TCP"}]}]}}}}"#,
                ),
            ),
            (
                "strategic: a container added",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox:1","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}]}}}}"#,
                ),
            ),
            (
                "strategic: a volume added",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"template":{"spec":{"volumes":[{"name":"extra","emptyDir":{}}]}}}}"#,
                ),
            ),
            (
                "strategic: retainKeys",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}"#,
                ),
            ),
            (
                "strategic: retainKeys the patch does not keep to",
                de,
                "deployments",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"strategy":{"$retainKeys":["rollingUpdate"],"type":"Recreate"}}}"#,
                ),
            ),
            (
                "json: a deployment's replicas",
                de,
                "deployments",
                Patch(
                    JSON,
                    r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#,
                ),
            ),
            (
                "strategic: a service port added",
                sv,
                "services",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"ports":[{"name":"b","port":81,"targetPort":81,"protocol":"TCP"}]}}"#,
                ),
            ),
            (
                "strategic: a service port changed by port",
                sv,
                "services",
                Patch(
                    STRATEGIC,
                    r#"{"spec":{"ports":[{"port":80,"targetPort":8080}]}}"#,
                ),
            ),
        ]
    }

    #[tokio::test]
    async fn patches_and_updates_answer_as_the_real_apiservers() {
        within(240, async {
            let real = real_apiserver();
            let sim = SimBuilder::new().pods(0).start().await;
            let ns = format!("writes-{}", unique_suffix());
            ensure_namespace(&real, &ns).await;
            let mut failures = vec![];
            for (i, (what, make, resource, w)) in cases().into_iter().enumerate() {
                let group = if resource == "deployments" {
                    "/apis/apps/v1"
                } else {
                    "/api/v1"
                };
                let collection = format!("{group}/namespaces/{ns}/{resource}");
                let name = format!("w{i}");
                let (real_url, sim_url) = twin(&sim.url, &real, &collection, make(&name)).await;
                let want = outcome(&real_url, &w).await;
                let got = outcome(&sim_url, &w).await;
                if want != got {
                    failures.push(format!("{what}:\n  real: {want:?}\n  sim:  {got:?}"));
                }
            }
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        })
        .await;
    }

    #[tokio::test]
    async fn a_patch_of_a_missing_object_is_the_same_404() {
        let real = real_apiserver();
        let sim = SimBuilder::new().start().await;
        for ct in [MERGE, JSON, STRATEGIC] {
            let path = "/api/v1/namespaces/default/configmaps/no-such-object";
            let want = patch(&format!("{real}{path}"), ct, "{}").await;
            let got = patch(&format!("{}{path}", sim.url), ct, "{}").await;
            assert_eq!((want.status, want.json()), (got.status, got.json()), "{ct}");
        }
    }
}

/// deletecollection, as v1.20's registry does it: every object the
/// selectors match in the namespace deleted, one DELETED event each, and
/// the answer the list of them as they were.
#[tokio::test]
async fn a_delete_of_a_collection_removes_what_its_selectors_match_and_answers_the_list() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let base = format!("{}/api/v1/namespaces/default/configmaps", sim.url);
        for (name, keep) in [("dc-a", "no"), ("dc-b", "no"), ("dc-c", "yes")] {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"dc": "t", "keep": keep}}});
            assert_eq!(send(Method::POST, &base, Some(cm)).await.status, 201);
        }
        let rv = get(&format!("{base}?labelSelector=dc%3Dt")).await.json()["metadata"]
            ["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let mut watch = WatchStream::open(&format!("{base}?watch=1&resourceVersion={rv}")).await;
        let r = send(
            Method::DELETE,
            &format!("{base}?labelSelector=dc%3Dt,keep%3Dno"),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let answer = r.json();
        assert_eq!(answer["kind"], "ConfigMapList");
        let names: Vec<&str> = answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["dc-a", "dc-b"]);
        for want in ["dc-a", "dc-b"] {
            let ev = watch.event(Duration::from_secs(5)).await;
            assert_eq!(
                (
                    ev["type"].as_str(),
                    ev["object"]["metadata"]["name"].as_str()
                ),
                (Some("DELETED"), Some(want))
            );
        }
        let left = get(&format!("{base}?labelSelector=dc%3Dt")).await.json();
        assert_eq!(left["items"].as_array().unwrap().len(), 1);
        // A bad selector is the apiserver's 400, and deletes nothing.
        let bad = send(
            Method::DELETE,
            &format!("{base}?labelSelector=%3D%3D"),
            None,
        )
        .await;
        assert_eq!(bad.status, 400, "{}", bad.text());
        assert_eq!(get(&format!("{base}/dc-c")).await.status, 200);
    })
    .await;
}

/// A pod's log as the apiserver answers it (text, `tailLines`,
/// `timestamps`), its errors for a missing pod and an unknown container,
/// and what the simulator does not simulate said by name.
#[tokio::test]
async fn a_pods_log_is_simulated_and_what_is_not_simulated_says_so() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let pods = get(&format!("{}/api/v1/namespaces/default/pods", sim.url))
            .await
            .json();
        let pod = &pods["items"][0];
        let name = pod["metadata"]["name"].as_str().unwrap();
        let container = pod["spec"]["containers"][0]["name"].as_str().unwrap();
        let base = format!("{}/api/v1/namespaces/default/pods/{name}/log", sim.url);
        let (status, ct, text) = fetch(
            &format!("{base}?container={container}&tailLines=3&timestamps=true"),
            "*/*",
        )
        .await;
        assert_eq!((status, ct.as_str()), (200, "text/plain"), "{text}");
        assert_eq!(text.lines().count(), 3);
        assert!(
            text.lines()
                .all(|l| l.contains("Z kubecache simulator: container")),
            "{text}"
        );
        let r = get(&format!("{base}?container=nope")).await;
        assert_eq!(r.status, 400);
        assert_eq!(
            r.json()["message"],
            format!("container nope is not valid for pod {name}")
        );
        let r = get(&format!(
            "{}/api/v1/namespaces/default/pods/nope/log",
            sim.url
        ))
        .await;
        assert_eq!(
            (r.status.as_u16(), r.json()["message"].as_str()),
            (404, Some("pods \"nope\" not found"))
        );
        let r = get(&format!(
            "{}/api/v1/namespaces/default/pods/x/status",
            sim.url
        ))
        .await;
        assert_eq!(r.status, 404);
        assert!(
            r.json()["message"]
                .as_str()
                .unwrap()
                .starts_with("the kubecache simulator does not simulate"),
            "{}",
            r.text()
        );
    })
    .await;
}

/// A pod's log asked for without a container, of a pod with several and
/// init containers, and with one it does not have: the same errors from
/// the simulator as from a real v1.20 apiserver.
#[cfg(feature = "real-apiserver")]
#[tokio::test]
async fn a_pods_log_errors_are_the_real_apiservers() {
    within(60, async {
        let up = real_apiserver();
        let sim = SimBuilder::new().start().await;
        let name = format!("logs-{}", unique_suffix());
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "node-1",
                "initContainers": [{"name": "init", "image": "x"}],
                "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]}});
        for base in [&up, &sim.url] {
            let r = send(
                Method::POST,
                &format!("{base}/api/v1/namespaces/default/pods"),
                Some(pod.clone()),
            )
            .await;
            assert_eq!(r.status, 201, "{base}: {}", r.text());
        }
        for query in ["", "?container=nope"] {
            let path = format!("/api/v1/namespaces/default/pods/{name}/log{query}");
            let real = get(&format!("{up}{path}")).await;
            let simulated = get(&format!("{}{path}", sim.url)).await;
            assert_eq!(simulated.status, real.status, "{path}");
            assert_eq!(
                simulated.json()["message"],
                real.json()["message"],
                "{path}"
            );
        }
        let _ = send(
            Method::DELETE,
            &format!("{up}/api/v1/namespaces/default/pods/{name}"),
            None,
        )
        .await;
    })
    .await;
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A JSON object of a kind as kubectl writes it: in protobuf.
fn protobuf_body(api_version: &str, kind: &str, obj: &Value) -> Bytes {
    let json = serde_json::to_vec(obj).unwrap();
    Bytes::from(kubecache::encode::protobuf::object(api_version, kind, &json).unwrap())
}

/// Bodies no serializer of the apiserver reads as a configmap, and a
/// protobuf one that does not decode.
fn unreadable_configmaps() -> Vec<(&'static str, Bytes)> {
    let truncated = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x05\x0a\x09abc";
    vec![
        (PROTOBUF, Bytes::from_static(truncated)),
        (PROTOBUF, Bytes::from_static(b"garbage")),
        (PROTOBUF, Bytes::from_static(b"k8s\0\x0a\x0f")),
        (PROTOBUF, Bytes::from_static(&[b'{'; 40])),
    ]
}

#[tokio::test]
async fn protobuf_creates_and_updates_are_read_as_their_json_and_other_bodies_get_a_415() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let cms = format!("{}/api/v1/namespaces/default/configmaps", sim.url);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "pb", "labels": {"x": "1"}}, "data": {"a": "b"}});
        let r = send_bytes(Method::POST, &cms, Some(PROTOBUF), protobuf_body("v1", "ConfigMap", &cm)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let created = r.json();
        assert_eq!(created["data"], json!({"a": "b"}));
        assert_eq!(created["metadata"]["labels"], json!({"x": "1"}));
        assert!(created["metadata"]["creationTimestamp"].is_string());
        // An update in protobuf too, its resourceVersion the precondition.
        let mut changed = created.clone();
        changed["data"]["a"] = json!("c");
        let r = send_bytes(
            Method::PUT,
            &format!("{cms}/pb"),
            Some("application/vnd.kubernetes.protobuf; charset=binary"),
            protobuf_body("v1", "ConfigMap", &changed),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(get(&format!("{cms}/pb")).await.json()["data"], json!({"a": "c"}));
        // A secret and a namespace, as `kubectl create` sends them.
        let secret = json!({"kind": "Secret", "apiVersion": "v1",
            "metadata": {"name": "pb"}, "data": {"k": "dg=="}, "type": "Opaque"});
        let r = send_bytes(
            Method::POST,
            &format!("{}/api/v1/namespaces/default/secrets", sim.url),
            Some(PROTOBUF),
            protobuf_body("v1", "Secret", &secret),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!((&r.json()["data"], &r.json()["type"]), (&json!({"k": "dg=="}), &json!("Opaque")));
        let ns = json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "pb"}});
        let r = send_bytes(
            Method::POST,
            &format!("{}/api/v1/namespaces", sim.url),
            Some(PROTOBUF),
            protobuf_body("v1", "Namespace", &ns),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        // What does not decode is the apiserver's 400, in its words.
        let r = send_bytes(Method::POST, &cms, Some(PROTOBUF), unreadable_configmaps()[0].1.clone()).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(
            r.json()["message"],
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: unexpected EOF"
        );
        // YAML (which the apiserver reads) is the simulator's 415, by name.
        let r = send_bytes(Method::POST, &cms, Some("application/yaml"), Bytes::from_static(b"metadata: {name: y}")).await;
        assert_eq!(r.status, 415, "{}", r.text());
        let message = r.json()["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("the kubecache simulator reads JSON and protobuf request bodies only, not \"application/yaml\""),
            "{message}"
        );
    })
    .await;
}

/// Protobuf creates of a configmap and a secret store on the simulator
/// what they store on a real v1.20 apiserver, and protobuf bodies that do
/// not decode get its very errors.
#[cfg(feature = "real-apiserver")]
#[tokio::test]
async fn protobuf_writes_and_their_errors_are_the_real_apiservers() {
    within(60, async {
        let up = real_apiserver();
        let sim = SimBuilder::new().start().await;
        let name = format!("pb-{}", unique_suffix());
        let writes = [
            (
                "configmaps",
                "ConfigMap",
                json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": name, "labels": {"b": "2", "a": "1"}},
                "data": {"z": "1", "y": ""}, "binaryData": {"bin": "AAE="}}),
            ),
            (
                "secrets",
                "Secret",
                json!({"kind": "Secret", "apiVersion": "v1",
                "metadata": {"name": name, "annotations": {"n": "x"}},
                "data": {"k": "dg==", "e": ""}, "type": "Opaque"}),
            ),
        ];
        let strip = |mut v: Value| {
            let meta = v["metadata"].as_object_mut().unwrap();
            for k in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "selfLink",
            ] {
                meta.remove(k);
            }
            v
        };
        for (resource, kind, obj) in &writes {
            let mut answers = Vec::new();
            for base in [&up, &sim.url] {
                let url = format!("{base}/api/v1/namespaces/default/{resource}");
                let r = send_bytes(
                    Method::POST,
                    &url,
                    Some(PROTOBUF),
                    protobuf_body("v1", kind, obj),
                )
                .await;
                assert_eq!(r.status, 201, "{base} {resource}: {}", r.text());
                answers.push(strip(get(&format!("{url}/{name}")).await.json()));
                send(Method::DELETE, &format!("{url}/{name}"), None).await;
            }
            // Key order included: both write the Go struct's order.
            assert_eq!(answers[0].to_string(), answers[1].to_string(), "{resource}");
        }
        for (content_type, body) in unreadable_configmaps() {
            let mut answers = Vec::new();
            for base in [&up, &sim.url] {
                let url = format!("{base}/api/v1/namespaces/default/configmaps");
                let r = send_bytes(Method::POST, &url, Some(content_type), body.clone()).await;
                answers.push((r.status.as_u16(), r.json()["message"].clone()));
            }
            assert_eq!(answers[0], answers[1], "{body:?}");
        }
    })
    .await;
}
