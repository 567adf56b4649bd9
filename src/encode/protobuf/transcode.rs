//! JSON objects to the protobuf messages the apiserver would write for
//! them, byte for byte: read with serde against the schema, written as
//! gogo-protobuf's generated marshallers write them — fields in number
//! order, a non-pointer field always (its zero value when the JSON omits
//! it), map entries sorted by key, times as `Timestamp`s.
//!
//! A key the schema does not know (an object of a newer apiserver than
//! the schema's release, whose fields its message has no number for)
//! fails the object: written without it, the message would lose data. So
//! does leaving out a field whose pointer-ness the schema has not verified
//! ([`Card::Unverified`]): whether its zero value is written is unknown.

use super::schema::{Card, Field, Message, Route, Schema, Type, Union};
use super::wire;
use crate::go::time::rfc3339;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum TranscodeError {
    #[error("no protobuf message for {0}")]
    NoMessage(String),
    #[error("the object cannot be written as protobuf: {0}")]
    Object(#[from] serde_json::Error),
}

/// The message `msg` for the JSON object `json` (without a tag or length).
pub fn message(schema: &Schema, msg: &Message, json: &[u8]) -> Result<Vec<u8>, TranscodeError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let out = MsgSeed { schema, msg }.deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

/// A message being read: each field's bytes (tag included) as its key
/// comes, written out in number order at the end.
struct Acc<'s> {
    schema: &'s Schema,
    msg: &'s Message,
    slots: Vec<Slot<'s>>,
}

enum Slot<'s> {
    Absent,
    Written(Vec<u8>),
    /// An inlined struct, whose keys are its parent's.
    Inline(Acc<'s>),
}

impl<'s> Acc<'s> {
    fn new(schema: &'s Schema, msg: &'s Message) -> Self {
        Acc {
            schema,
            msg,
            slots: msg.fields.iter().map(|_| Slot::Absent).collect(),
        }
    }

    /// The accumulator the last index of `path` is a field of.
    fn at(&mut self, path: &[u16]) -> &mut Acc<'s> {
        let mut acc = self;
        for &i in path {
            let i = i as usize;
            if matches!(acc.slots[i], Slot::Absent) {
                let Type::Message(m) = acc.msg.fields[i].ty else {
                    unreachable!("routes inline messages only")
                };
                acc.slots[i] = Slot::Inline(Acc::new(acc.schema, &acc.schema.messages[m]));
            }
            let Slot::Inline(child) = &mut acc.slots[i] else {
                unreachable!("an inlined field is never written directly")
            };
            acc = child;
        }
        acc
    }

    fn finish(self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        for (field, slot) in self.msg.fields.iter().zip(self.slots) {
            match slot {
                Slot::Written(b) => out.extend_from_slice(&b),
                Slot::Inline(acc) => wire::len_field(&mut out, field.number, &acc.finish()?),
                Slot::Absent if field.card == Card::One => {
                    zero(self.schema, field.ty, field.number, &mut out)?
                }
                Slot::Absent if field.card == Card::Unverified => {
                    return Err(format!(
                        "{}'s {} is absent, and whether {} writes it then is not verified",
                        self.msg.name,
                        field.json,
                        self.schema.release()
                    ))
                }
                Slot::Absent => {}
            }
        }
        Ok(out)
    }
}

/// A non-pointer field the JSON left out or set null (or a null element or
/// map value): its Go zero value, as field `n`.
fn zero(schema: &Schema, ty: Type, n: u32, out: &mut Vec<u8>) -> Result<(), String> {
    match ty {
        Type::String | Type::Time | Type::MicroTime | Type::Raw | Type::Bytes | Type::Items => {
            wire::len_field(out, n, b"")
        }
        Type::Int | Type::Uint | Type::Bool => wire::varint_field(out, n, 0),
        Type::Double => wire::fixed64_field(out, n, 0),
        // A zero Quantity's String() is "0".
        Type::Quantity => wire::len_field(out, n, b"\x0a\x010"),
        Type::IntOrString => wire::len_field(out, n, b"\x08\x00\x10\x00\x1a\x00"),
        Type::Message(m) => {
            let msg = &schema.messages[m];
            wire::len_field(out, n, &Acc::new(schema, msg).finish()?)
        }
        // `allows` is a non-pointer bool; the others are pointer and slice.
        Type::Union(Union::OrBool, _) => wire::len_field(out, n, b"\x08\x00"),
        Type::Union(_, _) => wire::len_field(out, n, b""),
        Type::Unsupported(t) => return Err(format!("no zero value of {t}")),
    }
    Ok(())
}

