//! JSON patches (RFC 6902) as evanphx/json-patch v4.9.0's `Patch.Apply`
//! applies them, within the apiserver's limit on operations: pointer
//! tokens unescaped as RFC 6901 says, negative array indices counting from
//! the end, a `replace` of a missing key adding it, and every operation
//! that does not apply answered alike.

use super::error::PatchError;
use kubecache::go::json::syntax_error as go_syntax_error;
use serde_json::{Map, Value};

/// The apiserver's limit on a JSON patch's operations.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

pub(super) fn json_patch(current: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let ops: Value = serde_json::from_slice(patch)
        .map_err(|e| PatchError::BadRequest(go_syntax_error(patch, &e)))?;
    let ops = match ops {
        Value::Null => vec![],
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                kubecache::go::json::kind(&other)
            )))
        }
    };
    let mut parsed = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            Value::Object(op) => parsed.push(op),
            Value::Null => parsed.push(Map::new()),
            other => {
                return Err(PatchError::BadRequest(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    kubecache::go::json::kind(&other)
                )))
            }
        }
    }
    if parsed.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            parsed.len()
        )));
    }
    let mut doc = current.clone();
    for op in &parsed {
        apply_operation(&mut doc, op).map_err(|_| PatchError::DoesNotApply)?;
    }
    Ok(doc)
}

/// Why an operation did not apply (the apiserver answers all alike).
#[derive(Debug)]
struct OpFailed;

fn op_string(op: &Map<String, Value>, field: &str) -> Result<String, OpFailed> {
    match op.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(OpFailed),
    }
}

fn apply_operation(doc: &mut Value, op: &Map<String, Value>) -> Result<(), OpFailed> {
    let kind = match op.get("op") {
        Some(Value::String(s)) => s.as_str(),
        _ => "unknown",
    };
    match kind {
        "add" => {
            let path = op_string(op, "path")?;
            let value = op.get("value").cloned().unwrap_or(Value::Null);
            let (parent, key) = find_parent(doc, &path)?;
            add(parent, &key, value)
        }
        "remove" => {
            let path = op_string(op, "path")?;
            let (parent, key) = find_parent(doc, &path)?;
            remove(parent, &key).map(drop)
        }
        "replace" => {
            let path = op_string(op, "path")?;
            let value = op.get("value").cloned().unwrap_or(Value::Null);
            let (parent, key) = find_parent(doc, &path)?;
            match parent {
                // A missing key is no error here: evanphx's get of an
                // absent key succeeds, and the set adds it.
                Value::Object(m) => {
                    m.insert(key, value);
                    Ok(())
                }
                Value::Array(a) => {
                    let i = array_index(a.len(), &key, false)?;
                    a[i] = value;
                    Ok(())
                }
                _ => Err(OpFailed),
            }
        }
        "move" | "copy" => {
            let from = op_string(op, "from")?;
            let (parent, key) = find_parent(doc, &from)?;
            // A copy of a missing key copies null (evanphx's get of an
            // absent key succeeds); a move of one fails in its remove.
            let value = if kind == "move" {
                remove(parent, &key)?
            } else {
                get(parent, &key)?.cloned().unwrap_or(Value::Null)
            };
            let path = op_string(op, "path")?;
            let (parent, key) = find_parent(doc, &path)?;
            add(parent, &key, value)
        }
        "test" => {
            let path = op_string(op, "path")?;
            let (parent, key) = find_parent(doc, &path)?;
            let have = get(parent, &key)?.filter(|v| !v.is_null());
            let want = op.get("value").filter(|v| !v.is_null());
            match (have, want) {
                (None, None) => Ok(()),
                (Some(h), Some(w)) if h == w => Ok(()),
                _ => Err(OpFailed),
            }
        }
        _ => Err(OpFailed),
    }
}

/// RFC 6901 unescaping of one reference token.
fn decode_token(t: &str) -> String {
    t.replace("~1", "/").replace("~0", "~")
}

/// The container a path's last token is in, and that token: every token
/// before it must name an existing object or array.
fn find_parent<'a>(doc: &'a mut Value, path: &str) -> Result<(&'a mut Value, String), OpFailed> {
    let mut tokens: Vec<&str> = path.split('/').collect();
    if tokens.len() < 2 {
        return Err(OpFailed);
    }
    let last = decode_token(tokens.pop().unwrap_or_default());
    let mut at = doc;
    for t in &tokens[1..] {
        let t = decode_token(t);
        at = match at {
            Value::Object(m) => m.get_mut(&t).ok_or(OpFailed)?,
            Value::Array(a) => {
                let i: usize = t.parse().map_err(|_| OpFailed)?;
                a.get_mut(i).ok_or(OpFailed)?
            }
            _ => return Err(OpFailed),
        };
        if !(at.is_object() || at.is_array()) {
            return Err(OpFailed);
        }
    }
    Ok((at, last))
}

