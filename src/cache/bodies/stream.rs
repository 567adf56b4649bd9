//! A list's body written as the client reads it: a chunk at a time from
//! its pieces (`encode::list_body`), gzipped as it goes for a client that
//! accepts gzip, the next chunk made only once the connection has taken
//! the ones before it (a channel of [`DEPTH`] chunks). A list in flight
//! holds its items' pointers and a few chunks, not its body: what lets
//! many different lists of a large type be answered at once (issue 35),
//! and its first byte go out before its last is written.
//!
//! The bytes are the whole body's (the same pieces, and gzip's output does
//! not depend on how its input is cut). A body that fits in its first
//! chunk is finished whole, as before (`finish`), and goes out with its
//! Content-Length; longer ones too when their length is known before they
//! are written (uncompressed JSON and protobuf), else chunked, as the
//! apiserver sends its lists.

use super::compress::{self, LEVEL};
use super::finish::{FinishError, Finished, Output};
use crate::body::{self, Body};
use crate::encode::codec::TypeCodec;
use crate::encode::list_body::ListBody;
use crate::encode::pretty::Layout;
use crate::encode::recycle::{self, NoMemory};
use bytes::Bytes;
use flate2::write::GzEncoder;
use std::io::Write;
use std::sync::Arc;

/// A list being written, owning what it writes.
pub type OwnedList = ListBody<'static, Arc<TypeCodec>>;

/// The bytes a chunk is written up to (its last piece may pass it). Small,
/// because the connection queues up to 16 of them (hyper's
/// `MAX_BUF_LIST_BUFFERS`) before it stops asking for more: what a client
/// that stops reading pins is those, not the chunk being written.
pub const CHUNK: usize = 16 * 1024;

/// Chunks queued for the connection before the next waits.
const DEPTH: usize = 2;

/// The plain bytes gzipped at a time: four chunks (a millisecond's work at
/// most), whose compressed output is about one.
const GZIP_INPUT: usize = 4 * CHUNK;

/// What a streamed list holds at most, besides its items' pointers: the
/// chunks the connection queues (16), the channel's and the one being
/// written (gzip's input, four), and gzip's state (under a chunk).
pub const HELD: usize = CHUNK * (16 + DEPTH + 4 + 1);

/// A list's body, as it goes out.
pub enum Streamed {
    /// It fit in its first chunk: finished whole.
    Whole(Finished),
    /// The rest is written as it is read.
    Stream { body: Body, gzipped: bool },
}

/// Writes `list` as `out` asks (laid out already: `ListBody::indented`,
/// `without_newline`), holding `held` until it is written or the client
/// is gone.
pub async fn stream<H: Send + 'static>(
    list: OwnedList,
    out: Output,
    held: H,
) -> Result<Streamed, FinishError> {
    // Without its length, a body is known to pass gzip's threshold only
    // once that much of it is written.
    let want = if out.gzip && list.exact_len().is_none() {
        compress::THRESHOLD + 1
    } else {
        CHUNK
    };
    let heavy = !list.is_light();
    let (list, first) = run(heavy, move || {
        let mut list = list;
        let mut b = recycle::buffer(want + CHUNK / 4)?;
        list.fill(&mut b, want)?;
        Ok((list, b))
    })
    .await?;
    if list.is_done() {
        crate::metrics::streamed_list("whole");
        // Laid out already.
        let out = Output {
            layout: Layout::Compact,
            ..out
        };
        return Ok(Streamed::Whole(
            Finished::make(recycle::freeze(first), out).await?,
        ));
    }
    crate::metrics::streamed_list("streamed");
    let gzipped = out.gzip && list.likely_len().max(first.len()) > compress::THRESHOLD;
    let len = (!gzipped).then(|| list.exact_len()).flatten();
    let (tx, body) = body::channel_of(DEPTH, len.map(|n| n as u64));
    tokio::spawn(async move {
        let _held = held;
        if let Err(e) = write(list, first, gzipped, heavy, tx).await {
            // The status has gone out: the body ends short, and the client
            // sees the response cut (as when the apiserver fails mid-list).
            tracing::warn!(error = %e, "a streamed list could not be written whole");
        }
    });
    Ok(Streamed::Stream { body, gzipped })
}