struct MsgSeed<'s> {
    schema: &'s Schema,
    msg: &'s Message,
}

impl<'de> DeserializeSeed<'de> for MsgSeed<'_> {
    type Value = Vec<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MsgSeed<'_> {
    type Value = Vec<u8>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} object", self.msg.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<u8>, A::Error> {
        let mut acc = Acc::new(self.schema, self.msg);
        while let Some(Str(key)) = map.next_key::<Str>()? {
            match self.msg.route(&key) {
                Some(Route::Field(path)) => {
                    let (last, through) = path.split_last().expect("a route has a field");
                    let acc = acc.at(through);
                    let field = &acc.msg.fields[*last as usize];
                    let seed = FieldSeed {
                        schema: self.schema,
                        field,
                    };
                    if let Some(b) = map.next_value_seed(seed)? {
                        acc.slots[*last as usize] = Slot::Written(b);
                    }
                }
                Some(Route::Skip) => {
                    map.next_value::<IgnoredAny>()?;
                }
                None => {
                    return Err(de::Error::custom(format!(
                        "{} has no field {key:?}",
                        self.msg.name
                    )))
                }
            }
        }
        acc.finish().map_err(de::Error::custom)
    }
}

/// A field's value, written with its tag: `None` for null.
struct FieldSeed<'s> {
    schema: &'s Schema,
    field: &'s Field,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Option<Vec<u8>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = Option<Vec<u8>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the value of {}", self.field.json)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let mut out = Vec::new();
        match self.field.card {
            Card::One | Card::Optional | Card::Unverified => {
                let v = ValueSeed {
                    schema: self.schema,
                    ty: self.field.ty,
                }
                .deserialize(d)?;
                v.write(&mut out, self.field.number);
            }
            Card::Repeated => d.deserialize_seq(Elements {
                seed: self,
                out: &mut out,
            })?,
            Card::Map => d.deserialize_map(Entries {
                seed: self,
                out: &mut out,
            })?,
        }
        Ok(Some(out))
    }
}

struct Elements<'a, 's> {
    seed: FieldSeed<'s>,
    out: &'a mut Vec<u8>,
}

impl<'de> Visitor<'de> for Elements<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array for {}", self.seed.field.json)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let seed = || ValueSeed {
            schema: self.seed.schema,
            ty: self.seed.field.ty,
        };
        while let Some(v) = seq.next_element_seed(Nullable(seed()))? {
            let n = self.seed.field.number;
            match v {
                Some(v) => v.write(self.out, n),
                None => zero(self.seed.schema, self.seed.field.ty, n, self.out)
                    .map_err(de::Error::custom)?,
            }
        }
        Ok(())
    }
}

struct Entries<'a, 's> {
    seed: FieldSeed<'s>,
    out: &'a mut Vec<u8>,
}

impl<'de> Visitor<'de> for Entries<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object for {}", self.seed.field.json)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ty = self.seed.field.ty;
        let mut entries = Vec::new();
        while let Some(Str(key)) = map.next_key::<Str>()? {
            let seed = ValueSeed {
                schema: self.seed.schema,
                ty,
            };
            let v = map.next_value_seed(Nullable(seed))?;
            entries.push((key, v));
        }
        // gogo sorts the keys (Go strings: by their bytes).
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut entry = Vec::new();
        for (key, v) in entries {
            entry.clear();
            wire::len_field(&mut entry, 1, key.as_bytes());
            match (v, ty) {
                (Some(v), _) => v.write(&mut entry, 2),
                // A nil byte slice is left out; a message is written zero.
                (None, Type::Bytes) => {}
                (None, _) => {
                    zero(self.seed.schema, ty, 2, &mut entry).map_err(de::Error::custom)?
                }
            }
            wire::len_field(self.out, self.seed.field.number, &entry);
        }
        Ok(())
    }
}

