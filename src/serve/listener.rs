//! The accept loop: HTTP/1 and h2c on one listener, or HTTP/1.1 and HTTP/2
//! over TLS (ALPN); upgrades allowed. It owns the connections' bounds — a
//! cap below the open-files limit, header-read and idle timeouts, accept
//! errors backed off — and their end: a delay after shutdown is asked,
//! then a drain with a deadline. kubecache's front and the simulator both
//! serve through it.

use crate::body::{self, Body};
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify, Semaphore};

/// How long a client has to finish its TLS handshake: our own limit, so
/// that a client that opens connections and never completes them holds
/// none for long.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What Go's `net/http` writes to a plain HTTP request sent to its TLS
/// port before closing the connection.
const PLAIN_HTTP_ANSWER: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// Writes [`PLAIN_HTTP_ANSWER`] and closes, reading what the client sent
/// meanwhile (for up to a second, 64 KiB at most): closed with its request
/// unread, the connection would be reset, and the answer lost with it.
async fn answer_plain_http(mut stream: tokio::net::TcpStream) {
    if stream.write_all(PLAIN_HTTP_ANSWER).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    let drain = async {
        let mut buf = [0u8; 4096];
        let mut left = 64 * 1024;
        while left > 0 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n.min(left),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

/// Whether the connection opens with what Go's
/// `tlsRecordHeaderLooksLikeHTTP` takes for plain HTTP rather than a TLS
/// record (its first five bytes), waiting for them no later than the
/// handshake's `deadline`.
async fn plain_http(stream: &tokio::net::TcpStream, deadline: tokio::time::Instant) -> bool {
    let mut head = [0u8; 5];
    let peek = async {
        loop {
            match stream.peek(&mut head).await {
                Ok(n) if n >= 5 => return true,
                // Closed, or nothing more to come: let the handshake fail.
                Ok(0) | Err(_) => return false,
                // A TLS record starts with 0x16; one byte tells.
                Ok(_) if head[0] == 0x16 => return false,
                Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    };
    matches!(tokio::time::timeout_at(deadline, peek).await, Ok(true))
        && matches!(&head, b"GET /" | b"HEAD " | b"POST " | b"PUT /" | b"OPTIO")
}

/// The certificates a TLS client presented (and the server's verifier
/// took), end-entity first: in every request's extensions.
#[derive(Debug, Clone)]
pub struct PeerCertificates(Arc<Vec<rustls::pki_types::CertificateDer<'static>>>);

impl PeerCertificates {
    pub fn new(chain: Vec<rustls::pki_types::CertificateDer<'static>>) -> Self {
        PeerCertificates(Arc::new(chain))
    }

    /// The client's own certificate, DER.
    pub fn end_entity(&self) -> Option<&[u8]> {
        self.0.first().map(|c| c.as_ref())
    }
}

/// How connections are held: how many at once, and how long one may sit
/// idle or dribble its request's headers.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Open connections at most; past it, idle ones are closed to make
    /// room and new ones wait in the listen backlog. Below the open-files
    /// limit, so that accepting never fails for want of a descriptor.
    pub max_connections: usize,
    /// An HTTP/1 request's header section must arrive within this (the
    /// apiserver's `ReadHeaderTimeout`, 32 s). hyper runs the same timer
    /// between requests, so an idle HTTP/1 connection closes after it.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed (the
    /// apiserver's `IdleTimeout`, 90 s): HTTP/2 ones, and those that never
    /// send a byte.
    pub idle_timeout: Duration,
    /// A request's header section at most (HTTP/1: 431, as hyper and Go
    /// answer; HTTP/2: the same, from h2), instead of hyper's defaults.
    pub max_header_bytes: Option<usize>,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: max_connections_for(open_files_limit(), None),
            header_read_timeout: Duration::from_secs(32),
            idle_timeout: Duration::from_secs(90),
            max_header_bytes: None,
        }
    }
}

/// The open-files limit, raised first to the hard limit as Go raises it
/// for the apiserver (a container's soft limit is often 1024).
pub fn open_files_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "reading the open-files limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
        }
    }
}

