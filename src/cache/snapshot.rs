//! Edge autonomy's snapshot (`--snapshot-dir`): each cached type's objects
//! and the discovery documents, persisted so that a kubecache restarted
//! while its upstream is away still has them to serve.
//!
//! A file per type (`<group>_<version>_<resource>.snapshot`, `core` for the
//! core group) and `discovery.snapshot`, each one gzip member holding a
//! header line (the format and kubecache's version, the upstream it was
//! read from, when, and for a type what it is, its resourceVersion, objects
//! and bytes) and then the body: the type's list exactly as the apiserver
//! writes it, or the discovery documents by path. gzip's CRC-32 and length
//! are the checksum: a file is only believed once read to its end, and a
//! corrupt, truncated, foreign (another upstream's, another format's) or
//! oversized one is refused with the reason, never served. Files are
//! written beside their final name, synced, then renamed over it, so a
//! crash leaves the old snapshot or the new one, never half of one.

use crate::encode::codec::{Entry, Items, ListStyle, TypeCodec};
use crate::encode::list_meta::ListMeta;
use crate::reflector::Overflow;
use crate::resource::{GroupVersionResource, ResourceType};
use crate::upstream::discovery::Documents;
use bytes::Bytes;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What this kubecache writes and reads; a snapshot of another format is
/// refused, not guessed at.
pub const FORMAT: &str = "kubecache.io/snapshot/v1";

/// The longest header line read; a file whose first line is longer is
/// not a snapshot.
const MAX_HEADER: u64 = 64 * 1024;

/// The discovery documents are small (a few hundred KiB for a large
/// cluster's aggregated APIs); more is not a snapshot of them.
const MAX_DISCOVERY: u64 = 64 * 1024 * 1024;

