//! Objects for the product's unit tests: pods as a kubelet reports them,
//! deterministic and varied by their number. (The simulator generates its
//! own, elsewhere; product tests do not depend on it.)

use serde_json::{json, Value};

const APPS: [&str; 5] = ["web", "api", "cache", "worker", "db"];
const PHASES: [&str; 4] = ["Running", "Pending", "Succeeded", "Failed"];

/// Hex digits that differ from pod to pod (a 64-bit LCG of `seed`).
fn hex(seed: u64, len: usize) -> String {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut s = String::with_capacity(len);
    while s.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s.push_str(&format!("{:016x}", x));
    }
    s.truncate(len);
    s
}

/// Pod number `i` of namespace `ns`: ~1.5 KB, every selectable field set
/// but `status.nominatedNodeName`.
pub fn pod(ns: &str, i: usize) -> Value {
    let app = APPS[i % APPS.len()];
    let phase = PHASES[i % PHASES.len()];
    let id = hex(i as u64, 32);
    let uid = format!(
        "{}-{}-4{}-8{}-{}",
        &id[..8],
        &id[8..12],
        &id[13..16],
        &id[17..20],
        &id[20..32]
    );
    let name = format!("{app}-7d4b9c8f6b-{}", &hex(i as u64 + 7, 5));
    let node = format!("node-{:03}", i % 5);
    let ip = format!("10.244.{}.{}", i % 5, i % 250 + 2);
    json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "name": name,
            "generateName": format!("{app}-7d4b9c8f6b-"),
            "namespace": ns,
            "uid": uid,
            "resourceVersion": (1000 + i).to_string(),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": app, "pod-template-hash": "7d4b9c8f6b", "tier": (["frontend", "backend"][i % 2])},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-7d4b9c8f6b"), "uid": hex(i as u64 + 3, 36), "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "volumes": [{"name": "default-token", "secret": {"secretName": "default-token", "defaultMode": 420}}],
            "containers": [{
                "name": app,
                "image": format!("registry.example/{app}:1.{}", i % 9),
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
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
            "priority": 0
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": if phase == "Running" {"True"} else {"False"}, "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:10Z"}],
            "hostIP": format!("192.168.0.{}", i % 5 + 10),
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": "2026-01-01T00:00:01Z",
            "containerStatuses": [{"name": app, "ready": phase == "Running", "restartCount": i % 3, "image": format!("registry.example/{app}:1.{}", i % 9), "imageID": format!("registry.example/{app}@sha256:{}", hex(i as u64 + 11, 64)), "containerID": format!("containerd://{}", hex(i as u64 + 13, 64)), "started": phase == "Running"}],
            "qosClass": "Burstable"
        }
    })
}
