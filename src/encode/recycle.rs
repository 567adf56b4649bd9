//! The buffers big bodies are assembled in, handed back when the last
//! response holding a body lets go of it and reused for the next one.
//!
//! glibc gives every allocation above its largest mmap threshold (32 MiB)
//! fresh pages and unmaps them on free, so each 50 MB list body of 10,000
//! pods paid the kernel for making and zeroing ~12,000 pages: four fifths
//! of assembling it (benches/micro.rs, 29.7 ms against 5.4 ms into a
//! buffer already in use). Bodies are remade on every event, so under churn
//! that was most of a big list's cost.
//!
//! Only buffers of [`MIN`] and more are pooled; smaller ones the allocator
//! keeps well itself. Idle ones take at most [`idle_limit`] together
//! ([`default_idle_limit`]) and are freed after [`IDLE_FOR`] unused, so a
//! burst of big lists does not hold memory for good.
//!
//! Every buffer is had, and grown ([`room`]), fallibly: a body the
//! allocator cannot give memory for fails its own request ([`NoMemory`])
//! rather than aborting the process and every client with it, as an
//! infallible allocation of 234 MB did for a gzip list.

use crate::metrics;
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Bodies smaller than this are allocated as usual.
pub const MIN: usize = 8 << 20;
/// What idle buffers may take together unless set; the oldest go first.
pub const IDLE_LIMIT: usize = 128 << 20;

static IDLE_LIMIT_SET: AtomicUsize = AtomicUsize::new(IDLE_LIMIT);

/// What idle buffers may take together (one limit for the process).
pub fn idle_limit() -> usize {
    IDLE_LIMIT_SET.load(Ordering::Relaxed)
}

/// [`IDLE_LIMIT`], or an eighth of the container's memory limit if that is
/// less: room for two or three bodies of a 10,000-pod list (48 MB each),
/// the size the pool pays off at, in a container of 1 GiB and more.
pub fn default_idle_limit(memory_limit: Option<usize>) -> usize {
    memory_limit.map_or(IDLE_LIMIT, |m| (m / 8).min(IDLE_LIMIT))
}

/// Sets what idle buffers may take together; those beyond it are freed as
/// the next buffer comes back.
pub fn set_idle_limit(bytes: usize) {
    IDLE_LIMIT_SET.store(bytes, Ordering::Relaxed);
}
/// How long a buffer waits for a body before it is freed.
pub const IDLE_FOR: Duration = Duration::from_secs(60);

/// The allocator refused the memory a body needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no memory to be had for a body of {bytes} bytes")]
pub struct NoMemory {
    pub bytes: usize,
}

struct Idle {
    buf: Vec<u8>,
    since: Instant,
}

#[derive(Default)]
struct Pool {
    /// Oldest first.
    idle: Vec<Idle>,
    bytes: usize,
    /// A thread is waiting to free what outstays [`IDLE_FOR`].
    sweeping: bool,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    idle: Vec::new(),
    bytes: 0,
    sweeping: false,
});

/// How many bodies were made in a buffer handed back by another.
static REUSED: AtomicU64 = AtomicU64::new(0);

fn pool() -> MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

impl Pool {
    fn remove(&mut self, i: usize) -> Vec<u8> {
        let Idle { buf, .. } = self.idle.remove(i);
        self.bytes -= buf.capacity();
        buf
    }

    fn expire(&mut self, now: Instant) {
        while self
            .idle
            .first()
            .is_some_and(|b| now.duration_since(b.since) >= IDLE_FOR)
        {
            self.remove(0);
        }
    }

    fn report(&self) {
        metrics::body_buffers_idle(self.bytes);
    }
}

/// An empty buffer for a body of about `len` bytes: an idle one that fits
/// if there is one. One over twice the size is not taken: what it holds
/// beyond the body would be resident memory the kept bodies' budget does
/// not see.
pub fn buffer(len: usize) -> Result<Vec<u8>, NoMemory> {
    if len < MIN {
        return exactly(len);
    }
    let mut p = pool();
    p.expire(Instant::now());
    let fit = p
        .idle
        .iter()
        .enumerate()
        .filter(|(_, b)| (len..=len.saturating_mul(2)).contains(&b.buf.capacity()))
        .min_by_key(|(_, b)| b.buf.capacity())
        .map(|(i, _)| i);
    if let Some(i) = fit {
        let buf = p.remove(i);
        p.report();
        REUSED.fetch_add(1, Ordering::Relaxed);
        metrics::body_buffer_reused();
        return Ok(buf);
    }
    drop(p);
    // Room for the next version of the same body, a few objects grown.
    exactly(len.saturating_add(len / 16))
}

fn exactly(len: usize) -> Result<Vec<u8>, NoMemory> {
    let mut b = Vec::new();
    b.try_reserve_exact(len).map_err(|_| refused(len))?;
    Ok(b)
}

fn refused(bytes: usize) -> NoMemory {
    metrics::body_without_memory();
    tracing::warn!(
        bytes,
        "the allocator refused memory for a response body: its request is answered 429"
    );
    NoMemory { bytes }
}

/// Room in `buf` for `more` bytes, had fallibly: a body's writer asks
/// before each piece it writes (an object, a row, a line), so that no
/// growth of a big body's buffer can abort the process. Growing doubles,
/// as `Vec` does; with room already there it is a comparison.
#[inline]
pub fn room(buf: &mut Vec<u8>, more: usize) -> Result<(), NoMemory> {
    buf.try_reserve(more)
        .map_err(|_| refused(buf.len().saturating_add(more)))
}

