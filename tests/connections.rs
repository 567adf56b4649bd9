//! Connections are bounded: one that sends nothing, or only part of its
//! headers, is closed after its timeout; at the connection cap, idle
//! connections make room for a client with a request, which is served.

mod common;

use common::*;
use kubecache::serve::limits::LimitsConfig;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Waits for the server to close `s`, reading (and dropping) whatever it
/// writes first; how long that took.
async fn closed_after(s: &mut TcpStream, within: Duration) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout_at((start + within).into(), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => panic!("still open after {within:?}"),
        }
    }
}

/// A simulator, and kubecache in front of it with a 1 s header timeout
/// and a 2 s idle timeout.
async fn with_short_timeouts() -> (SimServer, Proxy) {
    let sim = SimBuilder::new().start().await;
    let p = ProxyBuilder::new(&sim.url)
        .limits(LimitsConfig {
            header_read_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(2),
            ..Default::default()
        })
        .start()
        .await;
    (sim, p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_nothing_is_closed_after_the_idle_timeout() {
    within(30, async {
        let (_sim, p) = with_short_timeouts().await;
        let mut silent = TcpStream::connect(p.addr).await.unwrap();
        let took = closed_after(&mut silent, Duration::from_secs(10)).await;
        assert!(took >= Duration::from_millis(1500), "{took:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_part_of_its_headers_is_closed_after_the_header_timeout() {
    within(30, async {
        let (_sim, p) = with_short_timeouts().await;
        let mut slow = TcpStream::connect(p.addr).await.unwrap();
        slow.write_all(b"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let took = closed_after(&mut slow, Duration::from_secs(10)).await;
        assert!(took >= Duration::from_millis(800), "{took:?}");
        // A keep-alive connection between requests is bounded the same way.
        let mut kept = TcpStream::connect(p.addr).await.unwrap();
        kept.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        closed_after(&mut kept, Duration::from_secs(10)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_idle_connections_make_room_for_a_client_with_a_request() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = ProxyBuilder::new(&sim.url)
            .limits(LimitsConfig {
                max_connections: Some(50),
                ..Default::default()
            })
            .start()
            .await;
        // Every slot taken by a connection that says nothing (the kernel's
        // backlog holds more).
        let mut idle = Vec::new();
        for _ in 0..80 {
            idle.push(TcpStream::connect(p.addr).await.unwrap());
        }
        let started = Instant::now();
        let r = get(&format!("{}/api/v1/namespaces/default/pods", p.url)).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // The ones closed to make room see their end.
        let mut closed = 0;
        for s in &mut idle {
            let mut b = [0u8; 1];
            if let Ok(Ok(0)) = tokio::time::timeout(Duration::from_millis(20), s.read(&mut b)).await
            {
                closed += 1;
            }
        }
        assert!(closed > 0, "no idle connection was closed");
    })
    .await;
}
