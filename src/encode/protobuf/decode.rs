//! Kubernetes protobuf bodies back to JSON: the inverse of [`transcode`],
//! for what clients write (kubectl sends its typed creates and updates as
//! protobuf). A body is read as the apiserver's protobuf serializer reads
//! it — the `k8s\0` envelope, then the kind's message as gogo-protobuf's
//! generated `Unmarshal` reads it against the v1.20 [`Schema`] — and the
//! JSON is what Go's encoding/json writes for the Go object that makes:
//!
//! - keys in the struct's declaration order, `kind` and `apiVersion` first;
//! - `omitempty` as `schema.json` records it per field: a false, 0 or ""
//!   left out, an absent pointer, slice or map left out (`null` without
//!   `omitempty`); structs always written (`"spec":{}`), a zero time as
//!   `null`, a zero quantity as `"0"`;
//! - a field met twice: a scalar's last value; a message's occurrences
//!   merged, each read alone as gogo reads each one into the same struct;
//!   a time or quantity the last one (their `Unmarshal` replaces);
//! - fields the schema does not number are skipped, as gogo skips them;
//! - strings are not checked for UTF-8 (Go's are bytes): their invalid
//!   bytes become U+FFFD each, as encoding/json writes them — the v1.20
//!   apiserver stores such a string and answers it so;
//! - times as RFC 3339 (`metav1.Time` to the second, `MicroTime` to the
//!   microsecond), in years 0 to 9999 only (the simulator reads no others);
//! - a quantity as the string it came as: kubecache has no Quantity parser,
//!   so one is not put in canonical form (kubectl sends canonical ones);
//! - raw JSON (`RawExtension`, `FieldsV1`, a CRD's `JSON`) parsed.
//!
//! Malformed input is a [`DecodeError`] worded as Go's: truncated or
//! overflowing varints, lengths past the end, wrong wire types, illegal
//! tags. Nothing is allocated from a length the input claims (lengths only
//! slice the input), and nesting deeper than [`MAX_DEPTH`] JSON levels is
//! refused: Go has no such bound, but the simulator re-reads what it
//! stores with serde_json, which refuses 128 levels.
//!
//! [`transcode`]: super::transcode

use super::schema::{Card, Field, Message, Route, Schema, Type, Union};
use super::MAGIC;
use base64::Engine;
use serde_json::{Map, Number, Value};
use std::collections::BTreeMap;

/// The deepest JSON nesting a decoded object may have.
pub const MAX_DEPTH: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty data")]
    Empty,
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NoMagic,
    #[error("empty body")]
    EmptyBody,
    /// A varint, length or fixed-size value runs past the end.
    #[error("unexpected EOF")]
    UnexpectedEof,
    #[error("proto: integer overflow")]
    IntegerOverflow,
    /// A length Go reads as negative.
    #[error("proto: negative length found during unmarshaling")]
    InvalidLength,
    #[error("proto: {message}: illegal tag {number} (wire type {wire})")]
    IllegalTag {
        message: &'static str,
        number: i32,
        wire: u8,
    },
    #[error("proto: {0}: wiretype end group for non-group")]
    EndGroup(&'static str),
    #[error("proto: illegal wireType {0}")]
    IllegalWireType(u8),
    #[error("proto: unexpected end of group")]
    UnexpectedEndOfGroup,
    #[error("proto: wrong wireType = {wire} for field {field}")]
    WrongWireType { field: &'static str, wire: u8 },
    /// What the apiserver's scheme says of a kind it does not know.
    #[error("no kind {kind:?} is registered for version {api_version:?}")]
    UnknownKind { api_version: String, kind: String },
    #[error("an object nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A value Go reads but cannot write as JSON, or refuses to read.
    #[error("{field}: {reason}")]
    Value { field: &'static str, reason: String },
}

type Result<T> = std::result::Result<T, DecodeError>;

/// The serializer's envelope, `runtime.Unknown`, as read off a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub api_version: String,
    pub kind: String,
    /// The object's message.
    pub raw: &'a [u8],
}

/// The envelope of a protobuf body: `k8s\0`, then `runtime.Unknown`.
pub fn envelope(body: &[u8]) -> Result<Envelope<'_>> {
    if body.is_empty() {
        return Err(DecodeError::Empty);
    }
    let rest = body.strip_prefix(MAGIC).ok_or(DecodeError::NoMagic)?;
    if rest.is_empty() {
        return Err(DecodeError::EmptyBody);
    }
    // runtime.Unknown{typeMeta = 1, raw = 2, contentEncoding = 3,
    // contentType = 4}; TypeMeta{apiVersion = 1, kind = 2}.
    let [type_meta, raw, encoding, content_type] = small("Unknown", &[rest], [LEN; 4])?;
    // Read for their errors alone: the serializer reads raw as its kind's
    // message whatever they say.
    let _ = (last_len(&encoding), last_len(&content_type));
    let [api_version, kind] = small("TypeMeta", &lens(&type_meta), [LEN; 2])?;
    Ok(Envelope {
        api_version: go_string(last_len(&api_version).unwrap_or_default()),
        kind: go_string(last_len(&kind).unwrap_or_default()),
        raw: last_len(&raw).unwrap_or_default(),
    })
}

