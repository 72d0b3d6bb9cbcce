//! The bad-input corpus (tests/bad-input/, made by scripts/make_bad_input.py): for every case the
//! real binary, run on the broken input, exits non-zero without a panic and its message holds
//! every expected word (the problem and the fix). All cases run; the failures are listed together.

use crate::common;

use std::process::Command;

#[derive(serde::Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    input: String,
    command: Vec<String>,
    expect: Vec<String>,
}

#[test]
fn every_bad_input_is_refused_by_name() {
    let root = common::root();
    let corpus_dir = root.join("tests/bad-input");
    let corpus: Corpus =
        toml::from_str(&std::fs::read_to_string(corpus_dir.join("cases.toml")).unwrap()).unwrap();
    assert!(
        corpus.case.len() >= 40,
        "the corpus has {} cases",
        corpus.case.len()
    );
    let scratch = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (k, c) in corpus.case.iter().enumerate() {
        let out = scratch.path().join(format!("case-{k}"));
        std::fs::create_dir_all(&out).unwrap();
        // A text input naming {root} gets the repository's path, in a copy.
        let mut input = corpus_dir.join(&c.input);
        if input.is_file() {
            if let Ok(text) = std::fs::read_to_string(&input) {
                if text.contains("{root}") {
                    let copy = out.join(input.file_name().unwrap());
                    std::fs::write(&copy, text.replace("{root}", &root.display().to_string()))
                        .unwrap();
                    input = copy;
                }
            }
        }
        let fill = |a: &str| {
            a.replace("{file}", &input.display().to_string())
                .replace("{root}", &root.display().to_string())
                .replace("{out}", &out.display().to_string())
        };
        let args: Vec<String> = c.command.iter().map(|a| fill(a)).collect();
        let o = Command::new(env!("CARGO_BIN_EXE_flexbench"))
            .args(&args)
            .current_dir(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let missing: Vec<&String> = c
            .expect
            .iter()
            .filter(|e| !err.contains(e.as_str()))
            .collect();
        if o.status.success() || err.contains("panicked") || !missing.is_empty() {
            failures.push(format!(
                "- {} (exit {:?}): missing {:?}\n    {}",
                c.name,
                o.status.code(),
                missing,
                err.trim().replace('\n', "\n    ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        corpus.case.len(),
        failures.join("\n")
    );
}
