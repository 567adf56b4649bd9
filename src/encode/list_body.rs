//! A list's body as its pieces — what comes before the items, each item
//! with its separator, what comes after — in every representation (JSON,
//! metadata only, Table, protobuf), written whole ([`ListBody::whole`]) or
//! a chunk at a time as the client reads it ([`ListBody::fill`], driven by
//! `cache::bodies::stream`). Both write the same pieces in the same order,
//! so a streamed body is the whole one's bytes by construction; holding a
//! list being written costs its items' pointers and one chunk, not its
//! body — or, its items walked from a snapshot as they are written
//! ([`Source::Walk`]), not even their pointers: its first byte waits for
//! nothing but its first item.

use super::codec::{Entry, TypeCodec};
use super::list_meta::ListMeta;
use super::pretty::{self, ListItems};
use super::recycle::{self, NoMemory};
use super::repr::{ListError, Repr, Unencodable};
use super::table::TableSpec;
use super::{json, meta, protobuf};
use crate::go::time::{self, Nanos};
use crate::request::accept::MetaVersion;
use std::borrow::Cow;
use std::ops::Deref;
use std::sync::Arc;

/// Where a list's items come from, in key order.
pub enum Source<'a> {
    /// Read already (a page): its length is known before it is written.
    Slice(&'a [Arc<Entry>]),
    Vec(Vec<Arc<Entry>>),
    /// Walked as they are written (`store::page::Walk`). Protobuf, whose
    /// envelope states its length first, and Tables printed in an order
    /// of their own read them all first.
    Walk(Box<dyn Iterator<Item = Arc<Entry>> + Send + 'a>),
}

/// The items still to write: a slice's borrowed (a list written whole
/// from a page clones no pointer), others owned.
enum Iter<'a> {
    Slice(std::slice::Iter<'a, Arc<Entry>>),
    Owned(Box<dyn Iterator<Item = Arc<Entry>> + Send + 'a>),
}

/// An item being written.
enum Item<'a> {
    Borrowed(&'a Arc<Entry>),
    Owned(Arc<Entry>),
}

impl Deref for Item<'_> {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        match self {
            Item::Borrowed(e) => e,
            Item::Owned(e) => e,
        }
    }
}

impl<'a> Iter<'a> {
    fn next(&mut self) -> Option<Item<'a>> {
        match self {
            Iter::Slice(it) => it.next().map(Item::Borrowed),
            Iter::Owned(it) => it.next().map(Item::Owned),
        }
    }

    fn empty() -> Self {
        Iter::Owned(Box::new(std::iter::empty()))
    }
}

/// How each item is written.
enum Items {
    Json,
    Metadata(MetaVersion),
    Table {
        spec: TableSpec,
        /// One time for every row's ages.
        now: Nanos,
    },
    /// Each item's kept message.
    Protobuf,
    /// Each item's PartialObjectMetadata message, made as it is written
    /// (its length was made once before, for the envelope's head).
    ProtobufPartial(&'static protobuf::Schema),
}

/// What is written next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Head,
    Items { first: bool },
    Tail,
    Done,
}

/// A list being written: see the module's doc. `C` holds the codec.
pub struct ListBody<'a, C> {
    codec: C,
    items: Iter<'a>,
    how: Items,
    head: Vec<u8>,
    tail: Vec<u8>,
    stage: Stage,
    /// The body's length, when known before it is written.
    exact: Option<usize>,
    /// Its length as guessed beforehand, when not (0: no guess).
    guess: usize,
    /// Laid out indented (`Layout::Indented`): each item is written
    /// compact into `scratch`, then indented.
    indented: Option<Indented>,
    scratch: Vec<u8>,
    /// An item read ahead (to tell an empty list), written next.
    peeked: Option<Item<'a>>,
}

/// How an indented list's items are laid out.
struct Indented {
    raw_data: bool,
    items: ListItems,
    /// The spaces each item starts at.
    spaces: usize,
}

