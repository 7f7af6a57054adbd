//! The resources, resource templates and prompts of a person's own MCP server on `/mcp`,
//! over HTTP against the real `mirobody-local` and the Python SDK's MCP server on
//! 127.0.0.1 (`tests/clients/remote_server.py --catalogue`: a resource whose text is
//! "Open Monday to Friday, 9 to 17.", a 300,000-byte one, the template `orders://{number}`
//! and the prompt `order_help(order_number)`):
//! - listed beside the built-in ones, namespaced like tools (`mcp-server://shop/<uri>`,
//!   `mcp__shop__order_help`), each naming its server in `_meta`;
//! - read and got through the server that has them, the template expanded by the client;
//! - the 300 kB resource refused in words (more than the result limit passes on);
//! - an unknown resource or prompt refused as a bad parameter; another person and an
//!   anonymous caller see none of them;
//! - a server that stopped answering is left out of the next listing with a note naming
//!   it, and the built-in entries are still listed.

use e2e::remote_server::RemoteServer;
use e2e::{Server, bearer_json, rpc, sign_up_as};
use serde_json::{Value, json};

const REMOTE_TOKEN: &str = "catalogue-bearer-5e1a9c";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "20"),
    ]
}

async fn register(server: &Server, token: &str, remote: &RemoteServer) {
    let body = json!({
        "name": "shop",
        "url": remote.url(),
        "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
    });
    let reply = bearer_json(server, "POST", "/api/user/mcp-servers", token, Some(body)).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

/// The whole JSON-RPC answer of `method` on `/mcp` (HTTP 200 for a result; an error may
/// be a 400, as 2026-07-28 answers bad parameters).
async fn mcp(server: &Server, token: Option<&str>, method: &str, params: Value) -> Value {
    let reply = rpc(&server.url("/mcp"), token, method, params).await;
    let answer = reply.json();
    let expected: &[u16] = if answer.get("result").is_some() {
        &[200]
    } else {
        &[200, 400]
    };
    assert!(
        expected.contains(&reply.status),
        "{method}: {} {}",
        reply.status,
        reply.body
    );
    answer
}

/// `resources/read` of `uri` on `/mcp`: the whole JSON-RPC answer.
async fn read_resource(server: &Server, token: Option<&str>, uri: &str) -> Value {
    mcp(server, token, "resources/read", json!({"uri": uri})).await
}

/// The entry of `list` (an array in `answer.result[key]`) whose `field` is `value`.
fn entry<'a>(answer: &'a Value, key: &str, field: &str, value: &str) -> &'a Value {
    answer["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key}: {answer}"))
        .iter()
        .find(|item| item[field] == value)
        .unwrap_or_else(|| panic!("no {value} in {key}: {answer}"))
}

