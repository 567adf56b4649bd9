//! Go's `net/url`: whether `url.ParseRequestURI` takes a string, and the
//! words of its errors. golang.org/x/net/websocket checks a handshake's
//! `Origin` and its own location with it, so what it refuses decides a
//! WebSocket watch's 403 and 400.
//!
//! Ported from Go 1.19's `net/url/url.go` (the real apiserver of the
//! tests is built with it; v1.20's release Go 1.15 reads the same):
//! `parse` with `viaRequest`, `getScheme`, `parseAuthority`, `parseHost`,
//! `validUserinfo`, `validOptionalPort`, `unescape` and `shouldEscape` for
//! what they accept. Bytes, not characters, as Go's strings are.

/// Why Go's `url.ParseRequestURI` refuses a string; `Display` is Go's
/// `*url.Error` text (`parse "…": …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse {}: {reason}", super::strconv::quote(.url))]
pub struct UrlError {
    pub url: String,
    pub reason: String,
}

/// Go's `url.ParseRequestURI(raw)`: `Ok` when it parses, else its error.
/// The string is read as an HTTP request's target: an absolute URI or an
/// absolute path (no fragment is split off).
pub fn parse_request_uri(raw: &[u8]) -> Result<(), UrlError> {
    parse(raw).map_err(|reason| UrlError {
        url: String::from_utf8_lossy(raw).into_owned(),
        reason,
    })
}

fn parse(raw: &[u8]) -> Result<(), String> {
    if raw.iter().any(|&b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() {
        return Err("empty url".into());
    }
    if raw == b"*" {
        return Ok(());
    }
    let (scheme, rest) = scheme(raw)?;
    // The query goes; a lone trailing "?" is ForceQuery.
    let rest = match rest.iter().position(|&b| b == b'?') {
        Some(i) => &rest[..i],
        None => rest,
    };
    if !rest.starts_with(b"/") {
        if !scheme.is_empty() {
            // A rootless path after a scheme is opaque ("mailto:x").
            return Ok(());
        }
        return Err("invalid URI for request".into());
    }
    let mut path = rest;
    if !scheme.is_empty() && rest.starts_with(b"//") {
        let authority_and_path = &rest[2..];
        let (authority, p) = match authority_and_path.iter().position(|&b| b == b'/') {
            Some(i) => authority_and_path.split_at(i),
            None => (authority_and_path, &b""[..]),
        };
        parse_authority(authority)?;
        path = p;
    }
    unescape(path, Mode::Path)
}

/// Go's `getScheme`: the scheme before the first ':' if everything before
/// it may be one, else none (and the whole string is the rest).
fn scheme(raw: &[u8]) -> Result<(&[u8], &[u8]), String> {
    for (i, &c) in raw.iter().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i == 0 => return Ok((b"", raw)),
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok((b"", raw)),
        }
    }
    Ok((b"", raw))
}

fn parse_authority(authority: &[u8]) -> Result<(), String> {
    let at = authority.iter().rposition(|&b| b == b'@');
    let host = match at {
        Some(i) => &authority[i + 1..],
        None => authority,
    };
    parse_host(host)?;
    let Some(i) = at else {
        return Ok(());
    };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".into());
    }
    for part in userinfo.splitn(2, |&b| b == b':') {
        unescape(part, Mode::UserPassword)?;
    }
    Ok(())
}

fn parse_host(host: &[u8]) -> Result<(), String> {
    if host.starts_with(b"[") {
        // An IP-Literal (RFC 3986, RFC 6874): "[fe80::1%25en0]:80".
        let Some(i) = host.iter().rposition(|&b| b == b']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(invalid_port(colon_port));
        }
        if let Some(zone) = find(&host[..i], b"%25") {
            unescape(&host[..zone], Mode::Host)?;
            unescape(&host[zone..i], Mode::Zone)?;
            return unescape(&host[i..], Mode::Host);
        }
    } else if let Some(i) = host.iter().rposition(|&b| b == b':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(invalid_port(colon_port));
        }
    }
    unescape(host, Mode::Host)
}

