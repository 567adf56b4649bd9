//! What a PATCH does to a simulated object: JSON merge patches (RFC 7386),
//! JSON patches (RFC 6902) and strategic merge patches, each as the v1.20
//! apiserver applies them — evanphx/json-patch v4.9.0 for the first two,
//! apimachinery's `strategicpatch` for the third — with the errors it
//! answers, quirks included (a JSON patch `replace` of a missing key adds
//! it; negative array indices count from the end).
//!
//! The apiserver applies a patch to its typed object and decodes the result
//! into the type again, which drops unknown fields and puts fields in the
//! struct's order; the simulator has no schema, so the patched JSON is kept
//! as it is (keys a patch adds to an object come after the ones it had).

use crate::selector::field::go_quote;
use serde_json::{Map, Value};
use std::fmt::Write;

/// The patch formats the simulator takes, by `Content-Type`. Server-side
/// apply (`application/apply-patch+yaml`) is not simulated: it gets the 415
/// an apiserver without the ServerSideApply feature answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
}

impl PatchType {
    /// The media type before any `;` parameters, as the apiserver reads it.
    pub fn from_content_type(header: Option<&str>) -> Option<PatchType> {
        let media = header.unwrap_or("");
        let media = media.split_once(';').map_or(media, |(m, _)| m);
        match media {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            _ => None,
        }
    }
}

/// How a patch failed, in the apiserver's terms; the HTTP edge turns each
/// into its `Status`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// 400 BadRequest: a patch that does not decode.
    #[error("{0}")]
    BadRequest(String),
    /// 422 Invalid with the generic message: a JSON patch that does not
    /// apply (the apiserver drops the library's own words).
    #[error("the server rejected our request due to an error in our request")]
    DoesNotApply,
    /// 422 Invalid, field `patch`: the patched document is not an object.
    #[error("patch: Invalid value: {0}")]
    NotAnObject(String),
    /// 413: more JSON patch operations than the apiserver takes.
    #[error("{0}")]
    TooLarge(String),
    /// An error the apiserver passes on untranslated: 500, no reason.
    #[error("{0}")]
    Unknown(String),
}

/// The apiserver's limit on a JSON patch's operations.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Applies `patch` to `current` and returns the patched object.
pub fn apply(
    ty: PatchType,
    kind: &str,
    current: &Value,
    patch: &[u8],
) -> Result<Value, PatchError> {
    let patched = match ty {
        PatchType::Merge => merge_patch(current, patch)?,
        PatchType::Json => json_patch(current, patch)?,
        PatchType::Strategic => strategic_patch(kind, current, patch)?,
    };
    if patched.is_object() {
        Ok(patched)
    } else {
        let js = serde_json::to_string(&patched).unwrap_or_default();
        Err(PatchError::NotAnObject(format!(
            "{}: couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            go_quote(&js),
            go_json_kind(&patched),
        )))
    }
}

