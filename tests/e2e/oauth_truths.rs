//! The smaller truths of the authorization server, end to end: the
//! login poll hands its token out once and then says it was collected (also to racing
//! polls); a `client_credentials`-only client registers without `redirect_uris` (and
//! gets `unsupported_grant_type` at the token endpoint), while `authorization_code`
//! still needs them; access tokens carry exactly the metadata's `issuer`.

use base64::Engine;
use e2e::{Server, encode_form, form_of, get, modern, post_json, send};
use serde_json::{Value, json};

const PASSWORD: &str = "a long enough password";

async fn sign_up(server: &Server, email: &str) -> String {
    let body = json!({ "email": email, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()["data"]["token"].as_str().unwrap().to_string()
}

/// An anonymous `tools/call` of a data tool: its login prompt's link (path and query),
/// user code and poll path.
async fn prompt(server: &Server) -> (String, String, String) {
    let (headers, body) = modern(
        1,
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs1" } }),
    );
    let reply = post_json(&server.url("/mcp"), &headers, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = reply.json();
    let prompt = &answer["result"]["structuredContent"];
    let text = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{answer}")).to_string();
    let link = text(&prompt["authorization_url"]);
    let poll = text(&prompt["auto_polling"]["poll_url"]);
    (
        link[link.find("/mcplogin").unwrap()..].to_string(),
        text(&prompt["user_code"]),
        poll[poll.find("/oauth2/").unwrap()..].to_string(),
    )
}

/// Completes the prompt's browser step as `email`.
async fn complete(server: &Server, link: &str, user_code: &str, email: &str) {
    let page = get(&server.url(link)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (fields, cookie) = form_of(&page);
    let mut pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([
        ("email", email),
        ("password", PASSWORD),
        ("decision", "allow"),
        ("user_code", user_code),
    ]);
    let headers = [
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("cookie".to_string(), cookie),
    ];
    let done = send(
        "POST",
        &server.url("/mcplogin"),
        &headers,
        Some(encode_form(&pairs)),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.body);
}

/// A completed login prompt: its poll path, not yet polled.
async fn completed_login(server: &Server, email: &str) -> String {
    sign_up(server, email).await;
    let (link, user_code, poll) = prompt(server).await;
    complete(server, &link, &user_code, email).await;
    poll
}

fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT has a payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_poll_hands_the_token_out_once_then_says_it_was_collected() {
    let server = Server::start(&[]);
    let poll = completed_login(&server, "once@example.com").await;
    let first = get(&server.url(&poll)).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["status"], "completed");
    assert!(first.json()["token"].is_string());
    for _ in 0..2 {
        let again = get(&server.url(&poll)).await;
        assert_eq!(again.status, 410, "{}", again.body);
        assert_eq!(again.json()["status"], "collected", "{}", again.body);
        assert!(
            again.body.contains("already collected"),
            "a poller is told why: {}",
            again.body
        );
        assert!(again.json().get("token").is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_racing_polls_one_gets_the_token_and_the_others_hear_it_was_collected() {
    let server = Server::start(&[]);
    let poll = completed_login(&server, "racing@example.com").await;
    let url = server.url(&poll);
    let polls = poll_at_once(&url, 6).await;
    let winners: Vec<_> = polls.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!(winners.len(), 1, "{polls:?}");
    assert!(winners[0].1["token"].is_string());
    for (status, body) in polls.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(
            (*status, body["status"].clone()),
            (410, json!("collected")),
            "{polls:?}"
        );
    }
}

/// `n` polls of `url` at once: each one's status and JSON body.
async fn poll_at_once(url: &str, n: usize) -> Vec<(u16, Value)> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let url = url.to_string();
            tokio::spawn(async move {
                let reply = get(&url).await;
                (reply.status, reply.json())
            })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.expect("a poll task"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_credentials_client_registers_without_redirect_uris() {
    let server = Server::start(&[]);
    let register = |body: Value| {
        let url = server.url("/oauth/register");
        async move { post_json(&url, &[], &body).await }
    };
    let app = register(json!({
        "client_name": "Batch job",
        "grant_types": ["client_credentials"],
        "token_endpoint_auth_method": "client_secret_basic"
    }))
    .await;
    assert_eq!(app.status, 201, "{}", app.body);
    let registered = app.json();
    assert_eq!(registered["grant_types"], json!(["client_credentials"]));
    assert_eq!(registered["redirect_uris"], json!([]));
    assert_eq!(registered["response_types"], json!([]));
    let (id, secret) = (
        registered["client_id"].as_str().unwrap(),
        registered["client_secret"].as_str().unwrap(),
    );

    // Its grant is not offered: a clear RFC 6749 error, no token.
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    let asked = send(
        "POST",
        &server.url("/oauth/token"),
        &[
            (
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            ),
            ("authorization".into(), format!("Basic {basic}")),
        ],
        Some(encode_form(&[("grant_type", "client_credentials")])),
    )
    .await;
    assert_eq!(asked.status, 400, "{}", asked.body);
    assert_eq!(asked.json()["error"], "unsupported_grant_type");
    assert!(
        asked.json()["error_description"]
            .as_str()
            .unwrap()
            .contains("client_credentials is not supported"),
        "{}",
        asked.body
    );
    assert!(asked.json().get("access_token").is_none());

    // Bad redirect URIs are still refused, and the browser grants still need them.
    for body in [
        json!({ "grant_types": ["client_credentials"], "redirect_uris": ["javascript:alert(1)"] }),
        json!({ "grant_types": ["authorization_code"] }),
        json!({ "grant_types": ["authorization_code", "client_credentials"] }),
        json!({ "token_endpoint_auth_method": "none" }),
    ] {
        let refused = register(body.clone()).await;
        assert_eq!(
            (refused.status, refused.json()["error"].clone()),
            (400, json!("invalid_redirect_uri")),
            "{body}: {}",
            refused.body
        );
    }
    let unknown = register(json!({ "grant_types": ["password"] })).await;
    assert_eq!(unknown.json()["error"], "invalid_client_metadata");
}

/// Access tokens (and sessions) say `iss` = the authorization server metadata's
/// `issuer`, byte for byte: by default (the listening address) and with a public URL
/// written with a trailing slash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_carry_the_metadata_issuer_exactly() {
    for public in [None, Some("https://mcp.example.test/")] {
        let env: Vec<(&str, &str)> = public.map(|p| ("MCP_PUBLIC_URL", p)).into_iter().collect();
        let server = Server::start(&env);
        let metadata = get(&server.url("/.well-known/oauth-authorization-server")).await;
        let issuer = metadata.json()["issuer"].as_str().unwrap().to_string();
        let resource = get(&server.url("/.well-known/oauth-protected-resource/mcp"))
            .await
            .json();
        assert_eq!(resource["authorization_servers"], json!([issuer]));
        if let Some(public) = public {
            assert_eq!(issuer, public.trim_end_matches('/'));
        } else {
            assert_eq!(format!("{issuer}/"), server.url("/"));
        }

        let poll = completed_login(&server, "issuer@example.com").await;
        let collected = get(&server.url(&poll)).await.json();
        let access = claims(collected["token"].as_str().expect("the access token"));
        assert_eq!(access["kind"], "access", "{access}");
        assert_eq!(access["iss"], json!(issuer), "{access}");
        let session = sign_up(&server, "issuer2@example.com").await;
        assert_eq!(claims(&session)["iss"], json!(issuer));
    }
}
