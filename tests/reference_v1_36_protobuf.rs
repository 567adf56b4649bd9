//! kubecache's protobuf, following v1.36 (its personality for an upstream
//! at that release), against what kube-apiserver v1.36.2 wrote for the
//! same objects (`../shared/reference/apiserver-v1.36/lists`: the input
//! lists in `TYPE.json.gz`, v1.36.2's protobuf of them in
//! `TYPE.protobuf.gz`): every recorded type's list, byte for byte, as the
//! serving path writes it from a snapshot; and objects with fields v1.20
//! lacks (a pod's status.hostIPs, a sidecar's restartPolicy, a job's
//! status.terminating…) written under v1.36 and read back.

use flate2::read::GzDecoder;
use kubecache::encode::codec::{ListStyle, Store, TypeCodec};
use kubecache::encode::list_meta::ListMeta;
use kubecache::encode::personality::Personality;
use kubecache::encode::protobuf::{self, Schema};
use kubecache::encode::Repr;
use kubecache::selector::{FieldSelector, LabelSelector};
use kubecache::store::page::{read_page_counted, PageRequest};
use kubecache::store::HistoryLimits;
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;

fn reference_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference/apiserver-v1.36")
        .join(file)
}

fn reference(file: &str) -> Vec<u8> {
    let path = reference_path(file);
    let gz = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    GzDecoder::new(&gz[..]).read_to_end(&mut out).unwrap();
    out
}

/// The recorded protobuf lists v1.36.2 answered 200: their types
/// (`lists/TYPE.protobuf.gz` → `TYPE`).
fn recorded_protobuf_lists() -> Vec<String> {
    let index: Value =
        serde_json::from_slice(&std::fs::read(reference_path("index.json")).unwrap()).unwrap();
    index["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == 200)
        .filter_map(|e| {
            let file = e["file"].as_str()?;
            let t = file.strip_prefix("lists/")?.strip_suffix(".protobuf.gz")?;
            Some(t.to_string())
        })
        .collect()
}

/// The codec following v1.36 of a recorded list's type.
fn codec_of(list: &Value) -> TypeCodec {
    let api_version = list["apiVersion"].as_str().unwrap();
    let kind = list["kind"].as_str().unwrap().strip_suffix("List").unwrap();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let namespaced = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["metadata"]["namespace"].is_string());
    TypeCodec::new(group, api_version, kind, namespaced, ListStyle::Typed)
        .with_personality(Personality::of(1, 36).0)
}

/// kubecache's protobuf list of the recorded JSON list of `t`, as the
/// serving path writes a list from a snapshot.
fn kubecache_list(t: &str) -> Vec<u8> {
    let body = reference(&format!("lists/{t}.json.gz"));
    let codec = codec_of(&serde_json::from_slice(&body).unwrap());
    assert!(codec.protobuf_kind(), "{t}: no protobuf under v1.36");
    let list = codec.parse_list(&body).unwrap();
    let store = Store::new(HistoryLimits::default());
    store.replace(list.entries, list.rv);
    let snap = store.current();
    let (labels, fields) = (LabelSelector::default(), FieldSelector::default());
    let req = PageRequest {
        prefix: "",
        start: None,
        limit: 0,
        labels: &labels,
        fields: &fields,
    };
    let page = read_page_counted(&snap.items, &req, None);
    let meta = ListMeta::of_page(snap.rv, &page, codec.personality);
    let repr = Repr::Protobuf(None);
    assert!(
        repr.holds(&codec, &page.items),
        "{t}: an object v1.36 cannot hold"
    );
    repr.list(&codec, &meta, &page.items).unwrap().to_vec()
}

/// Where two bodies first differ, for a readable failure.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    let i = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let around = |b: &[u8]| format!("{:?}", &b[i.saturating_sub(24)..(i + 24).min(b.len())]);
    format!(
        "{} bytes, want {}; first difference at {i}: got {} want {}",
        got.len(),
        want.len(),
        around(got),
        around(want)
    )
}

