//! A person's control over their own MCP servers' tools, over HTTP against the real
//! `mirobody-local` and the Python SDK's MCP server on 127.0.0.1
//! (`tests/clients/remote_server.py`: `lookup_order` is annotated read-only,
//! `create_ticket` is not):
//! - switches (a deny list): a switched-off tool is neither listed on `/mcp` nor
//!   callable, and the registry says of each tool whether it is offered;
//! - read-only: only the tools the server annotates `readOnlyHint` are offered;
//! - ask first: a 2026-07-28 client that declares form elicitation is asked
//!   (`input_required`, one form question, a sealed request state); its retry with a
//!   yes runs the tool, a no or a state for other arguments does not (the remote's own
//!   log of calls shows it); a client that cannot be asked (no elicitation declared, or
//!   the 2025-11-25 handshake) is told the tool was not run and why; a read-only tool
//!   is never asked about.

use e2e::remote_server::RemoteServer;
use e2e::{
    Reply, Server, TempDir, bearer, listed_tools, modern, post_json, python, root, rpc, run_client,
    send, sign_up_as,
};
use serde_json::{Value, json};

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "20"),
    ]
}

async fn api(server: &Server, method: &str, path: &str, token: &str, body: Value) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    send(method, &server.url(path), &headers, Some(body.to_string())).await
}

/// The caller's external tool names on `/mcp`.
async fn external_names(server: &Server, token: &str) -> Vec<String> {
    let reply = rpc(&server.url("/mcp"), Some(token), "tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let mut names = listed_tools(&reply.json());
    names.retain(|name| name.starts_with("mcp__"));
    names
}

/// A 2026-07-28 `tools/call` declaring `capabilities`, with a retry's answers and
/// state when given: the whole JSON-RPC answer.
async fn call(
    server: &Server,
    token: &str,
    name: &str,
    arguments: Value,
    capabilities: Value,
    retry: Option<(Value, &str)>,
) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some((answers, state)) = retry {
        params["inputResponses"] = answers;
        params["requestState"] = state.into();
    }
    let (mut headers, mut body) = modern(1, "tools/call", params);
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    headers.extend(bearer(token));
    let reply = post_json(&server.url("/mcp"), &headers, &body).await;
    reply.json()
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {answer}"))
        .to_string()
}

