//! WebSocket requests, read as the apiserver reads them: whether a request
//! is one (`wsstream.IsWebSocketRequest`), the subprotocols it offers, and
//! the bearer token a browser — which cannot set `Authorization` — puts
//! among them (the apiserver's websocket protocol authenticator).
//!
//! References (kubernetes/kubernetes):
//! - `staging/src/k8s.io/apiserver/pkg/util/wsstream/conn.go` @ 04791b4906602ffda5ccf9bc4c84d3329f1d7080
//!   (the v1.20 location; moved to apimachinery's `httpstream/wsstream`
//!   since, unchanged): `IsWebSocketRequest`.
//! - `staging/src/k8s.io/apiserver/pkg/authentication/request/websocket/protocol.go`
//!   @ e5227216c0796d725c695e36cfc1d54e7631d3a6: `ProtocolAuthenticator`.

use super::identity::Token;
use crate::go::strings::{equal_fold, to_lower};
use base64::Engine;
use http::{header, HeaderMap};

/// The prefix of the subprotocol that carries a bearer token
/// (`bearerProtocolPrefix`), the token after it in unpadded base64url.
pub const BEARER_PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

/// What a WebSocket request carries for the handshake and the
/// authenticators. Its `Debug` never shows a token entry.
#[derive(Clone, PartialEq, Eq)]
pub struct WebSocket {
    /// `Sec-WebSocket-Protocol` as x/net's handshake reads it: the first
    /// header line (Go's `Header.Get`), until the protocol authenticator,
    /// having authenticated the request by its token, sets it to the
    /// other subprotocols joined with ",".
    pub protocols: Option<String>,
    /// The bearer token among the subprotocols, as the protocol
    /// authenticator reads it: `Ok(None)` when there is none (or it is
    /// empty).
    pub token: Result<Option<ProtocolToken>, ProtocolTokenError>,
}

/// A bearer token found in `Sec-WebSocket-Protocol`, and the header the
/// authenticator leaves once the token authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolToken {
    pub token: Token,
    /// Every other subprotocol of every header line, trimmed, joined with
    /// "," (no space): the header the apiserver's handshake then reads.
    pub others: String,
}

/// Why the protocol authenticator fails a request (a 401 unless another
/// authenticator takes it), in its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolTokenError {
    #[error("multiple base64.bearer.authorization tokens specified")]
    Multiple,
    #[error("invalid base64.bearer.authorization token encoding")]
    Encoding,
    #[error("invalid base64.bearer.authorization token")]
    NotUtf8,
    /// A token with no other subprotocol: none would be left to echo.
    #[error("missing additional subprotocol")]
    MissingAdditional,
}

impl std::fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let protocols = self.protocols.as_ref().map(|p| {
            p.split(',')
                .map(|e| match e.trim().starts_with(BEARER_PROTOCOL_PREFIX) {
                    true => "<redacted>",
                    false => e,
                })
                .collect::<Vec<_>>()
                .join(",")
        });
        f.debug_struct("WebSocket")
            .field("protocols", &protocols)
            .field("token", &self.token)
            .finish()
    }
}

impl WebSocket {
    /// The request's WebSocket side, if it is a WebSocket request.
    pub fn from_headers(headers: &HeaderMap) -> Option<WebSocket> {
        is_websocket_request(headers).then(|| WebSocket {
            protocols: headers
                .get(header::SEC_WEBSOCKET_PROTOCOL)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            token: protocol_token(headers),
        })
    }
}

/// `wsstream.IsWebSocketRequest`: the first `Upgrade` value is
/// "websocket" (Go's `EqualFold`), and the first `Connection` value,
/// lower-cased, matches `(^|.*,\s*)upgrade($|\s*,)`.
pub fn is_websocket_request(headers: &HeaderMap) -> bool {
    let first = |name| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    };
    equal_fold(&first(header::UPGRADE), "websocket")
        && connection_upgrade(&to_lower(&first(header::CONNECTION)))
}

