//! A list's body as its pieces — what comes before the items, each item
//! with its separator, what comes after — in every representation (JSON,
//! metadata only, Table, protobuf), written whole ([`ListBody::whole`]) or
//! a chunk at a time as the client reads it ([`ListBody::fill`], driven by
//! `cache::bodies::stream`). Both write the same pieces in the same order,
//! so a streamed body is the whole one's bytes by construction; holding a
//! list being written costs its items' pointers and one chunk, not its
//! body.

use super::codec::{Entry, TypeCodec};
use super::list_meta::ListMeta;
use super::recycle::{self, NoMemory};
use super::repr::{ListError, Repr, Unencodable};
use super::table::TableSpec;
use super::{json, meta, protobuf};
use crate::go::time::{self, Nanos};
use crate::request::accept::MetaVersion;
use std::ops::Deref;
use std::sync::Arc;

/// How each item is written.
enum Items {
    Json,
    Metadata(MetaVersion),
    Table {
        spec: TableSpec,
        /// One time for every row's ages.
        now: Nanos,
        /// The order the printer's list function prints rows in, if not
        /// the items'.
        order: Option<Vec<usize>>,
    },
    /// Each item's kept message.
    Protobuf,
    /// Each item's PartialObjectMetadata message, made as it is written
    /// (its length was made once before, for the envelope's head).
    ProtobufPartial(&'static protobuf::Schema),
}

/// A list being written: see the module's doc. `C` holds the codec and
/// `I` the items (borrowed to write a body whole, owned to stream one).
pub struct ListBody<C, I> {
    codec: C,
    items: I,
    how: Items,
    head: Vec<u8>,
    /// Whether the items are written (`null` lists write none).
    written: bool,
    tail: Vec<u8>,
    /// The next piece: 0 the head, 1..=n the items, n+1 the tail.
    next: usize,
    /// The body's length, when known before it is written.
    exact: Option<usize>,
    /// Its length as guessed beforehand, when not.
    guess: usize,
}

impl Repr {
    /// The pieces of a list of `items` in this representation, or
    /// [`Unencodable`] (protobuf without a message for one of them).
    pub fn list_body<C, I>(
        &self,
        codec: C,
        meta: &ListMeta,
        items: I,
    ) -> Result<ListBody<C, I>, ListError>
    where
        C: Deref<Target = TypeCodec>,
        I: AsRef<[Arc<Entry>]>,
    {
        let all = items.as_ref();
        let (how, head, written, tail, exact, guess) = match self {
            Repr::Json => {
                let (head, tail) = json::list_ends(&codec, meta);
                let len = json::joined_len(&head, all, &tail);
                (Items::Json, head, true, tail, Some(len), len)
            }
            Repr::Metadata(v) => {
                let head = meta::partial_list_head(*v, meta, all.is_empty());
                let tail = meta::partial_list_tail(all.is_empty()).to_vec();
                let guess = all.iter().map(|e| e.meta().len()).sum::<usize>()
                    + all.len() * meta::PARTIAL
                    + head.len()
                    + tail.len();
                (
                    Items::Metadata(*v),
                    head,
                    !all.is_empty(),
                    tail,
                    None,
                    guess,
                )
            }
            Repr::Table(spec) => {
                let (head, written, tail) = spec.list_ends(meta, all.is_empty());
                let guess = spec.list_guess(all) + head.len() + tail.len();
                let how = Items::Table {
                    order: spec.row_order(all),
                    spec: spec.clone(),
                    now: time::now(),
                };
                (how, head, written, tail.to_vec(), None, guess)
            }
            Repr::Protobuf(None) => {
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
                let mut items_len = 0;
                for e in all {
                    let m = protobuf::partial_message_in(schema, e.meta())?;
                    items_len += protobuf::list_item_len(m.len());
                }
                let kind = "PartialObjectMetadataList";
                let head = protobuf::list_head(v.api_version(), kind, meta, items_len);
                let tail = protobuf::LIST_TAIL.to_vec();
                let len = head.len() + items_len + tail.len();
                (
                    Items::ProtobufPartial(schema),
                    head,
                    true,
                    tail,
                    Some(len),
                    len,
                )
            }
        };
        Ok(ListBody {
            codec,
            items,
            how,
            head,
            written,
            tail,
            next: 0,
            exact,
            guess,
        })
    }