const DISCOVERY_FILE: &str = "discovery.snapshot";
const SUFFIX: &str = ".snapshot";

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot directory {0}: {1}")]
    Dir(PathBuf, #[source] std::io::Error),
    #[error("writing {0}: {1}")]
    Write(PathBuf, #[source] std::io::Error),
    #[error("reading {0}: {1}")]
    Read(PathBuf, #[source] std::io::Error),
    /// Truncated, altered, or not a snapshot at all.
    #[error("{0} is corrupt: {1}")]
    Corrupt(PathBuf, String),
    #[error("{path} is of format {found:?}; this kubecache reads {FORMAT:?}")]
    Format { path: PathBuf, found: String },
    #[error("{path} was read from upstream {found}, not {want}")]
    OtherUpstream {
        path: PathBuf,
        found: String,
        want: String,
    },
    #[error("{0}: too large to restore: {1}")]
    TooLarge(PathBuf, #[source] Overflow),
}

/// The first line of every snapshot file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    format: String,
    kubecache: String,
    upstream: String,
    /// Milliseconds since the Unix epoch.
    written: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<TypeHeader>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeHeader {
    group: String,
    version: String,
    resource: String,
    kind: String,
    namespaced: bool,
    verbs: Vec<String>,
    resource_version: String,
    objects: usize,
    /// The objects' bytes, as the cache counts them.
    bytes: usize,
}

/// A type read back from its snapshot.
pub struct Restored {
    pub rt: ResourceType,
    pub codec: TypeCodec,
    pub entries: Vec<Arc<Entry>>,
    pub rv: u64,
    /// When the snapshot was written.
    pub written: SystemTime,
}

/// Discovery read back from its snapshot.
pub struct RestoredDiscovery {
    pub documents: Documents,
    pub written: SystemTime,
}

/// One type's state, as the snapshot writer takes it from the cache.
pub struct TypeState<'a> {
    pub rt: &'a ResourceType,
    pub codec: &'a TypeCodec,
    pub rv: u64,
    pub items: &'a Items,
    pub bytes: usize,
}

/// The snapshot directory of one upstream.
#[derive(Debug, Clone)]
pub struct Snapshots {
    dir: PathBuf,
    upstream: String,
}

impl Snapshots {
    /// The directory, made if it is not there: a directory that cannot be
    /// made or written to is a configuration error, found before serving.
    pub fn open(dir: &Path, upstream: &str) -> Result<Self, SnapshotError> {
        std::fs::create_dir_all(dir).map_err(|e| SnapshotError::Dir(dir.into(), e))?;
        let probe = dir.join(".kubecache-write-test");
        std::fs::write(&probe, b"")
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| SnapshotError::Dir(dir.into(), e))?;
        // What a crash left half written.
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name();
                if name.to_str().is_some_and(|n| n.contains(".tmp-")) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(Snapshots {
            dir: dir.into(),
            upstream: upstream.into(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where a type's snapshot is.
    pub fn type_path(&self, gvr: &GroupVersionResource) -> PathBuf {
        let group = if gvr.group.is_empty() {
            "core"
        } else {
            &gvr.group
        };
        self.dir
            .join(format!("{group}_{}_{}{SUFFIX}", gvr.version, gvr.resource))
    }

    /// Every type's snapshot file there is.
    pub fn type_paths(&self) -> Result<Vec<PathBuf>, SnapshotError> {
        let dir =
            std::fs::read_dir(&self.dir).map_err(|e| SnapshotError::Dir(self.dir.clone(), e))?;
        let mut paths: Vec<PathBuf> = dir
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(SUFFIX) && n != DISCOVERY_FILE)
            })
            .collect();
        paths.sort();
        Ok(paths)
    }

    fn header(&self, resource: Option<TypeHeader>) -> Header {
        Header {
            format: FORMAT.into(),
            kubecache: env!("CARGO_PKG_VERSION").into(),
            upstream: self.upstream.clone(),
            written: millis(SystemTime::now()),
            resource,
        }
    }

    /// Writes a type's state; the bytes written.
    pub fn write_type(&self, state: &TypeState<'_>) -> Result<u64, SnapshotError> {
        let gvr = &state.rt.gvr;
        let header = self.header(Some(TypeHeader {
            group: gvr.group.clone(),
            version: gvr.version.clone(),
            resource: gvr.resource.clone(),
            kind: state.rt.kind.clone(),
            namespaced: state.rt.namespaced,
            verbs: state.rt.verbs.clone(),
            resource_version: state.rv.to_string(),
            objects: state.items.len(),
            bytes: state.bytes,
        }));
        let meta = ListMeta {
            resource_version: state.rv,
            ..ListMeta::default()
        };
        let (head, tail) = crate::encode::json::list_ends(state.codec, &meta);
        self.write_atomically(&self.type_path(gvr), &header, |w| {
            w.write_all(&head)?;
            for (i, e) in state.items.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                w.write_all(&e.item)?;
            }
            w.write_all(&tail)
        })
    }

    /// Writes the discovery documents; the bytes written.
    pub fn write_discovery(&self, documents: &Documents) -> Result<u64, SnapshotError> {
        let header = self.header(None);
        self.write_atomically(&self.dir.join(DISCOVERY_FILE), &header, |w| {
            // Each document as it came, as a JSON string: its bytes exactly
            // (the apiserver ends most with a newline, `/version` without;
            // served offline they are the upstream's to the byte). Older
            // snapshots held each as its JSON value: read alike.
            w.write_all(b"{")?;
            for (i, (path, doc)) in documents.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                serde_json::to_writer(&mut *w, path)?;
                w.write_all(b":")?;
                match std::str::from_utf8(doc) {
                    Ok(text) => serde_json::to_writer(&mut *w, text)?,
                    Err(_) => w.write_all(doc.trim_ascii())?,
                }
            }
            w.write_all(b"}")
        })
    }

    /// Removes a type's snapshot (the type is no longer cached).
    pub fn remove_type(&self, gvr: &GroupVersionResource) {
        let path = self.type_path(gvr);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "snapshot removed: the type is no longer cached")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "removing a snapshot"),
        }
    }

    fn write_atomically(
        &self,
        path: &Path,
        header: &Header,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<u64, SnapshotError> {
        let failed = |e| SnapshotError::Write(path.into(), e);
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let write = || -> std::io::Result<u64> {
            let file = std::fs::File::create(&tmp)?;
            // Fast rather than small: a snapshot is written every interval
            // while the type changes.
            let mut gz = GzEncoder::new(BufWriter::new(file), flate2::Compression::fast());
            serde_json::to_writer(&mut gz, header)?;
            gz.write_all(b"\n")?;
            body(&mut gz)?;
            let file = gz
                .finish()?
                .into_inner()
                .map_err(std::io::IntoInnerError::into_error)?;
            file.sync_all()?;
            let len = file.metadata()?.len();
            std::fs::rename(&tmp, path)?;
            // The rename itself is durable once the directory is synced.
            std::fs::File::open(&self.dir)?.sync_all()?;
            Ok(len)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            failed(e)
        })
    }

    /// Opens a snapshot: its header checked (format, upstream), and the
    /// reader positioned at its body.
    fn open_file(
        &self,
        path: &Path,
    ) -> Result<(Header, BufReader<GzDecoder<std::fs::File>>), SnapshotError> {
        let file = std::fs::File::open(path).map_err(|e| SnapshotError::Read(path.into(), e))?;
        let mut r = BufReader::new(GzDecoder::new(file));
        let mut line = Vec::new();
        (&mut r)
            .take(MAX_HEADER)
            .read_until(b'\n', &mut line)
            .map_err(|e| corrupt(path, e))?;
        if line.last() != Some(&b'\n') {
            return Err(SnapshotError::Corrupt(path.into(), "no header line".into()));
        }
        let header: Header = serde_json::from_slice(&line)
            .map_err(|e| SnapshotError::Corrupt(path.into(), format!("header: {e}")))?;
        if header.format != FORMAT {
            return Err(SnapshotError::Format {
                path: path.into(),
                found: header.format,
            });
        }
        if header.upstream != self.upstream {
            return Err(SnapshotError::OtherUpstream {
                path: path.into(),
                found: header.upstream,
                want: self.upstream.clone(),
            });
        }
        Ok((header, r))
    }

    /// Reads a type's snapshot whole, its checksum checked, if `room`
    /// allows the bytes its header says it holds; the body is read no
    /// further than those bytes could take, whatever the header says.
    pub fn read_type(
        &self,
        path: &Path,
        room: impl FnOnce(usize) -> Result<(), Overflow>,
    ) -> Result<Restored, SnapshotError> {
        let (header, mut r) = self.open_file(path)?;
        let t = header
            .resource
            .ok_or_else(|| SnapshotError::Corrupt(path.into(), "no type in its header".into()))?;
        room(t.bytes).map_err(|o| SnapshotError::TooLarge(path.into(), o))?;
        // The list around its items: commas, the list's own fields.
        let most = (t.bytes as u64)
            .saturating_add(t.objects as u64)
            .saturating_add(64 * 1024);
        let body = read_whole(&mut r, most, path)?;
        let rt = ResourceType {
            gvr: GroupVersionResource::new(&t.group, &t.version, &t.resource),
            kind: t.kind,
            namespaced: t.namespaced,
            verbs: t.verbs,
        };
        let style = ListStyle::detect(&body)
            .ok_or_else(|| SnapshotError::Corrupt(path.into(), "the body is not a list".into()))?;
        let codec = TypeCodec::for_type(&rt, style);
        let list = codec
            .parse_list(&body)
            .map_err(|e| SnapshotError::Corrupt(path.into(), format!("the list: {e}")))?;
        let bytes: usize = list.entries.iter().map(|e| e.item.len()).sum();
        if list.entries.len() != t.objects
            || bytes != t.bytes
            || list.rv.to_string() != t.resource_version
        {
            return Err(SnapshotError::Corrupt(
                path.into(),
                "the list differs from its header".into(),
            ));
        }
        Ok(Restored {
            rt,
            codec,
            entries: list.entries,
            rv: list.rv,
            written: UNIX_EPOCH + Duration::from_millis(header.written),
        })
    }

    /// Reads the discovery snapshot, if there is one.
    pub fn read_discovery(&self) -> Result<Option<RestoredDiscovery>, SnapshotError> {
        let path = self.dir.join(DISCOVERY_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let (header, mut r) = self.open_file(&path)?;
        let body = read_whole(&mut r, MAX_DISCOVERY, &path)?;
        let docs: BTreeMap<String, Box<RawValue>> = serde_json::from_slice(&body)
            .map_err(|e| SnapshotError::Corrupt(path.clone(), format!("the documents: {e}")))?;
        let documents = docs
            .into_iter()
            .map(|(p, d)| {
                let raw = d.get();
                let doc = if raw.starts_with('"') {
                    serde_json::from_str::<String>(raw).map_err(|e| {
                        SnapshotError::Corrupt(path.clone(), format!("the document {p}: {e}"))
                    })?
                } else {
                    raw.to_string()
                };
                Ok((p, Bytes::from(doc)))
            })
            .collect::<Result<_, SnapshotError>>()?;
        Ok(Some(RestoredDiscovery {
            documents,
            written: UNIX_EPOCH + Duration::from_millis(header.written),
        }))
    }
}

