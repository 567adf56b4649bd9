//! An OpenAPI v2 document in gnostic's protobuf (`openapi.v2.Document`,
//! the apiserver's `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`),
//! made from its JSON as gnostic's compiler makes it, and why a document
//! does not convert (`GnosticError`).
//!
//! The messages are the subset of gnostic's `OpenAPIv2.proto` (v0.4, the
//! one v1.20 vendors) that a Kubernetes document uses, with its field
//! numbers; a key of the JSON that none of them holds is an error, not
//! dropped, so that a regenerated document with something new fails its
//! tests instead of losing it silently. Entries (definitions, paths,
//! properties…) keep the JSON's order: the apiserver's own protobuf has
//! them in Go's map order (kube-openapi's `ToProtoBinary` converts a
//! `map[string]interface{}`), which changes from one start to the next,
//! and clients index them by name. Vendor extensions (`x-…`) are
//! `Any`s holding their value as YAML, which clients parse back with a
//! YAML decoder: the simulator writes them as JSON, which is YAML too
//! (gnostic writes block style; the values read back the same).

use serde_json::{Map, Value};

/// Why a JSON document does not convert: something at `at` (a JSON
/// pointer) that the messages here do not hold, or not of the shape
/// OpenAPI v2 gives it.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GnosticError {
    #[error("{at}: {key:?} is not converted to protobuf by the simulator")]
    Unsupported { at: String, key: String },
    #[error("{at}: expected {expected}")]
    Shape { at: String, expected: &'static str },
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "16")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, repeated, tag = "7")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PathItem {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    pub options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "2")]
    pub summary: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ParametersItem {
    #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
    pub oneof: Option<parameters_item::Oneof>,
}

// The oneofs' modules (prost's layout) name their messages by crate
// path: tests/layers.rs reads `super::` in them as the folder's `mod.rs`.
pub mod parameters_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        // Boxed as prost-build boxes it: the other variant is small.
        #[prost(message, boxed, tag = "1")]
        Parameter(Box<crate::openapi::gnostic::Parameter>),
        #[prost(message, tag = "2")]
        JsonReference(crate::openapi::gnostic::JsonReference),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct JsonReference {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub description: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Parameter {
    #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
    pub oneof: Option<parameter::Oneof>,
}

pub mod parameter {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        BodyParameter(crate::openapi::gnostic::BodyParameter),
        #[prost(message, tag = "2")]
        NonBodyParameter(crate::openapi::gnostic::NonBodyParameter),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BodyParameter {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NonBodyParameter {
    #[prost(oneof = "non_body_parameter::Oneof", tags = "3, 4")]
    pub oneof: Option<non_body_parameter::Oneof>,
}

pub mod non_body_parameter {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "3")]
        QueryParameterSubSchema(crate::openapi::gnostic::QueryParameterSubSchema),
        #[prost(message, tag = "4")]
        PathParameterSubSchema(crate::openapi::gnostic::PathParameterSubSchema),
    }
}

/// A query parameter; of its primitive constraints only those Kubernetes
/// documents use.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueryParameterSubSchema {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(string, tag = "7")]
    pub format: String,
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
    #[prost(message, repeated, tag = "23")]
    pub vendor_extension: Vec<NamedAny>,
}

/// A path parameter: the same fields as a query parameter's under other
/// numbers (it has no `allowEmptyValue`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PathParameterSubSchema {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "5")]
    pub r#type: String,
    #[prost(string, tag = "6")]
    pub format: String,
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
    #[prost(message, repeated, tag = "22")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseValue {
    #[prost(oneof = "response_value::Oneof", tags = "1")]
    pub oneof: Option<response_value::Oneof>,
}

pub mod response_value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Response(crate::openapi::gnostic::Response),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SchemaItem {
    #[prost(oneof = "schema_item::Oneof", tags = "1")]
    pub oneof: Option<schema_item::Oneof>,
}

pub mod schema_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(crate::openapi::gnostic::Schema),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, optional, tag = "21")]
    pub additional_properties: Option<AdditionalPropertiesItem>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    pub oneof: Option<additional_properties_item::Oneof>,
}

