//! No import circle between the files of any crate: data and calls flow one way.
//!
//! Each `.rs` file under `crates/*/src` is a module (`a.rs` and `a/mod.rs` are `a`, `a/b.rs` is
//! `a::b`, `lib.rs` and `main.rs` the root). A module depends on another when its code (not its
//! `#[cfg(test)]` module) names it by a path: `use crate::x::...`, `crate::x::f(...)`,
//! `super::...`, `self::...` inside `use` groups included. The crate root's own `mod` and
//! `pub use` lines only declare and re-export, and are not dependencies; anything else in the
//! root is. The test fails on every strongly connected group of two or more modules, naming
//! them and the lines that make each edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The repository's root (two levels above this test's crate).
fn root() -> PathBuf {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test");
    Path::new(&manifest).join("../..")
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file relative to its crate's `src` ("" for the root).
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without comments, string literals and its `#[cfg(test)]` module.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(&strip_strings(code));
        out.push('\n');
    }
    out
}

/// A line with the contents of its string literals removed (a path in a message is no use).
fn strip_strings(line: &str) -> String {
    let mut out = String::new();
    let mut in_str = false;
    let mut escaped = false;
    for c in line.chars() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
                out.push(c);
            }
        } else {
            if c == '"' {
                in_str = true;
            }
            out.push(c);
        }
    }
    out
}

/// Expand a `use` tree's text (after `use `, without the `;`) into full paths.
fn expand_use(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let base = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&base, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&base, &inner[start..], out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(join(prefix, path));
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    }
}

/// The paths a module's code names: every `use` (expanded) and every `crate::` / `super::` /
/// `self::` path outside `use` lines. Root declarations (`mod`, `pub use`) are left out.
fn named_paths(code: &str, is_root: bool) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = code;
    // `use` statements, which may span lines.
    let mut other = String::new();
    while let Some(i) = find_use(rest) {
        other.push_str(&rest[..i]);
        let stmt_start = i;
        let end = rest[stmt_start..]
            .find(';')
            .map_or(rest.len(), |e| stmt_start + e);
        let stmt = &rest[stmt_start..end];
        let body = stmt
            .trim_start()
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        let is_pub_use = stmt.trim_start().starts_with("pub ");
        let tree = body.trim_start_matches("use ").trim();
        if !(is_root && is_pub_use) {
            let mut paths = Vec::new();
            expand_use("", tree, &mut paths);
            for p in paths {
                found.push((p, stmt.trim().to_string()));
            }
        }
        rest = &rest[end.min(rest.len())..];
    }
    other.push_str(rest);
    for line in other.lines() {
        let t = line.trim_start();
        if is_root && (t.starts_with("mod ") || t.starts_with("pub mod ")) {
            continue;
        }
        for key in ["crate::", "super::", "self::"] {
            let mut from = 0;
            while let Some(k) = line[from..].find(key) {
                let s = from + k;
                let fresh = s == 0
                    || !line[..s].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
                let end = line[s..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .map_or(line.len(), |e| s + e);
                if fresh {
                    found.push((
                        line[s..end].trim_end_matches(':').to_string(),
                        line.trim().to_string(),
                    ));
                }
                from = end.max(s + key.len());
            }
        }
    }
    found
}

/// The byte offset of the next `use` statement's start (at a line start, maybe `pub`).
fn find_use(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("use ") || t.starts_with("pub use ") || t.starts_with("pub(crate) use ") {
            return Some(offset + (line.len() - t.len()));
        }
        offset += line.len();
    }
    None
}

/// The module a path names: the longest known module prefix of its absolute form.
fn target(path: &str, from: &str, modules: &BTreeSet<String>) -> Option<String> {
    let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
    let mut abs: Vec<String> = match parts.first().copied() {
        Some("crate") => {
            parts.remove(0);
            Vec::new()
        }
        Some("self") => {
            parts.remove(0);
            from.split("::")
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect()
        }
        Some("super") => {
            let mut base: Vec<String> = from
                .split("::")
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect();
            while parts.first() == Some(&"super") {
                parts.remove(0);
                base.pop();
            }
            base
        }
        _ => return None,
    };
    let mut best = abs.join("::");
    for p in parts {
        abs.push(p.to_string());
        let candidate = abs.join("::");
        if modules.contains(&candidate) {
            best = candidate;
        } else {
            break;
        }
    }
    Some(best)
}

