//! Who a request is served as, and whether it may be: the phases between
//! reading a request and deciding it.
//!
//! **trust-local**: every client is served with kubecache's own upstream
//! identity, as `kubectl proxy` serves them. That is only safe where the
//! only clients are the machine's own, so kubecache runs it on loopback
//! addresses alone (`config`), and guards it as `kubectl proxy` does: a
//! request for a host that is not a loopback name or address is refused
//! (a page in a browser on the machine can reach loopback under a name of
//! its own — DNS rebinding — but cannot choose the Host its browser
//! sends), and so are exec and attach unless allowed. Impersonation is
//! refused: forwarded, it would act with kubecache's identity as whoever
//! it names. A bearer token a WebSocket request carries in
//! `Sec-WebSocket-Protocol` is no credential here either: it stays among
//! the offered subprotocols, as behind `kubectl proxy`, where the
//! apiserver authenticates the proxy's own credentials first and never
//! reads (or removes) it.
//!
//! **authorize**: every client is who its own credentials say, as the
//! apiserver's authenticators would find (`access`): a verified client
//! certificate first, then a bearer token the upstream's `TokenReview`
//! takes — the `Authorization` header's, then one a WebSocket request
//! carries in `Sec-WebSocket-Protocol` — else `system:anonymous` (or a 401
//! without anonymous access); a token it refuses is a 401. Its `Impersonate-*` headers are then allowed
//! or refused as the apiserver allows them. Every read the cache answers
//! is authorized with the upstream's `SubjectAccessReview` before the
//! cache is touched ([`authorize_read`]), and what is forwarded carries
//! the client's own identity (`passthrough`).

use super::listener::PeerCertificates;
use crate::access::impersonate::{self, ImpersonateError};
use crate::access::{cert, Access, AccessConfig, AccessError, Attributes};
use crate::metrics::{self, AuthnResult};
use crate::request::identity::Token;
use crate::request::path::percent_decode;
use crate::request::websocket::ProtocolTokenError;
use crate::request::{Client, Identity, Request, UserInfo, Verb, Via};
use std::net::{IpAddr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::Arc;

/// How clients are authenticated and authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum AuthMode {
    /// Every client served with kubecache's own identity, as kubectl
    /// proxy does (loopback addresses only).
    #[default]
    TrustLocal,
    /// Every client authenticated (its token reviewed upstream, or its
    /// certificate), every cached read authorized upstream, everything
    /// forwarded with the client's own identity (needs an https upstream,
    /// and TLS off loopback).
    Authorize,
}

impl AuthMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::TrustLocal => "trust-local",
            AuthMode::Authorize => "authorize",
        }
    }
}

/// The authentication and authorization settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    pub mode: AuthMode,
    /// trust-local: pass on exec and attach (`kubectl proxy` refuses them
    /// unless its `--reject-paths` is changed).
    pub allow_exec: bool,
    /// authorize: a request without credentials is `system:anonymous`, as
    /// the apiserver has it by default (`--anonymous-auth`); else a 401.
    pub anonymous: bool,
    /// authorize: the CA client certificates are verified against.
    pub client_ca: Option<PathBuf>,
    /// authorize: how reviews are asked and kept.
    pub access: AccessConfig,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::TrustLocal,
            allow_exec: false,
            anonymous: true,
            client_ca: None,
            access: AccessConfig::default(),
        }
    }
}

