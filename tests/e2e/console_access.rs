//! The console's "Who can act for you" page over HTTP with a cookie session: an
//! OAuth client authorised through the real consent form is listed and withdrawn (its
//! refresh token then refused); the personal URL's status; a temporary agent URL listed
//! and revoked (it stops resolving); shares granted and received listed by e-mail and
//! ended from either side; posts without the CSRF token refused and changing nothing;
//! another person's page shows none of it; sign out everywhere ends the cookie session,
//! the bearer tokens and the personal URL.

use e2e::{Reply, Server, encode_form, form_of, get, modern, post_json, send};
use serde_json::{Value, json};

const PASSWORD: &str = "a long enough password";
const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA_n4qNhtpHqZ-0123456789";

fn set_cookies(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_string())
        .collect()
}

fn attr_after(body: &str, marker: &str, name: &str) -> String {
    let at = body
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker}: {body}"));
    let rest = &body[at..];
    let start = rest.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    let end = start + rest[start..].find('"').unwrap();
    rest[start..end].to_string()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.replace('+', " ").into_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn url_param(url: &str, name: &str) -> Option<String> {
    url.split_once('?')?.1.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

/// A person signed in to the console (cookie and CSRF token) and to the API (token, id).
struct Person {
    email: String,
    cookie: String,
    csrf: String,
    token: String,
    user_id: String,
}

async fn sign_up(server: &Server, email: &str) -> Person {
    let form = send("GET", &server.url("/console/signup"), &[], None).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let nonce = set_cookies(&form).remove(0);
    let csrf = attr_after(&form.body, "name=\"csrf\"", "value");
    let body = encode_form(&[("csrf", &csrf), ("email", email), ("password", PASSWORD)]);
    let headers = vec![
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("cookie".to_string(), nonce),
    ];
    let done = send("POST", &server.url("/console/signup"), &headers, Some(body)).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie = set_cookies(&done)
        .into_iter()
        .find(|c| c.starts_with("mirobody_session="))
        .expect("a session cookie");
    let signed_in = post_json(
        &server.url("/auth/signin"),
        &[],
        &json!({"email": email, "password": PASSWORD}),
    )
    .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let data = signed_in.json()["data"].clone();
    let mut person = Person {
        email: email.to_string(),
        cookie,
        csrf: String::new(),
        token: data["token"].as_str().unwrap().to_string(),
        user_id: data["user_id"].as_str().unwrap().to_string(),
    };
    let page = person.get(server, "/console/access").await;
    assert_eq!(page.status, 200, "{}", page.body);
    person.csrf = attr_after(&page.body, "data-csrf=", "data-csrf");
    person
}

impl Person {
    async fn get(&self, server: &Server, path: &str) -> Reply {
        let headers = vec![("cookie".to_string(), self.cookie.clone())];
        send("GET", &server.url(path), &headers, None).await
    }

    async fn post(&self, server: &Server, path: &str, pairs: &[(&str, &str)], csrf: bool) -> Reply {
        let mut all: Vec<(&str, &str)> = pairs.to_vec();
        if csrf {
            all.push(("csrf", &self.csrf));
        }
        let headers = vec![
            (
                "content-type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ),
            ("cookie".to_string(), self.cookie.clone()),
        ];
        send("POST", &server.url(path), &headers, Some(encode_form(&all))).await
    }

    /// A JSON API call with the bearer token.
    async fn api(&self, server: &Server, method: &str, path: &str, body: Option<Value>) -> Reply {
        let headers = vec![
            (
                "authorization".to_string(),
                format!("Bearer {}", self.token),
            ),
            ("content-type".to_string(), "application/json".to_string()),
        ];
        send(
            method,
            &server.url(path),
            &headers,
            body.map(|b| b.to_string()),
        )
        .await
    }
}

/// The `tbody` of `table#id` on the page.
fn table<'p>(page: &'p str, id: &str) -> &'p str {
    let start = page
        .find(&format!("<table class=\"stack\" id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no table#{id}: {page}"));
    let end = start + page[start..].find("</table>").unwrap();
    &page[start..end]
}

fn assert_redirect(reply: &Reply, to: &str) {
    assert_eq!(reply.status, 303, "{}", reply.body);
    assert_eq!(reply.header("location"), Some(to));
}

