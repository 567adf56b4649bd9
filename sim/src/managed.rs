//! Managed fields as the apiserver's field manager records an Update
//! (`metadata.managedFields`, FieldsV1): which fields a manager set or
//! changed, compared with the object before its write. The real apiserver
//! writes them on every create and update, and they are nearly half of a
//! pod's JSON, so a simulator without them would serve lighter objects
//! than a cluster does.

use serde_json::{Map, Value};

/// How the items of a list are told apart in a field set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// Items are keyed by these fields (`k:{"name":"web"}`).
    Map(&'static [&'static str]),
    /// The list is one value (`f:list: {}`).
    Atomic,
    /// A set of scalars, each item its own (`v:"10.244.1.0/24"`).
    Set,
    /// Not a list: a struct set as a whole (`+structType=atomic`, as label
    /// selectors are), `f:selector: {}`.
    AtomicStruct,
}

/// A type's lists, by the field names leading to them ("spec.containers").
pub type Lists = fn(&str) -> ListType;

/// For types whose lists are all atomic (or that have none).
pub fn atomic_lists(_: &str) -> ListType {
    ListType::Atomic
}

/// The list types of a Deployment: its pod template's, and its conditions;
/// its selector is atomic.
pub fn deployment_lists(path: &str) -> ListType {
    if path == "spec.selector" {
        return ListType::AtomicStruct;
    }
    match path.strip_prefix("spec.template.") {
        Some(pod) if pod.starts_with("spec.") => pod_lists(pod),
        _ => pod_lists(path),
    }
}

/// The list types of a Node.
pub fn node_lists(path: &str) -> ListType {
    match path {
        "spec.podCIDRs" => ListType::Set,
        "status.conditions" | "status.addresses" => ListType::Map(&["type"]),
        _ => ListType::Atomic,
    }
}

/// The list types of a pod (v1.20's `patchMergeKey`s); any other list is
/// atomic.
pub fn pod_lists(path: &str) -> ListType {
    match path {
        "metadata.ownerReferences" => ListType::Map(&["uid"]),
        "spec.containers" | "spec.initContainers" | "spec.containers.env" | "spec.volumes" => {
            ListType::Map(&["name"])
        }
        "spec.containers.ports" => ListType::Map(&["containerPort", "protocol"]),
        "spec.containers.volumeMounts" => ListType::Map(&["mountPath"]),
        "status.conditions" => ListType::Map(&["type"]),
        "status.podIPs" => ListType::Map(&["ip"]),
        _ => ListType::Atomic,
    }
}

/// The FieldsV1 of what `new` sets that `old` did not have or had
/// otherwise; `None` when nothing changed. A node new to the object is
/// marked with ".", as the field manager marks added items; fields come in
/// name order, list items by their key, as the apiserver writes them.
pub fn changed(old: &Value, new: &Value, lists: Lists) -> Option<Value> {
    object(Some(old), new, &mut Vec::new(), lists).map(Value::Object)
}

static EMPTY: Value = Value::Null;

fn object(
    old: Option<&Value>,
    new: &Value,
    path: &mut Vec<String>,
    lists: Lists,
) -> Option<Map<String, Value>> {
    let Value::Object(fields) = new else {
        return None;
    };
    let mut names: Vec<&String> = fields.keys().collect();
    names.sort();
    let mut out = Map::new();
    for name in names {
        if stripped(path, name) {
            continue;
        }
        path.push(name.clone());
        let mut before = old.and_then(|o| o.get(name));
        // `metadata` itself is never in a set (it is stripped), so never new.
        if before.is_none() && path.len() == 1 && name == "metadata" {
            before = Some(&EMPTY);
        }
        if let Some(set) = node(before, &fields[name], path, lists) {
            out.insert(format!("f:{name}"), set);
        }
        path.pop();
    }
    (!out.is_empty()).then_some(out)
}

/// What the field manager leaves out of every set: the type, and the
/// metadata the apiserver owns or that names the object.
fn stripped(path: &[String], name: &str) -> bool {
    match path {
        [] => matches!(name, "apiVersion" | "kind"),
        [m] if m == "metadata" => matches!(
            name,
            "name"
                | "namespace"
                | "creationTimestamp"
                | "selfLink"
                | "uid"
                | "clusterName"
                | "generation"
                | "managedFields"
                | "resourceVersion"
        ),
        _ => false,
    }
}

/// One field's part of the set: its own "." when it is new, and what
/// changed beneath it; a leaf (a scalar, null, an empty object or an
/// atomic list) is itself the change.
fn node(old: Option<&Value>, new: &Value, path: &mut Vec<String>, lists: Lists) -> Option<Value> {
    let beneath = match new {
        Value::Object(m) if !m.is_empty() => match lists(&path.join(".")) {
            ListType::AtomicStruct => return leaf(old, new),
            _ => object(old, new, path, lists),
        },
        Value::Array(items) => match lists(&path.join(".")) {
            ListType::Map(keys) => keyed(old, items, keys, path, lists),
            ListType::Set => members(old, items),
            ListType::Atomic | ListType::AtomicStruct => return leaf(old, new),
        },
        _ => return leaf(old, new),
    };
    with_dot(old.is_none(), beneath)
}

