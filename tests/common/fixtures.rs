//! Realistic objects of every built-in type on the real apiserver (pods
//! in every phase, with restarts, init containers, deletion timestamps;
//! services of every type; autoscalers of every version; cluster-scoped
//! objects named after the run), for tests that compare kubecache's
//! representations with the apiserver's.

use super::*;
use http::Method;
use serde_json::{json, Value};
use std::time::Duration;

pub async fn create(up: &str, path: &str, obj: Value) -> Value {
    // A custom resource's endpoint can 404 for a moment after its CRD is
    // made or changed, while the apiserver swaps its handler in.
    for _ in 0..150 {
        let r = send(Method::POST, &format!("{up}{path}"), Some(obj.clone())).await;
        if r.status == 404 && r.text().starts_with("404 page not found") {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        assert_eq!(r.status, 201, "{path}: {}", r.text());
        return r.json();
    }
    panic!("{path} stayed 404");
}

/// Creates an object, then writes its status through the status subresource.
pub async fn create_with_status(up: &str, path: &str, mut obj: Value) -> Value {
    let status = obj.as_object_mut().unwrap().remove("status");
    let created = create(up, path, obj).await;
    let Some(status) = status else { return created };
    let name = created["metadata"]["name"].as_str().unwrap();
    let mut o = created.clone();
    o["status"] = status;
    let r = send(Method::PUT, &format!("{up}{path}/{name}/status"), Some(o)).await;
    assert_eq!(r.status, 200, "{path}/{name}/status: {}", r.text());
    r.json()
}

pub fn pod(name: &str, spec: Value, status: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web", "tier": name}},
        "spec": spec, "status": status})
}

pub fn containers(names: &[&str]) -> Value {
    Value::Array(
        names
            .iter()
            .map(|n| json!({"name": n, "image": format!("registry.example/{n}:1.0")}))
            .collect(),
    )
}

pub fn cstatus(name: &str, ready: bool, restarts: i64, state: Value) -> Value {
    json!({"name": name, "ready": ready, "restartCount": restarts, "state": state,
        "image": "registry.example/x:1.0", "imageID": "", "started": ready})
}