/// Registers a public client: its id and the query of an authorization request for it.
async fn register_client(server: &Server) -> (String, String) {
    let client = post_json(
        &server.url("/oauth/register"),
        &[],
        &json!({"client_name": "Console Test App", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(client.status, 201, "{}", client.body);
    let client_id = client.json()["client_id"].as_str().unwrap().to_string();
    use base64::Engine;
    use sha2::Digest;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(VERIFIER.as_bytes()));
    let query = encode_form(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", REDIRECT),
        ("state", "s"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ]);
    (client_id, query)
}

/// Posts the consent form's `fields` with `more`, the cookies given.
async fn consent(
    server: &Server,
    fields: &[(String, String)],
    more: &[(&str, &str)],
    cookies: &str,
) -> Reply {
    let mut submit: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    submit.extend(more);
    let headers = vec![
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("cookie".to_string(), cookies.to_string()),
    ];
    send(
        "POST",
        &server.url("/oauth/authorize"),
        &headers,
        Some(encode_form(&submit)),
    )
    .await
}

/// The tokens a consent's redirect (`consent`, a 302 with a code) is exchanged for.
async fn exchange(server: &Server, client_id: &str, consent: &Reply) -> Value {
    assert_eq!(consent.status, 302, "{}", consent.body);
    let code = url_param(consent.header("location").unwrap(), "code").expect("a code");
    let tokens = token(
        server,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", client_id),
            ("code_verifier", VERIFIER),
        ],
    )
    .await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    tokens.json()
}

/// Registers a public client and authorises it for `person` through the consent form,
/// signing in with the password: the client id and a refresh token.
async fn authorise_client(server: &Server, person: &Person) -> (String, String) {
    let (client_id, query) = register_client(server).await;
    let page = get(&server.url(&format!("/oauth/authorize?{query}"))).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (fields, cookie) = form_of(&page);
    let more = [
        ("email", person.email.as_str()),
        ("password", PASSWORD),
        ("decision", "allow"),
    ];
    let answer = consent(server, &fields, &more, &cookie).await;
    let tokens = exchange(server, &client_id, &answer).await;
    let refresh = tokens["refresh_token"].as_str().unwrap().to_string();
    (client_id, refresh)
}

/// Issue 29: a browser signed in to the console consents without a second password. The
/// page names the account and offers another (`prompt=login`); its form is bound to the
/// session, so without the session cookie it is refused; the code it gives is the
/// person's (the app is listed on their page). With `prompt=login`, or once the session
/// ended, the page asks for the password again.
#[tokio::test(flavor = "multi_thread")]
async fn the_consent_page_takes_the_console_session_instead_of_a_second_password() {
    let server = Server::start(&[]);
    let alice = sign_up(&server, "alice@example.com").await;
    let (client_id, query) = register_client(&server).await;
    let authorize = format!("/oauth/authorize?{query}");
    let with_session = vec![("cookie".to_string(), alice.cookie.clone())];
    let page = send("GET", &server.url(&authorize), &with_session, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("You are signed in as <strong>alice@example.com</strong>."),
        "{}",
        page.body
    );
    assert!(!page.body.contains("type=\"password\""), "{}", page.body);
    assert!(
        page.body
            .contains("<strong>Console Test App</strong> wants to connect")
    );
    assert!(
        page.body
            .contains("you go back to <strong>127.0.0.1:9</strong>")
    );
    let other = attr_after(&page.body, "id=\"signed-in\"", "href");
    assert!(
        other.starts_with("/oauth/authorize?") && other.ends_with("prompt=login"),
        "{other}"
    );
    assert_eq!(
        page.header("content-security-policy")
            .map(|csp| csp.contains("frame-ancestors 'none'")),
        Some(true)
    );
    let (fields, csrf_cookie) = form_of(&page);

    // The form without the session cookie: refused, nothing issued.
    let refused = consent(&server, &fields, &[("decision", "allow")], &csrf_cookie).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // With it: a code for Alice, her app.
    let both = format!("{csrf_cookie}; {}", alice.cookie);
    let allowed = consent(&server, &fields, &[("decision", "allow")], &both).await;
    let tokens = exchange(&server, &client_id, &allowed).await;
    assert!(tokens["access_token"].is_string(), "{tokens}");
    let access = alice.get(&server, "/console/access").await;
    assert!(
        table(&access.body, "oauth-grants").contains(&format!("data-client-id=\"{client_id}\"")),
        "{}",
        access.body
    );

    // Another account: the password form, though the session is there.
    let login = send(
        "GET",
        &server.url(&other.replace("&amp;", "&")),
        &with_session,
        None,
    )
    .await;
    assert_eq!(login.status, 200, "{}", login.body);
    assert!(login.body.contains("type=\"password\""), "{}", login.body);
    assert!(!login.body.contains("You are signed in as"));

    // Once the session ended, its cookie counts for nothing here either.
    let out = alice
        .post(&server, "/console/access/signout-all", &[], true)
        .await;
    assert_eq!(out.status, 303, "{}", out.body);
    let ended = send("GET", &server.url(&authorize), &with_session, None).await;
    assert!(ended.body.contains("type=\"password\""), "{}", ended.body);
    assert!(!ended.body.contains("You are signed in as"));
}

async fn token(server: &Server, pairs: &[(&str, &str)]) -> Reply {
    let headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    send(
        "POST",
        &server.url("/oauth/token"),
        &headers,
        Some(encode_form(pairs)),
    )
    .await
}

async fn refresh(server: &Server, refresh_token: &str, client_id: &str) -> Reply {
    token(
        server,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
        ],
    )
    .await
}

