//! The MCP Inspector's CLI (`@modelcontextprotocol/inspector` 2.12.0, pinned in
//! `tests/clients/package.json`, built on the TypeScript SDK 2.x), from an empty
//! configuration to a data answer for the signed-in person, in each way the README's
//! client table gives it: the plain URL with a bearer header, in its legacy era
//! (`initialize`, its default) and in its modern era (2026-07-28); the personal URL alone;
//! and the plain URL alone on a server that asks for sign-in up front
//! (`MIROBODY_REQUIRE_AUTH=true`), where the Inspector runs the OAuth flow and the
//! browser it opens is headless Chromium signing the person in
//! (`tests/clients/sign_in_browser.mjs`).
//!
//! Each run has its own empty `HOME` (the Inspector's catalog and secrets), and everything
//! stays on loopback.

use std::path::PathBuf;
use std::process::Command;

use e2e::{Server, TempDir, assert_hba1c_answer, bearer_json, person_with_hba1c, root};
use serde_json::{Value, json};

const PASSWORD: &str = "correct horse battery";

fn inspector() -> PathBuf {
    let path = root().join(
        "tests/clients/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
    );
    assert!(
        path.exists(),
        "the MCP Inspector is not installed: run scripts/install-test-deps (scripts/test does)"
    );
    path
}

/// What the Inspector's `--method tools/call` of `query_health_indicators` printed as
/// JSON (`--format json`): the call's answer, or its error envelope.
fn call_data_tool(url: &str, options: &[&str], env: &[(&str, String)]) -> Value {
    let home = TempDir::new("inspector");
    let output = Command::new("node")
        .arg(inspector())
        .args(["--cli", url, "--method", "tools/call"])
        .args(["--tool-name", "query_health_indicators"])
        .args(["--tool-args-json", r#"{"keywords":["HbA1c"]}"#])
        .args(["--format", "json", "--connect-timeout", "60000"])
        .args(options)
        .env("HOME", &home.0)
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(&home.0)
        .output()
        .expect("node runs the Inspector");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout
        .lines()
        .rev()
        .find(|line| line.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON from the Inspector:\n{stdout}\n{stderr}"));
    let answer: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert!(
        output.status.success() && answer.get("error").is_none(),
        "the Inspector ({}): {answer}\n{stderr}",
        output.status
    );
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_with_a_bearer_header_answers_in_both_eras() {
    let server = Server::start(&[]);
    let token = person_with_hba1c(&server.base, "inspector@example.com", PASSWORD).await;
    let header = format!("Authorization: Bearer {token}");
    for era in ["legacy", "modern"] {
        let answer = call_data_tool(
            &server.url("/mcp"),
            &["--header", &header, "--protocol-era", era],
            &[],
        );
        assert_hba1c_answer(&answer["result"], &format!("the Inspector, {era}"));
        // The modern era speaks 2026-07-28: its answers carry the server's `_meta`.
        assert_eq!(
            answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string(),
            era == "modern",
            "{era}: {answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_on_the_personal_url_answers_without_a_header() {
    let server = Server::start(&[]);
    let token = person_with_hba1c(&server.base, "inspector@example.com", PASSWORD).await;
    let personal = bearer_json(&server, "POST", "/personal/mcp", &token, Some(json!({}))).await;
    assert_eq!(personal.status, 200, "{}", personal.body);
    let url = personal.json()["data"]["url"].as_str().unwrap().to_string();
    let answer = call_data_tool(&url, &["--transport", "http"], &[]);
    assert_hba1c_answer(&answer["result"], "the Inspector, personal URL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_signs_in_in_the_browser_on_a_401() {
    let server = Server::start(&[("MIROBODY_REQUIRE_AUTH", "true")]);
    person_with_hba1c(&server.base, "inspector@example.com", PASSWORD).await;
    let browser_dir = TempDir::new("inspector-browser");
    let browser = browser_dir.0.join("browser");
    let signed_in = browser_dir.0.join("sign-in.log");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nexec node '{}' \"$1\"\n",
            root().join("tests/clients/sign_in_browser.mjs").display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&browser).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&browser, permissions).unwrap();
    let callback = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let callback_url = format!("http://127.0.0.1:{callback}/oauth/callback");
    let answer = call_data_tool(
        &server.url("/mcp"),
        &["--protocol-era", "modern", "--callback-url", &callback_url],
        &[
            // The Inspector opens the browser itself only when told it may (no TTY here).
            ("MCP_AUTO_OPEN_ENABLED", "true".into()),
            ("BROWSER", browser.display().to_string()),
            ("SIGN_IN_EMAIL", "inspector@example.com".into()),
            ("SIGN_IN_PASSWORD", PASSWORD.into()),
            ("SIGN_IN_LOG", signed_in.display().to_string()),
        ],
    );
    assert_hba1c_answer(&answer["result"], "the Inspector, signed in with OAuth");
    let record = std::fs::read_to_string(&signed_in).unwrap_or_default();
    assert!(
        record.contains("\"opened\":\"/oauth/authorize\"") && !record.contains("\"error\""),
        "the person signed in in the browser: {record}"
    );
}