/// A protobuf body as the JSON object of its kind, `kind` and
/// `apiVersion` first.
pub fn decode_object(body: &[u8]) -> Result<Value> {
    let e = envelope(body)?;
    decode_message(&e.api_version, &e.kind, e.raw)
}

/// The message of a kind (`apiVersion` and `kind` as the envelope names
/// them) as its JSON object, `kind` and `apiVersion` first.
pub fn decode_message(api_version: &str, kind: &str, message: &[u8]) -> Result<Value> {
    decode_message_with(Schema::v1_20(), api_version, kind, message)
}

/// [`decode_message`] with another release's schema. A field whose
/// pointer-ness it has not verified is read as a pointer's: left out when
/// absent.
pub fn decode_message_with(
    schema: &Schema,
    api_version: &str,
    kind: &str,
    message: &[u8],
) -> Result<Value> {
    let msg = schema
        .kind(api_version, kind)
        .ok_or_else(|| DecodeError::UnknownKind {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        })?;
    let fields = Decoder { schema }.object(msg, &[message], 0)?;
    let mut obj = Map::new();
    obj.insert("kind".into(), Value::String(kind.into()));
    obj.insert("apiVersion".into(), Value::String(api_version.into()));
    obj.extend(fields);
    Ok(Value::Object(obj))
}

/// One occurrence of a field: its wire type's payload.
#[derive(Debug, Clone, Copy)]
enum Occ<'a> {
    Varint(u64),
    Fixed64(u64),
    /// Read past, never a value of the schema's.
    Fixed32,
    Len(&'a [u8]),
}

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// Protobuf primitives off a slice, as gogo's generated code reads them.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            if shift >= 64 {
                return Err(DecodeError::IntegerOverflow);
            }
            let (&x, rest) = self.b.split_first().ok_or(DecodeError::UnexpectedEof)?;
            self.b = rest;
            v |= u64::from(x & 0x7f) << shift;
            if x < 0x80 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.b.len() {
            return Err(DecodeError::UnexpectedEof);
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    /// A length-delimited payload: its length only slices the input.
    fn len_delimited(&mut self) -> Result<&'a [u8]> {
        let n = self.varint()?;
        // Go's int(length) of a uint64 is negative past i64::MAX.
        if i64::try_from(n).is_err() {
            return Err(DecodeError::InvalidLength);
        }
        self.take(usize::try_from(n).map_err(|_| DecodeError::UnexpectedEof)?)
    }

    fn fixed64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("eight bytes")))
    }

    /// The next field's number (as Go's `int32(wire >> 3)`) and wire type.
    fn tag(&mut self, message: &'static str) -> Result<(u32, u8)> {
        let tag = self.varint()?;
        let number = (tag >> 3) as u32 as i32;
        let wire = (tag & 7) as u8;
        if wire == 4 {
            return Err(DecodeError::EndGroup(message));
        }
        if number <= 0 {
            return Err(DecodeError::IllegalTag {
                message,
                number,
                wire,
            });
        }
        Ok((number as u32, wire))
    }

    /// The payload of a field of wire type `wire`.
    fn occurrence(&mut self, wire: u8) -> Result<Occ<'a>> {
        Ok(match wire {
            VARINT => Occ::Varint(self.varint()?),
            FIXED64 => Occ::Fixed64(self.fixed64()?),
            LEN => Occ::Len(self.len_delimited()?),
            FIXED32 => {
                self.take(4)?;
                Occ::Fixed32
            }
            w => return Err(DecodeError::IllegalWireType(w)),
        })
    }

    /// Past a field the message does not number, its tag read: gogo's
    /// `skipGenerated`, groups included (counted, never recursed into).
    fn skip(&mut self, mut wire: u8) -> Result<()> {
        let mut depth = 0usize;
        loop {
            match wire {
                3 => depth += 1,
                4 => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or(DecodeError::UnexpectedEndOfGroup)?;
                }
                w => {
                    self.occurrence(w)?;
                }
            }
            if depth == 0 {
                return Ok(());
            }
            wire = (self.varint()? & 7) as u8;
        }
    }
}

/// The occurrences of fields 1..=N of a small fixed message (a
/// Timestamp, an envelope, a map entry), each of the wire type `wires`
/// names, read from each of `pieces` in turn.
fn small<'a, const N: usize>(
    message: &'static str,
    pieces: &[&'a [u8]],
    wires: [u8; N],
) -> Result<[Vec<Occ<'a>>; N]> {
    let mut out: [Vec<Occ<'a>>; N] = std::array::from_fn(|_| Vec::new());
    for piece in pieces {
        let mut r = Reader { b: piece };
        while !r.b.is_empty() {
            let (number, wire) = r.tag(message)?;
            match usize::try_from(number - 1).ok().filter(|&i| i < N) {
                Some(i) if wire == wires[i] => out[i].push(r.occurrence(wire)?),
                Some(_) => {
                    return Err(DecodeError::WrongWireType {
                        field: message,
                        wire,
                    })
                }
                None => r.skip(wire)?,
            }
        }
    }
    Ok(out)
}

fn lens<'a>(occ: &[Occ<'a>]) -> Vec<&'a [u8]> {
    occ.iter()
        .filter_map(|o| match o {
            Occ::Len(b) => Some(*b),
            _ => None,
        })
        .collect()
}

