//! kubecache's representations, following v1.36 (its personality for an
//! upstream at that release), against what kube-apiserver v1.36.2
//! answered for the same objects (`../shared/reference/apiserver-v1.36`:
//! the input lists in `lists/TYPE.json.gz`, read at one resourceVersion):
//! a streaming list (`sendInitialEvents=true`) of a namespace's configmaps
//! served from the cache — the same ADDED events and initial-events-end
//! bookmark, byte for byte — and a walk of its pages (`limit=2`), their
//! continue tokens included.

use flate2::read::GzDecoder;
use http_body_util::BodyExt;
use kubecache::encode::codec::{ListStyle, Store, TypeCodec};
use kubecache::encode::json;
use kubecache::encode::list_meta::ListMeta;
use kubecache::encode::personality::Personality;
use kubecache::encode::Repr;
use kubecache::request::ContinueToken;
use kubecache::selector::{FieldSelector, LabelSelector};
use kubecache::serve::watch::{self, Schedule, Selection, Start, WatchSpec};
use kubecache::store::page::{read_page_counted, PageRequest};
use kubecache::store::HistoryLimits;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

fn reference(file: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference/apiserver-v1.36")
        .join(file);
    let gz = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    GzDecoder::new(&gz[..]).read_to_end(&mut out).unwrap();
    out
}

/// The recorded configmaps in a store, read with a codec following v1.36.
fn configmaps() -> (Arc<TypeCodec>, Store) {
    let codec = TypeCodec::new("", "v1", "ConfigMap", true, ListStyle::Typed)
        .with_personality(Personality::of(1, 36).0);
    let list = codec
        .parse_list(&reference("lists/configmaps.json.gz"))
        .unwrap();
    let store = Store::new(HistoryLimits::default());
    store.replace(list.entries, list.rv);
    (Arc::new(codec), store)
}

fn lines(b: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(b)
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_streaming_list_from_the_cache_is_v1_36s_byte_for_byte() {
    let (codec, store) = configmaps();
    let spec = WatchSpec {
        start: Start::InitialEvents,
        selection: Selection {
            namespace: Some("ref-2".into()),
            ..Default::default()
        },
        repr: Repr::Json,
        bookmarks: true,
        timeout: Duration::from_millis(200),
        schedule: Schedule::Timer,
    };
    let resp = watch::serve(Arc::new(store), codec, spec, "v1/configmaps".into());
    let got = resp.into_body().collect().await.unwrap().to_bytes();
    let want = reference("watch/watchlist-configmaps.json.gz");
    let (got, want) = (lines(&got), lines(&want));
    assert!(want.len() > 100, "{} events recorded", want.len());
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "event {i}");
    }
    assert!(want[want.len() - 1].contains(r#""k8s.io/initial-events-end":"true""#));
}

#[test]
fn a_walk_of_pages_is_v1_36s_byte_for_byte_continue_tokens_included() {
    let (codec, store) = configmaps();
    let snap = store.current();
    let (labels, fields) = (LabelSelector::default(), FieldSelector::default());
    let mut start: Option<String> = None;
    for n in 0..3 {
        let req = PageRequest {
            prefix: "ref-1/",
            start: start.as_deref(),
            limit: 2,
            labels: &labels,
            fields: &fields,
        };
        let counts = Some((store.remaining_counts(), snap.version()));
        let page = read_page_counted(&snap.items, &req, counts);
        let meta = ListMeta::of_page(snap.rv, &page, codec.personality);
        let body = json::list(&codec, &meta, &page.items).unwrap();
        let want = reference(&format!("paging/configmaps.page{n}.json.gz"));
        assert_eq!(
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(&want),
            "page {n}"
        );
        let token = ContinueToken::decode(meta.continue_token.as_deref().unwrap()).unwrap();
        start = Some(token.start);
    }
}

#[test]
fn v1_20s_pages_keep_their_continue_keys_without_the_slash() {
    let (codec, store) = configmaps();
    let codec = codec.with_personality(Personality::V1_20);
    let snap = store.current();
    let (labels, fields) = (LabelSelector::default(), FieldSelector::default());
    let req = PageRequest {
        prefix: "ref-1/",
        start: None,
        limit: 2,
        labels: &labels,
        fields: &fields,
    };
    let page = read_page_counted(&snap.items, &req, None);
    let meta = ListMeta::of_page(snap.rv, &page, codec.personality);
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(meta.continue_token.unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(raw).unwrap(),
        r#"{"v":"meta.k8s.io/v1","rv":2250,"start":"conf-0004\u0000"}"#
    );
}
