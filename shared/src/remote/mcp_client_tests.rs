//! Tests of the MCP client against real servers on 127.0.0.1 only.

use super::*;
use crate::config::Runtime;
use crate::remote::guard::{AddressGuard, GuardPolicy, SystemResolver};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

const SECRET: &str = "s3cr3t-t0ken";

/// The development policy (http to loopback); IP-literal URLs need no resolver.
fn development() -> GuardedHttp {
    let policy = GuardPolicy::insecure_loopback(Runtime::Local).unwrap();
    GuardedHttp::new(AddressGuard::new(policy, Arc::new(SystemResolver)))
}

fn auth() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {SECRET}")).unwrap(),
    );
    headers
}

/// The loopback responder of the guarded client's tests.
async fn respond(answer: Option<Vec<u8>>) -> SocketAddr {
    crate::remote::client::tests::serve(answer).await.addr
}

fn assert_no_secret(err: &RemoteError) {
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains(SECRET) && !shown.contains("p4th"),
        "{shown}"
    );
}

/// The Python SDK's server, killed on drop.
struct PythonServer {
    child: Child,
    dir: PathBuf,
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const SERVER_SCRIPT: &str = r#"
import sys
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("adder")

@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
"#;

fn start_python_server() -> (PythonServer, u16) {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    assert!(
        python.exists(),
        "the Python MCP SDK is missing ({}): run scripts/install-test-deps",
        python.display()
    );
    let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir =
        std::env::temp_dir().join(format!("mirobody-mcp-client-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("server.py");
    std::fs::write(&script, SERVER_SCRIPT).unwrap();
    let child = Command::new(&python)
        .arg(&script)
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Python MCP server");
    let server = PythonServer { child, dir };
    let deadline = Instant::now() + Duration::from_secs(15);
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Python MCP server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, port)
}

/// Lists and calls `add` over an open connection.
async fn list_and_add(connection: &McpConnection) {
    let tools = connection.list_tools().await.unwrap();
    let add = tools
        .tools
        .iter()
        .find(|tool| tool.name == "add")
        .expect("add");
    assert_eq!(add.description.as_deref(), Some("Add two integers."));
    assert!(add.input_schema["properties"]["a"].is_object(), "{add:?}");

    let mut arguments = Map::new();
    arguments.insert("a".into(), json!(2));
    arguments.insert("b".into(), json!(3));
    let result = connection.call_tool(add, arguments).await.unwrap();
    assert_ne!(result["isError"], json!(true), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains('5'), "{result}");
}

#[tokio::test]
async fn speaks_both_dialects_with_the_python_sdk_server() {
    let (_server, port) = start_python_server();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let timeout = Duration::from_secs(5);

    // No preference: the 2026-07-28 probe (server/discover) finds a modern server.
    let modern = McpConnection::connect(&development(), &url, &auth(), timeout, None)
        .await
        .unwrap();
    assert_eq!(modern.dialect(), Dialect::Stateless);
    assert_eq!(modern.protocol_version(), MODERN_VERSION);
    assert_eq!(modern.server_name(), Some("adder"));
    assert!(!modern.has_session());
    let shown = format!("{modern:?}");
    assert!(
        !shown.contains(SECRET) && !shown.contains("127.0.0.1"),
        "{shown}"
    );
    list_and_add(&modern).await;

    // Known to be modern: adopted without server/discover, the call is the first request.
    let adopted = McpConnection::connect(
        &development(),
        &url,
        &auth(),
        timeout,
        Some(Dialect::Stateless),
    )
    .await
    .unwrap();
    assert_eq!(adopted.server_name(), None, "no discover was sent");
    list_and_add(&adopted).await;

    // The handshake era, as with a server remembered as legacy.
    let legacy = McpConnection::connect(
        &development(),
        &url,
        &auth(),
        timeout,
        Some(Dialect::Handshake),
    )
    .await
    .unwrap();
    assert_eq!(legacy.dialect(), Dialect::Handshake);
    assert_eq!(legacy.protocol_version(), HANDSHAKE_VERSION);
    assert_eq!(legacy.server_name(), Some("adder"));
    assert!(legacy.has_session(), "the SDK hands out a session id");
    list_and_add(&legacy).await;
}

#[tokio::test]
async fn a_redirecting_server_is_refused() {
    let target = respond(None).await;
    let answer = format!(
        "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        target.port()
    );
    let addr = respond(Some(answer.into_bytes())).await;
    let url = format!("http://127.0.0.1:{}/p4th", addr.port());
    let err = McpConnection::connect(&development(), &url, &auth(), Duration::from_secs(2), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, RemoteError::Http(HttpError::Redirect { .. })),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("redirect refused"), "{err}");
    assert_no_secret(&err);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let addr = respond(None).await;
    let url = format!("http://127.0.0.1:{}/p4th", addr.port());
    let started = Instant::now();
    let err = McpConnection::connect(&development(), &url, &auth(), Duration::from_secs(1), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, RemoteError::Http(HttpError::Timeout)),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_no_secret(&err);
}

#[tokio::test]
async fn a_json_rpc_error_becomes_a_remote_error() {
    let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad version"}}"#;
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let addr = respond(Some(answer.into_bytes())).await;
    let url = format!("http://127.0.0.1:{}/p4th", addr.port());
    let err = McpConnection::connect(&development(), &url, &auth(), Duration::from_secs(2), None)
        .await
        .unwrap_err();
    match &err {
        RemoteError::Remote { code, message } => {
            assert_eq!((*code, message.as_str()), (-32602, "bad version"));
        }
        other => panic!("{other:?}"),
    }
    assert_no_secret(&err);
}

#[test]
fn event_stream_bodies_yield_the_matching_response() {
    let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n\
                : comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\n\
                data: \"id\":7,\"result\":{\"ok\":true}}\n\n";
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    let response = RemoteResponse {
        status: StatusCode::OK,
        headers,
        body: body.as_bytes().to_vec().into(),
    };
    let message = find_response(&response, 7).unwrap();
    assert_eq!(into_result(message).unwrap(), json!({"ok": true}));
    assert!(matches!(
        find_response(&response, 8),
        Err(RemoteError::Protocol(_))
    ));
}

#[test]
fn x_mcp_header_annotations_are_found_checked_and_encoded() {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "options": {"type": "object", "properties": {
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}
        }},
        "query": {"type": "string"}
    }});
    let mut found = param_annotations(&schema).unwrap();
    found.sort();
    assert_eq!(
        found,
        vec![
            (
                vec!["options".to_string(), "dry".to_string()],
                "Dry-Run".to_string()
            ),
            (vec!["region".to_string()], "Region".to_string()),
        ]
    );
    let bad = [
        json!({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
        json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                              "b": {"type": "string", "x-mcp-header": "x"}}}),
        json!({"properties": {"a": {"type": "string", "x-mcp-header": "has space"}}}),
        json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}}),
    ];
    for schema in bad {
        assert!(param_annotations(&schema).is_err(), "{schema}");
    }
    assert_eq!(header_value("us-west1"), "us-west1");
    assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
    assert_eq!(header_value("日本"), "=?base64?5pel5pys?=");
}

