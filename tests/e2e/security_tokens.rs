//! Token kinds and scopes, checked in one place. An app never
//! client-credentials token is never a person; an OAuth access token a user consented to
//! for a client reaches `/mcp` with `mcp:tools` and nothing else; a session signed for
//! another origin with the same key is refused.

use base64::Engine;
use e2e::{
    Reply, Server, TempDir, bearer_json, encode_form as encode, form_of, form_with_cookie, get,
    post_json, rpc,
};
use mirobody::identity::{Jwts, Keys};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const VERIFIER: &str = "dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA_n4qNhtpHqZ-0123456789";
const REDIRECT: &str = "https://x.example/cb";
const EMAIL: &str = "tokens@example.com";
const PASSWORD: &str = "a long enough password";

/// Every route that acts for a person outside `/mcp`: account, data, share, personal
/// URL and server registry, with a body each accepts.
fn person_routes() -> Vec<(&'static str, &'static str, Option<Value>)> {
    let reading = json!([{ "indicator": "heart_rate", "value": 60, "unit": "bpm", "time": "2026-01-01T00:00:00Z" }]);
    let server = json!({ "name": "x", "url": "https://mcp.example.com/mcp" });
    vec![
        ("POST", "/api/data/health", Some(reading)),
        ("POST", "/api/data/genotype", None),
        ("GET", "/api/data", None),
        ("DELETE", "/api/data", None),
        ("POST", "/personal/mcp", Some(json!({}))),
        ("DELETE", "/personal/mcp", None),
        ("GET", "/api/user/mcp", None),
        ("POST", "/api/user/mcp", Some(json!({}))),
        ("POST", "/api/user/mcp/set", Some(server.clone())),
        ("POST", "/api/user/mcp/delete", Some(json!({ "name": "x" }))),
        ("GET", "/api/user/mcp-servers", None),
        ("POST", "/api/user/mcp-servers", Some(server)),
        ("GET", "/api/user/mcp-servers/x", None),
        ("PATCH", "/api/user/mcp-servers/x", Some(json!({}))),
        ("DELETE", "/api/user/mcp-servers/x", None),
        ("POST", "/api/user/mcp-servers/x/probe", None),
        (
            "POST",
            "/api/shares",
            Some(json!({ "email": "b@example.com", "permissions": ["chat"] })),
        ),
        (
            "DELETE",
            "/api/shares",
            Some(json!({ "email": "b@example.com" })),
        ),
    ]
}

async fn sign_up(server: &Server) -> String {
    let body = json!({ "email": EMAIL, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()["data"]["token"].as_str().unwrap().to_string()
}

async fn register(server: &Server, body: Value) -> Value {
    let reply = post_json(&server.url("/oauth/register"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()
}

/// The user consents to a public client with `scope`; the access token it gets.
async fn access_token(server: &Server, scope: &str) -> String {
    let client = register(
        server,
        json!({ "client_name": "Third-party MCP client", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" }),
    )
    .await;
    let client_id = client["client_id"].as_str().unwrap();
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(VERIFIER.as_bytes()));
    let query = encode(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("state", "s"),
        ("scope", scope),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ]);
    let page = get(&server.url(&format!("/oauth/authorize?{query}"))).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (fields, cookie) = form_of(&page);
    let mut submit: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    submit.extend([
        ("email", EMAIL),
        ("password", PASSWORD),
        ("decision", "allow"),
    ]);
    let reply = form_with_cookie(server, "/oauth/authorize", &submit, Some(&cookie)).await;
    assert_eq!(reply.status, 302, "{}", reply.body);
    let location = reply.header("location").unwrap().to_string();
    let code = location
        .split_once('?')
        .unwrap()
        .1
        .split('&')
        .find_map(|pair| pair.strip_prefix("code="))
        .unwrap()
        .to_string();
    let tokens = form_with_cookie(
        server,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", client_id),
            ("code_verifier", VERIFIER),
        ],
        None,
    )
    .await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    assert_eq!(tokens.json()["scope"], scope);
    tokens.json()["access_token"].as_str().unwrap().to_string()
}

fn assert_insufficient(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 403, "{what}: {}", reply.body);
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|c| c.contains("insufficient_scope")),
        "{what}: {:?}",
        reply.headers
    );
}

/// Finding 1 as the issue writes it: an open registration with `client_credentials`, then
/// its token. The grant is no longer offered: the registration succeeds (RFC
/// 7591) but yields no token; a confidential client registered the usual way cannot ask
/// for it either. (A token that
/// says `kind: client`, signed before, does not verify:
/// `identity::jwt::tests::a_token_says_its_kind_and_one_without_a_known_kind_does_not_verify`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_credentials_token_is_never_a_person() {
    let server = Server::start(&[]);
    let app = post_json(
        &server.url("/oauth/register"),
        &[],
        &json!({"redirect_uris":["https://x.example/cb"],"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post"}),
    )
    .await;
    assert_eq!(app.status, 201, "{}", app.body);
    let app_token = form_with_cookie(
        &server,
        "/oauth/token",
        &[
            ("grant_type", "client_credentials"),
            ("client_id", app.json()["client_id"].as_str().unwrap()),
            (
                "client_secret",
                app.json()["client_secret"].as_str().unwrap(),
            ),
        ],
        None,
    )
    .await;
    assert_eq!(
        (app_token.status, app_token.json()["error"].clone()),
        (400, json!("unsupported_grant_type")),
        "{}",
        app_token.body
    );
    assert!(app_token.json().get("access_token").is_none());
    let client = register(
        &server,
        json!({"redirect_uris":["https://x.example/cb"],"token_endpoint_auth_method":"client_secret_post"}),
    )
    .await;
    let tokens = form_with_cookie(
        &server,
        "/oauth/token",
        &[
            ("grant_type", "client_credentials"),
            ("client_id", client["client_id"].as_str().unwrap()),
            ("client_secret", client["client_secret"].as_str().unwrap()),
        ],
        None,
    )
    .await;
    assert_eq!(
        (tokens.status, tokens.json()["error"].clone()),
        (400, json!("unsupported_grant_type")),
        "{}",
        tokens.body
    );
    let metadata = get(&server.url("/.well-known/oauth-authorization-server"))
        .await
        .json();
    assert!(
        !metadata["grant_types_supported"]
            .to_string()
            .contains("client_credentials"),
        "{metadata}"
    );
}

