//! Fuzzing the parsers that take client or upstream input: selectors,
//! continue tokens, query strings, request paths, objects, lists and watch
//! events from the upstream. Whatever the input, they answer Ok or Err —
//! never a panic — and what they accept behaves. These run with every
//! `cargo test`; the coverage-guided fuzz targets of the same parsers
//! (AFL++) are in `fuzz/`, and `fuzz/run --proptest` runs these at a
//! million cases each.

#[path = "../fuzz/src/protobuf_round_trip.rs"]
mod protobuf_round_trip;

use kubecache::encode::codec::{ListStyle, TypeCodec};
use kubecache::request::{ContinueToken, ListOptions, ResourcePath};
use kubecache::selector::field::FieldRules;
use kubecache::selector::{FieldSelector, LabelSelector};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Strings built from the characters selectors are made of, so that the
/// fuzzer reaches past the first token.
fn selectorish() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r"[a-z0-9A-Z./_\-=!,() \\<>inotexs]{0,48}").unwrap()
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map("[a-z]{1,3}", "[a-z0-9]{0,3}", 0..4)
}

const POD: &str = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"42","labels":{"app":"web"}},"spec":{"nodeName":"n1","restartPolicy":"Always"},"status":{"phase":"Running","podIPs":[{"ip":"10.0.0.1"}]}}"#;

/// Cases per property: `default` in `cargo test`, or
/// `KUBECACHE_FUZZ_CASES` for a long run.
fn cases(default: u32) -> u32 {
    match std::env::var("KUBECACHE_FUZZ_CASES") {
        Ok(n) => n
            .parse()
            .expect("KUBECACHE_FUZZ_CASES is a number of cases"),
        Err(_) => default,
    }
}

