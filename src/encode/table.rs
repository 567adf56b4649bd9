//! Tables (`as=Table;g=meta.k8s.io;v=v1[beta1]`): column definitions, one
//! row of cells per object, and the object itself as `includeObject` asks,
//! as the apiserver's table convertors build them. A row is printed once
//! per object version (`encode::print`) and kept beside its entry.

use super::codec::{Entry, ListStyle, TypeCodec};
use super::list_meta::ListMeta;
use super::meta::put_partial;
use super::print::{Printer, Row};
use super::recycle::{self, NoMemory};
use crate::go::time::{self, Nanos};
use crate::request::accept::MetaVersion;
use bytes::{BufMut, Bytes};
use serde_json::Value;
use std::sync::Arc;

/// `includeObject`: what each row carries besides its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Include {
    None,
    /// The default: the object's PartialObjectMetadata.
    #[default]
    Metadata,
    Object,
}

impl Include {
    /// The query parameter's value, if `ValidateTableOptions` accepts it
    /// (the apiserver's 400 for others is left to it).
    pub fn parse(v: Option<&str>) -> Option<Include> {
        match v.unwrap_or("") {
            "" | "Metadata" => Some(Include::Metadata),
            "None" => Some(Include::None),
            "Object" => Some(Include::Object),
            _ => None,
        }
    }
}

/// A cached row, from either of an entry's slots.
enum RowRef<'e> {
    Borrowed(&'e Row),
    Shared(Arc<Row>),
}

impl std::ops::Deref for RowRef<'_> {
    type Target = Row;
    fn deref(&self) -> &Row {
        match self {
            RowRef::Borrowed(r) => r,
            RowRef::Shared(r) => r,
        }
    }
}

/// A row's bytes besides its cells and object: `{"cells":[…],"object":}`
/// and a comma, with room to spare; also the first guess at its cells.
const ROW: usize = 200;

/// A Table request: its version, what rows carry, and the printer.
pub struct TableSpec {
    pub version: MetaVersion,
    pub include: Include,
    pub printer: Arc<Printer>,
    /// A watch's first Table carries the column definitions, later ones
    /// do not (the apiserver sets `noHeaders` after its first event),
    /// unless the printer ignores that.
    headers_sent: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for TableSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableSpec")
            .field("version", &self.version)
            .field("include", &self.include)
            .finish_non_exhaustive()
    }
}

impl Clone for TableSpec {
    fn clone(&self) -> Self {
        TableSpec {
            version: self.version,
            include: self.include,
            printer: self.printer.clone(),
            headers_sent: std::sync::atomic::AtomicBool::new(
                self.headers_sent.load(std::sync::atomic::Ordering::Relaxed),
            ),
        }
    }
}

impl TableSpec {
    pub fn new(version: MetaVersion, include: Include, printer: Arc<Printer>) -> Self {
        TableSpec {
            version,
            include,
            printer,
            headers_sent: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// What printed the rows (rows of another printer differ).
    pub fn printer_id(&self) -> u64 {
        self.printer.id()
    }

    /// Whether some rows may be unprintable: a Table's rows are then
    /// printed (and kept) before its first byte is written (`prints`).
    pub fn fallible(&self) -> bool {
        self.printer.fallible()
    }

    /// Whether the release's printer prints `e`: an apiserver whose printer
    /// fails on an object fails every Table holding it.
    pub fn prints(&self, e: &Entry) -> bool {
        self.row(e).printable()
    }

    /// The row of an entry: printed once per printer. The first printer's
    /// row lives in a lock-free slot; a custom resource whose columns
    /// changed since keeps its row under the newer printer in a second one.
    fn row<'e>(&self, e: &'e Entry) -> RowRef<'e> {
        let id = self.printer.id();
        let later = e.memo.later();
        let (at, row) = later
            .table_row
            .get_or_init(|| (id, self.printer.row(&e.item)));
        if *at == id {
            return RowRef::Borrowed(row);
        }
        let mut later = later
            .table_row_reprinted
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match &*later {
            Some((at, row)) if *at == id => RowRef::Shared(row.clone()),
            _ => {
                let row = Arc::new(self.printer.row(&e.item));
                *later = Some((id, row.clone()));
                RowRef::Shared(row)
            }
        }
    }

