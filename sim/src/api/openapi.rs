//! `/openapi/v2`, answered as v1.20's kube-openapi handler answers it: the
//! first `Accept` clause (by weight) that JSON or gnostic's protobuf
//! matches picks the encoding, else a bare 406. Other `/openapi/` paths
//! are no path the simulator (or v1.20) serves. Not simulated: the ETag
//! (v1.20 sends one, and a 304 for a matching `If-None-Match`), and gzip.

use crate::openapi::{self, OpenApiError};
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use kubecache::body::{self, Body};
use kubecache::serving::respond::typed_response;

/// The media type of the protobuf encoding.
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The answer to `/openapi/v2` for an `Accept` header, or `None` for any
/// other path.
pub(super) fn answer(
    path: &str,
    accept: Option<&str>,
) -> Option<Result<Response<Body>, &'static OpenApiError>> {
    if path != "/openapi/v2" {
        return None;
    }
    Some(openapi::v2().map(|doc| {
        let mut r = match pick(accept.unwrap_or("*/*")) {
            // Go's http.ServeContent names the types: JSON is sniffed as
            // text, protobuf as bytes.
            Some(Encoding::Json) => typed_response(
                StatusCode::OK,
                body::full(doc.json.clone()),
                "text/plain; charset=utf-8",
            ),
            Some(Encoding::Protobuf) => typed_response(
                StatusCode::OK,
                body::full(doc.protobuf.clone()),
                "application/octet-stream",
            ),
            None => {
                let mut r = Response::new(body::full(Bytes::new()));
                *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
                r
            }
        };
        r.headers_mut()
            .append(header::VARY, HeaderValue::from_static("Accept"));
        r
    }))
}

#[derive(Debug, PartialEq)]
enum Encoding {
    Json,
    Protobuf,
}

/// The encoding of the first clause that names one (or a wildcard over
/// one, JSON first), the clauses ordered as goautoneg orders them: by
/// weight, then the more specific first.
fn pick(accept: &str) -> Option<Encoding> {
    let mut clauses: Vec<(f64, u8, &str, &str)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let (ty, sub) = parts.next()?.trim().split_once('/')?;
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            let specificity = u8::from(ty != "*") + u8::from(sub != "*");
            // goautoneg: a clause of weight 0 accepts nothing.
            (q > 0.0).then_some((q, specificity, ty, sub))
        })
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    let (pb_type, pb_sub) = PROTOBUF.split_once('/').unwrap_or_default();
    clauses.iter().find_map(|&(_, _, ty, sub)| {
        let matches = |t: &str, s: &str| (ty == t || ty == "*") && (sub == s || sub == "*");
        if matches("application", "json") {
            Some(Encoding::Json)
        } else if matches(pb_type, pb_sub) {
            Some(Encoding::Protobuf)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectls_protobuf_accept_gets_protobuf() {
        assert_eq!(pick(PROTOBUF), Some(Encoding::Protobuf));
    }

    #[test]
    fn no_preference_gets_json() {
        assert_eq!(pick("*/*"), Some(Encoding::Json));
        assert_eq!(pick("application/*"), Some(Encoding::Json));
    }

    #[test]
    fn the_heavier_clause_wins_over_the_earlier() {
        let accept = format!("application/json;q=0.5, {PROTOBUF}");
        assert_eq!(pick(&accept), Some(Encoding::Protobuf));
    }

    #[test]
    fn a_clause_of_weight_zero_accepts_nothing() {
        assert_eq!(pick("application/json;q=0"), None);
        assert_eq!(
            pick(&format!("application/json;q=0, {PROTOBUF}")),
            Some(Encoding::Protobuf)
        );
    }

    #[test]
    fn yaml_alone_is_not_acceptable() {
        assert_eq!(pick("application/yaml"), None);
    }

    #[test]
    fn other_openapi_paths_are_not_answered() {
        assert!(answer("/openapi/v3", None).is_none());
        assert!(answer("/openapi/v2/x", None).is_none());
    }

    #[test]
    fn the_answer_varies_by_accept_and_names_its_type() {
        let r = answer("/openapi/v2", Some(PROTOBUF)).unwrap().unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "application/octet-stream"
        );
        assert_eq!(r.headers()[header::VARY], "Accept");
        let r = answer("/openapi/v2", Some("application/yaml"))
            .unwrap()
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
    }
}
