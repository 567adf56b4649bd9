//! The accept loop: HTTP/1 and h2c on one listener, upgrades allowed, open
//! connections given up to a drain deadline after shutdown. kubecache's
//! front and the simulator both serve through it.

use crate::body::Body;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;

/// Serves `handler` on `listener` until `shutdown` resolves; then stops
/// accepting and gives open connections up to `drain` to finish.
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
