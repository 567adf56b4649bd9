//! kubecache's HTTP front. Every request goes through the same phases:
//!
//! 1. **parse** — read once into a [`Request`] (`request::parse`);
//! 2. **admit** — whether kubecache answers it at all (`auth`: in
//!    trust-local mode, only for a loopback host);
//! 3. kubecache's own endpoints answer theirs (`health`);
//! 4. **authenticate** and **authorize** (`auth`);
//! 5. **decide and read** — [`route::route`], the one place a request is
//!    decided: answered from the cache (`read`, `watch`), refused, or
//!    forwarded with its reason, fallbacks found by reading included;
//! 6. **respond** — the answer, the upstream's (`passthrough`), or the
//!    error as the apiserver's `Status` (`errors`, `respond`); a watch the
//!    cache answers to a WebSocket request over WebSocket (`websocket`).
//!
//! 7. **record** — counted and timed once, in [`handle`];
//! 8. **finish** — what every answer carries out (a stale answer's
//!    Warning, a watch's drain and gauge, the client's slot).
//!
//! [`handle`] reads as these phases: `decide` (2–5), `answer` (6), the
//! record, `finish`.
//!
//! `listener` accepts connections (over TLS with `tls`), bounds them, and
//! drains them on shutdown; `drain` ends watches when it starts.

pub mod auth;
pub mod coalesce;
pub mod drain;
pub mod errors;
pub mod health;
pub mod limits;
pub mod listener;
pub mod passthrough;
pub mod read;
pub mod respond;
pub mod route;
pub mod state;
pub mod status_page;
pub mod tls;
pub mod watch;
pub mod websocket;

pub use state::{ConsistentReads, ServeState};

use crate::body::Body;
use crate::metrics::{self, ServedBy};
use crate::request::accept::Endpoint;
use crate::request::Request;
use errors::ServeError;
use http::Response;
use hyper::body::Incoming;
use read::Answer;
use route::Route;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// One request, phase by phase: parse, then [`decide`] (admit, kubecache's
/// own endpoints, authenticate, authorize, route), [`answer`], record,
/// [`finish`].
pub async fn handle(state: Arc<ServeState>, req: http::Request<Incoming>) -> Response<Body> {
    let started = std::time::Instant::now();
    let mut request = Request::parse(req.method(), req.uri(), req.headers());
    let decision = match decide(&state, &mut request, &req).await {
        Decided::Local(resp) => return resp,
        Decided::Routed(decision) => decision,
    };
    let answered = answer(&state, &request, decision.route, req).await;
    // Recorded once per request, here: a WebSocket watch as its 101.
    let status = match answered.websocket {
        Some(_) => http::StatusCode::SWITCHING_PROTOCOLS,
        None => answered.resp.status(),
    };
    metrics::request(
        request.verb.as_str(),
        request.resource_name(),
        status.as_u16(),
        answered.served_by,
        started.elapsed(),
    );
    finish(&state, &request, answered, decision.stale, decision.slot)
}

/// What [`decide`] came to: an answer of kubecache's own endpoints, or a
/// route with what the answer carries.
enum Decided {
    Local(Response<Body>),
    Routed(Decision),
}

struct Decision {
    route: Route,
    /// The Warning a stale answer from the cache carries.
    stale: Option<route::Stale>,
    /// The client's in-flight slot, held until the answer is written.
    slot: Option<limits::Slot>,
}

/// Admit, kubecache's own endpoints, authenticate, authorize, limits, and
/// then [`route::route`]: every refusal on the way is a route too.
async fn decide(
    state: &ServeState,
    request: &mut Request,
    req: &http::Request<Incoming>,
) -> Decided {
    let refused = |e: ServeError| {
        Decided::Routed(Decision {
            route: Route::Refused(e),
            stale: None,
            slot: None,
        })
    };
    if let Err(e) = auth::admit(&state.auth, request) {
        return refused(e.into());
    }
    if let Some(resp) = health::probe(state, &request.path, req.uri().query()) {
        return Decided::Local(resp);
    }
    let peer = req.extensions().get::<listener::PeerCertificates>();
    let access = state.access.as_deref();
    let mut slot = None;
    let allowed = async {
        state.limits.check_size(request, content_length(req))?;
        auth::authenticate(&state.auth, access, request, peer).await?;
        auth::authorize(&state.auth, request)?;
        slot = state.limits.admit(request)?;
        Ok::<(), ServeError>(())
    };
    if let Err(e) = allowed.await {
        return refused(e);
    }
    // Its own endpoints that need the client authorized first.
    let own = if health::is_metrics(state, &request.path) {
        Some(health::metrics as fn(&ServeState) -> Response<Body>)
    } else if request.path == status_page::PATH && req.method() == http::Method::GET {
        Some(if request.accept.names_json_not_html() {
            status_page_json as fn(&ServeState) -> Response<Body>
        } else {
            status_page_html
        })
    } else {
        None
    };
    if let Some(respond) = own {
        return match auth::authorize_path(access, request).await {
            Ok(()) => Decided::Local(respond(state)),
            Err(e) => Decided::Routed(Decision {
                route: Route::Refused(e.into()),
                stale: None,
                slot,
            }),
        };
    }
    let (route, stale) = route::route(state, request).await;
    Decided::Routed(Decision { route, stale, slot })
}

