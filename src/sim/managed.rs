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
}

/// A type's lists, by the field names leading to them ("spec.containers").
pub type Lists = fn(&str) -> ListType;

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
        path.push(name.clone());
        let before = old.and_then(|o| o.get(name));
        if let Some(set) = node(before, &fields[name], path, lists) {
            out.insert(format!("f:{name}"), set);
        }
        path.pop();
    }
    (!out.is_empty()).then_some(out)
}

/// One field's part of the set: its own "." when it is new, and what
/// changed beneath it; a leaf (a scalar, null, an empty object or an
/// atomic list) is itself the change.
fn node(old: Option<&Value>, new: &Value, path: &mut Vec<String>, lists: Lists) -> Option<Value> {
    let beneath = match new {
        Value::Object(m) if !m.is_empty() => object(old, new, path, lists),
        Value::Array(items) => match lists(&path.join(".")) {
            ListType::Map(keys) => keyed(old, items, keys, path, lists),
            ListType::Atomic => return leaf(old, new),
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
}
