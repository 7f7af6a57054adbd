//! Real OAuth clients against `mirobody-local`: headless Chromium (Debian's
//! `chromium`, driven by playwright-core) signs in through the server's HTML pages for the
//! authorization-code flow and for the login prompt (`tests/clients/oauth_browser.mjs`),
//! and the Python SDK's own OAuth support (`mcp` 2.3.0) completes the flow and lists tools
//! (`tests/clients/python_oauth.py`). Their dependencies come from `scripts/install-test-deps`.
//!
//! The SDK only signs in when `/mcp` answers 401, which it does for anonymous callers only
//! with `MIROBODY_REQUIRE_AUTH=true`; by default anonymous callers are served (A7).

use std::path::{Path, PathBuf};

use e2e::{Server, bearer, modern, post_json, python, root, run_client};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";

/// `node`, with Chromium and playwright-core in place.
fn node_with_browser() -> PathBuf {
    assert!(
        Path::new(CHROMIUM).exists(),
        "Chromium is missing ({CHROMIUM}): run scripts/install-test-deps (scripts/test does), \
         which installs Debian's chromium"
    );
    assert!(
        root()
            .join("tests/clients/node_modules/playwright-core")
            .exists(),
        "the npm packages are missing (tests/clients/node_modules/playwright-core): \
         run scripts/install-test-deps (scripts/test does)"
    );
    PathBuf::from("node")
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn chromium_completes_the_code_flow_and_the_login_prompt_through_the_pages() {
    let node = node_with_browser();
    let server = Server::start(&[]);
    let script = root().join("tests/clients/oauth_browser.mjs");
    let report = run_client(&node, &[script.to_str().unwrap(), &server.base]);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["off_loopback_requests"], json!([]), "{report}");

    let code = &report["code_flow"];
    assert_eq!(code["ok"], true, "code flow: {code}");
    assert_eq!(code["signin_page"]["heading"], "Sign in to Mirobody");
    assert_eq!(code["signin_page"]["landed_on_callback"], true, "{code}");
    assert_eq!(code["redirect"]["iss"], server.base.as_str(), "{code}");
    assert_eq!(code["token"]["token_type"], "Bearer");
    assert_eq!(code["tool_call"]["is_error"], false);
    assert_eq!(code["tool_call"]["text_mentions_no_genotype_data"], true);
    assert_eq!(code["refresh"]["rotated"], true);
    assert_eq!(code["refresh"]["old_refresh_error"], "invalid_grant");
    assert_eq!(code["refresh"]["family_revoked_error"], "invalid_grant");
    // Introspection needs a confidential client: the public client
    // is refused (this used to assert `active: true` for an unauthenticated call).
    assert_eq!(
        code["introspection"]["unauthenticated_status"], 401,
        "{code}"
    );
    assert_eq!(
        code["introspection"]["aud"],
        server.url("/mcp").as_str(),
        "the token audience is the resource (RFC 8707)"
    );

    let login = &report["login_prompt"];
    assert_eq!(login["ok"], true, "login prompt: {login}");
    assert_eq!(login["prompt"]["has_authorization_url"], true);
    assert_eq!(login["check_state_before"], "pending");
    // The page says who asked, the browser typed the user code from
    // the tool result, the poll needs the poll secret and hands the token out once.
    assert!(
        login["page"]["asked"]
            .as_str()
            .is_some_and(|asked| asked.starts_with("oauth-browser <test> asked at ")),
        "{login}"
    );
    assert_eq!(login["check_state_without_poll_secret"], 400);
    assert_eq!(login["page"]["after_allow"], "Signed in");
    assert_eq!(login["check_state_after"], "completed");
    assert_eq!(login["check_state_again"], 410);
    assert_eq!(login["tool_call"]["is_error"], false);
    assert_eq!(login["tool_call"]["text_mentions_no_genotype_data"], true);
}

