//! The simulator's generated objects are as a cluster leaves them. Its pods
//! carry the managed fields of the writes that made them, and — with the
//! `real-apiserver` feature — the same pods put through those writes on a
//! real v1.20 apiserver (the ReplicaSet controller's create, the
//! scheduler's binding, the kubelet's status) get the same managed fields.

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

#[cfg(feature = "real-apiserver")]
#[tokio::test]
async fn generated_pods_have_the_managed_fields_the_real_apiserver_writes_for_them() {
    use http::Method;
    use kubecache::sim::generate::pod_as_the_controller_created_it;
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
