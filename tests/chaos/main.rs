//! Chaos (issue 21): random faults against the upstream — the simulator's
//! injected faults, or a real kube-apiserver and etcd killed, paused and
//! restarted — while writers create, change and delete configmaps and pods
//! straight on the upstream, and clients read through kubecache in every
//! resourceVersion mode and follow watches that resume where they were.
//! Then the faults stop and kubecache is proved right:
//!
//! - no read older than a write that had been answered before it (a
//!   refusal or a 5xx is allowed, a stale answer is not);
//! - no watch that skipped, repeated or reordered an event: each is
//!   compared with the upstream's own history (the simulator's stores, or
//!   etcd's revisions), not with what the writers think they did, since a
//!   write whose answer was lost to a kill may or may not have happened;
//! - every list served at a version equal, byte for byte, to the upstream's
//!   exact list at that version;
//! - once quiet, every cached type equal to the upstream.
//!
//! Consistent reads are answered from the cache once proven fresh
//! (`consistentReads: prove`), the simulator behaving as v1.36 (quiet
//! types proven by its bookmarks) and the real apiserver as v1.20 (quiet
//! types' reads forwarded, shared).
//!
//! The harness is a module per part, shared by both scenarios: `client`
//! (HTTP that never panics), `model` (what is written, listed and
//! watched), `findings` (what a run counts and finds, and the context its
//! tasks share), `writers`, `readers`, `watchers`, `run` (load, faults,
//! quiet, checks) and `history` (the checks of answered writes alone); the
//! scenarios are `sim_faults` and `real` (a real apiserver and etcd).
//!
//! `KUBECACHE_CHAOS_SECONDS` sets how long the faults last in each scenario
//! (default 20); `KUBECACHE_CHAOS_SEED` replays a run's random choices (of
//! faults, writes and reads; the timing is the machine's).

#[path = "../common/mod.rs"]
mod common;

use bytes::Bytes;
use common::*;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

mod client;
mod findings;
mod history;
mod model;
mod readers;
#[cfg(feature = "real-apiserver")]
mod real;
mod run;
mod sim_faults;
mod watchers;
mod writers;

use client::*;
use findings::*;
use model::*;
use readers::*;
use run::*;
use watchers::*;
use writers::*;
// Explicitly: `common` has a `Chain` of its own.
use watchers::Chain;

const DEFAULT_SEED: u64 = 2121;
const DEFAULT_SECONDS: u64 = 20;

/// A write may wait out an etcd that is paused or restarting: answered
/// late, it is still a definite answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(15);
/// Longer than kubecache's 3 s wait for a version it has not reached.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Names each writer cycles through per namespace: few enough that
/// objects are created, changed and deleted again and again.
const NAMES_PER_NAMESPACE: usize = 6;

fn setting(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// One task's random choices: the run's seed told apart per task, so that
/// each task replays its own choices whatever the others do.
fn rng_for(seed: u64, task: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ task.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}
