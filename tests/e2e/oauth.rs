//! The OAuth 2.1 authorization server end to end (C1-C4): register a client, sign in
//! and consent through the real HTML form, exchange the code with PKCE, call `/mcp`
//! with the access token, refresh with rotation and reuse detection, introspect; the
//! login-prompt flow through `/mcplogin`; and the refusals, with RFC 6749 error codes.

use base64::Engine;
use e2e::{Reply, Server, encode_form as encode, form_of, get, post_json, rpc, send};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const VERIFIER: &str = "dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA_n4qNhtpHqZ-0123456789";
const REDIRECT: &str = "http://127.0.0.1:9/callback";

fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn decode(s: &str) -> String {
    let bytes = s.replace('+', " ").into_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(
                u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap(), 16).unwrap(),
            );
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Borrowed pairs, as `encode`, `form_post` and `authorize` take them.
fn as_pairs<K: AsRef<str>>(pairs: &[(K, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_str()))
        .collect()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    url.split_once('?')?.1.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| decode(v))
    })
}

async fn form_post(
    server: &Server,
    path: &str,
    pairs: &[(&str, &str)],
    extra: &[(String, String)],
) -> Reply {
    let mut headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    headers.extend_from_slice(extra);
    send("POST", &server.url(path), &headers, Some(encode(pairs))).await
}

