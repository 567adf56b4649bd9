//! A body finished as it goes out: laid out (compact or indented) and, for a
//! client that accepts it, gzipped — the heavy cases off the async workers.

use super::compress;
use crate::encode::pretty::Layout;
use crate::encode::recycle::NoMemory;
use bytes::Bytes;

/// Finishing a body failed.
#[derive(Debug, thiserror::Error)]
pub enum FinishError {
    /// The blocking task that laid it out or compressed it did not
    /// complete (it panicked, or the runtime is shutting down).
    #[error("finishing the response")]
    Task(#[source] tokio::task::JoinError),
    /// Its indented or compressed form needed memory the allocator refused.
    #[error("finishing the response")]
    NoMemory(#[source] NoMemory),
}

/// What a body is finished into besides its representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Output {
    pub layout: Layout,
    /// The client accepts gzip (bodies over the threshold are compressed).
    pub gzip: bool,
}

/// A response body as it goes out.
#[derive(Debug, Clone)]
pub struct Finished {
    pub bytes: Bytes,
    pub gzipped: bool,
}

impl Finished {
    /// `body` laid out and compressed as `out` asks; the heavy work (a big
    /// body to indent or compress) off the async workers.
    pub async fn make(body: Bytes, out: Output) -> Result<Finished, FinishError> {
        let heavy = body.len() > compress::THRESHOLD
            && (out.gzip || matches!(out.layout, Layout::Indented { .. }));
        let work = move || {
            let b = out.layout.apply(body).map_err(FinishError::NoMemory)?;
            Ok(if out.gzip && b.len() > compress::THRESHOLD {
                Finished {
                    bytes: compress::gzip(&b).map_err(FinishError::NoMemory)?,
                    gzipped: true,
                }
            } else {
                Finished {
                    bytes: b,
                    gzipped: false,
                }
            })
        };
        if !heavy {
            return work();
        }
        tokio::task::spawn_blocking(work)
            .await
            .map_err(FinishError::Task)?
    }
}
