//! The library's modules import only downward: its top-level modules in
//! the order of `LAYERS`, and inside every folder (the simulator's too)
//! the files and sub-folders without a cycle among them. Read from the sources' `crate::`, `super::`
//! and `self::` paths (comments, strings and `#[cfg(test)]` modules left
//! out: tests may reach anywhere), with a folder's `pub use` re-exports
//! followed to the child that defines the name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules from the bottom up. A module may import those of
/// lower layers only; modules of one layer do not import each other.
const LAYERS: &[&[&str]] = &[
    &["go", "resource", "metrics", "body", "flight"],
    &["status", "selector"],
    &["request"],
    &["store"],
    &["encode"],
    &["upstream"],
    &["reflector", "access"],
    &["freshness"],
    &["cache"],
    &["serve"],
    &["config", "serving"],
];

/// Modules that are not part of the product build (test doubles).
const TEST_ONLY: &[&str] = &["fixtures"];

type ModPath = Vec<String>;

struct Module {
    /// The code that counts: comments, strings and test modules removed.
    code: String,
    /// Whether it is a folder's `mod.rs` (or the crate root).
    folder: bool,
}

/// The crates checked: the library, and the simulator beside it.
const CRATES: &[&str] = &["src", "sim/src"];

fn src_dir(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(krate)
}

fn read_modules(dir: &Path, prefix: &ModPath, out: &mut BTreeMap<ModPath, Module>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if p.is_dir() {
            let mut m = prefix.clone();
            m.push(name);
            read_modules(&p, &m, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let (path, folder) = match stem {
                "mod" | "lib" => (prefix.clone(), true),
                "main" => continue,
                s => {
                    let mut m = prefix.clone();
                    m.push(s.to_string());
                    (m, false)
                }
            };
            let text = std::fs::read_to_string(&p).unwrap();
            out.insert(
                path,
                Module {
                    code: without_tests(&strip(&text)),
                    folder,
                },
            );
        }
    }
}

