//! Micro-benchmarks of the hot paths, on realistic simulator pods:
//! assembling a list body from cached bytes, paging, selector matching,
//! decoding an upstream event into a store entry, continue tokens.
//! `cargo bench --bench micro`; figures are recorded in the README.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use kubecache::encode::json::{self, ListMeta};
use kubecache::request::ContinueToken;
use kubecache::selector::{FieldSelector, LabelSelector};
use kubecache::sim::{Sim, SimOptions};
use kubecache::store::page::{read_page, PageRequest};

const PODS: usize = 10_000;

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let sim = Sim::new(&SimOptions {
        pods: PODS,
        configmaps: 0,
        ..Default::default()
    });
    let pods = sim.type_of("", "v1", "pods").unwrap().clone();
    let snap = pods.store.current();
    let everything = (LabelSelector::default(), FieldSelector::default());
    let all = |limit| PageRequest {
        prefix: "",
        start: None,
        limit,
        labels: &everything.0,
        fields: &everything.1,
    };
    let page = read_page(&snap.items, &all(0));
    let bytes: usize = page.items.iter().map(|e| e.item.len()).sum();

    let mut g = c.benchmark_group("list");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("10k pods, read and assemble the JSON body", |b| {
        b.iter(|| {
            let page = read_page(&snap.items, &all(0));
            let meta = ListMeta::of_page(snap.rv, &page);
            black_box(json::list(&pods.codec, &meta, &page.items))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("page");
    g.bench_function("first page of 500 with remainingItemCount", |b| {
        b.iter(|| black_box(read_page(&snap.items, &all(500))))
    });
    let mid = page.items[PODS / 2].key.to_string();
    g.bench_function("a page of 500 from the middle", |b| {
        b.iter(|| {
            black_box(read_page(
                &snap.items,
                &PageRequest {
                    start: Some(&format!("{mid}\0")),
                    ..all(500)
                },
            ))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("select");
    g.throughput(Throughput::Elements(PODS as u64));
    let app = LabelSelector::parse("app in (web,api),tier!=cache").unwrap();
    g.bench_function("label selector over 10k pods", |b| {
        b.iter(|| {
            black_box(
                page.items
                    .iter()
                    .filter(|e| app.matches(|k| e.label(k)))
                    .count(),
            )
        })
    });
    let running = FieldSelector::parse("status.phase=Running,spec.nodeName!=")
        .unwrap()
        .convert(kubecache::selector::field::FieldRules::BuiltIn {
            group: "",
            version: "v1",
            kind: "Pod",
        })
        .unwrap();
    g.bench_function("field selector over 10k pods", |b| {
        b.iter(|| {
            black_box(
                page.items
                    .iter()
                    .filter(|e| running.matches(|f| e.field(f)))
                    .count(),
            )
        })
    });
    g.finish();

    let mut g = c.benchmark_group("decode");
    let event = pods.codec.object_bytes(&page.items[0]);
    g.throughput(Throughput::Bytes(event.len() as u64));
    g.bench_function("one pod from a watch event into an entry", |b| {
        b.iter(|| black_box(pods.codec.from_object(&event).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("continue");
    let token = ContinueToken::after(123_456, &mid).encode();
    g.bench_function("encode", |b| {
        b.iter(|| black_box(ContinueToken::after(123_456, &mid).encode()))
    });
    g.bench_function("decode", |b| {
        b.iter(|| black_box(ContinueToken::decode(&token).unwrap()))
    });
    g.finish();
}

criterion_group!(micro, benches);
criterion_main!(micro);
