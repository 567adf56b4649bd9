//! `kubecache completion bash|zsh|fish`: scripts the shells load that
//! complete the subcommands and their flags (bash's run here; zsh's and
//! fish's checked to name them).

use std::process::Command;

fn script(shell: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        .args(["completion", shell])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What bash completes `line` (its last word being completed) to.
fn bash_completes(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split(' ').collect();
    let prog =
        format!(
        "source /dev/stdin; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT={}; \
         _kubecache kubecache '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
        words.len() - 1,
        line.len(),
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let mut child = Command::new("bash")
        .args(["-c", &prog])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script("bash").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_the_subcommands_and_their_flags() {
    assert_eq!(bash_completes("kubecache se"), ["serve"]);
    let mut flags = bash_completes("kubecache serve --snap");
    flags.sort();
    assert_eq!(flags, ["--snapshot-dir", "--snapshot-interval"]);
    assert_eq!(bash_completes("kubecache completion f"), ["fish"]);
}

#[test]
fn zsh_and_fish_scripts_name_every_subcommand_and_the_serve_flags() {
    for shell in ["zsh", "fish"] {
        let s = script(shell);
        for word in [
            "serve",
            "sim",
            "demo",
            "probe",
            "completion",
            "snapshot-dir",
            "serve-stale-when-offline",
        ] {
            assert!(s.contains(word), "{shell}: no {word}");
        }
    }
    assert!(script("zsh").starts_with("#compdef kubecache"));
}
