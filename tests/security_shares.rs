//! Issue 12, finding 4 (B2): a share hands the grantee a delegated URL of their own,
//! never the owner's key, and unsharing ends it. Each attack over HTTP against the real
//! `mirobody-local`, with a real external MCP server (`tests/clients/remote_server.py`
//! on loopback, through `MIROBODY_REMOTE_DEV_LOOPBACK`) registered by the owner:
//! - the grantee asks `POST /personal/mcp {"user_id": <owner>}` and gets a different
//!   URL (never the owner's), the same one when asking again;
//! - through it, the owner's data tools answer, the owner's external servers are
//!   neither listed nor callable, and the URL is no credential on the account APIs;
//! - after `DELETE /api/shares` it answers 404 at once, and sharing again does not
//!   revive it; the owner's own URL keeps working throughout;
//! - the grantee revokes their URL with `DELETE /personal/mcp {"user_id": <owner>}`;
//! - no URL secret or account id reaches the log.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2e::{Reply, Server, TempDir, bearer, listed_tools, post_json, python, root, rpc, send};
use serde_json::{Value, json};

const PASSWORD: &str = "a long enough password";
const REMOTE_TOKEN: &str = "remote-bearer-share-5e1a";

const CSV: &str = "indicator,value,unit,time,source\n\
HbA1c,6.1,%,2026-01-10,City Lab\n\
\"Glucose, fasting\",101,mg/dL,2026-01-10,City Lab\n";

