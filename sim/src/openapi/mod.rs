//! The OpenAPI document the simulator serves: v1.20's `/openapi/v2` cut
//! down to the simulated types, in JSON and in gnostic's protobuf, and why
//! it could not be made (`OpenApiError`).
//!
//! Why v2 alone: a v1.20 apiserver serves no `/openapi/v3` (its 404 is
//! what kubectl meets there), and a current kubectl falls back on v2 for
//! everything that needs a schema. `kubectl -v=8` against v1.20 (and the
//! simulator) shows it: `create`/`apply` ask `/openapi/v3`, get 404, then
//! ask `/openapi/v2` with `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`;
//! as no PATCH operation in that document lists a `fieldValidation`
//! parameter, kubectl validates the manifest itself against its
//! definitions (an unknown field is refused before anything is sent),
//! and `explain` reads its descriptions from the same document. Serving v3
//! too would make kubectl trust the server's validation instead
//! (`?fieldValidation=Strict`), which v1.20 does not have.
//!
//! The document is `openapi/v2.json.gz` (made by `openapi/v2.sh` from a
//! real v1.20 apiserver: the simulated resources' paths and every
//! definition they reach), unpacked and encoded once, on first use.

pub mod gnostic;

use bytes::Bytes;
use gnostic::{Document, GnosticError};
use prost::Message;
use serde_json::Value;
use std::io::Read;
use std::sync::LazyLock;

/// v1.20's `/openapi/v2`, cut down to the simulated types (gzipped JSON).
const V2_GZ: &[u8] = include_bytes!("../../openapi/v2.json.gz");

/// Why the checked-in document could not be served.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    #[error("openapi/v2.json.gz does not unpack: {0}")]
    Gunzip(#[source] std::io::Error),
    #[error("openapi/v2.json.gz is not JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("openapi/v2.json.gz does not convert to protobuf: {0}")]
    Protobuf(#[source] GnosticError),
}

/// The v2 document in the two encodings `/openapi/v2` is served in.
pub struct V2 {
    /// Compact, as the apiserver writes it.
    pub json: Bytes,
    /// gnostic's `openapi.v2.Document`.
    pub protobuf: Bytes,
}

static DOCUMENT: LazyLock<Result<V2, OpenApiError>> = LazyLock::new(load);

/// The v2 document, made on the first call.
pub fn v2() -> Result<&'static V2, &'static OpenApiError> {
    DOCUMENT.as_ref()
}

fn load() -> Result<V2, OpenApiError> {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(V2_GZ)
        .read_to_end(&mut text)
        .map_err(OpenApiError::Gunzip)?;
    let doc: Value = serde_json::from_slice(&text).map_err(OpenApiError::Json)?;
    let json = Bytes::from(serde_json::to_vec(&doc).map_err(OpenApiError::Json)?);
    let protobuf = Document::from_json(doc).map_err(OpenApiError::Protobuf)?;
    Ok(V2 {
        json,
        protobuf: Bytes::from(protobuf.encode_to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Sim, SimOptions};

    #[test]
    fn the_checked_in_document_converts_to_protobuf() {
        let doc = v2().unwrap();
        let decoded = Document::decode(&doc.protobuf[..]).unwrap();
        let json: Value = serde_json::from_slice(&doc.json).unwrap();
        let defs = decoded.definitions.unwrap().additional_properties;
        assert_eq!(defs.len(), json["definitions"].as_object().unwrap().len());
        assert_eq!(
            decoded.paths.unwrap().path.len(),
            json["paths"].as_object().unwrap().len()
        );
    }

    #[test]
    fn every_simulated_kind_has_its_definition() {
        let doc: Value = serde_json::from_slice(&v2().unwrap().json).unwrap();
        let gvks: Vec<&Value> = doc["definitions"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(|d| d.get("x-kubernetes-group-version-kind"))
            .flat_map(|g| g.as_array().unwrap())
            .collect();
        let sim = Sim::new(&SimOptions {
            pods: 0,
            configmaps: 0,
            nodes: 0,
            ..SimOptions::default()
        });
        for t in sim.types.values() {
            let (g, v, k) = (&t.rt.gvr.group, &t.rt.gvr.version, &t.rt.kind);
            let has = |kind: &str| {
                gvks.iter()
                    .any(|x| x["group"] == **g && x["version"] == **v && x["kind"] == kind)
            };
            assert!(has(k) && has(&format!("{k}List")), "{g}/{v} {k}");
        }
    }

    #[test]
    fn every_resource_path_of_the_document_is_a_simulated_types() {
        let doc: Value = serde_json::from_slice(&v2().unwrap().json).unwrap();
        let sim = Sim::new(&SimOptions {
            pods: 0,
            configmaps: 0,
            nodes: 0,
            ..SimOptions::default()
        });
        for path in doc["paths"].as_object().unwrap().keys() {
            let rp = kubecache::request::ResourcePath::parse(path)
                .unwrap_or_else(|| panic!("{path} is a resource path"));
            assert!(
                sim.type_of(&rp.group, &rp.version, &rp.resource).is_some(),
                "{path}"
            );
        }
    }
}
