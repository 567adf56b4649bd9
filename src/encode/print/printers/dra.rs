//! Ports of printers.go for dynamic resource allocation
//! (resource.k8s.io/v1, which v1.20 did not have): device classes,
//! resource claims and their templates, and resource slices.

use super::fields::{arr, at, created, name, s, RowFn};
use crate::encode::print::row::RowBuilder;
use serde_json::Value;

/// v1.36's printers of resource.k8s.io/v1 (GA in 1.34; the printers'
/// columns are those of the structured API, 1.31).
pub fn lookup_v1_36(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("resource.k8s.io", "v1", "deviceclasses" | "resourceclaimtemplates") => name_and_age,
        ("resource.k8s.io", "v1", "resourceclaims") => resource_claim,
        ("resource.k8s.io", "v1", "resourceslices") => resource_slice,
        _ => return None,
    })
}

/// A pointer field that is set (present and not null).
fn set<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|v| !v.is_null())
}

/// `printDeviceClass` and `printResourceClaimTemplate`.
fn name_and_age(o: &Value, r: &mut RowBuilder) {
    r.str(name(o)).since_field(created(o));
}

/// `printResourceClaim` with `resourceClaimState`: "deleted" once it has
/// a deletion timestamp; then "pending" while unallocated (and not
/// deleted), else "allocated" and, when it is reserved for a consumer,
/// "reserved"; joined with ",".
fn resource_claim(c: &Value, r: &mut RowBuilder) {
    let deleted = set(c, &["metadata", "deletionTimestamp"]).is_some();
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if set(c, &["status", "allocation"]).is_none() {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !arr(c, &["status", "reservedFor"]).is_empty() {
            states.push("reserved");
        }
    }
    r.str(name(c))
        .str(&states.join(","))
        .since_field(created(c));
}

/// `printResourceSlice`: the node ("" without one), the driver and the
/// pool's name.
fn resource_slice(sl: &Value, r: &mut RowBuilder) {
    r.str(name(sl))
        .str(s(sl, &["spec", "nodeName"]))
        .str(s(sl, &["spec", "driver"]))
        .str(s(sl, &["spec", "pool", "name"]))
        .since_field(created(sl));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check_as;
    use crate::encode::personality::Personality;
    use serde_json::{json, Value};

    fn made(meta: Value, rest: Value) -> Value {
        let mut o = rest;
        o["metadata"] = json!({"creationTimestamp": "2026-01-01T00:00:00Z"});
        o["metadata"]
            .as_object_mut()
            .unwrap()
            .extend(meta.as_object().unwrap().clone());
        o
    }

    #[test]
    fn v1_31_device_classes_and_claim_templates_show_name_and_age() {
        let v1_36 = Personality::NEWEST;
        for resource in ["deviceclasses", "resourceclaimtemplates"] {
            check_as(
                v1_36,
                ("resource.k8s.io", "v1", resource),
                made(json!({"name": "gpu"}), json!({"spec": {}})),
                r#""cells":["gpu","60m"]"#,
            );
        }
    }

    #[test]
    fn v1_31_resource_claims_summarize_their_state() {
        let v1_36 = Personality::NEWEST;
        let gvr = ("resource.k8s.io", "v1", "resourceclaims");
        let claim = |meta: Value, status: Value| {
            made(
                meta,
                json!({"spec": {"devices": {"requests": []}}, "status": status}),
            )
        };
        let allocation = json!({"devices": {"results": []}});
        for (meta, status, state) in [
            (json!({"name": "c"}), json!({}), "pending"),
            (
                json!({"name": "c"}),
                json!({"allocation": allocation}),
                "allocated",
            ),
            (
                json!({"name": "c"}),
                json!({"allocation": allocation,
                    "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}),
                "allocated,reserved",
            ),
            (
                json!({"name": "c", "deletionTimestamp": "2026-01-01T00:30:00Z"}),
                json!({}),
                "deleted",
            ),
            (
                json!({"name": "c", "deletionTimestamp": "2026-01-01T00:30:00Z"}),
                json!({"allocation": allocation, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}),
                "deleted,allocated,reserved",
            ),
        ] {
            check_as(
                v1_36,
                gvr,
                claim(meta, status),
                &format!(r#""cells":["c","{state}","60m"]"#),
            );
        }
    }

    #[test]
    fn v1_31_resource_slices_show_node_driver_and_pool() {
        let v1_36 = Personality::NEWEST;
        let gvr = ("resource.k8s.io", "v1", "resourceslices");
        check_as(
            v1_36,
            gvr,
            made(
                json!({"name": "node-1-gpu.example.com-x7k2p"}),
                json!({"spec": {"nodeName": "node-1", "driver": "gpu.example.com",
                    "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1}, "devices": []}}),
            ),
            r#""cells":["node-1-gpu.example.com-x7k2p","node-1","gpu.example.com","node-1","60m"]"#,
        );
        // Devices for all nodes (or a node selector): no node.
        check_as(
            v1_36,
            gvr,
            made(
                json!({"name": "net"}),
                json!({"spec": {"allNodes": true, "driver": "net.example.com",
                    "pool": {"name": "fabric", "generation": 3, "resourceSliceCount": 2}}}),
            ),
            r#""cells":["net","","net.example.com","fabric","60m"]"#,
        );
    }
}
