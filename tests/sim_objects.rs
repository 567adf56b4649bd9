//! The simulator's generated objects are as a cluster leaves them. They
//! carry the managed fields of the writes that made them, and — with the
//! `real-apiserver` feature — the same objects put through those writes on
//! a real v1.20 apiserver get the same managed fields: pods (the ReplicaSet
//! controller's create, the scheduler's binding, the kubelet's status),
//! namespaces (kubectl create), configmaps (Helm), deployments (Helm, then
//! the controller's annotation and status) and nodes (the kubelet's
//! registration, then kube-controller-manager's pod CIDR).

mod common;

use common::*;
use serde_json::Value;

/// Pods of every phase the simulator generates, two of each.
async fn pods_of_each_phase(sim: &SimServer) -> Vec<Value> {
    let list = get(&format!("{}/api/v1/pods", sim.url)).await.json();
    let mut seen = std::collections::HashMap::new();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let n = seen
                .entry(p["status"]["phase"].as_str().unwrap().to_string())
                .or_insert(0);
            *n += 1;
            *n <= 2
        })
        .cloned()
        .collect()
}

fn managers(pod: &Value) -> Vec<(String, String)> {
    pod["metadata"]["managedFields"]
        .as_array()
        .unwrap_or_else(|| panic!("no managedFields in {pod}"))
        .iter()
        .map(|m| {
            (
                m["manager"].as_str().unwrap().to_string(),
                m["fieldsV1"].to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn generated_pods_carry_the_controllers_and_the_kubelets_managed_fields() {
    let sim = SimBuilder::new().pods(60).start().await;
    let pods = pods_of_each_phase(&sim).await;
    assert_eq!(pods.len(), 8, "two pods of each of four phases");
    for pod in &pods {
        let meta = pod["metadata"].as_object().unwrap();
        assert_eq!(meta.keys().next_back().unwrap(), "managedFields");
        let names: Vec<String> = managers(pod).into_iter().map(|m| m.0).collect();
        assert_eq!(names, ["kube-controller-manager", "kubelet"]);
        let status = &pod["metadata"]["managedFields"][1];
        assert_eq!(status["operation"], "Update");
        assert_eq!(status["fieldsType"], "FieldsV1");
        assert!(status["fieldsV1"]["f:status"]["f:containerStatuses"].is_object());
    }
}

/// Every generated object of `path` from the simulator.
async fn all(sim: &SimServer, path: &str) -> Vec<Value> {
    let list = get(&format!("{}{path}", sim.url)).await.json();
    let items = list["items"].as_array().unwrap().clone();
    assert!(!items.is_empty(), "no {path}");
    items
}

#[tokio::test]
async fn every_generated_kind_carries_the_managed_fields_of_its_writers() {
    let sim = SimBuilder::new().start().await;
    let kinds: [(&str, &[&str]); 4] = [
        ("/api/v1/namespaces", &["kubectl-create"]),
        ("/api/v1/configmaps", &["helm"]),
        (
            "/apis/apps/v1/deployments",
            &["helm", "kube-controller-manager"],
        ),
        ("/api/v1/nodes", &["kubelet", "kube-controller-manager"]),
    ];
    for (path, writers) in kinds {
        for obj in all(&sim, path).await {
            let names: Vec<String> = managers(&obj).into_iter().map(|m| m.0).collect();
            assert_eq!(names, writers, "{path}: {}", obj["metadata"]["name"]);
            let meta = obj["metadata"].as_object().unwrap();
            assert_eq!(meta.keys().next_back().unwrap(), "managedFields");
            for m in obj["metadata"]["managedFields"].as_array().unwrap() {
                let f = &m["fieldsV1"];
                assert!(f.get("f:apiVersion").is_none() && f["f:metadata"].get("f:name").is_none());
            }
        }
    }
}

#[cfg(feature = "real-apiserver")]
#[tokio::test]
async fn generated_pods_have_the_managed_fields_the_real_apiserver_writes_for_them() {
    use http::Method;
    use kubecache_sim::generate::pod_as_the_controller_created_it;
    use serde_json::json;
    let sim = SimBuilder::new().pods(60).start().await;
    let up = real_apiserver();
    let ns = format!("managed-{}", unique_suffix());
    ensure_namespace(&up, &ns).await;
    for pod in pods_of_each_phase(&sim).await {
        let mut body = pod_as_the_controller_created_it(&pod);
        body["apiVersion"] = json!("v1");
        body["kind"] = json!("Pod");
        let pods = format!("{up}/api/v1/namespaces/{ns}/pods");
        let r = send(
            Method::POST,
            &format!("{pods}?fieldManager=kube-controller-manager"),
            Some(body),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        let name = r.json()["metadata"]["name"].as_str().unwrap().to_string();
        let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": pod["spec"]["nodeName"]}});
        let r = send(
            Method::POST,
            &format!("{pods}/{name}/binding"),
            Some(binding),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        // The kubelet writes its status, keeping the scheduler's condition.
        let mut live = get(&format!("{pods}/{name}")).await.json();
        let scheduled = live["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "PodScheduled")
            .unwrap()
            .clone();
        let mut status = pod["status"].clone();
        for c in status["conditions"].as_array_mut().unwrap() {
            if c["type"] == "PodScheduled" {
                *c = scheduled.clone();
            }
        }
        live["status"] = status;
        let r = send(
            Method::PUT,
            &format!("{pods}/{name}/status?fieldManager=kubelet"),
            Some(live),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(
            managers(&r.json()),
            managers(&pod),
            "{} ({})",
            pod["metadata"]["name"],
            pod["status"]["phase"]
        );
    }
}

#[cfg(feature = "real-apiserver")]
mod real {
    use super::*;
    use http::Method;
    use kubecache_sim::generate::{
        configmap_as_created, deployment_as_created, namespace_as_created, node_as_registered,
    };
    use serde_json::json;

    /// Managers in name order: a real write within the same second as the
    /// one before it sorts by name, not by when it came.
    fn sorted(mut m: Vec<(String, String)>) -> Vec<(String, String)> {
        m.sort();
        m
    }

    /// `body` created at `url` by `manager`; the object as created.
    async fn create(url: &str, manager: &str, mut body: Value, kind: &str, version: &str) -> Value {
        body["apiVersion"] = json!(version);
        body["kind"] = json!(kind);
        let r = send(
            Method::POST,
            &format!("{url}?fieldManager={manager}"),
            Some(body),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()
    }

    async fn put(url: &str, manager: &str, body: Value) -> Value {
        let r = send(
            Method::PUT,
            &format!("{url}?fieldManager={manager}"),
            Some(body),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    }

    #[tokio::test]
    async fn generated_namespaces_and_configmaps_have_the_real_apiservers_managed_fields() {
        let sim = SimBuilder::new().start().await;
        let up = real_apiserver();
        let suffix = unique_suffix();
        for (i, ns) in all(&sim, "/api/v1/namespaces").await.iter().enumerate() {
            let mut body = namespace_as_created(ns);
            body["metadata"]["name"] = json!(format!("sim-ns-{i}-{suffix}"));
            let real = create(
                &format!("{up}/api/v1/namespaces"),
                "kubectl-create",
                body,
                "Namespace",
                "v1",
            )
            .await;
            assert_eq!(
                managers(&real),
                managers(ns),
                "namespace {}",
                ns["metadata"]["name"]
            );
        }
        let target = format!("managed-cm-{suffix}");
        ensure_namespace(&up, &target).await;
        for cm in all(&sim, "/api/v1/configmaps").await.iter().take(6) {
            let url = format!("{up}/api/v1/namespaces/{target}/configmaps");
            let real = create(&url, "helm", configmap_as_created(cm), "ConfigMap", "v1").await;
            assert_eq!(
                managers(&real),
                managers(cm),
                "configmap {}",
                cm["metadata"]["name"]
            );
        }
    }

    #[tokio::test]
    async fn generated_deployments_have_the_real_apiservers_managed_fields() {
        let sim = SimBuilder::new().start().await;
        let up = real_apiserver();
        let target = format!("managed-deploy-{}", unique_suffix());
        ensure_namespace(&up, &target).await;
        for d in all(&sim, "/apis/apps/v1/deployments").await.iter().take(2) {
            let url = format!("{up}/apis/apps/v1/namespaces/{target}/deployments");
            let mut real = create(
                &url,
                "helm",
                deployment_as_created(d),
                "Deployment",
                "apps/v1",
            )
            .await;
            let one = format!("{url}/{}", d["metadata"]["name"].as_str().unwrap());
            // The controller notes the revision, then writes the status.
            real["metadata"]["annotations"] = d["metadata"]["annotations"].clone();
            let mut real = put(&one, "kube-controller-manager", real).await;
            real["status"] = d["status"].clone();
            let real = put(&format!("{one}/status"), "kube-controller-manager", real).await;
            assert_eq!(
                sorted(managers(&real)),
                sorted(managers(d)),
                "deployment {}",
                d["metadata"]["name"]
            );
        }
    }

    #[tokio::test]
    async fn generated_nodes_have_the_real_apiservers_managed_fields() {
        let sim = SimBuilder::new().start().await;
        let up = real_apiserver();
        let suffix = unique_suffix();
        for node in all(&sim, "/api/v1/nodes").await.iter().take(2) {
            let name = format!(
                "sim-{}-{suffix}",
                node["metadata"]["name"].as_str().unwrap()
            );
            let mut body = node_as_registered(node);
            body["metadata"]["name"] = json!(name);
            body.as_object_mut().unwrap().remove("status");
            // The kubelet registers the node, then writes its status.
            let url = format!("{up}/api/v1/nodes");
            let mut real = create(&url, "kubelet", body, "Node", "v1").await;
            let one = format!("{url}/{name}");
            real["status"] = node["status"].clone();
            put(&format!("{one}/status"), "kubelet", real).await;
            // kube-controller-manager's node IPAM and TTL controllers.
            let mut real = get(&one).await.json();
            real["spec"]["podCIDR"] = node["spec"]["podCIDR"].clone();
            real["spec"]["podCIDRs"] = node["spec"]["podCIDRs"].clone();
            real["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"] =
                node["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"].clone();
            let real = put(&one, "kube-controller-manager", real).await;
            let r = send(Method::DELETE, &one, None).await;
            assert_eq!(r.status, 200, "{}", r.text());
            assert_eq!(
                sorted(managers(&real)),
                sorted(managers(node)),
                "node {}",
                node["metadata"]["name"]
            );
        }
    }
}

/// The simulator's discovery entries are v1.20's for the same types, field
/// for field — short names, categories and verbs included — so that
/// kubectl's `get deploy,cm`, `get all` and `delete -l` work against the
/// demo as against a cluster.
#[cfg(feature = "real-apiserver")]
#[tokio::test]
async fn the_simulators_discovery_entries_are_the_real_apiservers() {
    within(60, async {
        let up = real_apiserver();
        let sim = SimBuilder::new().start().await;
        for gv in ["/api/v1", "/apis/apps/v1"] {
            let real = get(&format!("{up}{gv}")).await.json();
            let simulated = get(&format!("{}{gv}", sim.url)).await.json();
            let entries = simulated["resources"].as_array().unwrap();
            assert!(!entries.is_empty(), "{gv}");
            for entry in entries {
                let name = &entry["name"];
                let want = real["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["name"] == *name)
                    .unwrap_or_else(|| panic!("{gv}: the real apiserver has no {name}"));
                assert_eq!(entry, want, "{gv} {name}");
            }
            assert_eq!(simulated["groupVersion"], real["groupVersion"]);
        }
    })
    .await;
}