/// Why a request was refused before it was decided.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// trust-local: a Host that is not a loopback name or address.
    #[error("the request's host {0:?} is not a loopback name or address")]
    HostNotLocal(Option<String>),
    /// trust-local: exec or attach without `--allow-exec`.
    #[error("{subresource} of pod {name:?} is not allowed")]
    ExecNotAllowed { subresource: String, name: String },
    /// trust-local: an `Impersonate-*` header.
    #[error("impersonation is not allowed")]
    Impersonation,
    /// No identity to serve the request as.
    #[error("the request has no identity to be served as")]
    Unauthenticated,
    /// authorize: a bearer token the upstream's review does not take.
    #[error("the bearer token is not valid")]
    InvalidToken,
    /// authorize: a WebSocket request's `Sec-WebSocket-Protocol` token
    /// that cannot be read (the protocol authenticator's error: a 401).
    #[error("the bearer token in Sec-WebSocket-Protocol")]
    ProtocolToken(#[source] ProtocolTokenError),
    /// authorize: no credentials, and anonymous requests are not served.
    #[error("the request has no credentials and anonymous requests are off")]
    Anonymous,
    /// authorize: the token could not be reviewed (a 401, as the
    /// apiserver answers an authenticator's error).
    #[error("reviewing the bearer token")]
    TokenReview(#[source] Arc<AccessError>),
    /// authorize: every token review permit stayed taken; the token was
    /// not reviewed (the apiserver's 429 for an overloaded server).
    #[error("reviewing the bearer token")]
    ReviewsBusy(#[source] Arc<AccessError>),
    /// authorize: `Impersonate-*` headers refused.
    #[error("impersonating")]
    Impersonate(#[from] ImpersonateError),
    /// authorize: the upstream's authorizer refused the request.
    #[error("{user:?} may not do it")]
    Forbidden {
        attributes: Attributes,
        user: String,
        reason: String,
    },
    /// authorize: whom a certificate client acts as cannot be written
    /// into impersonation headers (or the token of a WebSocket's
    /// protocol into `Authorization`).
    #[error("impersonating {0} upstream")]
    Unforwardable(String),
    /// authorize: the request could not be authorized (the apiserver's
    /// internal error for an authorizer's).
    #[error("authorizing {request_uri}: {error}")]
    Authorizer { request_uri: String, error: String },
}

/// Whether kubecache answers the request at all, its own endpoints
/// (health, metrics) included: in trust-local mode, only a request for a
/// loopback host.
pub fn admit(auth: &AuthConfig, request: &Request) -> Result<(), AuthError> {
    match auth.mode {
        AuthMode::TrustLocal if !request.host.as_deref().is_some_and(is_loopback_host) => {
            Err(AuthError::HostNotLocal(request.host.clone()))
        }
        _ => Ok(()),
    }
}

/// Fills the request's identity slot: kubecache's own in trust-local
/// mode; in authorize mode, whom the client's credentials name, and whom
/// it acts as once its impersonation is allowed.
pub async fn authenticate(
    auth: &AuthConfig,
    access: Option<&Access>,
    request: &mut Request,
    peer: Option<&PeerCertificates>,
) -> Result<(), AuthError> {
    let access = match (auth.mode, access) {
        (AuthMode::TrustLocal, _) => {
            request.identity = Identity::Proxy;
            return Ok(());
        }
        (AuthMode::Authorize, Some(access)) => access,
        // Not set up to authenticate: nobody is served.
        (AuthMode::Authorize, None) => return Ok(()),
    };
    let by_cert = peer.and_then(|p| p.end_entity()).and_then(cert::user_of);
    let (user, via) = match by_cert {
        Some(user) => (user, Via::Certificate),
        None => match by_token(access, request).await {
            Ok(Some(found)) => found,
            Ok(None) if auth.anonymous => (UserInfo::anonymous(), Via::Anonymous),
            Ok(None) => {
                metrics::authentication(AuthnResult::Failure);
                return Err(AuthError::Anonymous);
            }
            Err(e) => {
                let result = match e {
                    AuthError::ReviewsBusy(_) | AuthError::TokenReview(_) => AuthnResult::Error,
                    _ => AuthnResult::Failure,
                };
                metrics::authentication(result);
                return Err(e);
            }
        },
    };
    if via != Via::Anonymous {
        metrics::authentication(AuthnResult::Success);
    }
    let acting_as = match &request.impersonation {
        Some(imp) => impersonate::acting_as(access, &user, imp).await?,
        None => user.clone(),
    };
    request.identity = Identity::Client(Arc::new(Client {
        user,
        acting_as,
        via,
    }));
    Ok(())
}

/// Whom the request's bearer tokens name, asked in the apiserver's order
/// (`authenticators` in pkg/kubeapiserver/authenticator/config.go @
/// 010528e346020074d4bd7231378449beee478e10, after x509): the
/// `Authorization` header's, then — only for a WebSocket request — the one
/// in `Sec-WebSocket-Protocol`. The first that authenticates wins; when
/// none does, the first error is the answer (`union.New`), and a token the
/// upstream refuses is one. Authenticated by the protocol's token, the
/// request's subprotocols become the others, as the authenticator sets
/// the header; authenticated otherwise, the entry stays among them.
async fn by_token(
    access: &Access,
    request: &mut Request,
) -> Result<Option<(UserInfo, Via)>, AuthError> {
    let mut first_error = None;
    if let Some(token) = &request.bearer {
        match review(access, token).await {
            Ok(user) => return Ok(Some((user, Via::Token))),
            Err(e) => first_error = Some(e),
        }
    }
    if let Some(ws) = &mut request.websocket {
        match &ws.token {
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(AuthError::ProtocolToken(e.clone()));
            }
            Ok(Some(found)) => match review(access, &found.token).await {
                Ok(user) => {
                    ws.protocols = Some(found.others.clone());
                    return Ok(Some((user, Via::ProtocolToken)));
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            },
        }
    }
    first_error.map_or(Ok(None), Err)
}

/// The upstream's `TokenReview` of a token: its user, or why not.
async fn review(access: &Access, token: &Token) -> Result<UserInfo, AuthError> {
    match access.token_user(&token.0).await {
        Ok(Some(user)) => Ok(user),
        Ok(None) => Err(AuthError::InvalidToken),
        // A flood's tokens: counted, not logged one by one.
        Err(e) if matches!(*e, AccessError::Busy(_)) => Err(AuthError::ReviewsBusy(e)),
        Err(e) => {
            tracing::warn!(error = %e, "a client's token could not be reviewed; answered 401");
            Err(AuthError::TokenReview(e))
        }
    }
}

/// Whether the request's identity may have it decided at all. A request
/// that reached here without one is refused: nothing is ever read or
/// forwarded for nobody. A client's reads are authorized when they are
/// decided ([`authorize_read`]); what it sends upstream, upstream
/// authorizes.
pub fn authorize(auth: &AuthConfig, request: &Request) -> Result<(), AuthError> {
    match request.identity {
        Identity::Proxy => {
            if request.impersonating {
                return Err(AuthError::Impersonation);
            }
            if !auth.allow_exec {
                if let Some((name, subresource)) = pod_exec_or_attach(&request.path) {
                    return Err(AuthError::ExecNotAllowed { subresource, name });
                }
            }
            Ok(())
        }
        Identity::Client(_) => Ok(()),
        Identity::Unauthenticated => Err(AuthError::Unauthenticated),
    }
}

/// Whether the client may make the read the cache is about to answer: the
/// upstream's `SubjectAccessReview` of it as the apiserver's authorizer
/// would be asked (kubecache's own identity in trust-local mode needs
/// none). Asked before the type's cache is touched, so that nobody who
/// may not read a type makes kubecache cache it.
pub async fn authorize_read(access: Option<&Access>, request: &Request) -> Result<(), AuthError> {
    match &request.identity {
        Identity::Proxy => Ok(()),
        Identity::Client(client) => match read_attributes(request) {
            Some(attributes) => authorize_as(access, request, &client.acting_as, attributes).await,
            None => Err(AuthError::Unauthenticated),
        },
        Identity::Unauthenticated => Err(AuthError::Unauthenticated),
    }
}

/// Whether the request's identity may `get` kubecache's own non-resource
/// `path` (`/metrics`), as the apiserver authorizes its own.
pub async fn authorize_path(access: Option<&Access>, request: &Request) -> Result<(), AuthError> {
    match &request.identity {
        Identity::Proxy => Ok(()),
        Identity::Client(client) => {
            let attributes = Attributes::NonResource {
                verb: "get".into(),
                path: request.path.clone(),
            };
            authorize_as(access, request, &client.acting_as, attributes).await
        }
        Identity::Unauthenticated => Err(AuthError::Unauthenticated),
    }
}

async fn authorize_as(
    access: Option<&Access>,
    request: &Request,
    user: &UserInfo,
    attributes: Attributes,
) -> Result<(), AuthError> {
    let Some(access) = access else {
        return Err(AuthError::Unauthenticated);
    };
    let decision = access.decide(user, &attributes).await;
    metrics::authorization(decision.as_ref().is_ok_and(|d| d.allowed));
    match decision {
        Ok(d) if d.allowed => Ok(()),
        Ok(d) if !d.evaluation_error.is_empty() => Err(AuthError::Authorizer {
            request_uri: request.request_uri.clone(),
            error: d.evaluation_error,
        }),
        Ok(d) => Err(AuthError::Forbidden {
            attributes,
            user: user.name.clone(),
            reason: d.reason,
        }),
        Err(e) => {
            tracing::warn!(error = %e, "a read could not be authorized; answered 500");
            Err(AuthError::Authorizer {
                request_uri: request.request_uri.clone(),
                error: e.client_text(),
            })
        }
    }
}

/// What the apiserver's authorizer is asked about a read the cache
/// answers (its RequestInfo): get, list or watch of the path's resource,
/// in its namespace; a list or watch names the object its field selector
/// requires exactly by `metadata.name`, as RequestInfo takes it.
pub fn read_attributes(request: &Request) -> Option<Attributes> {
    let rp = request.resource.as_ref()?;
    let verb = match request.verb {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Watch => "watch",
        _ => return None,
    };
    let name = match &rp.name {
        Some(n) => n.clone(),
        None => request
            .options
            .selectors
            .name()
            .filter(|n| valid_path_segment(n))
            .unwrap_or_default()
            .to_string(),
    };
    Some(Attributes::Resource {
        verb: verb.into(),
        group: rp.group.clone(),
        version: rp.version.clone(),
        resource: rp.resource.clone(),
        subresource: rp.subresource.clone().unwrap_or_default(),
        namespace: rp.namespace.clone().unwrap_or_default(),
        name,
    })
}

/// Go's `path.IsValidPathSegmentName`.
fn valid_path_segment(name: &str) -> bool {
    !matches!(name, "." | "..") && !name.contains('/') && !name.contains('%')
}

/// The pod and subresource when `path` names a pod's exec or attach, read
/// as loosely as any server on the way might read it: percent-decoded,
/// both as written (empty and `.` segments aside) and cleaned as Go's
/// `path.Clean` cleans it. Refusing a path no server would route to exec
/// is harmless; missing one that it would is not.
fn pod_exec_or_attach(path: &str) -> Option<(String, String)> {
    let decoded = percent_decode(path);
    [decoded.clone(), crate::go::path::clean(&decoded)]
        .iter()
        .find_map(|p| {
            let segments: Vec<&str> = p.split('/').filter(|s| !matches!(*s, "" | ".")).collect();
            match segments.as_slice() {
                ["api", _, "namespaces", _, "pods", name, sub @ ("exec" | "attach"), ..] => {
                    Some((name.to_string(), sub.to_string()))
                }
                _ => None,
            }
        })
}

/// Whether `host` (a Host header: a name or address, with or without a
/// port) names this machine's loopback: `localhost`, an address in
/// 127.0.0.0/8, or `::1` — what `kubectl proxy` accepts by default, all
/// of 127/8 included.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // [::1] or [::1]:8001
        Some(rest) => match rest.split_once(']') {
            Some((inside, port)) if port.is_empty() || valid_port(port) => inside,
            _ => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) if valid_port(port) => name,
            Some(_) => return false,
            None => host,
        },
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match name.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => a.is_loopback(),
        Ok(IpAddr::V6(a)) => a == Ipv6Addr::LOCALHOST,
        Err(_) => false,
    }
}