/// What a connection is counted at against the memory limit: an idle
/// HTTP/1 one held 23.9 KiB (hyper's buffers and its task; load benchmark),
/// a TLS one holds rustls' buffers besides.
const CONNECTION_BYTES: usize = 32 << 10;

/// The connections a limit of `open_files` leaves room for — an eighth of
/// it (at least 256) is kept for the upstream's connections, files and
/// the listener — and that an eighth of the container's `memory_limit`
/// holds (at least 1,024): 16,384 in `deploy/`'s 4 GiB, beside the
/// quarters for objects and for bytes in flight. Past it, idle
/// connections are closed to make room and new ones wait.
pub fn max_connections_for(open_files: u64, memory_limit: Option<usize>) -> usize {
    let reserve = (open_files / 8).max(256);
    let by_files =
        usize::try_from(open_files.saturating_sub(reserve).max(16)).unwrap_or(usize::MAX);
    let by_memory = memory_limit.map_or(usize::MAX, |m| (m / 8 / CONNECTION_BYTES).max(1024));
    by_files.min(by_memory)
}

/// The start of a drain, as every serving task sees it: connections close
/// after their current request, and watches end at an event's boundary.
#[derive(Clone)]
pub struct Drain(Arc<watch::Sender<bool>>);

impl Default for Drain {
    fn default() -> Self {
        Drain(Arc::new(watch::channel(false).0))
    }
}

impl Drain {
    pub fn start(&self) {
        self.0.send_replace(true);
    }

    pub fn started(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the drain has started.
    pub async fn wait(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|d| *d).await;
    }
}

/// How a listener serves, and how it stops: after `shutdown` resolves it
/// keeps accepting for `shutdown_delay` (readiness already failing, so
/// that load balancers stop sending before it stops taking), then stops
/// accepting, starts `drain`, and gives open connections up to `drain_for`.
#[derive(Clone, Default)]
pub struct Serving {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub limits: ConnectionLimits,
    pub shutdown_delay: Duration,
    pub drain_for: Duration,
    pub drain: Drain,
}

/// Serves `handler` on `listener` (over TLS with `tls`) until `shutdown`
/// resolves; then stops accepting and gives open connections up to
/// `drain` to finish.
pub async fn serve_http<F, Fut>(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    handler: F,
    shutdown: impl std::future::Future<Output = ()>,
    drain: Duration,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let serving = Serving {
        tls,
        drain_for: drain,
        ..Default::default()
    };
    serve(listener, serving, handler, shutdown).await
}

/// A connection's stream, plain or TLS: one type, so that one loop drives
/// either.
enum Stream {
    Plain(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>),
}

impl tokio::io::AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// What a connection is doing: requests in flight, and since when it has
/// had none.
struct Activity {
    inflight: AtomicUsize,
    idle_since: std::sync::Mutex<tokio::time::Instant>,
}

impl Activity {
    fn new() -> Arc<Self> {
        Arc::new(Activity {
            inflight: AtomicUsize::new(0),
            idle_since: std::sync::Mutex::new(tokio::time::Instant::now()),
        })
    }

    /// How long it has been idle, if it is.
    fn idle_for(&self) -> Option<Duration> {
        if self.inflight.load(AtomicOrdering::Acquire) > 0 {
            return None;
        }
        Some(
            self.idle_since
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .elapsed(),
        )
    }
}

/// A request in flight on its connection, until its response is written
/// (or dropped).
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(a: &Arc<Activity>) -> Self {
        a.inflight.fetch_add(1, AtomicOrdering::AcqRel);
        InFlight(a.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = tokio::time::Instant::now();
        self.0.inflight.fetch_sub(1, AtomicOrdering::AcqRel);
    }
}

