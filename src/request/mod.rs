//! Turning an HTTP request into a typed Kubernetes request: the resource path
//! (group, version, namespace, resource, name, subresource, verb) and the list
//! options with the apiserver's validation. Nothing here decides where a
//! request is served; `serve::route` does.

pub mod accept;
pub mod continue_token;
pub mod encoding;
pub mod options;
pub mod path;
pub mod verb;

pub use continue_token::ContinueToken;
pub use encoding::accepts_gzip;
pub use options::{ListOptions, ReadMode};
pub use path::ResourcePath;
pub use verb::Verb;
