//! Metadata-only representations: PartialObjectMetadata for gets and watch
//! events, PartialObjectMetadataList for lists, as the apiserver's
//! `asPartialObjectMetadata[List]` builds them, from the metadata bytes
//! each entry's codec keeps (`codec::metadata`).

use super::list_meta::ListMeta;
use super::style::ListStyle;
use crate::request::accept::MetaVersion;
use bytes::{BufMut, Bytes};

/// What [`put_partial`] writes besides the metadata (the longest
/// apiVersion, `meta.k8s.io/v1beta1`, included).
pub(crate) const PARTIAL: usize = 79;

/// A PartialObjectMetadata appended to a body being built.
pub(crate) fn put_partial(b: &mut Vec<u8>, v: MetaVersion, meta: &[u8]) {
    b.put_slice(b"{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"");
    b.put_slice(v.api_version().as_bytes());
    b.put_slice(b"\",\"metadata\":");
    b.put_slice(meta);
    b.put_u8(b'}');
}

/// A PartialObjectMetadata with the given metadata bytes.
pub fn partial_object(v: MetaVersion, meta: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(meta.len() + 80);
    put_partial(&mut b, v, meta);
    Bytes::from(b)
}

/// A get's body: the PartialObjectMetadata and a newline.
pub fn partial_body(v: MetaVersion, meta: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(meta.len() + 81);
    put_partial(&mut b, v, meta);
    b.put_u8(b'\n');
    Bytes::from(b)
}

/// A PartialObjectMetadataList's bytes before its items: list metadata in
/// `ListMeta` order whatever the resource, and `null` items when there
/// are none (`empty`: the items are then in [`partial_list_tail`]), as
/// v1.20 writes. Its items are [`put_partial`]s, comma-separated.
pub(crate) fn partial_list_head(v: MetaVersion, meta: &ListMeta, empty: bool) -> Vec<u8> {
    let list_meta = meta.to_json(ListStyle::Typed);
    let mut b = Vec::with_capacity(list_meta.len() + 96);
    b.put_slice(b"{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"");
    b.put_slice(v.api_version().as_bytes());
    b.put_slice(b"\",\"metadata\":");
    b.put_slice(list_meta.as_bytes());
    if !empty {
        b.put_slice(b",\"items\":[");
    }
    b
}

/// A PartialObjectMetadataList's bytes after its items.
pub(crate) fn partial_list_tail(empty: bool) -> &'static [u8] {
    if empty {
        b",\"items\":null}\n"
    } else {
        b"]}\n"
    }
}
