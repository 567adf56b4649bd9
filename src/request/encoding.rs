//! `Accept-Encoding`: whether the client takes gzip.

use http::{header, HeaderMap};

/// Whether `Accept-Encoding` lists `gzip`: comma-separated tokens,
/// whitespace trimmed, compared exactly (so `gzip;q=0` and `GZIP` do not
/// count, as in the apiserver's `negotiateContentEncoding`).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .take(1)
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.trim() == "gzip"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, v.parse().unwrap());
        h
    }

    #[test]
    fn only_the_exact_gzip_token_asks_for_gzip() {
        assert!(accepts_gzip(&accept("gzip")));
        assert!(accepts_gzip(&accept("deflate, gzip")));
        assert!(accepts_gzip(&accept(" br ,gzip ,x")));
        assert!(!accepts_gzip(&accept("gzip;q=1")));
        assert!(!accepts_gzip(&accept("GZIP")));
        assert!(!accepts_gzip(&accept("*")));
        assert!(!accepts_gzip(&accept("identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
