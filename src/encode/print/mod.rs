//! Printing objects as Table rows, as the apiserver's printers do: the
//! column definitions (`columns`), a port of printers.go per API group
//! (`printers`), custom resources' columns (`jsonpath`), and the row a
//! printer makes — its cells encoded as `encoding/json` writes them, with
//! holes for the time-relative cells ("5m", "<unknown>") that are filled
//! in each time the row is served. The Table bodies the rows go into are
//! `encode::table`'s.

pub mod columns;
pub mod jsonpath;
pub mod printers;
pub mod row;

pub use printers::Printer;
pub use row::{Row, RowBuilder};
