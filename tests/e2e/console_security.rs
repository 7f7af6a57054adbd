//! The web console's defences, each attack over HTTP against the real
//! `mirobody-local`: CSRF on every console POST of the route table (no token, another
//! session's token: 403, nothing changed), the session cookie's flags (`HttpOnly`,
//! `SameSite=Lax`, `Path=/`, `Secure` exactly on https), sign-out ending the session on
//! the server, clickjacking and inline-script protection on every page, the cookie never
//! accepted by the JSON API or `/mcp`, cross-site `Origin` posts refused, `next=` never
//! leaving the site, and one person's pages never showing another's data.

use e2e::remote_server::RemoteServer;
use e2e::{
    MODERN, Reply, Server, bearer, encode_form, form_of, get, in_process, listed_tools, modern,
    post_json, rpc, send,
};
use mirobody::RouteGroup;
use mirobody::routes::templates;
use serde_json::json;

const PASSWORD: &str = "correct-horse-battery-staple";
const SESSION_COOKIE: &str = "mirobody_session";

/// A person signed in to the console: their session cookie and its CSRF token.
struct Person {
    email: String,
    cookie: String,
    csrf: String,
}

/// Every `Set-Cookie` of a reply.
fn set_cookies(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect()
}

/// The `Set-Cookie` of the session cookie, if the reply sets it.
fn session_set_cookie(reply: &Reply) -> Option<String> {
    set_cookies(reply)
        .into_iter()
        .find(|c| c.starts_with(&format!("{SESSION_COOKIE}=")))
}

/// The value of attribute `name` on the first element that has it.
fn attribute(body: &str, name: &str) -> Option<String> {
    let start = body.find(&format!("{name}=\""))? + name.len() + 2;
    let end = start + body[start..].find('"')?;
    Some(body[start..end].replace("&amp;", "&"))
}

