//! Go compatibility: the exact formats and words of the Go standard library
//! that the apiserver's answers carry — how `encoding/json` escapes strings
//! and writes floats, `strconv`'s quoting and parsing, the error words of
//! Go's decoders, `strings.ToLower` and `EqualFold`, `path.Clean`, `net/url`'s
//! request URIs, and time as
//! `metav1.Time` and apimachinery's `HumanDuration` write it. Everything
//! that must read byte for byte as Go writes it comes from here; nothing
//! here knows about Kubernetes objects.

pub mod base64;
pub mod convert;
pub mod fmt;
pub mod json;
pub mod path;
pub mod sort;
pub mod strconv;
pub mod strings;
pub mod time;
pub mod url;