pub mod additional_properties_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, boxed, tag = "1")]
        Schema(Box<crate::openapi::gnostic::Schema>),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedStringArray {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<StringArray>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<SecurityDefinitionsItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitionsItem {
    #[prost(oneof = "security_definitions_item::Oneof", tags = "2")]
    pub oneof: Option<security_definitions_item::Oneof>,
}

pub mod security_definitions_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "2")]
        ApiKeySecurity(crate::openapi::gnostic::ApiKeySecurity),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

/// The JSON object at `at`, walked key by key: each accessor takes its
/// key out, and `done` fails on any left that no field holds, after moving
/// the `x-…` ones into vendor extensions.
struct Obj {
    at: String,
    map: Map<String, Value>,
}

/// The JSON pointer of `key` under `at` (paths and `$ref`s hold '/').
fn pointer(at: &str, key: &str) -> String {
    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn shape(at: &str, expected: &'static str) -> GnosticError {
    GnosticError::Shape {
        at: at.to_string(),
        expected,
    }
}

impl Obj {
    fn new(at: String, v: Value) -> Result<Self, GnosticError> {
        match v {
            Value::Object(map) => Ok(Obj { at, map }),
            _ => Err(shape(&at, "an object")),
        }
    }

    fn child(&self, key: &str) -> String {
        pointer(&self.at, key)
    }

    fn take(&mut self, key: &str) -> Option<(String, Value)> {
        let at = self.child(key);
        self.map.remove(key).map(|v| (at, v))
    }

    fn string(&mut self, key: &str) -> Result<String, GnosticError> {
        match self.take(key) {
            None => Ok(String::new()),
            Some((_, Value::String(s))) => Ok(s),
            Some((at, _)) => Err(shape(&at, "a string")),
        }
    }

    fn boolean(&mut self, key: &str) -> Result<bool, GnosticError> {
        match self.take(key) {
            None => Ok(false),
            Some((_, Value::Bool(b))) => Ok(b),
            Some((at, _)) => Err(shape(&at, "a boolean")),
        }
    }

    fn strings(&mut self, key: &str) -> Result<Vec<String>, GnosticError> {
        let Some((at, v)) = self.take(key) else {
            return Ok(vec![]);
        };
        let items = v.as_array().ok_or_else(|| shape(&at, "an array"))?;
        items
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| shape(&at, "an array of strings"))
    }

    fn object<T>(
        &mut self,
        key: &str,
        f: impl FnOnce(String, Value) -> Result<T, GnosticError>,
    ) -> Result<Option<T>, GnosticError> {
        self.take(key).map(|(at, v)| f(at, v)).transpose()
    }

    /// Each entry of the object at `key`, converted by `f`, in order.
    fn entries<T>(
        &mut self,
        key: &str,
        mut f: impl FnMut(String, String, Value) -> Result<T, GnosticError>,
    ) -> Result<Vec<T>, GnosticError> {
        let Some((at, v)) = self.take(key) else {
            return Ok(vec![]);
        };
        let Value::Object(map) = v else {
            return Err(shape(&at, "an object"));
        };
        map.into_iter()
            .map(|(k, v)| f(pointer(&at, &k), k, v))
            .collect()
    }

    /// Each entry whose key `pick` picks (a map's entries, beside its
    /// vendor extensions), taken out and converted by `f`, in order.
    fn named<T>(
        &mut self,
        pick: impl Fn(&str) -> bool,
        mut f: impl FnMut(String, String, Value) -> Result<T, GnosticError>,
    ) -> Result<Vec<T>, GnosticError> {
        let (picked, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.map)
            .into_iter()
            .partition(|(k, _)| pick(k));
        self.map = rest.into_iter().collect();
        picked
            .into_iter()
            .map(|(k, v)| f(self.child(&k), k, v))
            .collect()
    }

    /// Each item of the array at `key`, converted by `f`.
    fn items<T>(
        &mut self,
        key: &str,
        mut f: impl FnMut(String, Value) -> Result<T, GnosticError>,
    ) -> Result<Vec<T>, GnosticError> {
        let Some((at, v)) = self.take(key) else {
            return Ok(vec![]);
        };
        let Value::Array(items) = v else {
            return Err(shape(&at, "an array"));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, v)| f(format!("{at}/{i}"), v))
            .collect()
    }

    /// The `x-…` keys as gnostic's vendor extensions; then any key left
    /// is one the message has no field for.
    fn done(mut self) -> Result<Vec<NamedAny>, GnosticError> {
        let mut extensions = vec![];
        for (k, v) in std::mem::take(&mut self.map) {
            if k.starts_with("x-") {
                let yaml = serde_json::to_string(&v).unwrap_or_default();
                extensions.push(NamedAny {
                    name: k,
                    value: Some(Any { yaml }),
                });
            } else {
                return Err(GnosticError::Unsupported {
                    at: self.at.clone(),
                    key: k,
                });
            }
        }
        Ok(extensions)
    }

    /// As `done`, for messages without vendor extensions.
    fn finish(self) -> Result<(), GnosticError> {
        let at = self.at.clone();
        match self.done()?.into_iter().next() {
            None => Ok(()),
            Some(ext) => Err(GnosticError::Unsupported { at, key: ext.name }),
        }
    }
}

