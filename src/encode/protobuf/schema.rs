//! The protobuf messages of the API's Go types: which JSON key is which
//! field, and when gogo-protobuf writes a field at all. v1.20's are read
//! once from `schema.json`, which `schema.sh` dumps off the Go types by
//! reflection (their `protobuf` and `json` tags, whether each field is a
//! pointer, and the order they are declared in, which is the order Go's
//! JSON writes them in); v1.36's from `schema_v1_36.json`, in the same
//! format, which `schema_v1_36.py` derives from it, the k8s-pb crate's
//! messages (upstream's `generated.proto`) and the facts it lacks
//! (`schema_v1_36.facts`), and every release's between from
//! `schema_v1_21.json` … `schema_v1_35.json` (`--release N`). Which one a
//! codec writes with is its personality's (`Personality::protobuf`).

use std::collections::HashMap;
use std::sync::OnceLock;

/// When a field is written, as gogo's generated marshallers decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Card {
    /// A non-pointer field: always written, its zero value when absent.
    One,
    /// A pointer or byte slice: written when present and not null.
    Optional,
    /// A slice: one field per element.
    Repeated,
    /// A map with string keys: one entry message per key, in key order.
    Map,
    /// A field added since v1.20 whose Go pointer-ness is not verified
    /// (`~` in `schema_v1_36.json`): written when present, and an object
    /// that leaves it out is refused, as whether the apiserver writes its
    /// zero value is unknown (the object is forwarded, never written
    /// wrong).
    Unverified,
}

/// What a value is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    String,
    /// Base64 in JSON, the bytes in the message.
    Bytes,
    /// A signed integer: a varint of its two's complement, as Go's
    /// `uint64(v)` makes it.
    Int,
    Uint,
    Bool,
    Double,
    /// metav1.Time: `Timestamp{seconds, nanos: 0}`, empty when zero.
    Time,
    /// metav1.MicroTime: `Timestamp{seconds, nanos}`, empty when zero.
    MicroTime,
    /// resource.Quantity: `{string}` of its canonical form.
    Quantity,
    /// intstr.IntOrString: `{type, intVal, strVal}`.
    IntOrString,
    /// A message whose one field is the value's JSON bytes (RawExtension,
    /// FieldsV1, apiextensions' JSON).
    Raw,
    /// A named string slice (a user's `extra` values): `{repeated items}`.
    Items,
    /// A message of the schema.
    Message(usize),
    /// A CRD schema's `JSONSchemaPropsOr…` union of the message (its
    /// `JSONSchemaProps`): its JSON is one of its fields, told apart by the
    /// value's JSON type.
    Union(Union, usize),
    /// A Go type kubecache cannot transcode (`metav1.Duration`, which no
    /// served kind holds): meeting a value of it fails.
    Unsupported(&'static str),
}

/// The unions of apiextensions' `JSONSchemaProps`, each read as its
/// `UnmarshalJSON` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Union {
    /// `JSONSchemaPropsOrArray`: an object is `schema` (1), an array
    /// `jSONSchemas` (2).
    OrArray,
    /// `JSONSchemaPropsOrBool`: a bool is `allows` (1); an object is
    /// `allows: true` and `schema` (2).
    OrBool,
    /// `JSONSchemaPropsOrStringArray`: an object is `schema` (1), an array
    /// of strings `property` (2).
    OrStringArray,
}

#[derive(Debug)]
pub struct Field {
    /// The JSON key; empty for a struct inlined into its parent's JSON.
    pub json: &'static str,
    pub number: u32,
    pub card: Card,
    pub ty: Type,
    /// Whether its json tag says `omitempty`: Go's JSON leaves the field
    /// out when it is false, 0, "", a nil pointer or an empty slice or map.
    pub omitempty: bool,
}

/// Where a JSON key of a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The key is a field of the message (the last index) reached through
    /// the message's inlined fields (the ones before it).
    Field(Vec<u16>),
    /// In the JSON only (`kind`, `apiVersion`).
    Skip,
}