fn last_len<'a>(occ: &[Occ<'a>]) -> Option<&'a [u8]> {
    lens(occ).last().copied()
}

fn last_varint(occ: &[Occ]) -> Option<u64> {
    occ.iter().rev().find_map(|o| match o {
        Occ::Varint(v) => Some(*v),
        _ => None,
    })
}

/// Go's `string(bytes)` as encoding/json writes it: each byte that is not
/// part of valid UTF-8 becomes U+FFFD.
fn go_string(mut b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    loop {
        match std::str::from_utf8(b) {
            Ok(valid) => {
                s.push_str(valid);
                return s;
            }
            Err(e) => {
                let (valid, rest) = b.split_at(e.valid_up_to());
                s.push_str(std::str::from_utf8(valid).expect("checked valid"));
                s.push(char::REPLACEMENT_CHARACTER);
                b = &rest[1..];
            }
        }
    }
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds.
const GO_ZERO_TIME: i64 = -62_135_596_800;
/// 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z: the years written.
const YEAR_0: i64 = -62_167_219_200;
const YEAR_10000: i64 = 253_402_300_800;

/// The wire type a value of `ty` comes as (numbers packed aside).
fn wire_of(ty: Type) -> u8 {
    match ty {
        Type::Int | Type::Uint | Type::Bool => VARINT,
        Type::Double => FIXED64,
        _ => LEN,
    }
}

fn is_number(ty: Type) -> bool {
    wire_of(ty) != LEN
}

struct Decoder<'s> {
    schema: &'s Schema,
}

