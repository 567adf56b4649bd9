//! Strategic merge patches as the v1.20 apiserver applies them: the
//! applying side of apimachinery's `strategicpatch` (`patch.go`'s
//! `mergeMap`, `mergeSlice` and their directives: `$patch`, `$retainKeys`,
//! `$deleteFromPrimitiveList`, `$setElementOrder`), with its errors worded
//! as Go formats them and its list order (`normalizeElementOrder`, Go's
//! stable sort) reproduced. Which lists merge, and by which key, is
//! `strategic_keys`' table.

use super::error::PatchError;
use super::strategic_keys::list_merge_key;
use kubecache::go::json::syntax_error as go_syntax_error;
use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

pub(super) fn strategic_patch(
    kind: &str,
    current: &Value,
    patch: &[u8],
) -> Result<Value, PatchError> {
    let patch: Value = serde_json::from_slice(patch)
        .map_err(|e| PatchError::BadRequest(go_syntax_error(patch, &e)))?;
    let patch = match patch {
        Value::Object(p) => p,
        Value::Null => Map::new(),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                kubecache::go::json::kind(&other)
            )))
        }
    };
    let Value::Object(original) = current.clone() else {
        return Err(PatchError::Unknown("invalid JSON document".into()));
    };
    let mut path = Vec::new();
    let merged = Smp { kind }
        .merge_map(original, patch, &mut path)
        .map_err(SmpError::into_patch_error)?;
    Ok(Value::Object(merged))
}

/// Strategic merge errors: the apiserver answers some 400 or 422, the rest
/// 500 with the library's words.
#[derive(Debug)]
enum SmpError {
    BadRequest(&'static str),
    /// The one error it answers 422 (with its generic message).
    ListOfLists,
    Other(String),
}

impl SmpError {
    fn into_patch_error(self) -> PatchError {
        match self {
            SmpError::BadRequest(m) => PatchError::BadRequest(m.to_string()),
            SmpError::ListOfLists => PatchError::DoesNotApply,
            SmpError::Other(m) => PatchError::Unknown(m),
        }
    }
}

const BAD_PRIMITIVE_LIST: SmpError = SmpError::BadRequest("invalid patch format of primitive list");
const BAD_RETAIN_KEYS: SmpError = SmpError::BadRequest("invalid patch format of retainKeys");
const BAD_SET_ORDER: SmpError =
    SmpError::BadRequest("invalid patch format of setElementOrder list");

fn no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Other(format!(
        "map: {} does not contain declared merge key: {key}",
        kubecache::go::fmt::value(&Value::Object(m.clone()))
    ))
}

fn bad_patch_type(t: &Value, m: &Map<String, Value>) -> SmpError {
    SmpError::Other(format!(
        "unknown patch type: {} in map: {}",
        kubecache::go::fmt::value(t),
        kubecache::go::fmt::value(&Value::Object(m.clone()))
    ))
}

fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    SmpError::Other(format!(
        "expected a {expected}, but received a {}",
        kubecache::go::fmt::type_name(actual)
    ))
}

/// What a JSON value is, as the merge compares types (`reflect.TypeOf`).
fn same_type(a: &Value, b: &Value) -> bool {
    kubecache::go::fmt::type_name(a) == kubecache::go::fmt::type_name(b)
}

/// Scalar equality as Go's `==` on decoded interfaces.
fn scalar_eq(a: &Value, b: &Value) -> bool {
    same_type(a, b) && a == b
}

struct Smp<'k> {
    kind: &'k str,
}