/// One value, as its field's wire type and payload.
enum Value {
    Varint(u64),
    Fixed64(u64),
    Len(Vec<u8>),
}

impl Value {
    fn write(&self, out: &mut Vec<u8>, number: u32) {
        match self {
            Value::Varint(v) => wire::varint_field(out, number, *v),
            Value::Fixed64(v) => wire::fixed64_field(out, number, *v),
            Value::Len(b) => wire::len_field(out, number, b),
        }
    }
}

struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nullable<S> {
    type Value = Option<S::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Nullable<S> {
    type Value = Option<S::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }
}

struct ValueSeed<'s> {
    schema: &'s Schema,
    ty: Type,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        use serde::Deserialize;
        let custom = |e: String| de::Error::custom(e);
        Ok(match self.ty {
            Type::String => Value::Len(Str::deserialize(d)?.0.as_bytes().to_vec()),
            Type::Bytes => {
                use base64::Engine;
                let s = Str::deserialize(d)?;
                let b = base64::engine::general_purpose::STANDARD
                    .decode(s.0.as_bytes())
                    .map_err(|e| custom(format!("bytes: {e}")))?;
                Value::Len(b)
            }
            Type::Int => Value::Varint(i64::deserialize(d)? as u64),
            Type::Uint => Value::Varint(u64::deserialize(d)?),
            Type::Bool => Value::Varint(bool::deserialize(d)? as u64),
            Type::Double => Value::Fixed64(f64::deserialize(d)?.to_bits()),
            Type::Time | Type::MicroTime => {
                let s = Str::deserialize(d)?;
                let (secs, nanos) = rfc3339(&s.0)
                    .ok_or_else(|| custom(format!("not an RFC 3339 time: {:?}", s.0)))?;
                let mut ts = Vec::new();
                // The zero time is written as an empty message.
                if (secs, nanos) != (GO_ZERO_TIME, 0) {
                    wire::varint_field(&mut ts, 1, secs as u64);
                    // metav1.Time drops the nanoseconds its JSON never had.
                    let nanos = if self.ty == Type::Time { 0 } else { nanos };
                    wire::varint_field(&mut ts, 2, nanos as u64);
                }
                Value::Len(ts)
            }
            Type::Quantity => {
                let mut q = Vec::new();
                wire::len_field(&mut q, 1, Str::deserialize(d)?.0.as_bytes());
                Value::Len(q)
            }
            Type::IntOrString => Value::Len(d.deserialize_any(IntOrStr)?),
            Type::Raw => {
                let raw = <&RawValue>::deserialize(d)?;
                let mut m = Vec::new();
                wire::len_field(&mut m, 1, raw.get().as_bytes());
                Value::Len(m)
            }
            Type::Items => {
                let items = Vec::<Str>::deserialize(d)?;
                let mut m = Vec::new();
                for Str(s) in items {
                    wire::len_field(&mut m, 1, s.as_bytes());
                }
                Value::Len(m)
            }
            Type::Message(m) => Value::Len(
                MsgSeed {
                    schema: self.schema,
                    msg: &self.schema.messages[m],
                }
                .deserialize(d)?,
            ),
            Type::Union(union, m) => Value::Len(d.deserialize_any(UnionSeed {
                schema: self.schema,
                union,
                props: m,
            })?),
            Type::Unsupported(t) => return Err(custom(format!("{t} is not transcoded"))),
        })
    }
}

/// A `JSONSchemaPropsOr…` union's message, its field chosen by the JSON
/// value's type as its `UnmarshalJSON` chooses: an object is the schema, an
/// array the union's list, a bool `JSONSchemaPropsOrBool`'s `allows`.
/// Anything else leaves the other two empty (their `UnmarshalJSON` looks
/// at the first byte only) and is refused by `JSONSchemaPropsOrBool`.
struct UnionSeed<'s> {
    schema: &'s Schema,
    union: Union,
    props: usize,
}

