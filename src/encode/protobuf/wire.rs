//! Protobuf fields as bytes (prost's encoding primitives).

use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};

pub fn varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    encode_key(number, WireType::Varint, out);
    encode_varint(v, out);
}

pub fn fixed64_field(out: &mut Vec<u8>, number: u32, v: u64) {
    encode_key(number, WireType::SixtyFourBit, out);
    out.extend_from_slice(&v.to_le_bytes());
}

/// A length-delimited field: a string, bytes or an embedded message.
pub fn len_field(out: &mut Vec<u8>, number: u32, b: &[u8]) {
    len_head(out, number, b.len());
    out.extend_from_slice(b);
}

/// A length-delimited field's tag and length, its `len` bytes to follow.
pub fn len_head(out: &mut Vec<u8>, number: u32, len: usize) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

/// The bytes `len_head` writes.
pub fn len_head_len(number: u32, len: usize) -> usize {
    encoded_len_varint(u64::from(number << 3)) + encoded_len_varint(len as u64)
}
