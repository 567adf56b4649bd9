//! Continue tokens, byte-compatible with the apiserver's etcd3 store: base64
//! RawURL of `{"v":"meta.k8s.io/v1","rv":N,"start":"<key after prefix>\u0000"}`.
//! Compatibility lets kubecache forward any page it cannot serve itself.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use base64::engine::DecodePaddingMode;
use base64::Engine;

/// Go's `base64.RawURLEncoding`: no padding, and lenient about the unused
/// bits of the last symbol (so "garbage" decodes, as it does upstream).
const GO_RAW_URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone),
);
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    v: String,
    rv: i64,
    start: String,
}

/// A decoded token: `rv` is the snapshot the walk started at (-1 means
/// "continue inconsistently at the latest state"), `start` is the first key
/// to return, relative to the request's key prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinueToken {
    pub rv: i64,
    pub start: String,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("continue key is not valid: {0}")]
pub struct InvalidToken(String, Option<String>);

impl InvalidToken {
    fn new(reason: String) -> Self {
        InvalidToken(reason, None)
    }

    /// The error as a release whose encoding/json quotes an offending
    /// byte as a byte (`'\x81'`, `go::strconv::quote_byte`) words it, when
    /// `bytes_quoted`; else as v1.20 words it (the `Display`).
    pub fn worded(&self, bytes_quoted: bool) -> String {
        match (&self.1, bytes_quoted) {
            (Some(other), true) => format!("continue key is not valid: {other}"),
            _ => self.to_string(),
        }
    }
}

impl ContinueToken {
    /// `last_key` is relative to the prefix; the token starts just after it.
    pub fn after(rv: i64, last_key: &str) -> Self {
        ContinueToken {
            rv,
            start: format!("{last_key}\u{0}"),
        }
    }

    pub fn encode(&self) -> String {
        let json = crate::go::json::string(&self.start);
        let body = format!(
            "{{\"v\":\"meta.k8s.io/v1\",\"rv\":{},\"start\":{json}}}",
            self.rv
        );
        URL_SAFE_NO_PAD.encode(body)
    }

    /// Validates exactly what `decodeContinue` checks.
    pub fn decode(token: &str) -> Result<Self, InvalidToken> {
        let data = GO_RAW_URL
            .decode(token)
            .map_err(|e| InvalidToken::new(crate::go::base64::error(token, e)))?;
        let wire: Wire = serde_json::from_slice(&data).map_err(|e| {
            use crate::go::{json, strconv};
            InvalidToken(
                json::syntax_error(&data, &e),
                Some(json::syntax_error_quoting(&data, &e, strconv::quote_byte)),
            )
        })?;
        if wire.v != "meta.k8s.io/v1" {
            return Err(InvalidToken::new(format!(
                "server does not recognize this encoded version \"{}\"",
                wire.v
            )));
        }
        if wire.rv == 0 {
            return Err(InvalidToken::new(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
            ));
        }
        if wire.start.is_empty() {
            return Err(InvalidToken::new(
                "encoded start key empty (version meta.k8s.io/v1)".into(),
            ));
        }
        // Like the apiserver, refuse keys that `path.Clean` would change, so a
        // token can never range outside the request's prefix.
        let key = if wire.start.starts_with('/') {
            wire.start.clone()
        } else {
            format!("/{}", wire.start)
        };
        if crate::go::path::clean(&key) != key {
            return Err(InvalidToken::new(wire.start));
        }
        Ok(ContinueToken {
            rv: wire.rv,
            start: key[1..].to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_the_apiserver_byte_for_byte() {
        // A token the apiserver returned for /api/v1/pods?limit=1 at rv 1234.
        let t = ContinueToken::after(1234, "default/nginx");
        let raw = URL_SAFE_NO_PAD.decode(t.encode()).unwrap();
        assert_eq!(
            std::str::from_utf8(&raw).unwrap(),
            "{\"v\":\"meta.k8s.io/v1\",\"rv\":1234,\"start\":\"default/nginx\\u0000\"}"
        );
        assert!(!t.encode().contains('='));
    }

    #[test]
    fn round_trips() {
        let t = ContinueToken::after(7, "ns/a");
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap(), t);
        let t = ContinueToken::after(-1, "x");
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap().rv, -1);
    }

    #[test]
    fn garbage_is_rejected_with_the_apiservers_reasons() {
        assert!(ContinueToken::decode("!!!")
            .unwrap_err()
            .0
            .contains("illegal base64"));
        let enc = |s: &str| URL_SAFE_NO_PAD.encode(s);
        assert!(ContinueToken::decode(&enc("not json")).is_err());
        assert_eq!(
            ContinueToken::decode(&enc(r#"{"v":"x","rv":1,"start":"a"}"#))
                .unwrap_err()
                .0,
            "server does not recognize this encoded version \"x\""
        );
        assert!(
            ContinueToken::decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#))
                .unwrap_err()
                .0
                .contains("incorrect encoded start resourceVersion")
        );
        assert!(
            ContinueToken::decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#))
                .unwrap_err()
                .0
                .contains("start key empty")
        );
        assert!(
            ContinueToken::decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../x"}"#)).is_err()
        );
        assert!(
            ContinueToken::decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":"1","start":"a"}"#)).is_err()
        );
    }

    #[test]
    fn a_start_key_of_a_slash_alone_starts_at_the_first_key_as_upstream() {
        // decodeContinue cleans "/" to "/" and lists from keyPrefix + "".
        let enc = |s: &str| URL_SAFE_NO_PAD.encode(s);
        let t = ContinueToken::decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"/"}"#));
        assert_eq!(
            t,
            Ok(ContinueToken {
                rv: -1,
                start: String::new()
            })
        );
    }

    #[test]
    fn garbage_decodes_like_gos_lenient_base64_and_fails_as_json() {
        let garbage = ContinueToken::decode("garbage").unwrap_err();
        assert_eq!(
            garbage.0,
            "invalid character '\\u0081' looking for beginning of value"
        );
        // v1.36.2, recorded: the byte as a byte.
        assert_eq!(
            garbage.worded(true),
            "continue key is not valid: invalid character '\\x81' looking for beginning of value"
        );
        assert_eq!(garbage.worded(false), garbage.to_string());
        assert_eq!(
            ContinueToken::decode("").unwrap_err().0,
            "unexpected end of JSON input"
        );
    }

    #[test]
    fn html_characters_are_escaped_like_go() {
        let t = ContinueToken::after(1, "a<b>&");
        let raw = String::from_utf8(URL_SAFE_NO_PAD.decode(t.encode()).unwrap()).unwrap();
        assert!(raw.contains("a\\u003cb\\u003e\\u0026"));
    }
}