/// The rest of a snapshot, at most `most` bytes, then its end: gzip checks
/// its CRC-32 and length only there.
fn read_whole(r: &mut impl Read, most: u64, path: &Path) -> Result<Vec<u8>, SnapshotError> {
    let mut body = Vec::new();
    r.take(most)
        .read_to_end(&mut body)
        .map_err(|e| corrupt(path, e))?;
    let mut more = [0u8; 1];
    match r.read(&mut more) {
        Ok(0) => Ok(body),
        Ok(_) => Err(SnapshotError::Corrupt(
            path.into(),
            format!("longer than the {most} bytes its header allows"),
        )),
        Err(e) => Err(corrupt(path, e)),
    }
}

fn corrupt(path: &Path, e: std::io::Error) -> SnapshotError {
    SnapshotError::Corrupt(path.into(), e.to_string())
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> ResourceType {
        ResourceType {
            gvr: GroupVersionResource::new("", "v1", "pods"),
            kind: "Pod".into(),
            namespaced: true,
            verbs: vec!["list".into(), "watch".into(), "get".into()],
        }
    }

    fn pod(codec: &TypeCodec, ns: &str, name: &str, rv: u64) -> Arc<Entry> {
        let item = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"{ns}","resourceVersion":"{rv}","labels":{{"app":"web"}}}},"spec":{{"nodeName":"n1"}}}}"#
        );
        Arc::new(codec.from_item(Bytes::from(item)).unwrap())
    }

    fn written(dir: &Path) -> (Snapshots, TypeCodec, Vec<Arc<Entry>>) {
        let snaps = Snapshots::open(dir, "https://10.0.0.1:6443").unwrap();
        let rt = pods();
        let codec = TypeCodec::for_type(&rt, ListStyle::Typed);
        let entries = vec![pod(&codec, "a", "p1", 5), pod(&codec, "b", "p2", 7)];
        let items: Items = entries.iter().cloned().collect();
        let bytes = entries.iter().map(|e| e.item.len()).sum();
        snaps
            .write_type(&TypeState {
                rt: &rt,
                codec: &codec,
                rv: 9,
                items: &items,
                bytes,
            })
            .unwrap();
        (snaps, codec, entries)
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kubecache-snapshot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_type_comes_back_as_it_was_written() {
        let dir = scratch("roundtrip");
        let (snaps, _, entries) = written(&dir);
        let paths = snaps.type_paths().unwrap();
        assert_eq!(paths, vec![dir.join("core_v1_pods.snapshot")]);
        let r = snaps.read_type(&paths[0], |_| Ok(())).unwrap();
        assert_eq!(r.rt, pods());
        assert_eq!(r.rv, 9);
        assert_eq!(r.codec.style, ListStyle::Typed);
        let got: Vec<_> = r
            .entries
            .iter()
            .map(|e| (e.key.to_string(), e.rv, e.item.clone()))
            .collect();
        let want: Vec<_> = entries
            .iter()
            .map(|e| (e.key.to_string(), e.rv, e.item.clone()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(r.entries[0].label("app"), Some("web"));
        assert!(r.written.elapsed().unwrap() < Duration::from_secs(60));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_truncated_or_altered_snapshot_is_refused() {
        let dir = scratch("corrupt");
        let (snaps, _, _) = written(&dir);
        let path = snaps.type_paths().unwrap().remove(0);
        let whole = std::fs::read(&path).unwrap();
        for cut in [whole.len() - 1, whole.len() - 8, whole.len() / 2, 11, 0] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let e = snaps.read_type(&path, |_| Ok(())).err();
            assert!(
                matches!(e, Some(SnapshotError::Corrupt(..))),
                "cut at {cut}: {e:?}"
            );
        }
        // One bit anywhere past gzip's header.
        for at in [12, whole.len() / 2, whole.len() - 5] {
            let mut bad = whole.clone();
            bad[at] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            let e = snaps.read_type(&path, |_| Ok(())).err();
            assert!(
                matches!(e, Some(SnapshotError::Corrupt(..))),
                "bit at {at}: {e:?}"
            );
        }
        std::fs::write(&path, b"{\"kind\":\"PodList\"}").unwrap();
        assert!(matches!(
            snaps.read_type(&path, |_| Ok(())),
            Err(SnapshotError::Corrupt(..))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn what_a_crash_left_half_written_is_removed_when_the_directory_opens() {
        let dir = scratch("leftover");
        let (_, _, _) = written(&dir);
        let half = dir.join("core_v1_pods.tmp-99999");
        std::fs::write(&half, b"half").unwrap();
        let snaps = Snapshots::open(&dir, "https://10.0.0.1:6443").unwrap();
        assert!(!half.exists());
        assert_eq!(snaps.type_paths().unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_body_longer_than_its_header_allows_is_not_read_past_it() {
        let dir = scratch("liar");
        let snaps = Snapshots::open(&dir, "http://127.0.0.1:1").unwrap();
        let header = snaps.header(Some(TypeHeader {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            kind: "Pod".into(),
            namespaced: true,
            verbs: vec![],
            resource_version: "1".into(),
            objects: 0,
            bytes: 10,
        }));
        let path = snaps.type_path(&GroupVersionResource::new("", "v1", "pods"));
        // A body that decompresses far past what the header says.
        let zeros = vec![b' '; 1 << 20];
        snaps
            .write_atomically(&path, &header, |w| w.write_all(&zeros))
            .unwrap();
        let e = snaps.read_type(&path, |_| Ok(())).err();
        assert!(
            matches!(&e, Some(SnapshotError::Corrupt(_, why)) if why.starts_with("longer than")),
            "{e:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn another_upstreams_snapshot_is_refused() {
        let dir = scratch("upstream");
        let (snaps, _, _) = written(&dir);
        let path = snaps.type_paths().unwrap().remove(0);
        let other = Snapshots::open(&dir, "https://elsewhere:6443").unwrap();
        assert!(matches!(
            other.read_type(&path, |_| Ok(())),
            Err(SnapshotError::OtherUpstream { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_snapshot_the_cache_has_no_room_for_is_not_read() {
        let dir = scratch("room");
        let (snaps, _, entries) = written(&dir);
        let path = snaps.type_paths().unwrap().remove(0);
        let bytes: usize = entries.iter().map(|e| e.item.len()).sum();
        let mut asked = 0;
        let e = snaps.read_type(&path, |b| {
            asked = b;
            Err(Overflow {
                bytes: b,
                limit: 10,
                which: "total",
            })
        });
        assert!(matches!(e, Err(SnapshotError::TooLarge(..))));
        assert_eq!(asked, bytes);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn discovery_documents_come_back_byte_for_byte() {
        let dir = scratch("discovery");
        let snaps = Snapshots::open(&dir, "http://127.0.0.1:1").unwrap();
        assert!(snaps.read_discovery().unwrap().is_none());
        let mut docs = Documents::new();
        docs.insert(
            "/api".into(),
            Bytes::from_static(br#"{"kind":"APIVersions","versions":["v1"]}"#),
        );
        docs.insert(
            "/version".into(),
            Bytes::from_static(b"{\n  \"major\": \"1\",\n  \"minor\": \"20\"\n}"),
        );
        docs.insert(
            "/apis#aggregated".into(),
            Bytes::from_static(b"{\"kind\":\"APIGroupDiscoveryList\",\"items\":[]}\n"),
        );
        snaps.write_discovery(&docs).unwrap();
        let back = snaps.read_discovery().unwrap().unwrap();
        assert_eq!(back.documents, docs);
        // A snapshot written before, each document as its JSON value.
        let header = snaps.header(None);
        snaps
            .write_atomically(&dir.join(DISCOVERY_FILE), &header, |w| {
                w.write_all(br#"{"/api":{"kind":"APIVersions"}}"#)
            })
            .unwrap();
        let old = snaps.read_discovery().unwrap().unwrap();
        assert_eq!(
            old.documents["/api"],
            Bytes::from_static(br#"{"kind":"APIVersions"}"#)
        );
        // The discovery file is not a type's.
        assert!(snaps.type_paths().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_snapshot_of_another_format_is_refused_by_name() {
        let dir = scratch("format");
        let snaps = Snapshots::open(&dir, "http://127.0.0.1:1").unwrap();
        let mut header = snaps.header(None);
        header.format = "kubecache.io/snapshot/v0".into();
        snaps
            .write_atomically(&dir.join(DISCOVERY_FILE), &header, |w| w.write_all(b"{}"))
            .unwrap();
        assert!(matches!(
            snaps.read_discovery(),
            Err(SnapshotError::Format { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
