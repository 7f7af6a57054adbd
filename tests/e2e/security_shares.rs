//! A share (B2) hands the grantee a delegated URL of their own,
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
/// Uploads [`CSV`] (the owner's labs) as the holder of `token`.
async fn upload_labs(server: &Server, token: &str) {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "text/csv".into()));
    let uploaded = send(
        "POST",
        &server.url("/api/data/health"),
        &headers,
        Some(CSV.into()),
    )
    .await;
    assert!(uploaded.status < 300, "{}", uploaded.body);
}

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
    upload_labs(&server, &owner_token).await;
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
    assert_eq!(shared["status"], "invited", "{shared}");
    // An invitation grants nothing until the grantee accepts it.
    let waiting = api(
        &server,
        "POST",
        "/personal/mcp",
        &friend_token,
        json!({ "user_id": owner }),
    )
    .await;
    assert_eq!(waiting.status, 403, "{}", waiting.body);
    server
        .accept_invitations("friend@example.com", &friend_token)
        .await;
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
    assert_eq!(listed["status"], "accepted", "{listed}");

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
    assert_eq!(reshared["status"], "invited", "{reshared}");
    assert_eq!(tools_at(&server, &grant).await.0, 404);
    server
        .accept_invitations("friend@example.com", &friend_token)
        .await;
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
    server
        .accept_invitations("friend@example.com", &friend_token)
        .await;
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

// ---------------------------------------------------------------- invitations

/// `GET /api/shares` as `token` sees it.
async fn shares_seen(server: &Server, token: &str) -> Value {
    let reply = api(server, "GET", "/api/shares", token, json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"].clone()
}

/// `query_health_indicators` for HbA1c through an MCP URL: the answer's text.
async fn hba1c_at(server: &Server, url: &str) -> String {
    let reply = call_at(
        server,
        url,
        "query_health_indicators",
        json!({ "keywords": ["HbA1c"] }),
    )
    .await;
    reply.body
}

/// The address takeover: an attacker signs up as the doctor's address before
/// the doctor does; the patient shares with that address. The attacker gets nothing:
/// no listing, no invitation, no delegated URL, no data (the share waits as an
/// invitation, and only a confirmed address may accept). The real doctor, whose address
/// it is, takes the account over with "forgot password" (the link reaches the doctor's
/// mailbox, which also confirms the address and ends the attacker's sessions), accepts,
/// and reads the patient's HbA1c.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_1_a_share_to_an_address_someone_else_registered_first_grants_them_nothing() {
    let server = Server::start(&[]);
    let doctor = "dr.house@clinic.example";
    let (_, attacker_token) = sign_up(&server, doctor).await;
    let (patient, patient_token) = sign_up(&server, "patient@example.com").await;
    upload_labs(&server, &patient_token).await;

    let shared = share(&server, &patient_token, doctor).await;
    assert_eq!(shared["status"], "invited", "{shared}");

    // The attacker: no share received, no invitation shown (unconfirmed), no URL.
    let seen = shares_seen(&server, &attacker_token).await;
    assert_eq!(seen["received"], json!([]), "{seen}");
    assert_eq!(seen["invitations"], json!([]), "{seen}");
    assert_eq!(seen["email_confirmed"], false, "{seen}");
    let minted = api(
        &server,
        "POST",
        "/personal/mcp",
        &attacker_token,
        json!({ "user_id": patient }),
    )
    .await;
    assert_eq!(minted.status, 403, "{}", minted.body);
    // Even holding an invitation's id (it is only ever in the patient's store and the
    // doctor's mailbox) an unconfirmed account cannot accept.
    let accepted = api(
        &server,
        "POST",
        "/api/shares/accept",
        &attacker_token,
        json!({ "id": "guessed-invitation-id" }),
    )
    .await;
    assert_eq!(accepted.status, 403, "{}", accepted.body);
    // Through the attacker's own URL: the attacker's (empty) data, never the patient's.
    let own = personal_url(&server, &attacker_token, json!({})).await;
    let answer = hba1c_at(&server, &own).await;
    assert!(!answer.contains("6.1"), "{answer}");

    // The doctor: the address is taken, so "forgot password"; the link reaches the
    // doctor's mailbox (the mail directory stands for it).
    let taken = post_json(
        &server.url("/auth/signup"),
        &[],
        &json!({ "email": doctor, "password": PASSWORD }),
    )
    .await;
    assert_eq!(taken.status, 409, "{}", taken.body);
    let asked = post_json(
        &server.url("/auth/forgot"),
        &[],
        &json!({ "email": doctor }),
    )
    .await;
    assert_eq!(asked.status, 202, "{}", asked.body);
    let token = server.mailed_token(doctor, "/console/reset").await;
    let doctors_password = "the doctor's own new password";
    let reset = post_json(
        &server.url("/auth/reset"),
        &[],
        &json!({ "token": token, "new_password": doctors_password }),
    )
    .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    // The attacker's session and own URL ended with the reset.
    let after = api(&server, "GET", "/api/shares", &attacker_token, json!({})).await;
    assert_eq!(after.status, 401, "{}", after.body);
    assert_eq!(tools_at(&server, &own).await.0, 404);

    // The doctor signs in, is confirmed by the reset, accepts, and reads the HbA1c.
    let signed_in = post_json(
        &server.url("/auth/signin"),
        &[],
        &json!({ "email": doctor, "password": doctors_password }),
    )
    .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let doctor_token = signed_in.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let seen = shares_seen(&server, &doctor_token).await;
    assert_eq!(seen["email_confirmed"], true, "{seen}");
    assert_eq!(
        seen["invitations"][0]["from"], "patient@example.com",
        "{seen}"
    );
    let owners = server.accept_invitations(doctor, &doctor_token).await;
    assert_eq!(owners[0]["user_id"], patient.as_str());
    let grant = personal_url(&server, &doctor_token, json!({ "user_id": patient })).await;
    let answer = hba1c_at(&server, &grant).await;
    assert!(answer.contains("6.1"), "{answer}");
    // The patient sees who accepted.
    let patients = shares_seen(&server, &patient_token).await;
    assert_eq!(
        patients["granted"],
        json!([{ "email": doctor, "permissions": ["chat"], "status": "accepted" }]),
        "{patients}"
    );
}