fn status_page_json(state: &ServeState) -> Response<Body> {
    status_page::respond(state, true)
}

fn status_page_html(state: &ServeState) -> Response<Body> {
    status_page::respond(state, false)
}

/// The answer to a route, and who gave it.
struct Answered {
    resp: Response<Body>,
    served_by: ServedBy,
    /// A watch the cache answers to a WebSocket request: x/net's handshake
    /// accepted, the upgrade and the connection's slot.
    websocket: Option<(
        websocket::Accepted,
        hyper::upgrade::OnUpgrade,
        Option<listener::ConnectionSlot>,
    )>,
}

/// The cache's answer (a WebSocket watch's handshake decided before the
/// request is counted: a refusal with its status, an upgrade as a 101),
/// the refusal as the apiserver's Status, or the upstream's answer.
async fn answer(
    state: &ServeState,
    request: &Request,
    route: Route,
    mut req: http::Request<Incoming>,
) -> Answered {
    let cache = |resp| Answered {
        resp,
        served_by: ServedBy::Cache,
        websocket: None,
    };
    match route {
        Route::Answered(Answer::Body(body, content_type)) => cache(respond::body_response(
            body,
            content_type,
            &state.limits.in_flight,
        )),
        Route::Answered(Answer::List(list, content_type)) => cache(respond::list_response(
            list,
            content_type,
            &state.limits.in_flight,
        )),
        Route::Answered(Answer::Stream(resp)) => match websocket_watch(request, &resp, &req) {
            Some(Ok(accepted)) => {
                let slot = req.extensions().get::<listener::ConnectionSlot>().cloned();
                Answered {
                    resp,
                    served_by: ServedBy::Cache,
                    websocket: Some((accepted, hyper::upgrade::on(&mut req), slot)),
                }
            }
            Some(Err(e)) => cache(websocket::refusal(&e)),
            None => cache(resp),
        },
        Route::Refused(e) => cache(error(state, request, &e)),
        Route::Forward(reason) => Answered {
            resp: forward(state, request, reason, req).await,
            served_by: ServedBy::Upstream,
            websocket: None,
        },
    }
}

/// A read the cache does not answer, or anything else, sent upstream as
/// the client.
async fn forward(
    state: &ServeState,
    request: &Request,
    reason: route::ForwardReason,
    req: http::Request<Incoming>,
) -> Response<Body> {
    metrics::forwarded(reason.as_str());
    // A consistent read no proof could answer, or a page at a version the
    // cache has not seen: shared with the identical ones that arrive with
    // it, if it can be.
    let shareable = coalesce::shareable(request, reason.is_unproven(), reason.is_exact_elsewhere());
    let shared = if shareable && state.consistent == ConsistentReads::Prove {
        let key = coalesce::Key::of(request, req.headers());
        coalesce::read(&state.coalesced, &state.forward, key)
            .await
            .ok()
    } else {
        None
    };
    let max_body = state.limits.config.max_body_bytes;
    let resp = match shared {
        Some(resp) => Ok(resp),
        None => passthrough::forward(state, request, req, max_body).await,
    };
    resp.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "upstream unreachable");
        error(state, request, &e)
    })
}

/// What every answer carries on its way out: a stale one's Warning; a
/// successful watch's end at the drain, its gauge and (for a downstream
/// kubecache) gzip; the client's slot, held until the answer is written;
/// and a WebSocket watch's upgrade.
fn finish(
    state: &ServeState,
    request: &Request,
    answered: Answered,
    stale: Option<route::Stale>,
    slot: Option<limits::Slot>,
) -> Response<Body> {
    let Answered {
        mut resp,
        served_by,
        websocket,
    } = answered;
    if let Some(stale) = &stale {
        resp.headers_mut()
            .append(http::header::WARNING, stale.header());
    }
    let resp = if request.verb == crate::request::Verb::Watch && resp.status().is_success() {
        let (parts, body) = resp.into_parts();
        let content_type = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let body = drain::ending_at_drain(body, content_type, &state.drain);
        let open = metrics::LongRunning::watch(request.resource_name());
        let resp = Response::from_parts(parts, crate::body::holding(body, open));
        // Only a downstream kubecache asks, and only the cache's own
        // streams are compressed: a forwarded one is the upstream's, as it
        // came (gzipped already if the upstream is a kubecache). Never
        // over WebSocket, whose messages are the events themselves.
        if request.gzip_watch && served_by == ServedBy::Cache && websocket.is_none() {
            respond::gzipped_watch(resp)
        } else {
            resp
        }
    } else {
        resp
    };
    let resp = match slot {
        // Held until the answer is written: a watch's for as long as it streams.
        Some(slot) => limits::hold(resp, slot),
        None => resp,
    };
    match websocket {
        // The watch streams over the connection hyper hands over; the
        // session holds what the body held (its slot, the drain, the gauge).
        Some((accepted, on_upgrade, conn)) => {
            let resource = request.resource_name().to_string();
            websocket::upgrade(&accepted, on_upgrade, resp, conn, resource)
        }
        None => resp,
    }
}