#[test]
fn every_recorded_protobuf_list_is_v1_36s_byte_for_byte() {
    let types = recorded_protobuf_lists();
    assert!(types.len() >= 30, "{} recorded protobuf lists", types.len());
    let mut failed = Vec::new();
    for t in &types {
        let got = kubecache_list(t);
        let want = reference(&format!("lists/{t}.protobuf.gz"));
        if got != want {
            failed.push(format!("{t}: {}", first_difference(&got, &want)));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn v1_20s_protobuf_of_a_recorded_configmap_is_not_v1_36s() {
    // A configmap holds no field newer than v1.20 but for its managed
    // fields' subresource: one without is written under v1.20 too, with
    // v1.20's ObjectMeta (clusterName, 15, always written) and no
    // subresource (8) in its managed fields, so not as v1.36 writes it.
    let body = reference("lists/configmaps.json.gz");
    let list: Value = serde_json::from_slice(&body).unwrap();
    let item = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| {
            let json = serde_json::to_vec(i).unwrap();
            protobuf::object_message("v1", "ConfigMap", &json).is_ok()
        })
        .expect("a configmap v1.20 can write");
    let json = serde_json::to_vec(item).unwrap();
    let old = protobuf::object_message("v1", "ConfigMap", &json).unwrap();
    let new = v1_36("v1", "ConfigMap", item);
    assert_eq!(fields(&at(&old, &[1]), 15), [Vec::<u8>::new()]);
    assert!(fields(&at(&new, &[1]), 15).is_empty());
    let managed = |m: &[u8]| fields(&at(m, &[1]), 17);
    assert!(managed(&old).iter().all(|e| fields(e, 8).is_empty()));
    assert!(managed(&new).iter().all(|e| fields(e, 8).len() == 1));
    // A release between v1.20 and v1.36 writes no protobuf: it is the
    // upstream's.
    let codec = codec_of(&list);
    assert!(codec.protobuf_kind());
    assert!(!codec
        .with_personality(Personality::of(1, 28).0)
        .protobuf_kind());
    assert!(codec.with_personality(Personality::V1_20).protobuf_kind());
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
                let v = varint(&mut b);
                if tag >> 3 == n {
                    out.push(v.to_le_bytes().to_vec());
                }
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

/// One field's only value along a path of field numbers.
fn at(message: &[u8], path: &[u64]) -> Vec<u8> {
    let mut m = message.to_vec();
    for &n in path {
        let mut v = fields(&m, n);
        assert_eq!(v.len(), 1, "field {n} of {path:?}");
        m = v.remove(0);
    }
    m
}

fn v1_36(api_version: &str, kind: &str, object: &Value) -> Vec<u8> {
    let json = serde_json::to_vec(object).unwrap();
    protobuf::object_message_in(Schema::v1_36(), api_version, kind, &json).unwrap()
}

#[test]
fn a_pod_with_fields_newer_than_v1_20_is_written_under_v1_36_and_read_back() {
    let pod = json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "p", "namespace": "n"},
        "spec": {
            "initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
            "containers": [{
                "name": "app", "image": "app",
                "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
            }]
        },
        "status": {
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
            "observedGeneration": 3
        }
    });
    // v1.20 has none of them: the pod is refused (and forwarded).
    let json = serde_json::to_vec(&pod).unwrap();
    assert!(protobuf::object_message("v1", "Pod", &json).is_err());
    let m = v1_36("v1", "Pod", &pod);
    // The numbers of k8s-pb 0.9.0's prost types (Kubernetes 1.35's
    // generated.proto): PodStatus.hostIPs = 16 (HostIP.ip = 1),
    // observedGeneration = 17; Container.resizePolicy = 23
    // (ContainerResizePolicy.resourceName = 1, restartPolicy = 2),
    // restartPolicy = 24; PodSpec.initContainers = 20, containers = 2.
    let status = at(&m, &[3]);
    let host_ips: Vec<Vec<u8>> = fields(&status, 16).iter().map(|h| at(h, &[1])).collect();
    assert_eq!(host_ips, [b"10.0.0.1".to_vec(), b"fd00::1".to_vec()]);
    assert_eq!(fields(&status, 17), [3u64.to_le_bytes().to_vec()]);
    let init = at(&m, &[2, 20]);
    assert_eq!(at(&init, &[24]), b"Always");
    let app = at(&m, &[2, 2]);
    let policy = at(&app, &[23]);
    assert_eq!(
        (at(&policy, &[1]), at(&policy, &[2])),
        (b"cpu".to_vec(), b"NotRequired".to_vec())
    );
    // And no restartPolicy where none was set: a pointer.
    assert!(fields(&app, 24).is_empty());
    // v1.36 has no ObjectMeta.clusterName (15).
    assert!(fields(&at(&m, &[1]), 15).is_empty());

    let back = protobuf::decode_message_with(Schema::v1_36(), "v1", "Pod", &m).unwrap();
    assert_eq!(back["status"]["hostIPs"], pod["status"]["hostIPs"]);
    assert_eq!(back["status"]["observedGeneration"], 3);
    assert_eq!(back["spec"]["initContainers"][0]["restartPolicy"], "Always");
    assert_eq!(
        back["spec"]["containers"][0]["resizePolicy"],
        pod["spec"]["containers"][0]["resizePolicy"]
    );
    // Written again from what was read, the same bytes.
    assert_eq!(v1_36("v1", "Pod", &back), m);
}