/// Share, list and unshare answer alike for an address with a
/// confirmed account, one with an unconfirmed account and one with none; no answer
/// carries an account id; a user id given as grantee is refused alike whether or not
/// it exists, and never answers an e-mail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_4_share_list_and_unshare_answer_alike_for_every_address() {
    let server = Server::start(&[]);
    let (owner, owner_token) = sign_up(&server, "owner@example.com").await;
    let (confirmed_id, _) = sign_up(&server, "confirmed@example.com").await;
    server.confirm_address("confirmed@example.com").await;
    let (unconfirmed_id, _) = sign_up(&server, "unconfirmed@example.com").await;
    let addresses = [
        "confirmed@example.com",
        "unconfirmed@example.com",
        "nobody@example.com",
    ];
    let body_for = |reply: &Reply, address: &str| reply.body.replace(address, "<address>");

    let mut shared = Vec::new();
    for address in addresses {
        let body = json!({ "grantee": address, "permissions": ["chat"] });
        let reply = api(&server, "POST", "/api/shares", &owner_token, body).await;
        shared.push((reply.status, body_for(&reply, address)));
    }
    assert!(shared.iter().all(|s| s == &shared[0]), "{shared:?}");
    assert_eq!(shared[0].0, 200);

    let listed = shares_seen(&server, &owner_token).await;
    let granted = listed["granted"].as_array().unwrap();
    assert_eq!(granted.len(), 3, "{listed}");
    for entry in granted {
        let address = entry["email"].as_str().unwrap();
        let mut shape = entry.clone();
        shape["email"] = json!("<address>");
        shape["invited_at"] = json!(0);
        assert_eq!(
            shape,
            json!({ "email": "<address>", "permissions": ["chat"], "status": "pending", "invited_at": 0 }),
            "{address}"
        );
    }
    for id in [&owner, &confirmed_id, &unconfirmed_id] {
        assert!(!listed.to_string().contains(id.as_str()), "{listed}");
    }

    let mut unshared = Vec::new();
    for address in addresses {
        let reply = api(
            &server,
            "DELETE",
            "/api/shares",
            &owner_token,
            json!({ "grantee": address }),
        )
        .await;
        unshared.push((reply.status, body_for(&reply, address)));
    }
    assert!(unshared.iter().all(|s| s == &unshared[0]), "{unshared:?}");
    assert_eq!(unshared[0].0, 200);

    // A user id as grantee: the same refusal for an account's id and a made-up one.
    let mut by_id = Vec::new();
    for (method, id) in [
        ("POST", confirmed_id.as_str()),
        ("POST", "u_doesnotexist00"),
        ("DELETE", confirmed_id.as_str()),
        ("DELETE", "u_doesnotexist00"),
    ] {
        let body = json!({ "grantee": id, "permissions": ["chat"] });
        let reply = api(&server, method, "/api/shares", &owner_token, body).await;
        assert!(
            !reply.body.contains("confirmed@example.com"),
            "{}",
            reply.body
        );
        by_id.push((method, reply.status, reply.body.replace(id, "<id>")));
    }
    assert_eq!(by_id[0].1, 400);
    assert_eq!(by_id[0], by_id[1]);
    assert_eq!(by_id[2], by_id[3]);
}

