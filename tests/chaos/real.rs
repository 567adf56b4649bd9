//! Scenario 2: a real kube-apiserver and etcd of the test's own, killed,
//! paused and restarted.

use super::*;
use base64::Engine as _;
use std::path::PathBuf;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Proc {
    Etcd,
    Apiserver,
}

impl Proc {
    /// The name of its PID file and log in `$RUN`, as `up` writes them.
    fn name(self) -> &'static str {
        match self {
            Proc::Etcd => "etcd",
            Proc::Apiserver => "kube-apiserver",
        }
    }
}

/// An etcd and kube-apiserver started by ../shared/tools/real-apiserver
/// for this test alone, on free loopback ports that stay theirs across
/// restarts; stopped with `down` when dropped, a panic included.
pub struct Instance {
    tools: PathBuf,
    run: PathBuf,
    ports: [(&'static str, u16); 4],
    /// Each process's command line, to start it again alone.
    argv: Mutex<BTreeMap<Proc, Vec<std::ffi::OsString>>>,
}

fn kind_of(plural: &str) -> Option<Kind> {
    KINDS.into_iter().find(|k| k.plural() == plural)
}

/// Free ports below the kernel's ephemeral range: one from port 0
/// could be handed to any socket of this process (the simulator's
/// scenario runs beside this one) between being found free and the
/// apiserver binding it, or while the apiserver is down for a restart.
fn free_ports<const N: usize>() -> [u16; N] {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let mut rng = rand::rng();
    let mut ports = [0; N];
    let mut found = 0;
    while found < N {
        let port = rng.random_range(10_000..low.max(10_001));
        if !ports.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            ports[found] = port;
            found += 1;
        }
    }
    ports
}

impl Instance {
    pub async fn start() -> Instance {
        Self::start_in("chaos-real-apiserver").await
    }

