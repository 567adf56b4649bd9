//! JSON merge patches (RFC 7386) as evanphx/json-patch v4.9.0's
//! `MergePatch` applies them: a null deletes its key, nulls are pruned
//! from the values a patch adds, and a patch that is neither an object nor
//! an array fails with the library's "Invalid JSON Patch".

use super::error::PatchError;
use serde_json::{Map, Value};

pub(super) fn merge_patch(current: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let bad = || PatchError::Unknown("Invalid JSON Patch".to_string());
    let patch: Value = serde_json::from_slice(patch).map_err(|_| bad())?;
    match patch {
        Value::Object(p) => {
            let mut doc = current.clone();
            if let Value::Object(d) = &mut doc {
                merge_docs(d, p);
            }
            Ok(doc)
        }
        // A top-level array replaces the document (nulls pruned); it then
        // fails to decode as an object.
        Value::Array(mut a) => {
            prune_array_nulls(&mut a);
            Ok(Value::Array(a))
        }
        _ => Err(bad()),
    }
}

fn merge_docs(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (k, v) in patch {
        if v.is_null() {
            doc.remove(&k);
            continue;
        }
        match doc.get_mut(&k) {
            Some(cur) if !cur.is_null() => merge_value(cur, v),
            _ => {
                let mut v = v;
                prune_nulls(&mut v);
                doc.insert(k, v);
            }
        }
    }
}

fn merge_value(cur: &mut Value, patch: Value) {
    match (cur, patch) {
        (Value::Object(c), Value::Object(p)) => merge_docs(c, p),
        // Not an object now: the patch value replaces it, nulls pruned.
        (
            cur @ Value::Array(_)
            | cur @ Value::Bool(_)
            | cur @ Value::Number(_)
            | cur @ Value::String(_),
            mut p,
        ) => {
            prune_nulls(&mut p);
            *cur = p;
        }
        // An object patched with a non-object: replaced as it is.
        (cur, p) => *cur = p,
    }
}

fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(prune_nulls);
        }
        Value::Array(a) => prune_array_nulls(a),
        _ => {}
    }
}

fn prune_array_nulls(a: &mut Vec<Value>) {
    a.retain(|v| !v.is_null());
    a.iter_mut().for_each(prune_nulls);
}

#[cfg(test)]
mod tests {
    use super::super::tests::cm;
    use super::super::{apply, PatchError, PatchType};
    use serde_json::json;

    #[test]
    fn a_merge_patch_deletes_nulls_and_prunes_them_from_new_values() {
        let got = apply(
            PatchType::Merge,
            "ConfigMap",
            &cm(),
            br#"{"metadata":{"labels":{"a":null}},"data":{"k":{"n":null,"m":1}},"new":{"z":null,"w":[null,2]}}"#,
        )
        .unwrap();
        assert_eq!(got["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(got["data"]["k"], json!({"m": 1}));
        assert_eq!(got["new"], json!({"w": [2]}));
    }

    #[test]
    fn a_merge_patch_that_is_not_an_object_fails_as_evanphx_does() {
        for bad in [&b"\"s\""[..], b"null", b"{", b"1"] {
            assert_eq!(
                apply(PatchType::Merge, "ConfigMap", &cm(), bad),
                Err(PatchError::Unknown("Invalid JSON Patch".into())),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(matches!(
            apply(PatchType::Merge, "ConfigMap", &cm(), b"[1]"),
            Err(PatchError::NotAnObject(m)) if m.starts_with("\"[1]\": couldn't get version/kind")
        ));
    }
}
