//! Every setting of `kubecache serve` comes from a flag, a `KUBECACHE_…`
//! environment variable or the config file, in that order of precedence.

mod running;

use std::process::Command;

/// A free loopback port, as `127.0.0.1:PORT`.
fn free() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Serves with `config` (YAML), the environment `env` and `flags`: where
/// it listens, as its log says.
fn listens(config: &str, env: &[(&str, &str)], flags: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "kubecache-settings-{}-{}",
        std::process::id(),
        free().replace([':', '.'], "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kubecache.yaml");
    std::fs::write(&file, config).unwrap();
    let mut cmd: Command = running::kubecache();
    cmd.args(["serve", "--upstream", "http://127.0.0.1:1", "--config"])
        .arg(&file)
        .args(flags)
        .env_remove("KUBECACHE_LOG_FORMAT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let running = running::spawn(cmd, "kubecache serving");
    let addr = running.addr.clone();
    drop(running);
    let _ = std::fs::remove_dir_all(&dir);
    addr
}

#[test]
fn a_flag_wins_over_the_environment_which_wins_over_the_file() {
    let (file, env, flag) = (free(), free(), free());
    let config = format!("listen: {file}\n");
    assert_eq!(listens(&config, &[], &[]), file);
    assert_eq!(listens(&config, &[("KUBECACHE_LISTEN", &env)], &[]), env);
    assert_eq!(
        listens(&config, &[("KUBECACHE_LISTEN", &env)], &["--listen", &flag]),
        flag
    );
}

#[test]
fn every_serve_flag_names_its_environment_variable() {
    let out = running::kubecache()
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && *w != "--help" && *w != "--log-format")
        .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    assert!(flags.len() > 40, "{flags:?}");
    for flag in flags {
        let var = format!(
            "[env: KUBECACHE_{}=",
            flag.trim_start_matches("--")
                .replace('-', "_")
                .to_uppercase()
        );
        // Flags named in other flags' help are checked where declared.
        if help.contains(&format!("{flag} <")) || help.contains(&format!("      {flag}\n")) {
            assert!(help.contains(&var), "{flag}: no {var}");
        }
    }
}
