//! The log, as operators read it: text for a terminal (colour only on one,
//! and never with NO_COLOR), a JSON object per line for files and
//! container logs, chosen by `--log-format`, `KUBECACHE_LOG_FORMAT` or the
//! config file's `logFormat` (the flag first).

mod running;

use std::process::Command;
use std::time::Duration;

/// `kubecache serve` in front of nothing, set up by `f`: everything it
/// logged by the time it served.
fn serve_log(f: impl FnOnce(&mut Command)) -> String {
    let kc = running::serve_nowhere(f);
    // The lines logged around serving (discovery's failure, the upstream's
    // health) have had time to come.
    std::thread::sleep(Duration::from_millis(300));
    kc.log()
}

fn json_lines(log: &str) -> Vec<serde_json::Value> {
    log.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn json_logs_are_an_object_per_line_with_the_fields_at_the_top() {
    let log = serve_log(|c| {
        c.args(["--log-format", "json"]);
    });
    let lines = json_lines(&log);
    assert!(lines.len() >= 3, "{log}");
    for l in &lines {
        for field in ["timestamp", "level", "message", "target"] {
            assert!(l.get(field).is_some(), "no {field}: {l}");
        }
    }
    let serving = lines
        .iter()
        .find(|l| l["message"] == "kubecache serving")
        .expect("the serving line");
    assert!(serving["listen"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert_eq!(serving["auth_mode"], "trust-local");
    assert!(
        lines.iter().any(|l| l["level"] == "WARN"),
        "the unreachable upstream is a warning: {log}"
    );
}

#[test]
fn the_environment_and_the_config_file_choose_json_and_the_flag_wins() {
    let log = serve_log(|c| {
        c.env("KUBECACHE_LOG_FORMAT", "json");
    });
    json_lines(&log);

    let dir = std::env::temp_dir().join(format!("kubecache-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("kubecache.yaml");
    std::fs::write(&config, "logFormat: json\n").unwrap();
    let log = serve_log(|c| {
        c.arg("--config").arg(&config);
    });
    json_lines(&log);
    let log = serve_log(|c| {
        c.arg("--config")
            .arg(&config)
            .args(["--log-format", "text"]);
    });
    assert!(
        log.contains(" INFO kubecache: kubecache serving listen="),
        "{log}"
    );
    assert!(!log.trim_start().starts_with('{'), "{log}");
}

#[test]
fn text_logs_have_no_colour_unless_on_a_terminal() {
    // Piped, NO_COLOR unset: plain.
    let log = serve_log(|c| {
        c.env_remove("NO_COLOR");
    });
    assert!(log.contains("kubecache serving"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "escape codes in a piped log: {log:?}"
    );

    // On a terminal (util-linux's `script` gives it one): colour, unless
    // NO_COLOR says otherwise.
    let on_a_terminal = |no_color: Option<&str>| {
        let mut cmd = Command::new("script");
        cmd.args(["-qec"])
            .arg(format!(
                "timeout 2 {} serve --listen 127.0.0.1:0 --upstream http://127.0.0.1:1",
                env!("CARGO_BIN_EXE_kubecache")
            ))
            .arg("/dev/null")
            .env_remove("NO_COLOR")
            .env_remove("KUBECACHE_LOG_FORMAT")
            .env("KUBECACHE_LOG", "info");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let out = cmd.output().expect("util-linux's script runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = on_a_terminal(None);
    assert!(coloured.contains("kubecache serving"), "{coloured:?}");
    assert!(
        coloured.contains("\u{1b}["),
        "no colour on a terminal: {coloured:?}"
    );
    let plain = on_a_terminal(Some("1"));
    assert!(plain.contains("kubecache serving"), "{plain:?}");
    assert!(
        !plain.contains('\u{1b}'),
        "colour despite NO_COLOR: {plain:?}"
    );
}

/// A relay to `upstream` that passes its answers on at `per_second`
/// bytes a second, as a thin link would: where it listens.
fn thin_link(upstream: std::net::SocketAddr, per_second: usize) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = TcpStream::connect(upstream) else {
                return;
            };
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c_in, &mut s_out);
            });
            let (mut s_in, mut c_out) = (server, client);
            std::thread::spawn(move || {
                let chunk = per_second / 10;
                let mut buf = vec![0u8; chunk];
                loop {
                    let n = match s_in.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if c_out.write_all(&buf[..n]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
    });
    addr
}

#[test]
fn a_reflector_logs_each_change_of_state_and_a_long_lists_progress() {
    let sim = running::sim(3000);
    // 3,000 pods (~14.5 MB) at 4 MB/s: a list of ~4 s, in one answer.
    let link = thin_link(sim.addr.parse().unwrap(), 4 << 20);
    let mut cmd = running::kubecache();
    let dir = std::env::temp_dir().join(format!("kubecache-logs-r-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("kubecache.yaml");
    std::fs::write(&config, "eager: [v1/pods]\nlogFormat: json\n").unwrap();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("http://{link}"))
        .arg("--config")
        .arg(&config);
    let kc = running::spawn(cmd, "kubecache serving");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let watching = |l: &serde_json::Value| {
        l["message"] == "reflector state" && l["resource"] == "v1/pods" && l["state"] == "watching"
    };
    while !json_lines(&kc.log()).iter().any(watching) {
        assert!(std::time::Instant::now() < deadline, "{}", kc.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    let lines = json_lines(&kc.log());
    let pods: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["resource"] == "v1/pods")
        .collect();
    let states: Vec<&str> = pods
        .iter()
        .filter(|l| l["message"] == "reflector state")
        .map(|l| l["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["listing", "watching"], "{}", kc.log());
    let listed = pods
        .iter()
        .find(|l| l["message"] == "listed")
        .expect("the list's end");
    assert_eq!(listed["objects"], 3000);
    let total = listed["bytes"].as_u64().unwrap();
    // Every 2 s, and growing.
    let progress: Vec<u64> = pods
        .iter()
        .filter(|l| l["message"] == "listing")
        .map(|l| l["bytes"].as_u64().unwrap())
        .collect();
    assert!(
        !progress.is_empty(),
        "no progress in a 4 s list: {}",
        kc.log()
    );
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert!(
        progress.iter().all(|b| *b < total + 65536),
        "{progress:?} of {total}"
    );
    let synced = pods.iter().find(|l| watching(l)).unwrap();
    assert_eq!(synced["was"], "listing");
    assert_eq!(synced["objects"], 3000);
    assert!(synced["after"].as_str().unwrap().ends_with('s'), "{synced}");
}
