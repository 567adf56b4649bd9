//! The README and `docs/` stay true to the command: every setting
//! `kubecache serve --help` lists is in the README's configuration
//! reference with its environment variable (and nothing else is), and
//! every link between the documents leads to a file and a heading that
//! exist.

mod running;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(flag, environment variable)` of each setting `serve --help` lists.
fn help_settings() -> BTreeSet<(String, String)> {
    let out = running::kubecache()
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    // `--flag <VALUE>`, then (on that line or one of the next) `[env: VAR=]`.
    let mut flag = None;
    let mut settings = BTreeSet::new();
    for l in help.lines() {
        if let Some(f) = l.trim_start().strip_prefix("--") {
            let f = f.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
            flag = f.into_iter().next().map(str::to_string);
        }
        if let Some(env) = l.split("[env: ").nth(1).and_then(|e| e.split('=').next()) {
            if let Some(f) = flag.take() {
                settings.insert((f, env.to_string()));
            }
        }
    }
    settings
}

/// `(flag, environment variable)` of each row of the README's tables
/// that starts with a flag.
fn readme_settings(readme: &str) -> BTreeSet<(String, String)> {
    readme
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("| `--")?;
            let (flag, rest) = rest.split_once("` | `")?;
            let env = rest.split('`').next()?;
            Some((flag.to_string(), env.to_string()))
        })
        .collect()
}

#[test]
fn every_setting_of_serve_is_in_the_readmes_configuration_reference_and_no_other() {
    let help = help_settings();
    assert!(help.len() > 40, "{help:?}");
    let readme = readme_settings(&read(&root().join("README.md")));
    let missing: Vec<_> = help.difference(&readme).collect();
    let stale: Vec<_> = readme.difference(&help).collect();
    assert!(
        missing.is_empty(),
        "settings missing from the README: {missing:?}"
    );
    assert!(stale.is_empty(), "README rows no setting has: {stale:?}");
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_`
/// dropped, spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// Relative links `](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .filter(|t| !t.contains("://") && !t.starts_with("mailto:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_link_between_the_readme_and_the_docs_leads_to_a_file_and_heading_that_exist() {
    let mut files = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    assert!(files.len() >= 6, "{files:?}");
    let mut checked = 0;
    for file in &files {
        let text = read(file);
        for link in links(&text) {
            let (target, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let path = if target.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(target)
            };
            assert!(path.exists(), "{}: {link} leads nowhere", file.display());
            if !fragment.is_empty() {
                let headings = anchors(&read(&path));
                assert!(
                    headings.contains(fragment),
                    "{}: {link} names no heading of {}",
                    file.display(),
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 10, "only {checked} links");
}

#[test]
fn a_github_anchor_drops_punctuation_and_joins_words_with_hyphens() {
    assert_eq!(
        anchor(" Edge autonomy: snapshots and serving offline"),
        "edge-autonomy-snapshots-and-serving-offline"
    );
    assert_eq!(
        anchor("Who clients are served as"),
        "who-clients-are-served-as"
    );
}