fn pod_codec(style: ListStyle) -> TypeCodec {
    TypeCodec::new("", "v1", "Pod", true, style)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(2000), ..ProptestConfig::default() })]

    #[test]
    fn label_selectors_parse_or_refuse_and_match_without_panicking(
        s in prop_oneof![selectorish(), any::<String>()],
        l in labels(),
    ) {
        if let Ok(sel) = LabelSelector::parse(&s) {
            let _ = sel.matches(|k| l.get(k).map(String::as_str));
        }
    }

    #[test]
    fn field_selectors_parse_convert_and_match_without_panicking(
        s in prop_oneof![selectorish(), any::<String>()],
        kind in prop_oneof![Just("Pod"), Just("Node"), Just("ConfigMap"), Just("Event")],
        l in labels(),
    ) {
        if let Ok(sel) = FieldSelector::parse(&s) {
            for rules in [
                FieldRules::BuiltIn { group: "", version: "v1", kind },
                FieldRules::Custom { namespaced: true },
            ] {
                if let Ok(sel) = sel.clone().convert(rules) {
                    let _ = sel.matches(|k| l.get(k).map(String::as_str));
                }
            }
        }
    }

    #[test]
    fn continue_tokens_decode_or_refuse(s in prop_oneof![any::<String>(), "[A-Za-z0-9_=+/-]{0,80}"]) {
        let _ = ContinueToken::decode(&s);
    }

    #[test]
    fn tokens_the_cache_writes_decode_to_where_the_walk_stopped(
        rv in 1i64..i64::MAX,
        key in "[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?(/[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?)?",
    ) {
        let t = ContinueToken::after(rv, &key);
        let back = ContinueToken::decode(&t.encode()).unwrap();
        prop_assert_eq!(back, t);
    }

    #[test]
    fn query_strings_parse_and_validate_without_panicking(
        q in prop_oneof![
            any::<String>(),
            proptest::collection::vec(
                (
                    prop_oneof![Just("resourceVersion"), Just("resourceVersionMatch"), Just("limit"),
                                Just("continue"), Just("labelSelector"), Just("fieldSelector"),
                                Just("watch"), Just("timeoutSeconds"), Just("allowWatchBookmarks"),
                                Just("sendInitialEvents")],
                    "[0-9a-zA-Z%=&-]{0,12}",
                ),
                0..6,
            ).prop_map(|kv| kv.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")),
        ],
    ) {
        let o = ListOptions::parse(Some(&q));
        let _ = o.validate_list();
        let _ = o.list_mode();
        let _ = o.get_mode();
    }

    #[test]
    fn request_paths_parse_without_panicking(
        p in prop_oneof![any::<String>(), "(/[a-z0-9.]{0,8}){0,9}/?"],
    ) {
        let _ = ResourcePath::parse(&p);
    }

    /// Upstream bytes: a real pod with one byte changed, or anything.
    #[test]
    fn objects_from_the_upstream_decode_or_refuse(
        at in 0..POD.len(),
        byte in any::<u8>(),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut b = POD.as_bytes().to_vec();
        b[at] = byte;
        for style in [ListStyle::Typed, ListStyle::Unstructured] {
            let c = pod_codec(style);
            if let Ok(e) = c.from_object(&b) {
                let _ = c.object_bytes(&e);
            }
            let _ = c.from_object(&noise);
        }
    }

    #[test]
    fn lists_from_the_upstream_decode_or_refuse(
        at in 0..200usize,
        byte in any::<u8>(),
    ) {
        let list = format!(r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"42","continue":"x"}},"items":[{POD},{POD}]}}"#);
        let mut b = list.into_bytes();
        let at = at % b.len();
        b[at] = byte;
        let _ = pod_codec(ListStyle::Typed).parse_list(&b);
        let _ = ListStyle::detect(&b);
    }

    /// A watch line: a real event with one byte changed, or anything.
    #[test]
    fn watch_lines_from_the_upstream_decode_or_refuse(
        ty in prop_oneof![Just("ADDED"), Just("MODIFIED"), Just("DELETED"), Just("BOOKMARK"), Just("ERROR")],
        at in 0..400usize,
        byte in any::<u8>(),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        use kubecache::reflector::{decode_event, WatchLine};
        let line = format!(r#"{{"type":"{ty}","object":{POD}}}"#);
        let mut b = line.into_bytes();
        let at = at % b.len();
        b[at] = byte;
        for style in [ListStyle::Typed, ListStyle::Unstructured] {
            let c = pod_codec(style);
            if let Ok(WatchLine::Change(_, e)) = decode_event(&c, &b) {
                let _ = c.object_bytes(&e);
            }
            let _ = decode_event(&c, &noise);
        }
    }

    #[test]
    fn accept_headers_negotiate_or_refuse_without_panicking(
        header in "[a-zA-Z*/;=,. 0-9qé\\-]{0,60}",
        protobuf in any::<bool>(),
    ) {
        use kubecache::request::accept;
        // (goautoneg's order is not by q alone: a concrete type outranks a
        // wildcard of higher q, so only the absence of panics is checked.)
        let clauses = accept::parse(&header);
        prop_assert!(clauses.len() <= header.matches(',').count() + 1);
        let a = accept::Accept::new(Some(&header));
        let _ = a.negotiate(accept::Endpoint::resource(protobuf));
        let _ = a.negotiate(accept::Endpoint::ERRORS);
        let _ = a.restful_accepts(accept::Endpoint::resource(protobuf));
        let _ = a.negotiate(accept::Endpoint::JSON_ONLY_RESOURCE);
        let _ = a.restful_accepts(accept::Endpoint::JSON_ONLY_RESOURCE);
    }
}

