//! The HTTP bodies every layer hands around: whole ones, empty ones, and
//! ones streamed from a channel (watches), all boxed as one type.

use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Empty};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

pub fn empty() -> Body {
    Empty::<Bytes>::new().map_err(|e| match e {}).boxed_unsync()
}

pub fn full(b: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(b.into())
        .map_err(|e| match e {})
        .boxed_unsync()
}

/// A streaming body fed from a channel: watch responses, one frame per
/// event, and lists written as they are read.
pub struct ChannelBody {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    /// What is still to come, when known: it is sent as Content-Length.
    left: Option<u64>,
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        let polled = self.rx.poll_recv(cx);
        if let (std::task::Poll::Ready(Some(b)), Some(left)) = (&polled, &mut self.left) {
            *left = left.saturating_sub(b.len() as u64);
        }
        polled.map(|o| o.map(|b| Ok(http_body::Frame::data(b))))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self.left {
            Some(n) => http_body::SizeHint::with_exact(n),
            None => http_body::SizeHint::default(),
        }
    }
}

/// A body and the sender that writes it; dropping the sender ends it.
pub fn channel(depth: usize) -> (tokio::sync::mpsc::Sender<Bytes>, Body) {
    channel_of(depth, None)
}

/// [`channel`] for a body of `len` bytes, when known (the sender must
/// send exactly that many).
pub fn channel_of(depth: usize, len: Option<u64>) -> (tokio::sync::mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = tokio::sync::mpsc::channel(depth);
    (tx, ChannelBody { rx, left: len }.boxed_unsync())
}

/// `bytes` as a body of slices of at most `slice` bytes (one allocation,
/// no copies), the next taken only when the connection wants it.
pub fn sliced(bytes: Bytes, slice: usize) -> Body {
    Sliced { rest: bytes, slice }.boxed_unsync()
}

struct Sliced {
    rest: Bytes,
    slice: usize,
}

impl http_body::Body for Sliced {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        if self.rest.is_empty() {
            return std::task::Poll::Ready(None);
        }
        let n = self.slice.min(self.rest.len());
        let next = self.rest.split_to(n);
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(next))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.rest.len() as u64)
    }
}

/// A body that keeps `held` alive until it is done (or dropped): what a
/// response must hold for as long as it streams.
pub fn holding<T: Send + Unpin + 'static>(body: Body, held: T) -> Body {
    Holding { _held: held, body }.boxed_unsync()
}

struct Holding<T> {
    // Dropped before the body: what counts the body's bytes stops counting
    // before they are freed, so that no new allocation at the same address
    // is taken for them meanwhile (`limits::BytesInFlight`).
    _held: T,
    body: Body,
}

impl<T: Unpin> http_body::Body for Holding<T> {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
