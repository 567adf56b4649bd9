//! Realistic objects for the simulator, field for field in the order the
//! apiserver serializes them (Go struct order), as a kubelet and the
//! controllers would have written them.

use super::managed;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

pub struct Generator {
    rng: StdRng,
    /// Seconds since the epoch that generated timestamps count back from.
    now: i64,
}

pub fn rfc3339(secs: i64) -> String {
    kubecache::go::time::format_unix(secs)
}

/// The `i`th of the apps generated objects belong to (their `app` label).
pub fn app_of(i: usize) -> &'static str {
    APPS[i % APPS.len()]
}

pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

const APPS: [&str; 8] = [
    "web", "api", "worker", "cache", "db-proxy", "ingest", "auth", "search",
];
const IMAGES: [&str; 8] = [
    "nginx:1.25.3",
    "ghcr.io/acme/api:v2.14.0",
    "ghcr.io/acme/worker:v2.14.0",
    "redis:7.2.4",
    "envoyproxy/envoy:v1.29.1",
    "ghcr.io/acme/ingest:v0.9.2",
    "ghcr.io/acme/auth:v1.3.7",
    "opensearchproject/opensearch:2.11.1",
];

impl Generator {
    pub fn new(seed: u64) -> Self {
        Generator {
            rng: StdRng::seed_from_u64(seed),
            now: now_secs(),
        }
    }

