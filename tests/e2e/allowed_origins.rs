//! End to end: `MCP_ALLOWED_ORIGINS` lets browser-based MCP clients on
//! other origins reach `/mcp` and the bearer-token API (preflight and request), answers
//! `*` without credentials for `*`, never widens the console's pages or the OAuth forms
//! (cookie routes), and a bad value stops start-up naming the setting.

use std::process::{Command, Stdio};

use e2e::{Reply, Server, binary, encode_form, modern, post_json, send};
use serde_json::json;

const APP: &str = "https://app.example";

fn with_origin(origin: &str, mut headers: Vec<(String, String)>) -> Vec<(String, String)> {
    headers.push(("origin".into(), origin.into()));
    headers
}

async fn tools_list(server: &Server, origin: &str) -> Reply {
    let (headers, body) = modern(1, "tools/list", json!({}));
    post_json(&server.url("/mcp"), &with_origin(origin, headers), &body).await
}

async fn preflight(server: &Server, path: &str, origin: &str) -> Reply {
    let headers = vec![
        ("origin".to_string(), origin.to_string()),
        ("access-control-request-method".into(), "POST".into()),
        (
            "access-control-request-headers".into(),
            "authorization, content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region"
                .into(),
        ),
    ];
    send("OPTIONS", &server.url(path), &headers, None).await
}

/// A POST of a console form or an OAuth form from `origin` (the door answers before
/// the CSRF check, so no token is needed to see the refusal).
async fn form_post(server: &Server, path: &str, origin: &str) -> Reply {
    let headers = vec![
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("origin".to_string(), origin.to_string()),
    ];
    let body = encode_form(&[("email", "a@example.com"), ("password", "whatever it is")]);
    send("POST", &server.url(path), &headers, Some(body)).await
}

fn assert_forbidden(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 403, "{what}: {}", reply.body);
    assert_eq!(reply.header("access-control-allow-origin"), None, "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_setting_another_origin_is_refused() {
    let server = Server::start(&[]);
    assert_forbidden(&preflight(&server, "/mcp", APP).await, "preflight");
    assert_forbidden(&tools_list(&server, APP).await, "POST /mcp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_origin_reaches_mcp_and_no_other_does() {
    let server = Server::start(&[(
        "MCP_ALLOWED_ORIGINS",
        "https://APP.example:443/, https://other.example",
    )]);

    let pre = preflight(&server, "/mcp", APP).await;
    assert!(
        (200..300).contains(&pre.status),
        "{}: {}",
        pre.status,
        pre.body
    );
    assert_eq!(pre.header("access-control-allow-origin"), Some(APP));
    assert_eq!(pre.header("access-control-allow-credentials"), None);
    assert!(pre.header("vary").unwrap().contains("Origin"));
    let methods = pre.header("access-control-allow-methods").unwrap();
    assert!(methods.contains("POST"), "{methods}");
    let allowed = pre
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "mcp-param-region",
    ] {
        assert!(
            allowed.split(", ").any(|h| h == name),
            "{name} in {allowed}"
        );
    }

    let listed = tools_list(&server, APP).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(
        listed.json()["result"]["tools"].is_array(),
        "{}",
        listed.body
    );
    assert_eq!(listed.header("access-control-allow-origin"), Some(APP));
    assert_eq!(listed.header("access-control-allow-credentials"), None);

    // The bearer-token API follows the list too.
    let token = server.token("browser-user");
    let headers = with_origin(
        APP,
        vec![("authorization".into(), format!("Bearer {token}"))],
    );
    let data = send("GET", &server.url("/api/data"), &headers, None).await;
    assert_eq!(data.status, 200, "{}", data.body);
    assert_eq!(data.header("access-control-allow-origin"), Some(APP));

    for origin in ["https://evil.example", "http://app.example", "null"] {
        assert_forbidden(&preflight(&server, "/mcp", origin).await, origin);
        assert_forbidden(&tools_list(&server, origin).await, origin);
    }
    // Cookie routes keep their strict check, listed origin or not.
    assert_forbidden(&form_post(&server, "/console/signin", APP).await, "console");
    assert_forbidden(
        &form_post(&server, "/oauth/authorize", APP).await,
        "consent form",
    );
    assert_forbidden(&form_post(&server, "/mcplogin", APP).await, "mcplogin form");
    // Loopback pages still work as before.
    let local = tools_list(&server, "http://localhost:5173").await;
    assert_eq!(local.status, 200, "{}", local.body);
    assert_eq!(
        local.header("access-control-allow-origin"),
        Some("http://localhost:5173")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn star_lets_any_origin_call_mcp_without_credentials_but_never_the_cookie_routes() {
    let server = Server::start(&[("MCP_ALLOWED_ORIGINS", "*")]);
    for origin in ["https://anywhere.example", "https://app.example:8443"] {
        let pre = preflight(&server, "/mcp", origin).await;
        assert!((200..300).contains(&pre.status), "{}", pre.body);
        assert_eq!(pre.header("access-control-allow-origin"), Some("*"));
        assert_eq!(pre.header("access-control-allow-credentials"), None);
        let listed = tools_list(&server, origin).await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        assert_eq!(listed.header("access-control-allow-origin"), Some("*"));
        assert_eq!(listed.header("access-control-allow-credentials"), None);
    }
    let foreign = "https://anywhere.example";
    for path in [
        "/console/signin",
        "/console/signup",
        "/oauth/authorize",
        "/mcplogin",
    ] {
        assert_forbidden(&form_post(&server, path, foreign).await, path);
    }
    let page = send(
        "GET",
        &server.url("/console"),
        &[("origin".into(), foreign.into())],
        None,
    )
    .await;
    assert_forbidden(&page, "console page");
    // The Host check is not widened: the setting names other sites, not this server.
    let (headers, body) = modern(1, "tools/list", json!({}));
    let mut headers = with_origin(foreign, headers);
    headers.push(("host".into(), "evil.example".into()));
    let rebound = post_json(&server.url("/mcp"), &headers, &body).await;
    assert_eq!(rebound.status, 403, "{}", rebound.body);
}

#[test]
fn a_bad_value_stops_start_up_naming_the_setting() {
    for bad in [
        "app.example",
        "https://app.example/mcp",
        "https://a.example, *",
    ] {
        let output = Command::new(binary("mirobody-local"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HTTP_PORT", "0")
            .env(
                "MIROBODY_DATA_DIR",
                std::env::temp_dir().join("mirobody-e2e-origins-bad"),
            )
            .env("MCP_ALLOWED_ORIGINS", bad)
            .stdin(Stdio::null())
            .output()
            .expect("mirobody-local runs");
        assert!(!output.status.success(), "{bad}: started anyway");
        assert!(output.stdout.is_empty(), "{bad}: it listened");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("MCP_ALLOWED_ORIGINS"), "{bad}: {stderr}");
    }
}
