//! The user's MCP gateway tells the truth and stays fresh, over
//! HTTP against the real `mirobody-local`, with MCP servers on loopback
//! (`MIROBODY_REMOTE_DEV_LOOPBACK`):
//! - a small MCP server stub here that speaks either era (2026-07-28 `server/discover`,
//!   or only the 2025 `initialize` handshake) and can be switched to answer 401, answer
//!   garbage, drop every connection, or hang; its tool set can grow;
//! - the Python SDK's server (`tests/clients/remote_server.py`), killed while listed.
//!
//! Item 2: after a forwarded call to a failing server `last_connect_error` says why in
//! words and `last_connected_at` stays at the last real exchange; the next success clears
//! the error. Item 3: a call to an unavailable server's tool is a tool error telling the
//! model to stop calling it; the next `tools/list` leaves the server out at once, with a
//! `ttlMs` no longer than what is left of the failure; a tool a server adds is listed
//! once the listing's `ttlMs` has passed.

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2e::remote_server::RemoteServer;
use e2e::{Reply, Server, bearer, listed_tools, rpc, send};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `MIROBODY_REMOTE_TIMEOUT_SECS`: how long our server waits for a user's MCP server.
const TIMEOUT_SECS: u64 = 2;
/// `MIROBODY_SNAPSHOT_TTL_SECS`: how long a tool list is reused (a failure as long).
const SNAPSHOT_SECS: u64 = 3;

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "2"),
        ("MIROBODY_SNAPSHOT_TTL_SECS", "3"),
    ]
}

/// Which protocol generation the stub speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    /// 2026-07-28: `server/discover`, no handshake.
    Modern,
    /// 2025-11-25 only: `initialize` first; `server/discover` is an unknown method.
    Legacy,
}

/// How the stub misbehaves, if it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// `401 Unauthorized` to every request (a revoked key).
    Unauthorized,
    /// `200` with an HTML page (a proxy's error page).
    Garbage,
    /// Every connection closed without an answer (the process behind it is gone).
    Dead,
    /// Every request read and never answered.
    Hang,
}

struct State {
    era: Era,
    fault: Option<Fault>,
    /// Whether the stub also lists (and runs) a second tool, `added`.
    added: bool,
    /// The `ttlMs` its tool list carries, if any.
    ttl_ms: Option<u64>,
    /// How many `tools/list` requests it answered.
    listings: usize,
}

/// An MCP server on a loopback port whose behaviour the test switches.
struct Stub {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Stub {
    async fn start(era: Era) -> Stub {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            era,
            fault: None,
            added: false,
            ttl_ms: None,
            listings: 0,
        }));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(answer(socket, shared.clone()));
            }
        });
        Stub { port, state }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn fail(&self, fault: Option<Fault>) {
        self.state.lock().unwrap().fault = fault;
    }

    fn add_tool(&self) {
        self.state.lock().unwrap().added = true;
    }

    fn say_ttl(&self, ttl_ms: u64) {
        self.state.lock().unwrap().ttl_ms = Some(ttl_ms);
    }

    fn listings(&self) -> usize {
        self.state.lock().unwrap().listings
    }
}

/// Reads one HTTP/1.1 request (headers, then `Content-Length` bytes of body).
async fn read_request(socket: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0);
            let body_start = end + 4;
            while buffer.len() < body_start + length {
                let read = socket.read(&mut chunk).await.ok()?;
                if read == 0 {
                    return None;
                }
                buffer.extend_from_slice(&chunk[..read]);
            }
            return Some(buffer[body_start..body_start + length].to_vec());
        }
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

async fn answer(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let fault = state.lock().unwrap().fault;
    if fault == Some(Fault::Dead) {
        return;
    }
    let Some(body) = read_request(&mut socket).await else {
        return;
    };
    let (status, content_type, text) = match fault {
        Some(Fault::Dead) => return,
        Some(Fault::Hang) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return;
        }
        Some(Fault::Unauthorized) => ("401 Unauthorized", "text/plain", "unauthorized".to_string()),
        Some(Fault::Garbage) => (
            "200 OK",
            "text/html",
            "<html><body>502 Bad Gateway</body></html>".to_string(),
        ),
        None => {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            match mcp_answer(&request, &mut state.lock().unwrap()) {
                Some(message) => ("200 OK", "application/json", message.to_string()),
                None => ("202 Accepted", "application/json", String::new()),
            }
        }
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}

