//! The representation a read is answered in — JSON, metadata only, a
//! Table, protobuf — and how each writes one object, a list, a bookmark
//! and a watch event from cached entries.

use super::codec::{Entry, TypeCodec};
use super::recycle::NoMemory;
use super::table::TableSpec;
use super::{bookmark, json, meta, protobuf};
use crate::request::accept::MetaVersion;
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
    Table(TableSpec),
    /// Kubernetes protobuf: the objects, or with a version their
    /// PartialObjectMetadata.
    Protobuf(Option<MetaVersion>),
}

/// An object the representation cannot hold: protobuf of an object with a
/// field its codec's schema lacks (a newer upstream's), or of a codec whose
/// release's protobuf kubecache does not write; a Table row the release's
/// printer fails on (`RowBuilder::fail`).
#[derive(Debug, thiserror::Error)]
#[error("the object cannot be written in the representation asked for: its release has no protobuf message or Table row for it")]
pub struct Unencodable;

/// Why a list's body could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error(transparent)]
    Unencodable(#[from] Unencodable),
    /// The allocator refused the memory for it.
    #[error(transparent)]
    NoMemory(#[from] NoMemory),
}

impl From<protobuf::TranscodeError> for ListError {
    fn from(e: protobuf::TranscodeError) -> Self {
        ListError::Unencodable(e.into())
    }
}

impl From<protobuf::TranscodeError> for Unencodable {
    fn from(_: protobuf::TranscodeError) -> Self {
        Unencodable
    }
}

impl Repr {
    /// One object in this representation, self-describing: a watch
    /// event's object (a Table's column definitions come with a watch's
    /// first event only).
    pub fn object(&self, codec: &TypeCodec, e: &Entry) -> Result<Bytes, Unencodable> {
        Ok(match self {
            Repr::Json => codec.object_bytes(e),
            Repr::Metadata(v) => meta::partial_object(*v, e.meta()),
            Repr::Table(t) if !t.prints(e) => return Err(Unencodable),
            Repr::Table(t) => t.object(codec, e, true),
            Repr::Protobuf(None) => {
                let m = codec.protobuf_message(e).ok_or(Unencodable)?;
                protobuf::envelope(&codec.api_version, &codec.kind, m).into()
            }
            Repr::Protobuf(Some(v)) => {
                let schema = codec.protobuf_schema().ok_or(Unencodable)?;
                let m = protobuf::partial_message_in(schema, e.meta())?;
                protobuf::envelope(v.api_version(), "PartialObjectMetadata", &m).into()
            }
        })
    }

    /// A get's body: the object (JSON with a newline).
    pub fn body(&self, codec: &TypeCodec, e: &Entry) -> Result<Bytes, Unencodable> {
        Ok(match self {
            Repr::Json => json::object(codec, e),
            Repr::Metadata(v) => meta::partial_body(*v, e.meta()),
            Repr::Table(t) if !t.prints(e) => return Err(Unencodable),
            Repr::Table(t) => {
                let mut b = BytesMut::from(&t.object(codec, e, false)[..]);
                b.put_u8(b'\n');
                b.freeze()
            }
            Repr::Protobuf(_) => self.object(codec, e)?,
        })
    }

    /// Whether every one of `items` can be written in this representation:
    /// protobuf needs a message for each (a metadata one is a part of it),
    /// a Table a row the release's printer does not fail on.
    pub fn holds<'a>(
        &self,
        codec: &TypeCodec,
        items: impl IntoIterator<Item = &'a Arc<Entry>>,
    ) -> bool {
        match self {
            Repr::Protobuf(_) => items
                .into_iter()
                .all(|e| codec.protobuf_message(e).is_some()),
            Repr::Table(t) if t.fallible() => items.into_iter().all(|e| t.prints(e)),
            _ => true,
        }
    }

    pub fn is_protobuf(&self) -> bool {
        matches!(self, Repr::Protobuf(_))
    }

    /// Whether some items may not be writable (`holds`): they are then
    /// checked before a body's first byte.
    pub fn may_not_hold(&self) -> bool {
        match self {
            Repr::Protobuf(_) => true,
            Repr::Table(t) => t.fallible(),
            _ => false,
        }
    }

    /// A bookmark's object in this representation.
    pub fn bookmark(
        &self,
        codec: &TypeCodec,
        rv: u64,
        initial_events_end: bool,
    ) -> Result<Bytes, Unencodable> {
        Ok(match self {
            Repr::Json => bookmark::object(codec, rv, initial_events_end),
            Repr::Metadata(v) => {
                let m = bookmark::object_meta(rv, initial_events_end, codec.personality);
                meta::partial_object(*v, m.as_bytes())
            }
            Repr::Table(t) => t.bookmark(codec, rv, initial_events_end),
            Repr::Protobuf(None) => {
                let schema = codec.protobuf_schema().ok_or(Unencodable)?;
                let obj = bookmark::object(codec, rv, initial_events_end);
                protobuf::object_in(schema, &codec.api_version, &codec.kind, &obj)?.into()
            }
            Repr::Protobuf(Some(v)) => {
                let schema = codec.protobuf_schema().ok_or(Unencodable)?;
                let m = bookmark::object_meta(rv, initial_events_end, codec.personality);
                let m = protobuf::partial_message_in(schema, m.as_bytes())?;
                protobuf::envelope(v.api_version(), "PartialObjectMetadata", &m).into()
            }
        })
    }

    /// A watch event carrying `object` (from [`Repr::object`] or
    /// [`Repr::bookmark`]): a JSON line or a protobuf frame.
    pub fn event(&self, kind: &str, object: &[u8]) -> Bytes {
        match self {
            Repr::Protobuf(_) => protobuf::watch_event(kind, object),
            _ => json::watch_event(kind, object),
        }
    }

    /// The `Content-Type` of a get's or a list's body.
    pub fn content_type(&self) -> &'static str {
        match self {
            Repr::Protobuf(_) => protobuf::CONTENT_TYPE,
            _ => "application/json",
        }
    }

    /// The `Content-Type` of a watch.
    pub fn watch_content_type(&self) -> &'static str {
        match self {
            Repr::Protobuf(_) => protobuf::WATCH_CONTENT_TYPE,
            _ => "application/json",
        }
    }
}