/// The SDK's OAuth flow when `/mcp` requires sign-in: discovery from the 401, dynamic
/// registration, the authorization (played by the test), the token, then tools as the user.
fn python_sdk_signs_in_and_lists_tools(mode: &str) {
    let python = python();
    let server = Server::start(&[("MIROBODY_REQUIRE_AUTH", "true")]);
    let script = root().join("tests/clients/python_oauth.py");
    let report = run_client(
        &python,
        &[script.to_str().unwrap(), &server.base, "--mode", mode],
    );
    assert_eq!(report["authorized"], true, "{report}");
    let requests = strings(&report["requests"]);
    let flow = [
        "POST /mcp",
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /.well-known/oauth-authorization-server",
        "POST /oauth/register",
        "POST /oauth/token",
        "POST /mcp",
    ];
    assert_eq!(
        requests.get(..flow.len()),
        Some(&flow[..]),
        "{mode}: the SDK discovers from the 401, registers, exchanges the code, retries"
    );
    assert_eq!(
        strings(&report["browser_requests"]),
        ["GET /oauth/authorize 200", "POST /oauth/authorize 302"],
        "{mode}"
    );
    assert_eq!(report["client_registered"], true);
    assert_eq!(report["has_refresh_token"], true);
    let scope = report["scope"].as_str().unwrap_or("");
    assert!(
        scope.split(' ').any(|s| s == "mcp:tools"),
        "{mode}: scope {scope:?}"
    );
    assert_eq!(report["protocol"], "2026-07-28", "{mode}");
    let tools = strings(&report["tools"]);
    assert!(
        tools.contains(&"test_simple_text"),
        "{mode}: tools {tools:?}"
    );
    assert!(
        !tools.contains(&"get_genetic_data"),
        "{mode}: tools/list ran as the new user, who has no genotype data, so the tool is hidden: {tools:?}"
    );
    assert_eq!(report["is_error"], false, "{mode}");
    let text = report["text"].as_str().unwrap_or("");
    assert!(
        text.contains("No genotype data"),
        "{mode}: the tool ran for the signed-in user: {text}"
    );
}

#[test]
fn python_sdk_oauth_in_2026_07_28_mode_signs_in_and_lists_tools() {
    python_sdk_signs_in_and_lists_tools("2026-07-28");
}

#[test]
fn python_sdk_oauth_in_auto_mode_signs_in_and_lists_tools() {
    python_sdk_signs_in_and_lists_tools("auto");
}

/// By default nothing on `/mcp` answers 401 to an anonymous caller (tools/list is open, a
/// data tool answers with the login prompt), so the SDK never starts its OAuth flow.
#[test]
fn python_sdk_stays_anonymous_while_the_server_serves_anonymous_callers() {
    let python = python();
    let server = Server::start(&[]);
    let script = root().join("tests/clients/python_oauth.py");
    let report = run_client(
        &python,
        &[
            script.to_str().unwrap(),
            &server.base,
            "--mode",
            "2026-07-28",
        ],
    );
    assert_eq!(report["authorized"], false, "{report}");
    assert!(
        strings(&report["requests"])
            .iter()
            .all(|r| *r == "POST /mcp"),
        "no discovery without a 401: {report}"
    );
    assert!(strings(&report["tools"]).contains(&"get_genetic_data"));
    let text = report["text"].as_str().unwrap_or("");
    let prompt: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{text}"));
    assert!(
        prompt["authorization_url"]
            .as_str()
            .is_some_and(|u| u.contains("/mcplogin?")),
        "the anonymous call gets the login prompt: {text}"
    );
}

/// `MIROBODY_REQUIRE_AUTH` refuses requests without credentials only: a personal URL's
/// secret is a credential, so its URL keeps working without a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_auth_still_serves_personal_urls() {
    let server = Server::start(&[("MIROBODY_REQUIRE_AUTH", "true")]);
    let signup = post_json(
        &server.url("/auth/signup"),
        &[],
        &json!({ "email": "url-owner@example.test", "password": "a long enough password" }),
    )
    .await;
    assert_eq!(signup.status, 201, "{}", signup.body);
    let token = signup.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let minted = post_json(&server.url("/personal/mcp"), &bearer(&token), &json!({})).await;
    assert_eq!(minted.status, 200, "{}", minted.body);
    let url = minted.json()["data"]["url"]
        .as_str()
        .expect("a URL")
        .to_string();

    let (headers, body) = modern(1, "tools/list", json!({}));
    let anonymous = post_json(&server.url("/mcp"), &headers, &body).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    let by_url = post_json(&url, &headers, &body).await;
    assert_eq!(by_url.status, 200, "{}", by_url.body);
    assert!(
        by_url.json()["result"]["tools"].is_array(),
        "{}",
        by_url.body
    );
}