impl Decoder<'_> {
    /// The occurrences of each of `msg`'s fields in `pieces` (a message's
    /// occurrences, each read alone, as gogo reads each into one struct).
    fn occurrences<'a>(&self, msg: &Message, pieces: &[&'a [u8]]) -> Result<Vec<Vec<Occ<'a>>>> {
        let mut occ: Vec<Vec<Occ<'a>>> = msg.fields.iter().map(|_| Vec::new()).collect();
        for piece in pieces {
            let mut r = Reader { b: piece };
            while !r.b.is_empty() {
                let (number, wire) = r.tag(msg.name)?;
                let Ok(i) = msg.fields.binary_search_by_key(&number, |f| f.number) else {
                    r.skip(wire)?;
                    continue;
                };
                let f = &msg.fields[i];
                // A repeated number may also come packed.
                let packed = f.card == Card::Repeated && is_number(f.ty) && wire == LEN;
                if wire != wire_of(f.ty) && !packed {
                    return Err(DecodeError::WrongWireType {
                        field: f.json,
                        wire,
                    });
                }
                occ[i].push(r.occurrence(wire)?);
            }
        }
        Ok(occ)
    }

    /// The JSON object of the message `msg` made of `pieces`, at JSON
    /// nesting `depth`.
    fn object(&self, msg: &Message, pieces: &[&[u8]], depth: usize) -> Result<Map<String, Value>> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep);
        }
        let occ = self.occurrences(msg, pieces)?;
        let mut out = Map::new();
        for &i in &msg.json_order {
            let (i, f) = (usize::from(i), &msg.fields[usize::from(i)]);
            if f.json.is_empty() {
                // An inlined struct: its keys are its parent's, but for
                // those a shallower field of the parent holds, as Go's.
                let Type::Message(m) = f.ty else { continue };
                if f.card == Card::Optional && occ[i].is_empty() {
                    continue;
                }
                let inner = self.object(&self.schema.messages[m], &lens(&occ[i]), depth + 1)?;
                for (k, v) in inner {
                    if matches!(msg.route(&k), Some(Route::Field(p)) if usize::from(p[0]) == i) {
                        out.insert(k, v);
                    }
                }
                continue;
            }
            if let Some(v) = self.field(f, &occ[i], depth + 1)? {
                out.insert(f.json.to_string(), v);
            }
        }
        Ok(out)
    }

    /// A field's JSON value, or `None` when Go's JSON leaves it out.
    fn field(&self, f: &Field, occ: &[Occ], depth: usize) -> Result<Option<Value>> {
        // A nil pointer, slice or map: left out, or null.
        let absent = || Ok((!f.omitempty).then_some(Value::Null));
        match f.card {
            Card::Repeated => {
                if occ.is_empty() {
                    return absent();
                }
                if depth > MAX_DEPTH {
                    return Err(DecodeError::TooDeep);
                }
                let mut items = Vec::new();
                for o in occ {
                    match (o, is_number(f.ty)) {
                        (Occ::Len(b), true) => self.packed(f, b, &mut items)?,
                        _ => items.push(self.value(
                            f.json,
                            f.ty,
                            std::slice::from_ref(o),
                            depth + 1,
                        )?),
                    }
                }
                Ok(Some(Value::Array(items)))
            }
            Card::Map => {
                if occ.is_empty() {
                    return absent();
                }
                if depth > MAX_DEPTH {
                    return Err(DecodeError::TooDeep);
                }
                // Go's map: the last entry of a key wins; its JSON sorts
                // the keys by their bytes.
                let mut entries = BTreeMap::new();
                for entry in lens(occ) {
                    let [key, value] = small(f.json, &[entry], [LEN, wire_of(f.ty)])?;
                    let key = go_string(last_len(&key).unwrap_or_default());
                    let value = match value.last() {
                        Some(v) => self.value(f.json, f.ty, std::slice::from_ref(v), depth + 1)?,
                        None => self.zero(f.json, f.ty, depth + 1)?,
                    };
                    entries.insert(key, value);
                }
                Ok(Some(Value::Object(entries.into_iter().collect())))
            }
            Card::Optional | Card::Unverified => {
                if occ.is_empty() {
                    return absent();
                }
                let v = self.value(f.json, f.ty, occ, depth)?;
                // A byte slice's emptiness, not a pointer's nil-ness.
                let empty_bytes = f.ty == Type::Bytes && v.as_str() == Some("");
                Ok((!(f.omitempty && empty_bytes)).then_some(v))
            }
            Card::One => {
                let v = if occ.is_empty() {
                    self.zero(f.json, f.ty, depth)?
                } else {
                    self.value(f.json, f.ty, occ, depth)?
                };
                // omitempty leaves out a false, 0 or "" (and an empty
                // slice), never a struct.
                let empty = match f.ty {
                    Type::String | Type::Bytes => v.as_str() == Some(""),
                    Type::Int | Type::Uint | Type::Double => v.as_f64() == Some(0.0),
                    Type::Bool => v == Value::Bool(false),
                    _ => false,
                };
                Ok((!(f.omitempty && empty)).then_some(v))
            }
        }
    }

    /// The elements of a packed repeated number.
    fn packed(&self, f: &Field, mut b: &[u8], items: &mut Vec<Value>) -> Result<()> {
        while !b.is_empty() {
            let mut r = Reader { b };
            let o = r.occurrence(wire_of(f.ty))?;
            b = r.b;
            items.push(self.value(f.json, f.ty, &[o], 0)?);
        }
        Ok(())
    }

    /// The JSON of a Go zero value of `ty`, as a non-pointer field or a
    /// map value holds it.
    fn zero(&self, field: &'static str, ty: Type, depth: usize) -> Result<Value> {
        Ok(match ty {
            Type::String => Value::String(String::new()),
            Type::Int | Type::Uint | Type::Double => Value::from(0),
            Type::Bool | Type::Union(Union::OrBool, _) => Value::Bool(false),
            Type::Quantity => Value::String("0".into()),
            Type::IntOrString => Value::from(0),
            Type::Message(m) => Value::Object(self.object(&self.schema.messages[m], &[], depth)?),
            Type::Bytes
            | Type::Time
            | Type::MicroTime
            | Type::Raw
            | Type::Items
            | Type::Union(_, _) => Value::Null,
            Type::Unsupported(t) => return Err(unsupported(field, t)),
        })
    }

    /// The JSON of a value of `ty` from its occurrences (at least one).
    fn value(&self, field: &'static str, ty: Type, occ: &[Occ], depth: usize) -> Result<Value> {
        let bad = |reason: String| DecodeError::Value { field, reason };
        let last = *occ.last().expect("a value has an occurrence");
        let bytes = || last_len(occ).unwrap_or_default();
        Ok(match (ty, last) {
            (Type::Int, Occ::Varint(v)) => Value::from(v as i64),
            (Type::Uint, Occ::Varint(v)) => Value::from(v),
            (Type::Bool, Occ::Varint(v)) => Value::Bool(v != 0),
            (Type::Double, Occ::Fixed64(bits)) => go_float(f64::from_bits(bits))
                .ok_or_else(|| bad(format!("json: unsupported value: {}", f64::from_bits(bits))))?,
            (Type::String, _) => Value::String(go_string(bytes())),
            (Type::Bytes, _) => {
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes()))
            }
            (Type::Time | Type::MicroTime, _) => time(ty, bytes()).map_err(|e| match e {
                DecodeError::Value { reason, .. } => bad(reason),
                e => e,
            })?,
            (Type::Quantity, _) => {
                let [s] = small("Quantity", &[bytes()], [LEN])?;
                match last_len(&s) {
                    None => Value::String("0".into()),
                    Some([]) => {
                        return Err(bad("quantities must match the regular expression \
                             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                            .into()))
                    }
                    Some(s) => Value::String(go_string(s)),
                }
            }
            (Type::IntOrString, _) => {
                let [kind, int, string] = small("IntOrString", &lens(occ), [VARINT, VARINT, LEN])?;
                match last_varint(&kind).unwrap_or(0) as i64 {
                    // intVal is an int32: Go keeps its low 32 bits.
                    0 => Value::from(i64::from(last_varint(&int).unwrap_or(0) as i32)),
                    1 => Value::String(go_string(last_len(&string).unwrap_or_default())),
                    _ => return Err(bad("impossible IntOrString.Type".into())),
                }
            }
            (Type::Raw, _) => {
                let [raw] = small("Raw", &lens(occ), [LEN])?;
                match last_len(&raw) {
                    None | Some([]) => Value::Null,
                    Some(json) => {
                        let v: Value =
                            serde_json::from_slice(json).map_err(|e| bad(e.to_string()))?;
                        if depth + nesting(&v) > MAX_DEPTH {
                            return Err(DecodeError::TooDeep);
                        }
                        v
                    }
                }
            }
            (Type::Items, _) => {
                let [items] = small("ExtraValue", &lens(occ), [LEN])?;
                Value::Array(
                    lens(&items)
                        .into_iter()
                        .map(|s| Value::String(go_string(s)))
                        .collect(),
                )
            }
            (Type::Message(m), _) => {
                Value::Object(self.object(&self.schema.messages[m], &lens(occ), depth)?)
            }
            (Type::Union(u, props), _) => self.union(u, props, &lens(occ), depth)?,
            (Type::Unsupported(t), _) => return Err(unsupported(field, t)),
            // Occurrences are checked against their wire type as read:
            // this is only for the compiler.
            (_, o) => {
                return Err(DecodeError::WrongWireType {
                    field,
                    wire: match o {
                        Occ::Varint(_) => VARINT,
                        Occ::Fixed64(_) => FIXED64,
                        Occ::Fixed32 => FIXED32,
                        Occ::Len(_) => LEN,
                    },
                })
            }
        })
    }

    /// A CRD schema's `JSONSchemaPropsOr…` union as its `MarshalJSON`
    /// writes it: its list if it has one, else its schema, else its bool
    /// (`OrBool`) or null.
    fn union(&self, u: Union, props: usize, pieces: &[&[u8]], depth: usize) -> Result<Value> {
        let msg = &self.schema.messages[props];
        // OrArray{schema = 1, jSONSchemas = 2}, OrBool{allows = 1, schema
        // = 2}, OrStringArray{schema = 1, property = 2}.
        let (name, wires) = match u {
            Union::OrBool => ("JSONSchemaPropsOrBool", [VARINT, LEN]),
            Union::OrArray => ("JSONSchemaPropsOrArray", [LEN, LEN]),
            Union::OrStringArray => ("JSONSchemaPropsOrStringArray", [LEN, LEN]),
        };
        let [first, second] = small(name, pieces, wires)?;
        let (schema, other) = match u {
            Union::OrBool => (second, first),
            _ => (first, second),
        };
        let object = |s: &[Occ]| -> Result<Value> {
            Ok(Value::Object(self.object(msg, &lens(s), depth + 1)?))
        };
        Ok(match u {
            Union::OrBool if !schema.is_empty() => object(&schema)?,
            Union::OrBool => Value::Bool(last_varint(&other).unwrap_or(0) != 0),
            _ if !other.is_empty() => {
                if depth + 1 > MAX_DEPTH {
                    return Err(DecodeError::TooDeep);
                }
                let items = lens(&other)
                    .into_iter()
                    .map(|b| match u {
                        Union::OrStringArray => Ok(Value::String(go_string(b))),
                        _ => Ok(Value::Object(self.object(msg, &[b], depth + 2)?)),
                    })
                    .collect::<Result<_>>()?;
                Value::Array(items)
            }
            _ if !schema.is_empty() => object(&schema)?,
            _ => Value::Null,
        })
    }
}