    pub fn uid(&mut self) -> String {
        let b: [u8; 16] = self.rng.random();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            u16::from_be_bytes([b[4], b[5]]),
            u16::from_be_bytes([b[6], b[7]]) & 0x0fff,
            (u16::from_be_bytes([b[8], b[9]]) & 0x3fff) | 0x8000,
            u64::from_be_bytes([0, 0, b[10], b[11], b[12], b[13], b[14], b[15]])
        )
    }

    fn suffix(&mut self, n: usize) -> String {
        const ALNUM: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..n)
            .map(|_| ALNUM[self.rng.random_range(0..ALNUM.len())] as char)
            .collect()
    }

    fn ago(&mut self, max_secs: i64) -> String {
        let back = self.rng.random_range(60..max_secs.max(61));
        rfc3339(self.now - back)
    }

    /// A namespace as `kubectl create namespace` leaves it.
    pub fn namespace(&mut self, name: &str) -> Value {
        let created = self.ago(90 * 86_400);
        let mut ns = json!({
            "kind": "Namespace", "apiVersion": "v1",
            "metadata": {
                "name": name,
                "uid": self.uid(),
                "creationTimestamp": created,
                "labels": {"kubernetes.io/metadata.name": name}
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"}
        });
        let zero = json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}});
        let writes = [(
            "kubectl-create",
            created.as_str(),
            &zero,
            &namespace_as_created(&ns),
        )];
        ns["metadata"]["managedFields"] = managed_fields("v1", &writes, managed::atomic_lists);
        ns
    }

    /// A node as its kubelet registered it and kube-controller-manager
    /// gave it a pod CIDR.
    pub fn node(&mut self, i: usize) -> Value {
        let name = format!("node-{i:03}");
        let registered = self.now - self.rng.random_range(86_400..60 * 86_400);
        let mut node = json!({
            "kind": "Node", "apiVersion": "v1",
            "metadata": {
                "name": name,
                "uid": self.uid(),
                "creationTimestamp": rfc3339(registered),
                "labels": {
                    "beta.kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "node.kubernetes.io/instance-type": "m5.2xlarge",
                    "topology.kubernetes.io/zone": format!("eu-west-1{}", (["a", "b", "c"][i % 3]))
                },
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
            },
            "spec": {"podCIDR": format!("10.244.{i}.0/24"), "podCIDRs": [format!("10.244.{i}.0/24")], "providerID": format!("aws:///eu-west-1a/i-0{:015x}", i)},
            "status": {
                "capacity": {"cpu": "8", "ephemeral-storage": "104845292Ki", "memory": "32386544Ki", "pods": "110"},
                "allocatable": {"cpu": "7910m", "ephemeral-storage": "95551679124", "memory": "31369712Ki", "pods": "110"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": self.ago(60), "lastTransitionTime": self.ago(30 * 86_400), "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available"},
                    {"type": "DiskPressure", "status": "False", "lastHeartbeatTime": self.ago(60), "lastTransitionTime": self.ago(30 * 86_400), "reason": "KubeletHasNoDiskPressure", "message": "kubelet has no disk pressure"},
                    {"type": "PIDPressure", "status": "False", "lastHeartbeatTime": self.ago(60), "lastTransitionTime": self.ago(30 * 86_400), "reason": "KubeletHasSufficientPID", "message": "kubelet has sufficient PID available"},
                    {"type": "Ready", "status": "True", "lastHeartbeatTime": self.ago(60), "lastTransitionTime": self.ago(30 * 86_400), "reason": "KubeletReady", "message": "kubelet is posting ready status"}
                ],
                "addresses": [{"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250 + 2)}, {"type": "Hostname", "address": name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"machineID": self.suffix(32), "systemUUID": self.uid(), "bootID": self.uid(), "kernelVersion": "5.10.205-195.807.amzn2.x86_64", "osImage": "Amazon Linux 2", "containerRuntimeVersion": "containerd://1.7.11", "kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2", "operatingSystem": "linux", "architecture": "amd64"}
            }
        });
        // A Go zero Node: its status's structs are there, zero-valued.
        let zero = json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}
        }});
        let as_registered = node_as_registered(&node);
        let (at, cidr_at) = (rfc3339(registered), rfc3339(registered + 5));
        let writes = [
            ("kubelet", at.as_str(), &zero, &as_registered),
            (
                "kube-controller-manager",
                cidr_at.as_str(),
                &as_registered,
                &node,
            ),
        ];
        node["metadata"]["managedFields"] = managed_fields("v1", &writes, managed::node_lists);
        node
    }

    /// A configmap as Helm created it.
    pub fn configmap(&mut self, ns: &str, i: usize) -> Value {
        let app = APPS[i % APPS.len()];
        let created = self.ago(30 * 86_400);
        let mut cm = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {
                "name": format!("{app}-config-{i}"),
                "namespace": ns,
                "uid": self.uid(),
                "creationTimestamp": created,
                "labels": {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop"}
            },
            "data": {
                "LOG_LEVEL": (["info", "debug", "warn"][i % 3]),
                "FEATURE_FLAGS": "checkout-v2=true,search-suggest=false",
                "config.yaml": format!("server:\n  port: 8080\n  workers: {}\ncache:\n  ttl: 30s\n", 2 + i % 6)
            }
        });
        let zero = json!({"metadata": {"creationTimestamp": null}});
        let writes = [("helm", created.as_str(), &zero, &configmap_as_created(&cm))];
        cm["metadata"]["managedFields"] = managed_fields("v1", &writes, managed::atomic_lists);
        cm
    }

    /// A deployment as Helm created it and its controller left it.
    pub fn deployment(&mut self, ns: &str, app: &str) -> Value {
        // Created before its last rollout progressed.
        let created = rfc3339(self.now - self.rng.random_range(2 * 86_400..30 * 86_400));
        let progressed = self.ago(86_400);
        let mut d = json!({
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {
                "name": app, "namespace": ns, "uid": self.uid(), "generation": 3,
                "creationTimestamp": created,
                "labels": {"app": app},
                "annotations": {"deployment.kubernetes.io/revision": "3"}
            },
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": app}},
                "template": {"metadata": {"creationTimestamp": null, "labels": {"app": app}}, "spec": {"containers": [{"name": app, "image": IMAGES[0], "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600
            },
            "status": {"observedGeneration": 3, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                "conditions": [
                    {"type": "Available", "status": "True", "lastUpdateTime": progressed, "lastTransitionTime": progressed, "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
                    {"type": "Progressing", "status": "True", "lastUpdateTime": progressed, "lastTransitionTime": progressed, "reason": "NewReplicaSetAvailable", "message": format!("ReplicaSet \"{app}-7d4b9c8f6b\" has successfully progressed.")}
                ]}
        });
        let as_created = deployment_as_created(&d);
        // What the create left for the controller: a Go zero status.
        let mut after_create = as_created.clone();
        after_create["status"] = json!({});
        let zero = json!({"metadata": {"creationTimestamp": null}, "spec": {
            "selector": null,
            "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}},
            "strategy": {}
        }, "status": {}});
        let writes = [
            ("helm", created.as_str(), &zero, &as_created),
            (
                "kube-controller-manager",
                progressed.as_str(),
                &after_create,
                &d,
            ),
        ];
        d["metadata"]["managedFields"] =
            managed_fields("apps/v1", &writes, managed::deployment_lists);
        d
    }

    /// A pod as the kubelet reports it, in one of the phases a real
    /// cluster shows: ~2.9 KB of JSON, and ~2 KB of managed fields.
    pub fn pod(&mut self, ns: &str, app: &str, i: usize, nodes: usize) -> Value {
        let image = IMAGES[i % IMAGES.len()];
        let hash = "7d4b9c8f6b";
        let name = format!("{app}-{hash}-{}", self.suffix(5));
        let node = format!("node-{:03}", i % nodes.max(1));
        let created = self.ago(7 * 86_400);
        let phase = match i % 20 {
            0 => "Pending",
            1 => "Succeeded",
            2 => "Failed",
            _ => "Running",
        };
        let running = phase == "Running";
        let restarts = if i.is_multiple_of(7) {
            self.rng.random_range(1..12)
        } else {
            0
        };
        let ip = format!(
            "10.244.{}.{}",
            i % nodes.max(1),
            (i / nodes.max(1)) % 250 + 2
        );
        let sa_vol = format!("default-token-{}", self.suffix(5));
        let container_id = format!("containerd://{}", self.suffix(64));
        let state = if running {
            json!({"running": {"startedAt": created}})
        } else if phase == "Pending" {
            json!({"waiting": {"reason": "ContainerCreating"}})
        } else {
            json!({"terminated": {"exitCode": if phase == "Failed" {1} else {0}, "reason": if phase == "Failed" {"Error"} else {"Completed"}, "startedAt": created, "finishedAt": created, "containerID": container_id}})
        };
        let ready = if running { "True" } else { "False" };
        let mut pod = json!({
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {
                "name": name,
                "generateName": format!("{app}-{hash}-"),
                "namespace": ns,
                "uid": self.uid(),
                "creationTimestamp": created,
                "labels": {"app": app, "pod-template-hash": hash, "tier": (["frontend", "backend"][i % 2])},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-{hash}"), "uid": self.uid(), "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": {
                "volumes": [{"name": sa_vol, "secret": {"secretName": sa_vol, "defaultMode": 420}}],
                "containers": [{
                    "name": app,
                    "image": image,
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                    "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                    "volumeMounts": [{"name": sa_vol, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent"
                }],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default",
                "serviceAccount": "default",
                "nodeName": node,
                "securityContext": {},
                "schedulerName": "default-scheduler",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                ],
                "priority": 0,
                "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority"
            },
            "status": {
                "phase": phase,
                "conditions": [
                    {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": created},
                    {"type": "Ready", "status": ready, "lastProbeTime": null, "lastTransitionTime": created},
                    {"type": "ContainersReady", "status": ready, "lastProbeTime": null, "lastTransitionTime": created},
                    {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": created}
                ],
                "hostIP": format!("10.0.0.{}", i % nodes.max(1) % 250 + 2),
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "startTime": created,
                "containerStatuses": [{
                    "name": app,
                    "state": state,
                    "lastState": {},
                    "ready": running,
                    "restartCount": restarts,
                    "image": image,
                    "imageID": format!("docker.io/library/{image}@sha256:{}", self.suffix(64)),
                    "containerID": container_id,
                    "started": running
                }],
                "qosClass": "Burstable"
            }
        });
        let managed = pod_managed_fields(&pod, &created);
        pod["metadata"]["managedFields"] = managed;
        pod
    }
}

/// What admission adds to a pod the controller created (service account
/// token volume and mount, default tolerations, priority) and what the
/// scheduler's binding sets: in no manager's fields.
const POD_FIELDS_NOT_WRITTEN: [&str; 7] = [
    "volumes",
    "nodeName",
    "serviceAccountName",
    "serviceAccount",
    "tolerations",
    "priority",
    "preemptionPolicy",
];

/// What the ReplicaSet controller sends to create `pod`: its template's
/// metadata and spec, before admission adds the token volume and mount,
/// default tolerations and priority, and before the scheduler's binding.
pub fn pod_as_the_controller_created_it(pod: &Value) -> Value {
    let mut spec = pod["spec"].clone();
    if let Some(s) = spec.as_object_mut() {
        for f in POD_FIELDS_NOT_WRITTEN {
            s.remove(f);
        }
    }
    for c in spec["containers"].as_array_mut().into_iter().flatten() {
        if let Some(c) = c.as_object_mut() {
            c.remove("volumeMounts");
        }
    }
    let meta = &pod["metadata"];
    json!({
        "metadata": {
            "generateName": meta["generateName"],
            "labels": meta["labels"],
            "ownerReferences": meta["ownerReferences"],
        },
        "spec": spec,
    })
}

/// What `kubectl create namespace` sends for `ns` (the name label of
/// v1.21's defaulting set by hand), with the status phase v1.20's defaults
/// give it before the field manager sees it.
pub fn namespace_as_created(ns: &Value) -> Value {
    let m = &ns["metadata"];
    json!({"metadata": {"name": m["name"], "labels": m["labels"]}, "status": {"phase": "Active"}})
}

/// What Helm sends to create `cm`.
pub fn configmap_as_created(cm: &Value) -> Value {
    let m = &cm["metadata"];
    json!({"metadata": {"name": m["name"], "labels": m["labels"]}, "data": cm["data"]})
}

/// What Helm sends to create `d`: no status, and none of the annotations
/// the controller writes.
pub fn deployment_as_created(d: &Value) -> Value {
    let m = &d["metadata"];
    json!({"metadata": {"name": m["name"], "labels": m["labels"]}, "spec": d["spec"]})
}

/// What a kubelet registers `node` as: everything but the pod CIDR and
/// the TTL annotation kube-controller-manager adds.
pub fn node_as_registered(node: &Value) -> Value {
    let mut n = node.clone();
    if let Some(m) = n["metadata"].as_object_mut() {
        for f in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "managedFields",
        ] {
            m.remove(f);
        }
    }
    if let Some(a) = n["metadata"]["annotations"].as_object_mut() {
        a.remove("node.alpha.kubernetes.io/ttl");
    }
    if let Some(s) = n["spec"].as_object_mut() {
        s.remove("podCIDR");
        s.remove("podCIDRs");
    }
    n
}

/// `metadata.managedFields` of an object made by `writes` (manager, when,
/// the object before, the object after), in v1.20's order: by time, then
/// manager.
fn managed_fields(
    api_version: &str,
    writes: &[(&str, &str, &Value, &Value)],
    lists: managed::Lists,
) -> Value {
    let mut entries: Vec<(&str, &str, Value)> = writes
        .iter()
        .filter_map(|(manager, at, before, after)| {
            managed::changed(before, after, lists).map(|f| (*at, *manager, f))
        })
        .collect();
    entries.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    Value::Array(
        entries
            .into_iter()
            .map(|(at, manager, f)| managed::entry(manager, api_version, at, f))
            .collect(),
    )
}

/// A pod's managed fields as a cluster leaves them: the ReplicaSet
/// controller's create (kube-controller-manager) and the kubelet's status
/// writes, each compared with the pod before it, as v1.20's field manager
/// records them (checked against the real apiserver in
/// tests/sim_objects.rs).
fn pod_managed_fields(pod: &Value, at: &str) -> Value {
    let created = pod_as_the_controller_created_it(pod);
    // A Go zero Pod as the field manager sees one before a create.
    let zero = json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}, "status": {}});
    let status = &pod["status"];
    // The status as the apiserver and the scheduler's binding left it
    // before the kubelet's first write.
    let scheduled: Vec<&Value> = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "PodScheduled")
        .collect();
    let bound = json!({"status": {"phase": "Pending", "qosClass": status["qosClass"], "conditions": scheduled}});
    let written = json!({ "status": status });
    let writes = [
        ("kube-controller-manager", at, &zero, &created),
        ("kubelet", at, &bound, &written),
    ];
    managed_fields("v1", &writes, managed::pod_lists)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn pods_are_realistically_sized_and_ordered_like_go() {
        let mut g = Generator::new(1);
        let p = g.pod("ns", "db-proxy", 3, 10);
        let s = serde_json::to_string(&p).unwrap();
        assert!(s.starts_with("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"));
        assert!(s.len() > 4500 && s.len() < 6000, "{}", s.len());
    }

    /// `v` without what Go's JSON may leave out or write as null: nulls,
    /// "", 0, false, and objects and arrays that are empty once pruned.
    fn pruned(v: &Value) -> Option<Value> {
        let v = match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .filter_map(|(k, v)| Some((k.clone(), pruned(v)?)))
                    .collect(),
            ),
            Value::Array(a) => {
                Value::Array(a.iter().map(|v| pruned(v).unwrap_or(Value::Null)).collect())
            }
            v => v.clone(),
        };
        let empty = match &v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
            Value::Object(o) => o.is_empty(),
            Value::Array(a) => a.is_empty(),
        };
        (!empty).then_some(v)
    }

    /// A kind's JSON through protobuf and back, as a client writing it in
    /// protobuf would have the simulator read it.
    fn through_protobuf(kind: &str, v: &Value) -> Value {
        use kubecache::encode::protobuf;
        let api_version = if kind == "Deployment" {
            "apps/v1"
        } else {
            "v1"
        };
        let json = serde_json::to_vec(v).unwrap();
        let body = protobuf::object(api_version, kind, &json).unwrap();
        protobuf::decode_object(&body).unwrap()
    }

    #[test]
    fn every_generated_kind_reads_back_from_protobuf_as_its_json() {
        let mut g = Generator::new(7);
        let ns = g.namespace("team-a");
        let node = g.node(2);
        let cm = g.configmap("team-a", 1);
        let d = g.deployment("team-a", "web");
        let pod = g.pod("team-a", "cache", 4, 3);
        let objects = [
            ("Namespace", ns.clone()),
            ("Namespace", namespace_as_created(&ns)),
            ("Node", node.clone()),
            ("Node", node_as_registered(&node)),
            ("ConfigMap", cm.clone()),
            ("ConfigMap", configmap_as_created(&cm)),
            ("Deployment", d.clone()),
            ("Deployment", deployment_as_created(&d)),
            ("Pod", pod.clone()),
            ("Pod", pod_as_the_controller_created_it(&pod)),
        ];
        for (kind, v) in objects {
            let back = through_protobuf(kind, &v);
            // The envelope's kind and version are the object's.
            let mut want = pruned(&v).unwrap();
            want["kind"] = Value::String(kind.into());
            want["apiVersion"] = back["apiVersion"].clone();
            assert_eq!(pruned(&back).unwrap(), want, "{kind}");
            // The objects as the apiserver holds them (a creation time
            // set) are written whole, as Go writes them: so is what is
            // decoded, but for the order of a map's keys, which Go sorts
            // and the generator does not.
            if v["metadata"].get("creationTimestamp").is_some() {
                assert_eq!(back, v, "{kind}");
            }
        }
    }
}
