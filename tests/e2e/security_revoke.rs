//! Revocation: sign-out, sign-out everywhere, password change, withdrawing an
//! OAuth client's grant, and RFC 7009 revocation, each over HTTP against the real
//! binary. Before, a JWT worked until it expired whatever the user did; each test shows
//! the token the user ended now answers 401 (and its refresh token `invalid_grant`),
//! while what the user did not end keeps working.
//!
//! A grantee's delegated URL, a temporary agent URL and an
//! authorization code not yet exchanged answer to their holder's remedies too.

use e2e::oauth_flow;
use e2e::{Reply, Server, bearer_json, form_with_cookie, get, post_json, rpc, sign_up_as};
use serde_json::json;

const PASSWORD: &str = "a long enough password";

/// An OAuth client's tokens: what the authorization code flow gave it.
struct ClientTokens {
    client_id: String,
    access: String,
    refresh: String,
}

async fn sign_up(server: &Server, email: &str) -> String {
    sign_up_as(server, email, PASSWORD).await.1
}

async fn sign_in(server: &Server, email: &str, password: &str) -> Reply {
    let body = json!({ "email": email, "password": password });
    post_json(&server.url("/auth/signin"), &[], &body).await
}

async fn session(server: &Server, email: &str) -> String {
    let reply = sign_in(server, email, PASSWORD).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"]["token"].as_str().unwrap().to_string()
}

/// The user (`email`) consents to a new public client named `name` for `mcp:tools`;
/// the client's access and refresh tokens.
async fn authorise(server: &Server, email: &str, name: &str) -> ClientTokens {
    authorise_as(server, email, name, "none").await.0
}

/// As [`authorise`], for a client authenticating with `method`; also its secret, if any.
async fn authorise_as(
    server: &Server,
    email: &str,
    name: &str,
    method: &str,
) -> (ClientTokens, Option<String>) {
    let client = oauth_flow::register(server, name, method).await;
    let code = oauth_flow::allow(server, &client, "mcp:tools", (email, PASSWORD), &[]).await;
    let tokens = oauth_flow::exchange(server, &client, &code).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let tokens = tokens.json();
    let tokens = ClientTokens {
        client_id: client.id,
        access: tokens["access_token"].as_str().unwrap().to_string(),
        refresh: tokens["refresh_token"].as_str().unwrap().to_string(),
    };
    (tokens, client.secret)
}

/// The client refreshes: the reply of the token endpoint.
async fn refresh(server: &Server, client: &ClientTokens) -> Reply {
    form_with_cookie(
        server,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &client.refresh),
            ("client_id", &client.client_id),
        ],
        None,
    )
    .await
}

/// `tools/list` on `/mcp` with `token`: its status.
async fn mcp_status(server: &Server, token: &str) -> u16 {
    rpc(&server.url("/mcp"), Some(token), "tools/list", json!({}))
        .await
        .status
}

/// `GET /api/data` with `token`: its status.
async fn data_status(server: &Server, token: &str) -> u16 {
    bearer_json(server, "GET", "/api/data", token, None)
        .await
        .status
}

/// A 401 with the usual challenge: the ended token is as good as a forged one.
fn assert_ended(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {}", reply.body);
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|c| c.contains("invalid_token")),
        "{what}: {:?}",
        reply.headers
    );
}

fn assert_refused_refresh(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 400, "{what}: {}", reply.body);
    assert_eq!(reply.json()["error"], "invalid_grant", "{what}");
}

/// Sign-out: the token that signed out answers 401 on `/mcp` and on `/api/data`; the
/// user's other session keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_ends_that_session_and_only_that_one() {
    let server = Server::start(&[]);
    let email = "signout@example.com";
    let leaving = sign_up(&server, email).await;
    let staying = session(&server, email).await;
    assert_eq!(mcp_status(&server, &leaving).await, 200);
    assert_eq!(data_status(&server, &leaving).await, 200);

    let out = bearer_json(&server, "POST", "/auth/signout", &leaving, None).await;
    assert_eq!(out.status, 200, "{}", out.body);

    let mcp = rpc(&server.url("/mcp"), Some(&leaving), "tools/list", json!({})).await;
    assert_ended(&mcp, "the signed-out token on /mcp");
    let data = bearer_json(&server, "GET", "/api/data", &leaving, None).await;
    assert_ended(&data, "the signed-out token on /api/data");
    let again = bearer_json(&server, "POST", "/auth/signout", &leaving, None).await;
    assert_ended(&again, "signing out twice");

    assert_eq!(
        mcp_status(&server, &staying).await,
        200,
        "the other session"
    );
    assert_eq!(
        data_status(&server, &staying).await,
        200,
        "the other session"
    );
}

