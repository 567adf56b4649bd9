//! Objects a test makes directly upstream, before kubecache sees them:
//! namespaces, CustomResourceDefinitions, and RBAC grants.

use super::http_client::{get, send};
use http::Method;
use serde_json::json;
use std::time::Duration;

/// Creates a namespace directly upstream (fine if it exists).
pub async fn ensure_namespace(up: &str, ns: &str) {
    let r = send(
        Method::POST,
        &format!("{up}/api/v1/namespaces"),
        Some(
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        ),
    )
    .await;
    assert!(r.status == 201 || r.status == 409, "{}", r.text());
}

/// A CustomResourceDefinition in group kubecache.test, version v1.
pub fn crd(plural: &str, kind: &str, scope: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.kubecache.test")},
        "spec": {
            "group": "kubecache.test",
            "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    })
}

/// Creates a CRD upstream (fine if it exists) and waits until it serves.
pub async fn establish(up: &str, body: serde_json::Value) {
    let name = body["metadata"]["name"].as_str().unwrap().to_string();
    let r = send(
        Method::POST,
        &format!("{up}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(body),
    )
    .await;
    assert!(r.status == 201 || r.status == 409, "{}", r.text());
    for _ in 0..200 {
        let r = get(&format!(
            "{up}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        ))
        .await;
        let established = r.json()["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            });
        // Established, and served: the first list can still 404 briefly.
        let plural = name.split('.').next().unwrap();
        if established
            && get(&format!("{up}/apis/kubecache.test/v1/{plural}"))
                .await
                .status
                == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} never became established");
}

/// A Role (in `ns`) or ClusterRole with `rules`, bound to one subject.
pub async fn grant(
    up: &str,
    ns: Option<&str>,
    name: &str,
    rules: serde_json::Value,
    (kind, subject): (&str, &str),
) {
    let (role_kind, base) = match ns {
        Some(ns) => (
            "Role",
            format!("{up}/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"),
        ),
        None => (
            "ClusterRole",
            format!("{up}/apis/rbac.authorization.k8s.io/v1"),
        ),
    };
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role_kind,
                      "metadata": {"name": name}, "rules": rules});
    let resp = send(
        Method::POST,
        &format!("{base}/{}s", role_kind.to_lowercase()),
        Some(role),
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text());
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": format!("{role_kind}Binding"),
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}]});
    let resp = send(
        Method::POST,
        &format!("{base}/{}bindings", role_kind.to_lowercase()),
        Some(binding),
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text());
}
