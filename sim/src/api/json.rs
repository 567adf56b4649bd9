//! The simulator's JSON answers: a body as it is, or a value written as
//! the apiserver writes one (compact, a newline after it).

use bytes::Bytes;
use http::{Response, StatusCode};
use kubecache::body::{self, Body};
use kubecache::serving::respond::json_response;
use serde_json::Value;

pub(super) fn respond(code: StatusCode, body: Bytes) -> Response<Body> {
    json_response(code, body::full(body))
}

pub(super) fn value(code: StatusCode, v: Value) -> Response<Body> {
    let mut b = serde_json::to_vec(&v).unwrap_or_default();
    b.push(b'\n');
    respond(code, Bytes::from(b))
}