/// Pods in the states printers.go tells apart.
pub async fn make_pods(up: &str, ns: &str) {
    let path = format!("/api/v1/namespaces/{ns}/pods");
    let t = "2026-01-01T00:00:00Z";
    let two = containers(&["app", "sidecar"]);
    let pods = [
        pod(
            "running",
            json!({"containers": two, "nodeName": "node-1"}),
            json!({
            "phase": "Running", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}], "hostIP": "192.168.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                cstatus("app", true, 3, json!({"running": {"startedAt": t}})),
                cstatus("sidecar", true, 0, json!({"running": {"startedAt": t}}))]}),
        ),
        pod(
            "crashing",
            json!({"containers": two, "nodeName": "node-2"}),
            json!({
            "phase": "Running", "podIPs": [{"ip": "10.1.0.6"}],
            "containerStatuses": [
                cstatus("app", false, 12, json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}})),
                cstatus("sidecar", true, 0, json!({"running": {"startedAt": t}}))]}),
        ),
        pod(
            "initializing",
            json!({"containers": containers(&["app"]),
                "initContainers": containers(&["migrate", "warm"]), "nodeName": "node-1"}),
            json!({
            "phase": "Pending",
            "initContainerStatuses": [
                cstatus("migrate", false, 1, json!({"terminated": {"exitCode": 0, "reason": "Completed"}})),
                cstatus("warm", false, 0, json!({"running": {"startedAt": t}}))],
            "containerStatuses": [cstatus("app", false, 0, json!({"waiting": {"reason": "PodInitializing"}}))]}),
        ),
        pod(
            "init-failed",
            json!({"containers": containers(&["app"]), "initContainers": containers(&["migrate"])}),
            json!({
            "phase": "Pending",
            "initContainerStatuses": [cstatus("migrate", false, 4, json!({"terminated": {"exitCode": 2}}))]}),
        ),
        pod(
            "completed",
            json!({"containers": containers(&["job"]), "restartPolicy": "Never"}),
            json!({
            "phase": "Succeeded",
            "containerStatuses": [cstatus("job", false, 0, json!({"terminated": {"exitCode": 0, "reason": "Completed"}}))]}),
        ),
        pod(
            "evicted",
            json!({"containers": containers(&["app"])}),
            json!({
            "phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}),
        ),
        pod(
            "oom",
            json!({"containers": containers(&["app"])}),
            json!({
            "phase": "Running",
            "containerStatuses": [cstatus("app", false, 1, json!({"terminated": {"exitCode": 137, "signal": 9}}))]}),
        ),
        pod(
            "gated",
            json!({"containers": containers(&["app"]),
                "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]}),
            json!({
            "phase": "Running", "nominatedNodeName": "node-3",
            "conditions": [{"type": "example.com/lb", "status": "True"}, {"type": "example.com/dns", "status": "False"}]}),
        ),
        pod(
            "pending",
            json!({"containers": containers(&["app"])}),
            json!({"phase": "Pending"}),
        ),
    ];
    for p in pods {
        create_with_status(up, &path, p).await;
    }
    // Deleting a pod with a finalizer leaves it terminating.
    let mut doomed = pod(
        "terminating",
        json!({"containers": containers(&["app"])}),
        json!({"phase": "Running"}),
    );
    doomed["metadata"]["finalizers"] = json!(["kubecache.test/hold"]);
    create_with_status(up, &path, doomed).await;
    let r = send(Method::DELETE, &format!("{up}{path}/terminating"), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// A new namespace holding the pods and the other namespaced fixtures:
/// (the run's suffix, the namespace).
pub async fn namespace_with_fixtures(up: &str, prefix: &str) -> (String, String) {
    let sfx = unique_suffix();
    let ns = format!("{prefix}-{sfx}");
    ensure_namespace(up, &ns).await;
    make_pods(up, &ns).await;
    make_namespaced(up, &ns).await;
    (sfx, ns)
}

/// Releases the finalizers the fixtures set, so namespaces can go.
pub async fn release(up: &str, ns: &str) {
    let path = format!("{up}/api/v1/namespaces/{ns}/pods/terminating");
    let mut p = get(&path).await.json();
    p["metadata"]["finalizers"] = json!([]);
    send(Method::PUT, &path, Some(p)).await;
}

/// One realistic object or more of each namespaced type besides pods.
pub async fn make_namespaced(up: &str, ns: &str) {
    let core = |r: &str| format!("/api/v1/namespaces/{ns}/{r}");
    let grp = |g: &str, v: &str, r: &str| format!("/apis/{g}/{v}/namespaces/{ns}/{r}");
    create(up, &core("configmaps"), json!({"metadata": {"name": "settings"}, "data": {"a": "1", "b": "<2>"}, "binaryData": {"c": "AA=="}})).await;
    create(up, &core("secrets"), json!({"metadata": {"name": "creds"}, "type": "kubernetes.io/basic-auth", "data": {"username": "YQ==", "password": "Yg=="}})).await;
    create(
        up,
        &core("serviceaccounts"),
        json!({"metadata": {"name": "robot"}, "secrets": [{"name": "robot-token"}]}),
    )
    .await;
    let svc = core("services");
    create(up, &svc, json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}, {"name": "https", "port": 443, "protocol": "TCP"}]}})).await;
    create(up, &svc, json!({"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}})).await;
    create(up, &svc, json!({"metadata": {"name": "nodeport"}, "spec": {"type": "NodePort", "externalIPs": ["203.0.113.7"], "ports": [{"port": 53, "protocol": "UDP"}]}})).await;
    create_with_status(up, &svc, json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "198.51.100.4"}, {"hostname": "lb.example.com"}]}}})).await;
    create(up, &svc, json!({"metadata": {"name": "lb-pending"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})).await;
    create(up, &svc, json!({"metadata": {"name": "external"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}})).await;
    create(up, &core("endpoints"), json!({"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "10.1.0.5"}, {"ip": "10.1.0.6"}, {"ip": "10.1.0.7"}, {"ip": "10.1.0.8"}], "ports": [{"name": "http", "port": 8080}]}]})).await;
    create(
        up,
        &core("endpoints"),
        json!({"metadata": {"name": "empty"}}),
    )
    .await;
    create(up, &grp("discovery.k8s.io", "v1beta1", "endpointslices"), json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true}}, {"addresses": ["10.1.0.6"]}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})).await;
    create(up, &core("events"), json!({"metadata": {"name": "running.1"}, "involvedObject": {"kind": "Pod", "namespace": ns, "name": "running", "fieldPath": "spec.containers{app}"},
        "reason": "BackOff", "message": "Back-off restarting failed container", "type": "Warning", "count": 7,
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:05:00Z"})).await;
    create(up, &grp("events.k8s.io", "v1", "events"), json!({"metadata": {"name": "web.2"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "kubecache.test/controller", "reportingInstance": "controller-1", "action": "Scale",
        "reason": "ScalingReplicaSet", "note": "Scaled up to 3", "type": "Normal",
        "regarding": {"kind": "Deployment", "namespace": ns, "name": "web"}})).await;
    let tmpl = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers(&["app", "sidecar"])}});
    let sel = json!({"matchLabels": {"app": "web"}});
    create_with_status(up, &grp("apps", "v1", "deployments"), json!({"metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": sel, "template": tmpl},
        "status": {"replicas": 3, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}})).await;
    create_with_status(up, &grp("apps", "v1", "replicasets"), json!({"metadata": {"name": "web-5d4f"}, "spec": {"replicas": 3, "selector": sel, "template": tmpl},
        "status": {"replicas": 2, "readyReplicas": 1}})).await;
    create_with_status(up, &grp("apps", "v1", "statefulsets"), json!({"metadata": {"name": "db"}, "spec": {"replicas": 2, "serviceName": "headless", "selector": sel, "template": tmpl},
        "status": {"replicas": 2, "readyReplicas": 1}})).await;
    let mut ds_tmpl = tmpl.clone();
    ds_tmpl["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    create_with_status(up, &grp("apps", "v1", "daemonsets"), json!({"metadata": {"name": "agent"}, "spec": {"selector": sel, "template": ds_tmpl},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2, "numberMisscheduled": 0}})).await;
    let job_tmpl = json!({"spec": {"restartPolicy": "Never", "containers": containers(&["job"])}});
    create_with_status(up, &grp("batch", "v1", "jobs"), json!({"metadata": {"name": "done"}, "spec": {"completions": 2, "template": job_tmpl},
        "status": {"succeeded": 2, "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:03:20Z"}})).await;
    create_with_status(
        up,
        &grp("batch", "v1", "jobs"),
        json!({"metadata": {"name": "running"}, "spec": {"parallelism": 2, "template": job_tmpl},
        "status": {"active": 1, "startTime": "2026-01-01T00:00:00Z"}}),
    )
    .await;
    create_with_status(up, &grp("batch", "v1beta1", "cronjobs"), json!({"metadata": {"name": "nightly"}, "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": job_tmpl}}},
        "status": {"lastScheduleTime": "2026-01-01T03:00:00Z"}})).await;
    create(up, &grp("batch", "v1beta1", "cronjobs"), json!({"metadata": {"name": "paused"}, "spec": {"schedule": "*/5 * * * *", "suspend": true, "jobTemplate": {"spec": {"template": job_tmpl}}}})).await;
    create_with_status(up, &grp("networking.k8s.io", "v1", "ingresses"), json!({"metadata": {"name": "web"}, "spec": {"ingressClassName": "nginx",
        "tls": [{"hosts": ["web.example.com"]}],
        "rules": [{"host": "web.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}},
                  {"host": "api.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "198.51.100.9"}]}}})).await;
    create_with_status(up, &core("persistentvolumeclaims"), json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "storageClassName": "fast",
        "resources": {"requests": {"storage": "10Gi"}}, "volumeName": "pv-data"},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}})).await;
    create(up, &core("persistentvolumeclaims"), json!({"metadata": {"name": "waiting"}, "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "resources": {"requests": {"storage": "1Gi"}}}})).await;
    create(up, &grp("coordination.k8s.io", "v1", "leases"), json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "controller-1", "leaseDurationSeconds": 15}})).await;
    create(up, &grp("rbac.authorization.k8s.io", "v1", "rolebindings"), json!({"metadata": {"name": "readers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "name": "robot", "namespace": ns}]})).await;
    create(up, &grp("networking.k8s.io", "v1", "networkpolicies"), json!({"metadata": {"name": "deny"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}}})).await;
    create(
        up,
        &grp("policy", "v1beta1", "poddisruptionbudgets"),
        json!({"metadata": {"name": "web"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}}),
    )
    .await;
    create(
        up,
        &core("podtemplates"),
        json!({"metadata": {"name": "tmpl"}, "template": tmpl}),
    )
    .await;
    create_with_status(up, &core("resourcequotas"), json!({"metadata": {"name": "quota"},
        "spec": {"hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "4Gi"}},
        "status": {"hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "4Gi"}, "used": {"pods": "3", "requests.cpu": "500m"}}})).await;
    create(up, &grp("apps", "v1", "controllerrevisions"), json!({"metadata": {"name": "db-7f9",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "00000000-0000-0000-0000-000000000001", "controller": true}]},
        "revision": 3, "data": {"spec": {}}})).await;
    create(up, &grp("rbac.authorization.k8s.io", "v1", "roles"), json!({"metadata": {"name": "reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})).await;
    make_hpas(up, ns).await;
}

/// Autoscalers through v1 and v2beta2, with every metric source the
/// apiserver takes and current metrics: stored as autoscaling/v1, whose
/// annotations carry what v1 has no fields for, and printed from the
/// internal object in every version.
pub async fn make_hpas(up: &str, ns: &str) {
    let v1 = format!("/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers");
    let v2 = format!("/apis/autoscaling/v2beta2/namespaces/{ns}/horizontalpodautoscalers");
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    create_with_status(up, &v1, json!({"metadata": {"name": "cpu"},
        "spec": {"scaleTargetRef": target, "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
        "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 30}})).await;
    create(up, &v1, json!({"metadata": {"name": "default"}, "spec": {"scaleTargetRef": {"kind": "ReplicaSet", "name": "rs"}, "maxReplicas": 3}})).await;
    // Annotations of its own stay in the rows' metadata; v1's go.
    create(up, &v1, json!({"metadata": {"name": "annotated", "annotations": {"team": "<web>",
            "autoscaling.alpha.kubernetes.io/metrics": "[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"qps\",\"targetAverageValue\":\"1500m\"}}]"}},
        "spec": {"scaleTargetRef": target, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70}})).await;
    let cpu = |util: i64| json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": util}}});
    // The CPU target moves behind the others through v1 storage; the
    // current metrics keep their order.
    create_with_status(up, &v2, json!({"metadata": {"name": "resources"}, "spec": {"scaleTargetRef": target, "minReplicas": 1, "maxReplicas": 4, "metrics": [
            cpu(60), {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}]},
        "status": {"currentReplicas": 3, "desiredReplicas": 3, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 20, "averageValue": "100m"}}},
            {"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "60Mi"}}}]}})).await;
    create_with_status(up, &v2, json!({"metadata": {"name": "external"}, "spec": {"scaleTargetRef": target, "maxReplicas": 4, "metrics": [
            {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}}, "target": {"type": "Value", "value": "30"}}},
            {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "2"}}}]},
        "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentMetrics": [
            {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"averageValue": "1"}}},
            {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"value": "3", "averageValue": "1500m"}}}]}})).await;
    create_with_status(up, &v2, json!({"metadata": {"name": "object"}, "spec": {"scaleTargetRef": target, "maxReplicas": 4, "metrics": [
            {"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"}, "metric": {"name": "hits"}, "target": {"type": "Value", "value": "10k"}}},
            {"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"}, "metric": {"name": "hits"}, "target": {"type": "AverageValue", "averageValue": "500m"}}}]},
        "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": [
            {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "web"}, "metric": {"name": "hits"}, "current": {"value": "7"}}},
            {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "web"}, "metric": {"name": "hits"}, "current": {"value": "1", "averageValue": "250m"}}}]}})).await;
    // Three metrics ("+ 1 more..."), a behavior (another v1 annotation),
    // and a status whose first metric is of another source.
    create_with_status(up, &v2, json!({"metadata": {"name": "many"}, "spec": {"scaleTargetRef": target, "maxReplicas": 9, "metrics": [
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 70}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "200m"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}]}}},
        "status": {"currentReplicas": 4, "desiredReplicas": 5, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "memory", "current": {"averageUtilization": 65, "averageValue": "1Gi"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})).await;
}