impl UnionSeed<'_> {
    fn other<E: de::Error>(&self) -> Result<Vec<u8>, E> {
        match self.union {
            Union::OrBool => Err(E::custom("boolean or JSON schema expected")),
            Union::OrArray | Union::OrStringArray => Ok(Vec::new()),
        }
    }
}

impl<'de> Visitor<'de> for UnionSeed<'_> {
    type Value = Vec<u8>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON schema, an array or a boolean")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<u8>, A::Error> {
        let props = MsgSeed {
            schema: self.schema,
            msg: &self.schema.messages[self.props],
        }
        .visit_map(map)?;
        let mut m = Vec::new();
        match self.union {
            Union::OrBool => {
                wire::varint_field(&mut m, 1, 1);
                wire::len_field(&mut m, 2, &props);
            }
            Union::OrArray | Union::OrStringArray => wire::len_field(&mut m, 1, &props),
        }
        Ok(m)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Vec<u8>, A::Error> {
        let ty = match self.union {
            Union::OrArray => Type::Message(self.props),
            Union::OrStringArray => Type::String,
            Union::OrBool => return self.other(),
        };
        let field = Field {
            json: "",
            number: 2,
            card: Card::Repeated,
            ty,
            omitempty: false,
        };
        let mut m = Vec::new();
        let seed = FieldSeed {
            schema: self.schema,
            field: &field,
        };
        Elements { seed, out: &mut m }.visit_seq(seq)?;
        Ok(m)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Vec<u8>, E> {
        match self.union {
            Union::OrBool => {
                let mut m = Vec::new();
                wire::varint_field(&mut m, 1, v as u64);
                Ok(m)
            }
            _ => self.other(),
        }
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Vec<u8>, E> {
        self.other()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Vec<u8>, E> {
        self.other()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Vec<u8>, E> {
        self.other()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Vec<u8>, E> {
        self.other()
    }
}

struct IntOrStr;

impl Visitor<'_> for IntOrStr {
    type Value = Vec<u8>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer or a string")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Vec<u8>, E> {
        let v = i32::try_from(v).map_err(|_| E::custom(format!("{v} is not an int32")))?;
        let mut m = Vec::new();
        wire::varint_field(&mut m, 1, 0);
        // Go's uint64(int32) sign-extends.
        wire::varint_field(&mut m, 2, i64::from(v) as u64);
        wire::len_field(&mut m, 3, b"");
        Ok(m)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<u8>, E> {
        let v = i64::try_from(v).map_err(|_| E::custom(format!("{v} is not an int32")))?;
        self.visit_i64(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
        let mut m = Vec::new();
        wire::varint_field(&mut m, 1, 1);
        wire::varint_field(&mut m, 2, 0);
        wire::len_field(&mut m, 3, v.as_bytes());
        Ok(m)
    }
}

/// A string, borrowed from the input when it has no escapes.
struct Str<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds.
const GO_ZERO_TIME: i64 = -62_135_596_800;

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: &str) -> Result<Vec<u8>, TranscodeError> {
        let s = Schema::v1_20();
        message(s, s.kind("v1", "Pod").unwrap(), json.as_bytes())
    }

    #[test]
    fn times_are_unix_seconds_and_the_zero_time_is_empty() {
        let created = |t: &str| pod(&format!(r#"{{"metadata":{{"creationTimestamp":"{t}"}}}}"#));
        // creationTimestamp = 8 of ObjectMeta: seconds, nanos 0.
        let ts = |b: Vec<u8>| fields(&fields(&b, 1)[0], 8)[0].clone();
        let mut want = Vec::new();
        wire::varint_field(&mut want, 1, 1_582_977_601);
        wire::varint_field(&mut want, 2, 0);
        assert_eq!(ts(created("2020-02-29T12:00:01Z").unwrap()), want);
        // metav1.Time keeps no fraction; an offset is read as Go reads it.
        assert_eq!(ts(created("2020-02-29T12:00:01.000123Z").unwrap()), want);
        assert_eq!(ts(created("2020-02-29T13:00:01+01:00").unwrap()), want);
        assert_eq!(ts(created("0001-01-01T00:00:00Z").unwrap()), b"");
        for bad in ["2020-02-29", "2020-13-01T00:00:00Z", ""] {
            assert!(created(bad).is_err(), "{bad}");
        }
        assert_eq!(rfc3339("0001-01-01T00:00:00Z"), Some((GO_ZERO_TIME, 0)));
    }

    #[test]
    fn an_empty_pod_has_every_non_pointer_field_at_its_zero_value() {
        let b = pod(r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}"#).unwrap();
        // metadata = 1: name "a", then the zero strings, generation 0 and
        // an empty creationTimestamp, clusterName "".
        let meta = b"\x0a\x01a\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x7a\x00";
        assert_eq!(
            &b[..2 + meta.len()],
            &[&[0x0a, meta.len() as u8][..], meta].concat()[..]
        );
    }

    #[test]
    fn a_key_the_schema_does_not_know_fails_the_object() {
        let e = pod(r#"{"metadata":{"name":"a"},"spec":{"newField":1}}"#).unwrap_err();
        assert!(e.to_string().contains("newField"), "{e}");
        assert!(pod(r#"{"metadata":{"creationTimestamp":"yesterday"}}"#).is_err());
        assert!(pod("[]").is_err());
        assert!(pod(r#"{"metadata":{}} trailing"#).is_err());
    }

    #[test]
    fn a_null_element_is_its_types_zero_value_in_its_wire_type() {
        let groups = |list: &str| {
            let json =
                format!(r#"{{"spec":{{"securityContext":{{"supplementalGroups":{list}}}}}}}"#);
            pod(&json).unwrap()
        };
        // supplementalGroups = 4, varints: null is 0, not an empty message.
        assert_eq!(groups("[7,null]"), groups("[7,0]"));
        assert!(groups("[7,0]").windows(4).any(|w| w == b"\x20\x07\x20\x00"));
    }

    /// The length-delimited values of field `n` of a message, in order.
    fn fields(mut b: &[u8], n: u64) -> Vec<Vec<u8>> {
        fn varint(b: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte < 0x80 {
                    return v;
                }
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let tag = varint(&mut b);
            match tag & 7 {
                0 => {
                    varint(&mut b);
                }
                1 => b = &b[8..],
                2 => {
                    let len = varint(&mut b) as usize;
                    if tag >> 3 == n {
                        out.push(b[..len].to_vec());
                    }
                    b = &b[len..];
                }
                w => panic!("wire type {w}"),
            }
        }
        out
    }

    /// Field `n` of a v1 CRD schema (JSONSchemaProps) written from `json`,
    /// and the messages of the JSON schemas `props`.
    fn schema_field(json: &str, n: u64, props: &[&str]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let s = Schema::v1_20();
        let m = s
            .message("apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps")
            .unwrap();
        let b = message(s, m, json.as_bytes()).unwrap();
        let props = props
            .iter()
            .map(|p| message(s, m, p.as_bytes()).unwrap())
            .collect();
        (fields(&b, n), props)
    }

    fn len_field(n: u32, b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        wire::len_field(&mut out, n, b);
        out
    }

    #[test]
    fn a_crd_schemas_items_are_a_schema_or_an_array_of_them() {
        let string = r#"{"type":"string"}"#;
        let (items, p) = schema_field(r#"{"items":{"type":"string"}}"#, 24, &[string]);
        assert_eq!(items, [len_field(1, &p[0])]);
        // A null element is a zero JSONSchemaProps, not left out.
        let (items, p) = schema_field(r#"{"items":[{"type":"string"},null]}"#, 24, &[string, "{}"]);
        assert_eq!(items, [[len_field(2, &p[0]), len_field(2, &p[1])].concat()]);
        let (items, _) = schema_field(r#"{"items":[]}"#, 24, &[]);
        assert_eq!(items, [Vec::<u8>::new()]);
        let (items, _) = schema_field(r#"{"items":null}"#, 24, &[]);
        assert!(items.is_empty());
    }

    #[test]
    fn additional_properties_and_items_are_a_bool_or_a_schema_that_allows() {
        for n in [30, 33] {
            let key = if n == 30 {
                "additionalProperties"
            } else {
                "additionalItems"
            };
            let one = |v: &str| {
                schema_field(
                    &format!(r#"{{"{key}":{v}}}"#),
                    n,
                    &[r#"{"type":"integer"}"#],
                )
            };
            assert_eq!(one("true").0, [b"\x08\x01".to_vec()]);
            assert_eq!(one("false").0, [b"\x08\x00".to_vec()]);
            let (v, p) = one(r#"{"type":"integer"}"#);
            assert_eq!(v, [[&b"\x08\x01"[..], &len_field(2, &p[0])].concat()]);
        }
        let s = Schema::v1_20();
        let m = s
            .message("apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps")
            .unwrap();
        for bad in [r#""yes""#, "[true]", "1"] {
            let json = format!(r#"{{"additionalProperties":{bad}}}"#);
            let e = message(s, m, json.as_bytes()).unwrap_err();
            assert!(
                e.to_string().contains("boolean or JSON schema expected"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn dependencies_are_sorted_entries_of_a_schema_or_property_names() {
        let json = r#"{"dependencies":{"b":["x","y"],"a":{"type":"string"},"c":null}}"#;
        let (entries, p) = schema_field(json, 32, &[r#"{"type":"string"}"#]);
        let entry = |k: &str, v: Vec<u8>| [len_field(1, k.as_bytes()), len_field(2, &v)].concat();
        assert_eq!(
            entries,
            [
                entry("a", len_field(1, &p[0])),
                entry("b", [len_field(2, b"x"), len_field(2, b"y")].concat()),
                entry("c", Vec::new()),
            ]
        );
    }

    #[test]
    fn map_entries_are_sorted_and_int_or_strings_keep_their_kind() {
        let b = pod(r#"{"metadata":{"labels":{"b":"2","a":"1"}}}"#).unwrap();
        let a = b.windows(3).position(|w| w == b"\x0a\x01a").unwrap();
        let bb = b.windows(3).position(|w| w == b"\x0a\x01b").unwrap();
        assert!(a < bb);
        let s = Schema::v1_20();
        let d = s.kind("apps/v1", "Deployment").unwrap();
        let json =
            br#"{"spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":-1}}}}"#;
        let b = message(s, d, json).unwrap();
        assert!(b.windows(9).any(|w| w == b"\x08\x01\x10\x00\x1a\x0325%"));
        let minus_one = [&[0x08, 0x00, 0x10][..], &[0xff; 9], &[0x01, 0x1a, 0x00]].concat();
        assert!(b.windows(minus_one.len()).any(|w| w == minus_one));
    }

    #[test]
    fn a_field_of_unverified_go_form_is_written_when_set_and_refuses_an_object_without_it() {
        // v1.36's schema has no `~` field left; the rule stands for one a
        // later facts table marks so: a thing with an unverified int (1)
        // and a pointer (2).
        let s = Schema::parse(
            r#"{"kinds":{"v1/Thing":"x.Thing"},"messages":{"x.Thing":[
                ["kind",0,"-","",false],["apiVersion",0,"-","",false],
                ["size",1,"~","int",true],["note",2,"?","string",true]]}}"#,
            0,
            "test",
        )
        .unwrap();
        let thing = s.kind("v1", "Thing").unwrap();
        let b = message(&s, thing, br#"{"kind":"Thing","size":0,"note":"n"}"#).unwrap();
        assert_eq!(b, b"\x08\x00\x12\x01n");
        let e = message(&s, thing, br#"{"kind":"Thing","note":"n"}"#).unwrap_err();
        assert!(e.to_string().contains("Thing's size is absent"), "{e}");
        // A null is absent too.
        assert!(message(&s, thing, br#"{"size":null}"#).is_err());
    }
}