impl Document {
    /// The document of an OpenAPI v2 JSON, as gnostic's `ParseDocument`
    /// makes it (for what the messages here hold).
    pub fn from_json(v: Value) -> Result<Document, GnosticError> {
        let mut o = Obj::new(String::new(), v)?;
        let swagger = o.string("swagger")?;
        let info = o.object("info", info)?;
        let paths = o.object("paths", paths)?;
        let definitions = o.object("definitions", |at, v| {
            let additional_properties = Obj::new(at, v)?.named(|_| true, named_schema)?;
            Ok(Definitions {
                additional_properties,
            })
        })?;
        let security = o.items("security", security_requirement)?;
        let security_definitions = o.object("securityDefinitions", security_definitions)?;
        Ok(Document {
            swagger,
            info,
            paths,
            definitions,
            security,
            security_definitions,
            vendor_extension: o.done()?,
        })
    }
}

fn info(at: String, v: Value) -> Result<Info, GnosticError> {
    let mut o = Obj::new(at, v)?;
    Ok(Info {
        title: o.string("title")?,
        version: o.string("version")?,
        description: o.string("description")?,
        vendor_extension: o.done()?,
    })
}

fn paths(at: String, v: Value) -> Result<Paths, GnosticError> {
    let mut o = Obj::new(at, v)?;
    let path = o.named(
        |k| k.starts_with('/'),
        |at, name, v| {
            Ok(NamedPathItem {
                name,
                value: Some(path_item(at, v)?),
            })
        },
    )?;
    Ok(Paths {
        vendor_extension: o.done()?,
        path,
    })
}

fn path_item(at: String, v: Value) -> Result<PathItem, GnosticError> {
    let mut o = Obj::new(at, v)?;
    Ok(PathItem {
        r#ref: o.string("$ref")?,
        get: o.object("get", operation)?,
        put: o.object("put", operation)?,
        post: o.object("post", operation)?,
        delete: o.object("delete", operation)?,
        options: o.object("options", operation)?,
        head: o.object("head", operation)?,
        patch: o.object("patch", operation)?,
        parameters: o.items("parameters", parameters_item)?,
        vendor_extension: o.done()?,
    })
}

fn operation(at: String, v: Value) -> Result<Operation, GnosticError> {
    let mut o = Obj::new(at, v)?;
    Ok(Operation {
        tags: o.strings("tags")?,
        summary: o.string("summary")?,
        description: o.string("description")?,
        operation_id: o.string("operationId")?,
        produces: o.strings("produces")?,
        consumes: o.strings("consumes")?,
        parameters: o.items("parameters", parameters_item)?,
        responses: o.object("responses", responses)?,
        schemes: o.strings("schemes")?,
        deprecated: o.boolean("deprecated")?,
        vendor_extension: o.done()?,
    })
}

