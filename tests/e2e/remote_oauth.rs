//! A person's OAuth-protected MCP server (D5, the MCP authorization flow from the
//! client side), end to end. The protected server is a second, real `mirobody-local`
//! with `MIROBODY_REQUIRE_AUTH=true` (an MCP server with its own authorization server:
//! a 401 with `WWW-Authenticate`, protected-resource and authorization-server metadata,
//! dynamic registration, PKCE S256, rotating refresh tokens). The gateway runs
//! in-process on a fake clock, so an access token's expiry is a clock moved forward
//! rather than an hour waited; the person's browser is the test following the
//! redirects (the console's link out, the other server's consent form, the redirect
//! back to the console's callback).
//!
//! Shown: registration saves the server as needing sign-in (listed on `/mcp` as a
//! note saying where, not contacted); the console's sign-in reaches the other server's
//! consent page with PKCE S256, `state` and `resource`; the callback lists its tools;
//! `/mcp` lists and calls them as the person signed in there (their HbA1c, worked out
//! by hand in `HBA1C_ROWS`); after the access token's expiry, twice, the call still
//! answers (refreshed, and the rotated refresh token kept: a reused one would end the
//! grant); two instances of the gateway calling at once after an expiry refresh once
//! (the refresh is claimed in the store); after the person revokes the gateway's grant on
//! the other server, the next refresh is refused and the registry, the console and `/mcp` say "needs sign-in".

use e2e::{
    HBA1C_ROWS, InProcess, Reply, Server, TempDir, attr_after, encode_form, form_of,
    form_with_cookie, in_process_at, modern, person_with_hba1c, send, set_cookies,
};
use serde_json::{Value, json};

const PASSWORD: &str = "a long enough password";

fn set_cookie(reply: &Reply, prefix: &str) -> Option<String> {
    set_cookies(reply)
        .into_iter()
        .find(|c| c.starts_with(prefix))
}

/// The gateway's person: an API token and a console session (cookie, CSRF token).
struct Person {
    token: String,
    cookie: String,
    csrf: String,
}

fn form_headers(cookie: &str) -> Vec<(String, String)> {
    vec![
        (
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        ),
        ("cookie".into(), cookie.to_string()),
    ]
}

async fn gateway_person(app: &InProcess, email: &str) -> Person {
    let json_headers = vec![("content-type".to_string(), "application/json".to_string())];
    let body = json!({"email": email, "password": PASSWORD}).to_string();
    let signed_up = app.send("POST", "/auth/signup", &json_headers, body).await;
    assert_eq!(signed_up.status, 201, "{}", signed_up.body);
    let token = signed_up.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let form = app.send("GET", "/console/signin", &[], String::new()).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let nonce = set_cookie(&form, "").expect("the form's nonce cookie");
    let csrf = attr_after(&form.body, "name=\"csrf\"", "value");
    let body = encode_form(&[("csrf", &csrf), ("email", email), ("password", PASSWORD)]);
    let done = app
        .send("POST", "/console/signin", &form_headers(&nonce), body)
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie = set_cookie(&done, "mirobody_session=").expect("a session cookie");
    let page = app
        .send(
            "GET",
            "/console/servers",
            &[("cookie".into(), cookie.clone())],
            String::new(),
        )
        .await;
    assert_eq!(
        page.status,
        200,
        "{:?} {}",
        page.header("location"),
        page.body
    );
    let csrf = attr_after(&page.body, "data-csrf=", "data-csrf");
    Person {
        token,
        cookie,
        csrf,
    }
}

async fn api(
    app: &InProcess,
    person: &Person,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let headers = vec![
        (
            "authorization".to_string(),
            format!("Bearer {}", person.token),
        ),
        ("content-type".to_string(), "application/json".to_string()),
    ];
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    app.send(method, path, &headers, body).await
}

