//! Response compression as the apiserver does it (`deferredResponseWriter`):
//! gzip when the client lists the `gzip` token in `Accept-Encoding` and the
//! body is over 128 KiB; never for watches.

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use http::{header, HeaderMap};
use std::io::Write;

/// Bodies this size or smaller go out as they are.
pub const THRESHOLD: usize = 128 * 1024;

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

/// The body gzipped at zlib-rs's level 2. Its level 1 is zlib-ng's "quick"
/// strategy, whose output is ~45% bigger (a 10k-pod list: 12.8% of the
/// JSON against 8.7%, measured in benches/micro.rs) for 25% less time;
/// level 2 is zlib's classic fastest deflate, which the apiserver's level 1
/// resembles (v1.20 uses 4; current apiservers 1). Kept list bodies are
/// compressed once per version, so the ratio is what counts.
pub fn gzip(body: &[u8]) -> Bytes {
    gzip_at(body, Compression::new(2))
}

/// The body gzipped at `level`.
pub fn gzip_at(body: &[u8], level: Compression) -> Bytes {
    let mut enc = GzEncoder::new(Vec::with_capacity(body.len() / 8), level);
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(body);
    Bytes::from(enc.finish().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

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

    #[test]
    fn gzipped_bodies_decompress_to_the_same_bytes() {
        let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let z = gzip(&body);
        assert!(z.len() < body.len());
        let mut out = Vec::new();
        GzDecoder::new(&z[..]).read_to_end(&mut out).unwrap();
        assert_eq!(out, body);
    }
}
