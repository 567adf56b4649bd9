//! The simulator's OpenAPI document: `/openapi/v2` in JSON and in
//! gnostic's protobuf, negotiated as v1.20 negotiates it, no `/openapi/v3`
//! (v1.20 has none) and — with the `real-apiserver` feature — the same
//! definitions and paths as the real v1.20 apiserver's for the simulated
//! types, in both encodings.

mod common;

use common::*;
use kubecache_sim::openapi::gnostic::Document;
use prost::Message;
use serde_json::Value;

const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

#[tokio::test]
async fn the_simulator_serves_openapi_v2_in_json_and_protobuf_and_no_v3() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let v2 = format!("{}/openapi/v2", sim.url);
        let (status, _, json) = fetch_with(&v2, &[("accept", "application/json")]).await;
        assert_eq!(status, 200);
        let json: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(json["swagger"], "2.0");
        let replicas =
            &json["definitions"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"];
        assert_eq!(replicas["type"], "integer");
        let (status, ct, pb) = fetch_with(&v2, &[("accept", PROTOBUF)]).await;
        assert_eq!((status, ct.as_str()), (200, "application/octet-stream"));
        let doc = Document::decode(&pb[..]).unwrap();
        let names: Vec<&str> = doc
            .definitions
            .as_ref()
            .unwrap()
            .additional_properties
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        let json_names: Vec<&str> = json["definitions"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, json_names);
        let (status, _, body) = fetch_with(&v2, &[("accept", "application/yaml")]).await;
        assert_eq!((status, body.len()), (406, 0));
        for path in ["/openapi/v3", "/openapi/v3/apis/apps/v1", "/swagger.json"] {
            let r = get(&format!("{}{path}", sim.url)).await;
            assert_eq!(r.status, 404, "{path}");
        }
    })
    .await;
}

#[cfg(feature = "real-apiserver")]
mod against_the_real_apiserver {
    use super::*;
    use kubecache_sim::openapi::gnostic::{
        additional_properties_item, parameter, parameters_item, response_value, schema_item,
        NamedAny, Operation, PathItem, Schema,
    };

