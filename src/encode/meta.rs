//! Metadata-only representations: PartialObjectMetadata for gets and watch
//! events, PartialObjectMetadataList for lists, as the apiserver's
//! `asPartialObjectMetadata[List]` builds them, from the metadata bytes
//! each entry's codec keeps (`codec::metadata`).

use super::codec::Entry;
use super::list_meta::ListMeta;
use super::recycle::{self, NoMemory};
use super::style::ListStyle;
use crate::request::accept::MetaVersion;
use bytes::{BufMut, Bytes};
use std::sync::Arc;

/// What [`put_partial`] writes besides the metadata (the longest
/// apiVersion, `meta.k8s.io/v1beta1`, included).
const PARTIAL: usize = 79;

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

/// A PartialObjectMetadataList: list metadata in `ListMeta` order whatever
/// the resource, and `null` items when there are none, as v1.20 writes.
pub fn partial_list(
    v: MetaVersion,
    meta: &ListMeta,
    items: &[Arc<Entry>],
) -> Result<Bytes, NoMemory> {
    let size: usize = items.iter().map(|e| e.meta().len() + PARTIAL).sum();
    let list_meta = meta.to_json(ListStyle::Typed);
    let mut b = recycle::buffer(size + list_meta.len() + 128)?;
    b.put_slice(b"{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"");
    b.put_slice(v.api_version().as_bytes());
    b.put_slice(b"\",\"metadata\":");
    b.put_slice(list_meta.as_bytes());
    if items.is_empty() {
        b.put_slice(b",\"items\":null}\n");
        return Ok(recycle::freeze(b));
    }
    b.put_slice(b",\"items\":[");
    for (i, e) in items.iter().enumerate() {
        recycle::room(&mut b, e.meta().len() + PARTIAL + 1)?;
        if i > 0 {
            b.put_u8(b',');
        }
        put_partial(&mut b, v, e.meta());
    }
    recycle::room(&mut b, 4)?;
    b.put_slice(b"]}\n");
    Ok(recycle::freeze(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_metadata_list_has_null_items() {
        let meta = ListMeta {
            resource_version: 5,
            ..Default::default()
        };
        assert_eq!(
            &partial_list(MetaVersion::V1, &meta, &[]).unwrap()[..],
            b"{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":null}\n"
        );
    }
}
