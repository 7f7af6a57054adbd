//! The stdio bridge: Claude Desktop and Cursor reach the server
//! through `mcp-remote` from npm, as README's "Point a client at it" tells them to. Each
//! test runs `mcp-remote` (pinned in `tests/clients/package.json`) as a stdio child
//! process against `mirobody-local`, once with the plain URL and the token in
//! `--header Authorization:Bearer …`, once with the personal URL and nothing else, and
//! speaks MCP JSON-RPC over its stdin and stdout as a desktop host does: `initialize`,
//! `notifications/initialized`, `tools/list`, then `tools/call` of a data tool whose
//! answer is the user's uploaded readings.
//!
//! Nothing may sign in interactively or leave loopback: `mcp-remote` runs with an empty
//! `HOME` (its `~/.mcp-auth` cache), a `PATH` holding only `node`, and `BROWSER` set to a
//! stub that records any attempt. `mcp-remote` 0.15.1 always reads the OAuth metadata
//! documents at start-up (two GETs on the same loopback origin); the tests assert it
//! never goes further (no registration, no authorization request, no browser, no token
//! cached).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use e2e::{Server, TempDir, assert_hba1c_answer, bearer_json, person_with_hba1c, root};
use serde_json::{Value, json};

/// How long one answer may take through the bridge (its start-up included).
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// The `mcp-remote` entry point that `npx mcp-remote` runs.
fn mcp_remote() -> PathBuf {
    let path = root().join("tests/clients/node_modules/mcp-remote/dist/proxy.js");
    assert!(
        path.exists(),
        "mcp-remote is not installed: run scripts/install-test-deps (scripts/test does)"
    );
    path
}

/// `node` as this test's `PATH` finds it.
fn node() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("node"))
        .find(|path| path.is_file())
        .expect("node on PATH (scripts/install-test-deps needs it too)")
}

/// One `mcp-remote` process and the lines it writes to stdout.
struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: PathBuf,
    home: TempDir,
}

impl Bridge {
    fn start(url: &str, options: &[&str]) -> Bridge {
        Bridge::start_with(url, options, None)
    }

    /// As [`Bridge::start`], and when `person` is given (an email and a password), the
    /// browser the bridge opens is headless Chromium signing that person in
    /// (`tests/clients/sign_in_browser.mjs`); without one it is a stub that records the
    /// attempt and fails.
    fn start_with(url: &str, options: &[&str], person: Option<(&str, &str)>) -> Bridge {
        let home = TempDir::new("mcp-remote");
        let bin = home.0.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(node(), bin.join("node")).unwrap();
        let browser = home.0.join("browser");
        let opened = home.0.join("browser-opened");
        let then = match person {
            None => "exit 1".to_string(),
            Some(_) => format!(
                "exec '{}' '{}' \"$1\"",
                node().display(),
                root().join("tests/clients/sign_in_browser.mjs").display()
            ),
        };
        std::fs::write(
            &browser,
            format!("#!/bin/sh\necho \"$@\" >> '{}'\n{then}\n", opened.display()),
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&browser).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&browser, permissions).unwrap();
        let stderr = home.0.join("stderr.log");
        let mut command = Command::new(node());
        command
            .arg(mcp_remote())
            .arg(url)
            .args(options)
            .env_clear()
            .env("HOME", &home.0)
            .env("BROWSER", &browser);
        match person {
            // Only `node`: no opener can be found but the stub.
            None => command.env("PATH", &bin),
            // The system's opener (`xdg-open`, which runs `BROWSER`) and its shell tools.
            Some((email, password)) => command
                .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
                .env("SIGN_IN_EMAIL", email)
                .env("SIGN_IN_PASSWORD", password)
                .env("SIGN_IN_LOG", home.0.join("sign-in.log")),
        };
        let mut child = command
            .current_dir(&home.0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("node runs mcp-remote");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Bridge {
            child,
            stdin,
            lines,
            stderr,
            home,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Writes one JSON-RPC message as a line on the bridge's stdin.
    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("mcp-remote reads its stdin");
        stdin.flush().unwrap();
    }

    /// The response to request `id` (other lines, such as notifications, are skipped).
    fn answer(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let Ok(message) = serde_json::from_str::<Value>(&line) else {
                        panic!("mcp-remote wrote a non-JSON line: {line}");
                    };
                    if message["id"] == json!(id) {
                        return message;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no answer to {id} within {ANSWER_WITHIN:?}:\n{}",
                        self.stderr()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("mcp-remote closed its stdout:\n{}", self.stderr())
                }
            }
        }
    }

    /// Closes stdin (how a host ends the session) and waits for the process to exit.
    /// Ends the bridge (its stdin closed, as a host quitting), keeping its home, where
    /// the browser's record and any cached credentials are, for the caller to read.
    fn close(mut self) -> TempDir {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(&mut self.home, TempDir(PathBuf::new()))
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A user with readings uploaded, signed up through the API: their session token.
async fn user_with_readings(server: &Server) -> String {
    person_with_hba1c(&server.base, "bridge@example.com", "correct horse battery").await
}

/// What a desktop host does through the bridge; asserts every answer a user would see.
fn converse(bridge: &mut Bridge) {
    bridge.send(
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "claude-ai", "version": "0.1.0" }
        }}),
    );
    let initialized = bridge.answer(1);
    let result = &initialized["result"];
    assert_eq!(
        result["protocolVersion"], "2025-06-18",
        "the host's version is echoed: {initialized}"
    );
    assert_eq!(result["serverInfo"]["name"], "mirobody", "{initialized}");
    assert!(result["capabilities"]["tools"].is_object(), "{initialized}");
    bridge.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));

    bridge.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {} }));
    let listed = bridge.answer(2);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {listed}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"query_health_indicators"), "{names:?}");
    // Listed for an anonymous caller, gated away for this user (readings, no genotypes):
    // the bridge carried the user's credential.
    assert!(
        !names.contains(&"get_genetic_data"),
        "the tools of the signed-in user: {names:?}"
    );

    bridge.send(
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "query_health_indicators",
            "arguments": { "keywords": ["HbA1c"] }
        }}),
    );
    let called = bridge.answer(3);
    let result = &called["result"];
    assert_hba1c_answer(result, "mcp-remote");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Hemoglobin A1c"),
        "the model reads the rows too: {called}"
    );
}

