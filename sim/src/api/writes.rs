//! Writes to the simulated types: create, update, delete and the three
//! non-apply patches (`patch`), with the apiserver's update rules
//! (`Sim::update`), and their failures as the apiserver's Status errors.
//! Writes answer JSON whatever the `Accept` header.

use super::json::respond;
use crate::patch::{PatchError, PatchType};
use crate::{Sim, SimType, WriteError};
use http::{header, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kubecache::body::Body;
use kubecache::encode::codec::Entry;
use kubecache::encode::json;
use kubecache::serve::respond::status_response;
use kubecache::status::{Cause, Details, Status};
use serde_json::Value;
use std::sync::Arc;

/// A write to a simulated type, in a namespace or not.
pub(super) struct Write<'a> {
    pub(super) sim: &'a Sim,
    pub(super) t: &'a SimType,
    pub(super) ns: Option<&'a str>,
}

impl Write<'_> {
    pub(super) async fn create(&self, req: Request<Incoming>) -> Response<Body> {
        let Write { sim, t, ns } = *self;
        match read_body(req).await {
            Ok(obj) => write_result(t, sim.create(t, ns, obj), StatusCode::CREATED, None),
            Err(s) => status_response(&s),
        }
    }

    pub(super) async fn update(&self, name: &str, req: Request<Incoming>) -> Response<Body> {
        let Write { sim, t, ns } = *self;
        match read_body(req).await {
            Ok(obj) => write_result(t, sim.update(t, ns, name, obj), StatusCode::OK, Some(name)),
            Err(s) => status_response(&s),
        }
    }

    pub(super) async fn patch(&self, name: &str, req: Request<Incoming>) -> Response<Body> {
        let Write { sim, t, ns } = *self;
        // The patch type is checked first, as go-restful's route does.
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let Some(ty) = PatchType::from_content_type(content_type) else {
            return status_response(
                &Status::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
                    .with_details(Details::default()),
            );
        };
        match req.into_body().collect().await {
            Ok(body) => write_result(
                t,
                sim.patch(t, ns, name, ty, &body.to_bytes()),
                StatusCode::OK,
                Some(name),
            ),
            Err(e) => status_response(&Status::bad_request(e.to_string())),
        }
    }

    /// A delete names its object by store key (`ns/name`), not by `ns`.
    pub(super) fn delete(&self, key: &str, name: &str) -> Response<Body> {
        let Write { sim, t, .. } = *self;
        write_result(t, sim.delete(t, key), StatusCode::OK, Some(name))
    }
}

async fn read_body(req: Request<Incoming>) -> Result<Value, Status> {
    let body = req
        .into_body()
        .collect()
        .await
        .map_err(|e| Status::bad_request(e.to_string()))?
        .to_bytes();
    let v: Value = serde_json::from_slice(&body).map_err(|e| {
        Status::bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))
    })?;
    if !v.get("metadata").is_some_and(Value::is_object) {
        return Err(Status::bad_request("metadata must be an object"));
    }
    Ok(v)
}

fn write_result(
    t: &SimType,
    r: Result<Arc<Entry>, WriteError>,
    ok: StatusCode,
    name: Option<&str>,
) -> Response<Body> {
    let (g, res) = (&t.rt.gvr.group, &t.rt.gvr.resource);
    match r {
        Ok(e) => respond(ok, json::object(&t.codec, &e)),
        Err(WriteError::AlreadyExists) => {
            status_response(&Status::already_exists(g, res, name.unwrap_or("")))
        }
        Err(WriteError::NotFound) => {
            status_response(&Status::not_found(g, res, name.unwrap_or("")))
        }
        Err(WriteError::Conflict) => status_response(&Status::conflict(g, res, name.unwrap_or(""))),
        Err(WriteError::BadBody(m)) => status_response(&Status::bad_request(m)),
        Err(WriteError::Invalid { field, message }) => {
            let cause = Cause {
                reason: "FieldValueInvalid".into(),
                message,
                field,
            };
            status_response(&Status::invalid(
                g,
                &t.rt.kind,
                name.unwrap_or(""),
                vec![cause.clone(), cause],
            ))
        }
        Err(WriteError::Precondition(m)) => {
            status_response(&Status::conflict_because(g, res, name.unwrap_or(""), &m))
        }
        Err(WriteError::Patch(e)) => status_response(&patch_status(e)),
    }
}

/// A patch's failure as the apiserver answers it.
fn patch_status(e: PatchError) -> Status {
    match e {
        PatchError::BadRequest(m) => Status::bad_request(m),
        PatchError::DoesNotApply => {
            Status::new(422, "Invalid", PatchError::DoesNotApply.to_string())
                .with_details(Details::default())
        }
        PatchError::NotAnObject(value) => Status::invalid(
            "",
            "",
            "",
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {value}"),
                field: "patch".into(),
            }],
        ),
        PatchError::TooLarge(m) => Status::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {m}"),
        ),
        PatchError::Unknown(m) => Status::new(500, "", m),
    }
}
