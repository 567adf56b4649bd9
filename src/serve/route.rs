//! The one place a request is decided: served from the cache (and how), or
//! answered locally, or rejected with the apiserver's error, or forwarded.

use crate::cache::{Cache, TypeCache};
use crate::encode::codec::ListStyle;
use crate::encode::pretty::Layout;
use crate::encode::print::Printer;
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
    Unencodable,
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
            ForwardReason::Unencodable => "no_protobuf_message",
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

impl Read {
    /// The `Content-Type` of the read's answer.
    pub fn content_type(&self) -> &'static str {
        match self {
            Read::Get { repr, .. } | Read::List { repr, .. } => repr.content_type(),
            Read::Watch { spec, .. } => spec.repr.watch_content_type(),
        }
    }
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
pub enum Shape {
    Object,
    List,
    Watch,
}

/// Why a read cannot be answered in a representation negotiated on
/// `Accept`, in the order the apiserver finds out. The first two come
/// before it reads anything; `Form` and `IncludeObject` only once it has
/// the object or list (its 404s and 410s come first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// go-restful found no route producing any media type the header names
    /// (built-in resources only): a bare "406: Not Acceptable".
    NoRoute,
    /// Negotiation found nothing acceptable: NotAcceptable, listing the
    /// endpoint's media types.
    NotAcceptable,
    /// A serializer other than JSON was negotiated (YAML, protobuf).
    Serializer(Media),
    /// A metadata form that does not fit the read: PartialObjectMetadata
    /// for a list, PartialObjectMetadataList for one object or a watch.
    Form(Conversion),
    /// A Table with an `includeObject` that `ValidateTableOptions` rejects.
    IncludeObject(String),
    /// A Table of a type there is no printer for.
    NoPrinter,
}

/// A representation to negotiate: the request's side, and what the
/// server offers. kubecache's routes and the simulator both decide here.
#[derive(Debug, Clone, Copy)]
pub struct Negotiation<'a> {
    /// The Accept header, if any.
    pub accept: Option<&'a str>,
    /// The resource endpoint: the server's serializers, protobuf or not.
    pub endpoint: Endpoint,
    /// Built-in resources are go-restful routes, checked before anything
    /// else; custom resources are not.
    pub restful: bool,
    pub shape: Shape,
    /// The `includeObject` query parameter.
    pub include_object: Option<&'a str>,
    /// Whether protobuf is written here for this type (kubecache: the
    /// built-in kinds v1.20's messages cover); else it is refused as a
    /// serializer the server lacks.
    pub protobuf: bool,
}

/// What negotiation chose.
#[derive(Debug)]
pub struct Negotiated {
    pub repr: Repr,
    /// `pretty=1` in the chosen clause.
    pub pretty: bool,
}

impl Negotiation<'_> {
    /// JSON objects, their metadata in the form that fits the request, or
    /// a Table printed by `printer` (asked only for a valid Table request).
    pub fn repr(
        &self,
        printer: impl FnOnce() -> Option<Arc<Printer>>,
    ) -> Result<Negotiated, Refusal> {
        if self.restful && !accept::restful_accepts(self.accept, self.endpoint) {
            return Err(Refusal::NoRoute);
        }
        let n = accept::negotiate(self.accept, self.endpoint).ok_or(Refusal::NotAcceptable)?;
        let protobuf = n.media == Media::Protobuf && self.protobuf;
        if n.media != Media::Json && !protobuf {
            return Err(Refusal::Serializer(n.media));
        }
        let repr = match (n.conversion, self.shape) {
            (None, _) if protobuf => Repr::Protobuf(None),
            (Some(Conversion::PartialObjectMetadata(v)), Shape::Object | Shape::Watch)
                if protobuf =>
            {
                Repr::Protobuf(Some(v))
            }
            (Some(Conversion::PartialObjectMetadataList(v)), Shape::List) if protobuf => {
                Repr::Protobuf(Some(v))
            }
            // Tables have no protobuf message.
            (Some(Conversion::Table(_)), _) if protobuf => {
                return Err(Refusal::Serializer(n.media))
            }
            (None, _) => Repr::Json,
            (Some(Conversion::PartialObjectMetadata(v)), Shape::Object | Shape::Watch) => {
                Repr::Metadata(v)
            }
            (Some(Conversion::PartialObjectMetadataList(v)), Shape::List) => Repr::Metadata(v),
            (Some(Conversion::Table(v)), _) => {
                let include = Include::parse(self.include_object).ok_or_else(|| {
                    Refusal::IncludeObject(self.include_object.unwrap_or("").into())
                })?;
                let printer = printer().ok_or(Refusal::NoPrinter)?;
                Repr::Table(TableSpec::new(v, include, printer))
            }
            (Some(c), _) => return Err(Refusal::Form(c)),
        };
        Ok(Negotiated {
            repr,
            pretty: n.pretty,
        })
    }
}

