//! Pretty JSON from the cache against the real apiserver: what curl (or
//! `?pretty=true`, or `Accept: …;pretty=1`) gets through kubecache is the
//! apiserver's answer byte for byte — json-iterator's indentation with its
//! compact `MarshalJSON` values and left-margin map values, custom
//! resources left compact, errors indented, watches never.
#![cfg(feature = "real-apiserver")]

mod common;

use common::*;
use http::{HeaderMap, HeaderValue, Method};
use kubecache::request::Request;
use kubecache::serve::route::{decide, Route};
use kubecache::serve::ConsistentReads;
use serde_json::json;
use std::time::Duration;

const CURL: &str = "curl/8.5.0";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// The same bytes directly and through kubecache, which answered from its
/// cache; returns the body.
async fn same(up: &str, p: &Proxy, path: &str, headers: &[(&str, &str)]) -> String {
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let request = Request::parse(&Method::GET, &path.parse().unwrap(), &h);
    match decide(&p.cache, ConsistentReads::Forward, &request) {
        Ok(_) | Err(Route::Refused(_)) => {}
        Err(Route::Forward(r)) => panic!("{path} {headers:?} forwarded ({})", r.as_str()),
        Err(Route::Answered(_)) => panic!("{path} {headers:?} answered before reading"),
    }
    let a = fetch_with(&format!("{up}{path}"), headers).await;
    let b = fetch_with(&format!("{}{path}", p.url), headers).await;
    let (sa, sb) = (
        String::from_utf8_lossy(&a.2).into_owned(),
        String::from_utf8_lossy(&b.2).into_owned(),
    );
    assert_eq!((b.0, &b.1), (a.0, &a.1), "{path} {headers:?}");
    assert_eq!(sb, sa, "{path} {headers:?}");
    sa
}

