//! Field selectors (`k8s.io/apimachinery/pkg/fields`) and the per-type
//! selectable fields of the built-in kinds (each registry's `GetAttrs` and
//! its field-label conversion function).

use super::SelectorError;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub field: String,
    pub value: String,
    pub negate: bool,
}

/// A parsed field selector; empty selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<Term>,
}

/// Splits on unescaped commas, keeping escapes for `unescape`.
fn split_terms(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            out.last_mut().unwrap().push(c);
            escaped = false;
        } else if c == '\\' {
            out.last_mut().unwrap().push(c);
            escaped = true;
        } else if c == ',' {
            out.push(String::new());
        } else {
            out.last_mut().unwrap().push(c);
        }
    }
    out
}

fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    ))
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v: its number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ))
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(out)
}

impl FieldSelector {
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(input);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts.iter().filter(|p| !p.is_empty()) {
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(SelectorError::Field(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            let value = unescape(rhs).map_err(SelectorError::Field)?;
            terms.push(Term {
                field: lhs.to_string(),
                value,
                negate: op == "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// `get` yields a field's value; a field the object lacks reads as "".
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.terms.iter().all(|t| {
            let have = get(&t.field).unwrap_or("");
            (have == t.value) != t.negate
        })
    }

    /// Checks every field against the type's field-label conversion function
    /// and rewrites aliases (`spec.host` → `spec.nodeName`), like
    /// `FieldSelector.Transform(ConvertFieldLabel)`.
    pub fn convert(mut self, group: &str, kind: &str) -> Result<Self, SelectorError> {
        for t in &mut self.terms {
            t.field = convert_field_label(group, kind, &t.field)?;
        }
        Ok(self)
    }
}

/// The type-specific field labels of the built-in kinds; kinds not listed
/// use apimachinery's default (`metadata.name` and `metadata.namespace`).
fn type_fields(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    Some(match (group, kind) {
        ("", "Pod") => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("", "Node") => &["metadata.name", "spec.unschedulable"],
        ("", "Namespace") => &["status.phase", "metadata.name"],
        ("", "Secret") => &["type", "metadata.namespace", "metadata.name"],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ],
        ("", "ReplicationController") | ("apps", "ReplicaSet") => {
            &["metadata.name", "metadata.namespace", "status.replicas"]
        }
        ("batch", "Job") => &["metadata.name", "metadata.namespace", "status.successful"],
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            &["metadata.name", "spec.signerName"]
        }
        _ => return None,
    })
}

fn convert_field_label(group: &str, kind: &str, label: &str) -> Result<String, SelectorError> {
    match type_fields(group, kind) {
        Some(allowed) => {
            if group.is_empty() && kind == "Pod" && label == "spec.host" {
                return Ok("spec.nodeName".into());
            }
            if allowed.contains(&label) {
                Ok(label.to_string())
            } else {
                Err(SelectorError::Field(format!(
                    "field label not supported: {label}"
                )))
            }
        }
        None => match label {
            "metadata.name" | "metadata.namespace" => Ok(label.to_string()),
            _ => Err(SelectorError::Field(format!(
                "\"{label}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            ))),
        },
    }
}

fn str_at(obj: &Value, ptr: &str) -> String {
    match obj.pointer(ptr) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn int_at(obj: &Value, ptr: &str) -> String {
    obj.pointer(ptr)
        .and_then(Value::as_i64)
        .unwrap_or(0)
        .to_string()
}

/// Whether a kind has selectable fields beyond metadata, i.e. whether its
/// objects must be looked into when cached.
pub fn has_type_fields(group: &str, kind: &str) -> bool {
    type_fields(group, kind).is_some_and(|f| f.iter().any(|f| !f.starts_with("metadata.")))
}

/// The type-specific selectable fields of one object (metadata fields are
/// answered from the entry itself), as each registry's `ToSelectableFields`.
pub fn selectable_fields(group: &str, kind: &str, obj: &Value) -> Vec<(&'static str, String)> {
    match (group, kind) {
        ("", "Pod") => {
            let pod_ip = str_at(obj, "/status/podIPs/0/ip");
            vec![
                ("spec.nodeName", str_at(obj, "/spec/nodeName")),
                ("spec.restartPolicy", str_at(obj, "/spec/restartPolicy")),
                ("spec.schedulerName", str_at(obj, "/spec/schedulerName")),
                (
                    "spec.serviceAccountName",
                    str_at(obj, "/spec/serviceAccountName"),
                ),
                ("status.phase", str_at(obj, "/status/phase")),
                ("status.podIP", pod_ip),
                (
                    "status.nominatedNodeName",
                    str_at(obj, "/status/nominatedNodeName"),
                ),
            ]
        }
        ("", "Node") => {
            let unsched = obj
                .pointer("/spec/unschedulable")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            vec![("spec.unschedulable", unsched.to_string())]
        }
        ("", "Namespace") => vec![
            ("status.phase", str_at(obj, "/status/phase")),
            ("name", str_at(obj, "/metadata/name")),
        ],
        ("", "Secret") => vec![("type", str_at(obj, "/type"))],
        ("", "Event") => vec![
            ("involvedObject.kind", str_at(obj, "/involvedObject/kind")),
            (
                "involvedObject.namespace",
                str_at(obj, "/involvedObject/namespace"),
            ),
            ("involvedObject.name", str_at(obj, "/involvedObject/name")),
            ("involvedObject.uid", str_at(obj, "/involvedObject/uid")),
            (
                "involvedObject.apiVersion",
                str_at(obj, "/involvedObject/apiVersion"),
            ),
            (
                "involvedObject.resourceVersion",
                str_at(obj, "/involvedObject/resourceVersion"),
            ),
            (
                "involvedObject.fieldPath",
                str_at(obj, "/involvedObject/fieldPath"),
            ),
            ("reason", str_at(obj, "/reason")),
            ("reportingComponent", str_at(obj, "/reportingComponent")),
            ("source", str_at(obj, "/source/component")),
            ("type", str_at(obj, "/type")),
        ],
        ("", "ReplicationController") | ("apps", "ReplicaSet") => {
            vec![("status.replicas", int_at(obj, "/status/replicas"))]
        }
        ("batch", "Job") => vec![("status.successful", int_at(obj, "/status/succeeded"))],
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            vec![("spec.signerName", str_at(obj, "/spec/signerName"))]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |k| pairs.iter().find(|(kk, _)| *kk == k).map(|(_, v)| *v)
    }

    #[test]
    fn equality_and_inequality_terms() {
        let f = [("metadata.name", "a"), ("status.phase", "Running")];
        let s = FieldSelector::parse("metadata.name=a,status.phase!=Pending").unwrap();
        assert!(s.matches(fields(&f)));
        let s = FieldSelector::parse("status.phase==Pending").unwrap();
        assert!(!s.matches(fields(&f)));
    }

    #[test]
    fn a_missing_field_reads_as_empty() {
        let s = FieldSelector::parse("spec.nodeName=").unwrap();
        assert!(s.matches(fields(&[])));
        let s = FieldSelector::parse("spec.nodeName!=").unwrap();
        assert!(!s.matches(fields(&[])));
    }

    #[test]
    fn escaped_commas_and_equals_are_part_of_the_value() {
        let s = FieldSelector::parse("a=x\\,y\\=z").unwrap();
        assert_eq!(s.terms()[0].value, "x,y=z");
    }

    #[test]
    fn malformed_terms_are_rejected() {
        assert_eq!(
            FieldSelector::parse("abc").unwrap_err().to_string(),
            "invalid selector: 'abc'; can't understand 'abc'"
        );
        assert_eq!(
            FieldSelector::parse("a=b=c").unwrap_err().to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            FieldSelector::parse("a=\\q").unwrap_err().to_string(),
            "invalid field selector: invalid escape sequence: \\q"
        );
        assert!(FieldSelector::parse("a=b\\").is_err());
        assert!(FieldSelector::parse("a=\\q").is_err());
    }

    #[test]
    fn unsupported_fields_are_rejected_per_kind() {
        let s = FieldSelector::parse("spec.nodeName=n1").unwrap();
        assert!(s.clone().convert("", "Pod").is_ok());
        assert_eq!(
            s.clone().convert("", "ConfigMap").unwrap_err().to_string(),
            "\"spec.nodeName\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            s.convert("", "Node").unwrap_err().to_string(),
            "field label not supported: spec.nodeName"
        );
    }

    #[test]
    fn spec_host_is_an_alias_of_node_name_for_pods() {
        let s = FieldSelector::parse("spec.host=n1")
            .unwrap()
            .convert("", "Pod")
            .unwrap();
        assert_eq!(s.terms()[0].field, "spec.nodeName");
    }

    #[test]
    fn pod_fields_come_from_spec_and_status() {
        let pod = serde_json::json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}});
        let f = selectable_fields("", "Pod", &pod);
        assert!(f.contains(&("spec.nodeName", "n1".into())));
        assert!(f.contains(&("status.podIP", "10.0.0.1".into())));
        assert!(f.contains(&("spec.restartPolicy", String::new())));
    }

    #[test]
    fn job_and_replicaset_counts_default_to_zero() {
        let f = selectable_fields("batch", "Job", &serde_json::json!({}));
        assert_eq!(f, vec![("status.successful", "0".to_string())]);
    }
}
