//! End to end against the real local server: the consent page
//! says what it grants in words (and asks separately for the person's own MCP servers,
//! which are now a scope of their own), shows a client's name cleaned and the host it
//! answers to; on an https deployment a loopback page cannot post the cookie-bound forms;
//! a registration says when its secret stops working.

use e2e::oauth_flow::{self, Client};
use e2e::remote_server::RemoteServer;
use e2e::{Server, bearer, listed_tools, modern, post_json, rpc, send, sign_up_as};
use serde_json::json;

const PASSWORD: &str = "a long enough password";

/// Consents for `scope` (ticking the servers box when `servers`) and exchanges the code:
/// the access token and the scope the token endpoint says it carries.
async fn token_for(
    server: &Server,
    client: &Client,
    email: &str,
    scope: &str,
    servers: bool,
) -> (String, String) {
    let extra: &[(&str, &str)] = if servers { &[("servers", "yes")] } else { &[] };
    let code = oauth_flow::allow(server, client, scope, (email, PASSWORD), extra).await;
    let tokens = oauth_flow::exchange(server, client, &code).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let tokens = tokens.json();
    (
        tokens["access_token"].as_str().unwrap().to_string(),
        tokens["scope"].as_str().unwrap().to_string(),
    )
}

/// Finding 6, as written: the page said "read your health data" for a token that could
/// also call the person's own MCP servers with their stored credentials, kept control,
/// bidi and zero-width characters of the client's name, and showed raw scopes. Now it
/// names the client cleaned and where it answers to, says in words what each scope lets
/// the app do, and asks for the servers in a box of their own: untick it, and the token
/// lists none of the person's server tools; leave it, and it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consent_page_says_what_it_grants_and_the_servers_are_asked_for_apart() {
    let remote = RemoteServer::start(&[]);
    let server = Server::start(&[("MIROBODY_REMOTE_DEV_LOOPBACK", "true")]);
    let email = "consent.f6@example.com";
    let (_, session) = sign_up_as(&server, email, PASSWORD).await;
    let mut headers = bearer(&session);
    headers.push(("content-type".into(), "application/json".into()));
    let registered = send(
        "POST",
        &server.url("/api/user/mcp-servers"),
        &headers,
        Some(json!({ "name": "shop", "url": remote.url() }).to_string()),
    )
    .await;
    assert!(registered.status < 300, "{}", registered.body);

    // A name that displays as another: a right-to-left override and a zero-width space.
    let client = oauth_flow::register(&server, "Cl\u{202E}au\u{200B}de", "none").await;
    let page = oauth_flow::consent_page(&server, &client, "mcp:tools mcp:servers openid").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("<strong>Claude</strong>"),
        "{}",
        page.body
    );
    for hidden in ['\u{202E}', '\u{200B}'] {
        assert!(!page.body.contains(hidden), "{hidden:?} shown");
    }
    assert!(
        page.body.contains("Read your health data and genotype"),
        "{}",
        page.body
    );
    assert!(page.body.contains("id=\"servers\""), "{}", page.body);
    assert!(
        page.body.contains("credentials you stored"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("x.example"),
        "the redirect's host: {}",
        page.body
    );
    // What the person reads (the hidden fields carry the request through the form).
    let shown = &page.body[..page.body.find("<form").unwrap()];
    assert!(!shown.contains("mcp:tools"), "raw scopes: {shown}");

    let lists_shop = |token: String| {
        let url = server.url("/mcp");
        async move {
            let reply = rpc(&url, Some(&token), "tools/list", json!({})).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            listed_tools(&reply.json())
                .iter()
                .any(|name| name.starts_with("mcp__shop__"))
        }
    };
    let scope = "mcp:tools mcp:servers";
    let (unticked, granted) = token_for(&server, &client, email, scope, false).await;
    assert_eq!(granted, "mcp:tools", "the box unticked");
    assert!(
        !lists_shop(unticked.clone()).await,
        "no server tools without the box"
    );
    let call = rpc(
        &server.url("/mcp"),
        Some(&unticked),
        "tools/call",
        json!({ "name": "mcp__shop__lookup_order", "arguments": { "order_id": "1" } }),
    )
    .await;
    assert!(
        call.body.contains("error") || call.body.contains("isError"),
        "an unknown tool: {}",
        call.body
    );
    let (ticked, granted) = token_for(&server, &client, email, scope, true).await;
    assert_eq!(granted, scope, "the box left ticked");
    assert!(lists_shop(ticked).await, "the server tools with it");
    // The person's own session reaches them, as before.
    assert!(lists_shop(session).await);
}

/// Finding 7: on an https deployment a page on loopback (`http://localhost:5173`, any
/// local dev server) is another site: it may not post the console's or the consent
/// page's forms, which cookies ride on. The routes that read no cookie still answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_pages_cannot_post_the_cookie_forms_of_an_https_deployment() {
    let server = Server::start(&[("MCP_PUBLIC_URL", "https://mcp.example.test")]);
    let loopback = ("origin".to_string(), "http://localhost:5173".to_string());
    let form = (
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    );
    for path in ["/console/signin", "/oauth/authorize", "/mcplogin"] {
        let reply = send(
            "POST",
            &server.url(path),
            &[loopback.clone(), form.clone()],
            Some("email=a%40b.example&password=x".into()),
        )
        .await;
        assert_eq!(reply.status, 403, "{path}: {}", reply.body);
    }
    let (mut headers, body) = modern(1, "tools/list", json!({}));
    headers.push(loopback);
    headers.push(("content-type".into(), "application/json".into()));
    let ping = send(
        "POST",
        &server.url("/mcp"),
        &headers,
        Some(body.to_string()),
    )
    .await;
    assert_eq!(ping.status, 200, "no cookie is read on /mcp: {}", ping.body);
}

/// Finding 7: a confidential client's registration said `client_secret_expires_at: 0`
/// ("never") though an unused registration lapses after a week; it now says when.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_says_when_its_secret_stops_working() {
    let server = Server::start(&[]);
    let body = json!({
        "client_name": "Confidential",
        "redirect_uris": [oauth_flow::REDIRECT],
        "token_endpoint_auth_method": "client_secret_post",
    });
    let reply = post_json(&server.url("/oauth/register"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let answer = reply.json();
    let issued = answer["client_id_issued_at"].as_u64().unwrap();
    assert_eq!(
        answer["client_secret_expires_at"].as_u64(),
        Some(issued + 7 * 24 * 3600),
        "{answer}"
    );
}