/// `tools/list` on an MCP URL of this server (personal or temporary): its status.
async fn list_tools(server: &Server, url: &str) -> u16 {
    let path = &url[url.find("/mcp/").expect("an MCP URL")..];
    let (mut headers, body) = modern(1, "tools/list", json!({}));
    headers.push(("content-type".into(), "application/json".into()));
    send("POST", &server.url(path), &headers, Some(body.to_string()))
        .await
        .status
}

#[tokio::test(flavor = "multi_thread")]
async fn console_access_lists_and_revokes_who_can_act_for_you() {
    let server = Server::start(&[]);
    let alice = sign_up(&server, "alice@example.com").await;
    let bob = sign_up(&server, "bob@example.com").await;

    // Nothing yet.
    let page = alice.get(&server, "/console/access").await;
    assert_eq!(page.status, 200);
    for id in [
        "table class=\"stack\" id=\"oauth-grants\"",
        "section id=\"personal-url-status\"",
        "table class=\"stack\" id=\"temporary-urls\"",
        "table class=\"stack\" id=\"shares-granted\"",
        "table class=\"stack\" id=\"shares-received\"",
        "form id=\"signout-all\"",
    ] {
        assert!(page.body.contains(id), "{id} missing");
    }
    // What a share gives, in words, beside the form that makes one (issue 29).
    assert!(page.body.contains(
        "They cannot change or delete anything, they never reach the MCP servers you added"
    ));
    assert!(page.body.contains("You have no personal MCP URL."));
    assert!(!table(&page.body, "oauth-grants").contains("data-client-id"));

    // An app, a personal URL, a temporary URL, shares both ways.
    let (client_id, refresh_token) = authorise_client(&server, &alice).await;
    let personal = alice
        .api(&server, "POST", "/personal/mcp", Some(json!({})))
        .await;
    assert_eq!(personal.status, 200, "{}", personal.body);
    let personal_url = personal.json()["data"]["url"].as_str().unwrap().to_string();
    let temporary = server
        .command(&["temp-url", &alice.user_id, "session-7", "helper"])
        .trim()
        .to_string();
    assert_eq!(list_tools(&server, &temporary).await, 200);
    let shared = alice
        .api(
            &server,
            "POST",
            "/api/shares",
            Some(json!({"grantee": bob.email, "permissions": ["chat"]})),
        )
        .await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    let back = bob
        .api(
            &server,
            "POST",
            "/api/shares",
            Some(json!({"grantee": alice.email, "permissions": ["chat"]})),
        )
        .await;
    assert_eq!(back.status, 200, "{}", back.body);
    // Each waits as an invitation until accepted with a confirmed address.
    server.accept_invitations(&bob.email, &bob.token).await;
    server.accept_invitations(&alice.email, &alice.token).await;

    let page = alice.get(&server, "/console/access").await;
    assert_eq!(page.status, 200);
    assert!(page.body.len() < 50 * 1024, "{} bytes", page.body.len());
    let grants = table(&page.body, "oauth-grants");
    assert!(
        grants.contains(&format!("data-client-id=\"{client_id}\"")),
        "{grants}"
    );
    assert!(grants.contains("Console Test App"));
    assert!(grants.contains("grant-revoke"));
    assert!(page.body.contains("data-state=\"active\""));
    assert!(
        !page.body.contains(&personal_url),
        "the URL itself is on the connect page only"
    );
    let temporary_rows = table(&page.body, "temporary-urls");
    assert!(temporary_rows.contains("helper"), "{temporary_rows}");
    assert!(temporary_rows.contains("session-7"));
    let secret = temporary.rsplit('/').next().unwrap();
    assert!(!page.body.contains(secret), "never the URL's secret");
    assert!(table(&page.body, "shares-granted").contains("bob@example.com"));
    assert!(table(&page.body, "shares-received").contains("bob@example.com"));
    assert!(page.body.contains("share-revoke"));

    // Bob's page shows none of Alice's apps or URLs; her share with him, from his side.
    let bobs = bob.get(&server, "/console/access").await;
    assert!(!bobs.body.contains(&client_id));
    assert!(!bobs.body.contains("session-7"));
    assert!(bobs.body.contains("You have no personal MCP URL."));
    assert!(table(&bobs.body, "shares-received").contains("alice@example.com"));

    // Without the CSRF token: refused, nothing changes.
    let grant_path = format!("/console/access/grants/{client_id}/revoke");
    let forged = alice.post(&server, &grant_path, &[], false).await;
    assert_eq!(forged.status, 403);
    let forged = alice
        .post(
            &server,
            "/console/access/shares/revoke",
            &[("direction", "granted"), ("email", &bob.email)],
            false,
        )
        .await;
    assert_eq!(forged.status, 403);
    let forged = alice
        .post(&server, "/console/access/signout-all", &[], false)
        .await;
    assert_eq!(forged.status, 403);
    let page = alice.get(&server, "/console/access").await;
    assert_eq!(page.status, 200, "still signed in");
    assert!(table(&page.body, "oauth-grants").contains(&client_id));
    assert!(table(&page.body, "shares-granted").contains("bob@example.com"));

    // Withdraw the app: gone from the list, its refresh token refused.
    let withdrawn = alice.post(&server, &grant_path, &[], true).await;
    assert_redirect(&withdrawn, "/console/access?done=grant");
    let page = alice.get(&server, "/console/access?done=grant").await;
    assert!(!table(&page.body, "oauth-grants").contains(&client_id));
    assert!(page.body.contains("its tokens no longer work"));
    let refused = refresh(&server, &refresh_token, &client_id).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.json()["error"], "invalid_grant");

    // Revoke the temporary URL: gone from the list, it no longer resolves. Bob cannot
    // revoke it (nor is it his to see).
    let id = attr_after(
        table(&page.body, "temporary-urls"),
        "data-url-id=",
        "data-url-id",
    );
    let bobs_try = bob
        .post(&server, "/console/access/urls/revoke", &[("id", &id)], true)
        .await;
    assert_eq!(bobs_try.status, 404, "{}", bobs_try.body);
    assert_eq!(list_tools(&server, &temporary).await, 200);
    let revoked = alice
        .post(&server, "/console/access/urls/revoke", &[("id", &id)], true)
        .await;
    assert_redirect(&revoked, "/console/access?done=url");
    assert_ne!(list_tools(&server, &temporary).await, 200);
    let page = alice.get(&server, "/console/access").await;
    assert!(!table(&page.body, "temporary-urls").contains("session-7"));

    // End the share Alice granted, then the one she received.
    let ended = alice
        .post(
            &server,
            "/console/access/shares/revoke",
            &[("direction", "granted"), ("email", &bob.email)],
            true,
        )
        .await;
    assert_redirect(&ended, "/console/access?done=share");
    let delegated = bob
        .api(
            &server,
            "POST",
            "/personal/mcp",
            Some(json!({"user_id": alice.user_id})),
        )
        .await;
    assert_eq!(
        delegated.status, 403,
        "the share is gone: {}",
        delegated.body
    );
    let page = alice.get(&server, "/console/access").await;
    assert!(!table(&page.body, "shares-granted").contains("bob@example.com"));
    assert!(table(&page.body, "shares-received").contains("bob@example.com"));
    let declined = alice
        .post(
            &server,
            "/console/access/shares/revoke",
            &[("direction", "received"), ("user", &bob.user_id)],
            true,
        )
        .await;
    assert_redirect(&declined, "/console/access?done=share");
    let page = alice.get(&server, "/console/access").await;
    assert!(!table(&page.body, "shares-received").contains("bob@example.com"));
    let bobs = bob.get(&server, "/console/access").await;
    assert!(!table(&bobs.body, "shares-granted").contains("alice@example.com"));

    // Sign out everywhere: the cookie session, the bearer token and the personal URL end.
    assert_eq!(list_tools(&server, &personal_url).await, 200);
    let everywhere = alice
        .post(&server, "/console/access/signout-all", &[], true)
        .await;
    assert_redirect(&everywhere, "/console/signin?signed_out=everywhere");
    assert!(
        set_cookies(&everywhere).contains(&"mirobody_session=".to_string()),
        "the cookie is cleared"
    );
    // The sign-in page it lands on says what ended (issue 29).
    let landed = e2e::get(&server.url("/console/signin?signed_out=everywhere")).await;
    assert!(
        landed.body.contains(
            "<p class=\"notice done\" role=\"status\">You are signed out everywhere: every \
             session, every app's access and your personal MCP URL have ended."
        ),
        "{}",
        landed.body
    );
    let after = alice.get(&server, "/console/access").await;
    assert_eq!(after.status, 303, "the old cookie no longer works");
    let api = alice
        .api(&server, "GET", "/api/user/mcp-servers", None)
        .await;
    assert_eq!(api.status, 401, "{}", api.body);
    assert_ne!(list_tools(&server, &personal_url).await, 200);
    // Bob is still signed in.
    assert_eq!(bob.get(&server, "/console/access").await.status, 200);
}

