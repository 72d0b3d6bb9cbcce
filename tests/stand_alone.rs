//! The repository stands alone: no tracked file reads or names anything outside it.
//!
//! Every tracked text file (`git ls-files`) is scanned for
//! - absolute paths into a home or work folder (`/work/`, `/home/`, `/root/`);
//! - every relative path that starts with `../`: it must resolve, from the file's own folder,
//!   the repository's root or one of its crates (the folders a path in code is relative to), to
//!   a path that exists inside the repository;
//! - every document named (`*.md`): a path must resolve the same way, a bare name must be the
//!   name of a tracked file. Notes kept beside a checkout on a developer's machine are found so.
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

/// Absolute folders that exist on a developer's machine, never in a clone.
const OUTSIDE_FOLDERS: [&str; 3] = ["/work/", "/home/", "/root/"];

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

/// The documents a line names: tokens ending in `.md` that are not `../` paths (those are
/// checked as paths), nor absolute, nor part of an address.
fn documents(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut token = String::new();
    for c in line.chars().chain(std::iter::once(' ')) {
        if is_path_char(c) {
            token.push(c);
            continue;
        }
        let t = token.trim_end_matches(['.', ',']).trim_start_matches('-');
        let address = c == ':' || line.contains(&format!("://{t}"));
        // A token starting with a dot is a suffix (`stem + ".table.md"`), not a document.
        if t.ends_with(".md") && !t.starts_with('.') && !t.starts_with('/') && !address {
            found.push(t.to_string());
        }
        token.clear();
    }
    found
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

/// The repository's places a line may name: its root, its bases (crates), its tracked files.
struct Repo<'a> {
    root: &'a Path,
    bases: &'a [PathBuf],
    names: &'a BTreeSet<String>,
}

/// What is wrong with one line of `file`, if anything.
fn check_line(repo: &Repo, file: &Path, line: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for folder in OUTSIDE_FOLDERS {
        if line.contains(folder) {
            problems.push(format!(
                "names the folder `{folder}` of a machine, not of the repository"
            ));
        }
    }
    let own_dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let inside = |rel: &str| {
        std::iter::once(&own_dir)
            .chain(repo.bases.iter())
            .filter_map(|b| resolve(b, rel))
            .any(|p| repo.root.join(&p).exists() || is_output(&p))
    };
    for rel in parent_paths(line) {
        if !inside(&rel) {
            problems.push(format!("`{rel}` leads to nothing inside the repository"));
        }
    }
    for doc in documents(line) {
        let known = match doc.contains('/') {
            true => inside(&doc),
            false => repo.names.contains(&doc),
        };
        if !known {
            problems.push(format!(
                "names the document `{doc}`, which the repository has not"
            ));
        }
    }
    problems
}

/// The file names of the tracked files.
fn file_names(files: &[PathBuf]) -> BTreeSet<String> {
    files
        .iter()
        .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect()
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
    let (bases, names) = (bases(&files), file_names(&files));
    let repo = Repo {
        root: &root,
        bases: &bases,
        names: &names,
    };
    // This file names outside places in its own test of the checker.
    let this_file = Path::new("tests/stand_alone.rs");
    let mut findings = Vec::new();
    for file in files.iter().filter(|f| f.as_path() != this_file) {
        let Ok(bytes) = std::fs::read(root.join(file)) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for p in check_line(&repo, file, line) {
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
    let (bases, names) = (bases(&files), file_names(&files));
    let repo = Repo {
        root: &root,
        bases: &bases,
        names: &names,
    };
    let check = |file: &str, line: &str| check_line(&repo, Path::new(file), line);
    let main = "crates/flexbench/src/main.rs";
    assert_eq!(
        check(main, "let p = \"../../../elsewhere/photos\";").len(),
        1
    );
    // A path leading nowhere inside (checked as a path, once).
    assert_eq!(check(main, "see ../elsewhere/data/NOTES.md").len(), 1);
    assert_eq!(check(main, "as the team's model-notes.md says").len(), 1);
    assert_eq!(check(main, "the photos in notes/data/README.md").len(), 1);
    assert_eq!(check(main, "cp /work/elsewhere/a.jpg .").len(), 1);
    for (file, line) in [
        (main, "path = \"../../tests/stand_alone.rs\""),
        ("docs/bench.md", "[fem](../docs/fem.md)."),
        ("crates/mechanism/src/fit.rs", "(docs/bench.md section 4)"),
        (
            "README.md",
            "see [the FEM](docs/fem.md) and ARCHITECTURE.md, https://example.org/a.md",
        ),
        // An output folder of a run need not exist in a clone.
        ("pipelines/default.toml", "out = \"../out/demo\""),
    ] {
        let ok = check(file, line);
        assert!(ok.is_empty(), "{line}: {ok:?}");
    }
}
