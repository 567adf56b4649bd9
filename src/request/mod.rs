//! Turning an HTTP request into a typed Kubernetes request, once
//! (`parse::Request`): the resource path (group, version, namespace,
//! resource, name, subresource), the verb, the list options with the
//! apiserver's validation, the Accept header's clauses, a WebSocket
//! request's subprotocols and the bearer token among them, and the identity
//! slot. Nothing here decides where a request is served; `serve::route`
//! does.

pub mod accept;
pub mod continue_token;
pub mod encoding;
pub mod identity;
pub mod impersonation;
pub mod options;
pub mod parse;
pub mod path;
pub mod verb;
pub mod websocket;

pub use continue_token::ContinueToken;
pub use encoding::{accepts_gzip, takes_gzip_watch, WATCH_ENCODING};
pub use identity::{Client, Identity, UserInfo, Via};
pub use impersonation::Impersonation;
pub use options::{ListOptions, ReadMode};
pub use parse::Request;
pub use path::{ResourcePath, Shape};
pub use verb::Verb;
pub use websocket::WebSocket;