impl Smp<'_> {
    fn merge_key(&self, path: &[&str]) -> Option<&'static str> {
        list_merge_key(self.kind, path)
    }

    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<Map<String, Value>, SmpError> {
        if let Some(d) = patch.get(DIRECTIVE) {
            return match d.as_str() {
                Some("replace") => {
                    patch.shift_remove(DIRECTIVE);
                    Ok(patch)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(bad_patch_type(d, &patch)),
            };
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_orders(&mut original, &mut patch, path)?;
        for (k, patch_v) in patch {
            let (key, delete_list) = match k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                Some(rest) => match rest.strip_prefix('/') {
                    Some(key) => (key.to_string(), true),
                    None => return Err(BAD_PRIMITIVE_LIST),
                },
                None => (k, false),
            };
            if patch_v.is_null() {
                original.shift_remove(&key);
                continue;
            }
            let Some(orig_v) = original.get_mut(&key) else {
                original.insert(key, patch_v);
                continue;
            };
            if !same_type(orig_v, &patch_v) {
                *orig_v = patch_v;
                continue;
            }
            path.push(key.clone());
            let merged = match (std::mem::take(orig_v), patch_v) {
                (Value::Object(o), Value::Object(p)) => {
                    self.merge_map(o, p, path).map(Value::Object)
                }
                (Value::Array(o), Value::Array(p)) => {
                    let p_ref: Vec<&str> = path.iter().map(String::as_str).collect();
                    match self.merge_key(&p_ref) {
                        Some(mk) => self
                            .merge_slice(o, p, mk, delete_list, path)
                            .map(Value::Array),
                        None => Ok(Value::Array(p)),
                    }
                }
                (_, p) => Ok(p),
            };
            path.pop();
            *original.get_mut(&key).expect("present above") = merged?;
        }
        Ok(original)
    }

    /// `$setElementOrder/<list>`: merges that list now and orders it as the
    /// directive says, server-only items kept where they were.
    fn merge_set_element_orders(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<(), SmpError> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for key in keys {
            let order = patch.shift_remove(&key).unwrap_or(Value::Null);
            let Value::Array(order) = order else {
                return Err(bad_arg_type("[]interface {}", &order));
            };
            let list_key = match key[SET_ELEMENT_ORDER.len()..].strip_prefix('/') {
                Some(k) => k.to_string(),
                None => return Err(BAD_SET_ORDER),
            };
            let original_list = match original.get(&list_key) {
                Some(Value::Array(a)) => Some(a.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
                None => None,
            };
            let patch_list = match patch.get(&list_key) {
                Some(Value::Array(a)) => Some(a.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
                None => None,
            };
            path.push(list_key.clone());
            let p_ref: Vec<&str> = path.iter().map(String::as_str).collect();
            let merge_key = self.merge_key(&p_ref);
            let mk = merge_key.unwrap_or("");
            let result = (|| {
                validate_set_order(patch_list.as_deref().unwrap_or(&[]), &order, mk)?;
                let merged = match (&original_list, &patch_list) {
                    (Some(o), None) => o.clone(),
                    (None, Some(p)) => p.clone(),
                    (Some(o), Some(p)) => match merge_key {
                        Some(mk) => self.merge_slice(o.clone(), p.clone(), mk, false, path)?,
                        None => p.clone(),
                    },
                    (None, None) => return Ok(None),
                };
                let (in_order, server_only) = partition_by_presence(&merged, &order, mk)?;
                let elements: Vec<Value> = original_list
                    .iter()
                    .chain(patch_list.iter())
                    .flatten()
                    .cloned()
                    .collect();
                let is_map = element_type(&elements)?.is_object();
                let server_order = original_list.clone().unwrap_or_default();
                normalize_element_order(in_order, server_only, &order, &server_order, mk, is_map)
                    .map(Some)
            })();
            path.pop();
            if let Some(both) = result? {
                original.insert(list_key.clone(), Value::Array(both));
                patch.shift_remove(&list_key);
            }
        }
        Ok(())
    }

    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        merge_key: &str,
        delete_list: bool,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, SmpError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let all: Vec<Value> = original.iter().chain(patch.iter()).cloned().collect();
        let is_map = element_type(&all)?.is_object();
        let (original, merged, patch) = if !is_map {
            if delete_list {
                return Ok(original
                    .into_iter()
                    .filter(|v| !patch.iter().any(|d| scalar_eq(d, v)))
                    .collect());
            }
            let mut merged: Vec<Value> = Vec::new();
            for v in original.iter().chain(patch.iter()) {
                if !merged.iter().any(|m| scalar_eq(m, v)) {
                    merged.push(v.clone());
                }
            }
            (original, merged, patch)
        } else {
            if merge_key.is_empty() {
                return Err(SmpError::Other(format!(
                    "cannot merge lists without merge key for {}",
                    path.last().map(String::as_str).unwrap_or("")
                )));
            }
            let (original, patch) = merge_with_special_elements(original, patch, merge_key)?;
            let merged =
                self.merge_without_special_elements(original.clone(), &patch, merge_key, path)?;
            (original, merged, patch)
        };
        let mk = if is_map { merge_key } else { "" };
        let (in_patch, server_only) = partition_by_presence(&merged, &patch, mk)?;
        normalize_element_order(in_patch, server_only, &patch, &original, mk, is_map)
    }

    fn merge_without_special_elements(
        &self,
        mut original: Vec<Value>,
        patch: &[Value],
        merge_key: &str,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, SmpError> {
        for v in patch {
            let Value::Object(pv) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            let Some(value) = pv.get(merge_key) else {
                return Err(no_merge_key(pv, merge_key));
            };
            match find_by_key(&original, merge_key, value)? {
                Some(i) => {
                    let Value::Object(om) = std::mem::take(&mut original[i]) else {
                        unreachable!("find_by_key matches objects only");
                    };
                    original[i] = Value::Object(self.merge_map(om, pv.clone(), path)?);
                }
                None => original.push(v.clone()),
            }
        }
        Ok(original)
    }
}

/// `$retainKeys`: keys of the original not listed go; the patch may not
/// set any key outside the list.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(BAD_RETAIN_KEYS);
    };
    let kept = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !kept(k) {
            return Err(BAD_RETAIN_KEYS);
        }
    }
    original.retain(|k, _| kept(k));
    Ok(())
}