async fn mcp(app: &InProcess, person: &Person, id: i64, method: &str, params: Value) -> Value {
    let (mut headers, body) = modern(id, method, params);
    headers.push(("authorization".into(), format!("Bearer {}", person.token)));
    headers.push(("content-type".into(), "application/json".into()));
    let reply = app.send("POST", "/mcp", &headers, body.to_string()).await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

const TOOL: &str = "mcp__lab__query_health_indicators";

/// The HbA1c rows the gateway's forwarded call answers (`time|value`), or its error text.
async fn hba1c_through_gateway(
    app: &InProcess,
    person: &Person,
    id: i64,
) -> Result<Vec<String>, String> {
    let answer = mcp(
        app,
        person,
        id,
        "tools/call",
        json!({"name": TOOL, "arguments": {"keywords": ["HbA1c"]}}),
    )
    .await;
    let result = &answer["result"];
    if result["isError"] == true {
        return Err(result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string());
    }
    let rows = result["structuredContent"]["indicators"][0]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows: {answer}"));
    Ok(rows
        .iter()
        .map(|row| row.as_str().expect("a row").to_string())
        .collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oauth_server_is_signed_in_to_listed_called_refreshed_and_needs_sign_in_when_revoked() {
    // The protected server, and its person with two HbA1c results.
    let logs = TempDir::new("remote-oauth-logs");
    let log = logs.0.join("lab.log");
    let lab = Server::start_logging(
        &[("MIROBODY_REQUIRE_AUTH", "true"), ("RUST_LOG", "info")],
        std::fs::File::create(&log).unwrap(),
    );
    // The token requests the lab answered so far, as their statuses.
    let token_requests = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("route=\"POST /oauth/token\""))
            .map(|l| {
                let at = l.find("status=").expect("a status") + "status=".len();
                l[at..at + 3].to_string()
            })
            .collect::<Vec<_>>()
    };
    let lab_token = person_with_hba1c(&lab.origin(), "bob@lab.example", PASSWORD).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let app = in_process_at(
        &[
            ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
            ("MIROBODY_REMOTE_TIMEOUT_SECS", "20"),
        ],
        now,
    );
    let alice = gateway_person(&app, "alice@gateway.example").await;

    // Registered with OAuth: saved, not contacted, and said to need sign-in.
    let url = lab.url("/mcp");
    let created = api(
        &app,
        &alice,
        "POST",
        "/api/user/mcp-servers",
        Some(json!({"name": "lab", "url": url, "auth": {"type": "OAUTH"}})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let view = created.json();
    assert_eq!(view["needs_sign_in"], true, "{view}");
    assert_eq!(
        view["auth"],
        json!({"type": "OAUTH", "signed_in": false}),
        "{view}"
    );
    let listed = mcp(&app, &alice, 1, "tools/list", json!({})).await;
    let text = listed.to_string();
    assert!(!text.contains(TOOL), "{text}");
    assert!(
        text.contains("needs sign-in") && text.contains("/console/servers"),
        "the listing says where to sign in: {text}"
    );
    let refused = hba1c_through_gateway(&app, &alice, 2).await.unwrap_err();
    assert!(refused.contains("needs sign-in"), "{refused}");
    // A client that can open a URL is asked to send its person to the servers' page.
    let (mut headers, mut body) = modern(
        20,
        "tools/call",
        json!({"name": TOOL, "arguments": {"keywords": ["HbA1c"]}}),
    );
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"url": {}}});
    headers.push(("authorization".into(), format!("Bearer {}", alice.token)));
    headers.push(("content-type".into(), "application/json".into()));
    let asked = app
        .send("POST", "/mcp", &headers, body.to_string())
        .await
        .json();
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let params = &result["inputRequests"]["sign_in"]["params"];
    assert_eq!(params["mode"], "url", "{asked}");
    assert!(
        params["url"]
            .as_str()
            .unwrap_or_default()
            .ends_with("/console/servers"),
        "{asked}"
    );

    // The console's sign-in: a page linking to the other server's authorization
    // endpoint, with PKCE S256, a state and the resource.
    let page = app
        .send(
            "POST",
            "/console/servers/lab/sign-in",
            &form_headers(&alice.cookie),
            encode_form(&[("csrf", &alice.csrf)]),
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let authorize = attr_after(&page.body, "id=\"sign-in-continue\"", "href");
    assert!(
        authorize.starts_with(&lab.url("/oauth/authorize?")),
        "{authorize}"
    );
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(authorize.split_once('?').unwrap().1.as_bytes())
            .into_owned()
            .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} in {authorize}"))
    };
    assert_eq!(param("code_challenge_method"), "S256");
    assert_eq!(param("code_challenge").len(), 43);
    assert_eq!(param("resource"), url);
    assert!(param("redirect_uri").ends_with("/console/oauth/callback"));

    // The person signs in on the other server's consent page as bob and allows.
    let consent = send("GET", &authorize, &[], None).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    let (fields, cookie) = form_of(&consent);
    let mut submit: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    submit.extend([
        ("email", "bob@lab.example"),
        ("password", PASSWORD),
        ("decision", "allow"),
    ]);
    let allowed = form_with_cookie(&lab, "/oauth/authorize", &submit, Some(&cookie)).await;
    assert_eq!(allowed.status, 302, "{}", allowed.body);
    let back = allowed.header("location").unwrap().to_string();
    let path = &back[back
        .find("/console/oauth/callback")
        .expect("back to the callback")..];

    // Back on the console: the code exchanged, the tools listed.
    let done = app
        .send(
            "GET",
            path,
            &[("cookie".into(), alice.cookie.clone())],
            String::new(),
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(
        done.header("location"),
        Some("/console/servers?done=signed-in")
    );
    let view = api(&app, &alice, "GET", "/api/user/mcp-servers/lab", None)
        .await
        .json();
    assert_eq!(view["needs_sign_in"], false, "{view}");
    assert!(
        view.to_string().contains("query_health_indicators"),
        "{view}"
    );
    assert!(!view.to_string().contains("access_token"), "{view}");

    // Listed and called through /mcp: bob's results, worked out by hand.
    let listed = mcp(&app, &alice, 3, "tools/list", json!({})).await;
    assert!(listed.to_string().contains(TOOL), "{listed}");
    assert_eq!(
        hba1c_through_gateway(&app, &alice, 4).await.unwrap(),
        HBA1C_ROWS
    );

    assert_eq!(token_requests(), ["200"], "the code's exchange alone");
    hba1c_through_gateway(&app, &alice, 40).await.unwrap();
    assert_eq!(
        token_requests(),
        ["200"],
        "a fresh access token is not refreshed"
    );

    // The access token expires (the gateway's clock moves past its hour), twice: each
    // call refreshes first (one more token request each); the second works only with
    // the rotated refresh token (the lab ends a grant whose refresh token is reused).
    for (round, id) in [(1, 5), (2, 6)] {
        app.clock.advance(3_700);
        assert_eq!(
            hba1c_through_gateway(&app, &alice, id).await,
            Ok(HBA1C_ROWS.iter().map(|r| r.to_string()).collect()),
            "after expiry {round}"
        );
        assert_eq!(token_requests().len(), 1 + round, "{:?}", token_requests());
        assert!(
            token_requests().iter().all(|s| s == "200"),
            "{:?}",
            token_requests()
        );
    }

    // Two instances of the gateway (Lambda runs one per concurrent request) call at once
    // after the next expiry: one refreshes, the other waits for the token set it keeps.
    // Both refreshing would spend the rotated refresh token twice, and the lab ends a
    // grant whose refresh token is reused.
    let second = app.beside(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "20"),
    ]);
    app.clock.advance(3_700);
    let (first_call, second_call) = tokio::join!(
        hba1c_through_gateway(&app, &alice, 30),
        hba1c_through_gateway(&second, &alice, 31)
    );
    let rows: Vec<String> = HBA1C_ROWS.iter().map(|r| r.to_string()).collect();
    assert_eq!(first_call, Ok(rows.clone()), "the first instance");
    assert_eq!(second_call, Ok(rows.clone()), "the second instance");
    assert_eq!(
        token_requests(),
        ["200"; 4],
        "one refresh for the two calls"
    );
    assert_eq!(
        hba1c_through_gateway(&second, &alice, 32).await,
        Ok(rows),
        "the grant lives on"
    );

    // Bob revokes the gateway's grant on the other server; the next refresh is refused.
    let grants = send(
        "GET",
        &lab.url("/api/user/oauth-grants"),
        &[("authorization".into(), format!("Bearer {lab_token}"))],
        None,
    )
    .await;
    assert_eq!(grants.status, 200, "{}", grants.body);
    let listed_grants = grants.json();
    let client_id = listed_grants["data"]["grants"]
        .as_array()
        .or_else(|| listed_grants["grants"].as_array())
        .and_then(|list| list.first())
        .and_then(|grant| grant["client_id"].as_str())
        .unwrap_or_else(|| panic!("the gateway's grant: {}", grants.body))
        .to_string();
    let revoked = send(
        "DELETE",
        &lab.url(&format!("/api/user/oauth-grants/{client_id}")),
        &[("authorization".into(), format!("Bearer {lab_token}"))],
        None,
    )
    .await;
    assert!(revoked.status < 300, "{}", revoked.body);
    app.clock.advance(3_700);
    let refused = hba1c_through_gateway(&app, &alice, 7).await.unwrap_err();
    assert!(refused.contains("needs sign-in"), "{refused}");
    assert_eq!(token_requests().len(), 5, "{:?}", token_requests());
    assert_ne!(
        token_requests()[4],
        "200",
        "the refresh after the revocation was refused"
    );
    let view = api(&app, &alice, "GET", "/api/user/mcp-servers/lab", None)
        .await
        .json();
    assert_eq!(view["needs_sign_in"], true, "{view}");
    let listed = mcp(&app, &alice, 8, "tools/list", json!({})).await;
    assert!(!listed.to_string().contains(TOOL), "{listed}");
    assert!(listed.to_string().contains("needs sign-in"), "{listed}");
    let console = app
        .send(
            "GET",
            "/console/servers",
            &[("cookie".into(), alice.cookie.clone())],
            String::new(),
        )
        .await;
    assert!(console.body.contains("needs sign-in"), "{}", console.body);
    assert!(
        console.body.contains("server-sign-in"),
        "the page offers the sign-in again"
    );
}

