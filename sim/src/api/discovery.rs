//! Discovery, as a v1.20 apiserver serving the simulated types answers
//! it: `/api`, `/apis`, each group version's resource list, `/version`,
//! and the health checks.

use super::json::{respond, value};
use crate::Sim;
use bytes::Bytes;
use http::{Response, StatusCode};
use kubecache::body::Body;
use serde_json::{json, Value};

/// The answer to a discovery path, or `None` for any other path.
pub(super) fn answer(sim: &Sim, path: &str) -> Option<Response<Body>> {
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
            let mut r = json!({"name": t.rt.gvr.resource, "singularName": "", "namespaced": t.rt.namespaced, "kind": t.rt.kind, "verbs": t.rt.verbs});
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