fn invalid_port(colon_port: &[u8]) -> String {
    format!(
        "invalid port {} after host",
        super::strconv::quote(&String::from_utf8_lossy(colon_port))
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn valid_optional_port(port: &[u8]) -> bool {
    match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    }
}

/// Go's `validUserinfo`: RFC 3986's userinfo characters (and '@', which
/// Go lets through), by rune: a non-ASCII rune is refused.
fn valid_userinfo(s: &[u8]) -> bool {
    s.iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
}

/// Go's `unescape`, for whether it fails: every '%' starts two hex
/// digits; in a host only non-ASCII bytes (and "%25") may be escaped, and
/// only the bytes a host may hold may stand unescaped.
fn unescape(s: &[u8], mode: Mode) -> Result<(), String> {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                if i + 2 >= s.len()
                    || !s[i + 1].is_ascii_hexdigit()
                    || !s[i + 2].is_ascii_hexdigit()
                {
                    let bad = &s[i..s.len().min(i + 3)];
                    return Err(escape_error(bad));
                }
                let escaped = &s[i..i + 3];
                let v = hex(s[i + 1]) << 4 | hex(s[i + 2]);
                if mode == Mode::Host && hex(s[i + 1]) < 8 && escaped != b"%25" {
                    return Err(escape_error(escaped));
                }
                if mode == Mode::Zone && escaped != b"%25" && v != b' ' && should_escape_in_host(v)
                {
                    return Err(escape_error(escaped));
                }
                i += 3;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape_in_host(c) {
                    return Err(format!(
                        "invalid character {} in host name",
                        super::strconv::quote(&(c as char).to_string())
                    ));
                }
                i += 1;
            }
        }
    }
    Ok(())
}

fn escape_error(bad: &[u8]) -> String {
    format!(
        "invalid URL escape {}",
        super::strconv::quote(&String::from_utf8_lossy(bad))
    )
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

/// Go's `shouldEscape(c, encodeHost)`: a host holds letters, digits,
/// RFC 3986's sub-delims, ':' and the brackets of an IPv6 literal, '<',
/// '>' and '"', and the unreserved marks; anything else is escaped.
fn should_escape_in_host(c: u8) -> bool {
    !(c.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes(s: &str) -> bool {
        parse_request_uri(s.as_bytes()).is_ok()
    }

    #[test]
    fn absolute_uris_and_absolute_paths_are_request_uris() {
        for ok in [
            "http://127.0.0.1:8080",
            "https://example.com/some/page?x=1",
            "http://user:pass@host",
            "http://[::1]:80/",
            "http://[fe80::1%25en0]/",
            "chrome-extension://abcdef",
            "file://",
            "mailto:x",
            "http:",
            "/relative/to/root",
            "*",
            "http://h/a%20b",
        ] {
            assert!(takes(ok), "{ok}");
        }
    }

    #[test]
    fn what_go_refuses_is_refused_with_its_words() {
        let reason = |s: &str| parse_request_uri(s.as_bytes()).unwrap_err().reason;
        assert_eq!(reason("null"), "invalid URI for request");
        assert_eq!(reason("foo"), "invalid URI for request");
        assert_eq!(reason(""), "empty url");
        assert_eq!(reason(":x"), "missing protocol scheme");
        assert_eq!(reason("http://a b"), "invalid character \" \" in host name");
        assert_eq!(reason("http://h:8x"), "invalid port \":8x\" after host");
        assert_eq!(reason("http://[::1"), "missing ']' in host");
        assert_eq!(reason("http://h/%zz"), "invalid URL escape \"%zz\"");
        assert_eq!(reason("http://h/%4"), "invalid URL escape \"%4\"");
        assert_eq!(reason("http://%41/"), "invalid URL escape \"%41\"");
        assert_eq!(reason("http://a{b@h"), "net/url: invalid userinfo");
        assert_eq!(
            reason("http://h\x7f"),
            "net/url: invalid control character in URL"
        );
        assert_eq!(
            parse_request_uri(b"null").unwrap_err().to_string(),
            "parse \"null\": invalid URI for request"
        );
    }
}
