//! Consistent reads the cache could not prove fresh (`freshness`: a quiet
//! type in front of v1.20, a slow or failed proof) go upstream — but
//! identical ones arriving together share one upstream read: the next one
//! that *starts after each of them arrived* (`flight`), so that every
//! answer reflects every write committed before its request, as the
//! apiserver's own would. A hundred clients listing the same type at once
//! cost the upstream one or two lists, not a hundred. So do the later
//! pages of those lists, which the cache cannot answer when it has not
//! seen their version (a quiet type, in front of v1.20): a read at an
//! exact version is the same whenever it is made.
//!
//! Identical means the same path and query and the same headers the answer
//! depends on (`Accept`, whether gzip is taken, the `User-Agent`, which
//! decides indentation). The shared read is kubecache's own, as the
//! reflector's are: in authorize mode each client's read was authorized
//! upstream (`SubjectAccessReview`) before it was decided here, exactly as
//! a read the cache answers is. Its answer — status, headers, body — is
//! held whole for its callers, up to [`MAX_SHARED_BYTES`]; a larger one
//! is not shared: each caller forwards its own.

use crate::body::{self, Body};
use crate::flight::Joined;
use crate::request::{Request, Shape};
use crate::upstream::Upstream;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use std::sync::Arc;

/// The largest answer held for sharing.
pub const MAX_SHARED_BYTES: usize = 256 * 1024 * 1024;

/// What makes two reads identical: the answer depends on nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    path_and_query: String,
    accept: Option<HeaderValue>,
    gzip: bool,
    user_agent: Option<HeaderValue>,
}

/// An upstream answer, held for every caller that shares it.
#[derive(Debug, Clone)]
pub struct Shared {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

/// Why a shared read has no answer to share: each caller then forwards
/// its own.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CoalesceError {
    #[error("asking the upstream: {0}")]
    Upstream(String),
    #[error("the answer is larger than {MAX_SHARED_BYTES} bytes")]
    TooLarge,
}

pub type Flights = crate::flight::Flights<Key, Result<Shared, CoalesceError>>;

/// Whether a forwarded read can be shared: a consistent get or list no
/// proof answered (shared with those that arrived before the read began),
/// or a list at an exact version the cache does not hold — a continue
/// token's, or `resourceVersionMatch=Exact` — whose answer is the same
/// whenever it is read (a walk's later pages, which a hundred clients
/// walking from one shared first page all ask alike).
pub fn shareable(request: &Request, unproven: bool, exact: bool) -> bool {
    let read = request.method == http::Method::GET
        && matches!(request.shape(), Some(Shape::Object | Shape::List));
    let consistent =
        request.options.resource_version.is_none() && request.options.continue_token.is_none();
    read && ((unproven && consistent) || (exact && !consistent))
}

impl Key {
    pub fn of(request: &Request, headers: &HeaderMap) -> Key {
        Key {
            path_and_query: request.request_uri.clone(),
            accept: headers.get(header::ACCEPT).cloned(),
            gzip: request.gzip,
            user_agent: headers.get(header::USER_AGENT).cloned(),
        }
    }
}

/// The answer of the next upstream read of `key` through `up` (as
/// kubecache) that starts after this call, shared with every identical
/// read that asked before it started.
pub async fn read(
    flights: &Arc<Flights>,
    up: &Arc<Upstream>,
    key: Key,
) -> Result<Response<Body>, CoalesceError> {
    let up = up.clone();
    let k = key.clone();
    let run = move || {
        let (up, k) = (up.clone(), k.clone());
        async move { ask(&up, &k).await }
    };
    let rt = tokio::runtime::Handle::current();
    let (answer, joined) = flights.join(key, &rt, run).await;
    crate::metrics::coalesced_read(joined == Joined::Began);
    let shared = answer
        .unwrap_or_else(|| Err(CoalesceError::Upstream("the shared read went away".into())))?;
    let mut resp = Response::new(body::full(shared.body));
    *resp.status_mut() = shared.status;
    *resp.headers_mut() = shared.headers;
    Ok(resp)
}

/// One upstream read of `key`, as kubecache.
async fn ask(up: &Upstream, key: &Key) -> Result<Shared, CoalesceError> {
    let mut req = http::Request::get(up.uri(&key.path_and_query));
    if let Some(a) = &key.accept {
        req = req.header(header::ACCEPT, a);
    }
    if key.gzip {
        req = req.header(header::ACCEPT_ENCODING, "gzip");
    }
    if let Some(ua) = &key.user_agent {
        req = req.header(header::USER_AGENT, ua);
    }
    let req = req
        .body(body::empty())
        .map_err(|e| CoalesceError::Upstream(e.to_string()))?;
    let resp = up
        .send(req)
        .await
        .map_err(|e| CoalesceError::Upstream(e.to_string()))?;
    let (parts, body) = resp.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_SHARED_BYTES);
    let body = match limited.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(CoalesceError::TooLarge)
        }
        Err(e) => return Err(CoalesceError::Upstream(e.to_string())),
    };
    let mut headers = parts.headers;
    for h in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::CONTENT_LENGTH,
        HeaderName::from_static("keep-alive"),
    ] {
        headers.remove(h);
    }
    Ok(Shared {
        status: parts.status,
        headers,
        body,
    })
}

/// Keeps the flights' type in one place for `ServeState`.
pub fn flights() -> Arc<Flights> {
    Arc::default()
}
