//! The one place a request is decided: served from the cache (and how), or
//! answered locally, or rejected with the apiserver's error, or forwarded.

use crate::cache::{Cache, TypeCache};
use crate::encode::pretty::Layout;
use crate::encode::table::{Include, TableSpec};
use crate::encode::Repr;
use crate::request::accept::{self, Conversion, Endpoint, Media};
use crate::request::options::{ModeError, WatchFrom};
use crate::request::{ListOptions, ReadMode, ResourcePath};
use crate::resource::ResourceType;
use crate::selector::field::FieldRules;
use crate::selector::{FieldSelector, LabelSelector};
use crate::serve::watch::{Selection, Start, WatchSpec};
use crate::status::Status;
use crate::store::ListStyle;
use http::{header, HeaderMap, Method};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardReason {
    NotRead,
    NotResource,
    Subresource,
    Representation,
    OutputOptions,
    UnknownType,
    NotCacheable,
    Scope,
    NotSynced,
    Consistent,
    NotInCache,
}

impl ForwardReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ForwardReason::NotRead => "not_read",
            ForwardReason::NotResource => "not_resource",
            ForwardReason::Subresource => "subresource",
            ForwardReason::Representation => "representation",
            ForwardReason::OutputOptions => "output_options",
            ForwardReason::UnknownType => "unknown_type",
            ForwardReason::NotCacheable => "not_cacheable",
            ForwardReason::Scope => "scope",
            ForwardReason::NotSynced => "not_synced",
            ForwardReason::Consistent => "consistent_read",
            ForwardReason::NotInCache => "version_not_in_cache",
        }
    }
}

pub enum Read {
    Get {
        key: String,
        name: String,
        mode: ReadMode,
        repr: Repr,
    },
    List {
        repr: Repr,
        /// `ns/` or "".
        prefix: String,
        mode: ReadMode,
        limit: usize,
        labels: LabelSelector,
        fields: FieldSelector,
    },
    Watch {
        spec: WatchSpec,
        /// Wait for the cache to reach this version first (NotOlderThan).
        at_least: Option<u64>,
    },
}

pub enum Decision {
    Cache {
        tc: Arc<TypeCache>,
        read: Read,
        layout: Layout,
    },
    Reject(Status),
    Forward(ForwardReason),
}

/// How consistent (RV-unset) reads are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsistentReads {
    /// Forward them: always correct.
    #[default]
    Forward,
    /// Serve them from a synced cache: not linearizable (opt-in, dashboards).
    ServeStale,
}

/// What a read returns: one object, a list, or a stream of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Object,
    List,
    Watch,
}

/// The representation negotiated on `Accept`, if the cache can serve it:
/// JSON objects, their metadata in the form that fits the request, or a
/// Table of a type the cache can print. Everything else — YAML, protobuf,
/// a metadata form that does not fit, a Table kubecache cannot print or
/// with an invalid `includeObject`, nothing acceptable — goes upstream,
/// which answers it (406 and 400 included) exactly.
fn representation(
    headers: &HeaderMap,
    cache: &Cache,
    tc: &TypeCache,
    shape: Shape,
    opts: &ListOptions,
    pretty: bool,
) -> Option<(Repr, Layout)> {
    let accept = match headers.get(header::ACCEPT) {
        None => None,
        Some(v) => Some(v.to_str().ok()?),
    };
    // Built-in resources are go-restful routes, custom resources are not.
    let builtin = tc.codec().style == ListStyle::Typed;
    if builtin && !accept::restful_accepts(accept) {
        return None;
    }
    let n = accept::negotiate(accept, Endpoint::resource(builtin))?;
    if n.media != Media::Json {
        return None;
    }
    // Errors made here are negotiated apart; only JSON ones (compact,
    // pretty, or the indented fallback when nothing fits) are made here.
    if let Some(e) = accept::negotiate(accept, Endpoint::ERRORS) {
        if e.media != Media::Json {
            return None;
        }
    }
    let repr = match (n.conversion, shape) {
        (None, _) => Repr::Json,
        (Some(Conversion::PartialObjectMetadata(v)), Shape::Object | Shape::Watch) => {
            Repr::Metadata(v)
        }
        (Some(Conversion::PartialObjectMetadataList(v)), Shape::List) => Repr::Metadata(v),
        (Some(Conversion::Table(v)), _) => {
            let include = Include::parse(opts.include_object.as_deref())?;
            let printer = cache.table_printer(tc)?;
            Repr::Table(TableSpec::new(v, include, printer))
        }
        _ => return None,
    };
    let layout = match (&repr, builtin) {
        _ if !(pretty || n.pretty) => Layout::Compact,
        (Repr::Json, false) => Layout::Unindented,
        (Repr::Json, true) => Layout::Indented {
            raw_data: tc.rt.gvr.group == "apps" && tc.rt.gvr.resource == "controllerrevisions",
        },
        _ => Layout::Indented { raw_data: false },
    };
    Some((repr, layout))
}

/// The request asks for pretty JSON by its query or its user agent.
pub fn pretty_print(query: Option<&str>, headers: &HeaderMap) -> bool {
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    crate::request::options::pretty_print(query, ua)
}

