//! Watches end when kubecache drains: a watch's body, cached or forwarded,
//! ends at the first event boundary after the drain starts — an orderly
//! end of the stream, which clients answer by watching again (elsewhere,
//! readiness having failed) — so that stopping does not wait out the
//! drain deadline for every informer.

use super::listener::Drain;
use crate::body::{Body, BoxError};
use bytes::{Buf, Bytes};
use http_body::Frame;
use http_body_util::BodyExt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Where a watch stream's events begin and end.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Framing {
    /// JSON: one event per line.
    Lines { at_boundary: bool },
    /// Protobuf: each event after its length, 4 bytes big-endian.
    LengthPrefixed {
        header: [u8; 4],
        have: usize,
        left: u64,
    },
}

impl Framing {
    fn for_content_type(content_type: &str) -> Framing {
        if content_type.starts_with("application/vnd.kubernetes.protobuf") {
            Framing::LengthPrefixed {
                header: [0; 4],
                have: 0,
                left: 0,
            }
        } else {
            Framing::Lines { at_boundary: true }
        }
    }

    fn feed(&mut self, mut data: &[u8]) {
        match self {
            Framing::Lines { at_boundary } => {
                if let Some(last) = data.last() {
                    *at_boundary = *last == b'\n';
                }
            }
            Framing::LengthPrefixed { header, have, left } => {
                while !data.is_empty() {
                    if *left > 0 {
                        let n = (*left).min(data.len() as u64) as usize;
                        *left -= n as u64;
                        data.advance(n);
                        continue;
                    }
                    header[*have] = data[0];
                    *have += 1;
                    data.advance(1);
                    if *have == 4 {
                        *have = 0;
                        *left = u64::from(u32::from_be_bytes(*header));
                    }
                }
            }
        }
    }

    fn at_boundary(&self) -> bool {
        match self {
            Framing::Lines { at_boundary } => *at_boundary,
            Framing::LengthPrefixed { have, left, .. } => *have == 0 && *left == 0,
        }
    }
}

/// `body`, a watch's of `content_type`, ending at an event boundary once
/// `drain` has started.
pub fn ending_at_drain(body: Body, content_type: &str, drain: &Drain) -> Body {
    let drain = drain.clone();
    UntilDrained {
        inner: body,
        framing: Framing::for_content_type(content_type),
        draining: Box::pin(async move { drain.wait().await }),
        drained: false,
    }
    .boxed_unsync()
}

struct UntilDrained {
    inner: Body,
    framing: Framing,
    draining: Pin<Box<dyn Future<Output = ()> + Send>>,
    drained: bool,
}

impl http_body::Body for UntilDrained {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if !self.drained && self.draining.as_mut().poll(cx).is_ready() {
            self.drained = true;
        }
        if self.drained && self.framing.at_boundary() {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.framing.feed(data);
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames_until_drained(
        content_type: &str,
        chunks: Vec<&'static [u8]>,
        drain_after: usize,
    ) -> Vec<u8> {
        let drain = Drain::default();
        let (tx, body) = crate::body::channel(16);
        let mut body = ending_at_drain(body, content_type, &drain);
        for c in &chunks {
            tx.send(Bytes::from_static(c)).await.unwrap();
        }
        let mut out = Vec::new();
        let mut n = 0;
        while let Some(Ok(f)) = body.frame().await {
            out.extend_from_slice(f.data_ref().unwrap());
            n += 1;
            if n == drain_after {
                drain.start();
            }
            if n == chunks.len() {
                // The sender stays open: only the drain ends the body.
                if !drain.started() {
                    drain.start();
                }
            }
        }
        out
    }

    #[tokio::test]
    async fn a_json_watch_ends_at_the_end_of_the_line_the_drain_found_it_in() {
        let out = frames_until_drained(
            "application/json",
            vec![
                b"{\"type\":\"ADDED\"}\n{\"ty",
                b"pe\":\"MODIFIED\"}\n",
                b"{\"type\":\"DELETED\"}\n",
            ],
            1,
        )
        .await;
        assert_eq!(out, b"{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n");
    }

    #[tokio::test]
    async fn a_protobuf_watch_ends_after_the_frame_the_drain_found_it_in() {
        let out = frames_until_drained(
            "application/vnd.kubernetes.protobuf;stream=watch",
            vec![
                b"\x00\x00\x00\x03ab",
                b"c\x00\x00",
                b"\x00\x01z",
                b"\x00\x00\x00\x01q",
            ],
            1,
        )
        .await;
        assert_eq!(out, b"\x00\x00\x00\x03abc\x00\x00\x00\x01z");
    }

    #[tokio::test]
    async fn a_watch_at_a_boundary_ends_as_soon_as_the_drain_starts() {
        let drain = Drain::default();
        let (_tx, body) = crate::body::channel(1);
        let mut body = ending_at_drain(body, "application/json", &drain);
        let waiting = tokio::spawn(async move { body.frame().await.is_none() });
        tokio::task::yield_now().await;
        drain.start();
        assert!(waiting.await.unwrap());
    }
}