fn unsupported(field: &'static str, t: &str) -> DecodeError {
    DecodeError::Value {
        field,
        reason: format!("{t} is not decoded"),
    }
}

/// A float64 as encoding/json writes it: integral values as integers.
fn go_float(f: f64) -> Option<Value> {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Some(Value::from(f as i64));
    }
    Number::from_f64(f).map(Value::Number)
}

/// A `Timestamp{seconds = 1, nanos = 2}` as `metav1.Time` (seconds only)
/// or `MicroTime` writes it; an empty message or Go's zero time is null.
fn time(ty: Type, b: &[u8]) -> Result<Value> {
    if b.is_empty() {
        return Ok(Value::Null);
    }
    let [secs, nanos] = small("Timestamp", &[b], [VARINT, VARINT])?;
    let secs = last_varint(&secs).unwrap_or(0) as i64;
    // nanos is an int32; metav1.Time drops it, MicroTime normalizes it
    // into the seconds as time.Unix does.
    let nanos = match ty {
        Type::MicroTime => i64::from(last_varint(&nanos).unwrap_or(0) as i32),
        _ => 0,
    };
    let secs = secs
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or(DecodeError::Value {
            field: "Timestamp",
            reason: "time out of range".into(),
        })?;
    let nanos = nanos.rem_euclid(1_000_000_000);
    if (secs, nanos) == (GO_ZERO_TIME, 0) {
        return Ok(Value::Null);
    }
    if !(YEAR_0..YEAR_10000).contains(&secs) {
        return Err(DecodeError::Value {
            field: "Timestamp",
            reason: format!("{secs} s is outside the years 0 to 9999"),
        });
    }
    let t = crate::go::time::format_unix(secs);
    Ok(Value::String(match ty {
        Type::MicroTime => {
            let whole = t.strip_suffix('Z').expect("format_unix ends in Z");
            format!("{whole}.{:06}Z", nanos / 1000)
        }
        _ => t,
    }))
}

