//! The registry records configurations: over HTTP against `mirobody-local`,
//! an entry saved switched off (REST form and the seed's table form) is stored without a
//! probe and never contacted (a loopback listener counts connections); an empty url only
//! while switched off, given later (checked, unique, its credential kept); the url guard
//! still refuses internal addresses; switching on probes and, when the server does not
//! answer, is refused with 422 and leaves the entry switched off; switching on a live
//! server (`tests/clients/remote_server.py`) lists and forwards its tools.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use e2e::remote_server::RemoteServer;
use e2e::{Reply, Server, bearer_json, listed_tools, rpc};
use serde_json::{Value, json};

const REMOTE_TOKEN: &str = "remote-bearer-4f9c2e7a";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]
}

/// A loopback listener that accepts, counts and drops every connection: an MCP server
/// that is "offline" (nothing answers), and a witness of whether we contacted it.
async fn counting_listener() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (format!("http://127.0.0.1:{port}/mcp"), count)
}

async fn tool_names(server: &Server, token: &str) -> Vec<String> {
    let reply = rpc(&server.url("/mcp"), Some(token), "tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    listed_tools(&reply.json())
        .into_iter()
        .filter(|name| name.starts_with("mcp__"))
        .collect()
}

fn assert_refused(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], code, "{}", reply.body);
}

/// The seed envelope's refusal: `{success: false, error: code}`.
fn assert_seed_refused(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.json()["success"], false, "{}", reply.body);
    assert_eq!(reply.json()["error"], code, "{}", reply.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn rest_form_saves_switched_off_without_a_probe_and_probes_the_switch_on() {
    let server = Server::start(&env());
    let token = server.token("ivy");
    let api = |method: &'static str, path: String, body: Option<Value>| {
        let (server, token) = (&server, token.clone());
        async move { bearer_json(server, method, &path, &token, body).await }
    };
    let (offline, contacts) = counting_listener().await;

    // Saved switched off: stored as given, no probe, no tools, listed.
    let saved = api(
        "POST",
        "/api/user/mcp-servers".into(),
        Some(json!({
            "name": "later", "url": offline, "enabled": false, "order": 3,
            "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
            "allowed_tools": ["lookup_order"],
        })),
    )
    .await;
    assert_eq!(saved.status, 201, "{}", saved.body);
    let view = saved.json();
    assert_eq!(view["enabled"], false);
    assert_eq!(view["url"], offline);
    assert_eq!(view["tools"], json!([]));
    assert_eq!(view["last_connected_at"], Value::Null);
    assert_eq!(view["auth"], json!({"type": "BEARER"}));
    assert!(!saved.body.contains(REMOTE_TOKEN));
    let listed = api("GET", "/api/user/mcp-servers".into(), None).await;
    assert_eq!(
        listed.json()["servers"][0]["name"],
        "later",
        "{}",
        listed.body
    );
    // Edited while off (another credential, allowed tools, order): still never contacted.
    let edited = api(
        "PATCH",
        "/api/user/mcp-servers/later".into(),
        Some(json!({"order": 5, "allowed_tools": ["create_ticket"],
                    "auth": {"type": "BEARER", "token": "another-token"}})),
    )
    .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(edited.json()["order"], 5);
    assert!(tool_names(&server, &token).await.is_empty());
    assert_eq!(
        contacts.load(Ordering::SeqCst),
        0,
        "a switched-off entry was contacted"
    );

    // Switching on probes: the server does not answer, so 422 in words, still off.
    let on = api(
        "PATCH",
        "/api/user/mcp-servers/later".into(),
        Some(json!({"enabled": true, "order": 9})),
    )
    .await;
    assert_refused(&on, 422, "mcp_probe_failed");
    let message = on.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("could not be switched on"), "{message}");
    assert!(message.contains("stays switched off"), "{message}");
    assert!(contacts.load(Ordering::SeqCst) > 0, "the switch-on probed");
    let stored = api("GET", "/api/user/mcp-servers/later".into(), None).await;
    assert_eq!(stored.json()["enabled"], false, "{}", stored.body);
    assert_eq!(
        stored.json()["order"],
        5,
        "the refused update changed nothing"
    );
    assert!(tool_names(&server, &token).await.is_empty());

    // An empty url only while off; the guard still refuses internal addresses when off.
    let blank = api(
        "POST",
        "/api/user/mcp-servers".into(),
        Some(json!({"name": "blank", "url": "", "enabled": false})),
    )
    .await;
    assert_eq!(blank.status, 201, "{}", blank.body);
    assert_eq!(blank.json()["url"], "");
    let blank_on = api(
        "POST",
        "/api/user/mcp-servers".into(),
        Some(json!({"name": "blank-on", "url": ""})),
    )
    .await;
    assert_refused(&blank_on, 400, "invalid_request");
    let switch_blank = api(
        "PATCH",
        "/api/user/mcp-servers/blank".into(),
        Some(json!({"enabled": true})),
    )
    .await;
    assert_refused(&switch_blank, 400, "invalid_request");
    let internal = api(
        "POST",
        "/api/user/mcp-servers".into(),
        Some(json!({"name": "internal", "url": "http://0.0.0.0:9/mcp", "enabled": false})),
    )
    .await;
    assert_refused(&internal, 422, "invalid_mcp_server_url");

    // A live server saved off, then switched on: probed, its allowed tools listed and called.
    let remote = RemoteServer::start(&["--token", REMOTE_TOKEN]);
    let shop = api(
        "POST",
        "/api/user/mcp-servers".into(),
        Some(json!({
            "name": "shop", "url": remote.url(), "enabled": false,
            "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
            "allowed_tools": ["lookup_order", "no_such_tool"],
        })),
    )
    .await;
    assert_eq!(shop.status, 201, "{}", shop.body);
    assert!(tool_names(&server, &token).await.is_empty());
    // Allowed tools the server does not list are found at the switch-on.
    let unknown = api(
        "PATCH",
        "/api/user/mcp-servers/shop".into(),
        Some(json!({"enabled": true})),
    )
    .await;
    assert_refused(&unknown, 422, "unknown_mcp_tool");
    let on = api(
        "PATCH",
        "/api/user/mcp-servers/shop".into(),
        Some(json!({"enabled": true, "allowed_tools": ["lookup_order"]})),
    )
    .await;
    assert_eq!(on.status, 200, "{}", on.body);
    assert_eq!(on.json()["enabled"], true);
    assert_ne!(on.json()["last_connected_at"], Value::Null);
    assert_eq!(
        tool_names(&server, &token).await,
        ["mcp__shop__lookup_order"]
    );
    let called = rpc(
        &server.url("/mcp"),
        Some(&token),
        "tools/call",
        json!({"name": "mcp__shop__lookup_order", "arguments": {"order_number": "A-7"}}),
    )
    .await;
    assert_eq!(
        called.json()["result"]["content"][0]["text"],
        "order A-7: shipped",
        "{}",
        called.body
    );

    // The entry saved without a url gets one later (checked, unique), then switches on.
    let give = |url: String| {
        api(
            "PATCH",
            "/api/user/mcp-servers/blank".into(),
            Some(json!({"url": url})),
        )
    };
    assert_refused(&give(offline.clone()).await, 409, "mcp_server_url_taken");
    assert_refused(
        &give("http://0.0.0.0:9/mcp".into()).await,
        422,
        "invalid_mcp_server_url",
    );
    let open = RemoteServer::start(&[]);
    let given = give(open.url()).await;
    assert_eq!(given.status, 200, "{}", given.body);
    assert_eq!(given.json()["url"], open.url());
    assert_eq!(given.json()["enabled"], false);
    let on = api(
        "PATCH",
        "/api/user/mcp-servers/blank".into(),
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(on.status, 200, "{}", on.body);
    let names = tool_names(&server, &token).await;
    assert!(
        names.contains(&"mcp__blank__create_ticket".to_string()),
        "{names:?}"
    );
    // Once set, the url stays.
    assert_refused(&give(offline.clone()).await, 422, "immutable_field");
}

