//! An upstream that fails while a type is syncing: clients get the
//! upstream's own errors or real data, never an empty list from a cache that
//! has not synced, and the cache syncs once the upstream recovers.

mod common;

use common::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_forwarded_until_a_failing_upstream_lets_the_cache_sync() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        // The next three upstream requests fail with 500.
        let f = get(&format!("{}/sim/faults?errors=3", sim.url)).await;
        assert_eq!(f.status, 200);
        let path = "/api/v1/configmaps?resourceVersion=0";
        for _ in 0..3 {
            let r = get(&format!("{}{path}", p.url)).await;
            match r.status.as_u16() {
                500 => assert_eq!(r.json()["reason"], "InternalError", "{}", r.text()),
                200 => assert_eq!(r.json()["items"].as_array().unwrap().len(), 10),
                other => panic!("{other}: {}", r.text()),
            }
        }
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let (a, b) = (
            get(&format!("{}{path}", sim.url)).await,
            get(&format!("{}{path}", p.url)).await,
        );
        assert_eq!(item_set(&a.json()), item_set(&b.json()));
        assert_eq!(item_set(&b.json()).1.len(), 10);
    })
    .await
    .expect("timed out");
}