/// How deeply a JSON value nests (a scalar is 0).
fn nesting(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(nesting).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{object, object_message, wire};
    use super::*;

    /// `json` of `kind` as a protobuf body, read back as JSON text.
    fn round_trip(api_version: &str, kind: &str, json: &str) -> String {
        let body = object(api_version, kind, json.as_bytes()).unwrap();
        decode_object(&body).unwrap().to_string()
    }

    fn body(api_version: &str, kind: &str, message: &[u8]) -> Vec<u8> {
        super::super::envelope(api_version, kind, message)
    }

    fn configmap(message: &[u8]) -> Result<Value> {
        decode_object(&body("v1", "ConfigMap", message))
    }

    #[test]
    fn a_configmap_reads_back_as_the_json_go_writes_for_it() {
        let json = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default"},"data":{"b":"2","a":"1"}}"#;
        assert_eq!(
            round_trip("v1", "ConfigMap", json),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","creationTimestamp":null},"data":{"a":"1","b":"2"}}"#
        );
    }

    #[test]
    fn keys_come_in_declaration_order_and_omitempty_is_the_json_tags() {
        let json =
            r#"{"type":"Opaque","data":{"k":"dg=="},"immutable":false,"metadata":{"name":"s"}}"#;
        assert_eq!(
            round_trip("v1", "Secret", json),
            r#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","creationTimestamp":null},"immutable":false,"data":{"k":"dg=="},"type":"Opaque"}"#
        );
        // A pod's containers are `json:"containers"`: a nil slice is null;
        // structs are written empty; a container's name is always there.
        let pod = round_trip("v1", "Pod", r#"{"metadata":{"name":"p"},"spec":{}}"#);
        assert_eq!(
            pod,
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","creationTimestamp":null},"spec":{"containers":null},"status":{}}"#
        );
        let pod = round_trip(
            "v1",
            "Pod",
            r#"{"metadata":{"name":"p"},"spec":{"containers":[{"image":"nginx"}]}}"#,
        );
        assert!(
            pod.contains(r#""containers":[{"name":"","image":"nginx","resources":{}}]"#),
            "{pod}"
        );
    }

    #[test]
    fn an_inlined_structs_keys_are_its_parents() {
        let json = r#"{"metadata":{"name":"p"},"spec":{"volumes":[{"name":"v","configMap":{"name":"c"}}]}}"#;
        let pod = round_trip("v1", "Pod", json);
        assert!(
            pod.contains(r#""volumes":[{"name":"v","configMap":{"name":"c"}}]"#),
            "{pod}"
        );
    }

    #[test]
    fn fields_the_schema_does_not_number_are_skipped_as_gogo_skips_them() {
        let m = object_message("v1", "ConfigMap", br#"{"metadata":{"name":"x"}}"#).unwrap();
        let plain = configmap(&m).unwrap();
        let mut more = m.clone();
        wire::varint_field(&mut more, 99, 7);
        wire::len_field(&mut more, 100, b"anything");
        wire::fixed64_field(&mut more, 101, 1);
        // A group (start 3, a field, end 4) and a fixed32.
        more.extend_from_slice(b"\xab\x06\x08\x01\xac\x06\xbd\x06\x01\x02\x03\x04");
        assert_eq!(configmap(&more).unwrap(), plain);
    }

    #[test]
    fn a_message_met_twice_is_merged_and_a_scalar_met_twice_is_the_last() {
        let mut m = Vec::new();
        wire::len_field(&mut m, 1, b"\x0a\x01a\x1a\x02ns");
        wire::len_field(&mut m, 1, b"\x0a\x01b");
        let v = configmap(&m).unwrap();
        assert_eq!(v["metadata"]["name"], "b");
        assert_eq!(v["metadata"]["namespace"], "ns");
    }

    #[test]
    fn a_length_past_the_end_is_an_error_not_a_panic() {
        assert_eq!(
            configmap(b"\x0a\x05\x0a\x01a"),
            Err(DecodeError::UnexpectedEof)
        );
        // A length no buffer has: read, compared, never allocated.
        let mut huge = b"\x0a".to_vec();
        prost::encoding::encode_varint(1 << 62, &mut huge);
        assert_eq!(configmap(&huge), Err(DecodeError::UnexpectedEof));
        let mut negative = b"\x0a".to_vec();
        prost::encoding::encode_varint(u64::MAX, &mut negative);
        assert_eq!(configmap(&negative), Err(DecodeError::InvalidLength));
    }

    #[test]
    fn a_truncated_or_overlong_varint_is_an_error() {
        assert_eq!(configmap(b"\x0a"), Err(DecodeError::UnexpectedEof));
        assert_eq!(configmap(b"\x0a\x80"), Err(DecodeError::UnexpectedEof));
        let overlong = [&b"\x0a"[..], &[0xff; 10], b"\x01"].concat();
        assert_eq!(configmap(&overlong), Err(DecodeError::IntegerOverflow));
        assert_eq!(configmap(&[0x80; 11]), Err(DecodeError::IntegerOverflow));
    }

    #[test]
    fn a_wrong_wire_type_is_an_error_naming_the_field() {
        // metadata (1) as a varint, as the apiserver words it.
        let e = configmap(b"\x08\x01").unwrap_err();
        assert_eq!(
            e.to_string(),
            "proto: wrong wireType = 0 for field metadata"
        );
        // immutable (4), a bool, as bytes; an int-or-string's type as bytes.
        assert!(matches!(
            configmap(b"\x22\x00"),
            Err(DecodeError::WrongWireType {
                field: "immutable",
                wire: 2
            })
        ));
        assert!(configmap(b"\x0f").is_err(), "wire type 7");
        assert_eq!(
            configmap(b"\x0c"),
            Err(DecodeError::EndGroup("api/core/v1.ConfigMap"))
        );
        assert!(matches!(
            configmap(b"\x00\x00"),
            Err(DecodeError::IllegalTag { number: 0, .. })
        ));
        // An end of group with no group open, among unknown fields.
        assert_eq!(
            configmap(b"\xac\x06"),
            Err(DecodeError::EndGroup("api/core/v1.ConfigMap"))
        );
        assert_eq!(
            configmap(b"\xab\x06\xac\x06\xac\x06"),
            Err(DecodeError::EndGroup("api/core/v1.ConfigMap"))
        );
        assert_eq!(configmap(b"\xab\x06\x08"), Err(DecodeError::UnexpectedEof));
    }

    #[test]
    fn a_body_without_the_prefix_or_with_an_unknown_kind_is_an_error() {
        assert_eq!(decode_object(b""), Err(DecodeError::Empty));
        assert_eq!(decode_object(b"{\"kind\":1}"), Err(DecodeError::NoMagic));
        assert_eq!(decode_object(b"k8s\0"), Err(DecodeError::EmptyBody));
        assert_eq!(
            decode_object(b"k8s\0\x0a\x0f"),
            Err(DecodeError::UnexpectedEof)
        );
        let e = decode_object(&body("v1", "Nopes", b"")).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"no kind "Nopes" is registered for version "v1""#
        );
        let b = body("apps/v1", "Deployment", b"\x0a\x00");
        let e = envelope(&b).unwrap();
        assert_eq!(
            (e.api_version.as_str(), e.kind.as_str(), e.raw),
            ("apps/v1", "Deployment", &b"\x0a\x00"[..])
        );
    }

    #[test]
    fn invalid_utf8_is_a_replacement_character_per_byte_as_go_writes_it() {
        // data {"a": "x\xff\xe2\x82y"}: the v1.20 apiserver stores the bytes
        // and writes "x\ufffd\ufffd\ufffdy".
        let mut entry = Vec::new();
        wire::len_field(&mut entry, 1, b"a");
        wire::len_field(&mut entry, 2, b"x\xff\xe2\x82y");
        let mut m = Vec::new();
        wire::len_field(&mut m, 2, &entry);
        let v = configmap(&m).unwrap();
        assert_eq!(v["data"]["a"], "x\u{fffd}\u{fffd}\u{fffd}y");
    }

    #[test]
    fn nesting_deeper_than_the_bound_is_refused_without_exhausting_the_stack() {
        // A CRD schema's `not` (28) holds a schema, as deep as it goes.
        let props = |depth: usize| {
            let mut m = Vec::new();
            for _ in 0..depth {
                let mut outer = Vec::new();
                wire::len_field(&mut outer, 28, &m);
                m = outer;
            }
            let s = Schema::v1_20();
            let msg = s
                .message("apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps")
                .unwrap();
            Decoder { schema: s }.object(msg, &[&m], 0)
        };
        let v = Value::Object(props(MAX_DEPTH).unwrap());
        assert_eq!(nesting(&v), MAX_DEPTH + 1);
        assert_eq!(props(MAX_DEPTH + 1), Err(DecodeError::TooDeep));
        assert_eq!(props(100_000), Err(DecodeError::TooDeep));
    }

    #[test]
    fn times_are_rfc3339_and_the_zero_time_is_null() {
        let created = |ts: &[u8]| {
            let mut meta = Vec::new();
            wire::len_field(&mut meta, 8, ts);
            let mut m = Vec::new();
            wire::len_field(&mut m, 1, &meta);
            configmap(&m).map(|v| v["metadata"]["creationTimestamp"].clone())
        };
        let ts = |secs: i64, nanos: i64| {
            let mut t = Vec::new();
            wire::varint_field(&mut t, 1, secs as u64);
            wire::varint_field(&mut t, 2, nanos as u64);
            t
        };
        assert_eq!(
            created(&ts(1_582_977_601, 5)).unwrap(),
            "2020-02-29T12:00:01Z"
        );
        assert_eq!(created(b"").unwrap(), Value::Null);
        assert_eq!(created(&ts(GO_ZERO_TIME, 0)).unwrap(), Value::Null);
        assert_eq!(created(&ts(0, 0)).unwrap(), "1970-01-01T00:00:00Z");
        assert!(created(&ts(YEAR_10000, 0)).is_err());
        assert!(created(&ts(i64::MIN, 0)).is_err());
        assert!(created(b"\x08").is_err());
        // A lease's renewTime is a MicroTime: microseconds, normalized.
        let lease = |ts: &[u8]| {
            let mut spec = Vec::new();
            wire::len_field(&mut spec, 4, ts);
            let mut m = Vec::new();
            wire::len_field(&mut m, 2, &spec);
            let v = decode_object(&body("coordination.k8s.io/v1", "Lease", &m)).unwrap();
            v["spec"]["renewTime"].clone()
        };
        assert_eq!(lease(&ts(1, 123_456_789)), "1970-01-01T00:00:01.123456Z");
        assert_eq!(lease(&ts(1, -1)), "1970-01-01T00:00:00.999999Z");
        assert_eq!(
            round_trip(
                "coordination.k8s.io/v1",
                "Lease",
                r#"{"metadata":{"name":"l"},"spec":{"renewTime":"2021-01-02T03:04:05.678901Z"}}"#
            ),
            r#"{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"l","creationTimestamp":null},"spec":{"renewTime":"2021-01-02T03:04:05.678901Z"}}"#
        );
    }

    #[test]
    fn packed_repeated_numbers_are_read_as_unpacked_ones() {
        // supplementalGroups (4) of a pod's securityContext (14 of PodSpec).
        let groups = |sc: &[u8]| {
            let mut spec = Vec::new();
            wire::len_field(&mut spec, 14, sc);
            let mut m = Vec::new();
            wire::len_field(&mut m, 2, &spec);
            decode_object(&body("v1", "Pod", &m))
                .map(|v| v["spec"]["securityContext"]["supplementalGroups"].clone())
        };
        assert_eq!(
            groups(b"\x20\x07\x20\x08").unwrap(),
            serde_json::json!([7, 8])
        );
        assert_eq!(
            groups(b"\x22\x02\x07\x08").unwrap(),
            serde_json::json!([7, 8])
        );
        assert_eq!(groups(b"\x22\x02\x07\x88"), Err(DecodeError::UnexpectedEof));
    }

    #[test]
    fn int_or_strings_quantities_and_raw_json_read_as_go_writes_them() {
        let d = round_trip(
            "apps/v1",
            "Deployment",
            r#"{"metadata":{"name":"d"},"spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":-1}}}}"#,
        );
        assert!(
            d.contains(r#""rollingUpdate":{"maxUnavailable":-1,"maxSurge":"25%"}"#),
            "{d}"
        );
        let q = round_trip(
            "v1",
            "ResourceQuota",
            r#"{"metadata":{"name":"q"},"spec":{"hard":{"cpu":"1500m","pods":"10"}}}"#,
        );
        assert!(q.contains(r#""hard":{"cpu":"1500m","pods":"10"}"#), "{q}");
        let r = round_trip(
            "apps/v1",
            "ControllerRevision",
            r#"{"metadata":{"name":"r"},"data":{"spec":{"a":[1,"b"]}},"revision":3}"#,
        );
        assert!(
            r.ends_with(r#""data":{"spec":{"a":[1,"b"]}},"revision":3}"#),
            "{r}"
        );
        // An impossible int-or-string type, raw bytes that are no JSON.
        let mut strategy = Vec::new();
        wire::len_field(&mut strategy, 2, b"\x0a\x02\x08\x07");
        let mut spec = Vec::new();
        wire::len_field(&mut spec, 4, &strategy);
        let mut m = Vec::new();
        wire::len_field(&mut m, 2, &spec);
        let e = decode_object(&body("apps/v1", "Deployment", &m)).unwrap_err();
        assert!(e.to_string().contains("impossible IntOrString.Type"), "{e}");
        let mut m = Vec::new();
        wire::len_field(&mut m, 2, b"\x0a\x03{{{");
        assert!(decode_object(&body("apps/v1", "ControllerRevision", &m)).is_err());
    }

    #[test]
    fn a_crd_schemas_unions_read_as_their_marshal_json_writes_them() {
        let crd = |schema: &str| {
            let json = format!(
                r#"{{"metadata":{{"name":"c"}},"spec":{{"versions":[{{"name":"v1","schema":{{"openAPIV3Schema":{schema}}}}}]}}}}"#
            );
            let v: Value = serde_json::from_str(&round_trip(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                &json,
            ))
            .unwrap();
            v["spec"]["versions"][0]["schema"]["openAPIV3Schema"].to_string()
        };
        for schema in [
            r#"{"type":"array","items":{"type":"string"}}"#,
            r#"{"type":"array","items":[{"type":"string"},{"type":"integer"}]}"#,
            r#"{"type":"object","additionalProperties":false}"#,
            r#"{"type":"object","additionalProperties":true}"#,
            r#"{"type":"object","additionalProperties":{"type":"string"}}"#,
            r#"{"dependencies":{"a":["b","c"],"d":{"type":"string"}}}"#,
            // In declaration order: `default` comes before `maximum`.
            r#"{"type":"number","default":{"x":[1]},"maximum":1.5,"minimum":2}"#,
        ] {
            assert_eq!(crd(schema), schema);
        }
    }

    #[test]
    fn a_string_map_and_a_bytes_map_keep_what_go_keeps() {
        // A map entry without a value: "" for a string, null for bytes.
        let mut m = Vec::new();
        wire::len_field(&mut m, 2, b"\x0a\x01a");
        wire::len_field(&mut m, 3, b"\x0a\x01b");
        let v = configmap(&m).unwrap();
        assert_eq!(v["data"], serde_json::json!({"a": ""}));
        assert_eq!(v["binaryData"], serde_json::json!({"b": null}));
    }
}
