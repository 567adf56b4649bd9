//! Who a request is served as: the slot the authenticate phase fills, and
//! the credentials a request carries for it (a bearer token, an
//! impersonation), read from its headers as the apiserver reads them.

use std::collections::BTreeMap;
use std::sync::Arc;

/// The apiserver's anonymous user and the groups it adds.
pub const ANONYMOUS: &str = "system:anonymous";
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ALL_AUTHENTICATED: &str = "system:authenticated";

/// A user as the apiserver's `user.Info` holds one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Who a request without credentials is, as the apiserver's anonymous
    /// authenticator makes it.
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS.into(),
            groups: vec![ALL_UNAUTHENTICATED.into()],
            ..UserInfo::default()
        }
    }

    /// An authenticated user with `system:authenticated` added unless it
    /// is there already (the apiserver's `AuthenticatedGroupAdder`).
    pub fn authenticated(name: String, uid: String, mut groups: Vec<String>) -> UserInfo {
        if !groups.iter().any(|g| g == ALL_AUTHENTICATED) {
            groups.push(ALL_AUTHENTICATED.into());
        }
        UserInfo {
            name,
            uid,
            groups,
            extra: BTreeMap::new(),
        }
    }
}

/// A bearer token as it came in `Authorization`: its `Debug` never shows
/// it, so that no log line can.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(pub String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// What a request authenticated with, which decides how it is forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A bearer token the upstream accepted: forwarded as it came.
    Token,
    /// A bearer token in a WebSocket request's `Sec-WebSocket-Protocol`
    /// (the apiserver's protocol authenticator) the upstream accepted:
    /// forwarded as `Authorization: Bearer`, its entry removed from the
    /// header as the authenticator removes it.
    ProtocolToken,
    /// A client certificate kubecache verified: forwarded as kubecache,
    /// impersonating the client.
    Certificate,
    /// No credentials: `system:anonymous`, forwarded without any.
    Anonymous,
}

/// A client authenticated in authorize mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Who it authenticated as.
    pub user: UserInfo,
    /// Who it acts as: `user`, or whom its `Impersonate-*` headers name
    /// once it was allowed to.
    pub acting_as: UserInfo,
    pub via: Via,
}

/// The identity a request is answered and forwarded with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Identity {
    /// Not authenticated (yet): nothing is read or forwarded for it.
    #[default]
    Unauthenticated,
    /// kubecache's own upstream identity, which serves every client alike
    /// as `kubectl proxy` does (trust-local mode).
    Proxy,
    /// A client authenticated on its own credentials (authorize mode).
    Client(Arc<Client>),
}

/// The bearer token of an `Authorization` header, read as the apiserver's
/// bearer-token authenticator reads it: trimmed, `Bearer` in any case,
/// then the token up to the next space. `None` when the header holds no
/// bearer token (no header, another scheme, an empty token): the request
/// is then anonymous, as the apiserver has it. A token that is not UTF-8
/// is kept as one no review will accept.
pub fn bearer_token(value: Option<&http::HeaderValue>) -> Option<Token> {
    let raw = String::from_utf8_lossy(value?.as_bytes()).into_owned();
    let mut parts = raw.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(Token(token.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(v: &str) -> Option<String> {
        bearer_token(Some(&http::HeaderValue::from_str(v).unwrap())).map(|t| t.0)
    }

    #[test]
    fn bearer_tokens_are_read_as_the_apiservers_authenticator_reads_them() {
        assert_eq!(token("Bearer abc"), Some("abc".into()));
        assert_eq!(token("  bearer abc  "), Some("abc".into()));
        assert_eq!(token("BEARER abc def"), Some("abc".into()));
        assert_eq!(token("Bearer"), None);
        assert_eq!(token("Bearer  abc"), None, "an empty token between spaces");
        assert_eq!(token("Basic YWxpY2U6cHc="), None);
        assert_eq!(token(""), None);
        assert_eq!(bearer_token(None), None);
    }

    #[test]
    fn a_token_never_shows_in_debug_output() {
        let t = Token("s3cr3t".into());
        assert!(!format!("{t:?}").contains("s3cr3t"));
    }

    #[test]
    fn authenticated_users_are_in_system_authenticated_once_and_anonymous_is_not() {
        let u = UserInfo::authenticated("a".into(), String::new(), vec!["g".into()]);
        assert_eq!(u.groups, ["g", ALL_AUTHENTICATED]);
        let again = UserInfo::authenticated("a".into(), String::new(), u.groups.clone());
        assert_eq!(again.groups, u.groups);
        assert_eq!(UserInfo::anonymous().groups, [ALL_UNAUTHENTICATED]);
    }
}