/// Signs up through the console's own form, as a browser does.
async fn sign_up(server: &Server, email: &str) -> Person {
    let form = get(&server.url("/console/signup")).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let (fields, nonce) = form_of(&form);
    let mut pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([("email", email), ("password", PASSWORD)]);
    let done = send(
        "POST",
        &server.url("/console/signup"),
        &[
            (
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            ),
            ("cookie".into(), nonce),
        ],
        Some(encode_form(&pairs)),
    )
    .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie = session_set_cookie(&done)
        .expect("sign-up sets the session cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let csrf = csrf_of(server, &cookie).await;
    Person {
        email: email.to_string(),
        cookie,
        csrf,
    }
}

/// The CSRF token of the session behind `cookie` (the page's `main[data-csrf]`).
async fn csrf_of(server: &Server, cookie: &str) -> String {
    let page = page(server, "/console/password", cookie).await;
    assert_eq!(page.status, 200, "{}", page.body);
    attribute(&page.body, "data-csrf").expect("main[data-csrf]")
}

async fn page(server: &Server, path: &str, cookie: &str) -> Reply {
    send(
        "GET",
        &server.url(path),
        &[("cookie".into(), cookie.into())],
        None,
    )
    .await
}

/// A form post with `cookie` and extra headers.
async fn post_form(
    server: &Server,
    path: &str,
    cookie: Option<&str>,
    pairs: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> Reply {
    let mut headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    if let Some(cookie) = cookie {
        headers.push(("cookie".into(), cookie.into()));
    }
    headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    send(
        "POST",
        &server.url(path),
        &headers,
        Some(encode_form(pairs)),
    )
    .await
}

/// The session token of a JSON-API sign-in (a separate session from the cookie's).
async fn api_token(server: &Server, email: &str, password: &str) -> Reply {
    post_json(
        &server.url("/auth/signin"),
        &[],
        &json!({ "email": email, "password": password }),
    )
    .await
}

/// A sample path for a route template.
fn sample(path: &str) -> String {
    path.replace("{file}", "console.css")
        .replace("{indicator}", "HbA1c")
        .replace("{id}", "no-such-upload")
        .replace("{name}", "shop")
        .replace("{client_id}", "no-such-client")
}

/// The console's routes of the route table: (method, sample path).
fn console_routes() -> Vec<(&'static str, String)> {
    let routes: Vec<(&str, String)> = templates()
        .filter(|(_, _, group)| *group == RouteGroup::Console)
        .map(|(method, path, _)| (method, sample(path)))
        .collect();
    assert!(routes.len() >= 30, "the console's rows went missing");
    routes
}

/// Pages a signed-out person may post to (their CSRF is a nonce cookie, not a session).
fn signed_out(path: &str) -> bool {
    matches!(
        path,
        "/console/signup"
            | "/console/signin"
            | "/console/confirm"
            | "/console/forgot"
            | "/console/reset"
    )
}

/// Whether the session behind `cookie` is still alive (a page, not a redirect).
async fn alive(server: &Server, cookie: &str) -> bool {
    page(server, "/console/password", cookie).await.status == 200
}

#[tokio::test]
async fn every_console_post_refuses_a_missing_or_foreign_csrf_token_and_changes_nothing() {
    let server = Server::start(&[]);
    let alice = sign_up(&server, "alice-csrf@example.com").await;
    let mallory = sign_up(&server, "mallory-csrf@example.com").await;

    // Alice's state, made through the JSON API: readings, a personal URL.
    let signed_in = api_token(&server, &alice.email, PASSWORD).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let token = signed_in.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let csv = "indicator,value,unit,time\nHbA1c,5.4,%,2026-03-01\n";
    let uploaded = send(
        "POST",
        &server.url("/api/data/health"),
        &[
            ("authorization".into(), format!("Bearer {token}")),
            ("content-type".into(), "text/csv".into()),
        ],
        Some(csv.into()),
    )
    .await;
    assert_eq!(uploaded.status, 200, "{}", uploaded.body);
    let minted = send("POST", &server.url("/personal/mcp"), &bearer(&token), None).await;
    assert_eq!(minted.status, 200, "{}", minted.body);
    let personal_url = minted.json()["data"]["url"].as_str().unwrap().to_string();

    // What a forged form would carry if the check were missing: every field any console
    // form takes, Alice's password included.
    let forged: Vec<(&str, &str)> = vec![
        ("email", "forged-account@example.com"),
        ("password", PASSWORD),
        ("current_password", PASSWORD),
        ("new_password", "attacker-chosen-password"),
        ("name", "evil"),
        ("url", "http://127.0.0.1:9/mcp"),
        ("auth_type", "none"),
        ("grantee", "mallory-csrf@example.com"),
        ("token", "a-forged-link-token-of-enough-length"),
        ("id", "a-forged-invitation-id"),
        ("kind", "health"),
        ("filename", "forged.csv"),
        ("confirm", "yes"),
        ("next", "/console/data"),
    ];
    let mut checked = 0;
    for (method, path) in console_routes() {
        if method != "POST" {
            continue;
        }
        checked += 1;
        if signed_out(&path) {
            // No nonce cookie, no token: refused, and no session starts.
            let reply = post_form(&server, &path, None, &forged, &[]).await;
            assert_eq!(reply.status, 403, "{path}: {}", reply.body);
            assert!(session_set_cookie(&reply).is_none(), "{path}");
            // A token of Mallory's session is no signed-out form's token either.
            let mut with_token = forged.clone();
            with_token.push(("csrf", &mallory.csrf));
            let reply = post_form(&server, &path, None, &with_token, &[]).await;
            assert_eq!(reply.status, 403, "{path}: {}", reply.body);
            continue;
        }
        // Alice's cookie without a token.
        let reply = post_form(&server, &path, Some(&alice.cookie), &forged, &[]).await;
        assert_eq!(reply.status, 403, "{path} without a token: {}", reply.body);
        // Alice's cookie with Mallory's token, in the form and in the script's header.
        let mut with_token = forged.clone();
        with_token.push(("csrf", &mallory.csrf));
        let reply = post_form(&server, &path, Some(&alice.cookie), &with_token, &[]).await;
        assert_eq!(
            reply.status, 403,
            "{path} with another session's token: {}",
            reply.body
        );
        let reply = post_form(
            &server,
            &path,
            Some(&alice.cookie),
            &forged,
            &[("x-csrf-token", &mallory.csrf)],
        )
        .await;
        assert_eq!(
            reply.status, 403,
            "{path} with another session's token in the header: {}",
            reply.body
        );
        assert!(session_set_cookie(&reply).is_none(), "{path}");
    }
    assert!(checked >= 15, "only {checked} console POST routes");

    // Nothing changed: Alice is still signed in with her password, her data and her
    // personal URL are there, no upload was created, no account was made.
    assert!(
        alive(&server, &alice.cookie).await,
        "a forged sign-out ended the session"
    );
    assert!(alive(&server, &mallory.cookie).await);
    assert_eq!(
        api_token(&server, &alice.email, PASSWORD).await.status,
        200,
        "the password or the account changed"
    );
    let summary = send("GET", &server.url("/api/data"), &bearer(&token), None).await;
    assert_eq!(summary.status, 200, "{}", summary.body);
    assert_eq!(summary.json()["data"]["health"], true, "{}", summary.body);
    let listed = rpc(&personal_url, None, "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "the personal URL was revoked");
    let uploads = send(
        "GET",
        &server.url("/api/data/uploads"),
        &bearer(&token),
        None,
    )
    .await;
    assert!(!uploads.body.contains("forged.csv"), "{}", uploads.body);
    assert_eq!(
        api_token(&server, "forged-account@example.com", PASSWORD)
            .await
            .status,
        401,
        "a forged sign-up made an account"
    );
}

#[tokio::test]
async fn the_session_cookie_is_httponly_lax_for_the_whole_site_and_secure_only_on_https() {
    // http (the local server): no Secure, or the browser would never send it back.
    let server = Server::start(&[]);
    let form = get(&server.url("/console/signup")).await;
    let (fields, nonce) = form_of(&form);
    let mut pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([("email", "flags@example.com"), ("password", PASSWORD)]);
    let done = post_form(&server, "/console/signup", Some(&nonce), &pairs, &[]).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie = session_set_cookie(&done).expect("the session cookie");
    let attributes: Vec<String> = cookie
        .split(';')
        .skip(1)
        .map(|a| a.trim().to_ascii_lowercase())
        .collect();
    for wanted in ["httponly", "samesite=lax", "path=/"] {
        assert!(attributes.contains(&wanted.to_string()), "{cookie}");
    }
    assert!(!attributes.contains(&"secure".to_string()), "{cookie}");
    assert!(
        attributes.iter().any(|a| a.starts_with("max-age=")),
        "{cookie}"
    );

    // Signing out clears it (Max-Age=0, same flags).
    let value = cookie.split(';').next().unwrap().to_string();
    let csrf = csrf_of(&server, &value).await;
    let out = post_form(
        &server,
        "/console/signout",
        Some(&value),
        &[("csrf", &csrf)],
        &[],
    )
    .await;
    assert_eq!(out.status, 303);
    let cleared = session_set_cookie(&out).expect("sign-out clears the cookie");
    assert!(
        cleared.contains("Max-Age=0") && cleared.contains("HttpOnly"),
        "{cleared}"
    );

    // https (MCP_PUBLIC_URL): every cookie the console sets is Secure.
    let app = in_process(&[("MCP_PUBLIC_URL", "https://console.example.com")]);
    let host = [("host".to_string(), "console.example.com".to_string())];
    let form = app
        .send("GET", "/console/signup", &host, String::new())
        .await;
    assert_eq!(form.status, 200, "{}", form.body);
    let nonce_cookie = set_cookies(&form).remove(0);
    assert!(nonce_cookie.contains("; Secure"), "{nonce_cookie}");
    let (fields, nonce) = form_of(&form);
    let mut pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([("email", "secure@example.com"), ("password", PASSWORD)]);
    let done = app
        .send(
            "POST",
            "/console/signup",
            &[
                host[0].clone(),
                (
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
                ("cookie".into(), nonce),
            ],
            encode_form(&pairs),
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie = session_set_cookie(&done).expect("the session cookie");
    for wanted in ["HttpOnly", "SameSite=Lax", "Path=/", "Secure"] {
        assert!(
            cookie.split("; ").any(|a| a == wanted),
            "{wanted}: {cookie}"
        );
    }
}

#[tokio::test]
async fn sign_out_ends_the_session_on_the_server_and_the_old_cookie_is_refused() {
    let server = Server::start(&[]);
    let person = sign_up(&server, "replay@example.com").await;
    assert!(alive(&server, &person.cookie).await);
    let out = post_form(
        &server,
        "/console/signout",
        Some(&person.cookie),
        &[("csrf", &person.csrf)],
        &[],
    )
    .await;
    assert_eq!(out.status, 303);
    assert_eq!(
        out.header("location"),
        Some("/console/signin?signed_out=here")
    );
    // The browser forgot the cookie; an attacker who kept a copy replays it.
    for path in ["/console/data", "/console/password", "/console/account"] {
        let replay = page(&server, path, &person.cookie).await;
        assert_eq!(replay.status, 303, "{path}");
        assert!(
            replay
                .header("location")
                .is_some_and(|l| l.starts_with("/console/signin")),
            "{path}: {:?}",
            replay.header("location")
        );
    }
    let replayed_post = post_form(
        &server,
        "/console/password",
        Some(&person.cookie),
        &[
            ("csrf", &person.csrf),
            ("current_password", PASSWORD),
            ("new_password", "attacker-chosen-password"),
        ],
        &[],
    )
    .await;
    assert_eq!(replayed_post.status, 303, "{}", replayed_post.body);
    assert_eq!(
        api_token(&server, &person.email, PASSWORD).await.status,
        200,
        "the password did not change"
    );
}

/// The `Content-Security-Policy` directives of a reply, by name.
fn csp(reply: &Reply, path: &str) -> Vec<(String, String)> {
    let policy = reply
        .header("content-security-policy")
        .unwrap_or_else(|| panic!("{path}: no CSP"));
    policy
        .split(';')
        .filter_map(|d| {
            let d = d.trim();
            let (name, value) = d.split_once(' ').unwrap_or((d, ""));
            (!name.is_empty()).then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// Framing refused, no inline script, no inline style attribute, small.
fn assert_page_defences(reply: &Reply, path: &str) {
    assert_eq!(reply.header("x-frame-options"), Some("DENY"), "{path}");
    let directives = csp(reply, path);
    let directive = |name: &str| {
        directives
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{path}: no {name} in the CSP"))
    };
    assert_eq!(directive("frame-ancestors"), "'none'", "{path}");
    let scripts = directive("script-src");
    assert!(
        !scripts.contains("unsafe-inline") && !scripts.contains("unsafe-eval"),
        "{path}: script-src {scripts}"
    );
    assert!(
        !directive("style-src").contains("unsafe-inline"),
        "{path}: inline styles allowed"
    );
    let html = reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/html"));
    if html {
        let body = &reply.body;
        for (at, _) in body.match_indices("<script") {
            let tag = &body[at..at + body[at..].find('>').unwrap_or(0)];
            assert!(tag.contains(" src="), "{path}: an inline script: {tag}");
        }
        assert!(
            !body.contains(" style=") && !body.contains(" onclick=") && !body.contains(" onload="),
            "{path}: inline style or handler"
        );
        assert!(
            body.len() < 50 * 1024,
            "{path}: {} bytes (pages stay under 50 KB)",
            body.len()
        );
    }
}

#[tokio::test]
async fn every_console_page_refuses_framing_and_inline_script() {
    let server = Server::start(&[]);
    let person = sign_up(&server, "frames@example.com").await;
    let mut pages = 0;
    for (method, path) in console_routes() {
        if method != "GET" {
            continue;
        }
        // Signed out (a form, or the redirect to one) and signed in.
        let anonymous = get(&server.url(&path)).await;
        assert_page_defences(&anonymous, &path);
        let signed_in = page(&server, &path, &person.cookie).await;
        assert!(signed_in.status < 500, "{path}: {}", signed_in.status);
        assert_page_defences(&signed_in, &path);
        pages += 1;
    }
    assert!(pages >= 15, "only {pages} console GET routes");
    // Refusals and error pages carry the same headers.
    let refused = post_form(&server, "/console/signout", Some(&person.cookie), &[], &[]).await;
    assert_eq!(refused.status, 403);
    assert_page_defences(&refused, "a refused post");
}

#[tokio::test]
async fn the_cookie_is_not_a_credential_for_the_json_api_or_mcp() {
    let server = Server::start(&[]);
    let person = sign_up(&server, "cookie-only@example.com").await;
    let cookie = [("cookie".to_string(), person.cookie.clone())];
    for (method, path) in [
        ("GET", "/api/data"),
        ("POST", "/personal/mcp"),
        ("GET", "/api/user/mcp-servers"),
        ("GET", "/api/data/uploads"),
        ("DELETE", "/api/data"),
    ] {
        let reply = send(method, &server.url(path), &cookie, None).await;
        assert_eq!(reply.status, 401, "{method} {path}: {}", reply.body);
    }
    // /mcp with only the cookie is an anonymous caller: a tool that needs the caller
    // answers with the login prompt, exactly as with no cookie at all.
    let (mut headers, body) = modern(
        1,
        "tools/call",
        json!({ "name": "query_health_indicators", "arguments": { "keywords": ["HbA1c"] } }),
    );
    headers.extend(cookie.iter().cloned());
    let with_cookie = post_json(&server.url("/mcp"), &headers, &body).await;
    assert_eq!(with_cookie.status, 200, "{}", with_cookie.body);
    let text = with_cookie.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        text.contains("authorization_url"),
        "the cookie signed /mcp in: {text}"
    );
    let listed = rpc(&server.url("/mcp"), None, "tools/list", json!({})).await;
    let (mut headers, body) = modern(2, "tools/list", json!({}));
    headers.extend(cookie.iter().cloned());
    let listed_with_cookie = post_json(&server.url("/mcp"), &headers, &body).await;
    assert_eq!(
        listed_tools(&listed.json()),
        listed_tools(&listed_with_cookie.json()),
        "{MODERN}: the cookie changed what /mcp lists"
    );
}

#[tokio::test]
async fn a_cross_site_origin_post_is_refused() {
    let server = Server::start(&[]);
    let person = sign_up(&server, "origin@example.com").await;
    for origin in [
        "https://evil.example",
        "null",
        "http://127.0.0.1.evil.example",
    ] {
        let reply = post_form(
            &server,
            "/console/signout",
            Some(&person.cookie),
            &[("csrf", &person.csrf)],
            &[("origin", origin)],
        )
        .await;
        assert_eq!(reply.status, 403, "{origin}: {}", reply.body);
        let reply = post_form(
            &server,
            "/console/signin",
            None,
            &[("email", "origin@example.com"), ("password", PASSWORD)],
            &[("origin", origin)],
        )
        .await;
        assert_eq!(reply.status, 403, "{origin}");
        assert!(session_set_cookie(&reply).is_none());
    }
    assert!(
        alive(&server, &person.cookie).await,
        "a cross-site post ended the session"
    );
    // The same post from the console's own origin goes through.
    let reply = post_form(
        &server,
        "/console/signout",
        Some(&person.cookie),
        &[("csrf", &person.csrf)],
        &[("origin", &server.base)],
    )
    .await;
    assert_eq!(reply.status, 303, "{}", reply.body);
}

/// Whether a browser following `location` from the console stays on the server (the
/// URL standard's parsing: a backslash is a slash, `//host` leaves the origin).
fn on_site(server: &Server, location: &str) -> bool {
    let base = reqwest::Url::parse(&server.url("/console/signin")).unwrap();
    base.join(location)
        .is_ok_and(|url| url.origin() == base.origin() && url.path().starts_with("/console/"))
}

#[tokio::test]
async fn next_never_redirects_off_site() {
    let server = Server::start(&[]);
    sign_up(&server, "next@example.com").await;
    for next in [
        "https://evil.example/",
        "//evil.example/",
        "/\\evil.example",
        "\\\\evil.example",
        "javascript:alert(1)",
        "http:evil.example",
        "/console/data\r\nLocation: https://evil.example",
        "%2F%2Fevil.example",
        "/console//evil.example",
    ] {
        // The form carries only a console path onward.
        let form = get(&server.url(&format!(
            "/console/signin?next={}",
            encode_form(&[("x", next)]).trim_start_matches("x=")
        )))
        .await;
        assert_eq!(form.status, 200);
        let carried = form
            .body
            .split("name=\"next\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_default()
            .to_string();
        assert!(
            on_site(&server, &carried),
            "{next:?}: the form carries {carried:?}"
        );
        // A forged post of the field itself.
        let (fields, nonce) = form_of(&form);
        let mut pairs: Vec<(&str, &str)> = fields
            .iter()
            .filter(|(k, _)| k != "next")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        pairs.extend([
            ("email", "next@example.com"),
            ("password", PASSWORD),
            ("next", next),
        ]);
        let done = post_form(&server, "/console/signin", Some(&nonce), &pairs, &[]).await;
        assert_eq!(done.status, 303, "{next:?}: {}", done.body);
        // (A `next` with a line break makes no header value: the 303 then has no
        // Location at all, which sends the browser nowhere.)
        let location = done.header("location").unwrap_or_default();
        assert!(
            location.is_empty()
                || (location.starts_with("/console/") && on_site(&server, location)),
            "{next:?} sent the browser to {location:?}"
        );
    }
}

/// Every console page a person can reach by GET, with their own indicator's page.
fn readable_pages(indicator: &str) -> Vec<String> {
    let mut pages: Vec<String> = console_routes()
        .into_iter()
        .filter(|(method, path)| *method == "GET" && !path.starts_with("/console/assets/"))
        .map(|(_, path)| path)
        .collect();
    let encoded = encode_form(&[("x", indicator)]);
    pages.push(format!(
        "/console/data/{}",
        encoded.trim_start_matches("x=")
    ));
    pages.push("/console/genome?rsid=rs4680".to_string());
    pages
}

#[tokio::test]
async fn one_persons_pages_never_show_another_persons_data() {
    let remote = RemoteServer::start(&["--token", "zyx-remote-token-51c0"]);
    let server = Server::start(&[("MIROBODY_REMOTE_DEV_LOOPBACK", "true")]);
    let alice = sign_up(&server, "alice-private@example.com").await;
    let bob = sign_up(&server, "bob-private@example.com").await;
    let indicator = "Zyxomarker Alpha";
    let signed_in = api_token(&server, &alice.email, PASSWORD).await;
    let token = signed_in.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let csv = format!(
        "indicator,value,unit,time\n{indicator},731.25,mg/dL,2026-03-01\n{indicator},733.5,mg/dL,2026-03-02\n"
    );
    let uploaded = send(
        "POST",
        &server.url("/api/data/health"),
        &[
            ("authorization".into(), format!("Bearer {token}")),
            ("content-type".into(), "text/csv".into()),
        ],
        Some(csv),
    )
    .await;
    assert_eq!(uploaded.status, 200, "{}", uploaded.body);
    let genome = "# rsid\tchromosome\tposition\tgenotype\nrs4680\t22\t19951271\tAG\n";
    let uploaded = send(
        "POST",
        &server.url("/api/data/genotype"),
        &[
            ("authorization".into(), format!("Bearer {token}")),
            ("content-type".into(), "text/plain".into()),
        ],
        Some(genome.into()),
    )
    .await;
    assert_eq!(uploaded.status, 200, "{}", uploaded.body);
    let minted = send("POST", &server.url("/personal/mcp"), &bearer(&token), None).await;
    let personal_url = minted.json()["data"]["url"].as_str().unwrap().to_string();
    let secret = personal_url.rsplit('/').next().unwrap().to_string();
    // An MCP server of Alice's own (probed on registration, so it must answer).
    let registered = send(
        "POST",
        &server.url("/api/user/mcp-servers"),
        &[
            ("authorization".into(), format!("Bearer {token}")),
            ("content-type".into(), "application/json".into()),
        ],
        Some(
            json!({
                "name": "zyxshop",
                "url": remote.url(),
                "auth": {"type": "BEARER", "token": "zyx-remote-token-51c0"},
            })
            .to_string(),
        ),
    )
    .await;
    assert_eq!(registered.status, 201, "{}", registered.body);

    let alices: Vec<&str> = vec![
        "alice-private@example.com",
        indicator,
        "731.25",
        "733.5",
        &secret,
        "zyxshop",
        "zyx-remote-token-51c0",
    ];
    let mut shown_to_alice = 0;
    for path in readable_pages(indicator) {
        let reply = page(&server, &path, &bob.cookie).await;
        assert!(reply.status < 500, "{path}: {}", reply.status);
        for private in &alices {
            assert!(
                !reply.body.contains(private),
                "{path}: Bob's page shows Alice's {private:?}"
            );
        }
        // The same page for Alice does show her data, once the page is built (a
        // stub says "Coming soon.").
        let hers = page(&server, &path, &alice.cookie).await;
        if hers.body.contains(indicator) {
            shown_to_alice += 1;
        }
    }
    let servers = page(&server, "/console/servers", &alice.cookie).await;
    if !servers.body.contains("Coming soon") {
        assert!(
            servers.body.contains("zyxshop"),
            "Alice's servers page lacks hers"
        );
        assert!(
            !servers.body.contains("zyx-remote-token-51c0"),
            "the server's credential on a page"
        );
    }
    let catalogue = page(&server, "/console/data", &alice.cookie).await;
    if !catalogue.body.contains("Coming soon") {
        assert!(
            catalogue.body.contains(indicator),
            "Alice's catalogue lacks her indicator"
        );
        assert!(
            shown_to_alice >= 2,
            "her indicator on {shown_to_alice} pages"
        );
    }
    // Bob's export holds nothing of Alice's either.
    let export = page(&server, "/console/account/export", &bob.cookie).await;
    for private in &alices {
        assert!(!export.body.contains(private), "Bob's export: {private:?}");
    }
}
