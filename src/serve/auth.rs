//! Who a request is served as, and whether it may be: the phases between
//! reading a request and deciding it. kubecache has one mode so far —
//! every client is served with kubecache's own upstream identity, as
//! `kubectl proxy` serves them (README, "Known differences and gaps") —
//! so authentication names that identity and authorization allows what it
//! allows, which the upstream decides for forwarded requests and the
//! cache's reflectors had to be allowed to read.

use super::errors::ServeError;
use super::state::ServeState;
use crate::request::{Identity, Request};

/// Fills the request's identity slot.
pub fn authenticate(_state: &ServeState, request: &mut Request) -> Result<(), ServeError> {
    request.identity = Identity::Proxy;
    Ok(())
}

/// Whether the request's identity may do what it asks. A request that
/// reached here without one is refused: nothing is ever read or forwarded
/// for nobody.
pub fn authorize(_state: &ServeState, request: &Request) -> Result<(), ServeError> {
    match request.identity {
        Identity::Proxy => Ok(()),
        Identity::Unauthenticated => Err(ServeError::Unauthenticated),
    }
}