/// A scripted MCP server: `answer(method, params)` gives the JSON-RPC `result` (or a
/// whole response object with `error`, sent with 400), as JSON with `Connection: close`
/// and a session id (which 2026-07-28 clients ignore).
async fn scripted(answer: fn(&str, &Value) -> Value) -> SocketAddr {
    scripted_server(answer).await.addr
}

async fn scripted_server(
    answer: fn(&str, &Value) -> Value,
) -> crate::remote::client::tests::Server {
    let respond = move |request: &str| {
        let body = request.split("\r\n\r\n").nth(1).unwrap_or_default();
        let message: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let method = message["method"].as_str().unwrap_or_default().to_string();
        let outcome = answer(&method, &message["params"]);
        let reply = match outcome.get("error") {
            Some(_) => json!({"jsonrpc": "2.0", "id": message["id"], "error": outcome["error"]}),
            None => json!({"jsonrpc": "2.0", "id": message["id"], "result": outcome}),
        }
        .to_string();
        let status = if outcome.get("error").is_some() {
            "400 Bad Request"
        } else {
            "200 OK"
        };
        Some(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            )
            .into_bytes(),
        )
    };
    crate::remote::client::tests::serve_with(Arc::new(respond)).await
}

/// Connects to a scripted server's `/mcp` (development policy, 2 s per request).
async fn connect_to(addr: SocketAddr) -> Result<McpConnection, RemoteError> {
    let url = format!("http://127.0.0.1:{}/mcp", addr.port());
    McpConnection::connect(&development(), &url, &auth(), Duration::from_secs(2), None).await
}