#[derive(Debug)]
pub struct Message {
    pub name: &'static str,
    /// In field number order, the order gogo writes them in.
    pub fields: Vec<Field>,
    /// Indices of `fields` in the Go struct's declaration order, the order
    /// its JSON keys come in.
    pub json_order: Vec<u16>,
    routes: HashMap<&'static str, Route>,
}

impl Message {
    pub fn route(&self, key: &str) -> Option<&Route> {
        self.routes.get(key)
    }
}

#[derive(Debug)]
pub struct Schema {
    pub messages: Vec<Message>,
    /// `apiVersion/kind` → message.
    kinds: HashMap<String, usize>,
    /// Which of an entry's memo slots the messages made with this schema
    /// are kept in (see [`Schema::SLOTS`]).
    slot: usize,
    /// The release whose Go types these are (`v1.20`).
    release: &'static str,
}

#[derive(serde::Deserialize)]
struct Raw {
    kinds: HashMap<String, String>,
    messages: HashMap<String, Vec<RawField>>,
}

/// A field as `schema.json` lists it: JSON key, number, cardinality, type,
/// omitempty.
type RawField = (String, u32, String, String, bool);

impl Schema {
    /// How many schemas kubecache has, each with its slot: an entry keeps
    /// its protobuf messages tagged with the slot of the schema they were
    /// made with, so that a codec following another release (the upstream
    /// upgraded, the entry did not change) never serves a message made
    /// with the other's (`Later::protobuf`).
    pub const SLOTS: usize = 17;