    /// A value with its objects' keys in order (Go's map order is not).
    fn sorted(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut entries: Vec<(String, Value)> = m.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            v => v,
        }
    }

    /// Vendor extensions' YAML as canonical JSON (gnostic writes block
    /// YAML, the simulator JSON, which is flow YAML; clients read either
    /// the same), in name order.
    fn canonical(ext: &mut [NamedAny]) {
        for e in ext.iter_mut() {
            if let Some(v) = e.value.as_mut() {
                let value: Value = serde_saphyr::from_str(&v.yaml).unwrap();
                v.yaml = sorted(value).to_string();
            }
        }
        ext.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// A schema with its vendor extensions canonical and its properties
    /// in name order: the apiserver's protobuf has them in Go's map order.
    fn canonical_schema(s: &mut Schema) {
        canonical(&mut s.vendor_extension);
        if let Some(p) = s.properties.as_mut() {
            for p in &mut p.additional_properties {
                p.value.as_mut().map(canonical_schema);
            }
            p.additional_properties.sort_by(|a, b| a.name.cmp(&b.name));
        }
        if let Some(items) = s.items.as_mut() {
            items.schema.iter_mut().for_each(canonical_schema);
        }
        if let Some(a) = s.additional_properties.as_mut() {
            if let Some(additional_properties_item::Oneof::Schema(s)) = a.oneof.as_mut() {
                canonical_schema(s);
            }
        }
    }

    fn canonical_operation(o: &mut Operation) {
        canonical(&mut o.vendor_extension);
        for p in &mut o.parameters {
            if let Some(parameters_item::Oneof::Parameter(p)) = p.oneof.as_mut() {
                if let Some(parameter::Oneof::BodyParameter(b)) = p.oneof.as_mut() {
                    b.schema.as_mut().map(canonical_schema);
                }
            }
        }
        if let Some(r) = o.responses.as_mut() {
            r.response_code.sort_by(|a, b| a.name.cmp(&b.name));
        }
        for r in o.responses.iter_mut().flat_map(|r| &mut r.response_code) {
            if let Some(response_value::Oneof::Response(r)) =
                r.value.as_mut().and_then(|v| v.oneof.as_mut())
            {
                if let Some(schema_item::Oneof::Schema(s)) =
                    r.schema.as_mut().and_then(|s| s.oneof.as_mut())
                {
                    canonical_schema(s);
                }
            }
        }
    }

    fn canonical_path(p: &mut PathItem) {
        canonical(&mut p.vendor_extension);
        for o in [
            &mut p.get,
            &mut p.put,
            &mut p.post,
            &mut p.delete,
            &mut p.options,
            &mut p.head,
            &mut p.patch,
        ] {
            o.as_mut().map(canonical_operation);
        }
    }

    /// Fails on the first line where the two differ, printed in full.
    fn same<T: std::fmt::Debug>(what: &str, got: &T, want: &T) {
        let (got, want) = (format!("{got:#?}"), format!("{want:#?}"));
        if let Some((i, (g, w))) = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
        {
            panic!("{what}, line {i}: the simulator's\n{g}\nthe real apiserver's\n{w}");
        }
        assert_eq!(got.lines().count(), want.lines().count(), "{what}");
    }

    async fn json(url: &str) -> Value {
        let (status, _, body) = fetch_with(url, &[("accept", "application/json")]).await;
        assert_eq!(status, 200, "{url}");
        serde_json::from_slice(&body).unwrap()
    }

    async fn protobuf(url: &str) -> Document {
        let (status, _, body) = fetch_with(url, &[("accept", PROTOBUF)]).await;
        assert_eq!(status, 200, "{url}");
        let mut doc = Document::decode(&body[..]).unwrap();
        for d in &mut doc.definitions.as_mut().unwrap().additional_properties {
            d.value.as_mut().map(canonical_schema);
        }
        for p in &mut doc.paths.as_mut().unwrap().path {
            p.value.as_mut().map(canonical_path);
        }
        doc
    }

    /// Every definition and path the simulator serves is the real
    /// apiserver's, so kubectl validates and explains against the
    /// simulator as against v1.20; as JSON, and as protobuf (which checks
    /// the simulator's conversion against gnostic's).
    #[tokio::test]
    async fn the_simulators_openapi_definitions_and_paths_are_the_real_apiservers() {
        within(120, async {
            let up = real_apiserver();
            let sim = SimBuilder::new().start().await;
            let real = json(&format!("{up}/openapi/v2")).await;
            let simulated = json(&format!("{}/openapi/v2", sim.url)).await;
            for part in ["definitions", "paths"] {
                let entries = simulated[part].as_object().unwrap();
                assert!(entries.len() > 40, "{part}");
                for (name, entry) in entries {
                    assert_eq!(Some(entry), real[part].get(name), "{part} {name}");
                }
            }
            for key in ["swagger", "securityDefinitions", "security"] {
                assert_eq!(simulated[key], real[key], "{key}");
            }
            let real = protobuf(&format!("{up}/openapi/v2")).await;
            let simulated = protobuf(&format!("{}/openapi/v2", sim.url)).await;
            let defs = &simulated
                .definitions
                .as_ref()
                .unwrap()
                .additional_properties;
            let real_defs = &real.definitions.as_ref().unwrap().additional_properties;
            for d in defs {
                let want = real_defs.iter().find(|r| r.name == d.name);
                same(&format!("definition {}", d.name), &Some(d), &want);
            }
            let real_paths = &real.paths.as_ref().unwrap().path;
            for p in &simulated.paths.as_ref().unwrap().path {
                let want = real_paths.iter().find(|r| r.name == p.name);
                same(&format!("path {}", p.name), &Some(p), &want);
            }
            assert_eq!(simulated.security, real.security);
            assert_eq!(simulated.security_definitions, real.security_definitions);
        })
        .await;
    }
}
