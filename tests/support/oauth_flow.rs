//! The OAuth authorization code flow as a browser and an app walk it: register a
//! client, sign in on the consent page and answer it, exchange the code. Each step is
//! its own function, so a test can act between them (sign out everywhere before the
//! exchange, untick a box on the page).

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::{Reply, Server, encode_form, form_of, form_with_cookie, get, post_json};

/// The PKCE verifier every flow here uses.
pub const VERIFIER: &str = "dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA_n4qNhtpHqZ-0123456789";
/// The redirect URI every client here registers.
pub const REDIRECT: &str = "https://x.example/cb";

/// A registered client: its id, and its secret when it is confidential.
pub struct Client {
    pub id: String,
    pub secret: Option<String>,
}

/// Registers a client named `name` authenticating with `method` (`none`,
/// `client_secret_post`).
pub async fn register(server: &Server, name: &str, method: &str) -> Client {
    let body = serde_json::json!({
        "client_name": name,
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": method,
    });
    let reply = post_json(&server.url("/oauth/register"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    Client {
        id: reply.json()["client_id"].as_str().unwrap().to_string(),
        secret: reply.json()["client_secret"].as_str().map(String::from),
    }
}

/// `GET /oauth/authorize` for `client` asking for `scope`: the consent page.
pub async fn consent_page(server: &Server, client: &Client, scope: &str) -> Reply {
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(VERIFIER.as_bytes()));
    let query = encode_form(&[
        ("response_type", "code"),
        ("client_id", &client.id),
        ("redirect_uri", REDIRECT),
        ("state", "s"),
        ("scope", scope),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ]);
    get(&server.url(&format!("/oauth/authorize?{query}"))).await
}

/// Signs in on the consent page for `scope` as `email` and allows, with `extra` fields
/// (`("servers", "yes")`: the box for the person's own MCP servers left ticked, as a
/// browser sends it); the code from the redirect.
pub async fn allow(
    server: &Server,
    client: &Client,
    scope: &str,
    (email, password): (&str, &str),
    extra: &[(&str, &str)],
) -> String {
    let page = consent_page(server, client, scope).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (fields, cookie) = form_of(&page);
    let mut submit: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    submit.extend([
        ("email", email),
        ("password", password),
        ("decision", "allow"),
    ]);
    submit.extend(extra);
    let reply = form_with_cookie(server, "/oauth/authorize", &submit, Some(&cookie)).await;
    assert_eq!(reply.status, 302, "{}", reply.body);
    let location = reply.header("location").unwrap().to_string();
    location
        .split_once('?')
        .unwrap()
        .1
        .split('&')
        .find_map(|pair| pair.strip_prefix("code="))
        .expect("the redirect carries a code")
        .to_string()
}

/// `POST /oauth/token` exchanging `code` for `client`: the reply.
pub async fn exchange(server: &Server, client: &Client, code: &str) -> Reply {
    let mut exchange = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("client_id", client.id.as_str()),
        ("code_verifier", VERIFIER),
    ];
    if let Some(secret) = &client.secret {
        exchange.push(("client_secret", secret.as_str()));
    }
    form_with_cookie(server, "/oauth/token", &exchange, None).await
}
