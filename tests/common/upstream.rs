//! Objects a test makes directly upstream, before kubecache sees them:
//! namespaces and CustomResourceDefinitions.

use super::http_client::{get, send};
use http::Method;
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
