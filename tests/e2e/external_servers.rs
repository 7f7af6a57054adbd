//! A user's external MCP servers end to end (requirements D1-D9), over HTTP against the real
//! `mirobody-local` and real MCP servers on 127.0.0.1, reached through the development
//! setting `MIROBODY_REMOTE_DEV_LOOPBACK` (the strict guard is tested in
//! `shared/src/remote/guard.rs`):
//! - the Python SDK's server (`tests/clients/remote_server.py`, both eras, so our
//!   client takes the 2026-07-28 path), with bearer or header auth;
//! - `@modelcontextprotocol/server-everything` (TypeScript SDK 1.x: the 2025 handshake
//!   with session ids and SSE answers), forced onto loopback by `loopback.mjs`;
//! - a server that hangs, a dead port, a redirecting responder.
//!
//! Registration through both API forms, listing and calling the namespaced tools on our
//! `/mcp` (also with the Python SDK client), isolation of a failing server, and no
//! credential in any response or log line.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2e::{Reply, Server, TempDir, bearer, get, listed_tools, python, root, rpc, run_client, send};
use mirobody::store::{DynamoStore, DynamoTables};
use mirobody::testing::Moto;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const REMOTE_TOKEN: &str = "remote-bearer-4f9c2e7a";
const HEADER_VALUE: &str = "header-key-8d1b6c03";

/// Seconds our server gives a user's MCP server (`MIROBODY_REMOTE_TIMEOUT_SECS`).
const TIMEOUT_SECS: u64 = 4;

fn free_port() -> u16 {
    std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(port: u16, what: &str, child: &mut Child) {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(stderr) = child.stderr.as_mut() {
                let _ = stderr.read_to_string(&mut err);
            }
            panic!("{what} exited ({status}): {err}");
        }
        assert!(Instant::now() < deadline, "{what} did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A remote MCP server process, killed on drop.
struct Remote {
    child: Child,
    port: u16,
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Remote {
    /// `tests/clients/remote_server.py` with these options.
    fn python(args: &[&str]) -> Remote {
        let port = free_port();
        let mut child = Command::new(python())
            .arg(root().join("tests/clients/remote_server.py"))
            .arg(port.to_string())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the Python MCP server starts");
        wait_for(port, "remote_server.py", &mut child);
        Remote { child, port }
    }

    /// `server-everything streamableHttp` on 127.0.0.1.
    fn everything() -> Remote {
        let clients = root().join("tests/clients");
        let entry =
            clients.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        assert!(
            entry.exists(),
            "no server-everything: run scripts/install-test-deps"
        );
        let port = free_port();
        let mut child = Command::new("node")
            .arg("--import")
            .arg(clients.join("loopback.mjs"))
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .current_dir(&clients)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs server-everything");
        wait_for(port, "server-everything", &mut child);
        Remote { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// A loopback responder that answers every connection with a redirect to `target`.
async fn redirecting_to(target: &str) -> u16 {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buffer = [0u8; 4096];
            let _ = socket.read(&mut buffer).await;
            let _ = socket.write_all(answer.as_bytes()).await;
        }
    });
    port
}

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]
}

async fn api(server: &Server, method: &str, path: &str, token: &str, body: Option<Value>) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    send(
        method,
        &server.url(path),
        &headers,
        body.map(|b| b.to_string()),
    )
    .await
}

/// `POST /api/user/mcp-servers`: registers a server for the caller.
async fn register_server(server: &Server, token: &str, body: Value) -> Reply {
    api(server, "POST", "/api/user/mcp-servers", token, Some(body)).await
}

