//! Remote tools keep what they say about
//! themselves, and their results stay bounded, over HTTP against the real
//! `mirobody-local` and the Python SDK's MCP server on 127.0.0.1
//! (`tests/clients/remote_server.py`, reached through `MIROBODY_REMOTE_DEV_LOOPBACK`):
//! - `tools/list` shows a remote tool's `title`, `annotations` and `outputSchema` under
//!   `mcp__<server>__<tool>`, and a call passes its `structuredContent` through (the
//!   Python SDK client, which checks structured results against the schema, on both
//!   eras);
//! - a result over `MCP_REMOTE_RESULT_MAX_BYTES` (256 KB by default) is cut with a note
//!   saying how much was left out, a small one is untouched, structured content too
//!   large to keep is left out (an error result the Python SDK client accepts), one over
//!   the read bound is a clear error result; the 4 MB case's latency and peak memory are
//!   printed;
//! - a remote tool named with 200 characters is listed under a name within the spec's
//!   128 characters and charset, and can be called.

use std::time::Instant;

use e2e::remote_server::RemoteServer;
use e2e::{Server, bearer, python, root, rpc, run_client, send};
use serde_json::{Value, json};

/// The tool `remote_server.py --long-name` adds: 200 characters.
fn long_name() -> String {
    format!("long_{}", "n".repeat(195))
}

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "20"),
    ]
}