/// The type all items of the lists share (lists of lists refused).
fn element_type(items: &[Value]) -> Result<&Value, SmpError> {
    let Some(first) = items.first() else {
        return Err(SmpError::Other(
            "no elements in any of the given slices".into(),
        ));
    };
    if first.is_array() {
        return Err(SmpError::ListOfLists);
    }
    if items.iter().any(|v| !same_type(v, first)) {
        let lists: Vec<String> = items.iter().map(kubecache::go::fmt::value).collect();
        return Err(SmpError::Other(format!(
            "list element types are not identical: [{}]",
            lists.join(" ")
        )));
    }
    Ok(first)
}

/// Items of `patch` carrying `$patch: delete` remove the original's items
/// with the same key; a `$patch: replace` item makes the rest of the patch
/// the whole list.
fn merge_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patch {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type("map[string]interface {}", &v));
        };
        match m.get(DIRECTIVE) {
            None => plain.push(v),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let Some(value) = m.get(merge_key) else {
                        return Err(no_merge_key(m, merge_key));
                    };
                    while let Some(i) = find_by_key(&original, merge_key, value)? {
                        original.remove(i);
                    }
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(SmpError::Other(
                        "merging lists cannot yet be specified in the patch".into(),
                    ))
                }
                _ => return Err(bad_patch_type(d, m)),
            },
        }
    }
    if replace {
        Ok((plain, vec![]))
    } else {
        Ok((original, plain))
    }
}

fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, SmpError> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(SmpError::Other(format!("value for key {i} is not a map")));
        };
        if m.get(key).is_some_and(|have| scalar_eq(have, value)) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// The items of `list` that `by` names (by merge key, or by value for
/// scalars), and the others.
fn partition_by_presence(
    list: &[Value],
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut named = Vec::new();
    let mut others = Vec::new();
    for v in list {
        let found = if merge_key.is_empty() {
            by.iter().any(|b| scalar_eq(b, v))
        } else {
            let Value::Object(m) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            let Some(value) = m.get(merge_key) else {
                return Err(no_merge_key(m, merge_key));
            };
            find_by_key(by, merge_key, value)?.is_some()
        };
        if found {
            named.push(v.clone());
        } else {
            others.push(v.clone());
        }
    }
    Ok((named, others))
}

/// Where an item stands in `order`, by merge key or by value.
fn index_in(order: &[Value], item: &Value, merge_key: &str, is_map: bool) -> Option<usize> {
    let key = |v: &Value| -> Value {
        if is_map {
            v.get(merge_key).cloned().unwrap_or(Value::Null)
        } else {
            v.clone()
        }
    };
    let want = key(item);
    order.iter().position(|v| scalar_eq(&key(v), &want))
}

fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Result<Vec<Value>, SmpError> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, is_map)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, is_map)?;
    // Merge the two, server-only items first where both have a place in
    // the server's order and it puts them first.
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(patch.len() + server_only.len());
    while i < server_only.len() || j < patch.len() {
        if i >= server_only.len() {
            out.push(patch[j].clone());
            j += 1;
        } else if j >= patch.len() {
            out.push(server_only[i].clone());
            i += 1;
        } else {
            let li = index_in(server_order, &server_only[i], merge_key, is_map);
            let ri = index_in(server_order, &patch[j], merge_key, is_map);
            match (li, ri) {
                (Some(l), Some(r)) if l < r => {
                    out.push(server_only[i].clone());
                    i += 1;
                }
                _ => {
                    out.push(patch[j].clone());
                    j += 1;
                }
            }
        }
    }
    Ok(out)
}