    /// The schema in memo slot `slot`, parsed on first use.
    fn load(slot: usize) -> &'static Schema {
        // Each schema's file and release, by slot (the slots are the order
        // the releases were added in: a slot, once given, is kept).
        const FILES: [(&str, &str); Schema::SLOTS] = [
            (include_str!("schema.json"), "v1.20"),
            (include_str!("schema_v1_36.json"), "v1.36"),
            (include_str!("schema_v1_33.json"), "v1.33"),
            (include_str!("schema_v1_34.json"), "v1.34"),
            (include_str!("schema_v1_35.json"), "v1.35"),
            (include_str!("schema_v1_32.json"), "v1.32"),
            (include_str!("schema_v1_21.json"), "v1.21"),
            (include_str!("schema_v1_22.json"), "v1.22"),
            (include_str!("schema_v1_23.json"), "v1.23"),
            (include_str!("schema_v1_24.json"), "v1.24"),
            (include_str!("schema_v1_25.json"), "v1.25"),
            (include_str!("schema_v1_26.json"), "v1.26"),
            (include_str!("schema_v1_27.json"), "v1.27"),
            (include_str!("schema_v1_28.json"), "v1.28"),
            (include_str!("schema_v1_29.json"), "v1.29"),
            (include_str!("schema_v1_30.json"), "v1.30"),
            (include_str!("schema_v1_31.json"), "v1.31"),
        ];
        static SCHEMAS: [OnceLock<Schema>; Schema::SLOTS] =
            [const { OnceLock::new() }; Schema::SLOTS];
        SCHEMAS[slot].get_or_init(|| {
            let (json, release) = FILES[slot];
            Schema::parse(json, slot, release).unwrap_or_else(|e| {
                panic!("the {release} schema kubecache carries is malformed: {e}")
            })
        })
    }

    /// The schema of the v1.20 API (`schema.json`, dumped off its Go types).
    pub fn v1_20() -> &'static Schema {
        Schema::load(0)
    }

    /// The schema of the v1.36 API: the kinds v1.36 serves by default,
    /// with the fields added since v1.20 and without the ones removed
    /// (ObjectMeta's clusterName).
    pub fn v1_36() -> &'static Schema {
        Schema::load(1)
    }

    /// The schema of the v1.32 API: 1.33's messages without the fields
    /// 1.33 added (`schema_v1_36.py --release 32`).
    pub fn v1_32() -> &'static Schema {
        Schema::load(5)
    }

    /// The schema of the v1.33 API: v1.36's Go types as v1.33 had them
    /// (`--release 33`: the k8s-pb crate generated from 1.33, without the
    /// fields and kinds of 1.34 and later).
    pub fn v1_33() -> &'static Schema {
        Schema::load(2)
    }

    /// The schema of the v1.34 API: 1.35.0's messages without the fields
    /// 1.35 added (`--release 34`).
    pub fn v1_34() -> &'static Schema {
        Schema::load(3)
    }

    /// The schema of the v1.35 API: 1.35.0's messages, without the fields
    /// and kinds 1.36 added (`--release 35`).
    pub fn v1_35() -> &'static Schema {
        Schema::load(4)
    }

    /// The slot messages made with this schema are tagged with (below
    /// [`Schema::SLOTS`]).
    pub fn slot(&self) -> u8 {
        // SLOTS is far below 256.
        self.slot as u8
    }

    /// The schema of `messages`' Go types.
    pub fn of(messages: crate::encode::personality::Messages) -> &'static Schema {
        Schema::of_release(messages.minor())
    }

    /// The schema of the v1.`minor` API (20 to 36; v1.20's below, v1.36's
    /// above): v1.21's to v1.31's are made as v1.32's are
    /// (`schema_v1_36.py --release N`), from the k8s-pb crate generated
    /// from 1.28 to 1.31 (1.21 to 1.27: 1.28's less the fields the facts
    /// date later, plus those gone by then), each checked against its
    /// release's k8s-openapi module.
    pub fn of_release(minor: u32) -> &'static Schema {
        match minor {
            ..=20 => Schema::v1_20(),
            21..=31 => Schema::load(6 + (minor - 21) as usize),
            32 => Schema::v1_32(),
            33 => Schema::v1_33(),
            34 => Schema::v1_34(),
            35 => Schema::v1_35(),
            _ => Schema::v1_36(),
        }
    }

    /// The release whose Go types these are (`v1.20`).
    pub fn release(&self) -> &'static str {
        self.release
    }

    /// The message of objects of `kind` in `api_version`.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<&Message> {
        self.kinds
            .get(&format!("{api_version}/{kind}"))
            .map(|&i| &self.messages[i])
    }

    /// A message by its Go name (`apimachinery/pkg/apis/meta/v1.Status`).
    pub fn message(&self, name: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.name == name)
    }

    pub(super) fn parse(text: &str, slot: usize, release: &'static str) -> Result<Schema, String> {
        let raw: Raw = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let mut names: Vec<&String> = raw.messages.keys().collect();
        names.sort();
        let index: HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut messages = Vec::with_capacity(names.len());
        let mut skips = Vec::with_capacity(names.len());
        for name in &names {
            let mut fields = Vec::new();
            let mut skip = Vec::new();
            // In declaration order: kept beside each field as it is sorted.
            let mut declared = Vec::new();
            for (json, number, card, ty, omitempty) in &raw.messages[*name] {
                if *number == 0 {
                    skip.push(leak(json.clone()));
                    continue;
                }
                let card = match card.as_str() {
                    "1" => Card::One,
                    "?" => Card::Optional,
                    "*" => Card::Repeated,
                    "map" => Card::Map,
                    "~" => Card::Unverified,
                    c => return Err(format!("{name}.{json}: cardinality {c:?}")),
                };
                let ty = match ty.as_str() {
                    "string" => Type::String,
                    "bytes" => Type::Bytes,
                    "int" => Type::Int,
                    "uint" => Type::Uint,
                    "bool" => Type::Bool,
                    "double" => Type::Double,
                    "time" => Type::Time,
                    "microtime" => Type::MicroTime,
                    "quantity" => Type::Quantity,
                    "intorstr" => Type::IntOrString,
                    "raw" => Type::Raw,
                    "items" => Type::Items,
                    t => {
                        let message = |m: &str| {
                            index
                                .get(m)
                                .copied()
                                .ok_or_else(|| format!("{name}.{json}: no message {m}"))
                        };
                        let union = [
                            ("orarray:", Union::OrArray),
                            ("orbool:", Union::OrBool),
                            ("orstrings:", Union::OrStringArray),
                        ]
                        .into_iter()
                        .find_map(|(p, u)| Some((u, t.strip_prefix(p)?)));
                        match (t.strip_prefix("unsupported:"), union) {
                            (Some(u), _) => Type::Unsupported(leak(u.into())),
                            (None, Some((u, m))) => Type::Union(u, message(m)?),
                            (None, None) => Type::Message(message(t)?),
                        }
                    }
                };
                declared.push(*number);
                fields.push(Field {
                    json: leak(json.clone()),
                    number: *number,
                    card,
                    ty,
                    omitempty: *omitempty,
                });
            }
            fields.sort_by_key(|f| f.number);
            let json_order = declared
                .iter()
                .map(|n| fields.iter().position(|f| f.number == *n).unwrap_or(0) as u16)
                .collect();
            messages.push(Message {
                name: leak((*name).clone()),
                fields,
                json_order,
                routes: HashMap::new(),
            });
            skips.push(skip);
        }
        // Routes after all fields are known: an inlined message's keys are
        // its parent's. A key of the parent's own wins over an inlined one,
        // as Go's shallower field does.
        let routes: Vec<HashMap<&'static str, Route>> = (0..messages.len())
            .map(|i| routes_of(&messages, &skips, i, 0))
            .collect::<Result<_, _>>()?;
        for (m, r) in messages.iter_mut().zip(routes) {
            m.routes = r;
        }
        let kinds = raw
            .kinds
            .into_iter()
            .map(|(k, m)| {
                let i = *index
                    .get(m.as_str())
                    .ok_or_else(|| format!("{k}: no {m}"))?;
                Ok((k, i))
            })
            .collect::<Result<_, String>>()?;
        Ok(Schema {
            messages,
            kinds,
            slot,
            release,
        })
    }
}

