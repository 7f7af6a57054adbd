//! The check that every end-to-end test file runs. `tests/` is its own package, so Cargo
//! does not discover `tests/*.rs` by itself: each file needs a `[[test]]` entry in
//! `tests/Cargo.toml`, and a file without one compiles into nothing and never runs.
//! This unit test of the `e2e` library (which Cargo always builds and runs) fails when
//! that happens.
//!
//! Reads only `tests/Cargo.toml` and the file names in `tests/`; never builds or runs
//! anything.

use std::collections::BTreeSet;

use crate::root;

/// The `path` of every `[[test]]` entry in a package manifest, as written.
fn test_paths(manifest: &str) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    let mut in_test = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_test = line.replace(' ', "") == "[[test]]";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if in_test && key.trim() == "path" {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            paths.insert(value.trim_start_matches("./").to_string());
        }
    }
    paths
}

/// The `*.rs` files directly in `dir`, by name.
fn rust_files(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} is readable ({e})", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|x| x == "rs"))
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_test_file_has_a_test_entry() {
    let dir = root().join("tests");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("tests/Cargo.toml");
    let listed = test_paths(&manifest);
    let unlisted: Vec<String> = rust_files(&dir)
        .into_iter()
        .filter(|file| !listed.contains(file))
        .collect();
    assert!(
        unlisted.is_empty(),
        "these files in tests/ never run, because tests/Cargo.toml has no [[test]] entry \
         for them; add one each (name = the file stem, path = the file name): {unlisted:?}"
    );
}

#[test]
fn test_entries_are_read_from_the_manifest() {
    let manifest = r#"
[lib]
path = "support/mod.rs"

[[test]]
name = "one"
path = "one.rs"

[[example]]
name = "bench"
path = "bench.rs"

[[ test ]]
path = './two.rs' # a comment
name = "two"

[dependencies]
path = "not-a-test.rs"
"#;
    let expected: BTreeSet<String> = ["one.rs", "two.rs"].map(String::from).into();
    assert_eq!(test_paths(manifest), expected);
}