/// How Go's encoding/json names a JSON value's type in its errors.
fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's encoding/json error for input that is not JSON: the offending
/// character where serde stopped, with the Go scanner's words for what it
/// was looking for there. Errors inside strings and literals (Go names
/// the literal) fall back to "looking for beginning of value".
fn go_syntax_error(input: &[u8], e: &serde_json::Error) -> String {
    if e.is_eof() || input.iter().all(u8::is_ascii_whitespace) {
        return "unexpected end of JSON input".to_string();
    }
    // serde counts lines from 1 and columns from 1 within them, in bytes.
    let line_start: usize = input
        .split(|b| *b == b'\n')
        .take(e.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    let at = (line_start + e.column().saturating_sub(1)).min(input.len() - 1);
    let c = input[at] as char;
    let message = e.to_string();
    let looking = if message.starts_with("expected `:`") {
        "after object key"
    } else if message.starts_with("expected `,` or `}`") {
        "after object key:value pair"
    } else if message.starts_with("expected `,` or `]`") {
        "after array element"
    } else if message.starts_with("key must be a string") {
        "looking for beginning of object key string"
    } else if message.starts_with("trailing characters") {
        "after top-level value"
    } else {
        "looking for beginning of value"
    };
    let quoted = match c {
        '\'' => "'\\''".to_string(),
        c if c.is_ascii_graphic() || c == ' ' => format!("'{c}'"),
        '\n' => "'\\n'".to_string(),
        '\t' => "'\\t'".to_string(),
        '\r' => "'\\r'".to_string(),
        c => format!("'\\x{:02x}'", c as u32),
    };
    format!("invalid character {quoted} {looking}")
}

// ---------------------------------------------------------------------------
// JSON merge patch (evanphx MergePatch)

fn merge_patch(current: &Value, patch: &[u8]) -> Result<Value, PatchError> {
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

// ---------------------------------------------------------------------------
// JSON patch (evanphx Patch.Apply)

fn json_patch(current: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let ops: Value = serde_json::from_slice(patch)
        .map_err(|e| PatchError::BadRequest(go_syntax_error(patch, &e)))?;
    let ops = match ops {
        Value::Null => vec![],
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_json_kind(&other)
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
                    go_json_kind(&other)
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

// ---------------------------------------------------------------------------
// Strategic merge patch (apimachinery strategicpatch, applying side)

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// How a list field of a simulated type merges: by a key of its items, or
/// (an empty key) as a set of scalars; lists not named here are replaced
/// whole. From k8s.io/api's `patchStrategy:"merge"` tags.
const POD_SPEC_LISTS: [(&str, &str); 7] = [
    ("volumes", "name"),
    ("initContainers", "name"),
    ("containers", "name"),
    ("ephemeralContainers", "name"),
    ("imagePullSecrets", "name"),
    ("hostAliases", "ip"),
    ("topologySpreadConstraints", "topologyKey"),
];

/// The merged lists of every kind of container.
const CONTAINER_LISTS: [(&str, &str); 4] = [
    ("ports", "containerPort"),
    ("env", "name"),
    ("volumeMounts", "mountPath"),
    ("volumeDevices", "devicePath"),
];

/// The merge key of the list at `path` (field names from the object's
/// root; list items add no step) in an object of `kind`: `Some("")` for a
/// merged list of scalars, `None` for a list replaced whole.
fn list_merge_key(kind: &str, path: &[&str]) -> Option<&'static str> {
    let find = |table: &[(&str, &'static str)], name: &str| {
        table.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    };
    let meta = |p: &[&str]| match p {
        ["ownerReferences"] => Some("uid"),
        ["finalizers"] => Some(""),
        _ => None,
    };
    let pod_spec = |p: &[&str]| match p {
        [list] => find(&POD_SPEC_LISTS, list),
        ["containers" | "initContainers" | "ephemeralContainers", list] => {
            find(&CONTAINER_LISTS, list)
        }
        _ => None,
    };
    match (kind, path) {
        (_, ["metadata", rest @ ..]) => meta(rest),
        ("Pod", ["spec", rest @ ..]) => pod_spec(rest),
        ("Pod", ["status", "conditions"]) => Some("type"),
        ("Pod", ["status", "podIPs"]) => Some("ip"),
        ("Node", ["spec", "podCIDRs"]) => Some(""),
        ("Node", ["status", "conditions" | "addresses"]) => Some("type"),
        ("Namespace", ["status", "conditions"]) => Some("type"),
        ("Service", ["spec", "ports"]) => Some("port"),
        ("Deployment", ["spec", "template", "metadata", rest @ ..]) => meta(rest),
        ("Deployment", ["spec", "template", "spec", rest @ ..]) => pod_spec(rest),
        ("Deployment", ["status", "conditions"]) => Some("type"),
        _ => None,
    }
}

fn strategic_patch(kind: &str, current: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let patch: Value = serde_json::from_slice(patch)
        .map_err(|e| PatchError::BadRequest(go_syntax_error(patch, &e)))?;
    let patch = match patch {
        Value::Object(p) => p,
        Value::Null => Map::new(),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_json_kind(&other)
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
        go_v(&Value::Object(m.clone()))
    ))
}

fn bad_patch_type(t: &Value, m: &Map<String, Value>) -> SmpError {
    SmpError::Other(format!(
        "unknown patch type: {} in map: {}",
        go_v(t),
        go_v(&Value::Object(m.clone()))
    ))
}

/// Go's `reflect.TypeOf` name of a decoded JSON value, for "expected a …".
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    SmpError::Other(format!(
        "expected a {expected}, but received a {}",
        go_type(actual)
    ))
}

/// Go's `%v` of a decoded JSON value: maps sorted by key.
fn go_v(v: &Value) -> String {
    let mut out = String::new();
    write_go_v(&mut out, v);
    out
}

fn write_go_v(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go_v(out, v);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go_v(out, &m[k]);
            }
            out.push(']');
        }
    }
}

