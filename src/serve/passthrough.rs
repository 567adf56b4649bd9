//! Forwarding to the upstream, streamed both ways: the request's own method,
//! headers and body; the upstream's answer as it comes, errors included;
//! HTTP upgrades (exec, attach, port-forward) spliced byte for byte.

use crate::body::{self, Body, BoxError};
use crate::upstream::{Upstream, UpstreamError};
use http::{header, HeaderMap, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "proxy-authorization",
];

fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        })
}

fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    // Headers the sender named in Connection are for this hop alone (RFC 9110 7.6.1).
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !(t.is_empty() || keep_upgrade && t == "upgrade"))
        .collect();
    for h in named {
        headers.remove(h.as_str());
    }
    for h in HOP_BY_HOP {
        if keep_upgrade && h == "connection" {
            continue;
        }
        headers.remove(h);
    }
    if !keep_upgrade {
        headers.remove(header::UPGRADE);
    }
}

/// The request forwarded, its answer streamed back; `Err` when the
/// upstream could not be asked at all.
pub async fn forward(
    up: &Upstream,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, UpstreamError> {
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    parts.uri = up.uri(&pq);
    parts.headers.remove(header::HOST);
    // The proxy's own credentials stand in for the client's, like kubectl proxy.
    parts.headers.remove(header::AUTHORIZATION);
    strip_hop_by_hop(&mut parts.headers, upgrade);
    parts.version = http::Version::HTTP_11;
    let body: Body = body.map_err(|e| Box::new(e) as BoxError).boxed_unsync();
    let resp = up.send(Request::from_parts(parts, body)).await?;
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_upgrade) = client_upgrade {
            return Ok(splice_upgrade(resp, client_upgrade));
        }
    }
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers, false);
    Ok(Response::from_parts(
        parts,
        body.map_err(|e| Box::new(e) as BoxError).boxed_unsync(),
    ))
}

fn splice_upgrade(
    mut resp: Response<Incoming>,
    client_upgrade: hyper::upgrade::OnUpgrade,
) -> Response<Body> {
    let upstream_upgrade = hyper::upgrade::on(&mut resp);
    tokio::spawn(async move {
        let (client, upstream) = match tokio::try_join!(client_upgrade, upstream_upgrade) {
            Ok(pair) => pair,
            Err(e) => {
                tracing::debug!(error = %e, "upgrade failed");
                return;
            }
        };
        let mut client = TokioIo::new(client);
        let mut upstream = TokioIo::new(upstream);
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    });
    let (parts, _) = resp.into_parts();
    Response::from_parts(parts, body::empty())
}