fn externals(answer: &Value, key: &str, field: &str) -> Vec<String> {
    answer["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key}: {answer}"))
        .iter()
        .filter_map(|item| item[field].as_str())
        .filter(|v| v.starts_with("mcp-server://") || v.starts_with("mcp__"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_persons_server_resources_and_prompts_are_listed_read_and_bounded() {
    let remote = RemoteServer::start(&["--token", REMOTE_TOKEN, "--catalogue"]);
    let server = Server::start(&env());
    let (_, token) = sign_up_as(&server, "catalogue@example.com", "a long enough password").await;
    register(&server, &token, &remote).await;
    let token = Some(token.as_str());

    // Listed beside the built-in resources, namespaced and naming the server.
    let resources = mcp(&server, token, "resources/list", json!({})).await;
    let hours = entry(
        &resources,
        "resources",
        "uri",
        "mcp-server://shop/file:///shop/opening-hours.txt",
    );
    assert_eq!(hours["name"], "opening-hours", "{hours}");
    assert_eq!(hours["mimeType"], "text/plain", "{hours}");
    assert_eq!(hours["description"], "When the shop is open.", "{hours}");
    assert_eq!(hours["_meta"]["io.mirobody/server"], "shop", "{hours}");
    let builtin = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["uri"].as_str().unwrap().starts_with("mcp-server://"))
        .count();
    assert!(builtin > 0, "the built-in resources stay: {resources}");
    assert!(
        resources["result"]["_meta"]
            .get("io.mirobody/unavailableServers")
            .is_none(),
        "no note while the server answers: {resources}"
    );

    let answer = read_resource(
        &server,
        token,
        "mcp-server://shop/file:///shop/opening-hours.txt",
    )
    .await;
    let contents = &answer["result"]["contents"];
    assert_eq!(contents.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(contents[0]["text"], "Open Monday to Friday, 9 to 17.");
    assert_eq!(
        contents[0]["uri"],
        "mcp-server://shop/file:///shop/opening-hours.txt"
    );
    assert_eq!(contents[0]["mimeType"], "text/plain");

    // A template, expanded by the client, comes back through the server that has it.
    let templates = mcp(&server, token, "resources/templates/list", json!({})).await;
    let order = entry(
        &templates,
        "resourceTemplates",
        "uriTemplate",
        "mcp-server://shop/orders://{number}",
    );
    assert_eq!(order["_meta"]["io.mirobody/server"], "shop", "{order}");
    let answer = read_resource(&server, token, "mcp-server://shop/orders://A1001").await;
    assert_eq!(
        answer["result"]["contents"][0]["text"], "order A1001: shipped",
        "{answer}"
    );

    // 300,000 bytes are more than the result limit passes on: refused in words.
    let huge = read_resource(&server, token, "mcp-server://shop/file:///shop/huge.txt").await;
    assert_eq!(huge["error"]["code"], -32603, "{huge}");
    let why = huge["error"]["message"].as_str().unwrap_or_default();
    assert!(
        why.contains("\"shop\"") && why.contains("more than the"),
        "{huge}"
    );
    assert!(!huge.to_string().contains("hhhhhhhh"), "no part of it");

    // Unknown ones are bad parameters, not failures of the server.
    for uri in [
        "mcp-server://shop/file:///shop/nothing.txt",
        "mcp-server://elsewhere/file:///shop/opening-hours.txt",
    ] {
        let unknown = read_resource(&server, token, uri).await;
        assert_eq!(unknown["error"]["code"], -32602, "{uri}: {unknown}");
    }

    // The prompt, with its argument, rendered by the server.
    let prompts = mcp(&server, token, "prompts/list", json!({})).await;
    let help = entry(&prompts, "prompts", "name", "mcp__shop__order_help");
    assert_eq!(help["description"], "Ask for help with an order.", "{help}");
    assert_eq!(help["_meta"]["io.mirobody/server"], "shop", "{help}");
    let arguments = help["arguments"].as_array().expect("its arguments");
    assert_eq!(arguments.len(), 1, "{help}");
    assert_eq!(arguments[0]["name"], "order_number");
    assert_eq!(arguments[0]["required"], true);
    let got = mcp(
        &server,
        token,
        "prompts/get",
        json!({"name": "mcp__shop__order_help", "arguments": {"order_number": "A1001"}}),
    )
    .await;
    let message = &got["result"]["messages"][0];
    assert_eq!(message["role"], "user", "{got}");
    assert_eq!(
        message["content"]["text"], "Please help me with order A1001.",
        "{got}"
    );
    for (name, arguments) in [
        ("mcp__shop__no_such_prompt", json!({})),
        ("mcp__shop__order_help", json!({"order_number": 7})),
    ] {
        let refused = mcp(
            &server,
            token,
            "prompts/get",
            json!({"name": name, "arguments": arguments}),
        )
        .await;
        assert_eq!(refused["error"]["code"], -32602, "{name}: {refused}");
    }

    // Nobody else sees them.
    let (_, other) = sign_up_as(&server, "neighbour@example.com", "a long enough password").await;
    for token in [Some(other.as_str()), None] {
        let resources = mcp(&server, token, "resources/list", json!({})).await;
        assert_eq!(
            externals(&resources, "resources", "uri"),
            Vec::<String>::new()
        );
        let prompts = mcp(&server, token, "prompts/list", json!({})).await;
        assert_eq!(externals(&prompts, "prompts", "name"), Vec::<String>::new());
        let answer = read_resource(
            &server,
            token,
            "mcp-server://shop/file:///shop/opening-hours.txt",
        )
        .await;
        assert!(
            !answer.to_string().contains("Open Monday"),
            "{token:?}: {answer}"
        );
    }

    // The server stops answering: the next listing leaves it out and says so.
    drop(remote);
    let resources = mcp(&server, token, "resources/list", json!({})).await;
    assert_eq!(
        externals(&resources, "resources", "uri"),
        Vec::<String>::new()
    );
    let notes = resources["result"]["_meta"]["io.mirobody/unavailableServers"].to_string();
    assert!(notes.contains("shop"), "{resources}");
    let prompts = mcp(&server, token, "prompts/list", json!({})).await;
    assert_eq!(externals(&prompts, "prompts", "name"), Vec::<String>::new());
    assert!(
        prompts["result"]["prompts"]
            .as_array()
            .is_some_and(|p| !p.is_empty()),
        "the built-in prompts stay: {prompts}"
    );
}
