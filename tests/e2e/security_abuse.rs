//! Limits on the expensive doors, end to end against the
//! real local server: the attacks as they were written, and that they now fail.
//!
//! - The eleventh failed sign-in in a minute from a source answers 429 with
//!   `Retry-After`, before any password check: even the right password is refused, and
//!   no Argon2 runs for it (counted in the server's debug log). Once an e-mail has ten
//!   failures, a source with three of them is refused for it; the person, from a source
//!   that has not failed, is not.
//! - The same on `/mcplogin` and on the consent form.
//! - A registration with a 700 KB redirect URI is refused unread (413) and stores
//!   nothing; a long one under the body cap is refused (400).
//! - Sign-ups per source address are capped (429 with `Retry-After`).
//! - Registrations per source address are capped (429 with `Retry-After`), and a
//!   registration nobody uses lapses (a week unused, 31 days idle).
//! - Login states per source address are capped (an anonymous
//!   data tool call past the cap is a tool error, and stores nothing).

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use e2e::{Reply, Server, encode_form as encode, form_of, get, post_json, rpc, send};
use serde_json::{Value, json};

const PASSWORD: &str = "a long enough password";

/// Failed sign-ins allowed per window (the server's `SIGN_IN_FAILURES`).
const FAILURES: usize = 10;
/// Registrations allowed per source per hour (the server's `REGISTRATIONS_PER_HOUR`).
const REGISTRATIONS: usize = 30;