/// The chunks after the first, until the list is done or the client gone.
async fn write(
    mut list: OwnedList,
    first: Vec<u8>,
    gzipped: bool,
    heavy: bool,
    tx: tokio::sync::mpsc::Sender<Bytes>,
) -> Result<(), FinishError> {
    let mut gz = gzipped.then(|| GzEncoder::new(Vec::new(), LEVEL));
    let (mut plain_len, mut gz_len) = (0, 0);
    let mut first = Some(first);
    while first.is_some() || !list.is_done() || gz.is_some() {
        let chunk = first.take();
        let (l, g, out, fed) = run(heavy || gz.is_some(), move || {
            let (mut list, gz) = (list, gz);
            let plain = match chunk {
                Some(c) => c,
                None if list.is_done() => Vec::new(),
                None => {
                    let want = if gz.is_some() { GZIP_INPUT } else { CHUNK };
                    let mut b = recycle::buffer(want + CHUNK / 2)?;
                    list.fill(&mut b, want)?;
                    b
                }
            };
            let fed = plain.len();
            let Some(mut enc) = gz else {
                return Ok((list, None, Bytes::from(plain), fed));
            };
            let refused = |_| NoMemory { bytes: CHUNK };
            enc.write_all(&plain).map_err(refused)?;
            if list.is_done() {
                // Its trailer too: the encoder is done with.
                let out = enc.finish().map_err(refused)?;
                return Ok((list, None, Bytes::from(out), fed));
            }
            let out = std::mem::take(enc.get_mut());
            Ok((list, Some(enc), Bytes::from(out), fed))
        })
        .await?;
        (list, gz) = (l, g);
        plain_len += fed;
        gz_len += out.len();
        if !out.is_empty() && tx.send(out).await.is_err() {
            return Ok(());
        }
    }
    if gzipped {
        crate::metrics::gzip_bytes(plain_len, gz_len);
    }
    Ok(())
}

