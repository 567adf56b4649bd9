//! Forwarding to the upstream, streamed both ways: the request's own method,
//! headers and body; the upstream's answer as it comes, errors included;
//! HTTP upgrades (exec, attach, port-forward) spliced byte for byte.
//!
//! Always with the identity the request is served as, never another:
//! kubecache's own in trust-local mode (the client's `Authorization`
//! dropped, as `kubectl proxy` drops it); a client's bearer token, or none
//! for an anonymous client, as it came, through a connection that presents
//! nothing of kubecache's — one that authenticated with the bearer token
//! of its `Sec-WebSocket-Protocol` with that token as `Authorization:
//! Bearer` and the entry removed, as the apiserver's authenticator removes
//! it, so that the upstream's handshake sees what the apiserver's would; a
//! client known by its certificate as kubecache impersonating it
//! (`Impersonate-User`, `-Group`, `-Extra-*`, `-Uid`).

use super::auth::AuthError;
use super::errors::ServeError;
use super::listener::ConnectionSlot;
use super::state::ServeState;
use crate::body::{self, Body, BoxError};
use crate::request::identity::ALL_AUTHENTICATED;
use crate::request::impersonation::{EXTRA_PREFIX, GROUP, USER};
use crate::request::websocket::ProtocolToken;
use crate::request::{Identity, UserInfo, Via};
use http::{header, HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};
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

/// The request forwarded as `identity`, its answer streamed back; `Err`
/// when the upstream could not be asked at all.
/// A body longer than `max_body` (one without a declared length: those
/// with one were refused before) is cut off there, and the request fails.
pub async fn forward(
    state: &ServeState,
    request: &crate::request::Request,
    mut req: Request<Incoming>,
    max_body: u64,
) -> Result<Response<Body>, ServeError> {
    let up = match &request.identity {
        Identity::Proxy => {
            // The proxy's own credentials stand in for the client's, like
            // kubectl proxy.
            req.headers_mut().remove(header::AUTHORIZATION);
            &state.forward
        }
        Identity::Client(client) => match client.via {
            Via::Token | Via::Anonymous => state
                .forward_as_client
                .as_ref()
                .ok_or(AuthError::Unauthenticated)?,
            Via::ProtocolToken => {
                let found = request
                    .websocket
                    .as_ref()
                    .and_then(|ws| ws.token.as_ref().ok());
                let Some(found) = found.and_then(Option::as_ref) else {
                    return Err(AuthError::Unauthenticated.into());
                };
                bearer_in_place_of_protocol(req.headers_mut(), found)?;
                state
                    .forward_as_client
                    .as_ref()
                    .ok_or(AuthError::Unauthenticated)?
            }
            Via::Certificate => {
                impersonate(req.headers_mut(), &client.acting_as)?;
                &state.forward
            }
        },
        Identity::Unauthenticated => return Err(AuthError::Unauthenticated.into()),
    };
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let slot = req.extensions().get::<ConnectionSlot>().cloned();
    let (mut parts, body) = req.into_parts();
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    parts.uri = up.uri(&pq);
    parts.headers.remove(header::HOST);
    strip_hop_by_hop(&mut parts.headers, upgrade);
    parts.version = http::Version::HTTP_11;
    let body: Body = http_body_util::Limited::new(body, max_body as usize)
        .map_err(|e| e as BoxError)
        .boxed_unsync();
    let resp = up
        .send(Request::from_parts(parts, body))
        .await
        .map_err(ServeError::from)?;
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_upgrade) = client_upgrade {
            return Ok(splice_upgrade(resp, client_upgrade, slot));
        }
    }
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers, false);
    Ok(Response::from_parts(
        parts,
        body.map_err(|e| Box::new(e) as BoxError).boxed_unsync(),
    ))
}