fn routes_of(
    messages: &[Message],
    skips: &[Vec<&'static str>],
    i: usize,
    depth: usize,
) -> Result<HashMap<&'static str, Route>, String> {
    if depth > 8 {
        return Err(format!("{}: inlined too deep", messages[i].name));
    }
    let mut routes = HashMap::new();
    for k in &skips[i] {
        routes.insert(*k, Route::Skip);
    }
    for (f, field) in messages[i].fields.iter().enumerate() {
        if !field.json.is_empty() {
            routes.insert(field.json, Route::Field(vec![f as u16]));
        }
    }
    for (f, field) in messages[i].fields.iter().enumerate() {
        if !field.json.is_empty() {
            continue;
        }
        let Type::Message(child) = field.ty else {
            return Err(format!("{}: an inlined {:?}", messages[i].name, field.ty));
        };
        for (k, r) in routes_of(messages, skips, child, depth + 1)? {
            if let Route::Field(path) = r {
                let mut p = vec![f as u16];
                p.extend(path);
                routes.entry(k).or_insert(Route::Field(p));
            }
        }
    }
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_loads_and_names_the_objects_of_every_built_in_kind() {
        let s = Schema::v1_20();
        let pod = s.kind("v1", "Pod").expect("pods");
        let meta = &pod.fields[0];
        assert_eq!(
            (meta.json, meta.number, meta.card),
            ("metadata", 1, Card::One)
        );
        assert_eq!(pod.route("kind"), Some(&Route::Skip));
        assert!(s.kind("apps/v1", "DeploymentList").is_some());
        assert!(s.kind("apiregistration.k8s.io/v1", "APIService").is_some());
        assert!(s.kind("v1", "NoSuchKind").is_none());
    }

    #[test]
    fn v1_36s_schema_drops_cluster_name_and_always_writes_a_subresource() {
        let s = Schema::v1_36();
        let meta = s
            .message("apimachinery/pkg/apis/meta/v1.ObjectMeta")
            .unwrap();
        assert!(meta.route("clusterName").is_none());
        assert!(Schema::v1_20()
            .message("apimachinery/pkg/apis/meta/v1.ObjectMeta")
            .unwrap()
            .route("clusterName")
            .is_some());
        let managed = s
            .message("apimachinery/pkg/apis/meta/v1.ManagedFieldsEntry")
            .unwrap();
        let sub = managed.fields.iter().find(|f| f.number == 8).unwrap();
        assert_eq!((sub.json, sub.card), ("subresource", Card::One));
        // Kinds v1.36 serves that v1.20 did not, and none it stopped serving.
        assert!(s
            .kind("autoscaling/v2", "HorizontalPodAutoscaler")
            .is_some());
        assert!(s.kind("batch/v1", "CronJob").is_some());
        assert!(s.kind("extensions/v1beta1", "Ingress").is_none());
        assert_eq!((s.slot(), Schema::v1_20().slot()), (1, 0));
    }

    #[test]
    fn fields_added_since_v1_20_route_and_carry_their_go_form() {
        let s = Schema::v1_36();
        let status = s.message("api/core/v1.PodStatus").unwrap();
        let Some(Route::Field(path)) = status.route("hostIPs") else {
            panic!("no hostIPs")
        };
        let host_ips = &status.fields[path[0] as usize];
        assert_eq!((host_ips.number, host_ips.card), (16, Card::Repeated));
        // Every field schema_v1_36.facts once marked `~` is read from its
        // Go type now: a CSR's expirationSeconds is a pointer.
        let csr = s
            .message("api/certificates/v1.CertificateSigningRequestSpec")
            .unwrap();
        let exp = csr.fields.iter().find(|f| f.number == 8).unwrap();
        assert_eq!(
            (exp.json, exp.card, exp.omitempty),
            ("expirationSeconds", Card::Optional, true)
        );
        // But one: 1.36's ResourceHealth.message, whose Go form no 1.36
        // source found says.
        let unverified: Vec<(&str, &str)> = s
            .messages
            .iter()
            .flat_map(|m| m.fields.iter().map(move |f| (m, f)))
            .filter(|(_, f)| f.card == Card::Unverified)
            .map(|(m, f)| (m.name, f.json))
            .collect();
        assert_eq!(unverified, [("api/core/v1.ResourceHealth", "message")]);
        // A CRD schema's rules are keyed as its json tag spells them.
        let props = s
            .message("apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps")
            .unwrap();
        let Some(Route::Field(path)) = props.route("x-kubernetes-validations") else {
            panic!("no x-kubernetes-validations")
        };
        assert_eq!(props.fields[path[0] as usize].number, 44);
        assert!(props.route("xKubernetesValidations").is_none());
        // DeviceConfiguration is inlined (3) in an allocation's config:
        // its opaque (1) is the config's own key.
        let config = s
            .message("api/resource/v1.DeviceAllocationConfiguration")
            .unwrap();
        let Some(Route::Field(path)) = config.route("opaque") else {
            panic!("no opaque")
        };
        assert_eq!(config.fields[path[0] as usize].number, 3);
        assert_eq!(path.len(), 2);
        // v1.36 serves MutatingAdmissionPolicy at admissionregistration/v1.
        let map = s
            .kind("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy")
            .unwrap();
        assert_eq!(
            map.name,
            "api/admissionregistration/v1.MutatingAdmissionPolicy"
        );
        assert!(Schema::v1_20()
            .kind("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy")
            .is_none());
    }

    #[test]
    fn an_inlined_structs_keys_route_through_it() {
        let s = Schema::v1_20();
        let volume = s.message("api/core/v1.Volume").unwrap();
        // Volume{name = 1, VolumeSource (inlined) = 2{…, configMap = 19}}.
        let Some(Route::Field(path)) = volume.route("configMap") else {
            panic!("no route");
        };
        assert_eq!(path[0], 1);
        let Type::Message(source) = volume.fields[1].ty else {
            panic!("not a message")
        };
        assert_eq!(s.messages[source].fields[path[1] as usize].number, 19);
        assert_eq!(volume.route("name"), Some(&Route::Field(vec![0])));
    }

    #[test]
    fn fields_know_their_omitempty_and_their_declaration_order() {
        let s = Schema::v1_20();
        let secret = s.kind("v1", "Secret").unwrap();
        // Secret declares metadata, immutable (5), data (2), stringData
        // (4), type (3): its JSON keys come in that order.
        let order: Vec<u32> = secret
            .json_order
            .iter()
            .map(|&i| secret.fields[i as usize].number)
            .collect();
        assert_eq!(order, [1, 5, 2, 4, 3]);
        let volume = s.message("api/core/v1.Volume").unwrap();
        assert!(
            !volume.fields[0].omitempty,
            "a volume's name is always written"
        );
        assert!(secret.fields.iter().all(|f| f.omitempty));
    }
}
