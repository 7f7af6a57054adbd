//! Rename: over HTTP against `mirobody-local` with the Python SDK's MCP
//! server on loopback, requiring a bearer token (`tests/clients/remote_server.py`). A
//! PATCH with a new name keeps the sealed credential, url, auth, allowed tools and status
//! fields; the tools' names follow (`mcp__<new>__<tool>`) and the old ones are gone from
//! `tools/list` at once; a taken name is 409 and changes nothing; a missing server is 404.

use e2e::remote_server::RemoteServer;
use e2e::{Reply, Server, bearer_json, listed_tools, rpc};
use serde_json::{Value, json};

const REMOTE_TOKEN: &str = "remote-bearer-4f9c2e7a";

async fn tool_names(server: &Server, token: &str) -> Vec<String> {
    let reply = rpc(&server.url("/mcp"), Some(token), "tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let mut names: Vec<String> = listed_tools(&reply.json())
        .into_iter()
        .filter(|name| name.starts_with("mcp__"))
        .collect();
    names.sort();
    names
}

async fn call(server: &Server, token: &str, name: &str, arguments: Value) -> Value {
    let reply = rpc(
        &server.url("/mcp"),
        Some(token),
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

fn assert_refused(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], code, "{}", reply.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rename_keeps_the_credential_and_moves_the_tools() {
    let remote = RemoteServer::start(&["--token", REMOTE_TOKEN]);
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]);
    let token = server.token("kate");
    let api = |method: &'static str, path: &str, body: Option<Value>| {
        let (server, token, path) = (&server, token.clone(), path.to_string());
        async move { bearer_json(server, method, &path, &token, body).await }
    };

    let created = api(
        "POST",
        "/api/user/mcp-servers",
        Some(json!({
            "name": "shop", "url": remote.url(), "order": 2,
            "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
            "allowed_tools": ["lookup_order", "create_ticket"],
        })),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // Another entry, saved switched off (no probe), whose name is taken below.
    let other = api(
        "POST",
        "/api/user/mcp-servers",
        Some(json!({"name": "other-one", "url": "http://127.0.0.1:9/mcp", "enabled": false})),
    )
    .await;
    assert_eq!(other.status, 201, "{}", other.body);
    assert_eq!(
        tool_names(&server, &token).await,
        ["mcp__shop__create_ticket", "mcp__shop__lookup_order"]
    );

    // As stored just before (the listing above recorded a connection).
    let before = api("GET", "/api/user/mcp-servers/shop", None).await.json();
    let renamed = api(
        "PATCH",
        "/api/user/mcp-servers/shop",
        Some(json!({"name": "store"})),
    )
    .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    let after = renamed.json();
    assert_eq!(after["name"], "store");
    for field in [
        "url",
        "auth",
        "allowed_tools",
        "enabled",
        "order",
        "server_name",
        "created_at",
        "last_connected_at",
        "last_connect_error",
    ] {
        assert_eq!(after[field], before[field], "{field} kept");
    }
    // The same tools; the names the AI sees follow the new name.
    let tools = |view: &Value| {
        view["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].clone(),
                    t["description"].clone(),
                    t["exposed_name"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let (was, now) = (tools(&before), tools(&after));
    assert_eq!(was.len(), now.len());
    for ((name, description, exposed), (name_now, description_now, exposed_now)) in
        was.iter().zip(&now)
    {
        assert_eq!(
            (name, description),
            (name_now, description_now),
            "tools kept"
        );
        assert_eq!(
            exposed.replacen("mcp__shop__", "mcp__store__", 1),
            *exposed_now
        );
    }
    assert!(!renamed.body.contains(REMOTE_TOKEN));

    // The tools follow the name at once; the sealed credential still opens (the remote
    // server refuses requests without its token).
    assert_eq!(
        tool_names(&server, &token).await,
        ["mcp__store__create_ticket", "mcp__store__lookup_order"]
    );
    let called = call(
        &server,
        &token,
        "mcp__store__lookup_order",
        json!({"order_number": "A-7"}),
    )
    .await;
    assert_eq!(
        called["result"]["content"][0]["text"], "order A-7: shipped",
        "{called}"
    );
    let old = call(
        &server,
        &token,
        "mcp__shop__lookup_order",
        json!({"order_number": "A-7"}),
    )
    .await;
    assert!(
        old["error"].is_object() || old["result"]["isError"] == true,
        "the old name no longer calls: {old}"
    );
    assert_refused(
        &api("GET", "/api/user/mcp-servers/shop", None).await,
        404,
        "not_found",
    );

    // Onto a taken name: 409 in words, nothing changed.
    let taken = api(
        "PATCH",
        "/api/user/mcp-servers/store",
        Some(json!({"name": "other-one", "order": 8})),
    )
    .await;
    assert_refused(&taken, 409, "mcp_server_name_taken");
    assert!(taken.body.contains("already registered"), "{}", taken.body);
    let listed = api("GET", "/api/user/mcp-servers", None).await;
    let names: Vec<String> = listed.json()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["other-one", "store"], "{}", listed.body);
    let store = api("GET", "/api/user/mcp-servers/store", None).await;
    assert_eq!(store.json()["order"], 2);
    // A name that would share a tool namespace, an invalid name, a missing server.
    assert_refused(
        &api(
            "PATCH",
            "/api/user/mcp-servers/store",
            Some(json!({"name": "other_one"})),
        )
        .await,
        409,
        "mcp_server_name_taken",
    );
    assert_refused(
        &api(
            "PATCH",
            "/api/user/mcp-servers/store",
            Some(json!({"name": "bad name!"})),
        )
        .await,
        400,
        "invalid_request",
    );
    assert_refused(
        &api(
            "PATCH",
            "/api/user/mcp-servers/ghost",
            Some(json!({"name": "spirit"})),
        )
        .await,
        404,
        "not_found",
    );

    // Back to the old name with another change in the same request.
    let back = api(
        "PATCH",
        "/api/user/mcp-servers/store",
        Some(json!({"name": "shop", "order": 5})),
    )
    .await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(back.json()["order"], 5);
    assert_eq!(
        tool_names(&server, &token).await,
        ["mcp__shop__create_ticket", "mcp__shop__lookup_order"]
    );
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
}
