//! `kubecache probe`: one health path of a kubecache on this host's
//! loopback asked as an exec probe (the kubelet cannot reach a pod's
//! loopback): exit 0 when it answers 200, 1 otherwise.

use crate::CliError;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(clap::Args)]
pub struct ProbeArgs {
    /// `http://127.0.0.1:PORT/readyz` or `/livez`: loopback, plain HTTP.
    url: String,
    /// How long to wait for the whole answer.
    #[arg(long, default_value = "5s")]
    timeout: String,
}

/// Asks, and prints the status line when it is 200.
pub fn run(args: ProbeArgs) -> Result<(), CliError> {
    let (addr, path) = probe_target(&args.url)?;
    let timeout = kubecache::go::time::parse_duration(&args.timeout)
        .ok_or_else(|| CliError::Flag(format!("--timeout {:?} is not a duration", args.timeout)))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts");
    match rt.block_on(probe(addr, &path, timeout)) {
        Ok(line) => {
            println!("{line}");
            Ok(())
        }
        Err(why) => Err(CliError::Probe(why)),
    }
}

/// The loopback address and path a probe asks.
fn probe_target(url: &str) -> Result<(SocketAddr, String), CliError> {
    let bad = || CliError::Flag(format!("probe {url:?}: want http://LOOPBACK:PORT/PATH"));
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr: SocketAddr = authority.parse().map_err(|_| bad())?;
    if !addr.ip().is_loopback() {
        return Err(bad());
    }
    Ok((
        addr,
        if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
    ))
}

/// GET `path` from `addr` (HTTP/1.0, the connection closed after): the
/// status line when it is 200, else why not.
async fn probe(addr: SocketAddr, path: &str, timeout: Duration) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ask = async {
        let mut conn = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        let request =
            format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: kubecache-probe\r\n\r\n");
        conn.write_all(request.as_bytes())
            .await
            .map_err(|e| format!("asking {addr}: {e}"))?;
        let mut answer = Vec::new();
        // A health answer is small; more is not read.
        conn.take(64 * 1024)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| format!("reading {addr}'s answer: {e}"))?;
        let text = String::from_utf8_lossy(&answer);
        let status = text.lines().next().unwrap_or_default().to_string();
        let body = text
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .trim()
            .to_string();
        if status.split_whitespace().nth(1) == Some("200") {
            Ok(format!("{status}: {body}"))
        } else {
            Err(format!("{path}: {status}: {body}"))
        }
    };
    tokio::time::timeout(timeout, ask)
        .await
        .unwrap_or_else(|_| Err(format!("no answer from {addr} within {timeout:?}")))
}