/// Strongly connected components of two or more nodes (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(s: &mut State, v: &str) {
        let i = s.index.len();
        s.index.insert(v.to_string(), i);
        s.low.insert(v.to_string(), i);
        s.stack.push(v.to_string());
        s.on_stack.insert(v.to_string());
        let next: Vec<String> = s
            .edges
            .get(v)
            .map(|e| e.iter().cloned().collect())
            .unwrap_or_default();
        for w in next {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low[v];
                s.low.insert(v.to_string(), lv.min(lw));
            } else if s.on_stack.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low[v];
                s.low.insert(v.to_string(), lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == v;
                group.push(w);
                if done {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Each crate's module graph: edges and, per edge, one line that makes it.
type Graph = (
    BTreeMap<String, BTreeSet<String>>,
    BTreeMap<(String, String), String>,
);

fn crate_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(f.strip_prefix(src).unwrap_or(f)))
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut why = BTreeMap::new();
    for f in &files {
        let module = module_of(f.strip_prefix(src).unwrap_or(f));
        let text = std::fs::read_to_string(f).unwrap_or_default();
        edges.entry(module.clone()).or_default();
        for (path, line) in named_paths(&code_of(&text), module.is_empty()) {
            if let Some(to) = target(&path, &module, &modules) {
                if to != module && modules.contains(&to) {
                    edges.entry(module.clone()).or_default().insert(to.clone());
                    why.entry((module.clone(), to)).or_insert(line);
                }
            }
        }
    }
    (edges, why)
}

#[test]
fn no_import_circle_in_any_crate() {
    let crates = root().join("crates");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .expect("crates/ is there")
        .filter_map(|e| e.ok().map(|e| e.path().join("src")))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "only {} crates found", dirs.len());
    let mut report = Vec::new();
    for src in &dirs {
        let (edges, why) = crate_graph(src);
        for group in circles(&edges) {
            let mut lines = vec![format!("{}: {}", src.display(), group.join(" <-> "))];
            for a in &group {
                for b in &group {
                    if let Some(l) = why.get(&(a.clone(), b.clone())) {
                        let (a, b) = (
                            if a.is_empty() { "lib" } else { a },
                            if b.is_empty() { "lib" } else { b },
                        );
                        lines.push(format!("    {a} -> {b}: {l}"));
                    }
                }
            }
            report.push(lines.join("\n"));
        }
    }
    assert!(
        report.is_empty(),
        "import circles (break each by moving what both use to a module below them):\n{}",
        report.join("\n")
    );
}

/// The checker finds a circle it is shown and none where there is none.
#[test]
fn the_checker_sees_circles() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod a;\npub mod b;\npub mod c;\npub use a::A;\n",
    )
    .unwrap();
    std::fs::write(src.join("a.rs"), "use crate::{b::B, c};\npub struct A;\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct B;\nfn f() { let _ = super::c::C; }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "pub struct C;\n// use crate::a::A;\nconst S: &str = \"crate::a::A\";\n",
    )
    .unwrap();
    let (edges, _) = crate_graph(src);
    assert!(circles(&edges).is_empty(), "{edges:?}");
    std::fs::write(
        src.join("c.rs"),
        "pub struct C;\n#[allow(dead_code)]\nfn g() -> crate::a::A { crate::a::A }\n",
    )
    .unwrap();
    let (edges, _) = crate_graph(src);
    // a -> b -> c -> a and a -> c -> a: one circle of the three.
    let expected = vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]];
    assert_eq!(circles(&edges), expected, "{edges:?}");
}