/// Cluster-scoped objects, named after the run so runs do not collide.
pub async fn make_cluster_scoped(up: &str, sfx: &str, ns: &str) {
    create_with_status(up, "/api/v1/nodes", json!({"metadata": {"name": format!("node-{sfx}"),
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "infra"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "KubeletReady", "message": "ready"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}, {"type": "ExternalIP", "address": "203.0.113.10"}],
            "nodeInfo": {"kubeletVersion": "v1.20.2", "osImage": "Debian GNU/Linux 12", "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.6.0",
                "machineID": "", "systemUUID": "", "bootID": "", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}}})).await;
    create(up, "/api/v1/persistentvolumes", json!({"metadata": {"name": format!("pv-{sfx}")},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "fast", "hostPath": {"path": "/data"}, "claimRef": {"namespace": ns, "name": "data"}}})).await;
    create(up, "/apis/storage.k8s.io/v1/storageclasses", json!({"metadata": {"name": format!("fast-{sfx}"),
            "annotations": {"storageclass.kubernetes.io/is-default-class": "false"}},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true})).await;
    let name = |prefix: &str| json!({"name": format!("{prefix}-{sfx}")});
    create(
        up,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({"metadata": name("batch"), "value": -5, "description": "x"}),
    )
    .await;
    create(
        up,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({"metadata": name("urgent"), "value": 1000000, "preemptionPolicy": "Never"}),
    )
    .await;
    create(
        up,
        "/apis/node.k8s.io/v1/runtimeclasses",
        json!({"metadata": name("kata"), "handler": "kata-x"}),
    )
    .await;
    create(up, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json!({"metadata": name("viewers"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "Group", "name": "devs"}, {"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "robot", "namespace": ns}]})).await;
    // Webhooks that match no request, and would let it through if they did.
    let webhook = |n: &str| {
        json!({"name": format!("{n}.kubecache.test"), "clientConfig": {"url": "https://127.0.0.1:1/never"},
        "rules": [{"apiGroups": ["kubecache.invalid"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["nothing"]}],
        "failurePolicy": "Ignore", "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 1})
    };
    let admission = "/apis/admissionregistration.k8s.io/v1";
    create(
        up,
        &format!("{admission}/mutatingwebhookconfigurations"),
        json!({"metadata": name("mutate"), "webhooks": [webhook("a"), webhook("b")]}),
    )
    .await;
    create(
        up,
        &format!("{admission}/validatingwebhookconfigurations"),
        json!({"metadata": name("validate"), "webhooks": [webhook("c")]}),
    )
    .await;
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let csr = |prefix: &str| json!({"metadata": name(prefix), "spec": {"request": CSR, "signerName": "kubecache.test/signer", "usages": ["client auth"]}});
    create(up, csrs, csr("pending")).await;
    // Approved, then issued: "Approved,Issued".
    let issued = create(up, csrs, csr("issued")).await;
    let url = format!("{up}{csrs}/issued-{sfx}");
    let mut o = issued;
    o["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]});
    let r = send(Method::PUT, &format!("{url}/approval"), Some(o)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut o = r.json();
    o["status"]["certificate"] = json!(CERTIFICATE);
    let r = send(Method::PUT, &format!("{url}/status"), Some(o)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    create(up, "/apis/policy/v1beta1/podsecuritypolicies", json!({"metadata": name("restricted"), "spec": {
        "seLinux": {"rule": "RunAsAny"}, "runAsUser": {"rule": "MustRunAsNonRoot"}, "supplementalGroups": {"rule": "RunAsAny"},
        "fsGroup": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]}, "readOnlyRootFilesystem": true,
        "volumes": ["configMap", "secret"], "allowedCapabilities": ["NET_ADMIN", "SYS_TIME"]}})).await;
    create(up, "/apis/policy/v1beta1/podsecuritypolicies", json!({"metadata": name("privileged"), "spec": {"privileged": true,
        "seLinux": {"rule": "RunAsAny"}, "runAsUser": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"},
        "fsGroup": {"rule": "RunAsAny"}, "volumes": ["*"]}})).await;
    // Flow control objects that no request matches; one schema names a
    // priority level that does not exist, which the apiserver marks.
    let fc = "/apis/flowcontrol.apiserver.k8s.io/v1beta1";
    create(up, &format!("{fc}/prioritylevelconfigurations"), json!({"metadata": name("queued"), "spec": {"type": "Limited",
        "limited": {"assuredConcurrencyShares": 1, "limitResponse": {"type": "Queue", "queuing": {"queues": 7, "handSize": 2}}}}})).await;
    create(
        up,
        &format!("{fc}/prioritylevelconfigurations"),
        json!({"metadata": name("reject"), "spec": {"type": "Limited",
        "limited": {"assuredConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}),
    )
    .await;
    let rules = json!([{"subjects": [{"kind": "User", "user": {"name": "kubecache-test-nobody"}}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/kubecache-test"]}]}]);
    create(
        up,
        &format!("{fc}/flowschemas"),
        json!({"metadata": name("dangling"), "spec": {
        "priorityLevelConfiguration": {"name": format!("missing-{sfx}")}, "rules": rules}}),
    )
    .await;
    create(
        up,
        &format!("{fc}/flowschemas"),
        json!({"metadata": name("queued"), "spec": {
        "priorityLevelConfiguration": {"name": format!("queued-{sfx}")}, "matchingPrecedence": 9500,
        "distinguisherMethod": {"type": "ByNamespace"}, "rules": rules}}),
    )
    .await;
    // A CRD whose schema holds each form of the JSONSchemaPropsOr… unions
    // the apiserver admits: `items` a schema, `additionalProperties` a
    // schema, true and false. v1beta1, which needs no structural schema.
    let props = json!({"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "open": {"type": "object", "additionalProperties": true},
        "closed": {"type": "object", "additionalProperties": false}}});
    let plural = unions_plural(sfx);
    create(
        up,
        "/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions",
        json!({
        "metadata": {"name": format!("{plural}.kubecache.test")},
        "spec": {"group": "kubecache.test", "version": "v1", "scope": "Cluster",
            "names": {"plural": plural, "kind": format!("U{plural}")},
            "validation": {"openAPIV3Schema": {"type": "object", "properties": {"spec": props}}}}}),
    )
    .await;
    // The apiserver marks them a moment later: wait, so that the
    // comparisons do not race it.
    for fs in ["dangling", "queued"] {
        let url = format!("{up}{fc}/flowschemas/{fs}-{sfx}");
        let mut marked = false;
        for _ in 0..100 {
            if get(&url).await.json()["status"]["conditions"].is_array() {
                marked = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(marked, "{url} never got its Dangling condition");
    }
}

/// The plural of the run's CRD (resource names take no hyphen).
fn unions_plural(sfx: &str) -> String {
    format!("unions{}", sfx.replace('-', ""))
}

/// Removes the cluster-scoped fixtures when dropped, whether the test
/// passed, failed or timed out.
pub struct ClusterFixtures {
    pub up: String,
    pub sfx: String,
}

impl Drop for ClusterFixtures {
    fn drop(&mut self) {
        let (up, sfx) = (self.up.clone(), self.sfx.clone());
        // A runtime of its own: the test's may be unwinding.
        let done = std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(remove_cluster_scoped(&up, &sfx))
        })
        .join();
        if done.is_err() {
            eprintln!("some cluster-scoped fixtures of run {} remain", self.sfx);
        }
    }
}

/// Removes the cluster-scoped fixtures that act on the apiserver (flow
/// control, webhooks) or would pile up across runs.
pub async fn remove_cluster_scoped(up: &str, sfx: &str) {
    for path in [
        format!("/apis/storage.k8s.io/v1/storageclasses/fast-{sfx}"),
        format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{}.kubecache.test",
            unions_plural(sfx)
        ),
        format!("/apis/scheduling.k8s.io/v1/priorityclasses/batch-{sfx}"),
        format!("/apis/scheduling.k8s.io/v1/priorityclasses/urgent-{sfx}"),
        format!("/apis/node.k8s.io/v1/runtimeclasses/kata-{sfx}"),
        format!("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/viewers-{sfx}"),
        format!("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mutate-{sfx}"),
        format!(
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/validate-{sfx}"
        ),
        format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/pending-{sfx}"),
        format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/issued-{sfx}"),
        format!("/apis/policy/v1beta1/podsecuritypolicies/restricted-{sfx}"),
        format!("/apis/policy/v1beta1/podsecuritypolicies/privileged-{sfx}"),
        format!("/apis/flowcontrol.apiserver.k8s.io/v1beta1/flowschemas/dangling-{sfx}"),
        format!("/apis/flowcontrol.apiserver.k8s.io/v1beta1/flowschemas/queued-{sfx}"),
        format!(
            "/apis/flowcontrol.apiserver.k8s.io/v1beta1/prioritylevelconfigurations/queued-{sfx}"
        ),
        format!(
            "/apis/flowcontrol.apiserver.k8s.io/v1beta1/prioritylevelconfigurations/reject-{sfx}"
        ),
    ] {
        send(Method::DELETE, &format!("{up}{path}"), None).await;
    }
}

/// A certificate request (PEM, base64) and a certificate for it, made
/// with openssl: the apiserver checks both.
pub const CSR: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIVE1Ic0NBUUF3R1RFWE1CVUdBMVVFQXd3T2EzVmlaV05oWTJobExYUmxjM1F3V1RBVEJnY3Foa2pPUFFJQgpCZ2dxaGtqT1BRTUJCd05DQUFUWGNiQmJ1UjBrLy80VS8rdTE0ZkZiaEJXL05RMlJBcXZFMUNic1Y2bnZMT3J2CjIwQzJTUmwvdXlvSW5TNUJpYXpMYTdSeXZpWFc0OXJwUk95M0lPZlBvQUF3Q2dZSUtvWkl6ajBFQXdJRFNBQXcKUlFJaEFJSWEvTU1LUlZlZFNVVDRBd3E2akY0djU0alhlclh6bHp3a21EdnNvWGZwQWlCc3RFM0FkMzljajNtSApJQzl1dFc1S0pwVWpBRDhHWTZKei9xSzU4TGZZa3c9PQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";
pub const CERTIFICATE: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJpakNDQVMrZ0F3SUJBZ0lVUGhYWjVBNk5xb2RjaTFXL0NJTFREd3BqLzJvd0NnWUlLb1pJemowRUF3SXcKR1RFWE1CVUdBMVVFQXd3T2EzVmlaV05oWTJobExYUmxjM1F3SUJjTk1qWXhNVEl4TWpBeU5URTBXaGdQTWpFeQpOakV3TWpneU1ESTFNVFJhTUJreEZ6QVZCZ05WQkFNTURtdDFZbVZqWVdOb1pTMTBaWE4wTUZrd0V3WUhLb1pJCnpqMENBUVlJS29aSXpqMERBUWNEUWdBRTEzR3dXN2tkSlAvK0ZQL3J0ZUh4VzRRVnZ6VU5rUUtyeE5RbTdGZXAKN3l6cTc5dEF0a2taZjdzcUNKMHVRWW1zeTJ1MGNyNGwxdVBhNlVUc3R5RG56Nk5UTUZFd0hRWURWUjBPQkJZRQpGRm01T09kQ0Y5Q2VmN0JNYU5NRVlKWjJZMjlFTUI4R0ExVWRJd1FZTUJhQUZGbTVPT2RDRjlDZWY3Qk1hTk1FCllKWjJZMjlFTUE4R0ExVWRFd0VCL3dRRk1BTUJBZjh3Q2dZSUtvWkl6ajBFQXdJRFNRQXdSZ0loQUxSTDJoRHAKbnE4RDAzMzM0LytxN3lEWUtWck9NaUdYelJJRTlQcnQzdGg0QWlFQXhCYk1IN3pJMHhhYlBHT3J3WE43ajBGdQo2UUZ2YUpKa2Y1S0tUZjBGVElnPQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==";

/// Every namespaced collection the fixtures fill, and whether kubecache
/// must print it itself.
pub fn namespaced(ns: &str) -> Vec<String> {
    [
        "/api/v1/namespaces/{ns}/pods",
        "/api/v1/namespaces/{ns}/configmaps",
        "/api/v1/namespaces/{ns}/secrets",
        "/api/v1/namespaces/{ns}/serviceaccounts",
        "/api/v1/namespaces/{ns}/services",
        "/api/v1/namespaces/{ns}/endpoints",
        "/api/v1/namespaces/{ns}/events",
        "/api/v1/namespaces/{ns}/persistentvolumeclaims",
        "/apis/events.k8s.io/v1/namespaces/{ns}/events",
        "/apis/discovery.k8s.io/v1beta1/namespaces/{ns}/endpointslices",
        "/apis/apps/v1/namespaces/{ns}/deployments",
        "/apis/apps/v1/namespaces/{ns}/replicasets",
        "/apis/apps/v1/namespaces/{ns}/statefulsets",
        "/apis/apps/v1/namespaces/{ns}/daemonsets",
        "/apis/batch/v1/namespaces/{ns}/jobs",
        "/apis/batch/v1beta1/namespaces/{ns}/cronjobs",
        "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
        "/apis/networking.k8s.io/v1beta1/namespaces/{ns}/ingresses",
        "/apis/extensions/v1beta1/namespaces/{ns}/ingresses",
        "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
        "/apis/policy/v1beta1/namespaces/{ns}/poddisruptionbudgets",
        "/api/v1/namespaces/{ns}/podtemplates",
        "/api/v1/namespaces/{ns}/resourcequotas",
        "/apis/apps/v1/namespaces/{ns}/controllerrevisions",
        "/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers",
        "/apis/autoscaling/v2beta1/namespaces/{ns}/horizontalpodautoscalers",
        "/apis/autoscaling/v2beta2/namespaces/{ns}/horizontalpodautoscalers",
    ]
    .iter()
    .map(|p| p.replace("{ns}", ns))
    .collect()
}

pub const CLUSTER: &[&str] = &[
    "/api/v1/nodes",
    "/api/v1/namespaces",
    "/api/v1/persistentvolumes",
    "/apis/storage.k8s.io/v1/storageclasses",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions",
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/apis/scheduling.k8s.io/v1beta1/priorityclasses",
    "/apis/node.k8s.io/v1/runtimeclasses",
    "/apis/node.k8s.io/v1beta1/runtimeclasses",
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/apis/rbac.authorization.k8s.io/v1beta1/clusterrolebindings",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1beta1/mutatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1beta1/validatingwebhookconfigurations",
    "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    "/apis/certificates.k8s.io/v1beta1/certificatesigningrequests",
    "/apis/policy/v1beta1/podsecuritypolicies",
    "/apis/flowcontrol.apiserver.k8s.io/v1beta1/flowschemas",
    "/apis/flowcontrol.apiserver.k8s.io/v1beta1/prioritylevelconfigurations",
    "/apis/apiregistration.k8s.io/v1/apiservices",
    "/apis/apiregistration.k8s.io/v1beta1/apiservices",
];

/// The resource name discovery knows a collection path by: `v1/pods`.
pub fn resource_of(path: &str) -> String {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (gv, rest) = if parts[0] == "api" {
        (parts[1].to_string(), &parts[2..])
    } else {
        (format!("{}/{}", parts[1], parts[2]), &parts[3..])
    };
    let resource = if rest[0] == "namespaces" && rest.len() > 2 {
        rest[2]
    } else {
        rest[0]
    };
    format!("{gv}/{resource}")
}

/// Waits until the cache holds what the apiserver holds for `path`.
pub async fn synced(up: &str, p: &Proxy, path: &str) {
    let resource = resource_of(path);
    let all = path.split("/namespaces/").next().unwrap().to_string()
        + "/"
        + resource.rsplit('/').next().unwrap();
    let all = if path.contains("/namespaces/") {
        all
    } else {
        path.to_string()
    };
    wait_synced(p, &all, &resource).await;
    converged_items(up, p, path, Duration::from_secs(20)).await;
}

/// `synced` for every hop of a chain, from the one nearest the upstream.
pub async fn synced_chain(up: &str, c: &Chain, path: &str) {
    for p in &c.hops {
        synced(up, p, path).await;
    }
}

/// Every fixture, namespaced and cluster-scoped, on the real apiserver;
/// the cluster-scoped ones go when this is dropped.
pub struct Fixtures {
    pub ns: String,
    /// Every collection the fixtures fill.
    pub paths: Vec<String>,
    _cleanup: ClusterFixtures,
}

impl Fixtures {
    pub async fn make(up: &str, prefix: &str) -> Fixtures {
        let (sfx, ns) = namespace_with_fixtures(up, prefix).await;
        let cleanup = ClusterFixtures {
            up: up.to_string(),
            sfx: sfx.clone(),
        };
        make_cluster_scoped(up, &sfx, &ns).await;
        let paths = namespaced(&ns)
            .into_iter()
            .chain(CLUSTER.iter().map(|s| s.to_string()))
            .collect();
        Fixtures {
            ns,
            paths,
            _cleanup: cleanup,
        }
    }
}
