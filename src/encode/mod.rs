//! Turning cached entries into response bodies, and upstream objects into
//! cached entries. Objects are never re-encoded per request: bodies are
//! spliced from each entry's pre-serialized bytes and from what its codec
//! keeps beside it.
//!
//! From the bottom up: `style` and `list_meta` (how lists are written),
//! `pruned` (reading an object for a few fields), `recycle` (big bodies'
//! buffers), `protobuf` (the transcoder and envelopes), `print` (Table
//! rows), `codec` (objects to entries and back, and the memos kept beside
//! them), the bodies of each representation (`json`, `meta`, `table`,
//! `bookmark`), `pretty` (the indented layout), `repr`, which picks
//! among them, `list_body` (a list's pieces in any of them, written whole
//! or as the client reads), and `negotiate`, which picks the representation from a
//! request's Accept header. (Watch streams gzipped between kubecaches are
//! the transport's: `upstream::watch_gzip`.)

pub mod bookmark;
pub mod codec;
pub mod json;
pub mod list_body;
pub mod list_meta;
pub mod meta;
pub mod negotiate;
pub mod personality;
pub mod pretty;
pub mod print;
pub mod protobuf;
pub mod pruned;
pub mod recycle;
pub mod repr;
pub mod style;
pub mod table;

pub use repr::{ListError, Repr, Unencodable};
