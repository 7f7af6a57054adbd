//! Real MCP clients against `mirobody-local` (A4, F4): the Python SDK 2.3.0 in
//! 2026-07-28 mode and in auto mode (discover, fall back to initialize), and the
//! TypeScript SDK 1.32.2 on the legacy (initialize) path. Each lists tools and calls
//! one. Their dependencies come from `scripts/install-test-deps`.

use std::path::PathBuf;
use std::process::Command;

use e2e::{Server, root};
use serde_json::Value;

fn python() -> PathBuf {
    let venv = root().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "no .venv: run scripts/install-test-deps (scripts/test does)"
    );
    venv
}

fn run(program: PathBuf, args: &[&str]) -> Value {
    let output = Command::new(&program)
        .args(args)
        .current_dir(root())
        .output()
        .expect("the client runs");
    assert!(
        output.status.success(),
        "{} {args:?} failed:\n{}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .expect("the client prints one JSON line");
    serde_json::from_str(line).expect("valid JSON from the client")
}

fn assert_listed_and_called(report: &Value, client: &str) {
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"test_simple_text"),
        "{client}: tools {tools:?}"
    );
    let mut sorted = tools.clone();
    sorted.sort();
    assert_eq!(tools, sorted, "{client}: tools come in name order");
    assert_eq!(
        report["text"], "This is a simple text response for testing.",
        "{client}"
    );
    assert_ne!(report["is_error"], Value::Bool(true), "{client}");
}

#[test]
fn python_sdk_in_2026_07_28_mode_lists_and_calls() {
    let server = Server::start(&[]);
    let script = root().join("tests/clients/python_client.py");
    let report = run(
        python(),
        &[script.to_str().unwrap(), &server.url("/mcp"), "2026-07-28"],
    );
    assert_listed_and_called(&report, "python 2026-07-28");
}

#[test]
fn python_sdk_in_auto_mode_lists_and_calls() {
    let server = Server::start(&[]);
    let script = root().join("tests/clients/python_client.py");
    let report = run(
        python(),
        &[script.to_str().unwrap(), &server.url("/mcp"), "auto"],
    );
    assert_listed_and_called(&report, "python auto");
}

#[test]
fn typescript_sdk_on_the_legacy_path_lists_and_calls() {
    let server = Server::start(&[]);
    let script = root().join("tests/clients/ts_client.mjs");
    assert!(
        root()
            .join("tests/clients/node_modules/@modelcontextprotocol/sdk")
            .exists(),
        "no TypeScript SDK: run scripts/install-test-deps (scripts/test does)"
    );
    let report = run(
        PathBuf::from("node"),
        &[script.to_str().unwrap(), &server.url("/mcp")],
    );
    assert_listed_and_called(&report, "typescript");
    assert_eq!(
        report["protocol"], "2025-11-25",
        "the TS SDK negotiates its newest legacy version"
    );
}