fn discover_result() -> Value {
    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
           "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "paged", "version": "1"}}})
}

fn tools(from: usize, count: usize) -> Vec<Value> {
    (from..from + count)
        .map(|i| json!({"name": format!("t{i:03}"), "inputSchema": {"type": "object"}}))
        .collect()
}

#[tokio::test]
async fn tool_lists_follow_cursors_up_to_the_bounds() {
    // Three pages of 100 (cursor "1", then "2"): 256 kept, in order.
    let addr = scripted(|method, params| match method {
        "server/discover" => discover_result(),
        "tools/list" => {
            let page: usize = params["cursor"].as_str().map_or(0, |c| c.parse().unwrap());
            let mut result = json!({"tools": tools(page * 100, 100)});
            if page < 2 {
                result["nextCursor"] = json!((page + 1).to_string());
            }
            result
        }
        _ => json!({}),
    })
    .await;
    let connection = connect_to(addr).await.unwrap();
    assert_eq!(connection.server_name(), Some("paged"));
    let listed = connection.list_tools().await.unwrap();
    assert_eq!(listed.tools.len(), MAX_TOOLS);
    assert_eq!(listed.tools[0].name, "t000");
    assert_eq!(listed.tools[255].name, "t255");
    assert!(listed.truncated && listed.note().unwrap().contains("first 256 tools"));

    // A server whose cursor never ends is read for MAX_TOOL_PAGES pages only.
    let endless = scripted(|method, _| match method {
        "server/discover" => discover_result(),
        _ => json!({"tools": tools(0, 1), "nextCursor": "again"}),
    })
    .await;
    let connection = connect_to(endless).await.unwrap();
    let listed = connection.list_tools().await.unwrap();
    assert_eq!(listed.tools.len(), MAX_TOOL_PAGES);
    assert!(listed.truncated);
}

/// A list's `ttlMs` is kept as the server said it: the least of its pages', a negative
/// one as 0, none when no page said one.
#[tokio::test]
async fn a_tool_lists_ttl_is_the_least_its_pages_said() {
    let paged = scripted(|method, params| match method {
        "server/discover" => discover_result(),
        _ => match params["cursor"].as_str() {
            None => json!({"tools": tools(0, 1), "ttlMs": 30_000, "nextCursor": "1"}),
            Some(_) => json!({"tools": tools(1, 1), "ttlMs": 4_000}),
        },
    })
    .await;
    let listed = connect_to(paged).await.unwrap().list_tools().await.unwrap();
    assert_eq!((listed.tools.len(), listed.ttl_ms), (2, Some(4_000)));
    let negative = scripted(|method, _| match method {
        "server/discover" => discover_result(),
        _ => json!({"tools": tools(0, 1), "ttlMs": -5}),
    })
    .await;
    let listed = connect_to(negative)
        .await
        .unwrap()
        .list_tools()
        .await
        .unwrap();
    assert_eq!(listed.ttl_ms, Some(0));
    let silent = scripted(|method, _| match method {
        "server/discover" => discover_result(),
        _ => json!({"tools": tools(0, 1)}),
    })
    .await;
    let listed = connect_to(silent)
        .await
        .unwrap()
        .list_tools()
        .await
        .unwrap();
    assert_eq!(listed.ttl_ms, None);
}

