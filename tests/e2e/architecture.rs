//! The architecture invariants of `ARCHITECTURE.md`, checked by reading the source, so a
//! change that breaks one fails the test run instead of waiting for a reviewer to notice.
//!
//! Each check scans the code lines of a tree (comments are skipped, and so is everything
//! after a file's `#[cfg(test)]` module: tests may speak to fakes in any vocabulary) and
//! names every offending file and line.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, relative to the workspace root, with its code lines.
fn sources(dir: &str) -> Vec<(String, Vec<(usize, String)>)> {
    let root = workspace();
    let mut files = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path
                    .strip_prefix(&root)
                    .expect("under the root")
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = fs::read_to_string(&path).expect("readable source");
                files.push((name, code_lines(&text)));
            }
        }
    }
    files.sort();
    assert!(!files.is_empty(), "no sources under {dir}");
    files
}

/// The lines that are code: no `//` comments, nothing from a `#[cfg(test)]` line on, and
/// no files that are test modules of their own (`*_tests.rs`, `tests.rs`, `contract/`).
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match trimmed.find("//") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        if !code.trim().is_empty() {
            lines.push((number + 1, code.to_string()));
        }
    }
    lines
}

fn is_test_file(name: &str) -> bool {
    name.ends_with("_tests.rs") || name.ends_with("/tests.rs") || name.contains("/contract/")
}

/// The places in `dir` (outside `allowed` prefixes and test files) where `matches` holds.
fn offenders(dir: &str, allowed: &[&str], matches: impl Fn(&str) -> bool) -> Vec<String> {
    sources(dir)
        .into_iter()
        .filter(|(name, _)| !is_test_file(name) && !allowed.iter().any(|a| name.starts_with(a)))
        .flat_map(|(name, lines)| {
            lines
                .into_iter()
                .filter(|(_, code)| matches(code))
                .map(move |(number, code)| format!("{name}:{number}: {}", code.trim()))
        })
        .collect()
}

fn assert_none(what: &str, found: Vec<String>) {
    assert!(found.is_empty(), "{what}:\n  {}", found.join("\n  "));
}

/// A JSON-RPC error number: `-32` and three more digits.
fn has_json_rpc_number(code: &str) -> bool {
    let bytes = code.as_bytes();
    bytes.windows(6).enumerate().any(|(at, w)| {
        w.starts_with(b"-32")
            && w[3..].iter().all(u8::is_ascii_digit)
            && !bytes.get(at + 6).is_some_and(u8::is_ascii_digit)
    })
}

#[test]
fn json_rpc_error_numbers_live_only_in_mcp() {
    assert_none(
        "JSON-RPC error numbers outside shared/src/mcp/ (name them through McpError or crate::wire)",
        offenders(
            "shared/src",
            &["shared/src/mcp/", "shared/src/wire.rs"],
            has_json_rpc_number,
        ),
    );
}

#[test]
fn only_remote_makes_outbound_http_clients() {
    assert_none(
        "reqwest outside shared/src/remote/",
        offenders("shared/src", &["shared/src/remote/"], |code| {
            code.contains("reqwest")
        }),
    );
}

#[test]
fn only_store_talks_to_a_database() {
    assert_none(
        "a database client outside shared/src/store/",
        offenders("shared/src", &["shared/src/store/"], |code| {
            code.contains("aws_sdk_dynamodb") || code.contains("rusqlite")
        }),
    );
}

#[test]
fn only_store_and_key_loading_use_the_aws_sdk() {
    assert_none(
        "the AWS SDK outside shared/src/store/, shared/src/identity/keys.rs and shared/src/mail/ses.rs",
        offenders(
            "shared/src",
            &[
                "shared/src/store/",
                "shared/src/identity/keys.rs",
                "shared/src/mail/ses.rs",
            ],
            |code| code.contains("aws_sdk_") || code.contains("aws_config"),
        ),
    );
}

#[test]
fn the_library_never_sees_a_lambda_type() {
    assert_none(
        "a Lambda crate in shared/src",
        offenders("shared/src", &[], |code| {
            code.contains("lambda_http") || code.contains("lambda_runtime")
        }),
    );
    let manifest = fs::read_to_string(workspace().join("shared/Cargo.toml")).expect("manifest");
    assert!(
        !manifest.contains("lambda"),
        "shared/Cargo.toml depends on a Lambda crate"
    );
}

#[test]
fn tools_and_external_servers_never_speak_the_protocol() {
    for dir in ["shared/src/tools", "shared/src/external"] {
        assert_none(
            &format!("{dir} imports the protocol layer (mcp/ alone shapes JSON-RPC)"),
            offenders(dir, &[], |code| code.contains("crate::mcp")),
        );
    }
}

#[test]
fn binaries_only_open_services_and_serve() {
    assert_none(
        "a binary reaching into the store or identity (use Services::open)",
        offenders("functions", &[], |code| {
            code.contains("mirobody::store") || code.contains("mirobody::identity")
        }),
    );
}

#[test]
fn domain_types_stand_on_nothing() {
    assert_none(
        "shared/src/domain imports the rest of the crate (it is the ground floor)",
        offenders("shared/src/domain", &[], |code| {
            code.contains("crate::") && !code.contains("crate::domain")
        }),
    );
}

#[test]
fn upload_parsers_stay_pure() {
    assert_none(
        "shared/src/upload reaches the store (parsers return domain records; the data API writes them)",
        offenders("shared/src/upload", &[], |code| {
            code.contains("crate::store")
        }),
    );
}

/// Issue 27: mail leaves only through `mail/` (SES in `mail/ses.rs`), and `mail/` knows
/// nothing of the store, the tools or the domain records: a message can carry a link
/// and an address, never a reading or a genotype.
#[test]
fn only_mail_sends_mail_and_it_never_sees_health_data() {
    assert_none(
        "Amazon SES outside shared/src/mail/ses.rs",
        offenders("shared/src", &["shared/src/mail/ses.rs"], |code| {
            code.contains("aws_sdk_sesv2")
        }),
    );
    assert_none(
        "shared/src/mail reaches the store, the tools or the domain records",
        offenders("shared/src/mail", &[], |code| {
            code.contains("crate::store")
                || code.contains("crate::tools")
                || code.contains("crate::domain")
        }),
    );
}