/// The same lists for scripts: `GET /api/shares` (granted and received, by e-mail),
/// `GET /api/user/urls` and `DELETE /api/user/urls/{id}` (only the caller's own).
#[tokio::test(flavor = "multi_thread")]
async fn shares_and_temporary_urls_through_the_json_api() {
    let server = Server::start(&[]);
    let alice = sign_up(&server, "alice@example.com").await;
    let bob = sign_up(&server, "bob@example.com").await;
    let shared = alice
        .api(
            &server,
            "POST",
            "/api/shares",
            Some(json!({"grantee": bob.email, "permissions": ["chat"]})),
        )
        .await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    server.accept_invitations(&bob.email, &bob.token).await;

    // The owner sees who accepted by address, never an account id.
    let alices = alice.api(&server, "GET", "/api/shares", None).await;
    assert_eq!(alices.status, 200, "{}", alices.body);
    assert_eq!(
        alices.json()["data"],
        json!({
            "granted": [{"email": "bob@example.com", "permissions": ["chat"], "status": "accepted"}],
            "received": [],
            "invitations": [],
            "email_confirmed": false,
        })
    );
    let bobs = bob.api(&server, "GET", "/api/shares", None).await;
    assert_eq!(
        bobs.json()["data"],
        json!({
            "granted": [],
            "received": [{"user_id": alice.user_id, "email": "alice@example.com", "permissions": ["chat"]}],
            "invitations": [],
            "email_confirmed": true,
        })
    );
    let anonymous = send("GET", &server.url("/api/shares"), &[], None).await;
    assert_eq!(anonymous.status, 401);

    let temporary = server
        .command(&["temp-url", &alice.user_id, "session-3", "helper"])
        .trim()
        .to_string();
    let listed = alice.api(&server, "GET", "/api/user/urls", None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let urls = listed.json()["data"]["urls"].clone();
    assert_eq!(urls.as_array().unwrap().len(), 1, "{urls}");
    assert_eq!(urls[0]["agent"], "helper");
    assert_eq!(urls[0]["session_id"], "session-3");
    assert!(urls[0]["expires_at"].as_u64().is_some());
    let secret = temporary.rsplit('/').next().unwrap();
    assert!(!listed.body.contains(secret), "never the secret");
    let id = urls[0]["id"].as_str().unwrap().to_string();
    let bobs = bob.api(&server, "GET", "/api/user/urls", None).await;
    assert_eq!(bobs.json()["data"]["urls"], json!([]));

    let path = format!("/api/user/urls/{id}");
    let stranger = bob.api(&server, "DELETE", &path, None).await;
    assert_eq!(stranger.status, 404, "{}", stranger.body);
    assert_eq!(list_tools(&server, &temporary).await, 200);
    let revoked = alice.api(&server, "DELETE", &path, None).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_ne!(list_tools(&server, &temporary).await, 200);
    let again = alice.api(&server, "DELETE", &path, None).await;
    assert_eq!(again.status, 404);
    let listed = alice.api(&server, "GET", "/api/user/urls", None).await;
    assert_eq!(listed.json()["data"]["urls"], json!([]));
}
