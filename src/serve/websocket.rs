//! Watches over WebSocket, served as the apiserver serves them: a watch
//! request that is a WebSocket request (`request::websocket`) gets
//! golang.org/x/net/websocket's server handshake and then one message per
//! watch event. kubecache's cache-served watches and the simulator's come
//! from here; forwarded ones are the upstream's own, spliced.
//!
//! The apiserver's serveWatch hands such a request to
//! `websocket.Handler(server.HandleWS)` (kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go`), whose
//! behaviour this reproduces, from the vendored x/net at
//! `vendor/golang.org/x/net/websocket/` (server.go @
//! 7fc9c57df50702c276dcdc36c1e8f652a923eb16, hybi.go @
//! 04791b4906602ffda5ccf9bc4c84d3329f1d7080, websocket.go @
//! 094739447334af00866715eb08131d5c177e575b):
//!
//! - **handshake** ([`handshake`]): `ReadHandshake` — GET (else 405 "bad
//!   method"), `Upgrade: websocket` and `Connection` naming upgrade (400
//!   "not websocket protocol"), a `Sec-WebSocket-Key` (400 "mismatch
//!   challenge/response"), `Sec-WebSocket-Version: 13` (400 "missing or bad
//!   WebSocket Version" with `Sec-WebSocket-Version: 13`), a location Go's
//!   `url.ParseRequestURI` takes (400) — then `checkOrigin`, the Handler's
//!   handshake: an `Origin` that is present and parses (else 403, no body)
//!   — then `AcceptHandshake`: the offered subprotocols (the first
//!   `Sec-WebSocket-Protocol` line split on ",", trimmed) are not
//!   negotiated: none gives none, exactly one is echoed whatever it is,
//!   two or more are a 400 without a body. Each refusal closes the
//!   connection.
//! - **101** with `Upgrade`, `Connection`, `Sec-WebSocket-Accept` and the
//!   echoed protocol, nothing else of the watch's (x/net hijacks the
//!   connection, dropping the Content-Type serveWatch set).
//! - **messages** ([`Messages`]): one unfragmented frame per event — JSON
//!   as a text frame holding exactly one line of the HTTP stream, its
//!   newline included; protobuf as a binary frame holding the WatchEvent
//!   without its 4-byte length (the Framer is the HTTP stream's alone). No
//!   base64, whatever the subprotocol.
//! - **the client's frames** (`IgnoreReceives`, `hybiFrameHandler`): read
//!   and discarded; a ping is answered with a pong of (at most 125 bytes
//!   of) its payload; a close ends the watch; an unmasked frame is
//!   answered with a close of 1002 and ends it; a data frame over 32 MiB
//!   (`DefaultMaxPayloadBytes`) ends it.
//! - **the end**: when the watch ends (its timeout, a drain, cut off) or
//!   the client leaves, a close frame of 1000 without a reason, then the
//!   connection closes (`HandleWS`' `defer ws.Close()`).
//!
//! Frames are read and written with tungstenite's frame codec; its
//! WebSocket state machine is not used, as it answers a client's close by
//! echoing the client's code where x/net answers 1000.

use super::listener::ConnectionSlot;
use crate::body::{self, Body};
use crate::go::url::{parse_request_uri, UrlError};
use crate::metrics;
use bytes::{Buf, Bytes, BytesMut};
use http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use std::io::Cursor;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tungstenite::protocol::frame::FrameHeader;

/// x/net's `DefaultMaxPayloadBytes`: a client data frame longer than this
/// ends the watch (`Receive` fails with `ErrFrameTooLarge`).
const MAX_CLIENT_PAYLOAD: u64 = 32 << 20;
/// A control frame's payload x/net reads (`maxControlFramePayloadLength`).
const MAX_CONTROL_PAYLOAD: usize = 125;
/// The close codes x/net writes: `closeStatusNormal`, and
/// `closeStatusProtocolError` for an unmasked client frame.
const CLOSE_NORMAL: u16 = 1000;
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
/// Events buffered before the connection is written: a run of events
/// ready at once goes out in one write.
const WRITE_BUFFER: usize = 64 * 1024;
/// How long a session may still take to say goodbye once the drain
/// starts (its watch ends at the drain already): one stuck writing to a
/// client that does not read is then cut.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Why a handshake is refused, in x/net's words (the bodies of its
/// `ReadHandshake` refusals).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebSocketError {
    #[error("bad method")]
    BadMethod,
    #[error("not websocket protocol")]
    NotWebSocket,
    #[error("mismatch challenge/response")]
    NoKey,
    #[error("missing or bad WebSocket Version")]
    BadVersion,
    /// The request's own location is no URI Go takes.
    #[error("{0}")]
    BadLocation(UrlError),
    /// `checkOrigin`: no `Origin` at all ("null origin").
    #[error("null origin")]
    NoOrigin,
    /// `checkOrigin`: an `Origin` Go's `url.ParseRequestURI` refuses.
    #[error("bad origin")]
    BadOrigin(#[source] UrlError),
    /// More than one subprotocol offered, and none chosen.
    #[error("missing or bad WebSocket-Protocol")]
    Protocols(usize),
}