    fn put_head(&self, b: &mut Vec<u8>, meta: &str, headers: bool) {
        b.put_slice(b"{\"kind\":\"Table\",\"apiVersion\":\"");
        b.put_slice(self.version.api_version().as_bytes());
        b.put_slice(b"\",\"metadata\":");
        b.put_slice(meta.as_bytes());
        b.put_slice(b",\"columnDefinitions\":");
        if headers {
            b.put_slice(self.printer.columns());
        } else {
            b.put_slice(b"null");
        }
        b.put_slice(b",\"rows\":");
    }

    /// One row: its cells, then its object written by `object` unless
    /// `includeObject=None`.
    fn put_row(&self, b: &mut Vec<u8>, row: &Row, object: impl FnOnce(&mut Vec<u8>), now: Nanos) {
        // Its Table is the upstream's to answer (`prints`, `Repr::holds`):
        // every path checks before writing.
        debug_assert!(row.printable(), "an unprintable row written");
        b.put_u8(b'{');
        row.put(b, now);
        b.put_slice(b",\"object\":");
        match self.include {
            Include::None => b.put_slice(b"null"),
            Include::Metadata | Include::Object => object(b),
        }
        b.put_u8(b'}');
    }

    /// An entry as its row carries it: the object, or its metadata.
    fn put_row_object(&self, b: &mut Vec<u8>, codec: &TypeCodec, e: &Entry) {
        match self.include {
            Include::Object => codec.put_object(b, e),
            _ => put_partial(b, self.version, e.meta()),
        }
    }

    /// A list as a Table, before and after its rows: the head, whether
    /// rows are written (an empty list of a printer that writes `null`
    /// rows has none), the tail (`encode::list_body` writes the rest).
    pub(crate) fn list_ends(&self, meta: &ListMeta, empty: bool) -> (Vec<u8>, bool, &'static [u8]) {
        let mut head = Vec::with_capacity(4096);
        self.put_head(&mut head, &meta.to_json(ListStyle::Typed), true);
        if empty && self.printer.null_when_empty() {
            return (head, false, b"null}\n");
        }
        head.put_u8(b'[');
        (head, true, b"]}\n")
    }

    /// A guess at the bytes of `items`' rows: a row's cells are not known
    /// before it is printed.
    pub(crate) fn list_guess(&self, items: &[Arc<Entry>]) -> usize {
        items.iter().map(|e| self.row_object_len(e) + ROW).sum()
    }

    fn row_object_len(&self, e: &Entry) -> usize {
        match self.include {
            Include::None => 4,
            Include::Metadata => e.meta().len() + 80,
            Include::Object => e.item.len() + 64,
        }
    }

    /// A list's row of `e`, its ages as of `now`.
    pub(crate) fn put_list_row(
        &self,
        b: &mut Vec<u8>,
        codec: &TypeCodec,
        e: &Entry,
        now: Nanos,
    ) -> Result<(), NoMemory> {
        let row = self.row(e);
        recycle::room(b, self.row_object_len(e) + row.max_len() + ROW)?;
        self.put_row(b, &row, |b| self.put_row_object(b, codec, e), now);
        Ok(())
    }

    /// Whether the printer's list function prints rows in an order of its
    /// own (then every row is read before the first is written).
    pub(crate) fn has_row_order(&self) -> bool {
        self.printer.list_order().is_some()
    }