/// Keys the printers and paths read, so generated objects reach past the
/// first lookup.
const KEYS: &[&str] = &[
    "metadata",
    // Keys the pretty layout treats apart.
    "managedFields",
    "fieldsV1",
    "items",
    "rows",
    "object",
    "data",
    "extra",
    "openAPIV3Schema",
    "properties",
    "enum",
    "subresources",
    "name",
    "namespace",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
    "annotations",
    "ownerReferences",
    "spec",
    "status",
    "containers",
    "initContainers",
    "containerStatuses",
    "initContainerStatuses",
    "state",
    "waiting",
    "terminated",
    "running",
    "reason",
    "exitCode",
    "signal",
    "restartCount",
    "ready",
    "phase",
    "conditions",
    "type",
    "selector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "replicas",
    "ports",
    "port",
    "nodePort",
    "protocol",
    "subsets",
    "addresses",
    "ip",
    "loadBalancer",
    "ingress",
    "hostname",
    "rules",
    "host",
    "tls",
    "hosts",
    "capacity",
    "storage",
    "accessModes",
    "claimRef",
    "template",
    "nodeSelector",
    "subjects",
    "roleRef",
    "hard",
    "used",
    "webhooks",
    "lastTimestamp",
    "firstTimestamp",
    "eventTime",
    "series",
    "count",
    "involvedObject",
    "regarding",
    "source",
    "component",
    "startTime",
    "completionTime",
    "schedule",
    "suspend",
    "active",
    "lastScheduleTime",
    "nodeInfo",
    // Autoscalers (all three versions, and v1's annotations).
    "scaleTargetRef",
    "minReplicas",
    "maxReplicas",
    "currentReplicas",
    "targetCPUUtilizationPercentage",
    "currentCPUUtilizationPercentage",
    "autoscaling.alpha.kubernetes.io/metrics",
    "autoscaling.alpha.kubernetes.io/current-metrics",
    "metrics",
    "currentMetrics",
    "resource",
    "containerResource",
    "pods",
    "object",
    "external",
    "target",
    "current",
    "value",
    "averageValue",
    "averageUtilization",
    "targetValue",
    "targetAverageValue",
    "targetAverageUtilization",
    "currentValue",
    "currentAverageValue",
    "currentAverageUtilization",
    // Pod security policies, flow control, API services.
    "privileged",
    "allowedCapabilities",
    "volumes",
    "seLinux",
    "runAsUser",
    "rule",
    "readOnlyRootFilesystem",
    "priorityLevelConfiguration",
    "matchingPrecedence",
    "distinguisherMethod",
    "limited",
    "assuredConcurrencyShares",
    "limitResponse",
    "queuing",
    "queues",
    "handSize",
    "queueLengthLimit",
    "service",
];

/// JSON values whose object keys come from `KEYS`.
fn object_like() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-zA-Z0-9:.<>&/ -]{0,12}".prop_map(Value::from),
        Just(Value::from("2026-01-01T00:00:00Z")),
        Just(Value::from("0001-01-01T00:00:00Z")),
        // What autoscaling/v1 keeps in annotations: JSON lists of metrics.
        Just(Value::from("null")),
        Just(Value::from(
            r#"[{"type":"Pods","pods":{"metricName":"q","targetAverageValue":"1"}},null,{"type":"Resource"}]"#
        )),
        Just(Value::from(
            r#"[{"type":"External","external":{"currentValue":5}}]"#
        )),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..6).prop_map(
                |kvs| Value::Object(kvs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(300)))]

    #[test]
    fn every_printer_prints_any_object_without_panicking(obj in object_like()) {
        use kubecache::encode::personality::Personality;
        use kubecache::encode::print::Printer;
        for (personality, columns) in [
            (Personality::V1_20, include_str!("../src/encode/print/columns.json")),
            (Personality::NEWEST, include_str!("../src/encode/print/columns_v1_36.json")),
        ] {
            let file: serde_json::Value = serde_json::from_str(columns).unwrap();
            for gvr in file["printed"].as_object().unwrap().keys() {
                let p: Vec<&str> = gvr.split('/').collect();
                if let Some(printer) = Printer::builtin(personality, p[0], p[1], p[2]) {
                    let row = printer.row_of(&obj).to_json(0);
                    prop_assert!(row.starts_with("\"cells\":["), "{}", row);
                }
            }
        }
    }

    #[test]
    fn custom_resource_columns_parse_or_refuse_and_print_without_panicking(
        // (Characters past ASCII too: escaped, they once panicked.)
        path in r"[.a-z\[\]*?@()=!<>'0-9:, \\ƀ耀-]{0,40}",
        ty in proptest::sample::select(&["string", "integer", "number", "boolean", "date", "other"][..]),
        obj in object_like(),
    ) {
        use kubecache::encode::print::{jsonpath::CustomColumn, RowBuilder};
        let def = serde_json::json!({"name": "c", "type": ty, "jsonPath": path});
        if let Ok((_, col)) = CustomColumn::parse(&def) {
            // Twice: a path can keep state between evaluations.
            for _ in 0..2 {
                let mut r = RowBuilder::default();
                col.cell(&obj, &mut r);
                prop_assert_eq!(r.cells(), 1);
            }
        }
    }

    #[test]
    fn pretty_layout_only_adds_whitespace_and_never_panics(
        obj in object_like(),
        raw_data in any::<bool>(),
        junk in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        use kubecache::encode::pretty::indent;
        let compact = serde_json::to_vec(&obj).unwrap();
        let pretty = indent(&compact, raw_data).unwrap();
        // Against the compact form re-read, as serde_json's float parsing
        // is not exact.
        let back: serde_json::Value = serde_json::from_slice(&pretty).unwrap();
        let want: serde_json::Value = serde_json::from_slice(&compact).unwrap();
        prop_assert_eq!(back, want);
        // Upstream garbage is copied, not parsed into a panic.
        let _ = indent(&junk, raw_data);
        let mut cut = compact.clone();
        cut.truncate(junk.len().min(cut.len()));
        let _ = indent(&cut, raw_data);
    }

    #[test]
    fn timestamps_parse_or_refuse(s in prop_oneof![
        any::<String>(),
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{0,12})?(Z|[+-][0-9]{2}:[0-9]{2})",
    ]) {
        use kubecache::go::time;
        if let Some(t) = time::parse_rfc3339(&s) {
            let _ = time::human_duration(time::now().saturating_sub(t));
        }
    }
}

