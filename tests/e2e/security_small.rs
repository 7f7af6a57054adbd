//! The smaller holes and the share's account oracle,
//! each attack reproduced over HTTP against the real binary and shown to fail: no open
//! redirector on the authorize endpoint, no control or bidi characters in e-mails,
//! introspection only for an authenticated client, and sharing that tells nothing about
//! other accounts.

use base64::Engine;
use e2e::{Reply, Server, bearer, encode_form as encode, form_of, get, post_json, root, rpc, send};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "https://attacker.example/landing";
const VERIFIER: &str = "dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA_n4qNhtpHqZ-0123456789";
const PASSWORD: &str = "a long enough password";

async fn register(server: &Server, body: Value) -> Value {
    let reply = post_json(&server.url("/oauth/register"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()
}

/// Signs up; the new account's user id and session token.
async fn sign_up(server: &Server, email: &str) -> (String, String) {
    let body = json!({ "email": email, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let data = &reply.json()["data"];
    (
        data["user_id"].as_str().unwrap().to_string(),
        data["token"].as_str().unwrap().to_string(),
    )
}

fn json_headers(token: &str) -> Vec<(String, String)> {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    headers
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

/// Finding 6: an attacker registers a client whose redirect URI is their landing page and
/// sends victims `/oauth/authorize?…` links with a deliberately invalid request; the
/// server used to answer 302 to the attacker's page at once (an open redirector on our
/// origin). Now every such error is a page on our origin, with no `Location`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorize_errors_never_redirect_before_the_user_interacts() {
    let server = Server::start(&[]);
    let client = register(
        &server,
        json!({ "client_name": "Totally Legit", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" }),
    )
    .await;
    let client_id = client["client_id"].as_str().unwrap();
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let attacks: [&[(&str, &str)]; 5] = [
        // No PKCE at all.
        &[("response_type", "code")],
        // A response type that is not supported.
        &[
            ("response_type", "token"),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
        ],
        // Plain PKCE.
        &[
            ("response_type", "code"),
            ("code_challenge", challenge),
            ("code_challenge_method", "plain"),
        ],
        // An unknown scope.
        &[
            ("response_type", "code"),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("scope", "admin"),
        ],
        // Another resource.
        &[
            ("response_type", "code"),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("resource", "https://other.example/mcp"),
        ],
    ];
    for attack in attacks {
        let mut pairs = vec![
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("state", "s"),
        ];
        pairs.extend_from_slice(attack);
        let query = encode(&pairs);
        let page = get(&server.url(&format!("/oauth/authorize?{query}"))).await;
        assert_eq!(page.status, 400, "{query}: {}", page.body);
        assert!(page.header("location").is_none(), "{query} redirected");
        assert!(
            !page.body.contains("attacker.example"),
            "{query}: {}",
            page.body
        );
        // The form post (a forged one, no user behind it) is refused the same way.
        let posted = form_post(&server, "/oauth/authorize", &pairs, &[]).await;
        assert!(
            posted.header("location").is_none(),
            "{query} redirected on post"
        );
    }
    // A valid request still shows the consent page (the user's own answer redirects).
    let valid = encode(&[
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("response_type", "code"),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
    ]);
    let page = get(&server.url(&format!("/oauth/authorize?{valid}"))).await;
    assert_eq!(page.status, 200, "{}", page.body);
}
// ---------------------------------------------------------------- e-mail addresses

/// Finding 6: e-mail addresses with NUL, control or bidi-override characters were
/// accepted, so `alice\u{202E}moc.elpmaxe@example.com` could display as another address.
/// Now sign-up and shares refuse them with a 400 that names the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emails_with_control_or_bidi_characters_are_refused() {
    let server = Server::start(&[]);
    let hidden = [
        "nul\u{0}@example.com",
        "bell\u{7}@example.com",
        "c1\u{85}@example.com",
        "del\u{7f}@example.com",
        "alice\u{202E}moc.elpmaxe@example.com",
        "\u{202A}embedded@example.com",
        "isolate\u{2066}@example.com",
        "pdi@exa\u{2069}mple.com",
        "\u{200E}lrm@example.com",
        "rlm\u{200F}@example.com",
        "zero\u{200B}width@example.com",
        "bom\u{FEFF}@example.com",
    ];
    for email in hidden {
        let body = json!({ "email": email, "password": PASSWORD });
        let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
        assert_eq!(reply.status, 400, "{email:?}: {}", reply.body);
        assert!(
            reply.body.contains("email must not contain"),
            "{email:?}: {}",
            reply.body
        );
    }
    let (_, token) = sign_up(&server, "owner@example.com").await;
    for grantee in hidden {
        for method in ["POST", "DELETE"] {
            let body = json!({ "grantee": grantee, "permissions": ["chat"] }).to_string();
            let reply = send(
                method,
                &server.url("/api/shares"),
                &json_headers(&token),
                Some(body),
            )
            .await;
            assert_eq!(reply.status, 400, "{method} {grantee:?}: {}", reply.body);
            assert!(
                reply.body.contains("grantee must not contain"),
                "{grantee:?}: {}",
                reply.body
            );
        }
    }
}

// ---------------------------------------------------------------- introspection

fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The authorization code flow for a confidential client: its access token.
async fn confidential_access_token(
    server: &Server,
    client_id: &str,
    secret: &str,
    email: &str,
) -> String {
    let redirect = "http://127.0.0.1:9/callback";
    let query = encode(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect),
        ("code_challenge", &challenge(VERIFIER)),
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
        ("email", email),
        ("password", PASSWORD),
        ("decision", "allow"),
    ]);
    let answer = form_post(
        server,
        "/oauth/authorize",
        &submit,
        &[("cookie".into(), cookie)],
    )
    .await;
    assert_eq!(answer.status, 302, "{}", answer.body);
    let location = answer.header("location").unwrap();
    let code = location
        .split_once("code=")
        .unwrap()
        .1
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let exchanged = form_post(
        server,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", redirect),
            ("client_id", client_id),
            ("client_secret", secret),
            ("code_verifier", VERIFIER),
        ],
        &[],
    )
    .await;
    assert_eq!(exchanged.status, 200, "{}", exchanged.body);
    exchanged.json()["access_token"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Finding 6: `/oauth/introspect` answered anyone, so whoever held (or guessed at) a
/// token could read its subject, client and scopes. Now the caller must authenticate as
/// a confidential client, and learns only about its own tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_needs_the_issuing_confidential_client() {
    let server = Server::start(&[]);
    sign_up(&server, "introspect@example.com").await;
    let confidential = |name: &'static str| {
        let server = &server;
        async move {
            let body = json!({ "client_name": name, "redirect_uris": ["http://127.0.0.1:9/callback"], "token_endpoint_auth_method": "client_secret_post" });
            let client = register(server, body).await;
            (
                client["client_id"].as_str().unwrap().to_string(),
                client["client_secret"].as_str().unwrap().to_string(),
            )
        }
    };
    let (id, secret) = confidential("Resource Server").await;
    let (other_id, other_secret) = confidential("Someone Else").await;
    let public = register(
        &server,
        json!({ "redirect_uris": ["http://127.0.0.1:9/callback"], "token_endpoint_auth_method": "none" }),
    )
    .await;
    let public_id = public["client_id"].as_str().unwrap();
    let access = confidential_access_token(&server, &id, &secret, "introspect@example.com").await;
    let user_token = server.token("someone");

    // The attack: introspect without authenticating, or as a public client, or with a
    // wrong secret.
    for pairs in [
        vec![("token", access.as_str())],
        vec![("token", user_token.as_str())],
        vec![("token", access.as_str()), ("client_id", public_id)],
        vec![
            ("token", access.as_str()),
            ("client_id", &id),
            ("client_secret", "wrong"),
        ],
        vec![("token", access.as_str()), ("client_id", &id)],
    ] {
        let refused = form_post(&server, "/oauth/introspect", &pairs, &[]).await;
        assert_eq!(refused.status, 401, "{pairs:?}: {}", refused.body);
        assert_eq!(refused.json()["error"], "invalid_client");
        assert!(!refused.body.contains("introspect@"), "{}", refused.body);
    }
    // Another authenticated client learns nothing about a token it was not issued.
    for token in [access.as_str(), user_token.as_str()] {
        let foreign = form_post(
            &server,
            "/oauth/introspect",
            &[
                ("token", token),
                ("client_id", &other_id),
                ("client_secret", &other_secret),
            ],
            &[],
        )
        .await;
        assert_eq!(foreign.status, 200, "{}", foreign.body);
        assert_eq!(foreign.json(), json!({ "active": false }));
    }
    // The issuing client, by client_secret_post and by client_secret_basic.
    let own = form_post(
        &server,
        "/oauth/introspect",
        &[
            ("token", &access),
            ("client_id", &id),
            ("client_secret", &secret),
        ],
        &[],
    )
    .await;
    assert_eq!(own.status, 200, "{}", own.body);
    assert_eq!(
        (
            own.json()["active"].clone(),
            own.json()["client_id"].clone()
        ),
        (json!(true), json!(id))
    );
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    let own_basic = form_post(
        &server,
        "/oauth/introspect",
        &[("token", &access)],
        &[("authorization".into(), format!("Basic {basic}"))],
    )
    .await;
    assert_eq!(own_basic.json()["active"], true, "{}", own_basic.body);
    let metadata = get(&server.url("/.well-known/oauth-authorization-server"))
        .await
        .json();
    assert_eq!(
        metadata["introspection_endpoint_auth_methods_supported"],
        json!(["client_secret_basic", "client_secret_post"])
    );
}

// ---------------------------------------------------------------- resource substitution

/// Finding 6: a resource with `{{JWT_TOKEN}}` copied the caller's bearer token into the
/// text a model reads. Now it reads as a fixed placeholder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_never_carry_the_callers_token() {
    let dirs = root().join("tests/data/resources");
    let server = Server::start(&[("MCP_RESOURCE_DIRS", dirs.to_str().unwrap())]);
    let (_, token) = sign_up(&server, "reader@example.com").await;
    let read = rpc(
        &server.url("/mcp"),
        Some(&token),
        "resources/read",
        json!({ "uri": "mirobody://guide/connect" }),
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.body);
    let text = read.json()["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !text.contains(&token),
        "the token reached the resource: {text}"
    );
    assert!(!read.body.contains("Bearer"), "{}", read.body);
    assert!(text.contains("[access token withheld"), "{text}");
}

// ---------------------------------------------------------------- shares

/// Finding 4 (part) and 6: `POST /api/shares` answered 404 for an address without an
/// account and returned the grantee's user id otherwise, so any signed-in caller could
/// test addresses and collect ids. Now both answers are the same and carry only what the
/// caller sent; the share itself still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharing_is_not_an_account_oracle() {
    let server = Server::start(&[]);
    let (owner, owner_token) = sign_up(&server, "owner@example.com").await;
    let (friend, friend_token) = sign_up(&server, "friend@example.com").await;
    let share = |method: &'static str, grantee: String| {
        let server = &server;
        let headers = json_headers(&owner_token);
        async move {
            let body = json!({ "grantee": grantee, "permissions": ["chat"] }).to_string();
            send(method, &server.url("/api/shares"), &headers, Some(body)).await
        }
    };
    for method in ["POST", "DELETE"] {
        let existing = share(method, "Friend@Example.com".into()).await;
        let missing = share(method, "nobody@example.com".into()).await;
        assert_eq!(
            (existing.status, missing.status),
            (200, 200),
            "{method}: {} / {}",
            existing.body,
            missing.body
        );
        assert_eq!(
            existing.body.replace("friend@", "nobody@"),
            missing.body,
            "{method}: the answers differ"
        );
        assert!(
            !existing.body.contains(&friend),
            "{method} leaked the user id: {}",
            existing.body
        );
        assert_eq!(existing.json()["data"]["grantee"], "friend@example.com");
        // Named by user id, a known and an unknown id are refused alike (a
        // grantee is an address), and never with the account's e-mail.
        let by_id = share(method, friend.clone()).await;
        let unknown_id = share(method, "u_doesnotexist".into()).await;
        assert_eq!((by_id.status, unknown_id.status), (400, 400));
        assert_eq!(
            by_id.body.replace(&friend, "u_doesnotexist"),
            unknown_id.body
        );
        assert!(!by_id.body.contains("friend@example.com"), "{}", by_id.body);
    }
    // The legitimate use still works: share, the grantee gets the URL; unshare, refused.
    let shared = share("POST", "friend@example.com".into()).await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    server
        .accept_invitations("friend@example.com", &friend_token)
        .await;
    let personal = |token: String| {
        let server = &server;
        let owner = owner.clone();
        async move {
            post_json(
                &server.url("/personal/mcp"),
                &bearer(&token),
                &json!({ "user_id": owner }),
            )
            .await
        }
    };
    assert_eq!(personal(friend_token.clone()).await.status, 200);
    share("DELETE", "friend@example.com".into()).await;
    assert_eq!(personal(friend_token).await.status, 403);
}
