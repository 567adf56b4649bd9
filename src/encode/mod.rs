//! Turning cached entries into response bodies. Objects are never
//! re-encoded: bodies are spliced from each entry's pre-serialized bytes.

pub mod bookmark;
pub mod json;
pub mod meta;
pub mod pretty;
pub mod protobuf;
pub mod recycle;
pub mod table;

use crate::request::accept::MetaVersion;
use crate::store::{Entry, TypeCodec};
use bytes::{BufMut, Bytes, BytesMut};
use std::sync::Arc;

/// The representation the cache serves a request in, as negotiated.
#[derive(Debug, Clone, Default)]
pub enum Repr {
    /// The objects themselves, as JSON.
    #[default]
    Json,
    /// PartialObjectMetadata (a list: PartialObjectMetadataList).
    Metadata(MetaVersion),
    /// A Table of the objects.
    Table(table::TableSpec),
}

impl Repr {
    /// One object in this representation, self-describing: a watch
    /// event's object (a Table's column definitions come with a watch's
    /// first event only).
    pub fn object(&self, codec: &TypeCodec, e: &Entry) -> Bytes {
        match self {
            Repr::Json => codec.object_bytes(e),
            Repr::Metadata(v) => meta::partial_object(*v, &e.meta),
            Repr::Table(t) => t.object(codec, e, true),
        }
    }

    /// A get's body: the object and a newline.
    pub fn body(&self, codec: &TypeCodec, e: &Entry) -> Bytes {
        match self {
            Repr::Json => json::object(codec, e),
            Repr::Metadata(v) => meta::partial_body(*v, &e.meta),
            Repr::Table(t) => {
                let mut b = BytesMut::from(&t.object(codec, e, false)[..]);
                b.put_u8(b'\n');
                b.freeze()
            }
        }
    }

    /// A list's body.
    pub fn list(&self, codec: &TypeCodec, m: &json::ListMeta, items: &[Arc<Entry>]) -> Bytes {
        match self {
            Repr::Json => json::list(codec, m, items),
            Repr::Metadata(v) => meta::partial_list(*v, m, items),
            Repr::Table(t) => t.list(codec, m, items),
        }
    }

    /// A bookmark's object in this representation.
    pub fn bookmark(&self, codec: &TypeCodec, rv: u64, initial_events_end: bool) -> Bytes {
        match self {
            Repr::Json => bookmark::object(codec, rv, initial_events_end),
            Repr::Metadata(v) => {
                let m = bookmark::object_meta(rv, initial_events_end);
                meta::partial_object(*v, m.as_bytes())
            }
            Repr::Table(t) => t.bookmark(codec, rv, initial_events_end),
        }
    }
}
