//! The accept loop: HTTP/1 and h2c on one listener, or HTTP/1.1 and HTTP/2
//! over TLS (ALPN); upgrades allowed; open connections given up to a drain
//! deadline after shutdown. kubecache's front and the simulator both serve
//! through it.

use crate::body::Body;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long a client has to finish its TLS handshake: our own limit, so
/// that a client that opens connections and never completes them holds
/// none for long (connection-level timeouts beyond it come with the
/// reliability work).
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
/// record (its first five bytes), waiting for them no longer than a
/// handshake may take.
async fn plain_http(stream: &tokio::net::TcpStream) -> bool {
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
    matches!(
        tokio::time::timeout(HANDSHAKE_TIMEOUT, peek).await,
        Ok(true)
    ) && matches!(&head, b"GET /" | b"HEAD " | b"POST " | b"PUT /" | b"OPTIO")
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
    serve_http_limited(listener, tls, None, handler, shutdown, drain).await
}

/// [`serve_http`], with requests' header sections limited to
/// `max_header_bytes` (HTTP/1: 431, as hyper and Go answer; HTTP/2: the
/// same, from h2) instead of hyper's defaults.
pub async fn serve_http_limited<F, Fut>(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    max_header_bytes: Option<usize>,
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
    if let Some(max) = max_header_bytes {
        builder.http1().max_buf_size(max);
        builder
            .http2()
            .max_header_list_size(u32::try_from(max).unwrap_or(u32::MAX));
    }
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
                let service = move |peer: Option<PeerCertificates>| {
                    hyper::service::service_fn(move |mut req: Request<Incoming>| {
                        if let Some(p) = &peer {
                            req.extensions_mut().insert(p.clone());
                        }
                        let h = h.clone();
                        async move { Ok::<_, Infallible>(h(req).await) }
                    })
                };
                let builder = builder.clone();
                let watcher = graceful.watcher();
                let tls = tls.clone().map(tokio_rustls::TlsAcceptor::from);
                tokio::spawn(async move {
                    let ended = match tls {
                        None => {
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service(None));
                            watcher.watch(conn.into_owned()).await
                        }
                        Some(acceptor) => {
                            if plain_http(&stream).await {
                                // As Go's net/http answers it, and the apiserver with it.
                                answer_plain_http(stream).await;
                                return;
                            }
                            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
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
                            let peer = stream.get_ref().1.peer_certificates().map(|chain| {
                                PeerCertificates::new(chain.iter().map(|c| c.clone().into_owned()).collect())
                            });
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service(peer));
                            watcher.watch(conn.into_owned()).await
                        }
                    };
                    if let Err(e) = ended {
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
