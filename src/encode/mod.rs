//! Turning cached entries into response bodies. Objects are never
//! re-encoded: bodies are spliced from each entry's pre-serialized bytes.

pub mod bookmark;
pub mod json;