/// Accept errors (EMFILE above all) are retried after a wait that grows
/// from 5 ms to 1 s, as Go's `net/http` does, and logged at most once a
/// second: a full descriptor table must not become a busy loop or a flood
/// of log lines.
struct AcceptBackoff {
    wait: Duration,
    failed: u64,
    logged: Option<tokio::time::Instant>,
}

impl AcceptBackoff {
    fn new() -> Self {
        AcceptBackoff {
            wait: Duration::ZERO,
            failed: 0,
            logged: None,
        }
    }

    fn succeeded(&mut self) {
        self.wait = Duration::ZERO;
    }

    async fn failed(&mut self, e: &std::io::Error) {
        self.failed += 1;
        self.wait = (self.wait * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
        if self
            .logged
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!(error = %e, failures = self.failed, retry_in = ?self.wait, "accept failed");
            self.logged = Some(tokio::time::Instant::now());
            self.failed = 0;
        }
        tokio::time::sleep(self.wait).await;
    }
}

/// [`serve_http`] with every setting: see [`Serving`] and
/// [`ConnectionLimits`].
pub async fn serve<F, Fut>(
    listener: TcpListener,
    serving: Serving,
    handler: F,
    shutdown: impl std::future::Future<Output = ()>,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let limits = serving.limits;
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Header names as Go's net/http writes them (Content-Type, not
    // content-type): a client must not tell kubecache from the apiserver.
    builder
        .http1()
        .title_case_headers(true)
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    if let Some(max) = limits.max_header_bytes {
        builder.http1().max_buf_size(max);
        builder
            .http2()
            .max_header_list_size(u32::try_from(max).unwrap_or(u32::MAX));
    }
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    // Told when the connections are all taken: idle ones close.
    let crowded = Arc::new(Notify::new());
    let mut backoff = AcceptBackoff::new();
    let mut full_logged: Option<tokio::time::Instant> = None;
    tokio::pin!(shutdown);
    let mut stop_at: Option<tokio::time::Instant> = None;
    loop {
        let at = stop_at;
        let stopping = async move {
            match at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(stopping);
        // A slot first, so that a connection is never accepted past the cap.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                crowded.notify_waiters();
                if full_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                    tracing::warn!(
                        max = limits.max_connections,
                        "connection limit reached: closing idle connections, new ones wait"
                    );
                    full_logged = Some(tokio::time::Instant::now());
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
                    _ = &mut shutdown, if stop_at.is_none() => {
                        stop_at = Some(begin_stop(&serving));
                        continue;
                    }
                    _ = &mut stopping => break,
                }
            }
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer): (_, SocketAddr) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        backoff.failed(&e).await;
                        continue;
                    }
                };
                backoff.succeeded();
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(
                    stream,
                    peer,
                    slot,
                    builder.clone(),
                    serving.clone(),
                    crowded.clone(),
                    handler.clone(),
                ));
            }
            _ = &mut shutdown, if stop_at.is_none() => stop_at = Some(begin_stop(&serving)),
            _ = &mut stopping => break,
        }
    }
    drop(listener);
    serving.drain.start();
    tracing::info!(drain_for = ?serving.drain_for, "stopped accepting; draining");
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    tokio::select! {
        _ = slots.acquire_many(all) => tracing::info!("drained"),
        _ = tokio::time::sleep(serving.drain_for) => tracing::warn!("drain deadline passed; closing"),
    }
}

/// Shutdown asked: when to stop accepting.
fn begin_stop(serving: &Serving) -> tokio::time::Instant {
    if !serving.shutdown_delay.is_zero() {
        tracing::info!(delay = ?serving.shutdown_delay, "still accepting while load balancers catch up");
    }
    tokio::time::Instant::now() + serving.shutdown_delay
}

