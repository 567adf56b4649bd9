//! Micro-benchmarks of the hot paths, on realistic simulator pods:
//! assembling a list body from cached bytes, paging, selector matching,
//! decoding an upstream event into a store entry, gzip at three levels,
//! the pretty layout, Table rows and Table lists, protobuf transcoding and
//! protobuf lists, continue tokens, an edge snapshot written and read,
//! an event applied to a store with parked subscribers (and how long a
//! reader beside it waits).
//! `cargo bench --bench micro`; figures are recorded in docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kubecache::cache::bodies::compress;
use kubecache::cache::bodies::Budget;
use kubecache::cache::bodies::Pieces;
use kubecache::cache::snapshot::{Snapshots, TypeState};
use kubecache::encode::json;
use kubecache::encode::list_meta::ListMeta;
use kubecache::encode::pretty;
use kubecache::encode::print::Printer;
use kubecache::encode::protobuf;
use kubecache::encode::table::{Include, TableSpec};
use kubecache::encode::Repr;
use kubecache::request::accept::MetaVersion;
use kubecache::request::ContinueToken;
use kubecache::selector::{FieldSelector, LabelSelector};
use kubecache::store::page::{read_page, read_page_counted, PageRequest, RemainingCounts};
use kubecache_sim::{Sim, SimOptions};
use std::hint::black_box;
use std::sync::Arc;

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
            let meta = ListMeta::of_page(snap.rv, &page, Default::default());
            black_box(Repr::Json.list(&pods.codec, &meta, &page.items).unwrap())
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
    // A whole walk: each page counting the rest of the range, against each
    // page taking the count its predecessor left.
    let walk = |counts: Option<&RemainingCounts>| {
        let mut start: Option<String> = None;
        let mut pages = 0;
        loop {
            let req = PageRequest {
                start: start.as_deref(),
                ..all(500)
            };
            let p = read_page_counted(&snap.items, &req, counts.map(|c| (c, snap.version())));
            pages += 1;
            match p.continue_after {
                Some(k) => start = Some(format!("{k}\0")),
                None => return pages,
            }
        }
    };
    g.bench_function("a limit=500 walk of 10k, counting every page", |b| {
        b.iter(|| black_box(walk(None)))
    });
    g.bench_function("a limit=500 walk of 10k, counts remembered", |b| {
        b.iter(|| black_box(walk(Some(&RemainingCounts::default()))))
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

    let body = Repr::Json
        .list(
            &pods.codec,
            &ListMeta::of_page(snap.rv, &page, Default::default()),
            &page.items,
        )
        .unwrap();
    let mut g = c.benchmark_group("gzip");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(10);
    for level in [1, 2, 4] {
        let z = compress::gzip_at(&body, flate2::Compression::new(level)).unwrap();
        eprintln!(
            "gzip level {level}: {} of {} bytes ({:.1}%)",
            z.len(),
            body.len(),
            100.0 * z.len() as f64 / body.len() as f64
        );
        g.bench_function(format!("10k-pod list, level {level}"), |b| {
            b.iter(|| black_box(compress::gzip_at(&body, flate2::Compression::new(level)).unwrap()))
        });
    }
    g.finish();

    // The other way to never compress the same bytes twice: each item
    // compressed once on its own, as the piece that follows its predecessor
    // (whose bytes are its window), and a body stitched from the pieces
    // (src/serve/pieces.rs).
    let items: Vec<&[u8]> = page.items.iter().map(|e| &e.item[..]).collect();
    let piece = |i: usize, window: bool| match (i, window) {
        (0, _) => compress::Piece::new(b"", &[items[0]]),
        (_, true) => compress::Piece::new(items[i - 1], &[b",", items[i]]),
        (_, false) => compress::Piece::new(b"", &[b",", items[i]]),
    };
    let no_window: usize = (0..items.len()).map(|i| piece(i, false).len()).sum();
    eprintln!(
        "pieces without a window: {:.1}% of the JSON",
        100.0 * no_window as f64 / body.len() as f64
    );
    let (head, tail) = json::list_ends(
        &pods.codec,
        &ListMeta::of_page(snap.rv, &page, Default::default()),
    );
    let pieces = Arc::new(Pieces::new(Arc::new(Budget::default())));
    // The first stitch finds none and has them made in the background.
    let z = loop {
        match pieces
            .stitch(&head, &page.items, &tail, &snap.items)
            .unwrap()
        {
            Some(z) => break z,
            None => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    };
    eprintln!(
        "stitched gzip: {} of {} bytes ({:.1}%)",
        z.len(),
        body.len(),
        100.0 * z.len() as f64 / body.len() as f64
    );
    let mut g = c.benchmark_group("gzip stitched");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(10);
    g.bench_function(
        "compress every item as a piece after its predecessor",
        |b| b.iter(|| black_box((0..items.len()).map(|i| piece(i, true)).collect::<Vec<_>>())),
    );
    g.bench_function("stitch the 10k-pod list from kept pieces", |b| {
        b.iter(|| {
            black_box(
                pieces
                    .stitch(&head, &page.items, &tail, &snap.items)
                    .unwrap(),
            )
        })
    });
    g.finish();
    let mut g = c.benchmark_group("gzip stitched");
    g.bench_function("one changed item: its piece and its successor's", |b| {
        b.iter(|| black_box((piece(PODS / 2, true), piece(PODS / 2 + 1, true))))
    });
    g.finish();

    let mut g = c.benchmark_group("pretty");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(10);
    g.bench_function("indent the 10k-pod list as json-iterator does", |b| {
        b.iter(|| black_box(pretty::indent(&body, false).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("table");
    g.throughput(Throughput::Elements(PODS as u64));
    g.sample_size(10);
    let printer = Printer::builtin(Default::default(), "", "v1", "pods").unwrap();
    g.bench_function("print 10k pod rows (first use)", |b| {
        b.iter(|| {
            for e in &page.items {
                black_box(printer.row(&e.item));
            }
        })
    });
    let spec = Repr::Table(TableSpec::new(
        MetaVersion::V1,
        Include::Metadata,
        printer.clone(),
    ));
    let meta = ListMeta::of_page(snap.rv, &page, Default::default());
    g.bench_function("10k-pod Table list from cached rows", |b| {
        b.iter(|| black_box(spec.list(&pods.codec, &meta, &page.items).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("protobuf");
    g.throughput(Throughput::Elements(PODS as u64));
    g.sample_size(10);
    g.bench_function("transcode 10k pods' JSON to messages (first use)", |b| {
        b.iter(|| {
            for e in &page.items {
                black_box(protobuf::object_message("v1", "Pod", &e.item).unwrap());
            }
        })
    });
    let proto = Repr::Protobuf(None);
    assert!(proto.holds(&pods.codec, &page.items));
    g.bench_function("10k-pod protobuf list from kept messages", |b| {
        b.iter(|| black_box(proto.list(&pods.codec, &meta, &page.items).unwrap()))
    });
    g.finish();

    // An edge kubecache's snapshot of a large type: written whole each
    // interval it changed in (gzip level 1, fsync, rename), and read back
    // (checksum checked, every object decoded) when it starts.
    let mut g = c.benchmark_group("snapshot");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes as u64));
    let dir = std::env::temp_dir().join(format!("kubecache-bench-snapshot-{}", std::process::id()));
    let snapshots = Snapshots::open(&dir, "https://bench.invalid").unwrap();
    let state = TypeState {
        rt: &pods.rt,
        codec: &pods.codec,
        rv: snap.rv,
        items: &snap.items,
        bytes,
    };
    let written = snapshots.write_type(&state).unwrap();
    println!("snapshot of 10k pods: {written} bytes on disk for {bytes} bytes of objects");
    g.bench_function("write the 10k-pod snapshot", |b| {
        b.iter(|| black_box(snapshots.write_type(&state).unwrap()))
    });
    let path = snapshots.type_path(&pods.rt.gvr);
    g.bench_function("read the 10k-pod snapshot back", |b| {
        b.iter(|| black_box(snapshots.read_type(&path, |_| Ok(())).unwrap()))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);

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

/// How long a store holds its write lock per event when every live
/// subscriber is parked waiting for the next one: since the chaos gap fix
/// (bafdea3) the broadcast's send, which wakes each parked subscriber,
/// happens under the lock, so readers wait for it (a snapshot's O(1) clone
/// takes the read lock).
fn store_benches(c: &mut Criterion) {
    use kubecache::store::{Attrs, Change, Entry, EntryKey, EventType, HistoryLimits, Store};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let entry = |i: u64, rv: u64| {
        let name = format!("pod-{:05}", i % 1000);
        Arc::new(Entry::new(
            EntryKey::new(Some("bench"), &name),
            rv,
            Attrs::default(),
            bytes::Bytes::from(format!("{{\"metadata\":{{\"name\":\"{name}\"}}}}")),
            (),
        ))
    };
    let mut g = c.benchmark_group("store");
    for subscribers in [0u64, 1_000, 10_000] {
        let store = Arc::new(Store::<()>::new(HistoryLimits::default()));
        store.replace((0..1000).map(|i| entry(i, 1)).collect(), 1);
        // Changes taken, summed over the subscribers.
        let taken = Arc::new(AtomicU64::new(0));
        for _ in 0..subscribers {
            let (_, mut rx) = store.snapshot_and_subscribe();
            let taken = taken.clone();
            rt.spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                loop {
                    match rx.recv().await {
                        Ok(Change::Event(_)) => {
                            taken.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) | Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => break,
                    }
                }
            });
        }
        let mut rv = 1;
        // A reader beside the writer: how long its O(1) look at the state
        // waits while the events go out.
        {
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let reader = {
                let (store, stop) = (store.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut waits = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        black_box(store.rv());
                        waits.push(start.elapsed());
                    }
                    waits
                })
            };
            for _ in 0..300 {
                let want = (rv - 1) * subscribers;
                while taken.load(Ordering::Relaxed) < want {
                    std::thread::yield_now();
                }
                rv += 1;
                store.apply(EventType::Modified, entry(rv, rv)).unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            let mut waits = reader.join().unwrap();
            waits.sort();
            let at = |q: f64| waits[((waits.len() - 1) as f64 * q) as usize];
            println!(
                "store, {subscribers} subscribers parked, 300 events: a reader's look at the state \
                 took p99.99 {:?}, max {:?} ({} looks, {} over 100 µs)",
                at(0.9999),
                waits[waits.len() - 1],
                waits.len(),
                waits.iter().filter(|w| **w > Duration::from_micros(100)).count()
            );
        }
        g.bench_function(
            format!("apply one event, {subscribers} subscribers parked"),
            |b| {
                b.iter_custom(|iters| {
                    let mut held = Duration::ZERO;
                    for _ in 0..iters {
                        // Every subscriber parked again before the next.
                        let want = (rv - 1) * subscribers;
                        while taken.load(Ordering::Relaxed) < want {
                            std::thread::yield_now();
                        }
                        rv += 1;
                        let e = entry(rv, rv);
                        let start = Instant::now();
                        store.apply(EventType::Modified, e).unwrap();
                        held += start.elapsed();
                    }
                    held
                })
            },
        );
    }
    g.finish();
    rt.shutdown_background();
}

criterion_group!(micro, benches, store_benches);
criterion_main!(micro);