/// Makes `headers` carry the token a client authenticated with in its
/// `Sec-WebSocket-Protocol` as `Authorization: Bearer`, and the header as
/// the apiserver's protocol authenticator leaves it: the other
/// subprotocols joined with ",".
fn bearer_in_place_of_protocol(
    headers: &mut HeaderMap,
    found: &ProtocolToken,
) -> Result<(), AuthError> {
    let bearer = HeaderValue::from_str(&format!("Bearer {}", found.token.0))
        .map_err(|_| AuthError::Unforwardable("the token of Sec-WebSocket-Protocol".into()))?;
    let others = HeaderValue::from_str(&found.others).map_err(|_| {
        AuthError::Unforwardable("the subprotocols of Sec-WebSocket-Protocol".into())
    })?;
    headers.insert(header::AUTHORIZATION, bearer);
    headers.insert(header::SEC_WEBSOCKET_PROTOCOL, others);
    Ok(())
}

/// Makes `headers` ask the upstream to act as `user`: the client's own
/// credentials and impersonation headers replaced by kubecache's
/// impersonation of whom the client was allowed to act as.
fn impersonate(headers: &mut HeaderMap, user: &UserInfo) -> Result<(), AuthError> {
    headers.remove(header::AUTHORIZATION);
    let theirs: Vec<HeaderName> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for k in theirs {
        headers.remove(k);
    }
    // Names are UTF-8 as the apiserver reads them (a certificate's CN may
    // be): header values take such bytes, not control characters.
    let value = |v: &str| {
        HeaderValue::from_bytes(v.as_bytes())
            .map_err(|_| AuthError::Unforwardable(format!("{v:?}")))
    };
    headers.insert(USER, value(&user.name)?);
    for g in &user.groups {
        // The apiserver adds it to every impersonated user itself.
        if g != ALL_AUTHENTICATED {
            headers.append(GROUP, value(g)?);
        }
    }
    for (key, values) in &user.extra {
        let name =
            HeaderName::from_bytes(format!("{EXTRA_PREFIX}{}", escape_extra_key(key)).as_bytes())
                .map_err(|_| AuthError::Unforwardable(format!("{key:?}")))?;
        for v in values {
            headers.append(name.clone(), value(v)?);
        }
    }
    if !user.uid.is_empty() {
        headers.insert("impersonate-uid", value(&user.uid)?);
    }
    Ok(())
}

/// An extra's key as client-go writes it into a header name: bytes a
/// header name may not hold percent-encoded.
fn escape_extra_key(key: &str) -> String {
    let mut out = String::new();
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The upgraded session, spliced in a task of its own that holds the
/// client connection's `slot` (see `ConnectionSlot`) and ends at the drain.
fn splice_upgrade(
    mut resp: Response<Incoming>,
    client_upgrade: hyper::upgrade::OnUpgrade,
    slot: Option<ConnectionSlot>,
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
        let draining = async {
            match &slot {
                Some(slot) => slot.draining().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
            _ = draining => tracing::debug!("an upgraded session ended by the drain"),
        }
    });
    let (parts, _) = resp.into_parts();
    Response::from_parts(parts, body::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_client_is_impersonated_in_place_of_its_own_credentials_and_headers() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer theirs".parse().unwrap());
        h.insert("impersonate-user", "admin".parse().unwrap());
        h.insert("impersonate-extra-x", "y".parse().unwrap());
        h.insert("accept", "application/json".parse().unwrap());
        let mut user = UserInfo::authenticated(
            "José".into(),
            String::new(),
            vec!["team-a".into(), "ops".into()],
        );
        user.extra
            .insert("acme.com/project".into(), vec!["p1".into()]);
        impersonate(&mut h, &user).unwrap();
        assert!(h.get(header::AUTHORIZATION).is_none());
        assert_eq!(h["impersonate-user"].as_bytes(), "José".as_bytes());
        let groups: Vec<_> = h.get_all("impersonate-group").iter().collect();
        assert_eq!(groups, ["team-a", "ops"]);
        assert_eq!(h["impersonate-extra-acme.com%2Fproject"], "p1");
        assert!(h.get("impersonate-extra-x").is_none());
        assert!(h.get("impersonate-uid").is_none());
        assert_eq!(h["accept"], "application/json");
        let control = UserInfo::authenticated("a\nb".into(), String::new(), vec![]);
        assert!(matches!(
            impersonate(&mut HeaderMap::new(), &control),
            Err(AuthError::Unforwardable(_))
        ));
    }
}
