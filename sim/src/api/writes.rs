//! Writes to the simulated types: create, update, delete and the three
//! non-apply patches (`patch`), with the apiserver's update rules
//! (`Sim::update`), and why they fail, naming the object written.
//! Create and update bodies are read as JSON or, as kubectl sends typed
//! objects, Kubernetes protobuf (decoded to JSON against the v1.20 schema);
//! writes answer JSON whatever the `Accept` header.

use super::json::respond;
use crate::patch::PatchType;
use crate::{Sim, SimType, WriteError};
use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kubecache::body::Body;
use kubecache::encode::codec::Entry;
use kubecache::encode::json;
use kubecache::encode::protobuf::{self, decode, DecodeError};
use serde_json::Value;
use std::sync::Arc;

/// Why a write request gets an error instead, worded as the apiserver
/// words it where a message is all its Status says.
#[derive(Debug, thiserror::Error)]
pub(super) enum WriteRequestError {
    /// The body could not be read off the connection.
    #[error(transparent)]
    Body(hyper::Error),
    #[error("the body of the request was in an unknown format: {0}")]
    UnknownFormat(#[source] serde_json::Error),
    #[error("metadata must be an object")]
    MetadataNotAnObject,
    /// A protobuf body whose envelope names a kind but whose object does
    /// not decode (or is of no kind v1.20 has), as the apiserver's
    /// `transformDecodeError` words it.
    #[error("{kind} in version {version:?} cannot be handled as a {into}: {error}")]
    Undecodable {
        kind: String,
        version: String,
        into: String,
        #[source]
        error: DecodeError,
    },
    /// A protobuf body without an envelope to name a kind: the same
    /// function's words, with the body's first bytes.
    #[error("the object provided is unrecognized (must be of type {into}): {error} ({summary})")]
    Unrecognized {
        into: String,
        #[source]
        error: DecodeError,
        summary: String,
    },
    /// A create or update whose body is neither JSON nor protobuf (YAML,
    /// say): the simulator reads no other format, and says so.
    #[error("the kubecache simulator reads JSON and protobuf request bodies only, not {0:?}")]
    UnreadableMedia(String),
    /// A PATCH whose `Content-Type` is no patch format the simulator takes.
    #[error("no patch format is {0:?}")]
    UnsupportedPatchType(Option<String>),
    /// The simulator refused the write of the object `name` (none for a
    /// create) of `resource`, whose kind is `kind`.
    #[error("the write of {resource} {name:?} was refused")]
    Refused {
        group: String,
        resource: String,
        kind: String,
        name: String,
        #[source]
        error: WriteError,
    },
}

/// A write to a simulated type, in a namespace or not.
pub(super) struct Write<'a> {
    pub(super) sim: &'a Sim,
    pub(super) t: &'a SimType,
    pub(super) ns: Option<&'a str>,
}

type Answer = Result<Response<Body>, WriteRequestError>;

impl Write<'_> {
    pub(super) async fn create(&self, req: Request<Incoming>) -> Answer {
        let Write { sim, t, ns } = *self;
        let obj = read_body(t, req).await?;
        self.answer(sim.create(t, ns, obj), StatusCode::CREATED, "")
    }

    pub(super) async fn update(&self, name: &str, req: Request<Incoming>) -> Answer {
        let Write { sim, t, ns } = *self;
        let obj = read_body(t, req).await?;
        self.answer(sim.update(t, ns, name, obj), StatusCode::OK, name)
    }

    pub(super) async fn patch(&self, name: &str, req: Request<Incoming>) -> Answer {
        let Write { sim, t, ns } = *self;
        // The patch type is checked first, as go-restful's route does.
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let Some(ty) = PatchType::from_content_type(content_type) else {
            let content_type = content_type.map(str::to_string);
            return Err(WriteRequestError::UnsupportedPatchType(content_type));
        };
        let body = body(req).await?;
        self.answer(sim.patch(t, ns, name, ty, &body), StatusCode::OK, name)
    }

    /// A delete names its object by store key (`ns/name`), not by `ns`.
    pub(super) fn delete(&self, key: &str, name: &str) -> Answer {
        let Write { sim, t, .. } = *self;
        self.answer(sim.delete(t, key), StatusCode::OK, name)
    }

    /// The written object, or why the write of `name` was refused.
    fn answer(&self, r: Result<Arc<Entry>, WriteError>, ok: StatusCode, name: &str) -> Answer {
        let t = self.t;
        match r {
            Ok(e) => Ok(respond(ok, json::object(&t.codec, &e))),
            Err(error) => Err(WriteRequestError::Refused {
                group: t.rt.gvr.group.clone(),
                resource: t.rt.gvr.resource.clone(),
                kind: t.rt.kind.clone(),
                name: name.to_string(),
                error,
            }),
        }
    }
}

async fn body(req: Request<Incoming>) -> Result<Bytes, WriteRequestError> {
    let body = req.into_body().collect().await;
    Ok(body.map_err(WriteRequestError::Body)?.to_bytes())
}

/// The object a create or update of a `t` writes: JSON (what
/// `Content-Type` says, or none said) or Kubernetes protobuf.
async fn read_body(t: &SimType, req: Request<Incoming>) -> Result<Value, WriteRequestError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let media = content_type
        .as_deref()
        .map(|ct| ct.split(';').next().unwrap_or("").trim());
    let v = match media {
        None | Some("" | "application/json" | "*/*") => {
            let body = body(req).await?;
            serde_json::from_slice(&body).map_err(WriteRequestError::UnknownFormat)?
        }
        Some(protobuf::CONTENT_TYPE) => from_protobuf(t, &body(req).await?)?,
        Some(_) => {
            let ct = content_type.unwrap_or_default();
            return Err(WriteRequestError::UnreadableMedia(ct));
        }
    };
    if !v.get("metadata").is_some_and(Value::is_object) {
        return Err(WriteRequestError::MetadataNotAnObject);
    }
    Ok(v)
}

/// A protobuf body as the JSON of its object. As the apiserver's
/// serializer, the envelope's empty kind or version default to `t`'s.
fn from_protobuf(t: &SimType, body: &[u8]) -> Result<Value, WriteRequestError> {
    let into = t.rt.kind.clone();
    let env = decode::envelope(body).map_err(|error| WriteRequestError::Unrecognized {
        into: into.clone(),
        error,
        summary: summarize(body),
    })?;
    let kind = match env.kind.as_str() {
        "" => t.rt.kind.as_str(),
        k => k,
    };
    let api_version = match env.api_version.as_str() {
        "" => t.rt.gvr.api_version(),
        v => v.to_string(),
    };
    protobuf::decode_message(&api_version, kind, env.raw).map_err(|error| {
        let version = api_version.rsplit('/').next().unwrap_or("").to_string();
        WriteRequestError::Undecodable {
            kind: kind.to_string(),
            version,
            into,
            error,
        }
    })
}

/// The apiserver's `summarizeData(body, 30)`: the first 30 bytes, as
/// text if the body looks like JSON, else in hex.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let head = &body[..body.len().min(MAX)];
    let more = if body.len() > MAX { " ..." } else { "" };
    match body.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}