impl Repr {
    /// The pieces of a list of `items` in this representation, or
    /// [`Unencodable`] (protobuf without a message for one of them).
    pub fn list_body<'a, C>(
        &self,
        codec: C,
        meta: &ListMeta,
        items: Source<'a>,
    ) -> Result<ListBody<'a, C>, ListError>
    where
        C: Deref<Target = TypeCodec>,
    {
        // Protobuf states its length first, and a Table printed in an order
        // of its own sorts them: both read every item first.
        let read_all = match self {
            Repr::Protobuf(_) => true,
            Repr::Table(spec) => spec.has_row_order(),
            _ => false,
        };
        let items = match items {
            Source::Walk(w) if read_all => Source::Vec(w.collect()),
            other => other,
        };
        let (kept, walk): (Option<Cow<'a, [Arc<Entry>]>>, _) = match items {
            Source::Slice(s) => (Some(Cow::Borrowed(s)), None),
            Source::Vec(v) => (Some(Cow::Owned(v)), None),
            Source::Walk(mut w) => {
                let first = w.next();
                (None, Some((first, w)))
            }
        };
        // The items when read already; whether there are none, to write an
        // empty list as it is written (`null` items for some).
        let known: Option<&[Arc<Entry>]> = kept.as_deref();
        let empty = match (&known, &walk) {
            (Some(all), _) => all.is_empty(),
            (None, Some((first, _))) => first.is_none(),
            (None, None) => true,
        };
        let (how, head, _written, tail, exact, guess) = match self {
            Repr::Json => {
                let (head, tail) = json::list_ends(&codec, meta);
                let len = known.map(|all| json::joined_len(&head, all, &tail));
                (Items::Json, head, true, tail, len, len.unwrap_or(0))
            }
            Repr::Metadata(v) => {
                let head = meta::partial_list_head(*v, meta, empty);
                let tail = meta::partial_list_tail(empty).to_vec();
                let guess = known.map_or(0, |all| {
                    all.iter().map(|e| e.meta().len()).sum::<usize>()
                        + all.len() * meta::PARTIAL
                        + head.len()
                        + tail.len()
                });
                (Items::Metadata(*v), head, !empty, tail, None, guess)
            }
            Repr::Table(spec) => {
                let (head, written, tail) = spec.list_ends(meta, empty);
                let guess = known.map_or(0, |all| spec.list_guess(all) + head.len() + tail.len());
                let how = Items::Table {
                    spec: spec.clone(),
                    now: time::now(),
                };
                (how, head, written, tail.to_vec(), None, guess)
            }
            Repr::Protobuf(None) => {
                let all = known.unwrap_or_default();
                let mut items_len = 0;
                for e in all {
                    let m = codec.protobuf_message(e).ok_or(Unencodable)?;
                    items_len += protobuf::list_item_len(m.len());
                }
                let (v, kind) = (&codec.api_version, &codec.list_kind);
                let head = protobuf::list_head(v, kind, meta, items_len);
                let tail = protobuf::LIST_TAIL.to_vec();
                let len = head.len() + items_len + tail.len();
                (Items::Protobuf, head, true, tail, Some(len), len)
            }
            Repr::Protobuf(Some(v)) => {
                let schema = codec.protobuf_schema().ok_or(Unencodable)?;
                let all = known.unwrap_or_default();
                let mut items_len = 0;
                for e in all {
                    let m = protobuf::partial_message_in(schema, e.meta())?;
                    items_len += protobuf::list_item_len(m.len());
                }
                let kind = "PartialObjectMetadataList";
                let head = protobuf::list_head(v.api_version(), kind, meta, items_len);
                let tail = protobuf::LIST_TAIL.to_vec();
                let len = head.len() + items_len + tail.len();
                let how = Items::ProtobufPartial(schema);
                (how, head, true, tail, Some(len), len)
            }
        };
        let order = match (self, &kept) {
            (Repr::Table(spec), Some(all)) => spec.row_order(all),
            _ => None,
        };
        let items = match (kept, walk) {
            (Some(all), _) if order.is_some() => {
                let ordered: Vec<_> = order
                    .unwrap_or_default()
                    .into_iter()
                    .map(|i| all[i].clone())
                    .collect();
                Iter::Owned(Box::new(ordered.into_iter()))
            }
            (Some(Cow::Borrowed(all)), _) => Iter::Slice(all.iter()),
            (Some(Cow::Owned(all)), _) => Iter::Owned(Box::new(all.into_iter())),
            (None, Some((first, rest))) => Iter::Owned(Box::new(first.into_iter().chain(rest))),
            (None, None) => Iter::empty(),
        };
        Ok(ListBody {
            codec,
            items,
            how,
            head,
            tail,
            stage: Stage::Head,
            exact,
            guess,
            indented: None,
            scratch: Vec::new(),
            peeked: None,
        })
    }

    /// A list's body, whole.
    pub fn list(
        &self,
        codec: &TypeCodec,
        meta: &ListMeta,
        items: &[Arc<Entry>],
    ) -> Result<bytes::Bytes, ListError> {
        // A Table holding an object its printer fails on is the printer's
        // error; protobuf's messages are checked by the callers (`holds`),
        // which also read the page before a streamed body's first byte.
        if matches!(self, Repr::Table(t) if t.fallible()) && !self.holds(codec, items) {
            return Err(Unencodable.into());
        }
        Ok(self.list_body(codec, meta, Source::Slice(items))?.whole()?)
    }
}