    /// The order the printer's list function prints `items` in, as their
    /// indices, if not theirs: by the printer's key and then by name.
    pub(crate) fn row_order(&self, items: &[Arc<Entry>]) -> Option<Vec<usize>> {
        let key = self.printer.list_order()?;
        let mut keyed: Vec<(i64, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let obj: Value = serde_json::from_slice(&e.item).unwrap_or(Value::Null);
                (key(&obj), i)
            })
            .collect();
        keyed.sort_by(|(ka, a), (kb, b)| {
            ka.cmp(kb)
                .then_with(|| items[*a].name().cmp(items[*b].name()))
        });
        Some(keyed.into_iter().map(|(_, i)| i).collect())
    }

    /// One object as a one-row Table: a get's body without its newline,
    /// or a watch event's object (headers on the first only).
    pub fn object(&self, codec: &TypeCodec, e: &Entry, watch: bool) -> Bytes {
        let meta = format!("{{\"resourceVersion\":\"{}\"}}", e.rv);
        let row = self.row(e);
        self.one_row(&meta, &row, |b| self.put_row_object(b, codec, e), watch)
    }

    /// A bookmark's object as a Table: the printer's row for the kind's
    /// empty object, which the apiserver prints from the internal type.
    pub fn bookmark(&self, codec: &TypeCodec, rv: u64, initial_events_end: bool) -> Bytes {
        let obj = super::bookmark::object(codec, rv, initial_events_end);
        let row = self.printer.zero_row(&obj);
        let meta = format!("{{\"resourceVersion\":\"{rv}\"}}");
        let object = |b: &mut Vec<u8>| match self.include {
            Include::Object => b.put_slice(&obj),
            _ => {
                let m = super::bookmark::object_meta(rv, initial_events_end, codec.personality);
                put_partial(b, self.version, m.as_bytes())
            }
        };
        self.one_row(&meta, &row, object, true)
    }

    fn one_row(
        &self,
        meta: &str,
        row: &Row,
        object: impl FnOnce(&mut Vec<u8>),
        watch: bool,
    ) -> Bytes {
        let headers = !watch
            || self.printer.headers_always()
            || !self
                .headers_sent
                .swap(true, std::sync::atomic::Ordering::Relaxed);
        let mut b = Vec::with_capacity(4096);
        self.put_head(&mut b, meta, headers);
        b.put_u8(b'[');
        self.put_row(&mut b, row, object, time::now());
        b.put_slice(b"]}");
        Bytes::from(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_printed_once_per_printer_even_after_the_columns_changed() {
        let e = Entry::for_test("w", 1);
        let spec = |id, path| {
            let cols = [serde_json::json!({"name": "N", "type": "string", "jsonPath": path})];
            TableSpec::new(
                MetaVersion::V1,
                Include::None,
                Arc::new(Printer::custom(
                    crate::encode::personality::Personality::V1_20,
                    id,
                    &cols,
                )),
            )
        };
        let (old, new) = (spec(1, ".metadata.name"), spec(2, ".kind"));
        assert!(matches!(old.row(&e), RowRef::Borrowed(_)));
        let (a, b) = (new.row(&e), new.row(&e));
        match (&a, &b) {
            (RowRef::Shared(a), RowRef::Shared(b)) => assert!(Arc::ptr_eq(a, b)),
            _ => panic!("the newer printer's row is kept in the second slot"),
        }
        assert_ne!(a.to_json(0), old.row(&e).to_json(0));
        assert_eq!(old.row(&e).to_json(0), r#""cells":["w","w"]"#);
    }

    #[test]
    fn include_object_accepts_the_apiservers_values_only() {
        assert_eq!(Include::parse(None), Some(Include::Metadata));
        assert_eq!(Include::parse(Some("")), Some(Include::Metadata));
        assert_eq!(Include::parse(Some("None")), Some(Include::None));
        assert_eq!(Include::parse(Some("Object")), Some(Include::Object));
        assert_eq!(Include::parse(Some("none")), None);
        assert_eq!(Include::parse(Some("bad")), None);
    }
}