    /// A list's body, whole.
    pub fn list(
        &self,
        codec: &TypeCodec,
        meta: &ListMeta,
        items: &[Arc<Entry>],
    ) -> Result<bytes::Bytes, ListError> {
        Ok(self.list_body(codec, meta, items)?.whole()?)
    }
}

impl<C, I> ListBody<C, I>
where
    C: Deref<Target = TypeCodec>,
    I: AsRef<[Arc<Entry>]>,
{
    /// The body's length, if known before it is written (JSON and
    /// protobuf; a Table's cells and a metadata list's are not).
    pub fn exact_len(&self) -> Option<usize> {
        self.exact
    }

    /// Its length, or a guess at it.
    pub fn likely_len(&self) -> usize {
        self.exact.unwrap_or(self.guess)
    }

    /// The body without its last byte, a newline: a custom resource's
    /// compact JSON asked for pretty (`Layout::Unindented`).
    pub fn without_newline(mut self) -> Self {
        if self.tail.last() == Some(&b'\n') {
            self.tail.pop();
            self.exact = self.exact.map(|n| n - 1);
            self.guess -= 1;
        }
        self
    }

    /// Whether a chunk of it is cheap to write (copying kept bytes), or
    /// work (printing rows, transcoding metadata).
    pub fn is_light(&self) -> bool {
        matches!(self.how, Items::Json | Items::Metadata(_) | Items::Protobuf)
    }

    /// Whether every piece has been written.
    pub fn is_done(&self) -> bool {
        self.next > self.count() + 1
    }

    fn count(&self) -> usize {
        if self.written {
            self.items.as_ref().len()
        } else {
            0
        }
    }

    /// Writes the next pieces into `out` until it holds `want` bytes or
    /// the body is done (whichever first; the piece that passes `want` is
    /// written whole). Returns whether the body is done.
    pub fn fill(&mut self, out: &mut Vec<u8>, want: usize) -> Result<bool, NoMemory> {
        let n = self.count();
        while out.len() < want && self.next <= n + 1 {
            match self.next {
                0 => {
                    recycle::room(out, self.head.len())?;
                    out.extend_from_slice(&self.head);
                }
                i if i <= n => self.item(i - 1, out)?,
                _ => {
                    recycle::room(out, self.tail.len())?;
                    out.extend_from_slice(&self.tail);
                }
            }
            self.next += 1;
        }
        Ok(self.is_done())
    }

    /// The whole body, in one buffer.
    pub fn whole(mut self) -> Result<bytes::Bytes, NoMemory> {
        let mut b = recycle::buffer(self.likely_len())?;
        self.fill(&mut b, usize::MAX)?;
        Ok(recycle::freeze(b))
    }

    /// The `i`th item written (in the order written), and its separator.
    fn item(&self, i: usize, out: &mut Vec<u8>) -> Result<(), NoMemory> {
        let items = self.items.as_ref();
        match &self.how {
            Items::Json => {
                let e = &items[i];
                recycle::room(out, e.item.len() + 1)?;
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&e.item);
            }
            Items::Metadata(v) => {
                let e = &items[i];
                recycle::room(out, e.meta().len() + meta::PARTIAL + 1)?;
                if i > 0 {
                    out.push(b',');
                }
                meta::put_partial(out, *v, e.meta());
            }
            Items::Table { spec, now, order } => {
                let e = match order {
                    Some(o) => &items[o[i]],
                    None => &items[i],
                };
                spec.put_list_row(out, &self.codec, e, i > 0, *now)?;
            }
            Items::Protobuf => {
                let e = &items[i];
                // Checked when the body was made.
                let m = self.codec.protobuf_message(e).unwrap_or_default();
                recycle::room(out, protobuf::list_item_len(m.len()))?;
                protobuf::put_list_item(out, m);
            }
            Items::ProtobufPartial(schema) => {
                let e = &items[i];
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
    fn in_chunks(body: &mut ListBody<&TypeCodec, &[Arc<Entry>]>, wants: &[usize]) -> Vec<u8> {
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
                let mut body = repr.list_body(&c, &meta(), &items[..]).unwrap();
                let streamed = in_chunks(&mut body, &wants);
                prop_assert!(streamed == whole[..], "{repr:?} of {n} differs streamed");
                if let Some(len) = repr.list_body(&c, &meta(), &items[..]).unwrap().exact_len() {
                    prop_assert_eq!(len, whole.len(), "{:?}'s exact length", repr);
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
            .list_body(&c, &meta(), &items[..])
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
        let made = Repr::Protobuf(None).list_body(&c, &meta(), vec![w]);
        assert!(matches!(made, Err(ListError::Unencodable(_))));
    }
}
