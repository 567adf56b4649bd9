//! What a codec keeps beside each cached entry: its forms that cost too
//! much to make per request, each made at most once per object version —
//! the `ObjectMeta` bytes (when the object is cached), its Table row and
//! its protobuf message (on first use).
//!
//! Kept small, as most objects are never printed or transcoded: 24 bytes
//! beside each entry until they are (112 when every slot was inline; with
//! the packed labels, 50,000 configmaps of 730 bytes took 1.85× their
//! JSON before and 1.62× after, `benches/memory.rs`).

use crate::encode::print::Row;
use once_cell::race::OnceBox;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Debug, Default)]
pub struct Memo {
    /// `metadata` as the apiserver encodes an `ObjectMeta`, for
    /// PartialObjectMetadata and Table rows: a slice of the item for
    /// built-in types (re-encoded without the annotations apps/v1 and
    /// autoscaling conversions move into the spec), a re-encoding in
    /// struct order for custom resources (whose maps come with sorted
    /// keys). See `codec::metadata`.
    meta: MetaBytes,
    /// The forms made on first use, allocated then.
    later: OnceBox<Later>,
}

/// Where an entry's metadata bytes are.
#[derive(Debug)]
enum MetaBytes {
    /// The item's own bytes at `start..start + len`: no copy.
    InItem {
        start: u32,
        len: u32,
    },
    Own(Box<[u8]>),
}

impl Default for MetaBytes {
    fn default() -> Self {
        MetaBytes::InItem { start: 0, len: 0 }
    }
}

/// The forms of an object made on first use.
#[derive(Debug, Default)]
pub struct Later {
    /// The object's Table row: `(printer id, row)`.
    pub table_row: OnceLock<(u64, Row)>,
    /// The row under a newer printer than the first slot's (a custom
    /// resource's columns changed while the object did not).
    pub table_row_reprinted: Mutex<Option<(u64, Arc<Row>)>>,
    /// The object's protobuf message, with the slot of the schema it was
    /// made with (`Schema::slot`): a codec following another release than
    /// the one the entry was first written for (the upstream upgraded
    /// while the object did not change) makes and keeps its own in the
    /// second cell. Two, not one per schema (17, 408 bytes), as an object
    /// outlives at most one upgrade unchanged in practice; a third
    /// release finds both taken (`Later::protobuf`). `None`: it has none
    /// (a field the schema's message lacks).
    protobuf: [OnceLock<Tagged>; 2],
}

/// A protobuf message (or the lack of one) and its schema's slot.
type Tagged = (u8, Option<Box<[u8]>>);

impl Later {
    /// The message kept for schema `slot`, made by `make` if none is and
    /// a cell is free. `None`: the schema's messages cannot hold the
    /// object, or both cells hold other schemas' messages — either way
    /// the object is not written here (it is read upstream), never
    /// written with another release's message.
    pub fn protobuf(&self, slot: u8, make: impl FnOnce() -> Option<Box<[u8]>>) -> Option<&[u8]> {
        let mut make = Some(make);
        for cell in &self.protobuf {
            // A cell another release's codec fills meanwhile is passed
            // by; `make` runs at most once, for the cell it fills.
            let (kept, message) = cell.get_or_init(|| (slot, make.take().and_then(|f| f())));
            if *kept == slot {
                return message.as_deref();
            }
        }
        None
    }
}

impl Memo {
    /// The memo of an object whose metadata is the item's bytes at `range`.
    pub fn in_item(range: std::ops::Range<usize>) -> Memo {
        Memo {
            meta: match (u32::try_from(range.start), u32::try_from(range.len())) {
                (Ok(start), Ok(len)) => MetaBytes::InItem { start, len },
                // Past 4 GiB no item is cached anyway (the body limits).
                _ => MetaBytes::InItem { start: 0, len: 0 },
            },
            ..Memo::default()
        }
    }

    /// The memo of an object whose metadata bytes are `meta`, its own.
    pub fn owned(meta: &[u8]) -> Memo {
        Memo {
            meta: MetaBytes::Own(meta.into()),
            ..Memo::default()
        }
    }

    /// The forms made on first use (their slots, allocated now if not yet).
    pub fn later(&self) -> &Later {
        // Two first uses at once may both make one; the loser's is dropped.
        self.later.get_or_init(Box::default)
    }
}

impl crate::store::Entry<Memo> {
    /// The object's `ObjectMeta` bytes, as the apiserver encodes them.
    pub fn meta(&self) -> &[u8] {
        match &self.memo.meta {
            MetaBytes::InItem { start, len } => {
                let (start, len) = (*start as usize, *len as usize);
                self.item.get(start..start + len).unwrap_or_default()
            }
            MetaBytes::Own(b) => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_keeps_the_messages_of_two_releases_and_writes_no_third() {
        let later = Later::default();
        let made = std::cell::Cell::new(0);
        let make = |m: &'static [u8]| {
            made.set(made.get() + 1);
            Some(Box::from(m))
        };
        assert_eq!(later.protobuf(7, || make(b"v1.27")), Some(&b"v1.27"[..]));
        assert_eq!(later.protobuf(7, || make(b"again")), Some(&b"v1.27"[..]));
        assert_eq!(later.protobuf(1, || make(b"v1.36")), Some(&b"v1.36"[..]));
        assert_eq!(made.get(), 2);
        // A third release's codec finds no cell: nothing is written with
        // another release's message.
        assert_eq!(later.protobuf(2, || make(b"v1.33")), None);
        assert_eq!(later.protobuf(7, || None), Some(&b"v1.27"[..]));
        // An object a schema cannot hold keeps its cell, so it is not
        // transcoded again.
        let later = Later::default();
        assert_eq!(later.protobuf(3, || None), None);
        assert_eq!(later.protobuf(3, || make(b"never")), None);
        assert_eq!(made.get(), 2);
    }

    #[test]
    fn the_forms_made_on_first_use_take_less_than_before_the_releases_were_many() {
        // Six cells of 24 bytes before; two of 32 now.
        assert!(
            std::mem::size_of::<Later>() <= 160,
            "{}",
            std::mem::size_of::<Later>()
        );
    }

    #[test]
    fn a_memo_holds_no_more_than_three_words_until_a_form_is_made() {
        assert!(
            std::mem::size_of::<Memo>() <= 24,
            "{}",
            std::mem::size_of::<Memo>()
        );
    }

    #[test]
    fn a_cached_entry_with_its_refcounts_fits_a_144_byte_allocation() {
        // glibc rounds a request plus its 8-byte header up to 16: the
        // Arc's two counts and an entry of 120 bytes take 144.
        let size = std::mem::size_of::<crate::store::Entry<Memo>>();
        assert!(size + 16 + 8 <= 144, "{size}");
    }
}