#[test]
fn a_job_with_status_terminating_is_written_under_v1_36_and_read_back() {
    let job = json!({
        "kind": "Job", "apiVersion": "batch/v1",
        "metadata": {"name": "j", "namespace": "n"},
        "spec": {
            "podReplacementPolicy": "Failed",
            "managedBy": "kubernetes.io/job-controller",
            "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        },
        "status": {"active": 1, "terminating": 2, "ready": 1}
    });
    let json = serde_json::to_vec(&job).unwrap();
    assert!(protobuf::object_message("batch/v1", "Job", &json).is_err());
    let m = v1_36("batch/v1", "Job", &job);
    // JobStatus.terminating = 11, ready = 9; JobSpec.podReplacementPolicy
    // = 14, managedBy = 15 (k8s-pb 0.9.0).
    let status = at(&m, &[3]);
    assert_eq!(fields(&status, 11), [2u64.to_le_bytes().to_vec()]);
    assert_eq!(fields(&status, 9), [1u64.to_le_bytes().to_vec()]);
    let spec = at(&m, &[2]);
    assert_eq!(at(&spec, &[14]), b"Failed");
    assert_eq!(at(&spec, &[15]), b"kubernetes.io/job-controller");
    let back = protobuf::decode_message_with(Schema::v1_36(), "batch/v1", "Job", &m).unwrap();
    assert_eq!(back["status"]["terminating"], 2);
    assert_eq!(back["spec"]["managedBy"], "kubernetes.io/job-controller");
    assert_eq!(v1_36("batch/v1", "Job", &back), m);
}

#[test]
fn an_object_leaving_out_a_field_whose_pointer_ness_is_unverified_is_refused() {
    // A CSR's spec.expirationSeconds (8, new since v1.20) is one of the
    // fields schema_v1_36.facts marks `~`: set, it is written; left out,
    // whether v1.36 writes a zero is unknown, so the object is refused.
    let csr = |spec: Value| {
        json!({
            "kind": "CertificateSigningRequest", "apiVersion": "certificates.k8s.io/v1",
            "metadata": {"name": "c"}, "spec": spec
        })
    };
    let set = csr(json!({"request": "", "signerName": "s", "expirationSeconds": 600}));
    let m = v1_36("certificates.k8s.io/v1", "CertificateSigningRequest", &set);
    assert_eq!(fields(&at(&m, &[2]), 8), [600u64.to_le_bytes().to_vec()]);
    let unset = serde_json::to_vec(&csr(json!({"request": "", "signerName": "s"}))).unwrap();
    let e = protobuf::object_message_in(
        Schema::v1_36(),
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        &unset,
    )
    .unwrap_err();
    assert!(e.to_string().contains("expirationSeconds"), "{e}");
}