fn valid_port(p: &str) -> bool {
    let p = p.strip_prefix(':').unwrap_or(p);
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_localhost_127_slash_8_and_ipv6_one_with_or_without_a_port() {
        for host in [
            "localhost",
            "LOCALHOST:8001",
            "127.0.0.1",
            "127.0.0.1:8001",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8001",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "",
            "evil.example",
            "evil.example:8001",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "10.0.0.1:8001",
            "0.0.0.0:8001",
            "[::]:8001",
            "[::1]x",
            "::1",
            "localhost:",
            "localhost:80:80",
            "[::1]:",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    fn request(path: &str, headers: &[(&str, &str)]) -> Request {
        let mut h = http::HeaderMap::new();
        for (k, v) in headers {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        Request::parse(&http::Method::POST, &path.parse().unwrap(), &h)
    }

    /// The phases in order, as `serve::handle` runs them.
    /// (Debug-printed: errors keep their sources, which do not compare.)
    async fn phases(auth: &AuthConfig, mut r: Request) -> String {
        let run = async {
            admit(auth, &r)?;
            authenticate(auth, None, &mut r, None).await?;
            authorize(auth, &r)?;
            Ok::<_, AuthError>(r.identity.clone())
        };
        format!("{:?}", run.await)
    }

    fn was(r: Result<Identity, AuthError>) -> String {
        format!("{r:?}")
    }

    #[tokio::test]
    async fn trust_local_serves_loopback_hosts_as_kubecache_without_impersonation_or_exec() {
        let local = AuthConfig::default();
        let host = [("host", "127.0.0.1:8001")];
        let pods = "/api/v1/namespaces/a/pods";
        assert_eq!(
            phases(&local, request(pods, &host)).await,
            was(Ok(Identity::Proxy))
        );
        assert_eq!(
            phases(&local, request(pods, &[("host", "evil.example")])).await,
            was(Err(AuthError::HostNotLocal(Some("evil.example".into()))))
        );
        assert_eq!(
            phases(&local, request(pods, &[])).await,
            was(Err(AuthError::HostNotLocal(None)))
        );
        let as_alice = [("host", "localhost"), ("impersonate-user", "alice")];
        assert_eq!(
            phases(&local, request(pods, &as_alice)).await,
            was(Err(AuthError::Impersonation))
        );
        let exec = "/api/v1/namespaces/a/pods/p/exec?command=sh";
        assert_eq!(
            phases(&local, request(exec, &host)).await,
            was(Err(AuthError::ExecNotAllowed {
                subresource: "exec".into(),
                name: "p".into()
            }))
        );
        let allowed = AuthConfig {
            allow_exec: true,
            ..local.clone()
        };
        assert_eq!(
            phases(&allowed, request(exec, &host)).await,
            was(Ok(Identity::Proxy))
        );
        for disguised in [
            "/api/v1/namespaces/a/pods/p/exec/",
            "//api/v1/namespaces/a/pods/p/exec",
            "/api/v1/namespaces/a/pods/p/%65xec",
            "/api/v1/namespaces/a/pods/p/x/../exec",
            "/api/v1/namespaces/a/pods/./p/exec/..",
        ] {
            let refused = phases(&local, request(disguised, &host)).await;
            assert!(refused.starts_with("Err(ExecNotAllowed"), "{disguised}");
        }
        for other in [
            "/api/v1/namespaces/a/pods/p/portforward",
            "/api/v1/namespaces/a/pods/p/log",
            "/apis/example.com/v1/namespaces/a/pods/p/exec",
        ] {
            assert_eq!(
                phases(&local, request(other, &host)).await,
                was(Ok(Identity::Proxy))
            );
        }
    }

    #[tokio::test]
    async fn authorize_mode_without_its_reviews_serves_nobody() {
        let authorize = AuthConfig {
            mode: AuthMode::Authorize,
            ..AuthConfig::default()
        };
        let r = request("/api/v1/pods", &[("host", "evil.example")]);
        assert_eq!(
            phases(&authorize, r).await,
            was(Err(AuthError::Unauthenticated))
        );
    }
}