    /// One in its own `$RUN` (under the test's temporary directory,
    /// named `dir`), apart from any other test's.
    pub async fn start_in(dir: &str) -> Instance {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let tools = std::env::var_os("REAL_APISERVER_TOOLS")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("../shared/tools/real-apiserver"));
        let [etcd, peer, secure, insecure] = free_ports();
        let inst = Instance {
            tools,
            run: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir),
            ports: [
                ("ETCD_PORT", etcd),
                ("ETCD_PEER_PORT", peer),
                ("SECURE_PORT", secure),
                ("INSECURE_PORT", insecure),
            ],
            argv: Mutex::default(),
        };
        // One a killed earlier run left behind.
        inst.script("down", false).await;
        assert!(
            inst.script("up", true).await,
            "the real apiserver did not start"
        );
        inst.read_argv();
        eprintln!(
            "chaos[real apiserver]: etcd's data and both logs in {} (kept until the next run)",
            inst.run.display()
        );
        inst
    }

    fn port(&self, name: &str) -> u16 {
        self.ports.iter().find(|(n, _)| *n == name).unwrap().1
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port("INSECURE_PORT"))
    }

    pub fn etcd(&self) -> String {
        format!("http://127.0.0.1:{}", self.port("ETCD_PORT"))
    }

    /// Runs `up` or `down` for this instance; whether it succeeded.
    async fn script(&self, name: &str, fresh: bool) -> bool {
        let mut cmd = tokio::process::Command::new(self.tools.join(name));
        cmd.env("RUN", &self.run)
            .envs(self.ports.iter().map(|(k, v)| (k, v.to_string())));
        if fresh {
            cmd.env("FRESH", "1");
        }
        let out = cmd.output().await.unwrap_or_else(|e| panic!("{name}: {e}"));
        if !out.status.success() {
            eprintln!(
                "{name} failed: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        out.status.success()
    }

    /// Adds each process's log so far to `<name>.earlier.log` beside
    /// it: `up` starts the logs anew, and what led to a finding is
    /// often before the last down/up. (The whole `$RUN`, etcd's data
    /// included, stays until the next run starts.)
    fn keep_logs(&self) {
        use std::io::Write;
        for p in [Proc::Etcd, Proc::Apiserver] {
            let log = self.run.join(format!("{}.log", p.name()));
            let Ok(text) = std::fs::read(&log) else {
                continue;
            };
            let earlier = self.run.join(format!("{}.earlier.log", p.name()));
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&earlier)
                .and_then(|mut f| f.write_all(&text))
                .unwrap_or_else(|e| panic!("{}: {e}", earlier.display()));
        }
    }

    fn pid(&self, p: Proc) -> u32 {
        let file = self.run.join(format!("{}.pid", p.name()));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        text.trim().parse().unwrap()
    }

    fn read_argv(&self) {
        use std::os::unix::ffi::OsStringExt;
        let mut argv = self.argv.lock().unwrap();
        for p in [Proc::Etcd, Proc::Apiserver] {
            let raw = std::fs::read(format!("/proc/{}/cmdline", self.pid(p))).unwrap();
            let args = raw
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| std::ffi::OsString::from_vec(a.to_vec()))
                .collect();
            argv.insert(p, args);
        }
    }

    fn signal(&self, p: Proc, signal: &str) {
        let pid = self.pid(p).to_string();
        let status = std::process::Command::new("kill")
            .args([signal, pid.as_str()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {pid} ({p:?})");
    }

    /// Waits until `pid` has exited (reaped or a zombie).
    async fn gone(pid: u32) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return,
                Ok(stat) => {
                    let state = stat
                        .rsplit(')')
                        .next()
                        .unwrap_or("")
                        .split_whitespace()
                        .next();
                    if matches!(state, Some("Z" | "X")) {
                        return;
                    }
                }
            }
            assert!(Instant::now() < deadline, "PID {pid} does not exit");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILL, as a crash; then, after `pause`, the same command line
    /// again, detached as `up` starts it, its PID where `down` finds it.
    pub async fn kill_and_restart(&self, p: Proc, pause: Duration) {
        let pid = self.pid(p);
        self.signal(p, "-KILL");
        Self::gone(pid).await;
        tokio::time::sleep(pause).await;
        let argv = self.argv.lock().unwrap()[&p].clone();
        let log = self.run.join(format!("{}.log", p.name()));
        let out = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(r#"log=$1; shift; nohup "$@" >>"$log" 2>&1 </dev/null & echo $!"#)
            .arg("bash")
            .arg(&log)
            .args(&argv)
            .output()
            .await
            .unwrap();
        let new = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(out.status.success() && !new.is_empty(), "restarting {p:?}");
        std::fs::write(
            self.run.join(format!("{}.pid", p.name())),
            format!("{new}\n"),
        )
        .unwrap();
    }

    /// `down` then `up` without FRESH: both stopped in order and
    /// started again on their data.
    pub async fn restart_both(&self) {
        assert!(self.script("down", false).await, "down");
        self.keep_logs();
        assert!(self.script("up", false).await, "up again on the same data");
        self.read_argv();
    }

    /// SIGSTOP for `d`, then SIGCONT: alive, holding every connection,
    /// answering nothing.
    pub async fn pause(&self, p: Proc, d: Duration) {
        self.signal(p, "-STOP");
        tokio::time::sleep(d).await;
        self.signal(p, "-CONT");
    }

    /// Until etcd is healthy and the apiserver ready.
    pub async fn wait_ready(&self, http: &Http) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let ok = |r: Reply, want: &str| matches!(r, Reply::Answer(StatusCode::OK, b) if String::from_utf8_lossy(&b).contains(want));
        loop {
            let etcd = ok(
                http.get(&format!("{}/health", self.etcd())).await,
                "\"health\":\"true\"",
            );
            if etcd && ok(http.get(&format!("{}/readyz", self.url())).await, "ok") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the real apiserver is not ready again within 120 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// etcd's every revision up to now, for the pods and configmaps:
    /// the upstream's history, however many answers the kills lost.
    pub async fn history(&self, http: &Http) -> Vec<Made> {
        let all = json!({"key": "AA==", "range_end": "AA=="});
        let mut count = all.clone();
        count["count_only"] = json!(true);
        let body = Some(("application/json", serde_json::to_vec(&count).unwrap()));
        let Reply::Answer(StatusCode::OK, now) = http
            .call(
                Method::POST,
                &format!("{}/v3/kv/range", self.etcd()),
                body,
                READ_TIMEOUT,
            )
            .await
        else {
            panic!("etcd's current revision");
        };
        let now: Value = serde_json::from_slice(&now).unwrap();
        let now: u64 = now["header"]["revision"].as_str().unwrap().parse().unwrap();
        let mut create = all;
        create["start_revision"] = json!("1");
        let body = Some((
            "application/json",
            serde_json::to_vec(&json!({"create_request": create})).unwrap(),
        ));
        let resp = http
            .open(Method::POST, &format!("{}/v3/watch", self.etcd()), body)
            .await
            .unwrap();
        let mut lines = Lines::new(resp.into_body());
        let mut history = vec![];
        let b64 = base64::engine::general_purpose::STANDARD;
        // Every revision is one write, and every write is under the
        // watched range: the one at `now` ends the history.
        let mut reached = 0;
        while reached < now {
            let Line::Data(line) = lines.next(Duration::from_secs(30)).await else {
                panic!("etcd's history ended at {reached} of {now}");
            };
            let v: Value = serde_json::from_slice(&line).unwrap();
            let result = &v["result"];
            assert!(
                result["compact_revision"].is_null(),
                "etcd's history is compacted: {v}"
            );
            for e in result["events"].as_array().into_iter().flatten() {
                let kv = &e["kv"];
                let num = |f: &str| {
                    kv[f]
                        .as_str()
                        .and_then(|s| s.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                let rv = num("mod_revision");
                reached = reached.max(rv);
                let key = b64.decode(kv["key"].as_str().unwrap()).unwrap();
                let key = String::from_utf8_lossy(&key).into_owned();
                let parts: Vec<&str> = key.trim_start_matches("/registry/").split('/').collect();
                let [plural, ns, name] = parts[..] else {
                    continue;
                };
                let Some(kind) = kind_of(plural) else {
                    continue;
                };
                let change = match (e["type"].as_str(), num("create_revision") == rv) {
                    (Some("DELETE"), _) => Change::Deleted,
                    (_, true) => Change::Added,
                    (_, false) => Change::Modified,
                };
                let key = Key {
                    kind,
                    ns: ns.to_string(),
                    name: name.to_string(),
                };
                let seq = kv["value"]
                    .as_str()
                    .and_then(|v| b64.decode(v).ok())
                    .and_then(|v| stored_seq(&v));
                history.push(Made {
                    key,
                    rv,
                    change,
                    seq,
                });
            }
        }
        history
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // A paused process would hold `down` up until it is killed.
        for p in [Proc::Etcd, Proc::Apiserver] {
            if let Ok(pid) = std::fs::read_to_string(self.run.join(format!("{}.pid", p.name()))) {
                let _ = std::process::Command::new("kill")
                    .args(["-CONT", pid.trim()])
                    .status();
            }
        }
        let _ = std::process::Command::new(self.tools.join("down"))
            .env("RUN", &self.run)
            .stdout(std::process::Stdio::null())
            .status();
    }
}

/// Random kills, pauses and restarts until `until`; then everything up.
pub async fn faults(
    inst: &Instance,
    http: &Http,
    mut rng: StdRng,
    until: Instant,
) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    let started = Instant::now();
    let ms = |rng: &mut StdRng, lo: u64, hi: u64| Duration::from_millis(rng.random_range(lo..hi));
    while Instant::now() < until {
        tokio::time::sleep(ms(&mut rng, 300, 2000)).await;
        let at = started.elapsed();
        // Kills and pauses weigh more than down/up, which takes ~10 s;
        // pauses are at times longer than a watch's timeout and grace,
        // so that kubecache finds its watch stalled.
        let kind = match rng.random_range(0..10) {
            0..=2 => {
                inst.kill_and_restart(Proc::Apiserver, ms(&mut rng, 0, 2000))
                    .await;
                inst.wait_ready(http).await;
                "apiserver killed"
            }
            3..=5 => {
                inst.kill_and_restart(Proc::Etcd, ms(&mut rng, 0, 2000))
                    .await;
                inst.wait_ready(http).await;
                "etcd killed"
            }
            6 | 7 => {
                inst.pause(Proc::Apiserver, ms(&mut rng, 300, 10_000)).await;
                "apiserver paused"
            }
            8 => {
                inst.pause(Proc::Etcd, ms(&mut rng, 300, 10_000)).await;
                "etcd paused"
            }
            _ => {
                inst.restart_both().await;
                "both restarted (down, up)"
            }
        };
        eprintln!(
            "chaos[real apiserver] +{at:.1?}: {kind} (back after {:.1?})",
            started.elapsed() - at
        );
        *counts.entry(kind).or_default() += 1;
    }
    inst.wait_ready(http).await;
    counts
}

/// The apiserver's behaviour behind seed 2121's write that seemed
/// lost, made deterministic. There, the apiserver was killed between
/// the two steps of a pod's delete (deletionTimestamp and a zero grace
/// period set at 3728, then the delete), and the writer's next update
/// of the pod was answered 200 at 3728 with the update's content while
/// the pod was deleted at 3749. Here a finalizer holds the pod pending
/// deletion instead of the kill, and the update removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_of_a_pod_pending_deletion_is_answered_at_its_old_version_and_deletes_it() {
    within(120, async {
        let inst = Instance::start_in("chaos-real-apiserver-delete-by-update").await;
        let (up, http) = (inst.url(), Http::new());
        let ns = format!("chaos-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let key = Key {
            kind: Kind::Pod,
            ns: ns.clone(),
            name: "held".into(),
        };
        let json = |v: Value| Some(("application/json", serde_json::to_vec(&v).unwrap()));
        let mut pod = Kind::Pod.object(&key, 1);
        pod["metadata"]["finalizers"] = json!(["chaos/hold"]);
        let url = format!("{up}{}", key.path());
        let coll = format!("{up}{}", Kind::Pod.collection(Some(&ns)));
        let answered = |r: Reply| match r {
            Reply::Answer(s, body) if s.is_success() => object_of(&body).expect("an object"),
            Reply::Answer(s, body) => panic!("{s} {}", String::from_utf8_lossy(&body)),
            _ => panic!("no answer"),
        };
        let limit = WRITE_TIMEOUT;
        answered(http.call(Method::POST, &coll, json(pod), limit).await);
        let pending = answered(http.call(Method::DELETE, &url, None, limit).await);
        assert!(pending.deleting, "held by its finalizer, pending deletion");

        let mut patch = Kind::Pod.change(2, pending.rv);
        patch["metadata"]["finalizers"] = Value::Null;
        let body = Some((
            "application/merge-patch+json",
            serde_json::to_vec(&patch).unwrap(),
        ));
        let o = answered(http.call(Method::PATCH, &url, body, limit).await);
        // Answered as if written at the version it had, with the
        // update's content, and pending deletion...
        assert_eq!((o.rv, o.seq, o.deleting), (pending.rv, Some(2), true));
        // ... and gone.
        let gone = http.get(&url).await;
        assert!(matches!(gone, Reply::Answer(StatusCode::NOT_FOUND, _)));
        // etcd's revision there holds the earlier write, the next
        // change is the delete: what `check_answered_writes` takes as
        // an update carried out as a delete, not as a lost write.
        let history = inst.history(&http).await;
        let at: Vec<&Made> = history.iter().filter(|m| m.key == key).collect();
        let held = at
            .iter()
            .find(|m| m.rv == pending.rv)
            .expect("its revision");
        assert_eq!(held.seq, Some(1), "{at:?}");
        let deleted = delete_shown(&history, &key, pending.rv).unwrap();
        assert!(deleted > pending.rv);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_real_apiserver_and_etcd_killed_paused_and_restarted_no_read_is_stale_no_watch_skips_and_the_cache_ends_equal(
) {
    let run = Run::new("real apiserver");
    within(run.seconds + 240, async {
        let inst = Instance::start().await;
        let up = inst.url();
        let namespaces = namespaces(&up).await;
        let proxy = ProxyBuilder::new(&up)
            .watch_timeout(5, Duration::from_secs(2))
            .consistent(kubecache::serve::ConsistentReads::Prove)
            .start()
            .await;
        for kind in KINDS {
            let path = kind.collection(None);
            wait_synced(&proxy, &path, &format!("v1/{}", kind.plural())).await;
        }
        let ctx = Ctx::new(&up, &proxy.url, namespaces);
        let mut load = start_load(&ctx, run.seed);
        let until = Instant::now() + Duration::from_secs(run.seconds);
        let faults = faults(&inst, &ctx.http, rng_for(run.seed, 2), until).await;
        stop_writing(&ctx, &mut load).await;
        let history = async || inst.history(&ctx.http).await;
        finish(run, &ctx, &proxy, load, faults, history).await;
    })
    .await;
}
