//! kubecache's HTTP front: accepting connections, dispatching each request
//! to the cache, the local endpoints or the upstream, and draining on shutdown.

pub mod health;
pub mod passthrough;
pub mod read;
pub mod route;
pub mod watch;

use crate::cache::bodies::{Finished, Output};
use crate::cache::Cache;
use crate::encode::pretty::Layout;
use crate::metrics::{self, ServedBy};
use crate::request::accept;
use crate::status::Status;
use crate::upstream::{full_body, Body, Upstream};
use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use route::{ConsistentReads, Decision};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

pub struct ServeState {
    pub cache: Arc<Cache>,
    /// The client forwarded requests go through (its connections run on
    /// the serving runtime, unlike the cache's).
    pub forward: Arc<Upstream>,
    pub consistent: ConsistentReads,
    pub shutting_down: AtomicBool,
    pub prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
}

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

/// A finished body with the headers the apiserver sends with it.
fn body_response(f: Finished, content_type: &'static str) -> Response<Body> {
    let mut r = typed_response(StatusCode::OK, full_body(f.bytes), content_type);
    if f.gzipped {
        let h = r.headers_mut();
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        h.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    r
}

pub fn status_response(s: &Status) -> Response<Body> {
    status_body_response(s, s.to_bytes())
}

/// An error made here for a request with these headers: written as the
/// apiserver's ErrorNegotiated writes it, which negotiates the error
/// without conversions (pretty as the request asks) and falls back to
/// encoding/json's indentation when nothing fits.
fn error_response(s: &Status, headers: &http::HeaderMap, pretty: bool) -> Response<Body> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    negotiated_error(s, accept, accept::Endpoint::ERRORS, Some(pretty))
}

/// An error written as ErrorNegotiated writes it for a server with the
/// `errors` endpoint's serializers, of which only JSON is written here:
/// compact when a clause fits (indented when `pretty` says so or the clause
/// has `pretty=1`; `None`: a server that never indents), else the indented
/// fallback.
pub fn negotiated_error(
    s: &Status,
    accept: Option<&str>,
    errors: accept::Endpoint,
    pretty: Option<bool>,
) -> Response<Body> {
    match accept::negotiate(accept, errors) {
        Some(n) if n.media == accept::Media::Protobuf => {
            let mut r = status_body_response(s, crate::encode::protobuf::status(s));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::encode::protobuf::CONTENT_TYPE),
            );
            r
        }
        Some(n) if pretty.is_some_and(|p| p || n.pretty) => {
            let body = Layout::Indented { raw_data: false }.apply(s.to_bytes());
            status_body_response(s, body)
        }
        Some(_) => status_response(s),
        None => status_body_response(s, s.to_indented_bytes()),
    }
}

fn status_body_response(s: &Status, body: Bytes) -> Response<Body> {
    let mut r = json_response(
        StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        full_body(body),
    );
    if let Some(secs) = s.retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

pub async fn handle(state: Arc<ServeState>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    if let Some(resp) = health::local(&state, &path, req.uri().query()) {
        return resp;
    }
    let decision = route::decide(
        &state.cache,
        state.consistent,
        req.method(),
        &path,
        req.uri().query(),
        req.headers(),
    );
    let rp = crate::request::ResourcePath::parse(&path);
    let watch = crate::request::ListOptions::parse(req.uri().query()).watch;
    let verb = crate::request::Verb::of(req.method(), rp.as_ref(), watch).as_str();
    let resource = rp.map(|p| p.resource).unwrap_or_default();
    let pretty = route::pretty_print(req.uri().query(), req.headers());
    match decision {
        Decision::Cache { tc, read, layout } => {
            let out = Output {
                layout,
                gzip: crate::request::accepts_gzip(req.headers()),
            };
            let content_type = read.content_type();
            match read::execute(&tc, read, out).await {
                read::Outcome::Body(f) => {
                    metrics::request(verb, &resource, 200, ServedBy::Cache);
                    body_response(f, content_type)
                }
                read::Outcome::Stream(r) => {
                    metrics::request(verb, &resource, r.status().as_u16(), ServedBy::Cache);
                    r
                }
                read::Outcome::Error(s) => {
                    metrics::request(verb, &resource, s.code, ServedBy::Cache);
                    error_response(&s, req.headers(), pretty)
                }
                read::Outcome::Forward(reason) => {
                    metrics::forwarded(reason.as_str());
                    forward(&state, req, verb, &resource).await
                }
            }
        }
        Decision::Reject(s) => {
            metrics::request(verb, &resource, s.code, ServedBy::Cache);
            error_response(&s, req.headers(), pretty)
        }
        Decision::Forward(reason) => {
            metrics::forwarded(reason.as_str());
            forward(&state, req, verb, &resource).await
        }
    }
}

async fn forward(
    state: &ServeState,
    req: Request<Incoming>,
    verb: &'static str,
    resource: &str,
) -> Response<Body> {
    let resp = passthrough::forward(&state.forward, req).await;
    metrics::request(verb, resource, resp.status().as_u16(), ServedBy::Upstream);
    resp
}

/// Serves kubecache until `shutdown` resolves; then fails readyz, stops
/// accepting and drains.
pub async fn run(
    listener: TcpListener,
    state: Arc<ServeState>,
    shutdown: impl std::future::Future<Output = ()>,
    drain: Duration,
) {
    let st = state.clone();
    let shutdown = async move {
        shutdown.await;
        st.shutting_down.store(true, Ordering::Release);
    };
    serve_http(
        listener,
        move |req| handle(state.clone(), req),
        shutdown,
        drain,
    )
    .await
}

/// The accept loop shared by the proxy and the simulator: HTTP/1 and h2c,
/// upgrades allowed, open connections given up to `drain` after `shutdown`.
pub async fn serve_http<F, Fut>(
    listener: TcpListener,
    handler: F,
    shutdown: impl std::future::Future<Output = ()>,
    drain: Duration,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Header names as Go's net/http writes them (Content-Type, not
    // content-type): a client must not tell kubecache from the apiserver.
    builder.http1().title_case_headers(true);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer): (_, SocketAddr) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let h = handler.clone();
                let svc = hyper::service::service_fn(move |req| {
                    let h = h.clone();
                    async move { Ok::<_, Infallible>(h(req).await) }
                });
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
                let conn = graceful.watch(conn.into_owned());
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("drained"),
        _ = tokio::time::sleep(drain) => tracing::warn!("drain deadline passed; closing"),
    }
}