/// Kinds whose messages the transcoder is fuzzed against.
const PROTOBUF_KINDS: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Service"),
    ("v1", "Secret"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ControllerRevision"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("v1", "Status"),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(1000)))]

    #[test]
    fn objects_transcode_to_protobuf_or_refuse_without_panicking(
        obj in object_like(),
        raw in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        use kubecache::encode::protobuf::object_message;
        let text = serde_json::to_vec(&obj).unwrap();
        for (v, k) in PROTOBUF_KINDS {
            let _ = object_message(v, k, &text);
            let _ = object_message(v, k, &raw);
        }
    }
}

/// A decoded protobuf message, if it decodes: transcoded back, it decodes
/// to the same JSON.
fn decodes_and_transcodes_back(api_version: &str, kind: &str, message: &[u8]) {
    if let Ok(obj) = kubecache::encode::protobuf::decode_message(api_version, kind, message) {
        protobuf_round_trip::decodes_again(api_version, kind, &obj);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(500)))]

    #[test]
    fn protobuf_bodies_decode_or_are_refused_without_panicking(
        obj in object_like(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in any::<usize>(),
        raw in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        use kubecache::encode::protobuf::{decode_object, envelope, object_message};
        let text = serde_json::to_vec(&obj).unwrap();
        for (v, k) in PROTOBUF_KINDS {
            // A message the transcoder wrote (of an empty object if the
            // kind refuses this one), bytes flipped and maybe cut short.
            let mut m = object_message(v, k, &text)
                .or_else(|_| object_message(v, k, b"{}"))
                .unwrap();
            for (i, b) in &flips {
                let n = m.len();
                if n > 0 {
                    m[i % n] ^= b;
                }
            }
            if cut % 4 == 0 && !m.is_empty() {
                m.truncate(cut % m.len());
            }
            decodes_and_transcodes_back(v, k, &m);
            decodes_and_transcodes_back(v, k, &raw);
            let _ = decode_object(&envelope(v, k, &m));
            let _ = decode_object(&raw);
        }
    }
}