/// What a JSON value is, as the merge compares types (`reflect.TypeOf`).
fn same_type(a: &Value, b: &Value) -> bool {
    go_type(a) == go_type(b)
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
        let lists: Vec<String> = items.iter().map(go_v).collect();
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
    go_slice_stable(&mut items, less);
    items.extend(to_delete);
    Ok(items)
}

/// Go's `sort.SliceStable`: insertion sort over blocks of 20, then
/// symmerge; with a consistent `less` any stable sort agrees, and the
/// insertion sort reproduces Go's answers for the inconsistent one above
/// on lists of up to 20 items.
fn go_slice_stable(items: &mut [Value], less: impl Fn(&Value, &Value) -> bool) {
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && less(&items[j], &items[j - 1]) {
            items.swap(j, j - 1);
            j -= 1;
        }
    }
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
            go_v(&Value::Array(patch.to_vec())),
            go_v(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm() -> Value {
        json!({"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"},
            "finalizers": ["x", "y"]}, "data": {"k": "v"}})
    }

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

    #[test]
    fn syntax_errors_are_worded_as_gos_scanner_words_them() {
        let err = |body: &str| match apply(PatchType::Strategic, "Pod", &cm(), body.as_bytes()) {
            Err(PatchError::BadRequest(m)) => m,
            other => panic!("{body}: {other:?}"),
        };
        assert_eq!(err(""), "unexpected end of JSON input");
        assert_eq!(err(r#"{"a":"#), "unexpected end of JSON input");
        assert_eq!(
            err("x"),
            "invalid character 'x' looking for beginning of value"
        );
        assert_eq!(err(r#"{"a" 1}"#), "invalid character '1' after object key");
        assert_eq!(
            err(r#"{"a":1 "b":2}"#),
            "invalid character '\"' after object key:value pair"
        );
        assert_eq!(
            err(r#"{1:2}"#),
            "invalid character '1' looking for beginning of object key string"
        );
        assert_eq!(err("{}\n x"), "invalid character 'x' after top-level value");
        assert_eq!(
            err(r#"{"a":[1 2]}"#),
            "invalid character '2' after array element"
        );
        assert_eq!(err("{\"a\":1\t\n\n"), "unexpected end of JSON input");
        assert_eq!(
            err("\u{1}"),
            "invalid character '\\x01' looking for beginning of value"
        );
        assert_eq!(
            err("\n\n {\"a\"\t}"),
            "invalid character '}' after object key"
        );
    }

    #[test]
    fn the_content_type_names_the_patch_type_before_its_parameters() {
        assert_eq!(
            PatchType::from_content_type(Some("application/merge-patch+json; charset=utf-8")),
            Some(PatchType::Merge)
        );
        assert_eq!(
            PatchType::from_content_type(Some("application/apply-patch+yaml")),
            None
        );
        assert_eq!(PatchType::from_content_type(None), None);
    }
}
