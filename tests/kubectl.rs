//! The real kubectl (KUBECTL, installed by .ci/run into a venv) through
//! kubecache prints what it prints against the upstream itself.

#![cfg(feature = "real-apiserver")]

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_sees_the_same_cluster_through_kubecache() {
    let up = real_apiserver();
    let p = start_proxy(&up).await;
    wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
    let kc = p.url.clone();
    within(120, tokio::task::spawn_blocking(move || {
        let ns = format!("kubectl-{}", std::process::id() % 100000);
        let (ok, _, err) = kubectl(&kc, &["create", "namespace", &ns], None);
        assert!(ok, "{err}");
        for i in 0..5 {
            let cm = format!("{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"k{i}\",\"namespace\":\"{ns}\",\"labels\":{{\"n\":\"{i}\"}}}},\"data\":{{\"a\":\"b\"}}}}");
            let (ok, _, err) = kubectl(&kc, &["create", "-f", "-"], Some(&cm));
            assert!(ok, "{err}");
        }
        for args in [
            vec!["get", "configmaps", "-A", "-o", "json"],
            vec!["get", "configmaps", "-n", &ns, "-o", "json", "--chunk-size=2"],
            vec!["get", "configmaps", "-n", &ns, "-l", "n in (1,3)", "-o", "json"],
            vec!["get", "configmap", "k2", "-n", &ns, "-o", "json"],
            vec!["get", "namespaces", "-o", "name"],
            vec!["get", "configmaps", "-n", &ns, "--field-selector", "metadata.name=k4", "-o", "name"],
        ] {
            let (ok_a, a, err_a) = kubectl(&up, &args, None);
            let (ok_b, b, err_b) = kubectl(&kc, &args, None);
            assert!(ok_a && ok_b, "{args:?}: {err_a} / {err_b}");
            assert_eq!(a, b, "{args:?}");
            assert!(!b.is_empty());
        }
        let (ok, _, err) = kubectl(&kc, &["delete", "configmap", "k0", "-n", &ns], None);
        assert!(ok, "{err}");
        let (_, _, err) = kubectl(&kc, &["get", "configmap", "k0", "-n", &ns], None);
        assert!(err.contains("NotFound") || err.contains("not found"), "{err}");
    }))
    .await
    .unwrap();
}

/// Everyday kubectl against the simulator, through kubecache: short names,
/// several types at once, the `all` category, and a delete by label (the
/// collection's deletecollection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everyday_kubectl_against_the_simulator_finds_short_names_and_categories() {
    let sim = SimBuilder::new().start().await;
    let p = start_proxy(&sim.url).await;
    let kc = p.url.clone();
    within(120, tokio::task::spawn_blocking(move || {
        let names = |args: &[&str]| {
            let (ok, out, err) = kubectl(&kc, args, None);
            assert!(ok, "{args:?}: {err}");
            out
        };
        let many = names(&["get", "deploy,cm,ns,no", "-A", "-o", "name"]);
        for kind in ["deployment.apps/", "configmap/", "namespace/", "node/"] {
            assert!(many.contains(kind), "{kind}: {many}");
        }
        let all = names(&["get", "all", "-A", "-o", "name"]);
        assert!(all.contains("pod/") && all.contains("deployment.apps/"), "{all}");
        assert!(!all.contains("configmap/"), "configmaps are not in `all`: {all}");
        assert_eq!(names(&["get", "po", "-A", "-o", "name"]), names(&["get", "pods", "-A", "-o", "name"]));
        let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dc-x","namespace":"default","labels":{"dc":"kubectl"}}}"#;
        // Validated against the simulator's OpenAPI document.
        let (ok, _, err) = kubectl(&kc, &["create", "-f", "-"], Some(cm));
        assert!(ok, "{err}");
        // kubectl writes typed objects as protobuf, which the simulator
        // reads: they are created, and read back with what was written.
        for args in [
            vec!["create", "configmap", "dc-y", "-n", "default", "--from-literal=a=b"],
            vec!["create", "namespace", "dc-ns"],
            vec!["create", "secret", "generic", "dc-s", "-n", "default", "--from-literal=k=v"],
            vec!["create", "deployment", "dc-d", "-n", "default", "--image=nginx"],
        ] {
            let (ok, _, err) = kubectl(&kc, &args, None);
            assert!(ok, "{args:?}: {err}");
        }
        let get = |args: &[&str]| names(&[&["get"], args].concat());
        assert_eq!(get(&["cm", "dc-y", "-n", "default", "-o", "jsonpath={.data.a}"]), "b");
        assert_eq!(get(&["ns", "dc-ns", "-o", "name"]).trim(), "namespace/dc-ns");
        assert_eq!(get(&["secret", "dc-s", "-n", "default", "-o", "jsonpath={.data.k}"]), "dg==");
        let image = ["deploy", "dc-d", "-n", "default", "-o", "jsonpath={.spec.template.spec.containers[0].image}"];
        assert_eq!(get(&image), "nginx");
        let selector = get(&["deploy", "dc-d", "-n", "default", "-o", "jsonpath={.spec.selector.matchLabels.app}"]);
        assert_eq!(selector, "dc-d");
        // A pod's log: lines that say the simulator runs no containers.
        let pod = names(&["get", "pods", "-n", "default", "-o", "name"]);
        let pod = pod.lines().next().unwrap();
        let log = names(&["logs", "-n", "default", pod, "--tail=2"]);
        assert_eq!(log.lines().count(), 2, "{log}");
        assert!(log.contains("kubecache simulator: container"), "{log}");
        let deleted = names(&["delete", "cm", "-n", "default", "-l", "dc=kubectl"]);
        assert!(deleted.contains("dc-x"), "{deleted}");
        let (_, _, err) = kubectl(&kc, &["get", "cm", "dc-x", "-n", "default"], None);
        assert!(err.contains("NotFound") || err.contains("not found"), "{err}");
    }))
    .await
    .unwrap();
    // A body in neither JSON nor protobuf (YAML, which the apiserver also
    // reads): the simulator's 415, saying so by name.
    let r = send_bytes(
        http::Method::POST,
        &format!("{}/api/v1/namespaces/default/configmaps", p.url),
        Some("application/yaml"),
        bytes::Bytes::from_static(b"metadata: {name: dc-yaml}"),
    )
    .await;
    assert_eq!(r.status, 415, "{}", r.text());
    assert!(
        r.text()
            .contains("kubecache simulator reads JSON and protobuf request bodies only"),
        "{}",
        r.text()
    );
}