impl WebSocketError {
    /// The refusal's metric label.
    fn reason(&self) -> &'static str {
        match self {
            WebSocketError::BadMethod => "method",
            WebSocketError::NotWebSocket => "not_websocket",
            WebSocketError::NoKey => "key",
            WebSocketError::BadVersion => "version",
            WebSocketError::BadLocation(_) => "location",
            WebSocketError::NoOrigin | WebSocketError::BadOrigin(_) => "origin",
            WebSocketError::Protocols(_) => "protocols",
        }
    }
}

/// A handshake x/net accepts: what the 101 says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `Sec-WebSocket-Accept`, from the client's key.
    pub accept: String,
    /// The one subprotocol offered, echoed.
    pub protocol: Option<String>,
}

/// x/net's server handshake of the request (`ReadHandshake`, then
/// `checkOrigin`, then `AcceptHandshake`), `protocols` being its
/// `Sec-WebSocket-Protocol` as the authenticators left it.
pub fn handshake(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    protocols: Option<&str>,
) -> Result<Accepted, WebSocketError> {
    let first = |name: header::HeaderName| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    };
    if method != Method::GET {
        return Err(WebSocketError::BadMethod);
    }
    let lower = |v: String| crate::go::strings::to_lower(&v);
    if lower(first(header::UPGRADE)) != "websocket"
        || !lower(first(header::CONNECTION)).contains("upgrade")
    {
        return Err(WebSocketError::NotWebSocket);
    }
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if key.is_empty() {
        return Err(WebSocketError::NoKey);
    }
    if first(header::SEC_WEBSOCKET_VERSION) != "13" {
        return Err(WebSocketError::BadVersion);
    }
    // "ws://" + req.Host + req.URL.RequestURI(): the host as Go's server
    // takes it, the request target's authority before Host.
    let host = uri
        .authority()
        .map(|a| a.as_str().as_bytes().to_vec())
        .or_else(|| headers.get(header::HOST).map(|h| h.as_bytes().to_vec()))
        .unwrap_or_default();
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    let location = [b"ws://", &host[..], target.as_bytes()].concat();
    parse_request_uri(&location).map_err(WebSocketError::BadLocation)?;
    let offered: Vec<String> = match protocols.map(str::trim) {
        None | Some("") => Vec::new(),
        Some(p) => p.split(',').map(|e| e.trim().to_string()).collect(),
    };
    let origin = headers
        .get(header::ORIGIN)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if origin.is_empty() {
        return Err(WebSocketError::NoOrigin);
    }
    parse_request_uri(origin).map_err(WebSocketError::BadOrigin)?;
    if offered.len() > 1 {
        return Err(WebSocketError::Protocols(offered.len()));
    }
    Ok(Accepted {
        accept: tungstenite::handshake::derive_accept_key(key),
        protocol: offered.into_iter().next(),
    })
}

/// A refused handshake's answer, as x/net writes it: the status, x/net's
/// words as the body for `ReadHandshake`'s refusals (none for the
/// origin's 403 and the subprotocols' 400), and the connection closed.
/// (x/net writes the status line alone; hyper adds its `date`,
/// `content-length` and `connection: close`.)
pub fn refusal(e: &WebSocketError) -> Response<Body> {
    metrics::websocket_refused(e.reason());
    let (status, body) = match e {
        WebSocketError::BadMethod => (StatusCode::METHOD_NOT_ALLOWED, Some(e.to_string())),
        WebSocketError::NoOrigin | WebSocketError::BadOrigin(_) => (StatusCode::FORBIDDEN, None),
        WebSocketError::Protocols(_) => (StatusCode::BAD_REQUEST, None),
        _ => (StatusCode::BAD_REQUEST, Some(e.to_string())),
    };
    let mut resp = Response::new(body.map_or_else(body::empty, body::full));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    if *e == WebSocketError::BadVersion {
        headers.insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
    }
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// What a watch's events are framed as on the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// JSON: text frames, one line each.
    Text,
    /// Protobuf: binary frames, one length-prefixed WatchEvent each, its
    /// length dropped.
    Binary,
}