/// A `$ref` to a parameter, or one in place: in the body (with a schema)
/// or in the query or path (gnostic's other kinds do not occur in
/// Kubernetes documents).
fn parameters_item(at: String, v: Value) -> Result<ParametersItem, GnosticError> {
    use non_body_parameter::Oneof as NonBody;
    use parameter::Oneof as Kind;
    let mut o = Obj::new(at, v)?;
    if o.map.contains_key("$ref") {
        let reference = JsonReference {
            r#ref: o.string("$ref")?,
            description: o.string("description")?,
        };
        o.finish()?;
        return Ok(ParametersItem {
            oneof: Some(parameters_item::Oneof::JsonReference(reference)),
        });
    }
    let kind = match o.map.get("in").and_then(Value::as_str) {
        Some("body") => {
            let mut p = BodyParameter {
                description: o.string("description")?,
                name: o.string("name")?,
                r#in: o.string("in")?,
                required: o.boolean("required")?,
                schema: o.object("schema", schema)?,
                vendor_extension: vec![],
            };
            p.vendor_extension = o.done()?;
            Kind::BodyParameter(p)
        }
        Some("query") => {
            let mut p = QueryParameterSubSchema {
                required: o.boolean("required")?,
                r#in: o.string("in")?,
                description: o.string("description")?,
                name: o.string("name")?,
                r#type: o.string("type")?,
                format: o.string("format")?,
                unique_items: o.boolean("uniqueItems")?,
                vendor_extension: vec![],
            };
            p.vendor_extension = o.done()?;
            Kind::NonBodyParameter(NonBodyParameter {
                oneof: Some(NonBody::QueryParameterSubSchema(p)),
            })
        }
        Some("path") => {
            let mut p = PathParameterSubSchema {
                required: o.boolean("required")?,
                r#in: o.string("in")?,
                description: o.string("description")?,
                name: o.string("name")?,
                r#type: o.string("type")?,
                format: o.string("format")?,
                unique_items: o.boolean("uniqueItems")?,
                vendor_extension: vec![],
            };
            p.vendor_extension = o.done()?;
            Kind::NonBodyParameter(NonBodyParameter {
                oneof: Some(NonBody::PathParameterSubSchema(p)),
            })
        }
        _ => return Err(shape(&o.child("in"), "\"body\", \"query\" or \"path\"")),
    };
    Ok(ParametersItem {
        oneof: Some(parameters_item::Oneof::Parameter(Box::new(Parameter {
            oneof: Some(kind),
        }))),
    })
}

fn responses(at: String, v: Value) -> Result<Responses, GnosticError> {
    let mut o = Obj::new(at, v)?;
    let response_code = o.named(
        |k| !k.starts_with("x-"),
        |at, name, v| {
            Ok(NamedResponseValue {
                name,
                value: Some(ResponseValue {
                    oneof: Some(response_value::Oneof::Response(response(at, v)?)),
                }),
            })
        },
    )?;
    Ok(Responses {
        response_code,
        vendor_extension: o.done()?,
    })
}

fn response(at: String, v: Value) -> Result<Response, GnosticError> {
    let mut o = Obj::new(at, v)?;
    Ok(Response {
        description: o.string("description")?,
        schema: o.object("schema", schema)?.map(|s| SchemaItem {
            oneof: Some(schema_item::Oneof::Schema(s)),
        }),
        vendor_extension: o.done()?,
    })
}