/// The text without comments and the contents of string and char literals.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if rest.starts_with("/*") {
            let mut depth = 0;
            while i < b.len() {
                if src[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if src[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"…", r#"…"#, br"…": to the closing quote and as many hashes.
            let open = rest.find('"').unwrap();
            let close = format!("\"{}", "#".repeat(hashes));
            let end = rest[open + 1..]
                .find(&close)
                .map_or(rest.len(), |e| open + 1 + e + close.len());
            out.push_str("\"\"");
            i += end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && is_char_literal(rest) {
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, `br"`… at the start of `s` (and not inside an identifier,
/// which the caller's scan position guarantees well enough here): the
/// number of hashes.
fn raw_string_start(s: &str) -> Option<usize> {
    let s = s.strip_prefix('b').unwrap_or(s);
    let s = s.strip_prefix('r')?;
    let hashes = s.len() - s.trim_start_matches('#').len();
    s[hashes..].starts_with('"').then_some(hashes)
}

/// A char literal rather than a lifetime: `'x'`, `'\n'`, `'\u{..}'`.
fn is_char_literal(s: &str) -> bool {
    let mut chars = s.chars().skip(1);
    match chars.next() {
        Some('\\') => true,
        Some(_) => chars.next() == Some('\''),
        None => false,
    }
}

/// The code without `#[cfg(test)]` items (test modules and test-only
/// functions): a brace-balanced block, or an item ending in `;`.
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let brace = after.find('{');
        let semi = after.find(';');
        match (brace, semi) {
            (Some(b), s) if s.is_none_or(|s| b < s) => {
                let mut depth = 0;
                let mut end = after.len();
                for (j, c) in after[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + j + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &after[end..];
            }
            (_, Some(s)) => rest = &after[s + 1..],
            _ => rest = "",
        }
    }
    out.push_str(rest);
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path the code names from `crate`, `super` or `self`, resolved
/// against the module it is in; `use` trees expanded. The flag says
/// whether it came from a `pub use` (a re-export, not a dependency of the
/// module's own code).
fn paths(
    code: &str,
    here: &ModPath,
    folder: bool,
    children: &BTreeSet<String>,
) -> Vec<(ModPath, bool)> {
    let mut out = Vec::new();
    // `use` statements, trees and all.
    let mut rest = code;
    let mut uses = String::new();
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let is_pub = ["pub", "pub(crate)", "pub(super)"]
            .iter()
            .any(|p| before.ends_with(p));
        let end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        let tree = tidy(&rest[at + 3..end]);
        for p in expand(&tree) {
            if let Some(r) = resolve(&p, here, folder, children) {
                out.push((r, is_pub));
            }
        }
        uses.push_str(&rest[..at]);
        rest = &rest[end..];
    }
    uses.push_str(rest);
    // Paths written inline in the rest of the code, from the crate, the
    // parent, this module, or (relative) one of its children.
    let relative: Vec<String> = children.iter().map(|c| format!("{c}::")).collect();
    let starts = ["crate::", "super::", "self::"]
        .into_iter()
        .map(str::to_string)
        .chain(relative);
    for start in starts {
        let start = start.as_str();
        let mut from = 0;
        while let Some(at) = uses[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            if uses[..at]
                .chars()
                .last()
                .is_some_and(|c| is_ident(c) || c == ':')
            {
                continue;
            }
            let chain: String = uses[at..]
                .chars()
                .take_while(|c| is_ident(*c) || *c == ':')
                .collect();
            let segs: Vec<String> = chain
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            if let Some(r) = resolve(&segs, here, folder, children) {
                out.push((r, false));
            }
        }
    }
    out
}

fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = s[from..].find(word) {
        let at = from + at;
        let before = s[..at].chars().last();
        let after = s[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// A `use` tree with its white space folded: none around `::`, braces
/// and commas, one space elsewhere (`x as y`).
fn tidy(tree: &str) -> String {
    let folded = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    for (i, c) in folded.char_indices() {
        if c == ' ' {
            let prev = folded[..i].chars().last();
            let next = folded[i + 1..].chars().next();
            let tight = |c: Option<char>| c.is_some_and(|c| ":{},".contains(c));
            if tight(prev) || tight(next) {
                continue;
            }
        }
        out.push(c);
    }
    out.trim().to_string()
}

/// `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let Some(open) = tree.find('{') else {
        let p = tree.split(" as ").next().unwrap_or(tree);
        return vec![p
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut last) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[last..i]);
                last = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[last..]);
    let mut out = Vec::new();
    for p in parts.into_iter().filter(|p| !p.is_empty()) {
        for mut sub in expand(p) {
            if sub.first().is_some_and(|s| s == "self") {
                sub.remove(0);
            }
            let mut full = prefix.clone();
            full.append(&mut sub);
            out.push(full);
        }
    }
    out
}

/// A path from `crate`, `super`, `self` or a child module as an absolute
/// path of segments; `None` for paths into other crates.
fn resolve(
    segs: &[String],
    here: &ModPath,
    folder: bool,
    children: &BTreeSet<String>,
) -> Option<ModPath> {
    let (first, rest) = segs.split_first()?;
    // The module `super` and `self` start from.
    let mut base: ModPath = match first.as_str() {
        "crate" => return Some(rest.to_vec()),
        "self" => here.clone(),
        "super" => {
            // A file's parent, or for a folder's mod.rs the folder's.
            let _ = folder;
            let mut b = here.clone();
            b.pop()?;
            b
        }
        child if children.contains(child) => {
            let mut p = here.clone();
            p.extend(segs.iter().cloned());
            return Some(p);
        }
        _ => return None,
    };
    let mut rest = rest;
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The names of a module's child modules.
fn children(path: &ModPath, modules: &BTreeMap<ModPath, Module>) -> BTreeSet<String> {
    modules
        .keys()
        .filter(|m| m.len() > path.len() && m[..path.len()] == path[..])
        .map(|m| m[path.len()].clone())
        .collect()
}

/// Within folder `folder`, the child a path points into, or `None` for
/// the folder itself (an item of its `mod.rs`) — following the folder's
/// re-exports to the child that defines the name.
fn child_of(
    path: &ModPath,
    folder: &ModPath,
    modules: &BTreeMap<ModPath, Module>,
    reexports: &BTreeMap<ModPath, BTreeMap<String, String>>,
) -> Option<Option<String>> {
    if path.len() <= folder.len() || path[..folder.len()] != folder[..] {
        return if path == folder { Some(None) } else { None };
    }
    let next = &path[folder.len()];
    let mut child = folder.clone();
    child.push(next.clone());
    if modules.keys().any(|m| m.starts_with(&child)) {
        return Some(Some(next.clone()));
    }
    // An item of the folder's own mod.rs, or one it re-exports.
    Some(reexports.get(folder).and_then(|r| r.get(next)).cloned())
}

fn load(
    krate: &str,
) -> (
    BTreeMap<ModPath, Module>,
    BTreeMap<ModPath, BTreeMap<String, String>>,
) {
    let mut modules = BTreeMap::new();
    read_modules(&src_dir(krate), &vec![], &mut modules);
    modules.retain(|p, _| !p.first().is_some_and(|f| TEST_ONLY.contains(&f.as_str())));
    // What each folder's `pub use child::…` lines re-export, by name.
    let mut reexports: BTreeMap<ModPath, BTreeMap<String, String>> = BTreeMap::new();
    for (path, m) in &modules {
        if !m.folder {
            continue;
        }
        for (target, is_pub) in paths(&m.code, path, true, &children(path, &modules)) {
            if !is_pub || target.len() <= path.len() + 1 || target[..path.len()] != path[..] {
                continue;
            }
            let name = target.last().unwrap().clone();
            reexports
                .entry(path.clone())
                .or_default()
                .insert(name, target[path.len()].clone());
        }
        // `pub use child::*`-free folders only: a glob would hide names.
        assert!(
            !m.code.contains("pub use") || !m.code.contains("::*;"),
            "{path:?} re-exports a glob"
        );
    }
    (modules, reexports)
}

/// Edges `from -> to` between the children of `folder` ("" is its mod.rs).
fn folder_edges(
    folder: &ModPath,
    modules: &BTreeMap<ModPath, Module>,
    reexports: &BTreeMap<ModPath, BTreeMap<String, String>>,
) -> BTreeSet<(String, String)> {
    let mut edges = BTreeSet::new();
    for (path, m) in modules {
        let from = match child_of(path, folder, modules, reexports) {
            Some(Some(c)) => c,
            Some(None) => String::new(),
            None => continue,
        };
        for (target, is_pub) in paths(&m.code, path, m.folder, &children(path, modules)) {
            // A folder's re-exports are declarations, not its dependencies.
            if is_pub && m.folder && from.is_empty() {
                continue;
            }
            let to = match child_of(&target, folder, modules, reexports) {
                Some(Some(c)) => c,
                Some(None) => String::new(),
                None => continue,
            };
            if to != from {
                edges.insert((from.clone(), to));
            }
        }
    }
    edges
}

/// A cycle among the edges, if there is one.
fn cycle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark: BTreeMap<&String, Mark> = nodes.iter().map(|n| (*n, Mark::New)).collect();
    fn visit<'a>(
        n: &'a String,
        edges: &'a BTreeSet<(String, String)>,
        mark: &mut BTreeMap<&'a String, Mark>,
        stack: &mut Vec<&'a String>,
    ) -> Option<Vec<String>> {
        mark.insert(n, Mark::Open);
        stack.push(n);
        for (_, to) in edges.iter().filter(|(a, _)| a == n) {
            match mark[to] {
                Mark::Open => {
                    let at = stack.iter().position(|s| *s == to).unwrap();
                    let mut c: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
                    c.push(to.clone());
                    return Some(c);
                }
                Mark::New => {
                    if let Some(c) = visit(to, edges, mark, stack) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        mark.insert(n, Mark::Done);
        None
    }
    for n in nodes {
        if mark[n] == Mark::New {
            if let Some(c) = visit(n, edges, &mut mark, &mut vec![]) {
                return Some(c);
            }
        }
    }
    None
}

fn named(n: &str) -> &str {
    if n.is_empty() {
        "mod.rs"
    } else {
        n
    }
}

#[test]
fn top_level_modules_import_only_lower_layers() {
    let (modules, reexports) = load("src");
    let rank = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let edges = folder_edges(&vec![], &modules, &reexports);
    let mut wrong = Vec::new();
    for (from, to) in &edges {
        if from.is_empty() {
            continue;
        }
        match (rank(from), rank(to)) {
            (Some(a), Some(b)) if b < a => {}
            (None, _) => wrong.push(format!("{from} is in no layer of LAYERS")),
            (_, None) => wrong.push(format!(
                "{to} (imported by {from}) is in no layer of LAYERS"
            )),
            _ => wrong.push(format!("{from} imports {to}, which is not below it")),
        }
    }
    let tops: BTreeSet<&String> = modules.keys().filter_map(|p| p.first()).collect();
    for t in tops {
        if rank(t).is_none() {
            wrong.push(format!("{t} is in no layer of LAYERS"));
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_folder_has_an_import_cycle_among_its_files() {
    let mut found = Vec::new();
    for krate in CRATES {
        let (modules, reexports) = load(krate);
        // The crate root too: the simulator's top-level modules have no
        // layers of their own, but no cycle either.
        let folders: Vec<&ModPath> = modules
            .iter()
            .filter(|(_, m)| m.folder)
            .map(|(p, _)| p)
            .collect();
        for folder in folders {
            let edges = folder_edges(folder, &modules, &reexports);
            if let Some(c) = cycle(&edges) {
                let c: Vec<&str> = c.iter().map(|n| named(n)).collect();
                found.push(format!("{krate}/{}: {}", folder.join("/"), c.join(" -> ")));
            }
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_cycles_and_reexports() {
    // A cycle through a re-export is still a cycle.
    let mut modules = BTreeMap::new();
    let m = |code: &str, folder| Module {
        code: without_tests(&strip(code)),
        folder,
    };
    let p = |s: &str| -> ModPath { s.split('/').map(str::to_string).collect() };
    modules.insert(p("a"), m("mod b;\nmod c;\npub use b::Thing;\n", true));
    modules.insert(p("a/b"), m("use super::c::Other; // crate::a::x\n", false));
    modules.insert(
        p("a/c"),
        m("fn f() -> crate::a::Thing { todo!() }\n#[cfg(test)]\nmod tests { use super::super::b; }", false),
    );
    let mut reexports = BTreeMap::new();
    reexports.insert(
        p("a"),
        BTreeMap::from([("Thing".to_string(), "b".to_string())]),
    );
    let edges = folder_edges(&p("a"), &modules, &reexports);
    assert_eq!(
        edges,
        BTreeSet::from([("b".into(), "c".into()), ("c".into(), "b".into())])
    );
    assert!(cycle(&edges).is_some());
    // Strings and comments name nothing.
    let none = BTreeSet::new();
    let quoted = strip("let s = \"crate::x\"; // crate::y\n");
    assert!(paths(&quoted, &vec![], false, &none).is_empty());
    // A child named without `self::` is still a dependency.
    let kids = BTreeSet::from(["api".to_string()]);
    let code = strip("use api::handle;\nfn f() { api::run(); x::api::y(); }");
    assert_eq!(
        paths(&code, &vec![], true, &kids),
        vec![(p("api/handle"), false), (p("api/run"), false)]
    );
}

/// A type's cache is changed only through the reflector's narrow
/// `Writer` (`cache::type_cache` applies each `Update` to its store):
/// every other module of the library reads stores, never writes them.
#[test]
fn only_the_writer_changes_a_type_caches_store() {
    let writes = [
        ".apply(",
        ".replace(",
        ".advance(",
        ".advance_proven(",
        ".release()",
        ".resync(",
        ".compact()",
    ];
    let (modules, _) = load("src");
    let mut found = Vec::new();
    for (path, m) in &modules {
        let name = path.join("::");
        if name.starts_with("store") || name == "cache::type_cache" {
            continue;
        }
        for w in writes {
            if m.code.contains(&format!("store{w}")) {
                found.push(format!("{name} calls store{w}"));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p).unwrap().lines().count()
}

#[test]
fn no_integration_test_file_is_over_1500_lines_and_the_commands_main_is_small() {
    // Long test files grew by accretion (chaos.rs reached 2,731 lines):
    // a scenario with shared harness code is a folder of modules.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tests", "cli/tests", "sim/tests"] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    assert!(files.len() > 50, "{} test files found", files.len());
    let long: Vec<_> = files
        .iter()
        .map(|p| {
            (
                p.strip_prefix(root).unwrap().display().to_string(),
                lines(p),
            )
        })
        .filter(|(_, n)| *n > 1500)
        .collect();
    assert!(long.is_empty(), "test files over 1,500 lines: {long:?}");
    // The command's entry point parses and exits; the subcommands live in
    // cli/src/commands.
    let main = lines(&root.join("cli/src/main.rs"));
    assert!(main <= 500, "cli/src/main.rs has {main} lines");
}

/// Whether code (stripped of comments and strings) names a `serve::` path.
fn names_serve(code: &str) -> bool {
    code.match_indices("serve::")
        .any(|(i, _)| !code[..i].chars().last().is_some_and(is_ident))
}

#[test]
fn the_simulator_uses_the_library_through_serving_never_serve_itself() {
    // kubecache::serving is the part of the HTTP front another server may
    // build on; the rest of serve is kubecache's own and changes freely.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("sim/src"), &mut files);
    assert!(files.len() > 10, "{} simulator files found", files.len());
    let mut found: Vec<String> = files
        .iter()
        .filter(|p| names_serve(&strip(&std::fs::read_to_string(p).unwrap())))
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .collect();
    found.sort();
    assert!(found.is_empty(), "serve:: used in {found:?}");
    // The check sees a use, and not a comment or another module's name.
    assert!(names_serve(&strip("use kubecache::serve::watch;")));
    assert!(!names_serve(&strip(
        "// kubecache::serve::x\nfn f() { my_serve::g(); }"
    )));
}

/// `src` without its comments; string literals kept (a setting's flag is
/// named in messages, and that counts).
fn without_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '/' && chars.peek() == Some(&'/') {
            while chars.peek().is_some_and(|&c| c != '\n') {
                chars.next();
            }
        } else {
            in_string = c == '"' && !out.ends_with('\'');
            out.push(c);
        }
    }
    out
}

/// Each setting of `config::Settings` (from its one declaration, the
/// `settings!` block): its field, and its names as a user spells them —
/// the flag, the environment variable and the file key.
fn settings() -> Vec<(String, [String; 3])> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(root.join("src/config.rs")).unwrap();
    let block = &src[src.find("settings! {").expect("the settings! block")..];
    let block = &block[..block.find("\n}\n").unwrap()];
    let mut long = None;
    let mut out = Vec::new();
    for line in block.lines().map(str::trim) {
        if let Some(l) = line.split("arg(long = \"").nth(1) {
            long = l.split('"').next().map(str::to_string);
        }
        let Some((field, _)) = line.split_once(": ") else {
            continue;
        };
        if line.starts_with("//") || !field.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            continue;
        }
        let flag = long.take().unwrap_or_else(|| field.replace('_', "-"));
        let env = format!("KUBECACHE_{}", flag.replace('-', "_").to_uppercase());
        let mut key = String::new();
        let mut upper = false;
        for c in field.chars() {
            match c {
                '_' => upper = true,
                c if upper => (key.push(c.to_ascii_uppercase()), upper = false).1,
                c => key.push(c),
            }
        }
        out.push((field.to_string(), [format!("--{flag}"), env, key]));
    }
    out
}

/// Whether `code` has `name` standing alone (not inside a longer name).
fn spells(code: &str, name: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    code.match_indices(name).any(|(i, _)| {
        !code[..i].chars().last().is_some_and(part)
            && !code[i + name.len()..].chars().next().is_some_and(part)
    })
}

#[test]
fn each_setting_is_named_in_at_most_two_product_files() {
    // Declared once (config.rs: type, help, flag, file key; the variable
    // follows from the flag), so a setting's names appear there and in at
    // most one other file of the product, e.g. a message naming the flag
    // that would allow what was refused. A one-word file key (`listen`) is
    // an ordinary word and not counted; its flag and variable are.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "cli/src", "sim/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let code: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, without_comments(&std::fs::read_to_string(p).unwrap()))
        })
        .collect();
    let settings = settings();
    assert!(settings.len() > 40, "{settings:?}");
    let mut over = Vec::new();
    for (field, names) in &settings {
        let counted = names.iter().filter(|n| n.as_str() != field.as_str());
        let counted: Vec<&String> = counted.collect();
        let in_files: Vec<&str> = code
            .iter()
            .filter(|(_, text)| counted.iter().any(|n| spells(text, n)))
            .map(|(name, _)| name.as_str())
            .collect();
        if in_files.len() > 2 {
            over.push(format!("{field}: {in_files:?}"));
        }
    }
    assert!(
        over.is_empty(),
        "settings named in more than two files: {over:#?}"
    );
    // The checks see what they should.
    let (_, names) = settings
        .iter()
        .find(|(f, _)| f == "client_cert_file")
        .unwrap();
    assert_eq!(
        names,
        &["--client-cert", "KUBECACHE_CLIENT_CERT", "clientCertFile"].map(String::from)
    );
    assert!(spells("\"needs --client-cert\"", "--client-cert"));
    assert!(!spells("--client-cert-file", "--client-cert"));
    assert_eq!(
        without_comments("a // b\n\"c // d\" // e"),
        "a \n\"c // d\" "
    );
}