impl Framing {
    /// A watch stream's framing, from its `Content-Type`.
    pub fn of(content_type: &str) -> Framing {
        if content_type.starts_with("application/vnd.kubernetes.protobuf") {
            Framing::Binary
        } else {
            Framing::Text
        }
    }

    fn opcode(self) -> OpCode {
        match self {
            Framing::Text => OpCode::Data(Data::Text),
            Framing::Binary => OpCode::Data(Data::Binary),
        }
    }
}

/// Cuts a watch stream's body into its events' messages, however its
/// chunks fall: a chunk that is exactly one event (as `serve::watch`
/// sends them) is passed on without a copy.
#[derive(Debug)]
pub struct Messages {
    framing: Framing,
    partial: BytesMut,
}

impl Messages {
    pub fn new(framing: Framing) -> Messages {
        Messages {
            framing,
            partial: BytesMut::new(),
        }
    }

    /// The messages `chunk` completes, in order.
    pub fn push(&mut self, chunk: Bytes, out: &mut Vec<Bytes>) {
        if self.partial.is_empty() {
            match self.framing {
                Framing::Text
                    if !chunk.is_empty()
                        && memchr::memchr(b'\n', &chunk) == Some(chunk.len() - 1) =>
                {
                    out.push(chunk);
                    return;
                }
                Framing::Binary
                    if chunk.len() >= 4 && Self::prefix(&chunk) == Some(chunk.len() - 4) =>
                {
                    out.push(chunk.slice(4..));
                    return;
                }
                _ => {}
            }
        }
        self.partial.extend_from_slice(&chunk);
        loop {
            let whole = match self.framing {
                Framing::Text => memchr::memchr(b'\n', &self.partial).map(|i| i + 1),
                Framing::Binary => Self::prefix(&self.partial)
                    .map(|n| n + 4)
                    .filter(|&n| self.partial.len() >= n),
            };
            let Some(n) = whole else { return };
            let mut message = self.partial.split_to(n).freeze();
            if self.framing == Framing::Binary {
                message.advance(4);
            }
            out.push(message);
        }
    }

    /// A protobuf frame's length, its first 4 bytes big-endian.
    fn prefix(b: &[u8]) -> Option<usize> {
        let head: [u8; 4] = b.get(..4)?.try_into().ok()?;
        Some(u32::from_be_bytes(head) as usize)
    }
}

/// How a session ended (`kubecache_websocket_watches_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The watch ended: its deadline, a drain, cut off, or an error event.
    Ended,
    /// The client sent a close frame.
    ClientClosed,
    /// The connection was closed or failed under us.
    ClientGone,
    /// An unmasked, unreadable or oversized client frame.
    ProtocolError,
    /// The drain started and the session did not finish in time.
    Drained,
    /// hyper could not hand the connection over.
    UpgradeFailed,
}

impl End {
    fn as_str(self) -> &'static str {
        match self {
            End::Ended => "ended",
            End::ClientClosed => "client_closed",
            End::ClientGone => "client_gone",
            End::ProtocolError => "protocol_error",
            End::Drained => "drained",
            End::UpgradeFailed => "upgrade_failed",
        }
    }
}