fn schema(at: String, v: Value) -> Result<Schema, GnosticError> {
    let mut o = Obj::new(at, v)?;
    let r#ref = o.string("$ref")?;
    let format = o.string("format")?;
    let title = o.string("title")?;
    let description = o.string("description")?;
    let required = o.strings("required")?;
    let additional_properties = match o.take("additionalProperties") {
        None => None,
        Some((_, Value::Bool(b))) => Some(additional_properties_item::Oneof::Boolean(b)),
        Some((at, v)) => Some(additional_properties_item::Oneof::Schema(Box::new(schema(
            at, v,
        )?))),
    }
    .map(|a| AdditionalPropertiesItem { oneof: Some(a) });
    let r#type = match o.take("type") {
        None => None,
        Some((_, Value::String(t))) => Some(TypeItem { value: vec![t] }),
        Some((at, Value::Array(ts))) => Some(TypeItem {
            value: ts
                .iter()
                .map(|t| t.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| shape(&at, "a string or an array of strings"))?,
        }),
        Some((at, _)) => return Err(shape(&at, "a string or an array of strings")),
    };
    // One schema for all items, or a list of them (a tuple).
    let items = match o.take("items") {
        None => None,
        Some((at, Value::Array(items))) => Some(ItemsItem {
            schema: items
                .into_iter()
                .enumerate()
                .map(|(i, s)| schema(format!("{at}/{i}"), s))
                .collect::<Result<_, _>>()?,
        }),
        Some((at, item)) => Some(ItemsItem {
            schema: vec![schema(at, item)?],
        }),
    };
    let properties = o.entries("properties", named_schema)?;
    let properties = (!properties.is_empty()).then_some(Properties {
        additional_properties: properties,
    });
    Ok(Schema {
        r#ref,
        format,
        title,
        description,
        required,
        additional_properties,
        r#type,
        items,
        properties,
        vendor_extension: o.done()?,
    })
}

fn named_schema(at: String, name: String, v: Value) -> Result<NamedSchema, GnosticError> {
    Ok(NamedSchema {
        name,
        value: Some(schema(at, v)?),
    })
}

