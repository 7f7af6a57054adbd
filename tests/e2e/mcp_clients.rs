//! Real MCP clients against `mirobody-local` (A4, F4): the Python SDK 2.3.0 in
//! 2026-07-28 mode and in auto mode (discover, fall back to initialize), and the
//! TypeScript SDK 1.32.2 on the legacy (initialize) path. Each lists tools and calls
//! one. Their dependencies come from `scripts/install-test-deps`.

use std::path::PathBuf;

use e2e::{Server, python, root, run_client};
use serde_json::Value;

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

/// `python_client.py` in `mode`: lists tools and calls one.
fn python_sdk_lists_and_calls(mode: &str) {
    let server = Server::start(&[]);
    let script = root().join("tests/clients/python_client.py");
    let report = run_client(
        &python(),
        &[script.to_str().unwrap(), &server.url("/mcp"), mode],
    );
    assert_listed_and_called(&report, &format!("python {mode}"));
}

#[test]
fn python_sdk_in_2026_07_28_mode_lists_and_calls() {
    python_sdk_lists_and_calls("2026-07-28");
}

#[test]
fn python_sdk_in_auto_mode_lists_and_calls() {
    python_sdk_lists_and_calls("auto");
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
    let report = run_client(
        &PathBuf::from("node"),
        &[script.to_str().unwrap(), &server.url("/mcp")],
    );
    assert_listed_and_called(&report, "typescript");
    assert_eq!(
        report["protocol"], "2025-11-25",
        "the TS SDK negotiates its newest legacy version"
    );
}