/// A modern MCP request to our `/mcp` with the caller's token.
async fn mcp(server: &Server, token: &str, method: &str, params: Value) -> Value {
    let reply = rpc(&server.url("/mcp"), Some(token), method, params).await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

/// A modern `tools/call` to our `/mcp`.
async fn call(server: &Server, token: &str, name: &str, arguments: Value) -> Value {
    mcp(
        server,
        token,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await
}

async fn patch(server: &Server, token: &str, path: &str, body: Value) -> Reply {
    api(server, "PATCH", path, token, Some(body)).await
}

async fn tool_names(server: &Server, token: &str) -> Vec<String> {
    listed_tools(&mcp(server, token, "tools/list", json!({})).await)
}

fn tool_names_of(view: &Value) -> Vec<&str> {
    view["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {view}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

fn assert_refused(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], code, "{}", reply.body);
}

/// `python_client.py` calling `tool` on `url`: its report.
fn python_client(url: &str, mode: &str, tool: &str, args: Value) -> Value {
    let script = root().join("tests/clients/python_client.py");
    let args = args.to_string();
    run_client(
        &python(),
        &[
            script.to_str().unwrap(),
            url,
            mode,
            "--tool",
            tool,
            "--args",
            &args,
        ],
    )
}

/// D1, D4-D6, D8 and D5's "never returned, never logged": a Python SDK server with a
/// bearer token, registered, then listed and called through our `/mcp` by the Python
/// SDK client. The whole session's log at `trace` never shows the credential.
#[tokio::test(flavor = "multi_thread")]
async fn a_registered_server_is_listed_and_called_through_our_mcp() {
    let remote = Remote::python(&["--token", REMOTE_TOKEN]);
    let logs = TempDir::new("external-logs");
    let log_path = logs.0.join("server.log");
    let mut settings = env();
    settings.push(("RUST_LOG", "trace"));
    let server = Server::start_logging(&settings, std::fs::File::create(&log_path).unwrap());
    let token = server.token("alice");

    let created = register_server(
        &server,
        &token,
        json!({
            "name": "shop",
            "url": remote.url(),
            "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
        }),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let view = created.json();
    assert_eq!(view["auth"], json!({"type": "BEARER"}));
    assert_eq!(view["server_name"], "shop-mcp");
    assert_eq!(view["allowed_tools"], Value::Null);
    let mut tools = tool_names_of(&view);
    tools.sort();
    assert_eq!(
        tools,
        ["always_fails", "create_ticket", "lookup_order", "stall"]
    );
    assert!(view["last_connected_at"].is_string(), "{view}");

    // Built-in tools first, then the namespaced ones; anonymous callers see none of them.
    let names = tool_names(&server, &token).await;
    for expected in [
        "mcp__shop__lookup_order",
        "mcp__shop__create_ticket",
        "mcp__shop__always_fails",
    ] {
        assert!(names.contains(&expected.to_string()), "{names:?}");
    }
    let anonymous = rpc(&server.url("/mcp"), None, "tools/list", json!({}))
        .await
        .json();
    assert!(!anonymous.to_string().contains("mcp__shop"), "{anonymous}");

    // The Python SDK client on the caller's personal URL, 2026-07-28 and auto mode.
    let personal = api(&server, "POST", "/personal/mcp", &token, Some(json!({}))).await;
    let url = personal.json()["data"]["url"].as_str().unwrap().to_string();
    let report = python_client(
        &url,
        "2026-07-28",
        "mcp__shop__lookup_order",
        json!({"order_number": "A1001"}),
    );
    assert_eq!(report["text"], "order A1001: shipped", "{report}");
    assert_eq!(report["is_error"], false);
    let failed = python_client(&url, "auto", "mcp__shop__always_fails", json!({}));
    assert_eq!(failed["is_error"], true, "{failed}");
    assert!(
        failed["text"].as_str().unwrap().contains("always_fails"),
        "{failed}"
    );

    // A tool of ours that is not the caller's is an unknown tool, not a forwarded call.
    let unknown = call(&server, &token, "mcp__shop__nope", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let bob = server.token("bob");
    let foreign = call(
        &server,
        &bob,
        "mcp__shop__lookup_order",
        json!({"order_number": "1"}),
    )
    .await;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");

    // Both API forms show the connection and never the credential.
    let listed = api(&server, "GET", "/api/user/mcp-servers", &token, None).await;
    let entry = &listed.json()["servers"][0];
    assert!(entry["last_connected_at"].is_string(), "{entry}");
    assert_eq!(entry["last_connect_error"], Value::Null);
    let table = api(&server, "GET", "/api/user/mcp", &token, None).await;
    assert_eq!(
        table.json()["data"]["shop"]["auth"],
        json!({"type": "BEARER"})
    );
    for reply in [&created, &listed, &table] {
        assert!(!reply.body.contains(REMOTE_TOKEN), "{}", reply.body);
    }
    drop(server);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("POST /api/user/mcp-servers"),
        "the log was captured"
    );
    assert!(
        !log.contains(REMOTE_TOKEN),
        "the remote credential reached the log"
    );
    assert!(!log.contains(&token), "the caller's JWT reached the log");
    assert!(
        !log.contains("order A1001"),
        "a tool result reached the log"
    );
}

/// D3, D4, D6: refusals answer 422 (or 409, 400) with their code and save nothing.
#[tokio::test(flavor = "multi_thread")]
async fn refused_registrations_say_why_and_save_nothing() {
    let remote = Remote::python(&["--header", &format!("X-Api-Key: {HEADER_VALUE}")]);
    let server = Server::start(&env());
    let token = server.token("carol");
    let register = |body: Value| register_server(&server, &token, body);
    let header = |value: &str| json!({"type": "HEADER", "name": "X-Api-Key", "value": value});

    let dead = format!("http://127.0.0.1:{}/mcp", free_port());
    let reply = register(json!({"name": "dead", "url": dead})).await;
    assert_refused(&reply, 422, "mcp_probe_failed");

    // Refused addresses that stay on this machine even if the guard were wrong (every
    // class and bypass, with an injected resolver, is in the guard's own corpus).
    for url in [
        format!("http://0.0.0.0:{}/mcp", remote.port),
        format!("http://[::]:{}/mcp", remote.port),
        format!("http://[fe80::1%25lo]:{}/mcp", remote.port),
        "ftp://127.0.0.1/mcp".to_string(),
        format!("http://user:pw@127.0.0.1:{}/mcp", remote.port),
        "not a url".to_string(),
    ] {
        let reply = register(json!({"name": "bad", "url": url})).await;
        assert_refused(&reply, 422, "invalid_mcp_server_url");
        assert!(!reply.body.contains("pw@"), "{}", reply.body);
    }

    let wrong =
        register(json!({"name": "keyed", "url": remote.url(), "auth": header("wrong-key")})).await;
    assert_refused(&wrong, 422, "mcp_probe_failed");
    assert!(
        wrong.body.contains("401"),
        "the message says why: {}",
        wrong.body
    );
    assert!(!wrong.body.contains("wrong-key"), "{}", wrong.body);

    let unknown = register(json!({
        "name": "keyed", "url": remote.url(), "auth": header(HEADER_VALUE),
        "allowed_tools": ["lookup_order", "refund_everything"],
    }))
    .await;
    assert_refused(&unknown, 422, "unknown_mcp_tool");
    assert!(
        unknown.body.contains("refund_everything"),
        "{}",
        unknown.body
    );

    let target = remote.url();
    let redirect = redirecting_to(&target).await;
    let reply =
        register(json!({"name": "moved", "url": format!("http://127.0.0.1:{redirect}/mcp")})).await;
    assert_refused(&reply, 422, "mcp_probe_failed");
    assert!(reply.body.contains("redirect refused"), "{}", reply.body);

    for body in [
        json!({"name": "bad name!", "url": remote.url()}),
        json!({"name": "keyed", "url": remote.url(), "auth": {"type": "BEARER"}}),
        json!({"name": "keyed", "url": remote.url(), "surprise": true}),
    ] {
        assert_refused(&register(body).await, 400, "invalid_request");
    }
    let anonymous = get(&server.url("/api/user/mcp-servers")).await;
    assert_eq!(anonymous.status, 401);

    let listed = api(&server, "GET", "/api/user/mcp-servers", &token, None).await;
    assert_eq!(listed.json()["servers"], json!([]), "nothing was saved");

    let created = register(json!({
        "name": "keyed", "url": remote.url(), "auth": header(HEADER_VALUE),
        "allowed_tools": ["lookup_order"],
    }))
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.json()["auth"],
        json!({"type": "HEADER", "name": "X-Api-Key"})
    );
    assert!(!created.body.contains(HEADER_VALUE));

    // Unique name (also by tool namespace) and url per account; another account may reuse both.
    let again = register(json!({"name": "keyed", "url": format!("{}/other", remote.url())})).await;
    assert_refused(&again, 409, "mcp_server_name_taken");
    let alias =
        register(json!({"name": "alias", "url": remote.url(), "auth": header(HEADER_VALUE)})).await;
    assert_refused(&alias, 409, "mcp_server_url_taken");
    let other = server.token("dave");
    let theirs = register_server(
        &server,
        &other,
        json!({"name": "keyed", "url": remote.url(), "auth": header(HEADER_VALUE)}),
    )
    .await;
    assert_eq!(theirs.status, 201, "{}", theirs.body);
}

/// D1 (the seed's table form) against a server of the 2025 handshake era.
#[tokio::test(flavor = "multi_thread")]
async fn the_seed_form_registers_a_legacy_server_whose_tools_are_forwarded() {
    let remote = Remote::everything();
    let server = Server::start(&env());
    let token = server.token("erin");

    let set = api(
        &server,
        "POST",
        "/api/user/mcp/set",
        &token,
        Some(json!({"name": "every-thing", "url": remote.url(), "enabled": true, "order": 1})),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let answer = set.json();
    assert_eq!(answer["success"], true);
    assert_eq!(answer["code"], 0);
    let entry = &answer["data"]["every-thing"];
    assert_eq!(entry["url"], remote.url());
    assert_eq!(entry["enabled"], true);
    assert_eq!(entry["order"], 1);
    assert_eq!(entry["auth"], json!({"type": "NONE"}));
    assert!(tool_names_of(entry).contains(&"echo"), "{entry}");

    // D8: hyphens become underscores.
    let names = tool_names(&server, &token).await;
    assert!(
        names.contains(&"mcp__every_thing__echo".to_string()),
        "{names:?}"
    );
    let called = call(
        &server,
        &token,
        "mcp__every_thing__echo",
        json!({"message": "hello over the handshake"}),
    )
    .await;
    let result = &called["result"];
    assert_ne!(result["isError"], true, "{called}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello over the handshake"),
        "{called}"
    );

    // Switched off: its tools go; the table still lists it. Deleted: the table is empty.
    let off = api(
        &server,
        "POST",
        "/api/user/mcp/set",
        &token,
        Some(json!({"every-thing": {"url": remote.url(), "enabled": false}})),
    )
    .await;
    assert_eq!(
        off.json()["data"]["every-thing"]["enabled"],
        false,
        "{}",
        off.body
    );
    assert!(
        !tool_names(&server, &token)
            .await
            .iter()
            .any(|n| n.starts_with("mcp__"))
    );
    let moved = api(
        &server,
        "POST",
        "/api/user/mcp/set",
        &token,
        Some(json!({"name": "every-thing", "url": "http://127.0.0.1:1/mcp"})),
    )
    .await;
    assert_eq!(moved.status, 422, "{}", moved.body);
    assert_eq!(moved.json()["error"], "immutable_field");
    assert_eq!(moved.json()["success"], false);
    let deleted = api(
        &server,
        "POST",
        "/api/user/mcp/delete",
        &token,
        Some(json!({"name": "every-thing"})),
    )
    .await;
    assert_eq!(deleted.json()["data"], json!({}), "{}", deleted.body);
    let table = api(&server, "POST", "/api/user/mcp", &token, None).await;
    assert_eq!(table.json()["data"], json!({}));
}

/// D8: a server that stops answering is left out, with a note and a recorded error,
/// within the budget; the other server's tools still list and work.
#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_server_is_left_out_and_the_others_still_answer() {
    let flags = TempDir::new("hang");
    let hang = flags.0.join("hang");
    let steady = Remote::python(&[]);
    let stalling = Remote::python(&["--hang-file", hang.to_str().unwrap()]);
    let server = Server::start(&env());
    let token = server.token("frank");
    for (name, remote) in [("steady", &steady), ("stalling", &stalling)] {
        let reply =
            register_server(&server, &token, json!({"name": name, "url": remote.url()})).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
    }
    std::fs::write(&hang, b"").unwrap();

    let started = Instant::now();
    let listed = mcp(&server, &token, "tools/list", json!({})).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(TIMEOUT_SECS + 3),
        "tools/list took {took:?}"
    );
    let names = listed_tools(&listed);
    assert!(
        names.contains(&"mcp__steady__lookup_order".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__stalling__")),
        "{names:?}"
    );
    let notes = &listed["result"]["_meta"]["io.mirobody/unavailableServers"];
    assert_eq!(notes[0]["server"], "stalling", "{listed}");
    assert!(
        notes[0]["error"].as_str().unwrap().contains("do not call"),
        "{notes}"
    );

    let called = call(
        &server,
        &token,
        "mcp__steady__lookup_order",
        json!({"order_number": "B7"}),
    )
    .await;
    assert_eq!(
        called["result"]["content"][0]["text"], "order B7: shipped",
        "{called}"
    );
    let stalled = call(
        &server,
        &token,
        "mcp__stalling__lookup_order",
        json!({"order_number": "B7"}),
    )
    .await;
    assert_eq!(stalled["result"]["isError"], true, "{stalled}");

    // A tool that never finishes: the call ends within the budget as a tool error.
    let started = Instant::now();
    let stuck = call(&server, &token, "mcp__steady__stall", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(TIMEOUT_SECS + 3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(stuck["result"]["isError"], true, "{stuck}");
    assert!(
        stuck.to_string().contains("did not answer in time"),
        "{stuck}"
    );

    let view = api(
        &server,
        "GET",
        "/api/user/mcp-servers/stalling",
        &token,
        None,
    )
    .await;
    let error = view.json()["last_connect_error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        error.contains("no answer") || error.contains("timed out"),
        "{}",
        view.body
    );
    // The call that got no answer in time is on the record (a hung
    // server and a tool that runs too long look the same), until the next exchange.
    let path = "/api/user/mcp-servers/steady";
    let late = api(&server, "GET", path, &token, None).await;
    let error = late.json()["last_connect_error"].clone();
    assert!(
        error.as_str().unwrap_or_default().contains("no answer"),
        "{}",
        late.body
    );
    let called = call(
        &server,
        &token,
        "mcp__steady__lookup_order",
        json!({"order_number": "B8"}),
    )
    .await;
    assert_eq!(called["result"]["content"][0]["text"], "order B8: shipped");
    let fine = api(&server, "GET", path, &token, None).await;
    assert_eq!(
        fine.json()["last_connect_error"],
        Value::Null,
        "{}",
        fine.body
    );
}

/// D7: allowed tools, updates (url immutable; renames are in `registry_rename.rs`), re-probe
/// and delete.
#[tokio::test(flavor = "multi_thread")]
async fn allowed_tools_updates_reprobe_and_delete() {
    let remote = Remote::python(&["--token", REMOTE_TOKEN]);
    let server = Server::start(&env());
    let token = server.token("grace");
    let created = register_server(
        &server,
        &token,
        json!({
            "name": "shop", "url": remote.url(),
            "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
            "allowed_tools": ["lookup_order"],
        }),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let external = |names: Vec<String>| -> Vec<String> {
        names
            .into_iter()
            .filter(|n| n.starts_with("mcp__"))
            .collect()
    };
    assert_eq!(
        external(tool_names(&server, &token).await),
        ["mcp__shop__lookup_order"]
    );
    let hidden = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        json!({"title": "x"}),
    )
    .await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");

    let path = "/api/user/mcp-servers/shop";
    let all = patch(&server, &token, path, json!({"allowed_tools": null})).await;
    assert_eq!(all.status, 200, "{}", all.body);
    let mut names = external(tool_names(&server, &token).await);
    names.sort();
    assert_eq!(
        names,
        [
            "mcp__shop__always_fails",
            "mcp__shop__create_ticket",
            "mcp__shop__lookup_order",
            "mcp__shop__stall"
        ]
    );

    let moved = patch(
        &server,
        &token,
        path,
        json!({"url": "http://127.0.0.1:1/mcp"}),
    )
    .await;
    assert_refused(&moved, 422, "immutable_field");
    let bad_auth = patch(
        &server,
        &token,
        path,
        json!({"auth": {"type": "BEARER", "token": "not-the-token"}}),
    )
    .await;
    assert_refused(&bad_auth, 422, "mcp_probe_failed");
    let unknown = patch(&server, &token, path, json!({"allowed_tools": ["nope"]})).await;
    assert_refused(&unknown, 422, "unknown_mcp_tool");

    // The refused updates changed nothing: the stored credential still works.
    let reprobed = api(&server, "POST", &format!("{path}/probe"), &token, None).await;
    assert_eq!(reprobed.status, 200, "{}", reprobed.body);
    assert_eq!(reprobed.json()["allowed_tools"], Value::Null);
    let called = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        json!({"title": "printer"}),
    )
    .await;
    assert_eq!(
        called["result"]["content"][0]["text"], "ticket opened: printer",
        "{called}"
    );

    let deleted = api(&server, "DELETE", path, &token, None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert!(external(tool_names(&server, &token).await).is_empty());
    assert_refused(
        &api(&server, "GET", path, &token, None).await,
        404,
        "not_found",
    );
    assert_refused(
        &api(&server, "DELETE", path, &token, None).await,
        404,
        "not_found",
    );
}

/// D3 under the production policy (no development setting): plain http, loopback by
/// literal or by name, and every other internal class are refused before any
/// connection. Only loopback targets here, so a wrong answer could not leave the machine.
#[tokio::test]
async fn the_strict_policy_refuses_internal_and_plain_http_servers() {
    let process = e2e::in_process(&[]);
    let jwts =
        mirobody::identity::Jwts::for_origin(&[1; 32], &process.app.config().public_origin());
    // Signature checks use the real time (the app's fake clock is ahead of it).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = jwts.mint("henry", 3600, now);
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    for url in [
        format!("https://127.0.0.1:{port}/mcp"),
        format!("https://localhost:{port}/mcp"),
        format!("https://[::1]:{port}/mcp"),
        format!("https://[::ffff:127.0.0.1]:{port}/mcp"),
        format!("https://0x7f.1:{port}/mcp"),
        format!("http://127.0.0.1:{port}/mcp"),
    ] {
        let mut headers = bearer(&token);
        headers.push(("content-type".into(), "application/json".into()));
        let reply = process
            .send(
                "POST",
                "/api/user/mcp-servers",
                &headers,
                json!({"name": "local", "url": url}).to_string(),
            )
            .await;
        let body = reply.json();
        assert_eq!(reply.status, 422, "{url}: {body}");
        assert_eq!(
            body["error"]["code"], "invalid_mcp_server_url",
            "{url}: {body}"
        );
    }
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "nothing connected to the loopback listener"
    );
}

/// When the caller's server list cannot be read, `/mcp` still answers: the built-in
/// tools with a note, and a forwarded call is a tool error, not a failed request.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_server_list_degrades_to_a_note() {
    // Every read of the server list fails (the data table is missing).
    let moto = Moto::start();
    let store = without_data_table(&moto, "servers").await;
    let mut settings: Vec<(&str, &str)> = env();
    settings.extend(store.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let server = Server::start(&settings);
    let token = server.token("ivy");
    let listed = mcp(&server, &token, "tools/list", json!({})).await;
    let names = listed["result"]["tools"].to_string();
    assert!(names.contains("query_health_indicators"), "{listed}");
    let notes = &listed["result"]["_meta"]["io.mirobody/unavailableServers"];
    assert_eq!(notes[0]["server"], "*", "{listed}");
    let called = call(&server, &token, "mcp__shop__lookup_order", json!({})).await;
    assert_eq!(called["result"]["isError"], true, "{called}");
}

/// One user's servers cannot blow up a `tools/list` answer. Seven
/// servers each listing 300 tools with 5 kB descriptions (10.5 MB of listings before)
/// come back within about 1 MiB: descriptions cut to 500 characters (what the registry
/// shows), each server's tools bounded to 256, servers past the total left out, and
/// every cut said in `_meta`.
#[tokio::test(flavor = "multi_thread")]
async fn huge_external_listings_are_bounded_with_notes() {
    let remotes: Vec<Remote> = (0..7).map(|_| Remote::python(&["--bulk", "300"])).collect();
    let server = Server::start(&env());
    let token = server.token("grace");
    for (i, remote) in remotes.iter().enumerate() {
        let reply = register_server(
            &server,
            &token,
            json!({"name": format!("bulk{i}"), "url": remote.url(), "order": i}),
        )
        .await;
        assert_eq!(reply.status, 201, "{}", reply.body);
    }
    let reply = rpc(&server.url("/mcp"), Some(&token), "tools/list", json!({})).await;
    assert_eq!(reply.status, 200);
    println!(
        "tools/list with seven bulk servers: {} bytes",
        reply.body.len()
    );
    assert!(reply.body.len() < 1_300_000, "{} bytes", reply.body.len());
    let listed = reply.json();
    let names = listed_tools(&listed);
    assert!(
        names.iter().any(|n| n.starts_with("mcp__bulk0__")),
        "{names:?}"
    );
    let descriptions_cut = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| {
            t["description"]
                .as_str()
                .is_none_or(|d| d.chars().count() <= 501)
        });
    assert!(descriptions_cut);
    let notes = listed["result"]["_meta"]["io.mirobody/unavailableServers"].to_string();
    assert!(notes.contains("partly listed"), "{notes}");
    assert!(
        notes.contains("left out") && notes.contains("bulk6"),
        "{notes}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__bulk6__")),
        "{notes}"
    );
}

/// DynamoDB on moto with the keys table only: every data-table read (presence, readings,
/// servers) fails, while a bearer token's revocation check (the keys table) answers. A
/// store that is wholly unreachable refuses bearer tokens instead (503: a token is never
/// admitted unchecked; `security_revoke::an_unreachable_store_admits_no_token_unchecked`).
async fn without_data_table(moto: &Moto, label: &str) -> Vec<(String, String)> {
    let config = crate::runtime_api::sdk_config(moto).await;
    let tables = DynamoTables {
        keys: format!("{label}-keys"),
        data: format!("{label}-data"),
    };
    DynamoStore::create_tables(&aws_sdk_dynamodb::Client::new(&config), &tables)
        .await
        .expect("tables created in moto");
    vec![
        ("MIROBODY_STORE".into(), "dynamodb".into()),
        ("MIROBODY_KEYS_TABLE".into(), tables.keys),
        ("MIROBODY_DATA_TABLE".into(), format!("{label}-missing")),
        ("AWS_ENDPOINT_URL_DYNAMODB".into(), moto.endpoint.clone()),
    ]
}