async fn sign_up(server: &Server, email: &str) {
    let body = json!({ "email": email, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

/// `POST /auth/signin` from the loopback address `from`, and how long it took.
async fn sign_in_from(
    server: &Server,
    from: Ipv4Addr,
    email: &str,
    password: &str,
) -> (u16, Option<String>, Duration) {
    let client = e2e::web_client()
        .no_proxy()
        .local_address(IpAddr::V4(from))
        .build()
        .expect("a client");
    let started = Instant::now();
    let response = client
        .post(server.url("/auth/signin"))
        .header("content-type", "application/json")
        .body(json!({ "email": email, "password": password }).to_string())
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let _ = response.text().await;
    (status, retry_after, started.elapsed())
}

fn retry_after_ok(value: Option<&str>) -> bool {
    value
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|secs| (1..=120).contains(&secs))
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

const HOME: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// Failed sign-ins for one e-mail from one source that refuse that source once the
/// e-mail is over [`FAILURES`] (the server's `PAIR_FAILURES`).
const PAIR_FAILURES: usize = 3;

/// Guesses spread over many sources (the e-mail's counter no longer
/// refuses everyone): once the e-mail has ten failures, each source that guessed it
/// three times is refused with 429, before any password check; a source that has not
/// failed for it, the person's own, still signs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guesses_for_an_email_from_many_sources_are_429_without_a_password_check() {
    // The server logs one debug line per Argon2 run (no detail): counted below.
    let log_dir = e2e::TempDir::new("argon2-log");
    let log_path = log_dir.0.join("server.log");
    let server = Server::start_logging(
        &[("RUST_LOG", "warn,mirobody::identity::sign_in=debug")],
        std::fs::File::create(&log_path).unwrap(),
    );
    let argon2_runs = || {
        std::fs::read_to_string(&log_path)
            .unwrap()
            .matches("argon2 run")
            .count()
    };
    sign_up(&server, "victim@example.com").await;
    let before = argon2_runs();
    let mut wrong_times = Vec::new();
    for i in 0..FAILURES {
        let from = Ipv4Addr::new(127, 0, 1, i as u8 + 1);
        let (status, _, took) = sign_in_from(&server, from, "Victim@Example.com", "guess").await;
        assert_eq!(status, 401, "guess {} is checked", i + 1);
        wrong_times.push(took);
    }
    // The first source guesses on: two more are checked, then it is refused.
    let first = Ipv4Addr::new(127, 0, 1, 1);
    for guess in 2..=PAIR_FAILURES {
        let (status, _, took) = sign_in_from(&server, first, "victim@example.com", "guess").await;
        assert_eq!(status, 401, "its guess {guess} is checked");
        wrong_times.push(took);
    }
    let mut limited_times = Vec::new();
    for password in ["another guess", PASSWORD] {
        let (status, retry_after, took) =
            sign_in_from(&server, first, "victim@example.com", password).await;
        assert_eq!(
            status, 429,
            "a source with three failures for it is refused"
        );
        assert!(retry_after_ok(retry_after.as_deref()), "{retry_after:?}");
        limited_times.push(took);
    }
    // The person, from where they are, signs in.
    let (status, _, _) = sign_in_from(&server, HOME, "victim@example.com", PASSWORD).await;
    assert_eq!(status, 200, "the person is not locked out");
    // Counted: every checked guess and the person's sign-in ran Argon2, no refusal did.
    assert_eq!(
        argon2_runs() - before,
        FAILURES + PAIR_FAILURES - 1 + 1,
        "one Argon2 run per checked attempt"
    );
    // Measured (printed, not asserted: timings on a shared machine are noise).
    let (wrong, limited) = (median(wrong_times), median(limited_times));
    println!("a refusal took {limited:?}, a checked wrong password {wrong:?}");
    // Another account is untouched by the victim's counter.
    sign_up(&server, "bystander@example.com").await;
    let (status, _, _) = sign_in_from(&server, first, "bystander@example.com", PASSWORD).await;
    assert_eq!(status, 200);
}

/// As written: ten wrong sign-ins a minute for a person's address
/// made sign-in, password change and account deletion answer 429 for that person from
/// everywhere. Now the guessing sources are refused and the person is not: they sign
/// in, and their session confirms a password change, from their own address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_passwords_for_an_address_refuse_the_guessers_not_the_person() {
    let server = Server::start(&[]);
    sign_up(&server, "target@example.com").await;
    let guesser = Ipv4Addr::new(127, 0, 5, 1);
    for i in 0..FAILURES {
        let (status, _, _) = sign_in_from(&server, guesser, "target@example.com", "guess").await;
        assert_eq!(status, 401, "guess {} is checked", i + 1);
    }
    let (status, _, _) = sign_in_from(&server, guesser, "target@example.com", PASSWORD).await;
    assert_eq!(status, 429, "the guessing source is refused");
    // A second guessing source gets its three tries at the address, then 429.
    let second = Ipv4Addr::new(127, 0, 5, 2);
    for i in 0..PAIR_FAILURES {
        let (status, _, _) = sign_in_from(&server, second, "target@example.com", "guess").await;
        assert_eq!(
            status,
            401,
            "the second source's guess {} is checked",
            i + 1
        );
    }
    let (status, _, _) = sign_in_from(&server, second, "target@example.com", "guess").await;
    assert_eq!(status, 429, "the second source is refused too");

    // The person, from where they are: sign-in, then a password change their session
    // confirms with the current password (the same check, the same limits).
    let signed_in = post_json(
        &server.url("/auth/signin"),
        &[],
        &json!({ "email": "target@example.com", "password": PASSWORD }),
    )
    .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let token = signed_in.json()["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let change =
        json!({ "current_password": PASSWORD, "new_password": "a new long enough password" });
    let changed = e2e::bearer_json(&server, "POST", "/auth/password", &token, Some(change)).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eleventh_failed_sign_in_from_a_source_is_429_whatever_the_email() {
    let server = Server::start(&[]);
    sign_up(&server, "someone@example.com").await;
    let attacker = Ipv4Addr::new(127, 0, 4, 1);
    for i in 0..FAILURES {
        let email = format!("target{i}@example.com");
        let (status, _, _) = sign_in_from(&server, attacker, &email, "guess").await;
        assert_eq!(status, 401, "guess {} is checked", i + 1);
    }
    let (status, retry_after, _) =
        sign_in_from(&server, attacker, "someone@example.com", PASSWORD).await;
    assert_eq!(
        status, 429,
        "the source is over its limit, whatever the e-mail"
    );
    assert!(retry_after_ok(retry_after.as_deref()), "{retry_after:?}");
    // Someone else, from another address, signs in as usual.
    let (status, _, _) = sign_in_from(
        &server,
        Ipv4Addr::new(127, 0, 4, 2),
        "someone@example.com",
        PASSWORD,
    )
    .await;
    assert_eq!(status, 200);
}

// ---------------------------------------------------------------- the HTML forms

/// Submits the form `page` came with, signed in as `email` with `password`.
async fn submit(server: &Server, action: &str, page: &Reply, email: &str, password: &str) -> Reply {
    let (fields, cookie) = form_of(page);
    let mut pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([
        ("email", email),
        ("password", password),
        ("decision", "allow"),
    ]);
    let headers = [
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("cookie".to_string(), cookie),
    ];
    send("POST", &server.url(action), &headers, Some(encode(&pairs))).await
}

/// Ten wrong passwords through the form, then the right one: refused with 429.
async fn hammer_form(server: &Server, action: &str, page: &Reply, email: &str) {
    for i in 0..FAILURES {
        let reply = submit(server, action, page, email, "guess").await;
        assert_eq!(
            reply.status,
            401,
            "guess {} is checked: {}",
            i + 1,
            reply.body
        );
    }
    let reply = submit(server, action, page, email, PASSWORD).await;
    assert_eq!(reply.status, 429, "{}", reply.body);
    assert!(
        retry_after_ok(reply.header("retry-after")),
        "{:?}",
        reply.headers
    );
    assert!(
        reply.body.contains("Too many failed sign-ins"),
        "{}",
        reply.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eleventh_failed_sign_in_on_mcplogin_is_429_and_completes_nothing() {
    let server = Server::start(&[]);
    sign_up(&server, "prompt@example.com").await;
    let reply = rpc(
        &server.url("/mcp"),
        None,
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs1" } }),
    )
    .await;
    let answer = reply.json();
    let prompt: Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let url = prompt["authorization_url"].as_str().unwrap();
    let poll_url = prompt["auto_polling"]["poll_url"].as_str().unwrap();
    let page = get(&server.url(&url[url.find("/mcplogin").unwrap()..])).await;
    assert_eq!(page.status, 200, "{}", page.body);
    hammer_form(&server, "/mcplogin", &page, "prompt@example.com").await;
    let poll = get(&server.url(&poll_url[poll_url.find("/oauth2/").unwrap()..]))
        .await
        .json();
    assert_eq!(poll["status"], "pending", "nothing was completed: {poll}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eleventh_failed_sign_in_on_the_consent_form_is_429() {
    let server = Server::start(&[]);
    sign_up(&server, "consent@example.com").await;
    let client = register(&server, "http://127.0.0.1:9/callback").await;
    assert_eq!(client.status, 201, "{}", client.body);
    let client_id = client.json()["client_id"].as_str().unwrap().to_string();
    let query = encode(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", "http://127.0.0.1:9/callback"),
        ("state", "s"),
        (
            "code_challenge",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        ),
        ("code_challenge_method", "S256"),
    ]);
    let page = get(&server.url(&format!("/oauth/authorize?{query}"))).await;
    assert_eq!(page.status, 200, "{}", page.body);
    hammer_form(&server, "/oauth/authorize", &page, "consent@example.com").await;
}

// ---------------------------------------------------------------- registration

async fn register(server: &Server, redirect_uri: &str) -> Reply {
    let body = json!({
        "client_name": "Abuse",
        "redirect_uris": [redirect_uri],
        "token_endpoint_auth_method": "none",
    });
    post_json(&server.url("/oauth/register"), &[], &body).await
}

/// Bytes under a directory (the server's database files).
fn size_of(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => size_of(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_with_a_700_kb_redirect_uri_is_refused_and_stores_nothing() {
    let server = Server::start(&[]);
    let data = server.data_dir().to_path_buf();
    // A first registration creates the database, so growth is measured from there.
    assert_eq!(register(&server, "https://x.example/cb").await.status, 201);
    let before = size_of(&data);
    let huge = format!("https://x.example/cb?{}", "a".repeat(700 * 1024));
    for _ in 0..10 {
        let reply = register(&server, &huge).await;
        assert_eq!(reply.status, 413, "{}", reply.body);
        // The route table's cap, before the registration handler sees it.
        assert!(
            reply.json()["msg"].as_str().unwrap().contains("16 KiB"),
            "{}",
            reply.body
        );
    }
    // Under the body cap but over the URI bound: refused too.
    let long = format!("https://x.example/cb?{}", "a".repeat(2000));
    let reply = register(&server, &long).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.json()["error"], "invalid_redirect_uri");
    let grown = size_of(&data).saturating_sub(before);
    assert!(grown < 100 * 1024, "the database grew by {grown} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_per_source_are_capped() {
    let server = Server::start(&[]);
    for i in 0..REGISTRATIONS {
        let reply = register(&server, "https://x.example/cb").await;
        assert_eq!(reply.status, 201, "registration {}: {}", i + 1, reply.body);
    }
    let reply = register(&server, "https://x.example/cb").await;
    assert_eq!(reply.status, 429, "{}", reply.body);
    let retry_after = reply
        .header("retry-after")
        .and_then(|v| v.parse::<u64>().ok())
        .expect("Retry-After in seconds");
    assert!((1..=7200).contains(&retry_after), "{retry_after}");
}

/// Accounts one source may create in an hour (the server's `SIGN_UPS_PER_HOUR`).
const SIGN_UPS: usize = 20;

async fn sign_up_from(server: &Server, from: Ipv4Addr, email: &str) -> (u16, Option<String>) {
    let client = e2e::web_client()
        .no_proxy()
        .local_address(IpAddr::V4(from))
        .build()
        .expect("a client");
    let response = client
        .post(server.url("/auth/signup"))
        .header("content-type", "application/json")
        .body(json!({ "email": email, "password": PASSWORD }).to_string())
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    (status, retry_after)
}

/// Sign-ups per source address are capped (each costs an Argon2 hash and an account):
/// the 21st in an hour is 429 with `Retry-After` and creates nothing; another address
/// still signs up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ups_per_source_are_capped() {
    let server = Server::start(&[]);
    let farm = Ipv4Addr::new(127, 0, 4, 1);
    for i in 0..SIGN_UPS {
        let (status, _) = sign_up_from(&server, farm, &format!("bot{i}@example.com")).await;
        assert_eq!(status, 201, "sign-up {}", i + 1);
    }
    let (status, retry_after) = sign_up_from(&server, farm, "bot-extra@example.com").await;
    assert_eq!(status, 429);
    let retry_after = retry_after
        .and_then(|v| v.parse::<u64>().ok())
        .expect("Retry-After in seconds");
    assert!((1..=7200).contains(&retry_after), "{retry_after}");
    let (status, _, _) = sign_in_from(&server, HOME, "bot-extra@example.com", PASSWORD).await;
    assert_eq!(status, 401, "the refused sign-up created no account");
    let (status, _) = sign_up_from(&server, HOME, "person@example.com").await;
    assert_eq!(status, 201, "another address is not affected");
}

/// Lambda: the counters key on API Gateway's `requestContext.http.sourceIp`.
#[test]
fn lambda_events_carry_their_source_address() {
    let samples = e2e::sample_events();
    let (name, raw) = samples
        .iter()
        .find(|(name, _)| name == "oauth-signin")
        .expect("the sign-in sample event");
    let event = lambda_http::request::from_str(raw).expect("a Lambda event");
    let request = lambda_glue::from_lambda(event);
    let source = request.extensions().get::<mirobody::SourceAddr>();
    let expected: IpAddr = "192.0.2.10".parse().unwrap();
    assert_eq!(source, Some(&mirobody::SourceAddr(expected)), "{name}");
}

/// Registers a confidential client in process; its id and secret.
async fn register_in_process(process: &e2e::InProcess) -> (String, String) {
    let body = json!({ "client_name": "Lapsing", "redirect_uris": ["https://app.example/cb"],
        "token_endpoint_auth_method": "client_secret_post" });
    let headers = [("content-type".to_string(), "application/json".to_string())];
    let reply = process
        .send("POST", "/oauth/register", &headers, body.to_string())
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let client = reply.json();
    (
        client["client_id"].as_str().unwrap().to_string(),
        client["client_secret"].as_str().unwrap().to_string(),
    )
}

/// The client's credentials at the token endpoint (with a refresh token that does not
/// exist): `invalid_grant` means the client is still registered, `invalid_client` that it
/// is gone.
async fn token_endpoint_error(process: &e2e::InProcess, (id, secret): &(String, String)) -> Value {
    let headers = [(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    let form = encode(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", "not-a-token"),
        ("client_id", id),
        ("client_secret", secret),
    ]);
    process
        .send("POST", "/oauth/token", &headers, form)
        .await
        .json()["error"]
        .clone()
}

/// Anonymous registrations do not pile up for ever: one nobody uses lapses after a week;
/// one used at the token endpoint lives on while it is used, and lapses after 31 idle days.
#[tokio::test]
async fn unused_registrations_lapse_and_used_ones_live_on() {
    const DAY: u64 = 24 * 3600;
    let process = e2e::in_process(&[]);
    let unused = register_in_process(&process).await;
    let used = register_in_process(&process).await;
    assert_eq!(token_endpoint_error(&process, &used).await, "invalid_grant");

    process.clock.advance(7 * DAY + 1);
    assert_eq!(
        token_endpoint_error(&process, &unused).await,
        "invalid_client",
        "a week unused: gone"
    );
    let page = process
        .send("GET", &format!("/oauth/authorize?response_type=code&client_id={}&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_challenge=x&code_challenge_method=S256", unused.0), &[], String::new())
        .await;
    assert_eq!(
        page.status, 400,
        "the authorize page does not know it either"
    );
    assert_eq!(
        token_endpoint_error(&process, &used).await,
        "invalid_grant",
        "used on day one: still registered after a week"
    );

    process.clock.advance(30 * DAY);
    assert_eq!(
        token_endpoint_error(&process, &used).await,
        "invalid_grant",
        "used on day 7"
    );
    process.clock.advance(31 * DAY + 1);
    assert_eq!(
        token_endpoint_error(&process, &used).await,
        "invalid_client",
        "31 idle days: gone"
    );
}

/// Login states one source may start per ten minutes (the server's
/// `LOGIN_STATES_PER_SOURCE`).
const LOGIN_STATES: usize = 30;

/// An anonymous `tools/call` of a data tool from `from`: the tool's text answer and
/// whether it is an error.
async fn anonymous_call_from(server: &Server, from: Ipv4Addr) -> (String, bool) {
    let client = e2e::web_client()
        .no_proxy()
        .local_address(IpAddr::V4(from))
        .build()
        .expect("a client");
    let params = json!({ "name": "query_health_indicators", "arguments": {} });
    let (headers, body) = e2e::modern(1, "tools/call", params);
    let mut request = client.post(server.url("/mcp")).body(body.to_string());
    for (name, value) in headers {
        request = request.header(name, value);
    }
    request = request.header("content-type", "application/json");
    let response = request.send().await.expect("the server answers");
    assert_eq!(response.status().as_u16(), 200);
    let answer: Value = serde_json::from_str(&response.text().await.unwrap()).expect("JSON");
    let result = &answer["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (text, result["isError"] == json!(true))
}

/// Every anonymous `tools/call` of a data tool stored a login
/// state, without limit per source (3,000 calls: +3.1 MB of states). Now a source starts
/// at most 30 in ten minutes; the next call answers a tool error saying so, and stores
/// nothing; another source is not affected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_states_per_source_are_capped() {
    let server = Server::start(&[]);
    let here = Ipv4Addr::new(127, 0, 0, 1);
    for i in 0..LOGIN_STATES {
        let (text, error) = anonymous_call_from(&server, here).await;
        assert!(
            !error && text.contains("authorization_url"),
            "call {i}: {text}"
        );
    }
    let (text, error) = anonymous_call_from(&server, here).await;
    assert!(error, "{text}");
    assert!(text.contains("too many sign-in prompts"), "{text}");
    assert!(text.contains("minutes"), "{text}");
    let (text, error) = anonymous_call_from(&server, Ipv4Addr::new(127, 0, 0, 3)).await;
    assert!(!error && text.contains("authorization_url"), "{text}");
}
