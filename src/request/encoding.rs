//! `Accept-Encoding`: whether the client takes gzip; and whether it is a
//! kubecache that takes its watch streams gzipped.

use http::{header, HeaderMap};

/// The header with which a kubecache's reflector says that it is one and
/// takes a gzipped watch stream (`Kubecache-Watch-Encoding: gzip`, beside
/// `Accept-Encoding: gzip`). The apiserver never compresses a watch, and
/// clients read a watch's lines as they come, so every other client keeps
/// the apiserver's uncompressed framing; an apiserver ignores the header.
pub const WATCH_ENCODING: &str = "kubecache-watch-encoding";

/// Whether a watch may be answered gzipped: `Kubecache-Watch-Encoding`
/// lists `gzip` (as `Accept-Encoding` is read) and `Accept-Encoding` does.
pub fn takes_gzip_watch(headers: &HeaderMap) -> bool {
    accepts_gzip(headers)
        && headers
            .get_all(WATCH_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|t| t.trim() == "gzip"))
}

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

    #[test]
    fn only_a_kubecache_that_also_accepts_gzip_takes_a_gzip_watch() {
        let both = |encoding: &str, watch: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT_ENCODING, encoding.parse().unwrap());
            h.insert(WATCH_ENCODING, watch.parse().unwrap());
            takes_gzip_watch(&h)
        };
        assert!(both("gzip", "gzip"));
        assert!(both("deflate, gzip", "identity, gzip"));
        assert!(!both("identity", "gzip"));
        assert!(!both("gzip", "br"));
        assert!(!takes_gzip_watch(&accept("gzip")));
    }

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
