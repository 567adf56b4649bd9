//! What a codec keeps beside each cached entry: its forms that cost too
//! much to make per request, each made at most once per object version —
//! the `ObjectMeta` bytes (when the object is cached), its Table row and
//! its protobuf message (on first use).

use crate::encode::print::Row;
use bytes::Bytes;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Debug, Default)]
pub struct Memo {
    /// `metadata` as the apiserver encodes an `ObjectMeta`, for
    /// PartialObjectMetadata and Table rows: a slice of the item for
    /// built-in types (re-encoded without the annotations apps/v1 and
    /// autoscaling conversions move into the spec), a re-encoding in
    /// struct order for custom resources (whose maps come with sorted
    /// keys). See `codec::metadata`.
    pub meta: Bytes,
    /// The object's Table row, printed on first use: `(printer id, row)`.
    pub table_row: OnceLock<(u64, Row)>,
    /// The row under a newer printer than the first slot's (a custom
    /// resource's columns changed while the object did not).
    pub table_row_reprinted: Mutex<Option<(u64, Arc<Row>)>>,
    /// The object's protobuf message, transcoded on first use; `None`: it
    /// has none (a field v1.20's message lacks).
    pub protobuf: OnceLock<Option<Box<[u8]>>>,
}

impl Memo {
    /// The memo of an object whose metadata bytes are `meta`.
    pub fn new(meta: Bytes) -> Memo {
        Memo {
            meta,
            ..Memo::default()
        }
    }
}
