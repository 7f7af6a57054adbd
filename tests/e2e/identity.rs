//! Who is calling, end to end (A7, A8, B1-B4): accounts, JWTs, personal and
//! temporary MCP URLs, sharing, agent scoping, the login prompt, forged tokens, and
//! a whole session's log output searched for secrets.

use e2e::{Reply, Server, TempDir, bearer, get, in_process, listed_tools, modern, rpc, send};
use mirobody::identity::{Jwts, Keys};
use serde_json::{Value, json};

fn json_headers(token: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(token) = token {
        headers.extend(bearer(token));
    }
    headers
}

async fn post(server: &Server, path: &str, token: Option<&str>, body: Value) -> Reply {
    send(
        "POST",
        &server.url(path),
        &json_headers(token),
        Some(body.to_string()),
    )
    .await
}

async fn sign_up(server: &Server, email: &str, password: &str) -> (String, String) {
    let reply = post(
        server,
        "/auth/signup",
        None,
        json!({ "email": email, "password": password }),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let data = &reply.json()["data"];
    (
        data["user_id"].as_str().unwrap().to_string(),
        data["token"].as_str().unwrap().to_string(),
    )
}

async fn sign_in(server: &Server, email: &str, password: &str) -> Reply {
    let body = json!({ "email": email, "password": password });
    post(server, "/auth/signin", None, body).await
}

/// The tools `url` (`/mcp` or a personal URL) lists.
async fn names(url: &str, token: Option<&str>) -> Vec<String> {
    let reply = rpc(url, token, "tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    listed_tools(&reply.json())
}

/// A personal URL's path on this server (the public origin is the listening address).
fn local(server: &Server, url: &str) -> String {
    let path = &url[url.find("/mcp/").expect("a personal URL has /mcp/<secret>")..];
    server.url(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a7_b1_sign_up_sign_in_and_a_personal_url_through_its_life() {
    let server = Server::start(&[]);
    let (user, _) = sign_up(&server, "Alice@Example.com", "correct horse battery").await;
    let again = post(
        &server,
        "/auth/signup",
        None,
        json!({ "email": "alice@example.com", "password": "another password" }),
    )
    .await;
    assert_eq!(again.status, 409, "one account per e-mail: {}", again.body);
    let wrong = sign_in(&server, "alice@example.com", "wrong password!").await;
    assert_eq!(wrong.status, 401);
    let signed_in = sign_in(&server, "ALICE@example.com ", "correct horse battery").await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let token = signed_in.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();

    // A tool call with the JWT acts for the account (no login prompt).
    let call = rpc(
        &server.url("/mcp"),
        Some(&token),
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs429358" } }),
    )
    .await;
    let text = call.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("No genotype data yet"), "{text}");

    // B1: the same URL until revoked, in the documented shape.
    let first = post(&server, "/personal/mcp", Some(&token), json!({})).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let body = first.json();
    assert_eq!(
        (body["code"].clone(), body["msg"].clone()),
        (json!(0), json!("ok"))
    );
    let url = body["data"]["url"].as_str().unwrap().to_string();
    let secret = url.rsplit('/').next().unwrap();
    assert_eq!(secret.len(), 128, "96 random bytes, URL-safe");
    let second = post(&server, "/personal/mcp", Some(&token), json!({})).await;
    assert_eq!(
        second.json()["data"]["url"],
        url,
        "asking again returns the same URL"
    );

    // The URL is the caller: tools/list is gated for this (empty) account, tools/call acts for it.
    let listed = names(&local(&server, &url), None).await;
    assert!(
        !listed.contains(&"get_genetic_data".into()),
        "gated: {listed:?}"
    );
    let genotypes = "rs429358\t19\t44908684\tTC\n";
    let mut headers = json_headers(Some(&token));
    headers[0].1 = "text/plain".into();
    assert_eq!(
        send(
            "POST",
            &server.url("/api/data/genotype"),
            &headers,
            Some(genotypes.into())
        )
        .await
        .status,
        200
    );
    assert!(
        names(&local(&server, &url), None)
            .await
            .contains(&"get_genetic_data".into())
    );
    let via_url = rpc(
        &local(&server, &url),
        None,
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs429358" } }),
    )
    .await;
    assert_eq!(
        via_url.json()["result"]["structuredContent"]["variants"][0]["g"],
        "TC",
        "{}",
        via_url.body
    );

    // Revoked: refused, and the next request mints a different URL.
    let revoked = send(
        "DELETE",
        &server.url("/personal/mcp"),
        &json_headers(Some(&token)),
        None,
    )
    .await;
    assert_eq!(revoked.json()["data"]["revoked"], true, "{}", revoked.body);
    assert_eq!(
        rpc(&local(&server, &url), None, "tools/list", json!({}))
            .await
            .status,
        404
    );
    let fresh = post(&server, "/personal/mcp", Some(&token), json!({})).await;
    assert_ne!(fresh.json()["data"]["url"], url);
    let _ = user;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b2_a_url_for_another_account_needs_its_chat_share() {
    let server = Server::start(&[]);
    let (owner, owner_token) = sign_up(&server, "owner@example.com", "owner password 1").await;
    let (_, friend_token) = sign_up(&server, "friend@example.com", "friend password 1").await;
    let refused = post(
        &server,
        "/personal/mcp",
        Some(&friend_token),
        json!({ "user_id": owner }),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_ne!(refused.json()["code"], 0);
    let shared = post(
        &server,
        "/api/shares",
        Some(&owner_token),
        json!({ "grantee": "friend@example.com", "permissions": ["chat"] }),
    )
    .await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    // The share waits as an invitation until the friend accepts it.
    server
        .accept_invitations("friend@example.com", &friend_token)
        .await;
    let allowed = post(
        &server,
        "/personal/mcp",
        Some(&friend_token),
        json!({ "user_id": owner }),
    )
    .await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    let owners_own = post(&server, "/personal/mcp", Some(&owner_token), json!({})).await;
    // This used to be the owner's own URL; it is the grantee's own
    // delegated URL now (`security_shares.rs` follows it through its life).
    assert_ne!(
        allowed.json()["data"]["url"],
        owners_own.json()["data"]["url"],
        "the grantee's own URL, never the owner's"
    );
    let unshared = send(
        "DELETE",
        &server.url("/api/shares"),
        &json_headers(Some(&owner_token)),
        Some(json!({ "grantee": "friend@example.com" }).to_string()),
    )
    .await;
    assert_eq!(unshared.status, 200);
    assert_eq!(
        post(
            &server,
            "/personal/mcp",
            Some(&friend_token),
            json!({ "user_id": owner })
        )
        .await
        .status,
        403
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a8_agent_urls_are_scoped_on_list_and_call() {
    let server = Server::start(&[
        (
            "ALLOWED_TOOLS_ALLOWER",
            "test_simple_text,test_image_content",
        ),
        ("DISALLOWED_TOOLS_DENIER", "test_simple_text"),
        ("ALLOWED_TOOLS_BOTH", "test_simple_text,test_image_content"),
        ("DISALLOWED_TOOLS_BOTH", "test_image_content"),
    ]);
    let temp = |agent: &str| {
        server
            .command(&["temp-url", "u_agentowner", "session-1", agent])
            .trim()
            .to_string()
    };
    let allower = local(&server, &temp("allower"));
    assert_eq!(
        names(&allower, None).await,
        vec!["test_image_content", "test_simple_text"]
    );
    let denier = names(&local(&server, &temp("Denier")), None).await;
    assert!(
        !denier.contains(&"test_simple_text".into())
            && denier.contains(&"test_audio_content".into()),
        "{denier:?}"
    );
    assert_eq!(
        names(&local(&server, &temp("both")), None).await,
        vec!["test_simple_text"]
    );
    assert!(
        names(&local(&server, &temp("nobody")), None)
            .await
            .is_empty(),
        "an agent with no lists sees no tools"
    );
    let hidden = rpc(
        &allower,
        None,
        "tools/call",
        json!({ "name": "test_audio_content", "arguments": {} }),
    )
    .await;
    assert_eq!(
        hidden.json()["error"]["code"],
        -32602,
        "a hidden tool is not callable either: {}",
        hidden.body
    );
    let shown = rpc(
        &allower,
        None,
        "tools/call",
        json!({ "name": "test_simple_text", "arguments": {} }),
    )
    .await;
    assert!(
        shown.json()["result"]["content"][0]["text"].is_string(),
        "{}",
        shown.body
    );
}

#[tokio::test]
async fn a7_an_anonymous_call_gets_the_login_prompt_and_a_pollable_state() {
    let server = Server::start(&[("MCP_PUBLIC_URL", "https://mcp.example.test")]);
    let reply = rpc(
        &server.url("/mcp"),
        None,
        "tools/call",
        json!({ "name": "query_health_indicators", "arguments": {} }),
    )
    .await;
    let result = &reply.json()["result"];
    assert_eq!(
        result["isError"], false,
        "the call succeeds with a prompt: {}",
        reply.body
    );
    let prompt: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(prompt["success"], true);
    assert!(
        prompt["authorization_url"]
            .as_str()
            .unwrap()
            .starts_with("https://mcp.example.test/mcplogin?oauth_params="),
        "{prompt}"
    );
    assert_eq!(prompt["auto_open_browser"], true);
    assert_eq!(
        (
            prompt["auto_polling"]["enabled"].clone(),
            prompt["auto_polling"]["check_interval"].clone()
        ),
        (json!(true), json!(10))
    );
    let state = prompt["auto_polling"]["state"].as_str().unwrap();
    assert!(
        prompt["authorization_url"]
            .as_str()
            .unwrap()
            .contains(state)
    );
    // The prompt carries a user code to show and a poll URL with
    // a poll secret that the link does not carry; the poll needs that secret.
    let code = prompt["user_code"].as_str().unwrap();
    assert!(
        code.len() == 9
            && code.chars().enumerate().all(|(i, c)| if i == 4 {
                c == '-'
            } else {
                "BCDFGHJKLMNPQRSTVWXZ".contains(c)
            }),
        "{code}"
    );
    let poll_secret = prompt["auto_polling"]["poll_secret"].as_str().unwrap();
    let poll_url = prompt["auto_polling"]["poll_url"].as_str().unwrap();
    assert_eq!(
        poll_url,
        format!("https://mcp.example.test/oauth2/check_state/{state}?poll_secret={poll_secret}")
    );
    assert!(
        !prompt["authorization_url"]
            .as_str()
            .unwrap()
            .contains(poll_secret)
    );
    let poll = get(&server.url(&poll_url[poll_url.find("/oauth2/").unwrap()..])).await;
    assert_eq!(
        (poll.status, poll.json()["status"].clone()),
        (200, json!("pending"))
    );
    let bare = get(&server.url(&format!("/oauth2/check_state/{state}"))).await;
    assert_eq!(bare.status, 400, "without the poll secret: {}", bare.body);
    let unknown = get(&server.url("/oauth2/check_state/nope?poll_secret=x")).await;
    assert_eq!(
        (unknown.status, unknown.json()["status"].clone()),
        (404, json!("not_found"))
    );
}

#[tokio::test]
async fn forged_and_stale_jwts_are_refused() {
    let data = TempDir::new("forged");
    let data_dir = data.0.display().to_string();
    let server = Server::start(&[("MIROBODY_DATA_DIR", &data_dir)]);
    let keys = Keys::dev(&data.0).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let origin = server.origin();
    let good = Jwts::for_origin(&keys.jwt, &origin);
    assert_eq!(
        rpc(
            &server.url("/mcp"),
            Some(&good.mint("u1", 600, now)),
            "tools/list",
            json!({})
        )
        .await
        .status,
        200
    );
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
    };
    let payload = b64(&json!({ "sub": "u1", "kind": "session", "iss": origin, "aud": origin, "iat": now, "nbf": now, "exp": now + 600 }).to_string());
    let forged = [
        (
            "wrong key",
            Jwts::for_origin(&[9; 32], &origin).mint("u1", 600, now),
        ),
        (
            "wrong audience",
            Jwts::new(&keys.jwt, &origin, "someone-else").mint("u1", 600, now),
        ),
        (
            "wrong issuer",
            Jwts::new(&keys.jwt, "https://evil.example", &origin).mint("u1", 600, now),
        ),
        ("expired", good.mint("u1", 60, now - 3600)),
        (
            "alg none",
            format!("{}.{payload}.", b64(r#"{"alg":"none","typ":"JWT"}"#)),
        ),
        ("RS256 header on an HMAC signature", {
            let real = good.mint("u1", 600, now);
            let parts: Vec<&str> = real.split('.').collect();
            format!(
                "{}.{}.{}",
                b64(r#"{"alg":"RS256","typ":"JWT"}"#),
                parts[1],
                parts[2]
            )
        }),
        ("not a JWT", "hello".to_string()),
    ];
    for (what, token) in forged {
        let reply = rpc(&server.url("/mcp"), Some(&token), "tools/list", json!({})).await;
        assert_eq!(reply.status, 401, "{what} must be refused: {}", reply.body);
        assert!(
            reply
                .header("www-authenticate")
                .unwrap()
                .starts_with("Bearer"),
            "{what}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b4_a_whole_session_logs_no_token_url_secret_or_password() {
    let log_dir = TempDir::new("logs");
    let log_path = log_dir.0.join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = Server::start_logging(&[("RUST_LOG", "trace")], log);
    let password = "very secret password 42";
    let (_, token) = sign_up(&server, "logs@example.com", password).await;
    sign_in(&server, "logs@example.com", password).await;
    sign_in(&server, "logs@example.com", "wrong but secret pw").await;
    let url = post(&server, "/personal/mcp", Some(&token), json!({}))
        .await
        .json()["data"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let secret = url.rsplit('/').next().unwrap().to_string();
    names(&local(&server, &url), None).await;
    rpc(
        &local(&server, &url),
        None,
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs1" } }),
    )
    .await;
    rpc(
        &server.url("/mcp"),
        Some(&token),
        "tools/call",
        json!({ "name": "query_health_indicators", "arguments": {} }),
    )
    .await;
    rpc(
        &server.url("/mcp"),
        Some("forged.token.value"),
        "tools/list",
        json!({}),
    )
    .await;
    let temp = server.command(&["temp-url", "u_x", "s", "agent"]);
    let temp_secret = temp.trim().rsplit('/').next().unwrap().to_string();
    rpc(&local(&server, temp.trim()), None, "tools/list", json!({})).await;
    drop(server);
    let logged = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        logged.contains("POST /mcp/{secret}"),
        "the log was captured: {logged}"
    );
    for (what, value) in [
        ("JWT", token.as_str()),
        ("URL secret", &secret),
        ("temporary URL secret", &temp_secret),
        ("password", password),
        ("wrong password", "wrong but secret pw"),
        ("forged token", "forged.token.value"),
    ] {
        assert!(!logged.contains(value), "the log contains the {what}");
    }
}

/// B3 without sleeping: the app runs in-process with a fake clock (no socket).
#[tokio::test]
async fn b3_a_temporary_url_expires_after_ten_minutes() {
    let process = in_process(&[("ALLOWED_TOOLS_HELPER", "get_genetic_data")]);
    let genotype = mirobody::domain::Genotype {
        rsid: "rs1".into(),
        chromosome: "1".into(),
        position: 5,
        genotype: "AA".into(),
    };
    let genome = mirobody::domain::Genome::from_genotypes(&[genotype]).unwrap();
    mirobody::store::GenomeStore::replace_genome(
        process.store.as_ref(),
        "u_temp",
        &genome,
        "test",
        0,
    )
    .await
    .unwrap();
    let url = process
        .app
        .temporary_url("u_temp", "session-9", "helper")
        .await
        .unwrap();
    let path = url[url.find("/mcp/").unwrap()..].to_string();
    let list = || {
        let (mut headers, body) = modern(1, "tools/list", json!({}));
        headers.push(("content-type".into(), "application/json".into()));
        let process = &process;
        let path = path.as_str();
        async move { process.send("POST", path, &headers, body.to_string()).await }
    };
    let fresh = list().await;
    assert_eq!(fresh.status, 200);
    assert_eq!(
        listed_tools(&fresh.json()),
        vec!["get_genetic_data"],
        "anonymous-looking URL, yet scoped to its agent"
    );
    process.clock.advance(599);
    assert_eq!(list().await.status, 200, "still valid at 9:59");
    process.clock.advance(2);
    assert_eq!(list().await.status, 404, "expired after ten minutes");
}