/// The whole e-mail flow, end to end through the local mail directory: sign
/// up (a confirmation mail), confirm (the link works once), share (an invitation mail),
/// accept, forgot password (the same answer for an unknown address, which gets no mail),
/// reset (the link works once; every session and the personal URL end; the old
/// password is refused). No message carries health data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_mail_flow_runs_through_the_mail_directory() {
    let server = Server::start(&[]);
    let (owner, owner_token) = sign_up(&server, "alice@example.com").await;
    upload_labs(&server, &owner_token).await;

    // Sign up: an unconfirmed account and one confirmation mail.
    let body = json!({ "email": "bob@example.com", "password": PASSWORD });
    let signed_up = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(signed_up.status, 201, "{}", signed_up.body);
    let data = signed_up.json()["data"].clone();
    assert_eq!(data["email_confirmed"], false, "{data}");
    assert_eq!(data["confirmation_sent"], true, "{data}");
    let bob_token = data["token"].as_str().unwrap().to_string();
    assert_eq!(server.mails_to("bob@example.com").len(), 1);
    let token = server
        .mailed_token("bob@example.com", "/console/confirm")
        .await;
    let confirm = |token: String| {
        let server = &server;
        async move {
            post_json(
                &server.url("/auth/confirm"),
                &[],
                &json!({ "token": token }),
            )
            .await
        }
    };
    assert_eq!(confirm(token.clone()).await.status, 200);
    let again = confirm(token).await;
    assert_eq!(
        again.status, 400,
        "a confirmation link works once: {}",
        again.body
    );
    assert_eq!(
        shares_seen(&server, &bob_token).await["email_confirmed"],
        true
    );

    // Share: an invitation mail to Bob, naming Alice, linking to the console.
    share(&server, &owner_token, "bob@example.com").await;
    let invitation = server
        .mails_to("bob@example.com")
        .into_iter()
        .find(|mail| mail.contains("alice@example.com"))
        .expect("an invitation mail");
    assert!(invitation.contains("/console/access"), "{invitation}");
    let owners = server
        .accept_invitations("bob@example.com", &bob_token)
        .await;
    assert_eq!(
        owners,
        vec![json!({ "user_id": owner, "email": "alice@example.com" })]
    );
    let grant = personal_url(&server, &bob_token, json!({ "user_id": owner })).await;
    assert!(hba1c_at(&server, &grant).await.contains("6.1"));

    // Forgot password: the same answer for an unknown address, which gets no mail.
    let before = server.mails().len();
    let unknown = post_json(
        &server.url("/auth/forgot"),
        &[],
        &json!({ "email": "nobody@example.com" }),
    )
    .await;
    let known = post_json(
        &server.url("/auth/forgot"),
        &[],
        &json!({ "email": "bob@example.com" }),
    )
    .await;
    assert_eq!(unknown.status, 202);
    assert_eq!(
        (unknown.status, unknown.body.clone()),
        (known.status, known.body.clone())
    );
    let token = server
        .mailed_token("bob@example.com", "/console/reset")
        .await;
    assert_eq!(server.mails().len(), before + 1, "only Bob got a mail");
    assert!(server.mails_to("nobody@example.com").is_empty());

    // Reset: a new password, every session and Bob's URLs ended; the link works once.
    let bobs_url = personal_url(&server, &bob_token, json!({})).await;
    let new_password = "bob's brand new password";
    let reset = |token: String| {
        let server = &server;
        async move {
            post_json(
                &server.url("/auth/reset"),
                &[],
                &json!({ "token": token, "new_password": new_password }),
            )
            .await
        }
    };
    assert_eq!(reset(token.clone()).await.status, 200);
    assert_eq!(reset(token).await.status, 400, "a reset link works once");
    let after = api(&server, "GET", "/api/shares", &bob_token, json!({})).await;
    assert_eq!(after.status, 401, "the old session ended: {}", after.body);
    assert_eq!(
        tools_at(&server, &bobs_url).await.0,
        404,
        "the personal URL ended"
    );
    let old = post_json(
        &server.url("/auth/signin"),
        &[],
        &json!({ "email": "bob@example.com", "password": PASSWORD }),
    )
    .await;
    assert_eq!(old.status, 401, "{}", old.body);
    let new = post_json(
        &server.url("/auth/signin"),
        &[],
        &json!({ "email": "bob@example.com", "password": new_password }),
    )
    .await;
    assert_eq!(new.status, 200, "{}", new.body);

    // A forged or made-up link does nothing.
    let forged = post_json(
        &server.url("/auth/reset"),
        &[],
        &json!({ "token": "A".repeat(43), "new_password": "attacker chosen password" }),
    )
    .await;
    assert_eq!(forged.status, 400, "{}", forged.body);

    // No message carries health data: no indicator, value, unit or lab.
    for mail in server.mails() {
        for health in ["HbA1c", "6.1", "Glucose", "mg/dL", "City Lab"] {
            assert!(!mail.contains(health), "a mail carries {health:?}: {mail}");
        }
    }
}