/// The routes the server answered, from its log (`route="GET /mcp"`).
fn routes(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let plain: String = strip_ansi(&text);
    plain
        .match_indices("route=\"")
        .filter_map(|(at, prefix)| {
            let rest = &plain[at + prefix.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .collect()
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Nothing beyond reading the metadata documents: no registration, no authorization
/// request, no browser, no token in mcp-remote's cache.
fn assert_no_interactive_sign_in(log: &Path, home: &Path) {
    let routes = routes(log);
    assert!(
        routes
            .iter()
            .any(|r| r == "POST /mcp" || r == "POST /mcp/{secret}"),
        "the log names the routes: {routes:?}"
    );
    let oauth: Vec<&String> = routes
        .iter()
        .filter(|r| !r.starts_with("GET /.well-known/"))
        .filter(|r| r.contains("/oauth") || r.contains("mcplogin"))
        .collect();
    assert!(oauth.is_empty(), "mcp-remote started signing in: {oauth:?}");
    assert!(
        !home.join("browser-opened").exists(),
        "mcp-remote tried to open a browser"
    );
    let cached: Vec<String> = walk(&home.join(".mcp-auth"))
        .into_iter()
        .filter(|name| name.contains("tokens") || name.contains("client_info"))
        .collect();
    assert!(cached.is_empty(), "credentials cached: {cached:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path.file_name().unwrap().to_string_lossy().into_owned()]
            }
        })
        .collect()
}

fn logged_server() -> (Server, TempDir, PathBuf) {
    let logs = TempDir::new("bridge-log");
    let log = logs.0.join("server.log");
    let server = Server::start_logging(
        &[("RUST_LOG", "info")],
        std::fs::File::create(&log).unwrap(),
    );
    (server, logs, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_remote_with_a_bearer_header_on_the_plain_url_lists_and_calls() {
    let (server, _logs, log) = logged_server();
    let token = user_with_readings(&server).await;
    let started = Instant::now();
    let mut bridge = Bridge::start(
        &server.url("/mcp"),
        &["--header", &format!("Authorization:Bearer {token}")],
    );
    converse(&mut bridge);
    let home = bridge.close();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_no_interactive_sign_in(&log, &home.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_remote_on_the_personal_url_lists_and_calls() {
    let (server, _logs, log) = logged_server();
    let token = user_with_readings(&server).await;
    let personal = bearer_json(&server, "POST", "/personal/mcp", &token, Some(json!({}))).await;
    assert_eq!(personal.status, 200, "{}", personal.body);
    let url = personal.json()["data"]["url"].as_str().unwrap().to_string();
    // The URL names the public origin, which is this server's listening address.
    let path = &url[url.find("/mcp/").expect("a personal URL has /mcp/<secret>")..];
    let started = Instant::now();
    let mut bridge = Bridge::start(&server.url(path), &[]);
    converse(&mut bridge);
    let home = bridge.close();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_no_interactive_sign_in(&log, &home.0);
}

/// The seed's desktop walk-through with the plain URL and nothing else, on a server that
/// asks for sign-in up front (`MIROBODY_REQUIRE_AUTH=true`, the stack's `RequireAuth`):
/// `mcp-remote` gets the 401, discovers the authorization server, registers itself,
/// opens the browser (headless Chromium, where the person signs in and clicks Allow),
/// takes the code at its loopback callback, and then lists and calls tools as that
/// person: the data answer is theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_remote_on_the_plain_url_signs_in_in_the_browser() {
    let logs = TempDir::new("bridge-log");
    let log = logs.0.join("server.log");
    let server = Server::start_logging(
        &[("RUST_LOG", "info"), ("MIROBODY_REQUIRE_AUTH", "true")],
        std::fs::File::create(&log).unwrap(),
    );
    user_with_readings(&server).await;
    let callback_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
        .to_string();
    let mut bridge = Bridge::start_with(
        &server.url("/mcp"),
        &[&callback_port],
        Some(("bridge@example.com", "correct horse battery")),
    );
    converse(&mut bridge);
    let home = bridge.close();
    let signed_in = std::fs::read_to_string(home.0.join("sign-in.log")).unwrap_or_default();
    assert!(
        signed_in.contains("\"opened\":\"/oauth/authorize\"") && !signed_in.contains("error"),
        "the browser signed the person in: {signed_in}"
    );
    let routes = routes(&log);
    for step in [
        "POST /oauth/register",
        "GET /oauth/authorize",
        "POST /oauth/authorize",
        "POST /oauth/token",
    ] {
        assert!(routes.iter().any(|r| r == step), "{step}: {routes:?}");
    }
}
