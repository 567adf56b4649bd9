//! The load benchmark's short versions (`benches/load.rs`, whose parts
//! they share), for CI: the real binary as its own process in front of the
//! simulator (2,000 pods, churning), its memory bound set as for a
//! container of 320 MiB. Mixed clients get no error but 429s with
//! Retry-After; idle connections and clients that never read leave
//! another client's list answered; kubecache's RSS stays under the bound
//! throughout.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../../benches/support/load.rs"]
mod load;

use common::within;
use kubecache::cache::bodies::stream::HELD;
use load::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_kubecache");
const MEMORY: u64 = 320 * MIB;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_mixed_clients_get_no_error_but_429s_while_kubecache_stays_under_its_bound() {
    within(90, async {
        raise_open_files(2000);
        let sim = start_sim(BIN, 2000, 10, 20.0);
        let bounds = Bounds {
            memory: MEMORY,
            max_connections: 1000,
            idle_timeout: None,
        };
        let kc = start_kubecache(BIN, &sim.url(), bounds);
        wait_pods_synced(&kc.url(), Duration::from_secs(30)).await;
        let o = Arc::new(objects(&sim.url()).await);
        let sampler = Sampler::start(kc.pid(), Duration::from_millis(50));

        let r = run_mix(&kc.url(), o, 200, 5.0).await;
        let peak = sampler.peak_rss();
        eprintln!(
            "{}\n{:.0} requests/s; peak RSS {} (bound {}); peak descriptors {}",
            r.table(),
            r.per_second(),
            mib(peak),
            mib(MEMORY),
            sampler.peak_fds()
        );
        assert_eq!(r.errors(), 0, "errors other than 429s with Retry-After");
        for k in KINDS {
            assert!(!r.of(k).times.is_empty(), "{}: never answered", k.name());
        }
        let w = r.of(Kind::Watch);
        assert!(w.events > 0, "the watches saw no event");
        assert!(w.ended > 0, "no watch ended and was resumed");
        assert!(peak < MEMORY, "peak RSS {}", mib(peak));
        assert_eq!(
            kc.log
                .accept_failed
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_and_clients_that_never_read_leave_another_clients_list_answered_under_the_bound(
) {
    within(90, async {
        const IDLE: usize = 2000;
        const STALLERS: usize = 48;
        raise_open_files(IDLE as u64 + 1000);
        let sim = start_sim(BIN, 2000, 10, 20.0);
        let bounds = Bounds {
            memory: MEMORY,
            max_connections: IDLE + STALLERS + 100,
            idle_timeout: Some(Duration::from_secs(120)),
        };
        let kc = start_kubecache(BIN, &sim.url(), bounds);
        let base = kc.url();
        wait_pods_synced(&base, Duration::from_secs(30)).await;
        let o = objects(&sim.url()).await;
        let sampler = Sampler::start(kc.pid(), Duration::from_millis(50));

        let addr = kc.addr;
        let source = "127.0.0.2".parse().ok();
        let before = status_bytes(kc.pid(), "VmRSS").unwrap();
        let idle = tokio::task::spawn_blocking(move || hold_idle(addr, IDLE, source))
            .await
            .unwrap();
        assert_eq!(idle.failed, 0, "{:?}", idle.first_error);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let each = status_bytes(kc.pid(), "VmRSS")
            .unwrap()
            .saturating_sub(before)
            / IDLE as u64;
        eprintln!("an idle connection: {} KiB", each / 1024);
        // 30 KiB while hyper kept room for the handler's whole future on
        // every connection (src/serve/listener.rs); 23-24 KiB since.
        assert!(each < 27 << 10, "an idle connection holds {each} B");

        let size = get(
            &client(),
            &format!("{base}/api/v1/pods?resourceVersion=0&labelSelector=!absent-size"),
            "application/json",
        )
        .await
        .map_or(0, |(_, b)| b.len());
        // More than the budget holds, were they built whole: streamed as
        // they are read, each holds a few chunks (`HELD`), and all are
        // answered.
        assert!(
            STALLERS as u64 * size as u64 > bounds.bytes_in_flight(),
            "{size}"
        );
        let until = Instant::now() + Duration::from_secs(4);
        let namespace = tokio::spawn(probe(
            format!(
                "{base}/api/v1/namespaces/{}/pods?resourceVersion=0",
                o.namespaces[0]
            ),
            until,
            Duration::from_millis(50),
        ));
        let rss_before_stalls = status_bytes(kc.pid(), "VmRSS").unwrap();
        let mut asks = tokio::task::JoinSet::new();
        for i in 0..STALLERS {
            let path = format!("/api/v1/pods?resourceVersion=0&labelSelector=!absent-{i}");
            asks.spawn(async move { ask_and_stall(addr, &path).await });
        }
        let mut stalled = Vec::new();
        while let Some(s) = asks.join_next().await {
            stalled.push(s.unwrap().expect("a staller's answer"));
        }
        let namespace = namespace.await.unwrap();
        // The unread lists are what kubecache counts in flight.
        let in_flight = metric(&base, "kubecache_bytes_in_flight ").await;
        let limit = metric(&base, "kubecache_bytes_in_flight_limit").await;
        assert_eq!(limit as u64, bounds.bytes_in_flight());
        let peak = sampler.peak_rss();
        let still_open = tokio::task::spawn_blocking(move || (idle.still_open(), idle))
            .await
            .unwrap()
            .0;

        let answered = stalled.iter().filter(|s| s.status == 200).count();
        let refused = stalled
            .iter()
            .filter(|s| s.status == 429 && s.retry_after)
            .count();
        eprintln!(
            "{IDLE} idle, {still_open} still open; {answered} of {STALLERS} {size}-byte lists \
             answered and left unread, {refused} refused; meanwhile a namespace's list: {}; \
             peak RSS {} (bound {}), peak descriptors {}",
            namespace.summary(),
            mib(peak),
            mib(MEMORY),
            sampler.peak_fds()
        );
        assert_eq!(still_open, IDLE, "idle connections closed");
        assert_eq!((answered, refused), (STALLERS, 0), "every list streamed");
        assert!(
            in_flight <= (STALLERS * HELD) as f64 && in_flight <= limit,
            "{in_flight} B counted in flight for {answered} unread {size} B lists"
        );
        assert!(
            namespace.statuses.keys().all(|s| *s == 200) && namespace.times.len() >= 10,
            "{}",
            namespace.summary()
        );
        let mut t = namespace.times.clone();
        t.sort_by(f64::total_cmp);
        assert!(quantile(&t, 0.99) < 2.0, "{}", namespace.summary());
        assert!(peak < MEMORY, "peak RSS {}", mib(peak));
        assert_eq!(
            kc.log
                .accept_failed
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
        // Once the non-readers are gone, so is what their answers held:
        // RSS is back where it was but for the idle body buffers kept for
        // reuse (freed a minute later). It stayed 1 GB up before.
        drop(stalled);
        let deadline = Instant::now() + Duration::from_secs(10);
        while metric(&base, "kubecache_bytes_in_flight ").await > 0.0 {
            assert!(Instant::now() < deadline, "answers still counted in flight");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let pooled = metric(&base, "kubecache_body_buffers_idle_bytes").await as u64;
        let after = status_bytes(kc.pid(), "VmRSS").unwrap();
        eprintln!(
            "RSS before the non-readers {}, with them {}, after them {} ({} of it idle body buffers)",
            mib(rss_before_stalls),
            mib(peak),
            mib(after),
            mib(pooled)
        );
        assert!(
            after <= rss_before_stalls + pooled + (32 << 20),
            "RSS {} after the non-readers left, {} before, {} pooled",
            mib(after),
            mib(rss_before_stalls),
            mib(pooled)
        );
    })
    .await;
}