pub fn decide(
    cache: &Arc<Cache>,
    consistent: ConsistentReads,
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Decision {
    use ForwardReason as F;
    if method != Method::GET {
        return Decision::Forward(F::NotRead);
    }
    let Some(rp) = ResourcePath::parse(path) else {
        return Decision::Forward(F::NotResource);
    };
    if rp.subresource.is_some() {
        return Decision::Forward(F::Subresource);
    }
    let opts = ListOptions::parse(query);
    // `?watch` on a named object is a get; the legacy /watch/ path is not.
    let watching = rp.legacy_watch || (opts.watch && rp.name.is_none());
    if !opts.unparsed.is_empty() {
        return Decision::Forward(F::OutputOptions);
    }
    let gvr = crate::resource::GroupVersionResource::new(&rp.group, &rp.version, &rp.resource);
    let discovery = cache.discovery();
    let Some(rt) = discovery.get(&gvr) else {
        cache.discovery_miss();
        return Decision::Forward(F::UnknownType);
    };
    if !rt.cacheable() {
        return Decision::Forward(F::NotCacheable);
    }
    // Scope mismatches are the apiserver's 404s to give.
    let namespace = if rp.is_namespace_object() {
        None
    } else {
        rp.namespace.clone()
    };
    if namespace.is_some() && !rt.namespaced {
        return Decision::Forward(F::Scope);
    }
    if rp.name.is_some() && rt.namespaced && namespace.is_none() {
        return Decision::Forward(F::Scope);
    }
    let tc = cache.type_cache(rt);
    if !tc.is_synced() {
        return Decision::Forward(F::NotSynced);
    }
    let shape = if watching {
        Shape::Watch
    } else if rp.name.is_some() {
        Shape::Object
    } else {
        Shape::List
    };
    let pretty = pretty_print(query, headers);
    let Some((repr, layout)) = representation(headers, cache, &tc, shape, &opts, pretty) else {
        return Decision::Forward(F::Representation);
    };
    if watching {
        return watch(tc, rt, rp.name, namespace, &opts, consistent, repr);
    }
    let mode_of = |m: Result<ReadMode, ModeError>| match m {
        Ok(ReadMode::MostRecent) if consistent == ConsistentReads::Forward => {
            Err(Decision::Forward(F::Consistent))
        }
        Ok(ReadMode::MostRecent) => Ok(ReadMode::Any),
        Ok(m) => Ok(m),
        Err(ModeError::Reject(s)) => Err(Decision::Reject(s)),
        Err(ModeError::Forward(_)) => Err(Decision::Forward(F::OutputOptions)),
    };
    if let Some(name) = rp.name {
        let mode = match mode_of(opts.get_mode()) {
            Ok(m) => m,
            Err(d) => return d,
        };
        let key = match &namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.clone(),
        };
        return Decision::Cache {
            tc,
            read: Read::Get {
                key,
                name,
                mode,
                repr,
            },
            layout,
        };
    }
    if let Err(s) = opts.validate_list() {
        return Decision::Reject(s);
    }
    let (labels, fields) = match selectors(rt, &tc, &opts) {
        Ok(s) => s,
        Err(s) => return Decision::Reject(s),
    };
    let mode = match mode_of(opts.list_mode()) {
        Ok(m) => m,
        Err(d) => return d,
    };
    Decision::Cache {
        tc,
        read: Read::List {
            repr,
            prefix: namespace.map(|ns| format!("{ns}/")).unwrap_or_default(),
            mode,
            limit: opts.limit.max(0) as usize,
            labels,
            fields,
        },
        layout,
    }
}

fn selectors(
    rt: &ResourceType,
    tc: &TypeCache,
    opts: &ListOptions,
) -> Result<(LabelSelector, FieldSelector), Status> {
    let labels = LabelSelector::parse(&opts.label_selector)
        .map_err(|e| Status::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(&opts.field_selector)
        .and_then(|f| f.convert(field_rules(rt, tc)))
        .map_err(|e| Status::bad_request(e.to_string()))?;
    Ok((labels, fields))
}

/// A watch of a synced type: validated, its selection and start decided.
fn watch(
    tc: Arc<TypeCache>,
    rt: &ResourceType,
    name: Option<String>,
    namespace: Option<String>,
    opts: &ListOptions,
    consistent: ConsistentReads,
    repr: Repr,
) -> Decision {
    use ForwardReason as F;
    if let Err(s) = opts.validate_watch() {
        return Decision::Reject(s);
    }
    let (labels, fields) = match selectors(rt, &tc, opts) {
        Ok(s) => s,
        Err(s) => return Decision::Reject(s),
    };
    let from = match opts.watch_from() {
        Ok(f) => f,
        Err(ModeError::Reject(s)) => return Decision::Reject(s),
        Err(ModeError::Forward(_)) => return Decision::Forward(F::OutputOptions),
    };
    let (start, at_least) = match from {
        // Only a cache proven current may start at the most recent state.
        WatchFrom::Latest(_) if consistent == ConsistentReads::Forward => {
            return Decision::Forward(F::Consistent)
        }
        WatchFrom::Latest(i) | WatchFrom::Any(i) => (i.into(), None),
        WatchFrom::After(rv) => (Start::After(rv), None),
        WatchFrom::AtLeast(rv) => (Start::InitialEvents, Some(rv)),
    };
    Decision::Cache {
        tc,
        read: Read::Watch {
            spec: WatchSpec {
                start,
                selection: Selection {
                    labels,
                    fields,
                    namespace,
                    name,
                },
                repr,
                bookmarks: opts.allow_watch_bookmarks,
                timeout: super::watch::timeout(opts.timeout_seconds),
                bookmarks_after: 0,
            },
            at_least,
        },
        // Watch events are never indented.
        layout: Layout::Compact,
    }
}

/// Custom resources are the types whose lists came back unstructured.
fn field_rules<'a>(rt: &'a ResourceType, tc: &TypeCache) -> FieldRules<'a> {
    match tc.codec().style {
        ListStyle::Unstructured => FieldRules::Custom {
            namespaced: rt.namespaced,
        },
        ListStyle::Typed => FieldRules::BuiltIn {
            group: &rt.gvr.group,
            version: &rt.gvr.version,
            kind: &rt.kind,
        },
    }
}