/// Sorts `items` stably by their place in `order`; the comparison is Go's
/// (an item without a place counts as "less"), so it is reproduced with
/// the same insertion sort Go's `sort.SliceStable` runs on short lists.
fn normalize_slice_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Result<Vec<Value>, SmpError> {
    let (mut items, to_delete) = if is_map {
        for v in items.iter().chain(order.iter()) {
            let Value::Object(m) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        items
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
    } else {
        (items, vec![])
    };
    let less = |a: &Value, b: &Value| match (
        index_in(order, a, merge_key, is_map),
        index_in(order, b, merge_key, is_map),
    ) {
        (Some(x), Some(y)) => x < y,
        _ => true,
    };
    kubecache::go::sort::slice_stable(&mut items, less);
    items.extend(to_delete);
    Ok(items)
}

/// `$setElementOrder` must list the patch's items in the order they come.
fn validate_set_order(patch: &[Value], order: &[Value], merge_key: &str) -> Result<(), SmpError> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = if merge_key.is_empty() {
        patch.iter().collect()
    } else {
        let mut non_delete = Vec::new();
        for v in patch {
            let Value::Object(m) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                non_delete.push(v);
            }
        }
        non_delete
    };
    let (mut p, mut o) = (0, 0);
    while p < items.len() && o < order.len() {
        if items[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        let equal = if merge_key.is_empty() {
            scalar_eq(items[p], &order[o])
        } else {
            let (Value::Object(l), Value::Object(r)) = (items[p], &order[o]) else {
                return Err(bad_arg_type("map[string]interface {}", &order[o]));
            };
            match (l.get(merge_key), r.get(merge_key)) {
                (Some(a), Some(b)) => scalar_eq(a, b),
                (None, _) => return Err(no_merge_key(l, merge_key)),
                (_, None) => return Err(no_merge_key(r, merge_key)),
            }
        };
        if equal {
            p += 1;
        }
        o += 1;
    }
    if p < items.len() && o >= order.len() {
        return Err(SmpError::Other(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            kubecache::go::fmt::value(&Value::Array(patch.to_vec())),
            kubecache::go::fmt::value(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::cm;
    use super::super::{apply, PatchError, PatchType};
    use serde_json::json;

    #[test]
    fn a_strategic_patch_merges_keyed_lists_in_apimachinerys_order() {
        let pod = json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "1"}]}});
        let got = apply(
            PatchType::Strategic,
            "Pod",
            &pod,
            br#"{"spec":{"containers":[{"name":"b","image":"2"},{"name":"a","env":[{"name":"Z","value":"3"},{"name":"X","$patch":"delete"}]}]}}"#,
        )
        .unwrap();
        // Items the patch names come in its order; an item it adds comes
        // before the server's own where the server's order cannot place
        // both (apimachinery's mergeSortedSlice).
        assert_eq!(
            got["spec"]["containers"],
            json!([
                {"name": "b", "image": "2"},
                {"name": "a", "image": "1", "env": [{"name": "Z", "value": "3"}, {"name": "Y", "value": "2"}]}
            ])
        );
        // Unlisted lists are replaced whole.
        let got = apply(
            PatchType::Strategic,
            "Pod",
            &json!({"spec": {"tolerations": [{"key": "a"}]}}),
            br#"{"spec":{"tolerations":[{"key":"b"}]}}"#,
        )
        .unwrap();
        assert_eq!(got["spec"]["tolerations"], json!([{"key": "b"}]));
    }

    #[test]
    fn set_element_order_orders_a_merged_list_of_scalars() {
        let got = apply(
            PatchType::Strategic,
            "ConfigMap",
            &cm(),
            br#"{"metadata":{"$setElementOrder/finalizers":["y","z","x"],"finalizers":["z"]}}"#,
        )
        .unwrap();
        assert_eq!(got["metadata"]["finalizers"], json!(["y", "z", "x"]));
        let got = apply(
            PatchType::Strategic,
            "ConfigMap",
            &cm(),
            br#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}}"#,
        )
        .unwrap();
        assert_eq!(got["metadata"]["finalizers"], json!(["y"]));
    }

    #[test]
    fn strategic_errors_carry_gos_formatting_of_the_offending_map() {
        let pod = json!({"kind": "Pod", "spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            apply(
                PatchType::Strategic,
                "Pod",
                &pod,
                br#"{"spec":{"containers":[{"image":"x","ports":[1,2]}]}}"#
            ),
            Err(PatchError::Unknown(
                "map: map[image:x ports:[1 2]] does not contain declared merge key: name".into()
            ))
        );
        assert_eq!(
            apply(
                PatchType::Strategic,
                "Pod",
                &pod,
                br#"{"metadata":{"$patch":"merge"}}"#
            ),
            Ok(
                json!({"kind": "Pod", "spec": {"containers": [{"name": "a"}]}, "metadata": {"$patch": "merge"}})
            ),
            "a directive where there is nothing to merge into is kept, as Go keeps it"
        );
        assert_eq!(
            apply(
                PatchType::Strategic,
                "Pod",
                &pod,
                br#"{"spec":{"$retainKeys":"x"}}"#
            ),
            Err(PatchError::BadRequest(
                "invalid patch format of retainKeys".into()
            ))
        );
    }
}