/// The same sign-in as a person does it, in headless Chromium against two real servers:
/// the console's Sign in button (a form post answered with a page, whose link leaves the
/// console: `form-action 'self'` would stop a redirect), the other server's consent page,
/// and back to the console (its session cookie is `SameSite=Lax`, so it comes along on
/// that top-level return); then `/mcp` answers with the other server's person's data.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_signs_the_gateway_in_to_their_server_in_a_browser() {
    let chromium = std::path::Path::new("/usr/bin/chromium");
    assert!(
        chromium.exists(),
        "Chromium is missing: run scripts/install-test-deps"
    );
    let lab = Server::start(&[("MIROBODY_REQUIRE_AUTH", "true")]);
    person_with_hba1c(&lab.origin(), "bob@lab.example", PASSWORD).await;
    let gateway = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "20"),
    ]);
    let (_, token) = e2e::sign_up_as(&gateway, "carol@gateway.example", PASSWORD).await;
    let created = e2e::post_json(
        &gateway.url("/api/user/mcp-servers"),
        &e2e::bearer(&token),
        &json!({"name": "lab", "url": lab.url("/mcp"), "auth": {"type": "OAUTH"}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);

    let script = e2e::root().join("tests/clients/gateway_sign_in.mjs");
    let output = std::process::Command::new("node")
        .arg(&script)
        .args([gateway.origin().as_str(), "lab"])
        .env("GATEWAY_EMAIL", "carol@gateway.example")
        .env("GATEWAY_PASSWORD", PASSWORD)
        .env("REMOTE_EMAIL", "bob@lab.example")
        .env("REMOTE_PASSWORD", PASSWORD)
        .current_dir(e2e::root())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let walked: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let lab_host = lab.origin().trim_start_matches("http://").to_string();
    assert_eq!(walked["continue_host"], lab_host.as_str(), "{walked}");
    assert_eq!(
        walked["landed"], "/console/servers?done=signed-in",
        "{walked}"
    );
    assert!(
        walked["notice"]
            .as_str()
            .unwrap_or_default()
            .contains("signed in"),
        "{walked}"
    );

    let reply = e2e::rpc(
        &gateway.url("/mcp"),
        Some(&token),
        "tools/call",
        json!({"name": TOOL, "arguments": {"keywords": ["HbA1c"]}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = &reply.json()["result"];
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["indicators"][0]["rows"],
        json!(HBA1C_ROWS),
        "bob's two results through the gateway: {result}"
    );
}