impl<'a, C> ListBody<'a, C>
where
    C: Deref<Target = TypeCodec>,
{
    /// The body's length, if known before it is written (JSON of items
    /// read already, and protobuf; a Table's cells, a metadata list's and
    /// walked items' are not).
    pub fn exact_len(&self) -> Option<usize> {
        self.exact
    }

    /// Its length, or a guess at it (0: none).
    pub fn likely_len(&self) -> usize {
        self.exact.unwrap_or(self.guess)
    }

    /// The body without its last byte, a newline: a custom resource's
    /// compact JSON asked for pretty (`Layout::Unindented`).
    pub fn without_newline(mut self) -> Self {
        if self.tail.last() == Some(&b'\n') {
            self.tail.pop();
            self.exact = self.exact.map(|n| n - 1);
            self.guess = self.guess.saturating_sub(1);
        }
        self
    }

    /// The body laid out indented, as `Layout::Indented { raw_data }` lays
    /// out the whole body (the pretty JSON curl, Wget and browsers get).
    pub fn indented(mut self, raw_data: bool) -> Result<Self, NoMemory> {
        if self.indented.is_some() || self.is_protobuf() {
            return Ok(self);
        }
        let items = match self.how {
            Items::Table { .. } => ListItems::Rows,
            _ => ListItems::Objects,
        };
        self.exact = None;
        self.guess = self.guess.saturating_mul(2);
        let first = self.items.next();
        let Some(first) = first else {
            // No items: the head and tail are the whole body.
            let mut doc = std::mem::take(&mut self.head);
            doc.extend_from_slice(&self.tail);
            self.head = pretty::indent(&doc, raw_data)?.to_vec();
            self.tail.clear();
            return Ok(self);
        };
        self.peeked = Some(first);
        let Some(ends) = pretty::indent_list_ends(&self.head, &self.tail, raw_data)? else {
            // The ends of every list kubecache writes read as a list (the
            // tests hold every representation to it); were one not to, the
            // body is laid out whole, as before lists were streamed.
            let mut whole = Vec::new();
            self.fill(&mut whole, usize::MAX)?;
            self.head = pretty::indent(&whole, raw_data)?.to_vec();
            self.tail.clear();
            self.stage = Stage::Head;
            return Ok(self);
        };
        (self.head, self.tail) = (ends.head, ends.tail);
        self.indented = Some(Indented {
            raw_data,
            items,
            spaces: ends.spaces,
        });
        Ok(self)
    }

    fn is_protobuf(&self) -> bool {
        matches!(self.how, Items::Protobuf | Items::ProtobufPartial(_))
    }

    /// Whether a chunk of it is cheap to write (copying kept bytes), or
    /// work (printing rows, transcoding metadata).
    pub fn is_light(&self) -> bool {
        matches!(self.how, Items::Json | Items::Metadata(_) | Items::Protobuf)
    }

    /// Whether every piece has been written.
    pub fn is_done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Writes the next pieces into `out` until it holds `want` bytes or
    /// the body is done (whichever first; the piece that passes `want` is
    /// written whole). Returns whether the body is done.
    pub fn fill(&mut self, out: &mut Vec<u8>, want: usize) -> Result<bool, NoMemory> {
        while out.len() < want {
            match self.stage {
                Stage::Head => {
                    recycle::room(out, self.head.len())?;
                    out.extend_from_slice(&self.head);
                    self.stage = Stage::Items { first: true };
                }
                Stage::Items { first } => match self.peeked.take().or_else(|| self.items.next()) {
                    Some(e) => {
                        self.item_with_separator(&e, first, out)?;
                        self.stage = Stage::Items { first: false };
                    }
                    None => self.stage = Stage::Tail,
                },
                Stage::Tail => {
                    recycle::room(out, self.tail.len())?;
                    out.extend_from_slice(&self.tail);
                    self.stage = Stage::Done;
                }
                Stage::Done => break,
            }
        }
        Ok(self.is_done())
    }

    /// The whole body, in one buffer.
    pub fn whole(mut self) -> Result<bytes::Bytes, NoMemory> {
        let mut b = recycle::buffer(self.likely_len())?;
        self.fill(&mut b, usize::MAX)?;
        Ok(recycle::freeze(b))
    }

    /// An item after its separator (none before the first): a comma, or
    /// in an indented list a comma, a newline and the item's indentation.
    fn item_with_separator(
        &mut self,
        e: &Entry,
        first: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), NoMemory> {
        let Some(ind) = &self.indented else {
            if !first && !self.is_protobuf() {
                recycle::room(out, 1)?;
                out.push(b',');
            }
            return self.item(e, out);
        };
        let (raw_data, items, spaces) = (ind.raw_data, ind.items, ind.spaces);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.item(e, &mut scratch)?;
        if !first {
            recycle::room(out, spaces + 2)?;
            out.extend_from_slice(b",\n");
            out.resize(out.len() + spaces, b' ');
        }
        pretty::indent_item(out, &scratch, raw_data, items, spaces)?;
        self.scratch = scratch;
        Ok(())
    }

    /// An item, compact.
    fn item(&self, e: &Entry, out: &mut Vec<u8>) -> Result<(), NoMemory> {
        match &self.how {
            Items::Json => {
                recycle::room(out, e.item.len())?;
                out.extend_from_slice(&e.item);
            }
            Items::Metadata(v) => {
                recycle::room(out, e.meta().len() + meta::PARTIAL)?;
                meta::put_partial(out, *v, e.meta());
            }
            Items::Table { spec, now } => spec.put_list_row(out, &self.codec, e, *now)?,
            Items::Protobuf => {
                // Checked when the body was made.
                let m = self.codec.protobuf_message(e).unwrap_or_default();
                recycle::room(out, protobuf::list_item_len(m.len()))?;
                protobuf::put_list_item(out, m);
            }
            Items::ProtobufPartial(schema) => {
                // Made once already, for its length: it transcodes.
                let m = protobuf::partial_message_in(schema, e.meta()).unwrap_or_default();
                recycle::room(out, protobuf::list_item_len(m.len()))?;
                protobuf::put_list_item(out, &m);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::personality::Personality;
    use crate::encode::pretty::Layout;
    use crate::encode::print::Printer;
    use crate::encode::style::ListStyle;
    use crate::encode::table::{Include, TableSpec};
    use proptest::prelude::*;

    fn codec() -> TypeCodec {
        TypeCodec::new("", "v1", "Pod", true, ListStyle::Typed)
    }

    fn pods(n: usize) -> Vec<Arc<Entry>> {
        let c = codec();
        (0..n)
            .map(|i| {
                let mut p = crate::fixtures::pod(&format!("ns-{}", i % 3), i);
                p["metadata"]["resourceVersion"] = (10 + i).to_string().into();
                Arc::new(c.from_object(&serde_json::to_vec(&p).unwrap()).unwrap())
            })
            .collect()
    }

    /// Every representation a list is written in.
    fn reprs() -> Vec<Repr> {
        let printer = Printer::builtin(Personality::V1_20, "", "v1", "pods").unwrap();
        vec![
            Repr::Json,
            Repr::Metadata(MetaVersion::V1),
            Repr::Table(TableSpec::new(
                MetaVersion::V1,
                Include::Metadata,
                printer.clone(),
            )),
            Repr::Table(TableSpec::new(
                MetaVersion::V1beta1,
                Include::Object,
                printer,
            )),
            Repr::Protobuf(None),
            Repr::Protobuf(Some(MetaVersion::V1)),
        ]
    }

    fn meta() -> ListMeta {
        ListMeta {
            resource_version: 42,
            continue_token: Some("next".into()),
            remaining_item_count: Some(3),
        }
    }

    /// The body written in pieces of at least the sizes `wants` cycles
    /// through.
    fn in_chunks(body: &mut ListBody<&TypeCodec>, wants: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for want in wants.iter().cycle() {
            let mut chunk = Vec::new();
            let done = body.fill(&mut chunk, *want).unwrap();
            assert!(done || chunk.len() >= *want, "a chunk short of its size");
            out.extend_from_slice(&chunk);
            if done {
                break;
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn a_list_written_a_chunk_at_a_time_is_the_list_written_whole(
            n in 0usize..40,
            wants in proptest::collection::vec(1usize..20_000, 1..6),
        ) {
            let (c, items) = (codec(), pods(n));
            for repr in reprs() {
                let whole = repr.list(&c, &meta(), &items).unwrap();
                let mut body = repr.list_body(&c, &meta(), Source::Slice(&items)).unwrap();
                let streamed = in_chunks(&mut body, &wants);
                prop_assert!(streamed == whole[..], "{repr:?} of {n} differs streamed");
                // Walked as they are written (nothing known beforehand).
                let walk = Source::Walk(Box::new(items.clone().into_iter()));
                let mut body = repr.list_body(&c, &meta(), walk).unwrap();
                let walked = in_chunks(&mut body, &wants);
                prop_assert!(walked == whole[..], "{repr:?} of {n} differs walked");
                if let Some(len) = repr.list_body(&c, &meta(), Source::Slice(&items)).unwrap().exact_len() {
                    prop_assert_eq!(len, whole.len(), "{:?}'s exact length", repr);
                }
                if repr.is_protobuf() {
                    continue;
                }
                for raw_data in [false, true] {
                    let laid = Layout::Indented { raw_data }.apply(whole.clone()).unwrap();
                    let walk = Source::Walk(Box::new(items.clone().into_iter()));
                    let mut body = repr
                        .list_body(&c, &meta(), walk)
                        .unwrap()
                        .indented(raw_data)
                        .unwrap();
                    let streamed = in_chunks(&mut body, &wants);
                    prop_assert!(
                        streamed == laid[..],
                        "{repr:?} of {n} differs indented:\n{}\n---\n{}",
                        String::from_utf8_lossy(&streamed),
                        String::from_utf8_lossy(&laid)
                    );
                }
            }
        }
    }

    #[test]
    fn an_empty_metadata_list_has_null_items() {
        let meta = ListMeta {
            resource_version: 5,
            ..Default::default()
        };
        assert_eq!(
            &Repr::Metadata(MetaVersion::V1).list(&codec(), &meta, &[]).unwrap()[..],
            b"{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":null}\n"
        );
    }

    #[test]
    fn a_list_without_its_newline_is_one_byte_shorter_exactly() {
        let (c, items) = (codec(), pods(3));
        let whole = Repr::Json.list(&c, &meta(), &items).unwrap();
        let body = Repr::Json
            .list_body(&c, &meta(), Source::Slice(&items))
            .unwrap()
            .without_newline();
        assert_eq!(body.exact_len(), Some(whole.len() - 1));
        assert_eq!(body.whole().unwrap(), whole.slice(..whole.len() - 1));
    }

    #[test]
    fn protobuf_without_a_message_for_an_item_is_unencodable() {
        // A codec of a kind v1.20's protobuf has no message for.
        let c = TypeCodec::new(
            "example.com",
            "example.com/v1",
            "Widget",
            true,
            ListStyle::Typed,
        );
        let w = Arc::new(
            c.from_object(br#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","namespace":"n","resourceVersion":"3"}}"#)
                .unwrap(),
        );
        let made = Repr::Protobuf(None).list_body(&c, &meta(), Source::Vec(vec![w]));
        assert!(matches!(made, Err(ListError::Unencodable(_))));
    }
}
