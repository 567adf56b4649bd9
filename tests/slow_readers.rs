//! Clients that ask for big lists and never read them cannot pin
//! kubecache's memory: a list not kept is written as the client reads it,
//! holding a few chunks (`stream::HELD`), not its body; what the cache's
//! answers hold while clients read them is counted (once per allocation)
//! against a budget, a list that would pass it is refused with the
//! apiserver's 429, and other clients' lists are answered meanwhile.

mod common;

use common::*;
use kubecache::cache::bodies::stream::HELD;
use kubecache::serve::limits::LimitsConfig;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// The process's resident memory, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

/// Asks for `path` on a connection with a small receive buffer, reads the
/// status line and nothing more.
async fn ask_and_stall(addr: std::net::SocketAddr, path: &str) -> (u16, TcpStream) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut s = socket.connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).await.unwrap();
    let status = std::str::from_utf8(&head[9..12]).unwrap().parse().unwrap();
    (status, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_their_lists_hold_a_few_chunks_each_not_the_list() {
    within(120, async {
        let sim = SimBuilder::new().pods(10_000).start().await;
        let p = ProxyBuilder::new(&sim.url).start().await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let shared = format!("{}/api/v1/pods?resourceVersion=0", p.url);
        let whole = get(&shared).await;
        assert_eq!(whole.status, 200);
        let size = whole.body.len();
        assert!(size > 10 << 20, "{size}");
        let before = rss();

        // Each a different selector (matching every pod), so no two share
        // a body: built whole, 100 would hold 100 lists (over 1 GB).
        let mut stalled = Vec::new();
        for i in 0..100 {
            let path = format!("/api/v1/pods?resourceVersion=0&labelSelector=!absent-{i}");
            let (status, s) = ask_and_stall(p.addr, &path).await;
            assert_eq!(status, 200, "list {i}");
            stalled.push(s);
        }
        let grown = rss().saturating_sub(before);
        let bound = 100 * HELD + (64 << 20);
        eprintln!(
            "list {size} B; 100 answered and left unread; RSS grew {} MB (bound {} MB)",
            grown >> 20,
            bound >> 20
        );
        assert!(grown < bound, "RSS grew {} MB", grown >> 20);
        assert!(p.in_flight.used() <= 100 * HELD);

        // Meanwhile others are served: a list many share, and a small one.
        let again = get(&shared).await;
        assert_eq!(again.status, 200);
        assert_eq!(again.body.len(), size);
        let small = get(&format!(
            "{}/api/v1/namespaces/default/pods?limit=10",
            p.url
        ))
        .await;
        assert_eq!(small.status, 200, "{}", small.text());

        // Once they go, what they held is let go.
        drop(stalled);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while p.in_flight.used() > 0 {
            assert!(std::time::Instant::now() < deadline, "room still held");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_lists_count_against_the_budget_and_past_it_are_refused_with_429() {
    within(120, async {
        let sim = SimBuilder::new().pods(2_000).start().await;
        let p = ProxyBuilder::new(&sim.url)
            .limits(LimitsConfig {
                max_bytes_in_flight: Some(4 * HELD),
                ..Default::default()
            })
            .start()
            .await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let mut stalled = Vec::new();
        let (mut answered, mut refused) = (0, 0);
        for i in 0..10 {
            let path = format!("/api/v1/pods?resourceVersion=0&labelSelector=!absent-{i}");
            let (status, s) = ask_and_stall(p.addr, &path).await;
            match status {
                200 => answered += 1,
                429 => refused += 1,
                other => panic!("{other}"),
            }
            stalled.push(s);
        }
        assert_eq!(
            (answered, refused),
            (4, 6),
            "a stream holds HELD bytes of the budget"
        );

        // A refusal is the apiserver's 429, with Retry-After.
        let r = get(&format!(
            "{}/api/v1/pods?resourceVersion=0&labelSelector=!absent-x",
            p.url
        ))
        .await;
        assert_eq!(r.status, 429);
        assert_eq!(r.headers["retry-after"], "1");
        assert_eq!(r.text(), "Too many requests, please try again later.\n");

        // Once they go, their room comes back.
        drop(stalled);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let r = get(&format!(
                "{}/api/v1/pods?resourceVersion=0&labelSelector=!absent-y",
                p.url
            ))
            .await;
            if r.status == 200 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{}", r.status);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_list_stitched_from_pieces_needs_room_for_its_compressed_bytes_alone() {
    within(120, async {
        let sim = SimBuilder::new().pods(2_000).start().await;
        let p = ProxyBuilder::new(&sim.url)
            .limits(LimitsConfig {
                max_bytes_in_flight: Some(6 << 20),
                ..Default::default()
            })
            .start()
            .await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let url = format!("{}/api/v1/pods?resourceVersion=0", p.url);
        // Its JSON (~9.7 MB) does not fit the budget: made plain, or
        // compressed whole, it is refused.
        let plain = send_with(http::Method::GET, &url, &[], bytes::Bytes::new()).await;
        assert_eq!(plain.status, 429, "{}", plain.text());
        let gzip = [("accept-encoding", "gzip")];
        let first = send_with(http::Method::GET, &url, &gzip, bytes::Bytes::new()).await;
        assert_eq!(first.status, 429, "compressed whole, before the pieces");
        // Once the pieces are made (the refused request set that going),
        // the stitched body, a few hundred KB, is answered.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let r = send_with(http::Method::GET, &url, &gzip, bytes::Bytes::new()).await;
            if r.status == 200 {
                assert_eq!(r.headers["content-encoding"], "gzip");
                assert!(r.body.len() < 2 << 20, "{}", r.body.len());
                break;
            }
            assert_eq!(r.status, 429);
            assert!(
                std::time::Instant::now() < deadline,
                "a stitched list is still refused"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
}
