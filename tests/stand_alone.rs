//! The repository stands alone: no tracked file reads or names anything outside it.
//!
//! Every tracked text file (`git ls-files`) is scanned for
//! - the names of material that lives beside a checkout on a developer's machine and not in it
//!   (a `shared` reference shelf, its bench description, papers and dependency notes);
//! - absolute paths into a home or work folder (`/work/`, `/home/`, `/root/`);
//! - every relative path that starts with `../`: it must resolve, from the file's own folder,
//!   the repository's root or one of its crates (the folders a path in code is relative to), to
//!   a path that exists inside the repository.
//!
//! A finding names the file, the line and the path, so the fix is plain: copy the data into the
//! repository (with its source and licence) or describe the thing in the project's own words.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The repository's root (two levels above this test's crate).
fn root() -> PathBuf {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo test");
    let root = Path::new(&manifest).join("../..");
    root.canonicalize().expect("the repository's root exists")
}

/// Names that only make sense beside a checkout, never inside one.
const OUTSIDE_NAMES: [&str; 8] = [
    "../shared",
    "shared/data",
    "shared/seeds",
    "bench-model.md",
    "DEPENDENCIES.md",
    "STYLE.md",
    "/work/",
    "/home/",
];

/// The tracked files, by `git ls-files` (a clone always has its index).
fn tracked_files(root: &Path) -> Vec<PathBuf> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git ls-files failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| PathBuf::from(String::from_utf8_lossy(s).into_owned()))
        .collect()
}

/// The folders a relative path in a file may be written against: the file's folder, the root,
/// and every folder holding a Cargo.toml (cargo runs tests and build scripts from their crate).
fn bases(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut set = BTreeSet::new();
    set.insert(PathBuf::new());
    for f in files {
        if f.file_name().is_some_and(|n| n == "Cargo.toml") {
            set.insert(f.parent().map(Path::to_path_buf).unwrap_or_default());
        }
    }
    set.into_iter().collect()
}

/// `base/rel` normalised lexically; `None` when it climbs above the repository's root.
fn resolve(base: &Path, rel: &str) -> Option<PathBuf> {
    let mut parts: Vec<String> = base
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    for piece in rel.split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p.to_string()),
        }
    }
    Some(parts.iter().collect())
}

/// A path in the folders the project writes its outputs to (ignored by git, made by a run):
/// `out/` and `target/` at the root.
fn is_output(p: &Path) -> bool {
    matches!(
        p.components().next(),
        Some(Component::Normal(first)) if first == "out" || first == "target"
    )
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')
}

/// Every token of `line` that starts with `../`, trailing punctuation removed.
fn parent_paths(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i + 3 <= chars.len() {
        let starts = chars[i] == '.' && chars[i + 1] == '.' && chars[i + 2] == '/';
        let fresh = i == 0 || !is_path_char(chars[i - 1]);
        if starts && fresh {
            let mut j = i;
            while j < chars.len() && is_path_char(chars[j]) {
                j += 1;
            }
            let token: String = chars[i..j].iter().collect();
            found.push(token.trim_end_matches(['.', ',']).to_string());
            i = j;
        } else {
            i += 1;
        }
    }
    found
}

/// What is wrong with one line of `file`, if anything.
fn check_line(root: &Path, bases: &[PathBuf], file: &Path, line: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for name in OUTSIDE_NAMES {
        if line.contains(name) {
            problems.push(format!("names `{name}`, which is not in the repository"));
        }
    }
    let own_dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    for rel in parent_paths(line) {
        let inside = std::iter::once(&own_dir)
            .chain(bases.iter())
            .filter_map(|b| resolve(b, &rel))
            .any(|p| root.join(&p).exists() || is_output(&p));
        if !inside {
            problems.push(format!("`{rel}` leads to nothing inside the repository"));
        }
    }
    problems
}

#[test]
fn no_tracked_file_refers_outside_the_repository() {
    let root = root();
    let files = tracked_files(&root);
    assert!(
        files.len() > 100,
        "git ls-files listed only {} files",
        files.len()
    );
    let bases = bases(&files);
    let this_file = Path::new("tests/stand_alone.rs");
    let mut findings = Vec::new();
    for file in &files {
        if file == this_file {
            continue;
        }
        let Ok(bytes) = std::fs::read(root.join(file)) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for p in check_line(&root, &bases, file, line) {
                findings.push(format!("{}:{}: {p}", file.display(), n + 1));
            }
        }
    }
    assert!(
        findings.is_empty(),
        "{} reference(s) outside the repository (copy the data in with its source and licence, \
         or describe it in docs/):\n{}",
        findings.len(),
        findings.join("\n")
    );
}

/// The checker itself finds what it must (a test of the test, on lines made up here).
#[test]
fn the_checker_finds_outside_paths_and_passes_inside_ones() {
    let root = root();
    let files = tracked_files(&root);
    let bases = bases(&files);
    let file = Path::new("crates/flexbench/src/main.rs");
    let bad = check_line(
        &root,
        &bases,
        file,
        "let p = \"../../../elsewhere/photos\";",
    );
    assert_eq!(bad.len(), 1, "{bad:?}");
    // Two names of the shelf and a path leading nowhere inside.
    let bad = check_line(&root, &bases, file, "see ../shared/data/README.md");
    assert_eq!(bad.len(), 3, "{bad:?}");
    let bad = check_line(&root, &bases, file, "cp /work/elsewhere/a.jpg .");
    assert_eq!(bad.len(), 1, "{bad:?}");
    let ok = check_line(&root, &bases, file, "path = \"../../tests/stand_alone.rs\"");
    assert!(ok.is_empty(), "{ok:?}");
    let ok = check_line(
        &root,
        &bases,
        Path::new("docs/bench.md"),
        "[fem](../docs/fem.md).",
    );
    assert!(ok.is_empty(), "{ok:?}");
    // An output folder of a run need not exist in a clone.
    let ok = check_line(
        &root,
        &bases,
        Path::new("pipelines/default.toml"),
        "out = \"../out/demo\"",
    );
    assert!(ok.is_empty(), "{ok:?}");
}
