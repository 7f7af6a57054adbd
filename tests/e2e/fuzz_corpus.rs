//! The fuzz seeds as regression tests: every input in `fuzz/corpus/<target>/`
//! (the committed `seed-*` files, and whatever a local fuzz run left there) and in
//! `fuzz/artifacts/<target>/` (a crash a local run found; git ignores that directory) goes
//! through that target's body, on the stable toolchain and the ordinary test build: no
//! nightly, no sanitizer build of every dependency. A panic fails the test, naming the
//! target and the file. Finding new inputs is `scripts/fuzz` (`fuzz/README.md`).
//!
//! The bodies are the fuzz crate's own source (`fuzz/src/`, which each
//! `fuzz/fuzz_targets/<target>.rs` calls), included here as a module: one copy of each,
//! run by libFuzzer there and by this replay here.

#[path = "../../fuzz/src/lib.rs"]
mod bodies;

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use e2e::root;

/// A fuzz target's body: one input.
type Body = fn(&[u8]);

/// Every fuzz target, with its body.
const TARGETS: &[(&str, Body)] = &[
    ("mcp_request", bodies::mcp_request::run),
    ("upload_rows", bodies::upload_rows::run),
    ("route_and_forms", bodies::route_and_forms::run),
    ("jwt_verify", bodies::jwt_verify::run),
    ("address_guard", bodies::address_guard::run),
];

/// The files directly in `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every input of `target` through its body; fails naming each input that panics.
fn replay(target: &str) {
    let (_, body) = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .expect("a target of TARGETS");
    let fuzz = root().join("fuzz");
    let seeds = files(&fuzz.join("corpus").join(target));
    assert!(
        seeds.iter().any(|path| path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("seed-"))),
        "fuzz/corpus/{target}/ has no committed seed (seed-*): the replay of {target} \
         would test nothing (was the directory renamed?)"
    );
    let artifacts = files(&fuzz.join("artifacts").join(target));
    let mut panicked = Vec::new();
    for path in seeds.iter().chain(&artifacts) {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| body(&data))).is_err() {
            let shown = path.strip_prefix(&fuzz).unwrap_or(path);
            panicked.push(format!("fuzz/{}", shown.display()));
        }
    }
    // The request targets' app keeps its store in a directory of this process's own;
    // removed when this test is alone in its process (nextest), not under `cargo test`,
    // where the other request target's test may still be using it.
    if std::env::var_os("NEXTEST_EXECUTION_MODE").is_some_and(|m| m == "process-per-test") {
        let _ = std::fs::remove_dir_all(bodies::common::scratch_dir());
    }
    assert!(
        panicked.is_empty(),
        "fuzz target {target}: {} of {} inputs panic (each message is above): {panicked:?}; \
         one replays under the fuzzer with `cd fuzz && cargo +nightly fuzz run {target} <file>`",
        panicked.len(),
        seeds.len() + artifacts.len()
    );
}

#[test]
fn mcp_request_inputs_do_not_panic() {
    replay("mcp_request");
}

#[test]
fn upload_rows_inputs_do_not_panic() {
    replay("upload_rows");
}

#[test]
fn route_and_forms_inputs_do_not_panic() {
    replay("route_and_forms");
}

#[test]
fn jwt_verify_inputs_do_not_panic() {
    replay("jwt_verify");
}

#[test]
fn address_guard_inputs_do_not_panic() {
    replay("address_guard");
}

/// The `name` of every `[[bin]]` entry in a manifest.
fn bin_names(manifest: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_bin = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_bin = line.replace(' ', "") == "[[bin]]";
        } else if let Some(("name", value)) = line.split_once('=').map(|(k, v)| (k.trim(), v))
            && in_bin
        {
            names.insert(value.trim().trim_matches('"').to_string());
        }
    }
    names
}

/// A new fuzz target is replayed too: the targets here are those of `fuzz/Cargo.toml`,
/// `fuzz/fuzz_targets/`, `fuzz/corpus/` and `scripts/fuzz`.
#[test]
fn every_fuzz_target_is_replayed() {
    let fuzz = root().join("fuzz");
    let here: BTreeSet<String> = TARGETS.iter().map(|(name, _)| name.to_string()).collect();
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    assert_eq!(
        bin_names(&manifest),
        here,
        "the [[bin]] entries of fuzz/Cargo.toml"
    );
    let stems = |dir: &Path, files: bool| -> BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|path| path.is_file() == files)
            .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(
        stems(&fuzz.join("fuzz_targets"), true),
        here,
        "fuzz/fuzz_targets/"
    );
    assert_eq!(stems(&fuzz.join("corpus"), false), here, "fuzz/corpus/");
    let script = std::fs::read_to_string(root().join("scripts/fuzz")).expect("scripts/fuzz");
    let listed: BTreeSet<String> = script
        .lines()
        .find_map(|line| line.trim().strip_prefix("targets=("))
        .and_then(|rest| rest.strip_suffix(')'))
        .expect("scripts/fuzz lists its targets as targets=(...)")
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(listed, here, "the targets of scripts/fuzz");
}
