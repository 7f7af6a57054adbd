//! The check that every end-to-end test file runs. The end-to-end tests are one test
//! binary, `tests/e2e/main.rs` (the one `[[test]]` entry of `tests/Cargo.toml`), with a
//! module per area: a `tests/e2e/<area>.rs` that `main.rs` does not declare with
//! `mod <area>;` compiles into nothing and never runs, and so does a `tests/<area>.rs`
//! left directly in `tests/` (this package's root is `tests/`, so Cargo discovers no test
//! files by itself). This unit test of the `e2e` library (which Cargo always builds and
//! runs) fails when either happens.
//!
//! Reads only `tests/Cargo.toml`, `tests/e2e/main.rs` and the file names in `tests/` and
//! `tests/e2e/`; never builds or runs anything.

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

/// The modules a crate root declares from files (`mod name;`, `pub mod name;`, ...),
/// by name; inline modules (`mod name { ... }`) and comments are not declarations of a
/// file.
fn declared_modules(source: &str) -> BTreeSet<String> {
    source
        .lines()
        .map(|line| line.split("//").next().unwrap_or("").trim())
        .filter_map(|line| {
            let rest = line.strip_prefix("pub ").unwrap_or(line);
            let rest = match rest.strip_prefix("pub(") {
                Some(after) => after.split_once(')')?.1.trim_start(),
                None => rest,
            };
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?.trim();
            Some(name.to_string())
        })
        .collect()
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
fn every_test_file_is_a_module_of_the_e2e_binary() {
    let dir = root().join("tests");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("tests/Cargo.toml");
    let listed = test_paths(&manifest);
    assert!(
        listed.contains("e2e/main.rs"),
        "tests/Cargo.toml has no [[test]] entry for the end-to-end binary \
         (name = \"e2e\", path = \"e2e/main.rs\"), so none of its tests run"
    );
    let main = std::fs::read_to_string(dir.join("e2e/main.rs")).expect("tests/e2e/main.rs");
    let declared = declared_modules(&main);
    let undeclared: Vec<String> = rust_files(&dir.join("e2e"))
        .into_iter()
        .filter(|file| file != "main.rs")
        .filter(|file| !declared.contains(file.trim_end_matches(".rs")))
        .collect();
    let loose: Vec<String> = rust_files(&dir)
        .into_iter()
        .filter(|file| !listed.contains(file))
        .collect();
    assert!(
        undeclared.is_empty() && loose.is_empty(),
        "these test files never run: in tests/e2e/ without a `mod <file stem>;` in \
         tests/e2e/main.rs (add one each): {undeclared:?}; directly in tests/, where Cargo \
         discovers no test files in this package (move each into tests/e2e/ and add its \
         `mod` line): {loose:?}"
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

#[test]
fn module_declarations_are_read_from_the_crate_root() {
    let main = r#"
//! mod not_this;
mod one;
pub mod two;
pub(crate) mod three;
#[path = "../support/x.rs"]
mod four;
mod inline {
    mod nested_inline {}
}
// mod commented_out;
fn mod_like() {}
"#;
    let expected: BTreeSet<String> = ["one", "two", "three", "four"].map(String::from).into();
    assert_eq!(declared_modules(main), expected);
}
