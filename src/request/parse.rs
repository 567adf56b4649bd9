//! A request read once, into the one typed value every phase after it
//! works on: what it names (path, resource, verb), how it reads (list
//! options), how the answer must be written (Accept, pretty, gzip), and
//! who it is served as (filled in by the authenticate phase).

use super::accept::Accept;
use super::identity::{bearer_token, Identity, Token};
use super::impersonation::Impersonation;
use super::options::{pretty_print, ListOptions};
use super::path::{ResourcePath, Shape};
use super::verb::Verb;
use super::websocket::WebSocket;
use http::{header, HeaderMap, Method, Uri};

#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// The path as sent.
    pub path: String,
    /// The path and query as sent (Go's `RequestURI`, as errors quote it).
    pub request_uri: String,
    /// The API resource the path names, if it names one.
    pub resource: Option<ResourcePath>,
    /// The query's list, get and watch options.
    pub options: ListOptions,
    /// The verb, as the apiserver's RequestInfo names it.
    pub verb: Verb,
    /// The Accept header, its clauses parsed.
    pub accept: Accept,
    /// Whether the answer is indented (query or user agent, as Go's
    /// `isPrettyPrint` decides).
    pub pretty: bool,
    /// Whether the client takes gzip.
    pub gzip: bool,
    /// Whether it is a kubecache that takes a watch gzipped
    /// (`encoding::WATCH_ENCODING`).
    pub gzip_watch: bool,
    /// The host the request was sent to: the request target's authority
    /// (HTTP/2's `:authority`, HTTP/1's absolute form), else `Host`.
    pub host: Option<String>,
    /// Whether it asks to act as someone else (any `Impersonate-*` header).
    pub impersonating: bool,
    /// Whom its `Impersonate-*` headers name, read as the apiserver reads
    /// them.
    pub impersonation: Option<Impersonation>,
    /// The bearer token of its `Authorization` header.
    pub bearer: Option<Token>,
    /// A WebSocket request's subprotocols and the bearer token among them.
    pub websocket: Option<WebSocket>,
    pub identity: Identity,
    /// When it arrived: a consistent read must reflect every write
    /// committed before then (`freshness`).
    pub arrived: tokio::time::Instant,
}

impl Request {
    /// Reads the request line and headers; never fails (what does not
    /// parse is left for the phases that care to refuse or forward).
    pub fn parse(method: &Method, uri: &Uri, headers: &HeaderMap) -> Request {
        let path = uri.path().to_string();
        let resource = ResourcePath::parse(&path);
        let options = ListOptions::parse(uri.query());
        let verb = Verb::of(method, resource.as_ref(), options.watch);
        let user_agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        Request {
            method: method.clone(),
            request_uri: uri
                .path_and_query()
                .map_or_else(|| path.clone(), |p| p.as_str().to_string()),
            pretty: pretty_print(uri.query(), user_agent),
            gzip: super::accepts_gzip(headers),
            gzip_watch: super::takes_gzip_watch(headers),
            accept: Accept::from_header(headers.get(header::ACCEPT)),
            path,
            resource,
            options,
            verb,
            // An authority in the request target wins over Host, as RFC
            // 9112 §3.2.2 (and Go's net/http) read an absolute-form target.
            host: uri.authority().map(|a| a.to_string()).or_else(|| {
                headers
                    .get(header::HOST)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            }),
            impersonating: headers
                .keys()
                .any(|k| k.as_str().starts_with("impersonate-")),
            impersonation: Impersonation::from_headers(headers),
            bearer: bearer_token(headers.get(header::AUTHORIZATION)),
            websocket: WebSocket::from_headers(headers),
            identity: Identity::default(),
            arrived: tokio::time::Instant::now(),
        }
    }

    /// What a read of the resource returns ([`Shape::of`]).
    pub fn shape(&self) -> Option<Shape> {
        let r = self.resource.as_ref()?;
        Some(Shape::of(r, self.options.watch))
    }

    /// The resource's name as metrics label it ("" for none).
    pub fn resource_name(&self) -> &str {
        self.resource.as_ref().map_or("", |r| r.resource.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(method: Method, uri: &str, headers: &[(&str, &str)]) -> Request {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        Request::parse(&method, &uri.parse().unwrap(), &h)
    }

    #[test]
    fn a_request_is_read_once_into_everything_the_phases_need() {
        let r = parse(
            Method::GET,
            "/api/v1/namespaces/a/pods?watch=1&labelSelector=app%3Dweb",
            &[
                ("accept", "application/json;as=Table;g=meta.k8s.io;v=v1"),
                ("accept-encoding", "gzip"),
                ("user-agent", "curl/8"),
            ],
        );
        assert_eq!(r.verb, Verb::Watch);
        assert_eq!(r.shape(), Some(Shape::Watch));
        assert_eq!(r.resource_name(), "pods");
        assert_eq!(r.options.label_selector, "app=web");
        assert!(r.pretty && r.gzip);
        assert_eq!(
            r.accept.text(),
            Some("application/json;as=Table;g=meta.k8s.io;v=v1")
        );
        assert_eq!(r.identity, Identity::Unauthenticated);
        assert_eq!((r.host, r.impersonating), (None, false));
    }

    #[test]
    fn the_host_comes_from_the_header_or_the_authority_and_impersonation_from_any_of_its_headers() {
        let r = parse(
            Method::GET,
            "/api",
            &[("host", "localhost:8001"), ("impersonate-group", "x")],
        );
        assert_eq!(r.host.as_deref(), Some("localhost:8001"));
        assert!(r.impersonating);
        let h2 = parse(Method::GET, "http://[::1]:8001/api", &[]);
        assert_eq!(h2.host.as_deref(), Some("[::1]:8001"));
        let absolute = parse(
            Method::GET,
            "http://evil.example/api",
            &[("host", "localhost")],
        );
        assert_eq!(absolute.host.as_deref(), Some("evil.example"));
        assert!(!h2.impersonating);
    }

    #[test]
    fn a_watch_of_one_named_object_is_a_get_but_the_legacy_path_watches() {
        let get = parse(Method::GET, "/api/v1/namespaces/a/pods/p?watch=1", &[]);
        assert_eq!((get.verb, get.shape()), (Verb::Get, Some(Shape::Object)));
        let legacy = parse(Method::GET, "/api/v1/watch/namespaces/a/pods/p", &[]);
        assert_eq!(
            (legacy.verb, legacy.shape()),
            (Verb::Watch, Some(Shape::Watch))
        );
        let version = parse(Method::GET, "/version", &[]);
        assert_eq!((version.verb, version.shape()), (Verb::Other, None));
    }
}