/// A server listing 256 tools with 15 kB descriptions and 3 kB schemas (4.6 MB) is
/// kept to 256 KiB: descriptions cut to 500 characters, a tool with a 20 KiB schema and
/// one with a 257-character name left out, tools past the budget left out, and the
/// caller told.
#[tokio::test]
async fn a_huge_tool_list_is_kept_within_its_bounds() {
    let addr = scripted(|method, params| match method {
        "server/discover" => discover_result(),
        "tools/list" => {
            // Pages of 64, cursors "1" to "3".
            let page: usize = params["cursor"].as_str().map_or(0, |c| c.parse().unwrap());
            let mut tools: Vec<Value> = (page * 64..page * 64 + 64)
                .map(|i| {
                    json!({"name": format!("t{i:03}"), "description": "d".repeat(15_000),
                                "inputSchema": {"type": "object", "description": "s".repeat(3_000)}})
                })
                .collect();
            if page == 0 {
                tools.insert(
                    0,
                    json!({"name": "wide", "inputSchema": {"type": "object",
                    "description": "x".repeat(20 * 1024)}}),
                );
                tools.insert(1, json!({"name": "n".repeat(257)}));
            }
            let mut result = json!({ "tools": tools });
            if page < 3 {
                result["nextCursor"] = json!((page + 1).to_string());
            }
            result
        }
        _ => json!({}),
    })
    .await;
    let connection = connect_to(addr).await.unwrap();
    let listed = connection.list_tools().await.unwrap();
    assert_eq!(listed.oversized, 1);
    assert_eq!(listed.long_names, 1);
    assert!(listed.truncated);
    assert!(
        listed
            .tools
            .iter()
            .all(|t| t.name != "wide" && t.name.len() <= 256)
    );
    let description = listed.tools[0].description.as_deref().unwrap();
    assert_eq!(
        description.chars().count(),
        MAX_TOOL_DESCRIPTION + 1,
        "cut, with an ellipsis"
    );
    let kept: usize = listed
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.as_ref().map_or(0, String::len) + 3_000 + 16)
        .sum();
    assert!(kept <= MAX_LISTING_BYTES, "{kept}");
    // About 3.5 kB a tool: past the first page of 64, short of the 256.
    assert!(
        (65..100).contains(&listed.tools.len()),
        "{}",
        listed.tools.len()
    );
    let note = listed.note().unwrap();
    assert!(
        note.contains("1 of its tools were left out because their input schemas")
            && note.contains("1 of its tools were left out because their names are over 256")
            && note.contains("first"),
        "{note}"
    );

    // One page over the 4 MiB answer bound is not read: the server fails with a reason.
    let bloated = scripted(|method, _| match method {
        "server/discover" => discover_result(),
        _ => json!({"tools": [{"name": "t", "description": "d".repeat(5 * 1024 * 1024)}]}),
    })
    .await;
    let connection = connect_to(bloated).await.unwrap();
    assert!(connection.list_tools().await.is_err());
}

#[tokio::test]
async fn a_modern_server_without_our_version_is_not_retried_as_legacy() {
    let addr = scripted(|method, _| match method {
        "server/discover" => json!({"error": {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "unsupported",
                                              "data": {"supported": ["2027-01-01"], "requested": "2026-07-28"}}}),
        // Would succeed if the client wrongly fell back to the handshake.
        _ => json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "x"}}),
    })
    .await;
    let err = connect_to(addr).await.unwrap_err();
    assert!(err.to_string().contains("2027-01-01"), "{err}");
}

