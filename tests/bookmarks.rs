//! BOOKMARK objects through kubecache equal the real apiserver's for every
//! kind kubecache knows the empty object of, and for custom resources:
//! the same bytes but for the resourceVersion.
#![cfg(feature = "real-apiserver")]

mod common;

use common::*;
use http::Method;
use serde_json::{json, Value};
use std::time::Duration;

const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io/v1beta1";

/// (collection path, readyz resource, an object to create there).
fn kinds(ns: &str, sfx: &str) -> Vec<(String, String, Value)> {
    let meta = json!({"name": format!("bm-{sfx}")});
    let template = json!({"metadata": {"labels": {"a": "b"}},
                          "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let workload = json!({"selector": {"matchLabels": {"a": "b"}}, "template": template});
    let job_template =
        json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}});
    // (collection path, readyz resource) in the namespace or cluster-wide.
    let at = |scope: &str, group_version: &str, plural: &str| {
        let prefix = if group_version == "v1" {
            "/api"
        } else {
            "/apis"
        };
        (
            format!("{prefix}/{group_version}/{scope}{plural}"),
            format!("{group_version}/{plural}"),
        )
    };
    let in_ns_scope = format!("namespaces/{ns}/");
    let in_ns = |group_version: &str, plural: &str| at(&in_ns_scope, group_version, plural);
    let cluster = |group_version: &str, plural: &str| at("", group_version, plural);
    let hpa_spec = json!({"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 2});
    let mut statefulset = workload.clone();
    statefulset["serviceName"] = json!("s");
    [
        (in_ns("v1", "configmaps"), json!({"kind": "ConfigMap"})),
        (
            in_ns("v1", "pods"),
            json!({"kind": "Pod", "spec": template["spec"]}),
        ),
        (
            in_ns("v1", "services"),
            json!({"kind": "Service", "spec": {"ports": [{"port": 80}]}}),
        ),
        (in_ns("v1", "secrets"), json!({"kind": "Secret"})),
        (in_ns("v1", "serviceaccounts"), json!({"kind": "ServiceAccount"})),
        (in_ns("v1", "endpoints"), json!({"kind": "Endpoints"})),
        (
            in_ns("v1", "persistentvolumeclaims"),
            json!({"kind": "PersistentVolumeClaim", "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        (
            cluster("v1", "persistentvolumes"),
            json!({"kind": "PersistentVolume", "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp"}}}),
        ),
        (cluster("v1", "namespaces"), json!({"kind": "Namespace"})),
        (cluster("v1", "nodes"), json!({"kind": "Node"})),
        (
            in_ns("apps/v1", "deployments"),
            json!({"kind": "Deployment", "spec": workload}),
        ),
        (
            in_ns("apps/v1", "replicasets"),
            json!({"kind": "ReplicaSet", "spec": workload}),
        ),
        (
            in_ns("apps/v1", "statefulsets"),
            json!({"kind": "StatefulSet", "spec": statefulset}),
        ),
        (
            in_ns("apps/v1", "daemonsets"),
            json!({"kind": "DaemonSet", "spec": workload}),
        ),
        (
            in_ns("batch/v1", "jobs"),
            json!({"kind": "Job", "spec": {"template": job_template}}),
        ),
        (
            in_ns("batch/v1beta1", "cronjobs"),
            json!({"kind": "CronJob", "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": job_template}}}}),
        ),
        (
            in_ns("networking.k8s.io/v1", "ingresses"),
            json!({"kind": "Ingress", "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}),
        ),
        (
            cluster("storage.k8s.io/v1", "storageclasses"),
            json!({"kind": "StorageClass", "provisioner": "x"}),
        ),
        (
            in_ns("coordination.k8s.io/v1", "leases"),
            json!({"kind": "Lease"}),
        ),
        (
            in_ns("discovery.k8s.io/v1beta1", "endpointslices"),
            json!({"kind": "EndpointSlice", "addressType": "IPv4", "endpoints": []}),
        ),
        (
            cluster("rbac.authorization.k8s.io/v1", "clusterroles"),
            json!({"kind": "ClusterRole"}),
        ),
        (
            in_ns("rbac.authorization.k8s.io/v1", "roles"),
            json!({"kind": "Role"}),
        ),
        (
            in_ns("kubecache.test/v1", "markers"),
            json!({"kind": "Marker"}),
        ),
        (
            in_ns("autoscaling/v1", "horizontalpodautoscalers"),
            json!({"kind": "HorizontalPodAutoscaler", "spec": hpa_spec}),
        ),
        // Another object of the same resource, whose lists autoscaling/v1 lacks.
        (
            in_ns("autoscaling/v2beta2", "horizontalpodautoscalers"),
            json!({"kind": "HorizontalPodAutoscaler", "metadata": {"name": format!("bm2-{sfx}")}, "spec": hpa_spec}),
        ),
        (
            cluster("policy/v1beta1", "podsecuritypolicies"),
            json!({"kind": "PodSecurityPolicy", "spec": {"seLinux": {"rule": "RunAsAny"}, "runAsUser": {"rule": "RunAsAny"},
                "fsGroup": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"}}}),
        ),
        // Removed after the test: they take part in API priority and fairness.
        (
            cluster(FLOWCONTROL, "prioritylevelconfigurations"),
            json!({"kind": "PriorityLevelConfiguration", "spec": {"type": "Limited",
                "limited": {"assuredConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}),
        ),
        (
            cluster(FLOWCONTROL, "flowschemas"),
            json!({"kind": "FlowSchema", "spec": {"priorityLevelConfiguration": {"name": format!("bm-{sfx}")},
                "matchingPrecedence": 9999, "rules": [{"subjects": [{"kind": "User", "user": {"name": "kubecache-test-nobody"}}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/kubecache-test"]}]}]}}),
        ),
    ]
    .into_iter()
    .map(|((path, resource), mut obj)| {
        let group_version = resource.rsplit_once('/').unwrap().0.to_string();
        obj["apiVersion"] = json!(group_version);
        if obj.get("metadata").is_none() {
            obj["metadata"] = meta.clone();
        }
        (path, resource, obj)
    })
    .chain(std::iter::once({
        // A CRD of its own, never established here: only its event counts.
        let plural = format!("b{}", sfx.replace('-', ""));
        let (path, resource) = cluster("apiextensions.k8s.io/v1", "customresourcedefinitions");
        (path, resource, crd(&plural, "Bm", "Namespaced"))
    }))
    .collect()
}

/// The first BOOKMARK's object, its resourceVersion blanked.
async fn bookmark(url: String, what: String) -> Value {
    let mut w = WatchStream::open(&url).await;
    let mut seen = Vec::new();
    loop {
        let e = match w.next(Duration::from_secs(15)).await {
            WatchLine::Event(e) => e,
            WatchLine::End => panic!("{what}: the watch ended without a bookmark after {seen:?}"),
            WatchLine::Silent => panic!("{what}: silent for 15 s after {seen:?}"),
        };
        if e["type"] == "BOOKMARK" {
            let mut obj = e["object"].clone();
            obj["metadata"]["resourceVersion"] = json!("");
            return obj;
        }
        assert_ne!(e["type"], "ERROR", "{what}: {e}");
        seen.push(e["type"].clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_equal_the_real_apiservers() {
    within(120, bookmarks_through(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_through_two_kubecaches_equal_the_real_apiservers() {
    within(120, bookmarks_through(2)).await;
}

/// Through `hops` kubecaches, each in front of the one before it.
async fn bookmarks_through(hops: usize) {
    let up = real_apiserver();
    {
        establish(&up, crd("markers", "Marker", "Namespaced")).await;
        let chain = start_chain(&up, hops).await;
        let p = chain.front();
        let sfx = unique_suffix();
        let ns = format!("bookmarks-{sfx}");
        ensure_namespace(&up, &ns).await;
        let kinds = kinds(&ns, &sfx);
        for (path, resource, _) in &kinds {
            wait_chain_synced(&chain, path, resource).await;
        }
        let mut pending = Vec::new();
        for (path, resource, obj) in kinds {
            let rv = get(&format!("{up}{path}")).await.json()["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string();
            // v1.20 bookmarks a watcher only after an event newer than its
            // start, 2 s before its deadline: the event must be there by
            // then, on both sides, however slow the machine.
            let query =
                format!("watch=1&allowWatchBookmarks=true&timeoutSeconds=8&resourceVersion={rv}");
            let direct = tokio::spawn(bookmark(
                format!("{up}{path}?{query}"),
                format!("{resource} from the apiserver"),
            ));
            let cached = tokio::spawn(bookmark(
                format!("{}{path}?{query}", p.url),
                format!("{resource} through kubecache"),
            ));
            pending.push((path, resource, obj, direct, cached));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        for (path, _, obj, _, _) in &pending {
            let r = send(Method::POST, &format!("{up}{path}"), Some(obj.clone())).await;
            assert_eq!(r.status, 201, "{path}: {}", r.text());
        }
        let mut results = Vec::new();
        for (_, resource, _, direct, cached) in pending {
            results.push((resource, direct.await.unwrap(), cached.await.unwrap()));
        }
        for plural in ["flowschemas", "prioritylevelconfigurations"] {
            let url = format!("{up}/apis/{FLOWCONTROL}/{plural}/bm-{sfx}");
            send(Method::DELETE, &url, None).await;
        }
        for (resource, a, b) in results {
            assert_eq!(
                serde_json::to_string(&b).unwrap(),
                serde_json::to_string(&a).unwrap(),
                "{resource}"
            );
        }
    }
}
