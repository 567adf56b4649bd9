//! A WebSocket client as a browser or client-go's is one: the handshake
//! written by hand (so that a test can leave out or change any header,
//! and read the answer's head as it came), then tokio-tungstenite's client
//! on the connection for the messages.

use futures::{SinkExt, StreamExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// The key of RFC 6455's example, and its accept.
pub const WS_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
pub const WS_ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// The answer's head as it came: the status, the header lines in order
/// (names lower-cased), and for a refusal the body up to the close.
#[derive(Debug, Clone)]
pub struct WsHead {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl WsHead {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The WebSocket headers of a 101, as (name, value): what x/net
    /// writes, in a comparable order.
    pub fn handshake_headers(&self) -> Vec<(String, String)> {
        let mut h: Vec<_> = self
            .headers
            .iter()
            .filter(|(k, _)| k != "date")
            .cloned()
            .collect();
        h.sort();
        h
    }
}

/// What the server sent next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ws {
    Text(String),
    Binary(Vec<u8>),
    Pong(Vec<u8>),
    /// A close frame, and its code.
    Close(Option<u16>),
    /// The connection ended without one (or failed).
    End(String),
    /// Nothing in time.
    Silent,
}

pub struct WsClient {
    pub ws: WebSocketStream<Box<dyn Io>>,
}

impl WsClient {
    pub async fn next(&mut self, wait: Duration) -> Ws {
        match tokio::time::timeout(wait, self.ws.next()).await {
            Err(_) => Ws::Silent,
            Ok(None) => Ws::End("stream ended".into()),
            Ok(Some(Err(e))) => Ws::End(e.to_string()),
            Ok(Some(Ok(m))) => match m {
                Message::Text(t) => Ws::Text(t.to_string()),
                Message::Binary(b) => Ws::Binary(b.to_vec()),
                Message::Pong(p) => Ws::Pong(p.to_vec()),
                Message::Close(c) => Ws::Close(c.map(|f| f.code.into())),
                Message::Ping(_) | Message::Frame(_) => Ws::End(format!("unexpected {m:?}")),
            },
        }
    }

    /// The messages until the server closes, or until it is silent for
    /// `quiet` (a watch that does not end), at most `total`.
    pub async fn until_close_or_quiet(&mut self, quiet: Duration, total: Duration) -> Vec<Ws> {
        let deadline = tokio::time::Instant::now() + total;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let m = self.next(quiet.min(left)).await;
            match m {
                Ws::Silent => return got,
                Ws::Close(_) | Ws::End(_) => {
                    got.push(m);
                    return got;
                }
                m => got.push(m),
            }
        }
    }

    pub async fn send(&mut self, m: Message) {
        self.ws.send(m).await.unwrap();
    }

    pub async fn close(&mut self, code: u16) {
        let frame = CloseFrame {
            code: code.into(),
            reason: "".into(),
        };
        self.ws.send(Message::Close(Some(frame))).await.unwrap();
    }
}

/// A TLS connection's configuration for servers of `ca_pem`.
pub fn ws_tls(ca_pem: &Path) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(ca_pem).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    Arc::new(config)
}

/// Opens `url` (`http://` or, with `tls`, `https://`) as a WebSocket
/// request: Host, `Upgrade: websocket`, `Connection: Upgrade`, RFC 6455's
/// key, version 13, `Origin: http://127.0.0.1` and a User-Agent, each
/// replaced by a header of `headers` of its name, or left out if that
/// header's value is `None`; `headers`' others added. The answer's head,
/// and a client on the connection if it is a 101.
pub async fn ws_open(
    url: &str,
    headers: &[(&str, Option<&str>)],
    tls: Option<Arc<rustls::ClientConfig>>,
) -> (WsHead, Option<WsClient>) {
    let uri: http::Uri = url.parse().unwrap();
    let authority = uri.authority().unwrap().to_string();
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    let defaults = [
        ("Host", authority.as_str()),
        ("User-Agent", "kubecache-tests"),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", WS_KEY),
        ("Sec-WebSocket-Version", "13"),
        ("Origin", "http://127.0.0.1"),
    ];
    let mut lines = vec![format!("GET {target} HTTP/1.1")];
    for (k, v) in defaults {
        if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k)) {
            lines.push(format!("{k}: {v}"));
        }
    }
    for (k, v) in headers {
        if let Some(v) = v {
            lines.push(format!("{k}: {v}"));
        }
    }
    let request = lines.join("\r\n") + "\r\n\r\n";
    let tcp = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let mut stream: Box<dyn Io> = match tls {
        None => Box::new(tcp),
        Some(config) => {
            let host = uri.host().unwrap().to_string();
            let name = rustls::pki_types::ServerName::try_from(host).unwrap();
            let connector = tokio_rustls::TlsConnector::from(config);
            Box::new(connector.connect(name, tcp).await.unwrap())
        }
    };
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut chunk))
            .await
            .expect("an answer in 20 s")
            .unwrap();
        assert!(n > 0, "{url}: closed before an answer: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut head_lines = head.split("\r\n");
    let status_line = head_lines.next().unwrap();
    let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers = head_lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let rest = buf[head_end..].to_vec();
    if status == 101 {
        let ws = WebSocketStream::from_partially_read(stream, rest, Role::Client, None).await;
        let head = WsHead {
            status,
            headers,
            body: Vec::new(),
        };
        return (head, Some(WsClient { ws }));
    }
    // Any other answer: its body, as long as it says, else up to the
    // close (x/net's refusals, chunked ones passed on) — in 5 s.
    let length: Option<usize> = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok());
    let mut body = rest;
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let mut chunk = [0u8; 4096];
        while length.is_none_or(|n| body.len() < n) {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => body.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    if chunked {
        body = dechunk(&body);
    }
    (
        WsHead {
            status,
            headers,
            body,
        },
        None,
    )
}

/// A chunked body's content.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..eol]).unwrap();
        let n = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + n]);
        raw = &raw[eol + 2 + n + 2..];
    }
    out
}

/// The message a watch event is: JSON text, its object's identity, for
/// comparing streams regardless of order.
pub fn text_events(messages: &[Ws]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Ws::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}