/// How many `tools/call` requests the remote server received.
fn remote_calls(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| {
            serde_json::from_str::<Value>(line).is_ok_and(|l| l["method"] == "tools/call")
        })
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn switched_off_and_read_only_tools_are_neither_listed_nor_callable() {
    let remote = RemoteServer::start(&[]);
    let server = Server::start(&env());
    let (_, token) = sign_up_as(&server, "controls@example.com", "a long enough password").await;
    let created = api(
        &server,
        "POST",
        "/api/user/mcp-servers",
        &token,
        json!({"name": "shop", "url": remote.url(), "denied_tools": ["always_fails"]}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let view = created.json();
    assert_eq!(view["denied_tools"], json!(["always_fails"]));
    let offered = |view: &Value, tool: &str| {
        view["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == tool)
            .unwrap_or_else(|| panic!("{tool}: {view}"))["offered"]
            .clone()
    };
    assert_eq!(offered(&view, "always_fails"), false);
    assert_eq!(offered(&view, "create_ticket"), true);
    let tools = |view: &Value, key: &str| -> Vec<String> {
        view["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t[key] == true)
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(tools(&view, "read_only"), ["lookup_order"], "{view}");

    let names = external_names(&server, &token).await;
    assert!(
        !names.contains(&"mcp__shop__always_fails".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"mcp__shop__create_ticket".to_string()),
        "{names:?}"
    );
    let refused = call(
        &server,
        &token,
        "mcp__shop__always_fails",
        json!({}),
        json!({}),
        None,
    )
    .await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
            .contains("unknown tool"),
        "{refused}"
    );
    assert!(
        !refused.to_string().contains("the warehouse is closed"),
        "{refused}"
    );

    // A name the server does not list is refused as a typo.
    let typo = api(
        &server,
        "PATCH",
        "/api/user/mcp-servers/shop",
        &token,
        json!({"denied_tools": ["create_tiket"]}),
    )
    .await;
    assert_eq!(typo.status, 422, "{}", typo.body);
    assert!(
        typo.body
            .contains("denied_tools names tools the server does not list: create_tiket"),
        "{}",
        typo.body
    );

    let read_only = api(
        &server,
        "PATCH",
        "/api/user/mcp-servers/shop",
        &token,
        json!({"read_only": true}),
    )
    .await;
    assert_eq!(read_only.status, 200, "{}", read_only.body);
    let view = read_only.json();
    assert_eq!(view["read_only"], true);
    assert_eq!(tools(&view, "offered"), ["lookup_order"], "{view}");
    assert_eq!(
        external_names(&server, &token).await,
        ["mcp__shop__lookup_order"]
    );
    let ticket = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        json!({"title": "x"}),
        json!({}),
        None,
    )
    .await;
    assert!(!ticket.to_string().contains("ticket opened"), "{ticket}");
    let order = call(
        &server,
        &token,
        "mcp__shop__lookup_order",
        json!({"order_number": "7"}),
        json!({}),
        None,
    )
    .await;
    assert_eq!(text(&order), "order 7: shipped");

    // Switched back on: every tool the server lists.
    let all = api(
        &server,
        "PATCH",
        "/api/user/mcp-servers/shop",
        &token,
        json!({"read_only": false, "denied_tools": []}),
    )
    .await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert!(
        external_names(&server, &token)
            .await
            .contains(&"mcp__shop__always_fails".to_string())
    );
}

/// The remote shop (its calls logged) registered with ask-first by a new person.
struct AskFirstShop {
    _logs: TempDir,
    log: std::path::PathBuf,
    _remote: RemoteServer,
    server: Server,
    token: String,
    /// The registration's answer.
    created: Reply,
}

impl AskFirstShop {
    async fn start(email: &str) -> AskFirstShop {
        let logs = TempDir::new("tool-controls");
        let log = logs.0.join("trace.jsonl");
        let remote = RemoteServer::start(&["--trace-log", log.to_str().unwrap()]);
        let server = Server::start(&env());
        let (_, token) = sign_up_as(&server, email, "a long enough password").await;
        let created = api(
            &server,
            "POST",
            "/api/user/mcp-servers",
            &token,
            json!({"name": "shop", "url": remote.url(), "ask_first": true}),
        )
        .await;
        assert_eq!(created.status, 201, "{}", created.body);
        AskFirstShop {
            _logs: logs,
            log,
            _remote: remote,
            server,
            token,
            created,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_first_runs_a_tool_only_after_the_person_said_yes() {
    let AskFirstShop {
        _logs,
        log,
        _remote,
        server,
        token,
        created,
    } = AskFirstShop::start("ask@example.com").await;
    let view = created.json();
    assert_eq!(view["ask_first"], true);
    let asks = view["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "create_ticket")
        .unwrap()["asks_first"]
        .clone();
    assert_eq!(asks, true, "{view}");

    let form = json!({"elicitation": {"form": {}}});
    let arguments = json!({"title": "refund order 7"});
    let asked = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        arguments.clone(),
        form.clone(),
        None,
    )
    .await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let question = &result["inputRequests"]["approve"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["mode"], "form");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"create_ticket\"") && message.contains("\"shop\""),
        "{message}"
    );
    assert!(message.contains("refund order 7"), "{message}");
    assert_eq!(
        question["params"]["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );
    let state = result["requestState"]
        .as_str()
        .expect("a request state")
        .to_string();
    assert_eq!(remote_calls(&log), 0, "nothing ran before the answer");

    // A no: not run.
    let no = json!({"approve": {"action": "decline"}});
    let declined = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        arguments.clone(),
        form.clone(),
        Some((no, &state)),
    )
    .await;
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert!(text(&declined).contains("said no"), "{declined}");
    // The yes given for other arguments: refused, not run.
    let yes = json!({"approve": {"action": "accept", "content": {"approve": true}}});
    let swapped = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        json!({"title": "delete all"}),
        form.clone(),
        Some((yes.clone(), &state)),
    )
    .await;
    assert!(swapped.get("error").is_some(), "{swapped}");
    assert_eq!(
        remote_calls(&log),
        0,
        "neither a no nor a swapped yes ran it"
    );

    // The yes for this call: run, once.
    let ran = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        arguments.clone(),
        form.clone(),
        Some((yes, &state)),
    )
    .await;
    assert_eq!(text(&ran), "ticket opened: refund order 7", "{ran}");
    assert_eq!(remote_calls(&log), 1);

    // A read-only tool is never asked about.
    let order = call(
        &server,
        &token,
        "mcp__shop__lookup_order",
        json!({"order_number": "7"}),
        form,
        None,
    )
    .await;
    assert_eq!(text(&order), "order 7: shipped", "{order}");
    assert_eq!(remote_calls(&log), 2);

    // A client that cannot ask: told it did not run, and what the person can do.
    let silent = call(
        &server,
        &token,
        "mcp__shop__create_ticket",
        arguments.clone(),
        json!({}),
        None,
    )
    .await;
    assert_eq!(silent["result"]["isError"], true, "{silent}");
    let words = text(&silent);
    assert!(
        words.contains("was not run") && words.contains("Ask me before"),
        "{words}"
    );
    let legacy = post_json(
        &server.url("/mcp"),
        &[
            ("authorization".into(), format!("Bearer {token}")),
            (
                "accept".into(),
                "application/json, text/event-stream".into(),
            ),
            ("mcp-protocol-version".into(), "2025-11-25".into()),
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "mcp__shop__create_ticket", "arguments": arguments}}),
    )
    .await;
    assert_eq!(legacy.status, 200, "{}", legacy.body);
    let legacy = legacy.json();
    assert_eq!(legacy["result"]["isError"], true, "{legacy}");
    assert!(text(&legacy).contains("was not run"), "{legacy}");
    assert_eq!(
        remote_calls(&log),
        2,
        "a client that cannot ask runs nothing"
    );
}

/// Ask-first with the official Python SDK client (2026-07-28, its elicitation callback
/// declared): the SDK answers the form question and retries by itself; the person's no
/// (the question's default) leaves the tool unrun, their yes runs it once.
#[tokio::test(flavor = "multi_thread")]
async fn ask_first_through_the_python_sdk_client() {
    let AskFirstShop {
        _logs,
        log,
        _remote,
        server,
        token,
        ..
    } = AskFirstShop::start("sdk-ask@example.com").await;
    // The SDK client takes a URL only: the person's personal URL.
    let minted = post_json(&server.url("/personal/mcp"), &bearer(&token), &json!({})).await;
    assert_eq!(minted.status, 200, "{}", minted.body);
    let url = minted.json()["data"]["url"].as_str().unwrap().to_string();
    let script = root().join("tests/clients/python_client.py");
    let sdk = |yes: bool| {
        let mut args = vec![
            script.to_str().unwrap().to_string(),
            url.clone(),
            "2026-07-28".to_string(),
            "--tool".to_string(),
            "mcp__shop__create_ticket".to_string(),
            "--args".to_string(),
            json!({"title": "refund order 7"}).to_string(),
            "--callbacks".to_string(),
        ];
        if yes {
            args.push("--elicit-yes".to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_client(&python(), &args)
    };
    let said_no = sdk(false);
    assert_eq!(remote_calls(&log), 0, "a no runs nothing: {said_no}");
    assert!(
        said_no["text"]
            .as_str()
            .unwrap_or_default()
            .contains("not run"),
        "{said_no}"
    );
    let said_yes = sdk(true);
    assert_eq!(said_yes["is_error"], false, "{said_yes}");
    assert_eq!(
        said_yes["text"], "ticket opened: refund order 7",
        "{said_yes}"
    );
    assert_eq!(remote_calls(&log), 1, "a yes runs it once");
}
