//! Who a request is served as, and whether it may be: the phases between
//! reading a request and deciding it.
//!
//! One mode is built: **trust-local**, in which every client is served
//! with kubecache's own upstream identity, as `kubectl proxy` serves them.
//! That is only safe where the only clients are the machine's own, so
//! kubecache runs it on loopback addresses alone (`config`), and guards
//! it as `kubectl proxy` does: a request for a host that is not a
//! loopback name or address is refused (a page in a browser on the
//! machine can reach loopback under a name of its own — DNS rebinding —
//! but cannot choose the Host its browser sends), and so are exec and
//! attach unless allowed. Impersonation is refused: forwarded, it would
//! act with kubecache's identity as whoever it names, and reads from the
//! cache cannot honour it. **authorize** (each client authenticated and
//! authorized upstream) is not built yet; `config` refuses it.

use crate::request::path::percent_decode;
use crate::request::{Identity, Request};
use std::net::{IpAddr, Ipv6Addr};

/// How clients are authenticated and authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthMode {
    /// Every client is served with kubecache's identity; loopback only.
    #[default]
    TrustLocal,
    /// Every client authenticated, every request authorized upstream.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuthConfig {
    pub mode: AuthMode,
    /// trust-local: pass on exec and attach (`kubectl proxy` refuses them
    /// unless its `--reject-paths` is changed).
    pub allow_exec: bool,
}

/// Why a request was refused before it was decided.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
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

/// Fills the request's identity slot.
pub fn authenticate(auth: &AuthConfig, request: &mut Request) -> Result<(), AuthError> {
    match auth.mode {
        AuthMode::TrustLocal => request.identity = Identity::Proxy,
        // Not built: nobody is authenticated, so nothing is served.
        AuthMode::Authorize => {}
    }
    Ok(())
}

/// Whether the request's identity may do what it asks. A request that
/// reached here without one is refused: nothing is ever read or forwarded
/// for nobody.
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
        Identity::Unauthenticated => Err(AuthError::Unauthenticated),
    }
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
    fn phases(auth: &AuthConfig, mut r: Request) -> Result<Identity, AuthError> {
        admit(auth, &r)?;
        authenticate(auth, &mut r)?;
        authorize(auth, &r)?;
        Ok(r.identity)
    }

    #[test]
    fn trust_local_serves_loopback_hosts_as_kubecache_without_impersonation_or_exec() {
        let local = AuthConfig::default();
        let host = [("host", "127.0.0.1:8001")];
        let pods = "/api/v1/namespaces/a/pods";
        assert_eq!(phases(&local, request(pods, &host)), Ok(Identity::Proxy));
        assert_eq!(
            phases(&local, request(pods, &[("host", "evil.example")])),
            Err(AuthError::HostNotLocal(Some("evil.example".into())))
        );
        assert_eq!(
            phases(&local, request(pods, &[])),
            Err(AuthError::HostNotLocal(None))
        );
        let as_alice = [("host", "localhost"), ("impersonate-user", "alice")];
        assert_eq!(
            phases(&local, request(pods, &as_alice)),
            Err(AuthError::Impersonation)
        );
        let exec = "/api/v1/namespaces/a/pods/p/exec?command=sh";
        assert_eq!(
            phases(&local, request(exec, &host)),
            Err(AuthError::ExecNotAllowed {
                subresource: "exec".into(),
                name: "p".into()
            })
        );
        let allowed = AuthConfig {
            allow_exec: true,
            ..local
        };
        assert_eq!(phases(&allowed, request(exec, &host)), Ok(Identity::Proxy));
        for disguised in [
            "/api/v1/namespaces/a/pods/p/exec/",
            "//api/v1/namespaces/a/pods/p/exec",
            "/api/v1/namespaces/a/pods/p/%65xec",
            "/api/v1/namespaces/a/pods/p/x/../exec",
            "/api/v1/namespaces/a/pods/./p/exec/..",
        ] {
            assert!(
                matches!(
                    phases(&local, request(disguised, &host)),
                    Err(AuthError::ExecNotAllowed { .. })
                ),
                "{disguised}"
            );
        }
        for other in [
            "/api/v1/namespaces/a/pods/p/portforward",
            "/api/v1/namespaces/a/pods/p/log",
            "/apis/example.com/v1/namespaces/a/pods/p/exec",
        ] {
            assert_eq!(phases(&local, request(other, &host)), Ok(Identity::Proxy));
        }
    }

    #[test]
    fn authorize_mode_not_being_built_serves_nobody() {
        let authorize = AuthConfig {
            mode: AuthMode::Authorize,
            allow_exec: false,
        };
        let r = request("/api/v1/pods", &[("host", "evil.example")]);
        assert_eq!(phases(&authorize, r), Err(AuthError::Unauthenticated));
    }
}