/// The 101 that starts a WebSocket watch, its session spawned: `watch`'s
/// events (its body, one chunk per event as `serve::watch` sends them)
/// become messages on the connection once hyper hands it over. `slot`
/// keeps the connection counted while the session lives and ends it at
/// the drain; `resource` labels its metric.
pub fn upgrade(
    accepted: &Accepted,
    on_upgrade: hyper::upgrade::OnUpgrade,
    watch: Response<Body>,
    slot: Option<ConnectionSlot>,
    resource: String,
) -> Response<Body> {
    let framing = watch
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map_or(Framing::Text, Framing::of);
    let events = watch.into_body();
    tokio::spawn(async move {
        let end = match on_upgrade.await {
            Ok(upgraded) => {
                let draining = async {
                    match &slot {
                        Some(slot) => {
                            slot.draining().await;
                            tokio::time::sleep(DRAIN_GRACE).await
                        }
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    end = session(TokioIo::new(upgraded), events, framing) => end,
                    _ = draining => End::Drained,
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "a WebSocket watch's upgrade failed");
                End::UpgradeFailed
            }
        };
        tracing::debug!(%resource, end = end.as_str(), "a WebSocket watch ended");
        metrics::websocket_watch_ended(&resource, end.as_str());
    });
    let mut resp = Response::new(body::empty());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    let value = |v: &str| HeaderValue::from_bytes(v.as_bytes());
    if let Ok(accept) = value(&accepted.accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Some(Ok(p)) = accepted.protocol.as_deref().map(value) {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    resp
}

/// A watch request's answer from `watch` (its 200 stream, or anything
/// else as it is) when the request is a WebSocket request: the
/// handshake's refusal, or the 101 and the session. For a server whose
/// `Sec-WebSocket-Protocol` no authenticator rewrites (the simulator).
pub fn answer_watch(
    req: &mut http::Request<hyper::body::Incoming>,
    watch: Response<Body>,
    resource: String,
) -> Response<Body> {
    if watch.status() != StatusCode::OK
        || !crate::request::websocket::is_websocket_request(req.headers())
    {
        return watch;
    }
    let protocols = req
        .headers()
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    match handshake(req.method(), req.uri(), req.headers(), protocols.as_deref()) {
        Ok(accepted) => {
            let slot = req.extensions().get::<ConnectionSlot>().cloned();
            upgrade(&accepted, hyper::upgrade::on(req), watch, slot, resource)
        }
        Err(e) => refusal(&e),
    }
}

/// The session: events out as messages, the client's frames in, until
/// either side ends it; then x/net's close of 1000.
async fn session<IO>(io: IO, mut events: Body, framing: Framing) -> End
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let (mut rd, wr) = tokio::io::split(io);
    let mut wr = BufWriter::with_capacity(WRITE_BUFFER, wr);
    let mut messages = Messages::new(framing);
    let mut client = ClientFrames::default();
    let mut inbound = BytesMut::with_capacity(1024);
    let mut out = Vec::new();
    let end = 'session: loop {
        let unflushed = !wr.buffer().is_empty();
        tokio::select! {
            biased;
            read = rd.read_buf(&mut inbound) => {
                if !matches!(read, Ok(n) if n > 0) {
                    break 'session End::ClientGone;
                }
                let (pongs, ended) = client.take(&mut inbound);
                for pong in pongs {
                    if write_frame(&mut wr, OpCode::Control(Control::Pong), &pong).await.is_err() {
                        break 'session End::ClientGone;
                    }
                }
                if let Some(end) = ended {
                    if end == ClientEnd::Unmasked {
                        let _ = write_close(&mut wr, CLOSE_PROTOCOL_ERROR).await;
                    }
                    break 'session match end {
                        ClientEnd::Closed => End::ClientClosed,
                        _ => End::ProtocolError,
                    };
                }
            }
            event = events.frame() => match event {
                Some(Ok(frame)) => {
                    let Ok(chunk) = frame.into_data() else { continue };
                    messages.push(chunk, &mut out);
                    for message in out.drain(..) {
                        if write_frame(&mut wr, framing.opcode(), &message).await.is_err() {
                            break 'session End::ClientGone;
                        }
                    }
                }
                Some(Err(_)) | None => break 'session End::Ended,
            },
            flushed = wr.flush(), if unflushed => {
                if flushed.is_err() {
                    break 'session End::ClientGone;
                }
            }
        }
    };
    // HandleWS' `defer ws.Close()`: a close of 1000, then the connection.
    if end != End::ClientGone {
        let _ = write_close(&mut wr, CLOSE_NORMAL).await;
    }
    let _ = wr.shutdown().await;
    end
}

/// Writes one unmasked, unfragmented frame.
async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut BufWriter<W>,
    opcode: OpCode,
    payload: &[u8],
) -> std::io::Result<()> {
    let header = FrameHeader {
        is_final: true,
        rsv1: false,
        rsv2: false,
        rsv3: false,
        opcode,
        mask: None,
    };
    let mut head = Vec::with_capacity(10);
    header
        .format(payload.len() as u64, &mut head)
        .map_err(std::io::Error::other)?;
    w.write_all(&head).await?;
    w.write_all(payload).await
}