fn leaf(old: Option<&Value>, new: &Value) -> Option<Value> {
    (old != Some(new)).then(|| Value::Object(Map::new()))
}

fn keyed(
    old: Option<&Value>,
    items: &[Value],
    keys: &[&str],
    path: &mut Vec<String>,
    lists: Lists,
) -> Option<Map<String, Value>> {
    let key_of = |item: &Value| {
        let mut k = Map::new();
        let mut sorted = keys.to_vec();
        sorted.sort();
        for f in sorted {
            k.insert(f.to_string(), item.get(f).cloned().unwrap_or(Value::Null));
        }
        Value::Object(k).to_string()
    };
    let olds = old.and_then(Value::as_array);
    let mut out: Vec<(String, Value)> = Vec::new();
    for item in items {
        let key = key_of(item);
        let before = olds.and_then(|o| o.iter().find(|i| key_of(i) == key));
        let beneath = object(before, item, path, lists);
        if let Some(set) = with_dot(before.is_none(), beneath) {
            out.push((format!("k:{key}"), set));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    let out: Map<String, Value> = out.into_iter().collect();
    (!out.is_empty()).then_some(out)
}

/// The items of a set of scalars that `old` lacked, by value.
fn members(old: Option<&Value>, items: &[Value]) -> Option<Map<String, Value>> {
    let olds = old.and_then(Value::as_array);
    let mut out: Vec<String> = items
        .iter()
        .filter(|i| !olds.is_some_and(|o| o.contains(i)))
        .map(|i| format!("v:{i}"))
        .collect();
    out.sort();
    let out: Map<String, Value> = out
        .into_iter()
        .map(|k| (k, Value::Object(Map::new())))
        .collect();
    (!out.is_empty()).then_some(out)
}

/// A node's set: "." first when the node itself is new.
fn with_dot(added: bool, beneath: Option<Map<String, Value>>) -> Option<Value> {
    if !added {
        return beneath.map(Value::Object);
    }
    let mut out = Map::new();
    out.insert(".".into(), Value::Object(Map::new()));
    out.extend(beneath.unwrap_or_default());
    Some(Value::Object(out))
}

/// One entry of `metadata.managedFields`, as v1.20 writes an Update.
pub fn entry(manager: &str, api_version: &str, time: &str, fields: Value) -> Value {
    serde_json::json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn new_nodes_are_marked_and_fields_come_in_name_order() {
        let old = json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}});
        let new = json!({
            "metadata": {"labels": {"b": "1", "a": "2"}},
            "spec": {"restartPolicy": "Always", "containers": [
                {"name": "web", "image": "nginx", "ports": [{"protocol": "TCP", "containerPort": 80}]}
            ], "securityContext": {}}
        });
        let set = changed(&old, &new, pod_lists).unwrap();
        assert_eq!(
            set.to_string(),
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:a": {}, "f:b": {}}},
                "f:spec": {
                    // Present (null) in the object before: no ".".
                    "f:containers": {"k:{\"name\":\"web\"}": {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:protocol": {}
                        }}
                    }},
                    "f:restartPolicy": {},
                    "f:securityContext": {}
                }
            })
            .to_string()
        );
    }

    #[test]
    fn only_what_changed_is_recorded_and_atomic_lists_are_one_field() {
        let old = json!({"status": {"phase": "Pending", "qosClass": "Burstable",
            "conditions": [{"type": "PodScheduled", "status": "True"}]}});
        let new = json!({"status": {"phase": "Running", "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "web", "ready": true}]}});
        let set = changed(&old, &new, pod_lists).unwrap();
        assert_eq!(
            set.to_string(),
            json!({"f:status": {
                "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}},
                "f:containerStatuses": {},
                "f:phase": {}
            }})
            .to_string()
        );
        assert_eq!(changed(&new, &new, pod_lists), None);
    }

    #[test]
    fn names_and_server_fields_are_left_out_and_sets_and_selectors_are_recorded_as_such() {
        let old = json!({"metadata": {"creationTimestamp": null}, "spec": {"selector": null}});
        let new = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u", "generation": 2,
                "resourceVersion": "7", "labels": {"app": "web"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}}
        });
        assert_eq!(
            changed(&old, &new, deployment_lists).unwrap().to_string(),
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:selector": {}}})
                .to_string()
        );
        let old = json!({"spec": {"podCIDRs": ["10.0.0.0/24"]}});
        let new = json!({"spec": {"podCIDRs": ["10.0.1.0/24", "10.0.0.0/24"]}});
        assert_eq!(
            changed(&old, &new, node_lists).unwrap().to_string(),
            json!({"f:spec": {"f:podCIDRs": {"v:\"10.0.1.0/24\"": {}}}}).to_string()
        );
    }
}
