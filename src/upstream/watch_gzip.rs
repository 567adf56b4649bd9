//! Watch streams gzipped between kubecaches (see `request::encoding`'s
//! `WATCH_ENCODING`): one gzip stream per watch, sync-flushed after each
//! batch of events the watcher wrote, so that every event reaches the
//! downstream kubecache without waiting for more; and the incremental
//! decoder of the downstream's reflector.
//!
//! One stream rather than a gzip member per event: each event is then
//! compressed against the window of those before it, which is where a
//! watch's repetition is (the same kind, labels and managed fields event
//! after event).

use crate::body::{Body, BoxError};
use crate::metrics;
use bytes::{Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use http_body::Frame;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::task::{Context, Poll};

/// zlib's default. An event compresses against the events before it, and
/// deeper matching pays: 2,000 simulator pods as MODIFIED events, each
/// sync-flushed, took 14.4 µs and 7.9% of their bytes at level 2, 16.1 µs
/// and 6.5% at level 6 (7.9 µs and 10.9% at level 1, zlib-rs's "quick"
/// strategy); on the churn test's watch, 10.0% against 7.6%.
const LEVEL: u32 = 6;
/// The largest window: events reach back to the last several events.
const WINDOW_BITS: u8 = 15;
/// A batch is compressed and sent once it holds this much, even if the
/// watcher has more ready, so a backlog leaves in bounded frames.
const BATCH_MAX: usize = 256 * 1024;

/// `inner` (a watch's lines or frames) as one gzip stream: what the
/// watcher has written when the connection asks is compressed together
/// and sync-flushed, so the frame ends on a byte boundary holding every
/// event in it whole. The stream's end writes the gzip trailer; a break
/// of `inner` is passed on without one, so the client sees a broken
/// stream as it would an uncompressed one.
pub fn gzip_watch(inner: Body) -> Body {
    GzipWatch {
        inner,
        z: Compress::new_gzip(Compression::new(LEVEL), WINDOW_BITS),
        broken: None,
        ended: false,
    }
    .boxed_unsync()
}

struct GzipWatch {
    inner: Body,
    z: Compress,
    /// `inner` broke after a batch that is still to be sent.
    broken: Option<BoxError>,
    /// The trailer is written: nothing more to send.
    ended: bool,
}

impl http_body::Body for GzipWatch {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if let Some(e) = self.broken.take() {
            self.ended = true;
            return Poll::Ready(Some(Err(e)));
        }
        let mut batch: Vec<Bytes> = Vec::new();
        let mut size = 0;
        let mut done = false;
        while size < BATCH_MAX {
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        size += data.len();
                        batch.push(data);
                    }
                }
                // What came before the break is sent first, as an
                // uncompressed stream would have sent it.
                Poll::Ready(Some(Err(e))) if batch.is_empty() => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Err(e))) => {
                    self.broken = Some(e);
                    break;
                }
                Poll::Ready(None) => {
                    done = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if batch.is_empty() && !done {
            return Poll::Pending;
        }
        let flush = if done {
            FlushCompress::Finish
        } else {
            FlushCompress::Sync
        };
        let out = deflate(&mut self.z, &batch, flush).map_err(BoxError::from)?;
        metrics::gzip_bytes(size, out.len());
        self.ended = done;
        Poll::Ready(Some(Ok(Frame::data(out))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

/// Compresses `input` and flushes as `flush` asks: for `Sync`, until
/// zlib has no output left to give (room left over after a call); for
/// `Finish`, until the stream's end.
fn deflate(
    z: &mut Compress,
    input: &[Bytes],
    flush: FlushCompress,
) -> Result<Bytes, flate2::CompressError> {
    let size: usize = input.iter().map(Bytes::len).sum();
    let mut out = Vec::with_capacity(size / 4 + 64);
    for piece in input {
        let mut rest = &piece[..];
        while !rest.is_empty() {
            if out.len() == out.capacity() {
                out.reserve(rest.len() / 4 + 64);
            }
            let before = z.total_in();
            z.compress_vec(rest, &mut out, FlushCompress::None)?;
            rest = &rest[(z.total_in() - before) as usize..];
        }
    }
    loop {
        out.reserve(64);
        let status = z.compress_vec(&[], &mut out, flush)?;
        match (flush, status) {
            (FlushCompress::Finish, Status::StreamEnd) => break,
            (FlushCompress::Finish, _) => {}
            _ if out.len() < out.capacity() => break,
            _ => {}
        }
    }
    Ok(Bytes::from(out))
}

/// A gzip stream decoded as its bytes arrive.
pub struct Gunzip {
    z: Decompress,
    ended: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum GunzipError {
    #[error("the gzip stream is corrupt: {0}")]
    Corrupt(#[from] flate2::DecompressError),
    #[error("bytes after the gzip stream's end")]
    AfterEnd,
    #[error("the gzip stream decodes to more than {0} bytes at once")]
    TooLarge(usize),
}

impl Default for Gunzip {
    fn default() -> Self {
        Gunzip {
            z: Decompress::new_gzip(WINDOW_BITS),
            ended: false,
        }
    }
}

impl Gunzip {
    /// Decodes `input` onto the end of `out`, which may not grow past
    /// `max` bytes (a small frame can decode to a great deal).
    pub fn push(
        &mut self,
        input: &[u8],
        out: &mut BytesMut,
        max: usize,
    ) -> Result<(), GunzipError> {
        let mut rest = input;
        let mut scratch = [0u8; 16 * 1024];
        while !rest.is_empty() || !self.ended {
            if self.ended {
                return Err(GunzipError::AfterEnd);
            }
            let (was_in, was_out) = (self.z.total_in(), self.z.total_out());
            let status = self
                .z
                .decompress(rest, &mut scratch, FlushDecompress::None)?;
            let used = (self.z.total_in() - was_in) as usize;
            let made = (self.z.total_out() - was_out) as usize;
            rest = &rest[used..];
            out.extend_from_slice(&scratch[..made]);
            if out.len() > max {
                return Err(GunzipError::TooLarge(max));
            }
            if status == Status::StreamEnd {
                self.ended = true;
                continue;
            }
            // Everything taken and nothing more held back: the rest of
            // the stream is still to come.
            if (rest.is_empty() && made < scratch.len()) || (used == 0 && made == 0) {
                break;
            }
        }
        Ok(())
    }

    /// Whether the stream's end (and its checksum) has been read.
    pub fn ended(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn lines(n: usize) -> Vec<Bytes> {
        (0..n)
            .map(|i| {
                Bytes::from(format!(
                    "{{\"type\":\"MODIFIED\",\"object\":{{\"kind\":\"Pod\",\"metadata\":{{\"name\":\"p{i}\",\"resourceVersion\":\"{}\"}}}}}}\n",
                    100 + i
                ))
            })
            .collect()
    }

    /// The stream of `batches`, as the client receives its frames.
    async fn frames(batches: Vec<Vec<Bytes>>) -> Vec<Bytes> {
        let (tx, body) = crate::body::channel(1024);
        let mut gz = gzip_watch(body);
        let mut out = Vec::new();
        for batch in batches {
            for line in batch {
                tx.send(line).await.unwrap();
            }
            out.push(gz.frame().await.unwrap().unwrap().into_data().unwrap());
        }
        drop(tx);
        while let Some(f) = gz.frame().await {
            out.push(f.unwrap().into_data().unwrap());
        }
        out
    }

    #[tokio::test]
    async fn each_batch_decodes_whole_as_soon_as_its_frame_arrives() {
        let all = lines(10);
        let batches = vec![all[..1].to_vec(), all[1..4].to_vec(), all[4..].to_vec()];
        let got = frames(batches.clone()).await;
        let mut gunzip = Gunzip::default();
        let mut decoded = BytesMut::new();
        for (frame, batch) in got.iter().zip(&batches) {
            gunzip.push(frame, &mut decoded, 1 << 20).unwrap();
            assert_eq!(decoded.split().freeze(), batch.concat());
        }
        assert!(!gunzip.ended());
        // The end: the trailer alone, which decodes to nothing.
        assert_eq!(got.len(), batches.len() + 1);
        gunzip.push(&got[3], &mut decoded, 1 << 20).unwrap();
        assert!(decoded.is_empty() && gunzip.ended());
    }

    #[tokio::test]
    async fn the_whole_stream_is_one_gzip_member_any_decoder_reads() {
        let all = lines(50);
        let got = frames(all.chunks(7).map(<[Bytes]>::to_vec).collect()).await;
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&got.concat()[..])
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(plain, all.concat());
        let gzipped: usize = got.iter().map(Bytes::len).sum();
        assert!(gzipped < plain.len() / 3, "{gzipped} of {}", plain.len());
    }

    #[test]
    fn a_stream_decodes_the_same_however_its_bytes_are_cut() {
        let all = lines(40).concat();
        let mut z = Compress::new_gzip(Compression::new(LEVEL), WINDOW_BITS);
        let whole = deflate(&mut z, &[Bytes::from(all.clone())], FlushCompress::Finish).unwrap();
        for cut in [1, 2, 7, 100] {
            let mut gunzip = Gunzip::default();
            let mut out = BytesMut::new();
            for piece in whole.chunks(cut) {
                gunzip.push(piece, &mut out, 1 << 20).unwrap();
            }
            assert_eq!(out, all[..], "cut every {cut}");
            assert!(gunzip.ended());
        }
    }

    #[test]
    fn corrupt_bytes_trailing_bytes_and_bombs_are_errors() {
        let mut gunzip = Gunzip::default();
        let mut out = BytesMut::new();
        assert!(matches!(
            gunzip.push(b"not gzip at all", &mut out, 1 << 20),
            Err(GunzipError::Corrupt(_))
        ));
        let mut z = Compress::new_gzip(Compression::new(LEVEL), WINDOW_BITS);
        let zeros = Bytes::from(vec![0u8; 1 << 20]);
        let bomb = deflate(&mut z, &[zeros], FlushCompress::Finish).unwrap();
        assert!(bomb.len() < 4096);
        let mut gunzip = Gunzip::default();
        assert!(matches!(
            gunzip.push(&bomb, &mut BytesMut::new(), 64 * 1024),
            Err(GunzipError::TooLarge(_))
        ));
        let mut gunzip = Gunzip::default();
        let mut after = bomb.to_vec();
        after.push(0);
        assert!(matches!(
            gunzip.push(&after, &mut BytesMut::new(), 2 << 20),
            Err(GunzipError::AfterEnd)
        ));
    }

    /// A line, then a broken connection.
    struct LineThenBreak(u8);

    impl http_body::Body for LineThenBreak {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            self.0 += 1;
            Poll::Ready(match self.0 {
                1 => Some(Ok(Frame::data(lines(1).concat().into()))),
                2 => Some(Err("connection reset".into())),
                _ => None,
            })
        }
    }

    #[tokio::test]
    async fn a_broken_stream_is_passed_on_broken_after_what_came_before() {
        let mut gz = gzip_watch(LineThenBreak(0).boxed_unsync());
        let first = gz.frame().await.unwrap().unwrap().into_data().unwrap();
        let mut decoded = BytesMut::new();
        let mut gunzip = Gunzip::default();
        gunzip.push(&first, &mut decoded, 1 << 20).unwrap();
        assert_eq!(decoded, lines(1).concat()[..]);
        assert!(gz.frame().await.unwrap().is_err());
        assert!(gz.frame().await.is_none());
        assert!(!gunzip.ended());
    }
}