/// `tests/clients/remote_server.py` (tools `lookup_order`, …) on a loopback port,
/// killed on drop.
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
    fn start() -> Remote {
        let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(python())
            .arg(root().join("tests/clients/remote_server.py"))
            .arg(port.to_string())
            .args(["--token", REMOTE_TOKEN])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the Python MCP server starts");
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(stderr) = child.stderr.as_mut() {
                    let _ = stderr.read_to_string(&mut err);
                }
                panic!("remote_server.py exited ({status}): {err}");
            }
            assert!(Instant::now() < deadline, "remote_server.py did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Remote { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// Signs up; the new account's user id and session token.
async fn sign_up(server: &Server, email: &str) -> (String, String) {
    let body = json!({ "email": email, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let data = &reply.json()["data"];
    (
        data["user_id"].as_str().unwrap().to_string(),
        data["token"].as_str().unwrap().to_string(),
    )
}

/// A JSON request with the caller's session token.
async fn api(server: &Server, method: &str, path: &str, token: &str, body: Value) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    send(method, &server.url(path), &headers, Some(body.to_string())).await
}

/// `POST /personal/mcp` with `body`: the URL it hands out.
async fn personal_url(server: &Server, token: &str, body: Value) -> String {
    let reply = api(server, "POST", "/personal/mcp", token, body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"]["url"].as_str().unwrap().to_string()
}

/// The owner shares "chat" with `grantee`; the share's answer.
async fn share(server: &Server, token: &str, grantee: &str) -> Value {
    let body = json!({ "grantee": grantee, "permissions": ["chat"] });
    let reply = api(server, "POST", "/api/shares", token, body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"].clone()
}

async fn unshare(server: &Server, token: &str, grantee: &str) {
    let body = json!({ "grantee": grantee });
    let reply = api(server, "DELETE", "/api/shares", token, body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// A URL's path on this server (the public origin is the listening address).
fn local(server: &Server, url: &str) -> String {
    let path = &url[url.find("/mcp/").expect("an MCP URL has /mcp/<secret>")..];
    server.url(path)
}

/// The secret in an MCP URL.
fn secret(url: &str) -> &str {
    &url[url.find("/mcp/").unwrap() + "/mcp/".len()..]
}

/// `tools/list` through an MCP URL: the status, and the names when it answered.
async fn tools_at(server: &Server, url: &str) -> (u16, Vec<String>) {
    let reply = rpc(&local(server, url), None, "tools/list", json!({})).await;
    match reply.status {
        200 => (200, listed_tools(&reply.json())),
        status => (status, Vec::new()),
    }
}

async fn call_at(server: &Server, url: &str, name: &str, arguments: Value) -> Reply {
    let params = json!({ "name": name, "arguments": arguments });
    rpc(&local(server, url), None, "tools/call", params).await
}

/// Finding 4 as written: a grantee with `chat` asks for the owner's personal URL. They
/// used to receive the owner's own secret (which also carries the owner's external MCP
/// servers and their credentials), and it kept answering after the owner unshared. Now
/// they get a URL of their own, reaching the owner's data tools only, and it dies with
/// the share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grantee_gets_a_url_of_their_own_that_dies_with_the_share() {
    let remote = Remote::start();
    let logs = TempDir::new("shares-logs");
    let log_path = logs.0.join("server.log");
    let server = Server::start_logging(
        &[
            ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
            ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
            ("RUST_LOG", "trace"),
        ],
        std::fs::File::create(&log_path).unwrap(),
    );
    let (owner, owner_token) = sign_up(&server, "owner@example.com").await;
    let (friend, friend_token) = sign_up(&server, "friend@example.com").await;

    // The owner's data, external server and own URL.
    let mut headers = bearer(&owner_token);
    headers.push(("content-type".into(), "text/csv".into()));
    let uploaded = send(
        "POST",
        &server.url("/api/data/health"),
        &headers,
        Some(CSV.into()),
    )
    .await;
    assert!(uploaded.status < 300, "{}", uploaded.body);
    let registered = api(
        &server,
        "POST",
        "/api/user/mcp-servers",
        &owner_token,
        json!({ "name": "shop", "url": remote.url(), "auth": {"type": "BEARER", "token": REMOTE_TOKEN} }),
    )
    .await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    let owners_url = personal_url(&server, &owner_token, json!({})).await;
    let (status, owners_tools) = tools_at(&server, &owners_url).await;
    assert_eq!(status, 200);
    assert!(
        owners_tools.contains(&"mcp__shop__lookup_order".to_string()),
        "the owner's own URL carries their servers: {owners_tools:?}"
    );

    // Before any share: refused. After it: a URL of the grantee's own.
    let refused = api(
        &server,
        "POST",
        "/personal/mcp",
        &friend_token,
        json!({ "user_id": owner }),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let shared = share(&server, &owner_token, "friend@example.com").await;
    assert_eq!(shared["grant_url_active"], false, "{shared}");
    let grant = personal_url(&server, &friend_token, json!({ "user_id": owner })).await;
    assert_ne!(grant, owners_url, "the grantee never gets the owner's URL");
    assert_ne!(secret(&grant), secret(&owners_url));
    assert_eq!(
        personal_url(&server, &friend_token, json!({ "user_id": owner })).await,
        grant,
        "asking again returns the same grant URL"
    );
    assert_eq!(
        personal_url(&server, &owner_token, json!({})).await,
        owners_url,
        "the owner's own URL is unchanged"
    );
    let listed = share(&server, &owner_token, "friend@example.com").await;
    assert_eq!(listed["grant_url_active"], true, "{listed}");

    // Through the grant: the owner's data tools, none of the owner's servers.
    let (status, tools) = tools_at(&server, &grant).await;
    assert_eq!(status, 200);
    assert!(
        tools.contains(&"query_health_indicators".to_string()),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|name| name.starts_with("mcp__")),
        "no external-server tool through a share: {tools:?}"
    );
    let readings = call_at(&server, &grant, "query_health_indicators", json!({})).await;
    assert_eq!(readings.status, 200, "{}", readings.body);
    let result = &readings.json()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["indicator_count"], 2,
        "the owner's readings: {result}"
    );
    let forwarded = call_at(
        &server,
        &grant,
        "mcp__shop__lookup_order",
        json!({ "order_number": "A-1" }),
    )
    .await;
    assert!(
        !forwarded.body.contains("shipped"),
        "the owner's server was called through a share: {}",
        forwarded.body
    );
    let forwarded = forwarded.json();
    assert!(
        forwarded.get("error").is_some() || forwarded["result"]["isError"] == true,
        "an external tool is not callable through a share: {forwarded}"
    );

    // The grant's secret is no credential anywhere but /mcp/{secret}.
    for (method, path) in [
        ("POST", "/personal/mcp"),
        ("POST", "/api/shares"),
        ("GET", "/api/user/mcp-servers"),
        ("GET", "/api/data"),
    ] {
        let reply = api(&server, method, path, secret(&grant), json!({})).await;
        assert_eq!(reply.status, 401, "{method} {path}: {}", reply.body);
    }

    // Unsharing ends the grant at once; the owner's URL still works.
    unshare(&server, &owner_token, "friend@example.com").await;
    assert_eq!(
        tools_at(&server, &grant).await.0,
        404,
        "the grant URL after unshare"
    );
    assert_eq!(
        call_at(&server, &grant, "query_health_indicators", json!({}))
            .await
            .status,
        404
    );
    let (status, owners_tools) = tools_at(&server, &owners_url).await;
    assert_eq!(status, 200, "the owner's own URL still works");
    assert!(owners_tools.contains(&"mcp__shop__lookup_order".to_string()));
    let refused = api(
        &server,
        "POST",
        "/personal/mcp",
        &friend_token,
        json!({ "user_id": owner }),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);

    // Sharing again does not revive the old URL; the grantee gets a new one.
    let reshared = share(&server, &owner_token, "friend@example.com").await;
    assert_eq!(reshared["grant_url_active"], false, "{reshared}");
    assert_eq!(tools_at(&server, &grant).await.0, 404);
    let renewed = personal_url(&server, &friend_token, json!({ "user_id": owner })).await;
    assert_ne!(renewed, grant);
    assert_ne!(renewed, owners_url);
    assert_eq!(tools_at(&server, &renewed).await.0, 200);

    // Nothing of it in the log: no URL secret, no account id.
    let logged = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        logged.contains("POST /mcp/{secret}"),
        "the log was captured: {logged}"
    );
    for (what, value) in [
        ("grant secret", secret(&grant)),
        ("renewed grant secret", secret(&renewed)),
        ("owner's URL secret", secret(&owners_url)),
        ("owner's id", owner.as_str()),
        ("grantee's id", friend.as_str()),
    ] {
        assert!(!logged.contains(value), "the log contains the {what}");
    }
}

/// The grantee ends their own URL; the share stays, and neither the owner's URL nor the
/// owner revoking it touches the grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grantee_revokes_their_own_url_and_the_owners_url_is_untouched() {
    let server = Server::start(&[]);
    let (owner, owner_token) = sign_up(&server, "owner@example.com").await;
    let (_, friend_token) = sign_up(&server, "friend@example.com").await;
    share(&server, &owner_token, "friend@example.com").await;
    let owners_url = personal_url(&server, &owner_token, json!({})).await;
    let grant = personal_url(&server, &friend_token, json!({ "user_id": owner })).await;

    let revoked = api(
        &server,
        "DELETE",
        "/personal/mcp",
        &friend_token,
        json!({ "user_id": owner }),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_eq!(revoked.json()["data"]["revoked"], true);
    assert_eq!(tools_at(&server, &grant).await.0, 404);
    assert_eq!(
        tools_at(&server, &owners_url).await.0,
        200,
        "revoking a grant never disconnects the owner"
    );
    let listed = share(&server, &owner_token, "friend@example.com").await;
    assert_eq!(listed["grant_url_active"], false, "{listed}");

    // The share stays: the grantee may ask again, for a new URL.
    let again = personal_url(&server, &friend_token, json!({ "user_id": owner })).await;
    assert_ne!(again, grant);
    assert_eq!(tools_at(&server, &again).await.0, 200);

    // The owner revoking their own URL leaves the grantee's alone.
    let own_revoked = api(&server, "DELETE", "/personal/mcp", &owner_token, json!({})).await;
    assert_eq!(own_revoked.json()["data"]["revoked"], true);
    assert_eq!(tools_at(&server, &owners_url).await.0, 404);
    assert_eq!(tools_at(&server, &again).await.0, 200);

    // An owner id no account can have is refused before it reaches the store.
    let long = json!({ "user_id": "u".repeat(4096) });
    let refused = api(
        &server,
        "POST",
        "/personal/mcp",
        &friend_token,
        long.clone(),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let revoked = api(&server, "DELETE", "/personal/mcp", &friend_token, long).await;
    assert_eq!(revoked.json()["data"]["revoked"], false, "{}", revoked.body);
}