/// `work` off the async workers if `heavy` (a chunk of Table rows or
/// gzip: about a millisecond), else at once (copying a chunk of JSON).
async fn run<T: Send + 'static>(
    heavy: bool,
    work: impl FnOnce() -> Result<T, NoMemory> + Send + 'static,
) -> Result<T, FinishError> {
    if !heavy {
        return work().map_err(FinishError::NoMemory);
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(FinishError::Task)?
        .map_err(FinishError::NoMemory)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::codec::Entry;
    use crate::encode::list_body::Source;
    use crate::encode::list_meta::ListMeta;
    use crate::encode::personality::Personality;
    use crate::encode::print::Printer;
    use crate::encode::style::ListStyle;
    use crate::encode::table::{Include, TableSpec};
    use crate::encode::Repr;
    use crate::request::accept::MetaVersion;
    use http_body_util::BodyExt;

    fn codec() -> Arc<TypeCodec> {
        Arc::new(TypeCodec::new("", "v1", "Pod", true, ListStyle::Typed))
    }

    fn pods(c: &TypeCodec, n: usize) -> Vec<Arc<Entry>> {
        (0..n)
            .map(|i| {
                let mut p = crate::fixtures::pod(&format!("ns-{}", i % 3), i);
                p["metadata"]["resourceVersion"] = (10 + i).to_string().into();
                Arc::new(c.from_object(&serde_json::to_vec(&p).unwrap()).unwrap())
            })
            .collect()
    }

    fn reprs() -> Vec<Repr> {
        let printer = Printer::builtin(Personality::V1_20, "", "v1", "pods").unwrap();
        vec![
            Repr::Json,
            Repr::Metadata(MetaVersion::V1),
            Repr::Table(TableSpec::new(MetaVersion::V1, Include::Metadata, printer)),
            Repr::Protobuf(None),
            Repr::Protobuf(Some(MetaVersion::V1)),
        ]
    }

    /// What a client reads of a streamed list, whether it was gzipped, and
    /// the length it was told beforehand.
    async fn read(s: Streamed) -> (Vec<u8>, bool, Option<u64>) {
        match s {
            Streamed::Whole(f) => (f.bytes.to_vec(), f.gzipped, Some(f.bytes.len() as u64)),
            Streamed::Stream { body, gzipped } => {
                let told = http_body::Body::size_hint(&body).exact();
                (
                    body.collect().await.unwrap().to_bytes().to_vec(),
                    gzipped,
                    told,
                )
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_streamed_list_is_the_finished_whole_list_byte_for_byte() {
        let c = codec();
        let meta = ListMeta {
            resource_version: 7,
            ..Default::default()
        };
        // Under a chunk, over one but under gzip's threshold, over it.
        for n in [0, 3, 40, 400] {
            let items = pods(&c, n);
            for (repr, layout, gzip) in reprs().into_iter().flat_map(|r| {
                let layouts = if r.is_protobuf() {
                    vec![Layout::Compact]
                } else {
                    vec![Layout::Compact, Layout::Indented { raw_data: false }]
                };
                layouts
                    .into_iter()
                    .flat_map(move |l| [(r.clone(), l, false), (r.clone(), l, true)])
            }) {
                {
                    let out = Output { layout, gzip };
                    let whole = repr.list(&c, &meta, &items).unwrap();
                    let want = Finished::make(whole, out).await.unwrap();
                    let mut list = repr
                        .list_body(c.clone(), &meta, Source::Vec(items.clone()))
                        .unwrap();
                    if layout != Layout::Compact {
                        list = list.indented(false).unwrap();
                    }
                    let exact = list.exact_len();
                    let (got, gzipped, told) = read(stream(list, out, ()).await.unwrap()).await;
                    assert_eq!(gzipped, want.gzipped, "{repr:?} of {n}, gzip {gzip}");
                    assert!(
                        got == want.bytes[..],
                        "{repr:?} of {n}, gzip {gzip}: bytes differ"
                    );
                    if !gzipped && exact.is_some() {
                        assert_eq!(told, Some(got.len() as u64), "{repr:?} of {n}: its length");
                    }
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_list_over_a_chunk_streams_and_one_under_goes_whole() {
        let c = codec();
        let meta = ListMeta::default();
        let out = Output::default();
        let small = Repr::Json
            .list_body(c.clone(), &meta, Source::Vec(pods(&c, 3)))
            .unwrap();
        assert!(matches!(
            stream(small, out, ()).await.unwrap(),
            Streamed::Whole(_)
        ));
        let big = Repr::Json
            .list_body(c.clone(), &meta, Source::Vec(pods(&c, 200)))
            .unwrap();
        assert!(big.exact_len().unwrap() > CHUNK);
        assert!(matches!(
            stream(big, out, ()).await.unwrap(),
            Streamed::Stream { .. }
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_a_stream_holds_is_let_go_when_the_client_leaves() {
        let c = codec();
        let held = Arc::new(());
        let list = Repr::Json
            .list_body(
                c.clone(),
                &ListMeta::default(),
                Source::Vec(pods(&c, 2_000)),
            )
            .unwrap();
        let Streamed::Stream { mut body, .. } =
            stream(list, Output::default(), held.clone()).await.unwrap()
        else {
            panic!("2,000 pods fit in a chunk");
        };
        // One chunk read, then the client is gone.
        body.frame().await.unwrap().unwrap();
        drop(body);
        for _ in 0..100 {
            if Arc::strong_count(&held) == 1 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the stream still holds its room after its client left");
    }
}
