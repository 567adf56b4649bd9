//! One fuzz target per parser that reads client or upstream input. Each
//! takes any bytes and asserts what a parser that never panics must also
//! hold: it answers Ok or Err, and what it accepts behaves (printed back
//! and parsed again it is the same; decoded objects are served as they
//! came). A panic or a failed assertion is a crash for AFL++.
//!
//! Inputs of several parts (a selector and the labels it is matched
//! against, say) are split on newlines, so the seed corpora under
//! `fuzz/corpus/<target>/` stay readable.

mod protobuf_round_trip;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use kubecache::encode::codec::{ListStyle, TypeCodec};
use kubecache::reflector::{decode_event, urlencode, WatchLine};
use kubecache::request::accept::{self, Accept, Conversion, Endpoint, Media};
use kubecache::request::options::pretty_print;
use kubecache::request::{ContinueToken, ListOptions, Request, ResourcePath};
use kubecache::selector::field::FieldRules;
use kubecache::selector::{FieldSelector, LabelSelector};
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// A fuzz target: any bytes in, a panic for what must not happen.
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/run` and the replayer call them.
pub const TARGETS: &[(&str, Target)] = &[
    ("request", request),
    ("accept", accept),
    ("label_selector", label_selector),
    ("field_selector", field_selector),
    ("continue_token", continue_token),
    ("watch_event", watch_event),
    ("list", list),
    ("protobuf", protobuf),
    ("protobuf_decode", protobuf_decode),
    ("jsonpath", jsonpath),
    ("patch", patch),
];

pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// `key=value` lines: labels, or an object's selectable fields.
fn pairs(lines: &str) -> BTreeMap<&str, &str> {
    lines.lines().filter_map(|l| l.split_once('=')).collect()
}

/// A request line's target (`/path?query`), then `Name: value` headers,
/// one a line: first the path and query parsers alone on any text, then
/// the whole request as hyper hands it over.
pub fn request(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (target, headers) = text.split_once('\n').unwrap_or((text, ""));
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let resource = ResourcePath::parse(path);
    if let Some(r) = &resource {
        let _ = r.is_namespace_object();
        // One trailing slash is ignored, as the apiserver's splitPath does.
        if !path.ends_with('/') {
            assert_eq!(ResourcePath::parse(&format!("{path}/")).as_ref(), Some(r));
        }
    }
    let options = ListOptions::parse(query);
    let _ = options.validate_list();
    let _ = options.validate_watch();
    let _ = options.list_mode();
    let _ = options.get_mode();
    let _ = options.watch_from();
    if options.unparsed.is_empty() {
        let printed = print_options(&options);
        assert_eq!(
            ListOptions::parse(Some(&printed)),
            options,
            "{printed:?} parsed differently"
        );
    }
    let mut map = HeaderMap::new();
    for line in headers.lines() {
        if let Some((k, v)) = line.split_once(':') {
            if let (Ok(k), Ok(v)) = (
                HeaderName::from_bytes(k.trim().as_bytes()),
                HeaderValue::from_str(v.trim()),
            ) {
                map.append(k, v);
            }
        }
    }
    let ua = map
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let _ = pretty_print(query, ua);
    if let Ok(uri) = Uri::try_from(target) {
        for method in [Method::GET, Method::POST, Method::DELETE] {
            let r = Request::parse(&method, &uri, &map);
            let _ = r.shape();
            let _ = r.resource_name();
        }
    }
}

/// The query string `ListOptions::parse` reads as `o` (its known options,
/// each once, form-encoded).
fn print_options(o: &ListOptions) -> String {
    let mut pairs: Vec<(&str, String)> = Vec::new();
    let mut put = |k, v: &str| pairs.push((k, v.to_string()));
    if let Some(v) = &o.resource_version {
        put("resourceVersion", v);
    }
    if let Some(v) = &o.resource_version_match {
        put("resourceVersionMatch", v);
    }
    if o.limit != 0 {
        put("limit", &o.limit.to_string());
    }
    if let Some(v) = &o.continue_token {
        put("continue", v);
    }
    if let Some(v) = &o.include_object {
        put("includeObject", v);
    }
    if !o.label_selector.is_empty() {
        put("labelSelector", &o.label_selector);
    }
    if !o.field_selector.is_empty() {
        put("fieldSelector", &o.field_selector);
    }
    if o.watch {
        put("watch", "true");
    }
    if o.allow_watch_bookmarks {
        put("allowWatchBookmarks", "true");
    }
    if let Some(b) = o.send_initial_events {
        put("sendInitialEvents", &b.to_string());
    }
    if let Some(n) = o.timeout_seconds {
        put("timeoutSeconds", &n.to_string());
    }
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

const ENDPOINTS: [Endpoint; 5] = [
    Endpoint::ERRORS,
    Endpoint::JSON_ONLY_RESOURCE,
    Endpoint::JSON_ONLY_ERRORS,
    Endpoint {
        protobuf: true,
        conversions: true,
        serializers: &Media::ALL,
    },
    Endpoint {
        protobuf: false,
        conversions: true,
        serializers: &Media::ALL,
    },
];

/// An Accept header's bytes.
pub fn accept(data: &[u8]) {
    if let Ok(v) = HeaderValue::from_bytes(data) {
        let a = Accept::from_header(Some(&v));
        match v.to_str() {
            Ok(text) => assert_eq!(a, Accept::new(Some(text))),
            Err(_) => assert!(a.is_unreadable()),
        }
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let clauses = accept::parse(text);
    assert!(clauses.len() <= text.matches(',').count() + 1);
    let a = Accept::new(Some(text));
    for ep in ENDPOINTS {
        let _ = a.restful_accepts(ep);
        let Some(n) = a.negotiate(ep) else {
            continue;
        };
        assert!(ep.serializers.contains(&n.media), "{n:?} from {ep:?}");
        if n.conversion.is_none() && n.media == Media::Protobuf {
            assert!(ep.protobuf, "protobuf where there is none: {ep:?}");
        }
        if !ep.conversions {
            assert_eq!(n.conversion, None);
        }
        if matches!(n.conversion, Some(Conversion::Table(_))) {
            assert_ne!(n.media, Media::Protobuf);
        }
    }
}

/// Two selectors, a line each, then the labels (`key=value` lines) they
/// are matched against.
pub fn label_selector(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(3, '\n');
    let a = lines.next().unwrap_or("");
    let b = lines.next().unwrap_or("");
    let labels = pairs(lines.next().unwrap_or(""));
    let get = |k: &str| labels.get(k).copied();
    let (Ok(sa), Ok(sb)) = (LabelSelector::parse(a), LabelSelector::parse(b)) else {
        return;
    };
    // A selector is its requirements, comma-separated: two that parse,
    // joined, parse and select what both select.
    if !sa.is_empty() && !sb.is_empty() {
        let joined = format!("{a},{b}");
        let both = LabelSelector::parse(&joined)
            .unwrap_or_else(|e| panic!("{joined:?} is refused ({e}) but its parts are not"));
        assert_eq!(both.matches(get), sa.matches(get) && sb.matches(get));
    }
}

/// Kinds whose field-label conversions differ.
const FIELD_KINDS: &[(&str, &str, &str)] = &[
    ("", "v1", "Pod"),
    ("", "v1", "Node"),
    ("", "v1", "Event"),
    ("", "v1", "Secret"),
    ("", "v1", "Namespace"),
    ("", "v1", "ConfigMap"),
    ("apps", "v1", "ReplicaSet"),
    ("batch", "v1", "Job"),
    ("events.k8s.io", "v1", "Event"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
];

/// A field selector's line, then the object's fields (`key=value` lines).
pub fn field_selector(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (line, rest) = text.split_once('\n').unwrap_or((text, ""));
    let fields = pairs(rest);
    let get = |k: &str| fields.get(k).copied();
    let Ok(sel) = FieldSelector::parse(line) else {
        return;
    };
    let matched = sel.matches(get);
    // Printed back with its values escaped, it is the same selector.
    let printed = sel
        .terms()
        .iter()
        .map(|t| {
            let op = if t.negate { "!=" } else { "=" };
            let mut value = String::new();
            for c in t.value.chars() {
                if matches!(c, '\\' | ',' | '=') {
                    value.push('\\');
                }
                value.push(c);
            }
            format!("{}{op}{value}", t.field)
        })
        .collect::<Vec<_>>()
        .join(",");
    let again = FieldSelector::parse(&printed)
        .unwrap_or_else(|e| panic!("{printed:?}, printed from {line:?}, is refused: {e}"));
    let mut want = sel.terms().to_vec();
    let mut got = again.terms().to_vec();
    let order = |t: &kubecache::selector::field::Term| (t.field.clone(), t.value.clone(), t.negate);
    want.sort_by_key(order);
    got.sort_by_key(order);
    assert_eq!(got, want, "{printed:?}, printed from {line:?}");
    assert_eq!(again.matches(get), matched);
    for &(group, version, kind) in FIELD_KINDS {
        let rules = [
            FieldRules::BuiltIn {
                group,
                version,
                kind,
            },
            FieldRules::Custom { namespaced: true },
            FieldRules::Custom { namespaced: false },
        ];
        for r in rules {
            if let Ok(c) = sel.clone().convert(r) {
                let _ = c.matches(get);
            }
        }
    }
}

/// A continue token as a client sends it; or, after a first byte `{`,
/// the JSON inside one (so the fuzzer reaches past base64).
pub fn continue_token(data: &[u8]) {
    let token = match data.first() {
        Some(b'{') => URL_SAFE_NO_PAD.encode(data),
        _ => match std::str::from_utf8(data) {
            Ok(t) => t.to_string(),
            Err(_) => return,
        },
    };
    if let Ok(t) = ContinueToken::decode(&token) {
        // What the cache accepts, it writes back the same; but for a start
        // key of "/" alone (the prefix's first key, `start` ""), which the
        // cache never writes and the apiserver refuses once its "/" is gone.
        if !t.start.is_empty() {
            assert_eq!(ContinueToken::decode(&t.encode()), Ok(t));
        }
    }
}

/// The codecs upstream objects are decoded with: namespaced and cluster
/// scoped, typed (the apiserver's built-in lists) and unstructured
/// (custom resources).
fn codecs() -> [TypeCodec; 4] {
    [
        TypeCodec::new("", "v1", "Pod", true, ListStyle::Typed),
        TypeCodec::new("", "v1", "Pod", true, ListStyle::Unstructured),
        TypeCodec::new("", "v1", "Node", false, ListStyle::Typed),
        TypeCodec::new(
            "example.com",
            "example.com/v1",
            "Widget",
            true,
            ListStyle::Unstructured,
        ),
    ]
}

/// A JSON watch stream, an event a line, as the reflector splits it.
pub fn watch_event(data: &[u8]) {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        object: &'a RawValue,
    }
    for codec in codecs() {
        for line in data.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match decode_event(&codec, line) {
                Ok(WatchLine::Change(_, entry)) => {
                    let raw: Raw = serde_json::from_slice(line).expect("a decoded event is JSON");
                    served_as_it_came(&codec, &entry, raw.object.get().as_bytes());
                }
                Ok(WatchLine::Bookmark(_) | WatchLine::Expired) | Err(_) => {}
            }
        }
    }
}

/// An entry decoded from `object` is served as those very bytes, and
/// decoding them again gives the same entry.
fn served_as_it_came(codec: &TypeCodec, entry: &kubecache::encode::codec::Entry, object: &[u8]) {
    let served = codec.object_bytes(entry);
    assert_eq!(&served[..], object);
    let again = codec
        .from_object(&served)
        .expect("what was decoded decodes");
    assert_eq!((&again.key, again.rv), (&entry.key, entry.rv));
    assert_eq!(format!("{:?}", again.attrs), format!("{:?}", entry.attrs));
    // Its metadata is served alone (PartialObjectMetadata), as JSON and
    // as protobuf.
    let meta = entry.meta();
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(meta) {
        panic!(
            "metadata {:?} is not JSON: {e}",
            String::from_utf8_lossy(meta)
        );
    }
    let _ = kubecache::encode::protobuf::partial_message(meta);
    let _ = codec.protobuf_message(entry);
}

/// A list body from the upstream.
pub fn list(data: &[u8]) {
    let _ = ListStyle::detect(data);
    for codec in codecs() {
        let Ok(list) = codec.parse_list(data) else {
            continue;
        };
        for entry in &list.entries {
            let again = codec
                .from_item(entry.item.clone())
                .expect("an item decodes twice");
            assert_eq!((&again.key, again.rv), (&entry.key, entry.rv));
            let served = codec.object_bytes(entry);
            served_as_it_came(&codec, entry, &served);
        }
    }
}

/// Kinds the protobuf transcoder is fuzzed against: the first byte picks
/// one (the last is a PartialObjectMetadata's ObjectMeta), the rest is the
/// JSON.
const PROTOBUF_KINDS: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Service"),
    ("v1", "Secret"),
    ("v1", "ConfigMap"),
    ("v1", "Event"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ControllerRevision"),
    ("batch/v1", "CronJob"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("v1", "Status"),
    ("meta.k8s.io/v1", "ObjectMeta"),
];

pub fn protobuf(data: &[u8]) {
    use kubecache::encode::protobuf::{object, object_message, partial_message};
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let (v, k) = PROTOBUF_KINDS[usize::from(pick) % PROTOBUF_KINDS.len()];
    let out = if k == "ObjectMeta" {
        partial_message(json)
    } else {
        let _ = object(v, k, json);
        object_message(v, k, json)
    };
    if let Ok(m) = out {
        assert!(well_formed(&m), "malformed message for {v}/{k}: {m:?}");
    }
}

/// A protobuf body a client writes: the whole input as a body (envelope
/// and all), then, its first byte picking a kind, the rest as that kind's
/// message. Decoded or refused, never a panic; what decodes is JSON the
/// transcoder writes back into a message that decodes the same.
pub fn protobuf_decode(data: &[u8]) {
    use kubecache::encode::protobuf::{decode_message, decode_object};
    if let Ok(v) = decode_object(data) {
        let (v_, k) = (v["apiVersion"].as_str(), v["kind"].as_str());
        protobuf_round_trip::decodes_again(v_.unwrap_or(""), k.unwrap_or(""), &v);
    }
    let Some((&pick, message)) = data.split_first() else {
        return;
    };
    let (v, k) = PROTOBUF_KINDS[usize::from(pick) % (PROTOBUF_KINDS.len() - 1)];
    if let Ok(obj) = decode_message(v, k, message) {
        protobuf_round_trip::decodes_again(v, k, &obj);
    }
}

/// Whether `b` is a sequence of protobuf fields whose lengths fit.
fn well_formed(mut b: &[u8]) -> bool {
    fn varint(b: &mut &[u8]) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let (&x, rest) = b.split_first()?;
            *b = rest;
            v |= u64::from(x & 0x7f) << (7 * i);
            if x & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    while !b.is_empty() {
        let Some(tag) = varint(&mut b) else {
            return false;
        };
        if tag >> 3 == 0 {
            return false;
        }
        let skip = match tag & 7 {
            0 => match varint(&mut b) {
                Some(_) => 0,
                None => return false,
            },
            1 => 8,
            2 => match varint(&mut b) {
                Some(n) => n,
                None => return false,
            },
            5 => 4,
            _ => return false,
        };
        let Some(rest) = usize::try_from(skip).ok().and_then(|n| b.get(n..)) else {
            return false;
        };
        b = rest;
    }
    true
}

/// A custom resource's printer column: its JSON path and type on the
/// first line, then the object it is printed from.
pub fn jsonpath(data: &[u8]) {
    use kubecache::encode::print::{jsonpath::CustomColumn, RowBuilder};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (head, object) = text.split_once('\n').unwrap_or((text, "{}"));
    let (ty, path) = head.split_once(' ').unwrap_or(("string", head));
    let def = serde_json::json!({"name": "c", "type": ty, "jsonPath": path});
    let Ok((_, col)) = CustomColumn::parse(&def) else {
        return;
    };
    let Ok(obj) = serde_json::from_str::<serde_json::Value>(object) else {
        return;
    };
    // Twice: a path must not keep state between evaluations.
    let mut cells = Vec::new();
    for _ in 0..2 {
        let mut r = RowBuilder::default();
        col.cell(&obj, &mut r);
        assert_eq!(r.cells(), 1);
        cells.push(r.finish().to_json(0));
    }
    assert_eq!(cells[0], cells[1]);
}

/// A patch body, of every type, applied to a pod.
pub fn patch(data: &[u8]) {
    use kubecache_sim::patch::{apply, PatchType};
    static POD: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let pod = POD.get_or_init(|| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x", "y"],
                "ownerReferences": [{"uid": "u1", "name": "o"}]},
            "spec": {"containers": [
                {"name": "app", "image": "i", "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80}]},
                {"name": "side", "image": "j"}]},
            "status": {"phase": "Running"}})
    });
    for ty in [PatchType::Merge, PatchType::Json, PatchType::Strategic] {
        if let Ok(out) = apply(ty, "Pod", pod, data) {
            assert!(out.is_object());
        }
    }
}

/// Runs `target` on each file named (or each file in each folder named),
/// saying which before it does, so a panic names its input.
pub fn replay(target: Target, paths: &[std::path::PathBuf]) -> std::io::Result<usize> {
    let mut n = 0;
    for p in paths {
        let files = if p.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(p)?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()?;
            v.retain(|f| f.is_file());
            v.sort();
            v
        } else {
            vec![p.clone()]
        };
        for f in files {
            let data = std::fs::read(&f)?;
            eprintln!("{}", f.display());
            target(&data);
            n += 1;
        }
    }
    Ok(n)
}
