//! Writes to the simulated types: create, update, delete and the three
//! non-apply patches (`patch`), with the apiserver's update rules
//! (`Sim::update`), and why they fail, naming the object written.
//! Writes answer JSON whatever the `Accept` header.

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
    /// A create or update whose body is not JSON (kubectl sends protobuf):
    /// the simulator reads JSON only, and says so.
    #[error("the kubecache simulator reads JSON request bodies only, not {0:?}")]
    NotJson(String),
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
        let obj = read_body(req).await?;
        self.answer(sim.create(t, ns, obj), StatusCode::CREATED, "")
    }

    pub(super) async fn update(&self, name: &str, req: Request<Incoming>) -> Answer {
        let Write { sim, t, ns } = *self;
        let obj = read_body(req).await?;
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

/// The object a create or update writes: JSON (what `Content-Type` says,
/// or none said), as the simulator reads no other format.
async fn read_body(req: Request<Incoming>) -> Result<Value, WriteRequestError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Some(ct) = content_type.filter(|ct| {
        let media = ct.split(';').next().unwrap_or("").trim();
        !media.is_empty() && media != "application/json" && media != "*/*"
    }) {
        return Err(WriteRequestError::NotJson(ct));
    }
    let body = body(req).await?;
    let v: Value = serde_json::from_slice(&body).map_err(WriteRequestError::UnknownFormat)?;
    if !v.get("metadata").is_some_and(Value::is_object) {
        return Err(WriteRequestError::MetadataNotAnObject);
    }
    Ok(v)
}
