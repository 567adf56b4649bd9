//! The subcommands: their flags and what each runs. `serve` (the proxy),
//! `sim` and `demo` (the simulator, alone or with the proxy in front of
//! it), `probe` (an exec health probe). What they share is here: binding a
//! listener, the shutdown signal, a listen address's parse.

pub mod probe;
pub mod serve;
pub mod sim;

use crate::CliError;
use std::net::SocketAddr;

/// Returns on SIGTERM or Ctrl-C; a second one exits at once.
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!(target: "kubecache", "shutdown signal received: failing readyz");
    // A second one is someone who will not wait for the drain.
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::warn!(target: "kubecache", "second shutdown signal: exiting without draining");
        std::process::exit(1);
    });
}

/// A listener on `addr`, and the address it got (port 0 picks one).
pub(crate) async fn listen(
    addr: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr), CliError> {
    let failed = |source| CliError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(failed)?;
    let bound = listener.local_addr().map_err(failed)?;
    Ok((listener, bound))
}

pub(crate) fn parse_addr(s: &str) -> Result<SocketAddr, CliError> {
    s.parse()
        .map_err(|_| CliError::Flag(format!("listen address {s:?} is not HOST:PORT")))
}