/// An index into an array of `len` items; negative ones count from the end
/// (evanphx's SupportNegativeIndices). `adding` allows one past the end.
fn array_index(len: usize, key: &str, adding: bool) -> Result<usize, OpFailed> {
    let i: i64 = key.parse().map_err(|_| OpFailed)?;
    let bound = if adding { len + 1 } else { len } as i64;
    let i = if i < 0 { i + bound } else { i };
    if (0..bound).contains(&i) {
        Ok(i as usize)
    } else {
        Err(OpFailed)
    }
}

fn get<'a>(parent: &'a Value, key: &str) -> Result<Option<&'a Value>, OpFailed> {
    match parent {
        Value::Object(m) => Ok(m.get(key)),
        Value::Array(a) => {
            let i: i64 = key.parse().map_err(|_| OpFailed)?;
            usize::try_from(i)
                .ok()
                .and_then(|i| a.get(i))
                .map(Some)
                .ok_or(OpFailed)
        }
        _ => Err(OpFailed),
    }
}

fn add(parent: &mut Value, key: &str, value: Value) -> Result<(), OpFailed> {
    match parent {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(a) if key == "-" => {
            a.push(value);
            Ok(())
        }
        Value::Array(a) => {
            let i = array_index(a.len(), key, true)?;
            a.insert(i, value);
            Ok(())
        }
        _ => Err(OpFailed),
    }
}

fn remove(parent: &mut Value, key: &str) -> Result<Value, OpFailed> {
    match parent {
        Value::Object(m) => m.shift_remove(key).ok_or(OpFailed),
        Value::Array(a) => {
            let i = array_index(a.len(), key, false)?;
            Ok(a.remove(i))
        }
        _ => Err(OpFailed),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::cm;
    use super::super::{apply, PatchError, PatchType};
    use serde_json::json;

    #[test]
    fn json_patch_tokens_unescape_and_negative_indices_count_from_the_end() {
        let got = apply(
            PatchType::Json,
            "ConfigMap",
            &cm(),
            br#"[{"op":"add","path":"/data/a~1b~0c","value":"1"},{"op":"remove","path":"/metadata/finalizers/-1"},{"op":"add","path":"/metadata/finalizers/-","value":"z"}]"#,
        )
        .unwrap();
        assert_eq!(got["data"]["a/b~c"], "1");
        assert_eq!(got["metadata"]["finalizers"], json!(["x", "z"]));
    }

    #[test]
    fn a_json_patch_that_does_not_apply_changes_nothing_and_says_so_generically() {
        for ops in [
            &br#"[{"op":"remove","path":"/data/none"}]"#[..],
            br#"[{"op":"add","path":"/metadata/finalizers/5","value":"z"}]"#,
            br#"[{"op":"test","path":"/data/k","value":"other"}]"#,
            br#"[{"op":"add","path":"","value":1}]"#,
            br#"[{"path":"/data/k"}]"#,
        ] {
            assert_eq!(
                apply(PatchType::Json, "ConfigMap", &cm(), ops),
                Err(PatchError::DoesNotApply),
                "{}",
                String::from_utf8_lossy(ops)
            );
        }
        assert_eq!(
            apply(PatchType::Json, "ConfigMap", &cm(), br#"{"op":"add"}"#),
            Err(PatchError::BadRequest(
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into()
            ))
        );
    }

    #[test]
    fn a_json_patch_of_more_operations_than_the_apiserver_takes_is_too_large() {
        let op = r#"{"op":"test","path":"/data/k","value":"v"}"#;
        let ops = |n: usize| format!("[{}]", vec![op; n].join(","));
        assert!(apply(PatchType::Json, "ConfigMap", &cm(), ops(10_000).as_bytes()).is_ok());
        assert_eq!(
            apply(PatchType::Json, "ConfigMap", &cm(), ops(10_001).as_bytes()),
            Err(PatchError::TooLarge(
                "The allowed maximum operations in a JSON patch is 10000, got 10001".into()
            ))
        );
    }
}
