//! The answers kubecache writes itself, with the headers the apiserver
//! sends with them: bodies from the cache, and `Status` errors negotiated
//! as its `ErrorNegotiated` negotiates them.

use super::limits::BytesInFlight;
use crate::body::{self, Body};
use crate::cache::bodies::stream::Streamed;
use crate::cache::bodies::Finished;
use crate::encode::pretty::Layout;
use crate::request::accept::{Accept, Endpoint, Media};
use crate::status::Status;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};

/// The slices a counted body is written in.
const SLICE: usize = 256 * 1024;

/// A JSON answer with the headers the apiserver sends with one.
pub fn json_response(status: StatusCode, body: Body) -> Response<Body> {
    typed_response(status, body, "application/json")
}

/// An answer of a content type with the headers the apiserver sends.
pub fn typed_response(
    status: StatusCode,
    body: Body,
    content_type: &'static str,
) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// With the headers of a gzipped body, if it is one.
fn encoded(mut r: Response<Body>, gzipped: bool) -> Response<Body> {
    if gzipped {
        let h = r.headers_mut();
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        h.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    r
}

/// A watch from the cache for a downstream kubecache that takes it
/// gzipped (`request::WATCH_ENCODING`): one gzip stream, flushed after
/// each batch of events, ended (with its trailer) where the plain stream
/// ends.
pub fn gzipped_watch(r: Response<Body>) -> Response<Body> {
    let (mut parts, body) = r.into_parts();
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    parts.headers.append(
        header::VARY,
        HeaderValue::from_static(crate::request::WATCH_ENCODING),
    );
    Response::from_parts(parts, crate::upstream::watch_gzip::gzip_watch(body))
}

/// A body from the cache, its bytes counted in `in_flight` until the
/// client has them: written out in slices of one allocation, which the
/// body holds until its last slice is taken, so that the count ends when
/// the memory can go.
pub fn body_response(
    f: Finished,
    content_type: &'static str,
    in_flight: &std::sync::Arc<BytesInFlight>,
) -> Response<Body> {
    let reader = in_flight.read(&f.bytes);
    let body = body::holding(body::sliced(f.bytes, SLICE), reader);
    encoded(
        typed_response(StatusCode::OK, body, content_type),
        f.gzipped,
    )
}

/// A list from the cache: finished whole (`body_response`), or written as
/// the client reads it.
pub fn list_response(
    list: Streamed,
    content_type: &'static str,
    in_flight: &std::sync::Arc<BytesInFlight>,
) -> Response<Body> {
    match list {
        Streamed::Whole(f) => body_response(f, content_type, in_flight),
        Streamed::Stream { body, gzipped } => {
            encoded(typed_response(StatusCode::OK, body, content_type), gzipped)
        }
    }
}

/// A Status as compact JSON, whatever the request accepts (writes and
/// the simulator's answers).
pub fn status_response(s: &Status) -> Response<Body> {
    status_body_response(s, s.to_bytes())
}

/// An error written as ErrorNegotiated writes it for a server with the
/// `errors` endpoint's serializers, of which only JSON and protobuf are
/// written here: compact when a clause fits (indented when `pretty` says
/// so or the clause has `pretty=1`; `None`: a server that never indents),
/// else the indented fallback.
pub fn negotiated_error(
    s: &Status,
    accept: &Accept,
    errors: Endpoint,
    pretty: Option<bool>,
) -> Response<Body> {
    match accept.negotiate(errors) {
        Some(n) if n.media == Media::Protobuf => {
            let mut r = status_body_response(s, crate::encode::protobuf::status(s));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::encode::protobuf::CONTENT_TYPE),
            );
            r
        }
        Some(n) if pretty.is_some_and(|p| p || n.pretty) => {
            let compact = s.to_bytes();
            // A Status is a few hundred bytes: were even that refused, the
            // compact form still says it.
            let body = Layout::Indented { raw_data: false }
                .apply(compact.clone())
                .unwrap_or(compact);
            status_body_response(s, body)
        }
        Some(_) => status_response(s),
        None => status_body_response(s, s.to_indented_bytes()),
    }
}

fn status_body_response(s: &Status, body: Bytes) -> Response<Body> {
    let mut r = json_response(
        StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body::full(body),
    );
    if let Some(secs) = s.retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// Go's `http.Error`: the text and a newline, as plain text, not to be
/// sniffed.
pub fn plain_text(status: StatusCode, text: String) -> Response<Body> {
    let mut r = Response::new(body::full(format!("{text}\n")));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    r
}
