//! Discovery, as an apiserver of the simulated release serving the
//! simulated types answers it: `/api`, `/apis`, each group version's
//! resource list, `/version`, and the health checks; as v1.36, also the
//! aggregated discovery of `/api` and `/apis` current kubectl asks first
//! (`apidiscovery.k8s.io/v2`, in the field order and form kube-apiserver
//! v1.36.2 wrote them, recorded in `../shared/reference/apiserver-v1.36/
//! discovery`), and resource lists with each resource's singular name.

use super::json::{respond, value};
use crate::Sim;
use bytes::Bytes;
use http::{Response, StatusCode};
use kubecache::body::Body;
use serde_json::{json, Value};

/// The answer to a discovery path, or `None` for any other path.
pub(super) fn answer(sim: &Sim, path: &str, accept: Option<&str>) -> Option<Response<Body>> {
    if matches!(path, "/api" | "/apis")
        && sim.personality.aggregated_discovery()
        && wants_aggregated(accept.unwrap_or_default())
    {
        let mut b = serde_json::to_vec(&aggregated(sim, path == "/api")).unwrap_or_default();
        b.push(b'\n');
        let mut r = respond(StatusCode::OK, Bytes::from(b));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(AGGREGATED),
        );
        return Some(r);
    }
    let answer = match path {
        "/healthz" | "/readyz" | "/livez" => respond(StatusCode::OK, Bytes::from_static(b"ok")),
        "/version" => value(StatusCode::OK, sim.personality.version()),
        "/api" => value(
            StatusCode::OK,
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}),
        ),
        "/apis" => value(StatusCode::OK, group_list(sim)),
        _ => return resource_list(sim, path).map(|list| value(StatusCode::OK, list)),
    };
    Some(answer)
}

fn group_list(sim: &Sim) -> Value {
    let mut groups: Vec<&str> = sim
        .types
        .keys()
        .map(|g| g.group.as_str())
        .filter(|g| !g.is_empty())
        .collect();
    groups.dedup();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups.iter().map(|g| json!({
        "name": g,
        "versions": [{"groupVersion": format!("{g}/v1"), "version": "v1"}],
        "preferredVersion": {"groupVersion": format!("{g}/v1"), "version": "v1"}
    })).collect::<Vec<_>>()})
}

fn resource_list(sim: &Sim, path: &str) -> Option<Value> {
    let (group, version) = match path
        .trim_end_matches('/')
        .split('/')
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["", "api", v] => (String::new(), v.to_string()),
        ["", "apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    let resources: Vec<Value> = sim
        .types
        .values()
        .filter(|t| t.rt.gvr.group == group && t.rt.gvr.version == version)
        .map(|t| {
            // In v1.20's field order, empty lists left out as it leaves them.
            let singular = if sim.personality.aggregated_discovery() {
                singular(t)
            } else {
                String::new()
            };
            let mut r = json!({"name": t.rt.gvr.resource, "singularName": singular, "namespaced": t.rt.namespaced, "kind": t.rt.kind, "verbs": t.rt.verbs});
            let d = &t.discovery;
            if !d.short_names.is_empty() {
                r["shortNames"] = json!(d.short_names);
            }
            if !d.categories.is_empty() {
                r["categories"] = json!(d.categories);
            }
            r["storageVersionHash"] = json!(d.storage_version_hash);
            r
        })
        .collect();
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// The media type of aggregated discovery, as v1.36 answers it.
pub const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether `accept` prefers aggregated discovery (`v2`; v1.36 serves no
/// `v2beta1`) to the plain documents: its clauses in order, the first
/// that either is `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2` or
/// names a plain media type deciding. (The apiserver negotiates with
/// q-values too, which no client of discovery sends.)
fn wants_aggregated(accept: &str) -> bool {
    for clause in accept.split(',') {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let param = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        match param("as") {
            Some("APIGroupDiscoveryList") => {
                if media == "application/json"
                    && param("g") == Some("apidiscovery.k8s.io")
                    && param("v") == Some("v2")
                {
                    return true;
                }
            }
            Some(_) => {}
            None if media.is_empty() => {}
            None => return false,
        }
    }
    false
}

/// A resource's singular name, as the apiserver derives it for built-in
/// types (the kind, lower-cased) and a CRD declares it.
fn singular(t: &crate::SimType) -> String {
    t.rt.kind.to_lowercase()
}

/// The aggregated discovery of the core group (`/api`) or of the named
/// groups (`/apis`), as v1.36 writes it: built-in kinds' `responseKind`
/// without group and version, a custom resource's with them; every
/// version `"freshness":"Current"`.
fn aggregated(sim: &Sim, core: bool) -> Value {
    let mut groups: Vec<&str> = sim
        .types
        .keys()
        .map(|g| g.group.as_str())
        .filter(|g| g.is_empty() == core)
        .collect();
    groups.dedup();
    let items: Vec<Value> = groups
        .iter()
        .map(|group| {
            let custom = *group == crate::WIDGETS.0;
            let resources: Vec<Value> = sim
                .types
                .values()
                .filter(|t| t.rt.gvr.group == *group)
                .map(|t| {
                    let (g, v) = if custom {
                        (t.rt.gvr.group.as_str(), t.rt.gvr.version.as_str())
                    } else {
                        ("", "")
                    };
                    let mut r = json!({
                        "resource": t.rt.gvr.resource,
                        "responseKind": {"group": g, "version": v, "kind": t.rt.kind},
                        "scope": if t.rt.namespaced { "Namespaced" } else { "Cluster" },
                        "singularResource": singular(t),
                        "verbs": t.rt.verbs,
                    });
                    let d = &t.discovery;
                    if !d.short_names.is_empty() {
                        r["shortNames"] = json!(d.short_names);
                    }
                    if !d.categories.is_empty() {
                        r["categories"] = json!(d.categories);
                    }
                    r
                })
                .collect();
            let metadata = if core { json!({}) } else { json!({"name": group}) };
            json!({"metadata": metadata, "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}]})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectls_accept_asks_for_aggregated_discovery_first() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(kubectl));
        assert!(wants_aggregated(
            "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io"
        ));
        // v2beta1 alone is not served, plain JSON first wins, none asked.
        assert!(!wants_aggregated("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"));
        assert!(!wants_aggregated(
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ));
        assert!(!wants_aggregated(""));
    }
}