#[test]
fn deeply_nested_protobuf_is_refused_by_the_decoder_without_exhausting_the_stack() {
    use kubecache::encode::protobuf::{decode_message, DecodeError};
    // A CRD schema's `not` (28) in `not`, 5,000 deep, in a CRD's first
    // version's schema.
    let mut props = Vec::new();
    for _ in 0..5_000 {
        let mut outer = Vec::with_capacity(props.len() + 8);
        prost::encoding::encode_key(28, prost::encoding::WireType::LengthDelimited, &mut outer);
        prost::encoding::encode_varint(props.len() as u64, &mut outer);
        outer.extend_from_slice(&props);
        props = outer;
    }
    let field = |n: u32, b: &[u8]| {
        let mut out = Vec::new();
        prost::encoding::encode_key(n, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(b.len() as u64, &mut out);
        out.extend_from_slice(b);
        out
    };
    // CRD{spec = 2{versions = 7{schema = 4{openAPIV3Schema = 1}}}}.
    let crd = field(2, &field(7, &field(4, &field(1, &props))));
    let e = decode_message("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd);
    assert_eq!(e, Err(DecodeError::TooDeep));
}

#[test]
fn deeply_nested_objects_are_refused_by_the_transcoder_without_exhausting_the_stack() {
    use kubecache::encode::protobuf::object_message;
    // A CRD's schema nests schemas in `properties`, as deep as it goes.
    let schema = |depth: usize| {
        format!(
            r#"{{"spec":{{"versions":[{{"name":"v1","schema":{{"openAPIV3Schema":{}{{}}{}}}}}]}}}}"#,
            r#"{"properties":{"a":"#.repeat(depth),
            "}}".repeat(depth)
        )
    };
    let crd = |doc: &str| {
        object_message(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            doc.as_bytes(),
        )
    };
    assert!(crd(&schema(20)).is_ok());
    assert!(crd(&schema(20000)).is_err());
    let deep = format!(
        r#"{{"metadata":{{"annotations":{{"a":{}1{}}}}}}}"#,
        "[".repeat(20000),
        "]".repeat(20000)
    );
    assert!(object_message("v1", "Pod", deep.as_bytes()).is_err());
}

#[test]
fn deeply_nested_json_paths_do_not_exhaust_the_stack() {
    use kubecache::encode::print::jsonpath::CustomColumn;
    for path in [
        format!(".a{}", "[?(@".repeat(5000)),
        "(".repeat(10000),
        format!("{}x", "..".repeat(5000)),
        "[".repeat(10000),
    ] {
        let def = serde_json::json!({"name": "c", "type": "string", "jsonPath": path});
        let _ = CustomColumn::parse(&def);
    }
}

/// Keys a patch of a pod meets: fields with merge keys, directives, and
/// JSON patch operations' own.
const PATCH_KEYS: &[&str] = &[
    "metadata",
    "labels",
    "finalizers",
    "ownerReferences",
    "uid",
    "name",
    "spec",
    "containers",
    "env",
    "ports",
    "containerPort",
    "image",
    "status",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$setElementOrder/finalizers",
    "$deleteFromPrimitiveList/finalizers",
    "$deleteFromPrimitiveListfinalizers",
    "op",
    "path",
    "from",
    "value",
];

fn patch_like() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..90).prop_map(Value::from),
        prop_oneof![
            Just("replace"),
            Just("delete"),
            Just("merge"),
            Just("add"),
            Just("remove"),
            Just("move"),
            Just("copy"),
            Just("test"),
            Just("app"),
            Just("/spec/containers/0/env/-"),
            Just("/spec/containers/-1"),
            Just("/metadata/labels/a~1b"),
            Just("/metadata/finalizers/0"),
            Just(""),
            Just("/"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(PATCH_KEYS), inner), 0..5)
                .prop_map(|kvs| Value::Object(
                    kvs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
        ]
    })
}

fn a_pod() -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x", "y"],
            "ownerReferences": [{"uid": "u1", "name": "o"}]},
        "spec": {"containers": [
            {"name": "app", "image": "i", "env": [{"name": "A", "value": "1"}],
             "ports": [{"containerPort": 80}]},
            {"name": "side", "image": "j"}]},
        "status": {"phase": "Running"}})
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(1000)))]

    #[test]
    fn patches_of_every_type_apply_or_refuse_without_panicking(
        patch in patch_like(),
        raw in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        use kubecache_sim::patch::{apply, PatchType};
        let pod = a_pod();
        let body = serde_json::to_vec(&patch).unwrap();
        for ty in [PatchType::Merge, PatchType::Json, PatchType::Strategic] {
            if let Ok(out) = apply(ty, "Pod", &pod, &body) {
                prop_assert!(out.is_object());
            }
            let _ = apply(ty, "Pod", &pod, &raw);
        }
    }
}

#[test]
fn deeply_nested_patches_are_refused_without_exhausting_the_stack() {
    use kubecache_sim::patch::{apply, PatchType};
    let deep = format!("{}1{}", r#"{"spec":"#.repeat(20_000), "}".repeat(20_000));
    let ops = format!(
        r#"[{{"op":"add","path":"/x","value":{}1{}}}]"#,
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    for ty in [PatchType::Merge, PatchType::Json, PatchType::Strategic] {
        assert!(apply(ty, "Pod", &a_pod(), deep.as_bytes()).is_err());
        assert!(apply(ty, "Pod", &a_pod(), ops.as_bytes()).is_err());
    }
}
