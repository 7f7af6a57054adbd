//! The smoke test for a deployment, end to end: `scripts/smoke` runs the README's
//! first-call sequence (metadata, anonymous `tools/list`, sign-up, upload, personal URL, a
//! data tool through it, deletion) against `mirobody-local`, so it is known to work before
//! anyone deploys. Given `--url` it uses that server; given a stack name it reads the
//! stack's outputs with the `aws` CLI (here a stand-in on `PATH` that answers like
//! `describe-stacks`). Its output shows no token, password or URL secret; a step failing
//! after sign-up still deletes the throw-away account (a `curl` stand-in breaks step 6);
//! against a port where nothing listens it fails on the first step, at once.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use e2e::{Server, TempDir, root, send};

/// The step lines a passing run prints, in order.
const STEPS: &[&str] = &[
    "1. protected resource",
    "1. authorization server",
    "2. tools/list (anonymous)",
    "3. sign-up",
    "4. upload readings",
    "5. personal URL",
    "6. query through URL",
    "7. delete account",
    "7. personal URL gone",
    "7. token refused",
];

/// Runs `scripts/smoke` with a clean environment (no proxy settings), `extra_path` first
/// on `PATH`.
fn smoke(args: &[&str], extra_path: Option<&Path>) -> (Output, String) {
    let path = std::env::var("PATH").unwrap_or_default();
    let path = match extra_path {
        Some(dir) => format!("{}:{path}", dir.display()),
        None => path,
    };
    let output = Command::new(root().join("scripts/smoke"))
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env("SMOKE_TIMEOUT", "20")
        .current_dir(root())
        .output()
        .expect("scripts/smoke runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, text)
}

/// The lines that report a step (everything but the heading and the total).
fn step_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.ends_with(" OK") || l.contains(" OK: ") || l.contains(" FAIL"))
        .filter(|l| !l.starts_with("total:"))
        .collect()
}

/// Asserts every step passed, in order, each with a status and a latency.
fn assert_all_steps_ok(output: &Output, text: &str, first: &[&str]) {
    assert!(output.status.success(), "scripts/smoke failed:\n{text}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = step_lines(&stdout);
    let expected: Vec<&str> = first.iter().chain(STEPS).copied().collect();
    assert_eq!(lines.len(), expected.len(), "{text}");
    for (line, name) in lines.iter().zip(&expected) {
        assert!(
            line.starts_with(name),
            "{name:?} expected: {line:?}\n{text}"
        );
        let rest: Vec<&str> = line[name.len()..].split_whitespace().collect();
        // status, latency, "ms", OK[: detail]
        assert!(rest.len() >= 4, "{line:?}");
        assert!(
            rest[1].parse::<u64>().is_ok() && rest[2] == "ms",
            "no latency: {line:?}"
        );
        assert!(rest[3].starts_with("OK"), "{line:?}\n{text}");
    }
    let total = stdout.lines().last().unwrap_or("");
    assert!(
        total.starts_with("total: ") && total.ends_with(&format!("{} steps OK", expected.len())),
        "no total line: {text}"
    );
    for (name, status) in [
        ("2. tools/list (anonymous)", " 200 "),
        ("3. sign-up", " 201 "),
        ("6. query through URL", " 200 "),
        ("7. personal URL gone", " 404 "),
        ("7. token refused", " 401 "),
    ] {
        let line = lines.iter().find(|l| l.starts_with(name)).expect("a step");
        assert!(line.contains(status), "{line:?}");
    }
    assert!(
        text.contains("5.4, 5.7, 6.1 back"),
        "the uploaded values did not come back: {text}"
    );
    assert_no_secret(text);
}

/// No token, password or URL secret in what the script printed: no `Bearer `, no JWT,
/// no `/mcp/<secret>`, no `password` value, and no run of 24 or more URL-safe characters
/// (the token's parts, the 32-character password and the URL secret are all longer).
fn assert_no_secret(text: &str) {
    assert!(!text.contains("Bearer "), "a bearer token printed: {text}");
    assert!(!text.contains("eyJ"), "a JWT printed: {text}");
    assert!(!text.contains("\"password\""), "a password printed: {text}");
    let mut run = 0;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            run += 1;
            assert!(run < 24, "a secret-like string printed: {text}");
        } else {
            run = 0;
        }
    }
    for (i, _) in text.match_indices("/mcp/") {
        let after = &text[i + 5..];
        assert!(
            !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "a personal URL printed: {text}"
        );
    }
    assert!(text.contains("<redacted>"), "{text}");
}

#[test]
fn smoke_passes_against_the_local_server_and_prints_no_secret() {
    let server = Server::start(&[]);
    let (output, text) = smoke(&["--url", &server.base], None);
    assert_all_steps_ok(&output, &text, &[]);
}

