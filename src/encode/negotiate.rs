//! Which representation a read is answered in, negotiated on its Accept
//! header as the apiserver negotiates it: JSON objects, their metadata in
//! the form that fits the read, a Table of a type there is a printer for,
//! or protobuf of either of the first two — or, in the apiserver's order,
//! why none fits. kubecache's router and the simulator both decide here.

use super::print::Printer;
use super::table::{Include, TableSpec};
use super::Repr;
use crate::request::accept::{Accept, Conversion, Endpoint, Media};
use crate::request::Shape;
use std::sync::Arc;

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
    /// The request's Accept header.
    pub accept: &'a Accept,
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
        if self.restful && !self.accept.restful_accepts(self.endpoint) {
            return Err(Refusal::NoRoute);
        }
        let n = self
            .accept
            .negotiate(self.endpoint)
            .ok_or(Refusal::NotAcceptable)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::accept::MetaVersion;

    const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
    const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
    const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

    /// A negotiation of this header (kept for the test's whole run).
    fn negotiation(accept: &str, shape: Shape) -> Negotiation<'static> {
        Negotiation {
            accept: Box::leak(Box::new(Accept::new(Some(accept)))),
            endpoint: Endpoint::resource(true),
            restful: true,
            shape,
            include_object: None,
            protobuf: false,
        }
    }

    fn printer() -> Option<Arc<Printer>> {
        Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            "",
            "v1",
            "configmaps",
        )
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