/// Sign-out everywhere: a second session, the personal URL made with a session, and an
/// OAuth client's access and refresh tokens all end; signing in again works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_everywhere_ends_every_session_grant_and_the_personal_url() {
    let server = Server::start(&[]);
    let email = "everywhere@example.com";
    let first = sign_up(&server, email).await;
    let second = session(&server, email).await;
    let url = bearer_json(&server, "POST", "/personal/mcp", &second, Some(json!({}))).await;
    assert_eq!(url.status, 200, "{}", url.body);
    let personal = url.json()["data"]["url"].as_str().unwrap().to_string();
    let path = personal.split_once("/mcp/").unwrap().1.to_string();
    let personal_url = server.url(&format!("/mcp/{path}"));
    assert_eq!(
        rpc(&personal_url, None, "tools/list", json!({}))
            .await
            .status,
        200
    );
    let app = authorise(&server, email, "An MCP client").await;
    assert_eq!(mcp_status(&server, &app.access).await, 200);

    // An app's token may not sign the person out.
    let by_app = bearer_json(&server, "POST", "/auth/signout-all", &app.access, None).await;
    assert_eq!(by_app.status, 403, "{}", by_app.body);

    let out = bearer_json(&server, "POST", "/auth/signout-all", &first, None).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(out.json()["data"]["personal_url_revoked"], true);

    for (what, token) in [("this session", &first), ("the other session", &second)] {
        let mcp = rpc(&server.url("/mcp"), Some(token), "tools/list", json!({})).await;
        assert_ended(&mcp, &format!("{what} on /mcp"));
        let data = bearer_json(&server, "GET", "/api/data", token, None).await;
        assert_ended(&data, &format!("{what} on /api/data"));
    }
    let app_mcp = rpc(
        &server.url("/mcp"),
        Some(&app.access),
        "tools/list",
        json!({}),
    )
    .await;
    assert_ended(&app_mcp, "the OAuth access token");
    assert_refused_refresh(&refresh(&server, &app).await, "the OAuth refresh token");
    assert_eq!(
        rpc(&personal_url, None, "tools/list", json!({}))
            .await
            .status,
        404,
        "the personal URL"
    );

    // Everything begins again after a new sign-in.
    let fresh = session(&server, email).await;
    assert_eq!(data_status(&server, &fresh).await, 200);
    let again = authorise(&server, email, "An MCP client").await;
    assert_eq!(mcp_status(&server, &again.access).await, 200);
    assert_eq!(refresh(&server, &again).await.status, 200);
}

/// Password change: behind the current password; afterwards the old password and the
/// old tokens are refused and the token it answers with works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_password_ends_the_old_password_and_every_old_token() {
    let server = Server::start(&[]);
    let email = "password@example.com";
    let old = sign_up(&server, email).await;
    let other = session(&server, email).await;
    let new_password = "another long enough password";

    let wrong = json!({ "current_password": "not the password", "new_password": new_password });
    let refused = bearer_json(&server, "POST", "/auth/password", &old, Some(wrong)).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let short = json!({ "current_password": PASSWORD, "new_password": "short" });
    let refused = bearer_json(&server, "POST", "/auth/password", &old, Some(short)).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(data_status(&server, &old).await, 200, "nothing changed yet");

    let change = json!({ "current_password": PASSWORD, "new_password": new_password });
    let changed = bearer_json(&server, "POST", "/auth/password", &old, Some(change)).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let new = changed.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();

    for (what, token) in [
        ("the token that changed it", &old),
        ("another session", &other),
    ] {
        assert_ended(
            &bearer_json(&server, "GET", "/api/data", token, None).await,
            what,
        );
        let mcp = rpc(&server.url("/mcp"), Some(token), "tools/list", json!({})).await;
        assert_ended(&mcp, what);
    }
    assert_eq!(data_status(&server, &new).await, 200, "the new token");
    assert_eq!(mcp_status(&server, &new).await, 200, "the new token");
    assert_eq!(
        sign_in(&server, email, PASSWORD).await.status,
        401,
        "old password"
    );
    assert_eq!(
        sign_in(&server, email, new_password).await.status,
        200,
        "new password"
    );
}