/// The representation negotiated on `Accept`, if the cache can serve it:
/// JSON objects, their metadata in the form that fits the request, a
/// Table of a type the cache can print, or protobuf of either of the first
/// two for a built-in kind. Everything else — YAML, protobuf of custom
/// resources or Tables, a metadata form that does not fit, a Table
/// kubecache cannot print or with an invalid `includeObject`, nothing
/// acceptable — goes upstream, which answers it (406 and 400 included)
/// exactly.
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
    // Errors made here are negotiated apart; JSON ones (compact, pretty,
    // or the indented fallback when nothing fits) and protobuf ones are
    // made here.
    if let Some(e) = accept::negotiate(accept, Endpoint::ERRORS) {
        if e.media == Media::Yaml {
            return None;
        }
    }
    // Built-in resources are go-restful routes, custom resources are not.
    let builtin = tc.codec().style == ListStyle::Typed;
    let n = Negotiation {
        accept,
        endpoint: Endpoint::resource(builtin),
        restful: builtin,
        shape,
        include_object: opts.include_object.as_deref(),
        protobuf: tc.codec().protobuf_kind(),
    }
    .repr(|| cache.table_printer(tc))
    .ok()?;
    let layout = match (&n.repr, builtin) {
        (Repr::Protobuf(_), _) => Layout::Compact,
        _ if !(pretty || n.pretty) => Layout::Compact,
        (Repr::Json, false) => Layout::Unindented,
        (Repr::Json, true) => Layout::Indented {
            raw_data: tc.rt.gvr.group == "apps" && tc.rt.gvr.resource == "controllerrevisions",
        },
        _ => Layout::Indented { raw_data: false },
    };
    Some((n.repr, layout))
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
        // Served from the newest snapshot; a list still honours its limit,
        // as the consistent (etcd) list it stands in for does.
        Ok(ReadMode::MostRecent) => Ok(ReadMode::MostRecent),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::accept::MetaVersion;

    const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
    const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
    const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

    fn negotiation(accept: &str, shape: Shape) -> Negotiation<'_> {
        Negotiation {
            accept: Some(accept),
            endpoint: Endpoint::resource(true),
            restful: true,
            shape,
            include_object: None,
            protobuf: false,
        }
    }

    fn printer() -> Option<Arc<Printer>> {
        Printer::builtin("", "v1", "configmaps")
    }

    fn kind(r: Result<Negotiated, Refusal>) -> Result<&'static str, Refusal> {
        r.map(|n| match n.repr {
            Repr::Json => "json",
            Repr::Metadata(MetaVersion::V1) => "meta v1",
            Repr::Metadata(MetaVersion::V1beta1) => "meta v1beta1",
            Repr::Table(t) if t.include == Include::Metadata => "table",
            Repr::Table(_) => "table with another includeObject",
            Repr::Protobuf(None) => "protobuf",
            Repr::Protobuf(Some(_)) => "protobuf meta",
        })
    }

    #[test]
    fn each_shape_gets_the_forms_that_fit_it() {
        use Shape::*;
        for shape in [Object, List, Watch] {
            assert_eq!(kind(negotiation("*/*", shape).repr(printer)), Ok("json"));
            assert_eq!(kind(negotiation(TABLE, shape).repr(printer)), Ok("table"));
        }
        assert_eq!(
            kind(negotiation(META, Object).repr(printer)),
            Ok("meta v1beta1")
        );
        assert_eq!(
            kind(negotiation(META, Watch).repr(printer)),
            Ok("meta v1beta1")
        );
        assert_eq!(
            kind(negotiation(META_LIST, List).repr(printer)),
            Ok("meta v1")
        );
        let meta = Conversion::PartialObjectMetadata(MetaVersion::V1beta1);
        let list = Conversion::PartialObjectMetadataList(MetaVersion::V1);
        assert_eq!(
            kind(negotiation(META, List).repr(printer)),
            Err(Refusal::Form(meta))
        );
        assert_eq!(
            kind(negotiation(META_LIST, Object).repr(printer)),
            Err(Refusal::Form(list))
        );
        assert_eq!(
            kind(negotiation(META_LIST, Watch).repr(printer)),
            Err(Refusal::Form(list))
        );
    }

    #[test]
    fn refusals_come_in_the_apiservers_order() {
        let list = Shape::List;
        assert_eq!(
            kind(negotiation("application/*", list).repr(printer)),
            Err(Refusal::NoRoute)
        );
        assert_eq!(
            kind(negotiation("application/json;as=Foo;g=meta.k8s.io;v=v1", list).repr(printer)),
            Err(Refusal::NotAcceptable)
        );
        assert_eq!(
            kind(negotiation("application/yaml", list).repr(printer)),
            Err(Refusal::Serializer(Media::Yaml))
        );
        let pretty = negotiation("application/json;pretty=1", list).repr(printer);
        assert!(pretty.as_ref().is_ok_and(|n| n.pretty));
        assert_eq!(kind(pretty), Ok("json"));
        // The includeObject check comes before the printer is asked for.
        let bad = Negotiation {
            include_object: Some("Foo"),
            ..negotiation(TABLE, list)
        };
        let asked = std::cell::Cell::new(false);
        let r = bad.repr(|| {
            asked.set(true);
            printer()
        });
        assert_eq!(kind(r), Err(Refusal::IncludeObject("Foo".into())));
        assert!(!asked.get());
        let none = Negotiation {
            include_object: Some("None"),
            ..negotiation(TABLE, list)
        };
        assert_eq!(
            kind(none.repr(printer)),
            Ok("table with another includeObject")
        );
        assert_eq!(
            kind(negotiation(TABLE, list).repr(|| None)),
            Err(Refusal::NoPrinter)
        );
        // Custom resources skip go-restful's check.
        let custom = Negotiation {
            restful: false,
            endpoint: Endpoint::resource(false),
            ..negotiation("application/*", list)
        };
        assert_eq!(kind(custom.repr(printer)), Ok("json"));
    }

    #[test]
    fn protobuf_is_negotiated_only_where_it_is_written_here() {
        const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
        let written = |accept, shape| Negotiation {
            protobuf: true,
            ..negotiation(accept, shape)
        };
        for shape in [Shape::Object, Shape::List, Shape::Watch] {
            assert_eq!(kind(written(PROTOBUF, shape).repr(printer)), Ok("protobuf"));
            assert_eq!(
                kind(negotiation(PROTOBUF, shape).repr(printer)),
                Err(Refusal::Serializer(Media::Protobuf))
            );
        }
        let meta =
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        let list =
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            kind(written(meta, Shape::Object).repr(printer)),
            Ok("protobuf meta")
        );
        assert_eq!(
            kind(written(list, Shape::List).repr(printer)),
            Ok("protobuf meta")
        );
        assert!(matches!(
            written(meta, Shape::List).repr(printer),
            Err(Refusal::Form(_))
        ));
        // client-go's protobuf clients name JSON second: protobuf wins.
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(
            kind(written(client_go, Shape::List).repr(printer)),
            Ok("protobuf")
        );
    }

    #[test]
    fn a_json_only_server_negotiates_json_where_the_apiserver_would_not() {
        let json_only = |accept| Negotiation {
            endpoint: Endpoint::JSON_ONLY_RESOURCE,
            ..negotiation(accept, Shape::List)
        };
        assert_eq!(
            kind(json_only("application/vnd.kubernetes.protobuf, application/json").repr(printer)),
            Ok("json")
        );
        assert_eq!(
            kind(json_only("application/yaml").repr(printer)),
            Err(Refusal::NoRoute)
        );
        assert_eq!(
            kind(json_only("application/yaml, */*;as=Table;g=meta.k8s.io;v=v1").repr(printer)),
            Ok("table")
        );
    }
}