fn security_requirement(at: String, v: Value) -> Result<SecurityRequirement, GnosticError> {
    let additional_properties = Obj::new(at, v)?.named(
        |_| true,
        |at, name, v| {
            let value = v
                .as_array()
                .and_then(|items| {
                    items
                        .iter()
                        .map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .ok_or_else(|| shape(&at, "an array of strings"))?;
            Ok(NamedStringArray {
                name,
                value: Some(StringArray { value }),
            })
        },
    )?;
    Ok(SecurityRequirement {
        additional_properties,
    })
}

/// Security schemes; Kubernetes declares one, an API key (the bearer
/// token in the `authorization` header).
fn security_definitions(at: String, v: Value) -> Result<SecurityDefinitions, GnosticError> {
    let additional_properties = Obj::new(at, v)?.named(
        |_| true,
        |at, name, v| {
            let mut s = Obj::new(at, v)?;
            if s.map.get("type").and_then(Value::as_str) != Some("apiKey") {
                return Err(shape(&s.child("type"), "\"apiKey\""));
            }
            let key = ApiKeySecurity {
                r#type: s.string("type")?,
                name: s.string("name")?,
                r#in: s.string("in")?,
                description: s.string("description")?,
                vendor_extension: vec![],
            };
            let key = ApiKeySecurity {
                vendor_extension: s.done()?,
                ..key
            };
            Ok(NamedSecurityDefinitionsItem {
                name,
                value: Some(SecurityDefinitionsItem {
                    oneof: Some(security_definitions_item::Oneof::ApiKeySecurity(key)),
                }),
            })
        },
    )?;
    Ok(SecurityDefinitions {
        additional_properties,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use serde_json::json;

    fn one_definition(def: Value) -> Result<Schema, GnosticError> {
        let doc = Document::from_json(json!({"swagger": "2.0", "definitions": {"d": def}}))?;
        let mut defs = doc.definitions.unwrap().additional_properties;
        Ok(defs.remove(0).value.unwrap())
    }

    #[test]
    fn a_schemas_fields_go_to_gnostics_fields() {
        let s = one_definition(json!({
            "description": "d",
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": "array", "items": {"$ref": "#/definitions/x"}},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "t": {"type": "string", "format": "date-time"}
            }
        }))
        .unwrap();
        assert_eq!(s.description, "d");
        assert_eq!(s.r#type.unwrap().value, ["object"]);
        assert_eq!(s.required, ["a"]);
        let props = s.properties.unwrap().additional_properties;
        let names: Vec<&str> = props.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "m", "t"], "in the document's order");
        let items = props[0].value.as_ref().unwrap().items.as_ref().unwrap();
        assert_eq!(items.schema[0].r#ref, "#/definitions/x");
        let extra = props[1]
            .value
            .as_ref()
            .unwrap()
            .additional_properties
            .as_ref();
        let Some(additional_properties_item::Oneof::Schema(extra)) = extra.unwrap().oneof.as_ref()
        else {
            panic!("additionalProperties is a schema");
        };
        assert_eq!(extra.r#type.as_ref().unwrap().value, ["string"]);
        assert_eq!(props[2].value.as_ref().unwrap().format, "date-time");
    }

    #[test]
    fn vendor_extensions_keep_their_values_as_yaml() {
        let gvk = json!([{"group": "apps", "kind": "Deployment", "version": "v1"}]);
        let s = one_definition(json!({"x-kubernetes-group-version-kind": gvk})).unwrap();
        let ext = &s.vendor_extension[0];
        assert_eq!(ext.name, "x-kubernetes-group-version-kind");
        // JSON is YAML (flow style): it reads back as the same value.
        let yaml = &ext.value.as_ref().unwrap().yaml;
        assert_eq!(serde_json::from_str::<Value>(yaml).unwrap(), gvk);
    }

    #[test]
    fn a_key_no_message_holds_is_an_error_naming_where() {
        let e = one_definition(json!({"properties": {"a/b": {"minimum": 1}}})).unwrap_err();
        assert_eq!(
            e,
            GnosticError::Unsupported {
                at: "/definitions/d/properties/a~1b".into(),
                key: "minimum".into()
            }
        );
    }

    #[test]
    fn a_field_of_the_wrong_shape_is_an_error() {
        let e = one_definition(json!({"required": "a"})).unwrap_err();
        assert!(
            matches!(
                e,
                GnosticError::Shape {
                    expected: "an array",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn parameters_are_body_query_or_path_by_where_they_are() {
        let doc = Document::from_json(json!({"paths": {"/p": {
            "parameters": [{"name": "n", "in": "path", "required": true, "type": "string", "uniqueItems": true}],
            "patch": {
                "parameters": [
                    {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Patch"}},
                    {"name": "dryRun", "in": "query", "type": "string", "uniqueItems": true}
                ],
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/D"}}},
                "x-kubernetes-action": "patch"
            }
        }}}))
        .unwrap();
        let item = doc.paths.unwrap().path.remove(0).value.unwrap();
        let kind = |p: &ParametersItem| match p.oneof.as_ref().unwrap() {
            parameters_item::Oneof::Parameter(p) => match p.oneof.as_ref().unwrap() {
                parameter::Oneof::BodyParameter(_) => "body",
                parameter::Oneof::NonBodyParameter(NonBodyParameter { oneof: Some(n) }) => {
                    match n {
                        non_body_parameter::Oneof::QueryParameterSubSchema(_) => "query",
                        non_body_parameter::Oneof::PathParameterSubSchema(_) => "path",
                    }
                }
                _ => "none",
            },
            _ => "reference",
        };
        assert_eq!(kind(&item.parameters[0]), "path");
        let patch = item.patch.unwrap();
        let kinds: Vec<&str> = patch.parameters.iter().map(kind).collect();
        assert_eq!(kinds, ["body", "query"]);
        assert_eq!(patch.vendor_extension[0].name, "x-kubernetes-action");
        assert_eq!(patch.responses.unwrap().response_code[0].name, "200");
    }

    #[test]
    fn the_encoding_decodes_to_the_same_document() {
        let doc = Document::from_json(json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.20.2"},
            "definitions": {"d": {"type": "object", "additionalProperties": true}},
            "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}},
            "security": [{"BearerToken": []}]
        }))
        .unwrap();
        assert_eq!(Document::decode(&doc.encode_to_vec()[..]).unwrap(), doc);
    }
}
