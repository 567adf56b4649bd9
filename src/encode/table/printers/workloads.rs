//! Ports of printers.go: not yet written.

use super::RowFn;

pub fn lookup(_group: &str, _version: &str, _resource: &str) -> Option<RowFn> {
    None
}