/// Registers `remote` as the caller's server `shop` (no auth): the registration answer.
async fn register(server: &Server, token: &str, remote: &RemoteServer) -> Value {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    let body = json!({"name": "shop", "url": remote.url()});
    let reply = send(
        "POST",
        &server.url("/api/user/mcp-servers"),
        &headers,
        Some(body.to_string()),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()
}

async fn mcp(server: &Server, token: &str, method: &str, params: Value) -> Value {
    let reply = rpc(&server.url("/mcp"), Some(token), method, params).await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

/// A `tools/call` result (the JSON-RPC `result`).
async fn call(server: &Server, token: &str, name: &str, arguments: Value) -> Value {
    let answer = mcp(
        server,
        token,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    answer
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result: {answer}"))
}

/// The `tools/list` entries of the caller's external tools.
async fn external_tools(server: &Server, token: &str) -> Vec<Value> {
    let answer = mcp(server, token, "tools/list", json!({})).await;
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .filter(|tool| tool["name"].as_str().unwrap().starts_with("mcp__"))
        .cloned()
        .collect()
}

fn entry<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {tools:?}"))
}

/// The texts of a result's content items.
fn texts(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {result}"))
        .iter()
        .map(|item| item["text"].as_str().unwrap_or_else(|| panic!("{item}")))
        .collect()
}

/// The Python SDK client calling `tool` through our `/mcp` on the caller's personal URL.
async fn python_client(server: &Server, token: &str, mode: &str, tool: &str, args: Value) -> Value {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    let personal = send(
        "POST",
        &server.url("/personal/mcp"),
        &headers,
        Some("{}".into()),
    )
    .await;
    let url = personal.json()["data"]["url"].as_str().unwrap().to_string();
    let script = root().join("tests/clients/python_client.py");
    let args = args.to_string();
    run_client(
        &python(),
        &[
            script.to_str().unwrap(),
            &url,
            mode,
            "--tool",
            tool,
            "--args",
            &args,
        ],
    )
}

/// Item 5: title, annotations (the spec's keys only) and outputSchema reach the listing
/// under the namespaced name; structuredContent reaches the caller, and the Python SDK
/// client, which validates it against the listed schema, accepts it on both eras.
#[tokio::test(flavor = "multi_thread")]
async fn remote_tools_keep_their_title_annotations_and_output_schema() {
    let remote = RemoteServer::start(&["--metadata"]);
    let server = Server::start(&env());
    let token = server.token("alice");
    register(&server, &token, &remote).await;

    let tools = external_tools(&server, &token).await;
    let describe = entry(&tools, "mcp__shop__describe_order");
    assert_eq!(describe["title"], "Describe an order", "{describe}");
    assert_eq!(
        describe["annotations"],
        json!({
            "title": "Order summary",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false
        })
    );
    let output = &describe["outputSchema"];
    assert_eq!(output["type"], "object", "{describe}");
    assert_eq!(
        output["properties"]["items"]["type"], "integer",
        "{describe}"
    );
    assert_eq!(
        output["required"],
        json!(["order_number", "status", "items"])
    );
    assert_eq!(describe["_meta"]["io.mirobody/tool"], "describe_order");
    // A tool that declares none of them lists none.
    let big = entry(&tools, "mcp__shop__big_result");
    for absent in ["title", "annotations", "outputSchema"] {
        assert!(big.get(absent).is_none(), "{absent}: {big}");
    }

    let result = call(
        &server,
        &token,
        "mcp__shop__describe_order",
        json!({"order_number": "A7"}),
    )
    .await;
    assert_eq!(
        result["structuredContent"],
        json!({"order_number": "A7", "status": "shipped", "items": 3}),
        "{result}"
    );
    assert_ne!(result["isError"], true, "{result}");

    for mode in ["2026-07-28", "legacy"] {
        let report = python_client(
            &server,
            &token,
            mode,
            "mcp__shop__describe_order",
            json!({"order_number": "B2"}),
        )
        .await;
        assert_eq!(report["is_error"], false, "{mode}: {report}");
        assert!(
            report["text"].as_str().unwrap().contains("\"B2\""),
            "{mode}: {report}"
        );
    }
}

/// The number of bytes a truncation note says were left out.
fn omitted(note: &str) -> usize {
    note.strip_prefix("[truncated: ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a truncation note: {note}"))
}

/// Item 5: a 1 MB result comes back as at most 256 KB of content plus a note saying
/// how much was left out; a small one is untouched; one over the read bound is an error
/// result saying what to do; the setting changes the limit. Prints the 4 MB case's
/// latency and what it adds to the server's peak memory (measured before any larger
/// result raised the peak).
#[tokio::test(flavor = "multi_thread")]
async fn a_large_remote_result_is_cut_with_a_note() {
    let remote = RemoteServer::start(&["--metadata"]);
    let server = Server::start(&env());
    let token = server.token("bob");
    register(&server, &token, &remote).await;

    let small = call(
        &server,
        &token,
        "mcp__shop__big_result",
        json!({"size": 1000}),
    )
    .await;
    assert_eq!(
        small["content"],
        json!([{"type": "text", "text": "x".repeat(1000)}]),
        "a small result is untouched"
    );

    // 4 MB, measured: latency and the server's peak resident memory.
    let before = server.peak_rss_kib();
    let started = Instant::now();
    let four = call(
        &server,
        &token,
        "mcp__shop__big_result",
        json!({"size": 4_000_000}),
    )
    .await;
    let elapsed = started.elapsed();
    let after = server.peak_rss_kib();
    assert_eq!(omitted(texts(&four)[1]), 4_000_000 - texts(&four)[0].len());
    eprintln!(
        "4 MB remote result: {} ms end to end, server peak RSS {} KiB -> {} KiB (+{} KiB)",
        elapsed.as_millis(),
        before,
        after,
        after.saturating_sub(before)
    );
    assert!(
        after.saturating_sub(before) < 100 * 1024,
        "a 4 MB result raised the peak by {} KiB",
        after - before
    );

    let large = call(
        &server,
        &token,
        "mcp__shop__big_result",
        json!({"size": 1_000_000}),
    )
    .await;
    let parts = texts(&large);
    assert_eq!(parts.len(), 2, "the cut text and the note");
    let kept = parts[0].len();
    let content_bytes = serde_json::to_vec(&large["content"][0]).unwrap().len();
    assert!(
        content_bytes <= 256 * 1024 && kept > 255 * 1024,
        "{content_bytes} bytes of content kept"
    );
    assert!(parts[0].bytes().all(|b| b == b'x'));
    let note = parts[1];
    assert_eq!(omitted(note), 1_000_000 - kept, "{note}");
    assert!(
        note.contains("omitted by mirobody") && note.contains("larger than 256 KB"),
        "{note}"
    );
    assert_ne!(large["isError"], true, "{large}");

    // Structured content too large to keep is left out, and since the tool declares an
    // output schema the result is an error result, which a validating client (the
    // Python SDK) takes instead of refusing it; small structured content stays.
    let structured = call(
        &server,
        &token,
        "mcp__shop__big_structured",
        json!({"size": 1_000_000}),
    )
    .await;
    assert_eq!(structured["isError"], true, "{}", structured["content"][1]);
    assert!(structured.get("structuredContent").is_none());
    let note = texts(&structured)[1];
    assert!(
        note.contains("structured content was left out too"),
        "{note}"
    );
    let report = python_client(
        &server,
        &token,
        "2026-07-28",
        "mcp__shop__big_structured",
        json!({"size": 1_000_000}),
    )
    .await;
    assert_eq!(report["is_error"], true, "{}", report["tools"]);
    let whole = call(
        &server,
        &token,
        "mcp__shop__big_structured",
        json!({"size": 10}),
    )
    .await;
    assert_eq!(whole["structuredContent"], json!({"data": "y".repeat(10)}));
    assert_ne!(whole["isError"], true);

    // Over the read bound (8 MiB): nothing to cut, a clear error result.
    let huge = call(
        &server,
        &token,
        "mcp__shop__big_result",
        json!({"size": 9_000_000}),
    )
    .await;
    assert_eq!(huge["isError"], true, "{huge}");
    let text = texts(&huge)[0];
    assert!(
        text.contains("\"shop\"")
            && text.contains("larger than 8 MB")
            && text.contains("asking for much less"),
        "{text}"
    );

    // The setting moves the limit.
    let mut settings = env();
    settings.push(("MCP_REMOTE_RESULT_MAX_BYTES", "65536"));
    let tight = Server::start(&settings);
    let token = tight.token("bob");
    register(&tight, &token, &remote).await;
    let cut = call(
        &tight,
        &token,
        "mcp__shop__big_result",
        json!({"size": 100_000}),
    )
    .await;
    let parts = texts(&cut);
    assert!(parts[0].len() <= 64 * 1024 && parts[0].len() > 63 * 1024);
    assert!(parts[1].contains("larger than 64 KB"), "{}", parts[1]);
}

/// Item 8: a remote tool whose own name has 200 characters is listed under a name
/// within the spec's 128 characters and charset (and the 64 that model APIs take),
/// stable across listings, and a call under it reaches the tool.
#[tokio::test(flavor = "multi_thread")]
async fn a_200_character_tool_name_is_listed_within_128() {
    let remote = RemoteServer::start(&["--long-name"]);
    let server = Server::start(&env());
    let token = server.token("carol");
    register(&server, &token, &remote).await;

    let answer = mcp(&server, &token, "tools/list", json!({})).await;
    let all = answer["result"]["tools"].as_array().unwrap();
    for tool in all {
        let name = tool["name"].as_str().unwrap();
        assert!(
            (1..=128).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')),
            "{name:?} breaks the spec's tool-name rule"
        );
    }
    let long = all
        .iter()
        .find(|tool| tool["_meta"]["io.mirobody/tool"] == long_name())
        .unwrap_or_else(|| panic!("the long tool is not listed: {answer}"));
    let name = long["name"].as_str().unwrap().to_string();
    assert!(
        name.starts_with("mcp__shop__long_nnn") && name.len() <= 64,
        "{name}"
    );
    let again = external_tools(&server, &token).await;
    assert!(again.iter().any(|tool| tool["name"] == name), "stable");

    let result = call(&server, &token, &name, json!({})).await;
    assert_eq!(texts(&result), ["long name answered"], "{result}");
}

/// Issue 31, one view of a server: the registration answer, the registry's read and
/// `/mcp` show the same tools (the 200-character one too, under its cut and hashed
/// name), each with the name the model sees and the same description, cut to the one
/// bound of 500 characters.
#[tokio::test(flavor = "multi_thread")]
async fn the_registry_and_mcp_show_the_same_tools_under_the_same_names() {
    let remote = RemoteServer::start(&["--long-name", "--bulk", "2"]);
    let server = Server::start(&env());
    let token = server.token("dora");
    let registered = register(&server, &token, &remote).await;
    let read = send(
        "GET",
        &server.url("/api/user/mcp-servers/shop"),
        &bearer(&token),
        None,
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.body);
    let read = read.json();

    // (exposed name, remote name, description) of each view, in name order.
    let of_view = |view: &Value| {
        let mut tools: Vec<(String, String, Value)> = view["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools: {view}"))
            .iter()
            .map(|t| {
                (
                    t["exposed_name"].as_str().unwrap_or_default().to_string(),
                    t["name"].as_str().unwrap().to_string(),
                    t["description"].clone(),
                )
            })
            .collect();
        tools.sort_by(|a, b| a.0.cmp(&b.0));
        tools
    };
    let mut listed: Vec<(String, String, Value)> = external_tools(&server, &token)
        .await
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["_meta"]["io.mirobody/tool"].as_str().unwrap().to_string(),
                t.get("description").cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(of_view(&registered), listed, "{registered}");
    assert_eq!(of_view(&read), listed, "{read}");

    let long = listed
        .iter()
        .find(|(_, remote, _)| *remote == long_name())
        .unwrap_or_else(|| panic!("the 200-character tool is in every view: {listed:?}"));
    assert!(long.0.starts_with("mcp__shop__long_nnn") && long.0.len() <= 64);
    // The bulk tools' 5,000-character descriptions: 500 characters and an ellipsis.
    let bulk = listed
        .iter()
        .find(|(_, remote, _)| remote == "bulk_000")
        .expect("bulk_000 listed");
    let description = bulk.2.as_str().unwrap();
    assert_eq!(description.chars().count(), 501, "{description}");
    assert!(description.starts_with("ddd") && description.ends_with('…'));
}