/// A CRD whose schema has every kind of value the pretty serializer lays
/// out apart: nested property maps, raw defaults/enums/items,
/// a float minimum, a field-less subresource; and a number printer column.
fn prism_crd(n: &str) -> serde_json::Value {
    let mut c = crd(&format!("prisms{n}"), &format!("Prism{n}"), "Namespaced");
    let v = &mut c["spec"]["versions"][0];
    v["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "description": "A <prism> & more",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ratio": {"type": "number", "minimum": 1e-9, "maximum": 1e22},
                    "size": {"type": "integer", "default": 3, "enum": [1, 3, 5]},
                    "color": {"type": "string", "enum": ["red", "blue"], "example": "red"},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "nested": {"type": "object", "properties": {"deep": {"type": "object", "properties": {"x": {"type": "boolean"}}}}},
                    "empty": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "default": {}},
                },
                "required": ["size"],
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
    });
    v["subresources"] = json!({"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}});
    v["additionalPrinterColumns"] = json!([
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
    ]);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pretty_answers_equal_the_real_apiservers_byte_for_byte() {
    let up = real_apiserver();
    within(120, async {
        let n = unique_suffix().replace('-', "x");
        let crd_name = format!("prisms{n}.kubecache.test");
        establish(&up, prism_crd(&n)).await;
        let ns = format!("pretty-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "pretty"},
                         "annotations": {"note": "{\"k\": [1, 2]} <>&\u{2028}"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {},
                                     "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
                     "volumes": [{"name": "v", "emptyDir": {}}], "securityContext": {}}});
        let r = send(Method::POST, &format!("{up}/api/v1/namespaces/{ns}/pods"), Some(pod)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let rev = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "rev", "labels": {"app": "pretty"}},
            "data": {"spec": {"template": {"metadata": {}, "spec": {"containers": []}}}}, "revision": 2});
        let r = send(Method::POST, &format!("{up}/apis/apps/v1/namespaces/{ns}/controllerrevisions"), Some(rev)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let prisms = format!("/apis/kubecache.test/v1/namespaces/{ns}/prisms{n}");
        let prism = json!({"apiVersion": "kubecache.test/v1", "kind": format!("Prism{n}"),
            "metadata": {"name": "tiny"}, "spec": {"size": 3, "ratio": 1e-7, "nested": {"deep": {"x": true}}}});
        let r = send(Method::POST, &format!("{up}{prisms}"), Some(prism)).await;
        assert_eq!(r.status, 201, "{}", r.text());

        let p = start_proxy(&up).await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        wait_synced(&p, "/apis/apps/v1/controllerrevisions", "apps/v1/controllerrevisions").await;
        wait_synced(&p, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "apiextensions.k8s.io/v1/customresourcedefinitions").await;
        wait_synced(&p, "/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions", "apiextensions.k8s.io/v1beta1/customresourcedefinitions").await;
        wait_synced(&p, &format!("/apis/kubecache.test/v1/prisms{n}"), &format!("kubecache.test/v1/prisms{n}")).await;
        let pods = format!("/api/v1/namespaces/{ns}/pods");
        let revs = format!("/apis/apps/v1/namespaces/{ns}/controllerrevisions");
        for path in [&pods, &revs, &prisms] {
            converged(&up, &p, path, Duration::from_secs(10)).await;
        }
        let curl = [("user-agent", CURL)];
        let crd_path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}?resourceVersion=0");

        // Typed objects and lists, indented, with their raw values compact.
        let body = same(&up, &p, &format!("{pods}/p?resourceVersion=0"), &curl).await;
        assert!(body.starts_with("{\n  \"kind\": \"Pod\",") && !body.ends_with('\n'), "{body}");
        assert!(body.contains("\"resources\": {\n          \n        }"), "{body}");
        same(&up, &p, &format!("{pods}?resourceVersion=0"), &curl).await;
        let body = same(&up, &p, &format!("{revs}/rev?resourceVersion=0"), &curl).await;
        assert!(body.contains("\"data\": {\"spec\":"), "{body}");
        same(&up, &p, &format!("{revs}?resourceVersion=0"), &curl).await;
        let body = same(&up, &p, &crd_path, &curl).await;
        assert!(body.contains("\n  \"type\": \"object\",\n  \"properties\": {"), "map values restart: {body}");
        assert!(body.contains("\"status\": {}"), "{body}");
        let v1beta1 = crd_path.replace("/v1/", "/v1beta1/");
        same(&up, &p, &v1beta1, &curl).await;

        // Custom resources stay compact, without the newline.
        let body = same(&up, &p, &format!("{prisms}/tiny?resourceVersion=0"), &curl).await;
        assert!(body.starts_with("{\"apiVersion\"") && body.ends_with('}'), "{body}");
        same(&up, &p, &format!("{prisms}?resourceVersion=0"), &curl).await;

        // Tables (a float cell in Go's two-digit exponent) and metadata.
        for path in [&pods, &revs, &prisms] {
            same(&up, &p, &format!("{path}?resourceVersion=0"), &[("user-agent", CURL), ("accept", TABLE)]).await;
            same(&up, &p, &format!("{path}?resourceVersion=0&includeObject=Object"), &[("user-agent", CURL), ("accept", TABLE)]).await;
            same(&up, &p, &format!("{path}?resourceVersion=0"), &[("user-agent", CURL), ("accept", META_LIST)]).await;
        }
        let body = same(&up, &p, &format!("{prisms}/tiny?resourceVersion=0"), &[("user-agent", CURL), ("accept", TABLE)]).await;
        assert!(body.contains("1e-07"), "{body}");
        same(&up, &p, &format!("{pods}/p?resourceVersion=0"), &[("user-agent", CURL), ("accept", META)]).await;
        same(&up, &p, &format!("{prisms}/tiny?resourceVersion=0"), &[("user-agent", CURL), ("accept", META)]).await;

        // How a request asks: the query first, the agent second.
        let kc = [("user-agent", "kc")];
        let body = same(&up, &p, &format!("{pods}?resourceVersion=0&pretty=true"), &kc).await;
        assert!(body.starts_with("{\n"), "{body}");
        let body = same(&up, &p, &format!("{pods}?resourceVersion=0&pretty=false"), &curl).await;
        assert!(body.ends_with("}\n") && !body.contains("\n "), "{body}");
        same(&up, &p, &format!("{pods}?resourceVersion=0&pretty=yes"), &curl).await;
        same(&up, &p, &format!("{pods}?resourceVersion=0&pretty="), &curl).await;
        same(&up, &p, &format!("{pods}?resourceVersion=0"), &[("user-agent", "Mozilla/5.0 (X11)")]).await;
        same(&up, &p, &format!("{pods}?resourceVersion=0"), &[("user-agent", "Wget/1.21")]).await;
        let body = same(&up, &p, &format!("{pods}?resourceVersion=0"), &[("user-agent", "kc"), ("accept", "application/json;pretty=1")]).await;
        assert!(body.starts_with("{\n"), "{body}");

        // Errors made by kubecache are pretty too.
        let body = same(&up, &p, &format!("{pods}/nope?resourceVersion=0"), &curl).await;
        assert!(body.contains("\"metadata\": {\n    \n  }"), "{body}");
        same(&up, &p, &format!("{prisms}/nope?resourceVersion=0"), &curl).await;
        same(&up, &p, &format!("{pods}?resourceVersion=0&labelSelector=%3D%3D"), &curl).await;
        same(&up, &p, &format!("{pods}?resourceVersion=0&watch=1&labelSelector=%3D%3D"), &curl).await;
        same(&up, &p, &format!("{pods}?resourceVersion=0&limit=-1"), &[("user-agent", "kc"), ("accept", "application/json;pretty=1")]).await;

        // Watch events are never indented.
        let mut direct = LineWatch::open_with(&format!("{up}{pods}?watch=1&resourceVersion=0"), &curl).await;
        let mut through = LineWatch::open_with(&format!("{}{pods}?watch=1&resourceVersion=0", p.url), &curl).await;
        let line = direct.line().await;
        assert!(line.starts_with("{\"type\":\"ADDED\""), "{line}");
        assert_eq!(through.line().await, line);

        send(Method::DELETE, &format!("{up}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}"), None).await;
        send(Method::DELETE, &format!("{up}/api/v1/namespaces/{ns}"), None).await;
    })
    .await;
}