/// The stub's JSON-RPC answer to `request`; `None` for a notification.
fn mcp_answer(request: &Value, state: &mut State) -> Option<Value> {
    if request["method"] == "tools/list" {
        state.listings += 1;
    }
    let id = request.get("id")?.clone();
    let method = request["method"].as_str().unwrap_or_default();
    let tool = |name: &str| {
        json!({"name": name, "description": format!("the {name} tool"),
               "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}})
    };
    let result = match (state.era, method) {
        (Era::Modern, "server/discover") => json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stub-modern", "version": "1"},
        }),
        (Era::Legacy, "initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stub-legacy", "version": "1"},
        }),
        (_, "tools/list") => {
            let mut tools = vec![tool("echo")];
            if state.added {
                tools.push(tool("added"));
            }
            match state.ttl_ms {
                Some(ttl) => json!({ "tools": tools, "ttlMs": ttl }),
                None => json!({ "tools": tools }),
            }
        }
        (_, "tools/call") => {
            let text = request["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or_default();
            json!({"content": [{"type": "text", "text": format!("echo: {text}")}]})
        }
        _ => {
            return Some(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}}));
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
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

async fn register(server: &Server, token: &str, name: &str, url: &str) {
    let reply = api(
        server,
        "POST",
        "/api/user/mcp-servers",
        token,
        Some(json!({"name": name, "url": url})),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

/// A modern MCP request to our `/mcp`: its JSON-RPC answer.
async fn mcp(server: &Server, token: &str, method: &str, params: Value) -> Value {
    let reply = rpc(&server.url("/mcp"), Some(token), method, params).await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

async fn call(server: &Server, token: &str, name: &str, text: &str) -> Value {
    let params = json!({"name": name, "arguments": {"text": text}});
    mcp(server, token, "tools/call", params).await
}

/// `(last_connected_at, last_connect_error)` as the REST form shows them.
async fn status(server: &Server, token: &str, name: &str) -> (Value, Value) {
    let path = format!("/api/user/mcp-servers/{name}");
    let view = api(server, "GET", &path, token, None).await;
    assert_eq!(view.status, 200, "{}", view.body);
    let view = view.json();
    (
        view["last_connected_at"].clone(),
        view["last_connect_error"].clone(),
    )
}

/// The text of a tool result that must be an error.
fn error_text(answer: &Value) -> String {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {answer}"))
        .to_string()
}

fn ttl_ms(listed: &Value) -> u64 {
    listed["result"]["ttlMs"]
        .as_u64()
        .unwrap_or_else(|| panic!("no ttlMs: {listed}"))
}

/// The server's tools as listed on our `/mcp` now.
fn external(listed: &Value, server: &str) -> Vec<String> {
    let prefix = format!("mcp__{server}__");
    listed_tools(listed)
        .into_iter()
        .filter(|name| name.starts_with(&prefix))
        .collect()
}

/// Item 2 for one era: a working server, then each fault in turn. Each failed call is
/// recorded in words without moving `last_connected_at`; the next real exchange (the
/// listing once the failure has expired) clears the error.
async fn status_fields_tell_the_truth(era: Era) {
    let stub = Stub::start(era).await;
    let server = Server::start(&env());
    let token = server.token("status");
    register(&server, &token, "stub", &stub.url()).await;
    let worked = call(&server, &token, "mcp__stub__echo", "one").await;
    assert_eq!(
        worked["result"]["content"][0]["text"], "echo: one",
        "{worked}"
    );
    let (mut connected, error) = status(&server, &token, "stub").await;
    assert!(connected.is_string(), "{connected}");
    assert_eq!(error, Value::Null);

    let faults = [
        (Fault::Unauthorized, &["401", "authorization refused"][..]),
        (Fault::Garbage, &["neither JSON nor an event stream"][..]),
        (Fault::Dead, &["connect", "clos", "send"][..]),
        (Fault::Hang, &["no answer within"][..]),
    ];
    for (fault, words) in faults {
        // A second passes, so a failure that moved `last_connected_at` would show; the
        // tool list (valid for 3 s) is still cached: the call itself meets the fault.
        let listed = mcp(&server, &token, "tools/list", json!({})).await;
        assert_eq!(external(&listed, "stub"), ["mcp__stub__echo"], "{listed}");
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        stub.fail(Some(fault));
        let started = Instant::now();
        let failed = call(&server, &token, "mcp__stub__echo", "two").await;
        assert!(
            started.elapsed() < Duration::from_secs(TIMEOUT_SECS + 2),
            "{era:?} {fault:?}: {:?}",
            started.elapsed()
        );
        let text = error_text(&failed);
        assert!(!text.contains("echo: two"), "{text}");
        let (at, error) = status(&server, &token, "stub").await;
        assert_eq!(
            at, connected,
            "{era:?} {fault:?}: the failure moved last_connected_at"
        );
        let error = error
            .as_str()
            .unwrap_or_else(|| panic!("{era:?} {fault:?}: no last_connect_error"));
        assert!(
            words.iter().any(|word| error.contains(word)),
            "{era:?} {fault:?}: {error:?} says none of {words:?}"
        );
        assert!(!error.contains(&stub.port.to_string()), "{error}");

        // Recovered: once the failure has expired, the next real exchange clears it.
        stub.fail(None);
        tokio::time::sleep(Duration::from_secs(SNAPSHOT_SECS)).await;
        let again = call(&server, &token, "mcp__stub__echo", "three").await;
        assert_eq!(
            again["result"]["content"][0]["text"], "echo: three",
            "{era:?} {fault:?}: {again}"
        );
        let (at, error) = status(&server, &token, "stub").await;
        assert_eq!(error, Value::Null, "{era:?} {fault:?}: the error stayed");
        assert!(
            at.as_str() > connected.as_str(),
            "{era:?} {fault:?}: {at} is not after {connected}"
        );
        connected = at;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn status_fields_tell_the_truth_on_a_2026_server() {
    status_fields_tell_the_truth(Era::Modern).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn status_fields_tell_the_truth_on_a_2025_server() {
    status_fields_tell_the_truth(Era::Legacy).await;
}

/// Item 3: the Python SDK's server, listed, then killed. The next call is a tool error
/// the model acts on; the next `tools/list`, at once, leaves the server out with a note
/// and a `ttlMs` no longer than the failure's; a fresh listing says how long it holds.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_dies_is_unlisted_at_once_and_the_model_is_told() {
    let remote = RemoteServer::start(&[]);
    // The default reuse rule (what the server said, 2 s to 10 s): nothing here waits for it.
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "2"),
    ]);
    let token = server.token("dies");
    let before = mcp(&server, &token, "tools/list", json!({})).await;
    assert_eq!(
        ttl_ms(&before),
        300_000,
        "no external server: the usual ttl"
    );
    register(&server, &token, "shop", &remote.url()).await;
    let listed = mcp(&server, &token, "tools/list", json!({})).await;
    assert!(
        external(&listed, "shop").contains(&"mcp__shop__lookup_order".to_string()),
        "{listed}"
    );
    let ttl = ttl_ms(&listed);
    assert!(ttl <= 10_000 && ttl > 1_000, "{ttl}");

    drop(remote);
    let called = mcp(
        &server,
        &token,
        "tools/call",
        json!({"name": "mcp__shop__lookup_order", "arguments": {"order_number": "A1"}}),
    )
    .await;
    let text = error_text(&called);
    // What failed, since when, when it is tried again; never "in this conversation",
    // since a later listing brings the server back once it answers.
    for words in [
        "\"shop\" is unavailable (",
        " since 20",
        "It is tried again by the first request after 20",
        "until it is listed again, do not call its tools",
        "MCP server settings",
    ] {
        assert!(text.contains(words), "{text:?} lacks {words:?}");
    }
    assert!(!text.contains("conversation"), "{text}");

    let after = mcp(&server, &token, "tools/list", json!({})).await;
    assert!(external(&after, "shop").is_empty(), "{after}");
    let notes = &after["result"]["_meta"]["io.mirobody/unavailableServers"];
    assert_eq!(notes[0]["server"], "shop", "{after}");
    let note = notes[0]["error"].as_str().unwrap();
    for words in [
        "left out since 20",
        "tried again by the first request after 20",
        "do not call",
    ] {
        assert!(note.contains(words), "{note:?} lacks {words:?}");
    }
    assert!(ttl_ms(&after) <= 10_000, "{after}");
    let (at, error) = status(&server, &token, "shop").await;
    assert!(at.is_string(), "{at}");
    assert!(error.is_string(), "{error}");

    // Another call does not reach the dead server again and says the same.
    let again = call(&server, &token, "mcp__shop__create_ticket", "x").await;
    assert!(
        error_text(&again).contains("\"shop\" is unavailable ("),
        "{again}"
    );
    // A name that never existed is still an unknown tool.
    let unknown = call(&server, &token, "mcp__nowhere__tool", "x").await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// Item 3: a tool a server adds is listed once the listing's `ttlMs` has passed; a
/// switched-off server's tool answers a tool error saying so, while a name it never
/// listed stays unknown.
#[tokio::test(flavor = "multi_thread")]
async fn new_tools_appear_when_the_listing_expires_and_switched_off_servers_say_so() {
    let stub = Stub::start(Era::Modern).await;
    let server = Server::start(&env());
    let token = server.token("fresh");
    register(&server, &token, "grows", &stub.url()).await;
    let listed = mcp(&server, &token, "tools/list", json!({})).await;
    assert_eq!(external(&listed, "grows"), ["mcp__grows__echo"]);
    let ttl = ttl_ms(&listed);
    assert!(ttl <= SNAPSHOT_SECS * 1000 && ttl > 0, "{ttl}");

    stub.add_tool();
    tokio::time::sleep(Duration::from_millis(ttl + 100)).await;
    let listed = mcp(&server, &token, "tools/list", json!({})).await;
    assert_eq!(
        external(&listed, "grows"),
        ["mcp__grows__echo", "mcp__grows__added"],
        "{listed}"
    );
    let added = call(&server, &token, "mcp__grows__added", "new").await;
    assert_eq!(
        added["result"]["content"][0]["text"], "echo: new",
        "{added}"
    );

    let off = api(
        &server,
        "PATCH",
        "/api/user/mcp-servers/grows",
        &token,
        Some(json!({"enabled": false})),
    )
    .await;
    assert_eq!(off.status, 200, "{}", off.body);
    let listed = mcp(&server, &token, "tools/list", json!({})).await;
    assert!(external(&listed, "grows").is_empty(), "{listed}");
    assert_eq!(ttl_ms(&listed), 300_000, "no server is contacted");
    let called = call(&server, &token, "mcp__grows__echo", "x").await;
    let text = error_text(&called);
    assert!(
        text.contains("switched off")
            && text.contains("cannot be called until the user changes that"),
        "{text}"
    );
    let unknown = call(&server, &token, "mcp__grows__never_listed", "x").await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// The listing rule, counted on the wire: a server that says nothing of its list's
/// freshness is asked again after 2 s, not before (one turn's listing and call reach it
/// once); a server that died leaves the next listing after that, with no failed call
/// first, and the note says since when and when it is tried again; a server that says
/// `ttlMs` is trusted that long (within the longest reuse, 10 s by default).
#[tokio::test(flavor = "multi_thread")]
async fn listings_follow_the_servers_word_and_a_dead_server_leaves_the_next_one() {
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "2"),
    ]);
    let quiet = Stub::start(Era::Modern).await;
    let token = server.token("rule");
    register(&server, &token, "quiet", &quiet.url()).await;
    let listed = mcp(&server, &token, "tools/list", json!({})).await;
    assert_eq!(external(&listed, "quiet"), ["mcp__quiet__echo"]);
    let ttl = ttl_ms(&listed);
    assert!(
        ttl <= 2_000 && ttl > 1_000,
        "said nothing: reused 2 s ({ttl})"
    );
    let asked = quiet.listings();
    let again = mcp(&server, &token, "tools/list", json!({})).await;
    assert_eq!(external(&again, "quiet"), ["mcp__quiet__echo"]);
    assert_eq!(quiet.listings(), asked, "within 2 s the list is reused");

    quiet.fail(Some(Fault::Dead));
    tokio::time::sleep(Duration::from_millis(ttl + 100)).await;
    let after = mcp(&server, &token, "tools/list", json!({})).await;
    assert!(external(&after, "quiet").is_empty(), "{after}");
    let note = after["result"]["_meta"]["io.mirobody/unavailableServers"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for words in [
        "left out since 20",
        "tried again by the first request after 20",
    ] {
        assert!(note.contains(words), "{note:?} lacks {words:?}");
    }

    let steady = Stub::start(Era::Modern).await;
    steady.say_ttl(5_000);
    let other = server.token("steady");
    register(&server, &other, "steady", &steady.url()).await;
    let listed = mcp(&server, &other, "tools/list", json!({})).await;
    assert_eq!(external(&listed, "steady"), ["mcp__steady__echo"]);
    let ttl = ttl_ms(&listed);
    assert!(ttl <= 5_000 && ttl > 4_000, "its own word ({ttl})");
    let asked = steady.listings();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let later = mcp(&server, &other, "tools/list", json!({})).await;
    assert_eq!(external(&later, "steady"), ["mcp__steady__echo"]);
    assert_eq!(steady.listings(), asked, "trusted for its 5 s");
}

/// An agent URL with only a deny list sees none of the owner's external tools (and
/// cannot call one), as an agent whose allow list leaves them out; an allow list that
/// names one reaches it; the owner's own token sees them all.
#[tokio::test(flavor = "multi_thread")]
async fn a_deny_only_agent_url_reaches_no_external_tool() {
    let stub = Stub::start(Era::Modern).await;
    let mut env = env();
    env.push(("DISALLOWED_TOOLS_DENIER", "get_genetic_data"));
    env.push(("ALLOWED_TOOLS_NAMER", "mcp__shop__echo"));
    let server = Server::start(&env);
    let owner = "u_gatewayagents";
    let token = server.token(owner);
    register(&server, &token, "shop", &stub.url()).await;
    let own = mcp(&server, &token, "tools/list", json!({})).await;
    assert_eq!(external(&own, "shop"), ["mcp__shop__echo"], "{own}");

    let agent_url = |agent: &str| {
        let url = server.command(&["temp-url", owner, "session-1", agent]);
        let url = url.trim();
        server.url(&url[url.find("/mcp/").expect("an agent URL has /mcp/<secret>")..])
    };
    let denier = agent_url("denier");
    let listed = rpc(&denier, None, "tools/list", json!({})).await.json();
    // What the owner sees, less the denied tool and every external one.
    let expected: Vec<String> = listed_tools(&own)
        .into_iter()
        .filter(|name| !name.starts_with("mcp__") && name != "get_genetic_data")
        .collect();
    assert!(!expected.is_empty(), "the owner sees built-in tools: {own}");
    assert_eq!(listed_tools(&listed), expected, "{listed}");
    let params = json!({"name": "mcp__shop__echo", "arguments": {"text": "x"}});
    let refused = rpc(&denier, None, "tools/call", params.clone())
        .await
        .json();
    assert_eq!(
        refused["error"]["code"], -32602,
        "hidden is not callable: {refused}"
    );

    let namer = agent_url("namer");
    let listed = rpc(&namer, None, "tools/list", json!({})).await.json();
    assert_eq!(listed_tools(&listed), ["mcp__shop__echo"]);
    let called = rpc(&namer, None, "tools/call", params).await.json();
    assert_eq!(
        called["result"]["content"][0]["text"], "echo: x",
        "{called}"
    );
}
