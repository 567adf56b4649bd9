//! What a server answering as an apiserver builds on — the simulator
//! (`kubecache-sim`) is one — and all of `serve` it may use: serving HTTP
//! as kubecache's listener does, watch streams as an apiserver's cacher
//! sends them (over HTTP and WebSocket), and responses and errors written
//! as the apiserver writes them. The rest of `serve` is kubecache's own
//! front (routing, authorization, the cache's reads) and changes without
//! notice; the codecs a server needs are `encode`'s, the store `store`'s.
//! (`tests/layers.rs` holds the simulator to this surface.)

/// Accepting connections (HTTP/1.1 and h2, optional TLS) and draining
/// them on shutdown.
pub use crate::serve::listener::serve_http;

/// Answers with the apiserver's headers, and errors as its
/// ErrorNegotiated writes them.
pub mod respond {
    pub use crate::serve::respond::{
        json_response, negotiated_error, status_response, typed_response,
    };
}

/// A watch from a store: where it starts, what it selects, when its
/// bookmarks go out (a cacher's timer), and its ERROR events.
pub mod watch {
    pub use crate::serve::watch::{
        error_response, serve, timeout, BookmarkTimer, Schedule, Selection, Start, WatchSpec,
    };
}

/// A watch answered over WebSocket, as the apiserver's wsstream serves it.
pub mod websocket {
    pub use crate::serve::websocket::answer_watch;
}

/// A store read's errors (written as the apiserver's `Status`), and how
/// long a read at a newer resourceVersion waits, as the cacher waits.
pub mod read {
    pub use crate::serve::read::{ReadError, FRESHNESS_WAIT};
}
