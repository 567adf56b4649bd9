//! Watches read line by line (`WatchStream`, `LineWatch`), and waiting
//! until a kubecache's lists hold what its upstream's hold (`converged`).

use super::http_client::{client, get, request_with};
use super::servers::Proxy;
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use std::time::Duration;

/// Items of a list body keyed by namespace/name, with the list's rv.
pub fn item_set(body: &serde_json::Value) -> (String, Vec<String>) {
    let rv = body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut items: Vec<String> = body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {body}"))
        .iter()
        .map(|i| serde_json::to_string(i).unwrap())
        .collect();
    items.sort();
    (rv, items)
}

/// A watch stream read line by line.
pub struct WatchStream {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
}

pub enum WatchLine {
    Event(serde_json::Value),
    /// The server ended the stream.
    End,
    /// Nothing arrived in time.
    Silent,
}

impl WatchStream {
    pub async fn open(url: &str) -> WatchStream {
        let req = Request::get(url)
            .header("user-agent", "kubecache-tests")
            .header("accept", "application/json")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(30), client().request(req))
            .await
            .expect("watch request timed out")
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(resp.status(), 200, "{url}");
        WatchStream {
            body: resp.into_body(),
            buf: vec![],
        }
    }

    pub async fn next(&mut self, wait: Duration) -> WatchLine {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(nl) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=nl).collect();
                return WatchLine::Event(serde_json::from_slice(&line).unwrap_or_else(|e| {
                    serde_json::json!({"undecodable": e.to_string(), "line": String::from_utf8_lossy(&line)})
                }));
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return WatchLine::Silent,
                Ok(None) | Ok(Some(Err(_))) => return WatchLine::End,
                Ok(Some(Ok(f))) => {
                    if let Ok(d) = f.into_data() {
                        self.buf.extend_from_slice(&d);
                    }
                }
            }
        }
    }

    /// The next event, failing the test if the stream ends or stays silent.
    pub async fn event(&mut self, wait: Duration) -> serde_json::Value {
        match self.next(wait).await {
            WatchLine::Event(v) => v,
            WatchLine::End => panic!("watch ended"),
            WatchLine::Silent => panic!("no event within {wait:?}"),
        }
    }
}

/// Waits until an RV=0 list of `path` through the proxy holds what the
/// upstream holds (items and list rv).
pub async fn converged(up: &str, p: &Proxy, path: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let a = get(&format!("{up}{path}?resourceVersion=0")).await;
        let b = get(&format!("{}{path}?resourceVersion=0", p.url)).await;
        let (a, b) = (item_set(&a.json()), item_set(&b.json()));
        if a == b {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!(
                "{path} did not converge within {within:?}: upstream rv {} ({} items), kubecache rv {} ({} items)",
                a.0,
                a.1.len(),
                b.0,
                b.1.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until an RV=0 list of `path` through the proxy holds the items the
/// upstream holds, whatever each list's version (a quiet type's cache
/// upstream may have moved on with progress notifications kubecache's
/// watch does not get).
pub async fn converged_items(up: &str, p: &Proxy, path: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let a = get(&format!("{up}{path}?resourceVersion=0")).await;
        let b = get(&format!("{}{path}?resourceVersion=0", p.url)).await;
        let (a, b) = (item_set(&a.json()).1, item_set(&b.json()).1);
        if a == b {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} did not converge within {within:?}: upstream {} items, kubecache {}",
            a.len(),
            b.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A watch with an Accept header, read line by line.
pub struct LineWatch {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
}

impl LineWatch {
    pub async fn open(url: &str, accept: &str) -> LineWatch {
        Self::open_with(url, &[("accept", accept)]).await
    }

    pub async fn open_with(url: &str, headers: &[(&str, &str)]) -> LineWatch {
        let resp = request_with(url, headers).await;
        assert_eq!(resp.status(), 200);
        LineWatch {
            body: resp.into_body(),
            buf: Vec::new(),
        }
    }

    pub async fn line(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return String::from_utf8(line).unwrap();
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("no event")
                .expect("stream ended")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }
}
