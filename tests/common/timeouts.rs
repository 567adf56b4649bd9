//! The time limit of a whole test scenario, and of waiting for a condition
//! within one.

use std::future::Future;
use std::time::Duration;

/// Runs a test's scenario, failing the test when it has not finished
/// within `secs` seconds (a hung scenario would otherwise hang the run).
pub async fn within<T>(secs: u64, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        // libtest runs each test on a thread named after it, which
        // `#[tokio::test]` polls the scenario on.
        Err(_) => panic!(
            "scenario {} timed out: not finished after {secs} s",
            std::thread::current().name().unwrap_or("(unnamed thread)")
        ),
    }
}

/// Polls `check` until it holds, failing the test after `within`.
pub async fn eventually(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls the async `check` every 50 ms until it holds, failing the test
/// after `secs` seconds.
pub async fn until<F: Future<Output = bool>>(what: &str, secs: u64, mut check: impl FnMut() -> F) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
