//! The tests' HTTP client: a request with or without a body and chosen
//! headers, read whole (`send`, `send_with`, `get`: `Resp`), and GETs with
//! chosen headers, left streaming (`request`) or read whole (`fetch`).

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

pub struct Resp {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub(super) fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

pub async fn send(method: Method, url: &str, body: Option<serde_json::Value>) -> Resp {
    match body {
        Some(v) => {
            let body = Bytes::from(serde_json::to_vec(&v).unwrap());
            send_bytes(method, url, Some("application/json"), body).await
        }
        None => send_bytes(method, url, None, Bytes::new()).await,
    }
}

/// A request with a raw body and, if given, its Content-Type.
pub async fn send_bytes(
    method: Method,
    url: &str,
    content_type: Option<&str>,
    body: Bytes,
) -> Resp {
    let ct = content_type.map(|ct| ("content-type", ct));
    send_with(method, url, ct.as_slice(), body).await
}

/// A request with these headers (beside a User-Agent and a JSON Accept,
/// which they may replace) and a raw body, read whole.
pub async fn send_with(method: Method, url: &str, headers: &[(&str, &str)], body: Bytes) -> Resp {
    let mut req = Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(body))
        .unwrap();
    let h = req.headers_mut();
    h.insert("user-agent", "kubecache-tests".parse().unwrap());
    h.insert("accept", "application/json".parse().unwrap());
    for (k, v) in headers {
        h.insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    let resp = tokio::time::timeout(Duration::from_secs(30), client().request(req))
        .await
        .expect("request timed out")
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Resp {
        status,
        headers,
        body,
    }
}

pub async fn get(url: &str) -> Resp {
    send(Method::GET, url, None).await
}

/// A GET with an Accept header.
pub async fn request(url: &str, accept: &str) -> http::Response<hyper::body::Incoming> {
    request_with(url, &[("accept", accept)]).await
}

/// A GET with the given headers.
pub async fn request_with(
    url: &str,
    headers: &[(&str, &str)],
) -> http::Response<hyper::body::Incoming> {
    let mut req = Request::builder().uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    client()
        .request(req.body(Full::default()).unwrap())
        .await
        .unwrap()
}

/// A GET with an Accept header: (status, content-type, body).
pub async fn fetch(url: &str, accept: &str) -> (u16, String, String) {
    let (status, ct, body) = fetch_with(url, &[("accept", accept)]).await;
    (status, ct, String::from_utf8_lossy(&body).into_owned())
}

/// A GET with the given headers: (status, content-type, body bytes).
pub async fn fetch_with(url: &str, headers: &[(&str, &str)]) -> (u16, String, Vec<u8>) {
    let resp = request_with(url, headers).await;
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ct, body.to_vec())
}

/// A GET over HTTP/2 with prior knowledge (h2c): its status, or 0 when
/// the stream was reset instead of answered.
pub async fn h2_get_status(url: &str, headers: &[(&str, &str)]) -> u16 {
    let client: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build(HttpConnector::new());
    let mut req = Request::builder().uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    match client.request(req.body(Full::default()).unwrap()).await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}

/// A JSON POST whose body is streamed in 1 KiB chunks with no declared
/// length: its status, or 0 when the connection failed instead.
pub async fn send_chunked(url: &str, body: String) -> u16 {
    use http_body_util::StreamBody;
    let chunks: Vec<Result<http_body::Frame<Bytes>, std::convert::Infallible>> = body
        .into_bytes()
        .chunks(1024)
        .map(|c| Ok(http_body::Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let stream = StreamBody::new(futures::stream::iter(chunks));
    let client = Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let req = Request::post(url)
        .header("content-type", "application/json")
        .body(stream)
        .unwrap();
    match client.request(req).await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}