/// A connection's place among `max_connections`, as each of its requests
/// that asks to upgrade carries it (in its extensions): one that upgrades
/// the connection (exec, attach, port-forward) takes it along into the
/// spliced session,
/// so that the session counts against the cap for as long as it lives —
/// hyper hands an upgraded connection's socket over and ends the
/// connection's own task. Upgraded sessions end when the drain starts, as
/// open watches do: Go's server neither closes nor waits for hijacked
/// connections, which die with the apiserver.
#[derive(Clone)]
pub struct ConnectionSlot {
    _permit: Arc<tokio::sync::OwnedSemaphorePermit>,
    drain: Drain,
}

impl ConnectionSlot {
    /// Resolves when the drain starts: the session should end.
    pub async fn draining(&self) {
        self.drain.wait().await
    }
}

/// One connection, from its TLS handshake (if any) to its end, holding its
/// slot throughout (and an upgraded session after it).
async fn connection<F, Fut>(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    slot: tokio::sync::OwnedSemaphorePermit,
    builder: auto::Builder<TokioExecutor>,
    serving: Serving,
    crowded: Arc<Notify>,
    handler: F,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let (stream, certs) = match serving.tls {
        None => (Stream::Plain(stream), None),
        Some(tls) => {
            // One deadline for the look at the first bytes and the
            // handshake: a silent client holds its connection 10 s, not 20.
            let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
            if plain_http(&stream, deadline).await {
                // As Go's net/http answers it, and the apiserver with it.
                answer_plain_http(stream).await;
                return;
            }
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            let stream = match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let certs = stream.get_ref().1.peer_certificates().map(|chain| {
                PeerCertificates::new(chain.iter().map(|c| c.clone().into_owned()).collect())
            });
            (Stream::Tls(Box::new(stream)), certs)
        }
    };
    let activity = Activity::new();
    let slot = ConnectionSlot {
        _permit: Arc::new(slot),
        drain: serving.drain.clone(),
    };
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut req: Request<Incoming>| {
            if let Some(p) = &certs {
                req.extensions_mut().insert(p.clone());
            }
            // Only a request that may upgrade takes the slot along: an
            // insert allocates the request's extension map, on every request.
            if req.headers().contains_key(http::header::UPGRADE) {
                req.extensions_mut().insert(slot.clone());
            }
            let inflight = InFlight::new(&activity);
            // Boxed: hyper keeps room for the service's future on every
            // connection, idle ones included, and the handler's future is
            // ~10 KiB (20,000 idle connections: 200 MB).
            let handling = Box::pin(handler.clone()(req));
            async move {
                let resp = handling.await;
                Ok::<_, Infallible>(resp.map(|b| body::holding(b, inflight)))
            }
        })
    };
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let idle_timeout = serving.limits.idle_timeout;
    let mut closing = false;
    let ended = loop {
        let check_in = match activity.idle_for() {
            Some(idle) => idle_timeout.saturating_sub(idle),
            None => idle_timeout,
        };
        tokio::select! {
            ended = conn.as_mut() => break ended,
            _ = serving.drain.wait(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            _ = crowded.notified(), if !closing => {
                if activity.idle_for().is_some() {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
            _ = tokio::time::sleep(check_in), if !closing => {
                if activity.idle_for().is_some_and(|idle| idle >= idle_timeout) {
                    tracing::debug!(%peer, "closing an idle connection");
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    };
    if let Err(e) = ended {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_stay_an_eighth_below_the_open_files_limit() {
        assert_eq!(max_connections_for(1024, None), 768);
        assert_eq!(max_connections_for(1 << 20, None), (1 << 20) - (1 << 17));
        assert_eq!(max_connections_for(100, None), 16);
    }

    #[test]
    fn connections_hold_at_most_an_eighth_of_the_memory_limit() {
        assert_eq!(max_connections_for(1 << 20, Some(4 << 30)), 16_384);
        assert_eq!(max_connections_for(1 << 20, Some(1 << 30)), 4_096);
        assert_eq!(max_connections_for(1 << 20, Some(64 << 20)), 1_024);
        // Whichever is less.
        assert_eq!(max_connections_for(1024, Some(4 << 30)), 768);
    }
}