/// `connectionUpgradeRegex` on a lower-cased value: "upgrade" at the start
/// or after a comma and optional spaces, and at the end or before
/// optional spaces and a comma (Go's `\s`: tab, newline, form feed,
/// carriage return, space).
fn connection_upgrade(v: &str) -> bool {
    let space = |c: char| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ');
    v.match_indices("upgrade").any(|(i, m)| {
        let before = v[..i].trim_end_matches(space);
        let after = v[i + m.len()..].trim_start_matches(space);
        (i == 0 || before.ends_with(',')) && (v.len() == i + m.len() || after.starts_with(','))
    })
}

/// The protocol authenticator's reading of `Sec-WebSocket-Protocol`: every
/// header line split on ",", each entry trimmed (Go's `TrimSpace`); the
/// one entry with the bearer prefix decoded as unpadded base64url into
/// UTF-8. Empty entries are kept among the others, as Go keeps them.
pub fn protocol_token(headers: &HeaderMap) -> Result<Option<ProtocolToken>, ProtocolTokenError> {
    let mut token: Option<String> = None;
    let mut others: Vec<String> = Vec::new();
    for line in headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        let line = String::from_utf8_lossy(line.as_bytes());
        for protocol in line.split(',') {
            let protocol = protocol.trim();
            let Some(encoded) = protocol.strip_prefix(BEARER_PROTOCOL_PREFIX) else {
                others.push(protocol.to_string());
                continue;
            };
            if token.is_some() {
                return Err(ProtocolTokenError::Multiple);
            }
            let decoded = RAW_URL
                .decode(encoded)
                .map_err(|_| ProtocolTokenError::Encoding)?;
            token = Some(String::from_utf8(decoded).map_err(|_| ProtocolTokenError::NotUtf8)?);
        }
    }
    match token {
        // An empty token authenticates nothing, and is not removed.
        None => Ok(None),
        Some(t) if t.is_empty() => Ok(None),
        Some(_) if others.is_empty() => Err(ProtocolTokenError::MissingAdditional),
        Some(t) => Ok(Some(ProtocolToken {
            token: Token(t),
            others: others.join(","),
        })),
    }
}