/// Finding 2: a token consented for a third-party client (only `openid`, or only
/// `mcp:tools`) cannot delete readings, mint the personal URL, share the account or
/// manage external servers; the `mcp:tools` one still lists and calls tools on `/mcp`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consented_scopes_reach_mcp_and_nothing_else() {
    let server = Server::start(&[]);
    let session = sign_up(&server).await;
    let openid = access_token(&server, "openid").await;
    let tools = access_token(&server, "mcp:tools").await;
    let attacks = [
        ("DELETE", "/api/data", None),
        ("POST", "/personal/mcp", Some(json!({}))),
        (
            "POST",
            "/api/shares",
            Some(json!({ "email": "b@example.com", "permissions": ["chat"] })),
        ),
        (
            "POST",
            "/api/user/mcp-servers",
            Some(json!({ "name": "x", "url": "https://mcp.example.com/mcp" })),
        ),
    ];
    for (scope, token) in [("openid", &openid), ("mcp:tools", &tools)] {
        for (method, path, body) in &attacks {
            let reply = bearer_json(&server, method, path, token, body.clone()).await;
            assert_insufficient(&reply, &format!("{scope} on {method} {path}"));
        }
        for (method, path, body) in person_routes() {
            let reply = bearer_json(&server, method, path, token, body).await;
            assert_insufficient(&reply, &format!("{scope} on {method} {path}"));
        }
    }
    // `mcp:tools` is what /mcp needs.
    let listed = rpc(&server.url("/mcp"), Some(&tools), "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let called = rpc(
        &server.url("/mcp"),
        Some(&tools),
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs1" } }),
    )
    .await;
    assert_eq!(called.status, 200, "{}", called.body);
    assert!(
        called.json()["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("No genotype data"),
        "{}",
        called.body
    );
    // Without it, /mcp answers 403 naming the scope to ask for (RFC 6750).
    let refused = rpc(&server.url("/mcp"), Some(&openid), "tools/list", json!({})).await;
    assert_insufficient(&refused, "openid on /mcp");
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("scope=\"mcp:tools\"")
    );
    // The person's own session still does everything.
    for (method, path) in [("GET", "/api/data"), ("GET", "/api/user/mcp-servers")] {
        let reply = bearer_json(&server, method, path, &session, None).await;
        assert_eq!(
            reply.status, 200,
            "session on {method} {path}: {}",
            reply.body
        );
    }
    let personal = bearer_json(&server, "POST", "/personal/mcp", &session, Some(json!({}))).await;
    assert_eq!(personal.status, 200, "{}", personal.body);
    // A bearer token on the personal URL is checked the same way as on /mcp.
    let url = personal.json()["data"]["url"].as_str().unwrap().to_string();
    let on_url = rpc(&url, Some(&openid), "tools/list", json!({})).await;
    assert_insufficient(&on_url, "openid on /mcp/{secret}");
    let on_url = rpc(&url, Some(&tools), "tools/list", json!({})).await;
    assert_eq!(on_url.status, 200, "{}", on_url.body);
}

/// `iss`/`aud` come from the public origin: a session signed with this server's key for
/// another origin does not verify (401 with the challenge), on `/mcp` and the REST APIs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_signed_for_another_origin_is_refused() {
    let data = TempDir::new("tokens-origin");
    let data_dir = data.0.display().to_string();
    let server = Server::start(&[("MIROBODY_DATA_DIR", &data_dir)]);
    let keys = Keys::dev(&data.0).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let ours = Jwts::for_origin(&keys.jwt, &server.origin()).mint("u1", 600, now);
    let theirs =
        Jwts::for_origin(&keys.jwt, "https://other-deployment.example").mint("u1", 600, now);
    assert_eq!(
        bearer_json(&server, "GET", "/api/data", &ours, None)
            .await
            .status,
        200
    );
    let listed = rpc(&server.url("/mcp"), Some(&ours), "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "{}", listed.body);

    let refused = rpc(&server.url("/mcp"), Some(&theirs), "tools/list", json!({})).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    let reply = bearer_json(&server, "GET", "/api/data", &theirs, None).await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    let reply = bearer_json(&server, "POST", "/personal/mcp", &theirs, Some(json!({}))).await;
    assert_eq!(reply.status, 401, "{}", reply.body);
}