/// A cache-served watch (`watch`, the cache's 200 stream) of a WebSocket
/// request: x/net's handshake of it, with its subprotocols as the
/// authenticators left them. `None` for anything else, answered as it is
/// (the apiserver's reads other than watches ignore `Upgrade`).
fn websocket_watch(
    request: &Request,
    watch: &Response<Body>,
    req: &http::Request<Incoming>,
) -> Option<Result<websocket::Accepted, websocket::WebSocketError>> {
    let ws = request.websocket.as_ref()?;
    if request.verb != crate::request::Verb::Watch || watch.status() != http::StatusCode::OK {
        return None;
    }
    let protocols = ws.protocols.as_deref();
    Some(websocket::handshake(
        req.method(),
        req.uri(),
        req.headers(),
        protocols,
    ))
}

/// The body's declared length, if it declares one.
fn content_length(req: &http::Request<Incoming>) -> Option<u64> {
    req.headers()
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// An error made here, written as the apiserver (at the upstream's
/// release) writes it for this request.
fn error(state: &ServeState, request: &Request, e: &ServeError) -> Response<Body> {
    if let Some(text) = errors::internal_error_text(&request.request_uri, e) {
        // The apiserver's own `InternalError`: plain text, not a Status.
        return respond::plain_text(http::StatusCode::INTERNAL_SERVER_ERROR, text);
    }
    if let Some(text) = errors::too_many_requests_text(e) {
        let mut r = respond::plain_text(http::StatusCode::TOO_MANY_REQUESTS, text.into());
        r.headers_mut()
            .insert(http::header::RETRY_AFTER, http::HeaderValue::from(1));
        return r;
    }
    let personality = state.cache.freshness().version().personality().0;
    let status = errors::status_as(e, personality);
    let mut resp = match e {
        // The upstream's failures were always written as compact JSON.
        ServeError::Forward(_) => respond::status_response(&status),
        _ => respond::negotiated_error(
            &status,
            &request.accept,
            Endpoint::ERRORS,
            Some(request.pretty),
        ),
    };
    if errors::is_refusal(e) {
        resp.headers_mut().insert(
            "x-content-type-options",
            http::HeaderValue::from_static("nosniff"),
        );
    }
    resp
}

/// How kubecache stops once asked to.
#[derive(Debug, Clone, Copy)]
pub struct Stop {
    /// How long it keeps accepting with readiness failing (the apiserver's
    /// `--shutdown-delay-duration`), for load balancers to catch up.
    pub delay: Duration,
    /// How long open connections then have to finish; watches are ended
    /// at its start.
    pub drain: Duration,
}

/// Serves kubecache (over TLS with `tls`, its files reloaded as they
/// change) until `shutdown` resolves; then fails readyz, keeps accepting
/// for `stop.delay`, stops accepting, ends open watches and drains.
pub async fn run(
    listener: TcpListener,
    tls: Option<tls::TlsServing>,
    state: Arc<ServeState>,
    shutdown: impl std::future::Future<Output = ()>,
    stop: Stop,
) {
    let st = state.clone();
    let shutdown = async move {
        shutdown.await;
        st.shutting_down.store(true, Ordering::Release);
    };
    let tls = tls.map(|t| {
        t.cert.keep_reloading();
        t.cert.server_config(t.clients)
    });
    let config = &state.limits.config;
    let limits = listener::ConnectionLimits {
        max_connections: config.max_connections.unwrap_or_else(|| {
            listener::max_connections_for(listener::open_files_limit(), limits::memory_limit())
        }),
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        max_header_bytes: Some(config.max_header_bytes),
    };
    let serving = listener::Serving {
        tls,
        limits,
        shutdown_delay: stop.delay,
        drain_for: stop.drain,
        drain: state.drain.clone(),
    };
    listener::serve(
        listener,
        serving,
        move |req| handle(state.clone(), req),
        shutdown,
    )
    .await
}