/// Reset requests count against the abuse limits: past ten an hour from one source
/// the answer is 429 whatever the address; past three an hour for one address the
/// answer is unchanged and no more mail goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_requests_are_limited_per_source_and_per_address() {
    let server = Server::start(&[]);
    sign_up(&server, "carol@example.com").await;
    let ask = |email: &'static str| {
        let server = &server;
        async move { post_json(&server.url("/auth/forgot"), &[], &json!({ "email": email })).await }
    };
    for _ in 0..5 {
        assert_eq!(ask("carol@example.com").await.status, 202);
    }
    let resets = server
        .mails_to("carol@example.com")
        .iter()
        .filter(|mail| mail.contains("/console/reset?token="))
        .count();
    assert_eq!(resets, 3, "three reset mails an hour per address");
    for _ in 0..5 {
        assert_eq!(ask("nobody@example.com").await.status, 202);
    }
    let limited = ask("carol@example.com").await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert_eq!(ask("someone-else@example.com").await.status, 429);
}

// ------------------------------------------------- invitations lapse

/// An invitation nobody accepts lapses after 30 days: the invitee no longer sees it and
/// cannot accept it (a mailbox that changes hands later finds nothing waiting), the owner
/// sees it as expired, and sharing again makes a new one that can be accepted. (The
/// month passes by back-dating the stored invitation: the server runs on the real clock.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invitation_nobody_accepts_lapses_after_thirty_days() {
    use mirobody::store::{EMBEDDED_FILE, EmbeddedStore, GrantStore};
    let server = Server::start(&[]);
    let (owner_id, owner) = sign_up(&server, "owner.lapse@example.com").await;
    let invitee = "dr.lapse@clinic.example";
    let (_, token) = sign_up(&server, invitee).await;
    server.confirm_address(invitee).await;
    let share = json!({ "grantee": invitee, "permissions": ["chat"] });
    let offered = api(&server, "POST", "/api/shares", &owner, share.clone()).await;
    assert_eq!(offered.status, 200, "{}", offered.body);
    let waiting = || async {
        let listed = api(&server, "GET", "/api/shares", &token, json!({})).await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        listed.json()["data"]["invitations"].clone()
    };
    let first = waiting().await[0]["id"].as_str().unwrap().to_string();

    // A month on: the same invitation, made 30 days ago.
    let store = EmbeddedStore::open(server.data_dir().join(EMBEDDED_FILE)).unwrap();
    let mut sent = store.invitations_sent(&owner_id).await.unwrap();
    assert_eq!(sent.len(), 1);
    let mut old = sent.remove(0);
    assert_eq!(old.id, first);
    old.created_at -= 30 * 24 * 3600;
    store.put_invitation(&old).await.unwrap();

    assert_eq!(
        waiting().await,
        json!([]),
        "a lapsed invitation is not shown"
    );
    let accept = api(
        &server,
        "POST",
        "/api/shares/accept",
        &token,
        json!({ "id": first }),
    )
    .await;
    assert_eq!(accept.status, 404, "a lapsed invitation: {}", accept.body);
    let mine = api(&server, "GET", "/api/shares", &owner, json!({})).await;
    assert_eq!(
        mine.json()["data"]["granted"][0]["status"],
        "expired",
        "{}",
        mine.body
    );

    // Sharing again invites anew.
    let again = api(&server, "POST", "/api/shares", &owner, share).await;
    assert_eq!(again.status, 200, "{}", again.body);
    let fresh = waiting().await[0]["id"].as_str().unwrap().to_string();
    assert_ne!(fresh, first);
    let accept = api(
        &server,
        "POST",
        "/api/shares/accept",
        &token,
        json!({ "id": fresh }),
    )
    .await;
    assert_eq!(accept.status, 200, "{}", accept.body);
}