/// The finished body. A big one's buffer comes back to the pool when the
/// last clone of the `Bytes` is dropped.
pub fn freeze(buf: Vec<u8>) -> Bytes {
    if buf.capacity() < MIN {
        return Bytes::from(buf);
    }
    Bytes::from_owner(Recycled(buf))
}

struct Recycled(Vec<u8>);

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.0));
    }
}

fn give_back(mut buf: Vec<u8>) {
    buf.clear();
    let cap = buf.capacity();
    let limit = idle_limit();
    if !(MIN..=limit).contains(&cap) {
        return;
    }
    let now = Instant::now();
    let mut p = pool();
    p.expire(now);
    while p.bytes + cap > limit {
        p.remove(0);
    }
    p.bytes += cap;
    p.idle.push(Idle { buf, since: now });
    p.report();
    if !p.sweeping {
        p.sweeping = true;
        drop(p);
        start_sweeper();
    }
}

/// Frees idle buffers as they outstay [`IDLE_FOR`], and ends when none are
/// left: nothing else may touch the pool for a long while.
fn start_sweeper() {
    let sweep = || loop {
        let next = {
            let mut p = pool();
            let now = Instant::now();
            p.expire(now);
            p.report();
            match p.idle.first() {
                Some(b) => IDLE_FOR.saturating_sub(now.duration_since(b.since)),
                None => {
                    p.sweeping = false;
                    return;
                }
            }
        };
        std::thread::sleep(next);
    };
    let started = std::thread::Builder::new()
        .name("kubecache-buffers".into())
        .spawn(sweep);
    if started.is_err() {
        // No thread to be had: the buffers are freed instead of kept.
        let mut p = pool();
        p.idle.clear();
        p.bytes = 0;
        p.sweeping = false;
        p.report();
    }
}

/// How many bodies so far were made in a buffer another one handed back.
pub fn reused() -> u64 {
    REUSED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    // The pool is one for the process: these tests take turns, and each
    // starts from an empty pool (no other unit test makes bodies this big).
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> MutexGuard<'static, ()> {
        let turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let mut p = pool();
        p.idle.clear();
        p.bytes = 0;
        turn
    }

    fn pooled(cap: usize) -> usize {
        pool()
            .idle
            .iter()
            .filter(|b| b.buf.capacity() == cap)
            .count()
    }

    #[test]
    fn a_big_body_buffer_comes_back_when_its_last_clone_is_dropped() {
        let _turn = serial();
        let len = MIN + 12_345;
        let mut b = buffer(len).unwrap();
        let cap = b.capacity();
        assert!(cap >= len);
        b.put_slice(&vec![7u8; len]);
        let body = freeze(b);
        let clone = body.slice(10..20);
        drop(body);
        assert_eq!(pooled(cap), 0, "a clone still holds it");
        assert_eq!(&clone[..], &[7u8; 10]);
        drop(clone);
        assert_eq!(pooled(cap), 1);

        let again = buffer(len).unwrap();
        assert_eq!(again.capacity(), cap, "the same buffer again");
        assert!(again.is_empty(), "and empty");
        assert_eq!(pooled(cap), 0);
    }

    #[test]
    fn small_bodies_and_much_bigger_buffers_are_not_pooled_together() {
        let _turn = serial();
        let small = freeze(buffer(1024).unwrap());
        drop(small);
        assert!(pool().idle.iter().all(|b| b.buf.capacity() >= MIN));

        let big = MIN * 5 + 777;
        let mut b = buffer(big).unwrap();
        let cap = b.capacity();
        b.put_u8(1);
        drop(freeze(b));
        assert_eq!(pooled(cap), 1);
        let other = buffer(MIN + 1).unwrap();
        assert_ne!(other.capacity(), cap, "over twice the size is not taken");
        assert_eq!(pooled(cap), 1);
    }

    #[test]
    fn idle_buffers_never_take_more_than_the_limit() {
        let _turn = serial();
        let len = IDLE_LIMIT / 3;
        let bodies: Vec<Bytes> = (0..5).map(|_| freeze(buffer(len).unwrap())).collect();
        drop(bodies);
        assert!(pool().bytes <= IDLE_LIMIT);
    }

    #[test]
    fn idle_buffers_take_an_eighth_of_a_small_containers_memory_and_128_mib_at_most() {
        assert_eq!(default_idle_limit(None), IDLE_LIMIT);
        assert_eq!(default_idle_limit(Some(4 << 30)), 128 << 20);
        assert_eq!(default_idle_limit(Some(1 << 30)), 128 << 20);
        assert_eq!(default_idle_limit(Some(320 << 20)), 40 << 20);
    }

    #[test]
    fn a_buffer_the_allocator_cannot_give_is_an_error_not_an_abort() {
        let _turn = serial();
        // More than any address space: refused before the allocator is
        // even asked, through the same fallible path as a refusal of its.
        let huge = usize::MAX / 2;
        assert_eq!(
            buffer(huge).unwrap_err(),
            NoMemory {
                bytes: huge + huge / 16
            }
        );
        assert_eq!(buffer(MIN - 1).map(|b| b.capacity() >= MIN - 1), Ok(true));
    }

    #[test]
    fn growing_a_buffer_past_what_can_be_had_is_an_error_and_keeps_what_it_holds() {
        let mut b = b"kept".to_vec();
        assert_eq!(
            room(&mut b, usize::MAX / 2).unwrap_err().bytes,
            usize::MAX / 2 + 4
        );
        assert_eq!(b, b"kept");
        room(&mut b, 1000).unwrap();
        assert!(b.capacity() >= 1004);
    }
}