/// Go's `base64.RawURLEncoding`: the URL alphabet, no padding (an '='
/// is an illegal byte), and a last symbol's unused bits not checked.
const RAW_URL: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(v.as_bytes()).unwrap(),
            );
        }
        h
    }

    fn websocket(upgrade: &str, connection: &str) -> bool {
        is_websocket_request(&headers(&[
            ("upgrade", upgrade),
            ("connection", connection),
        ]))
    }

    #[test]
    fn a_websocket_request_names_websocket_in_its_first_upgrade_and_upgrade_in_its_first_connection(
    ) {
        for (upgrade, connection) in [
            ("websocket", "Upgrade"),
            ("WebSocket", "keep-alive, Upgrade"),
            ("WEBSOCKET", "Upgrade, keep-alive"),
            ("websocket", "upgrade ,x"),
            ("websocket", "a,b,\tupgrade"),
            ("websoc\u{212a}et", "upgrade"),
        ] {
            assert!(websocket(upgrade, connection), "{upgrade:?} {connection:?}");
        }
        for (upgrade, connection) in [
            ("websocket", "xupgrade"),
            ("websocket", "upgrade2"),
            ("websocket", "keep-alive"),
            ("h2c, websocket", "upgrade"),
            ("websocket2", "upgrade"),
            ("websocket", ""),
        ] {
            assert!(
                !websocket(upgrade, connection),
                "{upgrade:?} {connection:?}"
            );
        }
        // Only the first line of each counts, as Go's Header.Get.
        let second = headers(&[
            ("upgrade", "h2c"),
            ("upgrade", "websocket"),
            ("connection", "upgrade"),
        ]);
        assert!(!is_websocket_request(&second));
        assert!(!is_websocket_request(&HeaderMap::new()));
    }

    fn token_of(lines: &[&str]) -> Result<Option<ProtocolToken>, ProtocolTokenError> {
        let pairs: Vec<_> = lines
            .iter()
            .map(|l| ("sec-websocket-protocol", *l))
            .collect();
        protocol_token(&headers(&pairs))
    }

    fn entry(token: &str) -> String {
        format!(
            "{BEARER_PROTOCOL_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token)
        )
    }

    #[test]
    fn a_token_entry_is_decoded_and_the_other_entries_of_every_line_are_joined_with_commas() {
        let got = token_of(&[
            &format!("base64.binary.k8s.io, {}", entry("s3cr3t?>")),
            " channel.k8s.io ,,x",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(got.token, Token("s3cr3t?>".into()));
        assert_eq!(got.others, "base64.binary.k8s.io,channel.k8s.io,,x");
    }

    #[test]
    fn each_token_error_is_the_authenticators() {
        let two = format!("{}, {}, x", entry("a"), entry("b"));
        assert_eq!(token_of(&[&two]), Err(ProtocolTokenError::Multiple));
        // Padded, or the standard alphabet's '+' and '/': not RawURL.
        let padded = format!("{BEARER_PROTOCOL_PREFIX}YWJjZA==, x");
        assert_eq!(token_of(&[&padded]), Err(ProtocolTokenError::Encoding));
        let plus = format!("{BEARER_PROTOCOL_PREFIX}a+b/, x");
        assert_eq!(token_of(&[&plus]), Err(ProtocolTokenError::Encoding));
        // 0xff 0xfe is no UTF-8.
        let binary = format!("{BEARER_PROTOCOL_PREFIX}__4, x");
        assert_eq!(token_of(&[&binary]), Err(ProtocolTokenError::NotUtf8));
        assert_eq!(
            token_of(&[&entry("alone")]),
            Err(ProtocolTokenError::MissingAdditional)
        );
        // The first bad entry decides, before a second is seen.
        let bad_then_good = format!("{BEARER_PROTOCOL_PREFIX}=, {}", entry("b"));
        assert_eq!(
            token_of(&[&bad_then_good]),
            Err(ProtocolTokenError::Encoding)
        );
        assert_eq!(
            ProtocolTokenError::MissingAdditional.to_string(),
            "missing additional subprotocol"
        );
    }

    #[test]
    fn no_token_or_an_empty_one_authenticates_nothing_and_a_trailing_bit_is_not_checked() {
        assert_eq!(token_of(&["base64.binary.k8s.io"]), Ok(None));
        assert_eq!(token_of(&[]), Ok(None));
        assert_eq!(
            token_of(&[&format!("{BEARER_PROTOCOL_PREFIX}, x")]),
            Ok(None)
        );
        // "YR" decodes to "a" in Go though its last symbol has spare bits set.
        let loose = format!("{BEARER_PROTOCOL_PREFIX}YR, x");
        assert_eq!(
            token_of(&[&loose]).unwrap().unwrap().token,
            Token("a".into())
        );
    }

    #[test]
    fn only_a_websocket_request_has_a_websocket_side_its_protocols_the_first_line() {
        let h = headers(&[
            ("upgrade", "websocket"),
            ("connection", "Upgrade"),
            ("sec-websocket-protocol", "a, b"),
            ("sec-websocket-protocol", "c"),
        ]);
        let ws = WebSocket::from_headers(&h).unwrap();
        assert_eq!(ws.protocols.as_deref(), Some("a, b"));
        assert_eq!(ws.token, Ok(None));
        let plain = headers(&[("sec-websocket-protocol", &entry("t"))]);
        assert_eq!(WebSocket::from_headers(&plain), None);
    }

    #[test]
    fn a_token_never_shows_in_debug_output() {
        let h = headers(&[
            ("upgrade", "websocket"),
            ("connection", "Upgrade"),
            ("sec-websocket-protocol", &format!("x, {}", entry("s3cr3t"))),
        ]);
        let ws = WebSocket::from_headers(&h).unwrap();
        let shown = format!("{ws:?}");
        assert!(!shown.contains(&entry("s3cr3t")), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("x,<redacted>"), "{shown}");
    }
}