/// Withdrawing one client's grant: the grants list names both clients; after the
/// withdrawal that client's access token is 401 and its refresh refused, and the other
/// client's tokens still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdrawing_a_clients_grant_ends_its_tokens_and_no_others() {
    let server = Server::start(&[]);
    let email = "grants@example.com";
    let me = sign_up(&server, email).await;
    let withdrawn = authorise(&server, email, "Withdrawn client").await;
    let kept = authorise(&server, email, "Kept client").await;

    let listed = bearer_json(&server, "GET", "/api/user/oauth-grants", &me, None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let grants = listed.json()["data"]["grants"].clone();
    let grants = grants.as_array().unwrap();
    // Oldest first; both were granted within the same second or two.
    let mut names: Vec<&str> = grants
        .iter()
        .map(|g| g["client_name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["Kept client", "Withdrawn client"]);
    let entry = grants
        .iter()
        .find(|g| g["client_id"] == withdrawn.client_id.as_str())
        .expect("the withdrawn client is listed");
    assert_eq!(entry["client_name"], "Withdrawn client");
    assert_eq!(entry["scope"], "mcp:tools");
    assert!(entry["granted_at"].is_u64());
    // An app's token may not read or change the person's grants.
    let by_app = bearer_json(&server, "GET", "/api/user/oauth-grants", &kept.access, None).await;
    assert_eq!(by_app.status, 403, "{}", by_app.body);

    let path = format!("/api/user/oauth-grants/{}", withdrawn.client_id);
    let deleted = bearer_json(&server, "DELETE", &path, &me, None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(deleted.json()["data"]["revoked"], true);

    let mcp = rpc(
        &server.url("/mcp"),
        Some(&withdrawn.access),
        "tools/list",
        json!({}),
    )
    .await;
    assert_ended(&mcp, "the withdrawn client's access token");
    assert_refused_refresh(
        &refresh(&server, &withdrawn).await,
        "the withdrawn client's refresh",
    );
    assert_eq!(
        mcp_status(&server, &kept.access).await,
        200,
        "the other client"
    );
    assert_eq!(
        refresh(&server, &kept).await.status,
        200,
        "the other client's refresh"
    );
    assert_eq!(
        data_status(&server, &me).await,
        200,
        "the person's own session"
    );

    let listed = bearer_json(&server, "GET", "/api/user/oauth-grants", &me, None)
        .await
        .json();
    let ids: Vec<&str> = listed["data"]["grants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["client_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [kept.client_id.as_str()]);
}

/// RFC 7009: a client revokes its refresh token; the family and its access token end,
/// and the endpoint is in the authorization server metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_revokes_its_refresh_family_at_the_revocation_endpoint() {
    let server = Server::start(&[]);
    let email = "rfc7009@example.com";
    sign_up(&server, email).await;
    let metadata = get(&server.url("/.well-known/oauth-authorization-server"))
        .await
        .json();
    assert_eq!(
        metadata["revocation_endpoint"],
        format!("{}/oauth/revoke", server.origin()).as_str(),
        "{metadata}"
    );
    let app = authorise(&server, email, "Revoking client").await;
    let other = authorise(&server, email, "Other client").await;
    // Another client cannot revoke it: 200, nothing revoked.
    let foreign = form_with_cookie(
        &server,
        "/oauth/revoke",
        &[("token", &app.access), ("client_id", &other.client_id)],
        None,
    )
    .await;
    assert_eq!(foreign.status, 200, "{}", foreign.body);
    assert_eq!(mcp_status(&server, &app.access).await, 200);

    let revoked = form_with_cookie(
        &server,
        "/oauth/revoke",
        &[
            ("token", &app.refresh),
            ("token_type_hint", "refresh_token"),
            ("client_id", &app.client_id),
        ],
        None,
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_refused_refresh(&refresh(&server, &app).await, "the revoked refresh token");
    let mcp = rpc(
        &server.url("/mcp"),
        Some(&app.access),
        "tools/list",
        json!({}),
    )
    .await;
    assert_ended(&mcp, "the revoked family's access token");
    assert_eq!(
        mcp_status(&server, &other.access).await,
        200,
        "the other client"
    );
    let unknown = form_with_cookie(
        &server,
        "/oauth/revoke",
        &[("token", "not-a-token"), ("client_id", &app.client_id)],
        None,
    )
    .await;
    assert_eq!(
        unknown.status, 200,
        "an unknown token is not an error (RFC 7009 2.2)"
    );
}

/// Revocation is checked on every use, so a token is never admitted unchecked: with the
/// store unreachable, a valid bearer token is refused (503) on `/mcp` and the APIs
/// instead of being taken at its word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_admits_no_token_unchecked() {
    // DynamoDB on a loopback port where nothing listens.
    let server = Server::start(&[
        ("MIROBODY_STORE", "dynamodb"),
        ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9"),
    ]);
    let token = server.token("unchecked");
    assert_eq!(mcp_status(&server, &token).await, 503);
    assert_eq!(data_status(&server, &token).await, 503);
}

/// Introspection (RFC 7662) agrees with the bearer check: a token the user ended is
/// inactive, for the very client it was issued to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_calls_an_ended_token_inactive() {
    let server = Server::start(&[]);
    let email = "introspect@example.com";
    let me = sign_up(&server, email).await;
    let (app, secret) =
        authorise_as(&server, email, "Confidential client", "client_secret_post").await;
    let secret = secret.expect("a confidential client has a secret");
    let pairs = [
        ("token", app.access.as_str()),
        ("client_id", app.client_id.as_str()),
        ("client_secret", secret.as_str()),
    ];
    let introspect = || form_with_cookie(&server, "/oauth/introspect", &pairs, None);
    assert_eq!(introspect().await.json()["active"], true);
    let out = bearer_json(&server, "POST", "/auth/signout-all", &me, None).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(introspect().await.json(), json!({ "active": false }));
}

// ------------------------------------------------------------- epochs: delegated and temporary URLs, codes

/// `tools/list` through an MCP URL this server minted: its status.
async fn url_status(server: &Server, url: &str) -> u16 {
    let path = &url[url.find("/mcp/").expect("an MCP URL")..];
    rpc(&server.url(path), None, "tools/list", json!({}))
        .await
        .status
}

/// The grantee's delegated URL on `owner`'s data (`POST /personal/mcp {"user_id"}`).
async fn delegated_url(server: &Server, grantee: &str, owner: &str) -> String {
    let body = json!({ "user_id": owner });
    let reply = bearer_json(server, "POST", "/personal/mcp", grantee, Some(body)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"]["url"].as_str().unwrap().to_string()
}

/// Finding 2, as written: after the grantee (whose password was stolen) changes the
/// password, and again after signing out everywhere, the delegated URL the attacker holds
/// is 404. A URL minted afterwards works, and the owner's share stands throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grantees_delegated_url_ends_with_the_grantees_remedies() {
    let server = Server::start(&[]);
    let (owner_id, owner) = sign_up_as(&server, "owner.f2@example.com", PASSWORD).await;
    let grantee_email = "dr.f2@clinic.example";
    let grantee = sign_up(&server, grantee_email).await;
    let share = json!({ "grantee": grantee_email, "permissions": ["chat"] });
    let offered = bearer_json(&server, "POST", "/api/shares", &owner, Some(share)).await;
    assert_eq!(offered.status, 200, "{}", offered.body);
    server.accept_invitations(grantee_email, &grantee).await;

    let stolen = delegated_url(&server, &grantee, &owner_id).await;
    assert_eq!(url_status(&server, &stolen).await, 200, "before");

    // The grantee changes the stolen password: the attacker's URL ends.
    let change =
        json!({ "current_password": PASSWORD, "new_password": "a brand new long password" });
    let changed = bearer_json(&server, "POST", "/auth/password", &grantee, Some(change)).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(
        url_status(&server, &stolen).await,
        404,
        "after the password change"
    );
    let grantee = changed.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();

    // A new URL works, and is ended by signing out everywhere.
    let fresh = delegated_url(&server, &grantee, &owner_id).await;
    assert_ne!(fresh, stolen, "a new secret, not the ended one");
    assert_eq!(
        url_status(&server, &fresh).await,
        200,
        "minted after the change"
    );
    let out = bearer_json(&server, "POST", "/auth/signout-all", &grantee, None).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(
        url_status(&server, &fresh).await,
        404,
        "after sign-out everywhere"
    );
    assert_eq!(url_status(&server, &stolen).await, 404, "still");

    // The share stands: the grantee signs in again and gets a working URL.
    let signed_in = post_json(
        &server.url("/auth/signin"),
        &[],
        &json!({ "email": grantee_email, "password": "a brand new long password" }),
    )
    .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let grantee = signed_in.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let again = delegated_url(&server, &grantee, &owner_id).await;
    assert_eq!(
        url_status(&server, &again).await,
        200,
        "after signing in again"
    );
}

/// Finding 2, temporary URLs: one minted for an agent ends with its user's sign-out
/// everywhere, and the console's list no longer shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_url_ends_with_its_users_sign_out_everywhere() {
    let server = Server::start(&[]);
    let (user, token) = sign_up_as(&server, "agent.f2@example.com", PASSWORD).await;
    let url = server
        .command(&["temp-url", &user, "session-1", "helper"])
        .trim()
        .to_string();
    assert_eq!(url_status(&server, &url).await, 200, "before");
    let listed = bearer_json(&server, "GET", "/api/user/urls", &token, None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains("session-1"), "{}", listed.body);

    let out = bearer_json(&server, "POST", "/auth/signout-all", &token, None).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(
        url_status(&server, &url).await,
        404,
        "after sign-out everywhere"
    );
    let token = session(&server, "agent.f2@example.com").await;
    let listed = bearer_json(&server, "GET", "/api/user/urls", &token, None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(!listed.body.contains("session-1"), "{}", listed.body);
    let minted = server
        .command(&["temp-url", &user, "session-2", "helper"])
        .trim()
        .to_string();
    assert_eq!(url_status(&server, &minted).await, 200, "minted afterwards");
}

/// Finding 3, as written: a code minted before a sign-out everywhere, or before a
/// password change, is `invalid_grant` at the exchange; one minted afterwards is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_minted_before_a_remedy_is_invalid_grant() {
    let server = Server::start(&[]);
    let email = "code.f3@example.com";
    let token = sign_up(&server, email).await;
    let client = oauth_flow::register(&server, "Code keeper", "none").await;

    let kept = oauth_flow::allow(&server, &client, "mcp:tools", (email, PASSWORD), &[]).await;
    let out = bearer_json(&server, "POST", "/auth/signout-all", &token, None).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_refused_refresh(
        &oauth_flow::exchange(&server, &client, &kept).await,
        "a code from before sign-out everywhere",
    );

    let token = session(&server, email).await;
    let kept = oauth_flow::allow(&server, &client, "mcp:tools", (email, PASSWORD), &[]).await;
    let new_password = "another long enough password";
    let change = json!({ "current_password": PASSWORD, "new_password": new_password });
    let changed = bearer_json(&server, "POST", "/auth/password", &token, Some(change)).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_refused_refresh(
        &oauth_flow::exchange(&server, &client, &kept).await,
        "a code from before the password change",
    );

    let fresh = oauth_flow::allow(&server, &client, "mcp:tools", (email, new_password), &[]).await;
    let tokens = oauth_flow::exchange(&server, &client, &fresh).await;
    assert_eq!(tokens.status, 200, "a code from after: {}", tokens.body);
}