/// `kubectl explain` prints v1.20's descriptions from the simulator's
/// OpenAPI document, through kubecache, as the real apiserver's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explains_the_simulated_types_as_the_real_apiserver_does() {
    let up = real_apiserver();
    let sim = SimBuilder::new().start().await;
    let p = start_proxy(&sim.url).await;
    let kc = p.url.clone();
    within(
        120,
        tokio::task::spawn_blocking(move || {
            for what in ["pods", "deployment.spec.replicas", "configmaps"] {
                let (ok, simulated, err) = kubectl(&kc, &["explain", what], None);
                assert!(ok, "{what}: {err}");
                let (ok, real, err) = kubectl(&up, &["explain", what], None);
                assert!(ok, "{what}: {err}");
                assert_eq!(simulated, real, "{what}");
            }
            let (_, replicas, _) = kubectl(&kc, &["explain", "deployment.spec.replicas"], None);
            assert!(replicas.contains("Number of desired pods."), "{replicas}");
        }),
    )
    .await
    .unwrap();
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: NAME
  namespace: default
  labels:
    app: NAME
spec:
  replicas: 2
  selector:
    matchLabels:
      app: NAME
  template:
    metadata:
      labels:
        app: NAME
    spec:
      containers:
      - name: web
        image: nginx:1.19
";

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: NAME
  namespace: default
data:
  a: \"1\"
";

/// kubectl's `create -f` and `apply -f` with its default validation,
/// against the simulator through kubecache: manifests are validated
/// against the simulator's OpenAPI document (an unknown field is refused
/// before anything is sent, as against v1.20), and a second apply of a
/// changed manifest patches the object (kubectl's strategic merge patch,
/// with its last-applied-configuration annotation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_and_applies_validated_manifests_against_the_simulator() {
    let sim = SimBuilder::new().start().await;
    let p = start_proxy(&sim.url).await;
    let kc = p.url.clone();
    within(120, tokio::task::spawn_blocking(move || {
        let name = format!("oa-{}", std::process::id() % 100000);
        let deployment = DEPLOYMENT.replace("NAME", &name);
        let configmap = CONFIGMAP.replace("NAME", &name);
        let run = |args: &[&str], stdin: &str| {
            let (ok, out, err) = kubectl(&kc, args, Some(stdin));
            assert!(ok, "{args:?}: {err}");
            out
        };
        let get = |kind: &str| -> serde_json::Value {
            let (ok, out, err) = kubectl(&kc, &["get", kind, &name, "-n", "default", "-o", "json"], None);
            assert!(ok, "{err}");
            serde_json::from_str(&out).unwrap()
        };
        assert!(run(&["create", "-f", "-"], &configmap).contains("created"));
        assert!(run(&["apply", "-f", "-"], &deployment).contains("created"));
        let changed = deployment
            .replace("replicas: 2", "replicas: 3")
            .replace("nginx:1.19", "nginx:1.20")
            .replace("  labels:\n    app: NAME\n".replace("NAME", &name).as_str(), "");
        assert!(run(&["apply", "-f", "-"], &changed).contains("configured"));
        let d = get("deployment");
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.20");
        assert!(d["metadata"].get("labels").is_none(), "the label the manifest dropped is removed: {d}");
        let last: serde_json::Value = serde_json::from_str(
            d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(last["spec"]["replicas"], 3);
        // A configmap made by create (no annotation yet) applied twice.
        run(&["apply", "-f", "-"], &configmap);
        run(&["apply", "-f", "-"], &configmap.replace("\"1\"", "\"2\""));
        assert_eq!(get("configmap")["data"]["a"], "2");
        for verb in ["apply", "create"] {
            let bad = changed.replace("replicas: 3", "replicaz: 4");
            let (ok, _, err) = kubectl(&kc, &[verb, "-f", "-"], Some(&bad));
            assert!(!ok, "{verb}");
            assert!(
                err.contains("ValidationError(Deployment.spec): unknown field \"replicaz\" in io.k8s.api.apps.v1.DeploymentSpec"),
                "{verb}: {err}"
            );
        }
        assert_eq!(get("deployment")["spec"]["replicas"], 3);
    }))
    .await
    .unwrap();
}