async fn sign_up(server: &Server, email: &str) {
    let body = json!({ "email": email, "password": "a long enough password" });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

async fn register(server: &Server, extra: Value) -> Value {
    let mut body = json!({ "client_name": "E2E Client", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let reply = post_json(&server.url("/oauth/register"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()
}

/// Opens the authorize page and submits it; returns the redirect's Location.
async fn authorize(
    server: &Server,
    client_id: &str,
    params: &[(&str, &str)],
    email: &str,
    password: &str,
) -> String {
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("state", "xyz-state"),
    ];
    pairs.extend_from_slice(params);
    let page = get(&server.url(&format!("/oauth/authorize?{}", encode(&pairs)))).await;
    if page.status == 302 {
        return page.header("location").unwrap().to_string();
    }
    assert_eq!(page.status, 200, "{}", page.body);
    let (fields, cookie) = form_of(&page);
    let mut submit = as_pairs(&fields);
    submit.extend([
        ("email", email),
        ("password", password),
        ("decision", "allow"),
    ]);
    let reply = form_post(
        server,
        "/oauth/authorize",
        &submit,
        &[("cookie".into(), cookie)],
    )
    .await;
    assert_eq!(reply.status, 302, "{}", reply.body);
    reply.header("location").unwrap().to_string()
}

fn pkce() -> Vec<(&'static str, String)> {
    vec![
        ("code_challenge", challenge(VERIFIER)),
        ("code_challenge_method", "S256".into()),
    ]
}

async fn token(server: &Server, pairs: &[(&str, &str)]) -> Reply {
    form_post(server, "/oauth/token", pairs, &[]).await
}

/// A refresh-token grant for a public client.
async fn refresh_grant(server: &Server, refresh_token: &str, client_id: &str) -> Reply {
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", client_id),
    ];
    token(server, &pairs).await
}

async fn call_tool(server: &Server, token: Option<&str>) -> Value {
    let reply = rpc(
        &server.url("/mcp"),
        token,
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs1" } }),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c1_metadata_is_byte_identical_at_its_three_paths_and_absolute() {
    let server = Server::start(&[
        ("MCP_PUBLIC_URL", "https://mcp.example.test"),
        ("HTTP_URI_PREFIX", "/api"),
    ]);
    let first = get(&server.url("/.well-known/oauth-authorization-server")).await;
    for path in [
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/mcp-configuration",
    ] {
        assert_eq!(get(&server.url(path)).await.body, first.body, "{path}");
    }
    let doc = first.json();
    assert_eq!(
        doc["token_endpoint"],
        "https://mcp.example.test/oauth/token"
    );
    assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(
        doc["grant_types_supported"],
        json!(["authorization_code", "refresh_token"])
    );
    let prm = get(&server.url("/.well-known/oauth-protected-resource/api/mcp"))
        .await
        .json();
    assert_eq!(prm["resource"], "https://mcp.example.test/api/mcp");
    let refused = rpc(
        &server.url("/api/mcp"),
        Some("expired-or-forged"),
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(refused.status, 401);
    assert!(refused.header("www-authenticate").unwrap().contains("resource_metadata=\"https://mcp.example.test/.well-known/oauth-protected-resource/api/mcp\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c2_code_flow_with_pkce_then_mcp_refresh_rotation_and_introspection() {
    let server = Server::start(&[]);
    sign_up(&server, "oauth@example.com").await;
    let client = register(&server, json!({})).await;
    let client_id = client["client_id"].as_str().unwrap();
    assert!(
        client.get("client_secret").is_none(),
        "public clients get no secret"
    );
    let extra = pkce();
    let location = authorize(
        &server,
        client_id,
        &as_pairs(&extra),
        "oauth@example.com",
        "a long enough password",
    )
    .await;
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(
        query_param(&location, "state").as_deref(),
        Some("xyz-state")
    );
    assert_eq!(query_param(&location, "iss"), Some(server.base.clone()));
    let code = query_param(&location, "code").expect("a code");

    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("client_id", client_id),
        ("code_verifier", VERIFIER),
    ];
    let tokens = token(&server, &exchange).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let tokens = tokens.json();
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_string();

    // The access token is a caller on /mcp (no login prompt).
    let result = call_tool(&server, Some(&access)).await;
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("No genotype data"),
        "{result}"
    );
    // The code is single use.
    let replay = token(&server, &exchange).await;
    assert_eq!(
        (replay.status, replay.json()["error"].clone()),
        (400, json!("invalid_grant"))
    );

    // Refresh rotates; the old refresh token is then refused and revokes the family.
    let rotated = refresh_grant(&server, &refresh, client_id).await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    let new_refresh = rotated.json()["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(new_refresh, refresh);
    let reused = refresh_grant(&server, &refresh, client_id).await;
    assert_eq!(reused.json()["error"], "invalid_grant");
    let after_reuse = refresh_grant(&server, &new_refresh, client_id).await;
    assert_eq!(
        after_reuse.json()["error"],
        "invalid_grant",
        "reuse revoked the whole family"
    );

    // Introspection needs a confidential client: this public
    // client, and nobody at all, are refused (this used to answer `active: true` to an
    // unauthenticated call). tests/e2e/security_small.rs covers the confidential client.
    for pairs in [
        vec![("token", access.as_str())],
        vec![("token", access.as_str()), ("client_id", client_id)],
    ] {
        let refused = form_post(&server, "/oauth/introspect", &pairs, &[]).await;
        assert_eq!(refused.status, 401, "{}", refused.body);
        assert_eq!(refused.json()["error"], "invalid_client");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c2_refusals_carry_rfc6749_error_codes() {
    let server = Server::start(&[]);
    sign_up(&server, "neg@example.com").await;
    let client = register(&server, json!({})).await;
    let other = register(&server, json!({})).await;
    let client_id = client["client_id"].as_str().unwrap();
    let login = |params: Vec<(&'static str, String)>| {
        let server = &server;
        async move {
            authorize(
                server,
                client_id,
                &as_pairs(&params),
                "neg@example.com",
                "a long enough password",
            )
            .await
        }
    };
    // Plain and missing PKCE are refused at the authorize step, on a page naming the
    // error: never redirected before the user has interacted
    // (this assertion used to expect a redirect with `error=invalid_request`).
    let refused_page = |params: Vec<(&'static str, String)>| {
        let server = &server;
        async move {
            let mut pairs = vec![
                ("response_type", "code".to_string()),
                ("client_id", client_id.to_string()),
                ("redirect_uri", REDIRECT.into()),
                ("state", "xyz-state".into()),
            ];
            pairs.extend(params);
            get(&server.url(&format!("/oauth/authorize?{}", encode(&as_pairs(&pairs))))).await
        }
    };
    for params in [
        vec![
            ("code_challenge", VERIFIER.to_string()),
            ("code_challenge_method", "plain".into()),
        ],
        vec![],
    ] {
        let page = refused_page(params).await;
        assert_eq!(page.status, 400, "{}", page.body);
        assert!(page.header("location").is_none());
        assert!(page.body.contains("invalid_request"), "{}", page.body);
    }
    // An unregistered redirect URI is never redirected to.
    let page = get(&server.url(&format!(
        "/oauth/authorize?{}",
        encode(&[
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", "https://evil.example/cb"),
            ("code_challenge", &challenge(VERIFIER)),
            ("code_challenge_method", "S256")
        ])
    )))
    .await;
    assert_eq!(page.status, 400);
    assert!(page.header("location").is_none());
    let unregistered = post_json(
        &server.url("/oauth/register"),
        &[],
        &json!({ "redirect_uris": ["http://evil.example/cb"] }),
    )
    .await;
    assert_eq!(unregistered.json()["error"], "invalid_redirect_uri");

    let code_for = || async { query_param(&login(pkce()).await, "code").unwrap() };
    let exchange =
        |code: String, verifier: &'static str, client: String, resource: Option<&'static str>| {
            let server = &server;
            async move {
                let mut pairs = vec![
                    ("grant_type", "authorization_code".to_string()),
                    ("code", code),
                    ("redirect_uri", REDIRECT.into()),
                    ("client_id", client),
                    ("code_verifier", verifier.into()),
                ];
                if let Some(resource) = resource {
                    pairs.push(("resource", resource.into()));
                }
                token(server, &as_pairs(&pairs)).await.json()["error"].clone()
            }
        };
    let wrong_verifier = "wrongwrongwrongwrongwrongwrongwrongwrongwrong1";
    assert_eq!(
        exchange(code_for().await, wrong_verifier, client_id.into(), None).await,
        "invalid_grant"
    );
    assert_eq!(
        exchange(
            code_for().await,
            VERIFIER,
            other["client_id"].as_str().unwrap().into(),
            None
        )
        .await,
        "invalid_grant",
        "foreign client"
    );
    assert_eq!(
        exchange(
            code_for().await,
            VERIFIER,
            client_id.into(),
            Some("https://other.example/mcp")
        )
        .await,
        "invalid_target"
    );
    let no_client = token(
        &server,
        &[("grant_type", "authorization_code"), ("code", "x")],
    )
    .await;
    assert_eq!(
        (no_client.status, no_client.json()["error"].clone()),
        (401, json!("invalid_client"))
    );
    let unknown_grant = token(
        &server,
        &[("grant_type", "password"), ("client_id", client_id)],
    )
    .await;
    assert_eq!(unknown_grant.json()["error"], "unsupported_grant_type");
}

/// C2 as amended: the client-credentials grant is not offered (an app's
/// own token would have no route to reach): registering it succeeds (RFC 7591),
/// asking the token endpoint for it is `unsupported_grant_type`; a wrong client secret is
/// still `invalid_client`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c2_the_client_credentials_grant_is_not_offered() {
    let server = Server::start(&[]);
    let registered = post_json(
        &server.url("/oauth/register"),
        &[],
        &json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic", "grant_types": ["client_credentials"] }),
    )
    .await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    let client = register(
        &server,
        json!({ "token_endpoint_auth_method": "client_secret_basic" }),
    )
    .await;
    let (id, secret) = (
        client["client_id"].as_str().unwrap(),
        client["client_secret"].as_str().unwrap(),
    );
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    let asked = form_post(
        &server,
        "/oauth/token",
        &[("grant_type", "client_credentials")],
        &[("authorization".into(), format!("Basic {basic}"))],
    )
    .await;
    assert_eq!(
        (asked.status, asked.json()["error"].clone()),
        (400, json!("unsupported_grant_type")),
        "{}",
        asked.body
    );
    let wrong = base64::engine::general_purpose::STANDARD.encode(format!("{id}:not-the-secret"));
    let refused = form_post(
        &server,
        "/oauth/token",
        &[("grant_type", "client_credentials")],
        &[("authorization".into(), format!("Basic {wrong}"))],
    )
    .await;
    assert_eq!(
        (refused.status, refused.json()["error"].clone()),
        (401, json!("invalid_client"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c3_login_prompt_flow_through_mcplogin_and_check_state() {
    let server = Server::start(&[]);
    sign_up(&server, "prompt@example.com").await;
    let prompt_result = call_tool(&server, None).await;
    let prompt: Value = serde_json::from_str(
        prompt_result["result"]["content"][0]["text"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let url = prompt["authorization_url"].as_str().unwrap();
    let poll_url = prompt["auto_polling"]["poll_url"].as_str().unwrap();
    let poll_path = &poll_url[poll_url.find("/oauth2/").unwrap()..];
    // The page asks for the code the client shows.
    let user_code = prompt["user_code"].as_str().unwrap();
    let path = &url[url.find("/mcplogin").unwrap()..];
    let page = get(&server.url(path)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("name=\"user_code\""), "{}", page.body);
    let (fields, cookie) = form_of(&page);
    let mut submit = as_pairs(&fields);
    let without_cookie = form_post(&server, "/mcplogin", &submit, &[]).await;
    assert_eq!(
        without_cookie.status, 403,
        "CSRF: a post without the page's cookie is refused"
    );
    submit.extend([
        ("email", "prompt@example.com"),
        ("password", "a long enough password"),
        ("user_code", user_code),
        ("decision", "allow"),
    ]);
    let done = form_post(&server, "/mcplogin", &submit, &[("cookie".into(), cookie)]).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let poll = get(&server.url(poll_path)).await.json();
    assert_eq!(poll["status"], "completed", "{poll}");
    let token = poll["token"].as_str().unwrap();
    // The token is handed out once; a second poll is told the
    // token was already collected (410 `collected`) and gets no token.
    let again = get(&server.url(poll_path)).await;
    assert_eq!(again.status, 410, "{}", again.body);
    assert_eq!(again.json()["status"], "collected");
    assert!(again.json().get("token").is_none());
    let result = call_tool(&server, Some(token)).await;
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("No genotype data"),
        "the same call now succeeds: {result}"
    );
}

/// Serves the client's metadata document on a loopback port; the document names the
/// URL it is served from, as CIMD requires. Returns that URL.
/// Serves a client metadata document on loopback; with how many requests it answered.
async fn serve_client_document() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fetches = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = fetches.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let body =
        json!({ "client_id": url, "client_name": "CIMD Client", "redirect_uris": [REDIRECT] })
            .to_string();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    (url, fetches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c2_a_client_id_metadata_document_is_fetched_through_the_guard() {
    let (url, fetches) = serve_client_document().await;
    // Without the development setting the guard refuses loopback: no fetch, no sign-in page.
    let strict = Server::start(&[]);
    let query = encode(&[
        ("response_type", "code"),
        ("client_id", &url),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &challenge(VERIFIER)),
        ("code_challenge_method", "S256"),
    ]);
    let page = get(&strict.url(&format!("/oauth/authorize?{query}"))).await;
    assert_eq!(
        page.status, 400,
        "a loopback document is never fetched in production mode"
    );

    let server = Server::start(&[("MIROBODY_REMOTE_DEV_LOOPBACK", "true")]);
    sign_up(&server, "cimd@example.com").await;
    let params = pkce();
    let location = authorize(
        &server,
        &url,
        &as_pairs(&params),
        "cimd@example.com",
        "a long enough password",
    )
    .await;
    let code = query_param(&location, "code").unwrap_or_else(|| panic!("{location}"));
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("client_id", url.as_str()),
        ("code_verifier", VERIFIER),
    ];
    let tokens = token(&server, &exchange).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    // The page, the sign-in post and the token request all found the
    // client, and one more authorize request does too, yet the document was fetched once.
    let query = encode(&[
        ("response_type", "code"),
        ("client_id", &url),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &challenge(VERIFIER)),
        ("code_challenge_method", "S256"),
    ]);
    let page = get(&server.url(&format!("/oauth/authorize?{query}"))).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(
        fetches.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "a client metadata document is fetched once, then cached"
    );
}

/// An expired code, without sleeping: the app in-process with a fake clock.
#[tokio::test]
async fn c2_an_expired_code_is_invalid_grant() {
    let process = e2e::in_process(&[]);
    let call =
        |method: &str, path: &str, content_type: &str, cookie: Option<&str>, body: String| {
            let mut headers = vec![("content-type".to_string(), content_type.to_string())];
            if let Some(cookie) = cookie {
                headers.push(("cookie".to_string(), cookie.to_string()));
            }
            let (method, path) = (method.to_string(), path.to_string());
            let process = &process;
            async move { process.send(&method, &path, &headers, body).await }
        };
    let signed_up = call(
        "POST",
        "/auth/signup",
        "application/json",
        None,
        json!({ "email": "clock@example.com", "password": "a long enough password" }).to_string(),
    )
    .await;
    assert_eq!(signed_up.status, 201);
    let client = call(
        "POST",
        "/oauth/register",
        "application/json",
        None,
        json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" }).to_string(),
    )
    .await
    .json();
    let client_id = client["client_id"].as_str().unwrap();
    let c = challenge(VERIFIER);
    let query = encode(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &c),
        ("code_challenge_method", "S256"),
    ]);
    let page = call(
        "GET",
        &format!("/oauth/authorize?{query}"),
        "text/html",
        None,
        String::new(),
    )
    .await;
    let (fields, cookie) = form_of(&page);
    let mut submit = as_pairs(&fields);
    submit.extend([
        ("email", "clock@example.com"),
        ("password", "a long enough password"),
        ("decision", "allow"),
    ]);
    let redirected = call(
        "POST",
        "/oauth/authorize",
        "application/x-www-form-urlencoded",
        Some(&cookie),
        encode(&submit),
    )
    .await;
    let code = query_param(redirected.header("location").unwrap(), "code").unwrap();
    process.clock.advance(601);
    let exchange = encode(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT),
        ("client_id", client_id),
        ("code_verifier", VERIFIER),
    ]);
    let expired = call(
        "POST",
        "/oauth/token",
        "application/x-www-form-urlencoded",
        None,
        exchange,
    )
    .await;
    assert_eq!(
        (expired.status, expired.json()["error"].clone()),
        (400, json!("invalid_grant")),
        "codes live ten minutes"
    );
}