#[tokio::test(flavor = "multi_thread")]
async fn table_form_records_switched_off_entries_and_refuses_a_failing_switch_on() {
    let server = Server::start(&env());
    let token = server.token("jon");
    let set = |body: Value| {
        let (server, token) = (&server, token.clone());
        async move { bearer_json(server, "POST", "/api/user/mcp/set", &token, Some(body)).await }
    };
    let (offline, contacts) = counting_listener().await;

    let saved =
        set(json!({"name": "later", "url": offline, "enabled": false, "token": "t0k"})).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert_eq!(saved.json()["success"], true);
    let entry = &saved.json()["data"]["later"];
    assert_eq!(entry["enabled"], false, "{entry}");
    assert_eq!(entry["url"], offline);
    assert!(!saved.body.contains("t0k"));
    let blank = set(json!({"blank": {"url": "", "enabled": false, "token": REMOTE_TOKEN}})).await;
    assert_eq!(blank.status, 200, "{}", blank.body);
    assert_eq!(blank.json()["data"]["blank"]["url"], "");
    assert_seed_refused(
        &set(json!({"name": "blank-on", "url": ""})).await,
        400,
        "invalid_request",
    );
    assert_seed_refused(
        &set(json!({"name": "internal", "url": "http://0.0.0.0:9/mcp", "enabled": false})).await,
        422,
        "invalid_mcp_server_url",
    );
    assert!(tool_names(&server, &token).await.is_empty());
    assert_eq!(
        contacts.load(Ordering::SeqCst),
        0,
        "a switched-off entry was contacted"
    );

    // The switch-on of an offline server: refused, the entry stays as it was.
    let on = set(json!({"later": {"url": offline, "enabled": true, "order": 4}})).await;
    assert_seed_refused(&on, 422, "mcp_probe_failed");
    assert!(
        on.json()["msg"].as_str().unwrap().contains("switched on"),
        "{}",
        on.body
    );
    let table = bearer_json(&server, "POST", "/api/user/mcp", &token, None).await;
    assert_eq!(
        table.json()["data"]["later"]["enabled"],
        false,
        "{}",
        table.body
    );
    assert_eq!(table.json()["data"]["later"]["order"], 0);

    // A live server: saved off, then switched on by the same form, its tools listed.
    let remote = RemoteServer::start(&["--token", REMOTE_TOKEN]);
    let off =
        set(json!({"shop": {"url": remote.url(), "enabled": false, "token": REMOTE_TOKEN}})).await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert!(tool_names(&server, &token).await.is_empty());
    let on = set(json!({"shop": {"url": remote.url(), "enabled": true}})).await;
    assert_eq!(on.status, 200, "{}", on.body);
    assert_eq!(on.json()["data"]["shop"]["enabled"], true);
    let mut names = tool_names(&server, &token).await;
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

    // The entry saved without a url (with its token) given a url and switched on at once:
    // its credential, sealed before it had a url, opens for the new one.
    let other = RemoteServer::start(&["--token", REMOTE_TOKEN]);
    let given = set(json!({"blank": {"url": other.url(), "enabled": true}})).await;
    assert_eq!(given.status, 200, "{}", given.body);
    assert_eq!(given.json()["data"]["blank"]["url"], other.url());
    let names = tool_names(&server, &token).await;
    assert!(
        names.contains(&"mcp__blank__lookup_order".to_string()),
        "{names:?}"
    );
}