/// x/net's `WriteClose`: the code, no reason; flushed.
async fn write_close<W: AsyncWrite + Unpin>(
    w: &mut BufWriter<W>,
    code: u16,
) -> std::io::Result<()> {
    write_frame(w, OpCode::Control(Control::Close), &code.to_be_bytes()).await?;
    w.flush().await
}

/// How the client's frames end a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientEnd {
    Closed,
    /// A frame without a mask: x/net closes with 1002 first.
    Unmasked,
    /// A data frame over `MAX_CLIENT_PAYLOAD`.
    TooLarge,
    /// A frame tungstenite cannot read (a reserved opcode).
    Unreadable,
}

/// The client's frames as x/net's `hybiFrameHandler` takes them on a
/// watch: pings answered, data skipped without being kept.
#[derive(Debug, Default)]
struct ClientFrames {
    /// Payload bytes of the current frame still to skip.
    skipping: u64,
}

impl ClientFrames {
    /// Consumes what `buf` holds of whole frames (and of a data frame's
    /// payload as it comes): the pongs owed, and the end if a frame ends
    /// the session.
    fn take(&mut self, buf: &mut BytesMut) -> (Vec<Bytes>, Option<ClientEnd>) {
        let mut pongs = Vec::new();
        loop {
            if self.skipping > 0 {
                let n = self.skipping.min(buf.len() as u64);
                buf.advance(n as usize);
                self.skipping -= n;
                if self.skipping > 0 {
                    return (pongs, None);
                }
            }
            let mut cursor = Cursor::new(&buf[..]);
            let (header, len) = match FrameHeader::parse(&mut cursor) {
                Ok(Some(found)) => found,
                Ok(None) => return (pongs, None),
                Err(_) => return (pongs, Some(ClientEnd::Unreadable)),
            };
            let head = cursor.position() as usize;
            let Some(mask) = header.mask else {
                return (pongs, Some(ClientEnd::Unmasked));
            };
            match header.opcode {
                OpCode::Control(Control::Close) => return (pongs, Some(ClientEnd::Closed)),
                OpCode::Control(ctl) => {
                    // x/net reads up to 125 bytes of it, and drops the rest.
                    let read = (len as usize).min(MAX_CONTROL_PAYLOAD);
                    if buf.len() < head + read {
                        return (pongs, None);
                    }
                    buf.advance(head);
                    let mut payload = buf.split_to(read);
                    for (i, b) in payload.iter_mut().enumerate() {
                        *b ^= mask[i % 4];
                    }
                    if ctl == Control::Ping {
                        pongs.push(payload.freeze());
                    }
                    self.skipping = len - read as u64;
                }
                OpCode::Data(_) if len > MAX_CLIENT_PAYLOAD => {
                    return (pongs, Some(ClientEnd::TooLarge))
                }
                OpCode::Data(_) => {
                    buf.advance(head);
                    self.skipping = len;
                }
            }
            if self.skipping == 0 && buf.is_empty() {
                return (pongs, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    const KEY: (&str, &str) = ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");

    fn shake(extra: &[(&str, &str)], without: &str) -> Result<Accepted, WebSocketError> {
        let mut pairs = vec![
            ("host", "127.0.0.1:8001"),
            ("upgrade", "websocket"),
            ("connection", "Upgrade"),
            KEY,
            ("sec-websocket-version", "13"),
            ("origin", "http://127.0.0.1:9000"),
        ];
        pairs.retain(|(k, _)| *k != without);
        pairs.extend_from_slice(extra);
        let h = headers(&pairs);
        let protocols = h
            .get("sec-websocket-protocol")
            .map(|v| v.to_str().unwrap().to_string());
        let uri: Uri = "/api/v1/services?watch=1".parse().unwrap();
        handshake(&Method::GET, &uri, &h, protocols.as_deref())
    }

    #[test]
    fn an_accepted_handshake_answers_the_key_as_rfc_6455_does_and_echoes_one_protocol() {
        let ok = shake(&[], "").unwrap();
        // RFC 6455's example key and accept.
        assert_eq!(ok.accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(ok.protocol, None);
        let one = shake(&[("sec-websocket-protocol", " base64.binary.k8s.io ")], "").unwrap();
        assert_eq!(one.protocol.as_deref(), Some("base64.binary.k8s.io"));
        // Not negotiated: any one protocol is echoed.
        let any = shake(&[("sec-websocket-protocol", "foo")], "").unwrap();
        assert_eq!(any.protocol.as_deref(), Some("foo"));
        let blank = shake(&[("sec-websocket-protocol", "  ")], "").unwrap();
        assert_eq!(blank.protocol, None);
    }

    #[test]
    fn two_protocols_or_an_empty_entry_beside_one_are_a_400() {
        for offered in ["a, b", "a,", "base64.binary.k8s.io,,x"] {
            let got = shake(&[("sec-websocket-protocol", offered)], "");
            assert!(
                matches!(got, Err(WebSocketError::Protocols(_))),
                "{offered}"
            );
        }
    }

    #[test]
    fn an_origin_must_be_present_and_a_request_uri_go_takes() {
        assert_eq!(shake(&[], "origin"), Err(WebSocketError::NoOrigin));
        for bad in ["null", "foo", ":x", "http://a b"] {
            let got = shake(&[("origin", bad)], "origin");
            assert!(matches!(got, Err(WebSocketError::BadOrigin(_))), "{bad}");
        }
        // Any parseable origin, whatever its host: x/net does not compare.
        for good in [
            "http://evil.example",
            "https://x:1",
            "/just/a/path",
            "file://",
        ] {
            assert!(shake(&[("origin", good)], "origin").is_ok(), "{good}");
        }
    }

    #[test]
    fn read_handshake_checks_come_first_in_x_nets_order() {
        assert_eq!(shake(&[], "sec-websocket-key"), Err(WebSocketError::NoKey));
        let empty_key = shake(&[("sec-websocket-key", "")], "sec-websocket-key");
        assert_eq!(empty_key, Err(WebSocketError::NoKey));
        let v8 = shake(&[("sec-websocket-version", "8")], "sec-websocket-version");
        assert_eq!(v8, Err(WebSocketError::BadVersion));
        let no_version = shake(&[], "sec-websocket-version");
        assert_eq!(no_version, Err(WebSocketError::BadVersion));
        let h2c = shake(&[("upgrade", "h2c")], "upgrade");
        assert_eq!(h2c, Err(WebSocketError::NotWebSocket));
        // Go's ToLower makes the Kelvin sign a 'k'.
        assert!(shake(&[("upgrade", "WEBSOC\u{212a}ET")], "upgrade").is_ok());
        let bad_host = shake(&[("host", "a b")], "host");
        assert!(matches!(bad_host, Err(WebSocketError::BadLocation(_))));
        // ReadHandshake's refusals come before the origin's, in order:
        // the method, the upgrade, the key, then the version.
        let uri: Uri = "/".parse().unwrap();
        let nothing = headers(&[("host", "h")]);
        assert_eq!(
            handshake(&Method::POST, &uri, &nothing, None),
            Err(WebSocketError::BadMethod)
        );
        assert_eq!(
            handshake(&Method::GET, &uri, &nothing, None),
            Err(WebSocketError::NotWebSocket)
        );
        let upgrade = headers(&[
            ("host", "h"),
            ("upgrade", "websocket"),
            ("connection", "upgrade"),
        ]);
        assert_eq!(
            handshake(&Method::GET, &uri, &upgrade, None),
            Err(WebSocketError::NoKey)
        );
        let mut keyed = upgrade.clone();
        keyed.insert("sec-websocket-key", HeaderValue::from_static("k"));
        assert_eq!(
            handshake(&Method::GET, &uri, &keyed, None),
            Err(WebSocketError::BadVersion)
        );
        keyed.insert("sec-websocket-version", HeaderValue::from_static("13"));
        assert_eq!(
            handshake(&Method::GET, &uri, &keyed, Some("a,b")),
            Err(WebSocketError::NoOrigin),
            "the origin before the subprotocols"
        );
    }

    #[test]
    fn refusals_are_x_nets_status_and_words_and_close_the_connection() {
        let r = refusal(&WebSocketError::NoKey);
        assert_eq!(r.status(), 400);
        assert_eq!(r.headers()["connection"], "close");
        let r = refusal(&WebSocketError::BadVersion);
        assert_eq!(r.headers()["sec-websocket-version"], "13");
        assert_eq!(refusal(&WebSocketError::BadMethod).status(), 405);
        assert_eq!(refusal(&WebSocketError::NoOrigin).status(), 403);
        assert_eq!(refusal(&WebSocketError::Protocols(2)).status(), 400);
    }

    fn frames(framing: Framing, chunks: &[&[u8]]) -> Vec<Bytes> {
        let mut m = Messages::new(framing);
        let mut out = Vec::new();
        for c in chunks {
            m.push(Bytes::copy_from_slice(c), &mut out);
        }
        out
    }

    #[test]
    fn a_json_event_is_one_text_message_with_its_newline_however_its_chunks_fall() {
        let a = b"{\"type\":\"ADDED\",\"object\":{}}\n";
        let b = b"{\"type\":\"DELETED\",\"object\":{}}\n";
        assert_eq!(frames(Framing::Text, &[a, b]), [&a[..], &b[..]]);
        let both = [&a[..], &b[..]].concat();
        assert_eq!(frames(Framing::Text, &[&both]), [&a[..], &b[..]]);
        assert_eq!(
            frames(Framing::Text, &[&both[..5], &both[5..40], &both[40..]]),
            [&a[..], &b[..]]
        );
        // A whole event is passed on, not copied.
        let mut m = Messages::new(Framing::Text);
        let mut out = Vec::new();
        let chunk = Bytes::from_static(a);
        m.push(chunk.clone(), &mut out);
        assert_eq!(out[0].as_ptr(), chunk.as_ptr());
        assert_eq!(Framing::of("application/json"), Framing::Text);
    }

    #[test]
    fn a_protobuf_event_is_one_binary_message_without_its_length() {
        let event = |body: &[u8]| [&(body.len() as u32).to_be_bytes()[..], body].concat();
        let (a, b) = (event(b"k8s\0first"), event(b""));
        assert_eq!(
            frames(Framing::Binary, &[&a, &b]),
            [&b"k8s\0first"[..], &b""[..]]
        );
        let both = [&a[..], &b[..]].concat();
        for cut in 0..both.len() {
            assert_eq!(
                frames(Framing::Binary, &[&both[..cut], &both[cut..]]),
                [&b"k8s\0first"[..], &b""[..]],
                "cut at {cut}"
            );
        }
        assert_eq!(
            Framing::of("application/vnd.kubernetes.protobuf;stream=watch"),
            Framing::Binary
        );
    }

    /// A client frame, masked as clients must mask them.
    fn client_frame(opcode: OpCode, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
        let header = FrameHeader {
            is_final: true,
            rsv1: false,
            rsv2: false,
            rsv3: false,
            opcode,
            mask,
        };
        let mut out = Vec::new();
        header.format(payload.len() as u64, &mut out).unwrap();
        let m = mask.unwrap_or_default();
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ m[i % 4]));
        out
    }

    const MASK: Option<[u8; 4]> = Some([1, 2, 3, 4]);

    #[test]
    fn client_pings_get_their_payload_back_and_data_is_skipped_piece_by_piece() {
        let mut frames = ClientFrames::default();
        let ping = client_frame(OpCode::Control(Control::Ping), b"hello", MASK);
        let data = client_frame(OpCode::Data(Data::Text), &[b'x'; 300], MASK);
        let all = [&data[..], &ping[..], &ping[..]].concat();
        let mut buf = BytesMut::new();
        let mut pongs = Vec::new();
        // A byte at a time: nothing is lost at a boundary.
        for b in all {
            buf.extend_from_slice(&[b]);
            let (p, end) = frames.take(&mut buf);
            assert_eq!(end, None);
            pongs.extend(p);
        }
        assert_eq!(pongs, [&b"hello"[..], &b"hello"[..]]);
        assert!(buf.is_empty());
        // A ping over 125 bytes: x/net echoes its first 125.
        let long = client_frame(OpCode::Control(Control::Ping), &[7; 130], MASK);
        let mut buf = BytesMut::from(&long[..]);
        let (p, end) = frames.take(&mut buf);
        assert_eq!((p[0].len(), end), (125, None));
        let pong = client_frame(OpCode::Control(Control::Pong), b"x", MASK);
        let (p, end) = frames.take(&mut BytesMut::from(&pong[..]));
        assert_eq!((p.len(), end), (0, None));
    }

    #[test]
    fn a_close_an_unmasked_frame_or_an_oversized_one_ends_the_session() {
        let take = |bytes: Vec<u8>| {
            ClientFrames::default()
                .take(&mut BytesMut::from(&bytes[..]))
                .1
        };
        let close = client_frame(
            OpCode::Control(Control::Close),
            &1001u16.to_be_bytes(),
            MASK,
        );
        assert_eq!(take(close), Some(ClientEnd::Closed));
        let unmasked = client_frame(OpCode::Data(Data::Text), b"hi", None);
        assert_eq!(take(unmasked), Some(ClientEnd::Unmasked));
        let mut huge = Vec::new();
        FrameHeader {
            is_final: true,
            rsv1: false,
            rsv2: false,
            rsv3: false,
            opcode: OpCode::Data(Data::Binary),
            mask: MASK,
        }
        .format(MAX_CLIENT_PAYLOAD + 1, &mut huge)
        .unwrap();
        assert_eq!(take(huge), Some(ClientEnd::TooLarge));
        assert_eq!(
            take(vec![0x83, 0x80, 0, 0, 0, 0]),
            Some(ClientEnd::Unreadable)
        );
    }

    /// Reads the server's frames off `wire` until it closes.
    fn server_frames(wire: &[u8]) -> Vec<(OpCode, Vec<u8>)> {
        let mut cursor = Cursor::new(wire);
        let mut out = Vec::new();
        while let Ok(Some((h, len))) = FrameHeader::parse(&mut cursor) {
            assert_eq!(h.mask, None, "server frames are not masked");
            assert!(h.is_final, "one frame per message");
            let at = cursor.position() as usize;
            out.push((h.opcode, wire[at..at + len as usize].to_vec()));
            cursor.set_position((at + len as usize) as u64);
        }
        out
    }

    #[tokio::test]
    async fn events_go_out_one_message_each_then_a_close_of_1000() {
        let (server, mut client) = tokio::io::duplex(1 << 20);
        let (tx, events) = body::channel(8);
        let session = tokio::spawn(session(server, events, Framing::Text));
        tx.send(Bytes::from_static(b"{\"type\":\"ADDED\"}\n"))
            .await
            .unwrap();
        tx.send(Bytes::from_static(b"{\"type\":\"MODIFIED\"}\n"))
            .await
            .unwrap();
        drop(tx);
        assert_eq!(session.await.unwrap(), End::Ended);
        let mut wire = Vec::new();
        client.read_to_end(&mut wire).await.unwrap();
        let got = server_frames(&wire);
        assert_eq!(
            got,
            [
                (OpCode::Data(Data::Text), b"{\"type\":\"ADDED\"}\n".to_vec()),
                (
                    OpCode::Data(Data::Text),
                    b"{\"type\":\"MODIFIED\"}\n".to_vec()
                ),
                (OpCode::Control(Control::Close), vec![0x03, 0xe8]),
            ]
        );
    }

    #[tokio::test]
    async fn a_client_close_of_any_code_is_answered_with_1000_and_an_unmasked_frame_with_1002_first(
    ) {
        for (sent, want_codes, want_end) in [
            (
                client_frame(
                    OpCode::Control(Control::Close),
                    &1001u16.to_be_bytes(),
                    MASK,
                ),
                vec![vec![0x03, 0xe8]],
                End::ClientClosed,
            ),
            (
                client_frame(OpCode::Data(Data::Text), b"x", None),
                vec![vec![0x03, 0xea], vec![0x03, 0xe8]],
                End::ProtocolError,
            ),
        ] {
            let (server, mut client) = tokio::io::duplex(1 << 16);
            let (_tx, events) = body::channel(8);
            let ping = client_frame(OpCode::Control(Control::Ping), b"p", MASK);
            client
                .write_all(&[&ping[..], &sent[..]].concat())
                .await
                .unwrap();
            let end = session(server, events, Framing::Binary).await;
            assert_eq!(end, want_end);
            let mut wire = Vec::new();
            client.read_to_end(&mut wire).await.unwrap();
            let got = server_frames(&wire);
            assert_eq!(got[0], (OpCode::Control(Control::Pong), b"p".to_vec()));
            let closes: Vec<_> = got[1..].iter().map(|(_, p)| p.clone()).collect();
            assert_eq!(closes, want_codes);
        }
    }
}
