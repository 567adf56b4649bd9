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
    /// and rewrites labels to the names its objects' field sets use
    /// (`spec.host` → `spec.nodeName`, `regarding.kind` →
    /// `involvedObject.kind`), like `FieldSelector.Transform(ConvertFieldLabel)`.
    pub fn convert(mut self, rules: FieldRules<'_>) -> Result<Self, SelectorError> {
        for t in &mut self.terms {
            t.field = rules.convert(&t.field)?;
        }
        Ok(self)
    }
}

/// Which field-label conversion a type's requests go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRules<'a> {
    /// A built-in type, as the request names it: conversion functions are
    /// registered per group, version and kind.
    BuiltIn {
        group: &'a str,
        version: &'a str,
        kind: &'a str,
    },
    /// A custom resource (apiextensions' converter): `metadata.name`, and
    /// `metadata.namespace` when namespaced.
    Custom { namespaced: bool },
}

/// How a conversion function words a label it does not know.
#[derive(Clone, Copy)]
enum Refusal {
    /// `field label not supported: LABEL`
    Plain,
    /// `field label "LABEL" not supported for SUBJECT`
    For(&'static str),
}

/// A registered conversion: request label → field-set name, and its refusal.
type Conversion = (&'static [(&'static str, &'static str)], Refusal);

const fn same(l: &'static str) -> (&'static str, &'static str) {
    (l, l)
}

const POD: &[(&str, &str)] = &[
    same("metadata.name"),
    same("metadata.namespace"),
    same("spec.nodeName"),
    same("spec.restartPolicy"),
    same("spec.schedulerName"),
    same("spec.serviceAccountName"),
    same("status.phase"),
    same("status.podIP"),
    same("status.podIPs"),
    same("status.nominatedNodeName"),
    // Old v1 clients' name for the node.
    ("spec.host", "spec.nodeName"),
];
const CORE_EVENT: &[(&str, &str)] = &[
    same("involvedObject.kind"),
    same("involvedObject.namespace"),
    same("involvedObject.name"),
    same("involvedObject.uid"),
    same("involvedObject.apiVersion"),
    same("involvedObject.resourceVersion"),
    same("involvedObject.fieldPath"),
    same("reason"),
    same("reportingComponent"),
    same("source"),
    same("type"),
    same("metadata.namespace"),
    same("metadata.name"),
];
/// events.k8s.io names mapped onto the core Event's field set.
const EVENTS_API_EVENT: &[(&str, &str)] = &[
    same("reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    same("type"),
    same("metadata.namespace"),
    same("metadata.name"),
];
const NODE: &[(&str, &str)] = &[same("metadata.name"), same("spec.unschedulable")];
const REPLICATION_CONTROLLER: &[(&str, &str)] = &[
    same("metadata.name"),
    same("metadata.namespace"),
    same("status.replicas"),
];
const NAMESPACE: &[(&str, &str)] = &[same("status.phase"), same("metadata.name")];
const SECRET: &[(&str, &str)] = &[
    same("type"),
    same("metadata.namespace"),
    same("metadata.name"),
];
const CSR: &[(&str, &str)] = &[same("metadata.name"), same("spec.signerName")];
const JOB: &[(&str, &str)] = &[
    same("metadata.name"),
    same("metadata.namespace"),
    same("status.successful"),
];

/// The conversion functions registered in kube-apiserver v1.20's scheme
/// (`pkg/apis/*/*/conversion.go`) for the versions it serves. Kinds not
/// listed use `DefaultMetaV1FieldSelectorConversion`; note apps/v1
/// ReplicaSet has none (only its retired beta versions did).
fn conversion(group: &str, version: &str, kind: &str) -> Option<Conversion> {
    use Refusal::*;
    Some(match (group, version, kind) {
        ("", "v1", "Pod") => (POD, Plain),
        ("", "v1", "Node") => (NODE, Plain),
        ("", "v1", "ReplicationController") => (REPLICATION_CONTROLLER, Plain),
        ("", "v1", "Event") => (CORE_EVENT, Plain),
        ("", "v1", "Namespace") => (NAMESPACE, Plain),
        ("", "v1", "Secret") => (SECRET, Plain),
        ("events.k8s.io", "v1" | "v1beta1", "Event") => (EVENTS_API_EVENT, Plain),
        ("batch", "v1", "Job") => (JOB, For("batchv1.Job")),
        ("batch", "v1beta1", "Job") => (JOB, For("\"Job\"")),
        ("batch", "v1beta1", "JobTemplate") => (JOB, For("\"JobTemplate\"")),
        ("batch", "v1beta1", "CronJob") => (JOB, For("\"CronJob\"")),
        ("certificates.k8s.io", "v1" | "v1beta1", "CertificateSigningRequest") => (CSR, Plain),
        _ => return None,
    })
}

impl FieldRules<'_> {
    fn convert(self, label: &str) -> Result<String, SelectorError> {
        let refuse = |how: Refusal| {
            Err(SelectorError::Field(match how {
                Refusal::Plain => format!("field label not supported: {label}"),
                Refusal::For(subject) => {
                    format!(
                        "field label {} not supported for {subject}",
                        crate::go::strconv::quote(label)
                    )
                }
            }))
        };
        match self {
            FieldRules::Custom { namespaced } => match label {
                "metadata.name" => Ok(label.into()),
                "metadata.namespace" if namespaced => Ok(label.into()),
                _ => refuse(Refusal::Plain),
            },
            FieldRules::BuiltIn {
                group,
                version,
                kind,
            } => match conversion(group, version, kind) {
                Some((labels, how)) => match labels.iter().find(|(l, _)| *l == label) {
                    Some((_, to)) => Ok((*to).into()),
                    None => refuse(how),
                },
                None => match label {
                    "metadata.name" | "metadata.namespace" => Ok(label.into()),
                    _ => Err(SelectorError::Field(format!(
                        "\"{label}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                    ))),
                },
            },
        }
    }
}

/// How one selectable field is read from the object's JSON (pointers into
/// the served version).
#[derive(Debug, Clone, Copy)]
pub enum Read {
    /// A string (a bool or number as Go prints it); missing is "".
    Str(&'static str),
    /// An integer; missing is 0.
    Int(&'static str),
    /// A bool; missing is false.
    Bool(&'static str),
    /// The first pointer's string, or the second's when that is empty.
    StrOr(&'static str, &'static str),
}

impl Read {
    fn value(self, obj: &Value) -> String {
        match self {
            Read::Str(p) => str_at(obj, p),
            Read::Int(p) => at(obj, p).and_then(Value::as_i64).unwrap_or(0).to_string(),
            Read::Bool(p) => at(obj, p)
                .and_then(Value::as_bool)
                .unwrap_or(false)
                .to_string(),
            Read::StrOr(p, q) => Some(str_at(obj, p))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| str_at(obj, q)),
        }
    }

    /// The pointers it reads.
    pub fn pointers(self) -> impl Iterator<Item = &'static str> {
        let (p, q) = match self {
            Read::Str(p) | Read::Int(p) | Read::Bool(p) => (p, None),
            Read::StrOr(p, q) => (p, Some(q)),
        };
        std::iter::once(p).chain(q)
    }
}

/// `Value::pointer` without its unescaping, which allocated for every
/// token of every field of every object taken in (the table's pointers have
/// no escapes).
fn at<'v>(obj: &'v Value, ptr: &str) -> Option<&'v Value> {
    ptr.split('/').skip(1).try_fold(obj, |v, token| match v {
        Value::Object(m) => m.get(token),
        Value::Array(a) => a.get(token.parse::<usize>().ok()?),
        _ => None,
    })
}

fn str_at(obj: &Value, ptr: &str) -> String {
    match at(obj, ptr) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// The core Event's field set, whichever API version the object came in
/// (`events.k8s.io` names the same things differently).
macro_rules! event_fields {
    ($involved:literal, $reporting:literal, $source:literal) => {
        &[
            (
                "involvedObject.kind",
                Read::Str(concat!($involved, "/kind")),
            ),
            (
                "involvedObject.namespace",
                Read::Str(concat!($involved, "/namespace")),
            ),
            (
                "involvedObject.name",
                Read::Str(concat!($involved, "/name")),
            ),
            ("involvedObject.uid", Read::Str(concat!($involved, "/uid"))),
            (
                "involvedObject.apiVersion",
                Read::Str(concat!($involved, "/apiVersion")),
            ),
            (
                "involvedObject.resourceVersion",
                Read::Str(concat!($involved, "/resourceVersion")),
            ),
            (
                "involvedObject.fieldPath",
                Read::Str(concat!($involved, "/fieldPath")),
            ),
            ("reason", Read::Str("/reason")),
            ("reportingComponent", Read::Str($reporting)),
            (
                "source",
                Read::StrOr(concat!($source, "/component"), $reporting),
            ),
            ("type", Read::Str("/type")),
        ]
    };
}

/// A kind's type-specific field set (metadata fields are answered from the
/// entry itself), as its registry's `ToSelectableFields` builds it from the
/// internal object.
pub fn field_table(group: &str, kind: &str) -> &'static [(&'static str, Read)] {
    match (group, kind) {
        ("", "Pod") => &[
            ("spec.nodeName", Read::Str("/spec/nodeName")),
            ("spec.restartPolicy", Read::Str("/spec/restartPolicy")),
            ("spec.schedulerName", Read::Str("/spec/schedulerName")),
            (
                "spec.serviceAccountName",
                Read::Str("/spec/serviceAccountName"),
            ),
            ("status.phase", Read::Str("/status/phase")),
            ("status.podIP", Read::Str("/status/podIPs/0/ip")),
            (
                "status.nominatedNodeName",
                Read::Str("/status/nominatedNodeName"),
            ),
        ],
        ("", "Node") => &[("spec.unschedulable", Read::Bool("/spec/unschedulable"))],
        ("", "Namespace") => &[
            ("status.phase", Read::Str("/status/phase")),
            ("name", Read::Str("/metadata/name")),
        ],
        ("", "Secret") => &[("type", Read::Str("/type"))],
        ("", "Event") => event_fields!("/involvedObject", "/reportingComponent", "/source"),
        ("events.k8s.io", "Event") => {
            event_fields!("/regarding", "/reportingController", "/deprecatedSource")
        }
        ("", "ReplicationController") => &[("status.replicas", Read::Int("/status/replicas"))],
        ("batch", "Job") => &[("status.successful", Read::Int("/status/succeeded"))],
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            &[("spec.signerName", Read::Str("/spec/signerName"))]
        }
        _ => &[],
    }
}

/// Whether a kind's objects have selectable fields beyond metadata, i.e.
/// whether they must be looked into when cached.
pub fn has_type_fields(group: &str, kind: &str) -> bool {
    !field_table(group, kind).is_empty()
}

/// The type-specific field set of one object, read from the served
/// version's JSON.
pub fn selectable_fields(group: &str, kind: &str, obj: &Value) -> Vec<(&'static str, String)> {
    field_table(group, kind)
        .iter()
        .map(|(name, read)| (*name, read.value(obj)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(kind: &str) -> FieldRules<'_> {
        FieldRules::BuiltIn {
            group: "",
            version: "v1",
            kind,
        }
    }

    fn refusal(selector: &str, rules: FieldRules) -> String {
        FieldSelector::parse(selector)
            .unwrap()
            .convert(rules)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn apps_v1_replicasets_have_no_conversion_function_in_v1_20() {
        let rs = FieldRules::BuiltIn {
            group: "apps",
            version: "v1",
            kind: "ReplicaSet",
        };
        assert_eq!(
            refusal("status.replicas=1", rs),
            "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert!(FieldSelector::parse("status.replicas=1")
            .unwrap()
            .convert(core("ReplicationController"))
            .is_ok());
    }

    #[test]
    fn each_conversion_function_words_its_refusal_its_own_way() {
        let batch = |version, kind| FieldRules::BuiltIn {
            group: "batch",
            version,
            kind,
        };
        assert_eq!(
            refusal("spec.x=1", batch("v1", "Job")),
            "field label \"spec.x\" not supported for batchv1.Job"
        );
        assert_eq!(
            refusal("spec.x=1", batch("v1beta1", "CronJob")),
            "field label \"spec.x\" not supported for \"CronJob\""
        );
        assert_eq!(
            refusal("metadata.namespace=x", core("Namespace")),
            "field label not supported: metadata.namespace"
        );
    }

    #[test]
    fn custom_resources_select_by_name_and_namespace_when_namespaced() {
        let ns = FieldRules::Custom { namespaced: true };
        let cluster = FieldRules::Custom { namespaced: false };
        assert!(FieldSelector::parse("metadata.namespace=a,metadata.name=b")
            .unwrap()
            .convert(ns)
            .is_ok());
        assert_eq!(
            refusal("metadata.namespace=a", cluster),
            "field label not supported: metadata.namespace"
        );
        assert_eq!(
            refusal("spec.size=1", ns),
            "field label not supported: spec.size"
        );
    }

    #[test]
    fn events_api_names_map_onto_the_core_event_field_set() {
        let rules = FieldRules::BuiltIn {
            group: "events.k8s.io",
            version: "v1",
            kind: "Event",
        };
        let s = FieldSelector::parse("regarding.kind=Pod,reportingController=kubelet")
            .unwrap()
            .convert(rules)
            .unwrap();
        let fields: Vec<&str> = s.terms().iter().map(|t| t.field.as_str()).collect();
        assert_eq!(fields, vec!["involvedObject.kind", "reportingComponent"]);
        assert_eq!(
            refusal("source=x", rules),
            "field label not supported: source"
        );
        let ev = serde_json::json!({"regarding": {"kind": "Pod", "name": "p"}, "reportingController": "kubelet", "reason": "Started"});
        let f = selectable_fields("events.k8s.io", "Event", &ev);
        assert!(f.contains(&("involvedObject.kind", "Pod".into())));
        assert!(f.contains(&("reportingComponent", "kubelet".into())));
        // No deprecated source: the reporting controller stands in.
        assert!(f.contains(&("source", "kubelet".into())));
    }

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
        assert!(s.clone().convert(core("Pod")).is_ok());
        assert_eq!(
            s.clone().convert(core("ConfigMap")).unwrap_err().to_string(),
            "\"spec.nodeName\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            s.convert(core("Node")).unwrap_err().to_string(),
            "field label not supported: spec.nodeName"
        );
    }

    #[test]
    fn spec_host_is_an_alias_of_node_name_for_pods() {
        let s = FieldSelector::parse("spec.host=n1")
            .unwrap()
            .convert(core("Pod"))
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
    fn job_counts_default_to_zero() {
        let f = selectable_fields("batch", "Job", &serde_json::json!({}));
        assert_eq!(f, vec![("status.successful", "0".to_string())]);
    }
}
