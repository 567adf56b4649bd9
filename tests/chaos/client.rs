//! HTTP that never panics: under chaos, failures are data.

use super::*;

#[derive(Clone)]
pub(crate) struct Http(pub(crate) Client<HttpConnector, Full<Bytes>>);

pub(crate) enum Reply {
    Answer(StatusCode, Bytes),
    /// No connection was made: nothing was sent.
    Unreachable,
    /// Sent, and no whole answer came back: it may have taken effect.
    Lost(String),
}

impl Http {
    pub(crate) fn new() -> Http {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        Http(Client::builder(TokioExecutor::new()).build(connector))
    }

    pub(crate) fn request(
        method: Method,
        url: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(url)
            .header("user-agent", "kubecache-chaos")
            .header("accept", "application/json");
        let body = match body {
            Some((content_type, bytes)) => {
                b = b.header("content-type", content_type);
                Bytes::from(bytes)
            }
            None => Bytes::new(),
        };
        b.body(Full::new(body)).unwrap()
    }

    pub(crate) async fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<(&str, Vec<u8>)>,
        limit: Duration,
    ) -> Reply {
        let req = Self::request(method, url, body);
        let exchange = async {
            let resp = self.0.request(req).await.map_err(|e| {
                // Only a failed connect is known to have sent nothing.
                (!e.is_connect()).then(|| e.to_string())
            })?;
            let status = resp.status();
            let body = resp.into_body().collect().await;
            let body = body.map_err(|e| Some(e.to_string()))?.to_bytes();
            Ok((status, body))
        };
        match tokio::time::timeout(limit, exchange).await {
            Err(_) => Reply::Lost(format!("no answer within {limit:?}")),
            Ok(Err(None)) => Reply::Unreachable,
            Ok(Err(Some(e))) => Reply::Lost(e),
            Ok(Ok((status, body))) => Reply::Answer(status, body),
        }
    }

    pub(crate) async fn get(&self, url: &str) -> Reply {
        self.call(Method::GET, url, None, READ_TIMEOUT).await
    }

    /// A streaming request (a watch): the response once its headers came.
    pub(crate) async fn open(
        &self,
        method: Method,
        url: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        let req = Self::request(method, url, body);
        match tokio::time::timeout(READ_TIMEOUT, self.0.request(req)).await {
            Err(_) => Err("no headers in time".into()),
            Ok(r) => r.map_err(|e| e.to_string()),
        }
    }
}

/// A streamed body read line by line.
pub(crate) struct Lines {
    pub(crate) body: hyper::body::Incoming,
    pub(crate) buf: Vec<u8>,
}

pub(crate) enum Line {
    Data(Vec<u8>),
    /// The stream ended cleanly, or broke.
    End,
    /// Nothing came within the wait.
    Silent,
}

impl Lines {
    pub(crate) fn new(body: hyper::body::Incoming) -> Lines {
        Lines { body, buf: vec![] }
    }

    pub(crate) async fn next(&mut self, wait: Duration) -> Line {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(nl) = self.buf.iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
                line.pop();
                return Line::Data(line);
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Line::Silent,
                Ok(None) | Ok(Some(Err(_))) => return Line::End,
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}