#[test]
fn smoke_finds_the_server_in_the_stack_outputs() {
    // A prefixed deployment (HTTP_URI_PREFIX): the outputs give PublicUrl and McpUrl,
    // and the prefix is read from them.
    let server = Server::start(&[("HTTP_URI_PREFIX", "/v1")]);
    let bin = TempDir::new("smoke-aws");
    let calls = bin.0.join("calls");
    let aws = bin.0.join("aws");
    std::fs::write(
        &aws,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{calls}'\ncat <<'EOF'\n[{{\"OutputKey\":\"McpUrl\",\"OutputValue\":\"{base}/v1/mcp\"}},\
             {{\"OutputKey\":\"ApiUrl\",\"OutputValue\":\"{base}\"}},\
             {{\"OutputKey\":\"PublicUrl\",\"OutputValue\":\"{base}\"}}]\nEOF\n",
            calls = calls.display(),
            base = server.base,
        ),
    )
    .expect("a stand-in aws");
    make_executable(&aws);

    let (output, text) = smoke(&["mirobody-smoke-test"], Some(&bin.0));
    assert_all_steps_ok(&output, &text, &["stack outputs"]);
    assert!(
        text.contains(&format!("smoke test of {} (prefix /v1)", server.base)),
        "{text}"
    );
    let calls = std::fs::read_to_string(&calls).expect("aws was called");
    assert_eq!(calls.lines().count(), 1, "{calls}");
    assert!(
        calls.starts_with("cloudformation describe-stacks --stack-name mirobody-smoke-test "),
        "{calls}"
    );
}

#[test]
fn smoke_stops_when_the_stack_lookup_fails() {
    let bin = TempDir::new("smoke-aws-fails");
    let aws = bin.0.join("aws");
    std::fs::write(
        &aws,
        "#!/bin/sh\necho 'An error occurred (ValidationError): Stack with id nope does not exist' >&2\nexit 254\n",
    )
    .expect("a stand-in aws");
    make_executable(&aws);
    let (output, text) = smoke(&["nope"], Some(&bin.0));
    assert!(!output.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = step_lines(&stdout);
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with("stack outputs")
            && lines[0].contains("FAIL")
            && lines[0].contains("does not exist"),
        "{text}"
    );
}

#[test]
fn smoke_fails_fast_on_the_first_step_where_nothing_listens() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("an address").port()
    };
    let started = Instant::now();
    let (output, text) = smoke(&["--url", &format!("http://127.0.0.1:{port}")], None);
    let took = started.elapsed();
    assert!(!output.status.success(), "{text}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {text}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = step_lines(&stdout);
    assert_eq!(lines.len(), 1, "only the first step runs: {text}");
    assert!(
        lines[0].starts_with("1. protected resource") && lines[0].contains(" FAIL: no answer"),
        "{text}"
    );
    assert!(!stdout.contains("total:"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_step_after_sign_up_still_deletes_the_account() {
    // A `curl` on PATH that sends the data tool's call to a wrong personal URL (the real
    // curl otherwise): step 6 fails, and the clean-up deletes the throw-away account.
    let real = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| Path::new(dir).join("curl"))
        .find(|p| p.is_file())
        .expect("curl on PATH");
    let bin = TempDir::new("smoke-curl");
    let shim = bin.0.join("curl");
    std::fs::write(
        &shim,
        format!(
            "#!/usr/bin/env bash\nfor a in \"$@\"; do\n  if [ \"$a\" = 'mcp-method: tools/call' ]; then\n    \
             exec '{real}' \"${{@:1:$#-1}}\" \"${{!#}}x\"\n  fi\ndone\nexec '{real}' \"$@\"\n",
            real = real.display()
        ),
    )
    .expect("a curl shim");
    make_executable(&shim);

    let server = Server::start(&[]);
    let (output, text) = smoke(&["--url", &server.base], Some(&bin.0));
    assert!(!output.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = step_lines(&stdout);
    let failed = lines
        .iter()
        .find(|l| l.contains(" FAIL"))
        .unwrap_or_else(|| panic!("no FAIL line: {text}"));
    assert!(
        failed.starts_with("6. query through URL") && failed.contains(" 404 "),
        "{text}"
    );
    let last = lines.last().expect("lines");
    assert!(
        last.starts_with("cleanup: delete account")
            && last.contains(" 200 ")
            && last.ends_with(" OK"),
        "{text}"
    );
    assert!(!stdout.contains("total:"), "{text}");
    assert_no_secret(&text);

    // The account is gone: its e-mail signs up again.
    let email = stdout
        .split_whitespace()
        .find(|w| w.starts_with("smoke-") && w.contains("@example.com"))
        .map(|w| w.trim_end_matches(','))
        .unwrap_or_else(|| panic!("no e-mail in {text}"));
    let again = send(
        "POST",
        &server.url("/auth/signup"),
        &[("content-type".into(), "application/json".into())],
        Some(format!(
            r#"{{"email":"{email}","password":"another long password"}}"#
        )),
    )
    .await;
    assert_eq!(again.status, 201, "{}", again.body);
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}