#[tokio::test]
async fn a_refusal_that_lists_our_version_is_asked_once_more() {
    // The spec: a client refused a version retries with one the server lists. The
    // scripted server refuses the first discover only.
    static DISCOVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let addr = scripted(|method, _| match method {
        "server/discover" if DISCOVERS.fetch_add(1, Ordering::SeqCst) == 0 => {
            json!({"error": {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "unsupported",
                             "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}})
        }
        "server/discover" => discover_result(),
        _ => json!({}),
    })
    .await;
    let connection = connect_to(addr).await.unwrap();
    assert_eq!(connection.dialect(), Dialect::Stateless);
    assert_eq!(DISCOVERS.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_refusal_that_lists_a_handshake_version_leads_to_the_handshake() {
    let addr = scripted(|method, _| match method {
        "server/discover" => json!({"error": {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "unsupported",
                                              "data": {"supported": ["2025-11-25"], "requested": "2026-07-28"}}}),
        "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "older"}}),
        _ => json!({}),
    })
    .await;
    let connection = connect_to(addr).await.unwrap();
    assert_eq!(connection.dialect(), Dialect::Handshake);
    assert_eq!(connection.protocol_version(), "2025-11-25");
}

#[tokio::test]
async fn a_tool_asking_for_input_is_its_own_error() {
    let addr = scripted(|method, _| match method {
        "server/discover" => discover_result(),
        "tools/call" => json!({"resultType": "input_required", "inputRequests": {}}),
        _ => json!({}),
    })
    .await;
    let connection = connect_to(addr).await.unwrap();
    let tool = RemoteTool {
        name: "ask".into(),
        input_schema: json!({"type": "object"}),
        ..RemoteTool::default()
    };
    let err = connection.call_tool(&tool, Map::new()).await.unwrap_err();
    assert!(matches!(err, RemoteError::InputRequired), "{err:?}");
    assert!(err.to_string().contains("more input"), "{err}");
}

#[tokio::test]
async fn a_legacy_session_is_ended_on_close() {
    let server = scripted_server(|method, _| match method {
        "server/discover" => json!({"error": {"code": -32000, "message": "Bad Request: no session"}}),
        "initialize" => json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "old"}}),
        _ => json!({}),
    })
    .await;
    let connection = connect_to(server.addr).await.unwrap();
    assert_eq!(connection.dialect(), Dialect::Handshake);
    assert_eq!(connection.protocol_version(), "2025-06-18");
    assert!(connection.has_session());
    connection.close(Duration::from_secs(2)).await;
    let requests = server.requests();
    let last = requests.last().unwrap().to_ascii_lowercase();
    assert!(last.starts_with("delete /mcp"), "{last}");
    assert!(last.contains("mcp-session-id: s-1"), "{last}");
    assert!(last.contains(&format!("bearer {SECRET}")), "{last}");
}

/// A tool's title, annotations and output schema are kept, reduced to
/// the spec's keys and types and bounded; anything else is dropped, the tool stays.
#[test]
fn tool_metadata_is_kept_typed_and_bounded() {
    let tool = parse_tool(&json!({
        "name": "describe",
        "title": "t".repeat(MAX_TOOL_TITLE + 50),
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "annotations": {
            "title": "Order summary",
            "readOnlyHint": true,
            "destructiveHint": "no",
            "idempotentHint": false,
            "openWorldHint": null,
            "x-secret": {"big": "y"}
        },
        "icons": [{"src": "https://example.com/i.png"}]
    }))
    .unwrap();
    assert_eq!(
        tool.title.as_ref().unwrap().chars().count(),
        MAX_TOOL_TITLE + 1
    );
    assert_eq!(
        tool.output_schema,
        Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
    );
    assert_eq!(
        tool.annotations,
        Some(json!({"title": "Order summary", "readOnlyHint": true, "idempotentHint": false}))
    );

    let odd = parse_tool(&json!({
        "name": "odd",
        "title": 7,
        "outputSchema": {"type": "array", "items": {"type": "string"}},
        "annotations": {"destructiveHint": "yes"}
    }))
    .unwrap();
    assert_eq!(
        (odd.title, odd.output_schema, odd.annotations),
        (None, None, None)
    );

    let huge = parse_tool(&json!({
        "name": "huge",
        "outputSchema": {"type": "object", "description": "d".repeat(MAX_TOOL_SCHEMA)},
        "annotations": []
    }))
    .unwrap();
    assert_eq!((huge.output_schema, huge.annotations), (None, None));
}
