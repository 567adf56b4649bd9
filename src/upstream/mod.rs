//! The connection to the real apiserver: where it is, how to authenticate,
//! TLS, and the hyper client every upstream request goes through.
//!
//! kube-client reads the kubeconfigs or the pod's service account and sets
//! up TLS (`kubeconfig.rs`); kubecache presents the credentials itself
//! (`auth.rs`, `credentials.rs`, `exec.rs`: see each for what kube-client
//! does not do). `watch_gzip.rs` is the codec of watch streams gzipped
//! between kubecaches, written by `serve` and read by the reflector.

pub mod auth;
pub mod credentials;
pub mod discovery;
pub mod exec;
pub mod health;
pub mod kubeconfig;
pub mod version;
pub mod watch_gzip;

use crate::body::{self, Body};
use crate::metrics;
use auth::{Auth, Credentials};
use bytes::{Bytes, BytesMut};
use credentials::{BearerToken, TokenSource};
use http::{header, Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use kube_client::client::ConfigExt;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use watch_gzip::Gunzip;

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("invalid upstream URL {0:?}: {1}")]
    Url(String, String),
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: {source}")]
    Pem {
        what: String,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("{0}: no PEM certificate found")]
    NoCertificate(String),
    #[error("TLS setup: {0}")]
    Tls(#[source] kube_client::Error),
    #[error("client certificate {cert} and key {key}: {source}")]
    ClientCert {
        cert: String,
        key: String,
        #[source]
        source: auth::AuthError,
    },
    #[error("TLS server name {0:?}: {1}")]
    ServerName(String, #[source] rustls::pki_types::InvalidDnsNameError),
    #[error("credentials: {0}")]
    Credentials(#[from] auth::AuthError),
    #[error("connecting to the upstream: {0}")]
    Connect(#[from] hyper_util::client::legacy::Error),
    #[error("reading the upstream's answer: {0}")]
    Body(#[from] hyper::Error),
    #[error("the runtime of upstream requests has stopped")]
    Stopped,
    #[error("reading the upstream's gzipped answer: {0}")]
    Gunzip(#[from] watch_gzip::GunzipError),
    /// The caller gave up an answer while it arrived (too large to keep).
    #[error("abandoned {0} while it arrived")]
    Abandoned(String),
    #[error("upstream answered {status} to {path}: {body}")]
    Status {
        status: StatusCode,
        path: String,
        body: String,
        /// What the answer's `Retry-After` asked (the apiserver sends it
        /// with 429s and with some 5xx, in seconds).
        retry_after: Option<Duration>,
    },
}

impl UpstreamError {
    /// The status an upstream answer failed with, and what it says of
    /// waiting.
    pub fn of_answer(
        status: StatusCode,
        headers: &http::HeaderMap,
        path: &str,
        body: &[u8],
    ) -> Self {
        UpstreamError::Status {
            status,
            path: path.to_string(),
            body: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
            retry_after: retry_after(headers),
        }
    }

    /// How long the upstream asked to be left alone, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            UpstreamError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The longest `Retry-After` taken at its word: a garbled or hostile header
/// must not park a reflector for days.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// A `Retry-After` of whole seconds, as the apiserver writes it (an HTTP
/// date is not something it sends; such a header is ignored).
fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let secs: u64 = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER))
}

/// How to reach and authenticate to the upstream.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// The apiserver's URL, as given (`--upstream`, a kubeconfig's server).
    pub url: String,
    /// What kube-client sets TLS up from: the CA (or the pod's CA file,
    /// re-read as it rotates), the TLS server name. The credentials it
    /// would present itself are in `credentials`.
    pub tls: kube_client::Config,
    pub credentials: Credentials,
}

impl UpstreamConfig {
    /// An upstream known by its URL alone: plain http, or https that the
    /// system's roots trust.
    pub fn new(url: &str) -> Result<Self, UpstreamError> {
        let uri = parse_url(url)?;
        Ok(UpstreamConfig {
            url: url.to_string(),
            tls: kube_client::Config::new(uri),
            credentials: Credentials::default(),
        })
    }

    /// Trusts the CA certificates of a PEM file instead of the system's.
    pub fn with_ca_file(mut self, path: &Path) -> Result<Self, UpstreamError> {
        let pem = read(path)?;
        self.tls.root_cert = Some(pem_certificates(&pem, &path.display().to_string())?);
        Ok(self)
    }

    /// Presents a client certificate (PEM, with its chain) and its key.
    pub fn with_client_cert(mut self, cert: &Path, key: &Path) -> Result<Self, UpstreamError> {
        let c = auth::ClientCert {
            cert_pem: read(cert)?,
            key_pem: read(key)?,
        };
        // Parsed now, so that a bad file is a configuration error.
        c.certified_key()
            .map_err(|source| UpstreamError::ClientCert {
                cert: cert.display().to_string(),
                key: key.display().to_string(),
                source,
            })?;
        self.credentials.client_cert = Some(c);
        Ok(self)
    }

    /// Sends the token of a file, re-read as it rotates.
    pub fn with_token_file(mut self, path: &Path) -> Result<Self, UpstreamError> {
        let source = TokenSource::File(path.to_path_buf());
        // Read now, so that a bad file is a configuration error.
        BearerToken::new(&source).map_err(auth::AuthError::from)?;
        self.credentials.token = Some(source);
        Ok(self)
    }

    /// Whether TLS can be set up as configured (the CA parses), so that a
    /// bad file is a configuration error.
    pub fn check_tls(&self) -> Result<(), UpstreamError> {
        tls_config(self).map(drop)
    }
}

fn parse_url(url: &str) -> Result<Uri, UpstreamError> {
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| UpstreamError::Url(url.into(), e.to_string()))?;
    match uri.scheme() {
        None => Err(UpstreamError::Url(
            url.into(),
            "missing http:// or https://".into(),
        )),
        Some(s) if *s != http::uri::Scheme::HTTP && *s != http::uri::Scheme::HTTPS => Err(
            UpstreamError::Url(url.into(), "scheme must be http or https".into()),
        ),
        Some(_) if uri.authority().is_none() => {
            Err(UpstreamError::Url(url.into(), "missing host".into()))
        }
        Some(_) => Ok(uri),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, UpstreamError> {
    std::fs::read(path).map_err(|source| UpstreamError::Read {
        what: path.display().to_string(),
        source,
    })
}

/// The DER certificates of a PEM bundle; one without any is refused
/// rather than trusting nothing.
fn pem_certificates(pem: &[u8], what: &str) -> Result<Vec<Vec<u8>>, UpstreamError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| UpstreamError::Pem {
            what: what.into(),
            source,
        })?;
    if certs.is_empty() {
        return Err(UpstreamError::NoCertificate(what.into()));
    }
    Ok(certs)
}

/// The TLS configuration kube-client makes of `cfg`: its roots (or the
/// system's), the in-cluster CA file re-read as it rotates. A plain http
/// upstream never uses it.
fn tls_config(cfg: &UpstreamConfig) -> Result<rustls::ClientConfig, UpstreamError> {
    // kube-client builds with the process's provider: ring, as ours.
    let _ = rustls::crypto::ring::default_provider().install_default();
    if cfg.tls.cluster_url.scheme() == Some(&http::uri::Scheme::HTTP) {
        // No system roots to load (a slim image may have none) for
        // connections that never do TLS.
        return Ok(rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth());
    }
    cfg.tls.rustls_client_config().map_err(UpstreamError::Tls)
}

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

pub struct Upstream {
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    base_path: String,
    auth: Arc<Auth>,
    connector: Connector,
    /// Replaced, and with it its pool of connections, when an exec plugin
    /// gives a new client certificate (the certificate's count is kept
    /// beside it): connections keep the certificate they were made with.
    client: std::sync::RwLock<(u64, Client<Connector, Body>)>,
    /// Where requests run, if not where they are made (see `on_runtime`).
    runtime: Option<tokio::runtime::Handle>,
}

fn new_client(connector: Connector) -> Client<Connector, Body> {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .build(connector)
}

impl Upstream {
    /// A client whose connections run where its requests are made.
    pub fn new(cfg: &UpstreamConfig) -> Result<Arc<Self>, UpstreamError> {
        Self::build(cfg, None)
    }

    /// A client whose requests, and so its connections (their sockets and
    /// the tasks driving them), all run on `rt`, wherever they are made
    /// from: the cache's own reading must not wait behind the tasks of
    /// the runtime that serves its clients.
    pub fn on_runtime(
        cfg: &UpstreamConfig,
        rt: tokio::runtime::Handle,
    ) -> Result<Arc<Self>, UpstreamError> {
        Self::build(cfg, Some(rt))
    }

    fn build(
        cfg: &UpstreamConfig,
        runtime: Option<tokio::runtime::Handle>,
    ) -> Result<Arc<Self>, UpstreamError> {
        let uri = parse_url(&cfg.url)?;
        let scheme = uri.scheme().cloned().expect("parse_url checked the scheme");
        let authority = uri
            .authority()
            .cloned()
            .expect("parse_url checked the host");
        let base_path = uri.path().trim_end_matches('/').to_string();

        let auth = Auth::shared(&cfg.credentials)?;
        let mut tls = tls_config(cfg)?;
        // The configured certificate, or an exec plugin's as it gives new
        // ones (see auth.rs for why not kube-client's).
        tls.client_auth_cert_resolver = auth.certs.clone();
        if cfg.credentials.exec.is_some() {
            // A resumed session keeps the identity of the handshake it
            // resumes: a plugin's new certificate needs full handshakes.
            tls.resumption = rustls::client::Resumption::disabled();
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let mut connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http();
        if let Some(name) = &cfg.tls.tls_server_name {
            // A kubeconfig's tls-server-name, as kube-client's connector
            // verifies it.
            let server = rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(|e| UpstreamError::ServerName(name.clone(), e))?;
            connector = connector
                .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(server));
        }
        let connector = connector.enable_http1().wrap_connector(http);
        Ok(Arc::new(Upstream {
            scheme,
            authority,
            base_path,
            auth,
            client: std::sync::RwLock::new((0, new_client(connector.clone()))),
            connector,
            runtime,
        }))
    }

    /// The upstream URI for a path-and-query of the apiserver's API.
    pub fn uri(&self, path_and_query: &str) -> Uri {
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(format!("{}{}", self.base_path, path_and_query))
            .build()
            .expect("scheme, authority and an absolute path make a URI")
    }

    pub fn authority(&self) -> &http::uri::Authority {
        &self.authority
    }

    /// Sends a request as it is, adding the proxy's own credentials.
    pub async fn send(&self, mut req: Request<Body>) -> Result<Response<Incoming>, UpstreamError> {
        let presented = self.auth.present().await?;
        if let Some(h) = presented.header {
            req.headers_mut().insert(header::AUTHORIZATION, h);
        }
        let (made_for, mut client) = self
            .client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if made_for < presented.certificate {
            let mut c = self.client.write().unwrap_or_else(|e| e.into_inner());
            if c.0 < presented.certificate {
                *c = (presented.certificate, new_client(self.connector.clone()));
            }
            client = c.1.clone();
        }
        let method = req.method().clone();
        let request = client.request(req);
        let resp = match &self.runtime {
            // A socket answers to the runtime it was opened on, so the
            // connection is made there, not just its task spawned there.
            Some(rt) => rt
                .spawn(request)
                .await
                .map_err(|_| UpstreamError::Stopped)?,
            None => request.await,
        };
        crate::metrics::upstream_request(
            method.as_str(),
            resp.as_ref().ok().map(|r| r.status().as_u16()),
        );
        let resp = resp?;
        if resp.status() == StatusCode::UNAUTHORIZED {
            self.auth.unauthorized(presented.generation);
        }
        Ok(resp)
    }

    /// A GET the proxy makes for itself (lists, watches, discovery).
    pub async fn get(&self, path_and_query: &str) -> Result<Response<Incoming>, UpstreamError> {
        self.get_accepting(path_and_query, "application/json").await
    }

    /// A GET asking for the representations in `accept`.
    pub async fn get_accepting(
        &self,
        path_and_query: &str,
        accept: &'static str,
    ) -> Result<Response<Incoming>, UpstreamError> {
        self.send(self.get_request(path_and_query, accept, false))
            .await
    }

    /// A GET of kubecache's own, asking for gzip if `gzip`.
    fn get_request(&self, path_and_query: &str, accept: &str, gzip: bool) -> Request<Body> {
        let mut req = Request::get(self.uri(path_and_query)).header(header::ACCEPT, accept);
        if gzip {
            req = req.header(header::ACCEPT_ENCODING, "gzip");
        }
        req.header(
            header::USER_AGENT,
            concat!("kubecache/", env!("CARGO_PKG_VERSION")),
        )
        .body(body::empty())
        .expect("a GET with fixed headers is a valid request")
    }

    /// A watch (JSON) as a reflector asks for it; with `gzip`, saying that
    /// it is a kubecache that takes the stream gzipped, which a kubecache
    /// upstream then sends (and an apiserver ignores).
    pub async fn watch(
        &self,
        path_and_query: &str,
        gzip: bool,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let mut req = self.get_request(path_and_query, "application/json", gzip);
        if gzip {
            req.headers_mut().insert(
                crate::request::WATCH_ENCODING,
                http::HeaderValue::from_static("gzip"),
            );
        }
        self.send(req).await
    }

    /// A POST of a JSON body the proxy makes for itself (its reviews of
    /// clients); the whole answer, non-2xx answers being errors.
    pub async fn post_json(&self, path: &str, json: Vec<u8>) -> Result<Bytes, UpstreamError> {
        let req = Request::post(self.uri(path))
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/json")
            .header(
                header::USER_AGENT,
                concat!("kubecache/", env!("CARGO_PKG_VERSION")),
            )
            .body(body::full(json))
            .expect("a POST with fixed headers is a valid request");
        let resp = self.send(req).await?;
        Self::whole(resp, path).await
    }

    /// A GET whose whole body is wanted; non-2xx answers are errors.
    pub async fn get_bytes(&self, path_and_query: &str) -> Result<Bytes, UpstreamError> {
        let resp = self.get(path_and_query).await?;
        Self::whole(resp, path_and_query).await
    }

    /// `get_bytes` asking for the representations in `accept`, and with
    /// `gzip` for the body gzipped (decoded here).
    pub async fn get_bytes_accepting(
        &self,
        path_and_query: &str,
        accept: &'static str,
        gzip: bool,
    ) -> Result<Bytes, UpstreamError> {
        let resp = self
            .send(self.get_request(path_and_query, accept, gzip))
            .await?;
        let gzipped = resp
            .headers()
            .get(header::CONTENT_ENCODING)
            .is_some_and(|v| v == "gzip");
        let body = Self::whole(resp, path_and_query).await?;
        if !gzipped {
            return Ok(body);
        }
        let mut plain = BytesMut::new();
        Gunzip::default().push(&body, &mut plain, (body.len() * 1024).max(1 << 20))?;
        Ok(plain.freeze())
    }

    /// `get_bytes`, given up (`None`) once the upstream has been silent
    /// for `silence`: waiting for the answer's head, or between two pieces
    /// of its body. The whole body is not timed: an RV=0 list of 1,000,000
    /// pods (4.8 GB, whole, as v1.20 ignores its limit) took longer than a
    /// minute to arrive from the simulator, never silent for a second.
    /// `received` is told the bytes of the body so far as they arrive (a
    /// big list over a thin link takes minutes: the reflector says how far
    /// it is), and may give the answer up (`Break`: `Abandoned`) — a list
    /// that cannot be kept is not held whole first. With `gzip` it asks
    /// for the body gzipped (as client-go's transport does; the apiserver
    /// and kubecache compress lists over 128 KiB) and decodes it as it
    /// arrives: `received` and the answer are of the decoded bytes.
    pub async fn get_bytes_unless_silent(
        &self,
        path_and_query: &str,
        silence: Duration,
        gzip: bool,
        mut received: impl FnMut(usize) -> std::ops::ControlFlow<()>,
    ) -> Option<Result<Bytes, UpstreamError>> {
        let req = self.get_request(path_and_query, "application/json", gzip);
        let resp = match tokio::time::timeout(silence, self.send(req)).await {
            Err(_) => return None,
            Ok(Err(e)) => return Some(Err(e)),
            Ok(Ok(resp)) => resp,
        };
        let status = resp.status();
        let (parts, mut body) = resp.into_parts();
        let mut gunzip = match parts.headers.get(header::CONTENT_ENCODING) {
            Some(v) if v == "gzip" => Some((Gunzip::default(), BytesMut::new())),
            _ => None,
        };
        let mut pieces: Vec<Bytes> = Vec::new();
        let mut so_far = 0;
        loop {
            match tokio::time::timeout(silence, body.frame()).await {
                Err(_) => return None,
                Ok(None) => break,
                Ok(Some(Err(e))) => return Some(Err(e.into())),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        metrics::upstream_list_bytes(gunzip.is_some(), data.len());
                        let data = match &mut gunzip {
                            None => data,
                            Some((g, plain)) => {
                                // A frame may not decode to more than this
                                // (a small one can decode to a great deal).
                                let most = plain.len() + (data.len() * 1024).max(1 << 20);
                                if let Err(e) = g.push(&data, plain, most) {
                                    return Some(Err(UpstreamError::Gunzip(e)));
                                }
                                plain.split().freeze()
                            }
                        };
                        so_far += data.len();
                        pieces.push(data);
                        if received(so_far).is_break() {
                            return Some(Err(UpstreamError::Abandoned(path_and_query.into())));
                        }
                    }
                }
            }
        }
        // Copied once, into a buffer of the body's size.
        let body = match pieces.len() {
            0 => Bytes::new(),
            1 => pieces.pop().unwrap_or_default(),
            _ => {
                let mut all = Vec::with_capacity(pieces.iter().map(Bytes::len).sum());
                for p in pieces {
                    all.extend_from_slice(&p);
                }
                Bytes::from(all)
            }
        };
        Some(Self::checked(status, &parts.headers, path_and_query, body))
    }

    async fn whole(resp: Response<Incoming>, path: &str) -> Result<Bytes, UpstreamError> {
        let status = resp.status();
        let (parts, body) = resp.into_parts();
        // Frames kept and joined once: a one-frame body is not copied.
        let body = body.collect().await?.to_bytes();
        Self::checked(status, &parts.headers, path, body)
    }

    /// The body of a 2xx answer; any other is an error.
    fn checked(
        status: StatusCode,
        headers: &http::HeaderMap,
        path: &str,
        body: Bytes,
    ) -> Result<Bytes, UpstreamError> {
        if !status.is_success() {
            return Err(UpstreamError::of_answer(status, headers, path, &body));
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(v: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(header::RETRY_AFTER, v.parse().unwrap());
        h
    }

    #[test]
    fn a_retry_after_of_seconds_is_taken_and_capped() {
        assert_eq!(retry_after(&headers("3")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(&headers(" 0 ")), Some(Duration::ZERO));
        assert_eq!(retry_after(&headers("86400")), Some(MAX_RETRY_AFTER));
    }

    #[test]
    fn a_retry_after_that_is_no_count_of_seconds_is_ignored() {
        for v in ["Wed, 21 Oct 2015 07:28:00 GMT", "-1", "1.5", ""] {
            assert_eq!(retry_after(&headers(v)), None, "{v:?}");
        }
        assert_eq!(retry_after(&http::HeaderMap::new()), None);
    }

    /// One request read whole off `conn` (headers, then a body of its
    /// content-length): its request line, or `None` at the end.
    async fn read_request(conn: &mut tokio::net::TcpStream) -> Option<String> {
        use tokio::io::AsyncReadExt;
        let mut got = vec![];
        let mut byte = [0u8; 1];
        while !got.ends_with(b"\r\n\r\n") {
            if conn.read(&mut byte).await.ok()? == 0 {
                return None;
            }
            got.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&got).to_string();
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        conn.read_exact(&mut body).await.ok()?;
        Some(head.lines().next().unwrap_or_default().to_string())
    }

    #[tokio::test]
    async fn a_write_whose_connection_closes_after_it_was_sent_is_not_sent_again() {
        // The upstream answers a GET on a kept-alive connection, then reads
        // the POST that reuses it whole and closes without an answer, as an
        // apiserver killed mid-request does: the POST may have been carried
        // out. Sending it again could create or change twice, so it must
        // fail, not be retried (the client's retries are for requests never
        // sent at all). Every connection's requests are counted.
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            for n in 1.. {
                let (mut conn, _) = listener.accept().await.unwrap();
                let log = log.clone();
                tokio::spawn(async move {
                    while let Some(line) = read_request(&mut conn).await {
                        let post = line.starts_with("POST");
                        log.lock().unwrap().push(format!("{n} {line}"));
                        if post {
                            return; // closed, unanswered
                        }
                        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
                        conn.write_all(ok).await.unwrap();
                    }
                });
            }
        });
        let up = Upstream::new(&UpstreamConfig::new(&url).unwrap()).unwrap();
        let get = Request::get(up.uri("/api")).body(body::empty()).unwrap();
        let resp = up.send(get).await.unwrap();
        resp.into_body().collect().await.unwrap();
        // The connection back in the pool, for the POST to reuse.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let post = Request::post(up.uri("/api/v1/namespaces/n/configmaps"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body::full(&b"{\"metadata\":{\"name\":\"c\"}}"[..]))
            .unwrap();
        assert!(up.send(post).await.is_err(), "answered by no one");
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The POST reused the GET's connection (the one case where the
        // client retries a request it finds unsent), and came once.
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                "1 GET /api HTTP/1.1",
                "1 POST /api/v1/namespaces/n/configmaps HTTP/1.1"
            ]
        );
    }

    /// An upstream that answers every request with a chunked body of
    /// `pieces`, `gap` apart, then stays silent if `hang`.
    async fn trickling(pieces: usize, gap: Duration, hang: bool) -> Arc<Upstream> {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (mut conn, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    read_request(&mut conn).await;
                    let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
                    conn.write_all(head.as_bytes()).await.unwrap();
                    for _ in 0..pieces {
                        tokio::time::sleep(gap).await;
                        conn.write_all(b"1\r\nx\r\n").await.unwrap();
                    }
                    if hang {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    conn.write_all(b"0\r\n\r\n").await.unwrap();
                });
            }
        });
        Upstream::new(&UpstreamConfig::new(&url).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn a_gzipped_answer_is_asked_for_and_decoded_as_it_arrives() {
        use std::io::Write;
        use tokio::io::AsyncWriteExt;
        let plain: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("item {i}\n").into_bytes())
            .collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gzipped = gz.finish().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let asked = Arc::new(std::sync::Mutex::new(String::new()));
        let heard = asked.clone();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut head = vec![];
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                tokio::io::AsyncReadExt::read_exact(&mut conn, &mut byte)
                    .await
                    .unwrap();
                head.push(byte[0]);
            }
            *heard.lock().unwrap() = String::from_utf8(head).unwrap();
            let head =
                "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n";
            conn.write_all(head.as_bytes()).await.unwrap();
            for piece in gzipped.chunks(1000) {
                let chunk = [format!("{:x}\r\n", piece.len()).as_bytes(), piece, b"\r\n"].concat();
                conn.write_all(&chunk).await.unwrap();
                conn.flush().await.unwrap();
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            conn.write_all(b"0\r\n\r\n").await.unwrap();
        });
        let up = Upstream::new(&UpstreamConfig::new(&url).unwrap()).unwrap();
        let mut told = vec![];
        let got = up
            .get_bytes_unless_silent("/api/v1/pods", Duration::from_secs(5), true, |n| {
                told.push(n);
                std::ops::ControlFlow::Continue(())
            })
            .await
            .expect("not silent")
            .unwrap();
        assert_eq!(got, plain);
        assert!(asked
            .lock()
            .unwrap()
            .to_ascii_lowercase()
            .contains("accept-encoding: gzip"));
        // Told the decoded bytes as they came, not once at the end.
        assert!(told.len() > 1, "{told:?}");
        assert_eq!(told.last(), Some(&plain.len()));
    }

    #[tokio::test]
    async fn an_answer_the_caller_gives_up_is_abandoned_as_it_arrives_not_read_whole() {
        // 8 pieces 100 ms apart; given up at the second, long before the end.
        let up = trickling(8, Duration::from_millis(100), false).await;
        let started = std::time::Instant::now();
        let mut seen = vec![];
        let got = up
            .get_bytes_unless_silent("/api/v1/pods", Duration::from_secs(5), false, |n| {
                seen.push(n);
                if n >= 2 {
                    std::ops::ControlFlow::Break(())
                } else {
                    std::ops::ControlFlow::Continue(())
                }
            })
            .await
            .expect("not silent");
        assert!(matches!(got, Err(UpstreamError::Abandoned(_))), "{got:?}");
        assert_eq!(seen, [1, 2]);
        assert!(
            started.elapsed() < Duration::from_millis(700),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_body_still_arriving_past_the_silence_allowed_is_read_whole() {
        // 8 pieces 100 ms apart: 800 ms in all, never 300 ms silent.
        let up = trickling(8, Duration::from_millis(100), false).await;
        let got = up
            .get_bytes_unless_silent("/api/v1/pods", Duration::from_millis(300), false, |_| {
                std::ops::ControlFlow::Continue(())
            })
            .await;
        assert_eq!(&got.expect("not silent").unwrap()[..], b"xxxxxxxx");
    }

    #[tokio::test]
    async fn a_body_that_goes_silent_is_given_up() {
        let up = trickling(2, Duration::from_millis(10), true).await;
        let started = std::time::Instant::now();
        let got = up
            .get_bytes_unless_silent("/api/v1/pods", Duration::from_millis(300), false, |_| {
                std::ops::ControlFlow::Continue(())
            })
            .await;
        assert!(got.is_none(), "{got:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn an_error_answer_keeps_its_retry_after() {
        let e =
            UpstreamError::of_answer(StatusCode::TOO_MANY_REQUESTS, &headers("2"), "/api", b"x");
        assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(
            e.to_string(),
            "upstream answered 429 Too Many Requests to /api: x"
        );
    }
}
