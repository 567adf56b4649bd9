//! The connection to the real apiserver: where it is, how to authenticate,
//! TLS, and the hyper client every upstream request goes through.

pub mod auth;
pub mod credentials;
pub mod discovery;
pub mod exec;
pub mod kubeconfig;

use auth::{Auth, Credentials};
use bytes::Bytes;
use http::{header, Request, Response, StatusCode, Uri};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::Duration;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("invalid upstream URL {0:?}: {1}")]
    Url(String, String),
    #[error("reading {what}: {err}")]
    Read { what: String, err: std::io::Error },
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error("credentials: {0}")]
    Credentials(#[from] auth::AuthError),
    #[error("connecting to the upstream: {0}")]
    Connect(#[from] hyper_util::client::legacy::Error),
    #[error("reading the upstream's answer: {0}")]
    Body(#[from] hyper::Error),
    #[error("the runtime of upstream requests has stopped")]
    Stopped,
    #[error("upstream answered {status} to {path}: {body}")]
    Status {
        status: StatusCode,
        path: String,
        body: String,
    },
}

/// How to reach and authenticate to the upstream.
#[derive(Debug, Clone, Default)]
pub struct UpstreamConfig {
    pub url: String,
    pub ca_pem: Option<Vec<u8>>,
    pub credentials: Credentials,
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

pub fn empty_body() -> Body {
    Empty::<Bytes>::new().map_err(|e| match e {}).boxed_unsync()
}

pub fn full_body(b: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(b.into())
        .map_err(|e| match e {})
        .boxed_unsync()
}

/// A streaming body fed from a channel: watch responses, one frame per event.
pub struct ChannelBody(tokio::sync::mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|b| Ok(http_body::Frame::data(b))))
    }
}

/// A body and the sender that writes it; dropping the sender ends it.
pub fn channel_body(depth: usize) -> (tokio::sync::mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = tokio::sync::mpsc::channel(depth);
    (tx, ChannelBody(rx).boxed_unsync())
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
        let uri: Uri = cfg.url.parse().map_err(|e: http::uri::InvalidUri| {
            UpstreamError::Url(cfg.url.clone(), e.to_string())
        })?;
        let scheme = uri.scheme().cloned().ok_or_else(|| {
            UpstreamError::Url(cfg.url.clone(), "missing http:// or https://".into())
        })?;
        if scheme != http::uri::Scheme::HTTP && scheme != http::uri::Scheme::HTTPS {
            return Err(UpstreamError::Url(
                cfg.url.clone(),
                "scheme must be http or https".into(),
            ));
        }
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| UpstreamError::Url(cfg.url.clone(), "missing host".into()))?;
        let base_path = uri.path().trim_end_matches('/').to_string();

        let mut roots = rustls::RootCertStore::empty();
        if let Some(pem) = &cfg.ca_pem {
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| UpstreamError::Tls(e.to_string()))?;
                roots
                    .add(cert)
                    .map_err(|e| UpstreamError::Tls(e.to_string()))?;
            }
        }
        let auth = Auth::shared(&cfg.credentials)?;
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| UpstreamError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_client_cert_resolver(auth.certs.clone());
        if cfg.credentials.exec.is_some() {
            // A resumed session keeps the identity of the handshake it
            // resumes: a plugin's new certificate needs full handshakes.
            tls.resumption = rustls::client::Resumption::disabled();
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
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
        let request = client.request(req);
        let resp = match &self.runtime {
            // A socket answers to the runtime it was opened on, so the
            // connection is made there, not just its task spawned there.
            Some(rt) => rt
                .spawn(request)
                .await
                .map_err(|_| UpstreamError::Stopped)??,
            None => request.await?,
        };
        if resp.status() == StatusCode::UNAUTHORIZED {
            self.auth.unauthorized(presented.generation);
        }
        Ok(resp)
    }

    /// A GET the proxy makes for itself (lists, watches, discovery).
    pub async fn get(&self, path_and_query: &str) -> Result<Response<Incoming>, UpstreamError> {
        let req = Request::get(self.uri(path_and_query))
            .header(header::ACCEPT, "application/json")
            .header(
                header::USER_AGENT,
                concat!("kubecache/", env!("CARGO_PKG_VERSION")),
            )
            .body(empty_body())
            .expect("a GET with fixed headers is a valid request");
        self.send(req).await
    }

    /// A GET whose whole body is wanted; non-2xx answers are errors.
    pub async fn get_bytes(&self, path_and_query: &str) -> Result<Bytes, UpstreamError> {
        let resp = self.get(path_and_query).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            return Err(UpstreamError::Status {
                status,
                path: path_and_query.to_string(),
                body: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
            });
        }
        Ok(body)
    }
}
